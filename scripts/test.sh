#!/usr/bin/env bash
# test.sh — builds smqd and runs every test; the README's test command (.ci/run runs it).
#   structure  the structure check (docs/architecture.md's modules and layers) and its own cases;
#   asan       a Debug build under AddressSanitizer + UndefinedBehaviorSanitizer: the unit tests
#              (the engine's on SQLite and on PostgreSQL) and every integration suite (curl, the
#              official Node SDK, crash and power-cut loops, failover, full disk, hostile input);
#   release    a Release build (-O3, what scripts/run.sh and bench/ build), tests included: every
#              unit test of it under valgrind (which fails on the test's own failure too), a
#              smoke of the integration suites (label "smoke") and the benchmark smokes;
#   package    the Debian package and the build without the test library (from the source tree);
#   tsan       the unit tests that start threads, under ThreadSanitizer, two at a time;
#   fuzz       every libFuzzer target for 5 s, two at a time.
# After the structure check two lanes run side by side: the ASan build and its tests (the
# integration suites wait on timeouts much of the time); and, niced so that it never slows a
# suite down, the Release build, its valgrind runs and its integration smoke (at the normal
# priority again).  Package, tsan, fuzz and the benchmark smokes go to whichever lane is free
# first.  Each lane's output is prefixed with its name; the run ends with a table of each
# stage's wall time.
#
#   scripts/test.sh          the test command
#   scripts/test.sh --full   also the long forms (label "long": crash-loop and power-cut loops
#                            of many cycles, the 20-cycle failover matrix, the recipe's long
#                            run) and every integration suite in the Release tree too
# Installs missing Debian packages and the pinned npm packages first.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
jobs=$(nproc)
full=0
case ${1:-} in
  --full) full=1 ;;
  '') ;;
  *) echo "usage: $0 [--full]" >&2; exit 2 ;;
esac

logs=$root/build-logs
rm -rf "$logs"
mkdir -p "$logs"
t_start=$SECONDS

# stage NAME COMMAND... — runs COMMAND and appends "NAME<TAB>seconds<TAB>status" to the table.
stage() {
  local name=$1 t0=$SECONDS rc=0
  shift
  echo "== $name"
  "$@" || rc=$?
  printf '%s\t%s\t%s\n' "$name" $((SECONDS - t0)) "$([ $rc = 0 ] && echo ok || echo "FAILED ($rc)")" \
    >>"$logs/stages"
  return $rc
}

print_stages() {
  echo "== stage times (wall seconds; the lanes overlap)"
  [ -f "$logs/stages" ] && awk -F'\t' '{ printf "   %-34s %5d s  %s\n", $1, $2, $3 }' "$logs/stages"
  printf '   %-34s %5d s\n' "total" $((SECONDS - t_start))
}

configure_and_build() {   # DIR [cmake args...]
  local dir=$1
  shift
  cmake -S "$root" -B "$dir" -DSMQD_TESTS=ON "$@" >/dev/null
  cmake --build "$dir" -j"$jobs"
}

ctest_in() {   # DIR [ctest args...]
  local dir=$1
  shift
  (cd "$dir" && ctest --output-on-failure -j"$jobs" "$@")
}

# ---- the lanes ----------------------------------------------------------------------------

asan_tests() {
  # The Debian package and the no-cmocka build build from the source tree, not from a build
  # directory (stage "package" runs them once); the benchmarks want the optimised build.
  local -a only=(-LE 'package|bench|valgrind|long')
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest_in build-asan "${only[@]}"
}

release_tests() {
  if [ "$full" = 1 ]; then
    ctest_in build -LE 'package|smoke|bench'
  else
    ctest_in build -L valgrind
  fi
}

# The benchmark smokes want the Release build: the lane that runs them waits until the
# Release lane says (in $logs/release-built) that the build is there.
release_bench() {
  while [ ! -s "$logs/release-built" ]; do sleep 2; done
  [ "$(cat "$logs/release-built")" = ok ] || { echo "the Release build failed (release lane)"; return 1; }
  ctest_in build -L bench
}

# The smoke of the integration suites at the normal priority again: they are suites with
# deadlines, which a niced lane must not stretch.
release_smoke() {
  nice -n -19 bash -c 'cd build && ctest --output-on-failure -j"$1" -L smoke' _ "$jobs"
}

# The ThreadSanitizer tests, two at a time; the PostgreSQL ones get a throw-away server.
tsan() {
  local pg_dir=$root/build-tsan/pg-tsan rc=0
  local threaded=(test_syncer test_engine_sync test_metrics test_ratelimit test_log test_reaper
                  test_xml test_httpd test_worker test_crypto test_engine_thread test_keeper_pg
                  test_store_pg_flow test_push)
  cmake -S "$root" -B build-tsan -DSMQD_TESTS=ON -DCMAKE_BUILD_TYPE=Debug -DSMQD_BENCH=OFF \
    -DCMAKE_C_FLAGS="-fsanitize=thread" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=thread" >/dev/null
  cmake --build build-tsan -j"$jobs" --target "${threaded[@]}"
  tests/pg/pg-server.sh stop "$pg_dir" >/dev/null 2>&1 || true
  rm -rf "$pg_dir"
  tests/pg/pg-server.sh start "$pg_dir" 900 >/dev/null
  printf '%s\n' "${threaded[@]}" |
    SMQD_TEST_PG_DIR="$pg_dir" xargs -P "$jobs" -I{} bash -c '
      cd build-tsan/tests
      if TSAN_OPTIONS=halt_on_error=1:exitcode=66 ./{} >{}.tsan.log 2>&1; then
        echo "tsan: {} clean"
      else
        echo "tsan: {} has a data race or failed:"; tail -n 60 {}.tsan.log; exit 1
      fi' || rc=$?
  tests/pg/pg-server.sh stop "$pg_dir"
  return $rc
}

# prefixed LANE COMMAND... — COMMAND's output, each line prefixed with the lane's name.
prefixed() {
  local lane=$1
  shift
  set -o pipefail
  "$@" 2>&1 | sed -u "s/^/[$lane] /"
}

# The stages either lane may run once its own work is done, in this order: each goes to the
# lane that claims it first (mkdir is atomic), so the lane the machine's load made shorter
# takes more of them.  The benchmark smokes are last: they wait for the Release build.
tail_stages=(package tsan fuzz bench)
run_tail_stage() {
  case $1 in
    package) stage "package: deb, no test library" ctest_in build-asan -L package ;;
    tsan) stage "tsan: build and tests" tsan ;;
    fuzz) stage "fuzz: build and 5 s per target" tests/fuzz/run.sh 5 ;;
    bench) stage "release: bench smokes" release_bench ;;
  esac
}
claim_tail_stages() {
  local name
  for name in "${tail_stages[@]}"; do
    [ -e "$logs/failed" ] && return 1
    mkdir "$logs/claim.$name" 2>/dev/null || continue
    run_tail_stage "$name" || { touch "$logs/failed"; return 1; }
  done
}

lane_asan() {
  stage "asan: build" configure_and_build build-asan -DCMAKE_BUILD_TYPE=Debug -DSMQD_SANITIZE=ON \
      -DSMQD_BENCH=OFF &&
    stage "asan: tests (unit, integration)" asan_tests &&
    claim_tail_stages || { touch "$logs/failed"; return 1; }
}

lane_release() {
  local rc=0
  stage "release: build" configure_and_build build -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_C_FLAGS=-g -DSMQD_VALGRIND=ON || rc=$?
  if [ $rc = 0 ]; then echo ok >"$logs/release-built"; else echo failed >"$logs/release-built"; fi
  [ $rc = 0 ] &&
    stage "release: $([ "$full" = 1 ] && echo "every test but the smoke" || echo "valgrind (every unit test)")" \
      release_tests &&
    stage "release: integration smoke" release_smoke &&
    claim_tail_stages || { touch "$logs/failed"; return 1; }
}

# ---- the run --------------------------------------------------------------------------------

trap print_stages EXIT
stage "dependencies" bash -c '
  scripts/deps.sh test
  if [ ! -d tests/integration/node/node_modules ]; then
    npm ci --prefix tests/integration/node --no-audit --no-fund --loglevel=error
  fi'
stage "structure" bash -c 'scripts/check-structure.sh && tests/structure/test_check_structure.sh'

# Niced in the test command; not with --full, whose long forms in this lane have deadlines.
([ "$full" = 1 ] || renice -n 19 -p "$BASHPID" >/dev/null; prefixed release lane_release) &
release_pid=$!
asan_rc=0
prefixed asan lane_asan || asan_rc=$?
release_rc=0
wait "$release_pid" || release_rc=$?

if [ "$asan_rc" != 0 ] || [ "$release_rc" != 0 ]; then
  echo "== FAILED: asan lane $asan_rc, release lane $release_rc (output above, prefixed [asan] and [release])"
  exit 1
fi
echo "== all tests passed"
