/*
 * lease.h — the active/standby lease held in PostgreSQL: the one row of
 * smq_lease, taken, renewed and released over a connection of its own.
 *
 * The lease is the node's right to commit: every committing transaction
 * of the store checks it (store_fence, docs/architecture.md "Active and
 * standby"), and the row's expiry is set by the database's clock, so what
 * a node believes about time can only make it give up too early, never
 * hold on too long.  Every call is bounded by a deadline: a server that
 * stopped answering cannot keep the caller beyond it (the connection is
 * dropped and made again by the next call).
 *
 * The proof a successful take or renewal returns is the monotonic time,
 * measured before the statement was sent, plus the lease's length minus a
 * margin: the database set the expiry later than that, from its own clock,
 * so the node stops claiming the lease before the database lets another
 * node take it.
 *
 * Not thread-safe: one thread (keeper.c) owns a lease.
 */
#ifndef SMQD_LEASE_H
#define SMQD_LEASE_H

#include <stddef.h>
#include <stdint.h>

struct smq_lease;

struct lease_opts {
    const char *dsn;          /* libpq conninfo (copied) */
    const char *node_id;      /* this node's name (copied) */
    const char *token;        /* holder token, also every connection's application_name */
    int ttl_ms;               /* the lease's length */
};

/* What the database said about the lease. */
struct lease_grant {
    int64_t epoch;                 /* the epoch held (after a take: the new one) */
    int64_t takeovers;             /* times the lease changed holder */
    uint64_t proven_until_us;      /* monotonic µs; see above */
    char holder[64];               /* the node_id that holds it ("" if none) */
};

/* 0 or SMQ_E_NOMEM / SMQ_E_INVALID_ARGUMENT; nothing is connected yet. */
int lease_new(const struct lease_opts *o, struct smq_lease **out);
void lease_free(struct smq_lease *l);

/*
 * Takes the lease if it is free, expired, or already this holder's (then
 * under a new epoch, which fences every earlier transaction of ours).
 * Before taking it from another holder, that holder's sessions are ended
 * so that none of its transactions can be half-way through a commit.
 * 0: taken (g filled); SMQ_E_SERVICE_UNAVAILABLE: another node holds it
 * (g->holder says which); SMQ_E_INTERNAL: the database did not answer in
 * time or failed (err says why).
 */
int lease_take(struct smq_lease *l, uint64_t deadline_us, struct lease_grant *g,
               char *err, size_t err_size);

/*
 * Extends the lease held at g->epoch.  0: renewed (g->proven_until_us
 * moved on); SMQ_E_SERVICE_UNAVAILABLE: it is no longer ours (expired or
 * taken); SMQ_E_INTERNAL: no answer in time (whether it is still ours is
 * unknown: the proof of the last renewal still holds until it runs out).
 */
int lease_renew(struct smq_lease *l, uint64_t deadline_us, struct lease_grant *g,
                char *err, size_t err_size);

/* Gives the lease at epoch up (expires it now) so that a standby takes
 * over at once.  0, or SMQ_E_INTERNAL; a lease not ours is left alone. */
int lease_release(struct smq_lease *l, int64_t epoch, uint64_t deadline_us);

/* Times a connection to the database was made (the first one included). */
uint64_t lease_connects(const struct smq_lease *l);

#endif
