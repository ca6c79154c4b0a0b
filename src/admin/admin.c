/*
 * admin.c — owns the admin listener (admin.h): its HTTP handler on the
 * shared glue, the process state /ready reports, the Bearer tokens (the
 * full one and the read-only one, with what each may ask) and the refusal
 * of browsers, and the way its requests reach the engine.  What
 * the probes answer is admin_probe.c's, the /v1 routes admin_api.c's.
 *
 * Engine calls.  A request that needs the engine puts its ops in its own
 * per-request storage, suspends its connection with a deadline and submits
 * them; the last op's done callback resumes it.  Past the deadline it is
 * answered without them (a probe: "broken"; the API: 504), and the glue
 * keeps its storage, ops included, until the engine has finished them.
 *
 * The engine thread is lent by main.c (admin_attach_engine_thread) and
 * taken back (admin_detach_engine_thread) after engine_thread_stop; in
 * between, in_flight counts requests that submitted and have not been
 * answered, so that the engine thread and the handle keys they render with
 * are not freed under them.
 */
#include "smqd/admin.h"

#include <arpa/inet.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "smqd/clock.h"
#include "smqd/crypto.h"
#include "smqd/httpd.h"
#include "smqd/log.h"
#include "smqd/role.h"

#define ADMIN_MAX_CONNECTIONS 64
#define ADMIN_IDLE_TIMEOUT_S 10
/* A request (line, headers and any body) must be complete within this: a
 * client trickling bytes would otherwise hold one of the 64 connections
 * for ever (reaper.h). */
#define ADMIN_REQUEST_TIMEOUT_S 10
#define ADMIN_ENGINE_WAIT_MS 30000      /* a JSON API call (a purge may be large) */
/* Requests waiting for the engine at once; beyond, 503 at once, so that a
 * stalled engine cannot take every connection. */
#define ADMIN_MAX_ENGINE_WAITERS 16
/* No admin request has a body; a larger one than this is refused before
 * it is read. */
#define ADMIN_MAX_BODY 65536

struct smq_admin {
    struct httpd *http;
    char *expected_auth;             /* "Bearer TOKEN", or NULL = no token; under lock */
    /* "Bearer READ_TOKEN", or NULL; under lock, and only beside expected_auth */
    char *expected_read_auth;
    char *db_path;
    char *wal_path;                  /* under lock; NULL until the store is open */
    int (*extra_metrics)(void *arg, struct smq_buf *out);
    void *extra_arg;
    int64_t start_ms;
    int state;                       /* enum admin_state; atomic */
    const struct smq_role *role;     /* NULL: serving is not gated by a lease */
    pthread_mutex_t lock;            /* guards server, keys, in_flight, both auths, wal_path */
    pthread_cond_t idle;             /* in_flight dropped to 0 */
    struct smq_engine_thread *thread;
    const struct handle_keys *keys;
    int in_flight;
    int engine_waiters;              /* atomic: requests suspended for the engine */
    uint64_t denied;                 /* atomic: smqd_admin_denied_total */
};

enum admin_route { ROUTE_API, ROUTE_READY, ROUTE_METRICS };

/* One request's state (the glue's per-request storage). */
struct admin_req {
    struct smq_admin *a;
    struct httpd_req *http;
    enum admin_route route;
    struct admin_job job;            /* the ops, for the API and the probes alike */
    size_t pending;                  /* atomic: ops the engine has not finished */
    const struct handle_keys *keys;  /* while the server is held */
    bool held;                       /* counted in in_flight and engine_waiters */
};

/* ---- state and the borrowed server -------------------------------------------- */

void admin_set_state(struct smq_admin *a, enum admin_state state)
{
    if (a != NULL)
        __atomic_store_n(&a->state, (int)state, __ATOMIC_RELEASE);
}

/* READY only while the node serves: a node on PostgreSQL that cannot
 * prove its lease is a standby whatever its main thread last set. */
static enum admin_state get_state(struct smq_admin *a)
{
    enum admin_state st = (enum admin_state)__atomic_load_n(&a->state, __ATOMIC_ACQUIRE);

    if (st == ADMIN_READY && a->role != NULL && !role_serving(a->role, clock_mono_us()))
        return ADMIN_STANDBY;
    return st;
}

void admin_attach_engine_thread(struct smq_admin *a, struct smq_engine_thread *s,
                                const struct handle_keys *keys)
{
    if (a == NULL)
        return;
    pthread_mutex_lock(&a->lock);
    a->thread = s;
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

void admin_detach_engine_thread(struct smq_admin *a)
{
    if (a == NULL)
        return;
    pthread_mutex_lock(&a->lock);
    a->thread = NULL;
    a->keys = NULL;
    while (a->in_flight > 0)
        pthread_cond_wait(&a->idle, &a->lock);
    pthread_mutex_unlock(&a->lock);
}

/* The engine thread, counted in in_flight until release_thread; NULL when there is none. */
static struct smq_engine_thread *acquire_thread(struct smq_admin *a,
                                                const struct handle_keys **keys)
{
    struct smq_engine_thread *s;

    pthread_mutex_lock(&a->lock);
    s = a->thread;
    *keys = a->keys;
    if (s != NULL)
        a->in_flight++;
    pthread_mutex_unlock(&a->lock);
    return s;
}

static void release_thread(struct smq_admin *a)
{
    pthread_mutex_lock(&a->lock);
    if (--a->in_flight == 0)
        pthread_cond_broadcast(&a->idle);
    pthread_mutex_unlock(&a->lock);
}

/* ---- engine calls ------------------------------------------------------------------ */

/* A place among the requests that wait for the engine, or false when
 * ADMIN_MAX_ENGINE_WAITERS already do. */
static bool waiter_enter(struct smq_admin *a)
{
    if (__atomic_add_fetch(&a->engine_waiters, 1, __ATOMIC_ACQ_REL) <= ADMIN_MAX_ENGINE_WAITERS)
        return true;
    __atomic_sub_fetch(&a->engine_waiters, 1, __ATOMIC_ACQ_REL);
    return false;
}

/* Engine thread (or the submitting thread, when the server has stopped). */
static void on_op_done(struct smq_op *op, void *arg)
{
    struct admin_req *d = arg;

    (void)op;
    if (__atomic_sub_fetch(&d->pending, 1, __ATOMIC_ACQ_REL) == 0)
        httpd_resume(d->http);
}

/* Submits d's ops in order, its connection suspended for at most wait_ms.
 * false: the request was answered instead (no engine, or too many waiting).
 * A probe asks the engine whenever there is one, so /metrics keeps its
 * engine figures while smqd drains; API requests only when ready. */
static bool submit_job(struct admin_req *d, int wait_ms, bool probe, struct admin_reply *r)
{
    struct smq_admin *a = d->a;
    struct smq_engine_thread *s = acquire_thread(a, &d->keys);

    if (s == NULL || (!probe && get_state(a) != ADMIN_READY)) {
        admin_reply_error(r, 503, "ServiceUnavailable", "%s", "smqd is starting or stopping; "
                          "the engine does not take requests now.");
    } else if (!waiter_enter(a)) {
        admin_reply_error(r, 503, "ServiceUnavailable", "%d admin requests already wait for "
                          "the engine; try again later.", ADMIN_MAX_ENGINE_WAITERS);
    } else {
        d->held = true;
        d->pending = d->job.n_ops;
        for (size_t i = 0; i < d->job.n_ops; i++) {
            d->job.ops[i].done = on_op_done;
            d->job.ops[i].done_arg = d;
        }
        httpd_suspend(d->http, (uint64_t)wait_ms);
        for (size_t i = 0; i < d->job.n_ops; i++)
            engine_thread_submit(s, &d->job.ops[i]);
        return true;
    }
    if (s != NULL)
        release_thread(a);
    return false;
}

/* The request was resumed: it no longer waits, and after its answer it no
 * longer needs the server. */
static void leave_engine(struct admin_req *d)
{
    if (!d->held)
        return;
    d->held = false;
    __atomic_sub_fetch(&d->a->engine_waiters, 1, __ATOMIC_ACQ_REL);
    release_thread(d->a);
}

/* ---- routing --------------------------------------------------------------------------- */

/* TOKEN_READ: the read-only token, which may ask only what read_only_request allows. */
enum token_state { TOKEN_NONE, TOKEN_OK, TOKEN_READ, TOKEN_BAD };

/* got is exactly expected (never when either is NULL), in time that does not
 * depend on where they differ. */
static bool auth_matches(const char *got, const char *expected)
{
    size_t len;

    if (got == NULL || expected == NULL)
        return false;
    len = strlen(expected);
    return strlen(got) == len && crypto_equal(got, expected, len);
}

/* The request's standing against the tokens, read once under the lock: a
 * SIGHUP may swap them (admin_set_tokens), and every check of a request
 * (browser_refusal, 401, the read token's scope) must see one pair.  Both
 * are compared whichever matches, so the time does not tell which. */
static enum token_state token_state(struct smq_admin *a, struct httpd_req *r)
{
    const char *got = httpd_req_header(r, "Authorization");
    enum token_state st = TOKEN_NONE;
    bool full, read;

    pthread_mutex_lock(&a->lock);
    if (a->expected_auth != NULL) {
        full = auth_matches(got, a->expected_auth);
        read = auth_matches(got, a->expected_read_auth);
        st = full ? TOKEN_OK : read ? TOKEN_READ : TOKEN_BAD;
    }
    pthread_mutex_unlock(&a->lock);
    return st;
}

static bool is_get(const char *method)
{
    return strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
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

static const char *browser_refusal(struct httpd_req *r, enum token_state token)
{
    const char *site = httpd_req_header(r, "Sec-Fetch-Site");
    const char *host = httpd_req_header(r, "Host");

    if (httpd_req_header(r, "Origin") != NULL || (site != NULL && strcmp(site, "none") != 0))
        return "Requests from web pages are refused (Origin / Sec-Fetch-Site).";
    if (host != NULL && !host_is_literal(host) && token == TOKEN_NONE)
        return "Without an [admin] token the Host must be an IP address or localhost "
               "(a DNS name could be rebound to this listener).";
    return NULL;
}

/* path is PREFIX + NAME + suffix, NAME non-empty and without a '/'. */
static bool is_named(const char *path, const char *prefix, const char *suffix)
{
    size_t plen = strlen(prefix), slen = strlen(suffix), len = strlen(path);
    const char *name = path + plen;
    size_t name_len = len - plen - slen;

    if (len <= plen + slen || strncmp(path, prefix, plen) != 0
        || strcmp(path + len - slen, suffix) != 0)
        return false;
    return memchr(name, '/', name_len) == NULL;
}

/*
 * What the read-only token may ask (docs/admin-api.md): GET or HEAD of the
 * probes, of the queue statistics, which show counts and settings, and of
 * the topic and subscription listings, which show settings.  Not a peek:
 * message bodies are the queues' data, not statistics.  A list of what is
 * allowed rather than of what is not, so that a route added to admin_api.c
 * is refused to this token until it is named here.  path is without its
 * query; a malformed NAME is admin_api.c's to refuse (400).
 */
static bool read_only_request(const char *method, const char *path)
{
    if (!is_get(method))
        return false;
    return strcmp(path, "/ready") == 0 || strcmp(path, "/metrics") == 0
        || strcmp(path, "/v1/queues") == 0 || strcmp(path, "/v1/topics") == 0
        || is_named(path, "/v1/queues/", "")
        || is_named(path, "/v1/topics/", "/subscriptions");
}

/* 403 for a request beyond the read-only token's scope, logged (never the
 * token) and counted, so an operator sees a scraper that was given too
 * little or a token that is being tried on more than it may do. */
static void deny_read_token(struct smq_admin *a, const struct httpd_req *r, const char *method,
                            const char *path, struct admin_reply *reply)
{
    __atomic_add_fetch(&a->denied, 1, __ATOMIC_RELAXED);
    SMQ_WARN("admin: %.16s %.256s refused: the read-only token may not make this request "
             "(client=%s)", method, path, httpd_req_client(r));
    admin_reply_error(reply, 403, "Forbidden", "The read-only token may not %.16s %.256s; "
                      "use the [admin] token.", method, path);
}

/* Who may ask, and how: false when the request may go on, else true with
 * the refusal in reply.  path is the target without its query. */
static bool refused(struct smq_admin *a, struct httpd_req *r, const char *path,
                    struct admin_reply *reply)
{
    enum token_state token = token_state(a, r);
    const char *method = httpd_req_method(r);
    const char *why = browser_refusal(r, token);
    struct smq_errinfo ei = {0, ""};
    int problem = httpd_req_problem(r, &ei);
    size_t body_len;

    httpd_req_body(r, &body_len);
    if (problem == SMQ_E_SERVICE_UNAVAILABLE)
        admin_reply_error(reply, 503, "ServiceUnavailable", "%s", errors_message(&ei));
    else if (why != NULL)
        admin_reply_error(reply, 403, "Forbidden", "%s", why);
    else if (token == TOKEN_BAD)
        admin_reply_error(reply, 401, "Unauthorized", "%s",
                          "Send the [admin] token as Authorization: Bearer <token>.");
    else if (token == TOKEN_READ && !read_only_request(method, path))
        deny_read_token(a, r, method, path, reply);
    else if (body_len > 0 || problem == SMQ_E_REQUEST_TOO_LARGE)
        admin_reply_error(reply, 400, "InvalidArgument", "%s", "Admin requests take no body; "
                          "parameters go in the query string.");
    else if (ei.err != 0)
        admin_reply_error(reply, 400, "InvalidArgument", "%s", errors_message(&ei));
    else
        return false;
    return true;
}

static void reply_use_get(struct admin_reply *r)
{
    admin_reply_error(r, 405, "MethodNotAllowed", "%s", "Use GET.");
    r->allow = "GET, HEAD";
}

static int64_t file_size(const char *path)
{
    struct stat st;

    return path != NULL && stat(path, &st) == 0 ? (int64_t)st.st_size : -1;
}

/* Size of the WAL where SQLite keeps it (through any symbolic links, so not
 * at PATH + "-wal"), or -1 (not known yet, or absent). */
static int64_t wal_size(struct smq_admin *a)
{
    int64_t size = -1;

    pthread_mutex_lock(&a->lock);
    if (a->wal_path != NULL)
        size = file_size(a->wal_path);
    pthread_mutex_unlock(&a->lock);
    return size;
}

/* A probe's answer from its finished STATS op (NULL: none in time). */
static void answer_probe(struct admin_req *d, const struct smq_op *stats, struct admin_reply *r)
{
    struct smq_admin *a = d->a;
    struct admin_probe_facts facts = {.start_time_ms = a->start_ms,
                                      .ready = get_state(a) == ADMIN_READY,
                                      .db_bytes = file_size(a->db_path),
                                      .wal_bytes = wal_size(a),
                                      .admin_denied = __atomic_load_n(&a->denied,
                                                                      __ATOMIC_RELAXED),
                                      .extra = a->extra_metrics, .extra_arg = a->extra_arg};

    if (d->route == ROUTE_READY)
        admin_probe_ready(get_state(a), stats, r);
    else
        admin_probe_metrics(&facts, stats, r);
}

/* A probe that needs the engine: one STATS op (totals only for /ready;
 * with every topic's figures for /metrics). */
static bool start_probe(struct admin_req *d, enum admin_route route, struct admin_reply *r)
{
    struct smq_op *op = &d->job.ops[0];

    d->route = route;
    if (route == ROUTE_READY && admin_probe_ready_early(get_state(d->a), r))
        return false;
    op_init(op, SMQ_OP_STATS);
    op->stats.totals_only = route == ROUTE_READY;
    op->stats.with_topics = route == ROUTE_METRICS;     /* the per-topic metric families */
    d->job.n_ops = 1;
    if (submit_job(d, ADMIN_PROBE_WAIT_MS, true, r))
        return true;
    /* No engine now: the probe answers from what it knows without one. */
    answer_probe(d, NULL, r);
    return false;
}

/* Decides the request: answered in reply (false), or submitted (true). */
static bool dispatch(struct admin_req *d, struct admin_reply *reply)
{
    struct httpd_req *r = d->http;
    const char *method = httpd_req_method(r);
    char *path = strdup(httpd_req_target(r)), *query;
    bool submitted = false;

    if (path == NULL) {
        admin_reply_error(reply, 500, "InternalError", "%s", "Out of memory.");
        return false;
    }
    if ((query = strchr(path, '?')) != NULL)
        *query++ = '\0';
    if (strcmp(path, "/health") == 0) {
        /* Liveness only: no token, no body check, no engine. */
        if (is_get(method))
            admin_probe_health(reply);
        else
            reply_use_get(reply);
    } else if (refused(d->a, r, path, reply)) {
    } else if (strcmp(path, "/ready") == 0 || strcmp(path, "/metrics") == 0) {
        if (!is_get(method))
            reply_use_get(reply);
        else
            submitted = start_probe(d, path[1] == 'r' ? ROUTE_READY : ROUTE_METRICS, reply);
    } else if (admin_api_prepare(method, path, query, &d->job, reply) == 0) {
        d->route = ROUTE_API;
        submitted = submit_job(d, ADMIN_ENGINE_WAIT_MS, false, reply);
    }
    free(path);
    return submitted;
}

/* ---- the handler ----------------------------------------------------------------------- */

static void send_reply(struct httpd_req *r, struct admin_reply *reply)
{
    struct http_header extra[3];
    size_t n = 0;

    if (buf_failed(&reply->body)) {
        buf_free(&reply->body);
        buf_init(&reply->body);
        reply->status = 500;
        reply->content_type = "text/plain; charset=utf-8";
        buf_puts(&reply->body, "out of memory\n");
    }
    extra[n++] = (struct http_header){"Cache-Control", "no-store"};
    if (reply->allow != NULL)
        extra[n++] = (struct http_header){"Allow", reply->allow};
    if (reply->status == 401)
        extra[n++] = (struct http_header){"WWW-Authenticate", "Bearer realm=\"smqd-admin\""};
    httpd_respond(r, reply->status, &reply->body, reply->content_type, extra, n);
}

static void on_request(void *arg, struct httpd_req *r)
{
    struct admin_req *d = httpd_req_data(r);
    struct admin_reply reply;

    d->a = arg;
    d->http = r;
    admin_reply_init(&reply);
    if (!dispatch(d, &reply))
        send_reply(r, &reply);
    admin_reply_free(&reply);
}

static void on_resume(void *arg, struct httpd_req *r, bool timed_out)
{
    struct admin_req *d = httpd_req_data(r);
    struct admin_reply reply;

    (void)arg;
    admin_reply_init(&reply);
    if (d->route != ROUTE_API)
        answer_probe(d, timed_out ? NULL : &d->job.ops[0], &reply);
    else if (timed_out)
        admin_reply_error(&reply, 504, "Timeout", "The engine did not answer within %d s; the "
                          "operation may still complete.", ADMIN_ENGINE_WAIT_MS / 1000);
    else
        admin_api_render(&d->job, d->keys, clock_epoch_ms(clock_system()), &reply);
    /* After the render: the keys belong to the engine, held until now. */
    leave_engine(d);
    send_reply(r, &reply);
    admin_reply_free(&reply);
}

/* The engine has finished every op too by now (the glue waits for it). */
static void on_done(void *arg, struct httpd_req *r)
{
    struct admin_req *d = httpd_req_data(r);

    (void)arg;
    leave_engine(d);
    admin_api_release(&d->job);
}

/* ---- start and stop ---------------------------------------------------------------------- */

/* "Bearer TOKEN" in *out, or NULL for no (or an empty) token.  0 or SMQ_E_NOMEM. */
static int make_expected_auth(const char *token, char **out)
{
    size_t n;

    *out = NULL;
    if (token == NULL || token[0] == '\0')
        return 0;
    n = strlen("Bearer ") + strlen(token) + 1;
    if ((*out = malloc(n)) == NULL)
        return SMQ_E_NOMEM;
    snprintf(*out, n, "Bearer %s", token);
    return 0;
}

static void free_expected_auth(char *auth)
{
    if (auth != NULL)
        explicit_bzero(auth, strlen(auth));
    free(auth);
}

/* Both expected headers, or neither (SMQ_E_NOMEM).  A read token without a
 * full one is dropped: it narrows what a token grants, and the
 * configuration refuses it alone anyway (docs/admin-api.md). */
static int make_expected_auths(const char *token, const char *read_token, char **full,
                               char **read)
{
    *read = NULL;
    if (make_expected_auth(token, full) != 0)
        return SMQ_E_NOMEM;
    if (*full != NULL && make_expected_auth(read_token, read) != 0) {
        free_expected_auth(*full);
        *full = NULL;
        return SMQ_E_NOMEM;
    }
    return 0;
}

int admin_set_tokens(struct smq_admin *a, const char *token, const char *read_token)
{
    char *full, *read, *old_full, *old_read;

    if (a == NULL)
        return 0;
    if (make_expected_auths(token, read_token, &full, &read) != 0)
        return SMQ_E_NOMEM;
    /* One swap under the lock: no request sees a new token beside an old
     * read token. */
    pthread_mutex_lock(&a->lock);
    old_full = a->expected_auth;
    old_read = a->expected_read_auth;
    a->expected_auth = full;
    a->expected_read_auth = read;
    pthread_mutex_unlock(&a->lock);
    free_expected_auth(old_full);
    free_expected_auth(old_read);
    return 0;
}

static void admin_free(struct smq_admin *a)
{
    free_expected_auth(a->expected_auth);
    free_expected_auth(a->expected_read_auth);
    free(a->db_path);
    free(a->wal_path);
    pthread_cond_destroy(&a->idle);
    pthread_mutex_destroy(&a->lock);
    free(a);
}

static int copy_opts(struct smq_admin *a, const struct admin_opts *opts)
{
    if (make_expected_auths(opts->token, opts->read_token, &a->expected_auth,
                            &a->expected_read_auth) != 0)
        return SMQ_E_NOMEM;
    if (opts->db_path != NULL && (a->db_path = strdup(opts->db_path)) == NULL)
        return SMQ_E_NOMEM;
    a->extra_metrics = opts->extra_metrics;
    a->extra_arg = opts->extra_arg;
    a->role = opts->role;
    return 0;
}

int admin_start(const struct admin_opts *opts, struct smq_admin **out, char *err,
                size_t err_size)
{
    struct smq_admin *a = calloc(1, sizeof *a);
    struct httpd_opts hopts = {.name = "admin: ", .label = " for the admin listener",
                               .host = opts->host, .port = opts->port,
                               .threads = 1, .max_connections = ADMIN_MAX_CONNECTIONS,
                               .tls = opts->tls,
                               .idle_timeout_s = ADMIN_IDLE_TIMEOUT_S,
                               .request_timeout_s = ADMIN_REQUEST_TIMEOUT_S,
                               .max_body_bytes = ADMIN_MAX_BODY,
                               .data_size = sizeof(struct admin_req),
                               .handler = {on_request, on_resume, on_done}, .arg = a};
    int rc;

    *out = NULL;
    if (a == NULL) {
        snprintf(err, err_size, "out of memory");
        return SMQ_E_NOMEM;
    }
    pthread_mutex_init(&a->lock, NULL);
    pthread_cond_init(&a->idle, NULL);
    a->state = ADMIN_STARTING;
    a->start_ms = clock_epoch_ms(clock_system());
    rc = copy_opts(a, opts);
    if (rc != 0)
        snprintf(err, err_size, "out of memory");
    else
        rc = httpd_start(&hopts, &a->http, err, err_size);
    if (rc != 0) {
        admin_free(a);
        return rc;
    }
    *out = a;
    return 0;
}

uint16_t admin_port(const struct smq_admin *a)
{
    return a != NULL ? httpd_port(a->http) : 0;
}

void admin_stop(struct smq_admin *a)
{
    if (a == NULL)
        return;
    /* Requests still suspended would hold httpd_stop up; main.c stops the
     * engine first, which finishes every op and so resumes each of them. */
    httpd_stop(a->http);
    admin_free(a);
}
