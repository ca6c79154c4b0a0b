/*
 * sqliteq.c — smqd-peer-sqlite: the storage ceiling.  Raw SQLite (WAL,
 * synchronous=FULL) on a fresh file (--extra PATH), one thread: a
 * "lifecycle" is insert + update + delete of one 1 KiB row, done as three
 * transactions of --batch K rows each (K inserts; commit; K updates of
 * visible_at; commit; K deletes; commit), like send / receive / delete.
 * Counts lifecycles; latency is per transaction.  10,000 rows are left in
 * the table beforehand so the B-tree is not trivially small.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "pc.h"

#define PREFILL 10000

static sqlite3 *db;

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

static int step_reset(sqlite3_stmt *s)
{
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    if (rc != SQLITE_DONE) {
        fprintf(stderr, "sqlite: %s\n", sqlite3_errmsg(db));
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    pc_parse(argc, argv, "lifecycle");
    if (pc_o.extra == NULL) {
        fprintf(stderr, "sqlite: --extra PATH (a new database file) is required\n");
        return 2;
    }
    if (sqlite3_open(pc_o.extra, &db) != SQLITE_OK)
        return 2;
    sqlite3_stmt *ins, *upd, *del;
    if (run_sql("PRAGMA journal_mode=WAL") || run_sql("PRAGMA synchronous=FULL") ||
        run_sql("CREATE TABLE q(id INTEGER PRIMARY KEY, body BLOB NOT NULL, "
                "visible_at INTEGER NOT NULL, receipt INTEGER)") ||
        sqlite3_prepare_v2(db, "INSERT INTO q(id, body, visible_at) VALUES(?, ?, 0)", -1, &ins,
                           NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "UPDATE q SET visible_at = ?, receipt = ? WHERE id = ?", -1,
                           &upd, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "DELETE FROM q WHERE id = ?", -1, &del, NULL) != SQLITE_OK) {
        fprintf(stderr, "sqlite: set-up: %s\n", sqlite3_errmsg(db));
        return 2;
    }
    char body[PC_BODY];
    int64_t next = 1;
    if (run_sql("BEGIN"))
        return 2;
    for (int i = 0; i < PREFILL; i++, next++) {
        pc_body(body, 0, (uint64_t)next);
        sqlite3_bind_int64(ins, 1, next);
        sqlite3_bind_blob(ins, 2, body, PC_BODY, SQLITE_STATIC);
        if (step_reset(ins))
            return 2;
    }
    if (run_sql("COMMIT"))
        return 2;

    struct pc_worker w;
    memset(&w, 0, sizeof w);
    lg_hist_reset(&w.hist);
    int k = pc_o.batch;
    uint64_t start = pc_now_ns(), end = start + (uint64_t)(pc_o.duration_s * 1e9);
    uint64_t done = 0;
    while (pc_now_ns() < end) {
        int64_t first = next;
        uint64_t t0 = pc_now_ns();
        if (run_sql("BEGIN"))
            return 1;
        for (int i = 0; i < k; i++, next++) {
            pc_body(body, 0, (uint64_t)next);
            sqlite3_bind_int64(ins, 1, next);
            sqlite3_bind_blob(ins, 2, body, PC_BODY, SQLITE_STATIC);
            if (step_reset(ins))
                return 1;
        }
        if (run_sql("COMMIT"))
            return 1;
        pc_lat(&w, t0);
        t0 = pc_now_ns();
        if (run_sql("BEGIN"))
            return 1;
        for (int64_t id = first; id < next; id++) {
            sqlite3_bind_int64(upd, 1, (int64_t)t0);
            sqlite3_bind_int64(upd, 2, id * 7);
            sqlite3_bind_int64(upd, 3, id);
            if (step_reset(upd))
                return 1;
        }
        if (run_sql("COMMIT"))
            return 1;
        pc_lat(&w, t0);
        t0 = pc_now_ns();
        if (run_sql("BEGIN"))
            return 1;
        for (int64_t id = first; id < next; id++) {
            sqlite3_bind_int64(del, 1, id);
            if (step_reset(del))
                return 1;
        }
        if (run_sql("COMMIT"))
            return 1;
        pc_lat(&w, t0);
        done += (uint64_t)k;
    }
    double secs = (double)(pc_now_ns() - start) / 1e9;
    printf("ROW sqlite %s-%drow 1 %.1f %llu %llu 0\n", pc_o.scenario, k, (double)done / secs,
           (unsigned long long)lg_hist_quantile(&w.hist, 0.50),
           (unsigned long long)lg_hist_quantile(&w.hist, 0.99));
    sqlite3_finalize(ins);
    sqlite3_finalize(upd);
    sqlite3_finalize(del);
    sqlite3_close(db);
    return 0;
}
