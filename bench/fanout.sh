#!/usr/bin/env bash
# fanout.sh — PublishMessage next to SendMessage, and what a wide fan-out does to an unrelated
# queue (issue 38; docs/protocol.md §13.5, §13.8), on one smqd in one run:
#
#   1. throughput at CONNECTIONS connections for SECONDS each: SendMessage to a queue, then
#      PublishMessage to topics with 1, 10 and 100 queue subscriptions (format XML, each into
#      its own queue).  Each publish run waits until its fan-out is delivered (the topic's
#      MessageCount back to 0): publishes/s (201s), latency, the ratio publish/send, and the
#      notifications delivered per second up to that moment.
#   2. the latency of SendMessage (1 connection, SECONDS) to an unrelated queue, alone and then
#      while a topic with 1,000 queue subscriptions fans out FANOUT_PUBLISHES publishes
#      (default 300, i.e. 300,000 notifications; [limits] max_subscriptions_per_topic and
#      max_queues are raised to 2000 in this bench's configuration).  The publishes are made at the start; the send
#      run starts 0.3 s later and must end before the fan-out does, or the script says so.
#      For reference, the same send beside ordinary traffic: 4 connections sending to
#      another queue.
#
#   3. memory: on a fresh smqd, the peak RSS (VmHWM) a 60,000-byte publish to 1,000 queue
#      subscriptions adds until delivered (60 MB of notifications).  The notifications are
#      rendered one at a time; what grows is SQLite's page cache, capped at 64 MiB
#      (sqlite_store.c), so the script says NOTE when the growth is above 64 MiB + 16 MiB.
#
#   bench/fanout.sh [SECONDS] [CONNECTIONS]      (defaults 5 and 4; about a minute)
#
# sync = full, 1 KiB bodies, the configuration of bench_conf (lib.sh).  FANOUT_BUILD names the
# build directory (default build-release, built here).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
secs=${1:-5}
conns=${2:-4}
wide=${FANOUT_PUBLISHES:-300}
build=${FANOUT_BUILD:-build-release}
bench_build "$build" smqd smqd-loadgen
lg=$build/bench/smqd-loadgen
work=$(mktemp -d)
pid=""
bg=""
cleanup() {
  [ -n "$bg" ] && kill "$bg" 2>/dev/null
  [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

bench_conf "$work/smqd.db" max_subscriptions 2000 max_queues 2000 >"$work/smqd.conf"
chmod 600 "$work/smqd.conf"
$build/smqd -c "$work/smqd.conf" 2>"$work/smqd.log" &
pid=$!
port=$(bench_smqd_port "$work/smqd.log" $pid) || exit 1

lgrun() { "$lg" --port "$port" --ak k --sk s --json "$@"; }
num() { sed -n "s/.*\"$1\":\([0-9.-]*\).*/\1/p" <<<"$2" | head -1; }
# p50 / p99 of the overall latency, in ms
lat() { sed -n 's/.*"latency_us":{"n":[0-9]*,"p50":\([0-9]*\),"p99":\([0-9]*\).*/\1 \2/p' <<<"$1" |
        awk '{ printf "%.2f %.2f", $1 / 1000, $2 / 1000 }'; }

echo "== fanout.sh: $(nproc) cores, git $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $(date -u '+%F %T') UTC"
echo "== 1: throughput, $conns connections, ${secs}s per run"
printf '%-14s %10s %8s %8s %12s %10s %14s\n' run msg/s p50_ms p99_ms ratio_send fanout_s notif/s
out=$(lgrun --scenario send --queue fo-send --create-queue --connections "$conns" --duration-s "$secs")
send=$(num msg_per_s "$out")
read -r p50 p99 <<<"$(lat "$out")"
printf '%-14s %10s %8s %8s %12s %10s %14s\n' send "$send" "$p50" "$p99" 1.00 - -
for n in 1 10 100; do
  out=$(lgrun --scenario send --topic "fo-t$n" --create-topic "$n" --wait-fanout \
        --connections "$conns" --duration-s "$secs")
  rate=$(num msg_per_s "$out")
  read -r p50 p99 <<<"$(lat "$out")"
  fo=$(num fanout_s "$out")
  sent=$(num sent "$out")
  printf '%-14s %10s %8s %8s %12s %10s %14s\n' "publish x$n" "$rate" "$p50" "$p99" \
    "$(awk -v a="$rate" -v b="$send" 'BEGIN { printf "%.2f", a / b }')" "$fo" \
    "$(awk -v s="$sent" -v n="$n" -v f="$fo" 'BEGIN { if (f > 0) printf "%.0f", s * n / f; else print "-" }')"
done

echo "== 2: SendMessage latency to an unrelated queue, 1 connection, ${secs}s"
lgrun --scenario send --topic fo-wide --create-topic 1000 --wait-fanout --messages 1 >/dev/null
alone=$(lgrun --scenario send --queue fo-lat-a --create-queue --connections 1 --duration-s "$secs")
lgrun --scenario send --topic fo-wide --wait-fanout --connections 1 --messages "$wide" \
  >"$work/wide.json" &
bg=$!
sleep 0.3
during=$(lgrun --scenario send --queue fo-lat-b --create-queue --connections 1 --duration-s "$secs")
wait "$bg"
bg=""
wide_out=$(cat "$work/wide.json")
# The same send beside ordinary traffic: 4 connections sending to another queue.
lgrun --scenario send --queue fo-bg --create-queue --connections 4 --duration-s "$((secs + 1))" \
  >/dev/null &
bg=$!
sleep 0.3
beside=$(lgrun --scenario send --queue fo-lat-c --create-queue --connections 1 --duration-s "$secs")
wait "$bg"
bg=""
fo=$(num fanout_s "$wide_out")
read -r a50 a99 <<<"$(lat "$alone")"
read -r d50 d99 <<<"$(lat "$during")"
printf '%-40s %10s %8s %8s\n' run msg/s p50_ms p99_ms
printf '%-40s %10s %8s %8s\n' "send alone" "$(num msg_per_s "$alone")" "$a50" "$a99"
printf '%-40s %10s %8s %8s\n' "send during the 1,000-subscription fan-out" "$(num msg_per_s "$during")" "$d50" "$d99"
read -r b50 b99 <<<"$(lat "$beside")"
printf '%-40s %10s %8s %8s\n' "send beside 4 connections sending" "$(num msg_per_s "$beside")" "$b50" "$b99"
awk -v a="$a50" -v b="$d50" -v c="$a99" -v d="$d99" \
  'BEGIN { printf "ratio during/alone: p50 %.2f, p99 %.2f\n", b / a, d / c }'
echo "fan-out: $wide publishes x 1000 subscriptions = $((wide * 1000)) notifications, delivered ${fo} s after the first publish" \
     "(publishes acknowledged in $(num elapsed_s "$wide_out") s)"
awk -v f="$fo" -v s="$secs" 'BEGIN { if (f < 0 || f < s + 0.3) print "NOTE: the fan-out ended before the send run did: raise FANOUT_PUBLISHES" }'

# stop_smqd LOG — SIGTERM, a clean exit, nothing logged but the root warning.
stop_smqd() {
  local rc=0
  kill -TERM $pid
  wait $pid || rc=$?
  pid=""
  [ "$rc" -eq 0 ] || { echo "smqd exited with status $rc"; tail -20 "$1"; exit 1; }
  if grep -v "WARN running as root" "$1" | grep -q "ERROR\|WARN"; then
    echo "smqd logged problems:"; grep -v "WARN running as root" "$1" | grep "ERROR\|WARN" | head -20
  fi
}
stop_smqd "$work/smqd.log"

echo "== 3: memory of one 60,000-byte publish to 1,000 queue subscriptions (fresh smqd)"
bench_conf "$work/mem.db" max_subscriptions 2000 max_queues 2000 >"$work/mem.conf"
chmod 600 "$work/mem.conf"
$build/smqd -c "$work/mem.conf" 2>"$work/mem.log" &
pid=$!
port=$(bench_smqd_port "$work/mem.log" $pid) || exit 1
kb() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$pid/status"; }
lgrun --scenario send --topic fo-mem --create-topic 1000 --wait-fanout --messages 1 \
  --body-bytes 100 >/dev/null
echo 5 >"/proc/$pid/clear_refs"   # the peak so far (making 1,000 queues) is not the publish's
before=$(kb VmRSS)
out=$(lgrun --scenario send --topic fo-mem --wait-fanout --messages 1 --body-bytes 60000)
after=$(kb VmHWM)
echo "RSS before ${before} kB, peak until delivered ${after} kB: +$(( (after - before) / 1024 )) MiB" \
     "for 1,000 x 60,000 bytes (fan-out $(num fanout_s "$out") s)"
[ $(( after - before )) -le $(( (64 + 16) * 1024 )) ] ||
  echo "NOTE: more than the page cache's 64 MiB + 16 MiB: notifications held in memory?"
stop_smqd "$work/mem.log"
