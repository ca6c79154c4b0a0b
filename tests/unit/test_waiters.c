/*
 * test_waiters.c — unit tests for parked long polls (src/engine/waiters.c): park
 * and unlink keep each queue's FIFO and every count, a deadline completes
 * its poll with MessageNotExist on the advance that reaches it (and the
 * timeout the module reports leads exactly there), failing a queue's
 * polls, gone clients found by a probe about once a second, the ready list
 * (mark, take, forget) and waiters_timeout_ms.  Finished polls go to a
 * struct txn without a store (only txn_complete / txn_take_done are used);
 * time is a fake clock.
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

#include "queue.h"
#include "smqd/clock.h"
#include "smqd/errors.h"
#include "smqd/mns.h"
#include "smqd/op.h"
#include "txn.h"
#include "waiters.h"

#define T0 1000                       /* mono ms at the start of each test */
#define FAR (T0 + 60000)              /* a deadline no test reaches by accident */

/* A poll's client: whether it is gone, and how often it was asked. */
struct client {
    bool gone;
    unsigned asked;
};

struct fixture {
    struct smq_fake_clock clock;
    struct txn t;
    struct waiters w;
    struct smq_queue *q1, *q2, *q3;
    struct queue_registry reg;
    struct smq_op ops[8];
    struct client clients[8];
};

static bool client_gone(struct smq_op *op, void *arg)
{
    struct client *c = arg;

    (void)op;
    c->asked++;
    return c->gone;
}

static struct smq_queue *make_queue(struct fixture *f, int64_t id, const char *name)
{
    struct smq_queue_attrs a;
    struct smq_queue *q;

    mns_default_attrs(&a);
    q = queue_new(id, name, &a, 0, 0);
    assert_non_null(q);
    assert_int_equal(queue_registry_reserve(&f->reg), 0);
    queue_registry_insert(&f->reg, q);
    return q;
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);

    if (f == NULL)
        return -1;
    clock_fake_init(&f->clock, T0, 1700000000000);
    txn_init(&f->t, NULL, NULL);
    waiters_init(&f->w, &f->t, &f->clock.clock);
    queue_registry_init(&f->reg);
    f->q1 = make_queue(f, 1, "q1");
    f->q2 = make_queue(f, 2, "q2");
    f->q3 = make_queue(f, 3, "q3");
    for (size_t i = 0; i < 8; i++) {
        op_init(&f->ops[i], SMQ_OP_RECEIVE);
        f->ops[i].done_arg = &f->clients[i];
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    queue_free(f->q1);
    queue_free(f->q2);
    queue_free(f->q3);
    queue_registry_free(&f->reg);
    free(f);
    return 0;
}

/* ops[i] can tell when its client has gone. */
static struct smq_op *probed(struct fixture *f, size_t i)
{
    f->ops[i].client_gone = client_gone;
    return &f->ops[i];
}

/* q's parked polls, head to tail, are exactly want[0..n), with consistent
 * back links and counts. */
static void assert_fifo(const struct smq_queue *q, struct smq_op *const *want, size_t n)
{
    const struct smq_op *op = q->waiters_head, *prev = NULL;

    for (size_t i = 0; i < n; i++) {
        assert_ptr_equal(op, want[i]);
        assert_ptr_equal(op->wait_prev, prev);
        assert_ptr_equal(op->wait_queue, q);
        assert_true(waiters_is_parked(op));
        prev = op;
        op = op->wait_next;
    }
    assert_null(op);
    assert_ptr_equal(q->waiters_tail, n > 0 ? want[n - 1] : NULL);
    assert_int_equal(q->n_waiters, n);
}

/* The done list holds exactly want[0..n) in order, each with err. */
static void assert_done(struct fixture *f, struct smq_op *const *want, size_t n, int err)
{
    struct smq_op *op = txn_take_done(&f->t);

    for (size_t i = 0; i < n; i++) {
        assert_ptr_equal(op, want[i]);
        assert_int_equal(op->result.err, err);
        assert_false(waiters_is_parked(op));
        assert_false(twheel_armed(&op->wait_timer));
        op = op->next;
    }
    assert_null(op);
}

static void advance_to(struct fixture *f, uint64_t mono)
{
    f->clock.mono_ms = mono;
    waiters_advance(&f->w, &f->reg, mono);
}

/* ---- park / unlink --------------------------------------------------------- */

static void test_waiters_park_unlink_fifo_and_counts(void **state)
{
    struct fixture *f = *state;
    struct smq_op *a = &f->ops[0], *b = &f->ops[1], *c = &f->ops[2], *d = &f->ops[3];

    assert_false(waiters_is_parked(a));
    waiters_park(&f->w, f->q1, a, FAR);
    waiters_park(&f->w, f->q1, b, FAR);
    waiters_park(&f->w, f->q2, d, FAR);
    waiters_park(&f->w, f->q1, c, FAR);
    assert_fifo(f->q1, (struct smq_op *[]){a, b, c}, 3);
    assert_fifo(f->q2, (struct smq_op *[]){d}, 1);
    assert_int_equal(f->w.n, 4);
    assert_int_equal(twheel_count(&f->w.wheel), 4);

    waiters_unlink(&f->w, b);                     /* middle */
    assert_fifo(f->q1, (struct smq_op *[]){a, c}, 2);
    assert_false(waiters_is_parked(b));
    assert_null(b->wait_next);
    assert_null(b->wait_prev);
    assert_false(twheel_armed(&b->wait_timer));
    waiters_unlink(&f->w, a);                     /* head */
    assert_fifo(f->q1, (struct smq_op *[]){c}, 1);
    waiters_park(&f->w, f->q1, a, FAR);           /* parked again: at the tail */
    assert_fifo(f->q1, (struct smq_op *[]){c, a}, 2);
    waiters_unlink(&f->w, a);                     /* tail */
    waiters_unlink(&f->w, c);                     /* the last */
    assert_fifo(f->q1, NULL, 0);
    assert_null(f->q1->waiters_head);
    assert_int_equal(f->w.n, 1);
    waiters_unlink(&f->w, d);
    assert_fifo(f->q2, NULL, 0);
    assert_int_equal(f->w.n, 0);
    assert_int_equal(twheel_count(&f->w.wheel), 0);
    /* Unlinking completes nothing. */
    assert_null(txn_take_done(&f->t));
}

/* ---- deadlines --------------------------------------------------------------- */

static void test_waiters_deadline_completes_not_exist(void **state)
{
    struct fixture *f = *state;
    struct smq_op *a = &f->ops[0], *b = &f->ops[1], *c = &f->ops[2];

    waiters_park(&f->w, f->q1, a, T0 + 5000);
    waiters_park(&f->w, f->q1, b, T0 + 2000);
    waiters_park(&f->w, f->q2, c, T0 + 2000);
    advance_to(f, T0 + 1999);
    assert_null(txn_take_done(&f->t));
    assert_int_equal(f->w.n, 3);
    advance_to(f, T0 + 2000);
    assert_done(f, (struct smq_op *[]){b, c}, 2, SMQ_E_MESSAGE_NOT_EXIST);
    assert_fifo(f->q1, (struct smq_op *[]){a}, 1);
    assert_fifo(f->q2, NULL, 0);
    assert_int_equal(f->w.n, 1);
    advance_to(f, T0 + 4000);
    assert_null(txn_take_done(&f->t));
    advance_to(f, T0 + 7000);                     /* late: still completed */
    assert_done(f, (struct smq_op *[]){a}, 1, SMQ_E_MESSAGE_NOT_EXIST);
    assert_int_equal(f->w.n, 0);
    assert_int_equal(f->q1->n_waiters, 0);
}

/* An unlinked poll's deadline never fires; one in the past fires at the
 * next advance. */
static void test_waiters_deadline_cancelled_or_past(void **state)
{
    struct fixture *f = *state;
    struct smq_op *a = &f->ops[0], *b = &f->ops[1];

    waiters_park(&f->w, f->q1, a, T0 + 100);
    waiters_unlink(&f->w, a);
    waiters_park(&f->w, f->q1, b, T0 - 500);
    advance_to(f, T0 + 1);
    assert_done(f, (struct smq_op *[]){b}, 1, SMQ_E_MESSAGE_NOT_EXIST);
    advance_to(f, T0 + 1000);
    assert_null(txn_take_done(&f->t));
}

/* Following waiters_timeout_ms from advance to advance reaches the
 * deadline exactly: not before, not after. */
static void test_waiters_timeout_leads_to_deadline(void **state)
{
    struct fixture *f = *state;
    struct smq_op *a = &f->ops[0];
    uint64_t now = T0, t;
    int rounds = 0;

    assert_int_equal(waiters_timeout_ms(&f->w, now), UINT64_MAX);
    waiters_park(&f->w, f->q1, a, T0 + 3000);
    while (waiters_is_parked(a) && rounds++ < 100) {
        t = waiters_timeout_ms(&f->w, now);
        assert_true(t <= T0 + 3000 - now);
        now += t;
        advance_to(f, now);
    }
    assert_false(waiters_is_parked(a));
    assert_int_equal(now, T0 + 3000);
    assert_done(f, (struct smq_op *[]){a}, 1, SMQ_E_MESSAGE_NOT_EXIST);
    assert_int_equal(waiters_timeout_ms(&f->w, now), UINT64_MAX);
}

static void test_waiters_fail_queue(void **state)
{
    struct fixture *f = *state;
    struct smq_op *a = &f->ops[0], *b = &f->ops[1], *c = &f->ops[2], *d = &f->ops[3];

    waiters_park(&f->w, f->q1, a, FAR);
    waiters_park(&f->w, f->q2, d, FAR);
    waiters_park(&f->w, f->q1, b, FAR);
    waiters_park(&f->w, f->q1, c, FAR);
    waiters_fail_queue(&f->w, f->q1, SMQ_E_QUEUE_NOT_EXIST);
    assert_done(f, (struct smq_op *[]){a, b, c}, 3, SMQ_E_QUEUE_NOT_EXIST);
    assert_fifo(f->q1, NULL, 0);
    assert_fifo(f->q2, (struct smq_op *[]){d}, 1);
    assert_int_equal(f->w.n, 1);
    assert_int_equal(twheel_count(&f->w.wheel), 1);
    waiters_fail_queue(&f->w, f->q3, SMQ_E_INTERNAL);    /* none parked */
    assert_null(txn_take_done(&f->t));
    /* Their deadlines are gone with them. */
    advance_to(f, FAR);
    assert_done(f, (struct smq_op *[]){d}, 1, SMQ_E_MESSAGE_NOT_EXIST);
}

/* ---- gone clients ----------------------------------------------------------- */

static void test_waiters_client_gone(void **state)
{
    struct fixture *f = *state;

    assert_false(waiters_client_gone(&f->ops[0]));        /* no callback */
    probed(f, 0);
    assert_false(waiters_client_gone(&f->ops[0]));
    assert_int_equal(f->clients[0].asked, 1);
    f->clients[0].gone = true;
    assert_true(waiters_client_gone(&f->ops[0]));
    assert_int_equal(f->clients[0].asked, 2);
}

/* A probe runs about once a second, over every queue, and completes the
 * polls whose clients have gone with MessageNotExist. */
static void test_waiters_probe_about_once_a_second(void **state)
{
    struct fixture *f = *state;
    struct smq_op *a = probed(f, 0), *b = probed(f, 1), *c = &f->ops[2], *d = probed(f, 3);

    waiters_park(&f->w, f->q1, a, FAR);
    waiters_park(&f->w, f->q1, b, FAR);
    waiters_park(&f->w, f->q1, c, FAR);
    waiters_park(&f->w, f->q3, d, FAR);
    assert_int_equal(f->w.n_probed, 3);
    f->clients[0].gone = true;
    f->clients[3].gone = true;

    advance_to(f, T0 + 999);
    assert_int_equal(f->clients[0].asked, 0);
    assert_null(txn_take_done(&f->t));
    advance_to(f, T0 + 1000);
    assert_int_equal(f->clients[0].asked, 1);
    assert_int_equal(f->clients[1].asked, 1);
    assert_int_equal(f->clients[3].asked, 1);
    assert_done(f, (struct smq_op *[]){a, d}, 2, SMQ_E_MESSAGE_NOT_EXIST);
    assert_fifo(f->q1, (struct smq_op *[]){b, c}, 2);
    assert_int_equal(f->w.n_probed, 1);

    /* Not again within the second; then again. */
    advance_to(f, T0 + 1999);
    assert_int_equal(f->clients[1].asked, 1);
    f->clients[1].gone = true;
    advance_to(f, T0 + 2000);
    assert_int_equal(f->clients[1].asked, 2);
    assert_done(f, (struct smq_op *[]){b}, 1, SMQ_E_MESSAGE_NOT_EXIST);
    assert_fifo(f->q1, (struct smq_op *[]){c}, 1);
    assert_int_equal(f->w.n_probed, 0);
    assert_int_equal(f->w.n, 1);
    /* The poll that cannot tell stays until its deadline. */
    advance_to(f, T0 + 30000);
    assert_fifo(f->q1, (struct smq_op *[]){c}, 1);
}

/* A second probed poll does not postpone the probe the first one
 * scheduled; after all are gone, the next first one schedules anew. */
static void test_waiters_probe_schedule(void **state)
{
    struct fixture *f = *state;
    struct smq_op *a = probed(f, 0), *b = probed(f, 1), *c = probed(f, 2);

    waiters_park(&f->w, f->q1, a, FAR);
    f->clock.mono_ms = T0 + 600;
    waiters_park(&f->w, f->q2, b, FAR);
    f->clients[1].gone = true;
    advance_to(f, T0 + 1000);
    assert_int_equal(f->clients[1].asked, 1);
    assert_done(f, (struct smq_op *[]){b}, 1, SMQ_E_MESSAGE_NOT_EXIST);
    waiters_unlink(&f->w, a);
    assert_int_equal(f->w.n_probed, 0);

    f->clock.mono_ms = T0 + 5300;
    waiters_park(&f->w, f->q1, c, FAR);
    f->clients[2].gone = true;
    advance_to(f, T0 + 6299);
    assert_int_equal(f->clients[2].asked, 0);
    advance_to(f, T0 + 6300);
    assert_int_equal(f->clients[2].asked, 1);
    assert_done(f, (struct smq_op *[]){c}, 1, SMQ_E_MESSAGE_NOT_EXIST);
}

/* With probed polls the timeout is at most the time to the next probe (0
 * once it is due); without, it is the deadlines' alone. */
static void test_waiters_timeout_with_probe(void **state)
{
    struct fixture *f = *state;
    struct smq_op *a = &f->ops[0], *b = probed(f, 1);
    uint64_t t;

    waiters_park(&f->w, f->q1, a, FAR);
    t = waiters_timeout_ms(&f->w, T0);
    assert_true(t > 1000);                        /* nothing to do within the second */
    waiters_park(&f->w, f->q1, b, FAR);
    assert_true(waiters_timeout_ms(&f->w, T0) <= 1000);
    assert_true(waiters_timeout_ms(&f->w, T0 + 400) <= 600);
    assert_int_equal(waiters_timeout_ms(&f->w, T0 + 1000), 0);
    assert_int_equal(waiters_timeout_ms(&f->w, T0 + 1500), 0);
    waiters_unlink(&f->w, b);
    assert_true(waiters_timeout_ms(&f->w, T0 + 1500) > 0);
    waiters_unlink(&f->w, a);
    assert_int_equal(waiters_timeout_ms(&f->w, T0 + 1500), UINT64_MAX);
}

/* ---- the ready list ------------------------------------------------------------ */

static void test_waiters_ready_mark_take(void **state)
{
    struct fixture *f = *state;
    struct smq_queue *x, *y;

    /* No polls: nothing to serve, not marked. */
    waiters_mark_ready(&f->w, f->q1);
    assert_false(f->q1->ready);
    assert_null(waiters_take_ready(&f->w));

    waiters_park(&f->w, f->q1, &f->ops[0], FAR);
    waiters_park(&f->w, f->q2, &f->ops[1], FAR);
    waiters_mark_ready(&f->w, f->q1);
    waiters_mark_ready(&f->w, f->q2);
    waiters_mark_ready(&f->w, f->q1);             /* twice: listed once */
    assert_true(f->q1->ready);
    x = waiters_take_ready(&f->w);
    y = waiters_take_ready(&f->w);
    assert_non_null(x);
    assert_non_null(y);
    assert_true((x == f->q1 && y == f->q2) || (x == f->q2 && y == f->q1));
    assert_false(f->q1->ready);
    assert_false(f->q2->ready);
    assert_null(waiters_take_ready(&f->w));
    /* Taken, it can be marked again. */
    waiters_mark_ready(&f->w, f->q2);
    assert_ptr_equal(waiters_take_ready(&f->w), f->q2);
    assert_null(waiters_take_ready(&f->w));
    waiters_unlink(&f->w, &f->ops[0]);
    waiters_unlink(&f->w, &f->ops[1]);
}

static void test_waiters_ready_forget(void **state)
{
    struct fixture *f = *state;
    struct smq_queue *qs[3] = {f->q1, f->q2, f->q3};
    bool seen[3] = {false, false, false};
    struct smq_queue *q;

    for (size_t i = 0; i < 3; i++)
        waiters_park(&f->w, qs[i], &f->ops[i], FAR);
    /* Each position in turn: forget it, the other two stay listed. */
    for (size_t gone = 0; gone < 3; gone++) {
        for (size_t i = 0; i < 3; i++)
            waiters_mark_ready(&f->w, qs[i]);
        waiters_forget_queue(&f->w, qs[gone]);
        assert_false(qs[gone]->ready);
        waiters_forget_queue(&f->w, qs[gone]);    /* not listed: harmless */
        memset(seen, 0, sizeof seen);
        while ((q = waiters_take_ready(&f->w)) != NULL) {
            for (size_t i = 0; i < 3; i++)
                if (q == qs[i]) {
                    assert_false(seen[i]);
                    seen[i] = true;
                }
        }
        for (size_t i = 0; i < 3; i++)
            assert_true(seen[i] == (i != gone));
    }
    for (size_t i = 0; i < 3; i++)
        waiters_unlink(&f->w, &f->ops[i]);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_waiters_park_unlink_fifo_and_counts),
        T(test_waiters_deadline_completes_not_exist),
        T(test_waiters_deadline_cancelled_or_past),
        T(test_waiters_timeout_leads_to_deadline),
        T(test_waiters_fail_queue),
        T(test_waiters_client_gone),
        T(test_waiters_probe_about_once_a_second),
        T(test_waiters_probe_schedule),
        T(test_waiters_timeout_with_probe),
        T(test_waiters_ready_mark_take),
        T(test_waiters_ready_forget),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
