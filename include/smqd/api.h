/*
 * api.h — the MNS queue API: from an authenticated HTTP request to a decided
 * engine operation, and from a finished operation to the exact response
 * bytes the SDKs expect (protocol §1.2, §6–§8).
 *
 * api_prepare runs on an HTTP thread: it authenticates, routes, parses the
 * query and the XML body, checks every fixed range, and either answers at
 * once (an error) or fills call->op for the engine.  api_render, also on an
 * HTTP thread, turns the finished op into a response.  Nothing here touches
 * engine state directly.
 */
#ifndef SMQD_API_H
#define SMQD_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "smqd/auth.h"
#include "smqd/buf.h"
#include "smqd/clock.h"
#include "smqd/crypto.h"
#include "smqd/op.h"
#include "smqd/errors.h"
#include "smqd/handle.h"
#include "smqd/xml.h"

/* Read-only context shared by every HTTP thread. */
struct api_ctx {
    struct auth_keyring_slot *keys;      /* swapped on SIGHUP */
    const struct handle_keys *handle_keys;
    const struct smq_clock *clock;
    int64_t max_skew_ms;
};

/* One request as received. */
struct api_request {
    const char *method;
    const char *target;                  /* raw request target */
    const char *host;                    /* Host header, "" if absent */
    const char *body;
    size_t body_len;
    const struct auth_request *auth;     /* method, target and all headers */
};

struct api_response {
    int status;
    struct smq_buf body;                 /* empty for 204 */
    char location[512];                  /* "" = no Location header */
};

/* Per-request state between prepare and render. */
struct api_call {
    enum mns_action action;
    /* The verified access key id, once authenticated (else NULL); borrowed
     * from the key ring, which lives until shutdown (auth.h). */
    const char *access_key_id;
    struct smq_op op;
    struct xml_send_batch send;          /* owns the bodies op.send borrows */
    unsigned char send_md5[SMQ_BATCH_MAX][CRYPTO_MD5_LEN];   /* of each body, raw */
    struct xml_handles handles;          /* BatchDelete: echoed in per-handle errors */
};

void api_call_init(struct api_call *call);
void api_call_free(struct api_call *call);

/* 0: call->op is ready to submit.  Otherwise an SMQ_E_* code with ei filled:
 * answer it with api_render_error.  call->action is set as far as known. */
int api_prepare(const struct api_ctx *ctx, const struct api_request *req,
                struct api_call *call, struct smq_errinfo *ei);

/* Renders the finished call->op into resp (success or its error). */
void api_render(const struct api_ctx *ctx, const struct api_request *req,
                struct api_call *call, const char *request_id, struct api_response *resp);

/* Renders the MNS <Error> document for ei into resp. */
void api_render_error(const struct api_request *req, const struct smq_errinfo *ei,
                      const char *request_id, struct api_response *resp);

/* ---- helpers shared by api_queue.c and api_message.c (api_internal) ---- */

#define API_MAX_QUERY_PARAMS 32

struct api_query {
    size_t n;
    char *names[API_MAX_QUERY_PARAMS];
    char *values[API_MAX_QUERY_PARAMS];  /* percent-decoded; '+' stays '+' */
    char *storage;
};

/* Splits and decodes a raw query string.  0 or SMQ_E_INVALID_QUERY_STRING. */
int api_query_parse(const char *raw, struct api_query *q, struct smq_errinfo *ei);
void api_query_free(struct api_query *q);
/* Value of a parameter by case-insensitive name, or NULL. */
const char *api_query_get(const struct api_query *q, const char *name);

/* Percent-decodes the path segment raw[0..len) into out and checks it as a
 * queue name: 0, or SMQ_E_QUEUE_NAME_LENGTH / SMQ_E_INVALID_QUEUE_NAME (a
 * bad escape or an encoded NUL included) with ei set.  The MNS and the
 * admin listener route with it alike. */
int api_queue_name_from_path(const char *raw, size_t len, char out[SMQ_QUEUE_NAME_MAX + 1],
                             struct smq_errinfo *ei);
/* Checks a queue name (§5): 0, SMQ_E_INVALID_QUEUE_NAME or SMQ_E_QUEUE_NAME_LENGTH. */
int api_check_queue_name(const char *name, size_t len, struct smq_errinfo *ei);

int api_prepare_queue(const struct api_request *req, const struct api_query *query,
                      struct api_call *call, struct smq_errinfo *ei);
int api_prepare_list(const struct api_request *req, struct api_call *call, struct smq_errinfo *ei);
int api_prepare_message(const struct api_ctx *ctx, const struct api_request *req,
                        const struct api_query *query, struct api_call *call,
                        struct smq_errinfo *ei);
void api_render_queue(const struct api_request *req, struct api_call *call,
                      struct api_response *resp);
/* 0, or SMQ_E_INTERNAL when a body's MD5 could not be computed (nothing
 * usable was rendered: the caller answers the error instead). */
int api_render_message(const struct api_ctx *ctx, struct api_call *call,
                       struct api_response *resp);

#endif
