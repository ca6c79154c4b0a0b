/*
 * engine_fixture.h — the shared fixture of the engine's unit tests, the
 * tests/unit/test_engine_<concern>.c programs (test_engine_sync.c, which
 * runs the engine with its syncer thread, has a fixture of its own).
 *
 * How the engine is driven: synchronously, with no threads and no sleeping.
 * A test builds struct smq_op values (fx_prep_op), links them with ->next
 * and hands them to one engine_run, that is one group commit (fx_run_ops,
 * fx_run_one); a done callback records which ops finished in that run and
 * in what order (f->done, f->n_done, fx_done_pos).  Time is a fake clock:
 * fx_tick advances it and runs the engine with no ops, which fires the due
 * timers.  The store is a real SQLite file in a mkdtemp directory
 * (SMQ_SYNC_NORMAL, for speed), removed in teardown; or, when the
 * environment names a PostgreSQL (SMQD_TEST_PG_DSN, or SMQD_TEST_PG_DIR/dsn:
 * tests/CMakeLists.txt registers each engine test a second time so), a
 * schema of its own in that database, dropped in teardown; f->pg is then
 * true and f->path is "pg:DSN".  What is on disk is
 * checked through an independent read-only sqlite3 connection
 * (db_peek_int(f->path, sql)) or by restarting the engine on the same
 * store (fx_reopen_engine).  After every run through the fixture,
 * engine_check must find the engine's counters, heaps and message table in
 * agreement.
 *
 * Ops that may stay parked across runs (receives with a wait) live in the
 * fixture (f->park), not on a test's stack: if an assertion fails while
 * one is parked, teardown's engine_close still completes it into valid
 * memory.  Large buffers go in f->scratch for the same reason: teardown
 * frees them.
 *
 * The helpers assert what must hold for a test to go on (an op finishes in
 * its own run, a message that must be accepted is); those that run an
 * operation and return an int return its result (0 or an SMQ_E_* code)
 * for the test to check.
 */
#ifndef SMQD_TEST_ENGINE_FIXTURE_H
#define SMQD_TEST_ENGINE_FIXTURE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "db_peek.h"
#include "pg_scratch.h"

#include "smqd/clock.h"
#include "smqd/engine.h"
#include "smqd/errors.h"
#include "smqd/handle.h"
#include "smqd/store.h"

/* The fake clock at setup: half a second past a whole second, so that the
 * epoch-seconds fields (create/modify time) show truncation. */
#define FX_MONO0 5000000u
#define FX_EPOCH0 1700000000500LL
#define FX_EPOCH0_S 1700000000LL

#define FX_DONE_MAX 64               /* completions of one run kept in f->done */
#define FX_N_PARK 4                  /* ops in f->park */
#define FX_MAX_QUEUES_DEFAULT 100    /* the engine's max_queues at setup */
/* Every queue attribute but the dead-letter policy. */
#define FX_ALL_ATTRS                                                                \
    (SMQ_ATTR_DELAY | SMQ_ATTR_MAX_MSG_SIZE | SMQ_ATTR_RETENTION | SMQ_ATTR_VISIBILITY \
     | SMQ_ATTR_POLLING_WAIT | SMQ_ATTR_LOGGING)

struct fx {
    char dir[64];
    char path[2500];             /* the database file, or "pg:DSN" (f->pg) */
    bool pg;                     /* the store is PostgreSQL: see the top */
    struct pg_scratch pg_scratch;  /* the schema, when f->pg */
    struct smq_fake_clock clock;
    struct smq_store *store;
    struct smq_engine *e;
    uint64_t reserve_margin;     /* engine option: free bytes needed beside the reserve */
    bool reserve_missing;        /* engine option: the reserve could not be allocated */
    int max_topics;              /* engine options ([limits]); 0 = the defaults */
    int max_subs_per_topic;
    /* completions of the latest run, in order (n_done may exceed FX_DONE_MAX) */
    struct smq_op *done[FX_DONE_MAX];
    size_t n_done;
    /* ops that may be parked across runs, and how many times each has
     * completed in this test */
    struct smq_op park[FX_N_PARK];
    unsigned park_done[FX_N_PARK];
    bool gone[FX_N_PARK];        /* park[i]'s client hung up (for a client_gone probe) */
    /* a test's large buffers, freed in teardown even if an assertion fails */
    void *scratch[3];
};

/* ---- setup and teardown (cmocka_unit_test_setup_teardown) ---------------- */

/* A fresh directory, store and engine (FX_MAX_QUEUES_DEFAULT queues), the
 * clock at FX_MONO0 / FX_EPOCH0.  *state gets the struct fx. */
int fx_setup(void **state);
/* Closes the engine (completing any parked op into the fixture), frees the
 * scratch buffers, closes the store and removes the directory. */
int fx_teardown(void **state);

/* engine_open on f's store and clock with f's reserve options. */
void fx_open_engine(struct fx *f, int max_queues);
/* engine_close, then engine_open on the same store (a restart); recovery
 * must have rebuilt every structure consistently. */
void fx_reopen_engine(struct fx *f, int max_queues);

/* ---- running ops --------------------------------------------------------- */

/* op_init for kind on queue, completing into f. */
void fx_prep_op(struct fx *f, struct smq_op *op, enum smq_op_kind kind, const char *queue);
/* Links ops[0..n) into one list and runs it as one group commit. */
void fx_run_ops(struct fx *f, struct smq_op **ops, size_t n);
/* Position of op among the completions of the latest run, or -1. */
int fx_done_pos(const struct fx *f, const struct smq_op *op);
/* Runs op alone; it must finish in this run.  Returns its result. */
int fx_run_one(struct fx *f, struct smq_op *op);
/* Moves the fake clock (mono and epoch together) and fires due timers. */
void fx_tick(struct fx *f, uint64_t ms);
/* The fake clock's epoch time in ms. */
int64_t fx_now_ms(const struct fx *f);
/* engine_stats. */
struct smq_engine_stats fx_stats(const struct fx *f);

/* ---- queues -------------------------------------------------------------- */

/* CreateQueue with the attributes flagged in present (attrs may be NULL
 * with present 0: the defaults); *created (if not NULL) says whether it
 * made a new queue. */
int fx_create_queue(struct fx *f, const char *name, const struct smq_queue_attrs *attrs,
                    unsigned present, bool *created);
/* A queue with the default attributes but the given visibility timeout;
 * the create must succeed. */
void fx_create_queue_vis(struct fx *f, const char *name, int64_t visibility_s);
/* Creates queue name with a dead-letter policy to target (no policy when
 * target is NULL) and the given visibility timeout. */
int fx_create_with_dlq(struct fx *f, const char *name, const char *target,
                       int64_t max_receive, int64_t visibility_s);
/* GetQueueAttributes into *info. */
int fx_get_info(struct fx *f, const char *name, struct smq_queue_info *info);
int fx_delete_queue(struct fx *f, const char *name);

/* Asserts the Active/Inactive/Delayed counters a GetQueueAttributes would
 * report, failing at the caller's line (use fx_assert_counts). */
void fx_check_counts(struct fx *f, const char *queue, uint64_t active, uint64_t inactive,
                     uint64_t delayed, const char *file, int line);
#define fx_assert_counts(f, q, a, i, d) fx_check_counts((f), (q), (a), (i), (d), __FILE__, __LINE__)

/* ---- messages ------------------------------------------------------------ */

/* One SendMessage; *seq (if not NULL) gets the new message's seq. */
int fx_send_msg(struct fx *f, const char *queue, const void *body, size_t len,
                int64_t delay_s, int priority, uint64_t *seq);
/* Sends one text message that must be accepted; returns its seq. */
uint64_t fx_send_text(struct fx *f, const char *queue, const char *text, int64_t delay_s,
                      int priority);
/* One ReceiveMessage (or batch receive of n) run to completion; the caller
 * reads op's outputs and calls op_release. */
int fx_receive(struct fx *f, struct smq_op *op, const char *queue, int n, int64_t wait_s);
/* Receives one message; on success *out gets its view without the body. */
int fx_receive_one(struct fx *f, const char *queue, struct smq_msg_view *out);
/* Receives seq from queue (it must be the one delivered), then lets its
 * visibility timeout (vis_s) pass so that it is Active again. */
void fx_receive_and_lapse(struct fx *f, const char *queue, uint64_t seq, int64_t vis_s);
/* Starts a long poll with op (one of f->park) that must park; client_gone
 * (may be NULL) is its probe for a client that hung up. */
void fx_park_probed(struct fx *f, struct smq_op *op, const char *queue, int64_t wait_s,
                    bool (*client_gone)(struct smq_op *, void *));
/* The same without a probe. */
void fx_park(struct fx *f, struct smq_op *op, const char *queue, int64_t wait_s);

/* A handle reference as the API layer would build it: encode the text a
 * client gets, then decode (and MAC-check) it. */
void fx_make_ref(struct fx *f, uint64_t seq, uint32_t gen, struct smq_handle_ref *ref);
/* DeleteMessage of the handle (seq, gen). */
int fx_delete_msg(struct fx *f, const char *queue, uint64_t seq, uint32_t gen);
/* ChangeMessageVisibility of the handle (seq, gen); *new_gen and
 * *next_visible_ms (each may be NULL) get the new handle and deadline. */
int fx_change_vis(struct fx *f, const char *queue, uint64_t seq, uint32_t gen,
                  int64_t visibility_s, uint32_t *new_gen, int64_t *next_visible_ms);
/* Asserts a received/peeked message's body equals text. */
void fx_assert_body(const struct smq_msg_view *v, const char *text);

/* ---- administration ------------------------------------------------------ */

/* The statistics of one queue (SMQ_OP_STATS); the op must succeed. */
struct smq_queue_stats fx_queue_stats(struct fx *f, const char *name);
/* SMQ_OP_PURGE of queue (main_q) and/or its DLQ (dlq); *n and *n_dlq get
 * the numbers purged. */
int fx_purge(struct fx *f, const char *queue, bool main_q, bool dlq, uint64_t *n,
             uint64_t *n_dlq);
/* Dead-letters n messages from "src" into "dlq" (src created with
 * MaxReceiveCount 1 and a visibility of 1 s): sends, receives, lets the
 * timeout pass, and one more receive moves them. */
void fx_fill_dlq(struct fx *f, int n);

#endif
