/*
 * mns.c — owns the MNS vocabulary's few behaviours (mns.h): action names
 * and classes, and a queue's default attributes, overlay and comparison.
 */
#include "smqd/mns.h"

#include <stdio.h>
#include <string.h>

#include "smqd/grant.h"

static const char *const action_names[MNS__ACTION_COUNT] = {
    [MNS_UNKNOWN] = "-",
    [MNS_CREATE_QUEUE] = "CreateQueue",
    [MNS_SET_QUEUE_ATTRIBUTES] = "SetQueueAttributes",
    [MNS_GET_QUEUE_ATTRIBUTES] = "GetQueueAttributes",
    [MNS_DELETE_QUEUE] = "DeleteQueue",
    [MNS_LIST_QUEUE] = "ListQueue",
    [MNS_SEND_MESSAGE] = "SendMessage",
    [MNS_BATCH_SEND_MESSAGE] = "BatchSendMessage",
    [MNS_RECEIVE_MESSAGE] = "ReceiveMessage",
    [MNS_BATCH_RECEIVE_MESSAGE] = "BatchReceiveMessage",
    [MNS_PEEK_MESSAGE] = "PeekMessage",
    [MNS_BATCH_PEEK_MESSAGE] = "BatchPeekMessage",
    [MNS_DELETE_MESSAGE] = "DeleteMessage",
    [MNS_BATCH_DELETE_MESSAGE] = "BatchDeleteMessage",
    [MNS_CHANGE_MESSAGE_VISIBILITY] = "ChangeMessageVisibility",
};

/* docs/protocol.md §3.7 has this table for people. */
static const unsigned action_classes[MNS__ACTION_COUNT] = {
    [MNS_UNKNOWN] = 0,
    [MNS_CREATE_QUEUE] = GRANT_MANAGE,
    [MNS_SET_QUEUE_ATTRIBUTES] = GRANT_MANAGE,
    [MNS_GET_QUEUE_ATTRIBUTES] = GRANT_LIST,
    [MNS_DELETE_QUEUE] = GRANT_MANAGE,
    [MNS_LIST_QUEUE] = GRANT_LIST,
    [MNS_SEND_MESSAGE] = GRANT_SEND,
    [MNS_BATCH_SEND_MESSAGE] = GRANT_SEND,
    [MNS_RECEIVE_MESSAGE] = GRANT_RECEIVE,
    [MNS_BATCH_RECEIVE_MESSAGE] = GRANT_RECEIVE,
    [MNS_PEEK_MESSAGE] = GRANT_RECEIVE,
    [MNS_BATCH_PEEK_MESSAGE] = GRANT_RECEIVE,
    [MNS_DELETE_MESSAGE] = GRANT_RECEIVE,
    [MNS_BATCH_DELETE_MESSAGE] = GRANT_RECEIVE,
    [MNS_CHANGE_MESSAGE_VISIBILITY] = GRANT_RECEIVE,
};

unsigned mns_action_class(enum mns_action a)
{
    return (a > MNS_UNKNOWN && a < MNS__ACTION_COUNT) ? action_classes[a] : 0;
}

const char *mns_action_name(enum mns_action a)
{
    return (a > MNS_UNKNOWN && a < MNS__ACTION_COUNT) ? action_names[a] : "-";
}

void mns_default_attrs(struct smq_queue_attrs *a)
{
    a->delay_s = 0;
    a->max_msg_size = SMQ_MSG_SIZE_MAX;
    a->retention_s = 345600;
    a->visibility_s = 30;
    a->polling_wait_s = 0;
    a->logging = 0;
    memset(&a->dlq, 0, sizeof a->dlq);
}

void mns_overlay_attrs(struct smq_queue_attrs *base, const struct smq_queue_attrs *req,
                       unsigned present)
{
    if (present & SMQ_ATTR_DELAY)
        base->delay_s = req->delay_s;
    if (present & SMQ_ATTR_MAX_MSG_SIZE)
        base->max_msg_size = req->max_msg_size;
    if (present & SMQ_ATTR_RETENTION)
        base->retention_s = req->retention_s;
    if (present & SMQ_ATTR_VISIBILITY)
        base->visibility_s = req->visibility_s;
    if (present & SMQ_ATTR_POLLING_WAIT)
        base->polling_wait_s = req->polling_wait_s;
    if (present & SMQ_ATTR_LOGGING)
        base->logging = req->logging;
    if (present & SMQ_ATTR_DLQ) {
        memset(&base->dlq, 0, sizeof base->dlq);
        if (req->dlq.enabled) {
            base->dlq.enabled = 1;
            snprintf(base->dlq.target, sizeof base->dlq.target, "%s", req->dlq.target);
            base->dlq.max_receive = req->dlq.max_receive;
        }
    }
}

bool mns_attrs_equal(const struct smq_queue_attrs *a, const struct smq_queue_attrs *b)
{
    return a->delay_s == b->delay_s && a->max_msg_size == b->max_msg_size
        && a->retention_s == b->retention_s && a->visibility_s == b->visibility_s
        && a->polling_wait_s == b->polling_wait_s && a->logging == b->logging
        && a->dlq.enabled == b->dlq.enabled && strcmp(a->dlq.target, b->dlq.target) == 0
        && a->dlq.max_receive == b->dlq.max_receive;
}
