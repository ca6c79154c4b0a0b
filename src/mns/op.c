/*
 * op.c — owns an operation's life outside the engine (op.h): its neutral
 * defaults per kind, the outputs it owns, failing and answering it.
 */
#include "smqd/op.h"

#include <stdlib.h>
#include <string.h>

/* The topic kinds' neutral defaults (op_set_kind). */
static void set_topic_kind(struct smq_op *op, enum smq_op_kind kind)
{
    switch (kind) {
    case SMQ_OP_CREATE_TOPIC:
    case SMQ_OP_SET_TOPIC:
    case SMQ_OP_GET_TOPIC:
        memset(&op->topic, 0, sizeof op->topic);
        mns_default_topic_attrs(&op->topic.values);
        break;
    case SMQ_OP_LIST_TOPICS:
        memset(&op->tlist, 0, sizeof op->tlist);
        op->tlist.ret_number = 1000;
        break;
    case SMQ_OP_PUBLISH:
        memset(&op->publish, 0, sizeof op->publish);
        break;
    case SMQ_OP_SUBSCRIBE:
    case SMQ_OP_SET_SUBSCRIPTION:
    case SMQ_OP_GET_SUBSCRIPTION:
    case SMQ_OP_UNSUBSCRIBE:
        memset(&op->sub, 0, sizeof op->sub);
        break;
    case SMQ_OP_LIST_SUBSCRIPTIONS:
        memset(&op->slist, 0, sizeof op->slist);
        op->slist.ret_number = 1000;
        break;
    case SMQ_OP_PUSH_RESULT:
        memset(&op->push, 0, sizeof op->push);
        break;
    default:
        break;
    }
}

void op_set_kind(struct smq_op *op, enum smq_op_kind kind)
{
    op_release(op);
    op->kind = kind;
    switch (kind) {
    case SMQ_OP_CREATE_QUEUE:
    case SMQ_OP_SET_QUEUE:
        memset(&op->attrs, 0, sizeof op->attrs);
        break;
    case SMQ_OP_GET_QUEUE:
        memset(&op->info, 0, sizeof op->info);
        break;
    case SMQ_OP_LIST_QUEUES:
        memset(&op->list, 0, sizeof op->list);
        op->list.ret_number = 1000;
        break;
    case SMQ_OP_SEND:
        memset(&op->send, 0, sizeof op->send);
        break;
    case SMQ_OP_RECEIVE:
    case SMQ_OP_PEEK:
        memset(&op->recv, 0, sizeof op->recv);
        op->recv.max_msgs = 1;
        op->recv.wait_s = -1;
        break;
    case SMQ_OP_DELETE_MSG:
        memset(&op->del, 0, sizeof op->del);
        break;
    case SMQ_OP_CHANGE_VISIBILITY:
        memset(&op->vis, 0, sizeof op->vis);
        break;
    case SMQ_OP_PURGE:
        memset(&op->purge, 0, sizeof op->purge);
        break;
    case SMQ_OP_REDRIVE:
        memset(&op->redrive, 0, sizeof op->redrive);
        break;
    case SMQ_OP_STATS:
        memset(&op->stats, 0, sizeof op->stats);
        break;
    case SMQ_OP_DELETE_QUEUE:
        break;
    default:
        set_topic_kind(op, kind);
        break;
    }
}

void op_init(struct smq_op *op, enum smq_op_kind kind)
{
    memset(op, 0, sizeof *op);
    op->kind = SMQ_OP_DELETE_QUEUE;       /* owns nothing yet */
    twheel_node_init(&op->wait_timer);
    op_set_kind(op, kind);
}

void op_release(struct smq_op *op)
{
    switch (op->kind) {
    case SMQ_OP_RECEIVE:
    case SMQ_OP_PEEK:
        for (size_t i = 0; i < op->recv.n_msgs; i++)
            op->recv.msgs[i].body = NULL;
        free(op->recv.body_block);
        op->recv.body_block = NULL;
        op->recv.n_msgs = 0;
        break;
    case SMQ_OP_LIST_QUEUES:
        free(op->list.queues);
        op->list.queues = NULL;
        op->list.n_queues = 0;
        break;
    case SMQ_OP_STATS:
        free(op->stats.queues);
        op->stats.queues = NULL;
        op->stats.n_queues = 0;
        break;
    case SMQ_OP_LIST_TOPICS:
        free(op->tlist.topics);
        op->tlist.topics = NULL;
        op->tlist.n_topics = 0;
        break;
    case SMQ_OP_LIST_SUBSCRIPTIONS:
        free(op->slist.subs);
        op->slist.subs = NULL;
        op->slist.n_subs = 0;
        break;
    default:
        break;
    }
}

void op_fail(struct smq_op *op, int err, const char *msg)
{
    op_release(op);
    if (op->kind == SMQ_OP_CREATE_QUEUE)
        op->attrs.created = false;
    if (op->kind == SMQ_OP_CREATE_TOPIC)
        op->topic.created = false;
    if (op->kind == SMQ_OP_SUBSCRIBE)
        op->sub.created = false;
    errors_set(&op->result, err, msg == NULL ? NULL : "%s", msg);
}

void op_answer(struct smq_op *ops)
{
    while (ops != NULL) {
        struct smq_op *next = ops->next;
        ops->next = NULL;
        ops->done(ops, ops->done_arg);
        ops = next;
    }
}
