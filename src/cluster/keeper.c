/*
 * keeper.c — owns the lease keeper thread (keeper.h): its state machine
 * (seeking → held → lost → seeking), the renewal schedule, and the
 * log lines that say when the lease changed hands.
 *
 * The database calls run without the lock; main may change the state
 * meanwhile (keeper_seek), and then the call's outcome is dropped: gen
 * counts those changes.
 */
#include "smqd/keeper.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "smqd/clock.h"
#include "smqd/errors.h"
#include "smqd/log.h"
#include "smqd/worker.h"

/* A renewal that failed is tried again this soon while the proof lasts. */
#define RETRY_MS 250
#define RELEASE_MS 1000
/* A take is a few round trips (and maybe a connection): bounded, so that a
 * server that stopped answering costs a standby 2 s, not its thread. */
#define TAKE_MS 2000

struct smq_keeper {
    struct worker w;                  /* w.lock guards everything below */
    struct smq_lease *lease;          /* the thread's only */
    struct smq_role *role;
    int seek_ms, renew_ms, give_up_ms;
    enum keeper_state state;
    struct lease_grant grant;         /* with KEEPER_HELD */
    uint64_t gen;                     /* bumped by keeper_seek */
    int64_t release_epoch;            /* > 0: give this epoch up first */
    uint64_t next_us;                 /* monotonic: the next attempt or renewal */
    char last_note[256];              /* the last seeking outcome logged */
    struct keeper_counts counts;
};

/* Says once what a standby sees, not every half second. */
static void note_seeking(struct smq_keeper *k, int rc, const struct lease_grant *g,
                         const char *err)
{
    char note[256];

    if (rc == SMQ_E_SERVICE_UNAVAILABLE)
        snprintf(note, sizeof note, "standby: the lease is held by node \"%s\"", g->holder);
    else
        snprintf(note, sizeof note, "standby: cannot take the lease: %s", err);
    if (strcmp(note, k->last_note) == 0)
        return;
    snprintf(k->last_note, sizeof k->last_note, "%s", note);
    if (rc == SMQ_E_SERVICE_UNAVAILABLE)
        SMQ_INFO("%s", note);
    else
        SMQ_WARN("%s", note);
}

/* Lock held on entry and on return. */
static void seek_once(struct smq_keeper *k)
{
    struct lease_grant g = {0};
    uint64_t gen = k->gen, deadline = clock_mono_us() + TAKE_MS * 1000;
    char err[256] = "";
    int rc;

    pthread_mutex_unlock(&k->w.lock);
    rc = lease_take(k->lease, deadline, &g, err, sizeof err);
    pthread_mutex_lock(&k->w.lock);
    k->counts.connects = lease_connects(k->lease);
    if (gen != k->gen || k->state != KEEPER_SEEKING)
        return;
    if (rc != 0) {
        note_seeking(k, rc, &g, err);
        k->next_us = clock_mono_us() + (uint64_t)k->seek_ms * 1000;
        return;
    }
    k->last_note[0] = '\0';
    k->grant = g;
    k->state = KEEPER_HELD;
    role_prove(k->role, g.proven_until_us);
    k->next_us = clock_mono_us() + (uint64_t)k->renew_ms * 1000;
    SMQ_WARN("lease taken: epoch %lld (takeovers so far: %lld)", (long long)g.epoch,
             (long long)g.takeovers);
}

static void lose(struct smq_keeper *k, const char *why)
{
    role_demote(k->role);
    k->state = KEEPER_LOST;
    SMQ_ERROR("lease lost at epoch %lld: %s; serving stops", (long long)k->grant.epoch, why);
}

/* Lock held on entry and on return.  A renewal that does not come back is
 * retried until the proof runs out; one the database refuses is final. */
static void renew_once(struct smq_keeper *k)
{
    struct lease_grant g = k->grant;
    uint64_t gen = k->gen, now;
    char err[256] = "";
    int rc;

    pthread_mutex_unlock(&k->w.lock);
    rc = lease_renew(k->lease, g.proven_until_us, &g, err, sizeof err);
    pthread_mutex_lock(&k->w.lock);
    k->counts.connects = lease_connects(k->lease);
    if (gen != k->gen || k->state != KEEPER_HELD)
        return;
    now = clock_mono_us();
    if (rc == 0) {
        k->grant = g;
        role_prove(k->role, g.proven_until_us);
        k->next_us = now + (uint64_t)k->renew_ms * 1000;
    } else if (rc == SMQ_E_SERVICE_UNAVAILABLE || now >= k->grant.proven_until_us) {
        k->counts.renew_failures += rc != SMQ_E_SERVICE_UNAVAILABLE;
        lose(k, err);
    } else {
        k->counts.renew_failures++;
        SMQ_WARN("lease renewal failed (%s); retrying while the lease lasts", err);
        k->next_us = now + RETRY_MS * 1000;
    }
}

/* Lock held on entry and on return. */
static void release_held(struct smq_keeper *k, int64_t epoch)
{
    pthread_mutex_unlock(&k->w.lock);
    if (lease_release(k->lease, epoch, clock_mono_us() + RELEASE_MS * 1000) == 0)
        SMQ_INFO("lease released at epoch %lld", (long long)epoch);
    pthread_mutex_lock(&k->w.lock);
}

static void *keeper_main(void *arg)
{
    struct smq_keeper *k = arg;

    pthread_mutex_lock(&k->w.lock);
    while (!k->w.stopping) {
        uint64_t now = clock_mono_us();

        if (k->release_epoch > 0) {
            int64_t epoch = k->release_epoch;
            k->release_epoch = 0;
            release_held(k, epoch);
        } else if (k->state != KEEPER_LOST && now >= k->next_us) {
            if (k->state == KEEPER_SEEKING)
                seek_once(k);
            else
                renew_once(k);
        } else {
            worker_wait(&k->w, k->state == KEEPER_LOST ? UINT64_MAX
                                                       : (k->next_us - now + 999) / 1000);
        }
    }
    if (k->state == KEEPER_HELD || k->release_epoch > 0)
        release_held(k, k->state == KEEPER_HELD ? k->grant.epoch : k->release_epoch);
    pthread_mutex_unlock(&k->w.lock);
    return NULL;
}

int keeper_start(const struct keeper_opts *o, struct smq_keeper **out)
{
    struct smq_keeper *k = calloc(1, sizeof *k);

    *out = NULL;
    if (k == NULL) {
        lease_free(o->lease);
        return SMQ_E_NOMEM;
    }
    worker_init(&k->w);
    k->lease = o->lease;
    k->role = o->role;
    k->seek_ms = o->seek_ms;
    k->renew_ms = o->renew_ms;
    k->give_up_ms = o->give_up_ms;
    k->state = KEEPER_SEEKING;
    if (worker_start(&k->w, "smqd-lease", keeper_main, k) != 0) {
        worker_destroy(&k->w);
        lease_free(k->lease);
        free(k);
        return SMQ_E_INTERNAL;
    }
    *out = k;
    return 0;
}

enum keeper_state keeper_state(struct smq_keeper *k, struct lease_grant *g)
{
    enum keeper_state st;

    pthread_mutex_lock(&k->w.lock);
    st = k->state;
    if (g != NULL)
        *g = k->grant;
    pthread_mutex_unlock(&k->w.lock);
    return st;
}

bool keeper_activate_role(struct smq_keeper *k, const struct lease_grant *g)
{
    bool held;

    pthread_mutex_lock(&k->w.lock);
    held = k->state == KEEPER_HELD && k->grant.epoch == g->epoch;
    if (held)
        role_activate(k->role, k->grant.epoch, k->grant.takeovers, k->grant.proven_until_us);
    pthread_mutex_unlock(&k->w.lock);
    return held;
}

void keeper_seek(struct smq_keeper *k, bool release)
{
    pthread_mutex_lock(&k->w.lock);
    if (k->state != KEEPER_SEEKING) {
        if (release && k->state == KEEPER_HELD)
            k->release_epoch = k->grant.epoch;
        role_demote(k->role);
        k->state = KEEPER_SEEKING;
        k->gen++;
        k->next_us = release ? clock_mono_us() + (uint64_t)k->give_up_ms * 1000 : 0;
    }
    pthread_cond_signal(&k->w.wake);
    pthread_mutex_unlock(&k->w.lock);
}

void keeper_counts(struct smq_keeper *k, struct keeper_counts *out)
{
    pthread_mutex_lock(&k->w.lock);
    *out = k->counts;
    pthread_mutex_unlock(&k->w.lock);
}

void keeper_stop(struct smq_keeper *k)
{
    if (k == NULL)
        return;
    worker_stop(&k->w);
    worker_destroy(&k->w);
    lease_free(k->lease);
    free(k);
}
