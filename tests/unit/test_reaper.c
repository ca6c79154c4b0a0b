/*
 * test_reaper.c — unit tests for reaper.c: a real libmicrohttpd daemon on
 * 127.0.0.1 (port 0) with the reaper attached, and raw client sockets.  A
 * request trickling in is shut down at its timeout; a complete request is
 * answered and its kept-alive connection is left to the idle timeout, but
 * one trickling its next request line is cut at that limit; a request still
 * being answered is never cut off.  Timeouts are 1 s, so the
 * suite sleeps a few seconds in all (the reaper reads the real monotonic
 * clock: it bounds real clients).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "smqd/clock.h"
#include "smqd/reaper.h"

#define REQUEST_TIMEOUT_S 1
#define IDLE_TIMEOUT_S 4

struct fixture {
    struct conn_reaper *reaper;
    struct MHD_Daemon *daemon;
    uint16_t port;
    int handler_sleep_ms;           /* how long each answer takes */
};

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **req_cls)
{
    struct fixture *f = cls;
    struct MHD_Response *resp;
    enum MHD_Result ret;

    (void)url, (void)method, (void)version, (void)upload_data, (void)upload_data_size;
    if (*req_cls == NULL) {            /* headers complete */
        *req_cls = f;
        conn_reaper_phase(f->reaper, conn, PHASE_BODY);
        return MHD_YES;
    }
    conn_reaper_phase(f->reaper, conn, PHASE_WORKING);
    if (f->handler_sleep_ms > 0)
        usleep((useconds_t)f->handler_sleep_ms * 1000u);
    resp = MHD_create_response_from_buffer(2, (void *)"ok", MHD_RESPMEM_PERSISTENT);
    ret = MHD_queue_response(conn, 200, resp);
    MHD_destroy_response(resp);
    return ret;
}

static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
    struct fixture *f = cls;

    (void)uri;
    conn_reaper_phase(f->reaper, conn, PHASE_HEADERS);
    return NULL;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct fixture *f = cls;

    (void)req_cls, (void)toe;
    conn_reaper_phase(f->reaper, conn, PHASE_IDLE);
}

static int setup(void **state)
{
    static struct fixture f;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = 0};
    const union MHD_DaemonInfo *info;

    memset(&f, 0, sizeof f);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    f.reaper = conn_reaper_start("test: ", REQUEST_TIMEOUT_S, IDLE_TIMEOUT_S);
    assert_non_null(f.reaper);
    f.daemon = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL, 0,
        NULL, NULL, on_request, &f,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)IDLE_TIMEOUT_S,
        MHD_OPTION_URI_LOG_CALLBACK, on_uri, &f,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, &f,
        MHD_OPTION_NOTIFY_CONNECTION, conn_reaper_on_connection, f.reaper,
        MHD_OPTION_END);
    assert_non_null(f.daemon);
    info = MHD_get_daemon_info(f.daemon, MHD_DAEMON_INFO_BIND_PORT);
    assert_non_null(info);
    f.port = info->port;
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    conn_reaper_stop(f->reaper);
    MHD_stop_daemon(f->daemon);
    conn_reaper_free(f->reaper);
    return 0;
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

static void send_text(int fd, const char *text)
{
    assert_int_equal(send(fd, text, strlen(text), MSG_NOSIGNAL), (ssize_t)strlen(text));
}

/* Milliseconds until the server closes fd (EOF or reset), reading and
 * discarding whatever it sends first; -1 if still open after limit_ms. */
static int64_t ms_until_closed(int fd, int limit_ms)
{
    uint64_t t0 = clock_mono_us();
    char buf[512];

    for (;;) {
        int64_t waited = (int64_t)((clock_mono_us() - t0) / 1000u);
        struct pollfd p = {.fd = fd, .events = POLLIN};
        ssize_t n;

        if (waited >= limit_ms)
            return -1;
        if (poll(&p, 1, (int)(limit_ms - waited)) <= 0)
            continue;
        n = recv(fd, buf, sizeof buf, 0);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
            return (int64_t)((clock_mono_us() - t0) / 1000u);
    }
}

/* Reads one response and says whether it was the handler's 200. */
static bool got_ok(int fd)
{
    char buf[512];
    ssize_t n = recv(fd, buf, sizeof buf - 1, 0);

    if (n <= 0)
        return false;
    buf[n] = '\0';
    return strncmp(buf, "HTTP/1.1 200", 12) == 0 && strstr(buf, "\r\n\r\nok") != NULL;
}

/* A request line that never ends: libmicrohttpd has seen no request yet,
 * only the reaper knows the connection is there. */
static void test_reaper_drops_trickling_request_line(void **state)
{
    struct fixture *f = *state;
    int fd = connect_to(f);
    int64_t ms;

    send_text(fd, "GET /slo");
    ms = ms_until_closed(fd, 2 * IDLE_TIMEOUT_S * 1000);
    assert_true(ms >= 0);
    assert_in_range(ms, REQUEST_TIMEOUT_S * 1000 - 300, REQUEST_TIMEOUT_S * 1000 + 1500);
    close(fd);
}

/* Headers trickling in, each byte well within the idle timeout. */
static void test_reaper_drops_trickling_headers(void **state)
{
    struct fixture *f = *state;
    int fd = connect_to(f);
    uint64_t t0 = clock_mono_us();
    bool closed = false;

    send_text(fd, "GET / HTTP/1.1\r\nHost: x\r\n");
    while (!closed && clock_mono_us() - t0 < 2u * IDLE_TIMEOUT_S * 1000000u) {
        closed = send(fd, "X", 1, MSG_NOSIGNAL) != 1 || ms_until_closed(fd, 200) >= 0;
    }
    assert_true(closed);
    assert_in_range((clock_mono_us() - t0) / 1000u, REQUEST_TIMEOUT_S * 1000 - 300,
                    REQUEST_TIMEOUT_S * 1000 + 1500);
    close(fd);
}

/* A complete request is answered; between requests the kept-alive
 * connection is not held to the request timeout, only to the idle one. */
static void test_reaper_leaves_idle_keepalive_to_idle_timeout(void **state)
{
    struct fixture *f = *state;
    int fd = connect_to(f);

    send_text(fd, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_true(got_ok(fd));
    assert_int_equal(ms_until_closed(fd, REQUEST_TIMEOUT_S * 1000 + 800), -1);
    send_text(fd, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_true(got_ok(fd));
    close(fd);
}

/* An answer that takes longer than the request timeout is not cut off:
 * the request was complete when it began. */
static void test_reaper_never_cuts_a_request_being_answered(void **state)
{
    struct fixture *f = *state;
    int fd;

    f->handler_sleep_ms = REQUEST_TIMEOUT_S * 1000 + 700;
    fd = connect_to(f);
    send_text(fd, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_true(got_ok(fd));
    f->handler_sleep_ms = 0;
    close(fd);
}

/* After a request, a kept-alive connection that trickles the next request
 * line (libmicrohttpd reports nothing before the line is complete, and each
 * byte restarts its own idle timer) is cut at the idle limit. */
static void test_reaper_drops_trickling_second_request_line(void **state)
{
    struct fixture *f = *state;
    int fd = connect_to(f);
    uint64_t t0;
    bool closed = false;

    send_text(fd, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_true(got_ok(fd));
    t0 = clock_mono_us();
    while (!closed && clock_mono_us() - t0 < 3u * IDLE_TIMEOUT_S * 1000000u)
        closed = send(fd, "G", 1, MSG_NOSIGNAL) != 1 || ms_until_closed(fd, 400) >= 0;
    assert_true(closed);
    assert_in_range((clock_mono_us() - t0) / 1000u, IDLE_TIMEOUT_S * 1000 - 300,
                    IDLE_TIMEOUT_S * 1000 + 1500);
    close(fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_reaper_drops_trickling_request_line, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reaper_drops_trickling_headers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reaper_leaves_idle_keepalive_to_idle_timeout, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_reaper_never_cuts_a_request_being_answered, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_reaper_drops_trickling_second_request_line, setup,
                                        teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
