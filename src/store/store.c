/*
 * store.c — owns the choice of storage backend and the dispatch of every
 * store_* call to it (store.h, store_backend.h), including what a call
 * means for a backend without the optional feature behind it.
 */
#include "store_backend.h"

#include <stdio.h>
#include <string.h>

#include "smqd/errors.h"

static const struct store_backend *backend_of(enum smq_store_backend b)
{
    switch (b) {
    case SMQ_STORE_SQLITE:
        return &store_sqlite_backend;
    case SMQ_STORE_POSTGRESQL:
        return &store_pg_backend;
    }
    return NULL;
}

int store_open(const struct store_config *cfg, struct smq_store **out, char *err,
               size_t err_size)
{
    const struct store_backend *be = backend_of(cfg->backend);
    int rc;

    *out = NULL;
    if (be == NULL) {
        snprintf(err, err_size, "unknown storage backend %d", (int)cfg->backend);
        return SMQ_E_INTERNAL;
    }
    rc = be->open(cfg, out, err, err_size);
    if (rc == 0)
        (*out)->be = be;
    return rc;
}

const char *store_backend_name(const struct smq_store *s)
{
    return s->be->name;
}

void store_close(struct smq_store *s)
{
    if (s != NULL)
        s->be->close(s);
}

/* ---- transactions and durability ---- */

int store_begin(struct smq_store *s)
{
    return s->be->begin(s);
}

int store_commit(struct smq_store *s)
{
    return s->be->commit(s);
}

void store_rollback(struct smq_store *s)
{
    s->be->rollback(s);
}

int store_savepoint(struct smq_store *s)
{
    return s->be->savepoint(s);
}

int store_release(struct smq_store *s)
{
    return s->be->release(s);
}

void store_rollback_to(struct smq_store *s)
{
    s->be->rollback_to(s);
}

int store_in_txn(struct smq_store *s)
{
    return s->be->in_txn(s);
}

int store_defer_fsync(struct smq_store *s)
{
    return s->be->defer_fsync(s);
}

int store_flush(struct smq_store *s)
{
    return s->be->flush(s);
}

int store_fence(struct smq_store *s, const char *holder_token, int64_t epoch)
{
    return s->be->fence != NULL ? s->be->fence(s, holder_token, epoch) : 0;
}

/* ---- metadata, queues, messages ---- */

int store_meta_get(struct smq_store *s, const char *key, struct smq_buf *out, int *found)
{
    return s->be->meta_get(s, key, out, found);
}

int store_meta_set(struct smq_store *s, const char *key, const void *value, size_t len)
{
    return s->be->meta_set(s, key, value, len);
}

int store_queue_insert(struct smq_store *s, const struct store_queue_rec *q)
{
    return s->be->queue_insert(s, q);
}

int store_queue_update(struct smq_store *s, const struct store_queue_rec *q)
{
    return s->be->queue_update(s, q);
}

int store_queue_delete(struct smq_store *s, int64_t queue_id)
{
    return s->be->queue_delete(s, queue_id);
}

int store_queue_purge(struct smq_store *s, int64_t queue_id)
{
    return s->be->queue_purge(s, queue_id);
}

int store_queue_load(struct smq_store *s,
                     int (*cb)(void *arg, const struct store_queue_rec *q), void *arg)
{
    return s->be->queue_load(s, cb, arg);
}

int store_msg_insert(struct smq_store *s, const struct store_msg_rec *m,
                     const struct store_msg_content *c)
{
    return s->be->msg_insert(s, m, c);
}

int store_msg_update(struct smq_store *s, const struct store_msg_rec *m)
{
    return s->be->msg_update(s, m);
}

int store_msg_move(struct smq_store *s, int64_t from_queue_id, const struct store_msg_rec *m)
{
    return s->be->msg_move(s, from_queue_id, m);
}

int store_msg_delete(struct smq_store *s, int64_t queue_id, uint64_t seq)
{
    return s->be->msg_delete(s, queue_id, seq);
}

int store_msg_bodies(struct smq_store *s, struct store_body_read *reads, size_t n,
                     struct smq_buf *out)
{
    return n > 0 ? s->be->msg_bodies(s, reads, n, out) : 0;
}

int store_msg_load(struct smq_store *s,
                   int (*cb)(void *arg, const struct store_msg_rec *m), void *arg)
{
    return s->be->msg_load(s, cb, arg);
}

/* ---- topics ---- */

int store_topic_insert(struct smq_store *s, const struct store_topic_rec *t)
{
    return s->be->topic_insert(s, t);
}

int store_topic_update(struct smq_store *s, const struct store_topic_rec *t)
{
    return s->be->topic_update(s, t);
}

int store_topic_delete(struct smq_store *s, int64_t topic_id)
{
    return s->be->topic_delete(s, topic_id);
}

int store_topic_load(struct smq_store *s,
                     int (*cb)(void *arg, const struct store_topic_rec *t), void *arg)
{
    return s->be->topic_load(s, cb, arg);
}

int store_sub_insert(struct smq_store *s, const struct store_sub_rec *sub)
{
    return s->be->sub_insert(s, sub);
}

int store_sub_update(struct smq_store *s, const struct store_sub_rec *sub)
{
    return s->be->sub_update(s, sub);
}

int store_sub_delete(struct smq_store *s, int64_t sub_id)
{
    return s->be->sub_delete(s, sub_id);
}

int store_sub_load(struct smq_store *s,
                   int (*cb)(void *arg, const struct store_sub_rec *sub), void *arg)
{
    return s->be->sub_load(s, cb, arg);
}

int store_tmsg_insert(struct smq_store *s, const struct store_tmsg_rec *m, const void *body,
                      size_t body_len)
{
    return s->be->tmsg_insert(s, m, body, body_len);
}

int store_tmsg_delete(struct smq_store *s, uint64_t seq)
{
    return s->be->tmsg_delete(s, seq);
}

int store_tmsg_body(struct smq_store *s, uint64_t seq, struct smq_buf *out)
{
    return s->be->tmsg_body(s, seq, out);
}

int store_tmsg_load(struct smq_store *s,
                    int (*cb)(void *arg, const struct store_tmsg_rec *m), void *arg)
{
    return s->be->tmsg_load(s, cb, arg);
}

int store_notif_insert(struct smq_store *s, const struct store_notif_rec *n)
{
    return s->be->notif_insert(s, n);
}

int store_notif_update(struct smq_store *s, const struct store_notif_rec *n)
{
    return s->be->notif_update(s, n);
}

int store_notif_delete(struct smq_store *s, int64_t sub_id, uint64_t seq)
{
    return s->be->notif_delete(s, sub_id, seq);
}

int store_notif_load(struct smq_store *s,
                     int (*cb)(void *arg, const struct store_notif_rec *n), void *arg)
{
    return s->be->notif_load(s, cb, arg);
}

/* ---- the push signing key ---- */

int store_signing_key_get(struct smq_store *s, struct smq_buf *key_pem,
                          struct smq_buf *cert_pem, int *found)
{
    return s->be->signing_key_get(s, key_pem, cert_pem, found);
}

int store_signing_key_put_if_absent(struct smq_store *s, const char *key_pem,
                                    const char *cert_pem)
{
    return s->be->signing_key_put_if_absent(s, key_pem, cert_pem);
}

/* ---- optional upkeep of a local file ---- */

int store_reserve_init(struct smq_store *s, const char *db_path, uint64_t bytes)
{
    return s->be->reserve_init != NULL ? s->be->reserve_init(s, db_path, bytes) : 0;
}

int store_reserve_restore(struct smq_store *s, uint64_t keep_free)
{
    return s->be->reserve_restore != NULL ? s->be->reserve_restore(s, keep_free) : 0;
}

uint64_t store_reserve_bytes(const struct smq_store *s)
{
    return s->be->reserve_bytes != NULL ? s->be->reserve_bytes(s) : 0;
}

void store_reserve_release(struct smq_store *s)
{
    if (s->be->reserve_release != NULL)
        s->be->reserve_release(s);
}

int store_checkpoint(struct smq_store *s)
{
    return s->be->checkpoint != NULL ? s->be->checkpoint(s) : 0;
}

const char *store_wal_path(const struct smq_store *s)
{
    return s->be->wal_path != NULL ? s->be->wal_path(s) : NULL;
}

void store_no_checkpoint_on_close(struct smq_store *s)
{
    if (s->be->no_checkpoint_on_close != NULL)
        s->be->no_checkpoint_on_close(s);
}

int store_file_stats(struct smq_store *s, struct store_file_stats *out)
{
    memset(out, 0, sizeof *out);
    return s->be->file_stats != NULL ? s->be->file_stats(s, out) : 0;
}

int store_reclaim(struct smq_store *s, unsigned max_pages, uint64_t *freed)
{
    *freed = 0;
    return s->be->reclaim != NULL ? s->be->reclaim(s, max_pages, freed) : 0;
}

int store_integrity_check(struct smq_store *s, char *err, size_t err_size)
{
    if (err != NULL && err_size > 0)
        err[0] = '\0';
    return s->be->integrity_check != NULL ? s->be->integrity_check(s, err, err_size) : 0;
}

/* ---- test seams ---- */

void store_fault_inject(struct smq_store *s, unsigned after_n_writes, int fail_commit)
{
    if (s->be->fault_inject != NULL)
        s->be->fault_inject(s, after_n_writes, fail_commit, 0);
}

void store_fault_inject_full(struct smq_store *s, unsigned after_n_writes)
{
    if (s->be->fault_inject != NULL)
        s->be->fault_inject(s, after_n_writes, 0, 1);
}

void store_fault_inject_load(struct smq_store *s, unsigned after_n_rows)
{
    if (s->be->fault_inject_load != NULL)
        s->be->fault_inject_load(s, after_n_rows);
}
