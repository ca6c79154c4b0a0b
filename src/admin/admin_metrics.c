/*
 * admin_metrics.c — owns the names, types and help texts of smqd's own
 * Prometheus metrics and their text rendering (admin_metrics.h).
 *
 * Families are written whole (HELP, TYPE, then every sample), because the
 * text format requires a family's samples to be contiguous; so per-queue
 * families loop over the queues once per family.  Counters count since
 * the process started (the engine keeps no history), which is exactly what
 * Prometheus' rate() expects from a counter that resets on restart.
 */
#include "admin_metrics.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

void admin_metrics_label(struct smq_buf *out, const char *s)
{
    for (; *s != '\0'; s++) {
        if (*s == '\\')
            buf_puts(out, "\\\\");
        else if (*s == '"')
            buf_puts(out, "\\\"");
        else if (*s == '\n')
            buf_puts(out, "\\n");
        else
            buf_append(out, s, 1);
    }
}

static void family(struct smq_buf *out, const char *name, const char *type, const char *help)
{
    buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void sample_u64(struct smq_buf *out, const char *name, uint64_t v)
{
    buf_printf(out, "%s %" PRIu64 "\n", name, v);
}

/* name{label="V"[,extra]} v */
static void labelled_sample(struct smq_buf *out, const char *name, const char *label,
                            const char *v, const char *extra, const char *value)
{
    buf_printf(out, "%s{%s=\"", name, label);
    admin_metrics_label(out, v);
    buf_printf(out, "\"%s} %s\n", extra != NULL ? extra : "", value);
}

/* name{queue="Q"[,extra]} v */
static void queue_sample(struct smq_buf *out, const char *name, const char *queue,
                         const char *extra, const char *value)
{
    labelled_sample(out, name, "queue", queue, extra, value);
}

static void gauge_u64(struct smq_buf *out, const char *name, const char *help, uint64_t v)
{
    family(out, name, "gauge", help);
    sample_u64(out, name, v);
}

static void counter_u64(struct smq_buf *out, const char *name, const char *help, uint64_t v)
{
    family(out, name, "counter", help);
    sample_u64(out, name, v);
}

static void render_process(const struct admin_metrics_input *in, struct smq_buf *out)
{
    family(out, "smqd_build_info", "gauge", "Always 1; the version is a label.");
    buf_puts(out, "smqd_build_info{version=\"");
    admin_metrics_label(out, in->version);
    buf_puts(out, "\"} 1\n");
    family(out, "smqd_start_time_seconds", "gauge", "When the process started, Unix time.");
    buf_printf(out, "smqd_start_time_seconds %" PRId64 ".%03" PRId64 "\n",
               in->start_time_ms / 1000, in->start_time_ms % 1000);
    gauge_u64(out, "smqd_ready", "1 when /ready answers 200 (recovered, serving, not draining).",
              in->ready ? 1 : 0);
    counter_u64(out, "smqd_admin_denied_total", "Admin requests refused with 403 because the "
                "read-only token may not make them.", in->admin_denied);
    gauge_u64(out, "smqd_engine_up", "1 when the engine answered the statistics request "
              "of this scrape; 0 while starting, stopping or broken.", in->stats != NULL);
}

/* The three state samples of smqd_queue_messages for every queue. */
static void render_messages(const struct smq_op *op, struct smq_buf *out)
{
    static const char *const states[] = {"active", "inactive", "delayed"};
    char extra[32], value[24];

    family(out, "smqd_queue_messages", "gauge", "Messages in a queue by state.");
    for (size_t i = 0; i < op->stats.n_queues; i++) {
        const struct smq_queue_info *q = &op->stats.queues[i].info;
        const uint64_t n[] = {q->n_active, q->n_inactive, q->n_delayed};
        for (size_t s = 0; s < 3; s++) {
            snprintf(extra, sizeof extra, ",state=\"%s\"", states[s]);
            snprintf(value, sizeof value, "%" PRIu64, n[s]);
            queue_sample(out, "smqd_queue_messages", q->name, extra, value);
        }
    }
}

static void render_ages(const struct smq_op *op, int64_t now_ms, struct smq_buf *out)
{
    char value[32];

    family(out, "smqd_queue_oldest_message_age_seconds", "gauge",
           "Age of the oldest message in a queue (any state); 0 when empty.");
    for (size_t i = 0; i < op->stats.n_queues; i++) {
        int64_t enq = op->stats.queues[i].oldest_enqueue_ms;
        int64_t age = enq > 0 && now_ms > enq ? now_ms - enq : 0;
        snprintf(value, sizeof value, "%" PRId64 ".%03" PRId64, age / 1000, age % 1000);
        queue_sample(out, "smqd_queue_oldest_message_age_seconds", op->stats.queues[i].info.name,
                     NULL, value);
    }
}

/* One per-queue family whose value is a uint64_t field of smq_queue_stats. */
struct queue_family {
    const char *name, *type, *help;
    size_t field;
};

static const struct queue_family queue_families[] = {
    {"smqd_queue_long_poll_waiters", "gauge", "Receive requests parked on a queue.",
     offsetof(struct smq_queue_stats, waiters)},
    {"smqd_messages_sent_total", "counter", "Messages sent to a queue.",
     offsetof(struct smq_queue_stats, sent)},
    {"smqd_messages_received_total", "counter", "Messages handed out by receives.",
     offsetof(struct smq_queue_stats, received)},
    {"smqd_messages_deleted_total", "counter", "Messages deleted by consumers.",
     offsetof(struct smq_queue_stats, deleted)},
    {"smqd_messages_expired_total", "counter", "Messages dropped at the end of their retention.",
     offsetof(struct smq_queue_stats, expired)},
    {"smqd_messages_dead_lettered_total", "counter",
     "Messages moved from a queue to its dead-letter queue.",
     offsetof(struct smq_queue_stats, dead_lettered)},
    {"smqd_messages_redriven_total", "counter",
     "Messages moved from a dead-letter queue back to their source.",
     offsetof(struct smq_queue_stats, redriven)},
    {"smqd_queue_redrive_pending", "gauge", "Messages still to move in a running redrive.",
     offsetof(struct smq_queue_stats, redrive_pending)},
};

static void render_queue_family(const struct queue_family *f, const struct smq_op *op,
                                struct smq_buf *out)
{
    char value[24];

    family(out, f->name, f->type, f->help);
    for (size_t i = 0; i < op->stats.n_queues; i++) {
        const uint64_t *v = (const void *)((const char *)&op->stats.queues[i] + f->field);
        snprintf(value, sizeof value, "%" PRIu64, *v);
        queue_sample(out, f->name, op->stats.queues[i].info.name, NULL, value);
    }
}

/* One per-topic family whose value is a uint64_t field of smq_topic_stats.
 * Per topic, not per subscription: a topic may have 100,000 subscriptions
 * and a smqd a million in all, too many series for a scrape. */
struct topic_family {
    const char *name, *type, *help;
    size_t field;
};

static const struct topic_family topic_families[] = {
    {"smqd_topic_messages_published_total", "counter", "Messages published to a topic.",
     offsetof(struct smq_topic_stats, published)},
    {"smqd_topic_notifications_delivered_total", "counter",
     "Notifications of a topic delivered, over its subscriptions.",
     offsetof(struct smq_topic_stats, delivered)},
    {"smqd_topic_notification_failures_total", "counter",
     "Delivery attempts of a topic's notifications that failed (each retried or given up).",
     offsetof(struct smq_topic_stats, failed)},
    {"smqd_topic_notifications_given_up_total", "counter",
     "Notifications of a topic given up: moved to their subscription's dead-letter queue, "
     "or dropped.", offsetof(struct smq_topic_stats, dead)},
    {"smqd_topic_notifications_pending", "gauge",
     "Notifications of a topic not yet delivered or given up.",
     offsetof(struct smq_topic_stats, pending)},
    {"smqd_topic_notifications_retrying", "gauge",
     "Pending notifications of a topic with a failed attempt, waiting for the next.",
     offsetof(struct smq_topic_stats, retrying)},
    {"smqd_topic_http_backlog", "gauge",
     "Pending notifications of a topic's HTTP subscriptions.",
     offsetof(struct smq_topic_stats, http_pending)},
    {"smqd_topic_messages", "gauge",
     "Published messages of a topic kept for their pending notifications.",
     offsetof(struct smq_topic_stats, messages)},
    {"smqd_topic_push_rejected_total", "counter",
     "HTTP push attempts of a topic's notifications answered 403 (the endpoint did not accept "
     "the signature), also counted as failures.", offsetof(struct smq_topic_stats, rejected)},
};

/* The latency of a topic's HTTP push attempts (docs/protocol.md §13.10),
 * over its subscriptions: a Prometheus histogram in seconds. */
static void render_push_latency(const struct smq_op *op, struct smq_buf *out)
{
    static const char name[] = "smqd_topic_push_latency_seconds";

    family(out, name, "histogram",
           "Time from the start of a topic's HTTP push attempt to its outcome.");
    for (size_t i = 0; i < op->stats.n_topics; i++) {
        const struct smq_topic_stats *t = &op->stats.topics[i];
        uint64_t cumulative = 0;
        char extra[48], value[32];
        for (size_t b = 0; b <= SMQ_PUSH_LATENCY_BUCKETS; b++) {
            cumulative += t->push_latency_buckets[b];
            if (b < SMQ_PUSH_LATENCY_BUCKETS)
                snprintf(extra, sizeof extra, ",le=\"%g\"",
                         (double)smq_push_latency_bound_us(b) / 1e6);
            else
                snprintf(extra, sizeof extra, ",le=\"+Inf\"");
            snprintf(value, sizeof value, "%" PRIu64, cumulative);
            labelled_sample(out, "smqd_topic_push_latency_seconds_bucket", "topic", t->name,
                            extra, value);
        }
        snprintf(value, sizeof value, "%.6f", (double)t->push_latency_us_sum / 1e6);
        labelled_sample(out, "smqd_topic_push_latency_seconds_sum", "topic", t->name, NULL,
                        value);
        snprintf(value, sizeof value, "%" PRIu64, t->push_latency_n);
        labelled_sample(out, "smqd_topic_push_latency_seconds_count", "topic", t->name, NULL,
                        value);
    }
}

static void render_topic_family(const struct topic_family *f, const struct smq_op *op,
                                struct smq_buf *out)
{
    char value[24];

    family(out, f->name, f->type, f->help);
    for (size_t i = 0; i < op->stats.n_topics; i++) {
        const uint64_t *v = (const void *)((const char *)&op->stats.topics[i] + f->field);
        snprintf(value, sizeof value, "%" PRIu64, *v);
        labelled_sample(out, f->name, "topic", op->stats.topics[i].name, NULL, value);
    }
}

static void render_engine(const struct smq_engine_stats *t, struct smq_buf *out)
{
    gauge_u64(out, "smqd_queues", "Queues that exist.", t->queues);
    gauge_u64(out, "smqd_topics", "Topics that exist.", t->topics);
    gauge_u64(out, "smqd_subscriptions", "Subscriptions that exist, of every topic.",
              t->subscriptions);
    counter_u64(out, "smqd_topic_notifications_dropped_total",
                "Notifications given up with no dead-letter queue to take them, of every topic.",
                t->notifications_dropped);
    gauge_u64(out, "smqd_long_poll_waiters", "Receive requests parked on any queue.", t->waiters);
    gauge_u64(out, "smqd_storage_full", "1 while sends are refused because the disk filled up.",
              t->storage_full ? 1 : 0);
    gauge_u64(out, "smqd_storage_reserve_spent",
              "1 while the disk is full and its released reserve is spent (or there was none): "
              "receives and deletes may fail too.", t->storage_reserve_spent ? 1 : 0);
    counter_u64(out, "smqd_engine_reloads_total",
                "State reloads from the database after a lost transaction.", t->reloads);
    counter_u64(out, "smqd_dlq_move_failures_total",
                "Dead-letter moves skipped because the target queue did not exist.",
                t->dlq_move_failures);
    gauge_u64(out, "smqd_db_free_bytes", "Free pages inside the database file, in bytes.",
              t->free_pages * t->page_size);
    counter_u64(out, "smqd_db_vacuumed_bytes_total",
                "Bytes of free pages returned to the file system.",
                t->vacuumed_pages * t->page_size);
}

static void render_files(const struct admin_metrics_input *in, struct smq_buf *out)
{
    if (in->db_bytes >= 0)
        gauge_u64(out, "smqd_db_bytes", "Size of the database file.", (uint64_t)in->db_bytes);
    if (in->wal_bytes >= 0)
        gauge_u64(out, "smqd_wal_bytes", "Size of the write-ahead log (PATH-wal).",
                  (uint64_t)in->wal_bytes);
}

void admin_metrics_render(const struct admin_metrics_input *in, struct smq_buf *out)
{
    const struct smq_op *op = in->stats;

    render_process(in, out);
    render_files(in, out);
    if (op == NULL)
        return;
    render_engine(&op->stats.totals, out);
    render_messages(op, out);
    render_ages(op, in->now_ms, out);
    for (size_t i = 0; i < sizeof queue_families / sizeof queue_families[0]; i++)
        render_queue_family(&queue_families[i], op, out);
    for (size_t i = 0; i < sizeof topic_families / sizeof topic_families[0]; i++)
        render_topic_family(&topic_families[i], op, out);
    render_push_latency(op, out);
}
