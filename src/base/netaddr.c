/*
 * netaddr.c — owns turning a configured listen address into a socket
 * address, for both listeners, and a socket's address back into text
 * (netaddr.h).
 */
#include "smqd/netaddr.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "smqd/errors.h"

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
    return SMQ_E_INVALID_ARGUMENT;
}

int netaddr_local(int fd, char *out, size_t size)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    const struct sockaddr_in *in4 = (const struct sockaddr_in *)&ss;
    const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&ss;
    char host[INET6_ADDRSTRLEN];
    int n = -1;

    if (fd < 0 || getsockname(fd, (struct sockaddr *)&ss, &len) != 0)
        return SMQ_E_INVALID_ARGUMENT;
    if (ss.ss_family == AF_INET && inet_ntop(AF_INET, &in4->sin_addr, host, sizeof host))
        n = snprintf(out, size, "%s:%u", host, (unsigned)ntohs(in4->sin_port));
    else if (ss.ss_family == AF_INET6 && inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host))
        n = snprintf(out, size, "[%s]:%u", host, (unsigned)ntohs(in6->sin6_port));
    return n > 0 && (size_t)n < size ? 0 : SMQ_E_INVALID_ARGUMENT;
}
