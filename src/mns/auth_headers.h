/*
 * auth_headers.h — the header canonicalisation both signature versions
 * share (auth_headers.c): the request headers a version signs, as sorted
 * "lower(name):trimmed value\n" lines.  Private to the auth module; auth.c
 * (V2) and auth_v4.c (V4) include it, and it calls neither of them.
 */
#ifndef SMQD_AUTH_HEADERS_H
#define SMQD_AUTH_HEADERS_H

#include <stdbool.h>

#include "smqd/auth.h"
#include "smqd/buf.h"

/*
 * Appends the request headers whose name pick() accepts as sorted
 * "lower(name):trimmed value\n" lines, duplicates folded with "," (the V2
 * CanonicalizedMNSHeaders rule, docs/protocol.md §3.1; V4 reuses it with its
 * own header set).  Returns 0 or SMQ_E_NOMEM.
 */
int auth_headers_append_sorted(const struct auth_request *r, bool (*pick)(const char *name),
                               struct smq_buf *out);

#endif
