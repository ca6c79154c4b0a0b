/*
 * run_redrive.h — redrive: moving a dead-letter queue's messages back to
 * the queues they came from, at a bounded rate (SMQ_OP_REDRIVE, from the
 * admin listener and smqctl).  The operation takes a snapshot of the
 * DLQ's Active messages that know their source; every REDRIVE_TICK_MS a
 * slice of it moves, one UPDATE of the row each (msgs_move).
 */
#ifndef SMQD_RUN_REDRIVE_H
#define SMQD_RUN_REDRIVE_H

#include <stdint.h>

#include "engine_core.h"

/* Starts (or replaces) the redrive of the DLQ q.  0 or an SMQ_E_* code. */
int run_redrive_start(struct smq_engine *e, struct smq_op *op, struct smq_queue *q);
/* Moves a slice of every running redrive (once per run, after the clock
 * advanced). */
void run_redrive_tick(struct smq_engine *e, uint64_t now_mono);
/* Milliseconds until the next tick, UINT64_MAX if none runs. */
uint64_t run_redrive_timeout_ms(const struct smq_engine *e, uint64_t now_mono);

#endif
