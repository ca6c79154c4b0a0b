/*
 * pg_err.c — owns the one log line of a run-time PostgreSQL failure in the
 * PostgreSQL backend (pg_store.h), and the code the layers above see for
 * it.  The bottom of the backend: its other files call it, it calls none
 * of them.
 */
#include "pg_store.h"

#include <stdio.h>
#include <string.h>

#include "smqd/errors.h"
#include "smqd/log.h"

int pg_err_fail(const char *what, const char *msg)
{
    char line[700];              /* room for a cause (pg_txn.c) before the message */

    snprintf(line, sizeof line, "%s", msg != NULL ? msg : "");
    line[strcspn(line, "\n")] = '\0';
    SMQ_ERROR("store: PostgreSQL %s failed: %s", what, line);
    return SMQ_E_INTERNAL;
}
