/*
 * test_json.c — unit tests for the JSON writers (src/base/json.c): string
 * escaping of quotes, backslashes and control characters, invalid UTF-8
 * (as utf8.h defines it) replaced by U+FFFD one byte at a time, valid
 * UTF-8 passed through, the output always being a valid JSON string, and
 * json_seconds' fixed-point form.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "smqd/buf.h"
#include "smqd/json.h"
#include "smqd/utf8.h"

/* ---- helpers ------------------------------------------------------------ */

/* json_str of s[0..len) alone, compared with want (a C string). */
static void assert_json(const char *s, size_t len, const char *want)
{
    struct smq_buf b;

    buf_init(&b);
    json_str(&b, s, len);
    assert_false(buf_failed(&b));
    assert_int_equal(b.len, strlen(want));
    assert_memory_equal(b.data, want, b.len);
    buf_free(&b);
}

static void assert_json_c(const char *s, const char *want)
{
    assert_json(s, strlen(s), want);
}

static void assert_seconds(int64_t ms, const char *want)
{
    struct smq_buf b;

    buf_init(&b);
    json_seconds(&b, ms);
    assert_false(buf_failed(&b));
    assert_int_equal(b.len, strlen(want));
    assert_memory_equal(b.data, want, b.len);
    buf_free(&b);
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/*
 * A strict reader of one JSON string (RFC 8259 §7) that must span all of
 * j[0..len): returns the number of code points decoded into cps, or -1
 * when j is not a valid JSON string or not valid UTF-8.
 */
static long read_json_string(const char *j, size_t len, uint32_t *cps, size_t max)
{
    const unsigned char *p = (const unsigned char *)j;
    size_t i = 1, n = 0;

    if (len < 2 || p[0] != '"' || p[len - 1] != '"')
        return -1;
    while (i < len - 1) {
        uint32_t cp;
        if (n == max)
            return -1;
        if (p[i] < 0x20 || p[i] == '"')
            return -1;                            /* raw control or early end */
        if (p[i] == '\\') {
            if (i + 1 >= len - 1)
                return -1;
            switch (p[i + 1]) {
            case '"': cp = '"'; break;
            case '\\': cp = '\\'; break;
            case '/': cp = '/'; break;
            case 'b': cp = 8; break;
            case 'f': cp = 12; break;
            case 'n': cp = '\n'; break;
            case 'r': cp = '\r'; break;
            case 't': cp = '\t'; break;
            case 'u':
                if (i + 6 > len - 1)
                    return -1;
                cp = 0;
                for (size_t k = 2; k < 6; k++) {
                    int h = hexval((char)p[i + k]);
                    if (h < 0)
                        return -1;
                    cp = cp << 4 | (uint32_t)h;
                }
                if (cp >= 0xD800 && cp <= 0xDFFF)
                    return -1;                    /* the writer never needs pairs */
                cps[n++] = cp;
                i += 6;
                continue;
            default:
                return -1;
            }
            cps[n++] = cp;
            i += 2;
            continue;
        }
        {
            size_t k = utf8_decode(p + i, len - 1 - i, &cp);
            if (k == 0)
                return -1;
            cps[n++] = cp;
            i += k;
        }
    }
    return (long)n;
}

/* What json_str must encode for in[0..len): its code points, U+FFFD for
 * every byte that does not start a valid sequence. */
static size_t expected_cps(const unsigned char *in, size_t len, uint32_t *cps)
{
    size_t i = 0, n = 0;

    while (i < len) {
        uint32_t cp;
        size_t k = utf8_decode(in + i, len - i, &cp);
        if (k == 0) {
            cps[n++] = 0xFFFD;
            i++;
        } else {
            cps[n++] = cp;
            i += k;
        }
    }
    return n;
}

/* json_str(in) is one valid JSON string whose code points are exactly the
 * expected ones. */
static void assert_round_trip(const unsigned char *in, size_t len)
{
    uint32_t want[64], got[64];
    size_t n_want;
    long n_got;
    struct smq_buf b;

    assert_true(len <= 64);
    buf_init(&b);
    json_str(&b, (const char *)in, len);
    assert_false(buf_failed(&b));
    n_want = expected_cps(in, len, want);
    n_got = read_json_string(b.data, b.len, got, 64);
    assert_int_equal(n_got, (long)n_want);
    assert_memory_equal(got, want, n_want * sizeof want[0]);
    buf_free(&b);
}

/* ---- escaping ------------------------------------------------------------ */

static void test_json_plain_and_empty(void **state)
{
    (void)state;
    assert_json_c("", "\"\"");
    assert_json_c("hello world", "\"hello world\"");
    assert_json_c("a/b<c>&'", "\"a/b<c>&'\"");
}

static void test_json_quote_and_backslash(void **state)
{
    (void)state;
    assert_json_c("\"", "\"\\\"\"");
    assert_json_c("\\", "\"\\\\\"");
    assert_json_c("say \"hi\" \\o/", "\"say \\\"hi\\\" \\\\o/\"");
    assert_json_c("\\\"", "\"\\\\\\\"\"");
}

static void test_json_control_characters(void **state)
{
    (void)state;
    assert_json_c("a\nb", "\"a\\nb\"");
    assert_json_c("\r\t", "\"\\r\\t\"");
    assert_json_c("\x01", "\"\\u0001\"");
    assert_json_c("\b\f", "\"\\u0008\\u000c\"");
    assert_json_c("\x1f", "\"\\u001f\"");
    assert_json_c("\x7f", "\"\\u007f\"");
    /* Space is the first character that needs no escape. */
    assert_json_c(" ", "\" \"");
}

/* The length decides, not a NUL: an embedded NUL is escaped, and bytes
 * after len are not read. */
static void test_json_embedded_nul_and_length(void **state)
{
    (void)state;
    assert_json("a\0b", 3, "\"a\\u0000b\"");
    assert_json("abcdef", 3, "\"abc\"");
    assert_json("\xC3\xA9", 1, "\"\\ufffd\"");    /* a sequence cut by len */
}

static void test_json_valid_utf8_passes_through(void **state)
{
    (void)state;
    assert_json_c("caf\xC3\xA9", "\"caf\xC3\xA9\"");
    assert_json_c("\xE2\x82\xAC 5", "\"\xE2\x82\xAC 5\"");
    assert_json_c("\xF0\x9F\x98\x80", "\"\xF0\x9F\x98\x80\"");
    assert_json_c("\xF4\x8F\xBF\xBF", "\"\xF4\x8F\xBF\xBF\"");
    assert_json_c("\xEF\xBF\xBD", "\"\xEF\xBF\xBD\"");          /* U+FFFD itself */
}

/* One replacement per byte that does not start a valid sequence. */
static void test_json_invalid_utf8_replaced_per_byte(void **state)
{
    (void)state;
    assert_json_c("\x80", "\"\\ufffd\"");                         /* stray continuation */
    assert_json_c("a\xFF" "b", "\"a\\ufffdb\"");
    assert_json_c("\xC3(", "\"\\ufffd(\"");                       /* lead, no continuation */
    assert_json_c("x\xC3", "\"x\\ufffd\"");                       /* cut at the end */
    assert_json_c("\xC0\x80", "\"\\ufffd\\ufffd\"");              /* overlong NUL */
    assert_json_c("\xE0\x80\xAF", "\"\\ufffd\\ufffd\\ufffd\"");   /* overlong '/' */
    assert_json_c("\xED\xA0\x80", "\"\\ufffd\\ufffd\\ufffd\"");   /* surrogate */
    assert_json_c("\xF4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");   /* > U+10FFFF */
    /* A bad byte does not swallow the valid character after it. */
    assert_json_c("\xE2\x82" "\xC3\xA9", "\"\\ufffd\\ufffd\xC3\xA9\"");
    /* Nor the escape after it. */
    assert_json_c("\x80\"", "\"\\ufffd\\\"\"");
}

/* Every one- and two-byte input gives a valid JSON string with exactly
 * the expected code points. */
static void test_json_output_always_valid_short_inputs(void **state)
{
    unsigned char in[2];

    (void)state;
    for (unsigned a = 0; a < 256; a++) {
        in[0] = (unsigned char)a;
        assert_round_trip(in, 1);
        for (unsigned c = 0; c < 256; c++) {
            in[1] = (unsigned char)c;
            assert_round_trip(in, 2);
        }
    }
}

/* Random byte strings biased towards UTF-8 lead and continuation bytes. */
static void test_json_output_always_valid_random(void **state)
{
    static const unsigned char pool[] = {0x00, 0x1f, '"', '\\', 'a', 0x7f, 0x80, 0xbf, 0xc2,
                                         0xc3, 0xdf, 0xe0, 0xe2, 0xed, 0xef, 0xf0, 0xf4, 0xf5,
                                         0xff, 0x9f, 0xa0, 0x8f, 0x90};
    unsigned char in[48];
    uint32_t x = 12345;

    (void)state;
    for (int iter = 0; iter < 20000; iter++) {
        size_t len;
        x = x * 1103515245u + 12345u;
        len = (x >> 16) % sizeof in;
        for (size_t i = 0; i < len; i++) {
            x = x * 1103515245u + 12345u;
            in[i] = pool[(x >> 16) % sizeof pool];
        }
        assert_round_trip(in, len);
    }
}

static void test_json_cstr_and_append(void **state)
{
    struct smq_buf b;

    (void)state;
    buf_init(&b);
    buf_puts(&b, "{\"k\":");
    json_cstr(&b, "v\"\n");
    buf_puts(&b, ",\"e\":");
    json_cstr(&b, "");
    buf_puts(&b, "}");
    assert_false(buf_failed(&b));
    assert_string_equal(b.data, "{\"k\":\"v\\\"\\n\",\"e\":\"\"}");
    buf_free(&b);
}

/* ---- numbers -------------------------------------------------------------- */

static void test_json_seconds(void **state)
{
    (void)state;
    assert_seconds(0, "0.000");
    assert_seconds(1, "0.001");
    assert_seconds(10, "0.010");
    assert_seconds(999, "0.999");
    assert_seconds(1000, "1.000");
    assert_seconds(1500, "1.500");
    assert_seconds(1234567, "1234.567");
    assert_seconds(86400000, "86400.000");
}

static void test_json_seconds_negative_and_extremes(void **state)
{
    (void)state;
    assert_seconds(-1, "-0.001");
    assert_seconds(-999, "-0.999");
    assert_seconds(-1500, "-1.500");
    assert_seconds(INT64_MAX, "9223372036854775.807");
    assert_seconds(INT64_MIN, "-9223372036854775.808");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_plain_and_empty),
        cmocka_unit_test(test_json_quote_and_backslash),
        cmocka_unit_test(test_json_control_characters),
        cmocka_unit_test(test_json_embedded_nul_and_length),
        cmocka_unit_test(test_json_valid_utf8_passes_through),
        cmocka_unit_test(test_json_invalid_utf8_replaced_per_byte),
        cmocka_unit_test(test_json_output_always_valid_short_inputs),
        cmocka_unit_test(test_json_output_always_valid_random),
        cmocka_unit_test(test_json_cstr_and_append),
        cmocka_unit_test(test_json_seconds),
        cmocka_unit_test(test_json_seconds_negative_and_extremes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
