/*
 * test_exposure.c — the start-up checks of file modes, the user and the
 * volume (exposure.h), on files made in a scratch directory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "exposure.h"
#include "scratch_dir.h"

struct fx {
    char dir[256];
    char conf[300];
    struct smq_config cfg;
    int errors, warnings;
    char last[1024];
};

static void record(void *arg, bool error, const char *msg)
{
    struct fx *f = arg;

    if (error)
        f->errors++;
    else
        f->warnings++;
    snprintf(f->last, sizeof f->last, "%s", msg);
}

static void make_file(const char *path, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(chmod(path, mode), 0);
}

static int setup(void **state)
{
    static struct fx f;

    memset(&f, 0, sizeof f);
    snprintf(f.dir, sizeof f.dir, "/tmp/smqd-test-exposure-XXXXXX");
    if (mkdtemp(f.dir) == NULL)
        return -1;
    snprintf(f.conf, sizeof f.conf, "%s/smqd.conf", f.dir);
    config_defaults(&f.cfg);
    snprintf(f.cfg.storage_path, sizeof f.cfg.storage_path, "%s/smqd.db", f.dir);
    f.cfg.reserve_mb = 0;        /* the volume check has its own case */
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;

    scratch_dir_remove(f->dir);
    return 0;
}

static int run(struct fx *f, uid_t euid)
{
    f->errors = f->warnings = 0;
    f->last[0] = '\0';
    return exposure_check(&f->cfg, f->conf, euid, record, f);
}

/* exposure_check as user euid finds exactly these many errors and warnings. */
static void expect_findings(struct fx *f, uid_t euid, int errors, int warnings)
{
    assert_int_equal(run(f, euid), errors);
    assert_int_equal(f->errors, errors);
    assert_int_equal(f->warnings, warnings);
}

static void test_private_files_pass(void **state)
{
    struct fx *f = *state;

    make_file(f->conf, 0600);
    make_file(f->cfg.storage_path, 0600);
    expect_findings(f, 1000, 0, 0);
    make_file(f->conf, 0640);    /* the packaged mode: root, group of the service user */
    expect_findings(f, 1000, 0, 0);
}

static void test_config_writable_by_others_is_an_error(void **state)
{
    struct fx *f = *state;

    make_file(f->conf, 0602);
    expect_findings(f, 1000, 1, 0);
    assert_non_null(strstr(f->last, "writable by every user"));
    make_file(f->conf, 0620);    /* group-writable: a warning */
    expect_findings(f, 1000, 0, 1);
}

static void test_config_readable_by_others_warns(void **state)
{
    struct fx *f = *state;

    make_file(f->conf, 0644);
    expect_findings(f, 1000, 0, 1);
    assert_non_null(strstr(f->last, "access key secrets"));
}

/* Each of the three files counts: the WAL holds recent bodies too. */
static void test_database_open_to_others_is_an_error(void **state)
{
    struct fx *f = *state;
    char wal[4200], shm[4200];

    snprintf(wal, sizeof wal, "%s-wal", f->cfg.storage_path);
    snprintf(shm, sizeof shm, "%s-shm", f->cfg.storage_path);
    make_file(f->conf, 0600);
    make_file(f->cfg.storage_path, 0644);
    expect_findings(f, 1000, 1, 0);
    assert_non_null(strstr(f->last, "every message body"));
    make_file(f->cfg.storage_path, 0600);
    make_file(wal, 0604);
    make_file(shm, 0602);
    expect_findings(f, 1000, 2, 0);
    make_file(wal, 0640);
    make_file(shm, 0600);
    expect_findings(f, 1000, 0, 1);     /* group-readable */
    unlink(wal);
    unlink(shm);
}

static void test_root_warns(void **state)
{
    struct fx *f = *state;

    make_file(f->conf, 0600);
    expect_findings(f, 0, 0, 1);
    assert_non_null(strstr(f->last, "running as root"));
}

/* This directory's volume is far smaller than 2^40 MiB: the reserve is cut
 * to a quarter of it, and start-up says so. */
static void test_reserve_larger_than_the_volume_warns(void **state)
{
    struct fx *f = *state;

    make_file(f->conf, 0600);
    f->cfg.reserve_mb = 1 << 30;
    expect_findings(f, 1000, 0, 1);
    assert_non_null(strstr(f->last, "cannot hold the 1073741824 MiB disk reserve"));
    f->cfg.reserve_mb = 1;
    expect_findings(f, 1000, 0, 0);
    f->cfg.reserve_mb = 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_private_files_pass),
        cmocka_unit_test(test_config_writable_by_others_is_an_error),
        cmocka_unit_test(test_config_readable_by_others_warns),
        cmocka_unit_test(test_database_open_to_others_is_an_error),
        cmocka_unit_test(test_root_warns),
        cmocka_unit_test(test_reserve_larger_than_the_volume_warns),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
