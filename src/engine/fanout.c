/*
 * fanout.c — owns what happens to a pending notification (fanout.h): its
 * delivery into a queue, rendered in its subscription's format, or its
 * HTTP push handed to the push pool once its row is durable and the
 * pool's outcome; the failure of an attempt and the retry schedule, giving
 * up, and the timers.
 * The publish itself, recovery and the self-check are in fanout_publish.c.
 */
#include "fanout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "msgs.h"
#include "smqd/crypto.h"
#include "smqd/log.h"
#include "smqd/notify.h"
#include "smqd/push.h"

/* Deliveries into queues come in bounded shares, so that a wide fan-out
 * does not stall other requests.  A request waits for the flush of the
 * transaction it is in, so a transaction takes at most TXN_BUDGET
 * deliveries and TXN_BYTES of their bodies, and only SHARED_BUDGET once
 * answers wait for it; an engine run takes at most RUN_BUDGET, so that the
 * engine thread takes new requests between runs, and a transaction nothing
 * waits for stays open until the fan-out has filled it (fanout_fills_txn).
 * HTTP pushes write nothing in the transaction: the shares do not hold
 * them back. */
#define FANOUT_TXN_BUDGET 128
#define FANOUT_SHARED_BUDGET 4
#define FANOUT_TXN_BYTES (128 * 1024)
#define FANOUT_RUN_BUDGET 4
#define GIVE_UP_RETRY_MS 10000   /* a give-up that could not be written is tried again */
#define FULL_RECHECK_MS 1000     /* while the disk is full, deliveries wait (§12.4) */
#define POOL_RETRY_MS 1000       /* a push the pool had no room for is offered again */

static uint32_t next_rnd(struct engine_topics *f)
{
    /* xorshift64*: only spreads BACKOFF_RETRY's intervals, no secrecy needed */
    f->rnd ^= f->rnd >> 12;
    f->rnd ^= f->rnd << 25;
    f->rnd ^= f->rnd >> 27;
    return (uint32_t)((f->rnd * 0x2545F4914F6CDD1DULL) >> 32);
}

/* Puts n (unplaced) on the wheel until due_ms. */
static void wait_until(struct smq_engine *e, struct topic_notif *n, int64_t due_ms)
{
    n->due_ms = due_ms;
    n->state = TOPIC_NOTIF_WAITING;
    twheel_arm(&e->topics.wheel, &n->timer, queue_epoch_to_mono(&e->tb, due_ms));
}

/* Frees n (unplaced), and its message with its last notification. */
static void retire(struct smq_engine *e, struct topic_notif *n)
{
    uint64_t seq = n->msg->seq;

    if (topic_notif_destroy(&e->topics.model, n) && e->topics.body_seq == seq)
        e->topics.body_seq = 0;
}

/* Deletes n's row, and its message's with its last notification (inside
 * the caller's savepoint). */
static int delete_rows(struct smq_engine *e, const struct topic_notif *n)
{
    int rc = store_notif_delete(e->store, n->sub->id, n->msg->seq);

    if (rc == 0 && n->msg->pending == 1)
        rc = store_tmsg_delete(e->store, n->msg->seq);
    return rc;
}

/* ---- the notification's body ---- */

/* The published body of msg in e->topics.body, read once for all its
 * notifications in a row. */
static int read_body(struct smq_engine *e, const struct topic_msg *msg)
{
    struct engine_topics *f = &e->topics;
    int rc;

    if (f->body_seq == msg->seq)
        return 0;
    f->body_seq = 0;
    buf_reset(&f->body);
    rc = store_tmsg_body(e->store, msg->seq, &f->body);
    if (rc == 0 && buf_failed(&f->body))
        rc = SMQ_E_NOMEM;
    if (rc == 0)
        f->body_seq = msg->seq;
    return rc;
}

/* Appends n's notification in its subscription's format to out (§13.9). */
static int render(struct smq_engine *e, const struct topic_notif *n, struct smq_buf *out)
{
    char id[MSGID_TEXT_LEN + 1];
    int rc = read_body(e, n->msg);
    struct notify_msg m;

    if (rc != 0)
        return rc;
    msgid_format(&e->keys, n->msg->seq, id);
    m = (struct notify_msg){e->topics.account_id, n->sub->topic->name, n->sub->name, id,
                            e->topics.body.data, e->topics.body.len, n->msg->md5, n->msg->tag,
                            n->msg->publish_ms};
    rc = notify_render(n->sub->attrs.format, &m, out);
    return rc == 0 && buf_failed(out) ? SMQ_E_NOMEM : rc;
}

/* ---- into a queue: a delivery, or a give-up to the dead-letter queue ---- */

/* Writes m (a new message of q with body) and retires n's rows, in one savepoint. */
static int write_queue_msg(struct smq_engine *e, struct smq_queue *q, struct smq_msg *m,
                           const struct topic_notif *n, const struct smq_buf *body)
{
    unsigned char md5[MNS_MD5_LEN];
    struct store_msg_rec rec;
    int rc = crypto_md5(body->data, body->len, md5);

    m->queue = q;
    m->priority = 8;                 /* the default priority of a SendMessage (§6) */
    m->enqueue_ms = e->now_ms;
    m->visible_ms = e->now_ms + q->attrs.delay_s * 1000;
    m->expire_ms = e->now_ms + q->attrs.retention_s * 1000;
    if (rc == 0)
        rc = txn_write_begin(&e->txn);
    if (rc != 0)
        return rc;
    rc = msgs_next_seq(e, &m->seq);
    if (rc == 0) {
        struct store_msg_content c = {body->data, body->len, md5, NULL, 0};
        msgs_record(m, &rec);
        rc = store_msg_insert(e->store, &rec, &c);
    }
    if (rc == 0)
        rc = delete_rows(e, n);
    rc = txn_write_end(&e->txn, rc);
    msgs_settle_seqs(e, rc == 0);
    return rc;
}

/* Makes n (unplaced) a message of q and retires it, logged as kind (a
 * delivery or a dead-letter).  0, or the error with n left as it was:
 * SMQ_E_INVALID_ARGUMENT when the notification is larger than the queue's
 * MaximumMessageSize. */
static int move_to_queue(struct smq_engine *e, struct smq_queue *q, struct topic_notif *n,
                         enum eventlog_kind kind)
{
    struct smq_buf body;
    struct smq_msg *m = calloc(1, sizeof *m);
    int rc = m != NULL ? 0 : SMQ_E_NOMEM;

    buf_init(&body);
    if (rc == 0)
        rc = render(e, n, &body);
    if (rc == 0 && (int64_t)body.len > q->attrs.max_msg_size)
        rc = SMQ_E_INVALID_ARGUMENT;
    if (rc == 0)
        rc = write_queue_msg(e, q, m, n, &body);
    if (rc != 0) {
        buf_free(&body);
        free(m);
        return rc;
    }
    msgs_link(e, q, m);
    e->topics.in_txn_bytes += body.len;
    q->count.sent++;
    eventlog_record(&e->eventlog, q, EVENTLOG_SEND, m, "");
    eventlog_notify(&e->eventlog, kind, n, n->attempts + 1, q);
    retire(e, n);
    buf_free(&body);
    return 0;
}

/* ---- failures, retries, giving up ---- */

/* The last attempt failed or the message's retention is over (§13.12):
 * n (unplaced) goes to its subscription's dead-letter queue (§13.13) or is
 * dropped and counted. */
static void give_up(struct smq_engine *e, struct topic_notif *n)
{
    struct smq_sub *s = n->sub;
    struct smq_queue *dlq = s->attrs.dlq.enabled
                                ? queue_registry_find(&e->queues, s->attrs.dlq.target) : NULL;
    int rc = dlq != NULL ? move_to_queue(e, dlq, n, EVENTLOG_NOTIFY_DEAD_LETTER)
                         : SMQ_E_QUEUE_NOT_EXIST;

    if (rc != 0) {               /* no target, or it would not take it: dropped */
        rc = txn_write_begin(&e->txn);
        if (rc == 0)
            rc = txn_write_end(&e->txn, delete_rows(e, n));
        if (rc == 0) {
            e->topics.dropped++;
            eventlog_notify(&e->eventlog, EVENTLOG_NOTIFY_DROP, n, n->attempts + 1, NULL);
            retire(e, n);
        }
    }
    if (rc == 0) {
        s->count.dead++;
        return;
    }
    SMQ_WARN("topic %s subscription %s: a notification given up could not be removed (%s); "
             "tried again later", s->topic->name, s->name, errors_info(rc)->code);
    wait_until(e, n, e->now_ms + GIVE_UP_RETRY_MS);
}

/* An attempt of n (unplaced) failed: the next one is due after the
 * strategy's interval, or n is given up (its attempts spent, or the next
 * one past the message's retention). */
static void attempt_failed(struct smq_engine *e, struct topic_notif *n)
{
    struct smq_sub *s = n->sub;
    uint32_t attempts = n->attempts + 1;
    enum smq_notify_strategy strategy = (enum smq_notify_strategy)n->strategy;
    int64_t due = e->now_ms + notify_retry_interval_ms(strategy, attempts, next_rnd(&e->topics));
    int64_t retained = n->msg->publish_ms + (int64_t)SMQ_TOPIC_RETENTION_S * 1000;
    struct store_notif_rec rec = {s->id, n->msg->seq, attempts, due, (int)strategy};
    int rc;

    s->count.failed++;
    if (attempts >= notify_max_attempts(strategy) || due > retained) {
        give_up(e, n);
        return;
    }
    rc = txn_write_begin(&e->txn);
    if (rc == 0)
        rc = txn_write_end(&e->txn, store_notif_update(e->store, &rec));
    /* Unwritten, the stored schedule is the earlier one: a restart retries
     * sooner, never later. */
    if (rc == 0) {
        if (n->attempts == 0)
            s->n_retrying++;
        n->attempts = attempts;
        eventlog_notify(&e->eventlog, EVENTLOG_NOTIFY_RETRY, n, attempts, NULL);
    }
    wait_until(e, n, due);
}

/* Delivers the READY notification n into its subscription's queue. */
static void deliver_to_queue(struct smq_engine *e, struct topic_notif *n)
{
    struct smq_sub *s = n->sub;
    struct smq_queue *q = queue_registry_find(&e->queues, s->ep.queue);

    topic_notif_unplace(n, &e->topics.wheel);
    if (q != NULL && move_to_queue(e, q, n, EVENTLOG_NOTIFY_DELIVER) == 0) {
        s->count.delivered++;
        return;
    }
    if (!e->txn.lost)
        attempt_failed(e, n);
    else
        topic_notif_make_ready(&e->topics.model, n);   /* the reload replaces it */
}

/* ---- HTTP pushes (§13.10) ---- */

/* A job for n's next attempt, its body rendered in the subscription's
 * format (§13.9).  0 or the error (no job). */
static int push_job_of(struct smq_engine *e, const struct topic_notif *n, struct push_job **out)
{
    struct push_job *job = calloc(1, sizeof *job);
    const struct smq_sub *s = n->sub;
    int rc;

    *out = NULL;
    if (job == NULL)
        return SMQ_E_NOMEM;
    buf_init(&job->body);
    job->sub_id = s->id;
    job->seq = n->msg->seq;
    job->attempt = n->attempts + 1;
    job->format = s->attrs.format;
    job->publish_ms = n->msg->publish_ms;
    snprintf(job->endpoint, sizeof job->endpoint, "%s", s->attrs.endpoint);
    snprintf(job->topic, sizeof job->topic, "%s", s->topic->name);
    snprintf(job->sub, sizeof job->sub, "%s", s->name);
    snprintf(job->tag, sizeof job->tag, "%s", n->msg->tag);
    msgid_format(&e->keys, n->msg->seq, job->msg_id);
    rc = render(e, n, &job->body);
    if (rc != 0) {
        push_job_free(job);
        return rc;
    }
    *out = job;
    return 0;
}

enum { PUSHED, WAIT_COMMIT, WAIT_POOL };

/* Hands the head of s's READY FIFO to the pool: PUSHED (it is in flight
 * now), WAIT_COMMIT (its row is not durable yet: a push must not reach
 * an endpoint for a publish that could still be lost), or WAIT_POOL (no
 * room in the pool, no pool, or its body could not be read: it stays READY
 * and no attempt is used up). */
static int push_head(struct smq_engine *e, struct smq_sub *s)
{
    struct engine_topics *f = &e->topics;
    struct topic_notif *n = s->ready_head;
    struct push_job *job;
    int rc;

    if (n->commit_gen > f->durable) {
        f->commit_wait = true;
        return WAIT_COMMIT;
    }
    rc = push_job_of(e, n, &job);
    if (rc == 0)
        rc = f->push_submit(f->push_arg, job);
    if (rc != 0) {
        push_job_free(job);
        f->pool_wait = true;
        f->pool_retry_mono = clock_mono_ms(e->clock) + POOL_RETRY_MS;
        return WAIT_POOL;
    }
    topic_notif_unplace(n, &f->wheel);
    topic_notif_fly(n);
    return PUSHED;
}

/* Starts up to budget pushes of s's READY notifications; returns how many.
 * At most flight_cap of s's are in flight (a push result makes s runnable
 * again); s waits on the blocked list for a commit or room in the pool. */
static size_t push_sub(struct smq_engine *e, struct smq_sub *s, size_t budget)
{
    size_t done = 0;

    if (e->topics.push_submit == NULL)
        return 0;                /* no pool: stored, they wait (engine_set_push) */
    while (s->ready_head != NULL && done < budget) {
        if (s->n_flight >= s->flight_cap)
            return done;
        if (push_head(e, s) != PUSHED) {
            topic_block(&e->topics.model, s);
            return done;
        }
        done++;
    }
    if (s->ready_head != NULL)
        topic_mark_runnable(&e->topics.model, s);
    return done;
}

/* Delivers up to budget of s's READY notifications (fewer once the
 * transaction has its bytes); returns how many. */
static size_t run_sub(struct smq_engine *e, struct smq_sub *s, size_t budget)
{
    size_t done = 0;

    if (s->ep.kind != NOTIFY_EP_QUEUE)
        return push_sub(e, s, budget);
    while (s->ready_head != NULL && done < budget && !e->txn.lost &&
           e->topics.in_txn_bytes < FANOUT_TXN_BYTES) {
        deliver_to_queue(e, s->ready_head);
        done++;
    }
    e->topics.in_txn += done;
    if (s->ready_head != NULL)
        topic_mark_runnable(&e->topics.model, s);
    return done;
}

/* Deliveries the open transaction may still take. */
static size_t txn_budget(const struct smq_engine *e)
{
    const struct engine_topics *f = &e->topics;
    size_t cap = txn_has_answers(&e->txn) ? FANOUT_SHARED_BUDGET : FANOUT_TXN_BUDGET;

    return f->in_txn < cap && f->in_txn_bytes < FANOUT_TXN_BYTES ? cap - f->in_txn : 0;
}

static size_t min_size(size_t a, size_t b)
{
    return a < b ? a : b;
}

bool fanout_fills_txn(const struct smq_engine *e)
{
    const struct engine_topics *f = &e->topics;

    return e->txn.open && !e->txn.lost && !txn_has_answers(&e->txn) && f->in_txn > 0 &&
           txn_budget(e) > 0 && f->model.n_runnable > f->model.n_runnable_push &&
           !e->space.full;
}

void fanout_txn_ended(struct smq_engine *e)
{
    e->topics.in_txn = 0;
    e->topics.in_txn_bytes = 0;
    if (!e->txn.lost)            /* else the reload replaces the model */
        e->topics.commits++;
}

/* The commits so far, when they are all durable: with a syncer, once no
 * flush is running or due (its idle hook wakes the engine then). */
static uint64_t durable_commits(const struct smq_engine *e)
{
    const struct engine_topics *f = &e->topics;

    return e->txn.syncer == NULL || syncer_idle(e->txn.syncer) ? f->commits : f->durable;
}

/* Whatever waited for a commit to be durable may be pushed now (a
 * subscription that waited for the pool tries again with them: it blocks
 * again if the pool is still full).  Only then: unblocking on every run
 * would spin the engine on a full pool. */
static void unblock_durable(struct smq_engine *e)
{
    struct engine_topics *f = &e->topics;
    uint64_t durable = durable_commits(e);

    if (durable == f->durable)
        return;
    f->durable = durable;
    if (f->commit_wait) {
        f->commit_wait = false;
        topic_unblock_all(&f->model);
    }
}

void fanout_run(struct smq_engine *e)
{
    struct engine_topics *f = &e->topics;
    struct topic_model *m = &f->model;
    size_t run_left = FANOUT_RUN_BUDGET, budget, done;
    struct smq_sub *s, *held = NULL, *held_tail = NULL;   /* queue subscriptions, in order */

    /* While the disk is full nothing is delivered, and no attempt is used up. */
    if (e->space.full || txn_writes_stopped(&e->txn))
        return;
    unblock_durable(e);
    if (f->pool_wait && clock_mono_ms(e->clock) >= f->pool_retry_mono) {
        f->pool_wait = false;
        topic_unblock_all(m);
    }
    while (run_left > 0 && !e->txn.lost && (txn_budget(e) > 0 || m->n_runnable_push > 0) &&
           (s = topic_take_runnable(m)) != NULL) {
        /* An HTTP push writes nothing in the transaction: only deliveries
         * into queues wait for its commit, keeping their turns. */
        budget = s->ep.kind == NOTIFY_EP_QUEUE ? txn_budget(e) : run_left;
        if (budget == 0) {
            *(held != NULL ? &held_tail->runnable_next : &held) = s;
            held_tail = s;
            continue;
        }
        done = run_sub(e, s, min_size(budget, run_left));
        /* A subscription that delivered nothing still costs a turn, so that
         * the loop ends. */
        run_left -= done > 0 ? done : 1;
    }
    topic_requeue_front(m, held, held_tail);
}

/* ---- the pool's outcomes ---- */

/* n's push answered 2xx: its row goes (retired), counted delivered. */
static void pushed(struct smq_engine *e, struct topic_notif *n)
{
    struct smq_sub *s = n->sub;
    int rc = txn_write_begin(&e->txn);

    if (rc == 0)
        rc = txn_write_end(&e->txn, delete_rows(e, n));
    s->flight_cap = TOPIC_FLIGHT_CAP;        /* the endpoint answers again */
    if (rc != 0) {
        /* Delivered but not recorded: at least once means it goes again. */
        topic_notif_make_ready(&e->topics.model, n);
        return;
    }
    s->count.delivered++;
    eventlog_notify(&e->eventlog, EVENTLOG_NOTIFY_DELIVER, n, n->attempts + 1, NULL);
    retire(e, n);
}

static void count_latency(struct smq_sub *s, uint64_t latency_us)
{
    size_t b = 0;

    while (b < SMQ_PUSH_LATENCY_BUCKETS && latency_us > smq_push_latency_bound_us(b))
        b++;
    s->count.push_latency_buckets[b]++;
    s->count.push_latency_us_sum += latency_us;
    s->count.push_latency_n++;
}

int fanout_push_result(struct smq_engine *e, struct smq_op *op)
{
    const struct smq_op_push *p = &op->push;
    struct engine_topics *f = &e->topics;
    struct smq_sub *s = topic_sub_find_id(&f->model, p->sub_id);
    struct topic_notif *n = s != NULL ? topic_flight_find(s, p->seq, p->attempt) : NULL;

    if (f->pool_wait) {          /* the pool has room again */
        f->pool_wait = false;
        topic_unblock_all(&f->model);
    }
    if (n == NULL)
        return 0;                /* unsubscribed meanwhile, or reloaded since */
    topic_notif_unplace(n, &f->wheel);
    if (p->outcome == SMQ_PUSH_CANCELLED) {
        /* Not an attempt (the pool was stopping): pending as it was. */
        topic_notif_make_ready(&f->model, n);
        return 0;
    }
    count_latency(s, p->latency_us);
    if (p->outcome == SMQ_PUSH_OK) {
        pushed(e, n);
    } else {
        /* Any other outcome is a failed attempt; SIGN_ERROR too (not sent):
         * retried on the schedule rather than at once, which would spin on
         * a key that cannot sign. */
        if (p->outcome == SMQ_PUSH_REJECTED)
            s->count.rejected++;
        /* One probe at a time until the endpoint answers again, so a dead
         * endpoint holds one slot of the pool at most (§13.12). */
        s->flight_cap = 1;
        attempt_failed(e, n);
    }
    if (s->ready_head != NULL)
        topic_mark_runnable(&f->model, s);
    return 0;
}

void fanout_set_push(struct smq_engine *e, int (*submit)(void *arg, struct push_job *job),
                     void *arg)
{
    struct topic_model *m = &e->topics.model;

    e->topics.push_submit = submit;
    e->topics.push_arg = arg;
    /* HTTP subscriptions with READY notifications left the runnable list
     * while nothing could push them. */
    for (size_t i = 0; i < m->n_topics; i++)
        for (size_t j = 0; j < m->topics[i]->n_subs; j++)
            if (m->topics[i]->subs[j]->ready_head != NULL)
                topic_mark_runnable(m, m->topics[i]->subs[j]);
}

/* ---- timers ---- */

static void on_due(struct twheel_node *node, uint64_t now_mono, void *arg)
{
    struct smq_engine *e = arg;

    (void)now_mono;
    topic_notif_make_ready(&e->topics.model, topic_notif_from_timer(node));
}

void fanout_init(struct smq_engine *e, uint64_t now_mono, const char *account_id)
{
    struct engine_topics *f = &e->topics;

    twheel_init(&f->wheel, now_mono, on_due, e);
    buf_init(&f->body);
    f->rnd = now_mono * 0x9E3779B97F4A7C15ULL + 1;
    snprintf(f->account_id, sizeof f->account_id, "%s",
             account_id != NULL && account_id[0] != '\0' ? account_id : NOTIFY_ACCOUNT_ID_DEFAULT);
}

void fanout_free(struct smq_engine *e)
{
    buf_free(&e->topics.body);
}

void fanout_advance(struct smq_engine *e, uint64_t now_mono)
{
    twheel_advance(&e->topics.wheel, now_mono);
}

uint64_t fanout_timeout_ms(const struct smq_engine *e, uint64_t now_mono)
{
    uint64_t wheel = twheel_next_timeout_ms(&e->topics.wheel, now_mono);
    const struct engine_topics *f = &e->topics;

    if (f->commit_wait && durable_commits(e) != f->durable)
        return 0;
    if (f->pool_wait && f->model.blocked != NULL) {
        uint64_t pool = f->pool_retry_mono > now_mono ? f->pool_retry_mono - now_mono : 0;
        wheel = pool < wheel ? pool : wheel;
    }

    if (e->topics.model.runnable_head == NULL)
        return wheel;
    if (e->space.full)
        return wheel < FULL_RECHECK_MS ? wheel : FULL_RECHECK_MS;
    /* The open transaction's share is used up: the commit after the flush
     * in progress wakes the engine (engine_next_timeout_ms); HTTP pushes go
     * on meanwhile. */
    return txn_budget(e) > 0 || e->topics.model.n_runnable_push > 0 ? 0 : wheel;
}
