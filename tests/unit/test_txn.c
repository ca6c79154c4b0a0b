/*
 * test_txn.c — unit tests for the engine's run transaction (src/engine/txn.c) on
 * a real SQLite store in a mkdtemp directory: the first write opens the
 * transaction and later ones join it, a failed write undoes only its own
 * savepoint, a store that drops the whole transaction (or a failed
 * COMMIT) makes the run lost until txn_take_done, a full disk is reported
 * to the space module, txn_complete keeps an earlier error, the done list
 * keeps its order and resets, and without a syncer nothing is deferred.
 * What reached the disk is read back through the store's loaders.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "scratch_dir.h"
#include "smqd/clock.h"
#include "smqd/errors.h"
#include "smqd/log.h"
#include "smqd/op.h"
#include "smqd/store.h"
#include "space.h"
#include "txn.h"

struct fixture {
    char dir[64];
    char path[128];
    char logpath[128];
    struct smq_store *store;
    struct smq_fake_clock clock;
    struct space sp;
    struct txn t;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    struct store_config cfg = {.backend = SMQ_STORE_SQLITE, .sync = SMQ_SYNC_NORMAL};
    char err[256];

    if (f == NULL)
        return -1;
    snprintf(f->dir, sizeof f->dir, "/tmp/smqd-test-txn-XXXXXX");
    if (mkdtemp(f->dir) == NULL)
        return -1;
    snprintf(f->path, sizeof f->path, "%s/smqd.db", f->dir);
    snprintf(f->logpath, sizeof f->logpath, "%s/smqd.log", f->dir);
    if (log_open(f->logpath) != 0)      /* injected faults are logged */
        return -1;
    cfg.path = f->path;
    if (store_open(&cfg, &f->store, err, sizeof err) != 0)
        return -1;
    clock_fake_init(&f->clock, 1000, 1700000000000);
    space_init(&f->sp, f->store, &f->clock.clock, 0, false);
    txn_init(&f->t, f->store, &f->sp);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    store_close(f->store);
    log_close();
    scratch_dir_remove(f->dir);
    free(f);
    return 0;
}

/* ---- store helpers ------------------------------------------------------ */

static int insert_queue(struct fixture *f, int64_t id, const char *name)
{
    struct store_queue_rec q;

    memset(&q, 0, sizeof q);
    q.id = id;
    snprintf(q.name, sizeof q.name, "%s", name);
    q.max_msg_size = 65536;
    q.retention_s = 345600;
    q.visibility_s = 30;
    return store_queue_insert(f->store, &q);
}

static int insert_msg(struct fixture *f, int64_t queue_id, uint64_t seq)
{
    struct store_msg_rec m = {.queue_id = queue_id, .seq = seq, .priority = 8,
                              .enqueue_ms = 1700000000000, .visible_ms = 1700000000000,
                              .expire_ms = 1700345600000};

    return store_msg_insert(f->store, &m, &(struct store_msg_content){"body", 4, NULL, NULL, 0});
}

/* One operation's writes: its savepoint, fn's result, the savepoint closed. */
static int op_write(struct fixture *f, int (*fn)(struct fixture *f, int64_t a), int64_t a)
{
    int rc = txn_write_begin(&f->t);

    if (rc != 0)
        return txn_write_end(&f->t, rc);
    return txn_write_end(&f->t, fn(f, a));
}

static int w_queue(struct fixture *f, int64_t id)
{
    char name[16];

    snprintf(name, sizeof name, "q%lld", (long long)id);
    return insert_queue(f, id, name);
}

static int w_queue_then_duplicate(struct fixture *f, int64_t id)
{
    int rc = w_queue(f, id);

    return rc != 0 ? rc : insert_queue(f, id + 1000, "q1");    /* "q1" exists */
}

static int w_msg(struct fixture *f, int64_t seq)
{
    return insert_msg(f, 1, (uint64_t)seq);
}

/* The backend rolls the whole transaction back under the operation, as
 * SQLite does after an I/O error or a full disk. */
static int w_queue_then_dropped(struct fixture *f, int64_t id)
{
    assert_int_equal(w_queue(f, id), 0);
    store_rollback(f->store);
    return SMQ_E_INTERNAL;
}

/* The same after a full disk. */
static int w_queue_then_dropped_full(struct fixture *f, int64_t id)
{
    assert_int_equal(w_queue(f, id), 0);
    store_rollback(f->store);
    return SMQ_E_STORAGE_FULL;
}

struct id_list {
    int64_t ids[16];
    int n;
};

static int collect_queue(void *arg, const struct store_queue_rec *q)
{
    struct id_list *l = arg;

    if (l->n < 16)
        l->ids[l->n] = q->id;
    l->n++;
    return 0;
}

static int collect_msg(void *arg, const struct store_msg_rec *m)
{
    struct id_list *l = arg;

    if (l->n < 16)
        l->ids[l->n] = (int64_t)m->seq;
    l->n++;
    return 0;
}

static struct id_list queues_on_disk(struct fixture *f)
{
    struct id_list l = {.n = 0};

    assert_int_equal(store_queue_load(f->store, collect_queue, &l), 0);
    return l;
}

static struct id_list msgs_on_disk(struct fixture *f)
{
    struct id_list l = {.n = 0};

    assert_int_equal(store_msg_load(f->store, collect_msg, &l), 0);
    return l;
}

/* ---- opening, joining, committing -------------------------------------------- */

static void test_txn_first_write_opens(void **state)
{
    struct fixture *f = *state;
    struct id_list l;

    assert_false(f->t.open);
    assert_false(store_in_txn(f->store));
    assert_int_equal(txn_write_begin(&f->t), 0);
    assert_true(f->t.open);
    assert_true(f->t.in_savepoint);
    assert_true(store_in_txn(f->store));
    assert_int_equal(txn_write_end(&f->t, w_queue(f, 1)), 0);
    assert_false(f->t.in_savepoint);
    assert_true(f->t.open);
    /* Later writes of the run join it (a second BEGIN would fail). */
    assert_int_equal(op_write(f, w_queue, 2), 0);
    assert_int_equal(op_write(f, w_queue, 3), 0);
    assert_true(f->t.open);
    txn_commit(&f->t);
    assert_false(f->t.open);
    assert_false(f->t.lost);
    assert_false(store_in_txn(f->store));
    l = queues_on_disk(f);
    assert_int_equal(l.n, 3);
    /* The next run opens a new one. */
    assert_int_equal(op_write(f, w_queue, 4), 0);
    assert_true(f->t.open);
    txn_commit(&f->t);
    assert_int_equal(queues_on_disk(f).n, 4);
}

/* Nothing written: committing does nothing. */
static void test_txn_commit_without_writes(void **state)
{
    struct fixture *f = *state;

    txn_commit(&f->t);
    assert_false(f->t.open);
    assert_false(f->t.lost);
    assert_false(store_in_txn(f->store));
}

/* A failed statement undoes its own operation (all of its writes) and
 * nothing before or after it in the run. */
static void test_txn_failed_write_rolls_back_its_savepoint(void **state)
{
    struct fixture *f = *state;
    struct id_list l;

    assert_int_equal(op_write(f, w_queue, 1), 0);
    assert_int_not_equal(op_write(f, w_queue_then_duplicate, 2), 0);
    assert_false(f->t.lost);
    assert_true(f->t.open);
    assert_true(store_in_txn(f->store));
    assert_int_equal(op_write(f, w_queue, 3), 0);
    txn_commit(&f->t);
    assert_false(f->t.lost);
    l = queues_on_disk(f);
    assert_int_equal(l.n, 2);
    assert_int_equal(l.ids[0], 1);
    assert_int_equal(l.ids[1], 3);
}

/* An I/O error on the second statement of a message insert: the first
 * (the metadata row) is undone with it. */
static void test_txn_fault_mid_operation_undoes_it(void **state)
{
    struct fixture *f = *state;
    struct id_list l;

    assert_int_equal(op_write(f, w_queue, 1), 0);
    assert_int_equal(op_write(f, w_msg, 10), 0);
    store_fault_inject(f->store, 1, 0);
    assert_int_equal(op_write(f, w_msg, 11), SMQ_E_INTERNAL);
    assert_false(f->t.lost);
    assert_int_equal(op_write(f, w_msg, 12), 0);
    txn_commit(&f->t);
    l = msgs_on_disk(f);
    assert_int_equal(l.n, 2);
    assert_int_equal(l.ids[0], 10);
    assert_int_equal(l.ids[1], 12);
}

/* The store dropped the whole transaction: the run is lost, its later
 * writes fail without touching the store, the commit rolls back, and
 * txn_take_done ends the loss. */
static void test_txn_dropped_transaction_is_lost(void **state)
{
    struct fixture *f = *state;

    assert_int_equal(op_write(f, w_queue, 1), 0);
    assert_int_equal(op_write(f, w_queue_then_dropped, 2), SMQ_E_INTERNAL);
    assert_true(f->t.lost);
    assert_int_equal(f->t.lost_rc, SMQ_E_INTERNAL);
    assert_false(store_in_txn(f->store));
    /* Every later write of the run fails; none opens a transaction. */
    assert_int_equal(txn_write_begin(&f->t), SMQ_E_INTERNAL);
    assert_false(f->t.in_savepoint);
    assert_false(store_in_txn(f->store));
    /* txn_write_end after a failed begin returns rc untouched. */
    assert_int_equal(txn_write_end(&f->t, SMQ_E_INTERNAL), SMQ_E_INTERNAL);
    assert_int_equal(txn_write_end(&f->t, 0), 0);
    assert_int_equal(op_write(f, w_queue, 3), SMQ_E_INTERNAL);
    txn_commit(&f->t);
    assert_false(f->t.open);
    assert_true(f->t.lost);
    assert_int_equal(queues_on_disk(f).n, 0);     /* not even queue 1 */

    assert_null(txn_take_done(&f->t));
    assert_false(f->t.lost);
    assert_int_equal(f->t.lost_rc, 0);
    assert_int_equal(op_write(f, w_queue, 4), 0);
    txn_commit(&f->t);
    assert_int_equal(queues_on_disk(f).n, 1);
}

/* A failed COMMIT loses the run too, with the commit's error. */
static void test_txn_failed_commit_is_lost(void **state)
{
    struct fixture *f = *state;

    assert_int_equal(op_write(f, w_queue, 1), 0);
    store_fault_inject(f->store, STORE_FAULT_OFF, 1);
    txn_commit(&f->t);
    assert_true(f->t.lost);
    assert_int_equal(f->t.lost_rc, SMQ_E_INTERNAL);
    assert_false(f->t.open);
    assert_false(store_in_txn(f->store));        /* rolled back */
    assert_int_equal(queues_on_disk(f).n, 0);
    assert_int_equal(txn_write_begin(&f->t), SMQ_E_INTERNAL);
    txn_take_done(&f->t);
    assert_int_equal(op_write(f, w_queue, 1), 0);
    txn_commit(&f->t);
    assert_false(f->t.lost);
    assert_int_equal(queues_on_disk(f).n, 1);
}

/* The first loss's error is the one kept (the commit's refusal does not
 * replace it), and a full disk that dropped the run enters the mode. */
static void test_txn_lost_keeps_first_error(void **state)
{
    struct fixture *f = *state;

    assert_int_equal(op_write(f, w_queue, 1), 0);
    assert_int_equal(op_write(f, w_queue_then_dropped_full, 2), SMQ_E_STORAGE_FULL);
    assert_true(f->t.lost);
    assert_int_equal(f->t.lost_rc, SMQ_E_STORAGE_FULL);
    assert_true(f->sp.full);
    assert_int_equal(op_write(f, w_queue, 3), SMQ_E_INTERNAL);
    txn_commit(&f->t);
    assert_int_equal(f->t.lost_rc, SMQ_E_STORAGE_FULL);
    assert_int_equal(queues_on_disk(f).n, 0);
    txn_take_done(&f->t);
}

/* A full disk during a write enters the storage-full mode, without losing
 * the run (SQLite keeps the transaction here). */
static void test_txn_storage_full_tells_space(void **state)
{
    struct fixture *f = *state;

    assert_int_equal(op_write(f, w_queue, 1), 0);
    assert_false(f->sp.full);
    store_fault_inject_full(f->store, 0);
    assert_int_equal(op_write(f, w_queue, 2), SMQ_E_STORAGE_FULL);
    assert_true(f->sp.full);
    assert_false(f->t.lost);
    txn_commit(&f->t);
    assert_int_equal(queues_on_disk(f).n, 1);
}

/* ---- the done list -------------------------------------------------------- */

static void test_txn_complete_keeps_earlier_error(void **state)
{
    struct txn t;
    struct smq_op a, b, c;

    (void)state;
    txn_init(&t, NULL, NULL);
    op_init(&a, SMQ_OP_SEND);
    op_init(&b, SMQ_OP_SEND);
    op_init(&c, SMQ_OP_SEND);
    errors_set(&a.result, SMQ_E_QUEUE_NOT_EXIST, "no queue %s", "x");
    txn_complete(&t, &a, SMQ_E_INTERNAL);
    assert_int_equal(a.result.err, SMQ_E_QUEUE_NOT_EXIST);
    assert_string_equal(a.result.msg, "no queue x");
    txn_complete(&t, &b, SMQ_E_MESSAGE_NOT_EXIST);
    assert_int_equal(b.result.err, SMQ_E_MESSAGE_NOT_EXIST);
    assert_string_equal(errors_message(&b.result), errors_info(SMQ_E_MESSAGE_NOT_EXIST)->message);
    txn_complete(&t, &c, 0);
    assert_int_equal(c.result.err, 0);
    txn_take_done(&t);
}

static void test_txn_take_done_order_and_reset(void **state)
{
    struct txn t;
    struct smq_op ops[4];
    struct smq_op *list;

    (void)state;
    txn_init(&t, NULL, NULL);
    assert_null(txn_take_done(&t));
    for (size_t i = 0; i < 4; i++) {
        op_init(&ops[i], SMQ_OP_DELETE_MSG);
        ops[i].next = &ops[(i + 1) % 4];          /* stale links: overwritten */
    }
    txn_complete(&t, &ops[2], 0);
    txn_complete(&t, &ops[0], 0);
    txn_complete(&t, &ops[3], 0);
    list = txn_take_done(&t);
    assert_ptr_equal(list, &ops[2]);
    assert_ptr_equal(list->next, &ops[0]);
    assert_ptr_equal(list->next->next, &ops[3]);
    assert_null(list->next->next->next);
    /* Taken: the list is empty, and a new one starts from scratch. */
    assert_null(txn_take_done(&t));
    txn_complete(&t, &ops[1], 0);
    list = txn_take_done(&t);
    assert_ptr_equal(list, &ops[1]);
    assert_null(list->next);
    assert_null(txn_take_done(&t));
}

struct answered {
    struct smq_op *order[4];
    size_t n;
};

static void on_done(struct smq_op *op, void *arg)
{
    struct answered *a = arg;

    if (a->n < 4)
        a->order[a->n] = op;
    a->n++;
}

/* Without a syncer the ops are answered at once, in order. */
static void test_txn_answer_without_syncer(void **state)
{
    struct txn t;
    struct smq_op ops[3];
    struct answered a = {.n = 0};

    (void)state;
    txn_init(&t, NULL, NULL);
    for (size_t i = 0; i < 3; i++) {
        op_init(&ops[i], SMQ_OP_DELETE_MSG);
        ops[i].done = on_done;
        ops[i].done_arg = &a;
        txn_complete(&t, &ops[i], 0);
    }
    txn_answer(&t, txn_take_done(&t));
    assert_int_equal(a.n, 3);
    assert_ptr_equal(a.order[0], &ops[0]);
    assert_ptr_equal(a.order[1], &ops[1]);
    assert_ptr_equal(a.order[2], &ops[2]);
}

/* ---- deferral ------------------------------------------------------------- */

static void test_txn_defer_commit_without_syncer(void **state)
{
    struct fixture *f = *state;

    assert_false(txn_writes_stopped(&f->t));
    assert_false(txn_defer_commit(&f->t, false));
    assert_int_equal(op_write(f, w_queue, 1), 0);
    assert_true(f->t.open);
    assert_false(txn_defer_commit(&f->t, false));
    assert_false(txn_defer_commit(&f->t, true));
    assert_false(txn_writes_stopped(&f->t));
    txn_commit(&f->t);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_txn_first_write_opens),
        T(test_txn_commit_without_writes),
        T(test_txn_failed_write_rolls_back_its_savepoint),
        T(test_txn_fault_mid_operation_undoes_it),
        T(test_txn_dropped_transaction_is_lost),
        T(test_txn_failed_commit_is_lost),
        T(test_txn_lost_keeps_first_error),
        T(test_txn_storage_full_tells_space),
        cmocka_unit_test(test_txn_complete_keeps_earlier_error),
        cmocka_unit_test(test_txn_take_done_order_and_reset),
        cmocka_unit_test(test_txn_answer_without_syncer),
        T(test_txn_defer_commit_without_syncer),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
