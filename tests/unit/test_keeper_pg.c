/*
 * test_keeper_pg.c — unit tests of the lease keeper thread (keeper.h)
 * against a real throw-away PostgreSQL 15 (ctest fixture "pg"): of two
 * keepers exactly one holds the lease and proves it through the role, a
 * stopped keeper releases it to the other, a lease taken away in the
 * database demotes the role at once and is sought again only when asked,
 * a node cannot be made active on a grant that was lost meanwhile, and a
 * keeper told to give the lease up releases it.
 *
 * The keepers run with intervals of tens of milliseconds; the tests wait
 * for states with a bound (they never assert how long anything took).
 * Without a server the program exits 77 (skipped).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <libpq-fe.h>

#include "pg_peek.h"
#include "pg_scratch.h"
#include "smqd/clock.h"
#include "smqd/keeper.h"
#include "smqd/store.h"

#define WAIT_MAX_US 10000000ull

struct fixture {
    struct pg_scratch db;
    PGconn *peek;
    struct smq_role role_a, role_b;
    struct smq_keeper *a, *b;
};

#define peek_exec(f, sql) pg_peek_exec((f)->peek, (sql))

static struct smq_keeper *start(struct fixture *f, const char *node, struct smq_role *role)
{
    char token[64];
    struct lease_opts lo = {.dsn = f->db.dsn, .node_id = node, .token = token, .ttl_ms = 3000};
    struct keeper_opts ko = {.role = role, .seek_ms = 20, .renew_ms = 50, .give_up_ms = 5000};
    struct smq_keeper *k = NULL;

    snprintf(token, sizeof token, "smqd-test-keeper/%.30s/%.8s", f->db.schema, node);
    role_init(role);
    assert_int_equal(lease_new(&lo, &ko.lease), 0);
    assert_int_equal(keeper_start(&ko, &k), 0);
    return k;
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    struct store_config cfg = {.backend = SMQ_STORE_POSTGRESQL, .app_name = "smqd-test-keeper"};
    struct smq_store *s = NULL;
    char err[512];

    *state = f;
    if (f == NULL || pg_scratch_create(&f->db) != 0)
        return -1;
    cfg.dsn = f->db.dsn;
    if (store_open(&cfg, &s, err, sizeof err) != 0)   /* the schema, with its lease row */
        return -1;
    store_close(s);
    f->peek = PQconnectdb(f->db.dsn);
    return PQstatus(f->peek) == CONNECTION_OK ? 0 : -1;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    keeper_stop(f->a);
    keeper_stop(f->b);
    PQfinish(f->peek);
    pg_scratch_drop(&f->db);
    free(f);
    return 0;
}

static void pause_ms(long ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};

    nanosleep(&t, NULL);
}

/* Waits (bounded) until k is in state want; returns its grant. */
static struct lease_grant wait_state(struct smq_keeper *k, enum keeper_state want)
{
    uint64_t end = clock_mono_us() + WAIT_MAX_US;
    struct lease_grant g = {0};

    while (keeper_state(k, &g) != want) {
        if (clock_mono_us() > end)
            fail_msg("keeper never reached state %d", (int)want);
        pause_ms(5);
    }
    return g;
}

static void test_one_of_two_holds_and_proves_it(void **state)
{
    struct fixture *f = *state;
    struct lease_grant g;

    f->a = start(f, "a", &f->role_a);
    g = wait_state(f->a, KEEPER_HELD);
    f->b = start(f, "b", &f->role_b);
    pause_ms(200);                          /* b has asked several times by now */
    assert_int_equal(keeper_state(f->b, NULL), KEEPER_SEEKING);
    assert_true(keeper_activate_role(f->a, &g));
    pause_ms(200);                          /* a has renewed several times */
    assert_true(role_serving(&f->role_a, clock_mono_us()));
    assert_true(keeper_state(f->a, &g) == KEEPER_HELD && g.proven_until_us > clock_mono_us());
}

static void test_stopped_keeper_releases_to_the_other(void **state)
{
    struct fixture *f = *state;
    struct lease_grant ga, gb;

    f->a = start(f, "a", &f->role_a);
    ga = wait_state(f->a, KEEPER_HELD);
    f->b = start(f, "b", &f->role_b);
    keeper_stop(f->a);
    f->a = NULL;
    /* Released, not expired: well inside the 3 s lease. */
    gb = wait_state(f->b, KEEPER_HELD);
    assert_int_equal(gb.epoch, ga.epoch + 1);
}

static void test_lease_taken_away_demotes_and_waits_to_be_asked(void **state)
{
    struct fixture *f = *state;
    struct lease_grant g;

    f->a = start(f, "a", &f->role_a);
    g = wait_state(f->a, KEEPER_HELD);
    role_activate(&f->role_a, g.epoch, g.takeovers, g.proven_until_us);
    peek_exec(f, "UPDATE smq_lease SET holder_node = 'x', holder_token = 'smqd/x/1', "
                 "epoch = 99, expires_at = clock_timestamp() + interval '1 hour'");
    wait_state(f->a, KEEPER_LOST);
    assert_false(role_serving(&f->role_a, clock_mono_us()));
    assert_int_equal(role_state(&f->role_a), SMQ_ROLE_STANDBY);
    /* A node that finished loading only now must not become active on
     * the grant it started from (its proof may still be in the future). */
    assert_false(keeper_activate_role(f->a, &g));
    assert_int_equal(role_state(&f->role_a), SMQ_ROLE_STANDBY);
    pause_ms(100);
    assert_int_equal(keeper_state(f->a, NULL), KEEPER_LOST);     /* until asked */
    keeper_seek(f->a, false);
    assert_int_equal(keeper_state(f->a, NULL), KEEPER_SEEKING);
    peek_exec(f, "UPDATE smq_lease SET expires_at = clock_timestamp() - interval '1 second'");
    g = wait_state(f->a, KEEPER_HELD);
    assert_int_equal(g.epoch, 100);
}

static void test_giving_up_releases_the_lease(void **state)
{
    struct fixture *f = *state;
    struct lease_grant ga, gb;

    f->a = start(f, "a", &f->role_a);
    ga = wait_state(f->a, KEEPER_HELD);
    f->b = start(f, "b", &f->role_b);
    keeper_seek(f->a, true);
    gb = wait_state(f->b, KEEPER_HELD);     /* released: b need not wait 3 s */
    assert_int_equal(gb.epoch, ga.epoch + 1);
    pause_ms(200);
    assert_int_equal(keeper_state(f->a, NULL), KEEPER_SEEKING);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_one_of_two_holds_and_proves_it, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stopped_keeper_releases_to_the_other, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_lease_taken_away_demotes_and_waits_to_be_asked,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_giving_up_releases_the_lease, setup, teardown),
    };

    if (!pg_scratch_available()) {
        fprintf(stderr, "test_keeper_pg: no PostgreSQL (SMQD_TEST_PG_DSN / SMQD_TEST_PG_DIR)\n");
        return 77;
    }
    return cmocka_run_group_tests(tests, NULL, NULL);
}
