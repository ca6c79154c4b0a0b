/*
 * test_qname.c — unit tests for qname.c: the queue-name rule every front end
 * shares, and the MNS error each problem is (test_config.c checks how the
 * configuration reports it).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "smqd/errors.h"
#include "smqd/qname.h"

static enum qname_problem check(const char *name)
{
    return qname_check(name, strlen(name));
}

static void test_qname_accepts(void **state)
{
    char longest[SMQ_QUEUE_NAME_MAX + 1];

    (void)state;
    memset(longest, 'a', SMQ_QUEUE_NAME_MAX);
    longest[SMQ_QUEUE_NAME_MAX] = '\0';
    assert_int_equal(check("q"), QNAME_OK);
    assert_int_equal(check("0rders-dlq-"), QNAME_OK);
    assert_int_equal(check("ABCxyz09"), QNAME_OK);
    assert_int_equal(check(longest), QNAME_OK);
    assert_string_equal(qname_problem_text(QNAME_OK), "");
}

static void test_qname_refuses(void **state)
{
    char too_long[SMQ_QUEUE_NAME_MAX + 2];

    (void)state;
    memset(too_long, 'a', SMQ_QUEUE_NAME_MAX + 1);
    too_long[SMQ_QUEUE_NAME_MAX + 1] = '\0';
    assert_int_equal(check(""), QNAME_LENGTH);
    assert_int_equal(check(too_long), QNAME_LENGTH);
    assert_int_equal(check("-a"), QNAME_FIRST_CHAR);
    assert_int_equal(check("_a"), QNAME_FIRST_CHAR);
    assert_int_equal(check("a_b"), QNAME_CHARS);
    assert_int_equal(check("a.b"), QNAME_CHARS);
    assert_int_equal(check("a b"), QNAME_CHARS);
    assert_int_equal(check("caf\xc3\xa9"), QNAME_CHARS);     /* ASCII only */
    assert_int_equal(qname_check("ab\0c", 4), QNAME_CHARS);   /* raw bytes: a NUL counts */
    assert_non_null(strstr(qname_problem_text(QNAME_LENGTH), "1 to 120"));
    assert_non_null(strstr(qname_problem_text(QNAME_FIRST_CHAR), "start with"));
    assert_non_null(strstr(qname_problem_text(QNAME_CHARS), "letters, digits and '-'"));
}

static int check_name(const char *name)
{
    struct smq_errinfo ei = {0};
    int rc = qname_check_err(name, strlen(name), &ei);

    assert_int_equal(ei.err, rc);
    return rc;
}

static void test_qname_err_lengths(void **state)
{
    char name[200];

    (void)state;
    assert_int_equal(check_name("a"), 0);
    assert_int_equal(check_name("7"), 0);
    memset(name, 'q', 120);
    name[120] = '\0';
    assert_int_equal(check_name(name), 0);
    name[120] = 'q';
    name[121] = '\0';
    assert_int_equal(check_name(name), SMQ_E_QUEUE_NAME_LENGTH);
    assert_int_equal(check_name(""), SMQ_E_QUEUE_NAME_LENGTH);
}

static void test_qname_err_characters(void **state)
{
    const char *bad[] = {"-abc", "a_b", "a.b", "a/b", "_a", ".a", "/a", "a b", "a%2F", "ab\xc3\xa9",
                         "a+b", "..", "a:b"};

    (void)state;
    assert_int_equal(check_name("Queue-1-x"), 0);
    assert_int_equal(check_name("0-"), 0);
    assert_int_equal(check_name("ABCxyz0123456789"), 0);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (check_name(bad[i]) != SMQ_E_INVALID_QUEUE_NAME)
            fail_msg("\"%s\" accepted", bad[i]);
}

static void test_qname_err_embedded_nul(void **state)
{
    struct smq_errinfo ei = {0};

    (void)state;
    assert_int_equal(qname_check_err("ab\0c", 4, &ei), SMQ_E_INVALID_QUEUE_NAME);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_qname_accepts),
        cmocka_unit_test(test_qname_refuses),
        cmocka_unit_test(test_qname_err_lengths),
        cmocka_unit_test(test_qname_err_characters),
        cmocka_unit_test(test_qname_err_embedded_nul),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
