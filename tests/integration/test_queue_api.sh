#!/usr/bin/env bash
# test_queue_api.sh — queue operations, authentication and every queue-level error code,
# against the real smqd binary over loopback HTTP (curl + openssl signing).
#
# Contract: docs mns-protocol.md plus the team decisions in the integration brief
# (DeleteQueue of a missing queue is 204, TimeExpired is 408, unknown routes are
# 400 InvalidRequestURL, queue names [A-Za-z0-9-]{1,120} starting with a letter or digit).
#
# Run: SMQD_BIN=build/smqd bash tests/integration/test_queue_api.sh
# (or ctest -L integration). SMQD_TEST_VERBOSE=1 prints every passing check too.

set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"

require_tools curl openssl xmllint md5sum base64 awk sed
require_bin

# ---------------------------------------------------------------------------------------
# No server needed
# ---------------------------------------------------------------------------------------

# The signer must reproduce the protocol doc's vectors, or every other result is noise.
t_signing_vectors() {
    local d='Tue, 02 Jan 2024 03:04:05 GMT' v='x-mns-version: 2015-06-06' f="$SUITE_TMP/b2"
    assert_eq "P1 GetQueueAttributes" 'MNS testAccessKeyId:ic27RTdtzgYUsETAe6H7LEbw7uI=' \
        "$(mns_authorization testAccessKeyId testAccessKeySecret GET '' '' "$d" /queues/TestQueue "$v")"
    printf '%s' '<?xml version="1.0" encoding="utf-8"?><Message xmlns="http://mns.aliyuncs.com/doc/v1/"><MessageBody>Hello MNS</MessageBody><Priority>8</Priority></Message>' >"$f"
    assert_eq "P2 Content-MD5 of B2" 'NGM5MmM2NTEyNjAyMTUxOTM0ZDJiMWE2MzEzYjI1YTY=' "$(content_md5_of "$f")"
    assert_eq "P2 SendMessage" 'MNS testAccessKeyId:BaP9qYltiNgG638EzFnCNgUkYCY=' \
        "$(mns_authorization testAccessKeyId testAccessKeySecret POST "$(content_md5_of "$f")" \
           'text/xml;charset=UTF-8' "$d" /queues/TestQueue/messages "$v")"
    assert_eq "P4 x-mns-user-request-id is signed" 'MNS testAccessKeyId:AdsBR0spEnSbgnzONY5bx0SSuXI=' \
        "$(mns_authorization testAccessKeyId testAccessKeySecret GET '' '' "$d" \
           '/queues/TestQueue/messages?waitseconds=10' "$v" 'x-mns-user-request-id: req-0001')"
    assert_eq "P5 ListQueue headers sorted" 'MNS testAccessKeyId:ROCdi2ClOg+hI07Y8/ZHtROHFWA=' \
        "$(mns_authorization testAccessKeyId testAccessKeySecret GET '' '' "$d" /queues \
           'x-mns-with-meta: true' 'x-mns-ret-number: 10' 'x-mns-prefix: Test' 'x-mns-marker: m1' "$v")"
    assert_eq "P7 DeleteMessage" 'MNS testAccessKeyId:4HtPpXzCVLfaivXtkzwN8Nds/mg=' \
        "$(mns_authorization testAccessKeyId testAccessKeySecret DELETE '' '' "$d" \
           '/queues/TestQueue/messages?ReceiptHandle=8-0zxjHBaWtzPz8zphz0z6OGz5yWWidU1fJM' "$v")"
}

# Command line: -t validates a config, a bad value names FILE:LINE (brief).
t_cli() {
    local dir rc out
    new_server_dir
    dir=$NEW_DIR
    timeout 10 "$SMQD_BIN" --version >"$SUITE_TMP/cli.out" 2>&1
    rc=$?
    assert_eq "smqd --version exits 0" 0 "$rc"
    assert_match "smqd --version prints a version" '[0-9]+\.[0-9]+' "$(cat "$SUITE_TMP/cli.out")"
    timeout 10 "$SMQD_BIN" -h >/dev/null 2>&1
    assert_eq "smqd -h exits 0" 0 "$?"
    timeout 10 "$SMQD_BIN" -t -c "$dir/smqd.conf" >/dev/null 2>&1
    assert_eq "smqd -t accepts the test config" 0 "$?"
    # Line 5 of the config is "sync = full"; make it invalid and expect FILE:5: on stderr.
    sed -i 's/^sync = full$/sync = sometimes/' "$dir/smqd.conf"
    out=$(timeout 10 "$SMQD_BIN" -t -c "$dir/smqd.conf" 2>&1 >/dev/null)
    rc=$?
    assert_ne "smqd -t rejects 'sync = sometimes'" 0 "$rc"
    assert_match "bad value is reported as FILE:LINE:" "$dir/smqd.conf:5:" "$out"
}

# ---------------------------------------------------------------------------------------
# Authentication (docs/protocol.md §3.2)
# ---------------------------------------------------------------------------------------

t_auth() {
    mns_request GET /queues
    assert_status "signed ListQueue works" 200
    local first_id=$RESP_ID
    mns_request GET /queues
    assert_ne "request ids differ between requests" "$first_id" "$RESP_ID"

    MNS_OMIT_AUTH=1 mns_request GET /queues
    assert_error "no Authorization" 400 MissingAuthorizationHeader
    MNS_AUTH='MNS testAccessKeyId' mns_request GET /queues
    assert_error "Authorization without ':'" 400 InvalidAuthorizationHeader
    MNS_AUTH='Basic dGVzdDp0ZXN0' mns_request GET /queues
    assert_error "Authorization with another scheme" 400 InvalidAuthorizationHeader
    MNS_AK=noSuchKey mns_request GET /queues
    assert_error "unknown AccessKeyId" 403 InvalidAccessKeyId
    MNS_SK=wrongSecret mns_request GET /queues
    assert_error "wrong secret" 403 SignatureDoesNotMatch
    MNS_SK=wrongSecret mns_request GET /queues/NoSuchQueue
    assert_error "auth is checked before the queue lookup" 403 SignatureDoesNotMatch

    MNS_OMIT_DATE=1 mns_request GET /queues
    assert_error "no Date and no x-mns-date" 400 MissingDateHeader
    MNS_DATE='yesterday at noon' mns_request GET /queues
    assert_error "unparsable Date" 400 InvalidDateHeader
    MNS_DATE=$(http_date -d '-16 min') mns_request GET /queues
    assert_error "Date 16 min in the past" 408 TimeExpired
    MNS_DATE=$(http_date -d '+16 min') mns_request GET /queues
    assert_error "Date 16 min in the future" 408 TimeExpired
    MNS_DATE=$(http_date -d '-14 min') mns_request GET /queues
    assert_status "Date 14 min in the past is accepted" 200
    # Node sends x-mns-date too; without Date the server must use it (and sign it).
    MNS_OMIT_DATE=1 mns_request GET /queues -H "x-mns-date: $(http_date)"
    assert_status "x-mns-date stands in for Date" 200

    MNS_OMIT_VERSION=1 mns_request GET /queues
    assert_error "no x-mns-version" 400 MissingVersionHeader
    MNS_VERSION=2014-01-01 mns_request GET /queues
    assert_error "wrong x-mns-version" 400 InvalidVersionHeader
    # Go canonicalises header names (X-Mns-Version); the server lowercases before signing.
    MNS_OMIT_VERSION=1 mns_request GET /queues -H 'X-Mns-Version: 2015-06-06'
    assert_status "mixed-case x-mns header name" 200
    # Every x-mns-* header is signed, including ones the server does not use.
    mns_request GET /queues -H 'x-mns-user-request-id: req-0001'
    assert_status "unknown x-mns header is signed and accepted" 200
    # security-token is sent unsigned by every SDK; with no STS configured it is ignored.
    mns_request GET /queues -H 'security-token: STS.token-value'
    assert_status "unsigned security-token header is ignored" 200

    MNS_AK=secondKey MNS_SK=secondSecret mns_request GET /queues
    assert_status "second configured key works" 200
    MNS_AK=secondKey MNS_SK=testAccessKeySecret mns_request GET /queues
    assert_error "second key with the first key's secret" 403 SignatureDoesNotMatch
}

t_content_md5() {
    local q=md5q body raw
    body=$(queue_body VisibilityTimeout 30)
    MNS_MD5='AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=' mns_request PUT "/queues/$q" "$body"
    assert_error "Content-MD5 mismatch" 400 InvalidDigest
    mns_request GET "/queues/$q"
    assert_error "queue not created after InvalidDigest" 404 QueueNotExist
    # The doc (docs/protocol.md §2.1) asks to accept the RFC 1864 form (base64 of the raw digest) as well.
    raw=$(printf '%s' "$body" | openssl dgst -md5 -binary | base64)
    MNS_MD5=$raw mns_request PUT "/queues/$q" "$body"
    assert_status "RFC 1864 Content-MD5 accepted" 201
    MNS_NO_MD5=1 mns_request PUT "/queues/${q}2" "$body"
    assert_status "no Content-MD5 is fine" 201
    # Content-Type is not enforced (Go sends application/xml, docs/protocol.md §2.1).
    MNS_CTYPE=application/xml mns_request PUT "/queues/${q}3" "$body"
    assert_status "application/xml body accepted" 201
}

# ---------------------------------------------------------------------------------------
# Queue names (docs/protocol.md §5)
# ---------------------------------------------------------------------------------------

t_queue_names() {
    local n120 n121
    n120=$(printf 'n%.0s' $(seq 1 120))
    n121="${n120}x"
    mns_request PUT "/queues/$n120" "$(queue_body)"
    assert_status "120-char name accepted" 201
    mns_request PUT "/queues/$n121" "$(queue_body)"
    assert_error "121-char name" 400 QueueNameLengthError
    mns_request PUT "/queues/1starts-with-digit" "$(queue_body)"
    assert_status "name may start with a digit" 201
    mns_request PUT "/queues/a" "$(queue_body)"
    assert_status "one-char name" 201
    mns_request PUT "/queues/-dash-first" "$(queue_body)"
    assert_error "name starting with '-'" 400 InvalidQueueName
    mns_request PUT "/queues/under_score" "$(queue_body)"
    assert_error "name with '_'" 400 InvalidQueueName
    mns_request PUT "/queues/dot.name" "$(queue_body)"
    assert_error "name with '.'" 400 InvalidQueueName
    mns_request PUT "/queues/sp%20ace" "$(queue_body)"
    assert_error "name with an escaped space" 400 InvalidQueueName
    mns_request GET "/queues/under_score"
    assert_error "GetQueueAttributes with a bad name" 400 InvalidQueueName
    # Names are case-sensitive: two different queues.
    mns_request PUT "/queues/CaseQ" "$(queue_body VisibilityTimeout 40)"
    assert_status "CaseQ created" 201
    mns_request PUT "/queues/caseq" "$(queue_body VisibilityTimeout 50)"
    assert_status "caseq is a different queue" 201
    mns_request GET "/queues/CaseQ"
    assert_xml "CaseQ kept its own attributes" VisibilityTimeout 40
}

# ---------------------------------------------------------------------------------------
# CreateQueue (docs/protocol.md §7.1)
# ---------------------------------------------------------------------------------------

t_create_queue() {
    local q=createq
    mns_request PUT "/queues/$q" "$(queue_body)"
    assert_status "create -> 201" 201
    assert_eq "201 has no body" "" "$RESP_BODY"
    assert_header "Location on 201" Location "http://$SMQD_ADDR/queues/$q"
    if header_name_exact Location; then ok "header spelled exactly 'Location'"
    else not_ok "header spelled exactly 'Location'" "$(cat "$RESP_HDRS")"; fi

    mns_request PUT "/queues/$q" "$(queue_body)"
    assert_status "same (default) attributes again -> 204" 204
    assert_header "Location on 204" Location "http://$SMQD_ADDR/queues/$q"
    mns_request PUT "/queues/$q" "$(queue_body DelaySeconds 0 MaximumMessageSize 65536 \
        MessageRetentionPeriod 345600 VisibilityTimeout 30 PollingWaitSeconds 0 LoggingEnabled False)"
    assert_status "explicit defaults equal the stored queue -> 204" 204
    mns_request PUT "/queues/$q" "$(queue_body VisibilityTimeout 60)"
    assert_error "different attributes" 409 QueueAlreadyExist
    mns_request GET "/queues/$q"
    assert_xml "409 did not change the queue" VisibilityTimeout 30

    # A queue with non-default attributes: omitted fields mean defaults, so a subset differs.
    local q2=createq2
    mns_request PUT "/queues/$q2" "$(queue_body VisibilityTimeout 60 DelaySeconds 5)"
    assert_status "create with attributes" 201
    mns_request PUT "/queues/$q2" "$(queue_body DelaySeconds 5 VisibilityTimeout 60)"
    assert_status "same attributes in another order -> 204" 204
    mns_request PUT "/queues/$q2" "$(queue_body VisibilityTimeout 60)"
    assert_error "omitted DelaySeconds means default 0, which differs" 409 QueueAlreadyExist
    mns_request PUT "/queues/$q2" "$(queue_body VisibilityTimeout 60 DelaySeconds 5 LoggingEnabled true)"
    assert_error "LoggingEnabled differs" 409 QueueAlreadyExist

    # Namespaces vary by SDK (docs/protocol.md §4): Go sends none, Java sends no trailing slash.
    mns_request PUT /queues/nsgo '<?xml version="1.0" encoding="UTF-8"?><Queue><DelaySeconds>0</DelaySeconds><PollingWaitSeconds>0</PollingWaitSeconds><LoggingEnabled>false</LoggingEnabled></Queue>'
    assert_status "Go-style body without namespace" 201
    mns_request PUT /queues/nsjava '<?xml version="1.0" encoding="UTF-8" standalone="no"?><Queue xmlns="http://mns.aliyuncs.com/doc/v1"><LoggingEnabled>true</LoggingEnabled></Queue>'
    assert_status "Java-style body" 201
    mns_request GET /queues/nsjava
    assert_xml "boolean 'true' is stored and emitted as True" LoggingEnabled True
    mns_request PUT /queues/nsempty '<?xml version="1.0" encoding="UTF-8"?><Queue xmlns="http://mns.aliyuncs.com/doc/v1/"></Queue>'
    assert_status "empty <Queue> element (Python/Node default)" 201
    mns_request PUT /queues/nobody
    assert_status "no body at all" 201

    mns_request PUT /queues/badxml '<Queue><DelaySeconds>1</Delay'
    assert_error "not well-formed XML" 400 MalformedXML
    mns_request PUT /queues/badroot "$(message_body hello)"
    assert_error "wrong root element" 400 MalformedXML
    mns_request GET /queues/badxml
    assert_error "queue not created after MalformedXML" 404 QueueNotExist
}

# attr_case ATTR VALUE EXPECT — one CreateQueue range case on a fresh queue.
attr_case() {
    local attr=$1 val=$2 want=$3 q
    RANGE_N=$((RANGE_N + 1))
    q="range-$RANGE_N"
    mns_request PUT "/queues/$q" "$(queue_body "$attr" "$val")"
    if [ "$want" = ok ]; then
        assert_status "$attr=$val accepted" 201
        mns_request GET "/queues/$q"
        assert_xml "$attr=$val stored" "$attr" "$val"
    else
        assert_error "$attr=$val rejected" 400 InvalidArgument
        mns_request GET "/queues/$q"
        assert_error "$attr=$val left no queue behind" 404 QueueNotExist
    fi
}

t_attribute_ranges() {
    RANGE_N=0
    attr_case DelaySeconds 0 ok;               attr_case DelaySeconds 604800 ok
    attr_case DelaySeconds -1 bad;             attr_case DelaySeconds 604801 bad
    attr_case MaximumMessageSize 1024 ok;      attr_case MaximumMessageSize 65536 ok
    attr_case MaximumMessageSize 1023 bad;     attr_case MaximumMessageSize 65537 bad
    attr_case MessageRetentionPeriod 60 ok;    attr_case MessageRetentionPeriod 604800 ok
    attr_case MessageRetentionPeriod 59 bad;   attr_case MessageRetentionPeriod 604801 bad
    attr_case VisibilityTimeout 1 ok;          attr_case VisibilityTimeout 43200 ok
    attr_case VisibilityTimeout 0 bad;         attr_case VisibilityTimeout 43201 bad
    attr_case PollingWaitSeconds 0 ok;         attr_case PollingWaitSeconds 30 ok
    attr_case PollingWaitSeconds -1 bad;       attr_case PollingWaitSeconds 31 bad
    attr_case VisibilityTimeout abc bad;       attr_case DelaySeconds 99999999999999999999 bad
}

# ---------------------------------------------------------------------------------------
# GetQueueAttributes (docs/protocol.md §7.3), SetQueueAttributes (docs/protocol.md §7.2), DeleteQueue (docs/protocol.md §7.4)
# ---------------------------------------------------------------------------------------

QUEUE_ELEMENTS='ActiveMessages CreateTime DelayMessages DelaySeconds InactiveMessages LastModifyTime LoggingEnabled MaximumMessageSize MessageRetentionPeriod PollingWaitSeconds QueueName VisibilityTimeout'

t_get_queue() {
    local q=getq now
    now=$(date +%s)
    create_queue "$q"
    mns_request GET "/queues/$q"
    assert_status "GetQueueAttributes -> 200" 200
    assert_eq "root element is Queue" Queue "$(xml_root)"
    assert_eq "exactly the twelve elements" "$(printf '%s\n' $QUEUE_ELEMENTS | LC_ALL=C sort | tr '\n' ' ')" \
        "$(xml_children Queue | LC_ALL=C sort | tr '\n' ' ')"
    assert_xml "QueueName" QueueName "$q"
    assert_xml "DelaySeconds default" DelaySeconds 0
    assert_xml "MaximumMessageSize default" MaximumMessageSize 65536
    assert_xml "MessageRetentionPeriod default" MessageRetentionPeriod 345600
    assert_xml "VisibilityTimeout default" VisibilityTimeout 30
    assert_xml "PollingWaitSeconds default" PollingWaitSeconds 0
    assert_xml "LoggingEnabled default" LoggingEnabled False
    assert_xml "ActiveMessages 0" ActiveMessages 0
    assert_xml "InactiveMessages 0" InactiveMessages 0
    assert_xml "DelayMessages 0" DelayMessages 0
    # CreateTime/LastModifyTime are epoch seconds (docs/protocol.md §5), not milliseconds.
    assert_range "CreateTime is epoch seconds of now" $((now - 5)) $((now + 5)) "$(xml_get CreateTime)"
    assert_eq "LastModifyTime equals CreateTime on a new queue" "$(xml_get CreateTime)" "$(xml_get LastModifyTime)"
    mns_request GET /queues/no-such-queue
    assert_error "missing queue" 404 QueueNotExist
}

# second_ticks_past T — true once the wall clock second is past T (used to observe a
# LastModifyTime change with 1 s resolution without a fixed sleep).
second_ticks_past() { [ "$(date +%s)" -gt "$1" ]; }

t_set_queue() {
    local q=setq created
    create_queue "$q" DelaySeconds 3 PollingWaitSeconds 2
    mns_request GET "/queues/$q"
    created=$(xml_get CreateTime)
    wait_for "clock moved past CreateTime" 10000 second_ticks_past "$created"

    mns_request PUT "/queues/$q?metaoverride=true" "$(queue_body VisibilityTimeout 60)"
    assert_status "SetQueueAttributes -> 204" 204
    assert_eq "204 has no body" "" "$RESP_BODY"
    mns_request GET "/queues/$q"
    assert_xml "VisibilityTimeout updated" VisibilityTimeout 60
    assert_xml "DelaySeconds untouched (partial update)" DelaySeconds 3
    assert_xml "PollingWaitSeconds untouched" PollingWaitSeconds 2
    assert_xml "MaximumMessageSize untouched" MaximumMessageSize 65536
    assert_xml "CreateTime unchanged" CreateTime "$created"
    local lm
    lm=$(xml_get LastModifyTime)
    if [[ $lm =~ ^[0-9]+$ ]] && [ "$lm" -gt "$created" ]; then ok "LastModifyTime advanced"
    else not_ok "LastModifyTime advanced" "CreateTime $created, LastModifyTime '$lm'"; fi

    mns_request PUT "/queues/$q?metaOverride=true" "$(queue_body LoggingEnabled True MaximumMessageSize 2048)"
    assert_status "metaOverride (doc spelling) is also Set" 204
    mns_request GET "/queues/$q"
    assert_xml "LoggingEnabled set" LoggingEnabled True
    assert_xml "MaximumMessageSize set" MaximumMessageSize 2048
    assert_xml "VisibilityTimeout still 60" VisibilityTimeout 60

    mns_request PUT "/queues/$q?metaoverride=true" "$(queue_body VisibilityTimeout 100 DelaySeconds 604801)"
    assert_error "one invalid value rejects the whole Set" 400 InvalidArgument
    mns_request GET "/queues/$q"
    assert_xml "nothing applied from the rejected Set" VisibilityTimeout 60
    assert_xml "DelaySeconds still 3" DelaySeconds 3
    mns_request PUT "/queues/$q?metaoverride=true" '<Queue><VisibilityTimeout>'
    assert_error "Set with malformed XML" 400 MalformedXML
    mns_request PUT "/queues/no-such-queue?metaoverride=true" "$(queue_body VisibilityTimeout 60)"
    assert_error "Set on a missing queue" 404 QueueNotExist
    mns_request GET /queues/no-such-queue
    assert_error "Set did not create the queue" 404 QueueNotExist
}

t_delete_queue() {
    local q=delq
    create_queue "$q"
    send_msg "$q" "to be deleted with the queue"
    mns_request DELETE "/queues/$q"
    assert_status "DeleteQueue -> 204" 204
    assert_eq "204 has no body" "" "$RESP_BODY"
    mns_request GET "/queues/$q"
    assert_error "deleted queue is gone" 404 QueueNotExist
    mns_request GET "/queues/$q/messages"
    assert_error "messages of a deleted queue are gone" 404 QueueNotExist
    mns_request DELETE "/queues/$q"
    assert_status "deleting a missing queue -> 204" 204
    mns_request PUT "/queues/$q" "$(queue_body)"
    assert_status "re-create after delete" 201
    mns_request GET "/queues/$q"
    assert_xml "re-created queue is empty" ActiveMessages 0
    mns_request GET "/queues/$q/messages?peekonly=true"
    assert_error "old messages did not come back" 404 MessageNotExist
}

# ---------------------------------------------------------------------------------------
# ListQueue (docs/protocol.md §7.5)
# ---------------------------------------------------------------------------------------

LIST_NAMES="lst-A lst-b lst-c lst-d lst-e"   # byte order: uppercase sorts first

t_list_queue() {
    local n urls want_urls="" i
    for n in $LIST_NAMES; do create_queue "$n"; want_urls+="http://$SMQD_ADDR/queues/$n "; done
    create_queue other-lst

    mns_request GET /queues -H 'x-mns-prefix: lst-'
    assert_status "ListQueue with prefix -> 200" 200
    assert_eq "root element is Queues" Queues "$(xml_root)"
    urls=""
    for i in $(seq 1 "$(xml_count QueueURL)"); do urls+="$(xml_get QueueURL "$i") "; done
    assert_eq "prefix selects exactly the five, in name order" "$want_urls" "$urls"
    assert_eq "no NextMarker when everything fits" 0 "$(xml_count NextMarker)"
    assert_children "without meta a Queue holds only QueueURL" Queue QueueURL

    mns_request GET /queues -H 'x-mns-prefix: nothing-matches-this'
    assert_status "empty result -> 200" 200
    assert_eq "no Queue elements" 0 "$(xml_count Queue)"
    assert_eq "no NextMarker on an empty result" 0 "$(xml_count NextMarker)"

    # Paging: the marker is opaque; follow it until it is absent.
    local marker="" page=0 seen="" count
    while [ $page -lt 10 ]; do
        page=$((page + 1))
        if [ -n "$marker" ]; then
            mns_request GET /queues -H 'x-mns-prefix: lst-' -H 'x-mns-ret-number: 2' -H "x-mns-marker: $marker"
        else
            mns_request GET /queues -H 'x-mns-prefix: lst-' -H 'x-mns-ret-number: 2'
        fi
        assert_status "page $page -> 200" 200 || break
        count=$(xml_count Queue)
        assert_range "page $page has 1..2 queues" 1 2 "$count"
        for i in $(seq 1 "$count"); do seen+="$(xml_get QueueURL "$i") "; done
        [ "$(xml_count NextMarker)" = 0 ] && break
        marker=$(xml_get NextMarker)
        assert_ne "NextMarker is non-empty when present" "" "$marker" || break
    done
    assert_eq "paging saw every queue once, in name order" "$want_urls" "$seen"
    assert_eq "three pages of at most 2" 3 "$page"

    mns_request GET /queues -H 'x-mns-prefix: lst-' -H 'x-mns-ret-number: 5'
    assert_eq "ret-number equal to the count: no NextMarker" 0 "$(xml_count NextMarker)"
    mns_request GET /queues -H 'x-mns-ret-number: 1000'
    assert_status "ret-number 1000 accepted" 200
    mns_request GET /queues -H 'x-mns-ret-number: 0'
    assert_error "ret-number 0" 400 InvalidArgument
    mns_request GET /queues -H 'x-mns-ret-number: 1001'
    assert_error "ret-number 1001" 400 InvalidArgument
    mns_request GET /queues -H 'x-mns-ret-number: ten'
    assert_error "ret-number not a number" 400 InvalidArgument

    mns_request GET /queues -H 'x-mns-prefix: lst-b' -H 'x-mns-with-meta: true'
    assert_status "ListQueue with meta -> 200" 200
    assert_eq "with meta: QueueURL plus the twelve attributes" \
        "$(printf '%s\n' QueueURL $QUEUE_ELEMENTS | LC_ALL=C sort | tr '\n' ' ')" \
        "$(xml_children Queue | LC_ALL=C sort | tr '\n' ' ')"
    assert_xml "with meta: QueueName" QueueName lst-b
    assert_xml "with meta: VisibilityTimeout" VisibilityTimeout 30
}

# ---------------------------------------------------------------------------------------
# Routing and query parsing
# ---------------------------------------------------------------------------------------

t_unknown_routes() {
    create_queue routeq
    mns_request GET /nothing-here
    assert_error "GET /nothing-here" 400 InvalidRequestURL
    mns_request POST /queues "$(queue_body)"
    assert_error "POST /queues" 400 InvalidRequestURL
    mns_request DELETE /queues
    assert_error "DELETE /queues" 400 InvalidRequestURL
    mns_request PATCH /queues/routeq "$(queue_body)"
    assert_error "PATCH /queues/q" 400 InvalidRequestURL
    mns_request POST /queues/routeq "$(queue_body)"
    assert_error "POST /queues/q" 400 InvalidRequestURL
    mns_request GET /queues/routeq/bogus
    assert_error "GET /queues/q/bogus" 400 InvalidRequestURL
    mns_request GET /queues/routeq/messages/extra
    assert_error "GET /queues/q/messages/extra" 400 InvalidRequestURL
    # Topics are routed (protocol.md §13.1), but not every combination under /topics.
    mns_request GET /topics/t/messages
    assert_error "GET /topics/t/messages" 400 InvalidRequestURL
    # PublishMessage is routed and its body judged before its topic is looked up (§12.1, §13.5).
    mns_request POST /topics/t/messages "<Messages><Message><MessageBody>x</MessageBody></Message></Messages>"
    assert_error "PublishMessage of a <Messages> batch" 400 MalformedXML
    mns_request POST /topics/t/messages "<Message><MessageBody></MessageBody></Message>"
    assert_error "PublishMessage with an empty body" 400 InvalidArgument
    mns_request POST /topics/no-such-topic/messages "<Message><MessageBody>x</MessageBody></Message>"
    assert_error "PublishMessage to a topic that does not exist" 404 TopicNotExist
}

t_plus_in_query() {
    create_queue plusq
    # Handles use [A-Za-z0-9_-] only, so a '+' (kept literal, never a space) makes it malformed.
    mns_request DELETE '/queues/plusq/messages?ReceiptHandle=abc+def'
    assert_error "'+' in a receipt handle" 400 ReceiptHandleError
    mns_request PUT '/queues/plusq/messages?ReceiptHandle=a+b%2Bc&VisibilityTimeout=10'
    assert_error "'+' and %2B in ChangeMessageVisibility" 400 ReceiptHandleError
    mns_request GET /queues/plusq
    assert_status "server still answers after odd query strings" 200
}

t_request_log() {
    mns_request GET /queues/log-probe-queue
    assert_error "probe request" 404 QueueNotExist
    local id=$RESP_ID
    # stderr is the log; one line per request with id, status and error code (brief).
    log_has_probe() { grep -F "$id" "$SMQD_LOG" | grep -F 404 | grep -qF QueueNotExist; }
    wait_for "request log line has id, status and code" 2000 log_has_probe
}

# ---------------------------------------------------------------------------------------
# Persistence (beanstalkd/redis style: write, stop, restart on the same dir, check)
# ---------------------------------------------------------------------------------------

t_persistence() {
    create_queue persistq VisibilityTimeout 77 DelaySeconds 4 MaximumMessageSize 4096 \
        MessageRetentionPeriod 600 PollingWaitSeconds 3 LoggingEnabled True
    create_queue persist-gone
    mns_request GET /queues/persistq
    local before=$RESP_BODY created
    created=$(xml_get CreateTime)
    mns_request DELETE /queues/persist-gone
    assert_status "delete persist-gone" 204

    smqd_restart_same_data || return
    assert_eq "SIGTERM exits 0" 0 "$SMQD_EXIT"
    mns_request GET /queues/persistq
    assert_status "queue survives SIGTERM restart" 200
    local a
    for a in VisibilityTimeout DelaySeconds MaximumMessageSize MessageRetentionPeriod \
             PollingWaitSeconds LoggingEnabled CreateTime LastModifyTime; do
        assert_eq "$a survives restart" "$(xml_get "$a" 1 "$before")" "$(xml_get "$a")"
    done
    mns_request GET /queues/persist-gone
    assert_error "deleted queue stays deleted" 404 QueueNotExist

    create_queue persist-crash VisibilityTimeout 9
    smqd_restart_same_data kill9 || return
    mns_request GET /queues/persist-crash
    assert_status "queue created just before SIGKILL survives" 200
    assert_xml "its attributes survive SIGKILL" VisibilityTimeout 9
    mns_request GET /queues/persistq
    assert_xml "older queue still there after SIGKILL" CreateTime "$created"
    mns_request GET /queues -H 'x-mns-prefix: persist'
    assert_eq "ListQueue after restarts" "http://$SMQD_ADDR/queues/persist-crash" "$(xml_get QueueURL 1)"
    assert_eq "ListQueue after restarts (2)" "http://$SMQD_ADDR/queues/persistq" "$(xml_get QueueURL 2)"
    assert_eq "ListQueue after restarts: two queues" 2 "$(xml_count QueueURL)"
}

# ---------------------------------------------------------------------------------------

run_test t_signing_vectors
run_test t_cli
if smqd_start; then
    run_test t_auth
    run_test t_content_md5
    run_test t_queue_names
    run_test t_create_queue
    run_test t_attribute_ranges
    run_test t_get_queue
    run_test t_set_queue
    run_test t_delete_queue
    run_test t_list_queue
    run_test t_unknown_routes
    run_test t_plus_in_query
    run_test t_request_log
    run_test t_persistence
    smqd_stop
fi
finish
