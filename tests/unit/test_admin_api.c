/*
 * test_admin_api.c — unit tests for the admin listener's pure parts:
 * admin_api.c (routing, strict parameters, the dead-letter policy rules,
 * the JSON documents of queues, topics and subscriptions), admin_metrics.c
 * (the exposition for a stats op) and json.c (escaping, invalid UTF-8).
 * No sockets, no engine: ops are filled by hand as the engine would.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "admin_metrics.h"
#include "smqd/admin_api.h"
#include "smqd/json.h"

struct fx {
    struct admin_job job;
    struct admin_reply reply;
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof *f);

    assert_non_null(f);
    admin_reply_init(&f->reply);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;

    admin_api_release(&f->job);
    admin_reply_free(&f->reply);
    free(f);
    return 0;
}

static int prepare(struct fx *f, const char *method, const char *path, const char *query)
{
    admin_api_release(&f->job);
    admin_reply_free(&f->reply);
    admin_reply_init(&f->reply);
    return admin_api_prepare(method, path, query, &f->job, &f->reply);
}

/* Asserts a refusal with this status and "error" code. */
static void expect_refused(struct fx *f, const char *method, const char *path, const char *query,
                           int status, const char *code)
{
    char want[96];

    if (prepare(f, method, path, query) >= 0)
        fail_msg("%s %s?%s was accepted", method, path, query ? query : "");
    snprintf(want, sizeof want, "{\"error\":\"%s\"", code);
    if (f->reply.status != status || strncmp(f->reply.body.data, want, strlen(want)) != 0)
        fail_msg("%s %s?%s: expected %d %s, got %d %s", method, path, query ? query : "",
                 status, code, f->reply.status, f->reply.body.data);
}

static void test_admin_api_routes(void **state)
{
    struct fx *f = *state;

    assert_int_equal(prepare(f, "GET", "/v1/queues", NULL), 0);
    assert_int_equal(f->job.kind, ADMIN_JOB_LIST);
    assert_int_equal(f->job.ops[0].kind, SMQ_OP_STATS);
    assert_string_equal(f->job.ops[0].queue, "");
    assert_int_equal(prepare(f, "HEAD", "/v1/queues/a-1", NULL), 0);
    assert_int_equal(f->job.kind, ADMIN_JOB_QUEUE);
    assert_string_equal(f->job.ops[0].queue, "a-1");
    assert_int_equal(prepare(f, "GET", "/v1/queues/q%2Dx/messages", "n=3"), 0);
    assert_string_equal(f->job.ops[0].queue, "q-x");
    assert_int_equal(f->job.ops[0].kind, SMQ_OP_PEEK);
    assert_int_equal(f->job.ops[0].recv.max_msgs, 3);
    assert_int_equal(prepare(f, "GET", "/v1/queues/q/messages", NULL), 0);
    assert_int_equal(f->job.ops[0].recv.max_msgs, 16);
    assert_int_equal(prepare(f, "POST", "/v1/queues/q/purge", "type=both"), 0);
    assert_true(f->job.ops[0].purge.main && f->job.ops[0].purge.dlq);
    assert_int_equal(prepare(f, "POST", "/v1/queues/q/purge", NULL), 0);
    assert_true(f->job.ops[0].purge.main && !f->job.ops[0].purge.dlq);
    assert_int_equal(prepare(f, "POST", "/v1/queues/q/redrive", NULL), 0);
    assert_int_equal(f->job.ops[0].redrive.rate_per_s, 100);
    assert_int_equal(f->job.ops[0].redrive.max, 0);
    assert_int_equal(prepare(f, "POST", "/v1/queues/q/redrive", "rate=100000&max=7"), 0);
    assert_int_equal(f->job.ops[0].redrive.rate_per_s, 100000);
    assert_int_equal(f->job.ops[0].redrive.max, 7);

    expect_refused(f, "GET", "/v1/queue", NULL, 404, "NotFound");
    expect_refused(f, "GET", "/v1/queues/", NULL, 404, "NotFound");
    expect_refused(f, "GET", "/v1/queues/q/x", NULL, 404, "NotFound");
    expect_refused(f, "POST", "/v1/queues", NULL, 405, "MethodNotAllowed");
    assert_string_equal(f->reply.allow, "GET, HEAD");
    expect_refused(f, "GET", "/v1/queues/q/purge", NULL, 405, "MethodNotAllowed");
    assert_string_equal(f->reply.allow, "POST");
    expect_refused(f, "GET", "/v1/queues/a_b", NULL, 400, "InvalidQueueName");
    expect_refused(f, "GET", "/v1/queues/a%00b", NULL, 400, "InvalidQueueName");
    expect_refused(f, "GET", "/v1/queues/a%2", NULL, 400, "InvalidQueueName");
    expect_refused(f, "GET", "/v1/queues/a%2Fb", NULL, 400, "InvalidQueueName");
    expect_refused(f, "GET", "/v1/queues//messages", NULL, 400, "QueueNameLengthError");
}

static void test_admin_api_strict_numbers(void **state)
{
    static const char *const bad_n[] = {"n=0", "n=17", "n=+1", "n= 1", "n=1x", "n=",
                                        "n=-1", "n=18446744073709551616", "n=1&n=1", "m=1"};
    struct fx *f = *state;

    for (size_t i = 0; i < sizeof bad_n / sizeof bad_n[0]; i++)
        expect_refused(f, "GET", "/v1/queues/q/messages", bad_n[i], 400, "InvalidArgument");
    expect_refused(f, "POST", "/v1/queues/q/redrive", "rate=100001", 400, "InvalidArgument");
    expect_refused(f, "POST", "/v1/queues/q/redrive", "max=1000000000001", 400, "InvalidArgument");
    expect_refused(f, "POST", "/v1/queues/q/purge", "type=Both", 400, "InvalidArgument");
    expect_refused(f, "GET", "/v1/queues/q", "x=%zz", 400, "InvalidQueryString");
    expect_refused(f, "GET", "/v1/queues", "a=1", 400, "InvalidArgument");
}

static void test_admin_api_set(void **state)
{
    struct fx *f = *state;
    const struct smq_op *set;

    assert_int_equal(prepare(f, "PUT", "/v1/queues/q/attributes",
                             "VisibilityTimeout=60&loggingenabled=TRUE&DelaySeconds=0"), 0);
    assert_int_equal(f->job.n_ops, 2);
    set = &f->job.ops[0];
    assert_int_equal(set->kind, SMQ_OP_SET_QUEUE);
    assert_int_equal(set->attrs.present, SMQ_ATTR_VISIBILITY | SMQ_ATTR_LOGGING | SMQ_ATTR_DELAY);
    assert_int_equal(set->attrs.values.visibility_s, 60);
    assert_int_equal(set->attrs.values.logging, 1);
    assert_int_equal(f->job.ops[1].kind, SMQ_OP_STATS);
    assert_string_equal(f->job.ops[1].queue, "q");

    assert_int_equal(prepare(f, "PUT", "/v1/queues/q/attributes",
                             "DlqTargetQueue=q-dlq&DlqMaxReceiveCount=5"), 0);
    set = &f->job.ops[0];
    assert_int_equal(set->attrs.present, SMQ_ATTR_DLQ);
    assert_int_equal(set->attrs.values.dlq.enabled, 1);
    assert_string_equal(set->attrs.values.dlq.target, "q-dlq");
    assert_int_equal(set->attrs.values.dlq.max_receive, 5);
    assert_int_equal(prepare(f, "PUT", "/v1/queues/q/attributes", "DlqEnabled=false"), 0);
    assert_int_equal(f->job.ops[0].attrs.present, SMQ_ATTR_DLQ);
    assert_int_equal(f->job.ops[0].attrs.values.dlq.enabled, 0);
    assert_string_equal(f->job.ops[0].attrs.values.dlq.target, "");

    expect_refused(f, "PUT", "/v1/queues/q/attributes", NULL, 400, "InvalidArgument");
    expect_refused(f, "PUT", "/v1/queues/q/attributes", "MaximumMessageSize=1023", 400,
                   "InvalidArgument");
    expect_refused(f, "PUT", "/v1/queues/q/attributes", "DlqTargetQueue=x", 400,
                   "InvalidArgument");
    expect_refused(f, "PUT", "/v1/queues/q/attributes",
                   "DlqEnabled=false&DlqMaxReceiveCount=2", 400, "InvalidArgument");
    expect_refused(f, "PUT", "/v1/queues/q/attributes", "DlqTargetQueue=q&DlqMaxReceiveCount=2",
                   400, "InvalidArgument");
    expect_refused(f, "PUT", "/v1/queues/q/attributes",
                   "DlqTargetQueue=x_y&DlqMaxReceiveCount=2", 400, "InvalidQueueName");
    expect_refused(f, "PUT", "/v1/queues/q/attributes", "DlqTargetQueue=x&DlqMaxReceiveCount=0",
                   400, "InvalidArgument");
}

/* A STATS result as the engine would leave it: one queue, a few counts. */
static void fake_stats(struct smq_op *op)
{
    op_init(op, SMQ_OP_STATS);
    op->stats.queues = calloc(1, sizeof *op->stats.queues);
    assert_non_null(op->stats.queues);
    op->stats.n_queues = 1;
    snprintf(op->stats.queues[0].info.name, sizeof op->stats.queues[0].info.name, "orders");
    mns_default_attrs(&op->stats.queues[0].info.attrs);
    op->stats.queues[0].info.n_active = 3;
    op->stats.queues[0].info.n_inactive = 1;
    op->stats.queues[0].oldest_enqueue_ms = 1000000;
    op->stats.queues[0].sent = 10;
    op->stats.totals.queues = 1;
    op->stats.totals.page_size = 4096;
    op->stats.totals.free_pages = 2;
}

static void test_admin_api_render_queue(void **state)
{
    struct fx *f = *state;

    f->job.kind = ADMIN_JOB_QUEUE;
    f->job.n_ops = 1;
    fake_stats(&f->job.ops[0]);
    admin_api_render(&f->job, NULL, 1012500, &f->reply);
    assert_int_equal(f->reply.status, 200);
    assert_non_null(strstr(f->reply.body.data, "{\"name\":\"orders\",\"active\":3,\"inactive\":1,"
                                               "\"delayed\":0,\"waiters\":0,\"oldest_age_s\":12.500,"));
    assert_non_null(strstr(f->reply.body.data, "\"counters\":{\"sent\":10,"));
    assert_non_null(strstr(f->reply.body.data, "\"DlqEnabled\":false,\"DlqTargetQueue\":\"\""));
    /* A failed op answers with its MNS error. */
    errors_set(&f->job.ops[0].result, SMQ_E_QUEUE_NOT_EXIST, NULL);
    admin_api_render(&f->job, NULL, 0, &f->reply);
    assert_int_equal(f->reply.status, 404);
    assert_non_null(strstr(f->reply.body.data, "\"error\":\"QueueNotExist\""));
}

static void test_admin_api_topic_routes(void **state)
{
    struct fx *f = *state;
    const struct smq_op *op = &f->job.ops[0];

    assert_int_equal(prepare(f, "GET", "/v1/topics", NULL), 0);
    assert_int_equal(f->job.kind, ADMIN_JOB_TOPICS);
    assert_int_equal(f->job.n_ops, 1);
    assert_int_equal(op->kind, SMQ_OP_LIST_TOPICS);
    assert_null(op->tlist.visible);              /* the admin sees every topic */
    assert_int_equal(op->tlist.ret_number, 1000);
    assert_string_equal(op->tlist.marker, "");
    assert_string_equal(op->tlist.prefix, "");
    assert_int_equal(prepare(f, "HEAD", "/v1/topics", "marker=t-5&limit=2&prefix=t-"), 0);
    assert_int_equal(op->tlist.ret_number, 2);
    assert_string_equal(op->tlist.marker, "t-5");
    assert_string_equal(op->tlist.prefix, "t-");

    assert_int_equal(prepare(f, "GET", "/v1/topics/t%2D1/subscriptions", "limit=1"), 0);
    assert_int_equal(f->job.kind, ADMIN_JOB_SUBSCRIPTIONS);
    assert_int_equal(op->kind, SMQ_OP_LIST_SUBSCRIPTIONS);
    assert_string_equal(op->queue, "t-1");       /* op->queue holds the topic (op.h) */
    assert_int_equal(op->slist.ret_number, 1);
    assert_string_equal(op->slist.marker, "");

    expect_refused(f, "GET", "/v1/topics/t", NULL, 404, "NotFound");
    expect_refused(f, "GET", "/v1/topicsx", NULL, 404, "NotFound");
    expect_refused(f, "GET", "/v1/topics/", NULL, 404, "NotFound");
    expect_refused(f, "GET", "/v1/topics/t/subscriptions/s", NULL, 404, "NotFound");
    expect_refused(f, "POST", "/v1/topics", NULL, 405, "MethodNotAllowed");
    assert_string_equal(f->reply.allow, "GET, HEAD");
    expect_refused(f, "DELETE", "/v1/topics/t/subscriptions", NULL, 405, "MethodNotAllowed");
    expect_refused(f, "GET", "/v1/topics/a_b/subscriptions", NULL, 400, "TopicNameInvalid");
    expect_refused(f, "GET", "/v1/topics/a%2Fb/subscriptions", NULL, 400, "TopicNameInvalid");
    expect_refused(f, "GET", "/v1/topics//subscriptions", NULL, 400, "TopicNameLengthError");
    for (const char *const *q = (const char *const[]){"limit=0", "limit=1001", "limit=+1",
                                                      "limit=1&limit=2", "n=1", NULL};
         *q != NULL; q++) {
        expect_refused(f, "GET", "/v1/topics", *q, 400, "InvalidArgument");
        expect_refused(f, "GET", "/v1/topics/t/subscriptions", *q, 400, "InvalidArgument");
    }
    expect_refused(f, "GET", "/v1/topics",
                   "marker=a1234567890123456789012345678901234567890123456789012345678901234567"
                   "89012345678901234567890123456789012345678901234567890123", 400,
                   "InvalidArgument");
}

/* A LIST_TOPICS result as the engine would leave it: two topics, more to come. */
static void fake_topics(struct smq_op *op)
{
    op_init(op, SMQ_OP_LIST_TOPICS);
    op->tlist.topics = calloc(2, sizeof *op->tlist.topics);
    assert_non_null(op->tlist.topics);
    op->tlist.n_topics = 2;
    snprintf(op->tlist.topics[0].name, sizeof op->tlist.topics[0].name, "alerts");
    mns_default_topic_attrs(&op->tlist.topics[0].attrs);
    op->tlist.topics[0].create_s = 1796014616;
    op->tlist.topics[0].modify_s = 1796014617;
    op->tlist.topics[0].message_count = 4;
    op->tlist.topics[0].subscriptions = 3;
    op->tlist.topics[0].published = 9;
    snprintf(op->tlist.topics[1].name, sizeof op->tlist.topics[1].name, "billing");
    op->tlist.topics[1].attrs.max_msg_size = 1024;
    op->tlist.topics[1].attrs.logging = 1;
    snprintf(op->tlist.next_marker, sizeof op->tlist.next_marker, "billing");
}

static void test_admin_api_render_topics(void **state)
{
    struct fx *f = *state;

    f->job.kind = ADMIN_JOB_TOPICS;
    f->job.n_ops = 1;
    fake_topics(&f->job.ops[0]);
    admin_api_render(&f->job, NULL, 0, &f->reply);
    assert_int_equal(f->reply.status, 200);
    assert_string_equal(f->reply.content_type, "application/json");
    assert_string_equal(f->reply.body.data,
        "{\"topics\":[{\"name\":\"alerts\",\"create_time\":1796014616,"
        "\"modify_time\":1796014617,\"subscriptions\":3,\"message_count\":4,\"published\":9,"
        "\"attributes\":{\"MaximumMessageSize\":65536,\"LoggingEnabled\":false}},"
        "{\"name\":\"billing\",\"create_time\":0,\"modify_time\":0,\"subscriptions\":0,"
        "\"message_count\":0,"
        "\"published\":0,\"attributes\":{\"MaximumMessageSize\":1024,"
        "\"LoggingEnabled\":true}}],\"next_marker\":\"billing\"}\n");
    /* The last page: no topics, no marker. */
    admin_api_release(&f->job);
    f->job.n_ops = 1;
    op_init(&f->job.ops[0], SMQ_OP_LIST_TOPICS);
    admin_api_render(&f->job, NULL, 0, &f->reply);
    assert_string_equal(f->reply.body.data, "{\"topics\":[],\"next_marker\":\"\"}\n");
}


/* The cumulative buckets of three pushes of 4 ms, 40 ms and 20 s. */
#define BUCKETS_JSON                                                                        \
    "{\"le_seconds\":0.005,\"count\":1},{\"le_seconds\":0.01,\"count\":1},"                \
    "{\"le_seconds\":0.025,\"count\":1},{\"le_seconds\":0.05,\"count\":2},"                \
    "{\"le_seconds\":0.1,\"count\":2},{\"le_seconds\":0.25,\"count\":2},"                  \
    "{\"le_seconds\":0.5,\"count\":2},{\"le_seconds\":1,\"count\":2},"                     \
    "{\"le_seconds\":2.5,\"count\":2},{\"le_seconds\":5,\"count\":2},"                     \
    "{\"le_seconds\":10,\"count\":2}"

static void test_admin_api_render_subscriptions(void **state)
{
    struct fx *f = *state;
    struct smq_op *op = &f->job.ops[0];
    struct smq_sub_info *s;

    f->job.kind = ADMIN_JOB_SUBSCRIPTIONS;
    f->job.n_ops = 1;
    op_init(op, SMQ_OP_LIST_SUBSCRIPTIONS);
    snprintf(op->queue, sizeof op->queue, "alerts");
    op->slist.subs = calloc(1, sizeof *op->slist.subs);
    assert_non_null(op->slist.subs);
    op->slist.n_subs = 1;
    s = &op->slist.subs[0];
    snprintf(s->topic, sizeof s->topic, "alerts");
    snprintf(s->name, sizeof s->name, "to-pager");
    snprintf(s->attrs.endpoint, sizeof s->attrs.endpoint, "http://h:8/p?a=\"x\"");
    snprintf(s->attrs.filter_tag, sizeof s->attrs.filter_tag, "urgent");
    s->attrs.strategy = SMQ_NOTIFY_EXPONENTIAL_DECAY_RETRY;
    s->attrs.format = SMQ_NOTIFY_JSON;
    s->attrs.dlq.enabled = 1;
    snprintf(s->attrs.dlq.target, sizeof s->attrs.dlq.target, "pager-dlq");
    s->create_s = 10;
    s->modify_s = 11;
    s->pending = 3;
    s->retrying = 1;
    s->delivered = 7;
    s->failed = 2;
    s->dead = 1;
    s->rejected = 1;
    /* Three pushes: 4 ms, 40 ms and 20 s (beyond every bound). */
    s->push_latency_n = 3;
    s->push_latency_us_sum = 20044000;
    s->push_latency_buckets[0] = 1;
    s->push_latency_buckets[3] = 1;
    s->push_latency_buckets[SMQ_PUSH_LATENCY_BUCKETS] = 1;
    admin_api_render(&f->job, NULL, 0, &f->reply);
    assert_int_equal(f->reply.status, 200);
    assert_string_equal(f->reply.body.data,
        "{\"subscriptions\":[{\"name\":\"to-pager\",\"topic\":\"alerts\","
        "\"create_time\":10,\"modify_time\":11,\"pending\":3,\"retrying\":1,"
        "\"counters\":{\"delivered\":7,\"failed\":2,\"dead\":1,\"rejected\":1},"
        "\"push_latency\":{\"count\":3,\"sum_seconds\":20.044000,\"buckets\":["
        BUCKETS_JSON "]},"
        "\"attributes\":{\"Endpoint\":\"http://h:8/p?a=\\\"x\\\"\",\"FilterTag\":\"urgent\","
        "\"NotifyStrategy\":\"EXPONENTIAL_DECAY_RETRY\",\"NotifyContentFormat\":\"JSON\","
        "\"DlqEnabled\":true,\"DlqTargetQueue\":\"pager-dlq\"}}],\"next_marker\":\"\"}\n");
    /* Without a dead-letter queue the target is "", whatever the struct holds. */
    s->attrs.dlq.enabled = 0;
    admin_api_render(&f->job, NULL, 0, &f->reply);
    assert_non_null(strstr(f->reply.body.data, "\"DlqEnabled\":false,\"DlqTargetQueue\":\"\"}"));
}

/* Every error the engine can answer a listing with becomes its JSON error. */
static void test_admin_api_topic_errors(void **state)
{
    static const struct {
        enum admin_job_kind job;
        enum smq_op_kind kind;
        int err, status;
        const char *code;
    } cases[] = {
        {ADMIN_JOB_SUBSCRIPTIONS, SMQ_OP_LIST_SUBSCRIPTIONS, SMQ_E_TOPIC_NOT_EXIST, 404,
         "TopicNotExist"},
        {ADMIN_JOB_SUBSCRIPTIONS, SMQ_OP_LIST_SUBSCRIPTIONS, SMQ_E_INTERNAL, 500,
         "InternalError"},
        {ADMIN_JOB_TOPICS, SMQ_OP_LIST_TOPICS, SMQ_E_INTERNAL, 500, "InternalError"},
        {ADMIN_JOB_TOPICS, SMQ_OP_LIST_TOPICS, SMQ_E_SERVICE_UNAVAILABLE, 503,
         "ServiceUnavailable"},
    };
    struct fx *f = *state;
    char want[64];

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        admin_api_release(&f->job);
        f->job.kind = cases[i].job;
        f->job.n_ops = 1;
        op_init(&f->job.ops[0], cases[i].kind);
        errors_set(&f->job.ops[0].result, cases[i].err, NULL);
        admin_api_render(&f->job, NULL, 0, &f->reply);
        snprintf(want, sizeof want, "{\"error\":\"%s\",\"message\":", cases[i].code);
        assert_int_equal(f->reply.status, cases[i].status);
        assert_memory_equal(f->reply.body.data, want, strlen(want));
        assert_null(strstr(f->reply.body.data, "\"topics\""));
    }
}

static void test_admin_metrics_exposition(void **state)
{
    struct smq_op op;
    struct admin_metrics_input in = {0};
    struct smq_buf b;

    (void)state;
    fake_stats(&op);
    snprintf(op.stats.queues[0].info.name, sizeof op.stats.queues[0].info.name, "a\"b\\c");
    in.version = "1.2.3";
    in.start_time_ms = 1500;
    in.ready = true;
    op.stats.totals.topics = 3;
    op.stats.totals.subscriptions = 7;
    in.stats = &op;
    in.now_ms = 1003000;
    in.db_bytes = 8192;
    in.wal_bytes = -1;
    buf_init(&b);
    admin_metrics_render(&in, &b);
    assert_false(buf_failed(&b));
    assert_non_null(strstr(b.data, "# TYPE smqd_queue_messages gauge\n"));
    assert_non_null(strstr(b.data, "smqd_queue_messages{queue=\"a\\\"b\\\\c\",state=\"active\"} 3\n"));
    assert_non_null(strstr(b.data, "smqd_queue_oldest_message_age_seconds{queue=\"a\\\"b\\\\c\"} 3.000\n"));
    assert_non_null(strstr(b.data, "# TYPE smqd_messages_sent_total counter\n"));
    assert_non_null(strstr(b.data, "smqd_db_free_bytes 8192\n"));
    assert_non_null(strstr(b.data, "# HELP smqd_topics Topics that exist.\n"
                                   "# TYPE smqd_topics gauge\nsmqd_topics 3\n"));
    assert_non_null(strstr(b.data, "# TYPE smqd_subscriptions gauge\nsmqd_subscriptions 7\n"));
    assert_non_null(strstr(b.data, "smqd_db_bytes 8192\n"));
    assert_null(strstr(b.data, "smqd_wal_bytes"));      /* unknown: not written */
    assert_non_null(strstr(b.data, "smqd_build_info{version=\"1.2.3\"} 1\n"));
    assert_non_null(strstr(b.data, "smqd_start_time_seconds 1.500\n"));
    /* Without a snapshot only the process families remain. */
    buf_reset(&b);
    in.stats = NULL;
    admin_metrics_render(&in, &b);
    assert_non_null(strstr(b.data, "smqd_engine_up 0\n"));
    assert_null(strstr(b.data, "smqd_queues"));
    assert_null(strstr(b.data, "smqd_topics"));
    assert_null(strstr(b.data, "smqd_subscriptions"));
    buf_free(&b);
    op_release(&op);
}

/* The per-topic families: exact text, a label escaped, every topic in
 * each family in order; the engine-wide dropped counter. */
static void test_admin_metrics_topics(void **state)
{
    struct smq_op op;
    struct admin_metrics_input in = {0};
    struct smq_buf b;
    struct smq_topic_stats *t;

    (void)state;
    fake_stats(&op);
    t = calloc(2, sizeof *t);
    assert_non_null(t);
    op.stats.topics = t;                 /* op_release frees it */
    op.stats.n_topics = 2;
    t[0] = (struct smq_topic_stats){.published = 5, .delivered = 7, .failed = 3, .dead = 1,
                                    .pending = 4, .retrying = 2, .http_pending = 1,
                                    .messages = 2};
    snprintf(t[0].name, sizeof t[0].name, "a\"b");
    snprintf(t[1].name, sizeof t[1].name, "orders");
    t[1].published = 9;
    t[1].rejected = 2;
    t[1].push_latency_buckets[0] = 1;            /* <= 5 ms */
    t[1].push_latency_buckets[3] = 2;            /* <= 50 ms */
    t[1].push_latency_buckets[SMQ_PUSH_LATENCY_BUCKETS] = 1;   /* over 10 s */
    t[1].push_latency_us_sum = 12500000;
    t[1].push_latency_n = 4;
    op.stats.totals.notifications_dropped = 6;
    in.version = "1";
    in.stats = &op;
    in.db_bytes = in.wal_bytes = -1;
    buf_init(&b);
    admin_metrics_render(&in, &b);
    assert_false(buf_failed(&b));
    assert_non_null(strstr(b.data,
        "# HELP smqd_topic_notifications_dropped_total Notifications given up with no "
        "dead-letter queue to take them, of every topic.\n"
        "# TYPE smqd_topic_notifications_dropped_total counter\n"
        "smqd_topic_notifications_dropped_total 6\n"));
    assert_non_null(strstr(b.data,
        "# HELP smqd_topic_messages_published_total Messages published to a topic.\n"
        "# TYPE smqd_topic_messages_published_total counter\n"
        "smqd_topic_messages_published_total{topic=\"a\\\"b\"} 5\n"
        "smqd_topic_messages_published_total{topic=\"orders\"} 9\n"
        "# HELP smqd_topic_notifications_delivered_total Notifications of a topic delivered, "
        "over its subscriptions.\n"
        "# TYPE smqd_topic_notifications_delivered_total counter\n"
        "smqd_topic_notifications_delivered_total{topic=\"a\\\"b\"} 7\n"
        "smqd_topic_notifications_delivered_total{topic=\"orders\"} 0\n"
        "# HELP smqd_topic_notification_failures_total Delivery attempts of a topic's "
        "notifications that failed (each retried or given up).\n"
        "# TYPE smqd_topic_notification_failures_total counter\n"
        "smqd_topic_notification_failures_total{topic=\"a\\\"b\"} 3\n"
        "smqd_topic_notification_failures_total{topic=\"orders\"} 0\n"
        "# HELP smqd_topic_notifications_given_up_total Notifications of a topic given up: "
        "moved to their subscription's dead-letter queue, or dropped.\n"
        "# TYPE smqd_topic_notifications_given_up_total counter\n"
        "smqd_topic_notifications_given_up_total{topic=\"a\\\"b\"} 1\n"
        "smqd_topic_notifications_given_up_total{topic=\"orders\"} 0\n"
        "# HELP smqd_topic_notifications_pending Notifications of a topic not yet delivered "
        "or given up.\n"
        "# TYPE smqd_topic_notifications_pending gauge\n"
        "smqd_topic_notifications_pending{topic=\"a\\\"b\"} 4\n"
        "smqd_topic_notifications_pending{topic=\"orders\"} 0\n"
        "# HELP smqd_topic_notifications_retrying Pending notifications of a topic with a "
        "failed attempt, waiting for the next.\n"
        "# TYPE smqd_topic_notifications_retrying gauge\n"
        "smqd_topic_notifications_retrying{topic=\"a\\\"b\"} 2\n"
        "smqd_topic_notifications_retrying{topic=\"orders\"} 0\n"
        "# HELP smqd_topic_http_backlog Pending notifications of a topic's HTTP "
        "subscriptions.\n"
        "# TYPE smqd_topic_http_backlog gauge\n"
        "smqd_topic_http_backlog{topic=\"a\\\"b\"} 1\n"
        "smqd_topic_http_backlog{topic=\"orders\"} 0\n"
        "# HELP smqd_topic_messages Published messages of a topic kept for their pending "
        "notifications.\n"
        "# TYPE smqd_topic_messages gauge\n"
        "smqd_topic_messages{topic=\"a\\\"b\"} 2\n"
        "smqd_topic_messages{topic=\"orders\"} 0\n"
        "# HELP smqd_topic_push_rejected_total HTTP push attempts of a topic's notifications "
        "answered 403 (the endpoint did not accept the signature), also counted as failures.\n"
        "# TYPE smqd_topic_push_rejected_total counter\n"
        "smqd_topic_push_rejected_total{topic=\"a\\\"b\"} 0\n"
        "smqd_topic_push_rejected_total{topic=\"orders\"} 2\n"
        "# HELP smqd_topic_push_latency_seconds Time from the start of a topic's HTTP push "
        "attempt to its outcome.\n"
        "# TYPE smqd_topic_push_latency_seconds histogram\n"));
    /* The histogram's buckets are cumulative, with +Inf, sum and count. */
    assert_non_null(strstr(b.data,
        "smqd_topic_push_latency_seconds_bucket{topic=\"orders\",le=\"0.005\"} 1\n"
        "smqd_topic_push_latency_seconds_bucket{topic=\"orders\",le=\"0.01\"} 1\n"
        "smqd_topic_push_latency_seconds_bucket{topic=\"orders\",le=\"0.025\"} 1\n"
        "smqd_topic_push_latency_seconds_bucket{topic=\"orders\",le=\"0.05\"} 3\n"));
    assert_non_null(strstr(b.data,
        "smqd_topic_push_latency_seconds_bucket{topic=\"orders\",le=\"10\"} 3\n"
        "smqd_topic_push_latency_seconds_bucket{topic=\"orders\",le=\"+Inf\"} 4\n"
        "smqd_topic_push_latency_seconds_sum{topic=\"orders\"} 12.500000\n"
        "smqd_topic_push_latency_seconds_count{topic=\"orders\"} 4\n"));
    /* No topics: the families are still there, with no samples. */
    buf_reset(&b);
    op.stats.n_topics = 0;
    admin_metrics_render(&in, &b);
    assert_non_null(strstr(b.data, "# TYPE smqd_topic_notifications_retrying gauge\n"
                                   "# HELP smqd_topic_http_backlog"));
    assert_null(strstr(b.data, "{topic="));
    buf_free(&b);
    op_release(&op);
}

static void test_json_escaping(void **state)
{
    struct smq_buf b;
    /* quote, backslash, control, DEL, valid 2- and 4-byte UTF-8, then invalid:
     * a lone continuation byte, an overlong '/', a surrogate, a cut sequence. */
    static const char in[] = "\"\\\x01\x7f\xc3\xbc\xf0\x9f\x98\x80\x80\xc0\xaf\xed\xa0\x80\xe2\x82";

    (void)state;
    buf_init(&b);
    json_str(&b, in, sizeof in - 1);
    assert_string_equal(b.data, "\"\\\"\\\\\\u0001\\u007f\xc3\xbc\xf0\x9f\x98\x80"
                                "\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\"");
    buf_reset(&b);
    json_str(&b, "a\0b", 3);
    assert_string_equal(b.data, "\"a\\u0000b\"");
    buf_reset(&b);
    json_seconds(&b, 1234567);
    assert_string_equal(b.data, "1234.567");
    buf_free(&b);
}

/* Every job kind has its full row in admin_api.c's table. */
static void test_admin_api_every_job_has_a_row(void **state)
{
    (void)state;
    for (int k = 0; k < ADMIN_JOB__COUNT; k++)
        assert_true(admin_api_has_job((enum admin_job_kind)k));
    assert_false(admin_api_has_job(ADMIN_JOB__COUNT));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_admin_api_routes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_admin_api_strict_numbers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_admin_api_set, setup, teardown),
        cmocka_unit_test_setup_teardown(test_admin_api_render_queue, setup, teardown),
        cmocka_unit_test_setup_teardown(test_admin_api_topic_routes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_admin_api_render_topics, setup, teardown),
        cmocka_unit_test_setup_teardown(test_admin_api_render_subscriptions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_admin_api_topic_errors, setup, teardown),
        cmocka_unit_test(test_admin_metrics_exposition),
        cmocka_unit_test(test_admin_metrics_topics),
        cmocka_unit_test(test_json_escaping),
        cmocka_unit_test(test_admin_api_every_job_has_a_row),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
