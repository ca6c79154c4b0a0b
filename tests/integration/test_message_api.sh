#!/usr/bin/env bash
# test_message_api.sh — message operations (docs/protocol.md §6–§7, protocol-decisions.md):
# send/batch send, receive/batch receive with long polling, peek, delete/batch delete,
# ChangeMessageVisibility, ordering, delays, counters and crash/restart state, against the
# real smqd binary over loopback HTTP.
#
# Timing checks wait on real time (DelaySeconds and VisibilityTimeout are whole seconds), so
# they use the smallest values the API allows and poll with deadlines; no step waits more
# than a few seconds.
#
# Run: SMQD_BIN=build/smqd bash tests/integration/test_message_api.sh

set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"

require_tools curl openssl xmllint md5sum base64 awk sed
require_bin

RECEIVE_ELEMENTS='DequeueCount EnqueueTime FirstDequeueTime MessageBody MessageBodyMD5 MessageId NextVisibleTime Priority ReceiptHandle'
PEEK_ELEMENTS='DequeueCount EnqueueTime FirstDequeueTime MessageBody MessageBodyMD5 MessageId Priority'

sorted_words() { printf '%s\n' "$@" | LC_ALL=C sort | tr '\n' ' '; }

# message_children_sorted [N] — sorted child names of the Nth <Message>.
message_children_sorted() {
    printf '%s' "$RESP_BODY" \
        | xmllint --xpath "(//*[local-name()='Message'])[${1:-1}]/*" - 2>/dev/null \
        | grep -o '<[A-Za-z][A-Za-z0-9]*' | sed 's/^<//' | LC_ALL=C sort | tr '\n' ' '
}

# receive Q [QUERY] — ReceiveMessage; on 200 sets RH (receipt handle) and MID.
receive() {
    local q=$1 query=${2:-}
    mns_request GET "/queues/$q/messages${query:+?$query}"
    RH=$(xml_get ReceiptHandle)
    MID=$(xml_get MessageId)
}

# counts Q — "Active Inactive Delay" from GetQueueAttributes.
counts() {
    mns_request GET "/queues/$1"
    echo "$(xml_get ActiveMessages) $(xml_get InactiveMessages) $(xml_get DelayMessages)"
}

# Time on the server's side. A request's client-side time (RESP_MS, BG_MS, now_ms around
# it) also counts bash signing it and starting curl, which on a loaded machine or under
# ASan takes anything up to seconds; the request line smqd logs for each answer (after it
# is sent, so it is polled for) has its own latency_ms (request line to answer) and a
# timestamp, which is what smqd promises anything about.

# request_line ID — the log's request line of request ID (waits up to 10 s for it).
request_line() {
    local deadline=$(( $(now_ms) + 10000 )) line
    while :; do
        line=$(grep -m 1 "request id=$1 " "$SMQD_LOG")
        [ -n "$line" ] && { printf '%s' "$line"; return 0; }
        [ "$(now_ms)" -ge "$deadline" ] && return 1
        sleep 0.02
    done
}

# server_ms — whole ms smqd took to answer the last request (RESP_ID); "none" without a line.
server_ms() {
    local line
    line=$(request_line "$RESP_ID") || { echo none; return; }
    line=${line##*latency_ms=}
    echo "${line%%.*}"
}

# logged_at LINE — epoch ms of a log line's timestamp.
logged_at() { date -d "${1%% *}" +%s%3N; }

# nth_request_line N PATTERN — the Nth request line matching PATTERN (waits up to 10 s).
nth_request_line() {
    local n=$1 deadline=$(( $(now_ms) + 10000 )) line
    while :; do
        line=$(grep "INFO request id=.*$2" "$SMQD_LOG" | sed -n "${n}p")
        [ -n "$line" ] && { printf '%s' "$line"; return 0; }
        [ "$(now_ms)" -ge "$deadline" ] && return 1
        sleep 0.02
    done
}

# batch_xml BODY... — <Messages> with one plain message per argument.
batch_xml() {
    local x="<?xml version=\"1.0\" encoding=\"UTF-8\"?><Messages xmlns=\"$MNS_NS/\">" b
    for b in "$@"; do x+=$(message_xml "$b"); done
    printf '%s</Messages>' "$x"
}

# handles_xml H... — BatchDeleteMessage body.
handles_xml() {
    local x="<?xml version=\"1.0\" encoding=\"UTF-8\"?><ReceiptHandles xmlns=\"$MNS_NS/\">" h
    for h in "$@"; do x+="<ReceiptHandle>$h</ReceiptHandle>"; done
    printf '%s</ReceiptHandles>' "$x"
}

# repeat_char C N — a string of N copies of C.
repeat_char() { head -c "$2" /dev/zero | tr '\0' "$1"; }

# ---------------------------------------------------------------------------------------
# SendMessage / BatchSendMessage (docs/protocol.md §7.6, §7.7)
# ---------------------------------------------------------------------------------------

t_send_message() {
    local q=sendq body
    create_queue "$q"
    mns_request POST "/queues/$q/messages" "$(message_body 'hello world')"
    assert_status "SendMessage -> 201" 201
    assert_eq "root element is Message" Message "$(xml_root)"
    assert_xml_re "MessageId is 32 uppercase hex" MessageId '^[0-9A-F]{32}$'
    assert_xml "MessageBodyMD5 is uppercase MD5 of the body" MessageBodyMD5 "$(md5_upper 'hello world')"
    local id1
    id1=$(xml_get MessageId)
    send_msg "$q" 'hello world'
    assert_ne "MessageIds are unique" "$id1" "$LAST_MSG_ID"

    # The doc's real-service capture: UTF-8 text and its MD5.
    mns_request POST "/queues/$q/messages" "$(message_body 'I am 测试字符串.')"
    assert_xml "MD5 of UTF-8 body (doc capture)" MessageBodyMD5 9D75198CAA17528AB23790C1861987AF
    # MD5 is over the text after XML unescaping (docs/protocol.md §6.1).
    body='a<b & "c" > '\''d'\'
    mns_request POST "/queues/$q/messages" "$(message_body "$body")"
    assert_xml "MD5 of the unescaped text" MessageBodyMD5 "$(md5_upper "$body")"

    mns_request POST /queues/no-such-queue/messages "$(message_body x)"
    assert_error "send to a missing queue" 404 QueueNotExist
    mns_request POST "/queues/$q/messages" "<?xml version=\"1.0\"?><Message><MessageBody></MessageBody></Message>"
    assert_error "empty MessageBody" 400 InvalidArgument
    mns_request POST "/queues/$q/messages" "<?xml version=\"1.0\"?><Message><Priority>3</Priority></Message>"
    assert_error "missing MessageBody" 400 InvalidArgument
    mns_request POST "/queues/$q/messages" '<Message><MessageBody>x</MessageBody'
    assert_error "malformed XML" 400 MalformedXML

    mns_request POST "/queues/$q/messages" "$(message_body x DelaySeconds -1)"
    assert_error "DelaySeconds -1" 400 InvalidArgument
    mns_request POST "/queues/$q/messages" "$(message_body x DelaySeconds 604801)"
    assert_error "DelaySeconds 604801" 400 InvalidArgument
    mns_request POST "/queues/$q/messages" "$(message_body x Priority 17)"
    assert_error "Priority 17" 400 InvalidArgument
    mns_request POST "/queues/$q/messages" "$(message_body x Priority -1)"
    assert_error "Priority -1" 400 InvalidArgument
    mns_request POST "/queues/$q/messages" "$(message_body x Priority high)"
    assert_error "Priority not a number" 400 InvalidArgument
    assert_eq "rejected sends stored nothing (4 active)" "4 0 0" "$(counts "$q")"

    # Go sends no namespace and always <Priority>0</Priority>: 0 means the default 8.
    create_queue prio0q
    mns_request POST /queues/prio0q/messages '<?xml version="1.0" encoding="UTF-8"?><Message><MessageBody>go</MessageBody><DelaySeconds>0</DelaySeconds><Priority>0</Priority></Message>'
    assert_status "Go-style Priority 0 accepted" 201
    mns_request GET "/queues/prio0q/messages?peekonly=true"
    assert_xml "Priority 0 stored as 8" Priority 8
    send_msg prio0q edge DelaySeconds 604800 Priority 16
    send_msg prio0q edge1 Priority 1
    assert_eq "DelaySeconds 604800 is delayed" "2 0 1" "$(counts prio0q)"
}

t_message_size() {
    local q=sizeq b
    create_queue "$q" MaximumMessageSize 1024
    mns_request POST "/queues/$q/messages" "$(message_body "$(repeat_char a 1024)")"
    assert_status "body of exactly MaximumMessageSize" 201
    mns_request POST "/queues/$q/messages" "$(message_body "$(repeat_char a 1025)")"
    assert_error "body one byte over MaximumMessageSize" 400 InvalidArgument
    # Size is in UTF-8 bytes: 1023 ASCII + 'é' (2 bytes) = 1025 bytes.
    mns_request POST "/queues/$q/messages" "$(message_body "$(repeat_char a 1023)é")"
    assert_error "size counted in UTF-8 bytes" 400 InvalidArgument
    # Escapes count after unescaping: 1024 '&' are 1024 bytes of text but 5120 on the wire.
    mns_request POST "/queues/$q/messages" "$(message_body "$(repeat_char '&' 1024)")"
    assert_status "size measured after XML unescaping" 201

    create_queue bigq
    b=$(repeat_char b 65536)
    mns_request POST /queues/bigq/messages "$(message_body "$b")"
    assert_status "64 KiB body with the default limit" 201
    receive bigq
    assert_eq "64 KiB body comes back intact" "$(md5_upper "$b")" "$(md5_upper "$(xml_get MessageBody)")"
    mns_request POST /queues/bigq/messages "$(message_body "${b}b")"
    assert_error "65537-byte body" 400 InvalidArgument
}

t_batch_send() {
    local q=bsendq i
    create_queue "$q"
    mns_request POST "/queues/$q/messages" "$(batch_xml one two three)"
    assert_status "BatchSendMessage -> 201" 201
    assert_eq "root element is Messages" Messages "$(xml_root)"
    assert_eq "one entry per input" 3 "$(xml_count Message)"
    i=1
    for b in one two three; do
        assert_xml "entry $i MD5 in input order" MessageBodyMD5 "$(md5_upper "$b")" "$i"
        assert_xml_re "entry $i MessageId" MessageId '^[0-9A-F]{32}$' "$i"
        i=$((i + 1))
    done
    assert_eq "three messages stored" "3 0 0" "$(counts "$q")"

    local -a sixteen=() seventeen=()
    for i in $(seq 1 16); do sixteen+=("m$i"); done
    seventeen=("${sixteen[@]}" m17)
    mns_request POST "/queues/$q/messages" "$(batch_xml "${sixteen[@]}")"
    assert_status "16 messages in one batch" 201
    assert_eq "16 entries" 16 "$(xml_count MessageId)"

    create_queue bsend-refused
    mns_request POST /queues/bsend-refused/messages "$(batch_xml "${seventeen[@]}")"
    assert_error "17 messages" 400 InvalidArgument
    mns_request POST /queues/bsend-refused/messages "<?xml version=\"1.0\"?><Messages xmlns=\"$MNS_NS/\"></Messages>"
    assert_error "0 messages" 400 InvalidArgument
    local x="<?xml version=\"1.0\"?><Messages>$(message_xml ok1)$(message_xml bad Priority 17)$(message_xml ok2)</Messages>"
    mns_request POST /queues/bsend-refused/messages "$x"
    assert_error "one invalid item refuses the whole batch" 400 InvalidArgument
    x="<?xml version=\"1.0\"?><Messages>$(message_xml ok1)<Message><MessageBody></MessageBody></Message></Messages>"
    mns_request POST /queues/bsend-refused/messages "$x"
    assert_error "an empty body refuses the whole batch" 400 InvalidArgument
    # 2 x 40000 bytes: each under the 64 KiB message limit, together over the batch limit.
    mns_request POST /queues/bsend-refused/messages "$(batch_xml "$(repeat_char c 40000)" "$(repeat_char d 40000)")"
    assert_error "batch over 64 KiB in total" 400 InvalidArgument
    assert_eq "refused batches stored nothing" "0 0 0" "$(counts bsend-refused)"
    mns_request GET /queues/bsend-refused/messages?peekonly=true
    assert_error "nothing to peek after refused batches" 404 MessageNotExist
    mns_request POST /queues/bsend-refused/messages "$(batch_xml "$(repeat_char c 32768)" "$(repeat_char d 32768)")"
    assert_status "batch of exactly 64 KiB" 201
    mns_request POST /queues/no-such-queue/messages "$(batch_xml a)"
    assert_error "batch to a missing queue" 404 QueueNotExist
}

# ---------------------------------------------------------------------------------------
# ReceiveMessage / BatchReceiveMessage (docs/protocol.md §7.8, §7.9)
# ---------------------------------------------------------------------------------------

t_receive() {
    local q=recvq t0 t1 body='  padded <&> text  '
    create_queue "$q"
    send_msg "$q" "$body"
    local sent_id=$LAST_MSG_ID
    t0=$(now_ms)
    receive "$q"
    t1=$(now_ms)
    assert_status "ReceiveMessage -> 200" 200
    assert_eq "root element is Message" Message "$(xml_root)"
    assert_eq "exactly the nine elements" "$(sorted_words $RECEIVE_ELEMENTS)" "$(message_children_sorted 1)"
    assert_eq "MessageId as sent" "$sent_id" "$MID"
    assert_xml "body verbatim (spaces, escapes)" MessageBody "$body"
    assert_xml "MessageBodyMD5" MessageBodyMD5 "$(md5_upper "$body")"
    assert_match "ReceiptHandle uses only [A-Za-z0-9_-]" '^[A-Za-z0-9_-]+$' "$RH"
    assert_xml "DequeueCount 1" DequeueCount 1
    assert_xml "Priority default 8" Priority 8
    local enq first nvt
    enq=$(xml_get EnqueueTime); first=$(xml_get FirstDequeueTime); nvt=$(xml_get NextVisibleTime)
    assert_range "EnqueueTime is epoch ms" $((t0 - 5000)) $((t0 + 1000)) "$enq"
    # Taken while the receive was under way (t0..t1), however long that took.
    assert_range "FirstDequeueTime set on first receive" $((t0 - 100)) "$t1" "$first"
    assert_range "NextVisibleTime = now + 30 s" $((t0 + 30000 - 100)) $((t1 + 30000)) "$nvt"
    assert_eq "received message is Inactive" "0 1 0" "$(counts "$q")"

    receive "$q"
    assert_error "nothing Active -> MessageNotExist" 404 MessageNotExist
    assert_range "short poll answers at once (ms, server side)" 0 800 "$(server_ms)"

    send_msg "$q" single-batch
    mns_request GET "/queues/$q/messages?numOfMessages=1"
    assert_status "numOfMessages=1 -> 200" 200
    assert_eq "numOfMessages=1 still uses <Messages>" Messages "$(xml_root)"
    assert_eq "one Message inside" 1 "$(xml_count Message)"
    assert_eq "batch entries have the nine elements" "$(sorted_words $RECEIVE_ELEMENTS)" "$(message_children_sorted 1)"

    mns_request GET "/queues/$q/messages?numOfMessages=0"
    assert_error "numOfMessages=0" 400 InvalidArgument
    mns_request GET "/queues/$q/messages?numOfMessages=17"
    assert_error "numOfMessages=17" 400 InvalidArgument
    mns_request GET "/queues/$q/messages?waitseconds=abc"
    assert_error "waitseconds not numeric" 400 InvalidQueryString
    mns_request GET "/queues/$q/messages?waitseconds=31"
    assert_error "waitseconds=31" 400 InvalidArgument
    mns_request GET "/queues/$q/messages?waitseconds=-1"
    assert_error "waitseconds=-1" 400 InvalidArgument
    mns_request GET /queues/no-such-queue/messages
    assert_error "receive from a missing queue" 404 QueueNotExist
}

t_batch_receive() {
    local q=brecvq i
    create_queue "$q"
    mns_request POST "/queues/$q/messages" "$(batch_xml b1 b2 b3 b4 b5)"
    assert_status "5 messages sent" 201
    mns_request GET "/queues/$q/messages?numOfMessages=3"
    assert_status "batch receive 3 -> 200" 200
    assert_eq "got 3" 3 "$(xml_count Message)"
    for i in 1 2 3; do assert_xml "batch entry $i in send order" MessageBody "b$i" "$i"; done
    # Returns as soon as something is there; does not wait to fill 16 (docs/protocol.md §7.9).
    mns_request GET "/queues/$q/messages?numOfMessages=16&waitseconds=10"
    assert_status "batch receive 16 with 2 left -> 200" 200
    assert_eq "got the remaining 2" 2 "$(xml_count Message)"
    assert_range "did not wait to fill the batch (waitseconds=10; ms, server side)" 0 2500 "$(server_ms)"
    assert_eq "all 5 Inactive" "0 5 0" "$(counts "$q")"
    mns_request GET "/queues/$q/messages?numOfMessages=16"
    assert_error "batch receive with nothing Active" 404 MessageNotExist
}

# ---------------------------------------------------------------------------------------
# PeekMessage / BatchPeekMessage (docs/protocol.md §7.10)
# ---------------------------------------------------------------------------------------

t_peek() {
    local q=peekq
    create_queue "$q"
    send_msg "$q" p1
    local id1=$LAST_MSG_ID
    send_msg "$q" p2
    mns_request GET "/queues/$q/messages?peekonly=true"
    assert_status "PeekMessage -> 200" 200
    assert_eq "root element is Message" Message "$(xml_root)"
    assert_eq "exactly the seven elements" "$(sorted_words $PEEK_ELEMENTS)" "$(message_children_sorted 1)"
    assert_xml "peek shows the oldest" MessageId "$id1"
    assert_xml "DequeueCount 0 before any receive" DequeueCount 0
    assert_eq "FirstDequeueTime equals EnqueueTime while never received" \
        "$(xml_get EnqueueTime)" "$(xml_get FirstDequeueTime)"
    mns_request GET "/queues/$q/messages?peekonly=true"
    assert_xml "peeking again shows the same message" MessageId "$id1"
    assert_eq "peek changes no counters" "2 0 0" "$(counts "$q")"
    receive "$q"
    assert_eq "receive after peeks gets the same message" "$id1" "$MID"
    assert_xml "peeks did not count as dequeues" DequeueCount 1

    mns_request GET "/queues/$q/messages?peekonly=true&numOfMessages=16"
    assert_status "BatchPeek -> 200" 200
    assert_eq "BatchPeek uses <Messages>" Messages "$(xml_root)"
    assert_eq "BatchPeek shows only Active messages" 1 "$(xml_count Message)"
    assert_xml "BatchPeek shows p2" MessageBody p2
    assert_eq "batch peek entries have the seven elements" "$(sorted_words $PEEK_ELEMENTS)" "$(message_children_sorted 1)"
    # Go puts the parameters the other way round.
    mns_request GET "/queues/$q/messages?numOfMessages=1&peekonly=true"
    assert_eq "numOfMessages before peekonly is a batch peek" Messages "$(xml_root)"
    assert_eq "batch peek changed nothing" "1 1 0" "$(counts "$q")"
    mns_request GET "/queues/$q/messages?peekonly=true&numOfMessages=17"
    assert_error "BatchPeek numOfMessages=17" 400 InvalidArgument

    receive "$q"
    mns_request GET "/queues/$q/messages?peekonly=true&waitseconds=10"
    assert_error "peek with nothing Active" 404 MessageNotExist
    assert_range "peek never long-polls (waitseconds=10; ms, server side)" 0 2500 "$(server_ms)"
    mns_request GET "/queues/$q/messages?peekonly=true&numOfMessages=4"
    assert_error "batch peek with nothing Active" 404 MessageNotExist
    mns_request GET "/queues/no-such-queue/messages?peekonly=true"
    assert_error "peek a missing queue" 404 QueueNotExist
}

# ---------------------------------------------------------------------------------------
# DeleteMessage / BatchDeleteMessage (docs/protocol.md §7.11, §7.12)
# ---------------------------------------------------------------------------------------

# percent_first H — H with its first character percent-encoded (what Go's QueryEscape-style
# clients may send); the server must percent-decode values.
percent_first() { printf '%%%02X%s' "'${1:0:1}" "${1:1}"; }

t_delete_message() {
    local q=delmq h1 h2
    create_queue "$q"
    send_msg "$q" d1
    receive "$q"
    mns_request DELETE "/queues/$q/messages?ReceiptHandle=$RH"
    assert_status "DeleteMessage -> 204" 204
    assert_eq "204 has no body" "" "$RESP_BODY"
    mns_request DELETE "/queues/$q/messages?ReceiptHandle=$RH"
    assert_error "handle of a deleted message" 404 MessageNotExist
    assert_eq "queue is empty" "0 0 0" "$(counts "$q")"

    mns_request DELETE "/queues/$q/messages?ReceiptHandle=garbage"
    assert_error "garbage handle" 400 ReceiptHandleError
    mns_request DELETE "/queues/$q/messages?ReceiptHandle=%21%21%21"
    assert_error "handle with '!!!'" 400 ReceiptHandleError
    mns_request DELETE "/queues/$q/messages"
    assert_error "no handle and no body" 400 MissingReceiptHandle

    # Stale after ChangeMessageVisibility issued a new handle.
    send_msg "$q" d2
    receive "$q"
    h1=$RH
    mns_request PUT "/queues/$q/messages?ReceiptHandle=$h1&VisibilityTimeout=30"
    h2=$(xml_get ReceiptHandle)
    mns_request DELETE "/queues/$q/messages?ReceiptHandle=$h1"
    assert_error "handle replaced by ChangeMessageVisibility" 404 MessageNotExist
    # Lower-case parameter name and a percent-encoded character: same handle.
    mns_request DELETE "/queues/$q/messages?receipthandle=$(percent_first "$h2")"
    assert_status "lower-case name and %-encoded handle delete" 204
    assert_eq "queue empty again" "0 0 0" "$(counts "$q")"

    mns_request DELETE "/queues/no-such-queue/messages?ReceiptHandle=$h2"
    assert_error "delete on a missing queue" 404 QueueNotExist
}

# wait_receive Q MS — polls ReceiveMessage until 200 or MS pass (for redelivery).
wait_receive() {
    local q=$1 deadline=$(( $(now_ms) + $2 ))
    while :; do
        receive "$q"
        [ "$RESP_STATUS" = 200 ] && return 0
        [ "$(now_ms)" -ge "$deadline" ] && return 1
        sleep 0.05
    done
}

# The second handle is valid only while the message is invisible (2 s): the redelivered
# receive's fields are checked after the deletes, so that a slow machine does not let it
# expire first.
t_visibility_expiry() {
    local q=visq h1 h2 first t0 t1 redelivered
    create_queue "$q" VisibilityTimeout 2
    send_msg "$q" comeback
    t0=$(now_ms)
    receive "$q"
    t1=$(now_ms)
    h1=$RH
    first=$(xml_get FirstDequeueTime)
    assert_range "NextVisibleTime = now + 2 s" $((t0 + 2000 - 100)) $((t1 + 2000)) "$(xml_get NextVisibleTime)"
    assert_eq "Inactive while invisible" "0 1 0" "$(counts "$q")"
    # Polled with a deadline generous for a loaded machine; the lower bound below is the
    # guarantee (not visible before NextVisibleTime).
    if wait_receive "$q" 15000; then ok "message redelivered after VisibilityTimeout"
    else not_ok "message redelivered after VisibilityTimeout" "$(resp_summary)"; return; fi
    redelivered=$RESP_BODY h2=$RH
    assert_range "not redelivered before the timeout" 1800 15000 $(( $(now_ms) - t0 ))
    mns_request DELETE "/queues/$q/messages?ReceiptHandle=$h1"
    assert_error "handle from the earlier receive is stale" 404 MessageNotExist
    mns_request DELETE "/queues/$q/messages?ReceiptHandle=$h2"
    assert_status "current handle deletes" 204
    RESP_BODY=$redelivered
    assert_xml "DequeueCount 2 on redelivery" DequeueCount 2
    assert_xml "FirstDequeueTime kept" FirstDequeueTime "$first"
    assert_ne "a new handle" "$h1" "$h2"
}

t_batch_delete() {
    local q=bdelq h1 h2 h3 i
    create_queue "$q"
    mns_request POST "/queues/$q/messages" "$(batch_xml x1 x2 x3)"
    mns_request GET "/queues/$q/messages?numOfMessages=3"
    h1=$(xml_get ReceiptHandle 1); h2=$(xml_get ReceiptHandle 2); h3=$(xml_get ReceiptHandle 3)
    mns_request DELETE "/queues/$q/messages?ReceiptHandle=$h2"
    assert_status "h2 deleted singly first" 204

    mns_request DELETE "/queues/$q/messages" "$(handles_xml "$h1" "$h2" "$h3" garbage)"
    assert_status "partial failure -> 404" 404
    assert_eq "root element is Errors" Errors "$(xml_root)"
    assert_eq "one Error per failed handle" 2 "$(xml_count Error)"
    for i in 1 2; do
        assert_eq "Error $i has exactly ErrorCode, ErrorMessage, ReceiptHandle" \
            "ErrorCode ErrorMessage ReceiptHandle " \
            "$(printf '%s' "$RESP_BODY" | xmllint --xpath "(//*[local-name()='Error'])[$i]/*" - 2>/dev/null \
               | grep -o '<[A-Za-z][A-Za-z0-9]*' | sed 's/^<//' | LC_ALL=C sort | tr '\n' ' ')"
        assert_xml_re "Error $i ErrorMessage non-empty" ErrorMessage '.' "$i"
    done
    local stale_code garbage_code
    stale_code=$(printf '%s' "$RESP_BODY" | xmllint --xpath "string(//*[local-name()='Error'][*[local-name()='ReceiptHandle']='$h2']/*[local-name()='ErrorCode'])" - 2>/dev/null)
    garbage_code=$(printf '%s' "$RESP_BODY" | xmllint --xpath "string(//*[local-name()='Error'][*[local-name()='ReceiptHandle']='garbage']/*[local-name()='ErrorCode'])" - 2>/dev/null)
    assert_eq "stale handle -> MessageNotExist" MessageNotExist "$stale_code"
    assert_eq "garbage handle -> ReceiptHandleError" ReceiptHandleError "$garbage_code"
    assert_eq "the valid handles were deleted" "0 0 0" "$(counts "$q")"
    mns_request DELETE "/queues/$q/messages?ReceiptHandle=$h1"
    assert_error "h1 is gone" 404 MessageNotExist

    mns_request POST "/queues/$q/messages" "$(batch_xml y1 y2)"
    mns_request GET "/queues/$q/messages?numOfMessages=2"
    h1=$(xml_get ReceiptHandle 1); h2=$(xml_get ReceiptHandle 2)
    mns_request DELETE "/queues/$q/messages" "$(handles_xml "$h1" "$h2")"
    assert_status "all deleted -> 204" 204
    assert_eq "204 has no body" "" "$RESP_BODY"
    assert_eq "queue empty" "0 0 0" "$(counts "$q")"

    local -a many=()
    for i in $(seq 1 17); do many+=("h$i"); done
    mns_request DELETE "/queues/$q/messages" "$(handles_xml "${many[@]}")"
    assert_error "17 handles" 400 InvalidArgument
    mns_request DELETE "/queues/$q/messages" '<ReceiptHandles><ReceiptHandle>x'
    assert_error "malformed BatchDelete body" 400 MalformedXML
    mns_request DELETE "/queues/no-such-queue/messages" "$(handles_xml abc)"
    assert_error "BatchDelete on a missing queue" 404 QueueNotExist
}

# ---------------------------------------------------------------------------------------
# ChangeMessageVisibility (docs/protocol.md §7.13)
# ---------------------------------------------------------------------------------------

t_change_visibility() {
    local q=cvq h1 h2 h3 t0 t1
    create_queue "$q"
    send_msg "$q" cv
    receive "$q"
    h1=$RH
    t0=$(now_ms)
    mns_request PUT "/queues/$q/messages?ReceiptHandle=$h1&VisibilityTimeout=10"
    t1=$(now_ms)
    assert_status "ChangeMessageVisibility -> 200" 200
    assert_eq "root element is ChangeVisibility" ChangeVisibility "$(xml_root)"
    assert_eq "children ReceiptHandle, NextVisibleTime" "NextVisibleTime ReceiptHandle " \
        "$(xml_children ChangeVisibility | LC_ALL=C sort | tr '\n' ' ')"
    h2=$(xml_get ReceiptHandle)
    assert_ne "a new handle" "$h1" "$h2"
    assert_match "new handle uses only [A-Za-z0-9_-]" '^[A-Za-z0-9_-]+$' "$h2"
    assert_range "NextVisibleTime = now + 10 s" $((t0 + 10000 - 100)) $((t1 + 10000)) "$(xml_get NextVisibleTime)"
    mns_request PUT "/queues/$q/messages?ReceiptHandle=$h1&VisibilityTimeout=10"
    assert_error "old handle is invalid" 404 MessageNotExist

    # Node and the docs use lower-case parameter names.
    mns_request PUT "/queues/$q/messages?receiptHandle=$h2&visibilityTimeout=43200"
    assert_status "lower-case names, 43200" 200
    h3=$(xml_get ReceiptHandle)
    mns_request PUT "/queues/$q/messages?ReceiptHandle=$h3&VisibilityTimeout=43201"
    assert_error "VisibilityTimeout 43201" 400 InvalidArgument
    mns_request PUT "/queues/$q/messages?ReceiptHandle=$h3&VisibilityTimeout=-1"
    assert_error "VisibilityTimeout -1" 400 InvalidArgument
    mns_request PUT "/queues/$q/messages?ReceiptHandle=$h3"
    assert_error "no VisibilityTimeout" 400 MissingVisibilityTimeout
    mns_request PUT "/queues/$q/messages?VisibilityTimeout=5"
    assert_error "no ReceiptHandle" 400 MissingReceiptHandle
    mns_request PUT "/queues/$q/messages?ReceiptHandle=garbage&VisibilityTimeout=5"
    assert_error "garbage handle" 400 ReceiptHandleError
    assert_eq "still Inactive after the failed changes" "0 1 0" "$(counts "$q")"

    # 0 = visible now.
    mns_request PUT "/queues/$q/messages?ReceiptHandle=$h3&VisibilityTimeout=0"
    assert_status "VisibilityTimeout 0" 200
    assert_eq "message Active again at once" "1 0 0" "$(counts "$q")"
    receive "$q"
    assert_status "receive right after visibility 0" 200
    assert_xml "DequeueCount 2" DequeueCount 2
    mns_request DELETE "/queues/$q/messages?ReceiptHandle=$RH"
    mns_request PUT "/queues/$q/messages?ReceiptHandle=$RH&VisibilityTimeout=5"
    assert_error "handle of a deleted message" 404 MessageNotExist
    mns_request PUT "/queues/no-such-queue/messages?ReceiptHandle=$RH&VisibilityTimeout=5"
    assert_error "missing queue" 404 QueueNotExist
}

# ---------------------------------------------------------------------------------------
# Long polling (docs/protocol.md §7.8, §10)
# ---------------------------------------------------------------------------------------

# wake_after SEND_ID ACTION N — ms from the logged answer of the send SEND_ID to the logged
# answer of the Nth ACTION on the queue $q (the woken poll). Both are smqd's own timestamps,
# so how long the test took to sign and send the waking request does not count; the polls
# wait 20 s, so a poll that was not woken would show up as many seconds, not as load noise.
# The woken answer may be logged a little before the send's own line (both are written
# after their answers), hence a negative lower bound.
wake_after() {
    local sl rl
    sl=$(request_line "$1") && rl=$(nth_request_line "$3" "action=$2 queue=$q status=200 ") \
        || { echo none; return; }
    echo $(( $(logged_at "$rl") - $(logged_at "$sl") ))
}

t_long_poll_wakeup() {
    local q=lpq out="$SUITE_TMP/lp"
    create_queue "$q"
    mns_request_bg "$out" GET "/queues/$q/messages?waitseconds=20"
    sleep 0.3   # let the receive park before the send (the case under test)
    # Other requests are served while a receive is parked (docs/protocol.md §10).
    mns_request GET "/queues/$q"
    assert_status "GetQueueAttributes while a receive is parked" 200
    assert_range "not blocked by the parked receive (it waits 20 s; ms, server side)" 0 3000 "$(server_ms)"
    send_msg "$q" wake-up
    bg_wait "$out" 30000
    assert_eq "parked receive got the message" 200 "$BG_STATUS"
    assert_range "woke at once on the send, not at the 20 s deadline (ms after the send)" \
        -1000 3000 "$(wake_after "$RESP_ID" ReceiveMessage 1)"
    assert_eq "it is the sent message" wake-up "$(xml_get MessageBody 1 "$BG_BODY")"

    # BatchReceive long polls the same way.
    mns_request_bg "$out" GET "/queues/$q/messages?numOfMessages=4&waitseconds=20"
    sleep 0.3
    send_msg "$q" batch-wake
    bg_wait "$out" 30000
    assert_eq "parked batch receive got it" 200 "$BG_STATUS"
    assert_range "batch woke at once on the send (ms after the send)" \
        -1000 3000 "$(wake_after "$RESP_ID" BatchReceiveMessage 1)"
    assert_eq "batch shape with one entry" 1 "$(xml_count Message "$BG_BODY")"

    # Wake on ChangeMessageVisibility to 0.
    send_msg "$q" cv-wake
    receive "$q"
    local h=$RH
    mns_request_bg "$out" GET "/queues/$q/messages?waitseconds=20"
    sleep 0.3
    mns_request PUT "/queues/$q/messages?ReceiptHandle=$h&VisibilityTimeout=0"
    assert_status "visibility 0 while a receive is parked" 200
    bg_wait "$out" 30000
    assert_eq "parked receive woke on visibility 0" 200 "$BG_STATUS"
    assert_range "woke at once on visibility 0 (ms after the change)" \
        -1000 3000 "$(wake_after "$RESP_ID" ReceiveMessage 3)"
    assert_eq "DequeueCount 2" 2 "$(xml_get DequeueCount 1 "$BG_BODY")"
}

# long_poll_then_close Q EXTRA — a signed long poll (waitseconds=20) written straight to a
# socket, then EXTRA (printf %b: bytes a client may leave unread behind its request, such as a
# stray CRLF or a pipelined request), then the client closes without reading an answer.
long_poll_then_close() {
    local q=$1 extra=$2 t="/queues/$1/messages?waitseconds=20" d auth fd
    d=$(http_date)
    auth=$(mns_authorization "$MNS_AK_DEFAULT" "$MNS_SK_DEFAULT" GET '' '' "$d" "$t" \
                             'x-mns-version: 2015-06-06')
    exec {fd}<>"/dev/tcp/${SMQD_ADDR%:*}/${SMQD_ADDR##*:}"
    printf 'GET %s HTTP/1.1\r\nHost: %s\r\nDate: %s\r\nx-mns-version: 2015-06-06\r\nAuthorization: %s\r\n\r\n' \
           "$t" "$SMQD_ADDR" "$d" "$auth" >&"$fd"
    wait_for "the long poll is parked" 10000 in_flight_is 1
    printf '%b' "$extra" >&"$fd"
    sleep 0.1
    exec {fd}>&-
}

# in_flight_is N — smqd_http_requests_in_flight (parked long polls included) is N.
in_flight_is() {
    [ "$(curl -s --noproxy '*' --max-time 10 "http://$SMQD_ADMIN/metrics" |
         awk '$1 == "smqd_http_requests_in_flight" { print $2 }')" = "$1" ]
}

# A long poll whose client went away is finished within about a second and never handed a
# message (docs/protocol-decisions.md), also when the client left bytes unread in front of its
# close: then a peek at the socket sees those bytes, not the end of the stream.
t_long_poll_client_gone() {
    local q=goneq i
    create_queue "$q"
    local -a what=("nothing" "a stray CRLF" "a pipelined request")
    local -a bytes=('' '\r\n' "GET /queues/$q HTTP/1.1\r\nHost: x\r\n\r\n")
    for i in 0 1 2; do
        long_poll_then_close "$q" "${bytes[$i]}"
        # Parked polls are probed about once a second: polled, rather than a fixed sleep that
        # a loaded machine may outlast; 10 s still tells "noticed" from the poll's 20 s.
        wait_for "client gone, ${what[$i]} left unread: the poll is finished" 10000 in_flight_is 0
        send_msg "$q" for-nobody
        sleep 0.3
        assert_eq "client gone, ${what[$i]} left unread: the message stays Active" \
                  "1 0 0" "$(counts "$q")"
        receive "$q"
        assert_status "the message is there for the next consumer" 200
        mns_request DELETE "/queues/$q/messages?ReceiptHandle=$RH"
        assert_status "and is deleted" 204
    done
}

t_long_poll_timers() {
    local q=lptq t0
    create_queue "$q" VisibilityTimeout 1
    # Wake on delay expiry: a 1 s delayed message, a 5 s poll.  Times count
    # from before the request that starts the clock, so they are lower bounds.
    # The upper bounds are smqd's own time for the receive (server side), against a poll of
    # 20 s: a poll not woken by the timer would take 20 s, load adds at most a second or two.
    t0=$(now_ms)
    send_msg "$q" delayed DelaySeconds 1
    receive "$q" waitseconds=20
    assert_status "receive woke on delay expiry" 200
    assert_range "after 1 s" 1000 30000 "$(( $(now_ms) - t0 ))"
    assert_range "woken by the 1 s delay, not the 20 s deadline (ms, server side)" 0 3500 "$(server_ms)"
    # Wake on visibility expiry (queue VisibilityTimeout 1).
    receive "$q" waitseconds=20
    assert_status "receive woke on visibility expiry" 200
    assert_range "within the 1 s visibility timeout (ms, server side)" 0 3500 "$(server_ms)"
    assert_xml "redelivered: DequeueCount 2" DequeueCount 2
    mns_request DELETE "/queues/$q/messages?ReceiptHandle=$RH"
    assert_status "delete" 204
}

t_deadline() {
    local q=dlq
    create_queue "$q"
    # Server-side times (smqd's latency_ms, request line to answer): the curl around them
    # adds the load of the machine, not anything smqd does. The upper bounds stay under a
    # whole extra second, so a deadline rounded up to the next second is still caught.
    receive "$q" waitseconds=2
    assert_error "empty queue at the deadline" 404 MessageNotExist
    assert_range "404 after 2 s, not later (ms, server side)" 1900 2900 "$(server_ms)"
    mns_request GET "/queues/$q/messages?numOfMessages=16&waitseconds=1"
    assert_error "empty batch at the deadline" 404 MessageNotExist
    assert_range "batch 404 after 1 s (ms, server side)" 900 1900 "$(server_ms)"

    # Without waitseconds the queue's PollingWaitSeconds applies; waitseconds=0 overrides it.
    create_queue pwq PollingWaitSeconds 3
    receive pwq
    assert_error "queue PollingWaitSeconds 3" 404 MessageNotExist
    assert_range "waited the queue's 3 s (ms, server side)" 2900 3900 "$(server_ms)"
    receive pwq waitseconds=0
    assert_error "waitseconds=0 is a short poll" 404 MessageNotExist
    assert_range "answered at once, not after the queue's 3 s (ms, server side)" 0 1500 "$(server_ms)"
}

# ---------------------------------------------------------------------------------------
# Delays, ordering, counters
# ---------------------------------------------------------------------------------------

# since_logged ID — ms from the logged answer of request ID to that of the last request.
since_logged() {
    local a b
    a=$(request_line "$1") && b=$(request_line "$RESP_ID") || { echo none; return; }
    echo $(( $(logged_at "$b") - $(logged_at "$a") ))
}

# Delays are measured from just before the send: the message cannot become
# Active earlier than that plus its delay, however slow the machine is. How late it may be is
# measured on smqd's side (from the send's answer to the receive's, both as smqd logged them),
# so that signing and starting curl on a loaded machine does not count; the receives poll for
# 10 s, longer than any delay here, so they are woken by the delay, not by their deadline.
t_delay_precedence() {
    local q=delayq t0 sent
    create_queue "$q" DelaySeconds 5
    t0=$(now_ms)
    send_msg "$q" own-delay DelaySeconds 1
    sent=$RESP_ID
    assert_eq "message with its own delay is Delayed" "0 0 1" "$(counts "$q")"
    mns_request GET "/queues/$q/messages?peekonly=true"
    assert_error "Delayed is not peekable" 404 MessageNotExist
    receive "$q" waitseconds=10
    assert_status "message delay 1 s wins over queue delay 5 s" 200
    assert_range "active after 1 s" 1000 30000 "$(( $(now_ms) - t0 ))"
    assert_range "well before the queue's 5 s (ms, server side)" 0 3500 "$(since_logged "$sent")"
    assert_xml "it is own-delay" MessageBody own-delay

    t0=$(now_ms)
    send_msg "$q" queue-delay DelaySeconds 0
    sent=$RESP_ID
    assert_eq "DelaySeconds 0 -> the queue's delay applies" "0 1 1" "$(counts "$q")"
    receive "$q" waitseconds=10
    assert_status "queue-delayed message arrives" 200
    assert_range "active after 5 s" 5000 30000 "$(( $(now_ms) - t0 ))"
    assert_range "and woken then (ms, server side)" 0 7500 "$(since_logged "$sent")"
    send_msg "$q" no-delay-element
    assert_eq "no DelaySeconds -> the queue's delay applies" "0 2 1" "$(counts "$q")"

    create_queue nodelayq
    t0=$(now_ms)
    send_msg nodelayq md1 DelaySeconds 1
    sent=$RESP_ID
    assert_eq "message delay on a queue without delay" "0 0 1" "$(counts nodelayq)"
    receive nodelayq waitseconds=10
    assert_status "delayed message arrives" 200
    assert_range "active after 1 s" 1000 30000 "$(( $(now_ms) - t0 ))"
    assert_range "and woken then (ms, server side)" 0 3500 "$(since_logged "$sent")"
}

t_priority_order() {
    local q=prioq i
    create_queue "$q"
    send_msg "$q" m1 Priority 8
    send_msg "$q" m2 Priority 1
    send_msg "$q" m3 Priority 16
    send_msg "$q" m4 Priority 1
    send_msg "$q" m5
    local want="m2 m4 m1 m5 m3"
    mns_request GET "/queues/$q/messages?peekonly=true&numOfMessages=16"
    local got=""
    for i in 1 2 3 4 5; do got+="$(xml_get MessageBody "$i") "; done
    assert_eq "batch peek: lower Priority first, oldest first" "$want " "$got"
    got=""
    for i in 1 2 3 4 5; do receive "$q"; got+="$(xml_get MessageBody) "; done
    assert_eq "receive one by one in the same order" "$want " "$got"
    receive "$q"
    assert_error "all five received" 404 MessageNotExist
}

t_counters() {
    local q=cntq
    create_queue "$q"
    assert_eq "empty queue" "0 0 0" "$(counts "$q")"
    mns_request POST "/queues/$q/messages" "$(batch_xml c1 c2 c3)"
    send_msg "$q" later DelaySeconds 60
    assert_eq "3 Active, 1 Delayed" "3 0 1" "$(counts "$q")"
    receive "$q"
    assert_eq "receive: Active -> Inactive" "2 1 1" "$(counts "$q")"
    mns_request GET "/queues/$q/messages?peekonly=true"
    assert_eq "peek changes nothing" "2 1 1" "$(counts "$q")"
    mns_request DELETE "/queues/$q/messages?ReceiptHandle=$RH"
    assert_eq "delete an Inactive message" "2 0 1" "$(counts "$q")"
    receive "$q"
    mns_request PUT "/queues/$q/messages?ReceiptHandle=$RH&VisibilityTimeout=0"
    assert_eq "visibility 0: back to Active" "2 0 1" "$(counts "$q")"
}

# ---------------------------------------------------------------------------------------
# Restart keeps exact state (beanstalkd binlog tests: put, kill, restart, check)
# ---------------------------------------------------------------------------------------

t_restart_state() {
    local q=rsq ha hb id_a id_d
    create_queue "$q"
    send_msg "$q" a; id_a=$LAST_MSG_ID
    send_msg "$q" b
    send_msg "$q" c DelaySeconds 60
    send_msg "$q" d; id_d=$LAST_MSG_ID
    receive "$q"; ha=$RH
    assert_eq "a received first" "$id_a" "$MID"
    receive "$q"; hb=$RH
    mns_request DELETE "/queues/$q/messages?ReceiptHandle=$hb"
    assert_status "b deleted" 204
    assert_eq "before crash: d Active, a Inactive, c Delayed" "1 1 1" "$(counts "$q")"

    smqd_restart_same_data kill9 || return
    assert_eq "after SIGKILL restart: same counts" "1 1 1" "$(counts "$q")"
    mns_request GET "/queues/$q/messages?peekonly=true&numOfMessages=16"
    assert_eq "only d is Active (b not back, a still Inactive, c still Delayed)" 1 "$(xml_count Message)"
    assert_xml "peek shows d" MessageId "$id_d"
    mns_request PUT "/queues/$q/messages?ReceiptHandle=$ha&VisibilityTimeout=30"
    assert_status "a's handle still works after SIGKILL (ChangeVisibility)" 200
    ha=$(xml_get ReceiptHandle)
    mns_request DELETE "/queues/$q/messages?ReceiptHandle=$ha"
    assert_status "and the new handle deletes a" 204
    mns_request DELETE "/queues/$q/messages?ReceiptHandle=$hb"
    assert_error "b stays deleted" 404 MessageNotExist

    # Orderly stop: fields of the remaining Active message survive exactly.
    mns_request GET "/queues/$q/messages?peekonly=true"
    local before=$RESP_BODY
    smqd_restart_same_data || return
    assert_eq "SIGTERM exits 0" 0 "$SMQD_EXIT"
    mns_request GET "/queues/$q/messages?peekonly=true"
    assert_eq "peek identical after SIGTERM restart" "$before" "$RESP_BODY"
    assert_eq "counts after SIGTERM restart" "1 0 1" "$(counts "$q")"
}

# An Inactive message becomes visible at its persisted NextVisibleTime, not earlier and not
# "immediately because the server restarted"; a delayed message activates on time.
t_restart_timers() {
    local q=rtq nvt due t
    create_queue "$q" VisibilityTimeout 2
    send_msg "$q" inv
    receive "$q"
    nvt=$(xml_get NextVisibleTime)
    send_msg "$q" del DelaySeconds 2
    due=$(( $(now_ms) + 2000 ))
    smqd_restart_same_data kill9 || return
    assert_eq "right after restart: one Inactive, one Delayed" "0 1 1" "$(counts "$q")"
    receive "$q" waitseconds=5
    t=$(now_ms)
    assert_status "inactive message comes back after restart" 200
    assert_xml "the inactive one comes first (older)" MessageBody inv
    if [ "$t" -ge $((nvt - 300)) ]; then ok "not visible before its NextVisibleTime"
    else not_ok "not visible before its NextVisibleTime" "visible at $t, NextVisibleTime $nvt"; fi
    assert_xml "DequeueCount 2 after restart" DequeueCount 2
    receive "$q" waitseconds=5
    t=$(now_ms)
    assert_status "delayed message activates after restart" 200
    assert_xml "it is the delayed one" MessageBody del
    if [ "$t" -ge $((due - 300)) ]; then ok "delayed message not active early"
    else not_ok "delayed message not active early" "active at $t, due $due"; fi
}

# ---------------------------------------------------------------------------------------

if smqd_start; then
    run_test t_send_message
    run_test t_message_size
    run_test t_batch_send
    run_test t_receive
    run_test t_batch_receive
    run_test t_peek
    run_test t_delete_message
    run_test t_batch_delete
    run_test t_change_visibility
    run_test t_visibility_expiry
    run_test t_long_poll_wakeup
    run_test t_long_poll_client_gone
    run_test t_long_poll_timers
    run_test t_deadline
    run_test t_delay_precedence
    run_test t_priority_order
    run_test t_counters
    run_test t_restart_state
    run_test t_restart_timers
    smqd_stop
fi
finish
