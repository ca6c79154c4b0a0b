/*
 * api_topic.c — owns the topic actions of the MNS API (api_topic.h):
 * CreateTopic, SetTopicAttributes, GetTopicAttributes, DeleteTopic,
 * ListTopic, Subscribe, SetSubscriptionAttributes, GetSubscriptionAttributes,
 * Unsubscribe and ListSubscriptionByTopic — their names, request checks,
 * extra grants and responses (docs/protocol.md §13.1–§13.7, §13.13,
 * §13.14) — and PublishMessage's document and answer (§13.5).
 */
#include "api_topic.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "api_message.h"
#include "api_queue.h"
#include "smqd/crypto.h"
#include "smqd/notify.h"

/* ---- names (§13.2) ------------------------------------------------------------------ */

int api_topic_name(const char *raw, size_t len, bool subscription,
                   char out[SMQ_TOPIC_NAME_MAX + 1], struct smq_errinfo *ei)
{
    const char *what = subscription ? "subscription" : "topic";
    int length_err = subscription ? SMQ_E_SUBSCRIPTION_NAME_LENGTH : SMQ_E_TOPIC_NAME_LENGTH;
    int invalid_err = subscription ? SMQ_E_SUBSCRIPTION_NAME_INVALID : SMQ_E_TOPIC_NAME_INVALID;
    /* Every character of a name may arrive as a %XX escape. */
    char name[3 * SMQ_TOPIC_NAME_MAX + 1];

    if (len >= sizeof name)
        return errors_set(ei, length_err, NULL);
    if (query_path_segment(raw, len, name, sizeof name) != 0)
        return errors_set(ei, invalid_err, "The %s name has an invalid %%-escape.", what);
    switch (qname_check(name, strlen(name))) {
    case QNAME_OK:
        memcpy(out, name, strlen(name) + 1);
        return 0;
    case QNAME_LENGTH:
        return errors_set(ei, length_err, NULL);
    case QNAME_FIRST_CHAR:
        return errors_set(ei, invalid_err, "The %s name must start with a letter or a digit.",
                          what);
    default:
        return errors_set(ei, invalid_err, "The %s name may contain only letters, digits and "
                          "'-'.", what);
    }
}

/* The subscription's name: the last segment of the path api.c routed (and
 * checked) to a subscription's handler. */
static int path_sub_name(const struct api_request *req, char out[SMQ_TOPIC_NAME_MAX + 1],
                         struct smq_errinfo *ei)
{
    const char *q = strchr(req->target, '?');
    size_t len = q ? (size_t)(q - req->target) : strlen(req->target);
    size_t start = len;

    while (start > 0 && req->target[start - 1] != '/')
        start--;
    return api_topic_name(req->target + start, len - start, true, out, ei);
}

static bool meta_override(const struct query *query)
{
    const char *meta = query_get(query, "metaoverride");

    return meta != NULL && strcasecmp(meta, "true") == 0;
}

/* ---- topics (§13.4) ------------------------------------------------------------------ */

static int take_topic_attrs(const struct xml_topic_attrs *x, struct smq_op_topic *t,
                            struct smq_errinfo *ei)
{
    if (x->max_msg_size.present) {
        if (x->max_msg_size.value < SMQ_MSG_SIZE_MIN || x->max_msg_size.value > SMQ_MSG_SIZE_MAX)
            return errors_set(ei, SMQ_E_INVALID_ARGUMENT, "The value of MaximumMessageSize "
                              "should between %d and %d bytes.", SMQ_MSG_SIZE_MIN,
                              SMQ_MSG_SIZE_MAX);
        t->values.max_msg_size = x->max_msg_size.value;
        t->present |= SMQ_TATTR_MAX_MSG_SIZE;
    }
    if (x->logging.present) {
        t->values.logging = x->logging.value != 0;
        t->present |= SMQ_TATTR_LOGGING;
    }
    return 0;
}

int api_topic_put(const struct api_ctx *ctx, const struct api_request *req,
                  const struct query *query, struct api_call *call, struct smq_errinfo *ei)
{
    bool set = meta_override(query);
    struct xml_topic_attrs x;
    int rc;

    (void)ctx;
    call->action = set ? MNS_SET_TOPIC_ATTRIBUTES : MNS_CREATE_TOPIC;
    op_set_kind(&call->op, set ? SMQ_OP_SET_TOPIC : SMQ_OP_CREATE_TOPIC);
    memset(&x, 0, sizeof x);
    /* An absent body creates with the defaults (§13.4.1); a present one must be <Topic>. */
    if (req->body_len > 0) {
        rc = xml_parse_topic_attrs(req->body, req->body_len, &x, ei);
        if (rc != 0)
            return rc;
    }
    return take_topic_attrs(&x, &call->op.topic, ei);
}

int api_topic_get(const struct api_ctx *ctx, const struct api_request *req,
                  const struct query *query, struct api_call *call, struct smq_errinfo *ei)
{
    (void)ctx, (void)req, (void)query, (void)ei;
    call->action = MNS_GET_TOPIC_ATTRIBUTES;
    op_set_kind(&call->op, SMQ_OP_GET_TOPIC);
    return 0;
}

int api_topic_delete(const struct api_ctx *ctx, const struct api_request *req,
                     const struct query *query, struct api_call *call, struct smq_errinfo *ei)
{
    (void)ctx, (void)req, (void)query, (void)ei;
    call->action = MNS_DELETE_TOPIC;
    op_set_kind(&call->op, SMQ_OP_DELETE_TOPIC);
    return 0;
}

int api_topic_list(const struct api_ctx *ctx, const struct api_request *req,
                   const struct query *query, struct api_call *call, struct smq_errinfo *ei)
{
    struct smq_op_tlist *l = &call->op.tlist;

    (void)ctx, (void)query;
    call->action = MNS_LIST_TOPIC;
    op_set_kind(&call->op, SMQ_OP_LIST_TOPICS);
    return api_list_paging(req, "topic", l->prefix, l->marker, &l->ret_number, ei);
}

/* ---- publishing (§13.5) ---------------------------------------------------------------- */

/* Unicode code points in UTF-8 text (the parser gives valid UTF-8): the
 * bytes that do not continue a character.  MessageTag and FilterTag are
 * limited in these, as Python counts them (§13.2). */
static size_t code_points(const char *s)
{
    size_t n = 0;

    for (; *s != '\0'; s++)
        n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

/* The limits a publish can be judged by without its topic; the topic's own
 * MaximumMessageSize, which may be lower, is the engine's (§13.5). */
static int take_publish(const struct xml_publish *x, struct smq_op_publish *p,
                        struct smq_errinfo *ei)
{
    /* Java sends <MessageBody></MessageBody> for a null body. */
    if (!x->body_present || x->body_len == 0)
        return errors_set(ei, SMQ_E_INVALID_ARGUMENT, "The MessageBody is missing or empty.");
    if (x->body_len > SMQ_MSG_SIZE_MAX)
        return errors_set(ei, SMQ_E_INVALID_ARGUMENT, "The MessageBody should have at most %d "
                          "bytes.", SMQ_MSG_SIZE_MAX);
    if (code_points(x->tag) > SMQ_TAG_MAX_CHARS)
        return errors_set(ei, SMQ_E_INVALID_ARGUMENT, "The value of MessageTag should have at "
                          "most %d characters.", SMQ_TAG_MAX_CHARS);
    /* Once, here, as for a SendMessage: the answer carries it. */
    if (crypto_md5(x->body, x->body_len, p->body_md5) != 0)
        return errors_set(ei, SMQ_E_INTERNAL, "The MD5 of the message body could not be "
                          "computed.");
    p->body = x->body;
    p->body_len = x->body_len;
    snprintf(p->tag, sizeof p->tag, "%s", x->tag);
    return 0;
}

int api_topic_publish(const struct api_ctx *ctx, const struct api_request *req,
                      const struct query *query, struct api_call *call, struct smq_errinfo *ei)
{
    int rc;

    (void)ctx, (void)query;
    call->action = MNS_PUBLISH_MESSAGE;
    op_set_kind(&call->op, SMQ_OP_PUBLISH);
    /* An empty request body is MalformedXML (the parser's rule for len 0). */
    rc = xml_parse_publish(req->body, req->body_len, &call->publish, ei);
    if (rc == 0)
        rc = take_publish(&call->publish, &call->op.publish, ei);
    return rc;
}

/* ---- subscriptions (§13.6, §13.13) --------------------------------------------------- */

static int take_filter_tag(const struct xml_sub_attrs *x, struct smq_op_sub *s,
                           struct smq_errinfo *ei)
{
    if (!x->filter_tag_present)
        return 0;
    if (code_points(x->filter_tag) > SMQ_TAG_MAX_CHARS)
        return errors_set(ei, SMQ_E_INVALID_ARGUMENT, "The value of FilterTag should have at "
                          "most %d characters.", SMQ_TAG_MAX_CHARS);
    snprintf(s->values.filter_tag, sizeof s->values.filter_tag, "%s", x->filter_tag);
    s->present |= SMQ_SATTR_FILTER_TAG;
    return 0;
}

/* NotifyStrategy and NotifyContentFormat: trimmed by the parser, any case. */
static int take_words(const struct xml_sub_attrs *x, struct smq_op_sub *s,
                      struct smq_errinfo *ei)
{
    if (x->strategy_present) {
        if (strcasecmp(x->strategy, "BACKOFF_RETRY") == 0)
            s->values.strategy = SMQ_NOTIFY_BACKOFF_RETRY;
        else if (strcasecmp(x->strategy, "EXPONENTIAL_DECAY_RETRY") == 0)
            s->values.strategy = SMQ_NOTIFY_EXPONENTIAL_DECAY_RETRY;
        else
            return errors_set(ei, SMQ_E_INVALID_ARGUMENT, "The value of NotifyStrategy should "
                              "be BACKOFF_RETRY or EXPONENTIAL_DECAY_RETRY.");
        s->present |= SMQ_SATTR_STRATEGY;
    }
    if (x->format_present) {
        if (strcasecmp(x->format, "XML") == 0)
            s->values.format = SMQ_NOTIFY_XML;
        else if (strcasecmp(x->format, "JSON") == 0)
            s->values.format = SMQ_NOTIFY_JSON;
        else if (strcasecmp(x->format, "SIMPLIFIED") == 0)
            s->values.format = SMQ_NOTIFY_SIMPLIFIED;
        else
            return errors_set(ei, SMQ_E_INVALID_ARGUMENT, "The value of NotifyContentFormat "
                              "should be XML, JSON or SIMPLIFIED.");
        s->present |= SMQ_SATTR_FORMAT;
    }
    return 0;
}

/*
 * The dead-letter policy is set as a whole (§13.13): only Enabled=false
 * clears it; otherwise it needs a valid queue name as its target.  That the
 * queue exists is the engine's to check.
 */
static int take_sub_dlq(const struct xml_sub_attrs *x, struct smq_op_sub *s,
                        struct smq_errinfo *ei)
{
    bool enabled = !x->dlq_enabled.present || x->dlq_enabled.value != 0;
    enum qname_problem p;

    if (!x->dlq_present)
        return 0;
    memset(&s->values.dlq, 0, sizeof s->values.dlq);
    s->present |= SMQ_SATTR_DLQ;
    if (!enabled)
        return 0;
    if (!x->dlq_target_present)
        return errors_set(ei, SMQ_E_INVALID_ARGUMENT, "The dead-letter policy needs a target "
                          "queue (DlqTargetQueue, or DeadLetterTargetQueue in a DlqPolicy).");
    p = qname_check(x->dlq_target, strlen(x->dlq_target));
    if (p != QNAME_OK)
        return errors_set(ei, SMQ_E_INVALID_ARGUMENT, "The dead-letter target is not a valid "
                          "queue name: %s", qname_problem_text(p));
    s->values.dlq.enabled = 1;
    snprintf(s->values.dlq.target, sizeof s->values.dlq.target, "%s", x->dlq_target);
    return 0;
}

/* The Endpoint: required by Subscribe (EndpointInvalid when missing or bad);
 * in a Set it may only repeat the stored one, which is always valid, so a
 * bad one there is a change refused as such (§13.6.2). */
static int take_endpoint(const struct xml_sub_attrs *x, bool set, struct smq_op_sub *s,
                         struct smq_errinfo *ei)
{
    struct notify_endpoint ep;
    int rc;

    if (set && !x->endpoint_present)
        return 0;
    if (x->endpoint_too_long)
        rc = errors_set(ei, SMQ_E_ENDPOINT_INVALID, "The endpoint is longer than %d bytes.",
                        SMQ_ENDPOINT_MAX);
    else
        rc = notify_endpoint_parse_err(x->endpoint, strlen(x->endpoint), &ep,
                                       s->values.endpoint, ei);
    if (rc != 0)
        return set ? errors_set(ei, SMQ_E_INVALID_ARGUMENT, "The Endpoint of a subscription "
                                "cannot be changed: unsubscribe and subscribe again.")
                   : rc;
    s->present |= SMQ_SATTR_ENDPOINT;
    return 0;
}

int api_sub_put(const struct api_ctx *ctx, const struct api_request *req,
                const struct query *query, struct api_call *call, struct smq_errinfo *ei)
{
    bool set = meta_override(query);
    struct smq_op_sub *s = &call->op.sub;
    struct xml_sub_attrs x;
    int rc;

    (void)ctx;
    call->action = set ? MNS_SET_SUBSCRIPTION_ATTRIBUTES : MNS_SUBSCRIBE;
    op_set_kind(&call->op, set ? SMQ_OP_SET_SUBSCRIPTION : SMQ_OP_SUBSCRIBE);
    rc = path_sub_name(req, s->name, ei);
    /* A missing body is MalformedXML here (§13.6.1): Endpoint is required. */
    if (rc == 0)
        rc = xml_parse_sub_attrs(req->body, req->body_len, &x, ei);
    if (rc == 0)
        rc = take_endpoint(&x, set, s, ei);
    if (rc == 0)
        rc = take_filter_tag(&x, s, ei);
    if (rc == 0)
        rc = take_words(&x, s, ei);
    if (rc == 0)
        rc = take_sub_dlq(&x, s, ei);
    return rc;
}

int api_sub_get(const struct api_ctx *ctx, const struct api_request *req,
                const struct query *query, struct api_call *call, struct smq_errinfo *ei)
{
    (void)ctx, (void)query;
    call->action = MNS_GET_SUBSCRIPTION_ATTRIBUTES;
    op_set_kind(&call->op, SMQ_OP_GET_SUBSCRIPTION);
    return path_sub_name(req, call->op.sub.name, ei);
}

int api_sub_delete(const struct api_ctx *ctx, const struct api_request *req,
                   const struct query *query, struct api_call *call, struct smq_errinfo *ei)
{
    (void)ctx, (void)query;
    call->action = MNS_UNSUBSCRIBE;
    op_set_kind(&call->op, SMQ_OP_UNSUBSCRIBE);
    return path_sub_name(req, call->op.sub.name, ei);
}

int api_sub_list(const struct api_ctx *ctx, const struct api_request *req,
                 const struct query *query, struct api_call *call, struct smq_errinfo *ei)
{
    struct smq_op_slist *l = &call->op.slist;

    (void)ctx, (void)query;
    call->action = MNS_LIST_SUBSCRIPTION_BY_TOPIC;
    op_set_kind(&call->op, SMQ_OP_LIST_SUBSCRIPTIONS);
    return api_list_paging(req, "subscription", l->prefix, l->marker, &l->ret_number, ei);
}

/* ---- grants (§13.14) ----------------------------------------------------------------- */

bool api_topic_send_needed(const struct auth_key *key, const struct api_call *call,
                           char queue[SMQ_QUEUE_NAME_MAX + 1], const char **what)
{
    const struct smq_op_sub *s = &call->op.sub;
    struct notify_endpoint ep;
    char trimmed[SMQ_ENDPOINT_MAX + 1];

    /* A queue subscription is a standing send into that queue; the endpoint
     * was checked when the request was decided, so it parses again. */
    if (call->action == MNS_SUBSCRIBE
        && notify_endpoint_parse(s->values.endpoint, strlen(s->values.endpoint), &ep, trimmed) == 0
        && ep.kind == NOTIFY_EP_QUEUE && !grant_allows(key->grants, ep.queue, GRANT_SEND)) {
        snprintf(queue, SMQ_QUEUE_NAME_MAX + 1, "%s", ep.queue);
        *what = ", which the subscription's endpoint delivers to";
        return true;
    }
    if ((call->action == MNS_SUBSCRIBE || call->action == MNS_SET_SUBSCRIPTION_ATTRIBUTES)
        && (s->present & SMQ_SATTR_DLQ) && s->values.dlq.enabled
        && !grant_allows(key->grants, s->values.dlq.target, GRANT_SEND)) {
        snprintf(queue, SMQ_QUEUE_NAME_MAX + 1, "%s", s->values.dlq.target);
        *what = ", the subscription's dead-letter target";
        return true;
    }
    return false;
}

/* ---- responses ------------------------------------------------------------------------ */

static void topic_url(const struct api_request *req, const char *topic, char *out, size_t size)
{
    snprintf(out, size, "%s://%s/topics/%s", req->scheme, req->host, topic);
}

static void sub_url(const struct api_request *req, const char *topic, const char *sub,
                    char *out, size_t size)
{
    snprintf(out, size, "%s://%s/topics/%s/subscriptions/%s", req->scheme, req->host, topic,
             sub);
}

/* The seven elements of GetTopicAttributes, in their order (§13.3 item 2, §13.4.3). */
static void topic_elems(struct smq_buf *b, const struct smq_topic_info *i)
{
    xml_elem_str(b, "TopicName", i->name);
    xml_elem_i64(b, "CreateTime", i->create_s);
    xml_elem_i64(b, "LastModifyTime", i->modify_s);
    xml_elem_i64(b, "MaximumMessageSize", i->attrs.max_msg_size);
    xml_elem_i64(b, "MessageRetentionPeriod", SMQ_TOPIC_RETENTION_S);
    xml_elem_i64(b, "MessageCount", (int64_t)i->message_count);
    xml_elem_bool(b, "LoggingEnabled", i->attrs.logging != 0);
}

static const char *account_id(const struct api_ctx *ctx)
{
    return ctx->account_id != NULL ? ctx->account_id : NOTIFY_ACCOUNT_ID_DEFAULT;
}

/* The elements of GetSubscriptionAttributes, in their order (§13.6.3): the
 * optional ones left out rather than empty (§13.3 item 1), the dead-letter
 * ones flat and last (§13.13). */
static void sub_elems(const struct api_ctx *ctx, struct smq_buf *b, const char *topic,
                      const struct smq_sub_info *i)
{
    xml_elem_str(b, "TopicOwner", account_id(ctx));
    xml_elem_str(b, "TopicName", topic);
    xml_elem_str(b, "SubscriptionName", i->name);
    xml_elem_str(b, "Subscriber", account_id(ctx));
    xml_elem_str(b, "Endpoint", i->attrs.endpoint);
    if (i->attrs.filter_tag[0] != '\0')
        xml_elem_str(b, "FilterTag", i->attrs.filter_tag);
    xml_elem_str(b, "NotifyStrategy", mns_notify_strategy_name(i->attrs.strategy));
    xml_elem_str(b, "NotifyContentFormat", mns_notify_format_name(i->attrs.format));
    xml_elem_i64(b, "CreateTime", i->create_s);
    xml_elem_i64(b, "LastModifyTime", i->modify_s);
    if (i->attrs.dlq.enabled) {
        xml_elem_bool(b, "DlqEnabled", true);
        xml_elem_str(b, "DlqTargetQueue", i->attrs.dlq.target);
    }
}

/* The topic a subscription belongs to: its own record, else the path's. */
static const char *sub_topic(const struct smq_op *op, const struct smq_sub_info *i)
{
    return i->topic[0] != '\0' ? i->topic : op->queue;
}

/* ---- the renderers of api.c's table of kinds ---------------------------------------------- */

/* CreateTopic: 201 when it made the topic, 204 when it was there as asked;
 * Location on both (§13.3 item 5). */
int api_topic_render_created(const struct api_ctx *ctx, const struct api_request *req,
                             struct api_call *call, struct api_response *resp)
{
    (void)ctx;
    resp->status = call->op.topic.created ? 201 : 204;
    topic_url(req, call->op.queue, resp->location, sizeof resp->location);
    return 0;
}

int api_topic_render_attrs(const struct api_ctx *ctx, const struct api_request *req,
                           struct api_call *call, struct api_response *resp)
{
    (void)ctx, (void)req;
    resp->status = 200;
    xml_begin(&resp->body, "Topic");
    topic_elems(&resp->body, &call->op.topic.info);
    xml_close(&resp->body, "Topic");
    return 0;
}

int api_topic_render_list(const struct api_ctx *ctx, const struct api_request *req,
                          struct api_call *call, struct api_response *resp)
{
    const struct smq_op_tlist *l = &call->op.tlist;
    struct smq_buf *b = &resp->body;
    bool meta = api_list_with_meta(req);
    char url[512];

    (void)ctx;
    resp->status = 200;
    xml_begin(b, "Topics");
    for (size_t i = 0; i < l->n_topics; i++) {
        xml_open(b, "Topic");
        topic_url(req, l->topics[i].name, url, sizeof url);
        xml_elem_str(b, "TopicURL", url);
        if (meta)
            topic_elems(b, &l->topics[i]);
        xml_close(b, "Topic");
    }
    if (l->next_marker[0] != '\0')
        xml_elem_str(b, "NextMarker", l->next_marker);
    xml_close(b, "Topics");
    return 0;
}

/* PublishMessage: 201 with the message's id and its body's MD5, as a
 * SendMessage answers them, and never a ReceiptHandle (§13.5). */
int api_topic_render_published(const struct api_ctx *ctx, const struct api_request *req,
                               struct api_call *call, struct api_response *resp)
{
    (void)req;
    resp->status = 201;
    xml_begin(&resp->body, "Message");
    api_message_id_elems(ctx, call->op.publish.seq, call->op.publish.body_md5, &resp->body);
    xml_close(&resp->body, "Message");
    return 0;
}

/* Subscribe: as CreateTopic (§13.6.1). */
int api_sub_render_created(const struct api_ctx *ctx, const struct api_request *req,
                           struct api_call *call, struct api_response *resp)
{
    (void)ctx;
    resp->status = call->op.sub.created ? 201 : 204;
    sub_url(req, call->op.queue, call->op.sub.name, resp->location, sizeof resp->location);
    return 0;
}

int api_sub_render_attrs(const struct api_ctx *ctx, const struct api_request *req,
                         struct api_call *call, struct api_response *resp)
{
    const struct smq_sub_info *i = &call->op.sub.info;

    (void)req;
    resp->status = 200;
    xml_begin(&resp->body, "Subscription");
    sub_elems(ctx, &resp->body, sub_topic(&call->op, i), i);
    xml_close(&resp->body, "Subscription");
    return 0;
}

int api_sub_render_list(const struct api_ctx *ctx, const struct api_request *req,
                        struct api_call *call, struct api_response *resp)
{
    const struct smq_op_slist *l = &call->op.slist;
    struct smq_buf *b = &resp->body;
    bool meta = api_list_with_meta(req);
    char url[512];

    resp->status = 200;
    xml_begin(b, "Subscriptions");
    for (size_t i = 0; i < l->n_subs; i++) {
        xml_open(b, "Subscription");
        sub_url(req, call->op.queue, l->subs[i].name, url, sizeof url);
        xml_elem_str(b, "SubscriptionURL", url);
        if (meta)
            sub_elems(ctx, b, sub_topic(&call->op, &l->subs[i]), &l->subs[i]);
        xml_close(b, "Subscription");
    }
    if (l->next_marker[0] != '\0')
        xml_elem_str(b, "NextMarker", l->next_marker);
    xml_close(b, "Subscriptions");
    return 0;
}
