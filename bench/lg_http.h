/*
 * lg_http.h — smqd-loadgen's HTTP/1.1 client wire format: one signed
 * request written into a caller's buffer with the headers the Python SDK
 * sends, an incremental response-head parser (status, Content-Length,
 * Connection: close) and the flat XML element scan used on MNS responses.
 */
#ifndef LG_HTTP_H
#define LG_HTTP_H

#include <stddef.h>
#include <time.h>

#include "lg_sign.h"

#define LG_CONTENT_TYPE "text/xml;charset=UTF-8"

struct lg_req_ctx {
    struct lg_signer *signer;
    const char *host_header;       /* "127.0.0.1:8080" */
    const char *access_key_id;
};

/* Writes a complete request (head + body) into buf.  Returns its length,
 * or 0 if it does not fit in cap or signing failed. */
size_t lg_build_request(const struct lg_req_ctx *rc, time_t now, char *buf, size_t cap,
                        const char *verb, const char *resource, size_t resource_len,
                        const char *body, size_t body_len);

struct lg_resp {
    size_t scanned;                /* bytes searched for the end of the head */
    size_t head_len;               /* 0 until the head is complete */
    size_t body_len;
    int status;
    int close;                     /* server said Connection: close */
};

void lg_resp_reset(struct lg_resp *r);
/* Feed the whole buffer received so far.  1 when head and body are complete
 * (the response is buf[0 .. head_len + body_len)), 0 when more is needed,
 * -1 when it is not an HTTP/1.x response with a Content-Length (1xx, 204
 * and 304 answers have no body and need none). */
int lg_resp_parse(struct lg_resp *r, const char *buf, size_t len);

/* Finds the next <tag>value</tag> in [p, end).  Sets *val and *val_len and
 * returns the position after the closing tag, or NULL when there is none. */
const char *lg_xml_next(const char *p, const char *end, const char *tag,
                        const char **val, size_t *val_len);
/* Number of <tag> elements in [p, end). */
int lg_xml_count(const char *p, const char *end, const char *tag);

#endif
