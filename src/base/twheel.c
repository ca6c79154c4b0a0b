/*
 * twheel.c — owns the hierarchical timer wheel: where a node is placed,
 * how far-out nodes cascade down, how a late advance catches up, and the
 * ready list that lets callbacks arm and cancel freely.
 *
 * Layout.  Level L has 1024 slots of 2^(10L) ms each.  A node whose deadline
 * is delta = deadline - cur_ms ahead goes to the lowest level whose span
 * covers delta, at the slot indexed by the deadline's own bits.  That slot
 * is next visited (fired for level 0, cascaded for levels 1 and 2) at a time
 * <= deadline, so nothing fires early.  A cascade re-places each node
 * relative to the new cur_ms, so it drops a level (or is re-parked, for
 * deadlines beyond the 2^30 ms horizon).  A level-0 slot visited at time t
 * holds only nodes due exactly at t.
 *
 * Catch-up.  One occupancy bitmap per level tells which slots are non-empty.
 * advance() never walks empty milliseconds: it computes the next time any
 * non-empty slot is visited and jumps there, so a stall of days costs a few
 * bitmap scans per non-empty slot, not one step per millisecond.
 *
 * Tie order.  A node armed earlier for the same deadline sits at a higher
 * level (delta was larger).  A cascade therefore prepends its nodes to the
 * target slot, walking its own list backwards, and level 1 cascades before
 * level 2 at a shared boundary; equal deadlines then fire in arming order.
 */
#include "smqd/twheel.h"

#define SLOT_MASK (TWHEEL_SLOTS - 1u)
#define BITMAP_WORDS (TWHEEL_SLOTS / 64u)
/* Deltas at or beyond this do not fit the top level: park and re-check. */
#define HORIZON_MS ((uint64_t)1 << (TWHEEL_LEVELS * TWHEEL_SLOT_BITS))

static unsigned level_shift(unsigned level)
{
    return level * TWHEEL_SLOT_BITS;
}

/* ---- intrusive circular lists (sentinel-headed) ---- */

static void list_init(struct twheel_node *s)
{
    s->next = s->prev = s;
}

static bool list_empty(const struct twheel_node *s)
{
    return s->next == s;
}

static void list_append(struct twheel_node *s, struct twheel_node *n)
{
    n->prev = s->prev;
    n->next = s;
    s->prev->next = n;
    s->prev = n;
}

static void list_prepend(struct twheel_node *s, struct twheel_node *n)
{
    n->next = s->next;
    n->prev = s;
    s->next->prev = n;
    s->next = n;
}

static void list_del(struct twheel_node *n)
{
    n->prev->next = n->next;
    n->next->prev = n->prev;
}

/* Moves every node of src to dst (which must be empty); src ends empty. */
static void list_move_all(struct twheel_node *dst, struct twheel_node *src)
{
    if (list_empty(src)) {
        list_init(dst);
        return;
    }
    dst->next = src->next;
    dst->prev = src->prev;
    dst->next->prev = dst;
    dst->prev->next = dst;
    list_init(src);
}

/* ---- occupancy bitmaps ---- */

static const uint64_t *occupancy(const struct twheel *w, unsigned level)
{
    return level == 0 ? w->occupied0 : w->occupied_hi[level - 1];
}

static void mark(struct twheel *w, unsigned level, unsigned slot, bool on)
{
    uint64_t *bm = level == 0 ? w->occupied0 : w->occupied_hi[level - 1];
    uint64_t bit = (uint64_t)1 << (slot % 64);

    if (on)
        bm[slot / 64] |= bit;
    else
        bm[slot / 64] &= ~bit;
}

/* First set bit at or after `from`, wrapping round; -1 when none is set. */
static int find_set(const uint64_t *bm, unsigned from)
{
    unsigned word = from / 64;
    uint64_t bits = bm[word] & (~(uint64_t)0 << (from % 64));

    for (unsigned i = 0; i <= BITMAP_WORDS; i++) {
        if (bits)
            return (int)(word * 64 + (unsigned)__builtin_ctzll(bits));
        word = (word + 1) % BITMAP_WORDS;
        bits = bm[word];
    }
    /* The loop re-read the start word whole on its last pass, so the
     * bits below `from` were covered too. */
    return -1;
}

/*
 * Called with the sentinel left behind when an unlink emptied a list.  Only
 * wheel slots have occupancy bits; the ready list and the local lists used
 * while cascading or firing do not.  Comparing addresses as integers keeps
 * this O(1) without storing a level in every node.
 */
static void note_emptied(struct twheel *w, const struct twheel_node *s)
{
    uintptr_t off = (uintptr_t)s - (uintptr_t)&w->slots[0][0];
    size_t idx;

    if (off >= sizeof w->slots)
        return;
    idx = off / sizeof w->slots[0][0];
    mark(w, (unsigned)(idx / TWHEEL_SLOTS), (unsigned)(idx % TWHEEL_SLOTS), false);
}

/* Unlinks an armed node and marks it unarmed; count is the caller's job. */
static void unlink_node(struct twheel *w, struct twheel_node *n)
{
    struct twheel_node *prev = n->prev;

    list_del(n);
    n->next = n->prev = NULL;
    if (list_empty(prev))
        note_emptied(w, prev);
}

/* ---- placement and cascading ---- */

static unsigned level_for(uint64_t delta)
{
    unsigned level = 0;

    while (level + 1 < TWHEEL_LEVELS && delta >> level_shift(level + 1))
        level++;
    return level;
}

/*
 * Puts n where the placement rule says, relative to cur_ms.  A deadline the
 * wheel has already passed goes straight to the ready list, so it fires on
 * the very next advance even if that advance is for the same `now`.
 */
static void place(struct twheel *w, struct twheel_node *n, bool front)
{
    uint64_t cur = w->cur_ms;
    uint64_t at = n->deadline_ms;
    unsigned level, slot;
    struct twheel_node *s;

    if (at < cur) {
        list_append(&w->ready, n);
        return;
    }
    level = level_for(at - cur);
    if (at - cur >= HORIZON_MS)
        at = cur + HORIZON_MS - 1;  /* park: the latest top-level slot */
    slot = (unsigned)(at >> level_shift(level)) & SLOT_MASK;
    s = &w->slots[level][slot];
    if (front)
        list_prepend(s, n);
    else
        list_append(s, n);
    mark(w, level, slot, true);
}

/*
 * Re-places every node of one slot relative to cur_ms.  The slot is detached
 * first, so a node that lands back at this level cannot be seen twice.
 * Walking backwards and prepending keeps the slot's own order and puts its
 * (earlier-armed) nodes ahead of nodes already in the target slots.
 */
static void cascade(struct twheel *w, unsigned level, unsigned slot)
{
    struct twheel_node pending;

    list_move_all(&pending, &w->slots[level][slot]);
    mark(w, level, slot, false);
    while (!list_empty(&pending)) {
        struct twheel_node *n = pending.prev;

        list_del(n);
        place(w, n, true);
    }
}

/* Moves the level-0 slot due at t to the ready list. */
static void collect(struct twheel *w, uint64_t t)
{
    struct twheel_node *s = &w->slots[0][t & SLOT_MASK];

    while (!list_empty(s)) {
        struct twheel_node *n = s->next;

        list_del(n);
        /* Cannot happen by the placement rule; re-placing keeps the
         * never-early promise even if that rule is ever broken. */
        if (n->deadline_ms > t)
            place(w, n, false);
        else
            list_append(&w->ready, n);
    }
    mark(w, 0, (unsigned)(t & SLOT_MASK), false);
}

/* Processes the millisecond t: cascades that fall on it, then its slot. */
static void visit(struct twheel *w, uint64_t t)
{
    uint64_t l1_span = (uint64_t)1 << level_shift(1);
    uint64_t l2_span = (uint64_t)1 << level_shift(2);

    w->cur_ms = t;
    /* Level 1 before level 2: see "Tie order" above.  Level-2 nodes never
     * land in the level-1 slot cascading at the same t (their delta is
     * either < 1024, straight to level 0, or past that slot). */
    if ((t & (l1_span - 1)) == 0) {
        cascade(w, 1, (unsigned)(t >> level_shift(1)) & SLOT_MASK);
        if ((t & (l2_span - 1)) == 0)
            cascade(w, 2, (unsigned)(t >> level_shift(2)) & SLOT_MASK);
    }
    collect(w, t);
    w->cur_ms = t + 1;
}

/* ---- finding the next time something must happen ---- */

/* First time >= cur_ms at which a non-empty slot of `level` is visited,
 * or UINT64_MAX if the level is empty. */
static uint64_t next_visit(const struct twheel *w, unsigned level)
{
    unsigned shift = level_shift(level);
    uint64_t span = (uint64_t)1 << shift;
    uint64_t first = (w->cur_ms + span - 1) & ~(span - 1);
    unsigned from = (unsigned)(first >> shift) & SLOT_MASK;
    int slot = find_set(occupancy(w, level), from);

    if (slot < 0)
        return UINT64_MAX;
    return first + ((uint64_t)(((unsigned)slot - from) & SLOT_MASK) << shift);
}

static uint64_t next_event(const struct twheel *w)
{
    uint64_t best = UINT64_MAX;

    for (unsigned level = 0; level < TWHEEL_LEVELS; level++) {
        uint64_t t = next_visit(w, level);

        if (t < best)
            best = t;
    }
    return best;
}

/* Visits every non-empty slot due up to now, then parks cur_ms at now + 1. */
static void walk(struct twheel *w, uint64_t now_ms)
{
    while (w->cur_ms <= now_ms) {
        uint64_t t = next_event(w);

        if (t > now_ms)
            break;
        visit(w, t);
    }
    if (w->cur_ms <= now_ms)
        w->cur_ms = now_ms + 1;
}

/*
 * Fires the ready list.  It is moved to a local list first, so a node that a
 * callback arms with a past deadline waits in w->ready for the next advance
 * instead of firing in a loop here.  Cancelling a node still on the local
 * list just unlinks it.
 */
static size_t fire(struct twheel *w, uint64_t now_ms)
{
    struct twheel_node batch;
    size_t fired = 0;

    list_move_all(&batch, &w->ready);
    while (!list_empty(&batch)) {
        struct twheel_node *n = batch.next;

        unlink_node(w, n);
        w->count--;
        fired++;
        w->cb(n, now_ms, w->cb_arg);
    }
    return fired;
}

/* ---- public API ---- */

void twheel_init(struct twheel *w, uint64_t now_ms, twheel_cb cb, void *cb_arg)
{
    for (unsigned level = 0; level < TWHEEL_LEVELS; level++)
        for (unsigned slot = 0; slot < TWHEEL_SLOTS; slot++)
            list_init(&w->slots[level][slot]);
    for (unsigned i = 0; i < BITMAP_WORDS; i++) {
        w->occupied0[i] = 0;
        for (unsigned level = 1; level < TWHEEL_LEVELS; level++)
            w->occupied_hi[level - 1][i] = 0;
    }
    list_init(&w->ready);
    w->cur_ms = now_ms;
    w->count = 0;
    w->cb = cb;
    w->cb_arg = cb_arg;
}

void twheel_arm(struct twheel *w, struct twheel_node *n, uint64_t deadline_ms)
{
    twheel_cancel(w, n);
    n->deadline_ms = deadline_ms;
    place(w, n, false);
    w->count++;
}

void twheel_cancel(struct twheel *w, struct twheel_node *n)
{
    if (!twheel_armed(n))
        return;
    unlink_node(w, n);
    w->count--;
}

size_t twheel_advance(struct twheel *w, uint64_t now_ms)
{
    walk(w, now_ms);
    return fire(w, now_ms);
}

uint64_t twheel_next_timeout_ms(const struct twheel *w, uint64_t now_ms)
{
    uint64_t t;

    if (w->count == 0)
        return UINT64_MAX;
    /* Overdue nodes wait on the ready list.  So do the remaining nodes of
     * an advance in progress (count > 0 with every slot empty), when a
     * callback asks. */
    t = list_empty(&w->ready) ? next_event(w) : now_ms;
    if (t == UINT64_MAX || t <= now_ms)
        return 0;
    return t - now_ms;
}
