/*
 * test_op.c — unit tests for an operation's life outside the engine
 * (src/mns/op.c): op_init and op_set_kind's neutral defaults for every kind,
 * what op_set_kind keeps (queue, request id, completion), op_release
 * freeing exactly what each kind owns (run under valgrind for leaks),
 * op_fail clearing outputs and "created", and op_answer calling done in
 * order with each op unlinked first; and that every kind has its row in
 * op.c's table.
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

#include "smqd/errors.h"
#include "smqd/op.h"

static const enum smq_op_kind all_kinds[] = {
    SMQ_OP_CREATE_QUEUE, SMQ_OP_SET_QUEUE, SMQ_OP_GET_QUEUE, SMQ_OP_DELETE_QUEUE,
    SMQ_OP_LIST_QUEUES,  SMQ_OP_SEND,      SMQ_OP_RECEIVE,   SMQ_OP_PEEK,
    SMQ_OP_DELETE_MSG,   SMQ_OP_CHANGE_VISIBILITY, SMQ_OP_PURGE, SMQ_OP_REDRIVE,
    SMQ_OP_STATS, SMQ_OP_CREATE_TOPIC, SMQ_OP_SET_TOPIC, SMQ_OP_GET_TOPIC,
    SMQ_OP_DELETE_TOPIC, SMQ_OP_LIST_TOPICS, SMQ_OP_PUBLISH, SMQ_OP_SUBSCRIBE,
    SMQ_OP_SET_SUBSCRIPTION, SMQ_OP_GET_SUBSCRIPTION, SMQ_OP_UNSUBSCRIBE,
    SMQ_OP_LIST_SUBSCRIPTIONS, SMQ_OP_PUSH_RESULT,
};

#define N_KINDS (sizeof all_kinds / sizeof all_kinds[0])

/* ---- helpers ------------------------------------------------------------ */

static bool all_zero(const void *p, size_t n)
{
    const unsigned char *b = p;

    for (size_t i = 0; i < n; i++)
        if (b[i] != 0)
            return false;
    return true;
}

/* op's own member for its kind holds the neutral defaults. */
static void assert_neutral(const struct smq_op *op)
{
    switch (op->kind) {
    case SMQ_OP_CREATE_QUEUE:
    case SMQ_OP_SET_QUEUE:
        assert_true(all_zero(&op->attrs.values, sizeof op->attrs.values));
        assert_int_equal(op->attrs.present, 0);
        assert_false(op->attrs.created);
        break;
    case SMQ_OP_GET_QUEUE:
        assert_true(all_zero(&op->info, sizeof op->info));
        break;
    case SMQ_OP_DELETE_QUEUE:
        break;                                  /* no member */
    case SMQ_OP_LIST_QUEUES:
        assert_string_equal(op->list.prefix, "");
        assert_string_equal(op->list.marker, "");
        assert_int_equal(op->list.ret_number, 1000);
        assert_null(op->list.queues);
        assert_int_equal(op->list.n_queues, 0);
        assert_string_equal(op->list.next_marker, "");
        break;
    case SMQ_OP_SEND:
        assert_true(all_zero(&op->send, sizeof op->send));
        break;
    case SMQ_OP_RECEIVE:
    case SMQ_OP_PEEK:
        assert_int_equal(op->recv.max_msgs, 1);
        assert_int_equal(op->recv.wait_s, -1);
        assert_int_equal(op->recv.n_msgs, 0);
        assert_null(op->recv.body_block);
        assert_true(all_zero(op->recv.msgs, sizeof op->recv.msgs));
        break;
    case SMQ_OP_DELETE_MSG:
        assert_true(all_zero(&op->del, sizeof op->del));
        break;
    case SMQ_OP_CHANGE_VISIBILITY:
        assert_true(all_zero(&op->vis, sizeof op->vis));
        break;
    case SMQ_OP_PURGE:
        assert_true(all_zero(&op->purge, sizeof op->purge));
        break;
    case SMQ_OP_REDRIVE:
        assert_true(all_zero(&op->redrive, sizeof op->redrive));
        break;
    case SMQ_OP_STATS:
        assert_true(all_zero(&op->stats, sizeof op->stats));
        break;
    case SMQ_OP_CREATE_TOPIC:
    case SMQ_OP_SET_TOPIC:
    case SMQ_OP_GET_TOPIC:
        assert_int_equal(op->topic.values.max_msg_size, SMQ_MSG_SIZE_MAX);
        assert_int_equal(op->topic.values.logging, 0);
        assert_int_equal(op->topic.present, 0);
        assert_false(op->topic.created);
        assert_true(all_zero(&op->topic.info, sizeof op->topic.info));
        break;
    case SMQ_OP_DELETE_TOPIC:
        break;
    case SMQ_OP_LIST_TOPICS:
        assert_int_equal(op->tlist.ret_number, 1000);
        assert_null(op->tlist.topics);
        assert_int_equal(op->tlist.n_topics, 0);
        break;
    case SMQ_OP_PUBLISH:
        assert_true(all_zero(&op->publish, sizeof op->publish));
        break;
    case SMQ_OP_SUBSCRIBE:
    case SMQ_OP_SET_SUBSCRIPTION:
    case SMQ_OP_GET_SUBSCRIPTION:
    case SMQ_OP_UNSUBSCRIBE:
        assert_true(all_zero(&op->sub, sizeof op->sub));
        break;
    case SMQ_OP_LIST_SUBSCRIPTIONS:
        assert_int_equal(op->slist.ret_number, 1000);
        assert_null(op->slist.subs);
        break;
    case SMQ_OP_PUSH_RESULT:
        assert_true(all_zero(&op->push, sizeof op->push));
        break;
    }
}

/* Gives a receive or peek op two messages in one body block, as the
 * engine does. */
static void fill_recv(struct smq_op *op)
{
    op->recv.body_block = malloc(10);
    assert_non_null(op->recv.body_block);
    memcpy(op->recv.body_block, "helloworld", 10);
    op->recv.msgs[0].body = op->recv.body_block;
    op->recv.msgs[0].body_len = 5;
    op->recv.msgs[1].body = op->recv.body_block + 5;
    op->recv.msgs[1].body_len = 5;
    op->recv.n_msgs = 2;
}

static void fill_list(struct smq_op *op)
{
    op->list.queues = calloc(3, sizeof *op->list.queues);
    assert_non_null(op->list.queues);
    op->list.n_queues = 3;
}

static void fill_stats(struct smq_op *op)
{
    op->stats.queues = calloc(2, sizeof *op->stats.queues);
    assert_non_null(op->stats.queues);
    op->stats.n_queues = 2;
}

/* ---- op_init / op_set_kind ---------------------------------------------- */

/* op_init clears the whole op, whatever it held, for every kind. */
static void test_op_init_defaults_every_kind(void **state)
{
    struct smq_op op;

    (void)state;
    for (size_t i = 0; i < N_KINDS; i++) {
        memset(&op, 0xa5, sizeof op);
        op_init(&op, all_kinds[i]);
        assert_int_equal(op.kind, all_kinds[i]);
        assert_string_equal(op.queue, "");
        assert_string_equal(op.request_id, "");
        assert_int_equal(op.result.err, 0);
        assert_string_equal(op.result.msg, "");
        assert_null(op.done);
        assert_null(op.done_arg);
        assert_null(op.client_gone);
        assert_null(op.next);
        assert_null(op.wait_prev);
        assert_null(op.wait_next);
        assert_null(op.wait_queue);
        assert_false(twheel_armed(&op.wait_timer));
        assert_int_equal(op.sync_ticket, 0);
        assert_neutral(&op);
        op_release(&op);
    }
}

static void test_op_receive_and_list_defaults(void **state)
{
    struct smq_op op;

    (void)state;
    op_init(&op, SMQ_OP_RECEIVE);
    assert_int_equal(op.recv.max_msgs, 1);
    assert_int_equal(op.recv.wait_s, -1);
    op_init(&op, SMQ_OP_PEEK);
    assert_int_equal(op.recv.max_msgs, 1);
    assert_int_equal(op.recv.wait_s, -1);
    op_init(&op, SMQ_OP_LIST_QUEUES);
    assert_int_equal(op.list.ret_number, 1000);
}

static void done_noop(struct smq_op *op, void *arg)
{
    (void)op;
    (void)arg;
}

static bool gone_never(struct smq_op *op, void *arg)
{
    (void)op;
    (void)arg;
    return false;
}

/* The queue, the request id and the completion survive a change of kind. */
static void test_op_set_kind_keeps_queue_request_done(void **state)
{
    struct smq_op op;
    int arg;

    (void)state;
    for (size_t i = 0; i < N_KINDS; i++) {
        for (size_t j = 0; j < N_KINDS; j++) {
            op_init(&op, all_kinds[i]);
            snprintf(op.queue, sizeof op.queue, "orders");
            snprintf(op.request_id, sizeof op.request_id, "5F1A2B3C4D5E6F7A8B9C0D1E");
            op.done = done_noop;
            op.done_arg = &arg;
            op.client_gone = gone_never;
            op_set_kind(&op, all_kinds[j]);
            assert_int_equal(op.kind, all_kinds[j]);
            assert_string_equal(op.queue, "orders");
            assert_string_equal(op.request_id, "5F1A2B3C4D5E6F7A8B9C0D1E");
            assert_ptr_equal(op.done, done_noop);
            assert_ptr_equal(op.done_arg, &arg);
            assert_ptr_equal(op.client_gone, gone_never);
            assert_neutral(&op);
            op_release(&op);
        }
    }
}

/* Changing kind frees what the old kind owned (valgrind: no leak) and
 * the new member starts out neutral. */
static void test_op_set_kind_releases_old_outputs(void **state)
{
    struct smq_op op;

    (void)state;
    op_init(&op, SMQ_OP_RECEIVE);
    fill_recv(&op);
    op_set_kind(&op, SMQ_OP_LIST_QUEUES);
    assert_neutral(&op);
    fill_list(&op);
    op_set_kind(&op, SMQ_OP_STATS);
    assert_neutral(&op);
    fill_stats(&op);
    op_set_kind(&op, SMQ_OP_PEEK);
    assert_neutral(&op);
    fill_recv(&op);
    op_set_kind(&op, SMQ_OP_PEEK);              /* same kind: reset too */
    assert_neutral(&op);
    op_release(&op);
}

/* Fills every member of the union with 0xff, as bytes left by an earlier
 * kind; the kind is set to one that owns nothing, so none of it is freed. */
static void scribble_union(struct smq_op *op)
{
    op_init(op, SMQ_OP_DELETE_QUEUE);
    memset(&op->attrs, 0xff, sizeof op->attrs);
    memset(&op->info, 0xff, sizeof op->info);
    memset(&op->list, 0xff, sizeof op->list);
    memset(&op->send, 0xff, sizeof op->send);
    memset(&op->recv, 0xff, sizeof op->recv);
    memset(&op->del, 0xff, sizeof op->del);
    memset(&op->vis, 0xff, sizeof op->vis);
    memset(&op->purge, 0xff, sizeof op->purge);
    memset(&op->redrive, 0xff, sizeof op->redrive);
    memset(&op->stats, 0xff, sizeof op->stats);
    op->kind = SMQ_OP_DELETE_QUEUE;
}

/* Whatever bytes the union held, op_set_kind leaves the new kind's member
 * neutral (the two attrs kinds: the next test). */
static void test_op_set_kind_drops_stale_member_bytes(void **state)
{
    struct smq_op op;

    (void)state;
    for (size_t i = 0; i < N_KINDS; i++) {
        if (all_kinds[i] == SMQ_OP_CREATE_QUEUE || all_kinds[i] == SMQ_OP_SET_QUEUE)
            continue;
        scribble_union(&op);
        op_set_kind(&op, all_kinds[i]);
        assert_neutral(&op);
        op.kind = SMQ_OP_DELETE_QUEUE;          /* nothing valid to free */
    }
}

/*
 * op_set_kind drops everything the member held (op.h): for the attrs
 * kinds that includes the present bits and the created flag, not only the
 * values, whatever bytes another member left in the union.
 */
static void test_op_set_kind_attrs_drops_stale_present_created(void **state)
{
    static const enum smq_op_kind kinds[] = {SMQ_OP_CREATE_QUEUE, SMQ_OP_SET_QUEUE};
    struct smq_op op;

    (void)state;
    for (size_t i = 0; i < 2; i++) {
        scribble_union(&op);
        op_set_kind(&op, kinds[i]);
        assert_true(all_zero(&op.attrs.values, sizeof op.attrs.values));
        assert_int_equal(op.attrs.present, 0);
        assert_false(op.attrs.created);
    }
}

/* ---- op_release ---------------------------------------------------------- */

static void test_op_release_receive_and_peek(void **state)
{
    struct smq_op op;

    (void)state;
    op_init(&op, SMQ_OP_RECEIVE);
    fill_recv(&op);
    op_release(&op);
    assert_null(op.recv.body_block);
    assert_int_equal(op.recv.n_msgs, 0);
    assert_null(op.recv.msgs[0].body);
    assert_null(op.recv.msgs[1].body);
    op_release(&op);                            /* twice is harmless */
    assert_int_equal(op.kind, SMQ_OP_RECEIVE);

    op_init(&op, SMQ_OP_PEEK);
    fill_recv(&op);
    op_release(&op);
    assert_null(op.recv.body_block);
    assert_int_equal(op.recv.n_msgs, 0);
    assert_null(op.recv.msgs[1].body);
}

static void test_op_release_list_and_stats(void **state)
{
    struct smq_op op;

    (void)state;
    op_init(&op, SMQ_OP_LIST_QUEUES);
    fill_list(&op);
    snprintf(op.list.prefix, sizeof op.list.prefix, "p");
    op_release(&op);
    assert_null(op.list.queues);
    assert_int_equal(op.list.n_queues, 0);
    assert_string_equal(op.list.prefix, "p");    /* inputs stay */
    op_release(&op);

    op_init(&op, SMQ_OP_STATS);
    fill_stats(&op);
    op.stats.totals_only = true;
    op_release(&op);
    assert_null(op.stats.queues);
    assert_int_equal(op.stats.n_queues, 0);
    assert_true(op.stats.totals_only);
    op_release(&op);
}

/* Kinds that own nothing leave their borrowed inputs alone: freeing the
 * send bodies (the caller's) would be a double free or an invalid free. */
static void test_op_release_borrowed_inputs_untouched(void **state)
{
    static const char body[] = "borrowed";
    static const unsigned char md5[MNS_MD5_LEN] = {1};
    struct smq_op op;

    (void)state;
    op_init(&op, SMQ_OP_SEND);
    op.send.items[0].body = body;
    op.send.items[0].body_len = sizeof body - 1;
    op.send.items[0].body_md5 = md5;
    op.send.n = 1;
    op_release(&op);
    assert_ptr_equal(op.send.items[0].body, body);
    assert_ptr_equal(op.send.items[0].body_md5, md5);
    assert_int_equal(op.send.n, 1);

    for (size_t i = 0; i < N_KINDS; i++) {
        op_init(&op, all_kinds[i]);
        op_release(&op);
        assert_neutral(&op);
    }
}

/* ---- op_fail ---------------------------------------------------------------- */

static void test_op_fail_clears_outputs(void **state)
{
    struct smq_op op;

    (void)state;
    op_init(&op, SMQ_OP_RECEIVE);
    fill_recv(&op);
    op_fail(&op, SMQ_E_INTERNAL, NULL);
    assert_null(op.recv.body_block);
    assert_int_equal(op.recv.n_msgs, 0);
    assert_int_equal(op.result.err, SMQ_E_INTERNAL);
    assert_string_equal(op.result.msg, "");
    assert_string_equal(errors_message(&op.result), errors_info(SMQ_E_INTERNAL)->message);

    op_init(&op, SMQ_OP_LIST_QUEUES);
    fill_list(&op);
    op_fail(&op, SMQ_E_STORAGE_FULL, NULL);
    assert_null(op.list.queues);
    assert_int_equal(op.list.n_queues, 0);
    assert_int_equal(op.result.err, SMQ_E_STORAGE_FULL);

    op_init(&op, SMQ_OP_STATS);
    fill_stats(&op);
    op_fail(&op, SMQ_E_INTERNAL, "lost");
    assert_null(op.stats.queues);
    assert_string_equal(op.result.msg, "lost");
}

static void test_op_fail_uncreates(void **state)
{
    struct smq_op op;

    (void)state;
    op_init(&op, SMQ_OP_CREATE_QUEUE);
    op.attrs.created = true;
    op.attrs.present = SMQ_ATTR_DELAY;
    op.attrs.values.delay_s = 5;
    op_fail(&op, SMQ_E_INTERNAL, NULL);
    assert_false(op.attrs.created);
    assert_int_equal(op.result.err, SMQ_E_INTERNAL);
    /* The request itself is kept. */
    assert_int_equal(op.attrs.present, SMQ_ATTR_DELAY);
    assert_int_equal(op.attrs.values.delay_s, 5);
}

/* The message is text, not a format; a new failure replaces an earlier
 * result, and NULL means the table's standard text. */
static void test_op_fail_message(void **state)
{
    struct smq_op op;

    (void)state;
    op_init(&op, SMQ_OP_SEND);
    op_fail(&op, SMQ_E_INVALID_ARGUMENT, "100% sure %s %n");
    assert_string_equal(op.result.msg, "100% sure %s %n");
    assert_int_equal(op.result.err, SMQ_E_INVALID_ARGUMENT);
    op_fail(&op, SMQ_E_NOMEM, NULL);
    assert_int_equal(op.result.err, SMQ_E_NOMEM);
    assert_string_equal(op.result.msg, "");
    assert_string_equal(errors_message(&op.result), errors_info(SMQ_E_NOMEM)->message);
}

/* ---- op_answer -------------------------------------------------------------- */

struct answer_log {
    struct smq_op *order[8];
    void *args[8];
    size_t n;
    struct smq_op *relinked;         /* a list the callbacks push onto */
};

/* Records the call, checks the op was unlinked first, then re-links the
 * op onto another list: op_answer must not follow that link. */
static void done_record(struct smq_op *op, void *arg)
{
    struct answer_log *log = *(struct answer_log **)arg;

    assert_null(op->next);
    if (log->n < 8) {
        log->order[log->n] = op;
        log->args[log->n] = arg;
    }
    log->n++;
    op->next = log->relinked;
    log->relinked = op;
}

static void test_op_answer_in_order_unlinked(void **state)
{
    struct smq_op ops[4];
    struct answer_log log = {.n = 0};
    struct answer_log *argv[4] = {&log, &log, &log, &log};

    (void)state;
    for (size_t i = 0; i < 4; i++) {
        op_init(&ops[i], SMQ_OP_DELETE_MSG);
        ops[i].done = done_record;
        ops[i].done_arg = &argv[i];
    }
    ops[0].next = &ops[2];
    ops[2].next = &ops[1];
    ops[1].next = &ops[3];
    op_answer(&ops[0]);
    assert_int_equal(log.n, 4);
    assert_ptr_equal(log.order[0], &ops[0]);
    assert_ptr_equal(log.order[1], &ops[2]);
    assert_ptr_equal(log.order[2], &ops[1]);
    assert_ptr_equal(log.order[3], &ops[3]);
    for (size_t i = 0; i < 4; i++)
        assert_ptr_equal(log.args[i], log.order[i]->done_arg);
    /* Each op's arg is its own, not the first op's. */
    assert_ptr_equal(log.args[1], &argv[2]);

    log.n = 0;
    op_answer(NULL);
    assert_int_equal(log.n, 0);
}

/* ---- the table of kinds ------------------------------------------------- */

/* Every kind has its row in op.c's table (a name), the names are distinct,
 * and this file's list of kinds is complete. */
static void test_op_every_kind_has_a_row(void **state)
{
    (void)state;
    assert_int_equal(N_KINDS, SMQ_OP_KIND_COUNT);
    for (size_t i = 0; i < N_KINDS; i++) {
        assert_non_null(op_kind_name(all_kinds[i]));
        for (size_t j = 0; j < i; j++)
            assert_string_not_equal(op_kind_name(all_kinds[i]), op_kind_name(all_kinds[j]));
    }
    assert_string_equal(op_kind_name(SMQ_OP_SEND), "send");
    assert_null(op_kind_name((enum smq_op_kind)SMQ_OP_KIND_COUNT));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_op_init_defaults_every_kind),
        cmocka_unit_test(test_op_receive_and_list_defaults),
        cmocka_unit_test(test_op_set_kind_keeps_queue_request_done),
        cmocka_unit_test(test_op_set_kind_releases_old_outputs),
        cmocka_unit_test(test_op_set_kind_drops_stale_member_bytes),
        cmocka_unit_test(test_op_set_kind_attrs_drops_stale_present_created),
        cmocka_unit_test(test_op_release_receive_and_peek),
        cmocka_unit_test(test_op_release_list_and_stats),
        cmocka_unit_test(test_op_release_borrowed_inputs_untouched),
        cmocka_unit_test(test_op_fail_clears_outputs),
        cmocka_unit_test(test_op_fail_uncreates),
        cmocka_unit_test(test_op_fail_message),
        cmocka_unit_test(test_op_answer_in_order_unlinked),
        cmocka_unit_test(test_op_every_kind_has_a_row),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
