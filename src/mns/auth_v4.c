/*
 * auth_v4.c — owns signature V4 (docs/protocol.md §3.6): parsing the
 * "MNS4-HMAC-SHA256 Credential=…,Signature=…" header, the canonical request
 * (Java's URL encoding of path and query, the signed header set), the
 * string to sign, the HMAC-SHA256 key derivation and the comparison.
 * Key lookup, the Date window and x-mns-version are auth.c's, shared with V2.
 */
#define _DEFAULT_SOURCE   /* gmtime_r() under -std=c11 as well as gnu11 */

#include "auth_headers.h"
#include "auth_text.h"
#include "auth_v4.h"
#include "smqd/crypto.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ALG_LEN (sizeof AUTH_V4_ALGORITHM - 1)
#define SCOPE_PARTS 5                   /* id / date / region / service / terminator */

/* ---- the Authorization header ---- */

bool auth_v4_claimed(const char *authorization)
{
    return authorization != NULL && strncmp(authorization, AUTH_V4_ALGORITHM, ALG_LEN) == 0;
}

static int bad_header(struct smq_errinfo *ei, const char *why)
{
    return errors_set(ei, SMQ_E_INVALID_AUTHORIZATION,
                      "Malformed V4 Authorization header (%s); expected \"" AUTH_V4_ALGORITHM
                      " Credential=AccessKeyId/yyyyMMdd/region/" AUTH_V4_SERVICE "/"
                      AUTH_V4_TERMINATOR ",Signature=hex\".", why);
}

static bool span_is(const char *s, size_t n, const char *want)
{
    return strlen(want) == n && memcmp(s, want, n) == 0;
}

/* A region is any run of visible ASCII but "/" and "," (which delimit it). */
static bool region_ok(const char *s, size_t n)
{
    if (n == 0 || n > AUTH_V4_REGION_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] <= 0x20 || s[i] >= 0x7f || s[i] == '/' || s[i] == ',')
            return false;
    return true;
}

/* Splits cred[0..len) on "/" into exactly SCOPE_PARTS non-empty parts. */
static int split_scope(const char *cred, size_t len, const char *part[SCOPE_PARTS],
                       size_t part_len[SCOPE_PARTS], struct smq_errinfo *ei)
{
    size_t n = 0, start = 0;

    for (size_t i = 0; i <= len; i++) {
        if (i < len && cred[i] != '/')
            continue;
        if (n == SCOPE_PARTS)
            return bad_header(ei, "Credential has more than five \"/\"-separated parts");
        part[n] = cred + start;
        part_len[n] = i - start;
        if (part_len[n] == 0)
            return bad_header(ei, "Credential has an empty part");
        n++;
        start = i + 1;
    }
    if (n != SCOPE_PARTS)
        return bad_header(ei, "Credential has fewer than five \"/\"-separated parts");
    return 0;
}

static int parse_scope(const char *cred, size_t len, struct auth_v4_credential *c,
                       struct smq_errinfo *ei)
{
    const char *part[SCOPE_PARTS];
    size_t plen[SCOPE_PARTS];
    int rc = split_scope(cred, len, part, plen, ei);

    if (rc != 0)
        return rc;
    if (plen[1] != 8 || strspn(part[1], "0123456789") < 8)
        return bad_header(ei, "the Credential date is not yyyyMMdd");
    if (!region_ok(part[2], plen[2]))
        return bad_header(ei, "the Credential region is empty, too long or not visible ASCII");
    if (!span_is(part[3], plen[3], AUTH_V4_SERVICE))
        return bad_header(ei, "the Credential service is not \"" AUTH_V4_SERVICE "\"");
    if (!span_is(part[4], plen[4], AUTH_V4_TERMINATOR))
        return bad_header(ei, "the Credential does not end in \"" AUTH_V4_TERMINATOR "\"");
    c->id = part[0];
    c->id_len = plen[0];
    memcpy(c->date, part[1], 8);
    c->date[8] = '\0';
    memcpy(c->region, part[2], plen[2]);
    c->region[plen[2]] = '\0';
    return 0;
}

int auth_v4_parse(const char *v, struct auth_v4_credential *c, struct smq_errinfo *ei)
{
    const char *cred, *comma;

    memset(c, 0, sizeof *c);
    if (!auth_v4_claimed(v) || v[ALG_LEN] != ' ')
        return bad_header(ei, "no space after the algorithm name");
    cred = v + ALG_LEN + 1;
    if (strncmp(cred, "Credential=", 11) != 0)
        return bad_header(ei, "no Credential=");
    cred += 11;
    comma = strchr(cred, ',');
    if (comma == NULL)
        return bad_header(ei, "no \",Signature=\"");
    if (parse_scope(cred, (size_t)(comma - cred), c, ei) != 0)
        return SMQ_E_INVALID_AUTHORIZATION;
    comma++;
    while (*comma == ' ')             /* "…, Signature=" as some clients write it */
        comma++;
    if (strncmp(comma, "Signature=", 10) != 0)
        return bad_header(ei, "no Signature= after the Credential");
    c->sig = comma + 10;
    c->sig_len = strlen(c->sig);
    if (c->sig_len == 0 || strchr(c->sig, ',') != NULL)
        return bad_header(ei, "the Signature is empty or followed by other fields");
    return 0;
}

/* ---- canonical request ---- */

/*
 * Java's URLEncoder as the SDK adjusts it: A-Z a-z 0-9 - _ . ~ stay, "/"
 * stays in the path, every other byte becomes %XX (upper-case hex).  The
 * SDK encodes the very text it puts on the request line, so the server
 * encodes the raw bytes it received, without decoding them first.
 */
static void append_urlenc(struct smq_buf *out, const char *s, size_t n, bool keep_slash,
                          bool fold_case)
{
    static const char hex[] = "0123456789ABCDEF";

    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)(fold_case ? ascii_lower(s[i]) : s[i]);
        bool plain = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z')
                     || (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' || ch == '.'
                     || ch == '~' || (keep_slash && ch == '/');
        if (plain) {
            buf_append(out, (const char *)&ch, 1);
        } else {
            char esc[3] = {'%', hex[ch >> 4], hex[ch & 15]};
            buf_append(out, esc, 3);
        }
    }
}

/* Java's String.trim(): drops bytes <= 0x20 at both ends. */
static const char *java_trim(const char *s, size_t *n)
{
    while (*n > 0 && (unsigned char)s[0] <= 0x20) {
        s++;
        (*n)--;
    }
    while (*n > 0 && (unsigned char)s[*n - 1] <= 0x20)
        (*n)--;
    return s;
}

/* One query parameter: key and value are offsets of NUL-terminated,
 * already encoded strings in a scratch buffer while it grows, pointers
 * into it (k, v) once it is complete. */
struct qparam {
    size_t key, value;
    const char *k, *v;
};

/* By encoded name; equal names are refused, so their order does not matter. */
static int qparam_cmp(const void *pa, const void *pb)
{
    const struct qparam *a = pa, *b = pb;

    return strcmp(a->k, b->k);
}

/* Encodes one "name[=value]" pair into scratch: name lower-cased, both
 * trimmed; a pair without "=" (or starting with it) is all name. */
static void encode_pair(struct smq_buf *scratch, const char *p, size_t n, struct qparam *q)
{
    const char *eq = memchr(p, '=', n);
    size_t kn = (eq != NULL && eq > p) ? (size_t)(eq - p) : n;
    const char *v = kn < n ? p + kn + 1 : p + n;
    size_t vn = kn < n ? n - kn - 1 : 0;
    const char *k = java_trim(p, &kn);   /* trimming before folding: same bytes either way */

    q->key = scratch->len;
    append_urlenc(scratch, k, kn, false, true);
    buf_append(scratch, "", 1);
    v = java_trim(v, &vn);
    q->value = scratch->len;
    append_urlenc(scratch, v, vn, false, false);
    buf_append(scratch, "", 1);
}

/* Splits the raw query like the SDK (String.split("&"): trailing empty
 * pairs dropped) into q[]; returns how many. */
static size_t split_query(const char *query, struct smq_buf *scratch, struct qparam *q)
{
    size_t n = 0, kept = 0;
    const char *p = query;

    for (;;) {
        const char *amp = strchr(p, '&');
        size_t len = amp != NULL ? (size_t)(amp - p) : strlen(p);
        encode_pair(scratch, p, len, &q[n]);
        n++;
        if (len > 0)
            kept = n;
        if (amp == NULL)
            break;
        p = amp + 1;
    }
    return kept;
}

/* Sorted by encoded name, "name" or "name=value", joined by "&".  A name
 * given twice (in any case) is refused: the SDK's map would sign only the
 * last value while the router acts on the first, so a captured request
 * could be replayed with a parameter of the attacker's choosing in front. */
static int append_query(struct smq_buf *out, const char *query)
{
    struct smq_buf scratch;
    struct qparam *q;
    size_t n = 1, first = 0;
    int rc = 0;

    for (const char *s = query; *s != '\0'; s++)
        n += *s == '&';
    q = calloc(n, sizeof *q);
    if (q == NULL)
        return SMQ_E_NOMEM;
    buf_init(&scratch);
    n = split_query(query, &scratch, q);
    if (!buf_failed(&scratch) && n > 0) {
        for (size_t i = 0; i < n; i++) {
            q[i].k = scratch.data + q[i].key;
            q[i].v = scratch.data + q[i].value;
        }
        qsort(q, n, sizeof *q, qparam_cmp);
        for (size_t i = 0; i < n && rc == 0; i++) {
            if (i + 1 < n && strcmp(q[i].k, q[i + 1].k) == 0) {
                rc = SMQ_E_INVALID_QUERY_STRING;
                break;
            }
            if (first++ > 0)
                buf_append(out, "&", 1);
            buf_puts(out, q[i].k);
            if (q[i].v[0] != '\0') {
                buf_append(out, "=", 1);
                buf_puts(out, q[i].v);
            }
        }
    }
    if (buf_failed(&scratch))
        rc = SMQ_E_NOMEM;
    buf_free(&scratch);
    free(q);
    return rc;
}

/* The signed headers: Content-Type, Content-MD5 and every x-mns-*. */
static bool pick_v4(const char *name)
{
    return ascii_ieq_prefix(name, "x-mns-", 6) || ascii_ieq(name, "content-type")
           || ascii_ieq(name, "content-md5");
}

int auth_v4_canonical_request(const struct auth_request *r, struct smq_buf *out)
{
    const char *res = r->resource != NULL ? r->resource : "";
    const char *q = strchr(res, '?');
    size_t path_len = q != NULL ? (size_t)(q - res) : strlen(res);
    int rc;

    buf_puts(out, r->method != NULL ? r->method : "");
    buf_append(out, "\n", 1);
    if (path_len == 0 || res[0] != '/')
        buf_append(out, "/", 1);      /* the SDK makes the path start with "/" */
    append_urlenc(out, res, path_len, true, false);
    buf_append(out, "\n", 1);
    rc = append_query(out, q != NULL ? q + 1 : "");
    buf_append(out, "\n", 1);
    if (rc == 0)
        rc = auth_headers_append_sorted(r, pick_v4, out);
    buf_append(out, "\n", 1);
    if (rc == 0 && buf_failed(out))
        rc = SMQ_E_NOMEM;
    return rc;
}

/* ---- string to sign, key, signature ---- */

/* yyyyMMdd, or yyyyMMdd'T'HHmmss'Z' when with_time, in UTC. */
static int format_time(int64_t epoch_s, bool with_time, char out[32])
{
    time_t t = (time_t)epoch_s;
    struct tm tm;
    size_t n;

    if (gmtime_r(&t, &tm) == NULL)
        return SMQ_E_INVALID_DATE;
    n = with_time ? strftime(out, 32, "%Y%m%dT%H%M%SZ", &tm) : strftime(out, 32, "%Y%m%d", &tm);
    return n == 0 ? SMQ_E_INVALID_DATE : 0;
}

int auth_v4_string_to_sign(const struct auth_request *r, int64_t request_s,
                           const char *region, struct smq_buf *out)
{
    char stamp[32], day[32];
    int rc = format_time(request_s, true, stamp);

    if (rc == 0)
        rc = format_time(request_s, false, day);
    if (rc != 0)
        return rc;
    buf_printf(out, AUTH_V4_ALGORITHM "\n%s\n%s/%s/" AUTH_V4_SERVICE "/" AUTH_V4_TERMINATOR
               "\n", stamp, day, region);
    return auth_v4_canonical_request(r, out);
}

int auth_v4_signature(const char *secret, const char *date, const char *region,
                      const char *sts, size_t sts_len, char out[AUTH_V4_SIG_HEX_LEN + 1])
{
    const char *steps[3] = {region, AUTH_V4_SERVICE, AUTH_V4_TERMINATOR};
    unsigned char k[CRYPTO_SHA256_LEN], mac[CRYPTO_SHA256_LEN];
    struct smq_buf seed;
    int rc;

    out[0] = '\0';
    if (secret == NULL)
        return SMQ_E_INTERNAL;
    buf_init(&seed);
    buf_puts(&seed, AUTH_V4_KEY_PREFIX);
    buf_puts(&seed, secret);
    rc = buf_failed(&seed) ? SMQ_E_INTERNAL
                           : crypto_hmac_sha256(seed.data, seed.len, date, strlen(date), k);
    buf_free(&seed);
    for (size_t i = 0; rc == 0 && i < 3; i++)
        rc = crypto_hmac_sha256(k, sizeof k, steps[i], strlen(steps[i]), k);
    if (rc == 0)
        rc = crypto_hmac_sha256(k, sizeof k, sts, sts_len, mac);
    memset(k, 0, sizeof k);
    if (rc != 0)
        return SMQ_E_INTERNAL;
    crypto_hex(mac, sizeof mac, false, out);
    return 0;
}

static int mismatch(struct smq_errinfo *ei, const struct smq_buf *sts)
{
    char shown[sizeof ei->msg];

    echo_copy(shown, sizeof shown, sts->data, sts->len);
    return errors_set(ei, SMQ_E_SIGNATURE_MISMATCH,
                      "The request signature we calculated does not match the signature "
                      "you provided. StringToSign: \"%s\"", shown);
}

/* The scope's date must be the day of the request time: a signature made
 * for another day's key must not verify (that is V4's point). */
static int check_scope_date(const struct auth_v4_credential *c, int64_t request_s,
                            struct smq_errinfo *ei)
{
    char day[32];

    if (format_time(request_s, false, day) != 0 || strcmp(day, c->date) != 0)
        return errors_set(ei, SMQ_E_SIGNATURE_MISMATCH,
                          "The Credential date %s is not the day of the request's Date "
                          "header (%s).", c->date, day);
    return 0;
}

int auth_v4_check(const struct auth_request *r, const struct auth_v4_credential *c,
                  const char *secret, int64_t request_s, struct smq_errinfo *ei)
{
    struct smq_buf sts;
    char expected[AUTH_V4_SIG_HEX_LEN + 1];
    int rc = check_scope_date(c, request_s, ei);

    if (rc != 0)
        return rc;
    buf_init(&sts);
    rc = auth_v4_string_to_sign(r, request_s, c->region, &sts);
    if (rc == 0)
        rc = auth_v4_signature(secret, c->date, c->region, sts.data, sts.len, expected);
    if (rc == SMQ_E_INVALID_QUERY_STRING)
        rc = errors_set(ei, rc, "A query parameter is given more than once (names compare "
                        "without case); a V4 signature covers one value per name.");
    else if (rc != 0)
        rc = errors_set(ei, rc, NULL);
    else if (c->sig_len != AUTH_V4_SIG_HEX_LEN
             || !crypto_equal(expected, c->sig, AUTH_V4_SIG_HEX_LEN))
        rc = mismatch(ei, &sts);
    buf_free(&sts);
    return rc;
}

