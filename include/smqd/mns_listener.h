/*
 * mns_listener.h — the MNS listener: the HTTP front end of the MNS queue
 * API on the shared HTTP glue (httpd.h).
 *
 * A request is checked for framing problems, authenticated and decided
 * (api.h), checked against the request-rate limits (ratelimit.h), and its
 * operation handed to the engine thread (server.h) with the connection
 * suspended, so no thread waits for it (long polls park for free); the
 * operation's done callback resumes it, and the answer is rendered on an
 * HTTP thread.  Every response carries x-mns-request-id; every XML
 * response Content-Type text/xml;charset=utf-8.  One log line per
 * request, counted in opts.metrics, naming the client (and the proxy it
 * came through) and what it asked for, never a signature or a secret.
 */
#ifndef SMQD_MNS_LISTENER_H
#define SMQD_MNS_LISTENER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "smqd/api.h"
#include "smqd/metrics.h"
#include "smqd/netaddr.h"
#include "smqd/ratelimit.h"
#include "smqd/engine_thread.h"

struct tls_creds;
struct smq_role;

struct mns_listener_opts {
    const char *host;            /* IPv4/IPv6 literal or "localhost" */
    uint16_t port;               /* 0 = any free port */
    int threads;
    int max_connections;
    int max_connections_per_ip;  /* 0 = no limit of its own */
    /* [server] trusted_proxies (borrowed for the start; NULL = none): exempt
     * from the per-address cap, and their X-Forwarded-For names the client. */
    const struct netaddr_trust *trusted_proxies;
    struct tls_creds *tls;       /* HTTPS with these (borrowed); NULL = plain HTTP */
    const char *url_scheme;      /* "http" or "https", for QueueURL, Location, HostId */
    int idle_timeout_s;          /* a connection silent this long is closed */
    int request_timeout_s;       /* a request still incomplete after this is dropped */
    size_t max_body_bytes;
    bool log_requests;
    struct api_ctx api;
    /* The engine thread and (api.handle_keys) its keys.  With role set,
     * NULL = detached until mns_listener_attach: every request is answered
     * 503; without role it must be given. */
    struct smq_engine_thread *thread;
    struct smq_metrics *metrics;       /* borrowed; NULL = nothing counted */
    struct smq_ratelimit *ratelimit;   /* borrowed; NULL = no request-rate limits */
    /* Borrowed; NULL = always serving (the SQLite path).  Otherwise every
     * request that passes the framing checks is answered 503
     * ServiceUnavailable, before auth, unless role_serving() holds. */
    const struct smq_role *role;
};

struct mns_listener;

/* Binds and starts serving.  0, or SMQ_E_INTERNAL with a reason in err. */
int mns_listener_start(const struct mns_listener_opts *opts, struct mns_listener **out,
                       char *err, size_t err_size);
/* The bound port (the real one when 0 was asked for). */
uint16_t mns_listener_port(const struct mns_listener *l);
/* Requests begun (request line read) and not yet completed. */
int64_t mns_listener_active_requests(struct mns_listener *l);
/* Stops accepting new connections (existing ones keep working). */
void mns_listener_quiesce(struct mns_listener *l);
/* From now on requests go to thread; keys format and check handles
 * (engine_keys).  Thread-safe.  Only for a listener with opts.role: one
 * without serves the engine it was started with until it stops. */
void mns_listener_attach(struct mns_listener *l, struct smq_engine_thread *thread,
                         const struct handle_keys *keys);
/* From now on GET /smqd/signing-cert.pem answers pem (borrowed until
 * mns_listener_detach, which forgets it).  Thread-safe.  Only for a
 * listener with opts.role; one without serves opts.api.signing_cert_pem. */
void mns_listener_attach_signing_cert(struct mns_listener *l, const char *pem);
/* No more requests reach the engine (they are answered 503); waits until
 * none that did is still being answered.  Call after engine_thread_stop
 * (which finishes every submitted op) and before engine_thread_free.  NULL is
 * a no-op. */
void mns_listener_detach(struct mns_listener *l);
/* Closes every connection and frees l.  The engine must already be stopped,
 * so that no connection is still suspended. */
void mns_listener_stop(struct mns_listener *l);

#endif
