/*
 * test_twheel.c — unit tests for the timer wheel (src/base/twheel.c): exact firing
 * times across every level boundary and wrap, ordering, callbacks that arm
 * and cancel, catch-up after stalls, next_timeout_ms and count bookkeeping.
 * Time is only numbers passed in; nothing sleeps.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "smqd/twheel.h"

#define L1_MS ((uint64_t)1 << 10)
#define L2_MS ((uint64_t)1 << 20)
#define HORIZON_MS ((uint64_t)1 << 30)
#define DAY_MS ((uint64_t)86400000)
#define WEEK_MS (7 * DAY_MS)     /* 604800000: the MNS maximum delay */
#define ORDER_MAX 16384

struct fx;

/* A test timer; the wheel node is first so a callback can cast back. */
struct tnode {
    struct twheel_node node;
    int id;
    unsigned fires;
    uint64_t fired_at;
    uint64_t armed_at;          /* the `now` when last armed (strict checks) */
    void (*action)(struct fx *f, struct tnode *t, uint64_t now);
    struct tnode *peer;         /* target of `action`, when it has one */
    uint64_t rearm_ms;
    int rearms_left;
};

struct fx {
    struct twheel w;
    int order[ORDER_MAX];       /* ids in firing order */
    size_t nfired;
    bool strict;                /* a node armed for the future fires exactly on time */
};

static void on_fire(struct twheel_node *n, uint64_t now, void *arg)
{
    struct fx *f = arg;
    struct tnode *t = (struct tnode *)n;

    /* The wheel must hand over a disarmed node and never fire early. */
    assert_false(twheel_armed(n));
    assert_true(now >= n->deadline_ms);
    if (f->strict)
        assert_true(now == (n->deadline_ms > t->armed_at ? n->deadline_ms : t->armed_at));
    t->fires++;
    t->fired_at = now;
    if (f->nfired < ORDER_MAX)
        f->order[f->nfired] = t->id;
    f->nfired++;
    if (t->action)
        t->action(f, t, now);
}

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof *f);

    if (!f)
        return -1;
    twheel_init(&f->w, 0, on_fire, f);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    free(*state);
    return 0;
}

/* Restarts the fixture's wheel at now_ms with nothing recorded. */
static void fx_reset(struct fx *f, uint64_t now_ms)
{
    twheel_init(&f->w, now_ms, on_fire, f);
    f->nfired = 0;
    f->strict = false;
}

static struct fx *restart(void **state, uint64_t now_ms)
{
    fx_reset(*state, now_ms);
    return *state;
}

static void tnode_reset(struct tnode *t, int id)
{
    *t = (struct tnode){.id = id};
    twheel_node_init(&t->node);
}

static void arm(struct fx *f, struct tnode *t, uint64_t deadline, uint64_t now)
{
    t->armed_at = now;
    twheel_arm(&f->w, &t->node, deadline);
}

/* Fixed-seed xorshift64*, so failures reproduce. */
static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1DULL;
}

/* ---- basics ---- */

static void test_twheel_empty_wheel(void **state)
{
    struct fx *f = restart(state, 1000);

    assert_int_equal(twheel_count(&f->w), 0);
    assert_true(twheel_next_timeout_ms(&f->w, 1000) == UINT64_MAX);
    assert_int_equal(twheel_advance(&f->w, 5000000), 0);
    assert_true(twheel_next_timeout_ms(&f->w, 5000000) == UINT64_MAX);
    assert_int_equal(f->nfired, 0);
}

static void test_twheel_count_bookkeeping(void **state)
{
    struct fx *f = restart(state, 0);
    struct tnode a, b, c;

    tnode_reset(&a, 1);
    tnode_reset(&b, 2);
    tnode_reset(&c, 3);
    twheel_cancel(&f->w, &a.node);          /* never armed: no-op */
    assert_int_equal(twheel_count(&f->w), 0);

    arm(f, &a, 10, 0);
    arm(f, &b, 5000, 0);
    arm(f, &c, 3 * L2_MS, 0);
    assert_int_equal(twheel_count(&f->w), 3);
    assert_true(twheel_armed(&a.node));

    arm(f, &a, 20, 0);                       /* re-arm: still one node */
    assert_int_equal(twheel_count(&f->w), 3);

    twheel_cancel(&f->w, &b.node);
    twheel_cancel(&f->w, &b.node);           /* double cancel: no-op */
    assert_int_equal(twheel_count(&f->w), 2);
    assert_false(twheel_armed(&b.node));

    assert_int_equal(twheel_advance(&f->w, 10), 0);   /* a moved to 20 */
    assert_int_equal(twheel_advance(&f->w, 20), 1);
    assert_int_equal(a.fired_at, 20);
    assert_int_equal(twheel_count(&f->w), 1);
    assert_int_equal(twheel_advance(&f->w, 3 * L2_MS), 1);
    assert_int_equal(twheel_count(&f->w), 0);
    assert_int_equal(b.fires, 0);
}

/* ---- exact firing across level boundaries and wraps ---- */

/* Arms one node at start + delta; deadline - 1 must not fire it, deadline must. */
static void expect_exact(struct fx *f, uint64_t start, uint64_t delta)
{
    struct tnode t;
    uint64_t deadline = start + delta;

    fx_reset(f, start);
    tnode_reset(&t, 1);
    arm(f, &t, deadline, start);
    assert_true(twheel_next_timeout_ms(&f->w, start) <= delta);
    if (delta > 0)
        assert_int_equal(twheel_advance(&f->w, deadline - 1), 0);
    assert_int_equal(t.fires, 0);
    assert_int_equal(twheel_count(&f->w), 1);
    assert_true(twheel_next_timeout_ms(&f->w, deadline) == 0);
    assert_int_equal(twheel_advance(&f->w, deadline), 1);
    assert_int_equal(t.fires, 1);
    assert_int_equal(t.fired_at, deadline);
    assert_int_equal(twheel_count(&f->w), 0);
}

static const uint64_t boundary_deltas[] = {
    0, 1, 2, L1_MS - 2, L1_MS - 1, L1_MS, L1_MS + 1, 2 * L1_MS - 1, 2 * L1_MS,
    L2_MS - 1, L2_MS, L2_MS + 1, L2_MS + L1_MS - 1, 2 * L2_MS,
    HORIZON_MS - L2_MS, HORIZON_MS - 1, HORIZON_MS, HORIZON_MS + 1,
};

static void expect_exact_from(struct fx *f, uint64_t start)
{
    for (size_t i = 0; i < sizeof boundary_deltas / sizeof boundary_deltas[0]; i++)
        expect_exact(f, start, boundary_deltas[i]);
}

static void test_twheel_fires_at_deadline_never_before(void **state)
{
    expect_exact_from(*state, 0);
    expect_exact_from(*state, 1);
    expect_exact_from(*state, 777);
}

static void test_twheel_wraps_level0(void **state)
{
    expect_exact_from(*state, L1_MS - 1);
    expect_exact_from(*state, L1_MS);
    expect_exact_from(*state, L1_MS + 1);
    expect_exact_from(*state, 5 * L1_MS - 3);
}

static void test_twheel_wraps_level1(void **state)
{
    expect_exact_from(*state, L2_MS - 1);
    expect_exact_from(*state, L2_MS);
    expect_exact_from(*state, L2_MS + 1);
    expect_exact_from(*state, L2_MS - L1_MS);
}

static void test_twheel_wraps_level2(void **state)
{
    expect_exact_from(*state, HORIZON_MS - 1);
    expect_exact_from(*state, HORIZON_MS);
    expect_exact_from(*state, 3 * HORIZON_MS - 5);
    expect_exact_from(*state, ((uint64_t)1 << 32) - 5);
    expect_exact_from(*state, ((uint64_t)1 << 40) + 12345);
}

/* A wheel that has been running (cur not at the start) wraps the same way. */
static void test_twheel_wraps_after_running(void **state)
{
    struct fx *f = restart(state, ((uint64_t)1 << 32) - 5);
    struct tnode t[4];
    const uint64_t deltas[4] = {3, L1_MS + 7, L2_MS + 9, HORIZON_MS + 11};
    uint64_t now = ((uint64_t)1 << 32) + 300;

    assert_int_equal(twheel_advance(&f->w, now), 0);
    for (int i = 0; i < 4; i++) {
        tnode_reset(&t[i], i);
        arm(f, &t[i], now + deltas[i], now);
    }
    for (int i = 0; i < 4; i++) {
        assert_int_equal(twheel_advance(&f->w, now + deltas[i] - 1), 0);
        assert_int_equal(twheel_advance(&f->w, now + deltas[i]), 1);
        assert_int_equal(t[i].fired_at, now + deltas[i]);
    }
    assert_int_equal(twheel_count(&f->w), 0);
}

/* ---- long deadlines ---- */

/* Steps from start towards deadline - 1 in `step` ms, then to deadline. */
static void approach(struct fx *f, struct tnode *t, uint64_t start, uint64_t deadline,
                     uint64_t step)
{
    for (uint64_t now = start + step; now < deadline; now += step)
        assert_int_equal(twheel_advance(&f->w, now), 0);
    assert_int_equal(twheel_advance(&f->w, deadline - 1), 0);
    assert_int_equal(t->fires, 0);
    assert_int_equal(twheel_advance(&f->w, deadline), 1);
    assert_int_equal(t->fired_at, deadline);
    assert_int_equal(twheel_count(&f->w), 0);
}

static void seven_days_in_steps(void **state, uint64_t start, uint64_t step)
{
    struct fx *f = restart(state, start);
    struct tnode t;

    tnode_reset(&t, 1);
    arm(f, &t, start + WEEK_MS, start);
    approach(f, &t, start, start + WEEK_MS, step);
}

static void test_twheel_seven_days_big_steps(void **state)
{
    seven_days_in_steps(state, ((uint64_t)1 << 32) - 5, DAY_MS);
    seven_days_in_steps(state, 123456789, 3600000);
    seven_days_in_steps(state, 0, WEEK_MS - 1);
}

static void test_twheel_seven_days_small_steps(void **state)
{
    /* 997 ms: never aligned with a cascade boundary for long. */
    seven_days_in_steps(state, ((uint64_t)1 << 32) - 5, 997);
}

/* Many 7-day timers with spread offsets, stepped once a minute. */
static void test_twheel_seven_days_many(void **state)
{
    enum { N = 500 };
    uint64_t start = 98765432;
    struct fx *f = restart(state, start);
    struct tnode *t = calloc(N, sizeof *t);
    uint64_t now = start;

    assert_non_null(t);
    f->strict = true;
    for (int i = 0; i < N; i++) {
        tnode_reset(&t[i], i);
        arm(f, &t[i], start + WEEK_MS - (uint64_t)i * 1237, start);
    }
    /* Step 60 s, but never past the next deadline, as the engine would. */
    while (twheel_count(&f->w) > 0) {
        uint64_t next = twheel_next_timeout_ms(&f->w, now);

        now += next < 60000 ? next : 60000;
        twheel_advance(&f->w, now);
    }
    for (int i = 0; i < N; i++)
        assert_int_equal(t[i].fired_at, start + WEEK_MS - (uint64_t)i * 1237);
    free(t);
}

static void test_twheel_beyond_horizon(void **state)
{
    uint64_t start = 5555;
    const uint64_t deltas[] = {HORIZON_MS + 12345, 2 * HORIZON_MS + 1, 3 * HORIZON_MS + 777};
    struct fx *f;
    struct tnode t;

    for (size_t i = 0; i < sizeof deltas / sizeof deltas[0]; i++) {
        f = restart(state, start);
        tnode_reset(&t, 1);
        arm(f, &t, start + deltas[i], start);
        approach(f, &t, start, start + deltas[i], 3600000);

        /* The same deadline reached in one jump. */
        f = restart(state, start);
        tnode_reset(&t, 1);
        arm(f, &t, start + deltas[i], start);
        approach(f, &t, start, start + deltas[i], deltas[i]);
    }
}

/* ---- ordering ---- */

static void test_twheel_fires_in_deadline_order(void **state)
{
    enum { N = 64 };
    struct fx *f = restart(state, 100);
    struct tnode t[N];
    uint64_t seed = 42;

    /* ids are deadline ranks; arm them in a shuffled order. */
    int perm[N];
    for (int i = 0; i < N; i++)
        perm[i] = i;
    for (int i = N - 1; i > 0; i--) {
        int j = (int)(rng_next(&seed) % (uint64_t)(i + 1));
        int tmp = perm[i];
        perm[i] = perm[j];
        perm[j] = tmp;
    }
    for (int i = 0; i < N; i++) {
        int id = perm[i];
        tnode_reset(&t[id], id);
        arm(f, &t[id], 100 + 1 + (uint64_t)id * 40000, 100);   /* spans level 0..2 */
    }
    assert_int_equal(twheel_advance(&f->w, 100 + (uint64_t)N * 40000), N);
    for (int i = 0; i < N; i++)
        assert_int_equal(f->order[i], i);
}

/* Nodes for one deadline armed from levels 2, 1 and 0 fire in arming order. */
static void test_twheel_equal_deadlines_fire_in_arming_order(void **state)
{
    struct fx *f = restart(state, 0);
    uint64_t deadline = L2_MS + 5;
    struct tnode t[6];

    for (int i = 0; i < 6; i++)
        tnode_reset(&t[i], i);
    arm(f, &t[0], deadline, 0);                     /* level 2 */
    arm(f, &t[1], deadline, 0);
    assert_int_equal(twheel_advance(&f->w, deadline - 2000), 0);
    arm(f, &t[2], deadline, deadline - 2000);       /* level 1 */
    arm(f, &t[3], deadline, deadline - 2000);
    assert_int_equal(twheel_advance(&f->w, deadline - 100), 0);
    arm(f, &t[4], deadline, deadline - 100);        /* level 0 */
    arm(f, &t[5], deadline, deadline - 100);
    assert_int_equal(twheel_advance(&f->w, deadline), 6);
    for (int i = 0; i < 6; i++)
        assert_int_equal(f->order[i], i);
}

/* ---- callbacks ---- */

static void cancel_peer(struct fx *f, struct tnode *t, uint64_t now)
{
    (void)now;
    twheel_cancel(&f->w, &t->peer->node);
}

static void test_twheel_cancel_ready_node_from_callback(void **state)
{
    struct fx *f = restart(state, 0);
    struct tnode a, b, c, d;

    tnode_reset(&a, 1);
    tnode_reset(&b, 2);
    tnode_reset(&c, 3);
    tnode_reset(&d, 4);
    a.action = cancel_peer;
    a.peer = &b;                 /* same tick as a, fires after it */
    c.action = cancel_peer;
    c.peer = &d;                 /* due in the same advance, a later tick */
    arm(f, &a, 50, 0);
    arm(f, &b, 50, 0);
    arm(f, &c, 60, 0);
    arm(f, &d, 2000, 0);
    assert_int_equal(twheel_advance(&f->w, 3000), 2);
    assert_int_equal(a.fires, 1);
    assert_int_equal(b.fires, 0);
    assert_int_equal(c.fires, 1);
    assert_int_equal(d.fires, 0);
    assert_false(twheel_armed(&b.node));
    assert_false(twheel_armed(&d.node));
    assert_int_equal(twheel_count(&f->w), 0);
    assert_int_equal(twheel_advance(&f->w, 10000), 0);
}

static void rearm_peer_later(struct fx *f, struct tnode *t, uint64_t now)
{
    twheel_arm(&f->w, &t->peer->node, now + t->rearm_ms);
}

/* A due node pushed back by another callback fires at its new deadline only. */
static void test_twheel_rearm_ready_node_from_callback(void **state)
{
    struct fx *f = restart(state, 0);
    struct tnode a, b;

    tnode_reset(&a, 1);
    tnode_reset(&b, 2);
    a.action = rearm_peer_later;
    a.peer = &b;
    a.rearm_ms = 500;
    arm(f, &a, 10, 0);
    arm(f, &b, 10, 0);
    assert_int_equal(twheel_advance(&f->w, 10), 1);
    assert_int_equal(b.fires, 0);
    assert_int_equal(twheel_count(&f->w), 1);
    assert_int_equal(twheel_advance(&f->w, 509), 0);
    assert_int_equal(twheel_advance(&f->w, 510), 1);
    assert_int_equal(b.fired_at, 510);
}

static void rearm_self(struct fx *f, struct tnode *t, uint64_t now)
{
    if (t->rearms_left-- > 0)
        arm(f, t, now + t->rearm_ms, now);
}

static void test_twheel_rearm_self_from_callback(void **state)
{
    struct fx *f = restart(state, 1000);
    struct tnode t;

    tnode_reset(&t, 1);
    t.action = rearm_self;
    t.rearm_ms = 700;
    t.rearms_left = 5;
    arm(f, &t, 1010, 1000);
    for (uint64_t now = 1001; now < 1010 + 6 * 700; now++) {
        size_t fired = twheel_advance(&f->w, now);

        assert_int_equal(fired, now >= 1010 && (now - 1010) % 700 == 0 ? 1 : 0);
        if (fired)
            assert_int_equal(t.fired_at, now);
    }
    assert_int_equal(t.fires, 6);
    assert_int_equal(twheel_count(&f->w), 0);
}

/* Re-arming for a time already passed must not loop inside one advance. */
static void test_twheel_rearm_self_in_past_waits_for_next_advance(void **state)
{
    struct fx *f = restart(state, 0);
    struct tnode t;

    tnode_reset(&t, 1);
    t.action = rearm_self;
    t.rearm_ms = 0;              /* deadline == now: already passed */
    t.rearms_left = 3;
    arm(f, &t, 5, 0);
    assert_int_equal(twheel_advance(&f->w, 5), 1);
    assert_true(twheel_armed(&t.node));
    assert_true(twheel_next_timeout_ms(&f->w, 5) == 0);
    assert_int_equal(twheel_advance(&f->w, 5), 1);
    assert_int_equal(twheel_advance(&f->w, 6), 1);
    assert_int_equal(twheel_advance(&f->w, 6), 1);
    assert_int_equal(twheel_advance(&f->w, 6), 0);
    assert_int_equal(t.fires, 4);
    assert_int_equal(twheel_count(&f->w), 0);
}

static void test_twheel_past_deadline_fires_on_next_advance(void **state)
{
    struct fx *f = restart(state, 0);
    struct tnode a, b, c;

    assert_int_equal(twheel_advance(&f->w, 10000), 0);
    tnode_reset(&a, 1);
    tnode_reset(&b, 2);
    tnode_reset(&c, 3);
    arm(f, &a, 9000, 10000);       /* in the past */
    arm(f, &b, 0, 10000);          /* long past */
    arm(f, &c, 10000, 10000);      /* now, which advance(10000) already passed */
    assert_true(twheel_next_timeout_ms(&f->w, 10000) == 0);
    assert_int_equal(twheel_advance(&f->w, 10000), 3);   /* same now */
    assert_int_equal(a.fired_at, 10000);
    assert_int_equal(f->order[0], 1);
    assert_int_equal(f->order[1], 2);
    assert_int_equal(f->order[2], 3);
    assert_int_equal(twheel_count(&f->w), 0);
}

/* ---- volume and catch-up ---- */

static void test_twheel_many_timers_same_tick(void **state)
{
    enum { N = 10000 };
    struct fx *f = restart(state, 777);
    struct tnode *t = calloc(N, sizeof *t);
    uint64_t deadline = 777 + 3 * L1_MS + 5;

    assert_non_null(t);
    for (int i = 0; i < N; i++) {
        tnode_reset(&t[i], i);
        arm(f, &t[i], deadline, 777);
    }
    assert_int_equal(twheel_count(&f->w), N);
    assert_int_equal(twheel_advance(&f->w, deadline - 1), 0);
    assert_int_equal(twheel_advance(&f->w, deadline), N);
    assert_int_equal(twheel_count(&f->w), 0);
    for (int i = 0; i < N; i++) {
        assert_int_equal(t[i].fires, 1);
        assert_int_equal(f->order[i], i);
    }
    free(t);
}

static void test_twheel_late_tick_catches_up(void **state)
{
    enum { N = 5000 };
    uint64_t start = ((uint64_t)1 << 32) - 5;
    struct fx *f = restart(state, start);
    struct tnode *t = calloc(N, sizeof *t);
    uint64_t seed = 7, late = start + 4 * DAY_MS;

    assert_non_null(t);
    for (int i = 0; i < N; i++) {
        tnode_reset(&t[i], i);
        arm(f, &t[i], start + rng_next(&seed) % (3 * DAY_MS), start);
    }
    assert_int_equal(twheel_advance(&f->w, late), N);
    assert_int_equal(twheel_count(&f->w), 0);
    for (int i = 0; i < N; i++)
        assert_int_equal(t[i].fired_at, late);
    for (int i = 1; i < N; i++)
        assert_true(t[f->order[i - 1]].node.deadline_ms <= t[f->order[i]].node.deadline_ms);
    free(t);
}

/* One timer and a 30-day stall: the walk must skip, not step each ms. */
static void test_twheel_long_stall_single_advance(void **state)
{
    struct fx *f = restart(state, 1);
    struct tnode t;

    tnode_reset(&t, 1);
    arm(f, &t, 1 + 20 * DAY_MS, 1);
    assert_int_equal(twheel_advance(&f->w, 30 * DAY_MS), 1);
    assert_int_equal(twheel_advance(&f->w, 60 * DAY_MS), 0);
    assert_true(twheel_next_timeout_ms(&f->w, 60 * DAY_MS) == UINT64_MAX);
}

/* ---- next_timeout_ms ---- */

static void test_twheel_next_timeout_basic(void **state)
{
    struct fx *f = restart(state, 0);
    struct tnode a, b;

    tnode_reset(&a, 1);
    tnode_reset(&b, 2);
    arm(f, &a, 300, 0);
    assert_true(twheel_next_timeout_ms(&f->w, 0) == 300);   /* level 0: exact */
    assert_true(twheel_next_timeout_ms(&f->w, 299) == 1);
    assert_true(twheel_next_timeout_ms(&f->w, 300) == 0);
    assert_true(twheel_next_timeout_ms(&f->w, 400) == 0);
    arm(f, &b, 200, 0);
    assert_true(twheel_next_timeout_ms(&f->w, 0) == 200);
    twheel_cancel(&f->w, &b.node);                           /* bitmap cleared */
    assert_true(twheel_next_timeout_ms(&f->w, 0) == 300);

    /* Only a far node: a cascade point, not later than the deadline. */
    twheel_cancel(&f->w, &a.node);
    arm(f, &a, 5 * L1_MS + 3, 0);
    assert_true(twheel_next_timeout_ms(&f->w, 0) == 5 * L1_MS);
    assert_int_equal(twheel_advance(&f->w, 5 * L1_MS), 0);
    assert_true(twheel_next_timeout_ms(&f->w, 5 * L1_MS) == 3);
    twheel_cancel(&f->w, &a.node);
    assert_true(twheel_next_timeout_ms(&f->w, 5 * L1_MS) == UINT64_MAX);
}

/* A far node and a nearer cascading one: the cascade must win. */
static void test_twheel_next_timeout_sees_higher_levels(void **state)
{
    struct fx *f = restart(state, 0);
    struct tnode a, b;

    tnode_reset(&a, 1);
    tnode_reset(&b, 2);
    arm(f, &a, L1_MS, 0);             /* level 1, due at 1024 */
    assert_int_equal(twheel_advance(&f->w, 600), 0);
    arm(f, &b, 1500, 600);            /* level 0, due at 1500 */
    assert_true(twheel_next_timeout_ms(&f->w, 600) == L1_MS - 600);
    assert_int_equal(twheel_advance(&f->w, L1_MS), 1);
    assert_int_equal(a.fired_at, L1_MS);
    assert_true(twheel_next_timeout_ms(&f->w, L1_MS) == 1500 - L1_MS);
}

/* Deadline magnitudes that exercise every level, plus some already past. */
static uint64_t random_delta(uint64_t *seed)
{
    switch (rng_next(seed) % 6) {
    case 0: return rng_next(seed) % 50;
    case 1: return rng_next(seed) % (2 * L1_MS);
    case 2: return rng_next(seed) % (4 * L2_MS);
    case 3: return rng_next(seed) % (2 * HORIZON_MS);
    default: return rng_next(seed) % 5000;
    }
}

static uint64_t earliest_armed(const struct tnode *t, int n)
{
    uint64_t best = UINT64_MAX;

    for (int i = 0; i < n; i++)
        if (twheel_armed(&t[i].node) && t[i].node.deadline_ms < best)
            best = t[i].node.deadline_ms;
    return best;
}

static size_t armed_count(const struct tnode *t, int n)
{
    size_t c = 0;

    for (int i = 0; i < n; i++)
        c += twheel_armed(&t[i].node);
    return c;
}

/*
 * An event loop driven only by next_timeout_ms (sometimes waking earlier):
 * next_timeout never overshoots the earliest deadline and is 0 only when a
 * node is due, every node fires exactly at max(deadline, time armed), and
 * count matches the nodes armed.
 */
static void test_twheel_next_timeout_randomized(void **state)
{
    enum { N = 200, ROUNDS = 20000 };
    struct fx *f = restart(state, ((uint64_t)1 << 32) - 5);
    struct tnode t[N];
    uint64_t seed = 0x5eed, now = ((uint64_t)1 << 32) - 5;

    f->strict = true;
    for (int i = 0; i < N; i++)
        tnode_reset(&t[i], i);
    for (int round = 0; round < ROUNDS; round++) {
        struct tnode *x = &t[rng_next(&seed) % N];
        uint64_t roll = rng_next(&seed) % 10, next, first;

        if (roll < 5)
            arm(f, x, now + random_delta(&seed), now);
        else if (roll < 6)
            arm(f, x, now - rng_next(&seed) % 100, now);
        else if (roll < 7)
            twheel_cancel(&f->w, &x->node);

        assert_int_equal(twheel_count(&f->w), armed_count(t, N));
        next = twheel_next_timeout_ms(&f->w, now);
        first = earliest_armed(t, N);
        if (first == UINT64_MAX)
            assert_true(next == UINT64_MAX);
        else if (first <= now)
            assert_true(next == 0);
        else    /* 0 only when something is due: no busy loop */
            assert_true(next > 0 && next <= first - now);

        if (next == UINT64_MAX)
            next = 1 + rng_next(&seed) % 100000;
        if (next > 0 && rng_next(&seed) % 3 == 0)
            next = 1 + rng_next(&seed) % next;    /* an early wake-up */
        now += next;
        twheel_advance(&f->w, now);
    }
    assert_int_equal(twheel_count(&f->w), armed_count(t, N));
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_twheel_empty_wheel),
        T(test_twheel_count_bookkeeping),
        T(test_twheel_fires_at_deadline_never_before),
        T(test_twheel_wraps_level0),
        T(test_twheel_wraps_level1),
        T(test_twheel_wraps_level2),
        T(test_twheel_wraps_after_running),
        T(test_twheel_seven_days_big_steps),
        T(test_twheel_seven_days_small_steps),
        T(test_twheel_seven_days_many),
        T(test_twheel_beyond_horizon),
        T(test_twheel_fires_in_deadline_order),
        T(test_twheel_equal_deadlines_fire_in_arming_order),
        T(test_twheel_cancel_ready_node_from_callback),
        T(test_twheel_rearm_ready_node_from_callback),
        T(test_twheel_rearm_self_from_callback),
        T(test_twheel_rearm_self_in_past_waits_for_next_advance),
        T(test_twheel_past_deadline_fires_on_next_advance),
        T(test_twheel_many_timers_same_tick),
        T(test_twheel_late_tick_catches_up),
        T(test_twheel_long_stall_single_advance),
        T(test_twheel_next_timeout_basic),
        T(test_twheel_next_timeout_sees_higher_levels),
        T(test_twheel_next_timeout_randomized),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
