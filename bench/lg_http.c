/*
 * lg_http.c — HTTP/1.1 request writing, response-head parsing and flat XML
 * element extraction for smqd-loadgen (see lg_http.h).  No allocation.
 */
#define _GNU_SOURCE
#include "lg_http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

size_t lg_build_request(const struct lg_req_ctx *rc, time_t now, char *buf, size_t cap,
                        const char *verb, const char *resource, size_t resource_len,
                        const char *body, size_t body_len)
{
    const char *ctype = body_len > 0 ? LG_CONTENT_TYPE : "";
    const char *date = lg_signer_date(rc->signer, now);
    char sig[LG_SIG_B64_LEN + 1];
    if (lg_sign(rc->signer, verb, ctype, date, resource, resource_len, sig) != 0)
        return 0;
    int n = snprintf(buf, cap,
                     "%s %.*s HTTP/1.1\r\n"
                     "Host: %s\r\n"
                     "Accept-Encoding: identity\r\n"
                     "Connection: Keep-Alive\r\n"
                     "User-Agent: smqd-loadgen\r\n"
                     "Date: %s\r\n"
                     "x-mns-version: 2015-06-06\r\n"
                     "Authorization: MNS %s:%s\r\n"
                     "%s%s%s"
                     "Content-Length: %zu\r\n"
                     "\r\n",
                     verb, (int)resource_len, resource, rc->host_header, date,
                     rc->access_key_id, sig,
                     body_len > 0 ? "Content-Type: " : "", ctype, body_len > 0 ? "\r\n" : "",
                     body_len);
    if (n < 0 || (size_t)n + body_len > cap)
        return 0;
    if (body_len > 0)
        memcpy(buf + n, body, body_len);
    return (size_t)n + body_len;
}

void lg_resp_reset(struct lg_resp *r)
{
    memset(r, 0, sizeof *r);
}

/* Value of header `name` in the head [p, end), or NULL. */
static const char *header_value(const char *p, const char *end, const char *name, size_t *len)
{
    size_t nlen = strlen(name);
    while (p < end) {
        const char *eol = memmem(p, (size_t)(end - p), "\r\n", 2);
        if (eol == NULL)
            eol = end;
        if ((size_t)(eol - p) > nlen && p[nlen] == ':' && strncasecmp(p, name, nlen) == 0) {
            const char *v = p + nlen + 1;
            while (v < eol && (*v == ' ' || *v == '\t'))
                v++;
            const char *ve = eol;
            while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
                ve--;
            *len = (size_t)(ve - v);
            return v;
        }
        p = eol + 2;
    }
    return NULL;
}

static int parse_head(struct lg_resp *r, const char *buf)
{
    if (r->head_len < 12 || strncmp(buf, "HTTP/1.", 7) != 0 || buf[8] != ' ')
        return -1;
    char *num_end;
    long status = strtol(buf + 9, &num_end, 10);
    if (num_end != buf + 12 || status < 100 || status > 599)
        return -1;
    r->status = (int)status;
    const char *first_eol = memmem(buf, r->head_len, "\r\n", 2);
    const char *hp = first_eol + 2, *he = buf + r->head_len - 2;
    size_t vlen;
    const char *v = header_value(hp, he, "Connection", &vlen);
    r->close = v != NULL && vlen == 5 && strncasecmp(v, "close", 5) == 0;
    if (status < 200 || status == 204 || status == 304) {
        r->body_len = 0;                     /* never a body (RFC 9112 6.3) */
        return 0;
    }
    v = header_value(hp, he, "Content-Length", &vlen);
    if (v == NULL || vlen == 0 || vlen > 12)
        return -1;
    char tmp[16];
    memcpy(tmp, v, vlen);
    tmp[vlen] = '\0';
    unsigned long long cl = strtoull(tmp, &num_end, 10);
    if (*num_end != '\0')
        return -1;
    r->body_len = (size_t)cl;
    return 0;
}

int lg_resp_parse(struct lg_resp *r, const char *buf, size_t len)
{
    if (r->head_len == 0) {
        size_t from = r->scanned > 3 ? r->scanned - 3 : 0;
        const char *e = len > from ? memmem(buf + from, len - from, "\r\n\r\n", 4) : NULL;
        if (e == NULL) {
            r->scanned = len;
            return 0;
        }
        r->head_len = (size_t)(e - buf) + 4;
        if (parse_head(r, buf) != 0)
            return -1;
    }
    return len >= r->head_len + r->body_len ? 1 : 0;
}

const char *lg_xml_next(const char *p, const char *end, const char *tag,
                        const char **val, size_t *val_len)
{
    char open[64], close[64];
    int ol = snprintf(open, sizeof open, "<%s>", tag);
    int cl = snprintf(close, sizeof close, "</%s>", tag);
    if (ol <= 0 || cl <= 0 || (size_t)cl >= sizeof close || p >= end)
        return NULL;
    const char *s = memmem(p, (size_t)(end - p), open, (size_t)ol);
    if (s == NULL)
        return NULL;
    s += ol;
    const char *e = memmem(s, (size_t)(end - s), close, (size_t)cl);
    if (e == NULL)
        return NULL;
    *val = s;
    *val_len = (size_t)(e - s);
    return e + cl;
}

int lg_xml_count(const char *p, const char *end, const char *tag)
{
    const char *v;
    size_t vl;
    int n = 0;
    while ((p = lg_xml_next(p, end, tag, &v, &vl)) != NULL)
        n++;
    return n;
}
