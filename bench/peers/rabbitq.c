/*
 * rabbitq.c — smqd-peer-rabbitmq: RabbitMQ through librabbitmq (rabbitmq-c),
 * one blocking AMQP connection and one channel per thread, with everything
 * that makes a message durable and its hand-over safe:
 *   - a durable quorum queue (x-queue-type: quorum), or, if declaring one
 *     fails, a durable classic queue (a NOTE line says which);
 *   - persistent messages (delivery_mode 2);
 *   - publisher confirms (confirm.select): a send counts only once the
 *     broker's basic.ack for it (and, with --batch N, for all N) arrived;
 *   - manual acks: basic.qos prefetch = N, basic.consume, basic.ack of what
 *     was delivered (multiple=true, one ack per take).
 * Producers publish N and wait for the N confirms; consumers take what was
 * delivered (at least 1, at most N: what the broker has pushed by then, like
 * BatchReceiveMessage returns up to 16) and ack it; one connection alone
 * cycles publish N, confirm, take N, ack.  Counts acked messages.
 * Latency: publish -> last confirm per batch; consume: the wait for the
 * first delivery through the ack write (takes that found nothing left out).
 * --extra is the queue name (default "q"); the tool declares it before the
 * threads start and deletes it at the end.  Login guest/guest (loopback).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include <amqp.h>
#include <amqp_tcp_socket.h>

#include "pc.h"

#define CH 1

static const char *queue_name(void)
{
    return pc_o.extra != NULL ? pc_o.extra : "q";
}

static int quorum = 1;               /* decided by declare_queue() */

struct conn {
    amqp_connection_state_t c;
    uint64_t published;              /* delivery tags of our publishes: 1, 2, ... */
    uint64_t confirmed;              /* highest tag the broker confirmed */
    int pending;                     /* delivered, not yet acked */
    uint64_t last_tag;               /* of the last delivery */
    size_t body_left;                /* bytes of the delivery's body still to read */
    int in_content;                  /* between basic.deliver and its last body frame */
};

static int rpc_ok(amqp_connection_state_t c, const char *what)
{
    amqp_rpc_reply_t r = amqp_get_rpc_reply(c);
    if (r.reply_type == AMQP_RESPONSE_NORMAL)
        return 0;
    if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION)
        fprintf(stderr, "rabbitmq: %s: %s\n", what, amqp_error_string2(r.library_error));
    else if (r.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
        amqp_channel_close_t *m = r.reply.decoded;
        fprintf(stderr, "rabbitmq: %s: channel closed %u %.*s\n", what, m->reply_code,
                (int)m->reply_text.len, (const char *)m->reply_text.bytes);
    } else if (r.reply.id == AMQP_CONNECTION_CLOSE_METHOD) {
        amqp_connection_close_t *m = r.reply.decoded;
        fprintf(stderr, "rabbitmq: %s: connection closed %u %.*s\n", what, m->reply_code,
                (int)m->reply_text.len, (const char *)m->reply_text.bytes);
    } else
        fprintf(stderr, "rabbitmq: %s: server reply 0x%08x\n", what, r.reply.id);
    return -1;
}

static amqp_connection_state_t open_conn(void)
{
    amqp_connection_state_t c = amqp_new_connection();
    amqp_socket_t *s = amqp_tcp_socket_new(c);
    if (s == NULL || amqp_socket_open(s, pc_o.host, pc_o.port) != AMQP_STATUS_OK) {
        fprintf(stderr, "rabbitmq: cannot connect to %s:%d\n", pc_o.host, pc_o.port);
        amqp_destroy_connection(c);
        return NULL;
    }
    amqp_rpc_reply_t r = amqp_login(c, "/", 0, 131072, 0, AMQP_SASL_METHOD_PLAIN, "guest", "guest");
    if (r.reply_type != AMQP_RESPONSE_NORMAL) {
        fprintf(stderr, "rabbitmq: login failed\n");
        amqp_destroy_connection(c);
        return NULL;
    }
    amqp_channel_open(c, CH);
    if (rpc_ok(c, "channel.open") != 0) {
        amqp_destroy_connection(c);
        return NULL;
    }
    return c;
}

static void close_conn(amqp_connection_state_t c)
{
    amqp_channel_close(c, CH, AMQP_REPLY_SUCCESS);
    amqp_connection_close(c, AMQP_REPLY_SUCCESS);
    amqp_destroy_connection(c);
}

/* Declares the queue: quorum, else classic (both durable).  0 or -1. */
static int declare_queue(void)
{
    amqp_connection_state_t c = open_conn();
    if (c == NULL)
        return -1;
    amqp_bytes_t q = amqp_cstring_bytes(queue_name());
    amqp_table_entry_t e = { .key = amqp_cstring_bytes("x-queue-type"),
                             .value = { .kind = AMQP_FIELD_KIND_UTF8,
                                        .value.bytes = amqp_cstring_bytes("quorum") } };
    amqp_table_t args = { .num_entries = 1, .entries = &e };
    amqp_queue_declare(c, CH, q, 0, 1, 0, 0, args);
    if (rpc_ok(c, "queue.declare (quorum)") != 0) {
        quorum = 0;
        close_conn(c);                        /* the failed declare closed the channel */
        if ((c = open_conn()) == NULL)
            return -1;
        amqp_queue_declare(c, CH, q, 0, 1, 0, 0, amqp_empty_table);
        if (rpc_ok(c, "queue.declare (classic)") != 0) {
            amqp_destroy_connection(c);
            return -1;
        }
    }
    close_conn(c);
    return 0;
}

static void delete_queue(void)
{
    amqp_connection_state_t c = open_conn();
    if (c == NULL)
        return;
    amqp_queue_delete(c, CH, amqp_cstring_bytes(queue_name()), 0, 0);
    (void)rpc_ok(c, "queue.delete");
    close_conn(c);
}

/* Reads and handles one frame (confirms, deliveries and their content).
 * timeout_ms < 0 blocks.  Returns 1 handled, 0 timed out, -1 error. */
static int read_frame(struct conn *k, int timeout_ms)
{
    amqp_frame_t f;
    int rc;
    if (timeout_ms < 0) {
        rc = amqp_simple_wait_frame(k->c, &f);
    } else {
        struct timeval tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };
        rc = amqp_simple_wait_frame_noblock(k->c, &f, &tv);
        if (rc == AMQP_STATUS_TIMEOUT)
            return 0;
    }
    if (rc != AMQP_STATUS_OK) {
        fprintf(stderr, "rabbitmq: read: %s\n", amqp_error_string2(rc));
        return -1;
    }
    if (f.frame_type == AMQP_FRAME_HEADER) {
        if (!k->in_content)
            return -1;
        k->body_left = (size_t)f.payload.properties.body_size;
        if (k->body_left == 0) {
            k->in_content = 0;
            k->pending++;
        }
        return 1;
    }
    if (f.frame_type == AMQP_FRAME_BODY) {
        if (!k->in_content || f.payload.body_fragment.len > k->body_left)
            return -1;
        k->body_left -= f.payload.body_fragment.len;
        if (k->body_left == 0) {
            k->in_content = 0;
            k->pending++;
        }
        return 1;
    }
    if (f.frame_type != AMQP_FRAME_METHOD)
        return 1;                             /* heartbeat */
    switch (f.payload.method.id) {
    case AMQP_BASIC_ACK_METHOD: {
        amqp_basic_ack_t *a = f.payload.method.decoded;
        if (a->delivery_tag > k->confirmed)
            k->confirmed = a->delivery_tag;   /* multiple or not: confirms come in order */
        return 1;
    }
    case AMQP_BASIC_DELIVER_METHOD: {
        amqp_basic_deliver_t *d = f.payload.method.decoded;
        k->last_tag = d->delivery_tag;
        k->in_content = 1;
        return 1;
    }
    case AMQP_BASIC_NACK_METHOD:
        fprintf(stderr, "rabbitmq: publish nacked\n");
        return -1;
    case AMQP_CHANNEL_CLOSE_METHOD: {
        amqp_channel_close_t *m = f.payload.method.decoded;
        fprintf(stderr, "rabbitmq: channel closed %u %.*s\n", m->reply_code,
                (int)m->reply_text.len, (const char *)m->reply_text.bytes);
        return -1;
    }
    default:
        fprintf(stderr, "rabbitmq: unexpected method 0x%08x\n", f.payload.method.id);
        return -1;
    }
}

static int produce(struct pc_worker *w, void *conn, uint64_t seq)
{
    struct conn *k = conn;
    char body[PC_BODY];
    amqp_basic_properties_t p = { ._flags = AMQP_BASIC_DELIVERY_MODE_FLAG,
                                  .delivery_mode = AMQP_DELIVERY_PERSISTENT };
    uint64_t t0 = pc_now_ns();
    for (int i = 0; i < pc_o.batch; i++) {
        pc_body(body, w->id, seq * (uint64_t)pc_o.batch + (uint64_t)i);
        amqp_bytes_t b = { PC_BODY, body };
        if (amqp_basic_publish(k->c, CH, amqp_empty_bytes, amqp_cstring_bytes(queue_name()),
                               0, 0, &p, b) != AMQP_STATUS_OK)
            return -1;
        k->published++;
    }
    while (k->confirmed < k->published)
        if (read_frame(k, -1) < 0)
            return -1;
    amqp_maybe_release_buffers(k->c);
    pc_lat(w, t0);
    return 0;
}

/* Takes what has been delivered (at least one; a cycling connection waits
 * for all it published) and acks it.  1 took some, 0 none within 1 s. */
static int consume(struct pc_worker *w, void *conn)
{
    struct conn *k = conn;
    int want = w->role == PC_CYCLE ? pc_o.batch : 1;
    uint64_t t0 = pc_now_ns();
    while (k->pending < want || k->in_content) {
        int r = read_frame(k, 1000);
        if (r < 0)
            return -1;
        if (r == 0) {
            if (k->pending == 0 && !k->in_content)
                return 0;
            if (atomic_load(&pc_stop) && !k->in_content)
                break;
        }
    }
    /* whatever else has already arrived, up to the batch */
    while (k->pending < pc_o.batch && (amqp_frames_enqueued(k->c) || amqp_data_in_buffer(k->c) ||
                                      k->in_content)) {
        if (read_frame(k, k->in_content ? 1000 : 0) < 0)
            return -1;
    }
    if (amqp_basic_ack(k->c, CH, k->last_tag, 1) != AMQP_STATUS_OK)
        return -1;
    pc_lat(w, t0);
    pc_count(w, (uint64_t)k->pending);
    k->pending = 0;
    amqp_maybe_release_buffers(k->c);
    return 1;
}

static void *worker(void *arg)
{
    struct pc_worker *w = arg;
    struct conn k = { 0 };
    if ((k.c = open_conn()) == NULL) {
        w->errors++;
        return NULL;
    }
    amqp_confirm_select(k.c, CH);
    if (rpc_ok(k.c, "confirm.select") != 0)
        goto fail;
    if (w->role != PC_PRODUCER) {
        amqp_basic_qos(k.c, CH, 0, (uint16_t)pc_o.batch, 0);
        if (rpc_ok(k.c, "basic.qos") != 0)
            goto fail;
        amqp_basic_consume(k.c, CH, amqp_cstring_bytes(queue_name()), amqp_empty_bytes,
                           0, 0, 0, amqp_empty_table);
        if (rpc_ok(k.c, "basic.consume") != 0)
            goto fail;
    }
    pc_cycle(w, &k, produce, consume);
    close_conn(k.c);
    return NULL;
fail:
    w->errors++;
    amqp_destroy_connection(k.c);
    return NULL;
}

int main(int argc, char **argv)
{
    pc_parse(argc, argv, "lifecycle");
    if (pc_o.batch > 65535) {
        fprintf(stderr, "rabbitmq: --batch must fit a prefetch count\n");
        return 2;
    }
    if (declare_queue() != 0)
        return 2;
    printf("NOTE rabbitmq: durable %s queue, persistent messages, publisher confirms, manual acks\n",
           quorum ? "quorum" : "classic (quorum declare failed)");
    fflush(stdout);
    int rc = pc_run("rabbitmq", worker);
    delete_queue();
    return rc;
}
