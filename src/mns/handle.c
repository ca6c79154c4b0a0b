/*
 * handle.c — owns the formats of message ids and receipt handles (handle.h).
 */
#include "smqd/handle.h"

#include <string.h>

#include "smqd/crypto.h"
#include "smqd/errors.h"

#define RAW_LEN 20
#define MAC_LEN 8

static const char b64url[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

int handle_keys_generate(struct handle_keys *keys)
{
    int rc = crypto_random(keys->secret, sizeof keys->secret);
    if (rc == 0)
        rc = crypto_random(keys->id_prefix, sizeof keys->id_prefix);
    return rc;
}

static void put_be(unsigned char *p, uint64_t v, int bytes)
{
    for (int i = bytes - 1; i >= 0; i--, v >>= 8)
        p[i] = (unsigned char)(v & 0xff);
}

static uint64_t get_be(const unsigned char *p, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v = (v << 8) | p[i];
    return v;
}

static void mac(const struct handle_keys *keys, const unsigned char *msg, unsigned char out[MAC_LEN])
{
    unsigned char full[CRYPTO_SHA1_LEN];
    /* HMAC over 12 bytes cannot fail short of OpenSSL being broken; a zeroed
     * MAC then simply makes every handle fail verification. */
    if (crypto_hmac_sha1(keys->secret, sizeof keys->secret, msg, 12, full) != 0)
        memset(full, 0, sizeof full);
    memcpy(out, full, MAC_LEN);
}

void handle_encode(const struct handle_keys *keys, uint64_t seq, uint32_t gen,
                   char out[HANDLE_TEXT_LEN + 1])
{
    unsigned char raw[RAW_LEN + 1] = {0};   /* +1: zero pad for the last 3-byte group */
    size_t o = 0;

    put_be(raw, seq, 8);
    put_be(raw + 8, gen, 4);
    mac(keys, raw, raw + 12);
    for (size_t i = 0; i < RAW_LEN; i += 3) {
        uint32_t v = (uint32_t)raw[i] << 16 | (uint32_t)raw[i + 1] << 8 | raw[i + 2];
        out[o++] = b64url[(v >> 18) & 63];
        out[o++] = b64url[(v >> 12) & 63];
        out[o++] = b64url[(v >> 6) & 63];
        if (i + 2 < RAW_LEN)
            out[o++] = b64url[v & 63];
    }
    out[o] = '\0';
}

static int b64url_value(char c)
{
    const char *p = (c != '\0') ? strchr(b64url, c) : NULL;
    return p ? (int)(p - b64url) : -1;
}

int handle_decode(const struct handle_keys *keys, const char *text, size_t len,
                  uint64_t *seq, uint32_t *gen)
{
    unsigned char raw[RAW_LEN + 2];
    unsigned char want[MAC_LEN];
    uint32_t acc = 0;
    int bits = 0;
    size_t o = 0;

    if (len != HANDLE_TEXT_LEN)
        return SMQ_E_RECEIPT_HANDLE_ERROR;
    for (size_t i = 0; i < len; i++) {
        int v = b64url_value(text[i]);
        if (v < 0)
            return SMQ_E_RECEIPT_HANDLE_ERROR;
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            raw[o++] = (unsigned char)((acc >> bits) & 0xff);
        }
    }
    /* 27 characters carry 162 bits: the 2 spare bits must be zero, so each
     * handle has exactly one spelling. */
    if (o != RAW_LEN || (acc & ((1u << bits) - 1)) != 0)
        return SMQ_E_RECEIPT_HANDLE_ERROR;
    mac(keys, raw, want);
    if (!crypto_equal(want, raw + 12, MAC_LEN))
        return SMQ_E_RECEIPT_HANDLE_ERROR;
    *seq = get_be(raw, 8);
    *gen = (uint32_t)get_be(raw + 8, 4);
    return 0;
}

void msgid_format(const struct handle_keys *keys, uint64_t seq, char out[MSGID_TEXT_LEN + 1])
{
    static const char hex[] = "0123456789ABCDEF";
    unsigned char raw[16];

    memcpy(raw, keys->id_prefix, 8);
    put_be(raw + 8, seq, 8);
    for (int i = 0; i < 16; i++) {
        out[2 * i] = hex[raw[i] >> 4];
        out[2 * i + 1] = hex[raw[i] & 15];
    }
    out[MSGID_TEXT_LEN] = '\0';
}
