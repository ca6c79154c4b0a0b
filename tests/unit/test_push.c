/*
 * test_push.c — the HTTP push pool (push.c; docs/protocol.md §13.10)
 * against a small HTTP/1.1 server of the test's own on 127.0.0.1: each
 * outcome (2xx, 403, other statuses, a 302 not followed, a timeout, a
 * connection closed early or refused, a body past the read cap), the
 * headers as received, keep-alive reuse, the in-flight cap and a stop
 * with attempts in flight; and the signature of §13.11, checked the way an
 * endpoint would: the string to sign rebuilt from the request as received
 * and verified with the certificate's public key by OpenSSL directly, also
 * for many signed pushes at once (the pool's signer threads), and a stop
 * with jobs still waiting for a signer.
 */
#define _GNU_SOURCE       /* strcasestr */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "scratch_dir.h"
#include "signing_test_key.h"
#include "smqd/crypto.h"
#include "smqd/errors.h"
#include "smqd/notify.h"
#include "smqd/push.h"

#define PUBLISH_MS 1704164645000LL           /* Tue, 02 Jan 2024 03:04:05 GMT */
#define MAX_CONNS 64
#define MAX_RESULTS 64
#define HUGE_BODY (64 * 1024 * 1024)          /* far past any socket buffers */


/* ---- a clock the server thread moves (atomics: read on the pool's thread) ---- */

struct test_clock {
    struct smq_clock clock;
    uint64_t mono_ms;
};

static uint64_t tc_mono(void *ctx)
{
    return __atomic_load_n(&((struct test_clock *)ctx)->mono_ms, __ATOMIC_ACQUIRE);
}

static int64_t tc_epoch(void *ctx)
{
    (void)ctx;
    return PUBLISH_MS;
}

/* ---- the test's HTTP server: one thread accepting, one per connection ---- */

struct server {
    int lfd, port;
    pthread_t acceptor;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool stopping;                           /* under lock: /slow answers are released */
    int accepts, requests, ok_hits;          /* under lock */
    bool huge_sent_whole;                    /* under lock: the client read all of /huge */
    int signed_ok, signed_bad;               /* under lock: signed requests that verified, not */
    char last_head[8192];                    /* under lock: the last request's head */
    char last_body[4096];
    size_t last_body_len;
    pthread_t conns[MAX_CONNS];
    int conn_fds[MAX_CONNS];
    int n_conns;
    struct test_clock *clock;
};

struct conn {
    struct server *s;
    int fd;
};

static bool send_all(int fd, const char *data, size_t len)
{
    while (len > 0) {
        ssize_t n = send(fd, data, len, MSG_NOSIGNAL);
        if (n <= 0)
            return false;
        data += n;
        len -= (size_t)n;
    }
    return true;
}

/* Reads one request (head and Content-Length body) into buf; its head's
 * length in *head_len, the whole request's in *req_len; *have is what buf
 * holds (a request may follow on a kept-alive connection).  false at EOF. */
static bool read_request(int fd, char *buf, size_t cap, size_t *have, size_t *head_len,
                         size_t *req_len)
{
    char *end;
    size_t body = 0;

    for (;;) {
        if (*have > 0 && buf[0] == 0x16)
            return false;                    /* a TLS ClientHello: not spoken here */
        buf[*have] = '\0';
        end = strstr(buf, "\r\n\r\n");
        if (end != NULL) {
            const char *cl = strcasestr(buf, "\r\ncontent-length:");
            *head_len = (size_t)(end - buf) + 4;
            body = cl != NULL && cl < end ? strtoul(cl + 17, NULL, 10) : 0;
            if (*have >= *head_len + body) {
                *req_len = *head_len + body;
                return true;
            }
        }
        if (*have + 1 >= cap)
            return false;
        ssize_t n = recv(fd, buf + *have, cap - 1 - *have, 0);
        if (n <= 0)
            return false;
        *have += (size_t)n;
    }
}

static bool push_verifies(const char *head, const char *body, size_t body_len);

/* Every request is recorded, and each signed one checked as an endpoint
 * would (§13.11) as it comes. */
static void record(struct server *s, const char *req, size_t head_len, size_t req_len,
                   const char *path)
{
    static __thread char head[8192];
    bool is_signed, ok = false;

    snprintf(head, sizeof head, "%.*s", (int)head_len, req);
    is_signed = strstr(head, "\r\nauthorization: ") != NULL;
    if (is_signed)
        ok = push_verifies(head, req + head_len, req_len - head_len);
    pthread_mutex_lock(&s->lock);
    s->requests++;
    s->signed_ok += is_signed && ok;
    s->signed_bad += is_signed && !ok;
    if (strcmp(path, "/ok") == 0)
        s->ok_hits++;
    snprintf(s->last_head, sizeof s->last_head, "%.*s", (int)head_len, req);
    s->last_body_len = req_len - head_len < sizeof s->last_body ? req_len - head_len : 0;
    memcpy(s->last_body, req + head_len, s->last_body_len);
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
}

/* Holds the connection until the server stops (or 10 s). */
static void hold(struct server *s)
{
    struct timespec until;

    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    pthread_mutex_lock(&s->lock);
    while (!s->stopping && pthread_cond_timedwait(&s->cond, &s->lock, &until) == 0) {
    }
    pthread_mutex_unlock(&s->lock);
}

/* Sends a HUGE_BODY answer; a client that reads it all gets to keep the
 * connection. */
static bool send_huge(struct server *s, int fd)
{
    char head[100], chunk[65536];
    size_t sent = 0;

    snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", HUGE_BODY);
    memset(chunk, 'x', sizeof chunk);
    if (!send_all(fd, head, strlen(head)))
        return false;
    while (sent < HUGE_BODY && send_all(fd, chunk, sizeof chunk))
        sent += sizeof chunk;
    pthread_mutex_lock(&s->lock);
    s->huge_sent_whole = sent == HUGE_BODY;
    pthread_mutex_unlock(&s->lock);
    return sent == HUGE_BODY;
}

/* Answers one request by its path; false closes the connection. */
static bool answer(struct server *s, int fd, const char *path)
{
    const char *reply = "HTTP/1.1 204 No Content\r\n\r\n";

    if (strcmp(path, "/created") == 0)
        reply = "HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n";
    else if (strcmp(path, "/fail") == 0)
        reply = "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n";
    else if (strcmp(path, "/forbid") == 0)
        reply = "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n";
    else if (strcmp(path, "/redirect") == 0)
        reply = "HTTP/1.1 302 Found\r\nLocation: /ok\r\nContent-Length: 0\r\n\r\n";
    else if (strcmp(path, "/slow") == 0) {
        hold(s);
        return false;
    } else if (strcmp(path, "/slowbody") == 0) {
        static const char part[] = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc";
        send_all(fd, part, sizeof part - 1);
        hold(s);
        return false;
    } else if (strcmp(path, "/close") == 0)
        return false;
    else if (strcmp(path, "/huge") == 0)
        return send_huge(s, fd);
    else if (strcmp(path, "/tick") == 0)
        __atomic_fetch_add(&s->clock->mono_ms, 7, __ATOMIC_ACQ_REL);
    return send_all(fd, reply, strlen(reply));
}

static void *conn_main(void *arg)
{
    struct conn c = *(struct conn *)arg;
    static __thread char buf[65536];
    size_t have = 0, head_len, req_len;
    char method[16], path[256];

    free(arg);
    /* any method is recorded: a followed redirect would come as a GET */
    while (read_request(c.fd, buf, sizeof buf, &have, &head_len, &req_len)) {
        if (sscanf(buf, "%15s %255s HTTP/1.1", method, path) != 2)
            break;
        record(c.s, buf, head_len, req_len, path);
        if (!answer(c.s, c.fd, path))
            break;
        memmove(buf, buf + req_len, have - req_len);
        have -= req_len;
    }
    shutdown(c.fd, SHUT_RDWR);
    return NULL;
}

static void take_connection(struct server *s, int fd)
{
    struct conn *c = malloc(sizeof *c);

    bool taken = false;

    /* No cmocka assertion here: this is the acceptor's thread.  A connection
     * it cannot take is closed, and the case fails on the push's outcome. */
    if (c == NULL) {
        close(fd);
        return;
    }
    c->s = s;
    c->fd = fd;
    pthread_mutex_lock(&s->lock);
    if (s->n_conns < MAX_CONNS
        && pthread_create(&s->conns[s->n_conns], NULL, conn_main, c) == 0) {
        s->accepts++;
        s->conn_fds[s->n_conns++] = fd;
        taken = true;
    }
    pthread_mutex_unlock(&s->lock);
    if (!taken) {
        close(fd);
        free(c);
    }
}

static void *accept_main(void *arg)
{
    struct server *s = arg;

    for (;;) {
        struct pollfd pfd = {.fd = s->lfd, .events = POLLIN};
        bool stopping;

        pthread_mutex_lock(&s->lock);
        stopping = s->stopping;
        pthread_mutex_unlock(&s->lock);
        if (stopping)
            break;
        if (poll(&pfd, 1, 50) == 1) {
            int fd = accept(s->lfd, NULL, NULL);
            if (fd >= 0)
                take_connection(s, fd);
        }
    }
    return NULL;
}

static int listen_loopback(int *port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    *port = ntohs(a.sin_port);
    return fd;
}

/* The fixture's locks check their owner, so that teardown can release one a
 * failed assertion left held (cmocka jumps out of the test with it locked;
 * the pool's done callback or the server would then block on it forever). */
static void lock_init(pthread_mutex_t *m)
{
    pthread_mutexattr_t a;

    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
    pthread_mutex_init(m, &a);
    pthread_mutexattr_destroy(&a);
}

/* Unlocks m if this thread holds it; EPERM (not ours, or not held) is fine. */
static void lock_release_if_held(pthread_mutex_t *m)
{
    (void)pthread_mutex_unlock(m);
}

static void server_start(struct server *s, struct test_clock *clock)
{
    memset(s, 0, sizeof *s);
    s->clock = clock;
    lock_init(&s->lock);
    pthread_cond_init(&s->cond, NULL);
    s->lfd = listen_loopback(&s->port);
    assert_int_equal(listen(s->lfd, 64), 0);
    assert_int_equal(pthread_create(&s->acceptor, NULL, accept_main, s), 0);
}

static void server_stop(struct server *s)
{
    pthread_mutex_lock(&s->lock);
    s->stopping = true;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->acceptor, NULL);
    /* n_conns cannot grow now: the acceptor has ended */
    for (int i = 0; i < s->n_conns; i++)
        shutdown(s->conn_fds[i], SHUT_RDWR);
    for (int i = 0; i < s->n_conns; i++) {
        pthread_join(s->conns[i], NULL);
        close(s->conn_fds[i]);
    }
    close(s->lfd);
    pthread_cond_destroy(&s->cond);
    pthread_mutex_destroy(&s->lock);
}

/* Waits until the server has seen n requests in all (10 s at most). */
static bool server_wait_requests(struct server *s, int n)
{
    struct timespec until;
    bool ok;

    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    pthread_mutex_lock(&s->lock);
    while (s->requests < n && pthread_cond_timedwait(&s->cond, &s->lock, &until) == 0) {
    }
    ok = s->requests >= n;
    pthread_mutex_unlock(&s->lock);
    return ok;
}

/* ---- the outcomes the pool hands back ---- */

struct results {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct smq_op_push r[MAX_RESULTS];
    int n;
};

static void on_done(void *arg, const struct smq_op_push *result)
{
    struct results *rs = arg;

    pthread_mutex_lock(&rs->lock);
    if (rs->n < MAX_RESULTS)
        rs->r[rs->n] = *result;
    rs->n++;
    pthread_cond_broadcast(&rs->cond);
    pthread_mutex_unlock(&rs->lock);
}

/* The result number i (0-based), once it came (60 s at most: valgrind on a
 * busy machine is slow, and only a failing case waits that long). */
static struct smq_op_push wait_result(struct results *rs, int i)
{
    struct timespec until;
    struct smq_op_push r = {0};
    bool came;

    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 60;
    pthread_mutex_lock(&rs->lock);
    while (rs->n <= i && pthread_cond_timedwait(&rs->cond, &rs->lock, &until) == 0) {
    }
    came = rs->n > i;
    if (came)
        r = rs->r[i];
    pthread_mutex_unlock(&rs->lock);
    assert_true(came);
    return r;
}

/* ---- a fixture: the server, a pool, its results ---- */

struct fx {
    struct test_clock clock;
    struct server srv;
    struct results rs;
    struct push_pool *pool;
    struct crypto_signer *signer;            /* the pool's, when it signs; freed after it */
    int next_id;
    bool started;                /* fx_start ran and fx_stop did not */
};

/* The fixture lives on the heap, owned by setup and teardown: a test whose
 * assertion fails (cmocka jumps out of it) still has its pool and server
 * threads stopped before the next test starts. */
static void fx_stop(struct fx *f);

static int fx_setup(void **state)
{
    *state = calloc(1, sizeof(struct fx));
    return *state != NULL ? 0 : -1;
}

static int fx_teardown(void **state)
{
    struct fx *f = *state;

    if (f->started) {
        lock_release_if_held(&f->rs.lock);
        lock_release_if_held(&f->srv.lock);
        fx_stop(f);
    }
    crypto_signer_free(f->signer);   /* a test that failed between load and start */
    free(f);
    return 0;
}

/* The signer of the test key, loaded from a scratch file removed at once. */
static struct crypto_signer *load_test_signer(void)
{
    char dir[] = "/tmp/smqd-test-push-XXXXXX", path[64], err[512] = "";
    struct crypto_signer *k = NULL;
    FILE *file;
    int rc = -1;

    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/key.pem", dir);
    file = fopen(path, "w");
    if (file != NULL && fwrite(KEY, 1, strlen(KEY), file) == strlen(KEY) && fclose(file) == 0)
        rc = crypto_signer_load(path, &k, err, sizeof err);
    else if (file != NULL)
        fclose(file);
    scratch_dir_remove(dir);
    if (rc != 0)
        fail_msg("the test key did not load: %s", err);
    return k;
}

/* Starts the server and a pool, signing with the test key when sign, with
 * sign_threads signer threads (0: the pool's default). */
static void fx_start_opts(struct fx *f, int concurrency, int64_t timeout_ms, bool sign,
                          int sign_threads)
{
    char err[200] = "";
    struct push_opts o = {
        .concurrency = concurrency, .timeout_ms = timeout_ms,
        .cert_url = "http://127.0.0.1:8080/smqd/signing-cert.pem",
        .account_id = "1000000000000000", .clock = &f->clock.clock,
        .done = on_done, .done_arg = &f->rs, .sign_threads = sign_threads,
    };

    memset(f, 0, sizeof *f);
    if (sign)
        f->signer = load_test_signer();
    o.signer = f->signer;
    f->clock.clock = (struct smq_clock){tc_mono, tc_epoch, &f->clock};
    f->clock.mono_ms = 1000;
    lock_init(&f->rs.lock);
    pthread_cond_init(&f->rs.cond, NULL);
    server_start(&f->srv, &f->clock);
    f->started = true;
    if (push_start(&o, &f->pool, err, sizeof err) != 0)
        fail_msg("push_start: %s", err);
}

static void fx_start_with(struct fx *f, int concurrency, int64_t timeout_ms, bool sign)
{
    fx_start_opts(f, concurrency, timeout_ms, sign, 0);
}

/* A signing pool with threads signer threads; its attempts time out after 30 s. */
static void fx_start_signing(struct fx *f, int concurrency, int threads)
{
    fx_start_opts(f, concurrency, 30000, true, threads);
}

static void fx_start(struct fx *f, int concurrency, int64_t timeout_ms)
{
    fx_start_with(f, concurrency, timeout_ms, false);
}

static void fx_stop(struct fx *f)
{
    f->started = false;
    push_stop(f->pool);
    crypto_signer_free(f->signer);           /* borrowed by the pool until it stopped */
    f->signer = NULL;
    server_stop(&f->srv);
    pthread_cond_destroy(&f->rs.cond);
    pthread_mutex_destroy(&f->rs.lock);
}

/* A SIMPLIFIED push of "hello world" tagged "important" to 127.0.0.1:port path. */
static struct push_job *make_job(struct fx *f, int port, const char *path)
{
    struct push_job *j = calloc(1, sizeof *j);

    assert_non_null(j);
    j->sub_id = ++f->next_id;
    j->seq = 100 + (uint64_t)f->next_id;
    j->attempt = 1;
    snprintf(j->endpoint, sizeof j->endpoint, "http://127.0.0.1:%d%s", port, path);
    j->format = SMQ_NOTIFY_SIMPLIFIED;
    strcpy(j->topic, "t");
    strcpy(j->sub, "s");
    strcpy(j->msg_id, "0909FF0D9C3A630C0000000000000007");
    strcpy(j->tag, "important");
    j->publish_ms = PUBLISH_MS;
    buf_init(&j->body);
    buf_puts(&j->body, "hello world");
    return j;
}

/* Pushes to path on the test server and waits for the outcome. */
static struct smq_op_push push_path(struct fx *f, const char *path)
{
    struct push_job *j = make_job(f, f->srv.port, path);
    int n;

    pthread_mutex_lock(&f->rs.lock);
    n = f->rs.n;
    pthread_mutex_unlock(&f->rs.lock);
    assert_int_equal(push_submit(f->pool, j), 0);
    struct smq_op_push r = wait_result(&f->rs, n);
    assert_int_equal(r.sub_id, f->next_id);
    assert_int_equal(r.seq, 100 + (uint64_t)f->next_id);
    assert_int_equal(r.attempt, 1);
    return r;
}

/* ---- tests ---- */

static void test_statuses(void **state)
{
    struct fx *f = *state;
    struct smq_op_push r;

    fx_start(f, 4, 5000);
    r = push_path(f, "/ok");
    assert_int_equal(r.outcome, SMQ_PUSH_OK);
    assert_int_equal(r.http_status, 204);
    r = push_path(f, "/created");                   /* any 2xx (§13.10) */
    assert_int_equal(r.outcome, SMQ_PUSH_OK);
    assert_int_equal(r.http_status, 201);
    r = push_path(f, "/fail");
    assert_int_equal(r.outcome, SMQ_PUSH_HTTP_ERROR);
    assert_int_equal(r.http_status, 500);
    r = push_path(f, "/forbid");
    assert_int_equal(r.outcome, SMQ_PUSH_REJECTED);
    assert_int_equal(r.http_status, 403);
    r = push_path(f, "/redirect");                  /* never followed */
    assert_int_equal(r.outcome, SMQ_PUSH_HTTP_ERROR);
    assert_int_equal(r.http_status, 302);
    pthread_mutex_lock(&f->srv.lock);
    assert_int_equal(f->srv.ok_hits, 1);
    assert_int_equal(f->srv.requests, 5);
    pthread_mutex_unlock(&f->srv.lock);
    fx_stop(f);
}

static void test_connection_failures(void **state)
{
    struct fx *f = *state;
    struct smq_op_push r;
    int closed_port, fd;
    struct push_job *j;

    fx_start(f, 4, 5000);
    r = push_path(f, "/close");                     /* closed before a status line */
    assert_int_equal(r.outcome, SMQ_PUSH_CONNECT_ERROR);
    assert_int_equal(r.http_status, 0);
    fd = listen_loopback(&closed_port);              /* bound, never listening: refused */
    j = make_job(f, closed_port, "/x");
    assert_int_equal(push_submit(f->pool, j), 0);
    r = wait_result(&f->rs, 1);
    close(fd);
    assert_int_equal(r.outcome, SMQ_PUSH_CONNECT_ERROR);
    assert_int_equal(r.http_status, 0);
    /* https to a server that speaks plain HTTP: the handshake fails */
    j = make_job(f, f->srv.port, "/ok");
    snprintf(j->endpoint, sizeof j->endpoint, "https://127.0.0.1:%d/ok", f->srv.port);
    assert_int_equal(push_submit(f->pool, j), 0);
    r = wait_result(&f->rs, 2);
    assert_int_equal(r.outcome, SMQ_PUSH_CONNECT_ERROR);
    pthread_mutex_lock(&f->srv.lock);
    assert_int_equal(f->srv.ok_hits, 0);
    pthread_mutex_unlock(&f->srv.lock);
    fx_stop(f);
}

/* A body past the 64 KiB cap: the status counts, the rest is not read. */
static void test_huge_body(void **state)
{
    struct fx *f = *state;
    struct smq_op_push r;

    fx_start(f, 4, 5000);
    r = push_path(f, "/huge");
    assert_int_equal(r.outcome, SMQ_PUSH_OK);
    assert_int_equal(r.http_status, 200);
    /* the pool goes on: the cut connection is not reused */
    r = push_path(f, "/ok");
    assert_int_equal(r.outcome, SMQ_PUSH_OK);
    pthread_mutex_lock(&f->srv.lock);
    assert_false(f->srv.huge_sent_whole);
    assert_int_equal(f->srv.accepts, 2);
    pthread_mutex_unlock(&f->srv.lock);
    fx_stop(f);
}

static void test_timeout(void **state)
{
    struct fx *f = *state;
    struct smq_op_push r;

    fx_start(f, 4, 1000);                            /* valgrind beside the suite still answers headers in time */
    r = push_path(f, "/slow");
    assert_int_equal(r.outcome, SMQ_PUSH_TIMEOUT);
    assert_int_equal(r.http_status, 0);
    /* the headers came in time, the body never ends: the status counts (§13.10) */
    r = push_path(f, "/slowbody");
    assert_int_equal(r.outcome, SMQ_PUSH_OK);
    assert_int_equal(r.http_status, 200);
    fx_stop(f);
}

static void assert_header(const char *head, const char *line)
{
    char want[700];

    snprintf(want, sizeof want, "\r\n%s\r\n", line);
    if (strstr(head, want) == NULL)
        fail_msg("no header line \"%s\" in:\n%s", line, head);
}

/* §13.10's headers as the endpoint receives them, and the latency from
 * the pool's clock (the server moves it by 7 ms while answering). */
static void test_headers(void **state)
{
    struct fx *f = *state;
    struct smq_op_push r;
    char date[30], line[100];
    const char *id;

    fx_start(f, 4, 5000);
    r = push_path(f, "/tick");
    assert_int_equal(r.outcome, SMQ_PUSH_OK);
    assert_int_equal(r.latency_us, 7000);
    notify_http_date(PUBLISH_MS, date);
    snprintf(line, sizeof line, "date: %s", date);
    pthread_mutex_lock(&f->srv.lock);
    const char *h = f->srv.last_head;
    assert_memory_equal(h, "POST /tick HTTP/1.1\r\n", 21);
    snprintf(line, sizeof line, "Host: 127.0.0.1:%d", f->srv.port);
    assert_header(h, line);
    snprintf(line, sizeof line, "date: %s", date);
    assert_header(h, line);
    assert_header(h, "content-type: text/plain;charset=utf-8");
    assert_header(h, "content-md5: NWViNjNiYmJlMDFlZWVkMDkzY2IyMmJiOGY1YWNkYzM=");
    assert_header(h, "Content-Length: 11");
    assert_header(h, "User-Agent: smqd/" SMQD_VERSION);
    assert_header(h, "x-mns-version: 2015-06-06");
    assert_header(h, "x-mns-signing-cert-url: "
                     "aHR0cDovLzEyNy4wLjAuMTo4MDgwL3NtcWQvc2lnbmluZy1jZXJ0LnBlbQ==");
    assert_header(h, "x-mns-topic-owner: 1000000000000000");
    assert_header(h, "x-mns-topic-name: t");
    assert_header(h, "x-mns-subscriber: 1000000000000000");
    assert_header(h, "x-mns-subscription-name: s");
    assert_header(h, "x-mns-publish-time: 1704164645000");
    assert_header(h, "x-mns-message-id: 0909FF0D9C3A630C0000000000000007");
    assert_header(h, "x-mns-message-tag: important");
    id = strstr(h, "\r\nx-mns-request-id: ");
    assert_non_null(id);
    assert_int_equal(strspn(id + 20, "0123456789ABCDEF"), 24);
    /* no signer: no Authorization; nothing curl adds of its own accord */
    assert_null(strcasestr(h, "\r\nauthorization:"));
    assert_null(strcasestr(h, "\r\nexpect:"));
    assert_null(strcasestr(h, "\r\naccept:"));
    assert_null(strcasestr(h, "\r\ntransfer-encoding:"));
    assert_int_equal(f->srv.last_body_len, 11);
    assert_memory_equal(f->srv.last_body, "hello world", 11);
    pthread_mutex_unlock(&f->srv.lock);
    fx_stop(f);
}

/* An endpoint with no path is POSTed at /notifications (§13.10). */
static void test_default_target(void **state)
{
    struct fx *f = *state;
    struct smq_op_push r;

    fx_start(f, 4, 5000);
    r = push_path(f, "");
    assert_int_equal(r.outcome, SMQ_PUSH_OK);
    pthread_mutex_lock(&f->srv.lock);
    assert_memory_equal(f->srv.last_head, "POST /notifications HTTP/1.1\r\n", 30);
    pthread_mutex_unlock(&f->srv.lock);
    fx_stop(f);
}

/* Keep-alive: sequential pushes to one endpoint share one connection. */
static void test_connection_reuse(void **state)
{
    struct fx *f = *state;

    fx_start(f, 1, 5000);                           /* each done frees the one slot */
    for (int i = 0; i < 8; i++)
        assert_int_equal(push_path(f, "/ok").outcome, SMQ_PUSH_OK);
    pthread_mutex_lock(&f->srv.lock);
    assert_int_equal(f->srv.requests, 8);
    assert_int_equal(f->srv.accepts, 1);
    pthread_mutex_unlock(&f->srv.lock);
    fx_stop(f);
}

/* At most concurrency attempts in flight: one more is refused and stays
 * the caller's; stopping ends those in flight with CANCELLED. */
static void test_cap_and_stop(void **state)
{
    struct fx *f = *state;
    struct push_job *extra;

    fx_start(f, 2, 30000);
    assert_int_equal(push_submit(f->pool, make_job(f, f->srv.port, "/slow")), 0);
    assert_int_equal(push_submit(f->pool, make_job(f, f->srv.port, "/slow")), 0);
    extra = make_job(f, f->srv.port, "/ok");
    assert_int_equal(push_submit(f->pool, extra), SMQ_E_SERVICE_UNAVAILABLE);
    assert_int_equal(push_in_flight(f->pool), 2);
    push_job_free(extra);
    assert_true(server_wait_requests(&f->srv, 2));    /* both on the wire */
    push_stop(f->pool);
    f->pool = NULL;
    pthread_mutex_lock(&f->rs.lock);
    assert_int_equal(f->rs.n, 2);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(f->rs.r[i].outcome, SMQ_PUSH_CANCELLED);
        assert_int_equal(f->rs.r[i].http_status, 0);
    }
    assert_true(f->rs.r[0].sub_id + f->rs.r[1].sub_id == 3);
    pthread_mutex_unlock(&f->rs.lock);
    fx_stop(f);
}

/* Jobs queued but not yet started are cancelled too, and a stopped
 * pool's results all came before push_stop returned. */
static void test_stop_with_queue(void **state)
{
    struct fx *f = *state;

    fx_start(f, 16, 30000);
    for (int i = 0; i < 16; i++)
        assert_int_equal(push_submit(f->pool, make_job(f, f->srv.port, "/slow")), 0);
    push_stop(f->pool);
    f->pool = NULL;
    pthread_mutex_lock(&f->rs.lock);
    assert_int_equal(f->rs.n, 16);
    for (int i = 0; i < 16; i++)
        assert_int_equal(f->rs.r[i].outcome, SMQ_PUSH_CANCELLED);
    pthread_mutex_unlock(&f->rs.lock);
    fx_stop(f);
}

/* ---- §13.11 as an endpoint checks it, independently of smqd ---- */

#define MAX_HEADERS 40

struct head_line {
    char name[64];                           /* lower case */
    char value[1024];
};

/* A received request's head: method, target and header lines. */
struct parsed_head {
    char method[16], target[512];
    struct head_line h[MAX_HEADERS];
    size_t n;
};

static bool parse_head(const char *head, struct parsed_head *ph)
{
    const char *line = strstr(head, "\r\n");

    memset(ph, 0, sizeof *ph);
    if (line == NULL || sscanf(head, "%15s %511s HTTP/1.1", ph->method, ph->target) != 2)
        return false;
    for (line += 2; *line != '\0' && strncmp(line, "\r\n", 2) != 0 && ph->n < MAX_HEADERS;) {
        const char *end = strstr(line, "\r\n"), *colon = memchr(line, ':', (size_t)(end - line));
        struct head_line *h = &ph->h[ph->n++];
        const char *v;
        size_t i;

        if (end == NULL || colon == NULL || (size_t)(colon - line) >= sizeof h->name)
            return false;
        for (i = 0; line + i < colon; i++)
            h->name[i] = (char)(line[i] >= 'A' && line[i] <= 'Z' ? line[i] + 32 : line[i]);
        for (v = colon + 1; *v == ' '; v++) {
        }
        snprintf(h->value, sizeof h->value, "%.*s", (int)(end - v), v);
        line = end + 2;
    }
    return true;
}

static const char *head_value(const struct parsed_head *ph, const char *name)
{
    for (size_t i = 0; i < ph->n; i++)
        if (strcmp(ph->h[i].name, name) == 0)
            return ph->h[i].value;
    return NULL;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct head_line *)a)->name, ((const struct head_line *)b)->name);
}

/* The string to sign rebuilt from the request as received (§13.11). */
static void rebuild_sts(const struct parsed_head *ph, char *out, size_t cap)
{
    struct head_line mns[MAX_HEADERS];
    size_t n = 0, len;
    const char *md5 = head_value(ph, "content-md5"), *type = head_value(ph, "content-type");
    const char *date = head_value(ph, "date");

    len = (size_t)snprintf(out, cap, "%s\n%s\n%s\n%s\n", ph->method, md5 ? md5 : "",
                           type ? type : "", date ? date : "");
    for (size_t i = 0; i < ph->n; i++)
        if (strncmp(ph->h[i].name, "x-mns-", 6) == 0)
            mns[n++] = ph->h[i];
    qsort(mns, n, sizeof mns[0], by_name);
    for (size_t i = 0; i < n && len < cap; i++)
        len += (size_t)snprintf(out + len, cap - len, "%s:%s\n", mns[i].name, mns[i].value);
    if (len < cap)
        snprintf(out + len, cap - len, "%s", ph->target);
}

/* Whether sig_b64 is CERT's key's RSA PKCS#1 v1.5 SHA-1 signature of data. */
static bool rsa_sha1_verifies(const char *data, size_t len, const char *sig_b64)
{
    unsigned char sig[1024];
    size_t b64_len = strlen(sig_b64);
    BIO *bio = BIO_new_mem_buf(CERT, -1);
    X509 *cert = bio != NULL ? PEM_read_bio_X509(bio, NULL, NULL, NULL) : NULL;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    int sig_len = -1;
    bool ok = false;

    if (b64_len % 4 == 0 && b64_len / 4 * 3 <= sizeof sig)
        sig_len = EVP_DecodeBlock(sig, (const unsigned char *)sig_b64, (int)b64_len);
    /* EVP_DecodeBlock counts the bytes padding stands for */
    for (size_t i = b64_len; sig_len > 0 && i > 0 && sig_b64[i - 1] == '='; i--)
        sig_len--;
    if (sig_len > 0 && cert != NULL && ctx != NULL
        && EVP_DigestVerifyInit(ctx, NULL, EVP_sha1(), NULL, X509_get0_pubkey(cert)) == 1)
        ok = EVP_DigestVerify(ctx, sig, (size_t)sig_len, (const unsigned char *)data, len) == 1;
    EVP_MD_CTX_free(ctx);
    X509_free(cert);
    BIO_free(bio);
    ERR_clear_error();
    return ok;
}

/* content-md5 as §13.10 makes it: base64 of the lower-case hex MD5 of body. */
static bool body_md5_matches(const struct parsed_head *ph, const char *body, size_t len)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int md_len = 0;
    char hex[33], b64[64];
    const char *sent = head_value(ph, "content-md5");

    if (sent == NULL || EVP_Digest(body, len, md, &md_len, EVP_md5(), NULL) != 1 || md_len != 16)
        return false;
    for (unsigned i = 0; i < 16; i++)
        snprintf(hex + 2 * i, 3, "%02x", md[i]);
    EVP_EncodeBlock((unsigned char *)b64, (const unsigned char *)hex, 32);
    return strcmp(sent, b64) == 0;
}

/* An endpoint's whole check: the body is the one content-md5 names, and
 * authorization signs the string rebuilt from what was received. */
static bool push_verifies(const char *head, const char *body, size_t body_len)
{
    struct parsed_head ph;
    char sts[8192];
    const char *auth;

    if (!parse_head(head, &ph) || (auth = head_value(&ph, "authorization")) == NULL)
        return false;
    rebuild_sts(&ph, sts, sizeof sts);
    return body_md5_matches(&ph, body, body_len) && rsa_sha1_verifies(sts, strlen(sts), auth);
}

/* head with its first `from` replaced by `to`, into out (the case must hit). */
static void tampered(const char *head, const char *from, const char *to, char *out, size_t cap)
{
    const char *at = strstr(head, from);

    assert_non_null(at);
    snprintf(out, cap, "%.*s%s%s", (int)(at - head), head, to, at + strlen(from));
}

/* The last request the server received, copied out from under its lock. */
static void last_request(struct fx *f, char head[8192], char body[4096], size_t *body_len)
{
    pthread_mutex_lock(&f->srv.lock);
    memcpy(head, f->srv.last_head, 8192);
    memcpy(body, f->srv.last_body, 4096);
    *body_len = f->srv.last_body_len;
    pthread_mutex_unlock(&f->srv.lock);
}

/* With a signer every attempt carries authorization (§13.10: lower case,
 * no prefix), and it verifies over the request as received, query and
 * x-mns-request-id included; each attempt is signed anew. */
static void test_signed_push(void **state)
{
    struct fx *f = *state;
    static char head[8192], body[4096], first_auth[1024];
    struct parsed_head ph;
    size_t body_len;
    const char *auth;

    fx_start_with(f, 4, 5000, true);
    assert_int_equal(push_path(f, "/hook?b=2&a=1").outcome, SMQ_PUSH_OK);
    last_request(f, head, body, &body_len);
    assert_true(parse_head(head, &ph));
    assert_string_equal(ph.target, "/hook?b=2&a=1");
    assert_non_null(strstr(head, "\r\nauthorization: "));   /* the name as §13.10 writes it */
    auth = head_value(&ph, "authorization");
    assert_non_null(auth);
    assert_int_equal(strlen(auth), 344);                       /* a 2048-bit key, no prefix */
    assert_true(push_verifies(head, body, body_len));
    snprintf(first_auth, sizeof first_auth, "%s", auth);

    assert_int_equal(push_path(f, "/hook?b=2&a=1").outcome, SMQ_PUSH_OK);
    last_request(f, head, body, &body_len);
    assert_true(parse_head(head, &ph));
    assert_string_not_equal(head_value(&ph, "authorization"), first_auth);  /* new request id */
    assert_true(push_verifies(head, body, body_len));
    fx_stop(f);
}

/* What an endpoint must refuse: any byte of the body, of a signed header,
 * of the target, or of the signature itself changed on the way. */
static void test_signed_push_tampered(void **state)
{
    struct fx *f = *state;
    static char head[8192], body[4096], t[8192];
    size_t body_len;

    fx_start_with(f, 4, 5000, true);
    assert_int_equal(push_path(f, "/hook").outcome, SMQ_PUSH_OK);
    last_request(f, head, body, &body_len);
    assert_true(push_verifies(head, body, body_len));
    assert_false(push_verifies(head, "hello worle", body_len));
    tampered(head, "x-mns-topic-name: t\r\n", "x-mns-topic-name: u\r\n", t, sizeof t);
    assert_false(push_verifies(t, body, body_len));
    tampered(head, "x-mns-message-tag: important", "x-mns-message-tag: importanT", t, sizeof t);
    assert_false(push_verifies(t, body, body_len));
    tampered(head, "date: Tue, 02 Jan 2024 03:04:05", "date: Tue, 02 Jan 2024 03:04:06", t,
             sizeof t);
    assert_false(push_verifies(t, body, body_len));
    tampered(head, "POST /hook ", "POST /hooK ", t, sizeof t);
    assert_false(push_verifies(t, body, body_len));
    tampered(head, "\r\nauthorization: ", "\r\nauthorization: A", t, sizeof t);
    assert_false(push_verifies(t, body, body_len));
    /* an added x-mns-* header is signed too: one more breaks the signature */
    tampered(head, "\r\nx-mns-version:", "\r\nx-mns-extra: 1\r\nx-mns-version:", t, sizeof t);
    assert_false(push_verifies(t, body, body_len));
    fx_stop(f);
}

/* A copy of the first n results once they all came (secs at most: under
 * valgrind 64 signatures take seconds), taken out from under the lock so
 * that a failed assertion leaves the pool able to stop.  The count seen. */
static int results_copy(struct results *rs, int n, int secs, struct smq_op_push *out)
{
    struct timespec until;
    int got;

    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += secs;
    pthread_mutex_lock(&rs->lock);
    while (rs->n < n && pthread_cond_timedwait(&rs->cond, &rs->lock, &until) == 0) {
    }
    got = rs->n;
    memcpy(out, rs->r, sizeof rs->r[0] * (size_t)(n < MAX_RESULTS ? n : MAX_RESULTS));
    pthread_mutex_unlock(&rs->lock);
    return got;
}

/* Each of sub ids 1..n once among r[0..n). */
static void assert_each_once(const struct smq_op_push *r, int n)
{
    bool seen[MAX_RESULTS + 1] = {false};

    for (int i = 0; i < n; i++) {
        assert_true(r[i].sub_id >= 1 && r[i].sub_id <= MAX_RESULTS);
        assert_false(seen[r[i].sub_id]);
        seen[r[i].sub_id] = true;
    }
}

/* Many signed pushes at once (the signer threads sign them side by side):
 * each comes back once, OK, and each verifies as received. */
static void test_signed_many(void **state)
{
    struct fx *f = *state;
    static struct smq_op_push r[MAX_RESULTS];
    int ok, bad;

    fx_start_with(f, MAX_RESULTS, 120000, true);
    for (int i = 0; i < MAX_RESULTS; i++)
        assert_int_equal(push_submit(f->pool, make_job(f, f->srv.port, "/ok")), 0);
    assert_int_equal(results_copy(&f->rs, MAX_RESULTS, 120, r), MAX_RESULTS);
    for (int i = 0; i < MAX_RESULTS; i++)
        assert_int_equal(r[i].outcome, SMQ_PUSH_OK);
    assert_each_once(r, MAX_RESULTS);
    assert_int_equal(push_in_flight(f->pool), 0);
    pthread_mutex_lock(&f->srv.lock);
    ok = f->srv.signed_ok;
    bad = f->srv.signed_bad;
    pthread_mutex_unlock(&f->srv.lock);
    assert_int_equal(ok, MAX_RESULTS);
    assert_int_equal(bad, 0);
    fx_stop(f);
}

/* A stop while jobs wait for a signer (64 signatures queued behind one
 * thread, stopped at once): every job comes back CANCELLED, once, before
 * push_stop returns — whether it was waiting, signed and not yet started,
 * or held on the wire by /slow. */
static void test_stop_while_signing(void **state)
{
    struct fx *f = *state;
    static struct smq_op_push r[MAX_RESULTS];

    fx_start_signing(f, MAX_RESULTS, 1);
    for (int i = 0; i < MAX_RESULTS; i++)
        assert_int_equal(push_submit(f->pool, make_job(f, f->srv.port, "/slow")), 0);
    assert_int_equal(push_in_flight(f->pool), MAX_RESULTS);
    push_stop(f->pool);
    f->pool = NULL;
    /* all came before push_stop returned: no wait */
    assert_int_equal(results_copy(&f->rs, MAX_RESULTS, 0, r), MAX_RESULTS);
    for (int i = 0; i < MAX_RESULTS; i++)
        assert_int_equal(r[i].outcome, SMQ_PUSH_CANCELLED);
    assert_each_once(r, MAX_RESULTS);
    fx_stop(f);
}

static void test_start_refusals(void **state)
{
    struct test_clock c = {.clock = {tc_mono, tc_epoch, NULL}};
    struct results rs;
    struct push_pool *p = (struct push_pool *)&rs;
    char err[200];
    struct push_opts o = {
        .concurrency = 0, .timeout_ms = 1000, .clock = &c.clock,
        .done = on_done, .done_arg = &rs,
    };

    (void)state;
    c.clock.ctx = &c;
    assert_int_equal(push_start(&o, &p, err, sizeof err), SMQ_E_INTERNAL);
    assert_null(p);
    o.concurrency = 4;
    o.timeout_ms = 0;
    assert_int_equal(push_start(&o, &p, err, sizeof err), SMQ_E_INTERNAL);
    o.timeout_ms = 1000;
    o.sign_threads = 65;
    assert_int_equal(push_start(&o, &p, err, sizeof err), SMQ_E_INTERNAL);
    o.sign_threads = -1;
    assert_int_equal(push_start(&o, &p, err, sizeof err), SMQ_E_INTERNAL);
    push_stop(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_statuses, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_connection_failures, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_huge_body, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_timeout, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_headers, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_default_target, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_connection_reuse, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_cap_and_stop, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_stop_with_queue, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_signed_push, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_signed_push_tampered, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_signed_many, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_stop_while_signing, fx_setup, fx_teardown),
        cmocka_unit_test(test_start_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
