/*
 * pg_conn.c — owns connecting to PostgreSQL (pg_conn.h): the defaults, and
 * the walk over the dsn's hosts, one host per attempt.
 */
#include "pg_conn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "smqd/clock.h"
#include "smqd/errors.h"

#define MAX_HOSTS 16
#define MAX_KEYS 64

static const char *const default_keys[] = {"connect_timeout", "keepalives", "keepalives_idle",
                                           "keepalives_interval", "keepalives_count",
                                           "tcp_user_timeout"};
static const char *const default_vals[] = {"3", "1", "5", "2", "3", "10000"};

/* A comma-separated libpq list, split in place (copy owned by the caller). */
static int split(char *list, char **out)
{
    int n = 0;

    if (list == NULL)
        return 0;
    for (char *p = list; n < MAX_HOSTS; p++) {
        out[n++] = p;
        if ((p = strchr(p, ',')) == NULL)
            break;
        *p = '\0';
    }
    return n;
}

struct conninfo {
    const char *keys[MAX_KEYS + 1], *vals[MAX_KEYS + 1];
    int n;                      /* entries before the per-host ones */
    int timeout_at;             /* index of connect_timeout; -1 when the dsn set it */
    char timeout[16];
    char *hosts, *addrs, *ports;   /* copies, split below */
    char *host[MAX_HOSTS], *addr[MAX_HOSTS], *port[MAX_HOSTS];
    int nhost, naddr, nport;
};

static void add(struct conninfo *ci, const char *key, const char *val)
{
    for (int i = 0; i < ci->n; i++)
        if (strcmp(ci->keys[i], key) == 0) {
            ci->vals[i] = val;          /* the dsn overrides a default */
            return;
        }
    if (ci->n < MAX_KEYS - 4) {
        ci->keys[ci->n] = key;
        ci->vals[ci->n++] = val;
    }
}

/* The dsn's settings after the defaults; its host lists kept apart. */
static int parse(PQconninfoOption *opts, struct conninfo *ci)
{
    for (size_t i = 0; i < sizeof default_keys / sizeof default_keys[0]; i++)
        add(ci, default_keys[i], default_vals[i]);
    ci->timeout_at = 0;                 /* default_keys[0] */
    for (PQconninfoOption *o = opts; o->keyword != NULL; o++) {
        if (strcmp(o->keyword, "connect_timeout") == 0 && o->val != NULL && o->val[0] != '\0')
            ci->timeout_at = -1;
        if (o->val == NULL || o->val[0] == '\0' || strcmp(o->keyword, "application_name") == 0)
            continue;
        if (strcmp(o->keyword, "host") == 0)
            ci->hosts = strdup(o->val);
        else if (strcmp(o->keyword, "hostaddr") == 0)
            ci->addrs = strdup(o->val);
        else if (strcmp(o->keyword, "port") == 0)
            ci->ports = strdup(o->val);
        else
            add(ci, o->keyword, o->val);
    }
    ci->nhost = split(ci->hosts, ci->host);
    ci->naddr = split(ci->addrs, ci->addr);
    ci->nport = split(ci->ports, ci->port);
    return ci->nhost > ci->naddr ? ci->nhost : ci->naddr;
}

/* Our connect_timeout, cut to what is left before the deadline. */
static void fit_timeout(struct conninfo *ci, uint64_t deadline_us)
{
    uint64_t now = clock_mono_us(), left_s;

    if (deadline_us == 0 || ci->timeout_at < 0)
        return;
    left_s = deadline_us > now ? (deadline_us - now + 999999) / 1000000 : 1;
    snprintf(ci->timeout, sizeof ci->timeout, "%llu",
             (unsigned long long)(left_s < 3 ? left_s : 3));
    ci->vals[ci->timeout_at] = ci->timeout;
}

/* Host i of the list alone: its host, hostaddr and port. */
static PGconn *connect_host(struct conninfo *ci, int i, const char *app_name)
{
    int n = ci->n;

    if (i < ci->nhost) {
        ci->keys[n] = "host";
        ci->vals[n++] = ci->host[i];
    }
    if (i < ci->naddr) {
        ci->keys[n] = "hostaddr";
        ci->vals[n++] = ci->addr[i];
    }
    if (ci->nport > 0) {
        ci->keys[n] = "port";
        ci->vals[n++] = ci->port[ci->nport == 1 ? 0 : i < ci->nport ? i : ci->nport - 1];
    }
    ci->keys[n] = "application_name";
    ci->vals[n++] = app_name;
    ci->keys[n] = NULL;
    ci->vals[n] = NULL;
    return PQconnectdbParams(ci->keys, ci->vals, 0);
}

/* err gets "reason; reason; ..." on one line. */
static void note(char *err, size_t err_size, PGconn *conn)
{
    size_t used = strlen(err);
    const char *msg = conn != NULL ? PQerrorMessage(conn) : "out of memory";

    if (used > 0 && used + 2 < err_size)
        used += (size_t)snprintf(err + used, err_size - used, "; ");
    for (const char *m = msg; *m != '\0' && used + 1 < err_size; m++)
        err[used++] = *m == '\n' || *m == '\t' ? ' ' : *m;
    while (used > 0 && err[used - 1] == ' ')
        used--;
    err[used] = '\0';
}

int pg_conn_open(const char *dsn, const char *app_name, uint64_t deadline_us, int *last_host,
                 PGconn **out, char *err, size_t err_size)
{
    char *perr = NULL;
    PQconninfoOption *opts = PQconninfoParse(dsn, &perr);
    struct conninfo ci = {.n = 0};
    int n, rc = SMQ_E_INTERNAL;

    *out = NULL;
    err[0] = '\0';
    if (opts == NULL) {
        snprintf(err, err_size, "the dsn is not a libpq connection string: %s",
                 perr != NULL ? perr : "out of memory");
        err[strcspn(err, "\n")] = '\0';
        PQfreemem(perr);
        return SMQ_E_INTERNAL;
    }
    n = parse(opts, &ci);
    for (int k = 0; k < (n > 0 ? n : 1) && rc != 0; k++) {
        int i = n > 0 ? (*last_host + k) % n : 0;
        PGconn *conn;

        if (k > 0 && deadline_us != 0 && clock_mono_us() >= deadline_us)
            break;
        fit_timeout(&ci, deadline_us);
        conn = connect_host(&ci, i, app_name);

        if (conn != NULL && PQstatus(conn) == CONNECTION_OK) {
            *out = conn;
            *last_host = i;
            rc = 0;
        } else {
            note(err, err_size, conn);
            PQfinish(conn);
        }
    }
    PQconninfoFree(opts);
    free(ci.hosts);
    free(ci.addrs);
    free(ci.ports);
    return rc;
}
