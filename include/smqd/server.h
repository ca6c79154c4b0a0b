/*
 * server.h — the engine thread and its inbox.
 *
 * HTTP threads submit decided operations; the engine thread takes everything
 * that has arrived since its last run and executes it as one group commit
 * (engine_run), so concurrent requests share one transaction, and the
 * syncer's WAL flushes cover many commits each.
 * While the engine commits, new operations queue up for the next run; no
 * lock is held across the commit.  The thread sleeps until an operation
 * arrives or the engine's next timer is due.
 */
#ifndef SMQD_SERVER_H
#define SMQD_SERVER_H

#include "smqd/engine.h"

struct smq_server;

/* Starts the engine thread.  0, or SMQ_E_INTERNAL / SMQ_E_NOMEM. */
int server_start(struct smq_engine *engine, struct smq_server **out);

/* Hands op to the engine thread (thread-safe).  op->done is called once op
 * has finished and its effects are committed (and, with a syncer, flushed:
 * then on the syncer's thread; see engine_run). */
void server_submit(struct smq_server *s, struct smq_op *op);

/* Makes the engine thread look at engine_next_timeout_ms again (thread-safe;
 * arg is the server).  The syncer calls it when a flush is over. */
void server_wake(void *arg);

/*
 * Stops the engine thread: runs what was submitted, finishes every parked
 * long poll with MessageNotExist, and joins.  Operations submitted after
 * this are finished at once with ServiceUnavailable.
 */
void server_stop(struct smq_server *s);
void server_free(struct smq_server *s);

#endif
