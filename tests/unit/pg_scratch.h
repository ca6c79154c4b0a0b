/*
 * pg_scratch.h — for the unit tests: a PostgreSQL schema of one test's own,
 * in the database the test run was given, and a dsn that works in it.
 *
 * The database is named by SMQD_TEST_PG_DSN (a libpq conninfo string) or by
 * the file SMQD_TEST_PG_DIR/dsn that tests/pg/pg-server.sh writes (ctest's
 * fixture "pg": the port is known only once the server started).
 * Each scratch gets a schema s_<pid>_<n>; the dsn sets search_path to it, so
 * the store creates its tables there and the cases cannot see each other.
 */
#ifndef SMQD_TEST_PG_SCRATCH_H
#define SMQD_TEST_PG_SCRATCH_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libpq-fe.h>

struct pg_scratch {
    char schema[64];
    char dsn[2400];             /* the base dsn with the schema's search_path */
    bool made;
};

/* The base dsn of the run in out ("" when none was given). */
static inline void pg_scratch_base(char *out, size_t size)
{
    const char *dsn = getenv("SMQD_TEST_PG_DSN"), *dir = getenv("SMQD_TEST_PG_DIR");
    char file[512];
    FILE *f;

    out[0] = '\0';
    if (dsn != NULL && dsn[0] != '\0') {
        snprintf(out, size, "%s", dsn);
        return;
    }
    if (dir == NULL || dir[0] == '\0')
        return;
    snprintf(file, sizeof file, "%s/dsn", dir);
    if ((f = fopen(file, "r")) == NULL)
        return;
    if (fgets(out, (int)size, f) == NULL)
        out[0] = '\0';
    out[strcspn(out, "\n")] = '\0';
    fclose(f);
}

static inline bool pg_scratch_available(void)
{
    char base[2048];

    pg_scratch_base(base, sizeof base);
    return base[0] != '\0';
}

/* Runs one statement on the base database.  0 or -1 (the error printed). */
static inline int pg_scratch_exec(const char *sql)
{
    char base[2048];
    PGconn *c;
    PGresult *r = NULL;
    int rc = -1;

    pg_scratch_base(base, sizeof base);
    c = PQconnectdb(base);
    if (PQstatus(c) == CONNECTION_OK) {
        PQclear(PQexec(c, "SET client_min_messages = warning"));  /* no "drop cascades" lists */
        r = PQexec(c, sql);
        rc = PQresultStatus(r) == PGRES_COMMAND_OK ? 0 : -1;
    }
    if (rc != 0)
        fprintf(stderr, "pg_scratch: %s: %s", sql, PQerrorMessage(c));
    PQclear(r);
    PQfinish(c);
    return rc;
}

static inline int pg_scratch_create(struct pg_scratch *p)
{
    static unsigned counter;
    char base[2048], sql[256];

    memset(p, 0, sizeof *p);
    pg_scratch_base(base, sizeof base);
    if (base[0] == '\0')
        return -1;
    snprintf(p->schema, sizeof p->schema, "s_%ld_%u", (long)getpid(), counter++);
    snprintf(sql, sizeof sql, "DROP SCHEMA IF EXISTS %s CASCADE; CREATE SCHEMA %s", p->schema,
             p->schema);
    if (pg_scratch_exec(sql) != 0)
        return -1;
    snprintf(p->dsn, sizeof p->dsn, "%s options='-c search_path=%s -c client_min_messages=warning'",
             base, p->schema);
    p->made = true;
    return 0;
}

/* Drops the schema and everything in it (a no-op when none was made). */
static inline void pg_scratch_drop(struct pg_scratch *p)
{
    char sql[256];

    if (!p->made)
        return;
    snprintf(sql, sizeof sql, "DROP SCHEMA IF EXISTS %s CASCADE", p->schema);
    (void)pg_scratch_exec(sql);
    p->made = false;
}

#endif
