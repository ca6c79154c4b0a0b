/*
 * admin_json.c — owns the JSON documents of a queue, a topic and a
 * subscription that the admin API answers with (admin_api.h,
 * docs/admin-api.md), apart from the routing and checks in admin_api.c.
 */
#include "smqd/admin_api.h"

#include <stdio.h>

#include "smqd/json.h"

static void attrs_json(struct smq_buf *b, const struct smq_queue_attrs *a)
{
    buf_printf(b, "{\"DelaySeconds\":%lld,\"MaximumMessageSize\":%lld,"
               "\"MessageRetentionPeriod\":%lld,\"VisibilityTimeout\":%lld,"
               "\"PollingWaitSeconds\":%lld,\"LoggingEnabled\":%s,\"DlqEnabled\":%s,"
               "\"DlqTargetQueue\":",
               (long long)a->delay_s, (long long)a->max_msg_size, (long long)a->retention_s,
               (long long)a->visibility_s, (long long)a->polling_wait_s,
               a->logging ? "true" : "false", a->dlq.enabled ? "true" : "false");
    json_cstr(b, a->dlq.enabled ? a->dlq.target : "");
    buf_printf(b, ",\"DlqMaxReceiveCount\":%lld}",
               (long long)(a->dlq.enabled ? a->dlq.max_receive : 0));
}

void admin_api_queue_json(struct smq_buf *b, const struct smq_queue_stats *st, int64_t now_ms)
{
    const struct smq_queue_info *i = &st->info;
    int64_t age_ms = st->oldest_enqueue_ms > 0 ? now_ms - st->oldest_enqueue_ms : 0;

    buf_puts(b, "{\"name\":");
    json_cstr(b, i->name);
    buf_printf(b, ",\"active\":%llu,\"inactive\":%llu,\"delayed\":%llu,\"waiters\":%llu,"
               "\"oldest_age_s\":",
               (unsigned long long)i->n_active, (unsigned long long)i->n_inactive,
               (unsigned long long)i->n_delayed, (unsigned long long)st->waiters);
    json_seconds(b, age_ms > 0 ? age_ms : 0);   /* clocks differ by a few ms */
    buf_printf(b, ",\"create_time\":%lld,\"modify_time\":%lld,\"attributes\":",
               (long long)i->create_s, (long long)i->modify_s);
    attrs_json(b, &i->attrs);
    buf_printf(b, ",\"counters\":{\"sent\":%llu,\"received\":%llu,\"deleted\":%llu,"
               "\"expired\":%llu,\"dead_lettered\":%llu,\"redriven\":%llu},"
               "\"redrive_pending\":%llu}",
               (unsigned long long)st->sent, (unsigned long long)st->received,
               (unsigned long long)st->deleted, (unsigned long long)st->expired,
               (unsigned long long)st->dead_lettered, (unsigned long long)st->redriven,
               (unsigned long long)st->redrive_pending);
}

void admin_api_topic_json(struct smq_buf *b, const struct smq_topic_info *t)
{
    buf_puts(b, "{\"name\":");
    json_cstr(b, t->name);
    buf_printf(b, ",\"create_time\":%lld,\"modify_time\":%lld,\"subscriptions\":%llu,"
               "\"message_count\":%llu,\"published\":%llu,"
               "\"attributes\":{\"MaximumMessageSize\":%lld,\"LoggingEnabled\":%s}}",
               (long long)t->create_s, (long long)t->modify_s,
               (unsigned long long)t->subscriptions, (unsigned long long)t->message_count,
               (unsigned long long)t->published,
               (long long)t->attrs.max_msg_size, t->attrs.logging ? "true" : "false");
}

/* A subscription's HTTP push latencies (docs/admin-api.md): count, sum and
 * the cumulative count at each bucket bound, as /metrics' histogram has
 * them per topic. */
static void push_latency_json(struct smq_buf *b, const struct smq_sub_info *s)
{
    uint64_t cumulative = 0;

    buf_printf(b, "\"push_latency\":{\"count\":%llu,\"sum_seconds\":%.6f,\"buckets\":[",
               (unsigned long long)s->push_latency_n, (double)s->push_latency_us_sum / 1e6);
    for (size_t i = 0; i < SMQ_PUSH_LATENCY_BUCKETS; i++) {
        cumulative += s->push_latency_buckets[i];
        buf_printf(b, "%s{\"le_seconds\":%g,\"count\":%llu}", i ? "," : "",
                   (double)smq_push_latency_bound_us(i) / 1e6, (unsigned long long)cumulative);
    }
    buf_puts(b, "]}");
}

void admin_api_sub_json(struct smq_buf *b, const struct smq_sub_info *s)
{
    const struct smq_sub_attrs *a = &s->attrs;

    buf_puts(b, "{\"name\":");
    json_cstr(b, s->name);
    buf_puts(b, ",\"topic\":");
    json_cstr(b, s->topic);
    buf_printf(b, ",\"create_time\":%lld,\"modify_time\":%lld,\"pending\":%llu,"
               "\"retrying\":%llu,\"counters\":{\"delivered\":%llu,\"failed\":%llu,"
               "\"dead\":%llu,\"rejected\":%llu},",
               (long long)s->create_s, (long long)s->modify_s, (unsigned long long)s->pending,
               (unsigned long long)s->retrying, (unsigned long long)s->delivered,
               (unsigned long long)s->failed, (unsigned long long)s->dead,
               (unsigned long long)s->rejected);
    push_latency_json(b, s);
    buf_puts(b, ",\"attributes\":{\"Endpoint\":");
    json_cstr(b, a->endpoint);
    buf_puts(b, ",\"FilterTag\":");
    json_cstr(b, a->filter_tag);
    buf_puts(b, ",\"NotifyStrategy\":");
    json_cstr(b, mns_notify_strategy_name(a->strategy));
    buf_puts(b, ",\"NotifyContentFormat\":");
    json_cstr(b, mns_notify_format_name(a->format));
    buf_printf(b, ",\"DlqEnabled\":%s,\"DlqTargetQueue\":", a->dlq.enabled ? "true" : "false");
    json_cstr(b, a->dlq.enabled ? a->dlq.target : "");
    buf_puts(b, "}}");
}
