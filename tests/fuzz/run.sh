#!/usr/bin/env bash
# run.sh — builds the libFuzzer targets in build-fuzz/ and runs them, one per core at a time.
#   tests/fuzz/run.sh [SECONDS]     default 5 per target (the brief run of the test suite);
#   tests/fuzz/run.sh 600           the longer run documented in tests/fuzz/README.md.
# Prints per target: executions, exec/s, coverage before -> after, new inputs, crashes.
# Each target keeps a working corpus in build-fuzz/fuzz-work/NAME/corpus (seeded from
# tests/fuzz/corpus/NAME, grown by every run); findings land in
# build-fuzz/fuzz-work/NAME/artifacts.  The repository is never written.
# Needs clang and libclang-rt-14-dev (libFuzzer and the sanitizer runtimes).
# Exit status: 0 when no target found anything.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
secs=${1:-5}
case $secs in (''|*[!0-9]*) echo "usage: $0 [SECONDS]" >&2; exit 2 ;; esac
build=${SMQD_FUZZ_BUILD_DIR:-$root/build-fuzz}

command -v clang >/dev/null 2>&1 || {
  echo "run.sh: clang not found (Debian: apt-get install clang libclang-rt-14-dev)" >&2; exit 1; }

# The benchmarks are not needed here; SMQD_SANITIZE adds ASan+UBSan to everything compiled.
CC=clang cmake -S "$root" -B "$build" -DSMQD_FUZZ=ON -DSMQD_SANITIZE=ON -DSMQD_BENCH=OFF \
  >/dev/null
cmake --build "$build" --target fuzzers -j"$(nproc)" >/dev/null

targets=$(sed -n 's/^set(SMQD_FUZZ_TARGETS \(.*\))$/\1/p' tests/fuzz/CMakeLists.txt)
echo "== fuzzing ${secs}s per target ($(date -u '+%Y-%m-%d %H:%M UTC'), $(clang --version | head -n 1))"
# As many targets at a time as there are cores, each one's report printed whole when it ends.
failed=()
mkdir -p "$build/fuzz-work"
rm -f "$build/fuzz-work/failed"
printf '%s\n' $targets |
  xargs -P "$(nproc)" -I{} bash -c '
    if tests/fuzz/fuzz_one.sh "$1/tests/fuzz/{}" tests/fuzz "$2" "$1/fuzz-work/{}" >"$1/fuzz-work/{}.out" 2>&1
    then cat "$1/fuzz-work/{}.out"
    else cat "$1/fuzz-work/{}.out"; echo {} >>"$1/fuzz-work/failed"; fi' _ "$build" "$secs" || true
if [ -f "$build/fuzz-work/failed" ]; then
  mapfile -t failed <"$build/fuzz-work/failed"
fi
if [ ${#failed[@]} -gt 0 ]; then
  echo "== findings in: ${failed[*]} (inputs in $build/fuzz-work/NAME/artifacts)"
  exit 1
fi
echo "== no findings"
