/*
 * api.h — the MNS API: from an authenticated HTTP request to a decided
 * engine operation, and from a finished operation to the exact response
 * bytes the SDKs expect (docs/protocol.md §1.2, §6–§8; topics §13).
 *
 * api_prepare runs on an HTTP thread: it authenticates (docs/protocol.md §3), routes by
 * method and path to the one handler of the action (the route table in
 * api.c), which parses the query and the XML body, checks every fixed
 * range, and fills call->op for the engine, or answers at once with an
 * error.  api_render, also on an HTTP thread, turns the finished op into a
 * response.  Nothing here touches engine state directly.
 */
#ifndef SMQD_API_H
#define SMQD_API_H

#include "smqd/api_call.h"

/* 0: call->op is ready to submit.  Otherwise an SMQ_E_* code with ei filled:
 * answer it with api_render_error.  call->action is set as far as known. */
int api_prepare(const struct api_ctx *ctx, const struct api_request *req,
                struct api_call *call, struct smq_errinfo *ei);

/* Renders the finished call->op into resp (success or its error). */
void api_render(const struct api_ctx *ctx, const struct api_request *req,
                struct api_call *call, const char *request_id, struct api_response *resp);

/* True when api.c's table of kinds has a renderer for kind, even one that
 * answers a kind the API never builds: tests check every kind has one. */
bool api_has_kind(enum smq_op_kind kind);

/* Where the MNS listener serves the push signing certificate (§13.11). */
#define API_SIGNING_CERT_PATH "/smqd/signing-cert.pem"
#define API_SIGNING_CERT_TYPE "application/x-pem-file"

/* Whether req is a GET or HEAD of API_SIGNING_CERT_PATH (any query): the
 * one request answered without authentication (§12.1, §13.11).  Another
 * method on the path goes through api_prepare like any request and is
 * refused there as an unknown route. */
bool api_signing_cert_request(const struct api_request *req);
/* Answers that request into resp (empty body): 200 with ctx's certificate
 * and API_SIGNING_CERT_TYPE, or SMQ_E_SERVICE_UNAVAILABLE with ei filled
 * when none is loaded. */
int api_signing_cert(const struct api_ctx *ctx, struct api_response *resp,
                     struct smq_errinfo *ei);

/* Renders the MNS <Error> document for ei into resp (docs/protocol.md §8.1). */
void api_render_error(const struct api_request *req, const struct smq_errinfo *ei,
                      const char *request_id, struct api_response *resp);

#endif
