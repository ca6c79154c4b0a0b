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

/* A body's MD5 as computed at send (MessageBodyMD5); rows stored before
 * smqd kept it have none. */
struct mns_body_md5 {
    unsigned char bytes[MNS_MD5_LEN];
    bool present;
};

#endif
