/*
 * test_engine_admin.c — the engine's administration operations
 * (run_purge.h, run_stats.h, docs/admin-api.md), reached through the admin
 * listener and smqctl: purge (of a queue, its DLQ or both, whatever the messages'
 * states, on disk too) and statistics (per-queue lifetime counters, the
 * oldest EnqueueTime as messages move between queues and are purged, the
 * totals a health probe reads).  Giving the purged space back to the file
 * system is in test_engine_space.c; redrive, in test_engine_redrive.c.
 *
 * The engine runs synchronously on a fake clock over a real SQLite store,
 * as engine_fixture.h describes.
 */
#include "engine_fixture.h"

/* A purge takes every message of the queue, or of its DLQ, whatever its
 * state and on disk too; handles given out before name nothing; other
 * queues keep theirs; a queue without a DLQ has no DLQ to purge. */
static void test_engine_admin_purge(void **state)
{
    struct fx *f = *state;
    struct smq_msg_view v;
    uint64_t n = 0, n_dlq = 0, kept;

    assert_int_equal(fx_create_with_dlq(f, "dlq", NULL, 0, 30), 0);
    assert_int_equal(fx_create_with_dlq(f, "src", "dlq", 5, 30), 0);
    fx_create_queue_vis(f, "other", 30);
    fx_send_text(f, "src", "a", 0, 8);
    fx_send_text(f, "src", "b", 0, 8);
    fx_send_text(f, "src", "c", 100, 8);
    fx_send_text(f, "dlq", "d", 0, 8);
    kept = fx_send_text(f, "other", "e", 0, 8);
    assert_int_equal(fx_receive_one(f, "src", &v), 0);
    assert_int_equal(fx_purge(f, "other", false, true, &n, &n_dlq), SMQ_E_INVALID_ARGUMENT);
    assert_int_equal(fx_purge(f, "src", true, false, &n, &n_dlq), 0);
    assert_int_equal(n, 3);                  /* Active, Inactive and Delayed alike */
    assert_int_equal(n_dlq, 0);
    fx_assert_counts(f, "src", 0, 0, 0);
    fx_assert_counts(f, "dlq", 1, 0, 0);
    /* A handle given out before the purge names nothing now. */
    assert_int_equal(fx_delete_msg(f, "src", v.seq, v.handle_gen), SMQ_E_MESSAGE_NOT_EXIST);
    assert_int_equal(fx_purge(f, "src", false, true, &n, &n_dlq), 0);
    assert_int_equal(n_dlq, 1);
    fx_assert_counts(f, "dlq", 0, 0, 0);
    fx_reopen_engine(f, FX_MAX_QUEUES_DEFAULT);
    fx_assert_counts(f, "src", 0, 0, 0);
    assert_int_equal(db_peek_int(f->path, "SELECT count(*) FROM msg"), 1);
    assert_int_equal(db_peek_int(f->path, "SELECT count(*) FROM msg_body"), 1);
    assert_int_equal(fx_receive_one(f, "other", &v), 0);
    assert_true(v.seq == kept);
}

/* Per-queue statistics: the lifetime counters, the state counts and the
 * oldest EnqueueTime; every queue, sorted by name; a queue that does not
 * exist; and the totals alone, as a health probe asks for them. */
static void test_engine_admin_stats_counters_and_oldest(void **state)
{
    struct fx *f = *state;
    struct smq_queue_stats st;
    struct smq_msg_view v;
    struct smq_op op;
    int64_t first = fx_now_ms(f);

    fx_create_queue_vis(f, "b", 30);
    fx_create_queue_vis(f, "a", 30);
    fx_send_text(f, "b", "1", 0, 8);
    fx_tick(f, 500);
    fx_send_text(f, "b", "2", 0, 8);
    fx_send_text(f, "b", "3", 5, 8);
    assert_int_equal(fx_receive_one(f, "b", &v), 0);
    assert_int_equal(fx_delete_msg(f, "b", v.seq, v.handle_gen), 0);
    st = fx_queue_stats(f, "b");
    assert_int_equal(st.sent, 3);
    assert_int_equal(st.received, 1);
    assert_int_equal(st.deleted, 1);
    assert_int_equal(st.info.n_active, 1);
    assert_int_equal(st.info.n_delayed, 1);
    assert_int_equal(st.oldest_enqueue_ms, first + 500);
    /* Every queue, sorted by name; an empty queue has no oldest message. */
    fx_prep_op(f, &op, SMQ_OP_STATS, "");
    assert_int_equal(fx_run_one(f, &op), 0);
    assert_int_equal(op.stats.n_queues, 2);
    assert_string_equal(op.stats.queues[0].info.name, "a");
    assert_int_equal(op.stats.queues[0].oldest_enqueue_ms, 0);
    assert_string_equal(op.stats.queues[1].info.name, "b");
    assert_int_equal(op.stats.totals.queues, 2);
    assert_int_equal(op.stats.totals.messages, 2);
    if (!f->pg) {
        assert_true(op.stats.totals.page_size >= 512);
        assert_true(op.stats.totals.db_pages > 0);
    } else {                         /* no local file: its stats are all 0 (store.h) */
        assert_int_equal(op.stats.totals.page_size, 0);
        assert_int_equal(op.stats.totals.db_pages, 0);
    }
    op_release(&op);
    fx_prep_op(f, &op, SMQ_OP_STATS, "missing");
    assert_int_equal(fx_run_one(f, &op), SMQ_E_QUEUE_NOT_EXIST);
    op_release(&op);
    /* A health probe: the totals and nothing per queue. */
    fx_prep_op(f, &op, SMQ_OP_STATS, "");
    op.stats.totals_only = true;
    assert_int_equal(fx_run_one(f, &op), 0);
    assert_int_equal(op.stats.n_queues, 0);
    assert_null(op.stats.queues);
    assert_int_equal(op.stats.totals.queues, 2);
    op_release(&op);
}

/* The oldest EnqueueTime follows a message when it is dead-lettered and
 * redriven (it keeps its first EnqueueTime, older than what the target
 * holds), and a purge takes only the purged queue's messages. */
static void test_engine_admin_oldest_follows_moves_and_purge(void **state)
{
    struct fx *f = *state;
    struct smq_msg_view v;
    struct smq_op op;
    uint64_t n = 0, n_dlq = 0, poison;
    int64_t t0 = fx_now_ms(f);

    assert_int_equal(fx_create_with_dlq(f, "dlq", NULL, 0, 30), 0);
    assert_int_equal(fx_create_with_dlq(f, "src", "dlq", 1, 1), 0);
    fx_create_queue_vis(f, "other", 30);
    poison = fx_send_text(f, "src", "poison", 0, 8);
    fx_tick(f, 1000);
    fx_send_text(f, "dlq", "newer", 0, 8);
    fx_send_text(f, "other", "o", 0, 8);
    assert_int_equal(fx_queue_stats(f, "dlq").oldest_enqueue_ms, t0 + 1000);
    fx_receive_and_lapse(f, "src", poison, 1);
    assert_int_equal(fx_receive_one(f, "src", &v), SMQ_E_MESSAGE_NOT_EXIST);   /* moved */
    assert_int_equal(fx_queue_stats(f, "src").oldest_enqueue_ms, 0);
    assert_int_equal(fx_queue_stats(f, "dlq").oldest_enqueue_ms, t0);
    fx_prep_op(f, &op, SMQ_OP_REDRIVE, "dlq");
    op.redrive.rate_per_s = 100000;
    assert_int_equal(fx_run_one(f, &op), 0);
    assert_int_equal(op.redrive.n_scheduled, 1);              /* "newer" has no source */
    fx_tick(f, 100);
    fx_assert_counts(f, "src", 1, 0, 0);
    assert_int_equal(fx_queue_stats(f, "src").oldest_enqueue_ms, t0);
    assert_int_equal(fx_queue_stats(f, "dlq").oldest_enqueue_ms, t0 + 1000);
    assert_int_equal(fx_purge(f, "dlq", true, false, &n, &n_dlq), 0);
    assert_int_equal(n, 1);
    assert_int_equal(fx_queue_stats(f, "dlq").oldest_enqueue_ms, 0);
    assert_int_equal(fx_queue_stats(f, "other").oldest_enqueue_ms, t0 + 1000);
    fx_assert_counts(f, "other", 1, 0, 0);
    fx_assert_counts(f, "src", 1, 0, 0);
    /* Rebuilt from the rows at start-up. */
    fx_reopen_engine(f, FX_MAX_QUEUES_DEFAULT);
    assert_int_equal(fx_queue_stats(f, "src").oldest_enqueue_ms, t0);
    assert_int_equal(fx_queue_stats(f, "other").oldest_enqueue_ms, t0 + 1000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, fx_setup, fx_teardown)
        T(test_engine_admin_purge),
        T(test_engine_admin_stats_counters_and_oldest),
        T(test_engine_admin_oldest_follows_moves_and_purge),
#undef T
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
