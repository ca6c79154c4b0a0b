/*
 * auth.c — owns MNS request authentication, signature V2 (docs/protocol.md §3)
 * and the dispatch to V4 (auth_v4.c):
 * building the string to sign from the request as received (its x-mns-*
 * lines sorted by auth_headers.c, which V4 shares), HMAC-SHA1
 * signing, the Authorization/Date/x-mns-version checks, the strict RFC 1123
 * date parser and the Content-MD5 check.  Crypto primitives come from
 * crypto.c; this file never touches OpenSSL.
 */
#define _DEFAULT_SOURCE   /* timegm() under -std=c11 as well as gnu11 */

#include "auth_headers.h"
#include "auth_text.h"
#include "auth_v4.h"
#include "smqd/auth.h"
#include "smqd/crypto.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MNS_PREFIX "x-mns-"
#define MNS_PREFIX_LEN (sizeof MNS_PREFIX - 1)
#define SIG_LEN 28                      /* base64 of a 20-byte SHA-1 MAC */
#define HTTP_DATE_LEN 29                /* "Tue, 02 Jan 2024 03:04:05 GMT" */
#define ECHO_MAX 64                     /* client bytes quoted in error messages */
#define SHOWN_SIZE (ECHO_MAX * 2 + 1)    /* worst case: every byte a newline */

/* ---- string to sign (ASCII helpers: auth_text.h; sorted headers: auth_headers.c) ---- */

const char *auth_header_get(const struct auth_request *r, const char *name)
{
    for (size_t i = 0; i < r->n_headers; i++) {
        const struct http_header *h = &r->headers[i];
        if (h->name != NULL && ascii_ieq(h->name, name))
            return h->value != NULL ? h->value : "";
    }
    return NULL;
}

static const char *header_or_empty(const struct auth_request *r, const char *name)
{
    const char *v = auth_header_get(r, name);
    return v != NULL ? v : "";
}

static const char *date_value(const struct auth_request *r)
{
    const char *v = auth_header_get(r, "Date");
    return v != NULL ? v : auth_header_get(r, "x-mns-date");
}

static bool pick_mns(const char *name)
{
    return ascii_ieq_prefix(name, MNS_PREFIX, MNS_PREFIX_LEN);
}

int auth_string_to_sign(const struct auth_request *r, struct smq_buf *out)
{
    const char *date = date_value(r);
    int rc;

    buf_puts(out, r->method != NULL ? r->method : "");
    buf_append(out, "\n", 1);
    buf_puts(out, header_or_empty(r, "Content-MD5"));
    buf_append(out, "\n", 1);
    buf_puts(out, header_or_empty(r, "Content-Type"));
    buf_append(out, "\n", 1);
    buf_puts(out, date != NULL ? date : "");
    buf_append(out, "\n", 1);
    rc = auth_headers_append_sorted(r, pick_mns, out);
    buf_puts(out, r->resource != NULL ? r->resource : "");
    if (rc == 0 && buf_failed(out))
        rc = SMQ_E_NOMEM;
    return rc;
}

int auth_signature(const char *secret, const char *sts, size_t sts_len, char out[29])
{
    unsigned char mac[CRYPTO_SHA1_LEN];

    if (secret == NULL || crypto_hmac_sha1(secret, strlen(secret), sts, sts_len, mac) != 0) {
        out[0] = '\0';
        return SMQ_E_INTERNAL;
    }
    crypto_base64(mac, sizeof mac, out);
    return 0;
}

/* ---- RFC 1123 dates ---- */

static const char *const day_names[7] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
static const char *const month_names[12] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                            "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

/* Index of the 3-letter name at s in names[n] (case-sensitive, RFC 9110), or -1. */
static int name_index(const char *s, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (memcmp(s, names[i], 3) == 0)
            return i;
    return -1;
}

/* Parses exactly `digits` ASCII digits; -1 if any is not a digit. */
static int parse_digits(const char *s, int digits)
{
    int v = 0;

    for (int i = 0; i < digits; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

static int days_in_month(int year, int mon0)
{
    static const int days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;

    return days[mon0] + (mon0 == 1 && leap);
}

/* Checks the fixed punctuation of "Www, DD Mmm YYYY HH:MM:SS GMT". */
static bool http_date_shape_ok(const char *s)
{
    return strlen(s) == HTTP_DATE_LEN && s[3] == ',' && s[4] == ' ' && s[7] == ' '
           && s[11] == ' ' && s[16] == ' ' && s[19] == ':' && s[22] == ':' && s[25] == ' '
           && memcmp(s + 26, "GMT", 3) == 0;
}

int auth_parse_http_date(const char *s, int64_t *epoch_s)
{
    struct tm tm = {0};
    int wday, mday, mon, year, hour, min, sec;
    time_t t;

    if (s == NULL || !http_date_shape_ok(s))
        return SMQ_E_INVALID_DATE;
    wday = name_index(s, day_names, 7);
    mday = parse_digits(s + 5, 2);
    mon = name_index(s + 8, month_names, 12);
    year = parse_digits(s + 12, 4);
    hour = parse_digits(s + 17, 2);
    min = parse_digits(s + 20, 2);
    sec = parse_digits(s + 23, 2);
    /* Years before 1970 are rejected so that timegm's -1 can only mean failure. */
    if (wday < 0 || mon < 0 || year < 1970 || mday < 1 || mday > days_in_month(year, mon)
        || hour < 0 || hour > 23 || min < 0 || min > 59 || sec < 0 || sec > 60)
        return SMQ_E_INVALID_DATE;

    tm.tm_year = year - 1900;
    tm.tm_mon = mon;
    tm.tm_mday = mday;
    tm.tm_hour = hour;
    tm.tm_min = min;
    /* Second 60 is a leap second (RFC 9110 §5.6.7).  It is added after
     * timegm so that normalising it cannot roll the weekday over at midnight. */
    tm.tm_sec = sec == 60 ? 59 : sec;
    t = timegm(&tm);
    /* The day name is redundant, but a wrong one means a broken client date
     * formatter; rejecting it is cheaper than debugging a skewed signature. */
    if (t == (time_t)-1 || tm.tm_wday != wday)
        return SMQ_E_INVALID_DATE;
    *epoch_s = (int64_t)t + (sec == 60);
    return 0;
}

/* ---- Content-MD5 ---- */

int auth_check_content_md5(const char *header_value, const void *body, size_t len)
{
    unsigned char raw[CRYPTO_MD5_LEN];
    char hex[33], cand[45];         /* base64 of 32 bytes is 44 chars */
    const char *v;
    size_t vlen;

    if (header_value == NULL)
        return SMQ_E_INVALID_DIGEST;
    v = trim_ows(header_value, &vlen);
    if (body == NULL)
        body = "";

    /* Hash once, encode each accepted form and compare, rather than decode
     * the header: nothing here is secret, so a plain comparison is fine. */
    if (crypto_md5(body, len, raw) != 0)
        return SMQ_E_INVALID_DIGEST;
    crypto_md5_to_hex(raw, false, hex);
    if (crypto_base64(hex, 32, cand) == vlen && memcmp(cand, v, vlen) == 0)
        return 0;
    crypto_md5_to_hex(raw, true, hex);
    if (crypto_base64(hex, 32, cand) == vlen && memcmp(cand, v, vlen) == 0)
        return 0;
    if (crypto_base64(raw, sizeof raw, cand) == vlen && memcmp(cand, v, vlen) == 0)
        return 0;
    return SMQ_E_INVALID_DIGEST;
}

/* ---- verification (docs/protocol.md §3.2) ---- */

/* Splits "MNS id:sig" into its parts; the regex is ^MNS ([^:]+):(.+)$. */
static int parse_authorization(const char *v, const char **id, size_t *id_len,
                               const char **sig, struct smq_errinfo *ei)
{
    const char *colon;

    if (strncmp(v, "MNS ", 4) != 0)
        return errors_set(ei, SMQ_E_INVALID_AUTHORIZATION,
                          "The Authorization header must have the form "
                          "\"MNS AccessKeyId:Signature\".");
    v += 4;
    colon = strchr(v, ':');
    if (colon == NULL || colon == v || colon[1] == '\0' || strchr(colon, '\n') != NULL)
        return errors_set(ei, SMQ_E_INVALID_AUTHORIZATION,
                          "The Authorization header must have the form "
                          "\"MNS AccessKeyId:Signature\" with both parts non-empty.");
    *id = v;
    *id_len = (size_t)(colon - v);
    *sig = colon + 1;
    return 0;
}

static int find_key(const struct auth_keyring *ring, const char *id, size_t id_len,
                    size_t *index, struct smq_errinfo *ei)
{
    char shown[SHOWN_SIZE];

    for (size_t i = 0; i < ring->n; i++) {
        const char *k = ring->keys[i].id;
        if (k != NULL && strlen(k) == id_len && memcmp(k, id, id_len) == 0) {
            *index = i;
            return 0;
        }
    }
    echo_copy(shown, sizeof shown, id, id_len < ECHO_MAX ? id_len : ECHO_MAX);
    return errors_set(ei, SMQ_E_INVALID_ACCESS_KEY_ID,
                      "The AccessKey Id you provided is not exist: \"%s\".", shown);
}

/* Date header presence, format and skew window (inclusive at max_skew_ms). */
static int check_date(const struct auth_request *r, int64_t now_epoch_ms, int64_t max_skew_ms,
                      int64_t *request_s, struct smq_errinfo *ei)
{
    const char *date = date_value(r);
    char shown[SHOWN_SIZE];
    int64_t date_s, diff_ms;

    if (date == NULL)
        return errors_set(ei, SMQ_E_MISSING_DATE,
                          "The request must carry a Date (or x-mns-date) header.");
    if (auth_parse_http_date(date, &date_s) != 0) {
        echo_copy(shown, sizeof shown, date, ECHO_MAX);
        return errors_set(ei, SMQ_E_INVALID_DATE,
                          "The Date \"%s\" is not an RFC 1123 GMT date like "
                          "\"Tue, 02 Jan 2024 03:04:05 GMT\".", shown);
    }
    /* date_s is bounded by the parser (years 1970-9999), so only a wild
     * now_epoch_ms can overflow; treat that as out of the window.  A negative
     * window is clamped to 0 so that negating it cannot overflow. */
    if (max_skew_ms < 0)
        max_skew_ms = 0;
    if (__builtin_sub_overflow(now_epoch_ms, date_s * 1000, &diff_ms)
        || diff_ms > max_skew_ms || diff_ms < -max_skew_ms)
        return errors_set(ei, SMQ_E_TIME_EXPIRED,
                          "The Date \"%s\" is more than %lld s away from the server time "
                          "(%lld ms since the epoch); check the client clock.",
                          date, (long long)(max_skew_ms / 1000), (long long)now_epoch_ms);
    *request_s = date_s;
    return 0;
}

/*
 * Recomputes the signature and compares.  The provided signature's length is
 * checked first: that leaks only the length, which is public (28).  The
 * error message quotes the string to sign (as S3 does) because a mismatch is
 * almost always a Content-Type or resource difference; it never quotes the
 * expected signature.
 */
static int check_signature(const struct auth_request *r, const char *secret, const char *sig,
                           struct smq_errinfo *ei)
{
    struct smq_buf sts;
    char expected[SIG_LEN + 1];
    char shown[sizeof ei->msg];       /* errors_set truncates the rest */
    int rc;

    buf_init(&sts);
    rc = auth_string_to_sign(r, &sts);
    if (rc != 0) {
        rc = errors_set(ei, rc, NULL);
        goto out;
    }
    rc = auth_signature(secret, sts.data, sts.len, expected);
    if (rc != 0) {
        rc = errors_set(ei, rc, NULL);
        goto out;
    }
    if (strlen(sig) != SIG_LEN || !crypto_equal(expected, sig, SIG_LEN)) {
        echo_copy(shown, sizeof shown, sts.data, sts.len);
        rc = errors_set(ei, SMQ_E_SIGNATURE_MISMATCH,
                        "The request signature we calculated does not match the signature "
                        "you provided. StringToSign: \"%s\"", shown);
    }
out:
    buf_free(&sts);
    return rc;
}

static int check_version(const struct auth_request *r, struct smq_errinfo *ei)
{
    const char *v = auth_header_get(r, "x-mns-version");
    char shown[SHOWN_SIZE];
    size_t n;
    const char *t;

    if (v == NULL)
        return errors_set(ei, SMQ_E_MISSING_VERSION,
                          "The x-mns-version header is missing; send x-mns-version: "
                          AUTH_MNS_VERSION ".");
    /* Trimmed, as it was when it was signed. */
    t = trim_ows(v, &n);
    if (n != sizeof AUTH_MNS_VERSION - 1 || memcmp(t, AUTH_MNS_VERSION, n) != 0) {
        echo_copy(shown, sizeof shown, v, ECHO_MAX);
        return errors_set(ei, SMQ_E_INVALID_VERSION,
                          "The x-mns-version \"%s\" is not supported; use " AUTH_MNS_VERSION
                          ".", shown);
    }
    return 0;
}

/* V4 (docs/protocol.md §3.6): the same key, Date and version checks as V2,
 * in the same order, around the V4 signature check. */
static int verify_v4(const struct auth_keyring *ring, const struct auth_request *r,
                     const char *authz, int64_t now_epoch_ms, int64_t max_skew_ms,
                     size_t *key_index, struct smq_errinfo *ei)
{
    struct auth_v4_credential c;
    size_t idx = 0;
    int64_t request_s = 0;
    int rc = auth_v4_parse(authz, &c, ei);

    if (rc == 0)
        rc = find_key(ring, c.id, c.id_len, &idx, ei);
    if (rc == 0)
        rc = check_date(r, now_epoch_ms, max_skew_ms, &request_s, ei);
    if (rc == 0)
        rc = auth_v4_check(r, &c, ring->keys[idx].secret, request_s, ei);
    if (rc == 0)
        rc = check_version(r, ei);
    if (rc == 0)
        *key_index = idx;
    return rc;
}

int auth_verify(const struct auth_keyring *ring, const struct auth_request *r,
                int64_t now_epoch_ms, int64_t max_skew_ms, size_t *key_index,
                struct smq_errinfo *ei)
{
    const char *authz = auth_header_get(r, "Authorization");
    const char *id = NULL, *sig = NULL;
    size_t id_len = 0, idx = 0;
    int64_t request_s = 0;
    int rc;

    if (authz == NULL)
        return errors_set(ei, SMQ_E_MISSING_AUTHORIZATION,
                          "The request must carry an Authorization header "
                          "(\"MNS AccessKeyId:Signature\").");
    if (auth_v4_claimed(authz))
        return verify_v4(ring, r, authz, now_epoch_ms, max_skew_ms, key_index, ei);
    rc = parse_authorization(authz, &id, &id_len, &sig, ei);
    if (rc == 0)
        rc = find_key(ring, id, id_len, &idx, ei);
    if (rc == 0)
        rc = check_date(r, now_epoch_ms, max_skew_ms, &request_s, ei);
    if (rc == 0)
        rc = check_signature(r, ring->keys[idx].secret, sig, ei);
    /* Version is checked only after the signature (docs/protocol.md §3.2),
     * so an unauthenticated client learns nothing beyond "bad signature". */
    if (rc == 0)
        rc = check_version(r, ei);
    if (rc == 0)
        *key_index = idx;
    return rc;
}
