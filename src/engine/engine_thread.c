/*
 * engine_thread.c — owns the engine thread, its inbox and its sleep (engine_thread.h).
 */
#include "smqd/engine_thread.h"

#include <stdbool.h>
#include <stdlib.h>

#include "smqd/log.h"
#include "smqd/worker.h"

struct smq_engine_thread {
    struct smq_engine *engine;
    struct worker thread;            /* its lock guards the inbox and stopped */
    struct smq_op *inbox_head, **inbox_tail;
    bool stopped;                    /* the thread has taken its last inbox */
};

/* Takes the whole inbox (caller holds the lock). */
static struct smq_op *take_inbox(struct smq_engine_thread *s)
{
    struct smq_op *ops = s->inbox_head;

    s->inbox_head = NULL;
    s->inbox_tail = &s->inbox_head;
    return ops;
}

static void sleep_until_work(struct smq_engine_thread *s)
{
    while (s->inbox_head == NULL && !s->thread.stopping) {
        uint64_t wait_ms = engine_next_timeout_ms(s->engine);

        if (wait_ms == 0 || !worker_wait(&s->thread, wait_ms))
            return;
    }
}

/* Answers what raced in after the last run, at once (caller holds the lock). */
static void refuse_late(struct smq_engine_thread *s)
{
    struct smq_op *op = take_inbox(s);

    while (op != NULL) {
        struct smq_op *next = op->next;
        errors_set(&op->result, SMQ_E_SERVICE_UNAVAILABLE, NULL);
        op->done(op, op->done_arg);
        op = next;
    }
}

static void *engine_thread(void *arg)
{
    struct smq_engine_thread *s = arg;
    bool stopping = false;

    pthread_mutex_lock(&s->thread.lock);
    while (!stopping) {
        struct smq_op *ops;

        sleep_until_work(s);
        ops = take_inbox(s);
        stopping = s->thread.stopping;
        pthread_mutex_unlock(&s->thread.lock);
        engine_run(s->engine, ops);
        pthread_mutex_lock(&s->thread.lock);
    }
    pthread_mutex_unlock(&s->thread.lock);
    engine_drain(s->engine);
    pthread_mutex_lock(&s->thread.lock);
    s->stopped = true;
    refuse_late(s);
    pthread_mutex_unlock(&s->thread.lock);
    return NULL;
}

int engine_thread_start(struct smq_engine *engine, struct smq_engine_thread **out)
{
    struct smq_engine_thread *s = calloc(1, sizeof *s);

    if (s == NULL)
        return SMQ_E_NOMEM;
    s->engine = engine;
    s->inbox_tail = &s->inbox_head;
    worker_init(&s->thread);
    if (worker_start(&s->thread, "smqd-engine", engine_thread, s) != 0) {
        SMQ_ERROR("cannot start the engine thread");
        engine_thread_free(s);
        return SMQ_E_INTERNAL;
    }
    *out = s;
    return 0;
}

void engine_thread_submit(struct smq_engine_thread *s, struct smq_op *op)
{
    bool refused;

    op->next = NULL;
    pthread_mutex_lock(&s->thread.lock);
    refused = s->stopped;
    if (!refused) {
        *s->inbox_tail = op;
        s->inbox_tail = &op->next;
        pthread_cond_signal(&s->thread.wake);
    }
    pthread_mutex_unlock(&s->thread.lock);
    if (refused) {
        errors_set(&op->result, SMQ_E_SERVICE_UNAVAILABLE, NULL);
        op->done(op, op->done_arg);
    }
}

void engine_thread_wake(void *arg)
{
    struct smq_engine_thread *s = arg;

    worker_signal(&s->thread);
}

void engine_thread_stop(struct smq_engine_thread *s)
{
    if (s != NULL)
        worker_stop(&s->thread);
}

void engine_thread_free(struct smq_engine_thread *s)
{
    if (s == NULL)
        return;
    engine_thread_stop(s);
    worker_destroy(&s->thread);
    free(s);
}
