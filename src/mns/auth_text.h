/*
 * auth_text.h — the ASCII helpers the auth module's files share: case
 * folding and comparison of header names (tokens; the C library's ctype
 * functions depend on the locale), trimming a header value's optional
 * whitespace, and the copy of client bytes into an error message.
 */
#ifndef SMQD_AUTH_TEXT_H
#define SMQD_AUTH_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

static inline char ascii_lower(char c)
{
    return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

/* s starts with the n bytes of lower_prefix, compared without case. */
static inline bool ascii_ieq_prefix(const char *s, const char *lower_prefix, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] == '\0' || ascii_lower(s[i]) != lower_prefix[i])
            return false;
    return true;
}

static inline bool ascii_ieq(const char *a, const char *b)
{
    for (; *a != '\0' && *b != '\0'; a++, b++)
        if (ascii_lower(*a) != ascii_lower(*b))
            return false;
    return *a == *b;
}

static inline bool is_ows(char c)
{
    return c == ' ' || c == '\t';
}

/* Strips HTTP optional whitespace from both ends; returns the start, *len the span. */
static inline const char *trim_ows(const char *s, size_t *len)
{
    size_t n = strlen(s);

    while (n > 0 && is_ows(*s)) {
        s++;
        n--;
    }
    while (n > 0 && is_ows(s[n - 1]))
        n--;
    *len = n;
    return s;
}

/*
 * Copies up to src_len bytes of client input into dst (truncating to fit,
 * stopping at a NUL) for an error message, replacing anything outside
 * printable ASCII with '?' and newlines with a visible "\n": the message ends
 * up in an XML document, where raw control characters are not allowed even
 * when escaped.
 */
static inline void echo_copy(char *dst, size_t dst_size, const char *src, size_t src_len)
{
    size_t o = 0;

    for (size_t i = 0; i < src_len && src[i] != '\0' && o + 3 <= dst_size; i++) {
        char c = src[i];
        if (c == '\n') {
            dst[o++] = '\\';
            dst[o++] = 'n';
        } else {
            dst[o++] = (c >= 0x20 && c < 0x7f) ? c : '?';
        }
    }
    dst[o] = '\0';
}

#endif
