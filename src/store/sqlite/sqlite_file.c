/*
 * sqlite_file.c — owns the SQLite backend's file upkeep (sqlite_store.h):
 * the WAL flush that makes commits durable, the disk-space reserve, WAL
 * checkpoints, the return of free pages to the file system, and the
 * integrity check.
 */
#include "sqlite_store.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "smqd/errors.h"
#include "smqd/log.h"
#include "smqd/volume.h"

/* In WAL mode NORMAL still syncs around checkpoints, so the database stays
 * consistent through a power loss; only the latest commits are not yet
 * durable until sqlite_file_flush.  The WAL is opened here, once SQLite has
 * made it, through the name SQLite resolved. */
int sqlite_file_defer_fsync(struct smq_store *base)
{
    struct sqlite_store *s = sqlite_of(base);
    const char *wal = sqlite_file_wal_path(base);

    if (s->wal_fd < 0)
        s->wal_fd = open(wal, O_RDONLY | O_CLOEXEC);
    if (s->wal_fd < 0) {
        SMQ_ERROR("store: cannot open the write-ahead log %s: %s", wal, strerror(errno));
        return SMQ_E_INTERNAL;
    }
    if (sqlite3_exec(s->db, "PRAGMA synchronous=NORMAL", NULL, NULL, NULL) == SQLITE_OK)
        return 0;
    return sqlite_err_fail("synchronous=NORMAL", SQLITE_ERROR, sqlite3_errmsg(s->db));
}

/* fdatasync of the WAL: its size and its pages, which is what a commit
 * appended.  Runs on the syncer's thread; it touches only the descriptor,
 * which no other call changes while the store is open. */
int sqlite_file_flush(struct smq_store *base)
{
    struct sqlite_store *s = sqlite_of(base);

    if (s->wal_fd < 0)
        return 0;            /* commits are synchronous (sync = normal or full without syncer) */
    return fdatasync(s->wal_fd) == 0 ? 0 : SMQ_E_INTERNAL;
}

/* The directory part of path, with its final slash ("." when there is
 * none): 0, or -1 when out is too small. */
const char *sqlite_file_wal_path(const struct smq_store *base)
{
    const struct sqlite_store *s = sqlite_of_const(base);

    return sqlite3_filename_wal(sqlite3_db_filename(s->db, "main"));
}

void sqlite_file_no_checkpoint_on_close(struct smq_store *base)
{
    struct sqlite_store *s = sqlite_of(base);

    if (sqlite3_db_config(s->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL) != SQLITE_OK)
        sqlite_err_fail("no checkpoint on close", SQLITE_ERROR, sqlite3_errmsg(s->db));
}

int sqlite_file_checkpoint(struct smq_store *base)
{
    struct sqlite_store *s = sqlite_of(base);
    int log_frames = 0, done = 0;
    /* TRUNCATE: copy the WAL into the database and cut the WAL file to zero
     * bytes, giving its space back to the file system. */
    int rc = sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, &log_frames, &done);

    if (rc == SQLITE_OK)
        return 0;
    return sqlite_err_fail("checkpoint", rc, sqlite3_errmsg(s->db));
}

/* ---- disk-space reserve ------------------------------------------------ */

int sqlite_file_reserve_init(struct smq_store *base, const char *db_path, uint64_t bytes)
{
    struct sqlite_store *s = sqlite_of(base);
    size_t n = strlen(db_path) + sizeof ".reserve";

    free(s->reserve_path);
    s->reserve_path = malloc(n);
    if (s->reserve_path == NULL)
        return SMQ_E_NOMEM;
    snprintf(s->reserve_path, n, "%s.reserve", db_path);
    s->reserve_bytes = volume_reserve_for(bytes, volume_size_bytes(db_path));
    if (s->reserve_bytes == 0) {
        unlink(s->reserve_path);     /* a reserve left by an earlier config */
        return 0;
    }
    return sqlite_file_reserve_restore(base, 0);
}

uint64_t sqlite_file_reserve_bytes(const struct smq_store *base)
{
    return sqlite_of_const(base)->reserve_bytes;
}

static bool reserve_held(const struct sqlite_store *s)
{
    struct stat st;

    return stat(s->reserve_path, &st) == 0 && (uint64_t)st.st_blocks * 512 >= s->reserve_bytes;
}

int sqlite_file_reserve_restore(struct smq_store *base, uint64_t keep_free)
{
    struct sqlite_store *s = sqlite_of(base);
    int fd, rc;

    if (s->reserve_path == NULL || s->reserve_bytes == 0 || reserve_held(s))
        return 0;
    if (volume_free_bytes(s->reserve_path) < s->reserve_bytes + keep_free)
        return SMQ_E_STORAGE_FULL;
    fd = open(s->reserve_path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    rc = fd < 0 ? errno : 0;
    /* Real blocks, not a sparse file: the point is that they exist to be freed. */
    if (fd >= 0) {
        rc = posix_fallocate(fd, 0, (off_t)s->reserve_bytes);
        close(fd);
        if (rc != 0)
            unlink(s->reserve_path); /* a partial reserve is worth nothing */
    }
    if (rc == 0)
        return 0;
    if (rc == ENOSPC || rc == EDQUOT)
        return SMQ_E_STORAGE_FULL;
    SMQ_WARN("store: cannot create the disk reserve %s: %s", s->reserve_path, strerror(rc));
    return SMQ_E_INTERNAL;
}

void sqlite_file_reserve_release(struct smq_store *base)
{
    struct sqlite_store *s = sqlite_of(base);

    if (s->reserve_path != NULL && s->reserve_bytes > 0 && unlink(s->reserve_path) == 0)
        SMQ_WARN("store: released the %llu-byte disk reserve %s",
                 (unsigned long long)s->reserve_bytes, s->reserve_path);
}

int sqlite_file_stats(struct smq_store *base, struct store_file_stats *out)
{
    struct sqlite_store *s = sqlite_of(base);

    out->page_size = s->page_size;
    if (sqlite_rows_count(s, ST_PAGE_COUNT, &out->pages) != 0 ||
        sqlite_rows_count(s, ST_FREELIST_COUNT, &out->free_pages) != 0)
        return SMQ_E_INTERNAL;
    return 0;
}

int sqlite_file_reclaim(struct smq_store *base, unsigned max_pages, uint64_t *freed)
{
    struct sqlite_store *s = sqlite_of(base);
    uint64_t before, after;
    char sql[64];
    int rc;

    if (!sqlite3_get_autocommit(s->db) || sqlite_rows_count(s, ST_FREELIST_COUNT, &before) != 0)
        return SMQ_E_INTERNAL;
    if (before == 0)
        return 0;
    /* PRAGMA takes no bound parameters; max_pages is a number we print. */
    snprintf(sql, sizeof sql, "PRAGMA incremental_vacuum(%u)", max_pages);
    rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        return sqlite_err_fail("incremental vacuum", rc, sqlite3_errmsg(s->db));
    if (sqlite_rows_count(s, ST_FREELIST_COUNT, &after) != 0)
        return SMQ_E_INTERNAL;
    *freed = before > after ? before - after : 0;
    return 0;
}

/* Appends one integrity_check row to err, "; "-separated. */
static void append_finding(char *err, size_t err_size, size_t *used, const char *finding)
{
    int n;

    if (err == NULL || *used + 1 >= err_size)
        return;
    n = snprintf(err + *used, err_size - *used, "%s%s", *used > 0 ? "; " : "", finding);
    if (n < 0 || (size_t)n >= err_size - *used) {
        sqlite_err_set(err + *used, err_size - *used, "%s%s", *used > 0 ? "; " : "", finding);
        *used = err_size - 1;    /* full: later findings are dropped */
        return;
    }
    *used += (size_t)n;
}

int sqlite_file_integrity_check(struct smq_store *base, char *err, size_t err_size)
{
    struct sqlite_store *s = sqlite_of(base);
    sqlite3_stmt *st = s->st[ST_INTEGRITY];
    const unsigned char *row;
    size_t used = 0;
    int rc, ok = 0, rows = 0;

    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        row = sqlite3_column_text(st, 0);
        /* A healthy database yields exactly one row, "ok". */
        ok = rows++ == 0 && row != NULL && strcmp((const char *)row, "ok") == 0;
        if (!ok)
            append_finding(err, err_size, &used, row != NULL ? (const char *)row : "?");
    }
    if (rc != SQLITE_DONE) {
        sqlite_err_set(err, err_size, "integrity check could not run: %s",
                       sqlite3_errmsg(s->db));
        ok = 0;
        sqlite_err_fail("integrity check", SQLITE_ERROR, sqlite3_errmsg(s->db));
    }
    sqlite3_reset(st);
    return ok ? 0 : SMQ_E_INTERNAL;
}
