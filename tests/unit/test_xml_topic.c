/*
 * test_xml_topic.c — unit tests for the topics' request bodies in
 * xml_parse.c (docs/protocol.md §13.4.1, §13.5, §13.6, §13.13): <Topic>,
 * <Subscription> and PublishMessage's <Message> as each SDK sends them, the
 * values kept or refused, the dead-letter policy nested and flat, the parts
 * of a publish skipped, and that a failed parse leaves nothing behind.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "smqd/xml.h"

#define DECL "<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
#define NS_SLASH "http://mns.aliyuncs.com/doc/v1/"

static bool all_zero(const void *p, size_t n)
{
    const unsigned char *c = p;

    for (size_t i = 0; i < n; i++)
        if (c[i] != 0)
            return false;
    return true;
}

static int parse_topic(const char *doc, struct xml_topic_attrs *t, struct smq_errinfo *ei)
{
    return xml_parse_topic_attrs(doc, strlen(doc), t, ei);
}

static int parse_sub(const char *doc, struct xml_sub_attrs *s, struct smq_errinfo *ei)
{
    return xml_parse_sub_attrs(doc, strlen(doc), s, ei);
}

static void assert_topic_fails(const char *doc, int want)
{
    struct xml_topic_attrs t;
    struct smq_errinfo ei = {0, ""};

    memset(&t, 0xA5, sizeof t);
    assert_int_equal(parse_topic(doc, &t, &ei), want);
    assert_int_equal(ei.err, want);
    assert_true(all_zero(&t, sizeof t));
}

static void assert_sub_fails(const char *doc, int want)
{
    struct xml_sub_attrs s;
    struct smq_errinfo ei = {0, ""};

    memset(&s, 0xA5, sizeof s);
    if (parse_sub(doc, &s, &ei) != want)
        fail_msg("%s: got %d (%s), want %d", doc, ei.err, ei.msg, want);
    assert_true(all_zero(&s, sizeof s));
}

/* ---- <Topic> ---------------------------------------------------------------------- */

static void test_xml_topic_sdk_bodies(void **state)
{
    struct xml_topic_attrs t;
    struct smq_errinfo ei;

    (void)state;
    /* Go: LoggingEnabled always, MaximumMessageSize unless 0. */
    assert_int_equal(parse_topic(DECL "<Topic xmlns=\"" NS_SLASH "\"><MaximumMessageSize>1024"
                                 "</MaximumMessageSize><LoggingEnabled>false</LoggingEnabled>"
                                 "</Topic>", &t, &ei), 0);
    assert_true(t.max_msg_size.present);
    assert_int_equal(t.max_msg_size.value, 1024);
    assert_true(t.logging.present);
    assert_int_equal(t.logging.value, 0);

    /* Python: only what the caller set, True capitalised. */
    assert_int_equal(parse_topic("<Topic xmlns=\"" NS_SLASH "\"><LoggingEnabled>True"
                                 "</LoggingEnabled></Topic>", &t, &ei), 0);
    assert_false(t.max_msg_size.present);
    assert_int_equal(t.logging.value, 1);

    /* Empty, and the read-only retention ignored (nested content too). */
    assert_int_equal(parse_topic("<Topic/>", &t, &ei), 0);
    assert_true(all_zero(&t, sizeof t));
    assert_int_equal(parse_topic("<Topic><MessageRetentionPeriod>60</MessageRetentionPeriod>"
                                 "<Unknown><x/></Unknown></Topic>", &t, &ei), 0);
    assert_true(all_zero(&t, sizeof t));
}

static void test_xml_topic_refused(void **state)
{
    (void)state;
    assert_topic_fails("<Queue/>", SMQ_E_MALFORMED_XML);
    assert_topic_fails("<Topic>", SMQ_E_MALFORMED_XML);
    assert_topic_fails("", SMQ_E_MALFORMED_XML);
    assert_topic_fails("<Topic><LoggingEnabled>1</LoggingEnabled></Topic>",
                       SMQ_E_INVALID_ARGUMENT);
    assert_topic_fails("<Topic><MaximumMessageSize>1k</MaximumMessageSize></Topic>",
                       SMQ_E_INVALID_ARGUMENT);
    assert_topic_fails("<Topic><MaximumMessageSize>99999999999999999999</MaximumMessageSize>"
                       "</Topic>", SMQ_E_INVALID_ARGUMENT);
    assert_topic_fails("<Topic><MaximumMessageSize><v>1024</v></MaximumMessageSize></Topic>",
                       SMQ_E_INVALID_ARGUMENT);
    assert_topic_fails("<Topic><LoggingEnabled>true</LoggingEnabled>"
                       "<LoggingEnabled>true</LoggingEnabled></Topic>", SMQ_E_MALFORMED_XML);
    assert_topic_fails("<!DOCTYPE Topic [<!ENTITY e \"1024\">]><Topic><MaximumMessageSize>&e;"
                       "</MaximumMessageSize></Topic>", SMQ_E_MALFORMED_XML);
}

/* ---- <Subscription> ------------------------------------------------------------------- */

static void test_xml_sub_sdk_bodies(void **state)
{
    struct xml_sub_attrs s;
    struct smq_errinfo ei;

    (void)state;
    /* Python: NotifyStrategy first. */
    assert_int_equal(parse_sub(DECL "<Subscription xmlns=\"" NS_SLASH "\"><NotifyStrategy>"
                               "BACKOFF_RETRY</NotifyStrategy><Endpoint>http://10.0.0.5:8000/hook"
                               "</Endpoint><FilterTag>important</FilterTag><NotifyContentFormat>"
                               "XML</NotifyContentFormat></Subscription>", &s, &ei), 0);
    assert_true(s.endpoint_present);
    assert_string_equal(s.endpoint, "http://10.0.0.5:8000/hook");
    assert_true(s.filter_tag_present);
    assert_string_equal(s.filter_tag, "important");
    assert_true(s.strategy_present);
    assert_string_equal(s.strategy, "BACKOFF_RETRY");
    assert_true(s.format_present);
    assert_string_equal(s.format, "XML");
    assert_false(s.dlq_present);

    /* Blanks trimmed around the words and the Endpoint, never around the tag. */
    assert_int_equal(parse_sub("<Subscription><Endpoint>\n  acs:mns:r:1:queues/q\t</Endpoint>"
                               "<NotifyStrategy> json </NotifyStrategy><NotifyContentFormat>\r\n"
                               "simplified </NotifyContentFormat><FilterTag> a b </FilterTag>"
                               "</Subscription>", &s, &ei), 0);
    assert_string_equal(s.endpoint, "acs:mns:r:1:queues/q");
    assert_string_equal(s.strategy, "json");
    assert_string_equal(s.format, "simplified");
    assert_string_equal(s.filter_tag, " a b ");

    /* Empty elements are not given; unknown ones ignored. */
    assert_int_equal(parse_sub("<Subscription><Endpoint/><FilterTag></FilterTag><NotifyStrategy>"
                               "  </NotifyStrategy><NotifyContentFormat/><Other>1</Other>"
                               "</Subscription>", &s, &ei), 0);
    assert_true(all_zero(&s, sizeof s));
}

static void test_xml_sub_lengths(void **state)
{
    char doc[3000], ep[1200];
    struct xml_sub_attrs s;
    struct smq_errinfo ei;

    (void)state;
    /* An Endpoint of 1024 bytes after trimming is kept; a longer one is flagged. */
    memset(ep, 'e', 1100);
    ep[1024] = '\0';
    snprintf(doc, sizeof doc, "<Subscription><Endpoint> %s\n</Endpoint></Subscription>", ep);
    assert_int_equal(parse_sub(doc, &s, &ei), 0);
    assert_true(s.endpoint_present);
    assert_false(s.endpoint_too_long);
    assert_int_equal(strlen(s.endpoint), SMQ_ENDPOINT_MAX);
    ep[1024] = 'e';
    ep[1025] = '\0';
    snprintf(doc, sizeof doc, "<Subscription><Endpoint>%s</Endpoint></Subscription>", ep);
    assert_int_equal(parse_sub(doc, &s, &ei), 0);
    assert_true(s.endpoint_present);
    assert_true(s.endpoint_too_long);
    assert_string_equal(s.endpoint, "");

    /* FilterTag: 64 bytes kept (16 four-byte characters), 65 refused. */
    memset(ep, 'f', 65);
    ep[64] = '\0';
    snprintf(doc, sizeof doc, "<Subscription><FilterTag>%s</FilterTag></Subscription>", ep);
    assert_int_equal(parse_sub(doc, &s, &ei), 0);
    assert_int_equal(strlen(s.filter_tag), 64);
    ep[64] = 'f';
    ep[65] = '\0';
    snprintf(doc, sizeof doc, "<Subscription><FilterTag>%s</FilterTag></Subscription>", ep);
    assert_sub_fails(doc, SMQ_E_INVALID_ARGUMENT);

    assert_sub_fails("<Subscription><NotifyStrategy>EXPONENTIAL_DECAY_RETRY_EXPONENTIAL"
                     "</NotifyStrategy></Subscription>", SMQ_E_INVALID_ARGUMENT);
    memset(ep, 'q', 121);
    ep[121] = '\0';
    snprintf(doc, sizeof doc, "<Subscription><DlqTargetQueue>%s</DlqTargetQueue>"
             "</Subscription>", ep);
    assert_sub_fails(doc, SMQ_E_INVALID_ARGUMENT);
    ep[120] = '\0';
    snprintf(doc, sizeof doc, "<Subscription><DlqTargetQueue>%s</DlqTargetQueue>"
             "</Subscription>", ep);
    assert_int_equal(parse_sub(doc, &s, &ei), 0);
    assert_int_equal(strlen(s.dlq_target), 120);
}

static void test_xml_sub_dlq_forms(void **state)
{
    struct xml_sub_attrs s;
    struct smq_errinfo ei;

    (void)state;
    assert_int_equal(parse_sub("<Subscription><DlqPolicy><Enabled>true</Enabled>"
                               "<DeadLetterTargetQueue>hook-dlq</DeadLetterTargetQueue>"
                               "</DlqPolicy></Subscription>", &s, &ei), 0);
    assert_true(s.dlq_present);
    assert_true(s.dlq_enabled.present);
    assert_int_equal(s.dlq_enabled.value, 1);
    assert_true(s.dlq_target_present);
    assert_string_equal(s.dlq_target, "hook-dlq");

    assert_int_equal(parse_sub("<Subscription><DlqTargetQueue>d</DlqTargetQueue>"
                               "<DlqEnabled>False</DlqEnabled></Subscription>", &s, &ei), 0);
    assert_true(s.dlq_present);
    assert_int_equal(s.dlq_enabled.value, 0);
    assert_string_equal(s.dlq_target, "d");

    /* An empty policy is still a policy (the API refuses it for want of a target). */
    assert_int_equal(parse_sub("<Subscription><DlqPolicy/></Subscription>", &s, &ei), 0);
    assert_true(s.dlq_present);
    assert_false(s.dlq_target_present);

    /* The flat names mean nothing inside the policy, the nested ones nothing outside it. */
    assert_int_equal(parse_sub("<Subscription><Enabled>true</Enabled><DlqPolicy>"
                               "<DlqTargetQueue>d</DlqTargetQueue></DlqPolicy></Subscription>",
                               &s, &ei), 0);
    assert_false(s.dlq_enabled.present);
    assert_false(s.dlq_target_present);

    /* One field in both forms. */
    assert_sub_fails("<Subscription><DlqPolicy><Enabled>true</Enabled></DlqPolicy>"
                     "<DlqEnabled>true</DlqEnabled></Subscription>", SMQ_E_MALFORMED_XML);
    assert_sub_fails("<Subscription><DlqTargetQueue>d</DlqTargetQueue><DlqPolicy>"
                     "<DeadLetterTargetQueue>d</DeadLetterTargetQueue></DlqPolicy>"
                     "</Subscription>", SMQ_E_MALFORMED_XML);
    assert_sub_fails("<Subscription><DlqPolicy><Enabled>yes</Enabled></DlqPolicy>"
                     "</Subscription>", SMQ_E_INVALID_ARGUMENT);
}

static void test_xml_sub_refused(void **state)
{
    (void)state;
    assert_sub_fails("", SMQ_E_MALFORMED_XML);
    assert_sub_fails("<Subscriptions/>", SMQ_E_MALFORMED_XML);
    assert_sub_fails("<Subscription><Endpoint>a</Endpoint>", SMQ_E_MALFORMED_XML);
    assert_sub_fails("<Subscription><Endpoint>a</Endpoint><Endpoint/></Subscription>",
                     SMQ_E_MALFORMED_XML);
    assert_sub_fails("<Subscription><FilterTag/><FilterTag>x</FilterTag></Subscription>",
                     SMQ_E_MALFORMED_XML);
    assert_sub_fails("<Subscription><NotifyStrategy><a/></NotifyStrategy></Subscription>",
                     SMQ_E_INVALID_ARGUMENT);
    assert_sub_fails("<Subscription><m:Endpoint>x</m:Endpoint></Subscription>",
                     SMQ_E_MALFORMED_XML);
    assert_sub_fails("<Subscription><a><b><c><d><e><f><g><h>x</h></g></f></e></d></c></b></a>"
                     "</Subscription>", SMQ_E_MALFORMED_XML);
}

/* ---- <Message> of PublishMessage (docs/protocol.md §13.5) ---------------------------- */

static int parse_pub(const char *doc, struct xml_publish *p, struct smq_errinfo *ei)
{
    return xml_parse_publish(doc, strlen(doc), p, ei);
}

static void assert_pub_fails(const char *doc, int want)
{
    struct xml_publish p;
    struct smq_errinfo ei = {0, ""};

    memset(&p, 0xA5, sizeof p);
    if (parse_pub(doc, &p, &ei) != want)
        fail_msg("%s: got %d (%s), want %d", doc, ei.err, ei.msg, want);
    assert_int_equal(ei.err, want);
    assert_true(all_zero(&p, sizeof p));
}

static void test_xml_publish_sdk_bodies(void **state)
{
    struct xml_publish p;
    struct smq_errinfo ei;

    (void)state;
    /* Python: body then tag, namespaced. */
    assert_int_equal(parse_pub(DECL "<Message xmlns=\"" NS_SLASH "\"><MessageBody>hi</MessageBody>"
                               "<MessageTag>tag</MessageTag></Message>", &p, &ei), 0);
    assert_true(p.body_present);
    assert_int_equal(p.body_len, 2);
    assert_string_equal(p.body, "hi");
    assert_string_equal(p.tag, "tag");
    xml_publish_free(&p);
    assert_true(all_zero(&p, sizeof p));

    /* Java: attributes first, an empty one, Java 2.0.0's extensions; Go's DirectMail. */
    assert_int_equal(parse_pub("<Message><MessageAttributes/><UserProperties><PropertyValue>"
                               "<Name>k</Name></PropertyValue></UserProperties><SystemProperties/>"
                               "<MessageGroupId>g</MessageGroupId><MessageAttributes><DirectMail>"
                               "{\"a\":1}</DirectMail></MessageAttributes><MessageBody> a\n"
                               "</MessageBody></Message>", &p, &ei), 0);
    assert_int_equal(p.body_len, 3);
    assert_memory_equal(p.body, " a\n", 3);
    assert_string_equal(p.tag, "");
    xml_publish_free(&p);

    /* An empty body is present and empty (the API refuses it), and NUL-terminated. */
    assert_int_equal(parse_pub("<Message><MessageBody/><MessageTag/></Message>", &p, &ei), 0);
    assert_true(p.body_present);
    assert_int_equal(p.body_len, 0);
    assert_string_equal(p.body, "");
    assert_string_equal(p.tag, "");
    xml_publish_free(&p);

    /* No body at all: parsed, not present (the API's InvalidArgument). */
    assert_int_equal(parse_pub("<Message><DelaySeconds>x</DelaySeconds></Message>", &p, &ei), 0);
    assert_false(p.body_present);
    assert_null(p.body);
    xml_publish_free(&p);

    /* Entities decoded, the tag untrimmed and decoded too. */
    assert_int_equal(parse_pub("<Message><MessageBody>&lt;&amp;&#x4E2D;</MessageBody>"
                               "<MessageTag> &amp; </MessageTag></Message>", &p, &ei), 0);
    assert_string_equal(p.body, "<&\xe4\xb8\xad");
    assert_string_equal(p.tag, " & ");
    xml_publish_free(&p);
}

/* A tag of SMQ_TAG_MAX_BYTES bytes is kept (16 four-byte characters), one
 * byte more refused here; counting characters is the API's. */
static void test_xml_publish_tag_bytes(void **state)
{
    struct xml_publish p;
    struct smq_errinfo ei;
    char doc[256], tag[SMQ_TAG_MAX_BYTES + 2];

    (void)state;
    memset(tag, 'x', SMQ_TAG_MAX_BYTES);
    tag[SMQ_TAG_MAX_BYTES] = '\0';
    snprintf(doc, sizeof doc, "<Message><MessageBody>b</MessageBody><MessageTag>%s</MessageTag>"
             "</Message>", tag);
    assert_int_equal(parse_pub(doc, &p, &ei), 0);
    assert_string_equal(p.tag, tag);
    xml_publish_free(&p);
    strcat(tag, "x");
    snprintf(doc, sizeof doc, "<Message><MessageBody>b</MessageBody><MessageTag>%s</MessageTag>"
             "</Message>", tag);
    assert_pub_fails(doc, SMQ_E_INVALID_ARGUMENT);
}

static void test_xml_publish_refused(void **state)
{
    (void)state;
    assert_pub_fails("", SMQ_E_MALFORMED_XML);
    assert_pub_fails("text", SMQ_E_MALFORMED_XML);
    assert_pub_fails("<Message>", SMQ_E_MALFORMED_XML);
    assert_pub_fails("<Topic/>", SMQ_E_MALFORMED_XML);
    assert_pub_fails("<Messages><Message><MessageBody>b</MessageBody></Message></Messages>",
                     SMQ_E_MALFORMED_XML);
    assert_pub_fails("<Message><MessageBody>a</MessageBody><MessageBody>a</MessageBody>"
                     "</Message>", SMQ_E_MALFORMED_XML);
    assert_pub_fails("<Message><MessageBody>a</MessageBody><MessageTag/><MessageTag>t"
                     "</MessageTag></Message>", SMQ_E_MALFORMED_XML);
    assert_pub_fails("<Message><MessageBody>a<x/></MessageBody></Message>",
                     SMQ_E_INVALID_ARGUMENT);
    assert_pub_fails("<Message><MessageBody>a</MessageBody><MessageTag><x/></MessageTag>"
                     "</Message>", SMQ_E_INVALID_ARGUMENT);
    /* The ignored parts are still part of the document (§4). */
    assert_pub_fails("<Message><MessageBody>a</MessageBody><MessageAttributes><a></b>"
                     "</MessageAttributes></Message>", SMQ_E_MALFORMED_XML);
    assert_pub_fails("<Message><MessageBody>a</MessageBody><MessageAttributes><a><a><a><a><a>"
                     "<a><a><a><a><a></a></a></a></a></a></a></a></a></a></a>"
                     "</MessageAttributes></Message>", SMQ_E_MALFORMED_XML);
    assert_pub_fails("<!DOCTYPE Message [<!ENTITY e \"x\">]><Message><MessageBody>&e;"
                     "</MessageBody></Message>", SMQ_E_MALFORMED_XML);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_xml_topic_sdk_bodies),
        cmocka_unit_test(test_xml_topic_refused),
        cmocka_unit_test(test_xml_sub_sdk_bodies),
        cmocka_unit_test(test_xml_sub_lengths),
        cmocka_unit_test(test_xml_sub_dlq_forms),
        cmocka_unit_test(test_xml_sub_refused),
        cmocka_unit_test(test_xml_publish_sdk_bodies),
        cmocka_unit_test(test_xml_publish_tag_bytes),
        cmocka_unit_test(test_xml_publish_refused),
    };
    int rc;

    xml_global_init();
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    xml_global_cleanup();
    return rc;
}
