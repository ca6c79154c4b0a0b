/*
 * engine.h — the queue engine: every queue and message state transition.
 *
 * The engine owns the in-memory state (queues, per-message metadata, the
 * Active heaps, the timer wheel, parked long polls) and the store handle.
 * It is driven by one thread: engine_run() takes a list of decided
 * operations (struct smq_op, built and validated by the API layer), runs
 * them in order inside ONE store transaction together with every timer that
 * is due (group commit), commits, and only then reports each finished
 * operation through its done callback.  With a syncer (sync = full) a run
 * may instead leave its transaction open for the next runs to join while a
 * WAL flush is in progress, and the answers wait for the flush that covers
 * the commit.  Memory is updated only after the corresponding store write
 * succeeded; if the transaction is lost (commit or I/O failure) the engine
 * reloads its state from the store and every operation of the runs that
 * joined it fails with InternalError, so memory is never ahead of disk and
 * nothing is half-applied.
 *
 * Message states: Delayed (never received, not yet visible), Active,
 * Inactive (received, invisible until NextVisibleTime).  The state is a
 * function of the persisted times (visible_ms vs now, dequeue_count), so
 * timer-driven transitions need no write; retention expiry removes the
 * message from memory and deletes its rows lazily.
 *
 * A full disk (SMQ_E_STORAGE_FULL from the store) frees the store's space
 * reserve and refuses only what grows the data (SendMessage, CreateQueue)
 * until the reserve can be taken back (tried every 5 s), so consumers can
 * keep receiving and deleting; free pages go back to the file system then
 * whatever their share of the file.
 *
 * Time: wire and disk use epoch ms; scheduling uses the monotonic clock.
 * The engine derives "now" in epoch ms as epoch_at_open + (mono - mono_at_open)
 * so a wall-clock step cannot reorder its timers.
 */
#ifndef SMQD_ENGINE_H
#define SMQD_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "smqd/clock.h"
#include "smqd/errors.h"
#include "smqd/handle.h"
#include "smqd/qname.h"
#include "smqd/store.h"
#include "smqd/twheel.h"

#define SMQ_BATCH_MAX 16

/* Attribute ranges and defaults (protocol §5). */
#define SMQ_DELAY_MAX_S 604800
#define SMQ_MSG_SIZE_MIN 1024
#define SMQ_MSG_SIZE_MAX 65536
#define SMQ_RETENTION_MIN_S 60
#define SMQ_RETENTION_MAX_S 604800
#define SMQ_VISIBILITY_MIN_S 1
#define SMQ_VISIBILITY_MAX_S 43200
#define SMQ_POLLING_WAIT_MAX_S 30
#define SMQ_PRIORITY_MIN 1
#define SMQ_PRIORITY_MAX 16
#define SMQ_PRIORITY_DEFAULT 8
#define SMQ_DLQ_MAX_RECEIVE_MIN 1
#define SMQ_DLQ_MAX_RECEIVE_MAX 1000

/*
 * Dead-letter policy (an smqd extension; names from SMQ's control plane).
 * A message received max_receive times that would be delivered once more is
 * moved instead, in the same transaction, to the target queue: same id,
 * body, priority and EnqueueTime; its expiry is counted from that original
 * EnqueueTime with the target's retention.  If the target does not exist
 * at that moment the message stays where it is and is delivered normally.
 */
struct smq_dlq_policy {
    int enabled;                             /* 0/1 */
    char target[SMQ_QUEUE_NAME_MAX + 1];     /* "" when disabled */
    int64_t max_receive;                     /* 1..1000 */
};

struct smq_queue_attrs {
    int64_t delay_s;
    int64_t max_msg_size;
    int64_t retention_s;
    int64_t visibility_s;
    int64_t polling_wait_s;
    int logging;                 /* 0/1 */
    struct smq_dlq_policy dlq;
};

/* Bits of smq_op.attrs_present. */
enum {
    SMQ_ATTR_DELAY = 1u << 0,
    SMQ_ATTR_MAX_MSG_SIZE = 1u << 1,
    SMQ_ATTR_RETENTION = 1u << 2,
    SMQ_ATTR_VISIBILITY = 1u << 3,
    SMQ_ATTR_POLLING_WAIT = 1u << 4,
    SMQ_ATTR_LOGGING = 1u << 5,
    SMQ_ATTR_DLQ = 1u << 6          /* the whole policy (enabled, target, max_receive) */
};

void engine_default_attrs(struct smq_queue_attrs *a);

struct smq_queue_info {
    char name[SMQ_QUEUE_NAME_MAX + 1];
    struct smq_queue_attrs attrs;
    int64_t create_s, modify_s;
    uint64_t n_active, n_inactive, n_delayed;
};

/* A message as returned by Receive or Peek. */
struct smq_msg_view {
    uint64_t seq;
    uint32_t handle_gen;         /* Receive only */
    int64_t enqueue_ms, first_dequeue_ms, next_visible_ms;
    uint32_t dequeue_count;
    int priority;
    char *body;                  /* body_len bytes in the op's body_block, not NUL-terminated
                                  * (engine_op_release frees the block) */
    size_t body_len;
    struct store_body_md5 body_md5;   /* as stored at send; absent for older rows */
};

struct smq_send_item {
    const char *body;            /* borrowed from the caller until done */
    size_t body_len;
    const unsigned char *body_md5;   /* STORE_BODY_MD5_LEN bytes, borrowed; NULL = none kept */
    int64_t delay_s;             /* 0 = the queue's DelaySeconds applies */
    int priority;                /* 1..16 */
};

struct smq_handle_ref {
    uint64_t seq;
    uint32_t gen;
    int err;                     /* per item: 0, or set by the caller (malformed) / engine */
};

/* Engine-wide figures (engine_stats, SMQ_OP_STATS). */
struct engine_stats {
    size_t queues, messages, waiters;
    uint64_t reloads;             /* state reloads after a lost transaction */
    bool storage_full;            /* refusing sends: the disk filled up */
    bool broken;                  /* state could not be reloaded: serving nothing */
    uint64_t dlq_move_failures;   /* moves skipped because the target was missing */
    uint64_t db_pages, free_pages, page_size;   /* database file, as of the last run */
    uint64_t vacuumed_pages;      /* freed pages returned to the file system */
};

enum smq_op_kind {
    SMQ_OP_CREATE_QUEUE,
    SMQ_OP_SET_QUEUE,
    SMQ_OP_GET_QUEUE,
    SMQ_OP_DELETE_QUEUE,
    SMQ_OP_LIST_QUEUES,
    SMQ_OP_SEND,
    SMQ_OP_RECEIVE,
    SMQ_OP_PEEK,
    SMQ_OP_DELETE_MSG,
    SMQ_OP_CHANGE_VISIBILITY,
    /* administration (admin listener, smqctl) */
    SMQ_OP_PURGE,                /* delete every message of a queue and/or its DLQ */
    SMQ_OP_REDRIVE,              /* move a DLQ's messages back to their source queues */
    SMQ_OP_STATS                 /* per-queue statistics; queue "" = every queue */
};

/* Per-queue statistics (SMQ_OP_STATS).  Counters count since start-up. */
struct smq_queue_stats {
    struct smq_queue_info info;
    int64_t oldest_enqueue_ms;   /* of any message in the queue; 0 = empty */
    uint64_t waiters;            /* parked long polls */
    uint64_t sent, received, deleted, expired;
    uint64_t dead_lettered;      /* moved from this queue to its DLQ */
    uint64_t redriven;           /* moved from this queue (a DLQ) back to a source */
    uint64_t redrive_pending;    /* still to move in a running redrive */
};

struct smq_op;
typedef void (*smq_op_done_fn)(struct smq_op *op, void *arg);

struct smq_op {
    enum smq_op_kind kind;
    char queue[SMQ_QUEUE_NAME_MAX + 1];

    /* ---- inputs (validated against fixed ranges by the API layer) ---- */
    struct smq_queue_attrs attrs;            /* CREATE/SET */
    unsigned attrs_present;
    struct {                                 /* LIST */
        char prefix[SMQ_QUEUE_NAME_MAX + 1];
        char marker[SMQ_QUEUE_NAME_MAX + 1];
        int ret_number;                      /* 1..1000 */
    } list;
    struct smq_send_item send[SMQ_BATCH_MAX];  /* SEND */
    size_t n_send;
    int max_msgs;                            /* RECEIVE/PEEK: 1..16 */
    int64_t wait_s;                          /* RECEIVE: 0..30, -1 = queue default */
    struct smq_handle_ref handles[SMQ_BATCH_MAX];   /* DELETE_MSG, CHANGE_VISIBILITY */
    size_t n_handles;
    bool batch_delete;                       /* DELETE_MSG: per-handle results, op result 0 */
    int64_t visibility_s;                    /* CHANGE_VISIBILITY: 0..43200 */
    struct {                                 /* PURGE */
        bool main;                           /* the queue's own messages */
        bool dlq;                            /* those of its DLQ target */
    } purge;
    struct {                                 /* REDRIVE (op->queue is the DLQ) */
        uint64_t max;                        /* 0 = every message now in the DLQ */
        uint32_t rate_per_s;                 /* 1..100000 messages per second */
    } redrive;
    bool totals_only;                        /* STATS: only op->totals (a health probe) */
    char request_id[25];                     /* for operation logs; "" = none */

    /* ---- outputs ---- */
    struct smq_errinfo result;               /* result.err == 0 on success */
    bool created;                            /* CREATE: true = 201, false = 204 */
    struct smq_queue_info info;              /* GET */
    struct smq_queue_info *listed;           /* LIST: malloc'd array */
    size_t n_listed;
    char next_marker[SMQ_QUEUE_NAME_MAX + 1];  /* LIST: "" when no more */
    uint64_t sent_seq[SMQ_BATCH_MAX];        /* SEND */
    struct smq_msg_view msgs[SMQ_BATCH_MAX]; /* RECEIVE/PEEK */
    size_t n_msgs;
    char *body_block;                        /* RECEIVE/PEEK: every msgs[i].body, one malloc */
    uint32_t new_gen;                        /* CHANGE_VISIBILITY */
    int64_t next_visible_ms;
    uint64_t n_purged, n_purged_dlq;         /* PURGE */
    uint64_t n_redrive;                      /* REDRIVE: messages scheduled */
    struct smq_queue_stats *stats;           /* STATS: malloc'd array, sorted by name */
    size_t n_stats;
    struct engine_stats totals;              /* STATS */

    /* ---- completion: called after commit (and flush; see engine_run) ---- */
    smq_op_done_fn done;
    void *done_arg;
    /* Optional: true when the client that waits for this op has gone away.
     * Asked (on the engine thread) about parked long polls, before one is
     * handed a message and about once a second, so that a closed connection
     * neither takes a message nor holds its slot until the deadline. */
    bool (*client_gone)(struct smq_op *op, void *arg);

    /* ---- engine-private ---- */
    struct smq_op *next;                     /* run list, then completion list */
    struct smq_op *wait_prev, *wait_next;    /* parked long poll, per queue */
    struct smq_queue *wait_queue;
    struct twheel_node wait_timer;
    uint64_t sync_ticket;                    /* syncer.c: the commit it waits to be flushed */
};

/* Zeroes op and sets its kind (inputs at neutral defaults). */
void engine_op_init(struct smq_op *op, enum smq_op_kind kind);
/* Frees what the engine allocated into op's outputs (bodies, list). */
void engine_op_release(struct smq_op *op);
/* Undoes what a finished op would report (its outputs released, no queue
 * "created") and sets its result to err with message msg (NULL: the
 * standard text): for ops whose effects did not reach the disk. */
void engine_op_fail(struct smq_op *op, int err, const char *msg);
/* Calls done for every op of the ->next list, in order, unlinking each. */
void engine_answer(struct smq_op *ops);

struct smq_engine;

struct smq_syncer;

struct smq_engine_opts {
    const struct smq_clock *clock;
    struct smq_store *store;      /* borrowed; outlives the engine */
    int max_queues;
    uint64_t reserve_margin;      /* free bytes required beside the reserve to retake it */
    bool reserve_missing;         /* the reserve could not be allocated at start: begin in
                                   * storage-full mode until it can be taken */
};

/* Loads every queue and message from the store (recovery) and arms timers.
 * Returns 0, or an SMQ_E_* code with a reason in err. */
int engine_open(const struct smq_engine_opts *opts, struct smq_engine **out,
                char *err, size_t err_size);
void engine_close(struct smq_engine *e);

/* From now on finished ops are answered by the syncer once the WAL is
 * flushed (syncer.h), on its thread.  Call before the engine thread starts
 * and after any caller that needs done at once (declare.c). */
void engine_set_syncer(struct smq_engine *e, struct smq_syncer *syncer);

/* The id/handle keys (read-only after open; safe to read from any thread). */
const struct handle_keys *engine_keys(const struct smq_engine *e);

/*
 * One group commit: fires due timers, runs ops (a list linked by ->next, may
 * be NULL) in order, commits, then calls done for every finished op (with
 * a syncer: on the syncer's thread, after the WAL flush that covers them).
 * Receives that must wait are parked and finish in a later run.
 */
void engine_run(struct smq_engine *e, struct smq_op *ops);

/* Milliseconds until engine_run should be called even without new ops
 * (0 = now; UINT64_MAX = nothing scheduled). */
uint64_t engine_next_timeout_ms(struct smq_engine *e);

/* Finishes every parked long poll with MessageNotExist (shutdown). */
void engine_drain(struct smq_engine *e);

/* Engine thread only (SMQ_OP_STATS carries a copy to other threads). */
void engine_stats(const struct smq_engine *e, struct engine_stats *out);
/* Checks that the in-memory bookkeeping agrees with itself: per queue, the
 * state counters against the nodes really in its Active heap and its age
 * heap (each node of that queue; Active ones Active), the waiter counts;
 * in all, the message table.  O(messages).  NULL when consistent, else
 * what disagrees (a static string).  For tests and debugging; call between
 * runs. */
const char *engine_check(const struct smq_engine *e);

#endif
