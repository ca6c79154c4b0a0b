/*
 * test_syncer_log.c — unit tests for the error line syncer.c logs when a
 * flush fails: it names the flush as syncer_opts.flush_what says (the
 * PostgreSQL backend's is a COMMIT, not an fdatasync), and without the
 * option it keeps SQLite's wording.
 *
 * The flush is the gated one of flush_gate.h, made to fail; the log goes to
 * a file of the test's own (log_open), read back once the op is answered.
 * Waits are bounded (5 s) and fail the test.
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

#include "smqd/errors.h"
#include "smqd/log.h"
#include "smqd/syncer.h"

#include "flush_gate.h"

static int answered;

static void on_done(struct smq_op *op, void *arg)
{
    (void)op;
    (void)arg;
    pthread_mutex_lock(&gate_lock);
    answered++;
    pthread_cond_broadcast(&gate_cond);
    pthread_mutex_unlock(&gate_lock);
}

/* Runs one failing flush through a syncer started with flush_what and
 * returns the log it wrote (caller frees). */
static char *log_of_failed_flush(const char *flush_what)
{
    struct syncer_opts opts = {.flush = gated_flush, .flush_what = flush_what};
    struct smq_syncer *s = NULL;
    struct smq_op op;
    char dir[] = "/tmp/test_syncer_log.XXXXXX", path[128], err[256], *text;
    FILE *f;
    long len;

    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/smqd.log", dir);
    assert_int_equal(log_open(path), 0);
    reset_gate();
    answered = 0;
    set_flush_result(-1);
    assert_int_equal(syncer_start(&opts, &s, err, sizeof err), 0);
    op_init(&op, SMQ_OP_SEND);
    op.done = on_done;
    syncer_committed(s);
    syncer_release(s, &op);
    allow_flushes(1);
    assert_true(wait_for(&answered, 1));
    assert_int_equal(op.result.err, SMQ_E_INTERNAL);
    allow_flushes(1000);
    syncer_stop(s);
    log_close();
    f = fopen(path, "r");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    len = ftell(f);
    rewind(f);
    text = calloc(1, (size_t)len + 1);
    assert_non_null(text);
    assert_int_equal(fread(text, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    unlink(path);
    rmdir(dir);
    return text;
}

static void test_flush_failure_names_the_given_flush(void **state)
{
    char *text = log_of_failed_flush("COMMIT on PostgreSQL");

    (void)state;
    if (strstr(text, "the flush of committed writes (COMMIT on PostgreSQL) failed") == NULL)
        fail_msg("log lacks the PostgreSQL flush: %s", text);
    assert_null(strstr(text, "fdatasync"));
    free(text);
}

static void test_flush_failure_defaults_to_the_wal_fdatasync(void **state)
{
    char *text = log_of_failed_flush(NULL);

    (void)state;
    if (strstr(text, "the flush of committed writes (fdatasync of the write-ahead log) "
                     "failed") == NULL)
        fail_msg("log lacks the SQLite flush: %s", text);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flush_failure_names_the_given_flush),
        cmocka_unit_test(test_flush_failure_defaults_to_the_wal_fdatasync),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
