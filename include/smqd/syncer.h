/*
 * syncer.h — makes commits durable off the engine thread.
 *
 * With sync = full, the store commits without waiting for the disk
 * (store_defer_fsync) and this module supplies the durability: a thread
 * calls the store's flush (SQLite: fdatasync of the WAL), and the ops
 * finished by a run are answered only once a flush that *began after that
 * run's COMMIT* has returned.  The engine meanwhile executes and commits the next run, so
 * the fsync no longer stops it, and one flush covers every commit made
 * while the previous flush was in progress (group commit at the disk).
 *
 * A failed flush is not retried (after fsync fails, Linux may already have
 * dropped the unwritten pages): the ops waiting on it, and every op after
 * it, are answered InternalError until smqd is restarted and recovers from
 * what is on disk (fail-stop; /ready then says "broken").
 */
#ifndef SMQD_SYNCER_H
#define SMQD_SYNCER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "smqd/op.h"

struct smq_syncer;

struct smq_metrics;

struct syncer_opts {
    /* Makes every commit returned so far durable: 0, or non-zero with errno
     * set (main.c: store_flush; tests inject their own). */
    int (*flush)(void *arg);
    void *flush_arg;
    struct smq_metrics *metrics;   /* optional: each flush's duration and outcome */
    /* Optional: the InternalError message for a flush whose outcome is
     * unknown (NULL = the SQLite one about the write-ahead log).  A flush
     * returning SMQ_E_SERVICE_UNAVAILABLE (fenced: nothing applied) is
     * always answered 503 "lost the lease". */
    const char *unknown_outcome_message;
    /* Optional: what the flush is, as the error log line names it when it
     * fails (NULL = "fdatasync of the write-ahead log", SQLite's; the
     * PostgreSQL backend's flush is "COMMIT on PostgreSQL").  Kept as a
     * pointer: it must outlive the syncer. */
    const char *flush_what;
};

/* Starts the thread.  0, or SMQ_E_INTERNAL with a reason in err. */
int syncer_start(const struct syncer_opts *opts, struct smq_syncer **out, char *err,
                 size_t err_size);

/* Engine thread: a COMMIT has returned; everything written so far needs a
 * flush before the ops finished since are answered. */
void syncer_committed(struct smq_syncer *s);

/*
 * Engine thread: answers the finished ops (a list linked by ->next) —
 * at once when every commit is already flushed and no earlier answers are
 * still being sent, otherwise on the syncer thread after the flush that
 * covers the latest commit.  Ops are answered in the order released.
 */
void syncer_release(struct smq_syncer *s, struct smq_op *ops);

/*
 * Clears the idle hook, then waits until every commit is flushed, every
 * held op answered and no hook call is in progress.  Call before freeing
 * what the hook or the ops' done callbacks use (main.c: after the engine
 * thread stops, before the HTTP daemon and the server are freed).  NULL is
 * a no-op.
 */
void syncer_drain(struct smq_syncer *s);

/*
 * Whether no flush is running or due.  While one runs, the engine keeps its
 * transaction open and lets the next runs' ops join it, so that the next
 * flush covers one large commit rather than several small ones that each
 * rewrite the same pages; the hook (called on the syncer thread) tells it
 * when the flush is over.
 */
bool syncer_idle(struct smq_syncer *s);
void syncer_set_idle_hook(struct smq_syncer *s, void (*fn)(void *arg), void *arg);

/* True once a flush has failed (sticky). */
bool syncer_failed(struct smq_syncer *s);

/* Flushes what is pending, answers every held op, joins the thread, and
 * closes the file.  NULL is a no-op. */
void syncer_stop(struct smq_syncer *s);

#endif
