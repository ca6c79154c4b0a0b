/*
 * ratelimit.c — owns the token buckets of the per-queue and per-access-key
 * request limits.
 *
 * Table.  Each limited scope has one table of nsets sets of RL_WAYS buckets,
 * organised like a set-associative CPU cache: a name hashes to one set and
 * lives in one of its ways or nowhere.  So a lookup compares at most RL_WAYS
 * hashes, nothing is allocated after ratelimit_new, and there is no deletion
 * to get wrong: giving a bucket up is overwriting it.
 *
 * Replacement, when a name is not in its set: a free way; else a way whose
 * bucket has refilled completely (idle: forgetting it changes nothing, a
 * fresh bucket is full too); else the least recently used way.  Only that
 * last case loosens a limit (the evicted name starts again from a full
 * bucket), and only while more names are busy than a set holds.
 *
 * Locks.  RL_STRIPES mutexes; set i is guarded by stripe i % RL_STRIPES.  A
 * critical section is a few compares and a multiply, and two requests only
 * meet on a lock when their names share a stripe.
 *
 * Tokens are counted in thousandths so that refill is exact integer
 * arithmetic: qps requests per second is qps thousandths per millisecond.
 *
 * Hash: FNV-1a from a per-process random seed, finished with a 64-bit mixer.
 * The seed keeps a client from computing offline a set of queue names that
 * all land in one set (to evict someone's bucket); it is not a MAC.
 */
#include "smqd/ratelimit.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "smqd/crypto.h"
#include "smqd/errors.h"

#define RL_WAYS 8            /* buckets per set */
#define RL_STRIPES 64        /* mutexes per table */
#define RL_MILLI 1000        /* one request, in token thousandths */

struct bucket {
    uint64_t hash;                   /* 0 = free */
    uint64_t last_ms;                /* tokens are as of this time; also the LRU age */
    int64_t tokens;                  /* thousandths, 0..burst */
    uint32_t name_len;               /* full length, may exceed what name holds */
    char name[RATELIMIT_NAME_MAX];   /* the first bytes of the name, no NUL */
};

struct rl_table {
    struct bucket *buckets;          /* nsets * RL_WAYS; NULL = scope not limited */
    uint32_t nsets;                  /* a power of two */
    uint64_t rate;                   /* thousandths per ms, i.e. requests per second */
    int64_t burst;                   /* thousandths */
    pthread_mutex_t locks[RL_STRIPES];
};

struct smq_ratelimit {
    const struct smq_clock *clock;
    uint64_t seed;
    struct rl_table tables[SMQ_LIMIT__COUNT];   /* indexed by scope; [NONE] unused */
};

/* ---- hashing ------------------------------------------------------------------ */

static uint64_t name_hash(uint64_t seed, const char *name, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ull ^ seed;

    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)name[i];
        h *= 0x100000001b3ull;
    }
    /* FNV's low bits (which pick the set) mix poorly on short names. */
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h != 0 ? h : 1;           /* 0 marks a free bucket */
}

static bool bucket_is(const struct bucket *b, uint64_t hash, const char *name, size_t len)
{
    size_t kept = len < RATELIMIT_NAME_MAX ? len : RATELIMIT_NAME_MAX;

    return b->hash == hash && b->name_len == len && memcmp(b->name, name, kept) == 0;
}

/* ---- one table ---------------------------------------------------------------- */

/* The bucket's tokens brought up to now_ms (not stored). */
static int64_t tokens_at(const struct rl_table *t, const struct bucket *b, uint64_t now_ms)
{
    uint64_t elapsed = now_ms > b->last_ms ? now_ms - b->last_ms : 0;
    uint64_t missing = (uint64_t)(t->burst - b->tokens);

    /* Compared by division first so that elapsed * rate cannot overflow
     * after a long idle time. */
    if (elapsed > missing / t->rate)
        return t->burst;
    return b->tokens + (int64_t)(elapsed * t->rate);
}

/* The way a new name takes in set (see the header comment for the order). */
static struct bucket *pick_victim(const struct rl_table *t, struct bucket *set, uint64_t now_ms)
{
    struct bucket *lru = &set[0];

    for (int i = 0; i < RL_WAYS; i++) {
        if (set[i].hash == 0 || tokens_at(t, &set[i], now_ms) == t->burst)
            return &set[i];
        if (set[i].last_ms < lru->last_ms)
            lru = &set[i];
    }
    return lru;
}

static struct bucket *find(struct bucket *set, uint64_t hash, const char *name, size_t len)
{
    for (int i = 0; i < RL_WAYS; i++)
        if (bucket_is(&set[i], hash, name, len))
            return &set[i];
    return NULL;
}

static size_t set_index(const struct rl_table *t, uint64_t hash)
{
    return (size_t)(hash & (t->nsets - 1));
}

/* Takes one token from name's bucket (created full if absent).  true if there was one. */
static bool table_take(struct rl_table *t, uint64_t hash, const char *name, size_t len,
                       uint64_t now_ms)
{
    size_t si = set_index(t, hash);
    struct bucket *set = &t->buckets[si * RL_WAYS], *b;
    pthread_mutex_t *lock = &t->locks[si % RL_STRIPES];
    bool allowed;

    pthread_mutex_lock(lock);
    b = find(set, hash, name, len);
    if (b == NULL) {
        b = pick_victim(t, set, now_ms);
        b->hash = hash;
        b->name_len = (uint32_t)len;
        memcpy(b->name, name, len < RATELIMIT_NAME_MAX ? len : RATELIMIT_NAME_MAX);
        b->tokens = t->burst;
        b->last_ms = now_ms;
    }
    b->tokens = tokens_at(t, b, now_ms);
    if (now_ms > b->last_ms)
        b->last_ms = now_ms;
    allowed = b->tokens >= RL_MILLI;
    if (allowed)
        b->tokens -= RL_MILLI;
    pthread_mutex_unlock(lock);
    return allowed;
}

/* Gives back a token table_take took (the other scope refused the request).
 * If the bucket was given up in between, there is nothing to give back to. */
static void table_refund(struct rl_table *t, uint64_t hash, const char *name, size_t len)
{
    size_t si = set_index(t, hash);
    struct bucket *b;

    pthread_mutex_lock(&t->locks[si % RL_STRIPES]);
    b = find(&t->buckets[si * RL_WAYS], hash, name, len);
    if (b != NULL)
        b->tokens = b->tokens + RL_MILLI < t->burst ? b->tokens + RL_MILLI : t->burst;
    pthread_mutex_unlock(&t->locks[si % RL_STRIPES]);
}

static uint32_t table_size(uint32_t expected)
{
    uint64_t want = (uint64_t)expected * 2;
    uint32_t n = RATELIMIT_MIN_BUCKETS;

    while (n < want && n < RATELIMIT_MAX_BUCKETS)
        n *= 2;
    return n;
}

/* qps 0 leaves the table empty: that scope is not limited. */
static int table_init(struct rl_table *t, uint32_t qps, uint32_t burst, uint32_t expected)
{
    uint32_t n = table_size(expected);

    if (qps == 0)
        return 0;
    t->buckets = calloc(n, sizeof *t->buckets);
    if (t->buckets == NULL)
        return SMQ_E_NOMEM;
    t->nsets = n / RL_WAYS;
    t->rate = qps;
    t->burst = (int64_t)(burst != 0 ? burst : qps) * RL_MILLI;
    for (int i = 0; i < RL_STRIPES; i++)
        pthread_mutex_init(&t->locks[i], NULL);
    return 0;
}

static void table_free(struct rl_table *t)
{
    if (t->buckets == NULL)
        return;
    for (int i = 0; i < RL_STRIPES; i++)
        pthread_mutex_destroy(&t->locks[i]);
    free(t->buckets);
    t->buckets = NULL;
}

/* ---- public ------------------------------------------------------------------- */

int ratelimit_new(const struct ratelimit_opts *opts, struct smq_ratelimit **out)
{
    struct smq_ratelimit *rl = calloc(1, sizeof *rl);

    *out = NULL;
    if (rl == NULL)
        return SMQ_E_NOMEM;
    rl->clock = opts->clock;
    /* Without random bytes the limits still work; only the hash is guessable. */
    if (crypto_random(&rl->seed, sizeof rl->seed) != 0)
        rl->seed = clock_mono_ms(opts->clock) ^ (uint64_t)(uintptr_t)rl;
    if (table_init(&rl->tables[SMQ_LIMIT_QUEUE], opts->queue_qps, opts->queue_burst,
                   opts->expected_queues) != 0
        || table_init(&rl->tables[SMQ_LIMIT_ACCESS_KEY], opts->access_key_qps,
                      opts->access_key_burst, opts->expected_access_keys) != 0) {
        ratelimit_free(rl);
        return SMQ_E_NOMEM;
    }
    *out = rl;
    return 0;
}

void ratelimit_free(struct smq_ratelimit *rl)
{
    if (rl == NULL)
        return;
    for (int s = 0; s < SMQ_LIMIT__COUNT; s++)
        table_free(&rl->tables[s]);
    free(rl);
}

enum smq_limit_scope ratelimit_take(struct smq_ratelimit *rl, const char *access_key_id,
                                    const char *queue)
{
    struct rl_table *kt, *qt;
    bool by_key, by_queue;
    size_t klen = 0, qlen = 0;
    uint64_t now_ms, khash = 0;

    if (rl == NULL)
        return SMQ_LIMIT_NONE;
    kt = &rl->tables[SMQ_LIMIT_ACCESS_KEY];
    qt = &rl->tables[SMQ_LIMIT_QUEUE];
    by_key = kt->buckets != NULL && access_key_id != NULL && access_key_id[0] != '\0';
    by_queue = qt->buckets != NULL && queue != NULL && queue[0] != '\0';
    if (!by_key && !by_queue)
        return SMQ_LIMIT_NONE;      /* the common case: no clock read, no lock */
    now_ms = clock_mono_ms(rl->clock);
    if (by_key) {
        klen = strlen(access_key_id);
        khash = name_hash(rl->seed, access_key_id, klen);
        if (!table_take(kt, khash, access_key_id, klen, now_ms))
            return SMQ_LIMIT_ACCESS_KEY;
    }
    if (by_queue) {
        qlen = strlen(queue);
        if (!table_take(qt, name_hash(rl->seed, queue, qlen), queue, qlen, now_ms)) {
            if (by_key)
                table_refund(kt, khash, access_key_id, klen);
            return SMQ_LIMIT_QUEUE;
        }
    }
    return SMQ_LIMIT_NONE;
}

const char *ratelimit_scope_name(enum smq_limit_scope scope)
{
    switch (scope) {
    case SMQ_LIMIT_QUEUE:
        return "queue";
    case SMQ_LIMIT_ACCESS_KEY:
        return "access_key";
    default:
        return "-";
    }
}
