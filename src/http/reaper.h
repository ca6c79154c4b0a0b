/*
 * reaper.h — the slow-client reaper of one listener, and the deadlines of
 * its suspended requests.
 *
 * An HTTP library's own timeout only measures silence, so a client sending
 * one byte per second holds a connection for ever.  The reaper bounds the
 * time from accept, or from the end of the last request, to a complete
 * request: four times a second it looks at every tracked connection and
 * shuts down (never closes: the descriptor stays the library's) those past
 * their limit.  The same scan fires the deadlines of requests that wait
 * for the engine (httpd_suspend), so that a stalled engine cannot hold an
 * answer past its bound.
 *
 * The listener (httpd.c) tracks each connection from accept to close and
 * reports where each request is.  Knows sockets only, no HTTP library.
 */
#ifndef SMQD_REAPER_H
#define SMQD_REAPER_H

#include <stdbool.h>
#include <stdint.h>

#include "smqd/clock.h"

/* Where a connection is in its current request. */
enum conn_phase {
    PHASE_NEW,          /* accepted, no request line yet */
    PHASE_HEADERS,      /* request line read, headers arriving */
    PHASE_BODY,         /* headers read, body arriving */
    PHASE_WORKING,      /* request complete: being answered (never reaped) */
    PHASE_IDLE          /* between requests on a kept-alive connection */
};

struct conn_reaper;
struct conn_track;

struct conn_reaper_opts {
    const char *listener;        /* names it in the log ("" for the MNS listener) */
    int request_timeout_s;       /* a request must be complete within this */
    int idle_timeout_s;          /* a kept-alive connection may idle max(this, request) */
    const struct smq_clock *clock;   /* monotonic time; NULL = the real clock */
    bool no_thread;              /* tests: no thread, conn_reaper_scan by hand */
};

/* Starts the reaper (and its thread).  NULL when it cannot. */
struct conn_reaper *conn_reaper_start(const struct conn_reaper_opts *opts);

/* A new connection on socket fd (phase NEW); NULL when out of memory (the
 * connection is then left to the library's idle timeout). */
struct conn_track *conn_reaper_track(struct conn_reaper *r, int fd);
/* The connection closed: forget it.  Returns the ctx of a deadline that
 * was still pending (it will not fire), or NULL. */
void *conn_reaper_untrack(struct conn_reaper *r, struct conn_track *t);
/* The connection's request has reached phase (any thread; t may be NULL). */
void conn_reaper_phase(struct conn_reaper *r, struct conn_track *t, enum conn_phase phase);

/* At monotonic time at_ms, fire(ctx) is called once, on the reaper's
 * thread and outside its lock, unless cleared first.  One per connection. */
void conn_reaper_set_deadline(struct conn_reaper *r, struct conn_track *t, uint64_t at_ms,
                              void (*fire)(void *ctx), void *ctx);
/* true: the deadline was pending and will not fire; false: it has fired,
 * or is firing now (or none was set). */
bool conn_reaper_clear_deadline(struct conn_reaper *r, struct conn_track *t);

/* One look at every connection: what the thread does every 250 ms. */
void conn_reaper_scan(struct conn_reaper *r);

/* Stops and joins the thread.  Connections may still close (and untrack)
 * afterwards: free only once the listener has stopped. */
void conn_reaper_stop(struct conn_reaper *r);
void conn_reaper_free(struct conn_reaper *r);

#endif
