#!/usr/bin/env bash
# test.sh — builds smqd and runs every test:
#   0. the structure check (docs/architecture.md's modules and layers) and its own test;
#   1. unit + integration tests (cmocka, curl, official Node SDK) on a normal build;
#   2. the same again under AddressSanitizer + UndefinedBehaviorSanitizer;
#   3. the unit tests under valgrind (zero leaks, zero errors);
#   4. the unit tests that run threads under ThreadSanitizer;
#   5. every libFuzzer target briefly (5 s each; tests/fuzz/README.md has the long run).
# Installs missing Debian packages and the pinned npm packages first.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
jobs=$(nproc)

scripts/deps.sh test
if [ ! -d tests/integration/node/node_modules ]; then
  npm ci --prefix tests/integration/node --no-audit --no-fund --loglevel=error
fi

build_and_test() {   # [CTEST_EXCLUDE=LABEL] build_and_test DIR [cmake args...]
  local dir=$1; shift
  local -a only=()
  [ -n "${CTEST_EXCLUDE:-}" ] && only=(-LE "$CTEST_EXCLUDE")
  echo "== build $dir $*"
  cmake -S "$root" -B "$dir" "$@" >/dev/null
  cmake --build "$dir" -j"$jobs"
  echo "== test $dir ${only[*]}"
  (cd "$dir" && ctest --output-on-failure -j"$jobs" "${only[@]}")
}

echo "== structure"
scripts/check-structure.sh
tests/structure/test_check_structure.sh

build_and_test build -DCMAKE_BUILD_TYPE=RelWithDebInfo
# The Debian package (label "package") builds from the source tree, not from build-asan:
# the first pass ran it already.
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  CTEST_EXCLUDE=package build_and_test build-asan -DCMAKE_BUILD_TYPE=Debug -DSMQD_SANITIZE=ON

echo "== valgrind (unit tests of build/)"
# The PostgreSQL backend's own tests get a throw-away server of their own, for valgrind and
# then ThreadSanitizer (the engine tests run here on SQLite; ctest above ran them on
# PostgreSQL too).
pg_dir=$root/build/pg-valgrind
tests/pg/pg-server.sh stop "$pg_dir" >/dev/null 2>&1 || true
rm -rf "$pg_dir"
tests/pg/pg-server.sh start "$pg_dir" 900 >/dev/null
trap 'tests/pg/pg-server.sh stop "$pg_dir"' EXIT
for t in build/tests/test_*; do
  [ -x "$t" ] || continue
  pg_env=()
  case $(basename "$t") in test_store_pg|test_store_pg_flow|test_lease_pg|test_pg_conn|test_keeper_pg|test_ctl_migrate) pg_env=(SMQD_TEST_PG_DIR="$pg_dir") ;; esac
  (cd build/tests && env "${pg_env[@]}" valgrind -q --leak-check=full \
      --errors-for-leak-kinds=definite,indirect,possible \
      --error-exitcode=99 "./$(basename "$t")" >/dev/null) \
    || { echo "valgrind: $(basename "$t") has memory errors or leaks"; exit 1; }
  echo "valgrind: $(basename "$t") clean"
done
echo "== ThreadSanitizer (the unit tests that start threads)"
threaded=(test_syncer test_engine_sync test_metrics test_ratelimit test_log test_reaper test_xml test_httpd
          test_worker test_crypto test_server test_keeper_pg test_store_pg_flow)
cmake -S "$root" -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS="-fsanitize=thread" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=thread" >/dev/null
cmake --build build-tsan -j"$jobs" --target "${threaded[@]}"
for t in "${threaded[@]}"; do
  (cd build-tsan/tests && SMQD_TEST_PG_DIR="$pg_dir" TSAN_OPTIONS=halt_on_error=1:exitcode=66 \
     "./$t" >"$t.tsan.log" 2>&1) \
    || { echo "tsan: $t has a data race or failed:"; tail -n 60 "build-tsan/tests/$t.tsan.log"; exit 1; }
  echo "tsan: $t clean"
done
tests/pg/pg-server.sh stop "$pg_dir"
trap - EXIT
echo "== fuzz (clang, ASan+UBSan, 5 s per target)"
tests/fuzz/run.sh 5
echo "== all tests passed"
