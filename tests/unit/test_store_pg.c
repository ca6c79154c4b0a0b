/*
 * test_store_pg.c — unit tests of the store contract (store.h) on the
 * PostgreSQL backend (pg_*.c), against a real throw-away PostgreSQL 15
 * (tests/pg/pg-server.sh, started by the ctest fixture "pg"): round trips,
 * the batch body read (cold and cached), the paged loaders, meta (also
 * before a flush), rollback and savepoints, move, purge, delete, bulk,
 * binary and empty bodies, the refusals, the fence, the deferred flush and
 * the fault seams.
 *
 * Each case gets a schema of its own (CREATE SCHEMA, then the store's dsn
 * with options='-c search_path=...'), dropped in teardown.  What is in the
 * database is checked through a second, independent connection.  The dsn
 * comes from SMQD_TEST_PG_DSN, or the file SMQD_TEST_PG_DIR/dsn; with
 * neither the program exits 77 (skipped).
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <libpq-fe.h>
#include <sqlite3.h>                 /* db_peek.h's SQLite half, unused here */

#include "db_peek.h"
#include "pg_peek.h"
#include "pg_scratch.h"
#include "smqd/buf.h"
#include "smqd/errors.h"
#include "smqd/store.h"
#include "store_lists.h"

static char base_dsn[1024];

struct fixture {
    char schema[64];
    char dsn[1400];
    PGconn *peek;                /* the independent view, on the test's schema */
    struct smq_store *s;
};

/* ---- fixture ---------------------------------------------------------- */

static int open_store(struct fixture *f, struct smq_store **out, char *err, size_t err_size)
{
    struct store_config cfg = {.backend = SMQ_STORE_POSTGRESQL, .dsn = f->dsn,
                               .app_name = "smqd-test"};

    return store_open(&cfg, out, err, err_size);
}

#define peek_exec(f, sql) pg_peek_exec((f)->peek, (sql))

#define peek_int(f, sql) pg_peek_int((f)->peek, (sql))

static int schema_setup(void **state)
{
    static int n;
    struct fixture *f = calloc(1, sizeof *f);
    char sql[128], peek_dsn[1400];

    if (f == NULL)
        return -1;
    snprintf(f->schema, sizeof f->schema, "s_%ld_%d", (long)getpid(), ++n);
    snprintf(f->dsn, sizeof f->dsn, "%s options='-c search_path=%s'", base_dsn, f->schema);
    snprintf(peek_dsn, sizeof peek_dsn, "%s options='-c search_path=%s "
             "-c client_min_messages=warning'", base_dsn, f->schema);
    f->peek = PQconnectdb(peek_dsn);
    *state = f;
    if (PQstatus(f->peek) != CONNECTION_OK)
        return -1;
    snprintf(sql, sizeof sql, "CREATE SCHEMA %s", f->schema);
    PQclear(PQexec(f->peek, sql));
    return 0;
}

static int store_setup(void **state)
{
    struct fixture *f;
    char err[512];

    if (schema_setup(state) != 0)
        return -1;
    f = *state;
    if (open_store(f, &f->s, err, sizeof err) != 0) {
        fprintf(stderr, "open: %s\n", err);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    char sql[128];

    store_close(f->s);
    snprintf(sql, sizeof sql, "DROP SCHEMA %s CASCADE", f->schema);
    PQclear(PQexec(f->peek, sql));
    PQfinish(f->peek);
    free(f);
    return 0;
}

static void reopen(struct fixture *f)
{
    char err[512];

    store_close(f->s);
    f->s = NULL;
    assert_int_equal(open_store(f, &f->s, err, sizeof err), 0);
}

/* ---- records and collectors ------------------------------------------- */

static struct store_queue_rec make_queue(int64_t id, const char *name)
{
    struct store_queue_rec q;

    memset(&q, 0, sizeof q);
    q.id = id;
    snprintf(q.name, sizeof q.name, "%s", name);
    q.create_s = 1700000000 + id;
    q.modify_s = q.create_s;
    q.max_msg_size = 65536;
    q.retention_s = 345600;
    q.visibility_s = 30;
    return q;
}

static struct store_msg_rec make_msg(int64_t queue_id, uint64_t seq)
{
    struct store_msg_rec m;

    memset(&m, 0, sizeof m);
    m.queue_id = queue_id;
    m.seq = seq;
    m.priority = 8;
    m.enqueue_ms = 1700000000000 + (int64_t)(seq % 1000000);
    m.visible_ms = m.enqueue_ms;
    m.expire_ms = m.enqueue_ms + 345600000;
    return m;
}

static int put_msg(struct smq_store *s, const struct store_msg_rec *m, const void *body,
                   size_t body_len, const unsigned char *md5)
{
    return store_msg_insert(s, m, &(struct store_msg_content){body, body_len, md5, NULL, 0});
}

static void insert_msg(struct smq_store *s, int64_t queue_id, uint64_t seq)
{
    struct store_msg_rec m = make_msg(queue_id, seq);
    char body[64];
    int n = snprintf(body, sizeof body, "body %lld/%llu", (long long)queue_id,
                     (unsigned long long)seq);

    assert_int_equal(put_msg(s, &m, body, (size_t)n, NULL), 0);
}

static int body_of(struct smq_store *s, uint64_t seq, struct smq_buf *out)
{
    struct store_body_read r = {.queue_id = 0, .seq = seq};

    return store_msg_bodies(s, &r, 1, out);
}

/* ---- open and refusals ------------------------------------------------ */

static void test_pg_open_reopen_keeps_data(void **state)
{
    struct fixture *f = *state;
    struct store_queue_rec q = make_queue(1, "q1");
    struct queue_list ql = {.n = 0};

    assert_string_equal(store_backend_name(f->s), "postgresql");
    assert_int_equal(peek_int(f, "SELECT version FROM smq_schema"), 4);
    assert_int_equal(peek_int(f, "SELECT count(*) FROM smq_lease WHERE id = 1"), 1);
    assert_int_equal(store_queue_insert(f->s, &q), 0);
    reopen(f);                                   /* a second open migrates nothing */
    assert_int_equal(store_queue_load(f->s, collect_queue, &ql), 0);
    assert_int_equal(ql.n, 1);
    assert_memory_equal(&ql.q[0], &q, sizeof q);
    assert_int_equal(peek_int(f, "SELECT count(*) FROM pg_stat_activity WHERE "
                                 "application_name = 'smqd-test'"), 2);
}

static void expect_refusal(struct fixture *f, const char *want)
{
    struct smq_store *s = NULL;
    char err[512] = "";

    assert_int_equal(open_store(f, &s, err, sizeof err), SMQ_E_INTERNAL);
    assert_null(s);
    if (strstr(err, want) == NULL)
        fail_msg("err \"%s\" lacks \"%s\"", err, want);
}

static void test_pg_refuses_newer_schema(void **state)
{
    struct fixture *f = *state;

    peek_exec(f, "CREATE TABLE smq_schema(version int NOT NULL);"
                 "INSERT INTO smq_schema VALUES (5)");
    expect_refusal(f, "created by a newer smqd");
    assert_int_equal(peek_int(f, "SELECT version FROM smq_schema"), 5);
    assert_int_equal(peek_int(f, "SELECT count(*) FROM pg_tables WHERE schemaname = "
                                 "current_schema()"), 1);          /* untouched */
}

static void test_pg_refuses_foreign_database(void **state)
{
    struct fixture *f = *state;

    peek_exec(f, "CREATE TABLE orders(id int); INSERT INTO orders VALUES (7)");
    expect_refusal(f, "not an smqd database");
    assert_int_equal(peek_int(f, "SELECT count(*) FROM pg_tables WHERE schemaname = "
                                 "current_schema()"), 1);
    assert_int_equal(peek_int(f, "SELECT id FROM orders"), 7);
}

static void test_pg_unreachable_names_the_server(void **state)
{
    struct fixture *f = *state;

    snprintf(f->dsn, sizeof f->dsn, "host=127.0.0.1 port=1 dbname=smqd user=smqd");
    expect_refusal(f, "port 1");
}

/* ---- queues ----------------------------------------------------------- */

static void test_pg_queue_round_trip(void **state)
{
    struct fixture *f = *state;
    struct store_queue_rec a = make_queue(5, "b-second"), b = make_queue(2, "a-first");
    struct queue_list ql = {.n = 0};

    assert_int_equal(store_begin(f->s), 0);
    assert_int_equal(store_queue_insert(f->s, &a), 0);
    assert_int_equal(store_queue_insert(f->s, &b), 0);
    assert_int_equal(peek_int(f, "SELECT count(*) FROM smq_queue"), 0);   /* buffered */
    assert_int_equal(store_commit(f->s), 0);
    assert_int_equal(peek_int(f, "SELECT count(*) FROM smq_queue"), 2);

    a.modify_s += 100;
    a.delay_s = 60;
    a.logging = 1;
    a.dlq_enabled = 1;
    snprintf(a.dlq_target, sizeof a.dlq_target, "dead");
    a.dlq_max_receive = 3;
    snprintf(a.name, sizeof a.name, "renamed");        /* not rewritten */
    assert_int_equal(store_queue_update(f->s, &a), 0);
    snprintf(a.name, sizeof a.name, "b-second");
    assert_int_equal(store_queue_load(f->s, collect_queue, &ql), 0);
    assert_int_equal(ql.n, 2);
    assert_memory_equal(&ql.q[0], &b, sizeof b);       /* id order */
    assert_memory_equal(&ql.q[1], &a, sizeof a);

    assert_int_equal(store_queue_delete(f->s, 2), 0);
    assert_int_equal(store_queue_delete(f->s, 2), 0);  /* idempotent */
    ql.n = 0;
    assert_int_equal(store_queue_load(f->s, collect_queue, &ql), 0);
    assert_int_equal(ql.n, 1);
    assert_int_equal(ql.q[0].id, 5);
}

/* Outside a transaction a missing row is reported; inside one it cannot
 * be (the write is buffered): the commit fails, nothing of it is applied,
 * and the store stays broken. */
static void test_pg_missing_row_fails_the_transaction(void **state)
{
    struct fixture *f = *state;
    struct store_queue_rec q = make_queue(9, "ghost"), k = make_queue(1, "kept");
    struct store_msg_rec m = make_msg(1, 1);

    assert_int_equal(store_queue_update(f->s, &q), SMQ_E_QUEUE_NOT_EXIST);
    assert_int_equal(store_msg_update(f->s, &m), SMQ_E_MESSAGE_NOT_EXIST);
    assert_int_equal(store_msg_move(f->s, 2, &m), SMQ_E_MESSAGE_NOT_EXIST);
    assert_int_equal(store_begin(f->s), 0);
    assert_int_equal(store_queue_insert(f->s, &k), 0);
    assert_int_equal(store_queue_update(f->s, &q), 0);
    assert_int_equal(store_commit(f->s), SMQ_E_INTERNAL);
    store_rollback(f->s);
    assert_int_equal(store_begin(f->s), SMQ_E_INTERNAL);   /* broken */
    assert_int_equal(peek_int(f, "SELECT count(*) FROM smq_queue"), 0);
}

static void test_pg_queue_name_unique_and_too_long(void **state)
{
    struct fixture *f = *state;
    struct store_queue_rec a = make_queue(1, "dup"), b = make_queue(2, "dup");

    memset(b.name, 'n', sizeof b.name);                 /* no terminator */
    assert_int_equal(store_queue_insert(f->s, &b), SMQ_E_INVALID_ARGUMENT);
    snprintf(b.name, sizeof b.name, "dup");
    assert_int_equal(store_queue_insert(f->s, &a), 0);
    assert_int_equal(store_queue_insert(f->s, &b), SMQ_E_INTERNAL);   /* its own txn */
    assert_int_equal(store_begin(f->s), 0);
    assert_int_equal(store_queue_insert(f->s, &b), 0);
    assert_int_equal(store_commit(f->s), SMQ_E_INTERNAL);
    store_rollback(f->s);
    assert_int_equal(peek_int(f, "SELECT count(*) FROM smq_queue"), 1);
}

/* ---- messages and bodies ---------------------------------------------- */

static void test_pg_msg_round_trip_move_delete(void **state)
{
    struct fixture *f = *state;
    struct store_msg_rec a = make_msg(1, 7), b = make_msg(1, 3), c = make_msg(2, 1);
    struct msg_list ml = {.n = 0};
    struct smq_buf body;

    assert_int_equal(store_begin(f->s), 0);
    assert_int_equal(put_msg(f->s, &a, "seven", 5, NULL), 0);
    assert_int_equal(put_msg(f->s, &b, "three", 5, NULL), 0);
    assert_int_equal(put_msg(f->s, &c, "one", 3, NULL), 0);
    assert_int_equal(store_commit(f->s), 0);
    a.first_dequeue_ms = 1;
    a.visible_ms += 30000;
    a.dequeue_count = 2;
    a.handle_gen = 5;
    assert_int_equal(store_msg_update(f->s, &a), 0);
    b.queue_id = 9;
    b.src_queue_id = 1;
    b.expire_ms += 1;
    b.dequeue_count = 4;
    assert_int_equal(store_msg_move(f->s, 1, &b), 0);
    assert_int_equal(store_msg_load(f->s, collect_msg, &ml), 0);
    assert_int_equal(ml.n, 3);
    assert_msg_equal(&ml.m[0], &a);                     /* (queue_id, seq) order */
    assert_msg_equal(&ml.m[1], &c);
    assert_msg_equal(&ml.m[2], &b);
    reopen(f);                                          /* cold: bodies from the database */
    buf_init(&body);
    assert_int_equal(body_of(f->s, 3, &body), 0);
    assert_string_equal(body.data, "three");            /* the body stays with a move */
    assert_int_equal(store_msg_delete(f->s, 1, 7), 0);
    assert_int_equal(store_msg_delete(f->s, 1, 7), 0);
    assert_int_equal(store_msg_delete(f->s, 1, UINT64_MAX), 0);
    assert_int_equal(body_of(f->s, 7, &body), SMQ_E_MESSAGE_NOT_EXIST);
    assert_int_equal(peek_int(f, "SELECT count(*) FROM smq_body"), 2);
    assert_int_equal(put_msg(f->s, &(struct store_msg_rec){.seq = UINT64_MAX}, "", 0, NULL),
                     SMQ_E_INVALID_ARGUMENT);
    buf_free(&body);
}

static void check_batch(struct smq_store *s, const unsigned char *md5)
{
    struct store_body_read r[4] = {{.seq = 12}, {.seq = 10}, {.seq = 11}, {.seq = 13}};
    struct smq_buf out;

    buf_init(&out);
    buf_puts(&out, "#");
    r[0].md5.present = true;
    assert_int_equal(store_msg_bodies(s, r, 4, &out), 0);
    assert_int_equal(out.len, 1 + 6 + 5 + 0 + 4 + 4);
    assert_memory_equal(out.data, "#gamma!alpha\0\x80\xff\x01<x/>", out.len);
    assert_int_equal(r[0].len, 6);
    assert_false(r[0].md5.present);
    assert_int_equal(r[1].len, 5);
    assert_true(r[1].md5.present);
    assert_memory_equal(r[1].md5.bytes, md5, MNS_MD5_LEN);
    assert_int_equal(r[2].len, 0);
    assert_int_equal(r[3].len, 4);
    assert_int_equal(r[3].ext_len, 4);
    buf_reset(&out);
    r[1].seq = 99;
    assert_int_equal(store_msg_bodies(s, r, 4, &out), SMQ_E_MESSAGE_NOT_EXIST);
    buf_free(&out);
}

/* One call, in the order asked, from memory (just written), from the
 * database (after a reopen) and from a mix of both. */
static void test_pg_bodies_batch_binary_empty(void **state)
{
    struct fixture *f = *state;
    static const unsigned char md5[MNS_MD5_LEN] = {1, 2, 3, 4, 5, 6, 7, 8,
                                                   9, 10, 11, 12, 13, 14, 15, 16};
    struct store_msg_rec a = make_msg(1, 10), b = make_msg(1, 11), c = make_msg(2, 12);
    struct store_msg_rec d = make_msg(2, 13);
    struct smq_buf out;

    assert_int_equal(store_begin(f->s), 0);
    assert_int_equal(put_msg(f->s, &a, "alpha", 5, md5), 0);
    assert_int_equal(put_msg(f->s, &b, NULL, 0, NULL), 0);
    assert_int_equal(put_msg(f->s, &c, "gamma!", 6, NULL), 0);
    assert_int_equal(store_msg_insert(f->s, &d, &(struct store_msg_content){
                         "\0\x80\xff\x01", 4, NULL, "<x/>", 4}), 0);
    check_batch(f->s, md5);                              /* pinned, uncommitted */
    assert_int_equal(store_commit(f->s), 0);
    check_batch(f->s, md5);                              /* cached */
    reopen(f);
    check_batch(f->s, md5);                              /* cold */
    buf_init(&out);
    assert_int_equal(body_of(f->s, 13, &out), 0);        /* now cached */
    reopen(f);
    assert_int_equal(body_of(f->s, 11, &out), 0);
    check_batch(f->s, md5);                              /* mixed */
    assert_int_equal(peek_int(f, "SELECT length(body) FROM smq_body WHERE seq = 11"), 0);
    buf_free(&out);
}

static int count_and_peek(void *arg, const struct store_msg_rec *m)
{
    void **a = arg;
    long *n = a[0];
    struct smq_buf v;
    int found;

    if (m->seq != (uint64_t)*n + 1)
        return -1;                                       /* order across pages */
    ++*n;
    if (m->seq % 9999 != 0)
        return 0;
    buf_init(&v);                                        /* a callback may use the store */
    found = store_meta_get(a[1], "k", &v, &found) == 0 && found;
    buf_free(&v);
    return found ? 0 : -2;
}

static void test_pg_bulk_and_paged_load(void **state)
{
    struct fixture *f = *state;
    long n = 0;
    void *arg[2] = {&n, f->s};
    int calls = 0;

    assert_int_equal(store_begin(f->s), 0);
    assert_int_equal(store_meta_set(f->s, "k", "v", 1), 0);
    for (uint64_t seq = 1; seq <= 25000; seq++)
        insert_msg(f->s, 1, seq);
    assert_int_equal(store_commit(f->s), 0);
    assert_int_equal(store_msg_load(f->s, count_and_peek, arg), 0);
    assert_int_equal(n, 25000);
    assert_int_equal(store_msg_load(f->s, stop_at_second, &calls), 42);
    store_fault_inject_load(f->s, 3);
    n = 0;
    assert_int_equal(store_msg_load(f->s, count_and_peek, arg), SMQ_E_INTERNAL);
    assert_int_equal(n, 3);
}

static void test_pg_purge_and_delete_keep_others(void **state)
{
    struct fixture *f = *state;
    struct store_queue_rec q1 = make_queue(1, "one"), q2 = make_queue(2, "two");
    struct msg_list ml = {.n = 0};
    struct smq_buf body;

    assert_int_equal(store_begin(f->s), 0);
    assert_int_equal(store_queue_insert(f->s, &q1), 0);
    assert_int_equal(store_queue_insert(f->s, &q2), 0);
    for (uint64_t seq = 1; seq <= 9; seq++)
        insert_msg(f->s, (int64_t)(seq % 3) + 1, seq);
    assert_int_equal(store_commit(f->s), 0);
    assert_int_equal(store_queue_purge(f->s, 2), 0);      /* seq 1, 4, 7 */
    assert_int_equal(peek_int(f, "SELECT count(*) FROM smq_queue"), 2);
    assert_int_equal(peek_int(f, "SELECT count(*) FROM smq_body"), 6);
    assert_int_equal(store_queue_delete(f->s, 1), 0);     /* seq 3, 6, 9 */
    assert_int_equal(store_msg_load(f->s, collect_msg, &ml), 0);
    assert_int_equal(ml.n, 3);
    for (int i = 0; i < ml.n; i++)
        assert_int_equal(ml.m[i].queue_id, 3);
    buf_init(&body);
    assert_int_equal(body_of(f->s, 4, &body), SMQ_E_MESSAGE_NOT_EXIST);   /* cache too */
    assert_int_equal(body_of(f->s, 3, &body), SMQ_E_MESSAGE_NOT_EXIST);
    assert_int_equal(body_of(f->s, 5, &body), 0);
    assert_string_equal(body.data, "body 3/5");
    buf_free(&body);
}

/* ---- meta, rollback, savepoints, faults ------------------------------- */

static void expect_meta(struct smq_store *s, const char *key, const char *want)
{
    struct smq_buf v;
    int found = -1;

    buf_init(&v);
    assert_int_equal(store_meta_get(s, key, &v, &found), 0);
    assert_int_equal(found, want != NULL);
    if (want != NULL) {
        assert_int_equal(v.len, strlen(want));
        assert_memory_equal(v.data, want, v.len);
    }
    buf_free(&v);
}

static void test_pg_meta_binary_and_in_txn(void **state)
{
    struct fixture *f = *state;
    static const char secret[] = {'\0', 's', '\0', '\x80', 'x'};
    struct smq_buf v;
    int found;

    expect_meta(f->s, "secret", NULL);
    assert_int_equal(store_meta_set(f->s, "secret", secret, sizeof secret), 0);
    buf_init(&v);
    assert_int_equal(store_meta_get(f->s, "secret", &v, &found), 0);
    assert_int_equal(v.len, sizeof secret);
    assert_memory_equal(v.data, secret, sizeof secret);
    buf_free(&v);
    assert_int_equal(store_meta_set(f->s, "secret", "", 0), 0);
    expect_meta(f->s, "secret", "");
    assert_int_equal(store_begin(f->s), 0);
    assert_int_equal(store_meta_set(f->s, "hw", "1", 1), 0);
    assert_int_equal(store_meta_set(f->s, "hw", "12", 2), 0);
    expect_meta(f->s, "hw", "12");                        /* before the commit */
    store_rollback(f->s);
    expect_meta(f->s, "hw", NULL);
    assert_int_equal(store_meta_set(f->s, "hw", "12345", 5), 0);
    reopen(f);
    expect_meta(f->s, "hw", "12345");
}

static void seed(struct smq_store *s)
{
    struct store_queue_rec q = make_queue(1, "base");

    assert_int_equal(store_begin(s), 0);
    assert_int_equal(store_queue_insert(s, &q), 0);
    insert_msg(s, 1, 1);
    insert_msg(s, 1, 2);
    assert_int_equal(store_meta_set(s, "k", "v1", 2), 0);
    assert_int_equal(store_commit(s), 0);
}

/* Every table touched; 1 + 2 + 1 + 2 + 1 + 1 = 8 writes. */
static int churn_ok(struct smq_store *s)
{
    struct store_queue_rec q2 = make_queue(2, "new"), q1 = make_queue(1, "base");
    struct store_msg_rec m = make_msg(1, 1), n = make_msg(2, 9);
    int rc;

    q1.delay_s = 77;
    m.dequeue_count = 5;
    if ((rc = store_queue_insert(s, &q2)) != 0 ||
        (rc = put_msg(s, &n, "nine", 4, NULL)) != 0 ||
        (rc = store_msg_update(s, &m)) != 0 ||
        (rc = store_msg_delete(s, 1, 2)) != 0 ||
        (rc = store_queue_update(s, &q1)) != 0 ||
        (rc = store_meta_set(s, "k", "v2", 2)) != 0)
        return rc;
    return 0;
}

/* What the database holds, as one string. */
static void dump_db(struct fixture *f, char *out, size_t size)
{
    PGresult *r = PQexec(f->peek, "SELECT (SELECT string_agg(id || name || delay_s, ',' "
                         "ORDER BY id) FROM smq_queue) || '|' || (SELECT string_agg(queue_id "
                         "|| '/' || seq || '/' || dequeue_count, ',' ORDER BY seq) FROM smq_msg)"
                         " || '|' || (SELECT string_agg(seq || encode(body, 'hex'), ',' ORDER "
                         "BY seq) FROM smq_body) || '|' || (SELECT string_agg(key || "
                         "encode(value, 'hex'), ',') FROM smq_meta)");

    assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
    snprintf(out, size, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
}

static void test_pg_rollback_and_faults_leave_no_trace(void **state)
{
    struct fixture *f = *state;
    char db0[1024], db1[1024];

    seed(f->s);
    dump_db(f, db0, sizeof db0);
    assert_int_equal(store_begin(f->s), 0);
    assert_int_equal(churn_ok(f->s), 0);
    expect_meta(f->s, "k", "v2");
    store_rollback(f->s);
    store_rollback(f->s);                                  /* none open: ignored */
    expect_meta(f->s, "k", "v1");
    for (unsigned n = 0; n < 8; n++) {
        assert_int_equal(store_begin(f->s), 0);
        store_fault_inject(f->s, n, 0);
        assert_int_equal(churn_ok(f->s), SMQ_E_INTERNAL);
        store_rollback(f->s);
    }
    assert_int_equal(store_begin(f->s), 0);
    assert_int_equal(churn_ok(f->s), 0);
    store_fault_inject(f->s, STORE_FAULT_OFF, 1);
    assert_int_equal(store_commit(f->s), SMQ_E_INTERNAL);  /* injected: nothing sent */
    store_rollback(f->s);
    dump_db(f, db1, sizeof db1);
    assert_string_equal(db0, db1);
    assert_int_equal(store_begin(f->s), 0);                /* one-shot */
    assert_int_equal(churn_ok(f->s), 0);
    assert_int_equal(store_commit(f->s), 0);
    assert_int_equal(peek_int(f, "SELECT delay_s FROM smq_queue WHERE id = 1"), 77);
}

static void test_pg_savepoint_undoes_one_op(void **state)
{
    struct fixture *f = *state;
    struct store_queue_rec q2 = make_queue(2, "kept"), q3 = make_queue(3, "lost");
    struct store_msg_rec m = make_msg(2, 9);
    struct smq_buf b;

    seed(f->s);
    assert_false(store_in_txn(f->s));
    assert_int_equal(store_begin(f->s), 0);
    assert_true(store_in_txn(f->s));
    assert_int_equal(store_savepoint(f->s), 0);
    assert_int_equal(store_queue_insert(f->s, &q2), 0);
    assert_int_equal(store_release(f->s), 0);
    assert_int_equal(store_savepoint(f->s), 0);
    assert_int_equal(store_meta_set(f->s, "k", "lost", 4), 0);
    assert_int_equal(store_savepoint(f->s), 0);            /* nested */
    assert_int_equal(store_queue_insert(f->s, &q3), 0);
    assert_int_equal(put_msg(f->s, &m, "b", 1, NULL), 0);
    store_rollback_to(f->s);
    expect_meta(f->s, "k", "lost");
    store_rollback_to(f->s);
    expect_meta(f->s, "k", "v1");
    buf_init(&b);
    assert_int_equal(body_of(f->s, 9, &b), SMQ_E_MESSAGE_NOT_EXIST);
    assert_int_equal(store_savepoint(f->s), 0);
    insert_msg(f->s, 1, 3);
    assert_int_equal(store_release(f->s), 0);
    assert_int_equal(store_commit(f->s), 0);
    assert_false(store_in_txn(f->s));
    assert_int_equal(peek_int(f, "SELECT count(*) FROM smq_queue"), 2);
    assert_int_equal(peek_int(f, "SELECT count(*) FROM smq_msg WHERE seq = 3"), 1);
    assert_int_equal(peek_int(f, "SELECT count(*) FROM smq_body WHERE seq = 9"), 0);
    buf_free(&b);
}

/* ---- deferred flush and the fence ------------------------------------- */

static void test_pg_deferred_commit_waits_for_flush(void **state)
{
    struct fixture *f = *state;
    struct smq_buf b;

    assert_int_equal(store_defer_fsync(f->s), 0);
    assert_int_equal(store_flush(f->s), 0);                /* nothing queued */
    for (uint64_t seq = 1; seq <= 3; seq++) {
        assert_int_equal(store_begin(f->s), 0);
        insert_msg(f->s, 1, seq);
        assert_int_equal(store_meta_set(f->s, "hw", seq == 3 ? "3" : "x", 1), 0);
        assert_int_equal(store_commit(f->s), 0);
    }
    assert_int_equal(peek_int(f, "SELECT count(*) FROM smq_msg"), 0);
    expect_meta(f->s, "hw", "3");                          /* queued, not yet flushed */
    buf_init(&b);
    assert_int_equal(body_of(f->s, 2, &b), 0);
    assert_string_equal(b.data, "body 1/2");
    assert_int_equal(store_flush(f->s), 0);
    assert_int_equal(peek_int(f, "SELECT count(*) FROM smq_msg"), 3);
    assert_int_equal(peek_int(f, "SELECT count(*) FROM smq_meta WHERE value = '\\x33'"), 1);
    buf_free(&b);
}

static void hold_lease(struct fixture *f, const char *tok, int epoch)
{
    char sql[256];

    snprintf(sql, sizeof sql, "UPDATE smq_lease SET holder_token = '%s', epoch = %d, "
             "expires_at = now() + interval '1 hour' WHERE id = 1", tok, epoch);
    peek_exec(f, sql);
}

/* The token names the holder's sessions (application_name): one that
 * PostgreSQL would cut is refused rather than silently never matching. */
static void test_pg_fence_token_must_fit(void **state)
{
    struct fixture *f = *state;
    char token[65];

    memset(token, 'a', 64);
    token[64] = '\0';
    assert_int_equal(store_fence(f->s, token, 1), SMQ_E_INVALID_ARGUMENT);
    token[63] = '\0';
    assert_int_equal(store_fence(f->s, token, 1), 0);
}

static void test_pg_fence_wrong_epoch_applies_nothing(void **state)
{
    struct fixture *f = *state;

    hold_lease(f, "smqd/a/1", 4);
    assert_int_equal(store_fence(f->s, "smqd/a/1", 3), 0);
    assert_int_equal(store_begin(f->s), 0);
    insert_msg(f->s, 1, 1);
    assert_int_equal(store_commit(f->s), SMQ_E_SERVICE_UNAVAILABLE);
    store_rollback(f->s);
    assert_int_equal(store_begin(f->s), SMQ_E_SERVICE_UNAVAILABLE);   /* broken */
    assert_int_equal(peek_int(f, "SELECT count(*) FROM smq_msg"), 0);
    reopen(f);
    assert_int_equal(store_fence(f->s, "smqd/a/1", 4), 0);
    assert_int_equal(store_begin(f->s), 0);
    insert_msg(f->s, 1, 1);
    assert_int_equal(store_commit(f->s), 0);
    assert_int_equal(peek_int(f, "SELECT count(*) FROM smq_msg"), 1);
}

/* A takeover bumps the epoch between a deferred commit and its flush: the
 * flush is fenced, nothing of it is applied, and the store stays broken. */
static void test_pg_fence_takeover_fences_deferred_flush(void **state)
{
    struct fixture *f = *state;

    hold_lease(f, "smqd/a/1", 1);
    assert_int_equal(store_fence(f->s, "smqd/a/1", 1), 0);
    assert_int_equal(store_defer_fsync(f->s), 0);
    assert_int_equal(store_begin(f->s), 0);
    insert_msg(f->s, 1, 1);
    assert_int_equal(store_commit(f->s), 0);
    assert_int_equal(store_flush(f->s), 0);
    assert_int_equal(store_begin(f->s), 0);
    insert_msg(f->s, 1, 2);
    assert_int_equal(store_commit(f->s), 0);
    hold_lease(f, "smqd/b/2", 2);
    assert_int_equal(store_flush(f->s), SMQ_E_SERVICE_UNAVAILABLE);
    assert_int_equal(store_flush(f->s), SMQ_E_SERVICE_UNAVAILABLE);
    assert_int_equal(store_begin(f->s), SMQ_E_SERVICE_UNAVAILABLE);
    assert_int_equal(peek_int(f, "SELECT count(*) FROM smq_msg"), 1);
}

/* ---- topics (docs/protocol.md §13): store_topic_cases.h --------------- */

static long long topic_peek(struct fixture *f, const char *sql)
{
    char q[1024];

    db_peek_pg_sql(sql, q, sizeof q);
    return peek_int(f, q);
}

#include "store_topic_cases.h"

static void test_pg_topic_round_trip(void **state)
{
    topic_case_round_trip(*state);
}

static void test_pg_topic_refusals(void **state)
{
    topic_case_refusals(*state);
}

static void test_pg_sub_round_trip_1024_endpoint(void **state)
{
    sub_case_round_trip(*state);
}

static void test_pg_sub_refusals(void **state)
{
    sub_case_refusals(*state);
}

static void test_pg_topic_delete_cascades(void **state)
{
    topic_case_delete_cascades(*state);
}

static void test_pg_topics_survive_reopen(void **state)
{
    topic_case_survives_reopen(*state);
}

static void test_pg_topic_savepoint_and_fault(void **state)
{
    topic_case_savepoint_and_fault(*state);
}

static void test_pg_tmsg_round_trip(void **state)
{
    tmsg_case_round_trip(*state);
}

static void test_pg_notif_round_trip(void **state)
{
    notif_case_round_trip(*state);
}

static void test_pg_signing_key_put_if_absent(void **state)
{
    signing_key_case_put_if_absent(*state);
}

/* Two nodes' stores on one database, each putting a pair of its own (as
 * two nodes making a key at the same first start do): both read back the
 * one pair that was stored first. */
static void test_pg_signing_key_two_nodes_one_key(void **state)
{
    struct fixture *f = *state;
    struct smq_store *other = NULL;
    char err[512] = "";

    assert_int_equal(open_store(f, &other, err, sizeof err), 0);
    assert_int_equal(store_signing_key_put_if_absent(other, "KEY-2\n", "CERT-2\n"), 0);
    assert_int_equal(store_signing_key_put_if_absent(f->s, "KEY-1\n", "CERT-1\n"), 0);
    assert_signing_key(f->s, "KEY-2\n", "CERT-2\n");
    assert_signing_key(other, "KEY-2\n", "CERT-2\n");
    store_close(other);
}

/* One node's first start, as signing.c makes it: put its own pair if
 * none is stored, then read back which one is. */
struct racer {
    struct smq_store *s;
    pthread_barrier_t *go;
    const char *key, *cert;
    char got[32];
    int rc;
};

static void *race_first_start(void *arg)
{
    struct racer *r = arg;
    struct smq_buf k, c;
    int found = 0;

    buf_init(&k);
    buf_init(&c);
    pthread_barrier_wait(r->go);
    r->rc = store_signing_key_put_if_absent(r->s, r->key, r->cert);
    if (r->rc == 0)
        r->rc = store_signing_key_get(r->s, &k, &c, &found);
    if (r->rc == 0 && found)
        snprintf(r->got, sizeof r->got, "%.*s|%.*s", (int)k.len, k.data, (int)c.len, c.data);
    buf_free(&k);
    buf_free(&c);
    return NULL;
}

/* Two nodes starting at the same moment on an empty database, many
 * times: each time both end with the same one pair, one of the two. */
static void test_pg_signing_key_race(void **state)
{
    struct fixture *f = *state;
    struct racer r[2] = {{.key = "KA", .cert = "CA"}, {.key = "KB", .cert = "CB"}};
    pthread_barrier_t go;
    pthread_t t[2];
    char err[512] = "";

    r[0].s = f->s;
    assert_int_equal(open_store(f, &r[1].s, err, sizeof err), 0);
    for (int round = 0; round < 20; round++) {
        peek_exec(f, "DELETE FROM smq_signing_key");
        assert_int_equal(pthread_barrier_init(&go, NULL, 2), 0);
        for (int i = 0; i < 2; i++) {
            r[i].go = &go;
            r[i].got[0] = '\0';
            assert_int_equal(pthread_create(&t[i], NULL, race_first_start, &r[i]), 0);
        }
        for (int i = 0; i < 2; i++)
            pthread_join(t[i], NULL);
        pthread_barrier_destroy(&go);
        assert_int_equal(r[0].rc, 0);
        assert_int_equal(r[1].rc, 0);
        assert_string_equal(r[0].got, r[1].got);
        assert_true(strcmp(r[0].got, "KA|CA") == 0 || strcmp(r[0].got, "KB|CB") == 0);
        assert_int_equal(peek_int(f, "SELECT count(*) FROM smq_signing_key"), 1);
    }
    store_close(r[1].s);
}

/* Buffered: a missing topic or subscription inside a transaction fails
 * its commit, and nothing of it is applied. */
static void test_pg_topic_missing_row_fails_the_transaction(void **state)
{
    struct fixture *f = *state;
    struct store_topic_rec k = make_topic(1, "kept"), ghost = make_topic(9, "ghost");

    assert_int_equal(store_begin(f->s), 0);
    assert_int_equal(store_topic_insert(f->s, &k), 0);
    assert_int_equal(store_topic_update(f->s, &ghost), 0);
    assert_int_equal(store_commit(f->s), SMQ_E_INTERNAL);
    store_rollback(f->s);
    assert_int_equal(peek_int(f, "SELECT count(*) FROM smq_topic"), 0);
}

/* A topic message's body is readable while its commit waits for the
 * flush (store_defer_fsync), from the write itself. */
static void test_pg_tmsg_body_before_flush(void **state)
{
    struct fixture *f = *state;
    struct smq_buf body;

    buf_init(&body);
    assert_int_equal(store_defer_fsync(f->s), 0);
    assert_int_equal(store_begin(f->s), 0);
    put_tmsg(f->s, 1, 42);
    assert_int_equal(store_commit(f->s), 0);
    assert_int_equal(peek_int(f, "SELECT count(*) FROM smq_tmsg_body"), 0);   /* queued */
    assert_int_equal(store_tmsg_body(f->s, 42, &body), 0);
    assert_memory_equal(body.data, "body 42", 7);
    assert_int_equal(store_flush(f->s), 0);
    buf_reset(&body);
    assert_int_equal(store_tmsg_body(f->s, 42, &body), 0);
    assert_memory_equal(body.data, "body 42", 7);
    buf_free(&body);
}

/* The attribute number of the first column of smq_notif's primary key. */
#define NOTIF_KEY_LEAD "SELECT i.indkey[0] FROM pg_index i WHERE i.indrelid = " \
                       "'smq_notif'::regclass AND i.indisprimary"

/* A version-3 schema (smq_notif keyed by subscription first) is rekeyed by
 * message first on open, every notification kept. */
static void test_pg_v3_schema_rekeys_notifications(void **state)
{
    struct fixture *f = *state;
    store_close(f->s);
    f->s = NULL;
    peek_exec(f, "ALTER TABLE smq_notif DROP CONSTRAINT smq_notif_pkey,"
                 " ADD PRIMARY KEY (sub_id, seq);"
                 "INSERT INTO smq_notif VALUES " REKEY_NOTIF_ROWS ";"
                 "UPDATE smq_schema SET version = 3");
    assert_int_equal(peek_int(f, NOTIF_KEY_LEAD), 1);          /* sub_id */
    reopen(f);
    assert_int_equal(peek_int(f, "SELECT version FROM smq_schema"), 4);
    assert_int_equal(peek_int(f, NOTIF_KEY_LEAD), 2);          /* seq */
    expect_rekeyed_notifs(f->s);
}

struct notif_order {
    long n;
    int64_t last_sub;
    uint64_t last_seq;
    bool ordered;
};

static int check_notif_order(void *arg, const struct store_notif_rec *r)
{
    struct notif_order *o = arg;

    if (o->n > 0 && (r->seq < o->last_seq || (r->seq == o->last_seq && r->sub_id <= o->last_sub)))
        o->ordered = false;
    o->last_seq = r->seq;
    o->last_sub = r->sub_id;
    o->n++;
    return 0;
}

/* The load is paged (10,000 rows a page, keyset on (seq, sub_id)): 12,000
 * rows of three messages, so that a page ends inside one message's rows,
 * come back once each, in key order. */
static void test_pg_notif_load_pages_in_key_order(void **state)
{
    struct fixture *f = *state;
    struct notif_order o = {.ordered = true};

    peek_exec(f, "INSERT INTO smq_notif SELECT s, q, 0, 0, 0 FROM generate_series(1, 4000) s,"
                 " generate_series(7, 9) q");
    assert_int_equal(store_notif_load(f->s, check_notif_order, &o), 0);
    assert_int_equal(o.n, 12000);
    assert_true(o.ordered);
    assert_true(o.last_seq == 9 && o.last_sub == 4000);
}

/* A version-1 schema (the one before topics) gains the topic tables on
 * open and keeps every row it had. */
static void test_pg_v1_schema_gains_topic_tables(void **state)
{
    struct fixture *f = *state;
    struct store_queue_rec q = make_queue(1, "old");
    struct store_topic_rec t = make_topic(1, "new-topic");
    struct queue_list ql = {.n = 0};
    struct topic_list tl = {.n = 0};

    assert_int_equal(store_queue_insert(f->s, &q), 0);
    store_close(f->s);
    f->s = NULL;
    peek_exec(f, "DROP TABLE smq_topic, smq_subscription, smq_tmsg, smq_tmsg_body, smq_notif,"
                 " smq_signing_key; UPDATE smq_schema SET version = 1");
    reopen(f);
    assert_int_equal(peek_int(f, "SELECT version FROM smq_schema"), 4);
    assert_int_equal(peek_int(f, "SELECT count(*) FROM pg_tables WHERE schemaname = "
                                 "current_schema() AND tablename IN ('smq_topic', "
                                 "'smq_subscription', 'smq_tmsg', 'smq_tmsg_body', "
                                 "'smq_notif')"), 5);
    assert_int_equal(store_queue_load(f->s, collect_queue, &ql), 0);
    assert_int_equal(ql.n, 1);
    assert_memory_equal(&ql.q[0], &q, sizeof q);
    assert_int_equal(store_topic_insert(f->s, &t), 0);
    reopen(f);
    assert_int_equal(store_topic_load(f->s, collect_topic, &tl), 0);
    assert_int_equal(tl.n, 1);
    assert_topic_equal(&tl.t[0], &t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_pg_open_reopen_keeps_data, store_setup, teardown),
        cmocka_unit_test_setup_teardown(test_pg_refuses_newer_schema, schema_setup, teardown),
        cmocka_unit_test_setup_teardown(test_pg_refuses_foreign_database, schema_setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_pg_unreachable_names_the_server, schema_setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_pg_queue_round_trip, store_setup, teardown),
        cmocka_unit_test_setup_teardown(test_pg_topic_round_trip, store_setup, teardown),
        cmocka_unit_test_setup_teardown(test_pg_topic_refusals, store_setup, teardown),
        cmocka_unit_test_setup_teardown(test_pg_sub_round_trip_1024_endpoint, store_setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_pg_sub_refusals, store_setup, teardown),
        cmocka_unit_test_setup_teardown(test_pg_topic_delete_cascades, store_setup, teardown),
        cmocka_unit_test_setup_teardown(test_pg_topics_survive_reopen, store_setup, teardown),
        cmocka_unit_test_setup_teardown(test_pg_topic_savepoint_and_fault, store_setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_pg_tmsg_round_trip, store_setup, teardown),
        cmocka_unit_test_setup_teardown(test_pg_notif_round_trip, store_setup, teardown),
        cmocka_unit_test_setup_teardown(test_pg_topic_missing_row_fails_the_transaction,
                                        store_setup, teardown),
        cmocka_unit_test_setup_teardown(test_pg_tmsg_body_before_flush, store_setup, teardown),
        cmocka_unit_test_setup_teardown(test_pg_signing_key_put_if_absent, store_setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_pg_signing_key_two_nodes_one_key, store_setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_pg_signing_key_race, store_setup, teardown),
        cmocka_unit_test_setup_teardown(test_pg_notif_load_pages_in_key_order, store_setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_pg_v3_schema_rekeys_notifications, store_setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_pg_v1_schema_gains_topic_tables, store_setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_pg_missing_row_fails_the_transaction, store_setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_pg_queue_name_unique_and_too_long, store_setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_pg_msg_round_trip_move_delete, store_setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_pg_bodies_batch_binary_empty, store_setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_pg_bulk_and_paged_load, store_setup, teardown),
        cmocka_unit_test_setup_teardown(test_pg_purge_and_delete_keep_others, store_setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_pg_meta_binary_and_in_txn, store_setup, teardown),
        cmocka_unit_test_setup_teardown(test_pg_rollback_and_faults_leave_no_trace,
                                        store_setup, teardown),
        cmocka_unit_test_setup_teardown(test_pg_savepoint_undoes_one_op, store_setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_pg_deferred_commit_waits_for_flush, store_setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_pg_fence_token_must_fit, store_setup, teardown),
        cmocka_unit_test_setup_teardown(test_pg_fence_wrong_epoch_applies_nothing, store_setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_pg_fence_takeover_fences_deferred_flush,
                                        store_setup, teardown),
    };

    pg_scratch_base(base_dsn, sizeof base_dsn);
    if (base_dsn[0] == '\0') {
        fprintf(stderr, "test_store_pg: no PostgreSQL (SMQD_TEST_PG_DSN / SMQD_TEST_PG_DIR)\n");
        return 77;
    }
    return cmocka_run_group_tests(tests, NULL, NULL);
}
