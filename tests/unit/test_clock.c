/*
 * test_clock.c — unit tests for clock.c: the fake clock moves both readings
 * together, clock_mono_deadline adds milliseconds to CLOCK_MONOTONIC with
 * the nanoseconds carried into seconds, and a condition variable from
 * clock_mono_cond_init times out at such a deadline.
 */
#include <errno.h>
#include <pthread.h>
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

/* The two together: a timed wait on the monotonic condition variable ends
 * at the monotonic deadline (not at once, not much later). */
static void test_clock_mono_cond_times_out_at_the_deadline(void **state)
{
    pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t cond;
    struct timespec deadline;
    uint64_t t0 = clock_mono_us(), waited_ms;
    int rc;

    (void)state;
    clock_mono_cond_init(&cond);
    clock_mono_deadline(50, &deadline);
    pthread_mutex_lock(&lock);
    do
        rc = pthread_cond_timedwait(&cond, &lock, &deadline);
    while (rc == 0);                                /* spurious wake-ups */
    pthread_mutex_unlock(&lock);
    waited_ms = (clock_mono_us() - t0) / 1000;
    assert_int_equal(rc, ETIMEDOUT);
    assert_in_range(waited_ms, 50, 5000);
    pthread_cond_destroy(&cond);
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
        cmocka_unit_test(test_clock_mono_cond_times_out_at_the_deadline),
        cmocka_unit_test(test_clock_fake_moves_both_readings),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
