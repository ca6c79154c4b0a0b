/*
 * admin_api.h — the admin listener's JSON API (docs/admin-api.md, prefix
 * /v1): from a request (method and raw request target) to the engine
 * operations that answer it, and from the finished operations to the JSON
 * reply.  Every input is checked here (queue names like the MNS API,
 * numbers strictly, ranges from engine.h); nothing here touches sockets,
 * threads or engine state, so it is unit-tested directly (test_admin_api).
 */
#ifndef SMQD_ADMIN_API_H
#define SMQD_ADMIN_API_H

#include <stddef.h>
#include <stdint.h>

#include "smqd/buf.h"
#include "smqd/handle.h"
#include "smqd/op.h"

/* A reply as admin.c sends it. */
struct admin_reply {
    int status;
    const char *content_type;    /* a literal */
    const char *allow;           /* 405: the Allow header value; else NULL */
    struct smq_buf body;
};

void admin_reply_init(struct admin_reply *r);
void admin_reply_free(struct admin_reply *r);
/* Replaces r with {"error":code,"message":...} and the status. */
void admin_reply_error(struct admin_reply *r, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The same for an SMQ_E_* error (status and code from the MNS table). */
void admin_reply_errinfo(struct admin_reply *r, const struct smq_errinfo *ei);

enum admin_job_kind {
    ADMIN_JOB_LIST,              /* GET /v1/queues */
    ADMIN_JOB_QUEUE,             /* GET /v1/queues/NAME */
    ADMIN_JOB_PEEK,              /* GET /v1/queues/NAME/messages */
    ADMIN_JOB_PURGE,             /* POST /v1/queues/NAME/purge */
    ADMIN_JOB_REDRIVE,           /* POST /v1/queues/NAME/redrive */
    ADMIN_JOB_SET,               /* PUT /v1/queues/NAME/attributes: SET, then STATS */
    ADMIN_JOB_TOPICS,            /* GET /v1/topics: one page of LIST_TOPICS */
    ADMIN_JOB_SUBSCRIPTIONS,     /* GET /v1/topics/NAME/subscriptions: one page of
                                  * LIST_SUBSCRIPTIONS */
    ADMIN_JOB__COUNT             /* not a kind: how many there are (admin_api.c's table) */
};

#define ADMIN_JOB_MAX_OPS 2

/* The engine operations of one API request, submitted in order. */
struct admin_job {
    enum admin_job_kind kind;
    struct smq_op ops[ADMIN_JOB_MAX_OPS];
    size_t n_ops;
};

/*
 * Decides one /v1 request.  path and query are raw (still percent-encoded;
 * query may be NULL).  0: job->ops[0..n_ops) are initialised and ready to
 * submit.  Otherwise an SMQ_E_* code: the request is answered by reply
 * (an error).  The job must be released with admin_api_release either way.
 */
int admin_api_prepare(const char *method, const char *path, const char *query,
                      struct admin_job *job, struct admin_reply *reply);

/* Renders the finished job (success or the first failed op) into reply.
 * now_ms (epoch) turns oldest EnqueueTimes into ages; keys format the
 * MessageIds of peeked messages. */
void admin_api_render(const struct admin_job *job, const struct handle_keys *keys,
                      int64_t now_ms, struct admin_reply *reply);

void admin_api_release(struct admin_job *job);

/* True when admin_api.c's table of job kinds has a full row for kind:
 * tests check every kind has one. */
bool admin_api_has_job(enum admin_job_kind kind);

/* Appends the QUEUE object of docs/admin-api.md for st. */
void admin_api_queue_json(struct smq_buf *b, const struct smq_queue_stats *st, int64_t now_ms);
/* Appends the TOPIC and SUBSCRIPTION objects of docs/admin-api.md. */
void admin_api_topic_json(struct smq_buf *b, const struct smq_topic_info *t);
void admin_api_sub_json(struct smq_buf *b, const struct smq_sub_info *s);

#endif
