/*
 * store_backend.h — what a storage backend implements: the table of
 * operations store.c dispatches every store_* call to (store.h has the
 * contract of each).  Only store.c and the backends include this.
 *
 * A backend embeds struct smq_store as the first member of its own handle
 * and returns it from open; every operation gets it back.  Operations
 * marked optional may be NULL: store.c then does what store.h says a
 * backend without that feature does.
 */
#ifndef SMQD_STORE_BACKEND_H
#define SMQD_STORE_BACKEND_H

#include "smqd/store.h"

struct store_backend;

struct smq_store {
    const struct store_backend *be;
};

struct store_backend {
    const char *name;
    int (*open)(const struct store_config *cfg, struct smq_store **out, char *err,
                size_t err_size);
    void (*close)(struct smq_store *s);

    int (*begin)(struct smq_store *s);
    int (*commit)(struct smq_store *s);
    void (*rollback)(struct smq_store *s);
    int (*savepoint)(struct smq_store *s);
    int (*release)(struct smq_store *s);
    void (*rollback_to)(struct smq_store *s);
    int (*in_txn)(struct smq_store *s);
    int (*defer_fsync)(struct smq_store *s);
    int (*flush)(struct smq_store *s);

    int (*meta_get)(struct smq_store *s, const char *key, struct smq_buf *out, int *found);
    int (*meta_set)(struct smq_store *s, const char *key, const void *value, size_t len);
    int (*queue_insert)(struct smq_store *s, const struct store_queue_rec *q);
    int (*queue_update)(struct smq_store *s, const struct store_queue_rec *q);
    int (*queue_delete)(struct smq_store *s, int64_t queue_id);
    int (*queue_purge)(struct smq_store *s, int64_t queue_id);
    int (*queue_load)(struct smq_store *s,
                      int (*cb)(void *arg, const struct store_queue_rec *q), void *arg);
    int (*msg_insert)(struct smq_store *s, const struct store_msg_rec *m,
                      const struct store_msg_content *c);
    int (*msg_update)(struct smq_store *s, const struct store_msg_rec *m);
    int (*msg_move)(struct smq_store *s, int64_t from_queue_id, const struct store_msg_rec *m);
    int (*msg_delete)(struct smq_store *s, int64_t queue_id, uint64_t seq);
    int (*msg_bodies)(struct smq_store *s, struct store_body_read *reads, size_t n,
                      struct smq_buf *out);
    int (*msg_load)(struct smq_store *s,
                    int (*cb)(void *arg, const struct store_msg_rec *m), void *arg);

    /* topics (docs/protocol.md §13) */
    int (*topic_insert)(struct smq_store *s, const struct store_topic_rec *t);
    int (*topic_update)(struct smq_store *s, const struct store_topic_rec *t);
    int (*topic_delete)(struct smq_store *s, int64_t topic_id);
    int (*topic_load)(struct smq_store *s,
                      int (*cb)(void *arg, const struct store_topic_rec *t), void *arg);
    int (*sub_insert)(struct smq_store *s, const struct store_sub_rec *sub);
    int (*sub_update)(struct smq_store *s, const struct store_sub_rec *sub);
    int (*sub_delete)(struct smq_store *s, int64_t sub_id);
    int (*sub_load)(struct smq_store *s,
                    int (*cb)(void *arg, const struct store_sub_rec *sub), void *arg);
    int (*tmsg_insert)(struct smq_store *s, const struct store_tmsg_rec *m, const void *body,
                       size_t body_len);
    int (*tmsg_delete)(struct smq_store *s, uint64_t seq);
    int (*tmsg_body)(struct smq_store *s, uint64_t seq, struct smq_buf *out);
    int (*tmsg_load)(struct smq_store *s,
                     int (*cb)(void *arg, const struct store_tmsg_rec *m), void *arg);
    int (*notif_insert)(struct smq_store *s, const struct store_notif_rec *n);
    int (*notif_update)(struct smq_store *s, const struct store_notif_rec *n);
    int (*notif_delete)(struct smq_store *s, int64_t sub_id, uint64_t seq);
    int (*notif_load)(struct smq_store *s,
                      int (*cb)(void *arg, const struct store_notif_rec *n), void *arg);

    /* the push signing key (docs/protocol.md §13.11) */
    int (*signing_key_get)(struct smq_store *s, struct smq_buf *key_pem,
                           struct smq_buf *cert_pem, int *found);
    int (*signing_key_put_if_absent)(struct smq_store *s, const char *key_pem,
                                     const char *cert_pem);

    /* optional: upkeep of a local database file */
    int (*reserve_init)(struct smq_store *s, const char *db_path, uint64_t bytes);
    int (*reserve_restore)(struct smq_store *s, uint64_t keep_free);
    void (*reserve_release)(struct smq_store *s);
    uint64_t (*reserve_bytes)(const struct smq_store *s);
    int (*checkpoint)(struct smq_store *s);
    const char *(*wal_path)(const struct smq_store *s);
    void (*no_checkpoint_on_close)(struct smq_store *s);
    int (*file_stats)(struct smq_store *s, struct store_file_stats *out);
    int (*reclaim)(struct smq_store *s, unsigned max_pages, uint64_t *freed);
    int (*integrity_check)(struct smq_store *s, char *err, size_t err_size);

    /* optional: a lease every commit is checked against (store_fence) */
    int (*fence)(struct smq_store *s, const char *holder_token, int64_t epoch);

    /* optional: test seams */
    void (*fault_inject)(struct smq_store *s, unsigned after_n_writes, int fail_commit,
                         int as_full);
    void (*fault_inject_load)(struct smq_store *s, unsigned after_n_rows);
};

/* The backends built in. */
extern const struct store_backend store_sqlite_backend;
extern const struct store_backend store_pg_backend;      /* pg_store.c */

#endif
