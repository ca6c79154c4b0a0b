#!/usr/bin/env bash
# run-all.sh — the whole benchmark of docs/performance.md in one command:
#
#   bench/run-all.sh [SECONDS]        (default 5 seconds per run; about 10 minutes)
#
#   1-3  peers.sh: smqd send / lifecycle / batch at 1, 16 and 64 connections next to
#        beanstalkd -f0, Redis appendfsync always, PostgreSQL SKIP LOCKED, raw SQLite
#        (1/16/128 rows per commit) and the HTTP ceilings, one table with ratios
#   4    loadgen.sh at 64 connections: every scenario plus the 1,000-waiter long polls
#        (wake-up and delivery latency)
#   5    backlog.sh: receive + delete with 100,000 vs 1,000,000 messages stored
#   6    restart.sh: start-up time and RSS per message with 1,000,000 stored
#   7    fanout.sh: PublishMessage with 1, 10, 100 queue subscriptions next to SendMessage,
#        and send latency during a 1,000-subscription fan-out
#   8    floor.sh: instructions per batch message of smqd, raw SQLite and smqd's own
#        statements (callgrind; the CPU ceiling of batch vs raw SQLite)
#
# Everything runs on this machine in this run (sync = full, 1 KiB bodies), so the
# ratios compare like with like; absolute figures move with the machine's load.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-5}
echo "== run-all.sh: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'),"\
     "$(uname -r), git $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $(date -u '+%F %T') UTC"
echo "== 1-3: peers.sh $secs"
bench/peers.sh "$secs"
echo "== 4: loadgen.sh $secs 64 (the last two rows are the 1,000-waiter long polls)"
bench/loadgen.sh "$secs" 64
echo "== 5: backlog.sh $((secs * 2)) 16"
bench/backlog.sh $((secs * 2)) 16
echo "== 6: restart.sh 1000000"
bench/restart.sh 1000000
echo "== 7: fanout.sh $secs 4"
bench/fanout.sh "$secs" 4
echo "== 8: floor.sh"
bench/floor.sh
echo "== load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
