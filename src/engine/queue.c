/*
 * queue.c — owns the in-memory queue model: the name-sorted registry, the
 * seq → message table, and message placement with exact counters (queue.h).
 */
#include "queue.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- registry ---------------------------------------------------------- */

void queue_registry_init(struct queue_registry *r)
{
    r->items = NULL;
    r->n = r->cap = 0;
}

void queue_registry_free(struct queue_registry *r)
{
    free(r->items);
    queue_registry_init(r);
}

size_t queue_registry_lower_bound(const struct queue_registry *r, const char *name)
{
    size_t lo = 0, hi = r->n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(r->items[mid]->name, name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

struct smq_queue *queue_registry_find(const struct queue_registry *r, const char *name)
{
    size_t i = queue_registry_lower_bound(r, name);
    return (i < r->n && strcmp(r->items[i]->name, name) == 0) ? r->items[i] : NULL;
}

struct smq_queue *queue_registry_find_id(const struct queue_registry *r, int64_t id)
{
    for (size_t i = 0; i < r->n; i++)
        if (r->items[i]->id == id)
            return r->items[i];
    return NULL;
}

int queue_registry_reserve(struct queue_registry *r)
{
    size_t cap;
    struct smq_queue **p;

    if (r->n < r->cap)
        return 0;
    cap = r->cap ? r->cap * 2 : 64;
    p = realloc(r->items, cap * sizeof *p);
    if (p == NULL)
        return SMQ_E_NOMEM;
    r->items = p;
    r->cap = cap;
    return 0;
}

void queue_registry_insert(struct queue_registry *r, struct smq_queue *q)
{
    size_t i = queue_registry_lower_bound(r, q->name);

    memmove(&r->items[i + 1], &r->items[i], (r->n - i) * sizeof *r->items);
    r->items[i] = q;
    r->n++;
}

void queue_registry_remove(struct queue_registry *r, struct smq_queue *q)
{
    size_t i = queue_registry_lower_bound(r, q->name);

    if (i >= r->n || r->items[i] != q)
        return;
    memmove(&r->items[i], &r->items[i + 1], (r->n - i - 1) * sizeof *r->items);
    r->n--;
}

/* ---- queues ------------------------------------------------------------ */

/* Heap order: lower Priority value first, then older (smaller seq) first. */
static int msg_less(const struct heap_node *a, const struct heap_node *b)
{
    const struct smq_msg *ma = (const struct smq_msg *)((const char *)a - offsetof(struct smq_msg, hnode));
    const struct smq_msg *mb = (const struct smq_msg *)((const char *)b - offsetof(struct smq_msg, hnode));

    if (ma->priority != mb->priority)
        return ma->priority < mb->priority;
    return ma->seq < mb->seq;
}

/* Age heap order: older EnqueueTime first, then smaller seq (a total
 * order: dead-lettered and redriven messages keep their first EnqueueTime,
 * so seq alone would not do). */
static int age_less(const struct heap_node *a, const struct heap_node *b)
{
    const struct smq_msg *ma = (const struct smq_msg *)((const char *)a - offsetof(struct smq_msg, anode));
    const struct smq_msg *mb = (const struct smq_msg *)((const char *)b - offsetof(struct smq_msg, anode));

    if (ma->enqueue_ms != mb->enqueue_ms)
        return ma->enqueue_ms < mb->enqueue_ms;
    return ma->seq < mb->seq;
}

struct smq_queue *queue_new(int64_t id, const char *name, const struct smq_queue_attrs *attrs,
                            int64_t create_s, int64_t modify_s)
{
    struct smq_queue *q = calloc(1, sizeof *q);

    if (q == NULL)
        return NULL;
    q->id = id;
    snprintf(q->name, sizeof q->name, "%s", name);
    q->attrs = *attrs;
    q->create_s = create_s;
    q->modify_s = modify_s;
    heap_init(&q->active, msg_less);
    heap_init(&q->by_age, age_less);
    return q;
}

void queue_redrive_free(struct queue_redrive *r)
{
    if (r != NULL)
        free(r->seqs);
    free(r);
}

uint64_t queue_redrive_pending(const struct smq_queue *q)
{
    return q->redrive != NULL ? q->redrive->n - q->redrive->next : 0;
}

void queue_free(struct smq_queue *q)
{
    if (q != NULL)
        queue_redrive_free(q->redrive);
    free(q);
}

void queue_info(const struct smq_queue *q, struct smq_queue_info *out)
{
    memcpy(out->name, q->name, sizeof out->name);
    out->attrs = q->attrs;
    out->create_s = q->create_s;
    out->modify_s = q->modify_s;
    out->n_active = q->n_active;
    out->n_inactive = q->n_inactive;
    out->n_delayed = q->n_delayed;
}

struct smq_msg *queue_first_active(const struct smq_queue *q)
{
    struct heap_node *n = heap_min(&q->active);
    return n ? (struct smq_msg *)((char *)n - offsetof(struct smq_msg, hnode)) : NULL;
}

struct active_visit {
    void (*fn)(struct smq_msg *m, void *arg);
    void *arg;
};

static void visit_active(struct heap_node *n, void *arg)
{
    struct active_visit *v = arg;

    v->fn((struct smq_msg *)((char *)n - offsetof(struct smq_msg, hnode)), v->arg);
}

void queue_foreach_active(const struct smq_queue *q, void (*fn)(struct smq_msg *m, void *arg),
                          void *arg)
{
    struct active_visit v = {fn, arg};

    heap_foreach(&q->active, visit_active, &v);
}

void queue_msg_adopt(struct smq_queue *q, struct smq_msg *m)
{
    heap_insert(&q->by_age, &m->anode);
}

void queue_msg_release(struct smq_queue *q, struct smq_msg *m)
{
    heap_remove(&q->by_age, &m->anode);
}

struct smq_msg *queue_oldest_msg(const struct smq_queue *q)
{
    struct heap_node *n = heap_min(&q->by_age);
    return n ? (struct smq_msg *)((char *)n - offsetof(struct smq_msg, anode)) : NULL;
}

/* ---- message table ------------------------------------------------------ */

/* Fibonacci hashing spreads consecutive sequence numbers over the buckets. */
static size_t bucket_of(const struct msg_table *t, uint64_t seq)
{
    return (size_t)((seq * 0x9E3779B97F4A7C15ull) >> 17) & (t->n_buckets - 1);
}

int msg_table_init(struct msg_table *t)
{
    t->n_buckets = 1024;
    t->count = 0;
    t->buckets = calloc(t->n_buckets, sizeof *t->buckets);
    return t->buckets ? 0 : SMQ_E_NOMEM;
}

void msg_table_free(struct msg_table *t)
{
    free(t->buckets);
    t->buckets = NULL;
    t->n_buckets = t->count = 0;
}

struct smq_msg *msg_table_find(const struct msg_table *t, uint64_t seq)
{
    struct smq_msg *m = t->buckets[bucket_of(t, seq)];

    while (m != NULL && m->seq != seq)
        m = m->hash_next;
    return m;
}

static void grow(struct msg_table *t)
{
    size_t old_n = t->n_buckets;
    struct smq_msg **old = t->buckets;
    struct smq_msg **fresh = calloc(old_n * 2, sizeof *fresh);

    if (fresh == NULL)
        return;                 /* keep the old table: slower, still correct */
    t->buckets = fresh;
    t->n_buckets = old_n * 2;
    for (size_t i = 0; i < old_n; i++) {
        struct smq_msg *m = old[i];
        while (m != NULL) {
            struct smq_msg *next = m->hash_next;
            size_t b = bucket_of(t, m->seq);
            m->hash_next = fresh[b];
            fresh[b] = m;
            m = next;
        }
    }
    free(old);
}

void msg_table_insert(struct msg_table *t, struct smq_msg *m)
{
    size_t b;

    if (t->count >= t->n_buckets)
        grow(t);
    b = bucket_of(t, m->seq);
    m->hash_next = t->buckets[b];
    t->buckets[b] = m;
    t->count++;
}

void msg_table_remove(struct msg_table *t, struct smq_msg *m)
{
    struct smq_msg **link = &t->buckets[bucket_of(t, m->seq)];

    while (*link != NULL && *link != m)
        link = &(*link)->hash_next;
    if (*link == m) {
        *link = m->hash_next;
        m->hash_next = NULL;
        t->count--;
    }
}

/* ---- placement ---------------------------------------------------------- */

static uint64_t *counter_of(struct smq_queue *q, uint8_t state)
{
    switch (state) {
    case SMQ_MSG_ACTIVE:
        return &q->n_active;
    case SMQ_MSG_INACTIVE:
        return &q->n_inactive;
    default:
        return &q->n_delayed;
    }
}

void queue_msg_place(struct smq_queue *q, struct smq_msg *m, int64_t now_ms,
                     struct twheel *w, const struct queue_timebase *tb)
{
    int64_t deadline_ms;

    if (m->visible_ms > now_ms) {
        /* A message that was received at least once and is invisible again
         * is Inactive; one that was never received is still Delayed. */
        m->state = m->dequeue_count > 0 ? SMQ_MSG_INACTIVE : SMQ_MSG_DELAYED;
        deadline_ms = m->visible_ms < m->expire_ms ? m->visible_ms : m->expire_ms;
    } else {
        m->state = SMQ_MSG_ACTIVE;
        heap_insert(&q->active, &m->hnode);
        deadline_ms = m->expire_ms;
    }
    (*counter_of(q, m->state))++;
    twheel_arm(w, &m->timer, queue_epoch_to_mono(tb, deadline_ms));
}

void queue_msg_unplace(struct smq_queue *q, struct smq_msg *m, struct twheel *w)
{
    if (m->state == SMQ_MSG_ACTIVE)
        heap_remove(&q->active, &m->hnode);
    (*counter_of(q, m->state))--;
    twheel_cancel(w, &m->timer);
}
