/*
 * eventlog.h — the event log: one line (tag OPLOG) per message lifecycle
 * event (send, receive, visibility change, delete, expire, dead-letter,
 * redrive, purge) for queues with LoggingEnabled; for topics with
 * LoggingEnabled, one line per publish and per notification outcome
 * (delivered, retry scheduled, given up into the dead-letter queue,
 * dropped).  docs/operations.md documents these lines under "Operation
 * logs", their user-facing name.  Events are collected during a run and
 * written only once its transaction committed, so the log never shows what
 * did not happen.  Never the body.
 *
 * Engine thread only.
 */
#ifndef SMQD_EVENTLOG_H
#define SMQD_EVENTLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "queue.h"
#include "topic.h"
#include "smqd/handle.h"

enum eventlog_kind {
    EVENTLOG_SEND,
    EVENTLOG_RECEIVE,
    EVENTLOG_CHANGE_VISIBILITY,
    EVENTLOG_DELETE,
    EVENTLOG_EXPIRE,
    EVENTLOG_DEAD_LETTER,
    EVENTLOG_REDRIVE,
    EVENTLOG_PURGE,
    /* topics: */
    EVENTLOG_PUBLISH,
    EVENTLOG_NOTIFY_DELIVER,            /* into the subscription's queue */
    EVENTLOG_NOTIFY_RETRY,              /* an attempt failed, the next is scheduled */
    EVENTLOG_NOTIFY_DEAD_LETTER,        /* given up into the subscription's dead-letter queue */
    EVENTLOG_NOTIFY_DROP                /* given up with nowhere to go */
};

/* One line to write.  Names are copied: a queue may be deleted later in
 * the same run. */
struct eventlog_event {
    enum eventlog_kind kind;
    uint64_t seq;                    /* EVENTLOG_PURGE: the number of messages */
    uint32_t dequeue_count;          /* topics: attempts made; EVENTLOG_PUBLISH: notifications */
    char queue[SMQ_QUEUE_NAME_MAX + 1];      /* topics: the topic */
    char sub[SMQ_TOPIC_NAME_MAX + 1];        /* a notification's subscription; else "" */
    char peer[SMQ_QUEUE_NAME_MAX + 1];       /* dead-letter / redrive / deliver: the other queue */
    bool arrived;                            /* the message came from peer (else went to it) */
    char request_id[25];
};

struct eventlog {
    const struct handle_keys *keys;  /* formats the MessageIds */
    struct eventlog_event *events;   /* this run's lines */
    size_t n, cap;
    uint64_t dropped;                /* events past the per-run cap */
};

void eventlog_init(struct eventlog *l, const struct handle_keys *keys);
void eventlog_free(struct eventlog *l);

/* Records an event for m (NULL for none) if q logs. */
void eventlog_record(struct eventlog *l, const struct smq_queue *q, enum eventlog_kind kind,
                     const struct smq_msg *m, const char *request_id);
/* A move (EVENTLOG_DEAD_LETTER, EVENTLOG_REDRIVE) of m from `from` to `to`, after
 * which m's own count restarts: one line for each queue that logs, "to=" in
 * the one it left, "from=" in the other, with the count it had before. */
void eventlog_move(struct eventlog *l, const struct smq_queue *from, const struct smq_queue *to,
                   enum eventlog_kind kind, const struct smq_msg *m, uint32_t dequeue_count,
                   const char *request_id);
void eventlog_purge(struct eventlog *l, const struct smq_queue *q, uint64_t count,
                    const char *request_id);
/* A publish of message seq to t, which made n_notifications, if t logs. */
void eventlog_publish(struct eventlog *l, const struct smq_topic *t, uint64_t seq,
                      uint32_t n_notifications, const char *request_id);
/* An outcome (EVENTLOG_NOTIFY_*) of notification n, still linked, if its
 * topic logs; attempts: those made so far, the one that led here included;
 * to: the queue it went into (deliver, dead-letter), else NULL. */
void eventlog_notify(struct eventlog *l, enum eventlog_kind kind, const struct topic_notif *n,
                     uint32_t attempts, const struct smq_queue *to);
/* After the run: writes (committed) or drops (lost) the recorded events. */
void eventlog_flush(struct eventlog *l, bool committed);

#endif
