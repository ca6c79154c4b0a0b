/*
 * metrics.h — counters of the MNS listener, rendered as Prometheus text
 * (exposition format 0.0.4) by the admin listener's /metrics.
 *
 * Families:
 *   smqd_http_requests_total{action,code}            counter
 *   smqd_http_request_duration_seconds{action}       histogram (le 0.0005 … 30)
 *   smqd_http_requests_in_flight                     gauge
 *   smqd_throttled_requests_total{scope}             counter (scope="queue"|"access_key")
 *   smqd_access_denied_total{access_key_id,action}   counter (AccessDenied by a grant)
 *   smqd_wal_flush_duration_seconds                  histogram (le 0.0001 … 1), and
 *   smqd_wal_flush_failures_total                    counter, both once a flush happened
 *
 * action is mns_action_name() ("-" for a request refused before it was
 * routed, e.g. a bad signature); code is the HTTP status, or "other" for a
 * status outside the fixed table (0: no response was sent, the client went
 * away first).  Durations run from the request line to the completed
 * response, so a long-polling ReceiveMessage/BatchReceiveMessage includes
 * its wait (up to waitseconds, at most 30 s): that is what the client
 * experienced, and why the histogram goes up to 30 s.  To see service time,
 * look at the other actions, or at the low buckets of the receive actions
 * (a receive that found a message answers at once).
 *
 * Updating is a few relaxed atomic adds on fixed arrays (no allocation, no
 * lock); a render reads them without stopping writers, so one scrape may
 * see a request in _count but not yet in _sum.  Rows whose count is 0 are
 * left out, except smqd_throttled_requests_total and the gauge.
 */
#ifndef SMQD_METRICS_H
#define SMQD_METRICS_H

#include <stdbool.h>
#include <stdint.h>

#include "smqd/mns.h"
#include "smqd/buf.h"
#include "smqd/connlimit.h"
#include "smqd/ratelimit.h"

struct smq_metrics;                       /* thread-safe, owned by main */

/* NULL when out of memory. */
struct smq_metrics *metrics_new(void);
void metrics_free(struct smq_metrics *m);

/* Appends its families as Prometheus text (format 0.0.4) to out; 0 or SMQ_E_NOMEM. */
int metrics_render(struct smq_metrics *m, struct smq_buf *out);

/* The calls below are made on the request path; each accepts m == NULL
 * (nothing is counted). */

/* A request's headers are complete: it is in flight until metrics_request_done. */
void metrics_request_started(struct smq_metrics *m);
/* The request is finished; status 0 = no response was sent. */
void metrics_request_done(struct smq_metrics *m, enum mns_action a, int status,
                          uint64_t duration_us);
/* A request was refused with QpsLimitExceeded by the limit of scope. */
void metrics_throttled(struct smq_metrics *m, enum smq_limit_scope scope);
/* A new connection was refused by the cap of verdict (connlimit.h). */
void metrics_connection_refused(struct smq_metrics *m, enum connlimit_verdict cap);
/* Connections admitted (+1) or closed after being admitted (-1). */
void metrics_connections_open(struct smq_metrics *m, int delta);
/* A request of access_key_id was refused with AccessDenied (grant.h). */
void metrics_access_denied(struct smq_metrics *m, const char *access_key_id, enum mns_action a);
/* The syncer flushed the WAL (syncer.h): how long it took, and whether it failed. */
void metrics_wal_flush(struct smq_metrics *m, uint64_t duration_us, bool failed);

#endif
