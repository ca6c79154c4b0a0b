/*
 * grant.h — what an access key may do: grants of action classes on queue
 * patterns (docs/protocol.md §3.7, docs/operations.md "Several teams on one
 * smqd").
 *
 * A grant names queues — exact names, or prefixes ending in '*' ("*" alone
 * is every queue) — and action classes; a key's grant set is the union of
 * its grants.  Names are matched byte for byte, as queue names are compared
 * everywhere else: "Orders" is not "orders".  A key without a grant set
 * (NULL) may do everything, so configurations from before grants existed
 * keep working.
 */
#ifndef SMQD_GRANT_H
#define SMQD_GRANT_H

#include <stdbool.h>
#include <stddef.h>

#include "smqd/qname.h"

/* The action classes: every MNS action is in exactly one (mns.h). */
enum grant_class {
    GRANT_MANAGE = 1u << 0,     /* CreateQueue, SetQueueAttributes, DeleteQueue */
    GRANT_SEND = 1u << 1,       /* SendMessage, BatchSendMessage */
    GRANT_RECEIVE = 1u << 2,    /* Receive, Peek, Delete, ChangeVisibility and batches */
    GRANT_LIST = 1u << 3,       /* ListQueue, GetQueueAttributes */
};
#define GRANT_ALL_CLASSES (GRANT_MANAGE | GRANT_SEND | GRANT_RECEIVE | GRANT_LIST)

/* Patterns one grant may name. */
#define GRANT_PATTERNS_MAX 256

struct grant_pattern {
    char text[SMQ_QUEUE_NAME_MAX + 1];   /* without the '*' */
    size_t len;
    bool prefix;                          /* written with a trailing '*' */
};

struct grant {
    struct grant_pattern *patterns;       /* malloc'd */
    size_t n_patterns;
    unsigned classes;                     /* GRANT_* bits, at least one */
};

struct grant_set {
    struct grant *grants;                 /* malloc'd; each owns its patterns */
    size_t n;
};

/*
 * Parses a comma-separated queue list ("orders-*, billing") into g's
 * patterns, replacing any it had.  0, or SMQ_E_INVALID_ARGUMENT with a
 * sentence naming the bad item in why (g unchanged), or SMQ_E_NOMEM.
 */
int grant_parse_queues(const char *text, struct grant *g, char *why, size_t why_size);

/* Parses a comma-separated class list ("send, receive") into *classes;
 * 0 or SMQ_E_INVALID_ARGUMENT with why. */
int grant_parse_classes(const char *text, unsigned *classes, char *why, size_t why_size);

/* Moves g into set (g is left empty).  0 or SMQ_E_NOMEM (g untouched). */
int grant_set_add(struct grant_set *set, struct grant *g);

/* Whether set gives cls (one GRANT_* bit) on queue; a NULL set gives all. */
bool grant_allows(const struct grant_set *set, const char *queue, unsigned cls);

/*
 * For walking sorted names: when `after` is not given cls, the smallest
 * name greater than it that could be — the least pattern text (an exact
 * name, or a prefix) of a cls grant above `after` — or NULL when no name
 * after it can be.  Every name between `after` and that one is refused,
 * so a walk may skip straight to it.  NULL for a NULL set (all given).
 */
const char *grant_next_start(const struct grant_set *set, unsigned cls, const char *after);

/* Whether set gives cls on at least one queue name; a NULL set does. */
bool grant_gives_any(const struct grant_set *set, unsigned cls);

/* "manage", "send", "receive", "list"; "-" for anything else. */
const char *grant_class_name(unsigned cls);

/* The class list of bits as written in a grant ("send, receive"). */
void grant_format_classes(unsigned classes, char *out, size_t size);

/* The queue list of g as a grant may be written ("orders-*,billing"): no
 * blank after the commas, so it is never longer than the line it was read
 * from; a list that does not fit ends in "...". */
void grant_format_queues(const struct grant *g, char *out, size_t size);

void grant_free(struct grant *g);
void grant_set_free(struct grant_set *set);

#endif
