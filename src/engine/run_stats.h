/*
 * run_stats.h — the engine's statistics (SMQ_OP_STATS), reached through the
 * admin listener, /metrics and smqctl (docs/admin-api.md): per-queue and
 * per-topic figures and the engine-wide totals.  It runs on the engine
 * thread inside the same group commit as client traffic.
 */
#ifndef SMQD_RUN_STATS_H
#define SMQD_RUN_STATS_H

#include "engine_core.h"

/* The engine-wide figures (engine_stats and a totals-only STATS). */
void run_stats_totals(const struct smq_engine *e, struct smq_engine_stats *out);
/* 0 or an SMQ_E_* code. */
int run_stats(struct smq_engine *e, struct smq_op *op);

#endif
