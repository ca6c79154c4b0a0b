/*
 * fanout_publish.c — owns where pending notifications come from (fanout.h):
 * a publish's rows and model (docs/protocol.md §13.5, §13.8), loading them
 * back from the store at start-up and after a lost transaction, and the
 * model's self-check.
 */
#include "fanout.h"

#include <stdlib.h>
#include <string.h>

#include "msgs.h"
#include "smqd/log.h"

/* ---- publish ---- */

static int write_publish(struct smq_engine *e, struct smq_op *op, struct smq_topic *t,
                         struct topic_notif **fresh, uint32_t n)
{
    struct smq_op_publish *p = &op->publish;
    struct store_tmsg_rec m = {.topic_id = t->id, .publish_ms = e->now_ms,
                               .body_len = p->body_len};
    int rc = txn_write_begin(&e->txn);

    if (rc != 0)
        return rc;
    rc = msgs_next_seq(e, &p->seq);
    memcpy(m.tag, p->tag, sizeof m.tag);
    memcpy(m.md5, p->body_md5, sizeof m.md5);
    m.seq = p->seq;
    if (rc == 0 && n > 0)
        rc = store_tmsg_insert(e->store, &m, p->body, p->body_len);
    for (uint32_t i = 0; rc == 0 && i < n; i++) {
        struct store_notif_rec r = {fresh[i]->sub->id, p->seq, 0, e->now_ms,
                                    (int)fresh[i]->sub->attrs.strategy};
        rc = store_notif_insert(e->store, &r);
    }
    rc = txn_write_end(&e->txn, rc);
    msgs_settle_seqs(e, rc == 0);
    return rc;
}

/* One notification per subscription of t that matches the tag (§13.8), each
 * with its sub set; *n says how many.  0 or SMQ_E_NOMEM (the caller frees
 * what was made: free_notifs over t->n_subs). */
static int alloc_notifs(const struct smq_topic *t, const char *tag, struct topic_notif ***out,
                        uint32_t *n)
{
    struct topic_notif **fresh = calloc(t->n_subs > 0 ? t->n_subs : 1, sizeof *fresh);

    *n = 0;
    *out = fresh;
    if (fresh == NULL)
        return SMQ_E_NOMEM;
    for (size_t i = 0; i < t->n_subs; i++) {
        if (!topic_sub_matches(t->subs[i], tag))
            continue;
        if ((fresh[*n] = calloc(1, sizeof **fresh)) == NULL)
            return SMQ_E_NOMEM;
        fresh[*n]->sub = t->subs[i];
        fresh[(*n)++]->strategy = (uint8_t)t->subs[i]->attrs.strategy;
    }
    return 0;
}

static void free_notifs(struct topic_notif **fresh, size_t n)
{
    for (size_t i = 0; fresh != NULL && i < n; i++)
        free(fresh[i]);
    free(fresh);
}

/* Puts the published message and its notifications (rows written) in the model. */
static void link_publish(struct smq_engine *e, struct smq_op *op, struct smq_topic *t,
                         struct topic_msg *msg, struct topic_notif **fresh, uint32_t n)
{
    struct engine_topics *f = &e->topics;

    msg->seq = op->publish.seq;
    msg->publish_ms = e->now_ms;
    memcpy(msg->md5, op->publish.body_md5, sizeof msg->md5);
    memcpy(msg->tag, op->publish.tag, sizeof msg->tag);
    topic_msg_insert(&f->model, t, msg);
    for (uint32_t i = 0; i < n; i++) {
        fresh[i]->msg = msg;
        fresh[i]->due_ms = e->now_ms;
        fresh[i]->commit_gen = f->commits + 1;   /* pushed once this run's commit is durable */
        topic_notif_link(&f->model, fresh[i], e->now_ms, &f->wheel, e->tb.epoch_minus_mono_ms);
    }
}

int fanout_publish(struct smq_engine *e, struct smq_op *op, struct smq_topic *t)
{
    struct smq_op_publish *p = &op->publish;
    struct topic_notif **fresh = NULL;
    struct topic_msg *msg = NULL;
    uint32_t n = 0;
    int rc;

    if (e->space.full)
        return errors_set(&op->result, SMQ_E_STORAGE_FULL, "%s", space_refusal(&e->space));
    if (p->body_len < 1 || (int64_t)p->body_len > t->attrs.max_msg_size)
        return errors_set(&op->result, SMQ_E_INVALID_ARGUMENT,
                          "The MessageBody must be 1 to %lld bytes: the topic's "
                          "MaximumMessageSize.", (long long)t->attrs.max_msg_size);
    rc = alloc_notifs(t, p->tag, &fresh, &n);
    if (rc == 0 && n > 0 && (msg = calloc(1, sizeof *msg)) == NULL)
        rc = SMQ_E_NOMEM;
    if (rc == 0)
        rc = write_publish(e, op, t, fresh, n);
    if (rc != 0) {
        free(msg);
        free_notifs(fresh, t->n_subs);
        return rc;
    }
    if (n > 0)
        link_publish(e, op, t, msg, fresh, n);
    free(fresh);
    p->n_notifications = n;
    t->published++;
    eventlog_publish(&e->eventlog, t, p->seq, n, op->request_id);
    return 0;
}

/* ---- recovery ---- */

struct fanout_load_ctx {
    struct smq_engine *e;
    struct smq_topic *const *by_id;
    size_t n_topics;
    uint64_t skipped;
    int rc;
};

static int load_tmsg(void *arg, const struct store_tmsg_rec *r)
{
    struct fanout_load_ctx *c = arg;
    struct smq_engine *e = c->e;
    struct smq_topic *t = topic_in_id_order(c->by_id, c->n_topics, r->topic_id);
    struct topic_msg *msg;

    if (r->seq >= e->ids.next_seq)
        e->ids.next_seq = r->seq + 1;
    if (t == NULL) {             /* a topic's delete takes its rows: cannot happen */
        c->skipped++;
        return 0;
    }
    if ((msg = calloc(1, sizeof *msg)) == NULL)
        return c->rc = SMQ_E_NOMEM;
    msg->seq = r->seq;
    msg->publish_ms = r->publish_ms;
    memcpy(msg->md5, r->md5, sizeof msg->md5);
    memcpy(msg->tag, r->tag, sizeof msg->tag);
    topic_msg_insert(&e->topics.model, t, msg);
    return 0;
}

/* Attempts of HTTP subscriptions that fell due while smqd was down are
 * spread out rather than made all at once (§13.12): the k-th one loaded
 * past due is due k / OVERDUE_PER_S seconds from now.  Only memory moves:
 * the row keeps the earlier time, so a restart retries sooner, never later. */
#define OVERDUE_PER_S 100
static int64_t overdue_spread(struct smq_engine *e, const struct smq_sub *s, int64_t due_ms)
{
    uint64_t k;

    if (s->ep.kind == NOTIFY_EP_QUEUE || due_ms > e->now_ms)
        return due_ms;
    k = e->topics.overdue_loaded++;
    return e->now_ms + (int64_t)(k / OVERDUE_PER_S) * 1000;
}

static int load_notif(void *arg, const struct store_notif_rec *r)
{
    struct fanout_load_ctx *c = arg;
    struct engine_topics *f = &c->e->topics;
    struct smq_sub *s = topic_sub_find_id(&f->model, r->sub_id);
    struct topic_msg *msg = topic_msg_find(&f->model, r->seq);
    struct topic_notif *n;

    if (s == NULL || msg == NULL || msg->topic != s->topic) {
        c->skipped++;
        return 0;
    }
    if ((n = calloc(1, sizeof *n)) == NULL)
        return c->rc = SMQ_E_NOMEM;
    n->sub = s;
    n->msg = msg;
    n->attempts = r->attempts;
    n->due_ms = overdue_spread(c->e, s, r->due_ms);
    n->strategy = (uint8_t)mns_notify_strategy_of(r->strategy);
    topic_notif_link(&f->model, n, c->e->now_ms, &f->wheel, c->e->tb.epoch_minus_mono_ms);
    return 0;
}

/* Published messages left with no notification (a subscription not loaded
 * can leave one): their rows go now, or they would be kept forever. */
static void drop_orphan_msgs(struct smq_engine *e)
{
    struct topic_model *m = &e->topics.model;

    for (size_t b = 0; b < m->n_msg_buckets; b++) {
        struct topic_msg **at = &m->msg_buckets[b];
        while (*at != NULL) {
            struct topic_msg *msg = *at;
            int rc;
            if (msg->pending > 0) {
                at = &msg->hash_next;
                continue;
            }
            rc = txn_write_begin(&e->txn);
            if (rc == 0)
                rc = txn_write_end(&e->txn, store_tmsg_delete(e->store, msg->seq));
            if (rc != 0)
                return;          /* kept for the next start-up */
            *at = msg->hash_next;
            m->n_msgs--;
            msg->topic->message_count--;
            free(msg);
        }
    }
}

int fanout_load(struct smq_engine *e, struct smq_topic *const *by_id, size_t n_topics)
{
    struct fanout_load_ctx c = {e, by_id, n_topics, 0, 0};
    int rc = store_tmsg_load(e->store, load_tmsg, &c);

    e->topics.overdue_loaded = 0;

    if (rc == 0)
        rc = c.rc;
    if (rc == 0)
        rc = store_notif_load(e->store, load_notif, &c);
    if (rc == 0)
        rc = c.rc;
    if (rc == 0)
        drop_orphan_msgs(e);
    if (c.skipped > 0)
        SMQ_INFO("recovery: %llu published messages or notifications of nothing loaded were "
                 "skipped", (unsigned long long)c.skipped);
    return rc;
}

void fanout_clear(struct smq_engine *e)
{
    topic_model_clear(&e->topics.model, &e->topics.wheel);
    e->topics.body_seq = 0;
}

/* ---- self-check ---- */

static const char *check_sub(const struct smq_sub *s, uint64_t *notifs)
{
    uint64_t all = 0, retrying = 0, ready = 0, flight = 0;

    for (const struct topic_notif *n = s->all; n != NULL; n = n->sub_next) {
        all++;
        retrying += n->attempts > 0;
        if (n->sub != s)
            return "a notification is on another subscription's list";
    }
    for (const struct topic_notif *n = s->ready_head; n != NULL; n = n->next)
        ready += n->state == TOPIC_NOTIF_READY ? 1 : 1000000;
    for (const struct topic_notif *n = s->flight; n != NULL; n = n->next)
        flight += n->state == TOPIC_NOTIF_IN_FLIGHT ? 1 : 1000000;
    if (flight != s->n_flight || (flight > 0 && s->ep.kind == NOTIFY_EP_QUEUE))
        return "a subscription's pushes in flight and its count differ";
    if (all != s->n_pending || retrying != s->n_retrying)
        return "a subscription's pending counts and its notifications differ";
    if (ready > all)
        return "a subscription's READY list is wrong";
    if (ready > 0 && !s->runnable && s->ep.kind == NOTIFY_EP_QUEUE)
        return "a queue subscription has READY notifications but is not runnable";
    *notifs += all;
    return NULL;
}

/* The runnable list against its two counts (fanout.c relies on them). */
static const char *check_runnable(const struct topic_model *m)
{
    size_t all = 0, push = 0;

    for (const struct smq_sub *s = m->runnable_head; s != NULL; s = s->runnable_next) {
        if (!s->runnable)
            return "a subscription on the runnable list is not marked runnable";
        all++;
        push += s->ep.kind != NOTIFY_EP_QUEUE;
    }
    if (all != m->n_runnable || push != m->n_runnable_push)
        return "the runnable list and its counts differ";
    return NULL;
}

const char *fanout_check(const struct smq_engine *e)
{
    const struct topic_model *m = &e->topics.model;
    uint64_t notifs = 0, msgs = 0;
    const char *why;

    for (size_t i = 0; i < m->n_topics; i++) {
        const struct smq_topic *t = m->topics[i];
        for (size_t j = 0; j < t->n_subs; j++) {
            if ((why = check_sub(t->subs[j], &notifs)) != NULL)
                return why;
        }
        msgs += t->message_count;
    }
    if (notifs != m->n_notifs)
        return "the subscriptions' notifications and the model's count differ";
    if ((why = check_runnable(m)) != NULL)
        return why;
    return msgs == m->n_msgs ? NULL : "the topics' message counts and the message table differ";
}
