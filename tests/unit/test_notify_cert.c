/*
 * test_notify_cert.c — the signing certificate's URL (notify_cert_url,
 * docs/protocol.md §13.11): a configured URL checked (scheme, form, the
 * 450-byte bound of a base64 push header), the default built from the MNS
 * listener's address, and a wildcard listen address refused with a reason.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "smqd/errors.h"
#include "smqd/notify.h"

static int url_of(const char *configured, const char *host, unsigned port, char *out,
                  struct smq_errinfo *ei)
{
    memset(ei, 0, sizeof *ei);
    return notify_cert_url(configured, "http", host, port, out, ei);
}

static void test_cert_url_default(void **state)
{
    char url[NOTIFY_CERT_URL_MAX + 1];
    struct smq_errinfo ei;

    (void)state;
    assert_int_equal(url_of("", "127.0.0.1", 8080, url, &ei), 0);
    assert_string_equal(url, "http://127.0.0.1:8080/smqd/signing-cert.pem");
    assert_int_equal(url_of("", "::1", 8080, url, &ei), 0);
    assert_string_equal(url, "http://[::1]:8080/smqd/signing-cert.pem");
    assert_int_equal(url_of("", "mq.internal", 443, url, &ei), 0);
    assert_string_equal(url, "http://mq.internal:443/smqd/signing-cert.pem");
}

static void test_cert_url_wildcard_refused(void **state)
{
    static const char *const wild[] = {"0.0.0.0", "::", "[::]", ""};
    char url[NOTIFY_CERT_URL_MAX + 1];
    struct smq_errinfo ei;

    (void)state;
    for (size_t i = 0; i < sizeof wild / sizeof wild[0]; i++) {
        assert_int_equal(url_of("", wild[i], 8080, url, &ei), SMQ_E_INVALID_ARGUMENT);
        assert_string_equal(url, "");
        assert_non_null(strstr(ei.msg, "certificate_url"));
    }
    /* A configured URL is what a wildcard listener needs. */
    assert_int_equal(url_of("https://mq.example.com/cert.pem", "0.0.0.0", 8080, url, &ei), 0);
    assert_string_equal(url, "https://mq.example.com/cert.pem");
}

static void test_cert_url_configured_checked(void **state)
{
    static const char *const bad[] = {"ftp://h/c.pem", "mq.example.com/cert.pem",
                                      "http://user@h/c.pem", "http://h/c.pem#x", " http://h/c",
                                      "http://h:99999/c", "acs:mns:r:1:queues/q"};
    char url[NOTIFY_CERT_URL_MAX + 1], longest[NOTIFY_CERT_URL_MAX + 2];
    struct smq_errinfo ei;
    size_t head = strlen("http://h/");

    (void)state;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(url_of(bad[i], "127.0.0.1", 8080, url, &ei), SMQ_E_INVALID_ARGUMENT);
    /* 450 bytes fit (base64: 600, the push header cap); 451 do not. */
    memcpy(longest, "http://h/", head);
    memset(longest + head, 'p', NOTIFY_CERT_URL_MAX - head);
    longest[NOTIFY_CERT_URL_MAX] = '\0';
    assert_int_equal(url_of(longest, "127.0.0.1", 8080, url, &ei), 0);
    assert_string_equal(url, longest);
    longest[NOTIFY_CERT_URL_MAX] = 'p';
    longest[NOTIFY_CERT_URL_MAX + 1] = '\0';
    assert_int_equal(url_of(longest, "127.0.0.1", 8080, url, &ei), SMQ_E_INVALID_ARGUMENT);
    assert_non_null(strstr(ei.msg, "450"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cert_url_default),
        cmocka_unit_test(test_cert_url_wildcard_refused),
        cmocka_unit_test(test_cert_url_configured_checked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
