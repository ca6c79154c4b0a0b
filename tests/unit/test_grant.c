/*
 * test_grant.c — the grant matcher and its parsers (grant.h): exact names,
 * prefixes, "*", the union of several grants, case and trailing-character
 * near misses, and the lists a configuration may not hold.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "smqd/errors.h"
#include "smqd/grant.h"

/* A set of one grant: queues and classes as a configuration writes them. */
static void add(struct grant_set *set, const char *queues, const char *classes)
{
    struct grant g = {NULL, 0, 0};
    char why[200];

    if (grant_parse_queues(queues, &g, why, sizeof why) != 0)
        fail_msg("queues \"%s\": %s", queues, why);
    if (grant_parse_classes(classes, &g.classes, why, sizeof why) != 0)
        fail_msg("classes \"%s\": %s", classes, why);
    assert_int_equal(grant_set_add(set, &g), 0);
    assert_null(g.patterns);
}

static void test_grant_exact_names(void **state)
{
    struct grant_set set = {NULL, 0};

    (void)state;
    add(&set, "orders, billing", "send");
    assert_true(grant_allows(&set, "orders", GRANT_SEND));
    assert_true(grant_allows(&set, "billing", GRANT_SEND));
    /* Case, a character more or less: another queue. */
    assert_false(grant_allows(&set, "Orders", GRANT_SEND));
    assert_false(grant_allows(&set, "orders1", GRANT_SEND));
    assert_false(grant_allows(&set, "order", GRANT_SEND));
    assert_false(grant_allows(&set, "billing-", GRANT_SEND));
    assert_false(grant_allows(&set, "", GRANT_SEND));
    /* Only the classes it names. */
    assert_false(grant_allows(&set, "orders", GRANT_RECEIVE));
    assert_false(grant_allows(&set, "orders", GRANT_MANAGE));
    assert_false(grant_allows(&set, "orders", GRANT_LIST));
    grant_set_free(&set);
}

static void test_grant_prefixes(void **state)
{
    struct grant_set set = {NULL, 0};

    (void)state;
    add(&set, "orders*, team-b-*", "receive");
    /* A prefix that is a whole name matches that name too. */
    assert_true(grant_allows(&set, "orders", GRANT_RECEIVE));
    assert_true(grant_allows(&set, "orders-eu", GRANT_RECEIVE));
    assert_true(grant_allows(&set, "ordersX", GRANT_RECEIVE));
    assert_true(grant_allows(&set, "team-b-1", GRANT_RECEIVE));
    /* "team-b-*" is not "team-b": the '-' is part of the prefix. */
    assert_false(grant_allows(&set, "team-b", GRANT_RECEIVE));
    assert_false(grant_allows(&set, "team-bb", GRANT_RECEIVE));
    assert_false(grant_allows(&set, "Orders-eu", GRANT_RECEIVE));
    assert_false(grant_allows(&set, "order", GRANT_RECEIVE));
    assert_false(grant_allows(&set, "xorders", GRANT_RECEIVE));
    grant_set_free(&set);
}

static void test_grant_star_is_every_queue(void **state)
{
    struct grant_set set = {NULL, 0};

    (void)state;
    add(&set, "*", "list");
    assert_true(grant_allows(&set, "a", GRANT_LIST));
    assert_true(grant_allows(&set, "Z-120-chars", GRANT_LIST));
    assert_false(grant_allows(&set, "a", GRANT_SEND));
    assert_true(grant_gives_any(&set, GRANT_LIST));
    assert_false(grant_gives_any(&set, GRANT_SEND));
    grant_set_free(&set);
}

/* Several grants add up; none takes anything away. */
static void test_grant_union(void **state)
{
    struct grant_set set = {NULL, 0};

    (void)state;
    add(&set, "orders-*", "send, receive");
    add(&set, "orders-eu", "manage");
    add(&set, "*", "list");
    assert_true(grant_allows(&set, "orders-eu", GRANT_MANAGE));
    assert_true(grant_allows(&set, "orders-eu", GRANT_SEND));
    assert_false(grant_allows(&set, "orders-us", GRANT_MANAGE));
    assert_true(grant_allows(&set, "orders-us", GRANT_RECEIVE));
    assert_true(grant_allows(&set, "billing", GRANT_LIST));
    assert_false(grant_allows(&set, "billing", GRANT_RECEIVE));
    assert_true(grant_gives_any(&set, GRANT_MANAGE));
    grant_set_free(&set);
    assert_int_equal(set.n, 0);
}

/* No set at all is a key without grant sections: everything. */
static void test_grant_no_set_allows_all(void **state)
{
    (void)state;
    assert_true(grant_allows(NULL, "anything", GRANT_MANAGE));
    assert_true(grant_gives_any(NULL, GRANT_LIST));
}

/* Where a walk over sorted names may skip to after a refused name. */
static void test_grant_next_start(void **state)
{
    struct grant_set set = {NULL, 0};

    (void)state;
    add(&set, "d*, b", "list");
    add(&set, "a", "send");
    assert_string_equal(grant_next_start(&set, GRANT_LIST, ""), "b");
    assert_string_equal(grant_next_start(&set, GRANT_LIST, "a"), "b");
    assert_string_equal(grant_next_start(&set, GRANT_LIST, "b"), "d");
    assert_string_equal(grant_next_start(&set, GRANT_LIST, "c-long-name"), "d");
    /* Past every pattern's start: nothing further can be listed. */
    assert_null(grant_next_start(&set, GRANT_LIST, "e"));
    assert_null(grant_next_start(&set, GRANT_LIST, "d"));
    /* Other classes' patterns do not count. */
    assert_string_equal(grant_next_start(&set, GRANT_SEND, ""), "a");
    assert_null(grant_next_start(&set, GRANT_SEND, "a"));
    assert_null(grant_next_start(NULL, GRANT_LIST, "a"));
    grant_set_free(&set);
}

static void expect_bad_queues(const char *text, const char *needle)
{
    struct grant g = {NULL, 0, 0};
    char why[200] = "";

    assert_int_equal(grant_parse_queues(text, &g, why, sizeof why), SMQ_E_INVALID_ARGUMENT);
    if (strstr(why, needle) == NULL)
        fail_msg("queues \"%s\": expected \"%s\" in \"%s\"", text, needle, why);
    assert_null(g.patterns);
}

static void test_grant_bad_queue_lists(void **state)
{
    char long_name[300];

    (void)state;
    expect_bad_queues("", "an empty queue pattern");
    expect_bad_queues("a,", "an empty queue pattern");
    expect_bad_queues(", a", "an empty queue pattern");
    expect_bad_queues("a, , b", "an empty queue pattern");
    expect_bad_queues("a*b", "\"a*b\": a '*' may only end a pattern");
    expect_bad_queues("*a", "a '*' may only end a pattern");
    expect_bad_queues("a**", "a '*' may only end a pattern");
    expect_bad_queues("a_b", "\"a_b\":");
    expect_bad_queues("-a", "\"-a\":");
    expect_bad_queues("a b", "\"a b\":");
    memset(long_name, 'a', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';
    expect_bad_queues(long_name, "longer than a queue name can be");
}

static void test_grant_bad_class_lists(void **state)
{
    unsigned classes = 77;
    char why[200];

    (void)state;
    assert_int_equal(grant_parse_classes("send, fly", &classes, why, sizeof why),
                     SMQ_E_INVALID_ARGUMENT);
    assert_string_equal(why, "unknown action \"fly\" (known: manage, send, receive, list)");
    assert_int_equal(grant_parse_classes("SEND", &classes, why, sizeof why), SMQ_E_INVALID_ARGUMENT);
    assert_int_equal(grant_parse_classes("", &classes, why, sizeof why), SMQ_E_INVALID_ARGUMENT);
    assert_non_null(strstr(why, "an empty action"));
    assert_int_equal(grant_parse_classes("send,", &classes, why, sizeof why), SMQ_E_INVALID_ARGUMENT);
    assert_int_equal(grant_parse_classes("sendreceive", &classes, why, sizeof why),
                     SMQ_E_INVALID_ARGUMENT);
    assert_int_equal(classes, 77);   /* untouched by a failure */
    assert_int_equal(grant_parse_classes(" list ,manage,list", &classes, why, sizeof why), 0);
    assert_int_equal(classes, GRANT_LIST | GRANT_MANAGE);
}

static void test_grant_format(void **state)
{
    struct grant_set set = {NULL, 0};
    char out[64], tiny[12];

    (void)state;
    add(&set, " orders-* ,billing,*", "receive, send");
    grant_format_queues(&set.grants[0], out, sizeof out);
    assert_string_equal(out, "orders-*,billing,*");
    grant_format_classes(set.grants[0].classes, out, sizeof out);
    assert_string_equal(out, "send, receive");           /* in the table's order */
    grant_format_queues(&set.grants[0], tiny, sizeof tiny);
    assert_string_equal(tiny, "orders-*...");            /* cut, and says so */
    assert_string_equal(grant_class_name(GRANT_MANAGE), "manage");
    assert_string_equal(grant_class_name(GRANT_SEND | GRANT_LIST), "-");
    grant_set_free(&set);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grant_exact_names),
        cmocka_unit_test(test_grant_prefixes),
        cmocka_unit_test(test_grant_star_is_every_queue),
        cmocka_unit_test(test_grant_union),
        cmocka_unit_test(test_grant_no_set_allows_all),
        cmocka_unit_test(test_grant_next_start),
        cmocka_unit_test(test_grant_bad_queue_lists),
        cmocka_unit_test(test_grant_bad_class_lists),
        cmocka_unit_test(test_grant_format),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
