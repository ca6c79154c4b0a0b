/*
 * ctl_print.h — how smqctl shows admin API answers to a person: a table of
 * queues, "key: value" lines for one queue, blocks for peeked messages.
 * Everything printed comes from the server, so text is printed with
 * control characters escaped: a message body cannot move the cursor of
 * the operator's terminal.
 */
#ifndef SMQCTL_PRINT_H
#define SMQCTL_PRINT_H

#include <stdio.h>

#include "ctl_json.h"

/* {"queues":[QUEUE...]} as a table.  SMQ_E_INVALID_ARGUMENT if the document
 * has another shape. */
int ctl_print_queue_table(FILE *out, const struct cj_value *doc);
/* One QUEUE as "key: value" lines (attributes and counters flattened). */
int ctl_print_queue(FILE *out, const struct cj_value *queue);
/* {"messages":[...]} as one block per message. */
int ctl_print_messages(FILE *out, const struct cj_value *doc);
/* {"topics":[TOPIC...]} as a table: name, subscriptions (the member
 * "subscriptions" smqctl adds to each TOPIC, "-" without it), attributes,
 * creation time in UTC. */
int ctl_print_topic_table(FILE *out, const struct cj_value *doc);
/* {"subscriptions":[SUBSCRIPTION...]} as a table. */
int ctl_print_subscription_table(FILE *out, const struct cj_value *doc);
/* s[0..len) with control and non-ASCII-printable bytes as \xNN (UTF-8 kept). */
void ctl_print_safe(FILE *out, const char *s, size_t len);

#endif
