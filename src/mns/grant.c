/*
 * grant.c — owns access grants (grant.h): parsing a grant's queue and
 * class lists, matching a queue name against a key's grants, and writing
 * both back as a configuration would.
 */
#include "smqd/grant.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "smqd/errors.h"

static const struct {
    const char *name;
    unsigned bit;
} class_names[] = {
    {"manage", GRANT_MANAGE},
    {"send", GRANT_SEND},
    {"receive", GRANT_RECEIVE},
    {"list", GRANT_LIST},
};
#define N_CLASSES (sizeof class_names / sizeof class_names[0])

__attribute__((format(printf, 3, 4)))
static int refuse(char *why, size_t why_size, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, why_size, fmt, ap);
    va_end(ap);
    return SMQ_E_INVALID_ARGUMENT;
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t';
}

/* The next comma-separated item of *p, blanks around it trimmed; advances
 * *p past the comma.  false at the end of the text. */
static bool next_item(const char **p, const char **item, size_t *len)
{
    const char *s = *p, *end;

    if (s == NULL)
        return false;
    end = strchr(s, ',');
    *p = end != NULL ? end + 1 : NULL;
    if (end == NULL)
        end = s + strlen(s);
    while (s < end && is_space(*s))
        s++;
    while (end > s && is_space(end[-1]))
        end--;
    *item = s;
    *len = (size_t)(end - s);
    return true;
}

/* One queue pattern: a valid name, or a valid beginning of one followed by
 * '*'.  A '*' anywhere else would suggest a glob smqd does not have. */
static int parse_pattern(const char *item, size_t len, struct grant_pattern *out, char *why,
                         size_t why_size)
{
    const char *star = memchr(item, '*', len);
    enum qname_problem p;

    if (len == 0)
        return refuse(why, why_size, "an empty queue pattern (two commas, or a comma at an end)");
    if (star != NULL && star != item + len - 1)
        return refuse(why, why_size, "\"%.*s\": a '*' may only end a pattern", (int)len, item);
    out->prefix = star != NULL;
    out->len = out->prefix ? len - 1 : len;
    if (out->len > SMQ_QUEUE_NAME_MAX)
        return refuse(why, why_size, "\"%.20s...\": longer than a queue name can be", item);
    /* A prefix is checked as a name; only its length may be 0 ("*"). */
    p = out->len == 0 && out->prefix ? QNAME_OK : qname_check(item, out->len);
    if (p != QNAME_OK)
        return refuse(why, why_size, "\"%.*s\": %s", (int)len, item, qname_problem_text(p));
    memcpy(out->text, item, out->len);
    out->text[out->len] = '\0';
    return 0;
}

int grant_parse_queues(const char *text, struct grant *g, char *why, size_t why_size)
{
    struct grant_pattern *patterns = calloc(GRANT_PATTERNS_MAX, sizeof *patterns), *shrunk;
    const char *p = text, *item;
    size_t len, n = 0;
    int rc = 0;

    if (patterns == NULL)
        return SMQ_E_NOMEM;
    while (rc == 0 && next_item(&p, &item, &len)) {
        if (n == GRANT_PATTERNS_MAX)
            rc = refuse(why, why_size, "more than %d queue patterns in one grant",
                        GRANT_PATTERNS_MAX);
        else
            rc = parse_pattern(item, len, &patterns[n++], why, why_size);
    }
    if (rc != 0) {
        free(patterns);
        return rc;
    }
    shrunk = realloc(patterns, (n > 0 ? n : 1) * sizeof *patterns);
    free(g->patterns);
    g->patterns = shrunk != NULL ? shrunk : patterns;
    g->n_patterns = n;
    return 0;
}

int grant_parse_classes(const char *text, unsigned *classes, char *why, size_t why_size)
{
    const char *p = text, *item;
    size_t len, i;
    unsigned bits = 0;

    while (next_item(&p, &item, &len)) {
        if (len == 0)
            return refuse(why, why_size, "an empty action (two commas, or a comma at an end)");
        for (i = 0; i < N_CLASSES; i++)
            if (strlen(class_names[i].name) == len && memcmp(class_names[i].name, item, len) == 0)
                break;
        if (i == N_CLASSES)
            return refuse(why, why_size, "unknown action \"%.*s\" (known: manage, send, receive, "
                          "list)", (int)len, item);
        bits |= class_names[i].bit;
    }
    *classes = bits;
    return 0;
}

int grant_set_add(struct grant_set *set, struct grant *g)
{
    struct grant *grown = realloc(set->grants, (set->n + 1) * sizeof *grown);

    if (grown == NULL)
        return SMQ_E_NOMEM;
    set->grants = grown;
    set->grants[set->n++] = *g;
    *g = (struct grant){NULL, 0, 0};
    return 0;
}

static bool pattern_matches(const struct grant_pattern *p, const char *queue, size_t len)
{
    if (p->prefix)
        return len >= p->len && memcmp(queue, p->text, p->len) == 0;
    return len == p->len && memcmp(queue, p->text, len) == 0;
}

bool grant_allows(const struct grant_set *set, const char *queue, unsigned cls)
{
    size_t len = strlen(queue);

    if (set == NULL)
        return true;
    for (size_t i = 0; i < set->n; i++) {
        const struct grant *g = &set->grants[i];
        if ((g->classes & cls) == 0)
            continue;
        for (size_t j = 0; j < g->n_patterns; j++)
            if (pattern_matches(&g->patterns[j], queue, len))
                return true;
    }
    return false;
}

const char *grant_next_start(const struct grant_set *set, unsigned cls, const char *after)
{
    const char *best = NULL;

    if (set == NULL)
        return NULL;
    for (size_t i = 0; i < set->n; i++) {
        const struct grant *g = &set->grants[i];
        if ((g->classes & cls) == 0)
            continue;
        for (size_t j = 0; j < g->n_patterns; j++) {
            const char *t = g->patterns[j].text;
            if (strcmp(t, after) > 0 && (best == NULL || strcmp(t, best) < 0))
                best = t;
        }
    }
    return best;
}

bool grant_gives_any(const struct grant_set *set, unsigned cls)
{
    if (set == NULL)
        return true;
    for (size_t i = 0; i < set->n; i++)
        if ((set->grants[i].classes & cls) != 0 && set->grants[i].n_patterns > 0)
            return true;
    return false;
}

const char *grant_class_name(unsigned cls)
{
    for (size_t i = 0; i < N_CLASSES; i++)
        if (class_names[i].bit == cls)
            return class_names[i].name;
    return "-";
}

/* Appends text to out at *at, keeping room for "..." when it does not fit;
 * false once out is full. */
static bool append(char *out, size_t size, size_t *at, const char *text, size_t len)
{
    if (*at + len + 4 > size) {      /* room for "..." is kept by every append */
        if (*at + 4 <= size)
            memcpy(out + *at, "...", 4);
        return false;
    }
    memcpy(out + *at, text, len);
    *at += len;
    out[*at] = '\0';
    return true;
}

void grant_format_classes(unsigned classes, char *out, size_t size)
{
    size_t at = 0;

    if (size == 0)
        return;
    out[0] = '\0';
    for (size_t i = 0; i < N_CLASSES; i++) {
        const char *name = class_names[i].name;
        if ((classes & class_names[i].bit) == 0)
            continue;
        if ((at > 0 && !append(out, size, &at, ", ", 2)) || !append(out, size, &at, name, strlen(name)))
            return;
    }
}

void grant_format_queues(const struct grant *g, char *out, size_t size)
{
    size_t at = 0;

    if (size == 0)
        return;
    out[0] = '\0';
    for (size_t i = 0; i < g->n_patterns; i++) {
        const struct grant_pattern *p = &g->patterns[i];
        if ((i > 0 && !append(out, size, &at, ",", 1)) || !append(out, size, &at, p->text, p->len)
            || (p->prefix && !append(out, size, &at, "*", 1)))
            return;
    }
}

void grant_free(struct grant *g)
{
    free(g->patterns);
    *g = (struct grant){NULL, 0, 0};
}

void grant_set_free(struct grant_set *set)
{
    if (set == NULL)
        return;
    for (size_t i = 0; i < set->n; i++)
        grant_free(&set->grants[i]);
    free(set->grants);
    set->grants = NULL;
    set->n = 0;
}
