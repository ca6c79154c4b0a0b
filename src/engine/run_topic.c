/*
 * run_topic.c — owns the engine side of the topic and subscription actions
 * (run_topic.h, docs/protocol.md §13.4, §13.6): their rows and model,
 * idempotent create and subscribe, the fields of a subscription that
 * cannot change, its dead-letter target, ids, the limits, and listing by
 * prefix and marker.  As for queues, rows are written first and the model
 * changes only after the write succeeded.
 */
#include "run_topic.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "listing.h"
#include "msgs.h"
#include "smqd/notify.h"

/* ---- topics ---- */

void run_topic_rec(const struct smq_topic *t, const struct smq_topic_attrs *a, int64_t modify_s,
                   struct store_topic_rec *r)
{
    memset(r, 0, sizeof *r);
    r->id = t->id;
    snprintf(r->name, sizeof r->name, "%s", t->name);
    r->create_s = t->create_s;
    r->modify_s = modify_s;
    r->max_msg_size = a->max_msg_size;
    r->logging = a->logging;
}

static void overlay_topic(struct smq_topic_attrs *a, const struct smq_op_topic *o)
{
    if (o->present & SMQ_TATTR_MAX_MSG_SIZE)
        a->max_msg_size = o->values.max_msg_size;
    if (o->present & SMQ_TATTR_LOGGING)
        a->logging = o->values.logging;
}

/* Writes a new row (a topic's or a subscription's) and the id mark past it:
 * ids are never reused, as queue ids (store.h). */
static int insert_topic_row(struct smq_engine *e, const struct store_topic_rec *t)
{
    int rc = txn_write_begin(&e->txn);

    if (rc == 0)
        rc = store_topic_insert(e->store, t);
    if (rc == 0)
        rc = msgs_write_mark(e, META_NEXT_TOPIC_ID, (uint64_t)t->id + 1);
    return txn_write_end(&e->txn, rc);
}

static int insert_sub_row(struct smq_engine *e, const struct store_sub_rec *s)
{
    int rc = txn_write_begin(&e->txn);

    if (rc == 0)
        rc = store_sub_insert(e->store, s);
    if (rc == 0)
        rc = msgs_write_mark(e, META_NEXT_SUB_ID, (uint64_t)s->id + 1);
    return txn_write_end(&e->txn, rc);
}

int run_topic_create(struct smq_engine *e, struct smq_op *op)
{
    struct topic_model *m = &e->topics.model;
    struct smq_topic *t = topic_find(m, op->queue);
    struct smq_topic_attrs a;
    struct store_topic_rec rec;
    int64_t now_s = e->now_ms / 1000;
    int rc;

    mns_default_topic_attrs(&a);
    overlay_topic(&a, &op->topic);
    op->topic.created = false;
    if (t != NULL)     /* §13.4.1: the same attributes (defaults filled in) answer 204 */
        return a.max_msg_size == t->attrs.max_msg_size && a.logging == t->attrs.logging
                   ? 0 : SMQ_E_TOPIC_ALREADY_EXIST;
    if (e->space.full)
        return errors_set(&op->result, SMQ_E_STORAGE_FULL, "%s", space_refusal(&e->space));
    if (m->n_topics >= (size_t)e->topics.max_topics)
        return errors_set(&op->result, SMQ_E_TOO_MANY_TOPICS,
                          "The number of topics has reached the limit of %d.",
                          e->topics.max_topics);
    if (topic_reserve(m) != 0
        || (t = topic_new(e->ids.next_topic_id, op->queue, &a, now_s, now_s)) == NULL)
        return SMQ_E_NOMEM;
    run_topic_rec(t, &a, now_s, &rec);
    rc = insert_topic_row(e, &rec);
    if (rc != 0) {
        free(t);                /* linked nowhere yet */
        return rc;
    }
    e->ids.next_topic_id++;
    topic_insert(m, t);
    op->topic.created = true;
    return 0;
}

int run_topic_set(struct smq_engine *e, struct smq_op *op, struct smq_topic *t)
{
    struct smq_topic_attrs a = t->attrs;
    struct store_topic_rec rec;
    int64_t now_s = e->now_ms / 1000;
    int rc;

    overlay_topic(&a, &op->topic);
    run_topic_rec(t, &a, now_s, &rec);
    rc = txn_write_begin(&e->txn);
    if (rc == 0)
        rc = store_topic_update(e->store, &rec);
    rc = txn_write_end(&e->txn, rc);
    if (rc == 0) {
        t->attrs = a;
        t->modify_s = now_s;
    }
    return rc;
}

int run_topic_get(struct smq_engine *e, struct smq_op *op, struct smq_topic *t)
{
    (void)e;
    topic_info(t, &op->topic.info);
    return 0;
}

int run_topic_delete(struct smq_engine *e, struct smq_op *op)
{
    struct smq_topic *t = topic_find(&e->topics.model, op->queue);
    int rc;

    if (t == NULL)
        return 0;               /* as DeleteQueue (§13.4.4) */
    rc = txn_write_begin(&e->txn);
    if (rc == 0)
        rc = store_topic_delete(e->store, t->id);
    rc = txn_write_end(&e->txn, rc);
    if (rc == 0)
        topic_destroy(&e->topics.model, t, &e->topics.wheel);
    return rc;
}

static const char *topic_name_at(const void *set, size_t i)
{
    return ((const struct topic_model *)set)->topics[i]->name;
}

static size_t topic_lower_bound_of(const void *set, const char *name)
{
    return topic_lower_bound(set, name);
}

struct topic_page {
    const struct topic_model *m;
    struct smq_op_tlist *l;
};

static void take_topic(void *arg, size_t i)
{
    struct topic_page *pg = arg;

    topic_info(pg->m->topics[i], &pg->l->topics[pg->l->n_topics++]);
}

int run_topic_list(struct smq_engine *e, struct smq_op *op)
{
    struct smq_op_tlist *l = &op->tlist;
    struct listing_set set = {&e->topics.model, e->topics.model.n_topics, topic_name_at,
                              topic_lower_bound_of};
    struct listing_page page = {l->prefix, l->marker, (size_t)l->ret_number, l->visible,
                                l->next_marker, sizeof l->next_marker};
    struct topic_page pg = {&e->topics.model, l};

    if ((l->topics = calloc(page.limit > 0 ? page.limit : 1, sizeof *l->topics)) == NULL)
        return SMQ_E_NOMEM;
    listing_walk(&set, &page, take_topic, &pg);
    return 0;
}

/* ---- subscriptions ---- */

void run_sub_rec(const struct smq_sub *s, const struct smq_sub_attrs *a, int64_t modify_s,
                 struct store_sub_rec *r)
{
    memset(r, 0, sizeof *r);
    r->id = s->id;
    r->topic_id = s->topic != NULL ? s->topic->id : 0;
    snprintf(r->name, sizeof r->name, "%s", s->name);
    snprintf(r->endpoint, sizeof r->endpoint, "%s", a->endpoint);
    snprintf(r->filter_tag, sizeof r->filter_tag, "%s", a->filter_tag);
    r->strategy = (int)a->strategy;
    r->format = (int)a->format;
    r->dlq_enabled = a->dlq.enabled;
    snprintf(r->dlq_target, sizeof r->dlq_target, "%s", a->dlq.target);
    r->create_s = s->create_s;
    r->modify_s = modify_s;
}

/* A dead-letter policy the request turns on must name an existing queue (§13.13). */
static int check_sub_dlq(struct smq_engine *e, struct smq_op *op, const struct smq_sub_attrs *a)
{
    if (!(op->sub.present & SMQ_SATTR_DLQ) || !a->dlq.enabled)
        return 0;
    if (queue_registry_find(&e->queues, a->dlq.target) == NULL)
        return errors_set(&op->result, SMQ_E_INVALID_ARGUMENT,
                          "The DeadLetterTargetQueue '%s' does not exist.", a->dlq.target);
    return 0;
}

/* Subscribe on an existing subscription (§13.6.1): 204 when the request
 * names the same attributes (its policy only when it names one), else 409. */
static int subscribe_existing(const struct smq_op *op, const struct smq_sub *s)
{
    const struct smq_sub_attrs *a = &op->sub.values, *b = &s->attrs;
    bool same = strcmp(a->endpoint, b->endpoint) == 0 && strcmp(a->filter_tag, b->filter_tag) == 0
                && a->strategy == b->strategy && a->format == b->format;

    if (same && (op->sub.present & SMQ_SATTR_DLQ))
        same = a->dlq.enabled == b->dlq.enabled
               && (!a->dlq.enabled || strcmp(a->dlq.target, b->dlq.target) == 0);
    return same ? 0 : SMQ_E_SUBSCRIPTION_ALREADY_EXIST;
}

/* A new subscription of t from the request, or an error code in *rc. */
static struct smq_sub *new_sub(struct smq_engine *e, struct smq_op *op, int64_t now_s, int *rc)
{
    struct smq_sub_attrs a = op->sub.values;
    struct notify_endpoint ep;
    char trimmed[SMQ_ENDPOINT_MAX + 1];
    struct smq_sub *s;

    /* The API validated it; the engine does not trust a caller to have. */
    *rc = notify_endpoint_parse_err(a.endpoint, strlen(a.endpoint), &ep, trimmed, &op->result);
    if (*rc != 0)
        return NULL;
    memcpy(a.endpoint, trimmed, sizeof a.endpoint);
    if (!a.dlq.enabled)
        a.dlq.target[0] = '\0';
    s = topic_sub_new(e->ids.next_sub_id, op->sub.name, &a, now_s, now_s);
    *rc = s != NULL ? 0 : SMQ_E_NOMEM;
    return s;
}

int run_sub_subscribe(struct smq_engine *e, struct smq_op *op, struct smq_topic *t)
{
    struct topic_model *m = &e->topics.model;
    struct smq_sub *s = topic_sub_find(t, op->sub.name);
    struct store_sub_rec rec;
    int64_t now_s = e->now_ms / 1000;
    int rc;

    op->sub.created = false;
    if (s != NULL)
        return subscribe_existing(op, s);
    if (e->space.full)
        return errors_set(&op->result, SMQ_E_STORAGE_FULL, "%s", space_refusal(&e->space));
    if ((rc = check_sub_dlq(e, op, &op->sub.values)) != 0)
        return rc;
    if (t->n_subs >= (size_t)e->topics.max_subs_per_topic)
        return errors_set(&op->result, SMQ_E_TOO_MANY_SUBSCRIPTIONS,
                          "The number of subscriptions of topic %s has reached the limit of %d.",
                          t->name, e->topics.max_subs_per_topic);
    if (topic_sub_reserve(m, t) != 0)
        return SMQ_E_NOMEM;
    if ((s = new_sub(e, op, now_s, &rc)) == NULL)
        return rc;
    s->topic = t;
    run_sub_rec(s, &s->attrs, now_s, &rec);
    rc = insert_sub_row(e, &rec);
    if (rc != 0) {
        free(s);                /* linked nowhere yet */
        return rc;
    }
    e->ids.next_sub_id++;
    topic_sub_insert(m, t, s);
    op->sub.created = true;
    return 0;
}

/* The attributes a SetSubscriptionAttributes leaves s with (§13.6.2):
 * Endpoint and NotifyContentFormat may be named only with their values. */
static int overlay_sub(struct smq_op *op, const struct smq_sub *s, struct smq_sub_attrs *a)
{
    const struct smq_op_sub *o = &op->sub;

    *a = s->attrs;
    if (((o->present & SMQ_SATTR_ENDPOINT) && strcmp(o->values.endpoint, a->endpoint) != 0)
        || ((o->present & SMQ_SATTR_FORMAT) && o->values.format != a->format))
        return errors_set(&op->result, SMQ_E_INVALID_ARGUMENT,
                          "Endpoint and NotifyContentFormat cannot be changed; unsubscribe and "
                          "subscribe again.");
    if (o->present & SMQ_SATTR_FILTER_TAG)
        memcpy(a->filter_tag, o->values.filter_tag, sizeof a->filter_tag);
    if (o->present & SMQ_SATTR_STRATEGY)
        a->strategy = o->values.strategy;
    if (o->present & SMQ_SATTR_DLQ) {
        a->dlq = o->values.dlq;
        if (!a->dlq.enabled)
            a->dlq.target[0] = '\0';
    }
    return 0;
}

int run_sub_set(struct smq_engine *e, struct smq_op *op, struct smq_topic *t)
{
    struct smq_sub *s = topic_sub_find(t, op->sub.name);
    struct smq_sub_attrs a;
    struct store_sub_rec rec;
    int64_t now_s = e->now_ms / 1000;
    int rc;

    if (s == NULL)
        return SMQ_E_SUBSCRIPTION_NOT_EXIST;
    if ((rc = overlay_sub(op, s, &a)) != 0 || (rc = check_sub_dlq(e, op, &a)) != 0)
        return rc;
    run_sub_rec(s, &a, now_s, &rec);
    rc = txn_write_begin(&e->txn);
    if (rc == 0)
        rc = store_sub_update(e->store, &rec);
    rc = txn_write_end(&e->txn, rc);
    if (rc == 0) {
        s->attrs = a;
        s->modify_s = now_s;
    }
    return rc;
}

int run_sub_get(struct smq_engine *e, struct smq_op *op, struct smq_topic *t)
{
    struct smq_sub *s = topic_sub_find(t, op->sub.name);

    (void)e;
    if (s == NULL)
        return SMQ_E_SUBSCRIPTION_NOT_EXIST;
    topic_sub_info(s, &op->sub.info);
    return 0;
}

int run_sub_unsubscribe(struct smq_engine *e, struct smq_op *op, struct smq_topic *t)
{
    struct smq_sub *s = topic_sub_find(t, op->sub.name);
    int rc;

    if (s == NULL)
        return 0;               /* §13.6.4 */
    rc = txn_write_begin(&e->txn);
    if (rc == 0)
        rc = store_sub_delete(e->store, s->id);
    /* A published message kept only for this subscription goes with it. */
    for (const struct topic_notif *n = s->all; rc == 0 && n != NULL; n = n->sub_next)
        if (n->msg->pending == 1)
            rc = store_tmsg_delete(e->store, n->msg->seq);
    rc = txn_write_end(&e->txn, rc);
    if (rc == 0)
        topic_sub_destroy(&e->topics.model, s, &e->topics.wheel);
    return rc;
}

static const char *sub_name_at(const void *set, size_t i)
{
    return ((const struct smq_topic *)set)->subs[i]->name;
}

static size_t sub_lower_bound_of(const void *set, const char *name)
{
    return topic_sub_lower_bound(set, name);
}

struct sub_page {
    const struct smq_topic *t;
    struct smq_op_slist *l;
};

static void take_sub(void *arg, size_t i)
{
    struct sub_page *pg = arg;

    topic_sub_info(pg->t->subs[i], &pg->l->subs[pg->l->n_subs++]);
}

int run_sub_list(struct smq_engine *e, struct smq_op *op, struct smq_topic *t)
{
    struct smq_op_slist *l = &op->slist;
    struct listing_set set = {t, t->n_subs, sub_name_at, sub_lower_bound_of};
    /* Subscriptions are listed under the topic's own grant (§13.14). */
    struct listing_page page = {l->prefix, l->marker, (size_t)l->ret_number, NULL,
                                l->next_marker, sizeof l->next_marker};
    struct sub_page pg = {t, l};

    (void)e;
    if ((l->subs = calloc(page.limit > 0 ? page.limit : 1, sizeof *l->subs)) == NULL)
        return SMQ_E_NOMEM;
    listing_walk(&set, &page, take_sub, &pg);
    return 0;
}
