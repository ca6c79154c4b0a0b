/*
 * op.c — owns an operation's life outside the engine (op.h): its neutral
 * defaults per kind, the outputs it owns, failing and answering it.  What
 * differs between kinds is one row of the table below, so that a new kind
 * is a row here, not a case in every function.
 */
#include "smqd/op.h"

#include <stdlib.h>
#include <string.h>

/* ---- what each kind's member needs ------------------------------------------------ */

/* The defaults besides zero (the row's member is zeroed first). */
static void list_defaults(struct smq_op *op)
{
    op->list.ret_number = 1000;
}

static void recv_defaults(struct smq_op *op)
{
    op->recv.max_msgs = 1;
    op->recv.wait_s = -1;
}

static void topic_defaults(struct smq_op *op)
{
    mns_default_topic_attrs(&op->topic.values);
}

static void tlist_defaults(struct smq_op *op)
{
    op->tlist.ret_number = 1000;
}

static void slist_defaults(struct smq_op *op)
{
    op->slist.ret_number = 1000;
}

/* The outputs the engine allocates (op_release). */
static void release_recv(struct smq_op *op)
{
    for (size_t i = 0; i < op->recv.n_msgs; i++)
        op->recv.msgs[i].body = NULL;
    free(op->recv.body_block);
    op->recv.body_block = NULL;
    op->recv.n_msgs = 0;
}

static void release_list(struct smq_op *op)
{
    free(op->list.queues);
    op->list.queues = NULL;
    op->list.n_queues = 0;
}

static void release_stats(struct smq_op *op)
{
    free(op->stats.queues);
    op->stats.queues = NULL;
    op->stats.n_queues = 0;
    free(op->stats.topics);
    op->stats.topics = NULL;
    op->stats.n_topics = 0;
}

static void release_tlist(struct smq_op *op)
{
    free(op->tlist.topics);
    op->tlist.topics = NULL;
    op->tlist.n_topics = 0;
}

static void release_slist(struct smq_op *op)
{
    free(op->slist.subs);
    op->slist.subs = NULL;
    op->slist.n_subs = 0;
}

/* ---- the table of kinds ----------------------------------------------------------- */

struct op_kind_row {
    const char *name;                        /* op_kind_name; never NULL in a row */
    size_t member, member_size;              /* the union member op_set_kind zeroes
                                              * (offset in struct smq_op; size 0 = none) */
    void (*defaults)(struct smq_op *op);     /* then sets these; NULL = zero is neutral */
    void (*release)(struct smq_op *op);      /* frees its outputs; NULL = owns none */
    size_t created;                          /* offset of its "created" output, which
                                              * op_fail clears; 0 = none (kind is at 0) */
};

#define MEMBER(m) offsetof(struct smq_op, m), sizeof(((struct smq_op *)0)->m)
#define NO_MEMBER 0, 0

static const struct op_kind_row kinds[] = {
    [SMQ_OP_CREATE_QUEUE] = {"create_queue", MEMBER(attrs), NULL, NULL,
                             offsetof(struct smq_op, attrs.created)},
    [SMQ_OP_SET_QUEUE] = {"set_queue", MEMBER(attrs), NULL, NULL, 0},
    [SMQ_OP_GET_QUEUE] = {"get_queue", MEMBER(info), NULL, NULL, 0},
    [SMQ_OP_DELETE_QUEUE] = {"delete_queue", NO_MEMBER, NULL, NULL, 0},
    [SMQ_OP_LIST_QUEUES] = {"list_queues", MEMBER(list), list_defaults, release_list, 0},
    [SMQ_OP_SEND] = {"send", MEMBER(send), NULL, NULL, 0},
    [SMQ_OP_RECEIVE] = {"receive", MEMBER(recv), recv_defaults, release_recv, 0},
    [SMQ_OP_PEEK] = {"peek", MEMBER(recv), recv_defaults, release_recv, 0},
    [SMQ_OP_DELETE_MSG] = {"delete_msg", MEMBER(del), NULL, NULL, 0},
    [SMQ_OP_CHANGE_VISIBILITY] = {"change_visibility", MEMBER(vis), NULL, NULL, 0},
    [SMQ_OP_PURGE] = {"purge", MEMBER(purge), NULL, NULL, 0},
    [SMQ_OP_REDRIVE] = {"redrive", MEMBER(redrive), NULL, NULL, 0},
    [SMQ_OP_STATS] = {"stats", MEMBER(stats), NULL, release_stats, 0},
    [SMQ_OP_CREATE_TOPIC] = {"create_topic", MEMBER(topic), topic_defaults, NULL,
                             offsetof(struct smq_op, topic.created)},
    [SMQ_OP_SET_TOPIC] = {"set_topic", MEMBER(topic), topic_defaults, NULL, 0},
    [SMQ_OP_GET_TOPIC] = {"get_topic", MEMBER(topic), topic_defaults, NULL, 0},
    [SMQ_OP_DELETE_TOPIC] = {"delete_topic", NO_MEMBER, NULL, NULL, 0},
    [SMQ_OP_LIST_TOPICS] = {"list_topics", MEMBER(tlist), tlist_defaults, release_tlist, 0},
    [SMQ_OP_PUBLISH] = {"publish", MEMBER(publish), NULL, NULL, 0},
    [SMQ_OP_SUBSCRIBE] = {"subscribe", MEMBER(sub), NULL, NULL,
                          offsetof(struct smq_op, sub.created)},
    [SMQ_OP_SET_SUBSCRIPTION] = {"set_subscription", MEMBER(sub), NULL, NULL, 0},
    [SMQ_OP_GET_SUBSCRIPTION] = {"get_subscription", MEMBER(sub), NULL, NULL, 0},
    [SMQ_OP_UNSUBSCRIBE] = {"unsubscribe", MEMBER(sub), NULL, NULL, 0},
    [SMQ_OP_LIST_SUBSCRIPTIONS] = {"list_subscriptions", MEMBER(slist), slist_defaults,
                                   release_slist, 0},
    [SMQ_OP_PUSH_RESULT] = {"push_result", MEMBER(push), NULL, NULL, 0},
};

/* A kind added without its row fails here; a row left out in the middle
 * fails test_op (every kind has a name). */
_Static_assert(sizeof kinds / sizeof kinds[0] == SMQ_OP_KIND_COUNT,
               "every operation kind needs its row in op.c's table");

/* The kind's row; NULL for a value that is not a kind. */
static const struct op_kind_row *kind_row(enum smq_op_kind kind)
{
    if ((unsigned)kind >= SMQ_OP_KIND_COUNT || kinds[kind].name == NULL)
        return NULL;
    return &kinds[kind];
}

const char *op_kind_name(enum smq_op_kind kind)
{
    const struct op_kind_row *row = kind_row(kind);

    return row != NULL ? row->name : NULL;
}

/* ---- an op's life ----------------------------------------------------------------- */

void op_set_kind(struct smq_op *op, enum smq_op_kind kind)
{
    const struct op_kind_row *row = kind_row(kind);

    op_release(op);
    op->kind = kind;
    if (row == NULL)
        return;
    memset((char *)op + row->member, 0, row->member_size);
    if (row->defaults != NULL)
        row->defaults(op);
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
    const struct op_kind_row *row = kind_row(op->kind);

    if (row != NULL && row->release != NULL)
        row->release(op);
}

void op_fail(struct smq_op *op, int err, const char *msg)
{
    const struct op_kind_row *row = kind_row(op->kind);

    op_release(op);
    if (row != NULL && row->created != 0)
        *(bool *)((char *)op + row->created) = false;
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
