/*
 * pg_rows.c — owns the PostgreSQL backend's rows (pg_store.h): the
 * buffered writes of the meta, queue, message and body rows (handed to the
 * transaction of pg_txn.c) and the builders of every write (pg_topic.c's
 * too), the meta reads (which see the writes not yet in
 * the database first) and the loaders, paged by key.  The statements
 * themselves are pg_stmt.c's.
 */
#include "pg_store.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "smqd/errors.h"

/* ---- building a write ------------------------------------------------- */

void pg_w_init(struct pg_write *w, enum pg_stmt st)
{
    memset(w, 0, offsetof(struct pg_write, text));
    w->stmt = st;
}

/* Moves the text to (a larger) spill with room for need bytes; 0 when
 * out of memory.  Offsets stay valid: the text keeps its layout. */
static int grow_text(struct pg_write *w, size_t need)
{
    size_t cap = w->spill_cap > 0 ? w->spill_cap * 2 : sizeof w->text * 2;
    char *p;

    while (cap < need)
        cap *= 2;
    /* Offsets are int16_t: more than that in one write is a bug. */
    if (need > INT16_MAX)
        abort();
    p = realloc(w->spill, cap);
    if (p == NULL)
        return 0;
    if (w->spill == NULL)
        memcpy(p, w->text, w->used);
    w->spill = p;
    w->spill_cap = cap;
    return 1;
}

void pg_w_text(struct pg_write *w, const char *t)
{
    size_t n = strlen(t) + 1, room = w->spill != NULL ? w->spill_cap : sizeof w->text;

    if (w->used + n > room && !grow_text(w, w->used + n)) {
        w->nomem = 1;              /* pg_txn_write refuses it */
        w->off[w->n++] = -2;
        return;
    }
    w->off[w->n++] = (int16_t)w->used;
    memcpy((w->spill != NULL ? w->spill : w->text) + w->used, t, n);
    w->used += n;
}

void pg_w_i64(struct pg_write *w, int64_t v)
{
    char t[24];

    snprintf(t, sizeof t, "%" PRId64, v);
    pg_w_text(w, t);
}

void pg_w_bin(struct pg_write *w, const void *data, size_t len)
{
    w->bin[w->n] = data != NULL ? data : "";
    w->len[w->n] = (int)len;
    w->off[w->n++] = -1;
}

void pg_w_null(struct pg_write *w)
{
    w->off[w->n++] = -2;
}

int pg_rows_write_one(struct pg_store *s, const struct pg_write *w, int not_exist_rc)
{
    int implicit, rc = pg_txn_implicit_begin(s, &implicit);

    if (rc == 0) {
        rc = pg_txn_write(s, w);
    } else {                      /* pg_txn_write would have owned these */
        pg_write_free(w);
        free(w->body);
    }
    return pg_txn_implicit_end(s, implicit, rc, not_exist_rc);
}

/* ---- meta ------------------------------------------------------------- */

/* The newest unsent value of key in ws, if any (newest write last). */
static const struct pg_write *meta_in(const struct pg_wset *ws, const char *key)
{
    for (size_t i = ws->n; i-- > 0;) {
        const struct pg_write *w = &ws->w[i];
        if (w->stmt == PS_META_SET && strcmp(pg_write_text(w) + w->off[0], key) == 0)
            return w;
    }
    return NULL;
}

/* The newest value of key in a list of sets, oldest set first. */
static const struct pg_write *meta_in_list(const struct pg_wset *ws, const char *key)
{
    const struct pg_write *hit = NULL, *w;

    for (; ws != NULL; ws = ws->next)
        if ((w = meta_in(ws, key)) != NULL)
            hit = w;
    return hit;
}

/* What the database does not have yet, newest first: this transaction,
 * then the queued ones, then the ones in flight (s->lock held). */
static const struct pg_write *meta_pending(struct pg_store *s, const char *key)
{
    const struct pg_write *hit = meta_in(&s->txn, key);

    if (hit == NULL)
        hit = meta_in_list(s->queued, key);
    if (hit == NULL)
        hit = meta_in_list(s->inflight, key);
    return hit;
}

static int meta_from_db(struct pg_store *s, const char *key, struct smq_buf *out, int *found)
{
    const char *vals[1] = {key};
    PGresult *r = PQexecPrepared(s->conn, pg_stmt_name(PS_META_GET), 1, vals, NULL, NULL, 1);
    int rc = 0;

    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        rc = pg_err_fail("meta get", PQerrorMessage(s->conn));
    } else if (PQntuples(r) == 1) {
        buf_append(out, PQgetvalue(r, 0, 0), (size_t)PQgetlength(r, 0, 0));
        rc = buf_failed(out) ? SMQ_E_NOMEM : 0;
        *found = rc == 0;
    }
    PQclear(r);
    return rc;
}

int pg_rows_meta_get(struct smq_store *base, const char *key, struct smq_buf *out, int *found)
{
    struct pg_store *s = pg_of(base);
    const struct pg_write *w;
    int rc = 0;

    *found = 0;
    pthread_mutex_lock(&s->lock);
    w = meta_pending(s, key);
    if (w != NULL) {
        buf_append(out, w->bin[1], (size_t)w->len[1]);
        rc = buf_failed(out) ? SMQ_E_NOMEM : 0;
        *found = rc == 0;
    }
    pthread_mutex_unlock(&s->lock);
    return w != NULL ? rc : meta_from_db(s, key, out, found);
}

int pg_rows_meta_set(struct smq_store *base, const char *key, const void *value, size_t len)
{
    struct pg_write w;
    void *copy = malloc(len > 0 ? len : 1);

    if (copy == NULL)
        return SMQ_E_NOMEM;
    if (len > 0)
        memcpy(copy, value, len);
    pg_w_init(&w, PS_META_SET);
    pg_w_text(&w, key);
    pg_w_bin(&w, copy, len);
    w.owned = copy;
    return pg_rows_write_one(pg_of(base), &w, 0);   /* owns copy from here, even on failure */
}

/* ---- queues ----------------------------------------------------------- */

static int name_ok(const struct store_queue_rec *q)
{
    /* The fixed arrays might hold an unterminated name; never read past. */
    return strnlen(q->name, sizeof q->name) <= STORE_QUEUE_NAME_MAX &&
           strnlen(q->dlq_target, sizeof q->dlq_target) <= STORE_QUEUE_NAME_MAX;
}

/* The columns an update rewrites, in the order both statements take them
 * after their leading id (and name, create_s for the insert). */
static void w_queue_settings(struct pg_write *w, const struct store_queue_rec *q)
{
    pg_w_i64(w, q->modify_s);
    pg_w_i64(w, q->delay_s);
    pg_w_i64(w, q->max_msg_size);
    pg_w_i64(w, q->retention_s);
    pg_w_i64(w, q->visibility_s);
    pg_w_i64(w, q->polling_wait_s);
    pg_w_i64(w, q->logging);
    pg_w_i64(w, q->dlq_enabled);
    pg_w_text(w, q->dlq_target);
    pg_w_i64(w, q->dlq_max_receive);
}

int pg_rows_queue_insert(struct smq_store *base, const struct store_queue_rec *q)
{
    struct pg_write w;

    if (!name_ok(q))
        return SMQ_E_INVALID_ARGUMENT;
    pg_w_init(&w, PS_QUEUE_INSERT);
    pg_w_i64(&w, q->id);
    pg_w_text(&w, q->name);
    pg_w_i64(&w, q->create_s);
    w_queue_settings(&w, q);
    return pg_rows_write_one(pg_of(base), &w, 0);
}

/* In a transaction a missing row cannot be known here: 0, and the commit
 * fails (pg_schema.c, smq_expect_row). */
int pg_rows_queue_update(struct smq_store *base, const struct store_queue_rec *q)
{
    struct pg_write w;

    if (!name_ok(q))
        return SMQ_E_INVALID_ARGUMENT;
    pg_w_init(&w, PS_QUEUE_UPDATE);
    pg_w_i64(&w, q->id);
    w_queue_settings(&w, q);
    return pg_rows_write_one(pg_of(base), &w, SMQ_E_QUEUE_NOT_EXIST);
}

static int by_queue(struct pg_store *s, enum pg_stmt st, int64_t queue_id)
{
    struct pg_write w;

    pg_w_init(&w, st);
    w.queue_id = queue_id;
    pg_w_i64(&w, queue_id);
    return pg_txn_write(s, &w);
}

/* Bodies first: their statement finds them through the msg rows. */
static int purge(struct pg_store *s, int64_t queue_id, int and_queue)
{
    int implicit, rc = pg_txn_implicit_begin(s, &implicit);

    if (rc == 0)
        rc = by_queue(s, PS_QUEUE_DELETE_BODIES, queue_id);
    if (rc == 0)
        rc = by_queue(s, PS_QUEUE_DELETE_MSGS, queue_id);
    if (rc == 0 && and_queue)
        rc = by_queue(s, PS_QUEUE_DELETE, queue_id);
    return pg_txn_implicit_end(s, implicit, rc, 0);
}

int pg_rows_queue_purge(struct smq_store *base, int64_t queue_id)
{
    return purge(pg_of(base), queue_id, 0);
}

int pg_rows_queue_delete(struct smq_store *base, int64_t queue_id)
{
    return purge(pg_of(base), queue_id, 1);
}

static int copy_name(char *dst, const char *src, int len)
{
    if (len > STORE_QUEUE_NAME_MAX)
        return SMQ_E_INTERNAL;       /* only a damaged or foreign row; never truncate */
    memcpy(dst, src, (size_t)len);
    dst[len] = '\0';
    return 0;
}

static int queue_from_row(PGresult *r, int i, struct store_queue_rec *q)
{
    memset(q, 0, sizeof *q);
    q->id = strtoll(PQgetvalue(r, i, 0), NULL, 10);
    q->create_s = strtoll(PQgetvalue(r, i, 2), NULL, 10);
    q->modify_s = strtoll(PQgetvalue(r, i, 3), NULL, 10);
    q->delay_s = strtoll(PQgetvalue(r, i, 4), NULL, 10);
    q->max_msg_size = strtoll(PQgetvalue(r, i, 5), NULL, 10);
    q->retention_s = strtoll(PQgetvalue(r, i, 6), NULL, 10);
    q->visibility_s = strtoll(PQgetvalue(r, i, 7), NULL, 10);
    q->polling_wait_s = strtoll(PQgetvalue(r, i, 8), NULL, 10);
    q->logging = strtoll(PQgetvalue(r, i, 9), NULL, 10) != 0;
    q->dlq_enabled = strtoll(PQgetvalue(r, i, 10), NULL, 10) != 0;
    q->dlq_max_receive = strtoll(PQgetvalue(r, i, 12), NULL, 10);
    if (copy_name(q->name, PQgetvalue(r, i, 1), PQgetlength(r, i, 1)) != 0 ||
        copy_name(q->dlq_target, PQgetvalue(r, i, 11), PQgetlength(r, i, 11)) != 0)
        return SMQ_E_INTERNAL;
    return 0;
}

PGresult *pg_rows_load_page(struct pg_store *s, enum pg_stmt st, int n,
                            const char *const *vals, const char *what, int *rc)
{
    PGresult *r = PQexecPrepared(s->conn, pg_stmt_name(st), n, vals, NULL, NULL, 0);

    *rc = 0;
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        *rc = pg_err_fail(what, PQerrorMessage(s->conn));
        PQclear(r);
        r = NULL;
    }
    return r;
}

/* Each page is read whole before the callbacks run, so they may use the
 * connection (and other store functions) meanwhile. */
int pg_rows_queue_load(struct smq_store *base,
                       int (*cb)(void *arg, const struct store_queue_rec *q), void *arg)
{
    struct pg_store *s = pg_of(base);
    char after[24] = "-9223372036854775808";
    const char *vals[1] = {after};
    struct store_queue_rec q;
    int rc = 0, rows;

    do {
        PGresult *r = pg_rows_load_page(s, PS_QUEUE_LOAD, 1, vals, "queue load", &rc);
        rows = r != NULL ? PQntuples(r) : 0;
        for (int i = 0; rc == 0 && i < rows; i++) {
            rc = queue_from_row(r, i, &q);
            if (rc != 0)
                rc = pg_err_fail("queue load", "a queue name is too long");
            else
                rc = cb(arg, &q);
            snprintf(after, sizeof after, "%" PRId64, q.id);
        }
        PQclear(r);
    } while (rc == 0 && rows == atoi(PG_LOAD_PAGE));
    return rc;
}

/* ---- messages --------------------------------------------------------- */

/* seq is unsigned in memory but bigint in the database. */
static int seq_ok(uint64_t seq)
{
    return seq <= (uint64_t)INT64_MAX;
}

static int insert_body(struct pg_store *s, const struct store_msg_rec *m,
                       const struct store_msg_content *c)
{
    struct pg_write w;
    struct pg_body *e = pg_body_new(m, c);

    if (e == NULL)
        return SMQ_E_NOMEM;
    pg_w_init(&w, PS_BODY_INSERT);
    w.body = e;
    w.seq = m->seq;
    w.queue_id = m->queue_id;
    pg_w_i64(&w, (int64_t)m->seq);
    pg_w_bin(&w, e->data, e->len);
    if (e->has_md5)
        pg_w_bin(&w, e->md5, MNS_MD5_LEN);
    else
        pg_w_null(&w);
    if (e->ext_len > 0)
        pg_w_bin(&w, e->data + e->len, e->ext_len);
    else
        pg_w_null(&w);
    return pg_txn_write(s, &w);
}

int pg_rows_msg_insert(struct smq_store *base, const struct store_msg_rec *m,
                       const struct store_msg_content *c)
{
    struct pg_store *s = pg_of(base);
    struct pg_write w;
    int implicit, rc;

    if (!seq_ok(m->seq))
        return SMQ_E_INVALID_ARGUMENT;
    rc = pg_txn_implicit_begin(s, &implicit);
    pg_w_init(&w, PS_MSG_INSERT);
    pg_w_i64(&w, m->queue_id);
    pg_w_i64(&w, (int64_t)m->seq);
    pg_w_i64(&w, m->priority);
    pg_w_i64(&w, m->enqueue_ms);
    pg_w_i64(&w, m->first_dequeue_ms);
    pg_w_i64(&w, m->visible_ms);
    pg_w_i64(&w, m->expire_ms);
    pg_w_i64(&w, m->dequeue_count);
    pg_w_i64(&w, m->handle_gen);
    pg_w_i64(&w, m->src_queue_id);
    if (rc == 0)
        rc = pg_txn_write(s, &w);
    if (rc == 0)
        rc = insert_body(s, m, c);
    return pg_txn_implicit_end(s, implicit, rc, 0);
}

/* $1..$6 of an update or a move: the key and the mutable fields. */
static void w_mutable(struct pg_write *w, enum pg_stmt st, const struct store_msg_rec *m)
{
    pg_w_init(w, st);
    w->seq = m->seq;
    w->queue_id = m->queue_id;
    pg_w_i64(w, m->queue_id);
    pg_w_i64(w, (int64_t)m->seq);
    pg_w_i64(w, m->first_dequeue_ms);
    pg_w_i64(w, m->visible_ms);
    pg_w_i64(w, m->dequeue_count);
    pg_w_i64(w, m->handle_gen);
}

int pg_rows_msg_update(struct smq_store *base, const struct store_msg_rec *m)
{
    struct pg_write w;

    if (!seq_ok(m->seq))
        return SMQ_E_MESSAGE_NOT_EXIST;
    w_mutable(&w, PS_MSG_UPDATE, m);
    return pg_rows_write_one(pg_of(base), &w, SMQ_E_MESSAGE_NOT_EXIST);
}

int pg_rows_msg_move(struct smq_store *base, int64_t from_queue_id, const struct store_msg_rec *m)
{
    struct pg_write w;

    if (!seq_ok(m->seq))
        return SMQ_E_MESSAGE_NOT_EXIST;
    w_mutable(&w, PS_MSG_MOVE, m);
    pg_w_i64(&w, m->expire_ms);
    pg_w_i64(&w, m->src_queue_id);
    pg_w_i64(&w, from_queue_id);
    return pg_rows_write_one(pg_of(base), &w, SMQ_E_MESSAGE_NOT_EXIST);
}

int pg_rows_msg_delete(struct smq_store *base, int64_t queue_id, uint64_t seq)
{
    struct pg_store *s = pg_of(base);
    struct pg_write w;
    int implicit, rc;

    if (!seq_ok(seq))
        return 0;   /* could never have been stored, so it is already gone */
    rc = pg_txn_implicit_begin(s, &implicit);
    pg_w_init(&w, PS_MSG_DELETE);
    w.queue_id = queue_id;
    w.seq = seq;
    pg_w_i64(&w, queue_id);
    pg_w_i64(&w, (int64_t)seq);
    if (rc == 0)
        rc = pg_txn_write(s, &w);
    pg_w_init(&w, PS_BODY_DELETE);
    w.queue_id = queue_id;
    w.seq = seq;
    pg_w_i64(&w, (int64_t)seq);
    if (rc == 0)
        rc = pg_txn_write(s, &w);
    return pg_txn_implicit_end(s, implicit, rc, 0);
}

static void msg_from_row(PGresult *r, int i, struct store_msg_rec *m)
{
    m->queue_id = strtoll(PQgetvalue(r, i, 0), NULL, 10);
    m->seq = (uint64_t)strtoll(PQgetvalue(r, i, 1), NULL, 10);
    m->priority = (int)strtol(PQgetvalue(r, i, 2), NULL, 10);
    m->enqueue_ms = strtoll(PQgetvalue(r, i, 3), NULL, 10);
    m->first_dequeue_ms = strtoll(PQgetvalue(r, i, 4), NULL, 10);
    m->visible_ms = strtoll(PQgetvalue(r, i, 5), NULL, 10);
    m->expire_ms = strtoll(PQgetvalue(r, i, 6), NULL, 10);
    m->dequeue_count = (uint32_t)strtoll(PQgetvalue(r, i, 7), NULL, 10);
    m->handle_gen = (uint32_t)strtoll(PQgetvalue(r, i, 8), NULL, 10);
    m->src_queue_id = strtoll(PQgetvalue(r, i, 9), NULL, 10);
}

static int load_fault_due(struct pg_store *s)
{
    if (s->fault_load_left == STORE_FAULT_OFF || s->fault_load_left-- > 0)
        return 0;
    s->fault_load_left = STORE_FAULT_OFF;
    return pg_err_fail("msg load", "I/O error (injected)");
}

int pg_rows_msg_load(struct smq_store *base,
                     int (*cb)(void *arg, const struct store_msg_rec *m), void *arg)
{
    struct pg_store *s = pg_of(base);
    char q_after[24] = "-9223372036854775808", s_after[24] = "-9223372036854775808";
    const char *vals[2] = {q_after, s_after};
    struct store_msg_rec m;
    int rc = 0, rows;

    do {
        PGresult *r = pg_rows_load_page(s, PS_MSG_LOAD, 2, vals, "msg load", &rc);
        rows = r != NULL ? PQntuples(r) : 0;
        for (int i = 0; rc == 0 && i < rows; i++) {
            rc = load_fault_due(s);
            msg_from_row(r, i, &m);
            if (rc == 0)
                rc = cb(arg, &m);
            snprintf(q_after, sizeof q_after, "%" PRId64, m.queue_id);
            snprintf(s_after, sizeof s_after, "%" PRId64, (int64_t)m.seq);
        }
        PQclear(r);
    } while (rc == 0 && rows == atoi(PG_LOAD_PAGE));
    return rc;
}
