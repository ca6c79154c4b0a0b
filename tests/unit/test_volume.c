/*
 * test_volume.c — the volume facts and the reserve's sizing rule
 * (volume.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "smqd/volume.h"

static void test_dir_of(void **state)
{
    char out[16];

    (void)state;
    assert_int_equal(volume_dir_of("smqd.db", out, sizeof out), 0);
    assert_string_equal(out, ".");
    assert_int_equal(volume_dir_of("/var/lib/smqd.db", out, sizeof out), 0);
    assert_string_equal(out, "/var/lib/");
    assert_int_not_equal(volume_dir_of("/a/very/long/directory/x.db", out, sizeof out), 0);
}

/* The reserve asked for, unless it is more than a quarter of the volume:
 * a 30 MiB volume holds 7.5 MiB, so a drained queue gets sends back with
 * 15 MiB free (the default 16 MiB would have needed 32 MiB, more than the
 * volume). */
static void test_reserve_follows_the_volume(void **state)
{
    (void)state;
    assert_int_equal(volume_reserve_for(16u << 20, 0), 16u << 20);       /* unknown */
    assert_int_equal(volume_reserve_for(16u << 20, 1ull << 40), 16u << 20);
    assert_int_equal(volume_reserve_for(16u << 20, 30u << 20), 7864320);
    assert_int_equal(volume_reserve_for(16u << 20, 64u << 20), 16u << 20);
    assert_int_equal(volume_reserve_for(16u << 20, (64u << 20) - 1), (16u << 20) - 4096);
    assert_int_equal(volume_reserve_for(0, 30u << 20), 0);
    assert_int_equal(volume_reserve_for(1u << 20, 8192), 0);   /* too small for a block */
}

static void test_volume_of_this_directory(void **state)
{
    (void)state;
    assert_true(volume_size_bytes("./x.db") > 0);
    assert_true(volume_free_bytes("./x.db") <= volume_size_bytes("./x.db"));
    assert_int_equal(volume_size_bytes("/nonexistent-dir-smqd/x.db"), 0);
    assert_int_equal(volume_free_bytes("/nonexistent-dir-smqd/x.db"), UINT64_MAX);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dir_of),
        cmocka_unit_test(test_reserve_follows_the_volume),
        cmocka_unit_test(test_volume_of_this_directory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
