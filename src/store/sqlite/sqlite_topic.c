/*
 * sqlite_topic.c — owns the SQLite backend's topic rows (sqlite_store.h,
 * store.h "topics"; docs/protocol.md §13): topics, their subscriptions,
 * the published messages kept for pending notifications (metadata in tmsg,
 * bodies in tmsg_body, apart for the same reason as msg and msg_body: a
 * load scans metadata without paging bodies in) and the notifications;
 * and the push signing key's one row (§13.11).
 * Every write goes through sqlite_rows_write, so it runs inside the
 * engine's open transaction and savepoint and is counted by the
 * write-fault seam exactly as a queue row is.
 */
#include "sqlite_store.h"

#include <string.h>

#include "smqd/errors.h"

#define TOPIC_COLS "id, name, create_s, modify_s, max_msg_size, logging"
#define SUB_COLS "id, topic_id, name, endpoint, filter_tag, strategy, format, dlq_enabled, " \
    "dlq_target, create_s, modify_s"

/* Parameter numbers are relied on by the bind_* helpers below. */
static const char *const tstmt_sql[TS__COUNT] = {
    [TS_TOPIC_INSERT] = "INSERT INTO topic(" TOPIC_COLS ") VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    /* Shares bind_topic: ?2 and ?3 are bound but unused. */
    [TS_TOPIC_UPDATE] = "UPDATE topic SET modify_s = ?4, max_msg_size = ?5, logging = ?6 "
                        "WHERE id = ?1",
    /* A topic's delete, in this order: what names the rows to delete goes last. */
    /* Every notification's message is in tmsg (it goes with the last
     * one): found by message, the key's first column, not by a scan. */
    [TS_TOPIC_DELETE_NOTIFS] = "DELETE FROM notif WHERE seq IN "
                               "(SELECT seq FROM tmsg WHERE topic_id = ?1)",
    [TS_TOPIC_DELETE_SUBS] = "DELETE FROM subscription WHERE topic_id = ?1",
    [TS_TOPIC_DELETE_BODIES] = "DELETE FROM tmsg_body WHERE seq IN "
                               "(SELECT seq FROM tmsg WHERE topic_id = ?1)",
    [TS_TOPIC_DELETE_MSGS] = "DELETE FROM tmsg WHERE topic_id = ?1",
    [TS_TOPIC_DELETE] = "DELETE FROM topic WHERE id = ?1",
    [TS_TOPIC_LOAD] = "SELECT " TOPIC_COLS " FROM topic ORDER BY id",
    [TS_SUB_INSERT] = "INSERT INTO subscription(" SUB_COLS ") "
                      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    /* Shares bind_sub: the columns it does not rewrite are bound but unused. */
    [TS_SUB_UPDATE] = "UPDATE subscription SET filter_tag = ?5, strategy = ?6, "
                      "dlq_enabled = ?8, dlq_target = ?9, modify_s = ?11 WHERE id = ?1",
    [TS_SUB_DELETE_NOTIFS] = "DELETE FROM notif WHERE sub_id = ?1 AND seq IN "
                             "(SELECT seq FROM tmsg WHERE topic_id = "
                             "(SELECT topic_id FROM subscription WHERE id = ?1))",
    [TS_SUB_DELETE] = "DELETE FROM subscription WHERE id = ?1",
    [TS_SUB_LOAD] = "SELECT " SUB_COLS " FROM subscription ORDER BY id",
    [TS_TMSG_INSERT] = "INSERT INTO tmsg(seq, topic_id, publish_ms, tag, md5, body_len) "
                       "VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    [TS_TBODY_INSERT] = "INSERT INTO tmsg_body(seq, body) VALUES (?1, ?2)",
    [TS_TMSG_DELETE] = "DELETE FROM tmsg WHERE seq = ?1",
    [TS_TBODY_DELETE] = "DELETE FROM tmsg_body WHERE seq = ?1",
    [TS_TBODY_GET] = "SELECT body FROM tmsg_body WHERE seq = ?1",
    [TS_TMSG_LOAD] = "SELECT seq, topic_id, publish_ms, tag, md5, body_len FROM tmsg "
                     "ORDER BY seq",
    [TS_NOTIF_INSERT] = "INSERT INTO notif(sub_id, seq, attempts, due_ms, strategy) "
                        "VALUES (?1, ?2, ?3, ?4, ?5)",
    /* Shares bind_notif; the strategy stays the one it was made with. */
    [TS_NOTIF_UPDATE] = "UPDATE notif SET attempts = ?3, due_ms = ?4 "
                        "WHERE sub_id = ?1 AND seq = ?2",
    [TS_NOTIF_DELETE] = "DELETE FROM notif WHERE sub_id = ?1 AND seq = ?2",
    [TS_NOTIF_LOAD] = "SELECT sub_id, seq, attempts, due_ms, strategy FROM notif "
                      "ORDER BY seq, sub_id",
    [TS_SIGNKEY_GET] = "SELECT key_pem, cert_pem FROM signing_key WHERE id = 1",
    /* Insert-if-absent: the first pair stored stays (store.h). */
    [TS_SIGNKEY_PUT] = "INSERT INTO signing_key(id, key_pem, cert_pem) VALUES (1, ?1, ?2) "
                       "ON CONFLICT (id) DO NOTHING",
};

int sqlite_topic_prepare(struct sqlite_store *s, const char *path, char *err, size_t err_size)
{
    return sqlite_rows_prepare_set(s, tstmt_sql, TS__COUNT, s->tst, path, err, err_size);
}

void sqlite_topic_finalize(struct sqlite_store *s)
{
    for (int i = 0; i < TS__COUNT; i++) {
        sqlite3_finalize(s->tst[i]);   /* NULL is a harmless no-op */
        s->tst[i] = NULL;
    }
}

/* ---- shared helpers --------------------------------------------------- */

/* The fixed arrays might hold unterminated text; never read past them. */
static int fits(const char *text, size_t size)
{
    return strnlen(text, size) < size;
}

/* seq is unsigned in memory but INTEGER (int64) on disk. */
static int seq_ok(uint64_t seq)
{
    return seq <= (uint64_t)INT64_MAX;
}

/* One write statement keyed by one id (the deletes). */
static int write_by_id(struct sqlite_store *s, enum sqlite_tstmt id, int64_t key,
                       const char *what)
{
    struct binder b = {s->tst[id], SQLITE_OK};

    sqlite_bind_i64(&b, 1, key);
    return sqlite_rows_write(s, &b, what, NULL);
}

/* An update that must find its row: not_exist (nothing written) if not. */
static int write_expecting_row(struct sqlite_store *s, struct binder *b, const char *what,
                               int not_exist)
{
    int changes = 0, ret = sqlite_rows_write(s, b, what, &changes);

    return ret == 0 && changes == 0 ? not_exist : ret;
}

/* Copies a text column into dst[size]; a value that does not fit can only
 * come from a damaged or foreign file, and truncating it would change it. */
static int column_text(sqlite3_stmt *st, int col, char *dst, size_t size)
{
    const unsigned char *text = sqlite3_column_text(st, col);
    int n = sqlite3_column_bytes(st, col);

    if (text == NULL || (size_t)n >= size)
        return SMQ_E_INTERNAL;
    memcpy(dst, text, (size_t)n);
    dst[n] = '\0';
    return 0;
}

/* A row a loader could not decode: only a damaged or foreign file. */
static int bad_row(const char *what)
{
    return sqlite_err_fail(what, SQLITE_ERROR, "a stored value is missing or too long");
}

/* Ends a loader's steps: ret (a failure or cb's stop) if set, else an
 * error unless the last step was the end; resets st on every path. */
static int load_end(struct sqlite_store *s, sqlite3_stmt *st, int rc, int ret,
                    const char *what)
{
    if (ret == 0 && rc != SQLITE_DONE)
        ret = sqlite_err_fail(what, SQLITE_ERROR, sqlite3_errmsg(s->db));
    sqlite_stmt_reset(st);
    return ret;
}

/* ---- topics ----------------------------------------------------------- */

static void bind_topic(struct binder *b, const struct store_topic_rec *t)
{
    sqlite_bind_i64(b, 1, t->id);
    sqlite_bind_text(b, 2, t->name);
    sqlite_bind_i64(b, 3, t->create_s);
    sqlite_bind_i64(b, 4, t->modify_s);
    sqlite_bind_i64(b, 5, t->max_msg_size);
    sqlite_bind_i64(b, 6, t->logging);
}

int sqlite_topic_insert(struct smq_store *base, const struct store_topic_rec *t)
{
    struct sqlite_store *s = sqlite_of(base);
    struct binder b = {s->tst[TS_TOPIC_INSERT], SQLITE_OK};

    if (!fits(t->name, sizeof t->name))
        return SMQ_E_INVALID_ARGUMENT;
    bind_topic(&b, t);
    return sqlite_rows_write(s, &b, "topic insert", NULL);
}

int sqlite_topic_update(struct smq_store *base, const struct store_topic_rec *t)
{
    struct sqlite_store *s = sqlite_of(base);
    struct binder b = {s->tst[TS_TOPIC_UPDATE], SQLITE_OK};

    if (!fits(t->name, sizeof t->name))
        return SMQ_E_INVALID_ARGUMENT;
    bind_topic(&b, t);
    return write_expecting_row(s, &b, "topic update", SMQ_E_TOPIC_NOT_EXIST);
}

int sqlite_topic_delete(struct smq_store *base, int64_t topic_id)
{
    static const struct { enum sqlite_tstmt id; const char *what; } steps[] = {
        {TS_TOPIC_DELETE_NOTIFS, "topic delete notifications"},
        {TS_TOPIC_DELETE_SUBS, "topic delete subscriptions"},
        {TS_TOPIC_DELETE_BODIES, "topic delete bodies"},
        {TS_TOPIC_DELETE_MSGS, "topic delete messages"},
        {TS_TOPIC_DELETE, "topic delete"},
    };
    struct sqlite_store *s = sqlite_of(base);
    int ret = 0;

    for (size_t i = 0; ret == 0 && i < sizeof steps / sizeof steps[0]; i++)
        ret = write_by_id(s, steps[i].id, topic_id, steps[i].what);
    return ret;
}

static int topic_from_row(sqlite3_stmt *st, struct store_topic_rec *t)
{
    memset(t, 0, sizeof *t);
    t->id = sqlite3_column_int64(st, 0);
    t->create_s = sqlite3_column_int64(st, 2);
    t->modify_s = sqlite3_column_int64(st, 3);
    t->max_msg_size = sqlite3_column_int64(st, 4);
    t->logging = sqlite3_column_int(st, 5) != 0;
    return column_text(st, 1, t->name, sizeof t->name);
}

int sqlite_topic_load(struct smq_store *base,
                      int (*cb)(void *arg, const struct store_topic_rec *t), void *arg)
{
    struct sqlite_store *s = sqlite_of(base);
    sqlite3_stmt *st = s->tst[TS_TOPIC_LOAD];
    struct store_topic_rec t;
    int rc = SQLITE_DONE, ret = 0;

    while (ret == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW)
        ret = topic_from_row(st, &t) != 0 ? bad_row("topic load") : cb(arg, &t);
    return load_end(s, st, rc, ret, "topic load");
}

/* ---- subscriptions ---------------------------------------------------- */

static int sub_fits(const struct store_sub_rec *sub)
{
    return fits(sub->name, sizeof sub->name) && fits(sub->endpoint, sizeof sub->endpoint) &&
           fits(sub->filter_tag, sizeof sub->filter_tag) &&
           fits(sub->dlq_target, sizeof sub->dlq_target);
}

static void bind_sub(struct binder *b, const struct store_sub_rec *sub)
{
    sqlite_bind_i64(b, 1, sub->id);
    sqlite_bind_i64(b, 2, sub->topic_id);
    sqlite_bind_text(b, 3, sub->name);
    sqlite_bind_text(b, 4, sub->endpoint);
    sqlite_bind_text(b, 5, sub->filter_tag);
    sqlite_bind_i64(b, 6, sub->strategy);
    sqlite_bind_i64(b, 7, sub->format);
    sqlite_bind_i64(b, 8, sub->dlq_enabled);
    sqlite_bind_text(b, 9, sub->dlq_target);
    sqlite_bind_i64(b, 10, sub->create_s);
    sqlite_bind_i64(b, 11, sub->modify_s);
}

int sqlite_sub_insert(struct smq_store *base, const struct store_sub_rec *sub)
{
    struct sqlite_store *s = sqlite_of(base);
    struct binder b = {s->tst[TS_SUB_INSERT], SQLITE_OK};

    if (!sub_fits(sub))
        return SMQ_E_INVALID_ARGUMENT;
    bind_sub(&b, sub);
    return sqlite_rows_write(s, &b, "subscription insert", NULL);
}

int sqlite_sub_update(struct smq_store *base, const struct store_sub_rec *sub)
{
    struct sqlite_store *s = sqlite_of(base);
    struct binder b = {s->tst[TS_SUB_UPDATE], SQLITE_OK};

    if (!sub_fits(sub))
        return SMQ_E_INVALID_ARGUMENT;
    bind_sub(&b, sub);
    return write_expecting_row(s, &b, "subscription update", SMQ_E_SUBSCRIPTION_NOT_EXIST);
}

int sqlite_sub_delete(struct smq_store *base, int64_t sub_id)
{
    struct sqlite_store *s = sqlite_of(base);
    int ret = write_by_id(s, TS_SUB_DELETE_NOTIFS, sub_id, "subscription delete notifications");

    if (ret == 0)
        ret = write_by_id(s, TS_SUB_DELETE, sub_id, "subscription delete");
    return ret;
}

static int sub_from_row(sqlite3_stmt *st, struct store_sub_rec *sub)
{
    memset(sub, 0, sizeof *sub);
    sub->id = sqlite3_column_int64(st, 0);
    sub->topic_id = sqlite3_column_int64(st, 1);
    sub->strategy = sqlite3_column_int(st, 5);
    sub->format = sqlite3_column_int(st, 6);
    sub->dlq_enabled = sqlite3_column_int(st, 7) != 0;
    sub->create_s = sqlite3_column_int64(st, 9);
    sub->modify_s = sqlite3_column_int64(st, 10);
    if (column_text(st, 2, sub->name, sizeof sub->name) != 0 ||
        column_text(st, 3, sub->endpoint, sizeof sub->endpoint) != 0 ||
        column_text(st, 4, sub->filter_tag, sizeof sub->filter_tag) != 0 ||
        column_text(st, 8, sub->dlq_target, sizeof sub->dlq_target) != 0)
        return SMQ_E_INTERNAL;
    return 0;
}

int sqlite_sub_load(struct smq_store *base,
                    int (*cb)(void *arg, const struct store_sub_rec *sub), void *arg)
{
    struct sqlite_store *s = sqlite_of(base);
    sqlite3_stmt *st = s->tst[TS_SUB_LOAD];
    struct store_sub_rec sub;
    int rc = SQLITE_DONE, ret = 0;

    while (ret == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW)
        ret = sub_from_row(st, &sub) != 0 ? bad_row("subscription load") : cb(arg, &sub);
    return load_end(s, st, rc, ret, "subscription load");
}

/* ---- published messages ----------------------------------------------- */

int sqlite_tmsg_insert(struct smq_store *base, const struct store_tmsg_rec *m, const void *body,
                       size_t body_len)
{
    struct sqlite_store *s = sqlite_of(base);
    struct binder meta = {s->tst[TS_TMSG_INSERT], SQLITE_OK};
    struct binder blob = {s->tst[TS_TBODY_INSERT], SQLITE_OK};
    int ret;

    if (!seq_ok(m->seq) || !fits(m->tag, sizeof m->tag))
        return SMQ_E_INVALID_ARGUMENT;
    sqlite_bind_i64(&meta, 1, (int64_t)m->seq);
    sqlite_bind_i64(&meta, 2, m->topic_id);
    sqlite_bind_i64(&meta, 3, m->publish_ms);
    sqlite_bind_text(&meta, 4, m->tag);
    sqlite_bind_blob(&meta, 5, m->md5, MNS_MD5_LEN);
    sqlite_bind_i64(&meta, 6, (int64_t)body_len);
    ret = sqlite_rows_write(s, &meta, "topic message insert", NULL);
    if (ret != 0)
        return ret;
    sqlite_bind_i64(&blob, 1, (int64_t)m->seq);
    sqlite_bind_blob(&blob, 2, body, body_len);
    return sqlite_rows_write(s, &blob, "topic message body insert", NULL);
}

int sqlite_tmsg_delete(struct smq_store *base, uint64_t seq)
{
    struct sqlite_store *s = sqlite_of(base);
    int ret;

    if (!seq_ok(seq))
        return 0;   /* could never have been stored, so it is already gone */
    ret = write_by_id(s, TS_TMSG_DELETE, (int64_t)seq, "topic message delete");
    if (ret == 0)
        ret = write_by_id(s, TS_TBODY_DELETE, (int64_t)seq, "topic message body delete");
    return ret;
}

int sqlite_tmsg_body(struct smq_store *base, uint64_t seq, struct smq_buf *out)
{
    struct sqlite_store *s = sqlite_of(base);
    struct binder b = {s->tst[TS_TBODY_GET], SQLITE_OK};
    const void *p;
    int n, rc, ret = SMQ_E_MESSAGE_NOT_EXIST;

    if (!seq_ok(seq))
        return SMQ_E_MESSAGE_NOT_EXIST;
    sqlite_bind_i64(&b, 1, (int64_t)seq);
    rc = b.rc == SQLITE_OK ? sqlite3_step(b.st) : b.rc;
    if (rc == SQLITE_ROW) {
        p = sqlite3_column_blob(b.st, 0);
        n = sqlite3_column_bytes(b.st, 0);
        if (p != NULL || n == 0)
            buf_append(out, p, (size_t)n);
        ret = (p == NULL && n > 0) || buf_failed(out) ? SMQ_E_NOMEM : 0;
    } else if (rc != SQLITE_DONE) {
        ret = sqlite_err_fail("topic message body", SQLITE_ERROR, sqlite3_errmsg(s->db));
    }
    sqlite_stmt_reset(b.st);
    return ret;
}

static int tmsg_from_row(sqlite3_stmt *st, struct store_tmsg_rec *m)
{
    const void *md5 = sqlite3_column_blob(st, 4);

    memset(m, 0, sizeof *m);
    m->seq = (uint64_t)sqlite3_column_int64(st, 0);
    m->topic_id = sqlite3_column_int64(st, 1);
    m->publish_ms = sqlite3_column_int64(st, 2);
    m->body_len = (size_t)sqlite3_column_int64(st, 5);
    if (md5 == NULL || sqlite3_column_bytes(st, 4) != MNS_MD5_LEN)
        return SMQ_E_INTERNAL;
    memcpy(m->md5, md5, MNS_MD5_LEN);
    return column_text(st, 3, m->tag, sizeof m->tag);
}

int sqlite_tmsg_load(struct smq_store *base,
                     int (*cb)(void *arg, const struct store_tmsg_rec *m), void *arg)
{
    struct sqlite_store *s = sqlite_of(base);
    sqlite3_stmt *st = s->tst[TS_TMSG_LOAD];
    struct store_tmsg_rec m;
    int rc = SQLITE_DONE, ret = 0;

    while (ret == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW)
        ret = tmsg_from_row(st, &m) != 0 ? bad_row("topic message load") : cb(arg, &m);
    return load_end(s, st, rc, ret, "topic message load");
}

/* ---- notifications ---------------------------------------------------- */

/* ?1..?4 (the strategy, ?5, only where a statement writes it: SQLite
 * refuses a bind past the highest ?N a statement names). */
static void bind_notif(struct binder *b, const struct store_notif_rec *n)
{
    sqlite_bind_i64(b, 1, n->sub_id);
    sqlite_bind_i64(b, 2, (int64_t)n->seq);
    sqlite_bind_i64(b, 3, n->attempts);
    sqlite_bind_i64(b, 4, n->due_ms);
}

int sqlite_notif_insert(struct smq_store *base, const struct store_notif_rec *n)
{
    struct sqlite_store *s = sqlite_of(base);
    struct binder b = {s->tst[TS_NOTIF_INSERT], SQLITE_OK};

    if (!seq_ok(n->seq))
        return SMQ_E_INVALID_ARGUMENT;
    bind_notif(&b, n);
    sqlite_bind_i64(&b, 5, n->strategy);
    return sqlite_rows_write(s, &b, "notification insert", NULL);
}

int sqlite_notif_update(struct smq_store *base, const struct store_notif_rec *n)
{
    struct sqlite_store *s = sqlite_of(base);
    struct binder b = {s->tst[TS_NOTIF_UPDATE], SQLITE_OK};

    if (!seq_ok(n->seq))
        return SMQ_E_MESSAGE_NOT_EXIST;
    bind_notif(&b, n);
    return write_expecting_row(s, &b, "notification update", SMQ_E_MESSAGE_NOT_EXIST);
}

int sqlite_notif_delete(struct smq_store *base, int64_t sub_id, uint64_t seq)
{
    struct sqlite_store *s = sqlite_of(base);
    struct binder b = {s->tst[TS_NOTIF_DELETE], SQLITE_OK};

    if (!seq_ok(seq))
        return 0;
    sqlite_bind_i64(&b, 1, sub_id);
    sqlite_bind_i64(&b, 2, (int64_t)seq);
    return sqlite_rows_write(s, &b, "notification delete", NULL);
}

static void notif_from_row(sqlite3_stmt *st, struct store_notif_rec *n)
{
    memset(n, 0, sizeof *n);
    n->sub_id = sqlite3_column_int64(st, 0);
    n->seq = (uint64_t)sqlite3_column_int64(st, 1);
    n->attempts = (uint32_t)sqlite3_column_int64(st, 2);
    n->due_ms = sqlite3_column_int64(st, 3);
    n->strategy = sqlite3_column_int(st, 4);
}

int sqlite_notif_load(struct smq_store *base,
                      int (*cb)(void *arg, const struct store_notif_rec *n), void *arg)
{
    struct sqlite_store *s = sqlite_of(base);
    sqlite3_stmt *st = s->tst[TS_NOTIF_LOAD];
    struct store_notif_rec n;
    int rc = SQLITE_DONE, ret = 0;

    while (ret == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        notif_from_row(st, &n);
        ret = cb(arg, &n);
    }
    return load_end(s, st, rc, ret, "notification load");
}

/* ---- the push signing key (docs/protocol.md §13.11) ---------------------- */

/* Appends column col of st's row as text to out: 0 or SMQ_E_NOMEM. */
static int append_text(sqlite3_stmt *st, int col, struct smq_buf *out)
{
    const unsigned char *p = sqlite3_column_text(st, col);
    int n = sqlite3_column_bytes(st, col);

    if (p == NULL && n > 0)
        return SMQ_E_NOMEM;
    buf_append(out, p, (size_t)n);
    return buf_failed(out) ? SMQ_E_NOMEM : 0;
}

int sqlite_signing_key_get(struct smq_store *base, struct smq_buf *key_pem,
                           struct smq_buf *cert_pem, int *found)
{
    struct sqlite_store *s = sqlite_of(base);
    sqlite3_stmt *st = s->tst[TS_SIGNKEY_GET];
    int rc = sqlite3_step(st), ret = 0;

    *found = 0;
    if (rc == SQLITE_ROW) {
        ret = append_text(st, 0, key_pem);
        if (ret == 0)
            ret = append_text(st, 1, cert_pem);
        *found = ret == 0;
    } else if (rc != SQLITE_DONE) {
        ret = sqlite_err_fail("signing key read", SQLITE_ERROR, sqlite3_errmsg(s->db));
    }
    sqlite_stmt_reset(st);
    return ret;
}

/* Outside a transaction the statement commits on its own (store.h). */
int sqlite_signing_key_put_if_absent(struct smq_store *base, const char *key_pem,
                                     const char *cert_pem)
{
    struct sqlite_store *s = sqlite_of(base);
    struct binder b = {s->tst[TS_SIGNKEY_PUT], SQLITE_OK};

    sqlite_bind_text(&b, 1, key_pem);
    sqlite_bind_text(&b, 2, cert_pem);
    return sqlite_rows_write(s, &b, "signing key write", NULL);
}
