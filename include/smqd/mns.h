/*
 * mns.h — the MNS queue API's vocabulary, shared by every layer: its
 * actions, the fixed limits and ranges of docs/protocol.md §5, a queue's
 * attributes with their defaults, and a message body's MD5.  A leaf: it
 * knows nothing of HTTP, the engine or storage.
 */
#ifndef SMQD_MNS_H
#define SMQD_MNS_H

#include <stdbool.h>
#include <stdint.h>

#include "smqd/qname.h"

/* Messages per batch request (send, receive, peek, delete). */
#define SMQ_BATCH_MAX 16

/* Attribute ranges (docs/protocol.md §5). */
#define SMQ_DELAY_MAX_S 604800
#define SMQ_MSG_SIZE_MIN 1024
#define SMQ_MSG_SIZE_MAX 65536
#define SMQ_RETENTION_MIN_S 60
#define SMQ_RETENTION_MAX_S 604800
#define SMQ_VISIBILITY_MIN_S 1
#define SMQ_VISIBILITY_MAX_S 43200
#define SMQ_POLLING_WAIT_MAX_S 30
#define SMQ_PRIORITY_MIN 1
#define SMQ_PRIORITY_MAX 16
#define SMQ_PRIORITY_DEFAULT 8
#define SMQ_DLQ_MAX_RECEIVE_MIN 1
#define SMQ_DLQ_MAX_RECEIVE_MAX 1000

/* The MNS actions, as routed and as logged and counted. */
enum mns_action {
    MNS_UNKNOWN = 0,
    MNS_CREATE_QUEUE,
    MNS_SET_QUEUE_ATTRIBUTES,
    MNS_GET_QUEUE_ATTRIBUTES,
    MNS_DELETE_QUEUE,
    MNS_LIST_QUEUE,
    MNS_SEND_MESSAGE,
    MNS_BATCH_SEND_MESSAGE,
    MNS_RECEIVE_MESSAGE,
    MNS_BATCH_RECEIVE_MESSAGE,
    MNS_PEEK_MESSAGE,
    MNS_BATCH_PEEK_MESSAGE,
    MNS_DELETE_MESSAGE,
    MNS_BATCH_DELETE_MESSAGE,
    MNS_CHANGE_MESSAGE_VISIBILITY,
    MNS_CREATE_TOPIC,
    MNS_SET_TOPIC_ATTRIBUTES,
    MNS_GET_TOPIC_ATTRIBUTES,
    MNS_DELETE_TOPIC,
    MNS_LIST_TOPIC,
    MNS_PUBLISH_MESSAGE,
    MNS_SUBSCRIBE,
    MNS_SET_SUBSCRIPTION_ATTRIBUTES,
    MNS_GET_SUBSCRIPTION_ATTRIBUTES,
    MNS_UNSUBSCRIBE,
    MNS_LIST_SUBSCRIPTION_BY_TOPIC,
    MNS__ACTION_COUNT
};

/* The name of an action on the wire and in logs ("ReceiveMessage", ...;
 * "-" for MNS_UNKNOWN and anything out of range). */
const char *mns_action_name(enum mns_action a);

/* The one action class (grant.h GRANT_*) an action belongs to, which a key
 * needs on the queue it names; 0 for MNS_UNKNOWN and anything out of range. */
unsigned mns_action_class(enum mns_action a);

/*
 * Dead-letter policy (an smqd extension, docs/protocol.md §11).  A message
 * received max_receive times that would be delivered once more is moved
 * instead, in the same transaction, to the target queue.
 */
struct smq_dlq_policy {
    int enabled;                             /* 0/1 */
    char target[SMQ_QUEUE_NAME_MAX + 1];     /* "" when disabled */
    int64_t max_receive;                     /* 1..1000 */
};

struct smq_queue_attrs {
    int64_t delay_s;
    int64_t max_msg_size;
    int64_t retention_s;
    int64_t visibility_s;
    int64_t polling_wait_s;
    int logging;                 /* 0/1 */
    struct smq_dlq_policy dlq;
};

/* Which attributes a request names (struct smq_op_attrs.present). */
enum {
    SMQ_ATTR_DELAY = 1u << 0,
    SMQ_ATTR_MAX_MSG_SIZE = 1u << 1,
    SMQ_ATTR_RETENTION = 1u << 2,
    SMQ_ATTR_VISIBILITY = 1u << 3,
    SMQ_ATTR_POLLING_WAIT = 1u << 4,
    SMQ_ATTR_LOGGING = 1u << 5,
    SMQ_ATTR_DLQ = 1u << 6          /* the whole policy (enabled, target, max_receive) */
};

/* A new queue's attributes where the request names none. */
void mns_default_attrs(struct smq_queue_attrs *a);

/* The request's attributes (those whose SMQ_ATTR_* bit is in present)
 * laid over base. */
void mns_overlay_attrs(struct smq_queue_attrs *base, const struct smq_queue_attrs *req,
                       unsigned present);

bool mns_attrs_equal(const struct smq_queue_attrs *a, const struct smq_queue_attrs *b);

#define MNS_MD5_LEN 16

/* ---- topics (docs/protocol.md §13) ---- */

/* Topic and subscription names follow the queue-name rule (qname.h). */
#define SMQ_TOPIC_NAME_MAX SMQ_QUEUE_NAME_MAX
/* MessageTag and FilterTag: at most 16 code points; 64 bytes holds them in UTF-8. */
#define SMQ_TAG_MAX_CHARS 16
#define SMQ_TAG_MAX_BYTES 64
/* A subscription's Endpoint text, in bytes. */
#define SMQ_ENDPOINT_MAX 1024
/* How long a published message is kept for its pending notifications. */
#define SMQ_TOPIC_RETENTION_S 86400
/* Default [limits] max_topics and max_subscriptions_per_topic. */
#define SMQ_TOPICS_DEFAULT_MAX 1000
#define SMQ_SUBS_PER_TOPIC_DEFAULT_MAX 1000

struct smq_topic_attrs {
    int64_t max_msg_size;        /* SMQ_MSG_SIZE_MIN..SMQ_MSG_SIZE_MAX, default the max */
    int logging;                 /* 0/1 */
};

/* Which topic attributes a request names (struct smq_op_topic.present). */
enum {
    SMQ_TATTR_MAX_MSG_SIZE = 1u << 0,
    SMQ_TATTR_LOGGING = 1u << 1
};

enum smq_notify_strategy {
    SMQ_NOTIFY_BACKOFF_RETRY = 0,            /* the default */
    SMQ_NOTIFY_EXPONENTIAL_DECAY_RETRY = 1
};

enum smq_notify_format {
    SMQ_NOTIFY_XML = 0,                      /* the default */
    SMQ_NOTIFY_JSON = 1,
    SMQ_NOTIFY_SIMPLIFIED = 2
};

/* A subscription's dead-letter queue (§13.13): no receive count. */
struct smq_sub_dlq {
    int enabled;                             /* 0/1 */
    char target[SMQ_QUEUE_NAME_MAX + 1];     /* "" when disabled */
};

struct smq_sub_attrs {
    char endpoint[SMQ_ENDPOINT_MAX + 1];     /* trimmed, as validated (notify.h) */
    char filter_tag[SMQ_TAG_MAX_BYTES + 1];  /* "" = no filter */
    enum smq_notify_strategy strategy;
    enum smq_notify_format format;
    struct smq_sub_dlq dlq;
};

/* Which subscription attributes a request names (struct smq_op_sub.present). */
enum {
    SMQ_SATTR_ENDPOINT = 1u << 0,
    SMQ_SATTR_FILTER_TAG = 1u << 1,
    SMQ_SATTR_STRATEGY = 1u << 2,
    SMQ_SATTR_FORMAT = 1u << 3,
    SMQ_SATTR_DLQ = 1u << 4
};

/* A new topic's attributes where the request names none. */
void mns_default_topic_attrs(struct smq_topic_attrs *a);
/* The wire names: "BACKOFF_RETRY", "XML", ... */
const char *mns_notify_strategy_name(enum smq_notify_strategy s);
const char *mns_notify_format_name(enum smq_notify_format f);
/* A stored value as the enum; anything unknown is the default. */
enum smq_notify_strategy mns_notify_strategy_of(int v);
enum smq_notify_format mns_notify_format_of(int v);

/* A body's MD5 as computed at send (MessageBodyMD5); rows stored before
 * smqd kept it have none. */
struct mns_body_md5 {
    unsigned char bytes[MNS_MD5_LEN];
    bool present;
};

#endif
