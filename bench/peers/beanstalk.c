/*
 * beanstalk.c — smqd-peer-beanstalk: the "lifecycle" workload against
 * beanstalkd over its text protocol (one blocking socket per thread).
 * Producers put 1 KiB jobs; consumers reserve-with-timeout 1 and delete;
 * one connection alone cycles put -> reserve -> delete.  Counts deletes.
 * Run beanstalkd with -f0 (fsync after every write) for the durable figure.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pc.h"

struct conn {
    struct pc_rd rd;
    char put[64 + PC_BODY + 2];
    size_t put_len;
};

static int put(struct pc_worker *w, void *conn, uint64_t seq)
{
    struct conn *c = conn;
    int h = snprintf(c->put, 64, "put 0 0 60 %d\r\n", PC_BODY);
    pc_body(c->put + h, w->id, seq);
    memcpy(c->put + h + PC_BODY, "\r\n", 2);
    uint64_t t0 = pc_now_ns();
    if (pc_write_all(c->rd.fd, c->put, (size_t)h + PC_BODY + 2) != 0)
        return -1;
    char *l = pc_line(&c->rd);
    if (l == NULL || strncmp(l, "INSERTED ", 9) != 0)
        return -1;
    pc_lat(w, t0);
    return 0;
}

/* 1 consumed, 0 timed out, -1 error. */
static int consume(struct pc_worker *w, void *conn)
{
    struct conn *c = conn;
    static const char rsv[] = "reserve-with-timeout 1\r\n";
    uint64_t t0 = pc_now_ns();
    if (pc_write_all(c->rd.fd, rsv, sizeof rsv - 1) != 0)
        return -1;
    char *l = pc_line(&c->rd);
    if (l == NULL)
        return -1;
    if (strcmp(l, "TIMED_OUT") == 0)
        return 0;
    uint64_t id;
    size_t bytes;
    if (sscanf(l, "RESERVED %" SCNu64 " %zu", &id, &bytes) != 2 || bytes != PC_BODY)
        return -1;
    if (pc_read(&c->rd, NULL, bytes + 2) != 0)
        return -1;
    pc_lat(w, t0);
    char del[64];
    int n = snprintf(del, sizeof del, "delete %" PRIu64 "\r\n", id);
    t0 = pc_now_ns();
    if (pc_write_all(c->rd.fd, del, (size_t)n) != 0)
        return -1;
    l = pc_line(&c->rd);
    if (l == NULL || strcmp(l, "DELETED") != 0)
        return -1;
    pc_lat(w, t0);
    pc_count(w, 1);
    return 1;
}

static void *worker(void *arg)
{
    pc_socket_worker(arg, "beanstalk", sizeof(struct conn), put, consume);
    return NULL;
}

int main(int argc, char **argv)
{
    pc_parse(argc, argv, "lifecycle");
    return pc_run("beanstalkd", worker);
}
