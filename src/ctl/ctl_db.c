/*
 * ctl_db.c — owns smqctl's SQLite work (ctl_db.h): online backup and
 * integrity check of a database that smqd may be writing at the same time.
 *
 * Why the backup holds a read transaction.  sqlite3_backup_step() restarts
 * from the first page whenever another connection writes the source between
 * two steps, so a chunked copy of a busy database might never finish.  In
 * WAL mode a read transaction pins one snapshot without blocking smqd's
 * writes; the backup then copies that snapshot in chunks and cannot be
 * restarted by anyone.  The price: the WAL cannot be checkpointed past the
 * snapshot until the backup ends, so it may grow meanwhile.
 */
#include "ctl_db.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "smqd/errors.h"

/* Pages per backup step: 4 MiB with smqd's 4 KiB pages; small enough that
 * progress shows, large enough that the per-step overhead vanishes. */
#define BACKUP_STEP_PAGES 1024
#define CHECK_MAX_LINES 100

/*
 * Opening a WAL database whose PATH-shm does not exist (smqd is stopped)
 * makes SQLite create PATH-wal and PATH-shm, owned by whoever runs smqctl.
 * Root is fine: SQLite gives files it creates next to a database the
 * database's owner.  Another user who is not the owner (a group member)
 * would leave files smqd may not be able to open; say so first.
 */
static void warn_foreign_owner(const char *db_path)
{
    char shm[4200];
    struct stat st;

    if (geteuid() == 0)
        return;
    if (snprintf(shm, sizeof shm, "%s-shm", db_path) >= (int)sizeof shm || access(shm, F_OK) == 0)
        return;
    if (stat(db_path, &st) != 0 || st.st_uid == geteuid())
        return;
    fprintf(stderr, "smqctl: warning: %s belongs to uid %u but smqctl runs as uid %u; SQLite "
            "may leave %s-wal/-shm owned by uid %u, which smqd cannot open. Run smqctl as the "
            "database's owner (e.g. sudo -u smqd smqctl ...).\n", db_path, (unsigned)st.st_uid,
            (unsigned)geteuid(), db_path, (unsigned)geteuid());
}

static int open_db(const char *path, int flags, sqlite3 **db, char *err, size_t err_size)
{
    if (sqlite3_open_v2(path, db, flags, NULL) != SQLITE_OK) {
        snprintf(err, err_size, "cannot open %s: %s", path,
                 *db != NULL ? sqlite3_errmsg(*db) : "out of memory");
        sqlite3_close(*db);
        *db = NULL;
        return SMQ_E_INTERNAL;
    }
    /* smqd commits in a few milliseconds; wait for it rather than fail. */
    sqlite3_busy_timeout(*db, 10000);
    return 0;
}

/* Runs integrity_check; writes up to CHECK_MAX_LINES result rows to out.
 * 0 with *ok (false: problems found), or SMQ_E_INTERNAL when it cannot run. */
static int integrity(sqlite3 *db, FILE *out, bool *ok, char *err, size_t err_size)
{
    sqlite3_stmt *st = NULL;
    int rc, ret = 0, lines = 0;

    *ok = true;
    if (sqlite3_prepare_v2(db, "PRAGMA integrity_check(" "100" ")", -1, &st, NULL) != SQLITE_OK) {
        snprintf(err, err_size, "integrity_check: %s", sqlite3_errmsg(db));
        return SMQ_E_INTERNAL;
    }
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *line = (const char *)sqlite3_column_text(st, 0);
        if (line == NULL)
            continue;
        if (strcmp(line, "ok") != 0)
            *ok = false;
        if (out != NULL && lines++ < CHECK_MAX_LINES)
            fprintf(out, "%s\n", line);
    }
    if (rc != SQLITE_DONE) {
        snprintf(err, err_size, "integrity_check: %s", sqlite3_errmsg(db));
        ret = SMQ_E_INTERNAL;
    }
    sqlite3_finalize(st);
    return ret;
}

int ctl_db_check(const char *db_path, FILE *out, bool *ok, char *err, size_t err_size)
{
    sqlite3 *db = NULL;
    int rc;

    /* Read-only: a check must never be the thing that changes the file.
     * (In WAL mode the reader still maps PATH-shm, which smqd created.) */
    warn_foreign_owner(db_path);
    *ok = false;
    if (open_db(db_path, SQLITE_OPEN_READONLY, &db, err, err_size) != 0)
        return SMQ_E_INTERNAL;
    rc = integrity(db, out, ok, err, err_size);
    sqlite3_close(db);
    return rc;
}

/* Makes an empty temporary file next to dest; its name goes to tmp. */
static int make_temp(const char *dest, char *tmp, size_t size, char *err, size_t err_size)
{
    int fd;

    if (snprintf(tmp, size, "%s.tmp.XXXXXX", dest) >= (int)size) {
        snprintf(err, err_size, "destination path too long");
        return SMQ_E_INTERNAL;
    }
    fd = mkstemp(tmp);
    if (fd < 0) {
        snprintf(err, err_size, "cannot create a temporary file next to %s: %s", dest,
                 strerror(errno));
        return SMQ_E_INTERNAL;
    }
    close(fd);
    return 0;
}

/* Copies the source snapshot into dst in chunks.  0 or SMQ_E_INTERNAL. */
static int copy_pages(sqlite3 *src, sqlite3 *dst, FILE *log, char *err, size_t err_size)
{
    sqlite3_backup *b = sqlite3_backup_init(dst, "main", src, "main");
    int rc, total = 0;

    if (b == NULL) {
        snprintf(err, err_size, "backup: %s", sqlite3_errmsg(dst));
        return SMQ_E_INTERNAL;
    }
    do {
        rc = sqlite3_backup_step(b, BACKUP_STEP_PAGES);
        total = sqlite3_backup_pagecount(b);
        if (log != NULL && (rc == SQLITE_OK || rc == SQLITE_DONE))
            fprintf(log, "backup: %d of %d pages\r", total - sqlite3_backup_remaining(b), total);
    } while (rc == SQLITE_OK || rc == SQLITE_BUSY || rc == SQLITE_LOCKED);
    if (log != NULL)
        fprintf(log, "\n");
    sqlite3_backup_finish(b);
    if (rc != SQLITE_DONE) {
        snprintf(err, err_size, "backup: %s", sqlite3_errstr(rc));
        return SMQ_E_INTERNAL;
    }
    return 0;
}

static int fsync_path(const char *path, int flags)
{
    int fd = open(path, flags | O_CLOEXEC);
    int rc;

    if (fd < 0)
        return SMQ_E_INTERNAL;
    rc = fsync(fd);
    close(fd);
    return rc;
}

/* The directory of path, for fsyncing a rename. */
static int fsync_dir_of(const char *path)
{
    char *copy = strdup(path);
    int rc;

    if (copy == NULL)
        return SMQ_E_INTERNAL;
    rc = fsync_path(dirname(copy), O_RDONLY | O_DIRECTORY);
    free(copy);
    return rc;
}

/* Source snapshot → tmp; the copy is checked and synced.  0 or -1. */
static int backup_to(const char *db_path, const char *tmp, FILE *log, char *err,
                     size_t err_size)
{
    sqlite3 *src = NULL, *dst = NULL;
    bool ok = false;
    int rc = SMQ_E_INTERNAL;

    if (open_db(db_path, SQLITE_OPEN_READONLY, &src, err, err_size) != 0)
        goto out;
    if (open_db(tmp, SQLITE_OPEN_READWRITE, &dst, err, err_size) != 0)
        goto out;
    /* The snapshot: see the file comment. */
    if (sqlite3_exec(src, "BEGIN; SELECT count(*) FROM sqlite_schema;", NULL, NULL, NULL)
        != SQLITE_OK) {
        snprintf(err, err_size, "cannot read %s: %s", db_path, sqlite3_errmsg(src));
        goto out;
    }
    if (copy_pages(src, dst, log, err, err_size) != 0)
        goto out;
    sqlite3_exec(src, "COMMIT", NULL, NULL, NULL);
    rc = integrity(dst, NULL, &ok, err, err_size);
    if (rc == 0 && !ok) {
        snprintf(err, err_size, "the copy fails PRAGMA integrity_check (is %s damaged? "
                 "run smqctl check)", db_path);
        rc = SMQ_E_INTERNAL;
    }
out:
    sqlite3_close(dst);              /* the last close folds the copy's own WAL in */
    sqlite3_close(src);
    if (rc == 0 && fsync_path(tmp, O_RDONLY) != 0) {
        snprintf(err, err_size, "cannot fsync %s: %s", tmp, strerror(errno));
        rc = SMQ_E_INTERNAL;
    }
    return rc;
}

/* Whether the file at path exists and is the same file as st. */
static bool same_file(const char *path, const struct stat *st)
{
    struct stat other;

    return stat(path, &other) == 0 && other.st_dev == st->st_dev && other.st_ino == st->st_ino;
}

/*
 * The rename must not land on the live database or one of its companions
 * (smqd would go on writing to a deleted file and lose everything after
 * it), and no stale DEST-wal may wait to be replayed onto the copy.
 */
static int check_dest(const char *db_path, const char *dest, char *err, size_t err_size)
{
    static const char *const companions[] = {"", "-wal", "-shm", "-journal", ".lock", ".reserve"};
    char path[4200];
    struct stat st;

    if (stat(dest, &st) == 0) {
        for (size_t i = 0; i < sizeof companions / sizeof companions[0]; i++) {
            snprintf(path, sizeof path, "%s%s", db_path, companions[i]);
            if (same_file(path, &st)) {
                snprintf(err, err_size, "%s is %s itself: a backup must go elsewhere", dest,
                         path);
                return SMQ_E_INTERNAL;
            }
        }
    }
    for (size_t i = 1; i <= 3; i++) {
        snprintf(path, sizeof path, "%s%s", dest, companions[i]);
        if (access(path, F_OK) == 0) {
            snprintf(err, err_size, "%s exists and would be read as part of the backup; "
                     "remove it or choose another destination", path);
            return SMQ_E_INTERNAL;
        }
    }
    return 0;
}

int ctl_db_backup(const char *db_path, const char *dest, FILE *log, char *err, size_t err_size)
{
    char tmp[4200];

    if (access(db_path, R_OK) != 0) {
        snprintf(err, err_size, "cannot read %s: %s", db_path, strerror(errno));
        return SMQ_E_INTERNAL;
    }
    if (check_dest(db_path, dest, err, err_size) != 0)
        return SMQ_E_INTERNAL;
    warn_foreign_owner(db_path);
    if (make_temp(dest, tmp, sizeof tmp, err, err_size) != 0)
        return SMQ_E_INTERNAL;
    if (backup_to(db_path, tmp, log, err, err_size) != 0) {
        unlink(tmp);
        return SMQ_E_INTERNAL;
    }
    if (rename(tmp, dest) != 0) {
        snprintf(err, err_size, "cannot rename %s to %s: %s", tmp, dest, strerror(errno));
        unlink(tmp);
        return SMQ_E_INTERNAL;
    }
    if (fsync_dir_of(dest) != 0 && log != NULL)
        fprintf(log, "backup: warning: cannot fsync the directory of %s: %s\n", dest,
                strerror(errno));
    return 0;
}
