/*
 * test_engine_sync.c — the engine with a syncer (sync = full in smqd):
 * finished ops are answered only after the WAL flush that covers their
 * commit; while a flush runs, a run's commit is deferred and the next run
 * joins its transaction; engine_next_timeout_ms asks for the deferred
 * commit once the flush is over; closing commits what was deferred; an
 * HTTP push waits for the flush of its publish.
 *
 * The flush is the gated one of flush_gate.h; the store is real, and what
 * is on disk is read through a second SQLite connection.
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
#include <sqlite3.h>

#include "db_peek.h"

#include "smqd/clock.h"
#include "smqd/engine.h"
#include "smqd/errors.h"
#include "smqd/push.h"
#include "smqd/store.h"
#include "smqd/syncer.h"

#include "flush_gate.h"

struct fixture {
    char dir[64];
    char path[128];
    struct smq_fake_clock clock;
    struct smq_store *store;
    struct smq_engine *e;
    struct smq_syncer *syncer;
    struct smq_op ops[4];
    int answered;               /* under gate_lock */
};

static void on_done(struct smq_op *op, void *arg)
{
    struct fixture *f = arg;

    (void)op;
    pthread_mutex_lock(&gate_lock);
    f->answered++;
    pthread_cond_broadcast(&gate_cond);
    pthread_mutex_unlock(&gate_lock);
}

static int answered(struct fixture *f)
{
    int n;

    pthread_mutex_lock(&gate_lock);
    n = f->answered;
    pthread_mutex_unlock(&gate_lock);
    return n;
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    struct smq_engine_opts eopts;
    struct syncer_opts sopts = {.flush = gated_flush};
    char err[256];

    if (f == NULL)
        return -1;
    *state = f;
    snprintf(f->dir, sizeof f->dir, "/tmp/smqd-test-esync-XXXXXX");
    if (mkdtemp(f->dir) == NULL)
        return -1;
    snprintf(f->path, sizeof f->path, "%s/smqd.db", f->dir);
    reset_gate();
    clock_fake_init(&f->clock, 5000000u, 1700000000500LL);
    if (store_open(&(struct store_config){.path = f->path, .sync = SMQ_SYNC_FULL},
                   &f->store, err, sizeof err) != 0)
        return -1;
    eopts = (struct smq_engine_opts){.clock = &f->clock.clock, .store = f->store,
                                     .max_queues = 10};
    if (engine_open(&eopts, &f->e, err, sizeof err) != 0)
        return -1;
    sopts.flush_arg = f->store;
    if (store_defer_fsync(f->store) != 0 || syncer_start(&sopts, &f->syncer, err, sizeof err) != 0)
        return -1;
    syncer_set_idle_hook(f->syncer, on_idle, NULL);
    engine_set_syncer(f->e, f->syncer);
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    char cmd[128];

    allow_flushes(1000);             /* a failed test must not leave the thread blocked */
    engine_close(f->e);
    syncer_stop(f->syncer);
    store_close(f->store);
    snprintf(cmd, sizeof cmd, "rm -rf %s", f->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", f->dir);
    free(f);
    return 0;
}

/* f->ops[i], initialized as kind on queue "q", answered into f. */
static struct smq_op *op_of(struct fixture *f, int i, enum smq_op_kind kind)
{
    struct smq_op *op = &f->ops[i];

    op_init(op, kind);
    snprintf(op->queue, sizeof op->queue, "q");
    op->done = on_done;
    op->done_arg = f;
    return op;
}

static struct smq_op *op_create(struct fixture *f, int i)
{
    return op_of(f, i, SMQ_OP_CREATE_QUEUE);
}

static struct smq_op *op_send(struct fixture *f, int i)
{
    static const char body[] = "hello";
    struct smq_op *op = op_of(f, i, SMQ_OP_SEND);

    op->send.items[0] = (struct smq_send_item){.body = body, .body_len = sizeof body - 1, .delay_s = 0, .priority = 8};
    op->send.n = 1;
    return op;
}

/* Rows in msg, on disk. */
static long long msgs_on_disk(const struct fixture *f)
{
    return db_peek_int(f->path, "SELECT count(*) FROM msg");
}

static void test_answer_waits_for_its_flush_and_a_busy_flush_defers_the_commit(void **state)
{
    struct fixture *f = *state;

    engine_run(f->e, op_create(f, 0));
    assert_true(wait_for(&flushes_started, 1));
    assert_int_equal(answered(f), 0);              /* committed, not yet flushed */

    engine_run(f->e, op_send(f, 1));
    assert_true(store_in_txn(f->store));           /* deferred: the flush is busy */
    /* Nothing is due before the message's retention ends: the engine sleeps
     * until the syncer's hook wakes it (no polling). */
    assert_true(engine_next_timeout_ms(f->e) > 1000);
    assert_int_equal(msgs_on_disk(f), 0);

    allow_flushes(1);
    assert_true(wait_for(&f->answered, 1));        /* the create */
    assert_true(wait_for(&idle_calls, 1));
    assert_int_equal(f->ops[0].result.err, 0);
    assert_int_equal(engine_next_timeout_ms(f->e), 0);   /* the deferred commit is due */

    engine_run(f->e, NULL);
    assert_false(store_in_txn(f->store));
    assert_int_equal(msgs_on_disk(f), 1);
    assert_true(wait_for(&flushes_started, 2));
    assert_int_equal(answered(f), 1);              /* the send waits for flush 2 */
    allow_flushes(1);
    assert_true(wait_for(&f->answered, 2));
    assert_int_equal(f->ops[1].result.err, 0);
}

static void test_an_idle_syncer_commits_at_once(void **state)
{
    struct fixture *f = *state;

    allow_flushes(10);
    engine_run(f->e, op_create(f, 0));
    assert_true(wait_for(&f->answered, 1));
    assert_true(wait_for(&idle_calls, 1));
    engine_run(f->e, op_send(f, 1));
    assert_false(store_in_txn(f->store));
    assert_int_equal(msgs_on_disk(f), 1);
    assert_true(wait_for(&f->answered, 2));
}

static void test_close_commits_a_deferred_run(void **state)
{
    struct fixture *f = *state;

    engine_run(f->e, op_create(f, 0));
    assert_true(wait_for(&flushes_started, 1));
    engine_run(f->e, op_send(f, 1));
    assert_true(store_in_txn(f->store));
    allow_flushes(10);
    engine_close(f->e);
    f->e = NULL;
    assert_false(store_in_txn(f->store));
    assert_int_equal(msgs_on_disk(f), 1);
    assert_true(wait_for(&f->answered, 2));
    assert_int_equal(f->ops[1].result.err, 0);
}

/* The COMMIT of a deferred transaction fails (two runs joined it while a
 * flush was busy: a send, and a receive that took both messages): both
 * runs' ops are refused, the receive's bodies are released, the engine's
 * memory is reloaded from the database, and what was acknowledged before
 * is intact and still served, not yet received.  The engine then goes on
 * committing. */
static void test_a_failed_deferred_commit_refuses_both_runs_and_keeps_the_rest(void **state)
{
    struct fixture *f = *state;
    struct smq_op *recv;
    struct smq_engine_stats st;

    allow_flushes(1);
    engine_run(f->e, op_create(f, 0));
    assert_true(wait_for(&f->answered, 1));
    engine_run(f->e, op_send(f, 1));                /* committed; its flush is held */
    assert_true(wait_for(&flushes_started, 2));
    engine_run(f->e, op_send(f, 2));                /* deferred ... */
    recv = op_of(f, 3, SMQ_OP_RECEIVE);             /* ... and joined by a second run */
    recv->recv.max_msgs = 16;
    engine_run(f->e, recv);
    assert_true(store_in_txn(f->store));
    assert_int_equal(recv->recv.n_msgs, 2);              /* taken, in the open transaction */
    store_fault_inject(f->store, STORE_FAULT_OFF, 1);
    allow_flushes(1);
    assert_true(wait_for(&f->answered, 2));         /* the first send, flushed */
    assert_int_equal(f->ops[1].result.err, 0);
    engine_run(f->e, NULL);                         /* the deferred commit: it fails */
    assert_true(wait_for(&f->answered, 4));
    assert_int_equal(f->ops[2].result.err, SMQ_E_INTERNAL);
    assert_int_equal(recv->result.err, SMQ_E_INTERNAL);
    assert_int_equal(recv->recv.n_msgs, 0);              /* its bodies released */
    assert_null(recv->recv.body_block);
    assert_false(store_in_txn(f->store));
    assert_int_equal(msgs_on_disk(f), 1);
    engine_stats(f->e, &st);
    assert_int_equal(st.reloads, 1);

    allow_flushes(10);
    recv = op_of(f, 2, SMQ_OP_RECEIVE);             /* the engine serves what it reloaded */
    recv->recv.max_msgs = 16;
    engine_run(f->e, recv);
    assert_true(wait_for(&f->answered, 5));
    assert_int_equal(recv->result.err, 0);
    assert_int_equal(recv->recv.n_msgs, 1);
    assert_int_equal(recv->recv.msgs[0].seq, f->ops[1].send.seq[0]);
    assert_int_equal(recv->recv.msgs[0].dequeue_count, 1);   /* the failed receive did not count */
    assert_memory_equal(recv->recv.msgs[0].body, "hello", 5);
    op_release(recv);
    engine_run(f->e, op_send(f, 3));                /* and commits again */
    assert_true(wait_for(&f->answered, 6));
    assert_int_equal(f->ops[3].result.err, 0);
    assert_int_equal(msgs_on_disk(f), 2);
}

/* A purge makes disk reclamation due; while the commit is deferred it cannot
 * run, and must not make the engine thread spin. */
static void test_a_deferred_commit_does_not_make_maintenance_spin(void **state)
{
    struct fixture *f = *state;

    engine_run(f->e, op_create(f, 0));
    assert_true(wait_for(&flushes_started, 1));
    engine_run(f->e, op_send(f, 1));
    op_of(f, 2, SMQ_OP_PURGE)->purge.main = true;
    engine_run(f->e, &f->ops[2]);
    assert_true(store_in_txn(f->store));
    assert_true(engine_next_timeout_ms(f->e) > 1000);
    allow_flushes(10);
    assert_true(wait_for(&idle_calls, 1));
    assert_int_equal(engine_next_timeout_ms(f->e), 0);    /* now the commit is due */
    engine_run(f->e, NULL);
    assert_true(wait_for(&f->answered, 3));
    assert_int_equal(f->ops[2].result.err, 0);
}

/* A flush fails while a commit is deferred: that transaction is rolled back,
 * its ops and every later one are refused, and nothing more is written. */
static void test_a_failed_flush_stops_all_writes(void **state)
{
    struct fixture *f = *state;

    engine_run(f->e, op_create(f, 0));
    assert_true(wait_for(&flushes_started, 1));
    engine_run(f->e, op_send(f, 1));                /* deferred */
    assert_true(store_in_txn(f->store));
    set_flush_result(-1);
    allow_flushes(10);
    assert_true(wait_for(&f->answered, 1));
    assert_int_equal(f->ops[0].result.err, SMQ_E_INTERNAL);
    engine_run(f->e, NULL);                         /* what the hook's wake-up runs */
    assert_true(wait_for(&f->answered, 2));
    assert_int_equal(f->ops[1].result.err, SMQ_E_INTERNAL);
    assert_false(store_in_txn(f->store));
    assert_int_equal(msgs_on_disk(f), 0);
    engine_run(f->e, op_send(f, 2));                /* refused unrun */
    assert_int_equal(answered(f), 3);
    assert_int_equal(f->ops[2].result.err, SMQ_E_INTERNAL);
    assert_int_equal(msgs_on_disk(f), 0);
    assert_int_equal(flushes_started, 1);           /* and no commit asked for a flush */
}

/* After a failed flush no timer may run, so nothing is due any more however
 * far the clock moves: the engine thread sleeps until a new op comes rather
 * than spinning on overdue timers.  A parked long poll, whose deadline will
 * not fire either, is answered at once. */
static void test_a_failed_flush_answers_parked_polls_and_does_not_spin(void **state)
{
    struct fixture *f = *state;
    struct smq_op *poll, *delayed;

    allow_flushes(1);
    engine_run(f->e, op_create(f, 0));
    assert_true(wait_for(&f->answered, 1));
    poll = op_of(f, 1, SMQ_OP_RECEIVE);
    poll->recv.max_msgs = 1;
    poll->recv.wait_s = 30;
    engine_run(f->e, poll);
    assert_int_equal(answered(f), 1);               /* parked */
    delayed = op_send(f, 2);
    delayed->send.items[0].delay_s = 1;                   /* a message timer, due in 1 s */
    set_flush_result(-1);
    engine_run(f->e, delayed);
    allow_flushes(1);
    assert_true(wait_for(&f->answered, 2));
    assert_int_equal(f->ops[2].result.err, SMQ_E_INTERNAL);
    assert_true(syncer_failed(f->syncer));
    engine_run(f->e, NULL);                          /* what the hook's wake-up runs */
    assert_true(wait_for(&f->answered, 3));
    assert_int_equal(poll->result.err, SMQ_E_INTERNAL);
    clock_fake_advance(&f->clock, 60000);            /* every timer and deadline overdue */
    assert_int_equal(engine_next_timeout_ms(f->e), UINT64_MAX);
    engine_run(f->e, NULL);
    assert_int_equal(engine_next_timeout_ms(f->e), UINT64_MAX);
    assert_int_equal(answered(f), 3);
}

/* After a failed flush every op is refused, reads too: the admin listener's
 * /ready probe is such an op (a totals-only STATS), so it reports "broken". */
static void test_after_a_failed_flush_every_op_is_refused(void **state)
{
    struct fixture *f = *state;

    set_flush_result(-1);
    engine_run(f->e, op_create(f, 0));
    allow_flushes(1);
    assert_true(wait_for(&f->answered, 1));
    assert_int_equal(f->ops[0].result.err, SMQ_E_INTERNAL);
    assert_true(syncer_failed(f->syncer));

    op_of(f, 2, SMQ_OP_STATS)->stats.totals_only = true;
    engine_run(f->e, &f->ops[2]);
    assert_int_equal(answered(f), 2);              /* at once: nothing left to flush */
    assert_int_equal(f->ops[2].result.err, SMQ_E_INTERNAL);
    op_release(&f->ops[2]);
}

/* The fake push pool's hook: counts the jobs it takes (and frees them). */
static int count_push(void *arg, struct push_job *job)
{
    (*(int *)arg)++;
    push_job_free(job);
    return 0;
}

/* Runs op and waits for its answer (flushes allowed). */
static void run_answered(struct fixture *f, struct smq_op *op)
{
    int before = answered(f);

    engine_run(f->e, op);
    assert_true(wait_for(&f->answered, before + 1));
    assert_int_equal(op->result.err, 0);
}

/* f->ops[i]: a subscription name of topic "q" to endpoint. */
static struct smq_op *op_subscribe(struct fixture *f, int i, const char *name,
                                   const char *endpoint)
{
    struct smq_op *op = op_of(f, i, SMQ_OP_SUBSCRIBE);

    snprintf(op->sub.name, sizeof op->sub.name, "%s", name);
    snprintf(op->sub.values.endpoint, sizeof op->sub.values.endpoint, "%s", endpoint);
    op->sub.present = SMQ_SATTR_ENDPOINT;
    return op;
}

/* f->ops[i]: a publish of body (a string that outlives the op) to topic "q". */
static struct smq_op *op_publish(struct fixture *f, int i, const char *body)
{
    struct smq_op *op = op_of(f, i, SMQ_OP_PUBLISH);

    op->publish.body = body;
    op->publish.body_len = strlen(body);
    return op;
}

/* The next flush waits for the test (allow_flushes); returns the idle
 * hook's calls so far. */
static int hold_next_flush(void)
{
    int idle;

    pthread_mutex_lock(&gate_lock);
    flushes_allowed = flushes_started;
    idle = idle_calls;
    pthread_mutex_unlock(&gate_lock);
    return idle;
}

/* An HTTP notification is pushed once its publish is durable: committed
 * is not enough while the flush that covers the commit runs (§13.12). */
static void test_a_push_waits_for_the_flush_of_its_publish(void **state)
{
    struct fixture *f = *state;
    int pushes = 0, idle;

    allow_flushes(1000);
    engine_run(f->e, op_of(f, 0, SMQ_OP_CREATE_TOPIC));
    assert_true(wait_for(&f->answered, 1));
    assert_true(wait_for(&idle_calls, 1));        /* so the subscribe commits at once */
    engine_run(f->e, op_subscribe(f, 1, "h", "http://127.0.0.1:9/h"));
    assert_true(wait_for(&f->answered, 2));
    assert_true(wait_for(&idle_calls, 2));
    assert_int_equal(f->ops[0].result.err, 0);
    assert_int_equal(f->ops[1].result.err, 0);
    engine_set_push(f->e, count_push, &pushes);
    idle = hold_next_flush();
    engine_run(f->e, op_publish(f, 2, "durable first"));
    assert_true(wait_for(&flushes_started, flushes_allowed + 1));
    engine_run(f->e, NULL);
    assert_int_equal(pushes, 0);                  /* committed, not flushed */
    assert_true(engine_next_timeout_ms(f->e) > 1000);    /* and no spinning meanwhile */
    allow_flushes(1);
    assert_true(wait_for(&f->answered, 3));
    assert_true(wait_for(&idle_calls, idle + 1));
    assert_int_equal(f->ops[2].result.err, 0);
    assert_int_equal(engine_next_timeout_ms(f->e), 0);   /* the push is due */
    engine_run(f->e, NULL);
    assert_int_equal(pushes, 1);
    allow_flushes(1000);
}

/* A fan-out gives way to requests in a deferred transaction too: the
 * publish's run delivers 4 (its answer waits), a run nothing waits for
 * adds 4, and once a send joins that transaction no delivery is added
 * to it (the engine sleeps until the flush is over instead). */
static void test_a_fanout_gives_way_in_a_deferred_transaction(void **state)
{
    struct fixture *f = *state;
    char name[8];
    int idle;

    allow_flushes(1000);
    run_answered(f, op_create(f, 0));
    run_answered(f, op_of(f, 1, SMQ_OP_CREATE_TOPIC));
    for (int i = 0; i < 20; i++) {
        snprintf(name, sizeof name, "s%02d", i);
        run_answered(f, op_subscribe(f, 2, name, "acs:mns:r:1:queues/q"));
    }
    assert_true(wait_for(&idle_calls, 1));
    idle = hold_next_flush();
    engine_run(f->e, op_publish(f, 3, "wide"));   /* committed at once: the syncer was idle */
    assert_true(wait_for(&flushes_started, flushes_allowed + 1));
    assert_int_equal(msgs_on_disk(f), 4);
    engine_run(f->e, NULL);                       /* deferred: 4 more, in memory */
    assert_true(store_in_txn(f->store));
    assert_int_equal(engine_next_timeout_ms(f->e), 0);   /* more may join */
    engine_run(f->e, op_send(f, 0));
    assert_true(engine_next_timeout_ms(f->e) > 1000);    /* nothing more joins it */
    engine_run(f->e, NULL);
    allow_flushes(1);
    assert_true(wait_for(&idle_calls, idle + 1));
    engine_run(f->e, NULL);                       /* the deferred commit */
    assert_int_equal(msgs_on_disk(f), 4 + 4 + 1);
    allow_flushes(1000);
    for (int i = 0; i < 5000 && msgs_on_disk(f) < 21; i++) {   /* the rest, bounded */
        engine_run(f->e, NULL);
        usleep(1000);
    }
    assert_int_equal(msgs_on_disk(f), 21);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_answer_waits_for_its_flush_and_a_busy_flush_defers_the_commit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_an_idle_syncer_commits_at_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_close_commits_a_deferred_run, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_failed_deferred_commit_refuses_both_runs_and_keeps_the_rest,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_after_a_failed_flush_every_op_is_refused, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_deferred_commit_does_not_make_maintenance_spin,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_failed_flush_stops_all_writes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_fanout_gives_way_in_a_deferred_transaction, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_push_waits_for_the_flush_of_its_publish, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_failed_flush_answers_parked_polls_and_does_not_spin,
                                        setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
