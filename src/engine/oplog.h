/*
 * oplog.h — operation logs: one line per message lifecycle event (send,
 * receive, visibility change, delete, expire, dead-letter, redrive, purge)
 * for queues with LoggingEnabled; for topics with LoggingEnabled, one line
 * per publish and per notification outcome (delivered, retry scheduled,
 * given up into the dead-letter queue, dropped; docs/operations.md,
 * Operation logs).  Events are collected during a run and
 * written only once its transaction committed, so the log never shows what
 * did not happen.  Never the body.
 *
 * Engine thread only.
 */
#ifndef SMQD_OPLOG_H
#define SMQD_OPLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "queue.h"
#include "topic.h"
#include "smqd/handle.h"

enum oplog_kind {
    OPLOG_SEND,
    OPLOG_RECEIVE,
    OPLOG_CHANGE_VISIBILITY,
    OPLOG_DELETE,
    OPLOG_EXPIRE,
    OPLOG_DEAD_LETTER,
    OPLOG_REDRIVE,
    OPLOG_PURGE,
    /* topics: */
    OPLOG_PUBLISH,
    OPLOG_NOTIFY_DELIVER,            /* into the subscription's queue */
    OPLOG_NOTIFY_RETRY,              /* an attempt failed, the next is scheduled */
    OPLOG_NOTIFY_DEAD_LETTER,        /* given up into the subscription's dead-letter queue */
    OPLOG_NOTIFY_DROP                /* given up with nowhere to go */
};

/* One line to write.  Names are copied: a queue may be deleted later in
 * the same run. */
struct oplog_event {
    enum oplog_kind kind;
    uint64_t seq;                    /* OPLOG_PURGE: the number of messages */
    uint32_t dequeue_count;          /* topics: attempts made; OPLOG_PUBLISH: notifications */
    char queue[SMQ_QUEUE_NAME_MAX + 1];      /* topics: the topic */
    char sub[SMQ_TOPIC_NAME_MAX + 1];        /* a notification's subscription; else "" */
    char peer[SMQ_QUEUE_NAME_MAX + 1];       /* dead-letter / redrive / deliver: the other queue */
    bool arrived;                            /* the message came from peer (else went to it) */
    char request_id[25];
};

struct oplog {
    const struct handle_keys *keys;  /* formats the MessageIds */
    struct oplog_event *events;      /* this run's lines */
    size_t n, cap;
    uint64_t dropped;                /* events past the per-run cap */
};

void oplog_init(struct oplog *l, const struct handle_keys *keys);
void oplog_free(struct oplog *l);

/* Records an event for m (NULL for none) if q logs. */
void oplog_record(struct oplog *l, const struct smq_queue *q, enum oplog_kind kind,
                  const struct smq_msg *m, const char *request_id);
/* A move (OPLOG_DEAD_LETTER, OPLOG_REDRIVE) of m from `from` to `to`, after
 * which m's own count restarts: one line for each queue that logs, "to=" in
 * the one it left, "from=" in the other, with the count it had before. */
void oplog_move(struct oplog *l, const struct smq_queue *from, const struct smq_queue *to,
                enum oplog_kind kind, const struct smq_msg *m, uint32_t dequeue_count,
                const char *request_id);
void oplog_purge(struct oplog *l, const struct smq_queue *q, uint64_t count,
                 const char *request_id);
/* A publish of message seq to t, which made n_notifications, if t logs. */
void oplog_publish(struct oplog *l, const struct smq_topic *t, uint64_t seq,
                   uint32_t n_notifications, const char *request_id);
/* An outcome (OPLOG_NOTIFY_*) of notification n, still linked, if its
 * topic logs; attempts: those made so far, the one that led here included;
 * to: the queue it went into (deliver, dead-letter), else NULL. */
void oplog_notify(struct oplog *l, enum oplog_kind kind, const struct topic_notif *n,
                  uint32_t attempts, const struct smq_queue *to);
/* After the run: writes (committed) or drops (lost) the recorded events. */
void oplog_flush(struct oplog *l, bool committed);

#endif
