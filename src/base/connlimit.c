/*
 * connlimit.c — owns the count of a listener's open connections, in all
 * and per client address, and the decision to admit a new one (connlimit.h).
 * One mutex: a connection is admitted once, at accept, which costs far more
 * than the lock.
 */
#include "smqd/connlimit.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Buckets of the per-address table; the addresses in it are at most the
 * connections open, so chains stay short at any sensible max_connections. */
#define CONNLIMIT_BUCKETS 4096

struct per_ip {
    struct per_ip *next;
    struct netaddr_ip ip;
    int n;
};

struct connlimit {
    int max_total, max_per_ip;
    struct netaddr_trust trusted;
    pthread_mutex_t lock;        /* guards total and the table */
    int total;
    struct per_ip *bucket[CONNLIMIT_BUCKETS];
};

struct connlimit *connlimit_new(int max_total, int max_per_ip, const struct netaddr_trust *trusted)
{
    struct connlimit *c = calloc(1, sizeof *c);

    if (c == NULL)
        return NULL;
    if (pthread_mutex_init(&c->lock, NULL) != 0) {
        free(c);
        return NULL;
    }
    c->max_total = max_total;
    c->max_per_ip = max_per_ip;
    if (trusted != NULL)
        c->trusted = *trusted;
    return c;
}

void connlimit_free(struct connlimit *c)
{
    if (c == NULL)
        return;
    for (size_t i = 0; i < CONNLIMIT_BUCKETS; i++) {
        while (c->bucket[i] != NULL) {
            struct per_ip *e = c->bucket[i];
            c->bucket[i] = e->next;
            free(e);
        }
    }
    pthread_mutex_destroy(&c->lock);
    free(c);
}

/* FNV-1a over the address: clients are not chosen to collide here, and
 * a long chain only slows accepts down, it never admits too many. */
static size_t bucket_of(const struct netaddr_ip *ip)
{
    uint32_t h = 2166136261u;

    for (size_t i = 0; i < sizeof ip->b; i++)
        h = (h ^ ip->b[i]) * 16777619u;
    return h % CONNLIMIT_BUCKETS;
}

/* The entry of ip, or NULL; *link where it is (or would be) linked. */
static struct per_ip *find(struct connlimit *c, const struct netaddr_ip *ip,
                           struct per_ip ***link)
{
    struct per_ip **p = &c->bucket[bucket_of(ip)];

    while (*p != NULL && !netaddr_ip_equal(&(*p)->ip, ip))
        p = &(*p)->next;
    *link = p;
    return *p;
}

bool connlimit_trusted(const struct connlimit *c, const struct netaddr_ip *peer)
{
    return netaddr_trusted(&c->trusted, peer);
}

/*
 * A connection the table has no memory for is refused as over its
 * address's cap: admitting it uncounted would let that address exceed the
 * cap, and at the moment of accepting a refusal is all smqd can answer.
 */
enum connlimit_verdict connlimit_admit(struct connlimit *c, const struct netaddr_ip *peer,
                                       bool *per_ip)
{
    enum connlimit_verdict v = CONNLIMIT_ADMITTED;
    struct per_ip **link, *e;

    *per_ip = c->max_per_ip > 0 && !connlimit_trusted(c, peer);
    pthread_mutex_lock(&c->lock);
    if (c->total >= c->max_total) {
        v = CONNLIMIT_OVER_TOTAL;
    } else if (*per_ip) {
        e = find(c, peer, &link);
        if (e == NULL && (e = calloc(1, sizeof *e)) != NULL) {
            e->ip = *peer;
            *link = e;
        }
        if (e == NULL || e->n >= c->max_per_ip)
            v = CONNLIMIT_OVER_PER_IP;
        else
            e->n++;
    }
    if (v == CONNLIMIT_ADMITTED)
        c->total++;
    pthread_mutex_unlock(&c->lock);
    if (v != CONNLIMIT_ADMITTED)
        *per_ip = false;
    return v;
}

void connlimit_leave(struct connlimit *c, const struct netaddr_ip *peer, bool per_ip)
{
    struct per_ip **link, *e;

    pthread_mutex_lock(&c->lock);
    c->total--;
    if (per_ip && (e = find(c, peer, &link)) != NULL && --e->n == 0) {
        *link = e->next;
        free(e);
    }
    pthread_mutex_unlock(&c->lock);
}

int connlimit_open(struct connlimit *c, const struct netaddr_ip *peer, int *from_peer)
{
    struct per_ip **link, *e;
    int total;

    pthread_mutex_lock(&c->lock);
    total = c->total;
    e = find(c, peer, &link);
    *from_peer = e != NULL ? e->n : 0;
    pthread_mutex_unlock(&c->lock);
    return total;
}
