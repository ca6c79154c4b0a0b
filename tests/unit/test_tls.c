/*
 * test_tls.c — loading and swapping a listener's certificate (tls.h), with
 * two throw-away self-signed P-256 pairs written into scratch files.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scratch_dir.h"
#include "smqd/errors.h"
#include "smqd/tls.h"

static const char CERT_A[] =
    "-----BEGIN CERTIFICATE-----\n"
    "MIIBgzCCASmgAwIBAgIUWzOD2P33g0lQ7T2elCH+01TszjwwCgYIKoZIzj0EAwIw\n"
    "FjEUMBIGA1UEAwwLc21xZCB1bml0IGEwIBcNMjYxMjAyMDE1NDQyWhgPMjEyNjEx\n"
    "MDgwMTU0NDJaMBYxFDASBgNVBAMMC3NtcWQgdW5pdCBhMFkwEwYHKoZIzj0CAQYI\n"
    "KoZIzj0DAQcDQgAE0QPr6+wi/KXwpN4krhJpPoXMhvHoiUU9/P+YPiIcuJdQ/A2L\n"
    "eQsSK7IIt6mxxm8SCw0P4/pufgiATej4zu4ZA6NTMFEwHQYDVR0OBBYEFGhti1XI\n"
    "7Kz2i6jQlC+CkqCWOJfJMB8GA1UdIwQYMBaAFGhti1XI7Kz2i6jQlC+CkqCWOJfJ\n"
    "MA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDSAAwRQIgfcTqsG3cRlOyUgDp\n"
    "THubK+qYIFAknJCpcXFueKDFjkUCIQD6+nkidlRmPGuukGwywgvVt9pxMkVhtPE+\n"
    "J6vvadAyJQ==\n"
    "-----END CERTIFICATE-----\n";
static const char KEY_A[] =
    "-----BEGIN PRIVATE KEY-----\n"
    "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgaJxscf3tKPdQbhjt\n"
    "MfwB0ymLelartQ/yZbOXyyhCmuOhRANCAATRA+vr7CL8pfCk3iSuEmk+hcyG8eiJ\n"
    "RT38/5g+Ihy4l1D8DYt5CxIrsgi3qbHGbxILDQ/j+m5+CIBN6PjO7hkD\n"
    "-----END PRIVATE KEY-----\n";
static const char CERT_B[] =
    "-----BEGIN CERTIFICATE-----\n"
    "MIIBgzCCASmgAwIBAgIUbIMZuba0Pip6XF6OtHvaHmkOVX8wCgYIKoZIzj0EAwIw\n"
    "FjEUMBIGA1UEAwwLc21xZCB1bml0IGIwIBcNMjYxMjAyMDE1NDQyWhgPMjEyNjEx\n"
    "MDgwMTU0NDJaMBYxFDASBgNVBAMMC3NtcWQgdW5pdCBiMFkwEwYHKoZIzj0CAQYI\n"
    "KoZIzj0DAQcDQgAEArrGzR8vVHUHhHG9q/VAMHSc0XnJfbVh8oIgo/9dIhVq++jw\n"
    "0+7A1PEzgBjOkksVqwWX70T5PCB3xdSMZeuryKNTMFEwHQYDVR0OBBYEFCqVfEnZ\n"
    "fRQju8TVJM2itwYEuLLYMB8GA1UdIwQYMBaAFCqVfEnZfRQju8TVJM2itwYEuLLY\n"
    "MA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDSAAwRQIgGOWzNhiTlh9RADqs\n"
    "dDfYXLvG8CXsQoopnyhqJq5YQVcCIQDly3rqIAcG/PoKh9yqJwvgf/2DSx8HEphk\n"
    "E8V03DHoHA==\n"
    "-----END CERTIFICATE-----\n";
static const char KEY_B[] =
    "-----BEGIN PRIVATE KEY-----\n"
    "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgoBTd5hVK//fTvsuN\n"
    "VVNB0E1TG0vDEmNW7zlkPe7tnVyhRANCAAQCusbNHy9UdQeEcb2r9UAwdJzRecl9\n"
    "tWHygiCj/10iFWr76PDT7sDU8TOAGM6SSxWrBZfvRPk8IHfF1Ixl66vI\n"
    "-----END PRIVATE KEY-----\n";

struct fx {
    char dir[64];
    char cert_a[128], key_a[128], cert_b[128], key_b[128], chain[128], junk[128];
};

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    fclose(f);
}

static int setup(void **state)
{
    static struct fx f;

    snprintf(f.dir, sizeof f.dir, "/tmp/smqd-test-tls-XXXXXX");
    if (mkdtemp(f.dir) == NULL)
        return -1;
#define PATH(field, name) snprintf(f.field, sizeof f.field, "%s/" name, f.dir)
    PATH(cert_a, "a.pem");
    PATH(key_a, "a.key");
    PATH(cert_b, "b.pem");
    PATH(key_b, "b.key");
    PATH(chain, "chain.pem");
    PATH(junk, "junk.pem");
#undef PATH
    write_file(f.cert_a, CERT_A);
    write_file(f.key_a, KEY_A);
    write_file(f.cert_b, CERT_B);
    write_file(f.key_b, KEY_B);
    {
        char both[sizeof CERT_A + sizeof CERT_B];
        snprintf(both, sizeof both, "%s%s", CERT_A, CERT_B);
        write_file(f.chain, both);   /* a certificate, then an "intermediate" */
    }
    write_file(f.junk, "not a certificate\n");
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;

    scratch_dir_remove(f->dir);
    return 0;
}

static void test_loads_a_pair_and_a_chain(void **state)
{
    struct fx *f = *state;
    struct tls_creds *c = NULL;
    struct tls_cert_view v;
    char err[512] = "";

    assert_int_equal(tls_creds_load(f->cert_a, f->key_a, &c, err, sizeof err), 0);
    tls_creds_current(c, &v);
    assert_int_equal(v.n_pcerts, 1);
    assert_non_null(v.key);
    tls_creds_free(c);
    assert_int_equal(tls_creds_load(f->chain, f->key_a, &c, err, sizeof err), 0);
    tls_creds_current(c, &v);
    assert_int_equal(v.n_pcerts, 2);
    tls_creds_free(c);
}

/* Each bad input names the files and changes nothing. */
static void test_refuses_bad_files(void **state)
{
    struct fx *f = *state;
    struct tls_creds *c = (struct tls_creds *)1;
    char err[512] = "";

    assert_int_equal(tls_creds_load(f->cert_a, f->key_b, &c, err, sizeof err),
                     SMQ_E_INVALID_ARGUMENT);
    assert_null(c);
    assert_non_null(strstr(err, "does not belong to the certificate"));
    assert_non_null(strstr(err, f->cert_a));
    assert_int_equal(tls_creds_load(f->junk, f->key_a, &c, err, sizeof err),
                     SMQ_E_INVALID_ARGUMENT);
    assert_non_null(strstr(err, "no readable PEM certificate"));
    assert_int_equal(tls_creds_load(f->cert_a, f->junk, &c, err, sizeof err),
                     SMQ_E_INVALID_ARGUMENT);
    assert_non_null(strstr(err, "no readable PEM private key"));
    assert_int_equal(tls_creds_load("/nonexistent/x.pem", f->key_a, &c, err, sizeof err),
                     SMQ_E_INVALID_ARGUMENT);
    assert_non_null(strstr(err, "/nonexistent/x.pem"));
}

/* A reload makes the new pair current; a failed one keeps the old. */
static void test_reload_swaps_or_keeps(void **state)
{
    struct fx *f = *state;
    struct tls_creds *c = NULL;
    struct tls_cert_view a, b, after;
    char err[512] = "";

    assert_int_equal(tls_creds_load(f->cert_a, f->key_a, &c, err, sizeof err), 0);
    tls_creds_current(c, &a);
    assert_int_equal(tls_creds_reload(c, f->cert_b, f->key_b, err, sizeof err), 0);
    tls_creds_current(c, &b);
    assert_ptr_not_equal(a.key, b.key);
    assert_int_equal(tls_creds_reload(c, f->cert_b, f->key_a, err, sizeof err),
                     SMQ_E_INVALID_ARGUMENT);
    tls_creds_current(c, &after);
    assert_ptr_equal(after.key, b.key);
    assert_ptr_equal(after.pcerts, b.pcerts);
    tls_creds_free(c);
    tls_creds_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loads_a_pair_and_a_chain),
        cmocka_unit_test(test_refuses_bad_files),
        cmocka_unit_test(test_reload_swaps_or_keeps),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
