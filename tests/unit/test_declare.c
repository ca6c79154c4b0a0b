/*
 * test_declare.c — unit tests for declare.c (declare.h): the [queue.NAME]
 * sections applied at start-up.  A declared queue that is missing is
 * created with the default attributes; every declared dead-letter policy is
 * set in a second pass (so a target may be declared after the section that
 * names it); what a section does not name is left as the API set it; a
 * failure is reported as "[queue.NAME] (line N): reason", with
 * SMQ_E_INVALID_ARGUMENT when the configuration is at fault and another
 * code when the store is.
 *
 * The engine runs synchronously on the shared engine fixture
 * (engine_fixture.h: a real SQLite store in a temporary directory, a fake
 * clock); what declare_queues did is read back with GetQueueAttributes and,
 * where it must be on disk, after restarting the engine on the same store.
 */
#include <stdio.h>
#include <string.h>

#include "engine_fixture.h"

#include "declare.h"
#include "smqd/mns.h"

static struct smq_queue_decl decl(const char *name, const char *target, int max_receive,
                                  int line)
{
    struct smq_queue_decl d;

    memset(&d, 0, sizeof d);
    snprintf(d.name, sizeof d.name, "%s", name);
    snprintf(d.dlq_target, sizeof d.dlq_target, "%s", target != NULL ? target : "");
    d.dlq_max_receive_count = target != NULL ? max_receive : 0;
    d.line = line;
    return d;
}

static int declare(struct fx *f, const struct smq_queue_decl *decls, size_t n, char *err,
                   size_t err_size)
{
    err[0] = '\0';
    return declare_queues(f->e, decls, n, err, err_size);
}

/* err starts with "[queue.NAME] (line N): " and gives a reason after it. */
static void assert_err_prefix(const char *err, const char *name, int line)
{
    char prefix[128];

    snprintf(prefix, sizeof prefix, "[queue.%s] (line %d): ", name, line);
    if (strncmp(err, prefix, strlen(prefix)) != 0 || strlen(err) == strlen(prefix))
        fail_msg("err \"%s\" does not start with \"%s\" followed by a reason", err, prefix);
}

static void assert_policy(struct fx *f, const char *queue, const char *target, int max)
{
    struct smq_queue_info info;

    assert_int_equal(fx_get_info(f, queue, &info), 0);
    assert_int_equal(info.attrs.dlq.enabled, 1);
    assert_string_equal(info.attrs.dlq.target, target);
    assert_int_equal(info.attrs.dlq.max_receive, max);
}

static void assert_default_attrs(struct fx *f, const char *queue)
{
    struct smq_queue_attrs def;
    struct smq_queue_info info;

    mns_default_attrs(&def);
    assert_int_equal(fx_get_info(f, queue, &info), 0);
    assert_true(mns_attrs_equal(&info.attrs, &def));
}

/* Missing queues are created with the default attributes, for good (they
 * are there after a restart); no sections is no work. */
static void test_declare_creates_missing_queues_with_defaults(void **state)
{
    struct fx *f = *state;
    struct smq_queue_decl d[2] = {decl("alpha", NULL, 0, 1), decl("beta", NULL, 0, 4)};
    char err[256];

    assert_int_equal(declare(f, d, 0, err, sizeof err), 0);
    assert_int_equal(fx_stats(f).queues, 0);
    assert_int_equal(declare(f, d, 2, err, sizeof err), 0);
    assert_int_equal(fx_stats(f).queues, 2);
    fx_reopen_engine(f, FX_MAX_QUEUES_DEFAULT);
    assert_default_attrs(f, "alpha");
    assert_default_attrs(f, "beta");
    assert_int_equal(db_peek_int(f->path, "SELECT count(*) FROM queue"), 2);
}

/* A section may name a dead-letter target declared after it (a one-pass
 * implementation would find the target missing); the policy is persisted. */
static void test_declare_target_declared_after_its_source(void **state)
{
    struct fx *f = *state;
    struct smq_queue_decl d[2] = {decl("orders", "orders-dlq", 5, 1),
                                  decl("orders-dlq", NULL, 0, 5)};
    char err[256];

    assert_int_equal(declare(f, d, 2, err, sizeof err), 0);
    assert_policy(f, "orders", "orders-dlq", 5);
    fx_reopen_engine(f, FX_MAX_QUEUES_DEFAULT);
    assert_policy(f, "orders", "orders-dlq", 5);
    assert_default_attrs(f, "orders-dlq");
}

/* A target that is not declared but exists already (made by the API) is
 * accepted. */
static void test_declare_target_existing_but_not_declared(void **state)
{
    struct fx *f = *state;
    struct smq_queue_decl d = decl("src", "api-dlq", 3, 2);
    char err[256];

    assert_int_equal(fx_create_queue(f, "api-dlq", NULL, 0, NULL), 0);
    assert_int_equal(declare(f, &d, 1, err, sizeof err), 0);
    assert_policy(f, "src", "api-dlq", 3);
}

/* An existing queue whose section names no policy is left exactly as the
 * API made it: attributes, its policy, and LastModifyTime (no SetQueue). */
static void test_declare_leaves_existing_queue_alone(void **state)
{
    struct fx *f = *state;
    struct smq_queue_decl d[2] = {decl("q", NULL, 0, 1), decl("t", NULL, 0, 3)};
    struct smq_queue_info before, after;
    char err[256];

    assert_int_equal(fx_create_queue(f, "t", NULL, 0, NULL), 0);
    assert_int_equal(fx_create_with_dlq(f, "q", "t", 7, 60), 0);
    assert_int_equal(fx_get_info(f, "q", &before), 0);
    fx_tick(f, 5000);            /* a write now would move LastModifyTime */
    assert_int_equal(declare(f, d, 2, err, sizeof err), 0);
    assert_int_equal(fx_get_info(f, "q", &after), 0);
    assert_true(mns_attrs_equal(&after.attrs, &before.attrs));
    assert_int_equal(after.attrs.visibility_s, 60);
    assert_true(after.modify_s == before.modify_s);
    assert_true(after.create_s == before.create_s);
    assert_policy(f, "q", "t", 7);
}

/* On an existing queue a section that names a policy sets that policy
 * (replacing the API's) and nothing else: the other attributes stay. */
static void test_declare_sets_only_the_policy_on_existing_queue(void **state)
{
    struct fx *f = *state;
    struct smq_queue_decl d = decl("q", "t2", 9, 12);
    struct smq_queue_info before, after;
    char err[256];

    assert_int_equal(fx_create_queue(f, "t1", NULL, 0, NULL), 0);
    assert_int_equal(fx_create_queue(f, "t2", NULL, 0, NULL), 0);
    assert_int_equal(fx_create_with_dlq(f, "q", "t1", 2, 45), 0);
    assert_int_equal(fx_get_info(f, "q", &before), 0);
    assert_int_equal(declare(f, &d, 1, err, sizeof err), 0);
    assert_int_equal(fx_get_info(f, "q", &after), 0);
    assert_policy(f, "q", "t2", 9);
    after.attrs.dlq = before.attrs.dlq;
    assert_true(mns_attrs_equal(&after.attrs, &before.attrs));
    assert_int_equal(after.attrs.visibility_s, 45);
    fx_reopen_engine(f, FX_MAX_QUEUES_DEFAULT);
    assert_policy(f, "q", "t2", 9);
}

/* Applying the same declarations again (the next start-up) succeeds and
 * changes nothing: no second queue, the same policy. */
static void test_declare_again_is_a_no_op(void **state)
{
    struct fx *f = *state;
    struct smq_queue_decl d[2] = {decl("a", "b", 4, 1), decl("b", NULL, 0, 4)};
    char err[256];

    assert_int_equal(declare(f, d, 2, err, sizeof err), 0);
    fx_reopen_engine(f, FX_MAX_QUEUES_DEFAULT);
    assert_int_equal(declare(f, d, 2, err, sizeof err), 0);
    assert_int_equal(fx_stats(f).queues, 2);
    assert_policy(f, "a", "b", 4);
    assert_int_equal(db_peek_int(f->path, "SELECT count(*) FROM queue"), 2);
}

/* A target neither declared nor existing: the configuration is at fault
 * (SMQ_E_INVALID_ARGUMENT, the section and its line in err), and
 * (docs/operations.md) the start stops before any queue is created, even
 * those declared before the bad section. */
static void test_declare_missing_target_is_invalid_and_creates_nothing(void **state)
{
    struct fx *f = *state;
    struct smq_queue_decl d[3] = {decl("first", NULL, 0, 1), decl("bad", "nowhere", 3, 4),
                                  decl("last", NULL, 0, 9)};
    char err[256];

    assert_int_equal(declare(f, d, 3, err, sizeof err), SMQ_E_INVALID_ARGUMENT);
    assert_err_prefix(err, "bad", 4);
    assert_non_null(strstr(err, "nowhere"));
    assert_int_equal(fx_stats(f).queues, 0);
    assert_int_equal(db_peek_int(f->path, "SELECT count(*) FROM queue"), 0);
}

/* A queue named as its own target (the config parser refuses it, but the
 * function must not rely on that): the configuration is at fault. */
static void test_declare_self_target_is_invalid(void **state)
{
    struct fx *f = *state;
    struct smq_queue_decl d = decl("loop", "loop", 3, 6);
    char err[256];

    assert_int_equal(declare(f, &d, 1, err, sizeof err), SMQ_E_INVALID_ARGUMENT);
    assert_err_prefix(err, "loop", 6);
    assert_int_equal(fx_stats(f).queues, 0);            /* nothing created */
}

/* A store that fails while a queue is created: not the configuration's
 * fault, so another SMQ_E_* code than InvalidArgument, with the section in
 * err; the queue was not created. */
static void test_declare_store_failure_on_create(void **state)
{
    struct fx *f = *state;
    struct smq_queue_decl d = decl("q", NULL, 0, 7);
    char err[256];
    int rc;

    store_fault_inject(f->store, 0, 0);
    rc = declare(f, &d, 1, err, sizeof err);
    assert_int_not_equal(rc, 0);
    assert_int_not_equal(rc, SMQ_E_INVALID_ARGUMENT);
    assert_err_prefix(err, "q", 7);
    store_fault_inject(f->store, STORE_FAULT_OFF, 0);
    assert_int_equal(fx_stats(f).queues, 0);
}

/* A store that fails while the policy is set (second pass): another code
 * than InvalidArgument, the section in err, and the policy not in force. */
static void test_declare_store_failure_on_policy(void **state)
{
    struct fx *f = *state;
    struct smq_queue_decl d[2] = {decl("src", "dst", 5, 2), decl("dst", NULL, 0, 8)};
    struct smq_queue_info info;
    char err[256];
    int rc;

    assert_int_equal(fx_create_queue(f, "src", NULL, 0, NULL), 0);
    assert_int_equal(fx_create_queue(f, "dst", NULL, 0, NULL), 0);
    store_fault_inject(f->store, 0, 0);
    rc = declare(f, d, 2, err, sizeof err);
    assert_int_not_equal(rc, 0);
    assert_int_not_equal(rc, SMQ_E_INVALID_ARGUMENT);
    assert_err_prefix(err, "src", 2);
    store_fault_inject(f->store, STORE_FAULT_OFF, 0);
    fx_reopen_engine(f, FX_MAX_QUEUES_DEFAULT);
    assert_int_equal(fx_get_info(f, "src", &info), 0);
    assert_int_equal(info.attrs.dlq.enabled, 0);
}

/*
 * More sections than [limits] max_queues allows, on an empty store: the
 * store is not at fault, the configuration is, so the header promises
 * SMQ_E_INVALID_ARGUMENT (smqd exits as for a bad configuration); it is
 * found before any queue is created.
 */
static void test_declare_more_queues_than_allowed_is_invalid(void **state)
{
    struct fx *f = *state;
    struct smq_queue_decl d[3] = {decl("q1", NULL, 0, 1), decl("q2", NULL, 0, 2),
                                  decl("q3", NULL, 0, 3)};
    char err[256];

    fx_reopen_engine(f, 2);
    assert_int_equal(declare(f, d, 3, err, sizeof err), SMQ_E_INVALID_ARGUMENT);
    assert_err_prefix(err, "q3", 3);
    assert_int_equal(fx_stats(f).queues, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, fx_setup, fx_teardown)
        T(test_declare_creates_missing_queues_with_defaults),
        T(test_declare_target_declared_after_its_source),
        T(test_declare_target_existing_but_not_declared),
        T(test_declare_leaves_existing_queue_alone),
        T(test_declare_sets_only_the_policy_on_existing_queue),
        T(test_declare_again_is_a_no_op),
        T(test_declare_missing_target_is_invalid_and_creates_nothing),
        T(test_declare_self_target_is_invalid),
        T(test_declare_store_failure_on_create),
        T(test_declare_store_failure_on_policy),
        T(test_declare_more_queues_than_allowed_is_invalid),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
