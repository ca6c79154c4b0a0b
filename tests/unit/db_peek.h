/*
 * db_peek.h — for the unit tests: the first integer a query returns from a
 * database, read through a connection of the test's own (read-only for a
 * file), so a test sees what is stored, not what the code under test holds.
 * Include after cmocka.h and sqlite3.h.
 *
 * A "path" of the form "pg:DSN" is a PostgreSQL database (the engine tests
 * run on both backends: engine_fixture.h): the query, written for the
 * SQLite schema, has its table names mapped to the PostgreSQL ones (msg →
 * smq_msg, msg_body → smq_body, queue → smq_queue, meta → smq_meta, and
 * the topics' topic, subscription, tmsg, tmsg_body and notif → smq_ and
 * the same name).
 */
#ifndef SMQD_TEST_DB_PEEK_H
#define SMQD_TEST_DB_PEEK_H

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

/* sql with the SQLite table names replaced by the PostgreSQL ones. */
static inline void db_peek_pg_sql(const char *sql, char *out, size_t size)
{
    static const char *const map[][2] = {{"msg_body", "smq_body"}, {"msg", "smq_msg"},
                                         {"queue", "smq_queue"}, {"meta", "smq_meta"},
                                         {"topic", "smq_topic"},
                                         {"subscription", "smq_subscription"},
                                         {"tmsg", "smq_tmsg"}, {"tmsg_body", "smq_tmsg_body"},
                                         {"notif", "smq_notif"},
                                         {"signing_key", "smq_signing_key"}};
    size_t o = 0;

    while (*sql != '\0' && o + 16 < size) {
        size_t n = 0, i;
        while (isalnum((unsigned char)sql[n]) || sql[n] == '_')
            n++;
        for (i = 0; n > 0 && i < sizeof map / sizeof map[0]; i++)
            if (strlen(map[i][0]) == n && strncmp(sql, map[i][0], n) == 0)
                break;
        if (n > 0 && i < sizeof map / sizeof map[0]) {
            o += (size_t)snprintf(out + o, size - o, "%s", map[i][1]);
        } else {
            n = n > 0 ? n : 1;
            o += (size_t)snprintf(out + o, size - o, "%.*s", (int)n, sql);
        }
        sql += n;
    }
    out[o < size ? o : size - 1] = '\0';
}

static inline long long db_peek_pg(const char *dsn, const char *sql)
{
    char q[1024];
    PGconn *c = PQconnectdb(dsn);
    PGresult *r;
    long long v = -1;

    assert_int_equal(PQstatus(c), CONNECTION_OK);
    db_peek_pg_sql(sql, q, sizeof q);
    r = PQexec(c, q);
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        fail_msg("%s: %s", q, PQerrorMessage(c));
    if (PQntuples(r) > 0 && !PQgetisnull(r, 0, 0))
        v = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    PQfinish(c);
    return v;
}

/* -1 when the query returns no row. */
static inline long long db_peek_int(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    long long v = -1;

    if (strncmp(path, "pg:", 3) == 0)
        return db_peek_pg(path + 3, sql);
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    if (sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

#endif
