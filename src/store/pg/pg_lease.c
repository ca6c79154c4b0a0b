/*
 * pg_lease.c — owns the lease's SQL and its connection (lease.h): the
 * take, renewal and release of the one smq_lease row, each statement
 * bounded by the caller's deadline.
 *
 * Why a take is safe (docs/architecture.md "Active and standby"): every
 * committing transaction of a holder runs smq_fence first, which holds FOR
 * KEY SHARE on the row until its COMMIT; the take's SELECT ... FOR UPDATE
 * conflicts with that, so it waits for any such commit to end, and the
 * new epoch it writes fails every later one.  A former holder's sessions
 * are ended first, so that a transaction stuck half-sent by a frozen
 * client cannot hold the take up; lock_timeout bounds the wait anyway.
 */
#include "smqd/lease.h"

#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "pg_conn.h"
#include "smqd/clock.h"
#include "smqd/errors.h"

/* Subtracted from every proof: covers a difference in the rate of the two
 * clocks (the node's monotonic one and the database's), which is parts per
 * million; generous on purpose. */
#define LEASE_MARGIN_US 500000

struct smq_lease {
    PGconn *conn;
    char *dsn;
    char node_id[64];
    char token[64];
    char app_name[64];          /* not the token: a takeover ends only the store's sessions */
    char ttl_ms[16];
    int ttl;
    uint64_t connects;
    int last_host;              /* the dsn's host that answered (pg_conn.h) */
};

int lease_new(const struct lease_opts *o, struct smq_lease **out)
{
    struct smq_lease *l;

    *out = NULL;
    if (o->dsn == NULL || o->node_id == NULL || o->token == NULL || o->ttl_ms <= 0 ||
        strlen(o->node_id) >= sizeof l->node_id || strlen(o->token) >= sizeof l->token)
        return SMQ_E_INVALID_ARGUMENT;
    l = calloc(1, sizeof *l);
    if (l == NULL || (l->dsn = strdup(o->dsn)) == NULL) {
        free(l);
        return SMQ_E_NOMEM;
    }
    snprintf(l->node_id, sizeof l->node_id, "%s", o->node_id);
    snprintf(l->token, sizeof l->token, "%s", o->token);
    snprintf(l->app_name, sizeof l->app_name, "smqd-lease/%.40s", o->node_id);
    snprintf(l->ttl_ms, sizeof l->ttl_ms, "%d", o->ttl_ms);
    l->ttl = o->ttl_ms;
    *out = l;
    return 0;
}

void lease_free(struct smq_lease *l)
{
    if (l == NULL)
        return;
    PQfinish(l->conn);
    free(l->dsn);
    free(l);
}

uint64_t lease_connects(const struct smq_lease *l)
{
    return l->connects;
}

static int fail(char *err, size_t err_size, const char *what, PGconn *conn)
{
    const char *why = conn != NULL ? PQerrorMessage(conn) : "";

    size_t n;

    snprintf(err, err_size, "PostgreSQL: %s%s%s", what, why[0] != '\0' ? ": " : "", why);
    /* One line: a multi-host dsn gives one line per host tried. */
    for (n = strlen(err); n > 0 && err[n - 1] == '\n'; n--)
        err[n - 1] = '\0';
    for (char *c = err; (c = strchr(c, '\n')) != NULL;)
        *c = ';';
    return SMQ_E_INTERNAL;
}

/* Drops the connection: the next call makes a new one, through the dsn's
 * hosts in order (after a PostgreSQL failover, to the new primary). */
static void drop(struct smq_lease *l)
{
    PQfinish(l->conn);
    l->conn = NULL;
}

/* Its application_name is not the holder token: a takeover ends the
 * former holder's store sessions, and this one would only be made again. */
static int connect_lease(struct smq_lease *l, uint64_t deadline_us, char *err, size_t err_size)
{
    char why[1024];
    PGresult *r;
    int rc = 0;

    if (l->conn != NULL && PQstatus(l->conn) == CONNECTION_OK)
        return 0;
    drop(l);
    l->connects++;
    if (pg_conn_open(l->dsn, l->app_name, deadline_us, &l->last_host, &l->conn, why,
                     sizeof why) != 0) {
        snprintf(err, err_size, "PostgreSQL: cannot connect: %s", why);
        return SMQ_E_INTERNAL;
    }
    /* A renewal the server acknowledged must survive its failover; a take
     * waits at most 2 s for the row (a stuck session holding it). */
    r = PQexec(l->conn, "SET synchronous_commit = on; SET lock_timeout = '2s'");
    if (PQresultStatus(r) != PGRES_COMMAND_OK)
        rc = fail(err, err_size, "cannot set synchronous_commit", l->conn);
    PQclear(r);
    if (rc != 0)
        drop(l);
    return rc;
}

/* Waits until the whole result is in, or the deadline passes. */
static int await_result(PGconn *conn, uint64_t deadline_us)
{
    struct pollfd p = {.fd = PQsocket(conn), .events = POLLIN};

    while (PQflush(conn) > 0 || PQisBusy(conn)) {
        uint64_t now = clock_mono_us();
        int ms;

        if (now >= deadline_us)
            return SMQ_E_INTERNAL;
        ms = (int)((deadline_us - now + 999) / 1000);
        p.events = PQflush(conn) > 0 ? POLLIN | POLLOUT : POLLIN;
        if (poll(&p, 1, ms) < 0 || PQconsumeInput(conn) == 0)
            return SMQ_E_INTERNAL;
    }
    return 0;
}

/*
 * One statement, bounded by deadline_us.  Returns its result (the caller
 * clears it) or NULL with err set; on a timeout or a broken connection
 * the connection is dropped.
 */
static PGresult *run(struct smq_lease *l, const char *sql, int n, const char *const *vals,
                     uint64_t deadline_us, char *err, size_t err_size)
{
    PGresult *r = NULL, *next;

    if (connect_lease(l, deadline_us, err, err_size) != 0)
        return NULL;
    if (PQsendQueryParams(l->conn, sql, n, NULL, vals, NULL, NULL, 0) == 0) {
        fail(err, err_size, "cannot send", l->conn);
        drop(l);
        return NULL;
    }
    /* Every result, each awaited with the deadline: PQgetResult blocks. */
    for (;;) {
        if (await_result(l->conn, deadline_us) != 0) {
            fail(err, err_size, "no answer in time", NULL);
            PQclear(r);
            drop(l);
            return NULL;
        }
        if ((next = PQgetResult(l->conn)) == NULL)
            break;
        PQclear(r);
        r = next;
    }
    if (r == NULL || (PQresultStatus(r) != PGRES_TUPLES_OK &&
                      PQresultStatus(r) != PGRES_COMMAND_OK)) {
        fail(err, err_size, "lease statement failed", l->conn);
        PQclear(r);
        if (PQstatus(l->conn) != CONNECTION_OK)
            drop(l);
        return NULL;
    }
    return r;
}

/* Runs a statement whose result does not matter beyond success. */
static int run_command(struct smq_lease *l, const char *sql, int n, const char *const *vals,
                       uint64_t deadline_us, char *err, size_t err_size)
{
    PGresult *r = run(l, sql, n, vals, deadline_us, err, err_size);

    if (r == NULL)
        return SMQ_E_INTERNAL;
    PQclear(r);
    return 0;
}

/* The row as it is: who holds it, whether that is still valid. */
struct lease_row {
    char token[64];
    char holder[64];
    int live;
};

static const char SQL_LOOK[] =
    "SELECT coalesce(holder_token, ''), coalesce(holder_node, ''),"
    " expires_at > clock_timestamp() FROM smq_lease WHERE id = 1";

static int read_row(PGresult *r, struct lease_row *row, char *err, size_t err_size)
{
    if (PQntuples(r) != 1) {
        snprintf(err, err_size, "PostgreSQL: the lease row is missing (not an smqd database?)");
        return SMQ_E_INTERNAL;
    }
    snprintf(row->token, sizeof row->token, "%s", PQgetvalue(r, 0, 0));
    snprintf(row->holder, sizeof row->holder, "%s", PQgetvalue(r, 0, 1));
    row->live = PQgetvalue(r, 0, 2)[0] == 't';
    return 0;
}

static int look(struct smq_lease *l, const char *sql, uint64_t deadline_us,
                struct lease_row *row, char *err, size_t err_size)
{
    PGresult *r = run(l, sql, 0, NULL, deadline_us, err, err_size);
    int rc;

    if (r == NULL)
        return SMQ_E_INTERNAL;
    rc = read_row(r, row, err, err_size);
    PQclear(r);
    return rc;
}

/* Someone else's live lease: nothing to take. */
static bool held_by_other(const struct smq_lease *l, const struct lease_row *row)
{
    return row->live && row->token[0] != '\0' && strcmp(row->token, l->token) != 0;
}

/* The timeout form (PostgreSQL 14+) waits for each session to be gone,
 * so that a takeover returns with the former holder's sessions ended,
 * not merely signalled. */
static const char SQL_TERMINATE[] =
    "SELECT pg_terminate_backend(pid, 1000) FROM pg_stat_activity"
    " WHERE application_name = $1 AND pid <> pg_backend_pid()";

/*
 * The take, one statement in autocommit, so that the server finishes it
 * whatever happens to this client after sending it (a take spread over a
 * transaction of several round trips would leave the row locked by a
 * frozen standby).  The CTE's FOR UPDATE waits for every fenced commit in
 * flight (they hold FOR KEY SHARE; the UPDATE alone would not wait), and
 * the condition is checked on the row as it is once locked.  A change of
 * holder counts as a takeover; our own new epoch does not.
 */
static const char SQL_TAKE[] =
    "WITH cur AS (SELECT holder_token, expires_at > clock_timestamp() AS live"
    " FROM smq_lease WHERE id = 1 FOR UPDATE)"
    " UPDATE smq_lease l SET holder_node = $1, holder_token = $2, epoch = l.epoch + 1,"
    " expires_at = clock_timestamp() + $3::int * interval '1 millisecond',"
    " takeovers = l.takeovers + (cur.holder_token IS NOT NULL AND cur.holder_token <> $2)::int"
    " FROM cur WHERE l.id = 1"
    " AND (NOT cur.live OR cur.holder_token IS NULL OR cur.holder_token = $2)"
    " RETURNING l.epoch, l.takeovers";

static const char SQL_RENEW[] =
    "UPDATE smq_lease SET expires_at = clock_timestamp() + $3::int * interval '1 millisecond'"
    " WHERE id = 1 AND holder_token = $1 AND epoch = $2::bigint"
    " AND expires_at > clock_timestamp() RETURNING takeovers";

static const char SQL_RELEASE[] =
    "UPDATE smq_lease SET expires_at = '-infinity'"
    " WHERE id = 1 AND holder_token = $1 AND epoch = $2::bigint";

static uint64_t proof_from(const struct smq_lease *l, uint64_t sent_us)
{
    uint64_t ttl_us = (uint64_t)l->ttl * 1000;

    return ttl_us > LEASE_MARGIN_US ? sent_us + ttl_us - LEASE_MARGIN_US : sent_us;
}

/* 0 taken, SMQ_E_SERVICE_UNAVAILABLE (another node was quicker: no row
 * matched), or SMQ_E_INTERNAL. */
static int take_now(struct smq_lease *l, uint64_t deadline_us, struct lease_grant *g,
                    char *err, size_t err_size)
{
    const char *vals[] = {l->node_id, l->token, l->ttl_ms};
    uint64_t sent_us = clock_mono_us();
    PGresult *r = run(l, SQL_TAKE, 3, vals, deadline_us, err, err_size);
    int rc = r == NULL ? SMQ_E_INTERNAL : PQntuples(r) == 1 ? 0 : SMQ_E_SERVICE_UNAVAILABLE;

    if (rc == 0) {
        g->epoch = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
        g->takeovers = strtoll(PQgetvalue(r, 0, 1), NULL, 10);
        g->proven_until_us = proof_from(l, sent_us);
        snprintf(g->holder, sizeof g->holder, "%s", l->node_id);
    }
    PQclear(r);
    return rc;
}

int lease_take(struct smq_lease *l, uint64_t deadline_us, struct lease_grant *g,
               char *err, size_t err_size)
{
    struct lease_row row;
    const char *former[1];
    char ignored[256];
    int rc = look(l, SQL_LOOK, deadline_us, &row, err, err_size);

    if (rc != 0)
        return rc;
    if (held_by_other(l, &row)) {
        snprintf(g->holder, sizeof g->holder, "%s", row.holder);
        return SMQ_E_SERVICE_UNAVAILABLE;
    }
    if (row.token[0] != '\0') {
        /* Best effort: without the right to end them, lock_timeout bounds
         * the wait for a stuck session instead. */
        former[0] = row.token;
        (void)run_command(l, SQL_TERMINATE, 1, former, deadline_us, ignored, sizeof ignored);
    }
    rc = take_now(l, deadline_us, g, err, err_size);
    if (rc == SMQ_E_SERVICE_UNAVAILABLE && look(l, SQL_LOOK, deadline_us, &row, ignored,
                                                sizeof ignored) == 0)
        snprintf(g->holder, sizeof g->holder, "%s", row.holder);   /* who was quicker */
    return rc;
}

int lease_renew(struct smq_lease *l, uint64_t deadline_us, struct lease_grant *g,
                char *err, size_t err_size)
{
    char epoch[24];
    const char *vals[] = {l->token, epoch, l->ttl_ms};
    uint64_t sent_us = clock_mono_us();
    PGresult *r;
    int rc;

    snprintf(epoch, sizeof epoch, "%lld", (long long)g->epoch);
    r = run(l, SQL_RENEW, 3, vals, deadline_us, err, err_size);
    if (r == NULL)
        return SMQ_E_INTERNAL;
    rc = PQntuples(r) == 1 ? 0 : SMQ_E_SERVICE_UNAVAILABLE;
    if (rc == 0) {
        g->takeovers = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
        g->proven_until_us = proof_from(l, sent_us);
    } else {
        snprintf(err, err_size, "the lease at epoch %lld is no longer ours", (long long)g->epoch);
    }
    PQclear(r);
    return rc;
}

int lease_release(struct smq_lease *l, int64_t epoch, uint64_t deadline_us)
{
    char ep[24], err[256];
    const char *vals[] = {l->token, ep};

    snprintf(ep, sizeof ep, "%lld", (long long)epoch);
    return run_command(l, SQL_RELEASE, 2, vals, deadline_us, err, sizeof err);
}
