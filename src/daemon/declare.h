/*
 * declare.h — queues declared in the configuration ([queue.NAME] sections).
 *
 * At start-up, before the engine thread or any listener runs, every
 * declared queue that does not exist is created with the default
 * attributes, and then every declared dead-letter policy is set (in a
 * second pass, so a section may name a target declared after it).  What a
 * section does not name is left as it is: the API stays free to change it.
 */
#ifndef SMQD_DECLARE_H
#define SMQD_DECLARE_H

#include <stddef.h>

#include "smqd/config.h"
#include "smqd/engine.h"

/* 0, or with "[queue.NAME] (line N): reason" in err (start-up fails):
 * SMQ_E_INVALID_ARGUMENT when the configuration is at fault (e.g. a target
 * that does not exist), another SMQ_E_* code when the store is. */
int declare_queues(struct smq_engine *e, const struct smq_queue_decl *decls, size_t n,
                   char *err, size_t err_size);

#endif
