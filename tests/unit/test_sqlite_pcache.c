/*
 * test_sqlite_pcache.c — the page-cache wrapper (sqlite_pcache.c): a
 * truncation that cannot drop a page is not passed on, one that can is,
 * and SQLite on top of it keeps its data through commits, balances and a
 * rollback that must drop appended pages.
 *
 * Below the wrapper sits a counting layer over SQLite's default cache
 * (installed as "the default" before the wrapper takes it), so the tests
 * see which truncations reach the real cache.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "sqlite_store.h"

#define PAGE 4096u
#define PARKING_KEY (0x40000000u / PAGE + 1)   /* the locking byte's page */

static sqlite3_pcache_methods2 real;       /* SQLite's default cache */
static sqlite3_pcache_methods2 wrapper;    /* what sqlite_pcache_install put in place */
static unsigned truncations_passed;
static unsigned pages_parked;              /* rekeys to PARKING_KEY seen below the wrapper */

static int c_init(void *arg) { (void)arg; return real.xInit(real.pArg); }
static void c_shutdown(void *arg) { (void)arg; real.xShutdown(real.pArg); }
static sqlite3_pcache *c_create(int sz, int extra, int purgeable)
{
    return real.xCreate(sz, extra, purgeable);
}
static void c_cachesize(sqlite3_pcache *p, int n) { real.xCachesize(p, n); }
static int c_pagecount(sqlite3_pcache *p) { return real.xPagecount(p); }
static sqlite3_pcache_page *c_fetch(sqlite3_pcache *p, unsigned key, int create)
{
    return real.xFetch(p, key, create);
}
static void c_unpin(sqlite3_pcache *p, sqlite3_pcache_page *pg, int discard)
{
    real.xUnpin(p, pg, discard);
}
static void c_rekey(sqlite3_pcache *p, sqlite3_pcache_page *pg, unsigned o, unsigned n)
{
    if (n == PARKING_KEY)
        pages_parked++;
    real.xRekey(p, pg, o, n);
}
static void c_truncate(sqlite3_pcache *p, unsigned limit)
{
    truncations_passed++;
    real.xTruncate(p, limit);
}
static void c_destroy(sqlite3_pcache *p) { real.xDestroy(p); }
static void c_shrink(sqlite3_pcache *p) { real.xShrink(p); }

static const sqlite3_pcache_methods2 counting = {
    .iVersion = 1, .xInit = c_init, .xShutdown = c_shutdown, .xCreate = c_create,
    .xCachesize = c_cachesize, .xPagecount = c_pagecount, .xFetch = c_fetch,
    .xUnpin = c_unpin, .xRekey = c_rekey, .xTruncate = c_truncate, .xDestroy = c_destroy,
    .xShrink = c_shrink,
};

/* ---- helpers on a cache made through the wrapper ---------------------------- */

static sqlite3_pcache *new_cache_with_pages(unsigned n)
{
    sqlite3_pcache *c = wrapper.xCreate((int)PAGE, 16, 1);

    assert_non_null(c);
    wrapper.xCachesize(c, 100);
    for (unsigned key = 1; key <= n; key++) {
        sqlite3_pcache_page *pg = wrapper.xFetch(c, key, 2);
        assert_non_null(pg);
        wrapper.xUnpin(c, pg, 0);
    }
    return c;
}

static bool has_page(sqlite3_pcache *c, unsigned key)
{
    sqlite3_pcache_page *pg = wrapper.xFetch(c, key, 0);

    if (pg != NULL)
        wrapper.xUnpin(c, pg, 0);
    return pg != NULL;
}

/* Moves the page at from to to, as the pager does (pinned while moved). */
static void move_page(sqlite3_pcache *c, unsigned from, unsigned to)
{
    sqlite3_pcache_page *pg = wrapper.xFetch(c, from, 0);

    assert_non_null(pg);
    wrapper.xRekey(c, pg, from, to);
    wrapper.xUnpin(c, pg, 0);
}

/* ---- the cache ---------------------------------------------------------------- */

/* A balance's swap of pages 3 and 5 through the parking key, then the end
 * of the transaction: nothing is beyond page 10, so nothing is walked. */
static void test_a_swap_through_the_parking_key_does_not_reach_the_cache(void **state)
{
    sqlite3_pcache *c = new_cache_with_pages(10);

    (void)state;
    truncations_passed = 0;
    move_page(c, 3, PARKING_KEY);
    move_page(c, 5, 3);
    move_page(c, PARKING_KEY, 5);
    wrapper.xTruncate(c, 11);
    assert_int_equal(truncations_passed, 0);
    for (unsigned key = 1; key <= 10; key++)
        assert_true(has_page(c, key));
    assert_false(has_page(c, PARKING_KEY));
    wrapper.xDestroy(c);
}

static void test_pages_at_or_beyond_the_limit_are_dropped(void **state)
{
    sqlite3_pcache *c = new_cache_with_pages(10);

    (void)state;
    truncations_passed = 0;
    wrapper.xTruncate(c, 6);
    assert_int_equal(truncations_passed, 1);
    for (unsigned key = 1; key <= 10; key++)
        assert_int_equal(has_page(c, key), key < 6);
    wrapper.xTruncate(c, 6);              /* nothing left there */
    assert_int_equal(truncations_passed, 1);
    wrapper.xTruncate(c, 3);              /* but below, there is */
    assert_int_equal(truncations_passed, 2);
    assert_false(has_page(c, 3));
    assert_true(has_page(c, 2));
    wrapper.xDestroy(c);
}

static void test_a_page_left_parked_is_dropped(void **state)
{
    sqlite3_pcache *c = new_cache_with_pages(10);

    (void)state;
    truncations_passed = 0;
    move_page(c, 2, PARKING_KEY);
    wrapper.xTruncate(c, 11);
    assert_int_equal(truncations_passed, 1);
    assert_false(has_page(c, PARKING_KEY));
    assert_true(has_page(c, 10));
    wrapper.xTruncate(c, 11);             /* it is gone: nothing to walk for */
    assert_int_equal(truncations_passed, 1);
    wrapper.xDestroy(c);
}

static void test_a_page_moved_beyond_the_limit_is_dropped(void **state)
{
    sqlite3_pcache *c = new_cache_with_pages(10);

    (void)state;
    truncations_passed = 0;
    move_page(c, 4, 20);
    wrapper.xTruncate(c, 11);
    assert_int_equal(truncations_passed, 1);
    assert_false(has_page(c, 20));
    assert_true(has_page(c, 10));
    wrapper.xDestroy(c);
}

/* ---- SQLite on top of it ------------------------------------------------------ */

static void exec_ok(sqlite3 *db, const char *sql)
{
    char *err = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &err);

    if (rc != SQLITE_OK)
        fail_msg("%s: %s", sql, err != NULL ? err : "?");
    sqlite3_free(err);
}

static long long query_ll(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    long long v = -1;

    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    if (sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* Rows of random keys and sizes, in and out: balances that swap page
 * numbers through the parking key (which a queue's in-order rows rarely
 * cause), and commits after them that must not reach the cache. */
static void park_pages(sqlite3 *db)
{
    unsigned seed = 12345;

    pages_parked = 0;
    for (int round = 0; round < 300; round++) {
        char sql[200];

        seed = seed * 1103515245u + 12345u;
        snprintf(sql, sizeof sql, "INSERT OR REPLACE INTO r VALUES(%u, randomblob(%u)),"
                 "(%u, randomblob(%u)); DELETE FROM r WHERE k %% 97 = %u",
                 seed % 5000, 200 + seed % 1500, (seed >> 8) % 5000, 200 + (seed >> 4) % 1500,
                 round % 97);
        exec_ok(db, sql);
    }
}

/* A queue's life (1 KiB rows in at one end, out at the other) and random
 * rows that park pages commit without walking the cache; a rolled-back
 * transaction that grew the file drops its appended pages, and the data
 * read back afterwards is the committed data. */
static void test_sqlite_commits_skip_and_a_rollback_drops(void **state)
{
    char path[] = "/tmp/smqd-pcache-test-XXXXXX";
    int fd = mkstemp(path);
    char wal[sizeof path + 8];
    sqlite3 *db = NULL;
    unsigned before_rollback;

    (void)state;
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    exec_ok(db, "PRAGMA auto_vacuum=INCREMENTAL; PRAGMA journal_mode=WAL;"
                "CREATE TABLE b(seq INTEGER PRIMARY KEY, body BLOB NOT NULL)");
    truncations_passed = 0;
    for (int round = 0; round < 200; round++) {
        char sql[160];
        snprintf(sql, sizeof sql, "BEGIN; INSERT INTO b VALUES(%d, zeroblob(1024)),"
                 "(%d, zeroblob(1024)); DELETE FROM b WHERE seq = %d; COMMIT",
                 2 * round, 2 * round + 1, round);
        exec_ok(db, sql);
    }
    exec_ok(db, "CREATE TABLE r(k INTEGER PRIMARY KEY, v BLOB)");
    park_pages(db);
    assert_true(pages_parked > 0);
    assert_int_equal(truncations_passed, 0);
    before_rollback = truncations_passed;
    exec_ok(db, "BEGIN; INSERT INTO b SELECT seq + 100000, zeroblob(1024) FROM b; ROLLBACK");
    assert_true(truncations_passed > before_rollback);
    assert_int_equal(query_ll(db, "SELECT count(*) FROM b"), 200);
    assert_int_equal(query_ll(db, "SELECT min(seq) FROM b"), 200);
    exec_ok(db, "INSERT INTO b SELECT seq + 100000, zeroblob(1024) FROM b");
    assert_int_equal(query_ll(db, "SELECT count(*) FROM b"), 400);
    assert_int_equal(query_ll(db, "SELECT count(*) FROM pragma_integrity_check "
                                  "WHERE integrity_check <> 'ok'"), 0);
    sqlite3_close(db);
    snprintf(wal, sizeof wal, "%s-wal", path);
    unlink(wal);
    snprintf(wal, sizeof wal, "%s-shm", path);
    unlink(wal);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_swap_through_the_parking_key_does_not_reach_the_cache),
        cmocka_unit_test(test_pages_at_or_beyond_the_limit_are_dropped),
        cmocka_unit_test(test_a_page_left_parked_is_dropped),
        cmocka_unit_test(test_a_page_moved_beyond_the_limit_is_dropped),
        cmocka_unit_test(test_sqlite_commits_skip_and_a_rollback_drops),
    };

    /* Before SQLite initialises: the counting layer becomes the cache the
     * wrapper finds, and the wrapper's methods are read back for the tests. */
    if (sqlite3_config(SQLITE_CONFIG_GETPCACHE2, &real) != SQLITE_OK ||
        sqlite3_config(SQLITE_CONFIG_PCACHE2, &counting) != SQLITE_OK)
        return 1;
    sqlite_pcache_install();
    if (sqlite3_config(SQLITE_CONFIG_GETPCACHE2, &wrapper) != SQLITE_OK ||
        wrapper.xTruncate == counting.xTruncate || sqlite3_initialize() != SQLITE_OK)
        return 1;
    return cmocka_run_group_tests(tests, NULL, NULL);
}
