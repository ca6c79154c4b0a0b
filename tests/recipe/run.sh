#!/usr/bin/env bash
# run.sh — the recipe of docs/operations.md "Two nodes on PostgreSQL with failover", end
# to end on one machine, everything on 127.0.0.1:
#   a pg_auto_failover formation (monitor, primary, synchronous standby: pgaf-cluster.sh),
#   two smqd nodes from conf/smqd-pg.conf.example (node_id a and b, one dsn),
#   HAProxy from conf/haproxy-smqd.cfg, checking each node's /ready,
# then signed MNS traffic through HAProxy only: sends, a PostgreSQL failover
# (pg_autoctl perform failover) under sends, a kill -9 of the active smqd under sends,
# the victim restarted (it must come back as a standby), a SIGTERM of the active under
# sends, and a drain until the queue's own count is zero.  Checked: every send answered 201
# is received (and the queue is empty by its count after the drain); a failed send is
# answered 503 or 500 (never another error); at most one node answers /ready 200 at any
# sample; a standby answers MNS 503 ServiceUnavailable; a receipt handle issued before a
# takeover deletes after it; the takeover after a kill -9 is under 15 s, after a SIGTERM
# (a planned stop, which releases the lease) within the lease's ttl; smqd -t, haproxy -c
# and systemd-analyze verify accept the shipped files.  Prints the times it measured and
# "N passed, M failed".
#
#   SMQD_BIN=build/smqd tests/recipe/run.sh
#
# Tunables: RECIPE_MAX_S (default 600: every server it starts is stopped by then, by PID),
# RECIPE_SENDS (default 20: sends per steady phase), SMQD_TEST_KEEP=1 keeps the directory;
# after a failure its logs are kept in the directory's name plus .logs, and an acknowledged
# send not received is looked up in both PostgreSQL nodes (its row, or none: lost).
# Needs scripts/deps.sh test (pg_auto_failover, HAProxy, PostgreSQL 15, curl, xmllint).
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
: "${SMQD_BIN:=$ROOT/build/smqd}"
: "${RECIPE_MAX_S:=600}"
: "${RECIPE_SENDS:=20}"
SMQD_TEST_MAX_S=$RECIPE_MAX_S
# shellcheck source=../integration/lib.sh
. "$ROOT/tests/integration/lib.sh"
require_bin
SMQD_BIN=$(realpath "$SMQD_BIN")   # the nodes run in their own directories
require_tools curl openssl xmllint haproxy pg_autoctl psql python3 setpriv systemd-analyze

WORK=$(mktemp -d "${TMPDIR:-/tmp}/smqd-recipe.XXXXXX")
chmod 711 "$WORK"            # the formation's directory inside is postgres's
PGDIR=$WORK/pg
TOKEN=recipe-admin-token-$RANDOM$RANDOM
RTOKEN=recipe-read-token-$RANDOM$RANDOM
QUEUE=recipe
LEASE_TTL_S=5                # conf/smqd-pg.conf.example's lease_ttl_s
STOPPED=""
declare -A MNS_PORT ADMIN_PORT NODE_PID NODE_WD
SAMPLER_PID=""
HAPROXY_PID=""

# keep_logs: after a failure, the run's logs (not the databases) outlive the run in
# $WORK.logs, so that a failure on a loaded machine can be diagnosed afterwards: the smqd
# nodes', HAProxy's, pg_autoctl's and PostgreSQL's logs, the ledgers of sends and receives,
# the /ready samples, the drain's log and the monitor's history of state changes.
keep_logs() {
    local keep=$WORK.logs f
    mkdir -p "$keep" || return 0
    for f in "$WORK"/*.log "$WORK"/*.out "$WORK"/*.err "$WORK"/*.txt "$WORK"/acked \
             "$WORK"/received "$WORK"/missing "$WORK"/ready.samples "$WORK"/haproxy.cfg; do
        [ -f "$f" ] && cp "$f" "$keep/"
    done
    for f in a b; do
        [ -f "$WORK/$f/smqd.log" ] && cp "$WORK/$f/smqd.log" "$keep/smqd-$f.log"
    done
    mkdir -p "$keep/pg"
    cp "$PGDIR"/*.log "$PGDIR/ports" "$keep/pg/" 2>/dev/null
    for f in monitor node1 node2; do
        [ -d "$PGDIR/$f/log" ] && cp -r "$PGDIR/$f/log" "$keep/pg/$f-log"
    done
    chmod -R a+rX "$keep" 2>/dev/null
    echo "logs of the failed run kept in $keep"
}

recipe_cleanup() {
    [ -n "$SAMPLER_PID" ] && kill "$SAMPLER_PID" 2>/dev/null
    if [ -s "$PGDIR/ports" ] && [ ! -s "$WORK/pgaf-events.txt" ]; then
        bash "$HERE/pgaf-cluster.sh" events "$PGDIR" >"$WORK/pgaf-events.txt" 2>&1
    fi
    bash "$HERE/pgaf-cluster.sh" stop "$PGDIR" 2>/dev/null
    cleanup_all                       # lib.sh: every smqd, HAProxy and watchdog, by PID
    [ "$FAIL_COUNT" -gt 0 ] && keep_logs
    if [ "${SMQD_TEST_KEEP:-0}" = 1 ]; then echo "kept $WORK"; else rm -rf "$WORK"; fi
}
trap recipe_cleanup EXIT

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

step() { printf -- '-- %s (at %d s)\n' "$1" "$SECONDS"; CURRENT_TEST=$1; }

# render_node NAME DSN: conf/smqd-pg.conf.example with this node's addresses, dsn and
# secrets; every key it replaces must be there, so the example cannot drift from the test.
render_node() {
    local name=$1 dsn=$2 dir=$WORK/$1 n
    mkdir -p "$dir"
    awk -v mns="127.0.0.1:${MNS_PORT[$name]}" -v adm="127.0.0.1:${ADMIN_PORT[$name]}" \
        -v dsn="$dsn" -v id="$name" -v ak="$MNS_AK_DEFAULT" -v sk="$MNS_SK_DEFAULT" \
        -v tok="$TOKEN" -v rtok="$RTOKEN" -v cnt="$dir/replaced" '
        /^\[/ { sect = $0 }
        { k = "" }
        sect == "[server]" && /^listen = / { k = "listen"; v = mns }
        sect == "[admin]" && /^listen = / { k = "listen"; v = adm }
        /^dsn = / { k = "dsn"; v = dsn }
        /^node_id = / { k = "node_id"; v = id }
        /^access_key_id = / { k = "access_key_id"; v = ak }
        /^access_key_secret = / { k = "access_key_secret"; v = sk }
        /^token = / { k = "token"; v = tok }
        /^read_token = / { k = "read_token"; v = rtok }
        /^trusted_proxies = / { k = "trusted_proxies"; v = "127.0.0.1" }
        k != "" { print k " = " v; n++ }
        k == "" { print }
        END { print n > cnt }' "$ROOT/conf/smqd-pg.conf.example" >"$dir/smqd.conf"
    chmod 600 "$dir/smqd.conf"
    n=$(cat "$dir/replaced")
    [ "$n" = 9 ] || not_ok "conf/smqd-pg.conf.example: replaced $n of 9 keys"
    "$SMQD_BIN" -t -c "$dir/smqd.conf" >"$dir/check.out" 2>&1 \
        && ok "smqd -t accepts node $name's configuration" \
        || not_ok "smqd -t rejects node $name's configuration" "$(tail -5 "$dir/check.out")"
}

node_start() {
    local name=$1 i
    # In its own directory: nothing it might write lands in the caller's.
    ( cd "$WORK/$name" && exec "$SMQD_BIN" -c "$WORK/$name/smqd.conf" ) </dev/null >>"$WORK/$name/smqd.log" 2>&1 &
    NODE_PID[$name]=$!
    SERVER_PIDS+=("${NODE_PID[$name]}")
    start_watchdog "${NODE_PID[$name]}"
    NODE_WD[$name]=$SMQD_WATCHDOG_PID
    for i in $(seq 100); do
        [ "$(probe "$name" health)" = 200 ] && return 0
        kill -0 "${NODE_PID[$name]}" 2>/dev/null || break
        sleep 0.1
    done
    not_ok "node $name: no /health 200 within 10 s" "$(tail -20 "$WORK/$name/smqd.log")"
}

# probe NAME health|ready [MAX_S]: the admin listener's status code (000: no answer). A dead node
# refuses the connection at once; a live one may take more than a second to answer on a
# loaded machine or under ASan, and a 000 then would read as "not active" in the single-shot
# checks (active_node, "still a standby"): 5 s before giving up (or the third argument's seconds).
probe() {
    curl -s -o /dev/null -w '%{http_code}' --noproxy '*' --max-time "${3:-5}" \
         -H "Authorization: Bearer $RTOKEN" "http://127.0.0.1:${ADMIN_PORT[$1]}/$2" 2>/dev/null
}

active_node() {   # the node whose /ready is 200, or nothing
    local n
    for n in a b; do [ "$(probe "$n" ready)" = 200 ] && { echo "$n"; return 0; }; done
    return 0
}

# sampler: both nodes' /ready every 250 ms, one line "a b" per sample, until the run ends.
sampler() {
    while [ -e "$WORK/sampling" ] && [ "$SECONDS" -lt "$RECIPE_MAX_S" ]; do
        # 1 s at most: both answers of a sample must come from about the same moment for
        # "two nodes active at once" to mean something (a late one is dropped as 000).
        echo "$(probe a ready 1) $(probe b ready 1)" >>"$WORK/ready.samples"
        sleep 0.25
    done
}

haproxy_start() {
    LB_PORT=$(free_port)
    sed -e "s|^    log /dev/log local0|    log stderr format raw local0|" \
        -e "s|stats socket /run/haproxy/admin.sock|stats socket $WORK/haproxy.sock|" \
        -e "s|^    bind :8080|    bind 127.0.0.1:$LB_PORT|" \
        -e "s|replace-with-another-long-random-token|$RTOKEN|" \
        -e "s|192.0.2.11:8080 check port 8081|127.0.0.1:${MNS_PORT[a]} check port ${ADMIN_PORT[a]}|" \
        -e "s|192.0.2.12:8080 check port 8081|127.0.0.1:${MNS_PORT[b]} check port ${ADMIN_PORT[b]}|" \
        "$ROOT/conf/haproxy-smqd.cfg" >"$WORK/haproxy.cfg"
    if ! haproxy -c -q -f "$WORK/haproxy.cfg" >"$WORK/haproxy.check" 2>&1; then
        not_ok "haproxy -c rejects the generated configuration" "$(cat "$WORK/haproxy.check")"
        return 1
    fi
    haproxy -db -f "$WORK/haproxy.cfg" </dev/null >>"$WORK/haproxy.log" 2>&1 &
    HAPROXY_PID=$!
    SERVER_PIDS+=("$HAPROXY_PID")
    start_watchdog "$HAPROXY_PID"
    SMQD_ADDR=127.0.0.1:$LB_PORT
    SMQD_SCHEME=http
    ok "HAProxy listens on $SMQD_ADDR"
}

# lb_up: the servers HAProxy has up, from its stats socket ("show servers state": the 6th
# field, srv_op_state, is 2 for a running server).
lb_up() {
    python3 - "$WORK/haproxy.sock" <<'EOF' 2>/dev/null | awk '$2 == "smqd" && $6 == 2 { print $4 }'
import socket, sys
s = socket.socket(socket.AF_UNIX); s.settimeout(2); s.connect(sys.argv[1])
s.sendall(b"show servers state smqd\n"); out = b""
while True:
    b = s.recv(65536)
    if not b: break
    out += b
sys.stdout.write(out.decode())
EOF
}

# send BODY: one SendMessage through HAProxy; a 201 goes to the ledger of acknowledged sends.
send() {
    MNS_MAX_TIME=15 mns_request POST "/queues/$QUEUE/messages" \
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Message xmlns=\"$MNS_NS/\"><MessageBody>$1</MessageBody></Message>"
    if [ "$RESP_STATUS" = 201 ]; then
        echo "$1" >>"$WORK/acked"
        echo "$(now_ms) $1 201" >>"$WORK/sends.log"
    else
        echo "$(now_ms) $1 $RESP_STATUS $(xml_get Code 2>/dev/null)" >>"$WORK/sends.log"
    fi
    case $RESP_STATUS in 201|500|503) ;; *) BAD_STATUS+=" $RESP_STATUS" ;; esac
    [ "$RESP_STATUS" = 201 ]
}

# sends_through PHASE BGPID: sends while BGPID runs and then until RECIPE_SENDS sends in a
# row succeeded (bounded by 120 s).  Sets OUTAGE_MS: from the first failed send to the
# next success (0 if none failed), RECOVER_MS: when that success came, FIRST_OK_MS: when
# the first success came, FAILED: the failed sends.  After a kill -9 or an exit of the
# active, the first success is the new active's: the takeover ends at
# FIRST_OK_MS, whether or not a send failed.
sends_through() {
    local phase=$1 bg=$2 i=0 run=0 first_fail="" end=$(( SECONDS + 120 ))
    OUTAGE_MS=0 FAILED=0 RECOVER_MS="" FIRST_OK_MS=""
    while [ "$SECONDS" -lt "$end" ]; do
        i=$((i + 1))
        if send "$phase-$i"; then
            run=$((run + 1))
            [ -n "$FIRST_OK_MS" ] || FIRST_OK_MS=$(now_ms)
            if [ -n "$first_fail" ] && [ -z "$RECOVER_MS" ]; then
                RECOVER_MS=$(now_ms)
                OUTAGE_MS=$(( RECOVER_MS - first_fail ))
            fi
        else
            run=0 FAILED=$((FAILED + 1))
            [ -n "$first_fail" ] || first_fail=$(now_ms)
            sleep 0.1
        fi
        if [ -z "$bg" ] || ! kill -0 "$bg" 2>/dev/null; then
            [ "$run" -ge "$RECIPE_SENDS" ] && return 0
        fi
    done
    return 1
}

TIMES=""
times_add() { TIMES+="   $1"$'\n'; }
BAD_STATUS=""

# step_systemd: conf/smqd.service with the drop-in conf/smqd.service.d/postgresql.conf, as
# a node installs them, loads in systemd-analyze verify (in a throw-away root, as
# tests/packaging/test_deb.sh does) and the drop-in is applied without a complaint.
step_systemd() {
    step systemd
    local r=$WORK/sdroot out
    mkdir -p "$r/lib/systemd/system" "$r/etc/systemd/system/smqd.service.d" "$r/usr/sbin" "$r/bin"
    cp -a /lib/systemd/system/. "$r/lib/systemd/system/"
    cp "$ROOT/conf/smqd.service" "$r/lib/systemd/system/"
    cp "$ROOT/conf/smqd.service.d/postgresql.conf" "$r/etc/systemd/system/smqd.service.d/"
    cp "$SMQD_BIN" "$r/usr/sbin/smqd"
    cp /bin/kill "$r/bin/kill"
    if out=$(systemd-analyze verify --root="$r" smqd.service 2>&1) && [ -z "$out" ]; then
        ok "systemd-analyze verify accepts smqd.service with the drop-in"
    else
        not_ok "systemd-analyze verify smqd.service with the drop-in" "$out"
    fi
    # Complaints about a drop-in are only logged at debug level.
    out=$(SYSTEMD_LOG_LEVEL=debug systemd-analyze verify --root="$r" smqd.service 2>&1)
    if grep -q 'DropIn Path: .*smqd.service.d/postgresql.conf' <<<"$out" \
       && ! grep -E 'postgresql.conf:[0-9]+:' <<<"$out" >/dev/null; then
        ok "the drop-in postgresql.conf is applied without a complaint"
    else
        not_ok "the drop-in postgresql.conf" "$(grep -E 'postgresql.conf' <<<"$out" | head -5)"
    fi
    rm -rf "$r"
}

step_formation() {
    step formation
    local t0=$SECONDS
    if ! DSN=$(bash "$HERE/pgaf-cluster.sh" start "$PGDIR" "$RECIPE_MAX_S" 2>"$WORK/pgaf-start.err"); then
        not_ok "pgaf-cluster.sh start" "$(tail -20 "$WORK/pgaf-start.err")"
        finish
    fi
    ok "pg_auto_failover formation: monitor, primary and synchronous standby"
    times_add "formation up: $((SECONDS - t0)) s"
}

step_nodes() {
    step nodes
    local n t0 act="" other
    for n in a b; do
        MNS_PORT[$n]=$(free_port)
        ADMIN_PORT[$n]=$(free_port)
        render_node "$n" "$DSN"
    done
    t0=$(now_ms)
    node_start a
    node_start b
    while [ $(( $(now_ms) - t0 )) -lt 30000 ]; do
        act=$(active_node)
        [ -n "$act" ] && break
        sleep 0.2
    done
    if [ -z "$act" ]; then
        not_ok "no node became active within 30 s" "$(tail -n 15 "$WORK/a/smqd.log" "$WORK/b/smqd.log")"
        finish
    fi
    ok "node $act is active"
    times_add "first node active: $(( $(now_ms) - t0 )) ms after start"
    if [ "$act" = a ]; then other=b; else other=a; fi
    assert_eq "standby $other: /ready" 503 "$(probe "$other" ready)"
    assert_eq "standby $other: /health" 200 "$(probe "$other" health)"
    SMQD_ADDR=127.0.0.1:${MNS_PORT[$other]}   # the standby itself, not HAProxy (not up yet)
    mns_request GET /queues
    assert_error "standby $other: MNS request" 503 ServiceUnavailable
    : >"$WORK/sampling"
    sampler &
    SAMPLER_PID=$!
}

step_queue() {
    step queue
    local end=$(( SECONDS + 15 ))
    haproxy_start || finish
    while [ "$SECONDS" -lt "$end" ]; do
        mns_request PUT "/queues/$QUEUE" \
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Queue xmlns=\"$MNS_NS/\"><VisibilityTimeout>300</VisibilityTimeout></Queue>"
        case $RESP_STATUS in 201|204) break ;; esac
        sleep 0.2
    done
    assert_status "CreateQueue through HAProxy" 201
    # HAProxy starts with every server up until its checks fail: wait for them to have
    # marked the standby down, so that steady sends all go to the active.
    end=$(( SECONDS + 15 ))
    until [ "$(lb_up)" = "$(active_node)" ] || [ "$SECONDS" -ge "$end" ]; do sleep 0.2; done
    assert_eq "HAProxy has only the active node up" "$(active_node)" "$(lb_up)"
}

step_steady() {
    step steady
    local i failed=0 t0
    t0=$(now_ms)
    for (( i = 1; i <= RECIPE_SENDS; i++ )); do send "steady-$i" || failed=$((failed + 1)); done
    assert_eq "$RECIPE_SENDS sends through HAProxy, none failed" 0 "$failed"
    times_add "$RECIPE_SENDS sends, one at a time: $(( $(now_ms) - t0 )) ms"
}

step_pg_failover() {
    step pg_failover
    local fo t0=$SECONDS rc
    bash "$HERE/pgaf-cluster.sh" failover "$PGDIR" >"$WORK/pg-failover.out" 2>&1 &
    fo=$!
    sends_through pgfo "$fo"; rc=$?
    wait "$fo" && ok "pg_autoctl perform failover: the standby is primary" \
               || not_ok "pgaf-cluster.sh failover" "$(tail -20 "$WORK/pg-failover.out")"
    [ "$rc" = 0 ] && ok "sends succeed again after the PostgreSQL failover" \
                  || not_ok "sends did not recover within 120 s of the PostgreSQL failover"
    times_add "PostgreSQL failover: $(grep -o 'in [0-9]* s' "$WORK/pg-failover.out")$(grep -q 'perform failover returned non-zero' "$WORK/pg-failover.out" && echo ' (pg_autoctl perform failover returned non-zero: see pg-failover.out)'), sends failed: $FAILED, client-visible outage: $OUTAGE_MS ms"
    times_add "  (phase took $((SECONDS - t0)) s; active after it: $(active_node))"
}

step_kill() {
    step kill_active
    local act="" new end=$(( SECONDS + 30 )) t_kill
    until [ -n "$act" ] || [ "$SECONDS" -ge "$end" ]; do act=$(active_node); sleep 0.2; done
    [ -n "$act" ] || { not_ok "no active node to kill"; return 0; }
    # A receipt handle the victim issued, for the node that takes over.
    mns_request GET "/queues/$QUEUE/messages"
    assert_status "ReceiveMessage through HAProxy (node $act)" 200
    OLD_HANDLE=$(xml_get ReceiptHandle)
    OLD_ISSUER=$act
    xml_get MessageBody >>"$WORK/received"
    echo >>"$WORK/received"
    kill -KILL "${NODE_PID[$act]}"
    wait "${NODE_PID[$act]}" 2>/dev/null
    kill "${NODE_WD[$act]}" 2>/dev/null
    t_kill=$(now_ms)
    KILLED=$act
    if sends_through kill ""; then ok "sends succeed again after kill -9 of active node $act"
    else not_ok "sends did not recover within 120 s of killing node $act"; fi
    new=$(active_node)
    [ -n "$new" ] && [ "$new" != "$act" ] && ok "node $new took over" \
        || not_ok "after the kill, the active node is '$new'"
    [ -n "$FIRST_OK_MS" ] && [ $(( FIRST_OK_MS - t_kill )) -lt 15000 ] \
        && ok "takeover (kill -9 to the first 201 through HAProxy) under 15 s" \
        || not_ok "takeover took $(( ${FIRST_OK_MS:-0} - t_kill )) ms"
    times_add "kill -9 of $act to the first 201 through HAProxy (node $new): $(( ${FIRST_OK_MS:-0} - t_kill )) ms, sends failed: $FAILED"
    mns_request DELETE "/queues/$QUEUE/messages?ReceiptHandle=$OLD_HANDLE"
    assert_status "a receipt handle from node $OLD_ISSUER deletes on node $new" 204
}

step_restart() {
    step restart_victim
    local t0 ready=""
    t0=$(now_ms)
    node_start "$KILLED"
    while [ $(( $(now_ms) - t0 )) -lt 30000 ]; do
        [ "$(probe "$KILLED" health)" = 200 ] && [ "$(probe "$KILLED" ready)" = 503 ] \
            && { ready=1; break; }
        sleep 0.2
    done
    [ -n "$ready" ] && ok "restarted node $KILLED is a standby" \
                    || not_ok "restarted node $KILLED: /ready $(probe "$KILLED" ready) after 30 s"
    sleep 2
    assert_eq "restarted node $KILLED is still a standby 2 s later" 503 "$(probe "$KILLED" ready)"
    times_add "restarted node back as a standby: $(( $(now_ms) - t0 )) ms"
}

# handles_xml H...: a BatchDeleteMessage body.
handles_xml() {
    local x="<?xml version=\"1.0\" encoding=\"UTF-8\"?><ReceiptHandles xmlns=\"$MNS_NS/\">" h
    for h in "$@"; do x+="<ReceiptHandle>$h</ReceiptHandle>"; done
    printf '%s</ReceiptHandles>' "$x"
}

# step_planned_stop: SIGTERM of the active (systemctl stop) releases its lease, so the
# standby takes over without waiting for it to run out.
step_planned_stop() {
    step planned_stop
    local act new st t_stop t_gone
    act=$(active_node)
    [ -n "$act" ] || { not_ok "no active node to stop"; return 0; }
    kill -TERM "${NODE_PID[$act]}"
    t_stop=$(now_ms)
    wait_pid_gone "${NODE_PID[$act]}" 10000 || not_ok "node $act did not stop within 10 s of SIGTERM"
    t_gone=$(now_ms)
    wait "${NODE_PID[$act]}" 2>/dev/null; st=$?
    kill "${NODE_WD[$act]}" 2>/dev/null
    assert_eq "active node $act stops on SIGTERM with status 0" 0 "$st"
    grep -q 'lease released at epoch' "$WORK/$act/smqd.log" && ok "node $act released its lease" \
        || not_ok "node $act did not log 'lease released'" "$(tail -n 10 "$WORK/$act/smqd.log")"
    STOPPED=$act
    sends_through stop "" || not_ok "sends did not recover within 120 s of stopping node $act"
    new=$(active_node)
    assert_eq "the other node is active" "$([ "$act" = a ] && echo b || echo a)" "$new"
    # Had the lease run out instead, the takeover would come a whole ttl after the last renewal.
    [ -n "$FIRST_OK_MS" ] && [ $(( FIRST_OK_MS - t_gone )) -lt "$(( LEASE_TTL_S * 1000 ))" ] \
        && ok "takeover after the stop within the lease ttl" \
        || not_ok "takeover after the stop took $(( ${FIRST_OK_MS:-0} - t_gone )) ms"
    times_add "SIGTERM of $act to the first 201 through HAProxy (node $new): $(( ${FIRST_OK_MS:-0} - t_stop )) ms, of which its drain $(( t_gone - t_stop )) ms; sends failed: $FAILED"
}

# queue_counts: "ACTIVE INACTIVE DELAYED" messages of the queue by its own count
# (GetQueueAttributes through HAProxy), or nothing if it did not answer 200.
queue_counts() {
    mns_request GET "/queues/$QUEUE"
    [ "$RESP_STATUS" = 200 ] || return 1
    echo "$(xml_get ActiveMessages) $(xml_get InactiveMessages) $(xml_get DelayMessages)"
}

pg_port() { sed -n "s/^$1 //p" "$PGDIR/ports"; }

# db_lookup NODE FILE: what the database on formation node NODE holds for each body in FILE
# (one a line): its smq_msg row (seq, dequeue count, visible or for how long still
# invisible: received and not deleted), a body without a row (torn), or nothing at all
# (GONE).  The tables of src/store/pg/pg_schema.c, read as tests/failover/pgcheck.js does.
db_lookup() {
    local port list
    port=$(pg_port "$1")
    list=$(paste -sd, "$2")
    psql -X -qAt -h 127.0.0.1 -p "$port" -U postgres -d smqd -v ON_ERROR_STOP=1 \
         -v list="$list" 2>&1 <<'EOF'
WITH want AS (SELECT unnest(string_to_array(:'list', ',')) AS body),
     now AS (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS ms)
SELECT w.body || ' ' || CASE
         WHEN b.seq IS NULL THEN 'GONE: no smq_body row'
         WHEN m.seq IS NULL THEN 'torn: smq_body seq ' || b.seq || ' has no smq_msg row'
         ELSE 'row: queue ' || coalesce(q.name, m.queue_id::text) || ' seq ' || m.seq
              || ', dequeued ' || m.dequeue_count || ' times, '
              || CASE WHEN m.visible_ms > now.ms
                      THEN 'invisible for another '
                           || round((m.visible_ms - now.ms) / 1000.0, 1) || ' s'
                      ELSE 'visible for ' || round((now.ms - m.visible_ms) / 1000.0, 1)
                           || ' s' END
       END
  FROM want w CROSS JOIN now
  LEFT JOIN smq_body b ON convert_from(b.body, 'UTF8') = w.body
  LEFT JOIN smq_msg m ON m.seq = b.seq
  LEFT JOIN smq_queue q ON q.id = m.queue_id
 ORDER BY w.body;
EOF
}

# diagnose_missing: for the acknowledged sends in $WORK/missing, what tells a lost message
# from one the drain did not get: each one's rows on both formation nodes (the primary's
# is the truth; GONE there is a lost acknowledged message), when it was acknowledged, the
# queue's own count, and the monitor's history (a primary in wait_primary acknowledged
# COMMITs that the standby had not confirmed).
diagnose_missing() {
    local primary n
    n=$(wc -l <"$WORK/missing")
    echo "missing ($n): $(head -60 "$WORK/missing" | tr '\n' ' ')$([ "$n" -gt 60 ] && echo ...)"
    echo "the drain ended $DRAIN_END; the queue's count then (active inactive delayed): ${DRAIN_COUNTS:-none}"
    primary=$(bash "$HERE/pgaf-cluster.sh" primary "$PGDIR" 2>/dev/null)
    for n in node1 node2; do
        echo "database on $n$([ "$n" = "$primary" ] && echo " (primary)"):"
        db_lookup "$n" "$WORK/missing" | sed 's/^/  /'
    done
    echo "acknowledged (epoch ms, body, status):"
    grep -wFf "$WORK/missing" "$WORK/sends.log" | sed 's/^/  /'
    echo "every send (body:status): $(awk '{print $2 ":" $3}' "$WORK/sends.log" | tr '\n' ' ')"
    bash "$HERE/pgaf-cluster.sh" events "$PGDIR" >"$WORK/pgaf-events.txt" 2>&1
    echo "pg_auto_failover events (epoch ms, UTC, node, reported/goal, LSN, description):"
    sed 's/^/  /' "$WORK/pgaf-events.txt"
}

# step_drain: receives (16 at a time) and batch-deletes until the queue is empty by its own
# count (GetQueueAttributes: no active, inactive or delayed message), not merely until
# receives come back empty: a message that was received and not deleted is inactive and
# comes back only when its visibility timeout has passed, which a 404 says nothing about.
# Bounded by what is left of RECIPE_MAX_S (the watchdogs stop the servers then).
step_drain() {
    step drain
    local empties=0 errors=0 end left missing acked received counts code bodies
    local -a handles c
    left=$(( RECIPE_MAX_S - SECONDS - 20 ))
    [ "$left" -gt 30 ] || left=30
    end=$(( SECONDS + left ))
    DRAIN_END="at its deadline ($left s)"
    DRAIN_COUNTS=""
    while [ "$SECONDS" -lt "$end" ]; do
        mns_request GET "/queues/$QUEUE/messages?numOfMessages=16&waitseconds=1"
        code="" bodies=""
        if [ "$RESP_STATUS" = 200 ]; then
            bodies=$(printf '%s' "$RESP_BODY" | grep -o '<MessageBody>[^<]*</MessageBody>' \
                     | sed 's/<[^>]*>//g')
        else
            code=$(xml_get Code)
        fi
        echo "$(now_ms) receive $RESP_STATUS $code $(printf '%s' "$bodies" | tr '\n' ' ')" \
            >>"$WORK/drain.log"
        case $RESP_STATUS:$code in
        200:)
            empties=0
            printf '%s\n' "$bodies" >>"$WORK/received"
            mapfile -t handles < <(printf '%s' "$RESP_BODY" | grep -o '<ReceiptHandle>[^<]*</ReceiptHandle>' \
                                   | sed 's/<[^>]*>//g')
            mns_request DELETE "/queues/$QUEUE/messages" "$(handles_xml "${handles[@]}")"
            echo "$(now_ms) delete $RESP_STATUS" >>"$WORK/drain.log"
            [ "$RESP_STATUS" = 204 ] || errors=$((errors + 1)) ;;
        404:MessageNotExist)
            empties=$((empties + 1))
            [ "$empties" -ge 2 ] || continue
            # Nothing to receive now: done if nothing is left at all.
            if counts=$(queue_counts); then
                DRAIN_COUNTS=$counts
                echo "$(now_ms) counts $counts" >>"$WORK/drain.log"
                read -ra c <<<"$counts"
                if [ "${c[0]:-x}" = 0 ] && [ "${c[1]:-x}" = 0 ] && [ "${c[2]:-x}" = 0 ]; then
                    DRAIN_END="with the queue empty by its count"
                    break
                fi
            else
                errors=$((errors + 1))
            fi ;;
        *) errors=$((errors + 1)); sleep 0.2 ;;
        esac
    done
    assert_eq "drain: receives, batch deletes and GetQueueAttributes without an error" 0 "$errors"
    assert_eq "drain: the queue is empty by its count at the end (active inactive delayed)" \
        "0 0 0" "${DRAIN_COUNTS:-none}"
    sort -u "$WORK/acked" >"$WORK/acked.sorted"
    sed '/^$/d' "$WORK/received" | sort -u >"$WORK/received.sorted"
    missing=$(comm -23 "$WORK/acked.sorted" "$WORK/received.sorted")
    acked=$(wc -l <"$WORK/acked.sorted")
    received=$(wc -l <"$WORK/received.sorted")
    if [ -z "$missing" ]; then
        ok "every one of $acked acknowledged sends was received ($received distinct bodies received)"
    else
        printf '%s\n' "$missing" >"$WORK/missing"
        not_ok "acknowledged sends not received: $(wc -l <"$WORK/missing") of $acked" \
            "$(diagnose_missing)"
    fi
    assert_eq "failed sends were answered 503 or 500 only" "" "$BAD_STATUS"
    times_add "sends answered: $(awk '{print $3}' "$WORK/sends.log" | sort | uniq -c | tr '\n' ' ' | tr -s ' ')"
    times_add "drain: ended $DRAIN_END after $(grep -c ' receive ' "$WORK/drain.log") receives"
}

step_invariants() {
    step invariants
    rm -f "$WORK/sampling"
    wait "$SAMPLER_PID" 2>/dev/null
    SAMPLER_PID=""
    local samples both
    samples=$(wc -l <"$WORK/ready.samples")
    both=$(grep -c '^200 200$' "$WORK/ready.samples")
    assert_eq "at most one node /ready 200 in each of $samples samples" 0 "$both"
}

step_stop() {
    step stop
    local n st
    for n in a b; do
        [ "$n" = "$STOPPED" ] && continue
        kill -TERM "${NODE_PID[$n]}" 2>/dev/null
        if wait_pid_gone "${NODE_PID[$n]}" 10000; then
            wait "${NODE_PID[$n]}" 2>/dev/null; st=$?
            assert_eq "node $n stops on SIGTERM with status 0" 0 "$st"
        else
            not_ok "node $n did not stop within 10 s of SIGTERM"
        fi
    done
    kill -TERM "$HAPROXY_PID" 2>/dev/null
    # The monitor's history, for the times (and the logs kept after a failure): every
    # goal of wait_primary is a primary whose COMMITs stopped waiting for the standby,
    # expected once at the start (before the standby joined) and once in the failover
    # (the new primary, before the old one is back); more means the standby looked
    # unhealthy to the monitor.
    bash "$HERE/pgaf-cluster.sh" events "$PGDIR" >"$WORK/pgaf-events.txt" 2>&1
    times_add "pg_auto_failover: goal wait_primary (COMMITs not waiting for the standby) at: $(awk '{ split($4, st, "/") }
        st[2] == "wait_primary" && goal[$3] != "wait_primary" { printf "%s %s; ", $2, $3 }
        { goal[$3] = st[2] }' "$WORK/pgaf-events.txt")"
    bash "$HERE/pgaf-cluster.sh" stop "$PGDIR" && ok "formation stopped"
}

echo "recipe: $WORK"
step_systemd
step_formation
step_nodes
step_queue
step_steady
step_pg_failover
step_kill
step_restart
step_planned_stop
step_drain
step_invariants
step_stop
echo "times:"
printf '%s' "$TIMES"
finish
