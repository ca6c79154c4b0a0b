/*
 * pg_txn.c — owns the PostgreSQL backend's transactions (pg_store.h): the
 * write set a transaction buffers, savepoints as marks into it, commit
 * (sent at once, or queued after store_defer_fsync), store_flush, and the
 * one pipelined round trip that sends write sets as one PostgreSQL
 * transaction with the fence first.
 *
 * Why buffered: a commit is a network round trip, and the engine thread
 * must not pay one per statement.  So a write only appends to the write
 * set and cannot fail but for memory; whatever the database has to say
 * comes back at commit (docs/architecture.md, "The PostgreSQL backend").
 */
#include "pg_store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "smqd/errors.h"
#include "smqd/log.h"

/* ---- write sets ------------------------------------------------------- */

/* Frees the writes of ws from index n on.  drop_bodies: they were never
 * committed, so their pinned bodies go too (otherwise the bookkeeping
 * after the commit has made them cache entries already). */
static void wset_cut(struct pg_store *s, struct pg_wset *ws, size_t n, int drop_bodies)
{
    pthread_mutex_lock(&s->lock);
    for (size_t i = n; i < ws->n; i++) {
        pg_write_free(&ws->w[i]);
        if (drop_bodies && ws->w[i].body != NULL)
            pg_body_drop(&s->bodies, ws->w[i].body);
    }
    pthread_mutex_unlock(&s->lock);
    ws->n = n < ws->n ? n : ws->n;
}

static void wset_free(struct pg_store *s, struct pg_wset *ws, int drop_bodies)
{
    wset_cut(s, ws, 0, drop_bodies);
    free(ws->w);
    free(ws);
}

static int write_fault_due(struct pg_store *s)
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

void pg_write_free(const struct pg_write *w)
{
    free(w->owned);
    free(w->spill);
}

int pg_txn_write(struct pg_store *s, const struct pg_write *w)
{
    struct pg_wset *ws = &s->txn;
    int rc = w->nomem ? SMQ_E_NOMEM : 0;

    if (rc == 0 && write_fault_due(s)) {
        pg_err_fail(pg_stmt_name(w->stmt), s->fault_full ? "disk full (injected)"
                                                         : "I/O error (injected)");
        rc = s->fault_full ? SMQ_E_STORAGE_FULL : SMQ_E_INTERNAL;
    }
    if (rc == 0 && ws->n == ws->cap) {
        size_t cap = ws->cap ? ws->cap * 2 : 64;
        struct pg_write *p = realloc(ws->w, cap * sizeof *p);
        if (p != NULL) {
            ws->w = p;
            ws->cap = cap;
        }
        rc = p != NULL ? 0 : SMQ_E_NOMEM;
    }
    if (rc != 0) {                /* what w owns goes with it */
        pg_write_free(w);
        free(w->body);
        return rc;
    }
    ws->w[ws->n++] = *w;
    if (w->body != NULL) {
        pthread_mutex_lock(&s->lock);
        pg_body_pin(&s->bodies, w->body);
        pthread_mutex_unlock(&s->lock);
    }
    return 0;
}

/* ---- sending ---------------------------------------------------------- */

static int send_write(PGconn *conn, const struct pg_write *w)
{
    const char *vals[PG_MAX_PARAMS];
    int lens[PG_MAX_PARAMS], fmts[PG_MAX_PARAMS];

    for (int i = 0; i < w->n; i++) {
        vals[i] = w->off[i] >= 0    ? pg_write_text(w) + w->off[i]
                  : w->off[i] == -1 ? w->bin[i]
                                    : NULL;
        lens[i] = w->off[i] == -1 ? w->len[i] : 0;
        fmts[i] = w->off[i] == -1;
    }
    return PQsendQueryPrepared(conn, pg_stmt_name(w->stmt), w->n, vals, lens, fmts, 0);
}

/* BEGIN, the fence (if set), every write, COMMIT; *count of them queued. */
static int send_all(struct pg_store *s, PGconn *conn, struct pg_wset *sets, int *count)
{
    char epoch[24], token[PG_FENCE_TOKEN_MAX];
    const char *fence[2] = {token, epoch};
    int ok = PQsendQueryParams(conn, "BEGIN", 0, NULL, NULL, NULL, NULL, 0), fenced;

    *count = ok;
    /* Copied under the lock: the engine thread may replace the token. */
    pthread_mutex_lock(&s->lock);
    fenced = s->fence_token != NULL;
    snprintf(token, sizeof token, "%s", fenced ? s->fence_token : "");
    snprintf(epoch, sizeof epoch, "%lld", (long long)s->fence_epoch);
    pthread_mutex_unlock(&s->lock);
    if (ok && fenced) {
        ok = PQsendQueryPrepared(conn, pg_stmt_name(PS_FENCE), 2, fence, NULL, NULL, 0);
        *count += ok;
    }
    for (struct pg_wset *ws = sets; ok && ws != NULL; ws = ws->next) {
        for (size_t i = 0; ok && i < ws->n; i++) {
            ok = send_write(conn, &ws->w[i]);
            *count += ok;
        }
    }
    if (ok) {
        ok = PQsendQueryParams(conn, "COMMIT", 0, NULL, NULL, NULL, NULL, 0);
        *count += ok;
    }
    return ok && PQpipelineSync(conn) == 1;
}

/* Reads every result of the pipeline up to its sync; the first error's
 * SQLSTATE and message are kept. */
static int collect(PGconn *conn, int count, char *state, char *msg, size_t msg_size)
{
    int failed = 0;

    for (int i = 0; i <= count; i++) {
        PGresult *r = PQgetResult(conn);
        ExecStatusType st;
        if (r == NULL) {
            snprintf(msg, msg_size, "%s", PQerrorMessage(conn));
            return 1;         /* the connection is gone */
        }
        st = PQresultStatus(r);
        if (st == PGRES_FATAL_ERROR && !failed) {
            const char *code = PQresultErrorField(r, PG_DIAG_SQLSTATE);
            snprintf(state, 6, "%s", code != NULL ? code : "");
            snprintf(msg, msg_size, "%s", PQresultErrorMessage(r));
        }
        /* Anything but a result or the sync (a bad response, say) fails it. */
        failed |= st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK && st != PGRES_PIPELINE_SYNC;
        PQclear(r);
        if (st != PGRES_PIPELINE_SYNC)
            PQclear(PQgetResult(conn));     /* each query's results end with NULL */
    }
    return failed;
}

static void set_broken(struct pg_store *s, int rc);

/* What a failed transaction's SQLSTATE means to the caller: fenced
 * (nothing applied), the disk of the database full (disk_full, 53100:
 * the engine then refuses only what grows data, as for SQLite's
 * SQLITE_FULL), or anything else.  The rest of class 53 (out of memory,
 * too many connections, a configuration limit) is not a full disk, and
 * freeing space would not help it. */
static int failure_rc(const char *state)
{
    if (strcmp(state, "SMQF1") == 0)
        return SMQ_E_SERVICE_UNAVAILABLE;
    if (strcmp(state, "53100") == 0)
        return SMQ_E_STORAGE_FULL;
    return SMQ_E_INTERNAL;
}

/* The one log line of a failed transaction, naming a cause an operator
 * acts on (class 53: the database server's resources) before the
 * server's own words. */
static void log_failure(const char *state, const char *msg)
{
    char line[640];

    if (msg[0] == '\0')
        msg = "the server ended the connection";
    if (strcmp(state, "53100") == 0)
        snprintf(line, sizeof line, "PostgreSQL is out of disk space (53100): %s", msg);
    else if (strncmp(state, "53", 2) == 0)
        snprintf(line, sizeof line, "PostgreSQL is out of resources (%s): %s", state, msg);
    else
        snprintf(line, sizeof line, "%s", msg);
    pg_err_fail("commit", line);
}

static int send_sets(struct pg_store *s, PGconn *conn, struct pg_wset *sets, int *zero_rows,
                     int quiet_zero)
{
    char state[6] = "", msg[512] = "";
    int count = 0, failed = 1, rc, dirty = 1;

    *zero_rows = 0;
    if (PQpipelineStatus(conn) == PQ_PIPELINE_OFF && PQenterPipelineMode(conn) == 1) {
        if (send_all(s, conn, sets, &count)) {
            failed = collect(conn, count, state, msg, sizeof msg);
            dirty = 0;
        } else {
            snprintf(msg, sizeof msg, "%s", PQerrorMessage(conn));
        }
        /* Results left unread (a send that failed part-way) keep the
         * connection in its pipeline: the next transaction would follow
         * them, so the store must not send on it again. */
        dirty |= PQexitPipelineMode(conn) != 1;
    } else {
        snprintf(msg, sizeof msg, "%s", PQerrorMessage(conn));
    }
    if (dirty)
        set_broken(s, SMQ_E_INTERNAL);
    if (PQstatus(conn) == CONNECTION_OK && PQtransactionStatus(conn) != PQTRANS_IDLE)
        PQclear(PQexec(conn, "ROLLBACK"));
    if (!failed)
        return 0;
    *zero_rows = strcmp(state, "SMQE1") == 0;
    rc = failure_rc(state);
    if (!(*zero_rows && quiet_zero))
        log_failure(state, msg);
    return rc;
}

/* ---- transactions ----------------------------------------------------- */

static int broken(struct pg_store *s)
{
    int rc;

    pthread_mutex_lock(&s->lock);
    rc = s->broken;
    pthread_mutex_unlock(&s->lock);
    return rc;
}

/* A full disk is a known outcome only where the caller learns it at once;
 * as the state of a broken store it is an unknown one (store.h). */
static void set_broken(struct pg_store *s, int rc)
{
    pthread_mutex_lock(&s->lock);
    if (s->broken == 0)
        s->broken = rc == SMQ_E_STORAGE_FULL ? SMQ_E_INTERNAL : rc;
    pthread_cond_broadcast(&s->flushed);     /* a commit waiting for the flush */
    pthread_mutex_unlock(&s->lock);
}

int pg_txn_begin(struct smq_store *base)
{
    struct pg_store *s = pg_of(base);
    int rc = broken(s);

    if (rc != 0)
        return rc;
    if (s->in_txn)
        return pg_err_fail("BEGIN", "a transaction is already open");
    s->in_txn = 1;
    s->nmarks = 0;
    return 0;
}

/* What a write set holds in memory until its flush ends: its writes and
 * the bodies they pinned (a meta value copy is small beside them). */
static size_t wset_bytes(const struct pg_wset *ws)
{
    size_t bytes = sizeof *ws + ws->cap * sizeof *ws->w;

    for (size_t i = 0; i < ws->n; i++) {
        bytes += ws->w[i].spill_cap;
        if (ws->w[i].body != NULL)
            bytes += sizeof *ws->w[i].body + ws->w[i].body->len + ws->w[i].body->ext_len;
    }
    return bytes;
}

/*
 * Waits until the write sets queued before this commit and not yet
 * flushed hold at most the cap (all: nothing at all), or the store broke
 * (its code then).
 * Every one of them was already handed to the flush thread (syncer.h: the
 * engine calls syncer_committed after each commit that returned), so the
 * flush that takes them is coming; this commit's own set is not counted,
 * or a set larger than the cap would wait for a flush nobody asked for.
 */
static int wait_flushed(struct pg_store *s, int all)
{
    int announced = 0, rc;

    pthread_mutex_lock(&s->lock);
    while (s->broken == 0 && s->pending_bytes > (all ? 0 : s->queue_cap)) {
        if (!announced && s->seams != NULL && s->seams->on_commit_wait != NULL) {
            struct pg_test_seams *t = s->seams;
            pthread_mutex_unlock(&s->lock);
            t->on_commit_wait(t->arg);
            pthread_mutex_lock(&s->lock);
            announced = 1;
            continue;                    /* the flush may have ended meanwhile */
        }
        pthread_cond_wait(&s->flushed, &s->lock);
    }
    rc = s->broken;
    pthread_mutex_unlock(&s->lock);
    return rc;
}

/* Hands the open transaction's writes to the flush, oldest first, once
 * the queue is below its cap (PG_QUEUE_CAP_BYTES): back-pressure on the
 * engine thread when PostgreSQL is slower than it. */
static int queue_txn(struct pg_store *s)
{
    struct pg_wset *ws;
    int rc = wait_flushed(s, 0);

    if (rc != 0)
        return rc;
    if ((ws = malloc(sizeof *ws)) == NULL)
        return SMQ_E_NOMEM;
    *ws = s->txn;
    ws->next = NULL;
    ws->bytes = wset_bytes(ws);
    memset(&s->txn, 0, sizeof s->txn);
    pthread_mutex_lock(&s->lock);
    *s->queued_tail = ws;
    s->queued_tail = &ws->next;
    s->pending_bytes += ws->bytes;
    pthread_mutex_unlock(&s->lock);
    return 0;
}

/* Sends the open transaction and waits for its COMMIT. */
static int send_txn(struct pg_store *s, int implicit, int *zero_rows)
{
    int rc = send_sets(s, s->conn, &s->txn, zero_rows, implicit);

    if (rc != 0) {
        /* An implicit one's outcome is known (rolled back) unless the
         * connection went, and so is a full disk's (the server refused it
         * and rolled it back; the engine reloads its memory, as after
         * SQLITE_FULL); any other group commit failure breaks the store. */
        int known = implicit || rc == SMQ_E_STORAGE_FULL;
        if (!known || PQstatus(s->conn) != CONNECTION_OK)
            set_broken(s, rc);
        return rc;
    }
    pthread_mutex_lock(&s->lock);
    pg_bodies_committed(&s->bodies, &s->txn);
    pthread_mutex_unlock(&s->lock);
    wset_cut(s, &s->txn, 0, 0);
    return 0;
}

static int commit_txn(struct pg_store *s, int implicit, int *zero_rows)
{
    int rc = broken(s);

    *zero_rows = 0;
    if (rc != 0)
        return rc;
    if (s->fault_commit) {
        s->fault_commit = 0;
        return pg_err_fail("commit", "I/O error (injected)");
    }
    /* A write outside begin/commit is sent at once even after
     * store_defer_fsync: queued, its failure (a missing row, a full disk)
     * would reach no caller and break the store at the flush, and nobody
     * would hold an answer for that flush (only the engine's commits call
     * syncer_committed).  It follows the queued sets, so it waits for them
     * to be flushed first (such writes are rare: admin tools). */
    if (s->txn.n > 0 && s->deferred && !implicit)
        rc = queue_txn(s);
    else if (s->txn.n > 0)
        rc = s->deferred ? wait_flushed(s, 1) : 0;
    if (rc == 0 && s->txn.n > 0 && (!s->deferred || implicit))
        rc = send_txn(s, implicit, zero_rows);
    if (rc == 0)
        s->in_txn = 0;
    return rc;
}

int pg_txn_commit(struct smq_store *base)
{
    int zero_rows;

    return commit_txn(pg_of(base), 0, &zero_rows);
}

void pg_txn_rollback(struct smq_store *base)
{
    struct pg_store *s = pg_of(base);

    wset_cut(s, &s->txn, 0, 1);
    s->in_txn = 0;
    s->nmarks = 0;
}

int pg_txn_implicit_begin(struct pg_store *s, int *implicit)
{
    *implicit = !s->in_txn;
    return *implicit ? pg_txn_begin(&s->base) : 0;
}

int pg_txn_implicit_end(struct pg_store *s, int implicit, int rc, int not_exist_rc)
{
    int zero_rows = 0;

    if (!implicit)
        return rc;
    if (rc == 0)
        rc = commit_txn(s, 1, &zero_rows);
    if (rc != 0)
        pg_txn_rollback(&s->base);
    return zero_rows && not_exist_rc != 0 ? not_exist_rc : rc;
}

int pg_txn_savepoint(struct smq_store *base)
{
    struct pg_store *s = pg_of(base);

    if (s->nmarks == s->mark_cap) {
        size_t cap = s->mark_cap ? s->mark_cap * 2 : 16;
        size_t *p = realloc(s->marks, cap * sizeof *p);
        if (p == NULL)
            return SMQ_E_NOMEM;
        s->marks = p;
        s->mark_cap = cap;
    }
    s->marks[s->nmarks++] = s->txn.n;
    return 0;
}

int pg_txn_release(struct smq_store *base)
{
    struct pg_store *s = pg_of(base);

    if (s->nmarks > 0)
        s->nmarks--;
    return 0;
}

void pg_txn_rollback_to(struct smq_store *base)
{
    struct pg_store *s = pg_of(base);

    if (s->nmarks == 0)
        return;
    wset_cut(s, &s->txn, s->marks[--s->nmarks], 1);
}

int pg_txn_in_txn(struct smq_store *base)
{
    return pg_of(base)->in_txn;
}

int pg_txn_defer_fsync(struct smq_store *base)
{
    pg_of(base)->deferred = 1;
    return 0;
}

/* Every queued write set as one transaction on the flush connection; the
 * engine thread queues more meanwhile. */
int pg_txn_flush(struct smq_store *base)
{
    struct pg_store *s = pg_of(base);
    struct pg_wset *sets, *next;
    int rc, zero_rows;

    pthread_mutex_lock(&s->lock);
    rc = s->broken;
    sets = rc == 0 ? s->queued : NULL;
    if (sets != NULL) {
        s->inflight = sets;
        s->queued = NULL;
        s->queued_tail = &s->queued;
    }
    pthread_mutex_unlock(&s->lock);
    if (sets == NULL)
        return rc;
    rc = send_sets(s, s->flush_conn, sets, &zero_rows, 0);
    /* The engine's memory moved on after these commits: whatever the
     * cause (a full disk too), the store is broken and the outcome of what
     * was held is unknown (store.h). */
    rc = rc == SMQ_E_STORAGE_FULL ? SMQ_E_INTERNAL : rc;
    pthread_mutex_lock(&s->lock);
    for (struct pg_wset *ws = sets; ws != NULL; ws = ws->next) {
        if (rc == 0)
            pg_bodies_committed(&s->bodies, ws);
        s->pending_bytes -= ws->bytes;
    }
    if (rc != 0 && s->broken == 0)
        s->broken = rc;
    s->inflight = NULL;
    pthread_cond_broadcast(&s->flushed);
    pthread_mutex_unlock(&s->lock);
    for (; sets != NULL; sets = next) {
        next = sets->next;
        wset_free(s, sets, rc != 0);
    }
    return rc;
}

/* Drops what was never flushed (the caller did not ask for it). */
void pg_txn_free_all(struct pg_store *s)
{
    struct pg_wset *next;

    pg_txn_rollback(&s->base);
    free(s->txn.w);
    for (struct pg_wset *ws = s->queued; ws != NULL; ws = next) {
        next = ws->next;
        wset_free(s, ws, 1);
    }
    s->queued = NULL;
    free(s->marks);
}
