/*
 * qname.c — owns the queue-name rule (qname.h).
 */
#include "smqd/qname.h"

/* ASCII only, whatever the locale (isalnum would follow it). */
static int is_alnum(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

enum qname_problem qname_check(const char *name, size_t len)
{
    if (len == 0 || len > SMQ_QUEUE_NAME_MAX)
        return QNAME_LENGTH;
    if (!is_alnum((unsigned char)name[0]))
        return QNAME_FIRST_CHAR;
    for (size_t i = 0; i < len; i++)
        if (!is_alnum((unsigned char)name[i]) && name[i] != '-')
            return QNAME_CHARS;
    return QNAME_OK;
}

#define QNAME_STR(x) #x
#define QNAME_XSTR(x) QNAME_STR(x)
#define QNAME_MAX_TEXT QNAME_XSTR(SMQ_QUEUE_NAME_MAX)

const char *qname_problem_text(enum qname_problem p)
{
    switch (p) {
    case QNAME_LENGTH:
        return "The queue name must have 1 to " QNAME_MAX_TEXT " characters.";
    case QNAME_FIRST_CHAR:
        return "The queue name must start with a letter or a digit.";
    case QNAME_CHARS:
        return "The queue name may contain only letters, digits and '-'.";
    case QNAME_OK:
        break;
    }
    return "";
}

int qname_check_err(const char *name, size_t len, struct smq_errinfo *ei)
{
    enum qname_problem p = qname_check(name, len);

    if (p == QNAME_OK)
        return 0;
    if (p == QNAME_LENGTH)
        return errors_set(ei, SMQ_E_QUEUE_NAME_LENGTH, NULL);
    return errors_set(ei, SMQ_E_INVALID_QUEUE_NAME, "%s", qname_problem_text(p));
}
