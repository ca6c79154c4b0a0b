/*
 * role.h — the node's role in active/standby on PostgreSQL: STANDBY or
 * ACTIVE, and the monotonic time until which the lease is proven.
 *
 * Written by the main thread (the lease loop), read by every HTTP thread on
 * every request: all fields are atomics, so a main thread stuck in libpq
 * cannot keep the node serving — the proof simply runs out
 * (docs/briefs: the gate checks proven-until on every request).
 */
#ifndef SMQD_ROLE_H
#define SMQD_ROLE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

enum smq_role_state { SMQ_ROLE_STANDBY = 0, SMQ_ROLE_ACTIVE = 1 };

struct smq_role {
    _Atomic int state;                  /* enum smq_role_state */
    _Atomic uint64_t proven_until_us;   /* monotonic µs; 0 = nothing proven */
    _Atomic int64_t epoch;              /* the lease epoch last held */
    _Atomic int64_t takeovers;          /* the lease row's takeover count */
};

void role_init(struct smq_role *r);
/* Becomes ACTIVE at epoch, proven until proven_until_us (monotonic µs). */
void role_activate(struct smq_role *r, int64_t epoch, int64_t takeovers, uint64_t proven_until_us);
/* A successful renewal: moves the proof forward (never backward). */
void role_prove(struct smq_role *r, uint64_t proven_until_us);
/* STANDBY at once; the proof is withdrawn. */
void role_demote(struct smq_role *r);
/* True only while ACTIVE and now_us is before the proven-until time. */
bool role_serving(const struct smq_role *r, uint64_t now_us);
enum smq_role_state role_state(const struct smq_role *r);
int64_t role_epoch(const struct smq_role *r);
int64_t role_takeovers(const struct smq_role *r);

#endif
