/*
 * pc.h — shared plumbing of the peer load generators (bench/peers/): the
 * command line, a thread per connection with a role (cycle / producer /
 * consumer, as smqd-loadgen's lifecycle assigns them), the deadline, the
 * latency histograms (lg_hist) and the one-line result every tool prints:
 *
 *   ROW <target> <scenario> <connections> <msg/s> <p50_us> <p99_us> <errors>
 *
 * Latency is per request (per transaction for SQL), leaving out consumer
 * polls that found nothing (like smqd-loadgen leaves out empty receives).
 */
#ifndef PC_H
#define PC_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "../lg_hist.h"

#define PC_BODY 1024                 /* message body bytes */

enum pc_role { PC_CYCLE, PC_PRODUCER, PC_CONSUMER };

struct pc_opts {
    const char *host;
    int port;
    int conns;
    double duration_s;
    const char *scenario;
    const char *extra;               /* --extra: target-specific (socket dir, db path) */
    int batch;                       /* --batch (rows per transaction / commit) */
};

struct pc_worker {
    int id;
    enum pc_role role;
    struct lg_hist hist;             /* request latencies, microseconds */
    uint64_t counted;                /* messages completed before the deadline */
    uint64_t errors;
    void *state;                     /* the target's own per-connection state */
};

extern struct pc_opts pc_o;
extern atomic_int pc_stop;           /* set at the deadline: finish the request, exit */

uint64_t pc_now_ns(void);
/* Fills body (PC_BODY bytes) with printable bytes, a unique 24-byte prefix. */
void pc_body(char *body, int worker, uint64_t seq);
/* Records one request that took from t0 to now. */
void pc_lat(struct pc_worker *w, uint64_t t0_ns);
/* Counts n messages if the deadline has not passed. */
void pc_count(struct pc_worker *w, uint64_t n);
/* Parses the common options; returns 0 or exits with usage (status 2). */
void pc_parse(int argc, char **argv, const char *default_scenario);
/* Runs fn on conns threads (roles assigned) until the deadline, prints the ROW. */
int pc_run(const char *target, void *(*fn)(void *));

/* The loop of a socket peer: until the deadline a producer calls produce,
 * a consumer consume, a cycling connection both in turn.  A negative result
 * counts an error and ends the loop; consume returns 0 when it found nothing. */
void pc_cycle(struct pc_worker *w, void *conn,
              int (*produce)(struct pc_worker *w, void *conn, uint64_t seq),
              int (*consume)(struct pc_worker *w, void *conn));

/* A socket peer's whole worker: a zeroed connection record of conn_size
 * bytes whose FIRST member is a struct pc_rd, connected, driven by
 * pc_cycle, closed.  A failed connect counts an error. */
void pc_socket_worker(struct pc_worker *w, const char *target, size_t conn_size,
                      int (*produce)(struct pc_worker *w, void *conn, uint64_t seq),
                      int (*consume)(struct pc_worker *w, void *conn));

/* Blocking TCP to --host:--port with TCP_NODELAY; -1 on failure. */
int pc_connect(void);
int pc_write_all(int fd, const void *buf, size_t len);

/* A buffered reader for line protocols (beanstalkd, RESP). */
struct pc_rd {
    int fd;
    size_t off, len;
    char buf[8192];
};
/* The next CRLF-terminated line (NUL replaces the CR), valid until the next
 * call; NULL on EOF or error. */
char *pc_line(struct pc_rd *r);
/* Reads n bytes into dst (skips them when dst is NULL); 0 or -1. */
int pc_read(struct pc_rd *r, void *dst, size_t n);

#endif
