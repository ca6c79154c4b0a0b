/*
 * reaper.c — owns the slow-client reaper thread of one libmicrohttpd
 * listener and the list of connections it watches (reaper.h).
 */
#define _GNU_SOURCE       /* pthread_setname_np */
#include "smqd/reaper.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#include "smqd/clock.h"
#include "smqd/log.h"

#define REAPER_PERIOD_MS 250

struct conn_track {
    struct conn_track *prev, *next;
    int fd;
    enum conn_phase phase;       /* guarded by conn_reaper.lock */
    uint64_t since_us;
    bool shut;
};

struct conn_reaper {
    char listener[16];
    uint64_t request_us, idle_us;
    pthread_mutex_t lock;        /* guards tracked and every conn_track */
    struct conn_track tracked;   /* list sentinel */
    pthread_t thread;
    pthread_cond_t wake;
    bool running, stop;
};

int conn_reaper_fd(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info != NULL ? info->connect_fd : -1;
}

static struct conn_track *track_of(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info != NULL ? info->socket_context : NULL;
}

/* The clock of a request starts when its connection is accepted (first
 * request) or when its request line is complete (later ones), and keeps
 * running through headers and body, so the whole request is bounded. */
void conn_reaper_phase(struct conn_reaper *r, struct MHD_Connection *conn, enum conn_phase phase)
{
    struct conn_track *t = r != NULL ? track_of(conn) : NULL;
    bool keep_clock;

    if (t == NULL)
        return;
    pthread_mutex_lock(&r->lock);
    keep_clock = phase == PHASE_BODY || (phase == PHASE_HEADERS && t->phase == PHASE_NEW);
    t->phase = phase;
    if (!keep_clock)
        t->since_us = clock_mono_us();
    pthread_mutex_unlock(&r->lock);
}

void conn_reaper_on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                               enum MHD_ConnectionNotificationCode code)
{
    struct conn_reaper *r = cls;
    struct conn_track *t = *socket_context;

    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        int fd = conn_reaper_fd(conn);
        if (fd < 0 || (t = calloc(1, sizeof *t)) == NULL)
            return;                     /* untracked: only the idle timeout applies */
        t->fd = fd;
        t->phase = PHASE_NEW;
        t->since_us = clock_mono_us();
        pthread_mutex_lock(&r->lock);
        t->next = r->tracked.next;
        t->prev = &r->tracked;
        r->tracked.next->prev = t;
        r->tracked.next = t;
        pthread_mutex_unlock(&r->lock);
        *socket_context = t;
    } else if (t != NULL) {
        /* libmicrohttpd closes the socket only after this notification, so
         * the reaper (under the same lock) never touches a reused fd. */
        pthread_mutex_lock(&r->lock);
        t->prev->next = t->next;
        t->next->prev = t->prev;
        pthread_mutex_unlock(&r->lock);
        free(t);
        *socket_context = NULL;
    }
}

/*
 * Shuts down every connection whose request has been incomplete for longer
 * than the request timeout.  A kept-alive connection between requests is
 * left to libmicrohttpd's idle timeout, unless it has been "idle" longer
 * than that timeout allows: then it must be trickling a request line byte
 * by byte (libmicrohttpd reports nothing before the line is complete), and
 * is shut down too.  Caller holds the lock.
 */
static void reap_slow(struct conn_reaper *r)
{
    uint64_t now = clock_mono_us();

    for (struct conn_track *t = r->tracked.next; t != &r->tracked; t = t->next) {
        uint64_t limit_us = t->phase == PHASE_IDLE ? r->idle_us : r->request_us;
        bool incomplete = t->phase != PHASE_WORKING;
        if (incomplete && !t->shut && now - t->since_us > limit_us) {
            shutdown(t->fd, SHUT_RDWR);
            t->shut = true;
            SMQ_INFO("%sclosed a connection whose request was incomplete after %d s",
                     r->listener, (int)(limit_us / 1000000u));
        }
    }
}

static void *reaper_thread(void *arg)
{
    struct conn_reaper *r = arg;

    pthread_mutex_lock(&r->lock);
    while (!r->stop) {
        struct timespec ts;
        clock_mono_deadline(REAPER_PERIOD_MS, &ts);
        pthread_cond_timedwait(&r->wake, &r->lock, &ts);
        reap_slow(r);
    }
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

struct conn_reaper *conn_reaper_start(const char *listener, int request_timeout_s,
                                      int idle_timeout_s)
{
    struct conn_reaper *r = calloc(1, sizeof *r);

    if (r == NULL)
        return NULL;
    snprintf(r->listener, sizeof r->listener, "%s", listener);
    r->request_us = (uint64_t)request_timeout_s * 1000000u;
    r->idle_us = (uint64_t)idle_timeout_s * 1000000u;
    if (r->idle_us < r->request_us)
        r->idle_us = r->request_us;
    pthread_mutex_init(&r->lock, NULL);
    r->tracked.next = r->tracked.prev = &r->tracked;
    clock_mono_cond_init(&r->wake);
    if (pthread_create(&r->thread, NULL, reaper_thread, r) != 0) {
        conn_reaper_free(r);
        return NULL;
    }
    pthread_setname_np(r->thread, "smqd-reaper");
    r->running = true;
    return r;
}

void conn_reaper_stop(struct conn_reaper *r)
{
    if (r == NULL || !r->running)
        return;
    pthread_mutex_lock(&r->lock);
    r->stop = true;
    pthread_cond_signal(&r->wake);
    pthread_mutex_unlock(&r->lock);
    pthread_join(r->thread, NULL);
    r->running = false;
}

void conn_reaper_free(struct conn_reaper *r)
{
    if (r == NULL)
        return;
    conn_reaper_stop(r);
    pthread_cond_destroy(&r->wake);
    pthread_mutex_destroy(&r->lock);
    free(r);
}
