/*
 * test_metrics.c — unit tests for metrics.c: the exact Prometheus text for
 * no traffic and for known requests (status table, "other", histogram
 * bounds inclusive and cumulative, +Inf, sums, the in-flight gauge, the
 * throttle counters), a NULL object ignored on the request path, and
 * updates from several threads adding up exactly.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "smqd/metrics.h"

#define HELP_REQUESTS \
    "# HELP smqd_http_requests_total MNS API requests answered, by action and HTTP status.\n" \
    "# TYPE smqd_http_requests_total counter\n"
#define HELP_DURATION \
    "# HELP smqd_http_request_duration_seconds Time from request line to response, by " \
    "action; receives include their long-poll wait.\n" \
    "# TYPE smqd_http_request_duration_seconds histogram\n"
#define HELP_IN_FLIGHT \
    "# HELP smqd_http_requests_in_flight MNS API requests begun and not yet answered " \
    "(parked long polls included).\n" \
    "# TYPE smqd_http_requests_in_flight gauge\n"
#define HELP_THROTTLED \
    "# HELP smqd_throttled_requests_total Requests refused with QpsLimitExceeded, by the " \
    "limit that refused them.\n" \
    "# TYPE smqd_throttled_requests_total counter\n"
#define CONNS(open, total, per_ip) \
    "# HELP smqd_connections_open MNS API connections open (each waiting long poll holds " \
    "one); at [limits] max_connections new ones wait to be accepted.\n" \
    "# TYPE smqd_connections_open gauge\n" \
    "smqd_connections_open " open "\n" \
    "# HELP smqd_connections_refused_total New connections closed at once, by the cap that " \
    "refused them.\n" \
    "# TYPE smqd_connections_refused_total counter\n" \
    "smqd_connections_refused_total{cap=\"max_connections\"} " total "\n" \
    "smqd_connections_refused_total{cap=\"max_connections_per_ip\"} " per_ip "\n"
#define HELP_DENIED \
    "# HELP smqd_access_denied_total Requests refused with AccessDenied because the access " \
    "key has no grant for them, by access key id and action.\n" \
    "# TYPE smqd_access_denied_total counter\n"

/* The 16 _bucket rows of one action: the cumulative counts for le 0.0005 … 30, then +Inf. */
#define BUCKETS(action, c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11, c12, c13, c14, inf) \
    "smqd_http_request_duration_seconds_bucket{action=\"" action "\",le=\"0.0005\"} " c0 "\n" \
    "smqd_http_request_duration_seconds_bucket{action=\"" action "\",le=\"0.001\"} " c1 "\n" \
    "smqd_http_request_duration_seconds_bucket{action=\"" action "\",le=\"0.0025\"} " c2 "\n" \
    "smqd_http_request_duration_seconds_bucket{action=\"" action "\",le=\"0.005\"} " c3 "\n" \
    "smqd_http_request_duration_seconds_bucket{action=\"" action "\",le=\"0.01\"} " c4 "\n" \
    "smqd_http_request_duration_seconds_bucket{action=\"" action "\",le=\"0.025\"} " c5 "\n" \
    "smqd_http_request_duration_seconds_bucket{action=\"" action "\",le=\"0.05\"} " c6 "\n" \
    "smqd_http_request_duration_seconds_bucket{action=\"" action "\",le=\"0.1\"} " c7 "\n" \
    "smqd_http_request_duration_seconds_bucket{action=\"" action "\",le=\"0.25\"} " c8 "\n" \
    "smqd_http_request_duration_seconds_bucket{action=\"" action "\",le=\"0.5\"} " c9 "\n" \
    "smqd_http_request_duration_seconds_bucket{action=\"" action "\",le=\"1\"} " c10 "\n" \
    "smqd_http_request_duration_seconds_bucket{action=\"" action "\",le=\"2.5\"} " c11 "\n" \
    "smqd_http_request_duration_seconds_bucket{action=\"" action "\",le=\"5\"} " c12 "\n" \
    "smqd_http_request_duration_seconds_bucket{action=\"" action "\",le=\"10\"} " c13 "\n" \
    "smqd_http_request_duration_seconds_bucket{action=\"" action "\",le=\"30\"} " c14 "\n" \
    "smqd_http_request_duration_seconds_bucket{action=\"" action "\",le=\"+Inf\"} " inf "\n"

static void assert_renders(struct smq_metrics *m, const char *want)
{
    struct smq_buf out;

    buf_init(&out);
    assert_int_equal(metrics_render(m, &out), 0);
    assert_non_null(out.data);
    assert_string_equal(out.data, want);
    buf_free(&out);
}

static void test_metrics_empty(void **state)
{
    struct smq_metrics *m = metrics_new();

    (void)state;
    assert_non_null(m);
    assert_renders(m, HELP_REQUESTS HELP_DURATION HELP_IN_FLIGHT
                   "smqd_http_requests_in_flight 0\n"
                   HELP_THROTTLED
                   "smqd_throttled_requests_total{scope=\"queue\"} 0\n"
                   "smqd_throttled_requests_total{scope=\"access_key\"} 0\n"
                   CONNS("0", "0", "0")
                   HELP_DENIED);
    metrics_free(m);
}

static void test_metrics_known_requests(void **state)
{
    struct smq_metrics *m = metrics_new();

    (void)state;
    for (int i = 0; i < 5; i++)
        metrics_request_started(m);
    metrics_request_done(m, MNS_SEND_MESSAGE, 201, 300);
    metrics_request_done(m, MNS_SEND_MESSAGE, 201, 1500);
    metrics_request_done(m, MNS_RECEIVE_MESSAGE, 404, 30000001);   /* above 30 s */
    metrics_request_done(m, MNS_UNKNOWN, 403, 500);                /* le is inclusive */
    metrics_throttled(m, SMQ_LIMIT_QUEUE);
    metrics_throttled(m, SMQ_LIMIT_QUEUE);
    metrics_throttled(m, SMQ_LIMIT_NONE);                          /* not a scope: ignored */
    metrics_connection_refused(m, CONNLIMIT_OVER_TOTAL);
    metrics_connection_refused(m, CONNLIMIT_OVER_PER_IP);
    metrics_connection_refused(m, CONNLIMIT_OVER_PER_IP);
    metrics_connection_refused(m, CONNLIMIT_ADMITTED);             /* not a refusal: ignored */
    metrics_connections_open(m, 1);
    metrics_connections_open(m, 1);
    metrics_connections_open(m, 1);
    metrics_connections_open(m, -1);
    assert_renders(m,
        HELP_REQUESTS
        "smqd_http_requests_total{action=\"-\",code=\"403\"} 1\n"
        "smqd_http_requests_total{action=\"SendMessage\",code=\"201\"} 2\n"
        "smqd_http_requests_total{action=\"ReceiveMessage\",code=\"404\"} 1\n"
        HELP_DURATION
        BUCKETS("-", "1", "1", "1", "1", "1", "1", "1", "1", "1", "1", "1", "1", "1", "1", "1",
                "1")
        "smqd_http_request_duration_seconds_sum{action=\"-\"} 0.000500\n"
        "smqd_http_request_duration_seconds_count{action=\"-\"} 1\n"
        BUCKETS("SendMessage", "1", "1", "2", "2", "2", "2", "2", "2", "2", "2", "2", "2", "2",
                "2", "2", "2")
        "smqd_http_request_duration_seconds_sum{action=\"SendMessage\"} 0.001800\n"
        "smqd_http_request_duration_seconds_count{action=\"SendMessage\"} 2\n"
        BUCKETS("ReceiveMessage", "0", "0", "0", "0", "0", "0", "0", "0", "0", "0", "0", "0",
                "0", "0", "0", "1")
        "smqd_http_request_duration_seconds_sum{action=\"ReceiveMessage\"} 30.000001\n"
        "smqd_http_request_duration_seconds_count{action=\"ReceiveMessage\"} 1\n"
        HELP_IN_FLIGHT
        "smqd_http_requests_in_flight 1\n"
        HELP_THROTTLED
        "smqd_throttled_requests_total{scope=\"queue\"} 2\n"
        "smqd_throttled_requests_total{scope=\"access_key\"} 0\n"
        CONNS("2", "1", "2")
        HELP_DENIED);
    metrics_free(m);
}

/* Statuses outside the table, and no response at all, are "other"; an
 * action out of range counts as "-". */
static void test_metrics_other_status_and_bad_action(void **state)
{
    struct smq_metrics *m = metrics_new();
    struct smq_buf out;

    (void)state;
    for (int i = 0; i < 4; i++)
        metrics_request_started(m);
    metrics_request_done(m, MNS_DELETE_MESSAGE, 0, 10);
    metrics_request_done(m, MNS_DELETE_MESSAGE, 302, 10);
    metrics_request_done(m, MNS_DELETE_MESSAGE, 429, 10);
    metrics_request_done(m, (enum mns_action)(MNS__ACTION_COUNT + 3), 500, 10);
    buf_init(&out);
    assert_int_equal(metrics_render(m, &out), 0);
    assert_non_null(strstr(out.data,
        "smqd_http_requests_total{action=\"DeleteMessage\",code=\"429\"} 1\n"
        "smqd_http_requests_total{action=\"DeleteMessage\",code=\"other\"} 2\n"));
    assert_non_null(strstr(out.data, "smqd_http_requests_total{action=\"-\",code=\"500\"} 1\n"));
    assert_non_null(strstr(out.data, "smqd_http_requests_in_flight 0\n"));
    buf_free(&out);
    metrics_free(m);
}

static void test_metrics_null_is_ignored(void **state)
{
    (void)state;
    metrics_request_started(NULL);
    metrics_request_done(NULL, MNS_SEND_MESSAGE, 201, 1);
    metrics_throttled(NULL, SMQ_LIMIT_QUEUE);
    metrics_access_denied(NULL, "team-a", MNS_SEND_MESSAGE);
    metrics_free(NULL);
}

/* Denials: a row per (key, action) in the order first seen; a key id too
 * long for a row, or past the table's rows, lands in the shared row. */
static void test_metrics_access_denied(void **state)
{
    struct smq_metrics *m = metrics_new();
    struct smq_buf out;
    char id[160];

    (void)state;
    metrics_access_denied(m, "team-a", MNS_RECEIVE_MESSAGE);
    metrics_access_denied(m, "team-b", MNS_LIST_QUEUE);
    metrics_access_denied(m, "team-a", MNS_RECEIVE_MESSAGE);
    metrics_access_denied(m, "team-a", MNS_DELETE_QUEUE);
    metrics_access_denied(m, NULL, MNS_DELETE_QUEUE);            /* unauthenticated: not a denial */
    buf_init(&out);
    assert_int_equal(metrics_render(m, &out), 0);
    assert_non_null(strstr(out.data, HELP_DENIED
        "smqd_access_denied_total{access_key_id=\"team-a\",action=\"ReceiveMessage\"} 2\n"
        "smqd_access_denied_total{access_key_id=\"team-b\",action=\"ListQueue\"} 1\n"
        "smqd_access_denied_total{access_key_id=\"team-a\",action=\"DeleteQueue\"} 1\n"));
    buf_free(&out);
    memset(id, 'k', sizeof id - 1);
    id[sizeof id - 1] = '\0';
    metrics_access_denied(m, id, MNS_SEND_MESSAGE);
    for (int i = 0; i < 300; i++) {
        snprintf(id, sizeof id, "key-%d", i);
        metrics_access_denied(m, id, MNS_SEND_MESSAGE);
    }
    buf_init(&out);
    assert_int_equal(metrics_render(m, &out), 0);
    assert_non_null(strstr(out.data, "{access_key_id=\"(other)\",action=\"SendMessage\"} 1\n"));
    assert_non_null(strstr(out.data, "{access_key_id=\"key-250\",action=\"SendMessage\"} 1\n"));
    assert_null(strstr(out.data, "\"key-251\""));
    /* Four rows were taken before key-0, so key-251 on share the last one. */
    assert_non_null(strstr(out.data, "{access_key_id=\"(other)\",action=\"-\"} 49\n"));
    buf_free(&out);
    metrics_free(m);
}

#define N_THREADS 4
#define PER_THREAD 25000

static void *worker(void *arg)
{
    struct smq_metrics *m = arg;

    for (int i = 0; i < PER_THREAD; i++) {
        metrics_request_started(m);
        metrics_request_started(m);
        metrics_request_done(m, MNS_SEND_MESSAGE, 201, 1000);
        metrics_request_done(m, MNS_DELETE_MESSAGE, 204, 7);
        metrics_throttled(m, SMQ_LIMIT_ACCESS_KEY);
    }
    return NULL;
}

static void test_metrics_concurrent_updates_sum(void **state)
{
    struct smq_metrics *m = metrics_new();
    pthread_t threads[N_THREADS];
    struct smq_buf out;
    static const char *const want[] = {
        "smqd_http_requests_total{action=\"SendMessage\",code=\"201\"} 100000\n",
        "smqd_http_requests_total{action=\"DeleteMessage\",code=\"204\"} 100000\n",
        "smqd_http_request_duration_seconds_bucket{action=\"SendMessage\",le=\"0.0005\"} 0\n",
        "smqd_http_request_duration_seconds_bucket{action=\"SendMessage\",le=\"0.001\"} 100000\n",
        "smqd_http_request_duration_seconds_sum{action=\"SendMessage\"} 100.000000\n",
        "smqd_http_request_duration_seconds_count{action=\"SendMessage\"} 100000\n",
        "smqd_http_request_duration_seconds_sum{action=\"DeleteMessage\"} 0.700000\n",
        "smqd_http_request_duration_seconds_count{action=\"DeleteMessage\"} 100000\n",
        "smqd_http_requests_in_flight 0\n",
        "smqd_throttled_requests_total{scope=\"access_key\"} 100000\n",
    };

    (void)state;
    for (int i = 0; i < N_THREADS; i++)
        assert_int_equal(pthread_create(&threads[i], NULL, worker, m), 0);
    for (int i = 0; i < N_THREADS; i++)
        pthread_join(threads[i], NULL);
    buf_init(&out);
    assert_int_equal(metrics_render(m, &out), 0);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (strstr(out.data, want[i]) == NULL)
            fail_msg("missing line: %s\nin:\n%s", want[i], out.data);
    buf_free(&out);
    metrics_free(m);
}

/* WAL flushes: no rows before the first (sync = normal has none), then a
 * histogram with its own bounds and the failure counter. */
static void test_metrics_wal_flushes(void **state)
{
    struct smq_metrics *m = metrics_new();
    struct smq_buf out;

    (void)state;
    assert_non_null(m);
    buf_init(&out);
    assert_int_equal(metrics_render(m, &out), 0);
    assert_null(strstr(out.data, "smqd_wal_flush"));
    metrics_wal_flush(m, 80, false);
    metrics_wal_flush(m, 250, false);                   /* le is inclusive */
    metrics_wal_flush(m, 2000000, true);                /* above the last bound */
    buf_reset(&out);
    assert_int_equal(metrics_render(m, &out), 0);
    assert_non_null(strstr(out.data,
        "# TYPE smqd_wal_flush_duration_seconds histogram\n"
        "smqd_wal_flush_duration_seconds_bucket{le=\"0.0001\"} 1\n"
        "smqd_wal_flush_duration_seconds_bucket{le=\"0.00025\"} 2\n"
        "smqd_wal_flush_duration_seconds_bucket{le=\"0.0005\"} 2\n"));
    assert_non_null(strstr(out.data,
        "smqd_wal_flush_duration_seconds_bucket{le=\"1\"} 2\n"
        "smqd_wal_flush_duration_seconds_bucket{le=\"+Inf\"} 3\n"
        "smqd_wal_flush_duration_seconds_sum 2.000330\n"
        "smqd_wal_flush_duration_seconds_count 3\n"));
    assert_non_null(strstr(out.data, "# TYPE smqd_wal_flush_failures_total counter\n"
                                     "smqd_wal_flush_failures_total 1\n"));
    buf_free(&out);
    metrics_wal_flush(NULL, 10, true);                  /* accepted, counts nothing */
    metrics_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metrics_empty),
        cmocka_unit_test(test_metrics_wal_flushes),
        cmocka_unit_test(test_metrics_known_requests),
        cmocka_unit_test(test_metrics_other_status_and_bad_action),
        cmocka_unit_test(test_metrics_null_is_ignored),
        cmocka_unit_test(test_metrics_access_denied),
        cmocka_unit_test(test_metrics_concurrent_updates_sum),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
