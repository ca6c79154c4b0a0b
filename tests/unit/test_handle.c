/*
 * test_handle.c — unit tests for handle.c: receipt handles (encode/decode
 * round trip over many (seq, gen) pairs including the extremes, alphabet
 * [A-Za-z0-9_-] and length 27, every single-character change rejected,
 * malformed inputs, foreign keys, the non-canonical spare bits) and
 * message ids (32 upper-case hex, the prefix from the keys, the sequence
 * number in the last 16 digits, distinct ids for distinct sequences).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "smqd/errors.h"
#include "smqd/handle.h"

static const char alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* Fixed keys, so failures are reproducible. */
static void fixed_keys(struct handle_keys *k, unsigned char fill)
{
    for (size_t i = 0; i < sizeof k->secret; i++)
        k->secret[i] = (unsigned char)(fill + i * 7);
    for (size_t i = 0; i < sizeof k->id_prefix; i++)
        k->id_prefix[i] = (unsigned char)(0xA0 + fill + i);
}

static int decode_str(const struct handle_keys *k, const char *text, uint64_t *seq, uint32_t *gen)
{
    return handle_decode(k, text, strlen(text), seq, gen);
}

static void assert_round_trip(const struct handle_keys *k, uint64_t seq, uint32_t gen)
{
    char h[HANDLE_TEXT_LEN + 1];
    uint64_t s = ~seq;
    uint32_t g = ~gen;

    memset(h, '#', sizeof h);
    handle_encode(k, seq, gen, h);
    assert_int_equal(strlen(h), HANDLE_TEXT_LEN);
    assert_int_equal(strspn(h, alphabet), HANDLE_TEXT_LEN);
    assert_int_equal(decode_str(k, h, &s, &g), 0);
    assert_true(s == seq);
    assert_int_equal(g, gen);
}

static void assert_rejected(const struct handle_keys *k, const char *text, size_t len)
{
    uint64_t s = 12345;
    uint32_t g = 678;

    assert_int_equal(handle_decode(k, text, len, &s, &g), SMQ_E_RECEIPT_HANDLE_ERROR);
    /* Outputs are untouched on failure. */
    assert_true(s == 12345);
    assert_int_equal(g, 678);
}

static void assert_rejected_str(const struct handle_keys *k, const char *text)
{
    assert_rejected(k, text, strlen(text));
}

/* ---- receipt handles ---------------------------------------------------------------- */

static void test_handle_round_trip_extremes(void **state)
{
    struct handle_keys k;
    const uint64_t seqs[] = {0, 1, 2, 255, 256, 65535, UINT32_MAX, (uint64_t)UINT32_MAX + 1,
                             UINT64_MAX >> 1, (UINT64_MAX >> 1) - 1, UINT64_MAX};
    const uint32_t gens[] = {0, 1, 2, 0x7fffffffu, UINT32_MAX - 1, UINT32_MAX};

    (void)state;
    fixed_keys(&k, 1);
    for (size_t i = 0; i < sizeof seqs / sizeof seqs[0]; i++)
        for (size_t j = 0; j < sizeof gens / sizeof gens[0]; j++)
            assert_round_trip(&k, seqs[i], gens[j]);
}

static void test_handle_round_trip_many(void **state)
{
    struct handle_keys k;
    uint64_t x = 0x9E3779B97F4A7C15u;

    (void)state;
    fixed_keys(&k, 2);
    for (int i = 0; i < 5000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        assert_round_trip(&k, x >> (i % 64), (uint32_t)(x >> 32) >> (i % 32));
    }
    for (uint64_t seq = 0; seq < 300; seq++)
        assert_round_trip(&k, seq, (uint32_t)(seq * 3));
}

static void test_handle_generated_keys_round_trip(void **state)
{
    struct handle_keys k;

    (void)state;
    assert_int_equal(handle_keys_generate(&k), 0);
    assert_round_trip(&k, 42, 7);
    assert_round_trip(&k, UINT64_MAX >> 1, UINT32_MAX);
}

static void test_handle_deterministic(void **state)
{
    struct handle_keys k;
    char a[HANDLE_TEXT_LEN + 1], b[HANDLE_TEXT_LEN + 1];

    (void)state;
    fixed_keys(&k, 3);
    handle_encode(&k, 99, 5, a);
    handle_encode(&k, 99, 5, b);
    assert_string_equal(a, b);
    handle_encode(&k, 99, 6, b);
    assert_string_not_equal(a, b);
    handle_encode(&k, 100, 5, b);
    assert_string_not_equal(a, b);
}

static void test_handle_every_changed_char_rejected(void **state)
{
    struct handle_keys k;
    char h[HANDLE_TEXT_LEN + 1], t[HANDLE_TEXT_LEN + 1];
    const uint64_t seqs[] = {0, 77, UINT64_MAX >> 1};

    (void)state;
    fixed_keys(&k, 4);
    for (size_t s = 0; s < sizeof seqs / sizeof seqs[0]; s++) {
        handle_encode(&k, seqs[s], (uint32_t)s, h);
        for (size_t pos = 0; pos < HANDLE_TEXT_LEN; pos++) {
            for (size_t a = 0; a < 64; a++) {
                if (alphabet[a] == h[pos])
                    continue;
                memcpy(t, h, sizeof t);
                t[pos] = alphabet[a];
                assert_rejected(&k, t, HANDLE_TEXT_LEN);
            }
        }
    }
}

static void test_handle_wrong_length(void **state)
{
    struct handle_keys k;
    char h[HANDLE_TEXT_LEN + 2];

    (void)state;
    fixed_keys(&k, 5);
    handle_encode(&k, 1234, 1, h);
    assert_rejected(&k, h, HANDLE_TEXT_LEN - 1);
    assert_rejected(&k, h, 1);
    assert_rejected(&k, h, 0);
    h[HANDLE_TEXT_LEN] = 'A';
    h[HANDLE_TEXT_LEN + 1] = '\0';
    assert_rejected(&k, h, HANDLE_TEXT_LEN + 1);
    assert_rejected_str(&k, "");
}

static void test_handle_foreign_characters(void **state)
{
    struct handle_keys k;
    char h[HANDLE_TEXT_LEN + 1], t[HANDLE_TEXT_LEN + 1];
    const char bad[] = {'+', '/', '=', ' ', '.', '~', '%', '\t', '\n', '\0', (char)0x80, (char)0xff};

    (void)state;
    fixed_keys(&k, 6);
    handle_encode(&k, 555, 2, h);
    for (size_t i = 0; i < sizeof bad; i++) {
        for (size_t pos = 0; pos < HANDLE_TEXT_LEN; pos += 13) {
            memcpy(t, h, sizeof t);
            t[pos] = bad[i];
            assert_rejected(&k, t, HANDLE_TEXT_LEN);
        }
    }
}

static void test_handle_standard_base64_form_rejected(void **state)
{
    struct handle_keys k;
    char h[HANDLE_TEXT_LEN + 1], t[HANDLE_TEXT_LEN + 2];

    (void)state;
    fixed_keys(&k, 7);
    /* Find a handle that uses '-' or '_' and spell it with '+'/'/' instead:
     * standard base64 of the same bytes must not be accepted. */
    for (uint64_t seq = 0;; seq++) {
        handle_encode(&k, seq, 0, h);
        if (strpbrk(h, "-_") != NULL)
            break;
    }
    memcpy(t, h, sizeof h);
    for (size_t i = 0; i < HANDLE_TEXT_LEN; i++)
        t[i] = t[i] == '-' ? '+' : t[i] == '_' ? '/' : t[i];
    assert_rejected(&k, t, HANDLE_TEXT_LEN);
    /* Padded form. */
    memcpy(t, h, HANDLE_TEXT_LEN);
    t[HANDLE_TEXT_LEN] = '=';
    t[HANDLE_TEXT_LEN + 1] = '\0';
    assert_rejected_str(&k, t);
}

static void test_handle_doc_formats_rejected(void **state)
{
    struct handle_keys k;

    (void)state;
    fixed_keys(&k, 8);
    /* The formats the real service uses (docs/protocol.md §6.1) are not ours. */
    assert_rejected_str(&k, "8-0zxjHBaWtzPz8zphz0z6OGz5yWWidU1fJM");
    assert_rejected_str(&k, "1-ODU4OTkzNDU5My0xNDM1MTk3NjAwLTItNg==");
    assert_rejected_str(&k, "MbZj6wDWli+QEauMZc8ZRv37sIW2iJKq3M9Mx/KSbkJ0");
    assert_rejected_str(&k, "AAAAAAAAAAAAAAAAAAAAAAAAAAA");      /* 27 chars, MAC wrong */
    assert_rejected_str(&k, "___________________________");
}

static void test_handle_10kb_rejected(void **state)
{
    struct handle_keys k;
    size_t n = 10 * 1024;
    char *big = malloc(n + 1);

    (void)state;
    assert_non_null(big);
    memset(big, 'A', n);
    big[n] = '\0';
    fixed_keys(&k, 9);
    assert_rejected(&k, big, n);
    free(big);
}

static void test_handle_other_keys_rejected(void **state)
{
    struct handle_keys k1, k2;
    char h[HANDLE_TEXT_LEN + 1];

    (void)state;
    fixed_keys(&k1, 10);
    fixed_keys(&k2, 10);
    k2.secret[HANDLE_SECRET_LEN - 1] ^= 1;       /* one bit of the secret differs */
    for (uint64_t seq = 0; seq < 64; seq++) {
        handle_encode(&k1, seq, (uint32_t)seq, h);
        assert_rejected(&k2, h, HANDLE_TEXT_LEN);
    }
    /* The MessageId prefix is not part of the MAC key. */
    fixed_keys(&k2, 10);
    memset(k2.id_prefix, 0, sizeof k2.id_prefix);
    handle_encode(&k1, 9, 9, h);
    assert_int_equal(decode_str(&k2, h, &(uint64_t){0}, &(uint32_t){0}), 0);
}

static void test_handle_spare_bits_must_be_zero(void **state)
{
    struct handle_keys k;
    char h[HANDLE_TEXT_LEN + 1], t[HANDLE_TEXT_LEN + 1];
    const char *last;

    (void)state;
    fixed_keys(&k, 11);
    for (uint64_t seq = 0; seq < 50; seq++) {
        handle_encode(&k, seq, 1, h);
        last = strchr(alphabet, h[HANDLE_TEXT_LEN - 1]);
        assert_non_null(last);
        /* The last character carries 4 data bits and 2 spare bits (zero). */
        assert_int_equal((last - alphabet) & 3, 0);
        for (int spare = 1; spare < 4; spare++) {
            memcpy(t, h, sizeof t);
            t[HANDLE_TEXT_LEN - 1] = alphabet[(last - alphabet) | spare];
            assert_rejected(&k, t, HANDLE_TEXT_LEN);
        }
    }
}

static void test_handle_embedded_nul_rejected(void **state)
{
    struct handle_keys k;
    char h[HANDLE_TEXT_LEN + 1];

    (void)state;
    fixed_keys(&k, 12);
    handle_encode(&k, 3, 3, h);
    h[5] = '\0';
    assert_rejected(&k, h, HANDLE_TEXT_LEN);
}

/* ---- message ids --------------------------------------------------------------------- */

static bool is_upper_hex(const char *s)
{
    return strspn(s, "0123456789ABCDEF") == strlen(s);
}

static void test_msgid_format_shape(void **state)
{
    struct handle_keys k;
    char id[MSGID_TEXT_LEN + 1];

    (void)state;
    fixed_keys(&k, 0);
    memset(id, '#', sizeof id);
    msgid_format(&k, 0x0123456789ABCDEFu, id);
    assert_int_equal(strlen(id), MSGID_TEXT_LEN);
    assert_true(is_upper_hex(id));
    /* prefix A0 A1 .. A7 from fixed_keys(.., 0), then the sequence */
    assert_string_equal(id, "A0A1A2A3A4A5A6A70123456789ABCDEF");
}

static void test_msgid_format_seq_in_last_16(void **state)
{
    struct handle_keys k;
    char id[MSGID_TEXT_LEN + 1], want[17];
    const uint64_t seqs[] = {0, 1, 0xff, UINT32_MAX, UINT64_MAX >> 1, UINT64_MAX};

    (void)state;
    fixed_keys(&k, 0x10);
    for (size_t i = 0; i < sizeof seqs / sizeof seqs[0]; i++) {
        msgid_format(&k, seqs[i], id);
        snprintf(want, sizeof want, "%016llX", (unsigned long long)seqs[i]);
        assert_string_equal(id + 16, want);
        assert_memory_equal(id, "B0B1B2B3B4B5B6B7", 16);
    }
}

static void test_msgid_prefix_from_keys(void **state)
{
    struct handle_keys k1, k2;
    char a[MSGID_TEXT_LEN + 1], b[MSGID_TEXT_LEN + 1];

    (void)state;
    fixed_keys(&k1, 0);
    k2 = k1;
    memcpy(k2.id_prefix, "\x00\x11\x22\x33\x44\x55\x66\x77", 8);
    msgid_format(&k1, 5, a);
    msgid_format(&k2, 5, b);
    assert_string_equal(b, "00112233445566770000000000000005");
    assert_string_not_equal(a, b);
    assert_string_equal(a + 16, b + 16);
}

static int cmp_ids(const void *a, const void *b)
{
    return memcmp(a, b, MSGID_TEXT_LEN + 1);
}

static void test_msgid_distinct_for_distinct_seqs(void **state)
{
    enum { N = 4096 };
    struct handle_keys k;
    char (*ids)[MSGID_TEXT_LEN + 1] = calloc(N, sizeof *ids);

    (void)state;
    assert_non_null(ids);
    fixed_keys(&k, 0x20);
    for (size_t i = 0; i < N; i++) {
        uint64_t seq = i < N / 2 ? i : ((uint64_t)i << 40) ^ 0x5555;
        msgid_format(&k, seq, ids[i]);
        assert_true(is_upper_hex(ids[i]));
    }
    qsort(ids, N, sizeof *ids, cmp_ids);
    for (size_t i = 1; i < N; i++)
        assert_string_not_equal(ids[i - 1], ids[i]);
    free(ids);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_handle_round_trip_extremes),
        cmocka_unit_test(test_handle_round_trip_many),
        cmocka_unit_test(test_handle_generated_keys_round_trip),
        cmocka_unit_test(test_handle_deterministic),
        cmocka_unit_test(test_handle_every_changed_char_rejected),
        cmocka_unit_test(test_handle_wrong_length),
        cmocka_unit_test(test_handle_foreign_characters),
        cmocka_unit_test(test_handle_standard_base64_form_rejected),
        cmocka_unit_test(test_handle_doc_formats_rejected),
        cmocka_unit_test(test_handle_10kb_rejected),
        cmocka_unit_test(test_handle_other_keys_rejected),
        cmocka_unit_test(test_handle_spare_bits_must_be_zero),
        cmocka_unit_test(test_handle_embedded_nul_rejected),
        cmocka_unit_test(test_msgid_format_shape),
        cmocka_unit_test(test_msgid_format_seq_in_last_16),
        cmocka_unit_test(test_msgid_prefix_from_keys),
        cmocka_unit_test(test_msgid_distinct_for_distinct_seqs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
