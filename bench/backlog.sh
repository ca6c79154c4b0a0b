#!/usr/bin/env bash
# backlog.sh — does receive + delete slow down when the database holds a
# large backlog?  Drains the same 100,000-message queue twice, at 16
# connections, in the same run:
#   small: the database holds only those 100,000 messages;
#   large: the database holds 1,000,000 (ten such queues).
# Prints both rates and their ratio (large / small; 1.0 = no slow-down).
#
#   bench/backlog.sh [SECONDS] [CONNECTIONS]      (defaults 10 and 16)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
secs=${1:-10}
conns=${2:-16}
build=build-release
bench_build $build smqd smqd-bench-seed smqd-loadgen
work=$(mktemp -d)
pid=""
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$work"' EXIT

drain_rate() {   # drain_rate DB -> messages/s
  local db=$1 log=$work/log port
  bench_conf "$db" >"$work/c.conf"
  $build/smqd -c "$work/c.conf" 2>"$log" &
  pid=$!
  port=$(bench_smqd_port "$log" $pid) || exit 1
  $build/bench/smqd-loadgen --port "$port" --ak k --sk s --queue bench-0 --scenario drain \
      --connections "$conns" --duration-s "$secs" --json | sed -n 's/.*"msg_per_s":\([0-9.]*\).*/\1/p'
  kill -TERM $pid; wait $pid || true; pid=""
}

$build/bench/smqd-bench-seed "$work/small.db" 100000 1024 1
$build/bench/smqd-bench-seed "$work/large.db" 1000000 1024 10
small=$(drain_rate "$work/small.db")
large=$(drain_rate "$work/large.db")
echo "drain of 100,000 messages at $conns connections for ${secs}s:"
echo "  database with 100,000 messages:   $small msg/s"
echo "  database with 1,000,000 messages: $large msg/s"
awk -v a="$large" -v b="$small" 'BEGIN { printf "  ratio large/small: %.2f\n", a / b }'
