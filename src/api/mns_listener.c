/*
 * mns_listener.c — owns the MNS listener (mns_listener.h): one request's
 * way from the HTTP glue through the API layer to the engine and back,
 * its request id, its log line and its counts.
 */
#include "smqd/mns_listener.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "smqd/clock.h"
#include "smqd/crypto.h"
#include "smqd/httpd.h"
#include "smqd/log.h"
#include "smqd/role.h"

/*
 * libmicrohttpd's per-connection memory pool (request line, headers, read
 * and write buffers).  Its default is 32 KiB, and 0.9.75 zeroes the whole
 * pool between two requests of a kept-alive connection plus half of it when
 * the read buffer moves.  16 KiB still holds HTTPD_MAX_HEADERS headers with
 * their bookkeeping (so a request with one more reaches our own "too many
 * headers" answer), and an SDK request needs under 1 KiB; bodies are
 * streamed through the read buffer, not held in the pool.  Longer header
 * sections get libmicrohttpd's 431.
 */
#define MNS_CONN_MEMORY (16 * 1024)

/* "access denied" lines written per second at most: every key holder can
 * make denied requests as fast as it likes, and the log must not become
 * theirs; the metric counts every one. */
#define DENIED_LINES_PER_S 10

struct mns_listener {
    struct httpd *http;
    struct mns_listener_opts opts;
    char id_prefix[13];          /* 12 hex digits, random per process */
    uint64_t id_counter;         /* atomic */
    pthread_mutex_t denied_lock; /* guards the three below */
    uint64_t denied_second;      /* monotonic second of the lines counted */
    unsigned denied_lines;       /* written in that second */
    uint64_t denied_unlogged;    /* beyond the cap since the last line */
    pthread_mutex_t attach_lock; /* guards the five below */
    pthread_cond_t idle;         /* in_flight fell to 0 */
    struct smq_engine_thread *thread; /* NULL while detached (a standby) */
    const struct handle_keys *handle_keys;
    const char *signing_cert_pem; /* the attached node's (§13.11) */
    int64_t in_flight;           /* requests holding engine and keys */
};

/* One request's state (the glue's per-request storage). */
struct mns_req {
    struct mns_listener *l;
    struct httpd_req *http;
    char request_id[25];
    bool counted;                /* in metrics since it reached the handler */
    bool attached;               /* holds the engine and keys until on_done */
    struct smq_engine_thread *thread;
    struct api_ctx api;          /* opts.api with the attached handle keys */
    struct api_call call;
    int status;
    const char *error_code;      /* for the log line; NULL on success */
};

static void next_request_id(struct mns_listener *l, char out[25])
{
    uint64_t n = __atomic_fetch_add(&l->id_counter, 1, __ATOMIC_RELAXED);
    snprintf(out, 25, "%s%012llX", l->id_prefix, (unsigned long long)(n & 0xFFFFFFFFFFFFull));
}

/* The request as the API layer reads it; auth is filled to point at it. */
static struct api_request api_request_of(const struct mns_listener *l, struct httpd_req *r,
                                         struct auth_request *auth)
{
    struct api_request req;

    auth->method = httpd_req_method(r);
    auth->resource = httpd_req_target(r);
    auth->headers = httpd_req_headers(r, &auth->n_headers);
    req.method = auth->method;
    req.target = auth->resource;
    req.host = httpd_req_host(r);
    req.scheme = l->opts.url_scheme != NULL ? l->opts.url_scheme : "http";
    req.body = httpd_req_body(r, &req.body_len);
    req.auth = auth;
    return req;
}

/* ---- answers ---------------------------------------------------------------- */

static void respond(struct mns_req *d, struct api_response *resp)
{
    struct http_header extra[4];
    size_t n = 0;

    if (buf_failed(&resp->body)) {
        resp->status = 500;             /* could not build the document */
        d->error_code = "InternalError";
        buf_free(&resp->body);
        buf_init(&resp->body);
    }
    extra[n++] = (struct http_header){"x-mns-request-id", d->request_id};
    extra[n++] = (struct http_header){"x-mns-version", AUTH_MNS_VERSION};
    if (resp->location[0] != '\0')
        extra[n++] = (struct http_header){"Location", resp->location};
    /* 429 is only QpsLimitExceeded; a bucket refills within a second. */
    if (resp->status == 429)
        extra[n++] = (struct http_header){"Retry-After", "1"};
    d->status = resp->status;
    httpd_respond(d->http, resp->status, &resp->body,
                  resp->content_type != NULL ? resp->content_type : "text/xml;charset=utf-8",
                  extra, n);
    buf_free(&resp->body);
}

static void respond_error(struct mns_req *d, const struct api_request *req,
                          const struct smq_errinfo *ei)
{
    struct api_response resp = {0};

    buf_init(&resp.body);
    api_render_error(req, ei, d->request_id, &resp);
    d->error_code = errors_info(ei->err)->code;
    respond(d, &resp);
}

/* ---- the request's way --------------------------------------------------------- */

/*
 * The request-rate limits (ratelimit.h), checked only once a request is
 * authenticated, routed and parsed: then its access key and queue are known
 * to be real names, a malformed request never uses up a client's budget,
 * and an excess request is refused before the engine (the serialised part,
 * with the fsync) sees it.  Its parsing has been paid for by then; the
 * limits protect the engine and the disk, not the HTTP threads.
 */
static int check_limits(struct mns_req *d, struct smq_errinfo *ei)
{
    const struct mns_listener_opts *o = &d->l->opts;
    enum smq_limit_scope refused = ratelimit_take(o->ratelimit, d->call.access_key_id,
                                                  d->call.op.queue);

    if (refused == SMQ_LIMIT_NONE)
        return 0;
    metrics_throttled(o->metrics, refused);
    return errors_set(ei, SMQ_E_QPS_LIMIT_EXCEEDED,
                      "The request rate of this %s exceeds the configured limit; retry later.",
                      refused == SMQ_LIMIT_QUEUE ? "queue" : "access key");
}

/* Engine thread (or the syncer's): the operation is finished and durable. */
static void on_op_done(struct smq_op *op, void *arg)
{
    struct mns_req *d = arg;

    (void)op;
    httpd_resume(d->http);
}

/* Engine thread, about a parked long poll. */
static bool on_client_gone(struct smq_op *op, void *arg)
{
    struct mns_req *d = arg;

    (void)op;
    return httpd_client_gone(d->http);
}

/* Who asked, for a log line: "client=A" or "client=A proxy=P". */
static void who(const struct mns_req *d, char *out, size_t size)
{
    const char *proxy = httpd_req_proxy(d->http);

    snprintf(out, size, "client=%s%s%s", httpd_req_client(d->http), proxy ? " proxy=" : "",
             proxy ? proxy : "");
}

/* Whether this denial gets its line; *unlogged is set to the denials
 * since the last line that went without one. */
static bool denied_line_due(struct mns_listener *l, uint64_t *unlogged)
{
    uint64_t second = clock_mono_us() / 1000000;
    bool due;

    pthread_mutex_lock(&l->denied_lock);
    if (second != l->denied_second) {
        l->denied_second = second;
        l->denied_lines = 0;
    }
    due = l->denied_lines < DENIED_LINES_PER_S;
    *unlogged = due ? l->denied_unlogged : 0;
    if (due) {
        l->denied_lines++;
        l->denied_unlogged = 0;
    } else {
        l->denied_unlogged++;
    }
    pthread_mutex_unlock(&l->denied_lock);
    return due;
}

/* A key's grants refused the request (api.c): operators see who tried
 * what, whatever log_requests says; the secret is never known here. */
static void note_denied(const struct mns_req *d, const struct smq_errinfo *ei)
{
    uint64_t unlogged;
    char client[2 * NETADDR_TEXT_MAX + 16];

    metrics_access_denied(d->l->opts.metrics, d->call.access_key_id, d->call.action);
    if (!denied_line_due(d->l, &unlogged))
        return;
    if (unlogged > 0)
        SMQ_WARN("access denied: %llu more denial(s) before this one were not logged (at most "
                 "%d lines a second; smqd_access_denied_total counts them all)",
                 (unsigned long long)unlogged, DENIED_LINES_PER_S);
    who(d, client, sizeof client);
    SMQ_WARN("access denied id=%s access_key=%s action=%s queue=%s %s: %s", d->request_id,
             d->call.access_key_id, mns_action_name(d->call.action),
             d->call.op.queue[0] ? d->call.op.queue : "-", client, errors_message(ei));
}

/* The active/standby gate: checked on every request against the lease's
 * proven-until time, so a node that cannot prove its lease answers 503 even
 * while its main thread is stuck. */
static int gate(struct mns_req *d, struct smq_errinfo *ei)
{
    struct mns_listener *l = d->l;

    /* Without a role the engine is the one given at start, for good: no
     * lock and no count on every request. */
    if (l->opts.role == NULL) {
        d->thread = l->opts.thread;
        d->api.handle_keys = l->opts.api.handle_keys;
        return 0;
    }
    if (role_serving(l->opts.role, clock_mono_us())) {
        pthread_mutex_lock(&l->attach_lock);
        if (l->thread != NULL) {
            d->attached = true;
            d->thread = l->thread;
            d->api.handle_keys = l->handle_keys;
            d->api.signing_cert_pem = l->signing_cert_pem;
            l->in_flight++;
        }
        pthread_mutex_unlock(&l->attach_lock);
        if (d->attached)
            return 0;
    }
    return errors_set(ei, SMQ_E_SERVICE_UNAVAILABLE,
                      "This node is a standby (or lost its lease); "
                      "retry against the active node.");
}

/* The request no longer uses the engine or the keys: once its answer is
 * rendered (on_resume), or at the latest when it is done (on_done). */
static void release_engine(struct mns_req *d)
{
    struct mns_listener *l = d->l;

    if (!d->attached)
        return;
    d->attached = false;
    pthread_mutex_lock(&l->attach_lock);
    if (--l->in_flight == 0)
        pthread_cond_broadcast(&l->idle);
    pthread_mutex_unlock(&l->attach_lock);
}

/* The push signing certificate's GET or HEAD (§13.11): answered here,
 * past the standby gate but without authentication, grants or rate
 * limits (§12.1).  False for any other request. */
static bool serve_signing_cert(struct mns_req *d, const struct api_request *req)
{
    struct api_response resp = {0};
    struct smq_errinfo ei = {0, ""};

    if (!api_signing_cert_request(req))
        return false;
    buf_init(&resp.body);
    if (api_signing_cert(&d->api, &resp, &ei) == 0) {
        respond(d, &resp);
    } else {
        buf_free(&resp.body);
        respond_error(d, req, &ei);
    }
    release_engine(d);
    return true;
}

static void on_request(void *arg, struct httpd_req *r)
{
    struct mns_listener *l = arg;
    struct mns_req *d = httpd_req_data(r);
    struct auth_request auth;
    struct api_request req = api_request_of(l, r, &auth);
    struct smq_errinfo ei = {0, ""};

    d->l = l;
    d->http = r;
    d->attached = false;
    d->api = l->opts.api;
    next_request_id(l, d->request_id);
    api_call_init(&d->call);
    d->counted = true;
    metrics_request_started(l->opts.metrics);
    if (httpd_req_problem(r, &ei) == 0 && gate(d, &ei) == 0) {
        if (serve_signing_cert(d, &req))
            return;
        if (api_prepare(&d->api, &req, &d->call, &ei) == 0)
            check_limits(d, &ei);
    }
    if (ei.err == SMQ_E_ACCESS_DENIED && d->call.access_key_id != NULL)
        note_denied(d, &ei);
    if (ei.err != 0) {
        respond_error(d, &req, &ei);
        release_engine(d);
        return;
    }
    d->call.op.done = on_op_done;
    d->call.op.done_arg = d;
    d->call.op.client_gone = on_client_gone;
    memcpy(d->call.op.request_id, d->request_id, sizeof d->call.op.request_id);
    httpd_suspend(r, 0);
    engine_thread_submit(d->thread, &d->call.op);
}

static void on_resume(void *arg, struct httpd_req *r, bool timed_out)
{
    struct mns_listener *l = arg;
    struct mns_req *d = httpd_req_data(r);
    struct auth_request auth;
    struct api_request req = api_request_of(l, r, &auth);
    struct api_response resp = {0};

    (void)timed_out;             /* MNS requests wait for the engine without a deadline */
    buf_init(&resp.body);
    api_render(&d->api, &req, &d->call, d->request_id, &resp);
    if (d->call.op.result.err != 0 && resp.status >= 400)
        d->error_code = errors_info(d->call.op.result.err)->code;
    else if (resp.status == 404)
        d->error_code = "MessageNotExist";      /* BatchDelete partial failure */
    respond(d, &resp);
    /* Rendered: the keys and the engine are no longer needed, so a node
     * that stops serving need not wait for a slow client to read this. */
    release_engine(d);
}

/*
 * What was asked, for a log line: the method and the path, without the
 * query (the resource as MNS names it; nothing secret is in either, and
 * the signature travels in a header).  The path is the client's: bytes
 * outside printable ASCII, blanks, quotes and backslashes are written %XX
 * so that a line cannot be forged or broken, and it is cut at 160 bytes.
 */
static void what(const struct mns_req *d, char *out, size_t size)
{
    const char *t = httpd_req_target(d->http);
    int n = snprintf(out, size, "method=%s resource=", httpd_req_method(d->http));
    size_t used = n > 0 && (size_t)n < size ? (size_t)n : 0;

    for (size_t i = 0; t[i] != '\0' && t[i] != '?' && i < 160 && used + 4 < size; i++) {
        unsigned char c = (unsigned char)t[i];
        if (c > ' ' && c < 0x7f && c != '"' && c != '\\')
            out[used++] = (char)c;
        else
            used += (size_t)snprintf(out + used, size - used, "%%%02X", c);
    }
    out[used] = '\0';
}

static void log_request(const struct mns_req *d, uint64_t latency_us)
{
    const struct smq_op *op = &d->call.op;
    char client[2 * NETADDR_TEXT_MAX + 16], asked[256];

    who(d, client, sizeof client);
    what(d, asked, sizeof asked);
    SMQ_INFO("request id=%s access_key=%s action=%s queue=%s status=%d code=%s latency_ms=%.3f "
             "%s %s", d->request_id, d->call.access_key_id ? d->call.access_key_id : "-",
             mns_action_name(d->call.action), op->queue[0] ? op->queue : "-", d->status,
             d->error_code ? d->error_code : "-", (double)latency_us / 1000.0, client, asked);
}

/* A request whose headers arrived but that never reached the handler (its
 * client went away during the body) is counted with no status, as action
 * "-", and logged under an id of its own like any other. */
static void on_done(void *arg, struct httpd_req *r)
{
    struct mns_listener *l = arg;
    struct mns_req *d = httpd_req_data(r);
    uint64_t latency_us = clock_mono_us() - httpd_req_start_us(r);

    if (!httpd_req_started(r))
        return;
    d->http = r;                 /* unset when the handler never saw it */
    release_engine(d);
    if (!d->counted) {
        metrics_request_started(l->opts.metrics);
        next_request_id(l, d->request_id);
    }
    metrics_request_done(l->opts.metrics, d->call.action, d->status, latency_us);
    if (l->opts.log_requests)
        log_request(d, latency_us);
    if (d->counted)
        api_call_free(&d->call);
}

int mns_listener_start(const struct mns_listener_opts *opts, struct mns_listener **out,
                       char *err, size_t err_size)
{
    struct mns_listener *l = calloc(1, sizeof *l);
    struct httpd_opts hopts = {.name = "", .host = opts->host, .port = opts->port,
                               .threads = opts->threads,
                               .max_connections = opts->max_connections,
                               .max_connections_per_ip = opts->max_connections_per_ip,
                               .trusted_proxies = opts->trusted_proxies,
                               .metrics = opts->metrics,
                               .tls = opts->tls,
                               .idle_timeout_s = opts->idle_timeout_s,
                               .request_timeout_s = opts->request_timeout_s,
                               .max_body_bytes = opts->max_body_bytes,
                               .conn_memory = MNS_CONN_MEMORY,
                               .data_size = sizeof(struct mns_req),
                               .handler = {on_request, on_resume, on_done}};
    unsigned char rnd[6];
    int rc = 0;

    *out = NULL;
    if (l == NULL || pthread_mutex_init(&l->denied_lock, NULL) != 0) {
        snprintf(err, err_size, "out of memory");
        free(l);
        return SMQ_E_NOMEM;
    }
    pthread_mutex_init(&l->attach_lock, NULL);
    pthread_cond_init(&l->idle, NULL);
    l->opts = *opts;
    l->thread = opts->thread;
    l->handle_keys = opts->api.handle_keys;
    if (crypto_random(rnd, sizeof rnd) != 0) {
        snprintf(err, err_size, "no random bytes for request ids");
        rc = SMQ_E_INTERNAL;
        goto out;
    }
    snprintf(l->id_prefix, sizeof l->id_prefix, "%02X%02X%02X%02X%02X%02X",
             rnd[0], rnd[1], rnd[2], rnd[3], rnd[4], rnd[5]);
    hopts.arg = l;
    rc = httpd_start(&hopts, &l->http, err, err_size);
out:
    if (rc != 0) {
        pthread_mutex_destroy(&l->denied_lock);
        pthread_mutex_destroy(&l->attach_lock);
        pthread_cond_destroy(&l->idle);
        free(l);
        return rc;
    }
    *out = l;
    return 0;
}

uint16_t mns_listener_port(const struct mns_listener *l)
{
    return httpd_port(l->http);
}

int64_t mns_listener_active_requests(struct mns_listener *l)
{
    return l != NULL ? httpd_active_requests(l->http) : 0;
}

void mns_listener_quiesce(struct mns_listener *l)
{
    if (l != NULL)
        httpd_quiesce(l->http);
}

void mns_listener_stop(struct mns_listener *l)
{
    if (l == NULL)
        return;
    httpd_stop(l->http);
    pthread_mutex_destroy(&l->denied_lock);
    pthread_mutex_destroy(&l->attach_lock);
    pthread_cond_destroy(&l->idle);
    free(l);
}

void mns_listener_attach(struct mns_listener *l, struct smq_engine_thread *thread,
                         const struct handle_keys *keys)
{
    pthread_mutex_lock(&l->attach_lock);
    l->thread = thread;
    l->handle_keys = keys;
    pthread_mutex_unlock(&l->attach_lock);
}

void mns_listener_attach_signing_cert(struct mns_listener *l, const char *pem)
{
    pthread_mutex_lock(&l->attach_lock);
    l->signing_cert_pem = pem;
    pthread_mutex_unlock(&l->attach_lock);
}

void mns_listener_detach(struct mns_listener *l)
{
    if (l == NULL)
        return;
    pthread_mutex_lock(&l->attach_lock);
    l->thread = NULL;
    l->handle_keys = NULL;
    l->signing_cert_pem = NULL;
    while (l->in_flight > 0)
        pthread_cond_wait(&l->idle, &l->attach_lock);
    pthread_mutex_unlock(&l->attach_lock);
}
