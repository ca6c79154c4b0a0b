/*
 * test_engine_topics.c — topics and subscriptions in the engine
 * (docs/protocol.md §13.4, §13.6): create and subscribe with their
 * idempotency, the limits, the fields a subscription cannot change, its
 * dead-letter target, listing with prefix and marker, delete taking the
 * subscriptions with it, ids never reused, everything across a restart,
 * and a failed write or commit changing nothing.  Runs on SQLite and, when
 * one is available, on PostgreSQL (engine_fixture.h).
 */
#include "engine_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define Q_ENDPOINT "acs:mns:cn-hangzhou:1000000000000000:queues/q"

static int create_topic(struct fx *f, const char *name, int64_t max_size, bool *created)
{
    struct smq_op op;
    int rc;

    fx_prep_op(f, &op, SMQ_OP_CREATE_TOPIC, name);
    if (max_size > 0) {
        op.topic.values.max_msg_size = max_size;
        op.topic.present = SMQ_TATTR_MAX_MSG_SIZE;
    }
    rc = fx_run_one(f, &op);
    if (created != NULL)
        *created = op.topic.created;
    return rc;
}

static int delete_topic(struct fx *f, const char *name)
{
    struct smq_op op;

    fx_prep_op(f, &op, SMQ_OP_DELETE_TOPIC, name);
    return fx_run_one(f, &op);
}

static int subscribe(struct fx *f, const char *topic, const char *name, const char *endpoint,
                     enum smq_notify_format format, const char *filter, bool *created)
{
    struct smq_op op;
    int rc;

    fx_prep_op(f, &op, SMQ_OP_SUBSCRIBE, topic);
    snprintf(op.sub.name, sizeof op.sub.name, "%s", name);
    snprintf(op.sub.values.endpoint, sizeof op.sub.values.endpoint, "%s", endpoint);
    snprintf(op.sub.values.filter_tag, sizeof op.sub.values.filter_tag, "%s", filter);
    op.sub.values.format = format;
    op.sub.present = SMQ_SATTR_ENDPOINT | SMQ_SATTR_FORMAT;
    if (filter[0] != '\0')
        op.sub.present |= SMQ_SATTR_FILTER_TAG;
    rc = fx_run_one(f, &op);
    if (created != NULL)
        *created = op.sub.created;
    return rc;
}

static int subscribe_dlq(struct fx *f, const char *topic, const char *name, const char *endpoint,
                         const char *dlq)
{
    struct smq_op op;

    fx_prep_op(f, &op, SMQ_OP_SUBSCRIBE, topic);
    snprintf(op.sub.name, sizeof op.sub.name, "%s", name);
    snprintf(op.sub.values.endpoint, sizeof op.sub.values.endpoint, "%s", endpoint);
    op.sub.values.dlq.enabled = 1;
    snprintf(op.sub.values.dlq.target, sizeof op.sub.values.dlq.target, "%s", dlq);
    op.sub.present = SMQ_SATTR_ENDPOINT | SMQ_SATTR_DLQ;
    return fx_run_one(f, &op);
}

static int get_sub(struct fx *f, const char *topic, const char *name, struct smq_sub_info *info)
{
    struct smq_op op;
    int rc;

    fx_prep_op(f, &op, SMQ_OP_GET_SUBSCRIPTION, topic);
    snprintf(op.sub.name, sizeof op.sub.name, "%s", name);
    rc = fx_run_one(f, &op);
    *info = op.sub.info;
    return rc;
}

static int get_topic(struct fx *f, const char *name, struct smq_topic_info *info)
{
    struct smq_op op;
    int rc;

    fx_prep_op(f, &op, SMQ_OP_GET_TOPIC, name);
    rc = fx_run_one(f, &op);
    *info = op.topic.info;
    return rc;
}

static size_t count_subs(struct fx *f, const char *topic)
{
    struct smq_op op;
    size_t n;

    fx_prep_op(f, &op, SMQ_OP_LIST_SUBSCRIPTIONS, topic);
    assert_int_equal(fx_run_one(f, &op), 0);
    n = op.slist.n_subs;
    op_release(&op);
    return n;
}

/* ---- topics ---- */

static void test_topic_create_set_get(void **state)
{
    struct fx *f = *state;
    struct smq_topic_info info;
    struct smq_op op;
    bool created = false;

    assert_int_equal(create_topic(f, "t1", 0, &created), 0);
    assert_true(created);
    assert_int_equal(create_topic(f, "t1", 0, &created), 0);      /* 204 */
    assert_false(created);
    /* The request filled in with defaults is compared: 65536 is the default. */
    assert_int_equal(create_topic(f, "t1", SMQ_MSG_SIZE_MAX, &created), 0);
    assert_false(created);
    assert_int_equal(create_topic(f, "t1", 2048, NULL), SMQ_E_TOPIC_ALREADY_EXIST);
    assert_int_equal(create_topic(f, "t2", 2048, NULL), 0);
    /* Set changes only what it names; LastModifyTime moves. */
    fx_tick(f, 3000);
    fx_prep_op(f, &op, SMQ_OP_SET_TOPIC, "t1");
    op.topic.values.logging = 1;
    op.topic.present = SMQ_TATTR_LOGGING;
    assert_int_equal(fx_run_one(f, &op), 0);
    assert_int_equal(get_topic(f, "t1", &info), 0);
    assert_string_equal(info.name, "t1");
    assert_int_equal(info.attrs.logging, 1);
    assert_int_equal(info.attrs.max_msg_size, SMQ_MSG_SIZE_MAX);
    assert_int_equal(info.create_s, FX_EPOCH0_S);
    assert_int_equal(info.modify_s, FX_EPOCH0_S + 3);
    assert_int_equal(info.message_count, 0);
    assert_int_equal(get_topic(f, "nope", &info), SMQ_E_TOPIC_NOT_EXIST);
    fx_prep_op(f, &op, SMQ_OP_SET_TOPIC, "nope");
    assert_int_equal(fx_run_one(f, &op), SMQ_E_TOPIC_NOT_EXIST);
    /* Everything survives a restart. */
    fx_reopen_engine(f, FX_MAX_QUEUES_DEFAULT);
    assert_int_equal(get_topic(f, "t1", &info), 0);
    assert_int_equal(info.attrs.logging, 1);
    assert_int_equal(info.modify_s, FX_EPOCH0_S + 3);
    assert_int_equal(get_topic(f, "t2", &info), 0);
    assert_int_equal(info.attrs.max_msg_size, 2048);
    assert_int_equal(info.attrs.logging, 0);
    assert_int_equal(fx_stats(f).topics, 2);
}

static void test_topic_list_paging(void **state)
{
    struct fx *f = *state;
    const char *names[] = {"a-1", "a-2", "a-3", "b-1", "t"};
    struct smq_op op;

    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        assert_int_equal(create_topic(f, names[i], 0, NULL), 0);
    fx_prep_op(f, &op, SMQ_OP_LIST_TOPICS, "");
    op.tlist.ret_number = 2;
    snprintf(op.tlist.prefix, sizeof op.tlist.prefix, "a-");
    assert_int_equal(fx_run_one(f, &op), 0);
    assert_int_equal(op.tlist.n_topics, 2);
    assert_string_equal(op.tlist.topics[0].name, "a-1");
    assert_string_equal(op.tlist.topics[1].name, "a-2");
    assert_string_equal(op.tlist.next_marker, "a-3");
    op_release(&op);
    /* The next page: the last one of the prefix, no marker after it. */
    fx_prep_op(f, &op, SMQ_OP_LIST_TOPICS, "");
    op.tlist.ret_number = 2;
    snprintf(op.tlist.prefix, sizeof op.tlist.prefix, "a-");
    snprintf(op.tlist.marker, sizeof op.tlist.marker, "a-3");
    assert_int_equal(fx_run_one(f, &op), 0);
    assert_int_equal(op.tlist.n_topics, 1);
    assert_string_equal(op.tlist.topics[0].name, "a-3");
    assert_string_equal(op.tlist.next_marker, "");
    op_release(&op);
    /* Exactly a page's worth: no marker either. */
    fx_prep_op(f, &op, SMQ_OP_LIST_TOPICS, "");
    op.tlist.ret_number = 5;
    assert_int_equal(fx_run_one(f, &op), 0);
    assert_int_equal(op.tlist.n_topics, 5);
    assert_string_equal(op.tlist.topics[4].name, "t");
    assert_string_equal(op.tlist.next_marker, "");
    op_release(&op);
}

static void test_topic_limit_and_ids(void **state)
{
    struct fx *f = *state;
    bool created = false;

    f->max_topics = 2;
    fx_reopen_engine(f, FX_MAX_QUEUES_DEFAULT);
    assert_int_equal(create_topic(f, "a", 0, NULL), 0);
    assert_int_equal(create_topic(f, "b", 0, NULL), 0);
    assert_int_equal(create_topic(f, "c", 0, NULL), SMQ_E_TOO_MANY_TOPICS);
    assert_int_equal(create_topic(f, "a", 0, &created), 0);         /* an existing one is fine */
    assert_false(created);
    /* Delete is idempotent and frees the room. */
    assert_int_equal(delete_topic(f, "b"), 0);
    assert_int_equal(delete_topic(f, "b"), 0);
    assert_int_equal(delete_topic(f, "never"), 0);
    assert_int_equal(create_topic(f, "c", 0, &created), 0);
    assert_true(created);
    /* Topics and queues are separate name spaces (§13.4.1). */
    fx_create_queue_vis(f, "a", 30);
    assert_int_equal(fx_delete_queue(f, "a"), 0);
    struct smq_topic_info info;
    assert_int_equal(get_topic(f, "a", &info), 0);
    fx_reopen_engine(f, FX_MAX_QUEUES_DEFAULT);
    assert_int_equal(fx_stats(f).topics, 2);
    assert_int_equal(get_topic(f, "b", &info), SMQ_E_TOPIC_NOT_EXIST);
    assert_int_equal(create_topic(f, "b", 0, NULL), SMQ_E_TOO_MANY_TOPICS);
}

/* ---- subscriptions ---- */

static void test_subscription_create_set_get(void **state)
{
    struct fx *f = *state;
    struct smq_sub_info info;
    struct smq_op op;
    bool created = false;

    assert_int_equal(subscribe(f, "t", "s", Q_ENDPOINT, SMQ_NOTIFY_XML, "", NULL),
                     SMQ_E_TOPIC_NOT_EXIST);
    assert_int_equal(create_topic(f, "t", 0, NULL), 0);
    assert_int_equal(subscribe(f, "t", "s", Q_ENDPOINT, SMQ_NOTIFY_XML, "", &created), 0);
    assert_true(created);
    assert_int_equal(subscribe(f, "t", "s", Q_ENDPOINT, SMQ_NOTIFY_XML, "", &created), 0);
    assert_false(created);                                          /* 204 */
    assert_int_equal(subscribe(f, "t", "s", Q_ENDPOINT, SMQ_NOTIFY_JSON, "", NULL),
                     SMQ_E_SUBSCRIPTION_ALREADY_EXIST);
    assert_int_equal(subscribe(f, "t", "s", Q_ENDPOINT, SMQ_NOTIFY_XML, "x", NULL),
                     SMQ_E_SUBSCRIPTION_ALREADY_EXIST);
    assert_int_equal(subscribe(f, "t", "s", "http://127.0.0.1:9/x", SMQ_NOTIFY_XML, "", NULL),
                     SMQ_E_SUBSCRIPTION_ALREADY_EXIST);
    /* The engine checks the endpoint itself, whoever built the op. */
    assert_int_equal(subscribe(f, "t", "m", "mail:directmail:a@b.c", SMQ_NOTIFY_XML, "", NULL),
                     SMQ_E_ENDPOINT_INVALID);
    /* A subscription name is unique within its topic only. */
    assert_int_equal(create_topic(f, "u", 0, NULL), 0);
    assert_int_equal(subscribe(f, "u", "s", "https://example.com/hook?a=1", SMQ_NOTIFY_SIMPLIFIED,
                               "red", NULL), 0);
    /* The dead-letter target must exist. */
    assert_int_equal(subscribe_dlq(f, "t", "d", "http://127.0.0.1:9/x", "dead"),
                     SMQ_E_INVALID_ARGUMENT);
    fx_create_queue_vis(f, "dead", 30);
    assert_int_equal(subscribe_dlq(f, "t", "d", "http://127.0.0.1:9/x", "dead"), 0);
    /* Set: strategy and filter change; format and endpoint cannot. */
    fx_tick(f, 2000);
    fx_prep_op(f, &op, SMQ_OP_SET_SUBSCRIPTION, "t");
    snprintf(op.sub.name, sizeof op.sub.name, "s");
    op.sub.values.format = SMQ_NOTIFY_JSON;
    op.sub.present = SMQ_SATTR_FORMAT;
    assert_int_equal(fx_run_one(f, &op), SMQ_E_INVALID_ARGUMENT);
    fx_prep_op(f, &op, SMQ_OP_SET_SUBSCRIPTION, "t");
    snprintf(op.sub.name, sizeof op.sub.name, "s");
    snprintf(op.sub.values.endpoint, sizeof op.sub.values.endpoint, "%s", Q_ENDPOINT);
    op.sub.values.strategy = SMQ_NOTIFY_EXPONENTIAL_DECAY_RETRY;
    snprintf(op.sub.values.filter_tag, sizeof op.sub.values.filter_tag, "red");
    op.sub.present = SMQ_SATTR_ENDPOINT | SMQ_SATTR_STRATEGY | SMQ_SATTR_FILTER_TAG;
    assert_int_equal(fx_run_one(f, &op), 0);
    fx_prep_op(f, &op, SMQ_OP_SET_SUBSCRIPTION, "t");
    snprintf(op.sub.name, sizeof op.sub.name, "nope");
    op.sub.present = SMQ_SATTR_STRATEGY;
    assert_int_equal(fx_run_one(f, &op), SMQ_E_SUBSCRIPTION_NOT_EXIST);
    /* Everything survives a restart. */
    fx_reopen_engine(f, FX_MAX_QUEUES_DEFAULT);
    assert_int_equal(get_sub(f, "t", "s", &info), 0);
    assert_string_equal(info.topic, "t");
    assert_string_equal(info.name, "s");
    assert_int_equal(info.attrs.strategy, SMQ_NOTIFY_EXPONENTIAL_DECAY_RETRY);
    assert_int_equal(info.attrs.format, SMQ_NOTIFY_XML);
    assert_string_equal(info.attrs.filter_tag, "red");
    assert_string_equal(info.attrs.endpoint, Q_ENDPOINT);
    assert_int_equal(info.attrs.dlq.enabled, 0);
    assert_int_equal(info.create_s, FX_EPOCH0_S);
    assert_int_equal(info.modify_s, FX_EPOCH0_S + 2);
    assert_int_equal(get_sub(f, "t", "d", &info), 0);
    assert_int_equal(info.attrs.dlq.enabled, 1);
    assert_string_equal(info.attrs.dlq.target, "dead");
    assert_int_equal(get_sub(f, "u", "s", &info), 0);
    assert_string_equal(info.attrs.endpoint, "https://example.com/hook?a=1");
    assert_int_equal(info.attrs.format, SMQ_NOTIFY_SIMPLIFIED);
    assert_int_equal(get_sub(f, "t", "m", &info), SMQ_E_SUBSCRIPTION_NOT_EXIST);
    assert_int_equal(get_sub(f, "nope", "s", &info), SMQ_E_TOPIC_NOT_EXIST);
    assert_int_equal(fx_stats(f).subscriptions, 3);
    /* A policy turned off keeps no target. */
    fx_prep_op(f, &op, SMQ_OP_SET_SUBSCRIPTION, "t");
    snprintf(op.sub.name, sizeof op.sub.name, "d");
    op.sub.present = SMQ_SATTR_DLQ;
    assert_int_equal(fx_run_one(f, &op), 0);
    fx_reopen_engine(f, FX_MAX_QUEUES_DEFAULT);
    assert_int_equal(get_sub(f, "t", "d", &info), 0);
    assert_int_equal(info.attrs.dlq.enabled, 0);
    assert_string_equal(info.attrs.dlq.target, "");
}

static void test_subscription_list_and_unsubscribe(void **state)
{
    struct fx *f = *state;
    const char *names[] = {"c", "a", "b", "ab"};
    struct smq_sub_info info;
    struct smq_op op;

    assert_int_equal(create_topic(f, "t", 0, NULL), 0);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        assert_int_equal(subscribe(f, "t", names[i], Q_ENDPOINT, SMQ_NOTIFY_XML, "", NULL), 0);
    fx_prep_op(f, &op, SMQ_OP_LIST_SUBSCRIPTIONS, "t");
    op.slist.ret_number = 3;
    assert_int_equal(fx_run_one(f, &op), 0);
    assert_int_equal(op.slist.n_subs, 3);
    assert_string_equal(op.slist.subs[0].name, "a");
    assert_string_equal(op.slist.subs[1].name, "ab");
    assert_string_equal(op.slist.subs[2].name, "b");
    assert_string_equal(op.slist.subs[2].topic, "t");
    assert_string_equal(op.slist.next_marker, "c");
    op_release(&op);
    fx_prep_op(f, &op, SMQ_OP_LIST_SUBSCRIPTIONS, "t");
    snprintf(op.slist.prefix, sizeof op.slist.prefix, "a");
    assert_int_equal(fx_run_one(f, &op), 0);
    assert_int_equal(op.slist.n_subs, 2);
    assert_string_equal(op.slist.next_marker, "");
    op_release(&op);
    fx_prep_op(f, &op, SMQ_OP_LIST_SUBSCRIPTIONS, "nope");
    assert_int_equal(fx_run_one(f, &op), SMQ_E_TOPIC_NOT_EXIST);
    op_release(&op);
    /* Unsubscribe is idempotent; on a missing topic it is TopicNotExist. */
    fx_prep_op(f, &op, SMQ_OP_UNSUBSCRIBE, "t");
    snprintf(op.sub.name, sizeof op.sub.name, "ab");
    assert_int_equal(fx_run_one(f, &op), 0);
    assert_int_equal(fx_run_one(f, &op), 0);
    fx_prep_op(f, &op, SMQ_OP_UNSUBSCRIBE, "nope");
    snprintf(op.sub.name, sizeof op.sub.name, "ab");
    assert_int_equal(fx_run_one(f, &op), SMQ_E_TOPIC_NOT_EXIST);
    fx_reopen_engine(f, FX_MAX_QUEUES_DEFAULT);
    assert_int_equal(count_subs(f, "t"), 3);
    assert_int_equal(get_sub(f, "t", "ab", &info), SMQ_E_SUBSCRIPTION_NOT_EXIST);
    /* The name is free again, under a new id. */
    assert_int_equal(subscribe(f, "t", "ab", Q_ENDPOINT, SMQ_NOTIFY_JSON, "", NULL), 0);
    fx_reopen_engine(f, FX_MAX_QUEUES_DEFAULT);
    assert_int_equal(get_sub(f, "t", "ab", &info), 0);
    assert_int_equal(info.attrs.format, SMQ_NOTIFY_JSON);
}

static void test_subscription_limit(void **state)
{
    struct fx *f = *state;

    f->max_subs_per_topic = 2;
    fx_reopen_engine(f, FX_MAX_QUEUES_DEFAULT);
    assert_int_equal(create_topic(f, "t", 0, NULL), 0);
    assert_int_equal(create_topic(f, "u", 0, NULL), 0);
    assert_int_equal(subscribe(f, "t", "a", Q_ENDPOINT, SMQ_NOTIFY_XML, "", NULL), 0);
    assert_int_equal(subscribe(f, "t", "b", Q_ENDPOINT, SMQ_NOTIFY_XML, "", NULL), 0);
    assert_int_equal(subscribe(f, "t", "c", Q_ENDPOINT, SMQ_NOTIFY_XML, "", NULL),
                     SMQ_E_TOO_MANY_SUBSCRIPTIONS);
    assert_int_equal(subscribe(f, "t", "a", Q_ENDPOINT, SMQ_NOTIFY_XML, "", NULL), 0);
    assert_int_equal(subscribe(f, "u", "c", Q_ENDPOINT, SMQ_NOTIFY_XML, "", NULL), 0);  /* per topic */
}

/* Deleting a topic takes its subscriptions with it (§13.4.4): a topic made
 * again under the name starts with none, after a restart too. */
static void test_delete_topic_takes_subscriptions(void **state)
{
    struct fx *f = *state;
    struct smq_sub_info info;

    assert_int_equal(create_topic(f, "t", 0, NULL), 0);
    assert_int_equal(create_topic(f, "keep", 0, NULL), 0);
    assert_int_equal(subscribe(f, "t", "a", Q_ENDPOINT, SMQ_NOTIFY_XML, "", NULL), 0);
    assert_int_equal(subscribe(f, "t", "b", "http://127.0.0.1:9/", SMQ_NOTIFY_JSON, "", NULL), 0);
    assert_int_equal(subscribe(f, "keep", "a", Q_ENDPOINT, SMQ_NOTIFY_XML, "", NULL), 0);
    assert_int_equal(delete_topic(f, "t"), 0);
    assert_int_equal(fx_stats(f).subscriptions, 1);
    assert_int_equal(create_topic(f, "t", 0, NULL), 0);
    assert_int_equal(count_subs(f, "t"), 0);
    fx_reopen_engine(f, FX_MAX_QUEUES_DEFAULT);
    assert_int_equal(count_subs(f, "t"), 0);
    assert_int_equal(get_sub(f, "keep", "a", &info), 0);
    assert_int_equal(fx_stats(f).topics, 2);
    assert_int_equal(fx_stats(f).subscriptions, 1);
    struct smq_topic_info tinfo;
    assert_int_equal(get_topic(f, "keep", &tinfo), 0);
    assert_int_equal(tinfo.subscriptions, 1);
    if (!f->pg) {
        assert_int_equal(db_peek_int(f->path, "SELECT count(*) FROM subscription"), 1);
    }
}

/* A write that fails, or a commit that does, leaves neither a row nor a
 * model entry; what came before survives. */
static void test_failed_write_or_commit_changes_nothing(void **state)
{
    struct fx *f = *state;
    struct smq_topic_info tinfo;
    struct smq_sub_info info;
    struct smq_op op;

    assert_int_equal(create_topic(f, "t", 0, NULL), 0);
    store_fault_inject(f->store, 0, 0);
    assert_int_equal(create_topic(f, "lost", 0, NULL), SMQ_E_INTERNAL);
    assert_int_equal(get_topic(f, "lost", &tinfo), SMQ_E_TOPIC_NOT_EXIST);
    store_fault_inject(f->store, 0, 0);
    assert_int_equal(subscribe(f, "t", "lost", Q_ENDPOINT, SMQ_NOTIFY_XML, "", NULL),
                     SMQ_E_INTERNAL);
    assert_int_equal(get_sub(f, "t", "lost", &info), SMQ_E_SUBSCRIPTION_NOT_EXIST);
    /* A commit that fails: the run is lost and reloaded from the store. */
    store_fault_inject(f->store, STORE_FAULT_OFF, 1);
    assert_int_equal(subscribe(f, "t", "lost", Q_ENDPOINT, SMQ_NOTIFY_XML, "", NULL),
                     SMQ_E_INTERNAL);
    assert_int_equal(get_sub(f, "t", "lost", &info), SMQ_E_SUBSCRIPTION_NOT_EXIST);
    assert_int_equal(get_topic(f, "t", &tinfo), 0);
    store_fault_inject(f->store, STORE_FAULT_OFF, 1);
    fx_prep_op(f, &op, SMQ_OP_DELETE_TOPIC, "t");
    assert_int_equal(fx_run_one(f, &op), SMQ_E_INTERNAL);
    assert_int_equal(get_topic(f, "t", &tinfo), 0);
    assert_int_equal(fx_stats(f).reloads, 2);
    /* And the next ones work. */
    assert_int_equal(subscribe(f, "t", "ok", Q_ENDPOINT, SMQ_NOTIFY_XML, "", NULL), 0);
    fx_reopen_engine(f, FX_MAX_QUEUES_DEFAULT);
    assert_int_equal(get_sub(f, "t", "ok", &info), 0);
    assert_int_equal(count_subs(f, "t"), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_topic_create_set_get, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_topic_list_paging, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_topic_limit_and_ids, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_subscription_create_set_get, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_subscription_list_and_unsubscribe, fx_setup,
                                        fx_teardown),
        cmocka_unit_test_setup_teardown(test_subscription_limit, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_delete_topic_takes_subscriptions, fx_setup,
                                        fx_teardown),
        cmocka_unit_test_setup_teardown(test_failed_write_or_commit_changes_nothing, fx_setup,
                                        fx_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
