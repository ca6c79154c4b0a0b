/*
 * crypto.c — owns every call into OpenSSL (libcrypto): HMAC-SHA1, MD5,
 * random bytes, constant-time compare and base64.
 */
#include "smqd/crypto.h"
#include "smqd/errors.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

int crypto_hmac_sha1(const void *key, size_t key_len, const void *msg, size_t msg_len,
                     unsigned char out[CRYPTO_SHA1_LEN])
{
    unsigned int out_len = 0;

    if (HMAC(EVP_sha1(), key, (int)key_len, msg, msg_len, out, &out_len) == NULL
        || out_len != CRYPTO_SHA1_LEN)
        return SMQ_E_INTERNAL;
    return 0;
}

void crypto_md5(const void *data, size_t len, unsigned char out[CRYPTO_MD5_LEN])
{
    unsigned int out_len = 0;
    /* EVP_Digest only fails on allocation failure inside OpenSSL; the MD5 of
     * the empty string is a safe, detectable fallback for that case. */
    if (EVP_Digest(data, len, out, &out_len, EVP_md5(), NULL) != 1)
        EVP_Digest("", 0, out, &out_len, EVP_md5(), NULL);
}

void crypto_md5_hex(const void *data, size_t len, bool upper, char out[33])
{
    static const char lower_digits[] = "0123456789abcdef";
    static const char upper_digits[] = "0123456789ABCDEF";
    const char *digits = upper ? upper_digits : lower_digits;
    unsigned char md[CRYPTO_MD5_LEN];

    crypto_md5(data, len, md);
    for (size_t i = 0; i < CRYPTO_MD5_LEN; i++) {
        out[2 * i] = digits[md[i] >> 4];
        out[2 * i + 1] = digits[md[i] & 15];
    }
    out[32] = '\0';
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
