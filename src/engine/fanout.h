/*
 * fanout.h — the engine's side of publishing and delivery
 * (docs/protocol.md §13.5, §13.8, §13.9, §13.12, §13.13): a publish's rows,
 * the delivery of each pending notification into its queue, the retry
 * schedule of a failed delivery, giving up (into the subscription's
 * dead-letter queue, or dropped), and loading pending notifications back
 * from the store.
 *
 * The store rule of the engine holds: a notification's row goes in the same
 * savepoint as what its delivery writes (the queue message made, the
 * published message's row deleted with its last notification), and memory
 * changes only after the write succeeded, so a crash repeats at most the
 * delivery it interrupted.  A notification for an HTTP endpoint is handed
 * to the push pool (engine_set_push) once the commit that wrote its row is
 * durable (with a syncer: flushed), and its outcome comes back as an SMQ_OP_PUSH_RESULT op; a
 * notification in flight is not handed over again.  Engine thread only.
 */
#ifndef SMQD_FANOUT_H
#define SMQD_FANOUT_H

#include <stdbool.h>
#include <stdint.h>

#include "engine_core.h"

/* Sets up the fan-out's state at open (account_id NULL = the default). */
void fanout_init(struct smq_engine *e, uint64_t now_mono, const char *account_id);
void fanout_free(struct smq_engine *e);

/* PublishMessage on t: writes the message and one notification per
 * matching subscription in one savepoint (only a sequence number when none
 * matches).  0 or an SMQ_E_* code. */
int fanout_publish(struct smq_engine *e, struct smq_op *op, struct smq_topic *t);

/* SMQ_OP_PUSH_RESULT: one push attempt's outcome (§13.10, §13.12): OK
 * retires the notification; CANCELLED puts it back as it was; any other
 * failure schedules the next attempt or gives it up.  An outcome of a
 * notification no longer in flight is ignored.  Always 0. */
int fanout_push_result(struct smq_engine *e, struct smq_op *op);
/* engine_set_push. */
void fanout_set_push(struct smq_engine *e, int (*submit)(void *arg, struct push_job *job),
                     void *arg);

/* Fires due retries (mono ms). */
void fanout_advance(struct smq_engine *e, uint64_t now_mono);
/* Delivers READY notifications into their queues, a bounded number per
 * call, round-robin over the subscriptions. */
void fanout_run(struct smq_engine *e);
/* Whether the open transaction should stay open for more deliveries:
 * nothing waits for its commit, it holds deliveries and has room for more,
 * and a queue subscription has more to deliver.  A fan-out then commits in
 * full shares, not one per engine run. */
bool fanout_fills_txn(const struct smq_engine *e);
/* The run's transaction committed or was lost: the next one takes a fresh
 * share of deliveries. */
void fanout_txn_ended(struct smq_engine *e);
/* Milliseconds until fanout_run has work (0 = now; UINT64_MAX = none). */
uint64_t fanout_timeout_ms(const struct smq_engine *e, uint64_t now_mono);

/* Loads the published messages and notifications of the loaded topics
 * (recovery, after the topics and subscriptions); by_id is every loaded
 * topic sorted by id.  0 or an SMQ_E_* code. */
int fanout_load(struct smq_engine *e, struct smq_topic *const *by_id, size_t n_topics);
/* Forgets every published message and notification (before a reload). */
void fanout_clear(struct smq_engine *e);
/* The model's counters against what it holds; NULL when consistent. */
const char *fanout_check(const struct smq_engine *e);

#endif
