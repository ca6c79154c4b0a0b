/*
 * store_lists.h — for the store's unit tests (test_store.c on SQLite,
 * test_store_pg.c on PostgreSQL): loader callbacks that collect what a
 * load returned, and a field-by-field record comparison, so both backends
 * are held to the same checks.
 */
#ifndef SMQD_TEST_STORE_LISTS_H
#define SMQD_TEST_STORE_LISTS_H

#include "smqd/store.h"

struct queue_list {
    struct store_queue_rec q[16];
    int n;
};

static inline int collect_queue(void *arg, const struct store_queue_rec *q)
{
    struct queue_list *l = arg;

    if (l->n >= 16)
        return -1;
    l->q[l->n++] = *q;
    return 0;
}

struct msg_list {
    struct store_msg_rec m[64];
    int n;
};

static inline int collect_msg(void *arg, const struct store_msg_rec *m)
{
    struct msg_list *l = arg;

    if (l->n >= 64)
        return -1;
    l->m[l->n++] = *m;
    return 0;
}

/* Field by field: the struct has padding that loaders need not clear. */
static inline void assert_msg_equal(const struct store_msg_rec *a, const struct store_msg_rec *b)
{
    assert_int_equal(a->queue_id, b->queue_id);
    assert_true(a->seq == b->seq);
    assert_int_equal(a->priority, b->priority);
    assert_int_equal(a->enqueue_ms, b->enqueue_ms);
    assert_int_equal(a->first_dequeue_ms, b->first_dequeue_ms);
    assert_int_equal(a->visible_ms, b->visible_ms);
    assert_int_equal(a->expire_ms, b->expire_ms);
    assert_int_equal(a->dequeue_count, b->dequeue_count);
    assert_int_equal(a->handle_gen, b->handle_gen);
    assert_int_equal(a->src_queue_id, b->src_queue_id);
}

static inline int stop_at_second(void *arg, const struct store_msg_rec *m)
{
    (void)m;
    return ++*(int *)arg == 2 ? 42 : 0;
}

#endif
