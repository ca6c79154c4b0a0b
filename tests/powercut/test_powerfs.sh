#!/usr/bin/env bash
# test_powerfs.sh — powerfs's own test: a power cut loses exactly the writes no fsync or
# fdatasync covered, keeps the rest, and undoes truncations; "cut-some" keeps a subset; the
# control file rejects anything else; and SQLite behaves on it as on a disk: commits made
# with synchronous=FULL survive a cut, commits made with synchronous=OFF do not; and smqd's
# schema survives a cut right after its first start even with sync = normal.
#
#   POWERFS_BIN=build/tests/powercut/powerfs SMQD_BIN=build/smqd bash tests/powercut/test_powerfs.sh
source "$(dirname "$0")/../integration/lib.sh"
require_tools fusermount3 sqlite3 md5sum dd

MNT="$SUITE_TMP/mnt"
FS_PID=""
FS_RC=""

mount_powerfs() {
    mkdir -p "$MNT"
    [ -x "${POWERFS_BIN:-}" ] || { echo "POWERFS_BIN must name the powerfs binary" >&2; exit 2; }
    "$POWERFS_BIN" "$MNT" 2>"$SUITE_TMP/powerfs.log" &
    FS_PID=$!
    wait_for "powerfs mounted" 5000 test -e "$MNT/.powerfs" || {
        echo "powerfs did not mount (is /dev/fuse usable?):" >&2
        cat "$SUITE_TMP/powerfs.log" >&2
        exit 2
    }
}

unmount_powerfs() {
    [ -n "$FS_PID" ] || return 0
    fusermount3 -u "$MNT" 2>/dev/null || fusermount3 -u -z "$MNT" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$FS_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$FS_PID" 2>/dev/null
    wait "$FS_PID" 2>/dev/null
    FS_RC=$?
    FS_PID=""
}

test_clean_unmount() {
    unmount_powerfs
    assert_eq "powerfs exits 0 on unmount" 0 "$FS_RC"
    assert_no_match "no sanitizer report" 'Sanitizer|runtime error' "$(cat "$SUITE_TMP/powerfs.log")"
}
trap 'unmount_powerfs; cleanup_all' EXIT

cut() { printf '%s' "${1:-cut}" >"$MNT/.powerfs"; }
size_of() { stat -c %s "$1"; }
# pages FILE BYTE: how many 4 KiB pages of FILE start with BYTE (a two-digit hex value)
pages_of_byte() { od -An -v -tx1 -w4096 "$1" | awk -v b="$2" '$1 == b { n++ } END { print n + 0 }'; }
fill() { head -c "$3" /dev/zero | tr '\0' "$2" >"$1"; }   # fill FILE CHAR BYTES

test_unsynced_write_is_lost() {
    printf 'hello' >"$MNT/a"
    cut
    assert_eq "the file is still there (entries are durable)" yes "$([ -e "$MNT/a" ] && echo yes)"
    assert_eq "its unsynced bytes are gone" 0 "$(size_of "$MNT/a")"
}

test_fsync_and_fdatasync_make_durable() {
    printf 'synced' >"$MNT/b"; sync "$MNT/b"
    printf -- '-lost' >>"$MNT/b"
    printf 'data-synced' >"$MNT/c"; sync -d "$MNT/c"
    cut
    assert_eq "fsync kept its bytes, the later append is lost" synced "$(cat "$MNT/b")"
    assert_eq "fdatasync kept its bytes" data-synced "$(cat "$MNT/c")"
}

test_truncate_and_overwrite_are_undone() {
    fill "$MNT/d" A 32768; sync "$MNT/d"
    local before; before=$(md5sum <"$MNT/d")
    printf 'BBBB' | dd of="$MNT/d" bs=1 seek=12290 conv=notrunc status=none
    truncate -s 100 "$MNT/d"
    truncate -s 40000 "$MNT/d"
    cut
    assert_eq "the size is the synced one" 32768 "$(size_of "$MNT/d")"
    assert_eq "the content is the synced one" "$before" "$(md5sum <"$MNT/d")"
}

test_cut_some_keeps_a_subset() {
    fill "$MNT/e" A 262144; sync "$MNT/e"
    fill "$SUITE_TMP/b64" B 262144
    dd if="$SUITE_TMP/b64" of="$MNT/e" bs=4096 conv=notrunc status=none
    assert_eq "before the cut all 64 pages are new" 64 "$(pages_of_byte "$MNT/e" 42)"
    cut "cut-some 20261203"
    local kept; kept=$(pages_of_byte "$MNT/e" 42)
    assert_range "some unsynced pages were kept, some lost" 1 63 "$kept"
    assert_eq "every page is old or new, none torn" 64 $(( kept + $(pages_of_byte "$MNT/e" 41) ))
    assert_match "the counters saw it" 'pages_kept [1-9]' "$(cat "$MNT/.powerfs")"
}

test_control_rejects_other_commands() {
    local w
    for w in bogus "cut-some 0" "cut-some 12 x" "cut now"; do
        if (printf '%s' "$w" >"$MNT/.powerfs") 2>/dev/null; then
            not_ok "'$w' is refused" "the write succeeded"
        else
            ok "'$w' is refused"
        fi
    done
    assert_match "cuts are counted" '^cuts [0-9]+$' "$(head -1 "$MNT/.powerfs")"
}

test_open_with_o_trunc_empties() {
    fill "$MNT/t" A 10000; sync "$MNT/t"
    printf 'short' >"$MNT/t"
    assert_eq "> on an existing file truncates it" short "$(cat "$MNT/t")"
    cut
    assert_eq "and the truncation is undone by a cut like any unsynced change" 10000 "$(size_of "$MNT/t")"
}

test_unlink_open_and_rename() {
    printf 'old' >"$MNT/f"; printf 'new' >"$MNT/g"; sync "$MNT/g"
    mv "$MNT/g" "$MNT/f"
    assert_eq "rename replaces the target" new "$(cat "$MNT/f")"
    exec 3>"$MNT/h"
    rm "$MNT/h"
    if printf 'x' >&3; then ok "an unlinked open file can be written"; else not_ok "write after unlink" ""; fi
    exec 3>&-
    assert_eq "it is gone" no "$([ -e "$MNT/h" ] && echo yes || echo no)"
    assert_range "statfs reports room (MiB free)" 1024 999999999 "$(df -m --output=avail "$MNT" | tail -1 | tr -d ' ')"
}

# 200 commits in one sqlite3 process, then the process exits (its last close checkpoints).
sqlite_commits() {
    local db=$1 mode=$2 i sql
    sql="PRAGMA journal_mode=WAL; PRAGMA synchronous=$mode; CREATE TABLE t(x);"
    for i in $(seq 200); do sql+="INSERT INTO t VALUES($i);"; done
    sqlite3 "$db" "$sql" >/dev/null
}

sqlite_count() { sqlite3 "$1" "SELECT count(*) FROM t" 2>/dev/null || echo 0; }

test_sqlite_full_survives_a_cut() {
    sqlite_commits "$MNT/full.db" FULL
    cut
    assert_eq "integrity after the cut" ok "$(sqlite3 "$MNT/full.db" 'PRAGMA integrity_check')"
    assert_eq "every synchronous=FULL commit survived" 200 "$(sqlite_count "$MNT/full.db")"
}

test_sqlite_off_loses_commits() {
    sqlite_commits "$MNT/off.db" OFF
    assert_eq "before the cut all 200 rows are there" 200 "$(sqlite_count "$MNT/off.db")"
    cut
    assert_range "synchronous=OFF commits are lost at the cut" 0 199 "$(sqlite_count "$MNT/off.db")"
}

# sync = normal leaves the WAL unsynced until the first checkpoint; the schema must not wait
# for one, or a cut soon after the first start leaves a database without tables.
test_smqd_schema_survives_a_cut() {
    local dir="$SUITE_TMP/smqd-conf"
    mkdir -p "$dir"
    write_config "$dir"
    sed -i -e "s|^path = .*|path = $MNT/smqd.db|" -e 's|^sync = full|sync = normal|' "$dir/smqd.conf"
    SMQD_LOG_DIR=$dir smqd_start "$dir" || return
    smqd_kill9
    cut
    assert_eq "the schema version survived the cut" "$SCHEMA_VERSION" \
        "$(sqlite3 "$MNT/smqd.db" 'PRAGMA user_version')"
    assert_eq "so did the tables" "msg msg_body queue" \
        "$(sqlite3 "$MNT/smqd.db" "SELECT name FROM sqlite_schema WHERE name IN ('msg','msg_body','queue') ORDER BY name" | tr '\n' ' ' | sed 's/ $//')"
}

SCHEMA_VERSION=$(sed -n 's/^#define STORE_SCHEMA_VERSION \([0-9]*\)$/\1/p' \
    "$(dirname "$0")/../../include/smqd/store.h")
mount_powerfs
run_test test_unsynced_write_is_lost
run_test test_fsync_and_fdatasync_make_durable
run_test test_truncate_and_overwrite_are_undone
run_test test_cut_some_keeps_a_subset
run_test test_control_rejects_other_commands
run_test test_open_with_o_trunc_empties
run_test test_unlink_open_and_rename
run_test test_sqlite_full_survives_a_cut
run_test test_sqlite_off_loses_commits
run_test test_smqd_schema_survives_a_cut
run_test test_clean_unmount
finish
