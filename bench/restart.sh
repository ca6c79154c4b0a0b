#!/usr/bin/env bash
# restart.sh — measures start-up time and resident memory per queued message.
#
#   bench/restart.sh [N_MESSAGES] [BODY_BYTES]      (defaults 1000000 and 1024)
#
# Seeds a database with N queued messages (10 queues, all Active), starts
# smqd on it, and reports the time from exec to the "listening on" line and
# the RSS once it is up.  The baseline is the same measurement on an empty
# database in the same run, so the figures are ratios of one machine's run.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
n=${1:-1000000}
body=${2:-1024}
build=build-release
bench_build $build smqd smqd-bench-seed
work=$(mktemp -d)
trap 'kill $pid 2>/dev/null || true; rm -rf "$work"' EXIT
pid=""

measure() {   # measure DB -> prints "startup_ms rss_kb"
  local db=$1 conf=$work/smqd.conf log=$work/log t0 t1
  bench_conf "$db" > "$conf"
  t0=$(date +%s%N)
  $build/smqd -c "$conf" 2>"$log" &
  pid=$!
  until grep -q "listening on" "$log"; do
    kill -0 $pid 2>/dev/null || { cat "$log"; exit 1; }
    sleep 0.01
  done
  t1=$(date +%s%N)
  local rss
  rss=$(awk '/VmRSS/ {print $2}' /proc/$pid/status)
  kill -TERM $pid; wait $pid || true; pid=""
  echo "$(( (t1 - t0) / 1000000 )) $rss"
}

$build/bench/smqd-bench-seed "$work/empty.db" 0 "$body"
read -r base_ms base_rss < <(measure "$work/empty.db")
t0=$(date +%s%N)
$build/bench/smqd-bench-seed "$work/full.db" "$n" "$body"
seed_s=$(( ($(date +%s%N) - t0) / 1000000000 ))
read -r full_ms full_rss < <(measure "$work/full.db")
per_msg=$(( (full_rss - base_rss) * 1024 / n ))
echo "messages=$n body_bytes=$body seed_s=$seed_s db_bytes=$(stat -c %s "$work/full.db")"
echo "empty:  startup_ms=$base_ms rss_kb=$base_rss"
echo "loaded: startup_ms=$full_ms rss_kb=$full_rss"
echo "rss_per_message_bytes=$per_msg (includes SQLite's page cache, at most 64 MiB)"
