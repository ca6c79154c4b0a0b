/*
 * run_queue.h — the engine's queue operations: CreateQueue,
 * SetQueueAttributes, GetQueueAttributes, DeleteQueue and ListQueue
 * (docs/protocol.md §7.1–§7.5), called by engine.c's dispatch.  Each
 * returns 0 or an SMQ_E_* code (with op->result's message set where the
 * standard text would not say what was wrong).
 */
#ifndef SMQD_RUN_QUEUE_H
#define SMQD_RUN_QUEUE_H

#include "engine_core.h"

int run_queue_create(struct smq_engine *e, struct smq_op *op);
int run_queue_set(struct smq_engine *e, struct smq_op *op, struct smq_queue *q);
int run_queue_get(struct smq_engine *e, struct smq_op *op, struct smq_queue *q);
int run_queue_delete(struct smq_engine *e, struct smq_op *op);
int run_queue_list(struct smq_engine *e, struct smq_op *op);

#endif
