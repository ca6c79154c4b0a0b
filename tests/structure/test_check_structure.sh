#!/usr/bin/env bash
# test_check_structure.sh — shows that scripts/check-structure.sh passes on the tree as it is
# and fails, naming the problem, on each kind of violation it exists to catch: every case
# copies the sources (the folders under src/ and include/smqd/) to a scratch directory,
# breaks one rule there and runs the check.
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
failures=0
cases=0

fresh_copy() {
    rm -rf "$scratch/tree"
    mkdir -p "$scratch/tree/docs" "$scratch/tree/scripts"
    cp -r "$repo/src" "$repo/include" "$scratch/tree/"
    cp "$repo/docs/architecture.md" "$scratch/tree/docs/"
    cp "$repo/scripts/check-structure.sh" "$scratch/tree/scripts/"
}

run_check() { "$scratch/tree/scripts/check-structure.sh" "$scratch/tree" >"$scratch/out" 2>&1; }

# expect_violation NAME EXPECTED_TEXT — the check must fail and say EXPECTED_TEXT.
expect_violation() {
    cases=$((cases + 1))
    if run_check; then
        echo "FAIL $1: the check passed"
        failures=$((failures + 1))
    elif ! grep -qF -- "$2" "$scratch/out"; then
        echo "FAIL $1: the check failed without saying '$2':"
        sed 's/^/    /' "$scratch/out"
        failures=$((failures + 1))
    else
        echo "ok   $1"
    fi
}

append() { printf '%s\n' "$2" >>"$scratch/tree/$1"; }

fresh_copy
cases=$((cases + 1))
if run_check; then
    echo "ok   the tree as it is"
else
    echo "FAIL the tree as it is:"
    sed 's/^/    /' "$scratch/out"
    failures=$((failures + 1))
fi

fresh_copy
append src/base/buf.c '#include "smqd/engine.h"'
expect_violation "a base module includes the engine" \
    "src/base/buf.c (module buf, layer 0) includes include/smqd/engine.h (module engine, layer 3)"

fresh_copy
append include/smqd/errors.h '#include "smqd/log.h"'
expect_violation "two modules of one layer include each other" "the module graph has a cycle"

fresh_copy
append src/engine/engine.c '#include <sqlite3.h>'
expect_violation "the engine includes sqlite3.h" \
    "src/engine/engine.c includes <sqlite3.h>: only the files docs/architecture.md names"

fresh_copy
append src/api/api.c '#include "xml_doc.h"'
expect_violation "libxml2 reached through a private header" \
    "src/api/api.c includes src/mns/xml_doc.h, which carries a third-party header"

fresh_copy
append src/api/api.c '#include "txn.h"'
expect_violation "a header private to the engine used by the API" \
    "src/api/api.c includes src/engine/txn.h, a header private to src/engine/"

fresh_copy
append src/mns/query.c '#include "smqd/ratelimit.h"'
expect_violation "two folders include each other (no module cycle, no upward layer)" \
    "folders src/meter/ and src/mns/ include each other: include/smqd/metrics.h includes include/smqd/mns.h, and src/mns/query.c includes include/smqd/ratelimit.h"

fresh_copy
append src/mns/grant.c '#include "smqd/role.h"'
append src/cluster/role.c '#include "smqd/storage.h"'
expect_violation "three folders around a loop (config/ already includes mns/)" \
    "the folders include each other around a loop"

fresh_copy
append src/store/pg/pg_conn.h '#include "pg_store.h"'
append src/store/pg/pg_store.h '#include "pg_conn.h"'
expect_violation "two headers of one module include each other (no module cycle)" \
    "headers include each other around a loop"

fresh_copy
append src/store/pg/pg_conn.h '#include "pg_conn.h"'
expect_violation "a header includes itself" "src/store/pg/pg_conn.h includes itself"

fresh_copy
mv "$scratch/tree/src/mns/xml_write.c" "$scratch/tree/src/api/"
expect_violation "a module split between two folders" \
    "module xml has files in src/mns/ and src/api/"

fresh_copy
cp "$scratch/tree/src/base/buf.c" "$scratch/tree/src/engine/buf.c"
expect_violation "two files of one name" "have the same name"

fresh_copy
append src/base/buf.c '#include <zlib.h>'
expect_violation "an unlisted library" "src/base/buf.c includes <zlib.h>, neither a C/POSIX header"

fresh_copy
printf '/* stray.c — owns nothing. */\n' >"$scratch/tree/src/stray.c"
expect_violation "a file of no module" "src/stray.c belongs to no module"

fresh_copy
rm "$scratch/tree/src/base/heap.c"
expect_violation "the table names a file that is gone" "module heap lists heap.c, which does not exist"

fresh_copy
for _ in $(seq 800); do append src/base/buf.c '/* padding */'; done
expect_violation "a file over 800 lines" "src/base/buf.c has "

fresh_copy
{
    printf 'int check_structure_long(int x);\nint check_structure_long(int x)\n{\n'
    for i in $(seq 70); do printf '    x += %d;\n' "$i"; done
    printf '    return x;\n}\n'
} >>"$scratch/tree/src/base/buf.c"
expect_violation "a function over 60 lines" \
    "src/base/buf.c: function int check_structure_long has 74 lines (at most 60)"

fresh_copy
sed -i '1i\\' "$scratch/tree/src/base/heap.c"
expect_violation "a file without its top comment" \
    "src/base/heap.c does not start with a comment saying what it owns"

fresh_copy
append include/smqd/buf.h 'extern int buf_calls;'
expect_violation "a mutable global in a header" \
    "mutable global declared in a header: include/smqd/buf.h"

echo "check-structure: $((cases - failures)) of $cases cases as expected"
[ "$failures" -eq 0 ]
