/*
 * ctl_http.h — smqctl's HTTP client for the admin listener (libcurl): one
 * request, the whole answer in memory (bounded), a Bearer token if set.
 */
#ifndef SMQCTL_HTTP_H
#define SMQCTL_HTTP_H

#include <stddef.h>

struct ctl_target {
    const char *base;            /* e.g. http://127.0.0.1:8081, no trailing slash */
    const char *token;           /* NULL = none */
};

struct ctl_resp {
    long status;
    char *body;                  /* NUL-terminated; may be "" */
    size_t len;
};

/* Call once before any request (libcurl global init); 0 or SMQ_E_INTERNAL. */
int ctl_http_init(void);
void ctl_http_cleanup(void);

/* method GET, POST or PUT; path_query starts with '/'.  0 with out filled
 * (any HTTP status), or SMQ_E_INTERNAL with a reason in err (connection
 * failed...). */
int ctl_http_request(const struct ctl_target *t, const char *method, const char *path_query,
                     struct ctl_resp *out, char *err, size_t err_size);
void ctl_resp_free(struct ctl_resp *r);

/* Percent-encodes s for a path segment or a query value; free() it.  NULL
 * on out of memory. */
char *ctl_http_escape(const char *s);

#endif
