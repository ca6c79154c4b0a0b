/*
 * test_ctl_db.c — unit tests for ctl_db.c (ctl_db.h): smqctl's online
 * backup and integrity check.  A backup of a database that another
 * connection is writing (between the backup's chunks, and with a write
 * transaction open) is one consistent snapshot that passes the check and
 * includes what is only in the WAL; an existing destination file is
 * replaced; every failure (no room to write, a destination that cannot be
 * replaced, a damaged, missing or foreign source) returns SMQ_E_INTERNAL
 * with a reason, leaves dest untouched and no temporary file behind.  The
 * check says "ok" on a sound file without changing it, reports the
 * problems of a damaged one, and fails when it cannot open the file.
 *
 * Databases are made with SQLite in a mkdtemp directory under /tmp; the
 * concurrent writer is a second connection driven from the backup's own
 * progress log, so the interleaving is forced, not hoped for.
 */
#define _GNU_SOURCE           /* fopencookie, memmem */
#include <dirent.h>
#include <ftw.h>
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
#include <sqlite3.h>

#include "db_peek.h"

#include "ctl_db.h"
#include "smqd/errors.h"

#define N_PAIRS 10                 /* rows in a and in b of a fresh database */
#define PAD_ROWS 2500              /* ~10 MB: more than two 1024-page backup steps */
#define STR_(x) #x
#define STR(x) STR_(x)

struct fixture {
    char dir[64];
    char db[128];                  /* the source */
    char dest[256];                /* dir/backup.db */
    char err[512];
    char *log_buf;                 /* open_memstream of log */
    size_t log_len;
    FILE *log;
    sqlite3 *writer;               /* a second connection to db, when a test needs one */
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);

    if (f == NULL)
        return -1;
    *state = f;
    snprintf(f->dir, sizeof f->dir, "/tmp/smqd-test-ctldb-XXXXXX");
    if (mkdtemp(f->dir) == NULL)
        return -1;
    snprintf(f->db, sizeof f->db, "%s/live.db", f->dir);
    snprintf(f->dest, sizeof f->dest, "%s/backup.db", f->dir);
    f->log = open_memstream(&f->log_buf, &f->log_len);
    return f->log != NULL ? 0 : -1;
}

static int rm_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st, (void)type, (void)ftw;
    return remove(path);
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    sqlite3_close(f->writer);
    if (f->log != NULL)
        fclose(f->log);
    free(f->log_buf);
    nftw(f->dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
    free(f);
    return 0;
}

/* ---- helpers ------------------------------------------------------------------ */

static sqlite3 *open_rw(const char *path)
{
    sqlite3 *db = NULL;

    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                                     NULL), SQLITE_OK);
    sqlite3_busy_timeout(db, 10000);
    return db;
}

static void exec_ok(sqlite3 *db, const char *sql)
{
    char *msg = NULL;

    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
        fail_msg("%s: %s", sql, msg != NULL ? msg : "?");
}

/* Tables a and b that every committed transaction grows together (a
 * consistent copy has as many rows in each), and ~10 MB of padding. */
static const char schema_sql[] =
    "CREATE TABLE a(id INTEGER PRIMARY KEY, v TEXT);"
    "CREATE TABLE b(id INTEGER PRIMARY KEY, v TEXT);"
    "CREATE TABLE pad(x BLOB);"
    "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < " STR(PAD_ROWS) ")"
    " INSERT INTO pad SELECT zeroblob(4000) FROM c;"
    "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < " STR(N_PAIRS) ")"
    " INSERT INTO a(v) SELECT 'x' FROM c;"
    "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < " STR(N_PAIRS) ")"
    " INSERT INTO b(v) SELECT 'x' FROM c;";

static const char pair_sql[] = "BEGIN IMMEDIATE; INSERT INTO a(v) VALUES ('w');"
                               " INSERT INTO b(v) VALUES ('w'); COMMIT;";

/* A WAL database like smqd's, written through f->writer, which stays open
 * with checkpoints off: everything is still in db-wal only. */
static void make_live_wal_db(struct fixture *f)
{
    f->writer = open_rw(f->db);
    exec_ok(f->writer, "PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0;");
    exec_ok(f->writer, schema_sql);
}

/* The same in rollback-journal mode, closed. */
static void make_closed_db(const char *path)
{
    sqlite3 *db = open_rw(path);

    exec_ok(db, schema_sql);
    sqlite3_close(db);
}

static void write_file(const char *path, const char *text)
{
    FILE *fp = fopen(path, "w");

    assert_non_null(fp);
    assert_int_equal(fputs(text, fp) >= 0, 1);
    assert_int_equal(fclose(fp), 0);
}

/* The whole file into a malloc'd buffer (*len bytes). */
static char *slurp(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    char *buf;
    long n;

    assert_non_null(fp);
    assert_int_equal(fseek(fp, 0, SEEK_END), 0);
    n = ftell(fp);
    assert_true(n >= 0);
    rewind(fp);
    buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, fp), (size_t)n);
    buf[n] = '\0';
    fclose(fp);
    *len = (size_t)n;
    return buf;
}

static void assert_file_text(const char *path, const char *text)
{
    size_t len;
    char *got = slurp(path, &len);
    bool same = len == strlen(text) && memcmp(got, text, len) == 0;

    free(got);
    assert_true(same);
}

/* No file in f->dir whose name starts with "backup.db.tmp". */
static void assert_no_temp_left(const struct fixture *f)
{
    DIR *d = opendir(f->dir);
    struct dirent *de;
    char found[256] = "";

    assert_non_null(d);
    while ((de = readdir(d)) != NULL)
        if (strncmp(de->d_name, "backup.db.tmp", 13) == 0)
            snprintf(found, sizeof found, "%s", de->d_name);
    closedir(d);
    if (found[0] != '\0')
        fail_msg("temporary file left behind: %s/%s", f->dir, found);
}

static void assert_failed_with_reason(const struct fixture *f, int rc)
{
    assert_int_equal(rc, SMQ_E_INTERNAL);
    assert_true(strlen(f->err) > 0);
}

static int backup(struct fixture *f)
{
    f->err[0] = '\0';
    return ctl_db_backup(f->db, f->dest, f->log, f->err, sizeof f->err);
}

/* The copy at path is sound by ctl_db_check and has n pairs in a and b. */
static void assert_sound_copy(struct fixture *f, const char *path, long long n)
{
    bool ok = false;

    assert_int_equal(ctl_db_check(path, NULL, &ok, f->err, sizeof f->err), 0);
    assert_true(ok);
    assert_int_equal(db_peek_int(path, "SELECT count(*) FROM a"), n);
    assert_int_equal(db_peek_int(path, "SELECT count(*) FROM b"), n);
}

/* ---- backup of a database being written ------------------------------------ */

/* The backup's log; between two chunks (a progress line "X of Y" with
 * X < Y) a second connection commits one pair, as smqd would. */
struct mid_writer {
    sqlite3 *writer;
    int commits_mid;               /* commits made while pages were still to copy */
    int failures;
    char last[128];                /* the last progress text */
};

static ssize_t mid_write(void *cookie, const char *buf, size_t size)
{
    struct mid_writer *w = cookie;
    int done, total;

    snprintf(w->last, sizeof w->last, "%.*s", (int)size, buf);
    if (sscanf(w->last, "backup: %d of %d", &done, &total) == 2 && done < total
        && w->commits_mid < 3) {
        if (sqlite3_exec(w->writer, pair_sql, NULL, NULL, NULL) == SQLITE_OK)
            w->commits_mid++;
        else
            w->failures++;
    }
    return (ssize_t)size;
}

static FILE *mid_writer_log(struct mid_writer *w)
{
    cookie_io_functions_t io = {.write = mid_write};
    FILE *log = fopencookie(w, "w", io);

    assert_non_null(log);
    setvbuf(log, NULL, _IONBF, 0);   /* each progress line reaches mid_write at once */
    return log;
}

/* Commits land between the chunks of the copy; the copy is still one
 * snapshot: sound, a and b in step, and with the rows that were only in
 * the WAL (a copy of the main file alone would have none). */
static void test_backup_of_database_being_written_is_one_snapshot(void **state)
{
    struct fixture *f = *state;
    struct mid_writer w = {0};
    FILE *log;
    long long n;
    int rc;

    make_live_wal_db(f);
    w.writer = f->writer;
    log = mid_writer_log(&w);
    rc = ctl_db_backup(f->db, f->dest, log, f->err, sizeof f->err);
    fclose(log);
    if (rc != 0)
        fail_msg("backup: %s", f->err);
    assert_true(w.commits_mid >= 1);       /* the writes really fell inside the copy */
    assert_int_equal(w.failures, 0);
    n = db_peek_int(f->dest, "SELECT count(*) FROM a");
    assert_true(n >= N_PAIRS && n <= N_PAIRS + w.commits_mid);
    assert_sound_copy(f, f->dest, n);
    assert_int_equal(db_peek_int(f->dest, "SELECT count(*) FROM pad"), PAD_ROWS);
    assert_int_equal(db_peek_int(f->db, "SELECT count(*) FROM a"), N_PAIRS + w.commits_mid);
    assert_no_temp_left(f);
}

/* A write transaction held open by another connection (smqd mid-commit)
 * neither blocks the backup and the check nor gets into the copy. */
static void test_backup_and_check_beside_open_write_transaction(void **state)
{
    struct fixture *f = *state;
    bool ok = false;

    make_live_wal_db(f);
    exec_ok(f->writer, "BEGIN IMMEDIATE; INSERT INTO a(v) VALUES ('u');");
    if (backup(f) != 0)
        fail_msg("backup: %s", f->err);
    assert_int_equal(ctl_db_check(f->db, NULL, &ok, f->err, sizeof f->err), 0);
    assert_true(ok);
    exec_ok(f->writer, "COMMIT;");
    assert_sound_copy(f, f->dest, N_PAIRS);
    assert_no_temp_left(f);
}

/* Progress goes to log: the last line says every page was copied. */
static void test_backup_reports_progress_to_log(void **state)
{
    struct fixture *f = *state;
    int done = -1, total = -2;
    char *last;

    make_closed_db(f->db);
    assert_int_equal(backup(f), 0);
    assert_int_equal(fflush(f->log), 0);
    assert_non_null(f->log_buf);
    last = NULL;
    for (char *p = f->log_buf; (p = strstr(p, "backup: ")) != NULL; p++)
        last = p;
    assert_non_null(last);
    assert_int_equal(sscanf(last, "backup: %d of %d pages", &done, &total), 2);
    assert_true(total > 1024);
    assert_int_equal(done, total);
}

/* ---- the destination ---------------------------------------------------------- */

/* An existing file at dest is replaced by the copy ("renamed over dest"). */
static void test_backup_replaces_existing_destination_file(void **state)
{
    struct fixture *f = *state;

    make_closed_db(f->db);
    write_file(f->dest, "an older backup\n");
    if (backup(f) != 0)
        fail_msg("backup: %s", f->err);
    assert_sound_copy(f, f->dest, N_PAIRS);
    assert_no_temp_left(f);
}

/* dest in a directory that does not exist: nothing can be written there;
 * an error with a reason, and nothing created. */
static void test_backup_to_missing_directory_fails_cleanly(void **state)
{
    struct fixture *f = *state;
    char missing[160];
    struct stat st;

    make_closed_db(f->db);
    snprintf(missing, sizeof missing, "%s/no-such-dir", f->dir);
    snprintf(f->dest, sizeof f->dest, "%s/backup.db", missing);
    assert_failed_with_reason(f, backup(f));
    assert_int_not_equal(stat(missing, &st), 0);
    assert_int_not_equal(stat(f->dest, &st), 0);
    assert_no_temp_left(f);
}

/* dest exists and cannot be replaced by a file (it is a directory): the
 * failure comes after the copy was made, yet dest is as it was and the
 * temporary copy is gone. */
static void test_backup_onto_directory_fails_and_leaves_it(void **state)
{
    struct fixture *f = *state;
    char inside[320];
    struct stat st;

    make_closed_db(f->db);
    assert_int_equal(mkdir(f->dest, 0755), 0);
    snprintf(inside, sizeof inside, "%s/keep.txt", f->dest);
    write_file(inside, "keep\n");
    assert_failed_with_reason(f, backup(f));
    assert_int_equal(stat(f->dest, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_file_text(inside, "keep\n");
    assert_no_temp_left(f);
}

/* ---- the source ----------------------------------------------------------------- */

/* A database whose index disagrees with its table (one index key changed
 * in place; the file still opens). */
static void make_corrupt_db(const char *path)
{
    sqlite3 *db = open_rw(path);
    long long root, page_size;
    size_t len;
    char *bytes, *key;
    FILE *fp;

    exec_ok(db, "CREATE TABLE t(k TEXT); CREATE INDEX i_k ON t(k);"
                "WITH RECURSIVE c(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM c WHERE n < 99)"
                " INSERT INTO t SELECT printf('key-%03d', n) FROM c;");
    sqlite3_close(db);
    root = db_peek_int(path, "SELECT rootpage FROM sqlite_schema WHERE name = 'i_k'");
    page_size = db_peek_int(path, "PRAGMA page_size");
    bytes = slurp(path, &len);
    assert_true((size_t)(root * page_size) <= len);
    key = memmem(bytes + (root - 1) * page_size, (size_t)page_size, "key-050", 7);
    assert_non_null(key);
    memcpy(key, "key-zzz", 7);
    fp = fopen(path, "r+b");
    assert_non_null(fp);
    assert_int_equal(fwrite(bytes, 1, len, fp), len);
    fclose(fp);
    free(bytes);
}

/* A damaged source: the copy fails integrity_check, so the backup fails;
 * an older backup at dest survives and no temporary file is left. */
static void test_backup_of_damaged_database_fails_and_keeps_dest(void **state)
{
    struct fixture *f = *state;

    make_corrupt_db(f->db);
    write_file(f->dest, "the last good backup\n");
    assert_failed_with_reason(f, backup(f));
    assert_file_text(f->dest, "the last good backup\n");
    assert_no_temp_left(f);
}

/* A source that is missing, or not a database: an error, nothing made. */
static void test_backup_of_missing_or_foreign_source_fails(void **state)
{
    struct fixture *f = *state;
    struct stat st;

    assert_failed_with_reason(f, backup(f));        /* f->db does not exist */
    assert_int_not_equal(stat(f->dest, &st), 0);
    write_file(f->db, "this is not an SQLite database, just some text of no use.\n");
    assert_failed_with_reason(f, backup(f));
    assert_int_not_equal(stat(f->dest, &st), 0);
    assert_no_temp_left(f);
}

/* ---- check ------------------------------------------------------------------------ */

static int check(struct fixture *f, const char *path, bool *ok, char **out)
{
    size_t len;
    FILE *fp = open_memstream(out, &len);
    int rc;

    assert_non_null(fp);
    f->err[0] = '\0';
    rc = ctl_db_check(path, fp, ok, f->err, sizeof f->err);
    fclose(fp);
    return rc;
}

/* A sound file: ok, "ok" written, and the file not changed by the check. */
static void test_check_sound_file_says_ok_and_changes_nothing(void **state)
{
    struct fixture *f = *state;
    size_t len_before, len_after;
    char *before, *after, *out = NULL;
    bool ok = false;

    make_closed_db(f->db);
    before = slurp(f->db, &len_before);
    assert_int_equal(check(f, f->db, &ok, &out), 0);
    after = slurp(f->db, &len_after);
    assert_true(ok);
    assert_string_equal(out, "ok\n");
    assert_true(len_before == len_after && memcmp(before, after, len_before) == 0);
    free(before);
    free(after);
    free(out);
}

/* A damaged file: the check runs (0) and reports the problems, not "ok". */
static void test_check_reports_damaged_file(void **state)
{
    struct fixture *f = *state;
    char *out = NULL;
    bool ok = true;
    int rc;

    make_corrupt_db(f->db);
    rc = check(f, f->db, &ok, &out);
    if (rc != 0)
        fail_msg("check could not run: %s", f->err);
    assert_false(ok);
    assert_true(strlen(out) > 0);
    assert_true(strncmp(out, "ok\n", 3) != 0);
    assert_non_null(strstr(out, "i_k"));
    free(out);
}

/* A file that cannot be opened: SMQ_E_INTERNAL with a reason, and the
 * read-only check does not create it. */
static void test_check_missing_file_cannot_check(void **state)
{
    struct fixture *f = *state;
    char *out = NULL;
    struct stat st;
    bool ok = true;

    assert_int_equal(check(f, f->db, &ok, &out), SMQ_E_INTERNAL);
    assert_true(strlen(f->err) > 0);
    assert_false(ok);
    assert_int_not_equal(stat(f->db, &st), 0);
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
        T(test_backup_of_database_being_written_is_one_snapshot),
        T(test_backup_and_check_beside_open_write_transaction),
        T(test_backup_reports_progress_to_log),
        T(test_backup_replaces_existing_destination_file),
        T(test_backup_to_missing_directory_fails_cleanly),
        T(test_backup_onto_directory_fails_and_leaves_it),
        T(test_backup_of_damaged_database_fails_and_keeps_dest),
        T(test_backup_of_missing_or_foreign_source_fails),
        T(test_check_sound_file_says_ok_and_changes_nothing),
        T(test_check_reports_damaged_file),
        T(test_check_missing_file_cannot_check),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
