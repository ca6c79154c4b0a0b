/*
 * pg_peek.h — for the PostgreSQL unit tests: statements on the test's own
 * connection (its independent view of the database), failing the cmocka
 * case on any error.  Include after <cmocka.h>.
 */
#ifndef SMQD_TEST_PG_PEEK_H
#define SMQD_TEST_PG_PEEK_H

#include <stdlib.h>

#include <libpq-fe.h>

/* Runs sql; any result but a command or a row set fails the case. */
static inline void pg_peek_exec(PGconn *c, const char *sql)
{
    PGresult *r = PQexec(c, sql);

    if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK)
        fail_msg("%s: %s", sql, PQerrorMessage(c));
    PQclear(r);
}

/* The one integer sql answers; anything else fails the case. */
static inline long long pg_peek_int(PGconn *c, const char *sql)
{
    PGresult *r = PQexec(c, sql);
    long long v = -1;

    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
        v = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    else
        fail_msg("%s: %s", sql, PQerrorMessage(c));
    PQclear(r);
    return v;
}

#endif
