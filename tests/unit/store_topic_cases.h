/*
 * store_topic_cases.h — the store's topic cases (store.h "topics",
 * docs/protocol.md §13), written once and run on both backends:
 * test_store.c (SQLite) and test_store_pg.c (PostgreSQL) include it.  Every
 * call here is made outside a transaction or inside one the case commits,
 * so the answers are the same on a backend that buffers its writes.
 *
 * The includer defines, before including it: struct fixture (with its
 * store in s), reopen(f) (close and open the same database again), and
 * topic_peek(f, sql), the first integer sql answers through a connection
 * of the test's own, sql written with the SQLite table names.  Include
 * after cmocka.h and store_lists.h.
 */
#ifndef SMQD_TEST_STORE_TOPIC_CASES_H
#define SMQD_TEST_STORE_TOPIC_CASES_H

#include <stdio.h>
#include <string.h>

#include "smqd/buf.h"
#include "smqd/errors.h"
#include "smqd/store.h"
#include "store_lists.h"

static struct store_topic_rec make_topic(int64_t id, const char *name)
{
    struct store_topic_rec t;

    memset(&t, 0, sizeof t);
    t.id = id;
    snprintf(t.name, sizeof t.name, "%s", name);
    t.create_s = 1700000000 + id;
    t.modify_s = t.create_s + 1;
    t.max_msg_size = 65536;
    return t;
}

static struct store_sub_rec make_sub(int64_t id, int64_t topic_id, const char *name)
{
    struct store_sub_rec sub;

    memset(&sub, 0, sizeof sub);
    sub.id = id;
    sub.topic_id = topic_id;
    snprintf(sub.name, sizeof sub.name, "%s", name);
    snprintf(sub.endpoint, sizeof sub.endpoint, "http://example.com/%s", name);
    sub.create_s = 1700001000 + id;
    sub.modify_s = sub.create_s;
    return sub;
}

/* Every field set away from its default, and the Endpoint at its longest
 * (SMQ_ENDPOINT_MAX bytes) and the tag too. */
static struct store_sub_rec make_full_sub(int64_t id, int64_t topic_id, const char *name)
{
    struct store_sub_rec sub = make_sub(id, topic_id, name);
    size_t n = (size_t)snprintf(sub.endpoint, sizeof sub.endpoint, "http://example.com/");

    memset(sub.endpoint + n, 'e', SMQ_ENDPOINT_MAX - n);
    sub.endpoint[SMQ_ENDPOINT_MAX] = '\0';
    memset(sub.filter_tag, 't', SMQ_TAG_MAX_BYTES);
    sub.filter_tag[SMQ_TAG_MAX_BYTES] = '\0';
    sub.strategy = SMQ_NOTIFY_EXPONENTIAL_DECAY_RETRY;
    sub.format = SMQ_NOTIFY_SIMPLIFIED;
    sub.dlq_enabled = 1;
    snprintf(sub.dlq_target, sizeof sub.dlq_target, "dead-letters");
    sub.modify_s = sub.create_s + 7;
    return sub;
}

static struct store_tmsg_rec make_tmsg(int64_t topic_id, uint64_t seq, size_t body_len)
{
    struct store_tmsg_rec m;

    memset(&m, 0, sizeof m);
    m.topic_id = topic_id;
    m.seq = seq;
    m.publish_ms = INT64_C(1700000000000) + (int64_t)seq;
    snprintf(m.tag, sizeof m.tag, "tag-%u", (unsigned)seq);
    for (int i = 0; i < MNS_MD5_LEN; i++)
        m.md5[i] = (unsigned char)(seq * 16 + (uint64_t)i);
    m.body_len = body_len;
    return m;
}

static struct store_notif_rec make_notif(int64_t sub_id, uint64_t seq, int strategy)
{
    struct store_notif_rec n = {.sub_id = sub_id, .seq = seq, .attempts = 0,
                                .due_ms = INT64_C(1700000000000) + (int64_t)seq,
                                .strategy = strategy};
    return n;
}

static void put_tmsg(struct smq_store *s, int64_t topic_id, uint64_t seq)
{
    char body[32];
    int n = snprintf(body, sizeof body, "body %u", (unsigned)seq);
    struct store_tmsg_rec m = make_tmsg(topic_id, seq, (size_t)n);

    assert_int_equal(store_tmsg_insert(s, &m, body, (size_t)n), 0);
}

/* ---- topics ----------------------------------------------------------- */

static void topic_case_round_trip(struct fixture *f)
{
    struct store_topic_rec a = make_topic(7, "b-second"), b = make_topic(3, "a-first");
    struct topic_list tl = {.n = 0};

    a.logging = 1;
    a.max_msg_size = 1024;
    assert_int_equal(store_begin(f->s), 0);
    assert_int_equal(store_topic_insert(f->s, &a), 0);
    assert_int_equal(store_topic_insert(f->s, &b), 0);
    assert_int_equal(store_commit(f->s), 0);
    assert_int_equal(store_topic_load(f->s, collect_topic, &tl), 0);
    assert_int_equal(tl.n, 2);
    assert_topic_equal(&tl.t[0], &b);                  /* id order */
    assert_topic_equal(&tl.t[1], &a);

    a.modify_s += 100;
    a.max_msg_size = 65536;
    a.logging = 0;
    snprintf(a.name, sizeof a.name, "renamed");        /* neither is rewritten */
    a.create_s = 1;
    assert_int_equal(store_topic_update(f->s, &a), 0);
    snprintf(a.name, sizeof a.name, "b-second");
    a.create_s = 1700000000 + 7;
    tl.n = 0;
    assert_int_equal(store_topic_load(f->s, collect_topic, &tl), 0);
    assert_int_equal(tl.n, 2);
    assert_topic_equal(&tl.t[1], &a);
}

static void topic_case_refusals(struct fixture *f)
{
    struct store_topic_rec a = make_topic(1, "dup"), b = make_topic(2, "dup");
    struct store_topic_rec ghost = make_topic(9, "ghost");
    struct topic_list tl = {.n = 0};

    assert_int_equal(store_topic_insert(f->s, &a), 0);
    assert_int_equal(store_topic_insert(f->s, &b), SMQ_E_INTERNAL);     /* UNIQUE(name) */
    memset(b.name, 'n', sizeof b.name);                                 /* no terminator */
    assert_int_equal(store_topic_insert(f->s, &b), SMQ_E_INVALID_ARGUMENT);
    ghost.modify_s = 42;
    assert_int_equal(store_topic_update(f->s, &ghost), SMQ_E_TOPIC_NOT_EXIST);
    /* Nothing written: the one row as it was, no other. */
    assert_int_equal(topic_peek(f, "SELECT count(*) FROM topic"), 1);
    assert_int_equal(topic_peek(f, "SELECT count(*) FROM topic WHERE modify_s = 42"), 0);
    assert_int_equal(store_topic_load(f->s, collect_topic, &tl), 0);
    assert_int_equal(tl.n, 1);
    assert_topic_equal(&tl.t[0], &a);
    assert_int_equal(store_topic_delete(f->s, 9), 0);                   /* absent: fine */
}

/* ---- subscriptions ---------------------------------------------------- */

static void sub_case_round_trip(struct fixture *f)
{
    struct store_topic_rec t = make_topic(1, "t");
    struct store_sub_rec x = make_full_sub(5, 1, "s-five"), y = make_sub(2, 1, "s-two");
    struct store_sub_rec upd;
    struct sub_list sl = {.n = 0};

    assert_int_equal(store_topic_insert(f->s, &t), 0);
    assert_int_equal(store_begin(f->s), 0);
    assert_int_equal(store_sub_insert(f->s, &x), 0);
    assert_int_equal(store_sub_insert(f->s, &y), 0);
    assert_int_equal(store_commit(f->s), 0);
    assert_int_equal(store_sub_load(f->s, collect_sub, &sl), 0);
    assert_int_equal(sl.n, 2);
    assert_sub_equal(&sl.s[0], &y);                    /* id order */
    assert_sub_equal(&sl.s[1], &x);
    assert_int_equal(strlen(sl.s[1].endpoint), SMQ_ENDPOINT_MAX);
    assert_int_equal(topic_peek(f, "SELECT length(endpoint) FROM subscription WHERE id = 5"),
                     SMQ_ENDPOINT_MAX);

    /* The update rewrites filter_tag, strategy, the dead-letter queue and
     * modify_s; name, endpoint, format and create_s stay. */
    upd = x;
    snprintf(upd.filter_tag, sizeof upd.filter_tag, "new-tag");
    upd.strategy = SMQ_NOTIFY_BACKOFF_RETRY;
    upd.dlq_enabled = 0;
    upd.dlq_target[0] = '\0';
    upd.modify_s += 50;
    snprintf(upd.name, sizeof upd.name, "other");
    snprintf(upd.endpoint, sizeof upd.endpoint, "http://changed/");
    upd.format = SMQ_NOTIFY_XML;
    upd.create_s = 1;
    assert_int_equal(store_sub_update(f->s, &upd), 0);
    snprintf(upd.name, sizeof upd.name, "%s", x.name);
    snprintf(upd.endpoint, sizeof upd.endpoint, "%s", x.endpoint);
    upd.format = x.format;
    upd.create_s = x.create_s;
    sl.n = 0;
    assert_int_equal(store_sub_load(f->s, collect_sub, &sl), 0);
    assert_int_equal(sl.n, 2);
    assert_sub_equal(&sl.s[1], &upd);
}

static void sub_case_refusals(struct fixture *f)
{
    struct store_topic_rec t1 = make_topic(1, "t1"), t2 = make_topic(2, "t2");
    struct store_sub_rec a = make_sub(1, 1, "same"), dup = make_sub(2, 1, "same");
    struct store_sub_rec other = make_sub(3, 2, "same"), ghost = make_sub(99, 1, "ghost");
    struct sub_list sl = {.n = 0};

    assert_int_equal(store_topic_insert(f->s, &t1), 0);
    assert_int_equal(store_topic_insert(f->s, &t2), 0);
    assert_int_equal(store_sub_insert(f->s, &a), 0);
    assert_int_equal(store_sub_insert(f->s, &dup), SMQ_E_INTERNAL);   /* UNIQUE(topic, name) */
    assert_int_equal(store_sub_insert(f->s, &other), 0);              /* another topic's */
    memset(dup.endpoint, 'x', sizeof dup.endpoint);                   /* no terminator */
    snprintf(dup.name, sizeof dup.name, "long");
    assert_int_equal(store_sub_insert(f->s, &dup), SMQ_E_INVALID_ARGUMENT);
    ghost.modify_s = 42;
    assert_int_equal(store_sub_update(f->s, &ghost), SMQ_E_SUBSCRIPTION_NOT_EXIST);
    assert_int_equal(topic_peek(f, "SELECT count(*) FROM subscription"), 2);
    assert_int_equal(topic_peek(f, "SELECT count(*) FROM subscription WHERE modify_s = 42"),
                     0);
    assert_int_equal(store_sub_load(f->s, collect_sub, &sl), 0);
    assert_int_equal(sl.n, 2);
    assert_sub_equal(&sl.s[0], &a);
    assert_sub_equal(&sl.s[1], &other);
}

/* ---- delete, reopen, transactions ------------------------------------- */

/* Topic 1 with two subscriptions, two messages and their notifications;
 * topic 2 with one of each. */
static void seed_topics(struct smq_store *s)
{
    struct store_topic_rec t1 = make_topic(1, "t1"), t2 = make_topic(2, "t2");
    struct store_sub_rec s11 = make_sub(11, 1, "a"), s12 = make_full_sub(12, 1, "b");
    struct store_sub_rec s21 = make_sub(21, 2, "a");
    struct store_notif_rec n1 = make_notif(11, 100, 0), n2 = make_notif(12, 101, 1);
    struct store_notif_rec n3 = make_notif(21, 200, 1);

    assert_int_equal(store_begin(s), 0);
    assert_int_equal(store_topic_insert(s, &t1), 0);
    assert_int_equal(store_topic_insert(s, &t2), 0);
    assert_int_equal(store_sub_insert(s, &s11), 0);
    assert_int_equal(store_sub_insert(s, &s12), 0);
    assert_int_equal(store_sub_insert(s, &s21), 0);
    put_tmsg(s, 1, 100);
    put_tmsg(s, 1, 101);
    put_tmsg(s, 2, 200);
    assert_int_equal(store_notif_insert(s, &n1), 0);
    assert_int_equal(store_notif_insert(s, &n2), 0);
    assert_int_equal(store_notif_insert(s, &n3), 0);
    assert_int_equal(store_commit(s), 0);
}

static void expect_topic_counts(struct fixture *f, int topics, int subs, int msgs, int notifs)
{
    assert_int_equal(topic_peek(f, "SELECT count(*) FROM topic"), topics);
    assert_int_equal(topic_peek(f, "SELECT count(*) FROM subscription"), subs);
    assert_int_equal(topic_peek(f, "SELECT count(*) FROM tmsg"), msgs);
    assert_int_equal(topic_peek(f, "SELECT count(*) FROM tmsg_body"), msgs);
    assert_int_equal(topic_peek(f, "SELECT count(*) FROM notif"), notifs);
}

static void topic_case_delete_cascades(struct fixture *f)
{
    struct sub_list sl = {.n = 0};
    struct tmsg_list ml = {.n = 0};
    struct notif_list nl = {.n = 0};

    seed_topics(f->s);
    expect_topic_counts(f, 2, 3, 3, 3);
    assert_int_equal(store_topic_delete(f->s, 1), 0);
    assert_int_equal(store_topic_delete(f->s, 1), 0);           /* absent: fine */
    expect_topic_counts(f, 1, 1, 1, 1);
    assert_int_equal(store_sub_load(f->s, collect_sub, &sl), 0);
    assert_int_equal(sl.n, 1);
    assert_int_equal(sl.s[0].id, 21);
    assert_int_equal(store_tmsg_load(f->s, collect_tmsg, &ml), 0);
    assert_int_equal(ml.n, 1);
    assert_true(ml.m[0].seq == 200);
    assert_int_equal(store_notif_load(f->s, collect_notif, &nl), 0);
    assert_int_equal(nl.n, 1);
    assert_int_equal(nl.r[0].sub_id, 21);

    /* A subscription's delete takes its notifications only. */
    assert_int_equal(store_sub_delete(f->s, 21), 0);
    assert_int_equal(store_sub_delete(f->s, 21), 0);
    expect_topic_counts(f, 1, 0, 1, 0);
}

static void topic_case_survives_reopen(struct fixture *f)
{
    struct store_topic_rec t1 = make_topic(1, "t1");
    struct store_sub_rec s12 = make_full_sub(12, 1, "b");
    struct store_tmsg_rec m = make_tmsg(1, 101, 8);
    struct store_notif_rec n = make_notif(12, 101, 1);
    struct topic_list tl = {.n = 0};
    struct sub_list sl = {.n = 0};
    struct tmsg_list ml = {.n = 0};
    struct notif_list nl = {.n = 0};
    struct smq_buf body;

    seed_topics(f->s);
    reopen(f);
    assert_int_equal(store_topic_load(f->s, collect_topic, &tl), 0);
    assert_int_equal(tl.n, 2);
    assert_topic_equal(&tl.t[0], &t1);
    assert_int_equal(store_sub_load(f->s, collect_sub, &sl), 0);
    assert_int_equal(sl.n, 3);
    assert_sub_equal(&sl.s[1], &s12);
    assert_int_equal(store_tmsg_load(f->s, collect_tmsg, &ml), 0);
    assert_int_equal(ml.n, 3);
    assert_tmsg_equal(&ml.m[1], &m);
    assert_int_equal(store_notif_load(f->s, collect_notif, &nl), 0);
    assert_int_equal(nl.n, 3);
    assert_notif_equal(&nl.r[1], &n);
    buf_init(&body);
    assert_int_equal(store_tmsg_body(f->s, 101, &body), 0);
    assert_int_equal(body.len, 8);
    assert_memory_equal(body.data, "body 101", 8);
    buf_free(&body);
}

/* Topic rows obey savepoints and the write-fault seam as queue rows do. */
static void topic_case_savepoint_and_fault(struct fixture *f)
{
    struct store_topic_rec a = make_topic(1, "undone"), b = make_topic(2, "kept");
    struct store_sub_rec sub = make_sub(5, 2, "s");
    struct topic_list tl = {.n = 0};

    assert_int_equal(store_begin(f->s), 0);
    assert_int_equal(store_savepoint(f->s), 0);
    assert_int_equal(store_topic_insert(f->s, &a), 0);
    store_rollback_to(f->s);
    assert_int_equal(store_savepoint(f->s), 0);
    assert_int_equal(store_topic_insert(f->s, &b), 0);
    assert_int_equal(store_sub_insert(f->s, &sub), 0);
    assert_int_equal(store_release(f->s), 0);
    assert_int_equal(store_commit(f->s), 0);
    assert_int_equal(store_topic_load(f->s, collect_topic, &tl), 0);
    assert_int_equal(tl.n, 1);
    assert_topic_equal(&tl.t[0], &b);

    /* The third of a delete's five writes fails: nothing of it stays. */
    store_fault_inject(f->s, 2, 0);
    assert_int_equal(store_begin(f->s), 0);
    assert_int_equal(store_topic_delete(f->s, 2), SMQ_E_INTERNAL);
    store_rollback(f->s);
    store_fault_inject(f->s, STORE_FAULT_OFF, 0);
    assert_int_equal(topic_peek(f, "SELECT count(*) FROM topic"), 1);
    assert_int_equal(topic_peek(f, "SELECT count(*) FROM subscription"), 1);
}

/* ---- published messages and notifications ----------------------------- */

static void tmsg_case_round_trip(struct fixture *f)
{
    static const unsigned char bin[5] = {0, 1, 0, 0xff, 0};
    struct store_tmsg_rec a = make_tmsg(1, 10, sizeof bin), e = make_tmsg(1, 4, 0);
    struct tmsg_list ml = {.n = 0};
    struct smq_buf body;

    e.tag[0] = '\0';                                   /* untagged */
    buf_init(&body);
    assert_int_equal(store_begin(f->s), 0);
    assert_int_equal(store_tmsg_insert(f->s, &a, bin, sizeof bin), 0);
    assert_int_equal(store_tmsg_insert(f->s, &e, NULL, 0), 0);
    /* Readable before the commit, as the engine may ask for it then. */
    assert_int_equal(store_tmsg_body(f->s, 10, &body), 0);
    assert_int_equal(body.len, sizeof bin);
    assert_memory_equal(body.data, bin, sizeof bin);
    assert_int_equal(store_commit(f->s), 0);
    buf_reset(&body);
    assert_int_equal(store_tmsg_body(f->s, 10, &body), 0);
    assert_memory_equal(body.data, bin, sizeof bin);
    buf_reset(&body);
    assert_int_equal(store_tmsg_body(f->s, 4, &body), 0);
    assert_int_equal(body.len, 0);
    assert_int_equal(store_tmsg_body(f->s, 77, &body), SMQ_E_MESSAGE_NOT_EXIST);
    assert_int_equal(store_tmsg_load(f->s, collect_tmsg, &ml), 0);
    assert_int_equal(ml.n, 2);
    assert_tmsg_equal(&ml.m[0], &e);                  /* seq order */
    assert_tmsg_equal(&ml.m[1], &a);

    assert_int_equal(store_tmsg_delete(f->s, 10), 0);
    assert_int_equal(store_tmsg_delete(f->s, 10), 0);
    assert_int_equal(store_tmsg_body(f->s, 10, &body), SMQ_E_MESSAGE_NOT_EXIST);
    assert_int_equal(topic_peek(f, "SELECT count(*) FROM tmsg_body"), 1);
    a.seq = (uint64_t)INT64_MAX + 1;
    assert_int_equal(store_tmsg_insert(f->s, &a, bin, sizeof bin), SMQ_E_INVALID_ARGUMENT);
    buf_free(&body);
}

static void notif_case_round_trip(struct fixture *f)
{
    struct store_notif_rec a = make_notif(2, 9, 1), b = make_notif(1, 30, 0);
    struct store_notif_rec c = make_notif(2, 3, 0), ghost = make_notif(5, 5, 0);
    struct notif_list nl = {.n = 0};

    assert_int_equal(store_notif_insert(f->s, &a), 0);
    assert_int_equal(store_notif_insert(f->s, &b), 0);
    assert_int_equal(store_notif_insert(f->s, &c), 0);
    a.attempts = 3;
    a.due_ms += 60000;
    a.strategy = 0;                                    /* kept as it was made */
    assert_int_equal(store_notif_update(f->s, &a), 0);
    a.strategy = 1;
    assert_int_equal(store_notif_update(f->s, &ghost), SMQ_E_MESSAGE_NOT_EXIST);
    assert_int_equal(topic_peek(f, "SELECT count(*) FROM notif"), 3);
    assert_int_equal(store_notif_load(f->s, collect_notif, &nl), 0);
    assert_int_equal(nl.n, 3);
    assert_notif_equal(&nl.r[0], &c);                  /* (seq, sub_id) order */
    assert_notif_equal(&nl.r[1], &a);
    assert_notif_equal(&nl.r[2], &b);
    assert_int_equal(store_notif_delete(f->s, 2, 3), 0);
    assert_int_equal(store_notif_delete(f->s, 2, 3), 0);
    assert_int_equal(topic_peek(f, "SELECT count(*) FROM notif"), 2);
}

/* ---- the push signing key (store.h; docs/protocol.md §13.11) ---- */

/* None at first; the first pair put stays, a second put changes nothing,
 * and a reopen reads the same pair back. */
static void signing_key_case_put_if_absent(struct fixture *f)
{
    struct smq_buf k, c;
    int found = -1;

    buf_init(&k);
    buf_init(&c);
    assert_int_equal(store_signing_key_get(f->s, &k, &c, &found), 0);
    assert_int_equal(found, 0);
    assert_int_equal(k.len + c.len, 0);
    buf_free(&k);
    buf_free(&c);
    assert_int_equal(store_signing_key_put_if_absent(f->s, "KEY-A\n", "CERT-A\n"), 0);
    assert_signing_key(f->s, "KEY-A\n", "CERT-A\n");
    assert_int_equal(store_signing_key_put_if_absent(f->s, "KEY-B\n", "CERT-B\n"), 0);
    assert_signing_key(f->s, "KEY-A\n", "CERT-A\n");
    assert_int_equal(topic_peek(f, "SELECT count(*) FROM signing_key"), 1);
    reopen(f);
    assert_signing_key(f->s, "KEY-A\n", "CERT-A\n");
}

#endif
