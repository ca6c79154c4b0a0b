/*
 * api_queue.h — the queue actions of the MNS API (docs/protocol.md
 * §7.1–§7.5): one handler per route of api.c, and the responses.
 */
#ifndef SMQD_API_QUEUE_H
#define SMQD_API_QUEUE_H

#include "smqd/api_call.h"

/* GET /queues: ListQueue. */
int api_queue_list(const struct api_ctx *ctx, const struct api_request *req,
                   const struct query *query, struct api_call *call, struct smq_errinfo *ei);
/* PUT /queues/{q}: CreateQueue, or SetQueueAttributes with metaoverride=true. */
int api_queue_put(const struct api_ctx *ctx, const struct api_request *req,
                  const struct query *query, struct api_call *call, struct smq_errinfo *ei);
/* GET /queues/{q}: GetQueueAttributes. */
int api_queue_get(const struct api_ctx *ctx, const struct api_request *req,
                  const struct query *query, struct api_call *call, struct smq_errinfo *ei);
/* DELETE /queues/{q}: DeleteQueue. */
int api_queue_delete(const struct api_ctx *ctx, const struct api_request *req,
                     const struct query *query, struct api_call *call, struct smq_errinfo *ei);

/* The paging request headers of a list (docs/protocol.md §7.5), shared by
 * ListQueue, ListTopic and ListSubscriptionByTopic (§13.4.5, §13.6.5):
 * x-mns-prefix (at most SMQ_QUEUE_NAME_MAX bytes; what names of `what`,
 * "queue" or "topic", can be), x-mns-marker and x-mns-ret-number (1..1000;
 * *ret_number keeps its default when absent).  0 or SMQ_E_INVALID_ARGUMENT. */
int api_list_paging(const struct api_request *req, const char *what,
                    char prefix[SMQ_QUEUE_NAME_MAX + 1], char marker[SMQ_QUEUE_NAME_MAX + 1],
                    int *ret_number, struct smq_errinfo *ei);
/* Whether a list asks for each entry's attributes (x-mns-with-meta: true). */
bool api_list_with_meta(const struct api_request *req);

/* The responses of the finished queue actions, one per kind (the renderers
 * of api.c's table, api_render_fn); each returns 0. */
int api_queue_render_created(const struct api_ctx *ctx, const struct api_request *req,
                             struct api_call *call, struct api_response *resp);
/* GetQueueAttributes. */
int api_queue_render_attrs(const struct api_ctx *ctx, const struct api_request *req,
                           struct api_call *call, struct api_response *resp);
int api_queue_render_list(const struct api_ctx *ctx, const struct api_request *req,
                          struct api_call *call, struct api_response *resp);
/* SetQueueAttributes, DeleteQueue: 204 and no body. */
int api_queue_render_no_content(const struct api_ctx *ctx, const struct api_request *req,
                                struct api_call *call, struct api_response *resp);

#endif
