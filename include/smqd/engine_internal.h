/*
 * engine_internal.h — what engine.c and recover.c share, and nothing else
 * may use: the engine's state, the meta keys of its high-water marks, and
 * the transitions that recovery replays rows through (the same ones live
 * traffic uses, so a restart cannot place a message differently).
 */
#ifndef SMQD_ENGINE_INTERNAL_H
#define SMQD_ENGINE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "smqd/engine.h"
#include "smqd/handle.h"
#include "smqd/queue.h"
#include "smqd/store.h"
#include "smqd/twheel.h"

#define EXPIRED_FLUSH_AT 1024            /* lazily deleted expired rows per flush */
#define META_KEYS "handle_keys"
#define META_NEXT_SEQ "next_seq"
#define META_NEXT_QUEUE_ID "next_queue_id"

struct expired_row {
    int64_t queue_id;
    uint64_t seq;
};

struct smq_engine {
    const struct smq_clock *clock;
    struct smq_store *store;
    int max_queues;
    struct handle_keys keys;
    struct queue_timebase tb;
    struct twheel msg_wheel;         /* message delay / visibility / expiry */
    struct twheel wait_wheel;        /* long-poll deadlines */
    struct queue_registry queues;
    struct msg_table msgs;
    uint64_t next_seq, seq_reserved;
    uint64_t seq_reserve_pending;    /* written in the open savepoint, 0 = none */
    int64_t next_queue_id;
    size_t n_waiters;
    size_t n_probed;                 /* parked polls that can tell a gone client */
    uint64_t next_probe_mono;        /* next check of parked polls' clients */
    uint64_t reloads;
    bool broken;                     /* the last reload failed: serve nothing until one succeeds */
    bool storage_full;               /* refusing what grows data (engine.h) */
    bool reserve_missing;            /* released and not yet taken back */
    uint64_t reserve_margin;         /* bytes that must stay free beside it */
    uint64_t full_until_mono;        /* end of the current cool-down */
    uint64_t dlq_move_failures;      /* dead-letter moves skipped: target missing */
    uint64_t db_pages, free_pages, page_size;   /* file figures, refreshed by reclamation */
    uint64_t vacuumed_pages;         /* pages given back to the file system */

    /* state of the run in progress */
    int64_t now_ms;                  /* epoch ms, fixed for one run */
    bool txn_open, txn_lost;
    bool in_savepoint;               /* write_begin succeeded, write_end pending */
    int lost_rc;                     /* why the transaction was lost (for the ops' answers) */
    struct smq_op *done_head, **done_tail;
    struct smq_queue *ready_head;
    struct expired_row expired[EXPIRED_FLUSH_AT];
    size_t n_expired;
};

/* ---- engine.c, for recover.c ---- */

/* Registers m in q and places it by its times (Active ones mark q ready). */
void engine_msg_link(struct smq_engine *e, struct smq_queue *q, struct smq_msg *m);
/* Queues op for its done callback after the run's commit (err 0 = success). */
void engine_complete(struct smq_engine *e, struct smq_op *op, int err);
void engine_waiter_link(struct smq_engine *e, struct smq_queue *q, struct smq_op *op);
void engine_waiter_unlink(struct smq_engine *e, struct smq_op *op);
/* Puts q on the list of queues whose parked polls may now be served. */
void engine_mark_ready(struct smq_engine *e, struct smq_queue *q);
/* Reads the clock into now_ms and fires every due timer. */
void engine_advance_clock(struct smq_engine *e);

/* ---- engine_admin.c: administration ops (admin listener, smqctl) ---- */

int engine_exec_stats(struct smq_engine *e, struct smq_op *op);
int engine_exec_purge(struct smq_engine *e, struct smq_op *op, struct smq_queue *q);
int engine_exec_redrive(struct smq_engine *e, struct smq_op *op, struct smq_queue *q);

/* ---- recover.c ---- */

/* Loads every queue and message from the store (expired rows are queued for
 * deletion) and the id high-water marks.  0 or an SMQ_E_* code. */
int recover_load(struct smq_engine *e);
/* Frees every queue and message (parked polls must be detached first). */
void recover_free(struct smq_engine *e);
/* After a lost transaction: rebuilds memory from the store, keeping parked
 * long polls (in their order) on the queues that still exist.  If the store
 * cannot be read, the engine is marked broken (every operation then fails
 * with InternalError and the next run tries again), because serving from a
 * partial state could lose rows and reuse ids. */
void recover_reload(struct smq_engine *e);
/* Reads the receipt-handle keys, or makes and stores them on first start. */
int recover_keys(struct smq_engine *e);

#endif
