/*
 * engine_dlq.c — dead-letter queues: moving a message that has used up its
 * receives to its queue's DLQ, and redriving a DLQ's messages back to the
 * queues they came from at a bounded rate.  Both are one UPDATE of the
 * message row (store_msg_move) inside the run's transaction; the message
 * keeps its id, body, priority and EnqueueTime.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "smqd/engine_internal.h"
#include "smqd/log.h"

#define REDRIVE_MAX_SLICE 10000          /* moves per tick per queue, whatever the rate */

/*
 * Moves m from its queue to `to` as a fresh, Active message: receives
 * counted from 0 again, a new handle generation (handles given out for it
 * are stale), expiry counted from the original EnqueueTime with to's
 * retention (engine.h).  Memory changes only after the write succeeded.
 * A message already past that expiry is placed but not offered to `to`'s
 * parked polls: the caller expires it (after logging the move), since a
 * message past its retention is Expired whatever its state.
 */
static bool moved_expired(const struct smq_engine *e, const struct smq_msg *m)
{
    return m->expire_ms <= e->now_ms;
}

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
    queue_msg_release(from, m);
    m->queue = to;
    m->dequeue_count = 0;
    m->first_dequeue_ms = 0;
    m->visible_ms = next.visible_ms;
    m->expire_ms = next.expire_ms;
    m->handle_gen = next.handle_gen;
    m->src_queue_id = src;
    queue_msg_adopt(to, m);
    queue_msg_place(to, m, e->now_ms, &e->msg_wheel, &e->tb);
    if (m->state == SMQ_MSG_ACTIVE && !moved_expired(e, m))
        engine_mark_ready(e, to);
    return 0;
}

static uint32_t src_ref(const struct smq_queue *q)
{
    return q->id > 0 && q->id <= (int64_t)UINT32_MAX ? (uint32_t)q->id : 0;
}

bool engine_dead_letter(struct smq_engine *e, struct smq_queue *q, struct smq_msg *m,
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
    if (move_msg(e, m, dlq, src_ref(q)) != 0)
        return false;            /* delivered instead; a lost run fails the receive anyway */
    q->count.dead_lettered++;
    engine_oplog_move(e, q, dlq, EV_DEAD_LETTER, m, count, request_id);
    if (moved_expired(e, m))
        engine_expire_msg(e, m);      /* older than the DLQ's retention: never delivered */
    return true;
}

void engine_dead_letter_due(struct smq_engine *e, struct smq_queue *q, const char *request_id)
{
    struct smq_msg *m;

    while ((m = queue_first_active(q)) != NULL && engine_dead_letter(e, q, m, request_id))
        ;
}

/* ---- redrive ---------------------------------------------------------------- */

static int cmp_seq(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

struct redrive_take {
    struct queue_redrive *r;
    size_t cap;
};

static void take_redrivable(struct smq_msg *m, void *arg)
{
    struct redrive_take *t = arg;

    /* cap is the Active count, which the heap matches (engine_check); the
     * bound only turns a broken invariant into a shorter snapshot. */
    if (m->src_queue_id != 0 && t->r->n < t->cap)
        t->r->seqs[t->r->n++] = m->seq;
}

/* The Active messages of dlq that know their source, oldest first, at most
 * max (0 = all).  O(the DLQ's Active messages), whatever other queues hold. */
static struct queue_redrive *redrive_snapshot(struct smq_queue *dlq, uint64_t max)
{
    struct queue_redrive *r = calloc(1, sizeof *r);
    size_t cap = dlq->n_active > 0 ? dlq->n_active : 1;

    if (r == NULL || (r->seqs = malloc(cap * sizeof *r->seqs)) == NULL) {
        queue_redrive_free(r);
        return NULL;
    }
    queue_foreach_active(dlq, take_redrivable, &(struct redrive_take){r, cap});
    qsort(r->seqs, r->n, sizeof *r->seqs, cmp_seq);
    if (max > 0 && r->n > max)
        r->n = (size_t)max;
    return r;
}

/* Moves up to n of the redrive's messages back to their sources; one that
 * has left the DLQ, is in flight or whose source is gone is passed over
 * without counting against n. */
static void redrive_slice(struct smq_engine *e, struct smq_queue *dlq, uint64_t n)
{
    struct queue_redrive *r = dlq->redrive;

    while (n > 0 && r->next < r->n) {
        struct smq_msg *m = msg_table_find(&e->msgs, r->seqs[r->next]);
        struct smq_queue *src;
        uint32_t count;

        if (m == NULL || m->queue != dlq || m->state != SMQ_MSG_ACTIVE) {
            r->next++;
            continue;
        }
        src = engine_queue_by_id(e, m->src_queue_id);
        if (src == NULL || src == dlq) {
            r->next++;
            continue;
        }
        count = m->dequeue_count;
        if (move_msg(e, m, src, 0) != 0)
            return;              /* the run is lost or this write failed: retry next tick */
        r->next++;
        n--;
        dlq->count.redriven++;
        engine_oplog_move(e, dlq, src, EV_REDRIVE, m, count, NULL);
        if (moved_expired(e, m))
            engine_expire_msg(e, m);  /* older than the source's retention */
    }
}

/* Credit accrues at rate messages per second (in thousandths, so that a
 * rate below one per tick still moves); a late tick catches up by at most
 * one second's worth. */
static uint64_t redrive_allowance(struct queue_redrive *r, uint64_t elapsed_ms)
{
    uint64_t moves;

    if (elapsed_ms > 1000)
        elapsed_ms = 1000;
    r->credit += (uint64_t)r->rate * elapsed_ms;
    moves = r->credit / 1000;
    if (moves > REDRIVE_MAX_SLICE)
        moves = REDRIVE_MAX_SLICE;
    r->credit -= moves * 1000;
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
        if (q->redrive == NULL)
            continue;
        redrive_slice(e, q, redrive_allowance(q->redrive, elapsed));
        if (q->redrive->next < q->redrive->n) {
            active = true;
            continue;
        }
        SMQ_INFO("engine: redrive of %s finished (%llu moved since start-up)", q->name,
                 (unsigned long long)q->count.redriven);
        queue_redrive_free(q->redrive);
        q->redrive = NULL;
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

uint64_t engine_redrive_pending(const struct smq_queue *q)
{
    return q->redrive != NULL ? q->redrive->n - q->redrive->next : 0;
}

int engine_exec_redrive(struct smq_engine *e, struct smq_op *op, struct smq_queue *q)
{
    struct queue_redrive *r;

    if (op->redrive.rate_per_s == 0)
        return errors_set(&op->result, SMQ_E_INVALID_ARGUMENT, "The redrive rate must be positive.");
    r = redrive_snapshot(q, op->redrive.max);
    if (r == NULL)
        return SMQ_E_NOMEM;
    r->rate = op->redrive.rate_per_s;
    /* A new request replaces a running one on the same queue. */
    queue_redrive_free(q->redrive);
    q->redrive = NULL;
    op->redrive.n_scheduled = r->n;
    if (r->n == 0) {
        queue_redrive_free(r);
        return 0;
    }
    q->redrive = r;
    if (!e->redrive_active) {
        e->redrive_active = true;
        e->last_redrive_mono = clock_mono_ms(e->clock);
    }
    return 0;
}
