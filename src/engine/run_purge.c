/*
 * run_purge.c — owns the engine side of purge (run_purge.h): deleting every
 * message of a queue, its dead-letter queue or both, in one savepoint.
 */
#include "run_purge.h"

#include "msgs.h"

/* Deletes every message of the queues in one savepoint, so a purge of a
 * queue and its DLQ happens wholly or not at all. */
static int purge_queues(struct smq_engine *e, struct smq_queue **qs, size_t n)
{
    int rc = txn_write_begin(&e->txn);

    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = store_queue_purge(e->store, qs[i]->id);
    rc = txn_write_end(&e->txn, rc);
    if (rc != 0)
        return rc;
    for (size_t i = 0; i < n; i++) {
        msgs_destroy_queue(e, qs[i]);
        queue_redrive_free(qs[i]->redrive);      /* nothing left to move */
        qs[i]->redrive = NULL;
    }
    return 0;
}

static uint64_t queue_size(const struct smq_queue *q)
{
    return q->n_active + q->n_inactive + q->n_delayed;
}

int run_purge(struct smq_engine *e, struct smq_op *op, struct smq_queue *q)
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
        eventlog_purge(&e->eventlog, q, n_main, op->request_id);
    if (dlq != NULL && dlq != q)
        eventlog_purge(&e->eventlog, dlq, n_dlq, op->request_id);
    return 0;
}
