/*
 * ctl_db.h — smqctl's direct database work, safe while smqd runs: an online
 * backup (SQLite backup API) and an integrity check.  Both only read the
 * live database; WAL mode lets them run beside smqd's writes.
 */
#ifndef SMQCTL_DB_H
#define SMQCTL_DB_H

#include <stddef.h>
#include <stdbool.h>
#include <stdio.h>

/*
 * Copies db_path to dest as one consistent snapshot: the pages are copied
 * in chunks into a temporary file next to dest, the copy must pass
 * PRAGMA integrity_check, is fsynced, and only then renamed over dest.
 * Progress and the result go to log.  0, or SMQ_E_INTERNAL with a reason in
 * err (dest is then untouched and the temporary file removed).
 */
int ctl_db_backup(const char *db_path, const char *dest, FILE *log, char *err, size_t err_size);

/*
 * PRAGMA integrity_check on db_path opened read-only; the problems (or
 * "ok") are written to out.  0 with *ok (false: problems found), or
 * SMQ_E_INTERNAL when it could not check (reason in err).
 */
int ctl_db_check(const char *db_path, FILE *out, bool *ok, char *err, size_t err_size);

#endif
