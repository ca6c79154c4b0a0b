/*
 * buf.c — owns the growable byte buffer (see buf.h for the failure contract).
 */
#include "smqd/buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void buf_init(struct smq_buf *b)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->failed = false;
}

void buf_free(struct smq_buf *b)
{
    free(b->data);
    buf_init(b);
}

void buf_reset(struct smq_buf *b)
{
    b->len = 0;
    b->failed = false;
    if (b->data != NULL)
        b->data[0] = '\0';
}

static bool reserve(struct smq_buf *b, size_t extra)
{
    size_t need, cap;
    char *p;

    if (b->failed)
        return false;
    if (extra > SIZE_MAX / 2 - b->len) {
        b->failed = true;
        return false;
    }
    need = b->len + extra + 1;
    if (need <= b->cap)
        return true;
    cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap *= 2;
    p = realloc(b->data, cap);
    if (p == NULL) {
        b->failed = true;
        return false;
    }
    b->data = p;
    b->cap = cap;
    return true;
}

void buf_reserve(struct smq_buf *b, size_t extra)
{
    if (extra > 0 && reserve(b, extra))
        b->data[b->len] = '\0';      /* allocated memory is always terminated (buf.h) */
}

void buf_append(struct smq_buf *b, const void *data, size_t len)
{
    if (!reserve(b, len))
        return;
    if (len > 0)
        memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = '\0';
}

void buf_puts(struct smq_buf *b, const char *s)
{
    buf_append(b, s, strlen(s));
}

void buf_printf(struct smq_buf *b, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !reserve(b, (size_t)n)) {
        b->failed = true;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

/* Decimal digits written backwards from the end of a small buffer: snprintf
 * parses its format on every call, and a Receive response has four numbers
 * per message (EnqueueTime, NextVisibleTime, FirstDequeueTime, ...). */
void buf_append_i64(struct smq_buf *b, int64_t v)
{
    char tmp[24], *p = tmp + sizeof tmp;
    /* Negated as unsigned so that INT64_MIN does not overflow. */
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;

    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u != 0);
    if (v < 0)
        *--p = '-';
    buf_append(b, p, (size_t)(tmp + sizeof tmp - p));
}

char *buf_take(struct smq_buf *b, size_t *len)
{
    char *p = b->data;
    if (len != NULL)
        *len = b->len;
    buf_init(b);
    return p;
}
