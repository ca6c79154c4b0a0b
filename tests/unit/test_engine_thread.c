/*
 * test_engine_thread.c — unit tests for engine_thread.c (engine_thread.h):
 * the engine thread and its inbox.  Ops submitted from several threads are
 * each answered exactly once, in submission order per thread, after their
 * commit; everything that arrived while the engine was busy runs as one
 * group, and submitting never waits for a run; the sleeping thread is woken
 * by a submit, by a timer that has come due and by engine_thread_wake;
 * engine_thread_stop runs what was submitted, finishes parked long polls
 * with MessageNotExist, and later
 * submits are answered at once with ServiceUnavailable.
 *
 * The engine is real (a SQLite store in a temporary directory, no syncer)
 * and reads the fake clock of clock.h, behind a lock because the engine
 * thread reads it while the test moves it.  The engine thread is held
 * where a test needs it by a "gate" op whose done callback (on the engine
 * thread) blocks until the test opens the gate.  Every wait for the engine
 * thread is on a condition variable with a generous bound; nothing sleeps.
 * Where a test moves the clock to see whether the sleeping thread notices,
 * it first waits (bounded) until the thread is asleep, as
 * /proc/self/task/TID/stat shows, so the thread planned its sleep from
 * the clock before the move.
 */
#define _GNU_SOURCE           /* nftw's FTW_DEPTH, FTW_PHYS */
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "db_peek.h"

#include "smqd/clock.h"
#include "smqd/engine.h"
#include "smqd/errors.h"
#include "smqd/op.h"
#include "smqd/engine_thread.h"
#include "smqd/store.h"

#define N_THREADS 4
#define PER_THREAD 50
#define N_OPS (1 + N_THREADS * PER_THREAD)
/* Bound of every wait for the engine thread; less than LONG_POLL_S, so an
 * answer that only the poll's own deadline would bring fails the test. */
#define BOUND_MS 15000
#define LONG_POLL_S 30

/* The fake clock, locked: the engine thread reads it, the test moves it. */
struct locked_clock {
    struct smq_clock clock;          /* given to the engine */
    pthread_mutex_t lock;
    struct smq_fake_clock fake;
};

/* An op and what its done callback saw (under fixture.mu). */
struct tracked {
    struct smq_op op;
    struct fixture *f;
    int answers;
    long order;                      /* f->n_answered when it was answered */
    bool gate;                       /* block in done until the gate opens */
    bool peek;                       /* count the rows on disk in done */
    long long rows_at_answer;
    struct tracked *witness;         /* had this one run when we were answered? */
    bool witness_ran;
};

struct fixture {
    char dir[64];
    char path[128];
    struct locked_clock clk;
    struct smq_store *store;
    struct smq_engine *e;
    struct smq_engine_thread *s;
    pthread_mutex_t mu;
    pthread_cond_t cv;               /* monotonic: bounded waits */
    long n_answered;
    bool gate_entered, gate_open, flag;
    struct tracked ops[N_OPS];
};

static uint64_t lc_mono(void *ctx)
{
    struct locked_clock *c = ctx;
    uint64_t v;

    pthread_mutex_lock(&c->lock);
    v = clock_mono_ms(&c->fake.clock);
    pthread_mutex_unlock(&c->lock);
    return v;
}

static int64_t lc_epoch(void *ctx)
{
    struct locked_clock *c = ctx;
    int64_t v;

    pthread_mutex_lock(&c->lock);
    v = clock_epoch_ms(&c->fake.clock);
    pthread_mutex_unlock(&c->lock);
    return v;
}

static void lc_advance(struct locked_clock *c, uint64_t ms)
{
    pthread_mutex_lock(&c->lock);
    clock_fake_advance(&c->fake, ms);
    pthread_mutex_unlock(&c->lock);
}

/* Rows in msg through a connection of our own; no cmocka here (it may run
 * on the engine thread).  -2 on error. */
static long long rows_on_disk(const char *path)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    long long v = -2;

    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK
        && sqlite3_prepare_v2(db, "SELECT count(*) FROM msg", -1, &st, NULL) == SQLITE_OK
        && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

static void on_done(struct smq_op *op, void *arg)
{
    struct tracked *t = arg;
    struct fixture *f = t->f;
    long long rows = t->peek ? rows_on_disk(f->path) : 0;

    (void)op;
    pthread_mutex_lock(&f->mu);
    t->answers++;
    t->order = f->n_answered++;
    t->rows_at_answer = rows;
    if (t->witness != NULL)
        t->witness_ran = t->witness->op.send.seq[0] != 0;
    pthread_cond_broadcast(&f->cv);
    if (t->gate) {
        f->gate_entered = true;
        while (!f->gate_open)
            pthread_cond_wait(&f->cv, &f->mu);
    }
    pthread_mutex_unlock(&f->mu);
}

/* ---- fixture ------------------------------------------------------------------ */

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    struct smq_engine_opts eo;
    char err[256];

    if (f == NULL)
        return -1;
    *state = f;
    pthread_mutex_init(&f->mu, NULL);
    clock_mono_cond_init(&f->cv);
    pthread_mutex_init(&f->clk.lock, NULL);
    clock_fake_init(&f->clk.fake, 5000000u, 1700000000500LL);
    f->clk.clock = (struct smq_clock){.mono_ms = lc_mono, .epoch_ms = lc_epoch, .ctx = &f->clk};
    snprintf(f->dir, sizeof f->dir, "/tmp/smqd-test-engine-thread-XXXXXX");
    if (mkdtemp(f->dir) == NULL)
        return -1;
    snprintf(f->path, sizeof f->path, "%s/smqd.db", f->dir);
    if (store_open(&(struct store_config){.path = f->path, .sync = SMQ_SYNC_NORMAL}, &f->store,
                   err, sizeof err) != 0)
        return -1;
    eo = (struct smq_engine_opts){.clock = &f->clk.clock, .store = f->store, .max_queues = 10};
    if (engine_open(&eo, &f->e, err, sizeof err) != 0)
        return -1;
    return engine_thread_start(f->e, &f->s) == 0 ? 0 : -1;
}

static int rm_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st, (void)type, (void)ftw;
    return remove(path);
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    pthread_mutex_lock(&f->mu);      /* a failed test must not leave the thread held */
    f->gate_open = true;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
    engine_thread_free(f->s);
    engine_close(f->e);
    store_close(f->store);
    for (size_t i = 0; i < N_OPS; i++)
        op_release(&f->ops[i].op);
    nftw(f->dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
    pthread_cond_destroy(&f->cv);
    pthread_mutex_destroy(&f->mu);
    pthread_mutex_destroy(&f->clk.lock);
    free(f);
    return 0;
}

/* ---- helpers ------------------------------------------------------------------ */

static struct tracked *prep(struct fixture *f, int i, enum smq_op_kind kind, const char *queue)
{
    struct tracked *t = &f->ops[i];

    op_release(&t->op);
    memset(t, 0, sizeof *t);
    t->f = f;
    op_init(&t->op, kind);
    snprintf(t->op.queue, sizeof t->op.queue, "%s", queue);
    t->op.done = on_done;
    t->op.done_arg = t;
    return t;
}

static struct tracked *prep_send(struct fixture *f, int i, const char *queue)
{
    static const char body[] = "wake";
    struct tracked *t = prep(f, i, SMQ_OP_SEND, queue);

    t->op.send.items[0] = (struct smq_send_item){.body = body, .body_len = sizeof body - 1,
                                                 .priority = 8};
    t->op.send.n = 1;
    return t;
}

static struct tracked *prep_receive(struct fixture *f, int i, const char *queue, int64_t wait_s)
{
    struct tracked *t = prep(f, i, SMQ_OP_RECEIVE, queue);

    t->op.recv.max_msgs = 1;
    t->op.recv.wait_s = wait_s;
    return t;
}

/* Waits (bounded) until cond(f, arg) holds; false when the bound ran out. */
static bool wait_for(struct fixture *f, bool (*cond)(struct fixture *, const void *),
                     const void *arg)
{
    struct timespec deadline;
    bool ok;

    clock_mono_deadline(BOUND_MS, &deadline);
    pthread_mutex_lock(&f->mu);
    while (!(ok = cond(f, arg)))
        if (pthread_cond_timedwait(&f->cv, &f->mu, &deadline) == ETIMEDOUT) {
            ok = cond(f, arg);
            break;
        }
    pthread_mutex_unlock(&f->mu);
    return ok;
}

static bool is_answered(struct fixture *f, const void *arg)
{
    (void)f;
    return ((const struct tracked *)arg)->answers > 0;
}

static bool n_answered_reached(struct fixture *f, const void *arg)
{
    return f->n_answered >= *(const long *)arg;
}

static bool gate_entered(struct fixture *f, const void *arg)
{
    (void)arg;
    return f->gate_entered;
}

static bool flag_set(struct fixture *f, const void *arg)
{
    (void)arg;
    return f->flag;
}

static void set_flag(struct fixture *f)
{
    pthread_mutex_lock(&f->mu);
    f->flag = true;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

static void open_gate(struct fixture *f)
{
    pthread_mutex_lock(&f->mu);
    f->gate_open = true;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

static int answers_of(struct fixture *f, const struct tracked *t)
{
    int n;

    pthread_mutex_lock(&f->mu);
    n = t->answers;
    pthread_mutex_unlock(&f->mu);
    return n;
}

/* Submits t and waits for its answer; returns its result. */
static int run(struct fixture *f, struct tracked *t)
{
    engine_thread_submit(f->s, &t->op);
    if (!wait_for(f, is_answered, t))
        fail_msg("op on %s not answered within %d ms", t->op.queue, BOUND_MS);
    return t->op.result.err;
}

static void create_queue(struct fixture *f, int i, const char *name)
{
    assert_int_equal(run(f, prep(f, i, SMQ_OP_CREATE_QUEUE, name)), 0);
}

/* Parked long polls, as a STATS op run after them reports. */
static size_t parked(struct fixture *f, int i)
{
    struct tracked *t = prep(f, i, SMQ_OP_STATS, "");

    t->op.stats.totals_only = true;
    assert_int_equal(run(f, t), 0);
    return t->op.stats.totals.waiters;
}

/* Submits a gate op and waits until the engine thread is held in its done. */
static void hold_engine(struct fixture *f, int i, const char *queue)
{
    struct tracked *g = prep(f, i, SMQ_OP_GET_QUEUE, queue);

    g->gate = true;
    engine_thread_submit(f->s, &g->op);
    assert_true(wait_for(f, gate_entered, NULL));
}

/* The engine thread's id: worker.h names it "smqd-engine" (its comm). */
static long engine_tid(void)
{
    char path[300], comm[32];
    struct dirent *de;
    long tid = -1;
    DIR *d = opendir("/proc/self/task");
    FILE *fp;

    while (d != NULL && tid < 0 && (de = readdir(d)) != NULL) {
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", de->d_name);
        if ((fp = fopen(path, "r")) == NULL)
            continue;
        if (fgets(comm, sizeof comm, fp) != NULL && strcmp(comm, "smqd-engine\n") == 0)
            tid = strtol(de->d_name, NULL, 10);
        fclose(fp);
    }
    if (d != NULL)
        closedir(d);
    return tid;
}

/* The scheduler state of thread tid ('R', 'S', ...), or '?'. */
static char thread_state(long tid)
{
    char path[64], line[512], *paren;
    FILE *fp;

    snprintf(path, sizeof path, "/proc/self/task/%ld/stat", tid);
    if ((fp = fopen(path, "r")) == NULL)
        return '?';
    paren = fgets(line, sizeof line, fp) != NULL ? strrchr(line, ')') : NULL;
    fclose(fp);
    return paren != NULL && paren[1] == ' ' ? paren[2] : '?';
}

/*
 * Waits (bounded, yielding) until the engine thread is asleep, i.e. has
 * planned its sleep from the clock as it is now.  Only a test that then
 * moves the clock can tell whether the thread looks at it again.  With
 * nothing else to wait for after a run, the thread sleeps only in its
 * wait for work; a false 'S' (valgrind's scheduler) makes the test weaker
 * on that run, never wrong.
 */
static void wait_engine_asleep(void)
{
    uint64_t deadline = clock_mono_us() + (uint64_t)BOUND_MS * 1000;
    long tid = engine_tid();

    assert_true(tid > 0);
    while (thread_state(tid) != 'S') {
        if (clock_mono_us() > deadline)
            fail_msg("the engine thread did not go to sleep within %d ms", BOUND_MS);
        sched_yield();
    }
}

/* ---- several submitting threads ------------------------------------------- */

struct submitter {
    struct fixture *f;
    int k;
};

static void *submit_burst(void *arg)
{
    struct submitter *s = arg;

    for (int j = 0; j < PER_THREAD; j++)
        engine_thread_submit(s->f->s, &s->f->ops[1 + s->k * PER_THREAD + j].op);
    return NULL;
}

/* Each thread's ops: answered once, successfully, in its submission order
 * (both the answers and the run order, which the message seqs show). */
static void check_thread_ops(struct fixture *f, int k)
{
    for (int j = 0; j < PER_THREAD; j++) {
        const struct tracked *t = &f->ops[1 + k * PER_THREAD + j];
        assert_int_equal(t->answers, 1);
        assert_int_equal(t->op.result.err, 0);
        if (j > 0) {
            assert_true(t->order > t[-1].order);
            assert_true(t->op.send.seq[0] > t[-1].op.send.seq[0]);
        }
    }
}

static void test_engine_thread_ops_from_threads_answered_once_in_order(void **state)
{
    struct fixture *f = *state;
    struct submitter subs[N_THREADS];
    pthread_t th[N_THREADS];
    long all = N_OPS;

    create_queue(f, 0, "q");
    for (int i = 1; i < N_OPS; i++)
        prep_send(f, i, "q");
    for (int k = 0; k < N_THREADS; k++) {
        subs[k] = (struct submitter){.f = f, .k = k};
        assert_int_equal(pthread_create(&th[k], NULL, submit_burst, &subs[k]), 0);
    }
    for (int k = 0; k < N_THREADS; k++)
        pthread_join(th[k], NULL);
    assert_true(wait_for(f, n_answered_reached, &all));
    engine_thread_stop(f->s);               /* no answer can come after the join */
    pthread_mutex_lock(&f->mu);
    assert_int_equal(f->n_answered, N_OPS);
    pthread_mutex_unlock(&f->mu);
    for (int k = 0; k < N_THREADS; k++)
        check_thread_ops(f, k);
    assert_int_equal(db_peek_int(f->path, "SELECT count(*) FROM msg"), N_THREADS * PER_THREAD);
}

/* done comes after the commit: a connection of its own, opened inside the
 * callback, already sees the message. */
static void test_engine_thread_answer_follows_commit(void **state)
{
    struct fixture *f = *state;
    struct tracked *s;

    create_queue(f, 0, "q");
    s = prep_send(f, 1, "q");
    s->peek = true;
    assert_int_equal(run(f, s), 0);
    assert_int_equal(s->rows_at_answer, 1);
}

/* ---- one run per inbox ------------------------------------------------------ */

static void *submit_two(void *arg)
{
    struct fixture *f = arg;

    engine_thread_submit(f->s, &f->ops[2].op);
    engine_thread_submit(f->s, &f->ops[3].op);
    set_flag(f);
    return NULL;
}

/* While the engine thread is busy (held inside a run), submits return at
 * once (no lock across the run) and queue up; the next run takes both as
 * one group: when the first is answered, the second has already run. */
static void test_engine_thread_ops_queued_while_busy_run_as_one_group(void **state)
{
    struct fixture *f = *state;
    struct tracked *b, *c;
    pthread_t th;
    bool submitted;

    create_queue(f, 0, "q");
    hold_engine(f, 1, "q");
    b = prep_send(f, 2, "q");
    c = prep_send(f, 3, "q");
    b->witness = c;
    assert_int_equal(pthread_create(&th, NULL, submit_two, f), 0);
    submitted = wait_for(f, flag_set, NULL);
    open_gate(f);
    pthread_join(th, NULL);
    assert_true(submitted);          /* engine_thread_submit did not wait for the run */
    assert_true(wait_for(f, is_answered, c));
    assert_int_equal(b->op.result.err, 0);
    assert_int_equal(c->op.result.err, 0);
    assert_true(b->witness_ran);     /* same run: c ran before b was answered */
    assert_true(b->order < c->order);
}

/* ---- waking the engine thread ----------------------------------------------- */

/* A long poll parks; the thread sleeps until its deadline, 30 s away.  A
 * send must wake it: both are answered well before that, the poll with
 * the message. */
static void test_engine_thread_submit_wakes_sleeping_thread(void **state)
{
    struct fixture *f = *state;
    struct tracked *r;

    create_queue(f, 0, "q");
    r = prep_receive(f, 1, "q", LONG_POLL_S);
    engine_thread_submit(f->s, &r->op);
    assert_int_equal(parked(f, 2), 1);
    wait_engine_asleep();            /* planned a 30 s sleep */
    assert_int_equal(run(f, prep_send(f, 3, "q")), 0);
    assert_true(wait_for(f, is_answered, r));
    assert_int_equal(r->op.result.err, 0);
    assert_int_equal(r->op.recv.n_msgs, 1);
    assert_int_equal(r->op.recv.msgs[0].body_len, 4);
    assert_memory_equal(r->op.recv.msgs[0].body, "wake", 4);
}

/* With no op coming, a timer that has come due wakes the thread: a 1 s
 * long poll whose deadline the fake clock has passed ends MessageNotExist
 * (a thread that slept until the next op would never answer it). */
static void test_engine_thread_due_timer_wakes_thread(void **state)
{
    struct fixture *f = *state;
    struct tracked *r;

    create_queue(f, 0, "q");
    r = prep_receive(f, 1, "q", 1);
    engine_thread_submit(f->s, &r->op);
    assert_int_equal(parked(f, 2), 1);
    wait_engine_asleep();            /* planned a 1 s sleep: the poll's deadline */
    assert_int_equal(answers_of(f, r), 0);
    lc_advance(&f->clk, 2000);
    assert_true(wait_for(f, is_answered, r));
    assert_int_equal(r->op.result.err, SMQ_E_MESSAGE_NOT_EXIST);
    assert_int_equal(answers_of(f, r), 1);
}

/* engine_thread_wake makes the thread look at the timers again: after the clock
 * jumps past a 30 s poll's deadline, the poll ends well before the 30 s
 * the thread had planned to sleep. */
static void test_engine_thread_wake_rereads_the_next_timeout(void **state)
{
    struct fixture *f = *state;
    struct tracked *r;

    create_queue(f, 0, "q");
    r = prep_receive(f, 1, "q", LONG_POLL_S);
    engine_thread_submit(f->s, &r->op);
    assert_int_equal(parked(f, 2), 1);
    wait_engine_asleep();            /* planned a 30 s sleep */
    lc_advance(&f->clk, LONG_POLL_S * 1000 + 1000);
    engine_thread_wake(f->s);
    assert_true(wait_for(f, is_answered, r));
    assert_int_equal(r->op.result.err, SMQ_E_MESSAGE_NOT_EXIST);
}

/* ---- stopping ------------------------------------------------------------------ */

static void *stopper(void *arg)
{
    struct fixture *f = arg;

    set_flag(f);
    engine_thread_stop(f->s);
    return NULL;
}

/* What was submitted before engine_thread_stop (queued behind a held run) runs
 * and commits; the parked poll ends MessageNotExist; each once. */
static void stop_with_queued_ops(struct fixture *f)
{
    pthread_t th;

    hold_engine(f, 3, "q");
    for (int i = 4; i < 8; i++)
        engine_thread_submit(f->s, &prep_send(f, i, "other")->op);
    assert_int_equal(pthread_create(&th, NULL, stopper, f), 0);
    assert_true(wait_for(f, flag_set, NULL));
    open_gate(f);
    pthread_join(th, NULL);
    for (int i = 3; i < 8; i++)
        assert_int_equal(f->ops[i].answers, 1);
    for (int i = 4; i < 8; i++)
        assert_int_equal(f->ops[i].op.result.err, 0);
    assert_int_equal(f->ops[2].answers, 1);
    assert_int_equal(f->ops[2].op.result.err, SMQ_E_MESSAGE_NOT_EXIST);
    assert_int_equal(db_peek_int(f->path, "SELECT count(*) FROM msg"), 4);
}

/* After engine_thread_stop, a submit is answered before it returns, with
 * ServiceUnavailable, and runs nothing. */
static void test_engine_thread_stop_runs_queued_drains_polls_refuses_late(void **state)
{
    struct fixture *f = *state;
    struct tracked *late;

    create_queue(f, 0, "q");
    create_queue(f, 1, "other");
    engine_thread_submit(f->s, &prep_receive(f, 2, "q", LONG_POLL_S)->op);
    assert_int_equal(parked(f, 8), 1);
    stop_with_queued_ops(f);
    late = prep_send(f, 9, "other");
    engine_thread_submit(f->s, &late->op);
    assert_int_equal(answers_of(f, late), 1);
    assert_int_equal(late->op.result.err, SMQ_E_SERVICE_UNAVAILABLE);
    assert_int_equal(db_peek_int(f->path, "SELECT count(*) FROM msg"), 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
        T(test_engine_thread_ops_from_threads_answered_once_in_order),
        T(test_engine_thread_answer_follows_commit),
        T(test_engine_thread_ops_queued_while_busy_run_as_one_group),
        T(test_engine_thread_submit_wakes_sleeping_thread),
        T(test_engine_thread_due_timer_wakes_thread),
        T(test_engine_thread_wake_rereads_the_next_timeout),
        T(test_engine_thread_stop_runs_queued_drains_polls_refuses_late),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
