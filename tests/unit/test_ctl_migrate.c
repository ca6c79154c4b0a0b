/*
 * test_ctl_migrate.c — unit tests of smqctl's store copy (ctl_migrate.h):
 * everything a message carries arrives, so do topics, subscriptions (the
 * longest Endpoint too), a topic message pending for notifications and the
 * notifications, the handle secret and id marks arrive, a destination with
 * data (even a topic alone) is refused untouched, a source in use is
 * refused.  SQLite into SQLite always; when SMQD_TEST_PG_DSN names a
 * database to use, also SQLite into PostgreSQL and PostgreSQL into SQLite
 * (each case then works in a schema of its own, dropped afterwards).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "ctl_migrate.h"
#include "pg_scratch.h"
#include "scratch_dir.h"
#include "smqd/buf.h"
#include "smqd/errors.h"
#include "smqd/store.h"
#include "store_lists.h"

struct fixture {
    char dir[64];
    char src_path[128], dst_path[128];
    struct pg_scratch pg;               /* the PostgreSQL destination, when used */
    struct store_config src, dst;
};

/* pg: the destination is a scratch PostgreSQL database; pg_source: the
 * source is, and the destination the SQLite file. */
static int setup_with(void **state, bool pg, bool pg_source)
{
    struct fixture *f = calloc(1, sizeof *f);

    if (f == NULL)
        return -1;
    snprintf(f->dir, sizeof f->dir, "/tmp/smqd-test-migrate-XXXXXX");
    if (mkdtemp(f->dir) == NULL) {
        free(f);
        return -1;
    }
    snprintf(f->src_path, sizeof f->src_path, "%s/old.db", f->dir);
    snprintf(f->dst_path, sizeof f->dst_path, "%s/new.db", f->dir);
    f->src = (struct store_config){.backend = SMQ_STORE_SQLITE, .path = f->src_path};
    f->dst = (struct store_config){.backend = SMQ_STORE_SQLITE, .path = f->dst_path};
    if (pg) {
        if (pg_scratch_create(&f->pg) != 0) {
            scratch_dir_remove(f->dir);
            free(f);
            return -1;
        }
        if (pg_source)
            f->src = (struct store_config){.backend = SMQ_STORE_POSTGRESQL, .dsn = f->pg.dsn};
        else
            f->dst = (struct store_config){.backend = SMQ_STORE_POSTGRESQL, .dsn = f->pg.dsn};
    }
    *state = f;
    return 0;
}

static int setup_sqlite(void **state)
{
    return setup_with(state, false, false);
}

static int setup_pg(void **state)
{
    return setup_with(state, true, false);
}

static int setup_pg_source(void **state)
{
    return setup_with(state, true, true);
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    pg_scratch_drop(&f->pg);
    scratch_dir_remove(f->dir);
    free(f);
    return 0;
}

static const unsigned char md5_a[16] = {0xd4, 0x1d, 0x8c, 0xd9, 0x8f, 0x00, 0xb2, 0x04,
                                        0xe9, 0x80, 0x09, 0x98, 0xec, 0xf8, 0x42, 0x7e};

/* ---- topics (docs/protocol.md §13) ---- */

static struct store_topic_rec topic_rec(int i)
{
    struct store_topic_rec t[2] = {
        {.id = 1, .name = "events", .create_s = 300, .modify_s = 301, .max_msg_size = 1024,
         .logging = 1},
        {.id = 2, .name = "audit", .create_s = 302, .modify_s = 302, .max_msg_size = 65536},
    };
    return t[i];
}

/* The first with every field set and the longest Endpoint. */
static struct store_sub_rec sub_rec(int i)
{
    struct store_sub_rec sub[3] = {
        {.id = 1, .topic_id = 1, .name = "web", .filter_tag = "tagA",
         .strategy = SMQ_NOTIFY_EXPONENTIAL_DECAY_RETRY, .format = SMQ_NOTIFY_JSON,
         .dlq_enabled = 1, .dlq_target = "orders-dlq", .create_s = 400, .modify_s = 401},
        {.id = 2, .topic_id = 1, .name = "mail", .endpoint = "mail:directmail:a@example.com",
         .format = SMQ_NOTIFY_SIMPLIFIED, .create_s = 402, .modify_s = 402},
        {.id = 3, .topic_id = 2, .name = "web", .endpoint = "acs:mns:cn-hangzhou:1:queues/orders",
         .create_s = 403, .modify_s = 404},
    };
    if (i == 0) {
        size_t n = (size_t)snprintf(sub[0].endpoint, sizeof sub[0].endpoint, "http://h/");
        memset(sub[0].endpoint + n, 'p', SMQ_ENDPOINT_MAX - n);
        sub[0].endpoint[SMQ_ENDPOINT_MAX] = '\0';
    }
    return sub[i];
}

static struct store_tmsg_rec tmsg_rec(void)
{
    struct store_tmsg_rec m = {.topic_id = 1, .seq = 20, .publish_ms = 5000, .tag = "tagA",
                               .body_len = 3};

    memcpy(m.md5, md5_a, sizeof m.md5);
    return m;
}

static struct store_notif_rec notif_rec(int i)
{
    struct store_notif_rec n[2] = {
        {.sub_id = 1, .seq = 20, .attempts = 2, .due_ms = 7000,
         .strategy = SMQ_NOTIFY_EXPONENTIAL_DECAY_RETRY},
        {.sub_id = 2, .seq = 20, .attempts = 0, .due_ms = 5000},
    };
    return n[i];
}

static void fill_topics(struct smq_store *s)
{
    struct store_tmsg_rec m = tmsg_rec();

    assert_int_equal(store_meta_set(s, META_NEXT_TOPIC_ID, "3", 1), 0);
    assert_int_equal(store_meta_set(s, META_NEXT_SUB_ID, "4", 1), 0);
    for (int i = 0; i < 2; i++) {
        struct store_topic_rec t = topic_rec(i);
        assert_int_equal(store_topic_insert(s, &t), 0);
    }
    for (int i = 0; i < 3; i++) {
        struct store_sub_rec sub = sub_rec(i);
        assert_int_equal(store_sub_insert(s, &sub), 0);
    }
    assert_int_equal(store_tmsg_insert(s, &m, "evt", 3), 0);
    for (int i = 0; i < 2; i++) {
        struct store_notif_rec n = notif_rec(i);
        assert_int_equal(store_notif_insert(s, &n), 0);
    }
}

static void assert_topics(struct smq_store *s)
{
    struct topic_list tl = {.n = 0};
    struct sub_list sl = {.n = 0};
    struct tmsg_list ml = {.n = 0};
    struct notif_list nl = {.n = 0};
    struct store_tmsg_rec m = tmsg_rec();
    struct smq_buf body;

    assert_int_equal(store_topic_load(s, collect_topic, &tl), 0);
    assert_int_equal(tl.n, 2);
    assert_int_equal(store_sub_load(s, collect_sub, &sl), 0);
    assert_int_equal(sl.n, 3);
    assert_int_equal(store_tmsg_load(s, collect_tmsg, &ml), 0);
    assert_int_equal(ml.n, 1);
    assert_int_equal(store_notif_load(s, collect_notif, &nl), 0);
    assert_int_equal(nl.n, 2);
    for (int i = 0; i < 2; i++) {
        struct store_topic_rec t = topic_rec(i);
        struct store_notif_rec n = notif_rec(i);
        assert_topic_equal(&tl.t[i], &t);
        assert_notif_equal(&nl.r[i], &n);
    }
    for (int i = 0; i < 3; i++) {
        struct store_sub_rec sub = sub_rec(i);
        assert_sub_equal(&sl.s[i], &sub);
    }
    assert_int_equal(strlen(sl.s[0].endpoint), SMQ_ENDPOINT_MAX);
    assert_tmsg_equal(&ml.m[0], &m);
    buf_init(&body);
    assert_int_equal(store_tmsg_body(s, 20, &body), 0);
    assert_int_equal(body.len, 3);
    assert_memory_equal(body.data, "evt", 3);
    buf_free(&body);
}

/* Two queues (one the other's dead-letter queue), three messages in every
 * state a row can carry, two topics with three subscriptions and a message
 * pending for two of them, the handle secret and the marks. */
#define SIGN_KEY "-----BEGIN PRIVATE KEY-----\nbWlncmF0ZQ==\n-----END PRIVATE KEY-----\n"
#define SIGN_CERT "-----BEGIN CERTIFICATE-----\nY2VydA==\n-----END CERTIFICATE-----\n"

static void fill_source(const struct store_config *cfg)
{
    struct smq_store *s = NULL;
    char err[256];
    struct store_queue_rec q1 = {.id = 1, .name = "orders", .create_s = 100, .modify_s = 200,
                                 .delay_s = 3, .max_msg_size = 65536, .retention_s = 345600,
                                 .visibility_s = 30, .polling_wait_s = 5, .logging = 1,
                                 .dlq_enabled = 1, .dlq_target = "orders-dlq",
                                 .dlq_max_receive = 4};
    struct store_queue_rec q2 = {.id = 2, .name = "orders-dlq", .create_s = 101,
                                 .modify_s = 101, .max_msg_size = 65536,
                                 .retention_s = 345600, .visibility_s = 30};
    struct store_msg_rec fresh = {.queue_id = 1, .seq = 10, .priority = 8, .enqueue_ms = 1000,
                                  .visible_ms = 1000, .expire_ms = 9000000};
    struct store_msg_rec taken = {.queue_id = 1, .seq = 11, .priority = 1, .enqueue_ms = 1001,
                                  .first_dequeue_ms = 2000, .visible_ms = 32000,
                                  .expire_ms = 9000001, .dequeue_count = 3, .handle_gen = 3};
    struct store_msg_rec dead = {.queue_id = 2, .seq = 12, .priority = 16, .enqueue_ms = 1002,
                                 .first_dequeue_ms = 2100, .visible_ms = 5000,
                                 .expire_ms = 9000002, .dequeue_count = 4, .handle_gen = 5,
                                 .src_queue_id = 1};
    static const char binary[4] = {'\0', '\xff', '\n', 'x'};

    assert_int_equal(store_open(cfg, &s, err, sizeof err), 0);
    assert_int_equal(store_begin(s), 0);
    assert_int_equal(store_meta_set(s, META_KEYS, "0123456789abcdef0123456789abcdef", 32), 0);
    assert_int_equal(store_meta_set(s, META_NEXT_SEQ, "1024", 4), 0);
    assert_int_equal(store_meta_set(s, META_NEXT_QUEUE_ID, "3", 1), 0);
    assert_int_equal(store_queue_insert(s, &q1), 0);
    assert_int_equal(store_queue_insert(s, &q2), 0);
    assert_int_equal(store_msg_insert(s, &fresh, &(struct store_msg_content){
                         "hello", 5, md5_a, "<x/>", 4}), 0);
    assert_int_equal(store_msg_insert(s, &taken, &(struct store_msg_content){
                         binary, sizeof binary, NULL, NULL, 0}), 0);
    assert_int_equal(store_msg_insert(s, &dead, &(struct store_msg_content){
                         NULL, 0, NULL, NULL, 0}), 0);
    fill_topics(s);
    assert_int_equal(store_commit(s), 0);
    /* The push signing key: a statement of its own (store.h). */
    assert_int_equal(store_signing_key_put_if_absent(s, SIGN_KEY, SIGN_CERT), 0);
    store_close(s);
}

struct seen {
    struct store_msg_rec rows[8];
    struct store_queue_rec queues[4];
    size_t n_rows, n_queues;
};

static int see_msg(void *arg, const struct store_msg_rec *m)
{
    struct seen *v = arg;

    if (v->n_rows < 8)
        v->rows[v->n_rows] = *m;
    v->n_rows++;
    return 0;
}

static int see_queue(void *arg, const struct store_queue_rec *q)
{
    struct seen *v = arg;

    if (v->n_queues < 4)
        v->queues[v->n_queues] = *q;
    v->n_queues++;
    return 0;
}

static void assert_meta(struct smq_store *s, const char *key, const char *want)
{
    struct smq_buf val;
    int found = 0;

    buf_init(&val);
    assert_int_equal(store_meta_get(s, key, &val, &found), 0);
    assert_true(found);
    assert_int_equal(val.len, strlen(want));
    assert_memory_equal(val.data, want, val.len);
    buf_free(&val);
}

static void assert_copy(const struct store_config *cfg)
{
    struct smq_store *s = NULL;
    struct seen v = {0};
    struct store_body_read r[3] = {{.queue_id = 1, .seq = 10}, {.queue_id = 1, .seq = 11},
                                   {.queue_id = 2, .seq = 12}};
    struct smq_buf bodies;
    char err[256];

    buf_init(&bodies);
    assert_int_equal(store_open(cfg, &s, err, sizeof err), 0);
    assert_int_equal(store_queue_load(s, see_queue, &v), 0);
    assert_int_equal(store_msg_load(s, see_msg, &v), 0);
    assert_int_equal(v.n_queues, 2);
    assert_string_equal(v.queues[0].dlq_target, "orders-dlq");
    assert_int_equal(v.queues[0].dlq_max_receive, 4);
    assert_int_equal(v.queues[0].polling_wait_s, 5);
    assert_int_equal(v.queues[1].create_s, 101);
    assert_int_equal(v.n_rows, 3);
    assert_int_equal(v.rows[1].dequeue_count, 3);
    assert_int_equal(v.rows[1].visible_ms, 32000);
    assert_int_equal(v.rows[1].first_dequeue_ms, 2000);
    assert_int_equal(v.rows[2].src_queue_id, 1);
    assert_int_equal(v.rows[2].handle_gen, 5);
    assert_int_equal(v.rows[2].priority, 16);
    assert_int_equal(store_msg_bodies(s, r, 3, &bodies), 0);
    assert_int_equal(r[0].len, 5);
    assert_int_equal(r[0].ext_len, 4);
    assert_true(r[0].md5.present);
    assert_memory_equal(r[0].md5.bytes, md5_a, 16);
    assert_memory_equal(bodies.data, "hello<x/>", 9);
    assert_int_equal(r[1].len, 4);
    assert_false(r[1].md5.present);
    assert_memory_equal(bodies.data + 9, "\0\xff\nx", 4);
    assert_int_equal(r[2].len, 0);
    assert_meta(s, META_KEYS, "0123456789abcdef0123456789abcdef");
    assert_meta(s, META_NEXT_SEQ, "1024");
    assert_meta(s, META_NEXT_QUEUE_ID, "3");
    assert_meta(s, META_NEXT_TOPIC_ID, "3");
    assert_meta(s, META_NEXT_SUB_ID, "4");
    assert_topics(s);
    assert_signing_key(s, SIGN_KEY, SIGN_CERT);
    buf_free(&bodies);
    store_close(s);
}

static void test_migrate_copies_everything(void **state)
{
    struct fixture *f = *state;
    struct ctl_migrate_counts n = {0};
    char err[512] = "";

    fill_source(&f->src);
    assert_int_equal(ctl_migrate(&f->src, &f->dst, NULL, &n, err, sizeof err), 0);
    assert_int_equal(n.queues, 2);
    assert_int_equal(n.messages, 3);
    assert_int_equal(n.body_bytes, 9);
    assert_int_equal(n.topics, 2);
    assert_int_equal(n.subscriptions, 3);
    assert_int_equal(n.topic_messages, 1);
    assert_int_equal(n.notifications, 2);
    assert_int_equal(n.signing_key, 1);
    assert_copy(&f->dst);
}

/* A destination holding nothing but a push signing key is not empty: its
 * key would not be the source's. */
static void test_migrate_refuses_a_destination_with_a_signing_key(void **state)
{
    struct fixture *f = *state;
    struct ctl_migrate_counts n = {0};
    struct smq_store *s = NULL;
    struct seen v = {0};
    char err[512] = "";

    fill_source(&f->src);
    assert_int_equal(store_open(&f->dst, &s, err, sizeof err), 0);
    assert_int_equal(store_signing_key_put_if_absent(s, "OTHER KEY\n", "OTHER CERT\n"), 0);
    store_close(s);
    assert_int_equal(ctl_migrate(&f->src, &f->dst, NULL, &n, err, sizeof err),
                     SMQ_E_INVALID_ARGUMENT);
    assert_non_null(strstr(err, "a push signing key"));
    assert_int_equal(store_open(&f->dst, &s, err, sizeof err), 0);
    assert_int_equal(store_queue_load(s, see_queue, &v), 0);
    assert_int_equal(v.n_queues, 0);                     /* nothing written */
    assert_signing_key(s, "OTHER KEY\n", "OTHER CERT\n");
    store_close(s);
}

/* A destination with nothing but a topic is not empty either. */
static void test_migrate_refuses_a_destination_with_a_topic(void **state)
{
    struct fixture *f = *state;
    struct ctl_migrate_counts n = {0};
    struct store_topic_rec t = topic_rec(1);
    struct smq_store *s = NULL;
    struct seen v = {0};
    char err[512] = "";

    fill_source(&f->src);
    assert_int_equal(store_open(&f->dst, &s, err, sizeof err), 0);
    assert_int_equal(store_topic_insert(s, &t), 0);
    store_close(s);
    assert_int_equal(ctl_migrate(&f->src, &f->dst, NULL, &n, err, sizeof err),
                     SMQ_E_INVALID_ARGUMENT);
    assert_non_null(strstr(err, "1 topic(s)"));
    assert_int_equal(store_open(&f->dst, &s, err, sizeof err), 0);
    assert_int_equal(store_queue_load(s, see_queue, &v), 0);
    assert_int_equal(v.n_queues, 0);                     /* nothing written */
    store_close(s);
}

static void test_migrate_refuses_a_destination_with_data(void **state)
{
    struct fixture *f = *state;
    struct ctl_migrate_counts n = {0};
    char err[512] = "";

    fill_source(&f->src);
    assert_int_equal(ctl_migrate(&f->src, &f->dst, NULL, &n, err, sizeof err), 0);
    err[0] = '\0';
    assert_int_equal(ctl_migrate(&f->src, &f->dst, NULL, &n, err, sizeof err),
                     SMQ_E_INVALID_ARGUMENT);
    assert_non_null(strstr(err, "already holds smqd data"));
    assert_copy(&f->dst);                /* untouched: still exactly one copy */
}

static void test_migrate_many_messages_cross_chunks(void **state)
{
    struct fixture *f = *state;
    struct ctl_migrate_counts n = {0};
    struct smq_store *s = NULL;
    struct store_queue_rec q = {.id = 7, .name = "bulk", .max_msg_size = 65536,
                                .retention_s = 60, .visibility_s = 30};
    struct seen v = {0};
    char err[512] = "", body[32];

    assert_int_equal(store_open(&f->src, &s, err, sizeof err), 0);
    assert_int_equal(store_begin(s), 0);
    assert_int_equal(store_queue_insert(s, &q), 0);
    for (uint64_t seq = 1; seq <= 1000; seq++) {
        struct store_msg_rec m = {.queue_id = 7, .seq = seq, .priority = 8,
                                  .enqueue_ms = (int64_t)seq, .expire_ms = 99999999};
        int len = snprintf(body, sizeof body, "body-%llu", (unsigned long long)seq);
        assert_int_equal(store_msg_insert(s, &m, &(struct store_msg_content){
                             body, (size_t)len, NULL, NULL, 0}), 0);
    }
    assert_int_equal(store_commit(s), 0);
    store_close(s);
    assert_int_equal(ctl_migrate(&f->src, &f->dst, NULL, &n, err, sizeof err), 0);
    assert_int_equal(n.messages, 1000);
    assert_int_equal(store_open(&f->dst, &s, err, sizeof err), 0);
    assert_int_equal(store_msg_load(s, see_msg, &v), 0);
    assert_int_equal(v.n_rows, 1000);
    {
        struct store_body_read r = {.queue_id = 7, .seq = 777};
        struct smq_buf out;
        buf_init(&out);
        assert_int_equal(store_msg_bodies(s, &r, 1, &out), 0);
        assert_int_equal(r.len, 8);
        assert_memory_equal(out.data, "body-777", 8);
        buf_free(&out);
    }
    /* A source without a signing key gives none: smqd makes one there. */
    assert_int_equal(n.signing_key, 0);
    assert_signing_key(s, NULL, NULL);
    store_close(s);
}

static void test_migrate_refuses_a_source_in_use(void **state)
{
    struct fixture *f = *state;
    struct ctl_migrate_counts n = {0};
    struct smq_store *running = NULL;
    char err[512] = "";

    fill_source(&f->src);
    assert_int_equal(store_open(&f->src, &running, err, sizeof err), 0);   /* "smqd" */
    err[0] = '\0';
    assert_int_not_equal(ctl_migrate(&f->src, &f->dst, NULL, &n, err, sizeof err), 0);
    assert_non_null(strstr(err, "cannot open the source"));
    store_close(running);
}

static void test_migrate_refuses_a_missing_source(void **state)
{
    struct fixture *f = *state;
    struct ctl_migrate_counts n = {0};
    char err[512] = "";

    assert_int_equal(ctl_migrate(&f->src, &f->dst, NULL, &n, err, sizeof err),
                     SMQ_E_INVALID_ARGUMENT);
    assert_non_null(strstr(err, "No such file"));
    assert_int_equal(access(f->src_path, F_OK), -1);     /* not created by the attempt */
}

int main(void)
{
    const struct CMUnitTest sqlite_tests[] = {
        cmocka_unit_test_setup_teardown(test_migrate_copies_everything, setup_sqlite, teardown),
        cmocka_unit_test_setup_teardown(test_migrate_refuses_a_destination_with_data,
                                        setup_sqlite, teardown),
        cmocka_unit_test_setup_teardown(test_migrate_many_messages_cross_chunks, setup_sqlite,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_migrate_refuses_a_source_in_use, setup_sqlite,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_migrate_refuses_a_missing_source, setup_sqlite,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_migrate_refuses_a_destination_with_a_topic,
                                        setup_sqlite, teardown),
        cmocka_unit_test_setup_teardown(test_migrate_refuses_a_destination_with_a_signing_key,
                                        setup_sqlite, teardown),
    };
    const struct CMUnitTest pg_tests[] = {
        cmocka_unit_test_setup_teardown(test_migrate_copies_everything, setup_pg, teardown),
        cmocka_unit_test_setup_teardown(test_migrate_refuses_a_destination_with_data, setup_pg,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_migrate_many_messages_cross_chunks, setup_pg,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_migrate_refuses_a_destination_with_a_topic,
                                        setup_pg, teardown),
        cmocka_unit_test_setup_teardown(test_migrate_refuses_a_destination_with_a_signing_key,
                                        setup_pg, teardown),
    };
    /* And back: PostgreSQL into an SQLite file. */
    const struct CMUnitTest from_pg_tests[] = {
        cmocka_unit_test_setup_teardown(test_migrate_copies_everything, setup_pg_source,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_migrate_refuses_a_destination_with_data,
                                        setup_pg_source, teardown),
        cmocka_unit_test_setup_teardown(test_migrate_many_messages_cross_chunks,
                                        setup_pg_source, teardown),
    };
    int failed = cmocka_run_group_tests_name("migrate_to_sqlite", sqlite_tests, NULL, NULL);

    if (pg_scratch_available()) {
        failed += cmocka_run_group_tests_name("migrate_to_postgresql", pg_tests, NULL, NULL);
        failed += cmocka_run_group_tests_name("migrate_from_postgresql", from_pg_tests, NULL,
                                              NULL);
    } else
        printf("migrate_to_postgresql: skipped: no PostgreSQL (SMQD_TEST_PG_DSN / SMQD_TEST_PG_DIR)\n");
    return failed;
}
