/*
 * admin_metrics.h — smqd's own Prometheus metrics (text format 0.0.4) from
 * one SMQ_OP_STATS snapshot plus a few process facts; the metric list is in
 * docs/operations.md.  Pure rendering: admin.c takes the snapshot.
 */
#ifndef SMQD_ADMIN_METRICS_H
#define SMQD_ADMIN_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "smqd/buf.h"
#include "smqd/op.h"

struct admin_metrics_input {
    const char *version;                 /* smqd_build_info{version} */
    int64_t start_time_ms;               /* process start, epoch ms */
    bool ready;                          /* what /ready would answer */
    /* NULL when the engine gave no snapshot (starting, stopped, broken):
     * then only the process families are written, with smqd_engine_up 0. */
    const struct smq_op *stats;          /* a finished SMQ_OP_STATS for "" */
    int64_t now_ms;                      /* epoch, for ages */
    int64_t db_bytes, wal_bytes;         /* file sizes; < 0 = unknown, not written */
    uint64_t admin_denied;               /* smqd_admin_denied_total (admin.c counts) */
};

/* Appends every family with its # HELP and # TYPE lines to out. */
void admin_metrics_render(const struct admin_metrics_input *in, struct smq_buf *out);

/* Appends s with Prometheus label-value escaping (\\, \", \n). */
void admin_metrics_label(struct smq_buf *out, const char *s);

#endif
