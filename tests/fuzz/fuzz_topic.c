/*
 * fuzz_topic.c — libFuzzer target for the topics' request bodies of xml.h:
 * <Topic> (xml_parse_topic_attrs), <Subscription> (xml_parse_sub_attrs) and
 * PublishMessage's <Message> (xml_parse_publish), docs/protocol.md §13.4.1,
 * §13.5, §13.6, §13.13.
 *
 * The input is a request body; it goes through the three parsers.  Checked, from
 * the contracts in xml.h:
 *   - only 0, SMQ_E_MALFORMED_XML or SMQ_E_INVALID_ARGUMENT (SMQ_E_NOMEM
 *     under memory pressure), with ei filled; nothing left in *out after a
 *     failure;
 *   - a parsed <Topic>: LoggingEnabled 0 or 1;
 *   - a parsed <Subscription>: each text field NUL-terminated inside its
 *     array, non-empty exactly when given (an Endpoint too long to keep:
 *     given, flagged and empty), without NULs; the Endpoint and the two
 *     words without blanks around them; FilterTag at most SMQ_TAG_MAX_BYTES
 *     bytes, the words at most XML_SUB_WORD_MAX; dlq_present whenever a
 *     policy field is; Enabled 0 or 1;
 *   - a parsed publish: a body (NUL-terminated at body_len, without NULs)
 *     exactly when MessageBody was given; MessageTag NUL-terminated inside
 *     its array, at most SMQ_TAG_MAX_BYTES bytes;
 *   - round trip: the fields written back with xml_elem_str (the writer of
 *     every answer) into a <Subscription> re-parse to the same struct (an
 *     Endpoint too long to keep left out of the comparison), and the same
 *     for <Topic> and for a publish's body and tag (byte for byte).
 * Seeds are written by make_corpus.sh into corpus/fuzz_topic.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_common.h"
#include "smqd/buf.h"
#include "smqd/errors.h"
#include "smqd/xml.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    xml_global_init();
    return 0;
}

static bool result_ok(int rc, const struct smq_errinfo *ei)
{
    if (rc == 0)
        return true;
    return (rc == SMQ_E_MALFORMED_XML || rc == SMQ_E_INVALID_ARGUMENT || rc == SMQ_E_NOMEM)
           && ei->err == rc;
}

static bool all_zero(const void *p, size_t n)
{
    const unsigned char *c = p;

    for (size_t i = 0; i < n; i++)
        if (c[i] != 0)
            return false;
    return true;
}

static bool is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* A text field: terminated inside its array, given exactly when non-empty,
 * at most max bytes, trimmed when asked. */
static void check_text(bool present, const char *text, size_t size, size_t max, bool trimmed)
{
    size_t len = strnlen(text, size);

    FUZZ_CHECK(len < size);
    FUZZ_CHECK(len <= max);
    FUZZ_CHECK(present == (len > 0));
    if (trimmed && len > 0)
        FUZZ_CHECK(!is_blank(text[0]) && !is_blank(text[len - 1]));
}

static void check_sub(const struct xml_sub_attrs *s)
{
    check_text(s->endpoint_present && !s->endpoint_too_long, s->endpoint, sizeof s->endpoint,
               SMQ_ENDPOINT_MAX, true);
    FUZZ_CHECK(!s->endpoint_too_long || s->endpoint_present);
    check_text(s->filter_tag_present, s->filter_tag, sizeof s->filter_tag, SMQ_TAG_MAX_BYTES,
               false);
    check_text(s->strategy_present, s->strategy, sizeof s->strategy, XML_SUB_WORD_MAX, true);
    check_text(s->format_present, s->format, sizeof s->format, XML_SUB_WORD_MAX, true);
    check_text(s->dlq_target_present, s->dlq_target, sizeof s->dlq_target, SMQ_QUEUE_NAME_MAX,
               false);
    FUZZ_CHECK(!s->dlq_enabled.present || s->dlq_enabled.value == 0 || s->dlq_enabled.value == 1);
    FUZZ_CHECK(s->dlq_present || (!s->dlq_enabled.present && !s->dlq_target_present));
}

/* Writes what was parsed as an answer would, and parses it again. */
static void check_sub_round_trip(const struct xml_sub_attrs *orig)
{
    struct xml_sub_attrs again, want = *orig, *s = &want;
    struct smq_errinfo ei = {0, ""};
    struct smq_buf b;

    if (s->endpoint_too_long)
        s->endpoint_present = s->endpoint_too_long = false;
    buf_init(&b);
    xml_begin(&b, "Subscription");
    if (s->endpoint_present)
        xml_elem_str(&b, "Endpoint", s->endpoint);
    if (s->filter_tag_present)
        xml_elem_str(&b, "FilterTag", s->filter_tag);
    if (s->strategy_present)
        xml_elem_str(&b, "NotifyStrategy", s->strategy);
    if (s->format_present)
        xml_elem_str(&b, "NotifyContentFormat", s->format);
    if (s->dlq_present)
        xml_open(&b, "DlqPolicy");
    if (s->dlq_enabled.present)
        xml_elem_bool(&b, "Enabled", s->dlq_enabled.value != 0);
    if (s->dlq_target_present)
        xml_elem_str(&b, "DeadLetterTargetQueue", s->dlq_target);
    if (s->dlq_present)
        xml_close(&b, "DlqPolicy");
    xml_close(&b, "Subscription");
    FUZZ_CHECK(!buf_failed(&b));
    FUZZ_CHECK(xml_parse_sub_attrs(b.data, b.len, &again, &ei) == 0);
    FUZZ_CHECK(memcmp(&again, s, sizeof again) == 0);
    buf_free(&b);
}

static void check_topic_round_trip(const struct xml_topic_attrs *t)
{
    struct xml_topic_attrs again;
    struct smq_errinfo ei = {0, ""};
    struct smq_buf b;

    buf_init(&b);
    xml_begin(&b, "Topic");
    if (t->max_msg_size.present)
        xml_elem_i64(&b, "MaximumMessageSize", t->max_msg_size.value);
    if (t->logging.present)
        xml_elem_bool(&b, "LoggingEnabled", t->logging.value != 0);
    xml_close(&b, "Topic");
    FUZZ_CHECK(!buf_failed(&b));
    FUZZ_CHECK(xml_parse_topic_attrs(b.data, b.len, &again, &ei) == 0);
    FUZZ_CHECK(memcmp(&again, t, sizeof again) == 0);
    buf_free(&b);
}

static void check_publish(const struct xml_publish *p)
{
    FUZZ_CHECK(p->body_present == (p->body != NULL));
    if (p->body != NULL)
        FUZZ_CHECK(p->body[p->body_len] == '\0' && strlen(p->body) == p->body_len);
    else
        FUZZ_CHECK(p->body_len == 0);
    FUZZ_CHECK(strnlen(p->tag, sizeof p->tag) <= SMQ_TAG_MAX_BYTES);
}

static void check_publish_round_trip(const struct xml_publish *p)
{
    struct xml_publish again;
    struct smq_errinfo ei = {0, ""};
    struct smq_buf b;

    buf_init(&b);
    xml_begin(&b, "Message");
    if (p->body_present)
        xml_elem_text(&b, "MessageBody", p->body, p->body_len);
    if (p->tag[0] != '\0')
        xml_elem_str(&b, "MessageTag", p->tag);
    xml_close(&b, "Message");
    FUZZ_CHECK(!buf_failed(&b));
    FUZZ_CHECK(xml_parse_publish(b.data, b.len, &again, &ei) == 0);
    FUZZ_CHECK(again.body_present == p->body_present && again.body_len == p->body_len);
    FUZZ_CHECK(p->body_len == 0 || memcmp(again.body, p->body, p->body_len) == 0);
    FUZZ_CHECK(strcmp(again.tag, p->tag) == 0);
    xml_publish_free(&again);
    buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *doc = (const char *)data;
    struct xml_topic_attrs t;
    struct xml_sub_attrs s;
    struct xml_publish p;
    struct smq_errinfo ei = {0, ""};
    int rc;

    rc = xml_parse_topic_attrs(doc, size, &t, &ei);
    FUZZ_CHECK(result_ok(rc, &ei));
    if (rc != 0) {
        FUZZ_CHECK(all_zero(&t, sizeof t));
    } else {
        FUZZ_CHECK(!t.logging.present || t.logging.value == 0 || t.logging.value == 1);
        check_topic_round_trip(&t);
    }

    ei.err = 0;
    rc = xml_parse_sub_attrs(doc, size, &s, &ei);
    FUZZ_CHECK(result_ok(rc, &ei));
    if (rc != 0) {
        FUZZ_CHECK(all_zero(&s, sizeof s));
    } else {
        check_sub(&s);
        check_sub_round_trip(&s);
    }

    ei.err = 0;
    rc = xml_parse_publish(doc, size, &p, &ei);
    FUZZ_CHECK(result_ok(rc, &ei));
    if (rc != 0) {
        FUZZ_CHECK(all_zero(&p, sizeof p));
    } else {
        check_publish(&p);
        check_publish_round_trip(&p);
        xml_publish_free(&p);
    }
    xml_thread_cleanup();     /* each input reproduces alone */
    return 0;
}
