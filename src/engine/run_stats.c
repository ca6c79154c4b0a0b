/*
 * run_stats.c — owns the engine side of statistics (run_stats.h): the
 * per-queue and per-topic figures of a STATS op and the engine-wide totals.
 */
#include "run_stats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void queue_stats(const struct smq_queue *q, struct smq_queue_stats *out)
{
    const struct smq_msg *oldest = queue_oldest_msg(q);

    memset(out, 0, sizeof *out);
    queue_info(q, &out->info);
    out->waiters = q->n_waiters;
    out->sent = q->count.sent;
    out->received = q->count.received;
    out->deleted = q->count.deleted;
    out->expired = q->count.expired;
    out->dead_lettered = q->count.dead_lettered;
    out->redriven = q->count.redriven;
    out->redrive_pending = queue_redrive_pending(q);
    out->oldest_enqueue_ms = oldest != NULL ? oldest->enqueue_ms : 0;
}

/* A topic's figures, its subscriptions' summed: O(its subscriptions). */
static void topic_stats(const struct smq_topic *t, struct smq_topic_stats *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", t->name);
    out->published = t->published;
    out->messages = t->message_count;
    for (size_t i = 0; i < t->n_subs; i++) {
        const struct smq_sub *s = t->subs[i];
        out->delivered += s->count.delivered;
        out->failed += s->count.failed;
        out->dead += s->count.dead;
        out->pending += s->n_pending;
        out->retrying += s->n_retrying;
        if (s->ep.kind == NOTIFY_EP_HTTP)
            out->http_pending += s->n_pending;
        out->rejected += s->count.rejected;
        out->push_latency_us_sum += s->count.push_latency_us_sum;
        out->push_latency_n += s->count.push_latency_n;
        for (size_t b = 0; b <= SMQ_PUSH_LATENCY_BUCKETS; b++)
            out->push_latency_buckets[b] += s->count.push_latency_buckets[b];
    }
}

/* Every topic, for a scrape (st->topics is freed with the op). */
static int topics_stats(const struct topic_model *m, struct smq_op_stats *st)
{
    st->topics = calloc(m->n_topics > 0 ? m->n_topics : 1, sizeof *st->topics);
    if (st->topics == NULL)
        return SMQ_E_NOMEM;
    for (size_t i = 0; i < m->n_topics; i++)
        topic_stats(m->topics[i], &st->topics[i]);
    st->n_topics = m->n_topics;
    return 0;
}

void run_stats_totals(const struct smq_engine *e, struct smq_engine_stats *out)
{
    out->queues = e->queues.n;
    out->messages = e->msgs.count;
    out->waiters = e->waiters.n;
    out->topics = e->topics.model.n_topics;
    out->subscriptions = e->topics.model.n_subs_total;
    out->reloads = e->reloads;
    out->storage_full = e->space.full;
    out->storage_reserve_spent = e->space.reserve_spent;
    out->broken = e->broken;
    out->dlq_move_failures = e->dlq_move_failures;
    out->db_pages = e->space.db_pages;
    out->free_pages = e->space.free_pages;
    out->page_size = e->space.page_size;
    out->vacuumed_pages = e->space.vacuumed_pages;
    out->notifications_dropped = e->topics.dropped;
}

int run_stats(struct smq_engine *e, struct smq_op *op)
{
    struct smq_op_stats *st = &op->stats;
    size_t n = 0;

    if (st->totals_only) {               /* O(1): the engine answers, that is all */
        run_stats_totals(e, &st->totals);
        return 0;
    }
    space_refresh(&e->space);
    run_stats_totals(e, &st->totals);
    st->queues = calloc(e->queues.n > 0 ? e->queues.n : 1, sizeof *st->queues);
    if (st->queues == NULL)
        return SMQ_E_NOMEM;
    for (size_t i = 0; i < e->queues.n; i++) {
        const struct smq_queue *q = e->queues.items[i];
        if (op->queue[0] != '\0' && strcmp(op->queue, q->name) != 0)
            continue;
        queue_stats(q, &st->queues[n++]);
    }
    st->n_queues = n;
    if (op->queue[0] != '\0')               /* one queue's figures: no topics */
        return n == 0 ? SMQ_E_QUEUE_NOT_EXIST : 0;
    /* A pass over every subscription: only /metrics asks for it. */
    return st->with_topics ? topics_stats(&e->topics.model, st) : 0;
}
