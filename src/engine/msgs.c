/*
 * msgs.c — owns the life of a message in the engine (msgs.h): memory
 * placement through queue.c, the message timers, expiry, moves between
 * queues, the dead-letter rule and the ids.
 */
#include "msgs.h"

#include <stdio.h>
#include <stdlib.h>

#include "smqd/log.h"

#define SEQ_RESERVE_STEP 65536      /* ids reserved per meta write */

static void on_timer(struct twheel_node *n, uint64_t now_mono, void *arg)
{
    struct smq_engine *e = arg;
    struct smq_msg *m = queue_msg_from_timer(n);
    struct smq_queue *q = m->queue;

    (void)now_mono;
    if (m->expire_ms <= e->now_ms) {
        msgs_expire(e, m);
        return;
    }
    queue_msg_unplace(q, m, &e->msg_wheel);
    queue_msg_place(q, m, e->now_ms, &e->msg_wheel, &e->tb);
    if (m->state == SMQ_MSG_ACTIVE)
        waiters_mark_ready(&e->waiters, q);
}

void msgs_init(struct smq_engine *e, uint64_t now_mono)
{
    twheel_init(&e->msg_wheel, now_mono, on_timer, e);
}

void msgs_record(const struct smq_msg *m, struct store_msg_rec *r)
{
    r->queue_id = m->queue->id;
    r->seq = m->seq;
    r->priority = m->priority;
    r->enqueue_ms = m->enqueue_ms;
    r->first_dequeue_ms = m->first_dequeue_ms;
    r->visible_ms = m->visible_ms;
    r->expire_ms = m->expire_ms;
    r->dequeue_count = m->dequeue_count;
    r->handle_gen = m->handle_gen;
    r->src_queue_id = m->src_queue_id;
}

void msgs_link(struct smq_engine *e, struct smq_queue *q, struct smq_msg *m)
{
    m->queue = q;
    twheel_node_init(&m->timer);
    msg_table_insert(&e->msgs, m);
    queue_msg_adopt(q, m);
    queue_msg_place(q, m, e->now_ms, &e->msg_wheel, &e->tb);
    if (m->state == SMQ_MSG_ACTIVE)
        waiters_mark_ready(&e->waiters, q);
}

void msgs_destroy(struct smq_engine *e, struct smq_msg *m)
{
    space_rows_freed(&e->space);     /* its rows free pages */
    queue_msg_unplace(m->queue, m, &e->msg_wheel);
    queue_msg_release(m->queue, m);
    msg_table_remove(&e->msgs, m);
    free(m);
}

void msgs_destroy_queue(struct smq_engine *e, struct smq_queue *q)
{
    struct smq_msg *m;

    while ((m = queue_oldest_msg(q)) != NULL)
        msgs_destroy(e, m);
}

void msgs_forget_row(struct smq_engine *e, int64_t queue_id, uint64_t seq)
{
    /* Losing this delete (full buffer, failed run) is harmless: the row is
     * past its expiry and is never loaded again. */
    if (e->expired.n < EXPIRED_FLUSH_AT) {
        e->expired.rows[e->expired.n].queue_id = queue_id;
        e->expired.rows[e->expired.n].seq = seq;
        e->expired.n++;
    }
}

void msgs_expire(struct smq_engine *e, struct smq_msg *m)
{
    m->queue->count.expired++;
    eventlog_record(&e->eventlog, m->queue, EVENTLOG_EXPIRE, m, NULL);
    msgs_forget_row(e, m->queue->id, m->seq);
    msgs_destroy(e, m);
}

void msgs_flush_expired(struct smq_engine *e, bool force)
{
    int rc;

    if (e->expired.n == 0 || (!force && !e->txn.open && e->expired.n < EXPIRED_FLUSH_AT))
        return;
    rc = txn_write_begin(&e->txn);
    for (size_t i = 0; rc == 0 && i < e->expired.n; i++)
        rc = store_msg_delete(e->store, e->expired.rows[i].queue_id, e->expired.rows[i].seq);
    /* A failed batch is undone whole (a full disk is noticed like any other
     * write's) and kept for the next flush. */
    if (txn_write_end(&e->txn, rc) == 0)
        e->expired.n = 0;
}

void msgs_take_state(struct smq_engine *e, struct smq_msg *m, const struct smq_msg *next)
{
    m->dequeue_count = next->dequeue_count;
    m->handle_gen = next->handle_gen;
    m->first_dequeue_ms = next->first_dequeue_ms;
    m->visible_ms = next->visible_ms;
    queue_msg_place(m->queue, m, e->now_ms, &e->msg_wheel, &e->tb);
    if (m->state == SMQ_MSG_ACTIVE)
        waiters_mark_ready(&e->waiters, m->queue);
}

/* ---- moves between queues ------------------------------------------------- */

bool msgs_moved_expired(const struct smq_engine *e, const struct smq_msg *m)
{
    return m->expire_ms <= e->now_ms;
}

int msgs_move(struct smq_engine *e, struct smq_msg *m, struct smq_queue *to, uint32_t src)
{
    struct smq_queue *from = m->queue;
    struct smq_msg next = *m;
    struct store_msg_rec rec;
    int rc;

    next.queue = to;
    next.dequeue_count = 0;
    next.first_dequeue_ms = 0;
    next.visible_ms = e->now_ms;
    next.expire_ms = m->enqueue_ms + to->attrs.retention_s * 1000;
    next.handle_gen = m->handle_gen + 1;
    next.src_queue_id = src;
    msgs_record(&next, &rec);
    rc = txn_write_begin(&e->txn);
    if (rc == 0)
        rc = store_msg_move(e->store, from->id, &rec);
    rc = txn_write_end(&e->txn, rc);
    if (rc != 0)
        return rc;
    queue_msg_unplace(from, m, &e->msg_wheel);
    queue_msg_release(from, m);
    m->queue = to;
    m->expire_ms = next.expire_ms;
    m->src_queue_id = src;
    queue_msg_adopt(to, m);
    m->dequeue_count = next.dequeue_count;
    m->handle_gen = next.handle_gen;
    m->first_dequeue_ms = next.first_dequeue_ms;
    m->visible_ms = next.visible_ms;
    queue_msg_place(to, m, e->now_ms, &e->msg_wheel, &e->tb);
    if (m->state == SMQ_MSG_ACTIVE && !msgs_moved_expired(e, m))
        waiters_mark_ready(&e->waiters, to);
    return 0;
}

static uint32_t src_ref(const struct smq_queue *q)
{
    return q->id > 0 && q->id <= (int64_t)UINT32_MAX ? (uint32_t)q->id : 0;
}

bool msgs_dead_letter(struct smq_engine *e, struct smq_queue *q, struct smq_msg *m,
                      const char *request_id)
{
    struct smq_queue *dlq;
    uint32_t count = m->dequeue_count;

    if (!q->attrs.dlq.enabled || (int64_t)m->dequeue_count < q->attrs.dlq.max_receive)
        return false;
    dlq = queue_registry_find(&e->queues, q->attrs.dlq.target);
    if (dlq == NULL || dlq == q) {
        /* Never dropped: the message is delivered as if there were no policy. */
        if (e->dlq_move_failures++ % 1000 == 0)
            SMQ_WARN("engine: queue %s: dead-letter queue %s does not exist; delivering "
                     "messages past MaxReceiveCount normally", q->name, q->attrs.dlq.target);
        return false;
    }
    if (msgs_move(e, m, dlq, src_ref(q)) != 0) {
        /* Delivered instead, and counted like a missing target (a lost run
         * fails the receive anyway); the store has logged why. */
        if (e->dlq_move_failures++ % 1000 == 0)
            SMQ_WARN("engine: queue %s: a dead-letter move to %s failed; delivering "
                     "messages past MaxReceiveCount normally", q->name, dlq->name);
        return false;
    }
    q->count.dead_lettered++;
    eventlog_move(&e->eventlog, q, dlq, EVENTLOG_DEAD_LETTER, m, count, request_id);
    if (msgs_moved_expired(e, m))
        msgs_expire(e, m);       /* older than the DLQ's retention: never delivered */
    return true;
}

void msgs_dead_letter_due(struct smq_engine *e, struct smq_queue *q, const char *request_id)
{
    struct smq_msg *m;

    while ((m = queue_first_active(q)) != NULL && msgs_dead_letter(e, q, m, request_id))
        ;
}

/* ---- ids -------------------------------------------------------------------- */

int msgs_write_mark(struct smq_engine *e, const char *key, uint64_t value)
{
    char text[24];
    int n = snprintf(text, sizeof text, "%llu", (unsigned long long)value);

    return store_meta_set(e->store, key, text, (size_t)n);
}

/* Sequence numbers are never reused, even after the highest one is deleted
 * and smqd restarts: they are handed out below a persisted mark that is
 * moved in steps, in the same savepoint as the message that needs it. */
int msgs_next_seq(struct smq_engine *e, uint64_t *seq)
{
    struct engine_ids *ids = &e->ids;
    uint64_t reserved = ids->seq_reserve_pending ? ids->seq_reserve_pending : ids->seq_reserved;

    if (ids->next_seq >= reserved) {
        uint64_t reserve = ids->next_seq + SEQ_RESERVE_STEP;
        int rc = msgs_write_mark(e, META_NEXT_SEQ, reserve);

        if (rc != 0)
            return rc;               /* SMQ_E_STORAGE_FULL must reach txn_write_end */
        ids->seq_reserve_pending = reserve;
    }
    *seq = ids->next_seq++;
    return 0;
}

/* If the whole transaction is lost later, recovery reads the mark again. */
void msgs_settle_seqs(struct smq_engine *e, bool kept)
{
    if (kept && e->ids.seq_reserve_pending != 0)
        e->ids.seq_reserved = e->ids.seq_reserve_pending;
    e->ids.seq_reserve_pending = 0;
}
