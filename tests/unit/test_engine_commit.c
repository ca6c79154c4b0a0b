/*
 * test_engine_commit.c — group commit and the store rule "memory is never
 * ahead of disk" (engine.h, txn.h): the ops of one run share one
 * transaction and each sees the effects of those before it; a failed write
 * undoes only its own op (a savepoint each); a failed COMMIT loses the
 * whole run, every op of it answers InternalError and the state is
 * reloaded to exactly what it was; and when even the reload fails the
 * engine is broken, refusing everything until the store reads again.
 *
 * Faults come from the store's injection seam (store_fault_inject and
 * store_fault_inject_load, store.h); the engine runs synchronously on a
 * fake clock as engine_fixture.h describes.  A full disk is in
 * test_engine_space.c; what a reload keeps (parked polls, redrives, ids),
 * in test_engine_recovery.c.
 */
#include "engine_fixture.h"

/* One run creates a queue, sends twice, receives, reads the counters and
 * receives again: each op sees what the ones before it did, the ops finish
 * in list order, and all of it is durable. */
static void test_engine_commit_group_sees_effects_in_order(void **state)
{
    struct fx *f = *state;
    struct smq_op create, s1, s2, recv, get, empty;
    struct smq_op *list[6] = {&create, &s1, &s2, &recv, &get, &empty};

    fx_prep_op(f, &create, SMQ_OP_CREATE_QUEUE, "g");
    fx_prep_op(f, &s1, SMQ_OP_SEND, "g");
    s1.send.items[0] = (struct smq_send_item){.body = "low", .body_len = 3, .delay_s = 0, .priority = 8};
    s1.send.n = 1;
    fx_prep_op(f, &s2, SMQ_OP_SEND, "g");
    s2.send.items[0] = (struct smq_send_item){.body = "high", .body_len = 4, .delay_s = 0, .priority = 1};
    s2.send.n = 1;
    fx_prep_op(f, &recv, SMQ_OP_RECEIVE, "g");
    recv.recv.max_msgs = 16;
    recv.recv.wait_s = 0;
    fx_prep_op(f, &get, SMQ_OP_GET_QUEUE, "g");
    fx_prep_op(f, &empty, SMQ_OP_RECEIVE, "g");
    empty.recv.wait_s = 0;

    fx_run_ops(f, list, 6);
    assert_int_equal(f->n_done, 6);
    for (int i = 0; i < 6; i++) {
        assert_int_equal(fx_done_pos(f, list[i]), i);
        assert_null(list[i]->next);
    }
    assert_int_equal(create.result.err, 0);
    assert_true(create.attrs.created);
    assert_int_equal(s1.result.err, 0);
    assert_int_equal(s2.result.err, 0);
    assert_int_equal(recv.result.err, 0);
    assert_int_equal(recv.recv.n_msgs, 2);
    assert_true(recv.recv.msgs[0].seq == s2.send.seq[0]);
    fx_assert_body(&recv.recv.msgs[0], "high");
    assert_true(recv.recv.msgs[1].seq == s1.send.seq[0]);
    fx_assert_body(&recv.recv.msgs[1], "low");
    assert_int_equal(get.result.err, 0);
    assert_int_equal(get.info.n_active, 0);
    assert_int_equal(get.info.n_inactive, 2);
    assert_int_equal(empty.result.err, SMQ_E_MESSAGE_NOT_EXIST);

    /* All of it is durable. */
    assert_int_equal(db_peek_int(f->path, "SELECT count(*) FROM msg WHERE dequeue_count = 1"), 2);
    for (int i = 0; i < 6; i++)
        op_release(list[i]);
    fx_reopen_engine(f, FX_MAX_QUEUES_DEFAULT);
    fx_assert_counts(f, "g", 0, 2, 0);
}

/* A write that fails inside a run undoes only its own op (its savepoint):
 * the batch send whose body write fails stores nothing, the send after it
 * in the same transaction commits, and no reload is needed. */
static void test_engine_commit_write_fault_fails_only_that_send(void **state)
{
    struct fx *f = *state;
    struct smq_op bad, good, recv;
    struct smq_op *list[2] = {&bad, &good};
    uint64_t warm;

    assert_int_equal(fx_create_queue(f, "wf", NULL, 0, NULL), 0);
    warm = fx_send_text(f, "wf", "before", 0, 8);  /* the id reservation is done */
    assert_int_equal(db_peek_int(f->path, "SELECT count(*) FROM msg"), 1);

    fx_prep_op(f, &bad, SMQ_OP_SEND, "wf");
    for (int i = 0; i < 3; i++)
        bad.send.items[i] = (struct smq_send_item){.body = "lost", .body_len = 4, .delay_s = 0, .priority = 8};
    bad.send.n = 3;
    fx_prep_op(f, &good, SMQ_OP_SEND, "wf");
    good.send.items[0] = (struct smq_send_item){.body = "kept", .body_len = 4, .delay_s = 0, .priority = 8};
    good.send.n = 1;
    /* Two writes per message: the 4th write is the second message's body. */
    store_fault_inject(f->store, 3, 0);
    fx_run_ops(f, list, 2);
    assert_int_equal(f->n_done, 2);
    assert_int_equal(bad.result.err, SMQ_E_INTERNAL);
    assert_int_equal(good.result.err, 0);
    assert_int_equal(fx_stats(f).reloads, 0);

    fx_assert_counts(f, "wf", 2, 0, 0);
    assert_int_equal(fx_stats(f).messages, 2);
    assert_int_equal(db_peek_int(f->path, "SELECT count(*) FROM msg"), 2);
    assert_int_equal(db_peek_int(f->path, "SELECT count(*) FROM msg_body"), 2);

    assert_int_equal(fx_receive(f, &recv, "wf", 16, 0), 0);
    assert_int_equal(recv.recv.n_msgs, 2);
    assert_true(recv.recv.msgs[0].seq == warm);
    assert_true(recv.recv.msgs[1].seq == good.send.seq[0]);
    fx_assert_body(&recv.recv.msgs[1], "kept");
    op_release(&recv);
    op_release(&bad);
    op_release(&good);

    fx_reopen_engine(f, FX_MAX_QUEUES_DEFAULT);
    fx_assert_counts(f, "wf", 0, 2, 0);
    assert_int_equal(fx_stats(f).messages, 2);
}

/* A failed COMMIT loses the whole run: every op answers InternalError,
 * received bodies are released, and after the reload counters, handles and
 * what can be received are exactly as before the run, on disk too. */
static void test_engine_commit_fault_rolls_back_whole_run(void **state)
{
    struct fx *f = *state;
    struct smq_op send, recv, del, get;
    struct smq_op *list[4] = {&send, &recv, &del, &get};
    struct smq_msg_view va, vb;
    uint64_t sb;

    fx_create_queue_vis(f, "cf", 30);
    fx_send_text(f, "cf", "A", 0, 8);
    assert_int_equal(fx_receive_one(f, "cf", &va), 0);       /* A Inactive, handle known */
    sb = fx_send_text(f, "cf", "B", 0, 8);                    /* B Active */
    fx_assert_counts(f, "cf", 1, 1, 0);
    assert_int_equal(fx_stats(f).reloads, 0);

    fx_prep_op(f, &send, SMQ_OP_SEND, "cf");
    send.send.items[0] = (struct smq_send_item){.body = "C", .body_len = 1, .delay_s = 0, .priority = 8};
    send.send.n = 1;
    fx_prep_op(f, &recv, SMQ_OP_RECEIVE, "cf");
    recv.recv.wait_s = 0;
    fx_prep_op(f, &del, SMQ_OP_DELETE_MSG, "cf");
    fx_make_ref(f, va.seq, va.handle_gen, &del.del.refs[0]);
    del.del.n = 1;
    fx_prep_op(f, &get, SMQ_OP_GET_QUEUE, "cf");

    store_fault_inject(f->store, STORE_FAULT_OFF, 1);
    fx_run_ops(f, list, 4);
    assert_int_equal(f->n_done, 4);
    for (int i = 0; i < 4; i++)
        assert_int_equal(list[i]->result.err, SMQ_E_INTERNAL);
    assert_int_equal(recv.recv.n_msgs, 0);                          /* bodies released */
    assert_null(recv.recv.msgs[0].body);
    assert_int_equal(fx_stats(f).reloads, 1);

    /* Exactly the state before the run. */
    fx_assert_counts(f, "cf", 1, 1, 0);
    assert_int_equal(fx_stats(f).messages, 2);
    assert_int_equal(db_peek_int(f->path, "SELECT count(*) FROM msg"), 2);
    assert_int_equal(fx_receive_one(f, "cf", &vb), 0);       /* B, first delivery */
    assert_true(vb.seq == sb);
    assert_int_equal(vb.dequeue_count, 1);
    assert_int_equal(fx_receive_one(f, "cf", &vb), SMQ_E_MESSAGE_NOT_EXIST);   /* no C */
    assert_int_equal(fx_delete_msg(f, "cf", va.seq, va.handle_gen), 0);   /* old handle */
    fx_assert_counts(f, "cf", 0, 1, 0);

    for (int i = 0; i < 4; i++)
        op_release(list[i]);
    fx_reopen_engine(f, FX_MAX_QUEUES_DEFAULT);
    fx_assert_counts(f, "cf", 0, 1, 0);
}

/*
 * When the store cannot be read back after a lost transaction, the engine
 * must not serve the partial state it could load: rows not read would
 * never be delivered, and ids could be handed out again (the highest may be
 * among them).  It refuses every operation until a reload succeeds (tried
 * at each run), then carries on with the full state, fresh ids and the
 * handles it gave out before.
 */
static void test_engine_commit_failed_reload_refuses_until_store_reads(void **state)
{
    struct fx *f = *state;
    struct smq_msg_view v;
    uint64_t last, seq = 0;

    assert_int_equal(fx_create_queue(f, "rb", NULL, 0, NULL), 0);
    fx_send_text(f, "rb", "a", 0, 8);
    fx_send_text(f, "rb", "b", 0, 8);
    last = fx_send_text(f, "rb", "c", 0, 8);
    assert_int_equal(fx_receive_one(f, "rb", &v), 0);

    store_fault_inject(f->store, STORE_FAULT_OFF, 1);    /* the COMMIT fails... */
    store_fault_inject_load(f->store, 1);                /* ...and so does reading back */
    assert_int_equal(fx_send_msg(f, "rb", "lost", 4, 0, 8, NULL), SMQ_E_INTERNAL);
    assert_int_equal(fx_stats(f).messages, 0);           /* no partial state kept */

    store_fault_inject_load(f->store, 0);                /* still unreadable next run */
    assert_int_equal(fx_send_msg(f, "rb", "refused", 7, 0, 8, NULL), SMQ_E_INTERNAL);
    assert_int_equal(db_peek_int(f->path, "SELECT count(*) FROM msg"), 3);

    assert_int_equal(fx_send_msg(f, "rb", "after", 5, 0, 8, &seq), 0);   /* readable again */
    assert_true(seq > last);
    assert_int_equal(fx_stats(f).reloads, 1);            /* one lost transaction, not three */
    fx_assert_counts(f, "rb", 3, 1, 0);
    assert_int_equal(fx_delete_msg(f, "rb", v.seq, v.handle_gen), 0);   /* old handle still works */
}

/*
 * While broken (the store cannot be read back) nothing is scheduled: a
 * maintenance timer left due (here the reclamation a delete asked for)
 * would wake the engine thread over and over, each time for a reload that
 * fails, so it waits for the next op instead.  A health probe (a
 * totals-only STATS, what /ready asks) is refused as well, so the instance
 * does not report ready while it can serve nothing.
 */
static void test_engine_commit_broken_does_not_spin(void **state)
{
    struct fx *f = *state;
    struct smq_msg_view v;

    assert_int_equal(fx_create_queue(f, "rb", NULL, 0, NULL), 0);
    fx_send_text(f, "rb", "a", 0, 8);
    fx_send_text(f, "rb", "b", 0, 8);  /* a row for the failing reload to trip on */
    assert_int_equal(fx_receive_one(f, "rb", &v), 0);
    assert_int_equal(fx_delete_msg(f, "rb", v.seq, v.handle_gen), 0);   /* maintenance due */
    store_fault_inject(f->store, STORE_FAULT_OFF, 1);
    store_fault_inject_load(f->store, 0);
    assert_int_equal(fx_send_msg(f, "rb", "lost", 4, 0, 8, NULL), SMQ_E_INTERNAL);
    assert_true(fx_stats(f).broken);
    clock_fake_advance(&f->clock, 5000);
    for (int i = 0; i < 3; i++) {
        store_fault_inject_load(f->store, 0);
        f->n_done = 0;
        engine_run(f->e, NULL);
        assert_true(fx_stats(f).broken);
        assert_int_equal(engine_next_timeout_ms(f->e), UINT64_MAX);
    }
    /* What /ready asks: refused while broken. */
    store_fault_inject_load(f->store, 0);
    {
        struct smq_op probe;
        fx_prep_op(f, &probe, SMQ_OP_STATS, "");
        probe.stats.totals_only = true;
        assert_int_equal(fx_run_one(f, &probe), SMQ_E_INTERNAL);
        op_release(&probe);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, fx_setup, fx_teardown)
        T(test_engine_commit_group_sees_effects_in_order),
        T(test_engine_commit_write_fault_fails_only_that_send),
        T(test_engine_commit_fault_rolls_back_whole_run),
        T(test_engine_commit_failed_reload_refuses_until_store_reads),
        T(test_engine_commit_broken_does_not_spin),
#undef T
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
