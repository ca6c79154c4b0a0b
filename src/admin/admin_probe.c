/*
 * admin_probe.c — owns what /health, /ready and /metrics answer
 * (admin_probe.h).
 */
#include "smqd/admin_probe.h"

#include "admin_metrics.h"
#include "smqd/clock.h"

#define TEXT_CT "text/plain; charset=utf-8"
#define METRICS_CT "text/plain; version=0.0.4; charset=utf-8"

static void reply_text(struct admin_reply *r, int status, const char *text)
{
    r->status = status;
    r->content_type = TEXT_CT;
    buf_reset(&r->body);
    buf_puts(&r->body, text);
}

void admin_probe_health(struct admin_reply *r)
{
    reply_text(r, 200, "ok\n");
}

bool admin_probe_ready_early(enum admin_state state, struct admin_reply *r)
{
    switch (state) {
    case ADMIN_STARTING:
        reply_text(r, 503, "starting\n");
        return true;
    case ADMIN_DRAINING:
        reply_text(r, 503, "draining\n");
        return true;
    case ADMIN_STANDBY:
        reply_text(r, 503, "standby\n");
        return true;
    case ADMIN_READY:
        break;
    }
    return false;
}

/* The engine serves when a totals-only STATS (O(1)) succeeds: it fails with
 * InternalError while the engine is broken (every op is refused until a
 * reload succeeds). */
void admin_probe_ready(enum admin_state state, const struct smq_op *stats,
                       struct admin_reply *r)
{
    if (stats != NULL && stats->result.err == 0 && state == ADMIN_READY)
        reply_text(r, 200, "ready\n");
    else
        reply_text(r, 503, state == ADMIN_DRAINING ? "draining\n"
                           : state == ADMIN_STANDBY ? "standby\n" : "broken\n");
}

void admin_probe_metrics(const struct admin_probe_facts *facts, const struct smq_op *stats,
                         struct admin_reply *r)
{
    struct admin_metrics_input in = {0};

    if (stats != NULL && (stats->result.err != 0 || stats->stats.totals.broken))
        stats = NULL;
    in.version = SMQD_VERSION;
    in.start_time_ms = facts->start_time_ms;
    in.ready = facts->ready && stats != NULL;
    in.stats = stats;
    in.now_ms = clock_epoch_ms(clock_system());
    in.db_bytes = facts->db_bytes;
    in.wal_bytes = facts->wal_bytes;
    in.admin_denied = facts->admin_denied;
    r->status = 200;
    r->content_type = METRICS_CT;
    buf_reset(&r->body);
    admin_metrics_render(&in, &r->body);
    if (facts->extra != NULL && facts->extra(facts->extra_arg, &r->body) != 0)
        r->body.failed = true;      /* answered 500 by the listener */
}
