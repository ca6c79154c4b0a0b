/*
 * recover.h — rebuilding the engine's memory from the store: at start-up,
 * and after a lost transaction, when memory may be ahead of the disk.
 * Every stored row goes through the same placement as live traffic
 * (msgs_link), so a restart cannot place a message differently.
 *
 * The caller has set e->now_ms (rows past their expiry at that time are
 * not loaded).
 */
#ifndef SMQD_RECOVER_H
#define SMQD_RECOVER_H

#include "engine_core.h"

/* Loads every queue and message from the store (expired rows are queued for
 * deletion) and the id high-water marks.  0 or an SMQ_E_* code. */
int recover_load(struct smq_engine *e);
/* Frees every queue and message (parked polls must be detached first). */
void recover_free(struct smq_engine *e);
/* After a lost transaction: rebuilds memory from the store, keeping parked
 * long polls (in their order) on the queues that still exist.  If the store
 * cannot be read, the engine is marked broken (every operation then fails
 * with InternalError and the next run tries again), because serving from a
 * partial state could lose rows and reuse ids. */
void recover_reload(struct smq_engine *e);
/* Reads the receipt-handle keys, or makes and stores them on first start. */
int recover_keys(struct smq_engine *e);

#endif
