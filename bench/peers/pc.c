/* pc.c — see pc.h. */
#define _GNU_SOURCE
#include "pc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct pc_opts pc_o = { .host = "127.0.0.1", .port = 0, .conns = 1, .duration_s = 3.0,
                        .scenario = NULL, .extra = NULL, .batch = 1 };
atomic_int pc_stop;
static uint64_t deadline_ns;

uint64_t pc_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void pc_body(char *body, int worker, uint64_t seq)
{
    for (int i = 0; i < PC_BODY; i++)
        body[i] = (char)('a' + i % 26);
    char pre[32];
    snprintf(pre, sizeof pre, "%04d-%018" PRIu64 "|", worker % 10000, seq);
    memcpy(body, pre, 24);
}

void pc_lat(struct pc_worker *w, uint64_t t0_ns)
{
    lg_hist_add(&w->hist, (pc_now_ns() - t0_ns) / 1000);
}

void pc_count(struct pc_worker *w, uint64_t n)
{
    if (pc_now_ns() <= deadline_ns)
        w->counted += n;
}

static void usage(void)
{
    fprintf(stderr, "usage: PROG [--host H] --port P [--connections N] [--duration-s S]\n"
                    "            [--scenario NAME] [--batch N] [--extra STRING]\n");
    exit(2);
}

void pc_parse(int argc, char **argv, const char *default_scenario)
{
    static const struct option lo[] = {
        { "host", 1, 0, 'h' },  { "port", 1, 0, 'p' },     { "connections", 1, 0, 'c' },
        { "duration-s", 1, 0, 'd' }, { "scenario", 1, 0, 's' }, { "batch", 1, 0, 'b' },
        { "extra", 1, 0, 'x' }, { 0, 0, 0, 0 }
    };
    int ch;
    pc_o.scenario = default_scenario;
    while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (ch) {
        case 'h': pc_o.host = optarg; break;
        case 'p': pc_o.port = atoi(optarg); break;
        case 'c': pc_o.conns = atoi(optarg); break;
        case 'd': pc_o.duration_s = atof(optarg); break;
        case 's': pc_o.scenario = optarg; break;
        case 'b': pc_o.batch = atoi(optarg); break;
        case 'x': pc_o.extra = optarg; break;
        default: usage();
        }
    }
    if (pc_o.conns < 1 || pc_o.conns > 1024 || pc_o.duration_s <= 0 || pc_o.duration_s > 600 ||
        pc_o.batch < 1 || pc_o.batch > 1024)
        usage();
}

int pc_run(const char *target, void *(*fn)(void *))
{
    int n = pc_o.conns;
    struct pc_worker *w = calloc((size_t)n, sizeof *w);
    pthread_t *t = calloc((size_t)n, sizeof *t);
    if (w == NULL || t == NULL)
        return 2;
    int producers = n / 2;
    uint64_t start = pc_now_ns();
    deadline_ns = start + (uint64_t)(pc_o.duration_s * 1e9);
    for (int i = 0; i < n; i++) {
        w[i].id = i;
        w[i].role = n == 1 ? PC_CYCLE : i < producers ? PC_PRODUCER : PC_CONSUMER;
        lg_hist_reset(&w[i].hist);
        if (pthread_create(&t[i], NULL, fn, &w[i]) != 0) {
            perror("pthread_create");
            return 2;
        }
    }
    while (pc_now_ns() < deadline_ns)
        usleep(10000);
    atomic_store(&pc_stop, 1);
    struct lg_hist all;
    lg_hist_reset(&all);
    uint64_t counted = 0, errors = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(t[i], NULL);
        lg_hist_merge(&all, &w[i].hist);
        counted += w[i].counted;
        errors += w[i].errors;
    }
    double secs = (double)(deadline_ns - start) / 1e9;
    char label[96];
    if (pc_o.batch > 1)
        snprintf(label, sizeof label, "%s-b%d", pc_o.scenario, pc_o.batch);
    else
        snprintf(label, sizeof label, "%s", pc_o.scenario);
    printf("ROW %s %s %d %.1f %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", target, label, n,
           (double)counted / secs,
           lg_hist_quantile(&all, 0.50), lg_hist_quantile(&all, 0.99), errors);
    free(w);
    free(t);
    return errors ? 1 : 0;
}

int pc_connect(void)
{
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)pc_o.port);
    if (inet_pton(AF_INET, pc_o.host, &a.sin_addr) != 1)
        return -1;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int pc_write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int fill(struct pc_rd *r)
{
    if (r->off > 0) {
        memmove(r->buf, r->buf + r->off, r->len - r->off);
        r->len -= r->off;
        r->off = 0;
    }
    if (r->len == sizeof r->buf)
        return -1;
    for (;;) {
        ssize_t n = read(r->fd, r->buf + r->len, sizeof r->buf - r->len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        r->len += (size_t)n;
        return 0;
    }
}

char *pc_line(struct pc_rd *r)
{
    for (;;) {
        char *s = r->buf + r->off;
        char *e = memmem(s, r->len - r->off, "\r\n", 2);
        if (e != NULL) {
            *e = 0;
            r->off = (size_t)(e + 2 - r->buf);
            return s;
        }
        if (fill(r) != 0)
            return NULL;
    }
}

int pc_read(struct pc_rd *r, void *dst, size_t n)
{
    char *d = dst;
    while (n > 0) {
        if (r->off == r->len && fill(r) != 0)
            return -1;
        size_t k = r->len - r->off < n ? r->len - r->off : n;
        if (d != NULL) {
            memcpy(d, r->buf + r->off, k);
            d += k;
        }
        r->off += k;
        n -= k;
    }
    return 0;
}

void pc_cycle(struct pc_worker *w, void *conn,
              int (*produce)(struct pc_worker *w, void *conn, uint64_t seq),
              int (*consume)(struct pc_worker *w, void *conn))
{
    uint64_t seq = 0;

    while (!atomic_load(&pc_stop)) {
        int r = 0;
        if (w->role != PC_CONSUMER)
            r = produce(w, conn, seq++);
        if (r == 0 && w->role != PC_PRODUCER)
            r = consume(w, conn) < 0 ? -1 : 0;
        if (r < 0) {
            w->errors++;
            break;
        }
    }
}

void pc_socket_worker(struct pc_worker *w, const char *target, size_t conn_size,
                      int (*produce)(struct pc_worker *w, void *conn, uint64_t seq),
                      int (*consume)(struct pc_worker *w, void *conn))
{
    struct pc_rd *rd = calloc(1, conn_size);

    if (rd == NULL || (rd->fd = pc_connect()) < 0) {
        fprintf(stderr, "%s: cannot connect\n", target);
        w->errors++;
        free(rd);
        return;
    }
    pc_cycle(w, rd, produce, consume);
    close(rd->fd);
    free(rd);
}
