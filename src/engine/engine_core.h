/*
 * engine_core.h — the engine's state, shared by the engine's own files and
 * nothing else: engine.c (the run loop and dispatch), the operation files
 * above it (run_queue.c, run_message.c, run_stats.c, run_purge.c,
 * run_redrive.c, run_topic.c, recover.c) and the message lifecycle below them (msgs.c).
 *
 * Most of the state is in parts with a module of their own, each the only
 * writer of its part: the run's transaction (txn.h), the disk space
 * (space.h), the parked long polls (waiters.h), the event log
 * (eventlog.h), and the in-memory models themselves (queue.h, topic.h).  The few fields
 * below them say which file writes them.
 */
#ifndef SMQD_ENGINE_CORE_H
#define SMQD_ENGINE_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "eventlog.h"
#include "queue.h"
#include "smqd/buf.h"
#include "smqd/clock.h"
#include "smqd/handle.h"
#include "smqd/store.h"
#include "smqd/twheel.h"
#include "space.h"
#include "topic.h"
#include "txn.h"
#include "waiters.h"

struct push_job;

#define EXPIRED_FLUSH_AT 1024        /* lazily deleted expired rows per flush */

/* Ids are never reused: each is handed out below a persisted mark (msgs.c). */
struct engine_ids {
    uint64_t next_seq;
    uint64_t seq_reserved;           /* next_seq may go up to this one */
    uint64_t seq_reserve_pending;    /* a new mark written in the open savepoint; 0 = none */
    int64_t next_queue_id;
    int64_t next_topic_id, next_sub_id;
};

/* Topics, their subscriptions and pending notifications (run_topic.c,
 * fanout.c, fanout_publish.c; loaded by recover.c). */
struct engine_topics {
    struct topic_model model;
    struct twheel wheel;             /* WAITING notifications' due times (fanout.c) */
    int max_topics, max_subs_per_topic;
    char account_id[65];             /* TopicOwner and Subscriber in notifications */
    uint64_t rnd;                    /* BACKOFF_RETRY's random intervals */
    uint64_t dropped;                /* notifications given up with nowhere to go */
    size_t in_txn;                   /* deliveries in the open transaction (fanout.c) */
    size_t in_txn_bytes;             /* and the bytes of their bodies */
    struct smq_buf body;             /* the last published body read for a notification */
    uint64_t body_seq;               /* whose it is; 0 = none */
    /* HTTP pushes (fanout.c): the pool's way in (engine_set_push; NULL =
     * HTTP notifications wait); the commits so far and how many of them
     * are durable (flushed: a notification is pushed once the commit that
     * wrote its row is, §13.12); whether subscriptions on the model's
     * blocked list wait for that, or for room in the pool (tried again at
     * pool_retry_mono, or on the next push result). */
    int (*push_submit)(void *arg, struct push_job *job);   /* engine.h's smq_engine_push_fn */
    void *push_arg;
    uint64_t commits, durable;
    bool commit_wait, pool_wait;
    uint64_t pool_retry_mono;
    uint64_t overdue_loaded;         /* notifications loaded past due, spread (§13.12) */
};

/* Rows of expired messages, deleted lazily in one go (msgs.c). */
struct engine_expired {
    struct {
        int64_t queue_id;
        uint64_t seq;
    } rows[EXPIRED_FLUSH_AT];
    size_t n;
};

/* Running redrives (run_redrive.c); each queue holds its own progress. */
struct engine_redrives {
    bool active;                     /* some queue has one running */
    uint64_t last_tick_mono;
};

struct smq_engine {
    const struct smq_clock *clock;
    struct smq_store *store;
    int max_queues;
    struct handle_keys keys;         /* read-only after open */
    struct queue_timebase tb;        /* epoch <-> monotonic, fixed at open */
    int64_t now_ms;                  /* epoch ms, fixed for one run (engine.c) */

    struct queue_registry queues;    /* the in-memory model (queue.h) */
    struct engine_topics topics;
    struct msg_table msgs;
    struct twheel msg_wheel;         /* message delay / visibility / expiry (msgs.c) */

    struct space space;
    struct txn txn;
    struct waiters waiters;
    struct eventlog eventlog;
    struct engine_ids ids;
    struct engine_expired expired;
    struct engine_redrives redrives;
    uint64_t dlq_move_failures;      /* dead-letter moves not made (msgs.c) */
    uint64_t reloads;                /* state reloads after a lost transaction (recover.c) */
    bool broken;                     /* the last reload failed: serve nothing (recover.c) */
};

/* The engine's "now" in epoch ms: the epoch at open plus the monotonic time
 * since, so that a wall-clock step cannot reorder its timers. */
static inline int64_t engine_core_now_ms(const struct smq_engine *e)
{
    return (int64_t)clock_mono_ms(e->clock) + e->tb.epoch_minus_mono_ms;
}

#endif
