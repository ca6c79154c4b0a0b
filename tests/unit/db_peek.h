/*
 * db_peek.h — for the unit tests: the first integer a query returns from a
 * database file, read through a connection of the test's own (read-only),
 * so a test sees what is on disk, not what the code under test holds.
 * Include after cmocka.h and sqlite3.h.
 */
#ifndef SMQD_TEST_DB_PEEK_H
#define SMQD_TEST_DB_PEEK_H

/* -1 when the query returns no row. */
static inline long long db_peek_int(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    long long v = -1;

    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    if (sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

#endif
