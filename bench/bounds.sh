#!/usr/bin/env bash
# bounds.sh — how far this machine lets the throughput targets of issue #5 go:
# smqd next to its own best cases, alternated in one run, 64 connections.
#
#   bench/bounds.sh [SECONDS] [ROUNDS]          (defaults 4 and 3)
#
# Each round runs, one after another (so machine noise hits all alike):
#   httpd-xml     the HTTP ceiling: a bare libmicrohttpd server that parses the
#                 XML body and checks the signature, driven by smqd-loadgen send
#   sqlite-128    raw SQLite, WAL, synchronous=FULL, one thread, 128 messages per
#                 commit, send -> receive -> delete of each (the storage ceiling)
#                 with its database on the disk, and again on tmpfs (/dev/shm)
#   smqd          send, lifecycle and batch (sync = full) with the database on the
#                 disk, and again on tmpfs: there fdatasync returns at once, so
#                 the tmpfs runs show smqd with an infinitely fast disk (an upper
#                 bound, not a durable configuration)
# and prints medians: msg/s, requests/s, and the server's CPU per request
# (user + system of its process, /proc/PID/stat, over the run).  The last table
# puts each throughput target next to the best case measured for it.
#
# The disk runs use a directory under $BOUNDS_DIR (default /tmp, which should
# be on the disk smqd would use); the tmpfs runs /dev/shm.  Servers bind
# 127.0.0.1, are stopped by PID, and every directory is removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
secs=${1:-4}
rounds=${2:-3}
conns=64
build=build-release
bench_build $build smqd smqd-loadgen smqd-peer-httpd smqd-peer-sqlite
bin=$build/bench
lg=$bin/smqd-loadgen
shm=/dev/shm
[ "$(stat -f -c %T "$shm" 2>/dev/null)" = tmpfs ] || { echo "bounds.sh: $shm is not a tmpfs" >&2; exit 2; }
disk_work=$(mktemp -d "${BOUNDS_DIR:-/tmp}/smqd-bounds.XXXXXX")
shm_work=$(mktemp -d "$shm/smqd-bounds.XXXXXX")
pid=""
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$disk_work" "$shm_work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
rows=$disk_work/rows        # name msg/s req/s us_per_req

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
json() { sed -n "s/.*\"$1\":\([0-9.]*\).*/\1/p" <<<"$2" | head -1; }

# row NAME OUT TICKS: one result line from a loadgen JSON line and the server's ticks
row() {
  local msg req el
  msg=$(json msg_per_s "$2"); req=$(json req_per_s "$2"); el=$(json elapsed_s "$2")
  awk -v n="$1" -v m="$msg" -v r="$req" -v e="$el" -v t="$3" -v hz="$(getconf CLK_TCK)" \
    'BEGIN { printf "%s %.0f %.0f %.1f\n", n, m, r, (r > 0) ? t / hz * 1e6 / (r * e) : 0 }' |
    tee -a "$rows" | awk '{printf "  %-22s %8s msg/s %8s req/s %7s us/req\n", $1, $2, $3, $4}'
}

smqd_run() {   # smqd_run NAME DIR SCENARIO
  local log=$2/smqd.log out t0 port
  rm -f "$2"/smqd.db*
  bench_conf "$2/smqd.db" > "$2/smqd.conf"
  : > "$log"
  "$build/smqd" -c "$2/smqd.conf" 2>"$log" &
  pid=$!
  until grep -q "listening on" "$log"; do
    kill -0 $pid 2>/dev/null || { cat "$log" >&2; exit 1; }
    sleep 0.05
  done
  port=$(sed -n 's/.*listening on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$log" | head -1)
  t0=$(cpu_ticks $pid)
  out=$($lg --port "$port" --ak k --sk s --queue q --create-queue --json --scenario "$3" \
        --connections $conns --duration-s "$secs") || true
  row "$1" "$out" $(( $(cpu_ticks $pid) - t0 ))
  kill "$pid"; wait "$pid" || true; pid=""
}

httpd_run() {
  local port out t0
  port=$((20000 + RANDOM % 12000))
  "$bin/smqd-peer-httpd" --port "$port" --scenario xml >"$disk_work/httpd.log" 2>&1 &
  pid=$!
  for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.05; done
  t0=$(cpu_ticks $pid)
  out=$($lg --port "$port" --ak k --sk s --queue q --json --scenario send \
        --connections $conns --duration-s "$secs") || true
  row httpd-xml "$out" $(( $(cpu_ticks $pid) - t0 ))
  kill "$pid"; wait "$pid" || true; pid=""
}

sqlite_run() {   # sqlite_run NAME DIR
  local out
  rm -f "$2"/sq.db*
  out=$("$bin/smqd-peer-sqlite" --duration-s "$secs" --extra "$2/sq.db" --batch 128 | grep '^ROW ')
  # ROW sqlite lifecycle-128row 1 MSG/S ...: one thread, no requests to count
  awk -v n="$1" '{printf "%s %.0f 0 0\n", n, $5}' <<<"$out" | tee -a "$rows" |
    awk '{printf "  %-22s %8s msg/s\n", $1, $2}'
  rm -f "$2"/sq.db*
}

echo "bounds.sh: ${secs}s per run, $rounds rounds, $conns connections, $(nproc) cores," \
     "disk $(df --output=source "$disk_work" | tail -1), $(date -u '+%F %T') UTC"
for r in $(seq "$rounds"); do
  echo "round $r (load $(cut -d' ' -f1 /proc/loadavg))"
  httpd_run
  sqlite_run sqlite-128-disk "$disk_work"
  sqlite_run sqlite-128-tmpfs "$shm_work"
  for sc in send lifecycle batch; do
    smqd_run "smqd-$sc-disk" "$disk_work" $sc
    smqd_run "smqd-$sc-tmpfs" "$shm_work" $sc
  done
done

med() {   # med NAME FIELD
  awk -v n="$1" -v f="$2" '$1 == n {print $f}' "$rows" | sort -n |
    awk '{v[NR] = $1} END {if (NR == 0) print 0; else print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}
echo
printf '%-22s %10s %10s %10s\n' "median of $rounds" msg/s req/s us/req
for n in httpd-xml sqlite-128-disk sqlite-128-tmpfs smqd-send-disk smqd-send-tmpfs \
         smqd-lifecycle-disk smqd-lifecycle-tmpfs smqd-batch-disk smqd-batch-tmpfs; do
  printf '%-22s %10.0f %10.0f %10.1f\n' "$n" "$(med $n 2)" "$(med $n 3)" "$(med $n 4)"
done

ceil=$(med httpd-xml 2); sq=$(med sqlite-128-disk 2)
echo
echo "targets (issue #5) next to smqd on the disk, and on tmpfs (an infinitely fast disk):"
awk -v ceil="$ceil" -v sq="$sq" \
    -v sd="$(med smqd-send-disk 2)" -v st="$(med smqd-send-tmpfs 2)" \
    -v ld="$(med smqd-lifecycle-disk 2)" -v lt="$(med smqd-lifecycle-tmpfs 2)" \
    -v bd="$(med smqd-batch-disk 2)" -v bt="$(med smqd-batch-tmpfs 2)" 'BEGIN {
  printf "  send       >= 30000 msg/s and >= 0.60 of httpd-xml (%.0f): disk %.0f = %.2f, tmpfs %.0f = %.2f\n",
         ceil, sd, sd / ceil, st, st / ceil
  printf "  lifecycle  >= 12000 msg/s (= 36000 requests/s): disk %.0f, tmpfs %.0f\n", ld, lt
  printf "  batch      >= 50000 msg/s and >= 0.75 of sqlite-128-disk (%.0f): disk %.0f = %.2f, tmpfs %.0f = %.2f\n",
         sq, bd, bd / sq, bt, bt / sq
  if (sq < 50000)
    printf "             (raw SQLite itself, 128 messages per commit on this disk, does %.0f < 50000)\n", sq
}'
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
