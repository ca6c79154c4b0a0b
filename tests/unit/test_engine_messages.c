/*
 * test_engine_messages.c — the engine's message operations
 * (docs/protocol.md §7.6–§7.13): SendMessage and its batch (bodies kept
 * byte for byte, the size limits, the MD5 given at send), ReceiveMessage
 * (the fields a receive sets, priority order across batches), PeekMessage
 * (shows without changing anything), DeleteMessage and its batch (which
 * handles are current, per-item errors) and ChangeMessageVisibility (a new
 * handle and deadline).  How the states move with time is in
 * test_engine_states.c; what wakes a parked poll, in test_engine_polls.c.
 *
 * The engine runs synchronously on a fake clock over a real SQLite store,
 * as engine_fixture.h describes.
 */
#include <stdlib.h>
#include <string.h>

#include "engine_fixture.h"

/* ---- send and receive ---------------------------------------------------- */

static void test_engine_messages_send_receive_round_trip(void **state)
{
    struct fx *f = *state;
    /* "<p>héllo wörld ✓ 中文</p>" spelled in bytes */
    static const char utf8[] =
        "<p>h\xc3\xa9llo w\xc3\xb6rld \xe2\x9c\x93 \xe4\xb8\xad\xe6\x96\x87</p>";
    char id1[MSGID_TEXT_LEN + 1], id2[MSGID_TEXT_LEN + 1];
    char *big = f->scratch[0] = malloc(SMQ_MSG_SIZE_MAX);
    struct smq_op op;
    uint64_t s1, s2, s3;

    assert_non_null(big);
    for (size_t i = 0; i < SMQ_MSG_SIZE_MAX; i++)
        big[i] = (char)('a' + i % 26);
    big[SMQ_MSG_SIZE_MAX - 1] = '!';
    assert_int_equal(fx_create_queue(f, "q", NULL, 0, NULL), 0);

    s1 = fx_send_text(f, "q", utf8, 0, 8);
    assert_int_equal(fx_send_msg(f, "q", big, SMQ_MSG_SIZE_MAX, 0, 8, &s2), 0);
    /* Not a C string: an embedded NUL survives (the store keeps a blob). */
    assert_int_equal(fx_send_msg(f, "q", "a\0b", 3, 0, 8, &s3), 0);
    assert_true(s2 > s1);
    msgid_format(engine_keys(f->e), s1, id1);
    msgid_format(engine_keys(f->e), s2, id2);
    assert_int_equal(strlen(id1), MSGID_TEXT_LEN);
    assert_string_not_equal(id1, id2);
    fx_assert_counts(f, "q", 3, 0, 0);

    assert_int_equal(fx_receive(f, &op, "q", 16, 0), 0);
    assert_int_equal(op.recv.n_msgs, 3);
    assert_true(op.recv.msgs[0].seq == s1);
    fx_assert_body(&op.recv.msgs[0], utf8);
    assert_int_equal(op.recv.msgs[0].priority, 8);
    assert_int_equal(op.recv.msgs[0].enqueue_ms, FX_EPOCH0);
    assert_true(op.recv.msgs[1].seq == s2);
    assert_int_equal(op.recv.msgs[1].body_len, SMQ_MSG_SIZE_MAX);
    assert_memory_equal(op.recv.msgs[1].body, big, SMQ_MSG_SIZE_MAX);
    assert_true(op.recv.msgs[2].seq == s3);
    assert_int_equal(op.recv.msgs[2].body_len, 3);
    assert_memory_equal(op.recv.msgs[2].body, "a\0b", 3);
    op_release(&op);
    assert_null(op.recv.msgs[0].body);
}

static void test_engine_messages_send_rejects_bad_bodies(void **state)
{
    struct fx *f = *state;
    struct smq_queue_attrs a;
    char body[1025];
    struct smq_op op;

    memset(body, 'x', sizeof body);
    mns_default_attrs(&a);
    a.max_msg_size = 1024;
    assert_int_equal(fx_create_queue(f, "small", &a, SMQ_ATTR_MAX_MSG_SIZE, NULL), 0);

    /* One byte over the queue's MaximumMessageSize. */
    assert_int_equal(fx_send_msg(f, "small", body, 1025, 0, 8, NULL), SMQ_E_INVALID_ARGUMENT);
    /* Empty body. */
    assert_int_equal(fx_send_msg(f, "small", "", 0, 0, 8, NULL), SMQ_E_INVALID_ARGUMENT);
    /* A batch with one bad item stores nothing at all. */
    fx_prep_op(f, &op, SMQ_OP_SEND, "small");
    op.send.items[0] = (struct smq_send_item){.body = "fine", .body_len = 4, .delay_s = 0, .priority = 8};
    op.send.items[1] = (struct smq_send_item){.body = body, .body_len = 1025, .delay_s = 0, .priority = 8};
    op.send.n = 2;
    assert_int_equal(fx_run_one(f, &op), SMQ_E_INVALID_ARGUMENT);
    op_release(&op);

    fx_assert_counts(f, "small", 0, 0, 0);
    assert_int_equal(fx_stats(f).messages, 0);
    assert_int_equal(db_peek_int(f->path, "SELECT count(*) FROM msg"), 0);
    assert_int_equal(db_peek_int(f->path, "SELECT count(*) FROM msg_body"), 0);

    /* Exactly the limit is fine. */
    assert_int_equal(fx_send_msg(f, "small", body, 1024, 0, 8, NULL), 0);
    fx_assert_counts(f, "small", 1, 0, 0);
}

/* The MD5 the API computed at send is stored with the body and comes back
 * with every receive, also after a restart; a send without one gets none
 * (the renderer hashes the body then). */
static void test_engine_messages_body_md5_stored_at_send(void **state)
{
    struct fx *f = *state;
    static const unsigned char md5[MNS_MD5_LEN] = {1, 2, 3, 4, 5, 6, 7, 8,
                                                   9, 10, 11, 12, 13, 14, 15, 16};
    struct smq_msg_view v;
    struct smq_op op;

    fx_create_queue_vis(f, "q", 1);
    fx_prep_op(f, &op, SMQ_OP_SEND, "q");
    op.send.items[0] = (struct smq_send_item){.body = "with", .body_len = 4, .body_md5 = md5, .priority = 8};
    op.send.items[1] = (struct smq_send_item){.body = "without", .body_len = 7, .priority = 8};
    op.send.n = 2;
    assert_int_equal(fx_run_one(f, &op), 0);
    op_release(&op);
    fx_reopen_engine(f, FX_MAX_QUEUES_DEFAULT);
    assert_int_equal(fx_receive_one(f, "q", &v), 0);
    assert_true(v.body_md5.present);
    assert_memory_equal(v.body_md5.bytes, md5, sizeof md5);
    assert_int_equal(fx_receive_one(f, "q", &v), 0);
    assert_false(v.body_md5.present);
}

static void test_engine_messages_receive_sets_dequeue_fields(void **state)
{
    struct fx *f = *state;
    struct smq_msg_view v;
    struct smq_op op;
    uint64_t seq;

    fx_create_queue_vis(f, "q", 10);
    seq = fx_send_text(f, "q", "hello", 0, 8);
    clock_fake_advance(&f->clock, 1234);

    assert_int_equal(fx_receive(f, &op, "q", 1, 0), 0);
    assert_int_equal(op.recv.n_msgs, 1);
    v = op.recv.msgs[0];
    assert_true(v.seq == seq);
    fx_assert_body(&v, "hello");
    assert_int_equal(v.dequeue_count, 1);
    assert_int_equal(v.enqueue_ms, FX_EPOCH0);
    assert_int_equal(v.first_dequeue_ms, FX_EPOCH0 + 1234);
    assert_int_equal(v.next_visible_ms, FX_EPOCH0 + 1234 + 10000);
    assert_true(v.handle_gen >= 1);
    op_release(&op);
    fx_assert_counts(f, "q", 0, 1, 0);

    /* Inactive: a second receive without a wait finds nothing. */
    assert_int_equal(fx_receive(f, &op, "q", 1, 0), SMQ_E_MESSAGE_NOT_EXIST);
    assert_int_equal(op.recv.n_msgs, 0);
    op_release(&op);
    assert_int_equal(fx_delete_msg(f, "q", v.seq, v.handle_gen), 0);
    fx_assert_counts(f, "q", 0, 0, 0);
}

static void test_engine_messages_priority_order(void **state)
{
    struct fx *f = *state;
    static const int prio_cycle[3] = {16, 8, 1};
    uint64_t seq[18], expect[18];
    int prio[18];
    struct smq_op op, batch;
    size_t k = 0;

    assert_int_equal(fx_create_queue(f, "p", NULL, 0, NULL), 0);
    /* 18 messages: five in one batch, the rest one at a time; priorities
     * cycle 16, 8, 1 so every priority has several, oldest first. */
    fx_prep_op(f, &batch, SMQ_OP_SEND, "p");
    for (int i = 0; i < 5; i++) {
        prio[i] = prio_cycle[i % 3];
        batch.send.items[i] = (struct smq_send_item){.body = "batch", .body_len = 5, .delay_s = 0, .priority = prio[i]};
    }
    batch.send.n = 5;
    assert_int_equal(fx_run_one(f, &batch), 0);
    for (int i = 0; i < 5; i++)
        seq[i] = batch.send.seq[i];
    op_release(&batch);
    for (int i = 5; i < 18; i++) {
        prio[i] = prio_cycle[i % 3];
        seq[i] = fx_send_text(f, "p", "single", 0, prio[i]);
        assert_true(seq[i] > seq[i - 1]);
    }

    /* Expected order: priority 1 (oldest first), then 8, then 16. */
    for (int p = 0; p < 3; p++)
        for (int i = 0; i < 18; i++)
            if (prio[i] == prio_cycle[2 - p])
                expect[k++] = seq[i];
    assert_int_equal(k, 18);

    assert_int_equal(fx_receive(f, &op, "p", 16, 0), 0);
    assert_int_equal(op.recv.n_msgs, 16);
    for (size_t i = 0; i < 16; i++)
        assert_true(op.recv.msgs[i].seq == expect[i]);
    assert_int_equal(op.recv.msgs[0].priority, 1);
    assert_int_equal(op.recv.msgs[15].priority, 16);
    op_release(&op);

    assert_int_equal(fx_receive(f, &op, "p", 16, 0), 0);
    assert_int_equal(op.recv.n_msgs, 2);
    assert_true(op.recv.msgs[0].seq == expect[16]);
    assert_true(op.recv.msgs[1].seq == expect[17]);
    op_release(&op);
}

/* ---- peek, delete, change visibility ------------------------------------- */

static void test_engine_messages_peek_changes_nothing(void **state)
{
    struct fx *f = *state;
    struct smq_op op;
    uint64_t sa, sb;

    assert_int_equal(fx_create_queue(f, "pk", NULL, 0, NULL), 0);
    sa = fx_send_text(f, "pk", "first", 0, 8);
    clock_fake_advance(&f->clock, 1000);
    sb = fx_send_text(f, "pk", "second", 0, 8);
    clock_fake_advance(&f->clock, 1000);

    fx_prep_op(f, &op, SMQ_OP_PEEK, "pk");
    assert_int_equal(fx_run_one(f, &op), 0);
    assert_int_equal(op.recv.n_msgs, 1);
    assert_true(op.recv.msgs[0].seq == sa);
    fx_assert_body(&op.recv.msgs[0], "first");
    assert_int_equal(op.recv.msgs[0].dequeue_count, 0);
    assert_int_equal(op.recv.msgs[0].enqueue_ms, FX_EPOCH0);
    assert_int_equal(op.recv.msgs[0].first_dequeue_ms, op.recv.msgs[0].enqueue_ms);
    assert_int_equal(op.recv.msgs[0].next_visible_ms, FX_EPOCH0);
    op_release(&op);
    fx_assert_counts(f, "pk", 2, 0, 0);

    fx_prep_op(f, &op, SMQ_OP_PEEK, "pk");
    op.recv.max_msgs = 16;
    assert_int_equal(fx_run_one(f, &op), 0);
    assert_int_equal(op.recv.n_msgs, 2);
    assert_true(op.recv.msgs[0].seq == sa);
    assert_true(op.recv.msgs[1].seq == sb);
    fx_assert_body(&op.recv.msgs[1], "second");
    assert_int_equal(op.recv.msgs[1].dequeue_count, 0);
    assert_int_equal(op.recv.msgs[1].first_dequeue_ms, FX_EPOCH0 + 1000);
    op_release(&op);
    fx_assert_counts(f, "pk", 2, 0, 0);

    /* A receive still gets the first one first, as a first delivery. */
    assert_int_equal(fx_receive(f, &op, "pk", 1, 0), 0);
    assert_true(op.recv.msgs[0].seq == sa);
    assert_int_equal(op.recv.msgs[0].dequeue_count, 1);
    assert_int_equal(op.recv.msgs[0].first_dequeue_ms, FX_EPOCH0 + 2000);
    op_release(&op);
    fx_assert_counts(f, "pk", 1, 1, 0);

    /* Peek on an empty queue. */
    assert_int_equal(fx_create_queue(f, "empty", NULL, 0, NULL), 0);
    fx_prep_op(f, &op, SMQ_OP_PEEK, "empty");
    assert_int_equal(fx_run_one(f, &op), SMQ_E_MESSAGE_NOT_EXIST);
    assert_int_equal(op.recv.n_msgs, 0);
    op_release(&op);
}

static void test_engine_messages_delete_single_handles(void **state)
{
    struct fx *f = *state;
    struct smq_msg_view v1, v2, v2b;

    fx_create_queue_vis(f, "q1", 5);
    assert_int_equal(fx_create_queue(f, "q2", NULL, 0, NULL), 0);
    fx_send_text(f, "q1", "one", 0, 8);
    fx_send_text(f, "q1", "two", 0, 8);
    assert_int_equal(fx_receive_one(f, "q1", &v1), 0);
    assert_int_equal(fx_receive_one(f, "q1", &v2), 0);
    fx_assert_counts(f, "q1", 0, 2, 0);

    /* A valid handle presented to another queue. */
    assert_int_equal(fx_delete_msg(f, "q2", v1.seq, v1.handle_gen), SMQ_E_MESSAGE_NOT_EXIST);
    fx_assert_counts(f, "q1", 0, 2, 0);
    /* A handle of a later generation than issued. */
    assert_int_equal(fx_delete_msg(f, "q1", v1.seq, v1.handle_gen + 1), SMQ_E_MESSAGE_NOT_EXIST);
    /* Valid. */
    assert_int_equal(fx_delete_msg(f, "q1", v1.seq, v1.handle_gen), 0);
    fx_assert_counts(f, "q1", 0, 1, 0);
    assert_int_equal(fx_delete_msg(f, "q1", v1.seq, v1.handle_gen), SMQ_E_MESSAGE_NOT_EXIST);

    /* Stale generation: v2 redelivered after its visibility timeout. */
    fx_tick(f, 5000);
    assert_int_equal(fx_receive_one(f, "q1", &v2b), 0);
    assert_true(v2b.seq == v2.seq);
    assert_int_equal(fx_delete_msg(f, "q1", v2.seq, v2.handle_gen), SMQ_E_MESSAGE_NOT_EXIST);
    fx_assert_counts(f, "q1", 0, 1, 0);
    assert_int_equal(fx_delete_msg(f, "q1", v2b.seq, v2b.handle_gen), 0);
    fx_assert_counts(f, "q1", 0, 0, 0);
    assert_int_equal(fx_stats(f).messages, 0);
    assert_int_equal(db_peek_int(f->path, "SELECT count(*) FROM msg"), 0);
}

/* A malformed handle given alone, to DeleteMessage and to a
 * BatchDeleteMessage of one handle. */
static void check_lone_bad_handle(struct fx *f, const char *queue)
{
    struct smq_op op;

    /* A single DeleteMessage reports its handle's error as the op result... */
    fx_prep_op(f, &op, SMQ_OP_DELETE_MSG, queue);
    op.del.refs[0].err = SMQ_E_RECEIPT_HANDLE_ERROR;
    op.del.n = 1;
    assert_int_equal(fx_run_one(f, &op), SMQ_E_RECEIPT_HANDLE_ERROR);
    op_release(&op);
    /* ...a BatchDeleteMessage of one handle reports it per item (§7.12). */
    fx_prep_op(f, &op, SMQ_OP_DELETE_MSG, queue);
    op.del.refs[0].err = SMQ_E_RECEIPT_HANDLE_ERROR;
    op.del.n = 1;
    op.del.batch = true;
    assert_int_equal(fx_run_one(f, &op), 0);
    assert_int_equal(op.del.refs[0].err, SMQ_E_RECEIPT_HANDLE_ERROR);
    op_release(&op);
}

static void test_engine_messages_delete_batch_mixed(void **state)
{
    struct fx *f = *state;
    struct smq_msg_view v[3], stale;
    struct smq_op op;
    uint64_t seq;
    uint32_t gen;

    fx_create_queue_vis(f, "b", 5);
    for (int i = 0; i < 3; i++)
        fx_send_text(f, "b", "m", 0, 8);
    assert_int_equal(fx_receive_one(f, "b", &v[0]), 0);
    assert_int_equal(fx_receive_one(f, "b", &stale), 0);
    assert_int_equal(fx_receive_one(f, "b", &v[2]), 0);
    /* All three come back after the visibility timeout and are received
     * again, so "stale" holds the middle one's previous generation. */
    fx_tick(f, 5000);
    assert_int_equal(fx_receive_one(f, "b", &v[0]), 0);
    assert_int_equal(fx_receive_one(f, "b", &v[1]), 0);
    assert_int_equal(fx_receive_one(f, "b", &v[2]), 0);
    assert_true(v[1].seq == stale.seq);
    assert_int_equal(v[1].handle_gen, stale.handle_gen + 1);
    fx_assert_counts(f, "b", 0, 3, 0);

    fx_prep_op(f, &op, SMQ_OP_DELETE_MSG, "b");
    fx_make_ref(f, stale.seq, stale.handle_gen, &op.del.refs[0]);     /* stale */
    fx_make_ref(f, v[0].seq, v[0].handle_gen, &op.del.refs[1]);       /* valid */
    op.del.refs[2].err = handle_decode(engine_keys(f->e), "not-a-handle", 12, &seq, &gen);
    assert_int_equal(op.del.refs[2].err, SMQ_E_RECEIPT_HANDLE_ERROR);  /* malformed */
    fx_make_ref(f, v[2].seq, v[2].handle_gen, &op.del.refs[3]);       /* valid */
    fx_make_ref(f, v[2].seq, v[2].handle_gen, &op.del.refs[4]);       /* same again */
    op.del.n = 5;
    op.del.batch = true;
    /* A batch succeeds as a whole; the failures are per item. */
    assert_int_equal(fx_run_one(f, &op), 0);
    assert_int_equal(op.del.refs[0].err, SMQ_E_MESSAGE_NOT_EXIST);
    assert_int_equal(op.del.refs[1].err, 0);
    assert_int_equal(op.del.refs[2].err, SMQ_E_RECEIPT_HANDLE_ERROR);
    assert_int_equal(op.del.refs[3].err, 0);
    assert_int_equal(op.del.refs[4].err, SMQ_E_MESSAGE_NOT_EXIST);
    op_release(&op);

    /* Only v[1] is left, still Inactive and deletable with its current handle. */
    fx_assert_counts(f, "b", 0, 1, 0);
    assert_int_equal(fx_stats(f).messages, 1);
    assert_int_equal(db_peek_int(f->path, "SELECT count(*) FROM msg"), 1);
    assert_int_equal(fx_delete_msg(f, "b", v[1].seq, v[1].handle_gen), 0);
    fx_assert_counts(f, "b", 0, 0, 0);
    check_lone_bad_handle(f, "b");
}

static void test_engine_messages_change_visibility(void **state)
{
    struct fx *f = *state;
    struct smq_msg_view v, again;
    int64_t next_visible = 0;
    uint32_t gen = 0;

    fx_create_queue_vis(f, "cv", 30);
    fx_send_text(f, "cv", "m", 0, 8);
    assert_int_equal(fx_receive_one(f, "cv", &v), 0);
    fx_tick(f, 1000);

    assert_int_equal(fx_change_vis(f, "cv", v.seq, v.handle_gen, 20, &gen, &next_visible), 0);
    assert_int_equal(gen, v.handle_gen + 1);
    assert_int_equal(next_visible, fx_now_ms(f) + 20000);
    fx_assert_counts(f, "cv", 0, 1, 0);

    /* The old handle is stale for both delete and another change. */
    assert_int_equal(fx_delete_msg(f, "cv", v.seq, v.handle_gen), SMQ_E_MESSAGE_NOT_EXIST);
    assert_int_equal(fx_change_vis(f, "cv", v.seq, v.handle_gen, 5, NULL, NULL),
                     SMQ_E_MESSAGE_NOT_EXIST);

    /* The new deadline replaces the old one (which was +30 s from receive). */
    fx_tick(f, 19999);
    fx_assert_counts(f, "cv", 0, 1, 0);
    fx_tick(f, 1);
    fx_assert_counts(f, "cv", 1, 0, 0);
    /* Active: even the newest handle no longer applies. */
    assert_int_equal(fx_change_vis(f, "cv", v.seq, gen, 5, NULL, NULL), SMQ_E_MESSAGE_NOT_EXIST);

    assert_int_equal(fx_receive_one(f, "cv", &again), 0);
    assert_int_equal(again.dequeue_count, 2);
    assert_int_equal(again.handle_gen, gen + 1);
    /* N = 0: Active at once, in the same run. */
    assert_int_equal(fx_change_vis(f, "cv", again.seq, again.handle_gen, 0, &gen, &next_visible), 0);
    assert_int_equal(next_visible, fx_now_ms(f));
    fx_assert_counts(f, "cv", 1, 0, 0);
}


/* One SendMessage with the given extensions; *delayed says whether the
 * engine reports it as starting Delayed (it then has a handle of gen 0). */
static uint64_t send_ext(struct fx *f, const char *queue, const char *body, int64_t delay_s,
                         const char *ext, bool *delayed)
{
    struct smq_op op;
    uint64_t seq;

    fx_prep_op(f, &op, SMQ_OP_SEND, queue);
    op.send.items[0] = (struct smq_send_item){.body = body, .body_len = strlen(body),
                                              .delay_s = delay_s, .priority = 8, .ext = ext,
                                              .ext_len = ext != NULL ? strlen(ext) : 0};
    op.send.n = 1;
    assert_int_equal(fx_run_one(f, &op), 0);
    seq = op.send.seq[0];
    if (delayed != NULL)
        *delayed = op.send.delayed[0];
    op_release(&op);
    return seq;
}

/* The Java SDK's TransactionQueue: a long-delayed send is committed with
 * ChangeMessageVisibility(its send's handle, 1 s) or rolled back with
 * DeleteMessage(that handle) (docs/protocol.md §7.6). */
static void test_engine_messages_delayed_send_handle(void **state)
{
    struct fx *f = *state;
    struct smq_msg_view v;
    struct smq_queue_attrs slow = {.delay_s = 30};
    int64_t next_visible = 0;
    uint32_t gen = 0;
    bool delayed = true;
    uint64_t a, b, c;

    assert_int_equal(fx_create_queue(f, "tq", NULL, 0, NULL), 0);
    send_ext(f, "tq", "now", 0, NULL, &delayed);
    assert_false(delayed);
    a = send_ext(f, "tq", "rollback", 172800, NULL, &delayed);
    assert_true(delayed);
    b = send_ext(f, "tq", "commit", 172800, NULL, NULL);
    fx_assert_counts(f, "tq", 1, 0, 2);

    /* Rollback: the send's handle deletes the Delayed message, once. */
    assert_int_equal(fx_delete_msg(f, "tq", a, 0), 0);
    assert_int_equal(fx_delete_msg(f, "tq", a, 0), SMQ_E_MESSAGE_NOT_EXIST);
    fx_assert_counts(f, "tq", 1, 0, 1);
    /* Commit: visible in 1 s, with a new handle; the send's is spent. */
    assert_int_equal(fx_change_vis(f, "tq", b, 0, 1, &gen, &next_visible), 0);
    assert_int_equal(gen, 1);
    assert_int_equal(next_visible, fx_now_ms(f) + 1000);
    assert_int_equal(fx_delete_msg(f, "tq", b, 0), SMQ_E_MESSAGE_NOT_EXIST);
    fx_assert_counts(f, "tq", 1, 0, 1);
    fx_tick(f, 1000);
    fx_assert_counts(f, "tq", 2, 0, 0);
    /* Active now: no handle from before a receive applies. */
    assert_int_equal(fx_delete_msg(f, "tq", b, gen), SMQ_E_MESSAGE_NOT_EXIST);

    /* A queue's own delay makes a message Delayed too; the handle survives
     * a restart and ends when the delay does. */
    assert_int_equal(fx_create_queue(f, "dq", &slow, SMQ_ATTR_DELAY, NULL), 0);
    c = send_ext(f, "dq", "queued", 0, NULL, &delayed);
    assert_true(delayed);
    fx_reopen_engine(f, FX_MAX_QUEUES_DEFAULT);
    assert_int_equal(fx_change_vis(f, "dq", c, 0, 60, &gen, NULL), 0);
    fx_tick(f, 60000);
    assert_int_equal(fx_delete_msg(f, "dq", c, gen), SMQ_E_MESSAGE_NOT_EXIST);
    assert_int_equal(fx_receive_one(f, "dq", &v), 0);
    assert_true(v.seq == c);
    assert_int_equal(v.dequeue_count, 1);
    assert_int_equal(fx_delete_msg(f, "dq", c, v.handle_gen), 0);
}

static void expect_ext(const struct smq_msg_view *v, const char *body, const char *ext)
{
    fx_assert_body(v, body);
    assert_int_equal(v->ext_len, ext != NULL ? strlen(ext) : 0);
    if (ext != NULL)
        assert_memory_equal(v->ext, ext, v->ext_len);
}

/* A batch of two, one with extensions: each view points at its own. */
static void receive_both(struct fx *f, enum smq_op_kind kind, const char *ext)
{
    struct smq_op op;

    fx_prep_op(f, &op, kind, "xq");
    op.recv.max_msgs = 2;
    if (kind == SMQ_OP_RECEIVE)
        op.recv.wait_s = 0;
    assert_int_equal(fx_run_one(f, &op), 0);
    assert_int_equal(op.recv.n_msgs, 2);
    expect_ext(&op.recv.msgs[0], "with", ext);
    expect_ext(&op.recv.msgs[1], "without", NULL);
    op_release(&op);
}

static void test_engine_messages_extensions_kept(void **state)
{
    struct fx *f = *state;
    const char *ext = "<MessageGroupId>g&amp;1</MessageGroupId>";

    fx_create_queue_vis(f, "xq", 5);
    send_ext(f, "xq", "with", 0, ext, NULL);
    send_ext(f, "xq", "without", 0, NULL, NULL);
    receive_both(f, SMQ_OP_PEEK, ext);
    fx_reopen_engine(f, FX_MAX_QUEUES_DEFAULT);
    receive_both(f, SMQ_OP_PEEK, ext);
    receive_both(f, SMQ_OP_RECEIVE, ext);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, fx_setup, fx_teardown)
        T(test_engine_messages_send_receive_round_trip),
        T(test_engine_messages_send_rejects_bad_bodies),
        T(test_engine_messages_body_md5_stored_at_send),
        T(test_engine_messages_receive_sets_dequeue_fields),
        T(test_engine_messages_priority_order),
        T(test_engine_messages_peek_changes_nothing),
        T(test_engine_messages_delete_single_handles),
        T(test_engine_messages_delete_batch_mixed),
        T(test_engine_messages_change_visibility),
        T(test_engine_messages_delayed_send_handle),
        T(test_engine_messages_extensions_kept),
#undef T
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
