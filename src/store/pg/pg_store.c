/*
 * pg_store.c — owns the PostgreSQL backend (pg_store.h): its table of
 * operations, opening (the two connections, their settings, the schema,
 * the prepared statements), the fence, the fault seams, and closing.  The
 * backend's files are the only ones in the daemon that include libpq-fe.h
 * and hold SQL.
 *
 * Two connections because store_flush runs on the syncer thread while the
 * engine thread goes on reading and committing (store.h): a libpq
 * connection is not for two threads at once.  docs/architecture.md ("The
 * PostgreSQL backend") has the whole design.
 */
#include "pg_store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg_conn.h"
#include "smqd/errors.h"

static void set_err(char *err, size_t err_size, const char *what, PGconn *conn)
{
    snprintf(err, err_size, "PostgreSQL: %s: %s", what,
             conn != NULL ? PQerrorMessage(conn) : "out of memory");
    /* libpq's messages end in a newline and may have more lines: keep one. */
    err[strcspn(err, "\n")] = '\0';
}

/* synchronous_commit is set per session because a COMMIT that returned is
 * our durability; pg_conn.h has the rest of the connection's settings. */
static int connect_one(const struct store_config *cfg, struct pg_store *s, PGconn **out,
                       char *err, size_t err_size)
{
    char why[1024];
    PGresult *r;

    if (pg_conn_open(cfg->dsn != NULL ? cfg->dsn : "",
                     cfg->app_name != NULL ? cfg->app_name : "smqd", 0, &s->last_host, out,
                     why, sizeof why) != 0) {
        snprintf(err, err_size, "PostgreSQL: cannot connect: %s", why);
        return SMQ_E_INTERNAL;
    }
    r = PQexec(*out, "SET synchronous_commit = on");
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
        PQclear(r);
        set_err(err, err_size, "cannot set synchronous_commit", *out);
        return SMQ_E_INTERNAL;
    }
    PQclear(r);
    return 0;
}

static struct pg_store *store_new(void)
{
    struct pg_store *s = calloc(1, sizeof *s);

    if (s == NULL)
        return NULL;
    if (pg_bodies_init(&s->bodies, PG_BODY_CACHE_BYTES) != 0) {
        free(s);
        return NULL;
    }
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->flushed, NULL);
    s->queue_cap = PG_QUEUE_CAP_BYTES;
    s->queued_tail = &s->queued;
    s->fault_writes_left = STORE_FAULT_OFF;
    s->fault_load_left = STORE_FAULT_OFF;
    return s;
}

static void store_free(struct pg_store *s)
{
    pg_txn_free_all(s);
    pg_bodies_free(&s->bodies);
    PQfinish(s->conn);             /* NULL is a harmless no-op */
    PQfinish(s->flush_conn);
    pthread_cond_destroy(&s->flushed);
    pthread_mutex_destroy(&s->lock);
    free(s->fence_token);
    free(s);
}

static int pg_open(const struct store_config *cfg, struct smq_store **out, char *err,
                   size_t err_size)
{
    struct pg_store *s = store_new();

    *out = NULL;
    if (s == NULL) {
        snprintf(err, err_size, "PostgreSQL: out of memory");
        return SMQ_E_INTERNAL;
    }
    if (connect_one(cfg, s, &s->conn, err, err_size) != 0 ||
        pg_schema_migrate(s->conn, err, err_size) != 0 ||
        pg_stmt_prepare(s->conn, err, err_size) != 0 ||
        connect_one(cfg, s, &s->flush_conn, err, err_size) != 0 ||
        pg_stmt_prepare(s->flush_conn, err, err_size) != 0) {
        store_free(s);
        return SMQ_E_INTERNAL;
    }
    *out = &s->base;
    return 0;
}

static void pg_close(struct smq_store *base)
{
    store_free(pg_of(base));
}

/* Read by the flush thread at every send (pg_txn.c), hence the lock. */
static int pg_fence(struct smq_store *base, const char *holder_token, int64_t epoch)
{
    struct pg_store *s = pg_of(base);
    char *tok;

    if (strlen(holder_token) >= PG_FENCE_TOKEN_MAX)
        return SMQ_E_INVALID_ARGUMENT;
    tok = strdup(holder_token);
    if (tok == NULL)
        return SMQ_E_NOMEM;
    pthread_mutex_lock(&s->lock);
    free(s->fence_token);
    s->fence_token = tok;
    s->fence_epoch = epoch;
    pthread_mutex_unlock(&s->lock);
    return 0;
}

static void pg_fault_inject(struct smq_store *base, unsigned after_n_writes, int fail_commit,
                            int as_full)
{
    struct pg_store *s = pg_of(base);

    s->fault_writes_left = after_n_writes;
    s->fault_full = as_full;
    if (!as_full)                /* the full-disk variant leaves a commit fault as it is */
        s->fault_commit = fail_commit;
}

void pg_store_test_seams(struct smq_store *base, struct pg_test_seams *t)
{
    struct pg_store *s = pg_of(base);

    pthread_mutex_lock(&s->lock);
    s->seams = t;
    if (t != NULL) {
        s->queue_cap = t->queue_cap;
        s->bodies.budget = t->body_budget;
    }
    pthread_mutex_unlock(&s->lock);
}

static void pg_fault_inject_load(struct smq_store *base, unsigned after_n_rows)
{
    pg_of(base)->fault_load_left = after_n_rows;
}

/* The file-upkeep operations stay NULL: there is no local file (store.c
 * says what each call then does). */
const struct store_backend store_pg_backend = {
    .name = "postgresql",
    .open = pg_open,
    .close = pg_close,
    .begin = pg_txn_begin,
    .commit = pg_txn_commit,
    .rollback = pg_txn_rollback,
    .savepoint = pg_txn_savepoint,
    .release = pg_txn_release,
    .rollback_to = pg_txn_rollback_to,
    .in_txn = pg_txn_in_txn,
    .defer_fsync = pg_txn_defer_fsync,
    .flush = pg_txn_flush,
    .meta_get = pg_rows_meta_get,
    .meta_set = pg_rows_meta_set,
    .queue_insert = pg_rows_queue_insert,
    .queue_update = pg_rows_queue_update,
    .queue_delete = pg_rows_queue_delete,
    .queue_purge = pg_rows_queue_purge,
    .queue_load = pg_rows_queue_load,
    .msg_insert = pg_rows_msg_insert,
    .msg_update = pg_rows_msg_update,
    .msg_move = pg_rows_msg_move,
    .msg_delete = pg_rows_msg_delete,
    .msg_bodies = pg_body_read,
    .msg_load = pg_rows_msg_load,
    .topic_insert = pg_topic_insert,
    .topic_update = pg_topic_update,
    .topic_delete = pg_topic_delete,
    .topic_load = pg_topic_load,
    .sub_insert = pg_sub_insert,
    .sub_update = pg_sub_update,
    .sub_delete = pg_sub_delete,
    .sub_load = pg_sub_load,
    .tmsg_insert = pg_tmsg_insert,
    .tmsg_delete = pg_tmsg_delete,
    .tmsg_body = pg_tmsg_body,
    .tmsg_load = pg_tmsg_load,
    .notif_insert = pg_notif_insert,
    .notif_update = pg_notif_update,
    .notif_delete = pg_notif_delete,
    .notif_load = pg_notif_load,
    .signing_key_get = pg_signing_key_get,
    .signing_key_put_if_absent = pg_signing_key_put_if_absent,
    .fence = pg_fence,
    .fault_inject = pg_fault_inject,
    .fault_inject_load = pg_fault_inject_load,
};
