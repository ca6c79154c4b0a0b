/*
 * crypto.c — owns every call into OpenSSL (libcrypto): HMAC-SHA1,
 * HMAC-SHA256, MD5, random bytes, constant-time compare and base64.
 */
#include "smqd/crypto.h"
#include "smqd/errors.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/*
 * Every request is signed with one of a handful of secrets, so each thread
 * keeps an HMAC context per secret, keyed once: signing then costs the two
 * SHA-1 passes and nothing else.  The one-shot HMAC() fetched the algorithm,
 * allocated contexts and derived the key pads on every call, several times
 * the cost of the two passes.  MD5 likewise reuses one fetched algorithm and one digest
 * context per thread instead of an implicit fetch per call.  The contexts are
 * per thread because OpenSSL contexts are not safe to share; they are freed
 * when the thread exits.  A new secret (SIGHUP) simply gets a context of its
 * own; the oldest of HMAC_CACHE_KEYS is dropped to make room.
 */
#define HMAC_CACHE_KEYS 4

struct hmac_slot {
    EVP_MAC_CTX *ctx;            /* keyed with key[0..key_len) */
    unsigned char *key;
    size_t key_len;
};

struct crypto_tls {
    struct hmac_slot hmac[HMAC_CACHE_KEYS];
    unsigned next_victim;
    EVP_MD_CTX *md5;
};

static pthread_once_t algs_once = PTHREAD_ONCE_INIT;
static pthread_key_t tls_key;
static bool tls_key_ok;
static EVP_MAC *hmac_alg;        /* fetched once, shared (read-only) by every thread */
static EVP_MD *md5_alg;

static void slot_clear(struct hmac_slot *s)
{
    EVP_MAC_CTX_free(s->ctx);
    if (s->key != NULL)
        OPENSSL_cleanse(s->key, s->key_len);
    free(s->key);
    memset(s, 0, sizeof *s);
}

static void tls_free(void *p)
{
    struct crypto_tls *t = p;

    for (size_t i = 0; i < HMAC_CACHE_KEYS; i++)
        slot_clear(&t->hmac[i]);
    EVP_MD_CTX_free(t->md5);
    free(t);
}

static void algs_init(void)
{
    hmac_alg = EVP_MAC_fetch(NULL, "HMAC", NULL);
    md5_alg = EVP_MD_fetch(NULL, "MD5", NULL);
    tls_key_ok = pthread_key_create(&tls_key, tls_free) == 0;
}

/* This thread's contexts, or NULL (out of memory): callers then fall back
 * to the one-shot functions. */
static struct crypto_tls *tls_get(void)
{
    struct crypto_tls *t;

    pthread_once(&algs_once, algs_init);
    if (!tls_key_ok)
        return NULL;
    t = pthread_getspecific(tls_key);
    if (t == NULL && (t = calloc(1, sizeof *t)) != NULL && pthread_setspecific(tls_key, t) != 0) {
        free(t);
        t = NULL;
    }
    return t;
}

/* The context keyed with key, keying a slot first if there is none yet. */
static EVP_MAC_CTX *hmac_ctx_for(const void *key, size_t key_len)
{
    struct crypto_tls *t = tls_get();
    struct hmac_slot *s;
    OSSL_PARAM params[2];

    if (t == NULL || hmac_alg == NULL)
        return NULL;
    for (size_t i = 0; i < HMAC_CACHE_KEYS; i++) {
        s = &t->hmac[i];
        if (s->ctx != NULL && s->key_len == key_len && memcmp(s->key, key, key_len) == 0)
            return s->ctx;
    }
    s = &t->hmac[t->next_victim++ % HMAC_CACHE_KEYS];
    slot_clear(s);
    params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA1", 0);
    params[1] = OSSL_PARAM_construct_end();
    s->key = malloc(key_len > 0 ? key_len : 1);
    s->ctx = EVP_MAC_CTX_new(hmac_alg);
    if (s->key == NULL || s->ctx == NULL
        || !EVP_MAC_init(s->ctx, key, key_len, params)) {
        slot_clear(s);
        return NULL;
    }
    memcpy(s->key, key, key_len);
    s->key_len = key_len;
    return s->ctx;
}

int crypto_hmac_sha1(const void *key, size_t key_len, const void *msg, size_t msg_len,
                     unsigned char out[CRYPTO_SHA1_LEN])
{
    EVP_MAC_CTX *ctx = hmac_ctx_for(key, key_len);
    unsigned int out_len = 0;
    size_t n = 0;

    if (ctx != NULL) {
        /* A NULL key re-initialises the context with the key it already has. */
        if (!EVP_MAC_init(ctx, NULL, 0, NULL) || !EVP_MAC_update(ctx, msg, msg_len)
            || !EVP_MAC_final(ctx, out, &n, CRYPTO_SHA1_LEN) || n != CRYPTO_SHA1_LEN)
            return SMQ_E_INTERNAL;
        return 0;
    }
    if (HMAC(EVP_sha1(), key, (int)key_len, msg, msg_len, out, &out_len) == NULL
        || out_len != CRYPTO_SHA1_LEN)
        return SMQ_E_INTERNAL;
    return 0;
}

/* One-shot: only signature V4 uses it (opt-in, five MACs a request with
 * keys derived per request), so a cached context would rarely be reused. */
int crypto_hmac_sha256(const void *key, size_t key_len, const void *msg, size_t msg_len,
                       unsigned char out[CRYPTO_SHA256_LEN])
{
    unsigned int out_len = 0;

    if (key_len > INT_MAX
        || HMAC(EVP_sha256(), key, (int)key_len, msg, msg_len, out, &out_len) == NULL
        || out_len != CRYPTO_SHA256_LEN) {
        memset(out, 0, CRYPTO_SHA256_LEN);
        return SMQ_E_INTERNAL;
    }
    return 0;
}

int crypto_md5(const void *data, size_t len, unsigned char out[CRYPTO_MD5_LEN])
{
    struct crypto_tls *t = tls_get();
    unsigned int out_len = 0;

    if (t != NULL && md5_alg != NULL && t->md5 == NULL)
        t->md5 = EVP_MD_CTX_new();
    if (t != NULL && md5_alg != NULL && t->md5 != NULL
        && EVP_DigestInit_ex2(t->md5, md5_alg, NULL) && EVP_DigestUpdate(t->md5, data, len)
        && EVP_DigestFinal_ex(t->md5, out, &out_len))
        return 0;
    /* EVP_Digest only fails on allocation failure inside OpenSSL. */
    if (EVP_Digest(data, len, out, &out_len, EVP_md5(), NULL) == 1)
        return 0;
    memset(out, 0, CRYPTO_MD5_LEN);
    return SMQ_E_INTERNAL;
}

void crypto_hex(const unsigned char *in, size_t n, bool upper, char *out)
{
    static const char lower_digits[] = "0123456789abcdef";
    static const char upper_digits[] = "0123456789ABCDEF";
    const char *digits = upper ? upper_digits : lower_digits;

    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
    out[2 * n] = '\0';
}

void crypto_md5_to_hex(const unsigned char md[CRYPTO_MD5_LEN], bool upper, char out[33])
{
    crypto_hex(md, CRYPTO_MD5_LEN, upper, out);
}

int crypto_md5_hex(const void *data, size_t len, bool upper, char out[33])
{
    unsigned char md[CRYPTO_MD5_LEN];

    out[0] = '\0';
    if (crypto_md5(data, len, md) != 0)
        return SMQ_E_INTERNAL;
    crypto_md5_to_hex(md, upper, out);
    return 0;
}

int crypto_random(void *out, size_t len)
{
    return RAND_bytes(out, (int)len) == 1 ? 0 : SMQ_E_INTERNAL;
}

bool crypto_equal(const void *a, const void *b, size_t len)
{
    return CRYPTO_memcmp(a, b, len) == 0;
}

size_t crypto_base64(const void *data, size_t len, char *out)
{
    return (size_t)EVP_EncodeBlock((unsigned char *)out, data, (int)len);
}
