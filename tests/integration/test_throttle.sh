#!/usr/bin/env bash
# test_throttle.sh — the [limits] request-rate limits against the real smqd binary:
# queue_qps and access_key_qps (token buckets, rate 5 and burst 5 here) refuse a burst's
# excess with 429 QpsLimitExceeded in the exact MNS <Error> document (plus Retry-After),
# a refused send stores nothing, another queue / another key is unaffected, ListQueue
# counts only against the key, and after a second of quiet requests pass again.
#
# Decisions under test: docs/protocol-decisions.md (QpsLimitExceeded rows).
# Run: SMQD_BIN=build/smqd bash tests/integration/test_throttle.sh
#
# The limits run on the real clock, so this suite does wait: ~1.1 s for a bucket to refill
# (5 tokens at 5/s), a few times.  Bursts are fired as parallel curls of one request signed
# once (the same Date second signs them all alike), so they reach the server within a few
# milliseconds; how many pass is then the burst (5) plus what refilled while they arrived,
# which the assertions bound from the measured duration instead of assuming.

set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"

require_tools curl openssl xmllint md5sum base64 awk sed
require_bin

RATE=5
SECOND_AK=secondKey
SECOND_SK=secondSecret

# start_limited 'key = value'... — a server with these extra [limits] lines.
start_limited() {
    local dir line
    new_server_dir
    dir=$NEW_DIR
    echo '[limits]' >>"$dir/smqd.conf"
    for line in "$@"; do echo "$line" >>"$dir/smqd.conf"; done
    smqd_start "$dir"
}

# refill — lets every bucket fill up again (RATE tokens at RATE/s, plus slack).
refill() { sleep 1.1; }

# burst N METHOD RESOURCE [BODY] — N identical signed requests at once (MNS_AK/MNS_SK pick
# the key).  Sets BURST_OK (2xx), BURST_LIMITED (429), BURST_OTHER, BURST_MS, and
# BURST_LIMITED_AT (index of one 429 response, -1 if none); response I is in
# $SUITE_TMP/burst.I.{status,body,hdrs}.
burst() {
    local n=$1 method=$2 resource=$3 body=${4:-} i t0 t1 status
    local ak=${MNS_AK:-$MNS_AK_DEFAULT} sk=${MNS_SK:-$MNS_SK_DEFAULT}
    local date md5="" ctype="" auth pids=()
    local -a args=(-s -S --globoff --noproxy '*' --max-time 20 -X "$method"
                   -H 'x-mns-version: 2015-06-06')
    date=$(http_date)
    if [ -n "$body" ]; then
        printf '%s' "$body" >"$SUITE_TMP/burst.req"
        ctype='text/xml;charset=UTF-8'
        md5=$(content_md5_of "$SUITE_TMP/burst.req")
        args+=(--data-binary "@$SUITE_TMP/burst.req" -H "Content-Type: $ctype" -H "Content-MD5: $md5")
    fi
    auth=$(mns_authorization "$ak" "$sk" "$method" "$md5" "$ctype" "$date" "$resource" \
                             'x-mns-version: 2015-06-06')
    args+=(-H "Date: $date" -H "Authorization: $auth")
    rm -f "$SUITE_TMP"/burst.*.status
    t0=$(now_ms)
    for ((i = 0; i < n; i++)); do
        curl "${args[@]}" -o "$SUITE_TMP/burst.$i.body" -D "$SUITE_TMP/burst.$i.hdrs" \
             -w '%{http_code}' "http://$SMQD_ADDR$resource" >"$SUITE_TMP/burst.$i.status" 2>/dev/null &
        pids+=($!)
    done
    wait "${pids[@]}"
    t1=$(now_ms)
    BURST_MS=$((t1 - t0)) BURST_OK=0 BURST_LIMITED=0 BURST_OTHER=0 BURST_LIMITED_AT=-1
    for ((i = 0; i < n; i++)); do
        status=$(cat "$SUITE_TMP/burst.$i.status" 2>/dev/null)
        case $status in
            2??) BURST_OK=$((BURST_OK + 1)) ;;
            429) BURST_LIMITED=$((BURST_LIMITED + 1)); BURST_LIMITED_AT=$i ;;
            *) BURST_OTHER=$((BURST_OTHER + 1)) ;;
        esac
    done
}

# use_burst_response I — makes response I of the last burst the current RESP_* for the
# lib.sh assertions.
use_burst_response() {
    RESP_STATUS=$(cat "$SUITE_TMP/burst.$1.status")
    RESP_BODY=$(cat "$SUITE_TMP/burst.$1.body")
    RESP_HDRS="$SUITE_TMP/burst.$1.hdrs"
    RESP_ID=$(header_value x-mns-request-id)
}

# check_burst DESC N — the burst split into passes and QpsLimitExceeded refusals only, and
# the passes are the bucket (RATE) plus at most what refilled while it lasted.
check_burst() {
    local desc=$1 n=$2 max_ok
    max_ok=$((RATE + BURST_MS * RATE / 1000 + 1))
    assert_eq "$desc: every answer is a pass or a 429" 0 "$BURST_OTHER"
    assert_eq "$desc: passes + refusals = $n" "$n" "$((BURST_OK + BURST_LIMITED))"
    assert_range "$desc: the full bucket passes (burst in ${BURST_MS} ms)" "$RATE" "$max_ok" "$BURST_OK"
    assert_range "$desc: the excess is refused" 1 "$n" "$BURST_LIMITED"
    if [ "$BURST_LIMITED_AT" -ge 0 ]; then
        use_burst_response "$BURST_LIMITED_AT"
        assert_error "$desc: exact MNS error document" 429 QpsLimitExceeded
        assert_header "$desc: Retry-After" Retry-After 1
    fi
}

# active_messages QUEUE — sets ACTIVE (a variable: assertions must not run in a subshell).
active_messages() {
    MNS_AK=$SECOND_AK MNS_SK=$SECOND_SK mns_request GET "/queues/$1"
    assert_status "GetQueueAttributes $1" 200
    ACTIVE=$(xml_get ActiveMessages)
}

# ---------------------------------------------------------------------------------------
# queue_qps
# ---------------------------------------------------------------------------------------

t_queue_limit() {
    local i n_ok
    create_queue hot
    create_queue calm
    refill                                   # CreateQueue took a token from each
    burst 20 POST /queues/hot/messages "$(message_body burst)"
    check_burst "20 sends to one queue" 20
    n_ok=$BURST_OK

    # Right after: another queue still has its whole bucket (a global limit would have
    # refilled at most one token by now).
    for i in 1 2 3; do send_msg calm "calm $i"; done

    refill
    active_messages hot
    assert_eq "the queue holds exactly the accepted sends" "$n_ok" "$ACTIVE"
    send_msg hot "after a second of quiet"
    active_messages hot
    assert_eq "and the one sent after the wait" "$((n_ok + 1))" "$ACTIVE"
    active_messages calm
    assert_eq "the other queue holds its three" 3 "$ACTIVE"
}

# ListQueue names no queue: only the access-key limit (off here) applies.
t_list_not_queue_limited() {
    burst 20 GET /queues
    assert_eq "20 ListQueue at once all pass" 20 "$BURST_OK"
}

# ---------------------------------------------------------------------------------------
# access_key_qps
# ---------------------------------------------------------------------------------------

t_access_key_limit() {
    local i n_ok
    MNS_AK=$SECOND_AK MNS_SK=$SECOND_SK mns_request PUT /queues/shared "$(queue_body)"
    assert_status "the second key creates a queue" 201

    burst 20 GET /queues
    check_burst "20 ListQueue with one key" 20
    for i in 1 2 3; do
        MNS_AK=$SECOND_AK MNS_SK=$SECOND_SK mns_request GET /queues
        assert_status "the other key is unaffected ($i)" 200
    done

    refill
    burst 20 POST /queues/shared/messages "$(message_body by-first-key)"
    check_burst "20 sends with one key" 20
    n_ok=$BURST_OK
    for i in 1 2 3; do
        MNS_AK=$SECOND_AK MNS_SK=$SECOND_SK mns_request POST /queues/shared/messages \
            "$(message_body "second key $i")"
        assert_status "the other key sends to the same queue ($i)" 201
    done

    refill
    active_messages shared
    assert_eq "the queue holds the accepted sends of both keys" "$((n_ok + 3))" "$ACTIVE"
    send_msg shared "first key after a second of quiet"
}

# One address opens 1,100 silent sockets (more than max_connections): past
# max_connections_per_ip its connections are closed at once, so a client from another address
# is served at once instead of waiting in the accept queue for request_timeout_s (30 s).
t_one_address_cannot_take_every_connection() {
    local line
    require_hostile_client
    coproc HOLD { ulimit -n 4096; exec timeout 60 "$HOSTILE_CLIENT" hold "$SMQD_ADDR" -n 1100 -w 1500; }
    read -r -t 30 -u "${HOLD[0]}" line
    assert_match "the hog opened its sockets" '^connected=[0-9]+ refused=[0-9]+ open=[0-9]+' "$line"
    assert_match "at most 50 of them stay open" '^connected=[0-9]+ refused=[0-9]+ open=([0-9]|[1-4][0-9]|50) ' "$line"
    MNS_INTERFACE=127.0.0.2 MNS_MAX_TIME=5 mns_request GET /queues
    assert_status "a client from another address is served" 200
    assert_range "at once, not after request_timeout_s = 30 s (ms)" 0 5000 "$RESP_MS"
    printf 'quit\n' >&"${HOLD[1]}"
    wait "$HOLD_PID" 2>/dev/null
}

# ---------------------------------------------------------------------------------------

if start_limited "max_connections = 300" "max_connections_per_ip = 50"; then
    run_test t_one_address_cannot_take_every_connection
    smqd_stop
fi
if start_limited "queue_qps = $RATE" "queue_burst = $RATE"; then
    run_test t_queue_limit
    run_test t_list_not_queue_limited
    smqd_stop
fi
if start_limited "access_key_qps = $RATE" "access_key_burst = $RATE"; then
    run_test t_access_key_limit
    smqd_stop
fi
finish
