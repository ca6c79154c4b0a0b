/*
 * worker.c — owns the life of smqd's own threads (worker.h).
 */
#define _GNU_SOURCE       /* pthread_setname_np */
#include "smqd/worker.h"

#include <errno.h>
#include <stdio.h>
#include <time.h>

#include "smqd/clock.h"
#include "smqd/errors.h"

void worker_init(struct worker *w)
{
    pthread_mutex_init(&w->lock, NULL);
    clock_mono_cond_init(&w->wake);
    w->stopping = false;
    w->running = false;
}

int worker_start(struct worker *w, const char *name, void *(*main)(void *arg), void *arg)
{
    char shown[16];              /* Linux refuses a longer name outright */

    if (pthread_create(&w->thread, NULL, main, arg) != 0)
        return SMQ_E_INTERNAL;
    snprintf(shown, sizeof shown, "%s", name);
    pthread_setname_np(w->thread, shown);
    w->running = true;
    return 0;
}

bool worker_wait(struct worker *w, uint64_t timeout_ms)
{
    struct timespec deadline;

    if (timeout_ms == UINT64_MAX) {
        pthread_cond_wait(&w->wake, &w->lock);
        return true;
    }
    clock_mono_deadline(timeout_ms, &deadline);
    return pthread_cond_timedwait(&w->wake, &w->lock, &deadline) != ETIMEDOUT;
}

void worker_signal(struct worker *w)
{
    pthread_mutex_lock(&w->lock);
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->lock);
}

void worker_stop(struct worker *w)
{
    if (!w->running)
        return;
    pthread_mutex_lock(&w->lock);
    w->stopping = true;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    w->running = false;
}

void worker_destroy(struct worker *w)
{
    pthread_cond_destroy(&w->wake);
    pthread_mutex_destroy(&w->lock);
}
