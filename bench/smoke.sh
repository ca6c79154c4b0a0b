#!/usr/bin/env bash
# smoke.sh — the benchmark in CI form (ctest bench.smoke): every smqd-loadgen
# scenario for a couple of seconds against a real smqd on 127.0.0.1, and a
# publish to a topic with 10 queue subscriptions, and bench/push.sh's short form (HTTP
# pushes to a loopback sink next to queue fan-out, 1 and 10 subscriptions, 1 s runs), so the benchmark cannot rot.  It fails on errors, lost requests, zero throughput,
# a long poll that was never woken, or an unclean server exit — never on
# speed (CI machines are noisy; there is no timed assertion here).
#
#   SMQD_BIN=build/smqd LOADGEN=build/bench/smqd-loadgen SINK=build/bench/smqd-bench-sink \
#     bench/smoke.sh [SECONDS]
#
# sync = full (the default), the same settings as bench/loadgen.sh.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
secs=${1:-2}
smqd=${SMQD_BIN:?set SMQD_BIN to the smqd binary}
lg=${LOADGEN:?set LOADGEN to the smqd-loadgen binary}
: "${SINK:?set SINK to the smqd-bench-sink binary}"
work=$(mktemp -d "${TMPDIR:-/tmp}/smqd-smoke.XXXXXX")
pid=""
cleanup() {
  [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }

bench_conf "$work/smqd.db" > "$work/smqd.conf"
"$smqd" -c "$work/smqd.conf" 2>"$work/smqd.log" &
pid=$!
for _ in $(seq 600); do
  grep -q "listening on" "$work/smqd.log" && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.05
done
port=$(sed -n 's/.*listening on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$work/smqd.log" | head -1)
if [ -z "$port" ]; then
  echo "FAIL smqd did not start:"; cat "$work/smqd.log"; exit 1
fi

num() { sed -n "s/.*\"$1\":\([0-9.]*\).*/\1/p" <<<"$2" | head -1; }

run=0
check() {   # check LABEL ARGS... : one loadgen run; its exit status, counts and JSON
  local label=$1 out rc=0 msgs
  shift
  run=$((run + 1))
  out=$("$lg" --port "$port" --ak k --sk s --queue "smoke$run" --create-queue --json \
        --duration-s "$secs" "$@") || rc=$?
  msgs=$(num messages "$out")
  printf '%-34s exit %s, %s messages, %s msg/s, errors %s, lost %s\n' "$label" "$rc" \
    "${msgs:-?}" "$(num msg_per_s "$out")" "$(num errors "$out")" "$(num lost "$out")"
  # Exit status 1 = errors, connection errors, lost or abandoned requests (bench/README.md).
  [ "$rc" -eq 0 ] || fail "$label: smqd-loadgen exit status $rc: $out"
  [ -n "$msgs" ] && [ "$msgs" -gt 0 ] || fail "$label: no message counted: $out"
  LAST=$out
}

check "send c=4" --scenario send --connections 4
check "lifecycle c=4" --scenario lifecycle --connections 4
check "batch c=4 (16 per request)" --scenario batch --connections 4
check "drain c=4 (prefill 500)" --scenario drain --connections 4 --prefill 500
# PublishMessage to a topic with 10 queue subscriptions, waiting until every notification
# was delivered (bench/fanout.sh is the measurement).
check "publish c=2 (10 subscriptions)" --scenario send --connections 2 --topic "smoketopic$run" \
  --create-topic 10 --wait-fanout
fo=$(num fanout_s "$LAST")
awk -v f="${fo:--1}" 'BEGIN { exit !(f > 0) }' || fail "publish: the fan-out was not delivered: $LAST"
check "longpoll p=2 w=8" --scenario longpoll --connections 2 --waiters 8 --wait-s 2 --pause-ms 20
# Wake-ups were measured: some receives were answered with a message that a
# parked poll got (received counts them; --json reports the wake-up histogram).
wake_n=$(sed -n 's/.*"wake_us":{"n":\([0-9]*\).*/\1/p' <<<"$LAST")
[ -n "$wake_n" ] && [ "$wake_n" -gt 0 ] || fail "longpoll: no wake-up measured: $LAST"

kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
pid=""
[ "$rc" -eq 0 ] || { fail "smqd exited with status $rc after SIGTERM"; tail -20 "$work/smqd.log"; }
if grep -q "ERROR\|runtime error\|Sanitizer" "$work/smqd.log"; then
  fail "smqd logged errors:"; grep "ERROR\|runtime error\|Sanitizer" "$work/smqd.log" | head -20
fi
# Pushes: push.sh on its own smqd (every push must arrive and match its publish).
PUSH_SUBS="1 10" bash "$(dirname "$0")/push.sh" 1 2 20 || fail "push.sh (pushes next to queue fan-out)"

[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "smoke: every scenario ran without errors"
