/*
 * test_notify.c — unit tests for notify.c: every endpoint form a
 * subscription may name (docs/protocol.md §13.2) and every refusal, its
 * boundaries, what is stored (trimmed) and the message each refusal gives;
 * the exact bytes of each notification body (§13.9), the content types,
 * both retry schedules in full (§13.12), and an HTTP push's Date, headers
 * and string to sign (§13.10, §13.11).
 */
#define _DEFAULT_SOURCE   /* gmtime_r() under -std=c11 as well */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "smqd/buf.h"
#include "smqd/crypto.h"
#include "smqd/errors.h"
#include "smqd/notify.h"
#include "smqd/qname.h"

static struct notify_endpoint ep;
static char trimmed[SMQ_ENDPOINT_MAX + 1];
static struct smq_errinfo ei;

static int parse(const char *text)
{
    memset(&ei, 0, sizeof ei);
    return notify_endpoint_parse_err(text, strlen(text), &ep, trimmed, &ei);
}

/* text is refused with SMQ_E_ENDPOINT_INVALID and a message holding want. */
static void refused(const char *text, const char *want)
{
    char t2[SMQ_ENDPOINT_MAX + 1];
    struct notify_endpoint e2;

    if (parse(text) != SMQ_E_ENDPOINT_INVALID)
        fail_msg("accepted: \"%s\"", text);
    assert_int_equal(ei.err, SMQ_E_ENDPOINT_INVALID);
    if (strstr(ei.msg, want) == NULL)
        fail_msg("\"%s\": message \"%s\" lacks \"%s\"", text, ei.msg, want);
    assert_string_equal(trimmed, "");
    /* the plain form refuses it too, and leaves nothing behind */
    assert_int_equal(notify_endpoint_parse(text, strlen(text), &e2, t2), SMQ_E_ENDPOINT_INVALID);
    assert_string_equal(t2, "");
}

static void http_ok(const char *text, bool https, const char *host, int port,
                    const char *authority, const char *target)
{
    if (parse(text) != 0)
        fail_msg("refused: \"%s\": %s", text, ei.msg);
    assert_int_equal(ep.kind, NOTIFY_EP_HTTP);
    assert_int_equal(ep.https, https);
    assert_string_equal(ep.host, host);
    assert_int_equal(ep.port, port);
    assert_string_equal(ep.authority, authority);
    assert_string_equal(ep.target, target);
    assert_string_equal(ep.queue, "");
    assert_string_equal(trimmed, text);
}

static void queue_ok(const char *text, const char *queue)
{
    if (parse(text) != 0)
        fail_msg("refused: \"%s\": %s", text, ei.msg);
    assert_int_equal(ep.kind, NOTIFY_EP_QUEUE);
    assert_string_equal(ep.queue, queue);
    assert_string_equal(ep.host, "");
    assert_string_equal(trimmed, text);
}

/* ---- http(s) ------------------------------------------------------------ */

static void test_http_forms(void **state)
{
    (void)state;
    http_ok("http://push.example/n", false, "push.example", 80, "push.example", "/n");
    http_ok("https://push.example/n?a=1&b=%20", true, "push.example", 443, "push.example",
            "/n?a=1&b=%20");
    http_ok("http://127.0.0.1:8080/hook", false, "127.0.0.1", 8080, "127.0.0.1:8080", "/hook");
    http_ok("http://[::1]:9000/x", false, "[::1]", 9000, "[::1]:9000", "/x");
    http_ok("https://[2001:db8::1]/", true, "[2001:db8::1]", 443, "[2001:db8::1]", "/");
    http_ok("http://[::ffff:10.0.0.1]/", false, "[::ffff:10.0.0.1]", 80, "[::ffff:10.0.0.1]",
            "/");
    http_ok("http://localhost", false, "localhost", 80, "localhost", "/notifications");
    http_ok("http://h:1", false, "h", 1, "h:1", "/notifications");
    http_ok("https://h:65535/", true, "h", 65535, "h:65535", "/");
    http_ok("http://h?x=1", false, "h", 80, "h", "/notifications?x=1");
    http_ok("http://my_host.example.:81/a/b/", false, "my_host.example.", 81, "my_host.example.:81",
            "/a/b/");
}

static void test_http_scheme_case(void **state)
{
    (void)state;
    http_ok("HTTP://H/x", false, "H", 80, "H", "/x");
    http_ok("HtTpS://h/x", true, "h", 443, "h", "/x");
    refused("htp://h/", "not a queue of this server");
    refused("ftp://h/", "not a queue of this server");
    refused("http:/h/", "not a queue of this server");
    refused("http//h/", "not a queue of this server");
    refused("https:h", "not a queue of this server");
}

static void test_http_refusals(void **state)
{
    (void)state;
    refused("http://", "must name a host");
    refused("http:///x", "must name a host");
    refused("http://:80/x", "must name a host");
    refused("http://user@h/", "user information");
    refused("http://user:pw@h/", "user information");
    refused("http://h/x#frag", "fragment");
    refused("http://h/a b", "whitespace");
    refused("http://h/a\tb", "whitespace");
    refused("http://h/a\x7f", "whitespace");
    refused("http://h/\xc3\xa9", "non-ASCII");
    refused("http://h:0/", "port");
    refused("http://h:65536/", "port");
    refused("http://h:/", "port");
    refused("http://h:8o/", "port");
    refused("http://h:000080/", "port");
    refused("http://h:-1/", "port");
    refused("http://h:80:81/", "port");
    refused("http://[::1/", "IPv6");
    refused("http://[]/", "IPv6");
    refused("http://[::g]/", "IPv6");
    refused("http://[1]/", "IPv6");
    refused("http://[1:2]/", "IPv6");
    refused("http://[::1]x/", "port");
    refused("http://[::1]:0/", "port");
    refused("http://::1/", "must name a host");
    refused("http://a..b/", "not a valid host");
    refused("http://.a/", "not a valid host");
    refused("http://a%62/", "not a valid host");
    refused("http://a*b/", "not a valid host");
}

static void test_http_host_length(void **state)
{
    char text[300], host[256];

    (void)state;
    memset(host, 'h', 255);
    host[255] = '\0';
    snprintf(text, sizeof text, "http://%s/", host);
    http_ok(text, false, host, 80, host, "/");
    snprintf(text, sizeof text, "http://%sh/", host);
    refused(text, "longer than 255");
}

/* ---- queues ------------------------------------------------------------- */

static void test_queue_forms(void **state)
{
    (void)state;
    queue_ok("acs:mns:cn-hangzhou:1234567890:queues/inbox", "inbox");
    /* what Go and Java write against smqd (docs/topics-sdk-notes.md D12) */
    queue_ok("acs:mns:cn-hangzhou:127:queues/q-1", "q-1");
    queue_ok("acs:mns:cn-hangzhou:localhost:queues/Q", "Q");
    queue_ok("acs:mns:cn-hangzhou:::1:queues/v6", "v6");
    queue_ok("acs:mns:cn-hangzhou:[::1]:queues/v6", "v6");
    queue_ok("acs:mns::127:queues/0", "0");
    queue_ok("acs:mns::queues/q", "q");
    /* the last ":queues/" names the queue */
    queue_ok("acs:mns:r:queues/a:queues/b", "b");
}

static void test_queue_names(void **state)
{
    char text[SMQ_ENDPOINT_MAX + 1], name[SMQ_QUEUE_NAME_MAX + 2];

    (void)state;
    memset(name, 'q', SMQ_QUEUE_NAME_MAX);
    name[SMQ_QUEUE_NAME_MAX] = '\0';
    snprintf(text, sizeof text, "acs:mns:r:a:queues/%s", name);
    queue_ok(text, name);
    name[SMQ_QUEUE_NAME_MAX] = 'q';
    name[SMQ_QUEUE_NAME_MAX + 1] = '\0';
    snprintf(text, sizeof text, "acs:mns:r:a:queues/%s", name);
    refused(text, qname_problem_text(QNAME_LENGTH));
    refused("acs:mns:r:a:queues/", qname_problem_text(QNAME_LENGTH));
    refused("acs:mns:r:a:queues/-q", qname_problem_text(QNAME_FIRST_CHAR));
    refused("acs:mns:r:a:queues/q_1", qname_problem_text(QNAME_CHARS));
    refused("acs:mns:r:a:queues/q/x", qname_problem_text(QNAME_CHARS));
    refused("acs:mns:r:a:queues/q.x", qname_problem_text(QNAME_CHARS));
}

static void test_queue_refusals(void **state)
{
    (void)state;
    refused("acs:mns:r:a:queue/q", "acs:mns:{region}:{account}:queues/{queue}");
    refused("acs:mns:r:a:topics/t", "acs:mns:{region}:{account}:queues/{queue}");
    refused("acs:mns:queues/q", "acs:mns:{region}:{account}:queues/{queue}");
    refused("acs:mns:", "acs:mns:{region}:{account}:queues/{queue}");
    refused("acs:mns:r :a:queues/q", "visible ASCII");
    refused("acs:mns:r\x01:a:queues/q", "visible ASCII");
    refused("acs:mns:r\xc3\xa9:a:queues/q", "visible ASCII");
    /* the prefix is matched as written, in lower case */
    refused("ACS:MNS:r:a:queues/q", "not a queue of this server");
    refused("acs:mq:r:a:queues/q", "not a queue of this server");
}

/* ---- mail, SMS and anything else ---------------------------------------- */

static void test_mail_sms_and_others(void **state)
{
    (void)state;
    refused("mail:directmail:someone@example.com", "mail or SMS");
    refused("MAIL:directmail:someone@example.com", "mail or SMS");
    refused("sms:directsms:anonymous", "mail or SMS");
    refused("sms:directsms:13800000000", "mail or SMS");
    refused("acs:push:r:a:push/x", "not a queue of this server");
    refused("inbox", "not a queue of this server");
    refused("push.example/n", "not a queue of this server");
}

/* ---- trimming, emptiness, length ---------------------------------------- */

static void test_trim_and_empty(void **state)
{
    const char *padded = " \t\r\n http://h/x \n\t";

    (void)state;
    refused("", "empty");
    refused("   ", "empty");
    refused("\t\r\n", "empty");
    assert_int_equal(parse(padded), 0);
    assert_string_equal(trimmed, "http://h/x");
    assert_string_equal(ep.target, "/x");
    assert_int_equal(parse("\n acs:mns:r:a:queues/q \n"), 0);
    assert_string_equal(trimmed, "acs:mns:r:a:queues/q");
    assert_string_equal(ep.queue, "q");
    /* only len bytes are read */
    assert_int_equal(notify_endpoint_parse("http://h/xyz", 10, &ep, trimmed), 0);
    assert_string_equal(trimmed, "http://h/x");
    /* a NUL inside is a control character */
    assert_int_equal(notify_endpoint_parse("http://h/\0x", 11, &ep, trimmed),
                     SMQ_E_ENDPOINT_INVALID);
}

static void test_max_length(void **state)
{
    static char text[SMQ_ENDPOINT_MAX + 8];
    const char *head = "http://h/";
    size_t hl = strlen(head);

    (void)state;
    memcpy(text, head, hl);
    memset(text + hl, 'p', SMQ_ENDPOINT_MAX - hl);
    text[SMQ_ENDPOINT_MAX] = '\0';
    assert_int_equal(parse(text), 0);
    assert_int_equal(strlen(trimmed), SMQ_ENDPOINT_MAX);
    assert_int_equal(strlen(ep.target), SMQ_ENDPOINT_MAX - hl + 1);
    /* blanks around do not count */
    char padded[sizeof text + 4];   /* room for all text may hold, as GCC checks */
    snprintf(padded, sizeof padded, "  %s  ", text);
    assert_int_equal(parse(padded), 0);
    assert_string_equal(trimmed, text);
    /* one over */
    text[SMQ_ENDPOINT_MAX] = 'p';
    text[SMQ_ENDPOINT_MAX + 1] = '\0';
    refused(text, "longer than 1024");

    /* no path and a query: target is /notifications and the query, at most
     * 1024 bytes too (exactly, then one over) */
    size_t ql = SMQ_ENDPOINT_MAX - strlen("/notifications");   /* "?" and the query */
    memcpy(text, "http://h", 8);
    text[8] = '?';
    memset(text + 9, 'q', ql - 1);
    text[8 + ql] = '\0';
    assert_int_equal(parse(text), 0);
    assert_int_equal(strncmp(ep.target, "/notifications?qq", 17), 0);
    assert_int_equal(strlen(ep.target), SMQ_ENDPOINT_MAX);
    text[8 + ql] = 'q';
    text[8 + ql + 1] = '\0';
    refused(text, "request target");

    /* a queue endpoint at exactly 1024 and one over */
    memcpy(text, "acs:mns:", 8);
    memset(text + 8, 'r', SMQ_ENDPOINT_MAX - 8 - strlen(":queues/q"));
    memcpy(text + SMQ_ENDPOINT_MAX - strlen(":queues/q"), ":queues/q", strlen(":queues/q") + 1);
    assert_int_equal(strlen(text), SMQ_ENDPOINT_MAX);
    queue_ok(text, "q");
    memcpy(text + SMQ_ENDPOINT_MAX - strlen(":queues/q"), ":queues/qq", strlen(":queues/qq") + 1);
    refused(text, "longer than 1024");
}

/* ---- notification bodies (§13.9) ------------------------------------------ */

/* MD5 of "hello world", as the §13.9 example shows it. */
static const unsigned char md5_hello[MNS_MD5_LEN] = {
    0x5e, 0xb6, 0x3b, 0xbb, 0xe0, 0x1e, 0xee, 0xd0,
    0x93, 0xcb, 0x22, 0xbb, 0x8f, 0x5a, 0xcd, 0xc3,
};
/* Any 16 bytes: render writes what it is given, in upper-case hex. */
static const unsigned char md5_seq[MNS_MD5_LEN] = {
    0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07,
    0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0xfe, 0xff,
};

static struct notify_msg sample(const char *body, size_t len, const char *tag)
{
    struct notify_msg m = {
        .account_id = NOTIFY_ACCOUNT_ID_DEFAULT, .topic = "t", .sub = "s",
        .msg_id = "0909FF0D9C3A630C0000000000000007", .body = body, .body_len = len,
        .md5 = md5_hello, .tag = tag, .publish_ms = 1704164645000,
    };
    return m;
}

/* Renders m in format f onto a buffer already holding "pre" and checks the
 * bytes appended are exactly want[0..want_len). */
static void renders(enum smq_notify_format f, const struct notify_msg *m, const char *want,
                    size_t want_len)
{
    struct smq_buf b;

    buf_init(&b);
    buf_puts(&b, "pre");
    assert_int_equal(notify_render(f, m, &b), 0);
    if (b.len != want_len + 3 || memcmp(b.data + 3, want, want_len) != 0)
        fail_msg("got  %.*s\nwant %.*s", (int)b.len - 3, b.data + 3, (int)want_len, want);
    assert_memory_equal(b.data, "pre", 3);
    buf_free(&b);
}

#define RENDERS(f, m, lit) renders((f), (m), (lit), sizeof(lit) - 1)

#define XML_HEAD                                                                            \
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Notification xmlns=\"http://mns.aliyuncs.com/doc/v1/\">" \
    "<TopicOwner>1000000000000000</TopicOwner><TopicName>t</TopicName>"                     \
    "<Subscriber>1000000000000000</Subscriber><SubscriptionName>s</SubscriptionName>"       \
    "<MessageId>0909FF0D9C3A630C0000000000000007</MessageId>"
#define JSON_HEAD                                                                           \
    "{\"TopicOwner\":\"1000000000000000\",\"TopicName\":\"t\",\"Subscriber\":\"1000000000000000\"," \
    "\"SubscriptionName\":\"s\",\"MessageId\":\"0909FF0D9C3A630C0000000000000007\","

static void test_render_xml_plain(void **state)
{
    struct notify_msg m = sample("hello world", 11, "important");

    (void)state;
    /* the §13.9 example, joined into its one line */
    RENDERS(SMQ_NOTIFY_XML, &m,
            XML_HEAD "<Message>hello world</Message><MessageMD5>5EB63BBBE01EEED093CB22BB8F5ACDC3"
                     "</MessageMD5><MessageTag>important</MessageTag>"
                     "<PublishTime>1704164645000</PublishTime></Notification>");
    m.tag = "";
    RENDERS(SMQ_NOTIFY_XML, &m,
            XML_HEAD "<Message>hello world</Message><MessageMD5>5EB63BBBE01EEED093CB22BB8F5ACDC3"
                     "</MessageMD5><PublishTime>1704164645000</PublishTime></Notification>");
    m.tag = NULL;
    m.md5 = md5_seq;
    m.publish_ms = 0;
    RENDERS(SMQ_NOTIFY_XML, &m,
            XML_HEAD "<Message>hello world</Message><MessageMD5>000102030405060708090A0B0C0DFEFF"
                     "</MessageMD5><PublishTime>0</PublishTime></Notification>");
}

static void test_render_xml_escaping(void **state)
{
    static const char body[] = "a<b & c>d \"q\" 'a' ]]> &amp;\r\n\t\xc3\xa9\xe2\x82\xac";
    struct notify_msg m = sample(body, sizeof body - 1, "x&y<z>");

    (void)state;
    /* §4: & < > and CR escaped, quotes and everything else as they are */
    RENDERS(SMQ_NOTIFY_XML, &m,
            XML_HEAD "<Message>a&lt;b &amp; c&gt;d \"q\" 'a' ]]&gt; &amp;amp;&#13;\n\t\xc3\xa9\xe2\x82\xac"
                     "</Message><MessageMD5>5EB63BBBE01EEED093CB22BB8F5ACDC3</MessageMD5>"
                     "<MessageTag>x&amp;y&lt;z&gt;</MessageTag>"
                     "<PublishTime>1704164645000</PublishTime></Notification>");
    /* an empty body is an empty element, not a missing one */
    m = sample("", 0, NULL);
    RENDERS(SMQ_NOTIFY_XML, &m,
            XML_HEAD "<Message></Message><MessageMD5>5EB63BBBE01EEED093CB22BB8F5ACDC3</MessageMD5>"
                     "<PublishTime>1704164645000</PublishTime></Notification>");
}

static void test_render_json_plain(void **state)
{
    struct notify_msg m = sample("hello world", 11, "important");

    (void)state;
    RENDERS(SMQ_NOTIFY_JSON, &m,
            JSON_HEAD "\"Message\":\"hello world\",\"MessageMD5\":\"5EB63BBBE01EEED093CB22BB8F5ACDC3\","
                      "\"MessageTag\":\"important\",\"PublishTime\":1704164645000}");
    m.tag = NULL;
    RENDERS(SMQ_NOTIFY_JSON, &m,
            JSON_HEAD "\"Message\":\"hello world\",\"MessageMD5\":\"5EB63BBBE01EEED093CB22BB8F5ACDC3\","
                      "\"PublishTime\":1704164645000}");
    m.tag = "";
    RENDERS(SMQ_NOTIFY_JSON, &m,
            JSON_HEAD "\"Message\":\"hello world\",\"MessageMD5\":\"5EB63BBBE01EEED093CB22BB8F5ACDC3\","
                      "\"PublishTime\":1704164645000}");
}

static void test_render_json_escaping(void **state)
{
    /* every C0 control, '"', '\\', '/', DEL, XML specials, 2-, 3- and
     * 4-byte UTF-8 and one stray byte that starts no UTF-8 */
    static const char body[] =
        "\x00\x01\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x1b\x1f \"\\/\x7f<&>'"
        "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xff!";
    struct notify_msg m = sample(body, sizeof body - 1, "\xe6\xa0\x87\"tag\"");

    (void)state;
    RENDERS(SMQ_NOTIFY_JSON, &m,
            JSON_HEAD "\"Message\":\"\\u0000\\u0001\\u0007\\b\\t\\n\\u000b\\f\\r\\u000e\\u001b\\u001f"
                      " \\\"\\\\/\x7f<&>'\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xef\xbf\xbd!\","
                      "\"MessageMD5\":\"5EB63BBBE01EEED093CB22BB8F5ACDC3\","
                      "\"MessageTag\":\"\xe6\xa0\x87\\\"tag\\\"\",\"PublishTime\":1704164645000}");
}

static void test_render_simplified(void **state)
{
    static const char body[] = "a<b>\x00\r\n\"\xc3\xa9";
    struct notify_msg m = sample(body, sizeof body - 1, "important");

    (void)state;
    /* the body itself, nothing else of the publish */
    renders(SMQ_NOTIFY_SIMPLIFIED, &m, body, sizeof body - 1);
    m.md5 = NULL;            /* not needed for the body alone */
    renders(SMQ_NOTIFY_SIMPLIFIED, &m, body, sizeof body - 1);
    m = sample(NULL, 0, NULL);
    renders(SMQ_NOTIFY_SIMPLIFIED, &m, "", 0);
}

/* Refused with SMQ_E_INVALID_ARGUMENT, the buffer untouched. */
static void render_refused(int f, const struct notify_msg *m)
{
    struct smq_buf b;

    buf_init(&b);
    buf_puts(&b, "pre");
    assert_int_equal(notify_render((enum smq_notify_format)f, m, &b), SMQ_E_INVALID_ARGUMENT);
    assert_int_equal(b.len, 3);
    assert_false(buf_failed(&b));
    buf_free(&b);
}

static void test_render_invalid(void **state)
{
    struct notify_msg m = sample("hello world", 11, NULL);

    (void)state;
    render_refused(3, &m);
    render_refused(-1, &m);
    render_refused(SMQ_NOTIFY_XML, NULL);
    m.md5 = NULL;
    render_refused(SMQ_NOTIFY_XML, &m);
    render_refused(SMQ_NOTIFY_JSON, &m);
    m = sample(NULL, 1, NULL);
    render_refused(SMQ_NOTIFY_SIMPLIFIED, &m);
    render_refused(SMQ_NOTIFY_XML, &m);
    render_refused(SMQ_NOTIFY_JSON, &m);
}

static void test_content_type(void **state)
{
    (void)state;
    assert_string_equal(notify_content_type(SMQ_NOTIFY_XML), "text/xml;charset=utf-8");
    assert_string_equal(notify_content_type(SMQ_NOTIFY_JSON), "application/json;charset=utf-8");
    assert_string_equal(notify_content_type(SMQ_NOTIFY_SIMPLIFIED), "text/plain;charset=utf-8");
    /* an unknown format is read as the default */
    assert_string_equal(notify_content_type((enum smq_notify_format)7), "text/xml;charset=utf-8");
    assert_string_equal(notify_content_type((enum smq_notify_format)-1), "text/xml;charset=utf-8");
}

/* ---- retries (§13.12) ------------------------------------------------------ */

static void backoff_schedule(enum smq_notify_strategy s)
{
    int64_t lo = 0, hi = 0;

    assert_int_equal(notify_max_attempts(s), 4);
    for (uint32_t n = 1; n <= 3; n++) {
        int64_t prev = 0;

        assert_int_equal(notify_retry_interval_ms(s, n, 0), 10000);
        assert_int_equal(notify_retry_interval_ms(s, n, UINT32_MAX), 20000);
        assert_int_equal(notify_retry_interval_ms(s, n, 0x80000000u), 15000);
        /* every draw in bounds, never decreasing in rnd */
        for (uint64_t r = 0; r <= UINT32_MAX; r += 0x01000193u) {
            int64_t v = notify_retry_interval_ms(s, n, (uint32_t)r);

            assert_true(v >= 10000 && v <= 20000 && v >= prev);
            prev = v;
        }
        lo += notify_retry_interval_ms(s, n, 0);
        hi += notify_retry_interval_ms(s, n, UINT32_MAX);
    }
    /* the last attempt 30-60 s after the first */
    assert_int_equal(lo, 30000);
    assert_int_equal(hi, 60000);
    assert_int_equal(notify_retry_interval_ms(s, 0, 0), -1);
    assert_int_equal(notify_retry_interval_ms(s, 4, 0), -1);
    assert_int_equal(notify_retry_interval_ms(s, UINT32_MAX, 0), -1);
}

static void test_retry_backoff(void **state)
{
    (void)state;
    backoff_schedule(SMQ_NOTIFY_BACKOFF_RETRY);
    /* an unknown strategy is read as the default */
    backoff_schedule((enum smq_notify_strategy)9);
    backoff_schedule((enum smq_notify_strategy)-1);
}

static void test_retry_exponential(void **state)
{
    const enum smq_notify_strategy s = SMQ_NOTIFY_EXPONENTIAL_DECAY_RETRY;
    static const int64_t first[9] = {1, 2, 4, 8, 16, 32, 64, 128, 256};
    int64_t due = 0;

    (void)state;
    assert_int_equal(notify_max_attempts(s), 177);
    for (uint32_t n = 1; n <= 176; n++) {
        int64_t want = n <= 9 ? first[n - 1] * 1000 : 512000;

        assert_int_equal(notify_retry_interval_ms(s, n, 0), want);
        assert_int_equal(notify_retry_interval_ms(s, n, UINT32_MAX), want);   /* no spread */
        due += want;
        /* §13.12's "due after the first attempt" row */
        if (n <= 9)
            assert_int_equal(due, ((int64_t)1000 << n) - 1000);
        else
            assert_int_equal(due, (511 + 512 * (int64_t)(n - 9)) * 1000);
    }
    /* 511 s + 167 x 512 s: 23 h 53 min 35 s */
    assert_int_equal(due, 86015000);
    assert_int_equal(due, ((23 * 60 + 53) * 60 + 35) * (int64_t)1000);
    assert_int_equal(notify_retry_interval_ms(s, 0, 0), -1);
    assert_int_equal(notify_retry_interval_ms(s, 177, 0), -1);
    assert_int_equal(notify_retry_interval_ms(s, UINT32_MAX, 0), -1);
}

/* ---- the push request (§13.10, §13.11) ------------------------------------- */

static void date_is(int64_t ms, const char *want)
{
    char out[30];

    memset(out, 'x', sizeof out);
    notify_http_date(ms, out);
    assert_string_equal(out, want);
}

static void test_http_date(void **state)
{
    char out[30], want[64];

    (void)state;
    date_is(0, "Thu, 01 Jan 1970 00:00:00 GMT");
    date_is(1999, "Thu, 01 Jan 1970 00:00:01 GMT");
    date_is(1704164645000, "Tue, 02 Jan 2024 03:04:05 GMT");       /* §13.11's example */
    date_is(1709208000000, "Thu, 29 Feb 2024 12:00:00 GMT");
    date_is(946684799999, "Fri, 31 Dec 1999 23:59:59 GMT");
    date_is(951868800000, "Wed, 01 Mar 2000 00:00:00 GMT");
    date_is(4107542400000, "Mon, 01 Mar 2100 00:00:00 GMT");       /* 2100 has no 29 Feb */
    /* clamped, never more than 29 characters */
    date_is(-1, "Thu, 01 Jan 1970 00:00:00 GMT");
    date_is(INT64_MIN, "Thu, 01 Jan 1970 00:00:00 GMT");
    date_is(253402300799000, "Fri, 31 Dec 9999 23:59:59 GMT");
    date_is(INT64_MAX, "Fri, 31 Dec 9999 23:59:59 GMT");
    /* the C library agrees over the whole range (cmocka runs in the C locale) */
    for (int64_t t = 0; t <= 253402300799; t += 86400 * 37 + 3607) {
        time_t tt = (time_t)t;
        struct tm tm;

        assert_non_null(gmtime_r(&tt, &tm));
        strftime(want, sizeof want, "%a, %d %b %Y %H:%M:%S GMT", &tm);
        notify_http_date(t * 1000, out);
        assert_string_equal(out, want);
    }
}

static struct notify_endpoint push_ep;

static struct notify_push push_of(const struct notify_msg *m, enum smq_notify_format f,
                                  const char *endpoint)
{
    struct notify_push p = {
        .msg = m, .format = f, .ep = &push_ep, .date = "Tue, 02 Jan 2024 03:04:05 GMT",
        .request_id = "5F2A1C9B04D70000000000A3",
        .cert_url = "http://127.0.0.1:8080/smqd/signing-cert.pem",
    };
    char t[SMQ_ENDPOINT_MAX + 1];

    assert_int_equal(notify_endpoint_parse(endpoint, strlen(endpoint), &push_ep, t), 0);
    return p;
}

static void header_is(const struct notify_header *h, const char *name, const char *value)
{
    assert_string_equal(h->name, name);
    assert_string_equal(h->value, value);
}

static void test_push_simplified(void **state)
{
    struct notify_msg m = sample("hello world", 11, "important");
    struct notify_push p = push_of(&m, SMQ_NOTIFY_SIMPLIFIED, "http://10.0.0.5:8000/hook");
    struct notify_header h[NOTIFY_PUSH_HEADERS_MAX];
    struct smq_buf sts;
    size_t n = 99;

    (void)state;
    buf_init(&sts);
    buf_puts(&sts, "stale");
    assert_int_equal(notify_push_headers(&p, "hello world", 11, h, &n, &sts), 0);
    assert_int_equal(n, 13);
    header_is(&h[0], "date", "Tue, 02 Jan 2024 03:04:05 GMT");
    header_is(&h[1], "content-type", "text/plain;charset=utf-8");
    header_is(&h[2], "content-md5", "NWViNjNiYmJlMDFlZWVkMDkzY2IyMmJiOGY1YWNkYzM=");
    header_is(&h[3], "x-mns-version", "2015-06-06");
    header_is(&h[4], "x-mns-request-id", "5F2A1C9B04D70000000000A3");
    header_is(&h[5], "x-mns-signing-cert-url",
              "aHR0cDovLzEyNy4wLjAuMTo4MDgwL3NtcWQvc2lnbmluZy1jZXJ0LnBlbQ==");
    header_is(&h[6], "x-mns-topic-owner", "1000000000000000");
    header_is(&h[7], "x-mns-topic-name", "t");
    header_is(&h[8], "x-mns-subscriber", "1000000000000000");
    header_is(&h[9], "x-mns-subscription-name", "s");
    header_is(&h[10], "x-mns-publish-time", "1704164645000");
    header_is(&h[11], "x-mns-message-id", "0909FF0D9C3A630C0000000000000007");
    header_is(&h[12], "x-mns-message-tag", "important");
    /* §13.11's example, unwrapped */
    assert_string_equal(sts.data,
        "POST\nNWViNjNiYmJlMDFlZWVkMDkzY2IyMmJiOGY1YWNkYzM=\ntext/plain;charset=utf-8\n"
        "Tue, 02 Jan 2024 03:04:05 GMT\n"
        "x-mns-message-id:0909FF0D9C3A630C0000000000000007\nx-mns-message-tag:important\n"
        "x-mns-publish-time:1704164645000\nx-mns-request-id:5F2A1C9B04D70000000000A3\n"
        "x-mns-signing-cert-url:aHR0cDovLzEyNy4wLjAuMTo4MDgwL3NtcWQvc2lnbmluZy1jZXJ0LnBlbQ==\n"
        "x-mns-subscriber:1000000000000000\nx-mns-subscription-name:s\nx-mns-topic-name:t\n"
        "x-mns-topic-owner:1000000000000000\nx-mns-version:2015-06-06\n/hook");
    /* untagged: no x-mns-message-tag */
    m.tag = "";
    assert_int_equal(notify_push_headers(&p, "hello world", 11, h, &n, &sts), 0);
    assert_int_equal(n, 12);
    header_is(&h[11], "x-mns-message-id", "0909FF0D9C3A630C0000000000000007");
    assert_null(strstr(sts.data, "x-mns-message-tag"));
    buf_free(&sts);
}

static void test_push_xml_json(void **state)
{
    struct notify_msg m = sample("hello world", 11, "important");
    struct notify_push p = push_of(&m, SMQ_NOTIFY_XML, "https://push.example/n?a=1&b=%20");
    struct notify_header h[NOTIFY_PUSH_HEADERS_MAX];
    struct smq_buf body, sts;
    char md5[33], b64[48];
    size_t n;

    (void)state;
    buf_init(&body);
    buf_init(&sts);
    assert_int_equal(notify_render(SMQ_NOTIFY_XML, &m, &body), 0);
    assert_int_equal(notify_push_headers(&p, body.data, body.len, h, &n, &sts), 0);
    /* no message id or tag outside SIMPLIFIED */
    assert_int_equal(n, 11);
    header_is(&h[1], "content-type", "text/xml;charset=utf-8");
    assert_int_equal(crypto_md5_hex(body.data, body.len, false, md5), 0);
    crypto_base64(md5, 32, b64);
    header_is(&h[2], "content-md5", b64);
    assert_int_equal(strlen(b64), 44);
    assert_null(strstr(sts.data, "x-mns-message-"));
    assert_non_null(strstr(sts.data, "\nx-mns-version:2015-06-06\n/n?a=1&b=%20"));
    assert_true(strncmp(sts.data, "POST\n", 5) == 0);
    p.format = SMQ_NOTIFY_JSON;
    assert_int_equal(notify_push_headers(&p, "", 0, h, &n, &sts), 0);
    header_is(&h[1], "content-type", "application/json;charset=utf-8");
    /* MD5 of nothing */
    header_is(&h[2], "content-md5", "ZDQxZDhjZDk4ZjAwYjIwNGU5ODAwOTk4ZWNmODQyN2U=");
    /* an endpoint with no path gets /notifications */
    p = push_of(&m, SMQ_NOTIFY_JSON, "http://push.example:8080");
    assert_int_equal(notify_push_headers(&p, "", 0, h, &n, &sts), 0);
    assert_non_null(strstr(sts.data, "x-mns-version:2015-06-06\n/notifications"));
    buf_free(&body);
    buf_free(&sts);
}

static void test_push_tag_encoding(void **state)
{
    struct notify_msg m = sample("hello world", 11, "\xe6\xa0\x87\xe7\xad\xbe a%~._-Z9");
    struct notify_push p = push_of(&m, SMQ_NOTIFY_SIMPLIFIED, "http://h/");
    struct notify_header h[NOTIFY_PUSH_HEADERS_MAX];
    struct smq_buf sts;
    size_t n;

    (void)state;
    buf_init(&sts);
    assert_int_equal(notify_push_headers(&p, "x", 1, h, &n, &sts), 0);
    header_is(&h[12], "x-mns-message-tag", "%E6%A0%87%E7%AD%BE%20a%25~._-Z9");
    assert_non_null(strstr(sts.data, "\nx-mns-message-tag:%E6%A0%87%E7%AD%BE%20a%25~._-Z9\n"));
    /* printable ASCII as it is, '%' and blanks included */
    m.tag = "50% off";
    assert_int_equal(notify_push_headers(&p, "x", 1, h, &n, &sts), 0);
    header_is(&h[12], "x-mns-message-tag", "50% off");
    /* a control byte is not printable either */
    m.tag = "a\tb";
    assert_int_equal(notify_push_headers(&p, "x", 1, h, &n, &sts), 0);
    header_is(&h[12], "x-mns-message-tag", "a%09b");
    assert_true(strlen(sts.data) > 0 && sts.data[strlen(sts.data) - 1] == '/');
    buf_free(&sts);
}

static void push_refused(const struct notify_push *p, const void *body, size_t len)
{
    struct notify_header h[NOTIFY_PUSH_HEADERS_MAX];
    struct smq_buf sts;
    size_t n = 5;

    buf_init(&sts);
    assert_int_equal(notify_push_headers(p, body, len, h, &n, &sts), SMQ_E_INVALID_ARGUMENT);
    assert_int_equal(n, 0);
    buf_free(&sts);
}

static void test_push_invalid(void **state)
{
    struct notify_msg m = sample("hello world", 11, NULL);
    struct notify_push p = push_of(&m, SMQ_NOTIFY_XML, "http://h/n"), q;
    char long_url[600];

    (void)state;
    push_refused(NULL, "x", 1);
    push_refused(&p, NULL, 1);
    q = p, q.format = (enum smq_notify_format)3;
    push_refused(&q, "x", 1);
    q = p, q.cert_url = NULL;
    push_refused(&q, "x", 1);
    q = p, q.date = NULL;
    push_refused(&q, "x", 1);
    q = p, q.request_id = "abc\r\nx-evil: 1";              /* no header splitting */
    push_refused(&q, "x", 1);
    q = p, q.ep = NULL;
    push_refused(&q, "x", 1);
    q = p, q.msg = NULL;
    push_refused(&q, "x", 1);
    /* base64 of 447 bytes fills 596 of the 600; 448 do not fit */
    memset(long_url, 'u', sizeof long_url);
    long_url[448] = '\0';
    q = p, q.cert_url = long_url;
    push_refused(&q, "x", 1);
    long_url[447] = '\0';
    {
        struct notify_header h[NOTIFY_PUSH_HEADERS_MAX];
        struct smq_buf sts;
        size_t n;

        buf_init(&sts);
        assert_int_equal(notify_push_headers(&q, "x", 1, h, &n, &sts), 0);
        assert_int_equal(strlen(h[5].value), 596);
        buf_free(&sts);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_http_forms),
        cmocka_unit_test(test_http_scheme_case),
        cmocka_unit_test(test_http_refusals),
        cmocka_unit_test(test_http_host_length),
        cmocka_unit_test(test_queue_forms),
        cmocka_unit_test(test_queue_names),
        cmocka_unit_test(test_queue_refusals),
        cmocka_unit_test(test_mail_sms_and_others),
        cmocka_unit_test(test_trim_and_empty),
        cmocka_unit_test(test_max_length),
        cmocka_unit_test(test_render_xml_plain),
        cmocka_unit_test(test_render_xml_escaping),
        cmocka_unit_test(test_render_json_plain),
        cmocka_unit_test(test_render_json_escaping),
        cmocka_unit_test(test_render_simplified),
        cmocka_unit_test(test_render_invalid),
        cmocka_unit_test(test_content_type),
        cmocka_unit_test(test_retry_backoff),
        cmocka_unit_test(test_retry_exponential),
        cmocka_unit_test(test_http_date),
        cmocka_unit_test(test_push_simplified),
        cmocka_unit_test(test_push_xml_json),
        cmocka_unit_test(test_push_tag_encoding),
        cmocka_unit_test(test_push_invalid),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
