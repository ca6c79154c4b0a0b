/*
 * sqlite_store.h — the SQLite backend's insides, shared by its seven files
 * and nothing else: sqlite_store.c (the backend table, opening, schema and
 * migrations), sqlite_file.c (the file's upkeep and its WAL flush),
 * sqlite_topic.c (the topics' rows: topics, subscriptions, published
 * messages, notifications), sqlite_rows.c (statements and the queues'
 * rows, and the write helpers sqlite_topic.c shares), sqlite_txn.c
 * (transactions, savepoints and the fault seam), sqlite_err.c (how a
 * failure is reported) and sqlite_pcache.c (the page-cache wrapper).  Calls
 * go one way, in that order: no file calls one listed before it.  The
 * backend implements store_backend.h; store.h has the contract.
 */
#ifndef SMQD_SQLITE_STORE_H
#define SMQD_SQLITE_STORE_H

#include <stdbool.h>
#include <stdint.h>

#include <sqlite3.h>

#include "store_backend.h"

enum sqlite_stmt {
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

/* The topics' statements (sqlite_topic.c), prepared beside the others. */
enum sqlite_tstmt {
    TS_TOPIC_INSERT,
    TS_TOPIC_UPDATE,
    TS_TOPIC_DELETE_NOTIFS,
    TS_TOPIC_DELETE_SUBS,
    TS_TOPIC_DELETE_BODIES,
    TS_TOPIC_DELETE_MSGS,
    TS_TOPIC_DELETE,
    TS_TOPIC_LOAD,
    TS_SUB_INSERT,
    TS_SUB_UPDATE,
    TS_SUB_DELETE_NOTIFS,
    TS_SUB_DELETE,
    TS_SUB_LOAD,
    TS_TMSG_INSERT,
    TS_TBODY_INSERT,
    TS_TMSG_DELETE,
    TS_TBODY_DELETE,
    TS_TBODY_GET,
    TS_TMSG_LOAD,
    TS_NOTIF_INSERT,
    TS_NOTIF_UPDATE,
    TS_NOTIF_DELETE,
    TS_NOTIF_LOAD,
    TS_SIGNKEY_GET,
    TS_SIGNKEY_PUT,
    TS__COUNT
};

struct sqlite_store {
    struct smq_store base;        /* first: the store's handle is this */
    int lock_fd;                  /* flock'ed PATH.lock: one smqd per database */
    int wal_fd;                   /* the WAL, for store_flush; -1 until defer_fsync */
    char *reserve_path;           /* PATH.reserve */
    uint64_t reserve_bytes;       /* 0 = no reserve */
    sqlite3 *db;
    sqlite3_stmt *st[ST__COUNT];
    sqlite3_stmt *tst[TS__COUNT];
    unsigned fault_writes_left;   /* STORE_FAULT_OFF = no injected write fault */
    int fault_commit;             /* non-zero: the next COMMIT fails */
    int fault_full;               /* the write fault reads as SQLITE_FULL, else IOERR */
    unsigned fault_load_left;     /* rows the message load delivers before failing */
    uint64_t page_size;           /* fixed once the database exists (read at open) */
};

static inline struct sqlite_store *sqlite_of(struct smq_store *s)
{
    return (struct sqlite_store *)s;
}

static inline const struct sqlite_store *sqlite_of_const(const struct smq_store *s)
{
    return (const struct sqlite_store *)s;
}

/* ---- sqlite_err.c ---- */

/* Writes a message for the caller of open / integrity check, ending it with
 * "..." when it had to be cut, so truncation is visible. */
void sqlite_err_set(char *err, size_t err_size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The single place a run-time SQLite failure is logged: callers above see
 * only SMQ_E_INTERNAL, or SMQ_E_STORAGE_FULL when rc says the disk (or the
 * database) is full.  errno is preserved. */
int sqlite_err_fail(const char *what, int rc, const char *sqlite_msg);

/* ---- sqlite_topic.c ---- */

int sqlite_topic_prepare(struct sqlite_store *s, const char *path, char *err, size_t err_size);
void sqlite_topic_finalize(struct sqlite_store *s);
int sqlite_topic_insert(struct smq_store *s, const struct store_topic_rec *t);
int sqlite_topic_update(struct smq_store *s, const struct store_topic_rec *t);
int sqlite_topic_delete(struct smq_store *s, int64_t topic_id);
int sqlite_topic_load(struct smq_store *s,
                      int (*cb)(void *arg, const struct store_topic_rec *t), void *arg);
int sqlite_sub_insert(struct smq_store *s, const struct store_sub_rec *sub);
int sqlite_sub_update(struct smq_store *s, const struct store_sub_rec *sub);
int sqlite_sub_delete(struct smq_store *s, int64_t sub_id);
int sqlite_sub_load(struct smq_store *s,
                    int (*cb)(void *arg, const struct store_sub_rec *sub), void *arg);
int sqlite_tmsg_insert(struct smq_store *s, const struct store_tmsg_rec *m, const void *body,
                       size_t body_len);
int sqlite_tmsg_delete(struct smq_store *s, uint64_t seq);
int sqlite_tmsg_body(struct smq_store *s, uint64_t seq, struct smq_buf *out);
int sqlite_tmsg_load(struct smq_store *s,
                     int (*cb)(void *arg, const struct store_tmsg_rec *m), void *arg);
int sqlite_notif_insert(struct smq_store *s, const struct store_notif_rec *n);
int sqlite_notif_update(struct smq_store *s, const struct store_notif_rec *n);
int sqlite_notif_delete(struct smq_store *s, int64_t sub_id, uint64_t seq);
int sqlite_notif_load(struct smq_store *s,
                      int (*cb)(void *arg, const struct store_notif_rec *n), void *arg);

int sqlite_signing_key_get(struct smq_store *s, struct smq_buf *key_pem,
                           struct smq_buf *cert_pem, int *found);
int sqlite_signing_key_put_if_absent(struct smq_store *s, const char *key_pem,
                                     const char *cert_pem);

/* ---- sqlite_rows.c ---- */

/* Collects the first bind error so a function can bind every parameter and
 * check once, the same idea as buf_failed(). */
struct binder {
    sqlite3_stmt *st;
    int rc;
};

void sqlite_bind_i64(struct binder *b, int idx, int64_t v);
/* Bound SQLITE_STATIC: every statement is stepped and reset before the
 * public function that bound it returns. */
void sqlite_bind_text(struct binder *b, int idx, const char *text);
/* An empty value is an empty blob, never SQL NULL. */
void sqlite_bind_blob(struct binder *b, int idx, const void *data, size_t len);
/* Resets the statement and clears its bindings (on every path). */
void sqlite_stmt_reset(sqlite3_stmt *st);
/* Runs a bound write statement to completion (counted by the write-fault
 * seam) and resets it; *changes, if not NULL, gets the rows it touched.
 * 0, SMQ_E_INTERNAL or SMQ_E_STORAGE_FULL. */
int sqlite_rows_write(struct sqlite_store *s, struct binder *b, const char *what, int *changes);
/* Prepares n statements of sql[] into st[] (at open). */
int sqlite_rows_prepare_set(struct sqlite_store *s, const char *const *sql, int n,
                            sqlite3_stmt **st, const char *path, char *err, size_t err_size);

/* Prepares every statement (at open).  0, or SMQ_E_INTERNAL with err set. */
int sqlite_rows_prepare(struct sqlite_store *s, const char *path, char *err, size_t err_size);
void sqlite_rows_finalize(struct sqlite_store *s);
/* Steps a PRAGMA that returns one count.  0 or SMQ_E_INTERNAL. */
int sqlite_rows_count(struct sqlite_store *s, enum sqlite_stmt id, uint64_t *out);

int sqlite_rows_meta_get(struct smq_store *s, const char *key, struct smq_buf *out, int *found);
int sqlite_rows_meta_set(struct smq_store *s, const char *key, const void *value, size_t len);
int sqlite_rows_queue_insert(struct smq_store *s, const struct store_queue_rec *q);
int sqlite_rows_queue_update(struct smq_store *s, const struct store_queue_rec *q);
int sqlite_rows_queue_delete(struct smq_store *s, int64_t queue_id);
int sqlite_rows_queue_purge(struct smq_store *s, int64_t queue_id);
int sqlite_rows_queue_load(struct smq_store *s,
                           int (*cb)(void *arg, const struct store_queue_rec *q), void *arg);
int sqlite_rows_msg_insert(struct smq_store *s, const struct store_msg_rec *m,
                           const struct store_msg_content *c);
int sqlite_rows_msg_update(struct smq_store *s, const struct store_msg_rec *m);
int sqlite_rows_msg_move(struct smq_store *s, int64_t from_queue_id,
                         const struct store_msg_rec *m);
int sqlite_rows_msg_delete(struct smq_store *s, int64_t queue_id, uint64_t seq);
int sqlite_rows_msg_bodies(struct smq_store *s, struct store_body_read *reads, size_t n,
                           struct smq_buf *out);
int sqlite_rows_msg_load(struct smq_store *s,
                         int (*cb)(void *arg, const struct store_msg_rec *m), void *arg);

/* ---- sqlite_txn.c ---- */

int sqlite_txn_begin(struct smq_store *s);
int sqlite_txn_commit(struct smq_store *s);
void sqlite_txn_rollback(struct smq_store *s);
int sqlite_txn_savepoint(struct smq_store *s);
int sqlite_txn_release(struct smq_store *s);
void sqlite_txn_rollback_to(struct smq_store *s);
int sqlite_txn_in_txn(struct smq_store *s);
/* Whether the injected write fault is due (and consumes it): asked by
 * sqlite_rows_write once a write's bindings succeeded. */
bool sqlite_txn_write_fault_due(struct sqlite_store *s);
void sqlite_txn_fault_inject(struct smq_store *s, unsigned after_n_writes, int fail_commit,
                             int as_full);
void sqlite_txn_fault_inject_load(struct smq_store *s, unsigned after_n_rows);

/* ---- sqlite_file.c ---- */

int sqlite_file_defer_fsync(struct smq_store *s);
int sqlite_file_flush(struct smq_store *s);
int sqlite_file_reserve_init(struct smq_store *s, const char *db_path, uint64_t bytes);
int sqlite_file_reserve_restore(struct smq_store *s, uint64_t keep_free);
uint64_t sqlite_file_reserve_bytes(const struct smq_store *s);
void sqlite_file_reserve_release(struct smq_store *s);
int sqlite_file_checkpoint(struct smq_store *s);
const char *sqlite_file_wal_path(const struct smq_store *s);
void sqlite_file_no_checkpoint_on_close(struct smq_store *s);
int sqlite_file_stats(struct smq_store *s, struct store_file_stats *out);
int sqlite_file_reclaim(struct smq_store *s, unsigned max_pages, uint64_t *freed);
int sqlite_file_integrity_check(struct smq_store *s, char *err, size_t err_size);

/* Installs the page-cache wrapper once per process, before SQLite
 * initialises (sqlite_pcache.c); later calls do nothing. */
void sqlite_pcache_install(void);

#endif
