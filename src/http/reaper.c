/*
 * reaper.c — owns the slow-client reaper of one listener, the list of
 * connections it watches and their deadlines (reaper.h).
 */
#include "reaper.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "smqd/log.h"
#include "smqd/netaddr.h"
#include "smqd/worker.h"

#define REAPER_PERIOD_MS 250
#define FIRE_BATCH 64                /* deadlines fired per pass outside the lock */

struct conn_track {
    struct conn_track *prev, *next;
    struct conn_reaper *reaper;      /* immutable */
    int fd;
    enum conn_phase phase;           /* guarded by the reaper's lock, like every field */
    uint64_t since_ms;
    bool shut;
    uint64_t deadline_ms;            /* with fire != NULL: a pending deadline */
    void (*fire)(void *ctx);
    void *fire_ctx;
};

struct conn_reaper {
    char listener[16];
    uint64_t request_ms, idle_ms;
    const struct smq_clock *clock;
    struct worker thread;            /* its lock guards tracked and every conn_track */
    struct conn_track tracked;       /* list sentinel */
};

static uint64_t now_ms(const struct conn_reaper *r)
{
    return clock_mono_ms(r->clock);
}

struct conn_track *conn_reaper_track(struct conn_reaper *r, int fd)
{
    struct conn_track *t = calloc(1, sizeof *t);

    if (t == NULL)
        return NULL;
    t->fd = fd;
    t->reaper = r;
    t->phase = PHASE_NEW;
    pthread_mutex_lock(&r->thread.lock);
    t->since_ms = now_ms(r);
    t->next = r->tracked.next;
    t->prev = &r->tracked;
    r->tracked.next->prev = t;
    r->tracked.next = t;
    pthread_mutex_unlock(&r->thread.lock);
    return t;
}

/* The library closes the socket only after it told us, so the reaper
 * (under the same lock) never touches a reused descriptor. */
void *conn_reaper_untrack(struct conn_reaper *r, struct conn_track *t)
{
    void *pending;

    pthread_mutex_lock(&r->thread.lock);
    t->prev->next = t->next;
    t->next->prev = t->prev;
    pending = t->fire != NULL ? t->fire_ctx : NULL;
    pthread_mutex_unlock(&r->thread.lock);
    free(t);
    return pending;
}

/* The clock of a request starts when its connection is accepted (first
 * request) or when its request line is complete (later ones), and keeps
 * running through headers and body, so the whole request is bounded. */
void conn_reaper_phase(struct conn_reaper *r, struct conn_track *t, enum conn_phase phase)
{
    bool keep_clock;

    if (t == NULL)
        return;
    pthread_mutex_lock(&r->thread.lock);
    keep_clock = phase == PHASE_BODY || (phase == PHASE_HEADERS && t->phase == PHASE_NEW);
    t->phase = phase;
    if (!keep_clock)
        t->since_ms = now_ms(r);
    pthread_mutex_unlock(&r->thread.lock);
}

void conn_reaper_set_deadline(struct conn_reaper *r, struct conn_track *t, uint64_t at_ms,
                              void (*fire)(void *ctx), void *ctx)
{
    pthread_mutex_lock(&r->thread.lock);
    t->deadline_ms = at_ms;
    t->fire = fire;
    t->fire_ctx = ctx;
    pthread_mutex_unlock(&r->thread.lock);
}

bool conn_reaper_clear_deadline(struct conn_reaper *r, struct conn_track *t)
{
    bool pending;

    pthread_mutex_lock(&r->thread.lock);
    pending = t->fire != NULL;
    t->fire = NULL;
    t->fire_ctx = NULL;
    pthread_mutex_unlock(&r->thread.lock);
    return pending;
}

/*
 * Shuts down every connection whose request has been incomplete for longer
 * than the request timeout.  A kept-alive connection between requests is
 * left to the library's idle timeout, unless it has been "idle" longer
 * than that timeout allows: then it must be trickling a request line byte
 * by byte (nothing is reported before the line is complete), and is shut
 * down too.  Caller holds the lock.
 */
static void reap_slow(struct conn_reaper *r, uint64_t now)
{
    for (struct conn_track *t = r->tracked.next; t != &r->tracked; t = t->next) {
        uint64_t limit_ms = t->phase == PHASE_IDLE ? r->idle_ms : r->request_ms;
        bool incomplete = t->phase != PHASE_WORKING;
        if (incomplete && !t->shut && now - t->since_ms > limit_ms) {
            struct netaddr_ip peer;
            char text[NETADDR_TEXT_MAX] = "-";

            /* Named before the shutdown, while the socket still has its peer
             * (behind a proxy, the proxy: no header of the request is in). */
            if (netaddr_peer(t->fd, &peer) == 0)
                netaddr_ip_text(&peer, text);
            shutdown(t->fd, SHUT_RDWR);
            t->shut = true;
            SMQ_INFO("%sclosed a connection whose request was incomplete after %d s (peer=%s)",
                     r->listener, (int)(limit_ms / 1000u), text);
        }
    }
}

struct due {
    void (*fire)(void *ctx);
    void *ctx;
};

/* Takes up to FIRE_BATCH due deadlines off their connections (caller holds
 * the lock); they are fired once the lock is dropped. */
static size_t take_due(struct conn_reaper *r, uint64_t now, struct due *out)
{
    size_t n = 0;

    for (struct conn_track *t = r->tracked.next; t != &r->tracked && n < FIRE_BATCH;
         t = t->next) {
        if (t->fire == NULL || t->deadline_ms > now)
            continue;
        out[n++] = (struct due){t->fire, t->fire_ctx};
        t->fire = NULL;
        t->fire_ctx = NULL;
    }
    return n;
}

/* Caller holds the lock; it is dropped while deadlines fire. */
static void scan_locked(struct conn_reaper *r)
{
    struct due due[FIRE_BATCH];
    size_t n;

    reap_slow(r, now_ms(r));
    while ((n = take_due(r, now_ms(r), due)) > 0) {
        pthread_mutex_unlock(&r->thread.lock);
        for (size_t i = 0; i < n; i++)
            due[i].fire(due[i].ctx);
        pthread_mutex_lock(&r->thread.lock);
    }
}

void conn_reaper_scan(struct conn_reaper *r)
{
    pthread_mutex_lock(&r->thread.lock);
    scan_locked(r);
    pthread_mutex_unlock(&r->thread.lock);
}

static void *reaper_thread(void *arg)
{
    struct conn_reaper *r = arg;

    pthread_mutex_lock(&r->thread.lock);
    while (!r->thread.stopping) {
        worker_wait(&r->thread, REAPER_PERIOD_MS);
        scan_locked(r);
    }
    pthread_mutex_unlock(&r->thread.lock);
    return NULL;
}

struct conn_reaper *conn_reaper_start(const struct conn_reaper_opts *opts)
{
    struct conn_reaper *r = calloc(1, sizeof *r);

    if (r == NULL)
        return NULL;
    snprintf(r->listener, sizeof r->listener, "%s", opts->listener);
    r->request_ms = (uint64_t)opts->request_timeout_s * 1000u;
    r->idle_ms = (uint64_t)opts->idle_timeout_s * 1000u;
    if (r->idle_ms < r->request_ms)
        r->idle_ms = r->request_ms;
    r->clock = opts->clock != NULL ? opts->clock : clock_system();
    r->tracked.next = r->tracked.prev = &r->tracked;
    worker_init(&r->thread);
    if (!opts->no_thread && worker_start(&r->thread, "smqd-reaper", reaper_thread, r) != 0) {
        conn_reaper_free(r);
        return NULL;
    }
    return r;
}

void conn_reaper_stop(struct conn_reaper *r)
{
    if (r != NULL)
        worker_stop(&r->thread);
}

void conn_reaper_free(struct conn_reaper *r)
{
    if (r == NULL)
        return;
    conn_reaper_stop(r);
    worker_destroy(&r->thread);
    free(r);
}
