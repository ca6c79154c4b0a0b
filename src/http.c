/*
 * http.c — owns the libmicrohttpd daemon and the life of one HTTP request:
 * raw target capture, body buffering under a cap, suspend while the engine
 * works, the response with its mandatory headers, and the request log line.
 * It also counts each request in metrics.h and asks ratelimit.h whether a
 * valid request may go on to the engine.
 */
#define _GNU_SOURCE       /* POLLRDHUP */
#include "smqd/http.h"

#include <microhttpd.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "smqd/clock.h"
#include "smqd/crypto.h"
#include "smqd/log.h"
#include "smqd/netaddr.h"
#include "smqd/reaper.h"
#include "smqd/strnum.h"

#define MAX_HEADERS 128

/*
 * libmicrohttpd's per-connection memory pool (request line, headers, read
 * and write buffers).  Its default is 32 KiB, and 0.9.75 zeroes the whole
 * pool between two requests of a kept-alive connection plus half of it when
 * the read buffer moves: about 48 KB of memset per request, the largest
 * single item in a profile of SendMessage.  16 KiB still holds MAX_HEADERS
 * headers with their bookkeeping (so a request with 129 headers reaches our
 * own "too many headers" answer, tests/integration/test_hostile.sh), and an
 * SDK request needs under 1 KiB; bodies are streamed through the read
 * buffer, not held in the pool.  Longer header sections get libmicrohttpd's
 * 431, as they did at 32 KiB beyond that size.
 */
#define HTTP_CONN_MEMORY (16 * 1024)

enum req_state { REQ_READING = 0, REQ_IN_ENGINE, REQ_DONE };

struct smq_http {
    struct MHD_Daemon *daemon;
    struct http_opts opts;
    uint16_t port;
    char id_prefix[13];          /* 12 hex digits, random per process */
    uint64_t id_counter;         /* atomic */
    int64_t active;              /* atomic: requests begun and not yet completed */
    struct conn_reaper *reaper;  /* bounds slow requests (reaper.h) */
};

struct http_req {
    struct smq_http *http;
    struct MHD_Connection *conn;
    char *target;                /* raw request target, as received */
    char method[16];
    char request_id[25];
    uint64_t start_us;
    struct smq_buf body;
    bool started, too_large;
    bool nul_in_target;          /* the request line had a NUL inside the target */
    char local_host[64];         /* the address the client reached, when it sent no Host */
    int fd;                      /* the connection's socket, for on_client_gone */
    int state;                   /* enum req_state; crosses threads (atomic) */
    struct api_call call;
    int status;
    const char *error_code;      /* for the log line; NULL on success */
};

/* ---- request ids and the request record ------------------------------------ */

static void next_request_id(struct smq_http *h, char out[25])
{
    uint64_t n = __atomic_fetch_add(&h->id_counter, 1, __ATOMIC_RELAXED);
    snprintf(out, 25, "%s%012llX", h->id_prefix, (unsigned long long)(n & 0xFFFFFFFFFFFFull));
}

/*
 * libmicrohttpd 0.9.75 cuts the request line in place: the target handed to
 * on_uri ends where it wrote a NUL over the space before "HTTP/1.x".  A
 * client NUL inside the target ends the string earlier, and what follows it
 * is then not the version.  (The line is still in libmicrohttpd's read
 * buffer, so the bytes after the terminator are the rest of that line.)
 */
static bool target_has_nul(const char *uri)
{
    return strncmp(uri + strlen(uri) + 1, "HTTP/", 5) != 0;
}

/*
 * The same for a header value: libmicrohttpd 0.9.75 ends a header line by
 * writing NULs, in place, over its line end and over trailing blanks, so
 * after the value's terminator only blanks or line ends may follow;
 * anything else is what a client NUL cut off.  With a bare LF as the line
 * end (RFC 9112 §2.2 lets a server accept it), the LF itself becomes the
 * terminator and the next header's name follows at once: a value whose
 * terminator runs, over line-end bytes only, into the next header's name
 * (`next`) ended its line cleanly.  Otherwise the first rule decides (also
 * for a folded header, whose value libmicrohttpd copies elsewhere).
 */
static bool line_end_byte(char c)
{
    return c == '\0' || c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static bool value_has_nul(const char *value, const char *next)
{
    const char *p = value + strlen(value) + 1;
    const char *q = p;

    if (next != NULL && next >= p) {
        while (q < next && line_end_byte(*q))
            q++;
        if (q == next)
            return false;
    }
    while (*p == ' ' || *p == '\t')
        p++;
    return !(*p == '\0' || *p == '\r' || *p == '\n');
}

/* libmicrohttpd calls this with the raw request target before anything else;
 * its return value becomes the request's context. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
    struct smq_http *h = cls;
    struct http_req *r = calloc(1, sizeof *r);

    if (r == NULL)
        return NULL;
    r->http = h;
    r->fd = conn_reaper_fd(conn);   /* before anything can answer: make_api_request uses it */
    __atomic_fetch_add(&h->active, 1, __ATOMIC_RELAXED);
    r->target = strdup(uri ? uri : "");
    r->nul_in_target = uri != NULL && target_has_nul(uri);
    conn_reaper_phase(h->reaper, conn, PHASE_HEADERS);
    r->start_us = clock_mono_us();
    buf_init(&r->body);
    api_call_init(&r->call);
    next_request_id(h, r->request_id);
    return r;
}

static void log_request(const struct http_req *r)
{
    const struct smq_op *op = &r->call.op;

    SMQ_INFO("request id=%s action=%s queue=%s status=%d code=%s latency_ms=%.3f",
             r->request_id, mns_action_name(r->call.action),
             op->queue[0] ? op->queue : "-", r->status,
             r->error_code ? r->error_code : "-",
             (double)(clock_mono_us() - r->start_us) / 1000.0);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct http_req *r = *req_cls;

    (void)cls, (void)toe;
    if (r == NULL)
        return;
    conn_reaper_phase(r->http->reaper, conn, PHASE_IDLE);
    if (r->started)
        metrics_request_done(r->http->opts.metrics, r->call.action, r->status,
                             clock_mono_us() - r->start_us);
    if (r->http->opts.log_requests && r->started)
        log_request(r);
    api_call_free(&r->call);
    buf_free(&r->body);
    free(r->target);
    __atomic_fetch_sub(&r->http->active, 1, __ATOMIC_RELAXED);
    free(r);
    *req_cls = NULL;
}

/* ---- responses -------------------------------------------------------------- */

static enum MHD_Result send_response(struct http_req *r, struct api_response *resp)
{
    size_t len = 0;
    char *data = buf_failed(&resp->body) ? NULL : buf_take(&resp->body, &len);
    struct MHD_Response *mr;
    enum MHD_Result ret;

    if (buf_failed(&resp->body)) {
        resp->status = 500;             /* could not build the document */
        r->error_code = "InternalError";
    }
    mr = (data != NULL && len > 0)
             ? MHD_create_response_from_buffer(len, data, MHD_RESPMEM_MUST_FREE)
             : MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    if (mr == NULL) {
        free(data);
        return MHD_NO;
    }
    if (len == 0)
        free(data);
    MHD_add_response_header(mr, "x-mns-request-id", r->request_id);
    MHD_add_response_header(mr, "x-mns-version", AUTH_MNS_VERSION);
    if (len > 0)
        MHD_add_response_header(mr, "Content-Type", "text/xml;charset=utf-8");
    if (resp->location[0] != '\0')
        MHD_add_response_header(mr, "Location", resp->location);
    /* 429 is only QpsLimitExceeded; a bucket refills within a second. */
    if (resp->status == 429)
        MHD_add_response_header(mr, "Retry-After", "1");
    r->status = resp->status;
    ret = MHD_queue_response(r->conn, (unsigned int)resp->status, mr);
    MHD_destroy_response(mr);
    return ret;
}

static struct api_request make_api_request(struct http_req *r, struct auth_request *auth)
{
    const char *host = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Host");
    struct api_request req;

    /* Only HTTP/1.0 may omit Host; the URLs in answers then name the address
     * the client reached (the configured one may be a wildcard). */
    if (host == NULL)
        host = netaddr_local(r->fd, r->local_host, sizeof r->local_host) == 0 ? r->local_host
                                                                              : "";
    req = (struct api_request){r->method, r->target, host, r->body.data, r->body.len, auth};
    if (req.body == NULL)
        req.body = "";
    return req;
}

static enum MHD_Result send_error(struct http_req *r, const struct api_request *req,
                                  const struct smq_errinfo *ei)
{
    struct api_response resp = {0};
    enum MHD_Result ret;

    buf_init(&resp.body);
    api_render_error(req, ei, r->request_id, &resp);
    r->error_code = errors_info(ei->err)->code;
    ret = send_response(r, &resp);
    buf_free(&resp.body);
    return ret;
}

/* ---- headers for signing ------------------------------------------------------- */

struct header_vec {
    struct auth_header items[MAX_HEADERS];
    size_t n;
    bool overflow;
    bool nul;                    /* a name or value holds a NUL byte */
    const char *last_value;      /* the value seen last, checked against the next name */
};

static enum MHD_Result collect_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                      size_t key_size, const char *value, size_t value_size)
{
    struct header_vec *v = cls;

    (void)kind;
    /* libmicrohttpd hands values on as C strings: one with a NUL inside
     * would be read only up to it (RFC 9110 §5.5 says reject it).  Where a
     * value's line ended shows only once the next header's name is known. */
    if (v->last_value != NULL && value_has_nul(v->last_value, key))
        v->nul = true;
    v->last_value = value;
    if (strlen(key) != key_size || (value != NULL && strlen(value) != value_size))
        v->nul = true;
    if (v->n == MAX_HEADERS) {
        v->overflow = true;
        return MHD_NO;
    }
    v->items[v->n].name = key;
    v->items[v->n].value = value ? value : "";
    v->n++;
    return MHD_YES;
}

/* ---- the request path ------------------------------------------------------------- */

/* Called on the engine thread while the connection is suspended: the socket
 * is then untouched by libmicrohttpd, so asking the kernel about it is safe.
 * A FIN (also a half-close: libmicrohttpd ends such a connection too), a
 * hang-up or a reset means nobody will read the answer.  POLLRDHUP sees the
 * FIN even behind bytes the client sent and nobody read yet (a stray CRLF, a
 * pipelined request), where a peek at the data would only see those bytes. */
static bool on_client_gone(struct smq_op *op, void *arg)
{
    struct http_req *r = arg;
    struct pollfd p;

    (void)op;
    if (r->fd < 0)
        return false;
    p.fd = r->fd;
    p.events = POLLRDHUP;
    p.revents = 0;
    return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

static void on_op_done(struct smq_op *op, void *arg)
{
    struct http_req *r = arg;

    (void)op;
    __atomic_store_n(&r->state, REQ_DONE, __ATOMIC_RELEASE);
    MHD_resume_connection(r->conn);
}

/* The request's headers, for signing and for header-driven options
 * (ListQueue's x-mns-* headers are read again when rendering). */
static void collect_headers(struct http_req *r, struct header_vec *hv, struct auth_request *auth)
{
    hv->n = 0;
    hv->overflow = false;
    hv->nul = false;
    hv->last_value = NULL;
    MHD_get_connection_values_n(r->conn, MHD_HEADER_KIND, collect_header, hv);
    if (hv->last_value != NULL && value_has_nul(hv->last_value, NULL))
        hv->nul = true;
    auth->method = r->method;
    auth->resource = r->target;
    auth->headers = hv->items;
    auth->n_headers = hv->n;
}

static enum MHD_Result render_done(struct http_req *r)
{
    struct header_vec hv;
    struct auth_request auth;
    struct api_request req;
    struct api_response resp = {0};
    enum MHD_Result ret;

    collect_headers(r, &hv, &auth);
    req = make_api_request(r, &auth);
    buf_init(&resp.body);
    api_render(&r->http->opts.api, &req, &r->call, r->request_id, &resp);
    if (r->call.op.result.err != 0 && resp.status >= 400)
        r->error_code = errors_info(r->call.op.result.err)->code;
    else if (resp.status == 404)
        r->error_code = "MessageNotExist";      /* BatchDelete partial failure */
    ret = send_response(r, &resp);
    buf_free(&resp.body);
    return ret;
}

/*
 * The request-rate limits (ratelimit.h), checked only once a request is
 * authenticated, routed and parsed: then its access key and queue are known
 * to be real names, a malformed request never uses up a client's budget,
 * and an excess request is refused before the engine (the serialised part,
 * with the fsync) sees it.  Its parsing has been paid for by then; the
 * limits protect the engine and the disk, not the HTTP threads.
 */
static void check_limits(struct http_req *r, struct smq_errinfo *ei)
{
    enum smq_limit_scope refused = ratelimit_take(r->http->opts.ratelimit,
                                                  r->call.access_key_id, r->call.op.queue);

    if (refused == SMQ_LIMIT_NONE)
        return;
    metrics_throttled(r->http->opts.metrics, refused);
    errors_set(ei, SMQ_E_QPS_LIMIT_EXCEEDED,
               "The request rate of this %s exceeds the configured limit; retry later.",
               refused == SMQ_LIMIT_QUEUE ? "queue" : "access key");
}

static enum MHD_Result process(struct http_req *r)
{
    struct header_vec hv;
    struct auth_request auth;
    struct api_request req;
    struct smq_errinfo ei = {0, ""};

    conn_reaper_phase(r->http->reaper, r->conn, PHASE_WORKING);
    collect_headers(r, &hv, &auth);
    req = make_api_request(r, &auth);
    if (hv.overflow)
        errors_set(&ei, SMQ_E_INVALID_ARGUMENT, "Too many request headers (at most %d).", MAX_HEADERS);
    else if (hv.nul)
        errors_set(&ei, SMQ_E_INVALID_ARGUMENT, "A request header contains a NUL byte.");
    else if (r->nul_in_target)
        errors_set(&ei, SMQ_E_INVALID_REQUEST_URL, "The request target contains a NUL byte.");
    else if (r->too_large)
        errors_set(&ei, SMQ_E_REQUEST_TOO_LARGE, "The request body is larger than %zu bytes.",
                   r->http->opts.max_body_bytes);
    else
        api_prepare(&r->http->opts.api, &req, &r->call, &ei);
    if (ei.err == 0)
        check_limits(r, &ei);
    if (ei.err != 0)
        return send_error(r, &req, &ei);
    r->call.op.done = on_op_done;
    r->call.op.done_arg = r;
    r->call.op.client_gone = on_client_gone;
    memcpy(r->call.op.request_id, r->request_id, sizeof r->call.op.request_id);
    __atomic_store_n(&r->state, REQ_IN_ENGINE, __ATOMIC_RELEASE);
    MHD_suspend_connection(r->conn);
    server_submit(r->http->opts.engine, &r->call.op);
    return MHD_YES;
}

/* First call for a request: refuse an announced oversize body before reading it. */
static enum MHD_Result start_request(struct http_req *r, struct MHD_Connection *conn,
                                     const char *method)
{
    const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length");
    uint64_t announced = 0;

    r->started = true;
    metrics_request_started(r->http->opts.metrics);
    r->conn = conn;
    conn_reaper_phase(r->http->reaper, conn, PHASE_BODY);
    snprintf(r->method, sizeof r->method, "%s", method);
    /* A malformed length is libmicrohttpd's to refuse (it frames the body);
     * digits beyond 64 bits are just too large. */
    if (cl != NULL && cl[0] != '-' && strnum_is_integer(cl, strlen(cl))
        && (strnum_u64(cl, strlen(cl), &announced) != 0
            || announced > r->http->opts.max_body_bytes)) {
        r->too_large = true;
        return process(r);              /* answered now; the body is never read */
    }
    return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **req_cls)
{
    struct http_req *r = *req_cls;

    (void)cls, (void)url, (void)version;
    if (r == NULL || r->target == NULL)
        return MHD_NO;                  /* out of memory at on_uri: drop the connection */
    if (!r->started)
        return start_request(r, conn, method);
    if (*upload_data_size > 0) {
        /* A body trickling in byte by byte keeps the idle timer happy; bound
         * the whole upload so one client cannot hold a connection forever. */
        if (clock_mono_us() - r->start_us > (uint64_t)r->http->opts.request_timeout_s * 1000000u)
            return MHD_NO;
        if (r->body.len + *upload_data_size > r->http->opts.max_body_bytes)
            r->too_large = true;        /* keep reading (discarding) to answer cleanly */
        else
            buf_append(&r->body, upload_data, *upload_data_size);
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (__atomic_load_n(&r->state, __ATOMIC_ACQUIRE) == REQ_DONE)
        return render_done(r);
    if (buf_failed(&r->body))
        return MHD_NO;
    return process(r);
}

/* ---- daemon ----------------------------------------------------------------------------- */


int http_start(const struct http_opts *opts, struct smq_http **out, char *err, size_t err_size)
{
    struct smq_http *h = calloc(1, sizeof *h);
    struct sockaddr_storage ss;
    unsigned char rnd[6];
    /* poll(), not epoll: with libmicrohttpd 0.9.75's epoll thread pool,
     * connections resumed from the engine thread were sometimes not served
     * until some later event on the same worker (a ~30 s stall under 1,000
     * long polls; bench/loadgen.sh reproduced it in 1 run of 3, never with
     * poll in 8).  poll() costs O(connections) per wake-up, which is
     * negligible at the connection counts smqd is configured for. */
    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL
                         | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
    const union MHD_DaemonInfo *info;
    bool ipv6;

    if (h == NULL) {
        snprintf(err, err_size, "out of memory");
        return -1;
    }
    h->opts = *opts;
    h->reaper = conn_reaper_start("", opts->request_timeout_s, opts->idle_timeout_s);
    if (h->reaper == NULL) {
        snprintf(err, err_size, "cannot start the slow-client reaper thread");
        goto fail;
    }
    if (netaddr_make(opts->host, opts->port, &ss, &ipv6) != 0) {
        snprintf(err, err_size, "listen address '%s' is not an IP literal", opts->host);
        goto fail;
    }
    if (crypto_random(rnd, sizeof rnd) != 0) {
        snprintf(err, err_size, "no random bytes for request ids");
        goto fail;
    }
    snprintf(h->id_prefix, sizeof h->id_prefix, "%02X%02X%02X%02X%02X%02X",
             rnd[0], rnd[1], rnd[2], rnd[3], rnd[4], rnd[5]);
    if (ipv6)
        flags |= MHD_USE_IPv6;
    h->daemon = MHD_start_daemon(
        flags, opts->port, NULL, NULL, on_request, h,
        /* First, so it sees every message. */
        MHD_OPTION_EXTERNAL_LOGGER, log_library_line, (void *)"libmicrohttpd",
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)opts->threads,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned int)opts->max_connections,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)opts->idle_timeout_s,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTP_CONN_MEMORY,
        MHD_OPTION_URI_LOG_CALLBACK, on_uri, h,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
        MHD_OPTION_NOTIFY_CONNECTION, conn_reaper_on_connection, h->reaper,
        MHD_OPTION_END);
    if (h->daemon == NULL) {
        snprintf(err, err_size, "cannot listen on %s:%u (in use, or not an address of this host)",
                 opts->host, (unsigned)opts->port);
        goto fail;
    }
    info = MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_BIND_PORT);
    h->port = info ? info->port : opts->port;
    *out = h;
    return 0;

fail:
    conn_reaper_free(h->reaper);
    free(h);
    return -1;
}

uint16_t http_port(const struct smq_http *h)
{
    return h->port;
}

int64_t http_active_requests(struct smq_http *h)
{
    return h != NULL ? __atomic_load_n(&h->active, __ATOMIC_RELAXED) : 0;
}

void http_quiesce(struct smq_http *h)
{
    if (h != NULL && h->daemon != NULL)
        MHD_quiesce_daemon(h->daemon);
}

void http_stop(struct smq_http *h)
{
    if (h == NULL)
        return;
    conn_reaper_stop(h->reaper);
    if (h->daemon != NULL)
        MHD_stop_daemon(h->daemon);    /* closes (and un-tracks) every connection */
    conn_reaper_free(h->reaper);
    free(h);
}
