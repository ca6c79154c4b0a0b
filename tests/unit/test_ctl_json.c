/*
 * test_ctl_json.c — unit tests for smqctl's JSON reader (src/ctl/ctl_json.c):
 * the documents the admin API sends, escapes and surrogate pairs, numbers
 * kept as written, and refusal of everything RFC 8259 does not allow
 * (including nesting deeper than CJ_MAX_DEPTH), with no leak on any path;
 * and the joining of a listing's pages and their writing out again.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ctl_json.h"
#include "smqd/errors.h"

static void test_ctl_json_admin_document(void **state)
{
    static const char doc[] =
        " {\"queues\":[{\"name\":\"orders\",\"active\":3,\"oldest_age_s\":12.500,"
        "\"attributes\":{\"DlqEnabled\":true,\"DlqTargetQueue\":\"orders-dlq\"},"
        "\"counters\":{\"sent\":18446744073709551615}},{\"name\":\"b\",\"x\":null}]}\n";
    struct cj_value v;
    char err[128];
    const struct cj_value *qs, *attrs;
    uint64_t n = 0;

    (void)state;
    assert_int_equal(cj_parse(doc, strlen(doc), &v, err, sizeof err), 0);
    qs = cj_get(&v, "queues");
    assert_non_null(qs);
    assert_int_equal(qs->type, CJ_ARRAY);
    assert_int_equal(qs->n, 2);
    assert_string_equal(cj_text(&qs->items[0], "name", NULL), "orders");
    assert_string_equal(cj_text(&qs->items[0], "oldest_age_s", NULL), "12.500");
    assert_true(cj_u64(&qs->items[0], "active", &n));
    assert_int_equal(n, 3);
    assert_true(cj_u64(cj_get(&qs->items[0], "counters"), "sent", &n));
    assert_true(n == UINT64_MAX);
    attrs = cj_get(&qs->items[0], "attributes");
    assert_true(cj_get(attrs, "DlqEnabled")->boolean);
    assert_string_equal(cj_text(attrs, "DlqEnabled", NULL), "true");
    assert_int_equal(cj_get(&qs->items[1], "x")->type, CJ_NULL);
    assert_null(cj_get(&qs->items[1], "missing"));
    assert_false(cj_u64(&qs->items[0], "name", &n));
    assert_null(cj_get(qs, "name"));          /* not an object */
    cj_free(&v);
}

static void test_ctl_json_strings(void **state)
{
    static const char doc[] = "\"a\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00fc\\u0000\\ud83d\\ude00z\"";
    static const char want[] = "a\"\\/\b\f\n\r\t\xc3\xbc\0\xf0\x9f\x98\x80z";
    struct cj_value v;
    char err[128];

    (void)state;
    assert_int_equal(cj_parse(doc, strlen(doc), &v, err, sizeof err), 0);
    assert_int_equal(v.type, CJ_STRING);
    assert_int_equal(v.len, sizeof want - 1);
    assert_memory_equal(v.text, want, sizeof want - 1);
    cj_free(&v);
}

static void test_ctl_json_refuses(void **state)
{
    static const char *const bad[] = {
        "", " ", "{", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "{a:1}", "01", "1.", "-", "1e",
        "+1", "NaN", "tru", "\"abc", "\"\\x\"", "\"\\u12\"", "\"\\ud800\"", "\"\\udc00\"",
        "\"a\nb\"", "[1] 2", "{\"a\":1}}", "nul", "[\"\\ud800\\u0041\"]",
    };
    struct cj_value v;
    char err[128];

    (void)state;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (cj_parse(bad[i], strlen(bad[i]), &v, err, sizeof err) != SMQ_E_INVALID_ARGUMENT)
            fail_msg("accepted: %s", bad[i]);
        assert_true(strncmp(err, "offset ", 7) == 0);
        cj_free(&v);
    }
}

static void test_ctl_json_depth(void **state)
{
    char doc[2 * (CJ_MAX_DEPTH + 2) + 1];
    struct cj_value v;
    char err[128];
    size_t n;

    (void)state;
    for (n = 0; n < CJ_MAX_DEPTH; n++)
        doc[n] = '[';
    for (size_t i = 0; i < CJ_MAX_DEPTH; i++)
        doc[n++] = ']';
    assert_int_equal(cj_parse(doc, n, &v, err, sizeof err), 0);
    cj_free(&v);
    for (n = 0; n <= CJ_MAX_DEPTH; n++)
        doc[n] = '[';
    for (size_t i = 0; i <= CJ_MAX_DEPTH; i++)
        doc[n++] = ']';
    assert_int_equal(cj_parse(doc, n, &v, err, sizeof err), SMQ_E_INVALID_ARGUMENT);
    assert_non_null(strstr(err, "nested too deeply"));
    cj_free(&v);
}

/* cj_write of v as a string (freed by the caller). */
static char *written(const struct cj_value *v)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);

    assert_non_null(out);
    cj_write(out, v);
    fclose(out);
    return text;
}

/* What smqctl does with the pages of a topic listing: join, count, write. */
static void test_ctl_json_join_pages_and_write(void **state)
{
    static const char page1[] = "{\"topics\":[{\"name\":\"a\",\"attributes\":"
                                "{\"MaximumMessageSize\":65536,\"LoggingEnabled\":false}}],"
                                "\"next_marker\":\"b\"}";
    static const char page2[] = "{\"topics\":[{\"name\":\"b\\\"q\\u0001\u00fc\"},"
                                "{\"name\":\"c\",\"x\":[null,true,-1.5e3]}],"
                                "\"next_marker\":\"\"}";
    struct cj_value d1, d2, again;
    char err[128], *text;

    (void)state;
    assert_int_equal(cj_parse(page1, strlen(page1), &d1, err, sizeof err), 0);
    assert_int_equal(cj_parse(page2, strlen(page2), &d2, err, sizeof err), 0);
    assert_int_equal(cj_array_take(cj_get_mut(&d1, "topics"), cj_get_mut(&d2, "topics")), 0);
    assert_int_equal(cj_get(&d1, "topics")->n, 3);
    assert_int_equal(cj_get(&d2, "topics")->n, 0);  /* moved, not copied */
    cj_free(&d2);                                   /* frees nothing d1 still holds */
    assert_int_equal(cj_array_take(cj_get_mut(&d1, "topics"), cj_get_mut(&d1, "next_marker")),
                     SMQ_E_INVALID_ARGUMENT);

    text = written(cj_get(&d1, "topics"));
    assert_string_equal(text, "[{\"name\":\"a\",\"attributes\":{\"MaximumMessageSize\":65536,"
                              "\"LoggingEnabled\":false}},"
                              "{\"name\":\"b\\\"q\\u0001\xc3\xbc\"},"
                              "{\"name\":\"c\",\"x\":[null,true,-1.5e3]}]");
    /* What is written reads back as the same values. */
    assert_int_equal(cj_parse(text, strlen(text), &again, err, sizeof err), 0);
    assert_int_equal(again.n, 3);
    assert_string_equal(cj_text(&again.items[1], "name", NULL), "b\"q\x01\xc3\xbc");
    assert_string_equal(cj_text(&again.items[0], "name", NULL), "a");
    cj_free(&again);
    free(text);
    cj_free(&d1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ctl_json_admin_document),
        cmocka_unit_test(test_ctl_json_strings),
        cmocka_unit_test(test_ctl_json_refuses),
        cmocka_unit_test(test_ctl_json_depth),
        cmocka_unit_test(test_ctl_json_join_pages_and_write),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
