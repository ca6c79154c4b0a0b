/*
 * test_httpd.c — unit tests for httpd.c: a real listener on 127.0.0.1
 * (port 0) with a test handler, driven by raw client sockets.  The request
 * as the handler sees it (raw target, headers, body, framing problems, an
 * oversize body refused before it is read), suspend and resume from
 * another thread, a deadline that answers a request its worker never came
 * back for while its storage lives on until it does, a gone client, and
 * the slow-client bounds the glue reports to its reaper.
 *
 * Request timeouts and deadlines run on a fake clock the test moves (read
 * atomically: the reaper's thread reads it); the reaper looks every 250 ms,
 * so a test waits at most about a second of real time for its scan.
 */
#define _GNU_SOURCE       /* strcasestr */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "smqd/clock.h"
#include "smqd/httpd.h"

#define REQUEST_S 10
#define IDLE_S 30
#define MAX_BODY 1000
/* How long a test waits in real time for something the server must do (each wait
 * polls and ends as soon as it is done): generous for valgrind on a busy machine. */
#define REAL_WAIT_MS 20000

struct test_data {                   /* the handler's per-request storage */
    int tag;
};

struct fixture {
    struct smq_clock clock;
    uint64_t mono_ms;                /* atomic */
    struct httpd *h;
    uint16_t port;
    pthread_mutex_t lock;
    struct httpd_req *parked;        /* the last suspended request */
    int done;                        /* on_done calls */
    int resumed, timed_out;          /* on_resume calls, by kind */
};

static uint64_t fake_mono(void *ctx)
{
    return __atomic_load_n(&((struct fixture *)ctx)->mono_ms, __ATOMIC_ACQUIRE);
}

static int64_t fake_epoch(void *ctx)
{
    return 1700000000000LL + (int64_t)fake_mono(ctx);
}

static void advance(struct fixture *f, uint64_t ms)
{
    __atomic_add_fetch(&f->mono_ms, ms, __ATOMIC_ACQ_REL);
}

static void respond_text(struct httpd_req *r, int status, const char *text)
{
    struct smq_buf b;

    buf_init(&b);
    buf_puts(&b, text);
    assert_int_equal(httpd_respond(r, status, &b, "text/plain", NULL, 0), 0);
    buf_free(&b);
}

/* /echo answers what the handler saw, one fact per line. */
static void echo(struct httpd_req *r)
{
    struct smq_errinfo ei = {0, ""};
    size_t body_len, n_headers;
    const char *body = httpd_req_body(r, &body_len);
    const char *x = httpd_req_header(r, "x-test");
    char text[1024];

    httpd_req_headers(r, &n_headers);
    snprintf(text, sizeof text, "method=%s\ntarget=%s\nhost=%s\nx-test=%s\nheaders=%zu\n"
             "body=%.*s\nproblem=%d\nclient=%s\nproxy=%s\n", httpd_req_method(r),
             httpd_req_target(r), httpd_req_host(r), x != NULL ? x : "(none)", n_headers,
             (int)body_len, body, httpd_req_problem(r, &ei), httpd_req_client(r),
             httpd_req_proxy(r) != NULL ? httpd_req_proxy(r) : "(none)");
    respond_text(r, 200, text);
}

static void on_request(void *arg, struct httpd_req *r)
{
    struct fixture *f = arg;
    const char *t = httpd_req_target(r);
    struct test_data *d = httpd_req_data(r);

    d->tag = 7;
    if (strncmp(t, "/suspend", 8) == 0 || strncmp(t, "/deadline", 9) == 0) {
        /* Suspended first, then handed over (under a lock, as the engine's
         * inbox does): the other thread may resume it at once. */
        httpd_suspend(r, t[1] == 'd' ? 1000 : 0);
        pthread_mutex_lock(&f->lock);
        f->parked = r;
        pthread_mutex_unlock(&f->lock);
        return;
    }
    if (strncmp(t, "/echo", 5) == 0)
        echo(r);
    else
        respond_text(r, 200, "ok");
}

static void on_resume(void *arg, struct httpd_req *r, bool timed_out)
{
    struct fixture *f = arg;
    struct test_data *d = httpd_req_data(r);

    assert_int_equal(d->tag, 7);                 /* the storage is the request's */
    pthread_mutex_lock(&f->lock);
    if (timed_out)
        f->timed_out++;
    else
        f->resumed++;
    pthread_mutex_unlock(&f->lock);
    respond_text(r, timed_out ? 504 : 200, timed_out ? "timed out" : "resumed");
}

static void on_done(void *arg, struct httpd_req *r)
{
    struct fixture *f = arg;

    (void)r;
    pthread_mutex_lock(&f->lock);
    f->done++;
    pthread_mutex_unlock(&f->lock);
}

/* A listener trusting these proxies ("" = none), with this per-address cap. */
static int start(void **state, const char *trusted, int per_ip)
{
    static struct fixture f;
    static struct netaddr_trust trust;
    char bad[80];
    struct httpd_opts opts = {.name = "test: ", .host = "127.0.0.1", .port = 0, .threads = 1,
                              .max_connections = 16, .max_connections_per_ip = per_ip,
                              .trusted_proxies = &trust, .idle_timeout_s = IDLE_S,
                              .request_timeout_s = REQUEST_S, .max_body_bytes = MAX_BODY,
                              .data_size = sizeof(struct test_data),
                              .handler = {on_request, on_resume, on_done}};
    char err[256];

    if (netaddr_trust_parse(trusted, &trust, bad, sizeof bad) != 0)
        return -1;
    memset(&f, 0, sizeof f);
    pthread_mutex_init(&f.lock, NULL);
    f.mono_ms = 1000000;
    f.clock = (struct smq_clock){fake_mono, fake_epoch, &f};
    opts.clock = &f.clock;
    opts.arg = &f;
    if (httpd_start(&opts, &f.h, err, sizeof err) != 0)
        return -1;
    f.port = httpd_port(f.h);
    *state = &f;
    return 0;
}

static int setup(void **state)
{
    return start(state, "", 0);
}

/* Loopback is the proxy; at most two connections from any other address. */
static int setup_proxied(void **state)
{
    return start(state, "127.0.0.1", 2);
}

static int setup_capped(void **state)
{
    return start(state, "", 2);
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    httpd_stop(f->h);
    pthread_mutex_destroy(&f->lock);
    return 0;
}

/* A connection to the listener from the loopback address from (host order). */
static int connect_from(const struct fixture *f, uint32_t from)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(f->port)};
    struct sockaddr_in local = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(from)};
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&local, sizeof local), 0);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    return fd;
}

static int connect_to(const struct fixture *f)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(f->port)};
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    assert_true(fd >= 0);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    return fd;
}

static void send_bytes(int fd, const char *data, size_t len)
{
    assert_int_equal(send(fd, data, len, MSG_NOSIGNAL), (ssize_t)len);
}

static void send_text(int fd, const char *text)
{
    send_bytes(fd, text, strlen(text));
}

/* Reads one whole response (status line to the end of its body, by
 * Content-Length) within 3 s of real time into out; its status. */
static int read_response(int fd, char *out, size_t size)
{
    size_t got = 0;
    const char *body, *cl;

    out[0] = '\0';
    while (got + 1 < size) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        ssize_t n;

        if (poll(&p, 1, REAL_WAIT_MS) <= 0)
            break;
        n = recv(fd, out + got, size - 1 - got, 0);
        if (n <= 0)
            break;
        got += (size_t)n;
        out[got] = '\0';
        body = strstr(out, "\r\n\r\n");
        cl = strcasestr(out, "Content-Length:");
        if (body != NULL && cl != NULL
            && (size_t)(out + got - (body + 4)) >= strtoul(cl + 15, NULL, 10))
            break;
    }
    return strncmp(out, "HTTP/1.1 ", 9) == 0 ? atoi(out + 9) : -1;
}

/* Whether the server ends the connection within ms of real time (reading
 * and discarding what it sends first). */
static bool closed_within(int fd, int ms)
{
    char buf[512];

    for (int i = 0; i < ms / 100; i++) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        ssize_t n;

        if (poll(&p, 1, 100) <= 0)
            continue;
        n = recv(fd, buf, sizeof buf, 0);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
            return true;
    }
    return false;
}

/* A close that must not come: looked for during about a second (long enough to see
 * the server act on a clock already moved; a slow machine only makes it look less). */
static bool closed_soon(int fd)
{
    return closed_within(fd, 1200);
}

/* A close that must come: waited for during up to REAL_WAIT_MS, because under
 * valgrind or ASan on a loaded machine the server's thread may take well over a
 * second to run (the fake clock decides *whether* it closes, not this wait). */
static bool closes(int fd)
{
    return closed_within(fd, REAL_WAIT_MS);
}

static struct httpd_req *wait_parked(struct fixture *f)
{
    struct httpd_req *r = NULL;

    for (int i = 0; i < REAL_WAIT_MS / 10 && r == NULL; i++) {
        pthread_mutex_lock(&f->lock);
        r = f->parked;
        f->parked = NULL;
        pthread_mutex_unlock(&f->lock);
        if (r == NULL)
            usleep(10000);
    }
    assert_non_null(r);
    return r;
}

static int counter(struct fixture *f, const int *c)
{
    int v;

    pthread_mutex_lock(&f->lock);
    v = *c;
    pthread_mutex_unlock(&f->lock);
    return v;
}

/* Waits (real time, at most REAL_WAIT_MS) until *c reaches want. */
static bool wait_counter(struct fixture *f, const int *c, int want)
{
    for (int i = 0; i < REAL_WAIT_MS / 10; i++) {
        if (counter(f, c) >= want)
            return true;
        usleep(10000);
    }
    return false;
}

/* ---- what the handler sees ---- */

static void test_httpd_request_as_received(void **state)
{
    struct fixture *f = *state;
    char resp[4096];
    int fd = connect_to(f);

    send_text(fd, "POST /echo/a%2Fb?x=%20+&y HTTP/1.1\r\nHost: h.example:1\r\nX-Test: v\r\n"
                  "Content-Length: 5\r\n\r\nhello");
    assert_int_equal(read_response(fd, resp, sizeof resp), 200);
    assert_non_null(strstr(resp, "method=POST\n"));
    assert_non_null(strstr(resp, "target=/echo/a%2Fb?x=%20+&y\n"));   /* not decoded */
    assert_non_null(strstr(resp, "host=h.example:1\n"));
    assert_non_null(strstr(resp, "x-test=v\n"));
    assert_non_null(strstr(resp, "headers=3\n"));
    assert_non_null(strstr(resp, "body=hello\n"));
    assert_non_null(strstr(resp, "problem=0\n"));
    close(fd);
}

/* HTTP/1.0 without Host: URLs must name the address the client reached. */
static void test_httpd_host_without_host_header(void **state)
{
    struct fixture *f = *state;
    char resp[4096], want[64];
    int fd = connect_to(f);

    send_text(fd, "GET /echo HTTP/1.0\r\n\r\n");
    read_response(fd, resp, sizeof resp);
    snprintf(want, sizeof want, "host=127.0.0.1:%u\n", (unsigned)f->port);
    assert_non_null(strstr(resp, want));
    close(fd);
}

static void test_httpd_framing_problems(void **state)
{
    struct fixture *f = *state;
    char resp[4096], want[32];
    int fd = connect_to(f);

    send_bytes(fd, "GET /echo HTTP/1.1\r\nHost: x\r\nX-Test: a\0b\r\n\r\n", 44);
    assert_int_equal(read_response(fd, resp, sizeof resp), 200);
    snprintf(want, sizeof want, "problem=%d\n", SMQ_E_INVALID_ARGUMENT);
    assert_non_null(strstr(resp, want));
    close(fd);
}

/* A body announced over the cap is answered before it is read. */
static void test_httpd_oversize_body_answered_before_it_is_read(void **state)
{
    struct fixture *f = *state;
    char resp[4096], want[32];
    int fd = connect_to(f);

    send_text(fd, "PUT /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n");
    assert_int_equal(read_response(fd, resp, sizeof resp), 200);
    snprintf(want, sizeof want, "problem=%d\n", SMQ_E_REQUEST_TOO_LARGE);
    assert_non_null(strstr(resp, want));
    assert_non_null(strstr(resp, "body=\n"));
    close(fd);
}

/* A chunked body over the cap is read to its end, discarded, and refused. */
static void test_httpd_oversize_chunked_body_refused(void **state)
{
    struct fixture *f = *state;
    char resp[4096], want[32], chunk[700];
    int fd = connect_to(f);

    memset(chunk, 'z', sizeof chunk);
    send_text(fd, "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
    for (int i = 0; i < 2; i++) {
        send_text(fd, "2bc\r\n");
        send_bytes(fd, chunk, sizeof chunk);
        send_text(fd, "\r\n");
    }
    send_text(fd, "0\r\n\r\n");
    assert_int_equal(read_response(fd, resp, sizeof resp), 200);
    snprintf(want, sizeof want, "problem=%d\n", SMQ_E_REQUEST_TOO_LARGE);
    assert_non_null(strstr(resp, want));
    close(fd);
}

/* ---- suspend, resume, deadlines ---- */

static void test_httpd_resume_from_another_thread(void **state)
{
    struct fixture *f = *state;
    char resp[1024];
    int fd = connect_to(f);
    struct httpd_req *r;

    send_text(fd, "GET /suspend HTTP/1.1\r\nHost: x\r\n\r\n");
    r = wait_parked(f);
    assert_false(httpd_client_gone(r));
    httpd_resume(r);                             /* this thread is not an HTTP one */
    assert_int_equal(read_response(fd, resp, sizeof resp), 200);
    assert_non_null(strstr(resp, "resumed"));
    assert_true(wait_counter(f, &f->done, 1));
    close(fd);
}

/* Past its deadline a request is answered though its worker is not back;
 * its storage lives until the worker calls httpd_resume, which then does
 * nothing else. */
static void test_httpd_deadline_answers_and_storage_waits(void **state)
{
    struct fixture *f = *state;
    char resp[1024];
    int fd = connect_to(f);
    struct httpd_req *r;

    send_text(fd, "GET /deadline HTTP/1.1\r\nHost: x\r\n\r\n");
    r = wait_parked(f);
    advance(f, 999);
    assert_false(closed_soon(fd));               /* no answer before the deadline */
    advance(f, 1);
    assert_int_equal(read_response(fd, resp, sizeof resp), 504);
    assert_int_equal(counter(f, &f->timed_out), 1);
    send_text(fd, "GET /ok HTTP/1.1\r\nHost: x\r\n\r\n");       /* the connection goes on */
    assert_int_equal(read_response(fd, resp, sizeof resp), 200);
    assert_true(wait_counter(f, &f->done, 1));   /* only /ok is over */
    assert_int_equal(counter(f, &f->done), 1);
    httpd_resume(r);                             /* the worker comes back, late */
    /* The last reference may be the deadline's, which the reaper's thread
     * drops just after it resumed the connection: done follows, not at once. */
    assert_true(wait_counter(f, &f->done, 2));
    assert_int_equal(counter(f, &f->done), 2);
    assert_int_equal(counter(f, &f->resumed), 0);
    close(fd);
}

/* Resumed before its deadline: the deadline never fires. */
static void test_httpd_resume_cancels_the_deadline(void **state)
{
    struct fixture *f = *state;
    char resp[1024];
    int fd = connect_to(f);

    send_text(fd, "GET /deadline HTTP/1.1\r\nHost: x\r\n\r\n");
    httpd_resume(wait_parked(f));
    assert_int_equal(read_response(fd, resp, sizeof resp), 200);
    advance(f, 5000);
    assert_false(closed_soon(fd));
    assert_int_equal(counter(f, &f->timed_out), 0);
    assert_int_equal(counter(f, &f->resumed), 1);
    close(fd);
}

static void test_httpd_client_gone_while_suspended(void **state)
{
    struct fixture *f = *state;
    int fd = connect_to(f);
    struct httpd_req *r;

    send_text(fd, "GET /suspend HTTP/1.1\r\nHost: x\r\n\r\n");
    r = wait_parked(f);
    shutdown(fd, SHUT_WR);                       /* a half-close counts */
    for (int i = 0; i < REAL_WAIT_MS / 10 && !httpd_client_gone(r); i++)
        usleep(10000);
    assert_true(httpd_client_gone(r));
    httpd_resume(r);
    assert_true(wait_counter(f, &f->done, 1));
    close(fd);
}

/* ---- slow clients, as the glue reports them to its reaper ---- */

static void test_httpd_trickled_request_is_cut(void **state)
{
    struct fixture *f = *state;
    int fd = connect_to(f);

    send_text(fd, "GET /ok HTTP/1.1\r\nHost: x\r\nX-Slow: 1");
    /* The clock runs from the accept, which must have happened first. */
    for (int i = 0; i < REAL_WAIT_MS / 10 && httpd_active_requests(f->h) == 0; i++)
        usleep(10000);
    assert_int_equal(httpd_active_requests(f->h), 1);
    advance(f, REQUEST_S * 1000 - 500);
    assert_false(closed_soon(fd));
    advance(f, 1000);
    assert_true(closes(fd));
    close(fd);
}

/* A request waiting for its worker is complete: never cut as slow. */
static void test_httpd_suspended_request_is_not_cut(void **state)
{
    struct fixture *f = *state;
    char resp[1024];
    int fd = connect_to(f);
    struct httpd_req *r;

    send_text(fd, "GET /suspend HTTP/1.1\r\nHost: x\r\n\r\n");
    r = wait_parked(f);
    advance(f, 3 * IDLE_S * 1000);
    assert_false(closed_soon(fd));
    httpd_resume(r);
    assert_int_equal(read_response(fd, resp, sizeof resp), 200);
    close(fd);
}

/* Between requests the idle limit applies, from the end of the answer. */
static void test_httpd_kept_alive_connection_gets_the_idle_limit(void **state)
{
    struct fixture *f = *state;
    char resp[1024];
    int fd = connect_to(f);

    send_text(fd, "GET /ok HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_int_equal(read_response(fd, resp, sizeof resp), 200);
    advance(f, REQUEST_S * 1000 + 1000);
    assert_false(closed_soon(fd));
    /* The idle clock starts when the server has completed the request,
     * which may come after the client read the answer: past the limit
     * from either moment. */
    advance(f, IDLE_S * 1000 + 1000);
    assert_true(closes(fd));
    close(fd);
}

#define XFF_REQUEST "GET /echo HTTP/1.1\r\nHost: h\r\nX-Forwarded-For: 192.0.2.1, 127.0.0.2\r\n\r\n"

/* Sends request on fd and checks the echoed client and proxy the handler saw
 * ("client=C\nproxy=P\n"). */
static void expect_client(int fd, const char *request, const char *seen)
{
    char resp[4096];

    send_text(fd, request);
    assert_int_equal(read_response(fd, resp, sizeof resp), 200);
    assert_non_null(strstr(resp, seen));
}

/* No trusted proxy: the client is the peer, whatever X-Forwarded-For says. */
static void test_httpd_client_is_the_peer(void **state)
{
    struct fixture *f = *state;
    int fd = connect_from(f, 0x7f000003);

    expect_client(fd, XFF_REQUEST, "client=127.0.0.3\nproxy=(none)\n");
    close(fd);
}

/* From the trusted proxy the client is the rightmost untrusted address of
 * X-Forwarded-For; from anyone else the header is not believed. */
static void test_httpd_client_through_a_trusted_proxy(void **state)
{
    struct fixture *f = *state;
    int fd = connect_from(f, 0x7f000001);

    expect_client(fd, XFF_REQUEST, "client=127.0.0.2\nproxy=127.0.0.1\n");
    /* The proxy's own request (a health check) is the proxy's. */
    expect_client(fd, "GET /echo HTTP/1.1\r\nHost: h\r\n\r\n", "client=127.0.0.1\nproxy=(none)\n");
    close(fd);
    fd = connect_from(f, 0x7f000002);
    expect_client(fd, XFF_REQUEST, "client=127.0.0.2\nproxy=(none)\n");
    close(fd);
}

/* The per-address cap closes the third connection from one address at
 * once, and lets the next in once one closed. */
static void test_httpd_per_address_cap(void **state)
{
    struct fixture *f = *state;
    char resp[4096];
    int a = connect_from(f, 0x7f000002), b = connect_from(f, 0x7f000002);
    int c = connect_from(f, 0x7f000002), d;

    assert_true(closed_soon(c));
    close(c);
    send_text(a, "GET /x HTTP/1.1\r\nHost: h\r\n\r\n");
    assert_int_equal(read_response(a, resp, sizeof resp), 200);
    send_text(b, "GET /x HTTP/1.1\r\nHost: h\r\n\r\n");
    assert_int_equal(read_response(b, resp, sizeof resp), 200);
    d = connect_from(f, 0x7f000003);                 /* another address: its own count */
    send_text(d, "GET /x HTTP/1.1\r\nHost: h\r\n\r\n");
    assert_int_equal(read_response(d, resp, sizeof resp), 200);
    close(d);
    close(a);
    /* The close reaches the server asynchronously: retry for a while. */
    for (int i = 0; i < 50; i++) {
        c = connect_from(f, 0x7f000002);
        if (!closed_soon(c))
            break;
        close(c);
        c = -1;
    }
    assert_true(c >= 0);
    send_text(c, "GET /x HTTP/1.1\r\nHost: h\r\n\r\n");
    assert_int_equal(read_response(c, resp, sizeof resp), 200);
    close(c);
    close(b);
}

/* Connections of a trusted proxy are not held to the per-address cap. */
static void test_httpd_trusted_proxy_skips_the_cap(void **state)
{
    struct fixture *f = *state;
    char resp[4096];
    int fds[6];

    for (int i = 0; i < 6; i++)
        fds[i] = connect_from(f, 0x7f000001);
    for (int i = 0; i < 6; i++) {
        send_text(fds[i], "GET /x HTTP/1.1\r\nHost: h\r\n\r\n");
        assert_int_equal(read_response(fds[i], resp, sizeof resp), 200);
    }
    for (int i = 0; i < 6; i++)
        close(fds[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_httpd_request_as_received, setup, teardown),
        cmocka_unit_test_setup_teardown(test_httpd_host_without_host_header, setup, teardown),
        cmocka_unit_test_setup_teardown(test_httpd_framing_problems, setup, teardown),
        cmocka_unit_test_setup_teardown(test_httpd_oversize_body_answered_before_it_is_read,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_httpd_oversize_chunked_body_refused, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_httpd_resume_from_another_thread, setup, teardown),
        cmocka_unit_test_setup_teardown(test_httpd_deadline_answers_and_storage_waits, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_httpd_resume_cancels_the_deadline, setup, teardown),
        cmocka_unit_test_setup_teardown(test_httpd_client_gone_while_suspended, setup, teardown),
        cmocka_unit_test_setup_teardown(test_httpd_trickled_request_is_cut, setup, teardown),
        cmocka_unit_test_setup_teardown(test_httpd_suspended_request_is_not_cut, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_httpd_kept_alive_connection_gets_the_idle_limit,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_httpd_client_is_the_peer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_httpd_client_through_a_trusted_proxy,
                                        setup_proxied, teardown),
        cmocka_unit_test_setup_teardown(test_httpd_per_address_cap, setup_capped, teardown),
        cmocka_unit_test_setup_teardown(test_httpd_trusted_proxy_skips_the_cap, setup_proxied,
                                        teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
