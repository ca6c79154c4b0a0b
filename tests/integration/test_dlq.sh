#!/usr/bin/env bash
# test_dlq.sh — dead-letter queues and operation logs through the MNS XML API of the real
# smqd binary (docs/protocol-decisions.md "Dead-letter queues", docs/operations.md):
# setting the policy nested (<DlqPolicy>, the control plane's names) or flat, reading it back
# flat, validation that changes nothing, the move after MaxReceiveCount receives (same
# MessageId, body and EnqueueTime), a missing target never dropping a message, the policy and
# the moved message surviving a restart, and OPLOG lines for LoggingEnabled queues.
#
# Run: SMQD_BIN=build/smqd bash tests/integration/test_dlq.sh

set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"

require_tools curl openssl xmllint md5sum base64 awk sed sqlite3
require_bin

dlq_policy_body() {   # TARGET MAX [ENABLED] — CreateQueue body with a nested policy
    printf '<?xml version="1.0" encoding="UTF-8"?><Queue xmlns="%s/"><VisibilityTimeout>1</VisibilityTimeout><LoggingEnabled>True</LoggingEnabled><DlqPolicy><Enabled>%s</Enabled><DeadLetterTargetQueue>%s</DeadLetterTargetQueue><MaxReceiveCount>%s</MaxReceiveCount></DlqPolicy></Queue>' \
        "$MNS_NS" "${3:-true}" "$1" "$2"
}

receive() {   # Q — ReceiveMessage without waiting; sets RH, MID
    mns_request GET "/queues/$1/messages?waitseconds=0"
    RH=$(xml_get ReceiptHandle)
    MID=$(xml_get MessageId)
}

# receive_until_gone Q — receives Q's one message until the receive finds nothing (the move
# happened); counts deliveries in DELIVERIES. After the first, each receive long-polls 3 s:
# with VisibilityTimeout 1 s the message is Active again within that (the poll wakes then,
# however late a loaded machine runs the timer), and once it has moved the poll finds nothing.
# A fixed sleep of 1.1 s assumed the timer had run by then.
receive_until_gone() {
    local q=$1 i
    DELIVERIES=0
    receive "$q"
    for i in 1 2 3 4 5 6; do
        [ "$RESP_STATUS" = 200 ] || return 0
        DELIVERIES=$((DELIVERIES + 1))
        mns_request GET "/queues/$q/messages?waitseconds=3"
    done
}

test_policy_set_and_read_flat() {
    create_queue orders-dlq
    mns_request PUT /queues/orders "$(dlq_policy_body orders-dlq 2)"
    assert_status "create with a nested DlqPolicy" 201
    mns_request GET /queues/orders
    assert_status "get attributes" 200
    assert_xml "DlqEnabled flat" DlqEnabled True
    assert_xml "DlqTargetQueue flat" DlqTargetQueue orders-dlq
    assert_xml "DlqMaxReceiveCount flat" DlqMaxReceiveCount 2
    assert_eq "no nested element inside <Queue> (Python SDK decoder)" 0 "$(xml_count DlqPolicy)"
    mns_request GET /queues/orders-dlq
    assert_eq "a queue without a policy shows no Dlq elements" 0 "$(xml_count DlqEnabled)"
    assert_children "attributes of a queue without a policy are the service's" Queue \
        'QueueName CreateTime LastModifyTime DelaySeconds MaximumMessageSize MessageRetentionPeriod VisibilityTimeout PollingWaitSeconds ActiveMessages InactiveMessages DelayMessages LoggingEnabled'
    # The same CreateQueue again is idempotent; a different policy conflicts.
    mns_request PUT /queues/orders "$(dlq_policy_body orders-dlq 2)"
    assert_status "same create again" 204
    mns_request PUT /queues/orders "$(dlq_policy_body orders-dlq 3)"
    assert_error "create with another policy" 409 QueueAlreadyExist
}

test_policy_validation_changes_nothing() {
    mns_request PUT "/queues/orders?metaoverride=true" "$(dlq_policy_body nowhere 2)"
    assert_error "target must exist" 400 InvalidArgument
    mns_request PUT "/queues/orders?metaoverride=true" "$(dlq_policy_body orders 2)"
    assert_error "target must not be the queue itself" 400 InvalidArgument
    mns_request PUT "/queues/orders?metaoverride=true" "$(dlq_policy_body orders-dlq 0)"
    assert_error "MaxReceiveCount below 1" 400 InvalidArgument
    mns_request PUT "/queues/orders?metaoverride=true" "$(dlq_policy_body orders-dlq 1001)"
    assert_error "MaxReceiveCount above 1000" 400 InvalidArgument
    mns_request PUT "/queues/orders?metaoverride=true" "$(dlq_policy_body 'bad*name' 2)"
    assert_error "target not a queue name" 400 InvalidQueueName
    mns_request PUT "/queues/orders?metaoverride=true" \
        "<Queue xmlns=\"$MNS_NS/\"><DlqPolicy><Enabled>true</Enabled></DlqPolicy></Queue>"
    assert_error "policy without a target" 400 InvalidArgument
    mns_request GET /queues/orders
    assert_xml "policy unchanged after refusals" DlqTargetQueue orders-dlq
    assert_xml "MaxReceiveCount unchanged" DlqMaxReceiveCount 2
}

test_move_after_max_receives() {
    local sent_id enq
    send_msg orders "poison <pill> & co"
    sent_id=$LAST_MSG_ID
    receive_until_gone orders
    assert_eq "delivered MaxReceiveCount times, then moved" 2 "$DELIVERIES"
    assert_error "the source no longer has it" 404 MessageNotExist
    mns_request GET /queues/orders
    assert_xml "source empty" ActiveMessages 0
    assert_xml "source has nothing in flight" InactiveMessages 0
    mns_request GET /queues/orders-dlq
    assert_xml "DLQ holds it" ActiveMessages 1
    mns_request GET "/queues/orders-dlq/messages?peekonly=true"
    assert_status "peek the DLQ" 200
    assert_xml "same MessageId" MessageId "$sent_id"
    assert_xml "same body" MessageBody "poison <pill> & co"
    assert_xml "receives counted afresh" DequeueCount 0
    enq=$(xml_get EnqueueTime)
    DLQ_MSG_ID=$sent_id
    DLQ_ENQ=$enq
}

test_policy_and_message_survive_restart() {
    smqd_stop
    smqd_start "$SMQD_DIR" || return
    mns_request GET /queues/orders
    assert_xml "policy kept over a restart" DlqTargetQueue orders-dlq
    mns_request GET "/queues/orders-dlq/messages?peekonly=true"
    assert_xml "moved message kept over a restart" MessageId "$DLQ_MSG_ID"
    assert_xml "EnqueueTime kept" EnqueueTime "$DLQ_ENQ"
}

test_missing_target_never_drops() {
    create_queue gone-dlq
    mns_request PUT /queues/fragile "$(dlq_policy_body gone-dlq 1)"
    assert_status "create fragile" 201
    mns_request DELETE /queues/gone-dlq
    assert_status "delete its DLQ" 204
    send_msg fragile "keep me"
    receive fragile
    assert_status "first delivery" 200
    # VisibilityTimeout 1 s: a long poll wakes when it is Active again (not a fixed sleep).
    mns_request GET "/queues/fragile/messages?waitseconds=5"
    assert_status "delivered again although past MaxReceiveCount (no target)" 200
    assert_xml "the same message" MessageBody "keep me"
    assert_xml "counted" DequeueCount 2
    assert_match "the failed move is logged" 'dead-letter queue gone-dlq does not exist' \
        "$(cat "$SMQD_LOG")"
}

test_disable_policy() {
    mns_request PUT "/queues/orders?metaoverride=true" \
        "<Queue xmlns=\"$MNS_NS/\"><DlqPolicy><Enabled>false</Enabled></DlqPolicy></Queue>"
    assert_status "disable the policy" 204
    mns_request GET /queues/orders
    assert_eq "no Dlq elements once disabled" 0 "$(xml_count DlqEnabled)"
}

test_operation_log() {
    local log oplog
    log=$(cat "$SMQD_DIR"/smqd.*.log)
    oplog=$(printf '%s\n' "$log" | grep ' OPLOG ' || true)
    assert_match "send logged" "queue=orders event=send message_id=$DLQ_MSG_ID dequeue_count=0 request_id=[0-9A-F]{24}" "$oplog"
    assert_match "receive logged with the dequeue count" "queue=orders event=receive message_id=$DLQ_MSG_ID dequeue_count=2 " "$oplog"
    assert_match "dead-letter logged with its target" "queue=orders event=dead_letter message_id=$DLQ_MSG_ID dequeue_count=2 to=orders-dlq" "$oplog"
    if printf '%s' "$log" | grep -q 'poison'; then
        not_ok "the operation log never contains a body"
    else
        ok "the operation log never contains a body"
    fi
    # orders-dlq received a dead-lettered message: had its LoggingEnabled=False been
    # ignored, the move would have logged a line for it too.
    if printf '%s\n' "$oplog" | grep -q 'queue=orders-dlq '; then
        not_ok "a queue without LoggingEnabled is not logged"
    else
        ok "a queue without LoggingEnabled is not logged"
    fi
}

# Queues declared in the configuration: created at start-up, policy set; a target that is
# neither declared nor existing stops the start (exit 1) before anything is created.
test_config_declared_queues() {
    local dir rc
    new_server_dir
    dir=$NEW_DIR
    printf '[queue.cfg-src]\ndlq_target = cfg-dlq\ndlq_max_receive_count = 4\n[queue.cfg-dlq]\n' \
        >>"$dir/smqd.conf"
    smqd_start "$dir" || return
    mns_request GET /queues/cfg-src
    assert_status "declared queue exists" 200
    assert_xml "declared policy target" DlqTargetQueue cfg-dlq
    assert_xml "declared policy count" DlqMaxReceiveCount 4
    mns_request GET /queues/cfg-dlq
    assert_status "declared target exists" 200
    smqd_stop
    printf '[queue.other]\ndlq_target = nowhere\ndlq_max_receive_count = 2\n' >>"$dir/smqd.conf"
    timeout 10 "$SMQD_BIN" -c "$dir/smqd.conf" >"$dir/bad.log" 2>&1 </dev/null
    rc=$?
    assert_eq "an undeclared, missing target stops the start" 1 "$rc"
    assert_match "and says why" 'dlq_target nowhere is neither declared' "$(cat "$dir/bad.log")"
    assert_eq "nothing was created" 0 "$(sqlite3 "$dir/smqd.db" "SELECT count(*) FROM queue WHERE name = 'other'")"
}

smqd_start || finish
run_test test_policy_set_and_read_flat
run_test test_policy_validation_changes_nothing
run_test test_move_after_max_receives
run_test test_policy_and_message_survive_restart
run_test test_missing_target_never_drops
run_test test_disable_policy
run_test test_operation_log
smqd_stop
run_test test_config_declared_queues
finish
