#!/usr/bin/env bash
# push.sh — HTTP pushes next to queue fan-out (issue 39; docs/protocol.md §13.10–§13.12), on
# one smqd in one run: for N in PUSH_SUBS (1 10 100), a topic with N queue subscriptions and
# then a topic with N HTTP subscriptions to smqd-bench-sink (bench/push_sink.c: loopback,
# keep-alive, answers 204 at once, verifies nothing), each published to at the same steady
# load: CONNECTIONS connections, each pausing PAUSE_MS after every 201, for SECONDS; each run
# ends when its fan-out is delivered (the topic's MessageCount back to 0).  Printed per N:
#
#   pub/s         publishes acknowledged per second (the load offered, both runs)
#   queue/s       notifications delivered into queues per second: publishes × N ÷ fanout_s
#                 (the run's start → MessageCount 0, polled every 20 ms)
#   push/s        pushes received by the endpoint per second: receipts ÷ (the run's start →
#                 the last receipt)
#   push/queue    their ratio
#   p50/p99 ms    per push, the publish's 201 at the generator → the whole request read at
#                 the endpoint (both on CLOCK_MONOTONIC; matched by MessageId)
#   missing/extra pushes never received / received more than once (a retry after a timeout:
#                 allowed, pushes are at-least-once, §13.12)
#
#   bench/push.sh [SECONDS] [CONNECTIONS] [PAUSE_MS]     (defaults 5, 2 and 20; 1–2 minutes)
#
# sync = full, 1 KiB bodies, format XML, the configuration of bench_conf (lib.sh), smqd's
# default push_concurrency (64) unless PUSH_CONCURRENCY is set.  The binaries are built in
# PUSH_BUILD (default build-release) unless SMQD_BIN, LOADGEN and SINK name them (as
# smoke.sh does).  Exits 1 when a run had errors, a fan-out was not delivered, or a push is
# missing or unmatched: the short form (smoke.sh) is a check, never of speed.
set -euo pipefail
for v in SMQD_BIN LOADGEN SINK; do   # given relative to where we were started
  if [ -n "${!v:-}" ]; then printf -v "$v" '%s' "$(realpath "${!v}")"; fi
done
cd "$(dirname "$0")/.."
. bench/lib.sh
secs=${1:-5}
conns=${2:-2}
pause=${3:-20}
subs=${PUSH_SUBS:-1 10 100}
if [ -n "${SMQD_BIN:-}" ] && [ -n "${LOADGEN:-}" ] && [ -n "${SINK:-}" ]; then
  smqd=$SMQD_BIN lg=$LOADGEN sink=$SINK
else
  build=${PUSH_BUILD:-build-release}
  bench_build "$build" smqd smqd-loadgen smqd-bench-sink
  smqd=$build/smqd lg=$build/bench/smqd-loadgen sink=$build/bench/smqd-bench-sink
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/smqd-push.XXXXXX")
pid=""
spid=""
cleanup() {
  [ -n "$spid" ] && kill -KILL "$spid" 2>/dev/null && wait "$spid" 2>/dev/null
  [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }

bench_conf "$work/smqd.db" >"$work/smqd.conf"
if [ -n "${PUSH_CONCURRENCY:-}" ]; then
  printf '[topics]\npush_concurrency = %s\n' "$PUSH_CONCURRENCY" >>"$work/smqd.conf"
fi
chmod 600 "$work/smqd.conf"
"$smqd" -c "$work/smqd.conf" 2>"$work/smqd.log" &
pid=$!
port=$(bench_smqd_port "$work/smqd.log" $pid) || exit 1

num() { sed -n "s/.*\"$1\":\([0-9.-]*\).*/\1/p" <<<"$2" | head -1; }
# One paced publish run (extra arguments: --create-topic and, for pushes, --push-endpoint and
# --ack-log); its JSON in $out, a failure noted.
publish() {
  local label=$1 rc=0
  shift
  out=$("$lg" --port "$port" --ak k --sk s --json --scenario send --wait-fanout \
        --connections "$conns" --pause-ms "$pause" --duration-s "$secs" "$@") || rc=$?
  [ "$rc" -eq 0 ] || fail "$label: smqd-loadgen exit status $rc: $out"
  awk -v f="$(num fanout_s "$out")" 'BEGIN { exit !(f > 0) }' ||
    fail "$label: the fan-out was not delivered: $out"
}

# The sink of one push run: started on a free port (its port in $sport), stopped by its PID
# so its log is complete; bounded by its own deadline as well.
sink_start() {
  rm -f "$work/sink.port"
  "$sink" "$work/sink.port" "$work/sink.log" $((secs + 660)) &
  spid=$!
  for _ in $(seq 200); do [ -s "$work/sink.port" ] && break; sleep 0.05; done
  sport=$(cat "$work/sink.port" 2>/dev/null) || { fail "the sink did not start"; exit 1; }
}
sink_stop() {
  kill -TERM "$spid"
  wait "$spid" || fail "the sink exited with status $?"
  spid=""
}

# Joins the generator's acknowledgements with the sink's receipts (N per publish, one per
# subscription): prints "receipts missing extra unmatched push_s p50_ms p99_ms"; extra counts
# receipts beyond N of one publish (a push repeated), unmatched those of no publish of the run.
push_figures() {
  local n=$1
  awk -v n="$n" -v lat="$work/lat" '
    $1 == "s" { start = $2; next }
    $1 == "a" { ack[$2] = $3; next }
    $1 == "r" { got++; if ($3 > last) last = $3
                if ($2 in ack) { seen[$2]++; printf "%.3f\n", ($3 - ack[$2]) / 1e6 > lat }
                else unmatched++ }
    END { close(lat)
          for (id in ack) { d = seen[id] - n; if (d < 0) missing -= d; else extra += d }
          printf "%d %d %d %d %.0f", got, missing, extra, unmatched,
                 (last > start ? got / ((last - start) / 1e9) : 0) }
  ' "$work/ack" "$work/sink.log"
  sort -n "$work/lat" | awk '{ v[NR] = $1 } END {
    if (NR == 0) { print " - -"; exit }
    i50 = int(NR * 0.50 + 0.999); i99 = int(NR * 0.99 + 0.999)
    printf " %.2f %.2f\n", v[i50 < 1 ? 1 : i50], v[i99 < 1 ? 1 : i99] }'
}

echo "== push.sh: $(nproc) cores, git $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $(date -u '+%F %T') UTC," \
     "load $(cut -d' ' -f1 /proc/loadavg)"
echo "== $conns connections pausing ${pause} ms after each publish, ${secs}s per run, until delivered"
fmt='%-6s %11s %9s %9s %11s %9s %9s %13s\n'
printf "$fmt" subs pub/s queue/s push/s push/queue p50_ms p99_ms missing/extra
for n in $subs; do
  publish "queue x$n" --topic "pq-t$n" --create-topic "$n"
  qpub=$(num msg_per_s "$out")
  queue_s=$(awk -v s="$(num sent "$out")" -v n="$n" -v f="$(num fanout_s "$out")" \
            'BEGIN { if (f > 0) printf "%.0f", s * n / f; else print 0 }')
  sink_start
  publish "push x$n" --topic "pp-t$n" --create-topic "$n" --ack-log "$work/ack" \
    --push-endpoint "http://127.0.0.1:$sport/p$n"
  ppub=$(num msg_per_s "$out")
  sink_stop
  read -r got missing extra unmatched push_s p50 p99 <<<"$(push_figures "$n")"
  [ "$missing" -eq 0 ] && [ "$unmatched" -eq 0 ] && [ "$got" -gt 0 ] ||
    fail "push x$n: $got pushes received, $missing missing, $unmatched not from this run"
  printf "$fmt" "$n" "$qpub/$ppub" "$queue_s" "$push_s" \
    "$(awk -v a="$push_s" -v b="$queue_s" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')" \
    "$p50" "$p99" "$missing/$extra"
  rm -f "$work/ack" "$work/sink.log" "$work/lat"
done
echo "(pub/s: queue run/push run; load at the end $(cut -d' ' -f1 /proc/loadavg))"

kill -TERM $pid
rc=0
wait $pid || rc=$?
pid=""
[ "$rc" -eq 0 ] || { fail "smqd exited with status $rc"; tail -20 "$work/smqd.log"; }
if grep -v "WARN running as root" "$work/smqd.log" | grep -q "ERROR\|WARN\|runtime error\|Sanitizer"; then
  fail "smqd logged problems:"
  grep -v "WARN running as root" "$work/smqd.log" | grep "ERROR\|WARN\|runtime error\|Sanitizer" | head -20
fi
[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
