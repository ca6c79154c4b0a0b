/*
 * recover.c — owns rebuilding the engine's memory from the store: at
 * start-up and after a lost transaction.  Every stored row goes through the
 * same placement as live traffic (msgs_link), so Delayed stays delayed
 * until its time, Inactive stays inactive until its NextVisibleTime, and a
 * row past its retention never comes back.  Topics and their subscriptions
 * load after the queues.
 */
#include "recover.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fanout.h"
#include "msgs.h"
#include "smqd/log.h"
#include "smqd/strnum.h"

struct load_ctx {
    struct smq_engine *e;
    struct smq_queue *cur;           /* messages arrive ordered by queue id */
    size_t n_expired_rows;
    int rc;
};

static int load_queue(void *arg, const struct store_queue_rec *r)
{
    struct load_ctx *ctx = arg;
    struct smq_engine *e = ctx->e;
    struct smq_queue_attrs attrs = {r->delay_s, r->max_msg_size, r->retention_s,
                                    r->visibility_s, r->polling_wait_s, r->logging,
                                    {r->dlq_enabled, "", r->dlq_max_receive}};
    struct smq_queue *q;

    snprintf(attrs.dlq.target, sizeof attrs.dlq.target, "%s", r->dlq_target);

    if (queue_registry_reserve(&e->queues) != 0
        || (q = queue_new(r->id, r->name, &attrs, r->create_s, r->modify_s)) == NULL)
        return ctx->rc = SMQ_E_NOMEM;
    queue_registry_insert(&e->queues, q);
    if (r->id >= e->ids.next_queue_id)
        e->ids.next_queue_id = r->id + 1;
    return 0;
}

static int load_msg(void *arg, const struct store_msg_rec *r)
{
    struct load_ctx *ctx = arg;
    struct smq_engine *e = ctx->e;
    struct smq_msg *m;

    if (r->seq >= e->ids.next_seq)
        e->ids.next_seq = r->seq + 1;
    if (ctx->cur == NULL || ctx->cur->id != r->queue_id)
        ctx->cur = queue_registry_find_id(&e->queues, r->queue_id);
    if (ctx->cur == NULL || r->expire_ms <= e->now_ms) {
        /* Orphan or expired: never comes back; delete the row if we can. */
        msgs_forget_row(e, r->queue_id, r->seq);
        ctx->n_expired_rows++;
        return 0;
    }
    if ((m = calloc(1, sizeof *m)) == NULL)
        return ctx->rc = SMQ_E_NOMEM;
    m->seq = r->seq;
    m->priority = (uint8_t)r->priority;
    m->enqueue_ms = r->enqueue_ms;
    m->first_dequeue_ms = r->first_dequeue_ms;
    m->visible_ms = r->visible_ms;
    m->expire_ms = r->expire_ms;
    m->dequeue_count = r->dequeue_count;
    m->handle_gen = r->handle_gen;
    m->src_queue_id = r->src_queue_id > 0 && r->src_queue_id <= UINT32_MAX
                          ? (uint32_t)r->src_queue_id : 0;
    msgs_link(e, ctx->cur, m);
    return 0;
}

/* ---- topics and subscriptions ---- */

/* Topics as they load, in id order, for finding a subscription's topic. */
struct topic_load_ctx {
    struct smq_engine *e;
    struct smq_topic **by_id;
    size_t n, cap;
    int rc;
};

static int load_topic(void *arg, const struct store_topic_rec *r)
{
    struct topic_load_ctx *ctx = arg;
    struct smq_engine *e = ctx->e;
    struct smq_topic_attrs attrs = {r->max_msg_size, r->logging};
    struct smq_topic *t;

    if (ctx->n == ctx->cap) {
        size_t cap = ctx->cap > 0 ? ctx->cap * 2 : 64;
        struct smq_topic **grown = realloc(ctx->by_id, cap * sizeof *grown);
        if (grown == NULL)
            return ctx->rc = SMQ_E_NOMEM;
        ctx->by_id = grown;
        ctx->cap = cap;
    }
    if (topic_reserve(&e->topics.model) != 0
        || (t = topic_new(r->id, r->name, &attrs, r->create_s, r->modify_s)) == NULL)
        return ctx->rc = SMQ_E_NOMEM;
    topic_insert(&e->topics.model, t);
    ctx->by_id[ctx->n++] = t;
    if (r->id >= e->ids.next_topic_id)
        e->ids.next_topic_id = r->id + 1;
    return 0;
}

static void sub_attrs_of(const struct store_sub_rec *r, struct smq_sub_attrs *a)
{
    memset(a, 0, sizeof *a);
    snprintf(a->endpoint, sizeof a->endpoint, "%s", r->endpoint);
    snprintf(a->filter_tag, sizeof a->filter_tag, "%s", r->filter_tag);
    a->strategy = mns_notify_strategy_of(r->strategy);
    a->format = mns_notify_format_of(r->format);
    a->dlq.enabled = r->dlq_enabled;
    snprintf(a->dlq.target, sizeof a->dlq.target, "%s", r->dlq_target);
}

static int load_sub(void *arg, const struct store_sub_rec *r)
{
    struct topic_load_ctx *ctx = arg;
    struct smq_engine *e = ctx->e;
    struct smq_topic *t = topic_in_id_order(ctx->by_id, ctx->n, r->topic_id);
    struct smq_sub_attrs attrs;
    struct smq_sub *s;

    if (r->id >= e->ids.next_sub_id)
        e->ids.next_sub_id = r->id + 1;
    if (t == NULL)              /* a topic's delete takes its rows: cannot happen */
        return 0;
    sub_attrs_of(r, &attrs);
    if (topic_sub_reserve(&e->topics.model, t) != 0)
        return ctx->rc = SMQ_E_NOMEM;
    s = topic_sub_new(r->id, r->name, &attrs, r->create_s, r->modify_s);
    if (s == NULL) {
        /* Out of memory, or an endpoint this version no longer accepts:
         * keep serving the rest, and say which row is not. */
        SMQ_ERROR("recovery: subscription %s of topic %s not loaded (endpoint \"%s\")",
                  r->name, t->name, r->endpoint);
        return 0;
    }
    topic_sub_insert(&e->topics.model, t, s);
    return 0;
}

static int load_topics(struct smq_engine *e)
{
    struct topic_load_ctx ctx = {e, NULL, 0, 0, 0};
    int rc = store_topic_load(e->store, load_topic, &ctx);

    if (rc == 0)
        rc = ctx.rc;
    if (rc == 0)
        rc = store_sub_load(e->store, load_sub, &ctx);
    if (rc == 0)
        rc = ctx.rc;
    if (rc == 0)
        rc = fanout_load(e, ctx.by_id, ctx.n);
    free(ctx.by_id);
    return rc;
}

/* Reads a high-water mark from meta; *mark is left alone when absent. */
static int read_mark(struct smq_engine *e, const char *key, uint64_t *mark)
{
    struct smq_buf val;
    int found = 0, rc;

    buf_init(&val);
    rc = store_meta_get(e->store, key, &val, &found);
    if (rc == 0 && found && val.data != NULL) {
        uint64_t v = 0;
        /* Written by write_mark as decimal text; anything else is no mark. */
        if (strnum_u64(val.data, val.len, &v) == 0 && v > *mark)
            *mark = v;
    }
    buf_free(&val);
    return rc;
}

static int load_marks(struct smq_engine *e)
{
    struct engine_ids *ids = &e->ids;
    uint64_t queue_id = (uint64_t)ids->next_queue_id;
    uint64_t topic_id = (uint64_t)ids->next_topic_id, sub_id = (uint64_t)ids->next_sub_id;
    int rc = read_mark(e, META_NEXT_SEQ, &ids->next_seq);

    if (rc == 0)
        rc = read_mark(e, META_NEXT_QUEUE_ID, &queue_id);
    if (rc == 0)
        rc = read_mark(e, META_NEXT_TOPIC_ID, &topic_id);
    if (rc == 0)
        rc = read_mark(e, META_NEXT_SUB_ID, &sub_id);
    ids->next_queue_id = (int64_t)queue_id;
    ids->next_topic_id = (int64_t)topic_id;
    ids->next_sub_id = (int64_t)sub_id;
    ids->seq_reserved = ids->next_seq;      /* the next id forces a fresh reservation */
    ids->seq_reserve_pending = 0;
    return rc;
}

int recover_load(struct smq_engine *e)
{
    struct load_ctx ctx = {e, NULL, 0, 0};
    int rc;

    e->ids.next_seq = 1;
    e->ids.next_queue_id = 1;
    e->ids.next_topic_id = 1;
    e->ids.next_sub_id = 1;
    e->now_ms = engine_core_now_ms(e);
    rc = store_queue_load(e->store, load_queue, &ctx);
    if (rc == 0)
        rc = store_msg_load(e->store, load_msg, &ctx);
    if (rc == 0)
        rc = ctx.rc;
    if (rc == 0)
        rc = load_topics(e);
    if (rc == 0)
        rc = load_marks(e);
    if (ctx.n_expired_rows > EXPIRED_FLUSH_AT)
        SMQ_INFO("recovery: %zu expired messages will be removed lazily", ctx.n_expired_rows);
    return rc;
}

void recover_free(struct smq_engine *e)
{
    for (size_t b = 0; b < e->msgs.n_buckets; b++) {
        struct smq_msg *m = e->msgs.buckets[b];
        while (m != NULL) {
            struct smq_msg *next = m->hash_next;
            twheel_cancel(&e->msg_wheel, &m->timer);
            free(m);
            m = next;
        }
        e->msgs.buckets[b] = NULL;
    }
    e->msgs.count = 0;
    for (size_t i = 0; i < e->queues.n; i++)
        queue_free(e->queues.items[i]);
    e->queues.n = 0;
    e->waiters.ready_head = NULL;
    fanout_clear(e);
}

/* What a queue holds that is not on disk and must outlive a reload: its
 * lifetime counters (metrics) and a running redrive. */
struct queue_carry {
    int64_t id;
    struct queue_counters count;
    struct queue_redrive *redrive;
};

/* Takes the carried state out of every queue; NULL (nothing carried, the
 * counters restart) if there is no memory for the list. */
static struct queue_carry *carry_save(struct smq_engine *e, size_t *n)
{
    struct queue_carry *c = calloc(e->queues.n > 0 ? e->queues.n : 1, sizeof *c);

    *n = 0;
    if (c == NULL)
        return NULL;
    for (size_t i = 0; i < e->queues.n; i++) {
        struct smq_queue *q = e->queues.items[i];
        c[i] = (struct queue_carry){q->id, q->count, q->redrive};
        q->redrive = NULL;
    }
    *n = e->queues.n;
    return c;
}

/* Gives the carried state back to the queues that still exist (by id). */
static void carry_restore(struct smq_engine *e, struct queue_carry *c, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct smq_queue *q = e->broken ? NULL : queue_registry_find_id(&e->queues, c[i].id);
        if (q == NULL) {
            queue_redrive_free(c[i].redrive);
            continue;
        }
        q->count = c[i].count;
        q->redrive = c[i].redrive;
    }
    free(c);
}

/* Takes every parked poll off its queue, in FIFO order per queue, keeping
 * its deadline: a ->next list. */
static struct smq_op *detach_parked(struct smq_engine *e)
{
    struct smq_op *parked = NULL, **tail = &parked;

    for (size_t i = 0; i < e->queues.n; i++) {
        struct smq_queue *q = e->queues.items[i];
        while (q->waiters_head != NULL) {
            struct smq_op *op = q->waiters_head;
            uint64_t deadline = op->wait_timer.deadline_ms;
            waiters_unlink(&e->waiters, op);
            op->wait_timer.deadline_ms = deadline;
            op->next = NULL;
            *tail = op;
            tail = &op->next;
        }
    }
    return parked;
}

/* Parks the detached polls again on the queues that still exist; the others
 * are finished with QueueNotExist, or all of them with InternalError when
 * the state could not be reloaded (it may be partial). */
static void reattach_parked(struct smq_engine *e, struct smq_op *parked)
{
    while (parked != NULL) {
        struct smq_op *op = parked;
        struct smq_queue *q = e->broken ? NULL : queue_registry_find(&e->queues, op->queue);
        parked = op->next;
        if (q == NULL) {
            txn_complete(&e->txn, op, e->broken ? SMQ_E_INTERNAL : SMQ_E_QUEUE_NOT_EXIST);
            continue;
        }
        waiters_park(&e->waiters, q, op, op->wait_timer.deadline_ms);
        /* Messages were placed before their waiters came back: serve them
         * on the next run (engine_next_timeout_ms reports 0 until then). */
        waiters_mark_ready(&e->waiters, q);
    }
}

/* After a lost transaction memory may be ahead of disk: rebuild it from the
 * store, keeping parked long polls on the queues that still exist.  While
 * broken every run retries; a retry is not another lost transaction, so it
 * is neither counted nor logged unless it succeeds. */
void recover_reload(struct smq_engine *e)
{
    struct smq_op *parked = detach_parked(e);
    bool retry = e->broken;
    struct queue_carry *carry;
    size_t n_carry;

    carry = carry_save(e, &n_carry);
    recover_free(e);
    e->expired.n = 0;
    e->broken = recover_load(e) != 0;
    if (!retry)
        e->reloads++;
    carry_restore(e, carry, n_carry);
    reattach_parked(e, parked);
    if (e->broken) {
        recover_free(e);
        if (!retry)
            SMQ_ERROR("engine: the store could not be read back after a lost transaction; "
                      "refusing every operation until it can");
        return;
    }
    if (retry)
        SMQ_WARN("engine: the store can be read again; state reloaded, operations accepted");
    else
        SMQ_ERROR("engine: a transaction was lost; state reloaded from the store");
}

int recover_keys(struct smq_engine *e)
{
    struct smq_buf val;
    int found = 0;
    int rc;

    buf_init(&val);
    rc = store_meta_get(e->store, META_KEYS, &val, &found);
    if (rc == 0 && found && val.len == sizeof e->keys) {
        memcpy(&e->keys, val.data, sizeof e->keys);
    } else if (rc == 0) {
        rc = handle_keys_generate(&e->keys);
        if (rc == 0 && store_begin(e->store) != 0)
            rc = SMQ_E_INTERNAL;
        if (rc == 0) {
            rc = store_meta_set(e->store, META_KEYS, &e->keys, sizeof e->keys);
            rc = rc == 0 ? store_commit(e->store) : rc;
            if (rc != 0)
                store_rollback(e->store);
        }
    }
    buf_free(&val);
    return rc;
}

