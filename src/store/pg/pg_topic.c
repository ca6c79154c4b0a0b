/*
 * pg_topic.c — owns the PostgreSQL backend's topic rows (pg_store.h,
 * store.h "topics"; docs/protocol.md §13): topics, their subscriptions,
 * the published messages kept for pending notifications (metadata in
 * smq_tmsg, bodies in smq_tmsg_body) and the notifications.  Every write is
 * built with pg_rows.c's builders and buffered in the open transaction
 * exactly as a queue row is (pg_txn.c): savepoints, the write-fault seam,
 * and an UPDATE that finds no row failing the transaction at commit.  The
 * loaders page by key like the queue loaders.  Also the push signing key's
 * one row (§13.11), read and written at start-up outside any transaction.
 */
#include "pg_store.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "smqd/errors.h"

#define KEY_MIN "-9223372036854775808"

/* The fixed arrays might hold unterminated text; never read past them. */
static int fits(const char *text, size_t size)
{
    return strnlen(text, size) < size;
}

/* seq is unsigned in memory but bigint in the database. */
static int seq_ok(uint64_t seq)
{
    return seq <= (uint64_t)INT64_MAX;
}

/* Copies a text column into dst[size]; a value that does not fit can only
 * come from a damaged or foreign row, and truncating it would change it. */
static int copy_text(PGresult *r, int i, int col, char *dst, size_t size)
{
    int len = PQgetlength(r, i, col);

    if ((size_t)len >= size)
        return SMQ_E_INTERNAL;
    memcpy(dst, PQgetvalue(r, i, col), (size_t)len);
    dst[len] = '\0';
    return 0;
}

static int64_t col_i64(PGresult *r, int i, int col)
{
    return strtoll(PQgetvalue(r, i, col), NULL, 10);
}

/* Several writes keyed by one id, as one transaction (an open one, or one
 * of their own). */
static int write_by_id(struct pg_store *s, const enum pg_stmt *stmts, size_t n, int64_t key)
{
    struct pg_write w;
    int implicit, rc = pg_txn_implicit_begin(s, &implicit);

    for (size_t i = 0; rc == 0 && i < n; i++) {
        pg_w_init(&w, stmts[i]);
        w.seq = (uint64_t)key;
        pg_w_i64(&w, key);
        rc = pg_txn_write(s, &w);
    }
    return pg_txn_implicit_end(s, implicit, rc, 0);
}

/* ---- topics ----------------------------------------------------------- */

/* The columns an update rewrites, after the id, in the order both
 * statements take them (the insert has name and create_s before). */
static void w_topic_settings(struct pg_write *w, const struct store_topic_rec *t)
{
    pg_w_i64(w, t->modify_s);
    pg_w_i64(w, t->max_msg_size);
    pg_w_i64(w, t->logging);
}

int pg_topic_insert(struct smq_store *base, const struct store_topic_rec *t)
{
    struct pg_write w;

    if (!fits(t->name, sizeof t->name))
        return SMQ_E_INVALID_ARGUMENT;
    pg_w_init(&w, PS_TOPIC_INSERT);
    pg_w_i64(&w, t->id);
    pg_w_text(&w, t->name);
    pg_w_i64(&w, t->create_s);
    w_topic_settings(&w, t);
    return pg_rows_write_one(pg_of(base), &w, 0);
}

/* In a transaction a missing row cannot be known here: 0, and the commit
 * fails (pg_schema.c, smq_expect_row). */
int pg_topic_update(struct smq_store *base, const struct store_topic_rec *t)
{
    struct pg_write w;

    if (!fits(t->name, sizeof t->name))
        return SMQ_E_INVALID_ARGUMENT;
    pg_w_init(&w, PS_TOPIC_UPDATE);
    pg_w_i64(&w, t->id);
    w_topic_settings(&w, t);
    return pg_rows_write_one(pg_of(base), &w, SMQ_E_TOPIC_NOT_EXIST);
}

int pg_topic_delete(struct smq_store *base, int64_t topic_id)
{
    static const enum pg_stmt steps[] = {
        PS_TOPIC_DELETE_NOTIFS, PS_TOPIC_DELETE_SUBS, PS_TOPIC_DELETE_BODIES,
        PS_TOPIC_DELETE_MSGS, PS_TOPIC_DELETE,
    };

    return write_by_id(pg_of(base), steps, sizeof steps / sizeof steps[0], topic_id);
}

static int topic_from_row(PGresult *r, int i, struct store_topic_rec *t)
{
    memset(t, 0, sizeof *t);
    t->id = col_i64(r, i, 0);
    t->create_s = col_i64(r, i, 2);
    t->modify_s = col_i64(r, i, 3);
    t->max_msg_size = col_i64(r, i, 4);
    t->logging = col_i64(r, i, 5) != 0;
    return copy_text(r, i, 1, t->name, sizeof t->name);
}

/* Each page is read whole before the callbacks run, so they may use the
 * connection (and other store functions) meanwhile. */
int pg_topic_load(struct smq_store *base,
                  int (*cb)(void *arg, const struct store_topic_rec *t), void *arg)
{
    struct pg_store *s = pg_of(base);
    char after[24] = KEY_MIN;
    const char *vals[1] = {after};
    struct store_topic_rec t;
    int rc = 0, rows;

    do {
        PGresult *r = pg_rows_load_page(s, PS_TOPIC_LOAD, 1, vals, "topic load", &rc);
        rows = r != NULL ? PQntuples(r) : 0;
        for (int i = 0; rc == 0 && i < rows; i++) {
            rc = topic_from_row(r, i, &t);
            rc = rc != 0 ? pg_err_fail("topic load", "a topic name is too long") : cb(arg, &t);
            snprintf(after, sizeof after, "%" PRId64, t.id);
        }
        PQclear(r);
    } while (rc == 0 && rows == atoi(PG_LOAD_PAGE));
    return rc;
}

/* ---- subscriptions ---------------------------------------------------- */

static int sub_fits(const struct store_sub_rec *sub)
{
    return fits(sub->name, sizeof sub->name) && fits(sub->endpoint, sizeof sub->endpoint) &&
           fits(sub->filter_tag, sizeof sub->filter_tag) &&
           fits(sub->dlq_target, sizeof sub->dlq_target);
}

int pg_sub_insert(struct smq_store *base, const struct store_sub_rec *sub)
{
    struct pg_write w;

    if (!sub_fits(sub))
        return SMQ_E_INVALID_ARGUMENT;
    pg_w_init(&w, PS_SUB_INSERT);
    pg_w_i64(&w, sub->id);
    pg_w_i64(&w, sub->topic_id);
    pg_w_text(&w, sub->name);
    pg_w_text(&w, sub->endpoint);
    pg_w_text(&w, sub->filter_tag);
    pg_w_i64(&w, sub->strategy);
    pg_w_i64(&w, sub->format);
    pg_w_i64(&w, sub->dlq_enabled);
    pg_w_text(&w, sub->dlq_target);
    pg_w_i64(&w, sub->create_s);
    pg_w_i64(&w, sub->modify_s);
    return pg_rows_write_one(pg_of(base), &w, 0);
}

int pg_sub_update(struct smq_store *base, const struct store_sub_rec *sub)
{
    struct pg_write w;

    if (!sub_fits(sub))
        return SMQ_E_INVALID_ARGUMENT;
    pg_w_init(&w, PS_SUB_UPDATE);
    pg_w_i64(&w, sub->id);
    pg_w_text(&w, sub->filter_tag);
    pg_w_i64(&w, sub->strategy);
    pg_w_i64(&w, sub->dlq_enabled);
    pg_w_text(&w, sub->dlq_target);
    pg_w_i64(&w, sub->modify_s);
    return pg_rows_write_one(pg_of(base), &w, SMQ_E_SUBSCRIPTION_NOT_EXIST);
}

int pg_sub_delete(struct smq_store *base, int64_t sub_id)
{
    static const enum pg_stmt steps[] = {PS_SUB_DELETE_NOTIFS, PS_SUB_DELETE};

    return write_by_id(pg_of(base), steps, sizeof steps / sizeof steps[0], sub_id);
}

static int sub_from_row(PGresult *r, int i, struct store_sub_rec *sub)
{
    memset(sub, 0, sizeof *sub);
    sub->id = col_i64(r, i, 0);
    sub->topic_id = col_i64(r, i, 1);
    sub->strategy = (int)col_i64(r, i, 5);
    sub->format = (int)col_i64(r, i, 6);
    sub->dlq_enabled = col_i64(r, i, 7) != 0;
    sub->create_s = col_i64(r, i, 9);
    sub->modify_s = col_i64(r, i, 10);
    if (copy_text(r, i, 2, sub->name, sizeof sub->name) != 0 ||
        copy_text(r, i, 3, sub->endpoint, sizeof sub->endpoint) != 0 ||
        copy_text(r, i, 4, sub->filter_tag, sizeof sub->filter_tag) != 0 ||
        copy_text(r, i, 8, sub->dlq_target, sizeof sub->dlq_target) != 0)
        return SMQ_E_INTERNAL;
    return 0;
}

int pg_sub_load(struct smq_store *base,
                int (*cb)(void *arg, const struct store_sub_rec *sub), void *arg)
{
    struct pg_store *s = pg_of(base);
    char after[24] = KEY_MIN;
    const char *vals[1] = {after};
    struct store_sub_rec sub;
    int rc = 0, rows;

    do {
        PGresult *r = pg_rows_load_page(s, PS_SUB_LOAD, 1, vals, "subscription load", &rc);
        rows = r != NULL ? PQntuples(r) : 0;
        for (int i = 0; rc == 0 && i < rows; i++) {
            rc = sub_from_row(r, i, &sub);
            rc = rc != 0 ? pg_err_fail("subscription load", "a stored text is too long")
                         : cb(arg, &sub);
            snprintf(after, sizeof after, "%" PRId64, sub.id);
        }
        PQclear(r);
    } while (rc == 0 && rows == atoi(PG_LOAD_PAGE));
    return rc;
}

/* ---- published messages ----------------------------------------------- */

/* A write of seq whose bytea parameter is a copy it owns (the caller's
 * memory is gone by the time the write is sent). */
static int w_owned_copy(struct pg_write *w, const void *data, size_t len)
{
    void *copy = malloc(len > 0 ? len : 1);

    if (copy == NULL)
        return SMQ_E_NOMEM;
    if (len > 0)
        memcpy(copy, data, len);
    w->owned = copy;
    pg_w_bin(w, copy, len);
    return 0;
}

static int tmsg_rows(struct pg_store *s, const struct store_tmsg_rec *m, const void *body,
                     size_t body_len)
{
    struct pg_write w;
    int rc;

    pg_w_init(&w, PS_TMSG_INSERT);
    w.seq = m->seq;
    pg_w_i64(&w, (int64_t)m->seq);
    pg_w_i64(&w, m->topic_id);
    pg_w_i64(&w, m->publish_ms);
    pg_w_text(&w, m->tag);
    rc = w_owned_copy(&w, m->md5, MNS_MD5_LEN);
    pg_w_i64(&w, (int64_t)body_len);
    if (rc == 0)
        rc = pg_txn_write(s, &w);     /* owns the copy from here, even on failure */
    if (rc != 0)
        return rc;
    pg_w_init(&w, PS_TBODY_INSERT);
    w.seq = m->seq;
    pg_w_i64(&w, (int64_t)m->seq);
    rc = w_owned_copy(&w, body, body_len);
    return rc == 0 ? pg_txn_write(s, &w) : rc;
}

int pg_tmsg_insert(struct smq_store *base, const struct store_tmsg_rec *m, const void *body,
                   size_t body_len)
{
    struct pg_store *s = pg_of(base);
    int implicit, rc;

    if (!seq_ok(m->seq) || !fits(m->tag, sizeof m->tag) || body_len > INT32_MAX)
        return SMQ_E_INVALID_ARGUMENT;
    rc = pg_txn_implicit_begin(s, &implicit);
    if (rc == 0)
        rc = tmsg_rows(s, m, body, body_len);
    return pg_txn_implicit_end(s, implicit, rc, 0);
}

int pg_tmsg_delete(struct smq_store *base, uint64_t seq)
{
    static const enum pg_stmt steps[] = {PS_TMSG_DELETE, PS_TBODY_DELETE};

    if (!seq_ok(seq))
        return 0;   /* could never have been stored, so it is already gone */
    return write_by_id(pg_of(base), steps, sizeof steps / sizeof steps[0], (int64_t)seq);
}

/* The newest write of seq's body in ws (an insert or a delete), if any. */
static const struct pg_write *tbody_in(const struct pg_wset *ws, uint64_t seq)
{
    for (size_t i = ws->n; i-- > 0;) {
        const struct pg_write *w = &ws->w[i];
        if ((w->stmt == PS_TBODY_INSERT || w->stmt == PS_TBODY_DELETE) && w->seq == seq)
            return w;
    }
    return NULL;
}

static const struct pg_write *tbody_in_list(const struct pg_wset *ws, uint64_t seq)
{
    const struct pg_write *hit = NULL, *w;

    for (; ws != NULL; ws = ws->next)
        if ((w = tbody_in(ws, seq)) != NULL)
            hit = w;
    return hit;
}

/* What the database does not have yet, newest first: this transaction,
 * then the queued ones, then the ones in flight (s->lock held).  A body
 * deleted with its whole topic is not seen here: nobody reads one then. */
static const struct pg_write *tbody_pending(struct pg_store *s, uint64_t seq)
{
    const struct pg_write *hit = tbody_in(&s->txn, seq);

    if (hit == NULL)
        hit = tbody_in_list(s->queued, seq);
    if (hit == NULL)
        hit = tbody_in_list(s->inflight, seq);
    return hit;
}

static int tbody_from_db(struct pg_store *s, uint64_t seq, struct smq_buf *out)
{
    char key[24];
    const char *vals[1] = {key};
    PGresult *r;
    int rc = SMQ_E_MESSAGE_NOT_EXIST;

    snprintf(key, sizeof key, "%" PRId64, (int64_t)seq);
    r = PQexecPrepared(s->conn, pg_stmt_name(PS_TBODY_GET), 1, vals, NULL, NULL, 1);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        rc = pg_err_fail("topic message body", PQerrorMessage(s->conn));
    } else if (PQntuples(r) == 1) {
        buf_append(out, PQgetvalue(r, 0, 0), (size_t)PQgetlength(r, 0, 0));
        rc = buf_failed(out) ? SMQ_E_NOMEM : 0;
    }
    PQclear(r);
    return rc;
}

/* A body written but not yet in the database is read from its write. */
int pg_tmsg_body(struct smq_store *base, uint64_t seq, struct smq_buf *out)
{
    struct pg_store *s = pg_of(base);
    const struct pg_write *w;
    int rc = SMQ_E_MESSAGE_NOT_EXIST;

    if (!seq_ok(seq))
        return SMQ_E_MESSAGE_NOT_EXIST;
    pthread_mutex_lock(&s->lock);
    w = tbody_pending(s, seq);
    if (w != NULL && w->stmt == PS_TBODY_INSERT) {
        buf_append(out, w->bin[1], (size_t)w->len[1]);
        rc = buf_failed(out) ? SMQ_E_NOMEM : 0;
    }
    pthread_mutex_unlock(&s->lock);
    return w != NULL ? rc : tbody_from_db(s, seq, out);
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* The md5 as the loader selects it (encode(md5, 'hex')): two lower-case
 * hex digits a byte; a value of another length is damage. */
static int md5_from_text(const char *text, int len, unsigned char *md5)
{
    if (len != 2 * MNS_MD5_LEN)
        return SMQ_E_INTERNAL;
    for (int k = 0; k < MNS_MD5_LEN; k++) {
        int hi = hex_digit(text[2 * k]), lo = hex_digit(text[2 * k + 1]);
        if (hi < 0 || lo < 0)
            return SMQ_E_INTERNAL;
        md5[k] = (unsigned char)(hi << 4 | lo);
    }
    return 0;
}

static int tmsg_from_row(PGresult *r, int i, struct store_tmsg_rec *m)
{
    memset(m, 0, sizeof *m);
    m->seq = (uint64_t)col_i64(r, i, 0);
    m->topic_id = col_i64(r, i, 1);
    m->publish_ms = col_i64(r, i, 2);
    m->body_len = (size_t)col_i64(r, i, 5);
    if (md5_from_text(PQgetvalue(r, i, 4), PQgetlength(r, i, 4), m->md5) != 0)
        return SMQ_E_INTERNAL;
    return copy_text(r, i, 3, m->tag, sizeof m->tag);
}

int pg_tmsg_load(struct smq_store *base,
                 int (*cb)(void *arg, const struct store_tmsg_rec *m), void *arg)
{
    struct pg_store *s = pg_of(base);
    char after[24] = KEY_MIN;
    const char *vals[1] = {after};
    struct store_tmsg_rec m;
    int rc = 0, rows;

    do {
        PGresult *r = pg_rows_load_page(s, PS_TMSG_LOAD, 1, vals, "topic message load", &rc);
        rows = r != NULL ? PQntuples(r) : 0;
        for (int i = 0; rc == 0 && i < rows; i++) {
            rc = tmsg_from_row(r, i, &m);
            rc = rc != 0 ? pg_err_fail("topic message load", "a stored value is damaged")
                         : cb(arg, &m);
            snprintf(after, sizeof after, "%" PRId64, (int64_t)m.seq);
        }
        PQclear(r);
    } while (rc == 0 && rows == atoi(PG_LOAD_PAGE));
    return rc;
}

/* ---- notifications ---------------------------------------------------- */

static void w_notif(struct pg_write *w, enum pg_stmt st, const struct store_notif_rec *n)
{
    pg_w_init(w, st);
    w->seq = n->seq;
    pg_w_i64(w, n->sub_id);
    pg_w_i64(w, (int64_t)n->seq);
    pg_w_i64(w, n->attempts);
    pg_w_i64(w, n->due_ms);
}

int pg_notif_insert(struct smq_store *base, const struct store_notif_rec *n)
{
    struct pg_write w;

    if (!seq_ok(n->seq))
        return SMQ_E_INVALID_ARGUMENT;
    w_notif(&w, PS_NOTIF_INSERT, n);
    pg_w_i64(&w, n->strategy);
    return pg_rows_write_one(pg_of(base), &w, 0);
}

int pg_notif_update(struct smq_store *base, const struct store_notif_rec *n)
{
    struct pg_write w;

    if (!seq_ok(n->seq))
        return SMQ_E_MESSAGE_NOT_EXIST;
    w_notif(&w, PS_NOTIF_UPDATE, n);
    return pg_rows_write_one(pg_of(base), &w, SMQ_E_MESSAGE_NOT_EXIST);
}

int pg_notif_delete(struct smq_store *base, int64_t sub_id, uint64_t seq)
{
    struct pg_write w;

    if (!seq_ok(seq))
        return 0;
    pg_w_init(&w, PS_NOTIF_DELETE);
    w.seq = seq;
    pg_w_i64(&w, sub_id);
    pg_w_i64(&w, (int64_t)seq);
    return pg_rows_write_one(pg_of(base), &w, 0);
}

static void notif_from_row(PGresult *r, int i, struct store_notif_rec *n)
{
    memset(n, 0, sizeof *n);
    n->sub_id = col_i64(r, i, 0);
    n->seq = (uint64_t)col_i64(r, i, 1);
    n->attempts = (uint32_t)col_i64(r, i, 2);
    n->due_ms = col_i64(r, i, 3);
    n->strategy = (int)col_i64(r, i, 4);
}

int pg_notif_load(struct smq_store *base,
                  int (*cb)(void *arg, const struct store_notif_rec *n), void *arg)
{
    struct pg_store *s = pg_of(base);
    char seq_after[24] = KEY_MIN, sub_after[24] = KEY_MIN;
    const char *vals[2] = {seq_after, sub_after};
    struct store_notif_rec n;
    int rc = 0, rows;

    do {
        PGresult *r = pg_rows_load_page(s, PS_NOTIF_LOAD, 2, vals, "notification load", &rc);
        rows = r != NULL ? PQntuples(r) : 0;
        for (int i = 0; rc == 0 && i < rows; i++) {
            notif_from_row(r, i, &n);
            rc = cb(arg, &n);
            snprintf(sub_after, sizeof sub_after, "%" PRId64, n.sub_id);
            snprintf(seq_after, sizeof seq_after, "%" PRId64, (int64_t)n.seq);
        }
        PQclear(r);
    } while (rc == 0 && rows == atoi(PG_LOAD_PAGE));
    return rc;
}

/* ---- the push signing key (docs/protocol.md §13.11) ---------------------- */

/* Not buffered like the rows above: run at start-up, before the engine,
 * each statement committed on its own on the engine's connection. */
int pg_signing_key_get(struct smq_store *base, struct smq_buf *key_pem,
                       struct smq_buf *cert_pem, int *found)
{
    struct pg_store *s = pg_of(base);
    PGresult *r = PQexec(s->conn, "SELECT key_pem, cert_pem FROM smq_signing_key WHERE id = 1");
    int rc = 0;

    *found = 0;
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        rc = pg_err_fail("signing key read", PQerrorMessage(s->conn));
    } else if (PQntuples(r) == 1) {
        buf_append(key_pem, PQgetvalue(r, 0, 0), (size_t)PQgetlength(r, 0, 0));
        buf_append(cert_pem, PQgetvalue(r, 0, 1), (size_t)PQgetlength(r, 0, 1));
        rc = buf_failed(key_pem) || buf_failed(cert_pem) ? SMQ_E_NOMEM : 0;
        *found = rc == 0;
    }
    PQclear(r);
    return rc;
}

/* Two nodes starting at once both insert: the unique id makes the second
 * wait for the first's commit and then insert nothing (store.h). */
int pg_signing_key_put_if_absent(struct smq_store *base, const char *key_pem,
                                 const char *cert_pem)
{
    struct pg_store *s = pg_of(base);
    const char *vals[2] = {key_pem, cert_pem};
    PGresult *r = PQexecParams(s->conn, "INSERT INTO smq_signing_key(id, key_pem, cert_pem) "
                               "VALUES (1, $1, $2) ON CONFLICT (id) DO NOTHING", 2, NULL, vals,
                               NULL, NULL, 0);
    int rc = 0;

    if (PQresultStatus(r) != PGRES_COMMAND_OK)
        rc = pg_err_fail("signing key write", PQerrorMessage(s->conn));
    PQclear(r);
    return rc;
}
