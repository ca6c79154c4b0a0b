/*
 * run_topic.h — the engine's topic and subscription operations
 * (docs/protocol.md §13.4, §13.6), called by engine.c's dispatch: create,
 * set, get, delete and list topics; subscribe, set, get, unsubscribe and
 * list subscriptions.  Each returns 0 or an SMQ_E_* code (with
 * op->result's message set where the standard text would not say what was
 * wrong).
 */
#ifndef SMQD_RUN_TOPIC_H
#define SMQD_RUN_TOPIC_H

#include "engine_core.h"

int run_topic_create(struct smq_engine *e, struct smq_op *op);
int run_topic_set(struct smq_engine *e, struct smq_op *op, struct smq_topic *t);
int run_topic_get(struct smq_engine *e, struct smq_op *op, struct smq_topic *t);
int run_topic_delete(struct smq_engine *e, struct smq_op *op);
int run_topic_list(struct smq_engine *e, struct smq_op *op);

int run_sub_subscribe(struct smq_engine *e, struct smq_op *op, struct smq_topic *t);
int run_sub_set(struct smq_engine *e, struct smq_op *op, struct smq_topic *t);
int run_sub_get(struct smq_engine *e, struct smq_op *op, struct smq_topic *t);
int run_sub_unsubscribe(struct smq_engine *e, struct smq_op *op, struct smq_topic *t);
int run_sub_list(struct smq_engine *e, struct smq_op *op, struct smq_topic *t);

/* The store rows of a topic and a subscription (recover.c reads them back). */
void run_topic_rec(const struct smq_topic *t, const struct smq_topic_attrs *a, int64_t modify_s,
                   struct store_topic_rec *r);
void run_sub_rec(const struct smq_sub *s, const struct smq_sub_attrs *a, int64_t modify_s,
                 struct store_sub_rec *r);

#endif
