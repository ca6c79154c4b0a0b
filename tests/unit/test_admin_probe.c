/*
 * test_admin_probe.c — unit tests for what the admin listener's probes
 * answer (src/admin/admin_probe.c): /health, /ready in every state with no
 * statistics op, a successful one and a failed one (failed = broken), and
 * /metrics without a snapshot (process families, smqd_engine_up 0), with
 * one (engine and per-queue families), with a failed or broken one, and
 * the extra families callback, whose failure marks the body failed.
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

#include "smqd/admin_api.h"
#include "smqd/admin_probe.h"
#include "smqd/buf.h"
#include "smqd/errors.h"
#include "smqd/op.h"

#define TEXT_CT "text/plain; charset=utf-8"
#define METRICS_CT "text/plain; version=0.0.4; charset=utf-8"

struct fixture {
    struct admin_reply r;
    struct smq_op op;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);

    if (f == NULL)
        return -1;
    admin_reply_init(&f->r);
    /* Something left from an earlier answer: every probe replaces it. */
    buf_puts(&f->r.body, "stale body\n");
    f->r.status = 299;
    op_init(&f->op, SMQ_OP_STATS);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    op_release(&f->op);
    admin_reply_free(&f->r);
    free(f);
    return 0;
}

static const char *body(const struct fixture *f)
{
    return f->r.body.data != NULL ? f->r.body.data : "";
}

static void assert_text(const struct fixture *f, int status, const char *text)
{
    assert_int_equal(f->r.status, status);
    assert_non_null(f->r.content_type);
    assert_string_equal(f->r.content_type, TEXT_CT);
    assert_int_equal(f->r.body.len, strlen(text));
    assert_string_equal(body(f), text);
}

/* line appears in the body as a whole line. */
static void assert_line(const struct fixture *f, const char *line)
{
    const char *b = body(f), *p = b;
    size_t n = strlen(line);

    while ((p = strstr(p, line)) != NULL) {
        if ((p == b || p[-1] == '\n') && p[n] == '\n')
            return;
        p++;
    }
    fail_msg("line \"%s\" not in:\n%s", line, b);
}

static void assert_no_text(const struct fixture *f, const char *text)
{
    if (strstr(body(f), text) != NULL)
        fail_msg("\"%s\" unexpectedly in:\n%s", text, body(f));
}

/* A finished STATS op for every queue, as the engine answers it. */
static void fill_stats(struct smq_op *op)
{
    struct smq_queue_stats *q = calloc(2, sizeof *q);

    assert_non_null(q);
    snprintf(q[0].info.name, sizeof q[0].info.name, "alpha");
    q[0].info.n_active = 3;
    q[0].info.n_inactive = 2;
    q[0].info.n_delayed = 1;
    q[0].sent = 11;
    q[0].waiters = 4;
    snprintf(q[1].info.name, sizeof q[1].info.name, "beta");
    q[1].sent = 7;
    q[1].dead_lettered = 5;
    q[1].redrive_pending = 9;
    op->stats.queues = q;
    op->stats.n_queues = 2;
    op->stats.totals.queues = 2;
    op->stats.totals.messages = 6;
    op->stats.totals.waiters = 4;
    op->stats.totals.reloads = 1;
    op->stats.totals.free_pages = 3;
    op->stats.totals.page_size = 4096;
}

static struct admin_probe_facts facts_ready(void)
{
    struct admin_probe_facts facts = {.start_time_ms = 1700000000123, .ready = true,
                                      .db_bytes = -1, .wal_bytes = -1};
    return facts;
}

/* ---- /health ------------------------------------------------------------- */

static void test_admin_probe_health(void **state)
{
    struct fixture *f = *state;

    admin_probe_health(&f->r);
    assert_text(f, 200, "ok\n");
}

/* ---- /ready ---------------------------------------------------------------- */

static void test_admin_probe_ready_early_starting_draining(void **state)
{
    struct fixture *f = *state;

    assert_true(admin_probe_ready_early(ADMIN_STARTING, &f->r));
    assert_text(f, 503, "starting\n");
    assert_true(admin_probe_ready_early(ADMIN_DRAINING, &f->r));
    assert_text(f, 503, "draining\n");
}

/* READY needs the engine: nothing is answered yet, the reply untouched. */
static void test_admin_probe_ready_early_ready_asks_engine(void **state)
{
    struct fixture *f = *state;

    assert_false(admin_probe_ready_early(ADMIN_READY, &f->r));
    assert_int_equal(f->r.status, 299);
    assert_string_equal(body(f), "stale body\n");
}

static void test_admin_probe_ready_engine_answered(void **state)
{
    struct fixture *f = *state;

    admin_probe_ready(ADMIN_READY, &f->op, &f->r);
    assert_text(f, 200, "ready\n");
}

/* No answer in time: broken. */
static void test_admin_probe_ready_no_answer_is_broken(void **state)
{
    struct fixture *f = *state;

    admin_probe_ready(ADMIN_READY, NULL, &f->r);
    assert_text(f, 503, "broken\n");
}

/* The engine refusing the op (it could not reload its state): broken. */
static void test_admin_probe_ready_failed_op_is_broken(void **state)
{
    struct fixture *f = *state;

    op_fail(&f->op, SMQ_E_INTERNAL, NULL);
    admin_probe_ready(ADMIN_READY, &f->op, &f->r);
    assert_text(f, 503, "broken\n");
    op_init(&f->op, SMQ_OP_STATS);
    op_fail(&f->op, SMQ_E_SERVICE_UNAVAILABLE, NULL);
    admin_probe_ready(ADMIN_READY, &f->op, &f->r);
    assert_text(f, 503, "broken\n");
}

/* Draining wins over whatever the engine said. */
static void test_admin_probe_ready_draining_any_answer(void **state)
{
    struct fixture *f = *state;

    admin_probe_ready(ADMIN_DRAINING, &f->op, &f->r);
    assert_text(f, 503, "draining\n");
    admin_probe_ready(ADMIN_DRAINING, NULL, &f->r);
    assert_text(f, 503, "draining\n");
    op_fail(&f->op, SMQ_E_INTERNAL, NULL);
    admin_probe_ready(ADMIN_DRAINING, &f->op, &f->r);
    assert_text(f, 503, "draining\n");
}

/* Not yet ready is never 200, even when the engine answered. */
static void test_admin_probe_ready_starting_never_ready(void **state)
{
    struct fixture *f = *state;

    admin_probe_ready(ADMIN_STARTING, &f->op, &f->r);
    assert_int_equal(f->r.status, 503);
    assert_string_not_equal(body(f), "ready\n");
    admin_probe_ready(ADMIN_STARTING, NULL, &f->r);
    assert_int_equal(f->r.status, 503);
    assert_string_not_equal(body(f), "ready\n");
}

/* A standby on PostgreSQL: 503 "standby" before and after asking the
 * engine, whatever it answered (a node whose lease proof ran out while its
 * engine still runs must not look ready). */
static void test_admin_probe_ready_standby_never_ready(void **state)
{
    struct fixture *f = *state;

    assert_true(admin_probe_ready_early(ADMIN_STANDBY, &f->r));
    assert_text(f, 503, "standby\n");
    admin_probe_ready(ADMIN_STANDBY, &f->op, &f->r);
    assert_text(f, 503, "standby\n");
    admin_probe_ready(ADMIN_STANDBY, NULL, &f->r);
    assert_text(f, 503, "standby\n");
}

/* ---- /metrics ---------------------------------------------------------------- */

static void test_admin_probe_metrics_without_snapshot(void **state)
{
    struct fixture *f = *state;
    struct admin_probe_facts facts = facts_ready();

    admin_probe_metrics(&facts, NULL, &f->r);
    assert_int_equal(f->r.status, 200);
    assert_string_equal(f->r.content_type, METRICS_CT);
    assert_false(buf_failed(&f->r.body));
    assert_no_text(f, "stale body");
    assert_line(f, "# TYPE smqd_build_info gauge");
    assert_line(f, "smqd_build_info{version=\"" SMQD_VERSION "\"} 1");
    assert_line(f, "smqd_start_time_seconds 1700000000.123");
    assert_line(f, "# TYPE smqd_engine_up gauge");
    assert_line(f, "smqd_engine_up 0");
    /* Ready is what /ready would answer: not without the engine. */
    assert_line(f, "smqd_ready 0");
    /* Only the process families; unknown file sizes are left out. */
    assert_no_text(f, "smqd_queues");
    assert_no_text(f, "smqd_queue_messages");
    assert_no_text(f, "smqd_messages_sent_total");
    assert_no_text(f, "smqd_db_bytes");
    assert_no_text(f, "smqd_wal_bytes");
}

static void test_admin_probe_metrics_file_sizes(void **state)
{
    struct fixture *f = *state;
    struct admin_probe_facts facts = facts_ready();

    facts.db_bytes = 8192;
    facts.wal_bytes = 0;
    admin_probe_metrics(&facts, NULL, &f->r);
    assert_line(f, "smqd_db_bytes 8192");
    assert_line(f, "smqd_wal_bytes 0");
}

/* The read-only token's refusals are a process family: counted while the
 * engine is away too. */
static void test_admin_probe_metrics_denied(void **state)
{
    struct fixture *f = *state;
    struct admin_probe_facts facts = facts_ready();

    admin_probe_metrics(&facts, NULL, &f->r);
    assert_line(f, "# TYPE smqd_admin_denied_total counter");
    assert_line(f, "smqd_admin_denied_total 0");
    facts.admin_denied = 7;
    admin_probe_metrics(&facts, NULL, &f->r);
    assert_line(f, "smqd_admin_denied_total 7");
}

static void test_admin_probe_metrics_with_snapshot(void **state)
{
    struct fixture *f = *state;
    struct admin_probe_facts facts = facts_ready();

    fill_stats(&f->op);
    admin_probe_metrics(&facts, &f->op, &f->r);
    assert_int_equal(f->r.status, 200);
    assert_string_equal(f->r.content_type, METRICS_CT);
    assert_false(buf_failed(&f->r.body));
    assert_line(f, "smqd_engine_up 1");
    assert_line(f, "smqd_ready 1");
    assert_line(f, "smqd_queues 2");
    assert_line(f, "smqd_long_poll_waiters 4");
    assert_line(f, "smqd_engine_reloads_total 1");
    assert_line(f, "# TYPE smqd_engine_reloads_total counter");
    assert_line(f, "smqd_db_free_bytes 12288");
    assert_line(f, "# TYPE smqd_queue_messages gauge");
    assert_line(f, "smqd_queue_messages{queue=\"alpha\",state=\"active\"} 3");
    assert_line(f, "smqd_queue_messages{queue=\"alpha\",state=\"inactive\"} 2");
    assert_line(f, "smqd_queue_messages{queue=\"alpha\",state=\"delayed\"} 1");
    assert_line(f, "smqd_queue_messages{queue=\"beta\",state=\"active\"} 0");
    assert_line(f, "# TYPE smqd_messages_sent_total counter");
    assert_line(f, "smqd_messages_sent_total{queue=\"alpha\"} 11");
    assert_line(f, "smqd_messages_sent_total{queue=\"beta\"} 7");
    assert_line(f, "smqd_messages_dead_lettered_total{queue=\"beta\"} 5");
    assert_line(f, "smqd_queue_redrive_pending{queue=\"beta\"} 9");
    assert_line(f, "smqd_queue_long_poll_waiters{queue=\"alpha\"} 4");
    /* An empty queue's oldest message has age 0. */
    assert_line(f, "smqd_queue_oldest_message_age_seconds{queue=\"beta\"} 0.000");
}

/* The listener not READY: the snapshot is shown, smqd_ready stays 0. */
static void test_admin_probe_metrics_not_ready_with_snapshot(void **state)
{
    struct fixture *f = *state;
    struct admin_probe_facts facts = facts_ready();

    facts.ready = false;
    fill_stats(&f->op);
    admin_probe_metrics(&facts, &f->op, &f->r);
    assert_line(f, "smqd_engine_up 1");
    assert_line(f, "smqd_ready 0");
    assert_line(f, "smqd_queues 2");
}

/* A failed op, or totals saying the engine is broken, is no snapshot. */
static void test_admin_probe_metrics_failed_or_broken_op(void **state)
{
    struct fixture *f = *state;
    struct admin_probe_facts facts = facts_ready();

    fill_stats(&f->op);
    f->op.result.err = SMQ_E_INTERNAL;
    admin_probe_metrics(&facts, &f->op, &f->r);
    assert_line(f, "smqd_engine_up 0");
    assert_line(f, "smqd_ready 0");
    assert_no_text(f, "smqd_queues");
    assert_no_text(f, "alpha");

    f->op.result.err = 0;
    f->op.stats.totals.broken = true;
    admin_probe_metrics(&facts, &f->op, &f->r);
    assert_line(f, "smqd_engine_up 0");
    assert_line(f, "smqd_ready 0");
    assert_no_text(f, "smqd_queues");
}

struct extra_state {
    int calls;
    int rc;
    size_t len_at_call;          /* body length when called: smqd's families first */
};

static int extra_families(void *arg, struct smq_buf *out)
{
    struct extra_state *x = arg;

    x->calls++;
    x->len_at_call = out->len;
    buf_puts(out, "# TYPE mns_requests_total counter\nmns_requests_total 42\n");
    return x->rc;
}

static void test_admin_probe_metrics_extra_families(void **state)
{
    struct fixture *f = *state;
    struct admin_probe_facts facts = facts_ready();
    struct extra_state x = {.calls = 0, .rc = 0};
    const char *own, *extra;

    facts.extra = extra_families;
    facts.extra_arg = &x;
    fill_stats(&f->op);
    admin_probe_metrics(&facts, &f->op, &f->r);
    assert_int_equal(x.calls, 1);
    assert_false(buf_failed(&f->r.body));
    assert_line(f, "mns_requests_total 42");
    /* Appended after smqd's own families, which were all written. */
    own = strstr(body(f), "smqd_queue_redrive_pending{queue=\"beta\"}");
    extra = strstr(body(f), "# TYPE mns_requests_total");
    assert_non_null(own);
    assert_non_null(extra);
    assert_true(own < extra);
    assert_int_equal((size_t)(extra - body(f)), x.len_at_call);
    assert_int_equal(f->r.status, 200);

    /* Called without a snapshot too. */
    admin_probe_metrics(&facts, NULL, &f->r);
    assert_int_equal(x.calls, 2);
    assert_line(f, "mns_requests_total 42");
}

static void test_admin_probe_metrics_extra_failure_marks_body(void **state)
{
    struct fixture *f = *state;
    struct admin_probe_facts facts = facts_ready();
    struct extra_state x = {.calls = 0, .rc = SMQ_E_NOMEM};

    facts.extra = extra_families;
    facts.extra_arg = &x;
    admin_probe_metrics(&facts, NULL, &f->r);
    assert_int_equal(x.calls, 1);
    assert_true(buf_failed(&f->r.body));
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_admin_probe_health),
        T(test_admin_probe_ready_early_starting_draining),
        T(test_admin_probe_ready_early_ready_asks_engine),
        T(test_admin_probe_ready_engine_answered),
        T(test_admin_probe_ready_no_answer_is_broken),
        T(test_admin_probe_ready_failed_op_is_broken),
        T(test_admin_probe_ready_draining_any_answer),
        T(test_admin_probe_ready_starting_never_ready),
        T(test_admin_probe_ready_standby_never_ready),
        T(test_admin_probe_metrics_without_snapshot),
        T(test_admin_probe_metrics_file_sizes),
        T(test_admin_probe_metrics_denied),
        T(test_admin_probe_metrics_with_snapshot),
        T(test_admin_probe_metrics_not_ready_with_snapshot),
        T(test_admin_probe_metrics_failed_or_broken_op),
        T(test_admin_probe_metrics_extra_families),
        T(test_admin_probe_metrics_extra_failure_marks_body),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
