/*
 * pg_body.c — owns the PostgreSQL backend's message bodies in memory
 * (pg_store.h): the bodies this store wrote, pinned until their transaction
 * committed (before that the database does not have them), a cache of
 * committed ones bounded by bytes (oldest out first), and store_msg_bodies,
 * which reads a receive's bodies from there and costs one SELECT for all
 * the misses of the batch together.
 *
 * Both threads touch the table: the engine thread adds, reads and drops;
 * the flush (the syncer thread) turns committed entries into cache entries.
 * So every call but pg_body_read runs with s->lock held.
 */
#include "smqd/pg_store.h"

#include <stdlib.h>
#include <string.h>

#include "smqd/errors.h"

int pg_bodies_init(struct pg_bodies *b, size_t budget)
{
    memset(b, 0, sizeof *b);
    b->nbucket = 4096;
    b->bucket = calloc(b->nbucket, sizeof *b->bucket);
    b->budget = budget;
    return b->bucket != NULL ? 0 : SMQ_E_NOMEM;
}

void pg_bodies_free(struct pg_bodies *b)
{
    for (size_t i = 0; b->bucket != NULL && i < b->nbucket; i++) {
        struct pg_body *e = b->bucket[i], *next;
        for (; e != NULL; e = next) {
            next = e->hnext;
            free(e);
        }
    }
    free(b->bucket);
    memset(b, 0, sizeof *b);
}

struct pg_body *pg_body_new(const struct store_msg_rec *m, const struct store_msg_content *c)
{
    struct pg_body *e = malloc(sizeof *e + c->body_len + c->ext_len);

    if (e == NULL)
        return NULL;
    memset(e, 0, sizeof *e);
    e->seq = m->seq;
    e->queue_id = m->queue_id;
    e->len = c->body_len;
    e->ext_len = c->ext_len;
    e->has_md5 = c->md5 != NULL;
    if (c->md5 != NULL)
        memcpy(e->md5, c->md5, sizeof e->md5);
    if (c->body_len > 0)
        memcpy(e->data, c->body, c->body_len);
    if (c->ext_len > 0)
        memcpy(e->data + c->body_len, c->ext, c->ext_len);
    return e;
}

static struct pg_body **slot_of(struct pg_bodies *b, uint64_t seq)
{
    return &b->bucket[(seq * 0x9E3779B97F4A7C15ull >> 20) & (b->nbucket - 1)];
}

static struct pg_body *find(struct pg_bodies *b, uint64_t seq)
{
    struct pg_body *e = *slot_of(b, seq);

    while (e != NULL && e->seq != seq)
        e = e->hnext;
    return e;
}

/* Doubles the buckets when chains grow long; a failed growth only costs
 * longer chains. */
static void maybe_grow(struct pg_bodies *b)
{
    struct pg_body **old = b->bucket;
    size_t n = b->nbucket;

    if (b->count < n * 2)
        return;
    b->bucket = calloc(n * 2, sizeof *b->bucket);
    if (b->bucket == NULL) {
        b->bucket = old;
        return;
    }
    b->nbucket = n * 2;
    for (size_t i = 0; i < n; i++) {
        struct pg_body *e = old[i], *next;
        for (; e != NULL; e = next) {
            struct pg_body **slot = slot_of(b, e->seq);
            next = e->hnext;
            e->hnext = *slot;
            *slot = e;
        }
    }
    free(old);
}

/* Adds e (pinned) to the table, replacing an older entry of its seq. */
void pg_body_pin(struct pg_bodies *b, struct pg_body *e)
{
    struct pg_body *old = find(b, e->seq);
    struct pg_body **slot;

    if (old != NULL && old != e)
        pg_body_drop(b, old);
    if (old == e)
        return;
    slot = slot_of(b, e->seq);
    e->hnext = *slot;
    *slot = e;
    b->count++;
    maybe_grow(b);
}

static void fifo_unlink(struct pg_bodies *b, struct pg_body *e)
{
    if (!e->committed)
        return;
    if (e->prev != NULL)
        e->prev->next = e->next;
    else
        b->head = e->next;
    if (e->next != NULL)
        e->next->prev = e->prev;
    else
        b->tail = e->prev;
    b->cached_bytes -= e->len + e->ext_len;
}

/* Removes e from the table and frees it. */
void pg_body_drop(struct pg_bodies *b, struct pg_body *e)
{
    struct pg_body **p = slot_of(b, e->seq);

    while (*p != NULL && *p != e)
        p = &(*p)->hnext;
    if (*p == e) {
        *p = e->hnext;
        b->count--;
    }
    fifo_unlink(b, e);
    free(e);
}

static void make_cached(struct pg_bodies *b, struct pg_body *e)
{
    e->committed = 1;
    e->next = NULL;
    e->prev = b->tail;
    if (b->tail != NULL)
        b->tail->next = e;
    else
        b->head = e;
    b->tail = e;
    b->cached_bytes += e->len + e->ext_len;
    while (b->cached_bytes > b->budget && b->head != NULL)
        pg_body_drop(b, b->head);
}

/* Drops the cache entries of a deleted or purged queue (pinned ones are a
 * later transaction's, which never writes to a deleted queue's id). */
static void drop_queue(struct pg_bodies *b, int64_t queue_id)
{
    struct pg_body *e = b->head, *next;

    for (; e != NULL; e = next) {
        next = e->next;
        if (e->queue_id == queue_id)
            pg_body_drop(b, e);
    }
}

void pg_bodies_committed(struct pg_bodies *b, const struct pg_wset *ws)
{
    for (size_t i = 0; i < ws->n; i++) {
        const struct pg_write *w = &ws->w[i];
        struct pg_body *e;

        if (w->stmt == PS_BODY_INSERT && w->body != NULL) {
            make_cached(b, w->body);
        } else if (w->stmt == PS_BODY_DELETE) {
            e = find(b, w->seq);
            if (e != NULL && e->committed)
                pg_body_drop(b, e);
        } else if (w->stmt == PS_QUEUE_DELETE_BODIES) {
            drop_queue(b, w->queue_id);
        } else if (w->stmt == PS_MSG_MOVE) {
            e = find(b, w->seq);
            if (e != NULL)
                e->queue_id = w->queue_id;
        }
    }
}

/* ---- store_msg_bodies ------------------------------------------------- */

static uint64_t be64(const unsigned char *p)
{
    uint64_t v = 0;

    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return v;
}

/* The one SELECT for every read not in memory (binary results). */
static PGresult *fetch_missing(struct pg_store *s, struct store_body_read *reads, size_t n,
                               int *rc)
{
    struct smq_buf arr;
    const char *vals[1];
    PGresult *r = NULL;

    buf_init(&arr);
    buf_puts(&arr, "{");
    pthread_mutex_lock(&s->lock);
    for (size_t i = 0; i < n; i++) {
        if (find(&s->bodies, reads[i].seq) == NULL)
            buf_printf(&arr, "%s%llu", arr.len > 1 ? "," : "",
                       (unsigned long long)reads[i].seq);
    }
    pthread_mutex_unlock(&s->lock);
    buf_puts(&arr, "}");
    *rc = buf_failed(&arr) ? SMQ_E_NOMEM : 0;
    if (*rc == 0 && arr.len > 2) {
        vals[0] = arr.data;
        r = PQexecPrepared(s->conn, pg_rows_name(PS_BODY_GET), 1, vals, NULL, NULL, 1);
        if (PQresultStatus(r) != PGRES_TUPLES_OK) {
            *rc = pg_store_fail("body read", PQerrorMessage(s->conn));
            PQclear(r);
            r = NULL;
        }
    }
    buf_free(&arr);
    return r;
}

static int append_row(PGresult *r, uint64_t seq, struct store_body_read *rd,
                      struct smq_buf *out)
{
    for (int i = 0; r != NULL && i < PQntuples(r); i++) {
        if (PQgetlength(r, i, 0) != 8 || be64((const unsigned char *)PQgetvalue(r, i, 0)) != seq)
            continue;
        rd->len = (size_t)PQgetlength(r, i, 1);
        rd->ext_len = PQgetisnull(r, i, 3) ? 0 : (size_t)PQgetlength(r, i, 3);
        buf_append(out, PQgetvalue(r, i, 1), rd->len);
        buf_append(out, PQgetvalue(r, i, 3), rd->ext_len);
        rd->md5.present = !PQgetisnull(r, i, 2) && PQgetlength(r, i, 2) == MNS_MD5_LEN;
        if (rd->md5.present)
            memcpy(rd->md5.bytes, PQgetvalue(r, i, 2), MNS_MD5_LEN);
        return 0;
    }
    return SMQ_E_MESSAGE_NOT_EXIST;
}

static int append_one(struct pg_store *s, PGresult *r, struct store_body_read *rd,
                      struct smq_buf *out)
{
    struct pg_body *e = find(&s->bodies, rd->seq);

    rd->len = rd->ext_len = 0;
    rd->md5.present = false;
    if (e == NULL)
        return append_row(r, rd->seq, rd, out);
    rd->len = e->len;
    rd->ext_len = e->ext_len;
    buf_append(out, e->data, e->len + e->ext_len);
    rd->md5.present = e->has_md5;
    memcpy(rd->md5.bytes, e->md5, MNS_MD5_LEN);
    return 0;
}

/* Bodies are keyed by seq alone, as in the database.  A second try covers
 * the one race: the flush evicted an entry between the SELECT of the
 * misses and the copy (a body that is truly absent costs one more query). */
int pg_body_read(struct smq_store *base, struct store_body_read *reads, size_t n,
                 struct smq_buf *out)
{
    struct pg_store *s = pg_of(base);
    size_t start = out->len;
    int rc = SMQ_E_MESSAGE_NOT_EXIST;

    for (int attempt = 0; attempt < 2 && rc == SMQ_E_MESSAGE_NOT_EXIST; attempt++) {
        PGresult *r = fetch_missing(s, reads, n, &rc);
        if (out->len > start) {
            out->len = start;
            out->data[start] = '\0';
        }
        pthread_mutex_lock(&s->lock);
        for (size_t i = 0; rc == 0 && i < n; i++) {
            rc = append_one(s, r, &reads[i], out);
            if (rc == 0 && buf_failed(out))
                rc = SMQ_E_NOMEM;
        }
        pthread_mutex_unlock(&s->lock);
        PQclear(r);
    }
    return rc;
}
