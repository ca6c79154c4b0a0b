/*
 * test_api.c — unit tests for api.c, api_queue.c, api_message.c and api_topic.c.
 *
 * Query parsing (docs/protocol.md §1.3) and queue-name checks (docs/protocol.md §5); api_prepare on signed
 * requests (a fake clock at the Date of every request, the keyring
 * {testAccessKeyId, testAccessKeySecret}): routing of every action of docs/protocol.md §1.2
 * with its inputs, the fixed ranges of docs/protocol.md §5/§7, path and method errors,
 * Content-MD5 and auth failures; then api_render / api_render_error on
 * hand-filled finished operations, comparing the exact response bytes of
 * docs/protocol.md §7 and docs/protocol.md §8 (element order, namespace, status, Location).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "smqd/api.h"
#include "smqd/crypto.h"

#define AK "testAccessKeyId"
#define SK "testAccessKeySecret"
#define HOST "127.0.0.1:8080"
#define DATE "Tue, 02 Jan 2024 03:04:05 GMT"
#define DATE_MS INT64_C(1704164645000)
#define CT "text/xml;charset=UTF-8"
#define DECL "<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
#define NS "xmlns=\"http://mns.aliyuncs.com/doc/v1\""
#define REQ_NS "xmlns=\"http://mns.aliyuncs.com/doc/v1/\""
#define RID "512B2A634403E52B1956133E"
#define MAX_HDRS 16

/* MessageId prefix of the fixed keys: ids read "0909FF0D9C3A630C" + 16 hex of seq. */
#define ID_PREFIX "0909FF0D9C3A630C"
#define CN_BODY "I am \xe6\xb5\x8b\xe8\xaf\x95\xe5\xad\x97\xe7\xac\xa6\xe4\xb8\xb2."
#define CN_MD5 "9D75198CAA17528AB23790C1861987AF"

static char ak[] = AK, sk[] = SK;
static struct auth_key keys[] = {{ak, sk, NULL}};
static struct auth_keyring ring = {keys, 1};
static struct auth_keyring_slot ring_slot;
static struct handle_keys hkeys;
static struct smq_fake_clock fake;
static struct api_ctx ctx;

/* ---- fixture --------------------------------------------------------------------------- */

static int setup(void **state)
{
    static const unsigned char prefix[8] = {0x09, 0x09, 0xFF, 0x0D, 0x9C, 0x3A, 0x63, 0x0C};

    (void)state;
    for (size_t i = 0; i < sizeof hkeys.secret; i++)
        hkeys.secret[i] = (unsigned char)(i * 13 + 1);
    memcpy(hkeys.id_prefix, prefix, sizeof prefix);
    clock_fake_init(&fake, 1000, DATE_MS);
    ring_slot.current = &ring;
    ctx.keys = &ring_slot;
    ctx.handle_keys = &hkeys;
    ctx.clock = &fake.clock;
    ctx.max_skew_ms = AUTH_DEFAULT_MAX_SKEW_MS;
    return 0;
}

/* ---- signed requests ------------------------------------------------------------------ */

struct rq {
    struct http_header h[MAX_HDRS];
    size_t n;
    char authz[128];
    char md5[64];
    struct auth_request auth;
    struct api_request req;
};

static void rq_add(struct rq *r, const char *name, const char *value)
{
    assert_true(r->n < MAX_HDRS);
    r->h[r->n].name = name;
    r->h[r->n].value = value;
    r->n++;
    r->auth.n_headers = r->n;
}

/* A request as the Python SDK sends it, not yet signed. */
static void rq_init(struct rq *r, const char *method, const char *target, const char *body)
{
    memset(r, 0, sizeof *r);
    r->req.method = method;
    r->req.target = target;
    r->req.host = HOST;
    r->req.scheme = "http";
    r->req.body = body;
    r->req.body_len = body != NULL ? strlen(body) : 0;
    r->req.auth = &r->auth;
    r->auth.method = method;
    r->auth.resource = target;
    r->auth.headers = r->h;
    rq_add(r, "Host", HOST);
    rq_add(r, "Date", DATE);
    rq_add(r, "x-mns-version", AUTH_MNS_VERSION);
    if (body != NULL)
        rq_add(r, "Content-Type", CT);
}

/* Content-MD5 in the SDKs' form: base64 of the lower-case hex MD5. */
static void rq_add_md5_of(struct rq *r, const char *data)
{
    char hex[33];

    assert_int_equal(crypto_md5_hex(data, strlen(data), false, hex), 0);
    crypto_base64(hex, 32, r->md5);
    rq_add(r, "Content-MD5", r->md5);
}

static void rq_sign_with(struct rq *r, const char *id, const char *secret)
{
    struct smq_buf sts;
    char sig[29];

    buf_init(&sts);
    assert_int_equal(auth_string_to_sign(&r->auth, &sts), 0);
    assert_int_equal(auth_signature(secret, sts.data, sts.len, sig), 0);
    buf_free(&sts);
    snprintf(r->authz, sizeof r->authz, "MNS %s:%s", id, sig);
    rq_add(r, "Authorization", r->authz);
}

static void rq_sign(struct rq *r)
{
    rq_sign_with(r, AK, SK);
}

static int prepare(struct rq *r, struct api_call *call, struct smq_errinfo *ei)
{
    api_call_init(call);
    memset(ei, 0, sizeof *ei);
    return api_prepare(&ctx, &r->req, call, ei);
}

/* Signs and prepares; the caller frees call. */
static int run(struct api_call *call, struct smq_errinfo *ei, const char *method,
               const char *target, const char *body)
{
    struct rq r;

    rq_init(&r, method, target, body);
    rq_sign(&r);
    return prepare(&r, call, ei);
}

/* Expects success and the given action and op kind; the caller frees call. */
static void run_ok(struct api_call *call, const char *method, const char *target,
                   const char *body, enum mns_action action, enum smq_op_kind kind)
{
    struct smq_errinfo ei;
    int rc = run(call, &ei, method, target, body);

    if (rc != 0)
        fail_msg("%s %s: %d %s", method, target, rc, errors_message(&ei));
    assert_int_equal(call->action, action);
    assert_int_equal(call->op.kind, kind);
}

/* Expects err; returns nothing, frees everything. */
static void run_err(const char *method, const char *target, const char *body, int err)
{
    struct api_call call;
    struct smq_errinfo ei;
    int rc = run(&call, &ei, method, target, body);

    if (rc != err)
        fail_msg("%s %s: got %d (%s), want %d", method, target, rc,
                 rc ? errors_message(&ei) : "ok", err);
    assert_int_equal(ei.err, err);
    api_call_free(&call);
}

/* Like run_err, and the message must be exactly msg. */
static void run_err_msg(const char *method, const char *target, const char *body, int err,
                        const char *msg)
{
    struct api_call call;
    struct smq_errinfo ei;
    int rc = run(&call, &ei, method, target, body);

    assert_int_equal(rc, err);
    assert_string_equal(errors_message(&ei), msg);
    api_call_free(&call);
}

/* ---- request bodies ------------------------------------------------------------------- */

static void queue_body(char *out, size_t size, const char *elem, long long v)
{
    snprintf(out, size, DECL "<Queue " REQ_NS "><%s>%lld</%s></Queue>", elem, v, elem);
}

static void message_body(char *out, size_t size, const char *body, const char *extra)
{
    snprintf(out, size, DECL "<Message " REQ_NS "><MessageBody>%s</MessageBody>%s</Message>",
             body, extra);
}

/* <Messages> with n items whose bodies are body_len bytes of 'x', the last
 * one extra_last bytes longer.  Caller frees. */
static char *batch_body_ex(size_t n, size_t body_len, size_t extra_last)
{
    struct smq_buf b;
    size_t max = body_len + extra_last;
    char *text = malloc(max + 1);

    assert_non_null(text);
    memset(text, 'x', max);
    text[max] = '\0';
    buf_init(&b);
    buf_puts(&b, DECL "<Messages " REQ_NS ">");
    for (size_t i = 0; i < n; i++)
        buf_printf(&b, "<Message><MessageBody>%.*s</MessageBody><Priority>%zu</Priority></Message>",
                   (int)(i + 1 == n ? max : body_len), text, i % 16 + 1);
    buf_puts(&b, "</Messages>");
    free(text);
    assert_false(buf_failed(&b));
    return buf_take(&b, NULL);
}

static char *batch_body(size_t n, size_t body_len)
{
    return batch_body_ex(n, body_len, 0);
}

static void valid_handle(uint64_t seq, uint32_t gen, char out[HANDLE_TEXT_LEN + 1])
{
    handle_encode(&hkeys, seq, gen, out);
}

/* ================================ routing ================================ */

static void test_api_action_names(void **state)
{
    (void)state;
    assert_string_equal(mns_action_name(MNS_UNKNOWN), "-");
    assert_string_equal(mns_action_name(MNS_CREATE_QUEUE), "CreateQueue");
    assert_string_equal(mns_action_name(MNS_SET_QUEUE_ATTRIBUTES), "SetQueueAttributes");
    assert_string_equal(mns_action_name(MNS_GET_QUEUE_ATTRIBUTES), "GetQueueAttributes");
    assert_string_equal(mns_action_name(MNS_DELETE_QUEUE), "DeleteQueue");
    assert_string_equal(mns_action_name(MNS_LIST_QUEUE), "ListQueue");
    assert_string_equal(mns_action_name(MNS_SEND_MESSAGE), "SendMessage");
    assert_string_equal(mns_action_name(MNS_BATCH_SEND_MESSAGE), "BatchSendMessage");
    assert_string_equal(mns_action_name(MNS_RECEIVE_MESSAGE), "ReceiveMessage");
    assert_string_equal(mns_action_name(MNS_BATCH_RECEIVE_MESSAGE), "BatchReceiveMessage");
    assert_string_equal(mns_action_name(MNS_PEEK_MESSAGE), "PeekMessage");
    assert_string_equal(mns_action_name(MNS_BATCH_PEEK_MESSAGE), "BatchPeekMessage");
    assert_string_equal(mns_action_name(MNS_DELETE_MESSAGE), "DeleteMessage");
    assert_string_equal(mns_action_name(MNS_BATCH_DELETE_MESSAGE), "BatchDeleteMessage");
    assert_string_equal(mns_action_name(MNS_CHANGE_MESSAGE_VISIBILITY), "ChangeMessageVisibility");
    assert_string_equal(mns_action_name(MNS__ACTION_COUNT), "-");
    assert_string_equal(mns_action_name((enum mns_action)-1), "-");
}

static void test_api_prepare_create_queue(void **state)
{
    struct api_call call;
    char body[256];

    (void)state;
    queue_body(body, sizeof body, "VisibilityTimeout", 60);
    run_ok(&call, "PUT", "/queues/q1", body, MNS_CREATE_QUEUE, SMQ_OP_CREATE_QUEUE);
    assert_string_equal(call.op.queue, "q1");
    assert_int_equal(call.op.attrs.present, SMQ_ATTR_VISIBILITY);
    assert_int_equal(call.op.attrs.values.visibility_s, 60);
    api_call_free(&call);

    /* No body: create with defaults. */
    run_ok(&call, "PUT", "/queues/q1", NULL, MNS_CREATE_QUEUE, SMQ_OP_CREATE_QUEUE);
    assert_int_equal(call.op.attrs.present, 0);
    api_call_free(&call);

    /* Python's empty body. */
    run_ok(&call, "PUT", "/queues/q1", "<Queue " REQ_NS "></Queue>", MNS_CREATE_QUEUE,
           SMQ_OP_CREATE_QUEUE);
    assert_int_equal(call.op.attrs.present, 0);
    api_call_free(&call);

    /* metaoverride=false is still a create. */
    run_ok(&call, "PUT", "/queues/q1?metaoverride=false", NULL, MNS_CREATE_QUEUE,
           SMQ_OP_CREATE_QUEUE);
    api_call_free(&call);
}

static void test_api_prepare_create_queue_all_attributes(void **state)
{
    struct api_call call;
    const char *body = DECL "<Queue " REQ_NS "><DelaySeconds>5</DelaySeconds>"
                       "<MaximumMessageSize>2048</MaximumMessageSize>"
                       "<MessageRetentionPeriod>3600</MessageRetentionPeriod>"
                       "<VisibilityTimeout>45</VisibilityTimeout>"
                       "<PollingWaitSeconds>10</PollingWaitSeconds>"
                       "<LoggingEnabled>True</LoggingEnabled></Queue>";

    (void)state;
    run_ok(&call, "PUT", "/queues/q", body, MNS_CREATE_QUEUE, SMQ_OP_CREATE_QUEUE);
    assert_int_equal(call.op.attrs.present,
                     SMQ_ATTR_DELAY | SMQ_ATTR_MAX_MSG_SIZE | SMQ_ATTR_RETENTION
                         | SMQ_ATTR_VISIBILITY | SMQ_ATTR_POLLING_WAIT | SMQ_ATTR_LOGGING);
    assert_int_equal(call.op.attrs.values.delay_s, 5);
    assert_int_equal(call.op.attrs.values.max_msg_size, 2048);
    assert_int_equal(call.op.attrs.values.retention_s, 3600);
    assert_int_equal(call.op.attrs.values.visibility_s, 45);
    assert_int_equal(call.op.attrs.values.polling_wait_s, 10);
    assert_int_equal(call.op.attrs.values.logging, 1);
    api_call_free(&call);

    run_ok(&call, "PUT", "/queues/q?metaoverride=true",
           "<Queue><LoggingEnabled>false</LoggingEnabled></Queue>", MNS_SET_QUEUE_ATTRIBUTES,
           SMQ_OP_SET_QUEUE);
    assert_int_equal(call.op.attrs.present, SMQ_ATTR_LOGGING);
    assert_int_equal(call.op.attrs.values.logging, 0);
    api_call_free(&call);
}

/* The dead-letter policy: nested (control-plane names) or flat (the names
 * GetQueueAttributes returns), checked as a whole. */
static void test_api_prepare_dlq_policy(void **state)
{
    struct api_call call;
    const char *nested = DECL "<Queue " REQ_NS "><DlqPolicy><Enabled>true</Enabled>"
                         "<DeadLetterTargetQueue>orders-dlq</DeadLetterTargetQueue>"
                         "<MaxReceiveCount>5</MaxReceiveCount></DlqPolicy></Queue>";
    const char *flat = "<Queue><DlqEnabled>True</DlqEnabled><DlqTargetQueue>d</DlqTargetQueue>"
                       "<DlqMaxReceiveCount>1000</DlqMaxReceiveCount></Queue>";

    (void)state;
    run_ok(&call, "PUT", "/queues/orders", nested, MNS_CREATE_QUEUE, SMQ_OP_CREATE_QUEUE);
    assert_int_equal(call.op.attrs.present, SMQ_ATTR_DLQ);
    assert_int_equal(call.op.attrs.values.dlq.enabled, 1);
    assert_string_equal(call.op.attrs.values.dlq.target, "orders-dlq");
    assert_int_equal(call.op.attrs.values.dlq.max_receive, 5);
    api_call_free(&call);
    run_ok(&call, "PUT", "/queues/q?metaoverride=true", flat, MNS_SET_QUEUE_ATTRIBUTES,
           SMQ_OP_SET_QUEUE);
    assert_int_equal(call.op.attrs.values.dlq.max_receive, 1000);
    assert_string_equal(call.op.attrs.values.dlq.target, "d");
    api_call_free(&call);
    /* Enabled=false clears the policy whatever else is named. */
    run_ok(&call, "PUT", "/queues/q?metaoverride=true",
           "<Queue><DlqPolicy><Enabled>false</Enabled><MaxReceiveCount>0</MaxReceiveCount>"
           "</DlqPolicy></Queue>", MNS_SET_QUEUE_ATTRIBUTES, SMQ_OP_SET_QUEUE);
    assert_int_equal(call.op.attrs.present, SMQ_ATTR_DLQ);
    assert_int_equal(call.op.attrs.values.dlq.enabled, 0);
    assert_string_equal(call.op.attrs.values.dlq.target, "");
    api_call_free(&call);
    /* Without a policy element nothing about it is set. */
    run_ok(&call, "PUT", "/queues/q", "<Queue><DelaySeconds>1</DelaySeconds></Queue>",
           MNS_CREATE_QUEUE, SMQ_OP_CREATE_QUEUE);
    assert_int_equal(call.op.attrs.present & SMQ_ATTR_DLQ, 0);
    api_call_free(&call);

    run_err("PUT", "/queues/q", "<Queue><DlqPolicy><Enabled>true</Enabled>"
            "<MaxReceiveCount>3</MaxReceiveCount></DlqPolicy></Queue>", SMQ_E_INVALID_ARGUMENT);
    run_err("PUT", "/queues/q", "<Queue><DlqPolicy><DeadLetterTargetQueue>d</DeadLetterTargetQueue>"
            "</DlqPolicy></Queue>", SMQ_E_INVALID_ARGUMENT);
    run_err("PUT", "/queues/q", "<Queue><DlqPolicy><DeadLetterTargetQueue>d</DeadLetterTargetQueue>"
            "<MaxReceiveCount>0</MaxReceiveCount></DlqPolicy></Queue>", SMQ_E_INVALID_ARGUMENT);
    run_err("PUT", "/queues/q", "<Queue><DlqPolicy><DeadLetterTargetQueue>d</DeadLetterTargetQueue>"
            "<MaxReceiveCount>1001</MaxReceiveCount></DlqPolicy></Queue>", SMQ_E_INVALID_ARGUMENT);
    run_err("PUT", "/queues/q", "<Queue><DlqPolicy><DeadLetterTargetQueue>bad name!"
            "</DeadLetterTargetQueue><MaxReceiveCount>3</MaxReceiveCount></DlqPolicy></Queue>",
            SMQ_E_INVALID_QUEUE_NAME);
    run_err("PUT", "/queues/q", "<Queue><DlqPolicy><Enabled>maybe</Enabled></DlqPolicy></Queue>",
            SMQ_E_INVALID_ARGUMENT);
    /* A partial update is refused, never read as "off". */
    run_err("PUT", "/queues/q?metaoverride=true",
            "<Queue><DlqMaxReceiveCount>5</DlqMaxReceiveCount></Queue>", SMQ_E_INVALID_ARGUMENT);
    run_err("PUT", "/queues/q?metaoverride=true", "<Queue><DlqPolicy/></Queue>",
            SMQ_E_INVALID_ARGUMENT);
    run_err("PUT", "/queues/q", "<Queue><DlqTargetQueue>"
            "a123456789012345678901234567890123456789012345678901234567890123456789"
            "0123456789012345678901234567890123456789012345678901</DlqTargetQueue>"
            "<DlqMaxReceiveCount>5</DlqMaxReceiveCount></Queue>", SMQ_E_QUEUE_NAME_LENGTH);
    /* The same field twice, nested and flat, is a duplicate. */
    run_err("PUT", "/queues/q", "<Queue><DlqTargetQueue>a</DlqTargetQueue><DlqPolicy>"
            "<DeadLetterTargetQueue>b</DeadLetterTargetQueue></DlqPolicy></Queue>",
            SMQ_E_MALFORMED_XML);
}

static void test_api_prepare_set_queue_attributes(void **state)
{
    struct api_call call;
    char body[256];
    const char *targets[] = {"/queues/q?metaoverride=true", "/queues/q?metaOverride=true",
                             "/queues/q?metaoverride=True", "/queues/q?METAOVERRIDE=TRUE"};

    (void)state;
    queue_body(body, sizeof body, "DelaySeconds", 7);
    for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++) {
        run_ok(&call, "PUT", targets[i], body, MNS_SET_QUEUE_ATTRIBUTES, SMQ_OP_SET_QUEUE);
        assert_string_equal(call.op.queue, "q");
        assert_int_equal(call.op.attrs.present, SMQ_ATTR_DELAY);
        assert_int_equal(call.op.attrs.values.delay_s, 7);
        api_call_free(&call);
    }
}

static void test_api_prepare_queue_wrong_root(void **state)
{
    (void)state;
    run_err("PUT", "/queues/q", "<Message><MessageBody>x</MessageBody></Message>",
            SMQ_E_MALFORMED_XML);
    run_err("PUT", "/queues/q?metaoverride=true", "<Queue>", SMQ_E_MALFORMED_XML);
    run_err("PUT", "/queues/q", "<Queue><LoggingEnabled>maybe</LoggingEnabled></Queue>",
            SMQ_E_INVALID_ARGUMENT);
}

static void test_api_prepare_get_and_delete_queue(void **state)
{
    struct api_call call;

    (void)state;
    run_ok(&call, "GET", "/queues/Abc-9", NULL, MNS_GET_QUEUE_ATTRIBUTES, SMQ_OP_GET_QUEUE);
    assert_string_equal(call.op.queue, "Abc-9");
    api_call_free(&call);
    run_ok(&call, "DELETE", "/queues/Abc-9", NULL, MNS_DELETE_QUEUE, SMQ_OP_DELETE_QUEUE);
    assert_string_equal(call.op.queue, "Abc-9");
    api_call_free(&call);
}

static void test_api_prepare_list_queue(void **state)
{
    struct api_call call;
    struct smq_errinfo ei;
    struct rq r;

    (void)state;
    run_ok(&call, "GET", "/queues", NULL, MNS_LIST_QUEUE, SMQ_OP_LIST_QUEUES);
    assert_string_equal(call.op.list.prefix, "");
    assert_string_equal(call.op.list.marker, "");
    assert_int_equal(call.op.list.ret_number, 1000);
    api_call_free(&call);

    run_ok(&call, "GET", "/queues/", NULL, MNS_LIST_QUEUE, SMQ_OP_LIST_QUEUES);
    api_call_free(&call);

    rq_init(&r, "GET", "/queues", NULL);
    rq_add(&r, "x-mns-prefix", "abc");
    rq_add(&r, "x-mns-marker", "abd");
    rq_add(&r, "x-mns-ret-number", "7");
    rq_add(&r, "x-mns-with-meta", "true");
    rq_sign(&r);
    assert_int_equal(prepare(&r, &call, &ei), 0);
    assert_int_equal(call.action, MNS_LIST_QUEUE);
    assert_string_equal(call.op.list.prefix, "abc");
    assert_string_equal(call.op.list.marker, "abd");
    assert_int_equal(call.op.list.ret_number, 7);
    api_call_free(&call);
}

static void list_ret_number(const char *value, int want_rc, int want_n)
{
    struct api_call call;
    struct smq_errinfo ei;
    struct rq r;

    rq_init(&r, "GET", "/queues", NULL);
    rq_add(&r, "x-mns-ret-number", value);
    rq_sign(&r);
    assert_int_equal(prepare(&r, &call, &ei), want_rc);
    if (want_rc == 0)
        assert_int_equal(call.op.list.ret_number, want_n);
    api_call_free(&call);
}

static void test_api_prepare_list_ret_number_range(void **state)
{
    (void)state;
    list_ret_number("1", 0, 1);
    list_ret_number("1000", 0, 1000);
    list_ret_number("0", SMQ_E_INVALID_ARGUMENT, 0);
    list_ret_number("1001", SMQ_E_INVALID_ARGUMENT, 0);
    list_ret_number("-5", SMQ_E_INVALID_ARGUMENT, 0);
    list_ret_number("ten", SMQ_E_INVALID_ARGUMENT, 0);
    list_ret_number("5x", SMQ_E_INVALID_ARGUMENT, 0);
    /* The strict rule of every other number: no sign, no blanks. */
    list_ret_number("+5", SMQ_E_INVALID_ARGUMENT, 0);
    list_ret_number(" 5", SMQ_E_INVALID_ARGUMENT, 0);
    list_ret_number("0x10", SMQ_E_INVALID_ARGUMENT, 0);
    list_ret_number("007", 0, 7);
}

/* The MD5 the API computed for sent item i, and that it hands it to the
 * engine (which stores it for every later receive). */
static void assert_sent_md5(const struct api_call *call, size_t i, const char *want_hex)
{
    char hex[33];

    crypto_md5_to_hex(call->send_md5[i], true, hex);
    assert_string_equal(hex, want_hex);
    assert_ptr_equal(call->op.send.items[i].body_md5, call->send_md5[i]);
}

static void test_api_prepare_send_message(void **state)
{
    struct api_call call;
    char body[512];

    (void)state;
    message_body(body, sizeof body, CN_BODY, "");
    run_ok(&call, "POST", "/queues/q/messages", body, MNS_SEND_MESSAGE, SMQ_OP_SEND);
    assert_string_equal(call.op.queue, "q");
    assert_int_equal(call.op.send.n, 1);
    assert_int_equal(call.op.send.items[0].body_len, strlen(CN_BODY));
    assert_memory_equal(call.op.send.items[0].body, CN_BODY, strlen(CN_BODY));
    assert_int_equal(call.op.send.items[0].delay_s, 0);
    assert_int_equal(call.op.send.items[0].priority, SMQ_PRIORITY_DEFAULT);
    assert_sent_md5(&call, 0, CN_MD5);
    api_call_free(&call);
}

static void test_api_prepare_send_md5_of_text_after_unescaping(void **state)
{
    struct api_call call;
    char body[512];

    (void)state;
    message_body(body, sizeof body, "SSBhbSDmtYvor5XlrZfnrKbkuLIu", "");
    run_ok(&call, "POST", "/queues/q/messages", body, MNS_SEND_MESSAGE, SMQ_OP_SEND);
    assert_sent_md5(&call, 0, "A9B134C465C384F49EB89A6E3870D996");
    api_call_free(&call);

    message_body(body, sizeof body, "a&amp;b&lt;c&gt;", "");
    run_ok(&call, "POST", "/queues/q/messages", body, MNS_SEND_MESSAGE, SMQ_OP_SEND);
    assert_int_equal(call.op.send.items[0].body_len, 6);
    assert_memory_equal(call.op.send.items[0].body, "a&b<c>", 6);
    assert_sent_md5(&call, 0, "2C972F2D55C613B960178EA72493B0B7");
    api_call_free(&call);
}

static void send_with(const char *extra, int want_rc, int want_priority, int64_t want_delay)
{
    struct api_call call;
    struct smq_errinfo ei;
    char body[512];
    int rc;

    message_body(body, sizeof body, "hello", extra);
    rc = run(&call, &ei, "POST", "/queues/q/messages", body);
    if (rc != want_rc)
        fail_msg("%s: got %d (%s), want %d", extra, rc, rc ? errors_message(&ei) : "ok", want_rc);
    if (rc == 0) {
        assert_int_equal(call.op.send.items[0].priority, want_priority);
        assert_int_equal(call.op.send.items[0].delay_s, want_delay);
        assert_sent_md5(&call, 0, "5D41402ABC4B2A76B9719D911017C592");
    }
    api_call_free(&call);
}

static void test_api_prepare_send_priority(void **state)
{
    (void)state;
    send_with("<Priority>0</Priority>", 0, 8, 0);         /* Go's "unset" (docs/protocol.md §6.5) */
    send_with("<Priority>1</Priority>", 0, 1, 0);
    send_with("<Priority>16</Priority>", 0, 16, 0);
    send_with("<Priority>17</Priority>", SMQ_E_INVALID_ARGUMENT, 0, 0);
    send_with("<Priority>-1</Priority>", SMQ_E_INVALID_ARGUMENT, 0, 0);
    send_with("<Priority>abc</Priority>", SMQ_E_INVALID_ARGUMENT, 0, 0);
}

static void test_api_prepare_send_delay(void **state)
{
    (void)state;
    send_with("<DelaySeconds>0</DelaySeconds>", 0, 8, 0);
    send_with("<DelaySeconds>604800</DelaySeconds><Priority>3</Priority>", 0, 3, 604800);
    send_with("<DelaySeconds>604801</DelaySeconds>", SMQ_E_INVALID_ARGUMENT, 0, 0);
    send_with("<DelaySeconds>-1</DelaySeconds>", SMQ_E_INVALID_ARGUMENT, 0, 0);
}

static void test_api_prepare_send_error_messages(void **state)
{
    char body[512];

    (void)state;
    message_body(body, sizeof body, "x", "<Priority>17</Priority>");
    run_err_msg("POST", "/queues/q/messages", body, SMQ_E_INVALID_ARGUMENT,
                "The value of Priority should between 1 and 16.");
    message_body(body, sizeof body, "x", "<DelaySeconds>604801</DelaySeconds>");
    run_err_msg("POST", "/queues/q/messages", body, SMQ_E_INVALID_ARGUMENT,
                "The value of DelaySeconds should between 0 and 604800 seconds.");
}

static void test_api_prepare_send_missing_body(void **state)
{
    (void)state;
    run_err("POST", "/queues/q/messages", "<Message " REQ_NS "><Priority>3</Priority></Message>",
            SMQ_E_INVALID_ARGUMENT);
    run_err("POST", "/queues/q/messages", "<Message/>", SMQ_E_INVALID_ARGUMENT);
    run_err("POST", "/queues/q/messages", NULL, SMQ_E_MALFORMED_XML);
    run_err("POST", "/queues/q/messages", "not xml", SMQ_E_MALFORMED_XML);
    run_err("POST", "/queues/q/messages", "<Queue><DelaySeconds>1</DelaySeconds></Queue>",
            SMQ_E_MALFORMED_XML);
    run_err("POST", "/queues/q/messages",
            "<Messages><Message><Priority>3</Priority></Message></Messages>",
            SMQ_E_INVALID_ARGUMENT);
}

static void test_api_prepare_batch_send(void **state)
{
    struct api_call call;
    char *body = batch_body(16, 10);

    (void)state;
    run_ok(&call, "POST", "/queues/q/messages", body, MNS_BATCH_SEND_MESSAGE, SMQ_OP_SEND);
    assert_int_equal(call.op.send.n, 16);
    for (size_t i = 0; i < 16; i++) {
        assert_int_equal(call.op.send.items[i].body_len, 10);
        assert_memory_equal(call.op.send.items[i].body, "xxxxxxxxxx", 10);
        assert_int_equal(call.op.send.items[i].priority, (int)(i % 16 + 1));
        assert_memory_equal(call.send_md5[i], call.send_md5[0], CRYPTO_MD5_LEN);
        assert_ptr_equal(call.op.send.items[i].body_md5, call.send_md5[i]);
    }
    api_call_free(&call);
    free(body);

    /* One item is still the batch shape. */
    body = batch_body(1, 3);
    run_ok(&call, "POST", "/queues/q/messages", body, MNS_BATCH_SEND_MESSAGE, SMQ_OP_SEND);
    assert_int_equal(call.op.send.n, 1);
    api_call_free(&call);
    free(body);
}

static void test_api_prepare_batch_send_limits(void **state)
{
    struct api_call call;
    char *body;

    (void)state;
    body = batch_body(17, 10);
    run_err("POST", "/queues/q/messages", body, SMQ_E_INVALID_ARGUMENT);
    free(body);

    /* Exactly 64 KiB in total is allowed, one byte more is not. */
    body = batch_body(16, 4096);
    run_ok(&call, "POST", "/queues/q/messages", body, MNS_BATCH_SEND_MESSAGE, SMQ_OP_SEND);
    api_call_free(&call);
    free(body);
    body = batch_body_ex(16, 4096, 1);
    run_err("POST", "/queues/q/messages", body, SMQ_E_INVALID_ARGUMENT);
    free(body);
    body = batch_body(16, 4097);
    run_err_msg("POST", "/queues/q/messages", body, SMQ_E_INVALID_ARGUMENT,
                "The total size of the messages in a batch should not exceed 65536 bytes.");
    free(body);
    body = batch_body(2, 40000);
    run_err("POST", "/queues/q/messages", body, SMQ_E_INVALID_ARGUMENT);
    free(body);

    run_err("POST", "/queues/q/messages", "<Messages></Messages>", SMQ_E_INVALID_ARGUMENT);
    run_err("POST", "/queues/q/messages",
            "<Messages><Message><MessageBody>a</MessageBody></Message>"
            "<Message><MessageBody>b</MessageBody><Priority>17</Priority></Message></Messages>",
            SMQ_E_INVALID_ARGUMENT);
}

static void test_api_prepare_receive(void **state)
{
    struct api_call call;

    (void)state;
    run_ok(&call, "GET", "/queues/q/messages", NULL, MNS_RECEIVE_MESSAGE, SMQ_OP_RECEIVE);
    assert_string_equal(call.op.queue, "q");
    assert_int_equal(call.op.recv.max_msgs, 1);
    assert_int_equal(call.op.recv.wait_s, -1);          /* the queue's PollingWaitSeconds */
    api_call_free(&call);

    run_ok(&call, "GET", "/queues/q/messages?waitseconds=0", NULL, MNS_RECEIVE_MESSAGE,
           SMQ_OP_RECEIVE);
    assert_int_equal(call.op.recv.wait_s, 0);
    api_call_free(&call);

    run_ok(&call, "GET", "/queues/q/messages?waitseconds=30", NULL, MNS_RECEIVE_MESSAGE,
           SMQ_OP_RECEIVE);
    assert_int_equal(call.op.recv.wait_s, 30);
    api_call_free(&call);

    run_ok(&call, "GET", "/queues/q/messages?peekonly=false", NULL, MNS_RECEIVE_MESSAGE,
           SMQ_OP_RECEIVE);
    api_call_free(&call);
}

static void test_api_prepare_receive_waitseconds_errors(void **state)
{
    (void)state;
    run_err("GET", "/queues/q/messages?waitseconds=31", NULL, SMQ_E_INVALID_ARGUMENT);
    run_err("GET", "/queues/q/messages?waitseconds=-1", NULL, SMQ_E_INVALID_ARGUMENT);
    run_err("GET", "/queues/q/messages?waitseconds=99999999999999999999", NULL,
            SMQ_E_INVALID_ARGUMENT);
    run_err("GET", "/queues/q/messages?waitseconds=abc", NULL, SMQ_E_INVALID_QUERY_STRING);
    run_err("GET", "/queues/q/messages?waitseconds=", NULL, SMQ_E_INVALID_QUERY_STRING);
    run_err("GET", "/queues/q/messages?waitseconds=5s", NULL, SMQ_E_INVALID_QUERY_STRING);
    run_err("GET", "/queues/q/messages?waitseconds=%205", NULL, SMQ_E_INVALID_QUERY_STRING);
    run_err("GET", "/queues/q/messages?waitseconds=+5", NULL, SMQ_E_INVALID_QUERY_STRING);
    run_err("GET", "/queues/q/messages?waitseconds=%G0", NULL, SMQ_E_INVALID_QUERY_STRING);
    run_err("GET", "/queues/q/messages?numOfMessages=2&waitseconds=31", NULL,
            SMQ_E_INVALID_ARGUMENT);
}

static void test_api_prepare_batch_receive(void **state)
{
    struct api_call call;

    (void)state;
    run_ok(&call, "GET", "/queues/q/messages?numOfMessages=1", NULL, MNS_BATCH_RECEIVE_MESSAGE,
           SMQ_OP_RECEIVE);
    assert_int_equal(call.op.recv.max_msgs, 1);
    assert_int_equal(call.op.recv.wait_s, -1);
    api_call_free(&call);

    run_ok(&call, "GET", "/queues/q/messages?numOfMessages=16&waitseconds=3", NULL,
           MNS_BATCH_RECEIVE_MESSAGE, SMQ_OP_RECEIVE);
    assert_int_equal(call.op.recv.max_msgs, 16);
    assert_int_equal(call.op.recv.wait_s, 3);
    api_call_free(&call);

    run_ok(&call, "GET", "/queues/q/messages?numofmessages=5", NULL, MNS_BATCH_RECEIVE_MESSAGE,
           SMQ_OP_RECEIVE);
    assert_int_equal(call.op.recv.max_msgs, 5);
    api_call_free(&call);

    run_err("GET", "/queues/q/messages?numOfMessages=0", NULL, SMQ_E_INVALID_ARGUMENT);
    run_err("GET", "/queues/q/messages?numOfMessages=17", NULL, SMQ_E_INVALID_ARGUMENT);
    run_err("GET", "/queues/q/messages?numOfMessages=x", NULL, SMQ_E_INVALID_QUERY_STRING);
}

static void test_api_prepare_peek(void **state)
{
    struct api_call call;

    (void)state;
    run_ok(&call, "GET", "/queues/q/messages?peekonly=true", NULL, MNS_PEEK_MESSAGE, SMQ_OP_PEEK);
    assert_int_equal(call.op.recv.max_msgs, 1);
    api_call_free(&call);

    run_ok(&call, "GET", "/queues/q/messages?peekonly=True", NULL, MNS_PEEK_MESSAGE, SMQ_OP_PEEK);
    api_call_free(&call);

    run_ok(&call, "GET", "/queues/q/messages?peekonly=true&numOfMessages=4", NULL,
           MNS_BATCH_PEEK_MESSAGE, SMQ_OP_PEEK);
    assert_int_equal(call.op.recv.max_msgs, 4);
    api_call_free(&call);

    /* Go's parameter order. */
    run_ok(&call, "GET", "/queues/q/messages?numOfMessages=16&peekonly=true", NULL,
           MNS_BATCH_PEEK_MESSAGE, SMQ_OP_PEEK);
    assert_int_equal(call.op.recv.max_msgs, 16);
    api_call_free(&call);

    run_ok(&call, "GET", "/queues/q/messages?peekonly=true&numOfMessages=1", NULL,
           MNS_BATCH_PEEK_MESSAGE, SMQ_OP_PEEK);
    api_call_free(&call);

    run_err("GET", "/queues/q/messages?peekonly=true&numOfMessages=17", NULL,
            SMQ_E_INVALID_ARGUMENT);
}

static void test_api_prepare_delete_message(void **state)
{
    struct api_call call;
    char h[HANDLE_TEXT_LEN + 1], target[256];
    const char *names[] = {"ReceiptHandle", "receiptHandle", "RECEIPTHANDLE"};

    (void)state;
    valid_handle(42, 3, h);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(target, sizeof target, "/queues/q/messages?%s=%s", names[i], h);
        run_ok(&call, "DELETE", target, NULL, MNS_DELETE_MESSAGE, SMQ_OP_DELETE_MSG);
        assert_int_equal(call.op.del.n, 1);
        assert_int_equal(call.op.del.refs[0].err, 0);
        assert_int_equal(call.op.del.refs[0].seq, 42);
        assert_int_equal(call.op.del.refs[0].gen, 3);
        api_call_free(&call);
    }

    /* Go percent-escapes the handle: %41 is 'A', %2D is '-'. */
    valid_handle(7, 0, h);
    snprintf(target, sizeof target, "/queues/q/messages?ReceiptHandle=%%%02X%s", (unsigned)h[0], h + 1);
    run_ok(&call, "DELETE", target, NULL, MNS_DELETE_MESSAGE, SMQ_OP_DELETE_MSG);
    assert_int_equal(call.op.del.refs[0].seq, 7);
    api_call_free(&call);
}

static void test_api_prepare_delete_query_handle_wins_over_body(void **state)
{
    struct api_call call;
    char h[HANDLE_TEXT_LEN + 1], target[256];

    (void)state;
    valid_handle(5, 1, h);
    snprintf(target, sizeof target, "/queues/q/messages?ReceiptHandle=%s", h);
    run_ok(&call, "DELETE", target, "<ReceiptHandles><ReceiptHandle>x</ReceiptHandle></ReceiptHandles>",
           MNS_DELETE_MESSAGE, SMQ_OP_DELETE_MSG);
    assert_int_equal(call.op.del.n, 1);
    assert_int_equal(call.op.del.refs[0].seq, 5);
    api_call_free(&call);
}

static void test_api_prepare_delete_message_errors(void **state)
{
    char h[HANDLE_TEXT_LEN + 1], target[256];

    (void)state;
    run_err("DELETE", "/queues/q/messages", NULL, SMQ_E_MISSING_RECEIPT_HANDLE);
    run_err("DELETE", "/queues/q/messages?ReceiptHandle=garbage", NULL, SMQ_E_RECEIPT_HANDLE_ERROR);
    run_err("DELETE", "/queues/q/messages?ReceiptHandle=", NULL, SMQ_E_RECEIPT_HANDLE_ERROR);
    run_err("DELETE", "/queues/q/messages?ReceiptHandle=8-0zxjHBaWtzPz8zphz0z6OGz5yWWidU1fJM", NULL,
            SMQ_E_RECEIPT_HANDLE_ERROR);
    valid_handle(42, 3, h);
    h[3] = h[3] == 'A' ? 'B' : 'A';
    snprintf(target, sizeof target, "/queues/q/messages?ReceiptHandle=%s", h);
    run_err("DELETE", target, NULL, SMQ_E_RECEIPT_HANDLE_ERROR);
}

static void test_api_prepare_batch_delete(void **state)
{
    struct api_call call;
    char h1[HANDLE_TEXT_LEN + 1], h2[HANDLE_TEXT_LEN + 1], body[1024];

    (void)state;
    valid_handle(10, 1, h1);
    valid_handle(11, 2, h2);
    snprintf(body, sizeof body,
             DECL "<ReceiptHandles " REQ_NS "><ReceiptHandle>%s</ReceiptHandle>"
             "<ReceiptHandle>garbage</ReceiptHandle><ReceiptHandle></ReceiptHandle>"
             "<ReceiptHandle> %s\n</ReceiptHandle><ReceiptHandle>a+b/c=</ReceiptHandle>"
             "</ReceiptHandles>",
             h1, h2);
    run_ok(&call, "DELETE", "/queues/q/messages", body, MNS_BATCH_DELETE_MESSAGE, SMQ_OP_DELETE_MSG);
    assert_int_equal(call.op.del.n, 5);
    assert_int_equal(call.handles.n, 5);
    assert_int_equal(call.op.del.refs[0].err, 0);
    assert_int_equal(call.op.del.refs[0].seq, 10);
    assert_int_equal(call.op.del.refs[0].gen, 1);
    assert_int_equal(call.op.del.refs[1].err, SMQ_E_RECEIPT_HANDLE_ERROR);
    assert_int_equal(call.op.del.refs[2].err, SMQ_E_RECEIPT_HANDLE_ERROR);
    assert_int_equal(call.op.del.refs[3].err, 0);           /* trimmed */
    assert_int_equal(call.op.del.refs[3].seq, 11);
    assert_int_equal(call.op.del.refs[3].gen, 2);
    assert_int_equal(call.op.del.refs[4].err, SMQ_E_RECEIPT_HANDLE_ERROR);
    assert_string_equal(call.handles.handles[1], "garbage");
    assert_string_equal(call.handles.handles[2], "");
    assert_string_equal(call.handles.handles[3], h2);
    api_call_free(&call);
}

static void test_api_prepare_batch_delete_limits(void **state)
{
    struct smq_buf b;

    (void)state;
    buf_init(&b);
    buf_puts(&b, "<ReceiptHandles>");
    for (int i = 0; i < 17; i++)
        buf_puts(&b, "<ReceiptHandle>x</ReceiptHandle>");
    buf_puts(&b, "</ReceiptHandles>");
    run_err("DELETE", "/queues/q/messages", b.data, SMQ_E_INVALID_ARGUMENT);
    buf_free(&b);
    run_err("DELETE", "/queues/q/messages", "<ReceiptHandles></ReceiptHandles>",
            SMQ_E_INVALID_ARGUMENT);
    run_err("DELETE", "/queues/q/messages", "<Handles><ReceiptHandle>x</ReceiptHandle></Handles>",
            SMQ_E_MALFORMED_XML);
}

static void test_api_prepare_change_visibility(void **state)
{
    struct api_call call;
    char h[HANDLE_TEXT_LEN + 1], target[256];

    (void)state;
    valid_handle(99, 4, h);
    snprintf(target, sizeof target, "/queues/q/messages?ReceiptHandle=%s&VisibilityTimeout=60", h);
    run_ok(&call, "PUT", target, NULL, MNS_CHANGE_MESSAGE_VISIBILITY, SMQ_OP_CHANGE_VISIBILITY);
    assert_int_equal(call.op.vis.ref.err, 0);
    assert_int_equal(call.op.vis.ref.seq, 99);
    assert_int_equal(call.op.vis.ref.gen, 4);
    assert_int_equal(call.op.vis.visibility_s, 60);
    api_call_free(&call);

    /* Node and the docs: lower-case first letters. */
    snprintf(target, sizeof target, "/queues/q/messages?receiptHandle=%s&visibilityTimeout=43200", h);
    run_ok(&call, "PUT", target, NULL, MNS_CHANGE_MESSAGE_VISIBILITY, SMQ_OP_CHANGE_VISIBILITY);
    assert_int_equal(call.op.vis.visibility_s, 43200);
    api_call_free(&call);

    /* 0 = "visible now" is accepted. */
    snprintf(target, sizeof target, "/queues/q/messages?VisibilityTimeout=0&ReceiptHandle=%s", h);
    run_ok(&call, "PUT", target, NULL, MNS_CHANGE_MESSAGE_VISIBILITY, SMQ_OP_CHANGE_VISIBILITY);
    assert_int_equal(call.op.vis.visibility_s, 0);
    api_call_free(&call);
}

static void test_api_prepare_change_visibility_errors(void **state)
{
    char h[HANDLE_TEXT_LEN + 1], target[256];

    (void)state;
    valid_handle(99, 4, h);
    snprintf(target, sizeof target, "/queues/q/messages?ReceiptHandle=%s&VisibilityTimeout=43201", h);
    run_err("PUT", target, NULL, SMQ_E_INVALID_ARGUMENT);
    snprintf(target, sizeof target, "/queues/q/messages?ReceiptHandle=%s&VisibilityTimeout=-1", h);
    run_err("PUT", target, NULL, SMQ_E_INVALID_ARGUMENT);
    snprintf(target, sizeof target, "/queues/q/messages?ReceiptHandle=%s&VisibilityTimeout=ten", h);
    run_err("PUT", target, NULL, SMQ_E_INVALID_QUERY_STRING);
    snprintf(target, sizeof target, "/queues/q/messages?ReceiptHandle=%s", h);
    run_err("PUT", target, NULL, SMQ_E_MISSING_VISIBILITY_TIMEOUT);
    run_err("PUT", "/queues/q/messages?VisibilityTimeout=10", NULL, SMQ_E_MISSING_RECEIPT_HANDLE);
    run_err("PUT", "/queues/q/messages", NULL, SMQ_E_MISSING_RECEIPT_HANDLE);
    run_err("PUT", "/queues/q/messages?ReceiptHandle=garbage&VisibilityTimeout=10", NULL,
            SMQ_E_RECEIPT_HANDLE_ERROR);
}

static void test_api_prepare_bad_queue_names_in_path(void **state)
{
    char target[512];

    (void)state;
    run_err("GET", "/queues/..", NULL, SMQ_E_INVALID_QUEUE_NAME);
    run_err("GET", "/queues/%2E%2E", NULL, SMQ_E_INVALID_QUEUE_NAME);
    run_err("GET", "/queues/a%00b", NULL, SMQ_E_INVALID_QUEUE_NAME);
    run_err("GET", "/queues/a%2Fb", NULL, SMQ_E_INVALID_QUEUE_NAME);
    run_err("GET", "/queues/a%2fb/messages", NULL, SMQ_E_INVALID_QUEUE_NAME);
    run_err("GET", "/queues/%2E%2E%2F%2E%2E%2Fetc/messages", NULL, SMQ_E_INVALID_QUEUE_NAME);
    run_err("GET", "/queues/a%zz", NULL, SMQ_E_INVALID_QUEUE_NAME);
    run_err("GET", "/queues/a_b", NULL, SMQ_E_INVALID_QUEUE_NAME);
    run_err("GET", "/queues/-a", NULL, SMQ_E_INVALID_QUEUE_NAME);
    run_err("GET", "/queues/../x", NULL, SMQ_E_INVALID_REQUEST_URL);
    run_err("GET", "/queues/../../etc/passwd", NULL, SMQ_E_INVALID_REQUEST_URL);
    run_err("GET", "/queues/q/../messages", NULL, SMQ_E_INVALID_REQUEST_URL);

    memset(target, 0, sizeof target);
    memcpy(target, "/queues/", 8);
    memset(target + 8, 'n', 120);
    run_err("GET", target, NULL, 0);
    target[8 + 120] = 'n';
    run_err("GET", target, NULL, SMQ_E_QUEUE_NAME_LENGTH);
    memset(target + 8, 'n', 400);
    run_err("GET", target, NULL, SMQ_E_QUEUE_NAME_LENGTH);
}

static void test_api_prepare_percent_encoded_name_decoded(void **state)
{
    struct api_call call;

    (void)state;
    run_ok(&call, "GET", "/queues/%41bc", NULL, MNS_GET_QUEUE_ATTRIBUTES, SMQ_OP_GET_QUEUE);
    assert_string_equal(call.op.queue, "Abc");
    api_call_free(&call);
}

static void test_api_prepare_unknown_paths(void **state)
{
    (void)state;
    run_err("GET", "/", NULL, SMQ_E_INVALID_REQUEST_URL);
    run_err("GET", "/queue", NULL, SMQ_E_INVALID_REQUEST_URL);
    run_err("GET", "/queuesX", NULL, SMQ_E_INVALID_REQUEST_URL);
    run_err("GET", "/queues/q/messages/", NULL, SMQ_E_INVALID_REQUEST_URL);
    run_err("GET", "/queues/q/messages/x", NULL, SMQ_E_INVALID_REQUEST_URL);
    run_err("GET", "/queues/q/message", NULL, SMQ_E_INVALID_REQUEST_URL);
    run_err("GET", "/queues/q/messagesX", NULL, SMQ_E_INVALID_REQUEST_URL);
    run_err("GET", "/queues/q/subscriptions", NULL, SMQ_E_INVALID_REQUEST_URL);
    run_err("GET", "/Queues/q", NULL, SMQ_E_INVALID_REQUEST_URL);
    run_err("GET", "/?accountmeta=true", NULL, SMQ_E_INVALID_REQUEST_URL);
}

static void test_api_prepare_unknown_methods(void **state)
{
    (void)state;
    run_err("POST", "/queues", NULL, SMQ_E_INVALID_REQUEST_URL);
    run_err("PUT", "/queues", NULL, SMQ_E_INVALID_REQUEST_URL);
    run_err("DELETE", "/queues", NULL, SMQ_E_INVALID_REQUEST_URL);
    run_err("POST", "/queues/q", NULL, SMQ_E_INVALID_REQUEST_URL);
    run_err("HEAD", "/queues/q", NULL, SMQ_E_INVALID_REQUEST_URL);
    run_err("PATCH", "/queues/q/messages", NULL, SMQ_E_INVALID_REQUEST_URL);
    run_err("get", "/queues/q", NULL, SMQ_E_INVALID_REQUEST_URL);
}

/* ---- queue attribute ranges (docs/protocol.md §5) ---- */

struct attr_case {
    const char *name;
    long long min, max;
    const char *unit;
    unsigned bit;
    size_t field;
};

static const struct attr_case attr_cases[] = {
    {"DelaySeconds", 0, 604800, "seconds", SMQ_ATTR_DELAY, offsetof(struct smq_queue_attrs, delay_s)},
    {"MaximumMessageSize", 1024, 65536, "bytes", SMQ_ATTR_MAX_MSG_SIZE,
     offsetof(struct smq_queue_attrs, max_msg_size)},
    {"MessageRetentionPeriod", 60, 604800, "seconds", SMQ_ATTR_RETENTION,
     offsetof(struct smq_queue_attrs, retention_s)},
    {"VisibilityTimeout", 1, 43200, "seconds", SMQ_ATTR_VISIBILITY,
     offsetof(struct smq_queue_attrs, visibility_s)},
    {"PollingWaitSeconds", 0, 30, "seconds", SMQ_ATTR_POLLING_WAIT,
     offsetof(struct smq_queue_attrs, polling_wait_s)},
};

static void attr_accepted(const char *target, const struct attr_case *c, long long v)
{
    struct api_call call;
    struct smq_errinfo ei;
    char body[256];
    int rc;

    queue_body(body, sizeof body, c->name, v);
    rc = run(&call, &ei, "PUT", target, body);
    if (rc != 0)
        fail_msg("%s=%lld: %s", c->name, v, errors_message(&ei));
    assert_int_equal(call.op.attrs.present, c->bit);
    assert_int_equal(*(const int64_t *)(const void *)((const char *)&call.op.attrs.values + c->field), v);
    api_call_free(&call);
}

static void attr_rejected(const char *target, const struct attr_case *c, long long v)
{
    char body[256], msg[256];

    queue_body(body, sizeof body, c->name, v);
    snprintf(msg, sizeof msg, "The value of %s should between %lld and %lld %s.", c->name, c->min,
             c->max, c->unit);
    run_err_msg("PUT", target, body, SMQ_E_INVALID_ARGUMENT, msg);
}

static void test_api_prepare_queue_attribute_ranges(void **state)
{
    const char *targets[] = {"/queues/q", "/queues/q?metaoverride=true"};

    (void)state;
    for (size_t t = 0; t < 2; t++) {
        for (size_t i = 0; i < sizeof attr_cases / sizeof attr_cases[0]; i++) {
            const struct attr_case *c = &attr_cases[i];
            attr_accepted(targets[t], c, c->min);
            attr_accepted(targets[t], c, c->max);
            attr_rejected(targets[t], c, c->min - 1);
            attr_rejected(targets[t], c, c->max + 1);
        }
    }
}

/* ---- Content-MD5 and authentication ---- */

static void test_api_prepare_content_md5(void **state)
{
    struct api_call call;
    struct smq_errinfo ei;
    struct rq r;
    char body[256];

    (void)state;
    message_body(body, sizeof body, "hello", "");
    rq_init(&r, "POST", "/queues/q/messages", body);
    rq_add_md5_of(&r, body);
    rq_sign(&r);
    assert_int_equal(prepare(&r, &call, &ei), 0);
    assert_int_equal(call.action, MNS_SEND_MESSAGE);
    api_call_free(&call);

    /* Signed correctly, but the digest is of other bytes. */
    rq_init(&r, "POST", "/queues/q/messages", body);
    rq_add_md5_of(&r, "something else");
    rq_sign(&r);
    assert_int_equal(prepare(&r, &call, &ei), SMQ_E_INVALID_DIGEST);
    assert_int_equal(ei.err, SMQ_E_INVALID_DIGEST);
    api_call_free(&call);

    /* Node sends the MD5 of "" on bodiless requests. */
    rq_init(&r, "DELETE", "/queues/q", NULL);
    rq_add_md5_of(&r, "");
    rq_sign(&r);
    assert_int_equal(prepare(&r, &call, &ei), 0);
    assert_int_equal(call.action, MNS_DELETE_QUEUE);
    api_call_free(&call);
}

static void test_api_prepare_bad_signature(void **state)
{
    struct api_call call;
    struct smq_errinfo ei;
    struct rq r;

    (void)state;
    rq_init(&r, "GET", "/queues/q", NULL);
    rq_sign_with(&r, AK, "wrongSecret");
    assert_int_equal(prepare(&r, &call, &ei), SMQ_E_SIGNATURE_MISMATCH);
    assert_int_equal(ei.err, SMQ_E_SIGNATURE_MISMATCH);
    assert_string_equal(errors_info(ei.err)->code, "SignatureDoesNotMatch");
    api_call_free(&call);

    /* Auth comes before routing: a bad path with a bad signature. */
    rq_init(&r, "GET", "/nowhere", NULL);
    rq_sign_with(&r, AK, "wrongSecret");
    assert_int_equal(prepare(&r, &call, &ei), SMQ_E_SIGNATURE_MISMATCH);
    api_call_free(&call);

    /* The target is signed: changing it after signing breaks the signature. */
    rq_init(&r, "GET", "/queues/q", NULL);
    rq_sign(&r);
    r.req.target = r.auth.resource = "/queues/p";
    assert_int_equal(prepare(&r, &call, &ei), SMQ_E_SIGNATURE_MISMATCH);
    api_call_free(&call);
}

static void test_api_prepare_auth_errors(void **state)
{
    struct api_call call;
    struct smq_errinfo ei;
    struct rq r;

    (void)state;
    rq_init(&r, "GET", "/queues/q", NULL);
    assert_int_equal(prepare(&r, &call, &ei), SMQ_E_MISSING_AUTHORIZATION);
    api_call_free(&call);

    rq_init(&r, "GET", "/queues/q", NULL);
    rq_sign_with(&r, "otherKeyId", SK);
    assert_int_equal(prepare(&r, &call, &ei), SMQ_E_INVALID_ACCESS_KEY_ID);
    api_call_free(&call);

    /* 16 minutes of skew. */
    fake.epoch_ms = DATE_MS + 16 * 60 * 1000;
    rq_init(&r, "GET", "/queues/q", NULL);
    rq_sign(&r);
    assert_int_equal(prepare(&r, &call, &ei), SMQ_E_TIME_EXPIRED);
    api_call_free(&call);
    fake.epoch_ms = DATE_MS + 14 * 60 * 1000;
    assert_int_equal(prepare(&r, &call, &ei), 0);
    api_call_free(&call);
    fake.epoch_ms = DATE_MS;
}

/* ================================ rendering ================================ */

struct render {
    struct rq r;
    struct api_call call;
    struct api_response resp;
};

static void render_init(struct render *x, enum mns_action action, enum smq_op_kind kind)
{
    rq_init(&x->r, "GET", "/queues/q", NULL);
    api_call_init(&x->call);
    x->call.action = action;
    op_set_kind(&x->call.op, kind);
    snprintf(x->call.op.queue, sizeof x->call.op.queue, "q");
    buf_init(&x->resp.body);
    x->resp.status = 0;
    x->resp.location[0] = '\0';
}

static void render_run(struct render *x)
{
    api_render(&ctx, &x->r.req, &x->call, RID, &x->resp);
}

static void render_free(struct render *x)
{
    api_call_free(&x->call);
    buf_free(&x->resp.body);
}

static void assert_body(const struct api_response *resp, const char *want)
{
    if (resp->body.len != strlen(want) || memcmp(resp->body.data, want, resp->body.len) != 0)
        fail_msg("body\n got: %.*s\nwant: %s", (int)resp->body.len,
                 resp->body.data ? resp->body.data : "", want);
}

static void assert_no_body(const struct api_response *resp)
{
    assert_int_equal(resp->body.len, 0);
}

static char *copy_str(const char *s)
{
    char *p = strdup(s);

    assert_non_null(p);
    return p;
}

static void fill_info(struct smq_queue_info *i, const char *name)
{
    memset(i, 0, sizeof *i);
    snprintf(i->name, sizeof i->name, "%s", name);
    mns_default_attrs(&i->attrs);
    i->create_s = 1704164645;
    i->modify_s = 1704164700;
    i->n_active = 3;
    i->n_inactive = 2;
    i->n_delayed = 1;
}

#define ATTRS_XML(name)                                                                        \
    "<QueueName>" name "</QueueName><CreateTime>1704164645</CreateTime>"                        \
    "<LastModifyTime>1704164700</LastModifyTime><DelaySeconds>0</DelaySeconds>"                 \
    "<MaximumMessageSize>65536</MaximumMessageSize>"                                            \
    "<MessageRetentionPeriod>345600</MessageRetentionPeriod>"                                   \
    "<VisibilityTimeout>30</VisibilityTimeout><PollingWaitSeconds>0</PollingWaitSeconds>"       \
    "<ActiveMessages>3</ActiveMessages><InactiveMessages>2</InactiveMessages>"                  \
    "<DelayMessages>1</DelayMessages><LoggingEnabled>False</LoggingEnabled>"

static void test_api_render_create_queue(void **state)
{
    struct render x;

    (void)state;
    render_init(&x, MNS_CREATE_QUEUE, SMQ_OP_CREATE_QUEUE);
    x.call.op.attrs.created = true;
    render_run(&x);
    assert_int_equal(x.resp.status, 201);
    assert_string_equal(x.resp.location, "http://" HOST "/queues/q");
    assert_no_body(&x.resp);
    render_free(&x);

    render_init(&x, MNS_CREATE_QUEUE, SMQ_OP_CREATE_QUEUE);
    x.call.op.attrs.created = false;                  /* same attributes: 204, still Location */
    render_run(&x);
    assert_int_equal(x.resp.status, 204);
    assert_string_equal(x.resp.location, "http://" HOST "/queues/q");
    assert_no_body(&x.resp);
    render_free(&x);
}

static void test_api_render_set_and_delete_queue(void **state)
{
    struct render x;

    (void)state;
    render_init(&x, MNS_SET_QUEUE_ATTRIBUTES, SMQ_OP_SET_QUEUE);
    render_run(&x);
    assert_int_equal(x.resp.status, 204);
    assert_no_body(&x.resp);
    assert_string_equal(x.resp.location, "");
    render_free(&x);

    render_init(&x, MNS_DELETE_QUEUE, SMQ_OP_DELETE_QUEUE);
    render_run(&x);
    assert_int_equal(x.resp.status, 204);
    assert_no_body(&x.resp);
    render_free(&x);
}

/* Every kind has its renderer in api.c's table; a kind the MNS API never
 * builds (admin, a publish until it is served, a push's outcome) answers 500
 * with no body, as before the table. */
static void test_api_render_every_kind_has_a_row(void **state)
{
    static const enum smq_op_kind unserved[] = {SMQ_OP_PURGE, SMQ_OP_STATS, SMQ_OP_REDRIVE,
                                                SMQ_OP_PUSH_RESULT};
    struct render x;

    (void)state;
    for (int k = 0; k < SMQ_OP_KIND_COUNT; k++)
        assert_true(api_has_kind((enum smq_op_kind)k));
    assert_false(api_has_kind((enum smq_op_kind)SMQ_OP_KIND_COUNT));
    for (size_t i = 0; i < sizeof unserved / sizeof unserved[0]; i++) {
        render_init(&x, MNS_UNKNOWN, unserved[i]);
        render_run(&x);
        assert_int_equal(x.resp.status, 500);
        assert_no_body(&x.resp);
        render_free(&x);
    }
}

static void test_api_render_get_queue_attributes(void **state)
{
    struct render x;

    (void)state;
    render_init(&x, MNS_GET_QUEUE_ATTRIBUTES, SMQ_OP_GET_QUEUE);
    fill_info(&x.call.op.info, "q");
    render_run(&x);
    assert_int_equal(x.resp.status, 200);
    assert_body(&x.resp, DECL "<Queue " NS ">" ATTRS_XML("q") "</Queue>");
    render_free(&x);

    /* Set values and LoggingEnabled True. */
    render_init(&x, MNS_GET_QUEUE_ATTRIBUTES, SMQ_OP_GET_QUEUE);
    fill_info(&x.call.op.info, "Q-2");
    x.call.op.info.attrs.delay_s = 604800;
    x.call.op.info.attrs.max_msg_size = 1024;
    x.call.op.info.attrs.retention_s = 60;
    x.call.op.info.attrs.visibility_s = 43200;
    x.call.op.info.attrs.polling_wait_s = 30;
    x.call.op.info.attrs.logging = 1;
    x.call.op.info.n_active = 0;
    render_run(&x);
    assert_body(&x.resp,
                DECL "<Queue " NS "><QueueName>Q-2</QueueName><CreateTime>1704164645</CreateTime>"
                "<LastModifyTime>1704164700</LastModifyTime><DelaySeconds>604800</DelaySeconds>"
                "<MaximumMessageSize>1024</MaximumMessageSize>"
                "<MessageRetentionPeriod>60</MessageRetentionPeriod>"
                "<VisibilityTimeout>43200</VisibilityTimeout><PollingWaitSeconds>30</PollingWaitSeconds>"
                "<ActiveMessages>0</ActiveMessages><InactiveMessages>2</InactiveMessages>"
                "<DelayMessages>1</DelayMessages><LoggingEnabled>True</LoggingEnabled></Queue>");
    render_free(&x);
}

static void fill_list(struct smq_op *op, size_t n)
{
    static const char *const names[] = {"a", "b", "c"};

    op->list.queues = calloc(n ? n : 1, sizeof *op->list.queues);
    assert_non_null(op->list.queues);
    for (size_t i = 0; i < n; i++)
        fill_info(&op->list.queues[i], names[i]);
    op->list.n_queues = n;
}

static void test_api_render_list_queue(void **state)
{
    struct render x;

    (void)state;
    render_init(&x, MNS_LIST_QUEUE, SMQ_OP_LIST_QUEUES);
    fill_list(&x.call.op, 2);
    render_run(&x);
    assert_int_equal(x.resp.status, 200);
    assert_body(&x.resp, DECL "<Queues " NS "><Queue><QueueURL>http://" HOST "/queues/a</QueueURL>"
                         "</Queue><Queue><QueueURL>http://" HOST "/queues/b</QueueURL></Queue>"
                         "</Queues>");
    render_free(&x);

    render_init(&x, MNS_LIST_QUEUE, SMQ_OP_LIST_QUEUES);
    fill_list(&x.call.op, 2);
    snprintf(x.call.op.list.next_marker, sizeof x.call.op.list.next_marker, "b");
    render_run(&x);
    assert_body(&x.resp, DECL "<Queues " NS "><Queue><QueueURL>http://" HOST "/queues/a</QueueURL>"
                         "</Queue><Queue><QueueURL>http://" HOST "/queues/b</QueueURL></Queue>"
                         "<NextMarker>b</NextMarker></Queues>");
    render_free(&x);

    render_init(&x, MNS_LIST_QUEUE, SMQ_OP_LIST_QUEUES);
    fill_list(&x.call.op, 0);
    render_run(&x);
    assert_int_equal(x.resp.status, 200);
    assert_body(&x.resp, DECL "<Queues " NS "></Queues>");
    render_free(&x);
}

static void test_api_render_list_queue_with_meta(void **state)
{
    struct render x;

    (void)state;
    render_init(&x, MNS_LIST_QUEUE, SMQ_OP_LIST_QUEUES);
    rq_add(&x.r, "x-mns-with-meta", "true");
    fill_list(&x.call.op, 2);
    snprintf(x.call.op.list.next_marker, sizeof x.call.op.list.next_marker, "c");
    render_run(&x);
    assert_body(&x.resp, DECL "<Queues " NS "><Queue><QueueURL>http://" HOST "/queues/a</QueueURL>"
                         ATTRS_XML("a") "</Queue><Queue><QueueURL>http://" HOST
                         "/queues/b</QueueURL>" ATTRS_XML("b") "</Queue>"
                         "<NextMarker>c</NextMarker></Queues>");
    render_free(&x);

    /* x-mns-with-meta: false is the plain shape. */
    render_init(&x, MNS_LIST_QUEUE, SMQ_OP_LIST_QUEUES);
    rq_add(&x.r, "x-mns-with-meta", "false");
    fill_list(&x.call.op, 1);
    render_run(&x);
    assert_body(&x.resp, DECL "<Queues " NS "><Queue><QueueURL>http://" HOST "/queues/a</QueueURL>"
                         "</Queue></Queues>");
    render_free(&x);
}

/* The raw MD5 the API keeps for a sent body, from its 32 hex digits. */
static void md5_from_hex(unsigned char out[CRYPTO_MD5_LEN], const char *hex)
{
    for (size_t i = 0; i < CRYPTO_MD5_LEN; i++) {
        unsigned int byte;
        assert_int_equal(sscanf(hex + 2 * i, "%2x", &byte), 1);
        out[i] = (unsigned char)byte;
    }
}

static void test_api_render_send_message(void **state)
{
    struct render x;

    (void)state;
    render_init(&x, MNS_SEND_MESSAGE, SMQ_OP_SEND);
    x.call.op.send.n = 1;
    x.call.op.send.seq[0] = 5;
    md5_from_hex(x.call.send_md5[0], CN_MD5);
    render_run(&x);
    assert_int_equal(x.resp.status, 201);
    assert_body(&x.resp, DECL "<Message " NS "><MessageId>" ID_PREFIX "0000000000000005</MessageId>"
                         "<MessageBodyMD5>" CN_MD5 "</MessageBodyMD5></Message>");
    render_free(&x);
}

static void test_api_render_batch_send_message(void **state)
{
    struct render x;

    (void)state;
    render_init(&x, MNS_BATCH_SEND_MESSAGE, SMQ_OP_SEND);
    x.call.op.send.n = 2;
    x.call.op.send.seq[0] = 0x10;
    x.call.op.send.seq[1] = 0xABCDEF;
    md5_from_hex(x.call.send_md5[0], CN_MD5);
    md5_from_hex(x.call.send_md5[1], "5D41402ABC4B2A76B9719D911017C592");
    render_run(&x);
    assert_int_equal(x.resp.status, 201);
    assert_body(&x.resp, DECL "<Messages " NS "><Message><MessageId>" ID_PREFIX
                         "0000000000000010</MessageId><MessageBodyMD5>" CN_MD5
                         "</MessageBodyMD5></Message><Message><MessageId>" ID_PREFIX
                         "0000000000ABCDEF</MessageId><MessageBodyMD5>"
                         "5D41402ABC4B2A76B9719D911017C592</MessageBodyMD5></Message></Messages>");
    render_free(&x);
}

static void test_api_render_prepared_send_round_trip(void **state)
{
    struct api_call call;
    struct api_response resp;
    struct rq r;
    char body[512];

    (void)state;
    message_body(body, sizeof body, CN_BODY, "<Priority>10</Priority>");
    run_ok(&call, "POST", "/queues/q/messages", body, MNS_SEND_MESSAGE, SMQ_OP_SEND);
    call.op.send.seq[0] = 1;
    rq_init(&r, "POST", "/queues/q/messages", body);
    buf_init(&resp.body);
    resp.location[0] = '\0';
    api_render(&ctx, &r.req, &call, RID, &resp);
    assert_int_equal(resp.status, 201);
    assert_body(&resp, DECL "<Message " NS "><MessageId>" ID_PREFIX "0000000000000001</MessageId>"
                       "<MessageBodyMD5>" CN_MD5 "</MessageBodyMD5></Message>");
    buf_free(&resp.body);
    api_call_free(&call);
}

/* Message i of op (0, 1, ... in order), its body appended to op->recv.body_block
 * the way the engine lays bodies out: one block, freed by op_release. */
static void fill_msg(struct smq_op *op, size_t i, uint64_t seq, const char *body)
{
    struct smq_msg_view *v = &op->recv.msgs[i];
    size_t at = 0, len = strlen(body);
    char *block;

    for (size_t k = 0; k < i; k++)
        at += op->recv.msgs[k].body_len;
    block = realloc(op->recv.body_block, at + len + 1);
    assert_non_null(block);
    op->recv.body_block = block;
    memcpy(block + at, body, len + 1);
    v->body_len = len;
    for (size_t k = 0, off = 0; k <= i; off += op->recv.msgs[k].body_len, k++)
        op->recv.msgs[k].body = block + off;
    v->seq = seq;
    v->handle_gen = 2;
    v->enqueue_ms = INT64_C(1716809414944);
    v->first_dequeue_ms = INT64_C(1716809420986);
    v->next_visible_ms = INT64_C(1716809470986);
    v->dequeue_count = 1;
    v->priority = 10;
}

/* The nine elements of a received message, docs/protocol.md §7.8 order. */
static void received_xml(char *out, size_t size, uint64_t seq, uint32_t gen, const char *md5,
                         const char *escaped_body)
{
    char h[HANDLE_TEXT_LEN + 1];

    valid_handle(seq, gen, h);
    snprintf(out, size,
             "<Message><MessageId>" ID_PREFIX "%016llX</MessageId><ReceiptHandle>%s</ReceiptHandle>"
             "<MessageBodyMD5>%s</MessageBodyMD5><MessageBody>%s</MessageBody>"
             "<EnqueueTime>1716809414944</EnqueueTime><NextVisibleTime>1716809470986</NextVisibleTime>"
             "<FirstDequeueTime>1716809420986</FirstDequeueTime><DequeueCount>1</DequeueCount>"
             "<Priority>10</Priority></Message>",
             (unsigned long long)seq, h, md5, escaped_body);
}

/* The seven elements of a peeked message. */
static void peeked_xml(char *out, size_t size, uint64_t seq, const char *md5,
                       const char *escaped_body)
{
    snprintf(out, size,
             "<Message><MessageId>" ID_PREFIX "%016llX</MessageId>"
             "<MessageBodyMD5>%s</MessageBodyMD5><MessageBody>%s</MessageBody>"
             "<EnqueueTime>1716809414944</EnqueueTime>"
             "<FirstDequeueTime>1716809420986</FirstDequeueTime><DequeueCount>1</DequeueCount>"
             "<Priority>10</Priority></Message>",
             (unsigned long long)seq, md5, escaped_body);
}

/* DECL + root with NS + inner, where inner starts with "<Message>" for a single message. */
static void doc_single(char *out, size_t size, const char *item)
{
    snprintf(out, size, DECL "<Message " NS ">%s", item + strlen("<Message>"));
}

static void test_api_render_receive_message(void **state)
{
    struct render x;
    char item[1024], want[1200];

    (void)state;
    render_init(&x, MNS_RECEIVE_MESSAGE, SMQ_OP_RECEIVE);
    fill_msg(&x.call.op, 0, 0x0A, CN_BODY);
    x.call.op.recv.n_msgs = 1;
    render_run(&x);
    assert_int_equal(x.resp.status, 200);
    received_xml(item, sizeof item, 0x0A, 2, CN_MD5, CN_BODY);
    doc_single(want, sizeof want, item);
    assert_body(&x.resp, want);
    render_free(&x);
}

/* A body's MD5 stored at send is rendered as stored (the body is not
 * hashed again); a row from before schema 3 has none and is hashed. */
static void test_api_render_receive_uses_stored_md5(void **state)
{
    struct render x;
    char item[1024], want[1200];

    (void)state;
    render_init(&x, MNS_RECEIVE_MESSAGE, SMQ_OP_RECEIVE);
    fill_msg(&x.call.op, 0, 0x0A, CN_BODY);
    /* Deliberately not CN_BODY's MD5, to see which one is rendered. */
    md5_from_hex(x.call.op.recv.msgs[0].body_md5.bytes, "5D41402ABC4B2A76B9719D911017C592");
    x.call.op.recv.msgs[0].body_md5.present = true;
    x.call.op.recv.n_msgs = 1;
    render_run(&x);
    received_xml(item, sizeof item, 0x0A, 2, "5D41402ABC4B2A76B9719D911017C592", CN_BODY);
    doc_single(want, sizeof want, item);
    assert_body(&x.resp, want);
    render_free(&x);
}

static void test_api_render_receive_escapes_body(void **state)
{
    struct render x;
    char item[1024], want[1200];

    (void)state;
    render_init(&x, MNS_RECEIVE_MESSAGE, SMQ_OP_RECEIVE);
    fill_msg(&x.call.op, 0, 1, "a&b<c>");
    x.call.op.recv.n_msgs = 1;
    render_run(&x);
    received_xml(item, sizeof item, 1, 2, "2C972F2D55C613B960178EA72493B0B7", "a&amp;b&lt;c&gt;");
    doc_single(want, sizeof want, item);
    assert_body(&x.resp, want);
    render_free(&x);
}

static void test_api_render_batch_receive_one_message(void **state)
{
    struct render x;
    char item[1024], want[1200];

    (void)state;
    render_init(&x, MNS_BATCH_RECEIVE_MESSAGE, SMQ_OP_RECEIVE);
    fill_msg(&x.call.op, 0, 3, CN_BODY);
    x.call.op.recv.n_msgs = 1;
    render_run(&x);
    assert_int_equal(x.resp.status, 200);
    received_xml(item, sizeof item, 3, 2, CN_MD5, CN_BODY);
    snprintf(want, sizeof want, DECL "<Messages " NS ">%s</Messages>", item);
    assert_body(&x.resp, want);
    render_free(&x);
}

static void test_api_render_batch_receive_two_messages(void **state)
{
    struct render x;
    char a[1024], b[1024], want[2400];

    (void)state;
    render_init(&x, MNS_BATCH_RECEIVE_MESSAGE, SMQ_OP_RECEIVE);
    fill_msg(&x.call.op, 0, 3, CN_BODY);
    fill_msg(&x.call.op, 1, 4, "hello");
    x.call.op.recv.msgs[1].handle_gen = 9;
    x.call.op.recv.n_msgs = 2;
    render_run(&x);
    received_xml(a, sizeof a, 3, 2, CN_MD5, CN_BODY);
    received_xml(b, sizeof b, 4, 9, "5D41402ABC4B2A76B9719D911017C592", "hello");
    snprintf(want, sizeof want, DECL "<Messages " NS ">%s%s</Messages>", a, b);
    assert_body(&x.resp, want);
    render_free(&x);
}

static void test_api_render_peek_message(void **state)
{
    struct render x;
    char item[1024], want[1200];

    (void)state;
    render_init(&x, MNS_PEEK_MESSAGE, SMQ_OP_PEEK);
    fill_msg(&x.call.op, 0, 0x0B, CN_BODY);
    x.call.op.recv.n_msgs = 1;
    render_run(&x);
    assert_int_equal(x.resp.status, 200);
    peeked_xml(item, sizeof item, 0x0B, CN_MD5, CN_BODY);
    doc_single(want, sizeof want, item);
    assert_body(&x.resp, want);
    assert_null(strstr(x.resp.body.data, "ReceiptHandle"));
    assert_null(strstr(x.resp.body.data, "NextVisibleTime"));
    render_free(&x);
}

static void test_api_render_batch_peek(void **state)
{
    struct render x;
    char a[1024], b[1024], want[2400];

    (void)state;
    render_init(&x, MNS_BATCH_PEEK_MESSAGE, SMQ_OP_PEEK);
    fill_msg(&x.call.op, 0, 1, "hello");
    fill_msg(&x.call.op, 1, 2, CN_BODY);
    x.call.op.recv.n_msgs = 2;
    render_run(&x);
    peeked_xml(a, sizeof a, 1, "5D41402ABC4B2A76B9719D911017C592", "hello");
    peeked_xml(b, sizeof b, 2, CN_MD5, CN_BODY);
    snprintf(want, sizeof want, DECL "<Messages " NS ">%s%s</Messages>", a, b);
    assert_body(&x.resp, want);
    render_free(&x);

    /* One peeked message asked for with numOfMessages: still <Messages>. */
    render_init(&x, MNS_BATCH_PEEK_MESSAGE, SMQ_OP_PEEK);
    fill_msg(&x.call.op, 0, 1, "hello");
    x.call.op.recv.n_msgs = 1;
    render_run(&x);
    snprintf(want, sizeof want, DECL "<Messages " NS ">%s</Messages>", a);
    assert_body(&x.resp, want);
    render_free(&x);
}

static void test_api_render_delete_message(void **state)
{
    struct render x;

    (void)state;
    render_init(&x, MNS_DELETE_MESSAGE, SMQ_OP_DELETE_MSG);
    x.call.op.del.n = 1;
    render_run(&x);
    assert_int_equal(x.resp.status, 204);
    assert_no_body(&x.resp);
    render_free(&x);
}

static void add_batch_handle(struct render *x, const char *text, int err)
{
    size_t i = x->call.handles.n++;

    x->call.handles.handles[i] = copy_str(text);
    x->call.op.del.refs[i].err = err;
    x->call.op.del.n = x->call.handles.n;
}

static void test_api_render_batch_delete_partial(void **state)
{
    struct render x;

    (void)state;
    render_init(&x, MNS_BATCH_DELETE_MESSAGE, SMQ_OP_DELETE_MSG);
    add_batch_handle(&x, "okhandle", 0);
    add_batch_handle(&x, "stale-handle", SMQ_E_MESSAGE_NOT_EXIST);
    add_batch_handle(&x, "garbage", SMQ_E_RECEIPT_HANDLE_ERROR);
    add_batch_handle(&x, "fine", 0);
    render_run(&x);
    assert_int_equal(x.resp.status, 404);
    assert_body(&x.resp, DECL "<Errors " NS "><Error><ErrorCode>MessageNotExist</ErrorCode>"
                         "<ErrorMessage>Message not exist.</ErrorMessage>"
                         "<ReceiptHandle>stale-handle</ReceiptHandle></Error>"
                         "<Error><ErrorCode>ReceiptHandleError</ErrorCode>"
                         "<ErrorMessage>The receipt handle you provide is not valid.</ErrorMessage>"
                         "<ReceiptHandle>garbage</ReceiptHandle></Error></Errors>");
    render_free(&x);
}

static void test_api_render_batch_delete_all_failed_and_empty_text(void **state)
{
    struct render x;

    (void)state;
    render_init(&x, MNS_BATCH_DELETE_MESSAGE, SMQ_OP_DELETE_MSG);
    add_batch_handle(&x, "", SMQ_E_RECEIPT_HANDLE_ERROR);
    add_batch_handle(&x, "a<b", SMQ_E_RECEIPT_HANDLE_ERROR);
    render_run(&x);
    assert_int_equal(x.resp.status, 404);
    /* Each item keeps three non-empty elements (docs/protocol.md §7.12). */
    assert_body(&x.resp, DECL "<Errors " NS "><Error><ErrorCode>ReceiptHandleError</ErrorCode>"
                         "<ErrorMessage>The receipt handle you provide is not valid.</ErrorMessage>"
                         "<ReceiptHandle>(empty)</ReceiptHandle></Error>"
                         "<Error><ErrorCode>ReceiptHandleError</ErrorCode>"
                         "<ErrorMessage>The receipt handle you provide is not valid.</ErrorMessage>"
                         "<ReceiptHandle>a&lt;b</ReceiptHandle></Error></Errors>");
    render_free(&x);
}

static void test_api_render_batch_delete_all_ok(void **state)
{
    struct render x;

    (void)state;
    render_init(&x, MNS_BATCH_DELETE_MESSAGE, SMQ_OP_DELETE_MSG);
    add_batch_handle(&x, "h1", 0);
    add_batch_handle(&x, "h2", 0);
    render_run(&x);
    assert_int_equal(x.resp.status, 204);
    assert_no_body(&x.resp);
    render_free(&x);
}

static void test_api_render_batch_delete_request_error(void **state)
{
    struct render x;

    (void)state;
    render_init(&x, MNS_BATCH_DELETE_MESSAGE, SMQ_OP_DELETE_MSG);
    add_batch_handle(&x, "h1", SMQ_E_MESSAGE_NOT_EXIST);
    errors_set(&x.call.op.result, SMQ_E_QUEUE_NOT_EXIST, NULL);
    render_run(&x);
    assert_int_equal(x.resp.status, 404);
    assert_body(&x.resp, DECL "<Error " NS "><Code>QueueNotExist</Code>"
                         "<Message>The queue name you provided is not exist.</Message>"
                         "<RequestId>" RID "</RequestId><HostId>http://" HOST "</HostId></Error>");
    render_free(&x);
}

static void test_api_render_change_visibility(void **state)
{
    struct render x;
    char h[HANDLE_TEXT_LEN + 1], want[512];

    (void)state;
    render_init(&x, MNS_CHANGE_MESSAGE_VISIBILITY, SMQ_OP_CHANGE_VISIBILITY);
    x.call.op.vis.ref.seq = 77;
    x.call.op.vis.ref.gen = 3;
    x.call.op.vis.new_gen = 4;
    x.call.op.vis.next_visible_ms = INT64_C(1704164705000);
    render_run(&x);
    assert_int_equal(x.resp.status, 200);
    valid_handle(77, 4, h);                    /* the new generation, not the old */
    snprintf(want, sizeof want,
             DECL "<ChangeVisibility " NS "><ReceiptHandle>%s</ReceiptHandle>"
             "<NextVisibleTime>1704164705000</NextVisibleTime></ChangeVisibility>", h);
    assert_body(&x.resp, want);
    render_free(&x);
}

static void test_api_render_op_error(void **state)
{
    struct render x;

    (void)state;
    render_init(&x, MNS_RECEIVE_MESSAGE, SMQ_OP_RECEIVE);
    errors_set(&x.call.op.result, SMQ_E_MESSAGE_NOT_EXIST, NULL);
    render_run(&x);
    assert_int_equal(x.resp.status, 404);
    assert_body(&x.resp, DECL "<Error " NS "><Code>MessageNotExist</Code>"
                         "<Message>Message not exist.</Message>"
                         "<RequestId>" RID "</RequestId><HostId>http://" HOST "</HostId></Error>");
    render_free(&x);

    render_init(&x, MNS_CREATE_QUEUE, SMQ_OP_CREATE_QUEUE);
    errors_set(&x.call.op.result, SMQ_E_QUEUE_ALREADY_EXIST, "The queue %s differs.", "q");
    render_run(&x);
    assert_int_equal(x.resp.status, 409);
    assert_string_equal(x.resp.location, "");
    assert_body(&x.resp, DECL "<Error " NS "><Code>QueueAlreadyExist</Code>"
                         "<Message>The queue q differs.</Message>"
                         "<RequestId>" RID "</RequestId><HostId>http://" HOST "</HostId></Error>");
    render_free(&x);
}

static void test_api_render_error_document(void **state)
{
    struct rq r;
    struct api_response resp;
    struct smq_errinfo ei = {0};

    (void)state;
    rq_init(&r, "GET", "/queues/q", NULL);
    r.req.host = "1234567890123456.mns.cn-hangzhou.aliyuncs.com";
    buf_init(&resp.body);
    buf_puts(&resp.body, "stale bytes");
    errors_set(&ei, SMQ_E_QUEUE_NOT_EXIST, NULL);
    api_render_error(&r.req, &ei, RID, &resp);
    assert_int_equal(resp.status, 404);
    /* Protocol docs/protocol.md §8.1, byte for byte (namespace without a trailing slash). */
    assert_body(&resp, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
                       "<Error xmlns=\"http://mns.aliyuncs.com/doc/v1\"><Code>QueueNotExist</Code>"
                       "<Message>The queue name you provided is not exist.</Message>"
                       "<RequestId>512B2A634403E52B1956133E</RequestId>"
                       "<HostId>http://1234567890123456.mns.cn-hangzhou.aliyuncs.com</HostId></Error>");
    buf_free(&resp.body);
}

static void test_api_render_error_escapes_message(void **state)
{
    struct rq r;
    struct api_response resp;
    struct smq_errinfo ei = {0};

    (void)state;
    rq_init(&r, "GET", "/queues/q", NULL);
    buf_init(&resp.body);
    errors_set(&ei, SMQ_E_SIGNATURE_MISMATCH, "StringToSign: \"GET\\n<&>\"");
    api_render_error(&r.req, &ei, "R1", &resp);
    assert_int_equal(resp.status, 403);
    assert_body(&resp, DECL "<Error " NS "><Code>SignatureDoesNotMatch</Code>"
                       "<Message>StringToSign: \"GET\\n&lt;&amp;&gt;\"</Message>"
                       "<RequestId>R1</RequestId><HostId>http://" HOST "</HostId></Error>");
    buf_free(&resp.body);
}

static void test_api_render_error_statuses(void **state)
{
    struct rq r;
    struct api_response resp;
    struct smq_errinfo ei = {0};
    const int errs[] = {SMQ_E_TIME_EXPIRED, SMQ_E_INVALID_ACCESS_KEY_ID, SMQ_E_INTERNAL,
                        SMQ_E_INVALID_ARGUMENT, 12345};
    const int statuses[] = {408, 403, 500, 400, 500};

    (void)state;
    rq_init(&r, "GET", "/queues/q", NULL);
    buf_init(&resp.body);
    for (size_t i = 0; i < sizeof errs / sizeof errs[0]; i++) {
        errors_set(&ei, errs[i], NULL);
        api_render_error(&r.req, &ei, RID, &resp);
        assert_int_equal(resp.status, statuses[i]);
        assert_non_null(strstr(resp.body.data, "<Code>"));
        assert_int_equal(strncmp(resp.body.data, DECL "<Error " NS "><Code>",
                                 strlen(DECL "<Error " NS "><Code>")), 0);
    }
    buf_free(&resp.body);
}

/* query_path_segment: the decoding of a name in a path, bounded by its output. */
static void test_api_query_path_segment(void **state)
{
    char out[8];

    (void)state;
    assert_int_equal(query_path_segment("a%2Fb+c", 7, out, sizeof out), 0);
    assert_string_equal(out, "a/b+c");
    assert_int_equal(query_path_segment("abcdefgh", 7, out, sizeof out), 0);
    assert_string_equal(out, "abcdefg");
    assert_int_equal(query_path_segment("abcdefgh", 8, out, sizeof out), -1);
    assert_int_equal(query_path_segment("%61%62%63%64%65%66%67", 21, out, sizeof out), 0);
    assert_string_equal(out, "abcdefg");
    assert_int_equal(query_path_segment("", 0, out, sizeof out), 0);
    assert_string_equal(out, "");
    assert_int_equal(query_path_segment("a%00", 4, out, sizeof out), -1);
    assert_int_equal(query_path_segment("a%0", 3, out, sizeof out), -1);
    assert_int_equal(query_path_segment("a%", 2, out, sizeof out), -1);
    assert_int_equal(query_path_segment("a%g1", 4, out, sizeof out), -1);
    /* len ends the segment, even inside an escape. */
    assert_int_equal(query_path_segment("a%41", 3, out, sizeof out), -1);
    assert_int_equal(query_path_segment("a\0b", 3, out, sizeof out), -1);
    assert_int_equal(query_path_segment("a", 1, out, 1), -1);
}

/* ================================ topics (docs/protocol.md §13) ================================ */

#define TOPIC_URL "http://" HOST "/topics/"
#define Q_EP "acs:mns:cn-hangzhou:1000000000000000:queues/"

static void sub_body(char *out, size_t size, const char *children)
{
    snprintf(out, size, DECL "<Subscription " REQ_NS ">%s</Subscription>", children);
}

static void topic_body(char *out, size_t size, const char *children)
{
    snprintf(out, size, DECL "<Topic " REQ_NS ">%s</Topic>", children);
}

/* A name of n characters: 'a' then digits. */
static void long_name(char *out, size_t n)
{
    out[0] = 'a';
    for (size_t i = 1; i < n; i++)
        out[i] = (char)('0' + i % 10);
    out[n] = '\0';
}

/* Every route of §13.1 with the action, kind and names it decides. */
static void test_api_topic_routes(void **state)
{
    struct api_call call;
    char body[256];

    (void)state;
    run_ok(&call, "GET", "/topics", NULL, MNS_LIST_TOPIC, SMQ_OP_LIST_TOPICS);
    api_call_free(&call);
    run_ok(&call, "GET", "/topics/", NULL, MNS_LIST_TOPIC, SMQ_OP_LIST_TOPICS);
    api_call_free(&call);
    run_ok(&call, "PUT", "/topics/t1", NULL, MNS_CREATE_TOPIC, SMQ_OP_CREATE_TOPIC);
    assert_string_equal(call.op.queue, "t1");
    api_call_free(&call);
    run_ok(&call, "PUT", "/topics/t1?metaoverride=false", NULL, MNS_CREATE_TOPIC,
           SMQ_OP_CREATE_TOPIC);
    api_call_free(&call);
    run_ok(&call, "PUT", "/topics/t1?metaoverride=TRUE", NULL, MNS_SET_TOPIC_ATTRIBUTES,
           SMQ_OP_SET_TOPIC);
    api_call_free(&call);
    run_ok(&call, "GET", "/topics/t1", NULL, MNS_GET_TOPIC_ATTRIBUTES, SMQ_OP_GET_TOPIC);
    assert_string_equal(call.op.queue, "t1");
    api_call_free(&call);
    run_ok(&call, "DELETE", "/topics/t1", NULL, MNS_DELETE_TOPIC, SMQ_OP_DELETE_TOPIC);
    api_call_free(&call);
    run_ok(&call, "GET", "/topics/t1/subscriptions", NULL, MNS_LIST_SUBSCRIPTION_BY_TOPIC,
           SMQ_OP_LIST_SUBSCRIPTIONS);
    assert_string_equal(call.op.queue, "t1");
    api_call_free(&call);
    run_ok(&call, "GET", "/topics/t1/subscriptions/", NULL, MNS_LIST_SUBSCRIPTION_BY_TOPIC,
           SMQ_OP_LIST_SUBSCRIPTIONS);
    api_call_free(&call);

    sub_body(body, sizeof body, "<Endpoint>http://h/x</Endpoint>");
    run_ok(&call, "PUT", "/topics/t1/subscriptions/s1", body, MNS_SUBSCRIBE, SMQ_OP_SUBSCRIBE);
    assert_string_equal(call.op.queue, "t1");
    assert_string_equal(call.op.sub.name, "s1");
    api_call_free(&call);
    sub_body(body, sizeof body, "<NotifyStrategy>BACKOFF_RETRY</NotifyStrategy>");
    run_ok(&call, "PUT", "/topics/t1/subscriptions/s1?metaoverride=true", body,
           MNS_SET_SUBSCRIPTION_ATTRIBUTES, SMQ_OP_SET_SUBSCRIPTION);
    assert_string_equal(call.op.sub.name, "s1");
    api_call_free(&call);
    run_ok(&call, "GET", "/topics/t1/subscriptions/s1", NULL, MNS_GET_SUBSCRIPTION_ATTRIBUTES,
           SMQ_OP_GET_SUBSCRIPTION);
    assert_string_equal(call.op.queue, "t1");
    assert_string_equal(call.op.sub.name, "s1");
    api_call_free(&call);
    run_ok(&call, "DELETE", "/topics/t1/subscriptions/s1?x=1", NULL, MNS_UNSUBSCRIBE,
           SMQ_OP_UNSUBSCRIBE);
    assert_string_equal(call.op.sub.name, "s1");
    api_call_free(&call);

    /* Names are percent-decoded; topics and queues are separate name spaces. */
    run_ok(&call, "GET", "/topics/%74op-1/subscriptions/%53ub", NULL,
           MNS_GET_SUBSCRIPTION_ATTRIBUTES, SMQ_OP_GET_SUBSCRIPTION);
    assert_string_equal(call.op.queue, "top-1");
    assert_string_equal(call.op.sub.name, "Sub");
    api_call_free(&call);
}

/* Every other combination under /topics is InvalidRequestURL (§13.1). */
static void test_api_topic_invalid_urls(void **state)
{
    static const char *const cases[][2] = {
        {"POST", "/topics/t"}, {"HEAD", "/topics/t"}, {"POST", "/topics"}, {"PUT", "/topics"},
        {"DELETE", "/topics"}, {"PUT", "/topics/t/messages"}, {"GET", "/topics/t/messages"},
        {"DELETE", "/topics/t/messages"}, {"GET", "/topics/t/"}, {"PUT", "/topics/t/"},
        {"POST", "/topics/t/messages/"}, {"POST", "/topics/t/messages/x"},
        {"GET", "/topics/t/subscriptions/s/"}, {"GET", "/topics/t/subscriptions/s/x"},
        {"GET", "/topics/t/subscriptions//"}, {"GET", "/topics/t/subscriptionsX"},
        {"GET", "/topics/t/subscription"}, {"GET", "/topics/t/other"}, {"GET", "/topicsX"},
        {"GET", "/Topics/t"}, {"POST", "/topics/t/subscriptions"},
        {"PUT", "/topics/t/subscriptions"}, {"DELETE", "/topics/t/subscriptions"},
        {"POST", "/topics/t/subscriptions/s"}, {"get", "/topics/t"},
        {"GET", "/topics/t/messages?metaoverride=true"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_err(cases[i][0], cases[i][1], NULL, SMQ_E_INVALID_REQUEST_URL);
}

/* Names per §13.2 with the topic and subscription codes, each limit at and past its edge. */
static void test_api_topic_names(void **state)
{
    char name[130], target[400];
    struct api_call call;

    (void)state;
    long_name(name, 120);
    snprintf(target, sizeof target, "/topics/%s/subscriptions/%s", name, name);
    run_ok(&call, "GET", target, NULL, MNS_GET_SUBSCRIPTION_ATTRIBUTES, SMQ_OP_GET_SUBSCRIPTION);
    assert_string_equal(call.op.queue, name);
    assert_string_equal(call.op.sub.name, name);
    api_call_free(&call);

    long_name(name, 121);
    snprintf(target, sizeof target, "/topics/%s", name);
    run_err("GET", target, NULL, SMQ_E_TOPIC_NAME_LENGTH);
    snprintf(target, sizeof target, "/topics/t/subscriptions/%s", name);
    run_err("GET", target, NULL, SMQ_E_SUBSCRIPTION_NAME_LENGTH);
    run_err("GET", "/topics//subscriptions", NULL, SMQ_E_TOPIC_NAME_LENGTH);
    run_err("PUT", "/topics//subscriptions/s", NULL, SMQ_E_TOPIC_NAME_LENGTH);

    run_err_msg("GET", "/topics/-a", NULL, SMQ_E_TOPIC_NAME_INVALID,
                "The topic name must start with a letter or a digit.");
    run_err_msg("GET", "/topics/a_b", NULL, SMQ_E_TOPIC_NAME_INVALID,
                "The topic name may contain only letters, digits and '-'.");
    /* %2F decodes into the name and does not split the path. */
    run_err("GET", "/topics/a%2Fsubscriptions", NULL, SMQ_E_TOPIC_NAME_INVALID);
    run_err("GET", "/topics/a%zz", NULL, SMQ_E_TOPIC_NAME_INVALID);
    run_err("GET", "/topics/a%00", NULL, SMQ_E_TOPIC_NAME_INVALID);
    run_err("GET", "/topics/a%", NULL, SMQ_E_TOPIC_NAME_INVALID);
    run_err_msg("DELETE", "/topics/t/subscriptions/_s", NULL, SMQ_E_SUBSCRIPTION_NAME_INVALID,
                "The subscription name must start with a letter or a digit.");
    run_err("DELETE", "/topics/t/subscriptions/s%2Fx", NULL, SMQ_E_SUBSCRIPTION_NAME_INVALID);
    run_err("DELETE", "/topics/t/subscriptions/s.x", NULL, SMQ_E_SUBSCRIPTION_NAME_INVALID);
    /* The topic's name is judged before the subscription's. */
    run_err("GET", "/topics/a.b/subscriptions/_s", NULL, SMQ_E_TOPIC_NAME_INVALID);
    /* A name of 120 escaped characters is still 120 characters. */
    memset(target, 0, sizeof target);
    strcpy(target, "/topics/");
    for (int i = 0; i < 120; i++)
        strcat(target, "%61");
    run_ok(&call, "DELETE", target, NULL, MNS_DELETE_TOPIC, SMQ_OP_DELETE_TOPIC);
    assert_int_equal(strlen(call.op.queue), 120);
    api_call_free(&call);
    strcat(target, "%61");
    run_err("DELETE", target, NULL, SMQ_E_TOPIC_NAME_LENGTH);
}

static void topic_size(long long v, int want_rc)
{
    struct api_call call;
    struct smq_errinfo ei;
    char body[256], elem[96];

    snprintf(elem, sizeof elem, "<MaximumMessageSize>%lld</MaximumMessageSize>", v);
    topic_body(body, sizeof body, elem);
    assert_int_equal(run(&call, &ei, "PUT", "/topics/t", body), want_rc);
    if (want_rc == 0) {
        assert_int_equal(call.op.topic.present, SMQ_TATTR_MAX_MSG_SIZE);
        assert_int_equal(call.op.topic.values.max_msg_size, v);
    } else {
        assert_string_equal(errors_message(&ei),
                            "The value of MaximumMessageSize should between 1024 and 65536 bytes.");
    }
    api_call_free(&call);
}

/* <Topic> (§13.4.1, §13.4.2): the range, booleans in any case, retention ignored. */
static void test_api_topic_attributes(void **state)
{
    struct api_call call;
    char body[256];

    (void)state;
    topic_size(1024, 0);
    topic_size(65536, 0);
    topic_size(1023, SMQ_E_INVALID_ARGUMENT);
    topic_size(65537, SMQ_E_INVALID_ARGUMENT);

    /* No body: the defaults. */
    run_ok(&call, "PUT", "/topics/t", NULL, MNS_CREATE_TOPIC, SMQ_OP_CREATE_TOPIC);
    assert_int_equal(call.op.topic.present, 0);
    assert_int_equal(call.op.topic.values.max_msg_size, 65536);
    assert_int_equal(call.op.topic.values.logging, 0);
    api_call_free(&call);

    topic_body(body, sizeof body, "<LoggingEnabled>TRUE</LoggingEnabled>"
               "<MessageRetentionPeriod>60</MessageRetentionPeriod>");
    run_ok(&call, "PUT", "/topics/t?metaoverride=true", body, MNS_SET_TOPIC_ATTRIBUTES,
           SMQ_OP_SET_TOPIC);
    assert_int_equal(call.op.topic.present, SMQ_TATTR_LOGGING);
    assert_int_equal(call.op.topic.values.logging, 1);
    api_call_free(&call);
    topic_body(body, sizeof body, "<LoggingEnabled> false </LoggingEnabled>"
               "<MaximumMessageSize>2048</MaximumMessageSize>");
    run_ok(&call, "PUT", "/topics/t", body, MNS_CREATE_TOPIC, SMQ_OP_CREATE_TOPIC);
    assert_int_equal(call.op.topic.present, SMQ_TATTR_LOGGING | SMQ_TATTR_MAX_MSG_SIZE);
    assert_int_equal(call.op.topic.values.logging, 0);
    assert_int_equal(call.op.topic.values.max_msg_size, 2048);
    api_call_free(&call);

    topic_body(body, sizeof body, "<LoggingEnabled>yes</LoggingEnabled>");
    run_err("PUT", "/topics/t", body, SMQ_E_INVALID_ARGUMENT);
    topic_body(body, sizeof body, "<MaximumMessageSize>big</MaximumMessageSize>");
    run_err("PUT", "/topics/t", body, SMQ_E_INVALID_ARGUMENT);
    run_err("PUT", "/topics/t", "<Queue><LoggingEnabled>True</LoggingEnabled></Queue>",
            SMQ_E_MALFORMED_XML);
    run_err("PUT", "/topics/t", "not xml", SMQ_E_MALFORMED_XML);
    run_err("PUT", "/topics/t?metaoverride=true", "<Topic>", SMQ_E_MALFORMED_XML);
}

/* Subscribe's <Subscription> (§13.6.1): values trimmed and matched in any case. */
static void test_api_subscribe_body(void **state)
{
    struct api_call call;
    char body[512];

    (void)state;
    sub_body(body, sizeof body, "<NotifyStrategy> exponential_decay_retry </NotifyStrategy>"
             "<Endpoint>\n " Q_EP "q1 \t</Endpoint><FilterTag>important</FilterTag>"
             "<NotifyContentFormat>json</NotifyContentFormat>");
    run_ok(&call, "PUT", "/topics/t/subscriptions/s", body, MNS_SUBSCRIBE, SMQ_OP_SUBSCRIBE);
    assert_int_equal(call.op.sub.present, SMQ_SATTR_ENDPOINT | SMQ_SATTR_FILTER_TAG
                                              | SMQ_SATTR_STRATEGY | SMQ_SATTR_FORMAT);
    assert_string_equal(call.op.sub.values.endpoint, Q_EP "q1");
    assert_string_equal(call.op.sub.values.filter_tag, "important");
    assert_int_equal(call.op.sub.values.strategy, SMQ_NOTIFY_EXPONENTIAL_DECAY_RETRY);
    assert_int_equal(call.op.sub.values.format, SMQ_NOTIFY_JSON);
    api_call_free(&call);

    /* Only the Endpoint: the defaults; empty optional elements are not given. */
    sub_body(body, sizeof body, "<Endpoint>HTTP://example.com:8080/hook?a=1</Endpoint>"
             "<FilterTag></FilterTag><NotifyStrategy/><NotifyContentFormat> </NotifyContentFormat>");
    run_ok(&call, "PUT", "/topics/t/subscriptions/s", body, MNS_SUBSCRIBE, SMQ_OP_SUBSCRIBE);
    assert_int_equal(call.op.sub.present, SMQ_SATTR_ENDPOINT);
    assert_string_equal(call.op.sub.values.endpoint, "HTTP://example.com:8080/hook?a=1");
    assert_string_equal(call.op.sub.values.filter_tag, "");
    assert_int_equal(call.op.sub.values.strategy, SMQ_NOTIFY_BACKOFF_RETRY);
    assert_int_equal(call.op.sub.values.format, SMQ_NOTIFY_XML);
    api_call_free(&call);

    sub_body(body, sizeof body, "<Endpoint>http://h/</Endpoint>"
             "<NotifyContentFormat>Simplified</NotifyContentFormat>");
    run_ok(&call, "PUT", "/topics/t/subscriptions/s", body, MNS_SUBSCRIBE, SMQ_OP_SUBSCRIBE);
    assert_int_equal(call.op.sub.values.format, SMQ_NOTIFY_SIMPLIFIED);
    api_call_free(&call);
}

static void subscribe_expect(const char *children, int err)
{
    struct api_call call;
    struct smq_errinfo ei;
    char body[2400];
    int rc;

    sub_body(body, sizeof body, children);
    rc = run(&call, &ei, "PUT", "/topics/t/subscriptions/s", body);
    if (rc != err)
        fail_msg("%s: got %d (%s), want %d", children, rc, rc ? errors_message(&ei) : "ok", err);
    api_call_free(&call);
}

static void subscribe_endpoint_of(size_t len, int err)
{
    char children[2200], ep[1100];

    memset(ep, 'a', len);
    memcpy(ep, "http://h/", 9);
    ep[len] = '\0';
    snprintf(children, sizeof children, "<Endpoint> %s </Endpoint>", ep);
    subscribe_expect(children, err);
}

static void subscribe_filter(const char *tag, int err)
{
    char children[512];

    snprintf(children, sizeof children, "<Endpoint>http://h/</Endpoint><FilterTag>%s</FilterTag>",
             tag);
    subscribe_expect(children, err);
}

#define CN4 "\xe6\xb5\x8b\xe8\xaf\x95\xe5\xad\x97\xe7\xac\xa6"     /* 4 code points, 12 bytes */

static void test_api_subscribe_errors(void **state)
{
    (void)state;
    run_err("PUT", "/topics/t/subscriptions/s", NULL, SMQ_E_MALFORMED_XML);
    run_err("PUT", "/topics/t/subscriptions/s?metaoverride=true", NULL, SMQ_E_MALFORMED_XML);
    run_err("PUT", "/topics/t/subscriptions/s", "<Topic><Endpoint>http://h/</Endpoint></Topic>",
            SMQ_E_MALFORMED_XML);
    subscribe_expect("<Endpoint>http://h/</Endpoint><Endpoint>http://h/</Endpoint>",
                     SMQ_E_MALFORMED_XML);
    subscribe_expect("", SMQ_E_ENDPOINT_INVALID);
    subscribe_expect("<Endpoint> </Endpoint>", SMQ_E_ENDPOINT_INVALID);
    subscribe_expect("<Endpoint>mail:directmail:a@b.c</Endpoint>", SMQ_E_ENDPOINT_INVALID);
    subscribe_expect("<Endpoint>" Q_EP "-bad</Endpoint>", SMQ_E_ENDPOINT_INVALID);
    subscribe_expect("<Endpoint>http://u@h/</Endpoint>", SMQ_E_ENDPOINT_INVALID);
    subscribe_expect("<Endpoint><a>http://h/</a></Endpoint>", SMQ_E_INVALID_ARGUMENT);
    /* 1024 bytes of Endpoint, blanks around it not counted. */
    subscribe_endpoint_of(1024, 0);
    subscribe_endpoint_of(1025, SMQ_E_ENDPOINT_INVALID);
    /* FilterTag: 1..16 code points. */
    subscribe_filter("abcdefghijklmnop", 0);
    subscribe_filter("abcdefghijklmnopq", SMQ_E_INVALID_ARGUMENT);
    subscribe_filter(CN4 CN4 CN4 CN4, 0);
    subscribe_filter(CN4 CN4 CN4 CN4 "x", SMQ_E_INVALID_ARGUMENT);
    subscribe_filter(CN4 CN4 CN4 CN4 CN4 CN4, SMQ_E_INVALID_ARGUMENT);
    subscribe_expect("<Endpoint>http://h/</Endpoint><NotifyStrategy>STREAM</NotifyStrategy>",
                     SMQ_E_INVALID_ARGUMENT);
    subscribe_expect("<Endpoint>http://h/</Endpoint><NotifyStrategy>BACKOFF_RETRY_BACKOFF_RETRY_"
                     "BACKOFF_RETRY</NotifyStrategy>", SMQ_E_INVALID_ARGUMENT);
    subscribe_expect("<Endpoint>http://h/</Endpoint><NotifyContentFormat>XMLS"
                     "</NotifyContentFormat>", SMQ_E_INVALID_ARGUMENT);
    run_err_msg("PUT", "/topics/t/subscriptions/s",
                "<Subscription><Endpoint>http://h/</Endpoint><NotifyStrategy>x</NotifyStrategy>"
                "</Subscription>", SMQ_E_INVALID_ARGUMENT,
                "The value of NotifyStrategy should be BACKOFF_RETRY or EXPONENTIAL_DECAY_RETRY.");
    run_err_msg("PUT", "/topics/t/subscriptions/s",
                "<Subscription><Endpoint>http://h/</Endpoint><FilterTag>abcdefghijklmnopq"
                "</FilterTag></Subscription>", SMQ_E_INVALID_ARGUMENT,
                "The value of FilterTag should have at most 16 characters.");
}

/* A subscription's dead-letter policy (§13.13), nested or flat. */
static void sub_dlq_ok(const char *dlq, bool enabled, const char *target)
{
    struct api_call call;
    char children[512], body[700];

    snprintf(children, sizeof children, "<Endpoint>http://h/</Endpoint>%s", dlq);
    sub_body(body, sizeof body, children);
    run_ok(&call, "PUT", "/topics/t/subscriptions/s?metaoverride=true", body,
           MNS_SET_SUBSCRIPTION_ATTRIBUTES, SMQ_OP_SET_SUBSCRIPTION);
    assert_true(call.op.sub.present & SMQ_SATTR_DLQ);
    assert_int_equal(call.op.sub.values.dlq.enabled, enabled);
    assert_string_equal(call.op.sub.values.dlq.target, target);
    api_call_free(&call);
}

static void sub_dlq_err(const char *dlq, int err)
{
    char children[512];

    snprintf(children, sizeof children, "<Endpoint>http://h/</Endpoint>%s", dlq);
    subscribe_expect(children, err);
}

static void test_api_subscription_dlq_policy(void **state)
{
    char dlq[400], name[130];
    struct api_call call;
    char body[256];

    (void)state;
    sub_dlq_ok("<DlqPolicy><Enabled>true</Enabled><DeadLetterTargetQueue>hook-dlq"
               "</DeadLetterTargetQueue></DlqPolicy>", true, "hook-dlq");
    sub_dlq_ok("<DlqPolicy><DeadLetterTargetQueue>hook-dlq</DeadLetterTargetQueue></DlqPolicy>",
               true, "hook-dlq");
    sub_dlq_ok("<DlqEnabled>True</DlqEnabled><DlqTargetQueue>hook-dlq</DlqTargetQueue>", true,
               "hook-dlq");
    sub_dlq_ok("<DlqTargetQueue>hook-dlq</DlqTargetQueue>", true, "hook-dlq");
    /* Only Enabled=false clears, whatever else is given. */
    sub_dlq_ok("<DlqPolicy><Enabled>false</Enabled></DlqPolicy>", false, "");
    sub_dlq_ok("<DlqEnabled>FALSE</DlqEnabled><DlqTargetQueue>x</DlqTargetQueue>", false, "");
    long_name(name, 120);
    snprintf(dlq, sizeof dlq, "<DlqTargetQueue>%s</DlqTargetQueue>", name);
    sub_dlq_ok(dlq, true, name);

    /* A field in both forms is a repeated element. */
    sub_dlq_err("<DlqPolicy><Enabled>true</Enabled><DeadLetterTargetQueue>d"
                "</DeadLetterTargetQueue></DlqPolicy><DlqTargetQueue>d</DlqTargetQueue>",
                SMQ_E_MALFORMED_XML);
    sub_dlq_err("<DlqEnabled>true</DlqEnabled><DlqPolicy><Enabled>true</Enabled>"
                "<DeadLetterTargetQueue>d</DeadLetterTargetQueue></DlqPolicy>",
                SMQ_E_MALFORMED_XML);
    sub_dlq_err("<DlqPolicy><Enabled>true</Enabled></DlqPolicy>", SMQ_E_INVALID_ARGUMENT);
    sub_dlq_err("<DlqEnabled>true</DlqEnabled>", SMQ_E_INVALID_ARGUMENT);
    sub_dlq_err("<DlqPolicy></DlqPolicy>", SMQ_E_INVALID_ARGUMENT);
    sub_dlq_err("<DlqTargetQueue>bad_name</DlqTargetQueue>", SMQ_E_INVALID_ARGUMENT);
    sub_dlq_err("<DlqEnabled>maybe</DlqEnabled><DlqTargetQueue>d</DlqTargetQueue>",
                SMQ_E_INVALID_ARGUMENT);
    long_name(name, 121);
    snprintf(dlq, sizeof dlq, "<DlqTargetQueue>%s</DlqTargetQueue>", name);
    sub_dlq_err(dlq, SMQ_E_INVALID_ARGUMENT);

    /* No policy element: no policy bit. */
    sub_body(body, sizeof body, "<Endpoint>http://h/</Endpoint>");
    run_ok(&call, "PUT", "/topics/t/subscriptions/s", body, MNS_SUBSCRIBE, SMQ_OP_SUBSCRIBE);
    assert_false(call.op.sub.present & SMQ_SATTR_DLQ);
    api_call_free(&call);
}

/* SetSubscriptionAttributes (§13.6.2): a partial update; an Endpoint may
 * only repeat the stored one, which the engine compares. */
static void test_api_set_subscription(void **state)
{
    struct api_call call;
    char body[512];

    (void)state;
    sub_body(body, sizeof body, "<NotifyStrategy>EXPONENTIAL_DECAY_RETRY</NotifyStrategy>");
    run_ok(&call, "PUT", "/topics/t/subscriptions/s?metaoverride=true", body,
           MNS_SET_SUBSCRIPTION_ATTRIBUTES, SMQ_OP_SET_SUBSCRIPTION);
    assert_int_equal(call.op.sub.present, SMQ_SATTR_STRATEGY);
    api_call_free(&call);

    sub_body(body, sizeof body, "<NotifyStrategy>BACKOFF_RETRY</NotifyStrategy>"
             "<FilterTag>t2</FilterTag><Endpoint> " Q_EP "q </Endpoint>"
             "<NotifyContentFormat>XML</NotifyContentFormat>");
    run_ok(&call, "PUT", "/topics/t/subscriptions/s?metaoverride=true", body,
           MNS_SET_SUBSCRIPTION_ATTRIBUTES, SMQ_OP_SET_SUBSCRIPTION);
    assert_int_equal(call.op.sub.present, SMQ_SATTR_STRATEGY | SMQ_SATTR_FILTER_TAG
                                              | SMQ_SATTR_ENDPOINT | SMQ_SATTR_FORMAT);
    assert_string_equal(call.op.sub.values.endpoint, Q_EP "q");
    assert_string_equal(call.op.sub.values.filter_tag, "t2");
    api_call_free(&call);

    /* An empty body element list changes nothing and is still a Set. */
    run_ok(&call, "PUT", "/topics/t/subscriptions/s?metaoverride=true", "<Subscription/>",
           MNS_SET_SUBSCRIPTION_ATTRIBUTES, SMQ_OP_SET_SUBSCRIPTION);
    assert_int_equal(call.op.sub.present, 0);
    api_call_free(&call);

    run_err_msg("PUT", "/topics/t/subscriptions/s?metaoverride=true",
                "<Subscription><Endpoint>sms:directsms:x</Endpoint></Subscription>",
                SMQ_E_INVALID_ARGUMENT,
                "The Endpoint of a subscription cannot be changed: unsubscribe and subscribe "
                "again.");
}

/* An Endpoint too long to keep: EndpointInvalid for Subscribe, a change
 * refused for a Set (§13.2, §13.6.2). */
static void test_api_endpoint_too_long(void **state)
{
    char ep[1100], body[1400];

    (void)state;
    memset(ep, 'a', 1025);
    memcpy(ep, "http://h/", 9);
    ep[1025] = '\0';
    snprintf(body, sizeof body, "<Subscription><Endpoint>%s</Endpoint></Subscription>", ep);
    run_err_msg("PUT", "/topics/t/subscriptions/s", body, SMQ_E_ENDPOINT_INVALID,
                "The endpoint is longer than 1024 bytes.");
    run_err("PUT", "/topics/t/subscriptions/s?metaoverride=true", body, SMQ_E_INVALID_ARGUMENT);
}

/* Paging headers of ListTopic and ListSubscriptionByTopic (§13.4.5, §7.5). */
static void topic_list_headers(const char *target, const char *prefix, const char *ret, int want)
{
    struct api_call call;
    struct smq_errinfo ei;
    struct rq r;
    int rc;

    rq_init(&r, "GET", target, NULL);
    rq_add(&r, "x-mns-prefix", prefix);
    rq_add(&r, "x-mns-marker", "m-1");
    rq_add(&r, "x-mns-ret-number", ret);
    rq_add(&r, "x-mns-with-meta", "true");
    rq_sign(&r);
    rc = prepare(&r, &call, &ei);
    assert_int_equal(rc, want);
    if (rc == 0 && call.op.kind == SMQ_OP_LIST_TOPICS) {
        assert_string_equal(call.op.tlist.prefix, prefix);
        assert_string_equal(call.op.tlist.marker, "m-1");
        assert_int_equal(call.op.tlist.ret_number, atoi(ret));
        assert_null(call.op.tlist.visible);
    } else if (rc == 0) {
        assert_int_equal(call.op.kind, SMQ_OP_LIST_SUBSCRIPTIONS);
        assert_string_equal(call.op.queue, "t");
        assert_string_equal(call.op.slist.prefix, prefix);
        assert_string_equal(call.op.slist.marker, "m-1");
        assert_int_equal(call.op.slist.ret_number, atoi(ret));
    }
    api_call_free(&call);
}

static void test_api_topic_list_paging(void **state)
{
    static const char *const targets[] = {"/topics", "/topics/t/subscriptions/"};
    char prefix[130];
    struct api_call call;

    (void)state;
    for (size_t i = 0; i < 2; i++) {
        long_name(prefix, 120);
        topic_list_headers(targets[i], "ab", "1", 0);
        topic_list_headers(targets[i], prefix, "1000", 0);
        topic_list_headers(targets[i], "ab", "0", SMQ_E_INVALID_ARGUMENT);
        topic_list_headers(targets[i], "ab", "1001", SMQ_E_INVALID_ARGUMENT);
        topic_list_headers(targets[i], "ab", "x", SMQ_E_INVALID_ARGUMENT);
        long_name(prefix, 121);
        topic_list_headers(targets[i], prefix, "5", SMQ_E_INVALID_ARGUMENT);
    }
    /* Defaults; paging parameters in the query are unknown and ignored. */
    run_ok(&call, "GET", "/topics?x-mns-ret-number=5&x-mns-prefix=a", NULL, MNS_LIST_TOPIC,
           SMQ_OP_LIST_TOPICS);
    assert_int_equal(call.op.tlist.ret_number, 1000);
    assert_string_equal(call.op.tlist.prefix, "");
    api_call_free(&call);
    run_ok(&call, "GET", "/topics/t/subscriptions", NULL, MNS_LIST_SUBSCRIPTION_BY_TOPIC,
           SMQ_OP_LIST_SUBSCRIPTIONS);
    assert_int_equal(call.op.slist.ret_number, 1000);
    assert_string_equal(call.op.slist.marker, "");
    api_call_free(&call);
}

/* ---- PublishMessage (§13.5) ---- */

#define HW_MD5 "5EB63BBBE01EEED093CB22BB8F5ACDC3"       /* of "hello world" (§13.5's example) */
#define EMOJI "\xf0\x9f\x98\x80"                        /* one code point, four bytes */

/* Publishes body to topic t; expects success and returns the op (call freed by the caller). */
static void publish_ok(struct api_call *call, const char *body)
{
    run_ok(call, "POST", "/topics/t/messages", body, MNS_PUBLISH_MESSAGE, SMQ_OP_PUBLISH);
    assert_string_equal(call->op.queue, "t");
}

/* The op's body is exactly want (len bytes) and its MD5 is want's. */
static void assert_published(const struct api_call *call, const char *want, size_t len,
                             const char *tag)
{
    unsigned char md5[CRYPTO_MD5_LEN];

    assert_int_equal(call->op.publish.body_len, len);
    assert_memory_equal(call->op.publish.body, want, len);
    assert_int_equal(crypto_md5(want, len, md5), 0);
    assert_memory_equal(call->op.publish.body_md5, md5, CRYPTO_MD5_LEN);
    assert_string_equal(call->op.publish.tag, tag);
}

/* <Message><MessageBody>{n bytes of c}</MessageBody>tail</Message>, malloc'd. */
static char *publish_doc_of(size_t n, char c, const char *tail)
{
    static const char head[] = "<Message><MessageBody>", end[] = "</MessageBody>";
    size_t size = sizeof head + n + sizeof end + strlen(tail) + sizeof "</Message>";
    char *doc = malloc(size);
    char *p = doc;

    assert_non_null(doc);
    p += sprintf(p, "%s", head);
    memset(p, c, n);
    p += n;
    sprintf(p, "%s%s</Message>", end, tail);
    return doc;
}

static void test_api_publish_op(void **state)
{
    struct api_call call;

    (void)state;
    publish_ok(&call, "<Message><MessageBody>hello world</MessageBody></Message>");
    assert_published(&call, "hello world", 11, "");
    api_call_free(&call);

    /* As the SDKs send it: namespaced, declaration, tag first (children in any order). */
    publish_ok(&call, DECL "<Message " REQ_NS "><MessageTag>orders</MessageTag>"
               "<MessageBody>" CN_BODY "</MessageBody></Message>");
    assert_published(&call, CN_BODY, strlen(CN_BODY), "orders");
    api_call_free(&call);

    /* An empty MessageTag is no tag; the tag is kept untrimmed, as FilterTag is. */
    publish_ok(&call, "<Message><MessageBody>x</MessageBody><MessageTag></MessageTag></Message>");
    assert_published(&call, "x", 1, "");
    api_call_free(&call);
    publish_ok(&call, "<Message><MessageBody>x</MessageBody><MessageTag> a b </MessageTag>"
               "</Message>");
    assert_published(&call, "x", 1, " a b ");
    api_call_free(&call);
}

/* The body is kept byte for byte after XML decoding, never base64-handled
 * (§13.3 item 6): entities, character references, CDATA, blanks and line
 * ends stay what they decode to. */
static void test_api_publish_body_decoded(void **state)
{
    struct api_call call;
    const char *want = "  <a href=\"x\">&'</a>\n\t\xe4\xb8\xad <![x]> ";

    (void)state;
    publish_ok(&call, "<Message><MessageBody>  &lt;a href=&quot;x&quot;&gt;&amp;&apos;&lt;/a&gt;"
               "&#10;&#x9;&#x4E2D;<![CDATA[ <![x]> ]]></MessageBody></Message>");
    assert_published(&call, want, strlen(want), "");
    api_call_free(&call);

    /* Base64 text (Python's and Java's Base64TopicMessage) stays base64 text. */
    publish_ok(&call, "<Message><MessageBody>aGVsbG8gd29ybGQ=</MessageBody></Message>");
    assert_published(&call, "aGVsbG8gd29ybGQ=", 16, "");
    api_call_free(&call);
}

/* MessageAttributes with any well-formed content, Java's extensions and
 * unknown elements are accepted and not kept (§13.5). */
static void test_api_publish_ignored_parts(void **state)
{
    static const char *const extras[] = {
        "<MessageAttributes><DirectMail>{\"AccountName\":\"a@b.c\",\"Subject\":\"s\"}</DirectMail>"
        "<DirectSMS>{\"FreeSignName\":\"x\"}</DirectSMS></MessageAttributes>",
        "<MessageAttributes><DM>{}</DM><DYSMS>{}</DYSMS></MessageAttributes>",
        "<MessageAttributes></MessageAttributes>",
        "<MessageAttributes/>",
        "<MessageAttributes>text<a><b><c>deep</c></b></a><a/></MessageAttributes>",
        "<UserProperties><PropertyValue><Name>k</Name><Value>v</Value></PropertyValue>"
        "</UserProperties><SystemProperties><PropertyValue><Name>nope</Name></PropertyValue>"
        "</SystemProperties><MessageGroupId>g</MessageGroupId>",
        /* Not judged either: a publish keeps none of them. */
        "<UserProperties><PropertyValue><Name></Name></PropertyValue></UserProperties>"
        "<MessageGroupId><x/></MessageGroupId>",
        "<DelaySeconds>not a number</DelaySeconds><Priority>99</Priority><Unknown a=\"1\"/>",
        "<!-- a comment --><?pi x?>",
    };
    struct api_call call;
    char doc[512];

    (void)state;
    for (size_t i = 0; i < sizeof extras / sizeof extras[0]; i++) {
        snprintf(doc, sizeof doc, "<Message>%s<MessageBody>b</MessageBody><MessageTag>t"
                 "</MessageTag>%s</Message>", extras[i], extras[i]);
        publish_ok(&call, doc);
        assert_published(&call, "b", 1, "t");
        api_call_free(&call);
    }
}

/* The body's limit without the topic: 1..65536 bytes after decoding (the
 * topic's own MaximumMessageSize is the engine's). */
static void test_api_publish_body_size(void **state)
{
    struct api_call call;
    char *doc;

    (void)state;
    doc = publish_doc_of(SMQ_MSG_SIZE_MAX, 'a', "");
    publish_ok(&call, doc);
    assert_int_equal(call.op.publish.body_len, SMQ_MSG_SIZE_MAX);
    api_call_free(&call);
    free(doc);

    doc = publish_doc_of(SMQ_MSG_SIZE_MAX + 1, 'a', "");
    run_err_msg("POST", "/topics/t/messages", doc, SMQ_E_INVALID_ARGUMENT,
                "The MessageBody should have at most 65536 bytes.");
    free(doc);

    /* Counted after decoding: 65536 '&amp;' are 65536 bytes. */
    {
        size_t n = SMQ_MSG_SIZE_MAX;
        char *p = malloc(n * 5 + 64);

        assert_non_null(p);
        strcpy(p, "<Message><MessageBody>");
        for (size_t i = 0; i < n; i++)
            strcat(p + 22 + 5 * i, "&amp;");
        strcat(p + 22 + 5 * n, "</MessageBody></Message>");
        publish_ok(&call, p);
        assert_int_equal(call.op.publish.body_len, n);
        assert_int_equal(call.op.publish.body[n - 1], '&');
        api_call_free(&call);
        free(p);
    }
}

/* MessageTag: at most 16 code points, however many bytes each takes. */
static void test_api_publish_tag_limit(void **state)
{
    static const struct { const char *unit; size_t n; bool ok; } cases[] = {
        {"a", 16, true}, {"a", 17, false},
        {"\xe4\xb8\xad", 16, true}, {"\xe4\xb8\xad", 17, false},     /* 3 bytes each */
        {EMOJI, 16, true}, {EMOJI, 17, false},                       /* 64 and 68 bytes */
    };
    struct api_call call;
    char tag[128], doc[256];

    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tag[0] = '\0';
        for (size_t k = 0; k < cases[i].n; k++)
            strcat(tag, cases[i].unit);
        snprintf(doc, sizeof doc, "<Message><MessageBody>b</MessageBody><MessageTag>%s"
                 "</MessageTag></Message>", tag);
        if (!cases[i].ok) {
            run_err_msg("POST", "/topics/t/messages", doc, SMQ_E_INVALID_ARGUMENT,
                        "The value of MessageTag should have at most 16 characters.");
            continue;
        }
        publish_ok(&call, doc);
        assert_string_equal(call.op.publish.tag, tag);
        api_call_free(&call);
    }
    /* 15 ASCII and one four-byte character: 16 code points, 19 bytes. */
    publish_ok(&call, "<Message><MessageBody>b</MessageBody><MessageTag>abcdefghijklmno" EMOJI
               "</MessageTag></Message>");
    assert_string_equal(call.op.publish.tag, "abcdefghijklmno" EMOJI);
    api_call_free(&call);
}

/* Every row of §13.5's table the API decides, and what comes first. */
static void test_api_publish_problems(void **state)
{
    static const struct { const char *body; int err; } rows[] = {
        {"<Message></Message>", SMQ_E_INVALID_ARGUMENT},
        {"<Message><MessageTag>t</MessageTag></Message>", SMQ_E_INVALID_ARGUMENT},
        {"<Message><MessageBody></MessageBody></Message>", SMQ_E_INVALID_ARGUMENT},
        {"<Message><MessageBody/></Message>", SMQ_E_INVALID_ARGUMENT},
        {"<Message><MessageBody><![CDATA[]]></MessageBody></Message>", SMQ_E_INVALID_ARGUMENT},
        {"<Message><MessageBody>a<b/></MessageBody></Message>", SMQ_E_INVALID_ARGUMENT},
        {"<Message><MessageBody>b</MessageBody><MessageTag><t/></MessageTag></Message>",
         SMQ_E_INVALID_ARGUMENT},
        {"", SMQ_E_MALFORMED_XML},
        {"hello world", SMQ_E_MALFORMED_XML},
        {"<Message><MessageBody>b</MessageBody>", SMQ_E_MALFORMED_XML},
        {"<Topic><MessageBody>b</MessageBody></Topic>", SMQ_E_MALFORMED_XML},
        {"<Messages><Message><MessageBody>b</MessageBody></Message></Messages>",
         SMQ_E_MALFORMED_XML},
        {"<Message><MessageBody>a</MessageBody><MessageBody>b</MessageBody></Message>",
         SMQ_E_MALFORMED_XML},
        {"<Message><MessageBody>a</MessageBody><MessageTag>x</MessageTag>"
         "<MessageTag></MessageTag></Message>", SMQ_E_MALFORMED_XML},
        {"<!DOCTYPE m [<!ENTITY e \"x\">]><Message><MessageBody>&e;</MessageBody></Message>",
         SMQ_E_MALFORMED_XML},
    };
    struct api_call call;
    struct rq r;
    struct smq_errinfo ei;

    (void)state;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        run_err("POST", "/topics/t/messages", rows[i].body, rows[i].err);
    run_err("POST", "/topics/t/messages", NULL, SMQ_E_MALFORMED_XML);
    run_err_msg("POST", "/topics/t/messages", "<Message><MessageBody></MessageBody></Message>",
                SMQ_E_INVALID_ARGUMENT, "The MessageBody is missing or empty.");
    run_err_msg("POST", "/topics/t/messages", "<Messages><Message><MessageBody>b</MessageBody>"
                "</Message></Messages>", SMQ_E_MALFORMED_XML, "The XML you provided was not "
                "well-formed: the root element must be <Message>.");

    /* What comes first is still checked first (§12.1). */
    run_err("POST", "/topics/-t/messages", "<Message/>", SMQ_E_TOPIC_NAME_INVALID);
    run_err("POST", "/topics/t/messages/", "<Message/>", SMQ_E_INVALID_REQUEST_URL);
    rq_init(&r, "POST", "/topics/t/messages", "<Message/>");
    rq_sign_with(&r, AK, "wrong secret");
    assert_int_equal(prepare(&r, &call, &ei), SMQ_E_SIGNATURE_MISMATCH);
    api_call_free(&call);
}

/* A Content-MD5 is checked against the request body as it arrived. */
static void test_api_publish_content_md5(void **state)
{
    const char *body = "<Message><MessageBody>hello world</MessageBody></Message>";
    struct api_call call;
    struct smq_errinfo ei;
    struct rq r;

    (void)state;
    rq_init(&r, "POST", "/topics/t/messages", body);
    rq_add_md5_of(&r, body);
    rq_sign(&r);
    assert_int_equal(prepare(&r, &call, &ei), 0);
    assert_int_equal(call.op.kind, SMQ_OP_PUBLISH);
    api_call_free(&call);
    rq_init(&r, "POST", "/topics/t/messages", body);
    rq_add_md5_of(&r, "something else");
    rq_sign(&r);
    assert_int_equal(prepare(&r, &call, &ei), SMQ_E_INVALID_DIGEST);
    api_call_free(&call);
}

/* 201: the id of the seq as SendMessage writes it, the body's MD5 in upper
 * case, nothing else (§13.5's example, byte for byte). */
static void test_api_render_published(void **state)
{
    struct render x;

    (void)state;
    render_init(&x, MNS_PUBLISH_MESSAGE, SMQ_OP_PUBLISH);
    x.call.op.publish.seq = 7;
    md5_from_hex(x.call.op.publish.body_md5, HW_MD5);
    render_run(&x);
    assert_int_equal(x.resp.status, 201);
    assert_string_equal(x.resp.location, "");
    assert_body(&x.resp, DECL "<Message " NS "><MessageId>0909FF0D9C3A630C0000000000000007"
                "</MessageId><MessageBodyMD5>5EB63BBBE01EEED093CB22BB8F5ACDC3</MessageBodyMD5>"
                "</Message>");
    render_free(&x);

    /* The same id a SendMessage of that seq gets. */
    render_init(&x, MNS_PUBLISH_MESSAGE, SMQ_OP_PUBLISH);
    x.call.op.publish.seq = 0xABCDEF;
    md5_from_hex(x.call.op.publish.body_md5, CN_MD5);
    render_run(&x);
    assert_body(&x.resp, DECL "<Message " NS "><MessageId>" ID_PREFIX "0000000000ABCDEF"
                "</MessageId><MessageBodyMD5>" CN_MD5 "</MessageBodyMD5></Message>");
    render_free(&x);
}

/* From the request to the answer: what api_prepare computed is what is answered. */
static void test_api_publish_round_trip(void **state)
{
    struct render x;
    struct smq_errinfo ei;

    (void)state;
    render_init(&x, MNS_UNKNOWN, SMQ_OP_GET_QUEUE);
    api_call_free(&x.call);
    rq_init(&x.r, "POST", "/topics/t/messages",
            "<Message><MessageBody>hello world</MessageBody></Message>");
    rq_sign(&x.r);
    assert_int_equal(prepare(&x.r, &x.call, &ei), 0);
    x.call.op.publish.seq = 7;               /* as the engine fills it */
    render_run(&x);
    assert_int_equal(x.resp.status, 201);
    assert_body(&x.resp, DECL "<Message " NS "><MessageId>" ID_PREFIX "0000000000000007"
                "</MessageId><MessageBodyMD5>" HW_MD5 "</MessageBodyMD5></Message>");
    render_free(&x);
}

/* The engine's refusals map as usual (§13.5, §13.7, §12.4: storage full is
 * InternalError). */
static void test_api_render_publish_errors(void **state)
{
    static const struct { int err; int status; const char *code; } rows[] = {
        {SMQ_E_TOPIC_NOT_EXIST, 404, "TopicNotExist"},
        {SMQ_E_INVALID_ARGUMENT, 400, "InvalidArgument"},
        {SMQ_E_STORAGE_FULL, 500, "InternalError"},
        {SMQ_E_INTERNAL, 500, "InternalError"},
    };
    struct render x;
    char want[512];

    (void)state;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        render_init(&x, MNS_PUBLISH_MESSAGE, SMQ_OP_PUBLISH);
        x.call.op.publish.seq = 7;
        errors_set(&x.call.op.result, rows[i].err, "why %d", (int)i);
        render_run(&x);
        assert_int_equal(x.resp.status, rows[i].status);
        snprintf(want, sizeof want, DECL "<Error " NS "><Code>%s</Code><Message>why %d</Message>"
                 "<RequestId>" RID "</RequestId><HostId>http://" HOST "</HostId></Error>",
                 rows[i].code, (int)i);
        assert_body(&x.resp, want);
        render_free(&x);
    }
}

/* Every topic code maps to its status and <Code> (§13.7). */
static void test_api_topic_error_codes(void **state)
{
    static const struct { int err, status; const char *code; } rows[] = {
        {SMQ_E_TOPIC_NOT_EXIST, 404, "TopicNotExist"},
        {SMQ_E_TOPIC_ALREADY_EXIST, 409, "TopicAlreadyExist"},
        {SMQ_E_TOPIC_NAME_INVALID, 400, "TopicNameInvalid"},
        {SMQ_E_TOPIC_NAME_LENGTH, 400, "TopicNameLengthError"},
        {SMQ_E_TOO_MANY_TOPICS, 400, "TopicNumExceededLimit"},
        {SMQ_E_SUBSCRIPTION_NOT_EXIST, 404, "SubscriptionNotExist"},
        {SMQ_E_SUBSCRIPTION_ALREADY_EXIST, 409, "SubscriptionAlreadyExist"},
        {SMQ_E_SUBSCRIPTION_NAME_INVALID, 400, "SubscriptionNameInvalid"},
        {SMQ_E_SUBSCRIPTION_NAME_LENGTH, 400, "SubscriptionNameLengthError"},
        {SMQ_E_TOO_MANY_SUBSCRIPTIONS, 400, "SubscriptionNumExceededLimit"},
        {SMQ_E_ENDPOINT_INVALID, 400, "EndpointInvalid"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        assert_int_equal(errors_info(rows[i].err)->http_status, rows[i].status);
        assert_string_equal(errors_info(rows[i].err)->code, rows[i].code);
    }
}

/* ---- grants (§13.14) ---- */

/* Gives the test key the grants "classes on names" (each a line of
 * [grant.KEY]), until grants_clear. */
static struct grant_set test_grants;

static void grants_add(const char *names, const char *classes)
{
    struct grant g = {0};
    char why[256];

    assert_int_equal(grant_parse_queues(names, &g, why, sizeof why), 0);
    assert_int_equal(grant_parse_classes(classes, &g.classes, why, sizeof why), 0);
    assert_int_equal(grant_set_add(&test_grants, &g), 0);
    keys[0].grants = &test_grants;
}

static void grants_clear(void)
{
    grant_set_free(&test_grants);
    memset(&test_grants, 0, sizeof test_grants);
    keys[0].grants = NULL;
}

#define PUB_BODY "<Message><MessageBody>b</MessageBody></Message>"

static void test_api_topic_grants_on_topic(void **state)
{
    struct api_call call;
    char body[256];

    (void)state;
    grants_add("orders-*", "manage");
    grants_add("audit", "list");
    run_ok(&call, "PUT", "/topics/orders-events", NULL, MNS_CREATE_TOPIC, SMQ_OP_CREATE_TOPIC);
    api_call_free(&call);
    run_ok(&call, "DELETE", "/topics/orders-events", NULL, MNS_DELETE_TOPIC, SMQ_OP_DELETE_TOPIC);
    api_call_free(&call);
    run_err_msg("PUT", "/topics/billing", NULL, SMQ_E_ACCESS_DENIED,
                "The access key \"" AK "\" has no \"manage\" grant on topic \"billing\".");
    run_err_msg("GET", "/topics/orders-events", NULL, SMQ_E_ACCESS_DENIED,
                "The access key \"" AK "\" has no \"list\" grant on topic \"orders-events\".");
    run_ok(&call, "GET", "/topics/audit/subscriptions/s", NULL, MNS_GET_SUBSCRIPTION_ATTRIBUTES,
           SMQ_OP_GET_SUBSCRIPTION);
    api_call_free(&call);
    run_ok(&call, "GET", "/topics/audit/subscriptions", NULL, MNS_LIST_SUBSCRIPTION_BY_TOPIC,
           SMQ_OP_LIST_SUBSCRIPTIONS);
    api_call_free(&call);
    run_err("DELETE", "/topics/audit/subscriptions/s", NULL, SMQ_E_ACCESS_DENIED);
    run_ok(&call, "DELETE", "/topics/orders-x/subscriptions/s", NULL, MNS_UNSUBSCRIBE,
           SMQ_OP_UNSUBSCRIBE);
    api_call_free(&call);
    sub_body(body, sizeof body, "<NotifyStrategy>BACKOFF_RETRY</NotifyStrategy>");
    run_err("PUT", "/topics/audit/subscriptions/s?metaoverride=true", body, SMQ_E_ACCESS_DENIED);

    /* ListTopic shows only what the key may list. */
    run_ok(&call, "GET", "/topics", NULL, MNS_LIST_TOPIC, SMQ_OP_LIST_TOPICS);
    assert_ptr_equal(call.op.tlist.visible, &test_grants);
    api_call_free(&call);
    /* PublishMessage needs "send" on the topic: manage, list or receive do not give it. */
    run_err_msg("POST", "/topics/orders-events/messages", PUB_BODY, SMQ_E_ACCESS_DENIED,
                "The access key \"" AK "\" has no \"send\" grant on topic \"orders-events\".");
    run_err("POST", "/topics/audit/messages", PUB_BODY, SMQ_E_ACCESS_DENIED);
    grants_add("orders-events", "send");
    run_ok(&call, "POST", "/topics/orders-events/messages", PUB_BODY, MNS_PUBLISH_MESSAGE,
           SMQ_OP_PUBLISH);
    assert_string_equal(call.op.queue, "orders-events");
    api_call_free(&call);
    /* "send" on one topic is not on another that the key only manages. */
    run_err("POST", "/topics/orders-other/messages", PUB_BODY, SMQ_E_ACCESS_DENIED);
    grants_clear();
    grants_add("receive-only", "receive, list, manage");
    run_err("POST", "/topics/receive-only/messages", PUB_BODY, SMQ_E_ACCESS_DENIED);
    grants_clear();

    grants_add("*", "manage, send, receive");
    run_err_msg("GET", "/topics", NULL, SMQ_E_ACCESS_DENIED,
                "The access key \"" AK "\" has no \"list\" grant on any topic.");
    run_err_msg("GET", "/queues", NULL, SMQ_E_ACCESS_DENIED,
                "The access key \"" AK "\" has no \"list\" grant on any queue.");
    grants_clear();
}

/* Subscribe to a queue needs "send" there; a dead-letter target needs "send". */
static void test_api_topic_grants_on_queues(void **state)
{
    struct api_call call;
    char body[512];

    (void)state;
    grants_add("t", "manage");
    grants_add("inbox", "send");
    sub_body(body, sizeof body, "<Endpoint>" Q_EP "inbox</Endpoint>");
    run_ok(&call, "PUT", "/topics/t/subscriptions/s", body, MNS_SUBSCRIBE, SMQ_OP_SUBSCRIBE);
    api_call_free(&call);
    sub_body(body, sizeof body, "<Endpoint>" Q_EP "other</Endpoint>");
    run_err_msg("PUT", "/topics/t/subscriptions/s", body, SMQ_E_ACCESS_DENIED,
                "The access key \"" AK "\" has no \"send\" grant on queue \"other\", which the "
                "subscription's endpoint delivers to.");
    /* An HTTP endpoint needs nothing more. */
    sub_body(body, sizeof body, "<Endpoint>http://h/other</Endpoint>");
    run_ok(&call, "PUT", "/topics/t/subscriptions/s", body, MNS_SUBSCRIBE, SMQ_OP_SUBSCRIBE);
    api_call_free(&call);
    /* A Set repeating the endpoint sends nowhere new. */
    sub_body(body, sizeof body, "<Endpoint>" Q_EP "other</Endpoint>");
    run_ok(&call, "PUT", "/topics/t/subscriptions/s?metaoverride=true", body,
           MNS_SET_SUBSCRIPTION_ATTRIBUTES, SMQ_OP_SET_SUBSCRIPTION);
    api_call_free(&call);

    sub_body(body, sizeof body, "<Endpoint>http://h/</Endpoint>"
             "<DlqTargetQueue>dead</DlqTargetQueue>");
    run_err_msg("PUT", "/topics/t/subscriptions/s", body, SMQ_E_ACCESS_DENIED,
                "The access key \"" AK "\" has no \"send\" grant on queue \"dead\", the "
                "subscription's dead-letter target.");
    sub_body(body, sizeof body, "<DlqPolicy><DeadLetterTargetQueue>dead</DeadLetterTargetQueue>"
             "</DlqPolicy>");
    run_err("PUT", "/topics/t/subscriptions/s?metaoverride=true", body, SMQ_E_ACCESS_DENIED);
    /* Clearing a policy sends nowhere. */
    sub_body(body, sizeof body, "<DlqEnabled>false</DlqEnabled>");
    run_ok(&call, "PUT", "/topics/t/subscriptions/s?metaoverride=true", body,
           MNS_SET_SUBSCRIPTION_ATTRIBUTES, SMQ_OP_SET_SUBSCRIPTION);
    api_call_free(&call);
    grants_add("dead", "send");
    sub_body(body, sizeof body, "<Endpoint>" Q_EP "inbox</Endpoint>"
             "<DlqTargetQueue>dead</DlqTargetQueue>");
    run_ok(&call, "PUT", "/topics/t/subscriptions/s", body, MNS_SUBSCRIBE, SMQ_OP_SUBSCRIBE);
    api_call_free(&call);
    grants_clear();
}

/* ---- topic responses ---- */

static void fill_topic(struct smq_topic_info *i, const char *name)
{
    memset(i, 0, sizeof *i);
    snprintf(i->name, sizeof i->name, "%s", name);
    i->attrs.max_msg_size = 2048;
    i->attrs.logging = 1;
    i->create_s = 1704164645;
    i->modify_s = 1704164700;
    i->message_count = 3;
}

#define TOPIC_XML(name)                                                                     \
    "<TopicName>" name "</TopicName><CreateTime>1704164645</CreateTime>"                    \
    "<LastModifyTime>1704164700</LastModifyTime><MaximumMessageSize>2048</MaximumMessageSize>" \
    "<MessageRetentionPeriod>86400</MessageRetentionPeriod><MessageCount>3</MessageCount>"  \
    "<LoggingEnabled>True</LoggingEnabled>"

static void fill_sub(struct smq_sub_info *i, const char *name, const char *tag, const char *dlq)
{
    memset(i, 0, sizeof *i);
    snprintf(i->topic, sizeof i->topic, "q");
    snprintf(i->name, sizeof i->name, "%s", name);
    snprintf(i->attrs.endpoint, sizeof i->attrs.endpoint, "%s", Q_EP "in&out");
    snprintf(i->attrs.filter_tag, sizeof i->attrs.filter_tag, "%s", tag);
    i->attrs.strategy = SMQ_NOTIFY_EXPONENTIAL_DECAY_RETRY;
    i->attrs.format = SMQ_NOTIFY_SIMPLIFIED;
    i->attrs.dlq.enabled = dlq != NULL;
    snprintf(i->attrs.dlq.target, sizeof i->attrs.dlq.target, "%s", dlq ? dlq : "");
    i->create_s = 1704164645;
    i->modify_s = 1704164646;
}

#define SUB_XML(owner, name, tag, dlq)                                                      \
    "<TopicOwner>" owner "</TopicOwner><TopicName>q</TopicName>"                            \
    "<SubscriptionName>" name "</SubscriptionName><Subscriber>" owner "</Subscriber>"       \
    "<Endpoint>" Q_EP "in&amp;out</Endpoint>" tag                                           \
    "<NotifyStrategy>EXPONENTIAL_DECAY_RETRY</NotifyStrategy>"                              \
    "<NotifyContentFormat>SIMPLIFIED</NotifyContentFormat><CreateTime>1704164645</CreateTime>" \
    "<LastModifyTime>1704164646</LastModifyTime>" dlq

static void test_api_render_create_topic_and_subscribe(void **state)
{
    struct render x;

    (void)state;
    render_init(&x, MNS_CREATE_TOPIC, SMQ_OP_CREATE_TOPIC);
    x.call.op.topic.created = true;
    render_run(&x);
    assert_int_equal(x.resp.status, 201);
    assert_string_equal(x.resp.location, TOPIC_URL "q");
    assert_no_body(&x.resp);
    render_free(&x);

    render_init(&x, MNS_CREATE_TOPIC, SMQ_OP_CREATE_TOPIC);
    render_run(&x);
    assert_int_equal(x.resp.status, 204);
    assert_string_equal(x.resp.location, TOPIC_URL "q");
    assert_no_body(&x.resp);
    render_free(&x);

    render_init(&x, MNS_SUBSCRIBE, SMQ_OP_SUBSCRIBE);
    snprintf(x.call.op.sub.name, sizeof x.call.op.sub.name, "s-1");
    x.call.op.sub.created = true;
    render_run(&x);
    assert_int_equal(x.resp.status, 201);
    assert_string_equal(x.resp.location, TOPIC_URL "q/subscriptions/s-1");
    assert_no_body(&x.resp);
    render_free(&x);

    render_init(&x, MNS_SUBSCRIBE, SMQ_OP_SUBSCRIBE);
    snprintf(x.call.op.sub.name, sizeof x.call.op.sub.name, "s-1");
    render_run(&x);
    assert_int_equal(x.resp.status, 204);
    assert_string_equal(x.resp.location, TOPIC_URL "q/subscriptions/s-1");
    render_free(&x);
}

static void test_api_render_topic_no_content(void **state)
{
    static const struct { enum mns_action a; enum smq_op_kind k; } cases[] = {
        {MNS_SET_TOPIC_ATTRIBUTES, SMQ_OP_SET_TOPIC},
        {MNS_DELETE_TOPIC, SMQ_OP_DELETE_TOPIC},
        {MNS_SET_SUBSCRIPTION_ATTRIBUTES, SMQ_OP_SET_SUBSCRIPTION},
        {MNS_UNSUBSCRIBE, SMQ_OP_UNSUBSCRIBE},
    };
    struct render x;

    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        render_init(&x, cases[i].a, cases[i].k);
        render_run(&x);
        assert_int_equal(x.resp.status, 204);
        assert_no_body(&x.resp);
        assert_string_equal(x.resp.location, "");
        render_free(&x);
    }
}

/* Exactly the seven elements, in order (§13.3 item 2, §13.4.3). */
static void test_api_render_get_topic_attributes(void **state)
{
    struct render x;

    (void)state;
    render_init(&x, MNS_GET_TOPIC_ATTRIBUTES, SMQ_OP_GET_TOPIC);
    fill_topic(&x.call.op.topic.info, "t");
    render_run(&x);
    assert_int_equal(x.resp.status, 200);
    assert_body(&x.resp, DECL "<Topic " NS ">" TOPIC_XML("t") "</Topic>");
    render_free(&x);

    render_init(&x, MNS_GET_TOPIC_ATTRIBUTES, SMQ_OP_GET_TOPIC);
    fill_topic(&x.call.op.topic.info, "t");
    x.call.op.topic.info.attrs.logging = 0;
    x.call.op.topic.info.message_count = 0;
    render_run(&x);
    assert_body(&x.resp, DECL "<Topic " NS "><TopicName>t</TopicName><CreateTime>1704164645"
                "</CreateTime><LastModifyTime>1704164700</LastModifyTime><MaximumMessageSize>2048"
                "</MaximumMessageSize><MessageRetentionPeriod>86400</MessageRetentionPeriod>"
                "<MessageCount>0</MessageCount><LoggingEnabled>False</LoggingEnabled></Topic>");
    render_free(&x);

    /* An op's error answers the error document. */
    render_init(&x, MNS_GET_TOPIC_ATTRIBUTES, SMQ_OP_GET_TOPIC);
    errors_set(&x.call.op.result, SMQ_E_TOPIC_NOT_EXIST, NULL);
    render_run(&x);
    assert_int_equal(x.resp.status, 404);
    assert_body(&x.resp, DECL "<Error " NS "><Code>TopicNotExist</Code><Message>The topic name "
                "you provided does not exist.</Message><RequestId>" RID "</RequestId><HostId>"
                "http://" HOST "</HostId></Error>");
    render_free(&x);
}

static void fill_topics(struct smq_op *op, size_t n)
{
    static const char *const names[] = {"a", "b", "c"};

    op->tlist.topics = calloc(n ? n : 1, sizeof *op->tlist.topics);
    assert_non_null(op->tlist.topics);
    for (size_t i = 0; i < n; i++)
        fill_topic(&op->tlist.topics[i], names[i]);
    op->tlist.n_topics = n;
}

static void test_api_render_list_topic(void **state)
{
    struct render x;

    (void)state;
    render_init(&x, MNS_LIST_TOPIC, SMQ_OP_LIST_TOPICS);
    fill_topics(&x.call.op, 2);
    render_run(&x);
    assert_int_equal(x.resp.status, 200);
    assert_body(&x.resp, DECL "<Topics " NS "><Topic><TopicURL>" TOPIC_URL "a</TopicURL></Topic>"
                "<Topic><TopicURL>" TOPIC_URL "b</TopicURL></Topic></Topics>");
    render_free(&x);

    render_init(&x, MNS_LIST_TOPIC, SMQ_OP_LIST_TOPICS);
    fill_topics(&x.call.op, 2);
    snprintf(x.call.op.tlist.next_marker, sizeof x.call.op.tlist.next_marker, "c");
    render_run(&x);
    assert_body(&x.resp, DECL "<Topics " NS "><Topic><TopicURL>" TOPIC_URL "a</TopicURL></Topic>"
                "<Topic><TopicURL>" TOPIC_URL "b</TopicURL></Topic><NextMarker>c</NextMarker>"
                "</Topics>");
    render_free(&x);

    render_init(&x, MNS_LIST_TOPIC, SMQ_OP_LIST_TOPICS);
    fill_topics(&x.call.op, 0);
    render_run(&x);
    assert_body(&x.resp, DECL "<Topics " NS "></Topics>");
    render_free(&x);

    /* With meta: TopicURL, then the seven elements, flat. */
    render_init(&x, MNS_LIST_TOPIC, SMQ_OP_LIST_TOPICS);
    rq_add(&x.r, "x-mns-with-meta", "TRUE");
    fill_topics(&x.call.op, 2);
    render_run(&x);
    assert_body(&x.resp, DECL "<Topics " NS "><Topic><TopicURL>" TOPIC_URL "a</TopicURL>"
                TOPIC_XML("a") "</Topic><Topic><TopicURL>" TOPIC_URL "b</TopicURL>" TOPIC_XML("b")
                "</Topic></Topics>");
    render_free(&x);
}

static void test_api_render_get_subscription_attributes(void **state)
{
    struct render x;

    (void)state;
    render_init(&x, MNS_GET_SUBSCRIPTION_ATTRIBUTES, SMQ_OP_GET_SUBSCRIPTION);
    fill_sub(&x.call.op.sub.info, "s", "", NULL);
    render_run(&x);
    assert_int_equal(x.resp.status, 200);
    assert_body(&x.resp, DECL "<Subscription " NS ">" SUB_XML("1000000000000000", "s", "", "")
                "</Subscription>");
    render_free(&x);

    /* The configured account id; FilterTag when set; the policy flat and last. */
    ctx.account_id = "5555";
    render_init(&x, MNS_GET_SUBSCRIPTION_ATTRIBUTES, SMQ_OP_GET_SUBSCRIPTION);
    fill_sub(&x.call.op.sub.info, "s", "important", "hook-dlq");
    render_run(&x);
    ctx.account_id = NULL;
    assert_body(&x.resp, DECL "<Subscription " NS ">"
                SUB_XML("5555", "s", "<FilterTag>important</FilterTag>",
                        "<DlqEnabled>True</DlqEnabled><DlqTargetQueue>hook-dlq</DlqTargetQueue>")
                "</Subscription>");
    render_free(&x);

    render_init(&x, MNS_GET_SUBSCRIPTION_ATTRIBUTES, SMQ_OP_GET_SUBSCRIPTION);
    errors_set(&x.call.op.result, SMQ_E_SUBSCRIPTION_NOT_EXIST, NULL);
    render_run(&x);
    assert_int_equal(x.resp.status, 404);
    render_free(&x);
}

static void fill_subs(struct smq_op *op, size_t n)
{
    static const char *const names[] = {"a", "b", "c"};

    op->slist.subs = calloc(n ? n : 1, sizeof *op->slist.subs);
    assert_non_null(op->slist.subs);
    for (size_t i = 0; i < n; i++)
        fill_sub(&op->slist.subs[i], names[i], i == 0 ? "" : "x", i == 0 ? NULL : "d");
    op->slist.n_subs = n;
}

static void test_api_render_list_subscriptions(void **state)
{
    struct render x;

    (void)state;
    render_init(&x, MNS_LIST_SUBSCRIPTION_BY_TOPIC, SMQ_OP_LIST_SUBSCRIPTIONS);
    fill_subs(&x.call.op, 2);
    snprintf(x.call.op.slist.next_marker, sizeof x.call.op.slist.next_marker, "c");
    render_run(&x);
    assert_int_equal(x.resp.status, 200);
    assert_body(&x.resp, DECL "<Subscriptions " NS "><Subscription><SubscriptionURL>" TOPIC_URL
                "q/subscriptions/a</SubscriptionURL></Subscription><Subscription>"
                "<SubscriptionURL>" TOPIC_URL "q/subscriptions/b</SubscriptionURL></Subscription>"
                "<NextMarker>c</NextMarker></Subscriptions>");
    render_free(&x);

    render_init(&x, MNS_LIST_SUBSCRIPTION_BY_TOPIC, SMQ_OP_LIST_SUBSCRIPTIONS);
    fill_subs(&x.call.op, 0);
    render_run(&x);
    assert_body(&x.resp, DECL "<Subscriptions " NS "></Subscriptions>");
    render_free(&x);

    render_init(&x, MNS_LIST_SUBSCRIPTION_BY_TOPIC, SMQ_OP_LIST_SUBSCRIPTIONS);
    rq_add(&x.r, "x-mns-with-meta", "true");
    fill_subs(&x.call.op, 2);
    render_run(&x);
    assert_body(&x.resp, DECL "<Subscriptions " NS "><Subscription><SubscriptionURL>" TOPIC_URL
                "q/subscriptions/a</SubscriptionURL>" SUB_XML("1000000000000000", "a", "", "")
                "</Subscription><Subscription><SubscriptionURL>" TOPIC_URL "q/subscriptions/b"
                "</SubscriptionURL>" SUB_XML("1000000000000000", "b", "<FilterTag>x</FilterTag>",
                "<DlqEnabled>True</DlqEnabled><DlqTargetQueue>d</DlqTargetQueue>")
                "</Subscription></Subscriptions>");
    render_free(&x);
}

/* ---- the push signing certificate (docs/protocol.md §12.1, §13.11) ------------------- */

static bool cert_asked(const char *method, const char *target)
{
    struct rq r;

    rq_init(&r, method, target, NULL);
    return api_signing_cert_request(&r.req);
}

/* Only a GET or HEAD of exactly the path (a query allowed) skips
 * authentication; nothing else is taken for it. */
static void test_api_signing_cert_request(void **state)
{
    (void)state;
    assert_true(cert_asked("GET", "/smqd/signing-cert.pem"));
    assert_true(cert_asked("HEAD", "/smqd/signing-cert.pem"));
    assert_true(cert_asked("GET", "/smqd/signing-cert.pem?v=1"));
    assert_false(cert_asked("POST", "/smqd/signing-cert.pem"));
    assert_false(cert_asked("PUT", "/smqd/signing-cert.pem"));
    assert_false(cert_asked("DELETE", "/smqd/signing-cert.pem"));
    assert_false(cert_asked("get", "/smqd/signing-cert.pem"));
    assert_false(cert_asked("GET", "/smqd/signing-cert.pem/"));
    assert_false(cert_asked("GET", "/smqd/signing-cert.pemx"));
    assert_false(cert_asked("GET", "/smqd/signing-cert"));
    assert_false(cert_asked("GET", "/SMQD/signing-cert.pem"));
    assert_false(cert_asked("GET", "/queues/smqd/signing-cert.pem"));
    assert_false(cert_asked("GET", "/"));
}

/* The answer: 200, the PEM as given, its own Content-Type; 503 while no
 * certificate is loaded. */
static void test_api_signing_cert_answer(void **state)
{
    static const char pem[] = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
    struct api_ctx c = ctx;
    struct api_response resp = {0};
    struct smq_errinfo ei = {0, ""};

    (void)state;
    buf_init(&resp.body);
    c.signing_cert_pem = pem;
    assert_int_equal(api_signing_cert(&c, &resp, &ei), 0);
    assert_int_equal(resp.status, 200);
    assert_string_equal(resp.content_type, "application/x-pem-file");
    assert_int_equal(resp.body.len, strlen(pem));
    assert_memory_equal(resp.body.data, pem, strlen(pem));
    buf_free(&resp.body);

    resp = (struct api_response){0};
    buf_init(&resp.body);
    c.signing_cert_pem = NULL;
    assert_int_equal(api_signing_cert(&c, &resp, &ei), SMQ_E_SERVICE_UNAVAILABLE);
    assert_int_equal(ei.err, SMQ_E_SERVICE_UNAVAILABLE);
    assert_int_equal(resp.body.len, 0);
    buf_free(&resp.body);
}

/* Any other method on the path is an ordinary request: authenticated
 * first, then refused as an unknown route; an unsigned one is refused for
 * its missing signature. */
static void test_api_signing_cert_other_methods(void **state)
{
    struct api_call call;
    struct smq_errinfo ei;
    struct rq r;

    (void)state;
    run_err("POST", "/smqd/signing-cert.pem", "x", SMQ_E_INVALID_REQUEST_URL);
    run_err("DELETE", "/smqd/signing-cert.pem", NULL, SMQ_E_INVALID_REQUEST_URL);
    run_err("PUT", "/smqd/signing-cert.pem", NULL, SMQ_E_INVALID_REQUEST_URL);
    rq_init(&r, "POST", "/smqd/signing-cert.pem", NULL);
    assert_int_equal(prepare(&r, &call, &ei), SMQ_E_MISSING_AUTHORIZATION);
    api_call_free(&call);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_api_action_names),
        cmocka_unit_test(test_api_signing_cert_request),
        cmocka_unit_test(test_api_signing_cert_answer),
        cmocka_unit_test(test_api_signing_cert_other_methods),
        cmocka_unit_test(test_api_prepare_create_queue),
        cmocka_unit_test(test_api_prepare_create_queue_all_attributes),
        cmocka_unit_test(test_api_prepare_dlq_policy),
        cmocka_unit_test(test_api_prepare_set_queue_attributes),
        cmocka_unit_test(test_api_prepare_queue_wrong_root),
        cmocka_unit_test(test_api_prepare_get_and_delete_queue),
        cmocka_unit_test(test_api_prepare_list_queue),
        cmocka_unit_test(test_api_prepare_list_ret_number_range),
        cmocka_unit_test(test_api_prepare_send_message),
        cmocka_unit_test(test_api_prepare_send_md5_of_text_after_unescaping),
        cmocka_unit_test(test_api_prepare_send_priority),
        cmocka_unit_test(test_api_prepare_send_delay),
        cmocka_unit_test(test_api_prepare_send_error_messages),
        cmocka_unit_test(test_api_prepare_send_missing_body),
        cmocka_unit_test(test_api_prepare_batch_send),
        cmocka_unit_test(test_api_prepare_batch_send_limits),
        cmocka_unit_test(test_api_prepare_receive),
        cmocka_unit_test(test_api_prepare_receive_waitseconds_errors),
        cmocka_unit_test(test_api_prepare_batch_receive),
        cmocka_unit_test(test_api_prepare_peek),
        cmocka_unit_test(test_api_prepare_delete_message),
        cmocka_unit_test(test_api_prepare_delete_query_handle_wins_over_body),
        cmocka_unit_test(test_api_prepare_delete_message_errors),
        cmocka_unit_test(test_api_prepare_batch_delete),
        cmocka_unit_test(test_api_prepare_batch_delete_limits),
        cmocka_unit_test(test_api_prepare_change_visibility),
        cmocka_unit_test(test_api_prepare_change_visibility_errors),
        cmocka_unit_test(test_api_prepare_bad_queue_names_in_path),
        cmocka_unit_test(test_api_prepare_percent_encoded_name_decoded),
        cmocka_unit_test(test_api_prepare_unknown_paths),
        cmocka_unit_test(test_api_prepare_unknown_methods),
        cmocka_unit_test(test_api_prepare_queue_attribute_ranges),
        cmocka_unit_test(test_api_prepare_content_md5),
        cmocka_unit_test(test_api_prepare_bad_signature),
        cmocka_unit_test(test_api_prepare_auth_errors),
        cmocka_unit_test(test_api_render_create_queue),
        cmocka_unit_test(test_api_render_set_and_delete_queue),
        cmocka_unit_test(test_api_render_every_kind_has_a_row),
        cmocka_unit_test(test_api_render_get_queue_attributes),
        cmocka_unit_test(test_api_render_list_queue),
        cmocka_unit_test(test_api_render_list_queue_with_meta),
        cmocka_unit_test(test_api_render_send_message),
        cmocka_unit_test(test_api_render_batch_send_message),
        cmocka_unit_test(test_api_render_prepared_send_round_trip),
        cmocka_unit_test(test_api_render_receive_message),
        cmocka_unit_test(test_api_render_receive_escapes_body),
        cmocka_unit_test(test_api_render_receive_uses_stored_md5),
        cmocka_unit_test(test_api_render_batch_receive_one_message),
        cmocka_unit_test(test_api_render_batch_receive_two_messages),
        cmocka_unit_test(test_api_render_peek_message),
        cmocka_unit_test(test_api_render_batch_peek),
        cmocka_unit_test(test_api_render_delete_message),
        cmocka_unit_test(test_api_render_batch_delete_partial),
        cmocka_unit_test(test_api_render_batch_delete_all_failed_and_empty_text),
        cmocka_unit_test(test_api_render_batch_delete_all_ok),
        cmocka_unit_test(test_api_render_batch_delete_request_error),
        cmocka_unit_test(test_api_render_change_visibility),
        cmocka_unit_test(test_api_render_op_error),
        cmocka_unit_test(test_api_render_error_document),
        cmocka_unit_test(test_api_render_error_escapes_message),
        cmocka_unit_test(test_api_render_error_statuses),
        cmocka_unit_test(test_api_query_path_segment),
        cmocka_unit_test(test_api_topic_routes),
        cmocka_unit_test(test_api_topic_invalid_urls),
        cmocka_unit_test(test_api_topic_names),
        cmocka_unit_test(test_api_topic_attributes),
        cmocka_unit_test(test_api_subscribe_body),
        cmocka_unit_test(test_api_subscribe_errors),
        cmocka_unit_test(test_api_subscription_dlq_policy),
        cmocka_unit_test(test_api_set_subscription),
        cmocka_unit_test(test_api_endpoint_too_long),
        cmocka_unit_test(test_api_topic_list_paging),
        cmocka_unit_test(test_api_publish_op),
        cmocka_unit_test(test_api_publish_body_decoded),
        cmocka_unit_test(test_api_publish_ignored_parts),
        cmocka_unit_test(test_api_publish_body_size),
        cmocka_unit_test(test_api_publish_tag_limit),
        cmocka_unit_test(test_api_publish_problems),
        cmocka_unit_test(test_api_publish_content_md5),
        cmocka_unit_test(test_api_render_published),
        cmocka_unit_test(test_api_publish_round_trip),
        cmocka_unit_test(test_api_render_publish_errors),
        cmocka_unit_test(test_api_topic_error_codes),
        cmocka_unit_test(test_api_topic_grants_on_topic),
        cmocka_unit_test(test_api_topic_grants_on_queues),
        cmocka_unit_test(test_api_render_create_topic_and_subscribe),
        cmocka_unit_test(test_api_render_topic_no_content),
        cmocka_unit_test(test_api_render_get_topic_attributes),
        cmocka_unit_test(test_api_render_list_topic),
        cmocka_unit_test(test_api_render_get_subscription_attributes),
        cmocka_unit_test(test_api_render_list_subscriptions),
    };
    int rc;

    xml_global_init();
    rc = cmocka_run_group_tests(tests, setup, NULL);
    xml_global_cleanup();
    return rc;
}
