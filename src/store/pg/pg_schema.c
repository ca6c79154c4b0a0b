/*
 * pg_schema.c — owns the PostgreSQL backend's schema (pg_store.h): the
 * tables and functions of the shared contract (docs/architecture.md, "The
 * PostgreSQL backend"), their creation and migration in one transaction,
 * and the refusal of a newer or a foreign database.
 *
 * The version is the one row of smq_schema.  Every pending step and the
 * version bump run in one transaction behind a transaction-scoped advisory
 * lock, so two nodes starting at once on an empty database do not both
 * create it (the second waits, then finds the version and does nothing),
 * and a crash mid-migration leaves the old version intact.  Refusals are
 * decided by reads only, and that transaction is rolled back: the database
 * is left untouched.  Names are unqualified: the search_path decides.
 */
#include "pg_store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "smqd/errors.h"

#define PG_SCHEMA_VERSION 4
/* Any fixed number: it only has to be the same for every smqd. */
#define PG_MIGRATE_LOCK "SELECT pg_advisory_xact_lock(7235108310347141)"

/* Version 1.  Plain CREATE (not IF NOT EXISTS): a step only runs on a
 * database below its version, and a clash means foreign tables. */
static const char schema_v1[] =
    "CREATE TABLE smq_schema(version int NOT NULL);"
    "CREATE TABLE smq_meta(key text PRIMARY KEY, value bytea NOT NULL);"
    "CREATE TABLE smq_queue(id bigint PRIMARY KEY, name text UNIQUE NOT NULL,"
    " create_s bigint NOT NULL, modify_s bigint NOT NULL, delay_s bigint NOT NULL,"
    " max_msg_size bigint NOT NULL, retention_s bigint NOT NULL,"
    " visibility_s bigint NOT NULL, polling_wait_s bigint NOT NULL, logging int NOT NULL,"
    " dlq_enabled int NOT NULL, dlq_target text NOT NULL, dlq_max_receive bigint NOT NULL);"
    "CREATE TABLE smq_msg(queue_id bigint NOT NULL, seq bigint NOT NULL,"
    " priority int NOT NULL, enqueue_ms bigint NOT NULL, first_dequeue_ms bigint NOT NULL,"
    " visible_ms bigint NOT NULL, expire_ms bigint NOT NULL, dequeue_count bigint NOT NULL,"
    " handle_gen bigint NOT NULL, src_queue_id bigint NOT NULL,"
    " PRIMARY KEY (queue_id, seq));"
    "CREATE TABLE smq_body(seq bigint PRIMARY KEY, body bytea NOT NULL, md5 bytea,"
    " ext bytea);"
    "CREATE TABLE smq_lease(id int PRIMARY KEY CHECK (id = 1), holder_node text,"
    " holder_token text, epoch bigint NOT NULL DEFAULT 0,"
    " expires_at timestamptz NOT NULL DEFAULT '-infinity',"
    " takeovers bigint NOT NULL DEFAULT 0);"
    "INSERT INTO smq_lease(id) VALUES (1);"
    /* The fence every commit runs first (store_fence): FOR KEY SHARE is
     * held to COMMIT, so a takeover's FOR UPDATE waits for it. */
    "CREATE FUNCTION smq_fence(tok text, ep bigint) RETURNS void LANGUAGE plpgsql AS $f$"
    " BEGIN"
    "  PERFORM 1 FROM smq_lease WHERE id = 1 AND holder_token = tok AND epoch = ep"
    "   AND expires_at > clock_timestamp() FOR KEY SHARE;"
    "  IF NOT FOUND THEN"
    "   RAISE EXCEPTION 'smqd: lease lost (epoch %)', ep USING ERRCODE = 'SMQF1';"
    "  END IF;"
    " END $f$;"
    /* A buffered UPDATE cannot report a missing row to its caller; this
     * aborts the whole transaction instead (memory and database diverged). */
    "CREATE FUNCTION smq_expect_row(n bigint, what text) RETURNS void LANGUAGE plpgsql AS $f$"
    " BEGIN"
    "  IF n = 0 THEN"
    "   RAISE EXCEPTION 'smqd: % found no row', what USING ERRCODE = 'SMQE1';"
    "  END IF;"
    " END $f$;";

/* Version 2: topics (docs/protocol.md §13), the same tables as SQLite's
 * schema 5: topics, their subscriptions (UNIQUE per topic), the published
 * messages kept for pending notifications (metadata apart from bodies)
 * and the notifications.  New tables only: nothing of version 1 changes. */
static const char schema_v2[] =
    "CREATE TABLE smq_topic(id bigint PRIMARY KEY, name text UNIQUE NOT NULL,"
    " create_s bigint NOT NULL, modify_s bigint NOT NULL, max_msg_size bigint NOT NULL,"
    " logging int NOT NULL);"
    "CREATE TABLE smq_subscription(id bigint PRIMARY KEY, topic_id bigint NOT NULL,"
    " name text NOT NULL, endpoint text NOT NULL, filter_tag text NOT NULL,"
    " strategy int NOT NULL, format int NOT NULL, dlq_enabled int NOT NULL,"
    " dlq_target text NOT NULL, create_s bigint NOT NULL, modify_s bigint NOT NULL,"
    " UNIQUE (topic_id, name));"
    "CREATE TABLE smq_tmsg(seq bigint PRIMARY KEY, topic_id bigint NOT NULL,"
    " publish_ms bigint NOT NULL, tag text NOT NULL, md5 bytea NOT NULL,"
    " body_len bigint NOT NULL);"
    "CREATE INDEX smq_tmsg_topic ON smq_tmsg(topic_id);"
    "CREATE TABLE smq_tmsg_body(seq bigint PRIMARY KEY, body bytea NOT NULL);"
    "CREATE TABLE smq_notif(sub_id bigint NOT NULL, seq bigint NOT NULL,"
    " attempts bigint NOT NULL, due_ms bigint NOT NULL, strategy int NOT NULL,"
    " PRIMARY KEY (sub_id, seq));";

/* Version 3: the push signing key smqd made at first start and its
 * self-signed certificate (docs/protocol.md §13.11), the same table as
 * SQLite's schema 6: at most one row, so every node signs with one key. */
static const char schema_v3[] =
    "CREATE TABLE smq_signing_key(id int PRIMARY KEY CHECK (id = 1), key_pem text NOT NULL,"
    " cert_pem text NOT NULL);";

/* Version 4: smq_notif keyed by (seq, sub_id), message first, as SQLite's
 * schema 7 and for the same reason: a publish's rows, one per subscription
 * of one message, go into adjacent index pages instead of one page per
 * subscription.  An unsubscribe and a topic's delete find their rows
 * through the topic's published messages (pg_stmt.c). */
static const char schema_v4[] =
    "ALTER TABLE smq_notif DROP CONSTRAINT smq_notif_pkey, ADD PRIMARY KEY (seq, sub_id);";

/* migrations[v - 1] upgrades version v - 1 to v. */
static const char *const migrations[PG_SCHEMA_VERSION] = {
    schema_v1,
    schema_v2,
    schema_v3,
    schema_v4,
};

static void set_err(char *err, size_t err_size, const char *what, PGconn *conn)
{
    snprintf(err, err_size, "PostgreSQL: %s: %s", what, PQerrorMessage(conn));
    err[strcspn(err, "\n")] = '\0';
}

static int exec_ok(PGconn *conn, const char *sql, const char *what, char *err, size_t err_size)
{
    PGresult *r = PQexec(conn, sql);
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;

    PQclear(r);
    if (!ok)
        set_err(err, err_size, what, conn);
    return ok ? 0 : SMQ_E_INTERNAL;
}

/* One integer from a one-row query; -1 with err on failure. */
static long long query_int(PGconn *conn, const char *sql, char *err, size_t err_size)
{
    PGresult *r = PQexec(conn, sql);
    long long v = -1;

    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 && !PQgetisnull(r, 0, 0))
        v = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    else
        set_err(err, err_size, sql, conn);
    PQclear(r);
    return v;
}

/* The schema's version: 0 for an empty schema; -1 (err set) to refuse. */
static long long read_version(PGconn *conn, char *err, size_t err_size)
{
    long long has = query_int(conn, "SELECT count(*) FROM pg_class WHERE relname = 'smq_schema'"
                              " AND relnamespace = current_schema()::regnamespace", err, err_size);
    long long tables, version;

    if (has < 0)
        return -1;
    if (has == 0) {
        tables = query_int(conn, "SELECT count(*) FROM pg_tables"
                           " WHERE schemaname = current_schema()", err, err_size);
        if (tables > 0)
            snprintf(err, err_size, "PostgreSQL: database %s is not an smqd database (%lld "
                     "tables but no smq_schema); refusing to use it", PQdb(conn), tables);
        return tables == 0 ? 0 : -1;
    }
    version = query_int(conn, "SELECT max(version) FROM smq_schema", err, err_size);
    if (version > PG_SCHEMA_VERSION) {
        snprintf(err, err_size, "PostgreSQL: the database was created by a newer smqd (schema "
                 "version %lld, this smqd knows %d); refusing to use it", version,
                 PG_SCHEMA_VERSION);
        return -1;
    }
    if (version < 1 && err[0] == '\0')
        snprintf(err, err_size, "PostgreSQL: smq_schema holds no valid version; refusing");
    return version < 1 ? -1 : version;
}

static int apply(PGconn *conn, long long version, char *err, size_t err_size)
{
    char sql[64];

    for (long long v = version + 1; v <= PG_SCHEMA_VERSION; v++) {
        if (exec_ok(conn, migrations[v - 1], "schema migration", err, err_size) != 0)
            return SMQ_E_INTERNAL;
    }
    if (version == PG_SCHEMA_VERSION)
        return 0;
    snprintf(sql, sizeof sql, "DELETE FROM smq_schema; INSERT INTO smq_schema VALUES (%d)",
             PG_SCHEMA_VERSION);
    return exec_ok(conn, sql, "schema version", err, err_size);
}

int pg_schema_migrate(PGconn *conn, char *err, size_t err_size)
{
    long long version;
    int rc = SMQ_E_INTERNAL;

    err[0] = '\0';
    if (exec_ok(conn, "BEGIN", "BEGIN", err, err_size) != 0)
        return SMQ_E_INTERNAL;
    if (exec_ok(conn, PG_MIGRATE_LOCK, "migration lock", err, err_size) != 0)
        goto out;
    version = read_version(conn, err, err_size);
    if (version < 0)
        goto out;
    if (apply(conn, version, err, err_size) != 0)
        goto out;
    rc = exec_ok(conn, "COMMIT", "COMMIT", err, err_size);
out:
    if (rc != 0)
        PQclear(PQexec(conn, "ROLLBACK"));
    return rc;
}
