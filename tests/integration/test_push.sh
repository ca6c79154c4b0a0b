#!/usr/bin/env bash
# test_push.sh — HTTP subscriptions' pushes (docs/protocol.md §13.10, §13.12) from the real
# smqd binary to a loopback endpoint (push_endpoint.py, python3's http.server): the push of
# each format with §13.10's headers and body, a 500 answered on purpose retried on
# EXPONENTIAL_DECAY_RETRY's schedule (first retry after 1 s), and pushes pending at a kill -9
# made after the restart. No signer is configured yet, so there is no authorization header.
#
# Run: SMQD_BIN=build/smqd bash tests/integration/test_push.sh (or ctest -L integration).

set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"

require_tools curl openssl xmllint md5sum base64 awk sed python3
require_bin

NS='http://mns.aliyuncs.com/doc/v1/'
CERT_URL='http://127.0.0.1:1/smqd/signing-cert.pem'
EP_PIDS=()

# Every endpoint this suite started, stopped by PID on exit (lib.sh's trap does the servers).
stop_endpoints() {
    local p
    for p in "${EP_PIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
    EP_PIDS=()
}
trap 'stop_endpoints; cleanup_all' EXIT

# start_endpoint LOG [PORT] — an endpoint recording into LOG; sets EP_PORT and EP_PID.
start_endpoint() {
    local portfile="$SUITE_TMP/port.$RANDOM" deadline=$(( $(now_ms) + 5000 ))
    python3 "$HERE/push_endpoint.py" "$1" "$portfile" "${2:-0}" </dev/null >/dev/null 2>&1 &
    EP_PID=$!
    EP_PIDS+=("$EP_PID")
    while [ ! -s "$portfile" ]; do
        [ "$(now_ms)" -ge "$deadline" ] && { not_ok "the endpoint did not start"; return 1; }
        sleep 0.02
    done
    EP_PORT=$(cat "$portfile")
}

sub_body() {     # sub_body [NAME VALUE]...
    local out="<?xml version=\"1.0\" encoding=\"UTF-8\"?><Subscription xmlns=\"$NS\">"
    while [ $# -ge 2 ]; do out+="<$1>$2</$1>"; shift 2; done
    printf '%s</Subscription>' "$out"
}

publish_body() {   # publish_body BODY [TAG]
    local out="<?xml version=\"1.0\" encoding=\"UTF-8\"?><Message xmlns=\"$NS\"><MessageBody>$(xml_escape "$1")</MessageBody>"
    [ $# -ge 2 ] && out+="<MessageTag>$2</MessageTag>"
    printf '%s</Message>' "$out"
}

# req LOG PATH N WHAT — of the N-th request (from 0) on PATH: a header (lower case), or
# "body", "t_ms", or "count" (how many were made on PATH).
req() {
    python3 - "$@" <<'PY'
import base64, json, sys
log, path, n, what = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
try:
    reqs = [r for r in map(json.loads, open(log)) if r["path"] == path]
except FileNotFoundError:
    reqs = []
if what == "count":
    print(len(reqs))
elif n < len(reqs):
    r = reqs[n]
    if what == "body":
        sys.stdout.write(base64.b64decode(r["body_b64"]).decode())
    elif what == "t_ms":
        print(r["t_ms"])
    else:
        print(r["headers"].get(what, "<none>"))
PY
}

at_least() {   # at_least LOG PATH N — N requests or more were made on PATH
    [ "$(req "$1" "$2" 0 count)" -ge "$3" ]
}

t_formats() {
    local log="$SUITE_TMP/formats.log" body='hello <push> & "all"' id path
    start_endpoint "$log" || return
    mns_request PUT /topics/pt
    mns_request PUT /topics/pt/subscriptions/x "$(sub_body Endpoint "http://127.0.0.1:$EP_PORT/x?a=1")"
    mns_request PUT /topics/pt/subscriptions/j "$(sub_body Endpoint "http://127.0.0.1:$EP_PORT/j" NotifyContentFormat JSON)"
    mns_request PUT /topics/pt/subscriptions/s "$(sub_body Endpoint "http://127.0.0.1:$EP_PORT/s" NotifyContentFormat SIMPLIFIED)"
    assert_status "three HTTP subscriptions" 201
    mns_request POST /topics/pt/messages "$(publish_body "$body" red)"
    assert_status "PublishMessage" 201
    id=$(xml_get MessageId)
    for path in '/x?a=1' /j /s; do
        wait_for "a push on $path" 10000 at_least "$log" "$path" 1
    done
    for path in '/x?a=1' /j /s; do
        assert_eq "$path: x-mns-version" 2015-06-06 "$(req "$log" "$path" 0 x-mns-version)"
        assert_eq "$path: x-mns-topic-name" pt "$(req "$log" "$path" 0 x-mns-topic-name)"
        assert_eq "$path: x-mns-topic-owner" 1000000000000000 "$(req "$log" "$path" 0 x-mns-topic-owner)"
        assert_eq "$path: x-mns-subscriber" 1000000000000000 "$(req "$log" "$path" 0 x-mns-subscriber)"
        assert_eq "$path: x-mns-signing-cert-url" "$(printf '%s' "$CERT_URL" | base64 -w0)" \
            "$(req "$log" "$path" 0 x-mns-signing-cert-url)"
        assert_match "$path: x-mns-publish-time in epoch ms" '^1[0-9]{12}$' "$(req "$log" "$path" 0 x-mns-publish-time)"
        assert_match "$path: x-mns-request-id" '^[0-9A-F]{24}$' "$(req "$log" "$path" 0 x-mns-request-id)"
        assert_match "$path: date" '^[A-Z][a-z]{2}, [0-9]{2} [A-Z][a-z]{2} [0-9]{4} [0-9:]{8} GMT$' "$(req "$log" "$path" 0 date)"
        assert_match "$path: User-Agent" '^smqd/' "$(req "$log" "$path" 0 user-agent)"
        assert_eq "$path: content-md5 of the body" \
            "$(req "$log" "$path" 0 body | md5sum | awk '{printf "%s", $1}' | base64 -w0)" \
            "$(req "$log" "$path" 0 content-md5)"
        assert_eq "$path: no authorization without a signer (yet)" '<none>' "$(req "$log" "$path" 0 authorization)"
    done
    assert_eq "x: subscription name" x "$(req "$log" '/x?a=1' 0 x-mns-subscription-name)"
    assert_eq "XML content type" 'text/xml;charset=utf-8' "$(req "$log" '/x?a=1' 0 content-type)"
    assert_eq "XML: the Message" "$body" "$(xml_get Message 1 "$(req "$log" '/x?a=1' 0 body)")"
    assert_eq "XML: the MessageId" "$id" "$(xml_get MessageId 1 "$(req "$log" '/x?a=1' 0 body)")"
    assert_eq "XML: the MessageTag" red "$(xml_get MessageTag 1 "$(req "$log" '/x?a=1' 0 body)")"
    assert_eq "JSON content type" 'application/json;charset=utf-8' "$(req "$log" /j 0 content-type)"
    assert_eq "JSON: Message, MessageId, SubscriptionName" "$body|$id|j" \
        "$(req "$log" /j 0 body | python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["Message"]+"|"+j["MessageId"]+"|"+j["SubscriptionName"])')"
    assert_eq "SIMPLIFIED content type" 'text/plain;charset=utf-8' "$(req "$log" /s 0 content-type)"
    assert_eq "SIMPLIFIED: the published body itself" "$body" "$(req "$log" /s 0 body)"
    assert_eq "SIMPLIFIED: x-mns-message-id" "$id" "$(req "$log" /s 0 x-mns-message-id)"
    assert_eq "SIMPLIFIED: x-mns-message-tag" red "$(req "$log" /s 0 x-mns-message-tag)"
    assert_eq "XML: no x-mns-message-id" '<none>' "$(req "$log" '/x?a=1' 0 x-mns-message-id)"
    mns_request GET /topics/pt/subscriptions/s
    assert_status "GetSubscriptionAttributes" 200
    assert_eq "each push made once" "1 1 1" \
        "$(req "$log" '/x?a=1' 0 count) $(req "$log" /j 0 count) $(req "$log" /s 0 count)"
}

t_retry_after_500() {
    local log="$SUITE_TMP/retry.log" gap
    start_endpoint "$log" || return
    mns_request PUT /topics/rt
    mns_request PUT /topics/rt/subscriptions/f \
        "$(sub_body Endpoint "http://127.0.0.1:$EP_PORT/fail-once" NotifyStrategy EXPONENTIAL_DECAY_RETRY NotifyContentFormat SIMPLIFIED)"
    assert_status "an EXPONENTIAL_DECAY_RETRY subscription" 201
    mns_request POST /topics/rt/messages "$(publish_body again)"
    assert_status "PublishMessage" 201
    wait_for "the retry after the 500 arrives" 10000 at_least "$log" /fail-once 2
    gap=$(( $(req "$log" /fail-once 1 t_ms) - $(req "$log" /fail-once 0 t_ms) ))
    assert_range "the first retry 1 s after the failure" 950 3000 "$gap"
    assert_eq "the retry carries the same body" again "$(req "$log" /fail-once 1 body)"
    assert_ne "a new request id per attempt" "$(req "$log" /fail-once 0 x-mns-request-id)" \
        "$(req "$log" /fail-once 1 x-mns-request-id)"
}

t_pending_across_kill9() {
    local log="$SUITE_TMP/kill9.log" port
    # An endpoint's port, free again: the push fails to connect and stays pending.
    start_endpoint "$log" || return
    port=$EP_PORT
    kill "$EP_PID"; wait "$EP_PID" 2>/dev/null
    mns_request PUT /topics/kt
    mns_request PUT /topics/kt/subscriptions/k \
        "$(sub_body Endpoint "http://127.0.0.1:$port/k" NotifyStrategy EXPONENTIAL_DECAY_RETRY NotifyContentFormat SIMPLIFIED)"
    mns_request POST /topics/kt/messages "$(publish_body survivor)"
    assert_status "PublishMessage while the endpoint is down" 201
    smqd_kill9
    start_endpoint "$log" "$port" || return
    smqd_start "$SMQD_DIR" || return
    wait_for "the pending push arrives after the restart" 15000 at_least "$log" /k 1
    assert_eq "with its body" survivor "$(req "$log" /k 0 body)"
}

new_server_dir
printf '[topics]\ncertificate_url = %s\n' "$CERT_URL" >>"$NEW_DIR/smqd.conf"
if smqd_start "$NEW_DIR"; then
    run_test t_formats
    run_test t_retry_after_500
    run_test t_pending_across_kill9
    smqd_stop
fi
finish
