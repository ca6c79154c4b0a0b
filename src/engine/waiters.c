/*
 * waiters.c — owns the parked long polls (waiters.h).
 */
#include "waiters.h"

#include "smqd/errors.h"

#define PROBE_INTERVAL_MS 1000      /* how often parked polls are checked for gone clients */

static void on_deadline(struct twheel_node *n, uint64_t now_mono, void *arg)
{
    struct waiters *w = arg;
    struct smq_op *op = (struct smq_op *)((char *)n - offsetof(struct smq_op, wait_timer));

    (void)now_mono;
    waiters_unlink(w, op);
    txn_complete(w->txn, op, SMQ_E_MESSAGE_NOT_EXIST);
}

void waiters_init(struct waiters *w, struct txn *txn, const struct smq_clock *clock)
{
    *w = (struct waiters){.txn = txn, .clock = clock};
    twheel_init(&w->wheel, clock_mono_ms(clock), on_deadline, w);
}

void waiters_park(struct waiters *w, struct smq_queue *q, struct smq_op *op,
                  uint64_t deadline_mono)
{
    uint64_t now = clock_mono_ms(w->clock);

    if (op->client_gone != NULL && w->n_probed++ == 0 && w->next_probe_mono <= now)
        w->next_probe_mono = now + PROBE_INTERVAL_MS;   /* first probed poll: schedule */
    op->wait_queue = q;
    op->wait_next = NULL;
    op->wait_prev = q->waiters_tail;
    if (q->waiters_tail != NULL)
        q->waiters_tail->wait_next = op;
    else
        q->waiters_head = op;
    q->waiters_tail = op;
    w->n++;
    q->n_waiters++;
    twheel_arm(&w->wheel, &op->wait_timer, deadline_mono);
}

void waiters_unlink(struct waiters *w, struct smq_op *op)
{
    struct smq_queue *q = op->wait_queue;

    if (op->wait_prev != NULL)
        op->wait_prev->wait_next = op->wait_next;
    else
        q->waiters_head = op->wait_next;
    if (op->wait_next != NULL)
        op->wait_next->wait_prev = op->wait_prev;
    else
        q->waiters_tail = op->wait_prev;
    op->wait_prev = op->wait_next = NULL;
    op->wait_queue = NULL;
    twheel_cancel(&w->wheel, &op->wait_timer);
    w->n--;
    q->n_waiters--;
    if (op->client_gone != NULL)
        w->n_probed--;
}

void waiters_fail_queue(struct waiters *w, struct smq_queue *q, int err)
{
    while (q->waiters_head != NULL) {
        struct smq_op *op = q->waiters_head;
        waiters_unlink(w, op);
        txn_complete(w->txn, op, err);
    }
}

bool waiters_client_gone(struct smq_op *op)
{
    return op->client_gone != NULL && op->client_gone(op, op->done_arg);
}

void waiters_mark_ready(struct waiters *w, struct smq_queue *q)
{
    if (q->ready || q->waiters_head == NULL)
        return;
    q->ready = true;
    q->ready_next = w->ready_head;
    w->ready_head = q;
}

struct smq_queue *waiters_take_ready(struct waiters *w)
{
    struct smq_queue *q = w->ready_head;

    if (q != NULL) {
        w->ready_head = q->ready_next;
        q->ready = false;
    }
    return q;
}

void waiters_forget_queue(struct waiters *w, struct smq_queue *q)
{
    struct smq_queue **link = &w->ready_head;

    if (!q->ready)
        return;
    while (*link != q)
        link = &(*link)->ready_next;
    *link = q->ready_next;
    q->ready = false;
}

/* Finishes the parked polls whose clients have gone, so their connections
 * are released long before the poll's deadline. */
static void probe(struct waiters *w, const struct queue_registry *queues, uint64_t now_mono)
{
    if (w->n_probed == 0 || now_mono < w->next_probe_mono)
        return;
    w->next_probe_mono = now_mono + PROBE_INTERVAL_MS;
    for (size_t i = 0; i < queues->n; i++) {
        struct smq_op *op = queues->items[i]->waiters_head;
        while (op != NULL) {
            struct smq_op *next = op->wait_next;
            if (waiters_client_gone(op)) {
                waiters_unlink(w, op);
                txn_complete(w->txn, op, SMQ_E_MESSAGE_NOT_EXIST);
            }
            op = next;
        }
    }
}

void waiters_advance(struct waiters *w, const struct queue_registry *queues, uint64_t now_mono)
{
    twheel_advance(&w->wheel, now_mono);
    probe(w, queues, now_mono);
}

uint64_t waiters_timeout_ms(const struct waiters *w, uint64_t now_mono)
{
    uint64_t t = twheel_next_timeout_ms(&w->wheel, now_mono);
    uint64_t p;

    if (w->n_probed == 0)
        return t;
    p = w->next_probe_mono > now_mono ? w->next_probe_mono - now_mono : 0;
    return p < t ? p : t;
}
