/*
 * test_store_pg_flow.c — unit tests of the PostgreSQL backend (pg_*.c)
 * where the engine thread and the flush thread meet, against a real
 * throw-away PostgreSQL 15 (the ctest fixture "pg", as test_store_pg.c):
 * the cap on write sets queued for the flush (a commit waits, and learns
 * of a broken store), a full database disk (SQLSTATE 53100) as a known
 * outcome that leaves the store usable and as a fatal deferred flush that
 * says so, writes outside a transaction after store_defer_fsync (sent at
 * once, in order, their failures reported), and a body read racing the
 * flush's eviction from the body cache.
 *
 * Interleavings are forced through the store's test seams (pg_store.h):
 * a hook says when a commit starts to wait, another runs between a body
 * read's choice of what to SELECT and its use of memory.  The second
 * thread is the test's "engine"; waits for it are bounded (10 s) and fail
 * the test.  The 53100 is real: a trigger raises it inside PostgreSQL
 * (PostgreSQL's own disk is not filled; see the cases).
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <libpq-fe.h>

#include "pg_peek.h"
#include "pg_scratch.h"
#include "pg_store.h"
#include "smqd/buf.h"
#include "smqd/errors.h"
#include "smqd/log.h"
#include "smqd/store.h"

struct fixture {
    struct pg_scratch scratch;
    PGconn *peek;                      /* an independent view of the schema */
    struct smq_store *s;
    struct pg_test_seams seams;
    pthread_mutex_t lock;              /* guards the counters below */
    pthread_cond_t cond;
    int waits, done, body_hook_calls;
    int rc;                            /* the second thread's result */
    int (*job)(struct fixture *f);     /* what the second thread runs */
    pthread_t thread;
};

/* ---- fixture ---------------------------------------------------------- */

static void on_commit_wait(void *arg)
{
    struct fixture *f = arg;

    pthread_mutex_lock(&f->lock);
    f->waits++;
    pthread_cond_broadcast(&f->cond);
    pthread_mutex_unlock(&f->lock);
}

/* An application_name of its own: test_store_pg counts the sessions of
 * its own, and ctest runs both against one server at once. */
static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    struct store_config cfg = {.backend = SMQ_STORE_POSTGRESQL, .app_name = "smqd-test-flow"};
    char err[512];

    *state = f;
    if (f == NULL || pg_scratch_create(&f->scratch) != 0)
        return -1;
    pthread_mutex_init(&f->lock, NULL);
    pthread_cond_init(&f->cond, NULL);
    f->peek = PQconnectdb(f->scratch.dsn);
    cfg.dsn = f->scratch.dsn;
    if (PQstatus(f->peek) != CONNECTION_OK || store_open(&cfg, &f->s, err, sizeof err) != 0) {
        fprintf(stderr, "setup: %s %s\n", PQerrorMessage(f->peek), err);
        return -1;
    }
    f->seams = (struct pg_test_seams){.queue_cap = PG_QUEUE_CAP_BYTES,
                                      .body_budget = PG_BODY_CACHE_BYTES,
                                      .on_commit_wait = on_commit_wait, .arg = f};
    pg_store_test_seams(f->s, &f->seams);
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    store_close(f->s);
    PQfinish(f->peek);
    pg_scratch_drop(&f->scratch);
    pthread_cond_destroy(&f->cond);
    pthread_mutex_destroy(&f->lock);
    free(f);
    return 0;
}

#define peek_exec(f, sql) pg_peek_exec((f)->peek, (sql))

#define peek_int(f, sql) pg_peek_int((f)->peek, (sql))

/* ---- the second thread ------------------------------------------------ */

static void *run_job(void *arg)
{
    struct fixture *f = arg;
    int rc = f->job(f);

    pthread_mutex_lock(&f->lock);
    f->rc = rc;
    f->done = 1;
    pthread_cond_broadcast(&f->cond);
    pthread_mutex_unlock(&f->lock);
    return NULL;
}

static void start_job(struct fixture *f, int (*job)(struct fixture *f))
{
    f->job = job;
    assert_int_equal(pthread_create(&f->thread, NULL, run_job, f), 0);
}

/* Waits (at most 10 s) until the job waits for the flush or has ended;
 * returns whether it waits (and has not ended). */
static bool job_waits(struct fixture *f)
{
    struct timespec deadline;
    bool waits;

    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 10;
    pthread_mutex_lock(&f->lock);
    while (f->waits == 0 && !f->done &&
           pthread_cond_timedwait(&f->cond, &f->lock, &deadline) == 0) {
    }
    waits = f->waits > 0 && !f->done;
    pthread_mutex_unlock(&f->lock);
    return waits;
}

static int join_job(struct fixture *f)
{
    assert_int_equal(pthread_join(f->thread, NULL), 0);
    return f->rc;
}

/* ---- records ---------------------------------------------------------- */

static int put_msg(struct smq_store *s, uint64_t seq)
{
    struct store_msg_rec m = {.queue_id = 1, .seq = seq, .priority = 8,
                              .enqueue_ms = 1700000000000, .visible_ms = 1700000000000,
                              .expire_ms = 1700000345600};
    char body[16];
    int n = snprintf(body, sizeof body, "body %04llu", (unsigned long long)seq);

    return store_msg_insert(s, &m, &(struct store_msg_content){body, (size_t)n, NULL, NULL, 0});
}

static int commit_msg(struct smq_store *s, uint64_t seq)
{
    int rc = store_begin(s);

    rc = rc == 0 ? put_msg(s, seq) : rc;
    rc = rc == 0 ? store_commit(s) : rc;
    if (rc != 0)
        store_rollback(s);
    return rc;
}

/* ---- the queue's cap -------------------------------------------------- */

static int commit_second(struct fixture *f)
{
    return commit_msg(f->s, 2);
}

/* Over the cap, a deferred commit waits on its thread until the flush has
 * taken what was queued before it, then queues its own and returns. */
static void test_pg_commit_waits_while_the_queue_is_over_its_cap(void **state)
{
    struct fixture *f = *state;

    f->seams.queue_cap = 1;                    /* any queued set is over it */
    pg_store_test_seams(f->s, &f->seams);
    assert_int_equal(store_defer_fsync(f->s), 0);
    assert_int_equal(commit_msg(f->s, 1), 0);  /* nothing queued before it: no wait */
    start_job(f, commit_second);
    assert_true(job_waits(f));
    assert_int_equal(peek_int(f, "SELECT count(*) FROM smq_msg"), 0);
    assert_int_equal(store_flush(f->s), 0);    /* takes seq 1 and lets the commit go */
    assert_int_equal(join_job(f), 0);
    assert_int_equal(f->waits, 1);
    assert_int_equal(peek_int(f, "SELECT count(*) FROM smq_msg"), 1);
    assert_int_equal(store_flush(f->s), 0);
    assert_int_equal(peek_int(f, "SELECT count(*) FROM smq_msg"), 2);
}

/* A commit waiting for a flush that fails returns the store's broken code
 * (here fenced: another node took the lease), its writes never sent. */
static void test_pg_commit_waiting_for_a_failed_flush_returns_its_code(void **state)
{
    struct fixture *f = *state;

    f->seams.queue_cap = 1;
    pg_store_test_seams(f->s, &f->seams);
    peek_exec(f, "UPDATE smq_lease SET holder_token = 'smqd/a/1', epoch = 1, "
                 "expires_at = now() + interval '1 hour' WHERE id = 1");
    assert_int_equal(store_fence(f->s, "smqd/a/1", 1), 0);
    assert_int_equal(store_defer_fsync(f->s), 0);
    assert_int_equal(commit_msg(f->s, 1), 0);
    start_job(f, commit_second);
    assert_true(job_waits(f));
    peek_exec(f, "UPDATE smq_lease SET holder_token = 'smqd/b/2', epoch = 2 WHERE id = 1");
    assert_int_equal(store_flush(f->s), SMQ_E_SERVICE_UNAVAILABLE);
    assert_int_equal(join_job(f), SMQ_E_SERVICE_UNAVAILABLE);
    assert_int_equal(store_flush(f->s), SMQ_E_SERVICE_UNAVAILABLE);
    assert_int_equal(peek_int(f, "SELECT count(*) FROM smq_msg"), 0);
}

/* ---- a full database disk (SQLSTATE 53100) ----------------------------
 * A trigger raises disk_full where PostgreSQL would when it cannot extend
 * a file: the same error reply, through the same path.  Filling a real
 * file system under the server needs a mount this test cannot make. */

static void make_disk_full(struct fixture *f)
{
    peek_exec(f, "CREATE FUNCTION full_disk() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                 "RAISE EXCEPTION 'could not extend file: No space left on device' "
                 "USING ERRCODE = 'disk_full'; END $$; CREATE TRIGGER full_disk BEFORE INSERT "
                 "ON smq_body FOR EACH ROW EXECUTE FUNCTION full_disk()");
}

static void test_pg_full_disk_commit_is_known_and_leaves_the_store_usable(void **state)
{
    struct fixture *f = *state;
    struct smq_buf b;

    make_disk_full(f);
    assert_int_equal(commit_msg(f->s, 1), SMQ_E_STORAGE_FULL);
    assert_int_equal(put_msg(f->s, 2), SMQ_E_STORAGE_FULL);      /* implicit */
    assert_int_equal(store_meta_set(f->s, "k", "v", 1), 0);     /* no body: still works */
    peek_exec(f, "DROP TRIGGER full_disk ON smq_body");          /* space freed */
    assert_int_equal(commit_msg(f->s, 3), 0);
    assert_int_equal(peek_int(f, "SELECT count(*) FROM smq_msg"), 1);
    buf_init(&b);
    assert_int_equal(store_msg_bodies(f->s, &(struct store_body_read){.seq = 1}, 1, &b),
                     SMQ_E_MESSAGE_NOT_EXIST);                   /* rolled back, bodies too */
    buf_free(&b);
}

static char *read_file(const char *path)
{
    FILE *fp = fopen(path, "r");
    char *text = calloc(1, 65536);

    assert_non_null(fp);
    assert_non_null(text);
    text[fread(text, 1, 65535, fp)] = '\0';
    fclose(fp);
    return text;
}

/* A deferred flush's failure stays fatal (InternalError: the engine's
 * memory moved on), but the log says why. */
static void test_pg_full_disk_flush_is_fatal_and_names_the_cause(void **state)
{
    struct fixture *f = *state;
    char dir[] = "/tmp/test_store_pg_flow.XXXXXX", path[128], *text;

    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/smqd.log", dir);
    assert_int_equal(store_defer_fsync(f->s), 0);
    assert_int_equal(commit_msg(f->s, 1), 0);
    make_disk_full(f);
    assert_int_equal(log_open(path), 0);
    assert_int_equal(store_flush(f->s), SMQ_E_INTERNAL);
    log_close();
    assert_int_equal(store_begin(f->s), SMQ_E_INTERNAL);        /* broken */
    text = read_file(path);
    if (strstr(text, "PostgreSQL is out of disk space (53100)") == NULL)
        fail_msg("log lacks the cause: %s", text);
    free(text);
    unlink(path);
    rmdir(dir);
}

/* ---- writes outside a transaction after store_defer_fsync ------------- */

static struct store_queue_rec make_queue(int64_t id, const char *name)
{
    struct store_queue_rec q = {.id = id, .create_s = 1700000000, .modify_s = 1700000000,
                                .max_msg_size = 65536, .retention_s = 345600,
                                .visibility_s = 30};

    snprintf(q.name, sizeof q.name, "%s", name);
    return q;
}

static void test_pg_implicit_write_after_defer_reports_its_failure(void **state)
{
    struct fixture *f = *state;
    struct store_queue_rec ghost = make_queue(9, "ghost"), q = make_queue(1, "q");

    assert_int_equal(store_defer_fsync(f->s), 0);
    assert_int_equal(store_queue_update(f->s, &ghost), SMQ_E_QUEUE_NOT_EXIST);
    assert_int_equal(store_flush(f->s), 0);                    /* nothing broken */
    assert_int_equal(store_queue_insert(f->s, &q), 0);
    assert_int_equal(peek_int(f, "SELECT count(*) FROM smq_queue"), 1);   /* sent at once */
    assert_int_equal(store_flush(f->s), 0);
    assert_int_equal(commit_msg(f->s, 1), 0);
    assert_int_equal(store_flush(f->s), 0);
}

static int update_queue(struct fixture *f)
{
    struct store_queue_rec q = make_queue(1, "q");

    q.delay_s = 77;
    return store_queue_update(f->s, &q);
}

/* Sent at once, but after what was committed before it: it waits for the
 * flush of the queued sets (here the insert it updates). */
static void test_pg_implicit_write_after_defer_follows_the_queued_sets(void **state)
{
    struct fixture *f = *state;
    struct store_queue_rec q = make_queue(1, "q");

    assert_int_equal(store_defer_fsync(f->s), 0);
    assert_int_equal(store_begin(f->s), 0);
    assert_int_equal(store_queue_insert(f->s, &q), 0);
    assert_int_equal(store_commit(f->s), 0);                   /* queued */
    start_job(f, update_queue);
    assert_true(job_waits(f));
    assert_int_equal(store_flush(f->s), 0);
    assert_int_equal(join_job(f), 0);
    assert_int_equal(peek_int(f, "SELECT delay_s FROM smq_queue WHERE id = 1"), 77);
    assert_int_equal(store_flush(f->s), 0);
}

/* ---- a body read racing the cache's eviction -------------------------- */

/* Between the read's choice of SELECT and its copy, a flush commits a new
 * body that evicts the oldest cached one; the first time it also queues
 * one more body, so that a second try would meet the same race again. */
static void flush_between(void *arg)
{
    struct fixture *f = arg;

    f->body_hook_calls++;
    assert_int_equal(store_flush(f->s), 0);
    if (f->body_hook_calls == 1)
        assert_int_equal(commit_msg(f->s, 4), 0);
}

static void test_pg_body_read_survives_eviction_by_the_flush(void **state)
{
    struct fixture *f = *state;
    struct store_body_read r[2] = {{.seq = 1}, {.seq = 2}};
    struct smq_buf out;

    f->seams.body_budget = 2 * strlen("body 0001");            /* two bodies */
    pg_store_test_seams(f->s, &f->seams);
    assert_int_equal(store_defer_fsync(f->s), 0);
    assert_int_equal(commit_msg(f->s, 1), 0);
    assert_int_equal(commit_msg(f->s, 2), 0);
    assert_int_equal(store_flush(f->s), 0);                    /* 1 and 2 cached */
    assert_int_equal(commit_msg(f->s, 3), 0);                  /* queued */
    f->seams.on_body_misses = flush_between;
    buf_init(&out);
    assert_int_equal(store_msg_bodies(f->s, r, 2, &out), 0);
    assert_int_equal(out.len, 18);
    assert_memory_equal(out.data, "body 0001body 0002", 18);
    assert_int_equal(r[0].len, 9);
    assert_int_equal(r[1].len, 9);
    f->seams.on_body_misses = NULL;
    assert_int_equal(peek_int(f, "SELECT count(*) FROM smq_body"), 3);
    buf_free(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_pg_commit_waits_while_the_queue_is_over_its_cap,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_pg_commit_waiting_for_a_failed_flush_returns_its_code, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_pg_full_disk_commit_is_known_and_leaves_the_store_usable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pg_full_disk_flush_is_fatal_and_names_the_cause,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_pg_implicit_write_after_defer_reports_its_failure,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_pg_implicit_write_after_defer_follows_the_queued_sets, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pg_body_read_survives_eviction_by_the_flush,
                                        setup, teardown),
    };

    if (!pg_scratch_available()) {
        fprintf(stderr, "test_store_pg_flow: no PostgreSQL (SMQD_TEST_PG_DSN / "
                        "SMQD_TEST_PG_DIR)\n");
        return 77;
    }
    return cmocka_run_group_tests(tests, NULL, NULL);
}
