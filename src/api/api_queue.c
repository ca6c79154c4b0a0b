/*
 * api_queue.c — owns the queue-management actions of the MNS API
 * (api_queue.h): CreateQueue, SetQueueAttributes, GetQueueAttributes,
 * DeleteQueue and ListQueue, their request checks and their responses.
 */
#include "api_queue.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "smqd/strnum.h"

struct attr_rule {
    const char *name;       /* element name, used in messages */
    unsigned bit;
    int64_t min, max;
    const char *unit;
    size_t field;           /* offsetof in struct smq_queue_attrs (int64 fields) */
    size_t xml_field;       /* offsetof in struct xml_queue_attrs */
};

static const struct attr_rule attr_rules[] = {
    {"DelaySeconds", SMQ_ATTR_DELAY, 0, SMQ_DELAY_MAX_S, "seconds",
     offsetof(struct smq_queue_attrs, delay_s), offsetof(struct xml_queue_attrs, delay_s)},
    {"MaximumMessageSize", SMQ_ATTR_MAX_MSG_SIZE, SMQ_MSG_SIZE_MIN, SMQ_MSG_SIZE_MAX, "bytes",
     offsetof(struct smq_queue_attrs, max_msg_size), offsetof(struct xml_queue_attrs, max_msg_size)},
    {"MessageRetentionPeriod", SMQ_ATTR_RETENTION, SMQ_RETENTION_MIN_S, SMQ_RETENTION_MAX_S, "seconds",
     offsetof(struct smq_queue_attrs, retention_s), offsetof(struct xml_queue_attrs, retention_s)},
    {"VisibilityTimeout", SMQ_ATTR_VISIBILITY, SMQ_VISIBILITY_MIN_S, SMQ_VISIBILITY_MAX_S, "seconds",
     offsetof(struct smq_queue_attrs, visibility_s), offsetof(struct xml_queue_attrs, visibility_s)},
    {"PollingWaitSeconds", SMQ_ATTR_POLLING_WAIT, 0, SMQ_POLLING_WAIT_MAX_S, "seconds",
     offsetof(struct smq_queue_attrs, polling_wait_s), offsetof(struct xml_queue_attrs, polling_wait_s)},
};

/*
 * The dead-letter policy is set as a whole.  Only an explicit Enabled=False
 * clears it; anything else (Enabled=True, or absent) needs both the target
 * and MaxReceiveCount, so a partial update is refused rather than read as
 * "off".  That the target exists is checked by the engine, which knows
 * the queues.
 */
static int take_dlq_policy(const struct xml_queue_attrs *x, struct smq_op *op,
                           struct smq_errinfo *ei)
{
    struct smq_dlq_policy *p = &op->attrs.values.dlq;
    bool enabled = !x->dlq_enabled.present || x->dlq_enabled.value != 0;
    int rc;

    memset(p, 0, sizeof *p);
    op->attrs.present |= SMQ_ATTR_DLQ;
    if (!enabled)
        return 0;
    if (!x->dlq_target_present || x->dlq_target[0] == '\0')
        return errors_set(ei, SMQ_E_INVALID_ARGUMENT,
                          "The DlqPolicy needs a DeadLetterTargetQueue.");
    rc = qname_check_err(x->dlq_target, strlen(x->dlq_target), ei);
    if (rc != 0)
        return rc;
    if (!x->dlq_max_receive.present || x->dlq_max_receive.value < SMQ_DLQ_MAX_RECEIVE_MIN
        || x->dlq_max_receive.value > SMQ_DLQ_MAX_RECEIVE_MAX)
        return errors_set(ei, SMQ_E_INVALID_ARGUMENT,
                          "The value of MaxReceiveCount should between %d and %d.",
                          SMQ_DLQ_MAX_RECEIVE_MIN, SMQ_DLQ_MAX_RECEIVE_MAX);
    p->enabled = 1;
    snprintf(p->target, sizeof p->target, "%s", x->dlq_target);
    p->max_receive = x->dlq_max_receive.value;
    return 0;
}

/* Copies the present attributes into the op, checking each range
 * (docs/protocol.md §5). */
static int take_attrs(const struct xml_queue_attrs *x, struct smq_op *op, struct smq_errinfo *ei)
{
    for (size_t i = 0; i < sizeof attr_rules / sizeof attr_rules[0]; i++) {
        const struct attr_rule *r = &attr_rules[i];
        const struct xml_opt_i64 *v = (const void *)((const char *)x + r->xml_field);
        if (!v->present)
            continue;
        if (v->value < r->min || v->value > r->max)
            return errors_set(ei, SMQ_E_INVALID_ARGUMENT,
                              "The value of %s should between %lld and %lld %s.", r->name,
                              (long long)r->min, (long long)r->max, r->unit);
        *(int64_t *)(void *)((char *)&op->attrs.values + r->field) = v->value;
        op->attrs.present |= r->bit;
    }
    if (x->logging.present) {
        op->attrs.values.logging = x->logging.value != 0;
        op->attrs.present |= SMQ_ATTR_LOGGING;
    }
    return x->dlq_present ? take_dlq_policy(x, op, ei) : 0;
}

int api_queue_put(const struct api_ctx *ctx, const struct api_request *req,
                  const struct query *query, struct api_call *call, struct smq_errinfo *ei)
{
    const char *meta = query_get(query, "metaoverride");
    struct xml_queue_attrs x;
    bool set = meta != NULL && strcasecmp(meta, "true") == 0;
    int rc;

    (void)ctx;
    call->action = set ? MNS_SET_QUEUE_ATTRIBUTES : MNS_CREATE_QUEUE;
    op_set_kind(&call->op, set ? SMQ_OP_SET_QUEUE : SMQ_OP_CREATE_QUEUE);
    memset(&x, 0, sizeof x);
    /* An absent body creates with defaults (curl users); a present one must be <Queue>. */
    if (req->body_len > 0) {
        rc = xml_parse_queue_attrs(req->body, req->body_len, &x, ei);
        if (rc != 0)
            return rc;
    }
    return take_attrs(&x, &call->op, ei);
}

int api_queue_get(const struct api_ctx *ctx, const struct api_request *req,
                  const struct query *query, struct api_call *call, struct smq_errinfo *ei)
{
    (void)ctx, (void)req, (void)query, (void)ei;
    call->action = MNS_GET_QUEUE_ATTRIBUTES;
    op_set_kind(&call->op, SMQ_OP_GET_QUEUE);
    return 0;
}

int api_queue_delete(const struct api_ctx *ctx, const struct api_request *req,
                     const struct query *query, struct api_call *call, struct smq_errinfo *ei)
{
    (void)ctx, (void)req, (void)query, (void)ei;
    call->action = MNS_DELETE_QUEUE;
    op_set_kind(&call->op, SMQ_OP_DELETE_QUEUE);
    return 0;
}

static int parse_ret_number(const char *text, int *out, struct smq_errinfo *ei)
{
    int64_t v = 0;

    if (text == NULL || *text == '\0')
        return 0;                       /* keep the default */
    if (strnum_i64(text, strlen(text), &v) != 0 || v < 1 || v > 1000)
        return errors_set(ei, SMQ_E_INVALID_ARGUMENT,
                          "The value of x-mns-ret-number should between 1 and 1000.");
    *out = (int)v;
    return 0;
}

int api_list_paging(const struct api_request *req, const char *what,
                    char prefix[SMQ_QUEUE_NAME_MAX + 1], char marker[SMQ_QUEUE_NAME_MAX + 1],
                    int *ret_number, struct smq_errinfo *ei)
{
    const char *p = auth_header_get(req->auth, "x-mns-prefix");
    const char *m = auth_header_get(req->auth, "x-mns-marker");

    /* Longer prefixes or markers than a name can never match one; the
     * marker is opaque to clients, so a garbled one just means "start there". */
    if (p != NULL && strlen(p) > SMQ_QUEUE_NAME_MAX)
        return errors_set(ei, SMQ_E_INVALID_ARGUMENT, "The x-mns-prefix is longer than a %s "
                          "name.", what);
    snprintf(prefix, SMQ_QUEUE_NAME_MAX + 1, "%s", p ? p : "");
    snprintf(marker, SMQ_QUEUE_NAME_MAX + 1, "%s", m ? m : "");
    return parse_ret_number(auth_header_get(req->auth, "x-mns-ret-number"), ret_number, ei);
}

int api_queue_list(const struct api_ctx *ctx, const struct api_request *req,
                   const struct query *query, struct api_call *call, struct smq_errinfo *ei)
{
    struct smq_op *op = &call->op;

    (void)ctx, (void)query;
    call->action = MNS_LIST_QUEUE;
    op_set_kind(op, SMQ_OP_LIST_QUEUES);
    return api_list_paging(req, "queue", op->list.prefix, op->list.marker,
                           &op->list.ret_number, ei);
}

/* ---- responses ------------------------------------------------------------------- */

static void queue_url(const struct api_request *req, const char *name, char *out, size_t size)
{
    snprintf(out, size, "%s://%s/queues/%s", req->scheme, req->host, name);
}

static void attrs_elems(struct smq_buf *b, const struct smq_queue_info *i)
{
    xml_elem_str(b, "QueueName", i->name);
    xml_elem_i64(b, "CreateTime", i->create_s);
    xml_elem_i64(b, "LastModifyTime", i->modify_s);
    xml_elem_i64(b, "DelaySeconds", i->attrs.delay_s);
    xml_elem_i64(b, "MaximumMessageSize", i->attrs.max_msg_size);
    xml_elem_i64(b, "MessageRetentionPeriod", i->attrs.retention_s);
    xml_elem_i64(b, "VisibilityTimeout", i->attrs.visibility_s);
    xml_elem_i64(b, "PollingWaitSeconds", i->attrs.polling_wait_s);
    xml_elem_i64(b, "ActiveMessages", (int64_t)i->n_active);
    xml_elem_i64(b, "InactiveMessages", (int64_t)i->n_inactive);
    xml_elem_i64(b, "DelayMessages", (int64_t)i->n_delayed);
    xml_elem_bool(b, "LoggingEnabled", i->attrs.logging != 0);
    /* Flat, and only when set: the Python SDK's decoder breaks on a nested
     * element inside <Queue> (docs/protocol.md §11), and a queue without a policy
     * answers exactly as the service does. */
    if (i->attrs.dlq.enabled) {
        xml_elem_bool(b, "DlqEnabled", true);
        xml_elem_str(b, "DlqTargetQueue", i->attrs.dlq.target);
        xml_elem_i64(b, "DlqMaxReceiveCount", i->attrs.dlq.max_receive);
    }
}

bool api_list_with_meta(const struct api_request *req)
{
    const char *v = auth_header_get(req->auth, "x-mns-with-meta");
    return v != NULL && strcasecmp(v, "true") == 0;
}

static void render_list(const struct api_request *req, const struct smq_op *op,
                        struct smq_buf *b)
{
    char url[512];
    bool meta = api_list_with_meta(req);

    xml_begin(b, "Queues");
    for (size_t i = 0; i < op->list.n_queues; i++) {
        xml_open(b, "Queue");
        queue_url(req, op->list.queues[i].name, url, sizeof url);
        xml_elem_str(b, "QueueURL", url);
        if (meta)
            attrs_elems(b, &op->list.queues[i]);
        xml_close(b, "Queue");
    }
    if (op->list.next_marker[0] != '\0')
        xml_elem_str(b, "NextMarker", op->list.next_marker);
    xml_close(b, "Queues");
}

/* ---- the renderers of api.c's table of kinds ------------------------------------------ */

/* CreateQueue: 201 when it made the queue, 204 when it was there as asked. */
int api_queue_render_created(const struct api_ctx *ctx, const struct api_request *req,
                             struct api_call *call, struct api_response *resp)
{
    (void)ctx;
    resp->status = call->op.attrs.created ? 201 : 204;
    queue_url(req, call->op.queue, resp->location, sizeof resp->location);
    return 0;
}

int api_queue_render_attrs(const struct api_ctx *ctx, const struct api_request *req,
                           struct api_call *call, struct api_response *resp)
{
    (void)ctx, (void)req;
    resp->status = 200;
    xml_begin(&resp->body, "Queue");
    attrs_elems(&resp->body, &call->op.info);
    xml_close(&resp->body, "Queue");
    return 0;
}

int api_queue_render_list(const struct api_ctx *ctx, const struct api_request *req,
                          struct api_call *call, struct api_response *resp)
{
    (void)ctx;
    resp->status = 200;
    render_list(req, &call->op, &resp->body);
    return 0;
}

int api_queue_render_no_content(const struct api_ctx *ctx, const struct api_request *req,
                                struct api_call *call, struct api_response *resp)
{
    (void)ctx, (void)req, (void)call;
    resp->status = 204;
    return 0;
}
