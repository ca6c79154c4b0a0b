/*
 * msgs.h — the life of a message in the engine, below the operations that
 * cause it: linking a message into memory, the timer that moves it between
 * Delayed, Active and Inactive and expires it, destroying it, moving it to
 * another queue (dead-letter, redrive), the dead-letter rule that decides
 * whether the next Active message is delivered or moved, and the ids.
 *
 * Every change follows the store rule of the engine: the row is written
 * first (inside the operation's savepoint, txn.h), memory only after the
 * write succeeded.  Expiry needs no write: a row past its expiry is never
 * loaded again, so it is deleted lazily (msgs_flush_expired).
 *
 * Engine thread only.
 */
#ifndef SMQD_MSGS_H
#define SMQD_MSGS_H

#include <stdbool.h>
#include <stdint.h>

#include "engine_core.h"

/* Sets up the message wheel (at open). */
void msgs_init(struct smq_engine *e, uint64_t now_mono);

/* The store row of m. */
void msgs_record(const struct smq_msg *m, struct store_msg_rec *r);

/* Registers m (its fields set) in q and places it by its times; an Active
 * one marks q ready for its parked polls. */
void msgs_link(struct smq_engine *e, struct smq_queue *q, struct smq_msg *m);
/* Takes m out of memory and frees it (its rows are the caller's). */
void msgs_destroy(struct smq_engine *e, struct smq_msg *m);
/* Frees every message of q: O(k log k) for its k messages. */
void msgs_destroy_queue(struct smq_engine *e, struct smq_queue *q);
/* Counts m as expired in its queue, logs it and frees it; its row is
 * deleted lazily. */
void msgs_expire(struct smq_engine *e, struct smq_msg *m);
/* A row that is not loaded (expired, or of no queue) is deleted lazily too. */
void msgs_forget_row(struct smq_engine *e, int64_t queue_id, uint64_t seq);
/* Deletes the rows of expired messages: when the buffer is full, when a
 * transaction is open anyway, or when force. */
void msgs_flush_expired(struct smq_engine *e, bool force);

/* Gives m (taken out of its place: queue_msg_unplace) the delivery state
 * of next — receive count, handle generation, first receive, visibility —
 * and places it by it; an Active one marks its queue ready. */
void msgs_take_state(struct smq_engine *e, struct smq_msg *m, const struct smq_msg *next);

/*
 * If m (Active, in q) has used up its receives under q's dead-letter
 * policy, moves it to the policy's target queue and returns true; false =
 * deliver it (no policy, receives left, or the move could not happen: a
 * message is never dropped).  A message moved past the target's retention
 * is expired there at once.
 */
bool msgs_dead_letter(struct smq_engine *e, struct smq_queue *q, struct smq_msg *m,
                      const char *request_id);
/* Moves used-up messages from the head of q until a deliverable one (or
 * none) is there, so that a parked poll is woken only for a message it gets. */
void msgs_dead_letter_due(struct smq_engine *e, struct smq_queue *q, const char *request_id);
/*
 * Moves m from its queue to `to` as a fresh, Active message: receives
 * counted from 0 again, a new handle generation (handles given out for it
 * are stale), expiry counted from the original EnqueueTime with to's
 * retention; src is the queue it came from (0 = none).  0 or the store's
 * error.  A message already past that expiry is placed but not offered to
 * to's parked polls (msgs_moved_expired): the caller expires it after
 * logging the move.
 */
int msgs_move(struct smq_engine *e, struct smq_msg *m, struct smq_queue *to, uint32_t src);
bool msgs_moved_expired(const struct smq_engine *e, const struct smq_msg *m);

/* The next message sequence number, reserving a new block of them in meta
 * (inside the caller's savepoint) when needed.  0 or the store's error. */
int msgs_next_seq(struct smq_engine *e, uint64_t *seq);
/* After the savepoint of msgs_next_seq: a new reservation counts only if
 * the savepoint was kept. */
void msgs_settle_seqs(struct smq_engine *e, bool kept);
/* Writes a high-water mark in meta (inside the caller's savepoint). */
int msgs_write_mark(struct smq_engine *e, const char *key, uint64_t value);

#endif
