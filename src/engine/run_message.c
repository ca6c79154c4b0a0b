/*
 * run_message.c — owns the engine side of the message actions
 * (run_message.h): what a send, receive, peek, delete or visibility change
 * writes, reads and changes, in that order.
 */
#include "run_message.h"

#include <stdlib.h>
#include <string.h>

#include "msgs.h"

/* ---- send --------------------------------------------------------------------- */

static int check_send_items(const struct smq_queue *q, struct smq_op *op)
{
    for (size_t i = 0; i < op->send.n; i++) {
        const struct smq_send_item *it = &op->send.items[i];
        if (it->body_len < 1 || (int64_t)it->body_len > q->attrs.max_msg_size)
            return errors_set(&op->result, SMQ_E_INVALID_ARGUMENT,
                              "The value of MessageBody should between 1 and %lld bytes%s.",
                              (long long)q->attrs.max_msg_size,
                              op->send.n > 1 ? " (in a message of the batch)" : "");
    }
    return 0;
}

/* Fills the fresh messages of a send and writes their rows (inside the
 * caller's savepoint). */
static int insert_msgs(struct smq_engine *e, struct smq_op *op, struct smq_queue *q,
                       struct smq_msg **fresh)
{
    struct store_msg_rec rec;
    int rc = 0;

    for (size_t i = 0; rc == 0 && i < op->send.n; i++) {
        struct smq_msg *m = fresh[i];
        const struct smq_send_item *it = &op->send.items[i];
        int64_t delay_s = it->delay_s > 0 ? it->delay_s : q->attrs.delay_s;

        m->queue = q;
        m->priority = (uint8_t)it->priority;
        m->enqueue_ms = e->now_ms;
        m->visible_ms = e->now_ms + delay_s * 1000;
        m->expire_ms = e->now_ms + q->attrs.retention_s * 1000;
        rc = msgs_next_seq(e, &m->seq);
        if (rc == 0) {
            msgs_record(m, &rec);
            struct store_msg_content c = {it->body, it->body_len, it->body_md5, it->ext,
                                          it->ext_len};
            rc = store_msg_insert(e->store, &rec, &c);
        }
    }
    return rc;
}

static int write_sent(struct smq_engine *e, struct smq_op *op, struct smq_queue *q,
                      struct smq_msg **fresh)
{
    int rc = txn_write_begin(&e->txn);

    if (rc == 0)
        rc = txn_write_end(&e->txn, insert_msgs(e, op, q, fresh));
    msgs_settle_seqs(e, rc == 0);
    return rc;
}

int run_message_send(struct smq_engine *e, struct smq_op *op, struct smq_queue *q)
{
    struct smq_msg *fresh[SMQ_BATCH_MAX] = {0};
    int rc = e->space.full
                 ? errors_set(&op->result, SMQ_E_STORAGE_FULL, "%s", space_refusal(&e->space))
                 : check_send_items(q, op);
    size_t i;

    for (i = 0; rc == 0 && i < op->send.n; i++)
        if ((fresh[i] = calloc(1, sizeof *fresh[i])) == NULL)
            rc = SMQ_E_NOMEM;
    if (rc == 0)
        rc = write_sent(e, op, q, fresh);
    for (i = 0; i < op->send.n; i++) {
        if (rc != 0) {
            free(fresh[i]);
            continue;
        }
        op->send.seq[i] = fresh[i]->seq;
        msgs_link(e, q, fresh[i]);
        op->send.delayed[i] = fresh[i]->state == SMQ_MSG_DELAYED;
        q->count.sent++;
        eventlog_record(&e->eventlog, q, EVENTLOG_SEND, fresh[i], op->request_id);
    }
    return rc;
}

/* ---- bodies of a receive or peek ---------------------------------------------- */

/*
 * The bodies a receive or peek returns share one allocation, op's
 * body_block, which the HTTP thread frees once.  With a block per body,
 * every body would be freed by a thread other than the one that allocated
 * it, and each such free takes the lock of the engine thread's malloc arena.
 * The store reads them in one call (store.h).
 */

/* Reads the bodies of msgs[0..n), in order, into bodies and gives each of
 * op's first n views its length and MD5. */
static int read_bodies(struct smq_engine *e, struct smq_op *op, struct smq_msg **msgs, size_t n,
                       struct smq_buf *bodies)
{
    struct store_body_read reads[SMQ_BATCH_MAX];
    int rc;

    for (size_t i = 0; i < n; i++)
        reads[i] = (struct store_body_read){.queue_id = msgs[i]->queue->id, .seq = msgs[i]->seq};
    rc = store_msg_bodies(e->store, reads, n, bodies);
    if (rc == 0 && buf_failed(bodies))
        rc = SMQ_E_NOMEM;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        op->recv.msgs[i].body_len = reads[i].len;
        op->recv.msgs[i].ext_len = reads[i].ext_len;
        op->recv.msgs[i].body_md5 = reads[i].md5;
    }
    return rc;
}

/* Hands bodies to op as its body_block (or frees them after a failure,
 * rc != 0) and points each of op's views at its body and its extensions,
 * which follow it.  Empty ones get a pointer too. */
static int body_block_attach(struct smq_op *op, struct smq_buf *bodies, int rc)
{
    struct smq_op_recv *r = &op->recv;
    size_t len, at = 0;

    if (rc == 0 && r->n_msgs > 0) {
        buf_append(bodies, "", 0);        /* a block even if every body is empty */
        if (buf_failed(bodies))
            rc = SMQ_E_NOMEM;
    }
    if (rc != 0 || r->n_msgs == 0) {
        buf_free(bodies);
        return rc;
    }
    r->body_block = buf_take(bodies, &len);
    for (size_t i = 0; i < r->n_msgs; i++) {
        r->msgs[i].body = r->body_block + at;
        at += r->msgs[i].body_len;
        r->msgs[i].ext = r->body_block + at;
        at += r->msgs[i].ext_len;
    }
    return 0;
}

static void fill_view(const struct smq_msg *m, struct smq_msg_view *v)
{
    v->seq = m->seq;
    v->handle_gen = m->handle_gen;
    v->enqueue_ms = m->enqueue_ms;
    /* FirstDequeueTime equals EnqueueTime while DequeueCount is 0 (docs/protocol.md §6.1). */
    v->first_dequeue_ms = m->dequeue_count > 0 ? m->first_dequeue_ms : m->enqueue_ms;
    v->next_visible_ms = m->visible_ms;
    v->dequeue_count = m->dequeue_count;
    v->priority = m->priority;
}

/* ---- receive and peek ---------------------------------------------------------- */

/* Takes up to max Active messages out of q's heap, best first.  For a
 * receive (request_id not NULL), each one that has used up its receives is
 * dead-lettered instead of taken. */
static size_t take_active(struct smq_engine *e, struct smq_queue *q, int max,
                          struct smq_msg **out, const char *request_id)
{
    size_t n = 0;
    struct smq_msg *m;

    while (n < (size_t)max && (m = queue_first_active(q)) != NULL) {
        if (request_id != NULL && msgs_dead_letter(e, q, m, request_id))
            continue;
        queue_msg_unplace(q, m, &e->msg_wheel);
        out[n++] = m;
    }
    return n;
}

static void put_back(struct smq_engine *e, struct smq_queue *q, struct smq_msg **msgs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        queue_msg_place(q, msgs[i], e->now_ms, &e->msg_wheel, &e->tb);
}

/* What a receive does to a message: one more receive, a new handle,
 * invisible until visible_ms. */
static void mark_received(struct smq_msg *m, int64_t now_ms, int64_t visible_ms)
{
    m->dequeue_count++;
    m->handle_gen++;
    if (m->first_dequeue_ms == 0)
        m->first_dequeue_ms = now_ms;
    m->visible_ms = visible_ms;
}

/* Writes each taken message as received (next), then reads their bodies. */
static int write_received(struct smq_engine *e, struct smq_op *op, struct smq_msg **taken,
                          struct smq_msg *next, size_t n, struct smq_buf *bodies)
{
    int rc = 0;

    for (size_t i = 0; rc == 0 && i < n; i++) {
        struct store_msg_rec rec;

        msgs_record(&next[i], &rec);
        rc = store_msg_update(e->store, &rec);
    }
    if (rc == 0)
        rc = read_bodies(e, op, taken, n, bodies);
    for (size_t i = 0; rc == 0 && i < n; i++)
        fill_view(&next[i], &op->recv.msgs[op->recv.n_msgs++]);
    return rc;
}

int run_message_receive_now(struct smq_engine *e, struct smq_op *op, struct smq_queue *q)
{
    struct smq_msg *taken[SMQ_BATCH_MAX];
    struct smq_msg next[SMQ_BATCH_MAX];
    struct smq_buf bodies;
    int64_t visible_ms = e->now_ms + q->attrs.visibility_s * 1000;
    size_t n = take_active(e, q, op->recv.max_msgs, taken, op->request_id);
    int rc = 0;

    if (n == 0)
        return SMQ_E_MESSAGE_NOT_EXIST;
    for (size_t i = 0; i < n; i++) {
        next[i] = *taken[i];
        mark_received(&next[i], e->now_ms, visible_ms);
    }
    buf_init(&bodies);
    rc = txn_write_begin(&e->txn);
    if (rc == 0)
        rc = write_received(e, op, taken, next, n, &bodies);
    rc = txn_write_end(&e->txn, body_block_attach(op, &bodies, rc));
    if (rc != 0) {
        op_release(op);
        put_back(e, q, taken, n);
        return rc;
    }
    for (size_t i = 0; i < n; i++) {
        msgs_take_state(e, taken[i], &next[i]);
        eventlog_record(&e->eventlog, q, EVENTLOG_RECEIVE, taken[i], op->request_id);
    }
    q->count.received += n;
    return 0;
}

static void park(struct smq_engine *e, struct smq_op *op, struct smq_queue *q, int64_t wait_s)
{
    waiters_park(&e->waiters, q, op, clock_mono_ms(e->clock) + (uint64_t)wait_s * 1000);
}

int run_message_receive(struct smq_engine *e, struct smq_op *op, struct smq_queue *q)
{
    int64_t wait_s = op->recv.wait_s >= 0 ? op->recv.wait_s : q->attrs.polling_wait_s;
    int rc;

    if (q->waiters_head != NULL && wait_s > 0) {
        park(e, op, q, wait_s);
        return 0;
    }
    rc = run_message_receive_now(e, op, q);
    if (rc != SMQ_E_MESSAGE_NOT_EXIST || wait_s <= 0)
        return rc;
    park(e, op, q, wait_s);
    return 0;
}

int run_message_peek(struct smq_engine *e, struct smq_op *op, struct smq_queue *q)
{
    struct smq_msg *taken[SMQ_BATCH_MAX];
    struct smq_buf bodies;
    size_t n = take_active(e, q, op->recv.max_msgs, taken, NULL);
    int rc = 0;

    buf_init(&bodies);
    rc = read_bodies(e, op, taken, n, &bodies);
    for (size_t i = 0; rc == 0 && i < n; i++)
        fill_view(taken[i], &op->recv.msgs[op->recv.n_msgs++]);
    rc = body_block_attach(op, &bodies, rc);
    put_back(e, q, taken, n);
    if (rc != 0)
        op_release(op);
    return rc != 0 ? rc : (n > 0 ? 0 : SMQ_E_MESSAGE_NOT_EXIST);
}

/* ---- delete and change visibility --------------------------------------------------- */

/* The message a receipt handle names, if the handle is still current: the
 * one a receive or visibility change gave an Inactive message, or the one
 * a delayed send gave (docs/protocol.md §7.6), until the message turns
 * Active. */
static struct smq_msg *handle_target(struct smq_engine *e, struct smq_queue *q,
                                     const struct smq_handle_ref *ref, int *err)
{
    struct smq_msg *m;

    if (ref->err != 0) {
        *err = ref->err;
        return NULL;
    }
    m = msg_table_find(&e->msgs, ref->seq);
    if (m == NULL || m->queue != q || m->handle_gen != ref->gen
        || (m->state != SMQ_MSG_INACTIVE && m->state != SMQ_MSG_DELAYED)) {
        *err = SMQ_E_MESSAGE_NOT_EXIST;
        return NULL;
    }
    *err = 0;
    return m;
}

/* The distinct current messages the handles name; each handle's err says
 * why it names none (the same handle twice: the second names none). */
static size_t delete_targets(struct smq_engine *e, struct smq_op *op, struct smq_queue *q,
                             struct smq_msg **doomed)
{
    size_t n = 0;

    for (size_t i = 0; i < op->del.n; i++) {
        struct smq_handle_ref *ref = &op->del.refs[i];
        struct smq_msg *m = handle_target(e, q, ref, &ref->err);
        for (size_t j = 0; m != NULL && j < n; j++)
            if (doomed[j] == m) {
                m = NULL;
                ref->err = SMQ_E_MESSAGE_NOT_EXIST;
            }
        if (m != NULL)
            doomed[n++] = m;
    }
    return n;
}

int run_message_delete(struct smq_engine *e, struct smq_op *op, struct smq_queue *q)
{
    struct smq_msg *doomed[SMQ_BATCH_MAX];
    size_t n = delete_targets(e, op, q, doomed);
    int rc = 0;

    if (n > 0) {
        rc = txn_write_begin(&e->txn);
        for (size_t j = 0; rc == 0 && j < n; j++)
            rc = store_msg_delete(e->store, q->id, doomed[j]->seq);
        rc = txn_write_end(&e->txn, rc);
    }
    if (rc != 0)
        return rc;
    for (size_t j = 0; j < n; j++) {
        eventlog_record(&e->eventlog, q, EVENTLOG_DELETE, doomed[j], op->request_id);
        msgs_destroy(e, doomed[j]);
    }
    q->count.deleted += n;
    /* BatchDeleteMessage reports per handle (even a batch of one). */
    return op->del.batch ? 0 : op->del.refs[0].err;
}

int run_message_change_visibility(struct smq_engine *e, struct smq_op *op, struct smq_queue *q)
{
    int err;
    struct smq_msg *m = handle_target(e, q, &op->vis.ref, &err);
    struct smq_msg next;
    struct store_msg_rec rec;
    int rc;

    if (m == NULL)
        return err;
    next = *m;
    next.handle_gen++;
    next.visible_ms = e->now_ms + op->vis.visibility_s * 1000;
    msgs_record(&next, &rec);
    rc = txn_write_begin(&e->txn);
    if (rc == 0)
        rc = store_msg_update(e->store, &rec);
    rc = txn_write_end(&e->txn, rc);
    if (rc != 0)
        return rc;
    queue_msg_unplace(q, m, &e->msg_wheel);
    msgs_take_state(e, m, &next);
    op->vis.new_gen = m->handle_gen;
    op->vis.next_visible_ms = m->visible_ms;
    eventlog_record(&e->eventlog, q, EVENTLOG_CHANGE_VISIBILITY, m, op->request_id);
    return 0;
}
