/*
 * store.h — durable storage, the only module that speaks SQL.
 *
 * SQLite in WAL mode.  Schema versioned by PRAGMA user_version with one
 * migration step per version, run inside a transaction.  Every statement is
 * prepared once at open.  Message bodies live only here; the engine keeps
 * metadata in memory and reads a body when it must return one.
 *
 * Contract: the caller (the engine thread) groups many operations into one
 * transaction: store_begin, any number of writes, store_commit.  Nothing a
 * client can see depends on a write until store_commit has returned 0.  A
 * failed write or commit returns SMQ_E_INTERNAL (logged here, once, with
 * SQLite's message); the caller then calls store_rollback.
 *
 * Not thread-safe: one owner.  A second backend (PostgreSQL) would implement
 * this same header.
 */
#ifndef SMQD_STORE_H
#define SMQD_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "smqd/buf.h"
#include "smqd/config.h"

#define STORE_SCHEMA_VERSION 1
#define STORE_QUEUE_NAME_MAX 120

struct smq_store;

struct store_queue_rec {
    int64_t id;                          /* assigned by the engine, never reused */
    char name[STORE_QUEUE_NAME_MAX + 1];
    int64_t create_s, modify_s;          /* epoch seconds */
    int64_t delay_s, max_msg_size, retention_s, visibility_s, polling_wait_s;
    int logging;                         /* 0/1 */
};

struct store_msg_rec {
    int64_t queue_id;
    uint64_t seq;                        /* unique across the database, never reused */
    int priority;                        /* 1..16 */
    int64_t enqueue_ms;                  /* epoch ms */
    int64_t first_dequeue_ms;            /* epoch ms; 0 = never received */
    int64_t visible_ms;                  /* epoch ms when it is (or became) Active */
    int64_t expire_ms;                   /* epoch ms of retention expiry */
    uint32_t dequeue_count;
    uint32_t handle_gen;                 /* receipt-handle generation */
};

/* Opens (creating if needed) and migrates the database at path.
 * Returns 0, or SMQ_E_INTERNAL with a readable reason in err. */
int store_open(const char *path, enum smq_sync_mode sync, struct smq_store **out,
               char *err, size_t err_size);
void store_close(struct smq_store *s);

int store_begin(struct smq_store *s);
int store_commit(struct smq_store *s);
void store_rollback(struct smq_store *s);

/* Small key/value metadata (e.g. the receipt-handle secret, id high-water marks). */
int store_meta_get(struct smq_store *s, const char *key, struct smq_buf *out, int *found);
int store_meta_set(struct smq_store *s, const char *key, const void *value, size_t len);

int store_queue_insert(struct smq_store *s, const struct store_queue_rec *q);
int store_queue_update(struct smq_store *s, const struct store_queue_rec *q);
/* Deletes the queue and all its messages. */
int store_queue_delete(struct smq_store *s, int64_t queue_id);
/* Calls cb for every queue; a non-zero return from cb stops and is returned. */
int store_queue_load(struct smq_store *s,
                     int (*cb)(void *arg, const struct store_queue_rec *q), void *arg);

int store_msg_insert(struct smq_store *s, const struct store_msg_rec *m,
                     const void *body, size_t body_len);
/* Rewrites the mutable fields: first_dequeue_ms, visible_ms, dequeue_count, handle_gen. */
int store_msg_update(struct smq_store *s, const struct store_msg_rec *m);
int store_msg_delete(struct smq_store *s, int64_t queue_id, uint64_t seq);
/* Appends the body of (queue_id, seq) to out.  SMQ_E_MESSAGE_NOT_EXIST if absent. */
int store_msg_body(struct smq_store *s, int64_t queue_id, uint64_t seq, struct smq_buf *out);
/* Calls cb for every message, in (queue_id, seq) order. */
int store_msg_load(struct smq_store *s,
                   int (*cb)(void *arg, const struct store_msg_rec *m), void *arg);

#endif
