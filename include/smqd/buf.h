/*
 * buf.h — a growable byte buffer for building responses and strings.
 *
 * Appends never fail silently: on allocation failure the buffer is marked
 * failed, later appends are ignored and buf_failed() reports it once at the
 * end, so callers check one flag instead of every append.
 */
#ifndef SMQD_BUF_H
#define SMQD_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct smq_buf {
    char *data;       /* always NUL-terminated when len > 0 or cap > 0 */
    size_t len;
    size_t cap;
    bool failed;
};

void buf_init(struct smq_buf *b);
void buf_free(struct smq_buf *b);
void buf_reset(struct smq_buf *b);               /* len = 0, keeps memory */
/* Makes room for extra more bytes now, so that content whose size is known
 * in advance costs one allocation instead of a doubling series (each with
 * a copy).  As for an append, when len + extra + 1 exceeds the capacity the
 * capacity becomes the first 256 * 2^k that holds it.  0 does nothing.  A
 * failure marks the buffer failed, like an append. */
void buf_reserve(struct smq_buf *b, size_t extra);
void buf_append(struct smq_buf *b, const void *data, size_t len);
void buf_puts(struct smq_buf *b, const char *s);
void buf_printf(struct smq_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void buf_append_i64(struct smq_buf *b, int64_t v);
static inline bool buf_failed(const struct smq_buf *b) { return b->failed; }
/* Hands the memory to the caller (who frees it); the buffer is left empty. */
char *buf_take(struct smq_buf *b, size_t *len);

#endif
