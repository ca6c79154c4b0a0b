#!/usr/bin/env bash
# test_java_surface.sh — the parts of the wire protocol only the Java SDK 2.x uses, sent as
# that SDK writes them (docs/protocol.md §6.4, §7.6): message properties (UserProperties,
# SystemProperties, MessageGroupId) kept and returned on receive and peek, refused when the
# Java decoder could not read them back; and the receipt handle of a delayed send, with
# which its TransactionQueue commits (ChangeMessageVisibility 1 s) or rolls back
# (DeleteMessage) a prepared message.
#
# Run: SMQD_BIN=build/smqd bash tests/integration/test_java_surface.sh

set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"

require_tools curl openssl xmllint md5sum base64 awk sed
require_bin

counts() {
    mns_request GET "/queues/$1"
    echo "$(xml_get ActiveMessages) $(xml_get InactiveMessages) $(xml_get DelayMessages)"
}

# The extensions exactly as the Java SDK 2.0.0 serialises them (XMLSerializer.serializeMessage:
# body, delay, priority, then UserProperties, SystemProperties, MessageGroupId).
PROPS='<UserProperties><PropertyValue><Name>orderId</Name><Value>42</Value><Type>NUMBER</Type></PropertyValue><PropertyValue><Name>note</Name><Value>a &amp; b</Value><Type>STRING</Type></PropertyValue><PropertyValue><Name>vip</Name><Value>true</Value><Type>BOOLEAN</Type></PropertyValue><PropertyValue><Name>blob</Name><Value>AAEC/w==</Value><Type>BINARY</Type></PropertyValue></UserProperties>'
SYSPROPS='<SystemProperties><SystemPropertyValue><Name>traceparent</Name><Value>00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01</Value><Type>STRING</Type></SystemPropertyValue></SystemProperties>'
GROUP='<MessageGroupId>group-1</MessageGroupId>'

java_message() {   # java_message BODY EXTRA_XML [DELAY]
    printf '<?xml version="1.0" encoding="UTF-8" standalone="no"?><Message xmlns="%s"><MessageBody>%s</MessageBody>%s%s</Message>' \
        "$MNS_NS" "$1" "${3:+<DelaySeconds>$3</DelaySeconds>}" "$2"
}

# The children of the first <Message>'s element NAME, serialised (what a decoder reads).
fragment() {
    printf '%s' "$RESP_BODY" | xmllint --xpath "(//*[local-name()='Message'])[1]/*[local-name()='$1']" - 2>/dev/null \
        | sed 's/ xmlns="[^"]*"//g'
}

expect_props_back() {   # expect_props_back WHAT
    assert_eq "$1: UserProperties as sent" "$PROPS" "$(fragment UserProperties)"
    assert_eq "$1: SystemProperties as sent" "$SYSPROPS" "$(fragment SystemProperties)"
    assert_eq "$1: MessageGroupId as sent" "$GROUP" "$(fragment MessageGroupId)"
}

t_properties_round_trip() {
    create_queue jprops
    mns_request POST /queues/jprops/messages "$(java_message with "$PROPS$SYSPROPS$GROUP")"
    assert_status "a send with properties is accepted" 201
    mns_request POST /queues/jprops/messages "$(java_message without '')"
    assert_status "a plain send" 201
    mns_request GET '/queues/jprops/messages?peekonly=true'
    expect_props_back "peek"
    smqd_restart_same_data || return
    mns_request GET '/queues/jprops/messages?numOfMessages=2'
    assert_status "batch receive of both" 200
    expect_props_back "receive after a restart"
    assert_eq "the plain message carries none of them" 0 \
        "$(printf '%s' "$RESP_BODY" | xmllint --xpath "count((//*[local-name()='Message'])[2]/*[local-name()='UserProperties' or local-name()='SystemProperties' or local-name()='MessageGroupId'])" - 2>/dev/null)"
    # In a batch, each message keeps its own.
    mns_request POST /queues/jprops/messages "<?xml version=\"1.0\"?><Messages xmlns=\"$MNS_NS\"><Message><MessageBody>b1</MessageBody>$GROUP</Message><Message><MessageBody>b2</MessageBody></Message></Messages>"
    assert_status "a batch send with a group id" 201
    assert_eq "a batch send answers no ReceiptHandle" 0 "$(xml_count ReceiptHandle)"
}

t_properties_refused() {
    local many='' i
    create_queue jbad
    for i in $(seq 1 51); do many+="<PropertyValue><Name>p$i</Name><Value>1</Value><Type>NUMBER</Type></PropertyValue>"; done
    mns_request POST /queues/jbad/messages "$(java_message x "<UserProperties>$many</UserProperties>")"
    assert_error "51 user properties" 400 InvalidArgument
    mns_request POST /queues/jbad/messages "$(java_message x '<UserProperties><PropertyValue><Name>n</Name><Value>ten</Value><Type>NUMBER</Type></PropertyValue></UserProperties>')"
    assert_error "a NUMBER that is not a number" 400 InvalidArgument
    mns_request POST /queues/jbad/messages "$(java_message x '<UserProperties><PropertyValue><Name>n</Name><Value>v</Value><Type>TEXT</Type></PropertyValue></UserProperties>')"
    assert_error "an unknown property type" 400 InvalidArgument
    mns_request POST /queues/jbad/messages "$(java_message x '<SystemProperties><SystemPropertyValue><Name>x-trace</Name><Value>v</Value><Type>STRING</Type></SystemPropertyValue></SystemProperties>')"
    assert_error "an unknown system property" 400 InvalidArgument
    mns_request POST /queues/jbad/messages "$(java_message x "$GROUP$GROUP")"
    assert_error "two MessageGroupIds" 400 MalformedXML
    mns_request POST /queues/jbad/messages "<?xml version=\"1.0\"?><Messages xmlns=\"$MNS_NS\"><Message><MessageBody>ok</MessageBody></Message><Message><MessageBody>b</MessageBody><UserProperties><PropertyValue><Name>k</Name><Value>maybe</Value><Type>BOOLEAN</Type></PropertyValue></UserProperties></Message></Messages>"
    assert_error "a batch with one bad property" 400 InvalidArgument
    assert_eq "nothing refused was stored" "0 0 0" "$(counts jbad)"
}

# Java TransactionQueue: prepare = send with a 48 h delay; commit = ChangeMessageVisibility
# of the send's handle to 1 s; rollback = DeleteMessage of it.
t_delayed_send_handle() {
    local commit rollback plain t0 t1
    create_queue jtx
    mns_request POST /queues/jtx/messages "$(java_message commit '' 172800)"
    assert_status "prepare (commit)" 201
    assert_xml_re "a delayed send answers a ReceiptHandle" ReceiptHandle '^[A-Za-z0-9_-]{27}$'
    commit=$(xml_get ReceiptHandle)
    mns_request POST /queues/jtx/messages "$(java_message rollback '' 172800)"
    rollback=$(xml_get ReceiptHandle)
    mns_request POST /queues/jtx/messages "$(java_message plain '')"
    assert_eq "an immediate send answers none" 0 "$(xml_count ReceiptHandle)"
    assert_eq "two Delayed, one Active" "1 0 2" "$(counts jtx)"

    # A prepared transaction lives for up to 48 h: its handle must outlive a restart.
    smqd_restart_same_data || return
    mns_request DELETE "/queues/jtx/messages?ReceiptHandle=$rollback"
    assert_status "rollback deletes the Delayed message (after a restart)" 204
    mns_request DELETE "/queues/jtx/messages?ReceiptHandle=$rollback"
    assert_error "its handle is then spent" 404 MessageNotExist
    t0=$(now_ms)
    mns_request PUT "/queues/jtx/messages?ReceiptHandle=$commit&VisibilityTimeout=1"
    t1=$(now_ms)
    assert_status "commit: ChangeMessageVisibility of the send's handle" 200
    assert_eq "root is ChangeVisibility" ChangeVisibility "$(xml_root)"
    # 1 s after the moment smqd handled it, which lies between t0 and t1 however slow.
    assert_range "visible in about 1 s" $((t0 + 1000 - 100)) $((t1 + 1000)) "$(xml_get NextVisibleTime)"
    mns_request GET /queues/jtx/messages?waitseconds=1
    assert_xml "the plain one is received first" MessageBody plain
    mns_request GET /queues/jtx/messages?waitseconds=5
    assert_status "the committed message is delivered" 200
    assert_xml "it is the committed one" MessageBody commit
    mns_request DELETE "/queues/jtx/messages?ReceiptHandle=$commit"
    assert_error "the send's handle no longer applies once it was delivered" 404 MessageNotExist
}

if smqd_start; then
    run_test t_properties_round_trip
    run_test t_properties_refused
    run_test t_delayed_send_handle
    smqd_stop
fi
finish
