/*
 * keeper.h — the thread that keeps this node's lease (lease.h): while the
 * node is a standby it tries to take the lease every seek interval; once
 * held, it renews it every renew interval and moves the role's proof on
 * (role.h), so the node can keep serving while its main thread is busy
 * (loading the queues after a takeover takes longer than one lease).
 *
 * When the lease is lost (taken, expired, or not renewed before its proof
 * ran out) the keeper demotes the role at once and waits: the main thread
 * stops the engine parts and then calls keeper_seek.  The main thread reads
 * the state with keeper_state and acts on it; it never talks to the
 * database about the lease itself.
 */
#ifndef SMQD_KEEPER_H
#define SMQD_KEEPER_H

#include <stdbool.h>
#include <stdint.h>

#include "smqd/lease.h"
#include "smqd/role.h"

enum keeper_state {
    KEEPER_SEEKING,      /* trying to take the lease */
    KEEPER_HELD,         /* held; the grant says at which epoch */
    KEEPER_LOST          /* lost; waiting for keeper_seek */
};

struct keeper_opts {
    struct smq_lease *lease;     /* owned by the keeper from keeper_start on */
    struct smq_role *role;       /* borrowed */
    int seek_ms;                 /* between two attempts to take it */
    int renew_ms;                /* between two renewals */
    int give_up_ms;              /* after giving the lease up, before seeking it again:
                                    a healthy standby goes first */
};

struct keeper_counts {
    uint64_t connects;           /* connections made to the database for the lease */
    uint64_t renew_failures;     /* renewals that did not come back in time */
};

struct smq_keeper;

/* Starts the thread (seeking).  0, SMQ_E_NOMEM or SMQ_E_INTERNAL; the lease
 * is freed on failure too. */
int keeper_start(const struct keeper_opts *o, struct smq_keeper **out);
/* The state; with KEEPER_HELD, *g is the grant (epoch, proof). */
enum keeper_state keeper_state(struct smq_keeper *k, struct lease_grant *g);
/* Seek the lease again (after KEEPER_LOST, or to give up a held one); with
 * release, a held lease is first expired in the database so that another
 * node need not wait for it. */
void keeper_seek(struct smq_keeper *k, bool release);
void keeper_counts(struct smq_keeper *k, struct keeper_counts *out);
/* Stops the thread, releasing a held lease (bounded by one second), and
 * frees everything.  NULL is a no-op. */
void keeper_stop(struct smq_keeper *k);

#endif
