/*
 * twheel.h — a hierarchical timing wheel on a monotonic millisecond clock.
 *
 * Three levels of 1024 slots: 1 ms, 1.024 s and ~17.5 min per slot, so one
 * rotation of the top level spans ~12.4 days (a 7-day delay plus slack).
 * Deadlines further out are parked in the top level and re-checked when
 * their slot comes round.
 *
 * The node is embedded in the owner (a message, a long-poll waiter), so arm
 * and cancel are O(1), never allocate and cannot fail.  Every node keeps its
 * exact deadline; a node is re-checked when its slot is reached and
 * re-inserted if it is early, so a node never fires before its deadline.
 *
 * twheel_advance(now) first moves every due node to a private ready list and
 * only then runs callbacks one at a time, so a callback may arm, re-arm or
 * cancel any node — including other due nodes not yet fired (a cancelled one
 * simply never fires).  A late call catches up on every slot it missed.
 *
 * Firing order within one twheel_advance: nodes that were already overdue
 * when armed come first, in arming order; then the rest by deadline, equal
 * deadlines in arming order (for deadlines armed less than 2^30 ms ahead;
 * parked ones further out are not tie-ordered).
 *
 * Times are monotonic milliseconds; keep them below UINT64_MAX - 2^31 so the
 * slot arithmetic cannot overflow.
 *
 * Not thread-safe: one owner (the engine thread) uses a wheel.
 */
#ifndef SMQD_TWHEEL_H
#define SMQD_TWHEEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TWHEEL_LEVELS 3
#define TWHEEL_SLOT_BITS 10
#define TWHEEL_SLOTS (1u << TWHEEL_SLOT_BITS)

struct twheel_node;
typedef void (*twheel_cb)(struct twheel_node *node, uint64_t now_ms, void *arg);

struct twheel_node {
    struct twheel_node *next, *prev;    /* circular list links; NULL when not armed */
    uint64_t deadline_ms;               /* exact monotonic deadline */
};

struct twheel {
    struct twheel_node slots[TWHEEL_LEVELS][TWHEEL_SLOTS];   /* list sentinels */
    uint64_t occupied0[TWHEEL_SLOTS / 64];   /* bitmap of non-empty level-0 slots */
    /* Same for levels 1 and 2: a catch-up jumps straight to the next
     * non-empty cascade, and next_timeout never reports an idle one. */
    uint64_t occupied_hi[TWHEEL_LEVELS - 1][TWHEEL_SLOTS / 64];
    /* sentinel: due nodes not yet fired — those collected by the advance in
     * progress, and nodes armed with a deadline the wheel has already passed */
    struct twheel_node ready;
    uint64_t cur_ms;          /* next millisecond whose level-0 slot is processed */
    size_t count;             /* armed nodes, including those on the ready list */
    twheel_cb cb;             /* called for every node that fires */
    void *cb_arg;
};

/* Starts the wheel at now_ms; cb is called for each due node. */
void twheel_init(struct twheel *w, uint64_t now_ms, twheel_cb cb, void *cb_arg);

/* A node must be zero-initialised (or cancelled) before its first arm. */
static inline void twheel_node_init(struct twheel_node *n)
{
    n->next = n->prev = NULL;
    n->deadline_ms = 0;
}
static inline bool twheel_armed(const struct twheel_node *n) { return n->prev != NULL; }

/* Arms n for deadline_ms (re-arms if already armed).  A deadline in the past
 * fires on the next twheel_advance. */
void twheel_arm(struct twheel *w, struct twheel_node *n, uint64_t deadline_ms);

/* Disarms n; a no-op when n is not armed. */
void twheel_cancel(struct twheel *w, struct twheel_node *n);

/* Fires every node with deadline <= now_ms, in deadline order per slot.
 * Returns the number fired. */
size_t twheel_advance(struct twheel *w, uint64_t now_ms);

/* Milliseconds until the wheel next needs twheel_advance (0 = now), or
 * UINT64_MAX when nothing is armed.  May be earlier than the first deadline
 * (e.g. a cascade point), never later. */
uint64_t twheel_next_timeout_ms(const struct twheel *w, uint64_t now_ms);

static inline size_t twheel_count(const struct twheel *w) { return w->count; }

#endif
