/*
 * run_queue.c — owns the engine side of the queue actions (run_queue.h):
 * attributes with their defaults and the dead-letter target check, queue
 * ids, idempotent create and delete, and listing by prefix and marker.
 */
#include "run_queue.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "listing.h"
#include "msgs.h"

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
 * handled when a message would move, msgs.h). */
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

/* CreateQueue on an existing queue: 204 if the request names the same
 * attributes, else QueueAlreadyExist. */
static int create_existing(const struct smq_op *op, const struct smq_queue *q,
                           struct smq_queue_attrs *attrs)
{
    /* No SDK can send the policy: a CreateQueue that does not name one
     * must stay idempotent on a queue that has one. */
    if (!(op->attrs.present & SMQ_ATTR_DLQ))
        attrs->dlq = q->attrs.dlq;
    return mns_attrs_equal(attrs, &q->attrs) ? 0 : SMQ_E_QUEUE_ALREADY_EXIST;
}

/* Writes the new queue's row, and a mark past its id: queue ids are never
 * reused either (store.h). */
static int insert_queue(struct smq_engine *e, const struct smq_queue *q)
{
    struct store_queue_rec rec;
    int rc;

    queue_rec(q, &rec);
    rc = txn_write_begin(&e->txn);
    if (rc == 0)
        rc = store_queue_insert(e->store, &rec);
    if (rc == 0)
        rc = msgs_write_mark(e, META_NEXT_QUEUE_ID, (uint64_t)e->ids.next_queue_id + 1);
    return txn_write_end(&e->txn, rc);
}

int run_queue_create(struct smq_engine *e, struct smq_op *op)
{
    struct smq_queue_attrs attrs;
    struct smq_queue *q = queue_registry_find(&e->queues, op->queue);
    int64_t now_s = e->now_ms / 1000;
    int rc;

    mns_default_attrs(&attrs);
    mns_overlay_attrs(&attrs, &op->attrs.values, op->attrs.present);
    op->attrs.created = false;
    if (q != NULL)
        return create_existing(op, q, &attrs);
    if (e->space.full)
        return errors_set(&op->result, SMQ_E_STORAGE_FULL, "%s",
                          space_refusal(&e->space));
    rc = check_dlq(e, op, op->queue, &attrs);
    if (rc != 0)
        return rc;
    if (e->queues.n >= (size_t)e->max_queues)
        return errors_set(&op->result, SMQ_E_TOO_MANY_QUEUES,
                          "The number of queues has reached the limit of %d.", e->max_queues);
    if (queue_registry_reserve(&e->queues) != 0
        || (q = queue_new(e->ids.next_queue_id, op->queue, &attrs, now_s, now_s)) == NULL)
        return SMQ_E_NOMEM;
    rc = insert_queue(e, q);
    if (rc != 0) {
        queue_free(q);
        return rc;
    }
    e->ids.next_queue_id++;
    queue_registry_insert(&e->queues, q);
    op->attrs.created = true;
    return 0;
}

int run_queue_set(struct smq_engine *e, struct smq_op *op, struct smq_queue *q)
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
    rc = txn_write_begin(&e->txn);
    if (rc == 0)
        rc = store_queue_update(e->store, &rec);
    rc = txn_write_end(&e->txn, rc);
    if (rc == 0) {
        q->attrs = updated.attrs;
        q->modify_s = updated.modify_s;
    }
    return rc;
}

int run_queue_get(struct smq_engine *e, struct smq_op *op, struct smq_queue *q)
{
    (void)e;
    queue_info(q, &op->info);
    return 0;
}

int run_queue_delete(struct smq_engine *e, struct smq_op *op)
{
    struct smq_queue *q = queue_registry_find(&e->queues, op->queue);
    int rc;

    if (q == NULL)
        return 0;               /* idempotent, like the service (docs/protocol.md §7.4) */
    rc = txn_write_begin(&e->txn);
    if (rc == 0)
        rc = store_queue_delete(e->store, q->id);
    rc = txn_write_end(&e->txn, rc);
    if (rc != 0)
        return rc;
    waiters_fail_queue(&e->waiters, q, SMQ_E_QUEUE_NOT_EXIST);
    msgs_destroy_queue(e, q);
    queue_registry_remove(&e->queues, q);
    waiters_forget_queue(&e->waiters, q);
    queue_free(q);
    return 0;
}

static const char *queue_name_at(const void *set, size_t i)
{
    return ((const struct queue_registry *)set)->items[i]->name;
}

static size_t queue_lower_bound(const void *set, const char *name)
{
    return queue_registry_lower_bound(set, name);
}

struct queue_page {
    const struct queue_registry *r;
    struct smq_op_list *l;
};

static void take_queue(void *arg, size_t i)
{
    struct queue_page *pg = arg;

    queue_info(pg->r->items[i], &pg->l->queues[pg->l->n_queues++]);
}

int run_queue_list(struct smq_engine *e, struct smq_op *op)
{
    struct smq_op_list *l = &op->list;
    struct listing_set set = {&e->queues, e->queues.n, queue_name_at, queue_lower_bound};
    struct listing_page page = {l->prefix, l->marker, (size_t)l->ret_number, l->visible,
                                l->next_marker, sizeof l->next_marker};
    struct queue_page pg = {&e->queues, l};

    l->queues = calloc(page.limit > 0 ? page.limit : 1, sizeof *l->queues);
    if (l->queues == NULL)
        return SMQ_E_NOMEM;
    listing_walk(&set, &page, take_queue, &pg);
    return 0;
}
