/*
 * engine_admin.c — the engine's administration operations: per-queue
 * statistics, purge and DLQ redrive.  They run on the engine thread inside
 * the same group commit as client traffic (engine.h); the admin listener
 * and smqctl reach them through SMQ_OP_STATS / _PURGE / _REDRIVE.
 */
#include <stdlib.h>
#include <string.h>

#include "smqd/engine_internal.h"

static void queue_stats(const struct smq_queue *q, struct smq_queue_stats *out)
{
    memset(out, 0, sizeof *out);
    queue_info(q, &out->info);
    out->waiters = q->n_waiters;
    out->sent = q->count.sent;
    out->received = q->count.received;
    out->deleted = q->count.deleted;
    out->expired = q->count.expired;
    out->dead_lettered = q->count.dead_lettered;
    out->redriven = q->count.redriven;
    out->redrive_pending = q->redrive_pending;
}

/* One pass over the message table: the oldest EnqueueTime per queue.  The
 * stats array is sorted by name like the registry, so a queue's slot is
 * found by binary search. */
static void fill_oldest(struct smq_engine *e, struct smq_queue_stats *st, size_t n)
{
    for (size_t b = 0; b < e->msgs.n_buckets; b++) {
        for (const struct smq_msg *m = e->msgs.buckets[b]; m != NULL; m = m->hash_next) {
            size_t lo = 0, hi = n;
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                int c = strcmp(st[mid].info.name, m->queue->name);
                if (c == 0) {
                    lo = mid;
                    break;
                }
                if (c < 0)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            if (lo < n && strcmp(st[lo].info.name, m->queue->name) == 0 &&
                (st[lo].oldest_enqueue_ms == 0 || m->enqueue_ms < st[lo].oldest_enqueue_ms))
                st[lo].oldest_enqueue_ms = m->enqueue_ms;
        }
    }
}

int engine_exec_stats(struct smq_engine *e, struct smq_op *op)
{
    size_t n = 0;

    engine_stats(e, &op->totals);
    op->stats = calloc(e->queues.n > 0 ? e->queues.n : 1, sizeof *op->stats);
    if (op->stats == NULL)
        return SMQ_E_NOMEM;
    for (size_t i = 0; i < e->queues.n; i++) {
        const struct smq_queue *q = e->queues.items[i];
        if (op->queue[0] != '\0' && strcmp(op->queue, q->name) != 0)
            continue;
        queue_stats(q, &op->stats[n++]);
    }
    op->n_stats = n;
    if (op->queue[0] != '\0' && n == 0)
        return SMQ_E_QUEUE_NOT_EXIST;
    fill_oldest(e, op->stats, n);
    return 0;
}

int engine_exec_purge(struct smq_engine *e, struct smq_op *op, struct smq_queue *q)
{
    (void)e;
    (void)q;
    errors_set(&op->result, SMQ_E_INTERNAL, "purge: not implemented yet");
    return SMQ_E_INTERNAL;
}

int engine_exec_redrive(struct smq_engine *e, struct smq_op *op, struct smq_queue *q)
{
    (void)e;
    (void)q;
    errors_set(&op->result, SMQ_E_INTERNAL, "redrive: not implemented yet");
    return SMQ_E_INTERNAL;
}
