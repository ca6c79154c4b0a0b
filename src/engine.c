/*
 * engine.c — owns every queue and message state transition, the group
 * commit around them, parked long polls and the storage-full mode.  The
 * contract is described in engine.h, the in-memory model in queue.h;
 * rebuilding memory from the store lives in recover.c.
 */
#include "smqd/engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "smqd/engine_internal.h"
#include "smqd/log.h"
#include "smqd/queue.h"
#include "smqd/syncer.h"

#define SEQ_RESERVE_STEP 65536      /* ids reserved per meta write */
#define FULL_COOLDOWN_MS 5000       /* between attempts to retake the disk reserve */
#define FULL_RETRY_LOG_EVERY 60     /* failed attempts per warning (5 minutes) */
#define PROBE_INTERVAL_MS 1000      /* how often parked long polls are checked for gone clients */

static void on_msg_timer(struct twheel_node *n, uint64_t now_mono, void *arg);
static int write_mark(struct smq_engine *e, const char *key, uint64_t value);
static void on_wait_timer(struct twheel_node *n, uint64_t now_mono, void *arg);

const struct handle_keys *engine_keys(const struct smq_engine *e)
{
    return &e->keys;
}

/* ---- completion and the transaction of one run ---------------------------- */

void engine_complete(struct smq_engine *e, struct smq_op *op, int err)
{
    if (err != 0 && op->result.err == 0)
        errors_set(&op->result, err, NULL);
    op->next = NULL;
    *e->done_tail = op;
    e->done_tail = &op->next;
}

/* Opens the run's transaction on first use. */
/* After a failed WAL flush nothing may be written any more (syncer.h):
 * the kernel may have dropped pages of the WAL, and a commit or a
 * checkpoint on top of them could copy stale pages into the database. */
static bool writes_stopped(struct smq_engine *e)
{
    return e->syncer != NULL && syncer_failed(e->syncer);
}

static int ensure_txn(struct smq_engine *e)
{
    if (e->txn_lost || writes_stopped(e))
        return SMQ_E_INTERNAL;
    if (!e->txn_open) {
        int rc = store_begin(e->store);
        if (rc != 0)
            return rc;
        e->txn_open = true;
    }
    return 0;
}

/* Free pages already in the file count too: hand them back at the next
 * maintenance step rather than after the next delete (engine_maintain). */
static void reclaim_now(struct smq_engine *e)
{
    e->maintain_due = true;
    e->next_reclaim_mono = 0;
}

/*
 * The disk (or database) is full.  Free the reserve so that receives,
 * deletes and visibility changes (which need WAL space but no new pages)
 * keep working, and refuse sends and queue creation until the reserve can
 * be taken back (storage_recheck, after each cool-down).
 */
static void storage_full(struct smq_engine *e)
{
    if (!e->storage_full) {
        SMQ_ERROR("engine: storage is full; refusing new messages until the disk reserve "
                  "can be taken back (checked every %d s), receive and delete keep working",
                  FULL_COOLDOWN_MS / 1000);
        store_reserve_release(e->store);
        reclaim_now(e);
    }
    e->storage_full = true;
    e->full_until_mono = clock_mono_ms(e->clock) + FULL_COOLDOWN_MS;
}

/* At the start of a run, after each cool-down: take the reserve back, and
 * only then accept sends again.  It is taken back only when as much again
 * stays free beside it; until then sends stay refused, since they would use
 * up the space the released reserve left for deletes (and a second full
 * disk would find no reserve to release). */
static void storage_recheck(struct smq_engine *e, uint64_t now_mono)
{
    int rc;

    if (!e->storage_full || now_mono < e->full_until_mono)
        return;
    rc = store_reserve_restore(e->store, e->reserve_margin);
    if (rc == SMQ_E_STORAGE_FULL) {
        if (e->full_retries++ % FULL_RETRY_LOG_EVERY == 0)
            SMQ_WARN("engine: still no room to take the disk reserve back; new messages stay "
                     "refused (free space on the database's file system)");
        e->full_until_mono = now_mono + FULL_COOLDOWN_MS;   /* next attempt */
        return;
    }
    /* There is room; a reserve that cannot be created for another reason
     * (the store logged it) must not keep sends refused for ever. */
    e->storage_full = false;
    e->full_retries = 0;
    SMQ_WARN("engine: %s; accepting new messages again",
             rc == 0 ? "the disk reserve is back" : "there is room again (without a reserve)");
}

/* Every write of an op runs inside a savepoint so that a failed statement
 * undoes only that op; memory is touched only after write_end succeeded. */
static int write_begin(struct smq_engine *e)
{
    int rc = ensure_txn(e);
    if (rc == 0)
        rc = store_savepoint(e->store);
    e->in_savepoint = rc == 0;
    if (rc == SMQ_E_STORAGE_FULL)
        storage_full(e);
    return rc;
}

static int write_end(struct smq_engine *e, int rc)
{
    if (!e->in_savepoint)
        return rc;              /* write_begin failed: nothing to release or undo */
    e->in_savepoint = false;
    if (rc == 0)
        rc = store_release(e->store);
    /* An id reservation counts only once its savepoint is kept; if the
     * whole transaction is lost later, recover_reload() re-reads the mark anyway. */
    if (rc == 0 && e->seq_reserve_pending != 0)
        e->seq_reserved = e->seq_reserve_pending;
    e->seq_reserve_pending = 0;
    if (rc != 0) {
        store_rollback_to(e->store);
        if (!store_in_txn(e->store)) {
            e->txn_lost = true;     /* SQLite rolled back the whole transaction */
            e->lost_rc = rc;
        }
    }
    if (rc == SMQ_E_STORAGE_FULL)
        storage_full(e);
    return rc;
}

void engine_mark_ready(struct smq_engine *e, struct smq_queue *q)
{
    if (q->ready || q->waiters_head == NULL)
        return;
    q->ready = true;
    q->ready_next = e->ready_head;
    e->ready_head = q;
}

/* ---- messages in memory ----------------------------------------------------- */

static void msg_rec(const struct smq_msg *m, struct store_msg_rec *r)
{
    r->queue_id = m->queue->id;
    r->seq = m->seq;
    r->priority = m->priority;
    r->enqueue_ms = m->enqueue_ms;
    r->first_dequeue_ms = m->first_dequeue_ms;
    r->visible_ms = m->visible_ms;
    r->expire_ms = m->expire_ms;
    r->dequeue_count = m->dequeue_count;
    r->handle_gen = m->handle_gen;
    r->src_queue_id = m->src_queue_id;
}

void engine_msg_link(struct smq_engine *e, struct smq_queue *q, struct smq_msg *m)
{
    m->queue = q;
    twheel_node_init(&m->timer);
    msg_table_insert(&e->msgs, m);
    queue_msg_adopt(q, m);
    queue_msg_place(q, m, e->now_ms, &e->msg_wheel, &e->tb);
    if (m->state == SMQ_MSG_ACTIVE)
        engine_mark_ready(e, q);
}

static void msg_destroy(struct smq_engine *e, struct smq_msg *m)
{
    e->maintain_due = true;          /* its rows free pages: see engine_maintain */
    queue_msg_unplace(m->queue, m, &e->msg_wheel);
    queue_msg_release(m->queue, m);
    msg_table_remove(&e->msgs, m);
    free(m);
}

void engine_expire_msg(struct smq_engine *e, struct smq_msg *m)
{
    m->queue->count.expired++;
    engine_oplog(e, m->queue, EV_EXPIRE, m, NULL);
    /* The row is deleted lazily: a row past its expiry is never loaded
     * again, so losing this delete (full buffer, failed run) is harmless. */
    if (e->n_expired < EXPIRED_FLUSH_AT) {
        e->expired[e->n_expired].queue_id = m->queue->id;
        e->expired[e->n_expired].seq = m->seq;
        e->n_expired++;
    }
    msg_destroy(e, m);
}

static void on_msg_timer(struct twheel_node *n, uint64_t now_mono, void *arg)
{
    struct smq_engine *e = arg;
    struct smq_msg *m = queue_msg_from_timer(n);
    struct smq_queue *q = m->queue;

    (void)now_mono;
    if (m->expire_ms <= e->now_ms) {
        engine_expire_msg(e, m);
        return;
    }
    queue_msg_unplace(q, m, &e->msg_wheel);
    queue_msg_place(q, m, e->now_ms, &e->msg_wheel, &e->tb);
    if (m->state == SMQ_MSG_ACTIVE)
        engine_mark_ready(e, q);
}

/* ---- long polls ------------------------------------------------------------------ */

void engine_waiter_unlink(struct smq_engine *e, struct smq_op *op)
{
    struct smq_queue *q = op->wait_queue;

    if (op->wait_prev != NULL)
        op->wait_prev->wait_next = op->wait_next;
    else
        q->waiters_head = op->wait_next;
    if (op->wait_next != NULL)
        op->wait_next->wait_prev = op->wait_prev;
    else
        q->waiters_tail = op->wait_prev;
    op->wait_prev = op->wait_next = NULL;
    op->wait_queue = NULL;
    twheel_cancel(&e->wait_wheel, &op->wait_timer);
    e->n_waiters--;
    q->n_waiters--;
    if (op->client_gone != NULL)
        e->n_probed--;
}

void engine_waiter_link(struct smq_engine *e, struct smq_queue *q, struct smq_op *op)
{
    uint64_t now = clock_mono_ms(e->clock);

    if (op->client_gone != NULL && e->n_probed++ == 0 && e->next_probe_mono <= now)
        e->next_probe_mono = now + PROBE_INTERVAL_MS;   /* first probed poll: schedule */
    op->wait_queue = q;
    op->wait_next = NULL;
    op->wait_prev = q->waiters_tail;
    if (q->waiters_tail != NULL)
        q->waiters_tail->wait_next = op;
    else
        q->waiters_head = op;
    q->waiters_tail = op;
    e->n_waiters++;
    q->n_waiters++;
}

static void on_wait_timer(struct twheel_node *n, uint64_t now_mono, void *arg)
{
    struct smq_engine *e = arg;
    struct smq_op *op = (struct smq_op *)((char *)n - offsetof(struct smq_op, wait_timer));

    (void)now_mono;
    engine_waiter_unlink(e, op);
    engine_complete(e, op, SMQ_E_MESSAGE_NOT_EXIST);
}

static void fail_waiters(struct smq_engine *e, struct smq_queue *q, int err)
{
    while (q->waiters_head != NULL) {
        struct smq_op *op = q->waiters_head;
        engine_waiter_unlink(e, op);
        engine_complete(e, op, err);
    }
}

/* ---- queue operations ---------------------------------------------------------------- */

static void queue_rec(const struct smq_queue *q, struct store_queue_rec *r)
{
    memset(r, 0, sizeof *r);
    r->id = q->id;
    snprintf(r->name, sizeof r->name, "%s", q->name);
    r->create_s = q->create_s;
    r->modify_s = q->modify_s;
    r->delay_s = q->attrs.delay_s;
    r->max_msg_size = q->attrs.max_msg_size;
    r->retention_s = q->attrs.retention_s;
    r->visibility_s = q->attrs.visibility_s;
    r->polling_wait_s = q->attrs.polling_wait_s;
    r->logging = q->attrs.logging;
    r->dlq_enabled = q->attrs.dlq.enabled;
    snprintf(r->dlq_target, sizeof r->dlq_target, "%s", q->attrs.dlq.target);
    r->dlq_max_receive = q->attrs.dlq.max_receive;
}

/* A dead-letter target must exist when the policy is set and must not be
 * the queue itself (it is not re-checked later: a target deleted since is
 * handled when a message would move, see engine.h). */
static int check_dlq(struct smq_engine *e, struct smq_op *op, const char *queue,
                     const struct smq_queue_attrs *a)
{
    if (!a->dlq.enabled || !(op->attrs.present & SMQ_ATTR_DLQ))
        return 0;
    if (strcmp(a->dlq.target, queue) == 0)
        return errors_set(&op->result, SMQ_E_INVALID_ARGUMENT,
                          "The DeadLetterTargetQueue cannot be the queue itself.");
    if (queue_registry_find(&e->queues, a->dlq.target) == NULL)
        return errors_set(&op->result, SMQ_E_INVALID_ARGUMENT,
                          "The DeadLetterTargetQueue '%s' does not exist.", a->dlq.target);
    return 0;
}

static int exec_create_queue(struct smq_engine *e, struct smq_op *op)
{
    struct smq_queue_attrs attrs;
    struct smq_queue *q = queue_registry_find(&e->queues, op->queue);
    struct store_queue_rec rec;
    int64_t now_s = e->now_ms / 1000;
    int rc;

    mns_default_attrs(&attrs);
    mns_overlay_attrs(&attrs, &op->attrs.values, op->attrs.present);
    if (q != NULL) {
        op->attrs.created = false;
        /* No SDK can send the policy: a CreateQueue that does not name one
         * must stay idempotent on a queue that has one. */
        if (!(op->attrs.present & SMQ_ATTR_DLQ))
            attrs.dlq = q->attrs.dlq;
        return mns_attrs_equal(&attrs, &q->attrs) ? 0 : SMQ_E_QUEUE_ALREADY_EXIST;
    }
    if (e->storage_full)
        return SMQ_E_STORAGE_FULL;
    rc = check_dlq(e, op, op->queue, &attrs);
    if (rc != 0)
        return rc;
    if (e->queues.n >= (size_t)e->max_queues)
        return errors_set(&op->result, SMQ_E_TOO_MANY_QUEUES,
                          "The number of queues has reached the limit of %d.", e->max_queues);
    if (queue_registry_reserve(&e->queues) != 0
        || (q = queue_new(e->next_queue_id, op->queue, &attrs, now_s, now_s)) == NULL)
        return SMQ_E_NOMEM;
    queue_rec(q, &rec);
    rc = write_begin(e);
    if (rc == 0)
        rc = store_queue_insert(e->store, &rec);
    /* Queue ids are never reused either (store.h): keep a mark past this one. */
    if (rc == 0)
        rc = write_mark(e, META_NEXT_QUEUE_ID, (uint64_t)e->next_queue_id + 1);
    rc = write_end(e, rc);
    if (rc != 0) {
        queue_free(q);
        return rc;
    }
    e->next_queue_id++;
    queue_registry_insert(&e->queues, q);
    op->attrs.created = true;
    return 0;
}

static int exec_set_queue(struct smq_engine *e, struct smq_op *op, struct smq_queue *q)
{
    struct smq_queue updated = *q;
    struct store_queue_rec rec;
    int rc;

    mns_overlay_attrs(&updated.attrs, &op->attrs.values, op->attrs.present);
    rc = check_dlq(e, op, q->name, &updated.attrs);
    if (rc != 0)
        return rc;
    updated.modify_s = e->now_ms / 1000;
    queue_rec(&updated, &rec);
    rc = write_begin(e);
    if (rc == 0)
        rc = store_queue_update(e->store, &rec);
    rc = write_end(e, rc);
    if (rc == 0) {
        q->attrs = updated.attrs;
        q->modify_s = updated.modify_s;
    }
    return rc;
}

/* Frees every message of q: O(k log k) for its k messages, whatever the
 * other queues hold. */
static void destroy_queue_msgs(struct smq_engine *e, struct smq_queue *q)
{
    struct smq_msg *m;

    while ((m = queue_oldest_msg(q)) != NULL)
        msg_destroy(e, m);
}

static int exec_delete_queue(struct smq_engine *e, struct smq_op *op)
{
    struct smq_queue *q = queue_registry_find(&e->queues, op->queue);
    int rc;

    if (q == NULL)
        return 0;               /* idempotent, like the service (docs/protocol-decisions.md) */
    rc = write_begin(e);
    if (rc == 0)
        rc = store_queue_delete(e->store, q->id);
    rc = write_end(e, rc);
    if (rc != 0)
        return rc;
    fail_waiters(e, q, SMQ_E_QUEUE_NOT_EXIST);
    destroy_queue_msgs(e, q);
    queue_registry_remove(&e->queues, q);
    if (q->ready) {             /* unlink from the ready list before freeing */
        struct smq_queue **link = &e->ready_head;
        while (*link != q)
            link = &(*link)->ready_next;
        *link = q->ready_next;
    }
    queue_free(q);
    return 0;
}

static bool has_prefix(const char *name, const char *prefix)
{
    return strncmp(name, prefix, strlen(prefix)) == 0;
}

static int exec_list_queues(struct smq_engine *e, struct smq_op *op)
{
    const char *from = strcmp(op->list.marker, op->list.prefix) > 0 ? op->list.marker : op->list.prefix;
    size_t i = queue_registry_lower_bound(&e->queues, from);
    size_t limit = (size_t)op->list.ret_number;

    op->list.queues = calloc(limit, sizeof *op->list.queues);
    if (op->list.queues == NULL)
        return SMQ_E_NOMEM;
    for (; i < e->queues.n && op->list.n_queues < limit; i++) {
        if (!has_prefix(e->queues.items[i]->name, op->list.prefix))
            break;
        queue_info(e->queues.items[i], &op->list.queues[op->list.n_queues++]);
    }
    if (i < e->queues.n && has_prefix(e->queues.items[i]->name, op->list.prefix))
        snprintf(op->list.next_marker, sizeof op->list.next_marker, "%s", e->queues.items[i]->name);
    return 0;
}

/* ---- message operations ---------------------------------------------------------------- */

/* Writes a high-water mark in meta (inside the caller's savepoint). */
static int write_mark(struct smq_engine *e, const char *key, uint64_t value)
{
    char text[24];
    int n = snprintf(text, sizeof text, "%llu", (unsigned long long)value);

    return store_meta_set(e->store, key, text, (size_t)n);   /* 0, or the store's code */
}

/* Message sequence numbers are never reused, even after the highest one is
 * deleted and smqd restarts: ids are handed out below a persisted mark that
 * is moved in steps, in the same savepoint as the message that needs it. */
static int next_seq(struct smq_engine *e, uint64_t *seq)
{
    uint64_t reserved = e->seq_reserve_pending ? e->seq_reserve_pending : e->seq_reserved;

    if (e->next_seq >= reserved) {
        uint64_t reserve = e->next_seq + SEQ_RESERVE_STEP;
        int rc = write_mark(e, META_NEXT_SEQ, reserve);

        if (rc != 0)
            return rc;               /* SMQ_E_STORAGE_FULL must reach write_end */
        e->seq_reserve_pending = reserve;
    }
    *seq = e->next_seq++;
    return 0;
}

static int check_send_items(const struct smq_queue *q, struct smq_op *op)
{
    for (size_t i = 0; i < op->send.n; i++) {
        const struct smq_send_item *it = &op->send.items[i];
        if (it->body_len < 1 || (int64_t)it->body_len > q->attrs.max_msg_size)
            return errors_set(&op->result, SMQ_E_INVALID_ARGUMENT,
                              "The value of MessageBody should between 1 and %lld bytes%s.",
                              (long long)q->attrs.max_msg_size,
                              op->send.n > 1 ? " (in a message of the batch)" : "");
    }
    return 0;
}

/* Fills the fresh messages of a send and writes their rows (inside the
 * caller's savepoint). */
static int insert_msgs(struct smq_engine *e, struct smq_op *op, struct smq_queue *q,
                       struct smq_msg **fresh)
{
    struct store_msg_rec rec;
    int rc = 0;

    for (size_t i = 0; rc == 0 && i < op->send.n; i++) {
        struct smq_msg *m = fresh[i];
        const struct smq_send_item *it = &op->send.items[i];
        int64_t delay_s = it->delay_s > 0 ? it->delay_s : q->attrs.delay_s;

        m->queue = q;
        m->priority = (uint8_t)it->priority;
        m->enqueue_ms = e->now_ms;
        m->visible_ms = e->now_ms + delay_s * 1000;
        m->expire_ms = e->now_ms + q->attrs.retention_s * 1000;
        rc = next_seq(e, &m->seq);
        if (rc == 0) {
            msg_rec(m, &rec);
            rc = store_msg_insert(e->store, &rec, it->body, it->body_len, it->body_md5);
        }
    }
    return rc;
}

static int exec_send(struct smq_engine *e, struct smq_op *op, struct smq_queue *q)
{
    struct smq_msg *fresh[SMQ_BATCH_MAX] = {0};
    int rc = e->storage_full ? SMQ_E_STORAGE_FULL : check_send_items(q, op);
    size_t i;

    for (i = 0; rc == 0 && i < op->send.n; i++)
        if ((fresh[i] = calloc(1, sizeof *fresh[i])) == NULL)
            rc = SMQ_E_NOMEM;
    if (rc == 0) {
        rc = write_begin(e);
        if (rc == 0)
            rc = write_end(e, insert_msgs(e, op, q, fresh));
    }
    for (i = 0; i < op->send.n; i++) {
        if (rc == 0) {
            op->send.seq[i] = fresh[i]->seq;
            engine_msg_link(e, q, fresh[i]);
            q->count.sent++;
            engine_oplog(e, q, EV_SEND, fresh[i], op->request_id);
        } else {
            free(fresh[i]);
        }
    }
    return rc;
}

/*
 * The bodies a receive or peek returns share one allocation, op->recv.body_block,
 * which the HTTP thread frees once.  With a block per body, every body was
 * freed by a thread other than the one that allocated it, and each such
 * free takes the lock of the engine thread's malloc arena: the engine
 * thread then waited for that lock (perf sched_switch, batches at 64
 * connections: 16 % of its context switches were that wait).
 */

/* The least a body is guessed at when room is made for the rest of a batch. */
#define BODY_GUESS_MIN 1024

/* Appends m's body to bodies (the bodies follow each other, so where each
 * starts follows from the lengths), its length and MD5 to view.  After
 * the first, room is made for the `more` still to come, each guessed as
 * large as the first: a batch costs one allocation or two. */
static int read_body(struct smq_engine *e, const struct smq_msg *m, struct smq_buf *bodies,
                     size_t more, struct smq_msg_view *view)
{
    size_t before = bodies->len;
    int rc = store_msg_body(e->store, m->queue->id, m->seq, bodies, &view->body_md5);

    if (rc == 0 && buf_failed(bodies))
        rc = SMQ_E_NOMEM;
    if (rc != 0)
        return rc;
    view->body_len = bodies->len - before;
    if (before == 0 && more > 0)
        buf_reserve(bodies, more * (view->body_len > BODY_GUESS_MIN ? view->body_len
                                                                     : BODY_GUESS_MIN));
    return 0;
}

/* Hands bodies to op as its body_block (or frees them after a failure,
 * rc != 0) and points each of op's views at its body.  Empty bodies get a
 * pointer too. */
static int body_block_attach(struct smq_op *op, struct smq_buf *bodies, int rc)
{
    size_t len, at = 0;

    if (rc == 0 && op->recv.n_msgs > 0) {
        buf_append(bodies, "", 0);        /* a block even if every body is empty */
        if (buf_failed(bodies))
            rc = SMQ_E_NOMEM;
    }
    if (rc != 0 || op->recv.n_msgs == 0) {
        buf_free(bodies);
        return rc;
    }
    op->recv.body_block = buf_take(bodies, &len);
    for (size_t i = 0; i < op->recv.n_msgs; i++) {
        op->recv.msgs[i].body = op->recv.body_block + at;
        at += op->recv.msgs[i].body_len;
    }
    return 0;
}

static void fill_view(const struct smq_msg *m, struct smq_msg_view *v)
{
    v->seq = m->seq;
    v->handle_gen = m->handle_gen;
    v->enqueue_ms = m->enqueue_ms;
    /* FirstDequeueTime equals EnqueueTime while DequeueCount is 0 (§6.1). */
    v->first_dequeue_ms = m->dequeue_count > 0 ? m->first_dequeue_ms : m->enqueue_ms;
    v->next_visible_ms = m->visible_ms;
    v->dequeue_count = m->dequeue_count;
    v->priority = m->priority;
}

/* Takes up to max Active messages out of q's heap, best first.  For a
 * receive (request_id not NULL), each one that has used up its receives is
 * dead-lettered instead of taken. */
static size_t take_active(struct smq_engine *e, struct smq_queue *q, int max, struct smq_msg **out,
                          const char *request_id)
{
    size_t n = 0;
    struct smq_msg *m;

    while (n < (size_t)max && (m = queue_first_active(q)) != NULL) {
        if (request_id != NULL && engine_dead_letter(e, q, m, request_id))
            continue;
        queue_msg_unplace(q, m, &e->msg_wheel);
        out[n++] = m;
    }
    return n;
}

static void put_back(struct smq_engine *e, struct smq_queue *q, struct smq_msg **msgs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        queue_msg_place(q, msgs[i], e->now_ms, &e->msg_wheel, &e->tb);
}

static void drop_bodies(struct smq_op *op)
{
    op_release(op);
}

static int receive_now(struct smq_engine *e, struct smq_op *op, struct smq_queue *q)
{
    struct smq_msg *taken[SMQ_BATCH_MAX];
    struct smq_buf bodies;
    size_t n;
    int64_t visible_ms = e->now_ms + q->attrs.visibility_s * 1000;
    int rc;

    n = take_active(e, q, op->recv.max_msgs, taken, op->request_id);
    rc = n > 0 ? write_begin(e) : 0;
    buf_init(&bodies);

    for (size_t i = 0; rc == 0 && i < n; i++) {
        struct smq_msg next = *taken[i];
        struct store_msg_rec rec;

        next.dequeue_count++;
        next.handle_gen++;
        if (next.first_dequeue_ms == 0)
            next.first_dequeue_ms = e->now_ms;
        next.visible_ms = visible_ms;
        msg_rec(&next, &rec);
        rc = store_msg_update(e->store, &rec);
        if (rc == 0)
            rc = read_body(e, taken[i], &bodies, n - 1 - i, &op->recv.msgs[op->recv.n_msgs]);
        if (rc == 0)
            fill_view(&next, &op->recv.msgs[op->recv.n_msgs++]);
    }
    rc = body_block_attach(op, &bodies, rc);
    if (n > 0)
        rc = write_end(e, rc);
    if (rc != 0) {
        drop_bodies(op);
        put_back(e, q, taken, n);
        return rc;
    }
    for (size_t i = 0; i < n; i++) {
        struct smq_msg *m = taken[i];
        m->dequeue_count++;
        m->handle_gen++;
        if (m->first_dequeue_ms == 0)
            m->first_dequeue_ms = e->now_ms;
        m->visible_ms = visible_ms;
        queue_msg_place(q, m, e->now_ms, &e->msg_wheel, &e->tb);
        engine_oplog(e, q, EV_RECEIVE, m, op->request_id);
    }
    q->count.received += n;
    return n > 0 ? 0 : SMQ_E_MESSAGE_NOT_EXIST;
}

/* Returns 1 when op was parked (it finishes later), else an op result. */
static int exec_receive(struct smq_engine *e, struct smq_op *op, struct smq_queue *q)
{
    int64_t wait_s = op->recv.wait_s >= 0 ? op->recv.wait_s : q->attrs.polling_wait_s;
    int rc;

    /* Parked polls are served first (FIFO), so a newcomer may not overtake them. */
    if (q->waiters_head != NULL && wait_s > 0) {
        engine_waiter_link(e, q, op);
        twheel_arm(&e->wait_wheel, &op->wait_timer, clock_mono_ms(e->clock) + (uint64_t)wait_s * 1000);
        return 1;
    }
    rc = receive_now(e, op, q);
    if (rc != SMQ_E_MESSAGE_NOT_EXIST || wait_s <= 0)
        return rc;
    engine_waiter_link(e, q, op);
    twheel_arm(&e->wait_wheel, &op->wait_timer, clock_mono_ms(e->clock) + (uint64_t)wait_s * 1000);
    return 1;
}

static int exec_peek(struct smq_engine *e, struct smq_op *op, struct smq_queue *q)
{
    struct smq_msg *taken[SMQ_BATCH_MAX];
    struct smq_buf bodies;
    size_t n = take_active(e, q, op->recv.max_msgs, taken, NULL);
    int rc = 0;

    buf_init(&bodies);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        rc = read_body(e, taken[i], &bodies, n - 1 - i, &op->recv.msgs[op->recv.n_msgs]);
        if (rc == 0)
            fill_view(taken[i], &op->recv.msgs[op->recv.n_msgs++]);
    }
    rc = body_block_attach(op, &bodies, rc);
    put_back(e, q, taken, n);
    if (rc != 0)
        drop_bodies(op);
    return rc != 0 ? rc : (n > 0 ? 0 : SMQ_E_MESSAGE_NOT_EXIST);
}

/* The message a receipt handle names, if the handle is still current. */
static struct smq_msg *handle_target(struct smq_engine *e, struct smq_queue *q,
                                     const struct smq_handle_ref *ref, int *err)
{
    struct smq_msg *m;

    if (ref->err != 0) {
        *err = ref->err;
        return NULL;
    }
    m = msg_table_find(&e->msgs, ref->seq);
    if (m == NULL || m->queue != q || m->state != SMQ_MSG_INACTIVE || m->handle_gen != ref->gen) {
        *err = SMQ_E_MESSAGE_NOT_EXIST;
        return NULL;
    }
    *err = 0;
    return m;
}

static int exec_delete_msgs(struct smq_engine *e, struct smq_op *op, struct smq_queue *q)
{
    struct smq_msg *doomed[SMQ_BATCH_MAX] = {0};
    size_t n_doomed = 0;
    int rc = 0;

    for (size_t i = 0; i < op->del.n; i++) {
        struct smq_msg *m = handle_target(e, q, &op->del.refs[i], &op->del.refs[i].err);
        for (size_t j = 0; m != NULL && j < n_doomed; j++)
            if (doomed[j] == m) {           /* the same handle twice in one batch */
                m = NULL;
                op->del.refs[i].err = SMQ_E_MESSAGE_NOT_EXIST;
            }
        if (m != NULL)
            doomed[n_doomed++] = m;
    }
    if (n_doomed > 0) {
        rc = write_begin(e);
        for (size_t j = 0; rc == 0 && j < n_doomed; j++)
            rc = store_msg_delete(e->store, q->id, doomed[j]->seq);
        rc = write_end(e, rc);
    }
    if (rc != 0)
        return rc;
    for (size_t j = 0; j < n_doomed; j++) {
        engine_oplog(e, q, EV_DELETE, doomed[j], op->request_id);
        msg_destroy(e, doomed[j]);
    }
    q->count.deleted += n_doomed;
    /* BatchDeleteMessage reports per handle (even a batch of one). */
    return op->del.batch ? 0 : op->del.refs[0].err;
}

static int exec_change_visibility(struct smq_engine *e, struct smq_op *op, struct smq_queue *q)
{
    int err;
    struct smq_msg *m = handle_target(e, q, &op->vis.ref, &err);
    struct smq_msg next;
    struct store_msg_rec rec;
    int rc;

    if (m == NULL)
        return err;
    next = *m;
    next.handle_gen++;
    next.visible_ms = e->now_ms + op->vis.visibility_s * 1000;
    msg_rec(&next, &rec);
    rc = write_begin(e);
    if (rc == 0)
        rc = store_msg_update(e->store, &rec);
    rc = write_end(e, rc);
    if (rc != 0)
        return rc;
    queue_msg_unplace(q, m, &e->msg_wheel);
    m->handle_gen = next.handle_gen;
    m->visible_ms = next.visible_ms;
    queue_msg_place(q, m, e->now_ms, &e->msg_wheel, &e->tb);
    if (m->state == SMQ_MSG_ACTIVE)
        engine_mark_ready(e, q);
    op->vis.new_gen = m->handle_gen;
    op->vis.next_visible_ms = m->visible_ms;
    engine_oplog(e, q, EV_CHANGE_VISIBILITY, m, op->request_id);
    return 0;
}

/* ---- dispatch ---------------------------------------------------------------------------- */

/* Runs op; returns 1 if it was parked, else its result code. */
static int exec_op(struct smq_engine *e, struct smq_op *op)
{
    struct smq_queue *q;

    switch (op->kind) {
    case SMQ_OP_CREATE_QUEUE:
        return exec_create_queue(e, op);
    case SMQ_OP_DELETE_QUEUE:
        return exec_delete_queue(e, op);
    case SMQ_OP_LIST_QUEUES:
        return exec_list_queues(e, op);
    case SMQ_OP_STATS:
        return engine_exec_stats(e, op);
    default:
        break;
    }
    q = queue_registry_find(&e->queues, op->queue);
    if (q == NULL)
        return SMQ_E_QUEUE_NOT_EXIST;
    switch (op->kind) {
    case SMQ_OP_SET_QUEUE:
        return exec_set_queue(e, op, q);
    case SMQ_OP_GET_QUEUE:
        queue_info(q, &op->info);
        return 0;
    case SMQ_OP_SEND:
        return exec_send(e, op, q);
    case SMQ_OP_RECEIVE:
        return exec_receive(e, op, q);
    case SMQ_OP_PEEK:
        return exec_peek(e, op, q);
    case SMQ_OP_DELETE_MSG:
        return exec_delete_msgs(e, op, q);
    case SMQ_OP_CHANGE_VISIBILITY:
        return exec_change_visibility(e, op, q);
    case SMQ_OP_PURGE:
        return engine_exec_purge(e, op, q);
    case SMQ_OP_REDRIVE:
        return engine_exec_redrive(e, op, q);
    default:
        return SMQ_E_INTERNAL;
    }
}

static bool client_gone(struct smq_op *op)
{
    return op->client_gone != NULL && op->client_gone(op, op->done_arg);
}

/* Hands newly Active messages to parked long polls, oldest poll first; a
 * poll whose client has gone away is finished instead of taking a message
 * that nobody would read. */
static void serve_ready(struct smq_engine *e)
{
    while (e->ready_head != NULL) {
        struct smq_queue *q = e->ready_head;
        e->ready_head = q->ready_next;
        q->ready = false;
        while (q->waiters_head != NULL) {
            struct smq_op *op = q->waiters_head;
            /* A used-up message must not wake a poll it would not be given. */
            engine_dead_letter_due(e, q, op->request_id);
            if (q->n_active == 0)
                break;
            int rc;
            engine_waiter_unlink(e, op);
            if (client_gone(op))
                rc = SMQ_E_MESSAGE_NOT_EXIST;
            else
                rc = e->txn_lost ? SMQ_E_INTERNAL : receive_now(e, op, q);
            engine_complete(e, op, rc);
        }
    }
}

/* Finishes the parked polls whose clients have gone, so their connections
 * are released long before the poll's deadline. */
static void probe_waiters(struct smq_engine *e, uint64_t now_mono)
{
    if (e->n_probed == 0 || now_mono < e->next_probe_mono)
        return;
    e->next_probe_mono = now_mono + PROBE_INTERVAL_MS;
    for (size_t i = 0; i < e->queues.n; i++) {
        struct smq_op *op = e->queues.items[i]->waiters_head;
        while (op != NULL) {
            struct smq_op *next = op->wait_next;
            if (client_gone(op)) {
                engine_waiter_unlink(e, op);
                engine_complete(e, op, SMQ_E_MESSAGE_NOT_EXIST);
            }
            op = next;
        }
    }
}

static void flush_expired(struct smq_engine *e, bool force)
{
    if (e->n_expired == 0 || (!force && !e->txn_open && e->n_expired < EXPIRED_FLUSH_AT))
        return;
    if (write_begin(e) != 0)
        return;
    for (size_t i = 0; i < e->n_expired; i++)
        if (store_msg_delete(e->store, e->expired[i].queue_id, e->expired[i].seq) != 0)
            break;
    write_end(e, 0);
    e->n_expired = 0;
}


/* Whether to leave the transaction open for the next run to join: while
 * the syncer flushes, a commit now would only wait for the next flush. */
static bool defer_commit(struct smq_engine *e, bool force)
{
    return !force && e->txn_open && !e->txn_lost && e->syncer != NULL
           && !syncer_idle(e->syncer);
}

/* Commits the run (or recovers from its loss). */
static void commit_run(struct smq_engine *e)
{
    int rc;

    if (!e->txn_open)
        return;
    rc = e->txn_lost || writes_stopped(e) ? SMQ_E_INTERNAL : store_commit(e->store);
    if (rc != 0) {
        store_rollback(e->store);
        if (!e->txn_lost)
            e->lost_rc = rc;
        e->txn_lost = true;
    } else if (e->syncer != NULL) {
        syncer_committed(e->syncer);    /* the flush this commit needs */
    }
    if (rc == SMQ_E_STORAGE_FULL)
        storage_full(e);
    e->txn_open = false;
}

/* Commits the run, then answers every finished op; or, while a flush is
 * running and force is false, leaves both to a later run. */
static void finish_run(struct smq_engine *e, bool force)
{
    struct smq_op *op;

    if (defer_commit(e, force))
        return;
    commit_run(e);
    engine_oplog_flush(e, !e->txn_lost);
    /* While the disk is full, give the WAL's space back after every run:
     * deletes free pages inside the database, a truncated WAL frees disk. */
    if (e->storage_full && !writes_stopped(e))
        store_checkpoint(e->store);
    if (e->txn_lost) {
        recover_reload(e);
        for (op = e->done_head; op != NULL; op = op->next)
            op_fail(op, e->lost_rc == SMQ_E_STORAGE_FULL ? SMQ_E_STORAGE_FULL
                                                                : SMQ_E_INTERNAL, NULL);
        e->txn_lost = false;
        e->lost_rc = 0;
    }
    op = e->done_head;
    e->done_head = NULL;
    e->done_tail = &e->done_head;
    if (e->syncer != NULL)
        syncer_release(e->syncer, op);
    else
        op_answer(op);
}

void engine_advance_clock(struct smq_engine *e)
{
    uint64_t mono = clock_mono_ms(e->clock);

    e->now_ms = (int64_t)mono + e->tb.epoch_minus_mono_ms;
    storage_recheck(e, mono);
    twheel_advance(&e->msg_wheel, mono);
    twheel_advance(&e->wait_wheel, mono);
    probe_waiters(e, mono);
}

/* Answers every op of ops InternalError, unrun, and finishes the run
 * (which rolls back a transaction a deferred commit left open). */
static void refuse_all(struct smq_engine *e, struct smq_op *ops)
{
    while (ops != NULL) {
        struct smq_op *op = ops;
        ops = ops->next;
        op->next = NULL;
        engine_complete(e, op, SMQ_E_INTERNAL);
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
    if (!writes_stopped(e))
        return false;
    for (size_t i = 0; i < e->queues.n; i++)
        fail_waiters(e, e->queues.items[i], SMQ_E_INTERNAL);
    refuse_all(e, ops);
    return true;
}

void engine_run(struct smq_engine *e, struct smq_op *ops)
{
    if (refuse_after_flush_failure(e, ops) || refuse_while_broken(e, ops))
        return;
    engine_advance_clock(e);
    engine_redrive_tick(e, clock_mono_ms(e->clock));
    serve_ready(e);
    while (ops != NULL) {
        struct smq_op *op = ops;
        int rc;
        ops = ops->next;
        op->next = NULL;
        op->result.err = 0;
        rc = e->txn_lost ? SMQ_E_INTERNAL : exec_op(e, op);
        if (rc != 1)
            engine_complete(e, op, rc);
        serve_ready(e);
    }
    flush_expired(e, false);
    finish_run(e, false);
    if (!writes_stopped(e))     /* a flush may have failed during this run */
        engine_maintain(e, clock_mono_ms(e->clock));
}

uint64_t engine_next_timeout_ms(struct smq_engine *e)
{
    uint64_t now = clock_mono_ms(e->clock);
    uint64_t a, b, probe;

    /* After a failed flush no timer runs (refuse_after_flush_failure): only a
     * new op may wake the engine thread, or it would spin on overdue timers. */
    if (writes_stopped(e))
        return UINT64_MAX;
    if (e->ready_head != NULL)
        return 0;
    /* A commit deferred while the syncer flushes (finish_run) is due when
     * the flush is over; the syncer's idle hook wakes the engine thread then
     * (server_wake takes the lock the sleeping thread checked this under,
     * so the wake-up cannot fall between the check and the sleep). */
    if (e->txn_open && e->syncer != NULL && syncer_idle(e->syncer))
        return 0;
    a = twheel_next_timeout_ms(&e->msg_wheel, now);
    b = twheel_next_timeout_ms(&e->wait_wheel, now);
    /* While broken nothing runs but the retry of the next op's run. */
    probe = e->broken ? UINT64_MAX : engine_redrive_timeout_ms(e, now);
    b = probe < b ? probe : b;
    probe = e->broken ? UINT64_MAX : engine_maintain_timeout_ms(e, now);
    b = probe < b ? probe : b;
    if (e->n_probed > 0) {
        probe = e->next_probe_mono > now ? e->next_probe_mono - now : 0;
        b = probe < b ? probe : b;
    }
    return a < b ? a : b;
}

void engine_drain(struct smq_engine *e)
{
    engine_advance_clock(e);
    for (size_t i = 0; i < e->queues.n; i++)
        fail_waiters(e, e->queues.items[i], SMQ_E_MESSAGE_NOT_EXIST);
    flush_expired(e, true);
    finish_run(e, true);
}

void engine_stats(const struct smq_engine *e, struct smq_engine_stats *out)
{
    out->queues = e->queues.n;
    out->messages = e->msgs.count;
    out->waiters = e->n_waiters;
    out->reloads = e->reloads;
    out->storage_full = e->storage_full;
    out->broken = e->broken;
    out->dlq_move_failures = e->dlq_move_failures;
    out->db_pages = e->db_pages;
    out->free_pages = e->free_pages;
    out->page_size = e->page_size;
    out->vacuumed_pages = e->vacuumed_pages;
}

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

const char *engine_check(const struct smq_engine *e)
{
    uint64_t total = 0, waiters = 0;

    for (size_t i = 0; i < e->queues.n; i++) {
        const struct smq_queue *q = e->queues.items[i];
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
        total += n;
        waiters += q->n_waiters;
    }
    if (waiters != e->n_waiters)
        return "the queues' parked long polls and the engine's count differ";
    return total == e->msgs.count ? NULL : "the queues' messages and the message table differ";
}

int engine_open(const struct smq_engine_opts *opts, struct smq_engine **out,
                char *err, size_t err_size)
{
    struct smq_engine *e = calloc(1, sizeof *e);
    uint64_t mono;
    int rc = SMQ_E_NOMEM;

    if (e == NULL)
        goto fail;
    e->clock = opts->clock;
    e->store = opts->store;
    e->max_queues = opts->max_queues > 0 ? opts->max_queues : 1000;
    e->reserve_margin = opts->reserve_margin;
    e->storage_full = opts->reserve_missing;   /* retried at the first run (storage_recheck) */
    if (e->storage_full)
        reclaim_now(e);
    e->done_tail = &e->done_head;
    mono = clock_mono_ms(e->clock);
    e->tb.epoch_minus_mono_ms = clock_epoch_ms(e->clock) - (int64_t)mono;
    twheel_init(&e->msg_wheel, mono, on_msg_timer, e);
    twheel_init(&e->wait_wheel, mono, on_wait_timer, e);
    queue_registry_init(&e->queues);
    if (msg_table_init(&e->msgs) != 0)
        goto fail_engine;
    rc = recover_keys(e);
    if (rc != 0) {
        snprintf(err, err_size, "cannot read or create the receipt-handle keys");
        goto fail_state;
    }
    rc = recover_load(e);
    if (rc != 0) {
        snprintf(err, err_size, "cannot load queues and messages from the store");
        goto fail_state;
    }
    flush_expired(e, true);
    finish_run(e, true);
    *out = e;
    return 0;

fail_state:
    recover_free(e);
    queue_registry_free(&e->queues);
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
    msg_table_free(&e->msgs);
    engine_oplog_free(e);
    free(e);
}

void engine_set_syncer(struct smq_engine *e, struct smq_syncer *syncer)
{
    e->syncer = syncer;
}

/* ---- exports for engine_dlq.c and engine_admin.c (engine_internal.h) ---- */

int engine_write_begin(struct smq_engine *e)
{
    return write_begin(e);
}

int engine_write_end(struct smq_engine *e, int rc)
{
    return write_end(e, rc);
}

void engine_msg_record(const struct smq_msg *m, struct store_msg_rec *r)
{
    msg_rec(m, r);
}

void engine_destroy_queue_msgs(struct smq_engine *e, struct smq_queue *q)
{
    destroy_queue_msgs(e, q);
}

struct smq_queue *engine_queue_by_id(struct smq_engine *e, int64_t id)
{
    for (size_t i = 0; i < e->queues.n; i++)
        if (e->queues.items[i]->id == id)
            return e->queues.items[i];
    return NULL;
}
