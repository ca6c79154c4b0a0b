/*
 * netaddr.h — the listen address of a listener (MNS or admin) as a socket
 * address, and a socket address as the HOST:PORT text URLs carry.
 * config.c accepts IP literals and "localhost" only, so no name is ever
 * resolved.
 */
#ifndef SMQD_NETADDR_H
#define SMQD_NETADDR_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

/* Fills ss for host:port; *ipv6 tells the family.  0, or
 * SMQ_E_INVALID_ARGUMENT when host is neither an IPv4/IPv6 literal nor
 * "localhost" (127.0.0.1). */
int netaddr_make(const char *host, uint16_t port, struct sockaddr_storage *ss, bool *ipv6);

/* The local address of socket fd as "A.B.C.D:PORT" or "[V6]:PORT" in out.
 * 0, or SMQ_E_INVALID_ARGUMENT (not a connected IPv4/IPv6 socket, or out
 * too small). */
int netaddr_local(int fd, char *out, size_t size);

#endif
