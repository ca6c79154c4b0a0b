/*
 * flush_gate.h — an injectable flush for the syncer's tests
 * (test_syncer.c, test_engine_sync.c): each call blocks until the test
 * allows one more flush, so every interleaving of commits and flushes is
 * forced, not hoped for; then, given a store, it flushes it for real
 * (store_flush).  wait_for() bounds every wait at 5 s.
 * Header-only on purpose: each test program gets its own gate.
 */
#ifndef SMQD_TEST_FLUSH_GATE_H
#define SMQD_TEST_FLUSH_GATE_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <time.h>

#include "smqd/store.h"

static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static int flushes_started, flushes_allowed, flush_result;
static int idle_calls;

static inline int gated_flush(void *store)
{
    int rc;

    pthread_mutex_lock(&gate_lock);
    flushes_started++;
    pthread_cond_broadcast(&gate_cond);
    while (flushes_allowed < flushes_started)
        pthread_cond_wait(&gate_cond, &gate_lock);
    rc = flush_result;
    pthread_mutex_unlock(&gate_lock);
    if (rc != 0)
        errno = EIO;
    else if (store != NULL)
        rc = store_flush(store);
    return rc;
}

static inline void allow_flushes(int n)
{
    pthread_mutex_lock(&gate_lock);
    flushes_allowed += n;
    pthread_cond_broadcast(&gate_cond);
    pthread_mutex_unlock(&gate_lock);
}

static inline void set_flush_result(int rc)
{
    pthread_mutex_lock(&gate_lock);
    flush_result = rc;
    pthread_mutex_unlock(&gate_lock);
}

static inline void on_idle(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&gate_lock);
    idle_calls++;
    pthread_cond_broadcast(&gate_cond);
    pthread_mutex_unlock(&gate_lock);
}

/* Waits (at most 5 s) until *counter >= want, reading it under gate_lock;
 * returns whether it got there. */
static inline bool wait_for(int *counter, int want)
{
    struct timespec deadline;
    bool ok;

    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 5;
    pthread_mutex_lock(&gate_lock);
    while (*counter < want
           && pthread_cond_timedwait(&gate_cond, &gate_lock, &deadline) == 0) {
    }
    ok = *counter >= want;
    pthread_mutex_unlock(&gate_lock);
    return ok;
}

static inline void reset_gate(void)
{
    pthread_mutex_lock(&gate_lock);
    flushes_started = flushes_allowed = flush_result = idle_calls = 0;
    pthread_mutex_unlock(&gate_lock);
}

#endif
