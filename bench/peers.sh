#!/usr/bin/env bash
# peers.sh — smqd next to the systems its figures are compared against, in one
# run on one machine, 1 KiB bodies, durable settings, loopback only:
#
#   bench/peers.sh [SECONDS] [CONNECTIONS...]        (defaults 5 and 1 16 64)
#
#   smqd          smqd-loadgen send / lifecycle / batch (smqd defaults: sync = full)
#   beanstalkd    -f0 (fsync every write): put -> reserve-with-timeout -> delete
#   redis         appendonly, appendfsync always: LPUSH -> BLMOVE -> LREM
#   postgresql    synchronous_commit=on, fsync=on: INSERT -> DELETE .. SKIP LOCKED
#                 RETURNING, 1 row and 16 rows per transaction
#   rabbitmq      3.10, durable quorum queue, persistent messages, publisher
#                 confirms, manual acks: publish -> confirm, consume -> ack,
#                 1 and 16 messages per step
#   sqlite        raw SQLite, WAL, synchronous=FULL, one thread, 1/16/128 rows per
#                 commit (the storage ceiling; CONNECTIONS do not apply)
#   httpd-plain   a libmicrohttpd server (2 threads) answering SendMessage's 201,
#   httpd-xml     and the same parsing the XML body (libxml2) and checking the
#                 signature (HMAC-SHA1) — the HTTP ceiling, driven by smqd-loadgen send
#
# PEERS_ONLY="smqd rabbitmq" (any of smqd beanstalkd redis postgresql rabbitmq
# sqlite httpd) runs only those sections.
#
# Missing servers are installed from Debian packages (as root; PEERS_NO_INSTALL=1
# skips that).  Every server runs on 127.0.0.1 with a fresh data directory under
# one temporary directory, is stopped by its PID (also on exit or interrupt), and
# the directory is removed.  The last table puts each peer next to the smqd run it
# compares with (ratio = smqd msg/s ÷ peer msg/s):
#   beanstalkd, redis, postgresql lifecycle  <-> smqd lifecycle, same connections
#   postgresql, rabbitmq lifecycle-b16       <-> smqd batch, same connections
#   rabbitmq lifecycle                       <-> smqd lifecycle, same connections
#   sqlite 1row <-> smqd lifecycle, 16row/128row <-> smqd batch (smqd's best run)
#   httpd-*                                  <-> smqd send, same connections
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
secs=${1:-5}
shift || true
conns=("$@")
[ ${#conns[@]} -gt 0 ] || conns=(1 16 64)
build=${PEERS_BUILD:-build-release}
want() { [ -z "${PEERS_ONLY:-}" ] || [[ " $PEERS_ONLY " == *" $1 "* ]]; }
rmqbin=/usr/lib/rabbitmq/bin        # the real scripts, not the wrapper that su's to rabbitmq

# --- servers, from Debian packages when missing
need=()
want beanstalkd && ! command -v beanstalkd >/dev/null && need+=(beanstalkd)
want redis && ! command -v redis-server >/dev/null && need+=(redis-server)
want postgresql && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && need+=(postgresql)
want postgresql && ! pkg-config --exists libpq 2>/dev/null && need+=(libpq-dev)
want rabbitmq && ! [ -x "$rmqbin/rabbitmq-server" ] && need+=(rabbitmq-server)
want rabbitmq && ! pkg-config --exists librabbitmq 2>/dev/null && need+=(librabbitmq-dev)
if [ ${#need[@]} -gt 0 ] && [ "${PEERS_NO_INSTALL:-0}" != 1 ] && [ "$(id -u)" = 0 ]; then
  echo "installing: ${need[*]}" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y "${need[@]}" >/dev/null 2>&1 ||
    { apt-get update >/dev/null 2>&1 &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y "${need[@]}" >/dev/null 2>&1; } ||
    echo "install failed; the peers it provides are skipped" >&2
  # the package starts a system broker where an init system runs; ours is private
  if [[ " ${need[*]} " == *" rabbitmq-server "* ]] && command -v systemctl >/dev/null &&
     systemctl is-active -q rabbitmq-server 2>/dev/null; then
    systemctl stop rabbitmq-server; systemctl disable -q rabbitmq-server || true
  fi
fi

# --- tools
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j"$(nproc)" --target smqd smqd-loadgen >/dev/null
for t in beanstalk redisq pg sqlite httpd rabbitmq; do
  cmake --build "$build" -j"$(nproc)" --target smqd-peer-$t >/dev/null 2>&1 ||
    echo "smqd-peer-$t not built (its -dev package is missing?)" >&2
done
bin=$build/bench
lg=$bin/smqd-loadgen
smqd=${SMQD:-$build/smqd}

work=$(mktemp -d)
chmod 755 "$work"                   # postgres (another user) needs to reach its data dir
pids=()
pgpid=""
rmqpid=""                           # the broker's OS process (its pid file)
epmdpid=""
rmq_stop() {
  if [ -n "$rmqpid" ]; then
    timeout 60 "$rmqbin/rabbitmqctl" -n bench@localhost stop >/dev/null 2>&1 || true
    for _ in $(seq 100); do kill -0 "$rmqpid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$rmqpid" 2>/dev/null || true
    rmqpid=""
  fi
  if [ -n "$epmdpid" ]; then kill "$epmdpid" 2>/dev/null || true; wait "$epmdpid" 2>/dev/null || true; epmdpid=""; fi
}
cleanup() {
  local p
  rmq_stop
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  if [ -n "$pgpid" ]; then
    kill -INT "$pgpid" 2>/dev/null || true
    for _ in $(seq 300); do kill -0 "$pgpid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pgpid" 2>/dev/null || true
  fi
  [ "${PEERS_KEEP:-0}" = 1 ] && echo "work directory: $work" >&2 || rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
rows=$work/rows             # target scenario connections msg/s p50_us p99_us errors
notes=$work/notes           # NOTE lines of the peer tools (e.g. RabbitMQ's queue type)
: >"$notes"

start_bg() {   # start_bg LOGFILE CMD... ; sets $bgpid
  "${@:2}" >"$1" 2>&1 &
  bgpid=$!
  pids+=("$bgpid")
}
stop_bg() {   # stop_bg PID
  kill "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
  local keep=() p
  for p in "${pids[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
  pids=("${keep[@]}")
}
peer() {   # peer TOOL ARGS... : runs one peer generator, keeps its ROW
  local out rc=0
  out=$(timeout $((secs + 60)) "$bin/$1" --duration-s "$secs" "${@:2}") || rc=$?
  grep '^ROW ' <<<"$out" | cut -d' ' -f2- | tee -a "$rows" | sed 's/^/  /' >&2
  grep '^NOTE ' <<<"$out" | cut -d' ' -f2- >>"$notes" || true
  [ $rc -eq 0 ] || echo "  ($1 ${*:2}: exit status $rc)" >&2
}
lg_row() {   # lg_row TARGET SCENARIO CONNS ARGS... : one smqd-loadgen run as a ROW
  local out rc=0
  out=$(timeout $((secs + 60)) "$lg" --json --duration-s "$secs" --connections "$3" \
        --scenario "${2%%:*}" "${@:4}") || rc=$?
  f() { sed -n "s/.*\"$1\":{[^}]*\"$2\":\([0-9.]*\).*/\1/p" <<<"$out"; }
  printf '%s %s %s %s %s %s %s\n' "$1" "${2#*:}" "$3" \
    "$(sed -n 's/.*"msg_per_s":\([0-9.]*\).*/\1/p' <<<"$out")" "$(f latency_us p50)" \
    "$(f latency_us p99)" "$(sed -n 's/.*"errors":\([0-9]*\).*/\1/p' <<<"$out")" |
    tee -a "$rows" | sed 's/^/  /' >&2
  [ $rc -eq 0 ] || echo "  (smqd-loadgen $2 c=$3: exit status $rc)" >&2
}
have() { [ -x "$bin/smqd-peer-$1" ]; }

echo "peers.sh: ${secs}s per run, connections ${conns[*]}, $(nproc) cores, $(date -u '+%F %T') UTC" >&2

# --- smqd
if want smqd; then
echo "smqd" >&2
port=$(bench_free_port)
bench_conf "$work/smqd.db" listen "127.0.0.1:$port" > "$work/smqd.conf"
start_bg "$work/smqd.log" "$smqd" -c "$work/smqd.conf"
if bench_wait_port "$port" "$bgpid"; then
  run=0
  for c in "${conns[@]}"; do
    for sc in send lifecycle batch; do
      run=$((run + 1))
      lg_row smqd "$sc" "$c" --port "$port" --ak k --sk s --queue "q$run" --create-queue
    done
  done
else
  echo "  smqd did not start:" >&2; cat "$work/smqd.log" >&2
fi
stop_bg "$bgpid"
fi

# --- beanstalkd
if want beanstalkd && have beanstalk && command -v beanstalkd >/dev/null; then
  echo "beanstalkd" >&2
  for c in "${conns[@]}"; do            # a fresh server (and binlog) per run
    mkdir -p "$work/bs$c"; port=$(bench_free_port)
    start_bg "$work/bs$c.log" beanstalkd -l 127.0.0.1 -p "$port" -b "$work/bs$c" -f0
    bench_wait_port "$port" "$bgpid" && peer smqd-peer-beanstalk --port "$port" --connections "$c"
    stop_bg "$bgpid"
  done
fi

# --- redis
if want redis && have redisq && command -v redis-server >/dev/null; then
  echo "redis" >&2
  for c in "${conns[@]}"; do
    mkdir -p "$work/rd$c"; port=$(bench_free_port)
    start_bg "$work/rd$c.log" redis-server --appendonly yes --appendfsync always \
      --dir "$work/rd$c" --port "$port" --bind 127.0.0.1 --save '' --daemonize no
    bench_wait_port "$port" "$bgpid" && peer smqd-peer-redisq --port "$port" --connections "$c"
    stop_bg "$bgpid"
  done
fi

# --- postgresql
pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
if want postgresql && have pg && [ -n "$pgbin" ] && id postgres >/dev/null 2>&1; then
  echo "postgresql ($pgbin)" >&2
  mkdir -p "$work/pg"; chown postgres "$work/pg"; port=$(bench_free_port)
  if runuser -u postgres -- "$pgbin/initdb" -D "$work/pg/data" -A trust -U postgres \
       >"$work/pg.log" 2>&1 &&
     runuser -u postgres -- "$pgbin/pg_ctl" -D "$work/pg/data" -l "$work/pg/server.log" -w \
       -o "-k $work/pg -c listen_addresses=127.0.0.1 -p $port -c synchronous_commit=on -c fsync=on" \
       start >>"$work/pg.log" 2>&1; then
    pgpid=$(head -1 "$work/pg/data/postmaster.pid")
    for c in "${conns[@]}"; do
      peer smqd-peer-pg --port "$port" --connections "$c"
      peer smqd-peer-pg --port "$port" --connections "$c" --batch 16
    done
    kill -INT "$pgpid"
    for _ in $(seq 300); do kill -0 "$pgpid" 2>/dev/null || break; sleep 0.1; done
    pgpid=""
  else
    echo "  postgresql did not start:" >&2; cat "$work/pg.log" >&2
  fi
fi

# --- rabbitmq: one private broker on loopback (its own epmd, node name, ports,
# directories), every run on a fresh queue the tool declares and deletes
if want rabbitmq && have rabbitmq && [ -x "$rmqbin/rabbitmq-server" ] && command -v epmd >/dev/null; then
  echo "rabbitmq" >&2
  r=$work/rmq; mkdir -p "$r"; echo '[].' >"$r/enabled_plugins"
  port=$(bench_free_port); dport=$(bench_free_port); eport=$(bench_free_port)
  export HOME=$r ERL_EPMD_PORT=$eport RABBITMQ_NODENAME=bench@localhost \
    RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 RABBITMQ_NODE_PORT=$port RABBITMQ_DIST_PORT=$dport \
    RABBITMQ_MNESIA_BASE=$r/mnesia RABBITMQ_LOG_BASE=$r/log RABBITMQ_PID_FILE=$r/pid \
    RABBITMQ_ENABLED_PLUGINS_FILE=$r/enabled_plugins RABBITMQ_CONFIG_FILE=$r/rabbitmq \
    RABBITMQ_ADVANCED_CONFIG_FILE=$r/advanced.config RABBITMQ_CONF_ENV_FILE=$r/env \
    RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"
  epmd -address 127.0.0.1 -port "$eport" >"$r/epmd.log" 2>&1 &
  epmdpid=$!
  bench_wait_port "$eport" "$epmdpid" || echo "  epmd did not start" >&2
  "$rmqbin/rabbitmq-server" >"$r/server.log" 2>&1 &
  pids+=("$!")                      # the script; the broker itself is $rmqpid
  if timeout 90 "$rmqbin/rabbitmqctl" -n bench@localhost wait "$r/pid" --timeout 60 \
       >"$r/wait.log" 2>&1; then
    rmqpid=$(cat "$r/pid")
    run=0
    for c in "${conns[@]}"; do
      for b in 1 16; do
        run=$((run + 1))
        peer smqd-peer-rabbitmq --port "$port" --connections "$c" --batch "$b" --extra "q$run"
      done
    done
  else
    echo "  rabbitmq did not start:" >&2; tail -20 "$r/server.log" "$r/wait.log" >&2
    [ -s "$r/pid" ] && rmqpid=$(cat "$r/pid")
  fi
  rmq_stop
fi

# --- sqlite (storage ceiling)
if want sqlite && have sqlite; then
  echo "sqlite" >&2
  for k in 1 16 128; do
    rm -f "$work"/sq.db*
    peer smqd-peer-sqlite --extra "$work/sq.db" --batch "$k"
  done
fi

# --- HTTP ceiling
if want httpd && have httpd; then
  for mode in plain xml; do
    echo "httpd-$mode" >&2
    port=$(bench_free_port)
    start_bg "$work/httpd.log" "$bin/smqd-peer-httpd" --port "$port" --scenario "$mode"
    if bench_wait_port "$port" "$bgpid"; then
      for c in "${conns[@]}"; do
        lg_row "httpd-$mode" send "$c" --port "$port" --ak k --sk s --queue q
      done
    else
      echo "  smqd-peer-httpd did not start:" >&2; cat "$work/httpd.log" >&2
    fi
    stop_bg "$bgpid"
  done
fi

# --- the table
echo
echo "date $(date -u '+%F %T') UTC; $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg); ${secs}s per run; 1 KiB bodies"
awk '
  function key(t, s, c) { return t SUBSEP s SUBSEP c }
  { t[NR] = $1; s[NR] = $2; c[NR] = $3; m[NR] = $4; p50[NR] = $5; p99[NR] = $6; e[NR] = $7
    if ($1 == "smqd") { v[key($2, $3)] = $4; if ($4 > best[$2]) best[$2] = $4 } }
  END {
    printf "%-12s %-16s %5s %10s %8s %8s %6s %10s %7s\n", "target", "scenario", "conns", "msg/s",
           "p50_ms", "p99_ms", "errors", "smqd_msg/s", "ratio"
    for (i = 1; i <= NR; i++) {
      ref = ""
      if (t[i] == "smqd") ref = ""
      else if (s[i] == "lifecycle") ref = v[key("lifecycle", c[i])]
      else if (s[i] == "lifecycle-b16") ref = v[key("batch", c[i])]
      else if (s[i] == "send") ref = v[key("send", c[i])]
      else if (s[i] == "lifecycle-1row") ref = best["lifecycle"]
      else if (s[i] ~ /^lifecycle-[0-9]+row$/) ref = best["batch"]
      ratio = (ref != "" && m[i] > 0) ? sprintf("%.2f", ref / m[i]) : "-"
      printf "%-12s %-16s %5s %10.0f %8.2f %8.2f %6s %10s %7s\n", t[i], s[i], c[i], m[i],
             p50[i] / 1000, p99[i] / 1000, e[i], ref == "" ? "-" : sprintf("%.0f", ref), ratio
    }
  }' "$rows"
sort -u "$notes"
echo "msg/s: deletes (smqd lifecycle/batch, beanstalkd, postgresql), acks (rabbitmq), LREMs (redis), 201s (send),"
echo "lifecycles = insert+update+delete (sqlite); latency: per request (sqlite: per commit),"
echo "empty polls left out; ratio = smqd msg/s / peer msg/s (sqlite: smqd's best lifecycle/batch)"
