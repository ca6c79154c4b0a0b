/*
 * engine_internal.h — what the engine's files (engine.c, engine_dlq.c,
 * engine_admin.c, engine_oplog.c, recover.c) share, and nothing else may use: the engine's state, the meta keys of its high-water marks, and
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

/* Message lifecycle events of queues with LoggingEnabled (engine_oplog.c). */
enum engine_event_kind {
    EV_SEND,
    EV_RECEIVE,
    EV_CHANGE_VISIBILITY,
    EV_DELETE,
    EV_EXPIRE,
    EV_DEAD_LETTER,
    EV_REDRIVE,
    EV_PURGE
};

/* Names are copied: a queue may be deleted later in the same run. */
struct engine_event {
    enum engine_event_kind kind;
    uint64_t seq;                    /* EV_PURGE: the number of messages */
    uint32_t dequeue_count;
    char queue[SMQ_QUEUE_NAME_MAX + 1];
    char peer[SMQ_QUEUE_NAME_MAX + 1];       /* EV_DEAD_LETTER / EV_REDRIVE: the other queue */
    bool arrived;                            /* the message came from peer (else went to it) */
    char request_id[25];
};

#define REDRIVE_TICK_MS 100              /* how often a running redrive moves a slice */

struct smq_engine {
    const struct smq_clock *clock;
    struct smq_store *store;
    struct smq_syncer *syncer;    /* NULL: ops are answered right after COMMIT */
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
    uint64_t reserve_margin;         /* free bytes needed beside the reserve to retake it */
    uint64_t full_until_mono;        /* end of the current cool-down */
    uint64_t full_retries;           /* failed attempts to retake the reserve, for the log */
    uint64_t dlq_move_failures;      /* dead-letter moves skipped: target missing */
    uint64_t db_pages, free_pages, page_size;   /* file figures, refreshed by reclamation */
    uint64_t vacuumed_pages;         /* pages given back to the file system */
    uint64_t next_reclaim_mono;      /* next look at the free pages */
    bool maintain_due;               /* messages were deleted since that look */
    bool redrive_active;             /* some queue has redrive_pending > 0 */
    uint64_t last_redrive_mono;      /* last redrive tick */
    struct engine_event *events;     /* this run's operation-log lines, written after COMMIT */
    size_t n_events, cap_events;
    uint64_t oplog_dropped;          /* events past the per-run cap */

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
/* Counts m as expired in its queue and frees it (its row is deleted lazily). */
void engine_expire_msg(struct smq_engine *e, struct smq_msg *m);
/* Reads the clock into now_ms and fires every due timer. */
void engine_advance_clock(struct smq_engine *e);

/* Thin exports of engine.c's write bracket and helpers for the files below. */
int engine_write_begin(struct smq_engine *e);
int engine_write_end(struct smq_engine *e, int rc);
void engine_msg_record(const struct smq_msg *m, struct store_msg_rec *r);
void engine_destroy_queue_msgs(struct smq_engine *e, struct smq_queue *q);
struct smq_queue *engine_queue_by_id(struct smq_engine *e, int64_t id);

/* ---- engine_dlq.c: dead-letter moves and redrive ---- */

/* If m (Active, in q) has used up its receives under q's policy, moves it
 * to q's dead-letter queue and returns true; false = deliver it (no policy,
 * receives left, or the move could not happen: never dropped). */
bool engine_dead_letter(struct smq_engine *e, struct smq_queue *q, struct smq_msg *m,
                        const char *request_id);
/* Moves used-up messages from the head of q until a deliverable one (or
 * none) is there, so that a parked poll is woken only for a message it gets. */
void engine_dead_letter_due(struct smq_engine *e, struct smq_queue *q, const char *request_id);
/* Messages a running redrive from q still has to look at. */
uint64_t engine_redrive_pending(const struct smq_queue *q);
/* Moves a slice of every running redrive (call once per run, after the
 * clock advanced). */
void engine_redrive_tick(struct smq_engine *e, uint64_t now_mono);
/* Milliseconds until the next redrive tick, UINT64_MAX if none runs. */
uint64_t engine_redrive_timeout_ms(const struct smq_engine *e, uint64_t now_mono);

/* ---- engine_oplog.c: operation logs ---- */

/* Records an event for m if q logs. */
void engine_oplog(struct smq_engine *e, const struct smq_queue *q, enum engine_event_kind kind,
                  const struct smq_msg *m, const char *request_id);
/* A move (EV_DEAD_LETTER, EV_REDRIVE) of m from `from` to `to`, after which
 * m's own count restarts: one line for each queue that logs, "to=" in the
 * one it left, "from=" in the other, with the count it had before. */
void engine_oplog_move(struct smq_engine *e, const struct smq_queue *from,
                       const struct smq_queue *to, enum engine_event_kind kind,
                       const struct smq_msg *m, uint32_t dequeue_count,
                       const char *request_id);
void engine_oplog_purge(struct smq_engine *e, const struct smq_queue *q, uint64_t count,
                        const char *request_id);
/* After the run: writes (committed) or drops (lost) the recorded events. */
void engine_oplog_flush(struct smq_engine *e, bool committed);
void engine_oplog_free(struct smq_engine *e);

/* ---- engine_admin.c: administration ops (admin listener, smqctl) ---- */

int engine_exec_stats(struct smq_engine *e, struct smq_op *op);
int engine_exec_purge(struct smq_engine *e, struct smq_op *op, struct smq_queue *q);
int engine_exec_redrive(struct smq_engine *e, struct smq_op *op, struct smq_queue *q);
/* Disk reclamation and file figures: call after a run, outside its
 * transaction; does something at most every few seconds. */
void engine_maintain(struct smq_engine *e, uint64_t now_mono);
uint64_t engine_maintain_timeout_ms(const struct smq_engine *e, uint64_t now_mono);

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
