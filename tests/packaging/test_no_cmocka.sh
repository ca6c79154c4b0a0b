#!/usr/bin/env bash
# test_no_cmocka.sh — smqd builds on a machine without the test library (README, "Set up"):
# the source tree is configured in a throwaway directory with cmocka hidden from pkg-config
# (every other .pc file stays visible), and
#   - a plain configure (SMQD_TESTS=AUTO) succeeds and says the tests are not built, and why;
#   - -DSMQD_TESTS=ON fails at configure, naming cmocka;
#   - smqd and smqctl build (only those targets, -O0: this is about configuring and linking
#     without cmocka, not about the code, which every other build compiles).
# Hiding cmocka.pc rather than uninstalling it: PKG_CONFIG_LIBDIR replaces pkg-config's search
# path with a directory of links to every .pc file of that path but cmocka.pc.
#
# Run: bash tests/packaging/test_no_cmocka.sh   (no root, nothing installed)

set -u
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/smqd-no-cmocka.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
FAILED=0

ok() { echo "ok - $1"; }
not_ok() { echo "not ok - $1"; [ -n "${2:-}" ] && printf '%s\n' "$2" | sed 's/^/#   /'; FAILED=1; }

# The search path pkg-config would use (PKG_CONFIG_PATH first, as pkg-config does), minus cmocka.
mkdir "$WORK/pc"
IFS=: read -ra dirs <<<"${PKG_CONFIG_PATH:+$PKG_CONFIG_PATH:}$(pkg-config --variable pc_path pkg-config)"
for d in "${dirs[@]}"; do
    for pc in "$d"/*.pc; do
        [ -e "$pc" ] || continue
        name=${pc##*/}
        # The first one found wins, as in pkg-config's own search.
        [ "$name" = cmocka.pc ] || [ -e "$WORK/pc/$name" ] || ln -s "$pc" "$WORK/pc/$name"
    done
done
export PKG_CONFIG_LIBDIR="$WORK/pc"
unset PKG_CONFIG_PATH
if pkg-config --exists cmocka; then
    not_ok "cmocka is hidden from pkg-config"
elif ! pkg-config --exists libmicrohttpd sqlite3; then
    not_ok "the daemon's libraries stay visible to pkg-config"
else
    ok "cmocka is hidden from pkg-config, the daemon's libraries are not"
fi

if cmake -S "$SRC" -B "$WORK/on" -DSMQD_TESTS=ON >"$WORK/on.log" 2>&1; then
    not_ok "SMQD_TESTS=ON without cmocka fails at configure" "$(tail -n 5 "$WORK/on.log")"
elif grep -q "the tests need cmocka" "$WORK/on.log"; then
    ok "SMQD_TESTS=ON without cmocka fails at configure, naming cmocka"
else
    not_ok "SMQD_TESTS=ON's failure names cmocka" "$(tail -n 10 "$WORK/on.log")"
fi

# CMAKE_BUILD_TYPE=None: no -O, no -g (the top-level default would be RelWithDebInfo).
if ! cmake -S "$SRC" -B "$WORK/b" -DCMAKE_BUILD_TYPE=None >"$WORK/cfg.log" 2>&1; then
    not_ok "a plain configure without cmocka succeeds" "$(tail -n 10 "$WORK/cfg.log")"
else
    ok "a plain configure without cmocka succeeds"
    if grep -q "Tests: not built, missing cmocka" "$WORK/cfg.log"; then
        ok "configure says the tests are not built, and what is missing"
    else
        not_ok "configure says the tests are not built" "$(grep -i tests "$WORK/cfg.log")"
    fi
    if cmake --build "$WORK/b" -j2 --target smqd smqctl >"$WORK/build.log" 2>&1 &&
        [ -x "$WORK/b/smqd" ] && [ -x "$WORK/b/smqctl" ]; then
        ok "smqd and smqctl build"
    else
        not_ok "smqd and smqctl build" "$(tail -n 15 "$WORK/build.log")"
    fi
    if [ -e "$WORK/b/tests" ]; then
        not_ok "no test directory is configured" "$(ls "$WORK/b/tests")"
    else
        ok "no test directory is configured"
    fi
fi
exit "$FAILED"
