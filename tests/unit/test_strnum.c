/*
 * test_strnum.c — unit tests for the strict integer parser (strnum.c): the
 * forms it takes and refuses, the 64-bit edges, and that "not a number" and
 * "too large" are told apart.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "smqd/errors.h"
#include "smqd/strnum.h"

static int i64(const char *s, int64_t *out)
{
    return strnum_i64(s, strlen(s), out);
}

static int u64(const char *s, uint64_t *out)
{
    return strnum_u64(s, strlen(s), out);
}

static void test_strnum_i64_accepts_plain_decimals(void **state)
{
    int64_t v = 99;

    (void)state;
    assert_int_equal(i64("0", &v), 0);
    assert_int_equal(v, 0);
    assert_int_equal(i64("42", &v), 0);
    assert_int_equal(v, 42);
    assert_int_equal(i64("-7", &v), 0);
    assert_int_equal(v, -7);
    assert_int_equal(i64("-0", &v), 0);
    assert_int_equal(v, 0);
    assert_int_equal(i64("000123", &v), 0);        /* leading zeros are still decimal */
    assert_int_equal(v, 123);
}

static void test_strnum_i64_refuses_everything_else(void **state)
{
    static const char *const bad[] = {
        "", "-", "+5", " 5", "5 ", "\t5", "5\n", "5x", "x5", "0x10", "1e3", "1.0", "--1",
        "- 1", "1-", "١", "５",
    };
    int64_t v = 99;

    (void)state;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(i64(bad[i], &v), SMQ_E_INVALID_ARGUMENT);
        assert_int_equal(v, 99);                      /* untouched */
        assert_false(strnum_is_integer(bad[i], strlen(bad[i])));
    }
}

static void test_strnum_i64_edges(void **state)
{
    int64_t v = 0;

    (void)state;
    assert_int_equal(i64("9223372036854775807", &v), 0);
    assert_true(v == INT64_MAX);
    assert_int_equal(i64("-9223372036854775808", &v), 0);
    assert_true(v == INT64_MIN);
    v = 5;
    assert_int_equal(i64("9223372036854775808", &v), SMQ_E_INVALID_ARGUMENT);
    assert_int_equal(i64("-9223372036854775809", &v), SMQ_E_INVALID_ARGUMENT);
    assert_int_equal(i64("99999999999999999999", &v), SMQ_E_INVALID_ARGUMENT);
    assert_int_equal(v, 5);
    /* ... but each is an integer, only out of range. */
    assert_true(strnum_is_integer("9223372036854775808", 19));
    assert_true(strnum_is_integer("-99999999999999999999", 21));
}

static void test_strnum_length_bounds_the_text(void **state)
{
    int64_t v = 0;
    uint64_t u = 0;

    (void)state;
    /* Only len bytes count: a number inside a longer buffer, no NUL needed. */
    assert_int_equal(strnum_i64("123abc", 3, &v), 0);
    assert_int_equal(v, 123);
    assert_int_equal(strnum_u64("45;", 2, &u), 0);
    assert_int_equal(u, 45);
    /* An embedded NUL is a byte like any other. */
    assert_int_equal(strnum_i64("1\0002", 3, &v), SMQ_E_INVALID_ARGUMENT);
}

static void test_strnum_u64_digits_only(void **state)
{
    uint64_t v = 7;

    (void)state;
    assert_int_equal(u64("18446744073709551615", &v), 0);
    assert_true(v == UINT64_MAX);
    assert_int_equal(u64("0", &v), 0);
    assert_int_equal(v, 0);
    v = 7;
    assert_int_equal(u64("18446744073709551616", &v), SMQ_E_INVALID_ARGUMENT);
    assert_int_equal(u64("-0", &v), SMQ_E_INVALID_ARGUMENT);
    assert_int_equal(u64("-1", &v), SMQ_E_INVALID_ARGUMENT);
    assert_int_equal(u64("+1", &v), SMQ_E_INVALID_ARGUMENT);
    assert_int_equal(u64("", &v), SMQ_E_INVALID_ARGUMENT);
    assert_int_equal(u64("1 ", &v), SMQ_E_INVALID_ARGUMENT);
    assert_int_equal(v, 7);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strnum_i64_accepts_plain_decimals),
        cmocka_unit_test(test_strnum_i64_refuses_everything_else),
        cmocka_unit_test(test_strnum_i64_edges),
        cmocka_unit_test(test_strnum_length_bounds_the_text),
        cmocka_unit_test(test_strnum_u64_digits_only),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
