/*
 * test_topic.c — unit tests for the in-memory model of topics
 * (src/engine/topic.c): the name-sorted topic registry (find, lower bound,
 * reserve, insert, destroy, info), each topic's subscriptions (by name, by
 * id across topics, lower bound, destroy, info), FilterTag matching, the
 * seq → message table, notifications (link as READY or WAITING on the
 * wheel, make ready, fly, find in flight by seq and attempt, unplace,
 * destroy with the message's last one), the runnable round-robin with its
 * blocked list, and topic_model_clear.  The wheel is a real one driven by
 * numbers; nothing sleeps.
 *
 * Endpoints go through the real parser (src/mns/notify.c).
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

#include "smqd/errors.h"
#include "smqd/mns.h"
#include "smqd/notify.h"
#include "smqd/twheel.h"
#include "topic.h"

#define T0 ((int64_t)1700000000000)   /* epoch ms at wheel time 0 */
#define FIRED_MAX 64

/* ---- fixture ------------------------------------------------------------ */

struct fx {
    struct topic_model m;
    struct twheel w;
    struct topic_notif *fired[FIRED_MAX];     /* in firing order */
    size_t n_fired;
};

/* A due notification leaves the wheel and becomes READY, as the fan-out will do. */
static void on_fire(struct twheel_node *node, uint64_t now_ms, void *arg)
{
    struct fx *f = arg;
    struct topic_notif *n = topic_notif_from_timer(node);

    assert_int_equal(n->state, TOPIC_NOTIF_WAITING);
    assert_true((int64_t)now_ms >= n->due_ms - T0);
    assert_true(f->n_fired < FIRED_MAX);
    f->fired[f->n_fired++] = n;
    topic_notif_make_ready(&f->m, n);
}

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof *f);

    assert_non_null(f);
    assert_int_equal(topic_model_init(&f->m), 0);
    twheel_init(&f->w, 0, on_fire, f);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;

    topic_model_clear(&f->m, &f->w);
    assert_int_equal(twheel_count(&f->w), 0);
    topic_model_free(&f->m);
    free(f);
    return 0;
}

static struct smq_topic *add_topic(struct topic_model *m, int64_t id, const char *name)
{
    struct smq_topic_attrs a;
    struct smq_topic *t;

    mns_default_topic_attrs(&a);
    assert_null(topic_find(m, name));
    assert_int_equal(topic_reserve(m), 0);
    t = topic_new(id, name, &a, 100 + id, 200 + id);
    assert_non_null(t);
    topic_insert(m, t);
    assert_ptr_equal(topic_find(m, name), t);
    return t;
}

static struct smq_sub *add_sub(struct topic_model *m, struct smq_topic *t, int64_t id,
                               const char *name, const char *filter)
{
    struct smq_sub_attrs a;
    struct smq_sub *s;

    memset(&a, 0, sizeof a);
    snprintf(a.endpoint, sizeof a.endpoint, "http://push.example:8080/n/%s", name);
    snprintf(a.filter_tag, sizeof a.filter_tag, "%s", filter);
    assert_int_equal(topic_sub_reserve(m, t), 0);
    s = topic_sub_new(id, name, &a, 10, 20);
    assert_non_null(s);
    topic_sub_insert(m, t, s);
    return s;
}

static struct topic_msg *add_msg(struct topic_model *m, struct smq_topic *t, uint64_t seq,
                                 const char *tag)
{
    struct topic_msg *msg = calloc(1, sizeof *msg);

    assert_non_null(msg);
    msg->seq = seq;
    msg->publish_ms = T0 + (int64_t)seq;
    snprintf(msg->tag, sizeof msg->tag, "%s", tag);
    topic_msg_insert(m, t, msg);
    return msg;
}

static struct topic_notif *link_notif(struct fx *f, struct smq_sub *s, struct topic_msg *msg,
                                      uint32_t attempts, int64_t due_ms, int64_t now_ms)
{
    struct topic_notif *n = calloc(1, sizeof *n);

    assert_non_null(n);
    n->sub = s;
    n->msg = msg;
    n->attempts = attempts;
    n->due_ms = due_ms;
    topic_notif_link(&f->m, n, now_ms, &f->w, T0);
    return n;
}

/* The READY FIFO of s, as an array; returns its length. */
static size_t ready_list(const struct smq_sub *s, struct topic_notif **out, size_t max)
{
    size_t k = 0;

    for (struct topic_notif *n = s->ready_head; n != NULL; n = n->next) {
        assert_true(k < max);
        out[k++] = n;
    }
    if (k > 0)
        assert_ptr_equal(s->ready_tail, out[k - 1]);
    else
        assert_null(s->ready_tail);
    return k;
}

/* ---- init and free ------------------------------------------------------ */

static void test_init_free(void **state)
{
    struct topic_model m;

    (void)state;
    memset(&m, 0xa5, sizeof m);
    assert_int_equal(topic_model_init(&m), 0);
    assert_int_equal(m.n_topics, 0);
    assert_int_equal(m.n_subs_total, 0);
    assert_int_equal(m.n_msgs, 0);
    assert_int_equal(m.n_notifs, 0);
    assert_null(m.runnable_head);
    assert_null(m.blocked);
    assert_null(topic_find(&m, "a"));
    assert_int_equal(topic_lower_bound(&m, "a"), 0);
    assert_null(topic_sub_find_id(&m, 1));
    assert_null(topic_msg_find(&m, 1));
    assert_null(topic_take_runnable(&m));
    add_topic(&m, 1, "t");
    topic_model_free(&m);
    assert_null(m.topics);
    assert_int_equal(m.n_topics, 0);
    assert_null(m.sub_buckets);
    assert_null(m.msg_buckets);
}

/* ---- topics ------------------------------------------------------------- */

static void test_topics_sorted(void **state)
{
    struct fx *f = *state;
    char name[32];
    struct smq_topic_info info;
    struct smq_topic *t;

    /* 200 names inserted in a scrambled order (the array grows past 16 several times). */
    for (int i = 0; i < 200; i++) {
        int k = (i * 73) % 200;
        snprintf(name, sizeof name, "topic-%03d", k);
        add_topic(&f->m, k + 1, name);
    }
    assert_int_equal(f->m.n_topics, 200);
    for (size_t i = 0; i < 200; i++) {
        snprintf(name, sizeof name, "topic-%03zu", i);
        assert_string_equal(f->m.topics[i]->name, name);
        assert_ptr_equal(topic_find(&f->m, name), f->m.topics[i]);
        assert_int_equal(f->m.topics[i]->id, (int64_t)i + 1);
        assert_int_equal(topic_lower_bound(&f->m, name), i);
    }
    /* Paging: the first name >= a key between or outside the names. */
    assert_int_equal(topic_lower_bound(&f->m, ""), 0);
    assert_int_equal(topic_lower_bound(&f->m, "topic-050a"), 51);
    assert_int_equal(topic_lower_bound(&f->m, "topic-1"), 100);
    assert_int_equal(topic_lower_bound(&f->m, "zzz"), 200);
    assert_null(topic_find(&f->m, "topic-1"));
    assert_null(topic_find(&f->m, "topic-0000"));

    t = topic_find(&f->m, "topic-007");
    t->message_count = 0;
    t->published = 5;
    topic_info(t, &info);
    assert_string_equal(info.name, "topic-007");
    assert_int_equal(info.create_s, 108);
    assert_int_equal(info.modify_s, 208);
    assert_int_equal(info.published, 5);
    assert_int_equal(info.message_count, 0);
    assert_int_equal(info.attrs.max_msg_size, t->attrs.max_msg_size);
    assert_int_equal(info.attrs.logging, t->attrs.logging);
}

static void test_topic_destroy(void **state)
{
    struct fx *f = *state;
    struct smq_topic *a = add_topic(&f->m, 1, "a");
    struct smq_topic *b = add_topic(&f->m, 2, "b");
    struct smq_topic *c = add_topic(&f->m, 3, "c");
    struct smq_sub *sa = add_sub(&f->m, a, 10, "s", "");
    struct smq_sub *sb1 = add_sub(&f->m, b, 20, "s1", "");
    struct smq_sub *sb2 = add_sub(&f->m, b, 21, "s2", "");
    struct topic_msg *ma = add_msg(&f->m, a, 1, "");
    struct topic_msg *mb = add_msg(&f->m, b, 2, "");

    add_msg(&f->m, b, 3, "");            /* kept with no notification linked */
    link_notif(f, sa, ma, 0, T0 + 500, T0);
    link_notif(f, sb1, mb, 0, T0 + 500, T0);          /* WAITING */
    link_notif(f, sb2, mb, 1, T0, T0);                /* READY: sb2 runnable */
    topic_block(&f->m, topic_take_runnable(&f->m));   /* sb2 blocked */
    topic_mark_runnable(&f->m, sa);
    assert_int_equal(twheel_count(&f->w), 2);
    assert_int_equal(f->m.n_msgs, 3);

    topic_destroy(&f->m, b, &f->w);
    assert_int_equal(f->m.n_topics, 2);
    assert_ptr_equal(f->m.topics[0], a);
    assert_ptr_equal(f->m.topics[1], c);
    assert_null(topic_find(&f->m, "b"));
    assert_null(topic_sub_find_id(&f->m, 20));
    assert_null(topic_sub_find_id(&f->m, 21));
    assert_ptr_equal(topic_sub_find_id(&f->m, 10), sa);
    assert_int_equal(f->m.n_subs_total, 1);
    assert_null(topic_msg_find(&f->m, 2));
    assert_null(topic_msg_find(&f->m, 3));
    assert_ptr_equal(topic_msg_find(&f->m, 1), ma);
    assert_int_equal(f->m.n_msgs, 1);
    assert_int_equal(f->m.n_notifs, 1);
    assert_int_equal(twheel_count(&f->w), 1);          /* only sa's timer is left */
    assert_null(f->m.blocked);
    assert_ptr_equal(topic_take_runnable(&f->m), sa);
    assert_null(topic_take_runnable(&f->m));
    /* Nothing of b fires later. */
    assert_int_equal(twheel_advance(&f->w, 500), 1);
    assert_int_equal(f->n_fired, 1);
    assert_ptr_equal(f->fired[0]->sub, sa);
}

/* ---- subscriptions ------------------------------------------------------ */

static void test_subs(void **state)
{
    struct fx *f = *state;
    struct smq_topic *t1 = add_topic(&f->m, 1, "t1");
    struct smq_topic *t2 = add_topic(&f->m, 2, "t2");
    char name[32];

    /* 150 subscriptions on t1 in scrambled order, 50 on t2 with the same names:
     * the id table grows past its 64 buckets. */
    for (int i = 0; i < 150; i++) {
        int k = (i * 37) % 150;
        snprintf(name, sizeof name, "sub-%03d", k);
        add_sub(&f->m, t1, 1000 + k, name, "");
        if (k < 50)
            add_sub(&f->m, t2, 5000 + k, name, "");
    }
    assert_int_equal(f->m.n_subs_total, 200);
    assert_true(f->m.n_sub_buckets > 64);
    assert_int_equal(t1->n_subs, 150);
    assert_int_equal(t2->n_subs, 50);
    for (size_t i = 0; i < 150; i++) {
        struct smq_sub *s = t1->subs[i];
        snprintf(name, sizeof name, "sub-%03zu", i);
        assert_string_equal(s->name, name);
        assert_ptr_equal(s->topic, t1);
        assert_ptr_equal(topic_sub_find(t1, name), s);
        assert_ptr_equal(topic_sub_find_id(&f->m, 1000 + (int64_t)i), s);
        assert_int_equal(topic_sub_lower_bound(t1, name), i);
        assert_int_equal(s->flight_cap, TOPIC_FLIGHT_CAP);
        assert_int_equal(s->ep.kind, NOTIFY_EP_HTTP);
        if (i < 50) {
            assert_ptr_equal(topic_sub_find_id(&f->m, 5000 + (int64_t)i), t2->subs[i]);
            assert_ptr_equal(t2->subs[i]->topic, t2);
        }
    }
    assert_null(topic_sub_find(t2, "sub-050"));
    assert_null(topic_sub_find_id(&f->m, 5050));
    assert_int_equal(topic_sub_lower_bound(t1, ""), 0);
    assert_int_equal(topic_sub_lower_bound(t1, "sub-0995"), 100);
    assert_int_equal(topic_sub_lower_bound(t2, "sub-0995"), 50);
    assert_int_equal(topic_sub_lower_bound(t2, "x"), 50);
}

static void test_sub_destroy_and_info(void **state)
{
    struct fx *f = *state;
    struct smq_topic *t = add_topic(&f->m, 1, "orders");
    struct smq_sub *a = add_sub(&f->m, t, 11, "a", "");
    struct smq_sub *b = add_sub(&f->m, t, 12, "b", "red");
    struct smq_sub *c = add_sub(&f->m, t, 13, "c", "");
    struct topic_msg *msg = add_msg(&f->m, t, 7, "red");
    struct smq_sub_info info;

    link_notif(f, b, msg, 0, T0, T0);                  /* READY */
    link_notif(f, b, msg, 2, T0 + 1000, T0);           /* WAITING, retrying */
    link_notif(f, a, msg, 0, T0 + 10, T0);             /* WAITING */
    b->count.delivered = 4;
    b->count.failed = 3;
    b->count.dead = 1;
    topic_sub_info(b, &info);
    assert_string_equal(info.topic, "orders");
    assert_string_equal(info.name, "b");
    assert_string_equal(info.attrs.filter_tag, "red");
    assert_string_equal(info.attrs.endpoint, "http://push.example:8080/n/b");
    assert_int_equal(info.create_s, 10);
    assert_int_equal(info.modify_s, 20);
    assert_int_equal(info.pending, 2);
    assert_int_equal(info.retrying, 1);
    assert_int_equal(info.delivered, 4);
    assert_int_equal(info.failed, 3);
    assert_int_equal(info.dead, 1);

    topic_sub_destroy(&f->m, b, &f->w);
    assert_int_equal(t->n_subs, 2);
    assert_ptr_equal(t->subs[0], a);
    assert_ptr_equal(t->subs[1], c);
    assert_null(topic_sub_find(t, "b"));
    assert_null(topic_sub_find_id(&f->m, 12));
    assert_ptr_equal(topic_sub_find_id(&f->m, 13), c);
    assert_int_equal(f->m.n_subs_total, 2);
    assert_int_equal(f->m.n_notifs, 1);
    assert_int_equal(twheel_count(&f->w), 1);
    assert_null(f->m.runnable_head);                   /* b was runnable */
    assert_null(f->m.runnable_tail);
    /* The message stays for a's notification. */
    assert_ptr_equal(topic_msg_find(&f->m, 7), msg);
    assert_int_equal(msg->pending, 1);
    topic_sub_destroy(&f->m, a, &f->w);
    assert_null(topic_msg_find(&f->m, 7));
    assert_int_equal(t->message_count, 0);
    assert_int_equal(twheel_count(&f->w), 0);
    assert_int_equal(twheel_advance(&f->w, 5000), 0);
}

static void test_sub_bad_endpoint(void **state)
{
    struct smq_sub_attrs a;

    (void)state;
    memset(&a, 0, sizeof a);
    snprintf(a.endpoint, sizeof a.endpoint, "ftp://nowhere/");
    assert_null(topic_sub_new(1, "s", &a, 0, 0));
    snprintf(a.endpoint, sizeof a.endpoint, "acs:mns:cn-hangzhou:1:queues/inbox");
    struct smq_sub *s = topic_sub_new(1, "s", &a, 0, 0);
    assert_non_null(s);
    assert_int_equal(s->ep.kind, NOTIFY_EP_QUEUE);
    assert_string_equal(s->ep.queue, "inbox");
    assert_null(s->topic);
    free(s);
}

/* ---- FilterTag ---------------------------------------------------------- */

static void test_filter_tag(void **state)
{
    struct fx *f = *state;
    struct smq_topic *t = add_topic(&f->m, 1, "t");
    struct smq_sub *any = add_sub(&f->m, t, 1, "any", "");
    struct smq_sub *red = add_sub(&f->m, t, 2, "red", "red");

    /* No filter: every message, tagged or not. */
    assert_true(topic_sub_matches(any, ""));
    assert_true(topic_sub_matches(any, "red"));
    assert_true(topic_sub_matches(any, "blue"));
    /* A filter: exactly its tag (case and length count); untagged never. */
    assert_true(topic_sub_matches(red, "red"));
    assert_false(topic_sub_matches(red, ""));
    assert_false(topic_sub_matches(red, "blue"));
    assert_false(topic_sub_matches(red, "Red"));
    assert_false(topic_sub_matches(red, "re"));
    assert_false(topic_sub_matches(red, "redd"));
}

/* ---- published messages ------------------------------------------------- */

static void test_msgs(void **state)
{
    struct fx *f = *state;
    struct smq_topic *a = add_topic(&f->m, 1, "a");
    struct smq_topic *b = add_topic(&f->m, 2, "b");

    /* 300 messages (the seq table grows past its 64 buckets); seqs far apart. */
    for (uint64_t i = 1; i <= 300; i++)
        add_msg(&f->m, i % 3 == 0 ? b : a, i * 1000003, "");
    assert_int_equal(f->m.n_msgs, 300);
    assert_true(f->m.n_msg_buckets > 64);
    assert_int_equal(a->message_count, 200);
    assert_int_equal(b->message_count, 100);
    for (uint64_t i = 1; i <= 300; i++) {
        struct topic_msg *msg = topic_msg_find(&f->m, i * 1000003);
        assert_non_null(msg);
        assert_int_equal(msg->seq, i * 1000003);
        assert_ptr_equal(msg->topic, i % 3 == 0 ? b : a);
        assert_int_equal(msg->pending, 0);
    }
    assert_null(topic_msg_find(&f->m, 1000004));
    assert_null(topic_msg_find(&f->m, 0));
    /* A topic's destroy frees its messages only. */
    topic_destroy(&f->m, b, &f->w);
    assert_int_equal(f->m.n_msgs, 200);
    assert_null(topic_msg_find(&f->m, 3 * 1000003));
    assert_non_null(topic_msg_find(&f->m, 1000003));
}

/* ---- notifications ------------------------------------------------------ */

static void test_notif_link(void **state)
{
    struct fx *f = *state;
    struct smq_topic *t = add_topic(&f->m, 1, "t");
    struct smq_sub *s = add_sub(&f->m, t, 1, "s", "");
    struct topic_msg *m1 = add_msg(&f->m, t, 1, "");
    struct topic_msg *m2 = add_msg(&f->m, t, 2, "");
    struct topic_notif *list[8];
    struct topic_notif *r1, *r2, *w1, *w2;

    r1 = link_notif(f, s, m1, 0, T0 + 100, T0 + 100);  /* due now: READY */
    w1 = link_notif(f, s, m2, 1, T0 + 300, T0 + 100);  /* later: WAITING */
    w2 = link_notif(f, s, m1, 0, T0 + 200, T0 + 100);
    r2 = link_notif(f, s, m2, 3, T0 + 50, T0 + 100);   /* overdue: READY */
    assert_int_equal(r1->state, TOPIC_NOTIF_READY);
    assert_int_equal(r2->state, TOPIC_NOTIF_READY);
    assert_int_equal(w1->state, TOPIC_NOTIF_WAITING);
    assert_int_equal(w2->state, TOPIC_NOTIF_WAITING);
    assert_false(twheel_armed(&r1->timer));
    assert_true(twheel_armed(&w1->timer));
    assert_int_equal(w1->timer.deadline_ms, 300);      /* epoch ms → wheel ms */
    assert_int_equal(w2->timer.deadline_ms, 200);
    assert_int_equal(twheel_count(&f->w), 2);
    assert_int_equal(ready_list(s, list, 8), 2);
    assert_ptr_equal(list[0], r1);
    assert_ptr_equal(list[1], r2);
    assert_int_equal(s->n_pending, 4);
    assert_int_equal(s->n_retrying, 2);
    assert_int_equal(m1->pending, 2);
    assert_int_equal(m2->pending, 2);
    assert_int_equal(f->m.n_notifs, 4);
    assert_ptr_equal(topic_take_runnable(&f->m), s);   /* runnable once */
    assert_null(topic_take_runnable(&f->m));

    /* The wheel hands each back when due, in due order; it joins the FIFO's tail. */
    assert_int_equal(twheel_advance(&f->w, 199), 0);
    assert_int_equal(twheel_advance(&f->w, 200), 1);
    assert_ptr_equal(f->fired[0], w2);
    assert_int_equal(w2->state, TOPIC_NOTIF_READY);
    assert_ptr_equal(topic_take_runnable(&f->m), s);
    assert_int_equal(twheel_advance(&f->w, 1000), 1);
    assert_ptr_equal(f->fired[1], w1);
    assert_int_equal(ready_list(s, list, 8), 4);
    assert_ptr_equal(list[2], w2);
    assert_ptr_equal(list[3], w1);
    assert_int_equal(twheel_count(&f->w), 0);
}

static void test_notif_fly(void **state)
{
    struct fx *f = *state;
    struct smq_topic *t = add_topic(&f->m, 1, "t");
    struct smq_sub *s = add_sub(&f->m, t, 1, "s", "");
    struct topic_msg *m5 = add_msg(&f->m, t, 5, "");
    struct topic_msg *m6 = add_msg(&f->m, t, 6, "");
    struct topic_notif *a = link_notif(f, s, m5, 0, T0, T0);
    struct topic_notif *b = link_notif(f, s, m6, 2, T0, T0);
    struct topic_notif *list[4];

    /* Take each from the FIFO's head and start its attempt. */
    topic_notif_unplace(a, &f->w);
    assert_ptr_equal(s->ready_head, b);
    topic_notif_fly(a);
    topic_notif_unplace(b, &f->w);
    assert_int_equal(ready_list(s, list, 4), 0);
    topic_notif_fly(b);
    assert_int_equal(a->state, TOPIC_NOTIF_IN_FLIGHT);
    assert_int_equal(s->n_flight, 2);
    /* The attempt in flight is attempts + 1. */
    assert_ptr_equal(topic_flight_find(s, 5, 1), a);
    assert_ptr_equal(topic_flight_find(s, 6, 3), b);
    assert_null(topic_flight_find(s, 5, 0));
    assert_null(topic_flight_find(s, 5, 2));
    assert_null(topic_flight_find(s, 6, 2));
    assert_null(topic_flight_find(s, 7, 1));
    /* Out of the flight list from anywhere in it. */
    topic_notif_unplace(a, &f->w);
    assert_int_equal(s->n_flight, 1);
    assert_null(topic_flight_find(s, 5, 1));
    assert_ptr_equal(topic_flight_find(s, 6, 3), b);
    /* A failed attempt: back to READY. */
    a->attempts++;
    s->n_retrying++;
    topic_notif_make_ready(&f->m, a);
    assert_int_equal(ready_list(s, list, 4), 1);
    assert_ptr_equal(list[0], a);
    topic_notif_unplace(b, &f->w);
    assert_int_equal(s->n_flight, 0);
    assert_null(s->flight);
    assert_int_equal(s->n_retrying, 2);
}

static void test_notif_unplace_waiting(void **state)
{
    struct fx *f = *state;
    struct smq_topic *t = add_topic(&f->m, 1, "t");
    struct smq_sub *s = add_sub(&f->m, t, 1, "s", "");
    struct topic_msg *msg = add_msg(&f->m, t, 1, "");
    struct topic_notif *n = link_notif(f, s, msg, 0, T0 + 50, T0);
    struct topic_notif *other = link_notif(f, s, msg, 0, T0 + 60, T0);

    assert_int_equal(twheel_count(&f->w), 2);
    topic_notif_unplace(n, &f->w);
    assert_false(twheel_armed(&n->timer));
    assert_int_equal(twheel_count(&f->w), 1);
    assert_int_equal(twheel_advance(&f->w, 100), 1);    /* only the other fires */
    assert_ptr_equal(f->fired[0], other);
    /* Unplaced, it can be put straight in the FIFO. */
    topic_notif_make_ready(&f->m, n);
    assert_ptr_equal(s->ready_head, other);
    assert_ptr_equal(s->ready_tail, n);
}

static void test_notif_destroy_last(void **state)
{
    struct fx *f = *state;
    struct smq_topic *t = add_topic(&f->m, 1, "t");
    struct smq_sub *s1 = add_sub(&f->m, t, 1, "s1", "");
    struct smq_sub *s2 = add_sub(&f->m, t, 2, "s2", "");
    struct topic_msg *msg = add_msg(&f->m, t, 9, "");
    struct topic_notif *a = link_notif(f, s1, msg, 0, T0, T0);
    struct topic_notif *b = link_notif(f, s2, msg, 1, T0 + 10, T0);
    struct topic_notif *c = link_notif(f, s1, msg, 0, T0, T0);

    assert_int_equal(msg->pending, 3);
    assert_int_equal(t->message_count, 1);
    /* The tail of s1's list of all its notifications, then its head. */
    topic_notif_unplace(a, &f->w);
    assert_false(topic_notif_destroy(&f->m, a));
    assert_ptr_equal(s1->all, c);
    assert_null(c->sub_next);
    assert_int_equal(s1->n_pending, 1);
    assert_ptr_equal(topic_msg_find(&f->m, 9), msg);
    assert_int_equal(msg->pending, 2);
    topic_notif_unplace(c, &f->w);
    assert_false(topic_notif_destroy(&f->m, c));
    assert_null(s1->all);
    assert_int_equal(s1->n_pending, 0);
    /* The message's last one frees it. */
    topic_notif_unplace(b, &f->w);
    assert_int_equal(twheel_count(&f->w), 0);
    assert_int_equal(s2->n_retrying, 1);
    assert_true(topic_notif_destroy(&f->m, b));
    assert_int_equal(s2->n_retrying, 0);
    assert_int_equal(s2->n_pending, 0);
    assert_null(topic_msg_find(&f->m, 9));
    assert_int_equal(f->m.n_msgs, 0);
    assert_int_equal(t->message_count, 0);
    assert_int_equal(f->m.n_notifs, 0);
}

/* ---- the runnable list -------------------------------------------------- */

static void test_runnable_round_robin(void **state)
{
    struct fx *f = *state;
    struct smq_topic *t = add_topic(&f->m, 1, "t");
    struct smq_sub *a = add_sub(&f->m, t, 1, "a", "");
    struct smq_sub *b = add_sub(&f->m, t, 2, "b", "");
    struct smq_sub *c = add_sub(&f->m, t, 3, "c", "");

    topic_mark_runnable(&f->m, a);
    topic_mark_runnable(&f->m, b);
    topic_mark_runnable(&f->m, a);                     /* already on: no second place */
    topic_mark_runnable(&f->m, c);
    assert_ptr_equal(topic_take_runnable(&f->m), a);
    assert_false(a->runnable);
    topic_mark_runnable(&f->m, a);                     /* back at the tail */
    assert_ptr_equal(topic_take_runnable(&f->m), b);
    assert_ptr_equal(topic_take_runnable(&f->m), c);
    assert_ptr_equal(topic_take_runnable(&f->m), a);
    assert_null(topic_take_runnable(&f->m));
    assert_null(f->m.runnable_tail);

    /* A blocked subscription is not made runnable until unblocked. */
    topic_mark_runnable(&f->m, b);
    topic_block(&f->m, topic_take_runnable(&f->m));
    assert_true(b->blocked);
    topic_mark_runnable(&f->m, b);
    assert_null(topic_take_runnable(&f->m));
    topic_mark_runnable(&f->m, c);
    topic_block(&f->m, topic_take_runnable(&f->m));
    topic_mark_runnable(&f->m, a);
    topic_unblock_all(&f->m);
    assert_null(f->m.blocked);
    assert_false(b->blocked);
    assert_false(c->blocked);
    /* a first (it was runnable), then b and c once each. */
    assert_ptr_equal(topic_take_runnable(&f->m), a);
    struct smq_sub *x = topic_take_runnable(&f->m);
    struct smq_sub *y = topic_take_runnable(&f->m);
    assert_true((x == b && y == c) || (x == c && y == b));
    assert_null(topic_take_runnable(&f->m));
    topic_unblock_all(&f->m);                          /* none blocked: nothing */
    assert_null(topic_take_runnable(&f->m));
}

static void test_sub_destroy_unruns(void **state)
{
    struct fx *f = *state;
    struct smq_topic *t = add_topic(&f->m, 1, "t");
    struct smq_sub *a = add_sub(&f->m, t, 1, "a", "");
    struct smq_sub *b = add_sub(&f->m, t, 2, "b", "");
    struct smq_sub *c = add_sub(&f->m, t, 3, "c", "");
    struct smq_sub *d = add_sub(&f->m, t, 4, "d", "");
    struct smq_sub *e = add_sub(&f->m, t, 5, "e", "");

    topic_mark_runnable(&f->m, a);
    topic_mark_runnable(&f->m, b);
    topic_mark_runnable(&f->m, c);
    topic_sub_destroy(&f->m, b, &f->w);                /* the middle */
    topic_sub_destroy(&f->m, c, &f->w);                /* the tail */
    assert_ptr_equal(f->m.runnable_tail, a);
    topic_mark_runnable(&f->m, d);
    topic_mark_runnable(&f->m, e);
    topic_block(&f->m, topic_take_runnable(&f->m));    /* a */
    topic_block(&f->m, topic_take_runnable(&f->m));    /* d */
    topic_sub_destroy(&f->m, a, &f->w);                /* blocked */
    assert_ptr_equal(f->m.blocked, d);
    assert_null(d->runnable_next);
    topic_unblock_all(&f->m);
    assert_ptr_equal(topic_take_runnable(&f->m), e);
    assert_ptr_equal(topic_take_runnable(&f->m), d);
    assert_null(topic_take_runnable(&f->m));
    assert_int_equal(t->n_subs, 2);
    assert_int_equal(f->m.n_subs_total, 2);
}

/* ---- clear -------------------------------------------------------------- */

static void test_model_clear(void **state)
{
    struct fx *f = *state;
    char name[16];
    struct smq_topic *t;
    struct smq_sub *s;

    /* Five topics, each with a notification in every place and a sub blocked or runnable. */
    for (int i = 0; i < 5; i++) {
        snprintf(name, sizeof name, "t%d", i);
        t = add_topic(&f->m, i + 1, name);
        s = add_sub(&f->m, t, 10 * (i + 1), "s", "");
        struct topic_msg *msg = add_msg(&f->m, t, (uint64_t)i + 1, "");
        struct topic_notif *n = link_notif(f, s, msg, 0, T0, T0);
        topic_notif_unplace(n, &f->w);
        topic_notif_fly(n);                            /* IN_FLIGHT */
        link_notif(f, s, msg, 1, T0, T0);              /* READY */
        link_notif(f, s, msg, 0, T0 + 100 + i, T0);    /* WAITING */
    }
    topic_block(&f->m, topic_take_runnable(&f->m));
    assert_int_equal(twheel_count(&f->w), 5);
    assert_int_equal(f->m.n_notifs, 15);

    topic_model_clear(&f->m, &f->w);
    assert_int_equal(f->m.n_topics, 0);
    assert_int_equal(f->m.n_subs_total, 0);
    assert_int_equal(f->m.n_msgs, 0);
    assert_int_equal(f->m.n_notifs, 0);
    assert_int_equal(twheel_count(&f->w), 0);
    assert_null(f->m.runnable_head);
    assert_null(f->m.runnable_tail);
    assert_null(f->m.blocked);
    assert_null(topic_find(&f->m, "t0"));
    assert_null(topic_sub_find_id(&f->m, 10));
    assert_null(topic_msg_find(&f->m, 1));
    assert_int_equal(twheel_advance(&f->w, 10000), 0);

    /* Still usable. */
    t = add_topic(&f->m, 1, "t0");
    s = add_sub(&f->m, t, 10, "s", "");
    link_notif(f, s, add_msg(&f->m, t, 1, ""), 0, T0 + 20000, T0 + 10000);
    assert_int_equal(twheel_count(&f->w), 1);
    assert_ptr_equal(topic_sub_find_id(&f->m, 10), s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init_free),
        cmocka_unit_test_setup_teardown(test_topics_sorted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_topic_destroy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_subs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sub_destroy_and_info, setup, teardown),
        cmocka_unit_test(test_sub_bad_endpoint),
        cmocka_unit_test_setup_teardown(test_filter_tag, setup, teardown),
        cmocka_unit_test_setup_teardown(test_msgs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_notif_link, setup, teardown),
        cmocka_unit_test_setup_teardown(test_notif_fly, setup, teardown),
        cmocka_unit_test_setup_teardown(test_notif_unplace_waiting, setup, teardown),
        cmocka_unit_test_setup_teardown(test_notif_destroy_last, setup, teardown),
        cmocka_unit_test_setup_teardown(test_runnable_round_robin, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sub_destroy_unruns, setup, teardown),
        cmocka_unit_test_setup_teardown(test_model_clear, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
