#!/usr/bin/env bash
# soak.sh — resident memory of smqd under a long mixed load.
#
#   bench/soak.sh [ROUNDS] [SECONDS_PER_SCENARIO]     (defaults 10 and 10)
#
# One smqd, the same three queues every round: lifecycle (single ops),
# batch (16 per request) and long polls (200 waiters), 32 connections each,
# then every queue is drained, so each round ends with an empty backlog.
# RSS is sampled at the end of every round; with the backlog back at zero it
# should stay flat once SQLite's page cache (at most 64 MiB) has filled.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
rounds=${1:-10}
secs=${2:-10}
build=build-release
bench_build $build smqd smqd-loadgen
work=$(mktemp -d)
pid=""
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$work"' EXIT
bench_conf "$work/smqd.db" max_connections 4096 >"$work/c.conf"
$build/smqd -c "$work/c.conf" 2>"$work/log" &
pid=$!
port=$(bench_smqd_port "$work/log" $pid) || exit 1
lg() { $build/bench/smqd-loadgen --port "$port" --ak k --sk s --json "$@" >>"$work/runs.jsonl" || true; }
rss() { awk '/VmRSS/ {print $2}' /proc/$pid/status; }
echo "round rss_kb"
echo "0 $(rss)"
for r in $(seq 1 "$rounds"); do
  for sc in lifecycle batch longpoll; do
    create=""; [ "$r" = 1 ] && create=--create-queue
    lg --queue soak-$sc --scenario $sc --connections 32 --waiters 200 --duration-s "$secs" $create
    lg --queue soak-$sc --scenario drain --connections 16 --duration-s 60
  done
  echo "$r $(rss)"
done
kill -TERM $pid; wait $pid; pid=""
echo "messages moved: $(sed -n 's/.*"messages":\([0-9]*\).*/\1/p' "$work/runs.jsonl" | awk '{ s += $1 } END { print s }')"
