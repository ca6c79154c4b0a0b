/*
 * admin_api.c — owns the JSON API of the admin listener (admin_api.h,
 * docs/admin-api.md): routing of /v1 paths, strict checks of every query
 * parameter, and the answers, tied together by one table with a row per
 * kind of job (its route, how it is prepared, how it is answered); the
 * documents of a queue, topic and subscription are admin_json.c's.
 *
 * Strictness is deliberate: this API can purge queues, so a typo must fail
 * loudly (unknown or repeated parameters, "12abc", "+5", out-of-range
 * values are 400) instead of silently doing something else.
 */
#include "smqd/admin_api.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "smqd/json.h"
#include "smqd/query.h"
#include "smqd/strnum.h"

#define JSON_CT "application/json"

/* ---- replies --------------------------------------------------------------- */

void admin_reply_init(struct admin_reply *r)
{
    memset(r, 0, sizeof *r);
    buf_init(&r->body);
    r->status = 200;
    r->content_type = JSON_CT;
}

void admin_reply_free(struct admin_reply *r)
{
    buf_free(&r->body);
}

void admin_reply_error(struct admin_reply *r, int status, const char *code, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);   /* a cut message is still a message */
    va_end(ap);
    r->status = status;
    r->content_type = JSON_CT;
    buf_reset(&r->body);
    buf_puts(&r->body, "{\"error\":");
    json_cstr(&r->body, code);
    buf_puts(&r->body, ",\"message\":");
    json_cstr(&r->body, msg);
    buf_puts(&r->body, "}\n");
}

void admin_reply_errinfo(struct admin_reply *r, const struct smq_errinfo *ei)
{
    const struct smq_error_info *info = errors_info(ei->err);

    admin_reply_error(r, info->http_status, info->code, "%s", errors_message(ei));
}

/* A 400 InvalidArgument; returns SMQ_E_INVALID_ARGUMENT so that callers can
 * `return bad_argument(...)`. */
__attribute__((format(printf, 2, 3)))
static int bad_argument(struct admin_reply *r, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    admin_reply_error(r, 400, "InvalidArgument", "%s", msg);
    return SMQ_E_INVALID_ARGUMENT;
}

/* ---- strict values ---------------------------------------------------------- */

/* Digits only (no sign, no blanks), no overflow, min..max. */
static bool parse_u64(const char *v, uint64_t min, uint64_t max, uint64_t *out)
{
    uint64_t n;

    if (v == NULL || strnum_u64(v, strlen(v), &n) != 0 || n < min || n > max)
        return false;
    *out = n;
    return true;
}

static bool parse_bool(const char *v, bool *out)
{
    if (strcasecmp(v, "true") == 0)
        *out = true;
    else if (strcasecmp(v, "false") == 0)
        *out = false;
    else
        return false;
    return true;
}

/* Copies a checked queue name (the MNS API's rule, query.h). */
static int take_queue_name(const char *raw, size_t len, char out[SMQ_QUEUE_NAME_MAX + 1],
                           struct admin_reply *r)
{
    struct smq_errinfo ei = {0, ""};

    if (query_queue_name(raw, len, out, &ei) != 0) {
        admin_reply_errinfo(r, &ei);
        return ei.err;
    }
    return 0;
}

/* Copies a checked topic name: the queue-name rule (docs/protocol.md §13),
 * refused with the topic's own error codes. */
static int take_topic_name(const char *raw, size_t len, char out[SMQ_TOPIC_NAME_MAX + 1],
                           struct admin_reply *r)
{
    struct smq_errinfo ei = {0, ""};
    int err;

    if (query_queue_name(raw, len, out, &ei) == 0)
        return 0;
    err = ei.err == SMQ_E_QUEUE_NAME_LENGTH ? SMQ_E_TOPIC_NAME_LENGTH : SMQ_E_TOPIC_NAME_INVALID;
    errors_set(&ei, err, NULL);
    admin_reply_errinfo(r, &ei);
    return err;
}

/* ---- query parameters --------------------------------------------------------- */

/* Every parameter must be one of allowed (NULL-terminated) and appear once. */
static int check_params(const struct query *q, const char *const *allowed,
                        struct admin_reply *r)
{
    for (size_t i = 0; i < q->n; i++) {
        bool known = false;
        for (size_t a = 0; allowed[a] != NULL && !known; a++)
            known = strcasecmp(q->names[i], allowed[a]) == 0;
        if (!known)
            return bad_argument(r, "Unknown query parameter \"%.64s\".", q->names[i]);
        for (size_t j = 0; j < i; j++)
            if (strcasecmp(q->names[i], q->names[j]) == 0)
                return bad_argument(r, "Query parameter \"%.64s\" is given twice.", q->names[i]);
    }
    return 0;
}

static int prepare_peek(const struct query *q, struct admin_job *job, struct admin_reply *r)
{
    static const char *const allowed[] = {"n", NULL};
    struct smq_op *op = &job->ops[0];
    const char *n = query_get(q, "n");
    uint64_t v = SMQ_BATCH_MAX;
    int rc = check_params(q, allowed, r);

    if (rc != 0)
        return rc;
    if (n != NULL && !parse_u64(n, 1, SMQ_BATCH_MAX, &v))
        return bad_argument(r, "n must be an integer from 1 to 16, not \"%.64s\".", n);
    op_set_kind(op, SMQ_OP_PEEK);
    op->recv.max_msgs = (int)v;
    return 0;
}

static int prepare_purge(const struct query *q, struct admin_job *job, struct admin_reply *r)
{
    static const char *const allowed[] = {"type", NULL};
    struct smq_op *op = &job->ops[0];
    const char *type = query_get(q, "type");
    int rc = check_params(q, allowed, r);

    if (rc != 0)
        return rc;
    op_set_kind(op, SMQ_OP_PURGE);
    if (type == NULL || strcmp(type, "normal") == 0)
        op->purge.main = true;
    else if (strcmp(type, "dlq") == 0)
        op->purge.dlq = true;
    else if (strcmp(type, "both") == 0)
        op->purge.main = op->purge.dlq = true;
    else
        return bad_argument(r, "type must be normal, dlq or both, not \"%.64s\".", type);
    return 0;
}

#define REDRIVE_RATE_MAX 100000u
#define REDRIVE_RATE_DEFAULT 100u
/* Far above any queue smqd can hold; only there to reject nonsense. */
#define REDRIVE_MAX_MAX 1000000000000ull

static int prepare_redrive(const struct query *q, struct admin_job *job, struct admin_reply *r)
{
    static const char *const allowed[] = {"rate", "max", NULL};
    struct smq_op *op = &job->ops[0];
    const char *rate = query_get(q, "rate"), *max = query_get(q, "max");
    uint64_t rate_v = REDRIVE_RATE_DEFAULT, max_v = 0;
    int rc = check_params(q, allowed, r);

    if (rc != 0)
        return rc;
    if (rate != NULL && !parse_u64(rate, 1, REDRIVE_RATE_MAX, &rate_v))
        return bad_argument(r, "rate must be an integer from 1 to 100000, not \"%.64s\".", rate);
    if (max != NULL && !parse_u64(max, 0, REDRIVE_MAX_MAX, &max_v))
        return bad_argument(r, "max must be an integer from 0 (all) to 10^12, not \"%.64s\".",
                            max);
    op_set_kind(op, SMQ_OP_REDRIVE);
    op->redrive.rate_per_s = (uint32_t)rate_v;
    op->redrive.max = max_v;
    return 0;
}

/* The most a listing page holds: the engine's bound on ret_number (op.h). */
#define LIST_LIMIT_MAX 1000

/* A name-like parameter (prefix, marker) into out, at most a name long. */
static int take_name_param(const char *name, const char *v, char out[SMQ_TOPIC_NAME_MAX + 1],
                           struct admin_reply *r)
{
    size_t len = v != NULL ? strlen(v) : 0;

    if (len > SMQ_TOPIC_NAME_MAX)
        return bad_argument(r, "%s must be at most %d characters.", name, SMQ_TOPIC_NAME_MAX);
    memcpy(out, v != NULL ? v : "", len + 1);
    return 0;
}

/*
 * The paging of the topic and subscription listings: ?prefix=&marker=&limit=.
 * A page is what one engine op can answer (up to 1000 names, where
 * [limits] max_topics may allow a million), so the client follows
 * next_marker, as over the MNS API (docs/admin-api.md).
 */
static int take_page(const struct query *q, char prefix[SMQ_TOPIC_NAME_MAX + 1],
                     char marker[SMQ_TOPIC_NAME_MAX + 1], int *ret_number, struct admin_reply *r)
{
    static const char *const allowed[] = {"prefix", "marker", "limit", NULL};
    const char *limit = query_get(q, "limit");
    uint64_t n = LIST_LIMIT_MAX;
    int rc = check_params(q, allowed, r);

    if (rc == 0 && limit != NULL && !parse_u64(limit, 1, LIST_LIMIT_MAX, &n))
        rc = bad_argument(r, "limit must be an integer from 1 to 1000, not \"%.64s\".", limit);
    if (rc == 0)
        rc = take_name_param("prefix", query_get(q, "prefix"), prefix, r);
    if (rc == 0)
        rc = take_name_param("marker", query_get(q, "marker"), marker, r);
    *ret_number = (int)n;
    return rc;
}

/* Every topic, as the admin sees them all (visible = NULL). */
static int prepare_topics(const struct query *q, struct admin_job *job, struct admin_reply *r)
{
    struct smq_op *op = &job->ops[0];

    op_set_kind(op, SMQ_OP_LIST_TOPICS);
    op->tlist.visible = NULL;
    return take_page(q, op->tlist.prefix, op->tlist.marker, &op->tlist.ret_number, r);
}

/* One topic's subscriptions: op->queue is the topic (op.h). */
static int prepare_subscriptions(const struct query *q, struct admin_job *job,
                                 struct admin_reply *r)
{
    struct smq_op *op = &job->ops[0];

    op_set_kind(op, SMQ_OP_LIST_SUBSCRIPTIONS);
    return take_page(q, op->slist.prefix, op->slist.marker, &op->slist.ret_number, r);
}

/* ---- queue attributes ----------------------------------------------------------- */

struct int_attr {
    const char *name;
    unsigned bit;
    uint64_t min, max;
    size_t field;                /* int64_t in struct smq_queue_attrs */
};

static const struct int_attr int_attrs[] = {
    {"DelaySeconds", SMQ_ATTR_DELAY, 0, SMQ_DELAY_MAX_S,
     offsetof(struct smq_queue_attrs, delay_s)},
    {"MaximumMessageSize", SMQ_ATTR_MAX_MSG_SIZE, SMQ_MSG_SIZE_MIN, SMQ_MSG_SIZE_MAX,
     offsetof(struct smq_queue_attrs, max_msg_size)},
    {"MessageRetentionPeriod", SMQ_ATTR_RETENTION, SMQ_RETENTION_MIN_S, SMQ_RETENTION_MAX_S,
     offsetof(struct smq_queue_attrs, retention_s)},
    {"VisibilityTimeout", SMQ_ATTR_VISIBILITY, SMQ_VISIBILITY_MIN_S, SMQ_VISIBILITY_MAX_S,
     offsetof(struct smq_queue_attrs, visibility_s)},
    {"PollingWaitSeconds", SMQ_ATTR_POLLING_WAIT, 0, SMQ_POLLING_WAIT_MAX_S,
     offsetof(struct smq_queue_attrs, polling_wait_s)},
};

#define N_INT_ATTRS (sizeof int_attrs / sizeof int_attrs[0])

/* The dead-letter parameters, collected before they become one policy. */
struct dlq_params {
    const char *enabled, *target, *max_receive;
};

static int take_int_attr(const struct int_attr *a, const char *v, struct smq_op *op,
                         struct admin_reply *r)
{
    uint64_t n;

    if (!parse_u64(v, a->min, a->max, &n)) {
        admin_reply_error(r, 400, "InvalidArgument",
                          "%s must be an integer from %llu to %llu.", a->name,
                          (unsigned long long)a->min, (unsigned long long)a->max);
        return SMQ_E_INVALID_ARGUMENT;
    }
    *(int64_t *)(void *)((char *)&op->attrs.values + a->field) = (int64_t)n;
    op->attrs.present |= a->bit;
    return 0;
}

/* One NAME=VALUE of PUT .../attributes. */
static int take_attr(const char *name, const char *v, struct smq_op *op, struct dlq_params *d,
                     struct admin_reply *r)
{
    bool b;

    for (size_t i = 0; i < N_INT_ATTRS; i++)
        if (strcasecmp(name, int_attrs[i].name) == 0)
            return take_int_attr(&int_attrs[i], v, op, r);
    if (strcasecmp(name, "LoggingEnabled") == 0) {
        if (!parse_bool(v, &b))
            return bad_argument(r, "LoggingEnabled must be true or false, not \"%.64s\".", v);
        op->attrs.values.logging = b;
        op->attrs.present |= SMQ_ATTR_LOGGING;
        return 0;
    }
    if (strcasecmp(name, "DlqEnabled") == 0)
        d->enabled = v;
    else if (strcasecmp(name, "DlqTargetQueue") == 0)
        d->target = v;
    else if (strcasecmp(name, "DlqMaxReceiveCount") == 0)
        d->max_receive = v;
    else
        return bad_argument(r, "Unknown queue attribute \"%.64s\".", name);
    return 0;
}

/*
 * The three Dlq* parameters replace the whole policy (SMQ_ATTR_DLQ).
 * DlqEnabled=false clears it and takes nothing else; otherwise (true, or
 * absent next to the other two) both the target and the count are needed,
 * so a policy is never half-specified.
 */
static int take_dlq(const struct dlq_params *d, struct smq_op *op, struct admin_reply *r)
{
    struct smq_dlq_policy *p = &op->attrs.values.dlq;
    struct smq_errinfo ei = {0, ""};
    bool enabled = true;
    uint64_t n;

    if (d->enabled == NULL && d->target == NULL && d->max_receive == NULL)
        return 0;
    if (d->enabled != NULL && !parse_bool(d->enabled, &enabled))
        return bad_argument(r, "DlqEnabled must be true or false, not \"%.64s\".", d->enabled);
    op->attrs.present |= SMQ_ATTR_DLQ;
    memset(p, 0, sizeof *p);
    if (!enabled) {
        if (d->target != NULL || d->max_receive != NULL)
            return bad_argument(r, "%s", "DlqEnabled=false clears the policy; do not also give "
                                "DlqTargetQueue or DlqMaxReceiveCount.");
        return 0;
    }
    if (d->target == NULL || d->max_receive == NULL)
        return bad_argument(r, "%s", "A dead-letter policy needs both DlqTargetQueue and "
                            "DlqMaxReceiveCount.");
    if (qname_check_err(d->target, strlen(d->target), &ei) != 0) {
        admin_reply_errinfo(r, &ei);
        return ei.err;
    }
    if (strcmp(d->target, op->queue) == 0)
        return bad_argument(r, "%s", "A queue cannot be its own dead-letter queue.");
    if (!parse_u64(d->max_receive, SMQ_DLQ_MAX_RECEIVE_MIN, SMQ_DLQ_MAX_RECEIVE_MAX, &n))
        return bad_argument(r, "DlqMaxReceiveCount must be an integer from 1 to 1000, not "
                            "\"%.64s\".", d->max_receive);
    p->enabled = 1;
    memcpy(p->target, d->target, strlen(d->target) + 1);
    p->max_receive = (int64_t)n;
    return 0;
}

static int prepare_set(const struct query *q, struct admin_job *job, struct admin_reply *r)
{
    struct smq_op *set = &job->ops[0], *stats = &job->ops[1];
    struct dlq_params d = {NULL, NULL, NULL};
    int rc;

    op_set_kind(set, SMQ_OP_SET_QUEUE);
    for (size_t i = 0; i < q->n; i++) {
        for (size_t j = 0; j < i; j++)
            if (strcasecmp(q->names[i], q->names[j]) == 0)
                return bad_argument(r, "Attribute \"%.64s\" is given twice.", q->names[i]);
        if ((rc = take_attr(q->names[i], q->values[i], set, &d, r)) != 0)
            return rc;
    }
    if ((rc = take_dlq(&d, set, r)) != 0)
        return rc;
    if (set->attrs.present == 0)
        return bad_argument(r, "%s", "Give at least one attribute, e.g. ?VisibilityTimeout=60.");
    /* The answer is the queue after the change: a STATS right behind the SET
     * in the engine's inbox sees its result (ops run in order). */
    op_init(stats, SMQ_OP_STATS);
    memcpy(stats->queue, set->queue, sizeof stats->queue);
    job->n_ops = 2;
    return 0;
}

/* ---- rendering ------------------------------------------------------------------------ */

/* The renderers of the table of job kinds: each answers a job whose ops all
 * succeeded, into r (200, JSON, an empty body). */

static void render_list(const struct admin_job *job, const struct handle_keys *keys,
                        int64_t now_ms, struct admin_reply *r)
{
    const struct smq_op *op = &job->ops[0];
    struct smq_buf *b = &r->body;

    (void)keys;
    buf_puts(b, "{\"queues\":[");
    for (size_t i = 0; i < op->stats.n_queues; i++) {
        if (i > 0)
            buf_puts(b, ",");
        admin_api_queue_json(b, &op->stats.queues[i], now_ms);
    }
    buf_puts(b, "]}\n");
}

static void render_queue_stats(const struct smq_op *op, int64_t now_ms, struct admin_reply *r)
{
    if (op->stats.n_queues != 1) {              /* the engine found it; cannot happen */
        admin_reply_error(r, 500, "InternalError", "%s", "The queue statistics are missing.");
        return;
    }
    admin_api_queue_json(&r->body, &op->stats.queues[0], now_ms);
    buf_puts(&r->body, "\n");
}

static void render_queue(const struct admin_job *job, const struct handle_keys *keys,
                         int64_t now_ms, struct admin_reply *r)
{
    (void)keys;
    render_queue_stats(&job->ops[0], now_ms, r);
}

/* The queue after the change: the STATS behind the SET (prepare_set). */
static void render_set(const struct admin_job *job, const struct handle_keys *keys,
                       int64_t now_ms, struct admin_reply *r)
{
    (void)keys;
    render_queue_stats(&job->ops[1], now_ms, r);
}

static void render_peek(const struct admin_job *job, const struct handle_keys *keys,
                        int64_t now_ms, struct admin_reply *r)
{
    const struct smq_op *op = &job->ops[0];
    struct smq_buf *b = &r->body;
    char id[MSGID_TEXT_LEN + 1];

    (void)now_ms;
    buf_puts(b, "{\"messages\":[");
    for (size_t i = 0; i < op->recv.n_msgs; i++) {
        const struct smq_msg_view *m = &op->recv.msgs[i];
        msgid_format(keys, m->seq, id);
        buf_printf(b, "%s{\"id\":\"%s\",\"enqueue_time_ms\":%lld,\"first_dequeue_time_ms\":%lld,"
                   "\"dequeue_count\":%u,\"priority\":%d,\"body\":",
                   i > 0 ? "," : "", id, (long long)m->enqueue_ms,
                   (long long)m->first_dequeue_ms, (unsigned)m->dequeue_count, m->priority);
        json_str(b, m->body != NULL ? m->body : "", m->body != NULL ? m->body_len : 0);
        buf_puts(b, "}");
    }
    buf_puts(b, "]}\n");
}

static void render_purge(const struct admin_job *job, const struct handle_keys *keys,
                         int64_t now_ms, struct admin_reply *r)
{
    const struct smq_op *op = &job->ops[0];

    (void)keys, (void)now_ms;
    buf_printf(&r->body, "{\"purged\":%llu,\"dlq_purged\":%llu}\n",
               (unsigned long long)op->purge.n_main, (unsigned long long)op->purge.n_dlq);
}

static void render_redrive(const struct admin_job *job, const struct handle_keys *keys,
                           int64_t now_ms, struct admin_reply *r)
{
    const struct smq_op *op = &job->ops[0];

    (void)keys, (void)now_ms;
    buf_printf(&r->body, "{\"scheduled\":%llu,\"rate\":%u}\n",
               (unsigned long long)op->redrive.n_scheduled, (unsigned)op->redrive.rate_per_s);
}

/* {"<key>":[...],"next_marker":"..."}: one page of a listing. */
static void render_page_end(struct smq_buf *b, const char *next_marker)
{
    buf_puts(b, "],\"next_marker\":");
    json_cstr(b, next_marker);
    buf_puts(b, "}\n");
}

static void render_topics(const struct admin_job *job, const struct handle_keys *keys,
                          int64_t now_ms, struct admin_reply *r)
{
    const struct smq_op_tlist *l = &job->ops[0].tlist;

    (void)keys, (void)now_ms;
    buf_puts(&r->body, "{\"topics\":[");
    for (size_t i = 0; i < l->n_topics; i++) {
        if (i > 0)
            buf_puts(&r->body, ",");
        admin_api_topic_json(&r->body, &l->topics[i]);
    }
    render_page_end(&r->body, l->next_marker);
}

static void render_subscriptions(const struct admin_job *job, const struct handle_keys *keys,
                                 int64_t now_ms, struct admin_reply *r)
{
    const struct smq_op_slist *l = &job->ops[0].slist;

    (void)keys, (void)now_ms;
    buf_puts(&r->body, "{\"subscriptions\":[");
    for (size_t i = 0; i < l->n_subs; i++) {
        if (i > 0)
            buf_puts(&r->body, ",");
        admin_api_sub_json(&r->body, &l->subs[i]);
    }
    render_page_end(&r->body, l->next_marker);
}

/* ---- the table of job kinds ------------------------------------------------------------ */

/* The prepare step of the two jobs that are one STATS op (list, one queue). */
static int prepare_stats(const struct query *q, struct admin_job *job, struct admin_reply *r)
{
    static const char *const none[] = {NULL};

    op_set_kind(&job->ops[0], SMQ_OP_STATS);
    return check_params(q, none, r);
}

/*
 * Each kind of job: its route, how its query becomes ops (the queue name is
 * taken by then), and how their results become JSON.  One row per kind, so
 * a new admin resource is a row.
 */
static const struct admin_job_row {
    const char *collection;      /* "/v1/queues", "/v1/topics" */
    /* How NAME is checked and copied into ops[0].queue (rows with a suffix). */
    int (*take_name)(const char *raw, size_t len, char out[SMQ_QUEUE_NAME_MAX + 1],
                     struct admin_reply *r);
    const char *suffix;          /* after COLLECTION/NAME ("" = NAME itself);
                                  * NULL = the collection, no name */
    const char *method;
    int (*prepare)(const struct query *q, struct admin_job *job, struct admin_reply *r);
    void (*render)(const struct admin_job *job, const struct handle_keys *keys, int64_t now_ms,
                   struct admin_reply *r);
    bool empty_ok;               /* MessageNotExist is an empty answer, not an error */
} jobs[] = {
/* The first two fields of the rows of each collection. */
#define Q "/v1/queues", take_queue_name
#define T "/v1/topics", take_topic_name
    [ADMIN_JOB_LIST] = {Q, NULL, "GET", prepare_stats, render_list, false},
    [ADMIN_JOB_QUEUE] = {Q, "", "GET", prepare_stats, render_queue, false},
    [ADMIN_JOB_PEEK] = {Q, "/messages", "GET", prepare_peek, render_peek, true},
    [ADMIN_JOB_PURGE] = {Q, "/purge", "POST", prepare_purge, render_purge, false},
    [ADMIN_JOB_REDRIVE] = {Q, "/redrive", "POST", prepare_redrive, render_redrive, false},
    [ADMIN_JOB_SET] = {Q, "/attributes", "PUT", prepare_set, render_set, false},
    [ADMIN_JOB_TOPICS] = {T, NULL, "GET", prepare_topics, render_topics, false},
    [ADMIN_JOB_SUBSCRIPTIONS] = {T, "/subscriptions", "GET", prepare_subscriptions,
                                 render_subscriptions, false},
#undef Q
#undef T
};

/* A kind added without its row fails here; a row left out in the middle
 * fails test_admin_api (admin_api_has_job). */
_Static_assert(sizeof jobs / sizeof jobs[0] == ADMIN_JOB__COUNT,
               "every admin job kind needs its row in admin_api.c's table");

bool admin_api_has_job(enum admin_job_kind kind)
{
    return (unsigned)kind < ADMIN_JOB__COUNT && jobs[kind].collection != NULL
        && jobs[kind].take_name != NULL && jobs[kind].prepare != NULL
        && jobs[kind].render != NULL;
}

/* ---- routing --------------------------------------------------------------------- */

static bool method_is(const char *method, const char *want)
{
    /* HEAD is a GET without the body (libmicrohttpd drops it). */
    return strcmp(method, want) == 0 || (strcmp(want, "GET") == 0 && strcmp(method, "HEAD") == 0);
}

static int wrong_method(struct admin_reply *r, const char *method, const char *allowed)
{
    admin_reply_error(r, 405, "MethodNotAllowed", "%.16s is not allowed here; use %s.", method,
                      allowed);
    r->allow = strcmp(allowed, "GET") == 0 ? "GET, HEAD" : allowed;
    return SMQ_E_INVALID_REQUEST_URL;
}

static int not_found(struct admin_reply *r)
{
    admin_reply_error(r, 404, "NotFound", "%s", "No such admin resource (docs/admin-api.md).");
    return SMQ_E_INVALID_REQUEST_URL;
}

/* Whether path is row's route; *name and *name_len are NAME's raw text then
 * (with a suffix). */
static bool route_matches(const struct admin_job_row *row, const char *path, const char **name,
                          size_t *name_len)
{
    size_t clen = strlen(row->collection);
    const char *rest = path + clen, *slash;

    if (strncmp(path, row->collection, clen) != 0)
        return false;
    if (row->suffix == NULL)
        return *rest == '\0';
    if (*rest != '/' || rest[1] == '\0')
        return false;
    rest++;
    slash = strchr(rest, '/');
    *name = rest;
    *name_len = slash != NULL ? (size_t)(slash - rest) : strlen(rest);
    return strcmp(rest + *name_len, row->suffix) == 0;
}

/* Matches "COLLECTION[/NAME[SUFFIX]]" against the table; sets job->kind and
 * ops[0].queue. */
static int route_path(const char *method, const char *path, struct admin_job *job,
                      struct admin_reply *r)
{
    const char *name = NULL;
    size_t name_len = 0;

    for (size_t i = 0; i < ADMIN_JOB__COUNT; i++) {
        const struct admin_job_row *row = &jobs[i];
        if (!route_matches(row, path, &name, &name_len))
            continue;
        if (!method_is(method, row->method))
            return wrong_method(r, method, row->method);
        job->kind = (enum admin_job_kind)i;
        return row->suffix == NULL ? 0 : row->take_name(name, name_len, job->ops[0].queue, r);
    }
    return not_found(r);
}

int admin_api_prepare(const char *method, const char *path, const char *query,
                      struct admin_job *job, struct admin_reply *reply)
{
    struct query q;
    struct smq_errinfo ei = {0, ""};
    int rc;

    memset(job, 0, sizeof *job);
    op_init(&job->ops[0], SMQ_OP_STATS);
    job->n_ops = 1;
    if ((rc = route_path(method, path, job, reply)) != 0)
        return rc;
    if (query_parse(query, &q, &ei) != 0) {
        query_free(&q);
        admin_reply_errinfo(reply, &ei);
        return ei.err;
    }
    rc = jobs[job->kind].prepare(&q, job, reply);
    query_free(&q);
    return rc;
}

void admin_api_release(struct admin_job *job)
{
    for (size_t i = 0; i < job->n_ops; i++)
        op_release(&job->ops[i]);
    job->n_ops = 0;
}

/* ---- answering ------------------------------------------------------------------------ */

/* The op whose failure answers the request, or NULL when all succeeded.
 * An empty queue is not an error for peek: it is an empty list. */
static const struct smq_op *failed_op(const struct admin_job *job)
{
    for (size_t i = 0; i < job->n_ops; i++) {
        const struct smq_op *op = &job->ops[i];
        if (op->result.err == 0)
            continue;
        if (jobs[job->kind].empty_ok && op->result.err == SMQ_E_MESSAGE_NOT_EXIST)
            continue;
        return op;
    }
    return NULL;
}

void admin_api_render(const struct admin_job *job, const struct handle_keys *keys,
                      int64_t now_ms, struct admin_reply *r)
{
    const struct smq_op *failed = failed_op(job);

    r->status = 200;
    r->content_type = JSON_CT;
    buf_reset(&r->body);
    if (failed != NULL) {
        admin_reply_errinfo(r, &failed->result);
        return;
    }
    jobs[job->kind].render(job, keys, now_ms, r);
}
