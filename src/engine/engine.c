/*
 * engine.c — owns the engine's run loop and the dispatch of operations
 * (engine.h): one group commit per run, the parked polls served as
 * messages become Active, the refusals while broken or after a failed
 * flush, and opening and closing the engine.  What each operation does is
 * in its run file (run_queue.c, run_message.c, run_topic.c, run_stats.c,
 * run_purge.c, run_redrive.c); the parts they share are below them (msgs.c,
 * txn.c, space.c, waiters.c, eventlog.c; engine_core.h).
 */
#include "smqd/engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_core.h"
#include "msgs.h"
#include "run_stats.h"
#include "run_purge.h"
#include "run_message.h"
#include "run_queue.h"
#include "run_redrive.h"
#include "fanout.h"
#include "run_topic.h"
#include "recover.h"

const struct handle_keys *engine_keys(const struct smq_engine *e)
{
    return &e->keys;
}

void engine_set_syncer(struct smq_engine *e, struct smq_syncer *syncer)
{
    e->txn.syncer = syncer;
}

void engine_set_push(struct smq_engine *e, smq_engine_push_fn submit, void *arg)
{
    fanout_set_push(e, submit, arg);
}

/* ---- dispatch ---------------------------------------------------------------------- */

/*
 * How each kind runs: alone (it finds or makes what it needs itself), on
 * the existing queue that op->queue names, or on the existing topic it
 * names, which the dispatch looks up first (none: QueueNotExist,
 * TopicNotExist).  One row per kind, so a new kind is a row.
 */
struct engine_kind_row {
    int (*run)(struct smq_engine *e, struct smq_op *op);
    int (*run_on_queue)(struct smq_engine *e, struct smq_op *op, struct smq_queue *q);
    int (*run_on_topic)(struct smq_engine *e, struct smq_op *op, struct smq_topic *t);
};

/* A value that is no kind is answered so. */
static int run_unhandled(struct smq_engine *e, struct smq_op *op)
{
    (void)e, (void)op;
    return SMQ_E_INTERNAL;
}

static const struct engine_kind_row kinds[] = {
    [SMQ_OP_CREATE_QUEUE] = {.run = run_queue_create},
    [SMQ_OP_SET_QUEUE] = {.run_on_queue = run_queue_set},
    [SMQ_OP_GET_QUEUE] = {.run_on_queue = run_queue_get},
    [SMQ_OP_DELETE_QUEUE] = {.run = run_queue_delete},
    [SMQ_OP_LIST_QUEUES] = {.run = run_queue_list},
    [SMQ_OP_SEND] = {.run_on_queue = run_message_send},
    [SMQ_OP_RECEIVE] = {.run_on_queue = run_message_receive},
    [SMQ_OP_PEEK] = {.run_on_queue = run_message_peek},
    [SMQ_OP_DELETE_MSG] = {.run_on_queue = run_message_delete},
    [SMQ_OP_CHANGE_VISIBILITY] = {.run_on_queue = run_message_change_visibility},
    [SMQ_OP_PURGE] = {.run_on_queue = run_purge},
    [SMQ_OP_REDRIVE] = {.run_on_queue = run_redrive_start},
    [SMQ_OP_STATS] = {.run = run_stats},
    [SMQ_OP_CREATE_TOPIC] = {.run = run_topic_create},
    [SMQ_OP_SET_TOPIC] = {.run_on_topic = run_topic_set},
    [SMQ_OP_GET_TOPIC] = {.run_on_topic = run_topic_get},
    [SMQ_OP_DELETE_TOPIC] = {.run = run_topic_delete},
    [SMQ_OP_LIST_TOPICS] = {.run = run_topic_list},
    [SMQ_OP_PUBLISH] = {.run_on_topic = fanout_publish},
    [SMQ_OP_SUBSCRIBE] = {.run_on_topic = run_sub_subscribe},
    [SMQ_OP_SET_SUBSCRIPTION] = {.run_on_topic = run_sub_set},
    [SMQ_OP_GET_SUBSCRIPTION] = {.run_on_topic = run_sub_get},
    [SMQ_OP_UNSUBSCRIBE] = {.run_on_topic = run_sub_unsubscribe},
    [SMQ_OP_LIST_SUBSCRIPTIONS] = {.run_on_topic = run_sub_list},
    [SMQ_OP_PUSH_RESULT] = {.run = fanout_push_result},
};

/* A kind added without its row fails here; a row left out in the middle
 * fails test_engine_queues (engine_has_kind). */
_Static_assert(sizeof kinds / sizeof kinds[0] == SMQ_OP_KIND_COUNT,
               "every operation kind needs its row in engine.c's table");

bool engine_has_kind(enum smq_op_kind kind)
{
    return (unsigned)kind < SMQ_OP_KIND_COUNT
        && (kinds[kind].run != NULL || kinds[kind].run_on_queue != NULL
            || kinds[kind].run_on_topic != NULL);
}

/* Runs op: 0 or an SMQ_E_* code, or 0 with op parked (waiters_is_parked). */
static int run_op(struct smq_engine *e, struct smq_op *op)
{
    static const struct engine_kind_row unhandled = {.run = run_unhandled};
    const struct engine_kind_row *row = &unhandled;
    struct smq_topic *t;
    struct smq_queue *q;

    if (engine_has_kind(op->kind))
        row = &kinds[op->kind];
    if (row->run != NULL)
        return row->run(e, op);
    if (row->run_on_topic != NULL) {
        t = topic_find(&e->topics.model, op->queue);
        return t != NULL ? row->run_on_topic(e, op, t) : SMQ_E_TOPIC_NOT_EXIST;
    }
    q = queue_registry_find(&e->queues, op->queue);
    return q != NULL ? row->run_on_queue(e, op, q) : SMQ_E_QUEUE_NOT_EXIST;
}

/* Hands newly Active messages to parked long polls, oldest poll first; a
 * poll whose client has gone away is finished instead of taking a message
 * that nobody would read. */
static void serve_ready(struct smq_engine *e)
{
    struct smq_queue *q;

    while ((q = waiters_take_ready(&e->waiters)) != NULL) {
        while (q->waiters_head != NULL) {
            struct smq_op *op = q->waiters_head;
            int rc;
            /* A used-up message must not wake a poll it would not be given. */
            msgs_dead_letter_due(e, q, op->request_id);
            if (q->n_active == 0)
                break;
            waiters_unlink(&e->waiters, op);
            if (waiters_client_gone(op))
                rc = SMQ_E_MESSAGE_NOT_EXIST;
            else
                rc = e->txn.lost ? SMQ_E_INTERNAL : run_message_receive_now(e, op, q);
            txn_complete(&e->txn, op, rc);
        }
    }
}

/* ---- the run ----------------------------------------------------------------------- */

/* Reads the clock into now_ms and fires every due timer. */
static void advance_clock(struct smq_engine *e)
{
    uint64_t mono = clock_mono_ms(e->clock);

    e->now_ms = engine_core_now_ms(e);
    space_recheck(&e->space, mono);
    twheel_advance(&e->msg_wheel, mono);
    fanout_advance(e, mono);
    waiters_advance(&e->waiters, &e->queues, mono);
}

/* Commits the run, then answers every finished op; or, while a flush is
 * running or a fan-out fills the transaction (force false), leaves both to
 * a later run.  A lost run is reloaded from the store and every op it
 * finished fails. */
static void finish_run(struct smq_engine *e, bool force)
{
    struct smq_op *ops;
    bool lost;
    int lost_rc;

    if (txn_defer_commit(&e->txn, force) || (!force && fanout_fills_txn(e)))
        return;
    txn_commit(&e->txn);
    fanout_txn_ended(e);
    lost = e->txn.lost;
    lost_rc = e->txn.lost_rc;
    eventlog_flush(&e->eventlog, !lost);
    /* While the disk is full, give the WAL's space back after every run:
     * deletes free pages inside the database, a truncated WAL frees disk. */
    if (e->space.full && !txn_writes_stopped(&e->txn))
        store_checkpoint(e->store);
    if (lost)
        recover_reload(e);
    ops = txn_take_done(&e->txn);
    for (struct smq_op *op = ops; lost && op != NULL; op = op->next)
        op_fail(op, lost_rc == SMQ_E_STORAGE_FULL ? SMQ_E_STORAGE_FULL : SMQ_E_INTERNAL, NULL);
    txn_answer(&e->txn, ops);
}

/* Answers every op of ops InternalError, unrun, and finishes the run
 * (which rolls back a transaction a deferred commit left open). */
static void refuse_all(struct smq_engine *e, struct smq_op *ops)
{
    while (ops != NULL) {
        struct smq_op *op = ops;
        ops = ops->next;
        op->next = NULL;
        txn_complete(&e->txn, op, SMQ_E_INTERNAL);
    }
    finish_run(e, true);
}

/* While broken (a reload failed), try again; if it still fails, answer
 * every op of this run with InternalError.  Returns true when ops were so
 * answered. */
static bool refuse_while_broken(struct smq_engine *e, struct smq_op *ops)
{
    if (!e->broken)
        return false;
    recover_reload(e);
    if (!e->broken)
        return false;
    refuse_all(e, ops);
    return true;
}

/* Once writes have stopped, ops are refused unrun and no timer fires
 * (expiry and redrive would write); parked long polls are answered now,
 * since their deadlines will not fire either. */
static bool refuse_after_flush_failure(struct smq_engine *e, struct smq_op *ops)
{
    if (!txn_writes_stopped(&e->txn))
        return false;
    for (size_t i = 0; i < e->queues.n; i++)
        waiters_fail_queue(&e->waiters, e->queues.items[i], SMQ_E_INTERNAL);
    refuse_all(e, ops);
    return true;
}

void engine_run(struct smq_engine *e, struct smq_op *ops)
{
    if (refuse_after_flush_failure(e, ops) || refuse_while_broken(e, ops))
        return;
    advance_clock(e);
    run_redrive_tick(e, clock_mono_ms(e->clock));
    serve_ready(e);
    while (ops != NULL) {
        struct smq_op *op = ops;
        int rc;
        ops = ops->next;
        op->next = NULL;
        op->result.err = 0;
        rc = e->txn.lost ? SMQ_E_INTERNAL : run_op(e, op);
        if (!waiters_is_parked(op))
            txn_complete(&e->txn, op, rc);
        serve_ready(e);
    }
    fanout_run(e);          /* deliveries into queues, after the run's publishes */
    serve_ready(e);
    msgs_flush_expired(e, false);
    finish_run(e, false);
    /* A flush may have failed during this run; nothing writes after that. */
    if (!txn_writes_stopped(&e->txn) && !e->broken)
        space_reclaim(&e->space, clock_mono_ms(e->clock));
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

uint64_t engine_next_timeout_ms(struct smq_engine *e)
{
    uint64_t now = clock_mono_ms(e->clock);
    uint64_t t;

    /* After a failed flush no timer runs (refuse_after_flush_failure): only a
     * new op may wake the engine thread, or it would spin on overdue timers. */
    if (txn_writes_stopped(&e->txn))
        return UINT64_MAX;
    if (e->waiters.ready_head != NULL)
        return 0;
    /* A commit deferred while the syncer flushes (finish_run) is due when
     * the flush is over; the syncer's idle hook wakes the engine thread then
     * (engine_thread_wake takes the lock the sleeping thread checked this
     * under, so the wake-up cannot fall between the check and the sleep). */
    if (e->txn.open && e->txn.syncer != NULL && syncer_idle(e->txn.syncer))
        return 0;
    t = min_u64(twheel_next_timeout_ms(&e->msg_wheel, now), waiters_timeout_ms(&e->waiters, now));
    /* While broken nothing runs but the retry of the next op's run. */
    if (!e->broken) {
        t = min_u64(t, run_redrive_timeout_ms(e, now));
        t = min_u64(t, space_reclaim_timeout_ms(&e->space, now));
        t = min_u64(t, fanout_timeout_ms(e, now));
    }
    return t;
}

void engine_drain(struct smq_engine *e)
{
    advance_clock(e);
    for (size_t i = 0; i < e->queues.n; i++)
        waiters_fail_queue(&e->waiters, e->queues.items[i], SMQ_E_MESSAGE_NOT_EXIST);
    msgs_flush_expired(e, true);
    finish_run(e, true);
}

int engine_max_queues(const struct smq_engine *e)
{
    return e->max_queues;
}

void engine_stats(const struct smq_engine *e, struct smq_engine_stats *out)
{
    run_stats_totals(e, out);
}

/* ---- consistency check (tests) ------------------------------------------------------- */

/* What engine_check learns from walking one heap of queue q. */
struct heap_audit {
    const struct smq_queue *q;
    size_t node_offset;          /* offsetof the heap_node walked */
    bool active_only;            /* every node must be Active */
    uint64_t nodes;
    bool wrong;                  /* a node of another queue, or in the wrong state */
};

static void audit_node(struct heap_node *n, void *arg)
{
    struct heap_audit *a = arg;
    const struct smq_msg *m = (const struct smq_msg *)((char *)n - a->node_offset);

    a->nodes++;
    if (m->queue != a->q || (a->active_only && m->state != SMQ_MSG_ACTIVE))
        a->wrong = true;
}

static const char *check_queue(const struct smq_queue *q)
{
    struct heap_audit act = {q, offsetof(struct smq_msg, hnode), true, 0, false};
    struct heap_audit age = {q, offsetof(struct smq_msg, anode), false, 0, false};
    uint64_t n = q->n_active + q->n_inactive + q->n_delayed;

    heap_foreach(&q->active, audit_node, &act);
    heap_foreach(&q->by_age, audit_node, &age);
    if (act.wrong || age.wrong)
        return "a heap holds a message of another queue, or a non-Active one as Active";
    if (act.nodes != q->n_active || heap_count(&q->active) != q->n_active)
        return "a queue's Active heap and its Active count differ";
    if (age.nodes != n || heap_count(&q->by_age) != n)
        return "a queue's age heap and its message counts differ";
    return NULL;
}

/* Each topic's subscriptions sorted, theirs, and found by id; the total right. */
static const char *check_topics(const struct topic_model *m)
{
    size_t subs = 0;

    for (size_t i = 0; i < m->n_topics; i++) {
        const struct smq_topic *t = m->topics[i];
        if (i > 0 && strcmp(m->topics[i - 1]->name, t->name) >= 0)
            return "the topic registry is out of order";
        for (size_t j = 0; j < t->n_subs; j++) {
            const struct smq_sub *s = t->subs[j];
            if (s->topic != t || topic_sub_find_id(m, s->id) != s)
                return "a subscription is not its topic's, or not found by its id";
            if (j > 0 && strcmp(t->subs[j - 1]->name, s->name) >= 0)
                return "a topic's subscriptions are out of order";
        }
        subs += t->n_subs;
    }
    return subs == m->n_subs_total ? NULL : "the topics' subscriptions and the total differ";
}

const char *engine_check(const struct smq_engine *e)
{
    uint64_t total = 0, waiters = 0;
    const char *why;

    for (size_t i = 0; i < e->queues.n; i++) {
        const struct smq_queue *q = e->queues.items[i];
        why = check_queue(q);
        if (why != NULL)
            return why;
        total += q->n_active + q->n_inactive + q->n_delayed;
        waiters += q->n_waiters;
    }
    if (waiters != e->waiters.n)
        return "the queues' parked long polls and the engine's count differ";
    if (total != e->msgs.count)
        return "the queues' messages and the message table differ";
    why = check_topics(&e->topics.model);
    return why != NULL ? why : fanout_check(e);
}

/* ---- open and close ------------------------------------------------------------------ */

static void init_parts(struct smq_engine *e, const struct smq_engine_opts *opts)
{
    uint64_t mono = clock_mono_ms(opts->clock);

    e->clock = opts->clock;
    e->store = opts->store;
    e->max_queues = opts->max_queues > 0 ? opts->max_queues : 1000;
    e->topics.max_topics = opts->max_topics > 0 ? opts->max_topics : SMQ_TOPICS_DEFAULT_MAX;
    e->topics.max_subs_per_topic =
        opts->max_subs_per_topic > 0 ? opts->max_subs_per_topic : SMQ_SUBS_PER_TOPIC_DEFAULT_MAX;
    e->tb.epoch_minus_mono_ms = clock_epoch_ms(e->clock) - (int64_t)mono;
    space_init(&e->space, e->store, e->clock, opts->reserve_margin, opts->reserve_missing);
    txn_init(&e->txn, e->store, &e->space);
    waiters_init(&e->waiters, &e->txn, e->clock);
    eventlog_init(&e->eventlog, &e->keys);
    msgs_init(e, mono);
    fanout_init(e, mono, opts->account_id);
    queue_registry_init(&e->queues);
}

int engine_open(const struct smq_engine_opts *opts, struct smq_engine **out,
                char *err, size_t err_size)
{
    struct smq_engine *e = calloc(1, sizeof *e);
    int rc = SMQ_E_NOMEM;

    if (e == NULL)
        goto fail;
    init_parts(e, opts);
    if (msg_table_init(&e->msgs) != 0)
        goto fail_engine;
    if (topic_model_init(&e->topics.model) != 0)
        goto fail_msgs;
    rc = recover_keys(e);
    if (rc != 0) {
        snprintf(err, err_size, "cannot read or create the receipt-handle keys");
        goto fail_state;
    }
    advance_clock(e);       /* a missing reserve is retried now (space.h) */
    rc = recover_load(e);
    if (rc != 0) {
        snprintf(err, err_size, "cannot load queues and messages from the store");
        goto fail_state;
    }
    msgs_flush_expired(e, true);
    finish_run(e, true);
    *out = e;
    return 0;

fail_state:
    recover_free(e);
    queue_registry_free(&e->queues);
    topic_model_free(&e->topics.model);
fail_msgs:
    fanout_free(e);
    msg_table_free(&e->msgs);
fail_engine:
    free(e);
fail:
    if (rc == SMQ_E_NOMEM)
        snprintf(err, err_size, "out of memory");
    return rc;
}

void engine_close(struct smq_engine *e)
{
    if (e == NULL)
        return;
    engine_drain(e);
    recover_free(e);
    queue_registry_free(&e->queues);
    topic_model_free(&e->topics.model);
    fanout_free(e);
    msg_table_free(&e->msgs);
    eventlog_free(&e->eventlog);
    free(e);
}
