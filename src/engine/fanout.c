/*
 * fanout.c — owns what happens to a pending notification (fanout.h): its
 * delivery into a queue, rendered in its subscription's format, the
 * failure of an attempt and the retry schedule, giving up, and the timers.
 * The publish itself, recovery and the self-check are in fanout_publish.c.
 */
#include "fanout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "msgs.h"
#include "smqd/crypto.h"
#include "smqd/log.h"
#include "smqd/notify.h"

/* Deliveries per transaction, in all: a send waits for the flush of the
 * transaction it is in, so a wide fan-out must not make that flush long. */
#define FANOUT_TXN_BUDGET 128
#define FANOUT_SUB_BUDGET 16     /* of which one subscription's, before the next one's turn */
#define GIVE_UP_RETRY_MS 10000   /* a give-up that could not be written is tried again */
#define FULL_RECHECK_MS 1000     /* while the disk is full, deliveries wait (§12.4) */

static uint32_t next_rnd(struct engine_topics *f)
{
    /* xorshift64*: only spreads BACKOFF_RETRY's intervals, no secrecy needed */
    f->rnd ^= f->rnd >> 12;
    f->rnd ^= f->rnd << 25;
    f->rnd ^= f->rnd >> 27;
    return (uint32_t)((f->rnd * 0x2545F4914F6CDD1DULL) >> 32);
}

/* Puts n (unplaced) on the wheel until due_ms. */
static void wait_until(struct smq_engine *e, struct topic_notif *n, int64_t due_ms)
{
    n->due_ms = due_ms;
    n->state = TOPIC_NOTIF_WAITING;
    twheel_arm(&e->topics.wheel, &n->timer, queue_epoch_to_mono(&e->tb, due_ms));
}

/* Frees n (unplaced), and its message with its last notification. */
static void retire(struct smq_engine *e, struct topic_notif *n)
{
    uint64_t seq = n->msg->seq;

    if (topic_notif_destroy(&e->topics.model, n) && e->topics.body_seq == seq)
        e->topics.body_seq = 0;
}

/* Deletes n's row, and its message's with its last notification (inside
 * the caller's savepoint). */
static int delete_rows(struct smq_engine *e, const struct topic_notif *n)
{
    int rc = store_notif_delete(e->store, n->sub->id, n->msg->seq);

    if (rc == 0 && n->msg->pending == 1)
        rc = store_tmsg_delete(e->store, n->msg->seq);
    return rc;
}

/* ---- the notification's body ---- */

/* The published body of msg in e->topics.body, read once for all its
 * notifications in a row. */
static int read_body(struct smq_engine *e, const struct topic_msg *msg)
{
    struct engine_topics *f = &e->topics;
    int rc;

    if (f->body_seq == msg->seq)
        return 0;
    f->body_seq = 0;
    buf_reset(&f->body);
    rc = store_tmsg_body(e->store, msg->seq, &f->body);
    if (rc == 0 && buf_failed(&f->body))
        rc = SMQ_E_NOMEM;
    if (rc == 0)
        f->body_seq = msg->seq;
    return rc;
}

/* Appends n's notification in its subscription's format to out (§13.9). */
static int render(struct smq_engine *e, const struct topic_notif *n, struct smq_buf *out)
{
    char id[MSGID_TEXT_LEN + 1];
    int rc = read_body(e, n->msg);
    struct notify_msg m;

    if (rc != 0)
        return rc;
    msgid_format(&e->keys, n->msg->seq, id);
    m = (struct notify_msg){e->topics.account_id, n->sub->topic->name, n->sub->name, id,
                            e->topics.body.data, e->topics.body.len, n->msg->md5, n->msg->tag,
                            n->msg->publish_ms};
    rc = notify_render(n->sub->attrs.format, &m, out);
    return rc == 0 && buf_failed(out) ? SMQ_E_NOMEM : rc;
}

/* ---- into a queue: a delivery, or a give-up to the dead-letter queue ---- */

/* Writes m (a new message of q with body) and retires n's rows, in one savepoint. */
static int write_queue_msg(struct smq_engine *e, struct smq_queue *q, struct smq_msg *m,
                           const struct topic_notif *n, const struct smq_buf *body)
{
    unsigned char md5[MNS_MD5_LEN];
    struct store_msg_rec rec;
    int rc = crypto_md5(body->data, body->len, md5);

    m->queue = q;
    m->priority = 8;                 /* the default priority of a SendMessage (§6) */
    m->enqueue_ms = e->now_ms;
    m->visible_ms = e->now_ms + q->attrs.delay_s * 1000;
    m->expire_ms = e->now_ms + q->attrs.retention_s * 1000;
    if (rc == 0)
        rc = txn_write_begin(&e->txn);
    if (rc != 0)
        return rc;
    rc = msgs_next_seq(e, &m->seq);
    if (rc == 0) {
        struct store_msg_content c = {body->data, body->len, md5, NULL, 0};
        msgs_record(m, &rec);
        rc = store_msg_insert(e->store, &rec, &c);
    }
    if (rc == 0)
        rc = delete_rows(e, n);
    rc = txn_write_end(&e->txn, rc);
    msgs_settle_seqs(e, rc == 0);
    return rc;
}

/* Makes n (unplaced) a message of q and retires it, logged as kind (a
 * delivery or a dead-letter).  0, or the error with n left as it was:
 * SMQ_E_INVALID_ARGUMENT when the notification is larger than the queue's
 * MaximumMessageSize. */
static int move_to_queue(struct smq_engine *e, struct smq_queue *q, struct topic_notif *n,
                         enum eventlog_kind kind)
{
    struct smq_buf body;
    struct smq_msg *m = calloc(1, sizeof *m);
    int rc = m != NULL ? 0 : SMQ_E_NOMEM;

    buf_init(&body);
    if (rc == 0)
        rc = render(e, n, &body);
    if (rc == 0 && (int64_t)body.len > q->attrs.max_msg_size)
        rc = SMQ_E_INVALID_ARGUMENT;
    if (rc == 0)
        rc = write_queue_msg(e, q, m, n, &body);
    buf_free(&body);
    if (rc != 0) {
        free(m);
        return rc;
    }
    msgs_link(e, q, m);
    q->count.sent++;
    eventlog_record(&e->eventlog, q, EVENTLOG_SEND, m, "");
    eventlog_notify(&e->eventlog, kind, n, n->attempts + 1, q);
    retire(e, n);
    return 0;
}

/* ---- failures, retries, giving up ---- */

/* The last attempt failed or the message's retention is over (§13.12):
 * n (unplaced) goes to its subscription's dead-letter queue (§13.13) or is
 * dropped and counted. */
static void give_up(struct smq_engine *e, struct topic_notif *n)
{
    struct smq_sub *s = n->sub;
    struct smq_queue *dlq = s->attrs.dlq.enabled
                                ? queue_registry_find(&e->queues, s->attrs.dlq.target) : NULL;
    int rc = dlq != NULL ? move_to_queue(e, dlq, n, EVENTLOG_NOTIFY_DEAD_LETTER)
                         : SMQ_E_QUEUE_NOT_EXIST;

    if (rc != 0) {               /* no target, or it would not take it: dropped */
        rc = txn_write_begin(&e->txn);
        if (rc == 0)
            rc = txn_write_end(&e->txn, delete_rows(e, n));
        if (rc == 0) {
            e->topics.dropped++;
            eventlog_notify(&e->eventlog, EVENTLOG_NOTIFY_DROP, n, n->attempts + 1, NULL);
            retire(e, n);
        }
    }
    if (rc == 0) {
        s->count.dead++;
        return;
    }
    SMQ_WARN("topic %s subscription %s: a notification given up could not be removed (%s); "
             "tried again later", s->topic->name, s->name, errors_info(rc)->code);
    wait_until(e, n, e->now_ms + GIVE_UP_RETRY_MS);
}

/* An attempt of n (unplaced) failed: the next one is due after the
 * strategy's interval, or n is given up (its attempts spent, or the next
 * one past the message's retention). */
static void attempt_failed(struct smq_engine *e, struct topic_notif *n)
{
    struct smq_sub *s = n->sub;
    uint32_t attempts = n->attempts + 1;
    enum smq_notify_strategy strategy = (enum smq_notify_strategy)n->strategy;
    int64_t due = e->now_ms + notify_retry_interval_ms(strategy, attempts, next_rnd(&e->topics));
    int64_t retained = n->msg->publish_ms + (int64_t)SMQ_TOPIC_RETENTION_S * 1000;
    struct store_notif_rec rec = {s->id, n->msg->seq, attempts, due, (int)strategy};
    int rc;

    s->count.failed++;
    if (attempts >= notify_max_attempts(strategy) || due > retained) {
        give_up(e, n);
        return;
    }
    rc = txn_write_begin(&e->txn);
    if (rc == 0)
        rc = txn_write_end(&e->txn, store_notif_update(e->store, &rec));
    /* Unwritten, the stored schedule is the earlier one: a restart retries
     * sooner, never later. */
    if (rc == 0) {
        if (n->attempts == 0)
            s->n_retrying++;
        n->attempts = attempts;
        eventlog_notify(&e->eventlog, EVENTLOG_NOTIFY_RETRY, n, attempts, NULL);
    }
    wait_until(e, n, due);
}

/* Delivers the READY notification n into its subscription's queue. */
static void deliver_to_queue(struct smq_engine *e, struct topic_notif *n)
{
    struct smq_sub *s = n->sub;
    struct smq_queue *q = queue_registry_find(&e->queues, s->ep.queue);

    topic_notif_unplace(n, &e->topics.wheel);
    if (q != NULL && move_to_queue(e, q, n, EVENTLOG_NOTIFY_DELIVER) == 0) {
        s->count.delivered++;
        return;
    }
    if (!e->txn.lost)
        attempt_failed(e, n);
    else
        topic_notif_make_ready(&e->topics.model, n);   /* the reload replaces it */
}

/* Delivers up to budget of s's READY notifications; returns how many.  An
 * HTTP subscription's notifications wait for the push pool (issue 39). */
static size_t run_sub(struct smq_engine *e, struct smq_sub *s, size_t budget)
{
    size_t done = 0;

    if (s->ep.kind != NOTIFY_EP_QUEUE)
        return 0;
    while (s->ready_head != NULL && done < budget && !e->txn.lost) {
        deliver_to_queue(e, s->ready_head);
        done++;
    }
    if (s->ready_head != NULL)
        topic_mark_runnable(&e->topics.model, s);
    return done;
}

/* Deliveries the open transaction may still take. */
static size_t txn_budget(const struct smq_engine *e)
{
    return e->topics.in_txn < FANOUT_TXN_BUDGET ? FANOUT_TXN_BUDGET - e->topics.in_txn : 0;
}

void fanout_txn_ended(struct smq_engine *e)
{
    e->topics.in_txn = 0;
}

void fanout_run(struct smq_engine *e)
{
    struct topic_model *m = &e->topics.model;
    size_t budget;
    struct smq_sub *s;

    /* While the disk is full nothing is delivered, and no attempt is used up. */
    if (e->space.full || txn_writes_stopped(&e->txn))
        return;
    budget = txn_budget(e);
    while (budget > 0 && !e->txn.lost && (s = topic_take_runnable(m)) != NULL) {
        size_t done = run_sub(e, s, budget < FANOUT_SUB_BUDGET ? budget : FANOUT_SUB_BUDGET);
        e->topics.in_txn += done;
        /* A subscription that delivered nothing still costs a turn, so that
         * the loop ends. */
        budget -= done > 0 ? done : 1;
    }
}

/* ---- timers ---- */

static void on_due(struct twheel_node *node, uint64_t now_mono, void *arg)
{
    struct smq_engine *e = arg;

    (void)now_mono;
    topic_notif_make_ready(&e->topics.model, topic_notif_from_timer(node));
}

void fanout_init(struct smq_engine *e, uint64_t now_mono, const char *account_id)
{
    struct engine_topics *f = &e->topics;

    twheel_init(&f->wheel, now_mono, on_due, e);
    buf_init(&f->body);
    f->rnd = now_mono * 0x9E3779B97F4A7C15ULL + 1;
    snprintf(f->account_id, sizeof f->account_id, "%s",
             account_id != NULL && account_id[0] != '\0' ? account_id : NOTIFY_ACCOUNT_ID_DEFAULT);
}

void fanout_free(struct smq_engine *e)
{
    buf_free(&e->topics.body);
}

void fanout_advance(struct smq_engine *e, uint64_t now_mono)
{
    twheel_advance(&e->topics.wheel, now_mono);
}

uint64_t fanout_timeout_ms(const struct smq_engine *e, uint64_t now_mono)
{
    uint64_t wheel = twheel_next_timeout_ms(&e->topics.wheel, now_mono);

    if (e->topics.model.runnable_head == NULL)
        return wheel;
    if (e->space.full)
        return wheel < FULL_RECHECK_MS ? wheel : FULL_RECHECK_MS;
    /* The open transaction's share is used up: the commit after the flush
     * in progress wakes the engine (engine_next_timeout_ms). */
    return txn_budget(e) > 0 ? 0 : wheel;
}
