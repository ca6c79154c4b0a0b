/*
 * test_ratelimit.c — unit tests for ratelimit.c on a fake clock (no sleeping):
 * limits off by default, burst then refusal, refill to the rate and no more
 * than the burst, the two scopes independent per name, a refused request
 * taking no token from either bucket, idle buckets reused before busy ones,
 * least-recently-used eviction when a set is full, long names, huge time
 * jumps, and concurrent takers never getting more than the bucket holds.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "smqd/ratelimit.h"

struct fixture {
    struct smq_fake_clock clock;
    struct smq_ratelimit *rl;
};

static struct fixture fx;

/* A limiter on the fake clock at t = 1000 ms.  expected 1 = one set of 8 buckets. */
static void make(uint32_t queue_qps, uint32_t queue_burst, uint32_t key_qps, uint32_t key_burst,
                 uint32_t expected)
{
    struct ratelimit_opts o = {&fx.clock.clock, queue_qps, queue_burst, key_qps, key_burst,
                               expected, expected};

    clock_fake_init(&fx.clock, 1000, 1700000000000);
    assert_int_equal(ratelimit_new(&o, &fx.rl), 0);
    assert_non_null(fx.rl);
}

static int teardown(void **state)
{
    (void)state;
    ratelimit_free(fx.rl);
    fx.rl = NULL;
    return 0;
}

/* How many of n requests for (key, queue) pass right now. */
static int passes(const char *key, const char *queue, int n)
{
    int ok = 0;

    for (int i = 0; i < n; i++)
        ok += ratelimit_take(fx.rl, key, queue) == SMQ_LIMIT_NONE;
    return ok;
}

static void test_ratelimit_off_allows_everything(void **state)
{
    (void)state;
    make(0, 0, 0, 0, 100);
    assert_int_equal(passes("key", "q", 10000), 10000);
    assert_int_equal(ratelimit_take(NULL, "key", "q"), SMQ_LIMIT_NONE);
}

static void test_ratelimit_burst_then_queue_refused(void **state)
{
    (void)state;
    make(5, 5, 0, 0, 100);
    assert_int_equal(passes("key", "orders", 5), 5);
    assert_int_equal(ratelimit_take(fx.rl, "key", "orders"), SMQ_LIMIT_QUEUE);
    /* Another queue has its own bucket; no queue (ListQueue) is not limited. */
    assert_int_equal(passes("key", "billing", 20), 5);
    assert_int_equal(passes("key", "", 20), 20);
    assert_int_equal(passes("key", NULL, 20), 20);
}

static void test_ratelimit_refills_at_rate_up_to_burst(void **state)
{
    (void)state;
    make(5, 5, 0, 0, 100);
    assert_int_equal(passes("k", "q", 10), 5);
    clock_fake_advance(&fx.clock, 199);            /* 0.995 of a token */
    assert_int_equal(passes("k", "q", 3), 0);
    clock_fake_advance(&fx.clock, 1);              /* 200 ms: exactly one */
    assert_int_equal(passes("k", "q", 3), 1);
    clock_fake_advance(&fx.clock, 10000);          /* long quiet: capped at the burst */
    assert_int_equal(passes("k", "q", 20), 5);
    clock_fake_advance(&fx.clock, 1000);           /* a second refills the whole rate */
    assert_int_equal(passes("k", "q", 20), 5);
}

static void test_ratelimit_burst_differs_from_rate(void **state)
{
    (void)state;
    make(2, 10, 0, 0, 100);
    assert_int_equal(passes("k", "q", 20), 10);    /* the burst at once */
    clock_fake_advance(&fx.clock, 500);
    assert_int_equal(passes("k", "q", 20), 1);     /* then the rate */
    teardown(NULL);
    make(3, 0, 0, 0, 100);                          /* burst 0 = the rate */
    assert_int_equal(passes("k", "q", 20), 3);
}

static void test_ratelimit_access_key_scope(void **state)
{
    (void)state;
    make(0, 0, 3, 3, 4);
    assert_int_equal(passes("alice", "q1", 2), 2);
    assert_int_equal(passes("alice", "q2", 5), 1);  /* the key's budget spans queues */
    assert_int_equal(ratelimit_take(fx.rl, "alice", ""), SMQ_LIMIT_ACCESS_KEY);
    assert_int_equal(passes("bob", "q1", 5), 3);
    assert_int_equal(passes(NULL, "q1", 5), 5);    /* unauthenticated never reaches here */
}

/* A request one scope refuses takes nothing from the other. */
static void test_ratelimit_refused_takes_nothing(void **state)
{
    char q[8];
    int ok = 0;

    (void)state;
    make(1, 1, 10, 10, 16);
    assert_int_equal(passes("k", "q1", 1), 1);      /* key: 9 left */
    assert_int_equal(ratelimit_take(fx.rl, "k", "q1"), SMQ_LIMIT_QUEUE);
    assert_int_equal(passes("k", "q1", 20), 0);     /* 21 refusals in all ... */
    for (int i = 2; i <= 12; i++) {
        snprintf(q, sizeof q, "q%d", i);
        ok += ratelimit_take(fx.rl, "k", q) == SMQ_LIMIT_NONE;
    }
    assert_int_equal(ok, 9);                        /* ... cost the key nothing */
    teardown(NULL);

    make(5, 5, 1, 1, 16);
    assert_int_equal(passes("k1", "q", 1), 1);      /* queue: 4 left */
    assert_int_equal(ratelimit_take(fx.rl, "k1", "q"), SMQ_LIMIT_ACCESS_KEY);
    assert_int_equal(ratelimit_take(fx.rl, "k1", "q"), SMQ_LIMIT_ACCESS_KEY);
    assert_int_equal(passes("k2", "q", 1) + passes("k3", "q", 1) + passes("k4", "q", 1)
                     + passes("k5", "q", 1), 4);    /* the refusals took no queue token */
    assert_int_equal(ratelimit_take(fx.rl, "k6", "q"), SMQ_LIMIT_QUEUE);
}

/*
 * One set of 8 buckets (expected 1).  "hot" is drained, seven names use one
 * token each; 300 ms later the seven have refilled (idle) and "hot" has not:
 * seven new names must take the idle buckets and leave "hot" as it was.
 */
static void test_ratelimit_idle_buckets_reused_first(void **state)
{
    char name[8];

    (void)state;
    make(5, 5, 0, 0, 1);
    assert_int_equal(passes("k", "hot", 10), 5);
    for (int i = 1; i <= 7; i++) {
        snprintf(name, sizeof name, "k%d", i);
        assert_int_equal(passes("k", name, 1), 1);
    }
    clock_fake_advance(&fx.clock, 300);             /* hot: 1.5 tokens; k1..k7: full */
    for (int i = 1; i <= 7; i++) {
        snprintf(name, sizeof name, "n%d", i);
        assert_int_equal(passes("k", name, 1), 1);
    }
    assert_int_equal(passes("k", "hot", 10), 1);    /* kept: not a fresh bucket of 5 */
}

/* With every bucket of the set busy, a new name takes the least recently used one. */
static void test_ratelimit_full_set_evicts_lru(void **state)
{
    char name[8];

    (void)state;
    make(5, 5, 0, 0, 1);
    assert_int_equal(passes("k", "old", 10), 5);
    for (int i = 1; i <= 7; i++) {
        clock_fake_advance(&fx.clock, 1);
        snprintf(name, sizeof name, "b%d", i);
        assert_int_equal(passes("k", name, 4), 4);   /* busy: 1 of 5 left */
    }
    clock_fake_advance(&fx.clock, 1);
    assert_int_equal(passes("k", "new", 1), 1);      /* evicts "old" (least recent) */
    assert_int_equal(passes("k", "b7", 2), 1);       /* the others are intact */
    assert_int_equal(passes("k", "old", 10), 5);     /* "old" starts again full */
    /* A stream of new names never grows the table; the limit still holds for
     * whoever is busy right now. */
    for (int i = 0; i < 100000; i++) {
        snprintf(name, sizeof name, "x%d", i);
        ratelimit_take(fx.rl, "k", name);
    }
    assert_int_equal(passes("k", "x99999", 10), 4);
}

static void test_ratelimit_long_names_kept_apart(void **state)
{
    char a[301], b[301];

    (void)state;
    make(2, 2, 0, 0, 100);
    memset(a, 'a', 300);
    a[300] = '\0';
    memcpy(b, a, sizeof b);
    b[299] = 'b';                                    /* differs after RATELIMIT_NAME_MAX */
    assert_int_equal(passes("k", a, 5), 2);
    assert_int_equal(passes("k", b, 5), 2);
    assert_int_equal(passes("k", a, 5), 0);
}

static void test_ratelimit_huge_time_jump(void **state)
{
    (void)state;
    make(1000000, 1000000, 0, 0, 100);
    assert_int_equal(passes("k", "q", 1000000), 1000000);
    assert_int_equal(passes("k", "q", 1), 0);
    clock_fake_advance(&fx.clock, UINT64_C(1) << 62); /* elapsed * rate would overflow */
    assert_int_equal(passes("k", "q", 1000001), 1000000);
}

#define N_THREADS 4
#define PER_THREAD 5000

static void *taker(void *arg)
{
    intptr_t ok = 0;

    (void)arg;
    for (int i = 0; i < PER_THREAD; i++)
        ok += ratelimit_take(fx.rl, "shared-key", "shared-queue") == SMQ_LIMIT_NONE;
    return (void *)ok;
}

/* The clock stands still: exactly the burst passes, however the threads interleave. */
static void test_ratelimit_concurrent_takers(void **state)
{
    pthread_t threads[N_THREADS];
    intptr_t total = 0;

    (void)state;
    make(1, 7000, 1, 9000, 4);
    for (int i = 0; i < N_THREADS; i++)
        assert_int_equal(pthread_create(&threads[i], NULL, taker, NULL), 0);
    for (int i = 0; i < N_THREADS; i++) {
        void *ok;
        pthread_join(threads[i], &ok);
        total += (intptr_t)ok;
    }
    assert_int_equal(total, 7000);
    /* The 13,000 queue refusals gave their key tokens back. */
    assert_int_equal(passes("shared-key", "other", 3000), 2000);
}

static void test_ratelimit_scope_names(void **state)
{
    (void)state;
    assert_string_equal(ratelimit_scope_name(SMQ_LIMIT_QUEUE), "queue");
    assert_string_equal(ratelimit_scope_name(SMQ_LIMIT_ACCESS_KEY), "access_key");
    assert_string_equal(ratelimit_scope_name(SMQ_LIMIT_NONE), "-");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_ratelimit_off_allows_everything, teardown),
        cmocka_unit_test_teardown(test_ratelimit_burst_then_queue_refused, teardown),
        cmocka_unit_test_teardown(test_ratelimit_refills_at_rate_up_to_burst, teardown),
        cmocka_unit_test_teardown(test_ratelimit_burst_differs_from_rate, teardown),
        cmocka_unit_test_teardown(test_ratelimit_access_key_scope, teardown),
        cmocka_unit_test_teardown(test_ratelimit_refused_takes_nothing, teardown),
        cmocka_unit_test_teardown(test_ratelimit_idle_buckets_reused_first, teardown),
        cmocka_unit_test_teardown(test_ratelimit_full_set_evicts_lru, teardown),
        cmocka_unit_test_teardown(test_ratelimit_long_names_kept_apart, teardown),
        cmocka_unit_test_teardown(test_ratelimit_huge_time_jump, teardown),
        cmocka_unit_test_teardown(test_ratelimit_concurrent_takers, teardown),
        cmocka_unit_test(test_ratelimit_scope_names),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
