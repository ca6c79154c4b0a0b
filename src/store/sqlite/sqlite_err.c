/*
 * sqlite_err.c — owns how the SQLite backend reports a failure
 * (sqlite_store.h): the message for the caller of open or of the integrity
 * check, and the one log line of a run-time SQLite failure with the code the
 * layers above see.  The bottom of the backend: sqlite_store.c,
 * sqlite_rows.c and sqlite_file.c call it, and it calls none of them.
 */
#include "sqlite_store.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "smqd/errors.h"
#include "smqd/log.h"

/* Writes a message for the caller of store_open/store_integrity_check,
 * ending it with "..." when it had to be cut so truncation is visible. */
void sqlite_err_set(char *err, size_t err_size, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (err == NULL || err_size == 0)
        return;
    va_start(ap, fmt);
    n = vsnprintf(err, err_size, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n >= err_size && err_size > 3)
        memcpy(err + err_size - 4, "...", 4);
}

/* A full disk (or database) is told apart: the engine reacts to it by
 * freeing its reserve and refusing only what grows data. */
int sqlite_err_fail(const char *what, int rc, const char *sqlite_msg)
{
    int saved = errno;

    SMQ_ERROR("store: %s failed: %s", what, sqlite_msg);
    errno = saved;
    return (rc & 0xff) == SQLITE_FULL ? SMQ_E_STORAGE_FULL : SMQ_E_INTERNAL;
}
