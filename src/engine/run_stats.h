/*
 * run_stats.h — the engine's administration operations, reached through
 * the admin listener and smqctl (docs/admin-api.md): per-queue statistics
 * (SMQ_OP_STATS) and purge (SMQ_OP_PURGE).  They run on the engine thread
 * inside the same group commit as client traffic.  Each returns 0 or an
 * SMQ_E_* code.
 */
#ifndef SMQD_RUN_STATS_H
#define SMQD_RUN_STATS_H

#include "engine_core.h"

/* The engine-wide figures (engine_stats and a totals-only STATS). */
void run_stats_totals(const struct smq_engine *e, struct smq_engine_stats *out);
int run_stats(struct smq_engine *e, struct smq_op *op);
int run_purge(struct smq_engine *e, struct smq_op *op, struct smq_queue *q);

#endif
