/*
 * test_errors.c — unit tests for errors.c: every SMQ_E_* code has a row
 * (non-empty Code and Message, a 4xx/5xx status), the codes and statuses the
 * protocol table (docs/protocol.md §8.2) fixes are exact, unknown values fall back to
 * InternalError, and errors_set/errors_message record and report a
 * request-specific message.
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "smqd/errors.h"

struct expected_row {
    int err;
    int status;
    const char *code;
};

/* Protocol docs/protocol.md §8.2, code by code. */
static const struct expected_row protocol_rows[] = {
    {SMQ_E_MISSING_AUTHORIZATION, 400, "MissingAuthorizationHeader"},
    {SMQ_E_INVALID_AUTHORIZATION, 400, "InvalidAuthorizationHeader"},
    {SMQ_E_INVALID_ACCESS_KEY_ID, 403, "InvalidAccessKeyId"},
    {SMQ_E_SIGNATURE_MISMATCH, 403, "SignatureDoesNotMatch"},
    {SMQ_E_ACCESS_DENIED, 403, "AccessDenied"},
    {SMQ_E_MISSING_DATE, 400, "MissingDateHeader"},
    {SMQ_E_INVALID_DATE, 400, "InvalidDateHeader"},
    {SMQ_E_TIME_EXPIRED, 408, "TimeExpired"},
    {SMQ_E_MISSING_VERSION, 400, "MissingVersionHeader"},
    {SMQ_E_INVALID_VERSION, 400, "InvalidVersionHeader"},
    {SMQ_E_INVALID_DIGEST, 400, "InvalidDigest"},
    {SMQ_E_INVALID_REQUEST_URL, 400, "InvalidRequestURL"},
    {SMQ_E_INVALID_QUERY_STRING, 400, "InvalidQueryString"},
    {SMQ_E_MALFORMED_XML, 400, "MalformedXML"},
    {SMQ_E_INVALID_ARGUMENT, 400, "InvalidArgument"},
    {SMQ_E_MISSING_RECEIPT_HANDLE, 400, "MissingReceiptHandle"},
    {SMQ_E_MISSING_VISIBILITY_TIMEOUT, 400, "MissingVisibilityTimeout"},
    {SMQ_E_RECEIPT_HANDLE_ERROR, 400, "ReceiptHandleError"},
    {SMQ_E_MESSAGE_NOT_EXIST, 404, "MessageNotExist"},
    {SMQ_E_QUEUE_NOT_EXIST, 404, "QueueNotExist"},
    {SMQ_E_QUEUE_ALREADY_EXIST, 409, "QueueAlreadyExist"},
    {SMQ_E_INVALID_QUEUE_NAME, 400, "InvalidQueueName"},
    {SMQ_E_QUEUE_NAME_LENGTH, 400, "QueueNameLengthError"},
    {SMQ_E_INTERNAL, 500, "InternalError"},
    {SMQ_E_NOMEM, 500, "InternalError"},
};

static void assert_row_usable(int err)
{
    const struct smq_error_info *info = errors_info(err);

    assert_non_null(info);
    assert_non_null(info->code);
    assert_non_null(info->message);
    assert_true(strlen(info->code) > 0);
    assert_true(strlen(info->message) > 0);
    assert_in_range(info->http_status, 400, 599);
}

static void assert_is_internal_error(int err)
{
    const struct smq_error_info *info = errors_info(err);

    assert_ptr_equal(info, errors_info(SMQ_E_INTERNAL));
    assert_int_equal(info->http_status, 500);
    assert_string_equal(info->code, "InternalError");
}

static void test_errors_every_code_has_a_row(void **state)
{
    (void)state;
    for (int e = -1; e > -SMQ_E__COUNT; e--)
        assert_row_usable(e);
}

static void test_errors_every_code_has_its_own_row(void **state)
{
    (void)state;
    /* No code may silently fall back to the InternalError row (a hole in
     * the table); only SMQ_E_INTERNAL itself is that row. */
    for (int e = -1; e > -SMQ_E__COUNT; e--) {
        if (e == SMQ_E_INTERNAL)
            continue;
        assert_ptr_not_equal(errors_info(e), errors_info(SMQ_E_INTERNAL));
    }
}

static void test_errors_protocol_table_exact(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof protocol_rows / sizeof protocol_rows[0]; i++) {
        const struct smq_error_info *info = errors_info(protocol_rows[i].err);
        assert_int_equal(info->http_status, protocol_rows[i].status);
        assert_string_equal(info->code, protocol_rows[i].code);
    }
}

static void test_errors_protocol_messages(void **state)
{
    (void)state;
    /* The texts docs/protocol.md §7 and docs/protocol.md §8 quote verbatim. */
    assert_string_equal(errors_info(SMQ_E_MESSAGE_NOT_EXIST)->message, "Message not exist.");
    assert_string_equal(errors_info(SMQ_E_QUEUE_NOT_EXIST)->message,
                        "The queue name you provided is not exist.");
    assert_string_equal(errors_info(SMQ_E_RECEIPT_HANDLE_ERROR)->message,
                        "The receipt handle you provide is not valid.");
    assert_string_equal(errors_info(SMQ_E_INVALID_ACCESS_KEY_ID)->message,
                        "The AccessKey Id you provided is not exist.");
}

static void test_errors_ok_row(void **state)
{
    (void)state;
    assert_int_equal(errors_info(SMQ_OK)->http_status, 200);
    assert_string_equal(errors_info(SMQ_OK)->code, "OK");
}

static void test_errors_unknown_values_are_internal(void **state)
{
    (void)state;
    assert_is_internal_error(1);
    assert_is_internal_error(42);
    assert_is_internal_error(INT_MAX);
    assert_is_internal_error(-SMQ_E__COUNT);
    assert_is_internal_error(-SMQ_E__COUNT - 1);
    assert_is_internal_error(-1000);
    assert_is_internal_error(INT_MIN);
}

static void test_errors_set_records_code_and_message(void **state)
{
    struct smq_errinfo ei;

    (void)state;
    memset(&ei, 'x', sizeof ei);
    assert_int_equal(errors_set(&ei, SMQ_E_INVALID_ARGUMENT, "The value of %s should between %d and %d.",
                                "Priority", 1, 16),
                     SMQ_E_INVALID_ARGUMENT);
    assert_int_equal(ei.err, SMQ_E_INVALID_ARGUMENT);
    assert_string_equal(ei.msg, "The value of Priority should between 1 and 16.");
    assert_string_equal(errors_message(&ei), "The value of Priority should between 1 and 16.");
}

static void test_errors_set_null_fmt_uses_default(void **state)
{
    struct smq_errinfo ei;

    (void)state;
    errors_set(&ei, SMQ_E_INVALID_ARGUMENT, "custom");
    assert_int_equal(errors_set(&ei, SMQ_E_QUEUE_NOT_EXIST, NULL), SMQ_E_QUEUE_NOT_EXIST);
    assert_int_equal(ei.err, SMQ_E_QUEUE_NOT_EXIST);
    assert_string_equal(ei.msg, "");
    assert_string_equal(errors_message(&ei), "The queue name you provided is not exist.");
}

static void test_errors_set_null_info_returns_err(void **state)
{
    (void)state;
    assert_int_equal(errors_set(NULL, SMQ_E_MALFORMED_XML, "ignored %d", 1), SMQ_E_MALFORMED_XML);
}

static void test_errors_set_truncates_long_message(void **state)
{
    struct smq_errinfo ei;
    char long_text[1000];

    (void)state;
    memset(long_text, 'a', sizeof long_text - 1);
    long_text[sizeof long_text - 1] = '\0';
    errors_set(&ei, SMQ_E_INVALID_ARGUMENT, "%s", long_text);
    assert_int_equal(strlen(ei.msg), sizeof ei.msg - 1);
    assert_int_equal(ei.msg[0], 'a');
}

static void test_errors_message_of_unknown_code(void **state)
{
    struct smq_errinfo ei;

    (void)state;
    errors_set(&ei, 77, NULL);
    assert_string_equal(errors_message(&ei), errors_info(SMQ_E_INTERNAL)->message);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_errors_every_code_has_a_row),
        cmocka_unit_test(test_errors_every_code_has_its_own_row),
        cmocka_unit_test(test_errors_protocol_table_exact),
        cmocka_unit_test(test_errors_protocol_messages),
        cmocka_unit_test(test_errors_ok_row),
        cmocka_unit_test(test_errors_unknown_values_are_internal),
        cmocka_unit_test(test_errors_set_records_code_and_message),
        cmocka_unit_test(test_errors_set_null_fmt_uses_default),
        cmocka_unit_test(test_errors_set_null_info_returns_err),
        cmocka_unit_test(test_errors_set_truncates_long_message),
        cmocka_unit_test(test_errors_message_of_unknown_code),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
