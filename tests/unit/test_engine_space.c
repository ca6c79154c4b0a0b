/*
 * test_engine_space.c — the engine's disk space (space.h): the storage-full
 * mode and the reclamation of free pages.  A full disk releases the
 * store's space reserve so that receives, deletes and visibility changes
 * keep working, refuses what grows the data (SendMessage, CreateQueue)
 * without touching the store, and accepts it again only once the reserve
 * is back (or cannot be made for a reason other than space); an engine
 * started without its reserve begins in that mode.  Free pages that
 * deletes leave in the database file go back to the file system between
 * runs, a slice at a time: once there are 1,024 of them and a tenth of the
 * file, and while the disk is full whatever their number.
 *
 * A full disk is injected with store_fault_inject_full (store.h), a disk
 * without room for the reserve with the engine's reserve_margin option
 * (f->reserve_margin, f->reserve_missing); the engine runs synchronously on
 * a fake clock as engine_fixture.h describes.
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine_fixture.h"

/* ---- storage full -------------------------------------------------------- */

/*
 * A full disk: the failing send reports SMQ_E_STORAGE_FULL, the disk reserve
 * file is released, further sends and queue creation are refused for the
 * cool-down without touching the store, while receive, delete and change
 * visibility keep working; after the cool-down sends work again and the
 * reserve is taken back.  Nothing acknowledged is lost.
 */
static void test_engine_space_storage_full_refuses_sends_keeps_deletes(void **state)
{
    struct fx *f = *state;
    char reserve[sizeof ((struct fx *)0)->path + 16];
    struct smq_msg_view a, b;
    struct stat st;
    struct smq_op create;

    snprintf(reserve, sizeof reserve, "%s.reserve", f->path);
    assert_int_equal(store_reserve_init(f->store, f->path, 1 << 20), 0);
    assert_int_equal(stat(reserve, &st), 0);
    assert_true(st.st_blocks * 512 >= (1 << 20));       /* real blocks, not sparse */

    assert_int_equal(fx_create_queue(f, "full", NULL, 0, NULL), 0);
    fx_send_text(f, "full", "one", 0, 8);
    fx_send_text(f, "full", "two", 0, 8);
    store_fault_inject_full(f->store, 0);
    assert_int_equal(fx_send_msg(f, "full", "lost", 4, 0, 8, NULL), SMQ_E_STORAGE_FULL);
    assert_true(fx_stats(f).storage_full);
    assert_int_not_equal(stat(reserve, &st), 0);         /* released for the deletes */

    /* Refused without a write: an injected fault would otherwise fire. */
    store_fault_inject(f->store, 0, 0);
    assert_int_equal(fx_send_msg(f, "full", "refused", 7, 0, 8, NULL), SMQ_E_STORAGE_FULL);
    fx_prep_op(f, &create, SMQ_OP_CREATE_QUEUE, "other");
    assert_int_equal(fx_run_one(f, &create), SMQ_E_STORAGE_FULL);
    store_fault_inject(f->store, STORE_FAULT_OFF, 0);

    assert_int_equal(fx_receive_one(f, "full", &a), 0);
    assert_int_equal(fx_receive_one(f, "full", &b), 0);
    assert_int_equal(fx_delete_msg(f, "full", a.seq, a.handle_gen), 0);
    assert_int_equal(fx_change_vis(f, "full", b.seq, b.handle_gen, 0, NULL, NULL), 0);
    fx_assert_counts(f, "full", 1, 0, 0);

    fx_tick(f, 4999);
    assert_int_equal(fx_send_msg(f, "full", "still", 5, 0, 8, NULL), SMQ_E_STORAGE_FULL);
    fx_tick(f, 5001);                                    /* past the cool-down */
    fx_send_text(f, "full", "three", 0, 8);
    assert_false(fx_stats(f).storage_full);
    assert_int_equal(stat(reserve, &st), 0);             /* taken back */
    fx_assert_counts(f, "full", 2, 0, 0);

    fx_reopen_engine(f, FX_MAX_QUEUES_DEFAULT);
    fx_assert_counts(f, "full", 2, 0, 0);
    assert_int_equal(db_peek_int(f->path, "SELECT count(*) FROM msg_body"), 2);
}

/*
 * While the reserve cannot be taken back (the disk is still full), sends
 * stay refused after the cool-down: accepting them would fill the space the
 * released reserve gave the deletes, and a second full disk would find no
 * reserve left to release, so that deletes would fail too.
 */
static void test_engine_space_storage_full_sends_wait_for_the_reserve(void **state)
{
    struct fx *f = *state;
    char reserve[sizeof ((struct fx *)0)->path + 16];
    struct smq_msg_view a, b;
    struct stat st;

    f->reserve_margin = UINT64_MAX / 4;          /* never that much free: no retaking */
    fx_reopen_engine(f, FX_MAX_QUEUES_DEFAULT);
    snprintf(reserve, sizeof reserve, "%s.reserve", f->path);
    assert_int_equal(store_reserve_init(f->store, f->path, 1 << 20), 0);
    assert_int_equal(fx_create_queue(f, "full", NULL, 0, NULL), 0);
    fx_send_text(f, "full", "one", 0, 8);
    fx_send_text(f, "full", "two", 0, 8);
    store_fault_inject_full(f->store, 0);
    assert_int_equal(fx_send_msg(f, "full", "lost", 4, 0, 8, NULL), SMQ_E_STORAGE_FULL);
    assert_int_not_equal(stat(reserve, &st), 0);         /* released for the deletes */

    for (int round = 0; round < 3; round++) {
        fx_tick(f, 5001);                                /* past a cool-down */
        store_fault_inject(f->store, 0, 0);              /* a send must not even try */
        assert_int_equal(fx_send_msg(f, "full", "refused", 7, 0, 8, NULL), SMQ_E_STORAGE_FULL);
        store_fault_inject(f->store, STORE_FAULT_OFF, 0);
        assert_true(fx_stats(f).storage_full);
    }
    assert_int_not_equal(stat(reserve, &st), 0);
    assert_int_equal(fx_receive_one(f, "full", &a), 0);
    assert_int_equal(fx_receive_one(f, "full", &b), 0);
    assert_int_equal(fx_delete_msg(f, "full", a.seq, a.handle_gen), 0);
    assert_int_equal(fx_delete_msg(f, "full", b.seq, b.handle_gen), 0);
    fx_assert_counts(f, "full", 0, 0, 0);
}

/* A reserve that cannot be created for another reason than space (here a
 * directory in its place) does not keep sends refused once there is room:
 * they are accepted again without it, since waiting for a reserve that can
 * never be made would refuse them for ever. */
static void test_engine_space_storage_full_unmakeable_reserve_does_not_block(void **state)
{
    struct fx *f = *state;
    char reserve[sizeof ((struct fx *)0)->path + 16];

    snprintf(reserve, sizeof reserve, "%s.reserve", f->path);
    assert_int_equal(store_reserve_init(f->store, f->path, 1 << 20), 0);
    assert_int_equal(fx_create_queue(f, "q", NULL, 0, NULL), 0);
    store_fault_inject_full(f->store, 0);
    assert_int_equal(fx_send_msg(f, "q", "lost", 4, 0, 8, NULL), SMQ_E_STORAGE_FULL);
    assert_int_equal(mkdir(reserve, 0700), 0);   /* released, and now unmakeable */
    fx_tick(f, 5001);
    fx_send_text(f, "q", "after", 0, 8);
    assert_false(fx_stats(f).storage_full);
    fx_assert_counts(f, "q", 1, 0, 0);
    assert_int_equal(rmdir(reserve), 0);
}

/*
 * The lazy delete of expired rows meets a full disk like any other write:
 * the engine enters storage-full mode, the run's other writes still commit,
 * and the rows are deleted by a later flush instead of staying on disk.
 */
static void test_engine_space_storage_full_in_expired_rows_delete(void **state)
{
    struct fx *f = *state;
    struct smq_queue_attrs a;

    assert_int_equal(store_reserve_init(f->store, f->path, 1 << 20), 0);
    mns_default_attrs(&a);
    a.retention_s = 60;
    assert_int_equal(fx_create_queue(f, "short", &a, FX_ALL_ATTRS, NULL), 0);
    assert_int_equal(fx_create_queue(f, "other", NULL, 0, NULL), 0);
    fx_send_text(f, "short", "one", 0, 8);
    fx_send_text(f, "short", "two", 0, 8);
    fx_tick(f, 61 * 1000);                               /* both expire; rows still there */
    assert_int_equal(db_peek_int(f->path, "SELECT count(*) FROM msg_body"), 2);

    store_fault_inject_full(f->store, 2);                /* the send's two writes pass */
    fx_send_text(f, "other", "kept", 0, 8);
    assert_true(fx_stats(f).storage_full);
    store_fault_inject(f->store, STORE_FAULT_OFF, 0);

    fx_tick(f, 5001);                                    /* past the cool-down */
    fx_send_text(f, "other", "after", 0, 8);
    assert_false(fx_stats(f).storage_full);
    fx_assert_counts(f, "other", 2, 0, 0);
    assert_int_equal(db_peek_int(f->path, "SELECT count(*) FROM msg_body"), 2);
}

/*
 * Started without its reserve (no room for it at start-up): the engine
 * begins in storage-full mode, refusing sends until the reserve can be
 * allocated, and takes it as soon as there is room (at the first run).
 */
static void test_engine_space_starts_full_without_reserve(void **state)
{
    struct fx *f = *state;
    char reserve[sizeof ((struct fx *)0)->path + 16];
    struct stat st;

    assert_int_equal(fx_create_queue(f, "q", NULL, 0, NULL), 0);
    fx_send_text(f, "q", "before", 0, 8);
    snprintf(reserve, sizeof reserve, "%s.reserve", f->path);
    assert_int_equal(store_reserve_init(f->store, f->path, 1 << 20), 0);
    store_reserve_release(f->store);             /* as if there had been no room for it */
    f->reserve_missing = true;
    f->reserve_margin = UINT64_MAX / 4;          /* and there still is none */
    fx_reopen_engine(f, FX_MAX_QUEUES_DEFAULT);
    assert_true(fx_stats(f).storage_full);
    assert_int_equal(fx_send_msg(f, "q", "refused", 7, 0, 8, NULL), SMQ_E_STORAGE_FULL);
    fx_tick(f, 5001);
    assert_int_equal(fx_send_msg(f, "q", "refused", 7, 0, 8, NULL), SMQ_E_STORAGE_FULL);
    assert_int_not_equal(stat(reserve, &st), 0);
    fx_assert_counts(f, "q", 1, 0, 0);

    f->reserve_margin = 0;                       /* room now */
    fx_reopen_engine(f, FX_MAX_QUEUES_DEFAULT);
    fx_send_text(f, "q", "after", 0, 8);         /* the first run took the reserve */
    assert_false(fx_stats(f).storage_full);
    assert_int_equal(stat(reserve, &st), 0);
    fx_assert_counts(f, "q", 2, 0, 0);
}

/* A send refused by the storage-full mode; returns the text it is answered
 * with (copied into msg). */
static const char *refused_send_text(struct fx *f, const char *queue, char *msg, size_t size)
{
    struct smq_op op;

    fx_prep_op(f, &op, SMQ_OP_SEND, queue);
    op.send.items[0] = (struct smq_send_item){.body = "refused", .body_len = 7, .priority = 8};
    op.send.n = 1;
    assert_int_equal(fx_run_one(f, &op), SMQ_E_STORAGE_FULL);
    snprintf(msg, size, "%s", errors_message(&op.result));
    op_release(&op);
    return msg;
}

/*
 * Sends refused while the released reserve lasts say that receives and
 * deletes are served; once a receive or delete fails for a full disk too
 * (another process took the space the reserve gave back), the reserve is
 * spent: refused sends and queue creations no longer claim that, the stats
 * (smqd_storage_reserve_spent) say so, until the reserve is taken back.
 */
static void test_engine_space_storage_full_refusal_says_when_reserve_spent(void **state)
{
    struct fx *f = *state;
    struct smq_msg_view a, b;
    struct smq_op create;
    char msg[256];

    assert_int_equal(store_reserve_init(f->store, f->path, 1 << 20), 0);
    assert_int_equal(fx_create_queue(f, "full", NULL, 0, NULL), 0);
    fx_send_text(f, "full", "one", 0, 8);
    fx_send_text(f, "full", "two", 0, 8);
    store_fault_inject_full(f->store, 0);
    assert_int_equal(fx_send_msg(f, "full", "lost", 4, 0, 8, NULL), SMQ_E_STORAGE_FULL);
    assert_string_equal(refused_send_text(f, "full", msg, sizeof msg), SMQ_STORAGE_FULL_REFUSAL);
    assert_non_null(strstr(msg, "receives and deletes are served while its disk reserve lasts"));
    assert_true(fx_stats(f).storage_full);
    assert_false(fx_stats(f).storage_reserve_spent);
    assert_int_equal(fx_receive_one(f, "full", &a), 0);    /* served on the reserve */

    store_fault_inject_full(f->store, 0);                   /* and now that is gone too */
    assert_int_equal(fx_receive_one(f, "full", &b), SMQ_E_STORAGE_FULL);
    assert_true(fx_stats(f).storage_reserve_spent);
    refused_send_text(f, "full", msg, sizeof msg);
    assert_string_equal(msg, SMQ_STORAGE_FULL_SPENT_REFUSAL);
    assert_non_null(strstr(msg, "reserve is left (it is spent)"));
    assert_null(strstr(msg, "served"));
    assert_null(strstr(msg, "lasts"));
    fx_prep_op(f, &create, SMQ_OP_CREATE_QUEUE, "other");
    assert_int_equal(fx_run_one(f, &create), SMQ_E_STORAGE_FULL);
    assert_string_equal(errors_message(&create.result), SMQ_STORAGE_FULL_SPENT_REFUSAL);
    op_release(&create);
    /* A delete that works again (space came back) does not bring the reserve back. */
    assert_int_equal(fx_delete_msg(f, "full", a.seq, a.handle_gen), 0);
    assert_true(fx_stats(f).storage_reserve_spent);

    fx_tick(f, 5001);                                       /* the reserve is taken back */
    fx_send_text(f, "full", "three", 0, 8);
    assert_false(fx_stats(f).storage_full);
    assert_false(fx_stats(f).storage_reserve_spent);
    store_fault_inject_full(f->store, 0);                   /* a second full disk: a reserve again */
    assert_int_equal(fx_send_msg(f, "full", "lost", 4, 0, 8, NULL), SMQ_E_STORAGE_FULL);
    assert_string_equal(refused_send_text(f, "full", msg, sizeof msg), SMQ_STORAGE_FULL_REFUSAL);
    assert_false(fx_stats(f).storage_reserve_spent);
}

/* Without a reserve (none held, or none could be made at start) nothing is
 * released for the deletes: the mode starts with the reserve spent. */
static void test_engine_space_storage_full_without_reserve_claims_nothing(void **state)
{
    struct fx *f = *state;
    char msg[256];

    assert_int_equal(fx_create_queue(f, "q", NULL, 0, NULL), 0);
    store_fault_inject_full(f->store, 0);                   /* the fixture holds no reserve */
    assert_int_equal(fx_send_msg(f, "q", "lost", 4, 0, 8, NULL), SMQ_E_STORAGE_FULL);
    assert_true(fx_stats(f).storage_reserve_spent);
    assert_string_equal(refused_send_text(f, "q", msg, sizeof msg), SMQ_STORAGE_FULL_SPENT_REFUSAL);

    assert_int_equal(store_reserve_init(f->store, f->path, 1 << 20), 0);
    store_reserve_release(f->store);             /* as if there had been no room for it */
    f->reserve_missing = true;
    f->reserve_margin = UINT64_MAX / 4;          /* and there still is none */
    fx_reopen_engine(f, FX_MAX_QUEUES_DEFAULT);
    assert_true(fx_stats(f).storage_full);
    assert_true(fx_stats(f).storage_reserve_spent);
    assert_string_equal(refused_send_text(f, "q", msg, sizeof msg), SMQ_STORAGE_FULL_SPENT_REFUSAL);
}

/* ---- reclaiming free pages ----------------------------------------------- */

/* Sends 1,280 messages of 4,000 bytes (about as many pages) to queue in
 * batches of 16. */
static void fill_pages(struct fx *f, const char *queue)
{
    static char body[4000];
    struct smq_op op;

    memset(body, 'x', sizeof body);
    for (int batch = 0; batch < 80; batch++) {
        fx_prep_op(f, &op, SMQ_OP_SEND, queue);
        for (int i = 0; i < 16; i++)
            op.send.items[i] = (struct smq_send_item){.body = body, .body_len = sizeof body,
                                                .delay_s = 0, .priority = 8};
        op.send.n = 16;
        assert_int_equal(fx_run_one(f, &op), 0);
        op_release(&op);
    }
}

/* After a purge the free pages (far more than a tenth of the file) go back
 * to the file system in steps between runs, on their own, until fewer than
 * 1,024 are left, which stay for reuse; then nothing more is scheduled. */
static void test_engine_space_reclaims_after_purge(void **state)
{
    struct fx *f = *state;
    struct smq_engine_stats st;
    uint64_t n = 0, n_dlq = 0, pages_full;

    fx_create_queue_vis(f, "big", 30);
    fill_pages(f, "big");                          /* 1,280 pages of bodies */
    pages_full = (uint64_t)db_peek_int(f->path, "PRAGMA page_count");
    /* No maintenance is scheduled while nothing was deleted (only expiry). */
    assert_true(engine_next_timeout_ms(f->e) > 300000);
    assert_int_equal(fx_purge(f, "big", true, false, &n, &n_dlq), 0);
    assert_int_equal(n, 1280);
    /* Reclamation steps run between runs, a slice at a time, on their own,
     * and stop once nothing is worth reclaiming. */
    for (int i = 0; i < 100 && engine_next_timeout_ms(f->e) != UINT64_MAX; i++)
        fx_tick(f, engine_next_timeout_ms(f->e));
    assert_int_equal(engine_next_timeout_ms(f->e), UINT64_MAX);
    st = fx_stats(f);
    assert_true(st.vacuumed_pages >= 1024);      /* the rest stays for reuse */
    assert_true(st.free_pages < 1024);
    assert_true((uint64_t)db_peek_int(f->path, "PRAGMA page_count") + 1024 <= pages_full);
}

/* Lets every maintenance step due within 10 s run. */
static void run_maintenance(struct fx *f)
{
    for (int i = 0; i < 100 && engine_next_timeout_ms(f->e) < 10000; i++)
        fx_tick(f, engine_next_timeout_ms(f->e) + 1);
}

/* Receives and deletes 16 of queue's messages, then runs maintenance. */
static void delete_16_and_maintain(struct fx *f, const char *queue)
{
    struct smq_op recv;

    assert_int_equal(fx_receive(f, &recv, queue, 16, 0), 0);
    for (size_t i = 0; i < recv.recv.n_msgs; i++)
        assert_int_equal(fx_delete_msg(f, queue, recv.recv.msgs[i].seq,
                                       recv.recv.msgs[i].handle_gen), 0);
    op_release(&recv);
    run_maintenance(f);
}

/* While the disk is full, free pages go back to the file system however
 * few they are: sends wait for room to retake the reserve, and a partial
 * drain frees pages only inside the file; left there below a tenth of the
 * file, as at other times, they would give the file system no room, and
 * sends could stay refused for ever. */
static void test_engine_space_reclaims_any_free_page_while_full(void **state)
{
    struct fx *f = *state;
    uint64_t before;

    f->reserve_margin = UINT64_MAX / 4;          /* the reserve never comes back here */
    fx_reopen_engine(f, FX_MAX_QUEUES_DEFAULT);
    fx_create_queue_vis(f, "big", 30);
    fill_pages(f, "big");                          /* 1,280 pages of bodies */
    store_fault_inject_full(f->store, 0);
    assert_int_equal(fx_send_msg(f, "big", "x", 1, 0, 8, NULL), SMQ_E_STORAGE_FULL);
    before = fx_stats(f).vacuumed_pages;
    delete_16_and_maintain(f, "big");
    assert_true(fx_stats(f).storage_full);
    assert_true(fx_stats(f).vacuumed_pages >= before + 16);  /* 16 bodies: 16 pages at least */
}

/* Free pages already in the file when the disk fills (left there below a
 * tenth of it) are handed back too, without waiting for another delete:
 * with idle queues no delete may come, and sends would stay refused. */
static void test_engine_space_reclaims_on_entering_full(void **state)
{
    struct fx *f = *state;
    uint64_t before;

    f->reserve_margin = UINT64_MAX / 4;
    fx_reopen_engine(f, FX_MAX_QUEUES_DEFAULT);
    fx_create_queue_vis(f, "big", 30);
    fill_pages(f, "big");
    delete_16_and_maintain(f, "big");
    before = fx_stats(f).vacuumed_pages;
    assert_true(fx_stats(f).free_pages >= 16);   /* under a tenth: left for reuse */
    store_fault_inject_full(f->store, 0);
    assert_int_equal(fx_send_msg(f, "big", "x", 1, 0, 8, NULL), SMQ_E_STORAGE_FULL);
    run_maintenance(f);
    assert_true(fx_stats(f).storage_full);
    assert_true(fx_stats(f).vacuumed_pages >= before + 16);
}

/* The same at a start without room for the reserve: the engine begins in
 * storage-full mode, and the free pages the file already holds go back at
 * once, so that the reserve can be made and sends accepted. */
static void test_engine_space_reclaims_at_start_without_reserve(void **state)
{
    struct fx *f = *state;

    f->reserve_margin = UINT64_MAX / 4;
    fx_reopen_engine(f, FX_MAX_QUEUES_DEFAULT);
    assert_int_equal(store_reserve_init(f->store, f->path, 1 << 20), 0);
    fx_create_queue_vis(f, "big", 30);
    fill_pages(f, "big");
    delete_16_and_maintain(f, "big");
    assert_true(fx_stats(f).free_pages >= 16);   /* under a tenth: left for reuse */
    store_reserve_release(f->store);             /* as if there had been no room for it */
    f->reserve_missing = true;
    fx_reopen_engine(f, FX_MAX_QUEUES_DEFAULT);
    run_maintenance(f);
    assert_true(fx_stats(f).storage_full);
    assert_true(fx_stats(f).vacuumed_pages >= 16);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, fx_setup, fx_teardown)
        T(test_engine_space_storage_full_refuses_sends_keeps_deletes),
        T(test_engine_space_storage_full_sends_wait_for_the_reserve),
        T(test_engine_space_storage_full_unmakeable_reserve_does_not_block),
        T(test_engine_space_storage_full_in_expired_rows_delete),
        T(test_engine_space_storage_full_refusal_says_when_reserve_spent),
        T(test_engine_space_storage_full_without_reserve_claims_nothing),
        T(test_engine_space_starts_full_without_reserve),
        T(test_engine_space_reclaims_after_purge),
        T(test_engine_space_reclaims_any_free_page_while_full),
        T(test_engine_space_reclaims_on_entering_full),
        T(test_engine_space_reclaims_at_start_without_reserve),
#undef T
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
