/*
 * json.c — owns JSON string escaping and number formatting (json.h).
 */
#include "smqd/json.h"

#include <inttypes.h>
#include <stdbool.h>
#include <string.h>

/*
 * Length of the valid UTF-8 sequence at s (1..4), or 0 if the bytes there
 * are not one (overlong forms, surrogates and code points above U+10FFFF
 * are invalid too: RFC 3629 §4).
 */
static size_t utf8_seq_len(const unsigned char *s, size_t avail)
{
    size_t n;
    uint32_t cp, min;

    if (s[0] < 0x80)
        return 1;
    if ((s[0] & 0xE0) == 0xC0)
        n = 2, cp = s[0] & 0x1F, min = 0x80;
    else if ((s[0] & 0xF0) == 0xE0)
        n = 3, cp = s[0] & 0x0F, min = 0x800;
    else if ((s[0] & 0xF8) == 0xF0)
        n = 4, cp = s[0] & 0x07, min = 0x10000;
    else
        return 0;
    if (n > avail)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

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
        size_t n = utf8_seq_len(p + i, len - i);
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
