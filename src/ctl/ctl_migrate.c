/*
 * ctl_migrate.c — copies one smqd store into another through store.h
 * (ctl_migrate.h): the engine's metadata, queues, topics and subscriptions
 * in one transaction, then the messages in transactions of MIGRATE_CHUNK
 * rows, each chunk's bodies read from the source in one batched read, then
 * the topic messages kept for pending notifications and the notifications
 * (docs/protocol.md §13) in chunks the same way, and last the push signing
 * key (§13.11).  Only the store
 * contract is used, so the copy is the same for every pair of backends.
 */
#include "ctl_migrate.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "smqd/buf.h"
#include "smqd/crypto.h"
#include "smqd/errors.h"
#include "smqd/store.h"

/* Rows per destination transaction: big enough that a network commit is
 * not the bottleneck, small enough that one chunk's bodies (at most
 * 64 KiB each) stay a bounded amount of memory. */
#define MIGRATE_CHUNK 256

/* The metadata the engine keeps (store.h): the receipt-handle secret
 * and the marks below which ids were handed out. */
static const char *const meta_keys[] = {META_KEYS, META_NEXT_SEQ, META_NEXT_QUEUE_ID,
                                        META_NEXT_TOPIC_ID, META_NEXT_SUB_ID};

struct copy {
    struct smq_store *src, *dst;
    FILE *log;
    struct ctl_migrate_counts n;
    struct store_msg_rec rows[MIGRATE_CHUNK];
    struct store_body_read reads[MIGRATE_CHUNK];
    struct store_tmsg_rec tmsgs[MIGRATE_CHUNK];
    struct store_notif_rec notifs[MIGRATE_CHUNK];
    size_t used;
    struct smq_buf bodies;
    char *err;
    size_t err_size;
};

static int fail(struct copy *c, int rc, const char *what)
{
    snprintf(c->err, c->err_size, "%s (%s)", what, errors_info(rc)->code);
    return rc;
}

static int count_queue(void *arg, const struct store_queue_rec *q)
{
    (void)q;
    ++*(uint64_t *)arg;
    return 0;
}

static int count_msg(void *arg, const struct store_msg_rec *m)
{
    (void)m;
    ++*(uint64_t *)arg;
    return 0;
}

static int count_topic(void *arg, const struct store_topic_rec *t)
{
    (void)t;
    ++*(uint64_t *)arg;
    return 0;
}

static int count_sub(void *arg, const struct store_sub_rec *sub)
{
    (void)sub;
    ++*(uint64_t *)arg;
    return 0;
}

static int count_tmsg(void *arg, const struct store_tmsg_rec *m)
{
    (void)m;
    ++*(uint64_t *)arg;
    return 0;
}

static int count_notif(void *arg, const struct store_notif_rec *n)
{
    (void)n;
    ++*(uint64_t *)arg;
    return 0;
}

/* The destination must hold no smqd data: a copy over a live or earlier
 * database would mix two id spaces and two handle secrets. */
static int check_empty(struct copy *c)
{
    struct smq_buf val, cert;
    uint64_t queues = 0, topics = 0;
    int found = 0, key = 0, rc;

    buf_init(&val);
    buf_init(&cert);
    rc = store_queue_load(c->dst, count_queue, &queues);
    if (rc == 0)
        rc = store_topic_load(c->dst, count_topic, &topics);
    if (rc == 0)
        rc = store_meta_get(c->dst, META_KEYS, &val, &found);
    buf_reset(&val);
    if (rc == 0)
        rc = store_signing_key_get(c->dst, &val, &cert, &key);
    crypto_secret_wipe(val.data, val.len);
    buf_free(&val);
    buf_free(&cert);
    if (rc != 0)
        return fail(c, rc, "cannot read the destination");
    if (queues > 0 || topics > 0 || found || key) {
        snprintf(c->err, c->err_size, "the destination already holds smqd data (%" PRIu64
                 " queue(s), %" PRIu64 " topic(s)%s%s); copy only into an empty database",
                 queues, topics, found ? ", a receipt-handle secret" : "",
                 key ? ", a push signing key" : "");
        return SMQ_E_INVALID_ARGUMENT;
    }
    return 0;
}

static int copy_meta(struct copy *c)
{
    struct smq_buf val;
    int rc = 0;

    buf_init(&val);
    for (size_t i = 0; rc == 0 && i < sizeof meta_keys / sizeof meta_keys[0]; i++) {
        int found = 0;
        buf_reset(&val);
        rc = store_meta_get(c->src, meta_keys[i], &val, &found);
        if (rc == 0 && found)
            rc = store_meta_set(c->dst, meta_keys[i], val.data, val.len);
    }
    buf_free(&val);
    return rc;
}

static int copy_queue(void *arg, const struct store_queue_rec *q)
{
    struct copy *c = arg;
    int rc = store_queue_insert(c->dst, q);

    c->n.queues += rc == 0;
    return rc;
}

static int copy_topic(void *arg, const struct store_topic_rec *t)
{
    struct copy *c = arg;
    int rc = store_topic_insert(c->dst, t);

    c->n.topics += rc == 0;
    return rc;
}

static int copy_sub(void *arg, const struct store_sub_rec *sub)
{
    struct copy *c = arg;
    int rc = store_sub_insert(c->dst, sub);

    c->n.subscriptions += rc == 0;
    return rc;
}

/* Metadata, queues, topics and subscriptions: one transaction, so a
 * failed start leaves nothing. */
static int copy_head(struct copy *c)
{
    int rc = store_begin(c->dst);

    if (rc == 0)
        rc = copy_meta(c);
    if (rc == 0)
        rc = store_queue_load(c->src, copy_queue, c);
    if (rc == 0)
        rc = store_topic_load(c->src, copy_topic, c);
    if (rc == 0)
        rc = store_sub_load(c->src, copy_sub, c);
    if (rc == 0)
        rc = store_commit(c->dst);
    if (rc != 0) {
        store_rollback(c->dst);
        return fail(c, rc, "copying the queues, topics and the handle secret failed; nothing "
                    "was written");
    }
    return 0;
}

/* Inserts the chunk's rows with the bodies read for them (c->bodies holds
 * each body followed by its extensions, in order). */
static int insert_chunk(struct copy *c)
{
    size_t off = 0;
    int rc = 0;

    for (size_t i = 0; rc == 0 && i < c->used; i++) {
        const struct store_body_read *r = &c->reads[i];
        struct store_msg_content mc = {
            .body = c->bodies.data + off, .body_len = r->len,
            .md5 = r->md5.present ? r->md5.bytes : NULL,
            .ext = r->ext_len > 0 ? c->bodies.data + off + r->len : NULL,
            .ext_len = r->ext_len,
        };
        rc = store_msg_insert(c->dst, &c->rows[i], &mc);
        off += r->len + r->ext_len;
        c->n.body_bytes += r->len;
    }
    return rc;
}

static int flush_chunk(struct copy *c)
{
    int rc;

    if (c->used == 0)
        return 0;
    for (size_t i = 0; i < c->used; i++)
        c->reads[i] = (struct store_body_read){.queue_id = c->rows[i].queue_id,
                                               .seq = c->rows[i].seq};
    buf_reset(&c->bodies);
    rc = store_msg_bodies(c->src, c->reads, c->used, &c->bodies);
    if (rc == 0)
        rc = store_begin(c->dst);
    if (rc == 0)
        rc = insert_chunk(c);
    if (rc == 0)
        rc = store_commit(c->dst);
    if (rc != 0) {
        store_rollback(c->dst);
        return rc;
    }
    c->n.messages += c->used;
    c->used = 0;
    if (c->log != NULL && c->n.messages % (MIGRATE_CHUNK * 40) == 0)
        fprintf(c->log, "migrate: %" PRIu64 " messages copied\n", c->n.messages);
    return 0;
}

static int collect_msg(void *arg, const struct store_msg_rec *m)
{
    struct copy *c = arg;

    c->rows[c->used++] = *m;
    return c->used == MIGRATE_CHUNK ? flush_chunk(c) : 0;
}

static int copy_messages(struct copy *c)
{
    int rc = store_msg_load(c->src, collect_msg, c);

    if (rc == 0)
        rc = flush_chunk(c);
    if (rc != 0) {
        snprintf(c->err, c->err_size, "copying the messages failed after %" PRIu64 " of them "
                 "(%s); the destination holds a partial copy: empty it and run the copy again",
                 c->n.messages, errors_info(rc)->code);
        return rc;
    }
    return 0;
}

/* ---- topic messages and notifications -------------------------------- */

/* One chunk of topic messages, each body read from the source as it is
 * written (there is no batched read of them: they are few, kept only
 * while a notification is pending). */
static int insert_tmsg_chunk(struct copy *c)
{
    int rc = 0;

    for (size_t i = 0; rc == 0 && i < c->used; i++) {
        buf_reset(&c->bodies);
        rc = store_tmsg_body(c->src, c->tmsgs[i].seq, &c->bodies);
        if (rc == 0)
            rc = store_tmsg_insert(c->dst, &c->tmsgs[i], c->bodies.data, c->bodies.len);
    }
    return rc;
}

static int insert_notif_chunk(struct copy *c)
{
    int rc = 0;

    for (size_t i = 0; rc == 0 && i < c->used; i++)
        rc = store_notif_insert(c->dst, &c->notifs[i]);
    return rc;
}

/* Writes the chunk collected so far in one destination transaction. */
static int flush_rows(struct copy *c, int (*insert)(struct copy *c), uint64_t *count)
{
    int rc;

    if (c->used == 0)
        return 0;
    rc = store_begin(c->dst);
    if (rc == 0)
        rc = insert(c);
    if (rc == 0)
        rc = store_commit(c->dst);
    if (rc != 0) {
        store_rollback(c->dst);
        return rc;
    }
    *count += c->used;
    c->used = 0;
    return 0;
}

static int collect_tmsg(void *arg, const struct store_tmsg_rec *m)
{
    struct copy *c = arg;

    c->tmsgs[c->used++] = *m;
    return c->used == MIGRATE_CHUNK ? flush_rows(c, insert_tmsg_chunk, &c->n.topic_messages)
                                    : 0;
}

static int collect_notif(void *arg, const struct store_notif_rec *n)
{
    struct copy *c = arg;

    c->notifs[c->used++] = *n;
    return c->used == MIGRATE_CHUNK ? flush_rows(c, insert_notif_chunk, &c->n.notifications)
                                    : 0;
}

static int copy_notifications(struct copy *c)
{
    int rc = store_tmsg_load(c->src, collect_tmsg, c);

    if (rc == 0)
        rc = flush_rows(c, insert_tmsg_chunk, &c->n.topic_messages);
    if (rc == 0)
        rc = store_notif_load(c->src, collect_notif, c);
    if (rc == 0)
        rc = flush_rows(c, insert_notif_chunk, &c->n.notifications);
    if (rc != 0) {
        snprintf(c->err, c->err_size, "copying the pending notifications failed (%s); the "
                 "destination holds a partial copy: empty it and run the copy again",
                 errors_info(rc)->code);
        return rc;
    }
    return 0;
}

/* The push signing key smqd made, with its certificate (§13.11): a
 * statement of its own, outside any transaction (store.h).  The
 * destination was checked to hold none, so the pair read back must be the
 * source's. */
static int copy_signing_key(struct copy *c)
{
    struct smq_buf key, cert, key2, cert2;
    int found = 0, found2 = 0, rc;

    buf_init(&key);
    buf_init(&cert);
    buf_init(&key2);
    buf_init(&cert2);
    rc = store_signing_key_get(c->src, &key, &cert, &found);
    buf_append(&key, "", 1);              /* NUL-terminated for the put */
    buf_append(&cert, "", 1);
    if (rc == 0 && found && (buf_failed(&key) || buf_failed(&cert)))
        rc = SMQ_E_NOMEM;
    if (rc == 0 && found)
        rc = store_signing_key_put_if_absent(c->dst, key.data, cert.data);
    if (rc == 0 && found)
        rc = store_signing_key_get(c->dst, &key2, &cert2, &found2);
    if (rc == 0 && found && (!found2 || key2.len + 1 != key.len || cert2.len + 1 != cert.len
                             || memcmp(key2.data, key.data, key2.len) != 0
                             || memcmp(cert2.data, cert.data, cert2.len) != 0))
        rc = SMQ_E_INTERNAL;
    c->n.signing_key = rc == 0 && found;
    crypto_secret_wipe(key.data, key.len);
    crypto_secret_wipe(key2.data, key2.len);
    buf_free(&key);
    buf_free(&cert);
    buf_free(&key2);
    buf_free(&cert2);
    if (rc != 0)
        return fail(c, rc, "copying the push signing key failed; the rest was copied");
    if (found && c->log != NULL)
        fprintf(c->log, "migrate: the push signing key and its certificate copied\n");
    return 0;
}

/* Reads the destination back: what it holds must be what was copied. */
static int verify(struct copy *c)
{
    struct ctl_migrate_counts got = {0};
    int rc = store_queue_load(c->dst, count_queue, &got.queues);

    if (rc == 0)
        rc = store_msg_load(c->dst, count_msg, &got.messages);
    if (rc == 0)
        rc = store_topic_load(c->dst, count_topic, &got.topics);
    if (rc == 0)
        rc = store_sub_load(c->dst, count_sub, &got.subscriptions);
    if (rc == 0)
        rc = store_tmsg_load(c->dst, count_tmsg, &got.topic_messages);
    if (rc == 0)
        rc = store_notif_load(c->dst, count_notif, &got.notifications);
    if (rc != 0)
        return fail(c, rc, "cannot read the copy back");
    if (got.queues != c->n.queues || got.messages != c->n.messages ||
        got.topics != c->n.topics || got.subscriptions != c->n.subscriptions ||
        got.topic_messages != c->n.topic_messages || got.notifications != c->n.notifications) {
        snprintf(c->err, c->err_size, "the copy holds %" PRIu64 " queue(s), %" PRIu64
                 " message(s), %" PRIu64 " topic(s), %" PRIu64 " subscription(s), %" PRIu64
                 " topic message(s) and %" PRIu64 " notification(s); %" PRIu64 ", %" PRIu64
                 ", %" PRIu64 ", %" PRIu64 ", %" PRIu64 " and %" PRIu64 " were copied",
                 got.queues, got.messages, got.topics, got.subscriptions, got.topic_messages,
                 got.notifications, c->n.queues, c->n.messages, c->n.topics,
                 c->n.subscriptions, c->n.topic_messages, c->n.notifications);
        return SMQ_E_INTERNAL;
    }
    return 0;
}

static int open_both(struct copy *c, const struct store_config *from,
                     const struct store_config *to)
{
    char why[512] = "";
    struct stat st;

    /* Opening a missing SQLite file would create an empty database and
     * "copy" it: a mistyped path must not look like a successful move. */
    if (from->backend == SMQ_STORE_SQLITE && stat(from->path, &st) != 0) {
        snprintf(c->err, c->err_size, "cannot open the source: %s: %s", from->path,
                 strerror(errno));
        return SMQ_E_INVALID_ARGUMENT;
    }
    if (store_open(from, &c->src, why, sizeof why) != 0) {
        snprintf(c->err, c->err_size, "cannot open the source: %s", why);
        return SMQ_E_INTERNAL;
    }
    if (store_open(to, &c->dst, why, sizeof why) != 0) {
        snprintf(c->err, c->err_size, "cannot open the destination: %s", why);
        return SMQ_E_INTERNAL;
    }
    return 0;
}

int ctl_migrate(const struct store_config *from, const struct store_config *to, FILE *log,
                struct ctl_migrate_counts *out, char *err, size_t err_size)
{
    struct copy *c = calloc(1, sizeof *c);
    int rc;

    if (c == NULL) {
        snprintf(err, err_size, "out of memory");
        return SMQ_E_NOMEM;
    }
    c->log = log;
    c->err = err;
    c->err_size = err_size;
    buf_init(&c->bodies);
    rc = open_both(c, from, to);
    if (rc == 0)
        rc = check_empty(c);
    if (rc == 0)
        rc = copy_head(c);
    if (rc == 0)
        rc = copy_messages(c);
    if (rc == 0)
        rc = copy_notifications(c);
    if (rc == 0)
        rc = copy_signing_key(c);
    if (rc == 0)
        rc = verify(c);
    if (rc == 0)
        *out = c->n;
    store_close(c->dst);
    store_close(c->src);
    buf_free(&c->bodies);
    free(c);
    return rc;
}
