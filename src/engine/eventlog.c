/*
 * eventlog.c — owns the event log's lines of a run (eventlog.h).
 */
#include "eventlog.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "smqd/log.h"

static const char *const event_names[] = {
    [EVENTLOG_SEND] = "send",
    [EVENTLOG_RECEIVE] = "receive",
    [EVENTLOG_CHANGE_VISIBILITY] = "change_visibility",
    [EVENTLOG_DELETE] = "delete",
    [EVENTLOG_EXPIRE] = "expire",
    [EVENTLOG_DEAD_LETTER] = "dead_letter",
    [EVENTLOG_REDRIVE] = "redrive",
    [EVENTLOG_PURGE] = "purge",
    [EVENTLOG_PUBLISH] = "publish",
    [EVENTLOG_NOTIFY_DELIVER] = "deliver",
    [EVENTLOG_NOTIFY_RETRY] = "retry",
    [EVENTLOG_NOTIFY_DEAD_LETTER] = "dead_letter",
    [EVENTLOG_NOTIFY_DROP] = "drop",
};

#define EVENTLOG_MAX_EVENTS 65536          /* lines one run may hold (~27 MB) */

static struct eventlog_event *next_slot(struct eventlog *l)
{
    if (l->n == EVENTLOG_MAX_EVENTS) {
        l->dropped++;      /* reported after the run; the operation is not affected */
        return NULL;
    }
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        struct eventlog_event *grown = realloc(l->events, cap * sizeof *grown);
        if (grown == NULL)
            return NULL;         /* the line is lost, the operation is not */
        l->events = grown;
        l->cap = cap;
    }
    return &l->events[l->n++];
}

/* A slot filled for the queue or topic `name` but for sub and peer, or
 * NULL (logging off, or no room). */
static struct eventlog_event *fill(struct eventlog *l, bool logging, const char *name,
                                   enum eventlog_kind kind, uint64_t seq, uint32_t count,
                                   const char *request_id)
{
    struct eventlog_event *ev;

    if (!logging || (ev = next_slot(l)) == NULL)
        return NULL;
    ev->kind = kind;
    ev->seq = seq;
    ev->dequeue_count = count;
    snprintf(ev->queue, sizeof ev->queue, "%s", name);
    ev->sub[0] = '\0';
    ev->peer[0] = '\0';
    ev->arrived = false;
    snprintf(ev->request_id, sizeof ev->request_id, "%s",
             request_id != NULL && request_id[0] != '\0' ? request_id : "-");
    return ev;
}

/* The event's slot if q logs, filled but for the peer; else NULL. */
static struct eventlog_event *record(struct eventlog *l, const struct smq_queue *q,
                                   enum eventlog_kind kind, const struct smq_msg *m,
                                   uint32_t dequeue_count, const char *request_id)
{
    return fill(l, q->attrs.logging, q->name, kind, m != NULL ? m->seq : 0, dequeue_count,
                request_id);
}

void eventlog_record(struct eventlog *l, const struct smq_queue *q, enum eventlog_kind kind,
                     const struct smq_msg *m, const char *request_id)
{
    record(l, q, kind, m, m != NULL ? m->dequeue_count : 0, request_id);
}

void eventlog_move(struct eventlog *l, const struct smq_queue *from,
                       const struct smq_queue *to, enum eventlog_kind kind,
                       const struct smq_msg *m, uint32_t dequeue_count,
                       const char *request_id)
{
    struct eventlog_event *ev = record(l, from, kind, m, dequeue_count, request_id);

    if (ev != NULL)
        snprintf(ev->peer, sizeof ev->peer, "%s", to->name);
    ev = record(l, to, kind, m, dequeue_count, request_id);
    if (ev != NULL) {
        snprintf(ev->peer, sizeof ev->peer, "%s", from->name);
        ev->arrived = true;
    }
}

void eventlog_purge(struct eventlog *l, const struct smq_queue *q, uint64_t count,
                        const char *request_id)
{
    struct eventlog_event *ev = record(l, q, EVENTLOG_PURGE, NULL, 0, request_id);

    /* A purge line carries its count where the others carry a seq; a purge
     * dropped at the cap has no slot, and writes nowhere. */
    if (ev != NULL)
        ev->seq = count;
}

void eventlog_publish(struct eventlog *l, const struct smq_topic *t, uint64_t seq,
                      uint32_t n_notifications, const char *request_id)
{
    fill(l, t->attrs.logging, t->name, EVENTLOG_PUBLISH, seq, n_notifications, request_id);
}

void eventlog_notify(struct eventlog *l, enum eventlog_kind kind, const struct topic_notif *n,
                     uint32_t attempts, const struct smq_queue *to)
{
    const struct smq_sub *s = n->sub;
    /* No request causes an outcome: the fan-out does, between requests. */
    struct eventlog_event *ev = fill(l, s->topic->attrs.logging, s->topic->name, kind,
                                     n->msg->seq, attempts, NULL);

    if (ev == NULL)
        return;
    snprintf(ev->sub, sizeof ev->sub, "%s", s->name);
    if (to != NULL)
        snprintf(ev->peer, sizeof ev->peer, "%s", to->name);
}

/* topic=T [subscription=S] event=E message_id=ID (notifications|attempts)=N [to=Q] request_id=R */
static void write_topic_event(const struct eventlog_event *ev, const char *id)
{
    if (ev->kind == EVENTLOG_PUBLISH) {
        log_event("topic=%s event=publish message_id=%s notifications=%u request_id=%s",
                  ev->queue, id, ev->dequeue_count, ev->request_id);
        return;
    }
    log_event("topic=%s subscription=%s event=%s message_id=%s attempts=%u%s%s request_id=%s",
              ev->queue, ev->sub, event_names[ev->kind], id, ev->dequeue_count,
              ev->peer[0] != '\0' ? " to=" : "", ev->peer, ev->request_id);
}

static void write_event(const struct eventlog *l, const struct eventlog_event *ev)
{
    char id[MSGID_TEXT_LEN + 1];

    if (ev->kind >= EVENTLOG_PUBLISH) {
        msgid_format(l->keys, ev->seq, id);
        write_topic_event(ev, id);
        return;
    }
    if (ev->kind == EVENTLOG_PURGE) {
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
void eventlog_flush(struct eventlog *l, bool committed)
{
    for (size_t i = 0; i < l->n; i++)
        if (committed || l->events[i].kind == EVENTLOG_EXPIRE)
            write_event(l, &l->events[i]);
    l->n = 0;
    if (l->dropped > 0) {
        SMQ_WARN("engine: %llu operation-log lines of one run were not written (more than %d)",
                 (unsigned long long)l->dropped, EVENTLOG_MAX_EVENTS);
        l->dropped = 0;
    }
}

void eventlog_init(struct eventlog *l, const struct handle_keys *keys)
{
    *l = (struct eventlog){.keys = keys};
}

void eventlog_free(struct eventlog *l)
{
    free(l->events);
    l->events = NULL;
    l->n = l->cap = 0;
}
