/*
 * test_queue.c — unit tests for the in-memory queue model (src/engine/queue.c):
 * the name-sorted registry (find, find_id, lower_bound, reserve, insert,
 * remove), the seq → message table (including growth past many entries),
 * placement (the state derived from the times, the wheel deadline, exact
 * n_active / n_inactive / n_delayed through random transitions), the Active
 * heap's order (priority, then seq), the age heap and the redrive count.
 * Messages are calloc'd; placement uses a real timer wheel driven by
 * numbers, nothing sleeps.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "queue.h"
#include "smqd/errors.h"
#include "smqd/mns.h"
#include "smqd/twheel.h"

#define T0 ((int64_t)1700000000000)   /* epoch ms at wheel time 0 */

/* ---- deterministic random numbers ------------------------------------- */

static uint64_t rng_state = 88172645463325252ull;

static uint64_t rng_next(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static size_t rng_below(size_t n)
{
    return (size_t)(rng_next() % n);
}

/* ---- fixture ----------------------------------------------------------- */

struct fixture {
    struct twheel w;
    struct queue_timebase tb;
    struct smq_queue *q;
    struct smq_msg *fired[64];
    size_t n_fired;
};

static void on_fire(struct twheel_node *n, uint64_t now_ms, void *arg)
{
    struct fixture *f = arg;

    (void)now_ms;
    if (f->n_fired < 64)
        f->fired[f->n_fired] = queue_msg_from_timer(n);
    f->n_fired++;
}

static struct smq_queue *new_queue(int64_t id, const char *name)
{
    struct smq_queue_attrs a;
    struct smq_queue *q;

    mns_default_attrs(&a);
    q = queue_new(id, name, &a, 1700000000, 1700000001);
    assert_non_null(q);
    return q;
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);

    if (f == NULL)
        return -1;
    twheel_init(&f->w, 0, on_fire, f);
    f->tb.epoch_minus_mono_ms = T0;
    f->q = new_queue(1, "q");
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    queue_free(f->q);
    free(f);
    return 0;
}

/* A message of f's queue, Active-to-be at T0 unless the test changes it. */
static struct smq_msg *new_msg(struct fixture *f, uint64_t seq, uint8_t priority)
{
    struct smq_msg *m = calloc(1, sizeof *m);

    assert_non_null(m);
    m->queue = f->q;
    m->seq = seq;
    m->priority = priority;
    m->enqueue_ms = T0;
    m->visible_ms = T0;
    m->expire_ms = T0 + 345600000;
    return m;
}

static void assert_counts(const struct smq_queue *q, uint64_t active, uint64_t inactive,
                          uint64_t delayed)
{
    assert_int_equal(q->n_active, active);
    assert_int_equal(q->n_inactive, inactive);
    assert_int_equal(q->n_delayed, delayed);
    assert_int_equal(heap_count(&q->active), active);
}

/* ---- registry ------------------------------------------------------------ */

static void assert_sorted(const struct queue_registry *r)
{
    for (size_t i = 1; i < r->n; i++)
        assert_true(strcmp(r->items[i - 1]->name, r->items[i]->name) < 0);
}

static void reg_add(struct queue_registry *r, struct smq_queue *q)
{
    assert_int_equal(queue_registry_reserve(r), 0);
    queue_registry_insert(r, q);
}

static void test_queue_registry_sorted_find(void **state)
{
    static const char *const names[] = {"m", "a", "z", "b", "aa", "A", "0", "zz", "ab", "Z"};
    struct smq_queue *qs[10];
    struct queue_registry r;

    (void)state;
    queue_registry_init(&r);
    assert_int_equal(queue_registry_lower_bound(&r, "x"), 0);
    assert_null(queue_registry_find(&r, "x"));
    for (size_t i = 0; i < 10; i++) {
        qs[i] = new_queue((int64_t)(100 + i), names[i]);
        reg_add(&r, qs[i]);
        assert_int_equal(r.n, i + 1);
        assert_sorted(&r);
    }
    for (size_t i = 0; i < 10; i++)
        assert_ptr_equal(queue_registry_find(&r, names[i]), qs[i]);
    /* Order is strcmp's: digits, upper case, lower case. */
    assert_string_equal(r.items[0]->name, "0");
    assert_string_equal(r.items[1]->name, "A");
    assert_string_equal(r.items[2]->name, "Z");
    assert_string_equal(r.items[3]->name, "a");
    assert_string_equal(r.items[9]->name, "zz");
    /* Names are case-sensitive and exact. */
    assert_null(queue_registry_find(&r, "M"));
    assert_null(queue_registry_find(&r, "a "));
    assert_null(queue_registry_find(&r, ""));
    /* lower_bound: the first name >= the key. */
    assert_int_equal(queue_registry_lower_bound(&r, ""), 0);
    assert_int_equal(queue_registry_lower_bound(&r, "0"), 0);
    assert_int_equal(queue_registry_lower_bound(&r, "00"), 1);
    assert_int_equal(queue_registry_lower_bound(&r, "a"), 3);
    assert_int_equal(queue_registry_lower_bound(&r, "aaa"), 5);   /* a aa | ab */
    assert_string_equal(r.items[5]->name, "ab");
    assert_int_equal(queue_registry_lower_bound(&r, "zz"), 9);
    assert_int_equal(queue_registry_lower_bound(&r, "zzz"), 10);
    for (size_t i = 0; i < 10; i++)
        queue_free(qs[i]);
    queue_registry_free(&r);
    assert_int_equal(r.n, 0);
    assert_null(r.items);
}

static void test_queue_registry_find_id(void **state)
{
    struct queue_registry r;
    struct smq_queue *a = new_queue(7, "seven"), *b = new_queue(3, "three"),
                     *c = new_queue(1000000000000, "big");

    (void)state;
    queue_registry_init(&r);
    assert_null(queue_registry_find_id(&r, 7));
    reg_add(&r, a);
    reg_add(&r, b);
    reg_add(&r, c);
    assert_ptr_equal(queue_registry_find_id(&r, 7), a);
    assert_ptr_equal(queue_registry_find_id(&r, 3), b);
    assert_ptr_equal(queue_registry_find_id(&r, 1000000000000), c);
    assert_null(queue_registry_find_id(&r, 0));
    assert_null(queue_registry_find_id(&r, 4));
    queue_registry_remove(&r, b);
    assert_null(queue_registry_find_id(&r, 3));
    queue_free(a);
    queue_free(b);
    queue_free(c);
    queue_registry_free(&r);
}

/* Many more queues than the first allocation; reserve with room left
 * keeps the array where it is, so an insert after it cannot fail. */
static void test_queue_registry_grows(void **state)
{
    enum { N = 300 };
    struct smq_queue **qs = calloc(N, sizeof *qs);
    struct queue_registry r;
    char name[32];

    (void)state;
    assert_non_null(qs);
    queue_registry_init(&r);
    for (size_t i = 0; i < N; i++) {
        /* Inserted in an order unrelated to the names' order. */
        snprintf(name, sizeof name, "q%03zu", (i * 7919) % N);
        qs[i] = new_queue((int64_t)i + 1, name);
        assert_int_equal(queue_registry_reserve(&r), 0);
        assert_true(r.cap > r.n);
        {
            struct smq_queue **before = r.items;
            size_t cap = r.cap;
            assert_int_equal(queue_registry_reserve(&r), 0);   /* room already there */
            assert_ptr_equal(r.items, before);
            assert_int_equal(r.cap, cap);
        }
        queue_registry_insert(&r, qs[i]);
    }
    assert_int_equal(r.n, N);
    assert_sorted(&r);
    for (size_t i = 0; i < N; i++) {
        assert_ptr_equal(queue_registry_find(&r, qs[i]->name), qs[i]);
        assert_ptr_equal(queue_registry_find_id(&r, (int64_t)i + 1), qs[i]);
    }
    for (size_t i = 0; i < N; i++)
        queue_free(qs[i]);
    queue_registry_free(&r);
    free(qs);
}

static void test_queue_registry_remove(void **state)
{
    static const char *const names[] = {"a", "b", "c", "d", "e"};
    struct smq_queue *qs[5], *impostor;
    struct queue_registry r;

    (void)state;
    queue_registry_init(&r);
    impostor = new_queue(99, "c");
    queue_registry_remove(&r, impostor);
    assert_int_equal(r.n, 0);                 /* removing from an empty registry */
    for (size_t i = 0; i < 5; i++) {
        qs[i] = new_queue((int64_t)i + 1, names[i]);
        reg_add(&r, qs[i]);
    }
    /* Another queue object of the same name is not the registered one. */
    queue_registry_remove(&r, impostor);
    assert_int_equal(r.n, 5);
    assert_ptr_equal(queue_registry_find(&r, "c"), qs[2]);

    queue_registry_remove(&r, qs[2]);         /* middle */
    assert_int_equal(r.n, 4);
    assert_null(queue_registry_find(&r, "c"));
    queue_registry_remove(&r, qs[0]);         /* first */
    queue_registry_remove(&r, qs[4]);         /* last */
    assert_int_equal(r.n, 2);
    assert_ptr_equal(r.items[0], qs[1]);
    assert_ptr_equal(r.items[1], qs[3]);
    queue_registry_remove(&r, qs[2]);         /* already gone */
    assert_int_equal(r.n, 2);
    /* The name can be registered again. */
    reg_add(&r, impostor);
    assert_ptr_equal(queue_registry_find(&r, "c"), impostor);
    assert_sorted(&r);
    for (size_t i = 0; i < 5; i++)
        queue_free(qs[i]);
    queue_free(impostor);
    queue_registry_free(&r);
}

/* ---- queues ------------------------------------------------------------- */

static void test_queue_new_and_info(void **state)
{
    struct smq_queue_attrs a;
    struct smq_queue_info info;
    struct smq_queue *q;

    (void)state;
    mns_default_attrs(&a);
    a.visibility_s = 77;
    a.dlq.enabled = 1;
    snprintf(a.dlq.target, sizeof a.dlq.target, "dead");
    a.dlq.max_receive = 5;
    q = queue_new(42, "orders", &a, 1700000000, 1700000500);
    assert_non_null(q);
    assert_int_equal(q->id, 42);
    assert_string_equal(q->name, "orders");
    assert_true(mns_attrs_equal(&q->attrs, &a));
    assert_int_equal(q->create_s, 1700000000);
    assert_int_equal(q->modify_s, 1700000500);
    assert_counts(q, 0, 0, 0);
    assert_null(queue_first_active(q));
    assert_null(queue_oldest_msg(q));
    assert_null(q->waiters_head);
    assert_null(q->redrive);
    assert_int_equal(queue_redrive_pending(q), 0);

    q->n_active = 3;
    q->n_inactive = 2;
    q->n_delayed = 1;
    memset(&info, 0xee, sizeof info);
    queue_info(q, &info);
    assert_string_equal(info.name, "orders");
    assert_true(mns_attrs_equal(&info.attrs, &a));
    assert_int_equal(info.create_s, 1700000000);
    assert_int_equal(info.modify_s, 1700000500);
    assert_int_equal(info.n_active, 3);
    assert_int_equal(info.n_inactive, 2);
    assert_int_equal(info.n_delayed, 1);
    q->n_active = q->n_inactive = q->n_delayed = 0;
    queue_free(q);
    queue_free(NULL);
}

/* A 120-character name (the maximum) is kept whole. */
static void test_queue_new_longest_name(void **state)
{
    char name[SMQ_QUEUE_NAME_MAX + 1];
    struct smq_queue *q;

    (void)state;
    memset(name, 'n', SMQ_QUEUE_NAME_MAX);
    name[SMQ_QUEUE_NAME_MAX] = '\0';
    q = new_queue(1, name);
    assert_string_equal(q->name, name);
    queue_free(q);
}

static void test_queue_redrive_pending(void **state)
{
    struct fixture *f = *state;
    struct queue_redrive *r = calloc(1, sizeof *r);

    assert_non_null(r);
    r->seqs = calloc(10, sizeof *r->seqs);
    assert_non_null(r->seqs);
    r->n = 10;
    f->q->redrive = r;
    assert_int_equal(queue_redrive_pending(f->q), 10);
    r->next = 3;
    assert_int_equal(queue_redrive_pending(f->q), 7);
    r->next = 10;
    assert_int_equal(queue_redrive_pending(f->q), 0);
    queue_redrive_free(NULL);
    /* queue_free (teardown) frees the redrive: valgrind checks it. */
}

/* ---- message table -------------------------------------------------------- */

static void test_queue_msg_table_basic(void **state)
{
    struct msg_table t;
    struct smq_msg a = {.seq = 1}, b = {.seq = 2}, c = {.seq = 1025}, d = {.seq = 0};

    (void)state;
    assert_int_equal(msg_table_init(&t), 0);
    assert_int_equal(t.count, 0);
    assert_null(msg_table_find(&t, 1));
    msg_table_insert(&t, &a);
    msg_table_insert(&t, &b);
    msg_table_insert(&t, &c);
    msg_table_insert(&t, &d);
    assert_int_equal(t.count, 4);
    assert_ptr_equal(msg_table_find(&t, 1), &a);
    assert_ptr_equal(msg_table_find(&t, 2), &b);
    assert_ptr_equal(msg_table_find(&t, 1025), &c);
    assert_ptr_equal(msg_table_find(&t, 0), &d);
    assert_null(msg_table_find(&t, 3));
    assert_null(msg_table_find(&t, UINT64_MAX));
    msg_table_remove(&t, &b);
    assert_int_equal(t.count, 3);
    assert_null(msg_table_find(&t, 2));
    assert_null(b.hash_next);
    /* Removing what is not there changes nothing. */
    msg_table_remove(&t, &b);
    assert_int_equal(t.count, 3);
    assert_ptr_equal(msg_table_find(&t, 1), &a);
    msg_table_free(&t);
    assert_null(t.buckets);
    assert_int_equal(t.count, 0);
}

/* Far more entries than the initial buckets: the table grows, and every
 * entry stays findable through growth and through removals from the
 * middle of chains. */
static void test_queue_msg_table_grows(void **state)
{
    enum { N = 20000 };
    struct smq_msg *ms = calloc(N, sizeof *ms);
    struct msg_table t;
    size_t first_buckets;

    (void)state;
    assert_non_null(ms);
    assert_int_equal(msg_table_init(&t), 0);
    first_buckets = t.n_buckets;
    for (size_t i = 0; i < N; i++) {
        /* Consecutive, and large strides, as real seqs and ids are. */
        ms[i].seq = i % 2 ? (uint64_t)i : (uint64_t)(i + 1) << 32;
        msg_table_insert(&t, &ms[i]);
    }
    assert_int_equal(t.count, N);
    assert_true(t.n_buckets > first_buckets);
    assert_true(t.n_buckets >= N / 2);
    assert_int_equal(t.n_buckets & (t.n_buckets - 1), 0);   /* a power of two */
    for (size_t i = 0; i < N; i++)
        assert_ptr_equal(msg_table_find(&t, ms[i].seq), &ms[i]);
    for (size_t i = 0; i < N; i += 3)
        msg_table_remove(&t, &ms[i]);
    assert_int_equal(t.count, N - (N + 2) / 3);
    for (size_t i = 0; i < N; i++) {
        if (i % 3 == 0)
            assert_null(msg_table_find(&t, ms[i].seq));
        else
            assert_ptr_equal(msg_table_find(&t, ms[i].seq), &ms[i]);
    }
    /* Put them back: found again. */
    for (size_t i = 0; i < N; i += 3)
        msg_table_insert(&t, &ms[i]);
    for (size_t i = 0; i < N; i++)
        assert_ptr_equal(msg_table_find(&t, ms[i].seq), &ms[i]);
    msg_table_free(&t);
    free(ms);
}

/* ---- placement ------------------------------------------------------------ */

static void test_queue_place_active(void **state)
{
    struct fixture *f = *state;
    struct smq_msg *m = new_msg(f, 1, 8);

    queue_msg_place(f->q, m, T0 + 10, &f->w, &f->tb);
    assert_int_equal(m->state, SMQ_MSG_ACTIVE);
    assert_counts(f->q, 1, 0, 0);
    assert_ptr_equal(queue_first_active(f->q), m);
    /* Armed for its retention expiry, in wheel time. */
    assert_true(twheel_armed(&m->timer));
    assert_int_equal(m->timer.deadline_ms, 345600000);
    assert_int_equal(twheel_count(&f->w), 1);

    queue_msg_unplace(f->q, m, &f->w);
    assert_counts(f->q, 0, 0, 0);
    assert_null(queue_first_active(f->q));
    assert_false(twheel_armed(&m->timer));
    assert_int_equal(twheel_count(&f->w), 0);
    free(m);
}

/* visible == now is Active already. */
static void test_queue_place_visible_now_is_active(void **state)
{
    struct fixture *f = *state;
    struct smq_msg *m = new_msg(f, 1, 8);

    m->visible_ms = T0 + 500;
    m->dequeue_count = 2;
    queue_msg_place(f->q, m, T0 + 500, &f->w, &f->tb);
    assert_int_equal(m->state, SMQ_MSG_ACTIVE);
    assert_counts(f->q, 1, 0, 0);
    queue_msg_unplace(f->q, m, &f->w);
    free(m);
}

/* Invisible and never received: Delayed, armed for its visibility. */
static void test_queue_place_delayed(void **state)
{
    struct fixture *f = *state;
    struct smq_msg *m = new_msg(f, 1, 8);

    m->visible_ms = T0 + 60000;
    queue_msg_place(f->q, m, T0, &f->w, &f->tb);
    assert_int_equal(m->state, SMQ_MSG_DELAYED);
    assert_counts(f->q, 0, 0, 1);
    assert_null(queue_first_active(f->q));
    assert_int_equal(m->timer.deadline_ms, 60000);
    /* The wheel fires it at its visibility, not before. */
    twheel_advance(&f->w, 59999);
    assert_int_equal(f->n_fired, 0);
    twheel_advance(&f->w, 60000);
    assert_int_equal(f->n_fired, 1);
    assert_ptr_equal(f->fired[0], m);
    /* Fired: the owner unplaces and re-places at the new time. */
    queue_msg_unplace(f->q, m, &f->w);
    assert_counts(f->q, 0, 0, 0);
    queue_msg_place(f->q, m, T0 + 60000, &f->w, &f->tb);
    assert_int_equal(m->state, SMQ_MSG_ACTIVE);
    assert_counts(f->q, 1, 0, 0);
    queue_msg_unplace(f->q, m, &f->w);
    free(m);
}

/* Invisible after a receive: Inactive. */
static void test_queue_place_inactive(void **state)
{
    struct fixture *f = *state;
    struct smq_msg *m = new_msg(f, 1, 8);

    m->dequeue_count = 1;
    m->visible_ms = T0 + 30000;
    queue_msg_place(f->q, m, T0 + 1, &f->w, &f->tb);
    assert_int_equal(m->state, SMQ_MSG_INACTIVE);
    assert_counts(f->q, 0, 1, 0);
    assert_int_equal(m->timer.deadline_ms, 30000);
    queue_msg_unplace(f->q, m, &f->w);
    assert_counts(f->q, 0, 0, 0);
    assert_false(twheel_armed(&m->timer));
    free(m);
}

/* An invisible message whose retention ends first is armed for its expiry. */
static void test_queue_place_expiry_before_visibility(void **state)
{
    struct fixture *f = *state;
    struct smq_msg *d = new_msg(f, 1, 8), *i = new_msg(f, 2, 8);

    d->visible_ms = T0 + 90000;
    d->expire_ms = T0 + 70000;
    i->visible_ms = T0 + 90000;
    i->expire_ms = T0 + 80000;
    i->dequeue_count = 3;
    queue_msg_place(f->q, d, T0, &f->w, &f->tb);
    queue_msg_place(f->q, i, T0, &f->w, &f->tb);
    assert_int_equal(d->state, SMQ_MSG_DELAYED);
    assert_int_equal(i->state, SMQ_MSG_INACTIVE);
    assert_int_equal(d->timer.deadline_ms, 70000);
    assert_int_equal(i->timer.deadline_ms, 80000);
    assert_counts(f->q, 0, 1, 1);
    queue_msg_unplace(f->q, d, &f->w);
    queue_msg_unplace(f->q, i, &f->w);
    assert_counts(f->q, 0, 0, 0);
    free(d);
    free(i);
}

/* A deadline before the wheel's epoch (an old row at recovery) is clamped
 * to 0 and fires at the next advance. */
static void test_queue_place_past_deadline_fires_next_advance(void **state)
{
    struct fixture *f = *state;
    struct smq_msg *m = new_msg(f, 1, 8);

    assert_int_equal(queue_epoch_to_mono(&f->tb, T0 - 5), 0);
    assert_int_equal(queue_epoch_to_mono(&f->tb, T0 + 5), 5);
    m->enqueue_ms = T0 - 900000;
    m->visible_ms = T0 - 900000;
    m->expire_ms = T0 - 1000;
    queue_msg_place(f->q, m, T0, &f->w, &f->tb);
    assert_int_equal(m->state, SMQ_MSG_ACTIVE);
    assert_int_equal(m->timer.deadline_ms, 0);
    twheel_advance(&f->w, 1);
    assert_int_equal(f->n_fired, 1);
    assert_ptr_equal(f->fired[0], m);
    queue_msg_unplace(f->q, m, &f->w);
    assert_counts(f->q, 0, 0, 0);
    free(m);
}

/* Random unplace → change → place transitions over many messages: the
 * counters always equal a recount, the heap holds exactly the Active
 * ones, and the wheel exactly the placed ones. */
static void test_queue_counters_exact_through_transitions(void **state)
{
    enum { N = 300, STEPS = 6000 };
    struct fixture *f = *state;
    struct smq_msg **ms = calloc(N, sizeof *ms);
    bool placed[N];
    int64_t now = T0 + 1000;

    assert_non_null(ms);
    for (size_t i = 0; i < N; i++) {
        ms[i] = new_msg(f, i + 1, (uint8_t)(1 + rng_below(16)));
        placed[i] = false;
    }
    for (int step = 0; step < STEPS; step++) {
        size_t i = rng_below(N);
        struct smq_msg *m = ms[i];
        uint64_t cnt[3] = {0, 0, 0}, n_placed = 0;

        if (placed[i]) {
            queue_msg_unplace(f->q, m, &f->w);
            placed[i] = false;
        }
        if (rng_below(5) != 0) {
            switch (rng_below(3)) {
            case 0: m->visible_ms = now - (int64_t)rng_below(1000); break;
            case 1: m->visible_ms = now + 1 + (int64_t)rng_below(100000); break;
            default: m->visible_ms = now; break;
            }
            m->dequeue_count = (uint32_t)rng_below(3);
            queue_msg_place(f->q, m, now, &f->w, &f->tb);
            placed[i] = true;
            if (m->visible_ms <= now)
                assert_int_equal(m->state, SMQ_MSG_ACTIVE);
            else
                assert_int_equal(m->state, m->dequeue_count > 0 ? SMQ_MSG_INACTIVE
                                                                : SMQ_MSG_DELAYED);
        }
        for (size_t k = 0; k < N; k++) {
            if (!placed[k])
                continue;
            cnt[ms[k]->state]++;
            n_placed++;
            assert_true(twheel_armed(&ms[k]->timer));
        }
        assert_counts(f->q, cnt[SMQ_MSG_ACTIVE], cnt[SMQ_MSG_INACTIVE], cnt[SMQ_MSG_DELAYED]);
        assert_int_equal(twheel_count(&f->w), n_placed);
        now += (int64_t)rng_below(3);
    }
    for (size_t i = 0; i < N; i++) {
        if (placed[i])
            queue_msg_unplace(f->q, ms[i], &f->w);
        free(ms[i]);
    }
    assert_counts(f->q, 0, 0, 0);
    assert_int_equal(twheel_count(&f->w), 0);
    free(ms);
}

/* ---- the Active heap -------------------------------------------------------- */

static void count_visit(struct smq_msg *m, void *arg)
{
    unsigned *hits = arg;

    hits[m->seq]++;
}

/* Lowest Priority value first, then lowest seq; draining gives exactly
 * that order.  foreach visits each Active message once and nothing else. */
static void test_queue_active_order_priority_then_seq(void **state)
{
    enum { N = 400 };
    struct fixture *f = *state;
    struct smq_msg **ms = calloc(N + 1, sizeof *ms);
    unsigned hits[N + 1];
    struct smq_msg *prev = NULL;
    size_t drained = 0, n_active = 0;

    assert_non_null(ms);
    memset(hits, 0, sizeof hits);
    /* Inserted in a scrambled seq order; some are Delayed and stay out. */
    for (size_t k = 0; k < N; k++) {
        uint64_t seq = (k * 151) % N + 1;
        struct smq_msg *m = new_msg(f, seq, (uint8_t)(1 + rng_below(16)));
        if (seq % 10 == 0)
            m->visible_ms = T0 + 5000;
        ms[seq] = m;
        queue_msg_place(f->q, m, T0, &f->w, &f->tb);
        n_active += m->state == SMQ_MSG_ACTIVE;
    }
    assert_int_equal(f->q->n_active, n_active);
    queue_foreach_active(f->q, count_visit, hits);
    for (size_t s = 1; s <= N; s++)
        assert_int_equal(hits[s], s % 10 == 0 ? 0 : 1);

    while (queue_first_active(f->q) != NULL) {
        struct smq_msg *m = queue_first_active(f->q);
        if (prev != NULL)
            assert_true(prev->priority < m->priority
                        || (prev->priority == m->priority && prev->seq < m->seq));
        queue_msg_unplace(f->q, m, &f->w);
        prev = m;
        drained++;
    }
    assert_int_equal(drained, n_active);
    assert_counts(f->q, 0, 0, N - n_active);
    for (size_t s = 1; s <= N; s++) {
        if (ms[s]->state != SMQ_MSG_ACTIVE)
            queue_msg_unplace(f->q, ms[s], &f->w);
        free(ms[s]);
    }
    assert_counts(f->q, 0, 0, 0);
    free(ms);
}

/* Priority beats age: a newer message of priority 1 comes before an older
 * one of priority 2; equal priorities go oldest seq first. */
static void test_queue_active_order_small(void **state)
{
    struct fixture *f = *state;
    struct smq_msg *old2 = new_msg(f, 10, 2), *new1 = new_msg(f, 20, 1),
                   *mid1 = new_msg(f, 15, 1), *p16 = new_msg(f, 1, 16);

    queue_msg_place(f->q, old2, T0, &f->w, &f->tb);
    queue_msg_place(f->q, p16, T0, &f->w, &f->tb);
    queue_msg_place(f->q, new1, T0, &f->w, &f->tb);
    assert_ptr_equal(queue_first_active(f->q), new1);
    queue_msg_place(f->q, mid1, T0, &f->w, &f->tb);
    assert_ptr_equal(queue_first_active(f->q), mid1);
    queue_msg_unplace(f->q, mid1, &f->w);
    assert_ptr_equal(queue_first_active(f->q), new1);
    queue_msg_unplace(f->q, new1, &f->w);
    assert_ptr_equal(queue_first_active(f->q), old2);
    queue_msg_unplace(f->q, old2, &f->w);
    assert_ptr_equal(queue_first_active(f->q), p16);
    queue_msg_unplace(f->q, p16, &f->w);
    assert_null(queue_first_active(f->q));
    free(old2);
    free(new1);
    free(mid1);
    free(p16);
}

/* ---- the age heap ------------------------------------------------------------ */

/* Oldest EnqueueTime first whatever the state, ties by lowest seq; a
 * dead-lettered message keeps its old EnqueueTime under a higher seq. */
static void test_queue_oldest_msg(void **state)
{
    struct fixture *f = *state;
    struct smq_msg *a = new_msg(f, 5, 8), *b = new_msg(f, 3, 8), *c = new_msg(f, 9, 8),
                   *d = new_msg(f, 100, 8);

    assert_null(queue_oldest_msg(f->q));
    a->enqueue_ms = T0 + 200;
    b->enqueue_ms = T0 + 300;
    c->enqueue_ms = T0 + 200;            /* ties with a: a has the lower seq */
    d->enqueue_ms = T0 + 50;             /* moved in later, enqueued earliest */
    d->visible_ms = T0 + 99999;          /* Delayed: still counts */
    queue_msg_adopt(f->q, b);
    assert_ptr_equal(queue_oldest_msg(f->q), b);
    queue_msg_adopt(f->q, c);
    assert_ptr_equal(queue_oldest_msg(f->q), c);
    queue_msg_adopt(f->q, a);
    assert_ptr_equal(queue_oldest_msg(f->q), a);
    queue_msg_place(f->q, d, T0, &f->w, &f->tb);
    queue_msg_adopt(f->q, d);
    assert_ptr_equal(queue_oldest_msg(f->q), d);
    assert_int_equal(heap_count(&f->q->by_age), 4);

    queue_msg_release(f->q, d);
    assert_ptr_equal(queue_oldest_msg(f->q), a);
    queue_msg_release(f->q, c);          /* not the oldest: a stays */
    assert_ptr_equal(queue_oldest_msg(f->q), a);
    queue_msg_release(f->q, a);
    assert_ptr_equal(queue_oldest_msg(f->q), b);
    queue_msg_release(f->q, b);
    assert_null(queue_oldest_msg(f->q));
    /* Membership is separate from placement. */
    assert_counts(f->q, 0, 0, 1);
    queue_msg_unplace(f->q, d, &f->w);
    free(a);
    free(b);
    free(c);
    free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_queue_registry_sorted_find),
        cmocka_unit_test(test_queue_registry_find_id),
        cmocka_unit_test(test_queue_registry_grows),
        cmocka_unit_test(test_queue_registry_remove),
        cmocka_unit_test(test_queue_new_and_info),
        cmocka_unit_test(test_queue_new_longest_name),
        cmocka_unit_test_setup_teardown(test_queue_redrive_pending, setup, teardown),
        cmocka_unit_test(test_queue_msg_table_basic),
        cmocka_unit_test(test_queue_msg_table_grows),
        cmocka_unit_test_setup_teardown(test_queue_place_active, setup, teardown),
        cmocka_unit_test_setup_teardown(test_queue_place_visible_now_is_active, setup, teardown),
        cmocka_unit_test_setup_teardown(test_queue_place_delayed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_queue_place_inactive, setup, teardown),
        cmocka_unit_test_setup_teardown(test_queue_place_expiry_before_visibility, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_queue_place_past_deadline_fires_next_advance,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_queue_counters_exact_through_transitions, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_queue_active_order_priority_then_seq, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_queue_active_order_small, setup, teardown),
        cmocka_unit_test_setup_teardown(test_queue_oldest_msg, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
