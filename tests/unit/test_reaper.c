/*
 * test_reaper.c — unit tests for reaper.c on a fake clock, no thread, with
 * socket pairs standing in for connections: which phase is held to which
 * limit and from when, that a shut-down connection's peer sees its end,
 * and the deadlines (fired once, outside the lock, unless cleared first;
 * what untrack says of one still pending).
 */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "reaper.h"
#include "smqd/clock.h"

#define REQUEST_S 10
#define IDLE_S 30

struct fixture {
    struct smq_fake_clock clock;
    struct conn_reaper *r;
    int fds[2];                  /* [0] tracked, [1] the client's end */
    struct conn_track *t;
    int fired;                   /* fire() calls */
    void *fired_ctx;
    bool rearm;                  /* fire() sets a new deadline on t (the lock is not held) */
};

static int setup(void **state)
{
    static struct fixture f;
    struct conn_reaper_opts opts = {.listener = "test: ", .request_timeout_s = REQUEST_S,
                                    .idle_timeout_s = IDLE_S, .no_thread = true};

    memset(&f, 0, sizeof f);
    clock_fake_init(&f.clock, 1000000, 1700000000000LL);
    opts.clock = &f.clock.clock;
    f.r = conn_reaper_start(&opts);
    if (f.r == NULL || socketpair(AF_UNIX, SOCK_STREAM, 0, f.fds) != 0)
        return -1;
    f.t = conn_reaper_track(f.r, f.fds[0]);
    *state = &f;
    return f.t != NULL ? 0 : -1;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    conn_reaper_untrack(f->r, f->t);
    conn_reaper_free(f->r);
    close(f->fds[0]);
    close(f->fds[1]);
    return 0;
}

/* Whether the client's end sees the connection shut down. */
static bool client_sees_end(const struct fixture *f)
{
    struct pollfd p = {.fd = f->fds[1], .events = POLLIN};
    char c;

    return poll(&p, 1, 0) == 1 && recv(f->fds[1], &c, 1, MSG_DONTWAIT) == 0;
}

static void pass_ms(struct fixture *f, uint64_t ms)
{
    clock_fake_advance(&f->clock, ms);
    conn_reaper_scan(f->r);
}

/* A request line that never ends: only the reaper knows the connection is
 * there, and it is cut at the request timeout from accept. */
static void test_reaper_cuts_a_new_connection_at_the_request_timeout(void **state)
{
    struct fixture *f = *state;

    pass_ms(f, REQUEST_S * 1000);
    assert_false(client_sees_end(f));
    pass_ms(f, 1);
    assert_true(client_sees_end(f));
}

/* The request's clock starts at accept and keeps running through its
 * headers and body: trickling them in does not restart it. */
static void test_reaper_bounds_the_whole_request(void **state)
{
    struct fixture *f = *state;

    pass_ms(f, 4000);
    conn_reaper_phase(f->r, f->t, PHASE_HEADERS);
    pass_ms(f, 4000);
    conn_reaper_phase(f->r, f->t, PHASE_BODY);
    pass_ms(f, 2000);
    assert_false(client_sees_end(f));
    pass_ms(f, 1);
    assert_true(client_sees_end(f));
}

/* A request being answered is never cut, however long the answer takes. */
static void test_reaper_never_cuts_a_request_being_answered(void **state)
{
    struct fixture *f = *state;

    conn_reaper_phase(f->r, f->t, PHASE_WORKING);
    pass_ms(f, 10 * IDLE_S * 1000);
    assert_false(client_sees_end(f));
}

/* Between requests a kept-alive connection gets the idle limit, not the
 * request limit, from the end of the last answer; the next request line
 * restarts the request clock. */
static void test_reaper_idle_limit_between_requests(void **state)
{
    struct fixture *f = *state;

    conn_reaper_phase(f->r, f->t, PHASE_WORKING);
    pass_ms(f, 50000);
    conn_reaper_phase(f->r, f->t, PHASE_IDLE);
    pass_ms(f, IDLE_S * 1000 - 1);
    assert_false(client_sees_end(f));
    conn_reaper_phase(f->r, f->t, PHASE_HEADERS);     /* the next request line */
    pass_ms(f, REQUEST_S * 1000);
    assert_false(client_sees_end(f));
    pass_ms(f, 1);
    assert_true(client_sees_end(f));
}

static void test_reaper_idle_connection_cut_at_the_idle_limit(void **state)
{
    struct fixture *f = *state;

    conn_reaper_phase(f->r, f->t, PHASE_IDLE);
    pass_ms(f, IDLE_S * 1000);
    assert_false(client_sees_end(f));
    pass_ms(f, 1);
    assert_true(client_sees_end(f));
}

static void on_fire(void *ctx)
{
    struct fixture *f = ctx;

    f->fired++;
    f->fired_ctx = ctx;
    if (f->rearm) {              /* possible only because the lock is not held here */
        f->rearm = false;
        conn_reaper_set_deadline(f->r, f->t, clock_mono_ms(&f->clock.clock) + 100, on_fire, f);
    }
}

static void test_reaper_deadline_fires_once(void **state)
{
    struct fixture *f = *state;
    uint64_t now = clock_mono_ms(&f->clock.clock);

    conn_reaper_phase(f->r, f->t, PHASE_WORKING);
    conn_reaper_set_deadline(f->r, f->t, now + 2000, on_fire, f);
    pass_ms(f, 1999);
    assert_int_equal(f->fired, 0);
    pass_ms(f, 1);
    assert_int_equal(f->fired, 1);
    assert_ptr_equal(f->fired_ctx, f);
    pass_ms(f, 5000);
    assert_int_equal(f->fired, 1);
    assert_false(conn_reaper_clear_deadline(f->r, f->t));     /* it has fired */
    assert_null(conn_reaper_untrack(f->r, f->t));
    f->t = conn_reaper_track(f->r, f->fds[0]);
}

static void test_reaper_deadline_cleared_never_fires(void **state)
{
    struct fixture *f = *state;
    uint64_t now = clock_mono_ms(&f->clock.clock);

    conn_reaper_phase(f->r, f->t, PHASE_WORKING);
    conn_reaper_set_deadline(f->r, f->t, now + 2000, on_fire, f);
    pass_ms(f, 1000);
    assert_true(conn_reaper_clear_deadline(f->r, f->t));
    assert_false(conn_reaper_clear_deadline(f->r, f->t));      /* once */
    pass_ms(f, 5000);
    assert_int_equal(f->fired, 0);
}

/* A connection that closes with its deadline pending hands its ctx back. */
static void test_reaper_untrack_returns_a_pending_deadline(void **state)
{
    struct fixture *f = *state;

    conn_reaper_set_deadline(f->r, f->t, clock_mono_ms(&f->clock.clock) + 2000, on_fire, f);
    assert_ptr_equal(conn_reaper_untrack(f->r, f->t), f);
    f->t = conn_reaper_track(f->r, f->fds[0]);
    pass_ms(f, 5000);
    assert_int_equal(f->fired, 0);
}

/* fire() runs outside the reaper's lock: it may set the next deadline. */
static void test_reaper_fire_may_call_the_reaper(void **state)
{
    struct fixture *f = *state;

    conn_reaper_phase(f->r, f->t, PHASE_WORKING);
    f->rearm = true;
    conn_reaper_set_deadline(f->r, f->t, clock_mono_ms(&f->clock.clock) + 10, on_fire, f);
    pass_ms(f, 10);
    assert_int_equal(f->fired, 1);
    pass_ms(f, 100);
    assert_int_equal(f->fired, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_reaper_cuts_a_new_connection_at_the_request_timeout,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_reaper_bounds_the_whole_request, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reaper_never_cuts_a_request_being_answered, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_reaper_idle_limit_between_requests, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reaper_idle_connection_cut_at_the_idle_limit, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_reaper_deadline_fires_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reaper_deadline_cleared_never_fires, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_reaper_untrack_returns_a_pending_deadline, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_reaper_fire_may_call_the_reaper, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
