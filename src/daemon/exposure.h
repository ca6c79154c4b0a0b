/*
 * exposure.h — the start-up checks of what smqd would expose beyond what
 * its configuration grants: who else can read or change the configuration
 * (it holds the secrets) and the database (every message body and the
 * receipt-handle key), running as root, and a volume too small for the
 * disk reserve.  smqd -t and every start run them; errors stop the start.
 *
 * A non-loopback admin listener without a token is a configuration error
 * and lives in config.c, which knows its line.
 */
#ifndef SMQD_EXPOSURE_H
#define SMQD_EXPOSURE_H

#include <stdbool.h>
#include <sys/types.h>

#include "smqd/config.h"

/* Told each finding: error (the start must not go on) or a warning. */
typedef void (*exposure_report_fn)(void *arg, bool error, const char *msg);

/* Runs every check for cfg loaded from config_path as user euid; returns
 * the number of errors reported. */
int exposure_check(const struct smq_config *cfg, const char *config_path, uid_t euid,
                   exposure_report_fn report, void *arg);

#endif
