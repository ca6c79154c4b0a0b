/*
 * role.c — owns the node's role and its proven-until time (see role.h).
 *
 * Demotion withdraws the proof before it changes the state, and activation
 * sets the proof before the state, so a reader that sees ACTIVE never pairs
 * it with a stale proof from an earlier term.
 */
#include "smqd/role.h"

void role_init(struct smq_role *r)
{
    atomic_init(&r->state, SMQ_ROLE_STANDBY);
    atomic_init(&r->proven_until_us, 0);
    atomic_init(&r->epoch, 0);
    atomic_init(&r->takeovers, 0);
}

void role_activate(struct smq_role *r, int64_t epoch, int64_t takeovers, uint64_t proven_until_us)
{
    atomic_store(&r->epoch, epoch);
    atomic_store(&r->takeovers, takeovers);
    role_prove(r, proven_until_us);   /* the keeper may have renewed meanwhile */
    atomic_store(&r->state, SMQ_ROLE_ACTIVE);
}

void role_prove(struct smq_role *r, uint64_t proven_until_us)
{
    uint64_t cur = atomic_load(&r->proven_until_us);

    while (proven_until_us > cur &&
           !atomic_compare_exchange_weak(&r->proven_until_us, &cur, proven_until_us))
        ;
}

void role_demote(struct smq_role *r)
{
    atomic_store(&r->proven_until_us, 0);
    atomic_store(&r->state, SMQ_ROLE_STANDBY);
}

bool role_serving(const struct smq_role *r, uint64_t now_us)
{
    if (atomic_load(&((struct smq_role *)r)->state) != SMQ_ROLE_ACTIVE)
        return false;
    return now_us < atomic_load(&((struct smq_role *)r)->proven_until_us);
}

enum smq_role_state role_state(const struct smq_role *r)
{
    return (enum smq_role_state)atomic_load(&((struct smq_role *)r)->state);
}

int64_t role_epoch(const struct smq_role *r)
{
    return atomic_load(&((struct smq_role *)r)->epoch);
}

int64_t role_takeovers(const struct smq_role *r)
{
    return atomic_load(&((struct smq_role *)r)->takeovers);
}
