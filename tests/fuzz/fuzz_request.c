/*
 * fuzz_request.c — libFuzzer target for the whole decision path of one HTTP
 * request: api_prepare (authentication, Content-MD5, routing, query, XML
 * body, range checks, receipt handles) and the rendering of its answer.
 *
 * The input is a request in the format of fuzz_common.h.  Any Authorization
 * header in it is replaced by a correct signature over whatever the input
 * yields (fixed keyring, fake clock at the docs/protocol.md §3.4 Date), so the fuzzer gets
 * past authentication into routing and XML; seeds carry Date and
 * x-mns-version.  Checked:
 *   - a refused request has a defined code, ei filled, never an
 *     authorization or signature error (it is signed), never an outcome
 *     only the engine can know (QueueNotExist, MessageNotExist,
 *     TopicNotExist, ...); its <Error> document is well-formed with the
 *     table's HTTP status;
 *   - an accepted request has an action matching op.kind, a valid queue
 *     or topic name, and inputs inside the fixed ranges of docs/protocol.md
 *     §5/§7/§13.2 (batch sizes, delays, priorities, waits, visibility,
 *     attributes, ret-number, a subscription's endpoint, filter tag, strategy,
 *     format and dead-letter target; a publish's body of 1..65536 bytes and
 *     tag of at most 16 characters); each body's MD5 is the MD5 of the
 *     parsed body; each batch handle that decoded re-encodes to
 *     its text, the others are ReceiptHandleError;
 *   - the op is then finished as the engine would (success with plausible
 *     outputs, or QueueNotExist on odd-sized inputs) and api_render must
 *     give a well-formed document with the right root and status.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "smqd/api.h"
#include "smqd/clock.h"
#include "smqd/crypto.h"
#include "smqd/errors.h"
#include "smqd/notify.h"
#include "smqd/xml.h"

#define BATCH_SEND_MAX_BYTES 65536      /* api_message.c */

static struct smq_fake_clock fake;
static struct auth_keyring_slot slot;
static struct api_ctx ctx;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    xml_global_init();
    clock_fake_init(&fake, 1000, FUZZ_NOW_MS);
    auth_keyring_set(&slot, fuzz_keyring());
    ctx.keys = &slot;
    ctx.handle_keys = fuzz_handle_keys();
    ctx.clock = &fake.clock;
    ctx.max_skew_ms = AUTH_DEFAULT_MAX_SKEW_MS;
    return 0;
}

static enum smq_op_kind kind_of(enum mns_action a)
{
    switch (a) {
    case MNS_CREATE_QUEUE: return SMQ_OP_CREATE_QUEUE;
    case MNS_SET_QUEUE_ATTRIBUTES: return SMQ_OP_SET_QUEUE;
    case MNS_GET_QUEUE_ATTRIBUTES: return SMQ_OP_GET_QUEUE;
    case MNS_DELETE_QUEUE: return SMQ_OP_DELETE_QUEUE;
    case MNS_LIST_QUEUE: return SMQ_OP_LIST_QUEUES;
    case MNS_SEND_MESSAGE:
    case MNS_BATCH_SEND_MESSAGE: return SMQ_OP_SEND;
    case MNS_RECEIVE_MESSAGE:
    case MNS_BATCH_RECEIVE_MESSAGE: return SMQ_OP_RECEIVE;
    case MNS_PEEK_MESSAGE:
    case MNS_BATCH_PEEK_MESSAGE: return SMQ_OP_PEEK;
    case MNS_DELETE_MESSAGE:
    case MNS_BATCH_DELETE_MESSAGE: return SMQ_OP_DELETE_MSG;
    case MNS_CHANGE_MESSAGE_VISIBILITY: return SMQ_OP_CHANGE_VISIBILITY;
    case MNS_CREATE_TOPIC: return SMQ_OP_CREATE_TOPIC;
    case MNS_SET_TOPIC_ATTRIBUTES: return SMQ_OP_SET_TOPIC;
    case MNS_GET_TOPIC_ATTRIBUTES: return SMQ_OP_GET_TOPIC;
    case MNS_DELETE_TOPIC: return SMQ_OP_DELETE_TOPIC;
    case MNS_LIST_TOPIC: return SMQ_OP_LIST_TOPICS;
    case MNS_SUBSCRIBE: return SMQ_OP_SUBSCRIBE;
    case MNS_SET_SUBSCRIPTION_ATTRIBUTES: return SMQ_OP_SET_SUBSCRIPTION;
    case MNS_GET_SUBSCRIPTION_ATTRIBUTES: return SMQ_OP_GET_SUBSCRIPTION;
    case MNS_UNSUBSCRIBE: return SMQ_OP_UNSUBSCRIBE;
    case MNS_LIST_SUBSCRIPTION_BY_TOPIC: return SMQ_OP_LIST_SUBSCRIPTIONS;
    case MNS_PUBLISH_MESSAGE: return SMQ_OP_PUBLISH;
    default: fuzz_fail(__FILE__, __LINE__, "an accepted request without an action");
    }
    return SMQ_OP_GET_QUEUE;
}

static bool is_batch(enum mns_action a)
{
    return a == MNS_BATCH_SEND_MESSAGE || a == MNS_BATCH_RECEIVE_MESSAGE
           || a == MNS_BATCH_PEEK_MESSAGE || a == MNS_BATCH_DELETE_MESSAGE;
}

/* ---- refused requests ------------------------------------------------------ */

static void check_refused(const struct api_request *req, int rc, const struct smq_errinfo *ei)
{
    struct api_response resp;

    FUZZ_CHECK(rc < 0 && rc > -SMQ_E__COUNT);
    FUZZ_CHECK(ei->err == rc);
    FUZZ_CHECK(rc != SMQ_E_MISSING_AUTHORIZATION && rc != SMQ_E_INVALID_AUTHORIZATION
               && rc != SMQ_E_INVALID_ACCESS_KEY_ID && rc != SMQ_E_SIGNATURE_MISMATCH);
    FUZZ_CHECK(rc != SMQ_E_QUEUE_NOT_EXIST && rc != SMQ_E_QUEUE_ALREADY_EXIST
               && rc != SMQ_E_MESSAGE_NOT_EXIST && rc != SMQ_E_TOO_MANY_QUEUES);
    FUZZ_CHECK(rc != SMQ_E_TOPIC_NOT_EXIST && rc != SMQ_E_TOPIC_ALREADY_EXIST
               && rc != SMQ_E_TOO_MANY_TOPICS && rc != SMQ_E_SUBSCRIPTION_NOT_EXIST
               && rc != SMQ_E_SUBSCRIPTION_ALREADY_EXIST && rc != SMQ_E_TOO_MANY_SUBSCRIPTIONS);

    memset(&resp, 0, sizeof resp);
    buf_init(&resp.body);
    api_render_error(req, ei, "512B2A634403E52B1956133E", &resp);
    FUZZ_CHECK(resp.status == errors_info(rc)->http_status);
    FUZZ_CHECK(!buf_failed(&resp.body));
    FUZZ_CHECK(fuzz_xml_root_is(resp.body.data, resp.body.len, "Error"));
    buf_free(&resp.body);
}

/* ---- accepted requests ----------------------------------------------------- */

static void check_send(const struct api_call *call)
{
    const struct smq_op *op = &call->op;
    size_t total = 0;

    FUZZ_CHECK(op->send.n >= 1 && op->send.n <= SMQ_BATCH_MAX);
    FUZZ_CHECK(op->send.n == call->send.n);
    if (call->action == MNS_SEND_MESSAGE)
        FUZZ_CHECK(op->send.n == 1);
    for (size_t i = 0; i < op->send.n; i++) {
        const struct smq_send_item *s = &op->send.items[i];
        unsigned char md5[CRYPTO_MD5_LEN];

        FUZZ_CHECK(s->body == call->send.items[i].body && s->body != NULL);
        FUZZ_CHECK(s->body_len == call->send.items[i].body_len);
        FUZZ_CHECK(s->priority >= SMQ_PRIORITY_MIN && s->priority <= SMQ_PRIORITY_MAX);
        FUZZ_CHECK(s->delay_s >= 0 && s->delay_s <= SMQ_DELAY_MAX_S);
        FUZZ_CHECK(crypto_md5(s->body, s->body_len, md5) == 0);
        FUZZ_CHECK(memcmp(md5, call->send_md5[i], sizeof md5) == 0);
        FUZZ_CHECK(s->body_md5 == call->send_md5[i]);
        total += s->body_len;
    }
    FUZZ_CHECK(total <= BATCH_SEND_MAX_BYTES);
}

/* A publish borrows the body its call owns (§13.5): 1..65536 bytes, its MD5
 * right, a tag of at most 16 code points. */
static void check_publish(const struct api_call *call)
{
    const struct smq_op_publish *p = &call->op.publish;
    unsigned char md5[CRYPTO_MD5_LEN];
    size_t chars = 0;

    FUZZ_CHECK(p->body == call->publish.body && p->body != NULL);
    FUZZ_CHECK(p->body_len == call->publish.body_len);
    FUZZ_CHECK(p->body_len >= 1 && p->body_len <= SMQ_MSG_SIZE_MAX);
    FUZZ_CHECK(crypto_md5(p->body, p->body_len, md5) == 0);
    FUZZ_CHECK(memcmp(md5, p->body_md5, sizeof md5) == 0);
    FUZZ_CHECK(strnlen(p->tag, sizeof p->tag) < sizeof p->tag);
    for (const char *c = p->tag; *c != '\0'; c++)
        chars += ((unsigned char)*c & 0xC0) != 0x80;
    FUZZ_CHECK(chars <= SMQ_TAG_MAX_CHARS);
}

static void check_handles(const struct api_call *call)
{
    const struct smq_op *op = &call->op;

    if (call->action == MNS_CHANGE_MESSAGE_VISIBILITY) {
        FUZZ_CHECK(op->vis.ref.err == 0);
        return;
    }
    FUZZ_CHECK(op->del.n >= 1 && op->del.n <= SMQ_BATCH_MAX);
    if (call->action != MNS_BATCH_DELETE_MESSAGE) {
        FUZZ_CHECK(op->del.n == 1 && op->del.refs[0].err == 0);
        return;
    }
    FUZZ_CHECK(op->del.n == call->handles.n);
    for (size_t i = 0; i < op->del.n; i++) {
        const char *text = call->handles.handles[i];
        char again[HANDLE_TEXT_LEN + 1];

        if (op->del.refs[i].err != 0) {
            FUZZ_CHECK(op->del.refs[i].err == SMQ_E_RECEIPT_HANDLE_ERROR);
            continue;
        }
        handle_encode(ctx.handle_keys, op->del.refs[i].seq, op->del.refs[i].gen, again);
        FUZZ_CHECK(strcmp(again, text) == 0);
    }
}

static void check_attrs(const struct smq_op *op)
{
    const struct smq_queue_attrs *a = &op->attrs.values;
    unsigned p = op->attrs.present;

    FUZZ_CHECK(!(p & SMQ_ATTR_DELAY) || (a->delay_s >= 0 && a->delay_s <= SMQ_DELAY_MAX_S));
    FUZZ_CHECK(!(p & SMQ_ATTR_MAX_MSG_SIZE)
               || (a->max_msg_size >= SMQ_MSG_SIZE_MIN && a->max_msg_size <= SMQ_MSG_SIZE_MAX));
    FUZZ_CHECK(!(p & SMQ_ATTR_RETENTION)
               || (a->retention_s >= SMQ_RETENTION_MIN_S && a->retention_s <= SMQ_RETENTION_MAX_S));
    FUZZ_CHECK(!(p & SMQ_ATTR_VISIBILITY) || (a->visibility_s >= SMQ_VISIBILITY_MIN_S
                                              && a->visibility_s <= SMQ_VISIBILITY_MAX_S));
    FUZZ_CHECK(!(p & SMQ_ATTR_POLLING_WAIT)
               || (a->polling_wait_s >= 0 && a->polling_wait_s <= SMQ_POLLING_WAIT_MAX_S));
    FUZZ_CHECK(!(p & SMQ_ATTR_LOGGING) || a->logging == 0 || a->logging == 1);
}

/* The topic kinds' inputs: §13.2's ranges and an endpoint that parses. */
static void check_topic_inputs(const struct smq_op *op)
{
    const struct smq_sub_attrs *v = &op->sub.values;
    struct notify_endpoint ep;
    char trimmed[SMQ_ENDPOINT_MAX + 1];
    size_t chars = 0;

    switch (op->kind) {
    case SMQ_OP_CREATE_TOPIC:
    case SMQ_OP_SET_TOPIC:
        FUZZ_CHECK(!(op->topic.present & SMQ_TATTR_MAX_MSG_SIZE)
                   || (op->topic.values.max_msg_size >= SMQ_MSG_SIZE_MIN
                       && op->topic.values.max_msg_size <= SMQ_MSG_SIZE_MAX));
        break;
    case SMQ_OP_LIST_TOPICS:
        FUZZ_CHECK(op->tlist.ret_number >= 1 && op->tlist.ret_number <= 1000);
        break;
    case SMQ_OP_LIST_SUBSCRIPTIONS:
        FUZZ_CHECK(op->slist.ret_number >= 1 && op->slist.ret_number <= 1000);
        break;
    case SMQ_OP_SUBSCRIBE:
    case SMQ_OP_SET_SUBSCRIPTION:
        FUZZ_CHECK(op->kind == SMQ_OP_SET_SUBSCRIPTION || (op->sub.present & SMQ_SATTR_ENDPOINT));
        FUZZ_CHECK(!(op->sub.present & SMQ_SATTR_ENDPOINT)
                   || notify_endpoint_parse(v->endpoint, strlen(v->endpoint), &ep, trimmed) == 0);
        for (const char *c = v->filter_tag; *c != '\0'; c++)
            chars += ((unsigned char)*c & 0xC0) != 0x80;
        FUZZ_CHECK(chars <= SMQ_TAG_MAX_CHARS);
        FUZZ_CHECK(!v->dlq.enabled || qname_check(v->dlq.target, strlen(v->dlq.target)) == 0);
        break;
    default:
        break;
    }
    if (op->kind == SMQ_OP_SUBSCRIBE || op->kind == SMQ_OP_SET_SUBSCRIPTION
        || op->kind == SMQ_OP_GET_SUBSCRIPTION || op->kind == SMQ_OP_UNSUBSCRIBE)
        FUZZ_CHECK(qname_check(op->sub.name, strlen(op->sub.name)) == QNAME_OK);
}

static void check_accepted(const struct api_call *call)
{
    const struct smq_op *op = &call->op;

    FUZZ_CHECK(call->action > MNS_UNKNOWN && call->action < MNS__ACTION_COUNT);
    FUZZ_CHECK(strcmp(mns_action_name(call->action), "-") != 0);
    FUZZ_CHECK(op->kind == kind_of(call->action));
    if (call->action != MNS_LIST_QUEUE && call->action != MNS_LIST_TOPIC)
        FUZZ_CHECK(qname_check_err(op->queue, strlen(op->queue), NULL) == 0);
    check_topic_inputs(op);
    switch (op->kind) {
    case SMQ_OP_CREATE_QUEUE:
    case SMQ_OP_SET_QUEUE:
        check_attrs(op);
        break;
    case SMQ_OP_LIST_QUEUES:
        FUZZ_CHECK(op->list.ret_number >= 1 && op->list.ret_number <= 1000);
        break;
    case SMQ_OP_SEND:
        check_send(call);
        break;
    case SMQ_OP_PUBLISH:
        check_publish(call);
        break;
    case SMQ_OP_RECEIVE:
    case SMQ_OP_PEEK:
        FUZZ_CHECK(op->recv.max_msgs >= 1 && op->recv.max_msgs <= SMQ_BATCH_MAX);
        FUZZ_CHECK(is_batch(call->action) || op->recv.max_msgs == 1);
        FUZZ_CHECK(op->recv.wait_s >= -1 && op->recv.wait_s <= SMQ_POLLING_WAIT_MAX_S);
        break;
    case SMQ_OP_DELETE_MSG:
        check_handles(call);
        break;
    case SMQ_OP_CHANGE_VISIBILITY:
        FUZZ_CHECK(op->vis.visibility_s >= 0 && op->vis.visibility_s <= SMQ_VISIBILITY_MAX_S);
        check_handles(call);
        break;
    default:
        break;
    }
}

/* The topic kinds' outputs: names and texts from the request (any bytes in
 * the list names, as the prefix and marker the client sent). */
static void finish_topic_ok(const struct api_request *req, struct api_call *call)
{
    struct smq_op *op = &call->op;

    switch (op->kind) {
    case SMQ_OP_CREATE_TOPIC:
        op->topic.created = req->body_len % 2 == 0;
        break;
    case SMQ_OP_SUBSCRIBE:
        op->sub.created = req->body_len % 2 == 0;
        break;
    case SMQ_OP_PUBLISH:
        op->publish.seq = req->body_len;
        break;
    case SMQ_OP_GET_TOPIC:
        memcpy(op->topic.info.name, op->queue, sizeof op->topic.info.name);
        mns_default_topic_attrs(&op->topic.info.attrs);
        break;
    case SMQ_OP_GET_SUBSCRIPTION:
        memcpy(op->sub.info.name, op->sub.name, sizeof op->sub.info.name);
        memcpy(op->sub.info.attrs.filter_tag, op->queue, sizeof op->sub.info.attrs.filter_tag - 1);
        op->sub.info.attrs.dlq.enabled = req->body_len % 2 == 0;
        break;
    case SMQ_OP_LIST_TOPICS:
        op->tlist.topics = calloc(2, sizeof *op->tlist.topics);
        FUZZ_CHECK(op->tlist.topics != NULL);
        op->tlist.n_topics = 2;
        memcpy(op->tlist.topics[0].name, op->tlist.prefix, sizeof op->tlist.topics[0].name);
        memcpy(op->tlist.topics[1].name, op->tlist.marker, sizeof op->tlist.topics[1].name);
        memcpy(op->tlist.next_marker, op->tlist.marker, sizeof op->tlist.next_marker);
        break;
    case SMQ_OP_LIST_SUBSCRIPTIONS:
        op->slist.subs = calloc(2, sizeof *op->slist.subs);
        FUZZ_CHECK(op->slist.subs != NULL);
        op->slist.n_subs = 2;
        memcpy(op->slist.subs[0].name, op->slist.prefix, sizeof op->slist.subs[0].name);
        memcpy(op->slist.subs[1].attrs.endpoint, op->slist.marker, sizeof op->slist.marker);
        memcpy(op->slist.next_marker, op->slist.marker, sizeof op->slist.next_marker);
        break;
    default:
        break;
    }
}

/* Fills op's outputs as a successful engine run would, from what the request holds. */
static void finish_ok(const struct api_request *req, struct api_call *call)
{
    struct smq_op *op = &call->op;

    switch (op->kind) {
    case SMQ_OP_CREATE_QUEUE:
        op->attrs.created = req->body_len % 2 == 0;
        break;
    case SMQ_OP_GET_QUEUE:
        memcpy(op->info.name, op->queue, sizeof op->info.name);
        mns_default_attrs(&op->info.attrs);
        break;
    case SMQ_OP_LIST_QUEUES:
        /* Names come from the prefix and marker the client sent (any bytes). */
        op->list.queues = calloc(2, sizeof *op->list.queues);
        FUZZ_CHECK(op->list.queues != NULL);
        op->list.n_queues = 2;
        memcpy(op->list.queues[0].name, op->list.prefix, sizeof op->list.queues[0].name);
        memcpy(op->list.queues[1].name, op->list.marker, sizeof op->list.queues[1].name);
        memcpy(op->list.next_marker, op->list.marker, sizeof op->list.next_marker);
        break;
    case SMQ_OP_SEND:
        for (size_t i = 0; i < op->send.n; i++)
            op->send.seq[i] = i + 1;
        break;
    case SMQ_OP_RECEIVE:
    case SMQ_OP_PEEK:
        /* Bodies are whatever the request carried: not necessarily valid XML
         * text.  One block for all of them, as the engine lays them out. */
        op->recv.body_block = malloc(req->body_len * (size_t)op->recv.max_msgs + 1);
        FUZZ_CHECK(op->recv.body_block != NULL);
        for (int i = 0; i < op->recv.max_msgs; i++) {
            struct smq_msg_view *v = &op->recv.msgs[i];
            v->body = op->recv.body_block + req->body_len * (size_t)i;
            memcpy(v->body, req->body, req->body_len);
            v->body_len = req->body_len;
            v->seq = (uint64_t)i + 1;
            v->handle_gen = (uint32_t)i + 1;
            v->priority = SMQ_PRIORITY_DEFAULT;
            v->enqueue_ms = v->first_dequeue_ms = FUZZ_NOW_MS;
            v->next_visible_ms = FUZZ_NOW_MS + 30000;
            v->dequeue_count = 1;
            op->recv.n_msgs++;
        }
        break;
    case SMQ_OP_CHANGE_VISIBILITY:
        op->vis.new_gen = op->vis.ref.gen + 1;
        op->vis.next_visible_ms = FUZZ_NOW_MS + op->vis.visibility_s * 1000;
        break;
    default:
        finish_topic_ok(req, call);
        break;
    }
}

static const char *expected_root(const struct api_call *call, int status)
{
    switch (call->op.kind) {
    case SMQ_OP_GET_QUEUE: return "Queue";
    case SMQ_OP_LIST_QUEUES: return "Queues";
    case SMQ_OP_SEND:
    case SMQ_OP_RECEIVE:
    case SMQ_OP_PEEK: return is_batch(call->action) ? "Messages" : "Message";
    case SMQ_OP_DELETE_MSG: return status == 404 ? "Errors" : NULL;
    case SMQ_OP_CHANGE_VISIBILITY: return "ChangeVisibility";
    case SMQ_OP_PUBLISH: return "Message";
    case SMQ_OP_GET_TOPIC: return "Topic";
    case SMQ_OP_LIST_TOPICS: return "Topics";
    case SMQ_OP_GET_SUBSCRIPTION: return "Subscription";
    case SMQ_OP_LIST_SUBSCRIPTIONS: return "Subscriptions";
    default: return NULL;
    }
}

static void check_render(const struct api_request *req, struct api_call *call, bool fail)
{
    struct api_response resp;
    const char *root;

    if (fail)
        errors_set(&call->op.result, SMQ_E_QUEUE_NOT_EXIST, NULL);
    else
        finish_ok(req, call);
    memset(&resp, 0, sizeof resp);
    buf_init(&resp.body);
    api_render(&ctx, req, call, "512B2A634403E52B1956133E", &resp);
    FUZZ_CHECK(!buf_failed(&resp.body));
    if (fail) {
        FUZZ_CHECK(resp.status == 404);
        FUZZ_CHECK(fuzz_xml_root_is(resp.body.data, resp.body.len, "Error"));
    } else {
        root = expected_root(call, resp.status);
        FUZZ_CHECK((resp.status >= 200 && resp.status < 300)
                   || (call->action == MNS_BATCH_DELETE_MESSAGE && resp.status == 404));
        if (root != NULL)
            FUZZ_CHECK(fuzz_xml_root_is(resp.body.data, resp.body.len, root));
        else
            FUZZ_CHECK(resp.body.len == 0);
        if (call->op.kind == SMQ_OP_CREATE_QUEUE || call->op.kind == SMQ_OP_CREATE_TOPIC
            || call->op.kind == SMQ_OP_SUBSCRIBE)
            FUZZ_CHECK(resp.location[0] != '\0');
    }
    buf_free(&resp.body);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_req r;
    struct api_request req;
    struct api_call call;
    struct smq_errinfo ei = {0, ""};
    const char *host;
    int rc;

    if (fuzz_req_split(data, size, &r) != 0)
        return 0;
    if (fuzz_req_sign(&r, FUZZ_AK, FUZZ_SK) != 0) {
        fuzz_req_free(&r);
        return 0;
    }
    host = auth_header_get(&r.auth, "Host");
    req.method = r.method;
    req.target = r.resource;
    req.host = host != NULL ? host : "";
    req.scheme = "http";
    req.body = r.body;
    req.body_len = r.body_len;
    req.auth = &r.auth;

    api_call_init(&call);
    rc = api_prepare(&ctx, &req, &call, &ei);
    if (rc != 0) {
        check_refused(&req, rc, &ei);
    } else {
        FUZZ_CHECK(ei.err == 0);
        check_accepted(&call);
        check_render(&req, &call, size % 2 == 1);
    }
    api_call_free(&call);
    fuzz_req_free(&r);
    xml_thread_cleanup();     /* no parser state carried to the next input: each reproduces alone */
    return 0;
}
