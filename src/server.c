/*
 * server.c — owns the engine thread, its inbox and its sleep (server.h).
 */
#define _GNU_SOURCE       /* pthread_setname_np */
#include "smqd/server.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "smqd/clock.h"
#include "smqd/log.h"

struct smq_server {
    struct smq_engine *engine;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;             /* CLOCK_MONOTONIC */
    struct smq_op *inbox_head, **inbox_tail;
    bool stopping, stopped, started;
};

/* Takes the whole inbox (caller holds the lock). */
static struct smq_op *take_inbox(struct smq_server *s)
{
    struct smq_op *ops = s->inbox_head;
    s->inbox_head = NULL;
    s->inbox_tail = &s->inbox_head;
    return ops;
}

static void sleep_until_work(struct smq_server *s)
{
    while (s->inbox_head == NULL && !s->stopping) {
        uint64_t wait_ms = engine_next_timeout_ms(s->engine);
        struct timespec ts;

        if (wait_ms == 0)
            return;
        if (wait_ms == UINT64_MAX) {
            pthread_cond_wait(&s->wake, &s->lock);
            continue;
        }
        clock_mono_deadline(wait_ms, &ts);
        if (pthread_cond_timedwait(&s->wake, &s->lock, &ts) == ETIMEDOUT)
            return;
    }
}

static void *engine_thread(void *arg)
{
    struct smq_server *s = arg;

    pthread_mutex_lock(&s->lock);
    for (;;) {
        struct smq_op *ops;
        bool stopping;

        sleep_until_work(s);
        ops = take_inbox(s);
        stopping = s->stopping;
        pthread_mutex_unlock(&s->lock);
        engine_run(s->engine, ops);
        if (stopping)
            break;
        pthread_mutex_lock(&s->lock);
    }
    engine_drain(s->engine);
    pthread_mutex_lock(&s->lock);
    s->stopped = true;
    /* Anything that raced in after the last run is finished here, at once. */
    for (struct smq_op *op = take_inbox(s); op != NULL;) {
        struct smq_op *next = op->next;
        errors_set(&op->result, SMQ_E_SERVICE_UNAVAILABLE, NULL);
        op->done(op, op->done_arg);
        op = next;
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

int server_start(struct smq_engine *engine, struct smq_server **out)
{
    struct smq_server *s = calloc(1, sizeof *s);
    int rc = SMQ_E_NOMEM;

    if (s == NULL)
        return rc;
    s->engine = engine;
    s->inbox_tail = &s->inbox_head;
    pthread_mutex_init(&s->lock, NULL);
    clock_mono_cond_init(&s->wake);
    if (pthread_create(&s->thread, NULL, engine_thread, s) != 0) {
        SMQ_ERROR("cannot start the engine thread");
        server_free(s);
        return SMQ_E_INTERNAL;
    }
    pthread_setname_np(s->thread, "smqd-engine");          /* for top -H, perf */
    s->started = true;
    *out = s;
    return 0;
}

void server_submit(struct smq_server *s, struct smq_op *op)
{
    bool refused;

    op->next = NULL;
    pthread_mutex_lock(&s->lock);
    refused = s->stopped;
    if (!refused) {
        *s->inbox_tail = op;
        s->inbox_tail = &op->next;
        pthread_cond_signal(&s->wake);
    }
    pthread_mutex_unlock(&s->lock);
    if (refused) {
        errors_set(&op->result, SMQ_E_SERVICE_UNAVAILABLE, NULL);
        op->done(op, op->done_arg);
    }
}

void server_wake(void *arg)
{
    struct smq_server *s = arg;

    pthread_mutex_lock(&s->lock);
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->lock);
}

void server_stop(struct smq_server *s)
{
    if (s == NULL || !s->started)
        return;
    pthread_mutex_lock(&s->lock);
    s->stopping = true;
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->thread, NULL);
    s->started = false;
}

void server_free(struct smq_server *s)
{
    if (s == NULL)
        return;
    server_stop(s);
    pthread_cond_destroy(&s->wake);
    pthread_mutex_destroy(&s->lock);
    free(s);
}
