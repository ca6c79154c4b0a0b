/*
 * ctl_json.c — owns smqctl's JSON reader (ctl_json.h): a recursive-descent
 * parser of RFC 8259 with a depth limit, \u escapes (surrogate pairs
 * included) decoded to UTF-8, and no extensions (no comments, no trailing
 * commas, no NaN).
 */
#include "ctl_json.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "smqd/errors.h"
#include "smqd/strnum.h"

struct parser {
    const char *s;
    size_t len, pos;
    char *err;
    size_t err_size;
    bool failed;
};

__attribute__((format(printf, 2, 3)))
static int fail(struct parser *p, const char *fmt, ...)
{
    char msg[160];
    va_list ap;

    if (!p->failed) {
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        snprintf(p->err, p->err_size, "offset %zu: %s", p->pos, msg);
        p->failed = true;
    }
    return SMQ_E_INVALID_ARGUMENT;
}

static void skip_ws(struct parser *p)
{
    while (p->pos < p->len && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' ||
                               p->s[p->pos] == '\n' || p->s[p->pos] == '\r'))
        p->pos++;
}

static bool take_literal(struct parser *p, const char *lit)
{
    size_t n = strlen(lit);

    if (p->len - p->pos < n || memcmp(p->s + p->pos, lit, n) != 0)
        return false;
    p->pos += n;
    return true;
}

/* ---- strings ------------------------------------------------------------- */

struct sbuf {
    char *data;
    size_t len, cap;
};

static int sbuf_put(struct sbuf *b, const char *data, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 32;
        char *grown;
        while (cap < b->len + n + 1)
            cap *= 2;
        if ((grown = realloc(b->data, cap)) == NULL)
            return SMQ_E_NOMEM;
        b->data = grown;
        b->cap = cap;
    }
    memcpy(b->data + b->len, data, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

static int put_utf8(struct sbuf *b, uint32_t cp)
{
    char u[4];
    size_t n;

    if (cp < 0x80) {
        u[0] = (char)cp, n = 1;
    } else if (cp < 0x800) {
        u[0] = (char)(0xC0 | (cp >> 6)), u[1] = (char)(0x80 | (cp & 0x3F)), n = 2;
    } else if (cp < 0x10000) {
        u[0] = (char)(0xE0 | (cp >> 12)), u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[2] = (char)(0x80 | (cp & 0x3F)), n = 3;
    } else {
        u[0] = (char)(0xF0 | (cp >> 18)), u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        u[2] = (char)(0x80 | ((cp >> 6) & 0x3F)), u[3] = (char)(0x80 | (cp & 0x3F)), n = 4;
    }
    return sbuf_put(b, u, n);
}

static int hex4(struct parser *p, uint32_t *out)
{
    uint32_t v = 0;

    if (p->len - p->pos < 4)
        return fail(p, "short \\u escape");
    for (int i = 0; i < 4; i++) {
        char c = p->s[p->pos++];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (uint32_t)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (uint32_t)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (uint32_t)(c - 'A' + 10);
        else
            return fail(p, "bad \\u escape");
    }
    *out = v;
    return 0;
}

/* After "\u": one code point, joining a surrogate pair. */
static int unicode_escape(struct parser *p, struct sbuf *b)
{
    uint32_t hi, lo;

    if (hex4(p, &hi) != 0)
        return SMQ_E_INVALID_ARGUMENT;
    if (hi >= 0xDC00 && hi <= 0xDFFF)
        return fail(p, "lone low surrogate");
    if (hi >= 0xD800 && hi <= 0xDBFF) {
        if (!take_literal(p, "\\u") || hex4(p, &lo) != 0 || lo < 0xDC00 || lo > 0xDFFF)
            return fail(p, "unpaired high surrogate");
        hi = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
    }
    return put_utf8(b, hi) != 0 ? fail(p, "out of memory") : 0;
}

static int escape(struct parser *p, struct sbuf *b)
{
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    const char *hit;
    char c;

    if (p->pos >= p->len)
        return fail(p, "unterminated string");
    c = p->s[p->pos++];
    if (c == 'u')
        return unicode_escape(p, b);
    hit = c != '\0' ? strchr(from, c) : NULL;
    if (hit == NULL)
        return fail(p, "bad escape");
    return sbuf_put(b, &to[hit - from], 1) != 0 ? fail(p, "out of memory") : 0;
}

/* At the opening quote. */
static int parse_string(struct parser *p, char **out, size_t *out_len)
{
    struct sbuf b = {NULL, 0, 0};

    p->pos++;
    if (sbuf_put(&b, "", 0) != 0)
        return fail(p, "out of memory");
    for (;;) {
        unsigned char c;
        if (p->pos >= p->len) {
            free(b.data);
            return fail(p, "unterminated string");
        }
        c = (unsigned char)p->s[p->pos];
        if (c == '"')
            break;
        if (c < 0x20) {
            free(b.data);
            return fail(p, "control character in string");
        }
        if (c == '\\') {
            p->pos++;
            if (escape(p, &b) != 0) {
                free(b.data);
                return SMQ_E_INVALID_ARGUMENT;
            }
            continue;
        }
        if (sbuf_put(&b, (const char *)&c, 1) != 0) {
            free(b.data);
            return fail(p, "out of memory");
        }
        p->pos++;
    }
    p->pos++;
    *out = b.data;
    *out_len = b.len;
    return 0;
}

/* ---- numbers, containers ---------------------------------------------------- */

static size_t digits(struct parser *p)
{
    size_t start = p->pos;

    while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9')
        p->pos++;
    return p->pos - start;
}

static int parse_number(struct parser *p, struct cj_value *v)
{
    size_t start = p->pos, n;

    if (p->s[p->pos] == '-')
        p->pos++;
    n = digits(p);
    if (n == 0 || (n > 1 && p->s[p->pos - n] == '0'))
        return fail(p, "bad number");
    if (p->pos < p->len && p->s[p->pos] == '.') {
        p->pos++;
        if (digits(p) == 0)
            return fail(p, "bad fraction");
    }
    if (p->pos < p->len && (p->s[p->pos] == 'e' || p->s[p->pos] == 'E')) {
        p->pos++;
        if (p->pos < p->len && (p->s[p->pos] == '+' || p->s[p->pos] == '-'))
            p->pos++;
        if (digits(p) == 0)
            return fail(p, "bad exponent");
    }
    v->type = CJ_NUMBER;
    v->len = p->pos - start;
    v->text = strndup(p->s + start, v->len);
    return v->text == NULL ? fail(p, "out of memory") : 0;
}

static int parse_value(struct parser *p, struct cj_value *v, int depth);

/* Appends one zeroed slot to v's items (and keys for objects). */
static struct cj_value *grow(struct parser *p, struct cj_value *v, size_t *cap)
{
    if (v->n == *cap) {
        size_t ncap = *cap ? *cap * 2 : 8;
        struct cj_value *items = realloc(v->items, ncap * sizeof *items);
        if (items == NULL)
            return fail(p, "out of memory"), NULL;
        v->items = items;
        if (v->type == CJ_OBJECT) {
            char **keys = realloc(v->keys, ncap * sizeof *keys);
            if (keys == NULL)
                return fail(p, "out of memory"), NULL;
            v->keys = keys;
        }
        *cap = ncap;
    }
    memset(&v->items[v->n], 0, sizeof v->items[v->n]);
    if (v->type == CJ_OBJECT)
        v->keys[v->n] = NULL;
    return &v->items[v->n++];
}

/* One "key": value member of an object; the slot is added first so that a
 * failure leaves everything reachable for cj_free. */
static int parse_member(struct parser *p, struct cj_value *v, size_t *cap, int depth)
{
    struct cj_value *slot;
    size_t klen;

    if (p->pos >= p->len || p->s[p->pos] != '"')
        return fail(p, "expected a key");
    if ((slot = grow(p, v, cap)) == NULL)
        return SMQ_E_INVALID_ARGUMENT;
    if (parse_string(p, &v->keys[v->n - 1], &klen) != 0)
        return SMQ_E_INVALID_ARGUMENT;
    skip_ws(p);
    if (p->pos >= p->len || p->s[p->pos] != ':')
        return fail(p, "expected ':'");
    p->pos++;
    return parse_value(p, slot, depth + 1);
}

/* At '[' or '{'. */
static int parse_container(struct parser *p, struct cj_value *v, int depth)
{
    bool obj = p->s[p->pos] == '{';
    char close = obj ? '}' : ']';
    size_t cap = 0;

    v->type = obj ? CJ_OBJECT : CJ_ARRAY;
    if (depth >= CJ_MAX_DEPTH)
        return fail(p, "nested too deeply");
    p->pos++;
    skip_ws(p);
    if (p->pos < p->len && p->s[p->pos] == close) {
        p->pos++;
        return 0;
    }
    for (;;) {
        struct cj_value *slot;
        skip_ws(p);
        if (obj) {
            if (parse_member(p, v, &cap, depth) != 0)
                return SMQ_E_INVALID_ARGUMENT;
        } else if ((slot = grow(p, v, &cap)) == NULL || parse_value(p, slot, depth + 1) != 0) {
            return SMQ_E_INVALID_ARGUMENT;
        }
        skip_ws(p);
        if (p->pos < p->len && p->s[p->pos] == ',') {
            p->pos++;
            continue;
        }
        if (p->pos < p->len && p->s[p->pos] == close) {
            p->pos++;
            return 0;
        }
        return fail(p, "expected ',' or '%c'", close);
    }
}

static int parse_value(struct parser *p, struct cj_value *v, int depth)
{
    char c;

    skip_ws(p);
    if (p->pos >= p->len)
        return fail(p, "unexpected end");
    c = p->s[p->pos];
    if (c == '{' || c == '[')
        return parse_container(p, v, depth);
    if (c == '"') {
        v->type = CJ_STRING;
        return parse_string(p, &v->text, &v->len);
    }
    if (c == '-' || (c >= '0' && c <= '9'))
        return parse_number(p, v);
    if (take_literal(p, "true") || take_literal(p, "false")) {
        v->type = CJ_BOOL;
        v->boolean = p->s[p->pos - 4] == 't';   /* "true" or "alse" */
        return 0;
    }
    if (take_literal(p, "null")) {
        v->type = CJ_NULL;
        return 0;
    }
    return fail(p, "unexpected character");
}

int cj_parse(const char *text, size_t len, struct cj_value *out, char *err, size_t err_size)
{
    struct parser p = {text, len, 0, err, err_size, false};

    memset(out, 0, sizeof *out);
    if (parse_value(&p, out, 0) != 0)
        return SMQ_E_INVALID_ARGUMENT;
    skip_ws(&p);
    if (p.pos != p.len)
        return fail(&p, "trailing characters");
    return 0;
}

void cj_free(struct cj_value *v)
{
    for (size_t i = 0; i < v->n; i++) {
        cj_free(&v->items[i]);
        if (v->keys != NULL)
            free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->text);
    memset(v, 0, sizeof *v);
}

const struct cj_value *cj_get(const struct cj_value *obj, const char *key)
{
    if (obj == NULL || obj->type != CJ_OBJECT)
        return NULL;
    for (size_t i = 0; i < obj->n; i++)
        if (obj->keys[i] != NULL && strcmp(obj->keys[i], key) == 0)
            return &obj->items[i];
    return NULL;
}

const char *cj_text(const struct cj_value *obj, const char *key, const char *fallback)
{
    const struct cj_value *v = cj_get(obj, key);

    if (v != NULL && (v->type == CJ_STRING || v->type == CJ_NUMBER))
        return v->text;
    if (v != NULL && v->type == CJ_BOOL)
        return v->boolean ? "true" : "false";
    return fallback;
}

bool cj_u64(const struct cj_value *obj, const char *key, uint64_t *out)
{
    const struct cj_value *v = cj_get(obj, key);
    uint64_t n;

    if (v == NULL || v->type != CJ_NUMBER || strnum_u64(v->text, strlen(v->text), &n) != 0)
        return false;
    *out = n;
    return true;
}

struct cj_value *cj_get_mut(struct cj_value *obj, const char *key)
{
    /* obj is the caller's to change, so its member is too (as strchr). */
    return (struct cj_value *)cj_get(obj, key);
}

/* ---- joining and writing ------------------------------------------------- */

int cj_array_take(struct cj_value *to, struct cj_value *from)
{
    struct cj_value *grown;

    if (to == NULL || from == NULL || to->type != CJ_ARRAY || from->type != CJ_ARRAY)
        return SMQ_E_INVALID_ARGUMENT;
    if (from->n == 0)
        return 0;
    grown = realloc(to->items, (to->n + from->n) * sizeof *grown);
    if (grown == NULL)
        return SMQ_E_NOMEM;
    /* A shallow move: the elements' strings and children change owner. */
    memcpy(grown + to->n, from->items, from->n * sizeof *grown);
    to->items = grown;
    to->n += from->n;
    free(from->items);
    from->items = NULL;
    from->n = 0;
    return 0;
}

static void write_string(FILE *out, const char *s, size_t len)
{
    fputc('"', out);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            fprintf(out, "\\%c", c);
        else if (c < 0x20)
            fprintf(out, "\\u%04x", c);
        else
            fputc(c, out);
    }
    fputc('"', out);
}

void cj_write(FILE *out, const struct cj_value *v)
{
    switch (v->type) {
    case CJ_NULL:
        fputs("null", out);
        break;
    case CJ_BOOL:
        fputs(v->boolean ? "true" : "false", out);
        break;
    case CJ_NUMBER:
        fputs(v->text, out);
        break;
    case CJ_STRING:
        write_string(out, v->text, v->len);
        break;
    case CJ_ARRAY:
    case CJ_OBJECT:
        fputc(v->type == CJ_ARRAY ? '[' : '{', out);
        for (size_t i = 0; i < v->n; i++) {
            if (i > 0)
                fputc(',', out);
            if (v->type == CJ_OBJECT) {
                write_string(out, v->keys[i], strlen(v->keys[i]));
                fputc(':', out);
            }
            cj_write(out, &v->items[i]);
        }
        fputc(v->type == CJ_ARRAY ? ']' : '}', out);
        break;
    }
}
