/*
 * push.h — the HTTP push pool (docs/protocol.md §13.10, §13.11): a thread
 * of its own that makes notification attempts to http(s) endpoints with
 * libcurl, a bounded number at a time, keeping connections alive per
 * endpoint, each attempt signed with the configured RSA key and bounded by
 * the push timeout.  It decides nothing about retries: each attempt's
 * outcome goes back to its owner (the engine, through the server's inbox)
 * by the done callback.
 */
#ifndef SMQD_PUSH_H
#define SMQD_PUSH_H

#include <stddef.h>
#include <stdint.h>

#include "smqd/buf.h"
#include "smqd/clock.h"
#include "smqd/crypto.h"
#include "smqd/mns.h"
#include "smqd/op.h"

struct push_pool;

/* One attempt, owned by the pool once push_submit took it. */
struct push_job {
    int64_t sub_id;                          /* copied into the result */
    uint64_t seq;
    uint32_t attempt;
    char endpoint[SMQ_ENDPOINT_MAX + 1];     /* the subscription's http(s) Endpoint */
    enum smq_notify_format format;
    char topic[SMQ_TOPIC_NAME_MAX + 1];
    char sub[SMQ_TOPIC_NAME_MAX + 1];
    char msg_id[33];
    char tag[SMQ_TAG_MAX_BYTES + 1];
    int64_t publish_ms;
    struct smq_buf body;                     /* the rendered notification (notify_render) */
    struct push_job *next;                   /* the pool's */
};

struct push_opts {
    int concurrency;                         /* attempts in flight at most, 1..1024 */
    int64_t timeout_ms;                      /* per attempt: connect to response headers */
    const char *ca_file;                     /* NULL = the system's CAs */
    /* Borrowed: outlives the pool, and nothing else frees or changes it
     * while the pool runs; the pool's signer threads call
     * crypto_signer_sign on it at the same time (each call has OpenSSL
     * contexts of its own and writes nothing in it).  Each attempt
     * sends authorization: the signature of §13.11 over its string to
     * sign; an attempt whose signature cannot be made is not sent and ends
     * as SMQ_PUSH_SIGN_ERROR.  push_start signs once to refuse a key that
     * cannot sign.  NULL sends no authorization header at all. */
    const struct crypto_signer *signer;
    /* Threads making signatures (with a signer): 0 = one per online CPU,
     * at most 8; or 1..64. */
    int sign_threads;
    const char *cert_url;                    /* copied */
    const char *account_id;                  /* copied */
    const struct smq_clock *clock;           /* Date headers and latencies */
    /* Called on the pool's curl thread once per job taken, with its outcome. */
    void (*done)(void *arg, const struct smq_op_push *result);
    void *done_arg;
};

/* Starts the thread.  0, or SMQ_E_INTERNAL with a reason in err. */
int push_start(const struct push_opts *opts, struct push_pool **out, char *err, size_t err_size);
/* Takes job (and frees it when done): 0; or SMQ_E_SERVICE_UNAVAILABLE when
 * concurrency attempts are in flight or the pool is stopping, and the job
 * stays the caller's.  Any thread. */
int push_submit(struct push_pool *p, struct push_job *job);
/* Attempts taken and not yet done. */
size_t push_in_flight(const struct push_pool *p);
/* Ends every attempt in flight (done with SMQ_PUSH_CANCELLED), joins the
 * thread and frees p.  NULL is a no-op. */
void push_stop(struct push_pool *p);

/* Frees a job the pool did not take. */
void push_job_free(struct push_job *job);

#endif
