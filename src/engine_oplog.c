/*
 * engine_oplog.c — operation logs: one line per message lifecycle event
 * (send, receive, visibility change, delete, expire, dead-letter, redrive,
 * purge) for queues with LoggingEnabled.  Events are collected during a
 * run and written only once its transaction committed, so the log never
 * shows what did not happen.  Never the body.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "smqd/engine_internal.h"
#include "smqd/log.h"

static const char *const event_names[] = {
    [EV_SEND] = "send",
    [EV_RECEIVE] = "receive",
    [EV_CHANGE_VISIBILITY] = "change_visibility",
    [EV_DELETE] = "delete",
    [EV_EXPIRE] = "expire",
    [EV_DEAD_LETTER] = "dead_letter",
    [EV_REDRIVE] = "redrive",
    [EV_PURGE] = "purge",
};

#define OPLOG_MAX_EVENTS 65536          /* lines one run may hold (~19 MB) */

static struct engine_event *next_slot(struct smq_engine *e)
{
    if (e->n_events == OPLOG_MAX_EVENTS) {
        e->oplog_dropped++;      /* reported after the run; the operation is not affected */
        return NULL;
    }
    if (e->n_events == e->cap_events) {
        size_t cap = e->cap_events ? e->cap_events * 2 : 64;
        struct engine_event *grown = realloc(e->events, cap * sizeof *grown);
        if (grown == NULL)
            return NULL;         /* the line is lost, the operation is not */
        e->events = grown;
        e->cap_events = cap;
    }
    return &e->events[e->n_events++];
}

/* The event's slot if q logs, filled but for the peer; else NULL. */
static struct engine_event *record(struct smq_engine *e, const struct smq_queue *q,
                                   enum engine_event_kind kind, const struct smq_msg *m,
                                   uint32_t dequeue_count, const char *request_id)
{
    struct engine_event *ev;

    if (!q->attrs.logging || (ev = next_slot(e)) == NULL)
        return NULL;
    ev->kind = kind;
    ev->seq = m != NULL ? m->seq : 0;
    ev->dequeue_count = dequeue_count;
    snprintf(ev->queue, sizeof ev->queue, "%s", q->name);
    ev->peer[0] = '\0';
    ev->arrived = false;
    snprintf(ev->request_id, sizeof ev->request_id, "%s",
             request_id != NULL && request_id[0] != '\0' ? request_id : "-");
    return ev;
}

void engine_oplog(struct smq_engine *e, const struct smq_queue *q, enum engine_event_kind kind,
                  const struct smq_msg *m, const char *request_id)
{
    record(e, q, kind, m, m != NULL ? m->dequeue_count : 0, request_id);
}

void engine_oplog_move(struct smq_engine *e, const struct smq_queue *from,
                       const struct smq_queue *to, enum engine_event_kind kind,
                       const struct smq_msg *m, uint32_t dequeue_count,
                       const char *request_id)
{
    struct engine_event *ev = record(e, from, kind, m, dequeue_count, request_id);

    if (ev != NULL)
        snprintf(ev->peer, sizeof ev->peer, "%s", to->name);
    ev = record(e, to, kind, m, dequeue_count, request_id);
    if (ev != NULL) {
        snprintf(ev->peer, sizeof ev->peer, "%s", from->name);
        ev->arrived = true;
    }
}

void engine_oplog_purge(struct smq_engine *e, const struct smq_queue *q, uint64_t count,
                        const char *request_id)
{
    engine_oplog(e, q, EV_PURGE, NULL, request_id);
    if (q->attrs.logging && e->n_events > 0 && e->events[e->n_events - 1].kind == EV_PURGE)
        e->events[e->n_events - 1].seq = count;
}

static void write_event(const struct smq_engine *e, const struct engine_event *ev)
{
    char id[MSGID_TEXT_LEN + 1];

    if (ev->kind == EV_PURGE) {
        log_event("queue=%s event=purge count=%llu request_id=%s", ev->queue,
                  (unsigned long long)ev->seq, ev->request_id);
        return;
    }
    msgid_format(&e->keys, ev->seq, id);
    if (ev->peer[0] != '\0')
        log_event("queue=%s event=%s message_id=%s dequeue_count=%u %s=%s request_id=%s",
                  ev->queue, event_names[ev->kind], id, ev->dequeue_count,
                  ev->arrived ? "from" : "to", ev->peer, ev->request_id);
    else
        log_event("queue=%s event=%s message_id=%s dequeue_count=%u request_id=%s", ev->queue,
                  event_names[ev->kind], id, ev->dequeue_count, ev->request_id);
}

/* Expiry needs no write (engine.h): it happened whatever became of the
 * run's transaction, so its lines are written either way. */
void engine_oplog_flush(struct smq_engine *e, bool committed)
{
    for (size_t i = 0; i < e->n_events; i++)
        if (committed || e->events[i].kind == EV_EXPIRE)
            write_event(e, &e->events[i]);
    e->n_events = 0;
    if (e->oplog_dropped > 0) {
        SMQ_WARN("engine: %llu operation-log lines of one run were not written (more than %d)",
                 (unsigned long long)e->oplog_dropped, OPLOG_MAX_EVENTS);
        e->oplog_dropped = 0;
    }
}

void engine_oplog_free(struct smq_engine *e)
{
    free(e->events);
    e->events = NULL;
    e->n_events = e->cap_events = 0;
}
