/*
 * reaper.h — the slow-client reaper of a libmicrohttpd listener.
 *
 * libmicrohttpd's own timeout only measures silence, so a client sending
 * one byte per second holds a connection (and, with thread-per-connection,
 * a thread) for ever.  The reaper bounds the time from accept, or from the
 * end of the last request, to a complete request: a thread looks at every
 * tracked connection four times a second and shuts down (never closes:
 * the fd stays libmicrohttpd's) those past their limit.
 *
 * The listener passes conn_reaper_on_connection as MHD_OPTION_NOTIFY_CONNECTION
 * (with the reaper as its argument) and reports where each request is with
 * conn_reaper_phase.  Both listeners, the MNS one (http.c) and the admin
 * one (admin.c), use it.
 */
#ifndef SMQD_REAPER_H
#define SMQD_REAPER_H

#include <microhttpd.h>

/* Where a connection is in its current request. */
enum conn_phase {
    PHASE_NEW,          /* accepted, no request line yet */
    PHASE_HEADERS,      /* request line read, headers arriving */
    PHASE_BODY,         /* headers read, body arriving */
    PHASE_WORKING,      /* request complete: being answered (never reaped) */
    PHASE_IDLE          /* between requests on a kept-alive connection */
};

struct conn_reaper;

/* Starts the reaper thread.  A request must be complete within
 * request_timeout_s; a kept-alive connection may idle for
 * max(idle_timeout_s, request_timeout_s).  listener names it in the log
 * ("" for the MNS listener).  NULL if the thread cannot start. */
struct conn_reaper *conn_reaper_start(const char *listener, int request_timeout_s,
                                      int idle_timeout_s);

/* MHD_OPTION_NOTIFY_CONNECTION callback; cls is the reaper. */
void conn_reaper_on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                               enum MHD_ConnectionNotificationCode code);

/* The request on conn has reached phase (any thread). */
void conn_reaper_phase(struct conn_reaper *r, struct MHD_Connection *conn, enum conn_phase phase);

/* Stops and joins the thread.  Connections may still close (and notify)
 * afterwards: free only once the daemon has stopped. */
void conn_reaper_stop(struct conn_reaper *r);
void conn_reaper_free(struct conn_reaper *r);

/* The socket of conn, or -1. */
int conn_reaper_fd(struct MHD_Connection *conn);

#endif
