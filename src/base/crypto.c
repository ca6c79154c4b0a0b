/*
 * crypto.c — owns every call into OpenSSL (libcrypto): HMAC-SHA1,
 * HMAC-SHA256, MD5, random bytes, constant-time compare, base64, and the
 * push signer (RSA key, self-signed certificate, RSA-SHA1 signatures of
 * docs/protocol.md §13.11).
 */
#include "smqd/crypto.h"
#include "smqd/errors.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/err.h>
#include <openssl/params.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
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

/* ---- the push signer (docs/protocol.md §13.11) ---- */

#define SIGNER_MIN_BITS 2048
#define SIGNER_GEN_BITS 2048
#define SIGNER_CERT_DAYS 3650

struct crypto_signer {
    EVP_PKEY *pkey;              /* an RSA key of at least SIGNER_MIN_BITS */
    size_t sig_len;              /* bytes of one signature: the modulus size */
};

/* Writes "what: reason" into err, the reason being OpenSSL's latest error
 * when there is one, and empties OpenSSL's error queue so that a later
 * failure does not report this one.  Returns SMQ_E_INTERNAL. */
__attribute__((format(printf, 3, 4)))
static int signer_fail(char *err, size_t err_size, const char *fmt, ...)
{
    char what[512], reason[256] = "";
    unsigned long e = ERR_peek_last_error();
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (e != 0)
        ERR_error_string_n(e, reason, sizeof reason);
    ERR_clear_error();
    if (err != NULL && err_size > 0)
        snprintf(err, err_size, "%s%s%s", what, reason[0] != '\0' ? ": " : "", reason);
    return SMQ_E_INTERNAL;
}

/* The PEM readers' passphrase callback: an encrypted key is refused rather
 * than prompted for on a terminal (smqd runs unattended). */
static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
    (void)buf;
    (void)size;
    (void)rwflag;
    (void)u;
    return -1;
}

/* Takes pkey (freed on failure) into a signer if it is an RSA key fit for
 * §13.11; what names where it came from in err. */
static int signer_take(EVP_PKEY *pkey, const char *what, struct crypto_signer **out, char *err,
                       size_t err_size)
{
    struct crypto_signer *k = NULL;
    int bits, rc = SMQ_E_INTERNAL;

    if (pkey == NULL) {
        rc = signer_fail(err, err_size, "signing key %s: not an unencrypted PEM private key",
                         what);
        goto out;
    }
    /* §13.11 signs with RSASSA-PKCS1-v1_5: only a plain RSA key can
     * (an RSA-PSS key is restricted to PSS padding). */
    if (!EVP_PKEY_is_a(pkey, "RSA")) {
        const char *type = EVP_PKEY_get0_type_name(pkey);

        rc = signer_fail(err, err_size, "signing key %s: key type %s, not RSA (§13.11)", what,
                         type != NULL ? type : "unknown");
        goto out;
    }
    bits = EVP_PKEY_get_bits(pkey);
    if (bits < SIGNER_MIN_BITS) {
        rc = signer_fail(err, err_size, "signing key %s: RSA of %d bits, at least %d required",
                         what, bits, SIGNER_MIN_BITS);
        goto out;
    }
    k = calloc(1, sizeof *k);
    if (k == NULL || EVP_PKEY_get_size(pkey) <= 0) {
        rc = signer_fail(err, err_size, "signing key %s: out of memory", what);
        goto out;
    }
    k->sig_len = (size_t)EVP_PKEY_get_size(pkey);
    k->pkey = pkey;
    pkey = NULL;
    *out = k;
    k = NULL;
    rc = 0;
out:
    free(k);
    EVP_PKEY_free(pkey);
    return rc;
}

/* Opens a PEM file for reading, or says why not in err ("<what> <path>:
 * <errno's reason>"); OpenSSL's error queue is cleared for the read. */
static FILE *open_pem(const char *what, const char *path, char *err, size_t err_size)
{
    FILE *f;

    ERR_clear_error();
    f = fopen(path, "r");
    if (f == NULL)
        snprintf(err, err_size, "%s %s: %s", what, path, strerror(errno));
    return f;
}

int crypto_signer_load(const char *key_path, struct crypto_signer **out, char *err,
                       size_t err_size)
{
    EVP_PKEY *pkey;
    FILE *f;

    *out = NULL;
    if ((f = open_pem("signing key", key_path, err, err_size)) == NULL)
        return SMQ_E_INTERNAL;
    pkey = PEM_read_PrivateKey(f, NULL, no_passphrase, NULL);
    fclose(f);
    return signer_take(pkey, key_path, out, err, err_size);
}

int crypto_signer_load_pem(const char *pem, size_t len, const char *what,
                           struct crypto_signer **out, char *err, size_t err_size)
{
    BIO *b;
    EVP_PKEY *pkey = NULL;

    *out = NULL;
    ERR_clear_error();
    b = len <= INT_MAX ? BIO_new_mem_buf(pem, (int)len) : NULL;
    if (b != NULL)
        pkey = PEM_read_bio_PrivateKey(b, NULL, no_passphrase, NULL);
    BIO_free(b);
    return signer_take(pkey, what, out, err, err_size);
}

void crypto_signer_free(struct crypto_signer *k)
{
    if (k == NULL)
        return;
    EVP_PKEY_free(k->pkey);   /* clears the private key's numbers */
    free(k);
}

int crypto_signer_sign(const struct crypto_signer *k, const void *data, size_t len, char *out,
                       size_t out_size)
{
    EVP_MD_CTX *ctx = NULL;
    unsigned char *sig = NULL;
    size_t sig_len = k->sig_len;
    int rc = SMQ_E_INTERNAL;

    if (out_size > 0)
        out[0] = '\0';
    if (out_size < 4 * ((k->sig_len + 2) / 3) + 1 || k->sig_len > INT_MAX)
        return SMQ_E_INTERNAL;
    sig = malloc(k->sig_len);
    ctx = EVP_MD_CTX_new();
    /* RSA's default padding is PKCS#1 v1.5, what §13.11 names.  A context
     * of its own per call: nothing in k is written. */
    if (sig == NULL || ctx == NULL
        || EVP_DigestSignInit_ex(ctx, NULL, "SHA1", NULL, NULL, k->pkey, NULL) != 1
        || EVP_DigestSign(ctx, sig, &sig_len, data, len) != 1 || sig_len != k->sig_len) {
        ERR_clear_error();
        goto out;
    }
    crypto_base64(sig, sig_len, out);
    rc = 0;
out:
    EVP_MD_CTX_free(ctx);
    free(sig);
    return rc;
}

/* Whether cert (NULL: unreadable) holds k's public key and is valid now;
 * what names it in err. */
static int cert_check(const struct crypto_signer *k, X509 *cert, const char *what, char *err,
                      size_t err_size)
{
    EVP_PKEY *pub;

    if (cert == NULL)
        return signer_fail(err, err_size, "signing certificate %s: not a PEM X.509 certificate",
                           what);
    pub = X509_get0_pubkey(cert);
    if (pub == NULL || EVP_PKEY_eq(pub, k->pkey) != 1)
        return signer_fail(err, err_size,
                           "signing certificate %s: does not hold the signing key's public key",
                           what);
    /* A verifier refuses a certificate outside its validity, so every
     * push signed under it would be rejected (§13.11). */
    if (X509_cmp_current_time(X509_get0_notBefore(cert)) >= 0)
        return signer_fail(err, err_size, "signing certificate %s: not valid yet", what);
    if (X509_cmp_current_time(X509_get0_notAfter(cert)) <= 0)
        return signer_fail(err, err_size, "signing certificate %s: expired", what);
    return 0;
}

int crypto_signer_check_cert_pem(const struct crypto_signer *k, const char *pem, size_t len,
                                 const char *what, char *err, size_t err_size)
{
    BIO *b;
    X509 *cert = NULL;
    int rc;

    ERR_clear_error();
    b = len <= INT_MAX ? BIO_new_mem_buf(pem, (int)len) : NULL;
    if (b != NULL)
        cert = PEM_read_bio_X509(b, NULL, no_passphrase, NULL);
    BIO_free(b);
    rc = cert_check(k, cert, what, err, err_size);
    X509_free(cert);
    return rc;
}

/* Adds one X.509v3 extension given in OpenSSL's configuration syntax. */
static int cert_add_ext(X509 *cert, int nid, const char *value)
{
    X509V3_CTX ctx;
    X509_EXTENSION *ext;
    int ok;

    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, cert, cert, NULL, NULL, 0);
    ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
    if (ext == NULL)
        return 0;
    ok = X509_add_ext(cert, ext, -1);
    X509_EXTENSION_free(ext);
    return ok;
}

/* A self-signed certificate for pkey: subject and issuer CN = cn, a random
 * positive 127-bit serial, valid from now for SIGNER_CERT_DAYS, signed
 * with SHA-256 (the certificate's own signature; pushes use SHA-1).
 * NULL when OpenSSL fails. */
static X509 *cert_make(EVP_PKEY *pkey, const char *cn)
{
    X509 *cert = X509_new();
    X509_NAME *name = NULL;
    BIGNUM *serial = BN_new();
    int ok;

    ok = cert != NULL && serial != NULL && X509_set_version(cert, X509_VERSION_3)
         && BN_rand(serial, 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY)
         && BN_to_ASN1_INTEGER(serial, X509_get_serialNumber(cert)) != NULL
         && X509_gmtime_adj(X509_getm_notBefore(cert), 0) != NULL
         && X509_time_adj_ex(X509_getm_notAfter(cert), SIGNER_CERT_DAYS, 0, NULL) != NULL
         && X509_set_pubkey(cert, pkey)
         && (name = X509_get_subject_name(cert)) != NULL
         && X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1,
                                       -1, 0)
         && X509_set_issuer_name(cert, name)
         && cert_add_ext(cert, NID_basic_constraints, "critical,CA:FALSE")
         && cert_add_ext(cert, NID_key_usage, "critical,digitalSignature")
         && cert_add_ext(cert, NID_subject_key_identifier, "hash")
         && X509_sign(cert, pkey, EVP_sha256()) > 0;
    BN_free(serial);
    if (!ok) {
        X509_free(cert);
        return NULL;
    }
    return cert;
}

/* The PEM of pkey (PKCS#8) or cert as a malloc'ed, NUL-terminated string;
 * NULL when OpenSSL or malloc fails. */
static char *pem_string(EVP_PKEY *pkey, X509 *cert)
{
    BIO *b = BIO_new(BIO_s_mem());
    char *data, *out = NULL;
    long len;
    int wrote;

    if (b == NULL)
        return NULL;
    wrote = pkey != NULL ? PEM_write_bio_PrivateKey(b, pkey, NULL, NULL, 0, NULL, NULL)
                         : PEM_write_bio_X509(b, cert);
    len = BIO_get_mem_data(b, &data);
    if (wrote == 1 && len > 0 && (out = malloc((size_t)len + 1)) != NULL) {
        memcpy(out, data, (size_t)len);
        out[len] = '\0';
    }
    /* The memory BIO held the private key too: clear it before freeing. */
    if (len > 0)
        OPENSSL_cleanse(data, (size_t)len);
    BIO_free(b);
    return out;
}

int crypto_signer_cert_file(const struct crypto_signer *k, const char *path, char **cert_pem,
                            char *err, size_t err_size)
{
    X509 *cert;
    FILE *f;
    int rc;

    *cert_pem = NULL;
    if ((f = open_pem("signing certificate", path, err, err_size)) == NULL)
        return SMQ_E_INTERNAL;
    cert = PEM_read_X509(f, NULL, no_passphrase, NULL);
    fclose(f);
    rc = cert_check(k, cert, path, err, err_size);
    if (rc == 0 && (*cert_pem = pem_string(NULL, cert)) == NULL)
        rc = signer_fail(err, err_size, "signing certificate %s: cannot write it as PEM", path);
    X509_free(cert);
    return rc;
}

int crypto_signer_generate_pem(const char *cn, char **key_pem, char **cert_pem, char *err,
                               size_t err_size)
{
    EVP_PKEY *pkey = NULL;
    X509 *cert = NULL;
    int rc = SMQ_E_INTERNAL;

    *key_pem = NULL;
    *cert_pem = NULL;
    ERR_clear_error();
    pkey = EVP_RSA_gen(SIGNER_GEN_BITS);
    if (pkey == NULL) {
        rc = signer_fail(err, err_size, "cannot generate an RSA key");
        goto out;
    }
    cert = cert_make(pkey, cn);
    if (cert == NULL) {
        rc = signer_fail(err, err_size, "cannot make a certificate for CN %s", cn);
        goto out;
    }
    *key_pem = pem_string(pkey, NULL);
    *cert_pem = pem_string(NULL, cert);
    if (*key_pem == NULL || *cert_pem == NULL) {
        rc = signer_fail(err, err_size, "cannot write the key and certificate as PEM");
        crypto_pem_free(*key_pem);
        free(*cert_pem);
        *key_pem = NULL;
        *cert_pem = NULL;
        goto out;
    }
    rc = 0;
out:
    X509_free(cert);
    EVP_PKEY_free(pkey);
    return rc;
}

void crypto_pem_free(char *pem)
{
    if (pem == NULL)
        return;
    OPENSSL_cleanse(pem, strlen(pem));
    free(pem);
}

void crypto_secret_wipe(void *p, size_t len)
{
    if (p != NULL && len > 0)
        OPENSSL_cleanse(p, len);
}
