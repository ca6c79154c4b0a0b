/*
 * admin_probe.h — what the admin listener's probes answer
 * (docs/admin-api.md): /health (the process lives), /ready (the process
 * serves, and the engine answered a health probe in time) and /metrics
 * (smqd's own families from one statistics snapshot, then the MNS
 * listener's).  Pure decisions and rendering: admin.c takes the snapshot.
 */
#ifndef SMQD_ADMIN_PROBE_H
#define SMQD_ADMIN_PROBE_H

#include <stdbool.h>
#include <stdint.h>

#include "smqd/admin_api.h"
#include "smqd/op.h"

enum admin_state {
    ADMIN_STARTING = 0,          /* recovering: /ready 503 starting */
    ADMIN_READY,                 /* MNS listener up: /ready 200 (unless broken) */
    ADMIN_DRAINING,              /* SIGTERM seen: /ready 503 draining, API 503 */
    ADMIN_STANDBY                /* on PostgreSQL without the lease: /ready 503 standby */
};

/* How long a probe waits for the engine: a probe or a scrape gives up long
 * before 30 s, and its request must not wait on after it did. */
#define ADMIN_PROBE_WAIT_MS 2000

void admin_probe_health(struct admin_reply *r);

/* /ready without asking the engine: true when r is answered (starting or
 * draining); false when the engine must be asked (state READY). */
bool admin_probe_ready_early(enum admin_state state, struct admin_reply *r);
/* /ready once the engine's totals-only STATS op finished (stats NULL: it
 * did not answer in time).  A failed op means the engine is broken. */
void admin_probe_ready(enum admin_state state, const struct smq_op *stats,
                       struct admin_reply *r);

/* What /metrics reports besides the snapshot. */
struct admin_probe_facts {
    int64_t start_time_ms;       /* process start, epoch ms */
    bool ready;                  /* the listener's state is READY */
    int64_t db_bytes, wal_bytes; /* file sizes; < 0 = unknown */
    uint64_t admin_denied;       /* requests refused to the read-only token */
    /* More families appended after smqd's own (the MNS listener's); 0 or
     * SMQ_E_NOMEM. */
    int (*extra)(void *arg, struct smq_buf *out);
    void *extra_arg;
};
/* /metrics from a finished STATS op for every queue (NULL: none in time). */
void admin_probe_metrics(const struct admin_probe_facts *facts, const struct smq_op *stats,
                         struct admin_reply *r);

#endif
