/*
 * redisq.c — smqd-peer-redis: Redis's reliable-queue pattern over plain RESP
 * (one blocking socket per thread).  Producers LPUSH q <1 KiB>; consumers
 * BLMOVE q processing RIGHT LEFT 1 then LREM processing 1 <msg>; one
 * connection alone cycles all three.  Counts LREMs.  Run redis-server with
 * --appendonly yes --appendfsync always for the durable figure.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pc.h"

struct conn {
    struct pc_rd rd;
    char cmd[128 + PC_BODY + 2];
    char msg[PC_BODY];
};

/* Sends a RESP array of n arguments; the last may be the 1 KiB body. */
static int send_cmd(struct conn *c, int n, const char *const *argv, const size_t *lens)
{
    size_t off = (size_t)snprintf(c->cmd, sizeof c->cmd, "*%d\r\n", n);
    for (int i = 0; i < n; i++) {
        off += (size_t)snprintf(c->cmd + off, sizeof c->cmd - off, "$%zu\r\n", lens[i]);
        memcpy(c->cmd + off, argv[i], lens[i]);
        off += lens[i];
        memcpy(c->cmd + off, "\r\n", 2);
        off += 2;
    }
    return pc_write_all(c->rd.fd, c->cmd, off);
}

/* Reads one reply.  Integer replies -> *num; a bulk of PC_BODY bytes is
 * copied to c->msg.  Returns 1 value, 0 null, -1 error. */
static int reply(struct conn *c, long *num)
{
    char *l = pc_line(&c->rd);
    if (l == NULL)
        return -1;
    switch (l[0]) {
    case ':':
        *num = atol(l + 1);
        return 1;
    case '+':
        return 1;
    case '*':
        return atol(l + 1) < 0 ? 0 : -1;
    case '$': {
        long n = atol(l + 1);
        if (n < 0)
            return 0;
        if (n != PC_BODY)
            return -1;
        if (pc_read(&c->rd, c->msg, PC_BODY) != 0)
            return -1;
        return pc_read(&c->rd, NULL, 2) == 0 ? 1 : -1;
    }
    default:
        fprintf(stderr, "redis: %s\n", l);
        return -1;
    }
}

static int push(struct pc_worker *w, void *conn, uint64_t seq)
{
    struct conn *c = conn;
    char body[PC_BODY];
    pc_body(body, w->id, seq);
    const char *argv[] = { "LPUSH", "q", body };
    const size_t lens[] = { 5, 1, PC_BODY };
    long n;
    uint64_t t0 = pc_now_ns();
    if (send_cmd(c, 3, argv, lens) != 0 || reply(c, &n) != 1)
        return -1;
    pc_lat(w, t0);
    return 0;
}

static int consume(struct pc_worker *w, void *conn)
{
    struct conn *c = conn;
    const char *mv[] = { "BLMOVE", "q", "processing", "RIGHT", "LEFT", "1" };
    const size_t mvl[] = { 6, 1, 10, 5, 4, 1 };
    long n = 0;
    uint64_t t0 = pc_now_ns();
    if (send_cmd(c, 6, mv, mvl) != 0)
        return -1;
    int r = reply(c, &n);
    if (r <= 0)
        return r;
    pc_lat(w, t0);
    const char *rm[] = { "LREM", "processing", "1", c->msg };
    const size_t rml[] = { 4, 10, 1, PC_BODY };
    t0 = pc_now_ns();
    if (send_cmd(c, 4, rm, rml) != 0 || reply(c, &n) != 1 || n != 1)
        return -1;
    pc_lat(w, t0);
    pc_count(w, 1);
    return 1;
}

static void *worker(void *arg)
{
    pc_socket_worker(arg, "redis", sizeof(struct conn), push, consume);
    return NULL;
}

int main(int argc, char **argv)
{
    pc_parse(argc, argv, "lifecycle");
    return pc_run("redis", worker);
}
