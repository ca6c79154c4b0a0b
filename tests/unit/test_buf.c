/*
 * test_buf.c — unit tests for buf.c: append, puts, printf and i64 (both
 * int64 extremes), NUL termination, take (ownership moves, buffer left
 * empty and reusable), reset (length 0, memory kept), reserve (one
 * allocation, appends in place) and growth past several KB with the
 * contents intact.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "smqd/buf.h"

static void assert_buf_is(const struct smq_buf *b, const char *want)
{
    assert_false(buf_failed(b));
    assert_int_equal(b->len, strlen(want));
    assert_non_null(b->data);
    assert_memory_equal(b->data, want, b->len);
    assert_int_equal(b->data[b->len], '\0');
    assert_true(b->cap > b->len);
}

static void test_buf_init_is_empty(void **state)
{
    struct smq_buf b;

    (void)state;
    buf_init(&b);
    assert_null(b.data);
    assert_int_equal(b.len, 0);
    assert_int_equal(b.cap, 0);
    assert_false(buf_failed(&b));
    buf_free(&b);
}

static void test_buf_append_and_puts(void **state)
{
    struct smq_buf b;

    (void)state;
    buf_init(&b);
    buf_append(&b, "abc", 3);
    buf_append(&b, "defXYZ", 3);
    buf_puts(&b, "-gh");
    assert_buf_is(&b, "abcdef-gh");
    buf_free(&b);
    assert_null(b.data);
    assert_int_equal(b.len, 0);
}

/* A reservation is one allocation: appends up to it do not move the data. */
static void test_buf_reserve_then_append_in_place(void **state)
{
    struct smq_buf b;
    char chunk[100];
    const char *where;

    (void)state;
    memset(chunk, 'x', sizeof chunk);
    buf_init(&b);
    buf_reserve(&b, 0);                        /* nothing asked: nothing allocated */
    assert_null(b.data);
    buf_reserve(&b, 5000);
    assert_false(buf_failed(&b));
    assert_true(b.cap >= 5001);
    assert_int_equal(b.len, 0);
    assert_string_equal(b.data, "");           /* allocated memory is terminated */
    where = b.data;
    for (int i = 0; i < 50; i++)
        buf_append(&b, chunk, sizeof chunk);
    assert_ptr_equal(b.data, where);
    assert_int_equal(b.len, 5000);
    assert_int_equal(b.data[5000], '\0');
    buf_reserve(&b, 0);                        /* nothing more needed: no change */
    assert_ptr_equal(b.data, where);
    buf_reserve(&b, SIZE_MAX / 2);             /* impossible: marked failed */
    assert_true(buf_failed(&b));
    buf_free(&b);
}

static void test_buf_append_zero_bytes_terminates(void **state)
{
    struct smq_buf b;

    (void)state;
    buf_init(&b);
    buf_append(&b, "", 0);
    assert_buf_is(&b, "");
    buf_free(&b);
}

static void test_buf_append_binary_with_nul(void **state)
{
    struct smq_buf b;

    (void)state;
    buf_init(&b);
    buf_append(&b, "a\0b", 3);
    assert_int_equal(b.len, 3);
    assert_memory_equal(b.data, "a\0b", 4);
    buf_free(&b);
}

static void test_buf_printf(void **state)
{
    struct smq_buf b;

    (void)state;
    buf_init(&b);
    buf_puts(&b, "<");
    buf_printf(&b, "%s=%d;%05.1f|%x", "n", -42, 3.14159, 255u);
    buf_printf(&b, "%s", "");
    buf_puts(&b, ">");
    assert_buf_is(&b, "<n=-42;003.1|ff>");
    buf_free(&b);
}

static void test_buf_printf_large(void **state)
{
    struct smq_buf b;
    char big[5000];

    (void)state;
    memset(big, 'q', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    buf_init(&b);
    buf_puts(&b, "x");
    buf_printf(&b, "[%s]", big);
    assert_int_equal(b.len, 1 + 1 + 4999 + 1);
    assert_int_equal(b.data[0], 'x');
    assert_int_equal(b.data[1], '[');
    assert_int_equal(b.data[5000], 'q');
    assert_int_equal(b.data[5001], ']');
    assert_int_equal(b.data[5002], '\0');
    buf_free(&b);
}

static void test_buf_i64(void **state)
{
    struct smq_buf b;

    (void)state;
    buf_init(&b);
    buf_append_i64(&b, 0);
    buf_puts(&b, ",");
    buf_append_i64(&b, -1);
    buf_puts(&b, ",");
    buf_append_i64(&b, INT64_C(1716809414944));
    buf_puts(&b, ",");
    buf_append_i64(&b, INT64_MAX);
    buf_puts(&b, ",");
    buf_append_i64(&b, INT64_MIN);
    assert_buf_is(&b, "0,-1,1716809414944,9223372036854775807,-9223372036854775808");
    buf_free(&b);
}

static void test_buf_take_moves_ownership(void **state)
{
    struct smq_buf b;
    size_t len = 99;
    char *p;

    (void)state;
    buf_init(&b);
    buf_puts(&b, "hello");
    p = buf_take(&b, &len);
    assert_string_equal(p, "hello");
    assert_int_equal(len, 5);
    assert_null(b.data);
    assert_int_equal(b.len, 0);
    assert_int_equal(b.cap, 0);
    /* The buffer is reusable and independent of the taken memory. */
    buf_puts(&b, "again");
    assert_buf_is(&b, "again");
    assert_string_equal(p, "hello");
    free(p);
    buf_free(&b);
}

static void test_buf_take_null_len_and_empty(void **state)
{
    struct smq_buf b;
    size_t len = 7;

    (void)state;
    buf_init(&b);
    assert_null(buf_take(&b, &len));
    assert_int_equal(len, 0);
    buf_puts(&b, "x");
    free(buf_take(&b, NULL));
    assert_null(b.data);
}

static void test_buf_reset_keeps_memory(void **state)
{
    struct smq_buf b;
    char *before;
    size_t cap;

    (void)state;
    buf_init(&b);
    for (int i = 0; i < 100; i++)
        buf_puts(&b, "0123456789");
    before = b.data;
    cap = b.cap;
    buf_reset(&b);
    assert_int_equal(b.len, 0);
    assert_ptr_equal(b.data, before);
    assert_int_equal(b.cap, cap);
    assert_int_equal(b.data[0], '\0');
    buf_puts(&b, "z");
    assert_buf_is(&b, "z");
    assert_ptr_equal(b.data, before);
    buf_free(&b);
}

static void test_buf_reset_on_empty(void **state)
{
    struct smq_buf b;

    (void)state;
    buf_init(&b);
    buf_reset(&b);
    assert_null(b.data);
    assert_int_equal(b.len, 0);
    buf_free(&b);
}

static void test_buf_growth_several_kb(void **state)
{
    struct smq_buf b;
    const size_t total = 20000;

    (void)state;
    buf_init(&b);
    /* Mixed-size appends so growth happens at unaligned points. */
    for (size_t i = 0; b.len < total; i++) {
        char chunk[64];
        size_t n = 1 + i % 37;
        for (size_t k = 0; k < n; k++)
            chunk[k] = (char)('a' + (b.len + k) % 26);
        buf_append(&b, chunk, n);
    }
    assert_false(buf_failed(&b));
    assert_true(b.cap > b.len);
    assert_int_equal(b.data[b.len], '\0');
    for (size_t i = 0; i < b.len; i++)
        assert_int_equal(b.data[i], 'a' + (int)(i % 26));
    buf_free(&b);
}

static void test_buf_growth_one_big_append(void **state)
{
    struct smq_buf b;
    size_t n = 70000;
    char *big = malloc(n);

    (void)state;
    assert_non_null(big);
    for (size_t i = 0; i < n; i++)
        big[i] = (char)('0' + i % 10);
    buf_init(&b);
    buf_puts(&b, "head:");
    buf_append(&b, big, n);
    assert_int_equal(b.len, 5 + n);
    assert_memory_equal(b.data, "head:", 5);
    assert_memory_equal(b.data + 5, big, n);
    assert_int_equal(b.data[b.len], '\0');
    free(big);
    buf_free(&b);
}

static void test_buf_oversized_request_fails_once(void **state)
{
    struct smq_buf b;

    (void)state;
    buf_init(&b);
    buf_puts(&b, "ok");
    /* A length no allocator can satisfy: the buffer is marked failed
     * (no copy is attempted), and later appends are ignored. */
    buf_append(&b, "", SIZE_MAX / 2);
    assert_true(buf_failed(&b));
    assert_int_equal(b.len, 2);
    buf_puts(&b, "more");
    assert_int_equal(b.len, 2);
    assert_true(buf_failed(&b));
    buf_reset(&b);
    assert_false(buf_failed(&b));
    buf_puts(&b, "fresh");
    assert_buf_is(&b, "fresh");
    buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_buf_init_is_empty),
        cmocka_unit_test(test_buf_append_and_puts),
        cmocka_unit_test(test_buf_append_zero_bytes_terminates),
        cmocka_unit_test(test_buf_reserve_then_append_in_place),
        cmocka_unit_test(test_buf_append_binary_with_nul),
        cmocka_unit_test(test_buf_printf),
        cmocka_unit_test(test_buf_printf_large),
        cmocka_unit_test(test_buf_i64),
        cmocka_unit_test(test_buf_take_moves_ownership),
        cmocka_unit_test(test_buf_take_null_len_and_empty),
        cmocka_unit_test(test_buf_reset_keeps_memory),
        cmocka_unit_test(test_buf_reset_on_empty),
        cmocka_unit_test(test_buf_growth_several_kb),
        cmocka_unit_test(test_buf_growth_one_big_append),
        cmocka_unit_test(test_buf_oversized_request_fails_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
