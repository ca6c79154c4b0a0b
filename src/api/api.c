/*
 * api.c — owns the MNS API's front: authentication of every request,
 * the route table that sends each (method, path) to the one handler of its
 * action (docs/protocol.md §1.2, §13.1), the key's grants on what the routed
 * request would touch (§3.7, §13.14), and the table of which renderer
 * answers each kind of operation, and the one unauthenticated answer: the
 * push signing certificate (§13.11).  What each action checks and answers is
 * in api_queue.c, api_message.c and api_topic.c.
 */
#include "smqd/api.h"

#include <stdio.h>
#include <string.h>

#include "api_message.h"
#include "api_queue.h"
#include "api_topic.h"

enum path_kind {
    PATH_NONE, PATH_QUEUES, PATH_QUEUE, PATH_MESSAGES,
    PATH_TOPICS, PATH_TOPIC, PATH_TOPIC_MESSAGES, PATH_SUBSCRIPTIONS, PATH_SUBSCRIPTION
};

/* The actions each route serves are decided by its handler from the query
 * and body (docs/protocol.md §1.2): they are named here so that an action's
 * name leads to its handler. */
static const struct route {
    const char *method;
    enum path_kind path;
    api_prepare_fn prepare;
} routes[] = {
    {"GET", PATH_QUEUES, api_queue_list},                       /* ListQueue */
    {"PUT", PATH_QUEUE, api_queue_put},                         /* CreateQueue,
                                                                 * SetQueueAttributes */
    {"GET", PATH_QUEUE, api_queue_get},                         /* GetQueueAttributes */
    {"DELETE", PATH_QUEUE, api_queue_delete},                   /* DeleteQueue */
    {"POST", PATH_MESSAGES, api_message_send},                  /* SendMessage,
                                                                 * BatchSendMessage */
    {"GET", PATH_MESSAGES, api_message_receive},                /* ReceiveMessage,
                                                                 * BatchReceiveMessage,
                                                                 * PeekMessage,
                                                                 * BatchPeekMessage */
    {"DELETE", PATH_MESSAGES, api_message_delete},              /* DeleteMessage,
                                                                 * BatchDeleteMessage */
    {"PUT", PATH_MESSAGES, api_message_change_visibility},      /* ChangeMessageVisibility */
    {"GET", PATH_TOPICS, api_topic_list},                       /* ListTopic */
    {"PUT", PATH_TOPIC, api_topic_put},                         /* CreateTopic,
                                                                 * SetTopicAttributes */
    {"GET", PATH_TOPIC, api_topic_get},                         /* GetTopicAttributes */
    {"DELETE", PATH_TOPIC, api_topic_delete},                   /* DeleteTopic */
    {"POST", PATH_TOPIC_MESSAGES, api_topic_publish},           /* PublishMessage */
    {"GET", PATH_SUBSCRIPTIONS, api_sub_list},                  /* ListSubscriptionByTopic */
    {"PUT", PATH_SUBSCRIPTION, api_sub_put},                    /* Subscribe,
                                                                 * SetSubscriptionAttributes */
    {"GET", PATH_SUBSCRIPTION, api_sub_get},                    /* GetSubscriptionAttributes */
    {"DELETE", PATH_SUBSCRIPTION, api_sub_delete},              /* Unsubscribe */
};

/* What follows "/topics/{t}" (docs/protocol.md §13.1): nothing, "/messages",
 * "/subscriptions" with or without a trailing '/', or "/subscriptions/{s}"
 * (*sub, *sub_len: the raw {s}).  Anything else, a trailing '/' after a
 * topic, messages or a subscription included, is PATH_NONE. */
static enum path_kind topic_tail(const char *t, size_t n, const char **sub, size_t *sub_len)
{
    static const char subs[] = "/subscriptions";
    const size_t sl = sizeof subs - 1;

    if (n == 0)
        return PATH_TOPIC;
    if (n == 9 && memcmp(t, "/messages", 9) == 0)
        return PATH_TOPIC_MESSAGES;
    if (n < sl || memcmp(t, subs, sl) != 0)
        return PATH_NONE;
    if (n == sl || (n == sl + 1 && t[sl] == '/'))
        return PATH_SUBSCRIPTIONS;
    if (t[sl] != '/')
        return PATH_NONE;
    *sub = t + sl + 1;
    *sub_len = n - sl - 1;
    return memchr(*sub, '/', *sub_len) == NULL ? PATH_SUBSCRIPTION : PATH_NONE;
}

/* Splits what follows "/topics" and copies the decoded topic name into
 * call->op.queue; the subscription's name is checked here and read again
 * from the path by its handler.  The path's shape is judged before the
 * names, and split on the raw '/' only, so "%2F" is part of a name. */
static enum path_kind split_topic_path(const char *rest, size_t len, struct api_call *call,
                                       struct smq_errinfo *ei)
{
    const char *slash, *sub = NULL;
    size_t name_len, sub_len = 0;
    char sub_name[SMQ_TOPIC_NAME_MAX + 1];
    enum path_kind kind;

    if (len == 0 || (len == 1 && rest[0] == '/')) {
        ei->err = 0;
        return PATH_TOPICS;
    }
    if (rest[0] != '/')
        return PATH_NONE;
    rest++, len--;
    slash = memchr(rest, '/', len);
    name_len = slash ? (size_t)(slash - rest) : len;
    kind = topic_tail(rest + name_len, len - name_len, &sub, &sub_len);
    if (kind == PATH_NONE || api_topic_name(rest, name_len, false, call->op.queue, ei) != 0)
        return PATH_NONE;
    if (kind == PATH_SUBSCRIPTION && api_topic_name(sub, sub_len, true, sub_name, ei) != 0)
        return PATH_NONE;
    ei->err = 0;
    return kind;
}

/* Splits "/queues[/NAME[/messages]]" and copies the decoded NAME into
 * call->op.queue, or the topic paths (split_topic_path).  PATH_NONE with ei
 * set when it is none of them. */
static enum path_kind split_path(const char *path, size_t len, struct api_call *call,
                                 struct smq_errinfo *ei)
{
    static const char prefix[] = "/queues", topics[] = "/topics";
    const char *rest = path + sizeof prefix - 1, *slash;
    size_t name_len;

    errors_set(ei, SMQ_E_INVALID_REQUEST_URL, NULL);
    if (len >= sizeof topics - 1 && strncmp(path, topics, sizeof topics - 1) == 0)
        return split_topic_path(path + sizeof topics - 1, len - (sizeof topics - 1), call, ei);
    if (len < sizeof prefix - 1 || strncmp(path, prefix, sizeof prefix - 1) != 0)
        return PATH_NONE;
    len -= sizeof prefix - 1;
    if (len == 0 || (len == 1 && rest[0] == '/')) {
        ei->err = 0;
        return PATH_QUEUES;
    }
    if (rest[0] != '/')
        return PATH_NONE;
    rest++, len--;
    slash = memchr(rest, '/', len);
    name_len = slash ? (size_t)(slash - rest) : len;
    if (slash != NULL && !(len - name_len == 9 && memcmp(slash, "/messages", 9) == 0))
        return PATH_NONE;
    if (query_queue_name(rest, name_len, call->op.queue, ei) != 0)
        return PATH_NONE;
    ei->err = 0;
    return slash ? PATH_MESSAGES : PATH_QUEUE;
}

static int route(const struct api_ctx *ctx, const struct api_request *req,
                 const struct query *query, struct api_call *call, struct smq_errinfo *ei)
{
    const char *q = strchr(req->target, '?');
    size_t path_len = q ? (size_t)(q - req->target) : strlen(req->target);
    enum path_kind path = split_path(req->target, path_len, call, ei);

    if (path == PATH_NONE)
        return ei->err;
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
        if (routes[i].path == path && strcmp(routes[i].method, req->method) == 0)
            return routes[i].prepare(ctx, req, query, call, ei);
    return errors_set(ei, SMQ_E_INVALID_REQUEST_URL, NULL);
}

static int check_content_md5(const struct api_request *req, struct smq_errinfo *ei)
{
    const char *md5 = auth_header_get(req->auth, "Content-MD5");

    /* Node sends the MD5 of "" on empty PUT/DELETE bodies too; both forms of
     * the header are checked against exactly what arrived. */
    if (md5 == NULL || auth_check_content_md5(md5, req->body, req->body_len) == 0)
        return 0;
    return errors_set(ei, SMQ_E_INVALID_DIGEST, NULL);
}

/* A 403 naming the key, the class it lacks and the queue or topic (noun,
 * name; name NULL: any), what it is to the request appended. */
static int deny(const struct auth_key *key, unsigned cls, const char *noun, const char *name,
                const char *what, struct smq_errinfo *ei)
{
    if (name == NULL)
        return errors_set(ei, SMQ_E_ACCESS_DENIED, "The access key \"%s\" has no \"%s\" grant "
                          "on any %s.", key->id, grant_class_name(cls), noun);
    return errors_set(ei, SMQ_E_ACCESS_DENIED, "The access key \"%s\" has no \"%s\" grant on "
                      "%s \"%s\"%s.", key->id, grant_class_name(cls), noun, name, what);
}

static bool is_topic_action(enum mns_action a)
{
    return a >= MNS_CREATE_TOPIC && a <= MNS_LIST_SUBSCRIPTION_BY_TOPIC;
}

/* ListQueue and ListTopic need "list" on some name and then show only
 * those the key may list (run_queue.c, §3.7, §13.14). */
static int authorize_list(const struct auth_key *key, struct api_call *call,
                          struct smq_errinfo *ei)
{
    bool topics = call->action == MNS_LIST_TOPIC;

    if (!grant_gives_any(key->grants, GRANT_LIST))
        return deny(key, GRANT_LIST, topics ? "topic" : "queue", NULL, "", ei);
    if (topics)
        call->op.tlist.visible = key->grants;
    else
        call->op.list.visible = key->grants;
    return 0;
}

/* A topic action's extra grants (§13.14): "send" on the queue a Subscribe
 * delivers to and on a subscription's dead-letter target. */
static int authorize_topic_sends(const struct auth_key *key, struct api_call *call,
                                 struct smq_errinfo *ei)
{
    char queue[SMQ_QUEUE_NAME_MAX + 1];
    const char *what;

    if (!api_topic_send_needed(key, call, queue, &what))
        return 0;
    return deny(key, GRANT_SEND, "queue", queue, what, ei);
}

/*
 * The key's grants against what the routed request would touch: the queue
 * or topic its action names, and for a Create or Set that turns a
 * dead-letter policy on, both ends of the moves the engine will make on the
 * key's behalf: "receive" on the queue they take messages out of (else
 * "manage" alone could divert another team's messages to a queue it reads)
 * and "send" on the target; a topic's extra sends are
 * authorize_topic_sends'.  Runs before the rate limits and the engine, so a
 * denied request costs neither and changes nothing.
 */
static int authorize(const struct auth_key *key, struct api_call *call, struct smq_errinfo *ei)
{
    const struct smq_op_attrs *a = &call->op.attrs;
    unsigned cls = mns_action_class(call->action);
    bool topic = is_topic_action(call->action);

    if (key->grants == NULL)
        return 0;
    if (call->action == MNS_LIST_QUEUE || call->action == MNS_LIST_TOPIC)
        return authorize_list(key, call, ei);
    if (!grant_allows(key->grants, call->op.queue, cls))
        return deny(key, cls, topic ? "topic" : "queue", call->op.queue, "", ei);
    if (topic)
        return authorize_topic_sends(key, call, ei);
    if ((call->action != MNS_CREATE_QUEUE && call->action != MNS_SET_QUEUE_ATTRIBUTES)
        || (a->present & SMQ_ATTR_DLQ) == 0 || !a->values.dlq.enabled)
        return 0;
    if (!grant_allows(key->grants, call->op.queue, GRANT_RECEIVE))
        return deny(key, GRANT_RECEIVE, "queue", call->op.queue, ", which a dead-letter policy "
                    "takes messages from", ei);
    if (!grant_allows(key->grants, a->values.dlq.target, GRANT_SEND))
        return deny(key, GRANT_SEND, "queue", a->values.dlq.target, ", the dead-letter target",
                    ei);
    return 0;
}

int api_prepare(const struct api_ctx *ctx, const struct api_request *req,
                struct api_call *call, struct smq_errinfo *ei)
{
    struct query query;
    const char *q = strchr(req->target, '?');
    const struct auth_keyring *ring = auth_keyring_get(ctx->keys);
    size_t key_index;
    int rc;

    rc = auth_verify(ring, req->auth, clock_epoch_ms(ctx->clock), ctx->max_skew_ms,
                     &key_index, ei);
    if (rc != 0)
        return rc;
    call->access_key_id = ring->keys[key_index].id;
    rc = check_content_md5(req, ei);
    if (rc != 0)
        return rc;
    rc = query_parse(q ? q + 1 : NULL, &query, ei);
    if (rc == 0)
        rc = route(ctx, req, &query, call, ei);
    if (rc == 0)
        rc = authorize(&ring->keys[key_index], call, ei);
    query_free(&query);
    return rc;
}

/* ---- the push signing certificate (§13.11) ---------------------------------------- */

bool api_signing_cert_request(const struct api_request *req)
{
    static const char path[] = API_SIGNING_CERT_PATH;
    size_t n = sizeof path - 1;

    if (strcmp(req->method, "GET") != 0 && strcmp(req->method, "HEAD") != 0)
        return false;
    return strncmp(req->target, path, n) == 0 && (req->target[n] == '\0' || req->target[n] == '?');
}

int api_signing_cert(const struct api_ctx *ctx, struct api_response *resp,
                     struct smq_errinfo *ei)
{
    if (ctx->signing_cert_pem == NULL)
        return errors_set(ei, SMQ_E_SERVICE_UNAVAILABLE,
                          "The push signing certificate is not loaded; retry later.");
    resp->status = 200;
    resp->content_type = API_SIGNING_CERT_TYPE;
    buf_puts(&resp->body, ctx->signing_cert_pem);
    return 0;
}

/* ---- rendering ------------------------------------------------------------------ */

void api_render_error(const struct api_request *req, const struct smq_errinfo *ei,
                      const char *request_id, struct api_response *resp)
{
    const struct smq_error_info *info = errors_info(ei->err);
    char host_id[320];

    snprintf(host_id, sizeof host_id, "%s://%s", req->scheme, req->host);
    resp->status = info->http_status;
    buf_reset(&resp->body);
    xml_error_doc(&resp->body, info->code, errors_message(ei), request_id, host_id);
}

/* The kinds the MNS API never builds (the admin listener's, a push's
 * outcome) answer as they did before they had a renderer. */
static int render_unserved(const struct api_ctx *ctx, const struct api_request *req,
                           struct api_call *call, struct api_response *resp)
{
    (void)ctx, (void)req, (void)call;
    resp->status = 500;
    return 0;
}

/* Which renderer answers each kind: one row per kind, so a new kind is a row. */
static const struct api_kind_row {
    api_render_fn render;
} kinds[] = {
    [SMQ_OP_CREATE_QUEUE] = {api_queue_render_created},
    [SMQ_OP_SET_QUEUE] = {api_queue_render_no_content},
    [SMQ_OP_GET_QUEUE] = {api_queue_render_attrs},
    [SMQ_OP_DELETE_QUEUE] = {api_queue_render_no_content},
    [SMQ_OP_LIST_QUEUES] = {api_queue_render_list},
    [SMQ_OP_SEND] = {api_message_render_sent},
    [SMQ_OP_RECEIVE] = {api_message_render_received},
    [SMQ_OP_PEEK] = {api_message_render_peeked},
    [SMQ_OP_DELETE_MSG] = {api_message_render_deleted},
    [SMQ_OP_CHANGE_VISIBILITY] = {api_message_render_visibility},
    [SMQ_OP_PURGE] = {render_unserved},
    [SMQ_OP_REDRIVE] = {render_unserved},
    [SMQ_OP_STATS] = {render_unserved},
    [SMQ_OP_CREATE_TOPIC] = {api_topic_render_created},
    [SMQ_OP_SET_TOPIC] = {api_queue_render_no_content},
    [SMQ_OP_GET_TOPIC] = {api_topic_render_attrs},
    [SMQ_OP_DELETE_TOPIC] = {api_queue_render_no_content},
    [SMQ_OP_LIST_TOPICS] = {api_topic_render_list},
    [SMQ_OP_PUBLISH] = {api_topic_render_published},
    [SMQ_OP_SUBSCRIBE] = {api_sub_render_created},
    [SMQ_OP_SET_SUBSCRIPTION] = {api_queue_render_no_content},
    [SMQ_OP_GET_SUBSCRIPTION] = {api_sub_render_attrs},
    [SMQ_OP_UNSUBSCRIBE] = {api_queue_render_no_content},
    [SMQ_OP_LIST_SUBSCRIPTIONS] = {api_sub_render_list},
    [SMQ_OP_PUSH_RESULT] = {render_unserved},
};

/* A kind added without its row fails here; a row left out in the middle
 * fails test_api (api_has_kind). */
_Static_assert(sizeof kinds / sizeof kinds[0] == SMQ_OP_KIND_COUNT,
               "every operation kind needs its row in api.c's table");

bool api_has_kind(enum smq_op_kind kind)
{
    return (unsigned)kind < SMQ_OP_KIND_COUNT && kinds[kind].render != NULL;
}

void api_render(const struct api_ctx *ctx, const struct api_request *req,
                struct api_call *call, const char *request_id, struct api_response *resp)
{
    const struct smq_op *op = &call->op;
    bool batch_delete_partial = call->action == MNS_BATCH_DELETE_MESSAGE && op->result.err == 0;
    api_render_fn render = api_has_kind(op->kind) ? kinds[op->kind].render : render_unserved;

    /* BatchDeleteMessage reports per-handle failures in its own document. */
    if (op->result.err != 0 && !batch_delete_partial) {
        api_render_error(req, &op->result, request_id, resp);
        return;
    }
    buf_reset(&resp->body);
    /* Only the received messages' MD5s can fail.  A receive is not undone
     * by this: its messages come back when their visibility timeout ends
     * (at-least-once). */
    if (render(ctx, req, call, resp) != 0) {
        errors_set(&call->op.result, SMQ_E_INTERNAL,
                   "A message body's MD5 could not be computed.");
        api_render_error(req, &call->op.result, request_id, resp);
    }
}
