/*
 * api_message.c — owns the message actions of the MNS API (api_message.h):
 * Send/BatchSend, Receive/BatchReceive, Peek/BatchPeek, Delete/BatchDelete
 * and ChangeMessageVisibility: request checks, the dispatch rules of
 * docs/protocol.md §1.2, and the exact response documents.
 */
#include "api_message.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "smqd/crypto.h"
#include "smqd/strnum.h"

#define BATCH_SEND_MAX_BYTES 65536

/* Parses a whole query value as a decimal integer in [min, max].
 * Not a number ⇒ InvalidQueryString; out of range ⇒ InvalidArgument. */
static int query_int(const char *text, const char *name, int64_t min, int64_t max,
                     int64_t *out, struct smq_errinfo *ei)
{
    int64_t v = 0;

    if (!strnum_is_integer(text, strlen(text)))
        return errors_set(ei, SMQ_E_INVALID_QUERY_STRING, "The value of %s is not a number.", name);
    /* A number beyond 64 bits is out of range, like any other too large. */
    if (strnum_i64(text, strlen(text), &v) != 0 || v < min || v > max)
        return errors_set(ei, SMQ_E_INVALID_ARGUMENT, "The value of %s should between %lld and %lld.",
                          name, (long long)min, (long long)max);
    *out = v;
    return 0;
}

/* ---- send ------------------------------------------------------------------------- */

static int take_send_item(struct xml_send_item *x, struct smq_send_item *it,
                          unsigned char md5[MNS_MD5_LEN], struct smq_errinfo *ei)
{
    if (!x->body_present)
        return errors_set(ei, SMQ_E_INVALID_ARGUMENT, "The MessageBody is missing.");
    if (x->delay_s.present && (x->delay_s.value < 0 || x->delay_s.value > SMQ_DELAY_MAX_S))
        return errors_set(ei, SMQ_E_INVALID_ARGUMENT,
                          "The value of DelaySeconds should between 0 and %d seconds.", SMQ_DELAY_MAX_S);
    /* Go always sends <Priority>0</Priority> for "unset": treat 0 as the default. */
    if (x->priority.present && x->priority.value != 0
        && (x->priority.value < SMQ_PRIORITY_MIN || x->priority.value > SMQ_PRIORITY_MAX))
        return errors_set(ei, SMQ_E_INVALID_ARGUMENT, "The value of Priority should between %d and %d.",
                          SMQ_PRIORITY_MIN, SMQ_PRIORITY_MAX);
    it->body = x->body;
    it->body_len = x->body_len;
    it->ext = x->ext;
    it->ext_len = x->ext_len;
    it->delay_s = x->delay_s.present ? x->delay_s.value : 0;
    it->priority = (x->priority.present && x->priority.value != 0) ? (int)x->priority.value
                                                                   : SMQ_PRIORITY_DEFAULT;
    /* Once, here: the response needs it and the store keeps it for every
     * receive of the message, so a wrong one must never get that far. */
    if (crypto_md5(x->body ? x->body : "", x->body_len, md5) != 0)
        return errors_set(ei, SMQ_E_INTERNAL, "The MD5 of the message body could not be computed.");
    it->body_md5 = md5;
    return 0;
}

int api_message_send(const struct api_ctx *ctx, const struct api_request *req,
                     const struct query *query, struct api_call *call, struct smq_errinfo *ei)
{
    size_t total = 0;
    int root_kind;
    int rc = xml_parse_send_any(req->body, req->body_len, &call->send, &root_kind, ei);

    (void)ctx, (void)query;
    if (root_kind < 0)
        return rc;
    op_set_kind(&call->op, SMQ_OP_SEND);
    call->action = root_kind == 1 ? MNS_BATCH_SEND_MESSAGE : MNS_SEND_MESSAGE;
    for (size_t i = 0; rc == 0 && i < call->send.n; i++) {
        rc = take_send_item(&call->send.items[i], &call->op.send.items[i], call->send_md5[i], ei);
        total += call->send.items[i].body_len;
    }
    if (rc == 0 && total > BATCH_SEND_MAX_BYTES)
        rc = errors_set(ei, SMQ_E_INVALID_ARGUMENT,
                        "The total size of the messages in a batch should not exceed %d bytes.",
                        BATCH_SEND_MAX_BYTES);
    call->op.send.n = call->send.n;
    return rc;
}

/* ---- receive and peek --------------------------------------------------------------- */

int api_message_receive(const struct api_ctx *ctx, const struct api_request *req,
                        const struct query *query, struct api_call *call,
                        struct smq_errinfo *ei)
{
    const char *peek = query_get(query, "peekonly");
    const char *num = query_get(query, "numOfMessages");
    const char *wait = query_get(query, "waitseconds");
    bool is_peek = peek != NULL && strcasecmp(peek, "true") == 0;
    int64_t v = 0;
    int rc = 0;

    (void)ctx, (void)req;
    op_set_kind(&call->op, is_peek ? SMQ_OP_PEEK : SMQ_OP_RECEIVE);
    if (is_peek)
        call->action = num ? MNS_BATCH_PEEK_MESSAGE : MNS_PEEK_MESSAGE;
    else
        call->action = num ? MNS_BATCH_RECEIVE_MESSAGE : MNS_RECEIVE_MESSAGE;
    if (num != NULL) {
        rc = query_int(num, "numOfMessages", 1, SMQ_BATCH_MAX, &v, ei);
        if (rc == 0)
            call->op.recv.max_msgs = (int)v;
    }
    if (rc == 0 && wait != NULL && !is_peek) {
        rc = query_int(wait, "waitseconds", 0, SMQ_POLLING_WAIT_MAX_S, &v, ei);
        if (rc == 0)
            call->op.recv.wait_s = v;
    }
    return rc;
}

/* ---- delete and change visibility ---------------------------------------------------- */

static void decode_handle(const struct api_ctx *ctx, const char *text, struct smq_handle_ref *ref)
{
    ref->err = handle_decode(ctx->handle_keys, text, strlen(text), &ref->seq, &ref->gen);
}

static int prepare_batch_delete(const struct api_ctx *ctx, const struct api_request *req,
                                struct api_call *call, struct smq_errinfo *ei)
{
    int rc;

    call->action = MNS_BATCH_DELETE_MESSAGE;
    call->op.del.batch = true;
    if (req->body_len == 0)
        return errors_set(ei, SMQ_E_MISSING_RECEIPT_HANDLE, NULL);
    rc = xml_parse_handles(req->body, req->body_len, &call->handles, ei);
    if (rc != 0)
        return rc;
    for (size_t i = 0; i < call->handles.n; i++)
        decode_handle(ctx, call->handles.handles[i], &call->op.del.refs[i]);
    call->op.del.n = call->handles.n;
    return 0;
}

int api_message_delete(const struct api_ctx *ctx, const struct api_request *req,
                       const struct query *query, struct api_call *call,
                       struct smq_errinfo *ei)
{
    const char *handle = query_get(query, "ReceiptHandle");

    op_set_kind(&call->op, SMQ_OP_DELETE_MSG);
    if (handle == NULL)
        return prepare_batch_delete(ctx, req, call, ei);
    call->action = MNS_DELETE_MESSAGE;
    call->op.del.n = 1;
    decode_handle(ctx, handle, &call->op.del.refs[0]);
    return call->op.del.refs[0].err ? errors_set(ei, call->op.del.refs[0].err, NULL) : 0;
}

int api_message_change_visibility(const struct api_ctx *ctx, const struct api_request *req,
                                  const struct query *query, struct api_call *call,
                                  struct smq_errinfo *ei)
{
    const char *handle = query_get(query, "ReceiptHandle");
    const char *timeout = query_get(query, "VisibilityTimeout");
    int rc;

    (void)req;
    call->action = MNS_CHANGE_MESSAGE_VISIBILITY;
    op_set_kind(&call->op, SMQ_OP_CHANGE_VISIBILITY);
    if (handle == NULL)
        return errors_set(ei, SMQ_E_MISSING_RECEIPT_HANDLE, NULL);
    if (timeout == NULL)
        return errors_set(ei, SMQ_E_MISSING_VISIBILITY_TIMEOUT, NULL);
    /* 0 is accepted and means "visible now" (the Python SDK lets it through). */
    rc = query_int(timeout, "VisibilityTimeout", 0, SMQ_VISIBILITY_MAX_S,
                   &call->op.vis.visibility_s, ei);
    if (rc != 0)
        return rc;
    decode_handle(ctx, handle, &call->op.vis.ref);
    return call->op.vis.ref.err ? errors_set(ei, call->op.vis.ref.err, NULL) : 0;
}

/* ---- responses ------------------------------------------------------------------------- */

void api_message_id_elems(const struct api_ctx *ctx, uint64_t seq,
                          const unsigned char md5[MNS_MD5_LEN], struct smq_buf *b)
{
    char id[MSGID_TEXT_LEN + 1], hex[33];

    msgid_format(ctx->handle_keys, seq, id);
    xml_elem_str(b, "MessageId", id);
    crypto_md5_to_hex(md5, true, hex);
    xml_elem_str(b, "MessageBodyMD5", hex);
}

/* A delayed SendMessage also answers with a receipt handle (the Java SDK's
 * TransactionQueue commits or rolls back with it, docs/protocol.md §7.6);
 * a batch entry never does: the Python SDK refuses any entry with more
 * than MessageId and MessageBodyMD5. */
static void render_sent(struct api_call *call, const struct api_ctx *ctx, struct smq_buf *b)
{
    bool batch = call->action == MNS_BATCH_SEND_MESSAGE;
    char handle[HANDLE_TEXT_LEN + 1];

    xml_begin(b, batch ? "Messages" : "Message");
    for (size_t i = 0; i < call->op.send.n; i++) {
        if (batch)
            xml_open(b, "Message");
        api_message_id_elems(ctx, call->op.send.seq[i], call->send_md5[i], b);
        if (!batch && call->op.send.delayed[i]) {
            handle_encode(ctx->handle_keys, call->op.send.seq[i], 0, handle);
            xml_elem_str(b, "ReceiptHandle", handle);
        }
        if (batch)
            xml_close(b, "Message");
    }
    if (batch)
        xml_close(b, "Messages");
    else
        xml_close(b, "Message");
}

/* One <Message> of a Receive (nine elements) or Peek (seven) response, and
 * the extensions the message was sent with, if any (docs/protocol.md §6.4). */
static void render_msg(const struct api_ctx *ctx, const struct smq_msg_view *v, const char *md5,
                       bool peek, struct smq_buf *b)
{
    char id[MSGID_TEXT_LEN + 1], handle[HANDLE_TEXT_LEN + 1];

    msgid_format(ctx->handle_keys, v->seq, id);
    xml_elem_str(b, "MessageId", id);
    if (!peek) {
        handle_encode(ctx->handle_keys, v->seq, v->handle_gen, handle);
        xml_elem_str(b, "ReceiptHandle", handle);
    }
    xml_elem_str(b, "MessageBodyMD5", md5);
    xml_elem_text(b, "MessageBody", v->body, v->body_len);
    xml_elem_i64(b, "EnqueueTime", v->enqueue_ms);
    if (!peek)
        xml_elem_i64(b, "NextVisibleTime", v->next_visible_ms);
    xml_elem_i64(b, "FirstDequeueTime", v->first_dequeue_ms);
    xml_elem_i64(b, "DequeueCount", v->dequeue_count);
    xml_elem_i64(b, "Priority", v->priority);
    buf_append(b, v->ext, v->ext_len);
}

/* A received <Message> without its body: its nine elements, under 512 bytes. */
#define RECEIVED_XML_PER_MSG 512

/* Each message's MessageBodyMD5 in hex: as stored at send, or (rows from
 * before schema 3) computed now.  SMQ_E_INTERNAL when that fails: better
 * no answer than a wrong digest. */
static int received_md5s(const struct smq_op *op, char md5[][33])
{
    for (size_t i = 0; i < op->recv.n_msgs; i++) {
        const struct smq_msg_view *v = &op->recv.msgs[i];
        if (v->body_md5.present)
            crypto_md5_to_hex(v->body_md5.bytes, true, md5[i]);
        else if (crypto_md5_hex(v->body, v->body_len, true, md5[i]) != 0)
            return SMQ_E_INTERNAL;
    }
    return 0;
}

static int render_received(const struct api_ctx *ctx, struct api_call *call, bool peek,
                           struct smq_buf *b)
{
    bool batch = call->action == MNS_BATCH_RECEIVE_MESSAGE || call->action == MNS_BATCH_PEEK_MESSAGE;
    char md5[SMQ_BATCH_MAX][33];
    size_t size = 0;

    if (received_md5s(&call->op, md5) != 0)
        return SMQ_E_INTERNAL;

    /* The bodies dominate the document: one allocation up front instead
     * of a doubling series with a copy each (escaping may still add). */
    for (size_t i = 0; i < call->op.recv.n_msgs; i++)
        size += call->op.recv.msgs[i].body_len + call->op.recv.msgs[i].ext_len
                + RECEIVED_XML_PER_MSG;
    buf_reserve(b, size);
    if (!batch) {
        xml_begin(b, "Message");
        render_msg(ctx, &call->op.recv.msgs[0], md5[0], peek, b);
        xml_close(b, "Message");
        return 0;
    }
    xml_begin(b, "Messages");
    for (size_t i = 0; i < call->op.recv.n_msgs; i++) {
        xml_open(b, "Message");
        render_msg(ctx, &call->op.recv.msgs[i], md5[i], peek, b);
        xml_close(b, "Message");
    }
    xml_close(b, "Messages");
    return 0;
}

/* 204 when every handle was deleted, else 404 with one <Error> per failure. */
static int render_batch_delete(struct api_call *call, struct smq_buf *b)
{
    bool any_failed = false;

    for (size_t i = 0; i < call->op.del.n; i++) {
        const struct smq_error_info *info;
        const char *text = call->handles.handles[i];
        if (call->op.del.refs[i].err == 0)
            continue;
        if (!any_failed)
            xml_begin(b, "Errors");
        any_failed = true;
        info = errors_info(call->op.del.refs[i].err);
        xml_open(b, "Error");
        xml_elem_str(b, "ErrorCode", info->code);
        xml_elem_str(b, "ErrorMessage", info->message);
        xml_elem_str(b, "ReceiptHandle", text[0] != '\0' ? text : "(empty)");
        xml_close(b, "Error");
    }
    if (!any_failed)
        return 204;
    xml_close(b, "Errors");
    return 404;
}

static void render_visibility(const struct api_ctx *ctx, const struct smq_op *op, struct smq_buf *b)
{
    char handle[HANDLE_TEXT_LEN + 1];

    handle_encode(ctx->handle_keys, op->vis.ref.seq, op->vis.new_gen, handle);
    xml_begin(b, "ChangeVisibility");
    xml_elem_str(b, "ReceiptHandle", handle);
    xml_elem_i64(b, "NextVisibleTime", op->vis.next_visible_ms);
    xml_close(b, "ChangeVisibility");
}

/* ---- the renderers of api.c's table of kinds ------------------------------------------ */

int api_message_render_sent(const struct api_ctx *ctx, const struct api_request *req,
                            struct api_call *call, struct api_response *resp)
{
    (void)req;
    resp->status = 201;
    render_sent(call, ctx, &resp->body);
    return 0;
}

int api_message_render_received(const struct api_ctx *ctx, const struct api_request *req,
                                struct api_call *call, struct api_response *resp)
{
    (void)req;
    resp->status = 200;
    return render_received(ctx, call, false, &resp->body);
}

int api_message_render_peeked(const struct api_ctx *ctx, const struct api_request *req,
                              struct api_call *call, struct api_response *resp)
{
    (void)req;
    resp->status = 200;
    return render_received(ctx, call, true, &resp->body);
}

int api_message_render_deleted(const struct api_ctx *ctx, const struct api_request *req,
                               struct api_call *call, struct api_response *resp)
{
    (void)ctx, (void)req;
    resp->status = call->action == MNS_BATCH_DELETE_MESSAGE
                       ? render_batch_delete(call, &resp->body) : 204;
    return 0;
}

int api_message_render_visibility(const struct api_ctx *ctx, const struct api_request *req,
                                  struct api_call *call, struct api_response *resp)
{
    (void)req;
    resp->status = 200;
    render_visibility(ctx, &call->op, &resp->body);
    return 0;
}
