/*
 * pg_stmt.c — owns the PostgreSQL backend's statements (pg_store.h): their
 * SQL and their names, prepared once per connection at open.  Below the
 * files that run them (pg_rows.c, pg_txn.c, pg_body.c): it calls none of
 * them.
 */
#include "pg_store.h"

#include <stdio.h>
#include <string.h>

#include "smqd/errors.h"

#define QUEUE_COLS "id, name, create_s, modify_s, delay_s, max_msg_size, retention_s, " \
    "visibility_s, polling_wait_s, logging, dlq_enabled, dlq_target, dlq_max_receive"
#define MSG_COLS "queue_id, seq, priority, enqueue_ms, first_dequeue_ms, visible_ms, " \
    "expire_ms, dequeue_count, handle_gen, src_queue_id"

#define TOPIC_COLS "id, name, create_s, modify_s, max_msg_size, logging"
#define SUB_COLS "id, topic_id, name, endpoint, filter_tag, strategy, format, dlq_enabled, " \
    "dlq_target, create_s, modify_s"
#define TMSG_COLS "seq, topic_id, publish_ms, tag, md5, body_len"
#define NOTIF_COLS "sub_id, seq, attempts, due_ms, strategy"

/* Parameter numbers are relied on by pg_rows.c's and pg_topic.c's builders; keep them in step.
 * UPDATEs go through smq_expect_row so that a missing row aborts the whole
 * transaction at commit (pg_schema.c). */
static const char *const stmt_sql[PS__COUNT] = {
    [PS_META_GET] = "SELECT value FROM smq_meta WHERE key = $1",
    [PS_META_SET] = "INSERT INTO smq_meta(key, value) VALUES ($1, $2) "
                    "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
    [PS_QUEUE_INSERT] = "INSERT INTO smq_queue(" QUEUE_COLS ") VALUES ($1, $2, $3, $4, $5, $6, "
                        "$7, $8, $9, $10, $11, $12, $13)",
    [PS_QUEUE_UPDATE] = "WITH u AS (UPDATE smq_queue SET modify_s = $2, delay_s = $3, "
                        "max_msg_size = $4, retention_s = $5, visibility_s = $6, "
                        "polling_wait_s = $7, logging = $8, dlq_enabled = $9, "
                        "dlq_target = $10, dlq_max_receive = $11 WHERE id = $1 RETURNING 1) "
                        "SELECT smq_expect_row((SELECT count(*) FROM u), 'queue update')",
    [PS_QUEUE_DELETE_BODIES] = "DELETE FROM smq_body WHERE seq IN "
                               "(SELECT seq FROM smq_msg WHERE queue_id = $1)",
    [PS_QUEUE_DELETE_MSGS] = "DELETE FROM smq_msg WHERE queue_id = $1",
    [PS_QUEUE_DELETE] = "DELETE FROM smq_queue WHERE id = $1",
    [PS_QUEUE_LOAD] = "SELECT " QUEUE_COLS " FROM smq_queue WHERE id > $1 ORDER BY id "
                      "LIMIT " PG_LOAD_PAGE,
    [PS_MSG_INSERT] = "INSERT INTO smq_msg(" MSG_COLS ") VALUES ($1, $2, $3, $4, $5, $6, $7, "
                      "$8, $9, $10)",
    [PS_BODY_INSERT] = "INSERT INTO smq_body(seq, body, md5, ext) VALUES ($1, $2, $3, $4)",
    [PS_MSG_UPDATE] = "WITH u AS (UPDATE smq_msg SET first_dequeue_ms = $3, visible_ms = $4, "
                      "dequeue_count = $5, handle_gen = $6 WHERE queue_id = $1 AND seq = $2 "
                      "RETURNING 1) "
                      "SELECT smq_expect_row((SELECT count(*) FROM u), 'message update')",
    [PS_MSG_MOVE] = "WITH u AS (UPDATE smq_msg SET queue_id = $1, first_dequeue_ms = $3, "
                    "visible_ms = $4, dequeue_count = $5, handle_gen = $6, expire_ms = $7, "
                    "src_queue_id = $8 WHERE queue_id = $9 AND seq = $2 RETURNING 1) "
                    "SELECT smq_expect_row((SELECT count(*) FROM u), 'message move')",
    [PS_MSG_DELETE] = "DELETE FROM smq_msg WHERE queue_id = $1 AND seq = $2",
    [PS_BODY_DELETE] = "DELETE FROM smq_body WHERE seq = $1",
    [PS_BODY_GET] = "SELECT seq, body, md5, ext FROM smq_body WHERE seq = ANY($1::int8[])",
    [PS_MSG_LOAD] = "SELECT " MSG_COLS " FROM smq_msg WHERE (queue_id, seq) > ($1, $2) "
                    "ORDER BY queue_id, seq LIMIT " PG_LOAD_PAGE,
    [PS_FENCE] = "SELECT smq_fence($1, $2)",
    [PS_TOPIC_INSERT] = "INSERT INTO smq_topic(" TOPIC_COLS ") VALUES ($1, $2, $3, $4, $5, $6)",
    [PS_TOPIC_UPDATE] = "WITH u AS (UPDATE smq_topic SET modify_s = $2, max_msg_size = $3, "
                        "logging = $4 WHERE id = $1 RETURNING 1) "
                        "SELECT smq_expect_row((SELECT count(*) FROM u), 'topic update')",
    /* A topic's delete, in this order: what names the rows to delete goes last. */
    /* Every notification's message is in smq_tmsg (it goes with the last
     * one): found by message, the key's first column, not by a scan. */
    [PS_TOPIC_DELETE_NOTIFS] = "DELETE FROM smq_notif WHERE seq IN "
                               "(SELECT seq FROM smq_tmsg WHERE topic_id = $1)",
    [PS_TOPIC_DELETE_SUBS] = "DELETE FROM smq_subscription WHERE topic_id = $1",
    [PS_TOPIC_DELETE_BODIES] = "DELETE FROM smq_tmsg_body WHERE seq IN "
                               "(SELECT seq FROM smq_tmsg WHERE topic_id = $1)",
    [PS_TOPIC_DELETE_MSGS] = "DELETE FROM smq_tmsg WHERE topic_id = $1",
    [PS_TOPIC_DELETE] = "DELETE FROM smq_topic WHERE id = $1",
    [PS_TOPIC_LOAD] = "SELECT " TOPIC_COLS " FROM smq_topic WHERE id > $1 ORDER BY id "
                      "LIMIT " PG_LOAD_PAGE,
    [PS_SUB_INSERT] = "INSERT INTO smq_subscription(" SUB_COLS ") VALUES ($1, $2, $3, $4, $5, "
                      "$6, $7, $8, $9, $10, $11)",
    [PS_SUB_UPDATE] = "WITH u AS (UPDATE smq_subscription SET filter_tag = $2, strategy = $3, "
                      "dlq_enabled = $4, dlq_target = $5, modify_s = $6 WHERE id = $1 "
                      "RETURNING 1) "
                      "SELECT smq_expect_row((SELECT count(*) FROM u), 'subscription update')",
    [PS_SUB_DELETE_NOTIFS] = "DELETE FROM smq_notif WHERE sub_id = $1 AND seq IN "
                             "(SELECT seq FROM smq_tmsg WHERE topic_id = "
                             "(SELECT topic_id FROM smq_subscription WHERE id = $1))",
    [PS_SUB_DELETE] = "DELETE FROM smq_subscription WHERE id = $1",
    [PS_SUB_LOAD] = "SELECT " SUB_COLS " FROM smq_subscription WHERE id > $1 ORDER BY id "
                    "LIMIT " PG_LOAD_PAGE,
    [PS_TMSG_INSERT] = "INSERT INTO smq_tmsg(" TMSG_COLS ") VALUES ($1, $2, $3, $4, $5, $6)",
    [PS_TBODY_INSERT] = "INSERT INTO smq_tmsg_body(seq, body) VALUES ($1, $2)",
    [PS_TMSG_DELETE] = "DELETE FROM smq_tmsg WHERE seq = $1",
    [PS_TBODY_DELETE] = "DELETE FROM smq_tmsg_body WHERE seq = $1",
    [PS_TBODY_GET] = "SELECT body FROM smq_tmsg_body WHERE seq = $1",
    /* The md5 as hex, whatever the server's bytea_output. */
    [PS_TMSG_LOAD] = "SELECT seq, topic_id, publish_ms, tag, encode(md5, 'hex'), body_len "
                     "FROM smq_tmsg WHERE seq > $1 ORDER BY seq LIMIT " PG_LOAD_PAGE,
    [PS_NOTIF_INSERT] = "INSERT INTO smq_notif(" NOTIF_COLS ") VALUES ($1, $2, $3, $4, $5)",
    [PS_NOTIF_UPDATE] = "WITH u AS (UPDATE smq_notif SET attempts = $3, due_ms = $4 "
                        "WHERE sub_id = $1 AND seq = $2 RETURNING 1) "
                        "SELECT smq_expect_row((SELECT count(*) FROM u), 'notification update')",
    [PS_NOTIF_DELETE] = "DELETE FROM smq_notif WHERE sub_id = $1 AND seq = $2",
    [PS_NOTIF_LOAD] = "SELECT " NOTIF_COLS " FROM smq_notif WHERE (seq, sub_id) > ($1, $2) "
                      "ORDER BY seq, sub_id LIMIT " PG_LOAD_PAGE,
};

/* In enum pg_stmt's order. */
static const char *const stmt_name[PS__COUNT] = {
    "smq_meta_get", "smq_meta_set", "smq_queue_insert", "smq_queue_update",
    "smq_queue_delete_bodies", "smq_queue_delete_msgs", "smq_queue_delete", "smq_queue_load",
    "smq_msg_insert", "smq_body_insert", "smq_msg_update", "smq_msg_move", "smq_msg_delete",
    "smq_body_delete", "smq_body_get", "smq_msg_load", "smq_fence",
    "smq_topic_insert", "smq_topic_update", "smq_topic_delete_notifs", "smq_topic_delete_subs",
    "smq_topic_delete_bodies", "smq_topic_delete_msgs", "smq_topic_delete", "smq_topic_load",
    "smq_sub_insert", "smq_sub_update", "smq_sub_delete_notifs", "smq_sub_delete",
    "smq_sub_load", "smq_tmsg_insert", "smq_tbody_insert", "smq_tmsg_delete",
    "smq_tbody_delete", "smq_tbody_get", "smq_tmsg_load", "smq_notif_insert",
    "smq_notif_update", "smq_notif_delete", "smq_notif_load",
};

const char *pg_stmt_name(enum pg_stmt st)
{
    return stmt_name[st];
}

int pg_stmt_prepare(PGconn *conn, char *err, size_t err_size)
{
    for (int i = 0; i < PS__COUNT; i++) {
        PGresult *r = PQprepare(conn, stmt_name[i], stmt_sql[i], 0, NULL);
        int ok = PQresultStatus(r) == PGRES_COMMAND_OK;

        PQclear(r);
        if (!ok) {
            snprintf(err, err_size, "PostgreSQL: cannot prepare %s: %s", stmt_name[i],
                     PQerrorMessage(conn));
            err[strcspn(err, "\n")] = '\0';
            return SMQ_E_INTERNAL;
        }
    }
    return 0;
}
