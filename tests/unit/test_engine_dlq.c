/*
 * test_engine_dlq.c — dead-letter queues (docs/protocol.md §11).  The
 * policy: its target must exist and not be the queue itself, a CreateQueue
 * compares it only when it names one, only Enabled=false clears it.  The
 * move: a receive that would hand a message out for the
 * (MaxReceiveCount + 1)-th time moves it to the target instead, in the same
 * run, keeping its id, body, priority and EnqueueTime, its receives
 * counted afresh and its expiry counted from the original EnqueueTime by
 * the target's retention.  A poll parked on the DLQ gets it at once; a
 * batch receive or a poll parked on the source never gets a used-up
 * message; a target deleted meanwhile leaves the message where it is.
 * Moving messages back (redrive) is in test_engine_redrive.c.
 *
 * Most tests use "src" dead-lettering into "dlq" (fx_create_with_dlq) and
 * fx_receive_and_lapse to use up receives; the engine runs synchronously on
 * a fake clock as engine_fixture.h describes.
 */
#include "engine_fixture.h"

/* ---- the policy ---------------------------------------------------------- */

static void test_engine_dlq_policy_validated(void **state)
{
    struct fx *f = *state;
    struct smq_queue_info info;
    struct smq_op op;

    /* The target must exist and must not be the queue itself. */
    assert_int_equal(fx_create_with_dlq(f, "src", "nowhere", 3, 30), SMQ_E_INVALID_ARGUMENT);
    assert_int_equal(fx_get_info(f, "src", &info), SMQ_E_QUEUE_NOT_EXIST);
    assert_int_equal(fx_create_with_dlq(f, "dlq", NULL, 0, 30), 0);
    assert_int_equal(fx_create_with_dlq(f, "self", "self", 3, 30), SMQ_E_INVALID_ARGUMENT);
    assert_int_equal(fx_create_with_dlq(f, "src", "dlq", 3, 30), 0);
    assert_int_equal(fx_get_info(f, "src", &info), 0);
    assert_int_equal(info.attrs.dlq.enabled, 1);
    assert_string_equal(info.attrs.dlq.target, "dlq");
    assert_int_equal(info.attrs.dlq.max_receive, 3);
    /* The same create again is idempotent; another policy is a conflict. */
    assert_int_equal(fx_create_with_dlq(f, "src", "dlq", 3, 30), 0);
    assert_int_equal(fx_create_with_dlq(f, "src", "dlq", 4, 30), SMQ_E_QUEUE_ALREADY_EXIST);
    /* SetQueueAttributes onto itself is refused and changes nothing. */
    fx_prep_op(f, &op, SMQ_OP_SET_QUEUE, "src");
    op.attrs.values.dlq = (struct smq_dlq_policy){1, "src", 2};
    op.attrs.present = SMQ_ATTR_DLQ;
    assert_int_equal(fx_run_one(f, &op), SMQ_E_INVALID_ARGUMENT);
    assert_int_equal(fx_get_info(f, "src", &info), 0);
    assert_string_equal(info.attrs.dlq.target, "dlq");
    /* Disabling clears the whole policy, and it survives a restart. */
    fx_prep_op(f, &op, SMQ_OP_SET_QUEUE, "src");
    op.attrs.values.dlq = (struct smq_dlq_policy){0, "junk", 9};
    op.attrs.present = SMQ_ATTR_DLQ;
    assert_int_equal(fx_run_one(f, &op), 0);
    fx_reopen_engine(f, FX_MAX_QUEUES_DEFAULT);
    assert_int_equal(fx_get_info(f, "src", &info), 0);
    assert_int_equal(info.attrs.dlq.enabled, 0);
    assert_string_equal(info.attrs.dlq.target, "");
}

/* CreateQueue naming only VisibilityTimeout, as an SDK would; its result. */
static int create_queue_vis_rc(struct fx *f, const char *name, int64_t visibility_s)
{
    struct smq_queue_attrs a;

    mns_default_attrs(&a);
    a.visibility_s = visibility_s;
    return fx_create_queue(f, name, &a, SMQ_ATTR_VISIBILITY, NULL);
}

/* A CreateQueue that names no dead-letter policy, which is all an SDK can
 * send, stays idempotent on a queue that has one: the policy is compared
 * only when the request names it (docs/protocol.md §7.1).  Otherwise an
 * application that declares its queues at every start would get
 * QueueAlreadyExist as soon as an operator set a policy. */
static void test_engine_dlq_create_idempotent_with_policy(void **state)
{
    struct fx *f = *state;
    struct smq_queue_info info;

    assert_int_equal(fx_create_with_dlq(f, "dlq", NULL, 0, 30), 0);
    assert_int_equal(fx_create_with_dlq(f, "src", "dlq", 3, 30), 0);
    assert_int_equal(create_queue_vis_rc(f, "src", 30), 0);
    assert_int_equal(fx_get_info(f, "src", &info), 0);
    assert_int_equal(info.attrs.dlq.enabled, 1);
}

/* ---- moving a message to the DLQ ----------------------------------------- */

static void test_engine_dlq_move_after_max_receives(void **state)
{
    struct fx *f = *state;
    struct smq_queue_stats st;
    struct smq_msg_view v;
    struct smq_op op;
    uint64_t seq;
    int64_t enqueued;

    assert_int_equal(fx_create_with_dlq(f, "dlq", NULL, 0, 30), 0);
    assert_int_equal(fx_create_with_dlq(f, "src", "dlq", 2, 1), 0);
    enqueued = fx_now_ms(f);
    seq = fx_send_text(f, "src", "poison", 0, 3);
    fx_receive_and_lapse(f, "src", seq, 1);
    fx_receive_and_lapse(f, "src", seq, 1);
    /* Received twice: the third attempt moves it instead of delivering it. */
    assert_int_equal(fx_receive_one(f, "src", &v), SMQ_E_MESSAGE_NOT_EXIST);
    fx_assert_counts(f, "src", 0, 0, 0);
    fx_assert_counts(f, "dlq", 1, 0, 0);
    /* Same id, body, priority and EnqueueTime; receives counted afresh. */
    fx_reopen_engine(f, FX_MAX_QUEUES_DEFAULT);
    assert_int_equal(fx_receive(f, &op, "dlq", 1, 0), 0);
    assert_true(op.recv.msgs[0].seq == seq);
    fx_assert_body(&op.recv.msgs[0], "poison");
    assert_int_equal(op.recv.msgs[0].priority, 3);
    assert_int_equal(op.recv.msgs[0].enqueue_ms, enqueued);
    assert_int_equal(op.recv.msgs[0].dequeue_count, 1);
    op_release(&op);
    st = fx_queue_stats(f, "src");
    assert_int_equal(st.dead_lettered, 0);          /* counters count since start-up */
    assert_int_equal(db_peek_int(f->path, "SELECT count(*) FROM msg"), 1);
    assert_int_equal(db_peek_int(f->path, "SELECT src_queue_id FROM msg"),
                     db_peek_int(f->path, "SELECT id FROM queue WHERE name = 'src'"));
}

static void test_engine_dlq_move_counts_and_wakes_dlq_poller(void **state)
{
    struct fx *f = *state;
    struct smq_op *poll = &f->park[0];
    struct smq_msg_view v;
    uint64_t seq;

    assert_int_equal(fx_create_with_dlq(f, "dlq", NULL, 0, 30), 0);
    assert_int_equal(fx_create_with_dlq(f, "src", "dlq", 1, 1), 0);
    fx_park(f, poll, "dlq", 10);
    seq = fx_send_text(f, "src", "m", 0, 8);
    fx_receive_and_lapse(f, "src", seq, 1);
    assert_int_equal(f->park_done[0], 0);
    /* The move happens in this receive's run and hands the message to the
     * parked DLQ poll at once. */
    assert_int_equal(fx_receive_one(f, "src", &v), SMQ_E_MESSAGE_NOT_EXIST);
    assert_int_equal(f->park_done[0], 1);
    assert_int_equal(poll->result.err, 0);
    assert_true(poll->recv.msgs[0].seq == seq);
    op_release(poll);
    assert_int_equal(fx_queue_stats(f, "src").dead_lettered, 1);
    assert_int_equal(fx_queue_stats(f, "src").received, 1);
    assert_int_equal(fx_queue_stats(f, "dlq").received, 1);
}

/* A batch receive applies the dead-letter rule to every message it takes,
 * not only to the head of the heap: a used-up message behind a fresh one
 * (of a better priority) is moved, never handed out.  Delivered, it would
 * be received once more than MaxReceiveCount allows, which is what the
 * policy is there to prevent. */
static void test_engine_dlq_batch_receive_moves_behind_head(void **state)
{
    struct fx *f = *state;
    struct smq_op op;
    uint64_t poison, fresh;

    assert_int_equal(fx_create_with_dlq(f, "dlq", NULL, 0, 30), 0);
    assert_int_equal(fx_create_with_dlq(f, "src", "dlq", 1, 1), 0);
    poison = fx_send_text(f, "src", "poison", 0, 8);
    fx_receive_and_lapse(f, "src", poison, 1);
    fresh = fx_send_text(f, "src", "fresh", 0, 1);     /* higher priority: the head */
    assert_int_equal(fx_receive(f, &op, "src", 16, 0), 0);
    assert_int_equal(op.recv.n_msgs, 1);
    assert_true(op.recv.msgs[0].seq == fresh);
    op_release(&op);
    fx_assert_counts(f, "dlq", 1, 0, 0);
}

/* A parked poll is woken only for a message it gets: when the message that
 * became Active has used up its receives and moves to the DLQ, the poll
 * stays parked until its deadline or the next message, which it receives.
 * Answered at the move, it would end empty long before its wait was over
 * although the client asked to wait for a message. */
static void test_engine_dlq_parked_poll_not_answered_by_moved_message(void **state)
{
    struct fx *f = *state;
    struct smq_op *poll = &f->park[0];
    struct smq_msg_view v;
    uint64_t later;

    assert_int_equal(fx_create_with_dlq(f, "dlq", NULL, 0, 30), 0);
    assert_int_equal(fx_create_with_dlq(f, "src", "dlq", 1, 2), 0);
    fx_send_text(f, "src", "m", 0, 8);
    assert_int_equal(fx_receive_one(f, "src", &v), 0);
    fx_park(f, poll, "src", 30);
    fx_tick(f, 2001);              /* m is Active again, and used up */
    fx_assert_counts(f, "dlq", 1, 0, 0);
    assert_int_equal(f->park_done[0], 0);
    later = fx_send_text(f, "src", "next", 0, 8);
    assert_int_equal(f->park_done[0], 1);
    assert_int_equal(poll->result.err, 0);
    assert_true(poll->recv.msgs[0].seq == later);
    op_release(poll);
}

/* A target deleted after the policy was set: the message is never dropped,
 * it is delivered as if there were no policy, and the failed move counted
 * (dlq_move_failures) for the operator to see. */
static void test_engine_dlq_target_gone_keeps_message(void **state)
{
    struct fx *f = *state;
    struct smq_msg_view v;
    uint64_t seq;

    assert_int_equal(fx_create_with_dlq(f, "dlq", NULL, 0, 30), 0);
    assert_int_equal(fx_create_with_dlq(f, "src", "dlq", 1, 1), 0);
    assert_int_equal(fx_delete_queue(f, "dlq"), 0);
    seq = fx_send_text(f, "src", "m", 0, 8);
    fx_receive_and_lapse(f, "src", seq, 1);
    /* Never dropped: delivered as if there were no policy, and counted. */
    assert_int_equal(fx_receive_one(f, "src", &v), 0);
    assert_true(v.seq == seq);
    assert_int_equal(v.dequeue_count, 2);
    assert_int_equal(fx_stats(f).dlq_move_failures, 1);
}

/* A move whose write fails (a full disk) leaves the message where it is:
 * it is delivered as if there were no policy, and the move counted. */
static void test_engine_dlq_failed_move_delivers_and_counts(void **state)
{
    struct fx *f = *state;
    struct smq_msg_view v;
    uint64_t seq;

    assert_int_equal(fx_create_with_dlq(f, "dlq", NULL, 0, 30), 0);
    assert_int_equal(fx_create_with_dlq(f, "src", "dlq", 1, 1), 0);
    seq = fx_send_text(f, "src", "m", 0, 8);
    fx_receive_and_lapse(f, "src", seq, 1);
    store_fault_inject_full(f->store, 0);                /* the move's write */
    assert_int_equal(fx_receive_one(f, "src", &v), 0);
    assert_true(v.seq == seq);
    assert_int_equal(v.dequeue_count, 2);
    assert_int_equal(fx_stats(f).dlq_move_failures, 1);
    assert_true(fx_stats(f).storage_full);
    fx_assert_counts(f, "dlq", 0, 0, 0);
    fx_assert_counts(f, "src", 0, 1, 0);
}

/* ---- retention across the move ------------------------------------------- */

/* "dlq" with a 60 s retention, and "src" dead-lettering into it after one
 * receive, with a visibility timeout of vis_s. */
static void create_short_lived_dlq(struct fx *f, int64_t vis_s)
{
    struct smq_queue_attrs a;

    mns_default_attrs(&a);
    a.retention_s = 60;
    assert_int_equal(fx_create_queue(f, "dlq", &a, SMQ_ATTR_RETENTION, NULL), 0);
    assert_int_equal(fx_create_with_dlq(f, "src", "dlq", 1, vis_s), 0);
}

static void test_engine_dlq_expiry_from_original_enqueue(void **state)
{
    struct fx *f = *state;
    struct smq_msg_view v;
    uint64_t seq;

    create_short_lived_dlq(f, 40);
    seq = fx_send_text(f, "src", "m", 0, 8);
    fx_receive_and_lapse(f, "src", seq, 40);
    assert_int_equal(fx_receive_one(f, "src", &v), SMQ_E_MESSAGE_NOT_EXIST);
    fx_assert_counts(f, "dlq", 1, 0, 0);
    /* 40 s in src + 20 s in dlq = the DLQ's 60 s retention from EnqueueTime. */
    fx_tick(f, 19000);
    fx_assert_counts(f, "dlq", 1, 0, 0);
    fx_tick(f, 1100);
    fx_assert_counts(f, "dlq", 0, 0, 0);
    assert_int_equal(fx_queue_stats(f, "dlq").expired, 1);
}

/*
 * A message that is already older than the DLQ's retention when it moves
 * (its expiry there is EnqueueTime + the DLQ's retention) is expired by the
 * move, never delivered: not to a poll parked on the DLQ in the same run,
 * which would get a message already past its retention (and whose handle
 * would go stale at the next timer tick), and not to a receive after it.
 */
static void test_engine_dlq_move_past_dlq_retention_expires(void **state)
{
    struct fx *f = *state;
    struct smq_op *poll = &f->park[0];
    struct smq_msg_view v;
    uint64_t seq;

    create_short_lived_dlq(f, 70);
    seq = fx_send_text(f, "src", "old", 0, 8);
    fx_receive_and_lapse(f, "src", seq, 70);    /* 70 s old: past the DLQ's 60 s */
    fx_park(f, poll, "dlq", 10);
    assert_int_equal(fx_receive_one(f, "src", &v), SMQ_E_MESSAGE_NOT_EXIST);
    assert_int_equal(f->park_done[0], 0);
    assert_int_equal(fx_receive_one(f, "dlq", &v), SMQ_E_MESSAGE_NOT_EXIST);
    fx_assert_counts(f, "src", 0, 0, 0);
    fx_assert_counts(f, "dlq", 0, 0, 0);
    assert_int_equal(fx_queue_stats(f, "src").dead_lettered, 1);
    assert_int_equal(fx_queue_stats(f, "dlq").expired, 1);
    assert_int_equal(fx_stats(f).messages, 0);
    fx_tick(f, 11000);                          /* the parked poll ends empty */
    assert_int_equal(f->park_done[0], 1);
    assert_int_equal(poll->result.err, SMQ_E_MESSAGE_NOT_EXIST);
    op_release(poll);
    assert_int_equal(db_peek_int(f->path, "SELECT count(*) FROM msg"), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, fx_setup, fx_teardown)
        T(test_engine_dlq_policy_validated),
        T(test_engine_dlq_create_idempotent_with_policy),
        T(test_engine_dlq_move_after_max_receives),
        T(test_engine_dlq_move_counts_and_wakes_dlq_poller),
        T(test_engine_dlq_batch_receive_moves_behind_head),
        T(test_engine_dlq_parked_poll_not_answered_by_moved_message),
        T(test_engine_dlq_target_gone_keeps_message),
        T(test_engine_dlq_failed_move_delivers_and_counts),
        T(test_engine_dlq_expiry_from_original_enqueue),
        T(test_engine_dlq_move_past_dlq_retention_expires),
#undef T
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
