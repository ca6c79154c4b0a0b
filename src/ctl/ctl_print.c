/*
 * ctl_print.c — owns smqctl's human-readable output (ctl_print.h).
 */
#include "ctl_print.h"

#include <stdint.h>
#include <string.h>

void ctl_print_safe(FILE *out, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        /* Bytes >= 0x80 pass: the server sends valid UTF-8 (json.c), and
         * only C0 controls and DEL can drive a terminal. */
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
        return -1;
    fprintf(out, "%-32s %10s %10s %10s %8s %12s  %s\n", "NAME", "ACTIVE", "INACTIVE",
            "DELAYED", "WAITERS", "OLDEST_S", "DLQ");
    for (size_t i = 0; i < queues->n; i++) {
        const struct cj_value *q = &queues->items[i];
        /* Names are [A-Za-z0-9-] (the server checks), but print them safely anyway. */
        char name[64];
        snprintf(name, sizeof name, "%s", cj_text(q, "name", "?"));
        for (char *p = name; *p; p++)
            if ((unsigned char)*p < 0x20 || *p == 0x7F)
                *p = '?';
        fprintf(out, "%-32s %10s %10s %10s %8s %12s  ", name, cj_text(q, "active", "?"),
                cj_text(q, "inactive", "?"), cj_text(q, "delayed", "?"),
                cj_text(q, "waiters", "?"), cj_text(q, "oldest_age_s", "?"));
        print_text(out, dlq_of(q));
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
        return -1;
    print_flat(out, queue, "");
    return 0;
}

int ctl_print_messages(FILE *out, const struct cj_value *doc)
{
    const struct cj_value *msgs = cj_get(doc, "messages");

    if (msgs == NULL || msgs->type != CJ_ARRAY)
        return -1;
    for (size_t i = 0; i < msgs->n; i++) {
        const struct cj_value *m = &msgs->items[i];
        const struct cj_value *body = cj_get(m, "body");
        fprintf(out, "id: %s  enqueue_time_ms: %s  dequeue_count: %s  priority: %s\n",
                cj_text(m, "id", "?"), cj_text(m, "enqueue_time_ms", "?"),
                cj_text(m, "dequeue_count", "?"), cj_text(m, "priority", "?"));
        fprintf(out, "body: ");
        if (body != NULL && body->type == CJ_STRING)
            ctl_print_safe(out, body->text, body->len);
        fprintf(out, "\n\n");
    }
    if (msgs->n == 0)
        fprintf(out, "(no visible messages)\n");
    return 0;
}
