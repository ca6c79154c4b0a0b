/*
 * pgq.c — smqd-peer-pg: a PostgreSQL table as a queue through libpq (one
 * blocking connection per thread, prepared statements).
 *   queue(id bigserial primary key, body bytea, visible_at timestamptz)
 * Producers INSERT (--batch N: N rows per INSERT, one transaction);
 * consumers DELETE ... WHERE id IN (SELECT ... FOR UPDATE SKIP LOCKED
 * LIMIT N) RETURNING body, one transaction, and poll again after 1 ms when
 * it returned nothing; one connection alone cycles insert -> delete.
 * Counts deleted rows.  --extra is the libpq conninfo (host/port/user).
 * The table is (re)created by the tool before the threads start.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "pc.h"

static const char *conninfo(void)
{
    return pc_o.extra != NULL ? pc_o.extra : "host=127.0.0.1 user=postgres dbname=postgres";
}

static PGconn *connect_db(void)
{
    char ci[512];
    snprintf(ci, sizeof ci, "%s port=%d", conninfo(), pc_o.port);
    PGconn *db = PQconnectdb(ci);
    if (PQstatus(db) != CONNECTION_OK) {
        fprintf(stderr, "pg: %s", PQerrorMessage(db));
        PQfinish(db);
        return NULL;
    }
    return db;
}

static int exec_ok(PGconn *db, const char *sql)
{
    PGresult *r = PQexec(db, sql);
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    if (!ok)
        fprintf(stderr, "pg: %s: %s", sql, PQerrorMessage(db));
    PQclear(r);
    return ok ? 0 : -1;
}

static int prepare(PGconn *db)
{
    char sql[512];
    snprintf(sql, sizeof sql,
             "INSERT INTO queue(body, visible_at) SELECT $1::bytea, now() "
             "FROM generate_series(1, %d)", pc_o.batch);
    PGresult *r = PQprepare(db, "ins", sql, 1, NULL);
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    snprintf(sql, sizeof sql,
             "DELETE FROM queue WHERE id IN (SELECT id FROM queue WHERE visible_at <= now() "
             "ORDER BY id FOR UPDATE SKIP LOCKED LIMIT %d) RETURNING body", pc_o.batch);
    r = PQprepare(db, "del", sql, 0, NULL);
    ok = ok && PQresultStatus(r) == PGRES_COMMAND_OK;
    if (!ok)
        fprintf(stderr, "pg: prepare: %s", PQerrorMessage(db));
    PQclear(r);
    return ok ? 0 : -1;
}

static int insert(struct pc_worker *w, PGconn *db, uint64_t seq)
{
    char body[PC_BODY];
    pc_body(body, w->id, seq);
    const char *vals[] = { body };
    const int lens[] = { PC_BODY }, fmts[] = { 1 };
    uint64_t t0 = pc_now_ns();
    PGresult *r = PQexecPrepared(db, "ins", 1, vals, lens, fmts, 1);
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    if (!ok)
        fprintf(stderr, "pg: insert: %s", PQerrorMessage(db));
    PQclear(r);
    if (!ok)
        return -1;
    pc_lat(w, t0);
    return 0;
}

/* Rows deleted, or -1. */
static int consume(struct pc_worker *w, PGconn *db)
{
    uint64_t t0 = pc_now_ns();
    PGresult *r = PQexecPrepared(db, "del", 0, NULL, NULL, NULL, 1);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        fprintf(stderr, "pg: delete: %s", PQerrorMessage(db));
        PQclear(r);
        return -1;
    }
    int n = PQntuples(r);
    for (int i = 0; i < n; i++)
        if (PQgetlength(r, i, 0) != PC_BODY)
            n = -1;
    PQclear(r);
    if (n > 0) {
        pc_lat(w, t0);
        pc_count(w, (uint64_t)n);
    }
    return n;
}

static void *worker(void *arg)
{
    struct pc_worker *w = arg;
    PGconn *db = connect_db();
    if (db == NULL || prepare(db) != 0) {
        w->errors++;
        PQfinish(db);
        return NULL;
    }
    uint64_t seq = 0;
    while (!atomic_load(&pc_stop)) {
        int r = 0;
        if (w->role != PC_CONSUMER)
            r = insert(w, db, seq++);
        if (r == 0 && w->role != PC_PRODUCER) {
            r = consume(w, db);
            if (r == 0)
                usleep(1000);
        }
        if (r < 0) {
            w->errors++;
            break;
        }
    }
    PQfinish(db);
    return NULL;
}

int main(int argc, char **argv)
{
    pc_parse(argc, argv, "lifecycle");
    PGconn *db = connect_db();
    if (db == NULL)
        return 2;
    if (exec_ok(db, "SET client_min_messages = warning") != 0 ||
        exec_ok(db, "DROP TABLE IF EXISTS queue") != 0 ||
        exec_ok(db, "CREATE TABLE queue(id bigserial PRIMARY KEY, body bytea, "
                    "visible_at timestamptz)") != 0) {
        PQfinish(db);
        return 2;
    }
    PQfinish(db);
    return pc_run("postgresql", worker);
}
