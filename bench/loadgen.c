/*
 * loadgen.c — smqd-loadgen, a load generator that drives a running smqd
 * over plain HTTP/1.1 keep-alive connections exactly like the MNS SDKs do
 * (signature V2, the Python SDK's headers), all from one epoll thread.
 *
 * This file owns the command line, the scenarios (a role per connection),
 * the connection state machine and event loop, the statistics and the
 * report.  Wire format: lg_http.c; signing: lg_sign.c; latency
 * histograms: lg_hist.c.  It uses no smqd code: it is a client.
 *
 * Exit status: 0 clean run; 1 the run saw errors (unexpected HTTP status,
 * connection errors, requests lost or abandoned); 2 usage or set-up failure.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "lg_hist.h"
#include "lg_http.h"
#include "lg_sign.h"

#define NS_PER_MS 1000000ull
#define NS_PER_S 1000000000ull
#define BATCH 16                        /* MNS batch size */
#define HANDLE_MAX 256                  /* longest receipt handle accepted */
#define MSGID_MAX 64                    /* longest MessageId accepted */
#define LP_MAX 8192                     /* messages awaiting their match (longpoll) */
#define MAX_EVENTS 256
#define RECONNECT_NS (100 * NS_PER_MS)
#define HARD_EXTRA_NS (35 * NS_PER_S)   /* hard stop: duration + 35 s */
#define SETTLE_MAX_NS (4 * NS_PER_S)    /* longpoll: longest wait for waiters */
#define SETTLE_NS (200 * NS_PER_MS)     /* longpoll: quiet time once all wait */
#define PREFILL_MAX_S 300.0
#define SYNC_TIMEOUT_S 10
#define MAX_ERR_KINDS 32
#define EXIT_ERRORS 1
#define EXIT_USAGE 2

enum scenario { SC_SEND, SC_LIFECYCLE, SC_BATCH, SC_LONGPOLL, SC_DRAIN, SC_N };
static const char *const scenario_names[SC_N] = { "send", "lifecycle", "batch", "longpoll",
                                                  "drain" };

enum op { OP_NONE, OP_SEND, OP_BSEND, OP_RECV, OP_BRECV, OP_DEL, OP_BDEL, OP_N };
static const char *const op_names[OP_N] = { "none", "send", "batch_send", "receive",
                                            "batch_receive", "delete", "batch_delete" };

/* What a connection does in a loop. */
enum role {
    R_SEND,        /* SendMessage */
    R_BSEND,       /* BatchSendMessage of 16 */
    R_CONSUME,     /* ReceiveMessage -> DeleteMessage */
    R_BCONSUME,    /* BatchReceiveMessage -> BatchDeleteMessage */
    R_CYCLE,       /* send -> receive -> delete (a lone connection) */
    R_BCYCLE,      /* batch send -> batch receive -> batch delete */
    R_WAITER,      /* long-polling receive -> delete */
    R_PACED,       /* send one message, pause, again */
};

enum cstate { CS_DOWN, CS_CONNECTING, CS_BUSY, CS_IDLE, CS_DONE };

enum cerr { CE_CONNECT, CE_RESET, CE_EOF, CE_PROTOCOL, CE_N };
static const char *const cerr_names[CE_N] = { "connect", "reset", "eof", "protocol" };

enum metric { M_SENT, M_RECEIVED, M_DELETED };

struct opts {
    const char *host, *ak, *sk, *queue;
    const char *topic;            /* send: PublishMessage to this topic instead */
    int subscriptions;            /* --create-topic N: queue subscriptions made first */
    int wait_fanout;              /* after the run, wait for the topic's MessageCount 0 */
    const char *push_endpoint;    /* --create-topic: HTTP subscriptions to this URL instead */
    const char *ack_log;          /* send: "a MessageId t_ns" per 201, monotonic clock */
    int paced;                    /* send: --pause-ms given, each connection pauses after a 201 */
    int port;
    enum scenario sc;
    int conns, producers, waiters, body_bytes, wait_s, pause_ms;
    double duration_s;
    long long messages, prefill;
    int create_queue, json, self_test;
};

struct conn {
    int fd;
    enum role role;
    enum cstate st;
    enum op want;                 /* next operation of the role */
    enum op op;                   /* operation in flight (CS_BUSY) */
    int parked;                   /* a waiter's receive fully written, unanswered */
    uint64_t t_start;             /* when the request in flight was issued */
    uint64_t timer_at;            /* CS_DOWN: reconnect; CS_IDLE: next request */
    char *wbuf;
    size_t wcap, wlen, woff;
    char *rbuf;
    size_t rcap, rlen;
    struct lg_resp resp;
    int nh;                       /* receipt handles held for the next delete */
    char handles[BATCH][HANDLE_MAX];
};

struct err_kind {
    enum op op;
    int status;
    char code[48];
    uint64_t n;
};

struct stats {
    struct lg_hist op[OP_N];      /* latency per operation (us) */
    struct lg_hist all;           /* every request but long-poll waits */
    struct lg_hist empty;         /* receives answered MessageNotExist */
    struct lg_hist wake;          /* longpoll: send's 201 -> waiter's 200 */
    struct lg_hist delivery;      /* longpoll: send issued -> waiter's 200 */
    uint64_t sent, received, deleted, empty_recv, responses, slow;
    uint64_t status[600];
    uint64_t errors;              /* unexpected HTTP answers */
    struct err_kind err[MAX_ERR_KINDS];
    int nerr;
    uint64_t conn_err[CE_N], lost, abandoned, server_closes, idle_closes;
    uint64_t wake_before_ack, lp_dup, lp_overflow, lp_unmatched, late_timeouts;
    uint64_t park_samples, park_sum, park_min, park_max, park_start;
};

struct lp_ent {
    uint64_t t;                   /* when the first side arrived */
    uint64_t t_issue;             /* LP_SENT: when the send was issued */
    int kind;                     /* LP_SENT or LP_RECV: which side arrived first */
    size_t len;
    char id[MSGID_MAX];
};
enum { LP_SENT, LP_RECV };

static struct {
    struct opts o;
    struct lg_signer signer;
    struct lg_req_ctx rc;
    char host_hdr[300];
    struct sockaddr_storage addr;
    socklen_t addrlen;
    int ep;
    struct conn *conns;
    int maxconns, nconns, ndone;
    char res_msgs[160], res_recv[220], res_brecv[240];
    char *send_body, *bsend_body, *bdel_body;
    size_t send_len, bsend_len, bdel_cap;
    /* the phase being run */
    int measured, stopping, released;
    enum metric metric;
    uint64_t t_phase, t_start, t_stop, t_last, t_end, t_all_waiting;
    uint64_t deadline, hard_deadline, next_timer;
    long long target, issued;
    int waiting;
    struct rusage ru_start, ru_stop;
    double fanout_s;              /* --wait-fanout: run start -> MessageCount 0 (-1: never) */
    FILE *ack;                    /* --ack-log, open for the measured run */
    struct stats st;
    struct lp_ent lp[LP_MAX];
    int lp_n;
} g;

static volatile sig_atomic_t g_signals;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

static void die(const char *msg)
{
    fprintf(stderr, "smqd-loadgen: %s\n", msg);
    exit(EXIT_USAGE);
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n);
    if (p == NULL)
        die("out of memory");
    return p;
}

/* ---------------------------------------------------------------- stats */

static void note_timer(uint64_t t)
{
    if (t < g.next_timer)
        g.next_timer = t;
}

static void begin_stop(uint64_t now);

/* A counted message completed: the figure messages/s is made of. */
static void counted(enum metric m, uint64_t now)
{
    if (m != g.metric)
        return;
    g.t_last = now;
    uint64_t v = m == M_SENT ? g.st.sent : m == M_RECEIVED ? g.st.received : g.st.deleted;
    if (g.target > 0 && v >= (uint64_t)g.target)
        begin_stop(now);
}

static void record(enum op op, uint64_t us, int into_all)
{
    lg_hist_add(&g.st.op[op], us);
    if (!into_all)
        return;
    lg_hist_add(&g.st.all, us);
    if (us >= 1000000)
        g.st.slow++;
}

/* Copies the letters and digits of v to out ("-" when none). */
static void copy_alnum(const char *v, size_t vl, char *out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < vl && n + 1 < cap; i++) {
        char ch = v[i];
        if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9'))
            out[n++] = ch;
    }
    if (n == 0 && cap > 1)
        n = (size_t)snprintf(out, cap, "-");
    out[n] = '\0';
}

/* Copies the MNS error code (letters and digits only) of an error body. */
static void error_code(const char *b, const char *e, char *out, size_t cap)
{
    const char *v = NULL;
    size_t vl = 0;
    if (lg_xml_next(b, e, "Code", &v, &vl) == NULL && lg_xml_next(b, e, "ErrorCode", &v, &vl) == NULL)
        vl = 0;
    copy_alnum(v, vl, out, cap);
}

/* Copies the text of the first element name of a body (letters and digits only). */
static void elem_text(const char *b, const char *e, const char *name, char *out, size_t cap)
{
    const char *v = NULL;
    size_t vl = 0;
    if (lg_xml_next(b, e, name, &v, &vl) == NULL)
        vl = 0;
    copy_alnum(v, vl, out, cap);
}

static void note_error(enum op op, int status, const char *b, const char *e)
{
    char code[48];
    error_code(b, e, code, sizeof code);
    g.st.errors++;
    for (int i = 0; i < g.st.nerr; i++) {
        struct err_kind *k = &g.st.err[i];
        if (k->op == op && k->status == status && strcmp(k->code, code) == 0) {
            k->n++;
            return;
        }
    }
    if (g.st.nerr == MAX_ERR_KINDS)
        return;                        /* still counted in errors and status[] */
    struct err_kind *k = &g.st.err[g.st.nerr++];
    k->op = op;
    k->status = status;
    snprintf(k->code, sizeof k->code, "%s", code);
    k->n = 1;
}

static int is_code(const char *b, const char *e, const char *code)
{
    char got[48];
    error_code(b, e, got, sizeof got);
    return strcmp(got, code) == 0;
}

static void sample_parked(void)
{
    uint64_t w = (uint64_t)g.waiting;
    if (g.st.park_samples == 0 || w < g.st.park_min)
        g.st.park_min = w;
    if (w > g.st.park_max)
        g.st.park_max = w;
    g.st.park_samples++;
    g.st.park_sum += w;
}

/* Longpoll: pairs a send's 201 with the waiter's 200 by MessageId, in
 * whichever order they arrive; the wake-up latency is 200 minus 201 (0 when
 * the 200 came first), the delivery latency 200 minus the send's start. */
static void lp_note(const char *id, size_t len, int kind, uint64_t now, uint64_t t_issue)
{
    if (len == 0 || len >= MSGID_MAX)
        return;
    for (int i = 0; i < g.lp_n; i++) {
        struct lp_ent *x = &g.lp[i];
        if (x->len != len || memcmp(x->id, id, len) != 0)
            continue;
        if (x->kind == kind) {
            g.st.lp_dup++;
            return;
        }
        uint64_t sent = kind == LP_SENT ? now : x->t;
        uint64_t recv = kind == LP_RECV ? now : x->t;
        uint64_t issued = kind == LP_SENT ? t_issue : x->t_issue;
        if (recv < sent)
            g.st.wake_before_ack++;
        lg_hist_add(&g.st.wake, recv > sent ? (recv - sent) / 1000 : 0);
        lg_hist_add(&g.st.delivery, recv > issued ? (recv - issued) / 1000 : 0);
        *x = g.lp[--g.lp_n];
        return;
    }
    if (g.lp_n == LP_MAX) {
        g.st.lp_overflow++;
        return;
    }
    struct lp_ent *x = &g.lp[g.lp_n++];
    x->t = now;
    x->t_issue = t_issue;
    x->kind = kind;
    x->len = len;
    memcpy(x->id, id, len);
}

/* ---------------------------------------------------------- connections */

static void conn_unpark(struct conn *c)
{
    if (c->parked) {
        c->parked = 0;
        g.waiting--;
    }
}

static void conn_close_fd(struct conn *c)
{
    conn_unpark(c);
    if (c->fd >= 0)
        close(c->fd);          /* also leaves the epoll set */
    c->fd = -1;
}

static void conn_done(struct conn *c)
{
    conn_close_fd(c);
    if (c->st != CS_DONE) {
        c->st = CS_DONE;
        g.ndone++;
    }
}

static void retry_later(struct conn *c, uint64_t at)
{
    conn_close_fd(c);
    if (g.stopping) {
        conn_done(c);
        return;
    }
    c->st = CS_DOWN;
    c->timer_at = at;
    note_timer(at);
}

static void conn_fail(struct conn *c, enum cerr kind)
{
    g.st.conn_err[kind]++;
    if (c->st == CS_BUSY)
        g.st.lost++;
    retry_later(c, now_ns() + RECONNECT_NS);
}

static void conn_issue(struct conn *c, uint64_t now);

static void conn_connected(struct conn *c, uint64_t now)
{
    if (c->role == R_PACED && !g.released) {
        c->st = CS_IDLE;
        c->timer_at = UINT64_MAX;
        return;
    }
    conn_issue(c, now);
}

static void conn_connect(struct conn *c, uint64_t now)
{
    int fd = socket(g.addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        g.st.conn_err[CE_CONNECT]++;
        retry_later(c, now + RECONNECT_NS);
        return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    int r = connect(fd, (struct sockaddr *)&g.addr, g.addrlen);
    if (r < 0 && errno != EINPROGRESS) {
        close(fd);
        g.st.conn_err[CE_CONNECT]++;
        retry_later(c, now + RECONNECT_NS);
        return;
    }
    struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, .data.ptr = c };
    if (epoll_ctl(g.ep, EPOLL_CTL_ADD, fd, &ev) < 0)
        die("epoll_ctl failed");
    c->fd = fd;
    c->st = CS_CONNECTING;
    if (r == 0)
        conn_connected(c, now);
}

/* 0 while the connection lives, -1 once it failed. */
static int conn_write(struct conn *c)
{
    while (c->woff < c->wlen) {
        ssize_t n = send(c->fd, c->wbuf + c->woff, c->wlen - c->woff, MSG_NOSIGNAL);
        if (n > 0) {
            c->woff += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        conn_fail(c, CE_RESET);
        return -1;
    }
    if (c->role == R_WAITER && c->op == OP_RECV && !c->parked) {
        c->parked = 1;
        g.waiting++;
    }
    return 0;
}

/* ------------------------------------------------------------- requests */

static size_t build_into(struct conn *c, const char *verb, const char *res, size_t res_len,
                         const char *body, size_t body_len)
{
    size_t n = lg_build_request(&g.rc, time(NULL), c->wbuf, c->wcap, verb, res, res_len,
                                body, body_len);
    if (n == 0)
        die("a request does not fit its buffer (or HMAC failed)");
    return n;
}

static size_t build_batch_delete(struct conn *c)
{
    static const char head[] = "<?xml version=\"1.0\" encoding=\"utf-8\"?>"
                               "<ReceiptHandles xmlns=\"http://mns.aliyuncs.com/doc/v1/\">";
    static const char tail[] = "</ReceiptHandles>";
    size_t n = (size_t)snprintf(g.bdel_body, g.bdel_cap, "%s", head);
    for (int i = 0; i < c->nh; i++)
        n += (size_t)snprintf(g.bdel_body + n, g.bdel_cap - n,
                              "<ReceiptHandle>%s</ReceiptHandle>", c->handles[i]);
    n += (size_t)snprintf(g.bdel_body + n, g.bdel_cap - n, "%s", tail);
    return build_into(c, "DELETE", g.res_msgs, strlen(g.res_msgs), g.bdel_body, n);
}

static size_t build_request(struct conn *c, enum op op)
{
    char res[sizeof g.res_msgs + HANDLE_MAX + 32];
    int n;
    switch (op) {
    case OP_SEND:
        return build_into(c, "POST", g.res_msgs, strlen(g.res_msgs), g.send_body, g.send_len);
    case OP_BSEND:
        return build_into(c, "POST", g.res_msgs, strlen(g.res_msgs), g.bsend_body, g.bsend_len);
    case OP_RECV:
        return build_into(c, "GET", g.res_recv, strlen(g.res_recv), NULL, 0);
    case OP_BRECV:
        return build_into(c, "GET", g.res_brecv, strlen(g.res_brecv), NULL, 0);
    case OP_DEL:
        n = snprintf(res, sizeof res, "%s?ReceiptHandle=%s", g.res_msgs, c->handles[0]);
        return build_into(c, "DELETE", res, (size_t)n, NULL, 0);
    case OP_BDEL:
        return build_batch_delete(c);
    default:
        die("no such operation");
    }
    return 0;
}

/* Whether op may start now; sends are counted against --messages here. */
static enum op gate(enum op op)
{
    switch (op) {
    case OP_SEND:
    case OP_BSEND:
        if (g.stopping || (g.target > 0 && g.issued >= g.target))
            return OP_NONE;
        g.issued += op == OP_SEND ? 1 : BATCH;
        return op;
    case OP_RECV:
    case OP_BRECV:
        return g.stopping ? OP_NONE : op;
    default:
        return op;                     /* deletes finish a started cycle */
    }
}

static void conn_issue(struct conn *c, uint64_t now)
{
    enum op op = gate(c->want);
    if (op == OP_NONE) {
        conn_done(c);
        return;
    }
    if (op == OP_SEND && c->role == R_PACED)
        sample_parked();
    c->op = op;
    c->wlen = build_request(c, op);
    c->woff = 0;
    c->rlen = 0;
    lg_resp_reset(&c->resp);
    c->timer_at = 0;
    c->st = CS_BUSY;
    c->t_start = now;
    conn_write(c);
}

/* ------------------------------------------------------------ responses */

static enum op first_op(enum role r)
{
    switch (r) {
    case R_SEND:
    case R_CYCLE:
    case R_PACED:
        return OP_SEND;
    case R_BSEND:
    case R_BCYCLE:
        return OP_BSEND;
    case R_BCONSUME:
        return OP_BRECV;
    default:
        return OP_RECV;
    }
}

/* --ack-log: when each publish was acknowledged, on the monotonic clock that
 * bench/push_sink.c stamps its receipts with (bench/push.sh joins the two). */
static void log_ack(const char *b, const char *e, uint64_t now)
{
    const char *v;
    size_t vl;
    if (lg_xml_next(b, e, "MessageId", &v, &vl) != NULL)
        fprintf(g.ack, "a %.*s %llu\n", (int)vl, v, (unsigned long long)now);
}

static void on_send(struct conn *c, int status, const char *b, const char *e, uint64_t us,
                    uint64_t now)
{
    int ok = status == 201;
    if (ok) {
        int n = c->op == OP_BSEND ? lg_xml_count(b, e, "MessageId") : 1;
        if (g.o.sc == SC_LONGPOLL && g.measured) {
            const char *v;
            size_t vl;
            if (lg_xml_next(b, e, "MessageId", &v, &vl) != NULL)
                lp_note(v, vl, LP_SENT, now, c->t_start);
        }
        if (g.ack != NULL && g.measured)
            log_ack(b, e, now);
        g.st.sent += (uint64_t)n;
        record(c->op, us, 1);
        counted(M_SENT, now);
    } else {
        note_error(c->op, status, b, e);
    }
    if (ok && c->role == R_CYCLE)
        c->want = OP_RECV;
    else if (ok && c->role == R_BCYCLE)
        c->want = OP_BRECV;
    else
        c->want = c->op;
    if (c->role == R_PACED)
        c->timer_at = now + (uint64_t)g.o.pause_ms * NS_PER_MS;
}

/* Keeps the receipt handles of a (batch) receive; 0 if one is unusable. */
static int take_handles(struct conn *c, const char *b, const char *e)
{
    const char *v;
    size_t vl;
    c->nh = 0;
    while (c->nh < BATCH && (b = lg_xml_next(b, e, "ReceiptHandle", &v, &vl)) != NULL) {
        if (vl == 0 || vl >= HANDLE_MAX)
            return 0;
        memcpy(c->handles[c->nh], v, vl);
        c->handles[c->nh][vl] = '\0';
        c->nh++;
    }
    return c->nh > 0;
}

static void note_received_ids(const char *b, const char *e, uint64_t now)
{
    const char *v;
    size_t vl;
    while ((b = lg_xml_next(b, e, "MessageId", &v, &vl)) != NULL)
        lp_note(v, vl, LP_RECV, now, 0);
}

/* Where a consumer goes after an empty or failed receive. */
static enum op after_no_message(struct conn *c, int empty)
{
    if (c->role == R_CYCLE)
        return OP_SEND;
    if (c->role == R_BCYCLE)
        return OP_BSEND;
    if (empty && g.o.sc == SC_DRAIN && g.measured)
        return OP_NONE;                /* the backlog is drained */
    return c->op;
}

static void on_receive(struct conn *c, int status, const char *b, const char *e, uint64_t us,
                       uint64_t now)
{
    int longpoll = g.o.sc == SC_LONGPOLL;
    if (status == 200 && take_handles(c, b, e)) {
        if (longpoll)
            note_received_ids(b, e, now);
        g.st.received += (uint64_t)c->nh;
        record(c->op, us, !longpoll);
        counted(M_RECEIVED, now);
        c->want = c->op == OP_BRECV ? OP_BDEL : OP_DEL;
        return;
    }
    if (status == 404 && is_code(b, e, "MessageNotExist")) {
        g.st.empty_recv++;
        lg_hist_add(&g.st.empty, us);
        if (us > ((uint64_t)g.o.wait_s + 1) * 1000000)
            g.st.late_timeouts++;
        c->want = after_no_message(c, 1);
        return;
    }
    note_error(c->op, status, b, e);
    c->want = after_no_message(c, 0);
}

static void on_delete(struct conn *c, int status, const char *b, const char *e, uint64_t us,
                      uint64_t now)
{
    if (status == 204) {
        g.st.deleted += c->op == OP_BDEL ? (uint64_t)c->nh : 1;
        record(c->op, us, 1);
        counted(M_DELETED, now);
    } else {
        if (c->op == OP_BDEL && status == 404) {
            int failed = lg_xml_count(b, e, "ErrorCode");
            if (failed < c->nh) {
                g.st.deleted += (uint64_t)(c->nh - failed);
                counted(M_DELETED, now);
            }
        }
        note_error(c->op, status, b, e);
    }
    c->nh = 0;
    if (c->role == R_CYCLE)
        c->want = OP_SEND;
    else if (c->role == R_BCYCLE)
        c->want = OP_BSEND;
    else
        c->want = c->op == OP_BDEL ? OP_BRECV : OP_RECV;
}

static void handle_response(struct conn *c, uint64_t now)
{
    int status = c->resp.status;
    const char *b = c->rbuf + c->resp.head_len;
    const char *e = b + c->resp.body_len;
    uint64_t us = (now - c->t_start) / 1000;
    g.st.responses++;
    g.st.status[status]++;
    switch (c->op) {
    case OP_SEND:
    case OP_BSEND:
        on_send(c, status, b, e, us, now);
        break;
    case OP_RECV:
    case OP_BRECV:
        on_receive(c, status, b, e, us, now);
        break;
    default:
        on_delete(c, status, b, e, us, now);
        break;
    }
}

/* A whole response is in rbuf: account for it and start the next request. */
static void conn_complete(struct conn *c)
{
    uint64_t now = now_ns();
    if (c->rlen != c->resp.head_len + c->resp.body_len) {
        conn_fail(c, CE_PROTOCOL);           /* bytes nobody asked for */
        return;
    }
    int server_close = c->resp.close;
    conn_unpark(c);
    handle_response(c, now);
    c->rlen = 0;
    lg_resp_reset(&c->resp);
    if (server_close) {
        g.st.server_closes++;
        retry_later(c, now);
    } else if (c->timer_at > now && !g.stopping) {
        c->st = CS_IDLE;
        note_timer(c->timer_at);
    } else {
        conn_issue(c, now);
    }
}

static void conn_eof(struct conn *c)
{
    if (c->st == CS_BUSY) {
        conn_fail(c, CE_EOF);
        return;
    }
    g.st.idle_closes++;                      /* e.g. the server's idle timeout */
    retry_later(c, now_ns());
}

static void conn_read(struct conn *c)
{
    while (c->fd >= 0) {
        if (c->rlen == c->rcap) {
            conn_fail(c, CE_PROTOCOL);       /* response larger than expected */
            return;
        }
        ssize_t n = recv(c->fd, c->rbuf + c->rlen, c->rcap - c->rlen, 0);
        if (n == 0) {
            conn_eof(c);
            return;
        }
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                conn_fail(c, CE_RESET);
            return;
        }
        if (c->st != CS_BUSY) {
            conn_fail(c, CE_PROTOCOL);       /* unsolicited bytes */
            return;
        }
        c->rlen += (size_t)n;
        int r = lg_resp_parse(&c->resp, c->rbuf, c->rlen);
        if (r < 0) {
            conn_fail(c, CE_PROTOCOL);
            return;
        }
        if (r > 0)
            conn_complete(c);
    }
}

static void conn_event(struct conn *c, uint32_t ev)
{
    if (c->fd < 0 || c->st == CS_DONE || c->st == CS_DOWN)
        return;                              /* stale event of a closed socket */
    if (c->st == CS_CONNECTING) {
        int err = 0;
        socklen_t len = sizeof err;
        if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
            err = errno;
        if (err != 0)
            conn_fail(c, CE_CONNECT);
        else if (ev & EPOLLOUT)
            conn_connected(c, now_ns());
        return;
    }
    if (c->st == CS_BUSY && c->woff < c->wlen && (ev & (EPOLLOUT | EPOLLERR)))
        if (conn_write(c) < 0)
            return;
    if (ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
        conn_read(c);
}

/* ---------------------------------------------------------------- phase */

static void begin_stop(uint64_t now)
{
    if (g.stopping)
        return;
    g.stopping = 1;
    g.t_stop = now;
    getrusage(RUSAGE_SELF, &g.ru_stop);
    for (int i = 0; i < g.nconns; i++) {
        struct conn *c = &g.conns[i];
        if (c->st == CS_DOWN || c->st == CS_IDLE || c->st == CS_CONNECTING)
            conn_done(c);                    /* busy ones finish their request */
    }
}

static void hard_stop(uint64_t now)
{
    begin_stop(now);
    for (int i = 0; i < g.nconns; i++) {
        struct conn *c = &g.conns[i];
        if (c->st == CS_BUSY)
            g.st.abandoned++;
        conn_done(c);
    }
}

static void run_timers(uint64_t now)
{
    if (now < g.next_timer)
        return;
    g.next_timer = UINT64_MAX;
    for (int i = 0; i < g.nconns; i++) {
        struct conn *c = &g.conns[i];
        if (c->st != CS_DOWN && c->st != CS_IDLE)
            continue;
        if (c->timer_at > now)
            note_timer(c->timer_at);
        else if (c->st == CS_DOWN)
            conn_connect(c, now);
        else
            conn_issue(c, now);
    }
}

/* Longpoll: producers start once every waiter's receive is on the wire
 * and has had SETTLE_NS to park in the server (or after SETTLE_MAX_NS). */
static void maybe_release(uint64_t now)
{
    if (g.waiting < g.o.waiters)
        g.t_all_waiting = 0;
    else if (g.t_all_waiting == 0)
        g.t_all_waiting = now;
    int settled = g.t_all_waiting != 0 && now - g.t_all_waiting >= SETTLE_NS;
    if (!settled && now - g.t_phase < SETTLE_MAX_NS)
        return;
    g.released = 1;
    g.st.park_start = (uint64_t)g.waiting;
    g.t_start = g.t_last = now;
    g.deadline = now + (uint64_t)(g.o.duration_s * 1e9);
    getrusage(RUSAGE_SELF, &g.ru_start);
    for (int i = 0; i < g.nconns; i++) {
        struct conn *c = &g.conns[i];
        if (c->role == R_PACED && c->st == CS_IDLE) {
            c->timer_at = now;
            note_timer(now);
        }
    }
}

static int wait_ms(uint64_t now)
{
    uint64_t until = g.next_timer < g.hard_deadline ? g.next_timer : g.hard_deadline;
    if (!g.stopping && g.deadline < until)
        until = g.deadline;
    if (!g.released && now + 10 * NS_PER_MS < until)
        until = now + 10 * NS_PER_MS;
    if (until <= now)
        return 0;
    uint64_t ms = (until - now + NS_PER_MS - 1) / NS_PER_MS;
    return ms > 1000 ? 1000 : (int)ms;
}

static void run_loop(void)
{
    struct epoll_event evs[MAX_EVENTS];
    while (g.ndone < g.nconns) {
        uint64_t now = now_ns();
        if (g_signals >= 2 || now >= g.hard_deadline) {
            hard_stop(now);
            break;
        }
        if (g_signals == 1 || (!g.stopping && now >= g.deadline))
            begin_stop(now);
        if (!g.released)
            maybe_release(now);
        run_timers(now);
        if (g.ndone >= g.nconns)
            break;
        int n = epoll_wait(g.ep, evs, MAX_EVENTS, wait_ms(now));
        if (n < 0 && errno != EINTR)
            die("epoll_wait failed");
        for (int i = 0; i < n; i++)
            conn_event(evs[i].data.ptr, evs[i].events);
    }
    g.t_end = now_ns();
    if (!g.stopping) {
        g.stopping = 1;
        g.t_stop = g.t_end;
        getrusage(RUSAGE_SELF, &g.ru_stop);
    }
}

static int assign_roles(int measured)
{
    const struct opts *o = &g.o;
    int n = o->conns;
    if (!measured) {
        for (int i = 0; i < n; i++)
            g.conns[i].role = R_BSEND;
        return n;
    }
    int producers = o->producers > 0 ? o->producers : n / 2;
    if (producers >= n)
        producers = n - 1;
    for (int i = 0; i < n; i++) {
        struct conn *c = &g.conns[i];
        switch (o->sc) {
        case SC_SEND:
            c->role = o->paced ? R_PACED : R_SEND;
            break;
        case SC_DRAIN:
            c->role = R_CONSUME;
            break;
        case SC_LIFECYCLE:
            c->role = n == 1 ? R_CYCLE : i < producers ? R_SEND : R_CONSUME;
            break;
        case SC_BATCH:
            c->role = n == 1 ? R_BCYCLE : i < producers ? R_BSEND : R_BCONSUME;
            break;
        default:
            c->role = R_PACED;
            break;
        }
    }
    if (o->sc != SC_LONGPOLL)
        return n;
    for (int i = 0; i < o->waiters; i++)
        g.conns[n + i].role = R_WAITER;
    return n + o->waiters;
}

static void run_phase(int measured)
{
    memset(&g.st, 0, sizeof g.st);
    g.measured = measured;
    g.stopping = 0;
    g.released = !measured || g.o.sc != SC_LONGPOLL;
    g.metric = !measured || g.o.sc == SC_SEND ? M_SENT
             : g.o.sc == SC_LONGPOLL          ? M_RECEIVED
                                              : M_DELETED;
    g.issued = 0;
    g.waiting = 0;
    g.lp_n = 0;
    g.ndone = 0;
    g.t_all_waiting = 0;
    g.target = measured ? g.o.messages : g.o.prefill;
    uint64_t now = now_ns();
    double dur = measured ? g.o.duration_s : PREFILL_MAX_S;
    g.t_phase = g.t_start = g.t_last = now;
    g.deadline = g.released ? now + (uint64_t)(dur * 1e9) : UINT64_MAX;
    g.hard_deadline = now + (uint64_t)(dur * 1e9) + HARD_EXTRA_NS;
    g.next_timer = UINT64_MAX;
    getrusage(RUSAGE_SELF, &g.ru_start);
    g.nconns = assign_roles(measured);
    for (int i = 0; i < g.nconns; i++) {
        struct conn *c = &g.conns[i];
        c->fd = -1;
        c->st = CS_DOWN;
        c->parked = 0;
        c->nh = 0;
        c->want = first_op(c->role);
        conn_connect(c, now);
    }
    run_loop();
    g.st.lp_unmatched = (uint64_t)g.lp_n;
}

/* ---------------------------------------------------------------- setup */

static char *make_message_xml(size_t *len, int n_messages, int body_bytes)
{
    static const char head[] = "<?xml version=\"1.0\" encoding=\"utf-8\"?>";
    static const char ns[] = " xmlns=\"http://mns.aliyuncs.com/doc/v1/\"";
    size_t cap = sizeof head + 64 + (size_t)n_messages * ((size_t)body_bytes + 96);
    char *x = xmalloc(cap), *p = x;
    p += sprintf(p, "%s", head);
    if (n_messages > 1)
        p += sprintf(p, "<Messages%s>", ns);
    for (int m = 0; m < n_messages; m++) {
        p += sprintf(p, "<Message%s><MessageBody>", n_messages > 1 ? "" : ns);
        for (int i = 0; i < body_bytes; i++)
            *p++ = (char)('a' + (i + m) % 26);
        p += sprintf(p, "</MessageBody></Message>");
    }
    if (n_messages > 1)
        p += sprintf(p, "</Messages>");
    *len = (size_t)(p - x);
    return x;
}

static void setup_buffers(void)
{
    const struct opts *o = &g.o;
    int batch = o->sc == SC_BATCH || o->prefill > 0;
    g.send_body = make_message_xml(&g.send_len, 1, o->body_bytes);
    g.bsend_body = batch ? make_message_xml(&g.bsend_len, BATCH, o->body_bytes) : NULL;
    g.bdel_cap = 256 + BATCH * (HANDLE_MAX + 40);
    g.bdel_body = xmalloc(g.bdel_cap);
    size_t body_max = g.send_len > g.bdel_cap ? g.send_len : g.bdel_cap;
    if (g.bsend_len > body_max)
        body_max = g.bsend_len;
    size_t per_msg = (size_t)o->body_bytes + 1024;
    size_t rcap = 8192 + (o->sc == SC_BATCH ? BATCH : 1) * per_msg;
    g.maxconns = o->conns + (o->sc == SC_LONGPOLL ? o->waiters : 0);
    g.conns = calloc((size_t)g.maxconns, sizeof *g.conns);
    if (g.conns == NULL)
        die("out of memory");
    for (int i = 0; i < g.maxconns; i++) {
        struct conn *c = &g.conns[i];
        c->fd = -1;
        c->wcap = 1024 + sizeof g.res_msgs + HANDLE_MAX + body_max;
        c->wbuf = xmalloc(c->wcap);
        c->rcap = rcap;
        c->rbuf = xmalloc(c->rcap);
    }
}

static void free_buffers(void)
{
    for (int i = 0; i < g.maxconns; i++) {
        free(g.conns[i].wbuf);
        free(g.conns[i].rbuf);
    }
    free(g.conns);
    free(g.send_body);
    free(g.bsend_body);
    free(g.bdel_body);
}

static void resolve(void)
{
    struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV };
    struct addrinfo *ai = NULL;
    char port[16];
    snprintf(port, sizeof port, "%d", g.o.port);
    int r = getaddrinfo(g.o.host, port, &hints, &ai);
    if (r != 0 || ai == NULL) {
        fprintf(stderr, "smqd-loadgen: cannot resolve %s: %s\n", g.o.host, gai_strerror(r));
        exit(EXIT_USAGE);
    }
    memcpy(&g.addr, ai->ai_addr, ai->ai_addrlen);
    g.addrlen = ai->ai_addrlen;
    freeaddrinfo(ai);
    if (strchr(g.o.host, ':') != NULL)
        snprintf(g.host_hdr, sizeof g.host_hdr, "[%s]:%d", g.o.host, g.o.port);
    else
        snprintf(g.host_hdr, sizeof g.host_hdr, "%s:%d", g.o.host, g.o.port);
}

static void raise_fd_limit(int need)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= (rlim_t)need)
        return;
    rl.rlim_cur = rl.rlim_max < (rlim_t)need ? rl.rlim_max : (rlim_t)need;
    setrlimit(RLIMIT_NOFILE, &rl);
    if (rl.rlim_cur < (rlim_t)need)
        fprintf(stderr, "smqd-loadgen: warning: only %lu descriptors for %d connections\n",
                (unsigned long)rl.rlim_cur, need);
}

/* One blocking request on its own connection (set-up only).  Returns the
 * HTTP status, or -1 on a connection error; the error code goes to code, or,
 * when elem is given, that element's text (alphanumerics only). */
static int sync_request(const char *verb, const char *res, const char *body, size_t body_len,
                        const char *elem, char *code, size_t code_cap)
{
    static char wbuf[8192], rbuf[65536];
    struct timeval tv = { .tv_sec = SYNC_TIMEOUT_S };
    struct lg_resp resp;
    size_t wlen = lg_build_request(&g.rc, time(NULL), wbuf, sizeof wbuf, verb, res,
                                   strlen(res), body, body_len);
    int fd = socket(g.addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || wlen == 0)
        return -1;
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    size_t rlen = 0;
    int r = -1;
    lg_resp_reset(&resp);
    if (connect(fd, (struct sockaddr *)&g.addr, g.addrlen) == 0
        && send(fd, wbuf, wlen, MSG_NOSIGNAL) == (ssize_t)wlen) {
        while (r == -1 || r == 0) {
            ssize_t n = recv(fd, rbuf + rlen, sizeof rbuf - rlen, 0);
            if (n <= 0)
                break;
            rlen += (size_t)n;
            r = lg_resp_parse(&resp, rbuf, rlen);
            if (r < 0 || (r == 0 && rlen == sizeof rbuf))
                break;
        }
    }
    close(fd);
    if (r != 1)
        return -1;
    const char *b = rbuf + resp.head_len, *e = b + resp.body_len;
    if (elem != NULL)
        elem_text(b, e, elem, code, code_cap);
    else
        error_code(b, e, code, code_cap);
    return resp.status;
}

static int create_queue(void)
{
    static const char body[] = "<?xml version=\"1.0\" encoding=\"utf-8\"?>"
                               "<Queue xmlns=\"http://mns.aliyuncs.com/doc/v1/\">"
                               "<VisibilityTimeout>30</VisibilityTimeout></Queue>";
    char res[160], code[48];
    snprintf(res, sizeof res, "/queues/%s", g.o.queue);
    int status = sync_request("PUT", res, body, sizeof body - 1, NULL, code, sizeof code);
    if (status == 201 || status == 204)
        return 0;
    if (status < 0)
        fprintf(stderr, "smqd-loadgen: CreateQueue %s: cannot reach %s\n", g.o.queue,
                g.host_hdr);
    else
        fprintf(stderr, "smqd-loadgen: CreateQueue %s: HTTP %d %s\n", g.o.queue, status, code);
    return -1;
}

/* The topic of --topic with N queue subscriptions (docs/protocol.md §13.6.1),
 * each into a queue of its own, TOPIC-s0 .. TOPIC-s(N-1), made first; or, with
 * --push-endpoint, N HTTP subscriptions to that URL (pushed, §13.10).  The
 * subscriptions use the default format (XML, §13.9). */
static int create_topic(void)
{
    static const char qbody[] = "<?xml version=\"1.0\" encoding=\"utf-8\"?>"
                                "<Queue xmlns=\"http://mns.aliyuncs.com/doc/v1/\">"
                                "<VisibilityTimeout>30</VisibilityTimeout></Queue>";
    char res[400], body[600], code[48] = "-";
    int status = 0;
    snprintf(res, sizeof res, "/topics/%s", g.o.topic);
    status = sync_request("PUT", res, NULL, 0, NULL, code, sizeof code);
    for (int i = 0; i < g.o.subscriptions && (status == 201 || status == 204); i++) {
        char endpoint[300];
        if (g.o.push_endpoint != NULL) {
            snprintf(endpoint, sizeof endpoint, "%s", g.o.push_endpoint);
        } else {
            snprintf(res, sizeof res, "/queues/%s-s%d", g.o.topic, i);
            status = sync_request("PUT", res, qbody, sizeof qbody - 1, NULL, code, sizeof code);
            if (status != 201 && status != 204)
                break;
            snprintf(endpoint, sizeof endpoint, "acs:mns:bench:1:queues/%s-s%d", g.o.topic, i);
        }
        snprintf(res, sizeof res, "/topics/%s/subscriptions/s%d", g.o.topic, i);
        int n = snprintf(body, sizeof body, "<?xml version=\"1.0\" encoding=\"utf-8\"?>"
                         "<Subscription xmlns=\"http://mns.aliyuncs.com/doc/v1/\"><Endpoint>"
                         "%s</Endpoint></Subscription>", endpoint);
        status = sync_request("PUT", res, body, (size_t)n, NULL, code, sizeof code);
    }
    if (status == 201 || status == 204)
        return 0;
    fprintf(stderr, "smqd-loadgen: creating topic %s with %d subscriptions: %s %d %s\n",
            g.o.topic, g.o.subscriptions, res, status, code);
    return -1;
}

/* After the run: polls GetTopicAttributes until MessageCount is 0 (every
 * notification delivered, §13.2), so a publish's figures include its fan-out;
 * g.fanout_s is then the time from the run's start, or -1 after 600 s. */
static void wait_fanout(void)
{
    char res[200], count[32];
    snprintf(res, sizeof res, "/topics/%s", g.o.topic);
    g.fanout_s = -1;
    for (int i = 0; i < 600 * 50 && g_signals == 0; i++) {
        int status = sync_request("GET", res, NULL, 0, "MessageCount", count, sizeof count);
        if (status == 200 && strcmp(count, "0") == 0) {
            g.fanout_s = (double)(now_ns() - g.t_start) / 1e9;
            return;
        }
        if (status != 200)
            return;
        usleep(20000);
    }
}

/* --------------------------------------------------------------- report */

static double ms(uint64_t us)
{
    return (double)us / 1000.0;
}

static double phase_seconds(void)
{
    uint64_t end = g.t_last > g.t_start ? g.t_last : g.t_stop;
    return end > g.t_start ? (double)(end - g.t_start) / 1e9 : 0.0;
}

static uint64_t metric_value(void)
{
    return g.metric == M_SENT ? g.st.sent : g.metric == M_RECEIVED ? g.st.received : g.st.deleted;
}

static double tv_s(struct timeval tv)
{
    return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

static void cpu_use(double *user, double *sys, double *pct)
{
    *user = tv_s(g.ru_stop.ru_utime) - tv_s(g.ru_start.ru_utime);
    *sys = tv_s(g.ru_stop.ru_stime) - tv_s(g.ru_start.ru_stime);
    double wall = g.t_stop > g.t_start ? (double)(g.t_stop - g.t_start) / 1e9 : 0.0;
    *pct = wall > 0 ? 100.0 * (*user + *sys) / wall : 0.0;
}

static uint64_t conn_errors(void)
{
    uint64_t n = 0;
    for (int k = 0; k < CE_N; k++)
        n += g.st.conn_err[k];
    return n;
}

static int run_failed(void)
{
    return g.st.errors > 0 || conn_errors() > 0 || g.st.lost > 0 || g.st.abandoned > 0;
}

static void print_hist_line(const char *name, const struct lg_hist *h)
{
    printf("    %-14s n=%-8" PRIu64 " p50 %8.2f  p99 %8.2f  p999 %8.2f  max %8.2f ms\n", name,
           h->count, ms(lg_hist_quantile(h, 0.5)), ms(lg_hist_quantile(h, 0.99)),
           ms(lg_hist_quantile(h, 0.999)), ms(h->max));
}

static void print_errors(void)
{
    printf("  errors     %" PRIu64, g.st.errors);
    for (int i = 0; i < g.st.nerr; i++)
        printf("%s %s %d %s x%" PRIu64, i ? "," : " (", op_names[g.st.err[i].op],
               g.st.err[i].status, g.st.err[i].code, g.st.err[i].n);
    printf("%s\n", g.st.nerr ? ")" : "");
    printf("  connection errors %" PRIu64 " (", conn_errors());
    for (int k = 0; k < CE_N; k++)
        printf("%s%s %" PRIu64, k ? ", " : "", cerr_names[k], g.st.conn_err[k]);
    printf("); lost in flight %" PRIu64 ", abandoned at hard stop %" PRIu64
           ", server closes %" PRIu64 ", idle closes %" PRIu64 "\n",
           g.st.lost, g.st.abandoned, g.st.server_closes, g.st.idle_closes);
}

static void print_longpoll(void)
{
    const struct lg_hist *w = &g.st.wake, *em = &g.st.empty;
    printf("  wake-up    n=%" PRIu64 " p50 %.2f ms  p99 %.2f ms  max %.2f ms"
           "  (200 before the send's 201: %" PRIu64 ", unmatched: %" PRIu64 ")\n",
           w->count, ms(lg_hist_quantile(w, 0.5)), ms(lg_hist_quantile(w, 0.99)), ms(w->max),
           g.st.wake_before_ack, g.st.lp_unmatched);
    printf("  delivery   p50 %.2f ms  p99 %.2f ms  max %.2f ms  (send issued -> waiter's 200)\n",
           ms(lg_hist_quantile(&g.st.delivery, 0.5)), ms(lg_hist_quantile(&g.st.delivery, 0.99)),
           ms(g.st.delivery.max));
    double avg = g.st.park_samples ? (double)g.st.park_sum / (double)g.st.park_samples : 0;
    printf("  waiters    %d; %" PRIu64 " waiting when producers started; at each send min %"
           PRIu64 " avg %.1f max %" PRIu64 "\n", g.o.waiters, g.st.park_start, g.st.park_min,
           avg, g.st.park_max);
    printf("  timeouts   %" PRIu64 " empty receives (p50 %.0f ms, max %.0f ms; later than"
           " waitseconds+1 s: %" PRIu64 ")\n", em->count, ms(lg_hist_quantile(em, 0.5)),
           ms(em->max), g.st.late_timeouts);
}

static void print_human(void)
{
    const struct opts *o = &g.o;
    double secs = phase_seconds(), user, sys, pct;
    uint64_t m = metric_value();
    cpu_use(&user, &sys, &pct);
    printf("smqd-loadgen %s: %d connection%s", scenario_names[o->sc], o->conns,
           o->conns == 1 ? "" : "s");
    if (o->sc == SC_LONGPOLL)
        printf(" (producers) + %d waiters, pause %d ms", o->waiters, o->pause_ms);
    if (o->topic != NULL)
        printf(", body %d B, PublishMessage to topic %s\n", o->body_bytes, o->topic);
    else
        printf(", body %d B, %s=%d s, queue %s\n", o->body_bytes, "waitseconds", o->wait_s, o->queue);
    printf("  messages   %" PRIu64 " in %.2f s = %.1f msg/s  (sent %" PRIu64 ", received %" PRIu64
           ", deleted %" PRIu64 ", empty receives %" PRIu64 ")\n", m, secs,
           secs > 0 ? (double)m / secs : 0.0, g.st.sent, g.st.received, g.st.deleted,
           g.st.empty_recv);
    printf("  requests   %" PRIu64 " = %.1f req/s\n", g.st.responses,
           secs > 0 ? (double)g.st.responses / secs : 0.0);
    const struct lg_hist *a = &g.st.all;
    printf("  latency    p50 %.2f ms  p99 %.2f ms  p999 %.2f ms  max %.2f ms"
           "  (%" PRIu64 " requests; not counted: empty receives%s; >= 1 s: %" PRIu64 ")\n",
           ms(lg_hist_quantile(a, 0.5)), ms(lg_hist_quantile(a, 0.99)),
           ms(lg_hist_quantile(a, 0.999)), ms(a->max), a->count,
           o->sc == SC_LONGPOLL ? ", long-poll receives" : "", g.st.slow);
    for (int op = 1; op < OP_N; op++)
        if (g.st.op[op].count > 0)
            print_hist_line(op_names[op], &g.st.op[op]);
    if (o->sc == SC_LONGPOLL)
        print_longpoll();
    if (o->topic != NULL && o->wait_fanout)
        printf("  fan-out    every notification delivered %.2f s after the start%s\n", g.fanout_s,
               g.fanout_s < 0 ? " (never: gave up)" : "");
    print_errors();
    printf("  client CPU %.2f s (user %.2f + sys %.2f) = %.1f%% of one core over %.2f s\n",
           user + sys, user, sys, pct,
           g.t_stop > g.t_start ? (double)(g.t_stop - g.t_start) / 1e9 : 0.0);
}

static void json_hist(const char *name, const struct lg_hist *h, int comma)
{
    printf("\"%s\":{\"n\":%" PRIu64 ",\"p50\":%" PRIu64 ",\"p99\":%" PRIu64 ",\"p999\":%" PRIu64
           ",\"max\":%" PRIu64 "}%s", name, h->count, lg_hist_quantile(h, 0.5),
           lg_hist_quantile(h, 0.99), lg_hist_quantile(h, 0.999), h->max, comma ? "," : "");
}

static void json_errors(void)
{
    printf("\"errors\":%" PRIu64 ",\"non_2xx_by_status\":{", g.st.errors);
    int first = 1;
    for (int s = 100; s < 600; s++) {
        if (g.st.status[s] == 0 || (s >= 200 && s < 300))
            continue;
        printf("%s\"%d\":%" PRIu64, first ? "" : ",", s, g.st.status[s]);
        first = 0;
    }
    printf("},\"error_kinds\":[");
    for (int i = 0; i < g.st.nerr; i++)
        printf("%s{\"op\":\"%s\",\"status\":%d,\"code\":\"%s\",\"n\":%" PRIu64 "}", i ? "," : "",
               op_names[g.st.err[i].op], g.st.err[i].status, g.st.err[i].code, g.st.err[i].n);
    printf("],\"conn_errors\":{");
    for (int k = 0; k < CE_N; k++)
        printf("%s\"%s\":%" PRIu64, k ? "," : "", cerr_names[k], g.st.conn_err[k]);
    printf("},\"lost\":%" PRIu64 ",\"abandoned\":%" PRIu64 ",\"server_closes\":%" PRIu64 ",",
           g.st.lost, g.st.abandoned, g.st.server_closes);
}

static void json_longpoll(void)
{
    double avg = g.st.park_samples ? (double)g.st.park_sum / (double)g.st.park_samples : 0;
    printf("\"waiters\":%d,\"pause_ms\":%d,", g.o.waiters, g.o.pause_ms);
    json_hist("wake_us", &g.st.wake, 1);
    json_hist("delivery_us", &g.st.delivery, 1);
    json_hist("empty_receive_us", &g.st.empty, 1);
    printf("\"wake_before_ack\":%" PRIu64 ",\"unmatched\":%" PRIu64 ",\"late_timeouts\":%" PRIu64
           ",\"parked\":{\"at_start\":%" PRIu64 ",\"min\":%" PRIu64 ",\"avg\":%.1f,\"max\":%"
           PRIu64 "},", g.st.wake_before_ack, g.st.lp_unmatched, g.st.late_timeouts,
           g.st.park_start, g.st.park_min, avg, g.st.park_max);
}

static void print_json(void)
{
    const struct opts *o = &g.o;
    double secs = phase_seconds(), user, sys, pct;
    uint64_t m = metric_value();
    cpu_use(&user, &sys, &pct);
    printf("{\"scenario\":\"%s\",\"connections\":%d,\"body_bytes\":%d,\"wait_s\":%d,"
           "\"duration_s\":%.3f,\"elapsed_s\":%.3f,\"messages\":%" PRIu64 ",\"msg_per_s\":%.1f,"
           "\"sent\":%" PRIu64 ",\"received\":%" PRIu64 ",\"deleted\":%" PRIu64
           ",\"empty_receives\":%" PRIu64 ",\"requests\":%" PRIu64 ",\"req_per_s\":%.1f,",
           scenario_names[o->sc], o->conns, o->body_bytes, o->wait_s, o->duration_s, secs, m,
           secs > 0 ? (double)m / secs : 0.0, g.st.sent, g.st.received, g.st.deleted,
           g.st.empty_recv, g.st.responses, secs > 0 ? (double)g.st.responses / secs : 0.0);
    json_hist("latency_us", &g.st.all, 1);
    printf("\"ops\":{");
    int first = 1;
    for (int op = 1; op < OP_N; op++) {
        if (g.st.op[op].count == 0)
            continue;
        printf("%s", first ? "" : ",");
        json_hist(op_names[op], &g.st.op[op], 0);
        first = 0;
    }
    printf("},\"slow_requests\":%" PRIu64 ",", g.st.slow);
    if (o->sc == SC_LONGPOLL)
        json_longpoll();
    if (o->topic != NULL)
        printf("\"topic\":\"%s\",\"subscriptions\":%d,\"fanout_s\":%.3f,", o->topic,
               o->subscriptions, o->wait_fanout ? g.fanout_s : 0.0);
    json_errors();
    printf("\"client_cpu\":{\"user_s\":%.3f,\"sys_s\":%.3f,\"pct\":%.1f},\"ok\":%s}\n", user,
           sys, pct, run_failed() ? "false" : "true");
}

/* ------------------------------------------------------------ self-test */

static int check(int ok, const char *what)
{
    if (!ok)
        fprintf(stderr, "self-test FAILED: %s\n", what);
    return ok ? 0 : 1;
}

/* Vectors P1, P6, P7 and the docs' example of protocol notes §3.4. */
static int self_test_sign(void)
{
    static const struct { const char *key, *verb, *date, *res, *sig; } v[] = {
        { "testAccessKeySecret", "GET", "Tue, 02 Jan 2024 03:04:05 GMT", "/queues/TestQueue",
          "ic27RTdtzgYUsETAe6H7LEbw7uI=" },
        { "testAccessKeySecret", "PUT", "Tue, 02 Jan 2024 03:04:05 GMT",
          "/queues/TestQueue/messages?ReceiptHandle=8-0zxjHBaWtzPz8zphz0z6OGz5yWWidU1fJM"
          "&VisibilityTimeout=60", "slo463R8g8osW109WHhsRlsdFgA=" },
        { "testAccessKeySecret", "DELETE", "Tue, 02 Jan 2024 03:04:05 GMT",
          "/queues/TestQueue/messages?ReceiptHandle=8-0zxjHBaWtzPz8zphz0z6OGz5yWWidU1fJM",
          "4HtPpXzCVLfaivXtkzwN8Nds/mg=" },
        { "TestAccessSecret", "GET", "Thu, 09 Jul 2015 03:01:34 GMT", "/MyQueue",
          "uwx3yeWoILzgmvesW0BQSgfM7b8=" },
    };
    int bad = 0;
    struct lg_signer s;
    if (lg_signer_init(&s, "testAccessKeySecret") != 0)
        return 1;
    bad += check(strcmp(lg_signer_date(&s, 1704164645), v[0].date) == 0, "Date format");
    for (int round = 0; round < 2; round++)        /* the re-keyed context stays right */
        for (int i = 0; i < 3; i++) {
            char sig[LG_SIG_B64_LEN + 1];
            int r = lg_sign(&s, v[i].verb, "", v[i].date, v[i].res, strlen(v[i].res), sig);
            bad += check(r == 0 && strcmp(sig, v[i].sig) == 0, v[i].res);
        }
    lg_signer_free(&s);
    if (lg_signer_init(&s, v[3].key) != 0)
        return bad + 1;
    char sig[LG_SIG_B64_LEN + 1];
    int r = lg_sign(&s, v[3].verb, "", v[3].date, v[3].res, strlen(v[3].res), sig);
    bad += check(r == 0 && strcmp(sig, v[3].sig) == 0, "docs example");
    lg_signer_free(&s);
    return bad;
}

static int self_test_http(void)
{
    static const char body[] = "<Messages><Message><MessageId>A</MessageId></Message></Messages>";
    char resp[256];
    size_t len = (size_t)snprintf(resp, sizeof resp, "HTTP/1.1 200 OK\r\nx-mns-request-id: 1\r\n"
                                  "content-length: %zu\r\nConnection: Keep-Alive\r\n\r\n%s",
                                  sizeof body - 1, body);
    struct lg_resp r;
    int bad = 0, got = 0;
    lg_resp_reset(&r);
    for (size_t i = 1; i <= len && got == 0; i++)  /* byte by byte */
        got = lg_resp_parse(&r, resp, i);
    bad += check(got == 1 && r.status == 200 && r.head_len + r.body_len == len && !r.close,
                 "response parse");
    const char *b = resp + r.head_len, *v = NULL;
    size_t vl = 0;
    bad += check(lg_xml_count(b, resp + len, "MessageId") == 1, "xml count");
    bad += check(lg_xml_next(b, resp + len, "MessageId", &v, &vl) != NULL && vl == 1 && *v == 'A',
                 "xml value");
    lg_resp_reset(&r);
    bad += check(lg_resp_parse(&r, "HTTP/1.1 200 OK\r\n\r\n", 19) == -1,
                 "missing Content-Length refused");
    lg_resp_reset(&r);
    bad += check(lg_resp_parse(&r, "HTTP/1.1 204 No Content\r\n\r\n", 27) == 1 && r.body_len == 0,
                 "204 without Content-Length");
    return bad;
}

static int self_test_hist(void)
{
    static struct lg_hist h;
    int bad = 0;
    lg_hist_reset(&h);
    for (uint64_t v = 1; v <= 100000; v++)
        lg_hist_add(&h, v);
    uint64_t p50 = lg_hist_quantile(&h, 0.5), p99 = lg_hist_quantile(&h, 0.99);
    bad += check(p50 >= 50000 && p50 <= 50000 * 1.016, "hist p50");
    bad += check(p99 >= 99000 && p99 <= 99000 * 1.016, "hist p99");
    bad += check(lg_hist_quantile(&h, 1.0) == 100000 && h.min == 1, "hist max/min");
    lg_hist_add(&h, UINT64_MAX);
    bad += check(h.max == UINT64_MAX, "hist huge value");
    return bad;
}

static int self_test(void)
{
    int bad = self_test_sign() + self_test_http() + self_test_hist();
    printf("smqd-loadgen self-test: %s\n", bad ? "FAILED" : "ok");
    return bad ? EXIT_ERRORS : 0;
}

/* --------------------------------------------------------- command line */

static void usage(FILE *f)
{
    fprintf(f,
"usage: smqd-loadgen --scenario S --ak ID --sk SECRET [options]\n"
"       smqd-loadgen --self-test\n"
"scenarios:\n"
"  send       SendMessage, one message per request, on every connection\n"
"  lifecycle  producers send while consumers receive -> delete (1 connection: it cycles)\n"
"  batch      BatchSend of 16 / BatchReceive 16 (waitseconds 1) / BatchDelete\n"
"  longpoll   --waiters W long-polling receivers; --connections producers send one\n"
"             message each, pausing --pause-ms; reports the wake-up latency\n"
"  drain      receive -> delete a backlog until the queue is empty (see --prefill)\n"
"options:\n"
"  --host H (127.0.0.1)  --port P (8080)  --queue Q (loadgen)\n"
"  --connections N (1)   --producers P (half of N)  --waiters W (16)\n"
"  --duration-s S (10)   --messages N (stop after N counted messages)\n"
"  --body-bytes B (1024) --wait-s W (receive waitseconds: 30 longpoll, else 1)\n"
"  --pause-ms MS (50)    --prefill N (batch-send N messages before measuring)\n"
"                        (send: given, each connection pauses MS after each answer)\n"
"  --create-queue        PUT the queue first (VisibilityTimeout 30)\n"
"  --topic T             send: PublishMessage to topic T instead of SendMessage\n"
"  --create-topic N      PUT topic T first, with N queue subscriptions into new\n"
"                        queues T-s0 .. T-s(N-1) (format XML)\n"
"  --wait-fanout         after the run, wait until T's MessageCount is 0 (fanout_s)\n"
"  --push-endpoint URL   --create-topic makes N HTTP subscriptions to URL instead\n"
"  --ack-log FILE        send: \"a MessageId t_ns\" per 201 and \"s t_ns\" (the start),\n"
"                        CLOCK_MONOTONIC, for matching with bench/push_sink.c\n"
"  --json                one JSON line instead of the text report\n");
}

static long long num_arg(const char *name, const char *v, long long lo, long long hi)
{
    char *end;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    if (errno != 0 || *end != '\0' || end == v || n < lo || n > hi) {
        fprintf(stderr, "smqd-loadgen: --%s must be an integer in %lld..%lld\n", name, lo, hi);
        exit(EXIT_USAGE);
    }
    return n;
}

static enum scenario scenario_arg(const char *v)
{
    for (int i = 0; i < SC_N; i++)
        if (strcmp(v, scenario_names[i]) == 0)
            return (enum scenario)i;
    fprintf(stderr, "smqd-loadgen: unknown scenario %s\n", v);
    exit(EXIT_USAGE);
}

static int valid_queue_name(const char *q)
{
    size_t n = strlen(q);
    if (n == 0 || n > 120 || q[0] == '-')
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((q[i] >= 'a' && q[i] <= 'z') || (q[i] >= 'A' && q[i] <= 'Z')
              || (q[i] >= '0' && q[i] <= '9') || q[i] == '-'))
            return 0;
    return 1;
}

static void check_args(struct opts *o);

static void parse_args(int argc, char **argv, struct opts *o)
{
    static const struct option lo[] = {
        { "scenario", 1, 0, 's' }, { "host", 1, 0, 'H' }, { "port", 1, 0, 'p' },
        { "ak", 1, 0, 'a' }, { "sk", 1, 0, 'k' }, { "queue", 1, 0, 'q' },
        { "connections", 1, 0, 'c' }, { "producers", 1, 0, 'P' }, { "waiters", 1, 0, 'W' },
        { "duration-s", 1, 0, 'd' }, { "messages", 1, 0, 'n' }, { "body-bytes", 1, 0, 'b' },
        { "wait-s", 1, 0, 'w' }, { "pause-ms", 1, 0, 'z' }, { "prefill", 1, 0, 'f' },
        { "create-queue", 0, 0, 'C' }, { "json", 0, 0, 'j' }, { "self-test", 0, 0, 'T' },
        { "topic", 1, 0, 't' }, { "create-topic", 1, 0, 'S' }, { "wait-fanout", 0, 0, 'F' },
        { "push-endpoint", 1, 0, 'U' }, { "ack-log", 1, 0, 'A' },
        { "help", 0, 0, 'h' }, { 0, 0, 0, 0 },
    };
    *o = (struct opts){ .host = "127.0.0.1", .port = 8080, .queue = "loadgen", .conns = 1,
                        .waiters = 16, .duration_s = 10, .body_bytes = 1024, .wait_s = -1,
                        .pause_ms = 50, .sc = SC_N };
    int ch;
    while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (ch) {
        case 's': o->sc = scenario_arg(optarg); break;
        case 'H': o->host = optarg; break;
        case 'p': o->port = (int)num_arg("port", optarg, 1, 65535); break;
        case 'a': o->ak = optarg; break;
        case 'k': o->sk = optarg; break;
        case 'q': o->queue = optarg; break;
        case 'c': o->conns = (int)num_arg("connections", optarg, 1, 10000); break;
        case 'P': o->producers = (int)num_arg("producers", optarg, 1, 10000); break;
        case 'W': o->waiters = (int)num_arg("waiters", optarg, 0, 100000); break;
        case 'd': o->duration_s = (double)num_arg("duration-s", optarg, 1, 86400); break;
        case 'n': o->messages = num_arg("messages", optarg, 1, 1000000000000LL); break;
        case 'b': o->body_bytes = (int)num_arg("body-bytes", optarg, 1, 65536); break;
        case 'w': o->wait_s = (int)num_arg("wait-s", optarg, 0, 30); break;
        case 'z': o->pause_ms = (int)num_arg("pause-ms", optarg, 0, 60000); o->paced = 1; break;
        case 'f': o->prefill = num_arg("prefill", optarg, 1, 1000000000000LL); break;
        case 'C': o->create_queue = 1; break;
        case 't': o->topic = optarg; break;
        case 'S': o->subscriptions = (int)num_arg("create-topic", optarg, 0, 100000); break;
        case 'F': o->wait_fanout = 1; break;
        case 'U': o->push_endpoint = optarg; break;
        case 'A': o->ack_log = optarg; break;
        case 'j': o->json = 1; break;
        case 'T': o->self_test = 1; break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); exit(EXIT_USAGE);
        }
    }
    if (o->self_test)
        return;
    if (optind != argc || o->sc == SC_N || o->ak == NULL || o->sk == NULL) {
        usage(stderr);
        exit(EXIT_USAGE);
    }
    check_args(o);
}

/* The combinations parse_args lets through that make no sense. */
static void check_args(struct opts *o)
{
    if (!valid_queue_name(o->queue))
        die("--queue: 1..120 characters of A-Z a-z 0-9 -, not starting with -");
    if (o->topic != NULL && (o->sc != SC_SEND || !valid_queue_name(o->topic) || strlen(o->topic) > 100))
        die("--topic: only with --scenario send; 1..100 characters of A-Z a-z 0-9 -");
    if (o->topic == NULL && (o->subscriptions > 0 || o->wait_fanout))
        die("--create-topic and --wait-fanout need --topic");
    if ((o->push_endpoint != NULL || o->ack_log != NULL) && o->topic == NULL)
        die("--push-endpoint and --ack-log need --topic");
    if (o->push_endpoint != NULL && (strncmp(o->push_endpoint, "http", 4) != 0
                                     || strlen(o->push_endpoint) > 250
                                     || strpbrk(o->push_endpoint, "<>&\"'") != NULL))
        die("--push-endpoint: an http(s):// URL of at most 250 characters, no < > & \" '");
    if (o->wait_s < 0)
        o->wait_s = o->sc == SC_LONGPOLL ? 30 : 1;
}

static void on_signal(int sig)
{
    (void)sig;
    g_signals++;
}

static void setup_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

static void setup(int argc, char **argv)
{
    parse_args(argc, argv, &g.o);
    if (g.o.self_test)
        exit(self_test());
    resolve();
    if (lg_signer_init(&g.signer, g.o.sk) != 0)
        exit(EXIT_USAGE);
    g.rc = (struct lg_req_ctx){ .signer = &g.signer, .host_header = g.host_hdr,
                                .access_key_id = g.o.ak };
    if (g.o.topic != NULL)
        snprintf(g.res_msgs, sizeof g.res_msgs, "/topics/%s/messages", g.o.topic);
    else
        snprintf(g.res_msgs, sizeof g.res_msgs, "/queues/%s/messages", g.o.queue);
    snprintf(g.res_recv, sizeof g.res_recv, "%s?waitseconds=%d", g.res_msgs, g.o.wait_s);
    snprintf(g.res_brecv, sizeof g.res_brecv, "%s?numOfMessages=%d&waitseconds=%d", g.res_msgs,
             BATCH, g.o.wait_s);
    setup_buffers();
    raise_fd_limit(g.maxconns + 32);
    g.ep = epoll_create1(EPOLL_CLOEXEC);
    if (g.ep < 0)
        die("epoll_create1 failed");
    setup_signals();
}

static int prefill(void)
{
    run_phase(0);
    double secs = phase_seconds();
    int failed = run_failed() || g.st.sent < (uint64_t)g.o.prefill;
    fprintf(stderr, "smqd-loadgen: prefill: %" PRIu64 " messages sent in %.2f s (%.0f msg/s),"
            " %" PRIu64 " errors, %" PRIu64 " connection errors\n", g.st.sent, secs,
            secs > 0 ? (double)g.st.sent / secs : 0.0, g.st.errors, conn_errors());
    return failed;
}

/* Ends --ack-log with the run's start ("s t_ns"), what its pushes/s are counted from. */
static int ack_close(void)
{
    if (g.ack == NULL)
        return 0;
    fprintf(g.ack, "s %llu\n", (unsigned long long)g.t_start);
    int bad = ferror(g.ack) | fclose(g.ack);
    g.ack = NULL;
    if (bad)
        fprintf(stderr, "smqd-loadgen: writing %s failed\n", g.o.ack_log);
    return bad ? -1 : 0;
}

int main(int argc, char **argv)
{
    setup(argc, argv);
    int rc = 0;
    if (g.o.create_queue && create_queue() != 0)
        rc = EXIT_USAGE;
    if (rc == 0 && g.o.topic != NULL && g.o.subscriptions > 0 && create_topic() != 0)
        rc = EXIT_USAGE;
    if (rc == 0 && g.o.prefill > 0 && prefill() != 0)
        rc = EXIT_ERRORS;
    if (rc == 0 && g.o.ack_log != NULL && (g.ack = fopen(g.o.ack_log, "w")) == NULL) {
        fprintf(stderr, "smqd-loadgen: %s: %s\n", g.o.ack_log, strerror(errno));
        rc = EXIT_USAGE;
    }
    if (rc != EXIT_USAGE && g_signals == 0) {
        run_phase(1);
        if (g.o.wait_fanout)
            wait_fanout();
        if (ack_close() != 0)
            rc = EXIT_ERRORS;
        if (g.o.json)
            print_json();
        else
            print_human();
        if (run_failed())
            rc = EXIT_ERRORS;
    }
    close(g.ep);
    free_buffers();
    lg_signer_free(&g.signer);
    return rc;
}
