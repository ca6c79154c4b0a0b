/*
 * http_header.h — one request header as received, the form the HTTP glue
 * (httpd.h) hands on and the signature check (auth.h) and the
 * X-Forwarded-For rule (netaddr.h) read.  A leaf.
 */
#ifndef SMQD_HTTP_HEADER_H
#define SMQD_HTTP_HEADER_H

struct http_header {
    const char *name;      /* as received; matched case-insensitively */
    const char *value;
};

#endif
