/*
 * test_qname.c — unit tests for qname.c: the queue-name rule every front end
 * shares (test_api.c and test_config.c check how each one reports it).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_qname_accepts),
        cmocka_unit_test(test_qname_refuses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
