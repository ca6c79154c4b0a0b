/*
 * httpd.c — owns the libmicrohttpd daemon of a listener and the life of one
 * request (httpd.h): the raw target, the headers collected once, the body
 * under its cap, suspend and resume with a deadline, the answer, and the
 * references that keep a request's storage alive while another thread may
 * still use it; and which connections are served at all (the two caps, with
 * connlimit.h) and who the client of a request is (netaddr.h).
 */
#define _GNU_SOURCE       /* POLLRDHUP */
#include "smqd/httpd.h"

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include <poll.h>
#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "reaper.h"
#include "smqd/clock.h"
#include "smqd/connlimit.h"
#include "smqd/errors.h"
#include "smqd/log.h"
#include "smqd/netaddr.h"
#include "smqd/strnum.h"
#include "smqd/tls.h"

enum req_state { REQ_READING = 0, REQ_SUSPENDED, REQ_RESUMED, REQ_TIMED_OUT };

struct httpd {
    struct MHD_Daemon *daemon;
    struct httpd_opts opts;
    uint16_t port;
    int64_t active;              /* atomic: requests begun and not yet completed */
    struct conn_reaper *reaper;  /* bounds slow requests, fires deadlines */
    struct connlimit *limit;     /* the two connection caps */
    struct netaddr_trust trusted;   /* opts.trusted_proxies, copied */
    char log_prefix[32];         /* "libmicrohttpd" or "admin: libmicrohttpd" */
};

/* One connection's: libmicrohttpd's socket context, from its start to its
 * close. */
struct conn_ctx {
    struct httpd *h;
    struct conn_track *track;    /* in the reaper; NULL when out of memory */
    struct netaddr_ip peer;
    bool has_peer;               /* an IPv4/IPv6 peer (always, on a TCP listener) */
    bool admitted;               /* counted in h->limit until the close */
    bool per_ip;                 /* ... against its address too */
    bool refused;                /* beyond a cap: being closed, never served */
};

struct httpd_req {
    struct httpd *h;
    struct MHD_Connection *conn;
    struct conn_ctx *ctx;        /* the connection's; NULL when out of memory */
    struct conn_track *track;    /* the connection's, in the reaper */
    int refs;                    /* atomic: libmicrohttpd's, a suspension's, a deadline's */
    int state;                   /* atomic, enum req_state */
    bool started;                /* the headers were complete */
    bool acted;                  /* the handler answered or suspended in this call */
    bool too_large;
    bool ambiguous_framing;      /* more than one framing header (RFC 9112 §6.3) */
    bool nul_in_target;          /* the request line had a NUL inside the target */
    bool header_overflow, header_nul;
    const char *last_value;      /* the last header value seen, while collecting */
    bool has_deadline;
    int fd;                      /* the connection's socket */
    uint64_t start_us;
    char *target;                /* raw request target, as received */
    char method[16];
    const char *host;
    char local_host[64];         /* the address the client reached, when it sent no Host */
    char client[NETADDR_TEXT_MAX];  /* the client's address, for the log ("-" unknown) */
    char proxy[NETADDR_TEXT_MAX];   /* the trusted proxy it came through, or "" */
    struct smq_buf body;
    struct http_header headers[HTTPD_MAX_HEADERS];
    size_t n_headers;
    alignas(max_align_t) unsigned char data[];   /* the handler's (opts.data_size) */
};

/* ---- references ------------------------------------------------------------ */

static void hold(struct httpd_req *r)
{
    __atomic_add_fetch(&r->refs, 1, __ATOMIC_ACQ_REL);
}

static void release(struct httpd_req *r)
{
    struct httpd *h = r->h;

    if (__atomic_sub_fetch(&r->refs, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    h->opts.handler.on_done(h->opts.arg, r);
    buf_free(&r->body);
    free(r->target);
    free(r);
}

/* ---- what arrived ------------------------------------------------------------ */

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

static enum MHD_Result collect_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                      size_t key_size, const char *value, size_t value_size)
{
    struct httpd_req *r = cls;

    (void)kind;
    /* libmicrohttpd hands values on as C strings: one with a NUL inside
     * would be read only up to it (RFC 9110 §5.5 says reject it).  Where a
     * value's line ended shows only once the next header's name is known. */
    if (r->last_value != NULL && value_has_nul(r->last_value, key))
        r->header_nul = true;
    if (strlen(key) != key_size || (value != NULL && strlen(value) != value_size))
        r->header_nul = true;
    if (r->n_headers == HTTPD_MAX_HEADERS) {
        r->header_overflow = true;
        return MHD_NO;
    }
    r->last_value = value;       /* NULL (no value) has no bytes after it to look at */
    r->headers[r->n_headers].name = key;
    r->headers[r->n_headers].value = value != NULL ? value : "";
    r->n_headers++;
    return MHD_YES;
}

/* Who sent the request: needs the headers, for X-Forwarded-For. */
static void find_client(struct httpd_req *r)
{
    struct netaddr_ip client;

    snprintf(r->client, sizeof r->client, "-");
    r->proxy[0] = '\0';
    if (r->ctx == NULL || !r->ctx->has_peer)
        return;
    if (netaddr_forwarded_client(&r->h->trusted, &r->ctx->peer, r->headers, r->n_headers,
                                 &client))
        netaddr_ip_text(&r->ctx->peer, r->proxy);
    netaddr_ip_text(&client, r->client);
}

/* The headers, once, when they are complete.  Their strings stay in
 * libmicrohttpd's memory until the request is completed. */
static void collect_headers(struct httpd_req *r)
{
    const char *host;

    MHD_get_connection_values_n(r->conn, MHD_HEADER_KIND, collect_header, r);
    if (r->last_value != NULL && !r->header_overflow && value_has_nul(r->last_value, NULL))
        r->header_nul = true;
    /* Only HTTP/1.0 may omit Host; URLs in answers then name the address
     * the client reached (the configured one may be a wildcard). */
    host = httpd_req_header(r, "Host");
    if (host == NULL)
        host = netaddr_local(r->fd, r->local_host, sizeof r->local_host) == 0 ? r->local_host
                                                                               : "";
    r->host = host;
    find_client(r);
}

/* ---- the request's life ------------------------------------------------------- */

static int connection_fd(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info != NULL ? info->connect_fd : -1;
}

static struct conn_ctx *ctx_of(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info != NULL ? info->socket_context : NULL;
}

static bool peer_of(struct MHD_Connection *conn, struct netaddr_ip *peer)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    return info != NULL && netaddr_ip_of(info->client_addr, peer) == 0;
}

/*
 * A new connection, before anything is read from it.  Over its address's
 * cap it is shut down at once: the point of that cap is that one client's
 * idle sockets cannot make every other client wait, so the refused one
 * must not hold a slot.  The total cap is libmicrohttpd's too (see
 * library_line), which stops accepting at it, so connections
 * beyond it wait in the kernel's accept queue; connlimit's count of all
 * connections refuses only what slips past that.
 */
static void admit(struct httpd *h, struct conn_ctx *c, int fd)
{
    enum connlimit_verdict v;

    /* Without a peer address (not on a TCP listener) c->peer is all zeros:
     * such connections share one count. */
    v = connlimit_admit(h->limit, &c->peer, &c->per_ip);
    if (v == CONNLIMIT_ADMITTED) {
        c->admitted = true;
        metrics_connections_open(h->opts.metrics, 1);
        return;
    }
    metrics_connection_refused(h->opts.metrics, v);
    c->refused = true;
    if (fd >= 0)
        shutdown(fd, SHUT_RDWR);     /* libmicrohttpd sees the end and closes it */
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    struct httpd *h = cls;
    struct conn_ctx *c = *socket_context;
    struct httpd_req *pending;

    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        int fd = connection_fd(conn);
        c = calloc(1, sizeof *c);
        *socket_context = c;
        if (c == NULL) {
            if (fd >= 0)
                shutdown(fd, SHUT_RDWR);     /* not served without its context */
            return;
        }
        c->h = h;
        c->has_peer = peer_of(conn, &c->peer);
        admit(h, c, fd);
        c->track = fd >= 0 ? conn_reaper_track(h->reaper, fd) : NULL;
        return;
    }
    if (c == NULL)
        return;
    *socket_context = NULL;
    if (c->admitted) {
        connlimit_leave(h->limit, &c->peer, c->per_ip);
        metrics_connections_open(h->opts.metrics, -1);
    }
    /* A deadline still pending at close (only at shutdown) holds its request. */
    pending = c->track != NULL ? conn_reaper_untrack(h->reaper, c->track) : NULL;
    free(c);
    if (pending != NULL)
        release(pending);
}

/* libmicrohttpd calls this with the raw request target before anything else;
 * its return value becomes the request's context. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
    struct httpd *h = cls;
    struct httpd_req *r = calloc(1, sizeof *r + h->opts.data_size);

    if (r == NULL)
        return NULL;
    r->h = h;
    r->refs = 1;                 /* libmicrohttpd's, until the request completes */
    r->conn = conn;
    r->fd = connection_fd(conn);
    r->ctx = ctx_of(conn);
    r->track = r->ctx != NULL ? r->ctx->track : NULL;
    r->target = strdup(uri != NULL ? uri : "");
    r->nul_in_target = uri != NULL && target_has_nul(uri);
    r->start_us = clock_mono_us();
    buf_init(&r->body);
    conn_reaper_phase(h->reaper, r->track, PHASE_HEADERS);
    __atomic_fetch_add(&h->active, 1, __ATOMIC_RELAXED);
    return r;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct httpd *h = cls;
    struct httpd_req *r = *req_cls;

    (void)conn, (void)toe;
    if (r == NULL)
        return;
    conn_reaper_phase(h->reaper, r->track, PHASE_IDLE);
    __atomic_fetch_sub(&h->active, 1, __ATOMIC_RELAXED);
    *req_cls = NULL;
    release(r);
}

/* Hands the complete request (or its resumption) to the handler. */
static enum MHD_Result dispatch(struct httpd_req *r)
{
    const struct httpd_handler *hd = &r->h->opts.handler;
    int state = __atomic_load_n(&r->state, __ATOMIC_ACQUIRE);

    conn_reaper_phase(r->h->reaper, r->track, PHASE_WORKING);
    r->acted = false;
    if (state == REQ_RESUMED || state == REQ_TIMED_OUT)
        hd->on_resume(r->h->opts.arg, r, state == REQ_TIMED_OUT);
    else
        hd->on_request(r->h->opts.arg, r);
    return r->acted ? MHD_YES : MHD_NO;
}

/*
 * A body framed by more than one header line (two Content-Length lines, a
 * list of lengths, or a length beside Transfer-Encoding) is one that a proxy
 * in front may frame differently: the bytes it forwards as this request's
 * body could be a request of their own here.  RFC 9112 §6.3 makes such a
 * request an error and the connection unusable afterwards.
 */
static bool framing_is_ambiguous(const struct httpd_req *r, const char **content_length)
{
    int lengths = 0, codings = 0;

    *content_length = NULL;
    for (size_t i = 0; i < r->n_headers; i++) {
        if (strcasecmp(r->headers[i].name, "Content-Length") == 0) {
            lengths += strchr(r->headers[i].value, ',') != NULL ? 2 : 1;
            *content_length = r->headers[i].value;
        } else if (strcasecmp(r->headers[i].name, "Transfer-Encoding") == 0) {
            codings++;
        }
    }
    return lengths > 1 || codings > 1 || (lengths > 0 && codings > 0);
}

/* First call for a request: its headers are complete.  An announced body
 * over the cap, or one whose framing is ambiguous, is answered before it is
 * read; an answer queued before the body closes the connection after it. */
static enum MHD_Result start_request(struct httpd_req *r, const char *method)
{
    const char *cl;
    uint64_t announced = 0;

    r->started = true;
    snprintf(r->method, sizeof r->method, "%s", method);
    collect_headers(r);
    conn_reaper_phase(r->h->reaper, r->track, PHASE_BODY);
    if (framing_is_ambiguous(r, &cl)) {
        r->ambiguous_framing = true;
        return dispatch(r);
    }
    /* A malformed length is libmicrohttpd's to refuse (it frames the body);
     * digits beyond 64 bits are just too large. */
    if (cl != NULL && strnum_is_integer(cl, strlen(cl)) && cl[0] != '-'
        && (strnum_u64(cl, strlen(cl), &announced) != 0
            || announced > r->h->opts.max_body_bytes)) {
        r->too_large = true;
        return dispatch(r);
    }
    return MHD_YES;
}

/* A body chunk: buffered under the cap, discarded (but read to the end, so
 * the answer can be clean) above it, and bounded in time as a whole so a
 * body trickling in cannot hold the connection. */
static enum MHD_Result take_body(struct httpd_req *r, const char *data, size_t *size)
{
    const struct httpd_opts *o = &r->h->opts;

    if (clock_mono_us() - r->start_us > (uint64_t)o->request_timeout_s * 1000000u)
        return MHD_NO;
    if (r->body.len + *size > o->max_body_bytes)
        r->too_large = true;
    else
        buf_append(&r->body, data, *size);
    *size = 0;
    return MHD_YES;
}

static enum MHD_Result on_access(void *cls, struct MHD_Connection *conn, const char *url,
                                 const char *method, const char *version,
                                 const char *upload_data, size_t *upload_data_size,
                                 void **req_cls)
{
    struct httpd_req *r = *req_cls;

    (void)cls, (void)conn, (void)url, (void)version;
    if (r == NULL || r->target == NULL)
        return MHD_NO;                  /* out of memory at on_uri: drop the connection */
    if (r->ctx == NULL || r->ctx->refused)
        return MHD_NO;                  /* shut down at accept: never served */
    if (!r->started)
        return start_request(r, method);
    if (*upload_data_size > 0)
        return take_body(r, upload_data, upload_data_size);
    if (buf_failed(&r->body))
        return MHD_NO;
    return dispatch(r);
}

/* ---- the handler's calls -------------------------------------------------------- */

void *httpd_req_data(struct httpd_req *r)
{
    return r->data;
}

bool httpd_req_started(const struct httpd_req *r)
{
    return r->started;
}

const char *httpd_req_method(const struct httpd_req *r)
{
    return r->method;
}

const char *httpd_req_target(const struct httpd_req *r)
{
    return r->target;
}

const char *httpd_req_header(const struct httpd_req *r, const char *name)
{
    for (size_t i = 0; i < r->n_headers; i++)
        if (strcasecmp(r->headers[i].name, name) == 0)
            return r->headers[i].value;
    return NULL;
}

const struct http_header *httpd_req_headers(const struct httpd_req *r, size_t *n)
{
    *n = r->n_headers;
    return r->headers;
}

const char *httpd_req_host(const struct httpd_req *r)
{
    return r->host != NULL ? r->host : "";
}

const char *httpd_req_body(const struct httpd_req *r, size_t *len)
{
    *len = r->body.len;
    return r->body.data != NULL ? r->body.data : "";
}

const char *httpd_req_client(const struct httpd_req *r)
{
    return r->client[0] != '\0' ? r->client : "-";
}

const char *httpd_req_proxy(const struct httpd_req *r)
{
    return r->proxy[0] != '\0' ? r->proxy : NULL;
}

uint64_t httpd_req_start_us(const struct httpd_req *r)
{
    return r->start_us;
}

int httpd_req_problem(const struct httpd_req *r, struct smq_errinfo *ei)
{
    /* The reaper bounds a request's arrival and its wait for the engine: a
     * connection it could not track (no memory at accept) is not served. */
    if (r->track == NULL)
        return errors_set(ei, SMQ_E_SERVICE_UNAVAILABLE,
                          "The server is out of memory for this connection; try again.");
    if (r->header_overflow)
        return errors_set(ei, SMQ_E_INVALID_ARGUMENT, "Too many request headers (at most %d).",
                          HTTPD_MAX_HEADERS);
    if (r->header_nul)
        return errors_set(ei, SMQ_E_INVALID_ARGUMENT, "A request header contains a NUL byte.");
    if (r->nul_in_target)
        return errors_set(ei, SMQ_E_INVALID_REQUEST_URL,
                          "The request target contains a NUL byte.");
    if (r->ambiguous_framing)
        return errors_set(ei, SMQ_E_INVALID_ARGUMENT,
                          "The request body is framed by more than one header "
                          "(Content-Length and Transfer-Encoding must appear once, not both).");
    if (r->too_large)
        return errors_set(ei, SMQ_E_REQUEST_TOO_LARGE,
                          "The request body is larger than %zu bytes.", r->h->opts.max_body_bytes);
    return 0;
}

int httpd_respond(struct httpd_req *r, int status, struct smq_buf *body,
                  const char *content_type, const struct http_header *extra, size_t n_extra)
{
    size_t len = 0;
    char *data = buf_take(body, &len);
    struct MHD_Response *mr;
    enum MHD_Result ret;

    mr = len > 0 ? MHD_create_response_from_buffer(len, data, MHD_RESPMEM_MUST_FREE)
                 : MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    if (len == 0 || mr == NULL)
        free(data);
    if (mr == NULL)
        return SMQ_E_NOMEM;
    if (len > 0 && content_type != NULL)
        MHD_add_response_header(mr, "Content-Type", content_type);
    for (size_t i = 0; i < n_extra; i++)
        MHD_add_response_header(mr, extra[i].name, extra[i].value);
    ret = MHD_queue_response(r->conn, (unsigned int)status, mr);
    MHD_destroy_response(mr);
    r->acted = ret == MHD_YES;
    return ret == MHD_YES ? 0 : SMQ_E_INTERNAL;
}

static void on_deadline(void *ctx)
{
    struct httpd_req *r = ctx;
    int suspended = REQ_SUSPENDED;

    if (__atomic_compare_exchange_n(&r->state, &suspended, REQ_TIMED_OUT, false,
                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        MHD_resume_connection(r->conn);
    release(r);                  /* the deadline's */
}

void httpd_suspend(struct httpd_req *r, uint64_t timeout_ms)
{
    hold(r);                     /* the suspension's, until httpd_resume */
    __atomic_store_n(&r->state, REQ_SUSPENDED, __ATOMIC_RELEASE);
    if (timeout_ms > 0 && r->track != NULL) {
        hold(r);                 /* the deadline's, until it fires or is cleared */
        r->has_deadline = true;
        conn_reaper_set_deadline(r->h->reaper, r->track,
                                 clock_mono_ms(r->h->opts.clock) + timeout_ms, on_deadline, r);
    }
    MHD_suspend_connection(r->conn);
    r->acted = true;
}

/* After a timeout the request may be answered and its connection gone:
 * only a request still suspended is touched, and while it is suspended its
 * connection (and the reaper's track of it) cannot close. */
void httpd_resume(struct httpd_req *r)
{
    int suspended = REQ_SUSPENDED;

    if (__atomic_compare_exchange_n(&r->state, &suspended, REQ_RESUMED, false,
                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        if (r->has_deadline && conn_reaper_clear_deadline(r->h->reaper, r->track))
            release(r);          /* the deadline's: it will not fire now */
        MHD_resume_connection(r->conn);
    }
    release(r);                  /* the suspension's */
}

/* Asked on another thread while the connection is suspended: the socket is
 * then untouched by libmicrohttpd, so asking the kernel about it is safe.
 * POLLRDHUP sees the FIN even behind bytes the client sent and nobody read
 * yet (a stray CRLF, a pipelined request), where a peek at the data would
 * only see those bytes. */
bool httpd_client_gone(struct httpd_req *r)
{
    struct pollfd p = {.fd = r->fd, .events = POLLRDHUP};

    if (r->fd < 0)
        return false;
    return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

/* ---- the daemon --------------------------------------------------------------------- */

/*
 * GnuTLS asks for the certificate at each handshake.  libmicrohttpd makes
 * the session's pointer its connection, and the connection's socket
 * context (set when it was accepted, before any handshake) is its conn_ctx,
 * which names this httpd: so a reload (tls_creds_reload) reaches
 * the next handshake without restarting the daemon.
 */
static int pick_certificate(gnutls_session_t session, const gnutls_datum_t *req_ca_dn,
                            int n_req_ca_dn, const gnutls_pk_algorithm_t *pk_algos,
                            int n_pk_algos, gnutls_pcert_st **pcerts, unsigned int *n_pcerts,
                            gnutls_privkey_t *key)
{
    struct MHD_Connection *conn = gnutls_session_get_ptr(session);
    struct conn_ctx *c = conn != NULL ? ctx_of(conn) : NULL;
    struct httpd *h = c != NULL ? c->h : NULL;
    struct tls_cert_view v;

    (void)req_ca_dn, (void)n_req_ca_dn, (void)pk_algos, (void)n_pk_algos;
    if (h == NULL || h->opts.tls == NULL)
        return -1;               /* no certificate: the handshake fails */
    tls_creds_current(h->opts.tls, &v);
    *pcerts = v.pcerts;
    *n_pcerts = v.n_pcerts;
    *key = v.key;
    return 0;
}

/*
 * libmicrohttpd stops accepting when it holds max_connections, so that
 * connections beyond wait in the kernel's accept queue rather than being
 * refused; it says so in a log line when it closes one instead (a race at
 * the limit), which is the one refusal of that cap that can be counted.
 */
__attribute__((format(printf, 2, 0)))
static void library_line(void *cls, const char *fmt, va_list ap)
{
    struct httpd *h = cls;

    if (strstr(fmt, "reached connection limit") != NULL)
        metrics_connection_refused(h->opts.metrics, CONNLIMIT_OVER_TOTAL);
    log_library_line(h->log_prefix, fmt, ap);
}

/* TLS 1.2 and 1.3 only: every SDK's HTTP stack speaks 1.2. */
#define TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"

/*
 * poll(), not epoll: with libmicrohttpd 0.9.75's epoll thread pool,
 * connections resumed from another thread were sometimes not served until
 * some later event on the same worker (a stall of up to the idle timeout
 * under many long polls).  poll() costs O(connections) per wake-up, which
 * is negligible at the connection counts smqd is configured for.
 */
static struct MHD_Daemon *start_daemon(struct httpd *h, const struct sockaddr_storage *ss,
                                       bool ipv6)
{
    const struct httpd_opts *o = &h->opts;
    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL
                         | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;

    if (ipv6)
        flags |= MHD_USE_IPv6;
    if (o->tls != NULL)
        flags |= MHD_USE_TLS;
    return MHD_start_daemon(
        flags, o->port, NULL, NULL, on_access, h,
        /* First, so it sees every message. */
        MHD_OPTION_EXTERNAL_LOGGER, library_line, (void *)h,
        MHD_OPTION_SOCK_ADDR, (const struct sockaddr *)ss,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)(o->threads > 0 ? o->threads : 1),
        MHD_OPTION_CONNECTION_LIMIT, (unsigned int)o->max_connections,
        /* max_connections_per_ip is connlimit's (admit), which exempts the
         * trusted proxies: libmicrohttpd's own cap cannot. */
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)o->idle_timeout_s,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, o->conn_memory > 0 ? o->conn_memory : 32768u,
        MHD_OPTION_URI_LOG_CALLBACK, on_uri, h,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, h,
        /* Ignored without MHD_USE_TLS; last, so that a plain listener ends here. */
        o->tls != NULL ? MHD_OPTION_HTTPS_CERT_CALLBACK : MHD_OPTION_END, pick_certificate,
        MHD_OPTION_HTTPS_PRIORITIES, TLS_PRIORITIES,
        MHD_OPTION_END);
}

static void httpd_free(struct httpd *h)
{
    conn_reaper_free(h->reaper);
    connlimit_free(h->limit);
    free(h);
}

int httpd_start(const struct httpd_opts *opts, struct httpd **out, char *err, size_t err_size)
{
    struct httpd *h = calloc(1, sizeof *h);
    struct conn_reaper_opts ropts = {.listener = opts->name,
                                     .request_timeout_s = opts->request_timeout_s,
                                     .idle_timeout_s = opts->idle_timeout_s,
                                     .clock = opts->clock};
    struct sockaddr_storage ss;
    const union MHD_DaemonInfo *info;
    bool ipv6;

    *out = NULL;
    if (h == NULL) {
        snprintf(err, err_size, "out of memory");
        return SMQ_E_NOMEM;
    }
    h->opts = *opts;
    snprintf(h->log_prefix, sizeof h->log_prefix, "%slibmicrohttpd",
             opts->name != NULL ? opts->name : "");
    if (h->opts.label == NULL)
        h->opts.label = "";
    if (h->opts.clock == NULL)
        h->opts.clock = clock_system();
    if (netaddr_make(opts->host, opts->port, &ss, &ipv6) != 0) {
        snprintf(err, err_size, "listen address '%s'%s is not an IP literal", opts->host,
                 h->opts.label);
        goto fail;
    }
    if (opts->trusted_proxies != NULL)
        h->trusted = *opts->trusted_proxies;
    h->opts.trusted_proxies = &h->trusted;
    h->limit = connlimit_new(opts->max_connections, opts->max_connections_per_ip, &h->trusted);
    if (h->limit == NULL) {
        snprintf(err, err_size, "out of memory");
        goto fail;
    }
    h->reaper = conn_reaper_start(&ropts);
    if (h->reaper == NULL) {
        snprintf(err, err_size, "cannot start the slow-client reaper thread%s", h->opts.label);
        goto fail;
    }
    h->daemon = start_daemon(h, &ss, ipv6);
    if (h->daemon == NULL) {
        snprintf(err, err_size, "cannot listen on %s:%u%s (in use, or not an address of this "
                 "host)", opts->host, (unsigned)opts->port, h->opts.label);
        goto fail;
    }
    info = MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_BIND_PORT);
    h->port = info != NULL ? info->port : opts->port;
    *out = h;
    return 0;

fail:
    httpd_free(h);
    return SMQ_E_INTERNAL;
}

uint16_t httpd_port(const struct httpd *h)
{
    return h->port;
}

int64_t httpd_active_requests(struct httpd *h)
{
    return h != NULL ? __atomic_load_n(&h->active, __ATOMIC_RELAXED) : 0;
}

void httpd_quiesce(struct httpd *h)
{
    if (h != NULL && h->daemon != NULL)
        MHD_quiesce_daemon(h->daemon);
}

void httpd_stop(struct httpd *h)
{
    if (h == NULL)
        return;
    conn_reaper_stop(h->reaper);
    MHD_stop_daemon(h->daemon);    /* closes (and untracks) every connection */
    httpd_free(h);
}
