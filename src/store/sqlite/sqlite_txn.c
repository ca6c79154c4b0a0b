/*
 * sqlite_txn.c — owns the SQLite backend's transactions (sqlite_store.h):
 * BEGIN, COMMIT and ROLLBACK, savepoints, and the fault seam tests use to
 * make a write, a commit or a load fail (store.h, store_fault_inject).
 * The statements are prepared by sqlite_rows.c, whose write path asks
 * this file whether an injected fault is due; this file calls only
 * sqlite_err.c.  The same split as pg_rows.c and pg_txn.c.
 */
#include "sqlite_store.h"

#include <stdbool.h>

bool sqlite_txn_write_fault_due(struct sqlite_store *s)
{
    if (s->fault_writes_left == STORE_FAULT_OFF)
        return false;
    if (s->fault_writes_left > 0) {
        s->fault_writes_left--;
        return false;
    }
    s->fault_writes_left = STORE_FAULT_OFF;
    return true;
}

/* Runs one of the parameterless transaction-control statements. */
static int run_control(struct sqlite_store *s, enum sqlite_stmt id, const char *what)
{
    /* Not sqlite_rows_write: control statements are not writes for the fault seam. */
    int rc = sqlite3_step(s->st[id]);
    int ret = rc == SQLITE_DONE ? 0 : sqlite_err_fail(what, rc, sqlite3_errmsg(s->db));

    /* What sqlite_stmt_reset does, without calling up into sqlite_rows.c. */
    sqlite3_reset(s->st[id]);
    sqlite3_clear_bindings(s->st[id]);
    return ret;
}

int sqlite_txn_begin(struct smq_store *base)
{
    struct sqlite_store *s = sqlite_of(base);

    /* IMMEDIATE takes the write lock now, so a busy database shows up
     * here (after busy_timeout) rather than halfway through the writes. */
    return run_control(s, ST_BEGIN, "BEGIN");
}

int sqlite_txn_commit(struct smq_store *base)
{
    struct sqlite_store *s = sqlite_of(base);

    if (s->fault_commit) {
        s->fault_commit = 0;
        return sqlite_err_fail("COMMIT", SQLITE_ERROR, "disk I/O error (injected)");
    }
    return run_control(s, ST_COMMIT, "COMMIT");
}

void sqlite_txn_rollback(struct smq_store *base)
{
    struct sqlite_store *s = sqlite_of(base);

    /* After some errors (SQLITE_FULL, IOERR, NOMEM) SQLite has already
     * rolled back by itself; ROLLBACK would then only complain. */
    if (sqlite3_get_autocommit(s->db))
        return;
    run_control(s, ST_ROLLBACK, "ROLLBACK");
}

int sqlite_txn_savepoint(struct smq_store *base)
{
    struct sqlite_store *s = sqlite_of(base);

    return run_control(s, ST_SAVEPOINT, "SAVEPOINT");
}

int sqlite_txn_release(struct smq_store *base)
{
    struct sqlite_store *s = sqlite_of(base);

    return run_control(s, ST_RELEASE, "RELEASE");
}

void sqlite_txn_rollback_to(struct smq_store *base)
{
    struct sqlite_store *s = sqlite_of(base);

    if (sqlite3_get_autocommit(s->db))
        return;   /* SQLite already dropped the whole transaction */
    /* ROLLBACK TO undoes the writes but leaves the savepoint open; RELEASE
     * closes it so savepoints do not pile up over a long batch. */
    if (run_control(s, ST_ROLLBACK_TO, "ROLLBACK TO") == 0)
        run_control(s, ST_RELEASE, "RELEASE");
}

int sqlite_txn_in_txn(struct smq_store *base)
{
    struct sqlite_store *s = sqlite_of(base);

    return !sqlite3_get_autocommit(s->db);
}

void sqlite_txn_fault_inject(struct smq_store *base, unsigned after_n_writes, int fail_commit,
                              int as_full)
{
    struct sqlite_store *s = sqlite_of(base);

    s->fault_writes_left = after_n_writes;
    s->fault_full = as_full;
    if (!as_full)                /* the full-disk variant leaves a commit fault as it is */
        s->fault_commit = fail_commit;
}

void sqlite_txn_fault_inject_load(struct smq_store *base, unsigned after_n_rows)
{
    sqlite_of(base)->fault_load_left = after_n_rows;
}
