/*
 * store_lists.h — for the store's unit tests (test_store.c on SQLite,
 * test_store_pg.c on PostgreSQL): loader callbacks that collect what a
 * load returned, and field-by-field record comparisons (queues' messages
 * and the topics' four records), so both backends are held to the same
 * checks; also test_ctl_migrate.c, for the signing key.
 */
#ifndef SMQD_TEST_STORE_LISTS_H
#define SMQD_TEST_STORE_LISTS_H

#include <string.h>

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

/* ---- topics ---- */

struct topic_list {
    struct store_topic_rec t[8];
    int n;
};

static inline int collect_topic(void *arg, const struct store_topic_rec *t)
{
    struct topic_list *l = arg;

    if (l->n >= 8)
        return -1;
    l->t[l->n++] = *t;
    return 0;
}

struct sub_list {
    struct store_sub_rec s[8];
    int n;
};

static inline int collect_sub(void *arg, const struct store_sub_rec *sub)
{
    struct sub_list *l = arg;

    if (l->n >= 8)
        return -1;
    l->s[l->n++] = *sub;
    return 0;
}

struct tmsg_list {
    struct store_tmsg_rec m[8];
    int n;
};

static inline int collect_tmsg(void *arg, const struct store_tmsg_rec *m)
{
    struct tmsg_list *l = arg;

    if (l->n >= 8)
        return -1;
    l->m[l->n++] = *m;
    return 0;
}

struct notif_list {
    struct store_notif_rec r[8];
    int n;
};

static inline int collect_notif(void *arg, const struct store_notif_rec *n)
{
    struct notif_list *l = arg;

    if (l->n >= 8)
        return -1;
    l->r[l->n++] = *n;
    return 0;
}

static inline void assert_topic_equal(const struct store_topic_rec *a,
                                      const struct store_topic_rec *b)
{
    assert_int_equal(a->id, b->id);
    assert_string_equal(a->name, b->name);
    assert_int_equal(a->create_s, b->create_s);
    assert_int_equal(a->modify_s, b->modify_s);
    assert_int_equal(a->max_msg_size, b->max_msg_size);
    assert_int_equal(a->logging, b->logging);
}

static inline void assert_sub_equal(const struct store_sub_rec *a, const struct store_sub_rec *b)
{
    assert_int_equal(a->id, b->id);
    assert_int_equal(a->topic_id, b->topic_id);
    assert_string_equal(a->name, b->name);
    assert_string_equal(a->endpoint, b->endpoint);
    assert_string_equal(a->filter_tag, b->filter_tag);
    assert_int_equal(a->strategy, b->strategy);
    assert_int_equal(a->format, b->format);
    assert_int_equal(a->dlq_enabled, b->dlq_enabled);
    assert_string_equal(a->dlq_target, b->dlq_target);
    assert_int_equal(a->create_s, b->create_s);
    assert_int_equal(a->modify_s, b->modify_s);
}

static inline void assert_tmsg_equal(const struct store_tmsg_rec *a,
                                     const struct store_tmsg_rec *b)
{
    assert_int_equal(a->topic_id, b->topic_id);
    assert_true(a->seq == b->seq);
    assert_int_equal(a->publish_ms, b->publish_ms);
    assert_string_equal(a->tag, b->tag);
    assert_memory_equal(a->md5, b->md5, MNS_MD5_LEN);
    assert_int_equal(a->body_len, b->body_len);
}

static inline void assert_notif_equal(const struct store_notif_rec *a,
                                      const struct store_notif_rec *b)
{
    assert_int_equal(a->sub_id, b->sub_id);
    assert_true(a->seq == b->seq);
    assert_int_equal(a->attempts, b->attempts);
    assert_int_equal(a->due_ms, b->due_ms);
    assert_int_equal(a->strategy, b->strategy);
}

/* Whether s holds the push signing pair (key, cert); NULL key: none at all. */
static inline void assert_signing_key(struct smq_store *s, const char *key, const char *cert)
{
    struct smq_buf k, c;
    int found = -1;

    buf_init(&k);
    buf_init(&c);
    assert_int_equal(store_signing_key_get(s, &k, &c, &found), 0);
    assert_int_equal(found, key != NULL);
    if (key != NULL) {
        assert_int_equal(k.len, strlen(key));
        assert_memory_equal(k.data, key, k.len);
        assert_int_equal(c.len, strlen(cert));
        assert_memory_equal(c.data, cert, c.len);
    }
    buf_free(&k);
    buf_free(&c);
}

/* Three notification rows (sub_id, seq, attempts, due_ms, strategy) for the
 * rekeying migrations' tests (SQLite schema 7, PostgreSQL schema 4), and
 * what s must load from them: every row, in (seq, sub_id) order. */
#define REKEY_NOTIF_ROWS "(2, 9, 3, 7000, 1), (1, 30, 0, 5000, 0), (2, 3, 0, 5000, 0)"
static inline void expect_rekeyed_notifs(struct smq_store *s)
{
    struct notif_list nl = {.n = 0};

    assert_int_equal(store_notif_load(s, collect_notif, &nl), 0);
    assert_int_equal(nl.n, 3);
    assert_true(nl.r[0].sub_id == 2 && nl.r[0].seq == 3);
    assert_true(nl.r[1].sub_id == 2 && nl.r[1].seq == 9 && nl.r[1].attempts == 3 &&
                nl.r[1].due_ms == 7000 && nl.r[1].strategy == 1);
    assert_true(nl.r[2].sub_id == 1 && nl.r[2].seq == 30);
}

#endif
