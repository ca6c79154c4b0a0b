/*
 * node.h — the parts of smqd that serve the queues: the store, the engine
 * recovered from it, the syncer and the engine thread.  They start
 * together in dependency order and stop together in reverse: on SQLite
 * once per process, on PostgreSQL once each time the node holds the lease
 * (cluster.h), every time through the same recovery a restart uses.
 *
 * The listeners are not part of a node: they live as long as the process
 * and are lent the engine thread (attach) while a node serves.
 */
#ifndef SMQD_NODE_H
#define SMQD_NODE_H

#include <stdbool.h>
#include <stdint.h>

#include "smqd/config.h"
#include "smqd/crypto.h"
#include "smqd/engine.h"
#include "smqd/metrics.h"
#include "smqd/engine_thread.h"
#include "smqd/store.h"
#include "smqd/syncer.h"

/* Why a node (or the cluster cycle, cluster.h) could not go on: 0 is
 * success, as with SMQ_E_* (errors.h).  The reasons differ from errors.h's
 * because the process answers each differently; only main.c turns them
 * into exit statuses (docs/architecture.md). */
enum node_error {
    NODE_E_CONFIG = -1,         /* a declared queue the configuration got wrong */
    NODE_E_STORE = -2,          /* the database cannot be opened or loaded */
    NODE_E_THREAD = -3          /* a thread could not be started */
};

struct node_push;

struct node_parts {
    struct smq_store *store;
    struct smq_syncer *syncer;     /* NULL with SQLite's sync = normal */
    struct smq_engine *engine;
    struct smq_engine_thread *thread;
    struct node_push *push;        /* the HTTP push pool the engine hands pushes to (node.c) */
    /* The push signing key and its certificate's PEM (signing.h,
     * docs/protocol.md §13.11): what pushes are signed with and what the
     * MNS listener serves at /smqd/signing-cert.pem. */
    struct crypto_signer *signer;
    char *signing_cert_pem;
};

struct node_opts {
    const struct smq_config *cfg;
    struct smq_metrics *metrics;   /* borrowed, for the syncer's flushes */
    /* PostgreSQL: every connection's application_name, and with epoch the
     * fence every commit checks (store_fence). */
    const char *holder_token;
    int64_t epoch;
    /* For node_start_push: the certificate URL pushes name (docs/protocol.md
     * §13.11), which main.c makes once the MNS listener is bound; NULL or ""
     * = none can be named. */
    const char *cert_url;
};

/* Opens the store, recovers the engine, applies the declared queues, and
 * starts the syncer and the engine thread.  0, or the NODE_E_* of what
 * failed (logged); p then holds what did start, for node_close. */
int node_start(const struct node_opts *o, struct node_parts *p);
/* After node_start and once the MNS listener is bound (o->cert_url): the
 * push pool, until then holding the engine's pushes back.  0, or NODE_E_*. */
int node_start_push(const struct node_opts *o, struct node_parts *p);
/* Whether the node can no longer commit (a flush failed): it must stop. */
bool node_failed(const struct node_parts *p);
/* Stops the push pool (its attempts in flight go back to the engine as
 * cancelled), then the engine thread (everything it was given is answered, parked
 * long polls with MessageNotExist) and waits until every held answer was
 * sent.  Then the listeners detach, then node_close. */
void node_quiesce(struct node_parts *p);
/* Frees the engine thread and the engine, flushes and stops the syncer,
 * closes the store; p is zeroed.  Parts never started are skipped. */
void node_close(struct node_parts *p);

#endif
