/*
 * api_message.h — the message actions of the MNS API (docs/protocol.md
 * §7.6–§7.13): one handler per route of api.c, and the responses.
 */
#ifndef SMQD_API_MESSAGE_H
#define SMQD_API_MESSAGE_H

#include "smqd/api_call.h"

/* POST /queues/{q}/messages: SendMessage, or BatchSendMessage (root <Messages>). */
int api_message_send(const struct api_ctx *ctx, const struct api_request *req,
                     const struct query *query, struct api_call *call, struct smq_errinfo *ei);
/* GET /queues/{q}/messages: ReceiveMessage, BatchReceiveMessage, PeekMessage
 * and BatchPeekMessage (peekonly, numOfMessages). */
int api_message_receive(const struct api_ctx *ctx, const struct api_request *req,
                        const struct query *query, struct api_call *call,
                        struct smq_errinfo *ei);
/* DELETE /queues/{q}/messages: DeleteMessage (?ReceiptHandle), or
 * BatchDeleteMessage (a body). */
int api_message_delete(const struct api_ctx *ctx, const struct api_request *req,
                       const struct query *query, struct api_call *call,
                       struct smq_errinfo *ei);
/* PUT /queues/{q}/messages: ChangeMessageVisibility. */
int api_message_change_visibility(const struct api_ctx *ctx, const struct api_request *req,
                                  const struct query *query, struct api_call *call,
                                  struct smq_errinfo *ei);

/* The <MessageId> and <MessageBodyMD5> of an accepted message (§6.1): the id
 * of seq and the upper-case hex of md5.  SendMessage, BatchSendMessage and
 * PublishMessage (§13.5) answer with these two, so they are written once. */
void api_message_id_elems(const struct api_ctx *ctx, uint64_t seq,
                          const unsigned char md5[MNS_MD5_LEN], struct smq_buf *b);

/* The responses of the finished message actions, one per kind (the
 * renderers of api.c's table, api_render_fn): 0, or SMQ_E_INTERNAL when a
 * body's MD5 could not be computed (received, peeked: nothing usable was
 * rendered, and the caller answers the error instead). */
int api_message_render_sent(const struct api_ctx *ctx, const struct api_request *req,
                            struct api_call *call, struct api_response *resp);
int api_message_render_received(const struct api_ctx *ctx, const struct api_request *req,
                                struct api_call *call, struct api_response *resp);
int api_message_render_peeked(const struct api_ctx *ctx, const struct api_request *req,
                              struct api_call *call, struct api_response *resp);
/* DeleteMessage and BatchDeleteMessage (its per-handle errors). */
int api_message_render_deleted(const struct api_ctx *ctx, const struct api_request *req,
                               struct api_call *call, struct api_response *resp);
int api_message_render_visibility(const struct api_ctx *ctx, const struct api_request *req,
                                  struct api_call *call, struct api_response *resp);

#endif
