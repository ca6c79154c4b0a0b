/*
 * fuzz_sts.c — libFuzzer target for MNS signatures V2 (auth.h) and V4
 * (auth_v4.h): the string to sign, auth_verify, the RFC 1123 date parser
 * and the Content-MD5 check.
 *
 * The input is a request in the format of fuzz_common.h (NUL-separated
 * method, target, "Name:value" headers, then the body).  The keyring is
 * fixed ({testAccessKeyId, testAccessKeySecret}, {other-team,
 * another-secret}) and "now" is the Date of the docs/protocol.md §3.4 vectors, so the
 * seed requests carrying the SDKs' real signatures verify.  Checked:
 *   - auth_string_to_sign: starts with METHOD \n Content-MD5 \n
 *     Content-Type \n Date-or-x-mns-date \n, ends with the raw target, and
 *     in between one "x-mns-name:value\n" line per distinct x-mns-* name,
 *     lower-case, sorted; it does not depend on the header order when all
 *     names are distinct;
 *   - auth_verify on the request as sent: a defined code, ei filled, the
 *     key index set only on success, the message printable ASCII;
 *   - the same request signed correctly (any Authorization replaced):
 *     never an authorization or signature error; on success the Date is in
 *     the window and x-mns-version is 2015-06-06; one changed signature
 *     byte gives SignatureDoesNotMatch; a wild clock gives TimeExpired;
 *   - the same request signed with V4 for its own Date: never an
 *     authorization or signature error (InvalidQueryString only when a
 *     query name repeats); one changed signature digit gives
 *     SignatureDoesNotMatch;
 *   - auth_parse_http_date on every field: an accepted date formats back
 *     to the same 29 bytes (second 60 read as a leap second);
 *   - auth_check_content_md5: accepts exactly the three encodings of the
 *     body's MD5 (base64 of lower- or upper-case hex, base64 of the raw
 *     16 bytes), optionally surrounded by blanks.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fuzz_common.h"
#include "smqd/buf.h"
#include "smqd/crypto.h"
#include "smqd/errors.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

static char lower(char c)
{
    return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

static bool ieq(const char *a, const char *b)
{
    for (; *a != '\0' && *b != '\0'; a++, b++)
        if (lower(*a) != lower(*b))
            return false;
    return *a == *b;
}

static bool is_mns(const char *name)
{
    static const char prefix[] = "x-mns-";

    for (size_t i = 0; i < sizeof prefix - 1; i++)
        if (lower(name[i]) != prefix[i])
            return false;
    return true;
}

static const char *or_empty(const char *s)
{
    return s != NULL ? s : "";
}

/* True when no two headers share a name (case-insensitively). */
static bool names_distinct(const struct auth_request *a)
{
    for (size_t i = 0; i < a->n_headers; i++)
        for (size_t j = i + 1; j < a->n_headers; j++)
            if (ieq(a->headers[i].name, a->headers[j].name))
                return false;
    return true;
}

static bool has_newline_in_mns(const struct auth_request *a)
{
    for (size_t i = 0; i < a->n_headers; i++)
        if (is_mns(a->headers[i].name)
            && (strchr(a->headers[i].name, '\n') || strchr(a->headers[i].value, '\n')))
            return true;
    return false;
}

static size_t distinct_mns(const struct auth_request *a)
{
    size_t n = 0;

    for (size_t i = 0; i < a->n_headers; i++) {
        bool seen = false;
        if (!is_mns(a->headers[i].name))
            continue;
        for (size_t j = 0; j < i && !seen; j++)
            seen = ieq(a->headers[i].name, a->headers[j].name);
        n += !seen;
    }
    return n;
}

static void check_string_to_sign(struct fuzz_req *r)
{
    const struct auth_request *a = &r->auth;
    const char *date = auth_header_get(a, "Date");
    struct smq_buf sts, want;
    size_t res_len = strlen(r->resource);
    int rc;

    if (date == NULL)
        date = auth_header_get(a, "x-mns-date");
    buf_init(&sts);
    buf_init(&want);
    rc = auth_string_to_sign(a, &sts);
    FUZZ_CHECK(rc == 0 || rc == SMQ_E_NOMEM);
    if (rc != 0)
        goto out;
    buf_printf(&want, "%s\n%s\n%s\n%s\n", r->method, or_empty(auth_header_get(a, "Content-MD5")),
               or_empty(auth_header_get(a, "Content-Type")), or_empty(date));
    FUZZ_CHECK(!buf_failed(&want));
    FUZZ_CHECK(sts.len >= want.len + res_len);
    FUZZ_CHECK(memcmp(sts.data, want.data, want.len) == 0);
    FUZZ_CHECK(memcmp(sts.data + sts.len - res_len, r->resource, res_len) == 0);

    /* The canonicalized x-mns headers, when their lines can be told apart. */
    if (!has_newline_in_mns(a)) {
        const char *p = sts.data + want.len, *end = sts.data + sts.len - res_len;
        const char *prev = NULL;
        size_t prev_len = 0, lines = 0;

        while (p < end) {
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            const char *colon = memchr(p, ':', (size_t)(end - p));
            size_t name_len;

            FUZZ_CHECK(nl != NULL && colon != NULL && colon < nl);
            name_len = (size_t)(colon - p);
            FUZZ_CHECK(name_len >= 6 && memcmp(p, "x-mns-", 6) == 0);
            for (size_t i = 0; i < name_len; i++)
                FUZZ_CHECK(!(p[i] >= 'A' && p[i] <= 'Z'));
            if (prev != NULL) {       /* strictly increasing byte order */
                size_t n = prev_len < name_len ? prev_len : name_len;
                int c = memcmp(prev, p, n);
                FUZZ_CHECK(c < 0 || (c == 0 && prev_len < name_len));
            }
            prev = p;
            prev_len = name_len;
            lines++;
            p = nl + 1;
        }
        FUZZ_CHECK(lines == distinct_mns(a));
    }

    /* Header order does not matter when every name is distinct. */
    if (names_distinct(a) && a->n_headers > 1) {
        struct http_header rev[FUZZ_MAX_HEADERS + 1];
        struct auth_request ra = *a;
        struct smq_buf again;

        for (size_t i = 0; i < a->n_headers; i++)
            rev[i] = a->headers[a->n_headers - 1 - i];
        ra.headers = rev;
        buf_init(&again);
        FUZZ_CHECK(auth_string_to_sign(&ra, &again) == 0);
        FUZZ_CHECK(again.len == sts.len && memcmp(again.data, sts.data, sts.len) == 0);
        buf_free(&again);
    }
out:
    buf_free(&sts);
    buf_free(&want);
}

/* v equals want once blanks (SP, HT) around it are dropped. */
static bool trimmed_equals(const char *v, const char *want)
{
    size_t n = strlen(v), wn = strlen(want);

    while (n > 0 && (*v == ' ' || *v == '\t'))
        v++, n--;
    while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'))
        n--;
    return n == wn && memcmp(v, want, n) == 0;
}

static bool printable(const char *s)
{
    for (; *s != '\0'; s++)
        if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
            return false;
    return true;
}

static bool auth_code(int rc)
{
    return rc == 0 || (rc <= SMQ_E_MISSING_AUTHORIZATION && rc >= SMQ_E_INVALID_VERSION)
           || rc == SMQ_E_INVALID_QUERY_STRING || rc == SMQ_E_NOMEM || rc == SMQ_E_INTERNAL;
}

static int verify(const struct fuzz_req *r, int64_t now_ms, int64_t skew_ms, size_t *idx)
{
    struct smq_errinfo ei = {0, ""};
    size_t before = *idx;
    int rc = auth_verify(fuzz_keyring(), &r->auth, now_ms, skew_ms, idx, &ei);

    FUZZ_CHECK(auth_code(rc));
    FUZZ_CHECK(ei.err == rc);
    FUZZ_CHECK(printable(ei.msg));
    if (rc == 0)
        FUZZ_CHECK(*idx < fuzz_keyring()->n);
    else
        FUZZ_CHECK(*idx == before);
    return rc;
}

static bool date_error(int rc)
{
    return rc == SMQ_E_MISSING_DATE || rc == SMQ_E_INVALID_DATE || rc == SMQ_E_TIME_EXPIRED;
}

static void check_signed(struct fuzz_req *r, size_t key)
{
    const struct auth_key *k = &fuzz_keyring()->keys[key];
    size_t idx = SIZE_MAX;
    int rc;

    if (fuzz_req_sign(r, k->id, k->secret) != 0)
        return;
    rc = verify(r, FUZZ_NOW_MS, AUTH_DEFAULT_MAX_SKEW_MS, &idx);
    FUZZ_CHECK(rc != SMQ_E_MISSING_AUTHORIZATION && rc != SMQ_E_INVALID_AUTHORIZATION
               && rc != SMQ_E_INVALID_ACCESS_KEY_ID && rc != SMQ_E_SIGNATURE_MISMATCH);
    if (rc == 0) {
        const char *date = auth_header_get(&r->auth, "Date");
        const char *version = auth_header_get(&r->auth, "x-mns-version");
        int64_t date_s;

        if (date == NULL)
            date = auth_header_get(&r->auth, "x-mns-date");
        FUZZ_CHECK(idx == key);
        FUZZ_CHECK(date != NULL && auth_parse_http_date(date, &date_s) == 0);
        FUZZ_CHECK(llabs(FUZZ_NOW_MS - date_s * 1000) <= AUTH_DEFAULT_MAX_SKEW_MS);
        FUZZ_CHECK(version != NULL && trimmed_equals(version, AUTH_MNS_VERSION));
    }
    if (date_error(rc) || rc == SMQ_E_NOMEM || rc == SMQ_E_INTERNAL)
        return;

    /* The date is fine: a wild clock or window must fail cleanly, never overflow. */
    idx = SIZE_MAX;
    FUZZ_CHECK(verify(r, INT64_MAX, AUTH_DEFAULT_MAX_SKEW_MS, &idx) == SMQ_E_TIME_EXPIRED);
    FUZZ_CHECK(verify(r, INT64_MIN, AUTH_DEFAULT_MAX_SKEW_MS, &idx) == SMQ_E_TIME_EXPIRED);
    FUZZ_CHECK(verify(r, INT64_MIN, INT64_MAX, &idx) == SMQ_E_TIME_EXPIRED);
    idx = SIZE_MAX;
    (void)verify(r, FUZZ_NOW_MS, INT64_MIN, &idx);
    idx = SIZE_MAX;
    (void)verify(r, FUZZ_NOW_MS, INT64_MAX, &idx);

    /* The signature was checked: one wrong byte must be caught. */
    {
        size_t n = strlen(r->authz);
        char *last = &r->authz[n - 2];          /* before the '=' padding */
        *last = *last == 'A' ? 'B' : 'A';
        idx = SIZE_MAX;
        FUZZ_CHECK(verify(r, FUZZ_NOW_MS, AUTH_DEFAULT_MAX_SKEW_MS, &idx)
                   == SMQ_E_SIGNATURE_MISMATCH);
    }
}

/* V4 for the request's own Date: the signature and scope are right, so only
 * the date window, the version, a repeated query name or memory may fail. */
static void check_signed_v4(struct fuzz_req *r, size_t key)
{
    const struct auth_key *k = &fuzz_keyring()->keys[key];
    const char *date = auth_header_get(&r->auth, "Date");
    size_t idx = SIZE_MAX, n;
    int64_t date_s;
    int rc;

    if (date == NULL)
        date = auth_header_get(&r->auth, "x-mns-date");
    if (date == NULL || auth_parse_http_date(date, &date_s) != 0
        || fuzz_req_sign_v4(r, k->id, k->secret, date_s) != 0)
        return;
    rc = verify(r, FUZZ_NOW_MS, AUTH_DEFAULT_MAX_SKEW_MS, &idx);
    FUZZ_CHECK(rc != SMQ_E_MISSING_AUTHORIZATION && rc != SMQ_E_INVALID_AUTHORIZATION
               && rc != SMQ_E_INVALID_ACCESS_KEY_ID && rc != SMQ_E_SIGNATURE_MISMATCH);
    if (rc == 0)
        FUZZ_CHECK(idx == key);
    if (date_error(rc) || rc == SMQ_E_INVALID_QUERY_STRING || rc == SMQ_E_NOMEM
        || rc == SMQ_E_INTERNAL)
        return;
    n = strlen(r->authz);
    r->authz[n - 1] = r->authz[n - 1] == '0' ? '1' : '0';
    idx = SIZE_MAX;
    FUZZ_CHECK(verify(r, FUZZ_NOW_MS, AUTH_DEFAULT_MAX_SKEW_MS, &idx) == SMQ_E_SIGNATURE_MISMATCH);
}

/* ---- dates ---- */

static void check_date(const char *s)
{
    static const char *const days[7] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static const char *const months[12] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                           "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    int64_t t = -1;
    struct tm tm;
    time_t tt;
    char back[64];
    bool leap;

    if (auth_parse_http_date(s, &t) != 0)
        return;
    FUZZ_CHECK(strlen(s) == 29);
    FUZZ_CHECK(t >= 0 && t <= INT64_C(253402300800));      /* 1970 .. 9999-12-31T23:59:60 */
    leap = s[23] == '6' && s[24] == '0';
    tt = (time_t)(t - leap);
    FUZZ_CHECK(gmtime_r(&tt, &tm) != NULL);
    snprintf(back, sizeof back, "%s, %02d %s %04d %02d:%02d:%02d GMT", days[tm.tm_wday],
             tm.tm_mday, months[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min,
             leap ? 60 : tm.tm_sec);
    FUZZ_CHECK(strcmp(back, s) == 0);
}

/* ---- Content-MD5 ---- */

static void check_md5(const char *value, const char *body, size_t len)
{
    char hex[33], forms[3][45], padded[64];
    unsigned char raw[CRYPTO_MD5_LEN];
    bool want_ok = false;
    int rc;

    FUZZ_CHECK(crypto_md5_hex(body, len, false, hex) == 0);
    crypto_base64(hex, 32, forms[0]);
    FUZZ_CHECK(crypto_md5_hex(body, len, true, hex) == 0);
    crypto_base64(hex, 32, forms[1]);
    FUZZ_CHECK(crypto_md5(body, len, raw) == 0);
    crypto_base64(raw, sizeof raw, forms[2]);
    for (int i = 0; i < 3; i++) {
        FUZZ_CHECK(auth_check_content_md5(forms[i], body, len) == 0);
        snprintf(padded, sizeof padded, " \t%s\t ", forms[i]);
        FUZZ_CHECK(auth_check_content_md5(padded, body, len) == 0);
        want_ok = want_ok || trimmed_equals(value, forms[i]);
    }
    rc = auth_check_content_md5(value, body, len);
    FUZZ_CHECK(rc == 0 || rc == SMQ_E_INVALID_DIGEST);
    FUZZ_CHECK((rc == 0) == want_ok);
    if (len == 0)
        FUZZ_CHECK(auth_check_content_md5(value, NULL, 0) == rc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_req r;
    size_t idx = SIZE_MAX;
    const char *md5;

    if (fuzz_req_split(data, size, &r) != 0)
        return 0;
    check_string_to_sign(&r);
    (void)verify(&r, FUZZ_NOW_MS, AUTH_DEFAULT_MAX_SKEW_MS, &idx);

    check_date(r.method);
    check_date(r.resource);
    for (size_t i = 0; i < r.auth.n_headers; i++)
        check_date(r.headers[i].value);

    md5 = auth_header_get(&r.auth, "Content-MD5");
    check_md5(md5 != NULL ? md5 : r.resource, r.body, r.body_len);

    check_signed(&r, size % 2);
    check_signed_v4(&r, (size / 2) % 2);
    fuzz_req_free(&r);
    return 0;
}
