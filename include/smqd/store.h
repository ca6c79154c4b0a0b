/*
 * store.h — durable storage: the contract every storage backend keeps, and
 * the one place the engine and the tools reach it through.  No SQL, and no
 * backend's header, anywhere else in the daemon.
 *
 * A backend is a table of operations (store_backend.h) chosen at
 * store_open by the configuration's backend; SQLite (sqlite_store.c) is
 * the one built in.  The contract is shaped for a backend whose commit is
 * a network round trip as much as for a local file:
 *
 * - Group commit.  The caller (the engine thread) brackets one run's writes
 *   in store_begin ... store_commit, with a savepoint per operation
 *   (store_savepoint, then store_release or store_rollback_to).  Nothing a
 *   client can see depends on a write until store_commit returned 0.  A
 *   failed write or commit returns SMQ_E_INTERNAL (logged here, once, with
 *   the backend's message), or SMQ_E_STORAGE_FULL when the disk is full;
 *   the caller then calls store_rollback.  A backend may buffer the writes
 *   and send them at commit: a write may only fail for lack of memory then.
 *
 * - Durability is separate from commit.  With store_defer_fsync the
 *   commit no longer waits for the disk; the caller makes everything
 *   committed so far durable with store_flush, on a thread of its own
 *   (syncer.h), and answers an operation only after a flush that began
 *   after its commit returned.  A backend whose commit is already durable
 *   (a network commit with synchronous replication) flushes at once.
 *
 * - Reads a receive needs are batched: store_msg_bodies reads every body of
 *   one receive in one call, so a remote backend costs one round trip per
 *   receive, not one per message.
 *
 * - File-level upkeep that only a local file has (a disk reserve, WAL
 *   checkpoints, page reclamation, an integrity check) is optional: where
 *   a backend has none, those calls do nothing and say so.
 *
 * Not thread-safe: one owner, the engine thread; store_flush alone may be
 * called from one other thread at the same time.
 */
#ifndef SMQD_STORE_H
#define SMQD_STORE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "smqd/buf.h"
#include "smqd/mns.h"
#include "smqd/storage.h"

#define STORE_SCHEMA_VERSION 7
#define STORE_QUEUE_NAME_MAX 120

struct smq_store;

struct store_queue_rec {
    int64_t id;                          /* assigned by the engine, never reused */
    char name[STORE_QUEUE_NAME_MAX + 1];
    int64_t create_s, modify_s;          /* epoch seconds */
    int64_t delay_s, max_msg_size, retention_s, visibility_s, polling_wait_s;
    int logging;                         /* 0/1 */
    int dlq_enabled;                     /* 0/1 */
    char dlq_target[STORE_QUEUE_NAME_MAX + 1];   /* "" = none */
    int64_t dlq_max_receive;
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
    int64_t src_queue_id;                /* dead-lettered: the queue it came from; else 0 */
};

/* Opens (creating if needed) and migrates the store cfg names.  Returns 0,
 * or SMQ_E_INTERNAL with a readable reason in err.  Refuses, and leaves the
 * data untouched, when it is not the backend's kind of database, is one
 * that is not smqd's, or has a schema newer than this smqd knows (SQLite:
 * STORE_SCHEMA_VERSION).  Does not log: the caller reports err (start-up
 * exits on it). */
int store_open(const struct store_config *cfg, struct smq_store **out, char *err,
               size_t err_size);
/* The backend's name ("sqlite"), for logs. */
const char *store_backend_name(const struct smq_store *s);
/* Rolls back an open transaction, if any, and frees s (NULL is a no-op). */
void store_close(struct smq_store *s);

/* ---- transactions ---- */

int store_begin(struct smq_store *s);
int store_commit(struct smq_store *s);
/* Safe to call when no transaction is open (e.g. the backend already
 * rolled back after an I/O error): that case is silently ignored. */
void store_rollback(struct smq_store *s);

/*
 * One operation inside a group-commit transaction: store_savepoint before
 * its writes, then store_release (keep them) or store_rollback_to (undo
 * just them and close the savepoint).  Savepoints nest; the innermost is the
 * one released or rolled back.  After a failed write the backend may
 * already have dropped the whole transaction: store_rollback_to then does
 * nothing, and store_in_txn tells the caller the batch is lost.  Meant for
 * use between store_begin and store_commit.
 */
int store_savepoint(struct smq_store *s);
int store_release(struct smq_store *s);
void store_rollback_to(struct smq_store *s);
/* Non-zero while a transaction is open on s. */
int store_in_txn(struct smq_store *s);

/* ---- durability ---- */

/*
 * From now on store_commit does not wait for the disk, and the caller
 * answers nothing before a store_flush that began after the commit has
 * returned 0 (syncer.h; main.c does this for sync = full).  SQLite: commits
 * run with synchronous=NORMAL, which in WAL mode keeps the database
 * consistent through a power loss, and the flush is an fdatasync of the WAL
 * (SQLite's own checkpoints still sync the WAL before copying it and the
 * database after).  0 or SMQ_E_INTERNAL.
 */
int store_defer_fsync(struct smq_store *s);
/* Makes every commit returned so far durable.  0, or SMQ_E_INTERNAL: the
 * flush failed, and nothing since the last good one can be trusted to be
 * on disk (the caller stops writing; syncer.h).  The one call that may run
 * on another thread than the owner's, at the same time. */
int store_flush(struct smq_store *s);

/* ---- ownership ---- */

/*
 * From now on every commit checks, inside its own transaction, that the
 * lease (lease.h) is still held by holder_token with this epoch and has
 * not expired; when it is not, the commit fails with
 * SMQ_E_SERVICE_UNAVAILABLE and nothing of it is applied (the outcome is
 * known: answer 503, never InternalError).  A backend whose database only
 * one process can open (SQLite) has nothing to fence: 0.  Call before the
 * first write.  0, SMQ_E_INVALID_ARGUMENT (a token of 64 characters or
 * more: it must fit an application_name), or SMQ_E_NOMEM.
 */
int store_fence(struct smq_store *s, const char *holder_token, int64_t epoch);

/* ---- metadata, queues, messages ---- */

/* Small key/value metadata (e.g. the receipt-handle secret, id high-water marks). */
int store_meta_get(struct smq_store *s, const char *key, struct smq_buf *out, int *found);
int store_meta_set(struct smq_store *s, const char *key, const void *value, size_t len);

/* The keys the engine keeps there (smqctl's store copy carries them over too). */
#define META_KEYS "handle_keys"
#define META_NEXT_SEQ "next_seq"
#define META_NEXT_QUEUE_ID "next_queue_id"
#define META_NEXT_TOPIC_ID "next_topic_id"
#define META_NEXT_SUB_ID "next_sub_id"

/* SMQ_E_INTERNAL also when the name is already taken (UNIQUE).
 * Names longer than STORE_QUEUE_NAME_MAX: SMQ_E_INVALID_ARGUMENT. */
int store_queue_insert(struct smq_store *s, const struct store_queue_rec *q);
/* Rewrites every column except id, name and create_s.
 * SMQ_E_QUEUE_NOT_EXIST (nothing written) if there is no row q->id. */
int store_queue_update(struct smq_store *s, const struct store_queue_rec *q);
/* Deletes the queue and all its messages and bodies.  Deleting what is
 * not there is not an error (lazy cleanups may race a queue delete). */
int store_queue_delete(struct smq_store *s, int64_t queue_id);
/* Deletes every message (and body) of the queue, keeping the queue. */
int store_queue_purge(struct smq_store *s, int64_t queue_id);
/* Calls cb for every queue, in id order; a non-zero return from cb stops and
 * is returned.  cb may call other store functions but not the same loader. */
int store_queue_load(struct smq_store *s,
                     int (*cb)(void *arg, const struct store_queue_rec *q), void *arg);

/* What a message carries besides its metadata, written once at send. */
struct store_msg_content {
    const void *body;                    /* may be NULL when body_len is 0 */
    size_t body_len;
    const unsigned char *md5;            /* MNS_MD5_LEN bytes, or NULL */
    const void *ext;                     /* the extensions' XML (op.h), or NULL */
    size_t ext_len;
};

/* Writes the metadata row and the body row.
 * m->seq above INT64_MAX: SMQ_E_INVALID_ARGUMENT. */
int store_msg_insert(struct smq_store *s, const struct store_msg_rec *m,
                     const struct store_msg_content *c);
/* Rewrites the mutable fields: first_dequeue_ms, visible_ms, dequeue_count, handle_gen.
 * SMQ_E_MESSAGE_NOT_EXIST (nothing written) if the row is absent. */
int store_msg_update(struct smq_store *s, const struct store_msg_rec *m);
/* Moves the row (from_queue_id, m->seq) to queue m->queue_id and rewrites
 * its mutable fields, expire_ms and src_queue_id; the body stays.
 * SMQ_E_MESSAGE_NOT_EXIST (nothing written) if the row is absent. */
int store_msg_move(struct smq_store *s, int64_t from_queue_id, const struct store_msg_rec *m);
/* Deletes the metadata and body rows; an absent message is not an error
 * (e.g. a lazy expiry flush after its queue was deleted). */
int store_msg_delete(struct smq_store *s, int64_t queue_id, uint64_t seq);

/* One body a receive or a peek returns: which message, then what was read. */
struct store_body_read {
    int64_t queue_id;
    uint64_t seq;
    size_t len;                          /* out: its bytes, appended in order */
    size_t ext_len;                      /* out: its extensions' bytes, appended after it */
    struct mns_body_md5 md5;             /* out: as stored at send, if it was */
};
/* Appends the bodies of reads[0..n), each followed by its extensions, to
 * out and fills each one's len, ext_len and md5.  0, SMQ_E_MESSAGE_NOT_EXIST if one is
 * absent, SMQ_E_NOMEM, or SMQ_E_INTERNAL; on failure out may hold some. */
int store_msg_bodies(struct smq_store *s, struct store_body_read *reads, size_t n,
                     struct smq_buf *out);
/* Calls cb for every message, in (queue_id, seq) order, without reading
 * bodies; a non-zero return from cb stops and is returned. */
int store_msg_load(struct smq_store *s,
                   int (*cb)(void *arg, const struct store_msg_rec *m), void *arg);

/* ---- topics (docs/protocol.md §13) ----
 *
 * Four tables beside the queues': topics, their subscriptions, the
 * published messages kept for pending notifications (with their bodies),
 * and the pending notifications themselves, one row per (subscription,
 * message) with its retry state.  Ids are assigned by the engine and never
 * reused; a message's seq comes from the same sequence as queue messages.
 * Loads call cb in id (or key) order; a non-zero return from cb stops and
 * is returned; cb may call other store functions but not the same loader.
 * Write statements, as the fault seam counts them (store_fault_inject):
 * store_topic_delete issues five, store_sub_delete, store_tmsg_insert and
 * store_tmsg_delete two, every other write one.
 */

struct store_topic_rec {
    int64_t id;
    char name[STORE_QUEUE_NAME_MAX + 1];
    int64_t create_s, modify_s;          /* epoch seconds */
    int64_t max_msg_size;
    int logging;                         /* 0/1 */
};

struct store_sub_rec {
    int64_t id;
    int64_t topic_id;
    char name[STORE_QUEUE_NAME_MAX + 1];
    char endpoint[SMQ_ENDPOINT_MAX + 1];
    char filter_tag[SMQ_TAG_MAX_BYTES + 1];      /* "" = none */
    int strategy;                                /* enum smq_notify_strategy */
    int format;                                  /* enum smq_notify_format */
    int dlq_enabled;                             /* 0/1 */
    char dlq_target[STORE_QUEUE_NAME_MAX + 1];   /* "" = none */
    int64_t create_s, modify_s;
};

/* A published message, kept while it has pending notifications. */
struct store_tmsg_rec {
    int64_t topic_id;
    uint64_t seq;                        /* unique across the database (queue messages too) */
    int64_t publish_ms;                  /* epoch ms */
    char tag[SMQ_TAG_MAX_BYTES + 1];     /* "" = untagged */
    unsigned char md5[MNS_MD5_LEN];      /* of the body */
    size_t body_len;                     /* load: the stored body's length */
};

/* One pending notification of message seq to subscription sub_id. */
struct store_notif_rec {
    int64_t sub_id;
    uint64_t seq;
    uint32_t attempts;                   /* made so far (0 = none yet) */
    int64_t due_ms;                      /* epoch ms of the next attempt */
    int strategy;                        /* enum smq_notify_strategy: the schedule it
                                          * was made with, kept across a restart and a
                                          * later change of the subscription's */
};

/* SMQ_E_INTERNAL also when the name is taken (UNIQUE). */
int store_topic_insert(struct smq_store *s, const struct store_topic_rec *t);
/* Rewrites modify_s, max_msg_size and logging.  SMQ_E_TOPIC_NOT_EXIST
 * (nothing written) if there is no row t->id. */
int store_topic_update(struct smq_store *s, const struct store_topic_rec *t);
/* Deletes the topic with its subscriptions, messages and notifications;
 * an absent one is not an error. */
int store_topic_delete(struct smq_store *s, int64_t topic_id);
int store_topic_load(struct smq_store *s,
                     int (*cb)(void *arg, const struct store_topic_rec *t), void *arg);

/* SMQ_E_INTERNAL also when (topic_id, name) is taken. */
int store_sub_insert(struct smq_store *s, const struct store_sub_rec *sub);
/* Rewrites filter_tag, strategy, dlq_enabled, dlq_target and modify_s.
 * SMQ_E_SUBSCRIPTION_NOT_EXIST (nothing written) if there is no row sub->id. */
int store_sub_update(struct smq_store *s, const struct store_sub_rec *sub);
/* Deletes the subscription and its notifications; absent is not an error. */
int store_sub_delete(struct smq_store *s, int64_t sub_id);
int store_sub_load(struct smq_store *s,
                   int (*cb)(void *arg, const struct store_sub_rec *sub), void *arg);

/* Writes the message row with its body.  seq above INT64_MAX:
 * SMQ_E_INVALID_ARGUMENT. */
int store_tmsg_insert(struct smq_store *s, const struct store_tmsg_rec *m, const void *body,
                      size_t body_len);
/* Deletes the message row and its body (its notifications are the
 * caller's); absent is not an error. */
int store_tmsg_delete(struct smq_store *s, uint64_t seq);
/* Appends the body of message seq to out.  0, SMQ_E_MESSAGE_NOT_EXIST,
 * SMQ_E_NOMEM or SMQ_E_INTERNAL. */
int store_tmsg_body(struct smq_store *s, uint64_t seq, struct smq_buf *out);
/* In seq order, without bodies (body_len filled in). */
int store_tmsg_load(struct smq_store *s,
                    int (*cb)(void *arg, const struct store_tmsg_rec *m), void *arg);

int store_notif_insert(struct smq_store *s, const struct store_notif_rec *n);
/* Rewrites attempts and due_ms.  SMQ_E_MESSAGE_NOT_EXIST (nothing
 * written) if the row is absent. */
int store_notif_update(struct smq_store *s, const struct store_notif_rec *n);
/* Absent is not an error. */
int store_notif_delete(struct smq_store *s, int64_t sub_id, uint64_t seq);
/* In (seq, sub_id) order: the key's, so each subscription's in seq order. */
int store_notif_load(struct smq_store *s,
                     int (*cb)(void *arg, const struct store_notif_rec *n), void *arg);

/* ---- the push signing key (docs/protocol.md §13.11) ----
 *
 * The RSA key smqd signs HTTP pushes with when [topics] names none, and
 * its self-signed certificate, both PEM text: one pair per database, kept
 * with the data so that every node of a PostgreSQL cluster signs with the
 * same key and a restart keeps it (docs/operations.md, "Push signing
 * key").  The private key is a secret: never log what these return.
 */

/* Appends the stored pair's PEM text (no NUL) to key_pem and cert_pem;
 * *found 0 (nothing appended) when none is stored.  0, SMQ_E_NOMEM or
 * SMQ_E_INTERNAL.  Reads what is committed. */
int store_signing_key_get(struct smq_store *s, struct smq_buf *key_pem,
                          struct smq_buf *cert_pem, int *found);
/* Stores the pair unless one is stored already, in a statement committed
 * on its own: call it outside store_begin ... store_commit (at start-up,
 * before the engine runs).  Two processes racing end with one pair; each
 * then learns which with store_signing_key_get.  0 whether or not it wrote,
 * or SMQ_E_INTERNAL / SMQ_E_STORAGE_FULL. */
int store_signing_key_put_if_absent(struct smq_store *s, const char *key_pem,
                                    const char *cert_pem);

/* ---- upkeep of a local database file (optional: see the top) ---- */

/*
 * Disk-space reserve: a file PATH.reserve of `bytes` real blocks, or of
 * what the volume can hold (volume_reserve_for; store_reserve_bytes
 * says which).  When the disk fills, the engine releases it so that deletes
 * (which need WAL space but no new pages) keep working, and restores it once
 * space is back.
 * init/restore return 0, SMQ_E_STORAGE_FULL (no room) or SMQ_E_INTERNAL.
 * A write or commit that fails because the disk or database is full
 * returns SMQ_E_STORAGE_FULL instead of SMQ_E_INTERNAL.  Without a local
 * file: 0, and nothing is held.
 */
int store_reserve_init(struct smq_store *s, const char *db_path, uint64_t bytes);
/* Takes the reserve back only if keep_free bytes stay free beside it, so
 * that taking it cannot by itself fill the disk again (and take the WAL
 * space the deletes that freed it are using). */
int store_reserve_restore(struct smq_store *s, uint64_t keep_free);
/* The reserve's size in bytes after store_reserve_init; 0 = none. */
uint64_t store_reserve_bytes(const struct smq_store *s);
void store_reserve_release(struct smq_store *s);

/* Copies the WAL into the database and truncates it (outside a transaction).
 * 0, SMQ_E_STORAGE_FULL or SMQ_E_INTERNAL; 0 where there is no WAL. */
int store_checkpoint(struct smq_store *s);
/* The WAL file SQLite uses, as SQLite resolved it (through symbolic links:
 * not necessarily the configured path + "-wal"); valid until store_close.
 * NULL where there is none. */
const char *store_wal_path(const struct smq_store *s);
/* store_close will leave the WAL as it is instead of copying it into the
 * database (after a failed flush, when its pages may be stale in memory:
 * the next start recovers from what is on disk). */
void store_no_checkpoint_on_close(struct smq_store *s);

/*
 * Disk reclamation.  Deleted messages leave free pages inside the file;
 * store_reclaim hands up to max_pages of them back to the file system
 * (incremental auto-vacuum, its own small transaction: call it outside a
 * group commit) and reports how many went.  0 or SMQ_E_INTERNAL /
 * SMQ_E_STORAGE_FULL.  A database without incremental auto-vacuum (its
 * one-time conversion failed) frees nothing; so does a backend without a
 * local file, whose file stats are all 0.
 */
struct store_file_stats {
    uint64_t pages, free_pages, page_size;
};
int store_file_stats(struct smq_store *s, struct store_file_stats *out);
int store_reclaim(struct smq_store *s, unsigned max_pages, uint64_t *freed);

/* Checks the database's own consistency (SQLite: PRAGMA integrity_check).
 * 0 when it reports "ok"; otherwise SMQ_E_INTERNAL with its findings
 * (joined by "; ", truncated) in err.  The findings are not logged here:
 * the caller decides what to do. */
int store_integrity_check(struct smq_store *s, char *err, size_t err_size);

/* ---- test seams (style.md 1.9) ---- */

/*
 * After after_n_writes more write statements have succeeded, the next one
 * fails as an I/O error would (SMQ_E_INTERNAL), without touching the
 * database; STORE_FAULT_OFF disables it.  If fail_commit is non-zero the
 * next store_commit fails as an I/O error would (SMQ_E_INTERNAL) and the
 * transaction stays open, so the caller must store_rollback.  Both faults
 * are one-shot and are logged like real failures.  A write statement is
 * one INSERT/UPDATE/DELETE: store_msg_insert issues two, store_msg_delete
 * two, store_queue_delete three.  Transaction control (BEGIN, SAVEPOINT,
 * ...) is not counted.
 */
#define STORE_FAULT_OFF UINT_MAX
void store_fault_inject(struct smq_store *s, unsigned after_n_writes, int fail_commit);
/* The same write fault, but as a full disk: SMQ_E_STORAGE_FULL. */
void store_fault_inject_full(struct smq_store *s, unsigned after_n_writes);
/* The next store_msg_load fails (SMQ_E_INTERNAL) after delivering n rows. */
void store_fault_inject_load(struct smq_store *s, unsigned after_n_rows);

#endif
