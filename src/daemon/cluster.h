/*
 * cluster.h — active/standby on PostgreSQL: this node's cycle between
 * standby and active (docs/architecture.md "Active and standby").
 *
 * The listeners start once, gated by the role; the keeper thread seeks the
 * lease.  Each tick of the main thread looks at the keeper: once it holds
 * the lease, the node starts (store fenced at the lease's epoch, recovery,
 * syncer, engine thread), is lent to the listeners, and the role becomes
 * ACTIVE; when the lease is lost or a commit failed, the role drops to
 * STANDBY at once, the node stops, and the keeper seeks again.
 */
#ifndef SMQD_CLUSTER_H
#define SMQD_CLUSTER_H

#include <stdbool.h>
#include <stdint.h>

#include "node.h"
#include "smqd/admin.h"
#include "smqd/buf.h"
#include "smqd/config.h"
#include "smqd/keeper.h"
#include "smqd/metrics.h"
#include "smqd/mns_listener.h"
#include "smqd/role.h"

/* How often the main thread looks at the lease (cluster_tick). */
#define CLUSTER_TICK_MS 100

struct cluster {
    const struct smq_config *cfg;
    struct smq_metrics *metrics;
    struct smq_admin *admin;       /* may be NULL */
    struct mns_listener *http;
    const char *cert_url;          /* main.c's, once http is bound: what pushes name */
    struct node_parts *node;       /* the process's, serving while active */
    struct smq_role role;          /* read by the listeners' gates */
    struct smq_keeper *keeper;
    char token[64];                /* "smqd/<node_id>/<16 hex>", chosen per process */
    bool serving;
    int64_t epoch;                 /* the epoch served at */
    uint64_t activations;          /* atomic: times this node became active */
};

/* The holder token and the role, before the listeners that read them.
 * 0, or SMQ_E_INTERNAL (no random bytes). */
int cluster_init(struct cluster *c, const struct smq_config *cfg, struct smq_metrics *metrics);
/* Opens the database once (creating or migrating the schema) and closes
 * it: a database smqd cannot use stops the start (NODE_E_STORE). */
int cluster_check_store(struct cluster *c);
/* Starts the keeper thread, once the listeners are up.  0, or
 * NODE_E_THREAD. */
int cluster_start_keeper(struct cluster *c);
/* One look at the lease: becomes active or stops being active.
 * 0, or the NODE_E_* (node.h) the process must stop for (a declared
 * queue the configuration got wrong). */
int cluster_tick(struct cluster *c);
/* SIGTERM, after the node stopped: releases the lease so that a standby
 * takes over at once, and stops the keeper. */
void cluster_stop(struct cluster *c);
/* The role and lease families of /metrics (thread-safe).  0 or SMQ_E_NOMEM. */
int cluster_render_metrics(struct cluster *c, struct smq_buf *out);

#endif
