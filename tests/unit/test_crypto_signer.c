/*
 * test_crypto_signer.c — the push signer of crypto.h (docs/protocol.md
 * §13.11): the signature over §13.11's example string under a committed
 * test key, generate -> load -> check_cert in a scratch directory, and the
 * keys, certificates and buffers it must refuse.  The fixture keys and
 * certificates are committed here as PEM text (as test_tls.c does) and
 * written into the scratch directory by setup.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scratch_dir.h"
#include "signing_test_key.h"
#include "smqd/crypto.h"
#include "smqd/errors.h"

/* KEY and CERT are signing_test_key.h's; the others were made once with
 * OpenSSL 3.0's command line:
 *   openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out ec.pem
 *   openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:1024 -out k1024.pem
 * and CERT_EXPIRED (KEY's public key, valid 2020-01-01 to 2021-01-01) with
 * Python's cryptography package, since `openssl req` cannot backdate. */
static const char CERT_EXPIRED[] =
    "-----BEGIN CERTIFICATE-----\n"
    "MIICxDCCAaygAwIBAgIUQlGlkQf6yFv/W7Rrgez71wKfKMAwDQYJKoZIhvcNAQEL\n"
    "BQAwHDEaMBgGA1UEAwwRc21xZC10ZXN0IGV4cGlyZWQwHhcNMjAwMTAxMDAwMDAw\n"
    "WhcNMjEwMTAxMDAwMDAwWjAcMRowGAYDVQQDDBFzbXFkLXRlc3QgZXhwaXJlZDCC\n"
    "ASIwDQYJKoZIhvcNAQEBBQADggEPADCCAQoCggEBAOIqs3g2CIYkk9fdyV6OfOif\n"
    "0lQTM4rOqvGoWVOuV+//WfNBOjLz+G0WoCgsANw5e9EUs88r3dAXOxegB2aSw40L\n"
    "FEQ3O+cK4dcre79EYwiplgNHGBRf5+m8LCuCNlurYfwtPqp1s6jH1bDaE9s5eLcN\n"
    "/sm84YhCoF+7hSHpkpdQW7n38tsPFsSz/wLny2lZ74aAK/rkRHfKfm0vX5xsJ780\n"
    "G+PFqpq4EtJFNoGl/rX9aLyslyZLgnrfLrVcNxlQsM3FZnORJ9yU5FMd9dCT6T0s\n"
    "kFBn0FhvkGiW9g2uVHo2Pla7O/8ZNSvcSmYCC0J1W1pIugR3fn2WjidFeCQCN7MC\n"
    "AwEAATANBgkqhkiG9w0BAQsFAAOCAQEAJgGgmelNK9mf9oh3SckqiPfBvlQakQL/\n"
    "fEOwt3OPSNq0BhnHjuADZ9BaHWeduDgN5Q5t/k8ZdZNeBnFZwhb4muJle1Z1DtsL\n"
    "nMw59gkl8/7sfMqzbqgtco03IH3fIcO/FIbsrJdy4gsxUQaoodV2x/SOQzxrH1ex\n"
    "hy1HAL14mHwql6vqQhNlwYkaAVsrF96V4NXg51qIksZtytCvmzn5SVCy8aoo5TMg\n"
    "XxiKZvsGjIm8ZjoDPr4Bca8eA1YKUtnyqHxzB4jOoRLMq2AQuTMJxZO+RDQzw003\n"
    "TDpbMgVdFDOdbpwnirb7DydyRCRyqkDyBTAbFnu4vrGLzDvO+Qj3Dg==\n"
    "-----END CERTIFICATE-----\n";
static const char KEY_EC[] =
    "-----BEGIN PRIVATE KEY-----\n"
    "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgnM0DS2H2OJZG8ISb\n"
    "xaJTx01nwINDx7md7qcWawzx/XGhRANCAAT1xA99/kOJ1g4lClUlBm1VnUKQwXNX\n"
    "sGjFk/eV/fIcgbf+fgrO7LwBTEFo3xdBCXR/0wb0bLEM6uRjlenbmRZm\n"
    "-----END PRIVATE KEY-----\n";
static const char KEY_1024[] =
    "-----BEGIN PRIVATE KEY-----\n"
    "MIICdgIBADANBgkqhkiG9w0BAQEFAASCAmAwggJcAgEAAoGBAOLAoAV+nQjkUvz0\n"
    "WxCt8KKvwJxjwg+1q2TQxgh60GScqD/1O1ek1ag1qtZ4Tjrw7rbDbGiFGkNVc4mc\n"
    "WkJOP2rKwtcrawo3wOrbLvXQOZ3hMOGSlsFGASAil2X9umg6kLq/YZZActygBvYV\n"
    "pIdBG06lrVHWL+bq4AV+nPEFbKpBAgMBAAECgYBCwIwbMfvOq1CW8OSCE4Kckfq0\n"
    "z1VIxKVxJ1i1FFqW09tgALR4h6jyPOJPAtmc1mKf4QXf+xcRLW223BViIaDfJElk\n"
    "PAyvTVL/ataVBqMtBT07inRq0tspoM4cORdGCVUbmrGAOK+95JLMuYEUU4xVz3IX\n"
    "dpH3hlLZln9cKxZJNQJBAP2Jz8f2tOYOZQCgDzk6X5YFSXCPs0fGANtTa+sCmHC2\n"
    "6tS++u9nO5itB0vwCVsHfkvsoHDu8wb74ygC+F3AQ1cCQQDk9DwxiYu8RT4HzkMm\n"
    "4lJCEHmodPwyFiy4ag8FtS7GDdCAxfF/JIObZfa+zOwhONs4iqLRO0x/RFKeqpoU\n"
    "l9gnAkBwp4trjnNSxZKbdINPKmDOiArZuQAwJAq9aZPKGJ0jeCNf5HwbZANXE4rq\n"
    "cv21NN8pXTrs8z+JGuMUJD23anaBAkEAmbNMZYUNBcsGJX9WnVf6GNeulGRUmdtB\n"
    "ElxA0XgcemDzxD8eLFh68Wu2BcjUDEl7Aa4wN34zkIxxWor0/TYiqQJAEIqW4QXs\n"
    "HondW7cscX82aX2/qrmYS4cqZjiJZoWqONP3K7jr3WsfGgDiLRdSc44tGOj5RWsa\n"
    "uZfBlQJ++lPOSQ==\n"
    "-----END PRIVATE KEY-----\n";

/* §13.11's example string to sign (the SIMPLIFIED push of `hello world`),
 * without the wrapping the document adds for reading. */
static const char EXAMPLE[] =
    "POST\n"
    "NWViNjNiYmJlMDFlZWVkMDkzY2IyMmJiOGY1YWNkYzM=\n"
    "text/plain;charset=utf-8\n"
    "Tue, 02 Jan 2024 03:04:05 GMT\n"
    "x-mns-message-id:0909FF0D9C3A630C0000000000000007\n"
    "x-mns-message-tag:important\n"
    "x-mns-publish-time:1704164645000\n"
    "x-mns-request-id:5F2A1C9B04D70000000000A3\n"
    "x-mns-signing-cert-url:aHR0cDovLzEyNy4wLjAuMTo4MDgwL3NtcWQvc2lnbmluZy1jZXJ0LnBlbQ==\n"
    "x-mns-subscriber:1000000000000000\n"
    "x-mns-subscription-name:s\n"
    "x-mns-topic-name:t\n"
    "x-mns-topic-owner:1000000000000000\n"
    "x-mns-version:2015-06-06\n"
    "/hook";

/* EXAMPLE signed with KEY by OpenSSL's command line, independently of smqd
 * (PKCS#1 v1.5 is deterministic, so the value is fixed):
 *   printf '%s' "$EXAMPLE" > sts.txt
 *   openssl dgst -sha1 -sign key.pem sts.txt | base64 -w0 */
static const char EXAMPLE_SIG[] =
    "IACubi2XBFttvXcs/+t+rkieAz/M2ycIFCrzSn76hcyILEJhCDa6RcfqVHxuCJGrq6XbEjtiEd7G3nAzk/hVUeBu"
    "BxVzm49XLVSJCcgZbMJvjmaTNaj71o5bIylyc7VZnZxrSakcsRkll1aZWeyxmfYXDIITxer21jHOSY7enUznKnz2"
    "ymMvdjhiNpeYGhGw+IKnkH33SBV9aV7qSwddw3xAJBlRT3aYi4BSejBw1iNik03TE0PVVtaGS+9T1+FIuHOLH+LZ"
    "1RXdAYbEnGbd39p2v364TDpmxl0bWcJNjqShDo9OWmRirlZ4qiB21Cxk4Hk9VAmwZ5Rb/81lp5XJ9g==";

/* PEM armour around what is not base64. */
static const char JUNK[] = "-----BEGIN PRIVATE KEY-----\nnot base64 at all!\n"
                           "-----END PRIVATE KEY-----\n";

struct fx {
    char dir[64];
    char key[128], cert[128], cert_expired[128], key_ec[128], key_1024[128];
    char truncated[128], garbage[128];
};

static void write_file(const char *path, const char *text, size_t len)
{
    FILE *f = fopen(path, "w");

    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

static int setup(void **state)
{
    static struct fx f;

    memset(&f, 0, sizeof f);
    snprintf(f.dir, sizeof f.dir, "/tmp/smqd-test-signer-XXXXXX");
    if (mkdtemp(f.dir) == NULL)
        return -1;
#define PATH(field, name) snprintf(f.field, sizeof f.field, "%s/" name, f.dir)
    PATH(key, "key.pem");
    PATH(cert, "cert.pem");
    PATH(cert_expired, "expired.pem");
    PATH(key_ec, "ec.pem");
    PATH(key_1024, "k1024.pem");
    PATH(truncated, "truncated.pem");
    PATH(garbage, "garbage.pem");
#undef PATH
    write_file(f.key, KEY, strlen(KEY));
    write_file(f.cert, CERT, strlen(CERT));
    write_file(f.cert_expired, CERT_EXPIRED, strlen(CERT_EXPIRED));
    write_file(f.key_ec, KEY_EC, strlen(KEY_EC));
    write_file(f.key_1024, KEY_1024, strlen(KEY_1024));
    write_file(f.truncated, KEY, strlen(KEY) / 2);   /* cut in the middle of the base64 */
    write_file(f.garbage, JUNK, strlen(JUNK));
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;

    scratch_dir_remove(f->dir);
    return 0;
}

static struct crypto_signer *load_ok(const char *path)
{
    struct crypto_signer *k = NULL;
    char err[512] = "";

    assert_int_equal(crypto_signer_load(path, &k, err, sizeof err), 0);
    assert_non_null(k);
    return k;
}

/* crypto_signer_check_cert_pem on the NUL-terminated PEM text. */
static int check_pem(const struct crypto_signer *k, const char *pem, const char *what, char *err,
                     size_t err_size)
{
    return crypto_signer_check_cert_pem(k, pem, strlen(pem), what, err, err_size);
}

/* A load that must fail: no signer, and err says why, naming the file. */
static void load_refused(const char *path, const char *reason)
{
    struct crypto_signer *k = (struct crypto_signer *)&k;   /* not NULL: load must clear it */
    char err[512] = "";

    assert_int_equal(crypto_signer_load(path, &k, err, sizeof err), SMQ_E_INTERNAL);
    assert_null(k);
    assert_non_null(strstr(err, path));
    if (reason != NULL && strstr(err, reason) == NULL)
        fail_msg("err \"%s\" lacks \"%s\"", err, reason);
}

static void test_example_signature(void **state)
{
    struct fx *f = *state;
    struct crypto_signer *k = load_ok(f->key);
    char out[700], err[512] = "";

    assert_int_equal(crypto_signer_sign(k, EXAMPLE, strlen(EXAMPLE), out, sizeof out), 0);
    assert_string_equal(out, EXAMPLE_SIG);
    assert_int_equal(strlen(out), 344);   /* 256 bytes in base64 */
    /* Signing is repeatable on the same signer (no state left behind). */
    assert_int_equal(crypto_signer_sign(k, EXAMPLE, strlen(EXAMPLE), out, sizeof out), 0);
    assert_string_equal(out, EXAMPLE_SIG);
    /* Another string, another signature. */
    assert_int_equal(crypto_signer_sign(k, EXAMPLE, strlen(EXAMPLE) - 1, out, sizeof out), 0);
    assert_string_not_equal(out, EXAMPLE_SIG);
    assert_int_equal(check_pem(k, CERT, "cert.pem", err, sizeof err), 0);
    crypto_signer_free(k);
}

static void test_out_too_small(void **state)
{
    struct fx *f = *state;
    struct crypto_signer *k = load_ok(f->key);
    char out[345];

    memset(out, 'x', sizeof out);
    assert_int_equal(crypto_signer_sign(k, EXAMPLE, strlen(EXAMPLE), out, 344), SMQ_E_INTERNAL);
    assert_int_equal(out[0], '\0');
    assert_int_equal(out[1], 'x');    /* nothing written past the answer "" */
    assert_int_equal(crypto_signer_sign(k, EXAMPLE, strlen(EXAMPLE), out, 0), SMQ_E_INTERNAL);
    assert_int_equal(crypto_signer_sign(k, EXAMPLE, strlen(EXAMPLE), out, sizeof out), 0);
    assert_string_equal(out, EXAMPLE_SIG);
    crypto_signer_free(k);
}

static void test_mismatched_cert(void **state)
{
    struct fx *f = *state;
    struct crypto_signer *k = load_ok(f->key), *g = NULL;
    char err[512] = "", *gen_key = NULL, *gen_cert = NULL;

    assert_int_equal(crypto_signer_generate_pem("smqd test", &gen_key, &gen_cert, err, sizeof err),
                     0);
    /* The committed key against the generated certificate... */
    assert_int_equal(check_pem(k, gen_cert, "gen.pem", err, sizeof err), SMQ_E_INTERNAL);
    assert_non_null(strstr(err, "public key"));
    assert_non_null(strstr(err, "gen.pem"));
    /* ...and the generated key against the committed certificate. */
    assert_int_equal(crypto_signer_load_pem(gen_key, strlen(gen_key), "gen.key", &g, err,
                                            sizeof err), 0);
    err[0] = '\0';
    assert_int_equal(check_pem(g, CERT, "cert.pem", err, sizeof err), SMQ_E_INTERNAL);
    assert_non_null(strstr(err, "public key"));
    crypto_signer_free(g);
    crypto_signer_free(k);
    crypto_pem_free(gen_key);
    free(gen_cert);
}

static void test_bad_certs(void **state)
{
    struct fx *f = *state;
    struct crypto_signer *k = load_ok(f->key);
    char err[512] = "";

    /* The right key, but expired since 2021. */
    assert_int_equal(check_pem(k, CERT_EXPIRED, "expired.pem", err, sizeof err), SMQ_E_INTERNAL);
    assert_non_null(strstr(err, "expired"));
    /* A private key is not a certificate. */
    err[0] = '\0';
    assert_int_equal(check_pem(k, KEY, "key.pem", err, sizeof err), SMQ_E_INTERNAL);
    assert_non_null(strstr(err, "key.pem"));
    err[0] = '\0';
    assert_int_equal(check_pem(k, JUNK, "garbage.pem", err, sizeof err), SMQ_E_INTERNAL);
    assert_non_null(strstr(err, "garbage.pem"));
    /* Nothing at all. */
    err[0] = '\0';
    assert_int_equal(check_pem(k, "", "empty.pem", err, sizeof err), SMQ_E_INTERNAL);
    assert_non_null(strstr(err, "empty.pem"));
    crypto_signer_free(k);
}

/* crypto_signer_cert_file: the file's certificate, checked, comes back as
 * PEM, without what else the file held; a missing file says why; the
 * other refusals are check_pem's. */
static void test_cert_file(void **state)
{
    struct fx *f = *state;
    struct crypto_signer *k = load_ok(f->key);
    char err[512] = "", *pem = NULL, path[160];
    FILE *out;

    snprintf(path, sizeof path, "%s/with-comment.pem", f->dir);
    out = fopen(path, "w");
    assert_non_null(out);
    assert_true(fputs("issued by ops, do not share the key\n", out) >= 0);
    assert_true(fputs(CERT, out) >= 0);
    assert_int_equal(fclose(out), 0);
    assert_int_equal(crypto_signer_cert_file(k, path, &pem, err, sizeof err), 0);
    assert_string_equal(pem, CERT);
    free(pem);
    assert_int_equal(crypto_signer_cert_file(k, f->cert_expired, &pem, err, sizeof err),
                     SMQ_E_INTERNAL);
    assert_null(pem);
    assert_non_null(strstr(err, "expired"));
    assert_int_equal(crypto_signer_cert_file(k, f->key, &pem, err, sizeof err), SMQ_E_INTERNAL);
    assert_non_null(strstr(err, "not a PEM X.509 certificate"));
    snprintf(path, sizeof path, "%s/none.pem", f->dir);
    assert_int_equal(crypto_signer_cert_file(k, path, &pem, err, sizeof err), SMQ_E_INTERNAL);
    assert_non_null(strstr(err, "No such file"));
    assert_non_null(strstr(err, "none.pem"));
    crypto_signer_free(k);
}

static void test_bad_keys(void **state)
{
    struct fx *f = *state;
    char missing[160];

    load_refused(f->key_ec, "not RSA");
    load_refused(f->key_1024, "1024 bits");
    load_refused(f->truncated, NULL);
    load_refused(f->garbage, NULL);
    load_refused(f->cert, NULL);   /* a certificate is not a private key */
    snprintf(missing, sizeof missing, "%s/none.key", f->dir);
    load_refused(missing, "No such file");
}

/* ---- the in-memory forms (a key kept in the store) ---- */

/* The known key and certificate read from PEM in memory sign exactly as
 * the files do, and the pair checks. */
static void test_pem_load_matches_file(void **state)
{
    struct fx *f = *state;
    struct crypto_signer *file = load_ok(f->key), *mem = NULL;
    char a[400], b[400], err[512] = "";

    assert_int_equal(crypto_signer_load_pem(KEY, strlen(KEY), "in memory", &mem, err,
                                            sizeof err), 0);
    assert_non_null(mem);
    assert_int_equal(crypto_signer_sign(file, EXAMPLE, strlen(EXAMPLE), a, sizeof a), 0);
    assert_int_equal(crypto_signer_sign(mem, EXAMPLE, strlen(EXAMPLE), b, sizeof b), 0);
    assert_string_equal(a, b);
    assert_int_equal(crypto_signer_check_cert_pem(mem, CERT, strlen(CERT), "in memory", err,
                                                  sizeof err), 0);
    crypto_signer_free(mem);
    crypto_signer_free(file);
}

/* What the file forms refuse, the memory forms refuse too, naming the
 * source they were given. */
static void test_pem_refusals(void **state)
{
    struct fx *f = *state;
    struct crypto_signer *k = load_ok(f->key), *bad = (struct crypto_signer *)&bad;
    char err[512] = "";

    assert_int_equal(crypto_signer_load_pem(KEY_EC, strlen(KEY_EC), "in the database", &bad,
                                            err, sizeof err), SMQ_E_INTERNAL);
    assert_null(bad);
    assert_non_null(strstr(err, "in the database"));
    assert_non_null(strstr(err, "not RSA"));
    assert_int_equal(crypto_signer_load_pem(KEY, strlen(KEY) / 2, "cut", &bad, err, sizeof err),
                     SMQ_E_INTERNAL);
    assert_null(bad);
    assert_int_equal(crypto_signer_load_pem(CERT, strlen(CERT), "cert", &bad, err, sizeof err),
                     SMQ_E_INTERNAL);
    assert_int_equal(crypto_signer_check_cert_pem(k, CERT_EXPIRED, strlen(CERT_EXPIRED), "old",
                                                  err, sizeof err), SMQ_E_INTERNAL);
    assert_non_null(strstr(err, "old"));
    assert_non_null(strstr(err, "expired"));
    assert_int_equal(crypto_signer_check_cert_pem(k, KEY, strlen(KEY), "key", err, sizeof err),
                     SMQ_E_INTERNAL);
    assert_non_null(strstr(err, "not a PEM X.509 certificate"));
    assert_int_equal(crypto_signer_check_cert_pem(k, "", 0, "empty", err, sizeof err),
                     SMQ_E_INTERNAL);
    crypto_signer_free(k);
}

/* A generated pair is PEM text, loads back, matches, signs; a second one
 * is another key, so the first pair's certificate does not hold it. */
static void test_pem_generate_round_trip(void **state)
{
    struct fx *f = *state;
    struct crypto_signer *k = NULL, *known = load_ok(f->key);
    char *key = NULL, *cert = NULL, *key2 = NULL, *cert2 = NULL, out[400], err[512] = "";

    assert_int_equal(crypto_signer_generate_pem("smqd test", &key, &cert, err, sizeof err), 0);
    assert_non_null(strstr(key, "-----BEGIN PRIVATE KEY-----"));
    assert_non_null(strstr(cert, "-----BEGIN CERTIFICATE-----"));
    assert_int_equal(crypto_signer_load_pem(key, strlen(key), "generated", &k, err, sizeof err),
                     0);
    assert_int_equal(crypto_signer_check_cert_pem(k, cert, strlen(cert), "generated", err,
                                                  sizeof err), 0);
    assert_int_equal(crypto_signer_sign(k, EXAMPLE, strlen(EXAMPLE), out, sizeof out), 0);
    assert_int_equal(strlen(out), 344);
    assert_int_equal(crypto_signer_check_cert_pem(known, cert, strlen(cert), "generated", err,
                                                  sizeof err), SMQ_E_INTERNAL);
    assert_int_equal(crypto_signer_generate_pem("smqd test", &key2, &cert2, err, sizeof err), 0);
    assert_string_not_equal(key, key2);
    assert_int_equal(crypto_signer_check_cert_pem(k, cert2, strlen(cert2), "second", err,
                                                  sizeof err), SMQ_E_INTERNAL);
    assert_non_null(strstr(err, "does not hold"));
    crypto_signer_free(k);
    crypto_signer_free(known);
    crypto_pem_free(key);
    crypto_pem_free(key2);
    free(cert);
    free(cert2);
    crypto_pem_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_example_signature, setup, teardown),
        cmocka_unit_test_setup_teardown(test_out_too_small, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mismatched_cert, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_certs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cert_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_keys, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pem_load_matches_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pem_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pem_generate_round_trip, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
