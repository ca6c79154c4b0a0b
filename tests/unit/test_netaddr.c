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

    close(pair[0]);
    close(pair[1]);
    close(afd);
    close(cfd);
    close(lfd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_netaddr_make),
        cmocka_unit_test(test_netaddr_local),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
