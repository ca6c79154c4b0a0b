/*
 * test_role.c — unit tests for role.c: the role gate's decision with a fake
 * monotonic time (the caller passes now_us, so no sleeping).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "smqd/role.h"

static void test_standby_never_serves(void **state)
{
    struct smq_role r;

    (void)state;
    role_init(&r);
    assert_int_equal(role_state(&r), SMQ_ROLE_STANDBY);
    assert_false(role_serving(&r, 0));
    assert_false(role_serving(&r, 1000000));
}

static void test_active_serves_until_proof_runs_out(void **state)
{
    struct smq_role r;

    (void)state;
    role_init(&r);
    role_activate(&r, 7, 3, 5000000);
    assert_int_equal(role_state(&r), SMQ_ROLE_ACTIVE);
    assert_int_equal(role_epoch(&r), 7);
    assert_int_equal(role_takeovers(&r), 3);
    assert_true(role_serving(&r, 4999999));
    /* No renewal came: at the proven-until instant the node stops serving
     * although its state still says ACTIVE (a main thread stuck in libpq). */
    assert_false(role_serving(&r, 5000000));
    assert_int_equal(role_state(&r), SMQ_ROLE_ACTIVE);
}

static void test_prove_moves_forward_only(void **state)
{
    struct smq_role r;

    (void)state;
    role_init(&r);
    role_activate(&r, 1, 0, 5000000);
    role_prove(&r, 9000000);
    assert_true(role_serving(&r, 8999999));
    role_prove(&r, 6000000);    /* a late, older proof must not shorten it */
    assert_true(role_serving(&r, 8999999));
    assert_false(role_serving(&r, 9000000));
}

static void test_demote_stops_at_once(void **state)
{
    struct smq_role r;

    (void)state;
    role_init(&r);
    role_activate(&r, 2, 1, 5000000);
    role_demote(&r);
    assert_int_equal(role_state(&r), SMQ_ROLE_STANDBY);
    assert_false(role_serving(&r, 1));
    role_activate(&r, 3, 2, 10000000);   /* a new term serves on its own proof */
    assert_true(role_serving(&r, 9000000));
    assert_int_equal(role_epoch(&r), 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_standby_never_serves),
        cmocka_unit_test(test_active_serves_until_proof_runs_out),
        cmocka_unit_test(test_prove_moves_forward_only),
        cmocka_unit_test(test_demote_stops_at_once),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
