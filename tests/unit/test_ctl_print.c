/*
 * test_ctl_print.c — smqctl's human-readable output: whatever a (possibly
 * hostile) admin endpoint sends, no control sequence reaches the
 * operator's terminal raw, and columns stay one line per queue, topic or
 * subscription.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ctl_json.h"
#include "ctl_print.h"
#include "smqd/errors.h"

/* Runs print over the parsed doc into a string (freed by the caller). */
static char *render(const char *json, int (*print)(FILE *, const struct cj_value *))
{
    struct cj_value doc;
    char err[128];
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);

    assert_non_null(out);
    assert_int_equal(cj_parse(json, strlen(json), &doc, err, sizeof err), 0);
    assert_int_equal(print(out, &doc), 0);
    fclose(out);
    cj_free(&doc);
    return text;
}

/* No byte below 0x20 but newline, no DEL, no C1 control in UTF-8. */
static void assert_terminal_safe(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        assert_true(*p >= 0x20 || *p == '\n');
        assert_true(*p != 0x7F);
        assert_false(p[0] == 0xC2 && p[1] >= 0x80 && p[1] <= 0x9F);
    }
}

static void test_ctl_print_messages_escape_every_field(void **state)
{
    const char *doc = "{\"messages\":[{\"id\":\"\\u001b]0;pwned\\u0007\\u001b[2J\","
                      "\"enqueue_time_ms\":\"\\u009b31m\",\"dequeue_count\":1,\"priority\":8,"
                      "\"body\":\"line\\nnext \\u001b[1m bold \\u0085 nel\"}]}";
    char *out = render(doc, ctl_print_messages);

    (void)state;
    assert_terminal_safe(out);
    assert_non_null(strstr(out, "id: ?]0;pwned??[2J "));
    assert_non_null(strstr(out, "body: line\\nnext \\x1b[1m bold \\u0085 nel"));
    free(out);
}

static void test_ctl_print_table_escapes_and_keeps_lines(void **state)
{
    const char *doc = "{\"queues\":[{\"name\":\"a\\nb\",\"active\":\"\\u001b[31m\","
                      "\"inactive\":0,\"delayed\":0,\"waiters\":0,\"oldest_age_s\":0,"
                      "\"attributes\":{\"DlqEnabled\":true,\"DlqTargetQueue\":\"x\\u009by\"}}]}";
    char *out = render(doc, ctl_print_queue_table);
    size_t lines = 0;

    (void)state;
    assert_terminal_safe(out);
    for (const char *p = out; *p; p++)
        lines += *p == '\n';
    assert_int_equal(lines, 2);              /* the header and one queue */
    assert_non_null(strstr(out, "a?b"));
    assert_non_null(strstr(out, "x\\u009by"));
    free(out);
}

static void test_ctl_print_topic_table(void **state)
{
    const char *doc = "{\"topics\":[{\"name\":\"alerts\",\"create_time\":1796014616,"
                      "\"attributes\":{\"MaximumMessageSize\":1024,\"LoggingEnabled\":true},"
                      "\"subscriptions\":3,\"message_count\":12},"
                      "{\"name\":\"gone\\u001b[2J\",\"create_time\":\"x\","
                      "\"attributes\":{\"MaximumMessageSize\":65536,"
                      "\"LoggingEnabled\":false}}]}";
    char *out = render(doc, ctl_print_topic_table);

    (void)state;
    assert_terminal_safe(out);
    assert_string_equal(out,
        "NAME                             SUBSCRIPTIONS   PENDING MAX_MSG_SIZE LOGGING  CREATED\n"
        "alerts                                       3        12         1024    true  "
        "2026-11-30T04:56:56Z\n"
        "gone?[2J                                     -         -        65536   false  x\n");
    free(out);
}

static void test_ctl_print_subscription_table(void **state)
{
    const char *doc = "{\"subscriptions\":[{\"name\":\"to-pager\",\"attributes\":"
                      "{\"Endpoint\":\"http://h:8/p\\u001b]0;x\",\"FilterTag\":\"\","
                      "\"NotifyStrategy\":\"BACKOFF_RETRY\",\"NotifyContentFormat\":\"XML\"}},"
                      "{\"name\":\"q\",\"pending\":1234567890,\"retrying\":7,"
                      "\"attributes\":{\"Endpoint\":"
                      "\"acs:mns:cn-hangzhou:1:queues/q\",\"FilterTag\":\"urgent\","
                      "\"NotifyStrategy\":\"EXPONENTIAL_DECAY_RETRY\","
                      "\"NotifyContentFormat\":\"SIMPLIFIED\"}}]}";
    char *out = render(doc, ctl_print_subscription_table);

    (void)state;
    assert_terminal_safe(out);
    assert_string_equal(out,
        "NAME                             FILTER_TAG       STRATEGY                FORMAT       "
        "PENDING RETRYING  ENDPOINT\n"
        "to-pager                         -                BACKOFF_RETRY           XML        "
        "        -        -  http://h:8/p\\x1b]0;x\n"
        "q                                urgent           EXPONENTIAL_DECAY_RETRY SIMPLIFIED "
        "1234567890        7  acs:mns:cn-hangzhou:1:queues/q\n");
    free(out);
}

/* Another document's shape is refused, not printed as an empty table. */
static void test_ctl_print_tables_refuse_other_shapes(void **state)
{
    struct cj_value doc;
    char err[128];
    FILE *out = fopen("/dev/null", "w");

    (void)state;
    assert_non_null(out);
    assert_int_equal(cj_parse("{\"queues\":[]}", 13, &doc, err, sizeof err), 0);
    assert_int_equal(ctl_print_topic_table(out, &doc), SMQ_E_INVALID_ARGUMENT);
    assert_int_equal(ctl_print_subscription_table(out, &doc), SMQ_E_INVALID_ARGUMENT);
    cj_free(&doc);
    fclose(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ctl_print_messages_escape_every_field),
        cmocka_unit_test(test_ctl_print_table_escapes_and_keeps_lines),
        cmocka_unit_test(test_ctl_print_topic_table),
        cmocka_unit_test(test_ctl_print_subscription_table),
        cmocka_unit_test(test_ctl_print_tables_refuse_other_shapes),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
