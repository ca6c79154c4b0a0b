/*
 * api.c — owns routing of the MNS queue API (protocol §1.2), query-string
 * parsing (§1.3), authentication of every request, and the error document.
 * The per-resource work is in api_queue.c and api_message.c.
 */
#include "smqd/api.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void api_call_init(struct api_call *call)
{
    memset(call, 0, sizeof *call);
    op_init(&call->op, SMQ_OP_GET_QUEUE);
}

void api_call_free(struct api_call *call)
{
    op_release(&call->op);
    xml_send_batch_free(&call->send);
    xml_handles_free(&call->handles);
}

/* ---- query string ------------------------------------------------------------ */

static int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = (char)tolower((unsigned char)c);
    return (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
}

/* Decodes %XX in place; '+' is a literal plus (§1.3).  0 or -1. */
static int percent_decode(char *s)
{
    char *out = s;

    for (; *s != '\0'; s++) {
        if (*s == '%') {
            int hi = hex_value(s[1]), lo = hi < 0 ? -1 : hex_value(s[2]);
            if (lo < 0 || (hi == 0 && lo == 0))
                return -1;              /* bad escape, or an embedded NUL */
            *out++ = (char)(hi * 16 + lo);
            s += 2;
        } else {
            *out++ = *s;
        }
    }
    *out = '\0';
    return 0;
}

int api_query_parse(const char *raw, struct api_query *q, struct smq_errinfo *ei)
{
    char *save = NULL, *pair;

    memset(q, 0, sizeof *q);
    if (raw == NULL || *raw == '\0')
        return 0;
    if ((q->storage = strdup(raw)) == NULL)
        return errors_set(ei, SMQ_E_NOMEM, NULL);
    for (pair = strtok_r(q->storage, "&", &save); pair != NULL; pair = strtok_r(NULL, "&", &save)) {
        char *eq = strchr(pair, '=');
        if (q->n == API_MAX_QUERY_PARAMS)
            return errors_set(ei, SMQ_E_INVALID_QUERY_STRING, "Too many query parameters.");
        if (eq != NULL)
            *eq = '\0';
        q->names[q->n] = pair;
        q->values[q->n] = eq != NULL ? eq + 1 : pair + strlen(pair);
        if (percent_decode(q->names[q->n]) != 0 || percent_decode(q->values[q->n]) != 0)
            return errors_set(ei, SMQ_E_INVALID_QUERY_STRING,
                              "The query string has an invalid percent-encoding.");
        q->n++;
    }
    return 0;
}

void api_query_free(struct api_query *q)
{
    free(q->storage);
    memset(q, 0, sizeof *q);
}

const char *api_query_get(const struct api_query *q, const char *name)
{
    for (size_t i = 0; i < q->n; i++)
        if (strcasecmp(q->names[i], name) == 0)
            return q->values[i];
    return NULL;
}

/* ---- names and routes ------------------------------------------------------- */

int api_check_queue_name(const char *name, size_t len, struct smq_errinfo *ei)
{
    enum qname_problem p = qname_check(name, len);

    if (p == QNAME_OK)
        return 0;
    if (p == QNAME_LENGTH)
        return errors_set(ei, SMQ_E_QUEUE_NAME_LENGTH, NULL);
    return errors_set(ei, SMQ_E_INVALID_QUEUE_NAME, "%s", qname_problem_text(p));
}

int api_queue_name_from_path(const char *raw, size_t len, char out[SMQ_QUEUE_NAME_MAX + 1],
                             struct smq_errinfo *ei)
{
    /* Every character of a name may arrive as a %XX escape. */
    char name[3 * SMQ_QUEUE_NAME_MAX + 1];

    if (len >= sizeof name)
        return errors_set(ei, SMQ_E_QUEUE_NAME_LENGTH, NULL);
    memcpy(name, raw, len);
    name[len] = '\0';
    if (percent_decode(name) != 0)
        return errors_set(ei, SMQ_E_INVALID_QUEUE_NAME, "The queue name has an invalid "
                          "%%-escape.");
    if (api_check_queue_name(name, strlen(name), ei) != 0)
        return ei->err;
    memcpy(out, name, strlen(name) + 1);
    return 0;
}

enum route { ROUTE_NONE, ROUTE_QUEUES, ROUTE_QUEUE, ROUTE_MESSAGES };

/* Splits "/queues[/NAME[/messages]]" and copies the decoded NAME into
 * call->op.queue.  Returns the route or ROUTE_NONE (ei set). */
static enum route route_path(const char *path, size_t len, struct api_call *call,
                             struct smq_errinfo *ei)
{
    static const char prefix[] = "/queues";
    const char *rest = path + sizeof prefix - 1, *slash;
    size_t name_len;

    errors_set(ei, SMQ_E_INVALID_REQUEST_URL, NULL);
    if (len < sizeof prefix - 1 || strncmp(path, prefix, sizeof prefix - 1) != 0)
        return ROUTE_NONE;
    len -= sizeof prefix - 1;
    if (len == 0 || (len == 1 && rest[0] == '/')) {
        ei->err = 0;
        return ROUTE_QUEUES;
    }
    if (rest[0] != '/')
        return ROUTE_NONE;
    rest++, len--;
    slash = memchr(rest, '/', len);
    name_len = slash ? (size_t)(slash - rest) : len;
    if (slash != NULL && !(len - name_len == 9 && memcmp(slash, "/messages", 9) == 0))
        return ROUTE_NONE;
    if (api_queue_name_from_path(rest, name_len, call->op.queue, ei) != 0)
        return ROUTE_NONE;
    ei->err = 0;
    return slash ? ROUTE_MESSAGES : ROUTE_QUEUE;
}

static int check_content_md5(const struct api_request *req, struct smq_errinfo *ei)
{
    const char *md5 = auth_header_get(req->auth, "Content-MD5");

    /* Node sends the MD5 of "" on empty PUT/DELETE bodies too; both forms of
     * the header are checked against exactly what arrived. */
    if (md5 == NULL || auth_check_content_md5(md5, req->body, req->body_len) == 0)
        return 0;
    return errors_set(ei, SMQ_E_INVALID_DIGEST, NULL);
}

static int route(const struct api_ctx *ctx, const struct api_request *req,
                 const struct api_query *query, struct api_call *call, struct smq_errinfo *ei)
{
    const char *q = strchr(req->target, '?');
    size_t path_len = q ? (size_t)(q - req->target) : strlen(req->target);

    switch (route_path(req->target, path_len, call, ei)) {
    case ROUTE_QUEUES:
        if (strcmp(req->method, "GET") != 0)
            return errors_set(ei, SMQ_E_INVALID_REQUEST_URL, NULL);
        return api_prepare_list(req, call, ei);
    case ROUTE_QUEUE:
        return api_prepare_queue(req, query, call, ei);
    case ROUTE_MESSAGES:
        return api_prepare_message(ctx, req, query, call, ei);
    default:
        return ei->err;
    }
}

int api_prepare(const struct api_ctx *ctx, const struct api_request *req,
                struct api_call *call, struct smq_errinfo *ei)
{
    struct api_query query;
    const char *q = strchr(req->target, '?');
    const struct auth_keyring *ring = auth_keyring_get(ctx->keys);
    size_t key_index;
    int rc;

    rc = auth_verify(ring, req->auth, clock_epoch_ms(ctx->clock), ctx->max_skew_ms,
                     &key_index, ei);
    if (rc != 0)
        return rc;
    call->access_key_id = ring->keys[key_index].id;
    rc = check_content_md5(req, ei);
    if (rc != 0)
        return rc;
    rc = api_query_parse(q ? q + 1 : NULL, &query, ei);
    if (rc == 0)
        rc = route(ctx, req, &query, call, ei);
    api_query_free(&query);
    return rc;
}

/* ---- rendering ------------------------------------------------------------------ */

void api_render_error(const struct api_request *req, const struct smq_errinfo *ei,
                      const char *request_id, struct api_response *resp)
{
    const struct smq_error_info *info = errors_info(ei->err);
    char host_id[320];

    snprintf(host_id, sizeof host_id, "http://%s", req->host);
    resp->status = info->http_status;
    buf_reset(&resp->body);
    xml_error_doc(&resp->body, info->code, errors_message(ei), request_id, host_id);
}

void api_render(const struct api_ctx *ctx, const struct api_request *req,
                struct api_call *call, const char *request_id, struct api_response *resp)
{
    const struct smq_op *op = &call->op;
    bool batch_delete_partial = call->action == MNS_BATCH_DELETE_MESSAGE && op->result.err == 0;

    /* BatchDeleteMessage reports per-handle failures in its own document. */
    if (op->result.err != 0 && !batch_delete_partial) {
        api_render_error(req, &op->result, request_id, resp);
        return;
    }
    switch (op->kind) {
    case SMQ_OP_CREATE_QUEUE:
    case SMQ_OP_SET_QUEUE:
    case SMQ_OP_GET_QUEUE:
    case SMQ_OP_DELETE_QUEUE:
    case SMQ_OP_LIST_QUEUES:
        api_render_queue(req, call, resp);
        break;
    default:
        /* A receive is not undone by this: its messages come back when
         * their visibility timeout ends (at-least-once). */
        if (api_render_message(ctx, call, resp) != 0) {
            errors_set(&call->op.result, SMQ_E_INTERNAL,
                       "A message body's MD5 could not be computed.");
            api_render_error(req, &call->op.result, request_id, resp);
        }
        break;
    }
}
