/* push_sink.c — smqd-bench-sink, the push endpoint of bench/push.sh: a loopback HTTP/1.1
 * server that answers every request 204 at once (keep-alive, one thread, epoll) and logs, per
 * request, the <MessageId> of its XML notification body (docs/protocol.md §13.10) and when
 * the whole request was read, on CLOCK_MONOTONIC (the clock smqd-loadgen's --ack-log uses).
 * It verifies no signature: it stands for the fastest endpoint a push can have.
 *
 *   smqd-bench-sink PORTFILE LOGFILE MAX_SECONDS
 *
 * Binds 127.0.0.1 on a free port, writes the port to PORTFILE, writes "r MessageId t_ns" lines
 * to LOGFILE, and exits on SIGTERM / SIGINT or after MAX_SECONDS, whichever comes first. */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BUF_MAX (256 * 1024)  /* a request larger than this closes its connection */

struct sink_conn {
    int fd;
    size_t len;
    char buf[BUF_MAX];
};

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
    (void)sig;
    stop_signal = 1;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The Content-Length of a request head (0 without one), or -1 when it is unreadable. */
static long content_length(const char *head, size_t head_len)
{
    const char *p = head, *end = head + head_len;
    while ((p = memchr(p, '\n', (size_t)(end - p))) != NULL) {
        p++;
        if ((size_t)(end - p) > 15 && strncasecmp(p, "content-length:", 15) == 0)
            return strtol(p + 15, NULL, 10);
    }
    return 0;
}

/* Logs one request's MessageId (or "-") and answers it. */
static int answer(struct sink_conn *c, const char *body, size_t body_len, FILE *log)
{
    static const char resp[] = "HTTP/1.1 204 No Content\r\n\r\n";
    uint64_t t = now_ns();
    const char *id = memmem(body, body_len, "<MessageId>", 11), *id_end = NULL;
    if (id != NULL) {
        id += 11;
        id_end = memmem(id, body_len - (size_t)(id - body), "</MessageId>", 12);
    }
    if (id_end != NULL)
        fprintf(log, "r %.*s %llu\n", (int)(id_end - id), id, (unsigned long long)t);
    else
        fprintf(log, "r - %llu\n", (unsigned long long)t);
    /* 27 bytes into an empty socket buffer: a loopback send does not block or split */
    return send(c->fd, resp, sizeof resp - 1, MSG_NOSIGNAL) == (ssize_t)(sizeof resp - 1) ? 0 : -1;
}

/* Reads what arrived and answers every whole request in it; -1: close the connection. */
static int on_readable(struct sink_conn *c, FILE *log)
{
    ssize_t n = recv(c->fd, c->buf + c->len, BUF_MAX - c->len, 0);
    if (n <= 0)
        return n < 0 && errno == EAGAIN ? 0 : -1;
    c->len += (size_t)n;
    for (;;) {
        char *hend = memmem(c->buf, c->len, "\r\n\r\n", 4);
        if (hend == NULL)
            return c->len < BUF_MAX ? 0 : -1;
        size_t head_len = (size_t)(hend - c->buf) + 4;
        long cl = content_length(c->buf, head_len);
        if (cl < 0 || (size_t)cl > BUF_MAX - head_len)
            return -1;
        if (c->len < head_len + (size_t)cl)
            return 0;
        if (answer(c, c->buf + head_len, (size_t)cl, log) != 0)
            return -1;
        c->len -= head_len + (size_t)cl;
        memmove(c->buf, c->buf + head_len + (size_t)cl, c->len);
    }
}

static int listen_loopback(const char *portfile)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t al = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), ok = 0;
    FILE *f = NULL;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && listen(fd, 1024) == 0
        && getsockname(fd, (struct sockaddr *)&a, &al) == 0 && (f = fopen(portfile, "w")) != NULL)
        ok = fprintf(f, "%d\n", ntohs(a.sin_port)) > 0;
    if (f != NULL && fclose(f) != 0)
        ok = 0;
    if (!ok && fd >= 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

static void accept_all(int lfd, int ep)
{
    int fd;
    while ((fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
        struct sink_conn *c = malloc(sizeof *c);
        struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };
        if (c == NULL || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
            free(c);
            close(fd);
            continue;
        }
        c->fd = fd;
        c->len = 0;
    }
}

/* Serves until a signal or the deadline; connections still open then close with the process. */
static void serve(int lfd, FILE *log, double max_s)
{
    int ep = epoll_create1(0);
    struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL }, evs[64];
    uint64_t deadline = now_ns() + (uint64_t)(max_s * 1e9);
    if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev) != 0) {
        perror("smqd-bench-sink: epoll");
        return;
    }
    while (!stop_signal && now_ns() < deadline) {
        int n = epoll_wait(ep, evs, 64, 100);
        for (int i = 0; i < n; i++) {
            struct sink_conn *c = evs[i].data.ptr;
            if (c == NULL) {
                accept_all(lfd, ep);
            } else if (on_readable(c, log) != 0) {
                close(c->fd);   /* leaves the epoll set with it */
                free(c);
            }
        }
    }
    close(ep);
}

int main(int argc, char **argv)
{
    if (argc != 4 || atof(argv[3]) <= 0) {
        fprintf(stderr, "usage: smqd-bench-sink PORTFILE LOGFILE MAX_SECONDS\n");
        return 2;
    }
    struct sigaction sa = { .sa_handler = on_signal };
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    FILE *log = fopen(argv[2], "w");
    int lfd = log != NULL ? listen_loopback(argv[1]) : -1;
    int rc = 1;
    if (lfd >= 0) {
        setvbuf(log, NULL, _IOFBF, 1 << 20);
        serve(lfd, log, atof(argv[3]));
        close(lfd);
        rc = 0;
    } else {
        perror("smqd-bench-sink");
    }
    if (log != NULL && fclose(log) != 0)
        rc = 1;
    return rc;
}
