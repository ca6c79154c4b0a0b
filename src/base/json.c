/*
 * json.c — owns JSON string escaping and number formatting (json.h).
 */
#include "smqd/json.h"
#include "smqd/utf8.h"

#include <inttypes.h>
#include <stdbool.h>
#include <string.h>

static void escape_ascii(struct smq_buf *b, unsigned char c)
{
    switch (c) {
    case '"':
        buf_puts(b, "\\\"");
        return;
    case '\\':
        buf_puts(b, "\\\\");
        return;
    case '\n':
        buf_puts(b, "\\n");
        return;
    case '\r':
        buf_puts(b, "\\r");
        return;
    case '\t':
        buf_puts(b, "\\t");
        return;
    default:
        /* DEL is legal JSON but invisible on a terminal; escape it too. */
        if (c < 0x20 || c == 0x7F)
            buf_printf(b, "\\u%04x", c);
        else
            buf_append(b, &c, 1);
    }
}

void json_str(struct smq_buf *b, const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;

    buf_puts(b, "\"");
    while (i < len) {
        uint32_t cp;
        size_t n = utf8_decode(p + i, len - i, &cp);
        if (n == 1) {
            escape_ascii(b, p[i]);
            i++;
        } else if (n > 1) {
            buf_append(b, p + i, n);
            i += n;
        } else {
            buf_puts(b, "\\ufffd");   /* one replacement per invalid byte */
            i++;
        }
    }
    buf_puts(b, "\"");
}

void json_cstr(struct smq_buf *b, const char *s)
{
    json_str(b, s, strlen(s));
}

void json_seconds(struct smq_buf *b, int64_t ms)
{
    bool neg = ms < 0;
    uint64_t a = neg ? (uint64_t)0 - (uint64_t)ms : (uint64_t)ms;

    buf_printf(b, "%s%" PRIu64 ".%03" PRIu64, neg ? "-" : "", a / 1000, a % 1000);
}
