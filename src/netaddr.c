/*
 * netaddr.c — owns turning a configured listen address into a socket
 * address, for both listeners (netaddr.h).
 */
#include "smqd/netaddr.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

int netaddr_make(const char *host, uint16_t port, struct sockaddr_storage *ss, bool *ipv6)
{
    struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

    memset(ss, 0, sizeof *ss);
    *ipv6 = false;
    if (strcmp(host, "localhost") == 0)
        host = "127.0.0.1";
    if (inet_pton(AF_INET, host, &in4->sin_addr) == 1) {
        in4->sin_family = AF_INET;
        in4->sin_port = htons(port);
        return 0;
    }
    if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons(port);
        *ipv6 = true;
        return 0;
    }
    return -1;
}
