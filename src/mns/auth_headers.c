/*
 * auth_headers.c — owns the header canonicalisation of both signature
 * versions (auth_headers.h): picking the headers a version signs, sorting
 * them by lower-cased name without losing arrival order, and folding
 * duplicates.  It calls nothing of auth.c or auth_v4.c, which both call it.
 */
#include "auth_headers.h"
#include "auth_text.h"

#include <stdint.h>
#include <stdlib.h>

#define SMALL_HEADER_COUNT 32           /* headers sorted without malloc */

/* Byte order of the lowercased names (docs/protocol.md §3.1). */
static int lower_name_cmp(const char *a, const char *b)
{
    for (;; a++, b++) {
        unsigned char ca = (unsigned char)ascii_lower(*a);
        unsigned char cb = (unsigned char)ascii_lower(*b);
        if (ca != cb || ca == '\0')
            return (int)ca - (int)cb;
    }
}

/* qsort context: the sort keys are indices into the request's header array. */
struct sort_entry {
    const struct http_header *h;
    size_t pos;                     /* arrival order, to keep duplicates stable */
};

static int sort_entry_cmp(const void *pa, const void *pb)
{
    const struct sort_entry *a = pa, *b = pb;
    int c = lower_name_cmp(a->h->name, b->h->name);

    if (c != 0)
        return c;
    return (a->pos > b->pos) - (a->pos < b->pos);
}

static void append_lower(struct smq_buf *out, const char *s)
{
    for (; *s != '\0'; s++) {
        char c = ascii_lower(*s);
        buf_append(out, &c, 1);
    }
}

static void append_trimmed(struct smq_buf *out, const char *value)
{
    size_t n;
    const char *v = trim_ows(value != NULL ? value : "", &n);

    buf_append(out, v, n);
}

/*
 * Emits sorted entries as "name:value\n".  A name that appears more than
 * once is emitted once with its values joined by "," in arrival order: that
 * is what an HTTP intermediary may legally fold them into (RFC 9110 §5.3),
 * so a client that signed the folded form still verifies.  No SDK sends
 * duplicate x-mns headers, so this only has to be deterministic.
 */
static void append_sorted(struct smq_buf *out, const struct sort_entry *e, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        bool same_as_prev = i > 0 && lower_name_cmp(e[i - 1].h->name, e[i].h->name) == 0;
        bool same_as_next = i + 1 < n && lower_name_cmp(e[i].h->name, e[i + 1].h->name) == 0;

        if (same_as_prev) {
            buf_append(out, ",", 1);
        } else {
            append_lower(out, e[i].h->name);
            buf_append(out, ":", 1);
        }
        append_trimmed(out, e[i].h->value);
        if (!same_as_next)
            buf_append(out, "\n", 1);
    }
}

/*
 * CanonicalizedMNSHeaders (and V4's canonical headers, with another pick).
 * Sorting with qsort keeps this O(n log n) however many headers arrive; the
 * HTTP layer bounds the total header size anyway.
 */
int auth_headers_append_sorted(const struct auth_request *r, bool (*pick)(const char *name),
                               struct smq_buf *out)
{
    struct sort_entry small[SMALL_HEADER_COUNT];
    struct sort_entry *e = small;
    size_t n = 0;

    for (size_t i = 0; i < r->n_headers; i++)
        n += r->headers[i].name != NULL && pick(r->headers[i].name);
    if (n > SMALL_HEADER_COUNT) {
        if (n > SIZE_MAX / sizeof *e)
            return SMQ_E_NOMEM;
        e = malloc(n * sizeof *e);
        if (e == NULL)
            return SMQ_E_NOMEM;
    }

    n = 0;
    for (size_t i = 0; i < r->n_headers; i++)
        if (r->headers[i].name != NULL && pick(r->headers[i].name))
            e[n++] = (struct sort_entry){.h = &r->headers[i], .pos = i};
    if (n > 1)
        qsort(e, n, sizeof *e, sort_entry_cmp);
    append_sorted(out, e, n);

    if (e != small)
        free(e);
    return 0;
}
