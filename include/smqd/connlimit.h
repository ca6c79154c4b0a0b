/*
 * connlimit.h — the two caps on a listener's open connections: all of them
 * ([limits] max_connections) and those from one address
 * (max_connections_per_ip), from which connections of a trusted proxy
 * ([server] trusted_proxies) are exempt: every client behind a proxy
 * shares its address, so a per-address cap on it would be a cap on all of
 * them.  Thread-safe; httpd.c asks it once per accepted connection and
 * tells it when an admitted one closes.
 */
#ifndef SMQD_CONNLIMIT_H
#define SMQD_CONNLIMIT_H

#include <stdbool.h>
#include <stdint.h>

#include "smqd/netaddr.h"

enum connlimit_verdict {
    CONNLIMIT_ADMITTED = 0,
    CONNLIMIT_OVER_TOTAL,        /* max_connections are open */
    CONNLIMIT_OVER_PER_IP        /* max_connections_per_ip are open from this address */
};

struct connlimit;

/* max_per_ip 0 = no per-address cap; trusted is copied (NULL = none).
 * NULL when out of memory. */
struct connlimit *connlimit_new(int max_total, int max_per_ip, const struct netaddr_trust *trusted);
void connlimit_free(struct connlimit *c);

/* A new connection from peer: admitted (and counted until connlimit_leave)
 * or refused by one of the caps (and not counted).  *per_ip tells whether
 * it was counted against its address too (not for a trusted proxy). */
enum connlimit_verdict connlimit_admit(struct connlimit *c, const struct netaddr_ip *peer,
                                       bool *per_ip);
/* An admitted connection closed; per_ip as connlimit_admit set it. */
void connlimit_leave(struct connlimit *c, const struct netaddr_ip *peer, bool per_ip);
/* Connections admitted and open now: in all, and from peer. */
int connlimit_open(struct connlimit *c, const struct netaddr_ip *peer, int *from_peer);
/* Whether peer is one of the trusted proxies. */
bool connlimit_trusted(const struct connlimit *c, const struct netaddr_ip *peer);

#endif
