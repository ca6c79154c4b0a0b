/*
 * admin.c — owns the admin listener (admin.h): its libmicrohttpd daemon,
 * the process state that /ready reports, the Bearer-token check, and the
 * hand-off of JSON API calls to the engine thread.
 *
 * Threads.  One thread per connection (at most ADMIN_MAX_CONNECTIONS): a
 * handler blocks while the engine works on its operations, and with a
 * thread per connection one slow purge cannot delay a /health probe.  The
 * admin listener is for a handful of operators and scrapers, so threads
 * are cheap here; the MNS listener (http.c) is the one built for scale.
 *
 * Engine calls.  The operations live in a heap block shared by the waiting
 * handler and the engine thread, with a reference count: a handler that
 * gives up after ADMIN_ENGINE_WAIT_MS answers 504 and leaves the block to
 * the engine, whose done callback frees it later.  So a stalled engine
 * (a disk that hangs fsync) can never make the engine write into freed
 * memory, and never pins an admin thread for ever.
 *
 * The server pointer is lent by main.c (admin_attach_server) and taken
 * back (admin_detach_server) after server_stop; in between, in_flight
 * counts handlers that may still call server_submit, so the server is not
 * freed under them.
 */
#include "smqd/admin.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>

#include "smqd/admin_api.h"
#include "smqd/admin_metrics.h"
#include "smqd/clock.h"
#include "smqd/crypto.h"
#include "smqd/log.h"
#include "smqd/netaddr.h"
#include "smqd/reaper.h"

#define ADMIN_MAX_CONNECTIONS 64
#define ADMIN_IDLE_TIMEOUT_S 10
/* A request (line, headers and any body) must be complete within this: a
 * client trickling bytes would otherwise hold one of the 64 connections,
 * and its thread, for ever (reaper.h). */
#define ADMIN_REQUEST_TIMEOUT_S 10
#define ADMIN_ENGINE_WAIT_MS 30000      /* a JSON API call (a purge may be large) */
/* /ready and /metrics: a probe or a scrape gives up long before 30 s, and
 * its thread must not stay blocked after it did. */
#define ADMIN_PROBE_WAIT_MS 2000
/* Handlers waiting for the engine at once; beyond, 503 at once, so that a
 * stalled engine (a hung disk) cannot take every connection and silence
 * /health. */
#define ADMIN_MAX_ENGINE_WAITERS 16
/* No admin request has a body; a client that sends one more than this is
 * cut off instead of being read for ever. */
#define ADMIN_MAX_BODY 65536
#define ADMIN_STACK_BYTES (512u * 1024u)

#define TEXT_CT "text/plain; charset=utf-8"
#define METRICS_CT "text/plain; version=0.0.4; charset=utf-8"

struct smq_admin {
    struct MHD_Daemon *daemon;
    struct conn_reaper *reaper;      /* bounds slow requests */
    uint16_t port;
    char *expected_auth;             /* "Bearer TOKEN", or NULL = no token; under lock */
    char *db_path;
    char *wal_path;                  /* under lock; NULL until the store is open */
    int (*extra_metrics)(void *arg, struct smq_buf *out);
    void *extra_arg;
    int64_t start_ms;
    int state;                       /* enum admin_state; atomic */
    pthread_mutex_t lock;            /* guards server, keys, in_flight, expected_auth, wal_path */
    pthread_cond_t idle;             /* in_flight dropped to 0 */
    struct smq_server *server;
    const struct handle_keys *keys;
    int in_flight;
    int engine_waiters;              /* atomic: handlers inside call_run */
};

/* One request: its raw target (libmicrohttpd decodes the URL it passes to
 * the handler; the raw one keeps %2F inside a name from becoming a slash). */
struct admin_req {
    char *target;
    bool started;
    size_t body_bytes;
};

/* Operations on their way through the engine (see the file comment). */
struct engine_call {
    pthread_mutex_t lock;
    pthread_cond_t done;             /* CLOCK_MONOTONIC */
    size_t pending;                  /* ops not finished yet */
    int refs;                        /* the waiting handler + the engine */
    struct admin_job job;
};

/* ---- state and the borrowed server -------------------------------------------- */

void admin_set_state(struct smq_admin *a, enum admin_state state)
{
    if (a != NULL)
        __atomic_store_n(&a->state, (int)state, __ATOMIC_RELEASE);
}

static enum admin_state get_state(struct smq_admin *a)
{
    return (enum admin_state)__atomic_load_n(&a->state, __ATOMIC_ACQUIRE);
}

void admin_attach_server(struct smq_admin *a, struct smq_server *s, const struct handle_keys *keys)
{
    if (a == NULL)
        return;
    pthread_mutex_lock(&a->lock);
    a->server = s;
    a->keys = keys;
    pthread_mutex_unlock(&a->lock);
}

void admin_set_wal_path(struct smq_admin *a, const char *wal_path)
{
    char *copy = wal_path != NULL ? strdup(wal_path) : NULL;

    if (a == NULL) {
        free(copy);
        return;
    }
    pthread_mutex_lock(&a->lock);
    free(a->wal_path);
    a->wal_path = copy;              /* out of memory: the gauge is absent */
    pthread_mutex_unlock(&a->lock);
}

void admin_detach_server(struct smq_admin *a)
{
    if (a == NULL)
        return;
    pthread_mutex_lock(&a->lock);
    a->server = NULL;
    a->keys = NULL;
    while (a->in_flight > 0)
        pthread_cond_wait(&a->idle, &a->lock);
    pthread_mutex_unlock(&a->lock);
}

/* The server, counted as in use until server_release; NULL when there is none. */
static struct smq_server *server_acquire(struct smq_admin *a, const struct handle_keys **keys)
{
    struct smq_server *s;

    pthread_mutex_lock(&a->lock);
    s = a->server;
    *keys = a->keys;
    if (s != NULL)
        a->in_flight++;
    pthread_mutex_unlock(&a->lock);
    return s;
}

static void server_release(struct smq_admin *a)
{
    pthread_mutex_lock(&a->lock);
    if (--a->in_flight == 0)
        pthread_cond_broadcast(&a->idle);
    pthread_mutex_unlock(&a->lock);
}

/* ---- engine calls ------------------------------------------------------------------ */

static struct engine_call *call_new(void)
{
    struct engine_call *c = calloc(1, sizeof *c);

    if (c == NULL)
        return NULL;
    pthread_mutex_init(&c->lock, NULL);
    clock_mono_cond_init(&c->done);
    return c;
}

static void call_free(struct engine_call *c)
{
    admin_api_release(&c->job);
    pthread_cond_destroy(&c->done);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

/* Engine thread (or the submitting thread, when the server has stopped). */
static void on_op_done(struct smq_op *op, void *arg)
{
    struct engine_call *c = arg;
    bool free_it = false;

    (void)op;
    pthread_mutex_lock(&c->lock);
    if (--c->pending == 0) {
        c->refs--;
        free_it = c->refs == 0;      /* the handler gave up waiting */
        pthread_cond_signal(&c->done);
    }
    pthread_mutex_unlock(&c->lock);
    if (free_it)
        call_free(c);
}

/*
 * Submits c's ops in order and waits for all of them.  true: they finished
 * and c is the caller's alone again.  false: timed out, and c now belongs to
 * the engine (the caller must not touch it).
 */
static bool call_run(struct smq_server *s, struct engine_call *c, int wait_ms)
{
    struct timespec deadline;
    bool finished;

    c->pending = c->job.n_ops;
    c->refs = 2;
    for (size_t i = 0; i < c->job.n_ops; i++) {
        c->job.ops[i].done = on_op_done;
        c->job.ops[i].done_arg = c;
    }
    for (size_t i = 0; i < c->job.n_ops; i++)
        server_submit(s, &c->job.ops[i]);
    clock_mono_deadline((uint64_t)wait_ms, &deadline);
    pthread_mutex_lock(&c->lock);
    while (c->pending > 0)
        if (pthread_cond_timedwait(&c->done, &c->lock, &deadline) == ETIMEDOUT)
            break;
    finished = c->pending == 0;
    if (!finished)
        c->refs--;                   /* on_op_done frees it */
    pthread_mutex_unlock(&c->lock);
    return finished;
}

/* A place among the handlers that wait for the engine, or false when
 * ADMIN_MAX_ENGINE_WAITERS already do. */
static bool waiter_enter(struct smq_admin *a)
{
    if (__atomic_add_fetch(&a->engine_waiters, 1, __ATOMIC_ACQ_REL) <= ADMIN_MAX_ENGINE_WAITERS)
        return true;
    __atomic_sub_fetch(&a->engine_waiters, 1, __ATOMIC_ACQ_REL);
    return false;
}

static void waiter_leave(struct smq_admin *a)
{
    __atomic_sub_fetch(&a->engine_waiters, 1, __ATOMIC_ACQ_REL);
}

static void reply_no_engine(struct admin_reply *r)
{
    admin_reply_error(r, 503, "ServiceUnavailable", "%s",
                      "smqd is starting or stopping; the engine does not take requests now.");
}

static void reply_timeout(struct admin_reply *r)
{
    admin_reply_error(r, 504, "Timeout", "The engine did not answer within %d s; the "
                      "operation may still complete.", ADMIN_ENGINE_WAIT_MS / 1000);
}

/* A JSON API request whose job is prepared in c: run it, render it. */
static void run_api_call(struct smq_admin *a, struct engine_call *c, struct admin_reply *r)
{
    const struct handle_keys *keys;
    struct smq_server *s = server_acquire(a, &keys);

    if (s == NULL || get_state(a) != ADMIN_READY) {
        reply_no_engine(r);
        if (s != NULL)
            server_release(a);
        call_free(c);
        return;
    }
    if (!waiter_enter(a)) {
        admin_reply_error(r, 503, "ServiceUnavailable", "%d admin requests already wait for "
                          "the engine; try again later.", ADMIN_MAX_ENGINE_WAITERS);
        server_release(a);
        call_free(c);
        return;
    }
    if (!call_run(s, c, ADMIN_ENGINE_WAIT_MS)) {
        waiter_leave(a);
        reply_timeout(r);
        server_release(a);
        return;
    }
    waiter_leave(a);
    /* Rendered before the release: the keys belong to the engine. */
    admin_api_render(&c->job, keys, clock_epoch_ms(clock_system()), r);
    server_release(a);
    call_free(c);
}

/*
 * One SMQ_OP_STATS for queue (for "" every queue; totals_only: none).  Returns the finished
 * call (the caller frees it with call_free), or NULL when there is no
 * engine, no memory, or it timed out.
 */
static struct engine_call *take_stats(struct smq_admin *a, const char *queue, bool totals_only)
{
    const struct handle_keys *keys;
    struct smq_server *s = server_acquire(a, &keys);
    bool entered = s != NULL && waiter_enter(a);
    struct engine_call *c = entered ? call_new() : NULL;

    if (c != NULL) {
        op_init(&c->job.ops[0], SMQ_OP_STATS);
        snprintf(c->job.ops[0].queue, sizeof c->job.ops[0].queue, "%s", queue);
        c->job.ops[0].stats.totals_only = totals_only;
        c->job.n_ops = 1;
        if (!call_run(s, c, ADMIN_PROBE_WAIT_MS))
            c = NULL;
    }
    if (entered)
        waiter_leave(a);
    if (s != NULL)
        server_release(a);
    return c;
}

/* ---- probes and metrics --------------------------------------------------------------- */

static void reply_text(struct admin_reply *r, int status, const char *text)
{
    r->status = status;
    r->content_type = TEXT_CT;
    buf_reset(&r->body);
    buf_puts(&r->body, text);
}

/* Whether the engine serves: a totals-only SMQ_OP_STATS (O(1)) fails with
 * InternalError while the engine is broken (engine.c refuses every op
 * until a reload succeeds). */
static bool engine_serves(struct smq_admin *a)
{
    struct engine_call *c = take_stats(a, "", true);
    bool ok;

    if (c == NULL)
        return false;
    ok = c->job.ops[0].result.err == 0;
    call_free(c);
    return ok;
}

static void handle_ready(struct smq_admin *a, struct admin_reply *r)
{
    switch (get_state(a)) {
    case ADMIN_STARTING:
        reply_text(r, 503, "starting\n");
        return;
    case ADMIN_DRAINING:
        reply_text(r, 503, "draining\n");
        return;
    case ADMIN_READY:
        break;
    }
    if (engine_serves(a))
        reply_text(r, 200, "ready\n");
    else
        reply_text(r, 503, get_state(a) == ADMIN_DRAINING ? "draining\n" : "broken\n");
}

static int64_t file_size(const char *path)
{
    struct stat st;

    return path != NULL && stat(path, &st) == 0 ? (int64_t)st.st_size : -1;
}

/* SQLite keeps the WAL next to the database file it resolved through any
 * symbolic links, so the size is looked up there, not at PATH + "-wal". */
/* Size of the WAL where SQLite keeps it, or -1 (not known yet, or absent). */
static int64_t wal_size(struct smq_admin *a)
{
    int64_t size = -1;

    pthread_mutex_lock(&a->lock);
    if (a->wal_path != NULL)
        size = file_size(a->wal_path);
    pthread_mutex_unlock(&a->lock);
    return size;
}

static void handle_metrics(struct smq_admin *a, struct admin_reply *r)
{
    struct engine_call *c = take_stats(a, "", false);
    const struct smq_op *op = c != NULL ? &c->job.ops[0] : NULL;
    struct admin_metrics_input in;

    if (op != NULL && (op->result.err != 0 || op->stats.totals.broken))
        op = NULL;
    memset(&in, 0, sizeof in);
    in.version = SMQD_VERSION;
    in.start_time_ms = a->start_ms;
    in.ready = get_state(a) == ADMIN_READY && op != NULL;
    in.stats = op;
    in.now_ms = clock_epoch_ms(clock_system());
    in.db_bytes = file_size(a->db_path);
    in.wal_bytes = wal_size(a);
    r->status = 200;
    r->content_type = METRICS_CT;
    buf_reset(&r->body);
    admin_metrics_render(&in, &r->body);
    if (c != NULL)
        call_free(c);
    if (a->extra_metrics != NULL && a->extra_metrics(a->extra_arg, &r->body) != 0)
        r->body.failed = true;      /* answered 500 by send_reply */
}

/* ---- routing --------------------------------------------------------------------------- */

enum token_state { TOKEN_NONE, TOKEN_OK, TOKEN_BAD };

/* The request's standing against the token, read once under the lock: a
 * SIGHUP may swap the token (admin_set_token), and both checks of a
 * request (browser_refusal, then 401) must see the same one. */
static enum token_state token_state(struct smq_admin *a, struct MHD_Connection *conn)
{
    const char *got = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
    enum token_state st = TOKEN_NONE;

    pthread_mutex_lock(&a->lock);
    if (a->expected_auth != NULL) {
        size_t len = strlen(a->expected_auth);
        st = got != NULL && strlen(got) == len && crypto_equal(got, a->expected_auth, len)
             ? TOKEN_OK : TOKEN_BAD;
    }
    pthread_mutex_unlock(&a->lock);
    return st;
}

static bool is_get(const char *method)
{
    return strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
}

static void reply_use_get(struct admin_reply *r)
{
    admin_reply_error(r, 405, "MethodNotAllowed", "%s", "Use GET.");
    r->allow = "GET, HEAD";
}

static void handle_api(struct smq_admin *a, const char *method, const char *path,
                       const char *query, struct admin_reply *r)
{
    struct engine_call *c = call_new();

    if (c == NULL) {
        admin_reply_error(r, 500, "InternalError", "%s", "Out of memory.");
        return;
    }
    if (admin_api_prepare(method, path, query, &c->job, r) != 0) {
        call_free(c);
        return;
    }
    run_api_call(a, c, r);
}

/*
 * A browser must not drive this listener: a page could POST a purge (a
 * "simple" cross-site request needs no preflight), or read message bodies
 * through a DNS name rebound to 127.0.0.1.  Browsers mark their requests
 * (Origin on every cross-site POST, Sec-Fetch-Site); without a token, the
 * Host must be an address literal or localhost, which a rebinding attack
 * cannot produce.  smqctl, curl and Prometheus send neither header.
 */
static bool host_is_literal(const char *host)
{
    char name[64];
    unsigned char addr[16];
    size_t len;

    if (host[0] == '[') {
        len = strcspn(host + 1, "]");
        if (host[1 + len] != ']' || len >= sizeof name)
            return false;
        memcpy(name, host + 1, len);
        name[len] = '\0';
        return inet_pton(AF_INET6, name, addr) == 1;
    }
    len = strcspn(host, ":");
    if (len >= sizeof name)
        return false;
    memcpy(name, host, len);
    name[len] = '\0';
    return inet_pton(AF_INET, name, addr) == 1 || strcasecmp(name, "localhost") == 0;
}

static const char *browser_refusal(struct MHD_Connection *conn, enum token_state token)
{
    const char *site = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Sec-Fetch-Site");
    const char *host = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Host");

    if (MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Origin") != NULL
        || (site != NULL && strcmp(site, "none") != 0))
        return "Requests from web pages are refused (Origin / Sec-Fetch-Site).";
    if (host != NULL && !host_is_literal(host) && token == TOKEN_NONE)
        return "Without an [admin] token the Host must be an IP address or localhost "
               "(a DNS name could be rebound to this listener).";
    return NULL;
}

/* Decides the reply for a complete request.  path is cut at '?'. */
static void dispatch(struct smq_admin *a, struct MHD_Connection *conn, const char *method,
                     struct admin_req *req, struct admin_reply *r)
{
    char *path = req->target, *query = strchr(path, '?');
    enum token_state token;
    const char *why;

    if (query != NULL)
        *query++ = '\0';
    if (strcmp(path, "/health") == 0) {
        /* Liveness only: no token, no body check, no engine. */
        if (is_get(method))
            reply_text(r, 200, "ok\n");
        else
            reply_use_get(r);
        return;
    }
    token = token_state(a, conn);
    if ((why = browser_refusal(conn, token)) != NULL) {
        admin_reply_error(r, 403, "Forbidden", "%s", why);
        return;
    }
    if (token == TOKEN_BAD) {
        admin_reply_error(r, 401, "Unauthorized", "%s",
                          "Send the [admin] token as Authorization: Bearer <token>.");
        return;
    }
    if (req->body_bytes > 0) {
        admin_reply_error(r, 400, "InvalidArgument", "%s", "Admin requests take no body; "
                          "parameters go in the query string.");
        return;
    }
    if (strcmp(path, "/ready") == 0 || strcmp(path, "/metrics") == 0) {
        if (!is_get(method))
            reply_use_get(r);
        else if (strcmp(path, "/ready") == 0)
            handle_ready(a, r);
        else
            handle_metrics(a, r);
        return;
    }
    handle_api(a, method, path, query, r);
}

/* ---- libmicrohttpd glue ---------------------------------------------------------------------- */

static enum MHD_Result send_reply(struct MHD_Connection *conn, struct admin_reply *r)
{
    struct MHD_Response *mr;
    enum MHD_Result ret;
    size_t len = 0;
    char *data;

    if (buf_failed(&r->body)) {
        buf_free(&r->body);
        buf_init(&r->body);
        reply_text(r, 500, "out of memory\n");
    }
    data = buf_take(&r->body, &len);
    mr = data != NULL ? MHD_create_response_from_buffer(len, data, MHD_RESPMEM_MUST_FREE)
                      : MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    if (mr == NULL) {
        free(data);
        return MHD_NO;
    }
    MHD_add_response_header(mr, "Content-Type", r->content_type);
    MHD_add_response_header(mr, "Cache-Control", "no-store");
    if (r->allow != NULL)
        MHD_add_response_header(mr, "Allow", r->allow);
    if (r->status == 401)
        MHD_add_response_header(mr, "WWW-Authenticate", "Bearer realm=\"smqd-admin\"");
    ret = MHD_queue_response(conn, (unsigned int)r->status, mr);
    MHD_destroy_response(mr);
    return ret;
}

static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
    struct smq_admin *a = cls;
    struct admin_req *req = calloc(1, sizeof *req);

    conn_reaper_phase(a->reaper, conn, PHASE_HEADERS);
    if (req != NULL && (req->target = strdup(uri != NULL ? uri : "")) == NULL) {
        free(req);
        req = NULL;
    }
    return req;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct smq_admin *a = cls;
    struct admin_req *req = *req_cls;

    (void)toe;
    conn_reaper_phase(a->reaper, conn, PHASE_IDLE);
    if (req != NULL) {
        free(req->target);
        free(req);
        *req_cls = NULL;
    }
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **req_cls)
{
    struct smq_admin *a = cls;
    struct admin_req *req = *req_cls;
    struct admin_reply reply;
    enum MHD_Result ret;

    (void)url, (void)version, (void)upload_data;
    if (req == NULL)
        return MHD_NO;                /* out of memory at on_uri: drop the connection */
    if (!req->started) {
        req->started = true;
        conn_reaper_phase(a->reaper, conn, PHASE_BODY);
        return MHD_YES;
    }
    if (*upload_data_size > 0) {
        req->body_bytes += *upload_data_size;
        *upload_data_size = 0;
        return req->body_bytes > ADMIN_MAX_BODY ? MHD_NO : MHD_YES;
    }
    conn_reaper_phase(a->reaper, conn, PHASE_WORKING);
    admin_reply_init(&reply);
    dispatch(a, conn, method, req, &reply);
    ret = send_reply(conn, &reply);
    admin_reply_free(&reply);
    return ret;
}


/* "Bearer TOKEN" in *out, or NULL for no (or an empty) token.  -1 when
 * out of memory. */
static int make_expected_auth(const char *token, char **out)
{
    size_t n;

    *out = NULL;
    if (token == NULL || token[0] == '\0')
        return 0;
    n = strlen("Bearer ") + strlen(token) + 1;
    if ((*out = malloc(n)) == NULL)
        return -1;
    snprintf(*out, n, "Bearer %s", token);
    return 0;
}

static void free_expected_auth(char *auth)
{
    if (auth != NULL)
        explicit_bzero(auth, strlen(auth));
    free(auth);
}

int admin_set_token(struct smq_admin *a, const char *token)
{
    char *fresh, *old;

    if (a == NULL)
        return 0;
    if (make_expected_auth(token, &fresh) != 0)
        return -1;
    pthread_mutex_lock(&a->lock);
    old = a->expected_auth;
    a->expected_auth = fresh;
    pthread_mutex_unlock(&a->lock);
    free_expected_auth(old);
    return 0;
}

static int copy_opts(struct smq_admin *a, const struct admin_opts *opts)
{
    if (make_expected_auth(opts->token, &a->expected_auth) != 0)
        return -1;
    if (opts->db_path != NULL && (a->db_path = strdup(opts->db_path)) == NULL)
        return -1;
    a->extra_metrics = opts->extra_metrics;
    a->extra_arg = opts->extra_arg;
    return 0;
}

static void admin_free(struct smq_admin *a)
{
    free_expected_auth(a->expected_auth);
    free(a->db_path);
    free(a->wal_path);
    conn_reaper_free(a->reaper);
    pthread_cond_destroy(&a->idle);
    pthread_mutex_destroy(&a->lock);
    free(a);
}

static struct MHD_Daemon *start_daemon(struct smq_admin *a, const struct sockaddr_storage *ss,
                                       bool ipv6, uint16_t port)
{
    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION
                         | MHD_USE_POLL | MHD_USE_ERROR_LOG;

    if (ipv6)
        flags |= MHD_USE_IPv6;
    return MHD_start_daemon(
        flags, port, NULL, NULL, on_request, a,
        /* First, so it sees every message. */
        MHD_OPTION_EXTERNAL_LOGGER, log_library_line, (void *)"admin: libmicrohttpd",
        MHD_OPTION_SOCK_ADDR, (const struct sockaddr *)ss,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned int)ADMIN_MAX_CONNECTIONS,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)ADMIN_IDLE_TIMEOUT_S,
        MHD_OPTION_THREAD_STACK_SIZE, (size_t)ADMIN_STACK_BYTES,
        MHD_OPTION_URI_LOG_CALLBACK, on_uri, a,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, a,
        MHD_OPTION_NOTIFY_CONNECTION, conn_reaper_on_connection, a->reaper,
        MHD_OPTION_END);
}

int admin_start(const struct admin_opts *opts, struct smq_admin **out, char *err,
                size_t err_size)
{
    struct smq_admin *a = calloc(1, sizeof *a);
    struct sockaddr_storage ss;
    const union MHD_DaemonInfo *info;
    bool ipv6;

    *out = NULL;
    if (a == NULL) {
        snprintf(err, err_size, "out of memory");
        return -1;
    }
    pthread_mutex_init(&a->lock, NULL);
    pthread_cond_init(&a->idle, NULL);
    a->state = ADMIN_STARTING;
    a->start_ms = clock_epoch_ms(clock_system());
    if (copy_opts(a, opts) != 0) {
        snprintf(err, err_size, "out of memory");
        goto fail;
    }
    if (netaddr_make(opts->host, opts->port, &ss, &ipv6) != 0) {
        snprintf(err, err_size, "admin listen address '%s' is not an IP literal", opts->host);
        goto fail;
    }
    a->reaper = conn_reaper_start("admin: ", ADMIN_REQUEST_TIMEOUT_S, ADMIN_IDLE_TIMEOUT_S);
    if (a->reaper == NULL) {
        snprintf(err, err_size, "cannot start the admin listener's slow-client reaper thread");
        goto fail;
    }
    a->daemon = start_daemon(a, &ss, ipv6, opts->port);
    if (a->daemon == NULL) {
        snprintf(err, err_size, "cannot listen on %s:%u for the admin listener (in use, or "
                 "not an address of this host)", opts->host, (unsigned)opts->port);
        goto fail;
    }
    info = MHD_get_daemon_info(a->daemon, MHD_DAEMON_INFO_BIND_PORT);
    a->port = info != NULL ? info->port : opts->port;
    *out = a;
    return 0;

fail:
    admin_free(a);
    return -1;
}

uint16_t admin_port(const struct smq_admin *a)
{
    return a != NULL ? a->port : 0;
}

void admin_stop(struct smq_admin *a)
{
    if (a == NULL)
        return;
    /* Handlers still waiting on the engine would hold MHD_stop_daemon up;
     * main.c detaches the server first, so none is. */
    conn_reaper_stop(a->reaper);
    MHD_stop_daemon(a->daemon);
    admin_free(a);
}
