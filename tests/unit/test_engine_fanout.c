/*
 * test_engine_fanout.c — publishing and delivery into queues in the engine
 * (docs/protocol.md §13.5, §13.8, §13.9, §13.12, §13.13): a publish fanned
 * out into queues in the three formats, FilterTag, the topic's size limit;
 * the retry schedule of a failed delivery on the fake clock, surviving a
 * restart; giving up into a dead-letter queue or dropping; deleting with
 * notifications pending; HTTP notifications kept for the push pool; and a
 * large fan-out spread over runs; the per-topic statistics (SMQ_OP_STATS)
 * and operation-log lines of a publish, a retry and a give-up.  Runs on
 * SQLite and, when one is
 * available, on PostgreSQL (engine_fixture.h).
 */
#include "engine_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "smqd/crypto.h"
#include "smqd/handle.h"
#include "smqd/log.h"
#include "smqd/push.h"

static int create_topic(struct fx *f, const char *name, int64_t max_size)
{
    struct smq_op op;

    fx_prep_op(f, &op, SMQ_OP_CREATE_TOPIC, name);
    if (max_size > 0) {
        op.topic.values.max_msg_size = max_size;
        op.topic.present = SMQ_TATTR_MAX_MSG_SIZE;
    }
    return fx_run_one(f, &op);
}

static int subscribe_as(struct fx *f, const char *topic, const char *name, const char *endpoint,
                        enum smq_notify_format format, enum smq_notify_strategy strategy,
                        const char *filter, const char *dlq)
{
    struct smq_op op;

    fx_prep_op(f, &op, SMQ_OP_SUBSCRIBE, topic);
    snprintf(op.sub.name, sizeof op.sub.name, "%s", name);
    snprintf(op.sub.values.endpoint, sizeof op.sub.values.endpoint, "%s", endpoint);
    snprintf(op.sub.values.filter_tag, sizeof op.sub.values.filter_tag, "%s", filter);
    op.sub.values.format = format;
    op.sub.values.strategy = strategy;
    op.sub.present = SMQ_SATTR_ENDPOINT | SMQ_SATTR_FORMAT | SMQ_SATTR_STRATEGY;
    if (dlq != NULL) {
        op.sub.values.dlq.enabled = 1;
        snprintf(op.sub.values.dlq.target, sizeof op.sub.values.dlq.target, "%s", dlq);
        op.sub.present |= SMQ_SATTR_DLQ;
    }
    return fx_run_one(f, &op);
}

static int subscribe(struct fx *f, const char *topic, const char *name, const char *endpoint,
                     enum smq_notify_format format, const char *filter)
{
    return subscribe_as(f, topic, name, endpoint, format, SMQ_NOTIFY_BACKOFF_RETRY, filter, NULL);
}

static int publish_rc(struct fx *f, const char *topic, const char *body, const char *tag,
                      uint64_t *seq, uint32_t *n_notifications)
{
    struct smq_op op;
    int rc;

    fx_prep_op(f, &op, SMQ_OP_PUBLISH, topic);
    op.publish.body = body;
    op.publish.body_len = strlen(body);
    assert_int_equal(crypto_md5(body, strlen(body), op.publish.body_md5), 0);
    snprintf(op.publish.tag, sizeof op.publish.tag, "%s", tag);
    rc = fx_run_one(f, &op);
    if (seq != NULL)
        *seq = op.publish.seq;
    if (n_notifications != NULL)
        *n_notifications = op.publish.n_notifications;
    return rc;
}

static uint64_t publish(struct fx *f, const char *topic, const char *body, const char *tag,
                        uint32_t *n_notifications)
{
    uint64_t seq = 0;

    assert_int_equal(publish_rc(f, topic, body, tag, &seq, n_notifications), 0);
    return seq;
}

/* Queue "sink" and topic "t" with n SIMPLIFIED subscriptions s0000... into it. */
static void sink_topic(struct fx *f, int n)
{
    char name[32];

    fx_create_queue_vis(f, "sink", 30);
    assert_int_equal(create_topic(f, "t", 0), 0);
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof name, "s%04d", i);
        assert_int_equal(subscribe(f, "t", name, "acs:mns:r:1:queues/sink", SMQ_NOTIFY_SIMPLIFIED,
                                   ""), 0);
    }
}

/* A 60,000-byte body: three fill the 128 KiB a transaction takes (fanout.c). */
static const char *big_body(void)
{
    static char big[60001];

    memset(big, 'b', sizeof big - 1);
    return big;
}

static struct smq_sub_info get_sub(struct fx *f, const char *topic, const char *name)
{
    struct smq_op op;

    fx_prep_op(f, &op, SMQ_OP_GET_SUBSCRIPTION, topic);
    snprintf(op.sub.name, sizeof op.sub.name, "%s", name);
    assert_int_equal(fx_run_one(f, &op), 0);
    return op.sub.info;
}

static struct smq_topic_info get_topic(struct fx *f, const char *name)
{
    struct smq_op op;

    fx_prep_op(f, &op, SMQ_OP_GET_TOPIC, name);
    assert_int_equal(fx_run_one(f, &op), 0);
    return op.topic.info;
}

/* Receives one message of queue and asserts its body is text. */
static void expect_body(struct fx *f, const char *queue, const char *text)
{
    struct smq_op op;

    assert_int_equal(fx_receive(f, &op, queue, 1, 0), 0);
    assert_int_equal(op.recv.n_msgs, 1);
    fx_assert_body(&op.recv.msgs[0], text);
    op_release(&op);
}

/* Receives one message of queue and asserts its body holds each of parts. */
static void expect_body_with(struct fx *f, const char *queue, const char *const *parts, size_t n)
{
    struct smq_op op;
    char *body;

    assert_int_equal(fx_receive(f, &op, queue, 1, 0), 0);
    assert_int_equal(op.recv.n_msgs, 1);
    body = calloc(1, op.recv.msgs[0].body_len + 1);
    assert_non_null(body);
    memcpy(body, op.recv.msgs[0].body, op.recv.msgs[0].body_len);
    for (size_t i = 0; i < n; i++)
        if (strstr(body, parts[i]) == NULL)
            fail_msg("body %s lacks %s", body, parts[i]);
    free(body);
    op_release(&op);
}

static void expect_empty(struct fx *f, const char *queue)
{
    struct smq_op op;

    assert_int_equal(fx_receive(f, &op, queue, 1, 0), SMQ_E_MESSAGE_NOT_EXIST);
    op_release(&op);
}

/* ---- fan-out into queues ---- */

static void test_fanout_formats(void **state)
{
    struct fx *f = *state;
    char id[MSGID_TEXT_LEN + 1], id_xml[64], id_json[64];
    uint32_t n = 0;
    uint64_t seq;

    fx_create_queue_vis(f, "qx", 30);
    fx_create_queue_vis(f, "qj", 30);
    fx_create_queue_vis(f, "qs", 30);
    assert_int_equal(create_topic(f, "t", 0), 0);
    assert_int_equal(subscribe(f, "t", "sx", "acs:mns:r:1:queues/qx", SMQ_NOTIFY_XML, ""), 0);
    assert_int_equal(subscribe(f, "t", "sj", "acs:mns:r:1:queues/qj", SMQ_NOTIFY_JSON, ""), 0);
    assert_int_equal(subscribe(f, "t", "ss", "acs:mns:r:1:queues/qs", SMQ_NOTIFY_SIMPLIFIED, ""),
                     0);
    seq = publish(f, "t", "hello <world>", "important", &n);
    assert_int_equal(n, 3);
    msgid_format(engine_keys(f->e), seq, id);
    snprintf(id_xml, sizeof id_xml, "<MessageId>%s</MessageId>", id);
    snprintf(id_json, sizeof id_json, "\"MessageId\":\"%s\"", id);
    {
        const char *parts[] = {"<SubscriptionName>sx</SubscriptionName>", id_xml,
                               "<Message>hello &lt;world&gt;</Message>",
                               "<TopicName>t</TopicName>", "<MessageTag>important</MessageTag>",
                               "<TopicOwner>1000000000000000</TopicOwner>"};
        expect_body_with(f, "qx", parts, sizeof parts / sizeof parts[0]);
    }
    {
        const char *parts[] = {"\"SubscriptionName\":\"sj\"", id_json,
                               "\"Message\":\"hello <world>\"", "\"MessageTag\":\"important\""};
        expect_body_with(f, "qj", parts, sizeof parts / sizeof parts[0]);
    }
    expect_body(f, "qs", "hello <world>");
    /* Delivered: nothing is kept for the topic any more, after a restart too. */
    assert_int_equal(get_topic(f, "t").message_count, 0);
    assert_int_equal(get_topic(f, "t").published, 1);
    assert_int_equal(get_sub(f, "t", "sj").delivered, 1);
    fx_reopen_engine(f, FX_MAX_QUEUES_DEFAULT);
    expect_empty(f, "qs");
    expect_empty(f, "qx");
    if (!f->pg) {
        assert_int_equal(db_peek_int(f->path, "SELECT count(*) FROM notif"), 0);
        assert_int_equal(db_peek_int(f->path, "SELECT count(*) FROM tmsg"), 0);
    }
}

static void test_fanout_filter_tag(void **state)
{
    struct fx *f = *state;
    uint32_t n;

    fx_create_queue_vis(f, "all", 30);
    fx_create_queue_vis(f, "red", 30);
    assert_int_equal(create_topic(f, "t", 0), 0);
    assert_int_equal(subscribe(f, "t", "a", "acs:mns:r:1:queues/all", SMQ_NOTIFY_SIMPLIFIED, ""),
                     0);
    assert_int_equal(subscribe(f, "t", "r", "acs:mns:r:1:queues/red", SMQ_NOTIFY_SIMPLIFIED,
                               "red"), 0);
    publish(f, "t", "one", "red", &n);
    assert_int_equal(n, 2);
    publish(f, "t", "two", "Red", &n);          /* case-sensitive */
    assert_int_equal(n, 1);
    publish(f, "t", "three", "", &n);           /* untagged never matches a filter */
    assert_int_equal(n, 1);
    expect_body(f, "red", "one");
    expect_empty(f, "red");
    expect_body(f, "all", "one");
    expect_body(f, "all", "two");
    expect_body(f, "all", "three");
    /* No subscription at all: accepted with an id, nothing kept. */
    assert_int_equal(create_topic(f, "lonely", 0), 0);
    assert_true(publish(f, "lonely", "x", "", &n) > 0);
    assert_int_equal(n, 0);
    assert_int_equal(get_topic(f, "lonely").message_count, 0);
}

static void test_publish_size_limit_and_ids(void **state)
{
    struct fx *f = *state;
    static char big[1100];
    struct smq_op op;
    uint64_t a, b, q;

    memset(big, 'b', sizeof big - 1);
    assert_int_equal(create_topic(f, "t", 1024), 0);
    fx_prep_op(f, &op, SMQ_OP_PUBLISH, "t");
    op.publish.body = big;
    op.publish.body_len = 1025;
    assert_int_equal(fx_run_one(f, &op), SMQ_E_INVALID_ARGUMENT);
    fx_prep_op(f, &op, SMQ_OP_PUBLISH, "t");
    op.publish.body = big;
    op.publish.body_len = 1024;
    assert_int_equal(fx_run_one(f, &op), 0);
    assert_int_equal(publish_rc(f, "nope", "x", "", NULL, NULL), SMQ_E_TOPIC_NOT_EXIST);
    /* Ids come from the queue messages' sequence: unique across both. */
    fx_create_queue_vis(f, "q", 30);
    a = publish(f, "t", "a", "", NULL);
    q = fx_send_text(f, "q", "q", 0, 8);
    b = publish(f, "t", "b", "", NULL);
    assert_true(a < q && q < b);
    fx_reopen_engine(f, FX_MAX_QUEUES_DEFAULT);
    assert_true(publish(f, "t", "c", "", NULL) > b);
}

/* ---- retries, giving up, restarts ---- */

/* A queue that does not exist yet is a failed attempt, retried by
 * BACKOFF_RETRY 10–20 s later; the schedule survives a restart. */
static void test_retry_until_queue_exists(void **state)
{
    struct fx *f = *state;
    struct smq_sub_info info;

    assert_int_equal(create_topic(f, "t", 0), 0);
    assert_int_equal(subscribe(f, "t", "s", "acs:mns:r:1:queues/later", SMQ_NOTIFY_SIMPLIFIED,
                               ""), 0);
    publish(f, "t", "wait for me", "", NULL);
    info = get_sub(f, "t", "s");
    assert_int_equal(info.pending, 1);
    assert_int_equal(info.retrying, 1);
    assert_int_equal(info.failed, 1);
    assert_int_equal(get_topic(f, "t").message_count, 1);
    fx_reopen_engine(f, FX_MAX_QUEUES_DEFAULT);
    info = get_sub(f, "t", "s");
    assert_int_equal(info.pending, 1);
    assert_int_equal(info.retrying, 1);
    fx_create_queue_vis(f, "later", 30);
    fx_tick(f, 9999);                           /* not yet: at least 10 s */
    expect_empty(f, "later");
    fx_tick(f, 10001);                          /* by 20 s it is due */
    expect_body(f, "later", "wait for me");
    expect_empty(f, "later");
    info = get_sub(f, "t", "s");
    assert_int_equal(info.pending, 0);
    assert_int_equal(info.delivered, 1);
    assert_int_equal(get_topic(f, "t").message_count, 0);
}

/* After the last attempt a notification goes to the subscription's
 * dead-letter queue as the format would have delivered it, or is dropped;
 * the strategy it was made with holds even when the subscription's changes. */
static void test_give_up_to_dlq_or_drop(void **state)
{
    struct fx *f = *state;
    struct smq_sub_info info;
    struct smq_op op;

    fx_create_queue_vis(f, "dead", 30);
    assert_int_equal(create_topic(f, "t", 0), 0);
    assert_int_equal(subscribe_as(f, "t", "d", "acs:mns:r:1:queues/missing", SMQ_NOTIFY_XML,
                                  SMQ_NOTIFY_BACKOFF_RETRY, "", "dead"), 0);
    assert_int_equal(subscribe(f, "t", "x", "acs:mns:r:1:queues/missing", SMQ_NOTIFY_XML, ""),
                     0);
    publish(f, "t", "doomed", "", NULL);
    /* Changing the strategy now does not change the pending notification's. */
    fx_prep_op(f, &op, SMQ_OP_SET_SUBSCRIPTION, "t");
    snprintf(op.sub.name, sizeof op.sub.name, "d");
    op.sub.values.strategy = SMQ_NOTIFY_EXPONENTIAL_DECAY_RETRY;
    op.sub.present = SMQ_SATTR_STRATEGY;
    assert_int_equal(fx_run_one(f, &op), 0);
    fx_reopen_engine(f, FX_MAX_QUEUES_DEFAULT);
    /* BACKOFF_RETRY: 4 attempts, 10–20 s apart; the first failed at the publish. */
    fx_tick(f, 20001);
    fx_tick(f, 20001);
    expect_empty(f, "dead");
    assert_int_equal(get_sub(f, "t", "d").retrying, 1);
    assert_int_equal(get_sub(f, "t", "d").pending, 1);
    fx_tick(f, 20001);
    assert_int_equal(get_sub(f, "t", "d").failed, 3);     /* counted since the restart */
    {
        const char *parts[] = {"<Message>doomed</Message>", "<SubscriptionName>d</SubscriptionName>"};
        expect_body_with(f, "dead", parts, 2);
    }
    info = get_sub(f, "t", "d");
    assert_int_equal(info.pending, 0);
    assert_int_equal(info.dead, 1);
    info = get_sub(f, "t", "x");
    assert_int_equal(info.pending, 0);
    assert_int_equal(info.dead, 1);
    assert_int_equal(get_topic(f, "t").message_count, 0);
    fx_reopen_engine(f, FX_MAX_QUEUES_DEFAULT);
    assert_int_equal(get_sub(f, "t", "x").pending, 0);
    assert_int_equal(get_topic(f, "t").message_count, 0);
}

/* Deleting a subscription or a topic takes its pending notifications with
 * it, and a message kept only for them. */
static void test_delete_with_pending(void **state)
{
    struct fx *f = *state;
    struct smq_op op;

    assert_int_equal(create_topic(f, "t", 0), 0);
    assert_int_equal(subscribe(f, "t", "a", "acs:mns:r:1:queues/none", SMQ_NOTIFY_XML, ""), 0);
    assert_int_equal(subscribe(f, "t", "b", "acs:mns:r:1:queues/none", SMQ_NOTIFY_XML, "only"), 0);
    publish(f, "t", "m1", "", NULL);          /* a only */
    publish(f, "t", "m2", "only", NULL);      /* a and b */
    assert_int_equal(get_topic(f, "t").message_count, 2);
    fx_prep_op(f, &op, SMQ_OP_UNSUBSCRIBE, "t");
    snprintf(op.sub.name, sizeof op.sub.name, "a");
    assert_int_equal(fx_run_one(f, &op), 0);
    assert_int_equal(get_topic(f, "t").message_count, 1);
    fx_reopen_engine(f, FX_MAX_QUEUES_DEFAULT);
    assert_int_equal(get_topic(f, "t").message_count, 1);
    assert_int_equal(get_sub(f, "t", "b").pending, 1);
    if (!f->pg) {
        assert_int_equal(db_peek_int(f->path, "SELECT count(*) FROM tmsg"), 1);
    }
    fx_prep_op(f, &op, SMQ_OP_DELETE_TOPIC, "t");
    assert_int_equal(fx_run_one(f, &op), 0);
    fx_reopen_engine(f, FX_MAX_QUEUES_DEFAULT);
    assert_int_equal(create_topic(f, "t", 0), 0);
    assert_int_equal(get_topic(f, "t").message_count, 0);
    if (!f->pg) {
        assert_int_equal(db_peek_int(f->path, "SELECT count(*) FROM tmsg"), 0);
        assert_int_equal(db_peek_int(f->path, "SELECT count(*) FROM notif"), 0);
    }
}

/* HTTP notifications are stored and wait for the push pool (issue 39):
 * pending, across a restart, and a queue subscription beside them is not
 * held up. */
static void test_http_notifications_wait(void **state)
{
    struct fx *f = *state;

    fx_create_queue_vis(f, "q", 30);
    assert_int_equal(create_topic(f, "t", 0), 0);
    assert_int_equal(subscribe(f, "t", "h", "http://127.0.0.1:9/hook", SMQ_NOTIFY_JSON, ""), 0);
    assert_int_equal(subscribe(f, "t", "q", "acs:mns:r:1:queues/q", SMQ_NOTIFY_SIMPLIFIED, ""),
                     0);
    publish(f, "t", "m1", "", NULL);
    publish(f, "t", "m2", "", NULL);
    expect_body(f, "q", "m1");
    expect_body(f, "q", "m2");
    assert_int_equal(get_sub(f, "t", "h").pending, 2);
    assert_int_equal(get_sub(f, "t", "h").failed, 0);
    assert_int_equal(get_topic(f, "t").message_count, 2);
    fx_reopen_engine(f, FX_MAX_QUEUES_DEFAULT);
    assert_int_equal(get_sub(f, "t", "h").pending, 2);
    assert_int_equal(get_topic(f, "t").message_count, 2);
}

/* A publish written and a commit that fails: nothing is delivered twice or
 * lost; the reload finds what was committed before. */
static void test_failed_commit_publishes_nothing(void **state)
{
    struct fx *f = *state;

    fx_create_queue_vis(f, "q", 30);
    assert_int_equal(create_topic(f, "t", 0), 0);
    assert_int_equal(subscribe(f, "t", "s", "acs:mns:r:1:queues/q", SMQ_NOTIFY_SIMPLIFIED, ""), 0);
    store_fault_inject(f->store, STORE_FAULT_OFF, 1);
    assert_int_equal(publish_rc(f, "t", "lost", "", NULL, NULL), SMQ_E_INTERNAL);
    expect_empty(f, "q");
    assert_int_equal(get_topic(f, "t").message_count, 0);
    publish(f, "t", "kept", "", NULL);
    expect_body(f, "q", "kept");
    expect_empty(f, "q");
}

/* ---- scale: a large fan-out is spread over runs ---- */

static void test_large_fanout_spread_over_runs(void **state)
{
    struct fx *f = *state;
    struct smq_queue_info qi;
    uint32_t n;

    f->max_subs_per_topic = 600;
    fx_reopen_engine(f, FX_MAX_QUEUES_DEFAULT);
    sink_topic(f, 600);
    publish(f, "t", "wide", "", &n);
    assert_int_equal(n, 600);
    /* fanout.c's shares (the fixture commits every run; each
     * GetQueueAttributes runs before its own run's deliveries): 4 in a
     * transaction an answer waits for, the publish's ... */
    assert_int_equal(fx_get_info(f, "sink", &qi), 0);
    assert_int_equal(qi.n_active, 4);
    /* ... and that GetQueueAttributes' ... */
    assert_int_equal(engine_next_timeout_ms(f->e), 0);
    fx_tick(f, 0);
    /* ... then 4 in a run nothing waits for (an engine run's share) */
    assert_int_equal(fx_get_info(f, "sink", &qi), 0);
    assert_int_equal(qi.n_active, 4 + 4 + 4);
    for (int i = 0; i < 160; i++)
        fx_tick(f, 0);
    assert_int_equal(fx_get_info(f, "sink", &qi), 0);
    assert_int_equal(qi.n_active, 600);
    assert_int_equal(get_topic(f, "t").message_count, 0);
}

/* Runs nothing waits for keep one transaction open while the fan-out
 * fills it (fanout_fills_txn), so a fan-out commits in full shares, not
 * 4 deliveries per commit; the next request's run commits it. */
static void test_fanout_fills_its_transaction(void **state)
{
    struct fx *f = *state;
    struct smq_queue_info qi;

    sink_topic(f, 40);
    publish(f, "t", "fill", "", NULL);
    for (int i = 0; i < 3; i++)
        fx_tick(f, 0);
    if (!f->pg)                                     /* the publish's run only */
        assert_int_equal(db_peek_int(f->path, "SELECT count(*) FROM msg"), 4);
    assert_int_equal(fx_get_info(f, "sink", &qi), 0);
    assert_int_equal(qi.n_active, 4 + 3 * 4);
    if (!f->pg)                                     /* committed by that request's run */
        assert_int_equal(db_peek_int(f->path, "SELECT count(*) FROM msg"), 16);
    for (int i = 0; i < 10; i++)
        fx_tick(f, 0);
    assert_int_equal(fx_get_info(f, "sink", &qi), 0);
    assert_int_equal(qi.n_active, 40);
    if (!f->pg)                                     /* the last share, once none was left */
        assert_int_equal(db_peek_int(f->path, "SELECT count(*) FROM msg"), 40);
}

/* A transaction takes at most 128 KiB of notification bodies (fanout.c):
 * 60,000-byte notifications go 3 to a transaction, not 4. */
static void test_large_bodies_bounded_per_transaction(void **state)
{
    struct fx *f = *state;
    struct smq_queue_info qi;
    uint32_t n;

    sink_topic(f, 60);
    publish(f, "t", big_body(), "", &n);
    assert_int_equal(n, 60);
    assert_int_equal(fx_get_info(f, "sink", &qi), 0);
    assert_int_equal(qi.n_active, 3);                  /* the publish's run */
    fx_tick(f, 0);
    assert_int_equal(fx_get_info(f, "sink", &qi), 0);
    assert_int_equal(qi.n_active, 3 + 3 + 3);          /* GetQueueAttributes' run, the tick */
    for (int i = 0; i < 20; i++)
        fx_tick(f, 0);
    assert_int_equal(fx_get_info(f, "sink", &qi), 0);
    assert_int_equal(qi.n_active, 60);
}

/* ---- operations: statistics and the operation log ---- */

/* The per-topic row of an SMQ_OP_STATS for "" (every topic, by name). */
static struct smq_topic_stats topic_stats(struct fx *f, const char *topic, uint64_t *dropped)
{
    struct smq_op op;
    struct smq_topic_stats st = {0};
    bool found = false;

    fx_prep_op(f, &op, SMQ_OP_STATS, "");
    op.stats.with_topics = true;
    assert_int_equal(fx_run_one(f, &op), 0);
    for (size_t i = 0; i < op.stats.n_topics; i++) {
        if (i > 0)
            assert_true(strcmp(op.stats.topics[i - 1].name, op.stats.topics[i].name) < 0);
        if (strcmp(op.stats.topics[i].name, topic) == 0) {
            st = op.stats.topics[i];
            found = true;
        }
    }
    assert_true(found);
    assert_int_equal(op.stats.n_topics, op.stats.totals.topics);
    *dropped = op.stats.totals.notifications_dropped;
    op_release(&op);
    return st;
}

#define ASSERT_TOPIC_STATS(st, pub, deliv, fail, dead_, pend, retr, http, msgs) \
    do { \
        assert_int_equal((st).published, pub); \
        assert_int_equal((st).delivered, deliv); \
        assert_int_equal((st).failed, fail); \
        assert_int_equal((st).dead, dead_); \
        assert_int_equal((st).pending, pend); \
        assert_int_equal((st).retrying, retr); \
        assert_int_equal((st).http_pending, http); \
        assert_int_equal((st).messages, msgs); \
    } while (0)

/* How many lines of the log file at path hold every one of parts. */
static int count_lines(const char *path, const char *const *parts, size_t n_parts)
{
    char line[2048];
    int n = 0;
    FILE *fp = fopen(path, "r");

    assert_non_null(fp);
    while (fgets(line, sizeof line, fp) != NULL) {
        size_t i = 0;
        while (i < n_parts && strstr(line, parts[i]) != NULL)
            i++;
        n += i == n_parts;
    }
    fclose(fp);
    return n;
}

/* A topic with LoggingEnabled and four subscriptions: one delivered at once,
 * one whose queue is missing given up into its DLQ, one dropped, one HTTP
 * left pending.  The stats after the publish, a retry and the give-ups, and
 * one OPLOG line per publish and per outcome. */
static void test_topic_stats_and_eventlog(void **state)
{
    struct fx *f = *state;
    struct smq_topic_stats st;
    struct smq_op op;
    uint64_t dropped = 99;
    char log_path[64];

    snprintf(log_path, sizeof log_path, "/tmp/smqd-test-fanout-eventlog-%d.log", (int)getpid());
    unlink(log_path);
    assert_int_equal(log_open(log_path), 0);
    fx_create_queue_vis(f, "q", 30);
    fx_create_queue_vis(f, "dead", 30);
    assert_int_equal(create_topic(f, "quiet", 0), 0);
    fx_prep_op(f, &op, SMQ_OP_CREATE_TOPIC, "t");
    op.topic.values.logging = 1;
    op.topic.present = SMQ_TATTR_LOGGING;
    assert_int_equal(fx_run_one(f, &op), 0);
    assert_int_equal(subscribe(f, "t", "ok", "acs:mns:r:1:queues/q", SMQ_NOTIFY_SIMPLIFIED, ""),
                     0);
    assert_int_equal(subscribe_as(f, "t", "d", "acs:mns:r:1:queues/missing", SMQ_NOTIFY_XML,
                                  SMQ_NOTIFY_BACKOFF_RETRY, "", "dead"), 0);
    assert_int_equal(subscribe(f, "t", "x", "acs:mns:r:1:queues/missing", SMQ_NOTIFY_XML, ""),
                     0);
    assert_int_equal(subscribe(f, "t", "h", "http://127.0.0.1:9/hook", SMQ_NOTIFY_JSON, ""), 0);
    st = topic_stats(f, "quiet", &dropped);
    ASSERT_TOPIC_STATS(st, 0, 0, 0, 0, 0, 0, 0, 0);
    assert_int_equal(dropped, 0);
    /* Not asked for (the admin API's queue listing): no pass over the subscriptions. */
    fx_prep_op(f, &op, SMQ_OP_STATS, "");
    assert_int_equal(fx_run_one(f, &op), 0);
    assert_int_equal(op.stats.n_topics, 0);
    assert_null(op.stats.topics);
    assert_int_equal(op.stats.totals.topics, 2);
    op_release(&op);

    /* The publish: ok delivered; d and x failed once; h waits. */
    publish(f, "t", "news", "", NULL);
    st = topic_stats(f, "t", &dropped);
    ASSERT_TOPIC_STATS(st, 1, 1, 2, 0, 3, 2, 1, 1);
    /* A retry (BACKOFF_RETRY: 10–20 s later) fails again. */
    fx_tick(f, 20001);
    st = topic_stats(f, "t", &dropped);
    ASSERT_TOPIC_STATS(st, 1, 1, 4, 0, 3, 2, 1, 1);
    assert_int_equal(dropped, 0);
    /* The fourth attempt is the last: d into its DLQ, x dropped. */
    fx_tick(f, 20001);
    fx_tick(f, 20001);
    st = topic_stats(f, "t", &dropped);
    ASSERT_TOPIC_STATS(st, 1, 1, 8, 2, 1, 0, 1, 1);
    assert_int_equal(dropped, 1);
    st = topic_stats(f, "quiet", &dropped);
    ASSERT_TOPIC_STATS(st, 0, 0, 0, 0, 0, 0, 0, 0);
    publish(f, "quiet", "hush", "", NULL);      /* LoggingEnabled off: no line */
    log_close();
    {
        const char *pub[] = {"OPLOG topic=t event=publish ", " notifications=4 "};
        const char *deliver[] = {"OPLOG topic=t subscription=ok event=deliver ", " attempts=1 to=q "};
        const char *retry[] = {"OPLOG topic=t subscription=", " event=retry "};
        const char *dl[] = {"OPLOG topic=t subscription=d event=dead_letter ",
                            " attempts=4 to=dead request_id=-"};
        const char *drop[] = {"OPLOG topic=t subscription=x event=drop ", " attempts=4 "};
        const char *quiet[] = {"topic=quiet"};
        assert_int_equal(count_lines(log_path, pub, 2), 1);
        assert_int_equal(count_lines(log_path, deliver, 2), 1);
        assert_int_equal(count_lines(log_path, retry, 2), 6);    /* attempts 1..3 of d and x */
        assert_int_equal(count_lines(log_path, dl, 2), 1);
        assert_int_equal(count_lines(log_path, drop, 2), 1);
        assert_int_equal(count_lines(log_path, quiet, 1), 0);
    }
    unlink(log_path);
}

/* A restart in the middle of a wide fan-out delivers each notification
 * exactly once: what was delivered before is not made again, what was not
 * is made after; a send to another queue in between finishes in its run. */
static void test_reopen_mid_fanout_delivers_each_once(void **state)
{
    struct fx *f = *state;
    struct smq_queue_info qi;
    uint64_t before;

    f->max_subs_per_topic = 1000;
    fx_reopen_engine(f, FX_MAX_QUEUES_DEFAULT);
    fx_create_queue_vis(f, "other", 30);
    sink_topic(f, 1000);
    publish(f, "t", "wide", "", NULL);
    assert_int_equal(fx_get_info(f, "sink", &qi), 0);
    before = qi.n_active;
    assert_true(before > 0 && before < 1000);
    fx_send_text(f, "other", "unrelated", 0, 8);     /* finishes in its own run */
    assert_int_equal(fx_get_info(f, "sink", &qi), 0);
    assert_true(qi.n_active < 1000);                 /* that run delivered a bounded share */
    fx_reopen_engine(f, FX_MAX_QUEUES_DEFAULT);
    for (int i = 0; i < 270; i++)            /* 4 to a run */
        fx_tick(f, 0);
    assert_int_equal(fx_get_info(f, "sink", &qi), 0);
    assert_int_equal(qi.n_active, 1000);
    assert_int_equal(get_topic(f, "t").message_count, 0);
    if (!f->pg) {
        assert_int_equal(db_peek_int(f->path, "SELECT count(*) FROM notif"), 0);
        assert_int_equal(db_peek_int(f->path, "SELECT count(*) FROM msg"), 1001);
    }
}

/* ---- HTTP pushes through a fake pool (engine_set_push) ---- */

#define FAKE_JOBS 256

/* What the fake pool took: each job's identity and body (the job itself is
 * freed at once, as the pool would once done). */
struct fake_pool {
    int refuse;                  /* answer SMQ_E_SERVICE_UNAVAILABLE */
    size_t n;
    struct {
        int64_t sub_id;
        uint64_t seq;
        uint32_t attempt;
        char sub[SMQ_TOPIC_NAME_MAX + 1];
        char body[512];
    } jobs[FAKE_JOBS];
};

static int fake_submit(void *arg, struct push_job *job)
{
    struct fake_pool *p = arg;

    if (p->refuse || p->n == FAKE_JOBS)
        return SMQ_E_SERVICE_UNAVAILABLE;
    p->jobs[p->n].sub_id = job->sub_id;
    p->jobs[p->n].seq = job->seq;
    p->jobs[p->n].attempt = job->attempt;
    snprintf(p->jobs[p->n].sub, sizeof p->jobs[p->n].sub, "%s", job->sub);
    snprintf(p->jobs[p->n].body, sizeof p->jobs[p->n].body, "%.*s", (int)job->body.len,
             job->body.data);
    p->n++;
    push_job_free(job);
    return 0;
}

/* An empty fake pool owned by f (freed in teardown; the same one again
 * after a reopen), hooked into f's engine. */
static struct fake_pool *fake_pool(struct fx *f)
{
    struct fake_pool *p = f->scratch[0] != NULL ? f->scratch[0] : calloc(1, sizeof *p);

    assert_non_null(p);
    memset(p, 0, sizeof *p);
    f->scratch[0] = p;
    engine_set_push(f->e, fake_submit, p);
    return p;
}

/* Feeds the outcome of the pool's job i back to the engine, as the pool's
 * done callback would. */
static void feed(struct fx *f, const struct fake_pool *p, size_t i, enum smq_push_outcome out)
{
    struct smq_op op;

    assert_true(i < p->n);
    fx_prep_op(f, &op, SMQ_OP_PUSH_RESULT, "");
    op.push.sub_id = p->jobs[i].sub_id;
    op.push.seq = p->jobs[i].seq;
    op.push.attempt = p->jobs[i].attempt;
    op.push.outcome = out;
    op.push.http_status = out == SMQ_PUSH_OK ? 204 : out == SMQ_PUSH_REJECTED ? 403 : 500;
    op.push.latency_us = 3000;
    assert_int_equal(fx_run_one(f, &op), 0);
}

static size_t jobs_of(const struct fake_pool *p, const char *sub)
{
    size_t n = 0;

    for (size_t i = 0; i < p->n; i++)
        n += strcmp(p->jobs[i].sub, sub) == 0;
    return n;
}

/* Nothing is pushed before the publish's commit; then once (not again
 * while in flight) with the body in the subscription's format; OK retires
 * the row, counted delivered. */
static void test_push_after_commit_ok_retires(void **state)
{
    struct fx *f = *state;
    struct fake_pool *p = fake_pool(f);
    char id[MSGID_TEXT_LEN + 1], want[64];
    uint64_t seq;

    assert_int_equal(create_topic(f, "t", 0), 0);
    assert_int_equal(subscribe(f, "t", "h", "http://127.0.0.1:9/hook", SMQ_NOTIFY_JSON, ""), 0);
    seq = publish(f, "t", "hello push", "", NULL);
    assert_int_equal(p->n, 0);                  /* its row was not committed in that run */
    fx_tick(f, 0);
    assert_int_equal(p->n, 1);
    msgid_format(engine_keys(f->e), seq, id);
    snprintf(want, sizeof want, "\"MessageId\":\"%s\"", id);
    assert_non_null(strstr(p->jobs[0].body, want));
    assert_non_null(strstr(p->jobs[0].body, "\"Message\":\"hello push\""));
    assert_int_equal(p->jobs[0].attempt, 1);
    fx_tick(f, 60000);
    assert_int_equal(p->n, 1);                  /* in flight: never handed over twice */
    feed(f, p, 0, SMQ_PUSH_OK);
    assert_int_equal(get_sub(f, "t", "h").pending, 0);
    assert_int_equal(get_sub(f, "t", "h").delivered, 1);
    /* Its 3 ms latency, in the subscription's first bucket (<= 5 ms). */
    assert_int_equal(get_sub(f, "t", "h").push_latency_n, 1);
    assert_int_equal(get_sub(f, "t", "h").push_latency_us_sum, 3000);
    assert_int_equal(get_sub(f, "t", "h").push_latency_buckets[0], 1);
    assert_int_equal(get_topic(f, "t").message_count, 0);
    if (!f->pg)
        assert_int_equal(db_peek_int(f->path, "SELECT count(*) FROM notif"), 0);
    fx_reopen_engine(f, FX_MAX_QUEUES_DEFAULT);
    p = fake_pool(f);
    fx_tick(f, 0);
    assert_int_equal(p->n, 0);
}

/* An HTTP push writes nothing in the transaction, so it is not held back
 * when queue deliveries have used up the transaction's share (here its
 * 128 KiB: three 60,000-byte notifications): "z" is pushed in such a run
 * although the queue subscriptions before it in the round-robin wait for
 * the next transaction, keeping their turns. */
static void test_push_not_held_back_by_queue_share(void **state)
{
    struct fx *f = *state;
    struct fake_pool *p = fake_pool(f);
    struct smq_queue_info qi;

    sink_topic(f, 10);                          /* s0000-s0009, before "z" in the round-robin */
    assert_int_equal(subscribe(f, "t", "z", "http://127.0.0.1:9/hook", SMQ_NOTIFY_SIMPLIFIED, ""),
                     0);
    publish(f, "t", big_body(), "", NULL);
    assert_int_equal(p->n, 0);                  /* its row was not committed in that run */
    assert_int_equal(fx_get_info(f, "sink", &qi), 0);
    assert_int_equal(qi.n_active, 3);           /* s0000-2, the publish's share */
    assert_int_equal(p->n, 1);                  /* that run: s0003-5, then z past s0006-9 */
    assert_string_equal(p->jobs[0].sub, "z");
    assert_int_equal(fx_get_info(f, "sink", &qi), 0);
    assert_int_equal(qi.n_active, 6);           /* s0006-8: they kept their turns */
    for (int i = 0; i < 4; i++)
        fx_tick(f, 0);
    assert_int_equal(fx_get_info(f, "sink", &qi), 0);
    assert_int_equal(qi.n_active, 10);
    assert_int_equal(p->n, 1);                  /* in flight: never handed over twice */
}

/* EXPONENTIAL_DECAY_RETRY: 1 s, then 2 s from when each failure was known;
 * the schedule is in the row and survives a restart; BACKOFF_RETRY waits
 * 10–20 s.  A 403 is counted apart. */
static void test_push_retry_schedules(void **state)
{
    struct fx *f = *state;
    struct fake_pool *p = fake_pool(f);

    assert_int_equal(create_topic(f, "t", 0), 0);
    assert_int_equal(subscribe_as(f, "t", "e", "http://127.0.0.1:9/e", SMQ_NOTIFY_SIMPLIFIED,
                                  SMQ_NOTIFY_EXPONENTIAL_DECAY_RETRY, "", NULL), 0);
    assert_int_equal(subscribe_as(f, "t", "b", "http://127.0.0.1:9/b", SMQ_NOTIFY_SIMPLIFIED,
                                  SMQ_NOTIFY_BACKOFF_RETRY, "", NULL), 0);
    publish(f, "t", "again", "", NULL);
    fx_tick(f, 0);
    assert_int_equal(p->n, 2);
    fx_tick(f, 500);                            /* the failures are known half a second on */
    feed(f, p, 0, SMQ_PUSH_HTTP_ERROR);
    feed(f, p, 1, SMQ_PUSH_REJECTED);
    fx_tick(f, 999);
    assert_int_equal(p->n, 2);
    fx_tick(f, 1);
    assert_int_equal(p->n, 3);
    assert_string_equal(p->jobs[2].sub, "e");
    assert_int_equal(p->jobs[2].attempt, 2);
    assert_string_equal(p->jobs[2].body, "again");
    feed(f, p, 2, SMQ_PUSH_TIMEOUT);
    assert_int_equal(get_sub(f, "t", "e").failed, 2);
    assert_int_equal(get_sub(f, "t", "e").retrying, 1);
    assert_int_equal(get_sub(f, "t", "b").rejected, 1);
    if (!f->pg)
        assert_int_equal(db_peek_int(f->path, "SELECT max(attempts) FROM notif"), 2);
    fx_reopen_engine(f, FX_MAX_QUEUES_DEFAULT);
    p = fake_pool(f);
    fx_tick(f, 1999);                           /* 2 s after the second failure */
    assert_int_equal(p->n, 0);
    fx_tick(f, 1);
    assert_int_equal(p->n, 1);
    assert_string_equal(p->jobs[0].sub, "e");
    assert_int_equal(p->jobs[0].attempt, 3);
    fx_tick(f, 7000);                           /* b: 10 s after its failure at 0.5 s */
    assert_int_equal(p->n, 1);
    fx_tick(f, 10001);                          /* and by 20 s */
    assert_int_equal(p->n, 2);
    assert_string_equal(p->jobs[1].sub, "b");
    assert_int_equal(p->jobs[1].attempt, 2);
}

/* Attempts spent: given up into the dead-letter queue, the body as the
 * format would have delivered it, or dropped; both counted. */
static void test_push_give_up(void **state)
{
    struct fx *f = *state;
    struct fake_pool *p = fake_pool(f);
    uint64_t dropped = fx_stats(f).notifications_dropped;

    fx_create_queue_vis(f, "dead", 30);
    assert_int_equal(create_topic(f, "t", 0), 0);
    assert_int_equal(subscribe_as(f, "t", "d", "http://127.0.0.1:9/d", SMQ_NOTIFY_XML,
                                  SMQ_NOTIFY_BACKOFF_RETRY, "", "dead"), 0);
    assert_int_equal(subscribe_as(f, "t", "x", "http://127.0.0.1:9/x", SMQ_NOTIFY_XML,
                                  SMQ_NOTIFY_BACKOFF_RETRY, "", NULL), 0);
    publish(f, "t", "doomed", "", NULL);
    fx_tick(f, 0);
    for (int attempt = 1; attempt <= 4; attempt++) {
        size_t from = p->n - 2;
        assert_int_equal(p->n, (size_t)attempt * 2);
        for (size_t i = from; i < p->n; i++) {
            assert_int_equal(p->jobs[i].attempt, attempt);
            feed(f, p, i, SMQ_PUSH_CONNECT_ERROR);
        }
        if (attempt < 4)
            expect_empty(f, "dead");
        fx_tick(f, 20001);
    }
    assert_int_equal(p->n, 8);
    {
        const char *parts[] = {"<Message>doomed</Message>", "<SubscriptionName>d</SubscriptionName>"};
        expect_body_with(f, "dead", parts, 2);
    }
    assert_int_equal(get_sub(f, "t", "d").dead, 1);
    assert_int_equal(get_sub(f, "t", "x").dead, 1);
    assert_int_equal(get_sub(f, "t", "x").pending, 0);
    assert_int_equal(fx_stats(f).notifications_dropped, dropped + 1);
    assert_int_equal(get_topic(f, "t").message_count, 0);
}

/* CANCELLED (the pool stopping) is no attempt: pending as it was, pushed
 * again as attempt 1.  SERVICE_UNAVAILABLE from the pool keeps the job
 * with the engine, offered again a second later. */
static void test_push_cancelled_and_unavailable(void **state)
{
    struct fx *f = *state;
    struct fake_pool *p = fake_pool(f);

    assert_int_equal(create_topic(f, "t", 0), 0);
    assert_int_equal(subscribe(f, "t", "h", "http://127.0.0.1:9/h", SMQ_NOTIFY_SIMPLIFIED, ""), 0);
    p->refuse = 1;
    publish(f, "t", "keep me", "", NULL);
    fx_tick(f, 0);
    fx_tick(f, 10);
    assert_int_equal(p->n, 0);
    assert_int_equal(get_sub(f, "t", "h").pending, 1);
    p->refuse = 0;
    fx_tick(f, 10);
    assert_int_equal(p->n, 0);                  /* not before the second is over */
    fx_tick(f, 1000);
    assert_int_equal(p->n, 1);
    feed(f, p, 0, SMQ_PUSH_CANCELLED);
    assert_int_equal(get_sub(f, "t", "h").failed, 0);
    assert_int_equal(get_sub(f, "t", "h").retrying, 0);
    fx_tick(f, 0);
    assert_int_equal(p->n, 2);
    assert_int_equal(p->jobs[1].attempt, 1);
    feed(f, p, 1, SMQ_PUSH_OK);
    assert_int_equal(get_sub(f, "t", "h").pending, 0);
}

/* A failing endpoint keeps one push in flight at most until it answers
 * again; another subscription's pushes go on meanwhile. */
static void test_push_dead_endpoint_contained(void **state)
{
    struct fx *f = *state;
    struct fake_pool *p = fake_pool(f);

    assert_int_equal(create_topic(f, "t", 0), 0);
    assert_int_equal(subscribe_as(f, "t", "a", "http://127.0.0.1:9/a", SMQ_NOTIFY_SIMPLIFIED,
                                  SMQ_NOTIFY_EXPONENTIAL_DECAY_RETRY, "", NULL), 0);
    assert_int_equal(subscribe(f, "t", "b", "http://127.0.0.1:9/b", SMQ_NOTIFY_SIMPLIFIED, ""), 0);
    publish(f, "t", "1", "", NULL);
    publish(f, "t", "2", "", NULL);
    publish(f, "t", "3", "", NULL);
    fx_tick(f, 0);
    assert_int_equal(jobs_of(p, "a"), 3);
    assert_int_equal(jobs_of(p, "b"), 3);
    for (size_t i = 0; i < 6; i++)
        feed(f, p, i, strcmp(p->jobs[i].sub, "a") == 0 ? SMQ_PUSH_HTTP_ERROR : SMQ_PUSH_OK);
    publish(f, "t", "4", "", NULL);
    publish(f, "t", "5", "", NULL);
    fx_tick(f, 0);
    assert_int_equal(jobs_of(p, "b"), 5);
    assert_int_equal(jobs_of(p, "a"), 4);        /* one probe, not two */
    fx_tick(f, 5000);                            /* a's retries are due: still one at a time */
    assert_int_equal(jobs_of(p, "a"), 4);
    for (size_t i = p->n; i-- > 0;) {
        if (strcmp(p->jobs[i].sub, "a") == 0) {
            feed(f, p, i, SMQ_PUSH_OK);          /* a answers again */
            break;
        }
    }
    fx_tick(f, 0);
    assert_true(jobs_of(p, "a") >= 6);
}

/* Attempts that fell due while smqd was down are spread out after the
 * restart (§13.12): a hundred now, the rest a second later, each pushed
 * once (at least once: pending again after the restart). */
static void test_push_overdue_spread_after_restart(void **state)
{
    struct fx *f = *state;
    struct fake_pool *p;
    char body[16];
    size_t i;

    assert_int_equal(create_topic(f, "t", 0), 0);
    assert_int_equal(subscribe(f, "t", "a", "http://127.0.0.1:9/a", SMQ_NOTIFY_SIMPLIFIED, ""), 0);
    assert_int_equal(subscribe(f, "t", "b", "http://127.0.0.1:9/b", SMQ_NOTIFY_SIMPLIFIED, ""), 0);
    for (i = 0; i < 60; i++) {                  /* no pool yet: stored, they wait */
        snprintf(body, sizeof body, "m%zu", i);
        publish(f, "t", body, "", NULL);
    }
    clock_fake_advance(&f->clock, 3600000);    /* down for an hour */
    fx_reopen_engine(f, FX_MAX_QUEUES_DEFAULT);
    p = fake_pool(f);
    fx_tick(f, 0);
    for (i = 0; i < p->n; i++)                  /* each answered at once: more follow */
        feed(f, p, i, SMQ_PUSH_OK);
    assert_int_equal(p->n, 100);
    assert_int_equal(get_sub(f, "t", "a").pending + get_sub(f, "t", "b").pending, 20);
    fx_tick(f, 1000);
    for (i = 100; i < p->n; i++)
        feed(f, p, i, SMQ_PUSH_OK);
    assert_int_equal(p->n, 120);
    assert_int_equal(get_sub(f, "t", "a").pending + get_sub(f, "t", "b").pending, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_fanout_formats, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_fanout_filter_tag, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_publish_size_limit_and_ids, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_retry_until_queue_exists, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_give_up_to_dlq_or_drop, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_delete_with_pending, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_http_notifications_wait, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_failed_commit_publishes_nothing, fx_setup,
                                        fx_teardown),
        cmocka_unit_test_setup_teardown(test_large_fanout_spread_over_runs, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_fanout_fills_its_transaction, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_large_bodies_bounded_per_transaction, fx_setup,
                                        fx_teardown),
        cmocka_unit_test_setup_teardown(test_reopen_mid_fanout_delivers_each_once, fx_setup,
                                        fx_teardown),
        cmocka_unit_test_setup_teardown(test_topic_stats_and_eventlog, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_push_not_held_back_by_queue_share, fx_setup,
                                        fx_teardown),
        cmocka_unit_test_setup_teardown(test_push_after_commit_ok_retires, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_push_retry_schedules, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_push_give_up, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_push_cancelled_and_unavailable, fx_setup,
                                        fx_teardown),
        cmocka_unit_test_setup_teardown(test_push_dead_endpoint_contained, fx_setup,
                                        fx_teardown),
        cmocka_unit_test_setup_teardown(test_push_overdue_spread_after_restart, fx_setup,
                                        fx_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
