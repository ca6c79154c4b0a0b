/*
 * test_store.c — unit tests of the store contract (store.h) on the SQLite
 * backend: schema and refusal rules, every read/write path, the batch body
 * read, transactions, the WAL flush, and the fault seam that upstream
 * relies on to prove "memory is never ahead of disk".
 *
 * Each case gets its own mkdtemp directory, removed in teardown.  What is
 * on disk is checked through a second, independent sqlite3 connection, so
 * the tests do not trust the store to report on itself.
 */
#include <dirent.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "db_peek.h"

#include "smqd/buf.h"
#include "smqd/errors.h"
#include "smqd/store.h"
#include "store_lists.h"
#include "scratch_dir.h"

struct fixture {
    char dir[64];
    char path[128];
    struct smq_store *s;
};

/* ---- fixture ---------------------------------------------------------- */

static int open_store(const char *path, enum smq_sync_mode sync, struct smq_store **out,
                      char *err, size_t err_size)
{
    struct store_config cfg = {.backend = SMQ_STORE_SQLITE, .path = path, .sync = sync};

    return store_open(&cfg, out, err, err_size);
}

/* A message without extensions. */
static int put_msg(struct smq_store *s, const struct store_msg_rec *m, const void *body,
                   size_t body_len, const unsigned char *md5)
{
    return store_msg_insert(s, m, &(struct store_msg_content){body, body_len, md5, NULL, 0});
}

/* One body through the batch read: appended to out, its MD5 in *md5. */
static int body_of(struct smq_store *s, int64_t queue_id, uint64_t seq, struct smq_buf *out,
                   struct mns_body_md5 *md5)
{
    struct store_body_read r = {.queue_id = queue_id, .seq = seq};
    int rc = store_msg_bodies(s, &r, 1, out);

    if (md5 != NULL)
        *md5 = r.md5;
    return rc;
}

static int dir_setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);

    if (f == NULL)
        return -1;
    snprintf(f->dir, sizeof f->dir, "/tmp/smqd-test-store-XXXXXX");
    if (mkdtemp(f->dir) == NULL) {
        free(f);
        return -1;
    }
    snprintf(f->path, sizeof f->path, "%s/smqd.db", f->dir);
    *state = f;
    return 0;
}

static int store_setup(void **state)
{
    struct fixture *f;
    char err[256];

    if (dir_setup(state) != 0)
        return -1;
    f = *state;
    return open_store(f->path, SMQ_SYNC_FULL, &f->s, err, sizeof err) == 0 ? 0 : -1;
}

/* Removes the directory and whatever SQLite left in it (-wal, -shm). */
static int teardown(void **state)
{
    struct fixture *f = *state;

    store_close(f->s);
    scratch_dir_remove(f->dir);
    free(f);
    return 0;
}

static void reopen(struct fixture *f)
{
    char err[256];

    store_close(f->s);
    f->s = NULL;
    assert_int_equal(open_store(f->path, SMQ_SYNC_FULL, &f->s, err, sizeof err), 0);
}

/* ---- record builders -------------------------------------------------- */

static struct store_queue_rec make_queue(int64_t id, const char *name)
{
    struct store_queue_rec q;

    memset(&q, 0, sizeof q);
    q.id = id;
    snprintf(q.name, sizeof q.name, "%s", name);
    q.create_s = 1700000000 + id;
    q.modify_s = q.create_s;
    q.delay_s = 0;
    q.max_msg_size = 65536;
    q.retention_s = 345600;
    q.visibility_s = 30;
    q.polling_wait_s = 0;
    q.logging = 0;
    return q;
}

static struct store_msg_rec make_msg(int64_t queue_id, uint64_t seq)
{
    struct store_msg_rec m;

    memset(&m, 0, sizeof m);
    m.queue_id = queue_id;
    m.seq = seq;
    m.priority = 8;
    m.enqueue_ms = 1700000000000 + (int64_t)(seq % 1000000);
    m.visible_ms = m.enqueue_ms;
    m.expire_ms = m.enqueue_ms + 345600000;
    return m;
}

static void insert_msg(struct smq_store *s, int64_t queue_id, uint64_t seq)
{
    struct store_msg_rec m = make_msg(queue_id, seq);
    char body[64];
    int n = snprintf(body, sizeof body, "body %lld/%llu", (long long)queue_id,
                     (unsigned long long)seq);

    assert_int_equal(put_msg(s, &m, body, (size_t)n, NULL), 0);
}

/* ---- collectors for the loaders (and store_lists.h) ------------------ */

static int count_msg(void *arg, const struct store_msg_rec *m)
{
    (void)m;
    ++*(long *)arg;
    return 0;
}

/* ---- independent views of the database -------------------------------- */

static int dump_row(void *arg, int ncol, char **val, char **name)
{
    struct smq_buf *b = arg;

    for (int i = 0; i < ncol; i++)
        buf_printf(b, "%s=%s%c", name[i], val[i] != NULL ? val[i] : "NULL",
                   i + 1 < ncol ? ',' : '\n');
    return 0;
}

/* Everything committed on disk, as text, read through a second connection. */
static void dump_disk(const char *path, struct smq_buf *out)
{
    static const char sql[] =
        "PRAGMA user_version;"
        "SELECT key, hex(value) FROM meta ORDER BY key;"
        "SELECT * FROM queue ORDER BY id;"
        "SELECT * FROM msg ORDER BY queue_id, seq;"
        "SELECT seq, hex(body) FROM msg_body ORDER BY seq;";
    sqlite3 *db = NULL;

    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, sql, dump_row, out, NULL), SQLITE_OK);
    sqlite3_close(db);
    assert_false(buf_failed(out));
}

static int snap_queue(void *arg, const struct store_queue_rec *q)
{
    buf_printf(arg, "q %lld %s %lld %lld\n", (long long)q->id, q->name,
               (long long)q->modify_s, (long long)q->delay_s);
    return 0;
}

struct snap_ctx {
    struct smq_store *s;
    struct smq_buf *out;
};

static int snap_msg(void *arg, const struct store_msg_rec *m)
{
    struct snap_ctx *c = arg;

    buf_printf(c->out, "m %lld %llu %lld %u %u body=", (long long)m->queue_id,
               (unsigned long long)m->seq, (long long)m->visible_ms, m->dequeue_count,
               m->handle_gen);
    assert_int_equal(body_of(c->s, m->queue_id, m->seq, c->out, NULL), 0);
    buf_puts(c->out, "\n");
    return 0;
}

/* What the store's own connection sees, including uncommitted writes. */
static void snapshot(struct smq_store *s, struct smq_buf *out)
{
    struct snap_ctx c = {s, out};
    int found = 0;

    assert_int_equal(store_queue_load(s, snap_queue, out), 0);
    assert_int_equal(store_msg_load(s, snap_msg, &c), 0);
    buf_puts(out, "meta k=");
    assert_int_equal(store_meta_get(s, "k", out, &found), 0);
    buf_printf(out, " found=%d\n", found);
    assert_false(buf_failed(out));
}

/* Reads a whole small file; returns its length (or -1 if absent). */
static long read_file(const char *path, char *out, size_t out_size)
{
    FILE *fp = fopen(path, "rb");
    size_t n;

    if (fp == NULL)
        return -1;
    n = fread(out, 1, out_size, fp);
    fclose(fp);
    return (long)n;
}

static int exists(const char *dir, const char *name)
{
    char p[512];
    struct stat st;

    snprintf(p, sizeof p, "%s/%s", dir, name);
    return stat(p, &st) == 0;
}

/* ---- opening and schema ----------------------------------------------- */

static void test_store_open_reopen_keeps_data(void **state)
{
    struct fixture *f = *state;
    struct store_queue_rec q = make_queue(1, "orders");
    struct queue_list ql = {.n = 0};
    struct msg_list ml = {.n = 0};
    struct smq_buf body;

    assert_int_equal(store_begin(f->s), 0);
    assert_int_equal(store_queue_insert(f->s, &q), 0);
    insert_msg(f->s, 1, 7);
    assert_int_equal(store_commit(f->s), 0);

    reopen(f);
    assert_int_equal(store_queue_load(f->s, collect_queue, &ql), 0);
    assert_int_equal(ql.n, 1);
    assert_memory_equal(&ql.q[0], &q, sizeof q);
    assert_int_equal(store_msg_load(f->s, collect_msg, &ml), 0);
    assert_int_equal(ml.n, 1);
    assert_int_equal(ml.m[0].seq, 7);
    buf_init(&body);
    assert_int_equal(body_of(f->s, 1, 7, &body, NULL), 0);
    assert_string_equal(body.data, "body 1/7");
    buf_free(&body);
}

static void test_store_user_version_is_7(void **state)
{
    struct fixture *f = *state;

    assert_int_equal(db_peek_int(f->path, "PRAGMA user_version"), STORE_SCHEMA_VERSION);
    assert_int_equal(STORE_SCHEMA_VERSION, 7);
    /* A new database is created with incremental auto-vacuum (reclamation). */
    assert_int_equal(db_peek_int(f->path, "PRAGMA auto_vacuum"), 2);
    /* Reopening an up-to-date database runs no migration step again. */
    reopen(f);
    assert_int_equal(db_peek_int(f->path, "PRAGMA user_version"), 7);
    /* meta, queue, msg, msg_body; topic, subscription, tmsg, tmsg_body, notif; signing_key */
    assert_int_equal(db_peek_int(f->path, "SELECT count(*) FROM sqlite_schema WHERE type = 'table'"),
                     10);
}

static void test_store_journal_mode_is_wal(void **state)
{
    struct fixture *f = *state;
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;

    assert_int_equal(sqlite3_open_v2(f->path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(st, 0), "wal");
    sqlite3_finalize(st);
    sqlite3_close(db);
}

static void test_store_sync_normal_opens(void **state)
{
    struct fixture *f = *state;
    struct smq_store *s = NULL;
    char err[256];

    assert_int_equal(open_store(f->path, SMQ_SYNC_NORMAL, &s, err, sizeof err), 0);
    assert_int_equal(store_begin(s), 0);
    assert_int_equal(store_meta_set(s, "k", "v", 1), 0);
    assert_int_equal(store_commit(s), 0);
    store_close(s);
}

static void make_raw_db(const char *path, const char *sql)
{
    sqlite3 *db = NULL;

    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
}

/* store_open must fail with a message containing want and leave the file
 * byte-for-byte as it was, with no journal or WAL created beside it. */
static void expect_refusal(struct fixture *f, const char *want)
{
    static char before[65536], after[65536];
    struct smq_store *s = (struct smq_store *)1;
    char err[512];
    long n = read_file(f->path, before, sizeof before);

    assert_true(n >= 0);
    assert_int_equal(open_store(f->path, SMQ_SYNC_FULL, &s, err, sizeof err), SMQ_E_INTERNAL);
    assert_null(s);
    assert_non_null(strstr(err, want));
    assert_int_equal(read_file(f->path, after, sizeof after), n);
    assert_memory_equal(before, after, (size_t)n);
    assert_false(exists(f->dir, "smqd.db-wal"));
    assert_false(exists(f->dir, "smqd.db-journal"));
}

/* Every name of one database shares its lock: a second open through a
 * symbolic link to the file, or to its directory, is refused, or an alias
 * would get a lock of its own and two servers would write one database. */
static void test_store_lock_follows_symlinks(void **state)
{
    struct fixture *f = *state;
    struct smq_store *s = NULL;
    char alias[256], dir_alias[256], via_dir[300], err[512];

    snprintf(alias, sizeof alias, "%s/alias.db", f->dir);
    assert_int_equal(symlink(f->path, alias), 0);
    assert_int_equal(open_store(alias, SMQ_SYNC_FULL, &s, err, sizeof err), SMQ_E_INTERNAL);
    assert_null(s);
    assert_non_null(strstr(err, "in use by another smqd process"));

    snprintf(dir_alias, sizeof dir_alias, "%s/d", f->dir);
    assert_int_equal(symlink(f->dir, dir_alias), 0);
    snprintf(via_dir, sizeof via_dir, "%s/smqd.db", dir_alias);
    assert_int_equal(open_store(via_dir, SMQ_SYNC_FULL, &s, err, sizeof err), SMQ_E_INTERNAL);
    assert_null(s);
    assert_non_null(strstr(err, "in use by another smqd process"));
}

static void test_store_refuses_newer_schema(void **state)
{
    struct fixture *f = *state;

    make_raw_db(f->path, "CREATE TABLE future(x); PRAGMA user_version = 8;");
    expect_refusal(f, "database schema version 8 is newer than this smqd supports (7); "
                      "refusing to open");
}

static void test_store_refuses_non_database(void **state)
{
    struct fixture *f = *state;
    char junk[4096];
    FILE *fp;

    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (char)('a' + i % 26);
    fp = fopen(f->path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(junk, 1, sizeof junk, fp), sizeof junk);
    fclose(fp);
    expect_refusal(f, "is not an SQLite database");

    /* A file shorter than a header is still not a database. */
    fp = fopen(f->path, "wb");
    assert_non_null(fp);
    fputs("hello\n", fp);
    fclose(fp);
    expect_refusal(f, "is not an SQLite database");
}

static void test_store_refuses_foreign_sqlite_database(void **state)
{
    struct fixture *f = *state;

    make_raw_db(f->path, "CREATE TABLE customers(id INTEGER PRIMARY KEY, name TEXT);");
    expect_refusal(f, "not an smqd one");
}

static void test_store_open_missing_dir_fails(void **state)
{
    struct fixture *f = *state;
    struct smq_store *s = NULL;
    char path[256], err[256];

    snprintf(path, sizeof path, "%s/no/such/dir/smqd.db", f->dir);
    assert_int_equal(open_store(path, SMQ_SYNC_FULL, &s, err, sizeof err), SMQ_E_INTERNAL);
    assert_null(s);
    assert_non_null(strstr(err, "cannot open"));
}

static void test_store_integrity_check_ok(void **state)
{
    struct fixture *f = *state;
    char err[256];

    insert_msg(f->s, 1, 1);   /* autocommit write: the check sees real pages */
    assert_int_equal(store_integrity_check(f->s, err, sizeof err), 0);
    assert_string_equal(err, "");
}

/* ---- queues ----------------------------------------------------------- */

static void test_store_queue_round_trip(void **state)
{
    struct fixture *f = *state;
    struct store_queue_rec a = make_queue(5, "b-second"), b = make_queue(2, "a-first");
    struct queue_list ql = {.n = 0};

    assert_int_equal(store_begin(f->s), 0);
    assert_int_equal(store_queue_insert(f->s, &a), 0);
    assert_int_equal(store_queue_insert(f->s, &b), 0);
    assert_int_equal(store_commit(f->s), 0);

    a.modify_s += 100;
    a.delay_s = 60;
    a.max_msg_size = 1024;
    a.retention_s = 60;
    a.visibility_s = 43200;
    a.polling_wait_s = 30;
    a.logging = 1;
    assert_int_equal(store_queue_update(f->s, &a), 0);

    assert_int_equal(store_queue_load(f->s, collect_queue, &ql), 0);
    assert_int_equal(ql.n, 2);
    assert_memory_equal(&ql.q[0], &b, sizeof b);    /* id order, not insert order */
    assert_memory_equal(&ql.q[1], &a, sizeof a);

    assert_int_equal(store_queue_delete(f->s, 2), 0);
    ql.n = 0;
    assert_int_equal(store_queue_load(f->s, collect_queue, &ql), 0);
    assert_int_equal(ql.n, 1);
    assert_int_equal(ql.q[0].id, 5);
}

static void test_store_queue_update_keeps_name_and_create(void **state)
{
    struct fixture *f = *state;
    struct store_queue_rec q = make_queue(1, "fixed"), changed;
    struct queue_list ql = {.n = 0};

    assert_int_equal(store_queue_insert(f->s, &q), 0);
    changed = q;
    snprintf(changed.name, sizeof changed.name, "renamed");
    changed.create_s = 1;
    changed.delay_s = 9;
    assert_int_equal(store_queue_update(f->s, &changed), 0);
    assert_int_equal(store_queue_load(f->s, collect_queue, &ql), 0);
    assert_string_equal(ql.q[0].name, "fixed");
    assert_int_equal(ql.q[0].create_s, q.create_s);
    assert_int_equal(ql.q[0].delay_s, 9);
}

static void test_store_queue_name_unique(void **state)
{
    struct fixture *f = *state;
    struct store_queue_rec a = make_queue(1, "dup"), b = make_queue(2, "dup");
    struct store_queue_rec c = make_queue(3, "other");
    struct queue_list ql = {.n = 0};

    assert_int_equal(store_begin(f->s), 0);
    assert_int_equal(store_queue_insert(f->s, &a), 0);
    assert_int_equal(store_queue_insert(f->s, &b), SMQ_E_INTERNAL);
    /* Same id is refused too: ids are never reused. */
    c.id = 1;
    assert_int_equal(store_queue_insert(f->s, &c), SMQ_E_INTERNAL);
    store_rollback(f->s);
    assert_int_equal(store_queue_load(f->s, collect_queue, &ql), 0);
    assert_int_equal(ql.n, 0);
}

static void test_store_queue_missing_row(void **state)
{
    struct fixture *f = *state;
    struct store_queue_rec q = make_queue(9, "ghost");

    assert_int_equal(store_queue_update(f->s, &q), SMQ_E_QUEUE_NOT_EXIST);
    assert_int_equal(store_queue_delete(f->s, 9), 0);   /* deletes are idempotent */
}

static void test_store_queue_name_too_long(void **state)
{
    struct fixture *f = *state;
    struct store_queue_rec q = make_queue(1, "x");

    memset(q.name, 'n', sizeof q.name);   /* no terminator anywhere */
    assert_int_equal(store_queue_insert(f->s, &q), SMQ_E_INVALID_ARGUMENT);
    memset(q.name, 'n', STORE_QUEUE_NAME_MAX);
    q.name[STORE_QUEUE_NAME_MAX] = '\0';
    assert_int_equal(store_queue_insert(f->s, &q), 0);
}

static void test_store_queue_delete_removes_only_its_messages(void **state)
{
    struct fixture *f = *state;
    struct store_queue_rec q1 = make_queue(1, "one"), q2 = make_queue(2, "two");
    struct store_queue_rec q3 = make_queue(3, "three");
    struct msg_list ml = {.n = 0};
    struct smq_buf body;

    assert_int_equal(store_begin(f->s), 0);
    assert_int_equal(store_queue_insert(f->s, &q1), 0);
    assert_int_equal(store_queue_insert(f->s, &q2), 0);
    assert_int_equal(store_queue_insert(f->s, &q3), 0);
    for (uint64_t seq = 1; seq <= 9; seq++)
        insert_msg(f->s, (int64_t)(seq % 3) + 1, seq);
    assert_int_equal(store_commit(f->s), 0);

    assert_int_equal(store_begin(f->s), 0);
    assert_int_equal(store_queue_delete(f->s, 2), 0);
    assert_int_equal(store_commit(f->s), 0);

    assert_int_equal(store_msg_load(f->s, collect_msg, &ml), 0);
    assert_int_equal(ml.n, 6);
    for (int i = 0; i < ml.n; i++)
        assert_int_not_equal(ml.m[i].queue_id, 2);
    /* queue 2 held seq 1, 4 and 7 (seq % 3 == 1); bodies are keyed by seq alone */
    assert_int_equal(db_peek_int(f->path, "SELECT count(*) FROM msg_body WHERE seq % 3 = 1"), 0);
    assert_int_equal(db_peek_int(f->path, "SELECT count(*) FROM msg_body"), 6);
    buf_init(&body);
    assert_int_equal(body_of(f->s, 2, 1, &body, NULL), SMQ_E_MESSAGE_NOT_EXIST);
    assert_int_equal(body_of(f->s, 1, 3, &body, NULL), 0);
    assert_string_equal(body.data, "body 1/3");
    buf_free(&body);
}

/* One call reads the bodies of a whole receive, in the order asked, each
 * with its length and MD5 (or none), appended after what out held. */
static void test_store_msg_bodies_batch(void **state)
{
    struct fixture *f = *state;
    static const unsigned char md5[MNS_MD5_LEN] = {1, 2, 3, 4, 5, 6, 7, 8,
                                                   9, 10, 11, 12, 13, 14, 15, 16};
    struct store_msg_rec a = make_msg(1, 10), b = make_msg(1, 11), c = make_msg(2, 12);
    struct store_body_read r[3] = {{.queue_id = 2, .seq = 12}, {.queue_id = 1, .seq = 10},
                                   {.queue_id = 1, .seq = 11}};
    struct smq_buf out;

    assert_int_equal(store_begin(f->s), 0);
    assert_int_equal(put_msg(f->s, &a, "alpha", 5, md5), 0);
    assert_int_equal(put_msg(f->s, &b, NULL, 0, NULL), 0);
    assert_int_equal(put_msg(f->s, &c, "gamma!", 6, NULL), 0);
    assert_int_equal(store_commit(f->s), 0);

    buf_init(&out);
    buf_puts(&out, "#");
    r[0].md5.present = true;                   /* must be overwritten */
    assert_int_equal(store_msg_bodies(f->s, r, 3, &out), 0);
    assert_int_equal(out.len, 1 + 6 + 5 + 0);
    assert_memory_equal(out.data, "#gamma!alpha", out.len);
    assert_int_equal(r[0].len, 6);
    assert_false(r[0].md5.present);
    assert_int_equal(r[1].len, 5);
    assert_true(r[1].md5.present);
    assert_memory_equal(r[1].md5.bytes, md5, MNS_MD5_LEN);
    assert_int_equal(r[2].len, 0);
    assert_false(r[2].md5.present);

    /* A missing one fails the batch; nothing is read for nothing. */
    buf_reset(&out);
    r[1].seq = 99;
    assert_int_equal(store_msg_bodies(f->s, r, 3, &out), SMQ_E_MESSAGE_NOT_EXIST);
    assert_int_equal(store_msg_bodies(f->s, r, 0, &out), 0);
    buf_free(&out);
}

/* How many descriptors of this process refer to path. */
static int fds_of(const char *path)
{
    char link[64], target[PATH_MAX + 1];
    char *want = realpath(path, NULL);
    int found = 0;

    for (int fd = 0; want != NULL && fd < 1024; fd++) {
        ssize_t n;
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        n = readlink(link, target, sizeof target - 1);
        if (n <= 0)
            continue;
        target[n] = '\0';
        found += strcmp(target, want) == 0;
    }
    free(want);
    return found;
}

/* store_defer_fsync makes the store hold the WAL SQLite really uses (here
 * through a symbolic link to the database's directory) beside SQLite's own
 * descriptor, and store_flush flushes it; without it there is nothing to
 * flush and flush is a no-op. */
static void test_store_flush_holds_the_real_wal(void **state)
{
    struct fixture *f = *state;
    struct smq_store *s = NULL;
    char dir_alias[256], via[300], err[512], wal[300];
    int sqlite_fds;

    snprintf(dir_alias, sizeof dir_alias, "%s-link", f->dir);
    assert_int_equal(symlink(f->dir, dir_alias), 0);
    snprintf(via, sizeof via, "%s/smqd.db", dir_alias);
    assert_int_equal(open_store(via, SMQ_SYNC_FULL, &s, err, sizeof err), 0);
    assert_string_equal(store_backend_name(s), "sqlite");
    snprintf(wal, sizeof wal, "%s/smqd.db-wal", f->dir);
    assert_int_equal(store_flush(s), 0);
    sqlite_fds = fds_of(wal);
    assert_int_equal(store_defer_fsync(s), 0);
    assert_int_equal(fds_of(wal), sqlite_fds + 1);
    assert_string_equal(store_wal_path(s), wal);
    assert_int_equal(store_begin(s), 0);
    insert_msg(s, 1, 1);
    assert_int_equal(store_commit(s), 0);
    assert_int_equal(store_flush(s), 0);
    store_close(s);
    assert_int_equal(fds_of(wal), 0);          /* closed with the store */
    unlink(dir_alias);
}

static void test_store_unknown_backend_refused(void **state)
{
    struct fixture *f = *state;
    struct store_config cfg = {.backend = (enum smq_store_backend)99, .path = f->path};
    struct smq_store *s = (struct smq_store *)&cfg;
    char err[128] = "";

    assert_int_equal(store_open(&cfg, &s, err, sizeof err), SMQ_E_INTERNAL);
    assert_null(s);
    assert_non_null(strstr(err, "backend"));
}

/* ---- messages --------------------------------------------------------- */

static void test_store_msg_round_trip(void **state)
{
    struct fixture *f = *state;
    struct msg_list ml = {.n = 0};
    struct store_msg_rec m;
    struct smq_buf body;

    assert_int_equal(store_begin(f->s), 0);
    insert_msg(f->s, 2, 1);
    insert_msg(f->s, 1, 30);
    insert_msg(f->s, 1, 4);
    insert_msg(f->s, 2, 0);
    assert_int_equal(store_commit(f->s), 0);

    m = make_msg(1, 30);
    m.first_dequeue_ms = 111;
    m.visible_ms = 222;
    m.dequeue_count = 3;
    m.handle_gen = UINT32_MAX;   /* the full uint32 range survives int64 storage */
    assert_int_equal(store_msg_update(f->s, &m), 0);

    assert_int_equal(store_msg_load(f->s, collect_msg, &ml), 0);
    assert_int_equal(ml.n, 4);
    assert_int_equal(ml.m[0].queue_id, 1);
    assert_int_equal(ml.m[0].seq, 4);
    assert_int_equal(ml.m[1].queue_id, 1);
    assert_int_equal(ml.m[1].seq, 30);
    assert_int_equal(ml.m[2].queue_id, 2);
    assert_int_equal(ml.m[2].seq, 0);
    assert_int_equal(ml.m[3].queue_id, 2);
    assert_int_equal(ml.m[3].seq, 1);
    assert_msg_equal(&ml.m[1], &m);
    m = make_msg(1, 4);
    assert_msg_equal(&ml.m[0], &m);

    /* Bodies append to what the buffer already holds. */
    buf_init(&body);
    buf_puts(&body, ">");
    assert_int_equal(body_of(f->s, 1, 30, &body, NULL), 0);
    assert_string_equal(body.data, ">body 1/30");
    buf_free(&body);
}

static void test_store_msg_delete(void **state)
{
    struct fixture *f = *state;
    struct store_msg_rec m = make_msg(1, 5);
    struct msg_list ml = {.n = 0};
    struct smq_buf body;

    insert_msg(f->s, 1, 5);
    insert_msg(f->s, 1, 6);
    assert_int_equal(store_msg_delete(f->s, 1, 5), 0);
    assert_int_equal(store_msg_delete(f->s, 1, 5), 0);   /* idempotent */
    assert_int_equal(store_msg_update(f->s, &m), SMQ_E_MESSAGE_NOT_EXIST);
    buf_init(&body);
    assert_int_equal(body_of(f->s, 1, 5, &body, NULL), SMQ_E_MESSAGE_NOT_EXIST);
    assert_int_equal(body.len, 0);
    buf_free(&body);
    assert_int_equal(store_msg_load(f->s, collect_msg, &ml), 0);
    assert_int_equal(ml.n, 1);
    assert_int_equal(ml.m[0].seq, 6);
    assert_int_equal(db_peek_int(f->path, "SELECT count(*) FROM msg_body"), 1);
}

static void test_store_msg_binary_and_empty_body(void **state)
{
    struct fixture *f = *state;
    static const char bin[] = {'a', '\0', 'b', '\xff', '\0'};
    struct store_msg_rec m1 = make_msg(1, 1), m2 = make_msg(1, 2);
    struct smq_buf body;

    assert_int_equal(put_msg(f->s, &m1, bin, sizeof bin, NULL), 0);
    assert_int_equal(put_msg(f->s, &m2, NULL, 0, NULL), 0);
    buf_init(&body);
    assert_int_equal(body_of(f->s, 1, 1, &body, NULL), 0);
    assert_int_equal(body.len, sizeof bin);
    assert_memory_equal(body.data, bin, sizeof bin);
    buf_reset(&body);
    assert_int_equal(body_of(f->s, 1, 2, &body, NULL), 0);
    assert_int_equal(body.len, 0);
    buf_free(&body);
}

static void test_store_msg_seq_range(void **state)
{
    struct fixture *f = *state;
    struct store_msg_rec top = make_msg(1, (uint64_t)INT64_MAX);
    struct store_msg_rec over = make_msg(1, (uint64_t)INT64_MAX + 1);
    struct msg_list ml = {.n = 0};

    insert_msg(f->s, 1, 1);
    assert_int_equal(put_msg(f->s, &top, "t", 1, NULL), 0);
    assert_int_equal(put_msg(f->s, &over, "o", 1, NULL), SMQ_E_INVALID_ARGUMENT);
    assert_int_equal(store_msg_load(f->s, collect_msg, &ml), 0);
    assert_int_equal(ml.n, 2);
    assert_true(ml.m[1].seq == (uint64_t)INT64_MAX);   /* still sorts last */
}

static void test_store_loader_stops_on_callback(void **state)
{
    struct fixture *f = *state;
    int calls = 0;
    long count = 0;

    for (uint64_t seq = 1; seq <= 5; seq++)
        insert_msg(f->s, 1, seq);
    assert_int_equal(store_msg_load(f->s, stop_at_second, &calls), 42);
    assert_int_equal(calls, 2);
    /* The statement was reset: the next load starts from the first row. */
    assert_int_equal(store_msg_load(f->s, count_msg, &count), 0);
    assert_int_equal(count, 5);
}

/* ---- meta ------------------------------------------------------------- */

static void test_store_meta_get_set_binary(void **state)
{
    struct fixture *f = *state;
    static const char secret[] = {'\0', 's', '\0', '\x80', 'x'};
    struct smq_buf v;
    int found = -1;

    buf_init(&v);
    assert_int_equal(store_meta_get(f->s, "secret", &v, &found), 0);
    assert_int_equal(found, 0);
    assert_int_equal(v.len, 0);

    assert_int_equal(store_meta_set(f->s, "secret", secret, sizeof secret), 0);
    assert_int_equal(store_meta_get(f->s, "secret", &v, &found), 0);
    assert_int_equal(found, 1);
    assert_int_equal(v.len, sizeof secret);
    assert_memory_equal(v.data, secret, sizeof secret);

    /* Overwrite, including with an empty value. */
    assert_int_equal(store_meta_set(f->s, "secret", "", 0), 0);
    buf_reset(&v);
    assert_int_equal(store_meta_get(f->s, "secret", &v, &found), 0);
    assert_int_equal(found, 1);
    assert_int_equal(v.len, 0);

    assert_int_equal(store_meta_set(f->s, "hw", "12345", 5), 0);
    reopen(f);
    buf_reset(&v);
    assert_int_equal(store_meta_get(f->s, "hw", &v, &found), 0);
    assert_int_equal(found, 1);
    assert_string_equal(v.data, "12345");
    buf_free(&v);
}

/* ---- transactions and faults ------------------------------------------ */

/* Committed base state that the rollback tests try to disturb. */
static void seed(struct smq_store *s)
{
    struct store_queue_rec q = make_queue(1, "base");

    assert_int_equal(store_begin(s), 0);
    assert_int_equal(store_queue_insert(s, &q), 0);
    insert_msg(s, 1, 1);
    insert_msg(s, 1, 2);
    assert_int_equal(store_meta_set(s, "k", "v1", 2), 0);
    assert_int_equal(store_commit(s), 0);
}

/* One good write, then a duplicate primary key: a real SQLite failure. */
static int churn_dup(struct smq_store *s)
{
    struct store_queue_rec q2 = make_queue(2, "new");
    struct store_msg_rec m = make_msg(1, 1);
    int rc = store_queue_insert(s, &q2);

    return rc != 0 ? rc : put_msg(s, &m, "x", 1, NULL);
}

/* A transaction touching every table, stopping at the first failure.
 * Write statements: 1 + 2 + 1 + 2 + 1 + 1 = 8. */
static int churn_ok(struct smq_store *s)
{
    struct store_queue_rec q2 = make_queue(2, "new"), q1 = make_queue(1, "base");
    struct store_msg_rec m = make_msg(1, 1), n = make_msg(2, 9);
    int rc;

    q1.delay_s = 77;
    m.dequeue_count = 5;
    if ((rc = store_queue_insert(s, &q2)) != 0 ||
        (rc = put_msg(s, &n, "nine", 4, NULL)) != 0 ||
        (rc = store_msg_update(s, &m)) != 0 ||
        (rc = store_msg_delete(s, 1, 2)) != 0 ||
        (rc = store_queue_update(s, &q1)) != 0 ||
        (rc = store_meta_set(s, "k", "v2", 2)) != 0)
        return rc;
    return 0;
}

static void test_store_rollback_leaves_no_trace(void **state)
{
    struct fixture *f = *state;
    struct smq_buf disk0, disk1, mem0, mem1, mid;

    buf_init(&disk0), buf_init(&disk1), buf_init(&mem0), buf_init(&mem1), buf_init(&mid);
    seed(f->s);
    dump_disk(f->path, &disk0);
    snapshot(f->s, &mem0);

    assert_int_equal(store_begin(f->s), 0);
    assert_int_equal(churn_ok(f->s), 0);
    snapshot(f->s, &mid);
    assert_string_not_equal(mid.data, mem0.data);   /* the writes were visible inside */
    store_rollback(f->s);
    store_rollback(f->s);                           /* no transaction: silently ignored */

    dump_disk(f->path, &disk1);
    snapshot(f->s, &mem1);
    assert_string_equal(disk0.data, disk1.data);
    assert_string_equal(mem0.data, mem1.data);
    buf_free(&disk0), buf_free(&disk1), buf_free(&mem0), buf_free(&mem1), buf_free(&mid);
}

static void test_store_failed_write_in_txn_then_rollback(void **state)
{
    struct fixture *f = *state;
    struct smq_buf disk0, disk1;

    buf_init(&disk0), buf_init(&disk1);
    seed(f->s);
    dump_disk(f->path, &disk0);
    assert_int_equal(store_begin(f->s), 0);
    /* A real constraint failure after a successful write in the same txn. */
    assert_int_equal(churn_dup(f->s), SMQ_E_INTERNAL);
    store_rollback(f->s);
    dump_disk(f->path, &disk1);
    assert_string_equal(disk0.data, disk1.data);
    buf_free(&disk0), buf_free(&disk1);
}

/* For every n, failing the (n+1)-th write and rolling back must restore
 * exactly the pre-BEGIN state, both on disk and as the store sees it. */
static void test_store_fault_on_nth_write(void **state)
{
    struct fixture *f = *state;
    struct smq_buf disk0, mem0, disk1, mem1;
    unsigned n;

    buf_init(&disk0), buf_init(&mem0);
    seed(f->s);
    dump_disk(f->path, &disk0);
    snapshot(f->s, &mem0);
    for (n = 0; n < 8; n++) {
        buf_init(&disk1), buf_init(&mem1);
        assert_int_equal(store_begin(f->s), 0);
        store_fault_inject(f->s, n, 0);
        assert_int_equal(churn_ok(f->s), SMQ_E_INTERNAL);
        store_rollback(f->s);
        dump_disk(f->path, &disk1);
        snapshot(f->s, &mem1);
        assert_string_equal(disk0.data, disk1.data);
        assert_string_equal(mem0.data, mem1.data);
        buf_free(&disk1), buf_free(&mem1);
    }
    /* n = 8 is past the last write: the fault never fires... */
    assert_int_equal(store_begin(f->s), 0);
    store_fault_inject(f->s, 8, 0);
    assert_int_equal(churn_ok(f->s), 0);
    store_rollback(f->s);
    /* ...and a fired fault is one-shot, as is STORE_FAULT_OFF. */
    store_fault_inject(f->s, 0, 0);
    assert_int_equal(store_meta_set(f->s, "k", "x", 1), SMQ_E_INTERNAL);
    assert_int_equal(store_meta_set(f->s, "k", "y", 1), 0);
    store_fault_inject(f->s, STORE_FAULT_OFF, 0);
    assert_int_equal(store_meta_set(f->s, "k", "z", 1), 0);
    buf_free(&disk0), buf_free(&mem0);
}

static void test_store_fault_on_commit_then_rollback(void **state)
{
    struct fixture *f = *state;
    struct smq_buf disk0, mem0, disk1, mem1;

    buf_init(&disk0), buf_init(&mem0), buf_init(&disk1), buf_init(&mem1);
    seed(f->s);
    dump_disk(f->path, &disk0);
    snapshot(f->s, &mem0);

    assert_int_equal(store_begin(f->s), 0);
    assert_int_equal(churn_ok(f->s), 0);
    store_fault_inject(f->s, STORE_FAULT_OFF, 1);
    assert_int_equal(store_commit(f->s), SMQ_E_INTERNAL);
    store_rollback(f->s);
    dump_disk(f->path, &disk1);
    snapshot(f->s, &mem1);
    assert_string_equal(disk0.data, disk1.data);
    assert_string_equal(mem0.data, mem1.data);

    /* One-shot: the next transaction commits normally. */
    assert_int_equal(store_begin(f->s), 0);
    assert_int_equal(churn_ok(f->s), 0);
    assert_int_equal(store_commit(f->s), 0);
    assert_int_equal(db_peek_int(f->path, "SELECT delay_s FROM queue WHERE id = 1"), 77);
    buf_free(&disk0), buf_free(&mem0), buf_free(&disk1), buf_free(&mem1);
}

/* Per-op savepoints inside one batch: a failed op is undone alone, the ops
 * around it survive the commit. */
static void test_store_savepoint_undoes_one_op(void **state)
{
    struct fixture *f = *state;
    struct store_queue_rec q2 = make_queue(2, "kept");
    struct store_msg_rec m = make_msg(2, 9);
    struct smq_buf v;
    int found = 0;

    seed(f->s);
    assert_false(store_in_txn(f->s));
    assert_int_equal(store_begin(f->s), 0);
    assert_true(store_in_txn(f->s));

    assert_int_equal(store_savepoint(f->s), 0);            /* op 1: kept */
    assert_int_equal(store_queue_insert(f->s, &q2), 0);
    assert_int_equal(store_release(f->s), 0);

    assert_int_equal(store_savepoint(f->s), 0);            /* op 2: real failure */
    assert_int_equal(store_meta_set(f->s, "k", "lost", 4), 0);
    assert_int_equal(store_queue_insert(f->s, &q2), SMQ_E_INTERNAL);
    store_rollback_to(f->s);
    assert_true(store_in_txn(f->s));

    assert_int_equal(store_savepoint(f->s), 0);            /* op 3: injected fault */
    store_fault_inject(f->s, 1, 0);                        /* the body row fails */
    assert_int_equal(put_msg(f->s, &m, "b", 1, NULL), SMQ_E_INTERNAL);
    store_rollback_to(f->s);
    assert_true(store_in_txn(f->s));

    assert_int_equal(store_savepoint(f->s), 0);            /* op 4: kept */
    insert_msg(f->s, 1, 3);
    assert_int_equal(store_release(f->s), 0);
    assert_int_equal(store_commit(f->s), 0);
    assert_false(store_in_txn(f->s));

    assert_int_equal(db_peek_int(f->path, "SELECT count(*) FROM queue WHERE id = 2"), 1);
    assert_int_equal(db_peek_int(f->path, "SELECT count(*) FROM msg WHERE queue_id = 2"), 0);
    assert_int_equal(db_peek_int(f->path, "SELECT count(*) FROM msg_body WHERE seq = 9"), 0);
    assert_int_equal(db_peek_int(f->path, "SELECT count(*) FROM msg WHERE seq = 3"), 1);
    buf_init(&v);
    assert_int_equal(store_meta_get(f->s, "k", &v, &found), 0);
    assert_string_equal(v.data, "v1");
    buf_free(&v);
}

/* ---- volume ----------------------------------------------------------- */

static void test_store_bulk_insert_100k(void **state)
{
    struct fixture *f = *state;
    struct store_queue_rec q = make_queue(1, "bulk");
    long count = 0;
    char err[256];

    assert_int_equal(store_begin(f->s), 0);
    assert_int_equal(store_queue_insert(f->s, &q), 0);
    for (uint64_t seq = 1; seq <= 100000; seq++)
        insert_msg(f->s, 1, seq);
    assert_int_equal(store_commit(f->s), 0);
    assert_int_equal(store_msg_load(f->s, count_msg, &count), 0);
    assert_int_equal(count, 100000);
    reopen(f);
    count = 0;
    assert_int_equal(store_msg_load(f->s, count_msg, &count), 0);
    assert_int_equal(count, 100000);
    assert_int_equal(store_integrity_check(f->s, err, sizeof err), 0);
}

/* A full disk is told apart from other failures, and the reserve file holds
 * real blocks that release frees and restore takes back. */
static void test_store_full_and_reserve(void **state)
{
    struct fixture *f = *state;
    struct store_queue_rec q = make_queue(1, "q");
    char reserve[256];
    struct stat st;

    assert_int_equal(store_begin(f->s), 0);
    store_fault_inject_full(f->s, 0);
    assert_int_equal(store_queue_insert(f->s, &q), SMQ_E_STORAGE_FULL);
    store_fault_inject(f->s, 0, 0);
    assert_int_equal(store_queue_insert(f->s, &q), SMQ_E_INTERNAL);
    assert_int_equal(store_queue_insert(f->s, &q), 0);
    assert_int_equal(store_commit(f->s), 0);

    snprintf(reserve, sizeof reserve, "%s.reserve", f->path);
    assert_int_equal(store_reserve_init(f->s, f->path, 3 << 20), 0);
    assert_int_equal(stat(reserve, &st), 0);
    assert_int_equal(st.st_size, 3 << 20);
    assert_true((long long)st.st_blocks * 512 >= 3 << 20);
    store_reserve_release(f->s);
    assert_int_not_equal(stat(reserve, &st), 0);
    /* Not taken back when it would leave less than keep_free bytes free. */
    assert_int_equal(store_reserve_restore(f->s, UINT64_MAX / 2), SMQ_E_STORAGE_FULL);
    assert_int_not_equal(stat(reserve, &st), 0);
    assert_int_equal(store_reserve_restore(f->s, 0), 0);
    assert_int_equal(store_reserve_restore(f->s, UINT64_MAX / 2), 0);   /* already held */
    assert_int_equal(stat(reserve, &st), 0);
    assert_int_equal(store_reserve_bytes(f->s), 3 << 20);
    assert_int_equal(store_reserve_init(f->s, f->path, 0), 0);   /* 0 removes it */
    assert_int_not_equal(stat(reserve, &st), 0);
}

/* ---- schema 2: dead-letter columns, moves, purge, reclamation ---------- */

/* The exact version-1 layout as smqd 0.1 created it, with one queue and
 * one message in it and auto_vacuum off. */
static const char v1_db[] =
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE queue(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,"
    " create_s INTEGER NOT NULL, modify_s INTEGER NOT NULL, delay_s INTEGER NOT NULL,"
    " max_msg_size INTEGER NOT NULL, retention_s INTEGER NOT NULL,"
    " visibility_s INTEGER NOT NULL, polling_wait_s INTEGER NOT NULL,"
    " logging INTEGER NOT NULL);"
    "CREATE TABLE msg(queue_id INTEGER NOT NULL, seq INTEGER NOT NULL,"
    " priority INTEGER NOT NULL, enqueue_ms INTEGER NOT NULL,"
    " first_dequeue_ms INTEGER NOT NULL, visible_ms INTEGER NOT NULL,"
    " expire_ms INTEGER NOT NULL, dequeue_count INTEGER NOT NULL,"
    " handle_gen INTEGER NOT NULL, PRIMARY KEY(queue_id, seq)) WITHOUT ROWID;"
    "CREATE TABLE msg_body(seq INTEGER PRIMARY KEY, body BLOB NOT NULL);"
    "INSERT INTO queue VALUES(1, 'old', 1, 1, 0, 65536, 345600, 30, 0, 1);"
    "INSERT INTO msg VALUES(1, 5, 8, 1000, 0, 1000, 999999999999, 2, 3);"
    "INSERT INTO msg_body VALUES(5, 'kept');"
    "PRAGMA user_version = 1;";

static void test_store_migrates_v1_to_v2(void **state)
{
    struct fixture *f = *state;
    struct queue_list ql = {.n = 0};
    struct msg_list ml = {.n = 0};
    struct smq_buf body;
    char err[256];

    make_raw_db(f->path, v1_db);
    assert_int_equal(db_peek_int(f->path, "PRAGMA auto_vacuum"), 0);
    assert_int_equal(open_store(f->path, SMQ_SYNC_FULL, &f->s, err, sizeof err), 0);
    assert_int_equal(db_peek_int(f->path, "PRAGMA user_version"), STORE_SCHEMA_VERSION);
    /* Converted once (VACUUM) so that space can be reclaimed. */
    assert_int_equal(db_peek_int(f->path, "PRAGMA auto_vacuum"), 2);
    assert_int_equal(store_queue_load(f->s, collect_queue, &ql), 0);
    assert_int_equal(ql.n, 1);
    assert_string_equal(ql.q[0].name, "old");
    assert_int_equal(ql.q[0].logging, 1);
    assert_int_equal(ql.q[0].dlq_enabled, 0);
    assert_string_equal(ql.q[0].dlq_target, "");
    assert_int_equal(store_msg_load(f->s, collect_msg, &ml), 0);
    assert_int_equal(ml.n, 1);
    assert_true(ml.m[0].seq == 5);
    assert_int_equal(ml.m[0].dequeue_count, 2);
    assert_int_equal(ml.m[0].src_queue_id, 0);
    buf_init(&body);
    assert_int_equal(body_of(f->s, 1, 5, &body, NULL), 0);
    assert_memory_equal(body.data, "kept", 4);
    buf_free(&body);
}

/* ---- schema 3: the body's MD5, written once at send ---------------- */

static void expect_body_md5(struct smq_store *s, uint64_t seq, const char *want_body,
                            const unsigned char *want_md5)
{
    struct mns_body_md5 md5 = {.present = !want_md5};     /* must be overwritten */
    struct smq_buf body;

    buf_init(&body);
    assert_int_equal(body_of(s, 1, seq, &body, &md5), 0);
    assert_memory_equal(body.data, want_body, strlen(want_body));
    assert_int_equal(md5.present, want_md5 != NULL);
    if (want_md5 != NULL)
        assert_memory_equal(md5.bytes, want_md5, MNS_MD5_LEN);
    buf_free(&body);
}

static void test_store_migrates_v2_to_v3_and_keeps_md5(void **state)
{
    struct fixture *f = *state;
    struct store_msg_rec m = {.queue_id = 1, .priority = 8, .expire_ms = INT64_C(999999999999)};
    unsigned char md5[MNS_MD5_LEN];
    char v2_db[sizeof v1_db + 512], err[256];
    const char *v1_tail = "PRAGMA user_version = 1;";

    assert_int_equal(snprintf(v2_db, sizeof v2_db, "%.*s%s", (int)(strlen(v1_db) - strlen(v1_tail)),
                              v1_db, "ALTER TABLE queue ADD COLUMN dlq_enabled INTEGER NOT NULL DEFAULT 0;"
                              "ALTER TABLE queue ADD COLUMN dlq_target TEXT NOT NULL DEFAULT '';"
                              "ALTER TABLE queue ADD COLUMN dlq_max_receive INTEGER NOT NULL DEFAULT 0;"
                              "ALTER TABLE msg ADD COLUMN src_queue_id INTEGER NOT NULL DEFAULT 0;"
                              "PRAGMA user_version = 2;") > 0, 1);
    for (size_t i = 0; i < sizeof md5; i++)
        md5[i] = (unsigned char)(0xF0 + i);
    make_raw_db(f->path, v2_db);
    assert_int_equal(open_store(f->path, SMQ_SYNC_FULL, &f->s, err, sizeof err), 0);
    assert_int_equal(db_peek_int(f->path, "PRAGMA user_version"), STORE_SCHEMA_VERSION);
    expect_body_md5(f->s, 5, "kept", NULL);          /* written before: none stored */
    m.seq = 6;
    assert_int_equal(put_msg(f->s, &m, "new", 3, md5), 0);
    m.seq = 7;
    assert_int_equal(put_msg(f->s, &m, "none", 4, NULL), 0);
    reopen(f);
    expect_body_md5(f->s, 5, "kept", NULL);
    expect_body_md5(f->s, 6, "new", md5);
    expect_body_md5(f->s, 7, "none", NULL);
    /* A value of another length (damage) reads as none: recomputed, never wrong. */
    store_close(f->s);
    f->s = NULL;
    make_raw_db(f->path, "UPDATE msg_body SET md5 = x'0102' WHERE seq = 6;"
                         "UPDATE msg_body SET md5 = '0123456789abcdef' WHERE seq = 7");
    assert_int_equal(open_store(f->path, SMQ_SYNC_FULL, &f->s, err, sizeof err), 0);
    expect_body_md5(f->s, 6, "new", NULL);
    expect_body_md5(f->s, 7, "none", NULL);         /* 16 bytes, but text */
}

/* ---- schema 4: a message's extensions, after its body ---------------- */

static void expect_bodies_with_ext(struct smq_store *s)
{
    struct store_body_read r[3] = {{.queue_id = 1, .seq = 5}, {.queue_id = 1, .seq = 6},
                                   {.queue_id = 1, .seq = 7}};
    struct smq_buf out;

    buf_init(&out);
    assert_int_equal(store_msg_bodies(s, r, 3, &out), 0);
    /* 5 was written before schema 4: no extensions. */
    assert_int_equal(r[0].len, 4);
    assert_int_equal(r[0].ext_len, 0);
    assert_int_equal(r[1].len, 3);
    assert_int_equal(r[1].ext_len, 6);
    assert_int_equal(r[2].len, 4);
    assert_int_equal(r[2].ext_len, 0);
    assert_int_equal(out.len, 4 + 3 + 6 + 4);
    assert_memory_equal(out.data, "keptnew<G>xy;none", out.len);
    buf_free(&out);
}

static void test_store_ext_after_body_and_migrated(void **state)
{
    struct fixture *f = *state;
    struct store_msg_rec m = {.queue_id = 1, .priority = 8, .expire_ms = INT64_C(999999999999)};
    char v3_db[sizeof v1_db + 512], err[256];
    const char *v1_tail = "PRAGMA user_version = 1;";

    assert_int_equal(snprintf(v3_db, sizeof v3_db, "%.*s%s", (int)(strlen(v1_db) - strlen(v1_tail)),
                              v1_db, "ALTER TABLE queue ADD COLUMN dlq_enabled INTEGER NOT NULL DEFAULT 0;"
                              "ALTER TABLE queue ADD COLUMN dlq_target TEXT NOT NULL DEFAULT '';"
                              "ALTER TABLE queue ADD COLUMN dlq_max_receive INTEGER NOT NULL DEFAULT 0;"
                              "ALTER TABLE msg ADD COLUMN src_queue_id INTEGER NOT NULL DEFAULT 0;"
                              "ALTER TABLE msg_body ADD COLUMN md5 BLOB;"
                              "PRAGMA user_version = 3;") > 0, 1);
    make_raw_db(f->path, v3_db);
    assert_int_equal(open_store(f->path, SMQ_SYNC_FULL, &f->s, err, sizeof err), 0);
    assert_int_equal(db_peek_int(f->path, "PRAGMA user_version"), STORE_SCHEMA_VERSION);
    m.seq = 6;
    assert_int_equal(store_msg_insert(f->s, &m, &(struct store_msg_content){"new", 3, NULL,
                                                                            "<G>xy;", 6}), 0);
    m.seq = 7;
    assert_int_equal(put_msg(f->s, &m, "none", 4, NULL), 0);
    expect_bodies_with_ext(f->s);
    reopen(f);
    expect_bodies_with_ext(f->s);
}

static void test_store_queue_dlq_columns_round_trip(void **state)
{
    struct fixture *f = *state;
    struct store_queue_rec q = make_queue(1, "src");
    struct queue_list ql = {.n = 0};

    q.dlq_enabled = 1;
    snprintf(q.dlq_target, sizeof q.dlq_target, "src-dlq");
    q.dlq_max_receive = 5;
    assert_int_equal(store_queue_insert(f->s, &q), 0);
    reopen(f);
    assert_int_equal(store_queue_load(f->s, collect_queue, &ql), 0);
    assert_int_equal(ql.n, 1);
    assert_int_equal(ql.q[0].dlq_enabled, 1);
    assert_string_equal(ql.q[0].dlq_target, "src-dlq");
    assert_int_equal(ql.q[0].dlq_max_receive, 5);
    q.dlq_enabled = 0;
    q.dlq_target[0] = '\0';
    q.dlq_max_receive = 0;
    assert_int_equal(store_queue_update(f->s, &q), 0);
    ql.n = 0;
    assert_int_equal(store_queue_load(f->s, collect_queue, &ql), 0);
    assert_int_equal(ql.q[0].dlq_enabled, 0);
    assert_string_equal(ql.q[0].dlq_target, "");
}

static void test_store_msg_move_rekeys_and_keeps_body(void **state)
{
    struct fixture *f = *state;
    struct store_queue_rec a = make_queue(1, "a"), b = make_queue(2, "b");
    struct store_msg_rec m = make_msg(1, 9);
    struct msg_list ml = {.n = 0};
    struct smq_buf body;

    assert_int_equal(store_queue_insert(f->s, &a), 0);
    assert_int_equal(store_queue_insert(f->s, &b), 0);
    insert_msg(f->s, 1, 9);
    m.queue_id = 2;
    m.dequeue_count = 0;
    m.handle_gen = 4;
    m.src_queue_id = 1;
    m.expire_ms = m.enqueue_ms + 1000;
    assert_int_equal(store_msg_move(f->s, 1, &m), 0);
    /* Moving what is not there (wrong source) writes nothing. */
    assert_int_equal(store_msg_move(f->s, 1, &m), SMQ_E_MESSAGE_NOT_EXIST);
    reopen(f);
    assert_int_equal(store_msg_load(f->s, collect_msg, &ml), 0);
    assert_int_equal(ml.n, 1);
    assert_int_equal(ml.m[0].queue_id, 2);
    assert_int_equal(ml.m[0].src_queue_id, 1);
    assert_int_equal(ml.m[0].handle_gen, 4);
    assert_int_equal(ml.m[0].enqueue_ms, m.enqueue_ms);
    assert_int_equal(ml.m[0].expire_ms, m.enqueue_ms + 1000);
    buf_init(&body);
    assert_int_equal(body_of(f->s, 2, 9, &body, NULL), 0);
    assert_memory_equal(body.data, "body 1/9", 8);
    buf_free(&body);
}

static void test_store_queue_purge_keeps_queue_and_others(void **state)
{
    struct fixture *f = *state;
    struct store_queue_rec a = make_queue(1, "a"), b = make_queue(2, "b");
    struct queue_list ql = {.n = 0};
    struct msg_list ml = {.n = 0};

    assert_int_equal(store_queue_insert(f->s, &a), 0);
    assert_int_equal(store_queue_insert(f->s, &b), 0);
    for (uint64_t seq = 1; seq <= 6; seq++)
        insert_msg(f->s, seq % 2 ? 1 : 2, seq);
    assert_int_equal(store_queue_purge(f->s, 1), 0);
    assert_int_equal(store_queue_load(f->s, collect_queue, &ql), 0);
    assert_int_equal(ql.n, 2);
    assert_int_equal(store_msg_load(f->s, collect_msg, &ml), 0);
    assert_int_equal(ml.n, 3);
    for (int i = 0; i < ml.n; i++)
        assert_int_equal(ml.m[i].queue_id, 2);
    assert_int_equal(db_peek_int(f->path, "SELECT count(*) FROM msg_body"), 3);
}

static void test_store_reclaim_shrinks_file(void **state)
{
    struct fixture *f = *state;
    struct store_queue_rec a = make_queue(1, "a");
    struct store_file_stats before, full, after;
    static char big[4000];
    uint64_t freed = 0, total = 0;

    memset(big, 'x', sizeof big);
    assert_int_equal(store_queue_insert(f->s, &a), 0);
    assert_int_equal(store_file_stats(f->s, &before), 0);
    assert_int_equal(store_begin(f->s), 0);
    for (uint64_t seq = 1; seq <= 2000; seq++) {
        struct store_msg_rec m = make_msg(1, seq);
        assert_int_equal(put_msg(f->s, &m, big, sizeof big, NULL), 0);
    }
    assert_int_equal(store_commit(f->s), 0);
    assert_int_equal(store_queue_purge(f->s, 1), 0);
    assert_int_equal(store_file_stats(f->s, &full), 0);
    assert_true(full.free_pages >= 2000);          /* a 4 KB body takes a page */
    assert_true(full.page_size >= 512);
    /* Outside a transaction only; step by step until nothing is left. */
    assert_int_equal(store_begin(f->s), 0);
    assert_int_equal(store_reclaim(f->s, 100, &freed), SMQ_E_INTERNAL);
    store_rollback(f->s);
    do {
        assert_int_equal(store_reclaim(f->s, 500, &freed), 0);
        assert_true(freed <= 500);
        total += freed;
    } while (freed > 0);
    assert_int_equal(store_file_stats(f->s, &after), 0);
    assert_int_equal(after.free_pages, 0);
    assert_true(total >= 2000);
    assert_true(after.pages + total <= full.pages);   /* pointer-map pages go too */
    assert_true(after.pages <= before.pages + 8);
}

/* ---- topics (docs/protocol.md §13): store_topic_cases.h --------------- */

static long long topic_peek(struct fixture *f, const char *sql)
{
    return db_peek_int(f->path, sql);
}

#include "store_topic_cases.h"

static void test_store_topic_round_trip(void **state)
{
    topic_case_round_trip(*state);
}

static void test_store_topic_refusals(void **state)
{
    topic_case_refusals(*state);
}

static void test_store_sub_round_trip_1024_endpoint(void **state)
{
    sub_case_round_trip(*state);
}

static void test_store_sub_refusals(void **state)
{
    sub_case_refusals(*state);
}

static void test_store_topic_delete_cascades(void **state)
{
    topic_case_delete_cascades(*state);
}

static void test_store_topics_survive_reopen(void **state)
{
    topic_case_survives_reopen(*state);
}

static void test_store_topic_savepoint_and_fault(void **state)
{
    topic_case_savepoint_and_fault(*state);
}

static void test_store_tmsg_round_trip(void **state)
{
    tmsg_case_round_trip(*state);
}

static void test_store_notif_round_trip(void **state)
{
    notif_case_round_trip(*state);
}

/* A schema-4 database (the last before topics) gains the topic tables on
 * open and keeps every row it had. */
static void test_store_v4_database_gains_topic_tables(void **state)
{
    struct fixture *f = *state;
    struct store_topic_rec t = make_topic(1, "new-topic");
    struct queue_list ql = {.n = 0};
    struct topic_list tl = {.n = 0};
    struct smq_buf body;
    char v4_db[sizeof v1_db + 512], err[256];
    const char *v1_tail = "PRAGMA user_version = 1;";

    assert_true(snprintf(v4_db, sizeof v4_db, "%.*s%s", (int)(strlen(v1_db) - strlen(v1_tail)),
                         v1_db, "ALTER TABLE queue ADD COLUMN dlq_enabled INTEGER NOT NULL DEFAULT 0;"
                         "ALTER TABLE queue ADD COLUMN dlq_target TEXT NOT NULL DEFAULT '';"
                         "ALTER TABLE queue ADD COLUMN dlq_max_receive INTEGER NOT NULL DEFAULT 0;"
                         "ALTER TABLE msg ADD COLUMN src_queue_id INTEGER NOT NULL DEFAULT 0;"
                         "ALTER TABLE msg_body ADD COLUMN md5 BLOB;"
                         "ALTER TABLE msg_body ADD COLUMN ext BLOB;"
                         "PRAGMA user_version = 4;") < (int)sizeof v4_db);
    make_raw_db(f->path, v4_db);
    assert_int_equal(db_peek_int(f->path, "SELECT count(*) FROM sqlite_schema WHERE name = 'topic'"),
                     0);
    assert_int_equal(open_store(f->path, SMQ_SYNC_FULL, &f->s, err, sizeof err), 0);
    assert_int_equal(db_peek_int(f->path, "PRAGMA user_version"), STORE_SCHEMA_VERSION);
    assert_int_equal(db_peek_int(f->path, "SELECT count(*) FROM sqlite_schema WHERE type = 'table' "
                                          "AND name IN ('topic', 'subscription', 'tmsg', "
                                          "'tmsg_body', 'notif')"), 5);
    assert_int_equal(store_queue_load(f->s, collect_queue, &ql), 0);
    assert_int_equal(ql.n, 1);
    assert_string_equal(ql.q[0].name, "old");
    buf_init(&body);
    assert_int_equal(body_of(f->s, 1, 5, &body, NULL), 0);
    assert_memory_equal(body.data, "kept", 4);
    buf_free(&body);
    assert_int_equal(store_topic_insert(f->s, &t), 0);
    reopen(f);                                      /* nothing to migrate the second time */
    assert_int_equal(store_topic_load(f->s, collect_topic, &tl), 0);
    assert_int_equal(tl.n, 1);
    assert_topic_equal(&tl.t[0], &t);
}

static void test_store_signing_key_put_if_absent(void **state)
{
    signing_key_case_put_if_absent(*state);
}

/* A schema-5 database (the last before the signing key) gains its table
 * on open, keeps its topics, and takes a key. */
static void test_store_v5_database_gains_signing_key(void **state)
{
    struct fixture *f = *state;
    struct store_topic_rec t = make_topic(1, "kept-topic");
    struct topic_list tl = {.n = 0};

    assert_int_equal(store_topic_insert(f->s, &t), 0);
    store_close(f->s);
    f->s = NULL;
    make_raw_db(f->path, "DROP TABLE signing_key; PRAGMA user_version = 5;");
    assert_int_equal(db_peek_int(f->path, "PRAGMA user_version"), 5);
    reopen(f);
    assert_int_equal(db_peek_int(f->path, "PRAGMA user_version"), STORE_SCHEMA_VERSION);
    assert_int_equal(db_peek_int(f->path, "SELECT count(*) FROM sqlite_schema WHERE "
                                          "name = 'signing_key'"), 1);
    assert_int_equal(store_topic_load(f->s, collect_topic, &tl), 0);
    assert_int_equal(tl.n, 1);
    assert_topic_equal(&tl.t[0], &t);
    assert_int_equal(store_signing_key_put_if_absent(f->s, "K\n", "C\n"), 0);
    assert_signing_key(f->s, "K\n", "C\n");
}

/* A schema-6 database (notif keyed by subscription first) is rekeyed by
 * message first on open, every notification kept as it was. */
static void test_store_v6_database_rekeys_notifications(void **state)
{
    struct fixture *f = *state;
    store_close(f->s);
    f->s = NULL;
    make_raw_db(f->path,
                "DROP TABLE notif;"
                "CREATE TABLE notif(sub_id INTEGER NOT NULL, seq INTEGER NOT NULL,"
                " attempts INTEGER NOT NULL, due_ms INTEGER NOT NULL,"
                " strategy INTEGER NOT NULL, PRIMARY KEY(sub_id, seq)) WITHOUT ROWID;"
                "INSERT INTO notif VALUES " REKEY_NOTIF_ROWS ";"
                "PRAGMA user_version = 6;");
    /* column 0 (sub_id) leads the old key */
    assert_int_equal(db_peek_int(f->path, "SELECT cid FROM pragma_index_info("
                                          "'sqlite_autoindex_notif_1') WHERE seqno = 0"), 0);
    reopen(f);
    assert_int_equal(db_peek_int(f->path, "PRAGMA user_version"), 7);
    assert_int_equal(db_peek_int(f->path, "SELECT cid FROM pragma_index_info("
                                          "'sqlite_autoindex_notif_1') WHERE seqno = 0"), 1);
    expect_rekeyed_notifs(f->s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_store_open_reopen_keeps_data, store_setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_user_version_is_7, store_setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_topic_round_trip, store_setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_topic_refusals, store_setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_sub_round_trip_1024_endpoint, store_setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_store_sub_refusals, store_setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_topic_delete_cascades, store_setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_topics_survive_reopen, store_setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_topic_savepoint_and_fault, store_setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_store_tmsg_round_trip, store_setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_notif_round_trip, store_setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_v4_database_gains_topic_tables, dir_setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_store_ext_after_body_and_migrated, dir_setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_journal_mode_is_wal, store_setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_sync_normal_opens, dir_setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_lock_follows_symlinks, store_setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_msg_bodies_batch, store_setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_flush_holds_the_real_wal, dir_setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_unknown_backend_refused, dir_setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_refuses_newer_schema, dir_setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_refuses_non_database, dir_setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_refuses_foreign_sqlite_database, dir_setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_store_open_missing_dir_fails, dir_setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_integrity_check_ok, store_setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_queue_round_trip, store_setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_queue_update_keeps_name_and_create,
                                        store_setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_queue_name_unique, store_setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_queue_missing_row, store_setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_queue_name_too_long, store_setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_queue_delete_removes_only_its_messages,
                                        store_setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_msg_round_trip, store_setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_msg_delete, store_setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_msg_binary_and_empty_body, store_setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_store_msg_seq_range, store_setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_loader_stops_on_callback, store_setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_store_meta_get_set_binary, store_setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_rollback_leaves_no_trace, store_setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_store_failed_write_in_txn_then_rollback,
                                        store_setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_fault_on_nth_write, store_setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_full_and_reserve, store_setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_fault_on_commit_then_rollback, store_setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_store_savepoint_undoes_one_op, store_setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_store_bulk_insert_100k, store_setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_migrates_v1_to_v2, dir_setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_migrates_v2_to_v3_and_keeps_md5, dir_setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_queue_dlq_columns_round_trip, store_setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_store_msg_move_rekeys_and_keeps_body, store_setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_store_queue_purge_keeps_queue_and_others,
                                        store_setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_reclaim_shrinks_file, store_setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_signing_key_put_if_absent, store_setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_store_v5_database_gains_signing_key, store_setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_store_v6_database_rekeys_notifications,
                                        store_setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
