/*
 * test_lease_pg.c — unit tests of the lease in PostgreSQL (lease.h,
 * pg_lease.c) against a real throw-away PostgreSQL 15 (ctest fixture
 * "pg"): a free lease is taken, a live one is refused with its holder's
 * name, renewal moves the proof on, an expired or released lease passes
 * to the next node under a new epoch that fences the former holder's
 * store, a former holder's sessions are ended by the takeover, and a
 * statement that does not come back by its deadline is abandoned and the
 * next call connects again.
 *
 * Expiry is made by the test writing expires_at into the past through its
 * own connection, not by waiting.  Each case has a schema of its own
 * (pg_scratch.h); without a server the program exits 77 (skipped).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <libpq-fe.h>
#include <pthread.h>

#include "pg_peek.h"
#include "pg_scratch.h"
#include "smqd/clock.h"
#include "smqd/errors.h"
#include "smqd/lease.h"
#include "smqd/store.h"

#define TTL_MS 5000
#define TOKEN_A "smqd/a/00000000000000aa"
#define TOKEN_B "smqd/b/00000000000000bb"

struct fixture {
    struct pg_scratch db;
    PGconn *peek;               /* the test's own view of the schema */
    struct smq_lease *a, *b;
};

#define peek_exec(f, sql) pg_peek_exec((f)->peek, (sql))

#define peek_int(f, sql) pg_peek_int((f)->peek, (sql))

static struct smq_store *open_store(struct fixture *f, const char *token)
{
    struct store_config cfg = {.backend = SMQ_STORE_POSTGRESQL, .dsn = f->db.dsn,
                               .app_name = token};
    struct smq_store *s = NULL;
    char err[512];

    if (store_open(&cfg, &s, err, sizeof err) != 0)
        fail_msg("store_open: %s", err);
    return s;
}

static struct smq_lease *new_lease(struct fixture *f, const char *node, const char *token)
{
    struct lease_opts o = {.dsn = f->db.dsn, .node_id = node, .token = token, .ttl_ms = TTL_MS};
    struct smq_lease *l = NULL;

    assert_int_equal(lease_new(&o, &l), 0);
    return l;
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);

    *state = f;
    if (f == NULL || pg_scratch_create(&f->db) != 0)
        return -1;
    f->peek = PQconnectdb(f->db.dsn);
    if (PQstatus(f->peek) != CONNECTION_OK)
        return -1;
    store_close(open_store(f, "smqd-test-lease"));  /* the schema, with its lease row */
    f->a = new_lease(f, "a", TOKEN_A);
    f->b = new_lease(f, "b", TOKEN_B);
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    lease_free(f->a);
    lease_free(f->b);
    PQfinish(f->peek);
    pg_scratch_drop(&f->db);
    free(f);
    return 0;
}

static uint64_t soon(void)
{
    return clock_mono_us() + 3000000;
}

static void expire(struct fixture *f)
{
    peek_exec(f, "UPDATE smq_lease SET expires_at = clock_timestamp() - interval '1 second'");
}

static void test_free_lease_is_taken_then_refused_to_others(void **state)
{
    struct fixture *f = *state;
    struct lease_grant g = {0}, h = {0};
    char err[256];
    uint64_t before = clock_mono_us();

    assert_int_equal(lease_take(f->a, soon(), &g, err, sizeof err), 0);
    assert_int_equal(g.epoch, 1);
    assert_int_equal(g.takeovers, 0);              /* the first holder took it from no one */
    assert_string_equal(g.holder, "a");
    assert_true(g.proven_until_us >= before + TTL_MS * 1000ull - 500000);
    assert_true(g.proven_until_us <= clock_mono_us() + TTL_MS * 1000ull);
    assert_int_equal(lease_take(f->b, soon(), &h, err, sizeof err), SMQ_E_SERVICE_UNAVAILABLE);
    assert_string_equal(h.holder, "a");
    assert_int_equal(peek_int(f, "SELECT epoch FROM smq_lease"), 1);
    assert_int_equal(peek_int(f, "SELECT count(*) FROM smq_lease WHERE holder_node = 'a' AND "
                                 "expires_at > clock_timestamp() + interval '4 seconds'"), 1);
}

static void test_renewal_moves_the_proof_and_the_expiry(void **state)
{
    struct fixture *f = *state;
    struct lease_grant g = {0};
    char err[256];
    uint64_t first;

    assert_int_equal(lease_take(f->a, soon(), &g, err, sizeof err), 0);
    first = g.proven_until_us;
    peek_exec(f, "UPDATE smq_lease SET expires_at = clock_timestamp() + interval '1 second'");
    assert_int_equal(lease_renew(f->a, soon(), &g, err, sizeof err), 0);
    assert_true(g.proven_until_us > first);
    assert_int_equal(peek_int(f, "SELECT count(*) FROM smq_lease WHERE "
                                 "expires_at > clock_timestamp() + interval '4 seconds'"), 1);
}

/* Expired: the holder cannot renew it, the next node takes it under a new
 * epoch and counts a takeover, and the former holder is refused. */
static void test_expired_lease_passes_on(void **state)
{
    struct fixture *f = *state;
    struct lease_grant ga = {0}, gb = {0};
    char err[256];

    assert_int_equal(lease_take(f->a, soon(), &ga, err, sizeof err), 0);
    expire(f);
    assert_int_equal(lease_renew(f->a, soon(), &ga, err, sizeof err), SMQ_E_SERVICE_UNAVAILABLE);
    assert_int_equal(lease_take(f->b, soon(), &gb, err, sizeof err), 0);
    assert_int_equal(gb.epoch, 2);
    assert_int_equal(gb.takeovers, 1);
    assert_int_equal(lease_take(f->a, soon(), &ga, err, sizeof err), SMQ_E_SERVICE_UNAVAILABLE);
    assert_string_equal(ga.holder, "b");
    assert_int_equal(lease_renew(f->b, soon(), &gb, err, sizeof err), 0);
}

/* Released: the next node need not wait for the expiry. */
static void test_released_lease_is_taken_at_once(void **state)
{
    struct fixture *f = *state;
    struct lease_grant ga = {0}, gb = {0};
    char err[256];

    assert_int_equal(lease_take(f->a, soon(), &ga, err, sizeof err), 0);
    assert_int_equal(lease_release(f->b, ga.epoch, soon()), 0);      /* not b's: ignored */
    assert_int_equal(lease_take(f->b, soon(), &gb, err, sizeof err), SMQ_E_SERVICE_UNAVAILABLE);
    assert_int_equal(lease_release(f->a, ga.epoch, soon()), 0);
    assert_int_equal(lease_take(f->b, soon(), &gb, err, sizeof err), 0);
    assert_int_equal(gb.epoch, 2);
}

/* Our own live lease may be taken again: the new epoch fences what the
 * old one would still commit, and the old epoch cannot be renewed. */
static void test_retake_by_the_holder_bumps_the_epoch(void **state)
{
    struct fixture *f = *state;
    struct lease_grant g1 = {0}, g2 = {0};
    char err[256];

    assert_int_equal(lease_take(f->a, soon(), &g1, err, sizeof err), 0);
    assert_int_equal(lease_take(f->a, soon(), &g2, err, sizeof err), 0);
    assert_int_equal(g2.epoch, g1.epoch + 1);
    assert_int_equal(g2.takeovers, 0);
    assert_int_equal(lease_renew(f->a, soon(), &g1, err, sizeof err), SMQ_E_SERVICE_UNAVAILABLE);
    assert_int_equal(lease_renew(f->a, soon(), &g2, err, sizeof err), 0);
}

/* The former holder's store, fenced at its epoch, commits until the
 * takeover and never after it; the takeover ended its sessions. */
static void test_takeover_fences_and_ends_the_former_holders_store(void **state)
{
    struct fixture *f = *state;
    struct lease_grant ga = {0}, gb = {0};
    struct smq_store *s = open_store(f, TOKEN_A);
    char err[256];

    assert_int_equal(lease_take(f->a, soon(), &ga, err, sizeof err), 0);
    assert_int_equal(store_fence(s, TOKEN_A, ga.epoch), 0);
    assert_int_equal(store_meta_set(s, "k", "1", 1), 0);
    assert_int_equal(peek_int(f, "SELECT count(*) FROM pg_stat_activity WHERE application_name = '"
                                 TOKEN_A "'"), 2);                   /* the store's two */
    expire(f);
    assert_int_equal(lease_take(f->b, soon(), &gb, err, sizeof err), 0);
    assert_int_equal(peek_int(f, "SELECT count(*) FROM pg_stat_activity WHERE application_name = '"
                                 TOKEN_A "'"), 0);
    assert_int_not_equal(store_meta_set(s, "k", "2", 1), 0);
    assert_int_equal(lease_connects(f->a), 1);        /* the lease's own was left alone */
    assert_int_equal(peek_int(f, "SELECT count(*) FROM smq_meta WHERE key = 'k' AND "
                                 "value = '\\x31'"), 1);
    store_close(s);
}

/* A take that cannot get the row (a session holds it) gives up by its
 * deadline; the next call makes a new connection and succeeds. */
static void test_deadline_abandons_the_statement(void **state)
{
    struct fixture *f = *state;
    struct lease_grant g = {0};
    char err[256] = "";

    assert_int_equal(lease_take(f->a, soon(), &g, err, sizeof err), 0);
    assert_int_equal(lease_connects(f->a), 1);
    expire(f);
    peek_exec(f, "BEGIN");
    peek_exec(f, "SELECT * FROM smq_lease FOR UPDATE");
    assert_int_equal(lease_take(f->b, clock_mono_us() + 300000, &g, err, sizeof err),
                     SMQ_E_INTERNAL);
    assert_non_null(strstr(err, "in time"));
    peek_exec(f, "COMMIT");
    /* The abandoned take may still have finished on the server (it is one
     * statement, done whatever the client does): then this is b's retake. */
    assert_int_equal(lease_take(f->b, soon(), &g, err, sizeof err), 0);
    assert_int_equal(lease_connects(f->b), 2);
    assert_true(g.epoch == 2 || g.epoch == 3);
    assert_int_equal(peek_int(f, "SELECT epoch FROM smq_lease WHERE holder_node = 'b'"), g.epoch);
}

struct racer {
    struct smq_lease *l;
    struct lease_grant g;
    int rc;
};

static void *race_take(void *arg)
{
    struct racer *r = arg;
    char err[256];

    r->rc = lease_take(r->l, soon(), &r->g, err, sizeof err);
    return NULL;
}

/* Two standbys take an expired lease at once: one gets it, the other is
 * told who did, and the epoch moved by one. */
static void test_two_takers_one_winner(void **state)
{
    struct fixture *f = *state;
    struct lease_grant g = {0};
    struct racer ra = {.l = f->a}, rb = {.l = f->b};
    pthread_t ta, tb;
    char err[256];

    assert_int_equal(lease_take(f->a, soon(), &g, err, sizeof err), 0);
    assert_int_equal(lease_renew(f->b, soon(), &g, err, sizeof err), SMQ_E_SERVICE_UNAVAILABLE);
    expire(f);
    peek_exec(f, "UPDATE smq_lease SET holder_token = 'smqd/gone/1', holder_node = 'gone'");
    for (int round = 0; round < 5; round++) {
        assert_int_equal(pthread_create(&ta, NULL, race_take, &ra), 0);
        assert_int_equal(pthread_create(&tb, NULL, race_take, &rb), 0);
        pthread_join(ta, NULL);
        pthread_join(tb, NULL);
        assert_true((ra.rc == 0) != (rb.rc == 0));
        assert_int_equal(ra.rc == 0 ? rb.rc : ra.rc, SMQ_E_SERVICE_UNAVAILABLE);
        assert_string_equal(ra.rc == 0 ? rb.g.holder : ra.g.holder, ra.rc == 0 ? "a" : "b");
        assert_int_equal(peek_int(f, "SELECT epoch FROM smq_lease"),
                         (ra.rc == 0 ? ra.g.epoch : rb.g.epoch));
        peek_exec(f, "UPDATE smq_lease SET holder_token = 'smqd/gone/1', holder_node = 'gone', "
                     "expires_at = clock_timestamp() - interval '1 second'");
    }
}

static void test_unreachable_database_fails_in_time(void **state)
{
    struct lease_opts o = {.dsn = "host=127.0.0.1 port=1 dbname=x user=x", .node_id = "a",
                           .token = TOKEN_A, .ttl_ms = TTL_MS};
    struct smq_lease *l = NULL;
    struct lease_grant g = {0};
    char err[256] = "";

    (void)state;
    assert_int_equal(lease_new(&o, &l), 0);
    assert_int_equal(lease_take(l, soon(), &g, err, sizeof err), SMQ_E_INTERNAL);
    assert_non_null(strstr(err, "cannot connect"));
    assert_int_equal(lease_renew(l, soon(), &g, err, sizeof err), SMQ_E_INTERNAL);
    lease_free(l);
}

static void test_bad_options_are_refused(void **state)
{
    struct lease_opts o = {.dsn = "x", .node_id = "a", .token = TOKEN_A, .ttl_ms = 0};
    struct smq_lease *l = NULL;
    char long_token[80];

    (void)state;
    assert_int_equal(lease_new(&o, &l), SMQ_E_INVALID_ARGUMENT);
    memset(long_token, 'x', sizeof long_token - 1);
    long_token[sizeof long_token - 1] = '\0';
    o.ttl_ms = 1000;
    o.token = long_token;
    assert_int_equal(lease_new(&o, &l), SMQ_E_INVALID_ARGUMENT);
    assert_null(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_free_lease_is_taken_then_refused_to_others, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_renewal_moves_the_proof_and_the_expiry, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_expired_lease_passes_on, setup, teardown),
        cmocka_unit_test_setup_teardown(test_released_lease_is_taken_at_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retake_by_the_holder_bumps_the_epoch, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_takeover_fences_and_ends_the_former_holders_store,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_deadline_abandons_the_statement, setup, teardown),
        cmocka_unit_test_setup_teardown(test_two_takers_one_winner, setup, teardown),
        cmocka_unit_test(test_unreachable_database_fails_in_time),
        cmocka_unit_test(test_bad_options_are_refused),
    };

    if (!pg_scratch_available()) {
        fprintf(stderr, "test_lease_pg: no PostgreSQL (SMQD_TEST_PG_DSN / SMQD_TEST_PG_DIR)\n");
        return 77;
    }
    return cmocka_run_group_tests(tests, NULL, NULL);
}
