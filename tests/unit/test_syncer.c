/*
 * test_syncer.c — unit tests for syncer.c: an op is answered only after a
 * flush that began after the commit it depends on, in order, and never
 * with success after a failed flush.
 *
 * The flush is injected: each call blocks on a gate the test opens one
 * flush at a time, so every interleaving below is forced, not hoped for.
 * Waits for the syncer thread are bounded (5 s) and fail the test.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "smqd/errors.h"
#include "smqd/syncer.h"

#include "flush_gate.h"

/* ---- ops that record when and in which order they were answered ---------- */

struct answered {
    int order[8];
    int n;
};

static struct answered answers;

static void on_done(struct smq_op *op, void *arg)
{
    pthread_mutex_lock(&gate_lock);
    answers.order[answers.n++] = (int)(intptr_t)arg;
    (void)op;
    pthread_cond_broadcast(&gate_cond);
    pthread_mutex_unlock(&gate_lock);
}

static struct smq_op *new_op(int id)
{
    struct smq_op *op = malloc(sizeof *op);

    assert_non_null(op);
    op_init(op, SMQ_OP_SEND);
    op->done = on_done;
    op->done_arg = (void *)(intptr_t)id;
    return op;
}

static int answered_count(void)
{
    int n;

    pthread_mutex_lock(&gate_lock);
    n = answers.n;
    pthread_mutex_unlock(&gate_lock);
    return n;
}

/* ---- fixture ------------------------------------------------------------------ */

struct fixture {
    struct smq_syncer *s;
    struct smq_op *ops[4];
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    struct syncer_opts opts = {.flush = gated_flush};
    char err[256];

    if (f == NULL)
        return -1;
    reset_gate();
    memset(&answers, 0, sizeof answers);
    if (syncer_start(&opts, &f->s, err, sizeof err) != 0)
        return -1;
    syncer_set_idle_hook(f->s, on_idle, NULL);
    for (int i = 0; i < 4; i++)
        f->ops[i] = new_op(i + 1);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    allow_flushes(1000);             /* a failed test must not leave the thread blocked */
    syncer_stop(f->s);
    for (int i = 0; i < 4; i++)
        free(f->ops[i]);

    free(f);
    return 0;
}

/* ---- cases -------------------------------------------------------------------- */

static void test_answers_at_once_when_nothing_is_unflushed(void **state)
{
    struct fixture *f = *state;

    syncer_release(f->s, f->ops[0]);
    assert_int_equal(answered_count(), 1);      /* on this thread, before returning */
    assert_int_equal(flushes_started, 0);
    assert_true(syncer_idle(f->s));
}

static void test_held_until_the_flush_after_the_commit(void **state)
{
    struct fixture *f = *state;

    syncer_committed(f->s);
    syncer_release(f->s, f->ops[0]);
    assert_true(wait_for(&flushes_started, 1));
    assert_false(syncer_idle(f->s));
    assert_int_equal(answered_count(), 0);      /* the flush has not returned */
    allow_flushes(1);
    assert_true(wait_for(&answers.n, 1));
    assert_int_equal(f->ops[0]->result.err, 0);
    assert_true(wait_for(&idle_calls, 1));
    assert_true(syncer_idle(f->s));
}

/* The heart of it: a flush that was already running when a commit returned
 * does not cover that commit, so its ops wait for the next one. */
static void test_commit_during_a_flush_waits_for_the_next(void **state)
{
    struct fixture *f = *state;

    syncer_committed(f->s);
    syncer_release(f->s, f->ops[0]);
    assert_true(wait_for(&flushes_started, 1));   /* flush 1 runs, covering commit 1 */
    syncer_committed(f->s);                        /* commit 2, during flush 1 */
    syncer_release(f->s, f->ops[1]);
    allow_flushes(1);
    assert_true(wait_for(&answers.n, 1));
    assert_true(wait_for(&flushes_started, 2));   /* flush 2 begun, not returned */
    assert_int_equal(answered_count(), 1);
    assert_int_equal(answers.order[0], 1);
    allow_flushes(1);
    assert_true(wait_for(&answers.n, 2));
    assert_int_equal(answers.order[1], 2);
}

/* Ops released while a flush is due are answered after it, in order, even
 * those that depend on no new commit (a read after a write). */
static void test_order_is_kept(void **state)
{
    struct fixture *f = *state;

    syncer_committed(f->s);
    syncer_release(f->s, f->ops[0]);
    syncer_release(f->s, f->ops[1]);
    f->ops[2]->next = f->ops[3];
    syncer_release(f->s, f->ops[2]);
    assert_int_equal(answered_count(), 0);
    allow_flushes(1);
    assert_true(wait_for(&answers.n, 4));
    for (int i = 0; i < 4; i++)
        assert_int_equal(answers.order[i], i + 1);
    assert_null(f->ops[0]->next);
}

static void test_failed_flush_answers_internal_error_for_good(void **state)
{
    struct fixture *f = *state;

    set_flush_result(-1);
    syncer_committed(f->s);
    syncer_release(f->s, f->ops[0]);
    allow_flushes(1);
    assert_true(wait_for(&answers.n, 1));
    assert_int_equal(f->ops[0]->result.err, SMQ_E_INTERNAL);
    assert_true(syncer_failed(f->s));
    /* Sticky: nothing is pending now, and still no success is reported. */
    syncer_release(f->s, f->ops[1]);
    assert_int_equal(answered_count(), 2);
    assert_int_equal(f->ops[1]->result.err, SMQ_E_INTERNAL);
    /* Even if a later flush succeeds. */
    set_flush_result(0);
    syncer_committed(f->s);
    syncer_release(f->s, f->ops[2]);
    allow_flushes(1);
    assert_true(wait_for(&answers.n, 3));
    assert_int_equal(f->ops[2]->result.err, SMQ_E_INTERNAL);
}

/* A fenced flush (the PostgreSQL backend's SMQ_E_SERVICE_UNAVAILABLE:
 * nothing was applied) is answered 503, not InternalError, and stays so. */
static void test_fenced_flush_answers_service_unavailable(void **state)
{
    struct fixture *f = *state;

    set_flush_result(SMQ_E_SERVICE_UNAVAILABLE);
    syncer_committed(f->s);
    syncer_release(f->s, f->ops[0]);
    allow_flushes(1);
    assert_true(wait_for(&answers.n, 1));
    assert_int_equal(f->ops[0]->result.err, SMQ_E_SERVICE_UNAVAILABLE);
    assert_true(syncer_failed(f->s));
    syncer_release(f->s, f->ops[1]);
    assert_int_equal(answered_count(), 2);
    assert_int_equal(f->ops[1]->result.err, SMQ_E_SERVICE_UNAVAILABLE);
}

static void *stop_thread(void *arg)
{
    syncer_stop(arg);
    return NULL;
}

/* stop is called while a flush is in progress and a second op waits for
 * the flush after it: stop returns only once both ops are flushed and
 * answered (a stop that did not drain would return after the first). */
static void test_stop_flushes_and_answers_what_is_held(void **state)
{
    struct fixture *f = *state;
    pthread_t stopper;

    syncer_committed(f->s);
    syncer_release(f->s, f->ops[0]);
    assert_true(wait_for(&flushes_started, 1));     /* flush 1 in progress */
    syncer_committed(f->s);
    syncer_release(f->s, f->ops[1]);                /* needs flush 2 */
    assert_int_equal(pthread_create(&stopper, NULL, stop_thread, f->s), 0);
    assert_int_equal(answered_count(), 0);
    /* Let the stopper reach syncer_stop before flush 1 ends (if it has not,
     * the test cannot fail wrongly; it only checks less). */
    usleep(100 * 1000);
    allow_flushes(2);
    assert_int_equal(pthread_join(stopper, NULL), 0);
    f->s = NULL;                                    /* stopped and freed: not again in teardown */
    assert_int_equal(answered_count(), 2);
    assert_int_equal(flushes_started, 2);
    assert_int_equal(f->ops[0]->result.err, 0);
    assert_int_equal(f->ops[1]->result.err, 0);
}

/* An answer callback that blocks until the test lets it return. */
static int in_slow_done, slow_done_may_return;

static void slow_done(struct smq_op *op, void *arg)
{
    pthread_mutex_lock(&gate_lock);
    in_slow_done = 1;
    pthread_cond_broadcast(&gate_cond);
    while (!slow_done_may_return)
        pthread_cond_wait(&gate_cond, &gate_lock);
    pthread_mutex_unlock(&gate_lock);
    on_done(op, arg);
}

/* While the syncer thread is still answering a flushed batch, an op
 * released with nothing left to flush waits behind it instead of
 * overtaking it. */
static void test_no_answer_overtakes_one_being_sent(void **state)
{
    struct fixture *f = *state;

    in_slow_done = slow_done_may_return = 0;
    f->ops[0]->done = slow_done;
    syncer_committed(f->s);
    syncer_release(f->s, f->ops[0]);
    allow_flushes(1);
    assert_true(wait_for(&in_slow_done, 1));
    syncer_release(f->s, f->ops[1]);
    assert_int_equal(answered_count(), 0);       /* op 2 was not answered at once */
    pthread_mutex_lock(&gate_lock);
    slow_done_may_return = 1;
    pthread_cond_broadcast(&gate_cond);
    pthread_mutex_unlock(&gate_lock);
    assert_true(wait_for(&answers.n, 2));
    assert_int_equal(answers.order[0], 1);
    assert_int_equal(answers.order[1], 2);
}

static void *allow_one_flush_later(void *arg)
{
    struct timespec pause = {0, 50 * 1000 * 1000};

    (void)arg;
    nanosleep(&pause, NULL);
    allow_flushes(1);
    return NULL;
}

/* syncer_drain returns only once everything committed is flushed and
 * answered, and no hook is called after it (main.c frees the server the
 * hook wakes). */
static void test_drain_waits_for_answers_and_clears_the_hook(void **state)
{
    struct fixture *f = *state;
    pthread_t helper;
    int idle_before;

    syncer_committed(f->s);
    syncer_release(f->s, f->ops[0]);
    assert_int_equal(pthread_create(&helper, NULL, allow_one_flush_later, NULL), 0);
    syncer_drain(f->s);
    assert_int_equal(answered_count(), 1);
    pthread_join(helper, NULL);
    pthread_mutex_lock(&gate_lock);
    idle_before = idle_calls;
    pthread_mutex_unlock(&gate_lock);
    syncer_committed(f->s);
    syncer_release(f->s, f->ops[1]);
    allow_flushes(1);
    assert_true(wait_for(&answers.n, 2));
    syncer_drain(f->s);
    pthread_mutex_lock(&gate_lock);
    assert_int_equal(idle_calls, idle_before);
    pthread_mutex_unlock(&gate_lock);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_answers_at_once_when_nothing_is_unflushed, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_held_until_the_flush_after_the_commit, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_commit_during_a_flush_waits_for_the_next, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_order_is_kept, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fenced_flush_answers_service_unavailable, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_failed_flush_answers_internal_error_for_good, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_stop_flushes_and_answers_what_is_held, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_no_answer_overtakes_one_being_sent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_drain_waits_for_answers_and_clears_the_hook, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
