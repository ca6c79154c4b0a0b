/*
 * op.h — an operation: what a listener asks of the engine, decided and
 * checked against every fixed range before the engine sees it, and what the
 * engine answers.  The MNS API and the admin API build ops (api.h,
 * admin_api.h); the engine runs them (engine.h); the syncer answers them
 * (syncer.h).
 *
 * The inputs and outputs of each kind live in their own member of one
 * anonymous union: an op of kind SMQ_OP_SEND uses op->send only, a receive
 * op->recv only, and so on (the table at enum smq_op_kind).  op_init and
 * op_set_kind give the member its neutral defaults; reading another kind's
 * member is a bug.
 */
#ifndef SMQD_OP_H
#define SMQD_OP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "smqd/errors.h"
#include "smqd/grant.h"
#include "smqd/mns.h"
#include "smqd/twheel.h"

enum smq_op_kind {               /* the union member each kind uses */
    SMQ_OP_CREATE_QUEUE,         /* attrs */
    SMQ_OP_SET_QUEUE,            /* attrs */
    SMQ_OP_GET_QUEUE,            /* info */
    SMQ_OP_DELETE_QUEUE,         /* (none) */
    SMQ_OP_LIST_QUEUES,          /* list */
    SMQ_OP_SEND,                 /* send */
    SMQ_OP_RECEIVE,              /* recv */
    SMQ_OP_PEEK,                 /* recv */
    SMQ_OP_DELETE_MSG,           /* del */
    SMQ_OP_CHANGE_VISIBILITY,    /* vis */
    /* administration (admin listener, smqctl) */
    SMQ_OP_PURGE,                /* purge: every message of a queue and/or its DLQ */
    SMQ_OP_REDRIVE,              /* redrive: a DLQ's messages back to their sources */
    SMQ_OP_STATS,                /* stats: per-queue statistics; queue "" = every queue */
    /* topics (docs/protocol.md §13): op->queue holds the topic's name */
    SMQ_OP_CREATE_TOPIC,         /* topic */
    SMQ_OP_SET_TOPIC,            /* topic */
    SMQ_OP_GET_TOPIC,            /* topic (out: info) */
    SMQ_OP_DELETE_TOPIC,         /* (none) */
    SMQ_OP_LIST_TOPICS,          /* tlist */
    SMQ_OP_PUBLISH,              /* publish */
    SMQ_OP_SUBSCRIBE,            /* sub */
    SMQ_OP_SET_SUBSCRIPTION,     /* sub */
    SMQ_OP_GET_SUBSCRIPTION,     /* sub (out: info) */
    SMQ_OP_UNSUBSCRIBE,          /* sub (name only) */
    SMQ_OP_LIST_SUBSCRIPTIONS,   /* slist */
    SMQ_OP_PUSH_RESULT           /* push: one HTTP push attempt's outcome, from the push pool */
    /* A new kind needs its row in each layer's table (op.c, engine.c,
     * api.c): without the last kind's the build fails, without another's
     * the unit tests do.  One added here moves SMQ_OP_KIND_COUNT. */
};

/* The number of kinds, which sizes each layer's table of kinds.  Not an
 * enumerator: a switch on every kind without a default (test_op.c) would
 * have to name it. */
#define SMQ_OP_KIND_COUNT (SMQ_OP_PUSH_RESULT + 1)

/* A queue as GetQueueAttributes and ListQueue report it. */
struct smq_queue_info {
    char name[SMQ_QUEUE_NAME_MAX + 1];
    struct smq_queue_attrs attrs;
    int64_t create_s, modify_s;
    uint64_t n_active, n_inactive, n_delayed;
};

/* Per-queue statistics (SMQ_OP_STATS).  Counters count since start-up. */
struct smq_queue_stats {
    struct smq_queue_info info;
    int64_t oldest_enqueue_ms;   /* of any message in the queue; 0 = empty */
    uint64_t waiters;            /* parked long polls */
    uint64_t sent, received, deleted, expired;
    uint64_t dead_lettered;      /* moved from this queue to its DLQ */
    uint64_t redriven;           /* moved from this queue (a DLQ) back to a source */
    uint64_t redrive_pending;    /* still to move in a running redrive */
};

/* The push latency histogram's upper bounds (Prometheus' default buckets,
 * 5 ms to 10 s), in microseconds. */
#define SMQ_PUSH_LATENCY_BUCKETS 11
static inline uint64_t smq_push_latency_bound_us(size_t i)
{
    static const uint64_t bounds[SMQ_PUSH_LATENCY_BUCKETS] = {
        5000, 10000, 25000, 50000, 100000, 250000, 500000, 1000000, 2500000, 5000000, 10000000};
    return i < SMQ_PUSH_LATENCY_BUCKETS ? bounds[i] : UINT64_MAX;
}

/* Per-topic statistics (SMQ_OP_STATS), its subscriptions' figures summed.
 * Counters count since start-up. */
struct smq_topic_stats {
    char name[SMQ_TOPIC_NAME_MAX + 1];
    uint64_t published;          /* publishes accepted */
    uint64_t delivered;          /* notifications delivered */
    uint64_t failed;             /* delivery attempts that failed */
    uint64_t dead;               /* notifications given up (to a dead-letter queue, or dropped) */
    uint64_t pending;            /* notifications not yet delivered or given up */
    uint64_t retrying;           /* of those, the ones with a failed attempt */
    uint64_t http_pending;       /* of those, the ones of HTTP subscriptions (their pushes wait) */
    uint64_t messages;           /* published messages kept for their pending notifications */
    /* HTTP pushes (docs/protocol.md §13.10, §13.12): */
    uint64_t rejected;           /* attempts answered 403 (also counted in failed) */
    uint64_t push_latency_us_sum;    /* of every attempt with an outcome */
    uint64_t push_latency_n;
    /* attempts whose latency was <= smq_push_latency_bound_us(i), per bucket
     * i (not cumulative); the last bucket takes the rest (+Inf) */
    uint64_t push_latency_buckets[SMQ_PUSH_LATENCY_BUCKETS + 1];
};

/* Engine-wide figures (engine_stats, SMQ_OP_STATS). */
struct smq_engine_stats {
    size_t queues, messages, waiters;
    size_t topics, subscriptions;  /* subscriptions: of every topic */
    uint64_t reloads;             /* state reloads after a lost transaction */
    bool storage_full;            /* refusing sends: the disk filled up */
    bool storage_reserve_spent;   /* and no released reserve is left for the deletes */
    bool broken;                  /* state could not be reloaded: serving nothing */
    uint64_t dlq_move_failures;   /* moves not made (target missing, write failed) */
    uint64_t db_pages, free_pages, page_size;   /* database file, as of the last run */
    uint64_t vacuumed_pages;      /* freed pages returned to the file system */
    uint64_t notifications_dropped;   /* given up with no dead-letter queue to take them */
};

/* A message as returned by Receive or Peek. */
struct smq_msg_view {
    uint64_t seq;
    uint32_t handle_gen;         /* Receive only */
    int64_t enqueue_ms, first_dequeue_ms, next_visible_ms;
    uint32_t dequeue_count;
    int priority;
    char *body;                  /* body_len bytes in the op's body_block, not NUL-terminated
                                  * (op_release frees the block) */
    size_t body_len;
    struct mns_body_md5 body_md5;
    char *ext;                   /* ext_len bytes in the body_block: the message's extensions
                                  * as XML (xml.h, xml_send_item.ext); ext_len 0 = none */
    size_t ext_len;
};

struct smq_send_item {
    const char *body;            /* borrowed from the caller until done */
    size_t body_len;
    const unsigned char *body_md5;   /* MNS_MD5_LEN bytes, borrowed; NULL = none kept */
    int64_t delay_s;             /* 0 = the queue's DelaySeconds applies */
    int priority;                /* 1..16 */
    const char *ext;             /* borrowed: the extensions' XML (xml_send_item.ext), or NULL */
    size_t ext_len;
};

struct smq_handle_ref {
    uint64_t seq;
    uint32_t gen;
    int err;                     /* per item: 0, or set by the caller (malformed) / engine */
};

/* ---- the members of the union, one per kind (or pair of kinds) ---- */

struct smq_op_attrs {                        /* CREATE_QUEUE, SET_QUEUE */
    struct smq_queue_attrs values;           /* those named in present */
    unsigned present;                        /* SMQ_ATTR_* bits */
    bool created;                            /* out, CREATE: true = 201, false = 204 */
};

struct smq_op_list {                         /* LIST_QUEUES */
    char prefix[SMQ_QUEUE_NAME_MAX + 1];
    char marker[SMQ_QUEUE_NAME_MAX + 1];
    int ret_number;                          /* 1..1000 */
    struct smq_queue_info *queues;           /* out: malloc'd array */
    size_t n_queues;
    char next_marker[SMQ_QUEUE_NAME_MAX + 1];  /* out: "" when no more */
    /* Only the queues these grants give "list" on are shown (and counted
     * for ret_number and next_marker); NULL = every queue.  Borrowed from
     * the key ring, which outlives every request (auth.h). */
    const struct grant_set *visible;
};

struct smq_op_send {                         /* SEND */
    struct smq_send_item items[SMQ_BATCH_MAX];
    size_t n;
    uint64_t seq[SMQ_BATCH_MAX];             /* out: each message's sequence number */
    bool delayed[SMQ_BATCH_MAX];             /* out: it starts Delayed, with a receipt handle
                                              * of generation 0 */
};

struct smq_op_recv {                         /* RECEIVE, PEEK */
    int max_msgs;                            /* 1..16 */
    int64_t wait_s;                          /* RECEIVE: 0..30, -1 = the queue's default */
    struct smq_msg_view msgs[SMQ_BATCH_MAX]; /* out */
    size_t n_msgs;
    char *body_block;                        /* out: every msgs[i].body, one malloc */
};

struct smq_op_del {                          /* DELETE_MSG */
    struct smq_handle_ref refs[SMQ_BATCH_MAX];
    size_t n;
    bool batch;                              /* per-handle results, op result 0 */
};

struct smq_op_vis {                          /* CHANGE_VISIBILITY */
    struct smq_handle_ref ref;
    int64_t visibility_s;                    /* 0..43200 */
    uint32_t new_gen;                        /* out */
    int64_t next_visible_ms;                 /* out */
};

struct smq_op_purge {                        /* PURGE */
    bool main;                               /* the queue's own messages */
    bool dlq;                                /* those of its DLQ target */
    uint64_t n_main, n_dlq;                  /* out: messages purged */
};

struct smq_op_redrive {                      /* REDRIVE (op->queue is the DLQ) */
    uint64_t max;                            /* 0 = every message now in the DLQ */
    uint32_t rate_per_s;                     /* 1..100000 messages per second */
    uint64_t n_scheduled;                    /* out: messages scheduled */
};

struct smq_op_stats {                        /* STATS */
    bool totals_only;                        /* only totals (a health probe) */
    bool with_topics;                        /* and every topic's figures (queue "" only) */
    struct smq_queue_stats *queues;          /* out: malloc'd array, sorted by name */
    size_t n_queues;
    struct smq_engine_stats totals;          /* out */
    /* out, with_topics: every topic (malloc'd, sorted by name); subscriptions
     * summed, so a scrape has O(topics) series, not O(subscriptions) */
    struct smq_topic_stats *topics;
    size_t n_topics;
};

/* ---- topics ---- */

/* A topic as GetTopicAttributes and ListTopic (with meta) report it. */
struct smq_topic_info {
    char name[SMQ_TOPIC_NAME_MAX + 1];
    struct smq_topic_attrs attrs;
    int64_t create_s, modify_s;
    uint64_t message_count;                  /* messages kept for pending notifications */
    uint64_t subscriptions;                  /* its subscriptions (the admin API, smqctl) */
    uint64_t published;                      /* publishes accepted since start (metrics) */
};

/* A subscription as GetSubscriptionAttributes and its list (with meta) report it. */
struct smq_sub_info {
    char topic[SMQ_TOPIC_NAME_MAX + 1];
    char name[SMQ_TOPIC_NAME_MAX + 1];
    struct smq_sub_attrs attrs;
    int64_t create_s, modify_s;
    uint64_t pending;                        /* notifications not yet delivered or given up */
    uint64_t retrying;                       /* of those, the ones with a failed attempt */
    uint64_t delivered;                      /* since start (metrics) */
    uint64_t failed;                         /* attempts that failed, since start (metrics) */
    uint64_t dead;                           /* notifications given up (to the DLQ or dropped) */
    uint64_t rejected;                       /* HTTP attempts answered 403, since start */
    /* HTTP attempts' latencies since start: the sum, the count, and per
     * bucket those <= smq_push_latency_bound_us(i) (not cumulative; the
     * last bucket is beyond every bound). */
    uint64_t push_latency_us_sum, push_latency_n;
    uint64_t push_latency_buckets[SMQ_PUSH_LATENCY_BUCKETS + 1];
};

struct smq_op_topic {                        /* CREATE_TOPIC, SET_TOPIC, GET_TOPIC */
    struct smq_topic_attrs values;           /* those named in present */
    unsigned present;                        /* SMQ_TATTR_* bits */
    bool created;                            /* out, CREATE: true = 201, false = 204 */
    struct smq_topic_info info;              /* out, GET */
};

struct smq_op_tlist {                        /* LIST_TOPICS */
    char prefix[SMQ_TOPIC_NAME_MAX + 1];
    char marker[SMQ_TOPIC_NAME_MAX + 1];
    int ret_number;                          /* 1..1000 */
    struct smq_topic_info *topics;           /* out: malloc'd array */
    size_t n_topics;
    char next_marker[SMQ_TOPIC_NAME_MAX + 1];  /* out: "" when no more */
    const struct grant_set *visible;         /* as smq_op_list.visible, on topic names */
};

struct smq_op_publish {                      /* PUBLISH */
    const char *body;                        /* borrowed from the caller until done */
    size_t body_len;                         /* 1..the topic's MaximumMessageSize */
    unsigned char body_md5[MNS_MD5_LEN];     /* of the body, raw */
    char tag[SMQ_TAG_MAX_BYTES + 1];         /* MessageTag, "" = untagged */
    uint64_t seq;                            /* out: the message's sequence number (its id) */
    uint32_t n_notifications;                /* out: subscriptions it matched */
};

struct smq_op_sub {                          /* SUBSCRIBE, SET/GET_SUBSCRIPTION, UNSUBSCRIBE */
    char name[SMQ_TOPIC_NAME_MAX + 1];
    struct smq_sub_attrs values;             /* those named in present */
    unsigned present;                        /* SMQ_SATTR_* bits */
    bool created;                            /* out, SUBSCRIBE: true = 201, false = 204 */
    struct smq_sub_info info;                /* out, GET */
};

struct smq_op_slist {                        /* LIST_SUBSCRIPTIONS */
    char prefix[SMQ_TOPIC_NAME_MAX + 1];
    char marker[SMQ_TOPIC_NAME_MAX + 1];
    int ret_number;                          /* 1..1000 */
    struct smq_sub_info *subs;               /* out: malloc'd array */
    size_t n_subs;
    char next_marker[SMQ_TOPIC_NAME_MAX + 1];  /* out: "" when no more */
};

/* How one push attempt ended (push.h). */
enum smq_push_outcome {
    SMQ_PUSH_OK,                 /* a 2xx status */
    SMQ_PUSH_REJECTED,           /* 403: the endpoint did not accept the signature */
    SMQ_PUSH_HTTP_ERROR,         /* any other status */
    SMQ_PUSH_TIMEOUT,            /* no response headers within the push timeout */
    SMQ_PUSH_CONNECT_ERROR,      /* DNS, connect, TLS (verification included), closed early */
    SMQ_PUSH_CANCELLED,          /* not attempted: the pool was stopping */
    SMQ_PUSH_SIGN_ERROR          /* not sent: its signature (§13.11) could not be made */
};

struct smq_op_push {                         /* PUSH_RESULT */
    int64_t sub_id;                          /* which notification: its subscription, */
    uint64_t seq;                            /* the published message, */
    uint32_t attempt;                        /* and the attempt (1 = the first) */
    enum smq_push_outcome outcome;
    int http_status;                         /* 0 when none was received */
    uint64_t latency_us;                     /* start of the attempt to its outcome */
};

struct smq_op;
typedef void (*smq_op_done_fn)(struct smq_op *op, void *arg);

struct smq_op {
    enum smq_op_kind kind;
    char queue[SMQ_QUEUE_NAME_MAX + 1];
    char request_id[25];                     /* for operation logs; "" = none */
    struct smq_errinfo result;               /* out: result.err == 0 on success */

    union {
        struct smq_op_attrs attrs;
        struct smq_queue_info info;          /* GET_QUEUE, out */
        struct smq_op_list list;
        struct smq_op_send send;
        struct smq_op_recv recv;
        struct smq_op_del del;
        struct smq_op_vis vis;
        struct smq_op_purge purge;
        struct smq_op_redrive redrive;
        struct smq_op_stats stats;
        struct smq_op_topic topic;
        struct smq_op_tlist tlist;
        struct smq_op_publish publish;
        struct smq_op_sub sub;
        struct smq_op_slist slist;
        struct smq_op_push push;
    };

    /* ---- completion: called after commit (and flush; see engine_run) ---- */
    smq_op_done_fn done;
    void *done_arg;
    /* Optional: true when the client that waits for this op has gone away.
     * Asked (on the engine thread) about parked long polls, before one is
     * handed a message and about once a second, so that a closed connection
     * neither takes a message nor holds its slot until the deadline. */
    bool (*client_gone)(struct smq_op *op, void *arg);

    /* ---- engine-private ---- */
    struct smq_op *next;                     /* run list, then completion list */
    struct smq_op *wait_prev, *wait_next;    /* parked long poll, per queue */
    struct smq_queue *wait_queue;            /* non-NULL while parked */
    struct twheel_node wait_timer;
    uint64_t sync_ticket;                    /* syncer.c: the commit it waits to be flushed */
};

/* The kind's name in logs and tests ("send", "create_topic"); NULL for a
 * value that is not a kind. */
const char *op_kind_name(enum smq_op_kind kind);
/* Zeroes op and sets its kind (op_set_kind). */
void op_init(struct smq_op *op, enum smq_op_kind kind);
/* Sets the kind and gives its union member its neutral defaults (anything
 * the member held is dropped: call before filling it in); the queue name,
 * request id and completion stay. */
void op_set_kind(struct smq_op *op, enum smq_op_kind kind);
/* Frees what the engine allocated into op's outputs (bodies, lists). */
void op_release(struct smq_op *op);
/* Undoes what a finished op would report (its outputs released, no queue
 * "created") and sets its result to err with message msg (NULL: the
 * standard text): for ops whose effects did not reach the disk. */
void op_fail(struct smq_op *op, int err, const char *msg);
/* Calls done for every op of the ->next list, in order, unlinking each. */
void op_answer(struct smq_op *ops);

#endif
