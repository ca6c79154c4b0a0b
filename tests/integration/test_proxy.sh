#!/usr/bin/env bash
# test_proxy.sh — smqd behind a real HAProxy on loopback (issue 40): HAProxy configured
# from the shipped conf/haproxy-smqd.cfg (only its addresses, token and stats socket
# replaced, as tests/recipe/run.sh does) on 127.0.0.1, smqd trusting it
# ([server] trusted_proxies = 127.0.0.1) with a per-address cap far below the load, and
# every client on 127.0.0.2.  Checked:
#   - 1,000 consumers long-polling through HAProxy at once (all parked in smqd before the
#     first send) while 20 producers send 1,000 messages: every message is received and
#     deleted exactly once, and nothing is refused (no 5xx, no closed connection);
#   - the request log lines name the real client (client=127.0.0.2 proxy=127.0.0.1),
#     also when the client sent an X-Forwarded-For of its own through HAProxy;
#   - an X-Forwarded-For sent straight to smqd is not believed (client=127.0.0.2, no
#     proxy=, the forged address nowhere in the log);
#   - the per-address cap still holds for clients that are not trusted proxies, and
#     /metrics counts what it refused.
# Run: SMQD_BIN=build/smqd bash tests/integration/test_proxy.sh
#
# Kept fast: waitseconds=5, one node process for the whole load (proxy_load.js).

set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"

require_tools curl openssl xmllint md5sum base64 awk sed haproxy node python3
require_bin

CONSUMERS=${PROXY_CONSUMERS:-1000}
MESSAGES=${PROXY_MESSAGES:-1000}
PER_IP=64                     # far below CONSUMERS: only the proxy's exemption lets them in
CLIENT=127.0.0.2
QUEUE=behind-proxy
RTOKEN=proxy-read-token-$RANDOM$RANDOM
HAPROXY_PID=""
LB_ADDR=""

# 1,000 consumers are 1,000 sockets in node, 2,000 in HAProxy, 1,000 in smqd.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

start_smqd() {
    new_server_dir
    cat >>"$NEW_DIR/smqd.conf" <<EOF
token = proxy-admin-token-$RANDOM$RANDOM
read_token = $RTOKEN
[server]
threads = 2
trusted_proxies = 127.0.0.1
[limits]
max_connections = 2048
max_connections_per_ip = $PER_IP
EOF
    smqd_start "$NEW_DIR"
}

# The shipped HAProxy configuration, pointed at this smqd; stopped by PID at the end.
haproxy_start() {
    local port cfg=$SUITE_TMP/haproxy.cfg
    port=$(free_port)
    sed -e "s|^    log /dev/log local0|    log stderr format raw local0|" \
        -e "s|stats socket /run/haproxy/admin.sock.*|stats socket $SUITE_TMP/haproxy.sock|" \
        -e "s|^    bind :8080|    bind 127.0.0.1:$port|" \
        -e "s|replace-with-another-long-random-token|$RTOKEN|" \
        -e "s|192.0.2.11:8080 check port 8081|$SMQD_ADDR check port ${SMQD_ADMIN##*:}|" \
        -e "/192.0.2.12:8080/d" \
        "$ROOT/conf/haproxy-smqd.cfg" >"$cfg"
    if ! haproxy -c -q -f "$cfg" >"$SUITE_TMP/haproxy.check" 2>&1; then
        not_ok "haproxy -c accepts the configuration made from conf/haproxy-smqd.cfg" \
            "$(cat "$SUITE_TMP/haproxy.check")"
        return 1
    fi
    haproxy -db -f "$cfg" </dev/null >>"$SUITE_TMP/haproxy.log" 2>&1 &
    HAPROXY_PID=$!
    SERVER_PIDS+=("$HAPROXY_PID")
    start_watchdog "$HAPROXY_PID"
    LB_ADDR=127.0.0.1:$port
    wait_for "HAProxy listens on $LB_ADDR" 5000 \
        curl -s -o /dev/null --noproxy '*' --interface "$CLIENT" --max-time 1 "http://$LB_ADDR/"
}

haproxy_stop() {
    [ -n "$HAPROXY_PID" ] || return 0
    kill -TERM "$HAPROXY_PID" 2>/dev/null
    wait_pid_gone "$HAPROXY_PID" 5000 || kill -KILL "$HAPROXY_PID" 2>/dev/null
    wait "$HAPROXY_PID" 2>/dev/null
    HAPROXY_PID=""
}

# via_lb CMD...: a request of lib.sh through HAProxy from the client's address.
via_lb() { SMQD_ADDR=$LB_ADDR MNS_INTERFACE=$CLIENT "$@"; }

metric() {
    curl -s --noproxy '*' --max-time 5 -H "Authorization: Bearer $RTOKEN" \
        "http://$SMQD_ADMIN/metrics" | awk -v m="$1" '$1 == m { print $2 }'
}

t_setup() {
    via_lb create_queue "$QUEUE"
}

t_thousand_long_polls() {
    local out t0
    t0=$(now_ms)
    out=$(ADMIN_TOKEN=$RTOKEN timeout 60 node "$HERE/proxy_load.js" load --target "$LB_ADDR" --local "$CLIENT" \
          --queue "$QUEUE" --consumers "$CONSUMERS" --messages "$MESSAGES" --wait 5 \
          --producers 20 --admin "$SMQD_ADMIN" --deadline-ms 40000)
    local rc=$?
    echo "# load: $out in $(( $(now_ms) - t0 )) ms"
    assert_eq "$CONSUMERS consumers and $MESSAGES messages through HAProxy: all delivered once, none refused" 0 "$rc"
    assert_match "all $CONSUMERS polls were parked in smqd at once" '"parked":[0-9]+' "$out"
    assert_match "no duplicate, none missing, nothing refused" \
        "\"sent\":$MESSAGES,\"received\":$MESSAGES,\"duplicates\":0,\"missing\":0,\"refused\":\{\}" "$out"
    assert_eq "the per-address cap refused nothing of the trusted proxy's" 0 \
        "$(metric 'smqd_connections_refused_total{cap="max_connections_per_ip"}')"
    assert_eq "the queue is empty" 0 "$(via_lb queue_attr "$QUEUE" ActiveMessages)"
}

t_log_names_client() {
    local lines wrong
    via_lb mns_request GET "/queues/$QUEUE" -H 'X-Forwarded-For: 198.51.100.77'
    assert_status "GetQueueAttributes through HAProxy with a client-made X-Forwarded-For" 200
    wait_for "its log line names the real client and the proxy" 3000 \
        grep -q "request id=$RESP_ID .* client=$CLIENT proxy=127.0.0.1 method=GET resource=/queues/$QUEUE\$" "$SMQD_LOG"
    lines=$(grep -c 'request id=' "$SMQD_LOG")
    wrong=$(grep 'request id=' "$SMQD_LOG" | grep -vc "client=$CLIENT proxy=127.0.0.1 method=")
    assert_range "request lines logged" $(( 2 * MESSAGES + CONSUMERS )) 1000000 "$lines"
    assert_eq "every request line names client=$CLIENT through proxy=127.0.0.1" 0 "$wrong"
    assert_eq "the address the client wrote is not believed through the proxy" 0 \
        "$(grep -c '198\.51\.100\.77' "$SMQD_LOG")"
}

t_forged_direct() {
    MNS_INTERFACE=$CLIENT mns_request GET "/queues/$QUEUE" -H 'X-Forwarded-For: 203.0.113.66'
    assert_status "GetQueueAttributes straight to smqd with a forged X-Forwarded-For" 200
    wait_for "its log line names the peer, without proxy=" 3000 \
        grep -q "request id=$RESP_ID .* client=$CLIENT method=GET resource=/queues/$QUEUE\$" "$SMQD_LOG"
    assert_eq "the forged address is nowhere in the log" 0 "$(grep -c '203\.0\.113\.66' "$SMQD_LOG")"
    # A refused request is logged with its client too (no signature: 400 before anything).
    curl -s -o /dev/null --noproxy '*' --interface "$CLIENT" --max-time 5 \
        -H 'X-Forwarded-For: 203.0.113.67' "http://$SMQD_ADDR/queues/$QUEUE"
    wait_for "an unsigned request's line names its client" 3000 \
        grep -q "status=400 code=MissingAuthorizationHeader .* client=$CLIENT method=GET resource=/queues/$QUEUE\$" "$SMQD_LOG"
    assert_eq "and never the address it claimed" 0 "$(grep -c '203\.0\.113\.67' "$SMQD_LOG")"
}

t_per_address_cap() {
    local out
    out=$(timeout 20 node "$HERE/proxy_load.js" hold --target "$SMQD_ADDR" --local "$CLIENT" \
          --count $(( PER_IP + 36 )))
    assert_eq "a client that is not a trusted proxy keeps its cap of $PER_IP" \
        "{\"open\":$PER_IP,\"closed\":36}" "$out"
    assert_eq "/metrics counts the connections the per-address cap refused" 36 \
        "$(metric 'smqd_connections_refused_total{cap="max_connections_per_ip"}')"
}

SUITE_T0=$(now_ms)
start_smqd || finish
haproxy_start || finish
run_test t_setup
run_test t_thousand_long_polls
run_test t_log_names_client
run_test t_forged_direct
run_test t_per_address_cap
haproxy_stop
CURRENT_TEST=shutdown
smqd_stop
echo "# test_proxy.sh: $(( ($(now_ms) - SUITE_T0) / 1000 )) s"
finish
