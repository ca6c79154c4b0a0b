/*
 * txn.c — owns the transaction of one engine run and its done list (txn.h).
 */
#include "txn.h"

#include "smqd/errors.h"

void txn_init(struct txn *t, struct smq_store *store, struct space *space)
{
    *t = (struct txn){.store = store, .space = space};
    t->done_tail = &t->done_head;
}

bool txn_writes_stopped(const struct txn *t)
{
    return t->syncer != NULL && syncer_failed(t->syncer);
}

static int ensure_open(struct txn *t)
{
    int rc;

    if (t->lost || txn_writes_stopped(t))
        return SMQ_E_INTERNAL;
    if (t->open)
        return 0;
    rc = store_begin(t->store);
    t->open = rc == 0;
    return rc;
}

int txn_write_begin(struct txn *t)
{
    int rc = ensure_open(t);

    if (rc == 0)
        rc = store_savepoint(t->store);
    t->in_savepoint = rc == 0;
    if (rc == SMQ_E_STORAGE_FULL)
        space_full(t->space);
    return rc;
}

int txn_write_end(struct txn *t, int rc)
{
    if (!t->in_savepoint)
        return rc;              /* txn_write_begin failed: nothing to release or undo */
    t->in_savepoint = false;
    if (rc == 0)
        rc = store_release(t->store);
    if (rc != 0) {
        store_rollback_to(t->store);
        if (!store_in_txn(t->store)) {
            t->lost = true;     /* the store rolled back the whole transaction */
            t->lost_rc = rc;
        }
    }
    if (rc == SMQ_E_STORAGE_FULL)
        space_full(t->space);
    return rc;
}

void txn_complete(struct txn *t, struct smq_op *op, int err)
{
    if (err != 0 && op->result.err == 0)
        errors_set(&op->result, err, NULL);
    op->next = NULL;
    *t->done_tail = op;
    t->done_tail = &op->next;
}

bool txn_defer_commit(const struct txn *t, bool force)
{
    return !force && t->open && !t->lost && t->syncer != NULL && !syncer_idle(t->syncer);
}

void txn_commit(struct txn *t)
{
    int rc;

    if (!t->open)
        return;
    rc = t->lost || txn_writes_stopped(t) ? SMQ_E_INTERNAL : store_commit(t->store);
    if (rc != 0) {
        store_rollback(t->store);
        if (!t->lost)
            t->lost_rc = rc;
        t->lost = true;
    } else if (t->syncer != NULL) {
        syncer_committed(t->syncer);    /* the flush this commit needs */
    }
    if (rc == SMQ_E_STORAGE_FULL)
        space_full(t->space);
    t->open = false;
}

struct smq_op *txn_take_done(struct txn *t)
{
    struct smq_op *ops = t->done_head;

    t->done_head = NULL;
    t->done_tail = &t->done_head;
    t->lost = false;
    t->lost_rc = 0;
    return ops;
}

void txn_answer(struct txn *t, struct smq_op *ops)
{
    if (t->syncer != NULL)
        syncer_release(t->syncer, ops);
    else
        op_answer(ops);
}
