#!/usr/bin/env bash
# floor.sh — CPU per message of smqd's batch-16 lifecycle against raw SQLite's.
#
#   bench/floor.sh [MESSAGES] [K]             (defaults 16000 and 128; ~1.5 min)
#   bench/floor.sh --smoke                    (CI form: 400 messages, 1 s peer runs)
#
# Instruction counts (callgrind), which do not depend on the machine's load:
#   smqd            the server, every thread, over MESSAGES batch-16 lifecycles
#                   on 16 connections (bench/profile.sh callgrind batch 16);
#   raw SQLite      smqd-peer-sqlite's lifecycle: one table, INSERT / UPDATE /
#                   DELETE, K messages per commit (the storage ceiling of
#                   peers.sh and bounds.sh);
#   smqd's SQL      the same program running smqd's own statements on smqd's
#                   two tables, K per commit.
# Ratios: raw SQLite / smqd is the most the batch-vs-raw ratio can reach where
# only CPU counts (tmpfs), before the load generator's share of the same
# cores; smqd's SQL / smqd is SQLite's share of smqd's work.  The smoke fails
# only when a count is missing or zero.
#
# Builds build-prof unless SMQD, LOADGEN and PEER_SQLITE name the binaries.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
msgs=16000 k=128 peer_s=3
if [ "${1:-}" = --smoke ]; then msgs=400 peer_s=1; else msgs=${1:-$msgs} k=${2:-$k}; fi
command -v valgrind >/dev/null || { echo "floor.sh: needs valgrind" >&2; exit 2; }
peer=${PEER_SQLITE:-}
if [ -z "$peer" ] || [ -z "${SMQD:-}" ] || [ -z "${LOADGEN:-}" ]; then
  bench_build_prof smqd smqd-loadgen smqd-peer-sqlite
  export SMQD=build-prof/smqd LOADGEN=build-prof/bench/smqd-loadgen
  peer=build-prof/bench/smqd-peer-sqlite
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/smqd-floor.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Instructions per lifecycle of one smqd-peer-sqlite scenario (its loop only).
raw_per_msg() {
  local out total n
  out=$(valgrind --tool=callgrind --callgrind-out-file="$work/cg-$1.out" \
          --toggle-collect='lifecycles*' "$peer" --extra "$work/$1.db" \
          --batch "$k" --duration-s "$peer_s" --scenario "$1" 2>"$work/vg-$1.log") || true
  n=$(sed -n 's/^COUNT \([0-9]*\)$/\1/p' <<<"$out")
  total=$(sed -n 's/^summary: \([0-9]*\).*/\1/p' "$work/cg-$1.out" 2>/dev/null)
  if [ -z "$n" ] || [ "$n" -eq 0 ] || [ -z "$total" ] || [ "$total" -eq 0 ]; then
    echo "floor.sh: the $1 run counted nothing: $out $(cat "$work/vg-$1.log")" >&2
    return 1
  fi
  echo $((total / n))
}

smqd=$(bench/profile.sh callgrind batch 16 "$msgs" |
       sed -n 's/^instructions: [0-9]* total, \([0-9]*\) per counted message.*/\1/p')
if [ -z "$smqd" ] || [ "$smqd" -eq 0 ]; then echo "floor.sh: the smqd run failed" >&2; exit 1; fi
raw=$(raw_per_msg lifecycle)
own=$(raw_per_msg smqd-lifecycle)
echo "instructions per message"
printf '  %-36s %8d\n' "smqd, batch-16 lifecycle (server)" "$smqd" \
  "raw SQLite, $k per commit" "$raw" "smqd's statements, $k per commit" "$own"
awk -v s="$smqd" -v r="$raw" -v o="$own" 'BEGIN {
  printf "  raw SQLite / smqd (CPU ceiling of batch vs raw)   %.2f\n", r / s
  printf "  smqd'"'"'s statements / smqd (SQLite'"'"'s share)         %.2f\n", o / s
  printf "  raw SQLite / smqd'"'"'s statements (the schema)       %.2f\n", r / o }'
