/*
 * run_purge.h — the engine's purge (SMQ_OP_PURGE), reached through the
 * admin listener and smqctl (docs/admin-api.md): deletes every message of
 * a queue, its dead-letter queue or both, whatever their states.  It runs
 * on the engine thread inside the same group commit as client traffic.
 */
#ifndef SMQD_RUN_PURGE_H
#define SMQD_RUN_PURGE_H

#include "engine_core.h"

/* Purges q and/or its DLQ as op->purge asks, setting op->purge's counts.
 * 0 or an SMQ_E_* code. */
int run_purge(struct smq_engine *e, struct smq_op *op, struct smq_queue *q);

#endif
