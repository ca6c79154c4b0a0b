/*
 * test_engine_queues.c — the engine's queue operations (docs/protocol.md
 * §7.1–§7.5): CreateQueue (created, idempotent with the same attributes,
 * QueueAlreadyExist with others, the max_queues limit), GetQueueAttributes
 * (every attribute, the defaults, times in epoch seconds),
 * SetQueueAttributes (only what is present changes), DeleteQueue (its
 * messages and rows go with it, idempotent, a new queue of the same name
 * starts empty) and ListQueue (prefix, marker, page size).  What must be
 * durable is checked on disk or after a restart.  Also: every kind has its
 * row in the engine's table, and the topic kinds not run yet answer as
 * before.
 *
 * The engine runs synchronously on a fake clock over a real SQLite store,
 * as engine_fixture.h describes.
 */
#include <stdio.h>
#include <string.h>

#include "engine_fixture.h"

/* ---- create, get, set, delete -------------------------------------------- */

static void test_engine_queues_create_then_idempotent(void **state)
{
    struct fx *f = *state;
    struct smq_queue_attrs a, b;
    struct smq_queue_info info;
    bool created = false;

    mns_default_attrs(&a);
    a.visibility_s = 10;
    assert_int_equal(fx_create_queue(f, "q1", &a, SMQ_ATTR_VISIBILITY, &created), 0);
    assert_true(created);

    /* Same attributes again: success without creating (204). */
    created = true;
    assert_int_equal(fx_create_queue(f, "q1", &a, SMQ_ATTR_VISIBILITY, &created), 0);
    assert_false(created);
    /* Spelling out every default plus the same visibility is the same set. */
    created = true;
    assert_int_equal(fx_create_queue(f, "q1", &a, FX_ALL_ATTRS, &created), 0);
    assert_false(created);

    /* Different attributes: QueueAlreadyExist, and nothing changes. */
    b = a;
    b.visibility_s = 11;
    assert_int_equal(fx_create_queue(f, "q1", &b, SMQ_ATTR_VISIBILITY, &created),
                     SMQ_E_QUEUE_ALREADY_EXIST);
    assert_false(created);
    /* No attributes means the defaults, which differ too (visibility 30). */
    assert_int_equal(fx_create_queue(f, "q1", NULL, 0, &created), SMQ_E_QUEUE_ALREADY_EXIST);
    assert_int_equal(fx_get_info(f, "q1", &info), 0);
    assert_int_equal(info.attrs.visibility_s, 10);
    assert_int_equal(fx_stats(f).queues, 1);

    /* The queue is durable: after a restart the same request is still a 204. */
    fx_reopen_engine(f, FX_MAX_QUEUES_DEFAULT);
    created = true;
    assert_int_equal(fx_create_queue(f, "q1", &a, SMQ_ATTR_VISIBILITY, &created), 0);
    assert_false(created);
    assert_int_equal(fx_stats(f).queues, 1);
}

static void test_engine_queues_create_max_queues(void **state)
{
    struct fx *f = *state;
    bool created = false;

    fx_reopen_engine(f, 2);
    assert_int_equal(fx_create_queue(f, "a", NULL, 0, &created), 0);
    assert_true(created);
    assert_int_equal(fx_create_queue(f, "b", NULL, 0, &created), 0);
    assert_int_equal(fx_create_queue(f, "c", NULL, 0, &created), SMQ_E_TOO_MANY_QUEUES);
    assert_false(created);
    /* At the limit an existing queue is still "created" idempotently. */
    assert_int_equal(fx_create_queue(f, "a", NULL, 0, &created), 0);
    assert_false(created);
    assert_int_equal(fx_stats(f).queues, 2);

    /* Deleting one makes room again. */
    assert_int_equal(fx_delete_queue(f, "a"), 0);
    assert_int_equal(fx_create_queue(f, "c", NULL, 0, &created), 0);
    assert_true(created);
    assert_int_equal(fx_stats(f).queues, 2);
}

static void test_engine_queues_get_attributes(void **state)
{
    struct fx *f = *state;
    struct smq_queue_attrs a = {3, 2048, 120, 10, 2, 1, {0, "", 0}};
    struct smq_queue_info info;

    assert_int_equal(fx_create_queue(f, "attrs", &a, FX_ALL_ATTRS, NULL), 0);
    clock_fake_advance(&f->clock, 1700);
    assert_int_equal(fx_get_info(f, "attrs", &info), 0);
    assert_string_equal(info.name, "attrs");
    assert_int_equal(info.attrs.delay_s, 3);
    assert_int_equal(info.attrs.max_msg_size, 2048);
    assert_int_equal(info.attrs.retention_s, 120);
    assert_int_equal(info.attrs.visibility_s, 10);
    assert_int_equal(info.attrs.polling_wait_s, 2);
    assert_int_equal(info.attrs.logging, 1);
    assert_int_equal(info.create_s, FX_EPOCH0_S);    /* epoch seconds, truncated */
    assert_int_equal(info.modify_s, FX_EPOCH0_S);
    assert_int_equal(info.n_active, 0);
    assert_int_equal(info.n_inactive, 0);
    assert_int_equal(info.n_delayed, 0);

    /* A queue created with no attributes gets the documented defaults. */
    assert_int_equal(fx_create_queue(f, "plain", NULL, 0, NULL), 0);
    assert_int_equal(fx_get_info(f, "plain", &info), 0);
    assert_int_equal(info.attrs.delay_s, 0);
    assert_int_equal(info.attrs.max_msg_size, 65536);
    assert_int_equal(info.attrs.retention_s, 345600);
    assert_int_equal(info.attrs.visibility_s, 30);
    assert_int_equal(info.attrs.polling_wait_s, 0);
    assert_int_equal(info.attrs.logging, 0);
    assert_int_equal(info.create_s, FX_EPOCH0_S + 2);   /* 1700000002.200 */

    assert_int_equal(fx_get_info(f, "missing", &info), SMQ_E_QUEUE_NOT_EXIST);
}

static void test_engine_queues_set_partial_update(void **state)
{
    struct fx *f = *state;
    struct smq_queue_info info;
    struct smq_op op;

    assert_int_equal(fx_create_queue(f, "q", NULL, 0, NULL), 0);
    clock_fake_advance(&f->clock, 5000);

    fx_prep_op(f, &op, SMQ_OP_SET_QUEUE, "q");
    /* Only the fields flagged present may change; the others hold junk. */
    op.attrs.values = (struct smq_queue_attrs){99, 1024, 99, 20, 9, 1, {1, "junk", 7}};
    op.attrs.present = SMQ_ATTR_VISIBILITY | SMQ_ATTR_LOGGING;
    assert_int_equal(fx_run_one(f, &op), 0);
    op_release(&op);

    assert_int_equal(fx_get_info(f, "q", &info), 0);
    assert_int_equal(info.attrs.visibility_s, 20);
    assert_int_equal(info.attrs.logging, 1);
    assert_int_equal(info.attrs.delay_s, 0);
    assert_int_equal(info.attrs.max_msg_size, 65536);
    assert_int_equal(info.attrs.retention_s, 345600);
    assert_int_equal(info.attrs.polling_wait_s, 0);
    assert_int_equal(info.create_s, FX_EPOCH0_S);
    assert_int_equal(info.modify_s, FX_EPOCH0_S + 5);

    fx_prep_op(f, &op, SMQ_OP_SET_QUEUE, "missing");
    op.attrs.present = SMQ_ATTR_VISIBILITY;
    op.attrs.values.visibility_s = 5;
    assert_int_equal(fx_run_one(f, &op), SMQ_E_QUEUE_NOT_EXIST);
    op_release(&op);

    /* The update is on disk. */
    fx_reopen_engine(f, FX_MAX_QUEUES_DEFAULT);
    assert_int_equal(fx_get_info(f, "q", &info), 0);
    assert_int_equal(info.attrs.visibility_s, 20);
    assert_int_equal(info.attrs.logging, 1);
    assert_int_equal(info.attrs.delay_s, 0);
    assert_int_equal(info.create_s, FX_EPOCH0_S);
    assert_int_equal(info.modify_s, FX_EPOCH0_S + 5);
}

static void test_engine_queues_delete(void **state)
{
    struct fx *f = *state;
    struct smq_queue_info info;
    struct smq_msg_view v;
    bool created = false;

    assert_int_equal(fx_create_queue(f, "gone", NULL, 0, NULL), 0);
    fx_send_text(f, "gone", "one", 0, 8);
    fx_send_text(f, "gone", "two", 0, 8);
    assert_int_equal(fx_receive_one(f, "gone", &v), 0);
    assert_int_equal(fx_stats(f).messages, 2);

    assert_int_equal(fx_delete_queue(f, "gone"), 0);
    assert_int_equal(fx_get_info(f, "gone", &info), SMQ_E_QUEUE_NOT_EXIST);
    assert_int_equal(fx_send_msg(f, "gone", "x", 1, 0, 8, NULL), SMQ_E_QUEUE_NOT_EXIST);
    assert_int_equal(fx_stats(f).queues, 0);
    assert_int_equal(fx_stats(f).messages, 0);
    assert_int_equal(db_peek_int(f->path, "SELECT count(*) FROM msg"), 0);
    assert_int_equal(db_peek_int(f->path, "SELECT count(*) FROM msg_body"), 0);
    assert_int_equal(db_peek_int(f->path, "SELECT count(*) FROM queue"), 0);

    /* Idempotent: deleting again, or a queue that never existed, succeeds. */
    assert_int_equal(fx_delete_queue(f, "gone"), 0);
    assert_int_equal(fx_delete_queue(f, "never"), 0);

    /* A new queue of the same name starts empty; old handles do not apply. */
    assert_int_equal(fx_create_queue(f, "gone", NULL, 0, &created), 0);
    assert_true(created);
    fx_assert_counts(f, "gone", 0, 0, 0);
    assert_int_equal(fx_delete_msg(f, "gone", v.seq, v.handle_gen), SMQ_E_MESSAGE_NOT_EXIST);

    fx_reopen_engine(f, FX_MAX_QUEUES_DEFAULT);
    fx_assert_counts(f, "gone", 0, 0, 0);
    assert_int_equal(fx_stats(f).messages, 0);
}

/* ---- list ---------------------------------------------------------------- */

/* Appends item to the comma-separated list in dst (asserts it fits). */
static void append_csv(char *dst, size_t size, const char *item)
{
    size_t used = strlen(dst), sep = used > 0 ? 1 : 0, n = strlen(item);

    assert_true(used + sep + n < size);
    if (sep)
        dst[used++] = ',';
    memcpy(dst + used, item, n + 1);
}

/* Lists with prefix/marker/ret_number; returns the number listed and copies
 * the names (joined by ',') into names. */
static size_t list_page_as(struct fx *f, const struct grant_set *visible, const char *prefix,
                           const char *marker, int ret_number, char *names, size_t names_size,
                           char *next_marker)
{
    struct smq_op op;
    size_t n;

    fx_prep_op(f, &op, SMQ_OP_LIST_QUEUES, "");
    snprintf(op.list.prefix, sizeof op.list.prefix, "%s", prefix);
    snprintf(op.list.marker, sizeof op.list.marker, "%s", marker);
    op.list.ret_number = ret_number;
    op.list.visible = visible;
    assert_int_equal(fx_run_one(f, &op), 0);
    names[0] = '\0';
    for (size_t i = 0; i < op.list.n_queues; i++)
        append_csv(names, names_size, op.list.queues[i].name);
    snprintf(next_marker, SMQ_QUEUE_NAME_MAX + 1, "%s", op.list.next_marker);
    n = op.list.n_queues;
    op_release(&op);
    return n;
}

static size_t list_page(struct fx *f, const char *prefix, const char *marker, int ret_number,
                        char *names, size_t names_size, char *next_marker)
{
    return list_page_as(f, NULL, prefix, marker, ret_number, names, names_size, next_marker);
}

/* The entry ListQueue gives for "a2": its attributes and counters (one
 * message Active, the default visibility, created at setup). */
static void check_listed_a2(struct fx *f)
{
    struct smq_op op;

    fx_prep_op(f, &op, SMQ_OP_LIST_QUEUES, "");
    snprintf(op.list.prefix, sizeof op.list.prefix, "a2");
    assert_int_equal(fx_run_one(f, &op), 0);
    assert_int_equal(op.list.n_queues, 1);
    assert_string_equal(op.list.queues[0].name, "a2");
    assert_int_equal(op.list.queues[0].n_active, 1);
    assert_int_equal(op.list.queues[0].attrs.visibility_s, 30);
    assert_int_equal(op.list.queues[0].create_s, FX_EPOCH0_S);
    op_release(&op);
}

/* Adds a grant of classes on the queue list to set. */
static void add_grant(struct grant_set *set, const char *queues, unsigned classes)
{
    struct grant g = {NULL, 0, classes};
    char why[128];

    if (grant_parse_queues(queues, &g, why, sizeof why) != 0)
        fail_msg("queues \"%s\": %s", queues, why);
    assert_int_equal(grant_set_add(set, &g), 0);
}

/* A page listed as visible shows: exactly these names (joined by ',') and
 * this next_marker. */
static void expect_page(struct fx *f, const struct grant_set *visible, const char *prefix,
                        const char *marker, int ret_number, const char *want_names,
                        const char *want_next)
{
    char names[512], next[SMQ_QUEUE_NAME_MAX + 1];
    size_t want_n = want_names[0] != '\0';

    for (const char *c = want_names; *c != '\0'; c++)
        want_n += *c == ',';
    assert_int_equal(list_page_as(f, visible, prefix, marker, ret_number, names, sizeof names, next),
                     want_n);
    assert_string_equal(names, want_names);
    assert_string_equal(next, want_next);
}

/* A key's grants: only the queues it may list are shown, counted and
 * offered as next_marker, so paging never reveals another team's name. */
static void test_engine_queues_list_visible(void **state)
{
    struct fx *f = *state;
    static const char *const created[] = {"a1", "b1", "a2", "b2", "b3", "a3", "c"};
    struct grant_set set = {NULL, 0};

    for (size_t i = 0; i < sizeof created / sizeof created[0]; i++)
        assert_int_equal(fx_create_queue(f, created[i], NULL, 0, NULL), 0);
    add_grant(&set, "a*, c", GRANT_LIST);
    /* A grant of another class on b* does not make b* visible. */
    add_grant(&set, "b*", GRANT_SEND);

    expect_page(f, &set, "", "", 1000, "a1,a2,a3,c", "");
    /* Two per page: the marker skips the hidden b1..b3. */
    expect_page(f, &set, "", "", 2, "a1,a2", "a3");
    expect_page(f, &set, "", "a3", 2, "a3,c", "");
    expect_page(f, &set, "a2", "", 1, "a2", "");
    expect_page(f, &set, "b", "", 10, "", "");
    /* A page that ends just before hidden names only has no next_marker. */
    expect_page(f, &set, "a", "", 3, "a1,a2,a3", "");
    grant_set_free(&set);
}

/* Many hidden queues around and between the visible ones: the walk skips
 * from one grant's names to the next and finds exactly the visible ones,
 * the prefix boundaries included. */
static void test_engine_queues_list_skips_hidden(void **state)
{
    struct fx *f = *state;
    struct grant_set set = {NULL, 0};
    char name[32];

    for (int i = 0; i < 40; i++) {
        snprintf(name, sizeof name, "h%02d", i);
        assert_int_equal(fx_create_queue(f, name, NULL, 0, NULL), 0);
        snprintf(name, sizeof name, "m-%02d", i);
        assert_int_equal(fx_create_queue(f, name, NULL, 0, NULL), 0);
    }
    assert_int_equal(fx_create_queue(f, "m", NULL, 0, NULL), 0);
    assert_int_equal(fx_create_queue(f, "m-", NULL, 0, NULL), 0);
    assert_int_equal(fx_create_queue(f, "z", NULL, 0, NULL), 0);
    /* "m-1*": m-10..m-19; "h05", "z" exact; "k" names no queue. */
    add_grant(&set, "z, m-1*, k, h05", GRANT_LIST);

    expect_page(f, &set, "", "", 1000, "h05,m-10,m-11,m-12,m-13,m-14,m-15,m-16,m-17,m-18,m-19,z", "");
    expect_page(f, &set, "", "", 2, "h05,m-10", "m-11");
    expect_page(f, &set, "", "m-19", 5, "m-19,z", "");
    expect_page(f, &set, "m", "", 1000, "m-10,m-11,m-12,m-13,m-14,m-15,m-16,m-17,m-18,m-19", "");
    expect_page(f, &set, "", "m-2", 1000, "z", "");
    grant_set_free(&set);
}

static void test_engine_queues_list_paging(void **state)
{
    struct fx *f = *state;
    static const char *const created[] = {"b1", "a3", "a1", "c", "a5", "a2", "a4"};
    char names[512], next[SMQ_QUEUE_NAME_MAX + 1], all[512] = "";
    int pages = 0;

    for (size_t i = 0; i < sizeof created / sizeof created[0]; i++)
        assert_int_equal(fx_create_queue(f, created[i], NULL, 0, NULL), 0);
    fx_send_text(f, "a2", "counted", 0, 8);

    /* Everything, in name order, no marker. */
    assert_int_equal(list_page(f, "", "", 1000, names, sizeof names, next), 7);
    assert_string_equal(names, "a1,a2,a3,a4,a5,b1,c");
    assert_string_equal(next, "");

    /* Prefix "a", two per page: next_marker only while more "a" queues remain. */
    assert_int_equal(list_page(f, "a", "", 2, names, sizeof names, next), 2);
    assert_string_equal(names, "a1,a2");
    assert_string_equal(next, "a3");
    assert_int_equal(list_page(f, "a", next, 2, names, sizeof names, next), 2);
    assert_string_equal(names, "a3,a4");
    assert_string_equal(next, "a5");
    assert_int_equal(list_page(f, "a", next, 2, names, sizeof names, next), 1);
    assert_string_equal(names, "a5");
    assert_string_equal(next, "");

    /* A page that ends exactly at the last match has no next_marker. */
    assert_int_equal(list_page(f, "a", "", 5, names, sizeof names, next), 5);
    assert_string_equal(next, "");
    assert_int_equal(list_page(f, "", "", 7, names, sizeof names, next), 7);
    assert_string_equal(next, "");

    /* Paging the whole list three at a time sees each queue exactly once. */
    next[0] = '\0';
    do {
        size_t n = list_page(f, "", next, 3, names, sizeof names, next);
        assert_true(n >= 1 && n <= 3);
        append_csv(all, sizeof all, names);
        pages++;
    } while (next[0] != '\0');
    assert_string_equal(all, "a1,a2,a3,a4,a5,b1,c");
    assert_int_equal(pages, 3);

    /* No match. */
    assert_int_equal(list_page(f, "zz", "", 10, names, sizeof names, next), 0);
    assert_string_equal(next, "");

    /* Listed entries carry the attributes and counters. */
    check_listed_a2(f);
}

/* ---- the table of kinds -------------------------------------------------- */

/* Every kind has its row in the engine's table (a hole would run nothing). */
static void test_engine_queues_every_kind_has_a_row(void **state)
{
    (void)state;
    for (int k = 0; k < SMQ_OP_KIND_COUNT; k++)
        assert_true(engine_has_kind((enum smq_op_kind)k));
    assert_false(engine_has_kind((enum smq_op_kind)SMQ_OP_KIND_COUNT));
}

/* The topic kinds name topics, never queues: one that needs an existing
 * topic answers TopicNotExist for a name only a queue has, and the push
 * pool's outcome of no notification in flight is ignored, touching nothing. */
static void test_engine_queues_topic_kinds_ignore_queues(void **state)
{
    static const enum smq_op_kind on_topic[] = {
        SMQ_OP_SET_TOPIC, SMQ_OP_GET_TOPIC, SMQ_OP_PUBLISH, SMQ_OP_SUBSCRIBE,
        SMQ_OP_SET_SUBSCRIPTION, SMQ_OP_GET_SUBSCRIPTION, SMQ_OP_UNSUBSCRIBE,
        SMQ_OP_LIST_SUBSCRIPTIONS};
    struct fx *f = *state;
    struct smq_op op;

    assert_int_equal(fx_create_queue(f, "t1", NULL, 0, NULL), 0);
    for (size_t i = 0; i < sizeof on_topic / sizeof on_topic[0]; i++) {
        fx_prep_op(f, &op, on_topic[i], "t1");
        assert_int_equal(fx_run_one(f, &op), SMQ_E_TOPIC_NOT_EXIST);
        op_release(&op);
    }
    fx_prep_op(f, &op, SMQ_OP_DELETE_TOPIC, "t1");
    assert_int_equal(fx_run_one(f, &op), 0);             /* no such topic: nothing to do */
    fx_prep_op(f, &op, SMQ_OP_PUSH_RESULT, "t1");
    op.push.sub_id = 1;
    op.push.seq = 1;
    op.push.attempt = 1;
    assert_int_equal(fx_run_one(f, &op), 0);
    assert_int_equal(fx_stats(f).queues, 1);
    assert_int_equal(fx_stats(f).topics, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, fx_setup, fx_teardown)
        T(test_engine_queues_create_then_idempotent),
        T(test_engine_queues_create_max_queues),
        T(test_engine_queues_get_attributes),
        T(test_engine_queues_set_partial_update),
        T(test_engine_queues_delete),
        T(test_engine_queues_list_visible),
        T(test_engine_queues_list_skips_hidden),
        T(test_engine_queues_list_paging),
        T(test_engine_queues_every_kind_has_a_row),
        T(test_engine_queues_topic_kinds_ignore_queues),
#undef T
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
