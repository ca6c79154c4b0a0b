/*
 * http.h — the HTTP front end on libmicrohttpd.
 *
 * Worker threads (a poll(2) thread pool) read requests, capture the raw
 * request target for signing, enforce the body cap before buffering, and
 * hand the request to the API layer.  A request that needs the engine
 * suspends its connection (no thread is held while it waits: long polls
 * park for free) and is resumed by the engine thread once its operation is
 * committed.  Every response carries x-mns-request-id; every XML response
 * Content-Type text/xml;charset=utf-8.  One log line per request, counted
 * in opts.metrics; a valid request over a limit of opts.ratelimit is
 * answered 429 QpsLimitExceeded and never reaches the engine.
 * Only http.c includes microhttpd.h.
 */
#ifndef SMQD_HTTP_H
#define SMQD_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "smqd/api.h"
#include "smqd/metrics.h"
#include "smqd/ratelimit.h"
#include "smqd/server.h"

struct http_opts {
    const char *host;            /* IPv4/IPv6 literal or "localhost" */
    uint16_t port;               /* 0 = any free port */
    int threads;
    int max_connections;
    int idle_timeout_s;          /* a connection silent this long is closed */
    int request_timeout_s;       /* a request body still arriving after this is dropped */
    size_t max_body_bytes;
    bool log_requests;
    struct api_ctx api;
    struct smq_server *engine;
    struct smq_metrics *metrics;       /* borrowed; NULL = nothing counted */
    struct smq_ratelimit *ratelimit;   /* borrowed; NULL = no request-rate limits */
};

struct smq_http;

/* Binds and starts serving.  0, or -1 with a reason in err. */
int http_start(const struct http_opts *opts, struct smq_http **out, char *err, size_t err_size);
/* The bound port (the real one when 0 was asked for). */
uint16_t http_port(const struct smq_http *h);
/* Requests begun (request line read) and not yet completed. */
int64_t http_active_requests(struct smq_http *h);
/* Stops accepting new connections (existing ones keep working). */
void http_quiesce(struct smq_http *h);
/* Closes every connection and frees h.  The engine must already be stopped,
 * so that no connection is still suspended. */
void http_stop(struct smq_http *h);

#endif
