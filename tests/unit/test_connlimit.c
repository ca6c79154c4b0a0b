/*
 * test_connlimit.c — unit tests for connlimit.c: the cap on all
 * connections, the cap per address, the exemption of trusted proxies from
 * the latter (not the former), and counts that go back down on close.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "smqd/connlimit.h"

static struct netaddr_ip ip_of(const char *text)
{
    struct netaddr_ip ip;

    assert_int_equal(netaddr_ip_parse(text, strlen(text), &ip), 0);
    return ip;
}

static void test_connlimit_per_ip(void **state)
{
    struct connlimit *c = connlimit_new(10, 2, NULL);
    struct netaddr_ip a = ip_of("127.0.0.2"), b = ip_of("::1");
    bool per_ip;
    int from;

    (void)state;
    assert_non_null(c);
    assert_int_equal(connlimit_admit(c, &a, &per_ip), CONNLIMIT_ADMITTED);
    assert_true(per_ip);
    assert_int_equal(connlimit_admit(c, &a, &per_ip), CONNLIMIT_ADMITTED);
    assert_int_equal(connlimit_admit(c, &a, &per_ip), CONNLIMIT_OVER_PER_IP);
    assert_false(per_ip);
    /* Another address has its own count. */
    assert_int_equal(connlimit_admit(c, &b, &per_ip), CONNLIMIT_ADMITTED);
    assert_int_equal(connlimit_open(c, &a, &from), 3);
    assert_int_equal(from, 2);
    /* One closes: the next is admitted. */
    connlimit_leave(c, &a, true);
    assert_int_equal(connlimit_admit(c, &a, &per_ip), CONNLIMIT_ADMITTED);
    connlimit_leave(c, &a, true);
    connlimit_leave(c, &a, true);
    connlimit_leave(c, &b, true);
    assert_int_equal(connlimit_open(c, &a, &from), 0);
    assert_int_equal(from, 0);
    connlimit_free(c);
}

static void test_connlimit_total(void **state)
{
    struct connlimit *c = connlimit_new(3, 0, NULL);   /* no per-address cap */
    struct netaddr_ip a = ip_of("10.0.0.1");
    bool per_ip;
    int from;

    (void)state;
    for (int i = 0; i < 3; i++) {
        assert_int_equal(connlimit_admit(c, &a, &per_ip), CONNLIMIT_ADMITTED);
        assert_false(per_ip);
    }
    assert_int_equal(connlimit_admit(c, &a, &per_ip), CONNLIMIT_OVER_TOTAL);
    assert_int_equal(connlimit_open(c, &a, &from), 3);
    connlimit_leave(c, &a, false);
    assert_int_equal(connlimit_admit(c, &a, &per_ip), CONNLIMIT_ADMITTED);
    connlimit_free(c);
}

/* A trusted proxy carries every client behind it: it is not held to the
 * per-address cap, only to the total one. */
static void test_connlimit_trusted_proxy(void **state)
{
    struct netaddr_trust t;
    char bad[80];
    struct connlimit *c;
    struct netaddr_ip proxy = ip_of("127.0.0.1"), other = ip_of("127.0.0.2");
    bool per_ip;
    int from;

    (void)state;
    assert_int_equal(netaddr_trust_parse("127.0.0.1/32", &t, bad, sizeof bad), 0);
    c = connlimit_new(5, 1, &t);
    assert_true(connlimit_trusted(c, &proxy));
    assert_false(connlimit_trusted(c, &other));
    for (int i = 0; i < 4; i++) {
        assert_int_equal(connlimit_admit(c, &proxy, &per_ip), CONNLIMIT_ADMITTED);
        assert_false(per_ip);
    }
    assert_int_equal(connlimit_admit(c, &other, &per_ip), CONNLIMIT_ADMITTED);
    assert_int_equal(connlimit_admit(c, &other, &per_ip), CONNLIMIT_OVER_TOTAL);
    assert_int_equal(connlimit_admit(c, &proxy, &per_ip), CONNLIMIT_OVER_TOTAL);
    assert_int_equal(connlimit_open(c, &proxy, &from), 5);
    assert_int_equal(from, 0);                 /* not counted per address */
    connlimit_leave(c, &other, true);
    assert_int_equal(connlimit_admit(c, &other, &per_ip), CONNLIMIT_ADMITTED);
    assert_int_equal(connlimit_admit(c, &other, &per_ip), CONNLIMIT_OVER_TOTAL);
    connlimit_leave(c, &proxy, false);
    assert_int_equal(connlimit_admit(c, &other, &per_ip), CONNLIMIT_OVER_PER_IP);
    connlimit_free(c);
}

/* Many addresses, some sharing a bucket: each keeps its own count and
 * entries go away when their last connection closes. */
static void test_connlimit_many_addresses(void **state)
{
    struct connlimit *c = connlimit_new(100000, 1, NULL);
    struct netaddr_ip ip = ip_of("2001:db8::");
    bool per_ip;
    int from;

    (void)state;
    for (int i = 0; i < 20000; i++) {
        ip.b[14] = (uint8_t)(i >> 8);
        ip.b[15] = (uint8_t)i;
        assert_int_equal(connlimit_admit(c, &ip, &per_ip), CONNLIMIT_ADMITTED);
        assert_int_equal(connlimit_admit(c, &ip, &per_ip), CONNLIMIT_OVER_PER_IP);
    }
    for (int i = 0; i < 20000; i += 2) {
        ip.b[14] = (uint8_t)(i >> 8);
        ip.b[15] = (uint8_t)i;
        connlimit_leave(c, &ip, true);
    }
    assert_int_equal(connlimit_open(c, &ip, &from), 10000);
    ip.b[15] = 0;
    ip.b[14] = 0;
    assert_int_equal(connlimit_open(c, &ip, &from), 10000);
    assert_int_equal(from, 0);
    ip.b[15] = 1;
    assert_int_equal(connlimit_open(c, &ip, &from), 10000);
    assert_int_equal(from, 1);
    connlimit_free(c);                         /* frees what is still counted */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_connlimit_per_ip),
        cmocka_unit_test(test_connlimit_total),
        cmocka_unit_test(test_connlimit_trusted_proxy),
        cmocka_unit_test(test_connlimit_many_addresses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
