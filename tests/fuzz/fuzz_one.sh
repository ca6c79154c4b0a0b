#!/usr/bin/env bash
# fuzz_one.sh — runs one libFuzzer target for a while and prints one summary line.
#   fuzz_one.sh BINARY FUZZ_SRC_DIR SECONDS [WORK_DIR]
# FUZZ_SRC_DIR is tests/fuzz: the seeds are read from FUZZ_SRC_DIR/corpus/NAME and the
# dictionary from FUZZ_SRC_DIR/dict/NAME.dict (NAME = the binary's name).  The seeds are
# copied into WORK_DIR/corpus, where libFuzzer adds what it finds; crash, leak, timeout and
# OOM inputs go to WORK_DIR/artifacts.  Without WORK_DIR (ctest) a temporary directory is
# used and removed afterwards unless the run failed.  Nothing is ever written below
# FUZZ_SRC_DIR.  Exit status: libFuzzer's (0 = nothing found).
set -euo pipefail

[ $# -ge 3 ] || { echo "usage: $0 BINARY FUZZ_SRC_DIR SECONDS [WORK_DIR]" >&2; exit 2; }
bin=$1 src=$2 secs=$3 work=${4:-}
name=$(basename "$bin")
temp=false
if [ -z "$work" ]; then
  work=$(mktemp -d "${TMPDIR:-/tmp}/smqd-$name.XXXXXX")
  temp=true
fi
mkdir -p "$work/corpus" "$work/artifacts"
if [ -d "$src/corpus/$name" ]; then
  cp -n "$src/corpus/$name"/* "$work/corpus/" 2>/dev/null || true
fi
args=(-max_total_time="$secs" -timeout=5 -rss_limit_mb=2048 -print_final_stats=1
      -artifact_prefix="$work/artifacts/")
[ -f "$src/dict/$name.dict" ] && args+=(-dict="$src/dict/$name.dict")

# Sanitizer reports with symbolized stacks; UBSan findings are fatal (-fno-sanitize-recover).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
if [ -z "${ASAN_SYMBOLIZER_PATH:-}" ]; then
  for s in llvm-symbolizer llvm-symbolizer-14 /usr/lib/llvm-14/bin/llvm-symbolizer; do
    if command -v "$s" >/dev/null 2>&1; then
      ASAN_SYMBOLIZER_PATH=$(command -v "$s")
      export ASAN_SYMBOLIZER_PATH
      break
    fi
  done
fi

seeds=$(find "$work/corpus" -type f | wc -l)
log=$work/fuzz.log
rc=0
"$bin" "${args[@]}" "$work/corpus" >"$log" 2>&1 || rc=$?

# (A crashed run has no final stats: missing figures print as "?".)
stat() { sed -n "s/^stat::$1: *//p" "$log" | tail -n 1; }
cov_at() { { grep -E "$1" "$log" || true; } | sed -n 's/.* cov: \([0-9]*\).*/\1/p' | tail -n 1; }
execs=$(stat number_of_executed_units)
speed=$(stat average_exec_per_sec)
new_units=$(stat new_units_added)
cov0=$(cov_at '#[0-9]+[[:space:]]+INITED')
cov1=$(cov_at '#[0-9]+[[:space:]]+(DONE|NEW|REDUCE|pulse|INITED)')
found=$(find "$work/artifacts" -type f | wc -l)
corpus=$(find "$work/corpus" -type f | wc -l)
printf '%-13s %10s execs %7s exec/s  cov %s -> %s  new inputs %s (corpus %s -> %s)  crashes %s\n' \
  "$name" "${execs:-?}" "${speed:-?}" "${cov0:-?}" "${cov1:-?}" "${new_units:-?}" \
  "$seeds" "$corpus" "$found"

if [ "$rc" -ne 0 ] || [ "$found" -ne 0 ]; then
  echo "== $name: libFuzzer exit $rc; report:" >&2
  sed -n '/ERROR: \|runtime error\|invariant failed/,/^SUMMARY/p' "$log" | head -n 60 >&2
  find "$work/artifacts" -type f -printf '  artifact: %p\n' >&2
  echo "  full log: $log" >&2
  [ "$rc" -ne 0 ] || rc=1
elif $temp; then
  rm -rf "$work"
fi
exit "$rc"
