/*
 * cluster.c — owns this node's active/standby cycle on PostgreSQL
 * (cluster.h): the holder token, the moves between standby and active,
 * and their log lines and metrics.
 */
#include "cluster.h"

#include <stdio.h>
#include <string.h>

#include "smqd/clock.h"
#include "smqd/crypto.h"
#include "smqd/errors.h"
#include "smqd/log.h"
#include "smqd/store.h"

/* The keeper's rhythm: a standby asks twice a second (a takeover comes at
 * most this long after the expiry), an active renews every second (or five
 * times per lease when it is shorter), so a lease survives three lost
 * renewals. */
#define SEEK_MS 500
#define RENEW_MS 1000
/* A node that gave the lease up after a failed commit lets the standbys
 * ask four times before it asks again itself. */
#define GIVE_UP_MS 2000

int cluster_init(struct cluster *c, const struct smq_config *cfg, struct smq_metrics *metrics)
{
    unsigned char rnd[8];

    memset(c, 0, sizeof *c);
    c->cfg = cfg;
    c->metrics = metrics;
    role_init(&c->role);
    if (crypto_random(rnd, sizeof rnd) != 0)
        return SMQ_E_INTERNAL;
    /* Below 64 bytes, PostgreSQL's limit for an application_name. */
    snprintf(c->token, sizeof c->token, "smqd/%.40s/%02x%02x%02x%02x%02x%02x%02x%02x",
             cfg->cluster_node_id, rnd[0], rnd[1], rnd[2], rnd[3], rnd[4], rnd[5], rnd[6],
             rnd[7]);
    return 0;
}

int cluster_check_store(struct cluster *c)
{
    struct store_config scfg = {.backend = SMQ_STORE_POSTGRESQL, .dsn = c->cfg->storage_dsn,
                                .app_name = c->token};
    struct smq_store *s = NULL;
    char err[512] = "";

    if (store_open(&scfg, &s, err, sizeof err) != 0) {
        SMQ_ERROR("storage: PostgreSQL: %s", err);
        return NODE_E_STORE;
    }
    store_close(s);
    return 0;
}

int cluster_start_keeper(struct cluster *c)
{
    struct lease_opts lo = {.dsn = c->cfg->storage_dsn, .node_id = c->cfg->cluster_node_id,
                            .token = c->token, .ttl_ms = c->cfg->cluster_lease_ttl_s * 1000};
    /* A short lease is renewed more often: five chances in one lease. */
    int renew_ms = c->cfg->cluster_lease_ttl_s * 1000 / 5;
    struct keeper_opts ko = {.role = &c->role, .seek_ms = SEEK_MS,
                             .renew_ms = renew_ms < RENEW_MS ? renew_ms : RENEW_MS,
                             .give_up_ms = GIVE_UP_MS};

    if (lease_new(&lo, &ko.lease) != 0 || keeper_start(&ko, &c->keeper) != 0) {
        SMQ_ERROR("cluster: cannot start the lease keeper");
        return NODE_E_THREAD;
    }
    return 0;
}

/* Active: the node serves at g's epoch. */
static int activate(struct cluster *c, const struct lease_grant *g)
{
    struct node_opts o = {.cfg = c->cfg, .metrics = c->metrics, .holder_token = c->token,
                          .epoch = g->epoch, .cert_url = c->cert_url};
    uint64_t start_us = clock_mono_us();
    const struct handle_keys *keys;
    int code = node_start(&o, c->node);

    if (code == 0)
        code = node_start_push(&o, c->node);
    if (code != 0) {
        node_quiesce(c->node);
        node_close(c->node);
        SMQ_ERROR("cluster: could not start serving at epoch %lld; giving the lease up",
                  (long long)g->epoch);
        keeper_seek(c->keeper, true);
        /* A declared queue the configuration got wrong will not get right
         * by trying again; storage trouble may. */
        return code == NODE_E_CONFIG ? code : 0;
    }
    keys = engine_keys(c->node->engine);
    mns_listener_attach_signing_cert(c->http, c->node->signing_cert_pem);
    mns_listener_attach(c->http, c->node->thread, keys);
    admin_attach_engine_thread(c->admin, c->node->thread, keys);
    c->serving = true;
    c->epoch = g->epoch;
    /* Lost during the load: the next tick stops the node again. */
    if (!keeper_activate_role(c->keeper, g))
        return 0;
    admin_set_state(c->admin, ADMIN_READY);
    __atomic_add_fetch(&c->activations, 1, __ATOMIC_RELAXED);
    SMQ_WARN("active: serving at lease epoch %lld (the queues loaded in %.2f s)",
             (long long)g->epoch, (double)(clock_mono_us() - start_us) / 1e6);
    return 0;
}

/* Standby at once (the gates answer 503 from now on), then the node stops:
 * what it was given is answered (503 or InternalError when it can no
 * longer commit), and the listeners give the engine back. */
static void deactivate(struct cluster *c, const char *why)
{
    role_demote(&c->role);
    admin_set_state(c->admin, ADMIN_STANDBY);
    SMQ_WARN("standby: %s; stopping the engine", why);
    node_quiesce(c->node);
    mns_listener_detach(c->http);
    admin_detach_engine_thread(c->admin);
    node_close(c->node);
    c->serving = false;
    SMQ_WARN("standby: stopped serving at lease epoch %lld", (long long)c->epoch);
}

int cluster_tick(struct cluster *c)
{
    struct lease_grant g = {0};
    enum keeper_state st = keeper_state(c->keeper, &g);

    if (c->serving && (st != KEEPER_HELD || g.epoch != c->epoch)) {
        deactivate(c, "the lease was lost");
        if (st == KEEPER_LOST)
            keeper_seek(c->keeper, false);
    } else if (c->serving && node_failed(c->node)) {
        deactivate(c, "a commit to PostgreSQL failed");
        keeper_seek(c->keeper, true);
    } else if (!c->serving && st == KEEPER_HELD) {
        return activate(c, &g);
    } else if (!c->serving && st == KEEPER_LOST) {
        keeper_seek(c->keeper, false);
    }
    return 0;
}

void cluster_stop(struct cluster *c)
{
    role_demote(&c->role);
    c->serving = false;
    keeper_stop(c->keeper);
    c->keeper = NULL;
}

int cluster_render_metrics(struct cluster *c, struct smq_buf *out)
{
    struct keeper_counts n = {0};
    bool active = role_serving(&c->role, clock_mono_us());

    if (c->keeper != NULL)
        keeper_counts(c->keeper, &n);
    buf_printf(out,
               "# HELP smqd_cluster_active 1 while this node holds the lease and serves, 0 on a standby.\n"
               "# TYPE smqd_cluster_active gauge\nsmqd_cluster_active %d\n"
               "# HELP smqd_lease_epoch The lease epoch this node last served at (0: never).\n"
               "# TYPE smqd_lease_epoch gauge\nsmqd_lease_epoch %lld\n"
               "# HELP smqd_lease_takeovers Times the lease changed holder, as last read from the database.\n"
               "# TYPE smqd_lease_takeovers gauge\nsmqd_lease_takeovers %lld\n"
               "# HELP smqd_activations_total Times this node became active (each one loads the queues).\n"
               "# TYPE smqd_activations_total counter\nsmqd_activations_total %llu\n"
               "# HELP smqd_lease_connects_total Connections the lease keeper made to PostgreSQL.\n"
               "# TYPE smqd_lease_connects_total counter\nsmqd_lease_connects_total %llu\n"
               "# HELP smqd_lease_renew_failures_total Lease renewals that did not come back in time.\n"
               "# TYPE smqd_lease_renew_failures_total counter\nsmqd_lease_renew_failures_total %llu\n",
               active ? 1 : 0, (long long)role_epoch(&c->role),
               (long long)role_takeovers(&c->role),
               (unsigned long long)__atomic_load_n(&c->activations, __ATOMIC_RELAXED),
               (unsigned long long)n.connects, (unsigned long long)n.renew_failures);
    return buf_failed(out) ? SMQ_E_NOMEM : 0;
}
