/*
 * sqlite_store.c — owns the SQLite backend (sqlite_store.h): its table of
 * operations, opening a database (the lock that keeps a second smqd away,
 * the connection's settings, the schema and its migrations) and closing it.
 * The backend's files are the only ones in the daemon that include
 * sqlite3.h.
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
 */
#include "sqlite_store.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "smqd/errors.h"
#include "smqd/log.h"

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
     * overflow page of its own, several times the body's size on disk. */
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

/* Version 4: a message's extensions (the Java SDK's properties and group
 * id) as the XML fragment receives return; NULL for a message without. */
static const char schema_v4[] =
    "ALTER TABLE msg_body ADD COLUMN ext BLOB;";

/* Version 5: topics (docs/protocol.md §13): topics, their subscriptions
 * (UNIQUE per topic), the published messages kept for pending
 * notifications (metadata apart from bodies, as for msg) and the
 * notifications, one per (subscription, message).  New tables only, so a
 * database from before keeps every row it had. */
static const char schema_v5[] =
    "CREATE TABLE topic("
    " id INTEGER PRIMARY KEY,"
    " name TEXT NOT NULL UNIQUE,"
    " create_s INTEGER NOT NULL,"
    " modify_s INTEGER NOT NULL,"
    " max_msg_size INTEGER NOT NULL,"
    " logging INTEGER NOT NULL"
    ");"
    "CREATE TABLE subscription("
    " id INTEGER PRIMARY KEY,"
    " topic_id INTEGER NOT NULL,"
    " name TEXT NOT NULL,"
    " endpoint TEXT NOT NULL,"
    " filter_tag TEXT NOT NULL,"
    " strategy INTEGER NOT NULL,"
    " format INTEGER NOT NULL,"
    " dlq_enabled INTEGER NOT NULL,"
    " dlq_target TEXT NOT NULL,"
    " create_s INTEGER NOT NULL,"
    " modify_s INTEGER NOT NULL,"
    " UNIQUE(topic_id, name)"
    ");"
    "CREATE TABLE tmsg("
    " seq INTEGER PRIMARY KEY,"
    " topic_id INTEGER NOT NULL,"
    " publish_ms INTEGER NOT NULL,"
    " tag TEXT NOT NULL,"
    " md5 BLOB NOT NULL,"
    " body_len INTEGER NOT NULL"
    ");"
    /* A topic's delete finds its messages by it. */
    "CREATE INDEX tmsg_topic ON tmsg(topic_id);"
    "CREATE TABLE tmsg_body("
    " seq INTEGER PRIMARY KEY,"
    " body BLOB NOT NULL"
    ");"
    "CREATE TABLE notif("
    " sub_id INTEGER NOT NULL,"
    " seq INTEGER NOT NULL,"
    " attempts INTEGER NOT NULL,"
    " due_ms INTEGER NOT NULL,"
    " strategy INTEGER NOT NULL,"
    " PRIMARY KEY(sub_id, seq)"
    ") WITHOUT ROWID;";

/* Version 6: the push signing key smqd made at first start and its
 * self-signed certificate (docs/protocol.md §13.11), PEM text, at most one
 * row.  A new table only: a database from before gets a key at its next
 * start. */
static const char schema_v6[] =
    "CREATE TABLE signing_key("
    " id INTEGER PRIMARY KEY CHECK (id = 1),"
    " key_pem TEXT NOT NULL,"
    " cert_pem TEXT NOT NULL"
    ");";

/* Version 7: notif keyed by (seq, sub_id), message first.  A publish
 * writes one row per subscription of one message: under (sub_id, seq) each
 * row went to its own subscription's part of the b-tree, so a publish to
 * 1,000 subscriptions dirtied ~1,000 pages; keyed by message the rows are
 * adjacent and a publish appends a few pages.  An unsubscribe and a
 * topic's delete find their rows through the topic's published messages
 * (sqlite_topic.c).  The rows are copied as they are. */
static const char schema_v7[] =
    "CREATE TABLE notif_v7("
    " sub_id INTEGER NOT NULL,"
    " seq INTEGER NOT NULL,"
    " attempts INTEGER NOT NULL,"
    " due_ms INTEGER NOT NULL,"
    " strategy INTEGER NOT NULL,"
    " PRIMARY KEY(seq, sub_id)"
    ") WITHOUT ROWID;"
    "INSERT INTO notif_v7(sub_id, seq, attempts, due_ms, strategy)"
    " SELECT sub_id, seq, attempts, due_ms, strategy FROM notif;"
    "DROP TABLE notif;"
    "ALTER TABLE notif_v7 RENAME TO notif;";

/* migrations[v - 1] upgrades version v - 1 to v. */
static const char *const migrations[STORE_SCHEMA_VERSION] = {
    schema_v1,
    schema_v2,
    schema_v3,
    schema_v4,
    schema_v5,
    schema_v6,
    schema_v7,
};

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
        sqlite_err_set(err, err_size, "%s: database schema version %lld is newer than "
                       "this smqd supports (%d); refusing to open", path, version,
                       STORE_SCHEMA_VERSION);
        return SMQ_E_INTERNAL;
    }
    if (version < 0) {
        sqlite_err_set(err, err_size,
                       "%s: database schema version %lld is invalid; refusing to open",
                       path, version);
        return SMQ_E_INTERNAL;
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
        sqlite_err_set(err, err_size, "%s is not an SQLite database (%s); refusing to "
                       "open", path, sqlite3_errmsg(db));
        return SMQ_E_INTERNAL;
    }
    if (rc == SQLITE_OK)
        rc = query_int(db, "SELECT count(*) FROM sqlite_schema", &tables);
    if (rc != SQLITE_OK) {
        sqlite_err_set(err, err_size, "cannot read %s: %s", path, sqlite3_errmsg(db));
        return SMQ_E_INTERNAL;
    }
    if (check_version(version, path, err, err_size) != 0)
        return SMQ_E_INTERNAL;
    if (version == 0 && tables > 0) {
        sqlite_err_set(err, err_size, "%s is an SQLite database but not an smqd one "
                       "(schema version 0 with %lld existing tables); refusing to open",
                       path, tables);
        return SMQ_E_INTERNAL;
    }
    return 0;
}

static int exec_pragma(sqlite3 *db, const char *sql, const char *path, char *err,
                       size_t err_size)
{
    if (sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK)
        return 0;
    sqlite_err_set(err, err_size, "%s: \"%s\" failed: %s", path, sql, sqlite3_errmsg(db));
    return SMQ_E_INTERNAL;
}

/*
 * Connection settings.  journal_mode is checked because SQLite silently
 * keeps the old mode when it cannot switch (e.g. on a file system without
 * shared memory), and our crash story assumes WAL.  wal_autocheckpoint is
 * left at SQLite's default (1000 pages); journal_size_limit truncates the
 * WAL back to 16 MiB after a checkpoint, so a burst does not hold disk
 * space for ever.
 */
static int set_pragmas(sqlite3 *db, const char *path, char *err, size_t err_size)
{
    char mode[16];
    int rc;

    if (sqlite3_busy_timeout(db, 5000) != SQLITE_OK) {
        sqlite_err_set(err, err_size, "%s: cannot set busy timeout: %s", path,
                       sqlite3_errmsg(db));
        return SMQ_E_INTERNAL;
    }
    rc = query_text(db, "PRAGMA journal_mode=WAL", mode, sizeof mode);
    if (rc != SQLITE_OK) {
        sqlite_err_set(err, err_size, "%s: cannot enable WAL: %s", path, sqlite3_errmsg(db));
        return SMQ_E_INTERNAL;
    }
    if (strcmp(mode, "wal") != 0) {
        sqlite_err_set(err, err_size,
                       "%s: journal mode is \"%s\", not \"wal\"; refusing to run",
                       path, mode);
        return SMQ_E_INTERNAL;
    }
    /* FULL until the schema is committed (see set_sync). */
    if (exec_pragma(db, "PRAGMA synchronous=FULL", path, err, err_size) != 0)
        return SMQ_E_INTERNAL;
    if (exec_pragma(db, "PRAGMA foreign_keys=OFF", path, err, err_size) != 0 ||
        exec_pragma(db, "PRAGMA cache_size=-65536", path, err, err_size) != 0 ||
        exec_pragma(db, "PRAGMA temp_store=MEMORY", path, err, err_size) != 0 ||
        exec_pragma(db, "PRAGMA journal_size_limit=16777216", path, err, err_size) != 0)
        return SMQ_E_INTERNAL;
    return 0;
}

/* The configured durability, set once the schema is committed.  NORMAL in
 * WAL mode survives a crash of the process; only FULL also survives power
 * loss (conf/smqd.conf states the same).  The schema itself is always
 * committed under FULL: with NORMAL nothing syncs the WAL until the first
 * checkpoint, and a power cut soon after the first start would leave a
 * database file without tables. */
static int set_sync(sqlite3 *db, enum smq_sync_mode sync, const char *path, char *err,
                    size_t err_size)
{
    if (sync != SMQ_SYNC_NORMAL)
        return 0;
    return exec_pragma(db, "PRAGMA synchronous=NORMAL", path, err, err_size);
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
        sqlite_err_set(err, err_size, "cannot read %s: %s", path, sqlite3_errmsg(db));
        return SMQ_E_INTERNAL;
    }
    if (check_version(version, path, err, err_size) != 0)
        return SMQ_E_INTERNAL;
    for (long long v = version + 1; v <= STORE_SCHEMA_VERSION; v++) {
        if (sqlite3_exec(db, migrations[v - 1], NULL, NULL, NULL) != SQLITE_OK) {
            sqlite_err_set(err, err_size, "%s: migration to schema version %lld failed: %s",
                           path,
                           v, sqlite3_errmsg(db));
            return SMQ_E_INTERNAL;
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
        return SMQ_E_INTERNAL;
    if (apply_migrations(db, path, err, err_size) != 0 ||
        exec_pragma(db, "COMMIT", path, err, err_size) != 0) {
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        return SMQ_E_INTERNAL;
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
        sqlite_err_set(err, err_size, "cannot read %s: %s", path, sqlite3_errmsg(db));
        return SMQ_E_INTERNAL;
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

/* From an opened file to a database at our schema, in the configured
 * mode; *version is the schema version the file had. */
static int set_up(sqlite3 *db, enum smq_sync_mode sync, const char *path, long long *version,
                  char *err, size_t err_size)
{
    if (preflight(db, path, err, err_size) != 0 ||
        choose_auto_vacuum(db, path, version, err, err_size) != 0 ||
        set_pragmas(db, path, err, err_size) != 0 ||
        migrate(db, path, err, err_size) != 0 ||
        set_sync(db, sync, path, err, err_size) != 0)
        return SMQ_E_INTERNAL;
    return 0;
}

static int read_page_size(struct sqlite_store *s, const char *path, char *err, size_t err_size)
{
    long long page_size = 0;

    if (query_int(s->db, "PRAGMA page_size", &page_size) != SQLITE_OK) {
        sqlite_err_set(err, err_size, "%s: cannot read the page size: %s", path,
                       sqlite3_errmsg(s->db));
        return SMQ_E_INTERNAL;
    }
    s->page_size = (uint64_t)page_size;
    return 0;
}

/* The file holds every message body and the receipt-handle key: made here,
 * owner-only whatever the umask, since SQLite would create it 0644 and give
 * its -wal and -shm files the same mode.  An existing file keeps its mode
 * (exposure.h checks it at start-up). */
static void create_private(const char *path)
{
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);

    if (fd >= 0)
        close(fd);
}

/* Takes an exclusive, non-blocking flock on DB_FILE.lock so that a second
 * smqd on the same data refuses to start instead of sharing the database
 * (SQLite would allow it, and two engines would each believe they own every
 * message).  DB_FILE is the name SQLite opened, symbolic links resolved, so
 * every name of one database (a link to it or to its directory) meets the
 * same lock, as it meets the same WAL.  The kernel drops the lock when the
 * process dies, even by kill -9.  PATH, as configured, is for messages. */
static int lock_data(const char *path, const char *db_file, int *fd_out, char *err,
                     size_t err_size)
{
    char lock_path[PATH_MAX + 8], pid[24];
    int fd, n;

    if (snprintf(lock_path, sizeof lock_path, "%s.lock", db_file) >= (int)sizeof lock_path) {
        sqlite_err_set(err, err_size, "%s: path too long", path);
        return SMQ_E_INTERNAL;
    }
    fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        sqlite_err_set(err, err_size, "cannot open lock file %s: %s", lock_path,
                       strerror(errno));
        return SMQ_E_INTERNAL;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        ssize_t got = pread(fd, pid, sizeof pid - 1, 0);
        pid[got > 0 ? got : 0] = '\0';
        pid[strcspn(pid, "\n")] = '\0';
        if (e == EWOULDBLOCK)
            sqlite_err_set(err, err_size,
                           "%s is in use by another smqd process (pid %s holds %s)",
                           path, pid[0] ? pid : "?", lock_path);
        else
            sqlite_err_set(err, err_size, "cannot lock %s: %s", lock_path, strerror(e));
        close(fd);
        return SMQ_E_INTERNAL;
    }
    n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)n, 0) != n)
        { /* the pid is only informational */ }
    *fd_out = fd;
    return 0;
}

static int sqlite_open(const struct store_config *cfg, struct smq_store **out, char *err,
                       size_t err_size)
{
    const char *path = cfg->path;
    /* NOMUTEX: one owner thread, so SQLite's own locking is pure cost. */
    const int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    struct sqlite_store *s;
    long long version = 0;

    *out = NULL;
    s = calloc(1, sizeof *s);
    if (s == NULL) {
        sqlite_err_set(err, err_size, "%s: out of memory", path);
        goto fail_alloc;
    }
    s->wal_fd = -1;
    s->fault_writes_left = STORE_FAULT_OFF;
    s->fault_load_left = STORE_FAULT_OFF;
    create_private(path);
    sqlite_pcache_install();
    /* Even a failed open can hand back a handle that must be closed.  An
     * open reads nothing yet: the lock is taken before anything is. */
    if (sqlite3_open_v2(path, &s->db, flags, NULL) != SQLITE_OK) {
        sqlite_err_set(err, err_size, "cannot open %s: %s", path,
                       s->db != NULL ? sqlite3_errmsg(s->db) : "out of memory");
        goto fail_open;
    }
    if (lock_data(path, sqlite3_db_filename(s->db, "main"), &s->lock_fd, err, err_size) != 0)
        goto fail_open;
    /* SQLite falls back to read-only, silently, when the file is not
     * writable for this user; every write would then fail at run time. */
    if (sqlite3_db_readonly(s->db, "main") == 1) {
        sqlite_err_set(err, err_size, "%s: the database file is not writable by this user "
                "(check its owner and mode)", path);
        goto fail_db;
    }
    if (set_up(s->db, cfg->sync, path, &version, err, err_size) != 0)
        goto fail_db;
    /* Only on the upgrade itself: a failed conversion is not retried (and
     * the file rewritten) at every start. */
    if (version == 1)
        convert_auto_vacuum(s->db, path);
    if (sqlite_rows_prepare(s, path, err, err_size) != 0
        || sqlite_topic_prepare(s, path, err, err_size) != 0
        || read_page_size(s, path, err, err_size) != 0)
        goto fail_stmts;
    *out = &s->base;
    return 0;

fail_stmts:
    sqlite_topic_finalize(s);
    sqlite_rows_finalize(s);
fail_db:
    close(s->lock_fd);
fail_open:
    sqlite3_close(s->db);   /* NULL is a harmless no-op */
    free(s);
fail_alloc:
    return SMQ_E_INTERNAL;
}

static void sqlite_close(struct smq_store *base)
{
    struct sqlite_store *s = sqlite_of(base);

    sqlite_topic_finalize(s);
    sqlite_rows_finalize(s);
    /* With every statement finalized this can only fail on misuse; the
     * last close also checkpoints and removes the -wal file. */
    if (sqlite3_close(s->db) != SQLITE_OK)
        sqlite_err_fail("close", SQLITE_ERROR, sqlite3_errmsg(s->db));
    if (s->wal_fd >= 0)
        close(s->wal_fd);
    close(s->lock_fd);          /* releases the flock */
    free(s->reserve_path);
    free(s);
}

const struct store_backend store_sqlite_backend = {
    .name = "sqlite",
    .open = sqlite_open,
    .close = sqlite_close,
    .begin = sqlite_txn_begin,
    .commit = sqlite_txn_commit,
    .rollback = sqlite_txn_rollback,
    .savepoint = sqlite_txn_savepoint,
    .release = sqlite_txn_release,
    .rollback_to = sqlite_txn_rollback_to,
    .in_txn = sqlite_txn_in_txn,
    .defer_fsync = sqlite_file_defer_fsync,
    .flush = sqlite_file_flush,
    .meta_get = sqlite_rows_meta_get,
    .meta_set = sqlite_rows_meta_set,
    .queue_insert = sqlite_rows_queue_insert,
    .queue_update = sqlite_rows_queue_update,
    .queue_delete = sqlite_rows_queue_delete,
    .queue_purge = sqlite_rows_queue_purge,
    .queue_load = sqlite_rows_queue_load,
    .msg_insert = sqlite_rows_msg_insert,
    .msg_update = sqlite_rows_msg_update,
    .msg_move = sqlite_rows_msg_move,
    .msg_delete = sqlite_rows_msg_delete,
    .msg_bodies = sqlite_rows_msg_bodies,
    .msg_load = sqlite_rows_msg_load,
    .topic_insert = sqlite_topic_insert,
    .topic_update = sqlite_topic_update,
    .topic_delete = sqlite_topic_delete,
    .topic_load = sqlite_topic_load,
    .sub_insert = sqlite_sub_insert,
    .sub_update = sqlite_sub_update,
    .sub_delete = sqlite_sub_delete,
    .sub_load = sqlite_sub_load,
    .tmsg_insert = sqlite_tmsg_insert,
    .tmsg_delete = sqlite_tmsg_delete,
    .tmsg_body = sqlite_tmsg_body,
    .tmsg_load = sqlite_tmsg_load,
    .notif_insert = sqlite_notif_insert,
    .notif_update = sqlite_notif_update,
    .notif_delete = sqlite_notif_delete,
    .notif_load = sqlite_notif_load,
    .signing_key_get = sqlite_signing_key_get,
    .signing_key_put_if_absent = sqlite_signing_key_put_if_absent,
    .reserve_init = sqlite_file_reserve_init,
    .reserve_restore = sqlite_file_reserve_restore,
    .reserve_bytes = sqlite_file_reserve_bytes,
    .reserve_release = sqlite_file_reserve_release,
    .checkpoint = sqlite_file_checkpoint,
    .wal_path = sqlite_file_wal_path,
    .no_checkpoint_on_close = sqlite_file_no_checkpoint_on_close,
    .file_stats = sqlite_file_stats,
    .reclaim = sqlite_file_reclaim,
    .integrity_check = sqlite_file_integrity_check,
    .fault_inject = sqlite_txn_fault_inject,
    .fault_inject_load = sqlite_txn_fault_inject_load,
};
