/*
 * txn.h — the engine's transaction of one run, and the ops that run
 * finished.
 *
 * A run's writes share one store transaction, opened by the first write
 * (group commit).  Each operation writes inside a savepoint of its own
 * (txn_write_begin ... txn_write_end), so a failed statement undoes only
 * that operation; the engine changes memory only after txn_write_end
 * returned 0.  If the store drops the whole transaction (an I/O error, a
 * failed COMMIT), the run is "lost": every later write of the run fails
 * and the engine must reload its memory from the store before it answers.
 *
 * Finished ops wait on the done list until the run is committed.  With a
 * syncer (sync = full) the commit may be deferred while a WAL flush is in
 * progress, so that the next runs join the same transaction; after a
 * failed flush nothing may be written any more (syncer.h).
 *
 * Engine thread only.
 */
#ifndef SMQD_TXN_H
#define SMQD_TXN_H

#include <stdbool.h>

#include "smqd/op.h"
#include "smqd/store.h"
#include "smqd/syncer.h"
#include "space.h"

struct txn {
    struct smq_store *store;
    struct space *space;             /* told when the store reports a full disk */
    struct smq_syncer *syncer;       /* NULL: ops are answered right after COMMIT */
    bool open, lost;
    bool in_savepoint;               /* txn_write_begin succeeded, txn_write_end pending */
    int lost_rc;                     /* why the transaction was lost (for the ops' answers) */
    struct smq_op *done_head, **done_tail;
};

void txn_init(struct txn *t, struct smq_store *store, struct space *space);

/* After a failed WAL flush: the kernel may have dropped pages of the WAL,
 * and a commit or a checkpoint on top of them could copy stale pages into
 * the database, so nothing is written any more. */
bool txn_writes_stopped(const struct txn *t);

/* Opens the transaction on first use and a savepoint for one operation's
 * writes.  0, or the store's error (SMQ_E_INTERNAL once the run is lost). */
int txn_write_begin(struct txn *t);
/* Closes the operation's savepoint: keeps its writes when rc is 0 (and
 * the release works), else undoes them.  Returns rc, or the release's
 * error.  A no-op returning rc when txn_write_begin failed. */
int txn_write_end(struct txn *t, int rc);

/* Queues op for its done callback after the run's commit (err 0 = success;
 * an error already in op->result is kept). */
void txn_complete(struct txn *t, struct smq_op *op, int err);

/* Whether finished ops wait for the open transaction's commit. */
static inline bool txn_has_answers(const struct txn *t)
{
    return t->done_head != NULL;
}

/* Whether to leave the transaction open for the next run to join: while
 * the syncer flushes, a commit now would only wait for the next flush. */
bool txn_defer_commit(const struct txn *t, bool force);
/* Commits (or, when the run is lost, rolls back) the open transaction and
 * hands the commit to the syncer. */
void txn_commit(struct txn *t);
/* Takes the finished ops, in order (a ->next list), and clears the loss. */
struct smq_op *txn_take_done(struct txn *t);
/* Hands finished ops to whoever answers them: the syncer after the flush
 * that covers the commit, or their done callbacks now. */
void txn_answer(struct txn *t, struct smq_op *ops);

#endif
