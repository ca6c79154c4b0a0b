/*
 * auth_v4.h — MNS signature V4 ("MNS4-HMAC-SHA256", docs/protocol.md §3.6),
 * the opt-in scheme of the Java SDK 2.0.0.
 *
 * Parses the V4 Authorization header, builds the canonical request and the
 * string to sign from the request as received, derives the signing key
 * (HMAC-SHA256 chain over date, region, "mns", "aliyun_v4_request") and
 * compares signatures in constant time.  auth_verify (auth.h) dispatches
 * here; key lookup, the Date window and x-mns-version stay shared with V2.
 */
#ifndef SMQD_AUTH_V4_H
#define SMQD_AUTH_V4_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "smqd/auth.h"
#include "smqd/buf.h"
#include "smqd/errors.h"

#define AUTH_V4_ALGORITHM "MNS4-HMAC-SHA256"
#define AUTH_V4_SERVICE "mns"
#define AUTH_V4_TERMINATOR "aliyun_v4_request"
#define AUTH_V4_KEY_PREFIX "aliyun_v4"
#define AUTH_V4_SIG_HEX_LEN 64            /* lower-case hex of a SHA-256 MAC */
#define AUTH_V4_REGION_MAX 64             /* longest region accepted in Credential */

/* The parts of "MNS4-HMAC-SHA256 Credential=AK/DATE/REGION/mns/aliyun_v4_request,
 * Signature=HEX".  id and sig point into the header value. */
struct auth_v4_credential {
    const char *id;
    size_t id_len;
    char date[9];                         /* yyyyMMdd, NUL-terminated */
    char region[AUTH_V4_REGION_MAX + 1];
    const char *sig;
    size_t sig_len;
};

/* True when the Authorization value claims V4 (starts with the algorithm name). */
bool auth_v4_claimed(const char *authorization);

/* Splits a V4 Authorization value.  0, or SMQ_E_INVALID_AUTHORIZATION with
 * ei saying which part is wrong.  The signature's format is not checked here
 * (a malformed one is a signature mismatch, as in V2). */
int auth_v4_parse(const char *authorization, struct auth_v4_credential *c,
                  struct smq_errinfo *ei);

/* Appends the canonical request for r.  0, SMQ_E_NOMEM, or
 * SMQ_E_INVALID_QUERY_STRING when a query name occurs twice (in any case):
 * the SDK would sign one value and the router act on another. */
int auth_v4_canonical_request(const struct auth_request *r, struct smq_buf *out);

/* Appends the string to sign: algorithm, the request time request_s as
 * yyyyMMdd'T'HHmmss'Z', the scope date/region/mns/aliyun_v4_request, then the
 * canonical request.  0, SMQ_E_NOMEM, SMQ_E_INVALID_DATE or
 * SMQ_E_INVALID_QUERY_STRING (as above). */
int auth_v4_string_to_sign(const struct auth_request *r, int64_t request_s,
                           const char *region, struct smq_buf *out);

/* Lower-case hex HMAC-SHA256 of sts under the key derived from secret,
 * date (yyyyMMdd) and region.  0 or SMQ_E_INTERNAL. */
int auth_v4_signature(const char *secret, const char *date, const char *region,
                      const char *sts, size_t sts_len, char out[AUTH_V4_SIG_HEX_LEN + 1]);

/* Checks c's scope date against the request time request_s, then the
 * signature.  0, or SMQ_E_SIGNATURE_MISMATCH (ei quotes the string to sign),
 * SMQ_E_INVALID_QUERY_STRING, SMQ_E_NOMEM, SMQ_E_INTERNAL. */
int auth_v4_check(const struct auth_request *r, const struct auth_v4_credential *c,
                  const char *secret, int64_t request_s, struct smq_errinfo *ei);

#endif
