/*
 * run_redrive.c — owns running redrives (run_redrive.h): the snapshot of a
 * DLQ's messages, the per-queue rate credit and the slices that move.
 * The messages keep their id, body, priority and EnqueueTime.
 */
#include "run_redrive.h"

#include <stdlib.h>

#include "msgs.h"
#include "smqd/log.h"

#define REDRIVE_TICK_MS 100              /* how often a running redrive moves a slice */
#define REDRIVE_MAX_SLICE 10000          /* moves per tick per queue, whatever the rate */

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
        src = queue_registry_find_id(&e->queues, m->src_queue_id);
        if (src == NULL || src == dlq) {
            r->next++;
            continue;
        }
        count = m->dequeue_count;
        if (msgs_move(e, m, src, 0) != 0)
            return;              /* the run is lost or this write failed: retry next tick */
        r->next++;
        n--;
        dlq->count.redriven++;
        eventlog_move(&e->eventlog, dlq, src, EVENTLOG_REDRIVE, m, count, NULL);
        if (msgs_moved_expired(e, m))
            msgs_expire(e, m);       /* older than the source's retention */
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

void run_redrive_tick(struct smq_engine *e, uint64_t now_mono)
{
    uint64_t elapsed;
    bool active = false;

    if (!e->redrives.active || now_mono < e->redrives.last_tick_mono + REDRIVE_TICK_MS)
        return;
    elapsed = now_mono - e->redrives.last_tick_mono;
    e->redrives.last_tick_mono = now_mono;
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
    e->redrives.active = active;
}

uint64_t run_redrive_timeout_ms(const struct smq_engine *e, uint64_t now_mono)
{
    uint64_t due;

    if (!e->redrives.active)
        return UINT64_MAX;
    due = e->redrives.last_tick_mono + REDRIVE_TICK_MS;
    return due > now_mono ? due - now_mono : 0;
}

int run_redrive_start(struct smq_engine *e, struct smq_op *op, struct smq_queue *q)
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
    if (!e->redrives.active) {
        e->redrives.active = true;
        e->redrives.last_tick_mono = clock_mono_ms(e->clock);
    }
    return 0;
}
