/*
 * api_topic.h — the topic and subscription actions of the MNS API
 * (docs/protocol.md §13.1–§13.7): the names in their paths, one handler per
 * route of api.c, the grants beyond the topic's own, and the responses.
 */
#ifndef SMQD_API_TOPIC_H
#define SMQD_API_TOPIC_H

#include <stdbool.h>

#include "smqd/api_call.h"

/* Percent-decodes the path segment raw[0..len) into out and checks it as a
 * topic name (subscription false) or a subscription name (true), §13.2:
 * 0, or SMQ_E_TOPIC_NAME_LENGTH / SMQ_E_TOPIC_NAME_INVALID (the
 * SUBSCRIPTION_ ones for a subscription; a bad escape is an invalid name)
 * with ei set. */
int api_topic_name(const char *raw, size_t len, bool subscription,
                   char out[SMQ_TOPIC_NAME_MAX + 1], struct smq_errinfo *ei);

/* GET /topics: ListTopic. */
int api_topic_list(const struct api_ctx *ctx, const struct api_request *req,
                   const struct query *query, struct api_call *call, struct smq_errinfo *ei);
/* PUT /topics/{t}: CreateTopic, or SetTopicAttributes with metaoverride=true. */
int api_topic_put(const struct api_ctx *ctx, const struct api_request *req,
                  const struct query *query, struct api_call *call, struct smq_errinfo *ei);
/* GET /topics/{t}: GetTopicAttributes. */
int api_topic_get(const struct api_ctx *ctx, const struct api_request *req,
                  const struct query *query, struct api_call *call, struct smq_errinfo *ei);
/* DELETE /topics/{t}: DeleteTopic. */
int api_topic_delete(const struct api_ctx *ctx, const struct api_request *req,
                     const struct query *query, struct api_call *call, struct smq_errinfo *ei);
/* POST /topics/{t}/messages: PublishMessage (§13.5).  The op borrows the
 * decoded body from call->publish. */
int api_topic_publish(const struct api_ctx *ctx, const struct api_request *req,
                      const struct query *query, struct api_call *call, struct smq_errinfo *ei);
/* GET /topics/{t}/subscriptions: ListSubscriptionByTopic. */
int api_sub_list(const struct api_ctx *ctx, const struct api_request *req,
                 const struct query *query, struct api_call *call, struct smq_errinfo *ei);
/* PUT /topics/{t}/subscriptions/{s}: Subscribe, or SetSubscriptionAttributes
 * with metaoverride=true. */
int api_sub_put(const struct api_ctx *ctx, const struct api_request *req,
                const struct query *query, struct api_call *call, struct smq_errinfo *ei);
/* GET /topics/{t}/subscriptions/{s}: GetSubscriptionAttributes. */
int api_sub_get(const struct api_ctx *ctx, const struct api_request *req,
                const struct query *query, struct api_call *call, struct smq_errinfo *ei);
/* DELETE /topics/{t}/subscriptions/{s}: Unsubscribe. */
int api_sub_delete(const struct api_ctx *ctx, const struct api_request *req,
                   const struct query *query, struct api_call *call, struct smq_errinfo *ei);

/* The grants a decided topic action needs besides its class on the topic
 * (§13.14): "send" on a Subscribe's queue endpoint and on a dead-letter
 * target being set.  True when the key lacks one: the queue it lacks "send"
 * on into queue, and what that queue is to the request into *what. */
bool api_topic_send_needed(const struct auth_key *key, const struct api_call *call,
                           char queue[SMQ_QUEUE_NAME_MAX + 1], const char **what);

/* The responses of the finished topic actions, one per kind (the renderers
 * of api.c's table, api_render_fn); each returns 0.  SetTopicAttributes,
 * DeleteTopic, SetSubscriptionAttributes and Unsubscribe answer 204 with
 * api_queue_render_no_content. */
int api_topic_render_created(const struct api_ctx *ctx, const struct api_request *req,
                             struct api_call *call, struct api_response *resp);
int api_topic_render_attrs(const struct api_ctx *ctx, const struct api_request *req,
                           struct api_call *call, struct api_response *resp);
int api_topic_render_list(const struct api_ctx *ctx, const struct api_request *req,
                          struct api_call *call, struct api_response *resp);
int api_topic_render_published(const struct api_ctx *ctx, const struct api_request *req,
                               struct api_call *call, struct api_response *resp);
int api_sub_render_created(const struct api_ctx *ctx, const struct api_request *req,
                           struct api_call *call, struct api_response *resp);
int api_sub_render_attrs(const struct api_ctx *ctx, const struct api_request *req,
                         struct api_call *call, struct api_response *resp);
int api_sub_render_list(const struct api_ctx *ctx, const struct api_request *req,
                        struct api_call *call, struct api_response *resp);

#endif
