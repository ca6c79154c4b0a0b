/*
 * mns.c — owns the MNS vocabulary's few behaviours (mns.h): action names
 * and classes, a queue's default attributes, overlay and comparison, and
 * a topic's defaults and the names of the notification strategies and formats.
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
    [MNS_CREATE_TOPIC] = "CreateTopic",
    [MNS_SET_TOPIC_ATTRIBUTES] = "SetTopicAttributes",
    [MNS_GET_TOPIC_ATTRIBUTES] = "GetTopicAttributes",
    [MNS_DELETE_TOPIC] = "DeleteTopic",
    [MNS_LIST_TOPIC] = "ListTopic",
    [MNS_PUBLISH_MESSAGE] = "PublishMessage",
    [MNS_SUBSCRIBE] = "Subscribe",
    [MNS_SET_SUBSCRIPTION_ATTRIBUTES] = "SetSubscriptionAttributes",
    [MNS_GET_SUBSCRIPTION_ATTRIBUTES] = "GetSubscriptionAttributes",
    [MNS_UNSUBSCRIBE] = "Unsubscribe",
    [MNS_LIST_SUBSCRIPTION_BY_TOPIC] = "ListSubscriptionByTopic",
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
    /* §13.14: on the topic's name */
    [MNS_CREATE_TOPIC] = GRANT_MANAGE,
    [MNS_SET_TOPIC_ATTRIBUTES] = GRANT_MANAGE,
    [MNS_GET_TOPIC_ATTRIBUTES] = GRANT_LIST,
    [MNS_DELETE_TOPIC] = GRANT_MANAGE,
    [MNS_LIST_TOPIC] = GRANT_LIST,
    [MNS_PUBLISH_MESSAGE] = GRANT_SEND,
    [MNS_SUBSCRIBE] = GRANT_MANAGE,
    [MNS_SET_SUBSCRIPTION_ATTRIBUTES] = GRANT_MANAGE,
    [MNS_GET_SUBSCRIPTION_ATTRIBUTES] = GRANT_LIST,
    [MNS_UNSUBSCRIBE] = GRANT_MANAGE,
    [MNS_LIST_SUBSCRIPTION_BY_TOPIC] = GRANT_LIST,
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

void mns_default_topic_attrs(struct smq_topic_attrs *a)
{
    a->max_msg_size = SMQ_MSG_SIZE_MAX;
    a->logging = 0;
}

const char *mns_notify_strategy_name(enum smq_notify_strategy s)
{
    return s == SMQ_NOTIFY_EXPONENTIAL_DECAY_RETRY ? "EXPONENTIAL_DECAY_RETRY" : "BACKOFF_RETRY";
}

const char *mns_notify_format_name(enum smq_notify_format f)
{
    switch (f) {
    case SMQ_NOTIFY_JSON:
        return "JSON";
    case SMQ_NOTIFY_SIMPLIFIED:
        return "SIMPLIFIED";
    default:
        return "XML";
    }
}

enum smq_notify_strategy mns_notify_strategy_of(int v)
{
    return v == SMQ_NOTIFY_EXPONENTIAL_DECAY_RETRY ? SMQ_NOTIFY_EXPONENTIAL_DECAY_RETRY
                                                    : SMQ_NOTIFY_BACKOFF_RETRY;
}

enum smq_notify_format mns_notify_format_of(int v)
{
    return v == SMQ_NOTIFY_JSON         ? SMQ_NOTIFY_JSON
           : v == SMQ_NOTIFY_SIMPLIFIED ? SMQ_NOTIFY_SIMPLIFIED
                                        : SMQ_NOTIFY_XML;
}
