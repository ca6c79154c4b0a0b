/*
 * test_engine_polls.c — long polling (docs/protocol.md §7.8, §6.2; the
 * engine's waiters.h): a receive with a wait parks when nothing is Active,
 * and is woken in the same run by what makes a message Active (a send, a
 * delay or visibility timeout running out, a visibility change to 0); one
 * message wakes one poll, the oldest first; a poll ends empty at its
 * deadline, to the millisecond (also the queue's PollingWaitSeconds), when
 * its queue is deleted (QueueNotExist), at shutdown (engine_drain) and
 * within about a second when its client has gone away.
 *
 * Parked polls are f->park[i]; f->park_done[i] counts their completions
 * (engine_fixture.h).  How a reload after a lost transaction keeps them is
 * in test_engine_recovery.c; how dead-lettering interacts with them, in
 * test_engine_dlq.c.
 */
#include "engine_fixture.h"

/* ---- what wakes a parked poll -------------------------------------------- */

static void test_engine_polls_send_wakes_parked(void **state)
{
    struct fx *f = *state;
    struct smq_op *w = &f->park[0];
    struct smq_op send;
    struct smq_op *list[1] = {&send};

    assert_int_equal(fx_create_queue(f, "lp", NULL, 0, NULL), 0);
    fx_park(f, w, "lp", 5);
    assert_int_equal(fx_stats(f).waiters, 1);
    fx_tick(f, 1000);
    assert_int_equal(f->n_done, 0);

    fx_prep_op(f, &send, SMQ_OP_SEND, "lp");
    send.send.items[0] = (struct smq_send_item){.body = "wake", .body_len = 4, .delay_s = 0, .priority = 8};
    send.send.n = 1;
    fx_run_ops(f, list, 1);
    assert_int_equal(f->n_done, 2);
    assert_int_equal(fx_done_pos(f, &send), 0);
    assert_int_equal(fx_done_pos(f, w), 1);
    assert_int_equal(send.result.err, 0);
    assert_int_equal(w->result.err, 0);
    assert_int_equal(w->recv.n_msgs, 1);
    assert_true(w->recv.msgs[0].seq == send.send.seq[0]);
    fx_assert_body(&w->recv.msgs[0], "wake");
    assert_int_equal(w->recv.msgs[0].dequeue_count, 1);
    assert_int_equal(w->recv.msgs[0].first_dequeue_ms, FX_EPOCH0 + 1000);
    op_release(&send);
    assert_int_equal(fx_stats(f).waiters, 0);
    fx_assert_counts(f, "lp", 0, 1, 0);

    /* Its deadline timer is gone: nothing completes it a second time. */
    fx_tick(f, 10000);
    assert_int_equal(f->n_done, 0);
}

/* Sends a batch of three to "fifo" while w1 and w2 are parked there, in
 * that order: each gets one message, oldest first, in the send's run. */
static void send_three_to_two_waiters(struct fx *f, struct smq_op *w1, struct smq_op *w2)
{
    struct smq_op batch;

    fx_prep_op(f, &batch, SMQ_OP_SEND, "fifo");
    for (int i = 0; i < 3; i++)
        batch.send.items[i] = (struct smq_send_item){.body = "batch", .body_len = 5, .delay_s = 0, .priority = 8};
    batch.send.n = 3;
    assert_int_equal(fx_run_one(f, &batch), 0);
    assert_int_equal(f->n_done, 3);
    assert_int_equal(fx_done_pos(f, w1), 1);
    assert_int_equal(fx_done_pos(f, w2), 2);
    assert_true(w1->recv.msgs[0].seq == batch.send.seq[0]);
    assert_true(w2->recv.msgs[0].seq == batch.send.seq[1]);
    op_release(&batch);
}

static void test_engine_polls_one_message_wakes_first_waiter(void **state)
{
    struct fx *f = *state;
    struct smq_op *w1 = &f->park[0], *w2 = &f->park[1];
    struct smq_msg_view v;
    uint64_t s1, s2;

    assert_int_equal(fx_create_queue(f, "fifo", NULL, 0, NULL), 0);
    fx_park(f, w1, "fifo", 5);
    fx_park(f, w2, "fifo", 30);   /* a later deadline, but parked second */
    assert_int_equal(fx_stats(f).waiters, 2);

    s1 = fx_send_text(f, "fifo", "one", 0, 8);
    assert_int_equal(f->n_done, 2);              /* the send and exactly one waiter */
    assert_int_equal(fx_done_pos(f, w1), 1);
    assert_int_equal(fx_done_pos(f, w2), -1);
    assert_int_equal(w1->result.err, 0);
    assert_true(w1->recv.msgs[0].seq == s1);
    assert_int_equal(fx_stats(f).waiters, 1);

    s2 = fx_send_text(f, "fifo", "two", 0, 8);
    assert_int_equal(fx_done_pos(f, w2), 1);
    assert_int_equal(w2->result.err, 0);
    assert_int_equal(w2->recv.n_msgs, 1);
    assert_true(w2->recv.msgs[0].seq == s2);
    assert_int_equal(fx_stats(f).waiters, 0);

    /* A batch of three wakes both waiters, one message each, oldest first;
     * the third stays Active. */
    fx_park(f, w1, "fifo", 5);
    fx_park(f, w2, "fifo", 5);
    send_three_to_two_waiters(f, w1, w2);
    fx_assert_counts(f, "fifo", 1, 4, 0);
    assert_int_equal(fx_receive_one(f, "fifo", &v), 0);
    fx_assert_counts(f, "fifo", 0, 5, 0);

    /* Again; the unserved one then times out at its own deadline. */
    fx_park(f, w1, "fifo", 5);
    fx_park(f, w2, "fifo", 5);
    s1 = fx_send_text(f, "fifo", "three", 0, 8);
    assert_int_equal(fx_done_pos(f, w1), 1);
    assert_true(w1->recv.msgs[0].seq == s1);
    assert_int_equal(fx_done_pos(f, w2), -1);
    fx_tick(f, 5000);
    assert_int_equal(fx_done_pos(f, w2), 0);
    assert_int_equal(w2->result.err, SMQ_E_MESSAGE_NOT_EXIST);
}

static void test_engine_polls_delay_and_visibility_wake(void **state)
{
    struct fx *f = *state;
    struct smq_op *w1 = &f->park[0], *w2 = &f->park[1];
    uint64_t seq;

    fx_create_queue_vis(f, "dv", 3);
    seq = fx_send_text(f, "dv", "later", 2, 8);
    fx_park(f, w1, "dv", 5);
    fx_tick(f, 1999);
    assert_int_equal(f->n_done, 0);
    fx_tick(f, 1);                               /* delay over: the waiter gets it */
    assert_int_equal(f->n_done, 1);
    assert_int_equal(w1->result.err, 0);
    assert_true(w1->recv.msgs[0].seq == seq);
    assert_int_equal(w1->recv.msgs[0].dequeue_count, 1);
    fx_assert_counts(f, "dv", 0, 1, 0);

    fx_park(f, w2, "dv", 10);
    fx_tick(f, 2999);
    assert_int_equal(f->n_done, 0);
    fx_tick(f, 1);                               /* visibility over: redelivered */
    assert_int_equal(f->n_done, 1);
    assert_int_equal(w2->result.err, 0);
    assert_true(w2->recv.msgs[0].seq == seq);
    assert_int_equal(w2->recv.msgs[0].dequeue_count, 2);
    assert_int_equal(w2->recv.msgs[0].handle_gen, w1->recv.msgs[0].handle_gen + 1);
    assert_int_equal(fx_stats(f).waiters, 0);
}

static void test_engine_polls_change_visibility_zero_wakes_waiter(void **state)
{
    struct fx *f = *state;
    struct smq_op *w = &f->park[0];
    struct smq_op cv;
    struct smq_msg_view v;

    fx_create_queue_vis(f, "cw", 30);
    fx_send_text(f, "cw", "m", 0, 8);
    assert_int_equal(fx_receive_one(f, "cw", &v), 0);
    fx_park(f, w, "cw", 10);
    fx_tick(f, 1000);
    assert_int_equal(f->n_done, 0);

    fx_prep_op(f, &cv, SMQ_OP_CHANGE_VISIBILITY, "cw");
    fx_make_ref(f, v.seq, v.handle_gen, &cv.vis.ref);
    cv.del.n = 1;
    cv.vis.visibility_s = 0;
    assert_int_equal(fx_run_one(f, &cv), 0);
    /* Same run: the change, then the woken waiter with the message. */
    assert_int_equal(f->n_done, 2);
    assert_int_equal(fx_done_pos(f, &cv), 0);
    assert_int_equal(fx_done_pos(f, w), 1);
    assert_int_equal(w->result.err, 0);
    assert_int_equal(w->recv.n_msgs, 1);
    assert_true(w->recv.msgs[0].seq == v.seq);
    assert_int_equal(w->recv.msgs[0].dequeue_count, 2);
    assert_int_equal(w->recv.msgs[0].handle_gen, cv.vis.new_gen + 1);
    op_release(&cv);
    fx_assert_counts(f, "cw", 0, 1, 0);
    assert_int_equal(fx_stats(f).waiters, 0);
}

/* ---- how a parked poll ends without a message ---------------------------- */

static void test_engine_polls_deadline_exact(void **state)
{
    struct fx *f = *state;
    struct smq_op *w = &f->park[0], *w2 = &f->park[1];
    uint64_t elapsed = 0, t;
    int wakeups = 0;

    assert_int_equal(fx_create_queue(f, "dl", NULL, 0, NULL), 0);
    assert_int_equal(engine_next_timeout_ms(f->e), UINT64_MAX);
    fx_park(f, w, "dl", 5);
    t = engine_next_timeout_ms(f->e);
    assert_true(t > 0 && t <= 5000);           /* never later than the deadline */

    fx_tick(f, 4999);
    assert_int_equal(f->n_done, 0);
    assert_int_equal(fx_stats(f).waiters, 1);
    assert_int_equal(engine_next_timeout_ms(f->e), 1);
    fx_tick(f, 1);
    assert_int_equal(f->n_done, 1);
    assert_int_equal(fx_done_pos(f, w), 0);
    assert_int_equal(w->result.err, SMQ_E_MESSAGE_NOT_EXIST);
    assert_int_equal(w->recv.n_msgs, 0);
    assert_int_equal(fx_stats(f).waiters, 0);
    assert_int_equal(engine_next_timeout_ms(f->e), UINT64_MAX);

    /* The wheel may report a cascade point before the deadline (twheel.h),
     * never a time after it: sleeping exactly as long as it says reaches
     * the deadline in a few wake-ups without overshooting. */
    fx_park(f, w2, "dl", 7);
    while (f->n_done == 0) {
        t = engine_next_timeout_ms(f->e);
        assert_true(t > 0 && elapsed + t <= 7000);
        assert_true(++wakeups <= 4);
        elapsed += t;
        fx_tick(f, t);
    }
    assert_int_equal(elapsed, 7000);
    assert_int_equal(w2->result.err, SMQ_E_MESSAGE_NOT_EXIST);

    /* wait_s = -1 takes the queue's PollingWaitSeconds. */
    {
        struct smq_queue_attrs a;
        mns_default_attrs(&a);
        a.polling_wait_s = 2;
        assert_int_equal(fx_create_queue(f, "pw", &a, SMQ_ATTR_POLLING_WAIT, NULL), 0);
        fx_park(f, w, "pw", -1);
        fx_tick(f, 1999);
        assert_int_equal(f->n_done, 0);
        fx_tick(f, 1);
        assert_int_equal(fx_done_pos(f, w), 0);
        assert_int_equal(w->result.err, SMQ_E_MESSAGE_NOT_EXIST);
    }
}

static void test_engine_polls_delete_queue_fails_waiters(void **state)
{
    struct fx *f = *state;
    struct smq_op *w1 = &f->park[0], *w2 = &f->park[1], *w3 = &f->park[2];
    struct smq_op del;

    assert_int_equal(fx_create_queue(f, "doomed", NULL, 0, NULL), 0);
    assert_int_equal(fx_create_queue(f, "other", NULL, 0, NULL), 0);
    fx_park(f, w1, "doomed", 10);
    fx_park(f, w2, "doomed", 10);
    fx_park(f, w3, "other", 10);

    fx_prep_op(f, &del, SMQ_OP_DELETE_QUEUE, "doomed");
    assert_int_equal(fx_run_one(f, &del), 0);
    assert_int_equal(f->n_done, 3);
    assert_true(fx_done_pos(f, w1) >= 0);
    assert_true(fx_done_pos(f, w2) >= 0);
    assert_int_equal(fx_done_pos(f, w3), -1);
    assert_int_equal(w1->result.err, SMQ_E_QUEUE_NOT_EXIST);
    assert_int_equal(w2->result.err, SMQ_E_QUEUE_NOT_EXIST);
    op_release(&del);
    assert_int_equal(fx_stats(f).waiters, 1);

    /* Their timers went with them. */
    fx_tick(f, 9999);
    assert_int_equal(f->n_done, 0);
    fx_tick(f, 1);
    assert_int_equal(f->n_done, 1);
    assert_int_equal(fx_done_pos(f, w3), 0);
    assert_int_equal(w3->result.err, SMQ_E_MESSAGE_NOT_EXIST);
}

static void test_engine_polls_drain_completes_waiters(void **state)
{
    struct fx *f = *state;
    struct smq_op *w1 = &f->park[0], *w2 = &f->park[1];

    assert_int_equal(fx_create_queue(f, "q1", NULL, 0, NULL), 0);
    assert_int_equal(fx_create_queue(f, "q2", NULL, 0, NULL), 0);
    fx_park(f, w1, "q1", 30);
    fx_park(f, w2, "q2", 30);
    assert_int_equal(fx_stats(f).waiters, 2);

    f->n_done = 0;
    engine_drain(f->e);
    assert_int_equal(f->n_done, 2);
    assert_true(fx_done_pos(f, w1) >= 0);
    assert_true(fx_done_pos(f, w2) >= 0);
    assert_int_equal(w1->result.err, SMQ_E_MESSAGE_NOT_EXIST);
    assert_int_equal(w2->result.err, SMQ_E_MESSAGE_NOT_EXIST);
    assert_int_equal(fx_stats(f).waiters, 0);
    assert_int_equal(engine_next_timeout_ms(f->e), UINT64_MAX);
    fx_tick(f, 30000);
    assert_int_equal(f->n_done, 0);
}

/* Stands in for the HTTP layer's check that a parked poll's connection closed. */
static bool gone_flag(struct smq_op *op, void *arg)
{
    struct fx *f = arg;

    for (size_t i = 0; i < FX_N_PARK; i++)
        if (op == &f->park[i])
            return f->gone[i];
    return false;
}

/*
 * A long poll whose client went away neither takes a message nor holds on
 * until its deadline: the next waiter gets the message, and a gone waiter
 * alone is finished by the periodic check within about a second.
 */
static void test_engine_polls_gone_client_skipped_and_released(void **state)
{
    struct fx *f = *state;
    struct smq_op *w1 = &f->park[0], *w2 = &f->park[1], *w3 = &f->park[2];

    assert_int_equal(fx_create_queue(f, "gone", NULL, 0, NULL), 0);
    fx_park_probed(f, w1, "gone", 20, gone_flag);
    fx_park_probed(f, w2, "gone", 20, gone_flag);
    f->gone[0] = true;                        /* w1's client hung up */
    fx_send_text(f, "gone", "for-the-living", 0, 8);
    assert_int_equal(f->park_done[0], 1);
    assert_int_equal(w1->result.err, SMQ_E_MESSAGE_NOT_EXIST);
    assert_int_equal(f->park_done[1], 1);
    assert_int_equal(w2->result.err, 0);
    fx_assert_body(&w2->recv.msgs[0], "for-the-living");
    assert_int_equal(w2->recv.msgs[0].dequeue_count, 1);

    fx_park_probed(f, w3, "gone", 20, gone_flag);
    f->gone[2] = true;
    assert_true(engine_next_timeout_ms(f->e) <= 1000);   /* a check is scheduled */
    fx_tick(f, 1000);
    assert_int_equal(f->park_done[2], 1);
    assert_int_equal(w3->result.err, SMQ_E_MESSAGE_NOT_EXIST);
    assert_int_equal(fx_stats(f).waiters, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, fx_setup, fx_teardown)
        T(test_engine_polls_send_wakes_parked),
        T(test_engine_polls_one_message_wakes_first_waiter),
        T(test_engine_polls_delay_and_visibility_wake),
        T(test_engine_polls_change_visibility_zero_wakes_waiter),
        T(test_engine_polls_deadline_exact),
        T(test_engine_polls_delete_queue_fails_waiters),
        T(test_engine_polls_drain_completes_waiters),
        T(test_engine_polls_gone_client_skipped_and_released),
#undef T
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
