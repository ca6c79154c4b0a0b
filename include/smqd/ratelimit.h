/*
 * ratelimit.h — optional request-rate limits per queue and per access key
 * (token buckets), checked on the HTTP threads before a request reaches
 * the engine.
 *
 * Each scope (queue, access key) that has a rate is a token bucket per
 * name: it holds at most `burst` requests and refills at `qps` requests per
 * second.  A request takes one token from its access key's bucket and one
 * from its queue's; when either is empty it is refused and takes nothing.
 *
 * Memory is fixed at ratelimit_new: each scope is a table of a bounded
 * number of buckets (set-associative, lock-striped; see ratelimit.c), so a
 * client naming ever new queues cannot grow it.  A bucket that has refilled
 * completely is indistinguishable from a fresh one, so it is reused for
 * another name without changing anyone's limit.  Only when every bucket of
 * a set is busy is the least recently used one given up (its name then
 * starts again from a full bucket).
 *
 * Thread-safe.  Time comes from an injectable struct smq_clock, so tests
 * move time instead of sleeping.
 */
#ifndef SMQD_RATELIMIT_H
#define SMQD_RATELIMIT_H

#include <stdint.h>

#include "smqd/clock.h"

/* Which limit refused a request (SMQ_LIMIT_NONE: none did). */
enum smq_limit_scope {
    SMQ_LIMIT_NONE = 0,
    SMQ_LIMIT_QUEUE,
    SMQ_LIMIT_ACCESS_KEY,
    SMQ_LIMIT__COUNT
};

/* Longest name kept in full; longer names are told apart by their hash too. */
#define RATELIMIT_NAME_MAX 128
/* Bounds of the table of one scope, in buckets. */
#define RATELIMIT_MIN_BUCKETS 8     /* one set: a table for one access key stays small */
#define RATELIMIT_MAX_BUCKETS 16384

struct ratelimit_opts {
    const struct smq_clock *clock;   /* monotonic milliseconds; borrowed */
    uint32_t queue_qps;              /* requests per second per queue; 0 = no limit */
    uint32_t queue_burst;            /* bucket size; 0 = queue_qps */
    uint32_t access_key_qps;         /* requests per second per access key; 0 = no limit */
    uint32_t access_key_burst;       /* bucket size; 0 = access_key_qps */
    /* How many names each table is sized for (twice this many buckets,
     * within RATELIMIT_MIN_BUCKETS..RATELIMIT_MAX_BUCKETS): max_queues and
     * the number of access keys. */
    uint32_t expected_queues;
    uint32_t expected_access_keys;
};

struct smq_ratelimit;

/* 0 and *out, or SMQ_E_NOMEM.  With both rates 0 the object is tiny and
 * ratelimit_take always allows. */
int ratelimit_new(const struct ratelimit_opts *opts, struct smq_ratelimit **out);
void ratelimit_free(struct smq_ratelimit *rl);

/*
 * Takes one request's token from access_key_id's bucket and from queue's
 * (NULL or "" skips that scope, e.g. ListQueue has no queue).  Returns
 * SMQ_LIMIT_NONE when the request may proceed, else the scope whose bucket
 * was empty; a refused request takes no token from either bucket.
 */
enum smq_limit_scope ratelimit_take(struct smq_ratelimit *rl, const char *access_key_id,
                                    const char *queue);

/* "queue", "access_key" (the metrics label values); "-" for NONE. */
const char *ratelimit_scope_name(enum smq_limit_scope scope);

#endif
