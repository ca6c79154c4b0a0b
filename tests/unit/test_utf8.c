/*
 * test_utf8.c — unit tests for utf8.c: every class of valid sequence at its
 * boundaries, and every way a sequence can be invalid (RFC 3629 §3-4).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "smqd/utf8.h"

struct valid_case {
    const char *bytes;
    uint32_t cp;
};

static void test_utf8_valid_sequences(void **state)
{
    static const struct valid_case cases[] = {
        {"\x00", 0x0},         {"A", 0x41},           {"\x7F", 0x7F},
        {"\xC2\x80", 0x80},    {"\xC3\xA9", 0xE9},    {"\xDF\xBF", 0x7FF},
        {"\xE0\xA0\x80", 0x800}, {"\xE2\x82\xAC", 0x20AC}, {"\xED\x9F\xBF", 0xD7FF},
        {"\xEE\x80\x80", 0xE000}, {"\xEF\xBF\xBF", 0xFFFF},
        {"\xF0\x90\x80\x80", 0x10000}, {"\xF0\x9F\x98\x80", 0x1F600},
        {"\xF4\x8F\xBF\xBF", 0x10FFFF},
    };

    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const unsigned char *p = (const unsigned char *)cases[i].bytes;
        size_t len = cases[i].cp == 0 ? 1 : strlen(cases[i].bytes);
        uint32_t cp = 0xDEAD;

        assert_int_equal(utf8_decode(p, len, &cp), len);
        assert_int_equal(cp, cases[i].cp);
        /* Bytes after the sequence do not matter. */
        cp = 0xDEAD;
        assert_int_equal(utf8_decode(p, len + 1, &cp), len);
        assert_int_equal(cp, cases[i].cp);
    }
}

static void test_utf8_invalid_sequences(void **state)
{
    static const char *const cases[] = {
        "\x80",                 /* stray continuation */
        "\xBF",
        "\xC0\x80",             /* overlong NUL */
        "\xC1\xBF",             /* overlong U+007F */
        "\xE0\x80\x80",         /* overlong 3-byte */
        "\xE0\x9F\xBF",         /* overlong U+07FF */
        "\xF0\x80\x80\x80",     /* overlong 4-byte */
        "\xF0\x8F\xBF\xBF",     /* overlong U+FFFF */
        "\xED\xA0\x80",         /* surrogate U+D800 */
        "\xED\xBF\xBF",         /* surrogate U+DFFF */
        "\xF4\x90\x80\x80",     /* U+110000 */
        "\xF5\x80\x80\x80",     /* lead byte beyond U+10FFFF */
        "\xFF",
        "\xC0",                 /* lone lead bytes that can never start a character */
        "\xC1",
        "\xF8\x88\x80\x80\x80",   /* old 5-byte form */
        "\xFE",
        "\xE2\x28\xA1",         /* bad continuation */
        "\xC3\x41",
        "\xF0\x9F\x98\x41",
    };

    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint32_t cp = 0xDEAD;
        assert_int_equal(utf8_decode((const unsigned char *)cases[i], strlen(cases[i]), &cp), 0);
        assert_int_equal(cp, 0xDEAD);         /* untouched on failure */
    }
}

/* A sequence cut short by avail is invalid, even if the bytes beyond
 * would complete it. */
static void test_utf8_truncated_by_avail(void **state)
{
    const unsigned char euro[] = {0xE2, 0x82, 0xAC};
    const unsigned char emoji[] = {0xF0, 0x9F, 0x98, 0x80};
    const unsigned char e_acute[] = {0xC3, 0xA9};
    uint32_t cp;

    (void)state;
    assert_int_equal(utf8_decode(e_acute, 1, &cp), 0);
    assert_int_equal(utf8_decode(e_acute, 2, &cp), 2);
    assert_int_equal(utf8_decode(euro, 2, &cp), 0);
    assert_int_equal(utf8_decode(euro, 1, &cp), 0);
    assert_int_equal(utf8_decode(emoji, 3, &cp), 0);
    assert_int_equal(utf8_decode(emoji, 4, &cp), 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_utf8_valid_sequences),
        cmocka_unit_test(test_utf8_invalid_sequences),
        cmocka_unit_test(test_utf8_truncated_by_avail),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
