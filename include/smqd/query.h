/*
 * query.h — the parts of a request target both APIs (MNS and admin) read
 * the same way: the query string (docs/protocol.md §1.3) and a queue name
 * in a path segment.  Names in the query are matched case-insensitively,
 * values are percent-decoded and '+' stays a literal '+'.
 */
#ifndef SMQD_QUERY_H
#define SMQD_QUERY_H

#include <stddef.h>

#include "smqd/errors.h"
#include "smqd/qname.h"

#define QUERY_MAX_PARAMS 32

struct query {
    size_t n;
    char *names[QUERY_MAX_PARAMS];
    char *values[QUERY_MAX_PARAMS];  /* percent-decoded; '+' stays '+' */
    char *storage;
};

/* Splits and decodes a raw query string (NULL or "" = none).  0, or
 * SMQ_E_INVALID_QUERY_STRING (a bad escape, an encoded NUL, too many
 * parameters) or SMQ_E_NOMEM with ei set.  query_free either way. */
int query_parse(const char *raw, struct query *q, struct smq_errinfo *ei);
void query_free(struct query *q);
/* The value of the first parameter of that name (case-insensitive), or NULL. */
const char *query_get(const struct query *q, const char *name);

/* Percent-decodes the path segment raw[0..len) into out (out_size bytes,
 * NUL-terminated; '+' stays '+'): 0, or -1 for a bad escape, an encoded NUL
 * or a result that does not fit.  The caller splits the path first, so an
 * encoded '/' (%2F) is part of the segment, never a separator. */
int query_path_segment(const char *raw, size_t len, char *out, size_t out_size);

/* Percent-decodes the path segment raw[0..len) into out and checks it as a
 * queue name: 0, or SMQ_E_QUEUE_NAME_LENGTH / SMQ_E_INVALID_QUEUE_NAME (a
 * bad escape or an encoded NUL included) with ei set. */
int query_queue_name(const char *raw, size_t len, char out[SMQ_QUEUE_NAME_MAX + 1],
                     struct smq_errinfo *ei);

#endif
