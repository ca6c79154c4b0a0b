/*
 * fuzz_xml.c — libFuzzer target for the request-body parsers of xml.h.
 *
 * The input is a request body.  It goes through every parser (xml_root_name,
 * xml_parse_queue_attrs, xml_parse_send, xml_parse_send_batch,
 * xml_parse_handles), whose results are then freed (leaks are reported by
 * LeakSanitizer).  Checked on the way, from the contracts in xml.h:
 *   - a parser returns 0, SMQ_E_MALFORMED_XML or SMQ_E_INVALID_ARGUMENT
 *     (SMQ_E_NOMEM only under memory pressure) and fills ei with that code;
 *     on failure nothing is left in *out;
 *   - a parsed MessageBody is NUL-terminated, body_len long, without NULs;
 *     batches hold 1..XML_BATCH_MAX items; receipt handles are trimmed;
 *   - round trip: every parsed MessageBody written back with xml_elem_text
 *     into a <Message> document re-parses to the same bytes;
 *   - xml_escape of the raw input (arbitrary bytes, as an error message
 *     quoting client input would be) always yields a well-formed document,
 *     and escaping is stable: escape(parse(escape(x))) == escape(x).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
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

static bool parse_result_ok(int rc, const struct smq_errinfo *ei)
{
    if (rc == 0)
        return true;
    return (rc == SMQ_E_MALFORMED_XML || rc == SMQ_E_INVALID_ARGUMENT || rc == SMQ_E_NOMEM)
           && ei->err == rc;
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Writes body as <MessageBody> of a response-style <Message> document. */
static void write_message(struct smq_buf *b, const char *body, size_t len)
{
    xml_begin(b, "Message");
    xml_elem_text(b, "MessageBody", body, len);
    xml_close(b, "Message");
}

/* A parsed MessageBody must survive xml_elem_text and a second parse byte for byte. */
static void check_body_round_trip(const struct xml_send_item *it)
{
    struct xml_send_item again;
    struct smq_errinfo ei = {0, ""};
    struct smq_buf b;
    int rc;

    if (!it->body_present)
        return;
    FUZZ_CHECK(it->body != NULL);
    FUZZ_CHECK(it->body[it->body_len] == '\0');
    FUZZ_CHECK(strlen(it->body) == it->body_len);
    buf_init(&b);
    write_message(&b, it->body, it->body_len);
    FUZZ_CHECK(!buf_failed(&b));
    rc = xml_parse_send(b.data, b.len, &again, &ei);
    FUZZ_CHECK(rc == 0);
    FUZZ_CHECK(again.body_present);
    FUZZ_CHECK(again.body_len == it->body_len);
    FUZZ_CHECK(memcmp(again.body, it->body, it->body_len) == 0);
    xml_send_item_free(&again);
    buf_free(&b);
}

static void check_item(const struct xml_send_item *it)
{
    if (!it->body_present)
        FUZZ_CHECK(it->body == NULL && it->body_len == 0);
    check_body_round_trip(it);
}

static bool send_item_empty(const struct xml_send_item *it)
{
    return it->body == NULL && it->body_len == 0 && !it->body_present;
}

static void fuzz_queue_attrs(const char *doc, size_t len)
{
    static const struct xml_queue_attrs zero;
    struct xml_queue_attrs a;
    struct smq_errinfo ei = {0, ""};
    int rc = xml_parse_queue_attrs(doc, len, &a, &ei);

    FUZZ_CHECK(parse_result_ok(rc, &ei));
    if (rc != 0)
        FUZZ_CHECK(memcmp(&a, &zero, sizeof a) == 0);
    else if (a.logging.present)
        FUZZ_CHECK(a.logging.value == 0 || a.logging.value == 1);
}

static void fuzz_send(const char *doc, size_t len)
{
    struct xml_send_item it;
    struct smq_errinfo ei = {0, ""};
    int rc = xml_parse_send(doc, len, &it, &ei);

    FUZZ_CHECK(parse_result_ok(rc, &ei));
    if (rc == 0)
        check_item(&it);
    else
        FUZZ_CHECK(send_item_empty(&it));
    xml_send_item_free(&it);
}

static void fuzz_send_batch(const char *doc, size_t len)
{
    struct xml_send_batch b;
    struct smq_errinfo ei = {0, ""};
    int rc = xml_parse_send_batch(doc, len, &b, &ei);

    FUZZ_CHECK(parse_result_ok(rc, &ei));
    if (rc == 0) {
        FUZZ_CHECK(b.n >= 1 && b.n <= XML_BATCH_MAX);
        for (size_t i = 0; i < b.n; i++)
            check_item(&b.items[i]);
    } else {
        FUZZ_CHECK(b.n == 0);
        for (size_t i = 0; i < XML_BATCH_MAX; i++)
            FUZZ_CHECK(b.items[i].body == NULL);
    }
    xml_send_batch_free(&b);
}

static void fuzz_handles(const char *doc, size_t len)
{
    struct xml_handles h;
    struct smq_errinfo ei = {0, ""};
    int rc = xml_parse_handles(doc, len, &h, &ei);

    FUZZ_CHECK(parse_result_ok(rc, &ei));
    if (rc == 0) {
        FUZZ_CHECK(h.n >= 1 && h.n <= XML_BATCH_MAX);
        for (size_t i = 0; i < h.n; i++) {
            size_t n = strlen(h.handles[i]);
            FUZZ_CHECK(n == 0 || (!is_space(h.handles[i][0]) && !is_space(h.handles[i][n - 1])));
        }
    } else {
        FUZZ_CHECK(h.n == 0);
        for (size_t i = 0; i < XML_BATCH_MAX; i++)
            FUZZ_CHECK(h.handles[i] == NULL);
    }
    xml_handles_free(&h);
}

static void fuzz_root_name(const char *doc, size_t len)
{
    char name[32];
    size_t small = len > 0 ? (unsigned char)doc[0] % 12 : 0;
    int rc = xml_root_name(doc, len, name, sizeof name);

    FUZZ_CHECK(rc == 0 || rc == SMQ_E_MALFORMED_XML || rc == SMQ_E_NOMEM);
    if (rc == 0)
        FUZZ_CHECK(strlen(name) < sizeof name && name[0] != '\0');
    /* A smaller buffer (down to 0 bytes) must never be overrun. */
    if (small > 0) {
        char *tight = malloc(small);
        FUZZ_CHECK(tight != NULL);
        rc = xml_root_name(doc, len, tight, small);
        if (rc == 0)
            FUZZ_CHECK(strlen(tight) < small);
        free(tight);
    } else {
        char none = 'x';
        rc = xml_root_name(doc, len, &none, 0);
        FUZZ_CHECK(rc != 0 && none == 'x');
    }
}

/* Escaping arbitrary bytes always gives a well-formed document, and is stable. */
static void fuzz_escape(const char *text, size_t len)
{
    struct xml_send_item it;
    struct smq_errinfo ei = {0, ""};
    struct smq_buf doc, esc1, esc2;
    int rc;

    buf_init(&doc);
    buf_init(&esc1);
    buf_init(&esc2);
    write_message(&doc, text, len);
    FUZZ_CHECK(!buf_failed(&doc));
    rc = xml_parse_send(doc.data, doc.len, &it, &ei);
    FUZZ_CHECK(rc == 0 && it.body_present);
    xml_escape(&esc1, text, len);
    xml_escape(&esc2, it.body, it.body_len);
    FUZZ_CHECK(!buf_failed(&esc1) && !buf_failed(&esc2));
    FUZZ_CHECK(esc1.len == esc2.len);
    FUZZ_CHECK(esc1.len == 0 || memcmp(esc1.data, esc2.data, esc1.len) == 0);
    xml_send_item_free(&it);
    buf_free(&doc);
    buf_free(&esc1);
    buf_free(&esc2);
}

/* After whatever the input did to this thread's kept parser context, an
 * ordinary document must still parse exactly (nothing crosses documents). */
static void fuzz_after(void)
{
    static const char next[] = "<Message><MessageBody>after</MessageBody><Priority>3</Priority>"
                               "</Message>";
    struct xml_send_item it;
    struct smq_errinfo ei = {0, ""};

    FUZZ_CHECK(xml_parse_send(next, sizeof next - 1, &it, &ei) == 0);
    FUZZ_CHECK(it.body_len == 5 && memcmp(it.body, "after", 5) == 0);
    FUZZ_CHECK(it.priority.present && it.priority.value == 3 && !it.delay_s.present);
    xml_send_item_free(&it);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* A private copy without slack, so ASan sees any read past size. */
    char *doc = malloc(size > 0 ? size : 1);

    if (doc == NULL)
        return 0;
    if (size > 0)
        memcpy(doc, data, size);
    fuzz_root_name(doc, size);
    fuzz_queue_attrs(doc, size);
    fuzz_send(doc, size);
    fuzz_send_batch(doc, size);
    fuzz_handles(doc, size);
    fuzz_escape(doc, size);
    free(doc);
    fuzz_after();
    xml_thread_cleanup();     /* no parser state carried to the next input: each reproduces alone */
    return 0;
}
