/*
 * test_notify.c — unit tests for notify.c: every endpoint form a
 * subscription may name (docs/protocol.md §13.2) and every refusal, its
 * boundaries, what is stored (trimmed) and the message each refusal gives.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

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
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
