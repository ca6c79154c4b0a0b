/*
 * lg_sign.h — smqd-loadgen's request signing: MNS signature V2 as the
 * Python SDK computes it (protocol notes §3.1), HMAC-SHA1 through OpenSSL's
 * EVP_MAC with the key set once, and the RFC 1123 Date string cached per
 * second.  Stand-alone: no smqd code.
 */
#ifndef LG_SIGN_H
#define LG_SIGN_H

#include <stddef.h>
#include <time.h>

#define LG_SIG_B64_LEN 28          /* base64 of a 20-byte HMAC-SHA1 */
#define LG_DATE_LEN 29             /* "Tue, 02 Jan 2024 03:04:05 GMT" */

struct evp_mac_st;
struct evp_mac_ctx_st;

struct lg_signer {
    struct evp_mac_st *mac;
    struct evp_mac_ctx_st *ctx;    /* keyed once; re-initialised per request */
    time_t date_sec;               /* second that date[] renders */
    char date[96];                 /* LG_DATE_LEN used; room for any int */
};

/* 0 on success, -1 if OpenSSL has no HMAC-SHA1 (message on stderr). */
int lg_signer_init(struct lg_signer *s, const char *secret);
void lg_signer_free(struct lg_signer *s);

/* The Date header value for second t, formatted at most once per second. */
const char *lg_signer_date(struct lg_signer *s, time_t t);

/* Writes base64(HMAC-SHA1(secret, StringToSign)) and a NUL to out:
 *   VERB \n \n CONTENT-TYPE \n DATE \n x-mns-version:2015-06-06 \n RESOURCE
 * (no Content-MD5, like the Python SDK when it sends none; content_type ""
 * for requests without a body).  0 on success, -1 on an OpenSSL failure. */
int lg_sign(struct lg_signer *s, const char *verb, const char *content_type,
            const char *date, const char *resource, size_t resource_len,
            char out[LG_SIG_B64_LEN + 1]);

#endif
