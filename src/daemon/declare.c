/*
 * declare.c — applies the configuration's [queue.NAME] sections to the
 * engine at start-up (see declare.h).  The engine thread is not running
 * yet, so each operation is run directly with engine_run, like the server
 * thread would.
 */
#include "declare.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "smqd/log.h"

static void on_done(struct smq_op *op, void *arg)
{
    (void)op;
    *(bool *)arg = true;
}

/* Runs op alone and returns its result. */
static int run_op(struct smq_engine *e, struct smq_op *op)
{
    bool done = false;

    op->done = on_done;
    op->done_arg = &done;
    engine_run(e, op);
    return done ? op->result.err : SMQ_E_INTERNAL;
}

static int create_if_missing(struct smq_engine *e, const struct smq_queue_decl *d)
{
    struct smq_op op;
    int rc;

    op_init(&op, SMQ_OP_CREATE_QUEUE);
    snprintf(op.queue, sizeof op.queue, "%s", d->name);
    rc = run_op(e, &op);
    if (rc == 0 && op.attrs.created)
        SMQ_INFO("config: created queue %s ([queue.%s], line %d)", d->name, d->name, d->line);
    if (rc == SMQ_E_QUEUE_ALREADY_EXIST)
        rc = 0;                 /* exists with other attributes: kept as they are */
    op_release(&op);
    return rc;
}

static int set_dlq_policy(struct smq_engine *e, const struct smq_queue_decl *d,
                          struct smq_errinfo *ei)
{
    struct smq_op op;
    int rc;

    op_init(&op, SMQ_OP_SET_QUEUE);
    snprintf(op.queue, sizeof op.queue, "%s", d->name);
    op.attrs.values.dlq.enabled = 1;
    snprintf(op.attrs.values.dlq.target, sizeof op.attrs.values.dlq.target, "%s", d->dlq_target);
    op.attrs.values.dlq.max_receive = d->dlq_max_receive_count;
    op.attrs.present = SMQ_ATTR_DLQ;
    rc = run_op(e, &op);
    *ei = op.result;
    op_release(&op);
    return rc;
}

static bool declared(const struct smq_queue_decl *decls, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(decls[i].name, name) == 0)
            return true;
    return false;
}

/* GetQueueAttributes: 0 with *info, or SMQ_E_QUEUE_NOT_EXIST. */
static int get_queue(struct smq_engine *e, const char *name, struct smq_queue_info *info)
{
    struct smq_op op;
    int rc;

    op_init(&op, SMQ_OP_GET_QUEUE);
    snprintf(op.queue, sizeof op.queue, "%s", name);
    rc = run_op(e, &op);
    *info = op.info;
    op_release(&op);
    return rc;
}

static bool queue_exists(struct smq_engine *e, const char *name)
{
    struct smq_queue_info info;

    return get_queue(e, name, &info) == 0;
}

/* Already in force: setting it again would only move LastModifyTime. */
static bool policy_in_force(struct smq_engine *e, const struct smq_queue_decl *d)
{
    struct smq_queue_info info;

    return get_queue(e, d->name, &info) == 0 && info.attrs.dlq.enabled
           && strcmp(info.attrs.dlq.target, d->dlq_target) == 0
           && info.attrs.dlq.max_receive == d->dlq_max_receive_count;
}

/* Every target is another queue, declared or existing already: checked
 * before anything is created, so a bad configuration changes nothing. */
static int check_targets(struct smq_engine *e, const struct smq_queue_decl *decls, size_t n,
                         char *err, size_t err_size)
{
    for (size_t i = 0; i < n; i++) {
        const char *t = decls[i].dlq_target;
        if (strcmp(t, decls[i].name) == 0) {
            snprintf(err, err_size, "[queue.%s] (line %d): dlq_target cannot be the queue "
                     "itself", decls[i].name, decls[i].line);
            return SMQ_E_INVALID_ARGUMENT;
        }
        if (t[0] == '\0' || declared(decls, n, t) || queue_exists(e, t))
            continue;
        snprintf(err, err_size, "[queue.%s] (line %d): dlq_target %s is neither declared "
                 "([queue.%s]) nor an existing queue", decls[i].name, decls[i].line, t, t);
        return SMQ_E_INVALID_ARGUMENT;
    }
    return 0;
}

/* The queues to create fit under [limits] max_queues beside those that
 * exist: also the configuration's fault, and also checked first. */
static int check_room(struct smq_engine *e, const struct smq_queue_decl *decls, size_t n,
                      char *err, size_t err_size)
{
    struct smq_engine_stats st;
    size_t queues;

    engine_stats(e, &st);
    queues = st.queues;
    for (size_t i = 0; i < n; i++) {
        if (queue_exists(e, decls[i].name) || ++queues <= (size_t)engine_max_queues(e))
            continue;
        snprintf(err, err_size, "[queue.%s] (line %d): one queue more than [limits] "
                 "max_queues = %d allows", decls[i].name, decls[i].line, engine_max_queues(e));
        return SMQ_E_INVALID_ARGUMENT;
    }
    return 0;
}

int declare_queues(struct smq_engine *e, const struct smq_queue_decl *decls, size_t n,
                   char *err, size_t err_size)
{
    struct smq_errinfo ei;
    int rc;

    rc = check_targets(e, decls, n, err, err_size);
    if (rc == 0)
        rc = check_room(e, decls, n, err, err_size);
    if (rc != 0)
        return rc;
    for (size_t i = 0; i < n; i++) {
        memset(&ei, 0, sizeof ei);
        rc = create_if_missing(e, &decls[i]);
        if (rc != 0) {
            errors_set(&ei, rc, NULL);
            snprintf(err, err_size, "[queue.%s] (line %d): cannot create the queue: %s",
                     decls[i].name, decls[i].line, errors_message(&ei));
            return rc;
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (decls[i].dlq_target[0] == '\0' || policy_in_force(e, &decls[i]))
            continue;
        memset(&ei, 0, sizeof ei);
        rc = set_dlq_policy(e, &decls[i], &ei);
        if (rc != 0) {
            snprintf(err, err_size, "[queue.%s] (line %d): cannot set the dead-letter policy: %s",
                     decls[i].name, decls[i].line, errors_message(&ei));
            return rc;
        }
    }
    return 0;
}
