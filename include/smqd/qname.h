/*
 * qname.h — the queue-name rule, in one place for every front end: the MNS
 * API and the admin API (as an MNS error), and the configuration file's
 * [queue.NAME] sections (config.c prints the text).
 *
 * 1 to 120 characters (the product documents' limit, which wins over the
 * protocol notes' 256), ASCII letters, digits and '-', the first a letter
 * or a digit (docs/protocol.md §5).  Checked on raw bytes: a NUL is a bad character.
 */
#ifndef SMQD_QNAME_H
#define SMQD_QNAME_H

#include <stddef.h>

#include "smqd/errors.h"

#define SMQ_QUEUE_NAME_MAX 120

enum qname_problem {
    QNAME_OK = 0,
    QNAME_LENGTH,          /* empty or longer than SMQ_QUEUE_NAME_MAX */
    QNAME_FIRST_CHAR,      /* does not start with a letter or a digit */
    QNAME_CHARS,           /* a character other than letters, digits and '-' */
};

enum qname_problem qname_check(const char *name, size_t len);
/* A sentence for a person ("The queue name ..."); "" for QNAME_OK. */
const char *qname_problem_text(enum qname_problem p);
/* The rule as an MNS error: 0, SMQ_E_QUEUE_NAME_LENGTH or
 * SMQ_E_INVALID_QUEUE_NAME, with ei set (ei may be NULL). */
int qname_check_err(const char *name, size_t len, struct smq_errinfo *ei);

#endif
