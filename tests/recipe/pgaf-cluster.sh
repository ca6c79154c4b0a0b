#!/usr/bin/env bash
# pgaf-cluster.sh — a throw-away PostgreSQL 15 formation managed by pg_auto_failover
# (Debian 12: pg-auto-failover-cli, postgresql-15-auto-failover): a monitor and two
# nodes, synchronous replication, all on 127.0.0.1, free ports, a bounded life,
# stopped by PID.  The recipe of docs/operations.md ("Two nodes on PostgreSQL with
# failover") runs on it (tests/recipe/run.sh).
#
#   pgaf-cluster.sh start DIR [MAX_S]  monitor + node1 (primary) + node2 (synchronous
#                                      standby) in DIR; role and database smqd; writes
#                                      DIR/dsn and prints it.  MAX_S (default 1800): a
#                                      watchdog stops everything by PID after that.
#   pgaf-cluster.sh stop DIR           stops the nodes, then the monitor, by PID
#                                      (SIGTERM, SIGKILL after 20 s)
#   pgaf-cluster.sh failover DIR       pg_autoctl perform failover, then waits until the
#                                      other node is primary with its standby back
#   pgaf-cluster.sh dsn DIR            the multi-host libpq dsn smqd uses
#   pgaf-cluster.sh primary DIR        the name of the node that is primary now
#   pgaf-cluster.sh state DIR          pg_autoctl show state
#   pgaf-cluster.sh events DIR         the monitor's history of state changes, oldest first:
#                                      "EPOCH_MS HH:MM:SS.mmm NODE reported/goal LSN description"
#                                      (a wait_primary is a primary whose COMMITs no longer
#                                      wait for the standby)
#
# PostgreSQL and pg_autoctl refuse to run as root: as root they run as the `postgres`
# user (setpriv execs, so a recorded PID is pg_autoctl's own).  pg_autoctl keeps its
# configuration and state under XDG_* directories, pointed into DIR so that nothing
# lands in postgres's home.  Why pg_auto_failover and not Patroni + etcd: one package
# pair, one command per node, no separate consensus store to run (the monitor is a
# PostgreSQL); see docs/operations.md.
set -euo pipefail

PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
SELF=$(realpath "$0")
NODES=(node1 node2)

die() { echo "pgaf-cluster.sh: $*" >&2; exit 1; }
log() { echo "pgaf-cluster.sh: $*" >&2; }

free_port() {
    python3 - <<'EOF'
import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()
EOF
}

# as_pg CMD...: CMD as the owner of the data directories, with pg_autoctl's XDG
# directories inside DIR.  exec'd, so `as_pg ... &` records the command's own PID.
as_pg() {
    local -a envs=(HOME="$DIR" XDG_CONFIG_HOME="$DIR/xdg/config" XDG_DATA_HOME="$DIR/xdg/data"
                   XDG_RUNTIME_DIR="$DIR/xdg/run" PGCONNECT_TIMEOUT=5)
    if [ "$(id -u)" -eq 0 ]; then
        exec setpriv --reuid postgres --regid postgres --init-groups env "${envs[@]}" "$@"
    fi
    exec env "${envs[@]}" "$@"
}

port_of() { sed -n "s/^$1 //p" "$DIR/ports"; }

# sql PORT DB QUERY: one unaligned answer, as the superuser postgres (trust on loopback).
sql() {
    psql -X -qAt -h 127.0.0.1 -p "$1" -U postgres -d "$2" -v ON_ERROR_STOP=1 -c "$3"
}

# node_state NAME: "reported goal" for NAME, as the monitor sees it.
node_state() {
    sql "$(port_of monitor)" pg_auto_failover \
        "SELECT reportedstate || ' ' || goalstate FROM pgautofailover.node WHERE nodename = '$1'" \
        2>/dev/null || true
}

# wait_for SECONDS WHAT CMD...: polls CMD every 0.5 s until it succeeds.
wait_for() {
    local max=$1 what=$2 end
    shift 2
    end=$(( SECONDS + max ))
    until "$@"; do
        [ "$SECONDS" -lt "$end" ] || { cmd_state >&2 || true; die "timed out ($max s) waiting for $what"; }
        sleep 0.5
    done
}

is_state() { [ "$(node_state "$1")" = "$2 $2" ]; }

stable() { is_state "$1" primary && is_state "$2" secondary; }

start_bg() {   # start_bg NAME CMD...: CMD in the background, its PID in DIR/NAME.pid
    local name=$1
    shift
    ( as_pg "$@" ) </dev/null >>"$DIR/$name.log" 2>&1 &
    echo $! >"$DIR/$name.pid"
}

start_monitor() {
    local port
    port=$(free_port)
    echo "monitor $port" >>"$DIR/ports"
    ( as_pg pg_autoctl create monitor --pgdata "$DIR/monitor" --pgport "$port" --hostname 127.0.0.1 \
        --auth trust --no-ssl --pgctl "$PG_BIN/pg_ctl" ) >>"$DIR/monitor.log" 2>&1 \
        || { tail -20 "$DIR/monitor.log" >&2; die "pg_autoctl create monitor failed"; }
    # `create monitor` has no --listen: without this the monitor listens on every address.
    ( as_pg pg_autoctl config set --pgdata "$DIR/monitor" postgresql.listen_addresses 127.0.0.1 ) >/dev/null
    start_bg monitor pg_autoctl run --pgdata "$DIR/monitor"
    wait_for 60 "the monitor" sql "$port" pg_auto_failover "SELECT 1" >/dev/null 2>&1
}

start_node() {
    local name=$1 port monitor_uri
    port=$(free_port)
    echo "$name $port" >>"$DIR/ports"
    monitor_uri="postgres://autoctl_node@127.0.0.1:$(port_of monitor)/pg_auto_failover?sslmode=disable"
    start_bg "$name" pg_autoctl create postgres --pgdata "$DIR/$name" --pgport "$port" \
        --pghost 127.0.0.1 --listen 127.0.0.1 --hostname 127.0.0.1 --name "$name" \
        --dbname smqd --monitor "$monitor_uri" --auth trust --no-ssl \
        --pgctl "$PG_BIN/pg_ctl" --run
}

# secondary_ready: node2 is a secondary.  While it waits in pg_basebackup, a CHECKPOINT
# on node1 starts the backup now instead of at the next checkpoint_timeout (5 min):
# pg_autoctl 2.0 does not ask for a fast checkpoint.
secondary_ready() {
    is_state node2 secondary && return 0
    sql "$(port_of node1)" postgres "CHECKPOINT" >/dev/null 2>&1 || true
    return 1
}

# sync_on PORT: the primary on PORT makes its COMMITs wait for the standby.
sync_on() {
    [ -n "$(sql "$1" postgres "SHOW synchronous_standby_names" 2>/dev/null)" ] &&
    [ "$(sql "$1" postgres "SELECT count(*) FROM pg_stat_replication
                             WHERE sync_state IN ('sync', 'quorum')" 2>/dev/null)" = 1 ]
}

watchdog() {
    local max=$1
    ( trap '' HUP; sleep "$max"; PGAF_FROM_WATCHDOG=1 "$SELF" stop "$DIR" ) </dev/null >/dev/null 2>&1 &
    echo $! >"$DIR/watchdog.pid"
}

cmd_start() {
    local max=$1 p1
    command -v pg_autoctl >/dev/null || die "pg_autoctl not found: scripts/deps.sh test"
    [ -x "$PG_BIN/pg_ctl" ] || die "$PG_BIN/pg_ctl not found: scripts/deps.sh test"
    [ ! -e "$DIR/ports" ] || die "$DIR already holds a formation"
    mkdir -p "$DIR/xdg/run"
    [ "$(id -u)" -ne 0 ] || chown -R postgres: "$DIR"
    # pg_autoctl's servers keep PostgreSQL's default socket directory (it has no option for
    # it); systemd-tmpfiles makes it at boot, a container may not have it.
    if [ "$(id -u)" -eq 0 ] && [ ! -d /var/run/postgresql ]; then
        install -d -o postgres -g postgres -m 2775 /var/run/postgresql
    fi
    chmod 700 "$DIR" "$DIR/xdg/run"
    : >"$DIR/ports"
    trap cmd_stop EXIT   # a start that fails part-way leaves nothing running
    watchdog "$max"
    start_monitor
    start_node node1
    wait_for 90 "node1 to be the single node" is_state node1 single
    start_node node2
    wait_for 120 "node2 to be a secondary" secondary_ready
    wait_for 60 "node1 to be primary" is_state node1 primary
    p1=$(port_of node1)
    wait_for 30 "synchronous replication on node1" sync_on "$p1"
    # Not a superuser: the database's owner may create smqd's schema (public belongs to the
    # database owner in PostgreSQL 15) and end its own role's sessions on a takeover.
    sql "$p1" postgres "CREATE ROLE smqd LOGIN" >/dev/null
    sql "$p1" postgres "ALTER DATABASE smqd OWNER TO smqd" >/dev/null
    cmd_dsn >"$DIR/dsn"
    trap - EXIT
    cat "$DIR/dsn"
}

# stop_pid PID MAX_S: SIGTERM, then SIGKILL (with its children) if it outlives MAX_S.
stop_pid() {
    local pid=$1 max=$2 i kids
    kill -TERM "$pid" 2>/dev/null || return 0
    for (( i = 0; i < max * 10; i++ )); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.1
    done
    kids=$(pgrep -P "$pid" || true)
    kill -KILL "$pid" $kids 2>/dev/null || true
}

stop_postmaster() {   # a postmaster that outlived its pg_autoctl
    local pid
    pid=$(head -1 "$DIR/$1/postmaster.pid" 2>/dev/null || true)
    [ -n "$pid" ] || return 0
    stop_pid "$pid" 10
}

cmd_stop() {
    local name pid
    if [ -z "${PGAF_FROM_WATCHDOG:-}" ] && [ -f "$DIR/watchdog.pid" ]; then
        kill "$(cat "$DIR/watchdog.pid")" 2>/dev/null || true
    fi
    rm -f "$DIR/watchdog.pid"
    # Both nodes at once (else the monitor may fail the first one over to the second),
    # then the monitor.
    for name in "${NODES[@]}"; do
        [ -f "$DIR/$name.pid" ] && { stop_pid "$(cat "$DIR/$name.pid")" 20 & }
    done
    wait
    for name in "${NODES[@]}" monitor; do
        if [ "$name" = monitor ] && [ -f "$DIR/monitor.pid" ]; then
            stop_pid "$(cat "$DIR/monitor.pid")" 20
        fi
        stop_postmaster "$name"
        rm -f "$DIR/$name.pid"
    done
}

cmd_primary() {
    local name
    for name in "${NODES[@]}"; do
        case $(node_state "$name") in "primary "*|"wait_primary "*|"single "*) echo "$name"; return 0 ;; esac
    done
    die "no node is primary"
}

cmd_failover() {
    local old new t0=$SECONDS
    old=$(cmd_primary)
    if [ "$old" = node1 ]; then new=node2; else new=node1; fi
    # The monitor refuses a failover unless the primary is primary and the standby
    # secondary, both reported: after a standby that looked unhealthy (on a loaded machine),
    # the primary is in wait_primary, its COMMITs not waiting for the standby, until the
    # standby has caught up.  Ask only then, as an operator would (docs/operations.md).
    wait_for 90 "$old primary and $new secondary" stable "$old" "$new"
    [ "$SECONDS" -eq "$t0" ] || log "the formation was stable $(( SECONDS - t0 )) s after the request"
    ( as_pg pg_autoctl perform failover --pgdata "$DIR/monitor" --wait 60 ) >>"$DIR/failover.log" 2>&1 \
        || log "pg_autoctl perform failover returned non-zero (see $DIR/failover.log); waiting anyway"
    wait_for 60 "$new to be primary" is_state "$new" primary
    wait_for 60 "$old to be a secondary" is_state "$old" secondary
    wait_for 30 "synchronous replication on $new" sync_on "$(port_of "$new")"
    log "failover $old -> $new in $(( SECONDS - t0 )) s"
}

cmd_dsn() {
    echo "host=127.0.0.1,127.0.0.1 port=$(port_of node1),$(port_of node2) dbname=smqd user=smqd target_session_attrs=read-write"
}

cmd_state() { ( as_pg pg_autoctl show state --pgdata "$DIR/monitor" ); }

cmd_events() {
    sql "$(port_of monitor)" pg_auto_failover \
        "SELECT (extract(epoch FROM eventtime) * 1000)::bigint || ' '
                || to_char(eventtime AT TIME ZONE 'UTC', 'HH24:MI:SS.MS') || ' ' || nodename
                || ' ' || reportedstate || '/' || goalstate || ' ' || reportedlsn || ' '
                || coalesce(replace(description, E'\n', ' '), '')
           FROM pgautofailover.event ORDER BY eventid"
}

[ $# -ge 2 ] || die "usage: pgaf-cluster.sh start|stop|failover|dsn|primary|state|events DIR [MAX_S]"
DIR=$(realpath -m "$2")
case $1 in
start) cmd_start "${3:-1800}" ;;
stop) cmd_stop ;;
failover) cmd_failover ;;
dsn) cmd_dsn ;;
primary) cmd_primary ;;
state) cmd_state ;;
events) cmd_events ;;
*) die "usage: pgaf-cluster.sh start|stop|failover|dsn|primary|state|events DIR [MAX_S]" ;;
esac
