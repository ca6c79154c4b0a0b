/*
 * syncer.c — owns the WAL flush thread and the ops waiting for it (syncer.h).
 *
 * Commits and flushes are counted: `committed` is bumped by the engine
 * after each COMMIT, `flushed` is the value of `committed` read just before
 * the last successful fdatasync began.  An op held with ticket T is
 * answered once flushed >= T.  The held list is FIFO and tickets only grow,
 * so release takes a prefix of it.
 */
#include "smqd/syncer.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "smqd/clock.h"
#include "smqd/errors.h"
#include "smqd/log.h"
#include "smqd/metrics.h"
#include "smqd/worker.h"

struct smq_syncer {
    int (*flush)(void *arg);
    void *flush_arg;
    struct smq_metrics *metrics;
    struct worker thread;            /* woken for a commit to flush, or to stop */
    uint64_t committed, flushed;     /* under lock */
    struct smq_op *held_head, **held_tail;
    bool failed;                     /* written under lock, atomically (syncer_failed) */
    int fail_rc;                     /* the failed flush's code, under lock */
    const char *fail_message;        /* InternalError text for an unknown outcome */
    const char *flush_what;          /* the flush as the log names it */
    bool busy;                       /* a round is answering or calling the hook */
    pthread_cond_t quiet;            /* a round ended (syncer_drain) */
    void (*on_idle)(void *arg);      /* under lock */
    void *on_idle_arg;
};

/* Answers ops (->next list) with the failed flush's code: nothing they did
 * is known to be stored.  Fenced (SMQ_E_SERVICE_UNAVAILABLE) means nothing
 * was applied and another node owns the queues; anything else is
 * InternalError, an unknown outcome the client retries. */
static void answer_failed(const struct smq_syncer *s, struct smq_op *ops)
{
    for (struct smq_op *op = ops; op != NULL; op = op->next) {
        if (s->fail_rc == SMQ_E_SERVICE_UNAVAILABLE)
            op_fail(op, SMQ_E_SERVICE_UNAVAILABLE,
                    "this node lost its lease before the commit; nothing was stored, "
                    "retry against the active node");
        else
            op_fail(op, SMQ_E_INTERNAL, s->fail_message);
    }
    op_answer(ops);
}

/* Unlinks the held ops whose flush is done (caller holds the lock). */
static struct smq_op *take_flushed(struct smq_syncer *s)
{
    struct smq_op *head = s->held_head, **cut = &s->held_head;

    while (*cut != NULL && (*cut)->sync_ticket <= s->flushed)
        cut = &(*cut)->next;
    if (cut == &s->held_head)
        return NULL;
    s->held_head = *cut;
    *cut = NULL;
    if (s->held_head == NULL)
        s->held_tail = &s->held_head;
    return head;
}

/* One flush of everything committed so far (caller holds the lock; it is
 * dropped across the fdatasync so the engine can commit meanwhile). */
static struct smq_op *flush_once(struct smq_syncer *s, bool *failed)
{
    uint64_t target = s->committed, start_us;
    int rc, saved;

    pthread_mutex_unlock(&s->thread.lock);
    start_us = clock_mono_us();
    rc = s->flush(s->flush_arg);
    saved = errno;
    metrics_wal_flush(s->metrics, clock_mono_us() - start_us, rc != 0);
    pthread_mutex_lock(&s->thread.lock);
    if (rc != 0 && !s->failed) {
        /* errno says something only for a file (SQLite's fdatasync); the
         * PostgreSQL backend has logged its own reason already. */
        SMQ_ERROR("storage: the flush of committed writes (%s) failed%s%s; every request is "
                  "now answered %s until the store is opened again (a restart; a node on "
                  "PostgreSQL stops serving and does it by itself)", s->flush_what,
                  saved != 0 ? ": " : "", saved != 0 ? strerror(saved) : "",
                  rc == SMQ_E_SERVICE_UNAVAILABLE ? "ServiceUnavailable" : "InternalError");
        s->fail_rc = rc == SMQ_E_SERVICE_UNAVAILABLE ? rc : SMQ_E_INTERNAL;
        __atomic_store_n(&s->failed, true, __ATOMIC_RELEASE);
    }
    s->flushed = target;
    *failed = s->failed;
    if (s->failed) {              /* nothing held can be trusted any more */
        struct smq_op *all = s->held_head;
        s->held_head = NULL;
        s->held_tail = &s->held_head;
        return all;
    }
    return take_flushed(s);
}

/* One round: flush if a commit waits for it, then call the idle hook and
 * answer, outside the lock (caller holds it; `busy` covers the round so
 * that syncer_release keeps later answers behind these and syncer_drain
 * can wait for the round to end). */
static void run_round(struct smq_syncer *s)
{
    struct smq_op *done;
    void (*on_idle)(void *arg);
    void *idle_arg;
    bool failed = s->failed;

    done = s->committed != s->flushed ? flush_once(s, &failed) : take_flushed(s);
    on_idle = s->committed == s->flushed ? s->on_idle : NULL;
    idle_arg = s->on_idle_arg;
    s->busy = true;
    pthread_mutex_unlock(&s->thread.lock);
    if (on_idle != NULL)
        on_idle(idle_arg);
    if (failed)
        answer_failed(s, done);
    else
        op_answer(done);
    pthread_mutex_lock(&s->thread.lock);
    s->busy = false;
    pthread_cond_broadcast(&s->quiet);
}

static void *syncer_thread(void *arg)
{
    struct smq_syncer *s = arg;

    pthread_mutex_lock(&s->thread.lock);
    for (;;) {
        while (s->committed == s->flushed && s->held_head == NULL && !s->thread.stopping)
            worker_wait(&s->thread, UINT64_MAX);
        if (s->committed == s->flushed && s->held_head == NULL)
            break;                      /* stopping, nothing left */
        run_round(s);
    }
    pthread_mutex_unlock(&s->thread.lock);
    return NULL;
}

int syncer_start(const struct syncer_opts *opts, struct smq_syncer **out, char *err,
                 size_t err_size)
{
    struct smq_syncer *s = calloc(1, sizeof *s);

    if (s == NULL) {
        snprintf(err, err_size, "out of memory");
        return SMQ_E_NOMEM;
    }
    s->flush = opts->flush;
    s->flush_arg = opts->flush_arg;
    s->metrics = opts->metrics;
    s->fail_rc = SMQ_E_INTERNAL;
    s->fail_message = opts->unknown_outcome_message != NULL
                          ? opts->unknown_outcome_message
                          : "the disk failed to flush the write-ahead log; restart smqd";
    s->flush_what = opts->flush_what != NULL ? opts->flush_what
                                             : "fdatasync of the write-ahead log";
    s->held_tail = &s->held_head;
    worker_init(&s->thread);
    pthread_cond_init(&s->quiet, NULL);
    if (worker_start(&s->thread, "smqd-syncer", syncer_thread, s) != 0) {
        snprintf(err, err_size, "cannot start the WAL flush thread");
        pthread_cond_destroy(&s->quiet);
        worker_destroy(&s->thread);
        free(s);
        return SMQ_E_INTERNAL;
    }
    *out = s;
    return 0;
}

void syncer_committed(struct smq_syncer *s)
{
    pthread_mutex_lock(&s->thread.lock);
    s->committed++;
    pthread_cond_signal(&s->thread.wake);
    pthread_mutex_unlock(&s->thread.lock);
}

void syncer_release(struct smq_syncer *s, struct smq_op *ops)
{
    bool now, failed;

    if (ops == NULL)
        return;
    pthread_mutex_lock(&s->thread.lock);
    failed = s->failed;
    /* At once only when nothing is unflushed or still being answered, so
     * that answers leave in the order their ops finished. */
    now = failed || (s->committed == s->flushed && s->held_head == NULL && !s->busy);
    if (!now) {
        *s->held_tail = ops;
        for (struct smq_op *op = ops; op != NULL; op = op->next) {
            op->sync_ticket = s->committed;
            s->held_tail = &op->next;
        }
        pthread_cond_signal(&s->thread.wake);
    }
    pthread_mutex_unlock(&s->thread.lock);
    if (failed)
        answer_failed(s, ops);
    else if (now)
        op_answer(ops);
}

void syncer_drain(struct smq_syncer *s)
{
    if (s == NULL)
        return;
    pthread_mutex_lock(&s->thread.lock);
    s->on_idle = NULL;
    s->on_idle_arg = NULL;
    pthread_cond_signal(&s->thread.wake);
    while (s->committed != s->flushed || s->held_head != NULL || s->busy)
        pthread_cond_wait(&s->quiet, &s->thread.lock);
    pthread_mutex_unlock(&s->thread.lock);
}

void syncer_set_idle_hook(struct smq_syncer *s, void (*fn)(void *arg), void *arg)
{
    pthread_mutex_lock(&s->thread.lock);
    s->on_idle = fn;
    s->on_idle_arg = arg;
    pthread_mutex_unlock(&s->thread.lock);
}

bool syncer_idle(struct smq_syncer *s)
{
    bool idle;

    pthread_mutex_lock(&s->thread.lock);
    idle = s->committed == s->flushed;
    pthread_mutex_unlock(&s->thread.lock);
    return idle;
}

/* Lock-free: the engine asks several times per run, and the flag only
 * ever goes from false to true (set under the lock, read atomically). */
bool syncer_failed(struct smq_syncer *s)
{
    return __atomic_load_n(&s->failed, __ATOMIC_ACQUIRE);
}

void syncer_stop(struct smq_syncer *s)
{
    if (s == NULL)
        return;
    worker_stop(&s->thread);
    pthread_cond_destroy(&s->quiet);
    worker_destroy(&s->thread);
    free(s);
}
