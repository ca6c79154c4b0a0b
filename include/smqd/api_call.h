/*
 * api_call.h — one call of the MNS queue API on its way through smqd: the
 * request as received, the operation decided from it, and the response
 * rendered from the finished operation.  The types every part of the API
 * layer shares (api.h routes, api_queue.h and api_message.h decide and
 * render); nothing here does HTTP or touches engine state.
 */
#ifndef SMQD_API_CALL_H
#define SMQD_API_CALL_H

#include <stddef.h>
#include <stdint.h>

#include "smqd/auth.h"
#include "smqd/buf.h"
#include "smqd/clock.h"
#include "smqd/handle.h"
#include "smqd/mns.h"
#include "smqd/op.h"
#include "smqd/query.h"
#include "smqd/xml.h"

/* Read-only context shared by every HTTP thread. */
struct api_ctx {
    struct auth_keyring_slot *keys;      /* swapped on SIGHUP */
    const struct handle_keys *handle_keys;
    const struct smq_clock *clock;
    int64_t max_skew_ms;
    const char *account_id;              /* [topics] account_id; NULL = the default */
    /* The push signing certificate (PEM) served at API_SIGNING_CERT_PATH
     * (docs/protocol.md §13.11); NULL = none loaded (answered 503). */
    const char *signing_cert_pem;
};

/* One request as received. */
struct api_request {
    const char *method;
    const char *target;                  /* raw request target */
    const char *host;                    /* Host header, "" if absent */
    const char *scheme;                  /* "http" or "https": of the URLs answers name */
    const char *body;
    size_t body_len;
    const struct auth_request *auth;     /* method, target and all headers */
};

struct api_response {
    int status;
    struct smq_buf body;                 /* empty for 204 */
    char location[512];                  /* "" = no Location header */
    const char *content_type;            /* NULL = the XML documents' */
};

/* Per-request state between prepare and render. */
struct api_call {
    enum mns_action action;
    /* The verified access key id, once authenticated (else NULL); borrowed
     * from the key ring, which lives until shutdown (auth.h). */
    const char *access_key_id;
    struct smq_op op;
    struct xml_send_batch send;          /* owns the bodies op.send borrows */
    unsigned char send_md5[SMQ_BATCH_MAX][MNS_MD5_LEN];   /* of each body, raw */
    struct xml_handles handles;          /* BatchDelete: echoed in per-handle errors */
    struct xml_publish publish;          /* PublishMessage: owns the body op.publish borrows */
};

void api_call_init(struct api_call *call);
void api_call_free(struct api_call *call);

/* Decides one routed request into call (action, op): 0, or an SMQ_E_*
 * code with ei filled.  Every handler of api_queue.h and api_message.h
 * has this shape. */
typedef int (*api_prepare_fn)(const struct api_ctx *ctx, const struct api_request *req,
                              const struct query *query, struct api_call *call,
                              struct smq_errinfo *ei);

/* Answers one finished op of a kind into resp, whose body is empty: 0, or
 * an SMQ_E_* code when nothing usable was rendered (the caller answers the
 * error instead).  The renderers of api_queue.h and api_message.h have this
 * shape; api.c's table picks one per kind. */
typedef int (*api_render_fn)(const struct api_ctx *ctx, const struct api_request *req,
                             struct api_call *call, struct api_response *resp);

#endif
