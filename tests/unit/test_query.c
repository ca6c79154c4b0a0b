/*
 * test_query.c — unit tests for query.c: the query string as both APIs read
 * it (a literal '+', escapes, the first '=' and the first duplicate, case-
 * insensitive names, the parameter cap) and queue names in a path segment.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "smqd/errors.h"
#include "smqd/query.h"

static void test_query_plus_stays_plus(void **state)
{
    struct query q;
    struct smq_errinfo ei = {0};

    (void)state;
    assert_int_equal(query_parse("ReceiptHandle=a+b+&x=%2B&y=x%20y&z=%2b", &q, &ei), 0);
    assert_int_equal(q.n, 4);
    assert_string_equal(query_get(&q, "ReceiptHandle"), "a+b+");
    assert_string_equal(query_get(&q, "x"), "+");
    assert_string_equal(query_get(&q, "y"), "x y");
    assert_string_equal(query_get(&q, "z"), "+");
    query_free(&q);
}

static void test_query_bad_escapes(void **state)
{
    const char *bad[] = {"a=%G1", "a=%00", "a=b%00c", "a=%", "a=%4", "a=%4g", "%zz=1", "a%00=1",
                         "ok=1&a=%1"};

    (void)state;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct query q;
        struct smq_errinfo ei = {0};
        int rc = query_parse(bad[i], &q, &ei);
        if (rc != SMQ_E_INVALID_QUERY_STRING)
            fail_msg("%s: got %d", bad[i], rc);
        assert_int_equal(ei.err, SMQ_E_INVALID_QUERY_STRING);
        query_free(&q);
    }
}

static void test_query_split_at_first_equals(void **state)
{
    struct query q;
    struct smq_errinfo ei = {0};

    (void)state;
    assert_int_equal(query_parse("ReceiptHandle=1-ODU4OTkz==&a=b=c&flag&e=", &q, &ei), 0);
    assert_int_equal(q.n, 4);
    assert_string_equal(q.names[0], "ReceiptHandle");
    assert_string_equal(q.values[0], "1-ODU4OTkz==");
    assert_string_equal(query_get(&q, "a"), "b=c");
    assert_string_equal(query_get(&q, "flag"), "");
    assert_string_equal(query_get(&q, "e"), "");
    query_free(&q);
}

static void test_query_names_case_insensitive(void **state)
{
    struct query q;
    struct smq_errinfo ei = {0};

    (void)state;
    assert_int_equal(query_parse("receiptHandle=h1&VisibilityTimeout=5&%6EumOfMessages=3", &q, &ei),
                     0);
    assert_string_equal(query_get(&q, "ReceiptHandle"), "h1");
    assert_string_equal(query_get(&q, "RECEIPTHANDLE"), "h1");
    assert_string_equal(query_get(&q, "visibilitytimeout"), "5");
    assert_string_equal(query_get(&q, "numOfMessages"), "3");   /* name decoded too */
    assert_null(query_get(&q, "waitseconds"));
    assert_null(query_get(&q, "ReceiptHandl"));
    query_free(&q);
}

static void test_query_first_duplicate_wins(void **state)
{
    struct query q;
    struct smq_errinfo ei = {0};

    (void)state;
    assert_int_equal(query_parse("a=1&A=2&&b=3", &q, &ei), 0);
    assert_int_equal(q.n, 3);                 /* the empty pair is skipped */
    assert_string_equal(query_get(&q, "a"), "1");
    assert_string_equal(query_get(&q, "b"), "3");
    query_free(&q);
}

static void test_query_utf8_value(void **state)
{
    struct query q;
    struct smq_errinfo ei = {0};

    (void)state;
    assert_int_equal(query_parse("p=%E6%B5%8B%2F%3D%26", &q, &ei), 0);
    assert_string_equal(query_get(&q, "p"), "\xe6\xb5\x8b/=&");
    query_free(&q);
}

static void build_params(char *out, size_t size, size_t n)
{
    size_t o = 0;

    out[0] = '\0';
    for (size_t i = 0; i < n; i++)
        o += (size_t)snprintf(out + o, size - o, "%sp%zu=%zu", i ? "&" : "", i, i);
}

static void test_query_too_many_params(void **state)
{
    char raw[1024];
    struct query q;
    struct smq_errinfo ei = {0};

    (void)state;
    build_params(raw, sizeof raw, QUERY_MAX_PARAMS);
    assert_int_equal(query_parse(raw, &q, &ei), 0);
    assert_int_equal(q.n, QUERY_MAX_PARAMS);
    assert_string_equal(query_get(&q, "p31"), "31");
    query_free(&q);

    build_params(raw, sizeof raw, QUERY_MAX_PARAMS + 1);
    assert_int_equal(query_parse(raw, &q, &ei), SMQ_E_INVALID_QUERY_STRING);
    assert_int_equal(ei.err, SMQ_E_INVALID_QUERY_STRING);
    query_free(&q);
}

static void test_query_empty(void **state)
{
    struct query q;
    struct smq_errinfo ei = {0};

    (void)state;
    assert_int_equal(query_parse("", &q, &ei), 0);
    assert_int_equal(q.n, 0);
    assert_null(query_get(&q, "a"));
    query_free(&q);
    assert_int_equal(query_parse(NULL, &q, &ei), 0);
    assert_int_equal(q.n, 0);
    query_free(&q);
    assert_int_equal(query_parse("&&&", &q, &ei), 0);
    assert_int_equal(q.n, 0);
    query_free(&q);
}

static int path_name(const char *raw, char out[SMQ_QUEUE_NAME_MAX + 1])
{
    struct smq_errinfo ei = {0};
    int rc = query_queue_name(raw, strlen(raw), out, &ei);

    assert_int_equal(ei.err, rc);
    return rc;
}

/* A path segment is decoded, then it must be a name; the bytes after len
 * are not read. */
static void test_query_queue_name_in_path(void **state)
{
    char name[SMQ_QUEUE_NAME_MAX + 1], raw[3 * SMQ_QUEUE_NAME_MAX + 8];
    struct smq_errinfo ei = {0};

    (void)state;
    assert_int_equal(path_name("orders", name), 0);
    assert_string_equal(name, "orders");
    assert_int_equal(path_name("%6Frders-%31", name), 0);          /* every byte may be escaped */
    assert_string_equal(name, "orders-1");
    assert_int_equal(query_queue_name("ab/messages", 2, name, &ei), 0);
    assert_string_equal(name, "ab");
    assert_int_equal(path_name("a%2Fb", name), SMQ_E_INVALID_QUEUE_NAME);   /* no hidden slash */
    assert_int_equal(path_name("a%00b", name), SMQ_E_INVALID_QUEUE_NAME);
    assert_int_equal(path_name("a%zz", name), SMQ_E_INVALID_QUEUE_NAME);
    assert_int_equal(path_name("%", name), SMQ_E_INVALID_QUEUE_NAME);
    assert_int_equal(path_name("", name), SMQ_E_QUEUE_NAME_LENGTH);
    /* 120 escaped characters decode to the longest name; one more is too long. */
    for (int i = 0; i < SMQ_QUEUE_NAME_MAX; i++)
        memcpy(raw + 3 * i, "%61", 3);
    raw[3 * SMQ_QUEUE_NAME_MAX] = '\0';
    assert_int_equal(path_name(raw, name), 0);
    assert_int_equal(strlen(name), SMQ_QUEUE_NAME_MAX);
    memcpy(raw + 3 * SMQ_QUEUE_NAME_MAX, "%61", 4);
    assert_int_equal(path_name(raw, name), SMQ_E_QUEUE_NAME_LENGTH);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_query_plus_stays_plus),
        cmocka_unit_test(test_query_bad_escapes),
        cmocka_unit_test(test_query_split_at_first_equals),
        cmocka_unit_test(test_query_names_case_insensitive),
        cmocka_unit_test(test_query_first_duplicate_wins),
        cmocka_unit_test(test_query_utf8_value),
        cmocka_unit_test(test_query_too_many_params),
        cmocka_unit_test(test_query_empty),
        cmocka_unit_test(test_query_queue_name_in_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
