/*
 * test_engine_recovery.c — rebuilding the engine's memory from the store
 * (recover.h): at a restart, every message comes back in the state its
 * persisted times give it, with its handles still valid; after a lost
 * transaction, the reload keeps what lives only in memory (parked long
 * polls in their order, running redrives, lifetime counters) and serves a
 * message the lost run had made Active; and the id high-water marks in
 * meta keep message and queue ids from ever being handed out twice.
 *
 * Restarts are engine_close and engine_open on the same store
 * (fx_reopen_engine); lost transactions come from store_fault_inject
 * (store.h).  The engine runs synchronously on a fake clock as
 * engine_fixture.h describes.
 */
#include <string.h>

#include "engine_fixture.h"

/* ---- restart ------------------------------------------------------------- */

/* The messages of the restart scenario: their seqs, the views of the ones
 * received before the restart, and the handle text a client holds for C. */
struct rec_msgs {
    uint64_t sc, sd, sg, sa, sb, sh, se;
    struct smq_msg_view vc, vd, vg, ve;
    char h_c[HANDLE_TEXT_LEN + 1];
};

/* Before the restart, in "rec" (visibility 60 s): C and G Inactive, D and E
 * (the highest seq) received and deleted, A Active, B delayed by 100 s and
 * H by 3 s. */
static void fill_before_restart(struct fx *f, struct rec_msgs *r)
{
    fx_create_queue_vis(f, "rec", 60);
    r->sc = fx_send_text(f, "rec", "C inactive, deleted after restart", 0, 8);
    r->sd = fx_send_text(f, "rec", "D deleted before restart", 0, 8);
    r->sg = fx_send_text(f, "rec", "G inactive, visible again at +60 s", 0, 8);
    assert_int_equal(fx_receive_one(f, "rec", &r->vc), 0);
    assert_int_equal(fx_receive_one(f, "rec", &r->vd), 0);
    assert_int_equal(fx_receive_one(f, "rec", &r->vg), 0);
    assert_true(r->vc.seq == r->sc && r->vd.seq == r->sd && r->vg.seq == r->sg);
    assert_int_equal(fx_delete_msg(f, "rec", r->vd.seq, r->vd.handle_gen), 0);
    r->sa = fx_send_text(f, "rec", "A active", 0, 8);
    r->sb = fx_send_text(f, "rec", "B delayed to +100 s", 100, 8);
    r->sh = fx_send_text(f, "rec", "H delayed 3 s, due while the engine is down", 3, 8);
    r->se = fx_send_text(f, "rec", "E highest seq, deleted", 0, 1);
    assert_int_equal(fx_receive_one(f, "rec", &r->ve), 0);
    assert_true(r->ve.seq == r->se);
    assert_int_equal(fx_delete_msg(f, "rec", r->ve.seq, r->ve.handle_gen), 0);
    /* what a client holds */
    handle_encode(engine_keys(f->e), r->vc.seq, r->vc.handle_gen, r->h_c);
    fx_assert_counts(f, "rec", 1, 2, 2);
}

/* Right after the restart: what is Active and what a handle given out
 * before the restart still does. */
static void check_after_restart(struct fx *f, const struct rec_msgs *r)
{
    struct smq_handle_ref ref;
    struct smq_op op;

    /* H's delay ran out while the engine was down: Active at start. */
    assert_int_equal(fx_stats(f).messages, 5);
    fx_assert_counts(f, "rec", 2, 2, 1);
    fx_prep_op(f, &op, SMQ_OP_PEEK, "rec");
    op.recv.max_msgs = 16;
    assert_int_equal(fx_run_one(f, &op), 0);
    assert_int_equal(op.recv.n_msgs, 2);
    assert_true(op.recv.msgs[0].seq == r->sa);
    assert_int_equal(op.recv.msgs[0].dequeue_count, 0);
    fx_assert_body(&op.recv.msgs[0], "A active");
    assert_true(op.recv.msgs[1].seq == r->sh);
    assert_int_equal(op.recv.msgs[1].next_visible_ms, FX_EPOCH0 + 3000);
    op_release(&op);

    /* The handle issued before the restart still deletes C. */
    fx_prep_op(f, &op, SMQ_OP_DELETE_MSG, "rec");
    assert_int_equal(handle_decode(engine_keys(f->e), r->h_c, strlen(r->h_c), &ref.seq, &ref.gen),
                     0);
    ref.err = 0;
    op.del.refs[0] = ref;
    op.del.n = 1;
    assert_int_equal(fx_run_one(f, &op), 0);
    op_release(&op);
    fx_assert_counts(f, "rec", 2, 1, 1);
    /* The deleted ones never come back. */
    assert_int_equal(fx_delete_msg(f, "rec", r->vd.seq, r->vd.handle_gen), SMQ_E_MESSAGE_NOT_EXIST);
    assert_int_equal(fx_delete_msg(f, "rec", r->ve.seq, r->ve.handle_gen), SMQ_E_MESSAGE_NOT_EXIST);
}

/* Then the deadlines read back from the rows, the receive order, and an id
 * for a new message. */
static void check_deadlines_after_restart(struct fx *f, const struct rec_msgs *r)
{
    struct smq_op op;
    uint64_t fresh;

    /* G becomes Active at its persisted NextVisibleTime, B at its original delay. */
    fx_tick(f, 60000 - 5000 - 1);
    fx_assert_counts(f, "rec", 2, 1, 1);
    fx_tick(f, 1);
    fx_assert_counts(f, "rec", 3, 0, 1);
    fx_tick(f, 40000 - 1);
    fx_assert_counts(f, "rec", 3, 0, 1);
    fx_tick(f, 1);
    fx_assert_counts(f, "rec", 4, 0, 0);

    assert_int_equal(fx_receive(f, &op, "rec", 16, 0), 0);
    assert_int_equal(op.recv.n_msgs, 4);
    assert_true(op.recv.msgs[0].seq == r->sg);
    assert_int_equal(op.recv.msgs[0].dequeue_count, 2);
    assert_int_equal(op.recv.msgs[0].first_dequeue_ms, FX_EPOCH0);
    assert_int_equal(op.recv.msgs[0].enqueue_ms, FX_EPOCH0);
    fx_assert_body(&op.recv.msgs[0], "G inactive, visible again at +60 s");
    assert_true(op.recv.msgs[1].seq == r->sa);
    assert_true(op.recv.msgs[2].seq == r->sb);
    assert_int_equal(op.recv.msgs[2].dequeue_count, 1);
    assert_true(op.recv.msgs[3].seq == r->sh);
    op_release(&op);

    /* Ids are never reused, even though the highest (E) was deleted. */
    fresh = fx_send_text(f, "rec", "after restart", 0, 8);
    assert_true(fresh > r->se);
}

/* A restart rebuilds every state from the store: Active, Inactive until its
 * persisted NextVisibleTime, Delayed until its original delay (or Active at
 * once if that passed while the engine was down), deleted ones gone; the
 * receipt handles given out before stay valid and ids are not reused. */
static void test_engine_recovery_restores_states(void **state)
{
    struct fx *f = *state;
    struct rec_msgs r;

    fill_before_restart(f, &r);
    engine_close(f->e);
    f->e = NULL;
    clock_fake_advance(&f->clock, 5000);
    fx_open_engine(f, FX_MAX_QUEUES_DEFAULT);
    check_after_restart(f, &r);
    check_deadlines_after_restart(f, &r);
}

/* ---- reload after a lost transaction ------------------------------------- */

/*
 * The reload after a lost transaction takes the parked long polls off
 * their queues and parks them again: in their order, so that the first
 * parked poll is still served first.  Parked polls are served first come,
 * first served (docs/protocol.md §6.2); a reload that reversed them would
 * let the newest client overtake clients that have waited longer.
 */
static void test_engine_recovery_reload_keeps_waiter_fifo(void **state)
{
    struct fx *f = *state;
    struct smq_op *w1 = &f->park[0], *w2 = &f->park[1];
    bool created = true;

    assert_int_equal(fx_create_queue(f, "q", NULL, 0, NULL), 0);
    fx_park(f, w1, "q", 30);
    fx_park(f, w2, "q", 30);

    /* Any lost run reloads; here an unrelated CreateQueue's commit fails. */
    store_fault_inject(f->store, STORE_FAULT_OFF, 1);
    assert_int_equal(fx_create_queue(f, "other", NULL, 0, &created), SMQ_E_INTERNAL);
    assert_false(created);
    assert_int_equal(fx_stats(f).reloads, 1);
    assert_int_equal(fx_stats(f).waiters, 2);

    fx_send_text(f, "q", "for the first waiter", 0, 8);
    assert_int_equal(f->n_done, 2);
    assert_int_equal(fx_done_pos(f, w2), -1);
    assert_int_equal(fx_done_pos(f, w1), 1);
    assert_int_equal(w1->result.err, 0);
}

/*
 * The lost run may have made a message Active (here its visibility ran out
 * and the first waiter's receive of it was lost with the commit).  The
 * reload places the messages before the polls are parked again, so it must
 * mark their queues ready: the next run then hands the Active message to
 * the re-parked poll.  Otherwise that poll would wait next to an Active
 * message until its deadline, and every new ReceiveMessage with a wait
 * would park behind it (a receive does not overtake parked polls).
 */
static void test_engine_recovery_reload_serves_reparked_waiter(void **state)
{
    struct fx *f = *state;
    struct smq_op *w1 = &f->park[0], *w2 = &f->park[1];
    struct smq_msg_view v;
    struct smq_queue_info info;

    fx_create_queue_vis(f, "q", 5);
    fx_send_text(f, "q", "m", 0, 8);
    assert_int_equal(fx_receive_one(f, "q", &v), 0);
    fx_park(f, w1, "q", 30);
    fx_park(f, w2, "q", 30);

    /* At +5 s the message is Active again and w1 receives it, but the
     * commit of that run fails: w1 reports InternalError, state reloads. */
    store_fault_inject(f->store, STORE_FAULT_OFF, 1);
    fx_tick(f, 5000);
    assert_int_equal(f->park_done[0], 1);
    assert_int_equal(w1->result.err, SMQ_E_INTERNAL);
    assert_int_equal(fx_stats(f).reloads, 1);

    /* By the end of the next run at the latest, w2 has the message. */
    fx_tick(f, 1);
    if (f->park_done[1] == 0)
        print_error("reload: a re-parked poll was left waiting next to an Active message\n");
    assert_int_equal(f->park_done[1], 1);
    assert_int_equal(w2->result.err, 0);
    assert_int_equal(w2->recv.n_msgs, 1);
    assert_true(w2->recv.msgs[0].seq == v.seq);
    assert_int_equal(w2->recv.msgs[0].dequeue_count, 2);
    assert_int_equal(fx_get_info(f, "q", &info), 0);
    assert_int_equal(info.n_active, 0);
    assert_int_equal(info.n_inactive, 1);
    assert_int_equal(fx_stats(f).waiters, 0);
}

/* A reload after a lost transaction (here of an unrelated send's COMMIT)
 * keeps what the store does not hold: the progress of a running redrive
 * and the lifetime counters (sent, redriven).  Rebuilt from the rows alone,
 * the redrive would stop half-way without a word and the statistics would
 * restart from zero. */
static void test_engine_recovery_reload_keeps_redrive_and_counters(void **state)
{
    struct fx *f = *state;
    struct smq_op op;

    assert_int_equal(fx_create_with_dlq(f, "dlq", NULL, 0, 30), 0);
    assert_int_equal(fx_create_with_dlq(f, "src", "dlq", 1, 1), 0);
    fx_create_queue_vis(f, "other", 30);
    fx_fill_dlq(f, 10);
    fx_prep_op(f, &op, SMQ_OP_REDRIVE, "dlq");
    op.redrive.rate_per_s = 10;
    assert_int_equal(fx_run_one(f, &op), 0);
    fx_tick(f, 100);
    assert_int_equal(fx_queue_stats(f, "dlq").redriven, 1);
    store_fault_inject(f->store, STORE_FAULT_OFF, 1);
    assert_int_equal(fx_send_msg(f, "other", "x", 1, 0, 8, NULL), SMQ_E_INTERNAL);
    assert_int_equal(fx_stats(f).reloads, 1);
    assert_int_equal(fx_queue_stats(f, "src").sent, 10);
    assert_int_equal(fx_queue_stats(f, "dlq").redriven, 1);
    assert_int_equal(fx_queue_stats(f, "dlq").redrive_pending, 9);
    for (int i = 0; i < 9; i++)
        fx_tick(f, 100);
    fx_assert_counts(f, "src", 10, 0, 0);
}

/* ---- id high-water marks ------------------------------------------------- */

/*
 * Message ids are handed out below a mark in meta ("next_seq"), moved in
 * blocks of 65,536 and written inside the savepoint of the send that needs
 * it.  When a later write of that send fails, the savepoint is rolled back
 * with the mark in it, so the block must not count as reserved (the mark
 * counts only once its savepoint is kept, msgs_settle_seqs).  Otherwise no
 * later send would write the mark; after a restart with the highest
 * message deleted, ids would start again above the highest row left (here
 * none) and a MessageId already acknowledged to a client would be issued
 * again.  The new seq must be above every seq issued before the restart.
 */
static void test_engine_recovery_seq_not_reused_after_rolled_back_reservation(void **state)
{
    struct fx *f = *state;
    struct smq_msg_view v;
    uint64_t first, fresh;

    assert_int_equal(fx_create_queue(f, "ids", NULL, 0, NULL), 0);
    /* The first send's first write is the reservation (meta), then the
     * message row fails: the op fails and its savepoint is rolled back. */
    store_fault_inject(f->store, 1, 0);
    assert_int_equal(fx_send_msg(f, "ids", "x", 1, 0, 8, NULL), SMQ_E_INTERNAL);
    fx_assert_counts(f, "ids", 0, 0, 0);

    first = fx_send_text(f, "ids", "acknowledged", 0, 8);
    assert_int_equal(fx_receive_one(f, "ids", &v), 0);
    assert_int_equal(fx_delete_msg(f, "ids", v.seq, v.handle_gen), 0);

    fx_reopen_engine(f, FX_MAX_QUEUES_DEFAULT);
    fresh = fx_send_text(f, "ids", "after restart", 0, 8);
    if (fresh <= first)
        print_error("next_seq: seq %llu issued again after restart "
                    "(previous highest %llu)\n",
                    (unsigned long long)fresh, (unsigned long long)first);
    assert_true(fresh > first);
}

/*
 * Queue ids are never reused (store.h: store_queue_rec.id is "assigned by
 * the engine, never reused"): a mark in meta ("next_queue_id") keeps them
 * rising when the newest queue is deleted and the engine restarts, where
 * the highest id on disk would hand out the deleted queue's id again.
 * Rows refer to queues by id: a dead-lettered message's src_queue_id names
 * the queue a redrive sends it back to, and with a reused id that could be
 * a new queue that merely took a deleted one's id.
 */
static void test_engine_recovery_queue_id_not_reused_after_restart(void **state)
{
    struct fx *f = *state;
    long long id_old, id_new;

    assert_int_equal(fx_create_queue(f, "q1", NULL, 0, NULL), 0);
    assert_int_equal(fx_create_queue(f, "q2", NULL, 0, NULL), 0);
    id_old = db_peek_int(f->path, "SELECT id FROM queue WHERE name = 'q2'");
    assert_true(id_old > db_peek_int(f->path, "SELECT id FROM queue WHERE name = 'q1'"));
    assert_int_equal(fx_delete_queue(f, "q2"), 0);

    fx_reopen_engine(f, FX_MAX_QUEUES_DEFAULT);
    assert_int_equal(fx_create_queue(f, "q3", NULL, 0, NULL), 0);
    id_new = db_peek_int(f->path, "SELECT id FROM queue WHERE name = 'q3'");
    assert_true(id_new > id_old);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, fx_setup, fx_teardown)
        T(test_engine_recovery_restores_states),
        T(test_engine_recovery_reload_keeps_waiter_fifo),
        T(test_engine_recovery_reload_serves_reparked_waiter),
        T(test_engine_recovery_reload_keeps_redrive_and_counters),
        T(test_engine_recovery_seq_not_reused_after_rolled_back_reservation),
        T(test_engine_recovery_queue_id_not_reused_after_restart),
#undef T
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
