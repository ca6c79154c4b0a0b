/*
 * xml_write.c — owns the writing of response documents (xml.h): compact,
 * with the MNS namespace on the root, text escaped so that any output is
 * well-formed (docs/protocol.md §4, §8.1).  No libxml2: writing is a few
 * string appends.
 */
#include "smqd/xml.h"

#include <stdio.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "smqd/utf8.h"

/*
 * Length of the XML 1.0 Char encoded in UTF-8 at p, or 0 when the bytes are
 * not one (invalid or overlong UTF-8, C0 controls other than TAB/LF/CR,
 * surrogates, U+FFFE, U+FFFF).
 */
static size_t xml_char_len(const unsigned char *p, size_t avail)
{
    uint32_t cp;
    size_t n = utf8_decode(p, avail, &cp);

    if (n == 0 || cp == 0xFFFE || cp == 0xFFFF)
        return 0;
    if (cp < 0x20 && cp != '\t' && cp != '\n' && cp != '\r')
        return 0;
    return n;
}

static const char *escape_for(unsigned char c)
{
    switch (c) {
    case '&': return "&amp;";
    case '<': return "&lt;";
    case '>': return "&gt;";
    case '\r': return "&#13;";     /* a literal CR would be read back as LF */
    default: return NULL;
    }
}

/*
 * Text that came through the parser (message bodies) is always valid XML
 * characters and is written byte-exact.  Other strings (request ids, host
 * ids, validated queue names, error messages that may quote client input)
 * are expected to be valid too, but so that a response is never ill-formed
 * whatever they hold, each byte that does not start a valid XML Char is
 * written as U+FFFD.
 */
/*
 * True when none of the 8 bytes at p needs a look: each is printable ASCII
 * (0x20-0x7F) other than & < >.  Word-at-a-time tests ("Bit Twiddling
 * Hacks": a byte below n, a byte equal to c); each says exactly whether any
 * byte of the word matches, which is all that is asked here.
 */
static bool plain8(const unsigned char *p)
{
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    uint64_t x, amp, lt, gt;

    memcpy(&x, p, sizeof x);
    amp = x ^ (ones * '&');
    lt = x ^ (ones * '<');
    gt = x ^ (ones * '>');
    return ((x & highs) | ((x - ones * 0x20) & ~x & highs) | ((amp - ones) & ~amp & highs)
            | ((lt - ones) & ~lt & highs) | ((gt - ones) & ~gt & highs)) == 0;
}

#if defined(__SSE2__)
/*
 * How many of the 16 bytes at p need no look, counted from the first: the
 * same test as plain8, sixteen bytes per step.  A signed compare below
 * 0x20 catches the C0 controls and every byte from 0x80 up at once.
 */
static size_t plain_run16(const unsigned char *p)
{
    const __m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
    __m128i odd = _mm_cmplt_epi8(x, _mm_set1_epi8(0x20));
    unsigned mask;

    odd = _mm_or_si128(odd, _mm_cmpeq_epi8(x, _mm_set1_epi8('&')));
    odd = _mm_or_si128(odd, _mm_cmpeq_epi8(x, _mm_set1_epi8('<')));
    odd = _mm_or_si128(odd, _mm_cmpeq_epi8(x, _mm_set1_epi8('>')));
    mask = (unsigned)_mm_movemask_epi8(odd);
    return mask == 0 ? 16 : (size_t)__builtin_ctz(mask);
}
#endif

void xml_escape(struct smq_buf *b, const char *text, size_t len)
{
    const unsigned char *p = (const unsigned char *)text, *end = p + len, *run = p;

    while (p < end) {
        const char *rep;
        size_t n = 1;

        /* Fast paths for what message bodies are mostly made of: printable
         * ASCII other than & < >, which is written as it is, sixteen (SSE2)
         * or eight bytes at a time where possible (the general path below
         * costs a switch and a UTF-8 decode per byte). */
#if defined(__SSE2__)
        if (end - p >= 16) {
            size_t plain = plain_run16(p);

            p += plain;
            if (plain == 16)
                continue;
        }
#endif
        if (end - p >= 8 && plain8(p)) {
            p += 8;
            continue;
        }
        if ((*p >= 0x20 && *p < 0x80 && *p != '&' && *p != '<' && *p != '>')
            || *p == '\n' || *p == '\t') {
            p++;
            continue;
        }
        rep = escape_for(*p);
        if (rep == NULL) {
            n = xml_char_len(p, (size_t)(end - p));
            if (n > 0) {
                p += n;
                continue;
            }
            rep = "\xEF\xBF\xBD";
            n = 1;
        }
        buf_append(b, run, (size_t)(p - run));
        buf_puts(b, rep);
        p += n;
        run = p;
    }
    buf_append(b, run, (size_t)(p - run));
}

/* Element names are compile-time constants that are valid XML names. */
void xml_begin(struct smq_buf *b, const char *root)
{
    buf_puts(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?><");
    buf_puts(b, root);
    buf_puts(b, " xmlns=\"" XML_MNS_NS "\">");
}

/* One append per tag (three buf_puts each cost a strlen and a capacity check). */
static void put_tag(struct smq_buf *b, const char *name, bool closing)
{
    char tag[64];
    size_t n = strlen(name), o = 0;

    if (n + 3 > sizeof tag) {           /* never for our names; stay correct anyway */
        buf_puts(b, closing ? "</" : "<");
        buf_puts(b, name);
        buf_puts(b, ">");
        return;
    }
    tag[o++] = '<';
    if (closing)
        tag[o++] = '/';
    memcpy(tag + o, name, n);
    o += n;
    tag[o++] = '>';
    buf_append(b, tag, o);
}

void xml_open(struct smq_buf *b, const char *name)
{
    put_tag(b, name, false);
}

void xml_close(struct smq_buf *b, const char *name)
{
    put_tag(b, name, true);
}

void xml_elem_text(struct smq_buf *b, const char *name, const char *text, size_t len)
{
    xml_open(b, name);
    xml_escape(b, text, len);
    xml_close(b, name);
}

/* NULL is written as an empty element, so required elements never vanish. */
void xml_elem_str(struct smq_buf *b, const char *name, const char *text)
{
    if (text == NULL)
        text = "";
    xml_elem_text(b, name, text, strlen(text));
}

void xml_elem_i64(struct smq_buf *b, const char *name, int64_t v)
{
    xml_open(b, name);
    buf_append_i64(b, v);
    xml_close(b, name);
}

void xml_elem_bool(struct smq_buf *b, const char *name, bool v)
{
    xml_open(b, name);
    buf_puts(b, v ? "True" : "False");
    xml_close(b, name);
}

void xml_error_doc(struct smq_buf *b, const char *code, const char *message,
                   const char *request_id, const char *host_id)
{
    xml_begin(b, "Error");
    xml_elem_str(b, "Code", code);
    xml_elem_str(b, "Message", message);
    xml_elem_str(b, "RequestId", request_id);
    xml_elem_str(b, "HostId", host_id);
    xml_close(b, "Error");
}

