/*
 * engine_dlq.c — dead-letter queues: moving a message that has used up its
 * receives to its queue's DLQ, and redriving a DLQ's messages back to the
 * queues they came from at a bounded rate.  Both are one UPDATE of the
 * message row (store_msg_move) inside the run's transaction; the message
 * keeps its id, body, priority and EnqueueTime.
 */
#include <stdio.h>
#include <string.h>

#include "smqd/engine_internal.h"
#include "smqd/log.h"

#define REDRIVE_MAX_SLICE 10000          /* moves per tick per queue, whatever the rate */
#define REDRIVE_MAX_SKIPS 256            /* sourceless messages set aside per slice */

/*
 * Moves m from its queue to `to` as a fresh, Active message: receives
 * counted from 0 again, a new handle generation (handles given out for it
 * are stale), expiry counted from the original EnqueueTime with to's
 * retention (engine.h).  Memory changes only after the write succeeded.
 */
static int move_msg(struct smq_engine *e, struct smq_msg *m, struct smq_queue *to, uint32_t src)
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
    engine_msg_record(&next, &rec);
    rc = engine_write_begin(e);
    if (rc == 0)
        rc = store_msg_move(e->store, from->id, &rec);
    rc = engine_write_end(e, rc);
    if (rc != 0)
        return rc;
    queue_msg_unplace(from, m, &e->msg_wheel);
    m->queue = to;
    m->dequeue_count = 0;
    m->first_dequeue_ms = 0;
    m->visible_ms = next.visible_ms;
    m->expire_ms = next.expire_ms;
    m->handle_gen = next.handle_gen;
    m->src_queue_id = src;
    queue_msg_place(to, m, e->now_ms, &e->msg_wheel, &e->tb);
    if (m->state == SMQ_MSG_ACTIVE)
        engine_mark_ready(e, to);
    return 0;
}

static uint32_t src_ref(const struct smq_queue *q)
{
    return q->id > 0 && q->id <= (int64_t)UINT32_MAX ? (uint32_t)q->id : 0;
}

void engine_dead_letter_due(struct smq_engine *e, struct smq_queue *q, const char *request_id)
{
    struct smq_msg *m;

    if (!q->attrs.dlq.enabled)
        return;
    while ((m = queue_first_active(q)) != NULL
           && (int64_t)m->dequeue_count >= q->attrs.dlq.max_receive) {
        struct smq_queue *dlq = queue_registry_find(&e->queues, q->attrs.dlq.target);
        uint32_t count = m->dequeue_count;

        if (dlq == NULL || dlq == q) {
            /* Never dropped: the message is delivered as if there were no policy. */
            if (e->dlq_move_failures++ % 1000 == 0)
                SMQ_WARN("engine: queue %s: dead-letter queue %s does not exist; delivering "
                         "messages past MaxReceiveCount normally", q->name, q->attrs.dlq.target);
            return;
        }
        if (move_msg(e, m, dlq, src_ref(q)) != 0)
            return;              /* the receive that follows reports the failure */
        q->count.dead_lettered++;
        m->dequeue_count = count;     /* for the log line only */
        engine_oplog(e, q, EV_DEAD_LETTER, m, dlq->name, request_id);
        engine_oplog(e, dlq, EV_DEAD_LETTER, m, dlq->name, request_id);
        m->dequeue_count = 0;
    }
}

/* ---- redrive ---------------------------------------------------------------- */

/* Moves up to n Active messages of dlq back to their sources; a message
 * whose source is unknown or gone is skipped (it stays in the DLQ).
 * Returns false when the DLQ ran out of Active messages. */
static bool redrive_slice(struct smq_engine *e, struct smq_queue *dlq, uint64_t n)
{
    struct smq_msg *skipped[REDRIVE_MAX_SKIPS];
    size_t n_skipped = 0;
    struct smq_msg *m;
    bool more = true;

    for (; n > 0 && dlq->redrive_pending > 0 && n_skipped < REDRIVE_MAX_SKIPS; n--) {
        struct smq_queue *src;
        if ((m = queue_first_active(dlq)) == NULL) {
            more = false;
            break;
        }
        dlq->redrive_pending--;
        src = m->src_queue_id != 0 ? engine_queue_by_id(e, m->src_queue_id) : NULL;
        if (src == NULL || src == dlq) {
            /* Out of the heap until the slice ends, so it is not met again. */
            queue_msg_unplace(dlq, m, &e->msg_wheel);
            skipped[n_skipped++] = m;
            continue;
        }
        if (move_msg(e, m, src, 0) != 0)
            break;
        dlq->count.redriven++;
        engine_oplog(e, dlq, EV_REDRIVE, m, src->name, NULL);
        engine_oplog(e, src, EV_REDRIVE, m, src->name, NULL);
    }
    for (size_t i = 0; i < n_skipped; i++)
        queue_msg_place(dlq, skipped[i], e->now_ms, &e->msg_wheel, &e->tb);
    return more;
}

/* Credit accrues at rate messages per second (in thousandths, so that a
 * rate below one per tick still moves); a late tick catches up by at most
 * one second's worth. */
static uint64_t redrive_allowance(struct smq_queue *q, uint64_t elapsed_ms)
{
    uint64_t moves;

    if (elapsed_ms > 1000)
        elapsed_ms = 1000;
    q->redrive_credit += (uint64_t)q->redrive_rate * elapsed_ms;
    moves = q->redrive_credit / 1000;
    if (moves > REDRIVE_MAX_SLICE)
        moves = REDRIVE_MAX_SLICE;
    q->redrive_credit -= moves * 1000;
    return moves;
}

void engine_redrive_tick(struct smq_engine *e, uint64_t now_mono)
{
    uint64_t elapsed;
    bool active = false;

    if (!e->redrive_active || now_mono < e->last_redrive_mono + REDRIVE_TICK_MS)
        return;
    elapsed = now_mono - e->last_redrive_mono;
    e->last_redrive_mono = now_mono;
    for (size_t i = 0; i < e->queues.n; i++) {
        struct smq_queue *q = e->queues.items[i];
        if (q->redrive_pending == 0)
            continue;
        if (!redrive_slice(e, q, redrive_allowance(q, elapsed)))
            q->redrive_pending = 0;          /* nothing Active left to move */
        if (q->redrive_pending == 0)
            SMQ_INFO("engine: redrive of %s finished (%llu moved so far)", q->name,
                     (unsigned long long)q->count.redriven);
        active = active || q->redrive_pending > 0;
    }
    e->redrive_active = active;
}

uint64_t engine_redrive_timeout_ms(const struct smq_engine *e, uint64_t now_mono)
{
    uint64_t due;

    if (!e->redrive_active)
        return UINT64_MAX;
    due = e->last_redrive_mono + REDRIVE_TICK_MS;
    return due > now_mono ? due - now_mono : 0;
}

int engine_exec_redrive(struct smq_engine *e, struct smq_op *op, struct smq_queue *q)
{
    uint64_t n = q->n_active;

    if (op->redrive.rate_per_s == 0)
        return errors_set(&op->result, SMQ_E_INVALID_ARGUMENT, "The redrive rate must be positive.");
    if (op->redrive.max > 0 && op->redrive.max < n)
        n = op->redrive.max;
    /* A new request replaces a running one on the same queue. */
    q->redrive_pending = n;
    q->redrive_rate = op->redrive.rate_per_s;
    q->redrive_credit = 0;
    op->n_redrive = n;
    if (n > 0 && !e->redrive_active) {
        e->redrive_active = true;
        e->last_redrive_mono = clock_mono_ms(e->clock);
    }
    return 0;
}
