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
