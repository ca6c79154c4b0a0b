/*
 * test_worker.c — unit tests for smqd's own threads (src/base/worker.c): start
 * and stop (the stop wakes a waiting thread and joins it), worker_wait
 * timing out (a real 20 ms wait, the one place a test waits on the clock)
 * and returning true when signalled, with and without a timeout, the
 * thread's name, and stop without start being harmless.  Shared flags are
 * guarded by the worker's own lock, as its owners do.
 */
#define _GNU_SOURCE       /* pthread_getname_np */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "smqd/clock.h"
#include "smqd/worker.h"

/* What a test thread and the test share; every field under w.lock. */
struct shared {
    struct worker w;
    bool waiting;            /* the thread is inside worker_wait */
    bool go;                 /* the test lets the thread continue */
    bool result;             /* what worker_wait returned */
    bool exited;             /* the thread ran to its end */
    uint64_t timeout_ms;     /* for wait_once */
    char name[32];           /* the thread's name as it sees it */
};

static int setup(void **state)
{
    static struct shared s;

    memset(&s, 0, sizeof s);
    worker_init(&s.w);
    *state = &s;
    return 0;
}

static int teardown(void **state)
{
    struct shared *s = *state;

    worker_stop(&s->w);
    worker_destroy(&s->w);
    return 0;
}

/* Reads a flag under the lock. */
static bool get_flag(struct shared *s, const bool *flag)
{
    bool v;

    pthread_mutex_lock(&s->w.lock);
    v = *flag;
    pthread_mutex_unlock(&s->w.lock);
    return v;
}

/* Spins (yielding) until the thread is inside worker_wait: it set
 * `waiting` under the lock and the wait released it atomically, so a
 * signal from now on cannot be missed. */
static void await_waiting(struct shared *s)
{
    while (!get_flag(s, &s->waiting) && !get_flag(s, &s->exited))
        sched_yield();
}

/* Waits until stopping, then records that it got there. */
static void *until_stopped(void *arg)
{
    struct shared *s = arg;

    pthread_mutex_lock(&s->w.lock);
    while (!s->w.stopping) {
        s->waiting = true;
        worker_wait(&s->w, UINT64_MAX);
    }
    s->exited = true;
    pthread_mutex_unlock(&s->w.lock);
    return NULL;
}

/* One worker_wait with s->timeout_ms; its result in s->result. */
static void *wait_once(void *arg)
{
    struct shared *s = arg;

    pthread_mutex_lock(&s->w.lock);
    s->waiting = true;
    s->result = worker_wait(&s->w, s->timeout_ms);
    s->waiting = false;
    s->exited = true;
    pthread_mutex_unlock(&s->w.lock);
    return NULL;
}

/* Waits for `go`, then reads its own name. */
static void *read_name(void *arg)
{
    struct shared *s = arg;

    pthread_mutex_lock(&s->w.lock);
    while (!s->go)
        worker_wait(&s->w, UINT64_MAX);
    pthread_getname_np(pthread_self(), s->name, sizeof s->name);
    s->exited = true;
    pthread_mutex_unlock(&s->w.lock);
    return NULL;
}

/* ---- tests ----------------------------------------------------------------- */

/* worker_stop sets stopping, wakes the thread out of an untimed wait and
 * joins it: when it returns, the thread has finished. */
static void test_worker_start_stop_joins(void **state)
{
    struct shared *s = *state;

    assert_false(s->w.running);
    assert_int_equal(worker_start(&s->w, "smqd-test", until_stopped, s), 0);
    assert_true(s->w.running);
    await_waiting(s);
    worker_stop(&s->w);
    /* Joined: no lock needed any more, the thread is gone. */
    assert_true(s->exited);
    assert_true(s->w.stopping);
    assert_false(s->w.running);
    /* A second stop is a no-op. */
    worker_stop(&s->w);
    assert_false(s->w.running);
}

/* Stop also joins a thread that never waited (it sees stopping at once). */
static void test_worker_stop_before_thread_waits(void **state)
{
    struct shared *s = *state;

    assert_int_equal(worker_start(&s->w, "smqd-test", until_stopped, s), 0);
    worker_stop(&s->w);
    assert_true(s->exited);
    assert_false(s->w.running);
}

static void test_worker_stop_without_start_is_harmless(void **state)
{
    struct shared *s = *state;

    worker_stop(&s->w);
    worker_stop(&s->w);
    assert_false(s->w.running);
    assert_false(s->w.stopping);      /* nothing was told to stop */
    /* The worker is still usable afterwards. */
    assert_int_equal(worker_start(&s->w, "smqd-test", until_stopped, s), 0);
    worker_stop(&s->w);
    assert_true(s->exited);
}

/* With no signal, worker_wait gives up after its timeout (not before,
 * and not seconds later) and says so with false.  Spurious wake-ups may
 * return true early: those are retried. */
static void test_worker_wait_times_out(void **state)
{
    struct shared *s = *state;
    uint64_t t0, elapsed_us = 0;
    bool r = true;

    pthread_mutex_lock(&s->w.lock);
    for (int i = 0; i < 100 && r; i++) {
        t0 = clock_mono_us();
        r = worker_wait(&s->w, 20);
        elapsed_us = clock_mono_us() - t0;
    }
    pthread_mutex_unlock(&s->w.lock);
    assert_false(r);
    assert_true(elapsed_us >= 19900);
    assert_true(elapsed_us < 2000000);
}

/* A signal ends a timed wait long before its timeout, with true. */
static void test_worker_wait_signalled_returns_true(void **state)
{
    struct shared *s = *state;
    uint64_t t0 = clock_mono_us();

    s->timeout_ms = 30000;
    assert_int_equal(worker_start(&s->w, "smqd-test", wait_once, s), 0);
    await_waiting(s);
    worker_signal(&s->w);
    worker_stop(&s->w);
    assert_true(s->exited);
    assert_true(s->result);
    assert_true(clock_mono_us() - t0 < 20000000);
}

/* The same for an untimed wait (UINT64_MAX). */
static void test_worker_wait_forever_signalled(void **state)
{
    struct shared *s = *state;

    s->timeout_ms = UINT64_MAX;
    assert_int_equal(worker_start(&s->w, "smqd-test", wait_once, s), 0);
    await_waiting(s);
    worker_signal(&s->w);
    /* Join by hand: worker_stop's own signal must not be what woke it. */
    pthread_join(s->w.thread, NULL);
    s->w.running = false;
    assert_true(s->exited);
    assert_true(s->result);
}

/* The thread carries the name it was started with. */
static void test_worker_thread_named(void **state)
{
    struct shared *s = *state;

    assert_int_equal(worker_start(&s->w, "smqd-engine", read_name, s), 0);
    pthread_mutex_lock(&s->w.lock);
    s->go = true;
    pthread_mutex_unlock(&s->w.lock);
    worker_signal(&s->w);
    worker_stop(&s->w);
    assert_true(s->exited);
    assert_string_equal(s->name, "smqd-engine");
}

/*
 * worker_start: "at most 15 characters shown" (worker.h) — a longer name
 * shows as its first 15 characters, although pthread_setname_np refuses
 * a longer one outright.
 */
static void test_worker_long_name_shown_truncated(void **state)
{
    struct shared *s = *state;

    assert_int_equal(worker_start(&s->w, "smqd-listener-reaper", read_name, s), 0);
    pthread_mutex_lock(&s->w.lock);
    s->go = true;
    pthread_mutex_unlock(&s->w.lock);
    worker_signal(&s->w);
    worker_stop(&s->w);
    assert_true(s->exited);
    assert_string_equal(s->name, "smqd-listener-r");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_worker_start_stop_joins, setup, teardown),
        cmocka_unit_test_setup_teardown(test_worker_stop_before_thread_waits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_worker_stop_without_start_is_harmless, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_worker_wait_times_out, setup, teardown),
        cmocka_unit_test_setup_teardown(test_worker_wait_signalled_returns_true, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_worker_wait_forever_signalled, setup, teardown),
        cmocka_unit_test_setup_teardown(test_worker_thread_named, setup, teardown),
        cmocka_unit_test_setup_teardown(test_worker_long_name_shown_truncated, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
