/*
 * node.c — owns the start and the stop of the serving parts (node.h):
<<<<<<< HEAD
 * store, engine recovery and the declared queues, syncer, engine thread,
 * and the HTTP push pool the engine hands its pushes to.
=======
 * store, the push signing key, engine recovery and the declared queues,
 * syncer, engine thread.
>>>>>>> signing-key
 */
#include "node.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "declare.h"
#include "signing.h"
#include "smqd/log.h"
#include "smqd/notify.h"
#include "smqd/push.h"

/*
 * With sync = full (and always on PostgreSQL), the durability of each
 * commit moves to the syncer, which holds the answers back until the flush
 * returned (SQLite: fdatasync of the WAL; PostgreSQL: the COMMIT of every
 * run queued since the last one).  Started after declare_queues, which
 * needs its ops answered at once.
 */
static int flush_store(void *store)
{
    return store_flush(store);
}

static int start_syncer(const struct node_opts *o, struct node_parts *p)
{
    bool pg = o->cfg->storage_backend == SMQ_STORE_POSTGRESQL;
    char err[512] = "";
    struct syncer_opts sopts = {
        .flush = flush_store, .flush_arg = p->store, .metrics = o->metrics,
        .unknown_outcome_message = pg ? "the connection to PostgreSQL was lost before its "
                                        "COMMIT was answered; the outcome is unknown, retry"
                                      : NULL,
        .flush_what = pg ? "COMMIT on PostgreSQL" : NULL};

    if (o->cfg->sync != SMQ_SYNC_FULL && !pg)
        return 0;
    if (store_defer_fsync(p->store) != 0)
        return NODE_E_STORE;
    if (syncer_start(&sopts, &p->syncer, err, sizeof err) != 0) {
        SMQ_ERROR("storage: %s", err);
        return NODE_E_STORE;
    }
    engine_set_syncer(p->engine, p->syncer);
    return 0;
}

/* SQLite: the disk reserve beside the file; *reserve_missing tells the
 * engine to start in its storage-full mode. */
static void init_reserve(const struct smq_config *cfg, struct node_parts *p,
                         bool *reserve_missing)
{
    /* Without room for the reserve smqd still starts, in its storage-full
     * mode: receives and deletes work, sends wait until the reserve can be
     * allocated (otherwise they would take the last space deletes need). */
    int code = store_reserve_init(p->store, cfg->storage_path, (uint64_t)cfg->reserve_mb << 20);

    *reserve_missing = code == SMQ_E_STORAGE_FULL;
    if (code == SMQ_E_STORAGE_FULL)
        SMQ_WARN("storage: no room for the %.1f MiB disk reserve next to %s; new messages "
                 "are refused until there is",
                 (double)store_reserve_bytes(p->store) / (1 << 20), cfg->storage_path);
    else if (code != 0)
        SMQ_WARN("storage: running without the disk reserve next to %s", cfg->storage_path);
}

static int start_store(const struct node_opts *o, struct node_parts *p, bool *reserve_missing)
{
    const struct smq_config *cfg = o->cfg;
    bool pg = cfg->storage_backend == SMQ_STORE_POSTGRESQL;
    struct store_config scfg = {.backend = cfg->storage_backend, .path = cfg->storage_path,
                                .sync = cfg->sync, .dsn = cfg->storage_dsn,
                                .app_name = o->holder_token};
    char err[512] = "";

    if (store_open(&scfg, &p->store, err, sizeof err) != 0) {
        SMQ_ERROR("storage: %s: %s", pg ? "PostgreSQL" : cfg->storage_path, err);
        return NODE_E_STORE;
    }
    if (pg && store_fence(p->store, o->holder_token, o->epoch) != 0) {
        SMQ_ERROR("storage: the holder token does not fit PostgreSQL's application_name");
        return NODE_E_STORE;
    }
    if (!pg)
        init_reserve(cfg, p, reserve_missing);
    return 0;
}

/* The push signing key, from [topics] or kept in the store (signing.h).
 * A configured pair that is unusable is the configuration's fault. */
static int start_signing(const struct smq_config *cfg, struct node_parts *p)
{
    char err[512] = "";
    int config_error = 0;

    if (signing_setup(cfg, p->store, &p->signer, &p->signing_cert_pem, &config_error, err,
                      sizeof err) == 0)
        return 0;
    SMQ_ERROR("push signing: %s", err);
    return config_error ? NODE_E_CONFIG : NODE_E_STORE;
}

/* Recovers the engine from the store and applies the declared queues. */
static int start_engine(const struct smq_config *cfg, struct node_parts *p,
                        bool reserve_missing)
{
    struct smq_engine_opts eopts = {.clock = clock_system(), .store = p->store,
                                    .max_queues = cfg->max_queues,
                                    .max_topics = cfg->max_topics,
                                    .max_subs_per_topic = cfg->max_subscriptions_per_topic,
                                    .account_id = cfg->topics_account_id,
                                    .reserve_margin = store_reserve_bytes(p->store),
                                    .reserve_missing = reserve_missing};
    char err[512] = "";
    int code;

    if (engine_open(&eopts, &p->engine, err, sizeof err) != 0) {
        SMQ_ERROR("recovery: %s", err);
        return NODE_E_STORE;
    }
    code = declare_queues(p->engine, cfg->queues, cfg->n_queues, err, sizeof err);
    if (code != 0) {
        SMQ_ERROR("config: %s", err);
        return code == SMQ_E_INVALID_ARGUMENT ? NODE_E_CONFIG : NODE_E_STORE;
    }
    return 0;
}

/* The engine thread, with the syncer's flushes waking it. */
static int start_engine_thread(struct node_parts *p)
{
    if (engine_thread_start(p->engine, &p->thread) != 0)
        return NODE_E_THREAD;
    if (p->syncer != NULL) {
        syncer_set_idle_hook(p->syncer, engine_thread_wake, p->thread);
        engine_thread_wake(p->thread);  /* a flush may have ended before the hook was set */
    }
    return 0;
}

/*
 * The push pool, lent to the engine through its submit hook
 * (engine_set_push): the engine stays below the pool's owner, and the pool
 * can stop (node_quiesce, a lost lease) while the engine runs on: from then
 * the hook answers SMQ_E_SERVICE_UNAVAILABLE and the engine keeps the job.
 */
struct node_push {
    pthread_mutex_t lock;                /* guards pool against push_stop */
    struct push_pool *pool;              /* NULL: none (yet, or any more) */
    struct smq_engine_thread *thread;    /* the outcomes' way back */
};

static int push_submit_hook(void *arg, struct push_job *job)
{
    struct node_push *np = arg;
    int rc = SMQ_E_SERVICE_UNAVAILABLE;

    pthread_mutex_lock(&np->lock);
    if (np->pool != NULL)
        rc = push_submit(np->pool, job);
    pthread_mutex_unlock(&np->lock);
    return rc;
}

static void free_push_result(struct smq_op *op, void *arg)
{
    (void)arg;
    op_release(op);
    free(op);
}

/* The pool's thread: the outcome goes to the engine thread's inbox as an op. */
static void push_done(void *arg, const struct smq_op_push *result)
{
    struct node_push *np = arg;
    struct smq_op *op = malloc(sizeof *op);

    if (op == NULL) {
        /* The notification stays in flight until the next start, which
         * pushes it again (at least once). */
        SMQ_ERROR("push: out of memory; the outcome of a push is lost until restart");
        return;
    }
    op_init(op, SMQ_OP_PUSH_RESULT);
    op->push = *result;
    op->done = free_push_result;
    engine_thread_submit(np->thread, op);
}

static int start_push_pool(const struct node_opts *o, struct node_push *np,
                           const struct crypto_signer *signer)
{
    const struct smq_config *cfg = o->cfg;
    char err[512] = "";
    struct push_opts popts = {
        .concurrency = cfg->topics_push_concurrency, .timeout_ms = cfg->topics_push_timeout_ms,
        .ca_file = cfg->topics_push_ca_file[0] ? cfg->topics_push_ca_file : NULL,
        .signer = signer,               /* start_signing's, outlives the pool */
        .cert_url = o->cert_url != NULL ? o->cert_url : "", .account_id = cfg->topics_account_id, .clock = clock_system(),
        .done = push_done, .done_arg = np};
    struct push_pool *pool;

    if (push_start(&popts, &pool, err, sizeof err) != 0) {
        /* Queues are served on; HTTP notifications stay stored and wait. */
        SMQ_ERROR("push: cannot start the push pool (%s); HTTP notifications wait", err);
        return 0;
    }
    pthread_mutex_lock(&np->lock);
    np->pool = pool;
    pthread_mutex_unlock(&np->lock);
    return 0;
}

/* Before the engine thread: the hook is in place (answering "no room"
 * until the pool is up) when the engine first runs. */
static int hook_push(struct node_parts *p)
{
    p->push = calloc(1, sizeof *p->push);
    if (p->push == NULL)
        return NODE_E_THREAD;
    pthread_mutex_init(&p->push->lock, NULL);
    engine_set_push(p->engine, push_submit_hook, p->push);
    return 0;
}

/* Ends every attempt in flight (each comes back cancelled, pending as it
 * was) while the engine thread still takes their outcomes. */
static void stop_push_pool(struct node_push *np)
{
    struct push_pool *pool;

    if (np == NULL)
        return;
    pthread_mutex_lock(&np->lock);
    pool = np->pool;
    np->pool = NULL;
    pthread_mutex_unlock(&np->lock);
    push_stop(pool);
}

int node_start(const struct node_opts *o, struct node_parts *p)
{
    bool reserve_missing = false;
    int code;

    memset(p, 0, sizeof *p);
    code = start_store(o, p, &reserve_missing);
    if (code == 0)
        code = start_signing(o->cfg, p);
    if (code == 0)
        code = start_engine(o->cfg, p, reserve_missing);
    if (code == 0)
        code = start_syncer(o, p);
    if (code == 0)
        code = hook_push(p);
    if (code == 0)
        code = start_engine_thread(p);
    return code;
}

int node_start_push(const struct node_opts *o, struct node_parts *p)
{
    p->push->thread = p->thread;
    return start_push_pool(o, p->push, p->signer);
}

bool node_failed(const struct node_parts *p)
{
    return p->syncer != NULL && syncer_failed(p->syncer);
}

void node_quiesce(struct node_parts *p)
{
    stop_push_pool(p->push);
    engine_thread_stop(p->thread);
    /* The syncer answers on its own thread and its hook wakes the server:
     * both must be over before either is freed (unbounded on purpose: an
     * answer must not reach a freed connection, however slow the disk). */
    syncer_drain(p->syncer);
}

void node_close(struct node_parts *p)
{
    engine_thread_free(p->thread);
    engine_close(p->engine);
    if (p->push != NULL) {               /* the engine's hook pointed here */
        pthread_mutex_destroy(&p->push->lock);
        free(p->push);
    }
    if (p->syncer != NULL && syncer_failed(p->syncer))
        store_no_checkpoint_on_close(p->store);
    syncer_stop(p->syncer);             /* flushes what the engine's last run committed */
    store_close(p->store);
    signing_free(p->signer, p->signing_cert_pem);
    memset(p, 0, sizeof *p);
}
