/*
 * test_space.c — unit tests for the engine's disk space (src/engine/space.c) on a
 * real SQLite store in a mkdtemp directory: entering the storage-full mode
 * releases the disk reserve, a recheck before the cool-down does nothing
 * and one after it retakes the reserve and leaves the mode (or, with no
 * room, stays and tries again a cool-down later), a missing reserve starts
 * the mode, and the reclamation of free pages: when a step is due, what
 * it hands back, its pace, and how the disk-full mode changes both.  Time
 * is a fake clock; the log goes to a file in the test's directory.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "scratch_dir.h"
#include "smqd/clock.h"
#include "smqd/errors.h"
#include "smqd/log.h"
#include "smqd/store.h"
#include "space.h"

#define RESERVE_BYTES ((uint64_t)1 << 20)
#define COOLDOWN_MS 5000             /* space.c FULL_COOLDOWN_MS */
#define MAINTAIN_MS 5000             /* space.c MAINTAIN_INTERVAL_MS */
#define STEP_MS 100                  /* space.c RECLAIM_STEP_MS */
#define NO_ROOM ((uint64_t)1 << 62)  /* a margin no file system has free */

struct fixture {
    char dir[64];
    char path[128];
    char reserve[160];
    char logpath[128];
    struct smq_store *store;
    struct smq_fake_clock clock;
    struct space sp;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    struct store_config cfg = {.backend = SMQ_STORE_SQLITE, .sync = SMQ_SYNC_NORMAL};
    char err[256];

    if (f == NULL)
        return -1;
    snprintf(f->dir, sizeof f->dir, "/tmp/smqd-test-space-XXXXXX");
    if (mkdtemp(f->dir) == NULL)
        return -1;
    snprintf(f->path, sizeof f->path, "%s/smqd.db", f->dir);
    snprintf(f->reserve, sizeof f->reserve, "%s.reserve", f->path);
    snprintf(f->logpath, sizeof f->logpath, "%s/smqd.log", f->dir);
    if (log_open(f->logpath) != 0)
        return -1;
    cfg.path = f->path;
    if (store_open(&cfg, &f->store, err, sizeof err) != 0)
        return -1;
    if (store_reserve_init(f->store, f->path, RESERVE_BYTES) != 0)
        return -1;
    clock_fake_init(&f->clock, 1000, 1700000000000);
    space_init(&f->sp, f->store, &f->clock.clock, 0, false);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    store_close(f->store);
    log_close();
    scratch_dir_remove(f->dir);
    free(f);
    return 0;
}

/* The reserve file exists with all its blocks. */
static bool reserve_held(const struct fixture *f)
{
    struct stat st;

    return stat(f->reserve, &st) == 0 && (uint64_t)st.st_blocks * 512 >= RESERVE_BYTES;
}

static uint64_t now(const struct fixture *f)
{
    return f->clock.mono_ms;
}

/* One queue and n messages of body_len bytes each, committed. */
static void fill(struct fixture *f, int n, size_t body_len)
{
    struct store_queue_rec q;
    char *body = malloc(body_len);

    assert_non_null(body);
    memset(body, 'b', body_len);
    memset(&q, 0, sizeof q);
    q.id = 1;
    snprintf(q.name, sizeof q.name, "q");
    q.max_msg_size = 65536;
    q.retention_s = 345600;
    q.visibility_s = 30;
    assert_int_equal(store_begin(f->store), 0);
    assert_int_equal(store_queue_insert(f->store, &q), 0);
    for (int i = 0; i < n; i++) {
        struct store_msg_rec m = {.queue_id = 1, .seq = (uint64_t)i + 1, .priority = 8,
                                  .enqueue_ms = 1700000000000, .visible_ms = 1700000000000,
                                  .expire_ms = 1700345600000};
        body[0] = (char)i;                    /* no two bodies alike */
        struct store_msg_content c = {body, body_len, NULL, NULL, 0};
        assert_int_equal(store_msg_insert(f->store, &m, &c), 0);
    }
    assert_int_equal(store_commit(f->store), 0);
    assert_int_equal(store_checkpoint(f->store), 0);
    free(body);
}

/* Deletes every message (the file keeps the pages as free ones). */
static void empty(struct fixture *f)
{
    assert_int_equal(store_begin(f->store), 0);
    assert_int_equal(store_queue_purge(f->store, 1), 0);
    assert_int_equal(store_commit(f->store), 0);
    assert_int_equal(store_checkpoint(f->store), 0);
}

/* ---- the storage-full mode --------------------------------------------------- */

static void test_space_starts_outside_the_mode(void **state)
{
    struct fixture *f = *state;

    assert_false(f->sp.full);
    assert_true(reserve_held(f));
    assert_int_equal(space_reclaim_timeout_ms(&f->sp, now(f)), UINT64_MAX);
    /* A recheck outside the mode changes nothing. */
    space_recheck(&f->sp, now(f) + 100000);
    assert_false(f->sp.full);
}

static void test_space_full_releases_reserve(void **state)
{
    struct fixture *f = *state;

    space_full(&f->sp);
    assert_true(f->sp.full);
    assert_false(reserve_held(f));
    assert_int_equal(access(f->reserve, F_OK), -1);
    assert_int_equal(f->sp.full_until_mono, now(f) + COOLDOWN_MS);
    /* Entering the mode makes free pages worth a look at once. */
    assert_int_equal(space_reclaim_timeout_ms(&f->sp, now(f)), 0);
}

static void test_space_recheck_before_cooldown_does_nothing(void **state)
{
    struct fixture *f = *state;

    space_full(&f->sp);
    clock_fake_advance(&f->clock, COOLDOWN_MS - 1);
    space_recheck(&f->sp, now(f));
    assert_true(f->sp.full);
    assert_false(reserve_held(f));
    assert_int_equal(f->sp.full_retries, 0);
}

static void test_space_recheck_after_cooldown_retakes_reserve(void **state)
{
    struct fixture *f = *state;

    space_full(&f->sp);
    clock_fake_advance(&f->clock, COOLDOWN_MS);
    space_recheck(&f->sp, now(f));
    assert_false(f->sp.full);
    assert_true(reserve_held(f));
    assert_int_equal(f->sp.full_retries, 0);
    /* A second full disk finds a reserve to release again. */
    space_full(&f->sp);
    assert_true(f->sp.full);
    assert_false(reserve_held(f));
}

/* Another full disk during the cool-down starts it again. */
static void test_space_full_again_restarts_cooldown(void **state)
{
    struct fixture *f = *state;

    space_full(&f->sp);
    clock_fake_advance(&f->clock, 3000);
    space_full(&f->sp);
    assert_int_equal(f->sp.full_until_mono, now(f) + COOLDOWN_MS);
    clock_fake_advance(&f->clock, 2000);       /* the first cool-down's end */
    space_recheck(&f->sp, now(f));
    assert_true(f->sp.full);
    assert_false(reserve_held(f));
    clock_fake_advance(&f->clock, 3000);
    space_recheck(&f->sp, now(f));
    assert_false(f->sp.full);
    assert_true(reserve_held(f));
}

/* Without the margin free beside the reserve, the mode stays and the next
 * attempt waits another cool-down; with room, the mode ends. */
static void test_space_recheck_without_room_stays_full(void **state)
{
    struct fixture *f = *state;

    f->sp.reserve_margin = NO_ROOM;
    space_full(&f->sp);
    clock_fake_advance(&f->clock, COOLDOWN_MS);
    space_recheck(&f->sp, now(f));
    assert_true(f->sp.full);
    assert_false(reserve_held(f));
    assert_int_equal(f->sp.full_retries, 1);
    assert_int_equal(f->sp.full_until_mono, now(f) + COOLDOWN_MS);
    clock_fake_advance(&f->clock, COOLDOWN_MS - 1);
    space_recheck(&f->sp, now(f));
    assert_int_equal(f->sp.full_retries, 1);      /* not tried within the cool-down */
    clock_fake_advance(&f->clock, 1);
    space_recheck(&f->sp, now(f));
    assert_int_equal(f->sp.full_retries, 2);
    assert_true(f->sp.full);

    f->sp.reserve_margin = 0;
    clock_fake_advance(&f->clock, COOLDOWN_MS);
    space_recheck(&f->sp, now(f));
    assert_false(f->sp.full);
    assert_true(reserve_held(f));
    assert_int_equal(f->sp.full_retries, 0);
}

/* A reserve that could not be made at start: the mode is on from the
 * start, and the first run that can retake it leaves it. */
static void test_space_reserve_missing_starts_full(void **state)
{
    struct fixture *f = *state;

    store_reserve_release(f->store);
    assert_false(reserve_held(f));
    space_init(&f->sp, f->store, &f->clock.clock, NO_ROOM, true);
    assert_true(f->sp.full);
    assert_int_equal(space_reclaim_timeout_ms(&f->sp, now(f)), 0);
    space_recheck(&f->sp, now(f));               /* no room yet */
    assert_true(f->sp.full);
    assert_int_equal(f->sp.full_retries, 1);

    space_init(&f->sp, f->store, &f->clock.clock, 0, true);
    assert_true(f->sp.full);
    space_recheck(&f->sp, now(f));               /* no cool-down first */
    assert_false(f->sp.full);
    assert_true(reserve_held(f));
}

/* How many times needle occurs in the log so far. */
static int log_count(const struct fixture *f, const char *needle)
{
    char text[16384];
    FILE *fp = fopen(f->logpath, "r");
    size_t n;
    int count = 0;

    assert_non_null(fp);
    n = fread(text, 1, sizeof text - 1, fp);
    fclose(fp);
    text[n] = '\0';
    for (const char *p = text; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        count++;
    return count;
}

/* A second full disk within the mode (a write failed on the space the
 * released reserve gave back): the reserve is spent, the refusal stops
 * claiming that receives and deletes are served, and the log says so once;
 * retaking the reserve ends that with the mode. */
static void test_space_full_in_the_mode_spends_the_reserve(void **state)
{
    struct fixture *f = *state;

    assert_false(f->sp.reserve_spent);
    space_full(&f->sp);
    assert_false(f->sp.reserve_spent);
    assert_string_equal(space_refusal(&f->sp), SMQ_STORAGE_FULL_REFUSAL);
    assert_int_equal(log_count(f, "while the released reserve lasts"), 1);
    assert_int_equal(log_count(f, "reserve is spent"), 0);

    space_full(&f->sp);
    assert_true(f->sp.full);
    assert_true(f->sp.reserve_spent);
    assert_string_equal(space_refusal(&f->sp), SMQ_STORAGE_FULL_SPENT_REFUSAL);
    assert_null(strstr(space_refusal(&f->sp), "served"));
    assert_null(strstr(space_refusal(&f->sp), "lasts"));
    space_full(&f->sp);
    assert_int_equal(log_count(f, "the reserve is spent"), 1);   /* once, not per failure */

    clock_fake_advance(&f->clock, COOLDOWN_MS);
    space_recheck(&f->sp, now(f));
    assert_false(f->sp.full);
    assert_false(f->sp.reserve_spent);
    assert_true(reserve_held(f));
    space_full(&f->sp);                          /* a reserve to release again */
    assert_false(f->sp.reserve_spent);
    assert_string_equal(space_refusal(&f->sp), SMQ_STORAGE_FULL_REFUSAL);
}

/* Nothing to release (no reserve held, or none could be made at start):
 * the mode starts with the reserve spent. */
static void test_space_full_without_reserve_is_spent(void **state)
{
    struct fixture *f = *state;

    assert_int_equal(store_reserve_init(f->store, f->path, 0), 0);
    assert_int_equal(store_reserve_bytes(f->store), 0);
    space_init(&f->sp, f->store, &f->clock.clock, 0, false);
    space_full(&f->sp);
    assert_true(f->sp.reserve_spent);
    assert_string_equal(space_refusal(&f->sp), SMQ_STORAGE_FULL_SPENT_REFUSAL);
    assert_int_equal(log_count(f, "no disk reserve to release"), 1);

    space_init(&f->sp, f->store, &f->clock.clock, NO_ROOM, true);
    assert_true(f->sp.full);
    assert_true(f->sp.reserve_spent);
    assert_string_equal(space_refusal(&f->sp), SMQ_STORAGE_FULL_SPENT_REFUSAL);
}

/* ---- reclamation -------------------------------------------------------------- */

/* Nothing deleted: nothing to do.  After a delete a step is due at once;
 * a step that finds too little sets the next look a few seconds later
 * and waits for the next delete. */
static void test_space_reclaim_timeout(void **state)
{
    struct fixture *f = *state;
    uint64_t t = now(f);

    assert_int_equal(space_reclaim_timeout_ms(&f->sp, t), UINT64_MAX);
    space_rows_freed(&f->sp);
    assert_int_equal(space_reclaim_timeout_ms(&f->sp, t), 0);
    space_reclaim(&f->sp, t);
    assert_true(f->sp.page_size > 0);            /* the file was looked at */
    assert_true(f->sp.db_pages > 0);
    assert_int_equal(f->sp.vacuumed_pages, 0);
    assert_int_equal(space_reclaim_timeout_ms(&f->sp, t), UINT64_MAX);

    space_rows_freed(&f->sp);
    assert_int_equal(space_reclaim_timeout_ms(&f->sp, t + 1000), MAINTAIN_MS - 1000);
    /* Too early: the step does nothing and stays due. */
    f->sp.page_size = 0;
    space_reclaim(&f->sp, t + 1000);
    assert_int_equal(f->sp.page_size, 0);
    assert_int_equal(space_reclaim_timeout_ms(&f->sp, t + 1000), MAINTAIN_MS - 1000);
    assert_int_equal(space_reclaim_timeout_ms(&f->sp, t + MAINTAIN_MS), 0);
    assert_int_equal(space_reclaim_timeout_ms(&f->sp, t + MAINTAIN_MS + 70), 0);
}

/* Inside a transaction nothing is due and no step runs. */
static void test_space_reclaim_waits_for_transaction(void **state)
{
    struct fixture *f = *state;

    space_rows_freed(&f->sp);
    assert_int_equal(store_begin(f->store), 0);
    assert_int_equal(space_reclaim_timeout_ms(&f->sp, now(f)), UINT64_MAX);
    space_reclaim(&f->sp, now(f));
    assert_int_equal(f->sp.page_size, 0);        /* not even looked at */
    store_rollback(f->store);
    assert_int_equal(space_reclaim_timeout_ms(&f->sp, now(f)), 0);
    space_reclaim(&f->sp, now(f));
    assert_true(f->sp.page_size > 0);
}

/* Many free pages: steps of at most 1024 pages, 100 ms apart, until too
 * few are left; the file really shrinks. */
static void test_space_reclaim_hands_back_pages(void **state)
{
    struct fixture *f = *state;
    struct store_file_stats before, after;
    uint64_t t = now(f), first;
    int steps = 0;

    fill(f, 160, 60000);
    empty(f);
    assert_int_equal(store_file_stats(f->store, &before), 0);
    assert_true(before.free_pages >= 2048);
    space_rows_freed(&f->sp);
    space_reclaim(&f->sp, t);
    first = f->sp.vacuumed_pages;
    assert_true(first > 0);
    assert_true(first <= 1024);
    assert_int_equal(space_reclaim_timeout_ms(&f->sp, t), STEP_MS);
    while (space_reclaim_timeout_ms(&f->sp, t) != UINT64_MAX && steps < 100) {
        t += space_reclaim_timeout_ms(&f->sp, t);
        space_reclaim(&f->sp, t);
        steps++;
    }
    assert_true(steps >= 1);
    assert_true(steps < 100);
    assert_true(f->sp.vacuumed_pages > first);
    assert_int_equal(store_file_stats(f->store, &after), 0);
    assert_true(after.pages < before.pages);
    /* Pointer-map pages may go too: at least the pages counted. */
    assert_true(before.pages - after.pages >= f->sp.vacuumed_pages);
    /* What is left is below the threshold of a step. */
    assert_true(after.free_pages < 1024 || after.free_pages * 10 < after.pages);
}

/* A few free pages are left for reuse normally, but handed back while the
 * disk is full, and the steps then come every 100 ms. */
static void test_space_reclaim_while_full_takes_any_free_page(void **state)
{
    struct fixture *f = *state;
    uint64_t t = now(f);

    fill(f, 20, 20000);
    empty(f);
    space_rows_freed(&f->sp);
    space_reclaim(&f->sp, t);
    assert_true(f->sp.free_pages > 0);
    assert_true(f->sp.free_pages < 1024);
    assert_int_equal(f->sp.vacuumed_pages, 0);
    assert_int_equal(space_reclaim_timeout_ms(&f->sp, t), UINT64_MAX);

    space_full(&f->sp);
    assert_int_equal(space_reclaim_timeout_ms(&f->sp, t), 0);
    space_reclaim(&f->sp, t);
    assert_true(f->sp.vacuumed_pages > 0);
    assert_int_equal(space_reclaim_timeout_ms(&f->sp, t), STEP_MS);
    /* Once none are left, the next look is still only a step away. */
    space_reclaim(&f->sp, t + STEP_MS);
    assert_int_equal(f->sp.free_pages, 0);
    assert_int_equal(space_reclaim_timeout_ms(&f->sp, t + STEP_MS), UINT64_MAX);
    assert_int_equal(f->sp.next_reclaim_mono, t + 2 * STEP_MS);
}

static void test_space_refresh_reads_file(void **state)
{
    struct fixture *f = *state;
    struct store_file_stats fs;

    fill(f, 10, 30000);
    space_refresh(&f->sp);
    assert_int_equal(store_file_stats(f->store, &fs), 0);
    assert_int_equal(f->sp.db_pages, fs.pages);
    assert_int_equal(f->sp.free_pages, fs.free_pages);
    assert_int_equal(f->sp.page_size, fs.page_size);
    assert_true(f->sp.db_pages * f->sp.page_size >= 10 * 30000);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_space_starts_outside_the_mode),
        T(test_space_full_releases_reserve),
        T(test_space_recheck_before_cooldown_does_nothing),
        T(test_space_recheck_after_cooldown_retakes_reserve),
        T(test_space_full_again_restarts_cooldown),
        T(test_space_recheck_without_room_stays_full),
        T(test_space_reserve_missing_starts_full),
        T(test_space_full_in_the_mode_spends_the_reserve),
        T(test_space_full_without_reserve_is_spent),
        T(test_space_reclaim_timeout),
        T(test_space_reclaim_waits_for_transaction),
        T(test_space_reclaim_hands_back_pages),
        T(test_space_reclaim_while_full_takes_any_free_page),
        T(test_space_refresh_reads_file),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
