/*
 * waiters.h — parked long polls: receives that found nothing and may wait.
 *
 * A parked poll sits on its queue's FIFO with a deadline on the waiters'
 * own wheel.  When a message of the queue becomes Active, the queue is
 * marked ready and the engine serves its polls, oldest first
 * (waiters_take_ready).  A poll whose deadline passes is completed with
 * MessageNotExist; one whose client has gone away (op->client_gone, asked
 * about once a second) is completed the same way, so a closed connection
 * neither takes a message nor holds its slot until the deadline.
 *
 * Engine thread only.
 */
#ifndef SMQD_WAITERS_H
#define SMQD_WAITERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "queue.h"
#include "smqd/clock.h"
#include "smqd/op.h"
#include "smqd/twheel.h"
#include "txn.h"

struct waiters {
    struct twheel wheel;             /* deadlines */
    struct txn *txn;                 /* where finished polls go */
    const struct smq_clock *clock;
    size_t n;                        /* parked polls */
    size_t n_probed;                 /* of which can tell a gone client */
    uint64_t next_probe_mono;        /* next check of their clients */
    struct smq_queue *ready_head;    /* queues whose polls may now be served */
};

void waiters_init(struct waiters *w, struct txn *txn, const struct smq_clock *clock);

static inline bool waiters_is_parked(const struct smq_op *op)
{
    return op->wait_queue != NULL;
}

/* Parks op on q until deadline_mono (monotonic ms). */
void waiters_park(struct waiters *w, struct smq_queue *q, struct smq_op *op,
                  uint64_t deadline_mono);
/* Takes op off its queue and cancels its deadline (the op is not completed). */
void waiters_unlink(struct waiters *w, struct smq_op *op);
/* Completes every poll parked on q with err. */
void waiters_fail_queue(struct waiters *w, struct smq_queue *q, int err);

/* Whether op's client is known to have gone away. */
bool waiters_client_gone(struct smq_op *op);

/* q has Active messages: serve its polls (if it has any) in this run. */
void waiters_mark_ready(struct waiters *w, struct smq_queue *q);
/* The next ready queue, taken off the ready list; NULL when none. */
struct smq_queue *waiters_take_ready(struct waiters *w);
/* q is going away: take it off the ready list. */
void waiters_forget_queue(struct waiters *w, struct smq_queue *q);

/* Fires due deadlines and, about once a second, finishes polls whose
 * clients have gone (queues: every queue, to find them). */
void waiters_advance(struct waiters *w, const struct queue_registry *queues, uint64_t now_mono);
/* Milliseconds until waiters_advance has something to do (UINT64_MAX: nothing). */
uint64_t waiters_timeout_ms(const struct waiters *w, uint64_t now_mono);

#endif
