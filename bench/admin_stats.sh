#!/usr/bin/env bash
# admin_stats.sh — what a statistics request and a /metrics scrape cost with
# many stored messages (they run on the engine thread, inside message traffic).
#
#   bench/admin_stats.sh [N_MESSAGES] [REQUESTS]        (defaults 1000000 and 5)
#
# Seeds a database with N queued messages in 10 queues (smqd-bench-seed),
# starts smqd on it with the admin listener on a free loopback port, and
# prints curl's total time for REQUESTS each of GET /v1/queues/bench-3,
# GET /v1/queues, GET /metrics and, as the floor that asks the engine
# nothing per queue, GET /ready.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
n=${1:-1000000}
requests=${2:-5}
build=build-release
bench_build $build smqd smqd-bench-seed
work=$(mktemp -d)
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT

$build/bench/smqd-bench-seed "$work/smqd.db" "$n" 1024 10 >/dev/null
bench_conf "$work/smqd.db" admin 127.0.0.1:0 > "$work/smqd.conf"
$build/smqd -c "$work/smqd.conf" 2>"$work/log" &
pid=$!
admin=""
for _ in $(seq 1 600); do
  admin=$(sed -n 's/.*admin listener bound to http:\/\/\([0-9.:]*\).*/\1/p' "$work/log" | head -1)
  [ -n "$admin" ] && curl -s -o /dev/null -w '%{http_code}' "http://$admin/ready" | grep -q 200 && break
  kill -0 $pid 2>/dev/null || { cat "$work/log"; exit 1; }
  sleep 0.1
done
echo "admin_stats.sh: $n messages in 10 queues, $(nproc) cores, $(date -u '+%F %T') UTC; seconds per request"
for path in /v1/queues/bench-3 /v1/queues /metrics /ready; do
  printf '%-20s' "$path"
  for _ in $(seq "$requests"); do
    curl -s -o /dev/null -w '%{time_total} ' "http://$admin$path"
  done
  echo
done
kill -TERM $pid; wait $pid || true; pid=""
