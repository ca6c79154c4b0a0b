/*
 * topic.c — owns the in-memory model of topics (topic.h): the sorted
 * registries of topics and of each topic's subscriptions, the id and seq
 * tables, and the place of every pending notification.
 */
#include "topic.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "smqd/errors.h"

#define BUCKETS_MIN 64

static size_t hash_u64(uint64_t v, size_t n_buckets)
{
    v ^= v >> 33;
    v *= 0xff51afd7ed558ccdULL;
    v ^= v >> 33;
    return (size_t)v & (n_buckets - 1);
}

int topic_model_init(struct topic_model *m)
{
    memset(m, 0, sizeof *m);
    m->sub_buckets = calloc(BUCKETS_MIN, sizeof *m->sub_buckets);
    m->msg_buckets = calloc(BUCKETS_MIN, sizeof *m->msg_buckets);
    if (m->sub_buckets == NULL || m->msg_buckets == NULL) {
        free(m->sub_buckets);
        free(m->msg_buckets);
        return SMQ_E_NOMEM;
    }
    m->n_sub_buckets = m->n_msg_buckets = BUCKETS_MIN;
    return 0;
}

void topic_model_clear(struct topic_model *m, struct twheel *w)
{
    while (m->n_topics > 0)
        topic_destroy(m, m->topics[m->n_topics - 1], w);
    m->runnable_head = m->runnable_tail = m->blocked = NULL;
    m->n_runnable = m->n_runnable_push = 0;
}

void topic_model_free(struct topic_model *m)
{
    topic_model_clear(m, NULL);
    free(m->topics);
    free(m->sub_buckets);
    free(m->msg_buckets);
    memset(m, 0, sizeof *m);
}

/* ---- sorted arrays by name ---- */

static size_t lower_bound(void *const *items, size_t n, size_t name_offset, const char *name)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp((const char *)items[mid] + name_offset, name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int reserve(void ***items, size_t n, size_t *cap)
{
    void **grown;
    size_t want;

    if (n < *cap)
        return 0;
    want = *cap ? *cap * 2 : 16;
    if ((grown = realloc(*items, want * sizeof *grown)) == NULL)
        return SMQ_E_NOMEM;
    *items = grown;
    *cap = want;
    return 0;
}

static void insert_at(void **items, size_t *n, size_t at, void *item)
{
    memmove(items + at + 1, items + at, (*n - at) * sizeof *items);
    items[at] = item;
    (*n)++;
}

static void remove_item(void **items, size_t *n, void *item, size_t name_offset)
{
    size_t at = lower_bound(items, *n, name_offset, (const char *)item + name_offset);

    if (at < *n && items[at] == item) {
        memmove(items + at, items + at + 1, (*n - at - 1) * sizeof *items);
        (*n)--;
    }
}

/* ---- topics ---- */

size_t topic_lower_bound(const struct topic_model *m, const char *name)
{
    return lower_bound((void *const *)m->topics, m->n_topics, offsetof(struct smq_topic, name),
                       name);
}

struct smq_topic *topic_find(const struct topic_model *m, const char *name)
{
    size_t at = topic_lower_bound(m, name);

    return at < m->n_topics && strcmp(m->topics[at]->name, name) == 0 ? m->topics[at] : NULL;
}

int topic_reserve(struct topic_model *m)
{
    return reserve((void ***)&m->topics, m->n_topics, &m->cap_topics);
}

struct smq_topic *topic_new(int64_t id, const char *name, const struct smq_topic_attrs *a,
                            int64_t create_s, int64_t modify_s)
{
    struct smq_topic *t = calloc(1, sizeof *t);

    if (t == NULL)
        return NULL;
    t->id = id;
    snprintf(t->name, sizeof t->name, "%s", name);
    t->attrs = *a;
    t->create_s = create_s;
    t->modify_s = modify_s;
    return t;
}

void topic_insert(struct topic_model *m, struct smq_topic *t)
{
    insert_at((void **)m->topics, &m->n_topics, topic_lower_bound(m, t->name), t);
}

/* Frees every message of t still in the seq table (their notifications
 * went with t's subscriptions). */
static void forget_msgs(struct topic_model *m, struct smq_topic *t)
{
    for (size_t b = 0; b < m->n_msg_buckets && t->message_count > 0; b++) {
        struct topic_msg **at = &m->msg_buckets[b];
        while (*at != NULL) {
            struct topic_msg *msg = *at;
            if (msg->topic != t) {
                at = &msg->hash_next;
                continue;
            }
            *at = msg->hash_next;
            m->n_msgs--;
            t->message_count--;
            free(msg);
        }
    }
}

void topic_destroy(struct topic_model *m, struct smq_topic *t, struct twheel *w)
{
    while (t->n_subs > 0)
        topic_sub_destroy(m, t->subs[t->n_subs - 1], w);
    forget_msgs(m, t);
    remove_item((void **)m->topics, &m->n_topics, t, offsetof(struct smq_topic, name));
    free(t->subs);
    free(t);
}

struct smq_topic *topic_in_id_order(struct smq_topic *const *by_id, size_t n, int64_t id)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (by_id[mid]->id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && by_id[lo]->id == id ? by_id[lo] : NULL;
}

void topic_info(const struct smq_topic *t, struct smq_topic_info *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", t->name);
    out->attrs = t->attrs;
    out->create_s = t->create_s;
    out->modify_s = t->modify_s;
    out->message_count = t->message_count;
    out->subscriptions = t->n_subs;
    out->published = t->published;
}

/* ---- subscriptions ---- */

size_t topic_sub_lower_bound(const struct smq_topic *t, const char *name)
{
    return lower_bound((void *const *)t->subs, t->n_subs, offsetof(struct smq_sub, name), name);
}

struct smq_sub *topic_sub_find(const struct smq_topic *t, const char *name)
{
    size_t at = topic_sub_lower_bound(t, name);

    return at < t->n_subs && strcmp(t->subs[at]->name, name) == 0 ? t->subs[at] : NULL;
}

struct smq_sub *topic_sub_find_id(const struct topic_model *m, int64_t id)
{
    struct smq_sub *s = m->sub_buckets[hash_u64((uint64_t)id, m->n_sub_buckets)];

    while (s != NULL && s->id != id)
        s = s->id_next;
    return s;
}

/* Doubles the id table when it is fuller than one per bucket; on no memory
 * the chains get longer instead. */
static void grow_sub_table(struct topic_model *m)
{
    size_t n = m->n_sub_buckets * 2;
    struct smq_sub **b;

    if (m->n_subs_total < m->n_sub_buckets || (b = calloc(n, sizeof *b)) == NULL)
        return;
    for (size_t i = 0; i < m->n_sub_buckets; i++) {
        struct smq_sub *s = m->sub_buckets[i];
        while (s != NULL) {
            struct smq_sub *next = s->id_next;
            size_t h = hash_u64((uint64_t)s->id, n);
            s->id_next = b[h];
            b[h] = s;
            s = next;
        }
    }
    free(m->sub_buckets);
    m->sub_buckets = b;
    m->n_sub_buckets = n;
}

int topic_sub_reserve(struct topic_model *m, struct smq_topic *t)
{
    grow_sub_table(m);
    return reserve((void ***)&t->subs, t->n_subs, &t->cap_subs);
}

struct smq_sub *topic_sub_new(int64_t id, const char *name, const struct smq_sub_attrs *a,
                              int64_t create_s, int64_t modify_s)
{
    struct smq_sub *s = calloc(1, sizeof *s);
    char trimmed[SMQ_ENDPOINT_MAX + 1];

    if (s == NULL)
        return NULL;
    if (notify_endpoint_parse(a->endpoint, strlen(a->endpoint), &s->ep, trimmed) != 0) {
        free(s);
        return NULL;
    }
    s->id = id;
    snprintf(s->name, sizeof s->name, "%s", name);
    s->attrs = *a;
    s->create_s = create_s;
    s->modify_s = modify_s;
    s->flight_cap = TOPIC_FLIGHT_CAP;
    return s;
}

void topic_sub_insert(struct topic_model *m, struct smq_topic *t, struct smq_sub *s)
{
    size_t h = hash_u64((uint64_t)s->id, m->n_sub_buckets);

    s->topic = t;
    insert_at((void **)t->subs, &t->n_subs, topic_sub_lower_bound(t, s->name), s);
    s->id_next = m->sub_buckets[h];
    m->sub_buckets[h] = s;
    m->n_subs_total++;
}

/* The runnable list's two counts, as s joins or leaves it. */
static void count_runnable(struct topic_model *m, const struct smq_sub *s, bool joins)
{
    bool push = s->ep.kind != NOTIFY_EP_QUEUE;

    if (joins) {
        m->n_runnable++;
        m->n_runnable_push += push;
    } else {
        m->n_runnable--;
        m->n_runnable_push -= push;
    }
}

static void unrun(struct topic_model *m, struct smq_sub *s)
{
    struct smq_sub **at = &m->runnable_head, *prev = NULL;

    if (s->blocked) {
        for (at = &m->blocked; *at != NULL && *at != s; at = &(*at)->runnable_next)
            ;
        if (*at == s)
            *at = s->runnable_next;
        s->blocked = false;
        return;
    }
    if (!s->runnable)
        return;
    while (*at != NULL && *at != s) {
        prev = *at;
        at = &(*at)->runnable_next;
    }
    if (*at == s)
        *at = s->runnable_next;
    if (m->runnable_tail == s)
        m->runnable_tail = prev;
    s->runnable = false;
    count_runnable(m, s, false);
}

void topic_sub_destroy(struct topic_model *m, struct smq_sub *s, struct twheel *w)
{
    struct smq_sub **at = &m->sub_buckets[hash_u64((uint64_t)s->id, m->n_sub_buckets)];

    while (s->all != NULL) {
        struct topic_notif *n = s->all;
        if (n->state == TOPIC_NOTIF_WAITING && w != NULL)
            twheel_cancel(w, &n->timer);
        n->state = TOPIC_NOTIF_READY;    /* whole lists go: nothing to unlink from */
        s->ready_head = s->flight = NULL;
        topic_notif_destroy(m, n);
    }
    unrun(m, s);
    while (*at != NULL && *at != s)
        at = &(*at)->id_next;
    if (*at == s)
        *at = s->id_next;
    m->n_subs_total--;
    remove_item((void **)s->topic->subs, &s->topic->n_subs, s, offsetof(struct smq_sub, name));
    free(s);
}

void topic_sub_info(const struct smq_sub *s, struct smq_sub_info *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->topic, sizeof out->topic, "%s", s->topic->name);
    snprintf(out->name, sizeof out->name, "%s", s->name);
    out->attrs = s->attrs;
    out->create_s = s->create_s;
    out->modify_s = s->modify_s;
    out->pending = s->n_pending;
    out->retrying = s->n_retrying;
    out->delivered = s->count.delivered;
    out->failed = s->count.failed;
    out->dead = s->count.dead;
    out->rejected = s->count.rejected;
    out->push_latency_us_sum = s->count.push_latency_us_sum;
    out->push_latency_n = s->count.push_latency_n;
    memcpy(out->push_latency_buckets, s->count.push_latency_buckets,
           sizeof out->push_latency_buckets);
}

bool topic_sub_matches(const struct smq_sub *s, const char *tag)
{
    return s->attrs.filter_tag[0] == '\0' || strcmp(s->attrs.filter_tag, tag) == 0;
}

/* ---- published messages ---- */

struct topic_msg *topic_msg_find(const struct topic_model *m, uint64_t seq)
{
    struct topic_msg *msg = m->msg_buckets[hash_u64(seq, m->n_msg_buckets)];

    while (msg != NULL && msg->seq != seq)
        msg = msg->hash_next;
    return msg;
}

static void grow_msg_table(struct topic_model *m)
{
    size_t n = m->n_msg_buckets * 2;
    struct topic_msg **b;

    if (m->n_msgs < m->n_msg_buckets || (b = calloc(n, sizeof *b)) == NULL)
        return;
    for (size_t i = 0; i < m->n_msg_buckets; i++) {
        struct topic_msg *msg = m->msg_buckets[i];
        while (msg != NULL) {
            struct topic_msg *next = msg->hash_next;
            size_t h = hash_u64(msg->seq, n);
            msg->hash_next = b[h];
            b[h] = msg;
            msg = next;
        }
    }
    free(m->msg_buckets);
    m->msg_buckets = b;
    m->n_msg_buckets = n;
}

void topic_msg_insert(struct topic_model *m, struct smq_topic *t, struct topic_msg *msg)
{
    size_t h;

    grow_msg_table(m);
    h = hash_u64(msg->seq, m->n_msg_buckets);
    msg->topic = t;
    msg->hash_next = m->msg_buckets[h];
    m->msg_buckets[h] = msg;
    m->n_msgs++;
    t->message_count++;
}

static void msg_free(struct topic_model *m, struct topic_msg *msg)
{
    struct topic_msg **at = &m->msg_buckets[hash_u64(msg->seq, m->n_msg_buckets)];

    while (*at != NULL && *at != msg)
        at = &(*at)->hash_next;
    if (*at == msg)
        *at = msg->hash_next;
    m->n_msgs--;
    msg->topic->message_count--;
    free(msg);
}

/* ---- notifications ---- */

void topic_notif_link(struct topic_model *m, struct topic_notif *n, int64_t now_ms,
                      struct twheel *w, int64_t epoch_minus_mono_ms)
{
    struct smq_sub *s = n->sub;

    n->sub_prev = NULL;
    n->sub_next = s->all;
    if (s->all != NULL)
        s->all->sub_prev = n;
    s->all = n;
    s->n_pending++;
    if (n->attempts > 0)
        s->n_retrying++;
    n->msg->pending++;
    m->n_notifs++;
    twheel_node_init(&n->timer);
    if (n->due_ms <= now_ms) {
        topic_notif_make_ready(m, n);
        return;
    }
    n->state = TOPIC_NOTIF_WAITING;
    twheel_arm(w, &n->timer, (uint64_t)(n->due_ms - epoch_minus_mono_ms));
}

void topic_notif_unplace(struct topic_notif *n, struct twheel *w)
{
    struct smq_sub *s = n->sub;
    struct topic_notif **at;

    switch (n->state) {
    case TOPIC_NOTIF_WAITING:
        twheel_cancel(w, &n->timer);
        break;
    case TOPIC_NOTIF_READY:
        if (s->ready_head == n) {
            s->ready_head = n->next;
            if (s->ready_head == NULL)
                s->ready_tail = NULL;
        }
        break;
    case TOPIC_NOTIF_IN_FLIGHT:
        for (at = &s->flight; *at != NULL && *at != n; at = &(*at)->next)
            ;
        if (*at == n) {
            *at = n->next;
            s->n_flight--;
        }
        break;
    }
    n->next = NULL;
}

bool topic_notif_destroy(struct topic_model *m, struct topic_notif *n)
{
    struct smq_sub *s = n->sub;
    struct topic_msg *msg = n->msg;
    bool last;

    if (n->sub_prev != NULL)
        n->sub_prev->sub_next = n->sub_next;
    else
        s->all = n->sub_next;
    if (n->sub_next != NULL)
        n->sub_next->sub_prev = n->sub_prev;
    s->n_pending--;
    if (n->attempts > 0)
        s->n_retrying--;
    m->n_notifs--;
    last = --msg->pending == 0;
    if (last)
        msg_free(m, msg);
    free(n);
    return last;
}

void topic_notif_make_ready(struct topic_model *m, struct topic_notif *n)
{
    struct smq_sub *s = n->sub;

    n->state = TOPIC_NOTIF_READY;
    n->next = NULL;
    if (s->ready_tail != NULL)
        s->ready_tail->next = n;
    else
        s->ready_head = n;
    s->ready_tail = n;
    topic_mark_runnable(m, s);
}

void topic_notif_fly(struct topic_notif *n)
{
    n->state = TOPIC_NOTIF_IN_FLIGHT;
    n->next = n->sub->flight;
    n->sub->flight = n;
    n->sub->n_flight++;
}

struct topic_notif *topic_flight_find(const struct smq_sub *s, uint64_t seq, uint32_t attempt)
{
    struct topic_notif *n = s->flight;

    while (n != NULL && !(n->msg->seq == seq && n->attempts + 1 == attempt))
        n = n->next;
    return n;
}

/* ---- the runnable list ---- */

void topic_mark_runnable(struct topic_model *m, struct smq_sub *s)
{
    if (s->runnable || s->blocked)
        return;
    s->runnable = true;
    s->runnable_next = NULL;
    if (m->runnable_tail != NULL)
        m->runnable_tail->runnable_next = s;
    else
        m->runnable_head = s;
    m->runnable_tail = s;
    count_runnable(m, s, true);
}

struct smq_sub *topic_take_runnable(struct topic_model *m)
{
    struct smq_sub *s = m->runnable_head;

    if (s == NULL)
        return NULL;
    m->runnable_head = s->runnable_next;
    if (m->runnable_head == NULL)
        m->runnable_tail = NULL;
    s->runnable = false;
    s->runnable_next = NULL;
    count_runnable(m, s, false);
    return s;
}

void topic_requeue_front(struct topic_model *m, struct smq_sub *head, struct smq_sub *tail)
{
    if (head == NULL)
        return;
    for (struct smq_sub *s = head;; s = s->runnable_next) {
        s->runnable = true;
        count_runnable(m, s, true);
        if (s == tail)
            break;
    }
    tail->runnable_next = m->runnable_head;
    if (m->runnable_head == NULL)
        m->runnable_tail = tail;
    m->runnable_head = head;
}

void topic_block(struct topic_model *m, struct smq_sub *s)
{
    s->blocked = true;
    s->runnable_next = m->blocked;
    m->blocked = s;
}

void topic_unblock_all(struct topic_model *m)
{
    while (m->blocked != NULL) {
        struct smq_sub *s = m->blocked;
        m->blocked = s->runnable_next;
        s->blocked = false;
        topic_mark_runnable(m, s);
    }
}
