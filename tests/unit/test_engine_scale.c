/*
 * test_engine_scale.c — the engine with 10,000 messages in one queue:
 * enough to grow the message table (1,024 buckets at open) and the Active
 * heap well past their first sizes.  Every message sent in batches of 16
 * comes back exactly once, body intact, in priority order and within a
 * priority in send order, across the whole queue; deleting them all leaves
 * nothing in memory or on disk.
 *
 * The engine runs synchronously on a fake clock over a real SQLite store,
 * as engine_fixture.h describes; the large arrays live in f->scratch so
 * that teardown frees them even when an assertion fails.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_fixture.h"

#define BIG_N 10000

/* The messages of the run: their seqs in send order, whether each has come
 * back yet, their bodies ("m<k>", priority k % 16 + 1), and the latest one
 * received, for the order. */
struct big {
    uint64_t *seqs;
    unsigned char *seen;
    char (*bodies)[16];
    int last_prio;
    uint64_t last_seq;
    int received;
};

/* Index of seq in the ascending array seqs[0..n), or -1. */
static int find_seq(const uint64_t *seqs, int n, uint64_t seq)
{
    int lo = 0, hi = n;

    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (seqs[mid] < seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && seqs[lo] == seq ? lo : -1;
}

/* Sends the BIG_N messages to "big" in batches of SMQ_BATCH_MAX; each seq
 * is above the one before. */
static void send_all(struct fx *f, struct big *b)
{
    struct smq_op op;

    for (int base = 0; base < BIG_N; base += SMQ_BATCH_MAX) {
        fx_prep_op(f, &op, SMQ_OP_SEND, "big");
        for (int i = 0; i < SMQ_BATCH_MAX && base + i < BIG_N; i++) {
            int k = base + i;
            int n = snprintf(b->bodies[k], sizeof b->bodies[k], "m%d", k);
            op.send.items[i] = (struct smq_send_item){.body = b->bodies[k], .body_len = (size_t)n,
                                                      .delay_s = 0, .priority = k % 16 + 1};
            op.send.n++;
        }
        assert_int_equal(fx_run_one(f, &op), 0);
        for (size_t i = 0; i < op.send.n; i++) {
            b->seqs[base + (int)i] = op.send.seq[i];
            if (base + (int)i > 0)
                assert_true(b->seqs[base + (int)i] > b->seqs[base + (int)i - 1]);
        }
        op_release(&op);
    }
}

/* One received message: one that was sent, not seen before, with its
 * priority and body, and after the previous one in priority-then-age order. */
static void check_received(struct big *b, const struct smq_msg_view *v)
{
    int k = find_seq(b->seqs, BIG_N, v->seq);

    assert_true(k >= 0);
    assert_int_equal(b->seen[k], 0);
    b->seen[k] = 1;
    assert_int_equal(v->priority, k % 16 + 1);
    assert_int_equal(v->body_len, strlen(b->bodies[k]));
    assert_memory_equal(v->body, b->bodies[k], v->body_len);
    assert_true(v->priority > b->last_prio
                || (v->priority == b->last_prio && v->seq > b->last_seq));
    b->last_prio = v->priority;
    b->last_seq = v->seq;
    b->received++;
}

/* Receives "big" 16 at a time, deleting each batch with one
 * BatchDeleteMessage, until nothing is left. */
static void receive_and_delete_all(struct fx *f, struct big *b)
{
    struct smq_op op;

    for (;;) {
        struct smq_op del;
        int err = fx_receive(f, &op, "big", SMQ_BATCH_MAX, 0);

        if (err == SMQ_E_MESSAGE_NOT_EXIST)
            break;
        assert_int_equal(err, 0);
        fx_prep_op(f, &del, SMQ_OP_DELETE_MSG, "big");
        for (size_t i = 0; i < op.recv.n_msgs; i++) {
            const struct smq_msg_view *v = &op.recv.msgs[i];

            check_received(b, v);
            fx_make_ref(f, v->seq, v->handle_gen, &del.del.refs[i]);
        }
        del.del.n = op.recv.n_msgs;
        del.del.batch = true;
        op_release(&op);
        assert_int_equal(fx_run_one(f, &del), 0);
        for (size_t i = 0; i < del.del.n; i++)
            assert_int_equal(del.del.refs[i].err, 0);
        op_release(&del);
    }
    op_release(&op);
}

static void test_engine_scale_ten_thousand_messages(void **state)
{
    struct fx *f = *state;
    struct big b = {0};

    b.seqs = f->scratch[0] = calloc(BIG_N, sizeof *b.seqs);
    b.seen = f->scratch[1] = calloc(BIG_N, 1);
    b.bodies = f->scratch[2] = calloc(BIG_N, sizeof *b.bodies);
    assert_non_null(b.seqs);
    assert_non_null(b.seen);
    assert_non_null(b.bodies);
    assert_int_equal(fx_create_queue(f, "big", NULL, 0, NULL), 0);

    send_all(f, &b);
    fx_assert_counts(f, "big", BIG_N, 0, 0);
    assert_int_equal(fx_stats(f).messages, BIG_N);

    /* Receive and delete everything, 16 at a time: the order is by
     * priority, then by age, across the whole queue. */
    receive_and_delete_all(f, &b);
    assert_int_equal(b.received, BIG_N);
    fx_assert_counts(f, "big", 0, 0, 0);
    assert_int_equal(fx_stats(f).messages, 0);
    assert_int_equal(db_peek_int(f->path, "SELECT count(*) FROM msg"), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, fx_setup, fx_teardown)
        T(test_engine_scale_ten_thousand_messages),
#undef T
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
