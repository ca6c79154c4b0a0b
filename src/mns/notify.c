/*
 * notify.c — owns the endpoint forms a subscription may name (notify.h,
 * docs/protocol.md §13.2): a queue of this server written as
 * acs:mns:{region}:{account}:queues/{q}, or an http(s) URL; the
 * notification bodies in each NotifyContentFormat (§13.9) and the retry
 * schedules of each NotifyStrategy (§13.12); an HTTP push's headers and
 * string to sign (§13.10, §13.11; the signing itself is the push pool's).
 * Pure text work, no I/O.
 */
#include "smqd/notify.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "smqd/crypto.h"
#include "smqd/errors.h"
#include "smqd/qname.h"
#include "smqd/utf8.h"
#include "smqd/xml.h"

#define QUEUE_PREFIX "acs:mns:"
#define QUEUE_MARK ":queues/"

/* Blanks trimmed around an Endpoint: the XML decoder's whitespace. */
static int is_blank(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* ASCII only, whatever the locale. */
static int is_alnum(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int is_hex(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* Visible ASCII: no blank, control character, DEL or byte above 0x7e. */
static int all_visible(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f)
            return 0;
    return 1;
}

/* Case-insensitive ASCII prefix test. */
static int has_prefix_ci(const char *s, size_t len, const char *p)
{
    size_t n = strlen(p);

    if (len < n)
        return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];

        if (c >= 'A' && c <= 'Z')
            c = (unsigned char)(c - 'A' + 'a');
        if (c != (unsigned char)p[i])
            return 0;
    }
    return 1;
}

static int refuse(struct smq_errinfo *ei, const char *why)
{
    if (ei != NULL)
        return errors_set(ei, SMQ_E_ENDPOINT_INVALID, "%s", why);
    return SMQ_E_ENDPOINT_INVALID;
}

/* acs:mns:{anything visible}:queues/{q}: q after the last ":queues/". */
static int parse_queue(const char *s, size_t len, struct notify_endpoint *out,
                       struct smq_errinfo *ei)
{
    const char *q = NULL;
    size_t mark = strlen(QUEUE_MARK), pre = strlen(QUEUE_PREFIX);

    if (!all_visible(s, len))
        return refuse(ei, "A queue endpoint may hold only visible ASCII characters.");
    for (size_t i = pre; i + mark <= len; i++)
        if (memcmp(s + i, QUEUE_MARK, mark) == 0)
            q = s + i + mark;
    if (q == NULL)
        return refuse(ei, "A queue endpoint is written acs:mns:{region}:{account}:queues/{queue}.");
    size_t qlen = (size_t)(s + len - q);
    enum qname_problem p = qname_check(q, qlen);

    if (p != QNAME_OK)
        return refuse(ei, qname_problem_text(p));
    out->kind = NOTIFY_EP_QUEUE;
    memcpy(out->queue, q, qlen);
    out->queue[qlen] = '\0';
    return 0;
}

/* [IPv6]: hex digits, ':' and '.' (an IPv4 tail), at least two ':'. */
static int ipv6_ok(const char *h, size_t len)
{
    size_t colons = 0;

    if (len < 4 || h[0] != '[' || h[len - 1] != ']')
        return 0;
    for (size_t i = 1; i + 1 < len; i++) {
        if (h[i] == ':')
            colons++;
        else if (!is_hex((unsigned char)h[i]) && h[i] != '.')
            return 0;
    }
    return colons >= 2;
}

/* A host name or IPv4 address: labels of letters, digits, '-' and '_'
 * joined by single dots, a trailing dot allowed. */
static int name_ok(const char *h, size_t len)
{
    if (len == 0 || h[0] == '.')
        return 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)h[i];

        if (c == '.') {
            if (i + 1 < len && h[i + 1] == '.')
                return 0;
        } else if (!is_alnum(c) && c != '-' && c != '_') {
            return 0;
        }
    }
    return 1;
}

/* ":port" after the host: 1 to 5 digits, 1..65535.  -1 when bad. */
static int parse_port(const char *p, size_t len)
{
    int v = 0;

    if (len == 0 || len > 5)
        return -1;
    for (size_t i = 0; i < len; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
        v = v * 10 + (p[i] - '0');
    }
    return v >= 1 && v <= 65535 ? v : -1;
}

/* host[:port] of an http(s) URL (a, alen bytes) into out. */
static int parse_authority(const char *a, size_t alen, struct notify_endpoint *out,
                           struct smq_errinfo *ei)
{
    size_t hlen = alen;

    if (memchr(a, '@', alen) != NULL)
        return refuse(ei, "An http(s) endpoint may not carry user information (user@).");
    if (alen > 0 && a[0] == '[') {
        const char *close = memchr(a, ']', alen);

        hlen = close == NULL ? alen : (size_t)(close - a) + 1;
        if (!ipv6_ok(a, hlen))
            return refuse(ei, "The endpoint's IPv6 host is not valid.");
    } else {
        const char *colon = memchr(a, ':', alen);

        hlen = colon == NULL ? alen : (size_t)(colon - a);
        if (hlen == 0)
            return refuse(ei, "An http(s) endpoint must name a host.");
        if (!name_ok(a, hlen))
            return refuse(ei, "The endpoint's host is not a valid host name or address.");
    }
    if (hlen >= sizeof out->host)
        return refuse(ei, "The endpoint's host is longer than 255 characters.");
    out->port = out->https ? 443 : 80;
    if (hlen < alen) {
        if (a[hlen] != ':' || (out->port = parse_port(a + hlen + 1, alen - hlen - 1)) < 0)
            return refuse(ei, "The endpoint's port must be a number from 1 to 65535.");
    }
    memcpy(out->host, a, hlen);
    out->host[hlen] = '\0';
    memcpy(out->authority, a, alen);
    out->authority[alen] = '\0';
    return 0;
}

/* http://... or https://... (the scheme in any case). */
static int parse_http(const char *s, size_t len, bool https, struct notify_endpoint *out,
                      struct smq_errinfo *ei)
{
    size_t skip = https ? strlen("https://") : strlen("http://");
    const char *a = s + skip, *end = s + len, *t = a;

    if (!all_visible(s, len))
        return refuse(ei, "An http(s) endpoint may not hold whitespace, control or non-ASCII "
                          "characters.");
    if (memchr(s, '#', len) != NULL)
        return refuse(ei, "An http(s) endpoint may not carry a fragment (#).");
    while (t < end && *t != '/' && *t != '?')
        t++;
    out->kind = NOTIFY_EP_HTTP;
    out->https = https;
    int rc = parse_authority(a, (size_t)(t - a), out, ei);

    if (rc != 0)
        return rc;
    size_t tlen = (size_t)(end - t);
    if (tlen == 0 || *t == '?') {   /* no path: the service's /notifications (§13.2, Q7) */
        if (strlen("/notifications") + tlen > SMQ_ENDPOINT_MAX)
            return refuse(ei, "The endpoint's request target (/notifications and the query) "
                              "is longer than 1024 bytes.");
        memcpy(out->target, "/notifications", sizeof "/notifications");
        memcpy(out->target + strlen("/notifications"), t, tlen);
        out->target[strlen("/notifications") + tlen] = '\0';
    } else {
        memcpy(out->target, t, tlen);
        out->target[tlen] = '\0';
    }
    return 0;
}

int notify_endpoint_parse_err(const char *text, size_t len, struct notify_endpoint *out,
                              char trimmed[SMQ_ENDPOINT_MAX + 1], struct smq_errinfo *ei)
{
    memset(out, 0, sizeof *out);
    trimmed[0] = '\0';
    while (len > 0 && is_blank((unsigned char)text[0])) {
        text++;
        len--;
    }
    while (len > 0 && is_blank((unsigned char)text[len - 1]))
        len--;
    if (len == 0)
        return refuse(ei, "The endpoint is empty.");
    if (len > SMQ_ENDPOINT_MAX)
        return refuse(ei, "The endpoint is longer than 1024 bytes.");

    int rc;

    if (has_prefix_ci(text, len, "https://"))
        rc = parse_http(text, len, true, out, ei);
    else if (has_prefix_ci(text, len, "http://"))
        rc = parse_http(text, len, false, out, ei);
    else if (len >= strlen(QUEUE_PREFIX) && memcmp(text, QUEUE_PREFIX, strlen(QUEUE_PREFIX)) == 0)
        rc = parse_queue(text, len, out, ei);
    else if (has_prefix_ci(text, len, "mail:") || has_prefix_ci(text, len, "sms:"))
        rc = refuse(ei, "smqd does not deliver to mail or SMS endpoints: subscribe a queue "
                        "(acs:mns:{region}:{account}:queues/{queue}) or an http(s) URL.");
    else
        rc = refuse(ei, "The endpoint is not a queue of this server "
                        "(acs:mns:{region}:{account}:queues/{queue}) or an http(s) URL.");
    if (rc != 0) {
        memset(out, 0, sizeof *out);
        return rc;
    }
    memcpy(trimmed, text, len);
    trimmed[len] = '\0';
    return 0;
}

int notify_endpoint_parse(const char *text, size_t len, struct notify_endpoint *out,
                          char trimmed[SMQ_ENDPOINT_MAX + 1])
{
    return notify_endpoint_parse_err(text, len, out, trimmed, NULL);
}

/* ---- the signing certificate's URL (§13.11) ---- */

static int bad_cert_url(struct smq_errinfo *ei, const char *why)
{
    return errors_set(ei, SMQ_E_INVALID_ARGUMENT, "%s", why);
}

static bool is_wildcard_host(const char *host)
{
    return host[0] == '\0' || strcmp(host, "0.0.0.0") == 0 || strcmp(host, "::") == 0
           || strcmp(host, "[::]") == 0 || strcmp(host, "::0") == 0;
}

int notify_cert_url(const char *configured, const char *scheme, const char *host, unsigned port,
                    char out[NOTIFY_CERT_URL_MAX + 1], struct smq_errinfo *ei)
{
    struct notify_endpoint ep;
    char trimmed[SMQ_ENDPOINT_MAX + 1];
    bool v6 = strchr(host, ':') != NULL && host[0] != '[';
    int n;

    out[0] = '\0';
    if (configured[0] != '\0') {
        if (strlen(configured) > NOTIFY_CERT_URL_MAX)
            return bad_cert_url(ei, "[topics] certificate_url is longer than 450 bytes: its "
                                    "base64 would not fit a push header.");
        if (notify_endpoint_parse(configured, strlen(configured), &ep, trimmed) != 0
            || ep.kind != NOTIFY_EP_HTTP || strcmp(trimmed, configured) != 0)
            return bad_cert_url(ei, "[topics] certificate_url is not an http:// or https:// "
                                    "URL (host, optional port and path; no blanks).");
        memcpy(out, configured, strlen(configured) + 1);
        return 0;
    }
    if (is_wildcard_host(host))
        return bad_cert_url(ei, "the MNS listener listens on a wildcard address, which no push "
                                "endpoint can fetch the signing certificate from: set [topics] "
                                "certificate_url.");
    n = snprintf(out, NOTIFY_CERT_URL_MAX + 1, "%s://%s%s%s:%u%s", scheme, v6 ? "[" : "", host,
                 v6 ? "]" : "", port, NOTIFY_CERT_PATH);
    if (n < 0 || n > NOTIFY_CERT_URL_MAX) {
        out[0] = '\0';
        return bad_cert_url(ei, "the default certificate URL is too long: set [topics] "
                                "certificate_url.");
    }
    return 0;
}

/* ---- the notification (§13.9) ---- */

/* The XML document's namespace keeps its trailing slash (§13.9), unlike
 * the slash-less one xml_begin gives answers (§4). */
#define NOTIFY_XML_HEAD                                                                    \
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>"                                           \
    "<Notification xmlns=\"http://mns.aliyuncs.com/doc/v1/\">"

static const char *or_empty(const char *s)
{
    return s != NULL ? s : "";
}

static bool tagged(const struct notify_msg *m)
{
    return m->tag != NULL && m->tag[0] != '\0';
}

static void render_xml(const struct notify_msg *m, const char *md5_hex, struct smq_buf *out)
{
    buf_puts(out, NOTIFY_XML_HEAD);
    xml_elem_str(out, "TopicOwner", or_empty(m->account_id));
    xml_elem_str(out, "TopicName", or_empty(m->topic));
    xml_elem_str(out, "Subscriber", or_empty(m->account_id));
    xml_elem_str(out, "SubscriptionName", or_empty(m->sub));
    xml_elem_str(out, "MessageId", or_empty(m->msg_id));
    /* escaped as §4 says: & < > and CR; the body came through the parser */
    xml_elem_text(out, "Message", m->body, m->body_len);
    xml_elem_str(out, "MessageMD5", md5_hex);
    if (tagged(m))
        xml_elem_str(out, "MessageTag", m->tag);
    xml_elem_i64(out, "PublishTime", m->publish_ms);
    buf_puts(out, "</Notification>");
}

/* One byte below 0x80 of a JSON string, escaped exactly as §13.9 lists:
 * '"' and '\\' with a backslash, the five short forms, other C0 controls as
 * \u00xx; everything else (DEL and '/' included) as it is. */
static void json_ascii(struct smq_buf *out, unsigned char c)
{
    static const char hex[] = "0123456789abcdef";
    char u[7] = {'\\', 'u', '0', '0', 0, 0, 0};

    switch (c) {
    case '"': buf_puts(out, "\\\""); return;
    case '\\': buf_puts(out, "\\\\"); return;
    case '\n': buf_puts(out, "\\n"); return;
    case '\r': buf_puts(out, "\\r"); return;
    case '\t': buf_puts(out, "\\t"); return;
    case '\b': buf_puts(out, "\\b"); return;
    case '\f': buf_puts(out, "\\f"); return;
    default: break;
    }
    if (c >= 0x20) {
        buf_append(out, &c, 1);
        return;
    }
    u[4] = hex[c >> 4];
    u[5] = hex[c & 0xf];
    buf_append(out, u, 6);
}

/* A quoted JSON string (RFC 8259) of s[0..len).  Valid UTF-8 is written as
 * it is; a byte that does not start valid UTF-8 (never in a body that came
 * through the XML parser) becomes U+FFFD, so the document stays valid. */
static void json_string(struct smq_buf *out, const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;

    buf_puts(out, "\"");
    while (i < len) {
        uint32_t cp;
        size_t n = utf8_decode(p + i, len - i, &cp);

        if (n == 1)
            json_ascii(out, p[i]);
        else if (n > 1)
            buf_append(out, p + i, n);
        else
            buf_puts(out, "\xEF\xBF\xBD");
        i += n > 0 ? n : 1;
    }
    buf_puts(out, "\"");
}

/* key is the literal text before the value (its comma, quotes and
 * colon), then the value as a JSON string. */
static void json_member(struct smq_buf *out, const char *key, const char *v, size_t len)
{
    buf_puts(out, key);
    json_string(out, v, len);
}

static void render_json(const struct notify_msg *m, const char *md5_hex, struct smq_buf *out)
{
    const char *owner = or_empty(m->account_id);

    json_member(out, "{\"TopicOwner\":", owner, strlen(owner));
    json_member(out, ",\"TopicName\":", or_empty(m->topic), strlen(or_empty(m->topic)));
    json_member(out, ",\"Subscriber\":", owner, strlen(owner));
    json_member(out, ",\"SubscriptionName\":", or_empty(m->sub), strlen(or_empty(m->sub)));
    json_member(out, ",\"MessageId\":", or_empty(m->msg_id), strlen(or_empty(m->msg_id)));
    json_member(out, ",\"Message\":", m->body, m->body_len);
    json_member(out, ",\"MessageMD5\":", md5_hex, strlen(md5_hex));
    if (tagged(m))
        json_member(out, ",\"MessageTag\":", m->tag, strlen(m->tag));
    buf_puts(out, ",\"PublishTime\":");
    buf_append_i64(out, m->publish_ms);
    buf_puts(out, "}");
}

int notify_render(enum smq_notify_format f, const struct notify_msg *m, struct smq_buf *out)
{
    char md5_hex[2 * MNS_MD5_LEN + 1];

    if (m == NULL || out == NULL || (m->body == NULL && m->body_len > 0))
        return SMQ_E_INVALID_ARGUMENT;
    if (f == SMQ_NOTIFY_SIMPLIFIED) {
        buf_append(out, m->body, m->body_len);
        return buf_failed(out) ? SMQ_E_NOMEM : 0;
    }
    if ((f != SMQ_NOTIFY_XML && f != SMQ_NOTIFY_JSON) || m->md5 == NULL)
        return SMQ_E_INVALID_ARGUMENT;
    crypto_hex(m->md5, MNS_MD5_LEN, true, md5_hex);
    /* the wrapper is a few hundred bytes; escaping rarely grows the body */
    buf_reserve(out, m->body_len + 512);
    if (f == SMQ_NOTIFY_XML)
        render_xml(m, md5_hex, out);
    else
        render_json(m, md5_hex, out);
    return buf_failed(out) ? SMQ_E_NOMEM : 0;
}

/* An unknown format is read as the default, XML, as mns_notify_format_name
 * does. */
const char *notify_content_type(enum smq_notify_format f)
{
    switch (f) {
    case SMQ_NOTIFY_JSON:
        return "application/json;charset=utf-8";
    case SMQ_NOTIFY_SIMPLIFIED:
        return "text/plain;charset=utf-8";
    default:
        return "text/xml;charset=utf-8";
    }
}

/* ---- retries (§13.12) ---- */

#define BACKOFF_ATTEMPTS 4u
#define BACKOFF_MIN_MS 10000
#define BACKOFF_SPAN_MS 10000
#define DECAY_ATTEMPTS 177u
#define DECAY_DOUBLINGS 9u             /* retries 1..9: 1, 2, 4, ..., 256 s */
#define DECAY_CAP_MS 512000            /* retries 10..176 */

/* An unknown strategy is read as the default, BACKOFF_RETRY, as
 * mns_notify_strategy_name does. */
uint32_t notify_max_attempts(enum smq_notify_strategy s)
{
    return s == SMQ_NOTIFY_EXPONENTIAL_DECAY_RETRY ? DECAY_ATTEMPTS : BACKOFF_ATTEMPTS;
}

int64_t notify_retry_interval_ms(enum smq_notify_strategy s, uint32_t retry_n, uint32_t rnd)
{
    if (retry_n == 0 || retry_n >= notify_max_attempts(s))
        return -1;
    if (s != SMQ_NOTIFY_EXPONENTIAL_DECAY_RETRY)
        /* rnd scaled onto 0..SPAN (both ends reachable, bias below 1e-5) */
        return BACKOFF_MIN_MS + (int64_t)(((uint64_t)rnd * (BACKOFF_SPAN_MS + 1)) >> 32);
    if (retry_n <= DECAY_DOUBLINGS)
        return (int64_t)1000 << (retry_n - 1);
    return DECAY_CAP_MS;
}

/* ---- the push request (§13.10, §13.11) ---- */

/* Writes v as exactly width decimal digits, zero-padded. */
static void put_digits(char *p, unsigned v, int width)
{
    for (int i = width - 1; i >= 0; i--) {
        p[i] = (char)('0' + v % 10);
        v /= 10;
    }
}

/* Years 1970..9999 fit the four digits of the format. */
#define HTTP_DATE_MAX_S INT64_C(253402300799)    /* 9999-12-31 23:59:59 */

void notify_http_date(int64_t epoch_ms, char out[30])
{
    static const char wdays[] = "SunMonTueWedThuFriSat";
    static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
    int64_t t = epoch_ms < 0 ? 0 : epoch_ms / 1000;
    int64_t days, doe, yoe, doy, mp;
    unsigned secs, month, year;

    if (t > HTTP_DATE_MAX_S)
        t = HTTP_DATE_MAX_S;
    days = t / 86400;
    secs = (unsigned)(t % 86400);
    /* the civil date of a day count (the proleptic Gregorian calendar,
     * eras of 400 years counted from 0000-03-01) */
    doe = (days + 719468) % 146097;
    yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    mp = (5 * doy + 2) / 153;
    month = (unsigned)(mp < 10 ? mp + 3 : mp - 9);
    year = (unsigned)(yoe + (days + 719468) / 146097 * 400 + (month <= 2));
    memcpy(out, wdays + 3 * ((days + 4) % 7), 3);        /* 1970-01-01 was a Thursday */
    memcpy(out + 3, ", ", 2);
    put_digits(out + 5, (unsigned)(doy - (153 * mp + 2) / 5 + 1), 2);
    out[7] = ' ';
    memcpy(out + 8, months + 3 * (month - 1), 3);
    out[11] = ' ';
    put_digits(out + 12, year, 4);
    out[16] = ' ';
    put_digits(out + 17, secs / 3600, 2);
    out[19] = ':';
    put_digits(out + 20, secs / 60 % 60, 2);
    out[22] = ':';
    put_digits(out + 23, secs % 60, 2);
    memcpy(out + 25, " GMT", 5);                          /* with the NUL */
}

/* Appends one header; a value that does not fit, or holds a control byte
 * (a header could be split by it), is refused. */
static int add_header(struct notify_header *h, size_t *n, const char *name, const char *value)
{
    size_t len = strlen(value);

    if (*n >= NOTIFY_PUSH_HEADERS_MAX || len >= sizeof h->value)
        return SMQ_E_INVALID_ARGUMENT;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)value[i] < 0x20 || (unsigned char)value[i] == 0x7f)
            return SMQ_E_INVALID_ARGUMENT;
    h[*n].name = name;
    memcpy(h[*n].value, value, len + 1);
    (*n)++;
    return 0;
}

/* x-mns-message-tag: as it is when all printable ASCII; otherwise every
 * byte but RFC 3986's unreserved ones as %XX, so any percent-decoder gets
 * the UTF-8 back (§13.10).  out holds 3 * SMQ_TAG_MAX_BYTES + 1. */
static int tag_header_value(const char *tag, char *out, size_t size)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t len = strlen(tag), o = 0;
    bool plain = true;

    for (size_t i = 0; i < len; i++)
        plain = plain && (unsigned char)tag[i] >= 0x20 && (unsigned char)tag[i] < 0x7f;
    if (plain)
        return snprintf(out, size, "%s", tag) < (int)size ? 0 : SMQ_E_INVALID_ARGUMENT;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)tag[i];

        if (o + 4 > size)
            return SMQ_E_INVALID_ARGUMENT;
        if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
            || c == '-' || c == '.' || c == '_' || c == '~') {
            out[o++] = (char)c;
            continue;
        }
        out[o++] = '%';
        out[o++] = hex[c >> 4];
        out[o++] = hex[c & 0xf];
    }
    out[o] = '\0';
    return 0;
}

/* Every x-mns-* header of §13.10 the attempt carries, in the table's order. */
static int add_mns_headers(const struct notify_push *p, struct notify_header *h, size_t *n)
{
    const struct notify_msg *m = p->msg;
    char b64[sizeof h->value], num[24], tag[3 * SMQ_TAG_MAX_BYTES + 1];
    size_t url_len = strlen(p->cert_url);
    int rc;

    if (url_len > (sizeof b64 - 1) / 4 * 3)
        return SMQ_E_INVALID_ARGUMENT;
    crypto_base64(p->cert_url, url_len, b64);
    snprintf(num, sizeof num, "%" PRId64, m->publish_ms);
    rc = add_header(h, n, "x-mns-version", "2015-06-06");
    if (rc == 0)
        rc = add_header(h, n, "x-mns-request-id", p->request_id);
    if (rc == 0)
        rc = add_header(h, n, "x-mns-signing-cert-url", b64);
    if (rc == 0)
        rc = add_header(h, n, "x-mns-topic-owner", or_empty(m->account_id));
    if (rc == 0)
        rc = add_header(h, n, "x-mns-topic-name", or_empty(m->topic));
    if (rc == 0)
        rc = add_header(h, n, "x-mns-subscriber", or_empty(m->account_id));
    if (rc == 0)
        rc = add_header(h, n, "x-mns-subscription-name", or_empty(m->sub));
    if (rc == 0)
        rc = add_header(h, n, "x-mns-publish-time", num);
    if (rc == 0 && p->format == SMQ_NOTIFY_SIMPLIFIED)
        rc = add_header(h, n, "x-mns-message-id", or_empty(m->msg_id));
    if (rc == 0 && p->format == SMQ_NOTIFY_SIMPLIFIED && tagged(m))
        rc = tag_header_value(m->tag, tag, sizeof tag);
    if (rc == 0 && p->format == SMQ_NOTIFY_SIMPLIFIED && tagged(m))
        rc = add_header(h, n, "x-mns-message-tag", tag);
    return rc;
}

static int by_name(const void *a, const void *b)
{
    return strcmp((*(const struct notify_header *const *)a)->name,
                  (*(const struct notify_header *const *)b)->name);
}

/* §13.11: POST, Content-MD5, Content-Type, Date, the x-mns-* headers as
 * name:value lines sorted by name, then the resource.  headers[0..2] are
 * date, content-type and content-md5. */
static void build_string_to_sign(const struct notify_header *h, size_t n, const char *target,
                           struct smq_buf *out)
{
    const struct notify_header *mns[NOTIFY_PUSH_HEADERS_MAX];
    size_t k = 0;

    for (size_t i = 3; i < n; i++)
        mns[k++] = &h[i];
    qsort(mns, k, sizeof mns[0], by_name);
    buf_reset(out);
    buf_printf(out, "POST\n%s\n%s\n%s\n", h[2].value, h[1].value, h[0].value);
    for (size_t i = 0; i < k; i++)
        buf_printf(out, "%s:%s\n", mns[i]->name, mns[i]->value);
    buf_puts(out, target);
}

int notify_push_headers(const struct notify_push *p, const void *body, size_t body_len,
                        struct notify_header headers[NOTIFY_PUSH_HEADERS_MAX], size_t *n,
                        struct smq_buf *string_to_sign)
{
    char md5_hex[2 * MNS_MD5_LEN + 1], md5_b64[48];
    int rc;

    *n = 0;
    if (p == NULL || p->msg == NULL || p->ep == NULL || p->date == NULL || p->request_id == NULL
        || p->cert_url == NULL || (body == NULL && body_len > 0)
        || (p->format != SMQ_NOTIFY_XML && p->format != SMQ_NOTIFY_JSON
            && p->format != SMQ_NOTIFY_SIMPLIFIED))
        return SMQ_E_INVALID_ARGUMENT;
    /* the MNS API's form: base64 of the lower-case hex digest (§2.1) */
    if (crypto_md5_hex(body_len > 0 ? body : "", body_len, false, md5_hex) != 0)
        return SMQ_E_NOMEM;
    crypto_base64(md5_hex, strlen(md5_hex), md5_b64);
    rc = add_header(headers, n, "date", p->date);
    if (rc == 0)
        rc = add_header(headers, n, "content-type", notify_content_type(p->format));
    if (rc == 0)
        rc = add_header(headers, n, "content-md5", md5_b64);
    if (rc == 0)
        rc = add_mns_headers(p, headers, n);
    if (rc == 0) {
        build_string_to_sign(headers, *n, p->ep->target, string_to_sign);
        rc = buf_failed(string_to_sign) ? SMQ_E_NOMEM : 0;
    }
    if (rc != 0)
        *n = 0;
    return rc;
}
