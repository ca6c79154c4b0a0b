#!/usr/bin/env bash
# run.sh — builds smqd (Release) and runs it on conf/smqd.conf in the
# foreground.  The database file is ./smqd.db in the repository; stop with Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/deps.sh build
cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DSMQD_TESTS=OFF -DSMQD_BENCH=OFF >/dev/null
cmake --build build-release -j"$(nproc)"
exec build-release/smqd -c conf/smqd.conf
