/*
 * test_crypto.c — unit tests for the OpenSSL wrapper (src/base/crypto.c):
 * HMAC-SHA1 against the RFC 2202 vectors (also across more keys than a
 * thread caches and from a second thread), MD5 against the RFC 1321 suite
 * in raw and both hex forms, random bytes, base64 (RFC 4648 vectors) and
 * the constant-time comparison.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "smqd/crypto.h"

/* ---- helpers ------------------------------------------------------------ */

static void to_hex(const unsigned char *p, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";

    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[p[i] >> 4];
        out[2 * i + 1] = digits[p[i] & 15];
    }
    out[2 * n] = '\0';
}

static void assert_hmac(const void *key, size_t key_len, const void *msg, size_t msg_len,
                        const char *want_hex)
{
    unsigned char mac[CRYPTO_SHA1_LEN];
    char hex[2 * CRYPTO_SHA1_LEN + 1];

    memset(mac, 0, sizeof mac);
    assert_int_equal(crypto_hmac_sha1(key, key_len, msg, msg_len, mac), 0);
    to_hex(mac, sizeof mac, hex);
    assert_string_equal(hex, want_hex);
}

/* ---- the RFC 2202 test cases for HMAC-SHA1 ------------------------------ */

struct hmac_case {
    unsigned char key[80];
    size_t key_len;
    unsigned char msg[80];
    size_t msg_len;
    const char *digest;
};

static struct hmac_case rfc2202[7];

static void fill_case(struct hmac_case *c, unsigned char key_byte, size_t key_len,
                      const void *msg, size_t msg_len, const char *digest)
{
    memset(c->key, key_byte, key_len);
    c->key_len = key_len;
    memcpy(c->msg, msg, msg_len);
    c->msg_len = msg_len;
    c->digest = digest;
}

static void build_rfc2202(void)
{
    unsigned char dd[50], cd[50];
    static const char t6[] = "Test Using Larger Than Block-Size Key - Hash Key First";
    static const char t7[] =
        "Test Using Larger Than Block-Size Key and Larger Than One Block-Size Data";

    memset(dd, 0xdd, sizeof dd);
    memset(cd, 0xcd, sizeof cd);
    fill_case(&rfc2202[0], 0x0b, 20, "Hi There", 8, "b617318655057264e28bc0b6fb378c8ef146be00");
    fill_case(&rfc2202[1], 0, 0, "what do ya want for nothing?", 28,
              "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79");
    memcpy(rfc2202[1].key, "Jefe", 4);
    rfc2202[1].key_len = 4;
    fill_case(&rfc2202[2], 0xaa, 20, dd, sizeof dd, "125d7342b9ac11cd91a39af48aa17b4f63f175d3");
    fill_case(&rfc2202[3], 0, 25, cd, sizeof cd, "4c9007f4026250c6bc8414f9bf50c86c2d7235da");
    for (unsigned i = 0; i < 25; i++)
        rfc2202[3].key[i] = (unsigned char)(i + 1);
    fill_case(&rfc2202[4], 0x0c, 20, "Test With Truncation", 20,
              "4c1a03424b55e07fe7f27be1d58bb9324a9a5a04");
    fill_case(&rfc2202[5], 0xaa, 80, t6, sizeof t6 - 1, "aa4ae5e15272d00e95705637ce8a3b55ed402112");
    fill_case(&rfc2202[6], 0xaa, 80, t7, sizeof t7 - 1, "e8e99d0f45237d786d6bbaa7965c7808bbff1a91");
}

static int group_setup(void **state)
{
    (void)state;
    build_rfc2202();
    return 0;
}

static void assert_case(const struct hmac_case *c)
{
    assert_hmac(c->key, c->key_len, c->msg, c->msg_len, c->digest);
}

/* ---- HMAC-SHA1 ------------------------------------------------------------ */

static void test_crypto_hmac_sha1_rfc2202(void **state)
{
    (void)state;
    for (size_t i = 0; i < 7; i++)
        assert_case(&rfc2202[i]);
}

/* RFC 4231 test cases 1 and 2 (signature V4's MAC). */
static void test_crypto_hmac_sha256_rfc4231(void **state)
{
    static const char *const want[2] = {
        "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7",
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"};
    unsigned char key1[20], mac[CRYPTO_SHA256_LEN];
    char hex[2 * CRYPTO_SHA256_LEN + 1];

    (void)state;
    memset(key1, 0x0b, sizeof key1);
    assert_int_equal(crypto_hmac_sha256(key1, sizeof key1, "Hi There", 8, mac), 0);
    for (size_t i = 0; i < sizeof mac; i++)
        snprintf(hex + 2 * i, 3, "%02x", mac[i]);
    assert_string_equal(hex, want[0]);
    assert_int_equal(crypto_hmac_sha256("Jefe", 4, "what do ya want for nothing?", 28, mac), 0);
    for (size_t i = 0; i < sizeof mac; i++)
        snprintf(hex + 2 * i, 3, "%02x", mac[i]);
    assert_string_equal(hex, want[1]);
}

/* Six distinct keys (three of the same length, 20 bytes) in changing
 * orders: a per-thread cache that matched keys by length, kept a stale
 * key after evicting a slot, or reused a context without re-keying it
 * would give a wrong MAC somewhere in here. */
static void test_crypto_hmac_sha1_many_keys_interleaved(void **state)
{
    static const size_t order[] = {0, 2, 4, 1, 3, 5, 6, 0, 6, 2, 2, 4, 4, 0, 3, 1, 5, 0};

    (void)state;
    for (int round = 0; round < 3; round++)
        for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
            assert_case(&rfc2202[order[(i + (size_t)round * 5) % (sizeof order / sizeof order[0])]]);
    /* The same message twice under one key gives the same MAC (the
     * context is reset between calls, not continued). */
    assert_case(&rfc2202[0]);
    assert_case(&rfc2202[0]);
}

/* A key that is a prefix of another cached key is a different key. */
static void test_crypto_hmac_sha1_prefix_and_empty_keys(void **state)
{
    (void)state;
    assert_case(&rfc2202[5]);                         /* 80 x 0xaa cached */
    assert_hmac(rfc2202[5].key, 20, rfc2202[2].msg, rfc2202[2].msg_len,
                rfc2202[2].digest);                   /* 20 x 0xaa: case 3 */
    assert_hmac("", 0, "", 0, "fbdb1d1b18aa6c08324b7d64b71fb76370690e1d");
    assert_hmac("", 0, "", 0, "fbdb1d1b18aa6c08324b7d64b71fb76370690e1d");
    assert_case(&rfc2202[5]);
}

static void *hmac_thread(void *arg)
{
    int *ok = arg;
    unsigned char mac[CRYPTO_SHA1_LEN];
    char hex[2 * CRYPTO_SHA1_LEN + 1];

    *ok = 1;
    for (size_t i = 0; i < 7; i++) {
        const struct hmac_case *c = &rfc2202[i];
        if (crypto_hmac_sha1(c->key, c->key_len, c->msg, c->msg_len, mac) != 0)
            *ok = 0;
        to_hex(mac, sizeof mac, hex);
        if (strcmp(hex, c->digest) != 0)
            *ok = 0;
    }
    return NULL;
}

/* Contexts are per thread: a second thread gets correct MACs of its own
 * (and its contexts are freed when it exits: valgrind checks that). */
static void test_crypto_hmac_sha1_other_thread(void **state)
{
    pthread_t th;
    int ok = 0;

    (void)state;
    assert_case(&rfc2202[1]);
    assert_int_equal(pthread_create(&th, NULL, hmac_thread, &ok), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(ok, 1);
    assert_case(&rfc2202[1]);
}

/* ---- MD5 ------------------------------------------------------------------- */

static const struct {
    const char *in;
    const char *md5;
} rfc1321[] = {
    {"", "d41d8cd98f00b204e9800998ecf8427e"},
    {"a", "0cc175b9c0f1b6a831c399e269772661"},
    {"abc", "900150983cd24fb0d6963f7d28e17f72"},
    {"message digest", "f96b697d7cb7938d525a2f31aaf161d0"},
    {"abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"},
    {"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
     "d174ab98d277d9f5a5611c2c9f419d9f"},
    {"12345678901234567890123456789012345678901234567890123456789012345678901234567890",
     "57edf4a22be3c955ac49da2e2107b67a"},
};

#define N_RFC1321 (sizeof rfc1321 / sizeof rfc1321[0])

static void test_crypto_md5_rfc1321_raw(void **state)
{
    unsigned char md[CRYPTO_MD5_LEN];
    char hex[33];

    (void)state;
    for (size_t i = 0; i < N_RFC1321; i++) {
        memset(md, 0, sizeof md);
        assert_int_equal(crypto_md5(rfc1321[i].in, strlen(rfc1321[i].in), md), 0);
        to_hex(md, sizeof md, hex);
        assert_string_equal(hex, rfc1321[i].md5);
    }
}

static void test_crypto_md5_hex_lower_and_upper(void **state)
{
    char lower[33], upper[33], want_upper[33];

    (void)state;
    for (size_t i = 0; i < N_RFC1321; i++) {
        const char *in = rfc1321[i].in;
        memset(lower, 'x', sizeof lower);
        memset(upper, 'x', sizeof upper);
        assert_int_equal(crypto_md5_hex(in, strlen(in), false, lower), 0);
        assert_int_equal(crypto_md5_hex(in, strlen(in), true, upper), 0);
        assert_int_equal(strlen(lower), 32);
        assert_string_equal(lower, rfc1321[i].md5);
        for (size_t j = 0; j < 33; j++)
            want_upper[j] = (char)(rfc1321[i].md5[j] >= 'a' && rfc1321[i].md5[j] <= 'f'
                                       ? rfc1321[i].md5[j] - 'a' + 'A'
                                       : rfc1321[i].md5[j]);
        assert_string_equal(upper, want_upper);
    }
}

/* Every nibble value in both positions, in both cases. */
static void test_crypto_md5_to_hex_every_digit(void **state)
{
    const unsigned char md[CRYPTO_MD5_LEN] = {0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
                                              0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10};
    char out[33];

    (void)state;
    memset(out, 'x', sizeof out);
    crypto_md5_to_hex(md, false, out);
    assert_string_equal(out, "0123456789abcdeffedcba9876543210");
    memset(out, 'x', sizeof out);
    crypto_md5_to_hex(md, true, out);
    assert_string_equal(out, "0123456789ABCDEFFEDCBA9876543210");
}

/* Data with NUL bytes is hashed to its given length, not to the first NUL. */
static void test_crypto_md5_binary_length(void **state)
{
    char a[33], b[33];

    (void)state;
    assert_int_equal(crypto_md5_hex("a\0b", 3, false, a), 0);
    assert_int_equal(crypto_md5_hex("a", 1, false, b), 0);
    assert_string_not_equal(a, b);
    assert_string_equal(b, "0cc175b9c0f1b6a831c399e269772661");
}

/* ---- random ------------------------------------------------------------ */

static void test_crypto_random_bytes_differ(void **state)
{
    unsigned char a[32], b[32], big[4096];
    size_t unchanged = 0;

    (void)state;
    memset(a, 0, sizeof a);
    memset(b, 0, sizeof b);
    assert_int_equal(crypto_random(a, sizeof a), 0);
    assert_int_equal(crypto_random(b, sizeof b), 0);
    assert_memory_not_equal(a, b, sizeof a);
    assert_memory_not_equal(a, (unsigned char[32]){0}, sizeof a);

    /* The whole buffer is written: about 1/256 of the bytes keep a given
     * value by chance, not most of them. */
    memset(big, 0x5a, sizeof big);
    assert_int_equal(crypto_random(big, sizeof big), 0);
    for (size_t i = 0; i < sizeof big; i++)
        unchanged += big[i] == 0x5a;
    assert_true(unchanged < 64);
    assert_true(big[sizeof big - 1] != 0x5a || big[sizeof big - 2] != 0x5a
                || big[sizeof big - 3] != 0x5a);
}

/* ---- base64 -------------------------------------------------------------- */

static void assert_base64(const void *data, size_t len, const char *want)
{
    char out[64];
    size_t n;

    memset(out, 'x', sizeof out);
    n = crypto_base64(data, len, out);
    assert_int_equal(n, strlen(want));
    assert_int_equal(out[n], '\0');
    assert_string_equal(out, want);
}

static void test_crypto_base64_rfc4648(void **state)
{
    (void)state;
    assert_base64("", 0, "");
    assert_base64("f", 1, "Zg==");
    assert_base64("fo", 2, "Zm8=");
    assert_base64("foo", 3, "Zm9v");
    assert_base64("foob", 4, "Zm9vYg==");
    assert_base64("fooba", 5, "Zm9vYmE=");
    assert_base64("foobar", 6, "Zm9vYmFy");
}

/* Standard alphabet ('+' and '/', not the URL-safe one), binary input. */
static void test_crypto_base64_standard_alphabet(void **state)
{
    const unsigned char bin[] = {0xfb, 0xff, 0xfe};
    const unsigned char zeros[4] = {0};

    (void)state;
    assert_base64(bin, sizeof bin, "+//+");
    assert_base64(zeros, sizeof zeros, "AAAAAA==");
}

/* ---- crypto_equal ------------------------------------------------------ */

static void test_crypto_equal(void **state)
{
    unsigned char a[20], b[20];

    (void)state;
    memset(a, 0x42, sizeof a);
    memcpy(b, a, sizeof b);
    assert_true(crypto_equal(a, b, sizeof a));
    b[0] ^= 1;
    assert_false(crypto_equal(a, b, sizeof a));
    b[0] ^= 1;
    b[19] ^= 0x80;
    assert_false(crypto_equal(a, b, sizeof a));
    /* Only the first len bytes count. */
    assert_true(crypto_equal(a, b, 19));
    assert_true(crypto_equal(a, b, 0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crypto_hmac_sha1_rfc2202),
        cmocka_unit_test(test_crypto_hmac_sha256_rfc4231),
        cmocka_unit_test(test_crypto_hmac_sha1_many_keys_interleaved),
        cmocka_unit_test(test_crypto_hmac_sha1_prefix_and_empty_keys),
        cmocka_unit_test(test_crypto_hmac_sha1_other_thread),
        cmocka_unit_test(test_crypto_md5_rfc1321_raw),
        cmocka_unit_test(test_crypto_md5_hex_lower_and_upper),
        cmocka_unit_test(test_crypto_md5_to_hex_every_digit),
        cmocka_unit_test(test_crypto_md5_binary_length),
        cmocka_unit_test(test_crypto_random_bytes_differ),
        cmocka_unit_test(test_crypto_base64_rfc4648),
        cmocka_unit_test(test_crypto_base64_standard_alphabet),
        cmocka_unit_test(test_crypto_equal),
    };
    return cmocka_run_group_tests(tests, group_setup, NULL);
}
