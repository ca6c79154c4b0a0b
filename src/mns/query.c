/*
 * query.c — owns percent-decoding and the query string (query.h).
 */
#include "smqd/query.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = (char)tolower((unsigned char)c);
    return (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
}

/* Decodes %XX in place; '+' is a literal plus (docs/protocol.md §1.3).
 * 0, or SMQ_E_INVALID_ARGUMENT for a bad escape or an encoded NUL. */
static int percent_decode(char *s)
{
    char *out = s;

    for (; *s != '\0'; s++) {
        if (*s == '%') {
            int hi = hex_value(s[1]), lo = hi < 0 ? -1 : hex_value(s[2]);
            if (lo < 0 || (hi == 0 && lo == 0))
                return SMQ_E_INVALID_ARGUMENT;
            *out++ = (char)(hi * 16 + lo);
            s += 2;
        } else {
            *out++ = *s;
        }
    }
    *out = '\0';
    return 0;
}

int query_parse(const char *raw, struct query *q, struct smq_errinfo *ei)
{
    char *save = NULL, *pair;

    memset(q, 0, sizeof *q);
    if (raw == NULL || *raw == '\0')
        return 0;
    if ((q->storage = strdup(raw)) == NULL)
        return errors_set(ei, SMQ_E_NOMEM, NULL);
    for (pair = strtok_r(q->storage, "&", &save); pair != NULL; pair = strtok_r(NULL, "&", &save)) {
        char *eq = strchr(pair, '=');
        if (q->n == QUERY_MAX_PARAMS)
            return errors_set(ei, SMQ_E_INVALID_QUERY_STRING, "Too many query parameters.");
        if (eq != NULL)
            *eq = '\0';
        q->names[q->n] = pair;
        q->values[q->n] = eq != NULL ? eq + 1 : pair + strlen(pair);
        if (percent_decode(q->names[q->n]) != 0 || percent_decode(q->values[q->n]) != 0)
            return errors_set(ei, SMQ_E_INVALID_QUERY_STRING,
                              "The query string has an invalid percent-encoding.");
        q->n++;
    }
    return 0;
}

void query_free(struct query *q)
{
    free(q->storage);
    memset(q, 0, sizeof *q);
}

const char *query_get(const struct query *q, const char *name)
{
    for (size_t i = 0; i < q->n; i++)
        if (strcasecmp(q->names[i], name) == 0)
            return q->values[i];
    return NULL;
}

int query_path_segment(const char *raw, size_t len, char *out, size_t out_size)
{
    size_t o = 0;

    for (size_t i = 0; i < len; i++) {
        char c = raw[i];

        if (c == '%') {
            int hi = i + 2 < len ? hex_value(raw[i + 1]) : -1;
            int lo = hi < 0 ? -1 : hex_value(raw[i + 2]);
            if (lo < 0 || (hi == 0 && lo == 0))
                return -1;
            c = (char)(hi * 16 + lo);
            i += 2;
        } else if (c == '\0') {
            return -1;
        }
        if (o + 1 >= out_size)
            return -1;
        out[o++] = c;
    }
    if (out_size == 0)
        return -1;
    out[o] = '\0';
    return 0;
}

int query_queue_name(const char *raw, size_t len, char out[SMQ_QUEUE_NAME_MAX + 1],
                     struct smq_errinfo *ei)
{
    /* Every character of a name may arrive as a %XX escape. */
    char name[3 * SMQ_QUEUE_NAME_MAX + 1];

    if (len >= sizeof name)
        return errors_set(ei, SMQ_E_QUEUE_NAME_LENGTH, NULL);
    memcpy(name, raw, len);
    name[len] = '\0';
    if (percent_decode(name) != 0)
        return errors_set(ei, SMQ_E_INVALID_QUEUE_NAME, "The queue name has an invalid "
                          "%%-escape.");
    if (qname_check_err(name, strlen(name), ei) != 0)
        return ei->err;
    memcpy(out, name, strlen(name) + 1);
    return 0;
}
