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
#include "pg_store.h"

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

/* The one SELECT for the misses (misses: a PostgreSQL array of seqs;
 * binary results). */
static PGresult *select_misses(struct pg_store *s, const struct smq_buf *misses, int *rc)
{
    const char *vals[1] = {misses->data};
    PGresult *r = PQexecPrepared(s->conn, pg_stmt_name(PS_BODY_GET), 1, vals, NULL, NULL, 1);

    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        *rc = pg_err_fail("body read", PQerrorMessage(s->conn));
        PQclear(r);
        r = NULL;
    }
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

/* In one hold of the lock: appends every body of reads found in memory to
 * out (off[i]: where, from out's start; SIZE_MAX for a miss) and lists
 * the misses in misses.  Returns how many missed. */
static size_t take_hits(struct pg_store *s, struct store_body_read *reads, size_t n,
                        size_t *off, struct smq_buf *out, struct smq_buf *misses)
{
    size_t start = out->len, nmiss = 0;

    buf_puts(misses, "{");
    pthread_mutex_lock(&s->lock);
    for (size_t i = 0; i < n; i++) {
        struct store_body_read *rd = &reads[i];
        struct pg_body *e = find(&s->bodies, rd->seq);

        rd->len = rd->ext_len = 0;
        rd->md5.present = false;
        off[i] = e != NULL ? out->len - start : SIZE_MAX;
        if (e == NULL) {
            buf_printf(misses, "%s%llu", nmiss++ > 0 ? "," : "", (unsigned long long)rd->seq);
            continue;
        }
        rd->len = e->len;
        rd->ext_len = e->ext_len;
        rd->md5.present = e->has_md5;
        memcpy(rd->md5.bytes, e->md5, MNS_MD5_LEN);
        buf_append(out, e->data, e->len + e->ext_len);
    }
    pthread_mutex_unlock(&s->lock);
    buf_puts(misses, "}");
    return nmiss;
}

/* Rebuilds out from start in the order asked: the hits taken before (moved
 * aside first), the misses from the rows r. */
static int merge(struct smq_buf *out, size_t start, const size_t *off,
                 struct store_body_read *reads, size_t n, PGresult *r)
{
    struct smq_buf hits;
    int rc = 0;

    buf_init(&hits);
    if (out->len > start)          /* no hits: out may have no memory yet */
        buf_append(&hits, out->data + start, out->len - start);
    out->len = start;
    for (size_t i = 0; rc == 0 && !buf_failed(&hits) && i < n; i++) {
        if (off[i] == SIZE_MAX)
            rc = append_row(r, reads[i].seq, &reads[i], out);
        else
            buf_append(out, hits.data + off[i], reads[i].len + reads[i].ext_len);
    }
    if (buf_failed(&hits))
        rc = SMQ_E_NOMEM;
    buf_free(&hits);
    return rc;
}

/*
 * Bodies are keyed by seq alone, as in the database.  The flush thread
 * evicts committed entries from the cache (make_cached) whenever it holds
 * the lock, so a body found in memory is copied in the same hold of the
 * lock that found it, and only the misses are left to the SELECT.  (Until
 * this was so, the hits were copied after the SELECT and an eviction in
 * between made the read fail: a second try covered one eviction, but the
 * oldest bodies, which a receive asks for first, are the ones evicted
 * first, so under load a second one came and a receive answered "no
 * message" for messages that were there.)  A miss is never a body only
 * memory has: a body stays pinned from its write until its COMMIT has
 * returned, so once not in memory it is in the database or deleted.
 * No two reads run at once (store_msg_bodies and s->conn are the engine
 * thread's alone, store.h), and an entry is freed only under the lock,
 * with no pointer to it kept past it: nothing is freed twice or used freed.
 */
int pg_body_read(struct smq_store *base, struct store_body_read *reads, size_t n,
                 struct smq_buf *out)
{
    struct pg_store *s = pg_of(base);
    size_t start = out->len, nmiss = 0, *off = malloc((n > 0 ? n : 1) * sizeof *off);
    struct smq_buf misses;
    PGresult *r = NULL;
    int rc = off != NULL ? 0 : SMQ_E_NOMEM;

    buf_init(&misses);
    if (rc == 0)
        nmiss = take_hits(s, reads, n, off, out, &misses);
    if (rc == 0 && (buf_failed(&misses) || buf_failed(out)))
        rc = SMQ_E_NOMEM;
    if (rc == 0 && s->seams != NULL && s->seams->on_body_misses != NULL)
        s->seams->on_body_misses(s->seams->arg);
    if (rc == 0 && nmiss > 0)
        r = select_misses(s, &misses, &rc);
    if (rc == 0 && nmiss > 0)
        rc = merge(out, start, off, reads, n, r);
    if (rc == 0 && buf_failed(out))
        rc = SMQ_E_NOMEM;
    if (rc != 0 && out->len > start) {
        out->len = start;
        out->data[start] = '\0';
    }
    PQclear(r);
    buf_free(&misses);
    free(off);
    return rc;
}
