/*
 * engine_admin.c — the engine's administration: per-queue statistics and
 * purge (SMQ_OP_STATS / SMQ_OP_PURGE, run on the engine thread inside the
 * same group commit as client traffic; the admin listener and smqctl reach
 * them), and disk reclamation between runs.  Redrive lives with the
 * dead-letter moves in engine_dlq.c.
 */
#include <stdlib.h>
#include <string.h>

#include "smqd/engine_internal.h"
#include "smqd/log.h"

#define MAINTAIN_INTERVAL_MS 5000       /* how often the free pages are looked at */
#define RECLAIM_STEP_MS 100             /* pause between steps while reclaiming */
#define RECLAIM_STEP_PAGES 1024         /* pages handed back per step (one transaction) */
#define RECLAIM_MIN_FREE_PAGES 1024     /* below this, free pages are left for reuse */

static void queue_stats(const struct smq_queue *q, struct smq_queue_stats *out)
{
    const struct smq_msg *oldest = queue_oldest_msg(q);

    memset(out, 0, sizeof *out);
    queue_info(q, &out->info);
    out->waiters = q->n_waiters;
    out->sent = q->count.sent;
    out->received = q->count.received;
    out->deleted = q->count.deleted;
    out->expired = q->count.expired;
    out->dead_lettered = q->count.dead_lettered;
    out->redriven = q->count.redriven;
    out->redrive_pending = engine_redrive_pending(q);
    out->oldest_enqueue_ms = oldest != NULL ? oldest->enqueue_ms : 0;
}

static void refresh_file_stats(struct smq_engine *e)
{
    struct store_file_stats fs;

    if (store_file_stats(e->store, &fs) == 0) {
        e->db_pages = fs.pages;
        e->free_pages = fs.free_pages;
        e->page_size = fs.page_size;
    }
}

int engine_exec_stats(struct smq_engine *e, struct smq_op *op)
{
    size_t n = 0;

    if (op->stats.totals_only) {               /* O(1): the engine answers, that is all */
        engine_stats(e, &op->stats.totals);
        return 0;
    }
    refresh_file_stats(e);
    engine_stats(e, &op->stats.totals);
    op->stats.queues = calloc(e->queues.n > 0 ? e->queues.n : 1, sizeof *op->stats.queues);
    if (op->stats.queues == NULL)
        return SMQ_E_NOMEM;
    for (size_t i = 0; i < e->queues.n; i++) {
        const struct smq_queue *q = e->queues.items[i];
        if (op->queue[0] != '\0' && strcmp(op->queue, q->name) != 0)
            continue;
        queue_stats(q, &op->stats.queues[n++]);
    }
    op->stats.n_queues = n;
    if (op->queue[0] != '\0' && n == 0)
        return SMQ_E_QUEUE_NOT_EXIST;
    return 0;
}

/* Deletes every message of the queues in one savepoint, so a purge of a
 * queue and its DLQ happens wholly or not at all. */
static int purge_queues(struct smq_engine *e, struct smq_queue **qs, size_t n)
{
    int rc = engine_write_begin(e);

    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = store_queue_purge(e->store, qs[i]->id);
    rc = engine_write_end(e, rc);
    if (rc != 0)
        return rc;
    for (size_t i = 0; i < n; i++) {
        engine_destroy_queue_msgs(e, qs[i]);
        queue_redrive_free(qs[i]->redrive);      /* nothing left to move */
        qs[i]->redrive = NULL;
    }
    return 0;
}

static uint64_t queue_size(const struct smq_queue *q)
{
    return q->n_active + q->n_inactive + q->n_delayed;
}

int engine_exec_purge(struct smq_engine *e, struct smq_op *op, struct smq_queue *q)
{
    struct smq_queue *qs[2];
    struct smq_queue *dlq = NULL;
    uint64_t n_main = 0, n_dlq = 0;
    size_t n = 0;
    int rc;

    if (op->purge.dlq) {
        dlq = q->attrs.dlq.enabled ? queue_registry_find(&e->queues, q->attrs.dlq.target) : NULL;
        if (dlq == NULL)
            return errors_set(&op->result, SMQ_E_INVALID_ARGUMENT,
                              "The queue '%s' has no dead-letter queue.", q->name);
    }
    if (op->purge.main) {
        n_main = queue_size(q);
        qs[n++] = q;
    }
    if (dlq != NULL && dlq != q) {
        n_dlq = queue_size(dlq);
        qs[n++] = dlq;
    }
    rc = n > 0 ? purge_queues(e, qs, n) : 0;
    if (rc != 0)
        return rc;
    op->purge.n_main = n_main;
    op->purge.n_dlq = n_dlq;
    if (op->purge.main)
        engine_oplog_purge(e, q, n_main, op->request_id);
    if (dlq != NULL && dlq != q)
        engine_oplog_purge(e, dlq, n_dlq, op->request_id);
    return 0;
}

/* ---- disk reclamation ------------------------------------------------------- */

/* Worth a step: enough free pages, and a tenth of the file, so that the
 * pages a steady workload frees and reuses are left alone.  While the disk
 * is full any free page is worth giving back: sends wait for the space to
 * retake the reserve, and deletes only free pages inside the file. */
static bool worth_reclaiming(const struct smq_engine *e)
{
    if (e->storage_full)
        return e->free_pages > 0;
    return e->free_pages >= RECLAIM_MIN_FREE_PAGES && e->free_pages * 10 >= e->db_pages;
}

void engine_maintain(struct smq_engine *e, uint64_t now_mono)
{
    uint64_t freed = 0;

    if (!e->maintain_due || now_mono < e->next_reclaim_mono || e->broken
        || store_in_txn(e->store))
        return;
    refresh_file_stats(e);
    /* While the disk is full the pages deletes free are wanted back soon. */
    e->next_reclaim_mono = now_mono + (e->storage_full ? RECLAIM_STEP_MS : MAINTAIN_INTERVAL_MS);
    if (!worth_reclaiming(e) || store_reclaim(e->store, RECLAIM_STEP_PAGES, &freed) != 0
        || freed == 0) {
        e->maintain_due = false;     /* until the next delete */
        return;
    }
    e->vacuumed_pages += freed;
    e->free_pages -= freed < e->free_pages ? freed : e->free_pages;
    e->db_pages -= freed < e->db_pages ? freed : e->db_pages;
    e->next_reclaim_mono = now_mono + RECLAIM_STEP_MS;   /* keep going while worth it */
    SMQ_DEBUG("engine: returned %llu free pages to the file system",
              (unsigned long long)freed);
}

uint64_t engine_maintain_timeout_ms(const struct smq_engine *e, uint64_t now_mono)
{
    /* With a commit deferred (engine.c) engine_maintain would not run, and
     * a due deadline would wake the engine thread over and over until it
     * is committed; the commit's own wake-up comes first anyway. */
    if (!e->maintain_due || store_in_txn(e->store))
        return UINT64_MAX;
    return e->next_reclaim_mono > now_mono ? e->next_reclaim_mono - now_mono : 0;
}
