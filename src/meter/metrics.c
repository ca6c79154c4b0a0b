/*
 * metrics.c — owns the MNS listener's request counters and their Prometheus
 * text rendering.
 *
 * Layout: one struct per action holding its per-status counts, its
 * histogram buckets (not cumulative: each request adds 1 to exactly one
 * bucket, the render sums them up) and its duration sum.  Each is aligned to
 * a cache line, so two workers serving different actions do not bounce one
 * line between cores; two serving the same action share it, which at a
 * relaxed add per field is still far below the cost of the request itself.
 * A per-thread shard would remove even that, but needs thread identity that
 * libmicrohttpd does not give us without a global.
 *
 * Denied requests are counted by access key id as well, in a small table
 * under a lock: key ids are strings that a reload can change, and a denial
 * is rare next to a request.  Ids past the table's size share one row.
 */
#include "smqd/metrics.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "smqd/auth.h"
#include "smqd/errors.h"

/* The statuses smqd sends (docs/protocol-decisions.md); anything else is "other". */
static const int status_codes[] = {200, 201, 204, 400, 403, 404, 408, 409, 429, 500, 503};
#define N_STATUS (sizeof status_codes / sizeof status_codes[0])
#define STATUS_OTHER N_STATUS

/* Histogram upper bounds, in µs and as printed (le is in seconds). */
static const uint64_t bound_us[] = {500, 1000, 2500, 5000, 10000, 25000, 50000, 100000,
                                    250000, 500000, 1000000, 2500000, 5000000, 10000000,
                                    30000000};
static const char *const bound_le[] = {"0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025",
                                       "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10",
                                       "30"};
#define N_BOUNDS (sizeof bound_us / sizeof bound_us[0])
_Static_assert(sizeof bound_us / sizeof bound_us[0] == sizeof bound_le / sizeof bound_le[0],
               "one label per bound");

struct action_stats {
    uint64_t by_status[N_STATUS + 1];      /* [STATUS_OTHER] last */
    uint64_t buckets[N_BOUNDS + 1];        /* [N_BOUNDS]: slower than the last bound */
    uint64_t sum_us;
} __attribute__((aligned(64)));

/* WAL flushes (syncer.c): one thread writes; the alignment below keeps its
 * counters off the lines the HTTP threads write.  A healthy disk flushes in
 * well under a millisecond; the bounds reach up to a second to show a disk
 * that is failing slowly. */
static const uint64_t flush_bound_us[] = {100, 250, 500, 1000, 2500, 5000, 10000, 25000,
                                          50000, 100000, 250000, 1000000};
static const char *const flush_bound_le[] = {"0.0001", "0.00025", "0.0005", "0.001", "0.0025",
                                             "0.005", "0.01", "0.025", "0.05", "0.1", "0.25",
                                             "1"};
#define N_FLUSH_BOUNDS (sizeof flush_bound_us / sizeof flush_bound_us[0])
_Static_assert(sizeof flush_bound_us / sizeof flush_bound_us[0]
                   == sizeof flush_bound_le / sizeof flush_bound_le[0],
               "one label per flush bound");

struct flush_stats {
    uint64_t buckets[N_FLUSH_BOUNDS + 1];
    uint64_t sum_us;
    uint64_t failures;
} __attribute__((aligned(64)));

/* A histogram's upper bounds, in µs and as printed. */
struct histogram_shape {
    const uint64_t *bound_us;
    const char *const *bound_le;
    size_t n;
};

static const struct histogram_shape request_shape = {bound_us, bound_le, N_BOUNDS};
static const struct histogram_shape flush_shape = {flush_bound_us, flush_bound_le,
                                                   N_FLUSH_BOUNDS};

/* Distinct (access key id, action) rows; more share DENIED_OTHER_KEY's. */
#define DENIED_ROWS 256
#define DENIED_OTHER_KEY "(other)"

struct denied_row {
    char key[SMQ_KEY_ID_MAX + 1];
    enum mns_action action;
    uint64_t n;
};

struct denied_table {
    pthread_mutex_t lock;
    struct denied_row rows[DENIED_ROWS];
    size_t n;                              /* rows[n - 1] may be the shared row */
};

struct smq_metrics {
    struct action_stats actions[MNS__ACTION_COUNT];
    struct flush_stats flushes;
    uint64_t throttled[SMQ_LIMIT__COUNT];
    uint64_t conn_refused[CONNLIMIT_OVER_PER_IP + 1];   /* by enum connlimit_verdict */
    int64_t conn_open;
    int64_t in_flight;
    struct denied_table denied;
};

/* ---- updates (request path) --------------------------------------------------- */

static void add(uint64_t *counter, uint64_t n)
{
    __atomic_fetch_add(counter, n, __ATOMIC_RELAXED);
}

static size_t status_slot(int status)
{
    for (size_t i = 0; i < N_STATUS; i++)
        if (status_codes[i] == status)
            return i;
    return STATUS_OTHER;
}

/* Most requests and flushes are fast, so the scan from the smallest bound
 * ends early. */
static size_t bucket_slot(const struct histogram_shape *h, uint64_t duration_us)
{
    size_t i = 0;

    while (i < h->n && duration_us > h->bound_us[i])
        i++;
    return i;
}

struct smq_metrics *metrics_new(void)
{
    /* aligned_alloc wants a size that is a multiple of the alignment;
     * sizeof already is, because the first member is aligned to 64. */
    struct smq_metrics *m = aligned_alloc(64, sizeof *m);

    if (m == NULL)
        return NULL;
    *m = (struct smq_metrics){0};
    if (pthread_mutex_init(&m->denied.lock, NULL) != 0) {
        free(m);
        return NULL;
    }
    return m;
}

void metrics_free(struct smq_metrics *m)
{
    if (m == NULL)
        return;
    pthread_mutex_destroy(&m->denied.lock);
    free(m);
}

void metrics_request_started(struct smq_metrics *m)
{
    if (m != NULL)
        __atomic_fetch_add(&m->in_flight, 1, __ATOMIC_RELAXED);
}

void metrics_request_done(struct smq_metrics *m, enum mns_action a, int status,
                          uint64_t duration_us)
{
    struct action_stats *s;

    if (m == NULL)
        return;
    if ((int)a < 0 || a >= MNS__ACTION_COUNT)
        a = MNS_UNKNOWN;
    s = &m->actions[a];
    add(&s->by_status[status_slot(status)], 1);
    add(&s->buckets[bucket_slot(&request_shape, duration_us)], 1);
    add(&s->sum_us, duration_us);
    __atomic_fetch_sub(&m->in_flight, 1, __ATOMIC_RELAXED);
}

void metrics_throttled(struct smq_metrics *m, enum smq_limit_scope scope)
{
    if (m != NULL && scope > SMQ_LIMIT_NONE && scope < SMQ_LIMIT__COUNT)
        add(&m->throttled[scope], 1);
}

void metrics_connection_refused(struct smq_metrics *m, enum connlimit_verdict cap)
{
    if (m != NULL && cap > CONNLIMIT_ADMITTED && cap <= CONNLIMIT_OVER_PER_IP)
        add(&m->conn_refused[cap], 1);
}

void metrics_connections_open(struct smq_metrics *m, int delta)
{
    if (m != NULL)
        __atomic_add_fetch(&m->conn_open, delta, __ATOMIC_RELAXED);
}

/* The row of (key, a), made if there is room; the last row is kept for
 * every (key, a) that finds none. */
static struct denied_row *denied_row(struct denied_table *t, const char *key, enum mns_action a)
{
    struct denied_row *r;

    if (strlen(key) > SMQ_KEY_ID_MAX)
        key = DENIED_OTHER_KEY;
    for (size_t i = 0; i < t->n; i++)
        if (t->rows[i].action == a && strcmp(t->rows[i].key, key) == 0)
            return &t->rows[i];
    if (t->n == DENIED_ROWS - 1) {
        key = DENIED_OTHER_KEY;
        a = MNS_UNKNOWN;
    }
    if (t->n == DENIED_ROWS)
        return &t->rows[DENIED_ROWS - 1];
    r = &t->rows[t->n++];
    snprintf(r->key, sizeof r->key, "%s", key);
    r->action = a;
    r->n = 0;
    return r;
}

void metrics_access_denied(struct smq_metrics *m, const char *access_key_id, enum mns_action a)
{
    if (m == NULL || access_key_id == NULL)
        return;
    if ((int)a < 0 || a >= MNS__ACTION_COUNT)
        a = MNS_UNKNOWN;
    pthread_mutex_lock(&m->denied.lock);
    denied_row(&m->denied, access_key_id, a)->n++;
    pthread_mutex_unlock(&m->denied.lock);
}

void metrics_wal_flush(struct smq_metrics *m, uint64_t duration_us, bool failed)
{
    if (m == NULL)
        return;
    add(&m->flushes.buckets[bucket_slot(&flush_shape, duration_us)], 1);
    add(&m->flushes.sum_us, duration_us);
    if (failed)
        add(&m->flushes.failures, 1);
}

/* ---- rendering (admin thread) ------------------------------------------------- */

static uint64_t load(const uint64_t *counter)
{
    return __atomic_load_n(counter, __ATOMIC_RELAXED);
}

static void render_requests(struct smq_metrics *m, struct smq_buf *out)
{
    buf_puts(out, "# HELP smqd_http_requests_total MNS API requests answered, by action and "
                  "HTTP status.\n"
                  "# TYPE smqd_http_requests_total counter\n");
    for (int a = 0; a < MNS__ACTION_COUNT; a++) {
        for (size_t i = 0; i <= N_STATUS; i++) {
            uint64_t n = load(&m->actions[a].by_status[i]);
            if (n == 0)
                continue;
            buf_printf(out, "smqd_http_requests_total{action=\"%s\",code=\"", mns_action_name(a));
            if (i == STATUS_OTHER)
                buf_puts(out, "other");
            else
                buf_printf(out, "%d", status_codes[i]);
            buf_printf(out, "\"} %" PRIu64 "\n", n);
        }
    }
}

/* Observations in a histogram's buckets (h->n + 1 of them, not cumulative). */
static uint64_t histogram_total(const struct histogram_shape *h, const uint64_t *buckets)
{
    uint64_t total = 0;

    for (size_t i = 0; i <= h->n; i++)
        total += load(&buckets[i]);
    return total;
}

/* name's _bucket rows (cumulative), _sum and _count; label is "" or one
 * label pair (action="x") put before le. */
static void render_histogram(struct smq_buf *out, const char *name, const char *label,
                             const struct histogram_shape *h, const uint64_t *buckets,
                             const uint64_t *sum_us_counter)
{
    uint64_t cumulative = 0, sum_us = load(sum_us_counter);
    const char *sep = label[0] != '\0' ? "," : "";

    for (size_t i = 0; i <= h->n; i++) {
        cumulative += load(&buckets[i]);
        buf_printf(out, "%s_bucket{%s%sle=\"%s\"} %" PRIu64 "\n", name, label, sep,
                   i < h->n ? h->bound_le[i] : "+Inf", cumulative);
    }
    /* Integer formatting: exact, and no locale can turn the point into a comma. */
    if (label[0] != '\0')
        buf_printf(out, "%s_sum{%s} %" PRIu64 ".%06" PRIu64 "\n%s_count{%s} %" PRIu64 "\n",
                   name, label, sum_us / 1000000, sum_us % 1000000, name, label, cumulative);
    else
        buf_printf(out, "%s_sum %" PRIu64 ".%06" PRIu64 "\n%s_count %" PRIu64 "\n", name,
                   sum_us / 1000000, sum_us % 1000000, name, cumulative);
}

/* One action's histogram; nothing if it had no request. */
static void render_histogram_of(const struct action_stats *s, const char *action,
                                struct smq_buf *out)
{
    char label[64];

    if (histogram_total(&request_shape, s->buckets) == 0)
        return;
    snprintf(label, sizeof label, "action=\"%s\"", action);
    render_histogram(out, "smqd_http_request_duration_seconds", label, &request_shape,
                     s->buckets, &s->sum_us);
}

static void render_durations(struct smq_metrics *m, struct smq_buf *out)
{
    buf_puts(out, "# HELP smqd_http_request_duration_seconds Time from request line to "
                  "response, by action; receives include their long-poll wait.\n"
                  "# TYPE smqd_http_request_duration_seconds histogram\n");
    for (int a = 0; a < MNS__ACTION_COUNT; a++)
        render_histogram_of(&m->actions[a], mns_action_name(a), out);
}

static void render_gauge_and_throttled(struct smq_metrics *m, struct smq_buf *out)
{
    buf_printf(out, "# HELP smqd_http_requests_in_flight MNS API requests begun and not yet "
                    "answered (parked long polls included).\n"
                    "# TYPE smqd_http_requests_in_flight gauge\n"
                    "smqd_http_requests_in_flight %" PRId64 "\n",
               __atomic_load_n(&m->in_flight, __ATOMIC_RELAXED));
    buf_puts(out, "# HELP smqd_throttled_requests_total Requests refused with QpsLimitExceeded, "
                  "by the limit that refused them.\n"
                  "# TYPE smqd_throttled_requests_total counter\n");
    for (int s = SMQ_LIMIT_NONE + 1; s < SMQ_LIMIT__COUNT; s++)
        buf_printf(out, "smqd_throttled_requests_total{scope=\"%s\"} %" PRIu64 "\n",
                   ratelimit_scope_name(s), load(&m->throttled[s]));
}

/* Named by the setting that refused them, so an alert says what to raise. */
static void render_connections(struct smq_metrics *m, struct smq_buf *out)
{
    buf_printf(out, "# HELP smqd_connections_open MNS API connections open (each waiting "
                    "long poll holds one); at [limits] max_connections new ones wait to be "
                    "accepted.\n"
                    "# TYPE smqd_connections_open gauge\n"
                    "smqd_connections_open %" PRId64 "\n",
               __atomic_load_n(&m->conn_open, __ATOMIC_RELAXED));
    buf_puts(out, "# HELP smqd_connections_refused_total New connections closed at once, by the "
                  "cap that refused them.\n"
                  "# TYPE smqd_connections_refused_total counter\n");
    buf_printf(out, "smqd_connections_refused_total{cap=\"max_connections\"} %" PRIu64 "\n",
               load(&m->conn_refused[CONNLIMIT_OVER_TOTAL]));
    buf_printf(out, "smqd_connections_refused_total{cap=\"max_connections_per_ip\"} %" PRIu64 "\n",
               load(&m->conn_refused[CONNLIMIT_OVER_PER_IP]));
}

/* Only once a flush happened: with sync = normal there is no syncer. */
static void render_flushes(struct smq_metrics *m, struct smq_buf *out)
{
    if (histogram_total(&flush_shape, m->flushes.buckets) == 0)
        return;
    buf_puts(out, "# HELP smqd_wal_flush_duration_seconds fdatasync of the write-ahead log "
                  "by the syncer (sync = full); every acknowledged write waits for one.\n"
                  "# TYPE smqd_wal_flush_duration_seconds histogram\n");
    render_histogram(out, "smqd_wal_flush_duration_seconds", "", &flush_shape,
                     m->flushes.buckets, &m->flushes.sum_us);
    buf_printf(out, "# HELP smqd_wal_flush_failures_total Failed flushes of the write-ahead "
                    "log; after the first, every request is refused until a restart.\n"
                    "# TYPE smqd_wal_flush_failures_total counter\n"
                    "smqd_wal_flush_failures_total %" PRIu64 "\n",
               load(&m->flushes.failures));
}

/* Always present (maybe without rows), so an alert on it has a series to
 * start from. */
static void render_denied(struct smq_metrics *m, struct smq_buf *out)
{
    buf_puts(out, "# HELP smqd_access_denied_total Requests refused with AccessDenied because "
                  "the access key has no grant for them, by access key id and action.\n"
                  "# TYPE smqd_access_denied_total counter\n");
    pthread_mutex_lock(&m->denied.lock);
    for (size_t i = 0; i < m->denied.n; i++) {
        const struct denied_row *r = &m->denied.rows[i];
        buf_printf(out, "smqd_access_denied_total{access_key_id=\"%s\",action=\"%s\"} %" PRIu64
                   "\n", r->key, mns_action_name(r->action), r->n);
    }
    pthread_mutex_unlock(&m->denied.lock);
}

int metrics_render(struct smq_metrics *m, struct smq_buf *out)
{
    render_requests(m, out);
    render_durations(m, out);
    render_gauge_and_throttled(m, out);
    render_connections(m, out);
    render_denied(m, out);
    render_flushes(m, out);
    return buf_failed(out) ? SMQ_E_NOMEM : 0;
}
