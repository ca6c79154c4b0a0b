/*
 * test_netaddr.c — unit tests for netaddr.c: configured listen addresses
 * into socket addresses, and a connected socket's local address back into
 * the HOST:PORT text that URLs carry (used when a request has no Host).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "smqd/errors.h"
#include "smqd/netaddr.h"

static void test_netaddr_make(void **state)
{
    struct sockaddr_storage ss;
    bool v6;

    (void)state;
    assert_int_equal(netaddr_make("127.0.0.1", 8080, &ss, &v6), 0);
    assert_false(v6);
    assert_int_equal(ntohs(((struct sockaddr_in *)&ss)->sin_port), 8080);
    assert_int_equal(netaddr_make("localhost", 1, &ss, &v6), 0);
    assert_false(v6);
    assert_int_equal(((struct sockaddr_in *)&ss)->sin_addr.s_addr, htonl(INADDR_LOOPBACK));
    assert_int_equal(netaddr_make("::1", 9, &ss, &v6), 0);
    assert_true(v6);
    assert_int_equal(netaddr_make("example.org", 80, &ss, &v6), SMQ_E_INVALID_ARGUMENT);
}

/* A loopback TCP connection: the accepted side's local address is the
 * listener's; an unconnected or non-IP descriptor is refused. */
static void test_netaddr_local(void **state)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof sa;
    int lfd, cfd, afd, pair[2];
    char want[32], out[64], tiny[8];

    (void)state;
    lfd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(lfd >= 0);
    assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(lfd, 1), 0);
    assert_int_equal(getsockname(lfd, (struct sockaddr *)&sa, &len), 0);
    cfd = socket(AF_INET, SOCK_STREAM, 0);
    assert_int_equal(connect(cfd, (struct sockaddr *)&sa, sizeof sa), 0);
    afd = accept(lfd, NULL, NULL);
    assert_true(afd >= 0);

    snprintf(want, sizeof want, "127.0.0.1:%u", (unsigned)ntohs(sa.sin_port));
    assert_int_equal(netaddr_local(afd, out, sizeof out), 0);
    assert_string_equal(out, want);
    assert_int_equal(netaddr_local(afd, tiny, sizeof tiny), SMQ_E_INVALID_ARGUMENT);    /* does not fit */
    assert_int_equal(netaddr_local(-1, out, sizeof out), SMQ_E_INVALID_ARGUMENT);
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
    assert_int_equal(netaddr_local(pair[0], out, sizeof out), SMQ_E_INVALID_ARGUMENT);  /* not IPv4/IPv6 */
    {
        struct netaddr_ip peer;
        char text[NETADDR_TEXT_MAX];

        assert_int_equal(netaddr_peer(afd, &peer), 0);
        netaddr_ip_text(&peer, text);
        assert_string_equal(text, "127.0.0.1");
        assert_int_equal(netaddr_peer(lfd, &peer), SMQ_E_INVALID_ARGUMENT);    /* not connected */
        assert_int_equal(netaddr_peer(pair[0], &peer), SMQ_E_INVALID_ARGUMENT);
        assert_int_equal(netaddr_peer(-1, &peer), SMQ_E_INVALID_ARGUMENT);
    }

    close(pair[0]);
    close(pair[1]);
    close(afd);
    close(cfd);
    close(lfd);
}

static struct netaddr_ip ip_of(const char *text)
{
    struct netaddr_ip ip;

    assert_int_equal(netaddr_ip_parse(text, strlen(text), &ip), 0);
    return ip;
}

static void test_netaddr_ip_forms(void **state)
{
    struct sockaddr_in in4 = {.sin_family = AF_INET};
    struct sockaddr_in6 in6 = {.sin6_family = AF_INET6};
    struct sockaddr sa_unix = {.sa_family = AF_UNIX};
    struct netaddr_ip a, b;
    char text[NETADDR_TEXT_MAX];

    (void)state;
    a = ip_of("192.0.2.7");
    netaddr_ip_text(&a, text);
    assert_string_equal(text, "192.0.2.7");
    /* A dual-stack listener's IPv4 peer is the same address. */
    b = ip_of("::ffff:192.0.2.7");
    assert_true(netaddr_ip_equal(&a, &b));
    a = ip_of("2001:db8::1");
    netaddr_ip_text(&a, text);
    assert_string_equal(text, "2001:db8::1");
    assert_int_equal(netaddr_ip_parse("example.org", 11, &a), SMQ_E_INVALID_ARGUMENT);
    assert_int_equal(netaddr_ip_parse("192.0.2.7:80", 12, &a), SMQ_E_INVALID_ARGUMENT);
    assert_int_equal(netaddr_ip_parse("[::1]", 5, &a), SMQ_E_INVALID_ARGUMENT);
    assert_int_equal(netaddr_ip_parse("", 0, &a), SMQ_E_INVALID_ARGUMENT);
    /* Only len bytes are read. */
    assert_int_equal(netaddr_ip_parse("10.0.0.1,10.0.0.2", 8, &a), 0);
    netaddr_ip_text(&a, text);
    assert_string_equal(text, "10.0.0.1");

    inet_pton(AF_INET, "127.0.0.2", &in4.sin_addr);
    assert_int_equal(netaddr_ip_of((struct sockaddr *)&in4, &a), 0);
    netaddr_ip_text(&a, text);
    assert_string_equal(text, "127.0.0.2");
    inet_pton(AF_INET6, "::1", &in6.sin6_addr);
    assert_int_equal(netaddr_ip_of((struct sockaddr *)&in6, &a), 0);
    netaddr_ip_text(&a, text);
    assert_string_equal(text, "::1");
    assert_int_equal(netaddr_ip_of(&sa_unix, &a), SMQ_E_INVALID_ARGUMENT);
    assert_int_equal(netaddr_ip_of(NULL, &a), SMQ_E_INVALID_ARGUMENT);
}

static bool in_range(const char *range, const char *ip)
{
    struct netaddr_range r;
    struct netaddr_ip a = ip_of(ip);

    assert_int_equal(netaddr_range_parse(range, strlen(range), &r), 0);
    return netaddr_range_has(&r, &a);
}

static void test_netaddr_ranges(void **state)
{
    static const char *const bad[] = {
        "10.0.0.0/33", "::/129", "10.0.0.0/", "10.0.0.0/x", "10.0.0.0/-1", "10.0.0.1/8",
        "2001:db8::1/32", "fd00::/7", "/8", "10.0.0.0/8/8", "10.0.0.0/ 8", "10.0.0.0/+8",
    };
    struct netaddr_range r;

    (void)state;
    assert_true(in_range("10.0.0.0/8", "10.255.1.2"));
    assert_false(in_range("10.0.0.0/8", "11.0.0.1"));
    assert_true(in_range("192.168.4.0/22", "192.168.7.255"));
    assert_false(in_range("192.168.4.0/22", "192.168.8.0"));
    assert_true(in_range("127.0.0.1", "127.0.0.1"));
    assert_false(in_range("127.0.0.1", "127.0.0.2"));
    assert_true(in_range("127.0.0.1/32", "127.0.0.1"));
    assert_true(in_range("10.0.0.0/08", "10.0.0.1"));     /* strnum.h: leading zeros */
    assert_true(in_range("0.0.0.0/0", "203.0.113.9"));
    assert_false(in_range("0.0.0.0/0", "2001:db8::1"));   /* every IPv4, no IPv6 */
    assert_true(in_range("2001:db8::/32", "2001:db8:ffff::1"));
    assert_false(in_range("2001:db8::/32", "2001:db9::1"));
    assert_true(in_range("fc00::/7", "fdff::1"));
    assert_false(in_range("fd00::/8", "fcff::1"));
    assert_true(in_range("::1", "::1"));
    assert_false(in_range("::1", "127.0.0.1"));
    assert_true(in_range("::ffff:10.0.0.0/104", "10.1.2.3"));  /* mapped, as IPv6 */
    assert_true(in_range("::/0", "10.1.2.3"));
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (netaddr_range_parse(bad[i], strlen(bad[i]), &r) == 0)
            fail_msg("range \"%s\" was accepted", bad[i]);
}

static void test_netaddr_trust_list(void **state)
{
    struct netaddr_trust t;
    struct netaddr_ip a;
    char bad[80];

    (void)state;
    assert_int_equal(netaddr_trust_parse("", &t, bad, sizeof bad), 0);
    assert_int_equal(t.n, 0);
    a = ip_of("127.0.0.1");
    assert_false(netaddr_trusted(&t, &a));
    assert_false(netaddr_trusted(NULL, &a));
    assert_int_equal(netaddr_trust_parse(" 127.0.0.1, 10.0.0.0/8 ,fd00::/8\t::1 ", &t, bad,
                                         sizeof bad), 0);
    assert_int_equal(t.n, 4);
    assert_true(netaddr_trusted(&t, &a));
    a = ip_of("10.9.9.9");
    assert_true(netaddr_trusted(&t, &a));
    a = ip_of("fd12::5");
    assert_true(netaddr_trusted(&t, &a));
    a = ip_of("127.0.0.2");
    assert_false(netaddr_trusted(&t, &a));
    assert_int_equal(netaddr_trust_parse("127.0.0.1, proxy.example, ::1", &t, bad, sizeof bad),
                     SMQ_E_INVALID_ARGUMENT);
    assert_string_equal(bad, "proxy.example");
    {
        char many[40 * 12] = "";
        for (int i = 0; i <= NETADDR_TRUST_MAX; i++)
            snprintf(many + strlen(many), sizeof many - strlen(many), "10.0.0.%d ", i);
        assert_int_equal(netaddr_trust_parse(many, &t, bad, sizeof bad), SMQ_E_INVALID_ARGUMENT);
        assert_non_null(strstr(bad, "more than"));
    }
}

/* The client a request names, given its peer and its X-Forwarded-For lines. */
static const char *client_of(const char *peer, const struct http_header *h, size_t n,
                             bool *via)
{
    static char text[NETADDR_TEXT_MAX];
    struct netaddr_trust t;
    struct netaddr_ip p = ip_of(peer), c;
    char bad[80];

    assert_int_equal(netaddr_trust_parse("127.0.0.1 10.0.0.0/8 fd00::/8", &t, bad, sizeof bad),
                     0);
    *via = netaddr_forwarded_client(&t, &p, h, n, &c);
    netaddr_ip_text(&c, text);
    return text;
}

static void test_netaddr_forwarded_client(void **state)
{
    struct http_header one[] = {{"Host", "q"}, {"X-Forwarded-For", "127.0.0.2"}};
    struct http_header chain[] = {{"x-forwarded-for", "203.0.113.5, 198.51.100.1, 10.1.1.1"}};
    struct http_header forged[] = {{"X-Forwarded-For", "1.2.3.4"},
                                   {"X-Forwarded-For", "192.0.2.9"}};
    struct http_header all_trusted[] = {{"X-Forwarded-For", "10.0.0.7,10.0.0.8"}};
    struct http_header garbage[] = {{"X-Forwarded-For", "1.2.3.4, unknown, 10.0.0.9"}};
    struct http_header blanks[] = {{"X-Forwarded-For", " , 192.0.2.1 ,, "}};
    struct http_header v6[] = {{"X-Forwarded-For", "2001:db8::7"}};
    struct http_header none[] = {{"Host", "q"}};
    bool via;

    (void)state;
    /* From the trusted proxy: the address it appended. */
    assert_string_equal(client_of("127.0.0.1", one, 2, &via), "127.0.0.2");
    assert_true(via);
    /* From anyone else: the header is not believed. */
    assert_string_equal(client_of("127.0.0.2", one, 2, &via), "127.0.0.2");
    assert_false(via);
    assert_string_equal(client_of("192.0.2.50", forged, 2, &via), "192.0.2.50");
    assert_false(via);
    /* Through two proxies: the rightmost untrusted one; what it was told
     * (203.0.113.5) could be forged. */
    assert_string_equal(client_of("10.2.2.2", chain, 1, &via), "198.51.100.1");
    assert_true(via);
    /* A client's own X-Forwarded-For line comes first; the proxy's last. */
    assert_string_equal(client_of("127.0.0.1", forged, 2, &via), "192.0.2.9");
    /* Every hop trusted: the leftmost. */
    assert_string_equal(client_of("10.0.0.1", all_trusted, 1, &via), "10.0.0.7");
    /* Not an address: the walk stops at the last address believed. */
    assert_string_equal(client_of("10.0.0.1", garbage, 1, &via), "10.0.0.9");
    assert_string_equal(client_of("10.0.0.1", blanks, 1, &via), "192.0.2.1");
    assert_string_equal(client_of("fd00::1", v6, 1, &via), "2001:db8::7");
    /* A proxy's own request (a health check). */
    assert_string_equal(client_of("127.0.0.1", none, 1, &via), "127.0.0.1");
    assert_false(via);
    assert_string_equal(client_of("127.0.0.1", NULL, 0, &via), "127.0.0.1");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_netaddr_make),
        cmocka_unit_test(test_netaddr_local),
        cmocka_unit_test(test_netaddr_ip_forms),
        cmocka_unit_test(test_netaddr_ranges),
        cmocka_unit_test(test_netaddr_trust_list),
        cmocka_unit_test(test_netaddr_forwarded_client),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
