/*
 * worker.h — the one way smqd runs a thread of its own (the engine thread,
 * the WAL flusher, each listener's slow-client reaper): a named thread
 * with a lock and a condition variable that measures CLOCK_MONOTONIC, told
 * to stop by a flag under that lock.  What the thread does, and what else
 * the lock guards, is its owner's.
 */
#ifndef SMQD_WORKER_H
#define SMQD_WORKER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct worker {
    pthread_mutex_t lock;
    pthread_cond_t wake;             /* timed waits measure CLOCK_MONOTONIC */
    pthread_t thread;
    bool stopping;                   /* under lock: worker_stop was called */
    bool running;                    /* the thread was started and not yet joined */
};

/* Sets up the lock and the condition variable (no thread yet). */
void worker_init(struct worker *w);
/* Starts the thread (named for top -H and perf; at most 15 characters
 * shown).  0, or SMQ_E_INTERNAL when no thread can be created. */
int worker_start(struct worker *w, const char *name, void *(*main)(void *arg), void *arg);

/* Caller holds w->lock: sleeps until worker_signal or timeout_ms have
 * passed (UINT64_MAX: no timeout).  false when the time ran out.  Spurious
 * wake-ups return true: callers re-check their condition. */
bool worker_wait(struct worker *w, uint64_t timeout_ms);
/* Wakes the thread (takes the lock; any thread). */
void worker_signal(struct worker *w);

/* Sets stopping, wakes the thread and joins it; nothing when it was not
 * started (or already joined). */
void worker_stop(struct worker *w);
/* Frees the lock and the condition variable, after worker_stop. */
void worker_destroy(struct worker *w);

#endif
