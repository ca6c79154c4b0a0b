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
#include "smqd/handle.h"
#include "smqd/op.h"
#include "smqd/store.h"

struct smq_engine;

struct smq_syncer;
struct push_job;

/* How the engine hands an HTTP push attempt to the push pool (push.h's
 * push_submit contract): 0 = taken (the pool frees the job); anything else
 * (SMQ_E_SERVICE_UNAVAILABLE: no room, or no pool) = not taken, the job
 * stays the engine's and the attempt is made later.  Called on the engine
 * thread; the daemon wraps the pool it starts and stops (node.c), so the
 * engine never reaches the pool itself. */
typedef int (*smq_engine_push_fn)(void *arg, struct push_job *job);

struct smq_engine_opts {
    const struct smq_clock *clock;
    struct smq_store *store;      /* borrowed; outlives the engine */
    int max_queues;
    int max_topics;               /* [limits]; 0 = SMQ_TOPICS_DEFAULT_MAX */
    int max_subs_per_topic;       /* [limits]; 0 = SMQ_SUBS_PER_TOPIC_DEFAULT_MAX */
    const char *account_id;       /* [topics] account_id; NULL = NOTIFY_ACCOUNT_ID_DEFAULT */
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

/* From now on HTTP subscriptions' notifications are pushed through
 * submit(arg, job) once their rows are durable: committed, and with a
 * syncer flushed (docs/protocol.md §13.12) (NULL: they wait, stored,
 * as without a pool); outcomes come back as SMQ_OP_PUSH_RESULT ops.  Call
 * before the engine thread starts (or on it). */
void engine_set_push(struct smq_engine *e, smq_engine_push_fn submit, void *arg);

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
void engine_stats(const struct smq_engine *e, struct smq_engine_stats *out);
/* The most queues the engine holds ([limits] max_queues). */
int engine_max_queues(const struct smq_engine *e);
/* Checks that the in-memory bookkeeping agrees with itself: per queue, the
 * state counters against the nodes really in its Active heap and its age
 * heap (each node of that queue; Active ones Active), the waiter counts;
 * in all, the message table.  O(messages).  NULL when consistent, else
 * what disagrees (a static string).  For tests and debugging; call between
 * runs. */
const char *engine_check(const struct smq_engine *e);
/* True when the engine's table of kinds (engine.c) has a row for kind,
 * even one that answers "not run yet": tests check every kind has one. */
bool engine_has_kind(enum smq_op_kind kind);

#endif
