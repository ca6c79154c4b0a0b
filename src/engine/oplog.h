/*
 * oplog.h — operation logs: one line per message lifecycle event (send,
 * receive, visibility change, delete, expire, dead-letter, redrive, purge)
 * for queues with LoggingEnabled.  Events are collected during a run and
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
#include "smqd/handle.h"

enum oplog_kind {
    OPLOG_SEND,
    OPLOG_RECEIVE,
    OPLOG_CHANGE_VISIBILITY,
    OPLOG_DELETE,
    OPLOG_EXPIRE,
    OPLOG_DEAD_LETTER,
    OPLOG_REDRIVE,
    OPLOG_PURGE
};

/* One line to write.  Names are copied: a queue may be deleted later in
 * the same run. */
struct oplog_event {
    enum oplog_kind kind;
    uint64_t seq;                    /* OPLOG_PURGE: the number of messages */
    uint32_t dequeue_count;
    char queue[SMQ_QUEUE_NAME_MAX + 1];
    char peer[SMQ_QUEUE_NAME_MAX + 1];       /* dead-letter / redrive: the other queue */
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
/* After the run: writes (committed) or drops (lost) the recorded events. */
void oplog_flush(struct oplog *l, bool committed);

#endif
