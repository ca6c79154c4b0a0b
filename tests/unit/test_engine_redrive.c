/*
 * test_engine_redrive.c — redrive (run_redrive.h, docs/admin-api.md):
 * moving a DLQ's messages back to the queues they came from.  A redrive
 * takes a snapshot of the DLQ's Active messages that know their source
 * (src_queue_id, kept on disk across a restart), up to a maximum, and moves
 * them at the given rate, a slice every 100 ms tick; back in the source
 * their receives count afresh.  Messages sent to the DLQ directly stay
 * (also at its head), one past the source's retention expires instead of
 * arriving, and a purge or deletion of the DLQ ends the redrive.
 *
 * Most tests fill "dlq" from "src" with fx_fill_dlq; the engine runs
 * synchronously on a fake clock as engine_fixture.h describes, so each
 * fx_tick(f, 100) is one redrive tick.  What a reload keeps of a running
 * redrive is in test_engine_recovery.c.
 */
#include <stdio.h>

#include "engine_fixture.h"

/* At 20 messages a second, 2 move per 100 ms tick (a late tick catches up)
 * until all 20 that know their source are back; the one sent to the DLQ
 * directly stays. */
static void test_engine_redrive_is_rate_limited(void **state)
{
    struct fx *f = *state;
    struct smq_queue_stats st;
    struct smq_msg_view v;
    struct smq_op op;

    assert_int_equal(fx_create_with_dlq(f, "dlq", NULL, 0, 30), 0);
    assert_int_equal(fx_create_with_dlq(f, "src", "dlq", 1, 1), 0);
    fx_fill_dlq(f, 20);
    fx_send_text(f, "dlq", "no source", 0, 16);  /* sent there directly: stays */
    fx_prep_op(f, &op, SMQ_OP_REDRIVE, "dlq");
    op.redrive.rate_per_s = 20;
    assert_int_equal(fx_run_one(f, &op), 0);
    assert_int_equal(op.redrive.n_scheduled, 20);          /* those that know their source */
    assert_true(engine_next_timeout_ms(f->e) <= 100);
    /* 20 per second: 2 per 100 ms tick. */
    fx_tick(f, 100);
    fx_assert_counts(f, "src", 2, 0, 0);
    fx_tick(f, 100);
    fx_assert_counts(f, "src", 4, 0, 0);
    st = fx_queue_stats(f, "dlq");
    assert_int_equal(st.redriven, 4);
    assert_true(st.redrive_pending > 0);
    fx_tick(f, 1000);
    fx_tick(f, 100);
    fx_assert_counts(f, "src", 20, 0, 0);
    fx_assert_counts(f, "dlq", 1, 0, 0);
    assert_int_equal(fx_queue_stats(f, "dlq").redrive_pending, 0);
    /* Back in src with their receives counted afresh. */
    assert_int_equal(fx_receive_one(f, "src", &v), 0);
    assert_int_equal(v.dequeue_count, 1);
    assert_int_equal(fx_receive_one(f, "dlq", &v), 0);
    assert_int_equal(v.priority, 16);
    assert_int_equal(db_peek_int(f->path, "SELECT count(*) FROM msg WHERE queue_id = "
                                "(SELECT id FROM queue WHERE name = 'src')"), 20);
}

/* The sources survive a restart, and a maximum bounds the snapshot: with
 * max 3 of 5, three move and the redrive is then over. */
static void test_engine_redrive_max_and_restart(void **state)
{
    struct fx *f = *state;
    struct smq_op op;

    assert_int_equal(fx_create_with_dlq(f, "dlq", NULL, 0, 30), 0);
    assert_int_equal(fx_create_with_dlq(f, "src", "dlq", 1, 1), 0);
    fx_fill_dlq(f, 5);
    /* Sources survive a restart (src_queue_id on disk). */
    fx_reopen_engine(f, FX_MAX_QUEUES_DEFAULT);
    fx_prep_op(f, &op, SMQ_OP_REDRIVE, "dlq");
    op.redrive.rate_per_s = 100000;
    op.redrive.max = 3;
    assert_int_equal(fx_run_one(f, &op), 0);
    assert_int_equal(op.redrive.n_scheduled, 3);
    fx_tick(f, 100);
    fx_tick(f, 100);
    fx_assert_counts(f, "src", 3, 0, 0);
    fx_assert_counts(f, "dlq", 2, 0, 0);
    assert_true(engine_next_timeout_ms(f->e) > 100);
}

/* A message sent to the DLQ directly knows no source to go back to; at the
 * head of the DLQ (the best priority) it must not stop a redrive: the ones
 * behind it that know theirs move at the given rate, and it stays.
 * Otherwise one such message would hold back the redrive of all others. */
static void test_engine_redrive_passes_over_sourceless_head(void **state)
{
    struct fx *f = *state;
    struct smq_op op;

    assert_int_equal(fx_create_with_dlq(f, "dlq", NULL, 0, 30), 0);
    assert_int_equal(fx_create_with_dlq(f, "src", "dlq", 1, 1), 0);
    fx_fill_dlq(f, 5);
    fx_send_text(f, "dlq", "no source", 0, 1);  /* highest priority: the heap's head */
    fx_prep_op(f, &op, SMQ_OP_REDRIVE, "dlq");
    op.redrive.rate_per_s = 10;                  /* 1 per 100 ms tick */
    assert_int_equal(fx_run_one(f, &op), 0);
    assert_int_equal(op.redrive.n_scheduled, 5);           /* only those with a source */
    for (int i = 0; i < 5; i++)
        fx_tick(f, 100);
    fx_assert_counts(f, "src", 5, 0, 0);
    fx_assert_counts(f, "dlq", 1, 0, 0);
    assert_int_equal(fx_queue_stats(f, "dlq").redriven, 5);
    assert_int_equal(fx_queue_stats(f, "dlq").redrive_pending, 0);
}

/* A message redriven to a source whose retention it has outlived (its
 * expiry there is EnqueueTime + the source's retention) is expired by the
 * move: not Active in the source, not handed to a poll parked there, as a
 * dead-letter move past the DLQ's retention is (test_engine_dlq.c). */
static void test_engine_redrive_past_source_retention_expires(void **state)
{
    struct fx *f = *state;
    struct smq_op *poll = &f->park[0];
    struct smq_queue_attrs a;
    struct smq_msg_view v;
    struct smq_op op;
    uint64_t seq;

    assert_int_equal(fx_create_with_dlq(f, "dlq", NULL, 0, 30), 0);
    mns_default_attrs(&a);
    a.retention_s = 60;
    a.visibility_s = 1;
    a.dlq.enabled = 1;
    snprintf(a.dlq.target, sizeof a.dlq.target, "dlq");
    a.dlq.max_receive = 1;
    assert_int_equal(fx_create_queue(f, "src", &a,
                                     SMQ_ATTR_RETENTION | SMQ_ATTR_VISIBILITY | SMQ_ATTR_DLQ, NULL),
                     0);
    seq = fx_send_text(f, "src", "old", 0, 8);
    fx_receive_and_lapse(f, "src", seq, 1);
    assert_int_equal(fx_receive_one(f, "src", &v), SMQ_E_MESSAGE_NOT_EXIST);   /* moved */
    fx_assert_counts(f, "dlq", 1, 0, 0);
    fx_tick(f, 60000);                          /* past src's retention, not the DLQ's */
    fx_assert_counts(f, "dlq", 1, 0, 0);
    fx_park(f, poll, "src", 10);
    fx_prep_op(f, &op, SMQ_OP_REDRIVE, "dlq");
    op.redrive.rate_per_s = 100;
    assert_int_equal(fx_run_one(f, &op), 0);
    assert_int_equal(op.redrive.n_scheduled, 1);
    fx_tick(f, 100);
    fx_tick(f, 100);
    assert_int_equal(fx_queue_stats(f, "dlq").redriven, 1);
    assert_int_equal(f->park_done[0], 0);
    fx_assert_counts(f, "dlq", 0, 0, 0);
    fx_assert_counts(f, "src", 0, 0, 0);
    assert_int_equal(fx_queue_stats(f, "src").expired, 1);
    fx_tick(f, 10000);                          /* the parked poll ends empty */
    assert_int_equal(f->park_done[0], 1);
    assert_int_equal(poll->result.err, SMQ_E_MESSAGE_NOT_EXIST);
    op_release(poll);
    assert_int_equal(fx_receive_one(f, "src", &v), SMQ_E_MESSAGE_NOT_EXIST);
    assert_int_equal(fx_stats(f).messages, 0);
}

/* A purge is final while a redrive runs: purging the source with its DLQ
 * leaves the redrive nothing pending, so no later tick brings a purged
 * message back to the source or wakes the poll parked there; deleting the
 * DLQ then ends the redrive with it. */
static void test_engine_redrive_purge_and_delete_during_redrive(void **state)
{
    struct fx *f = *state;
    struct smq_op op;
    uint64_t n, nd;

    assert_int_equal(fx_create_with_dlq(f, "dlq", NULL, 0, 30), 0);
    assert_int_equal(fx_create_with_dlq(f, "src", "dlq", 1, 1), 0);
    fx_fill_dlq(f, 4);
    fx_prep_op(f, &op, SMQ_OP_REDRIVE, "dlq");
    op.redrive.rate_per_s = 10;
    assert_int_equal(fx_run_one(f, &op), 0);
    fx_park(f, &f->park[0], "src", 10);
    assert_int_equal(fx_purge(f, "src", true, true, &n, &nd), 0);
    assert_int_equal(nd, 4);
    assert_int_equal(fx_queue_stats(f, "dlq").redrive_pending, 0);
    fx_tick(f, 100);
    assert_int_equal(fx_delete_queue(f, "dlq"), 0);
    fx_tick(f, 100);
    fx_assert_counts(f, "src", 0, 0, 0);
    assert_int_equal(f->park_done[0], 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, fx_setup, fx_teardown)
        T(test_engine_redrive_is_rate_limited),
        T(test_engine_redrive_max_and_restart),
        T(test_engine_redrive_passes_over_sourceless_head),
        T(test_engine_redrive_past_source_retention_expires),
        T(test_engine_redrive_purge_and_delete_during_redrive),
#undef T
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
