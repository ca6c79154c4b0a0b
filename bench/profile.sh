#!/usr/bin/env bash
# profile.sh — where smqd's CPU goes for one smqd-loadgen scenario.
#
#   bench/profile.sh callgrind SCENARIO [CONNECTIONS] [MESSAGES]
#   bench/profile.sh perf      SCENARIO [CONNECTIONS] [SECONDS]
#
# callgrind: smqd runs under valgrind --tool=callgrind while the generator
# sends MESSAGES (default 4000) messages; prints instructions per counted
# message and the top functions (inclusive and self).  Instruction counts do
# not depend on what else the machine is doing, so two builds can be compared
# on a busy machine (wall time cannot).  The engine commits fewer, larger
# groups under callgrind than at full speed, so SQLite's share is understated.
# perf: samples smqd (cpu-clock, call graphs) for SECONDS (default 5) at
# full speed and prints the top of `perf report`.
#
# Builds build-prof (Release + -g + frame pointers), unless SMQD and LOADGEN
# both name binaries to use.  PROFILE_KEEP=1 keeps the work directory
# (callgrind.out / perf.data for callgrind_annotate or perf report).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
tool=${1:?callgrind|perf}
scenario=${2:?send|lifecycle|batch|longpoll|drain}
conns=${3:-16}
build=build-prof
if [ -z "${SMQD:-}" ] || [ -z "${LOADGEN:-}" ]; then
  bench_build_prof smqd smqd-loadgen
fi
smqd=${SMQD:-$build/smqd}
lg=${LOADGEN:-$build/bench/smqd-loadgen}
work=$(mktemp -d)
pid=""
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  [ "${PROFILE_KEEP:-0}" = 1 ] && echo "work directory: $work" || rm -rf "$work"
}
trap cleanup EXIT
bench_conf "$work/smqd.db" > "$work/smqd.conf"
case $tool in
  callgrind) valgrind --tool=callgrind --callgrind-out-file="$work/callgrind.out" \
               "$smqd" -c "$work/smqd.conf" 2>"$work/smqd.log" & ;;
  perf)      perf record -q -e cpu-clock -g -o "$work/perf.data" \
               "$smqd" -c "$work/smqd.conf" 2>"$work/smqd.log" & ;;
  *) echo "profile.sh: tool must be callgrind or perf" >&2; exit 2 ;;
esac
pid=$!
port=$(bench_smqd_port "$work/smqd.log" $pid) || exit 1
args=(--port "$port" --ak k --sk s --queue p --create-queue --scenario "$scenario"
      --connections "$conns" --json)
[ "$scenario" = longpoll ] && args+=(--waiters 16 --wait-s 2)
if [ "$tool" = callgrind ]; then
  msgs=${4:-4000}
  out=$($lg "${args[@]}" --messages "$msgs" --duration-s 600)
else
  out=$($lg "${args[@]}" --duration-s "${4:-5}")
fi
echo "$out"
kill -TERM $pid; wait $pid || true; pid=""
counted=$(sed -n 's/.*"messages":\([0-9]*\).*/\1/p' <<<"$out")
if [ "$tool" = callgrind ]; then
  total=$(sed -n 's/^summary: \([0-9]*\).*/\1/p' "$work/callgrind.out")
  echo "instructions: $total total, $((total / (counted > 0 ? counted : 1))) per counted message ($counted)"
  callgrind_annotate --inclusive=yes "$work/callgrind.out" 2>/dev/null | sed -n '1,60p' | cut -c1-160
  echo "--- self"
  callgrind_annotate "$work/callgrind.out" 2>/dev/null | sed -n '/^Ir/,$p' | sed -n '1,45p' | cut -c1-160
else
  perf report -i "$work/perf.data" --no-children --stdio --sort dso -g none 2>/dev/null | grep "%" | head -12
  perf report -i "$work/perf.data" --no-children --stdio --sort dso,symbol -g none 2>/dev/null |
    grep -v '^$' | grep -v '^#' | grep '%' | head -60
fi
