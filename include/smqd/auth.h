/*
 * auth.h — MNS request authentication (signature V2, docs/protocol.md §3;
 * V4 requests are handed to auth_v4.h).
 *
 * Builds the string to sign from the request exactly as received (raw
 * request target, every x-mns-* header), computes HMAC-SHA1 with the key
 * pair's secret and compares in constant time.  Also checks the Date skew
 * window, the x-mns-version header and, when present, Content-MD5.
 */
#ifndef SMQD_AUTH_H
#define SMQD_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "smqd/buf.h"
#include "smqd/errors.h"
#include "smqd/grant.h"
#include "smqd/http_header.h"

#define AUTH_MNS_VERSION "2015-06-06"
#define AUTH_DEFAULT_MAX_SKEW_MS (15 * 60 * 1000)

/* One request as the HTTP layer saw it.  All strings NUL-terminated. */
struct auth_request {
    const char *method;                   /* "GET", "PUT", ... */
    const char *resource;                 /* raw request target: path[?query] */
    const struct http_header *headers;    /* every request header */
    size_t n_headers;
};

/* The longest access key id a configuration may hold (config.h has the rule). */
#define SMQ_KEY_ID_MAX 128

struct auth_key {
    char *id;
    char *secret;
    struct grant_set *grants;   /* what the key may do; NULL = everything (grant.h) */
};

/* The access keys smqd accepts (owned by the config). */
struct auth_keyring {
    struct auth_key *keys;
    size_t n;
};

/*
 * Where HTTP threads find the current key ring.  SIGHUP swaps the pointer
 * atomically; a ring that was ever current is kept alive until shutdown, so
 * a request that loaded the old pointer can finish with it.
 */
struct auth_keyring_slot {
    struct auth_keyring *current;
};

static inline const struct auth_keyring *auth_keyring_get(struct auth_keyring_slot *slot)
{
    return __atomic_load_n(&slot->current, __ATOMIC_ACQUIRE);
}

static inline void auth_keyring_set(struct auth_keyring_slot *slot, struct auth_keyring *ring)
{
    __atomic_store_n(&slot->current, ring, __ATOMIC_RELEASE);
}

/* Looks up a header value by case-insensitive name; NULL if absent. */
const char *auth_header_get(const struct auth_request *r, const char *name);

/* Appends the V2 string to sign for r to out (docs/protocol.md §3.1).
 * Returns 0 or SMQ_E_NOMEM. */
int auth_string_to_sign(const struct auth_request *r, struct smq_buf *out);

/* base64(HMAC-SHA1(secret, sts)) into out (NUL-terminated, 28 chars).
 * Returns 0 or SMQ_E_INTERNAL. */
int auth_signature(const char *secret, const char *sts, size_t sts_len, char out[29]);

/*
 * Verifies r per docs/protocol.md §3.2: Authorization present and
 * "MNS id:sig" (or V4, §3.6), id known, Date (or x-mns-date) present, parsable and within
 * max_skew_ms of now_epoch_ms, signature equal (constant time), then
 * x-mns-version.
 * On success returns 0 and sets *key_index to the matching key.
 * On failure returns the SMQ_E_* code and fills ei.
 */
int auth_verify(const struct auth_keyring *ring, const struct auth_request *r,
                int64_t now_epoch_ms, int64_t max_skew_ms, size_t *key_index,
                struct smq_errinfo *ei);

/* Parses an RFC 1123 date ("Tue, 02 Jan 2024 03:04:05 GMT").  0 or
 * SMQ_E_INVALID_DATE. */
int auth_parse_http_date(const char *s, int64_t *epoch_s);

/*
 * Checks a Content-MD5 header value against body.  Accepts both the SDKs'
 * form (base64 of the 32-char lowercase hex MD5) and RFC 1864 (base64 of the
 * 16 raw bytes).  Returns 0 or SMQ_E_INVALID_DIGEST.
 */
int auth_check_content_md5(const char *header_value, const void *body, size_t len);

#endif
