/*
 * hostile_client.c — a raw-socket HTTP client for test_hostile.sh: it sends
 * exactly the bytes it is given, as slowly as it is told, and reports what
 * the server did (status lines seen, whether and when it closed the
 * connection).  curl cannot do this: it fixes broken requests, cannot
 * trickle, and hides "closed before any response".  Only POSIX sockets, so
 * it builds on a fresh Debian 12 with nothing but a C compiler.
 *
 *   hostile_client send ADDR -i FILE [-s HEAD] [-c CHUNK] [-d MS] [-L] [-e]
 *                       [-W] [-w MS] [-t MS] [-o FILE]
 *       Connects to ADDR (IPv4:PORT), writes the first HEAD bytes of FILE at
 *       once (default: all of it), then the rest CHUNK bytes at a time
 *       (default: all) with MS milliseconds between writes.  -L loops the
 *       rest forever (a body that never ends).  -e is a client that sent
 *       "Expect: 100-continue": after the head it waits up to -w MS (default
 *       2000) for a response head and sends the rest only if that was 100.
 *       Reading stops at the end of the first final (non-1xx) response
 *       (Content-Length framing), at EOF, or at the -t deadline (default
 *       10000 ms); with -W it goes on after that response until the server
 *       closes or the deadline passes (does the server keep the connection?,
 *       and what else does it answer on it?).  Prints one line:
 *         first=CODE final=CODE closed=eof|reset|open|timeout sent=N rest_sent=N
 *         recv=N ms=N close_ms=N
 *       (CODE 0 = none seen; close_ms = -1 when the server did not close.)
 *
 *   hostile_client hold ADDR -n N [-w MS]
 *       Opens N idle connections (connect timeout 2 s each), waits MS
 *       (default 500), prints "connected=C refused=R open=O closed=X", then
 *       obeys stdin, one command a line, answering one line each:
 *         check MS   wait MS, print "open=O closed=X"
 *         close K    close K still-open connections (client side), print the same
 *         quit       close everything and exit
 *
 * Exit status 0 when it ran (whatever the server did), 2 on usage or local
 * errors.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void die(const char *msg)
{
    fprintf(stderr, "hostile_client: %s\n", msg);
    exit(2);
}

static int parse_addr(const char *addr, struct sockaddr_in *sa)
{
    char host[64];
    const char *colon = strrchr(addr, ':');
    size_t hl;

    if (colon == NULL || (hl = (size_t)(colon - addr)) == 0 || hl >= sizeof host)
        return -1;
    memcpy(host, addr, hl);
    host[hl] = '\0';
    memset(sa, 0, sizeof *sa);
    sa->sin_family = AF_INET;
    sa->sin_port = htons((unsigned short)atoi(colon + 1));
    return inet_pton(AF_INET, host, &sa->sin_addr) == 1 ? 0 : -1;
}

/* Returns a connected socket, or -1 (refused / timed out). */
static int connect_to(const struct sockaddr_in *sa)
{
    struct timeval tv = {2, 0};
    int one = 1;
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    if (fd < 0)
        die("socket() failed");
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);     /* bounds connect() */
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  /* one write = one segment */
    if (connect(fd, (const struct sockaddr *)sa, sizeof *sa) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *data = NULL;
    size_t cap = 0, n = 0, got;

    if (f == NULL)
        die("cannot open the input file");
    do {
        if (n == cap) {
            cap = cap ? cap * 2 : 65536;
            if ((data = realloc(data, cap)) == NULL)
                die("out of memory");
        }
        got = fread(data + n, 1, cap - n, f);
        n += got;
    } while (got > 0);
    fclose(f);
    *len = n;
    return data;
}

/* ---- send mode ------------------------------------------------------------ */

struct conn_state {
    int fd;
    char *in;                 /* everything received */
    size_t in_len, in_cap;
    size_t parsed;            /* start of the next response head not yet parsed */
    int first, final;         /* status codes (0 = none yet) */
    long long body_left;      /* -1: no final head yet; else body bytes still expected */
    int closed;               /* 0 open, 1 eof, 2 reset */
    long long close_ms;
};

/* Parses complete response heads in c->in; sets first/final and the body
 * length of the final response. */
static void parse_heads(struct conn_state *c)
{
    while (c->final == 0) {
        char *start = c->in + c->parsed, *end;
        size_t avail = c->in_len - c->parsed;
        int code = 0;
        long long clen = -1;

        end = memmem(start, avail, "\r\n\r\n", 4);
        if (end == NULL)
            return;
        if (avail >= 12 && memcmp(start, "HTTP/", 5) == 0) {
            char *sp = memchr(start, ' ', (size_t)(end - start));
            if (sp != NULL)
                code = atoi(sp + 1);
        }
        for (char *p = start; p < end; p++) {
            if ((p == start || p[-1] == '\n') && (size_t)(end - p) > 15 &&
                strncasecmp(p, "Content-Length:", 15) == 0)
                clen = atoll(p + 15);
        }
        if (c->first == 0)
            c->first = code;
        c->parsed = (size_t)(end + 4 - c->in);
        if (code >= 200 || code == 0) {
            c->final = code;
            c->body_left = clen < 0 ? -2 : clen;   /* -2: until EOF */
        }
    }
}

static int response_complete(const struct conn_state *c)
{
    return c->final != 0 && c->body_left >= 0 &&
           c->in_len - c->parsed >= (size_t)c->body_left;
}

/* Waits up to ms for input and takes what is there.  Returns 1 if the
 * connection ended (EOF or error). */
static int pump(struct conn_state *c, int ms, long long t0)
{
    struct pollfd p = {c->fd, POLLIN, 0};
    char buf[65536];
    ssize_t n;

    if (c->closed)
        return 1;
    if (poll(&p, 1, ms < 0 ? 0 : ms) <= 0)
        return 0;
    n = recv(c->fd, buf, sizeof buf, 0);
    if (n <= 0) {
        c->closed = (n == 0) ? 1 : 2;
        c->close_ms = now_ms() - t0;
        return 1;
    }
    if (c->in_len + (size_t)n > c->in_cap) {
        c->in_cap = (c->in_len + (size_t)n) * 2;
        if ((c->in = realloc(c->in, c->in_cap)) == NULL)
            die("out of memory");
    }
    memcpy(c->in + c->in_len, buf, (size_t)n);
    c->in_len += (size_t)n;
    parse_heads(c);
    return 0;
}

/* Writes all of buf; returns 0, or -1 when the server closed / reset. */
static int write_all(struct conn_state *c, const char *buf, size_t len, size_t *sent,
                     long long t0)
{
    while (len > 0) {
        ssize_t n = send(c->fd, buf, len, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {  /* SO_SNDTIMEO expired */
                if (pump(c, 100, t0))
                    return -1;
                continue;
            }
            if (!c->closed) {
                c->closed = (errno == ECONNRESET) ? 2 : 1;
                c->close_ms = now_ms() - t0;
            }
            return -1;
        }
        buf += n;
        len -= (size_t)n;
        *sent += (size_t)n;
    }
    return 0;
}

static int run_send(const char *addr, int argc, char **argv)
{
    const char *in_path = NULL, *out_path = NULL;
    size_t head = (size_t)-1, chunk = 0, len, sent = 0, rest_sent = 0, off;
    int delay = 0, loop = 0, expect = 0, linger = 0, wait_ms = 2000, deadline_ms = 10000, opt;
    struct sockaddr_in sa;
    struct conn_state c;
    long long t0, deadline;
    char *data;

    memset(&c, 0, sizeof c);
    c.close_ms = -1;
    c.body_left = -1;
    while ((opt = getopt(argc, argv, "i:s:c:d:LeWw:t:o:")) != -1) {
        switch (opt) {
        case 'i': in_path = optarg; break;
        case 's': head = (size_t)atoll(optarg); break;
        case 'c': chunk = (size_t)atoll(optarg); break;
        case 'd': delay = atoi(optarg); break;
        case 'L': loop = 1; break;
        case 'e': expect = 1; break;
        case 'W': linger = 1; break;
        case 'w': wait_ms = atoi(optarg); break;
        case 't': deadline_ms = atoi(optarg); break;
        case 'o': out_path = optarg; break;
        default: die("usage: send ADDR -i FILE [-s N] [-c N] [-d MS] [-L] [-e] [-w MS] [-t MS] [-o FILE]");
        }
    }
    if (in_path == NULL || parse_addr(addr, &sa) != 0)
        die("send needs ADDR (IPv4:PORT) and -i FILE");
    data = read_file(in_path, &len);
    if (head > len)
        head = len;
    if (chunk == 0)
        chunk = len > head ? len - head : 1;
    if ((c.fd = connect_to(&sa)) < 0) {
        printf("first=0 final=0 closed=refused sent=0 rest_sent=0 recv=0 ms=0 close_ms=0\n");
        return 0;
    }
    {
        struct timeval tv = {0, 200000};    /* a full send buffer must not block forever */
        setsockopt(c.fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    }
    t0 = now_ms();
    deadline = t0 + deadline_ms;

    if (write_all(&c, data, head, &sent, t0) != 0)
        goto read_rest;
    if (expect) {
        long long until = now_ms() + wait_ms;
        while (c.first == 0 && !c.closed && now_ms() < until)
            pump(&c, (int)(until - now_ms()), t0);
        if (c.first != 100)
            goto read_rest;
    }
    off = head;
    while (!c.closed && now_ms() < deadline && !response_complete(&c)) {
        size_t n;
        if (off >= len) {
            if (!loop || len == head)
                break;
            off = head;
        }
        n = len - off < chunk ? len - off : chunk;
        if (write_all(&c, data + off, n, &sent, t0) != 0)
            break;
        rest_sent += n;
        off += n;
        /* Sleep between writes, but notice at once when the server answers or closes. */
        if (delay > 0) {
            long long until = now_ms() + delay;
            while (!c.closed && now_ms() < until && !response_complete(&c))
                pump(&c, (int)(until - now_ms()), t0);
        } else {
            pump(&c, 0, t0);
        }
    }

read_rest:
    while (!c.closed && !response_complete(&c) && now_ms() < deadline)
        pump(&c, (int)(deadline - now_ms()), t0);
    while (linger && !c.closed && now_ms() < deadline)
        pump(&c, (int)(deadline - now_ms()), t0);
    if (out_path != NULL) {
        FILE *f = fopen(out_path, "wb");
        if (f == NULL)
            die("cannot write the output file");
        if (c.in_len > 0)
            fwrite(c.in, 1, c.in_len, f);
        fclose(f);
    }
    printf("first=%d final=%d closed=%s sent=%zu rest_sent=%zu recv=%zu ms=%lld close_ms=%lld\n",
           c.first, c.final,
           c.closed == 1 ? "eof" : c.closed == 2 ? "reset"
                                 : response_complete(&c) ? "open" : "timeout",
           sent, rest_sent, c.in_len, now_ms() - t0, c.close_ms);
    close(c.fd);
    free(c.in);
    free(data);
    return 0;
}

/* ---- hold mode ------------------------------------------------------------ */

/* Marks connections the server closed (or reset, or wrote to) as gone. */
static void sweep(int *fds, int n, int ms)
{
    long long until = now_ms() + ms;

    do {
        for (int i = 0; i < n; i++) {
            struct pollfd p = {fds[i], POLLIN, 0};
            char buf[4096];
            if (fds[i] < 0 || poll(&p, 1, 0) <= 0)
                continue;
            if (recv(fds[i], buf, sizeof buf, MSG_DONTWAIT) <= 0) {
                close(fds[i]);
                fds[i] = -1;
            }
        }
        if (now_ms() < until)
            usleep(20000);
    } while (now_ms() < until);
}

static void report(const int *fds, int n, int closed_by_client)
{
    int open = 0;
    for (int i = 0; i < n; i++)
        open += fds[i] >= 0;
    printf("open=%d closed=%d\n", open, n - open - closed_by_client);
    fflush(stdout);
}

static int run_hold(const char *addr, int argc, char **argv)
{
    int n = 0, wait_ms = 500, opt, refused = 0, by_client = 0, *fds;
    struct sockaddr_in sa;
    char line[128];

    while ((opt = getopt(argc, argv, "n:w:")) != -1) {
        switch (opt) {
        case 'n': n = atoi(optarg); break;
        case 'w': wait_ms = atoi(optarg); break;
        default: die("usage: hold ADDR -n N [-w MS]");
        }
    }
    if (n <= 0 || n > 10000 || parse_addr(addr, &sa) != 0)
        die("hold needs ADDR (IPv4:PORT) and -n N (1..10000)");
    if ((fds = calloc((size_t)n, sizeof *fds)) == NULL)
        die("out of memory");
    for (int i = 0; i < n; i++) {
        fds[i] = connect_to(&sa);
        refused += fds[i] < 0;
    }
    sweep(fds, n, wait_ms);
    {
        int open = 0;
        for (int i = 0; i < n; i++)
            open += fds[i] >= 0;
        printf("connected=%d refused=%d open=%d closed=%d\n", n - refused, refused, open,
               n - refused - open);
        fflush(stdout);
        by_client = refused;    /* never-connected slots are not "closed by the server" */
    }
    while (fgets(line, sizeof line, stdin) != NULL) {
        int arg = 0;
        if (sscanf(line, "check %d", &arg) == 1) {
            sweep(fds, n, arg);
            report(fds, n, by_client);
        } else if (sscanf(line, "close %d", &arg) == 1) {
            for (int i = 0; i < n && arg > 0; i++) {
                if (fds[i] >= 0) {
                    close(fds[i]);
                    fds[i] = -1;
                    by_client++;
                    arg--;
                }
            }
            report(fds, n, by_client);
        } else if (strncmp(line, "quit", 4) == 0) {
            break;
        }
    }
    for (int i = 0; i < n; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    free(fds);
    return 0;
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 3)
        die("usage: hostile_client send|hold ADDR [options]  (see the source header)");
    if (strcmp(argv[1], "send") == 0)
        return run_send(argv[2], argc - 2, argv + 2);
    if (strcmp(argv[1], "hold") == 0)
        return run_hold(argv[2], argc - 2, argv + 2);
    die("the mode must be send or hold");
    return 2;
}
