/*
 * ctl_migrate.h — smqctl's copy of one smqd store into another through the
 * store contract (store.h), whatever the two backends: how an SQLite
 * database moves into PostgreSQL (docs/operations.md, "Moving from SQLite
 * to PostgreSQL").  smqd must not run on either while it copies: the
 * SQLite store's lock refuses a second opener, and the destination must
 * be empty.
 */
#ifndef SMQCTL_MIGRATE_H
#define SMQCTL_MIGRATE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "smqd/storage.h"

struct ctl_migrate_counts {
    uint64_t queues, messages, body_bytes;
    uint64_t topics, subscriptions;
    uint64_t topic_messages, notifications;  /* kept for pending notifications */
    int signing_key;             /* 1: the push signing key and certificate were copied */
};

/*
 * Copies every queue, message (metadata, body, MD5, extensions, receive
 * state, dead-letter origin), topic and subscription (ids, names,
 * attributes, times), topic message kept for a pending notification (with
 * its body) and notification (with its retry state), and the engine's
 * metadata (the receipt-handle secret and the id marks, so MessageIds,
 * receipt handles and ids issued before stay valid) and the push signing key
 * smqd made with its certificate (so pushes keep the certificate their
 * receivers trust; docs/protocol.md §13.11) from `from` to `to`,
 * in transactions of a bounded size, then reads the destination back and
 * compares the counts.  Progress goes to log (NULL: none).  Refuses,
 * writing nothing, when the destination already holds queues, topics, a
 * receipt-handle secret or a signing key.  0 with *out filled, or an
 * SMQ_E_* code with a reason in err (a half-made copy is reported as such:
 * the operator empties the destination and runs it again).
 */
int ctl_migrate(const struct store_config *from, const struct store_config *to, FILE *log,
                struct ctl_migrate_counts *out, char *err, size_t err_size);

#endif
