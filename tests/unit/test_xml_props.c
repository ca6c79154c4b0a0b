/*
 * test_xml_props.c — unit tests for xml_props.c: the Java SDK's message
 * extensions (UserProperties, SystemProperties, MessageGroupId) as a send
 * carries them, the canonical fragment they are kept as, and every
 * refusal that keeps a message the Java decoder could not read out of a
 * queue.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "smqd/buf.h"
#include "smqd/xml.h"

#define NS "http://mns.aliyuncs.com/doc/v1"

static void message_doc(struct smq_buf *doc, const char *inner)
{
    buf_reset(doc);
    buf_printf(doc, "<Message xmlns=\"" NS "\"><MessageBody>b</MessageBody>%s</Message>", inner);
}

static char *user_prop(const char *name, const char *value, const char *type)
{
    static char out[4096];

    snprintf(out, sizeof out, "<PropertyValue><Name>%s</Name><Value>%s</Value><Type>%s</Type>"
             "</PropertyValue>", name, value, type);
    return out;
}

/* Parses <Message> with inner and expects ext to be want (NULL: none). */
static void expect_ext(const char *inner, const char *want)
{
    struct smq_buf doc;
    struct xml_send_item it;
    struct smq_errinfo ei = {0};

    buf_init(&doc);
    message_doc(&doc, inner);
    assert_int_equal(xml_parse_send(doc.data, doc.len, &it, &ei), 0);
    if (want == NULL) {
        assert_null(it.ext);
        assert_int_equal(it.ext_len, 0);
    } else {
        assert_non_null(it.ext);
        assert_int_equal(it.ext_len, strlen(want));
        assert_memory_equal(it.ext, want, it.ext_len);
    }
    xml_send_item_free(&it);
    buf_free(&doc);
}

/* The send must fail with this code and a message containing part, and
 * leave nothing behind. */
static void expect_refused(const char *inner, int want, const char *part)
{
    struct smq_buf doc;
    struct xml_send_item it;
    struct smq_errinfo ei = {0};

    buf_init(&doc);
    message_doc(&doc, inner);
    assert_int_equal(xml_parse_send(doc.data, doc.len, &it, &ei), want);
    assert_null(it.ext);
    assert_null(it.body);
    if (part != NULL && strstr(errors_message(&ei), part) == NULL)
        fail_msg("message '%s' lacks '%s'", errors_message(&ei), part);
    buf_free(&doc);
}

static void test_props_absent_or_empty_keep_nothing(void **state)
{
    (void)state;
    expect_ext("", NULL);
    expect_ext("<UserProperties/><SystemProperties></SystemProperties>"
               "<MessageGroupId></MessageGroupId>", NULL);
    /* Unknown elements, inside and out, are ignored as everywhere else. */
    expect_ext("<Other>x</Other><UserProperties><Junk/></UserProperties>", NULL);
}

static void test_props_every_type_and_escaping(void **state)
{
    struct smq_buf in, want;

    (void)state;
    buf_init(&in);
    buf_init(&want);
    buf_puts(&in, "<UserProperties>");
    buf_puts(&in, user_prop("n", "-1.5e+3", "NUMBER"));
    buf_puts(&in, user_prop("s", "a &amp; &lt;b&gt; ", "STRING"));
    buf_puts(&in, user_prop("b", "FALSE", "BOOLEAN"));
    buf_puts(&in, user_prop("bin", "AAEC/w==", "BINARY"));
    buf_puts(&in, user_prop("empty", "", "STRING"));
    buf_puts(&in, "</UserProperties>");
    buf_puts(&want, "<UserProperties>");
    buf_puts(&want, user_prop("n", "-1.5e+3", "NUMBER"));
    buf_puts(&want, user_prop("s", "a &amp; &lt;b&gt; ", "STRING"));
    buf_puts(&want, user_prop("b", "FALSE", "BOOLEAN"));
    buf_puts(&want, user_prop("bin", "AAEC/w==", "BINARY"));
    buf_puts(&want, user_prop("empty", "", "STRING"));
    buf_puts(&want, "</UserProperties>");
    expect_ext(in.data, want.data);
    buf_free(&in);
    buf_free(&want);
}

static void test_props_fifty_but_not_fifty_one(void **state)
{
    struct smq_buf in;
    char name[16];

    (void)state;
    buf_init(&in);
    buf_puts(&in, "<UserProperties>");
    for (int i = 0; i < XML_USER_PROPS_MAX; i++) {
        snprintf(name, sizeof name, "p%d", i);
        buf_puts(&in, user_prop(name, "1", "NUMBER"));
    }
    buf_puts(&in, "</UserProperties>");
    expect_ext(in.data, in.data);
    in.len -= strlen("</UserProperties>");
    buf_puts(&in, user_prop("one-more", "1", "NUMBER"));
    buf_puts(&in, "</UserProperties>");
    expect_refused(in.data, SMQ_E_INVALID_ARGUMENT, "more than 50 user properties");
    buf_free(&in);
}

static void test_props_value_syntax_refused(void **state)
{
    char in[4200 + 32];
    static const char *const bad[][3] = {
        {"1.2.3", "NUMBER", "decimal number"}, {"0x10", "NUMBER", "decimal number"},
        {"NaN", "NUMBER", "decimal number"}, {"", "NUMBER", "decimal number"},
        {"1e", "NUMBER", "decimal number"}, {" 1", "NUMBER", "decimal number"},
        {"yes", "BOOLEAN", "true or false"}, {"AAE", "BINARY", "base64"},
        {"AA=A", "BINARY", "base64"}, {"AA!=", "BINARY", "base64"},
        {"v", "string", "NUMBER, STRING, BOOLEAN or BINARY"},
        {"v", "BYTES", "NUMBER, STRING, BOOLEAN or BINARY"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(in, sizeof in, "<UserProperties>%s</UserProperties>",
                 user_prop("k", bad[i][0], bad[i][1]));
        expect_refused(in, SMQ_E_INVALID_ARGUMENT, bad[i][2]);
    }
}

static void test_props_names_refused(void **state)
{
    char in[12288], a[4096], long_name[XML_PROP_NAME_MAX + 2];

    (void)state;
    snprintf(a, sizeof a, "%s", user_prop("k", "1", "NUMBER"));
    snprintf(in, sizeof in, "<UserProperties>%s%s</UserProperties>", a,
             user_prop("k", "2", "NUMBER"));
    expect_refused(in, SMQ_E_INVALID_ARGUMENT, "two user properties of the same Name");
    snprintf(in, sizeof in, "<UserProperties>%s</UserProperties>", user_prop("", "1", "NUMBER"));
    expect_refused(in, SMQ_E_INVALID_ARGUMENT, "between 1 and 256 bytes");
    memset(long_name, 'n', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';
    snprintf(in, sizeof in, "<UserProperties>%s</UserProperties>",
             user_prop(long_name, "1", "NUMBER"));
    expect_refused(in, SMQ_E_INVALID_ARGUMENT, "between 1 and 256 bytes");
    long_name[sizeof long_name - 2] = '\0';                 /* 256: fits */
    snprintf(in, sizeof in, "<UserProperties>%s</UserProperties>",
             user_prop(long_name, "1", "NUMBER"));
    expect_ext(in, in);
}

static void test_props_shape_refused(void **state)
{
    (void)state;
    expect_refused("<UserProperties><PropertyValue><Name>k</Name><Value>v</Value>"
                   "</PropertyValue></UserProperties>",
                   SMQ_E_INVALID_ARGUMENT, "needs a Name, a Value and a Type");
    expect_refused("<UserProperties><PropertyValue><Name>k</Name><Name>j</Name><Value>v</Value>"
                   "<Type>STRING</Type></PropertyValue></UserProperties>",
                   SMQ_E_MALFORMED_XML, "duplicated element <Name>");
    expect_refused("<UserProperties/><UserProperties/>", SMQ_E_MALFORMED_XML,
                   "duplicated element <UserProperties>");
    expect_refused("<MessageGroupId>a</MessageGroupId><MessageGroupId>b</MessageGroupId>",
                   SMQ_E_MALFORMED_XML, "duplicated element <MessageGroupId>");
    expect_refused("<UserProperties><PropertyValue><Name>k</Name><Value><x/></Value>"
                   "<Type>STRING</Type></PropertyValue></UserProperties>",
                   SMQ_E_INVALID_ARGUMENT, "text only");
}

static void test_props_system_names_and_type(void **state)
{
    const char *ok =
        "<SystemProperties><SystemPropertyValue><Name>baggage</Name><Value>k=v</Value>"
        "<Type>STRING</Type></SystemPropertyValue><SystemPropertyValue><Name>DLQSourceArn"
        "</Name><Value>acs:mns:q</Value><Type>STRING</Type></SystemPropertyValue>"
        "</SystemProperties>";

    (void)state;
    expect_ext(ok, ok);
    expect_refused("<SystemProperties><SystemPropertyValue><Name>TraceParent</Name><Value>x"
                   "</Value><Type>STRING</Type></SystemPropertyValue></SystemProperties>",
                   SMQ_E_INVALID_ARGUMENT, "should be traceparent, tracestate");
    expect_refused("<SystemProperties><SystemPropertyValue><Name>tracestate</Name><Value>1"
                   "</Value><Type>NUMBER</Type></SystemPropertyValue></SystemProperties>",
                   SMQ_E_INVALID_ARGUMENT, "should be STRING");
    expect_refused("<SystemProperties><SystemPropertyValue><Name>baggage</Name><Value>a"
                   "</Value><Type>STRING</Type></SystemPropertyValue><SystemPropertyValue>"
                   "<Name>baggage</Name><Value>b</Value><Type>STRING</Type>"
                   "</SystemPropertyValue></SystemProperties>",
                   SMQ_E_INVALID_ARGUMENT, "two system properties of the same Name");
}

static void test_props_group_id_and_total_bytes(void **state)
{
    struct smq_buf in;
    char group[XML_GROUP_ID_MAX + 2], value[4001];

    (void)state;
    memset(group, 'g', sizeof group - 1);
    group[sizeof group - 1] = '\0';
    buf_init(&in);
    buf_printf(&in, "<MessageGroupId>%s</MessageGroupId>", group);
    expect_refused(in.data, SMQ_E_INVALID_ARGUMENT, "not be longer than 128 bytes");
    group[sizeof group - 2] = '\0';
    buf_reset(&in);
    buf_printf(&in, "<MessageGroupId>%s</MessageGroupId>", group);
    expect_ext(in.data, in.data);
    /* Nine values of 4000 bytes pass 32 KiB (eight and their names do not). */
    memset(value, 'v', sizeof value - 1);
    value[sizeof value - 1] = '\0';
    buf_reset(&in);
    buf_puts(&in, "<UserProperties>");
    for (int i = 0; i < 9; i++) {
        char name[8];
        snprintf(name, sizeof name, "k%d", i);
        buf_puts(&in, user_prop(name, value, "STRING"));
    }
    buf_puts(&in, "</UserProperties>");
    expect_refused(in.data, SMQ_E_INVALID_ARGUMENT, "should not exceed 32768 bytes in all");
    buf_free(&in);
}

/* In a batch each message keeps its own extensions. */
static void test_props_per_batch_item(void **state)
{
    const char *doc =
        "<Messages xmlns=\"" NS "\"><Message><MessageBody>a</MessageBody>"
        "<MessageGroupId>g</MessageGroupId></Message>"
        "<Message><MessageBody>b</MessageBody></Message></Messages>";
    struct xml_send_batch b;
    struct smq_errinfo ei = {0};

    (void)state;
    assert_int_equal(xml_parse_send_batch(doc, strlen(doc), &b, &ei), 0);
    assert_int_equal(b.n, 2);
    assert_string_equal(b.items[0].ext, "<MessageGroupId>g</MessageGroupId>");
    assert_null(b.items[1].ext);
    xml_send_batch_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_props_absent_or_empty_keep_nothing),
        cmocka_unit_test(test_props_every_type_and_escaping),
        cmocka_unit_test(test_props_fifty_but_not_fifty_one),
        cmocka_unit_test(test_props_value_syntax_refused),
        cmocka_unit_test(test_props_names_refused),
        cmocka_unit_test(test_props_shape_refused),
        cmocka_unit_test(test_props_system_names_and_type),
        cmocka_unit_test(test_props_group_id_and_total_bytes),
        cmocka_unit_test(test_props_per_batch_item),
    };

    xml_global_init();
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    xml_global_cleanup();
    return rc;
}
