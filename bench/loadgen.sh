#!/usr/bin/env bash
# loadgen.sh — runs smqd-loadgen's scenarios against a fresh smqd and prints
# one table row per run (the JSON lines are kept in the work directory).
#
#   bench/loadgen.sh [SECONDS] [CONNECTIONS...]      (defaults 5 and 1 16 64)
#
# Each run uses a new queue, so no run sees another's leftovers.  smqd runs
# with its defaults (sync = full) on a temporary database; only the
# 1000-waiter long-poll run raises [limits] max_connections to 4096.
# Set LOADGEN_KEEP=1 to keep the work directory, SMQD=path to measure another
# smqd binary (e.g. one built from a release tag) with this tree's generator.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
secs=${1:-5}
shift || true
conns=("$@")
[ ${#conns[@]} -gt 0 ] || conns=(1 16 64)
build=build-release
bench_build $build smqd smqd-loadgen
lg=$build/bench/smqd-loadgen
smqd=${SMQD:-$build/smqd}
work=$(mktemp -d)
pid=""
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  [ "${LOADGEN_KEEP:-0}" = 1 ] && echo "work directory: $work" || rm -rf "$work"
}
trap cleanup EXIT
port=""
run=0

start_server() {   # start_server [bench_conf KEY VALUE...]
  local conf=$work/smqd.conf log=$work/smqd.log
  rm -f "$work"/smqd.db*
  bench_conf "$work/smqd.db" "$@" > "$conf"
  : > "$log"
  "$smqd" -c "$conf" 2>"$log" &
  pid=$!
  port=$(bench_smqd_port "$log" $pid) || exit 1
}

stop_server() {
  kill "$pid"; wait "$pid" || true; pid=""
}

field() {   # field JSON KEY [SUBKEY]
  if [ $# -eq 3 ]; then
    sed -n "s/.*\"$2\":{[^}]*\"$3\":\([0-9.]*\).*/\1/p" <<<"$1"
  else
    sed -n "s/.*\"$2\":\([0-9.a-z]*\).*/\1/p" <<<"$1"
  fi
}

# smqd's CPU time so far (user + system, clock ticks) and its peak RSS so far (kB).
server_ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
server_hwm_kb() { awk '/VmHWM/ {print $2}' "/proc/$pid/status"; }

row() {   # row LABEL JSON SERVER_CPU_PCT
  local j=$2 ce
  ce=$(( $(field "$j" conn_errors connect) + $(field "$j" conn_errors reset) \
       + $(field "$j" conn_errors eof) + $(field "$j" conn_errors protocol) ))
  printf '%-26s %10s %9.2f %9.2f %9.2f %9.2f %6s %6s %6s %6s %7s %5s\n' "$1" "$(field "$j" msg_per_s)" \
    "$(awk "BEGIN{print $(field "$j" latency_us p50)/1000}")" \
    "$(awk "BEGIN{print $(field "$j" latency_us p99)/1000}")" \
    "$(awk "BEGIN{print $(field "$j" latency_us p999)/1000}")" \
    "$(awk "BEGIN{print $(field "$j" latency_us max)/1000}")" \
    "$(field "$j" errors)" "$ce" "$(field "$j" client_cpu pct)" "$3" \
    "$(( $(server_hwm_kb) / 1024 ))" "$(cut -d' ' -f1 /proc/loadavg)"
}

lgrun() {   # lgrun LABEL ARGS...
  local label=$1 out rc=0 t0 s0 cpu
  shift
  run=$((run + 1))
  t0=$(server_ticks); s0=$(date +%s%N)
  out=$($lg --port "$port" --ak k --sk s --queue "q$run" --create-queue --json "$@") || rc=$?
  cpu=$(awk -v t="$(( $(server_ticks) - t0 ))" -v hz="$(getconf CLK_TCK)" \
        -v ns="$(( $(date +%s%N) - s0 ))" 'BEGIN { printf "%.0f", 100 * t / hz / (ns / 1e9) }')
  echo "$out" >> "$work/results.jsonl"
  row "$label" "$out" "$cpu"
  case $label in longpoll*)
    printf '    wake-up p50 %s p99 %s max %s us; delivery p50 %s p99 %s max %s us; parked at start %s, min at a send %s; 200 before 201: %s\n' \
      "$(field "$out" wake_us p50)" "$(field "$out" wake_us p99)" "$(field "$out" wake_us max)" \
      "$(field "$out" delivery_us p50)" "$(field "$out" delivery_us p99)" \
      "$(field "$out" delivery_us max)" "$(field "$out" parked at_start)" \
      "$(field "$out" parked min)" "$(field "$out" wake_before_ack)";;
  esac
  [ $rc -eq 0 ] || echo "    (exit status $rc; see $work/results.jsonl)"
}

printf '%-26s %10s %9s %9s %9s %9s %6s %6s %6s %6s %7s %5s\n' run msg/s p50_ms p99_ms p999_ms max_ms \
  errors connerr lg_cpu% smqd% rss_mb load
start_server
for c in "${conns[@]}"; do
  lgrun "send c=$c" --scenario send --connections "$c" --duration-s "$secs"
  lgrun "lifecycle c=$c" --scenario lifecycle --connections "$c" --duration-s "$secs"
  lgrun "batch c=$c" --scenario batch --connections "$c" --duration-s "$secs"
  lgrun "drain c=$c" --scenario drain --connections "$c" --duration-s "$secs" --prefill 30000
  lgrun "longpoll p=$c w=16" --scenario longpoll --connections "$c" --waiters 16 --duration-s "$secs"
done
stop_server
start_server max_connections 4096
lgrun "longpoll p=16 w=1000" --scenario longpoll --connections 16 --waiters 1000 --duration-s "$secs"
lgrun "longpoll p=64 w=1000 0ms" --scenario longpoll --connections 64 --waiters 1000 --pause-ms 0 \
  --duration-s "$secs"
stop_server
echo "latency: all requests but empty receives (and long-poll receives); lg_cpu%: the generator's"
echo "CPU, smqd%: smqd's (user + system, % of one core, over the run); rss_mb: smqd's peak RSS so far;"
echo "load: the machine's 1-minute load average after the run (the generator and smqd share it)"
