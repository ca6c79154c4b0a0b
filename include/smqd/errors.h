/*
 * errors.h — the MNS error table.
 *
 * Every internal API returns 0 or a negative SMQ_E_* code.  This module maps
 * each code to the HTTP status, the MNS <Code> string and a default
 * <Message> text (docs/protocol.md §8.2).  Only the HTTP layer renders them.
 */
#ifndef SMQD_ERRORS_H
#define SMQD_ERRORS_H

#include <stddef.h>

enum smq_err {
    SMQ_OK = 0,
    SMQ_E_MISSING_AUTHORIZATION = -1,
    SMQ_E_INVALID_AUTHORIZATION = -2,
    SMQ_E_INVALID_ACCESS_KEY_ID = -3,
    SMQ_E_SIGNATURE_MISMATCH = -4,
    SMQ_E_ACCESS_DENIED = -5,
    SMQ_E_MISSING_DATE = -6,
    SMQ_E_INVALID_DATE = -7,
    SMQ_E_TIME_EXPIRED = -8,
    SMQ_E_MISSING_VERSION = -9,
    SMQ_E_INVALID_VERSION = -10,
    SMQ_E_INVALID_DIGEST = -11,
    SMQ_E_INVALID_REQUEST_URL = -12,
    SMQ_E_INVALID_QUERY_STRING = -13,
    SMQ_E_MALFORMED_XML = -14,
    SMQ_E_INVALID_ARGUMENT = -15,
    SMQ_E_MISSING_RECEIPT_HANDLE = -16,
    SMQ_E_MISSING_VISIBILITY_TIMEOUT = -17,
    SMQ_E_RECEIPT_HANDLE_ERROR = -18,
    SMQ_E_MESSAGE_NOT_EXIST = -19,
    SMQ_E_QUEUE_NOT_EXIST = -20,
    SMQ_E_QUEUE_ALREADY_EXIST = -21,
    SMQ_E_INVALID_QUEUE_NAME = -22,
    SMQ_E_QUEUE_NAME_LENGTH = -23,
    SMQ_E_TOO_MANY_QUEUES = -24,
    SMQ_E_REQUEST_TOO_LARGE = -25,
    SMQ_E_QPS_LIMIT_EXCEEDED = -26,
    SMQ_E_SERVICE_UNAVAILABLE = -27,
    SMQ_E_INTERNAL = -28,
    SMQ_E_NOMEM = -29,
    SMQ_E_STORAGE_FULL = -30,
    /* topics (docs/protocol.md §13.7) */
    SMQ_E_TOPIC_NOT_EXIST = -31,
    SMQ_E_TOPIC_ALREADY_EXIST = -32,
    SMQ_E_TOPIC_NAME_INVALID = -33,
    SMQ_E_TOPIC_NAME_LENGTH = -34,
    SMQ_E_TOO_MANY_TOPICS = -35,
    SMQ_E_SUBSCRIPTION_NOT_EXIST = -36,
    SMQ_E_SUBSCRIPTION_ALREADY_EXIST = -37,
    SMQ_E_SUBSCRIPTION_NAME_INVALID = -38,
    SMQ_E_SUBSCRIPTION_NAME_LENGTH = -39,
    SMQ_E_TOO_MANY_SUBSCRIPTIONS = -40,
    SMQ_E_ENDPOINT_INVALID = -41,
    SMQ_E__COUNT = 42            /* one past the most negative code */
};

struct smq_error_info {
    int http_status;
    const char *code;       /* MNS <Code>, e.g. "QueueNotExist" */
    const char *message;    /* default <Message> text */
};

/* The table row for err (any value; unknown values map to InternalError). */
const struct smq_error_info *errors_info(int err);

/*
 * An error with a request-specific message, e.g. which attribute was out of
 * range.  msg[0] == '\0' means "use the table's default text".
 */
struct smq_errinfo {
    int err;
    char msg[256];
};

/* What a send or queue creation refused by the storage-full mode (space.h)
 * is told: unlike a write that failed, it can say what still works, and
 * once the released disk reserve is spent (or there was none) that nothing
 * is promised any more (space_refusal chooses). */
#define SMQ_STORAGE_FULL_REFUSAL \
    "The server's storage is full: new messages are refused until space is freed; " \
    "receives and deletes are served while its disk reserve lasts. The request was not applied."
#define SMQ_STORAGE_FULL_SPENT_REFUSAL \
    "The server's storage is full and no disk reserve is left (it is spent): new messages are " \
    "refused, and receives and deletes may fail too, until space is freed. " \
    "The request was not applied."

/* Records err with a printf-style message into ei (may be NULL); returns err. */
int errors_set(struct smq_errinfo *ei, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The message to send for ei: its own text, or the table default. */
const char *errors_message(const struct smq_errinfo *ei);

#endif
