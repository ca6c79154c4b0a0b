/*
 * queue.h — the in-memory model the engine works on: queues, the compact
 * per-message metadata, and the state bookkeeping that keeps every counter
 * exact.
 *
 * A message is in exactly one place at a time:
 *   Active   — in its queue's heap (ordered by priority, then sequence) and on
 *              the timer wheel for its retention expiry;
 *   Delayed / Inactive — on the timer wheel only, armed for the earlier of
 *              visibility and expiry.
 * queue_msg_place() derives the state from the times and puts the message
 * there; queue_msg_unplace() takes it out.  Every transition is
 * unplace → change fields → place, so counters cannot drift.
 *
 * Whatever its state, a message is also in its queue's age heap (oldest
 * EnqueueTime first) from queue_msg_adopt() to queue_msg_release(), so the
 * oldest message's age and a queue's own messages are found without walking
 * every message of every queue.
 *
 * Bodies are not here: they stay in the store.  sizeof(struct smq_msg) is
 * what each queued message costs (plus one hash bucket pointer).
 */
#ifndef SMQD_QUEUE_H
#define SMQD_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "smqd/heap.h"
#include "smqd/mns.h"
#include "smqd/op.h"
#include "smqd/twheel.h"

enum smq_msg_state {
    SMQ_MSG_DELAYED = 0,
    SMQ_MSG_ACTIVE = 1,
    SMQ_MSG_INACTIVE = 2
};

struct smq_queue;

struct smq_msg {
    struct twheel_node timer;        /* visibility/delay/expiry deadline */
    struct heap_node hnode;          /* Active heap link */
    struct heap_node anode;          /* age heap link (any state) */
    struct smq_msg *hash_next;       /* seq → message table chain */
    struct smq_queue *queue;
    uint64_t seq;
    int64_t enqueue_ms, first_dequeue_ms, visible_ms, expire_ms;   /* epoch ms */
    uint32_t dequeue_count, handle_gen;
    uint8_t priority;
    uint8_t state;                   /* enum smq_msg_state */
    /* Dead-lettered: the id of the queue it came from (for a redrive), 0 =
     * none.  32 bits fit in what was padding; a queue id beyond them (four
     * billion queue creations) is kept as 0 and such a message is not redriven. */
    uint32_t src_queue_id;
};

/* Lifetime counters of one queue (since start-up; for metrics). */
struct queue_counters {
    uint64_t sent, received, deleted, expired, dead_lettered, redriven;
};

struct smq_queue {
    int64_t id;
    char name[SMQ_QUEUE_NAME_MAX + 1];
    struct smq_queue_attrs attrs;
    int64_t create_s, modify_s;
    struct heap active;
    struct heap by_age;                           /* every message, oldest EnqueueTime first */
    uint64_t n_active, n_inactive, n_delayed;
    struct smq_op *waiters_head, *waiters_tail;   /* parked long polls, FIFO */
    struct smq_queue *ready_next;                 /* on the engine's ready list */
    bool ready;
    uint64_t n_waiters;                           /* parked long polls */
    struct queue_counters count;
    struct queue_redrive *redrive;                /* a running redrive from this DLQ, or NULL */
};

/* A running redrive: the seqs it was started for (oldest first), taken in
 * order at the rate; a seq no longer Active here is passed over. */
struct queue_redrive {
    uint64_t *seqs;
    size_t n, next;
    uint32_t rate;                   /* messages per second */
    uint64_t credit;                 /* thousandths of a message due */
};

/* Frees a redrive (NULL is a no-op). */
void queue_redrive_free(struct queue_redrive *r);
/* Messages a running redrive from q still has to look at (0: none runs). */
uint64_t queue_redrive_pending(const struct smq_queue *q);

/* Converts between epoch ms (message times) and wheel (monotonic) ms. */
struct queue_timebase {
    int64_t epoch_minus_mono_ms;
};

static inline uint64_t queue_epoch_to_mono(const struct queue_timebase *tb, int64_t epoch_ms)
{
    int64_t mono = epoch_ms - tb->epoch_minus_mono_ms;
    return mono < 0 ? 0 : (uint64_t)mono;
}

/* ---- queue registry: sorted by name, binary search ---- */

struct queue_registry {
    struct smq_queue **items;
    size_t n, cap;
};

void queue_registry_init(struct queue_registry *r);
/* Frees the array (not the queues). */
void queue_registry_free(struct queue_registry *r);
struct smq_queue *queue_registry_find(const struct queue_registry *r, const char *name);
/* By id: O(queues), for the rare lookups by id (recovery, redrive). */
struct smq_queue *queue_registry_find_id(const struct queue_registry *r, int64_t id);
/* Index of the first queue whose name is >= name. */
size_t queue_registry_lower_bound(const struct queue_registry *r, const char *name);
/* Makes room for one more; call before any write so that the insert cannot
 * fail later.  0 or SMQ_E_NOMEM. */
int queue_registry_reserve(struct queue_registry *r);
/* Inserts q (a name not present; room reserved). */
void queue_registry_insert(struct queue_registry *r, struct smq_queue *q);
void queue_registry_remove(struct queue_registry *r, struct smq_queue *q);

struct smq_queue *queue_new(int64_t id, const char *name, const struct smq_queue_attrs *attrs,
                            int64_t create_s, int64_t modify_s);
void queue_free(struct smq_queue *q);
void queue_info(const struct smq_queue *q, struct smq_queue_info *out);

/* ---- message table: seq → message, chained hash that grows ---- */

struct msg_table {
    struct smq_msg **buckets;
    size_t n_buckets;      /* power of two */
    size_t count;
};

int msg_table_init(struct msg_table *t);
void msg_table_free(struct msg_table *t);       /* frees the buckets, not the messages */
struct smq_msg *msg_table_find(const struct msg_table *t, uint64_t seq);
/* Never fails: if growing the table is impossible the chains get longer. */
void msg_table_insert(struct msg_table *t, struct smq_msg *m);
void msg_table_remove(struct msg_table *t, struct smq_msg *m);

/* ---- placement ---- */

/* Puts m in the place its times say at now_ms (epoch), arming the wheel. */
void queue_msg_place(struct smq_queue *q, struct smq_msg *m, int64_t now_ms,
                     struct twheel *w, const struct queue_timebase *tb);
/* Takes m out of its heap or off the wheel and out of the counters. */
void queue_msg_unplace(struct smq_queue *q, struct smq_msg *m, struct twheel *w);

static inline struct smq_msg *queue_msg_from_timer(struct twheel_node *n)
{
    return (struct smq_msg *)((char *)n - offsetof(struct smq_msg, timer));
}

/* The highest-priority, oldest Active message, or NULL. */
struct smq_msg *queue_first_active(const struct smq_queue *q);
/* Calls fn for every Active message of q, in no particular order; fn must
 * not change q.  O(Active messages). */
void queue_foreach_active(const struct smq_queue *q, void (*fn)(struct smq_msg *m, void *arg),
                          void *arg);

/* ---- membership (the age heap) ---- */

/* m becomes one of q's messages / stops being one (O(log n) each). */
void queue_msg_adopt(struct smq_queue *q, struct smq_msg *m);
void queue_msg_release(struct smq_queue *q, struct smq_msg *m);
/* The message with the oldest EnqueueTime (ties: lowest seq), or NULL. */
struct smq_msg *queue_oldest_msg(const struct smq_queue *q);

#endif
