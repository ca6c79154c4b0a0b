#!/usr/bin/env bash
# pg-server.sh — a throw-away PostgreSQL 15 for the tests, from Debian's
# postgresql-15 package: its own data directory, loopback only, a free port,
# a bounded life, stopped by PID.
#
#   pg-server.sh start DIR [MAX_S]   initdb DIR/data, start; prints the port and
#                                    writes DIR/dsn (a libpq conninfo string).
#                                    MAX_S (default 1800): a watchdog stops the
#                                    server by PID after that many seconds.
#   pg-server.sh stop DIR            fast shutdown by the postmaster's PID, then
#                                    SIGKILL if it has not gone within 10 s
#   pg-server.sh standby PRIMARY_DIR DIR NAME [MAX_S]
#                                    a streaming standby of PRIMARY_DIR in DIR,
#                                    application_name NAME (for
#                                    synchronous_standby_names); prints its port
#
# PostgreSQL refuses to run as root: as root the server runs as the `postgres`
# user the package creates.  The role `smqd` (superuser, trust on loopback) and
# the database `smqd` are created for the tests.
set -euo pipefail

PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}

die() { echo "pg-server.sh: $*" >&2; exit 1; }

as_owner() {
    if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

free_port() {
    python3 - <<'EOF'
import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()
EOF
}

postmaster_pid() { head -1 "$1/data/postmaster.pid" 2>/dev/null || true; }

# watchdog DIR MAX_S: stops the server of DIR by PID after MAX_S seconds.
watchdog() {
    local dir=$1 max=$2 pid
    pid=$(postmaster_pid "$dir")
    [ -n "$pid" ] || return 0
    ( trap '' HUP; sleep "$max"; kill -INT "$pid" 2>/dev/null || true; sleep 10;
      kill -KILL "$pid" 2>/dev/null || true ) </dev/null >/dev/null 2>&1 &
    echo $! >"$dir/watchdog.pid"
}

prepare_dir() {
    local dir=$1
    [ -x "$PG_BIN/initdb" ] || die "$PG_BIN/initdb not found: install postgresql-15 (scripts/deps.sh test)"
    mkdir -p "$dir"
    [ "$(id -u)" -ne 0 ] || chown postgres: "$dir"
    chmod 700 "$dir"
}

start_server() {
    local dir=$1 port=$2 max=$3
    as_owner "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
        -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$dir" \
        start >/dev/null || { tail -20 "$dir/server.log" >&2; die "the server in $dir did not start"; }
    watchdog "$dir" "$max"
}

cmd_start() {
    local dir=$1 max=${2:-1800} port
    prepare_dir "$dir"
    port=$(free_port)
    as_owner "$PG_BIN/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --no-sync >/dev/null \
        || die "initdb failed in $dir"
    cat >>"$dir/data/postgresql.conf" <<EOF
# the tests' settings: durable commits, small, quick to stop
fsync = on
synchronous_commit = on
shared_buffers = 64MB
max_connections = 200
wal_level = replica
max_wal_senders = 5
log_min_messages = warning
log_connections = off
EOF
    echo "host replication all 127.0.0.1/32 trust" >>"$dir/data/pg_hba.conf"
    start_server "$dir" "$port" "$max"
    as_owner "$PG_BIN/psql" -q -h 127.0.0.1 -p "$port" -U postgres -d postgres \
        -c "CREATE ROLE smqd LOGIN SUPERUSER" -c "CREATE DATABASE smqd OWNER smqd" >/dev/null
    echo "host=127.0.0.1 port=$port dbname=smqd user=smqd" >"$dir/dsn"
    echo "$port" >"$dir/port"
    echo "$port"
}

cmd_standby() {
    local primary=$1 dir=$2 name=$3 max=${4:-1800} pport port
    pport=$(cat "$primary/port")
    prepare_dir "$dir"
    port=$(free_port)
    as_owner "$PG_BIN/pg_basebackup" -h 127.0.0.1 -p "$pport" -U postgres -D "$dir/data" -R -X stream -c fast \
        >/dev/null || die "pg_basebackup from $primary failed"
    echo "primary_conninfo = 'host=127.0.0.1 port=$pport user=postgres application_name=$name'" \
        >>"$dir/data/postgresql.auto.conf"
    start_server "$dir" "$port" "$max"
    echo "host=127.0.0.1 port=$port dbname=smqd user=smqd" >"$dir/dsn"
    echo "$port" >"$dir/port"
    echo "$port"
}

cmd_stop() {
    local dir=$1 pid
    pid=$(postmaster_pid "$dir")
    if [ -f "$dir/watchdog.pid" ]; then
        kill "$(cat "$dir/watchdog.pid")" 2>/dev/null || true
        rm -f "$dir/watchdog.pid"
    fi
    [ -n "$pid" ] || return 0
    kill -INT "$pid" 2>/dev/null || return 0
    for _ in $(seq 100); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
}

# The server runs in another working directory: every DIR is made absolute.
abs() { realpath -m -- "$1"; }
case "${1:-}" in
start) [ $# -ge 2 ] || die "usage: pg-server.sh start DIR [MAX_S]"; cmd_start "$(abs "$2")" "${3:-1800}" ;;
standby) [ $# -ge 4 ] || die "usage: pg-server.sh standby PRIMARY_DIR DIR NAME [MAX_S]"
         cmd_standby "$(abs "$2")" "$(abs "$3")" "$4" "${5:-1800}" ;;
stop) [ $# -ge 2 ] || die "usage: pg-server.sh stop DIR"; cmd_stop "$(abs "$2")" ;;
*) die "usage: pg-server.sh start|standby|stop ..." ;;
esac
