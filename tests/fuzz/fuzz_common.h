/*
 * fuzz_common.h — what the libFuzzer targets share: the fixed keys and clock
 * every target uses, an invariant check that aborts (so libFuzzer records the
 * input as a crash), and the byte format that fuzz_sts and fuzz_request turn
 * into an HTTP request.
 *
 * Request format (fuzz_req_split): fields separated by NUL bytes,
 *
 *     METHOD \0 TARGET \0 Name:value \0 Name:value ... \0 \0 BODY
 *
 * A header field is split at its first ':' and leading blanks of the value
 * are dropped (as libmicrohttpd does); a field without ':' is a header with
 * an empty value.  An empty field ends the headers and everything after it
 * is the body, NUL bytes included.  NUL is the separator because no header,
 * method or target can contain one (they are C strings everywhere in smqd),
 * so the split loses nothing; after FUZZ_MAX_HEADERS headers the rest of the
 * input is the body.
 */
#ifndef SMQD_FUZZ_COMMON_H
#define SMQD_FUZZ_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "smqd/auth.h"
#include "smqd/handle.h"

/* libFuzzer's entry points (C linkage; declared for -Wmissing-prototypes). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* The fixed world of every target: the §3.4 test key pair plus a second
 * pair (so key lookup walks the ring), "now" = the §3.4 Date. */
#define FUZZ_AK "testAccessKeyId"
#define FUZZ_SK "testAccessKeySecret"
#define FUZZ_AK2 "other-team"
#define FUZZ_SK2 "another-secret"
#define FUZZ_DATE "Tue, 02 Jan 2024 03:04:05 GMT"
#define FUZZ_NOW_MS INT64_C(1704164645000)

struct auth_keyring *fuzz_keyring(void);
/* Handle keys of tests/unit/test_api.c: secret[i] = i*13+1, id prefix
 * 0909FF0D9C3A630C.  tests/fuzz/make_corpus.sh signs seed handles with them. */
const struct handle_keys *fuzz_handle_keys(void);

/* Aborts with file:line and the failed expression when cond is false. */
#define FUZZ_CHECK(cond) \
    ((cond) ? (void)0 : fuzz_fail(__FILE__, __LINE__, #cond))
void fuzz_fail(const char *file, int line, const char *expr) __attribute__((noreturn));

#define FUZZ_MAX_HEADERS 16

struct fuzz_req {
    char *buf;                          /* copy of the input plus a NUL */
    const char *method;
    const char *resource;
    struct http_header headers[FUZZ_MAX_HEADERS + 1];   /* +1: fuzz_req_sign */
    const char *body;                   /* inside buf; may contain NULs */
    size_t body_len;
    struct auth_request auth;           /* method, resource, headers */
    char authz[224];                    /* the Authorization value of fuzz_req_sign(_v4) */
};

/* Splits data into r (see the format above).  Returns 0 or -1 (no memory). */
int fuzz_req_split(const uint8_t *data, size_t size, struct fuzz_req *r);
void fuzz_req_free(struct fuzz_req *r);

/*
 * Replaces every Authorization header of r by one that signs r correctly
 * with (key_id, secret), the way a client would: string to sign over the
 * remaining headers, HMAC-SHA1, base64.  Returns 0, or the SMQ_E_* code of
 * auth_string_to_sign / auth_signature.
 */
int fuzz_req_sign(struct fuzz_req *r, const char *key_id, const char *secret);

/*
 * The same with signature V4 (auth_v4.h) for region "cn-hangzhou", the scope
 * day and STAMP taken from request_s (the request's Date).  Returns 0, or the
 * SMQ_E_* code of auth_v4_string_to_sign / auth_v4_signature.
 */
int fuzz_req_sign_v4(struct fuzz_req *r, const char *key_id, const char *secret,
                     int64_t request_s);

/* True when doc is a well-formed document for smqd's parser whose root
 * element has the local name root (xml_root_name). */
bool fuzz_xml_root_is(const char *doc, size_t len, const char *root);

#endif
