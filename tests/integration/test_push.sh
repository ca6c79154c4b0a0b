#!/usr/bin/env bash
# test_push.sh — HTTP subscriptions' pushes (docs/protocol.md §13.10, §13.12) from the real
# smqd binary to a loopback endpoint (push_endpoint.py, python3's http.server): the push of
# each format with §13.10's headers and body, a 500 answered on purpose retried on
# EXPONENTIAL_DECAY_RETRY's schedule (first retry after 1 s), and pushes pending at a kill -9
# made after the restart; every push signed (§13.11) and verified here with the certificate smqd
# serves at its default certificate URL; and the verifier of docs/examples/push-verifier.js as
# the endpoint: every push verifies, failures answered on purpose are retried, none doubled.
#
# Run: SMQD_BIN=build/smqd bash tests/integration/test_push.sh (or ctest -L integration).

set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"

require_tools curl openssl xmllint md5sum base64 awk sed python3 node
require_bin

NS='http://mns.aliyuncs.com/doc/v1/'
VERIFIER="$HERE/../../docs/examples/push-verifier.js"
EP_PIDS=()

# Every endpoint this suite started, stopped by PID on exit (lib.sh's trap does the servers).
stop_endpoints() {
    local p
    for p in "${EP_PIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
    EP_PIDS=()
}
trap 'stop_endpoints; cleanup_all' EXIT

# start_endpoint LOG [PORT [CERT KEY]] — an endpoint recording into LOG (HTTPS with CERT and
# KEY); sets EP_PORT and EP_PID.
start_endpoint() {
    local portfile="$SUITE_TMP/port.$RANDOM" deadline=$(( $(now_ms) + 5000 ))
    python3 "$HERE/push_endpoint.py" "$1" "$portfile" "${2:-0}" "${@:3}" </dev/null >/dev/null 2>&1 &
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

# signed LOG PATH N — the N-th push on PATH carries an authorization that verifies (§13.11)
# with the public key of the certificate at its x-mns-signing-cert-url, over the string to
# sign rebuilt from the request as received.
signed() {
    local dir="$SUITE_TMP/verify.$RANDOM" url
    mkdir -p "$dir"
    url=$(req "$1" "$2" "$3" x-mns-signing-cert-url | base64 -d) || return 1
    curl -sf -o "$dir/cert.pem" "$url" || return 1
    openssl x509 -in "$dir/cert.pem" -noout -pubkey >"$dir/pub.pem" || return 1
    req "$1" "$2" "$3" authorization | base64 -d >"$dir/sig" || return 1
    python3 - "$1" "$2" "$3" >"$dir/data" <<'PY' || return 1
import json, sys
log, path, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
r = [r for r in map(json.loads, open(log)) if r["path"] == path][n]
h = r["headers"]
mns = "".join("%s:%s\n" % (k, v) for k, v in sorted(h.items()) if k.startswith("x-mns-"))
sys.stdout.write("POST\n%s\n%s\n%s\n%s%s" % (h.get("content-md5", ""), h.get("content-type", ""),
                                          h.get("date", ""), mns, path))
PY
    openssl dgst -sha1 -verify "$dir/pub.pem" -signature "$dir/sig" "$dir/data" >/dev/null
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
        assert_eq "$path: x-mns-signing-cert-url, the listener's own" \
            "$(printf 'http://%s/smqd/signing-cert.pem' "$SMQD_ADDR" | base64 -w0)" \
            "$(req "$log" "$path" 0 x-mns-signing-cert-url)"
        assert_match "$path: x-mns-publish-time in epoch ms" '^1[0-9]{12}$' "$(req "$log" "$path" 0 x-mns-publish-time)"
        assert_match "$path: x-mns-request-id" '^[0-9A-F]{24}$' "$(req "$log" "$path" 0 x-mns-request-id)"
        assert_match "$path: date" '^[A-Z][a-z]{2}, [0-9]{2} [A-Z][a-z]{2} [0-9]{4} [0-9:]{8} GMT$' "$(req "$log" "$path" 0 date)"
        assert_match "$path: User-Agent" '^smqd/' "$(req "$log" "$path" 0 user-agent)"
        assert_eq "$path: content-md5 of the body" \
            "$(req "$log" "$path" 0 body | md5sum | awk '{printf "%s", $1}' | base64 -w0)" \
            "$(req "$log" "$path" 0 content-md5)"
        assert_match "$path: authorization, base64 of a 2048-bit signature" '^[A-Za-z0-9+/]{342}==$' \
            "$(req "$log" "$path" 0 authorization)"
        if signed "$log" "$path" 0; then
            ok "$path: the signature verifies with the served certificate"
        else
            not_ok "$path: the signature verifies with the served certificate"
        fi
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

# The verifier example as the endpoint: it trusts smqd's certificate URL, answers 500 to the
# first verified push of each message, then 204; its log shows every attempt.
t_verifier_example() {
    local log="$SUITE_TMP/verifier.log" out="$SUITE_TMP/verifier.out" pid port i deadline
    node "$VERIFIER" --allow-cert-url "http://$SMQD_ADDR/smqd/signing-cert.pem" --port 0 \
        --log "$log" --fail-first 1 </dev/null >"$out" 2>"$SUITE_TMP/verifier.err" &
    pid=$!
    EP_PIDS+=("$pid")
    deadline=$(( $(now_ms) + 10000 ))
    until grep -q '"port"' "$out" 2>/dev/null; do
        [ "$(now_ms)" -ge "$deadline" ] && { not_ok "the verifier did not start"; return 1; }
        sleep 0.05
    done
    port=$(sed -n 's/.*"port":\([0-9]*\).*/\1/p' "$out")
    mns_request PUT /topics/vt
    mns_request PUT /topics/vt/subscriptions/vx \
        "$(sub_body Endpoint "http://127.0.0.1:$port/hook" NotifyStrategy EXPONENTIAL_DECAY_RETRY)"
    mns_request PUT /topics/vt/subscriptions/vs \
        "$(sub_body Endpoint "http://127.0.0.1:$port/hook?f=s" NotifyStrategy EXPONENTIAL_DECAY_RETRY NotifyContentFormat SIMPLIFIED)"
    assert_status "two subscriptions to the verifier" 201
    for i in 1 2 3 4 5; do
        mns_request POST /topics/vt/messages "$(publish_body "verify me $i" "t$i")"
        assert_status "PublishMessage $i" 201
    done
    wait_for "10 verified pushes answered 204" 20000 verifier_has "$log" 204 10
    sleep 0.5          # a doubled push would land now
    assert_eq "no push failed verification" 0 "$(verifier_count "$log" verified false)"
    assert_eq "one 500 per message (the first attempt of each), then retried" 5 \
        "$(verifier_count "$log" status 500)"
    assert_eq "each subscription got each message once (no duplicates)" 10 \
        "$(python3 -c 'import json,sys; print(len({(r["subscription"], r["messageId"]) for r in map(json.loads, open(sys.argv[1])) if r["status"] == 204}))' "$log")"
    assert_eq "and 10 successes in all" 10 "$(verifier_count "$log" status 204)"
}

verifier_count() {   # verifier_count LOG FIELD VALUE — lines whose FIELD is VALUE (JSON)
    python3 -c 'import json,sys; print(sum(1 for r in map(json.loads, open(sys.argv[1])) if json.dumps(r[sys.argv[2]]) == sys.argv[3]))' "$@" 2>/dev/null || echo 0
}

verifier_has() {     # verifier_has LOG STATUS N
    [ "$(verifier_count "$1" status "$2")" -ge "$3" ]
}

topic_metric() {   # topic_metric FAMILY TOPIC — its value on /metrics (0 when absent)
    curl -s "http://$SMQD_ADMIN/metrics" |
        awk -v m="$1{topic=\"$2\"}" '$1 == m { v = $2 } END { print v + 0 }'
}

failed_attempts() {   # failed_attempts TOPIC N — N failed push attempts or more
    [ "$(topic_metric smqd_topic_notification_failures_total "$1")" -ge "$2" ]
}

# An https:// endpoint whose certificate only [topics] push_ca_file vouches for: refused (a
# failed attempt, retried) until smqd trusts that CA; then the pending push arrives, signed.
t_https_ca_file() {
    local log="$SUITE_TMP/https.log" dir="$SUITE_TMP/tlsep"
    mkdir -p "$dir"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
        -subj "/CN=smqd push endpoint" -addext "subjectAltName=IP:127.0.0.1" \
        -keyout "$dir/ep.key" -out "$dir/ep.pem" 2>"$dir/err" || { not_ok "a certificate"; return 1; }
    start_endpoint "$log" 0 "$dir/ep.pem" "$dir/ep.key" || return
    mns_request PUT /topics/ht
    mns_request PUT /topics/ht/subscriptions/h \
        "$(sub_body Endpoint "https://127.0.0.1:$EP_PORT/tls" NotifyStrategy EXPONENTIAL_DECAY_RETRY NotifyContentFormat SIMPLIFIED)"
    assert_status "an https:// subscription" 201
    mns_request POST /topics/ht/messages "$(publish_body "over tls")"
    assert_status "PublishMessage" 201
    wait_for "an attempt failed on the unknown CA" 10000 failed_attempts ht 1
    assert_eq "nothing reached the endpoint" 0 "$(req "$log" /tls 0 count)"
    smqd_stop
    printf '[topics]\npush_ca_file = %s\n' "$dir/ep.pem" >>"$SMQD_DIR/smqd.conf"
    smqd_start "$SMQD_DIR" || return
    wait_for "the push arrives once the CA is trusted" 15000 at_least "$log" /tls 1
    assert_eq "with its body" "over tls" "$(req "$log" /tls 0 body)"
    if signed "$log" /tls 0; then ok "signed"; else not_ok "signed"; fi
}

new_server_dir
if smqd_start "$NEW_DIR"; then
    run_test t_formats
    run_test t_retry_after_500
    run_test t_verifier_example
    run_test t_pending_across_kill9
    run_test t_https_ca_file
    smqd_stop
fi
finish
