/*
 * engine_fixture.c — the shared fixture of the engine's unit tests
 * (engine_fixture.h): a store in a temporary directory (or a PostgreSQL
 * schema), an engine on a fake clock, and the helpers that build, run and
 * check operations.
 */
#include "engine_fixture.h"
#include "pg_scratch.h"
#include "scratch_dir.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


/* ---- setup and teardown -------------------------------------------------- */

static void on_done(struct smq_op *op, void *arg)
{
    struct fx *f = arg;

    if (f->n_done < FX_DONE_MAX)
        f->done[f->n_done] = op;
    f->n_done++;
    for (size_t i = 0; i < FX_N_PARK; i++)
        if (op == &f->park[i])
            f->park_done[i]++;
}

void fx_open_engine(struct fx *f, int max_queues)
{
    struct smq_engine_opts opts = {.clock = &f->clock.clock, .store = f->store,
                                   .max_queues = max_queues,
                                   .reserve_margin = f->reserve_margin,
                                   .reserve_missing = f->reserve_missing,
                                   .max_topics = f->max_topics,
                                   .max_subs_per_topic = f->max_subs_per_topic};
    char err[256] = "";

    assert_int_equal(engine_open(&opts, &f->e, err, sizeof err), 0);
}

void fx_reopen_engine(struct fx *f, int max_queues)
{
    engine_close(f->e);
    f->e = NULL;
    fx_open_engine(f, max_queues);
    assert_null(engine_check(f->e));       /* recovery rebuilt every structure */
}

/* A schema of this test's own (pg_scratch.h); the store's dsn searches it alone. */
static int pg_store_setup(struct fx *f)
{
    f->pg = true;
    if (pg_scratch_create(&f->pg_scratch) != 0)
        return -1;
    snprintf(f->path, sizeof f->path, "pg:%s", f->pg_scratch.dsn);
    return 0;
}

static int open_store(struct fx *f)
{
    struct store_config cfg = {.path = f->path, .sync = SMQ_SYNC_NORMAL};
    char err[512];

    if (f->pg) {
        cfg.backend = SMQ_STORE_POSTGRESQL;
        cfg.dsn = f->path + 3;
    }
    if (store_open(&cfg, &f->store, err, sizeof err) == 0)
        return 0;
    fprintf(stderr, "store_open: %s\n", err);
    return -1;
}

int fx_setup(void **state)
{
    struct fx *f = calloc(1, sizeof *f);
    struct smq_engine_opts opts;
    char err[256];

    if (f == NULL)
        return -1;
    snprintf(f->dir, sizeof f->dir, "/tmp/smqd-test-engine-XXXXXX");
    if (mkdtemp(f->dir) == NULL) {
        free(f);
        return -1;
    }
    snprintf(f->path, sizeof f->path, "%s/smqd.db", f->dir);
    *state = f;
    clock_fake_init(&f->clock, FX_MONO0, FX_EPOCH0);
    if ((pg_scratch_available() && pg_store_setup(f) != 0) || open_store(f) != 0)
        return -1;
    opts = (struct smq_engine_opts){.clock = &f->clock.clock, .store = f->store,
                                    .max_queues = FX_MAX_QUEUES_DEFAULT};
    return engine_open(&opts, &f->e, err, sizeof err) == 0 ? 0 : -1;
}

/* Closes the engine (completing any parked op into the fixture), then
 * removes the directory and whatever SQLite left in it (-wal, -shm), or
 * the test's PostgreSQL schema. */
int fx_teardown(void **state)
{
    struct fx *f = *state;

    engine_close(f->e);
    for (size_t i = 0; i < FX_N_PARK; i++)
        op_release(&f->park[i]);
    for (size_t i = 0; i < sizeof f->scratch / sizeof f->scratch[0]; i++)
        free(f->scratch[i]);
    store_close(f->store);
    pg_scratch_drop(&f->pg_scratch);
    scratch_dir_remove(f->dir);
    free(f);
    return 0;
}

/* ---- running ops --------------------------------------------------------- */

void fx_prep_op(struct fx *f, struct smq_op *op, enum smq_op_kind kind, const char *queue)
{
    op_init(op, kind);
    snprintf(op->queue, sizeof op->queue, "%s", queue);
    op->done = on_done;
    op->done_arg = f;
}

/* After every run: the engine's counters, heaps and message table agree. */
static void check_engine(const struct fx *f)
{
    const char *why = engine_check(f->e);

    if (why != NULL)
        fail_msg("engine_check: %s", why);
}

void fx_run_ops(struct fx *f, struct smq_op **ops, size_t n)
{
    for (size_t i = 0; i + 1 < n; i++)
        ops[i]->next = ops[i + 1];
    if (n > 0)
        ops[n - 1]->next = NULL;
    f->n_done = 0;
    engine_run(f->e, n > 0 ? ops[0] : NULL);
    check_engine(f);
}

int fx_done_pos(const struct fx *f, const struct smq_op *op)
{
    for (size_t i = 0; i < f->n_done && i < FX_DONE_MAX; i++)
        if (f->done[i] == op)
            return (int)i;
    return -1;
}

int fx_run_one(struct fx *f, struct smq_op *op)
{
    fx_run_ops(f, &op, 1);
    assert_true(fx_done_pos(f, op) >= 0);
    return op->result.err;
}

void fx_tick(struct fx *f, uint64_t ms)
{
    clock_fake_advance(&f->clock, ms);
    f->n_done = 0;
    engine_run(f->e, NULL);
    check_engine(f);
}

int64_t fx_now_ms(const struct fx *f)
{
    return f->clock.epoch_ms;
}

struct smq_engine_stats fx_stats(const struct fx *f)
{
    struct smq_engine_stats st;

    engine_stats(f->e, &st);
    return st;
}

/* ---- queues -------------------------------------------------------------- */

int fx_create_queue(struct fx *f, const char *name, const struct smq_queue_attrs *attrs,
                    unsigned present, bool *created)
{
    struct smq_op op;
    int err;

    fx_prep_op(f, &op, SMQ_OP_CREATE_QUEUE, name);
    if (attrs != NULL)
        op.attrs.values = *attrs;
    op.attrs.present = present;
    err = fx_run_one(f, &op);
    if (created != NULL)
        *created = op.attrs.created;
    op_release(&op);
    return err;
}

void fx_create_queue_vis(struct fx *f, const char *name, int64_t visibility_s)
{
    struct smq_queue_attrs a;

    mns_default_attrs(&a);
    a.visibility_s = visibility_s;
    assert_int_equal(fx_create_queue(f, name, &a, SMQ_ATTR_VISIBILITY, NULL), 0);
}

int fx_create_with_dlq(struct fx *f, const char *name, const char *target,
                       int64_t max_receive, int64_t visibility_s)
{
    struct smq_queue_attrs a;

    mns_default_attrs(&a);
    a.visibility_s = visibility_s;
    if (target != NULL) {
        a.dlq.enabled = 1;
        snprintf(a.dlq.target, sizeof a.dlq.target, "%s", target);
        a.dlq.max_receive = max_receive;
    }
    return fx_create_queue(f, name, &a, SMQ_ATTR_VISIBILITY | SMQ_ATTR_DLQ, NULL);
}

int fx_get_info(struct fx *f, const char *name, struct smq_queue_info *info)
{
    struct smq_op op;
    int err;

    fx_prep_op(f, &op, SMQ_OP_GET_QUEUE, name);
    err = fx_run_one(f, &op);
    *info = op.info;
    op_release(&op);
    return err;
}

int fx_delete_queue(struct fx *f, const char *name)
{
    struct smq_op op;
    int err;

    fx_prep_op(f, &op, SMQ_OP_DELETE_QUEUE, name);
    err = fx_run_one(f, &op);
    op_release(&op);
    return err;
}

void fx_check_counts(struct fx *f, const char *queue, uint64_t active, uint64_t inactive,
                     uint64_t delayed, const char *file, int line)
{
    struct smq_queue_info info;

    _assert_int_equal(cast_to_largest_integral_type(fx_get_info(f, queue, &info)), 0, file, line);
    if (info.n_active != active || info.n_inactive != inactive || info.n_delayed != delayed) {
        print_error("%s: Active/Inactive/Delayed = %llu/%llu/%llu, expected %llu/%llu/%llu\n",
                    queue, (unsigned long long)info.n_active,
                    (unsigned long long)info.n_inactive, (unsigned long long)info.n_delayed,
                    (unsigned long long)active, (unsigned long long)inactive,
                    (unsigned long long)delayed);
        _fail(file, line);
    }
}

/* ---- messages ------------------------------------------------------------ */

int fx_send_msg(struct fx *f, const char *queue, const void *body, size_t len,
                int64_t delay_s, int priority, uint64_t *seq)
{
    struct smq_op op;
    int err;

    fx_prep_op(f, &op, SMQ_OP_SEND, queue);
    op.send.items[0] = (struct smq_send_item){.body = body, .body_len = len, .delay_s = delay_s, .priority = priority};
    op.send.n = 1;
    err = fx_run_one(f, &op);
    if (seq != NULL)
        *seq = op.send.seq[0];
    op_release(&op);
    return err;
}

uint64_t fx_send_text(struct fx *f, const char *queue, const char *text, int64_t delay_s,
                      int priority)
{
    uint64_t seq = 0;

    assert_int_equal(fx_send_msg(f, queue, text, strlen(text), delay_s, priority, &seq), 0);
    return seq;
}

int fx_receive(struct fx *f, struct smq_op *op, const char *queue, int n, int64_t wait_s)
{
    fx_prep_op(f, op, SMQ_OP_RECEIVE, queue);
    op->recv.max_msgs = n;
    op->recv.wait_s = wait_s;
    return fx_run_one(f, op);
}

int fx_receive_one(struct fx *f, const char *queue, struct smq_msg_view *out)
{
    struct smq_op op;
    int err = fx_receive(f, &op, queue, 1, 0);

    memset(out, 0, sizeof *out);
    if (err == 0) {
        assert_int_equal(op.recv.n_msgs, 1);
        *out = op.recv.msgs[0];
        out->body = NULL;
    } else {
        assert_int_equal(op.recv.n_msgs, 0);
    }
    op_release(&op);
    return err;
}

void fx_receive_and_lapse(struct fx *f, const char *queue, uint64_t seq, int64_t vis_s)
{
    struct smq_msg_view v;

    assert_int_equal(fx_receive_one(f, queue, &v), 0);
    assert_true(v.seq == seq);
    fx_tick(f, (uint64_t)vis_s * 1000 + 1);
}

void fx_park_probed(struct fx *f, struct smq_op *op, const char *queue, int64_t wait_s,
                    bool (*client_gone)(struct smq_op *, void *))
{
    struct smq_op *list[1] = {op};

    op_release(op);
    fx_prep_op(f, op, SMQ_OP_RECEIVE, queue);
    op->recv.wait_s = wait_s;
    op->client_gone = client_gone;
    fx_run_ops(f, list, 1);
    assert_int_equal(f->n_done, 0);
}

void fx_park(struct fx *f, struct smq_op *op, const char *queue, int64_t wait_s)
{
    fx_park_probed(f, op, queue, wait_s, NULL);
}

void fx_make_ref(struct fx *f, uint64_t seq, uint32_t gen, struct smq_handle_ref *ref)
{
    char text[HANDLE_TEXT_LEN + 1];

    memset(ref, 0, sizeof *ref);
    handle_encode(engine_keys(f->e), seq, gen, text);
    assert_int_equal(handle_decode(engine_keys(f->e), text, strlen(text), &ref->seq, &ref->gen), 0);
    assert_true(ref->seq == seq);
    assert_int_equal(ref->gen, gen);
}

int fx_delete_msg(struct fx *f, const char *queue, uint64_t seq, uint32_t gen)
{
    struct smq_op op;
    int err;

    fx_prep_op(f, &op, SMQ_OP_DELETE_MSG, queue);
    fx_make_ref(f, seq, gen, &op.del.refs[0]);
    op.del.n = 1;
    err = fx_run_one(f, &op);
    op_release(&op);
    return err;
}

int fx_change_vis(struct fx *f, const char *queue, uint64_t seq, uint32_t gen,
                  int64_t visibility_s, uint32_t *new_gen, int64_t *next_visible_ms)
{
    struct smq_op op;
    int err;

    fx_prep_op(f, &op, SMQ_OP_CHANGE_VISIBILITY, queue);
    fx_make_ref(f, seq, gen, &op.vis.ref);
    op.del.n = 1;
    op.vis.visibility_s = visibility_s;
    err = fx_run_one(f, &op);
    if (new_gen != NULL)
        *new_gen = op.vis.new_gen;
    if (next_visible_ms != NULL)
        *next_visible_ms = op.vis.next_visible_ms;
    op_release(&op);
    return err;
}

void fx_assert_body(const struct smq_msg_view *v, const char *text)
{
    assert_non_null(v->body);
    assert_int_equal(v->body_len, strlen(text));
    assert_memory_equal(v->body, text, strlen(text));
}

/* ---- administration ------------------------------------------------------ */

struct smq_queue_stats fx_queue_stats(struct fx *f, const char *name)
{
    struct smq_op op;
    struct smq_queue_stats st;

    fx_prep_op(f, &op, SMQ_OP_STATS, name);
    assert_int_equal(fx_run_one(f, &op), 0);
    assert_int_equal(op.stats.n_queues, 1);
    st = op.stats.queues[0];
    op_release(&op);
    return st;
}

int fx_purge(struct fx *f, const char *queue, bool main_q, bool dlq, uint64_t *n,
             uint64_t *n_dlq)
{
    struct smq_op op;
    int err;

    fx_prep_op(f, &op, SMQ_OP_PURGE, queue);
    op.purge.main = main_q;
    op.purge.dlq = dlq;
    err = fx_run_one(f, &op);
    *n = op.purge.n_main;
    *n_dlq = op.purge.n_dlq;
    op_release(&op);
    return err;
}

void fx_fill_dlq(struct fx *f, int n)
{
    struct smq_op op;

    for (int i = 0; i < n; i++)
        fx_send_text(f, "src", "m", 0, 8);
    for (int done = 0; done < n; done += 16) {
        assert_int_equal(fx_receive(f, &op, "src", 16, 0), 0);
        op_release(&op);
    }
    fx_tick(f, 1001);
    assert_int_equal(fx_receive(f, &op, "src", 1, 0), SMQ_E_MESSAGE_NOT_EXIST);
    op_release(&op);
    fx_assert_counts(f, "dlq", (uint64_t)n, 0, 0);
}
