/*
 * oplog.c — owns the operation-log lines of a run (oplog.h).
 */
#include "oplog.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "smqd/log.h"

static const char *const event_names[] = {
    [OPLOG_SEND] = "send",
    [OPLOG_RECEIVE] = "receive",
    [OPLOG_CHANGE_VISIBILITY] = "change_visibility",
    [OPLOG_DELETE] = "delete",
    [OPLOG_EXPIRE] = "expire",
    [OPLOG_DEAD_LETTER] = "dead_letter",
    [OPLOG_REDRIVE] = "redrive",
    [OPLOG_PURGE] = "purge",
};

#define OPLOG_MAX_EVENTS 65536          /* lines one run may hold (~19 MB) */

static struct oplog_event *next_slot(struct oplog *l)
{
    if (l->n == OPLOG_MAX_EVENTS) {
        l->dropped++;      /* reported after the run; the operation is not affected */
        return NULL;
    }
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        struct oplog_event *grown = realloc(l->events, cap * sizeof *grown);
        if (grown == NULL)
            return NULL;         /* the line is lost, the operation is not */
        l->events = grown;
        l->cap = cap;
    }
    return &l->events[l->n++];
}

/* The event's slot if q logs, filled but for the peer; else NULL. */
static struct oplog_event *record(struct oplog *l, const struct smq_queue *q,
                                   enum oplog_kind kind, const struct smq_msg *m,
                                   uint32_t dequeue_count, const char *request_id)
{
    struct oplog_event *ev;

    if (!q->attrs.logging || (ev = next_slot(l)) == NULL)
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

void oplog_record(struct oplog *l, const struct smq_queue *q, enum oplog_kind kind,
                  const struct smq_msg *m, const char *request_id)
{
    record(l, q, kind, m, m != NULL ? m->dequeue_count : 0, request_id);
}

void oplog_move(struct oplog *l, const struct smq_queue *from,
                       const struct smq_queue *to, enum oplog_kind kind,
                       const struct smq_msg *m, uint32_t dequeue_count,
                       const char *request_id)
{
    struct oplog_event *ev = record(l, from, kind, m, dequeue_count, request_id);

    if (ev != NULL)
        snprintf(ev->peer, sizeof ev->peer, "%s", to->name);
    ev = record(l, to, kind, m, dequeue_count, request_id);
    if (ev != NULL) {
        snprintf(ev->peer, sizeof ev->peer, "%s", from->name);
        ev->arrived = true;
    }
}

void oplog_purge(struct oplog *l, const struct smq_queue *q, uint64_t count,
                        const char *request_id)
{
    struct oplog_event *ev = record(l, q, OPLOG_PURGE, NULL, 0, request_id);

    /* A purge line carries its count where the others carry a seq; a purge
     * dropped at the cap has no slot, and writes nowhere. */
    if (ev != NULL)
        ev->seq = count;
}

static void write_event(const struct oplog *l, const struct oplog_event *ev)
{
    char id[MSGID_TEXT_LEN + 1];

    if (ev->kind == OPLOG_PURGE) {
        log_event("queue=%s event=purge count=%llu request_id=%s", ev->queue,
                  (unsigned long long)ev->seq, ev->request_id);
        return;
    }
    msgid_format(l->keys, ev->seq, id);
    if (ev->peer[0] != '\0')
        log_event("queue=%s event=%s message_id=%s dequeue_count=%u %s=%s request_id=%s",
                  ev->queue, event_names[ev->kind], id, ev->dequeue_count,
                  ev->arrived ? "from" : "to", ev->peer, ev->request_id);
    else
        log_event("queue=%s event=%s message_id=%s dequeue_count=%u request_id=%s", ev->queue,
                  event_names[ev->kind], id, ev->dequeue_count, ev->request_id);
}

/* An expiry needs no write (a row past its expiry is never loaded again):
 * it happened whatever became of the run's transaction, so its lines are
 * written either way. */
void oplog_flush(struct oplog *l, bool committed)
{
    for (size_t i = 0; i < l->n; i++)
        if (committed || l->events[i].kind == OPLOG_EXPIRE)
            write_event(l, &l->events[i]);
    l->n = 0;
    if (l->dropped > 0) {
        SMQ_WARN("engine: %llu operation-log lines of one run were not written (more than %d)",
                 (unsigned long long)l->dropped, OPLOG_MAX_EVENTS);
        l->dropped = 0;
    }
}

void oplog_init(struct oplog *l, const struct handle_keys *keys)
{
    *l = (struct oplog){.keys = keys};
}

void oplog_free(struct oplog *l)
{
    free(l->events);
    l->events = NULL;
    l->n = l->cap = 0;
}
