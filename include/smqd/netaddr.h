/*
 * netaddr.h — IP addresses as smqd meets them: the listen address of a
 * listener (MNS or admin) as a socket address, a socket address as the
 * HOST:PORT text URLs carry, a client's address, the ranges of trusted
 * proxies ([server] trusted_proxies) and the client address a request
 * names in X-Forwarded-For when it came through one of them.
 * config.c accepts IP literals and "localhost" only, so no name is ever
 * resolved.
 */
#ifndef SMQD_NETADDR_H
#define SMQD_NETADDR_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/socket.h>

#include "smqd/http_header.h"

/* Long enough for any address netaddr_ip_text writes, with its NUL. */
#define NETADDR_TEXT_MAX 46
/* Entries of [server] trusted_proxies at most. */
#define NETADDR_TRUST_MAX 32

/* Fills ss for host:port; *ipv6 tells the family.  0, or
 * SMQ_E_INVALID_ARGUMENT when host is neither an IPv4/IPv6 literal nor
 * "localhost" (127.0.0.1). */
int netaddr_make(const char *host, uint16_t port, struct sockaddr_storage *ss, bool *ipv6);

/* The local address of socket fd as "A.B.C.D:PORT" or "[V6]:PORT" in out.
 * 0, or SMQ_E_INVALID_ARGUMENT (not a connected IPv4/IPv6 socket, or out
 * too small). */
int netaddr_local(int fd, char *out, size_t size);

/*
 * One IP address, IPv4 kept as its IPv4-mapped IPv6 form (::ffff:a.b.c.d):
 * a dual-stack listener sees IPv4 peers that way, and one form lets one
 * comparison serve both families.
 */
struct netaddr_ip {
    uint8_t b[16];
};

/* An address and how many leading bits of it a range fixes (0..128, on the
 * mapped form: an IPv4 /24 is 96 + 24). */
struct netaddr_range {
    struct netaddr_ip ip;
    unsigned bits;
};

/* The trusted proxies: n ranges, none when n == 0. */
struct netaddr_trust {
    size_t n;
    struct netaddr_range r[NETADDR_TRUST_MAX];
};

/* An IPv4 or IPv6 literal of len bytes (no brackets, no port).  0, or
 * SMQ_E_INVALID_ARGUMENT. */
int netaddr_ip_parse(const char *text, size_t len, struct netaddr_ip *out);
/* The address of an AF_INET or AF_INET6 socket address.  0, or
 * SMQ_E_INVALID_ARGUMENT for any other family. */
int netaddr_ip_of(const struct sockaddr *sa, struct netaddr_ip *out);
/* The peer address of connected socket fd.  0, or SMQ_E_INVALID_ARGUMENT. */
int netaddr_peer(int fd, struct netaddr_ip *out);
/* As text: dotted IPv4 for a mapped address, else IPv6. */
void netaddr_ip_text(const struct netaddr_ip *ip, char out[NETADDR_TEXT_MAX]);
bool netaddr_ip_equal(const struct netaddr_ip *a, const struct netaddr_ip *b);

/* "ADDR" or "ADDR/BITS" (IPv4 0..32, IPv6 0..128); a single address is a
 * range of one.  Bits set beyond the prefix are refused: 10.0.0.1/8 is
 * more likely a typo than a wish.  0, or SMQ_E_INVALID_ARGUMENT. */
int netaddr_range_parse(const char *text, size_t len, struct netaddr_range *out);
bool netaddr_range_has(const struct netaddr_range *r, const struct netaddr_ip *ip);

/* A list of ranges separated by commas and/or blanks into t (empty = none).
 * 0, or SMQ_E_INVALID_ARGUMENT with the offending entry (or "too many
 * entries") in bad. */
int netaddr_trust_parse(const char *list, struct netaddr_trust *t, char *bad, size_t bad_size);
bool netaddr_trusted(const struct netaddr_trust *t, const struct netaddr_ip *ip);

/*
 * The client of a request that arrived from peer with headers h[0..n).
 * From a peer that is not trusted this is the peer, whatever the headers
 * say: anyone can write X-Forwarded-For.  From a trusted proxy it is the
 * rightmost X-Forwarded-For address (over every such header, in order)
 * that is not itself a trusted proxy: each trusted hop appended the
 * address it saw, and the first untrusted one is where an address could
 * have been forged, so nothing left of it is believed.  An entry that is
 * not an address ends the walk at the last address believed; a request
 * without the header (a proxy's own health check) is the peer's.  Returns
 * whether the client came through a proxy (differs from the peer).
 */
bool netaddr_forwarded_client(const struct netaddr_trust *t, const struct netaddr_ip *peer,
                              const struct http_header *h, size_t n,
                              struct netaddr_ip *client);

#endif
