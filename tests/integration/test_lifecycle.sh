#!/usr/bin/env bash
# test_lifecycle.sh — the process lifecycle of the real smqd binary: one
# server per database, SIGHUP reload of keys and log level without dropping
# connections, SIGTERM drain (parked long polls answered, exit 0), refusal to
# start on a corrupt, newer or read-only database, configuration errors, and a
# database path that is a symbolic link.
#
# Run: SMQD_BIN=build/smqd bash tests/integration/test_lifecycle.sh

set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"

require_tools curl openssl xmllint md5sum
require_bin

# A second smqd on the same data must refuse to start, naming the holder.
t_second_instance() {
    local out="$SUITE_TMP/second.err" rc
    timeout 10 "$SMQD_BIN" -c "$SMQD_DIR/smqd.conf" 2>"$out" </dev/null
    rc=$?
    assert_eq "second smqd exits with the storage code" 2 "$rc"
    assert_match "it says the data is in use and by whom" "in use by another smqd process \(pid $SMQD_PID" "$(cat "$out")"
    mns_request GET /queues
    assert_status "the first one still serves" 200
}

# SIGHUP swaps the access keys and the log level; a bad file changes nothing.
t_sighup() {
    local conf="$SMQD_DIR/smqd.conf" keep="$SUITE_TMP/conf.keep"
    cp "$conf" "$keep"
    mns_request PUT /queues/hup
    assert_status "queue for the reload test" 201

    sed -i 's/^access_key_secret = .*/access_key_secret = rotated-secret/' "$conf"
    kill -HUP "$SMQD_PID"
    wait_for "reload is logged" 5000 grep -q "SIGHUP: reloaded" "$SMQD_LOG"
    mns_request GET /queues/hup
    assert_error "the old secret is refused after the reload" 403 SignatureDoesNotMatch
    MNS_SK=rotated-secret mns_request GET /queues/hup
    assert_status "the new secret works" 200
    MNS_AK=secondKey MNS_SK=secondSecret mns_request GET /queues/hup
    assert_status "an extra key pair kept in the file still works" 200

    printf '[limits]\nmax_connections = lots\n' >>"$conf"
    kill -HUP "$SMQD_PID"
    wait_for "a bad file is reported with file:line" 5000 \
        grep -q "SIGHUP: $conf:[0-9]*: \[limits\] max_connections" "$SMQD_LOG"
    MNS_SK=rotated-secret mns_request GET /queues/hup
    assert_status "after a bad file the running keys stay" 200

    cp "$keep" "$conf"
    sed -i 's/^level = info/level = warn/' "$conf"
    kill -HUP "$SMQD_PID"
    wait_for "second reload is logged" 5000 grep -q "log level warn" "$SMQD_LOG"
    mns_request GET /queues/hup
    assert_status "the original secret works again" 200
    local id=$RESP_ID
    mns_request GET /queues/hup
    assert_eq "at level warn the request lines are no longer logged" 0 "$(grep -c "id=$id" "$SMQD_LOG")"
    cp "$keep" "$conf"
}

# in_flight_is N — smqd_http_requests_in_flight (parked long polls included) is N.
in_flight_is() {
    [ "$(curl -s --noproxy '*' --max-time 10 "http://$SMQD_ADMIN/metrics" |
         awk '$1 == "smqd_http_requests_in_flight" { print $2 }')" = "$1" ]
}

# SIGTERM answers parked long polls with MessageNotExist at once and exits 0.
t_sigterm_drains() {
    local out="$SUITE_TMP/lp" t0
    mns_request PUT /queues/drain
    assert_status "queue for the drain test" 201
    mns_request_bg "$out" GET '/queues/drain/messages?waitseconds=25'
    # Polled, not a fixed sleep: the poll must be parked before the SIGTERM (the case under
    # test), however long a loaded machine takes to sign and send it.
    wait_for "the long poll is parked" 10000 in_flight_is 1
    t0=$(now_ms)
    smqd_stop
    assert_eq "SIGTERM exits 0" 0 "$SMQD_EXIT"
    bg_wait "$out" 15000
    assert_eq "the parked long poll got an answer" 404 "$BG_STATUS"
    assert_match "that answer is MessageNotExist" '<Code>MessageNotExist</Code>' "$BG_BODY"
    # The stop includes the process's exit (an ASan build checks for leaks then) and the
    # client's own polling; 10 s still tells "answered at once" from the poll's 25 s.
    assert_range "stop took well under the poll's 25 s" 0 10000 "$(( $(now_ms) - t0 ))"
}

# A file that is not a database is refused, never rebuilt, and left untouched.
t_corrupt_database() {
    local dir before rc out
    new_server_dir
    dir=$NEW_DIR
    (umask 077; head -c 8192 /dev/urandom >"$dir/smqd.db")   # owner-only, as smqd makes it
    before=$(md5sum <"$dir/smqd.db")
    out="$SUITE_TMP/corrupt.err"
    timeout 10 "$SMQD_BIN" -c "$dir/smqd.conf" 2>"$out" </dev/null
    rc=$?
    assert_eq "smqd refuses a corrupt database (storage exit code)" 2 "$rc"
    assert_match "with a message naming the file" "$dir/smqd.db" "$(cat "$out")"
    assert_eq "the file is left byte for byte" "$before" "$(md5sum <"$dir/smqd.db")"
}

# A database written by a newer smqd (higher user_version) is refused.
t_newer_database() {
    local dir rc out before
    new_server_dir
    dir=$NEW_DIR
    smqd_start "$dir" || return
    mns_request PUT /queues/newer
    smqd_stop
    # user_version is the 4-byte big-endian integer at offset 60 of the header.
    printf '\x00\x00\x00\x63' | dd of="$dir/smqd.db" bs=1 seek=60 conv=notrunc status=none
    before=$(md5sum <"$dir/smqd.db")
    out="$SUITE_TMP/newer.err"
    timeout 10 "$SMQD_BIN" -c "$dir/smqd.conf" 2>"$out" </dev/null
    rc=$?
    assert_eq "smqd refuses a newer schema (storage exit code)" 2 "$rc"
    assert_match "and says why" "newer than this smqd supports" "$(cat "$out")"
    assert_eq "the newer database is left untouched" "$before" "$(md5sum <"$dir/smqd.db")"
}

# A database file the service user cannot write (say, restored as root) stops the start with
# the storage exit code: SQLite would open it read-only without a word, and smqd would report
# ready and then answer every write 500.  Needs root, to run smqd as nobody.
t_readonly_database() {
    local dir rc out
    if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null; then
        not_ok "a read-only database is refused (needs root and setpriv to run as nobody)" \
               "uid $(id -u)"
        return
    fi
    new_server_dir
    dir=$NEW_DIR
    smqd_start "$dir" || return
    mns_request PUT /queues/ro
    smqd_stop
    rm -f "$dir/smqd.db.lock"
    chmod 0777 "$dir"
    # Readable for nobody through its group (a database others can read is refused before
    # the store is opened, with another exit code).
    chgrp 65534 "$dir/smqd.db" && chmod 0640 "$dir/smqd.db"
    chmod 0644 "$dir/smqd.conf"
    out="$SUITE_TMP/readonly.err"
    timeout 10 setpriv --reuid=65534 --regid=65534 --clear-groups \
        "$SMQD_BIN" -c "$dir/smqd.conf" 2>"$out" </dev/null
    rc=$?
    assert_eq "smqd refuses a database it cannot write (storage exit code)" 2 "$rc"
    assert_match "and says why" "not writable by this user" "$(cat "$out")"
}

# Nobody else can read the messages or change the keys (docs/operations.md, "Security"): the
# database files are made owner-only under any umask, a database or config others could use
# stops the start, and an admin listener beyond loopback needs a token.
t_exposure() {
    local dir rc out
    new_server_dir
    dir=$NEW_DIR
    local saved
    saved=$(umask)
    umask 022                    # the usual one, which would make SQLite's files 0644
    smqd_start "$dir"
    rc=$?
    umask "$saved"
    [ "$rc" = 0 ] || return
    mns_request PUT /queues/modes
    assert_eq "the database is owner-only" 600 "$(stat -c %a "$dir/smqd.db")"
    assert_eq "so is its WAL" 600 "$(stat -c %a "$dir/smqd.db-wal")"
    assert_eq "and its shared-memory file" 600 "$(stat -c %a "$dir/smqd.db-shm")"
    smqd_stop
    chmod 0644 "$dir/smqd.db"
    out="$SUITE_TMP/exposure.err"
    timeout 10 "$SMQD_BIN" -c "$dir/smqd.conf" 2>"$out" </dev/null
    rc=$?
    assert_eq "a database every user can read stops the start (configuration exit code)" 1 "$rc"
    assert_match "saying why and how to fix it" "smqd.db is accessible to every user.*chmod o-rwx" "$(cat "$out")"
    chmod 0600 "$dir/smqd.db"
    chmod 0646 "$dir/smqd.conf"
    out=$("$SMQD_BIN" -t -c "$dir/smqd.conf" 2>&1 >/dev/null); rc=$?
    assert_eq "smqd -t refuses a config every user can write" 1 "$rc"
    assert_match "naming it" "smqd.conf is writable by every user" "$out"
    chmod 0644 "$dir/smqd.conf"
    out=$("$SMQD_BIN" -t -c "$dir/smqd.conf" 2>&1 >/dev/null); rc=$?
    assert_eq "a config every user can read is accepted" 0 "$rc"
    assert_match "with a warning" "warning: .*smqd.conf is readable by every user" "$out"
    chmod 0600 "$dir/smqd.conf"
    sed -i 's/^listen = 127.0.0.1:0$/listen = 0.0.0.0:0/' "$dir/smqd.conf"   # both listeners
    out=$("$SMQD_BIN" -t -c "$dir/smqd.conf" 2>&1 >/dev/null); rc=$?
    assert_eq "an admin listener on every address without a token is refused" 1 "$rc"
    assert_match "as a configuration error" "\[admin\] listen: 0.0.0.0 is reachable from other hosts" "$out"
}

# Configuration errors stop start-up with file:line and exit code 1.
t_config_errors() {
    local dir out rc
    new_server_dir
    dir=$NEW_DIR
    printf '[server]\nthreads = 0\n' >"$dir/bad.conf"
    out="$SUITE_TMP/conf.err"
    timeout 10 "$SMQD_BIN" -c "$dir/bad.conf" 2>"$out" </dev/null
    rc=$?
    assert_eq "a bad value exits 1" 1 "$rc"
    assert_match "with file:line" "$dir/bad.conf:2: \[server\] threads" "$(cat "$out")"
    timeout 10 "$SMQD_BIN" -t -c "$dir/smqd.conf" >"$SUITE_TMP/t.out" 2>/dev/null
    assert_eq "-t on a good file exits 0" 0 "$?"
    assert_match "-t prints the effective settings, secrets masked" 'access_key_secret = \*\*\*\*\*\*\*\*' \
        "$(cat "$SUITE_TMP/t.out")"
    # backend = postgresql: -t checks the settings without reaching the database.
    printf '[auth]\naccess_key_id = id1\naccess_key_secret = s3cret-one\n[storage]\nbackend = postgresql\n%s\n[cluster]\nnode_id = a\n' \
        'dsn = host=127.0.0.1,127.0.0.2 port=5432 dbname=smqd user=smqd password=hunter2' >"$dir/pg.conf"
    chmod 0600 "$dir/pg.conf"
    timeout 10 "$SMQD_BIN" -t -c "$dir/pg.conf" >"$SUITE_TMP/t.out" 2>"$out"
    assert_eq "-t accepts a PostgreSQL configuration" 0 "$?"
    assert_match "and prints its dsn with the password masked" \
        'dsn = host=127.0.0.1,127.0.0.2 port=5432 dbname=smqd user=smqd password=\*\*\*\*\*\*\*\*' \
        "$(cat "$SUITE_TMP/t.out")"
    assert_no_match "never the password itself" hunter2 "$(cat "$SUITE_TMP/t.out" "$out")"
    sed -i '/^node_id/d' "$dir/pg.conf"
    timeout 10 "$SMQD_BIN" -t -c "$dir/pg.conf" >/dev/null 2>"$out"
    assert_eq "without [cluster] node_id it is refused (exit 1)" 1 "$?"
    assert_match "saying what is missing" "needs \[cluster\] node_id" "$(cat "$out")"
    printf '[cluster]\nnode_id = a\npath = x\n' >>"$dir/pg.conf"
    sed -i 's/^path = x$//; s/^backend = postgresql$/backend = postgresql\npath = .\/smqd.db/' "$dir/pg.conf"
    timeout 10 "$SMQD_BIN" -t -c "$dir/pg.conf" >/dev/null 2>"$out"
    assert_eq "a SQLite-only key with it is refused (exit 1)" 1 "$?"
    assert_match "naming the key" "\[storage\] path is SQLite-only" "$(cat "$out")"
    # Started for real against a PostgreSQL nobody listens for: exit 2 (storage), saying so.
    printf '[auth]\naccess_key_id = id1\naccess_key_secret = s3cret-one\n[storage]\nbackend = postgresql\n%s\n[cluster]\nnode_id = a\n[server]\nlisten = 127.0.0.1:0\n[admin]\nlisten = off\n' \
        'dsn = host=127.0.0.1 port=1 dbname=smqd user=smqd connect_timeout=2' >"$dir/pg-down.conf"
    chmod 0600 "$dir/pg-down.conf"
    timeout 20 "$SMQD_BIN" -c "$dir/pg-down.conf" </dev/null >"$out" 2>&1
    assert_eq "an unreachable PostgreSQL at start exits 2" 2 "$?"
    assert_match "and the log says which server" 'storage: PostgreSQL: .*cannot connect.*port 1' \
        "$(cat "$out")"
}

# A signed GET /queues as raw bytes, for requests written straight to a socket.
raw_list_request() {
    local date auth
    date=$(http_date)
    auth=$(mns_authorization "$MNS_AK_DEFAULT" "$MNS_SK_DEFAULT" GET '' '' "$date" /queues \
           'x-mns-version: 2015-06-06')
    printf 'GET /queues HTTP/1.1\r\nHost: %s\r\nDate: %s\r\nx-mns-version: 2015-06-06\r\nAuthorization: %s\r\n\r\n' \
        "$SMQD_ADDR" "$date" "$auth"
}

# Reads from fd 3 until nothing more comes for 0.5 s; prints what arrived.
drain_fd3() {
    local out="" line
    while IFS= read -r -t 0.5 line <&3; do out+="$line"$'\n'; done
    printf '%s' "$out"
}

# SIGTERM while a kept-alive client is still connected: a request it sends
# during the drain gets an answer (503) or a clean close, never a crash, and
# the server still exits 0 (the sanitizer build turns a use-after-free into
# a non-zero exit).
t_request_during_drain() {
    trap "" PIPE            # the server may close the socket we write to
    local host=${SMQD_ADDR%:*} port=${SMQD_ADDR##*:} reply
    exec 3<>"/dev/tcp/$host/$port" 4<>"/dev/tcp/$host/$port"
    raw_list_request >&3
    reply=$(drain_fd3)
    assert_match "the kept-alive connection is served first" '^HTTP/1.1 200' "$reply"
    # A second request that stays incomplete keeps the drain waiting.
    printf 'PUT /queues/x HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc' >&4
    sleep 0.3                   # let the server read it: a begun request holds the drain open
    kill -TERM "$SMQD_PID"
    sleep 0.5
    raw_list_request >&3 2>/dev/null
    reply=$(drain_fd3)
    case $reply in
        ''|'HTTP/1.1 503'*) ok "a request during the drain gets 503 or a close" ;;
        *) not_ok "a request during the drain gets 503 or a close" "$reply" ;;
    esac
    exec 3>&- 4>&-
    smqd_stop
    assert_eq "the server still exits 0" 0 "$SMQD_EXIT"
}

# A client that, after one answered request, trickles the next request line
# one byte at a time (each byte within the idle timeout) is cut off: the
# time it may hold the connection is bounded.
t_trickle_after_keepalive() {
    local dir host port t0 closed=0 i x rc
    new_server_dir
    dir=$NEW_DIR
    printf '[limits]\nidle_timeout_s = 2\nrequest_timeout_s = 3\n' >>"$dir/smqd.conf"
    smqd_start "$dir" || return
    host=${SMQD_ADDR%:*} port=${SMQD_ADDR##*:}
    exec 3<>"/dev/tcp/$host/$port"
    printf 'GET /queues HTTP/1.1\r\nHost: x\r\n\r\n' >&3
    drain_fd3 >/dev/null
    t0=$(now_ms)
    for i in $(seq 1 40); do
        { printf 'G' >&3; } 2>/dev/null || { closed=1; break; }
        IFS= read -r -t 0.5 -N 1 x <&3
        rc=$?
        if [ "$rc" -gt 0 ] && [ "$rc" -le 128 ]; then closed=1; break; fi   # EOF, not a timeout
    done
    exec 3>&-
    assert_eq "the trickling connection is shut down" 1 "$closed"
    assert_range "within the idle timeout plus the request timeout" 0 9000 "$(( $(now_ms) - t0 ))"
    smqd_stop
}

# The database path is a symbolic link into another directory: SQLite keeps
# its WAL next to the real file, and the syncer must flush that one, not a
# "<link>-wal" that does not exist.
t_symlinked_database() {
    local real
    new_server_dir
    real=$(mktemp -d "${TMPDIR:-/tmp}/smqd-it-real.XXXXXX")
    SERVER_DIRS+=("$real")
    ln -s "$real/data.db" "$NEW_DIR/link.db"
    sed -i "s|^path = .*|path = $NEW_DIR/link.db|" "$NEW_DIR/smqd.conf"
    smqd_start "$NEW_DIR" || return
    create_queue symq
    send_msg symq "through the link"
    assert_eq "the WAL is next to the real file" yes "$([ -e "$real/data.db-wal" ] && echo yes)"
    assert_eq "smqd_wal_bytes is that file's size" "$(stat -c %s "$real/data.db-wal")" \
        "$(curl -s "http://$SMQD_ADMIN/metrics" | awk '$1 == "smqd_wal_bytes" { print $2 }')"
    smqd_stop
    assert_eq "clean exit" 0 "$SMQD_EXIT"
    smqd_start "$NEW_DIR" || return
    mns_request GET '/queues/symq/messages?waitseconds=1'
    assert_status "the message survived the restart" 200
    assert_match "with its body" "through the link" "$RESP_BODY"
    smqd_stop
}

# A client that goes away in the middle of its body still leaves a request
# log line with an id of its own (action "-", no status), like any request.
t_body_abandoned() {
    trap "" PIPE
    local host port
    smqd_start || return
    host=${SMQD_ADDR%:*} port=${SMQD_ADDR##*:}
    exec 3<>"/dev/tcp/$host/$port"
    printf 'PUT /queues/x HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc' >&3
    sleep 0.3                   # let the server read the headers and the first bytes
    exec 3>&-
    wait_for "the abandoned request is logged with an id" 3000 \
        grep -Eq 'request id=[0-9A-F]{24} access_key=- action=- queue=- status=0' "$SMQD_LOG"
    smqd_stop
}

run_test t_config_errors
run_test t_exposure
run_test t_body_abandoned
run_test t_symlinked_database
run_test t_corrupt_database
run_test t_newer_database
run_test t_readonly_database
if smqd_start; then
    run_test t_second_instance
    run_test t_sighup
    run_test t_sigterm_drains
fi
run_test t_trickle_after_keepalive
if smqd_start; then
    run_test t_request_during_drain
fi
finish
