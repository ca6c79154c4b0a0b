#!/usr/bin/env bash
# test_admin.sh — the admin listener (docs/admin-api.md) of the real smqd binary: probes during
# start-up, service and drain, the Bearer tokens (full and read-only), /metrics parsed line by
# line and checked against traffic sent through the MNS API, the /v1 JSON API, hostile input,
# and the systemd notifications (READY=1 only once the MNS port answers, STOPPING=1,
# RELOADING=1).
#
# Run: SMQD_BIN=build/smqd NOTIFY_LISTEN=build/tests/integration/notify_listen \
#      bash tests/integration/test_admin.sh

set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"

require_tools curl openssl xmllint md5sum node sqlite3
require_bin
require_hostile_client

# admin METHOD PATH [curl args...] — unsigned request to the admin listener; sets RESP_*.
admin() {
    local method=$1 path=$2
    shift 2
    raw_curl -X "$method" "$@" "http://$SMQD_ADMIN$path"
}

# json EXPR [JSON] — evaluates a JavaScript expression over the parsed document `d`
# (default RESP_BODY); prints "INVALID" when the text is not JSON.
json() {
    printf '%s' "${2-$RESP_BODY}" | node -e '
        let d; try { d = JSON.parse(require("fs").readFileSync(0, "utf8")); }
        catch (e) { console.log("INVALID"); process.exit(0); }
        const v = eval(process.argv[1]);
        console.log(typeof v === "object" ? JSON.stringify(v) : String(v));' "$1"
}

# assert_admin_error DESC STATUS CODE — a JSON error document with this status and code.
assert_admin_error() {
    local got
    got=$(json 'd.error + " " + (typeof d.message === "string" && d.message.length > 0)')
    if [ "$RESP_STATUS" = "$2" ] && [ "$got" = "$3 true" ]; then
        ok "$1"
    else
        not_ok "$1" "expected $2 $3, got status $RESP_STATUS: $(printf '%s' "$RESP_BODY" | head -c 300)"
    fi
}

# metric NAME_AND_LABELS — the value of one sample in METRICS ("" if absent).
metric() {
    printf '%s\n' "$METRICS" | awk -v k="$1" 'index($0, k " ") == 1 { print substr($0, length(k) + 2) }'
}

scrape() {
    admin GET /metrics
    METRICS=$RESP_BODY
}

# scrape_with HEADER — scrape with this Authorization header.
scrape_with() {
    admin GET /metrics -H "$1"
    METRICS=$RESP_BODY
}

# metric_is NAME_AND_LABELS VALUE — for wait_for: a fresh scrape has this value.
metric_is() {
    scrape
    [ "$(metric "$1")" = "$2" ]
}

# Start without waiting for the MNS listener (it may be held back on purpose); waits for the
# admin line only.  Sets SMQD_PID, SMQD_LOG, SMQD_ADMIN like smqd_start.
start_until_admin() {
    local dir=$1 deadline line
    SMQD_DIR=$dir
    SMQD_LOG="$dir/smqd.$(date +%s%N).log"
    NOTIFY_SOCKET=${2:-} "$SMQD_BIN" -c "$dir/smqd.conf" </dev/null >>"$SMQD_LOG" 2>&1 &
    SMQD_PID=$!
    SERVER_PIDS+=("$SMQD_PID")
    start_watchdog "$SMQD_PID"
    deadline=$(( $(now_ms) + 10000 ))
    while [ "$(now_ms)" -lt "$deadline" ]; do
        line=$(grep -o 'admin listener bound to http://[^ ]*' "$SMQD_LOG" 2>/dev/null | tail -n 1)
        if [ -n "$line" ]; then
            SMQD_ADMIN=${line#admin listener bound to http://}
            return 0
        fi
        sleep 0.02
    done
    not_ok "no 'admin listener bound' line within 10 s" "$(tail -n 20 "$SMQD_LOG")"
    return 1
}

# hold_db_lock DB — a sqlite3 shell takes the write lock and keeps it until release_db_lock.
# smqd's start-up (a BEGIN IMMEDIATE, 5 s busy timeout) then waits: a deterministic slow start.
hold_db_lock() {
    LOCK_HELD="$SUITE_TMP/lock.held.$RANDOM" LOCK_RELEASE="$SUITE_TMP/lock.release.$RANDOM"
    printf 'BEGIN IMMEDIATE;\nCREATE TABLE IF NOT EXISTS hold(x);\n.shell touch %s\n.shell while [ ! -f %s ]; do sleep 0.02; done\nROLLBACK;\n' \
        "$LOCK_HELD" "$LOCK_RELEASE" | sqlite3 "$1" >/dev/null 2>&1 &
    LOCK_PID=$!
    wait_for "the test holds the database's write lock" 5000 test -f "$LOCK_HELD"
}

release_db_lock() {
    touch "$LOCK_RELEASE"
    wait "$LOCK_PID" 2>/dev/null
}

# A data dir whose database exists (smqd started and stopped once on it).
prepared_dir() {
    local dir
    new_server_dir
    dir=$NEW_DIR
    smqd_start "$dir" || return 1
    smqd_stop
    PREPARED=$dir
}

# count_at_least N PATTERN FILE — for wait_for: FILE has at least N lines matching PATTERN.
count_at_least() {
    [ "$(grep -c -- "$2" "$3")" -ge "$1" ]
}

# ---------------------------------------------------------------------------------------

# While recovery is held up: /health 200, /ready 503 starting, API 503, metrics without the
# engine; then ready once it is through.
t_startup() {
    local mns_line
    prepared_dir || return
    hold_db_lock "$PREPARED/smqd.db"
    start_until_admin "$PREPARED" || { release_db_lock; return; }
    admin GET /health
    assert_eq "/health is 200 during start-up" "200 ok" "$RESP_STATUS $RESP_BODY"
    admin GET /ready
    assert_eq "/ready is 503 starting during start-up" "503 starting" "$RESP_STATUS $RESP_BODY"
    admin GET /v1/queues
    assert_admin_error "the JSON API answers 503 during start-up" 503 ServiceUnavailable
    scrape
    assert_eq "metrics during start-up: 200" 200 "$RESP_STATUS"
    assert_eq "metrics during start-up: smqd_ready 0" 0 "$(metric smqd_ready)"
    assert_eq "metrics during start-up: smqd_engine_up 0" 0 "$(metric smqd_engine_up)"
    mns_line=$(grep -c 'listening on http://' "$SMQD_LOG")
    assert_eq "the MNS listener is not up yet" 0 "$mns_line"
    release_db_lock
    wait_for "the MNS listener comes up once the lock is released" 8000 \
        grep -q 'listening on http://' "$SMQD_LOG"
    admin GET /ready
    assert_eq "/ready is 200 ready afterwards" "200 ready" "$RESP_STATUS $RESP_BODY"
    smqd_stop
}

# During the drain (held open by an incomplete MNS request): /ready 503 draining, /health 200.
t_drain() {
    trap "" PIPE
    local host port
    smqd_start || return
    host=${SMQD_ADDR%:*} port=${SMQD_ADDR##*:}
    exec 5<>"/dev/tcp/$host/$port"
    printf 'PUT /queues/x HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc' >&5
    sleep 0.3                   # let the server read it: a begun request holds the drain open
    kill -TERM "$SMQD_PID"
    wait_for "SIGTERM is logged" 2000 grep -q 'received SIGTERM' "$SMQD_LOG"
    admin GET /ready
    assert_eq "/ready is 503 draining after SIGTERM" "503 draining" "$RESP_STATUS $RESP_BODY"
    admin GET /health
    assert_eq "/health is still 200 while draining" "200 ok" "$RESP_STATUS $RESP_BODY"
    admin GET /v1/queues
    assert_admin_error "the JSON API answers 503 while draining" 503 ServiceUnavailable
    admin GET /metrics
    assert_eq "/metrics still answers while draining" 200 "$RESP_STATUS"
    assert_match "/metrics says not ready while draining" '^smqd_ready 0$' "$RESP_BODY"
    exec 5>&-
    smqd_stop
    assert_eq "the drain ends with exit 0" 0 "$SMQD_EXIT"
}

t_token() {
    local dir
    new_server_dir
    dir=$NEW_DIR
    printf 'token = t0p-s3cret.token\n' >>"$dir/smqd.conf"
    smqd_start "$dir" || return
    assert_match "the log says a token is required" 'admin listener bound to .*token required' \
        "$(cat "$SMQD_LOG")"
    assert_eq "the token is never logged" 0 "$(grep -c 't0p-s3cret' "$SMQD_LOG")"
    admin GET /health
    assert_eq "/health needs no token" 200 "$RESP_STATUS"
    admin GET /ready
    assert_admin_error "/ready without the token is 401" 401 Unauthorized
    assert_match "401 names the scheme" '^Bearer' "$(header_value WWW-Authenticate)"
    admin GET /metrics
    assert_eq "/metrics without the token is 401" 401 "$RESP_STATUS"
    admin GET /v1/queues -H 'Authorization: Bearer wrong'
    assert_admin_error "a wrong token is 401" 401 Unauthorized
    admin GET /v1/queues -H 'Authorization: Bearer t0p-s3cret.token2'
    assert_admin_error "a longer token is 401" 401 Unauthorized
    admin GET /v1/queues -H 'Authorization: t0p-s3cret.token'
    assert_admin_error "the token without 'Bearer' is 401" 401 Unauthorized
    admin GET /v1/queues -H 'Authorization: Bearer t0p-s3cret.token'
    assert_eq "the right token works" 200 "$RESP_STATUS"
    admin GET /v1/queues -H 'Authorization: Bearer t0p-s3cret.token' -H 'Host: smqd.internal:8081'
    assert_eq "with a token a DNS name in Host is fine (remote scrapes)" 200 "$RESP_STATUS"
    admin GET /ready -H 'Authorization: Bearer t0p-s3cret.token'
    assert_eq "/ready with the token" "200 ready" "$RESP_STATUS $RESP_BODY"
    # Rotation without a restart: SIGHUP reads the new token; the old one stops working.
    sed -i 's/^token = .*/token = r0tated.token/' "$dir/smqd.conf"
    kill -HUP "$SMQD_PID"
    wait_for "the reload is logged" 5000 grep -q "SIGHUP: reloaded .*admin token set" "$SMQD_LOG"
    admin GET /ready -H 'Authorization: Bearer t0p-s3cret.token'
    assert_admin_error "after SIGHUP the old token is 401" 401 Unauthorized
    admin GET /ready -H 'Authorization: Bearer r0tated.token'
    assert_eq "after SIGHUP the new token works" "200 ready" "$RESP_STATUS $RESP_BODY"
    assert_eq "neither token is logged" 0 "$(grep -c 't0p-s3cret\|r0tated' "$SMQD_LOG")"
    # A file that does not load keeps the running token.
    cp "$dir/smqd.conf" "$dir/smqd.conf.good"
    printf 'bogus line\n' >>"$dir/smqd.conf"
    kill -HUP "$SMQD_PID"
    wait_for "the bad file is logged" 5000 grep -q "keeping the running configuration" "$SMQD_LOG"
    admin GET /ready
    assert_admin_error "after a bad file the token is still required" 401 Unauthorized
    admin GET /ready -H 'Authorization: Bearer r0tated.token'
    assert_eq "and still the rotated one" "200 ready" "$RESP_STATUS $RESP_BODY"
    mv "$dir/smqd.conf.good" "$dir/smqd.conf"
    # Removing it: no token needed, and the Host rule for token-less listeners is back.
    sed -i '/^token = /d' "$dir/smqd.conf"
    kill -HUP "$SMQD_PID"
    wait_for "the second reload is logged" 5000 grep -q "SIGHUP: reloaded .*admin token none" "$SMQD_LOG"
    admin GET /ready
    assert_eq "without a token /ready is open again" "200 ready" "$RESP_STATUS $RESP_BODY"
    admin GET /v1/queues -H 'Host: smqd.internal:8081'
    assert_admin_error "and a DNS name in Host is refused again" 403 Forbidden
    smqd_stop
}

# The read-only token (docs/admin-api.md): probes and queue statistics, nothing else; each
# refusal is a 403 that is logged and counted, and changes nothing.  SIGHUP swaps it.
t_read_token() {
    local dir full='Authorization: Bearer full.t0ken-A' read='Authorization: Bearer r3ad-only.t0ken'
    local req denials=0
    new_server_dir
    dir=$NEW_DIR
    printf 'token = full.t0ken-A\nread_token = r3ad-only.t0ken\n' >>"$dir/smqd.conf"
    smqd_start "$dir" || return
    assert_match "the log says a read-only token is set" \
        'admin listener bound to .*token required; read-only token set' "$(cat "$SMQD_LOG")"
    create_queue rq
    create_queue rq-dlq
    send_msg rq 'secret body one'
    send_msg rq 'secret body two'
    send_msg rq-dlq 'dead one'
    # What it may do: the probes and the statistics, GET and HEAD.
    admin GET /metrics -H "$read"
    METRICS=$RESP_BODY
    assert_eq "/metrics with the read token is 200" 200 "$RESP_STATUS"
    assert_eq "nothing denied yet" 0 "$(metric smqd_admin_denied_total)"
    assert_eq "every line is a valid sample or comment" "" "$(metrics_format_problems)"
    admin GET /ready -H "$read"
    assert_eq "/ready with the read token" "200 ready" "$RESP_STATUS $RESP_BODY"
    admin GET /v1/queues -H "$read"
    assert_eq "the queue list with the read token" '200 ["rq","rq-dlq"]' \
        "$RESP_STATUS $(json 'd.queues.map(q => q.name)')"
    admin GET /v1/queues/rq -H "$read"
    assert_eq "queue stats with the read token" "200 2" "$RESP_STATUS $(json d.active)"
    admin HEAD /v1/queues/rq -I -H "$read"
    assert_eq "HEAD of queue stats with the read token" 200 "$RESP_STATUS"
    admin GET /v1/queues/nosuch -H "$read"
    assert_admin_error "a missing queue is still 404 for the read token" 404 QueueNotExist
    # What it may not: bodies (a peek), anything that changes a queue, any other method.
    for req in 'GET /v1/queues/rq/messages' 'GET /v1/queues/rq/messages?n=1' \
               'HEAD /v1/queues/rq/messages' 'POST /v1/queues/rq/purge' \
               'POST /v1/queues/rq/purge?type=both' 'POST /v1/queues/rq-dlq/redrive' \
               'PUT /v1/queues/rq/attributes?VisibilityTimeout=60' 'DELETE /v1/queues/rq' \
               'POST /metrics' 'POST /v1/queues' 'GET /v1/queues/rq/nothing'; do
        if [ "${req%% *}" = HEAD ]; then
            admin HEAD "${req#* }" -I -H "$read"
            assert_eq "read token: $req is 403" 403 "$RESP_STATUS"
        else
            admin ${req%% *} "${req#* }" -H "$read"
            assert_admin_error "read token: $req is 403" 403 Forbidden
        fi
        denials=$((denials + 1))
    done
    admin POST /v1/queues/rq/purge -H "$read"
    assert_match "the 403 says what was refused and which token to use" \
        'read-only token may not POST /v1/queues/rq/purge; use the \[admin\] token' "$RESP_BODY"
    denials=$((denials + 1))
    admin GET /v1/queues/rq/messages -H "$read"
    assert_no_match "a refused peek shows no body" 'secret body' "$RESP_BODY"
    denials=$((denials + 1))
    # Nothing changed: both queues keep their messages, the attribute its value.
    admin GET /v1/queues/rq -H "$full"
    assert_eq "rq keeps its 2 messages and VisibilityTimeout 30" "2 30" \
        "$(json '[d.active, d.attributes.VisibilityTimeout].join(" ")')"
    admin GET /v1/queues/rq-dlq -H "$full"
    assert_eq "rq-dlq keeps its message" "1 0" "$(json '[d.active, d.redrive_pending].join(" ")')"
    assert_eq "each refusal is logged at WARN with method and path" "$denials" \
        "$(grep -c 'WARN admin: [A-Z]* /[^ ]* refused: the read-only token' "$SMQD_LOG")"
    assert_eq "the purge refusals name their path (the query is left out)" 3 \
        "$(grep -c 'admin: POST /v1/queues/rq/purge refused' "$SMQD_LOG")"
    scrape_with "$read"
    assert_eq "smqd_admin_denied_total counts them" "$denials" "$(metric smqd_admin_denied_total)"
    assert_eq "it is a counter" 1 "$(printf '%s\n' "$METRICS" | grep -c '^# TYPE smqd_admin_denied_total counter$')"
    # Wrong tokens are 401 as before, and are not counted as denials.
    admin GET /metrics -H 'Authorization: Bearer wrong'
    assert_admin_error "a wrong token is 401" 401 Unauthorized
    admin GET /metrics -H 'Authorization: Bearer r3ad-only.t0ken2'
    assert_admin_error "a longer read token is 401" 401 Unauthorized
    admin GET /metrics -H 'Authorization: Bearer r3ad-only.t0ke'
    assert_admin_error "a shorter read token is 401" 401 Unauthorized
    admin GET /metrics
    assert_admin_error "no token is 401" 401 Unauthorized
    admin GET /health
    assert_eq "/health needs no token" 200 "$RESP_STATUS"
    scrape_with "$read"
    assert_eq "401s are not denials" "$denials" "$(metric smqd_admin_denied_total)"
    # The full token keeps every power.
    admin GET /v1/queues/rq/messages -H "$full"
    assert_eq "the full token peeks" "200 2" "$RESP_STATUS $(json d.messages.length)"
    admin PUT '/v1/queues/rq/attributes?VisibilityTimeout=60' -H "$full"
    assert_eq "the full token sets attributes" "200 60" \
        "$RESP_STATUS $(json d.attributes.VisibilityTimeout)"
    admin POST /v1/queues/rq/purge -H "$full"
    assert_eq "the full token purges" "200 2" "$RESP_STATUS $(json d.purged)"
    admin DELETE /v1/queues/rq -H "$full"
    assert_admin_error "the full token gets 405 where the read token got 403" 405 MethodNotAllowed
    # SIGHUP: a new read token; the old one stops working, the full token is unchanged.
    sed -i 's/^read_token = .*/read_token = n3w-read.t0ken/' "$dir/smqd.conf"
    kill -HUP "$SMQD_PID"
    wait_for "the reload is logged" 5000 \
        grep -q "SIGHUP: reloaded .*admin token set, read-only token set" "$SMQD_LOG"
    admin GET /metrics -H "$read"
    assert_admin_error "after SIGHUP the old read token is 401" 401 Unauthorized
    read='Authorization: Bearer n3w-read.t0ken'
    admin GET /v1/queues/rq -H "$read"
    assert_eq "after SIGHUP the new read token reads stats" 200 "$RESP_STATUS"
    admin POST /v1/queues/rq-dlq/purge?type=both -H "$read"
    assert_admin_error "and is still read-only" 403 Forbidden
    denials=$((denials + 1))
    admin GET /v1/queues/rq-dlq -H "$full"
    assert_eq "the full token still works, and rq-dlq still has its message" "200 1" \
        "$RESP_STATUS $(json d.active)"
    scrape_with "$read"
    assert_eq "the count goes on across the reload" "$denials" "$(metric smqd_admin_denied_total)"
    # Removing read_token: it is a wrong token from then on.
    sed -i '/^read_token = /d' "$dir/smqd.conf"
    kill -HUP "$SMQD_PID"
    wait_for "the second reload is logged" 5000 \
        grep -q "SIGHUP: reloaded .*admin token set, read-only token none" "$SMQD_LOG"
    admin GET /metrics -H "$read"
    assert_admin_error "without read_token the former read token is 401" 401 Unauthorized
    # A file with read_token but no token does not load: the running tokens stay.
    sed -i '/^token = /d' "$dir/smqd.conf"
    printf 'read_token = n3w-read.t0ken\n' >>"$dir/smqd.conf"
    kill -HUP "$SMQD_PID"
    wait_for "the bad file is logged" 5000 \
        grep -q "read_token is set but token is not.*keeping the running configuration" "$SMQD_LOG"
    admin GET /metrics
    assert_admin_error "the full token is still required" 401 Unauthorized
    admin GET /metrics -H "$full"
    assert_eq "and still accepted" 200 "$RESP_STATUS"
    assert_eq "no token is ever logged" 0 "$(grep -c 'full\.t0ken\|r3ad-only\|n3w-read' "$SMQD_LOG")"
    smqd_stop
}

# Every line of the exposition is a comment or a well-formed sample; every family has one
# HELP and one TYPE before its samples and its samples are contiguous.
metrics_format_problems() {
    printf '%s\n' "$METRICS" | awk '
        function fam(n) { sub(/\{.*/, "", n); return n }
        /^# HELP [a-zA-Z_:][a-zA-Z0-9_:]* .+$/ { h[$3]++; if (h[$3] > 1) print "two HELP: " $3; next }
        /^# TYPE [a-zA-Z_:][a-zA-Z0-9_:]* (counter|gauge|histogram|summary|untyped)$/ {
            t[$3]++; if (t[$3] > 1) print "two TYPE: " $3
            if (!($3 in h)) print "TYPE before HELP: " $3
            cur = $3; next }
        /^#/ { print "bad comment: " $0; next }
        /^$/ { next }
        {
            if ($0 !~ /^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*"(,[a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*")*\})? -?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$/)
                { print "bad sample: " $0; next }
            n = fam($1)
            # A histogram or summary family names its samples NAME_bucket/_sum/_count.
            if (!(n in t) && cur != "" && n ~ "^" cur "_(bucket|sum|count)$") n = cur
            if (!(n in t)) print "sample without TYPE: " $0
            else if (n != cur) print "family not contiguous: " $0
        }'
}

t_metrics() {
    smqd_start || return
    create_queue mq
    send_msg mq one
    send_msg mq two
    send_msg mq three
    mns_request GET '/queues/mq/messages?waitseconds=1'
    assert_status "receive one" 200
    scrape
    assert_eq "/metrics is 200" 200 "$RESP_STATUS"
    assert_eq "Content-Type is the text format 0.0.4" "text/plain; version=0.0.4; charset=utf-8" \
        "$(header_value Content-Type)"
    assert_eq "every line is a valid sample or comment" "" "$(metrics_format_problems)"
    assert_eq "active 2" 2 "$(metric 'smqd_queue_messages{queue="mq",state="active"}')"
    assert_eq "inactive 1" 1 "$(metric 'smqd_queue_messages{queue="mq",state="inactive"}')"
    assert_eq "delayed 0" 0 "$(metric 'smqd_queue_messages{queue="mq",state="delayed"}')"
    assert_eq "sent_total 3" 3 "$(metric 'smqd_messages_sent_total{queue="mq"}')"
    assert_eq "received_total 1" 1 "$(metric 'smqd_messages_received_total{queue="mq"}')"
    assert_eq "deleted_total 0" 0 "$(metric 'smqd_messages_deleted_total{queue="mq"}')"
    assert_eq "one queue" 1 "$(metric smqd_queues)"
    assert_eq "storage not full" 0 "$(metric smqd_storage_full)"
    assert_eq "ready 1" 1 "$(metric smqd_ready)"
    assert_eq "no waiters" 0 "$(metric smqd_long_poll_waiters)"
    assert_match "build info carries the version" '^1$' "$(metric 'smqd_build_info{version="0.1.0"}')"
    assert_match "oldest age is a small number of seconds" '^[0-9]\.[0-9]{3}$' \
        "$(metric 'smqd_queue_oldest_message_age_seconds{queue="mq"}')"
    assert_match "db size is reported" '^[1-9][0-9]*$' "$(metric smqd_db_bytes)"
    assert_match "wal size is reported" '^[0-9]+$' "$(metric smqd_wal_bytes)"
    for f in smqd_engine_reloads_total smqd_dlq_move_failures_total smqd_db_free_bytes \
             smqd_db_vacuumed_bytes_total smqd_start_time_seconds; do
        assert_match "$f is present" '^[0-9.]+$' "$(metric "$f")"
    done
    for f in expired dead_lettered redriven; do
        assert_eq "${f}_total 0" 0 "$(metric "smqd_messages_${f}_total{queue=\"mq\"}")"
    done
    # sync = full (the default): every write above waited for a WAL flush by the syncer.
    assert_match "WAL flushes are counted" '^[1-9][0-9]*$' \
        "$(metric smqd_wal_flush_duration_seconds_count)"
    # Observed into the finite buckets, not only counted: a loopback test machine flushes in
    # well under a second, and the time adds up.
    assert_range "flushes under 1 s are in the le=1 bucket" 1 1000000000 \
        "$(metric 'smqd_wal_flush_duration_seconds_bucket{le="1"}')"
    assert_match "and their time is summed" '^0\.[0-9]*[1-9][0-9]*$|^[1-9]' \
        "$(metric smqd_wal_flush_duration_seconds_sum)"
    assert_eq "no flush failed" 0 "$(metric smqd_wal_flush_failures_total)"
    # The threads an operator sees in top -H / perf carry their roles.
    assert_match "the engine and syncer threads are named" 'smqd-engine.*smqd-syncer|smqd-syncer.*smqd-engine' \
        "$(cat /proc/"$SMQD_PID"/task/*/comm | tr '\n' ' ')"
    # A parked long poll shows as a waiter (polled: signing and parking take a moment).
    create_queue mq2
    mns_request_bg "$SUITE_TMP/lp" GET '/queues/mq2/messages?waitseconds=8'
    wait_for "a parked long poll is counted per queue" 6000 \
        metric_is 'smqd_queue_long_poll_waiters{queue="mq2"}' 1
    assert_eq "and in the total" 1 "$(metric smqd_long_poll_waiters)"
    bg_wait "$SUITE_TMP/lp" 12000
    smqd_stop
}

t_json_api() {
    local body
    smqd_start || return
    create_queue jq1
    create_queue jq0
    send_msg jq1 'first "quoted" <b>&amp;</b> ü'
    send_msg jq1 second
    admin GET /v1/queues
    assert_eq "list is 200" 200 "$RESP_STATUS"
    assert_eq "list is JSON" application/json "$(header_value Content-Type)"
    assert_eq "list is sorted by name" '["jq0","jq1"]' "$(json 'd.queues.map(q => q.name)')"
    admin GET /v1/queues/jq1
    assert_eq "queue: counts" "2 0 0 0" "$(json '[d.active, d.inactive, d.delayed, d.waiters].join(" ")')"
    assert_eq "queue: counters" 2 "$(json 'd.counters.sent')"
    assert_eq "queue: default visibility" 30 "$(json 'd.attributes.VisibilityTimeout')"
    assert_eq "queue: no DLQ" false "$(json 'd.attributes.DlqEnabled')"
    assert_match "queue: oldest age in seconds" '^[0-9]+(\.[0-9]+)?$' "$(json 'd.oldest_age_s')"
    admin GET '/v1/queues/jq1/messages?n=1'
    assert_eq "peek n=1 gives one" 1 "$(json 'd.messages.length')"
    assert_eq "peek: the body, exactly" 'first "quoted" <b>&amp;</b> ü' "$(json 'd.messages[0].body')"
    assert_match "peek: a MessageId" '^[0-9A-F]{32}$' "$(json 'd.messages[0].id')"
    admin GET /v1/queues/jq1/messages
    assert_eq "peek default gives all (up to 16)" 2 "$(json 'd.messages.length')"
    admin GET /v1/queues/jq0/messages
    assert_eq "peek of an empty queue is an empty list" '200 []' "$RESP_STATUS $(json 'd.messages')"
    mns_request GET '/queues/jq1/messages?waitseconds=1'
    assert_status "peek did not take the messages" 200
    admin PUT '/v1/queues/jq1/attributes?VisibilityTimeout=60&LoggingEnabled=true&DelaySeconds=5'
    assert_eq "set answers 200" 200 "$RESP_STATUS"
    assert_eq "set answers the queue after the change" "60 true 5" \
        "$(json '[d.attributes.VisibilityTimeout, d.attributes.LoggingEnabled, d.attributes.DelaySeconds].join(" ")')"
    mns_request GET /queues/jq1
    assert_xml "the MNS API sees the new VisibilityTimeout" VisibilityTimeout 60
    admin PUT '/v1/queues/jq1/attributes?DlqTargetQueue=jq0&DlqMaxReceiveCount=3'
    assert_eq "set a DLQ policy: 200" 200 "$RESP_STATUS"
    assert_eq "the policy is in the answer" "true jq0 3" \
        "$(json '[d.attributes.DlqEnabled, d.attributes.DlqTargetQueue, d.attributes.DlqMaxReceiveCount].join(" ")')"
    admin PUT '/v1/queues/jq1/attributes?DlqEnabled=false'
    assert_eq "DlqEnabled=false clears it" "200 false" "$RESP_STATUS $(json 'd.attributes.DlqEnabled')"
    admin PUT '/v1/queues/jq1/attributes?DlqTargetQueue=nosuch&DlqMaxReceiveCount=3'
    assert_admin_error "a DLQ target that does not exist is refused" 400 InvalidArgument
    admin GET /v1/queues/jq1
    assert_eq "and the policy stays off" "200 false" "$RESP_STATUS $(json 'd.attributes.DlqEnabled')"
    admin PUT '/v1/queues/nosuch/attributes?VisibilityTimeout=60'
    assert_admin_error "set on a missing queue" 404 QueueNotExist
    admin GET /v1/queues/nosuch
    assert_admin_error "stats of a missing queue" 404 QueueNotExist
    smqd_stop
}

t_hostile() {
    local long big i q t0
    smqd_start || return
    create_queue hq
    long=$(printf 'a%.0s' $(seq 1 121))
    admin GET "/v1/queues/$long"
    assert_admin_error "a 121-character name" 400 QueueNameLengthError
    for q in bad_name -lead 'a%2Fb' 'a%00b' 'a%zz' '%'; do
        admin GET "/v1/queues/$q"
        assert_admin_error "name '$q' is refused" 400 InvalidQueueName
    done
    for q in 'n=0' 'n=17' 'n=+5' 'n=5x' 'n=' 'n=-1' 'n=%205' 'n=99999999999999999999999' 'x=1' 'n=1&n=2'; do
        admin GET "/v1/queues/hq/messages?$q"
        assert_admin_error "peek ?$q is 400" 400 InvalidArgument
    done
    for q in 'type=all' 'type=' 'type=NORMAL' 'force=1'; do
        admin POST "/v1/queues/hq/purge?$q"
        assert_admin_error "purge ?$q is 400" 400 InvalidArgument
    done
    for q in 'rate=0' 'rate=100001' 'max=-1' 'max=1e3' 'rate=1&rate=2'; do
        admin POST "/v1/queues/hq/redrive?$q"
        assert_admin_error "redrive ?$q is 400" 400 InvalidArgument
    done
    for q in '' 'VisibilityTimeout=0' 'VisibilityTimeout=43201' 'Bogus=1' 'LoggingEnabled=yes' \
             'DelaySeconds=1&DelaySeconds=2' 'DlqTargetQueue=x' 'DlqMaxReceiveCount=3' \
             'DlqEnabled=true&DlqTargetQueue=hq&DlqMaxReceiveCount=3' \
             'DlqEnabled=false&DlqTargetQueue=x' 'DlqTargetQueue=x&DlqMaxReceiveCount=1001' \
             'DlqEnabled=maybe'; do
        admin PUT "/v1/queues/hq/attributes?$q"
        assert_admin_error "set ?$q is 400" 400 InvalidArgument
    done
    admin PUT '/v1/queues/hq/attributes?DlqTargetQueue=bad_name&DlqMaxReceiveCount=3'
    assert_admin_error "a bad DLQ name is refused" 400 InvalidQueueName
    admin GET '/v1/queues/hq?x=%zz'
    assert_admin_error "a bad %-escape in the query" 400 InvalidQueryString
    q=$(for i in $(seq 1 40); do printf 'p%d=1&' "$i"; done)
    admin GET "/v1/queues/hq/messages?$q"
    assert_admin_error "too many parameters" 400 InvalidQueryString
    for q in / /v1 /v1/ /v1/queues/ /v1/queues/hq/ /v1/queues/hq/nothing /v1/queues/hq/messages/x \
             /v2/queues /healthz /metrics/x; do
        admin GET "$q"
        assert_admin_error "unknown path $q is 404" 404 NotFound
    done
    admin GET '/v1/queues//messages'
    assert_admin_error "an empty queue name" 400 QueueNameLengthError
    admin DELETE /v1/queues/hq
    assert_admin_error "DELETE on a queue is 405" 405 MethodNotAllowed
    assert_eq "405 says what is allowed" "GET, HEAD" "$(header_value Allow)"
    admin GET /v1/queues/hq/purge
    assert_admin_error "GET on purge is 405" 405 MethodNotAllowed
    admin POST /metrics
    assert_admin_error "POST /metrics is 405" 405 MethodNotAllowed
    admin GET /v1/queues/hq --data-binary 'a body'
    assert_admin_error "a body on an admin request is 400" 400 InvalidArgument
    admin HEAD /health -I
    assert_eq "HEAD /health" 200 "$RESP_STATUS"
    big=$(head -c 100000 /dev/zero | tr '\0' a)
    admin GET "/v1/queues/$big"
    assert_range "a 100 kB URL is refused with a 4xx" 400 499 "$RESP_STATUS"
    admin GET "/v1/queues/hq/messages?n=$big"
    assert_range "a 100 kB query is refused with a 4xx" 400 499 "$RESP_STATUS"
    # Streamed from a pipe: "--data-binary @/dev/zero" makes curl itself run out of memory
    # before it connects, and "-T -" alone adds Transfer-Encoding, which is refused as
    # ambiguous framing before the body matters. Cut off after ADMIN_MAX_BODY: the answer
    # comes at once (a buffering server would keep reading until curl's limit).
    # curl may take 30 s, so the bound of 10 s (process starts on a loaded machine included)
    # still tells "cut off" from "read until the client gave up".
    t0=$(now_ms)
    admin POST /v1/queues/hq/purge -T - --max-time 30 -H 'Content-Length: 100000000' \
        -H 'Transfer-Encoding:' < <(head -c 100000000 /dev/zero)
    assert_range "an endless body is cut off quickly (ms)" 0 10000 $(( $(now_ms) - t0 ))
    assert_admin_error "and is refused as a body, not run" 400 InvalidArgument
    admin GET /health
    assert_eq "the listener still answers after it" 200 "$RESP_STATUS"
    # A browser must not drive the admin API: a cross-site POST (no preflight needed) or a
    # DNS name rebound to 127.0.0.1.
    send_msg hq "kept"
    admin POST /v1/queues/hq/purge -H 'Origin: http://evil.example' -H 'Content-Type: text/plain'
    assert_admin_error "a request with Origin is refused" 403 Forbidden
    admin POST /v1/queues/hq/purge -H 'Sec-Fetch-Site: cross-site'
    assert_admin_error "a cross-site fetch is refused" 403 Forbidden
    admin GET /v1/queues/hq/messages -H 'Host: attacker.example:8081'
    assert_admin_error "a DNS name in Host is refused without a token" 403 Forbidden
    admin GET /v1/queues/hq -H 'Host: localhost'
    assert_eq "Host localhost is fine" 200 "$RESP_STATUS"
    admin GET /v1/queues/hq -H 'Sec-Fetch-Site: none'
    assert_eq "a typed-in address (Sec-Fetch-Site: none) is fine" 200 "$RESP_STATUS"
    assert_eq "nothing was purged by the refused requests" 1 "$(json d.active)"
    trap "" PIPE
    exec 5<>"/dev/tcp/${SMQD_ADMIN%:*}/${SMQD_ADMIN##*:}"
    printf 'GARBAGE\x01\x02 / HTTP/9.9\r\n\r\n' >&5
    exec 5>&-
    admin GET /health
    assert_eq "the server survives all of it" 200 "$RESP_STATUS"
    admin GET /v1/queues/hq
    assert_eq "and still serves the API" 200 "$RESP_STATUS"
    smqd_stop
}

# 64 clients (the admin listener's connection limit) trickling a request one byte every 0.5 s
# would hold every connection, and its thread, for minutes: libmicrohttpd's idle timeout only
# measures silence.  Half trickle their headers, half a body; the slow-client reaper must drop
# every one of them ADMIN_REQUEST_TIMEOUT_S (10 s) after it connected.
t_admin_slowloris() {
    local f="$SUITE_TMP/admin-loris" i pids=() t0 cut=0 held=0 line ms hh hb
    smqd_start || return
    printf 'GET /health HTTP/1.1\r\nHost: %s\r\n' "$SMQD_ADMIN" >"$f.h"
    hh=$(stat -c %s "$f.h")
    printf 'X-Slow: %s\r\n\r\n' "$(printf 's%.0s' $(seq 1 350))" >>"$f.h"
    printf 'POST /v1/queues/x/purge HTTP/1.1\r\nHost: %s\r\nContent-Length: 1000\r\n\r\n' \
        "$SMQD_ADMIN" >"$f.b"
    hb=$(stat -c %s "$f.b")
    printf 'b%.0s' $(seq 1 1000) >>"$f.b"
    # Timed from before the first client starts: starting 64 processes takes a while on a
    # loaded machine, and the first slot comes free 10 s after the first client connected.
    t0=$(now_ms)
    for i in $(seq 1 64); do
        if [ $((i % 2)) = 0 ]; then
            timeout 30 "$HOSTILE_CLIENT" send "$SMQD_ADMIN" -i "$f.h" -s "$hh" -c 1 -d 500 -t 16000 \
                >"$f.$i.line" &
        else
            timeout 30 "$HOSTILE_CLIENT" send "$SMQD_ADMIN" -i "$f.b" -s "$hb" -c 1 -d 500 -t 16000 \
                >"$f.$i.line" &
        fi
        pids+=($!)
    done
    sleep 2
    RESP_STATUS=000
    until [ "$RESP_STATUS" = 200 ] || [ $(( $(now_ms) - t0 )) -gt 14000 ]; do
        admin GET /health --max-time 2
        [ "$RESP_STATUS" = 200 ] || sleep 0.25
    done
    assert_eq "/health is answered once the reaper has cut the slow clients" 200 "$RESP_STATUS"
    # Not before ~10 s (the 64 slots really were held), and soon after the cut.
    assert_range "after the 10 s request timeout, within 4 s of it (ms)" 8000 14000 \
        $(( $(now_ms) - t0 ))
    wait "${pids[@]}"
    for i in $(seq 1 64); do
        line=$(cat "$f.$i.line")
        ms=$(printf '%s' "$line" | sed -n 's/.*close_ms=\(-\{0,1\}[0-9]*\).*/\1/p')
        case $line in
            *closed=eof*|*closed=reset*) [ "${ms:-0}" -ge 8000 ] && [ "${ms:-0}" -le 14000 ] \
                                             && cut=$((cut + 1)) ;;
            *closed=refused*) ;;         # a probe held the 64th slot for a moment
            *) held=$((held + 1)) ;;
        esac
    done
    assert_eq "no slow client (headers or body) kept its connection" 0 "$held"
    assert_range "the slow clients were cut off 8-14 s after connecting" 60 64 "$cut"
    if grep -q 'admin: closed a connection whose request was incomplete after 10 s' "$SMQD_LOG"; then
        ok "the log says why they were closed"
    else
        not_ok "the log says why they were closed" "$(tail -n 5 "$SMQD_LOG")"
    fi
    smqd_stop
}

# systemd notifications through a stand-in socket.
t_systemd_notify() {
    local sock out lines
    if [ -z "${NOTIFY_LISTEN:-}" ] || [ ! -x "$NOTIFY_LISTEN" ]; then
        not_ok "NOTIFY_LISTEN must point to the notify_listen helper"
        return
    fi
    prepared_dir || return
    sock="$SUITE_TMP/notify.sock" out="$SUITE_TMP/notify.out"
    : >"$out"
    "$NOTIFY_LISTEN" "$sock" "$out" &
    NOTIFY_PID=$!
    SERVER_PIDS+=("$NOTIFY_PID")
    wait_for "the notification socket exists" 3000 test -S "$sock"
    hold_db_lock "$PREPARED/smqd.db"
    start_until_admin "$PREPARED" "$sock" || { release_db_lock; return; }
    wait_for "a STATUS arrives while loading" 3000 grep -q 'STATUS=loading' "$out"
    assert_eq "no READY=1 while recovery is held up" 0 "$(grep -c 'READY=1' "$out")"
    release_db_lock
    wait_for "READY=1 arrives" 8000 grep -q 'READY=1' "$out"
    lines=$(grep 'READY=1' "$out")
    assert_match "when READY=1 arrived the MNS port already accepted connections" 'connect=ok' "$lines"
    assert_eq "the MNS listener was logged before READY=1" 1 "$(grep -c 'listening on http://' "$SMQD_LOG")"
    kill -HUP "$SMQD_PID"
    wait_for "SIGHUP: RELOADING=1" 5000 grep -q 'RELOADING=1' "$out"
    assert_match "RELOADING=1 carries MONOTONIC_USEC (systemd >= 253)" 'MONOTONIC_USEC=[0-9]+' "$(cat "$out")"
    wait_for "then READY=1 again" 5000 count_at_least 2 'READY=1' "$out"
    kill -TERM "$SMQD_PID"
    wait_for "SIGTERM: STOPPING=1" 5000 grep -q 'STOPPING=1' "$out"
    smqd_stop
    kill "$NOTIFY_PID" 2>/dev/null
    wait "$NOTIFY_PID" 2>/dev/null
}

# [admin] listen = off: no admin line, MNS works; a taken admin port stops start-up (exit 3).
t_off_and_taken() {
    local dir rc
    new_server_dir
    dir=$NEW_DIR
    # write_config ends with "[admin]" / "listen = 127.0.0.1:0".
    sed -i '$ s/^listen = .*/listen = off/' "$dir/smqd.conf"
    smqd_start "$dir" || return
    assert_eq "no admin listener with listen = off" 0 "$(grep -c 'admin listener' "$SMQD_LOG")"
    mns_request GET /queues
    assert_status "the MNS API works without it" 200
    smqd_stop
    smqd_start || return
    local taken=$SMQD_ADMIN
    sed -i "s/^listen = off$/listen = $taken/" "$dir/smqd.conf"
    timeout 10 "$SMQD_BIN" -c "$dir/smqd.conf" >"$SUITE_TMP/taken.err" 2>&1 </dev/null
    rc=$?
    assert_eq "an admin address in use stops start-up with the listen code" 3 "$rc"
    assert_match "and says which listener" 'admin listener' "$(cat "$SUITE_TMP/taken.err")"
    smqd_stop
}

# Disk reclamation through the real binary: a purged backlog's pages go back to the file
# system (incremental auto-vacuum between runs), visible in the file and in the metrics.
db_pages_freed() {
    scrape
    local v
    v=$(metric smqd_db_vacuumed_bytes_total)
    [ -n "$v" ] && [ "$v" -ge 4194304 ]
}

t_reclaim() {
    local body i full after
    smqd_start || return
    create_queue big
    body=$(message_body "$(head -c 60000 /dev/zero | tr '\0' 'r')")
    for i in $(seq 1 160); do           # 160 x 60 KB = 9.6 MB of bodies
        mns_request POST /queues/big/messages "$body"
        [ "$RESP_STATUS" = 201 ] || { not_ok "send $i" "$(resp_summary)"; return; }
    done
    ok "sent 160 messages of 60 KB"
    # Both sizes are read from a checkpointed file (a clean stop copies the WAL into it):
    # while smqd runs, part of the data may still be only in the WAL, and how much depends
    # on when SQLite last checkpointed.
    smqd_stop
    full=$(stat -c %s "$SMQD_DIR/smqd.db")
    smqd_start "$SMQD_DIR" || return
    admin POST '/v1/queues/big/purge?type=normal'
    assert_eq "purge" 200 "$RESP_STATUS"
    assert_eq "purged all" 160 "$(json d.purged)"
    wait_for "the freed pages are returned (smqd_db_vacuumed_bytes_total)" 15000 db_pages_freed
    smqd_stop
    after=$(stat -c %s "$SMQD_DIR/smqd.db")
    assert_range "the database file shrank by more than 4 MB" 4194304 999999999999 $((full - after))
    assert_eq "integrity after reclamation" ok "$(sqlite3 "$SMQD_DIR/smqd.db" 'PRAGMA integrity_check')"
}

# A stalled engine (here: blocked 5 s in BEGIN IMMEDIATE behind another process's write lock)
# must not silence the admin listener: /ready gives up after 2 s, at most 16 requests wait for
# the engine at once (the rest get 503 at once), and /health answers throughout.
t_engine_stalled() {
    local t0 i ms fast=0 pids=()
    smqd_start || return
    create_queue sq
    hold_db_lock "$SMQD_DIR/smqd.db"
    mns_request_bg "$SUITE_TMP/stalled-send" POST /queues/sq/messages "$(message_body blocked)"
    local first_send=$BG_PID second_send
    # Until the first send has reached the engine /ready answers 200 at once: asked again
    # until it stalls (polled, rather than a sleep assumed long enough to sign and send).
    local deadline=$(( $(now_ms) + 10000 ))
    while :; do
        t0=$(now_ms)
        admin GET /ready
        ms=$(( $(now_ms) - t0 ))
        [ "$RESP_STATUS" = 200 ] && [ "$(now_ms)" -lt "$deadline" ] || break
        sleep 0.05
    done
    assert_eq "/ready on a stalled engine: 503" 503 "$RESP_STATUS"
    assert_range "after about 2 s, not 30 (ms)" 1500 4000 "$ms"
    # Each write blocks the engine for SQLite's busy timeout (5 s), and the probes below
    # must all arrive and wait while it is stalled: a second send, sent now that the first
    # holds the engine, queues behind it and stalls it for another 5 s, so a slow machine
    # cannot outlast the stall (the probes would then be answered early, as "fast").
    mns_request_bg "$SUITE_TMP/stalled-send2" POST /queues/sq/messages "$(message_body blocked2)"
    second_send=$BG_PID
    # Timed by curl itself (connect to last byte), so that starting 24 processes on a busy
    # machine does not count as waiting.
    for i in $(seq 1 24); do
        ( curl -s -o /dev/null --max-time 10 -w '%{time_total}' "http://$SMQD_ADMIN/ready" \
              | awk '{ printf "%d", $1 * 1000 }' >"$SUITE_TMP/probe.$i" ) &
        pids+=($!)
    done
    sleep 0.3
    t0=$(now_ms)
    admin GET /health
    assert_eq "/health answers while 24 probes wait" 200 "$RESP_STATUS"
    assert_range "at once, not after the probes' 2 s (ms)" 0 1500 $(( $(now_ms) - t0 ))
    wait "${pids[@]}"
    for i in $(seq 1 24); do
        [ "$(cat "$SUITE_TMP/probe.$i")" -lt 1000 ] && fast=$((fast + 1))
    done
    # 16 probes may wait for the engine (ADMIN_MAX_ENGINE_WAITERS) and do, for 2 s; the
    # other 8 are refused at once.
    assert_range "the probes beyond 16 were refused at once" 8 10 "$fast"
    release_db_lock
    BG_PID=$first_send
    bg_wait "$SUITE_TMP/stalled-send" 15000 >/dev/null 2>&1
    BG_PID=$second_send
    bg_wait "$SUITE_TMP/stalled-send2" 15000 >/dev/null 2>&1
    admin GET /ready
    assert_eq "ready again once the engine moves" 200 "$RESP_STATUS"
    smqd_stop
}

run_test t_startup
run_test t_drain
run_test t_token
run_test t_read_token
run_test t_metrics
run_test t_json_api
run_test t_hostile
run_test t_admin_slowloris
run_test t_systemd_notify
run_test t_off_and_taken
run_test t_reclaim
run_test t_engine_stalled
finish
