/*
 * store.c — owns the SQLite database: schema and migrations, pragmas, the
 * prepared statements, transactions, and the translation of every SQLite
 * failure into SMQ_E_INTERNAL.  The only file that includes sqlite3.h.
 *
 * Durability model (style.md 1.4): the engine brackets many operations in
 * store_begin/store_commit and touches its in-memory state only after
 * store_commit returned 0.  So a failure anywhere here only has to leave the
 * transaction open for store_rollback; it never has to undo memory.
 *
 * Schema evolution (style.md 1.5): PRAGMA user_version is the schema
 * version.  migrations[v - 1] turns a version v - 1 database into version v;
 * all pending steps and the user_version bump run in one IMMEDIATE
 * transaction, so a crash mid-migration leaves the old version intact and a
 * second run does nothing.  Every on-disk change needs a new step and a bump
 * of STORE_SCHEMA_VERSION — never edit a released step.
 *
 * Start-up refuses rather than "repairs": a file that is not an SQLite
 * database, an SQLite database that is not ours, or a newer schema is
 * reported and left byte-for-byte untouched (all checks are reads that run
 * before the first pragma that could write).
 *
 * Message bodies sit in msg_body, apart from msg, so that recovery can scan
 * a million metadata rows without paging bodies in.
 */
#include "smqd/store.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "smqd/errors.h"
#include "smqd/log.h"

/* ---- statements ------------------------------------------------------- */

enum stmt_id {
    ST_BEGIN,
    ST_COMMIT,
    ST_ROLLBACK,
    ST_SAVEPOINT,
    ST_RELEASE,
    ST_ROLLBACK_TO,
    ST_META_GET,
    ST_META_SET,
    ST_QUEUE_INSERT,
    ST_QUEUE_UPDATE,
    ST_QUEUE_DELETE,
    ST_QUEUE_DELETE_MSGS,
    ST_QUEUE_DELETE_BODIES,
    ST_QUEUE_LOAD,
    ST_MSG_INSERT,
    ST_BODY_INSERT,
    ST_MSG_UPDATE,
    ST_MSG_DELETE,
    ST_BODY_DELETE,
    ST_BODY_GET,
    ST_MSG_LOAD,
    ST_MSG_MOVE,
    ST_INTEGRITY,
    ST_PAGE_COUNT,
    ST_FREELIST_COUNT,
    ST__COUNT
};

/* Column order in the SELECTs and parameter numbers in the writes are relied
 * on by the bind_* and *_from_row helpers below; keep them in step. */
static const char *const stmt_sql[ST__COUNT] = {
    [ST_BEGIN] = "BEGIN IMMEDIATE",
    [ST_COMMIT] = "COMMIT",
    [ST_ROLLBACK] = "ROLLBACK",
    /* One name is enough: SQLite resolves a repeated name to the innermost. */
    [ST_SAVEPOINT] = "SAVEPOINT op",
    [ST_RELEASE] = "RELEASE op",
    [ST_ROLLBACK_TO] = "ROLLBACK TO op",
    [ST_META_GET] = "SELECT value FROM meta WHERE key = ?1",
    [ST_META_SET] = "INSERT INTO meta(key, value) VALUES (?1, ?2) "
                    "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
    [ST_QUEUE_INSERT] = "INSERT INTO queue(id, name, create_s, modify_s, delay_s, "
                        "max_msg_size, retention_s, visibility_s, polling_wait_s, logging, "
                        "dlq_enabled, dlq_target, dlq_max_receive) "
                        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
    /* Shares bind_queue with the INSERT: ?2 (name) and ?3 (create_s) are
     * bound but unused, which SQLite allows below the highest ?N. */
    [ST_QUEUE_UPDATE] = "UPDATE queue SET modify_s = ?4, delay_s = ?5, max_msg_size = ?6, "
                        "retention_s = ?7, visibility_s = ?8, polling_wait_s = ?9, "
                        "logging = ?10, dlq_enabled = ?11, dlq_target = ?12, "
                        "dlq_max_receive = ?13 WHERE id = ?1",
    [ST_QUEUE_DELETE] = "DELETE FROM queue WHERE id = ?1",
    [ST_QUEUE_DELETE_MSGS] = "DELETE FROM msg WHERE queue_id = ?1",
    /* Must run before ST_QUEUE_DELETE_MSGS: msg names the bodies to delete. */
    [ST_QUEUE_DELETE_BODIES] = "DELETE FROM msg_body WHERE seq IN "
                               "(SELECT seq FROM msg WHERE queue_id = ?1)",
    [ST_QUEUE_LOAD] = "SELECT id, name, create_s, modify_s, delay_s, max_msg_size, "
                      "retention_s, visibility_s, polling_wait_s, logging, "
                      "dlq_enabled, dlq_target, dlq_max_receive "
                      "FROM queue ORDER BY id",
    [ST_MSG_INSERT] = "INSERT INTO msg(queue_id, seq, priority, enqueue_ms, "
                      "first_dequeue_ms, visible_ms, expire_ms, dequeue_count, handle_gen, "
                      "src_queue_id) "
                      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    /* Body statements are bound like their msg twins; ?1 (queue_id) is
     * bound but unused, since seq alone is the body's key. */
    [ST_BODY_INSERT] = "INSERT INTO msg_body(seq, body, md5) VALUES (?2, ?3, ?4)",
    /* Shares bind_msg with the INSERT; ?3, ?4 and ?7 are immutable. */
    [ST_MSG_UPDATE] = "UPDATE msg SET first_dequeue_ms = ?5, visible_ms = ?6, "
                      "dequeue_count = ?8, handle_gen = ?9 "
                      "WHERE queue_id = ?1 AND seq = ?2",
    [ST_MSG_DELETE] = "DELETE FROM msg WHERE queue_id = ?1 AND seq = ?2",
    [ST_BODY_DELETE] = "DELETE FROM msg_body WHERE seq = ?2",
    [ST_BODY_GET] = "SELECT body, md5 FROM msg_body WHERE seq = ?2",
    [ST_MSG_LOAD] = "SELECT queue_id, seq, priority, enqueue_ms, first_dequeue_ms, "
                    "visible_ms, expire_ms, dequeue_count, handle_gen, src_queue_id "
                    "FROM msg ORDER BY queue_id, seq",
    /* Re-keys the row under its new queue (a dead-letter move or a
     * redrive); shares bind_msg, ?11 is the queue it leaves.  The body row
     * is keyed by seq alone and does not move. */
    [ST_MSG_MOVE] = "UPDATE msg SET queue_id = ?1, first_dequeue_ms = ?5, visible_ms = ?6, "
                    "expire_ms = ?7, dequeue_count = ?8, handle_gen = ?9, src_queue_id = ?10 "
                    "WHERE queue_id = ?11 AND seq = ?2",
    [ST_INTEGRITY] = "PRAGMA integrity_check",
    [ST_PAGE_COUNT] = "PRAGMA page_count",
    [ST_FREELIST_COUNT] = "PRAGMA freelist_count",
};

struct smq_store {
    int lock_fd;                  /* flock'ed PATH.lock: one smqd per database */
    char *reserve_path;           /* PATH.reserve */
    uint64_t reserve_bytes;       /* 0 = no reserve */
    sqlite3 *db;
    sqlite3_stmt *st[ST__COUNT];
    unsigned fault_writes_left;   /* STORE_FAULT_OFF = no injected write fault */
    int fault_commit;             /* non-zero: the next COMMIT fails */
    int fault_full;               /* the write fault reads as SQLITE_FULL, else IOERR */
    unsigned fault_load_left;     /* rows store_msg_load delivers before failing */
    uint64_t page_size;           /* fixed once the database exists (read at open) */
};

/* ---- schema migrations ------------------------------------------------ */

/* Version 1: the initial layout.  Plain CREATE TABLE (not IF NOT EXISTS) on
 * purpose: a step only ever runs on a database below its version, and a
 * clash means the file holds something we did not put there. */
static const char schema_v1[] =
    "CREATE TABLE meta("
    " key TEXT PRIMARY KEY,"
    " value BLOB NOT NULL"
    ") WITHOUT ROWID;"
    "CREATE TABLE queue("
    " id INTEGER PRIMARY KEY,"
    " name TEXT NOT NULL UNIQUE,"
    " create_s INTEGER NOT NULL,"
    " modify_s INTEGER NOT NULL,"
    " delay_s INTEGER NOT NULL,"
    " max_msg_size INTEGER NOT NULL,"
    " retention_s INTEGER NOT NULL,"
    " visibility_s INTEGER NOT NULL,"
    " polling_wait_s INTEGER NOT NULL,"
    " logging INTEGER NOT NULL"
    ");"
    "CREATE TABLE msg("
    " queue_id INTEGER NOT NULL,"
    " seq INTEGER NOT NULL,"
    " priority INTEGER NOT NULL,"
    " enqueue_ms INTEGER NOT NULL,"
    " first_dequeue_ms INTEGER NOT NULL,"
    " visible_ms INTEGER NOT NULL,"
    " expire_ms INTEGER NOT NULL,"
    " dequeue_count INTEGER NOT NULL,"
    " handle_gen INTEGER NOT NULL,"
    " PRIMARY KEY(queue_id, seq)"
    ") WITHOUT ROWID;"
    /* A rowid table on purpose: a WITHOUT ROWID b-tree keeps at most ~1000
     * bytes of a row in its page, so every 1 KiB body would spill into an
     * overflow page of its own (4.6 KB on disk per message, measured). */
    "CREATE TABLE msg_body("
    " seq INTEGER PRIMARY KEY,"
    " body BLOB NOT NULL"
    ");";

/* Version 2: dead-letter queues.  A queue's policy, and for a message that
 * was dead-lettered the queue it came from (0 = none), so a redrive can
 * send it back. */
static const char schema_v2[] =
    "ALTER TABLE queue ADD COLUMN dlq_enabled INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE queue ADD COLUMN dlq_target TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE queue ADD COLUMN dlq_max_receive INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE msg ADD COLUMN src_queue_id INTEGER NOT NULL DEFAULT 0;";

/* Version 3: the body's MD5 (16 bytes), computed once at send, so that
 * every receive does not hash the body again.  NULL in rows written
 * before; readers compute it then. */
static const char schema_v3[] =
    "ALTER TABLE msg_body ADD COLUMN md5 BLOB;";

/* migrations[v - 1] upgrades version v - 1 to v. */
static const char *const migrations[STORE_SCHEMA_VERSION] = {
    schema_v1,
    schema_v2,
    schema_v3,
};

/* ---- error reporting -------------------------------------------------- */

/* Writes a message for the caller of store_open/store_integrity_check,
 * ending it with "..." when it had to be cut so truncation is visible. */
static void set_err(char *err, size_t err_size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t err_size, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (err == NULL || err_size == 0)
        return;
    va_start(ap, fmt);
    n = vsnprintf(err, err_size, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n >= err_size && err_size > 3)
        memcpy(err + err_size - 4, "...", 4);
}

/* The single place where a run-time SQLite failure is logged and its code
 * dies: callers above see only SMQ_E_INTERNAL.  errno is preserved so the
 * log call cannot disturb a caller that inspects it. */
static int fail(const char *what, const char *sqlite_msg)
{
    int saved = errno;

    SMQ_ERROR("store: %s failed: %s", what, sqlite_msg);
    errno = saved;
    return SMQ_E_INTERNAL;
}

/* Like fail(), but a full disk (or database) is told apart: the engine
 * reacts to it by freeing its reserve and refusing only what grows data. */
static int fail_rc(const char *what, int rc, const char *sqlite_msg)
{
    int ret = fail(what, sqlite_msg);
    return (rc & 0xff) == SQLITE_FULL ? SMQ_E_STORAGE_FULL : ret;
}

/* ---- statement helpers ------------------------------------------------ */

/* Collects the first bind error so a function can bind every parameter and
 * check once, the same idea as buf_failed(). */
struct binder {
    sqlite3_stmt *st;
    int rc;
};

static void bind_i64(struct binder *b, int idx, int64_t v)
{
    if (b->rc == SQLITE_OK)
        b->rc = sqlite3_bind_int64(b->st, idx, v);
}

static void bind_text(struct binder *b, int idx, const char *text)
{
    /* SQLITE_STATIC: every statement is stepped and reset before the
     * public function returns, so the caller's memory outlives the use. */
    if (b->rc == SQLITE_OK)
        b->rc = sqlite3_bind_text(b->st, idx, text, -1, SQLITE_STATIC);
}

static void bind_blob(struct binder *b, int idx, const void *data, size_t len)
{
    if (b->rc != SQLITE_OK)
        return;
    /* A NULL pointer would bind SQL NULL and trip NOT NULL; an empty value
     * must be an empty blob. */
    if (len == 0)
        b->rc = sqlite3_bind_zeroblob(b->st, idx, 0);
    else
        b->rc = sqlite3_bind_blob64(b->st, idx, data, (sqlite3_uint64)len, SQLITE_STATIC);
}

static void bind_null(struct binder *b, int idx)
{
    if (b->rc == SQLITE_OK)
        b->rc = sqlite3_bind_null(b->st, idx);
}

/* Returns the statement to its pristine state; called on every path,
 * including errors, so that the next user never sees stale bindings or a
 * statement still holding a read transaction open. */
static void stmt_reset(sqlite3_stmt *st)
{
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
}

/* True when the injected write fault is due (and consumes it). */
static int write_fault_due(struct smq_store *s)
{
    if (s->fault_writes_left == STORE_FAULT_OFF)
        return 0;
    if (s->fault_writes_left > 0) {
        s->fault_writes_left--;
        return 0;
    }
    s->fault_writes_left = STORE_FAULT_OFF;
    return 1;
}

/*
 * Runs a bound write statement to completion and releases it.  *changes, if
 * not NULL, receives the number of rows it touched.  A write is counted by
 * the fault seam only once its bindings succeeded, as a real write would be.
 */
static int run_write(struct smq_store *s, struct binder *b, const char *what, int *changes)
{
    int rc = b->rc, ret = 0;

    if (rc == SQLITE_OK && write_fault_due(s)) {
        ret = s->fault_full ? fail_rc(what, SQLITE_FULL, "database or disk is full (injected)")
                            : fail_rc(what, SQLITE_IOERR, "disk I/O error (injected)");
        goto out;
    }
    if (rc == SQLITE_OK)
        rc = sqlite3_step(b->st);
    if (rc != SQLITE_DONE) {
        ret = fail_rc(what, rc, sqlite3_errmsg(s->db));
        goto out;
    }
    if (changes != NULL)
        *changes = sqlite3_changes(s->db);
out:
    stmt_reset(b->st);
    return ret;
}

/* Runs one of the parameterless transaction-control statements. */
static int run_control(struct smq_store *s, enum stmt_id id, const char *what)
{
    /* Not run_write: control statements are not writes for the fault seam. */
    int rc = sqlite3_step(s->st[id]);
    int ret = rc == SQLITE_DONE ? 0 : fail_rc(what, rc, sqlite3_errmsg(s->db));

    stmt_reset(s->st[id]);
    return ret;
}

/* ---- opening ---------------------------------------------------------- */

/* Runs a query expected to return one row and copies its first column as
 * text (empty if NULL).  Returns the SQLite code; errmsg is left on db. */
static int query_text(sqlite3 *db, const char *sql, char *out, size_t out_size)
{
    sqlite3_stmt *st = NULL;
    const unsigned char *text;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);

    if (rc != SQLITE_OK)
        return rc;
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        text = sqlite3_column_text(st, 0);
        snprintf(out, out_size, "%s", text != NULL ? (const char *)text : "");
        rc = SQLITE_OK;
    } else if (rc == SQLITE_DONE) {
        rc = SQLITE_ERROR;    /* a pragma that returns no row is unexpected */
    }
    sqlite3_finalize(st);
    return rc;
}

static int query_int(sqlite3 *db, const char *sql, long long *out)
{
    char text[32];
    int rc = query_text(db, sql, text, sizeof text);

    if (rc == SQLITE_OK)
        *out = strtoll(text, NULL, 10);
    return rc;
}

static int check_version(long long version, const char *path, char *err, size_t err_size)
{
    if (version > STORE_SCHEMA_VERSION) {
        set_err(err, err_size,
                "%s: database schema version %lld is newer than this smqd supports (%d); "
                "refusing to open", path, version, STORE_SCHEMA_VERSION);
        return -1;
    }
    if (version < 0) {
        set_err(err, err_size, "%s: database schema version %lld is invalid; refusing to open",
                path, version);
        return -1;
    }
    return 0;
}

/*
 * The read-only gate before anything may write to the file.  Reading
 * user_version makes SQLite parse the header, which is where a non-database
 * file is detected (SQLITE_NOTADB).  A version-0 file that already has
 * tables belongs to someone else; adopting it would mix our tables in.
 */
static int preflight(sqlite3 *db, const char *path, char *err, size_t err_size)
{
    long long version, tables;
    int rc = query_int(db, "PRAGMA user_version", &version);

    if (rc == SQLITE_NOTADB) {
        set_err(err, err_size, "%s is not an SQLite database (%s); refusing to open", path,
                sqlite3_errmsg(db));
        return -1;
    }
    if (rc == SQLITE_OK)
        rc = query_int(db, "SELECT count(*) FROM sqlite_schema", &tables);
    if (rc != SQLITE_OK) {
        set_err(err, err_size, "cannot read %s: %s", path, sqlite3_errmsg(db));
        return -1;
    }
    if (check_version(version, path, err, err_size) != 0)
        return -1;
    if (version == 0 && tables > 0) {
        set_err(err, err_size,
                "%s is an SQLite database but not an smqd one (schema version 0 with %lld "
                "existing tables); refusing to open", path, tables);
        return -1;
    }
    return 0;
}

static int exec_pragma(sqlite3 *db, const char *sql, const char *path, char *err,
                       size_t err_size)
{
    if (sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK)
        return 0;
    set_err(err, err_size, "%s: \"%s\" failed: %s", path, sql, sqlite3_errmsg(db));
    return -1;
}

/*
 * Connection settings.  journal_mode is checked because SQLite silently
 * keeps the old mode when it cannot switch (e.g. on a file system without
 * shared memory), and our crash story assumes WAL.  wal_autocheckpoint is
 * left at SQLite's default (1000 pages); journal_size_limit truncates the
 * WAL back to 16 MiB after a checkpoint, so a burst does not hold disk
 * space for ever.
 */
static int set_pragmas(sqlite3 *db, enum smq_sync_mode sync, const char *path, char *err,
                       size_t err_size)
{
    char mode[16];
    int rc;

    if (sqlite3_busy_timeout(db, 5000) != SQLITE_OK) {
        set_err(err, err_size, "%s: cannot set busy timeout: %s", path, sqlite3_errmsg(db));
        return -1;
    }
    rc = query_text(db, "PRAGMA journal_mode=WAL", mode, sizeof mode);
    if (rc != SQLITE_OK) {
        set_err(err, err_size, "%s: cannot enable WAL: %s", path, sqlite3_errmsg(db));
        return -1;
    }
    if (strcmp(mode, "wal") != 0) {
        set_err(err, err_size, "%s: journal mode is \"%s\", not \"wal\"; refusing to run",
                path, mode);
        return -1;
    }
    /* NORMAL in WAL mode survives a crash of the process; only FULL also
     * survives power loss (conf/smqd.conf states the same). */
    if (exec_pragma(db, sync == SMQ_SYNC_NORMAL ? "PRAGMA synchronous=NORMAL"
                                                : "PRAGMA synchronous=FULL",
                    path, err, err_size) != 0)
        return -1;
    if (exec_pragma(db, "PRAGMA foreign_keys=OFF", path, err, err_size) != 0 ||
        exec_pragma(db, "PRAGMA cache_size=-65536", path, err, err_size) != 0 ||
        exec_pragma(db, "PRAGMA temp_store=MEMORY", path, err, err_size) != 0 ||
        exec_pragma(db, "PRAGMA journal_size_limit=16777216", path, err, err_size) != 0)
        return -1;
    return 0;
}

/* Applies every step above the current version plus the user_version bump
 * in the caller's transaction.  The version is re-read inside it because
 * it is the transaction that makes the read authoritative. */
static int apply_migrations(sqlite3 *db, const char *path, char *err, size_t err_size)
{
    char sql[64];
    long long version;
    int rc = query_int(db, "PRAGMA user_version", &version);

    if (rc != SQLITE_OK) {
        set_err(err, err_size, "cannot read %s: %s", path, sqlite3_errmsg(db));
        return -1;
    }
    if (check_version(version, path, err, err_size) != 0)
        return -1;
    for (long long v = version + 1; v <= STORE_SCHEMA_VERSION; v++) {
        if (sqlite3_exec(db, migrations[v - 1], NULL, NULL, NULL) != SQLITE_OK) {
            set_err(err, err_size, "%s: migration to schema version %lld failed: %s", path,
                    v, sqlite3_errmsg(db));
            return -1;
        }
    }
    if (version == STORE_SCHEMA_VERSION)
        return 0;
    /* PRAGMA takes no bound parameters; the value is our own constant. */
    snprintf(sql, sizeof sql, "PRAGMA user_version=%d", STORE_SCHEMA_VERSION);
    return exec_pragma(db, sql, path, err, err_size);
}

static int migrate(sqlite3 *db, const char *path, char *err, size_t err_size)
{
    if (exec_pragma(db, "BEGIN IMMEDIATE", path, err, err_size) != 0)
        return -1;
    if (apply_migrations(db, path, err, err_size) != 0 ||
        exec_pragma(db, "COMMIT", path, err, err_size) != 0) {
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        return -1;
    }
    return 0;
}

/*
 * Disk reclamation needs auto_vacuum=INCREMENTAL: with it, pages freed by
 * deletes can be handed back to the file system a few at a time
 * (store_reclaim) instead of by a blocking full VACUUM.  The mode can only
 * be chosen before the first table exists, so a new database gets it
 * before its schema; a database from before schema version 2 is converted
 * once by a VACUUM (which rewrites the file and needs as much free space
 * again).  If that conversion fails smqd runs on without reclamation.
 */
static int choose_auto_vacuum(sqlite3 *db, const char *path, long long *version, char *err,
                              size_t err_size)
{
    if (query_int(db, "PRAGMA user_version", version) != SQLITE_OK) {
        set_err(err, err_size, "cannot read %s: %s", path, sqlite3_errmsg(db));
        return -1;
    }
    if (*version != 0)
        return 0;
    return exec_pragma(db, "PRAGMA auto_vacuum=INCREMENTAL", path, err, err_size);
}

static void convert_auto_vacuum(sqlite3 *db, const char *path)
{
    long long mode;

    if (query_int(db, "PRAGMA auto_vacuum", &mode) != SQLITE_OK || mode == 2)
        return;
    SMQ_INFO("store: %s: converting to incremental auto-vacuum (a one-time VACUUM when "
             "upgrading from schema version 1)", path);
    if (sqlite3_exec(db, "PRAGMA auto_vacuum=INCREMENTAL; VACUUM", NULL, NULL, NULL) != SQLITE_OK)
        SMQ_WARN("store: %s: VACUUM failed (%s); freed space will not be returned to the "
                 "file system", path, sqlite3_errmsg(db));
}

static int prepare_all(struct smq_store *s, const char *path, char *err, size_t err_size)
{
    for (int i = 0; i < ST__COUNT; i++) {
        /* PERSISTENT: these live for the whole process, so let SQLite put
         * them in long-lived memory rather than its lookaside slots. */
        if (sqlite3_prepare_v3(s->db, stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &s->st[i],
                               NULL) != SQLITE_OK) {
            set_err(err, err_size, "%s: cannot prepare statement %d: %s", path, i,
                    sqlite3_errmsg(s->db));
            return -1;
        }
    }
    return 0;
}

static int read_page_size(struct smq_store *s, const char *path, char *err, size_t err_size)
{
    long long page_size = 0;

    if (query_int(s->db, "PRAGMA page_size", &page_size) != SQLITE_OK) {
        set_err(err, err_size, "%s: cannot read the page size: %s", path, sqlite3_errmsg(s->db));
        return -1;
    }
    s->page_size = (uint64_t)page_size;
    return 0;
}

static void finalize_all(struct smq_store *s)
{
    for (int i = 0; i < ST__COUNT; i++) {
        sqlite3_finalize(s->st[i]);   /* NULL is a harmless no-op */
        s->st[i] = NULL;
    }
}

/* The directory part of path, with its final slash ("." when there is
 * none): 0, or -1 when out is too small. */
static int dir_of(const char *path, char *out, size_t size)
{
    const char *slash = strrchr(path, '/');
    int n = slash == NULL ? snprintf(out, size, ".")
                          : snprintf(out, size, "%.*s", (int)(slash - path + 1), path);

    return n >= 0 && (size_t)n < size ? 0 : -1;
}

/* Takes an exclusive, non-blocking flock on DB_FILE.lock so that a second
 * smqd on the same data refuses to start instead of sharing the database
 * (SQLite would allow it, and two engines would each believe they own every
 * message).  DB_FILE is the name SQLite opened, symbolic links resolved, so
 * every name of one database (a link to it or to its directory) meets the
 * same lock, as it meets the same WAL.  The kernel drops the lock when the
 * process dies, even by kill -9.  PATH, as configured, is for messages. */
static int lock_data(const char *path, const char *db_file, char *err, size_t err_size)
{
    char lock_path[PATH_MAX + 8], pid[24];
    int fd, n;

    if (snprintf(lock_path, sizeof lock_path, "%s.lock", db_file) >= (int)sizeof lock_path) {
        set_err(err, err_size, "%s: path too long", path);
        return -1;
    }
    fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        set_err(err, err_size, "cannot open lock file %s: %s", lock_path, strerror(errno));
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        ssize_t got = pread(fd, pid, sizeof pid - 1, 0);
        pid[got > 0 ? got : 0] = '\0';
        pid[strcspn(pid, "\n")] = '\0';
        if (e == EWOULDBLOCK)
            set_err(err, err_size, "%s is in use by another smqd process (pid %s holds %s)",
                    path, pid[0] ? pid : "?", lock_path);
        else
            set_err(err, err_size, "cannot lock %s: %s", lock_path, strerror(e));
        close(fd);
        return -1;
    }
    n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)n, 0) != n)
        { /* the pid is only informational */ }
    return fd;
}

int store_open(const char *path, enum smq_sync_mode sync, struct smq_store **out,
               char *err, size_t err_size)
{
    /* NOMUTEX: one owner thread, so SQLite's own locking is pure cost. */
    const int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    struct smq_store *s;
    long long version = 0;

    *out = NULL;
    s = calloc(1, sizeof *s);
    if (s == NULL) {
        set_err(err, err_size, "%s: out of memory", path);
        goto fail_alloc;
    }
    s->fault_writes_left = STORE_FAULT_OFF;
    s->fault_load_left = STORE_FAULT_OFF;
    /* Even a failed open can hand back a handle that must be closed.  An
     * open reads nothing yet: the lock is taken before anything is. */
    if (sqlite3_open_v2(path, &s->db, flags, NULL) != SQLITE_OK) {
        set_err(err, err_size, "cannot open %s: %s", path,
                s->db != NULL ? sqlite3_errmsg(s->db) : "out of memory");
        goto fail_open;
    }
    s->lock_fd = lock_data(path, sqlite3_db_filename(s->db, "main"), err, err_size);
    if (s->lock_fd < 0)
        goto fail_open;
    /* SQLite falls back to read-only, silently, when the file is not
     * writable for this user; every write would then fail at run time. */
    if (sqlite3_db_readonly(s->db, "main") == 1) {
        set_err(err, err_size, "%s: the database file is not writable by this user "
                "(check its owner and mode)", path);
        goto fail_db;
    }
    if (preflight(s->db, path, err, err_size) != 0 ||
        choose_auto_vacuum(s->db, path, &version, err, err_size) != 0 ||
        set_pragmas(s->db, sync, path, err, err_size) != 0 ||
        migrate(s->db, path, err, err_size) != 0)
        goto fail_db;
    /* Only on the upgrade itself: a failed conversion is not retried (and
     * the file rewritten) at every start. */
    if (version == 1)
        convert_auto_vacuum(s->db, path);
    if (prepare_all(s, path, err, err_size) != 0 || read_page_size(s, path, err, err_size) != 0)
        goto fail_stmts;
    *out = s;
    return 0;

fail_stmts:
    finalize_all(s);
fail_db:
    close(s->lock_fd);
fail_open:
    sqlite3_close(s->db);   /* NULL is a harmless no-op */
    free(s);
fail_alloc:
    return SMQ_E_INTERNAL;
}

void store_close(struct smq_store *s)
{
    if (s == NULL)
        return;
    finalize_all(s);
    /* With every statement finalized this can only fail on misuse; the
     * last close also checkpoints and removes the -wal file. */
    if (sqlite3_close(s->db) != SQLITE_OK)
        fail("close", sqlite3_errmsg(s->db));
    close(s->lock_fd);          /* releases the flock */
    free(s->reserve_path);
    free(s);
}

void store_fault_inject_load(struct smq_store *s, unsigned after_n_rows)
{
    s->fault_load_left = after_n_rows;
}

void store_fault_inject_full(struct smq_store *s, unsigned after_n_writes)
{
    s->fault_writes_left = after_n_writes;
    s->fault_full = 1;
}

const char *store_wal_path(const struct smq_store *s)
{
    return sqlite3_filename_wal(sqlite3_db_filename(s->db, "main"));
}

void store_no_checkpoint_on_close(struct smq_store *s)
{
    if (sqlite3_db_config(s->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL) != SQLITE_OK)
        fail("no checkpoint on close", sqlite3_errmsg(s->db));
}

int store_defer_fsync(struct smq_store *s)
{
    /* In WAL mode NORMAL still syncs around checkpoints, so the database
     * stays consistent through a power loss; only the latest commits are
     * not yet durable until the caller's flush. */
    if (sqlite3_exec(s->db, "PRAGMA synchronous=NORMAL", NULL, NULL, NULL) == SQLITE_OK)
        return 0;
    return fail("synchronous=NORMAL", sqlite3_errmsg(s->db));
}

int store_checkpoint(struct smq_store *s)
{
    int log_frames = 0, done = 0;
    /* TRUNCATE: copy the WAL into the database and cut the WAL file to zero
     * bytes, giving its space back to the file system. */
    int rc = sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, &log_frames, &done);

    if (rc == SQLITE_OK)
        return 0;
    return fail_rc("checkpoint", rc, sqlite3_errmsg(s->db));
}

/* ---- disk-space reserve ------------------------------------------------ */

int store_reserve_init(struct smq_store *s, const char *db_path, uint64_t bytes)
{
    size_t n = strlen(db_path) + sizeof ".reserve";

    free(s->reserve_path);
    s->reserve_path = malloc(n);
    if (s->reserve_path == NULL)
        return SMQ_E_NOMEM;
    snprintf(s->reserve_path, n, "%s.reserve", db_path);
    s->reserve_bytes = bytes;
    if (bytes == 0) {
        unlink(s->reserve_path);     /* a reserve left by an earlier config */
        return 0;
    }
    return store_reserve_restore(s, 0);
}

/* Free bytes on the file system of the directory holding path (the file
 * itself may not exist); UINT64_MAX if unknown. */
static uint64_t free_bytes(const char *path)
{
    struct statvfs st;
    char dir[PATH_MAX];

    if (dir_of(path, dir, sizeof dir) != 0 || statvfs(dir, &st) != 0)
        return UINT64_MAX;
    return (uint64_t)st.f_bavail * st.f_frsize;
}

int store_reserve_restore(struct smq_store *s, uint64_t keep_free)
{
    struct stat st;
    int fd, rc;

    if (s->reserve_path == NULL || s->reserve_bytes == 0)
        return 0;
    if (stat(s->reserve_path, &st) == 0 && (uint64_t)st.st_blocks * 512 >= s->reserve_bytes)
        return 0;                    /* already held */
    if (free_bytes(s->reserve_path) < s->reserve_bytes + keep_free)
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

void store_reserve_release(struct smq_store *s)
{
    if (s->reserve_path != NULL && s->reserve_bytes > 0 && unlink(s->reserve_path) == 0)
        SMQ_WARN("store: released the %llu-byte disk reserve %s",
                 (unsigned long long)s->reserve_bytes, s->reserve_path);
}

/* ---- transactions ----------------------------------------------------- */

int store_begin(struct smq_store *s)
{
    /* IMMEDIATE takes the write lock now, so a busy database shows up
     * here (after busy_timeout) rather than halfway through the writes. */
    return run_control(s, ST_BEGIN, "BEGIN");
}

int store_commit(struct smq_store *s)
{
    if (s->fault_commit) {
        s->fault_commit = 0;
        return fail("COMMIT", "disk I/O error (injected)");
    }
    return run_control(s, ST_COMMIT, "COMMIT");
}

void store_rollback(struct smq_store *s)
{
    /* After some errors (SQLITE_FULL, IOERR, NOMEM) SQLite has already
     * rolled back by itself; ROLLBACK would then only complain. */
    if (sqlite3_get_autocommit(s->db))
        return;
    run_control(s, ST_ROLLBACK, "ROLLBACK");
}

int store_savepoint(struct smq_store *s)
{
    return run_control(s, ST_SAVEPOINT, "SAVEPOINT");
}

int store_release(struct smq_store *s)
{
    return run_control(s, ST_RELEASE, "RELEASE");
}

void store_rollback_to(struct smq_store *s)
{
    if (sqlite3_get_autocommit(s->db))
        return;   /* SQLite already dropped the whole transaction */
    /* ROLLBACK TO undoes the writes but leaves the savepoint open; RELEASE
     * closes it so savepoints do not pile up over a long batch. */
    if (run_control(s, ST_ROLLBACK_TO, "ROLLBACK TO") == 0)
        run_control(s, ST_RELEASE, "RELEASE");
}

int store_in_txn(struct smq_store *s)
{
    return !sqlite3_get_autocommit(s->db);
}

void store_fault_inject(struct smq_store *s, unsigned after_n_writes, int fail_commit)
{
    s->fault_writes_left = after_n_writes;
    s->fault_commit = fail_commit;
    s->fault_full = 0;
}

/* ---- meta ------------------------------------------------------------- */

int store_meta_get(struct smq_store *s, const char *key, struct smq_buf *out, int *found)
{
    struct binder b = {s->st[ST_META_GET], SQLITE_OK};
    const void *value;
    int n, rc, ret = 0;

    *found = 0;
    bind_text(&b, 1, key);
    rc = b.rc == SQLITE_OK ? sqlite3_step(b.st) : b.rc;
    if (rc == SQLITE_ROW) {
        value = sqlite3_column_blob(b.st, 0);
        n = sqlite3_column_bytes(b.st, 0);
        if (value == NULL && n > 0) {
            ret = SMQ_E_NOMEM;   /* SQLite could not allocate the copy */
            goto out;
        }
        buf_append(out, value, (size_t)n);
        ret = buf_failed(out) ? SMQ_E_NOMEM : 0;
        *found = ret == 0;
    } else if (rc != SQLITE_DONE) {
        ret = fail("meta get", sqlite3_errmsg(s->db));
    }
out:
    stmt_reset(b.st);
    return ret;
}

int store_meta_set(struct smq_store *s, const char *key, const void *value, size_t len)
{
    struct binder b = {s->st[ST_META_SET], SQLITE_OK};

    bind_text(&b, 1, key);
    bind_blob(&b, 2, value, len);
    return run_write(s, &b, "meta set", NULL);
}

/* ---- queues ----------------------------------------------------------- */

/* Binds all thirteen queue columns as ?1..?13 in table order. */
static void bind_queue(struct binder *b, const struct store_queue_rec *q)
{
    bind_i64(b, 1, q->id);
    bind_text(b, 2, q->name);
    bind_i64(b, 3, q->create_s);
    bind_i64(b, 4, q->modify_s);
    bind_i64(b, 5, q->delay_s);
    bind_i64(b, 6, q->max_msg_size);
    bind_i64(b, 7, q->retention_s);
    bind_i64(b, 8, q->visibility_s);
    bind_i64(b, 9, q->polling_wait_s);
    bind_i64(b, 10, q->logging);
    bind_i64(b, 11, q->dlq_enabled);
    bind_text(b, 12, q->dlq_target);
    bind_i64(b, 13, q->dlq_max_receive);
}

int store_queue_insert(struct smq_store *s, const struct store_queue_rec *q)
{
    struct binder b = {s->st[ST_QUEUE_INSERT], SQLITE_OK};

    /* The fixed array might hold an unterminated name; never read past it. */
    if (strnlen(q->name, sizeof q->name) > STORE_QUEUE_NAME_MAX)
        return SMQ_E_INVALID_ARGUMENT;
    bind_queue(&b, q);
    return run_write(s, &b, "queue insert", NULL);
}

int store_queue_update(struct smq_store *s, const struct store_queue_rec *q)
{
    struct binder b = {s->st[ST_QUEUE_UPDATE], SQLITE_OK};
    int changes = 0, ret;

    if (strnlen(q->name, sizeof q->name) > STORE_QUEUE_NAME_MAX)
        return SMQ_E_INVALID_ARGUMENT;
    bind_queue(&b, q);
    ret = run_write(s, &b, "queue update", &changes);
    if (ret == 0 && changes == 0)
        ret = SMQ_E_QUEUE_NOT_EXIST;
    return ret;
}

/* DELETE ... WHERE queue_id = ?1 on a table keyed (queue_id, seq): a range
 * scan over the primary-key prefix, no index needed. */
static int delete_by_queue(struct smq_store *s, enum stmt_id id, int64_t queue_id,
                           const char *what)
{
    struct binder b = {s->st[id], SQLITE_OK};

    bind_i64(&b, 1, queue_id);
    return run_write(s, &b, what, NULL);
}

int store_queue_purge(struct smq_store *s, int64_t queue_id)
{
    /* Bodies first: their statement finds them through the msg rows. */
    int ret = delete_by_queue(s, ST_QUEUE_DELETE_BODIES, queue_id, "queue delete bodies");

    if (ret == 0)
        ret = delete_by_queue(s, ST_QUEUE_DELETE_MSGS, queue_id, "queue delete msgs");
    return ret;
}

int store_queue_delete(struct smq_store *s, int64_t queue_id)
{
    int ret = store_queue_purge(s, queue_id);

    if (ret == 0)
        ret = delete_by_queue(s, ST_QUEUE_DELETE, queue_id, "queue delete");
    return ret;
}

/* Decodes a ST_QUEUE_LOAD row.  A name that does not fit can only come
 * from a damaged or foreign file; truncating it would rename the queue. */
static int queue_from_row(sqlite3_stmt *st, struct store_queue_rec *q)
{
    const unsigned char *name = sqlite3_column_text(st, 1);
    int n = sqlite3_column_bytes(st, 1);

    if (name == NULL || n > STORE_QUEUE_NAME_MAX)
        return -1;
    memset(q, 0, sizeof *q);
    q->id = sqlite3_column_int64(st, 0);
    memcpy(q->name, name, (size_t)n);
    q->create_s = sqlite3_column_int64(st, 2);
    q->modify_s = sqlite3_column_int64(st, 3);
    q->delay_s = sqlite3_column_int64(st, 4);
    q->max_msg_size = sqlite3_column_int64(st, 5);
    q->retention_s = sqlite3_column_int64(st, 6);
    q->visibility_s = sqlite3_column_int64(st, 7);
    q->polling_wait_s = sqlite3_column_int64(st, 8);
    q->logging = sqlite3_column_int(st, 9) != 0;
    q->dlq_enabled = sqlite3_column_int(st, 10) != 0;
    name = sqlite3_column_text(st, 11);
    n = sqlite3_column_bytes(st, 11);
    if (name == NULL || n > STORE_QUEUE_NAME_MAX)
        return -1;
    memcpy(q->dlq_target, name, (size_t)n);
    q->dlq_max_receive = sqlite3_column_int64(st, 12);
    return 0;
}

int store_queue_load(struct smq_store *s,
                     int (*cb)(void *arg, const struct store_queue_rec *q), void *arg)
{
    sqlite3_stmt *st = s->st[ST_QUEUE_LOAD];
    struct store_queue_rec q;
    int rc, ret = 0;

    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (queue_from_row(st, &q) != 0) {
            ret = fail("queue load", "a queue name is missing or too long");
            goto out;
        }
        ret = cb(arg, &q);
        if (ret != 0)
            goto out;
    }
    if (rc != SQLITE_DONE)
        ret = fail("queue load", sqlite3_errmsg(s->db));
out:
    stmt_reset(st);
    return ret;
}

/* ---- messages --------------------------------------------------------- */

/* seq is unsigned in memory but INTEGER (int64) on disk; values from 2^63
 * up would come back negative and break the (queue_id, seq) order. */
static int seq_ok(uint64_t seq)
{
    return seq <= (uint64_t)INT64_MAX;
}

static void bind_key(struct binder *b, int64_t queue_id, uint64_t seq)
{
    bind_i64(b, 1, queue_id);
    bind_i64(b, 2, (int64_t)seq);
}

/* Binds the first nine msg columns as ?1..?9 in table order (src_queue_id,
 * ?10, only where a statement writes it: SQLite refuses a bind past the
 * highest ?N a statement names). */
static void bind_msg(struct binder *b, const struct store_msg_rec *m)
{
    bind_key(b, m->queue_id, m->seq);
    bind_i64(b, 3, m->priority);
    bind_i64(b, 4, m->enqueue_ms);
    bind_i64(b, 5, m->first_dequeue_ms);
    bind_i64(b, 6, m->visible_ms);
    bind_i64(b, 7, m->expire_ms);
    bind_i64(b, 8, m->dequeue_count);
    bind_i64(b, 9, m->handle_gen);
}

int store_msg_insert(struct smq_store *s, const struct store_msg_rec *m,
                     const void *body, size_t body_len, const unsigned char *body_md5)
{
    struct binder meta = {s->st[ST_MSG_INSERT], SQLITE_OK};
    struct binder blob = {s->st[ST_BODY_INSERT], SQLITE_OK};
    int ret;

    if (!seq_ok(m->seq))
        return SMQ_E_INVALID_ARGUMENT;
    bind_msg(&meta, m);
    bind_i64(&meta, 10, m->src_queue_id);
    ret = run_write(s, &meta, "msg insert", NULL);
    if (ret != 0)
        return ret;
    bind_key(&blob, m->queue_id, m->seq);
    bind_blob(&blob, 3, body, body_len);
    if (body_md5 != NULL)
        bind_blob(&blob, 4, body_md5, MNS_MD5_LEN);
    else
        bind_null(&blob, 4);
    return run_write(s, &blob, "msg body insert", NULL);
}

int store_msg_update(struct smq_store *s, const struct store_msg_rec *m)
{
    struct binder b = {s->st[ST_MSG_UPDATE], SQLITE_OK};
    int changes = 0, ret;

    if (!seq_ok(m->seq))
        return SMQ_E_MESSAGE_NOT_EXIST;
    bind_msg(&b, m);
    ret = run_write(s, &b, "msg update", &changes);
    if (ret == 0 && changes == 0)
        ret = SMQ_E_MESSAGE_NOT_EXIST;
    return ret;
}

int store_msg_move(struct smq_store *s, int64_t from_queue_id, const struct store_msg_rec *m)
{
    struct binder b = {s->st[ST_MSG_MOVE], SQLITE_OK};
    int changes = 0, ret;

    if (!seq_ok(m->seq))
        return SMQ_E_MESSAGE_NOT_EXIST;
    bind_msg(&b, m);
    bind_i64(&b, 10, m->src_queue_id);
    bind_i64(&b, 11, from_queue_id);
    ret = run_write(s, &b, "msg move", &changes);
    if (ret == 0 && changes == 0)
        ret = SMQ_E_MESSAGE_NOT_EXIST;
    return ret;
}

static int delete_by_key(struct smq_store *s, enum stmt_id id, int64_t queue_id, uint64_t seq,
                         const char *what)
{
    struct binder b = {s->st[id], SQLITE_OK};

    bind_key(&b, queue_id, seq);
    return run_write(s, &b, what, NULL);
}

int store_msg_delete(struct smq_store *s, int64_t queue_id, uint64_t seq)
{
    int ret;

    if (!seq_ok(seq))
        return 0;   /* could never have been stored, so it is already gone */
    ret = delete_by_key(s, ST_MSG_DELETE, queue_id, seq, "msg delete");
    if (ret == 0)
        ret = delete_by_key(s, ST_BODY_DELETE, queue_id, seq, "msg body delete");
    return ret;
}

/* The md5 column of a ST_BODY_GET row: a 16-byte blob, or nothing (NULL in
 * rows from before schema 3; any other type or length is treated the same
 * way, so a damaged value costs a recomputation instead of an answer
 * whose MD5 does not match its body). */
static void column_md5(sqlite3_stmt *st, int col, struct mns_body_md5 *md5)
{
    const void *p = sqlite3_column_type(st, col) == SQLITE_BLOB ? sqlite3_column_blob(st, col)
                                                                : NULL;

    md5->present = p != NULL && sqlite3_column_bytes(st, col) == MNS_MD5_LEN;
    if (md5->present)
        memcpy(md5->bytes, p, MNS_MD5_LEN);
}

int store_msg_body(struct smq_store *s, int64_t queue_id, uint64_t seq, struct smq_buf *out,
                   struct mns_body_md5 *md5)
{
    struct binder b = {s->st[ST_BODY_GET], SQLITE_OK};
    const void *body;
    int n, rc, ret = 0;

    if (md5 != NULL)
        md5->present = false;
    if (!seq_ok(seq))
        return SMQ_E_MESSAGE_NOT_EXIST;
    bind_key(&b, queue_id, seq);
    rc = b.rc == SQLITE_OK ? sqlite3_step(b.st) : b.rc;
    if (rc == SQLITE_ROW) {
        body = sqlite3_column_blob(b.st, 0);
        n = sqlite3_column_bytes(b.st, 0);
        if (body == NULL && n > 0) {
            ret = SMQ_E_NOMEM;   /* SQLite could not allocate the copy */
            goto out;
        }
        buf_append(out, body, (size_t)n);
        ret = buf_failed(out) ? SMQ_E_NOMEM : 0;
        if (md5 != NULL)
            column_md5(b.st, 1, md5);
    } else if (rc == SQLITE_DONE) {
        ret = SMQ_E_MESSAGE_NOT_EXIST;
    } else {
        ret = fail("msg body", sqlite3_errmsg(s->db));
    }
out:
    stmt_reset(b.st);
    return ret;
}

static void msg_from_row(sqlite3_stmt *st, struct store_msg_rec *m)
{
    m->queue_id = sqlite3_column_int64(st, 0);
    m->seq = (uint64_t)sqlite3_column_int64(st, 1);
    m->priority = sqlite3_column_int(st, 2);
    m->enqueue_ms = sqlite3_column_int64(st, 3);
    m->first_dequeue_ms = sqlite3_column_int64(st, 4);
    m->visible_ms = sqlite3_column_int64(st, 5);
    m->expire_ms = sqlite3_column_int64(st, 6);
    m->dequeue_count = (uint32_t)sqlite3_column_int64(st, 7);
    m->handle_gen = (uint32_t)sqlite3_column_int64(st, 8);
    m->src_queue_id = sqlite3_column_int64(st, 9);
}

int store_msg_load(struct smq_store *s,
                   int (*cb)(void *arg, const struct store_msg_rec *m), void *arg)
{
    sqlite3_stmt *st = s->st[ST_MSG_LOAD];
    struct store_msg_rec m;
    int rc, ret = 0;

    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (s->fault_load_left != STORE_FAULT_OFF && s->fault_load_left-- == 0) {
            s->fault_load_left = STORE_FAULT_OFF;
            ret = fail("msg load", "disk I/O error (injected)");
            goto out;
        }
        msg_from_row(st, &m);
        ret = cb(arg, &m);
        if (ret != 0)
            goto out;
    }
    if (rc != SQLITE_DONE)
        ret = fail("msg load", sqlite3_errmsg(s->db));
out:
    stmt_reset(st);
    return ret;
}

/* ---- maintenance ------------------------------------------------------ */

static int pragma_count(struct smq_store *s, enum stmt_id id, uint64_t *out)
{
    sqlite3_stmt *st = s->st[id];
    int rc = sqlite3_step(st), ret = 0;

    if (rc == SQLITE_ROW)
        *out = (uint64_t)sqlite3_column_int64(st, 0);
    else
        ret = fail("page count", sqlite3_errmsg(s->db));
    stmt_reset(st);
    return ret;
}

int store_file_stats(struct smq_store *s, struct store_file_stats *out)
{
    memset(out, 0, sizeof *out);
    out->page_size = s->page_size;
    if (pragma_count(s, ST_PAGE_COUNT, &out->pages) != 0 ||
        pragma_count(s, ST_FREELIST_COUNT, &out->free_pages) != 0)
        return SMQ_E_INTERNAL;
    return 0;
}

int store_reclaim(struct smq_store *s, unsigned max_pages, uint64_t *freed)
{
    uint64_t before, after;
    char sql[64];
    int rc;

    *freed = 0;
    if (store_in_txn(s) || pragma_count(s, ST_FREELIST_COUNT, &before) != 0)
        return SMQ_E_INTERNAL;
    if (before == 0)
        return 0;
    /* PRAGMA takes no bound parameters; max_pages is a number we print. */
    snprintf(sql, sizeof sql, "PRAGMA incremental_vacuum(%u)", max_pages);
    rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        return fail_rc("incremental vacuum", rc, sqlite3_errmsg(s->db));
    if (pragma_count(s, ST_FREELIST_COUNT, &after) != 0)
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
        set_err(err + *used, err_size - *used, "%s%s", *used > 0 ? "; " : "", finding);
        *used = err_size - 1;    /* full: later findings are dropped */
        return;
    }
    *used += (size_t)n;
}

int store_integrity_check(struct smq_store *s, char *err, size_t err_size)
{
    sqlite3_stmt *st = s->st[ST_INTEGRITY];
    const unsigned char *row;
    size_t used = 0;
    int rc, ok = 0, rows = 0;

    if (err != NULL && err_size > 0)
        err[0] = '\0';
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        row = sqlite3_column_text(st, 0);
        /* A healthy database yields exactly one row, "ok". */
        ok = rows++ == 0 && row != NULL && strcmp((const char *)row, "ok") == 0;
        if (!ok)
            append_finding(err, err_size, &used, row != NULL ? (const char *)row : "?");
    }
    if (rc != SQLITE_DONE) {
        set_err(err, err_size, "integrity check could not run: %s", sqlite3_errmsg(s->db));
        ok = 0;
        fail("integrity check", sqlite3_errmsg(s->db));
    }
    stmt_reset(st);
    return ok ? 0 : SMQ_E_INTERNAL;
}
