/*
 * run_message.h — the engine's message operations: SendMessage and its
 * batch, ReceiveMessage and its batch (with long polling), PeekMessage and
 * its batch, DeleteMessage and its batch, and ChangeMessageVisibility
 * (docs/protocol.md §7.6–§7.13), called by engine.c's dispatch.  Each
 * returns 0 or an SMQ_E_* code.
 */
#ifndef SMQD_RUN_MESSAGE_H
#define SMQD_RUN_MESSAGE_H

#include "engine_core.h"

int run_message_send(struct smq_engine *e, struct smq_op *op, struct smq_queue *q);
/* Receives now, or parks op (waiters_is_parked, then 0) when nothing is
 * there and it may wait; parked polls are served first, so a newcomer
 * cannot overtake them. */
int run_message_receive(struct smq_engine *e, struct smq_op *op, struct smq_queue *q);
/* A receive of what is Active now, never parking: SMQ_E_MESSAGE_NOT_EXIST
 * when there is nothing (engine.c serves parked polls with it). */
int run_message_receive_now(struct smq_engine *e, struct smq_op *op, struct smq_queue *q);
int run_message_peek(struct smq_engine *e, struct smq_op *op, struct smq_queue *q);
int run_message_delete(struct smq_engine *e, struct smq_op *op, struct smq_queue *q);
int run_message_change_visibility(struct smq_engine *e, struct smq_op *op, struct smq_queue *q);

#endif
