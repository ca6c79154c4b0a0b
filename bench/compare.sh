#!/usr/bin/env bash
# compare.sh — two smqd binaries, same generator, interleaved runs, medians.
#
#   bench/compare.sh OLD_SMQD NEW_SMQD [SECONDS] [ROUNDS] [CONNECTIONS...]
#                                         (defaults 3, 3 and 64)
#
# For each connection count and scenario (send, lifecycle, batch) the two
# binaries run alternately ROUNDS times each (old, new, old, new, ...), each
# run on a fresh server and database (sync = full), so machine noise hits both
# alike; the table gives each one's median msg/s and p50 latency, and
# new/old.  OLD_SYNC / NEW_SYNC (full or normal, default full) set [storage]
# sync for each side, so one binary can be compared with itself
# (COMPARE_SCENARIOS="send batch" runs only those):
#   OLD_SYNC=full NEW_SYNC=normal bench/compare.sh build-release/smqd build-release/smqd
# Build the old binary from the old commit first, e.g.
#   git worktree add /tmp/old HEAD~3 && cmake -S /tmp/old -B /tmp/old/b \
#     -DCMAKE_BUILD_TYPE=Release && cmake --build /tmp/old/b --target smqd
# An old binary from before topics refuses the [topics] signing key every
# configuration names (lib.sh): run with BENCH_KEY_DIR=none then.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
old=$(readlink -f "${1:?old smqd}")
new=$(readlink -f "${2:?new smqd}")
secs=${3:-3}
rounds=${4:-3}
shift 4 2>/dev/null || shift $#
conns=("$@")
[ ${#conns[@]} -gt 0 ] || conns=(64)
build=build-release
bench_build $build smqd-loadgen
lg=$build/bench/smqd-loadgen
work=$(mktemp -d)
pid=""
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

run_one() {   # run_one SMQD SCENARIO CONNS SYNC -> "msg_per_s p50_us errors"
  local conf=$work/smqd.conf log=$work/smqd.log out port
  rm -f "$work"/smqd.db*
  bench_conf "$work/smqd.db" sync "$4" > "$conf"
  : > "$log"
  "$1" -c "$conf" 2>"$log" &
  pid=$!
  port=$(bench_smqd_port "$log" $pid) || exit 1
  out=$($lg --port "$port" --ak k --sk s --queue q --create-queue --json --scenario "$2" \
        --connections "$3" --duration-s "$secs") || true
  kill "$pid"; wait "$pid" || true; pid=""
  printf '%s %s %s\n' "$(sed -n 's/.*"msg_per_s":\([0-9.]*\).*/\1/p' <<<"$out")" \
    "$(sed -n 's/.*"latency_us":{[^}]*"p50":\([0-9]*\).*/\1/p' <<<"$out")" \
    "$(sed -n 's/.*"errors":\([0-9]*\).*/\1/p' <<<"$out")"
}


echo "compare.sh: old $old (sync ${OLD_SYNC:-full}), new $new (sync ${NEW_SYNC:-full}); ${secs}s per run, $rounds rounds, $(nproc) cores, $(date -u '+%F %T') UTC"
printf '%-10s %5s %10s %10s %7s %9s %9s %6s\n' scenario conns old_msg/s new_msg/s new/old \
  old_p50ms new_p50ms errors
for c in "${conns[@]}"; do
  for sc in ${COMPARE_SCENARIOS:-send lifecycle batch}; do
    : > "$work/old"; : > "$work/new"
    for _ in $(seq "$rounds"); do
      run_one "$old" "$sc" "$c" "${OLD_SYNC:-full}" >> "$work/old"
      run_one "$new" "$sc" "$c" "${NEW_SYNC:-full}" >> "$work/new"
    done
    om=$(cut -d' ' -f1 "$work/old" | bench_median); nm=$(cut -d' ' -f1 "$work/new" | bench_median)
    op=$(cut -d' ' -f2 "$work/old" | bench_median); np=$(cut -d' ' -f2 "$work/new" | bench_median)
    errs=$(cat "$work/old" "$work/new" | awk '{s += $3} END {print s + 0}')
    printf '%-10s %5s %10.0f %10.0f %7.2f %9.2f %9.2f %6s\n' "$sc" "$c" "$om" "$nm" \
      "$(awk "BEGIN{print ($om > 0) ? $nm / $om : 0}")" "$(awk "BEGIN{print $op / 1000}")" \
      "$(awk "BEGIN{print $np / 1000}")" "$errs"
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
