/*
 * sqliteq.c — smqd-peer-sqlite: the storage ceiling.  Raw SQLite (WAL,
 * synchronous=FULL) on a fresh file (--extra PATH), one thread: a
 * "lifecycle" is a send, a receive and a delete of one 1 KiB message, done
 * as three transactions of --batch K messages each (K sends; commit; K
 * receives; commit; K deletes; commit).  Counts lifecycles; latency is per
 * transaction.  10,000 messages are stored beforehand so the B-trees are
 * not trivially small.
 *
 * Two statement sets (--scenario):
 *   lifecycle       one table: INSERT, UPDATE of visible_at, DELETE — the
 *                   least any durable queue on SQLite does per message;
 *   smqd-lifecycle  smqd's own statements on smqd's two tables (the row and
 *                   the body, docs/architecture.md): INSERT both; UPDATE the
 *                   row and SELECT the body; DELETE both.
 * Every statement numbers its parameters the same way (?1 queue, ?2 id,
 * ?3 body, ?4 its MD5, ?5 a timestamp, ?6 a count), so one binder serves
 * both sets.  At the end it prints the ROW and a line "COUNT N", the
 * lifecycles done (bench/floor.sh divides instruction counts by it).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "pc.h"

#define PREFILL 10000
#define MAX_STMTS 2                  /* statements per step */

enum step { SEND, RECEIVE, DELETE, STEPS };

struct scheme {
    const char *scenario;
    const char *schema;
    const char *sql[STEPS][MAX_STMTS];   /* NULL: none */
};

static const struct scheme schemes[] = {
    { "lifecycle",
      "CREATE TABLE q(id INTEGER PRIMARY KEY, body BLOB NOT NULL, "
      "visible_at INTEGER NOT NULL, receipt INTEGER)",
      { [SEND] = { "INSERT INTO q(id, body, visible_at) VALUES(?2, ?3, 0)" },
        [RECEIVE] = { "UPDATE q SET visible_at = ?5, receipt = ?6 WHERE id = ?2" },
        [DELETE] = { "DELETE FROM q WHERE id = ?2" } } },
    { "smqd-lifecycle",
      "PRAGMA auto_vacuum=INCREMENTAL;"
      "CREATE TABLE msg(queue_id INTEGER NOT NULL, seq INTEGER NOT NULL, "
      "priority INTEGER NOT NULL, enqueue_ms INTEGER NOT NULL, "
      "first_dequeue_ms INTEGER NOT NULL, visible_ms INTEGER NOT NULL, "
      "expire_ms INTEGER NOT NULL, dequeue_count INTEGER NOT NULL, "
      "handle_gen INTEGER NOT NULL, src_queue_id INTEGER NOT NULL DEFAULT 0, "
      "PRIMARY KEY(queue_id, seq)) WITHOUT ROWID;"
      "CREATE TABLE msg_body(seq INTEGER PRIMARY KEY, body BLOB NOT NULL, md5 BLOB, ext BLOB)",
      { [SEND] = { "INSERT INTO msg(queue_id, seq, priority, enqueue_ms, first_dequeue_ms, "
                   "visible_ms, expire_ms, dequeue_count, handle_gen, src_queue_id) "
                   "VALUES (?1, ?2, 8, ?5, 0, ?5, ?5, 0, ?6, 0)",
                   "INSERT INTO msg_body(seq, body, md5, ext) VALUES (?2, ?3, ?4, NULL)" },
        [RECEIVE] = { "UPDATE msg SET first_dequeue_ms = ?5, visible_ms = ?5, "
                      "dequeue_count = ?6, handle_gen = ?6 WHERE queue_id = ?1 AND seq = ?2",
                      "SELECT body, md5, ext FROM msg_body WHERE seq = ?2" },
        [DELETE] = { "DELETE FROM msg WHERE queue_id = ?1 AND seq = ?2",
                     "DELETE FROM msg_body WHERE seq = ?2" } } },
};

static sqlite3 *db;
static sqlite3_stmt *stmts[STEPS][MAX_STMTS];

static int run_sql(const char *sql)
{
    char *err = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
        fprintf(stderr, "sqlite: %s: %s\n", sql, err ? err : "?");
        sqlite3_free(err);
        return -1;
    }
    return 0;
}

/* Binds the parameters a statement names (below the highest, SQLite keeps
 * an unnamed slot for each number it does not use) and runs it to the end. */
static int run_stmt(sqlite3_stmt *s, int64_t id, const char *body)
{
    int n = sqlite3_bind_parameter_count(s), rc;

    for (int i = 1; i <= n; i++) {
        if (sqlite3_bind_parameter_name(s, i) == NULL)
            continue;
        switch (i) {
        case 1: sqlite3_bind_int64(s, i, 1); break;
        case 2: sqlite3_bind_int64(s, i, id); break;
        case 3: sqlite3_bind_blob(s, i, body, PC_BODY, SQLITE_STATIC); break;
        case 4: sqlite3_bind_blob(s, i, body, 16, SQLITE_STATIC); break;
        default: sqlite3_bind_int64(s, i, id * 7 + i); break;
        }
    }
    while ((rc = sqlite3_step(s)) == SQLITE_ROW)
        (void)sqlite3_column_blob(s, 0);
    sqlite3_reset(s);
    if (rc != SQLITE_DONE) {
        fprintf(stderr, "sqlite: %s\n", sqlite3_errmsg(db));
        return -1;
    }
    return 0;
}

/* One transaction: the step's statements for ids [first, end). */
static int run_step(enum step st, int64_t first, int64_t end)
{
    char body[PC_BODY];

    if (run_sql("BEGIN"))
        return -1;
    for (int64_t id = first; id < end; id++) {
        if (st == SEND)
            pc_body(body, 0, (uint64_t)id);
        for (int j = 0; j < MAX_STMTS && stmts[st][j] != NULL; j++)
            if (run_stmt(stmts[st][j], id, body))
                return -1;
    }
    return run_sql("COMMIT");
}

static int set_up(const struct scheme *sc)
{
    /* The schema first: switching to WAL writes page 1, after which an
     * auto_vacuum setting in the schema would be ignored. */
    if (run_sql(sc->schema) || run_sql("PRAGMA journal_mode=WAL") ||
        run_sql("PRAGMA synchronous=FULL"))
        return -1;
    for (int st = 0; st < STEPS; st++)
        for (int j = 0; j < MAX_STMTS && sc->sql[st][j] != NULL; j++)
            if (sqlite3_prepare_v2(db, sc->sql[st][j], -1, &stmts[st][j], NULL) != SQLITE_OK) {
                fprintf(stderr, "sqlite: set-up: %s\n", sqlite3_errmsg(db));
                return -1;
            }
    return run_step(SEND, 1, 1 + PREFILL);
}

/* Lifecycles of --batch messages until the deadline; returns how many.
 * Not inlined: floor.sh counts the instructions of this call alone. */
__attribute__((noinline)) static int64_t lifecycles(struct pc_worker *w, int64_t next)
{
    uint64_t end = pc_now_ns() + (uint64_t)(pc_o.duration_s * 1e9);
    int64_t done = 0;

    while (pc_now_ns() < end) {
        for (int st = 0; st < STEPS; st++) {
            uint64_t t0 = pc_now_ns();
            if (run_step((enum step)st, next, next + pc_o.batch))
                return -1;
            pc_lat(w, t0);
        }
        next += pc_o.batch;
        done += pc_o.batch;
    }
    return done;
}

int main(int argc, char **argv)
{
    const struct scheme *sc = NULL;
    struct pc_worker w;

    pc_parse(argc, argv, "lifecycle");
    for (size_t i = 0; i < sizeof schemes / sizeof schemes[0]; i++)
        if (strcmp(schemes[i].scenario, pc_o.scenario) == 0)
            sc = &schemes[i];
    if (pc_o.extra == NULL || sc == NULL) {
        fprintf(stderr, "sqlite: --extra PATH (a new database file) is required; "
                        "--scenario is lifecycle or smqd-lifecycle\n");
        return 2;
    }
    if (sqlite3_open(pc_o.extra, &db) != SQLITE_OK || set_up(sc))
        return 2;
    memset(&w, 0, sizeof w);
    lg_hist_reset(&w.hist);
    uint64_t start = pc_now_ns();
    int64_t done = lifecycles(&w, 1 + PREFILL);
    if (done < 0)
        return 1;
    double secs = (double)(pc_now_ns() - start) / 1e9;
    printf("ROW sqlite %s-%drow 1 %.1f %llu %llu 0\n", pc_o.scenario, pc_o.batch,
           (double)done / secs, (unsigned long long)lg_hist_quantile(&w.hist, 0.50),
           (unsigned long long)lg_hist_quantile(&w.hist, 0.99));
    printf("COUNT %lld\n", (long long)done);
    for (int st = 0; st < STEPS; st++)
        for (int j = 0; j < MAX_STMTS; j++)
            sqlite3_finalize(stmts[st][j]);
    sqlite3_close(db);
    return 0;
}
