/*
 * crypto.h — the OpenSSL primitives smqd needs, behind one small interface:
 * HMAC-SHA1, HMAC-SHA256, MD5, random bytes, base64, and the RSA key and
 * certificate that sign topic pushes (RSA-SHA1, docs/protocol.md §13.11).  Only crypto.c includes OpenSSL.
 */
#ifndef SMQD_CRYPTO_H
#define SMQD_CRYPTO_H

#include <stdbool.h>
#include <stddef.h>

#define CRYPTO_SHA1_LEN 20
#define CRYPTO_MD5_LEN 16
#define CRYPTO_SHA256_LEN 32

/* HMAC-SHA1(key, msg) into out[20].  Returns 0, or SMQ_E_INTERNAL. */
int crypto_hmac_sha1(const void *key, size_t key_len, const void *msg, size_t msg_len,
                     unsigned char out[CRYPTO_SHA1_LEN]);

/* HMAC-SHA256(key, msg) into out[32].  Returns 0, or SMQ_E_INTERNAL. */
int crypto_hmac_sha256(const void *key, size_t key_len, const void *msg, size_t msg_len,
                       unsigned char out[CRYPTO_SHA256_LEN]);

/* MD5(data) as 32 hex digits plus NUL; upper selects A-F over a-f.
 * Returns 0, or SMQ_E_INTERNAL (out empty) when OpenSSL cannot allocate. */
int crypto_md5_hex(const void *data, size_t len, bool upper, char out[33]);

/* The n bytes of in as 2n hex digits plus NUL into out; upper selects A-F. */
void crypto_hex(const unsigned char *in, size_t n, bool upper, char *out);

/* An MD5 already computed, as 32 hex digits plus NUL. */
void crypto_md5_to_hex(const unsigned char md[CRYPTO_MD5_LEN], bool upper, char out[33]);
/* 0, or SMQ_E_INTERNAL (out zeroed) when OpenSSL cannot allocate. */
int crypto_md5(const void *data, size_t len, unsigned char out[CRYPTO_MD5_LEN]);

/* Cryptographically strong random bytes.  Returns 0, or SMQ_E_INTERNAL. */
int crypto_random(void *out, size_t len);

/* Constant-time comparison of two equal-length buffers: true when equal. */
bool crypto_equal(const void *a, const void *b, size_t len);

/* Standard base64 with padding; out needs 4*ceil(len/3)+1 bytes.  Returns length. */
size_t crypto_base64(const void *data, size_t len, char *out);

/* ---- the push signer: an RSA private key (docs/protocol.md §13.11) ---- */

struct crypto_signer;

/* Reads an unencrypted PEM RSA private key (PKCS#8 or PKCS#1) of at least
 * 2048 bits; refuses any other key type (EC, RSA-PSS...), a shorter key, an
 * encrypted key and anything that is not PEM.  0 and *out, or
 * SMQ_E_INTERNAL (*out NULL) with a reason in err. */
int crypto_signer_load(const char *key_path, struct crypto_signer **out, char *err,
                       size_t err_size);
/* The signature of §13.11: base64(RSASSA-PKCS1-v1_5(SHA-1(data))) with
 * padding and no prefix, NUL-terminated, into out.  out_size must be at
 * least 4 * ceil(key bytes / 3) + 1 (345 for 2048 bits; 700 holds 4096).
 * 0, or SMQ_E_INTERNAL (out_size too small, or OpenSSL failed; out then
 * holds "" when out_size > 0).
 * Threads: any number of callers at once on one k (the push pool's signer
 * threads): each call signs with an OpenSSL context of its own and writes
 * nothing in k.  Loading and freeing k happen before the first caller
 * starts and after the last one is joined. */
int crypto_signer_sign(const struct crypto_signer *k, const void *data, size_t len, char *out,
                       size_t out_size);
/* NULL is a no-op. */
void crypto_signer_free(struct crypto_signer *k);

/* ---- in memory: the certificate (and a key kept in the store,
 * docs/operations.md, "Push signing key") as PEM text ---- */

/* crypto_signer_load from the len bytes of PEM at pem; what names them in
 * err (e.g. "in the database").  The same refusals. */
int crypto_signer_load_pem(const char *pem, size_t len, const char *what,
                           struct crypto_signer **out, char *err, size_t err_size);
/* Whether the len bytes of PEM at pem are a certificate holding k's public
 * key and valid now; what names it in err.  0, or SMQ_E_INTERNAL with a
 * reason in err (not a certificate, another key, not valid yet, expired). */
int crypto_signer_check_cert_pem(const struct crypto_signer *k, const char *pem, size_t len,
                                 const char *what, char *err, size_t err_size);
/* Reads the PEM certificate at path and checks it as
 * crypto_signer_check_cert_pem does (a missing file names errno's reason);
 * on success *cert_pem is that certificate re-encoded as PEM (malloc'ed,
 * NUL-terminated: the certificate checked, without whatever else the file
 * held).  0, or SMQ_E_INTERNAL with a reason in err. */
int crypto_signer_cert_file(const struct crypto_signer *k, const char *path, char **cert_pem,
                            char *err, size_t err_size);
/* Makes a 2048-bit RSA key and a self-signed X.509 v3 certificate for it
 * (subject and issuer CN = cn, valid from now for ten years, signed with
 * SHA-256) as two malloc'ed, NUL-terminated PEM strings: *key_pem (PKCS#8;
 * free it with crypto_pem_free) and *cert_pem (free()).  0, or
 * SMQ_E_INTERNAL (both NULL) with a reason in err. */
int crypto_signer_generate_pem(const char *cn, char **key_pem, char **cert_pem, char *err,
                               size_t err_size);
/* Overwrites len bytes at p (a private key's text) so that freeing them
 * leaves no copy; NULL or 0 is a no-op. */
void crypto_secret_wipe(void *p, size_t len);
/* Overwrites a NUL-terminated PEM string holding a private key, then frees
 * it.  NULL is a no-op. */
void crypto_pem_free(char *pem);

#endif
