/*
 * pg_store.h — the PostgreSQL backend's insides, shared by its files and
 * nothing else: pg_store.c (the backend table, opening and closing),
 * pg_topic.c (the topics' rows), pg_rows.c (the buffered writes, loads and meta reads), pg_txn.c (the write
 * set, savepoints, commit and flush), pg_body.c (the bodies kept in memory
 * until committed, and the bounded cache of committed ones), pg_stmt.c (the
 * statements), pg_err.c (the log line of a failure) and pg_schema.c (the
 * schema, its migration and the refusals).  Calls go one way, in that
 * order: no file calls one listed before it.  The backend implements
 * store_backend.h; store.h has the contract; docs/architecture.md ("The
 * PostgreSQL backend") says how it keeps it.
 */
#ifndef SMQD_PG_STORE_H
#define SMQD_PG_STORE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "store_backend.h"

/* Every statement, prepared by name ("s<N>") on both connections at open. */
enum pg_stmt {
    PS_META_GET,
    PS_META_SET,
    PS_QUEUE_INSERT,
    PS_QUEUE_UPDATE,
    PS_QUEUE_DELETE_BODIES,
    PS_QUEUE_DELETE_MSGS,
    PS_QUEUE_DELETE,
    PS_QUEUE_LOAD,
    PS_MSG_INSERT,
    PS_BODY_INSERT,
    PS_MSG_UPDATE,
    PS_MSG_MOVE,
    PS_MSG_DELETE,
    PS_BODY_DELETE,
    PS_BODY_GET,
    PS_MSG_LOAD,
    PS_FENCE,
    /* topics (pg_topic.c) */
    PS_TOPIC_INSERT,
    PS_TOPIC_UPDATE,
    PS_TOPIC_DELETE_NOTIFS,
    PS_TOPIC_DELETE_SUBS,
    PS_TOPIC_DELETE_BODIES,
    PS_TOPIC_DELETE_MSGS,
    PS_TOPIC_DELETE,
    PS_TOPIC_LOAD,
    PS_SUB_INSERT,
    PS_SUB_UPDATE,
    PS_SUB_DELETE_NOTIFS,
    PS_SUB_DELETE,
    PS_SUB_LOAD,
    PS_TMSG_INSERT,
    PS_TBODY_INSERT,
    PS_TMSG_DELETE,
    PS_TBODY_DELETE,
    PS_TBODY_GET,
    PS_TMSG_LOAD,
    PS_NOTIF_INSERT,
    PS_NOTIF_UPDATE,
    PS_NOTIF_DELETE,
    PS_NOTIF_LOAD,
    PS__COUNT
};

#define PG_MAX_PARAMS 13
#define PG_FENCE_TOKEN_MAX 64  /* an application_name: below PostgreSQL's NAMEDATALEN */
/* Room inside a write for its text parameters, packed: enough for every
 * queue and message write (two queue names and eleven numbers).  A longer
 * one (a subscription's Endpoint is up to SMQ_ENDPOINT_MAX bytes) moves
 * its text to the heap (pg_w_text), so the common write stays small. */
#define PG_TEXT_ROOM 640

/* Committed bodies kept for receives, by bytes (pg_body.c). */
#define PG_BODY_CACHE_BYTES (64u << 20)
/* Write sets committed after store_defer_fsync but not yet flushed, by the
 * bytes they hold (their writes and pinned bodies): past this a commit
 * waits for the flush (pg_txn.c).  The engine would otherwise outrun a
 * slow PostgreSQL without bound, and every queued body stays in memory
 * until its flush; 64 MiB is many runs of full batches (a run rarely
 * holds more than a few MiB) yet small beside the body cache's budget. */
#define PG_QUEUE_CAP_BYTES (64u << 20)

/* A body (with its extensions and MD5) this store wrote or read. */
struct pg_body {
    struct pg_body *hnext;             /* hash chain */
    struct pg_body *prev, *next;       /* cache FIFO (committed entries only) */
    uint64_t seq;
    int64_t queue_id;
    int committed;                     /* 0: pinned by an unflushed write */
    size_t len, ext_len;
    int has_md5;
    unsigned char md5[16];
    unsigned char data[];              /* body, then ext */
};

/* One buffered write statement: text parameters packed in text[] (by
 * offset, so the write can move with its array), or in spill once they
 * outgrow it; binary ones by pointer. */
struct pg_write {
    enum pg_stmt stmt;
    int n;
    int16_t off[PG_MAX_PARAMS];        /* >= 0: text at pg_write_text + off; -1: bin[];
                                        * -2: NULL */
    const void *bin[PG_MAX_PARAMS];
    int len[PG_MAX_PARAMS];
    void *owned;                       /* a value copy, freed with the write */
    char *spill;                       /* the text, when text[] was too small; freed
                                        * with the write */
    size_t spill_cap;
    int nomem;                         /* building it ran out of memory */
    struct pg_body *body;              /* PS_BODY_INSERT: its pinned entry */
    int64_t queue_id;                  /* for the body bookkeeping after commit */
    uint64_t seq;
    size_t used;
    char text[PG_TEXT_ROOM];
};

struct pg_wset {
    struct pg_wset *next;              /* queued for the flush, oldest first */
    struct pg_write *w;
    size_t n, cap;
    size_t bytes;                      /* counted in pending_bytes while queued */
};

struct pg_bodies {
    struct pg_body **bucket;
    size_t nbucket, count;
    struct pg_body *head, *tail;       /* committed, oldest first */
    size_t cached_bytes, budget;
};

struct pg_store {
    struct smq_store base;             /* first: the store's handle is this */
    PGconn *conn;                      /* the engine thread's */
    PGconn *flush_conn;                /* store_flush's (the syncer thread) */
    int last_host;                     /* the dsn's host that answered (pg_conn.h) */
    int in_txn, deferred;
    struct pg_wset txn;                /* the open transaction's writes */
    size_t *marks;                     /* savepoints: indexes into txn */
    size_t nmarks, mark_cap;
    pthread_mutex_t lock;              /* what both threads touch, below */
    struct pg_wset *queued, **queued_tail;   /* committed, not yet flushed */
    struct pg_wset *inflight;          /* being flushed (read by meta_get) */
    int broken;                        /* 0, or the error every later call returns */
    char *fence_token;
    int64_t fence_epoch;
    struct pg_bodies bodies;
    size_t pending_bytes;              /* of queued and in-flight sets */
    size_t queue_cap;                  /* PG_QUEUE_CAP_BYTES but in tests */
    pthread_cond_t flushed;            /* a flush ended or the store broke */
    unsigned fault_writes_left, fault_load_left;
    int fault_commit, fault_full;
    struct pg_test_seams *seams;       /* NULL but in tests */
};

static inline struct pg_store *pg_of(struct smq_store *s)
{
    return (struct pg_store *)s;
}

/* Where a write's text parameters are (their offsets index it). */
static inline const char *pg_write_text(const struct pg_write *w)
{
    return w->spill != NULL ? w->spill : w->text;
}

/* ---- test seams (style.md 1.9) ---- */
/* What a unit test may change or watch inside the store, to force the
 * interleavings of the engine and the flush thread instead of hoping for
 * them.  The hooks run on the thread named, never with s->lock held. */
struct pg_test_seams {
    size_t queue_cap;                  /* replaces PG_QUEUE_CAP_BYTES */
    size_t body_budget;                /* replaces PG_BODY_CACHE_BYTES */
    /* A commit is about to wait for the flush (the committing thread). */
    void (*on_commit_wait)(void *arg);
    /* pg_body_read has decided which bodies to SELECT and not yet used
     * what it found in memory (the engine thread). */
    void (*on_body_misses)(void *arg);
    void *arg;
};
/* Installs t (kept by pointer: it must outlive the store); NULL removes
 * the hooks, the limits stay.  Call before another thread uses s. */
void pg_store_test_seams(struct smq_store *s, struct pg_test_seams *t);

/* ---- pg_topic.c ---- the topics' rows, built and loaded through pg_rows.c */
int pg_topic_insert(struct smq_store *s, const struct store_topic_rec *t);
int pg_topic_update(struct smq_store *s, const struct store_topic_rec *t);
int pg_topic_delete(struct smq_store *s, int64_t topic_id);
int pg_topic_load(struct smq_store *s,
                  int (*cb)(void *arg, const struct store_topic_rec *t), void *arg);
int pg_sub_insert(struct smq_store *s, const struct store_sub_rec *sub);
int pg_sub_update(struct smq_store *s, const struct store_sub_rec *sub);
int pg_sub_delete(struct smq_store *s, int64_t sub_id);
int pg_sub_load(struct smq_store *s,
                int (*cb)(void *arg, const struct store_sub_rec *sub), void *arg);
int pg_tmsg_insert(struct smq_store *s, const struct store_tmsg_rec *m, const void *body,
                   size_t body_len);
int pg_tmsg_delete(struct smq_store *s, uint64_t seq);
int pg_tmsg_body(struct smq_store *s, uint64_t seq, struct smq_buf *out);
int pg_tmsg_load(struct smq_store *s,
                 int (*cb)(void *arg, const struct store_tmsg_rec *m), void *arg);
int pg_notif_insert(struct smq_store *s, const struct store_notif_rec *n);
int pg_notif_update(struct smq_store *s, const struct store_notif_rec *n);
int pg_notif_delete(struct smq_store *s, int64_t sub_id, uint64_t seq);
int pg_notif_load(struct smq_store *s,
                  int (*cb)(void *arg, const struct store_notif_rec *n), void *arg);

int pg_signing_key_get(struct smq_store *s, struct smq_buf *key_pem, struct smq_buf *cert_pem,
                       int *found);
int pg_signing_key_put_if_absent(struct smq_store *s, const char *key_pem,
                                 const char *cert_pem);

/* ---- pg_rows.c ---- the rows, written through pg_txn.c */
/* Building a write: pg_w_init first, then its parameters in order. */
void pg_w_init(struct pg_write *w, enum pg_stmt st);
void pg_w_text(struct pg_write *w, const char *t);
void pg_w_i64(struct pg_write *w, int64_t v);
/* Binary (bytea), by pointer: it must live as long as the write (owned,
 * body, or the caller's until the write is sent); NULL with len 0 is an
 * empty value, not SQL NULL. */
void pg_w_bin(struct pg_write *w, const void *data, size_t len);
void pg_w_null(struct pg_write *w);
/* One write as its own statement (in the open transaction, or in one of
 * its own); not_exist_rc is what a missing row means outside one. */
int pg_rows_write_one(struct pg_store *s, const struct pg_write *w, int not_exist_rc);
/* One page of a loader after the key in vals (text results); NULL with
 * *rc set (logged as what) on failure. */
PGresult *pg_rows_load_page(struct pg_store *s, enum pg_stmt st, int n,
                            const char *const *vals, const char *what, int *rc);

int pg_rows_meta_get(struct smq_store *s, const char *key, struct smq_buf *out, int *found);
int pg_rows_meta_set(struct smq_store *s, const char *key, const void *value, size_t len);
int pg_rows_queue_insert(struct smq_store *s, const struct store_queue_rec *q);
int pg_rows_queue_update(struct smq_store *s, const struct store_queue_rec *q);
int pg_rows_queue_delete(struct smq_store *s, int64_t queue_id);
int pg_rows_queue_purge(struct smq_store *s, int64_t queue_id);
int pg_rows_queue_load(struct smq_store *s,
                       int (*cb)(void *arg, const struct store_queue_rec *q), void *arg);
int pg_rows_msg_insert(struct smq_store *s, const struct store_msg_rec *m,
                       const struct store_msg_content *c);
int pg_rows_msg_update(struct smq_store *s, const struct store_msg_rec *m);
int pg_rows_msg_move(struct smq_store *s, int64_t from_queue_id, const struct store_msg_rec *m);
int pg_rows_msg_delete(struct smq_store *s, int64_t queue_id, uint64_t seq);
int pg_rows_msg_load(struct smq_store *s,
                     int (*cb)(void *arg, const struct store_msg_rec *m), void *arg);

/* ---- pg_txn.c ---- the backend's transaction operations */
int pg_txn_begin(struct smq_store *s);
int pg_txn_commit(struct smq_store *s);
void pg_txn_rollback(struct smq_store *s);
int pg_txn_savepoint(struct smq_store *s);
int pg_txn_release(struct smq_store *s);
void pg_txn_rollback_to(struct smq_store *s);
int pg_txn_in_txn(struct smq_store *s);
int pg_txn_defer_fsync(struct smq_store *s);
int pg_txn_flush(struct smq_store *s);
/* Drops every write never flushed (store_close). */
void pg_txn_free_all(struct pg_store *s);
/* Appends w to the open transaction's write set (counted by the fault
 * seam); it owns w->owned, w->spill and w->body from now on, even when it
 * fails.  0, SMQ_E_NOMEM (also when building w ran out) or an injected
 * fault. */
int pg_txn_write(struct pg_store *s, const struct pg_write *w);
/* Frees what a write owns but its body (w->owned, w->spill). */
void pg_write_free(const struct pg_write *w);
/* A write outside store_begin ... store_commit is a transaction of its
 * own: implicit_begin opens one when none is open, implicit_end commits it
 * (rc == 0) or drops it.  An expected row that was absent gives
 * not_exist_rc, and failures of such a transaction leave the store usable
 * (their outcome is known: rolled back). */
int pg_txn_implicit_begin(struct pg_store *s, int *implicit);
int pg_txn_implicit_end(struct pg_store *s, int implicit, int rc, int not_exist_rc);

/* ---- pg_body.c ---- (every call with s->lock held unless said) */
int pg_bodies_init(struct pg_bodies *b, size_t budget);
void pg_bodies_free(struct pg_bodies *b);
struct pg_body *pg_body_new(const struct store_msg_rec *m, const struct store_msg_content *c);
void pg_body_pin(struct pg_bodies *b, struct pg_body *e);
void pg_body_drop(struct pg_bodies *b, struct pg_body *e);
/* After the writes of ws were committed: bodies become cache entries,
 * deleted ones leave. */
void pg_bodies_committed(struct pg_bodies *b, const struct pg_wset *ws);
/* store_msg_bodies (takes the lock itself). */
int pg_body_read(struct smq_store *s, struct store_body_read *reads, size_t n,
                 struct smq_buf *out);

/* ---- pg_stmt.c ---- */
/* Rows per page of a loader: no snapshot or result grows with the table. */
#define PG_LOAD_PAGE "10000"
/* Prepares every statement on conn.  0, or SMQ_E_INTERNAL with err. */
int pg_stmt_prepare(PGconn *conn, char *err, size_t err_size);
/* The name a statement is prepared under. */
const char *pg_stmt_name(enum pg_stmt st);

/* ---- pg_err.c ---- */
/* The single place a run-time PostgreSQL failure is logged: SMQ_E_INTERNAL. */
int pg_err_fail(const char *what, const char *msg);

/* ---- pg_schema.c ---- */
/* Creates or migrates the schema on conn, or refuses; 0 or SMQ_E_INTERNAL
 * with err. */
int pg_schema_migrate(PGconn *conn, char *err, size_t err_size);

#endif
