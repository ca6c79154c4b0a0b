/*
 * ctl_print.c — owns smqctl's human-readable output (ctl_print.h).
 */
#include "ctl_print.h"

#include <stdint.h>
#include <string.h>
#include <time.h>

#include "smqd/errors.h"

void ctl_print_safe(FILE *out, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        /* Other bytes >= 0x80 pass (UTF-8 text); C0 controls, DEL and the
         * C1 controls U+0080..U+009F (UTF-8 C2 80..C2 9F, which some
         * terminals obey as CSI/OSC) are escaped. */
        if (c == 0xC2 && i + 1 < len && (unsigned char)s[i + 1] >= 0x80
            && (unsigned char)s[i + 1] <= 0x9F) {
            fprintf(out, "\\u%04x", (unsigned char)s[++i]);
            continue;
        }
        if (c == '\n')
            fputs("\\n", out);
        else if (c == '\t')
            fputs("\\t", out);
        else if (c < 0x20 || c == 0x7F)
            fprintf(out, "\\x%02x", c);
        else
            fputc(c, out);
    }
}

static void print_text(FILE *out, const char *s)
{
    ctl_print_safe(out, s, strlen(s));
}

/* A short field for a table or a header line: at most size - 1 bytes, every
 * byte that is not printable ASCII shown as '?' (columns stay aligned, and
 * nothing reaches the terminal raw). */
static const char *field(const char *s, char *buf, size_t size)
{
    size_t n = 0;

    for (; s[n] != '\0' && n + 1 < size; n++)
        buf[n] = (unsigned char)s[n] >= 0x20 && (unsigned char)s[n] < 0x7F ? s[n] : '?';
    buf[n] = '\0';
    return buf;
}

static const char *dlq_of(const struct cj_value *q)
{
    const struct cj_value *attrs = cj_get(q, "attributes");
    const struct cj_value *enabled = cj_get(attrs, "DlqEnabled");

    if (enabled == NULL || enabled->type != CJ_BOOL || !enabled->boolean)
        return "-";
    return cj_text(attrs, "DlqTargetQueue", "-");
}

int ctl_print_queue_table(FILE *out, const struct cj_value *doc)
{
    const struct cj_value *queues = cj_get(doc, "queues");

    if (queues == NULL || queues->type != CJ_ARRAY)
        return SMQ_E_INVALID_ARGUMENT;
    fprintf(out, "%-32s %10s %10s %10s %8s %12s  %s\n", "NAME", "ACTIVE", "INACTIVE",
            "DELAYED", "WAITERS", "OLDEST_S", "DLQ");
    for (size_t i = 0; i < queues->n; i++) {
        const struct cj_value *q = &queues->items[i];
        /* Names are [A-Za-z0-9-] (the server checks), but print them safely anyway. */
        char f[6][128];
        fprintf(out, "%-32s %10s %10s %10s %8s %12s  ",
                field(cj_text(q, "name", "?"), f[0], sizeof f[0]),
                field(cj_text(q, "active", "?"), f[1], sizeof f[1]),
                field(cj_text(q, "inactive", "?"), f[2], sizeof f[2]),
                field(cj_text(q, "delayed", "?"), f[3], sizeof f[3]),
                field(cj_text(q, "waiters", "?"), f[4], sizeof f[4]),
                field(cj_text(q, "oldest_age_s", "?"), f[5], sizeof f[5]));
        print_text(out, dlq_of(q));
        fputc('\n', out);
    }
    return 0;
}

/* A Unix time member as 2026-12-07T18:07:28Z, or its text as sent when it
 * is not a plausible time. */
static const char *utc_time(const struct cj_value *obj, const char *key, char *buf, size_t size)
{
    uint64_t s;
    time_t t;
    struct tm tm;

    if (!cj_u64(obj, key, &s) || s > 253402300799ull)     /* 9999-12-31T23:59:59Z */
        return field(cj_text(obj, key, "?"), buf, size);
    t = (time_t)s;
    if (gmtime_r(&t, &tm) == NULL || strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        return field(cj_text(obj, key, "?"), buf, size);
    return buf;
}

int ctl_print_topic_table(FILE *out, const struct cj_value *doc)
{
    const struct cj_value *topics = cj_get(doc, "topics");

    if (topics == NULL || topics->type != CJ_ARRAY)
        return SMQ_E_INVALID_ARGUMENT;
    /* PENDING: published messages kept for their pending notifications */
    fprintf(out, "%-32s %13s %9s %12s %7s  %s\n", "NAME", "SUBSCRIPTIONS", "PENDING",
            "MAX_MSG_SIZE", "LOGGING", "CREATED");
    for (size_t i = 0; i < topics->n; i++) {
        const struct cj_value *t = &topics->items[i];
        const struct cj_value *attrs = cj_get(t, "attributes");
        char f[6][128];
        fprintf(out, "%-32s %13s %9s %12s %7s  %s\n",
                field(cj_text(t, "name", "?"), f[0], sizeof f[0]),
                field(cj_text(t, "subscriptions", "-"), f[1], sizeof f[1]),
                field(cj_text(t, "message_count", "-"), f[2], sizeof f[2]),
                field(cj_text(attrs, "MaximumMessageSize", "?"), f[3], sizeof f[3]),
                field(cj_text(attrs, "LoggingEnabled", "?"), f[4], sizeof f[4]),
                utc_time(t, "create_time", f[5], sizeof f[5]));
    }
    return 0;
}

/* The endpoint goes last and whole (it may be 1024 bytes), printed safely;
 * the FilterTag is cut to its column like the other fields (--json has it
 * exactly). */
int ctl_print_subscription_table(FILE *out, const struct cj_value *doc)
{
    const struct cj_value *subs = cj_get(doc, "subscriptions");

    if (subs == NULL || subs->type != CJ_ARRAY)
        return SMQ_E_INVALID_ARGUMENT;
    /* PENDING: notifications not yet delivered or given up; RETRYING: of
     * those, the ones with a failed attempt. */
    fprintf(out, "%-32s %-16s %-23s %-10s %9s %8s  %s\n", "NAME", "FILTER_TAG", "STRATEGY",
            "FORMAT", "PENDING", "RETRYING", "ENDPOINT");
    for (size_t i = 0; i < subs->n; i++) {
        const struct cj_value *s = &subs->items[i];
        const struct cj_value *attrs = cj_get(s, "attributes");
        const char *tag = cj_text(attrs, "FilterTag", "");
        char f[6][128];
        fprintf(out, "%-32s %-16s %-23s %-10s %9s %8s  ",
                field(cj_text(s, "name", "?"), f[0], sizeof f[0]),
                field(tag[0] != '\0' ? tag : "-", f[1], 17),
                field(cj_text(attrs, "NotifyStrategy", "?"), f[2], sizeof f[2]),
                field(cj_text(attrs, "NotifyContentFormat", "?"), f[3], sizeof f[3]),
                field(cj_text(s, "pending", "-"), f[4], sizeof f[4]),
                field(cj_text(s, "retrying", "-"), f[5], sizeof f[5]));
        print_text(out, cj_text(attrs, "Endpoint", "?"));
        fputc('\n', out);
    }
    return 0;
}

/* Scalars of obj as "prefixkey: value" lines; nested objects flattened. */
static void print_flat(FILE *out, const struct cj_value *obj, const char *prefix)
{
    for (size_t i = 0; i < obj->n; i++) {
        const struct cj_value *v = &obj->items[i];
        if (v->type == CJ_OBJECT) {
            fprintf(out, "%s", prefix);
            print_text(out, obj->keys[i]);
            fprintf(out, ":\n");
            print_flat(out, v, "  ");
            continue;
        }
        fprintf(out, "%s", prefix);
        print_text(out, obj->keys[i]);
        fprintf(out, ": ");
        if (v->type == CJ_STRING || v->type == CJ_NUMBER)
            ctl_print_safe(out, v->text, v->len);
        else if (v->type == CJ_BOOL)
            fprintf(out, "%s", v->boolean ? "true" : "false");
        else
            fprintf(out, v->type == CJ_NULL ? "null" : "[...]");
        fputc('\n', out);
    }
}

int ctl_print_queue(FILE *out, const struct cj_value *queue)
{
    if (queue == NULL || queue->type != CJ_OBJECT || cj_get(queue, "name") == NULL)
        return SMQ_E_INVALID_ARGUMENT;
    print_flat(out, queue, "");
    return 0;
}

int ctl_print_messages(FILE *out, const struct cj_value *doc)
{
    const struct cj_value *msgs = cj_get(doc, "messages");

    if (msgs == NULL || msgs->type != CJ_ARRAY)
        return SMQ_E_INVALID_ARGUMENT;
    for (size_t i = 0; i < msgs->n; i++) {
        const struct cj_value *m = &msgs->items[i];
        const struct cj_value *body = cj_get(m, "body");
        char f[4][128];
        fprintf(out, "id: %s  enqueue_time_ms: %s  dequeue_count: %s  priority: %s\n",
                field(cj_text(m, "id", "?"), f[0], sizeof f[0]),
                field(cj_text(m, "enqueue_time_ms", "?"), f[1], sizeof f[1]),
                field(cj_text(m, "dequeue_count", "?"), f[2], sizeof f[2]),
                field(cj_text(m, "priority", "?"), f[3], sizeof f[3]));
        fprintf(out, "body: ");
        if (body != NULL && body->type == CJ_STRING)
            ctl_print_safe(out, body->text, body->len);
        fprintf(out, "\n\n");
    }
    if (msgs->n == 0)
        fprintf(out, "(no visible messages)\n");
    return 0;
}
