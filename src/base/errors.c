/*
 * errors.c — owns the MNS error table (code → HTTP status, Code, Message).
 * Statuses the protocol marks uncertain are decided in docs/protocol-decisions.md.
 */
#include "smqd/errors.h"

#include <stdarg.h>
#include <stdio.h>

static const struct smq_error_info error_table[SMQ_E__COUNT] = {
    [0] = {200, "OK", "OK"},
    [-SMQ_E_MISSING_AUTHORIZATION] = {400, "MissingAuthorizationHeader",
        "The Authorization header is missing."},
    [-SMQ_E_INVALID_AUTHORIZATION] = {400, "InvalidAuthorizationHeader",
        "The Authorization header you provided is invalid."},
    [-SMQ_E_INVALID_ACCESS_KEY_ID] = {403, "InvalidAccessKeyId",
        "The AccessKey Id you provided is not exist."},
    [-SMQ_E_SIGNATURE_MISMATCH] = {403, "SignatureDoesNotMatch",
        "The request signature we calculated does not match the signature you provided."},
    [-SMQ_E_ACCESS_DENIED] = {403, "AccessDenied",
        "The access key is not allowed to do this."},
    [-SMQ_E_MISSING_DATE] = {400, "MissingDateHeader",
        "The Date header is missing."},
    [-SMQ_E_INVALID_DATE] = {400, "InvalidDateHeader",
        "The Date header you provided is not a valid RFC 1123 date."},
    [-SMQ_E_TIME_EXPIRED] = {408, "TimeExpired",
        "The http request you sent is expired."},
    [-SMQ_E_MISSING_VERSION] = {400, "MissingVersionHeader",
        "The x-mns-version header is missing."},
    [-SMQ_E_INVALID_VERSION] = {400, "InvalidVersionHeader",
        "The x-mns-version header must be 2015-06-06."},
    [-SMQ_E_INVALID_DIGEST] = {400, "InvalidDigest",
        "The Content-MD5 you specified is not valid."},
    [-SMQ_E_INVALID_REQUEST_URL] = {400, "InvalidRequestURL",
        "The request url you provided is invalid."},
    [-SMQ_E_INVALID_QUERY_STRING] = {400, "InvalidQueryString",
        "The query string you provided is invalid."},
    [-SMQ_E_MALFORMED_XML] = {400, "MalformedXML",
        "The XML you provided was not well-formed."},
    [-SMQ_E_INVALID_ARGUMENT] = {400, "InvalidArgument",
        "The value you provided is invalid."},
    [-SMQ_E_MISSING_RECEIPT_HANDLE] = {400, "MissingReceiptHandle",
        "The receipt handle is missing."},
    [-SMQ_E_MISSING_VISIBILITY_TIMEOUT] = {400, "MissingVisibilityTimeout",
        "The visibility timeout is missing."},
    [-SMQ_E_RECEIPT_HANDLE_ERROR] = {400, "ReceiptHandleError",
        "The receipt handle you provide is not valid."},
    [-SMQ_E_MESSAGE_NOT_EXIST] = {404, "MessageNotExist", "Message not exist."},
    [-SMQ_E_QUEUE_NOT_EXIST] = {404, "QueueNotExist",
        "The queue name you provided is not exist."},
    [-SMQ_E_QUEUE_ALREADY_EXIST] = {409, "QueueAlreadyExist",
        "The queue you want to create is already exist."},
    [-SMQ_E_INVALID_QUEUE_NAME] = {400, "InvalidQueueName",
        "The queue name you provided is invalid."},
    [-SMQ_E_QUEUE_NAME_LENGTH] = {400, "QueueNameLengthError",
        "The length of queue name should be between 1 and 120."},
    [-SMQ_E_TOO_MANY_QUEUES] = {400, "QueueNumExceededLimit",
        "The number of queues has reached the configured limit."},
    [-SMQ_E_REQUEST_TOO_LARGE] = {400, "InvalidArgument",
        "The request body is larger than this server accepts."},
    [-SMQ_E_QPS_LIMIT_EXCEEDED] = {429, "QpsLimitExceeded",
        "The request rate exceeds the configured limit."},
    [-SMQ_E_SERVICE_UNAVAILABLE] = {503, "ServiceUnavailable",
        "The service is shutting down; retry against another instance."},
    [-SMQ_E_INTERNAL] = {500, "InternalError",
        "The service encountered an internal error; the request was not applied."},
    [-SMQ_E_NOMEM] = {500, "InternalError",
        "The service is out of memory; the request was not applied."},
    /* MNS has no code for this; InternalError keeps every SDK's error path. */
    [-SMQ_E_STORAGE_FULL] = {500, "InternalError",
        "The server's storage is full; the request was not applied. New messages are "
        "refused until space is freed on the server."},
    [-SMQ_E_TOPIC_NOT_EXIST] = {404, "TopicNotExist", "The topic name you provided does not exist."},
    [-SMQ_E_TOPIC_ALREADY_EXIST] = {409, "TopicAlreadyExist",
                                    "The topic you want to create already exists with other attributes."},
    [-SMQ_E_TOPIC_NAME_INVALID] = {400, "TopicNameInvalid",
                                   "The topic name you provided is not valid."},
    [-SMQ_E_TOPIC_NAME_LENGTH] = {400, "TopicNameLengthError",
                                  "The length of the topic name must be between 1 and 120."},
    [-SMQ_E_TOO_MANY_TOPICS] = {400, "TopicNumExceededLimit",
                                "The number of topics has reached this server's limit."},
    [-SMQ_E_SUBSCRIPTION_NOT_EXIST] = {404, "SubscriptionNotExist",
                                       "The subscription name you provided does not exist."},
    [-SMQ_E_SUBSCRIPTION_ALREADY_EXIST] = {409, "SubscriptionAlreadyExist",
                                           "The subscription you want to create already exists "
                                           "with other attributes."},
    [-SMQ_E_SUBSCRIPTION_NAME_INVALID] = {400, "SubscriptionNameInvalid",
                                          "The subscription name you provided is not valid."},
    [-SMQ_E_SUBSCRIPTION_NAME_LENGTH] = {400, "SubscriptionNameLengthError",
                                         "The length of the subscription name must be between 1 "
                                         "and 120."},
    [-SMQ_E_TOO_MANY_SUBSCRIPTIONS] = {400, "SubscriptionNumExceededLimit",
                                       "The number of subscriptions of this topic has reached "
                                       "this server's limit."},
    [-SMQ_E_ENDPOINT_INVALID] = {400, "EndpointInvalid",
                                 "The endpoint is not a queue of this server or an http(s) URL."},
};

const struct smq_error_info *errors_info(int err)
{
    if (err > 0 || err <= -SMQ_E__COUNT || error_table[-err].code == NULL)
        return &error_table[-SMQ_E_INTERNAL];
    return &error_table[-err];
}

int errors_set(struct smq_errinfo *ei, int err, const char *fmt, ...)
{
    if (ei == NULL)
        return err;
    ei->err = err;
    ei->msg[0] = '\0';
    if (fmt != NULL) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ei->msg, sizeof ei->msg, fmt, ap);   /* truncation is harmless here */
        va_end(ap);
    }
    return err;
}

const char *errors_message(const struct smq_errinfo *ei)
{
    return ei->msg[0] != '\0' ? ei->msg : errors_info(ei->err)->message;
}
