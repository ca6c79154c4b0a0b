/*
 * httpd.h — the HTTP server both listeners run on (the MNS API and the
 * admin API): libmicrohttpd behind one small interface.  Only httpd.c
 * includes microhttpd.h.
 *
 * It owns the life of a request: the raw request target as received (what
 * a signature covers), the headers collected once (NUL bytes and too many
 * headers noted, not trusted), the body buffered under a cap (an announced
 * Content-Length above it is answered before the body is read), the bound
 * on slow clients (reaper.h), and the answer with its headers.
 *
 * A listener is a handler of three callbacks.  on_request sees a complete
 * request and either answers it (httpd_respond) or suspends it
 * (httpd_suspend) while another thread works; that thread ends the wait
 * with httpd_resume, and on_resume then answers on an HTTP thread.  A
 * suspended request holds no thread, so thousands of long polls cost
 * memory only.  A suspension may carry a deadline: past it on_resume is
 * called with timed_out, and the request is answered then, even if the
 * engine never comes back; the work it handed over may still finish later,
 * so the request's storage (httpd_req_data) lives until both the answer is
 * sent and httpd_resume was called.  on_done is called once then, for the
 * handler to free what it attached.
 */
#ifndef SMQD_HTTPD_H
#define SMQD_HTTPD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "smqd/buf.h"
#include "smqd/clock.h"
#include "smqd/errors.h"
#include "smqd/http_header.h"
#include "smqd/metrics.h"
#include "smqd/netaddr.h"

#define HTTPD_MAX_HEADERS 128

struct httpd;
struct httpd_req;
struct tls_creds;

struct httpd_handler {
    void (*on_request)(void *arg, struct httpd_req *r);
    void (*on_resume)(void *arg, struct httpd_req *r, bool timed_out);
    /* Last: the request is over and nothing refers to it.  Also for a
     * request the handler never saw (httpd_req_started false). */
    void (*on_done)(void *arg, struct httpd_req *r);
};

struct httpd_opts {
    const char *name;            /* for the log: "" (MNS) or "admin: " */
    const char *label;           /* for errors: "" or " for the admin listener" */
    const char *host;            /* IPv4/IPv6 literal or "localhost" */
    uint16_t port;               /* 0 = any free port */
    int threads;                 /* HTTP worker threads */
    /* At max_connections new connections wait in the accept queue; beyond
     * max_connections_per_ip from one address one is closed at once.
     * Connections from trusted_proxies skip the latter (connlimit.h). */
    int max_connections;
    int max_connections_per_ip;  /* from one client address; 0 = no limit of its own */
    /* Borrowed for the call to httpd_start (copied); NULL = none.  Their
     * requests' X-Forwarded-For names the client (netaddr.h). */
    const struct netaddr_trust *trusted_proxies;
    struct smq_metrics *metrics; /* borrowed: open and refused connections; NULL = not counted */
    struct tls_creds *tls;       /* HTTPS with these (borrowed); NULL = plain HTTP */
    int idle_timeout_s;          /* a connection silent this long is closed */
    int request_timeout_s;       /* a request still incomplete after this is dropped */
    size_t max_body_bytes;       /* larger bodies are discarded, httpd_req_too_large */
    size_t conn_memory;          /* per-connection pool for line and headers; 0 = default */
    size_t data_size;            /* bytes of per-request storage for the handler */
    /* The clock of request timeouts and deadlines (monotonic ms); NULL =
     * the real one.  Tests move a fake one, read from the reaper's thread. */
    const struct smq_clock *clock;
    struct httpd_handler handler;
    void *arg;
};

/* Binds and starts serving.  0, or SMQ_E_INTERNAL with a reason in err. */
int httpd_start(const struct httpd_opts *opts, struct httpd **out, char *err, size_t err_size);
/* The bound port (the real one when 0 was asked for). */
uint16_t httpd_port(const struct httpd *h);
/* Requests begun (request line read) and not yet completed. */
int64_t httpd_active_requests(struct httpd *h);
/* Stops accepting new connections (existing ones keep working). */
void httpd_quiesce(struct httpd *h);
/* Closes every connection and frees h.  No request may still be suspended. */
void httpd_stop(struct httpd *h);

/* ---- a request ---- */

/* The handler's zeroed per-request storage (opts.data_size bytes). */
void *httpd_req_data(struct httpd_req *r);
/* Whether the request got as far as its headers (else on_request never ran). */
bool httpd_req_started(const struct httpd_req *r);
const char *httpd_req_method(const struct httpd_req *r);
/* The request target exactly as received: path[?query], still encoded. */
const char *httpd_req_target(const struct httpd_req *r);
/* The first header of that name (case-insensitive), or NULL. */
const char *httpd_req_header(const struct httpd_req *r, const char *name);
/* Every header as received, in order (at most HTTPD_MAX_HEADERS). */
const struct http_header *httpd_req_headers(const struct httpd_req *r, size_t *n);
/* The host to name in URLs: the Host header, or the address the client
 * reached when it sent none (HTTP/1.0). */
const char *httpd_req_host(const struct httpd_req *r);
const char *httpd_req_body(const struct httpd_req *r, size_t *len);
/* The client's address as text: the peer's, or through a trusted proxy the
 * address its X-Forwarded-For names; "-" when unknown.  For the log. */
const char *httpd_req_client(const struct httpd_req *r);
/* The trusted proxy the request came through (the peer), or NULL when the
 * client is the peer itself. */
const char *httpd_req_proxy(const struct httpd_req *r);
/* The monotonic microsecond the request line was read. */
uint64_t httpd_req_start_us(const struct httpd_req *r);

/* What is wrong with the request's framing, before anything is parsed:
 * 0, or SMQ_E_INVALID_ARGUMENT (too many headers, a NUL in one),
 * SMQ_E_INVALID_REQUEST_URL (a NUL in the target) or SMQ_E_REQUEST_TOO_LARGE
 * (the body is over the cap), with a sentence for the client in ei. */
int httpd_req_problem(const struct httpd_req *r, struct smq_errinfo *ei);

/* Answers the request: status, body (taken, may be empty), Content-Type
 * (ignored for an empty body), and extra headers.  0, or SMQ_E_NOMEM /
 * SMQ_E_INTERNAL when the response could not be made or queued (the
 * connection is then closed). */
int httpd_respond(struct httpd_req *r, int status, struct smq_buf *body,
                  const char *content_type, const struct http_header *extra, size_t n_extra);

/* Suspends r until httpd_resume (any thread), or until timeout_ms (0 =
 * none) have passed.  Call before handing the work to the other thread: it
 * may finish at once. */
void httpd_suspend(struct httpd_req *r, uint64_t timeout_ms);
/* Ends the wait of a suspended request (any thread, once per suspend). */
void httpd_resume(struct httpd_req *r);
/* While r is suspended: whether its client has gone away (a FIN, also a
 * half-close, a hang-up or a reset). */
bool httpd_client_gone(struct httpd_req *r);

#endif
