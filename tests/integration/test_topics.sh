#!/usr/bin/env bash
# test_topics.sh — topic and subscription management (docs/protocol.md §13.1–§13.7,
# §13.13, §13.14) against the real smqd binary over loopback HTTP with curl and openssl
# signing: every operation's success and error answers, paging, the decoder traps of
# §13.3 (element order, no empty elements, NextMarker only when more remain), grants, and
# topics and subscriptions surviving an orderly restart and a kill -9.
#
# Run: SMQD_BIN=build/smqd bash tests/integration/test_topics.sh (or ctest -L integration).

set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"

require_tools curl openssl xmllint md5sum base64 awk sed
require_bin

NS='http://mns.aliyuncs.com/doc/v1/'
QEP='acs:mns:cn-hangzhou:1000000000000000:queues/sink'

topic_body() {   # topic_body [NAME VALUE]...
    local out="<?xml version=\"1.0\" encoding=\"UTF-8\"?><Topic xmlns=\"$NS\">"
    while [ $# -ge 2 ]; do out+="<$1>$2</$1>"; shift 2; done
    printf '%s</Topic>' "$out"
}

sub_body() {     # sub_body [NAME VALUE]...
    local out="<?xml version=\"1.0\" encoding=\"UTF-8\"?><Subscription xmlns=\"$NS\">"
    while [ $# -ge 2 ]; do out+="<$1>$2</$1>"; shift 2; done
    printf '%s</Subscription>' "$out"
}

t_create_topic() {
    mns_request PUT /topics/orders
    assert_status "CreateTopic without a body" 201
    assert_header "Location of a new topic" Location "http://$SMQD_ADDR/topics/orders"
    mns_request PUT /topics/orders "$(topic_body MaximumMessageSize 65536 LoggingEnabled False)"
    assert_status "CreateTopic again with the defaults spelled out" 204
    assert_header "Location on 204 too" Location "http://$SMQD_ADDR/topics/orders"
    mns_request PUT /topics/orders "$(topic_body MaximumMessageSize 2048)"
    assert_error "CreateTopic with other attributes" 409 TopicAlreadyExist
    mns_request PUT /topics/small "$(topic_body LoggingEnabled true MaximumMessageSize 1024)"
    assert_status "CreateTopic with attributes in any order" 201
    mns_request PUT /topics/big "$(topic_body MaximumMessageSize 65537)"
    assert_error "MaximumMessageSize above 65536" 400 InvalidArgument
    mns_request PUT /topics/tiny "$(topic_body MaximumMessageSize 1023)"
    assert_error "MaximumMessageSize below 1024" 400 InvalidArgument
    mns_request PUT /topics/bad_name
    assert_error "a bad character in a topic name" 400 TopicNameInvalid
    mns_request PUT "/topics/$(printf 'a%.0s' $(seq 121))"
    assert_error "a 121-character topic name" 400 TopicNameLengthError
    mns_request PUT "/topics/$(printf 'a%.0s' $(seq 120))"
    assert_status "a 120-character topic name" 201
    mns_request PUT /topics/malformed '<Topic><MaximumMessageSize>2048'
    assert_error "a body that is not XML" 400 MalformedXML
    mns_request PUT /topics/malformed "<Queue xmlns=\"$NS\"/>"
    assert_error "a root other than Topic" 400 MalformedXML
    mns_request GET /topics/malformed
    assert_error "nothing made by refused creates" 404 TopicNotExist
    # Topics and queues are separate name spaces.
    mns_request PUT /queues/orders
    assert_status "a queue may share a topic's name" 201
}

t_get_set_topic() {
    local created
    mns_request GET /topics/small
    assert_status "GetTopicAttributes" 200
    assert_children "the seven elements, in order" Topic \
        'TopicName CreateTime LastModifyTime MaximumMessageSize MessageRetentionPeriod MessageCount LoggingEnabled'
    assert_xml "TopicName" TopicName small
    assert_xml "MaximumMessageSize" MaximumMessageSize 1024
    assert_xml "MessageRetentionPeriod" MessageRetentionPeriod 86400
    assert_xml "MessageCount" MessageCount 0
    assert_xml "LoggingEnabled" LoggingEnabled True
    assert_xml_re "CreateTime in epoch seconds" CreateTime '^1[0-9]{9}$'
    created=$(xml_get CreateTime)
    mns_request PUT '/topics/small?metaoverride=true' "$(topic_body LoggingEnabled False)"
    assert_status "SetTopicAttributes" 204
    mns_request GET /topics/small
    assert_xml "Set changed LoggingEnabled" LoggingEnabled False
    assert_xml "Set left MaximumMessageSize alone" MaximumMessageSize 1024
    assert_xml "CreateTime kept" CreateTime "$created"
    mns_request PUT '/topics/small?metaoverride=true' "$(topic_body MaximumMessageSize 99999)"
    assert_error "Set with a value out of range" 400 InvalidArgument
    mns_request PUT '/topics/nope?metaoverride=true' "$(topic_body LoggingEnabled True)"
    assert_error "Set on a missing topic" 404 TopicNotExist
    mns_request GET /topics/nope
    assert_error "Get on a missing topic" 404 TopicNotExist
}

t_list_topics() {
    local t
    for t in list-a list-b list-c; do mns_request PUT "/topics/$t"; done
    mns_request GET /topics -H 'x-mns-prefix: list-' -H 'x-mns-ret-number: 2'
    assert_status "ListTopic, first page" 200
    assert_eq "root is Topics" Topics "$(xml_root)"
    assert_eq "two on the page" 2 "$(xml_count TopicURL)"
    assert_eq "first URL" "http://$SMQD_ADDR/topics/list-a" "$(xml_get TopicURL 1)"
    assert_xml "NextMarker names the next one" NextMarker list-c
    mns_request GET /topics -H 'x-mns-prefix: list-' -H 'x-mns-ret-number: 2' -H 'x-mns-marker: list-c'
    assert_eq "second page: one" 1 "$(xml_count TopicURL)"
    assert_eq "no NextMarker on the last page" 0 "$(xml_count NextMarker)"
    mns_request GET /topics/ -H 'x-mns-prefix: list-b' -H 'x-mns-with-meta: true'
    assert_status "ListTopic with meta (trailing slash)" 200
    assert_children "with meta: TopicURL then the seven, flat" Topic \
        'TopicURL TopicName CreateTime LastModifyTime MaximumMessageSize MessageRetentionPeriod MessageCount LoggingEnabled'
    mns_request GET /topics -H 'x-mns-prefix: none-such'
    assert_status "an empty ListTopic" 200
    assert_eq "no Topic element" 0 "$(xml_count Topic)"
    mns_request GET /topics -H 'x-mns-ret-number: 1001'
    assert_error "x-mns-ret-number above 1000" 400 InvalidArgument
}

t_subscribe() {
    mns_request PUT /topics/orders/subscriptions/to-sink "$(sub_body Endpoint "$QEP")"
    assert_status "Subscribe a queue endpoint" 201
    assert_header "Location of a subscription" Location \
        "http://$SMQD_ADDR/topics/orders/subscriptions/to-sink"
    mns_request PUT /topics/orders/subscriptions/to-sink \
        "$(sub_body NotifyContentFormat xml Endpoint "  $QEP " NotifyStrategy backoff_retry)"
    assert_status "Subscribe again, same attributes (trimmed, any case)" 204
    mns_request PUT /topics/orders/subscriptions/to-sink "$(sub_body Endpoint "$QEP" NotifyContentFormat JSON)"
    assert_error "Subscribe again with another format" 409 SubscriptionAlreadyExist
    mns_request PUT /topics/orders/subscriptions/hook \
        "$(sub_body Endpoint 'http://127.0.0.1:9/hook?x=1' FilterTag vip NotifyStrategy EXPONENTIAL_DECAY_RETRY NotifyContentFormat SIMPLIFIED)"
    assert_status "Subscribe an HTTP endpoint with every attribute" 201
    mns_request PUT /topics/orders/subscriptions/mail "$(sub_body Endpoint 'mail:directmail:a@example.com')"
    assert_error "a mail endpoint is refused" 400 EndpointInvalid
    mns_request PUT /topics/orders/subscriptions/sms "$(sub_body Endpoint 'sms:directsms:anonymous')"
    assert_error "an SMS endpoint is refused" 400 EndpointInvalid
    mns_request PUT /topics/orders/subscriptions/badq "$(sub_body Endpoint 'acs:mns:r:1:queues/bad_q')"
    assert_error "a queue endpoint with a bad queue name" 400 EndpointInvalid
    mns_request PUT /topics/orders/subscriptions/none "$(sub_body FilterTag x)"
    assert_error "no Endpoint" 400 EndpointInvalid
    mns_request PUT /topics/orders/subscriptions/long "$(sub_body Endpoint "$QEP" FilterTag 12345678901234567)"
    assert_error "a FilterTag of 17 characters" 400 InvalidArgument
    mns_request PUT /topics/orders/subscriptions/strat "$(sub_body Endpoint "$QEP" NotifyStrategy SOMETIMES)"
    assert_error "an unknown NotifyStrategy" 400 InvalidArgument
    mns_request PUT /topics/orders/subscriptions/fmt "$(sub_body Endpoint "$QEP" NotifyContentFormat STREAM)"
    assert_error "STREAM is refused" 400 InvalidArgument
    mns_request PUT /topics/orders/subscriptions/bad_name "$(sub_body Endpoint "$QEP")"
    assert_error "a bad subscription name" 400 SubscriptionNameInvalid
    mns_request PUT /topics/nope/subscriptions/s "$(sub_body Endpoint "$QEP")"
    assert_error "Subscribe on a missing topic" 404 TopicNotExist
    mns_request PUT /topics/orders/subscriptions/dl \
        "<Subscription xmlns=\"$NS\"><Endpoint>$QEP</Endpoint><DlqPolicy><Enabled>true</Enabled><DeadLetterTargetQueue>no-such-q</DeadLetterTargetQueue></DlqPolicy></Subscription>"
    assert_error "a dead-letter target that does not exist" 400 InvalidArgument
    mns_request PUT /queues/hook-dlq
    mns_request PUT /topics/orders/subscriptions/dl \
        "<Subscription xmlns=\"$NS\"><Endpoint>$QEP</Endpoint><DlqPolicy><Enabled>true</Enabled><DeadLetterTargetQueue>hook-dlq</DeadLetterTargetQueue></DlqPolicy></Subscription>"
    assert_status "Subscribe with a dead-letter policy" 201
}

t_get_set_subscription() {
    mns_request GET /topics/orders/subscriptions/hook
    assert_status "GetSubscriptionAttributes" 200
    assert_children "the elements in order, FilterTag since it is set" Subscription \
        'TopicOwner TopicName SubscriptionName Subscriber Endpoint FilterTag NotifyStrategy NotifyContentFormat CreateTime LastModifyTime'
    assert_xml "TopicOwner is the account id" TopicOwner 1000000000000000
    assert_xml "Endpoint as stored" Endpoint 'http://127.0.0.1:9/hook?x=1'
    assert_xml "NotifyStrategy in upper case" NotifyStrategy EXPONENTIAL_DECAY_RETRY
    assert_xml "NotifyContentFormat" NotifyContentFormat SIMPLIFIED
    mns_request GET /topics/orders/subscriptions/to-sink
    assert_children "no FilterTag when none is set" Subscription \
        'TopicOwner TopicName SubscriptionName Subscriber Endpoint NotifyStrategy NotifyContentFormat CreateTime LastModifyTime'
    mns_request GET /topics/orders/subscriptions/dl
    assert_xml "DlqEnabled when a policy is set" DlqEnabled True
    assert_xml "DlqTargetQueue" DlqTargetQueue hook-dlq
    mns_request PUT '/topics/orders/subscriptions/to-sink?metaoverride=true' \
        "$(sub_body NotifyStrategy EXPONENTIAL_DECAY_RETRY FilterTag red)"
    assert_status "SetSubscriptionAttributes" 204
    mns_request GET /topics/orders/subscriptions/to-sink
    assert_xml "strategy changed" NotifyStrategy EXPONENTIAL_DECAY_RETRY
    assert_xml "filter set" FilterTag red
    mns_request PUT '/topics/orders/subscriptions/to-sink?metaoverride=true' \
        "$(sub_body NotifyContentFormat JSON)"
    assert_error "the format cannot change" 400 InvalidArgument
    mns_request PUT '/topics/orders/subscriptions/nope?metaoverride=true' "$(sub_body NotifyStrategy BACKOFF_RETRY)"
    assert_error "Set on a missing subscription" 404 SubscriptionNotExist
    mns_request GET /topics/orders/subscriptions/nope
    assert_error "Get on a missing subscription" 404 SubscriptionNotExist
    mns_request GET /topics/nope/subscriptions/nope
    assert_error "Get under a missing topic" 404 TopicNotExist
}

t_list_subscriptions() {
    mns_request GET /topics/orders/subscriptions -H 'x-mns-ret-number: 2'
    assert_status "ListSubscriptionByTopic" 200
    assert_eq "root is Subscriptions" Subscriptions "$(xml_root)"
    assert_eq "two on the page" 2 "$(xml_count SubscriptionURL)"
    assert_eq "in name order" "http://$SMQD_ADDR/topics/orders/subscriptions/dl" "$(xml_get SubscriptionURL 1)"
    assert_xml "NextMarker" NextMarker to-sink
    mns_request GET /topics/orders/subscriptions/ -H 'x-mns-marker: to-sink' -H 'x-mns-with-meta: true'
    assert_eq "the last page: one" 1 "$(xml_count SubscriptionURL)"
    assert_eq "no NextMarker" 0 "$(xml_count NextMarker)"
    assert_xml "with meta: the subscription's elements" SubscriptionName to-sink
    mns_request GET /topics/nope/subscriptions
    assert_error "under a missing topic" 404 TopicNotExist
}

t_routes() {
    mns_request POST /topics/orders
    assert_error "POST on a topic" 400 InvalidRequestURL
    mns_request GET /topics/orders/messages
    assert_error "GET on messages" 400 InvalidRequestURL
    mns_request PUT /topics/orders/subscriptions/s/extra "$(sub_body Endpoint "$QEP")"
    assert_error "a path deeper than a subscription" 400 InvalidRequestURL
}

publish_body() {   # publish_body BODY [TAG]
    local out="<?xml version=\"1.0\" encoding=\"UTF-8\"?><Message xmlns=\"$NS\"><MessageBody>$(xml_escape "$1")</MessageBody>"
    [ $# -ge 2 ] && out+="<MessageTag>$2</MessageTag>"
    printf '%s</Message>' "$out"
}

# receive_body QUEUE — the body of one message received from QUEUE (deleted), in RECEIVED.
receive_body() {
    local handle
    RECEIVED=""
    mns_request GET "/queues/$1/messages?waitseconds=2"
    [ "$RESP_STATUS" = 200 ] || return 1
    RECEIVED=$(xml_get MessageBody)
    handle=$(xml_get ReceiptHandle)
    mns_request DELETE "/queues/$1/messages?ReceiptHandle=$handle"
}

# PublishMessage (§13.5) and delivery into queue subscriptions in the three formats (§13.9),
# with FilterTag (§13.8).
t_publish() {
    local body='a <b> & "c"' id md5 q
    mns_request PUT /topics/pub
    for q in p-xml p-json p-simple p-red; do mns_request PUT "/queues/$q"; done
    mns_request PUT /topics/pub/subscriptions/x "$(sub_body Endpoint 'acs:mns:r:1:queues/p-xml')"
    mns_request PUT /topics/pub/subscriptions/j "$(sub_body Endpoint 'acs:mns:r:1:queues/p-json' NotifyContentFormat JSON)"
    mns_request PUT /topics/pub/subscriptions/s "$(sub_body Endpoint 'acs:mns:r:1:queues/p-simple' NotifyContentFormat SIMPLIFIED)"
    mns_request PUT /topics/pub/subscriptions/r "$(sub_body Endpoint 'acs:mns:r:1:queues/p-red' NotifyContentFormat SIMPLIFIED FilterTag red)"
    assert_status "four subscriptions" 201
    mns_request POST /topics/pub/messages "$(publish_body "$body" red)"
    assert_status "PublishMessage" 201
    assert_children "the answer: MessageId and MessageBodyMD5" Message 'MessageId MessageBodyMD5'
    id=$(xml_get MessageId)
    md5=$(xml_get MessageBodyMD5)
    assert_match "MessageId is 32 hex digits" '^[0-9A-F]{32}$' "$id"
    assert_eq "MessageBodyMD5 of the body" "$(md5_upper "$body")" "$md5"
    receive_body p-simple
    assert_eq "SIMPLIFIED delivers the body itself" "$body" "$RECEIVED"
    receive_body p-red
    assert_eq "the FilterTag red subscription gets the red message" "$body" "$RECEIVED"
    receive_body p-xml
    assert_eq "XML: the notification's Message" "$body" "$(xml_get Message 1 "$RECEIVED")"
    assert_eq "XML: its MessageId is the publish's" "$id" "$(xml_get MessageId 1 "$RECEIVED")"
    assert_eq "XML: its MessageMD5" "$md5" "$(xml_get MessageMD5 1 "$RECEIVED")"
    assert_eq "XML: its MessageTag" red "$(xml_get MessageTag 1 "$RECEIVED")"
    assert_eq "XML: its SubscriptionName" x "$(xml_get SubscriptionName 1 "$RECEIVED")"
    receive_body p-json
    assert_eq "JSON: the notification's Message and MessageId" "$body|$id|j" \
        "$(printf '%s' "$RECEIVED" | node -e 'const j=JSON.parse(require("fs").readFileSync(0,"utf8")); console.log(j.Message+"|"+j.MessageId+"|"+j.SubscriptionName)')"
    mns_request POST /topics/pub/messages "$(publish_body untagged)"
    assert_status "an untagged publish" 201
    receive_body p-simple
    assert_eq "reaches the unfiltered subscription" untagged "$RECEIVED"
    mns_request GET "/queues/p-red/messages?waitseconds=1"
    assert_error "and not the filtered one" 404 MessageNotExist
    mns_request POST /topics/nope/messages "$(publish_body x)"
    assert_error "publish to a missing topic" 404 TopicNotExist
    mns_request POST /topics/small/messages "$(publish_body "$(printf 'b%.0s' $(seq 1025))")"
    assert_error "a body over the topic's MaximumMessageSize" 400 InvalidArgument
    mns_request POST /topics/pub/messages "<Message xmlns=\"$NS\"><MessageBody></MessageBody></Message>"
    assert_error "an empty MessageBody" 400 InvalidArgument
    mns_request POST /topics/pub/messages "<Messages xmlns=\"$NS\"><Message><MessageBody>x</MessageBody></Message></Messages>"
    assert_error "no batch publish" 400 MalformedXML
    mns_request GET /topics/pub
    assert_xml "nothing is kept once delivered" MessageCount 0
}

# A publish acknowledged for a queue that does not exist yet survives kill -9 with its retry
# schedule, and is delivered once the queue exists (BACKOFF_RETRY: 10–20 s later, §13.12).
t_publish_retry_across_kill9() {
    mns_request PUT /topics/late
    mns_request PUT /topics/late/subscriptions/s \
        "$(sub_body Endpoint 'acs:mns:r:1:queues/late-q' NotifyContentFormat SIMPLIFIED)"
    mns_request POST /topics/late/messages "$(publish_body 'held for later')"
    assert_status "publish before the queue exists" 201
    mns_request GET /topics/late
    assert_xml "the message is kept for its notification" MessageCount 1
    smqd_restart_same_data kill9
    mns_request GET /topics/late
    assert_xml "still kept after kill -9" MessageCount 1
    mns_request PUT /queues/late-q
    wait_for "delivered once the queue exists, at the next retry" 25000 receive_body late-q
    assert_eq "the body as published" 'held for later' "$RECEIVED"
    mns_request GET /topics/late
    assert_xml "and no longer kept" MessageCount 0
}

t_grants() {
    # team-t may manage topics t-*, and send to the queue t-sink only.
    cat >>"$SMQD_DIR/smqd.conf" <<EOF
[auth]
key.team-t = team-t-secret
[grant.team-t]
queues = t-*
actions = manage, list
[grant.team-t.2]
queues = t-sink
actions = send
EOF
    smqd_restart_same_data
    MNS_AK=team-t MNS_SK=team-t-secret mns_request PUT /topics/t-one
    assert_status "manage on t-* creates t-one" 201
    MNS_AK=team-t MNS_SK=team-t-secret mns_request PUT /topics/orders2
    assert_error "no manage on orders2" 403 AccessDenied
    MNS_AK=team-t MNS_SK=team-t-secret mns_request PUT /topics/t-one/subscriptions/s \
        "$(sub_body Endpoint 'acs:mns:r:1:queues/t-sink')"
    assert_status "a queue subscription with send on the queue" 201
    MNS_AK=team-t MNS_SK=team-t-secret mns_request PUT /topics/t-one/subscriptions/s2 \
        "$(sub_body Endpoint 'acs:mns:r:1:queues/t-other')"
    assert_error "a queue subscription without send on the queue" 403 AccessDenied
    MNS_AK=team-t MNS_SK=team-t-secret mns_request PUT /topics/t-one/subscriptions/h \
        "$(sub_body Endpoint 'http://127.0.0.1:9/')"
    assert_status "an HTTP subscription needs manage only" 201
    MNS_AK=team-t MNS_SK=team-t-secret mns_request GET /topics
    assert_status "ListTopic with a narrow key" 200
    assert_eq "shows only the topics the key may list" "http://$SMQD_ADDR/topics/t-one" "$(xml_get TopicURL 1)"
    assert_eq "... and no other" 1 "$(xml_count TopicURL)"
    MNS_AK=team-t MNS_SK=team-t-secret mns_request GET /topics/orders
    assert_error "no list on orders" 403 AccessDenied
}

t_delete_and_durability() {
    local created
    mns_request GET /topics/orders
    created=$(xml_get CreateTime)
    smqd_restart_same_data
    mns_request GET /topics/orders
    assert_xml "a topic survives an orderly restart" CreateTime "$created"
    mns_request GET /topics/orders/subscriptions/to-sink
    assert_xml "its subscription too, as set" FilterTag red
    mns_request PUT /topics/crash
    mns_request PUT /topics/crash/subscriptions/s "$(sub_body Endpoint "$QEP" NotifyContentFormat JSON)"
    assert_status "Subscribe just before a kill -9" 201
    smqd_restart_same_data kill9
    mns_request GET /topics/crash/subscriptions/s
    assert_status "an acknowledged Subscribe survives kill -9" 200
    assert_xml "with its format" NotifyContentFormat JSON
    mns_request DELETE /topics/orders/subscriptions/hook
    assert_status "Unsubscribe" 204
    mns_request DELETE /topics/orders/subscriptions/hook
    assert_status "Unsubscribe again" 204
    mns_request DELETE /topics/nope/subscriptions/hook
    assert_error "Unsubscribe under a missing topic" 404 TopicNotExist
    mns_request DELETE /topics/orders
    assert_status "DeleteTopic" 204
    mns_request DELETE /topics/orders
    assert_status "DeleteTopic again" 204
    mns_request PUT /topics/orders
    assert_status "the name is free again" 201
    mns_request GET /topics/orders/subscriptions
    assert_eq "and its subscriptions went with it" 0 "$(xml_count SubscriptionURL)"
    smqd_restart_same_data kill9
    mns_request GET /topics/orders/subscriptions
    assert_eq "... after a kill -9 too" 0 "$(xml_count SubscriptionURL)"
    mns_request GET /topics/crash/subscriptions/s
    assert_status "the other topic's subscription is still there" 200
}

t_limits() {
    printf '[limits]\nmax_topics = 3\nmax_subscriptions_per_topic = 1\n' >>"$SMQD_DIR/smqd.conf"
    smqd_restart_same_data
    mns_request PUT /topics/one-more-than-allowed
    assert_error "max_topics reached" 400 TopicNumExceededLimit
    mns_request PUT /topics/crash/subscriptions/s2 "$(sub_body Endpoint "$QEP")"
    assert_error "max_subscriptions_per_topic reached" 400 SubscriptionNumExceededLimit
}

if smqd_start; then
    run_test t_create_topic
    run_test t_get_set_topic
    run_test t_list_topics
    run_test t_subscribe
    run_test t_get_set_subscription
    run_test t_list_subscriptions
    run_test t_routes
    run_test t_publish
    run_test t_publish_retry_across_kill9
    run_test t_delete_and_durability
    run_test t_grants
    run_test t_limits
    smqd_stop
fi
finish
