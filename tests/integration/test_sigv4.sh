#!/usr/bin/env bash
# test_sigv4.sh — signature V4 (MNS4-HMAC-SHA256, docs/protocol.md §3.6), the opt-in
# scheme of the Java SDK 2.0.0, against the real smqd: requests signed with openssl in
# bash (lib.sh mns_request_v4) create a queue and send, receive and delete a message; any
# region works; V2 keeps working beside it; and every tampered or mis-scoped request is
# refused with V2's error code and changes nothing.
#
# Run: SMQD_BIN=build/smqd bash tests/integration/test_sigv4.sh

set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"

require_tools curl openssl xmllint md5sum base64 awk sed od date
require_bin

# The signer itself reproduces the doc's Java vectors (same inputs as V2's J1-J3).
t_signer_matches_doc_vectors() {
    local d='Tue, 02 Jan 2024 03:04:05 GMT' ct='text/xml;charset=UTF-8' v='x-mns-version: 2015-06-06'
    local rh=8-0zxjHBaWtzPz8zphz0z6OGz5yWWidU1fJM pre='MNS4-HMAC-SHA256 Credential=testAccessKeyId/20240102/cn-hangzhou/mns/aliyun_v4_request,Signature='
    assert_eq "J1" "${pre}09d68529a631e73186c334aca82210b5e2831bbfa41a5f2456f2751bbe17e9c5" \
        "$(mns_v4_authorization testAccessKeyId testAccessKeySecret cn-hangzhou GET '' "$ct" "$d" /queues/TestQueue "$v")"
    assert_eq "J2" "${pre}f221bf1ac24f9c8adc1dad4638051836ff9ac2b2df66ee73becb218db479df47" \
        "$(mns_v4_authorization testAccessKeyId testAccessKeySecret cn-hangzhou PUT '' "$ct" "$d" \
           "/queues/TestQueue/messages?ReceiptHandle=$rh&VisibilityTimeout=60" "$v")"
    assert_eq "J3" "${pre}b9b582022279b07fb46d441146760cabca1e6f4382dd60cefba57cec460d27d5" \
        "$(mns_v4_authorization testAccessKeyId testAccessKeySecret cn-hangzhou GET '' "$ct" "$d" \
           "/queues/TestQueue/messages?numOfMessages=16&waitseconds=10" "$v")"
}

t_message_lifecycle() {
    local handle
    mns_request_v4 PUT /queues/v4q "$(queue_body VisibilityTimeout 30)"
    assert_status "CreateQueue signed with V4" 201
    mns_request_v4 POST /queues/v4q/messages "$(message_body 'hello v4' Priority 3)"
    assert_status "SendMessage signed with V4" 201
    assert_xml "its MD5" MessageBodyMD5 "$(md5_upper 'hello v4')"
    mns_request_v4 GET '/queues/v4q/messages?waitseconds=1'
    assert_status "ReceiveMessage signed with V4" 200
    assert_xml "the message sent" MessageBody 'hello v4'
    handle=$(xml_get ReceiptHandle)
    mns_request_v4 PUT "/queues/v4q/messages?ReceiptHandle=$handle&VisibilityTimeout=1"
    assert_status "ChangeMessageVisibility signed with V4 (query names in any case)" 200
    handle=$(xml_get ReceiptHandle)
    mns_request_v4 DELETE "/queues/v4q/messages?ReceiptHandle=$handle"
    assert_status "DeleteMessage signed with V4" 204
    mns_request_v4 GET '/queues/v4q/messages?peekonly=true'
    assert_error "the queue is empty afterwards" 404 MessageNotExist
    mns_request GET /queues/v4q
    assert_status "V2 still verifies on the same server" 200
    assert_xml "and sees the same queue" QueueName v4q
}

t_any_region() {
    local r
    for r in cn-hangzhou us-west-1 ap-southeast-5 private_cloud.1 x; do
        MNS_REGION=$r mns_request_v4 GET /queues/v4q
        assert_status "region '$r' verifies (smqd has no region)" 200
    done
}

# Each refusal must leave the queue as it was: nothing sent, nothing deleted, nothing created.
t_tampered_send_changes_nothing() {
    local body auth date
    date=$(http_date)
    body=$(message_body 'signed body')
    auth=$(MNS_DATE=$date mns_v4_authorization testAccessKeyId testAccessKeySecret cn-hangzhou POST \
           "$(content_md5_text "$body")" \
           'text/xml;charset=UTF-8' "$date" /queues/v4q/messages 'x-mns-version: 2015-06-06')
    MNS_DATE=$date MNS_AUTH=$auth mns_request POST /queues/v4q/messages "$(message_body 'other body')"
    assert_error "a body (and its Content-MD5) swapped after signing" 403 SignatureDoesNotMatch
    MNS_DATE=$date MNS_AUTH=$auth mns_request POST /queues/v4q/messages "$body" \
        -H 'x-mns-user-request-id: injected'
    assert_error "an x-mns header added after signing" 403 SignatureDoesNotMatch
    MNS_DATE=$date MNS_AUTH=$auth MNS_CTYPE=text/xml mns_request POST /queues/v4q/messages "$body"
    assert_error "Content-Type changed after signing" 403 SignatureDoesNotMatch
    MNS_SK=wrongSecret mns_request_v4 POST /queues/v4q/messages "$body"
    assert_error "signed with the wrong secret" 403 SignatureDoesNotMatch
    MNS_V4_SCOPE_DATE=$(date -u -d yesterday +%Y%m%d) mns_request_v4 POST /queues/v4q/messages "$body"
    assert_error "Credential day not the Date header's day" 403 SignatureDoesNotMatch
    MNS_AK=noSuchKey mns_request_v4 POST /queues/v4q/messages "$body"
    assert_error "unknown AccessKeyId in the Credential" 403 InvalidAccessKeyId
    MNS_DATE=$(http_date -d '-20 min') mns_request_v4 POST /queues/v4q/messages "$body"
    assert_error "a Date outside the window" 408 TimeExpired
    mns_request_v4 GET '/queues/v4q/messages?peekonly=true'
    assert_error "no refused send reached the queue" 404 MessageNotExist
    mns_request GET /queues/v4q
    assert_xml "not even a delayed one" DelayMessages 0
}

t_tampered_resource_changes_nothing() {
    local auth date handle
    date=$(http_date)
    auth=$(mns_v4_authorization testAccessKeyId testAccessKeySecret cn-hangzhou PUT \
           "$(content_md5_text "$(queue_body)")" \
           'text/xml;charset=UTF-8' "$date" /queues/v4signed 'x-mns-version: 2015-06-06')
    MNS_DATE=$date MNS_AUTH=$auth mns_request PUT /queues/v4other "$(queue_body)"
    assert_error "CreateQueue sent to another queue than signed" 403 SignatureDoesNotMatch
    mns_request GET /queues/v4other
    assert_error "that queue was not created" 404 QueueNotExist
    MNS_DATE=$date MNS_AUTH=$auth mns_request PUT /queues/v4signed "$(queue_body)"
    assert_status "the untampered request verifies (the signature was right)" 201

    mns_request_v4 POST /queues/v4signed/messages "$(message_body keep-me)"
    assert_status "a message to protect" 201
    mns_request_v4 GET '/queues/v4signed/messages?waitseconds=1'
    handle=$(xml_get ReceiptHandle)
    date=$(http_date)
    auth=$(mns_v4_authorization testAccessKeyId testAccessKeySecret cn-hangzhou GET '' '' "$date" \
           "/queues/v4signed/messages?ReceiptHandle=$handle" 'x-mns-version: 2015-06-06')
    MNS_DATE=$date MNS_AUTH=$auth mns_request DELETE "/queues/v4signed/messages?ReceiptHandle=$handle"
    assert_error "a GET's signature used for a DELETE" 403 SignatureDoesNotMatch
    MNS_AUTH="$(mns_v4_authorization testAccessKeyId \
        testAccessKeySecret cn-shanghai DELETE '' '' "$date" \
        "/queues/v4signed/messages?ReceiptHandle=$handle" 'x-mns-version: 2015-06-06' \
        | sed 's#/cn-shanghai/#/cn-hangzhou/#')" MNS_DATE=$date \
        mns_request DELETE "/queues/v4signed/messages?ReceiptHandle=$handle"
    assert_error "signed for one region, claiming another" 403 SignatureDoesNotMatch
    mns_request GET /queues/v4signed
    assert_xml "the message was not deleted" InactiveMessages 1
    MNS_DATE=$date MNS_AUTH=$auth mns_request DELETE /queues/v4signed
    assert_error "DeleteQueue with a GET's signature" 403 SignatureDoesNotMatch
    mns_request GET /queues/v4signed
    assert_status "the queue is still there" 200
}

# The canonical query would sign one value of a repeated name while the router reads another:
# a captured ChangeMessageVisibility replayed with a long timeout in front must be refused.
t_repeated_query_name_refused() {
    local auth date handle signed
    mns_request_v4 POST /queues/v4q/messages "$(message_body replay-me)"
    mns_request_v4 GET '/queues/v4q/messages?waitseconds=1'
    assert_xml "a message to change" MessageBody replay-me
    handle=$(xml_get ReceiptHandle)
    date=$(http_date)
    signed="/queues/v4q/messages?ReceiptHandle=$handle&VisibilityTimeout=5"
    auth=$(mns_v4_authorization testAccessKeyId testAccessKeySecret cn-hangzhou PUT '' '' "$date" \
           "$signed" 'x-mns-version: 2015-06-06')
    MNS_DATE=$date MNS_AUTH=$auth mns_request PUT \
        "/queues/v4q/messages?VisibilityTimeout=43200&ReceiptHandle=$handle&VisibilityTimeout=5"
    assert_error "a repeated parameter in front of the signed one" 400 InvalidQueryString
    MNS_DATE=$date MNS_AUTH=$auth mns_request PUT \
        "/queues/v4q/messages?receipthandle=garbage&ReceiptHandle=$handle&VisibilityTimeout=5"
    assert_error "a repeated name in another case" 400 InvalidQueryString
    MNS_DATE=$date MNS_AUTH=$auth mns_request PUT "$signed"
    assert_status "the signed request itself still works: the handle was not changed" 200
    handle=$(xml_get ReceiptHandle)
    mns_request_v4 DELETE "/queues/v4q/messages?ReceiptHandle=$handle"
    assert_status "and the message is deleted with the new handle" 204
}

t_malformed_headers() {
    local a sig=09d68529a631e73186c334aca82210b5e2831bbfa41a5f2456f2751bbe17e9c5
    local cred="testAccessKeyId/$(date -u +%Y%m%d)"
    for a in "MNS4-HMAC-SHA256" \
             "MNS4-HMAC-SHA256 Credential=$cred/cn-hangzhou/mns,Signature=$sig" \
             "MNS4-HMAC-SHA256 Credential=$cred/cn-hangzhou/mns/aliyun_v4_request/x,Signature=$sig" \
             "MNS4-HMAC-SHA256 Credential=$cred//mns/aliyun_v4_request,Signature=$sig" \
             "MNS4-HMAC-SHA256 Credential=$cred/cn-hangzhou/oss/aliyun_v4_request,Signature=$sig" \
             "MNS4-HMAC-SHA256 Credential=$cred/cn-hangzhou/mns/aws4_request,Signature=$sig" \
             "MNS4-HMAC-SHA256 Credential=$cred/cn-hangzhou/mns/aliyun_v4_request" \
             "MNS4-HMAC-SHA256 Credential=$cred/$(printf 'r%.0s' {1..65})/mns/aliyun_v4_request,Signature=$sig"; do
        MNS_AUTH=$a mns_request GET /queues/v4q
        assert_error "refused: ${a:0:90}" 400 InvalidAuthorizationHeader
    done
    for a in "${sig:0:63}" "${sig}0" "$(printf '%s' "$sig" | tr a-f A-F)" "zz${sig:2}" \
             "$(printf 'f%.0s' {1..4000})"; do
        MNS_AUTH="MNS4-HMAC-SHA256 Credential=$cred/cn-hangzhou/mns/aliyun_v4_request,Signature=$a" \
            mns_request GET /queues/v4q
        assert_error "bad signature hex: ${a:0:20}…" 403 SignatureDoesNotMatch
    done
    kill -0 "$SMQD_PID" 2>/dev/null && ok "the server is still up" || not_ok "the server died"
}

if smqd_start; then
    run_test t_signer_matches_doc_vectors
    run_test t_message_lifecycle
    run_test t_any_region
    run_test t_tampered_send_changes_nothing
    run_test t_tampered_resource_changes_nothing
    run_test t_repeated_query_name_refused
    run_test t_malformed_headers
    smqd_stop
fi
finish
