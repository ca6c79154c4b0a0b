/*
 * engine_thread.h — the engine thread and its inbox.
 *
 * HTTP threads submit decided operations; the engine thread takes everything
 * that has arrived since its last run and executes it as one group commit
 * (engine_run), so concurrent requests share one transaction, and the
 * syncer's WAL flushes cover many commits each.
 * While the engine commits, new operations queue up for the next run; no
 * lock is held across the commit.  The thread sleeps until an operation
 * arrives or the engine's next timer is due.
 */
#ifndef SMQD_ENGINE_THREAD_H
#define SMQD_ENGINE_THREAD_H

#include "smqd/engine.h"

struct smq_engine_thread;

/* Starts the engine thread.  0, or SMQ_E_INTERNAL / SMQ_E_NOMEM. */
int engine_thread_start(struct smq_engine *engine, struct smq_engine_thread **out);

/* Hands op to the engine thread (thread-safe).  op->done is called once op
 * has finished and its effects are committed (and, with a syncer, flushed:
 * then on the syncer's thread; see engine_run). */
void engine_thread_submit(struct smq_engine_thread *s, struct smq_op *op);

/* Makes the engine thread look at engine_next_timeout_ms again (thread-safe;
 * arg is the engine thread).  The syncer calls it when a flush is over. */
void engine_thread_wake(void *arg);

/*
 * Stops the engine thread: runs what was submitted, finishes every parked
 * long poll with MessageNotExist, and joins.  Operations submitted after
 * this are finished at once with ServiceUnavailable.
 */
void engine_thread_stop(struct smq_engine_thread *s);
void engine_thread_free(struct smq_engine_thread *s);

#endif
