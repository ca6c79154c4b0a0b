/*
 * sqlite_rows.c — owns the SQLite backend's statements (sqlite_store.h):
 * every statement prepared once at open, and the meta, queue, message and
 * body rows; and the binding and write helpers sqlite_topic.c runs its
 * rows through.  Transactions, savepoints and the fault seam the writes
 * ask are in sqlite_txn.c, as pg_txn.c is beside pg_rows.c.
 *
 * Message bodies sit in msg_body, apart from msg, so that recovery can scan
 * a million metadata rows without paging bodies in.
 */
#include "sqlite_store.h"

#include <string.h>

#include "smqd/errors.h"

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
    [ST_BODY_INSERT] = "INSERT INTO msg_body(seq, body, md5, ext) VALUES (?2, ?3, ?4, ?5)",
    /* Shares bind_msg with the INSERT; ?3, ?4 and ?7 are immutable. */
    [ST_MSG_UPDATE] = "UPDATE msg SET first_dequeue_ms = ?5, visible_ms = ?6, "
                      "dequeue_count = ?8, handle_gen = ?9 "
                      "WHERE queue_id = ?1 AND seq = ?2",
    [ST_MSG_DELETE] = "DELETE FROM msg WHERE queue_id = ?1 AND seq = ?2",
    [ST_BODY_DELETE] = "DELETE FROM msg_body WHERE seq = ?2",
    [ST_BODY_GET] = "SELECT body, md5, ext FROM msg_body WHERE seq = ?2",
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

/* ---- statement helpers ------------------------------------------------ */

void sqlite_bind_i64(struct binder *b, int idx, int64_t v)
{
    if (b->rc == SQLITE_OK)
        b->rc = sqlite3_bind_int64(b->st, idx, v);
}

void sqlite_bind_text(struct binder *b, int idx, const char *text)
{
    /* SQLITE_STATIC: every statement is stepped and reset before the
     * public function returns, so the caller's memory outlives the use. */
    if (b->rc == SQLITE_OK)
        b->rc = sqlite3_bind_text(b->st, idx, text, -1, SQLITE_STATIC);
}

void sqlite_bind_blob(struct binder *b, int idx, const void *data, size_t len)
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
void sqlite_stmt_reset(sqlite3_stmt *st)
{
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
}

/*
 * Runs a bound write statement to completion and releases it.  *changes, if
 * not NULL, receives the number of rows it touched.  A write is counted by
 * the fault seam only once its bindings succeeded, as a real write would be.
 */
int sqlite_rows_write(struct sqlite_store *s, struct binder *b, const char *what, int *changes)
{
    int rc = b->rc, ret = 0;

    if (rc == SQLITE_OK && sqlite_txn_write_fault_due(s)) {
        ret = s->fault_full ? sqlite_err_fail(what, SQLITE_FULL,
                                              "database or disk is full (injected)")
                            : sqlite_err_fail(what, SQLITE_IOERR, "disk I/O error (injected)");
        goto out;
    }
    if (rc == SQLITE_OK)
        rc = sqlite3_step(b->st);
    if (rc != SQLITE_DONE) {
        ret = sqlite_err_fail(what, rc, sqlite3_errmsg(s->db));
        goto out;
    }
    if (changes != NULL)
        *changes = sqlite3_changes(s->db);
out:
    sqlite_stmt_reset(b->st);
    return ret;
}

int sqlite_rows_prepare_set(struct sqlite_store *s, const char *const *sql, int n,
                            sqlite3_stmt **st, const char *path, char *err, size_t err_size)
{
    for (int i = 0; i < n; i++) {
        /* PERSISTENT: these live for the whole process, so let SQLite put
         * them in long-lived memory rather than its lookaside slots. */
        if (sqlite3_prepare_v3(s->db, sql[i], -1, SQLITE_PREPARE_PERSISTENT, &st[i],
                               NULL) != SQLITE_OK) {
            sqlite_err_set(err, err_size, "%s: cannot prepare statement \"%.40s\": %s", path,
                           sql[i], sqlite3_errmsg(s->db));
            return SMQ_E_INTERNAL;
        }
    }
    return 0;
}

int sqlite_rows_prepare(struct sqlite_store *s, const char *path, char *err, size_t err_size)
{
    return sqlite_rows_prepare_set(s, stmt_sql, ST__COUNT, s->st, path, err, err_size);
}

void sqlite_rows_finalize(struct sqlite_store *s)
{
    for (int i = 0; i < ST__COUNT; i++) {
        sqlite3_finalize(s->st[i]);   /* NULL is a harmless no-op */
        s->st[i] = NULL;
    }
}

/* ---- meta ------------------------------------------------------------- */

int sqlite_rows_meta_get(struct smq_store *base, const char *key, struct smq_buf *out, int *found)
{
    struct sqlite_store *s = sqlite_of(base);
    struct binder b = {s->st[ST_META_GET], SQLITE_OK};
    const void *value;
    int n, rc, ret = 0;

    *found = 0;
    sqlite_bind_text(&b, 1, key);
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
        ret = sqlite_err_fail("meta get", SQLITE_ERROR, sqlite3_errmsg(s->db));
    }
out:
    sqlite_stmt_reset(b.st);
    return ret;
}

int sqlite_rows_meta_set(struct smq_store *base, const char *key, const void *value, size_t len)
{
    struct sqlite_store *s = sqlite_of(base);
    struct binder b = {s->st[ST_META_SET], SQLITE_OK};

    sqlite_bind_text(&b, 1, key);
    sqlite_bind_blob(&b, 2, value, len);
    return sqlite_rows_write(s, &b, "meta set", NULL);
}

/* ---- queues ----------------------------------------------------------- */

/* Binds all thirteen queue columns as ?1..?13 in table order. */
static void bind_queue(struct binder *b, const struct store_queue_rec *q)
{
    sqlite_bind_i64(b, 1, q->id);
    sqlite_bind_text(b, 2, q->name);
    sqlite_bind_i64(b, 3, q->create_s);
    sqlite_bind_i64(b, 4, q->modify_s);
    sqlite_bind_i64(b, 5, q->delay_s);
    sqlite_bind_i64(b, 6, q->max_msg_size);
    sqlite_bind_i64(b, 7, q->retention_s);
    sqlite_bind_i64(b, 8, q->visibility_s);
    sqlite_bind_i64(b, 9, q->polling_wait_s);
    sqlite_bind_i64(b, 10, q->logging);
    sqlite_bind_i64(b, 11, q->dlq_enabled);
    sqlite_bind_text(b, 12, q->dlq_target);
    sqlite_bind_i64(b, 13, q->dlq_max_receive);
}

int sqlite_rows_queue_insert(struct smq_store *base, const struct store_queue_rec *q)
{
    struct sqlite_store *s = sqlite_of(base);
    struct binder b = {s->st[ST_QUEUE_INSERT], SQLITE_OK};

    /* The fixed array might hold an unterminated name; never read past it. */
    if (strnlen(q->name, sizeof q->name) > STORE_QUEUE_NAME_MAX)
        return SMQ_E_INVALID_ARGUMENT;
    bind_queue(&b, q);
    return sqlite_rows_write(s, &b, "queue insert", NULL);
}

int sqlite_rows_queue_update(struct smq_store *base, const struct store_queue_rec *q)
{
    struct sqlite_store *s = sqlite_of(base);
    struct binder b = {s->st[ST_QUEUE_UPDATE], SQLITE_OK};
    int changes = 0, ret;

    if (strnlen(q->name, sizeof q->name) > STORE_QUEUE_NAME_MAX)
        return SMQ_E_INVALID_ARGUMENT;
    bind_queue(&b, q);
    ret = sqlite_rows_write(s, &b, "queue update", &changes);
    if (ret == 0 && changes == 0)
        ret = SMQ_E_QUEUE_NOT_EXIST;
    return ret;
}

/* DELETE ... WHERE queue_id = ?1 on a table keyed (queue_id, seq): a range
 * scan over the primary-key prefix, no index needed. */
static int delete_by_queue(struct sqlite_store *s, enum sqlite_stmt id, int64_t queue_id,
                           const char *what)
{
    struct binder b = {s->st[id], SQLITE_OK};

    sqlite_bind_i64(&b, 1, queue_id);
    return sqlite_rows_write(s, &b, what, NULL);
}

static int purge_queue(struct sqlite_store *s, int64_t queue_id)
{
    /* Bodies first: their statement finds them through the msg rows. */
    int ret = delete_by_queue(s, ST_QUEUE_DELETE_BODIES, queue_id, "queue delete bodies");

    if (ret == 0)
        ret = delete_by_queue(s, ST_QUEUE_DELETE_MSGS, queue_id, "queue delete msgs");
    return ret;
}

int sqlite_rows_queue_purge(struct smq_store *base, int64_t queue_id)
{
    return purge_queue(sqlite_of(base), queue_id);
}

int sqlite_rows_queue_delete(struct smq_store *base, int64_t queue_id)
{
    struct sqlite_store *s = sqlite_of(base);
    int ret = purge_queue(s, queue_id);

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
        return SMQ_E_INTERNAL;
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
        return SMQ_E_INTERNAL;
    memcpy(q->dlq_target, name, (size_t)n);
    q->dlq_max_receive = sqlite3_column_int64(st, 12);
    return 0;
}

int sqlite_rows_queue_load(struct smq_store *base,
                           int (*cb)(void *arg, const struct store_queue_rec *q), void *arg)
{
    struct sqlite_store *s = sqlite_of(base);
    sqlite3_stmt *st = s->st[ST_QUEUE_LOAD];
    struct store_queue_rec q;
    int rc, ret = 0;

    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (queue_from_row(st, &q) != 0) {
            ret = sqlite_err_fail("queue load", SQLITE_ERROR,
                                  "a queue name is missing or too long");
            goto out;
        }
        ret = cb(arg, &q);
        if (ret != 0)
            goto out;
    }
    if (rc != SQLITE_DONE)
        ret = sqlite_err_fail("queue load", SQLITE_ERROR, sqlite3_errmsg(s->db));
out:
    sqlite_stmt_reset(st);
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
    sqlite_bind_i64(b, 1, queue_id);
    sqlite_bind_i64(b, 2, (int64_t)seq);
}

/* Binds the first nine msg columns as ?1..?9 in table order (src_queue_id,
 * ?10, only where a statement writes it: SQLite refuses a bind past the
 * highest ?N a statement names). */
static void bind_msg(struct binder *b, const struct store_msg_rec *m)
{
    bind_key(b, m->queue_id, m->seq);
    sqlite_bind_i64(b, 3, m->priority);
    sqlite_bind_i64(b, 4, m->enqueue_ms);
    sqlite_bind_i64(b, 5, m->first_dequeue_ms);
    sqlite_bind_i64(b, 6, m->visible_ms);
    sqlite_bind_i64(b, 7, m->expire_ms);
    sqlite_bind_i64(b, 8, m->dequeue_count);
    sqlite_bind_i64(b, 9, m->handle_gen);
}

int sqlite_rows_msg_insert(struct smq_store *base, const struct store_msg_rec *m,
                           const struct store_msg_content *c)
{
    struct sqlite_store *s = sqlite_of(base);
    struct binder meta = {s->st[ST_MSG_INSERT], SQLITE_OK};
    struct binder blob = {s->st[ST_BODY_INSERT], SQLITE_OK};
    int ret;

    if (!seq_ok(m->seq))
        return SMQ_E_INVALID_ARGUMENT;
    bind_msg(&meta, m);
    sqlite_bind_i64(&meta, 10, m->src_queue_id);
    ret = sqlite_rows_write(s, &meta, "msg insert", NULL);
    if (ret != 0)
        return ret;
    bind_key(&blob, m->queue_id, m->seq);
    sqlite_bind_blob(&blob, 3, c->body, c->body_len);
    if (c->md5 != NULL)
        sqlite_bind_blob(&blob, 4, c->md5, MNS_MD5_LEN);
    else
        bind_null(&blob, 4);
    if (c->ext_len > 0)
        sqlite_bind_blob(&blob, 5, c->ext, c->ext_len);
    else
        bind_null(&blob, 5);
    return sqlite_rows_write(s, &blob, "msg body insert", NULL);
}

int sqlite_rows_msg_update(struct smq_store *base, const struct store_msg_rec *m)
{
    struct sqlite_store *s = sqlite_of(base);
    struct binder b = {s->st[ST_MSG_UPDATE], SQLITE_OK};
    int changes = 0, ret;

    if (!seq_ok(m->seq))
        return SMQ_E_MESSAGE_NOT_EXIST;
    bind_msg(&b, m);
    ret = sqlite_rows_write(s, &b, "msg update", &changes);
    if (ret == 0 && changes == 0)
        ret = SMQ_E_MESSAGE_NOT_EXIST;
    return ret;
}

int sqlite_rows_msg_move(struct smq_store *base, int64_t from_queue_id,
                         const struct store_msg_rec *m)
{
    struct sqlite_store *s = sqlite_of(base);
    struct binder b = {s->st[ST_MSG_MOVE], SQLITE_OK};
    int changes = 0, ret;

    if (!seq_ok(m->seq))
        return SMQ_E_MESSAGE_NOT_EXIST;
    bind_msg(&b, m);
    sqlite_bind_i64(&b, 10, m->src_queue_id);
    sqlite_bind_i64(&b, 11, from_queue_id);
    ret = sqlite_rows_write(s, &b, "msg move", &changes);
    if (ret == 0 && changes == 0)
        ret = SMQ_E_MESSAGE_NOT_EXIST;
    return ret;
}

static int delete_by_key(struct sqlite_store *s, enum sqlite_stmt id, int64_t queue_id,
                         uint64_t seq,
                         const char *what)
{
    struct binder b = {s->st[id], SQLITE_OK};

    bind_key(&b, queue_id, seq);
    return sqlite_rows_write(s, &b, what, NULL);
}

int sqlite_rows_msg_delete(struct smq_store *base, int64_t queue_id, uint64_t seq)
{
    struct sqlite_store *s = sqlite_of(base);
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

/* Appends column col of a row to out; *len says how many bytes. */
static int append_column(sqlite3_stmt *st, int col, struct smq_buf *out, size_t *len)
{
    const void *p = sqlite3_column_blob(st, col);
    int n = sqlite3_column_bytes(st, col);

    *len = 0;
    if (p == NULL && n > 0)
        return SMQ_E_NOMEM;      /* SQLite could not allocate the copy */
    buf_append(out, p, (size_t)n);
    if (buf_failed(out))
        return SMQ_E_NOMEM;
    *len = (size_t)n;
    return 0;
}

/* Appends one body and then its extensions (an empty or NULL ext column:
 * none) to out, with their lengths and the MD5 in r. */
static int read_body(struct sqlite_store *s, struct store_body_read *r, struct smq_buf *out)
{
    struct binder b = {s->st[ST_BODY_GET], SQLITE_OK};
    int rc, ret = 0;

    r->len = 0;
    r->ext_len = 0;
    r->md5.present = false;
    if (!seq_ok(r->seq))
        return SMQ_E_MESSAGE_NOT_EXIST;
    bind_key(&b, r->queue_id, r->seq);
    rc = b.rc == SQLITE_OK ? sqlite3_step(b.st) : b.rc;
    if (rc == SQLITE_ROW) {
        ret = append_column(b.st, 0, out, &r->len);
        if (ret == 0)
            ret = append_column(b.st, 2, out, &r->ext_len);
        column_md5(b.st, 1, &r->md5);
    } else if (rc == SQLITE_DONE) {
        ret = SMQ_E_MESSAGE_NOT_EXIST;
    } else {
        ret = sqlite_err_fail("msg body", SQLITE_ERROR, sqlite3_errmsg(s->db));
    }
    sqlite_stmt_reset(b.st);
    return ret;
}

/* The least a body is guessed at when room is made for the rest of a batch. */
#define BODY_GUESS_MIN 1024

/* After the first body, room is made for the others, each guessed as large
 * as the first: a batch costs one allocation or two. */
int sqlite_rows_msg_bodies(struct smq_store *base, struct store_body_read *reads, size_t n,
                           struct smq_buf *out)
{
    struct sqlite_store *s = sqlite_of(base);
    int rc = 0;

    for (size_t i = 0; rc == 0 && i < n; i++) {
        rc = read_body(s, &reads[i], out);
        if (rc == 0 && i == 0 && n > 1)
            buf_reserve(out, (n - 1) * (reads[0].len > BODY_GUESS_MIN ? reads[0].len
                                                                       : BODY_GUESS_MIN));
    }
    return rc;
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

int sqlite_rows_msg_load(struct smq_store *base,
                         int (*cb)(void *arg, const struct store_msg_rec *m), void *arg)
{
    struct sqlite_store *s = sqlite_of(base);
    sqlite3_stmt *st = s->st[ST_MSG_LOAD];
    struct store_msg_rec m;
    int rc, ret = 0;

    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (s->fault_load_left != STORE_FAULT_OFF && s->fault_load_left-- == 0) {
            s->fault_load_left = STORE_FAULT_OFF;
            ret = sqlite_err_fail("msg load", SQLITE_ERROR, "disk I/O error (injected)");
            goto out;
        }
        msg_from_row(st, &m);
        ret = cb(arg, &m);
        if (ret != 0)
            goto out;
    }
    if (rc != SQLITE_DONE)
        ret = sqlite_err_fail("msg load", SQLITE_ERROR, sqlite3_errmsg(s->db));
out:
    sqlite_stmt_reset(st);
    return ret;
}

int sqlite_rows_count(struct sqlite_store *s, enum sqlite_stmt id, uint64_t *out)
{
    sqlite3_stmt *st = s->st[id];
    int rc = sqlite3_step(st), ret = 0;

    if (rc == SQLITE_ROW)
        *out = (uint64_t)sqlite3_column_int64(st, 0);
    else
        ret = sqlite_err_fail("page count", SQLITE_ERROR, sqlite3_errmsg(s->db));
    sqlite_stmt_reset(st);
    return ret;
}
