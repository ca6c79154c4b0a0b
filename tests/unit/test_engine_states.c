/*
 * test_engine_states.c — a message's states over time (docs/protocol.md
 * §6.2): Delayed, Active and Inactive, with the exact counters a
 * GetQueueAttributes reports at every step of a scenario; the visibility
 * timeout (redelivery with a new handle, the old one stale); DelaySeconds
 * (a message's own over the queue's); and the retention period (expiry in
 * any state, to the millisecond, also while the engine is down).  Every
 * deadline is checked one millisecond before and at its time.
 *
 * The engine runs synchronously on a fake clock over a real SQLite store,
 * as engine_fixture.h describes; the timers fire on fx_tick.
 */
#include "engine_fixture.h"

static void test_engine_states_counters_exact_through_scenario(void **state)
{
    struct fx *f = *state;
    struct smq_queue_attrs a;
    struct smq_msg_view va, vb;
    struct smq_op op;
    uint64_t sa, sb;

    mns_default_attrs(&a);
    a.visibility_s = 10;
    a.retention_s = 60;
    assert_int_equal(fx_create_queue(f, "c", &a, FX_ALL_ATTRS, NULL), 0);
    fx_assert_counts(f, "c", 0, 0, 0);

    sa = fx_send_text(f, "c", "A", 0, 8);
    sb = fx_send_text(f, "c", "B", 5, 8);
    fx_send_text(f, "c", "C", 20, 8);
    fx_assert_counts(f, "c", 1, 0, 2);

    assert_int_equal(fx_receive_one(f, "c", &va), 0);       /* A, visible again at +10 s */
    assert_true(va.seq == sa);
    fx_assert_counts(f, "c", 0, 1, 2);

    fx_tick(f, 4999);
    fx_assert_counts(f, "c", 0, 1, 2);
    fx_tick(f, 1);                                          /* +5 s: B Active */
    fx_assert_counts(f, "c", 1, 1, 1);
    fx_tick(f, 5000);                                       /* +10 s: A Active again */
    fx_assert_counts(f, "c", 2, 0, 1);

    assert_int_equal(fx_receive(f, &op, "c", 16, 0), 0);    /* A and B until +20 s */
    assert_int_equal(op.recv.n_msgs, 2);
    assert_true(op.recv.msgs[0].seq == sa);
    assert_true(op.recv.msgs[1].seq == sb);
    va = op.recv.msgs[0];
    vb = op.recv.msgs[1];
    op_release(&op);
    fx_assert_counts(f, "c", 0, 2, 1);

    assert_int_equal(fx_delete_msg(f, "c", va.seq, va.handle_gen), 0);
    fx_assert_counts(f, "c", 0, 1, 1);

    fx_tick(f, 10000);                                      /* +20 s: B back, C Active */
    fx_assert_counts(f, "c", 2, 0, 0);
    assert_int_equal(fx_delete_msg(f, "c", vb.seq, vb.handle_gen), SMQ_E_MESSAGE_NOT_EXIST);

    fx_tick(f, 10000);                                      /* +30 s: D sent */
    fx_send_text(f, "c", "D", 0, 8);
    fx_assert_counts(f, "c", 3, 0, 0);

    fx_tick(f, 29999);
    fx_assert_counts(f, "c", 3, 0, 0);
    fx_tick(f, 1);                                          /* +60 s: B and C expire */
    fx_assert_counts(f, "c", 1, 0, 0);
    assert_int_equal(fx_stats(f).messages, 1);
    fx_tick(f, 30000);                                      /* +90 s: D expires */
    fx_assert_counts(f, "c", 0, 0, 0);
    assert_int_equal(fx_stats(f).messages, 0);
}

static void test_engine_states_visibility_expiry_redelivers(void **state)
{
    struct fx *f = *state;
    struct smq_msg_view first, again;
    uint64_t seq;

    fx_create_queue_vis(f, "v", 10);
    seq = fx_send_text(f, "v", "redeliver me", 0, 8);
    fx_tick(f, 2000);
    assert_int_equal(fx_receive_one(f, "v", &first), 0);
    assert_int_equal(first.first_dequeue_ms, FX_EPOCH0 + 2000);

    fx_tick(f, 9999);
    fx_assert_counts(f, "v", 0, 1, 0);
    assert_int_equal(fx_receive_one(f, "v", &again), SMQ_E_MESSAGE_NOT_EXIST);
    fx_tick(f, 1);
    fx_assert_counts(f, "v", 1, 0, 0);
    /* Active again: the handle of the first delivery no longer works. */
    assert_int_equal(fx_delete_msg(f, "v", first.seq, first.handle_gen), SMQ_E_MESSAGE_NOT_EXIST);
    fx_assert_counts(f, "v", 1, 0, 0);

    assert_int_equal(fx_receive_one(f, "v", &again), 0);
    assert_true(again.seq == seq);
    assert_int_equal(again.dequeue_count, 2);
    assert_int_equal(again.first_dequeue_ms, first.first_dequeue_ms);
    assert_int_equal(again.next_visible_ms, fx_now_ms(f) + 10000);
    assert_int_equal(again.handle_gen, first.handle_gen + 1);

    /* Old handle stale, new handle deletes. */
    assert_int_equal(fx_delete_msg(f, "v", first.seq, first.handle_gen), SMQ_E_MESSAGE_NOT_EXIST);
    fx_assert_counts(f, "v", 0, 1, 0);
    assert_int_equal(fx_delete_msg(f, "v", again.seq, again.handle_gen), 0);
    fx_assert_counts(f, "v", 0, 0, 0);
}

static void test_engine_states_delay_precedence(void **state)
{
    struct fx *f = *state;
    struct smq_queue_attrs a;
    struct smq_msg_view v;
    uint64_t s_msg, s_queue;

    mns_default_attrs(&a);
    a.delay_s = 10;
    assert_int_equal(fx_create_queue(f, "d", &a, SMQ_ATTR_DELAY, NULL), 0);
    assert_int_equal(fx_create_queue(f, "nodelay", NULL, 0, NULL), 0);

    s_msg = fx_send_text(f, "d", "message delay 3", 3, 8);   /* the message's delay wins */
    s_queue = fx_send_text(f, "d", "queue delay", 0, 8);     /* 0: the queue's 10 s apply */
    fx_assert_counts(f, "d", 0, 0, 2);
    fx_send_text(f, "nodelay", "now", 0, 8);
    fx_assert_counts(f, "nodelay", 1, 0, 0);

    fx_tick(f, 2999);
    fx_assert_counts(f, "d", 0, 0, 2);
    assert_int_equal(fx_receive_one(f, "d", &v), SMQ_E_MESSAGE_NOT_EXIST);
    fx_tick(f, 1);                                         /* exactly +3 s */
    fx_assert_counts(f, "d", 1, 0, 1);
    assert_int_equal(fx_receive_one(f, "d", &v), 0);
    assert_true(v.seq == s_msg);
    assert_int_equal(v.enqueue_ms, FX_EPOCH0);

    fx_tick(f, 6999);                                      /* +9.999 s */
    fx_assert_counts(f, "d", 0, 1, 1);
    fx_tick(f, 1);                                         /* exactly +10 s */
    fx_assert_counts(f, "d", 1, 1, 0);
    assert_int_equal(fx_receive_one(f, "d", &v), 0);
    assert_true(v.seq == s_queue);
    assert_int_equal(v.dequeue_count, 1);
}

static void test_engine_states_retention_expiry_any_state(void **state)
{
    struct fx *f = *state;
    struct smq_queue_attrs a;
    struct smq_msg_view inactive;

    mns_default_attrs(&a);
    a.retention_s = 60;
    a.visibility_s = 100;                 /* still Inactive when it expires */
    assert_int_equal(fx_create_queue(f, "r", &a, FX_ALL_ATTRS, NULL), 0);

    fx_send_text(f, "r", "inactive", 0, 8);
    assert_int_equal(fx_receive_one(f, "r", &inactive), 0);
    fx_send_text(f, "r", "active", 0, 8);
    fx_send_text(f, "r", "delayed", 120, 8);  /* would become visible after expiry */
    fx_assert_counts(f, "r", 1, 1, 1);
    assert_int_equal(fx_stats(f).messages, 3);

    fx_tick(f, 59999);
    fx_assert_counts(f, "r", 1, 1, 1);
    fx_tick(f, 1);                         /* exactly +60 s */
    fx_assert_counts(f, "r", 0, 0, 0);
    assert_int_equal(fx_stats(f).messages, 0);
    assert_int_equal(fx_delete_msg(f, "r", inactive.seq, inactive.handle_gen),
                     SMQ_E_MESSAGE_NOT_EXIST);

    /* Nothing comes back from the store (not even until the first run),
     * and the rows are cleaned up. */
    fx_reopen_engine(f, FX_MAX_QUEUES_DEFAULT);
    assert_int_equal(fx_stats(f).messages, 0);
    fx_assert_counts(f, "r", 0, 0, 0);
    fx_tick(f, 200000);                    /* past the delayed one's visibility */
    fx_assert_counts(f, "r", 0, 0, 0);
    assert_int_equal(db_peek_int(f->path, "SELECT count(*) FROM msg"), 0);
    assert_int_equal(db_peek_int(f->path, "SELECT count(*) FROM msg_body"), 0);

    /* The same three states, but the engine is down when retention ends:
     * the rows are still on disk at the next start and must not load. */
    fx_send_text(f, "r", "inactive", 0, 8);
    assert_int_equal(fx_receive_one(f, "r", &inactive), 0);
    fx_send_text(f, "r", "active", 0, 8);
    fx_send_text(f, "r", "delayed", 120, 8);
    fx_assert_counts(f, "r", 1, 1, 1);
    engine_close(f->e);
    f->e = NULL;
    assert_int_equal(db_peek_int(f->path, "SELECT count(*) FROM msg"), 3);
    clock_fake_advance(&f->clock, 60000);
    fx_open_engine(f, FX_MAX_QUEUES_DEFAULT);
    assert_int_equal(fx_stats(f).messages, 0);
    fx_assert_counts(f, "r", 0, 0, 0);
    assert_int_equal(fx_delete_msg(f, "r", inactive.seq, inactive.handle_gen),
                     SMQ_E_MESSAGE_NOT_EXIST);
    assert_int_equal(db_peek_int(f->path, "SELECT count(*) FROM msg"), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, fx_setup, fx_teardown)
        T(test_engine_states_counters_exact_through_scenario),
        T(test_engine_states_visibility_expiry_redelivers),
        T(test_engine_states_delay_precedence),
        T(test_engine_states_retention_expiry_any_state),
#undef T
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
