/*
 * fuzz_notify.c — libFuzzer target for the Subscribe endpoint parser
 * (notify.h, docs/protocol.md §13.2).
 *
 * The input is an Endpoint's text.  Checked:
 *   - only 0 or SMQ_E_ENDPOINT_INVALID; the _err form agrees with the plain
 *     one and gives a message on a refusal; nothing is left in trimmed or
 *     *out after a refusal;
 *   - an accepted endpoint: trimmed is at most 1024 bytes of visible ASCII
 *     and parses again to the same result (the stored text is a fixed
 *     point); a queue endpoint starts with acs:mns:, ends with
 *     ":queues/" and its queue, a valid queue name; an http(s) one has a
 *     port 1..65535, a target starting with '/', an authority starting with
 *     its host, and no '@', '#' in the stored text's authority.
 * The same input is also a published body (and its first bytes, up to a
 * NUL, a tag), rendered in every format (§13.9).  Checked: always 0;
 * SIMPLIFIED is the body itself; XML and JSON are valid UTF-8 with no
 * control byte but the ones allowed (TAB and LF in XML, none in JSON),
 * begin and end as the documents must, and give the body back exactly when
 * decoded, whenever the body is valid UTF-8 (and, for XML, valid XML
 * characters: anything else is written as U+FFFD).
 * Seeds are kept by hand in corpus/fuzz_notify.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "smqd/errors.h"
#include "smqd/notify.h"
#include "smqd/qname.h"
#include "smqd/utf8.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

static bool all_zero(const void *p, size_t n)
{
    const unsigned char *c = p;

    for (size_t i = 0; i < n; i++)
        if (c[i] != 0)
            return false;
    return true;
}

static void check_accepted(const struct notify_endpoint *ep, const char *trimmed)
{
    size_t tl = strlen(trimmed);
    struct notify_endpoint again;
    char t2[SMQ_ENDPOINT_MAX + 1];

    FUZZ_CHECK(tl >= 1 && tl <= SMQ_ENDPOINT_MAX);
    for (size_t i = 0; i < tl; i++)
        FUZZ_CHECK((unsigned char)trimmed[i] > 0x20 && (unsigned char)trimmed[i] < 0x7f);
    FUZZ_CHECK(notify_endpoint_parse(trimmed, tl, &again, t2) == 0);
    FUZZ_CHECK(strcmp(t2, trimmed) == 0);
    FUZZ_CHECK(memcmp(&again, ep, sizeof again) == 0);
    if (ep->kind == NOTIFY_EP_QUEUE) {
        size_t ql = strlen(ep->queue);

        FUZZ_CHECK(strncmp(trimmed, "acs:mns:", 8) == 0);
        FUZZ_CHECK(qname_check(ep->queue, ql) == QNAME_OK);
        FUZZ_CHECK(tl > ql + 8 && memcmp(trimmed + tl - ql - 8, ":queues/", 8) == 0);
        return;
    }
    FUZZ_CHECK(ep->kind == NOTIFY_EP_HTTP);
    FUZZ_CHECK(ep->port >= 1 && ep->port <= 65535);
    FUZZ_CHECK(ep->target[0] == '/');
    FUZZ_CHECK(ep->host[0] != '\0');
    FUZZ_CHECK(strncmp(ep->authority, ep->host, strlen(ep->host)) == 0);
    FUZZ_CHECK(strchr(ep->authority, '@') == NULL && strchr(trimmed, '#') == NULL);
}

/* ---- rendered bodies (§13.9) ---- */

#define XML_HEAD "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Notification xmlns=\"http://mns.aliyuncs.com/doc/v1/\">"
#define XML_TAIL "<PublishTime>1704164645000</PublishTime></Notification>"
#define JSON_TAIL ",\"PublishTime\":1704164645000}"

/* Valid UTF-8 throughout; with xml, also only XML 1.0 characters. */
static bool clean_text(const unsigned char *p, size_t n, bool xml)
{
    size_t i = 0;

    while (i < n) {
        uint32_t cp;
        size_t l = utf8_decode(p + i, n - i, &cp);

        if (l == 0)
            return false;
        if (xml && ((cp < 0x20 && cp != '\t' && cp != '\n' && cp != '\r') || cp == 0xFFFE
                    || cp == 0xFFFF))
            return false;
        i += l;
    }
    return true;
}

static bool has(const char *s, size_t n, const char *lit)
{
    size_t l = strlen(lit);

    return n >= l && memcmp(s, lit, l) == 0;
}

/* Decodes the XML text at s up to the next '<' into out; its length. */
static size_t xml_unescape(const char *s, const char *end, char *out)
{
    static const struct { const char *ent; char c; } ents[] = {
        {"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&#13;", '\r'},
    };
    size_t o = 0;

    while (s < end && *s != '<') {
        size_t k = 0;

        if (*s == '&') {
            for (k = 0; k < 4 && !has(s, (size_t)(end - s), ents[k].ent); k++)
                ;
            FUZZ_CHECK(k < 4);
            out[o++] = ents[k].c;
            s += strlen(ents[k].ent);
            continue;
        }
        out[o++] = *s++;
    }
    return o;
}

/* Decodes the JSON string body at s (after its opening quote) into out. */
static size_t json_unescape(const char *s, const char *end, char *out)
{
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    size_t o = 0;

    while (s < end && *s != '"') {
        const char *e;

        if (*s != '\\') {
            out[o++] = *s++;
            continue;
        }
        FUZZ_CHECK(end - s >= 2);
        if (s[1] == 'u') {
            FUZZ_CHECK(end - s >= 6 && s[2] == '0' && s[3] == '0');
            out[o++] = (char)strtol((char[3]){s[4], s[5], 0}, NULL, 16);
            s += 6;
            continue;
        }
        e = strchr(from, s[1]);
        FUZZ_CHECK(e != NULL && s[1] != '\0');
        out[o++] = to[e - from];
        s += 2;
    }
    return o;
}

/* The body decoded back from the document in b (from its Message text at
 * key) equals data.  Decoding never lengthens text, so b->len bytes hold it. */
static void check_round_trip(const struct smq_buf *b, const char *key, bool xml,
                             const uint8_t *data, size_t size)
{
    const char *p = strstr(b->data, key);
    char *dec = malloc(b->len);
    size_t n;

    FUZZ_CHECK(p != NULL);
    if (dec == NULL)
        return;
    p += strlen(key);
    n = xml ? xml_unescape(p, b->data + b->len, dec) : json_unescape(p, b->data + b->len, dec);
    FUZZ_CHECK(n == size && memcmp(dec, data, size) == 0);
    free(dec);
}

/* Renders data as a body in every format and checks what §13.9 promises. */
static void check_rendered(const uint8_t *data, size_t size)
{
    static const unsigned char md5[MNS_MD5_LEN] = {0xab};
    char tag[9] = {0};
    struct notify_msg m = {
        .account_id = NOTIFY_ACCOUNT_ID_DEFAULT, .topic = "t", .sub = "s",
        .msg_id = "0909FF0D9C3A630C0000000000000007", .body = (const char *)data,
        .body_len = size, .md5 = md5, .tag = tag, .publish_ms = 1704164645000,
    };
    struct smq_buf b;

    memcpy(tag, data, size < 8 ? size : 8);
    buf_init(&b);
    FUZZ_CHECK(notify_render(SMQ_NOTIFY_SIMPLIFIED, &m, &b) == 0);
    FUZZ_CHECK(b.len == size && (size == 0 || memcmp(b.data, data, size) == 0));

    buf_reset(&b);
    FUZZ_CHECK(notify_render(SMQ_NOTIFY_XML, &m, &b) == 0);
    FUZZ_CHECK(clean_text((const unsigned char *)b.data, b.len, true));
    FUZZ_CHECK(memchr(b.data, '\r', b.len) == NULL && has(b.data, b.len, XML_HEAD));
    FUZZ_CHECK(b.len > strlen(XML_TAIL) && strcmp(b.data + b.len - strlen(XML_TAIL), XML_TAIL) == 0);
    if (clean_text(data, size, true))
        check_round_trip(&b, "<Message>", true, data, size);

    buf_reset(&b);
    FUZZ_CHECK(notify_render(SMQ_NOTIFY_JSON, &m, &b) == 0);
    FUZZ_CHECK(clean_text((const unsigned char *)b.data, b.len, false));
    for (size_t i = 0; i < b.len; i++)
        FUZZ_CHECK((unsigned char)b.data[i] >= 0x20);
    FUZZ_CHECK(has(b.data, b.len, "{\"TopicOwner\":\"1000000000000000\","));
    FUZZ_CHECK(b.len > strlen(JSON_TAIL) && strcmp(b.data + b.len - strlen(JSON_TAIL), JSON_TAIL) == 0);
    if (clean_text(data, size, false))
        check_round_trip(&b, ",\"Message\":\"", false, data, size);
    buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct notify_endpoint ep, ep2;
    char trimmed[SMQ_ENDPOINT_MAX + 1], t2[SMQ_ENDPOINT_MAX + 1];
    struct smq_errinfo ei = {0};
    char *text = malloc(size + 1);   /* exactly size bytes readable, as ASan sees it */

    if (text == NULL)
        return 0;
    memcpy(text, data, size);
    int rc = notify_endpoint_parse_err(text, size, &ep, trimmed, &ei);
    int rc2 = notify_endpoint_parse(text, size, &ep2, t2);

    FUZZ_CHECK(rc == 0 || rc == SMQ_E_ENDPOINT_INVALID);
    FUZZ_CHECK(rc == rc2);
    if (rc != 0) {
        FUZZ_CHECK(ei.err == SMQ_E_ENDPOINT_INVALID && ei.msg[0] != '\0');
        FUZZ_CHECK(trimmed[0] == '\0' && t2[0] == '\0');
        FUZZ_CHECK(all_zero(&ep, sizeof ep));
    } else {
        FUZZ_CHECK(memcmp(&ep, &ep2, sizeof ep) == 0 && strcmp(trimmed, t2) == 0);
        check_accepted(&ep, trimmed);
    }
    free(text);
    check_rendered(data, size);
    return 0;
}
