/*
 * test_clock.c — unit tests for clock.c: the fake clock moves both readings
 * together, and clock_mono_deadline adds milliseconds to CLOCK_MONOTONIC
 * with the nanoseconds carried into seconds.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include "smqd/clock.h"

static int64_t ns_of(const struct timespec *ts)
{
    return (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec;
}

static void test_clock_mono_deadline_adds_and_normalises(void **state)
{
    static const uint64_t cases_ms[] = {0, 1, 999, 1000, 1001, 2500, 86400000};

    (void)state;
    for (size_t i = 0; i < sizeof cases_ms / sizeof cases_ms[0]; i++) {
        struct timespec before, deadline, after;
        int64_t want = (int64_t)cases_ms[i] * 1000000;

        clock_gettime(CLOCK_MONOTONIC, &before);
        clock_mono_deadline(cases_ms[i], &deadline);
        clock_gettime(CLOCK_MONOTONIC, &after);
        assert_in_range(deadline.tv_nsec, 0, 999999999);
        assert_true(ns_of(&deadline) - ns_of(&before) >= want);
        assert_true(ns_of(&deadline) - ns_of(&after) <= want);
    }
}

static void test_clock_fake_moves_both_readings(void **state)
{
    struct smq_fake_clock fake;

    (void)state;
    clock_fake_init(&fake, 100, 1700000000000);
    clock_fake_advance(&fake, 250);
    assert_int_equal(clock_mono_ms(&fake.clock), 350);
    assert_int_equal(clock_epoch_ms(&fake.clock), 1700000000250);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_clock_mono_deadline_adds_and_normalises),
        cmocka_unit_test(test_clock_fake_moves_both_readings),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
