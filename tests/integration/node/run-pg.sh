#!/usr/bin/env bash
# run-pg.sh — the Node SDK suite against smqd on PostgreSQL (ctest integration.node_sdk_pg):
# one throw-away PostgreSQL (tests/pg/pg-server.sh) for the whole run, every smqd the suite
# starts in its own schema of it (harness.js, SMQD_TEST_PG_DSN), stopped by PID at exit.
# No test file reads the SQLite .db file, so none is skipped on PostgreSQL; a test that
# does must skip itself with a printed reason when harness.PG_DSN is set.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
pg=$(mktemp -d /tmp/smqd-node-pg.XXXXXX)
cleanup() { bash "$here/../../pg/pg-server.sh" stop "$pg" >/dev/null 2>&1 || true; rm -rf "$pg"; }
trap cleanup EXIT
bash "$here/../../pg/pg-server.sh" start "$pg" 600 >/dev/null
SMQD_TEST_PG_DSN=$(cat "$pg/dsn")
export SMQD_TEST_PG_DSN
cd "$here"
node --test queue.test.js message.test.js crash.test.js dlq.test.js grants.test.js topic.test.js
