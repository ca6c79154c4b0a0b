/*
 * test_mns.c — unit tests for the MNS vocabulary (src/mns/mns.c): every
 * action's wire name and "-" for MNS_UNKNOWN and out-of-range values, a
 * new queue's default attributes (docs/protocol.md §5), the overlay of a
 * request's attributes by their present bits (each bit alone, the
 * dead-letter policy replaced as a whole, a disabled one cleared), and
 * mns_attrs_equal field by field.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "smqd/grant.h"
#include "smqd/mns.h"

/* ---- helpers ------------------------------------------------------------ */

/* Attributes that differ from the defaults in every field. */
static void request_attrs(struct smq_queue_attrs *a)
{
    memset(a, 0, sizeof *a);
    a->delay_s = 11;
    a->max_msg_size = 2048;
    a->retention_s = 600;
    a->visibility_s = 45;
    a->polling_wait_s = 20;
    a->logging = 1;
    a->dlq.enabled = 1;
    snprintf(a->dlq.target, sizeof a->dlq.target, "orders-dlq");
    a->dlq.max_receive = 3;
}

static void defaults(struct smq_queue_attrs *a)
{
    memset(a, 0x5c, sizeof *a);
    mns_default_attrs(a);
}

static void assert_attrs(const struct smq_queue_attrs *got, const struct smq_queue_attrs *want)
{
    assert_int_equal(got->delay_s, want->delay_s);
    assert_int_equal(got->max_msg_size, want->max_msg_size);
    assert_int_equal(got->retention_s, want->retention_s);
    assert_int_equal(got->visibility_s, want->visibility_s);
    assert_int_equal(got->polling_wait_s, want->polling_wait_s);
    assert_int_equal(got->logging, want->logging);
    assert_int_equal(got->dlq.enabled, want->dlq.enabled);
    assert_string_equal(got->dlq.target, want->dlq.target);
    assert_int_equal(got->dlq.max_receive, want->dlq.max_receive);
}

/* ---- action names ---------------------------------------------------------- */

static void test_mns_action_names(void **state)
{
    static const struct {
        enum mns_action a;
        const char *name;
    } cases[] = {
        {MNS_CREATE_QUEUE, "CreateQueue"},
        {MNS_SET_QUEUE_ATTRIBUTES, "SetQueueAttributes"},
        {MNS_GET_QUEUE_ATTRIBUTES, "GetQueueAttributes"},
        {MNS_DELETE_QUEUE, "DeleteQueue"},
        {MNS_LIST_QUEUE, "ListQueue"},
        {MNS_SEND_MESSAGE, "SendMessage"},
        {MNS_BATCH_SEND_MESSAGE, "BatchSendMessage"},
        {MNS_RECEIVE_MESSAGE, "ReceiveMessage"},
        {MNS_BATCH_RECEIVE_MESSAGE, "BatchReceiveMessage"},
        {MNS_PEEK_MESSAGE, "PeekMessage"},
        {MNS_BATCH_PEEK_MESSAGE, "BatchPeekMessage"},
        {MNS_DELETE_MESSAGE, "DeleteMessage"},
        {MNS_BATCH_DELETE_MESSAGE, "BatchDeleteMessage"},
        {MNS_CHANGE_MESSAGE_VISIBILITY, "ChangeMessageVisibility"},
        {MNS_CREATE_TOPIC, "CreateTopic"},
        {MNS_SET_TOPIC_ATTRIBUTES, "SetTopicAttributes"},
        {MNS_GET_TOPIC_ATTRIBUTES, "GetTopicAttributes"},
        {MNS_DELETE_TOPIC, "DeleteTopic"},
        {MNS_LIST_TOPIC, "ListTopic"},
        {MNS_PUBLISH_MESSAGE, "PublishMessage"},
        {MNS_SUBSCRIBE, "Subscribe"},
        {MNS_SET_SUBSCRIPTION_ATTRIBUTES, "SetSubscriptionAttributes"},
        {MNS_GET_SUBSCRIPTION_ATTRIBUTES, "GetSubscriptionAttributes"},
        {MNS_UNSUBSCRIBE, "Unsubscribe"},
        {MNS_LIST_SUBSCRIPTION_BY_TOPIC, "ListSubscriptionByTopic"},
    };

    (void)state;
    /* One case per action: the table covers the whole enum. */
    assert_int_equal(sizeof cases / sizeof cases[0], MNS__ACTION_COUNT - 1);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_non_null(mns_action_name(cases[i].a));
        assert_string_equal(mns_action_name(cases[i].a), cases[i].name);
    }
}

static void test_mns_action_names_distinct(void **state)
{
    (void)state;
    for (int a = MNS_UNKNOWN + 1; a < MNS__ACTION_COUNT; a++) {
        const char *na = mns_action_name((enum mns_action)a);
        assert_non_null(na);
        assert_string_not_equal(na, "-");
        for (int b = a + 1; b < MNS__ACTION_COUNT; b++)
            assert_string_not_equal(na, mns_action_name((enum mns_action)b));
    }
}

static void test_mns_action_name_unknown_and_out_of_range(void **state)
{
    (void)state;
    assert_string_equal(mns_action_name(MNS_UNKNOWN), "-");
    assert_string_equal(mns_action_name(MNS__ACTION_COUNT), "-");
    assert_string_equal(mns_action_name((enum mns_action)(MNS__ACTION_COUNT + 1)), "-");
    assert_string_equal(mns_action_name((enum mns_action)1000), "-");
    assert_string_equal(mns_action_name((enum mns_action)-1), "-");
}

/* ---- defaults ----------------------------------------------------------- */

/* Every action is in exactly one class, the one docs/protocol.md §3.7 gives it. */
static void test_mns_action_classes(void **state)
{
    static const struct {
        enum mns_action a;
        unsigned cls;
    } table[] = {
        {MNS_CREATE_QUEUE, GRANT_MANAGE},
        {MNS_SET_QUEUE_ATTRIBUTES, GRANT_MANAGE},
        {MNS_DELETE_QUEUE, GRANT_MANAGE},
        {MNS_GET_QUEUE_ATTRIBUTES, GRANT_LIST},
        {MNS_LIST_QUEUE, GRANT_LIST},
        {MNS_SEND_MESSAGE, GRANT_SEND},
        {MNS_BATCH_SEND_MESSAGE, GRANT_SEND},
        {MNS_RECEIVE_MESSAGE, GRANT_RECEIVE},
        {MNS_BATCH_RECEIVE_MESSAGE, GRANT_RECEIVE},
        {MNS_PEEK_MESSAGE, GRANT_RECEIVE},
        {MNS_BATCH_PEEK_MESSAGE, GRANT_RECEIVE},
        {MNS_DELETE_MESSAGE, GRANT_RECEIVE},
        {MNS_BATCH_DELETE_MESSAGE, GRANT_RECEIVE},
        {MNS_CHANGE_MESSAGE_VISIBILITY, GRANT_RECEIVE},
        {MNS_CREATE_TOPIC, GRANT_MANAGE},
        {MNS_SET_TOPIC_ATTRIBUTES, GRANT_MANAGE},
        {MNS_DELETE_TOPIC, GRANT_MANAGE},
        {MNS_SUBSCRIBE, GRANT_MANAGE},
        {MNS_SET_SUBSCRIPTION_ATTRIBUTES, GRANT_MANAGE},
        {MNS_UNSUBSCRIBE, GRANT_MANAGE},
        {MNS_PUBLISH_MESSAGE, GRANT_SEND},
        {MNS_GET_TOPIC_ATTRIBUTES, GRANT_LIST},
        {MNS_LIST_TOPIC, GRANT_LIST},
        {MNS_GET_SUBSCRIPTION_ATTRIBUTES, GRANT_LIST},
        {MNS_LIST_SUBSCRIPTION_BY_TOPIC, GRANT_LIST},
    };

    (void)state;
    assert_int_equal(sizeof table / sizeof table[0], MNS__ACTION_COUNT - 1);
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        assert_int_equal(mns_action_class(table[i].a), table[i].cls);
    for (int a = MNS_UNKNOWN + 1; a < MNS__ACTION_COUNT; a++) {
        unsigned cls = mns_action_class((enum mns_action)a);
        assert_int_equal(__builtin_popcount(cls), 1);
        assert_int_equal(cls & ~(unsigned)GRANT_ALL_CLASSES, 0);
    }
    assert_int_equal(mns_action_class(MNS_UNKNOWN), 0);
    assert_int_equal(mns_action_class(MNS__ACTION_COUNT), 0);
    assert_int_equal(mns_action_class((enum mns_action)-1), 0);
}

static void test_mns_default_attrs(void **state)
{
    struct smq_queue_attrs a;
    static const char zeros[SMQ_QUEUE_NAME_MAX + 1];

    (void)state;
    defaults(&a);
    assert_int_equal(a.delay_s, 0);
    assert_int_equal(a.max_msg_size, 65536);
    assert_int_equal(a.max_msg_size, SMQ_MSG_SIZE_MAX);
    assert_int_equal(a.retention_s, 345600);
    assert_int_equal(a.visibility_s, 30);
    assert_int_equal(a.polling_wait_s, 0);
    assert_int_equal(a.logging, 0);
    assert_int_equal(a.dlq.enabled, 0);
    assert_int_equal(a.dlq.max_receive, 0);
    /* The whole target is cleared, not just its first byte. */
    assert_memory_equal(a.dlq.target, zeros, sizeof zeros);
    /* Inside the ranges of docs/protocol.md §5. */
    assert_true(a.retention_s >= SMQ_RETENTION_MIN_S && a.retention_s <= SMQ_RETENTION_MAX_S);
    assert_true(a.visibility_s >= SMQ_VISIBILITY_MIN_S && a.visibility_s <= SMQ_VISIBILITY_MAX_S);
}

/* ---- overlay ------------------------------------------------------------ */

static void test_mns_overlay_nothing_present(void **state)
{
    struct smq_queue_attrs base, want, req;

    (void)state;
    defaults(&base);
    defaults(&want);
    request_attrs(&req);
    mns_overlay_attrs(&base, &req, 0);
    assert_attrs(&base, &want);
}

/* Each bit alone changes its own field and nothing else. */
static void test_mns_overlay_each_bit_alone(void **state)
{
    static const unsigned bits[] = {SMQ_ATTR_DELAY, SMQ_ATTR_MAX_MSG_SIZE, SMQ_ATTR_RETENTION,
                                    SMQ_ATTR_VISIBILITY, SMQ_ATTR_POLLING_WAIT,
                                    SMQ_ATTR_LOGGING, SMQ_ATTR_DLQ};
    struct smq_queue_attrs base, want, req;

    (void)state;
    request_attrs(&req);
    for (size_t i = 0; i < sizeof bits / sizeof bits[0]; i++) {
        defaults(&base);
        defaults(&want);
        switch (bits[i]) {
        case SMQ_ATTR_DELAY: want.delay_s = req.delay_s; break;
        case SMQ_ATTR_MAX_MSG_SIZE: want.max_msg_size = req.max_msg_size; break;
        case SMQ_ATTR_RETENTION: want.retention_s = req.retention_s; break;
        case SMQ_ATTR_VISIBILITY: want.visibility_s = req.visibility_s; break;
        case SMQ_ATTR_POLLING_WAIT: want.polling_wait_s = req.polling_wait_s; break;
        case SMQ_ATTR_LOGGING: want.logging = req.logging; break;
        case SMQ_ATTR_DLQ: want.dlq = req.dlq; break;
        default: fail();
        }
        mns_overlay_attrs(&base, &req, bits[i]);
        assert_attrs(&base, &want);
    }
}

static void test_mns_overlay_all_present(void **state)
{
    struct smq_queue_attrs base, req;

    (void)state;
    defaults(&base);
    request_attrs(&req);
    mns_overlay_attrs(&base, &req, SMQ_ATTR_DELAY | SMQ_ATTR_MAX_MSG_SIZE | SMQ_ATTR_RETENTION
                                       | SMQ_ATTR_VISIBILITY | SMQ_ATTR_POLLING_WAIT
                                       | SMQ_ATTR_LOGGING | SMQ_ATTR_DLQ);
    assert_attrs(&base, &req);
    assert_true(mns_attrs_equal(&base, &req));
}

/* Logging can be switched off again, and a zero value is a value. */
static void test_mns_overlay_zero_values(void **state)
{
    struct smq_queue_attrs base, req;

    (void)state;
    request_attrs(&base);
    memset(&req, 0, sizeof req);
    mns_overlay_attrs(&base, &req, SMQ_ATTR_DELAY | SMQ_ATTR_LOGGING | SMQ_ATTR_POLLING_WAIT);
    assert_int_equal(base.delay_s, 0);
    assert_int_equal(base.logging, 0);
    assert_int_equal(base.polling_wait_s, 0);
    assert_int_equal(base.visibility_s, 45);
    assert_int_equal(base.dlq.enabled, 1);
}

/* SMQ_ATTR_DLQ replaces enabled, target and max_receive together; a
 * shorter target leaves nothing of the longer one behind. */
static void test_mns_overlay_dlq_replaced_whole(void **state)
{
    struct smq_queue_attrs base, req;
    char want[SMQ_QUEUE_NAME_MAX + 1];

    (void)state;
    defaults(&base);
    base.dlq.enabled = 1;
    memset(base.dlq.target, 'x', SMQ_QUEUE_NAME_MAX);
    base.dlq.target[SMQ_QUEUE_NAME_MAX] = '\0';
    base.dlq.max_receive = 1000;
    defaults(&req);
    req.dlq.enabled = 1;
    snprintf(req.dlq.target, sizeof req.dlq.target, "d");
    req.dlq.max_receive = 2;
    mns_overlay_attrs(&base, &req, SMQ_ATTR_DLQ);
    assert_int_equal(base.dlq.enabled, 1);
    assert_string_equal(base.dlq.target, "d");
    assert_int_equal(base.dlq.max_receive, 2);
    memset(want, 0, sizeof want);
    want[0] = 'd';
    assert_memory_equal(base.dlq.target, want, sizeof want);
}

/* A request that disables the policy clears it, whatever else it carries. */
static void test_mns_overlay_dlq_disabled_clears(void **state)
{
    struct smq_queue_attrs base, req;

    (void)state;
    request_attrs(&base);
    request_attrs(&req);
    req.dlq.enabled = 0;
    snprintf(req.dlq.target, sizeof req.dlq.target, "left-over");
    req.dlq.max_receive = 7;
    mns_overlay_attrs(&base, &req, SMQ_ATTR_DLQ);
    assert_int_equal(base.dlq.enabled, 0);
    assert_string_equal(base.dlq.target, "");
    assert_int_equal(base.dlq.max_receive, 0);
    /* The rest is untouched. */
    assert_int_equal(base.visibility_s, 45);
    assert_int_equal(base.logging, 1);
}

/* Without SMQ_ATTR_DLQ the policy stays as it was, even when the request's
 * differs. */
static void test_mns_overlay_dlq_absent_keeps(void **state)
{
    struct smq_queue_attrs base, req;

    (void)state;
    request_attrs(&base);
    memset(&req, 0, sizeof req);
    mns_overlay_attrs(&base, &req, SMQ_ATTR_VISIBILITY);
    assert_int_equal(base.visibility_s, 0);
    assert_int_equal(base.dlq.enabled, 1);
    assert_string_equal(base.dlq.target, "orders-dlq");
    assert_int_equal(base.dlq.max_receive, 3);
}

/* ---- equality --------------------------------------------------------------- */

static void test_mns_attrs_equal_each_field(void **state)
{
    struct smq_queue_attrs a, b;

    (void)state;
    request_attrs(&a);
    for (int field = -1; field < 9; field++) {
        request_attrs(&b);
        switch (field) {
        case -1: break;
        case 0: b.delay_s++; break;
        case 1: b.max_msg_size++; break;
        case 2: b.retention_s++; break;
        case 3: b.visibility_s++; break;
        case 4: b.polling_wait_s++; break;
        case 5: b.logging = 0; break;
        case 6: b.dlq.enabled = 0; break;
        case 7: b.dlq.target[0] = 'O'; break;
        case 8: b.dlq.max_receive++; break;
        default: break;
        }
        assert_true(mns_attrs_equal(&a, &b) == (field == -1));
        assert_true(mns_attrs_equal(&b, &a) == (field == -1));
    }
}

/* The target compares as a string: bytes after its NUL do not count, a
 * prefix is not equal. */
static void test_mns_attrs_equal_target_as_string(void **state)
{
    struct smq_queue_attrs a, b;

    (void)state;
    request_attrs(&a);
    request_attrs(&b);
    b.dlq.target[sizeof b.dlq.target - 1] = '\0';
    memset(b.dlq.target + strlen("orders-dlq") + 1, 'z',
           sizeof b.dlq.target - strlen("orders-dlq") - 2);
    assert_true(mns_attrs_equal(&a, &b));
    snprintf(b.dlq.target, sizeof b.dlq.target, "orders-dl");
    assert_false(mns_attrs_equal(&a, &b));
    snprintf(b.dlq.target, sizeof b.dlq.target, "orders-dlqq");
    assert_false(mns_attrs_equal(&a, &b));
    defaults(&a);
    defaults(&b);
    assert_true(mns_attrs_equal(&a, &b));
}

/* Stored strategy and format values come back as their enum; anything
 * else (a row written by a newer version) is the default. */
static void test_mns_notify_enums_of_stored(void **state)
{
    (void)state;
    assert_int_equal(mns_notify_strategy_of(SMQ_NOTIFY_EXPONENTIAL_DECAY_RETRY),
                     SMQ_NOTIFY_EXPONENTIAL_DECAY_RETRY);
    assert_int_equal(mns_notify_strategy_of(SMQ_NOTIFY_BACKOFF_RETRY), SMQ_NOTIFY_BACKOFF_RETRY);
    assert_int_equal(mns_notify_strategy_of(7), SMQ_NOTIFY_BACKOFF_RETRY);
    assert_int_equal(mns_notify_strategy_of(-1), SMQ_NOTIFY_BACKOFF_RETRY);
    assert_int_equal(mns_notify_format_of(SMQ_NOTIFY_JSON), SMQ_NOTIFY_JSON);
    assert_int_equal(mns_notify_format_of(SMQ_NOTIFY_SIMPLIFIED), SMQ_NOTIFY_SIMPLIFIED);
    assert_int_equal(mns_notify_format_of(SMQ_NOTIFY_XML), SMQ_NOTIFY_XML);
    assert_int_equal(mns_notify_format_of(3), SMQ_NOTIFY_XML);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mns_action_names),
        cmocka_unit_test(test_mns_notify_enums_of_stored),
        cmocka_unit_test(test_mns_action_names_distinct),
        cmocka_unit_test(test_mns_action_name_unknown_and_out_of_range),
        cmocka_unit_test(test_mns_action_classes),
        cmocka_unit_test(test_mns_default_attrs),
        cmocka_unit_test(test_mns_overlay_nothing_present),
        cmocka_unit_test(test_mns_overlay_each_bit_alone),
        cmocka_unit_test(test_mns_overlay_all_present),
        cmocka_unit_test(test_mns_overlay_zero_values),
        cmocka_unit_test(test_mns_overlay_dlq_replaced_whole),
        cmocka_unit_test(test_mns_overlay_dlq_disabled_clears),
        cmocka_unit_test(test_mns_overlay_dlq_absent_keeps),
        cmocka_unit_test(test_mns_attrs_equal_each_field),
        cmocka_unit_test(test_mns_attrs_equal_target_as_string),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
