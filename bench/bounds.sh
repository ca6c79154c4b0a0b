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
# (user + system of its process, /proc/PID/stat, over the generator's run,
# divided by the requests of its measured window).  A run with
# errors is listed with "!" and left out of the medians.  The last table puts
# each throughput target next to the best case measured for it.
#
# The disk runs use a directory under $BOUNDS_DIR (default /tmp, which must be
# on the disk smqd would use, not a tmpfs); the tmpfs runs /dev/shm, which needs
# ~1 GiB free.  A missing peer (its -dev package was absent at build time) is
# skipped.  Servers bind 127.0.0.1, are stopped by PID (also on Ctrl-C), and
# every directory is removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
secs=${1:-4}
rounds=${2:-3}
conns=64
build=build-release
disk_work="" shm_work="" pid=""
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  [ -z "$disk_work" ] || rm -rf "$disk_work"
  [ -z "$shm_work" ] || rm -rf "$shm_work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

bench_build $build smqd smqd-loadgen
for t in httpd sqlite; do
  cmake --build $build -j"$(nproc)" --target smqd-peer-$t >/dev/null 2>&1 ||
    echo "bounds.sh: smqd-peer-$t not built (its -dev package is missing?); skipped" >&2
done
bin=$build/bench
lg=$bin/smqd-loadgen
shm=/dev/shm
[ "$(stat -f -c %T "$shm" 2>/dev/null)" = tmpfs ] || { echo "bounds.sh: $shm is not a tmpfs" >&2; exit 2; }
[ "$(df -k --output=avail "$shm" | tail -1)" -ge $((1024 * 1024)) ] ||
  { echo "bounds.sh: $shm has less than 1 GiB free" >&2; exit 2; }
disk_work=$(mktemp -d "${BOUNDS_DIR:-/tmp}/smqd-bounds.XXXXXX")
shm_work=$(mktemp -d "$shm/smqd-bounds.XXXXXX")
[ "$(stat -f -c %T "$disk_work")" != tmpfs ] ||
  { echo "bounds.sh: $disk_work is on a tmpfs; set BOUNDS_DIR to a directory on the disk" >&2; exit 2; }
rows=$disk_work/rows        # name msg/s req/s us_per_req errors

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo -1; }
# cpu_since PID T0: ticks used since T0 (-1 if either reading failed)
cpu_since() { local t1; t1=$(cpu_ticks "$1"); [ "$2" -ge 0 ] && [ "$t1" -ge 0 ] && echo $((t1 - $2)) || echo -1; }
json() { sed -n "s/.*\"$1\":\([0-9.a-z]*\).*/\1/p" <<<"$2" | head -1; }

# row NAME OUT TICKS RC: one result line from a loadgen JSON line and the server's CPU ticks
row() {
  local msg req el errs
  msg=$(json msg_per_s "$2"); req=$(json req_per_s "$2"); el=$(json elapsed_s "$2")
  errs=$(json errors "$2")
  [ "$4" -eq 0 ] && [ "$(json ok "$2")" = true ] && [ "$3" -ge 0 ] || errs=${errs:-0}!
  awk -v n="$1" -v m="${msg:-0}" -v r="${req:-0}" -v e="${el:-0}" -v t="$3" -v x="${errs:-0}" \
      -v hz="$(getconf CLK_TCK)" 'BEGIN {
    us = (r > 0 && e > 0 && t >= 0) ? t / hz * 1e6 / (r * e) : 0
    printf "%s %.0f %.0f %.1f %s\n", n, m, r, us, x }' |
    tee -a "$rows" | awk '{printf "  %-22s %8s msg/s %8s req/s %7s us/req  errors %s\n", $1, $2, $3, $4, $5}'
}

smqd_run() {   # smqd_run NAME DIR SCENARIO
  local log=$2/smqd.log out rc=0 port t0
  rm -f "$2"/smqd.db*
  bench_conf "$2/smqd.db" > "$2/smqd.conf"
  : > "$log"
  "$build/smqd" -c "$2/smqd.conf" 2>"$log" &
  pid=$!
  port=$(bench_smqd_port "$log" $pid) || exit 1
  t0=$(cpu_ticks $pid)
  out=$(timeout $((secs + 60)) "$lg" --port "$port" --ak k --sk s --queue q --create-queue \
        --json --scenario "$3" --connections $conns --duration-s "$secs") || rc=$?
  row "$1" "$out" "$(cpu_since $pid "$t0")" $rc
  kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; pid=""
}

httpd_run() {
  local port out rc=0 t0
  [ -x "$bin/smqd-peer-httpd" ] || return 0
  port=$(bench_free_port)
  "$bin/smqd-peer-httpd" --port "$port" --scenario xml >"$disk_work/httpd.log" 2>&1 &
  pid=$!
  if bench_wait_port "$port" "$pid"; then
    t0=$(cpu_ticks $pid)
    out=$(timeout $((secs + 60)) "$lg" --port "$port" --ak k --sk s --queue q --json \
          --scenario send --connections $conns --duration-s "$secs") || rc=$?
    row httpd-xml "$out" "$(cpu_since $pid "$t0")" $rc
  else
    echo "  smqd-peer-httpd did not start:" >&2; cat "$disk_work/httpd.log" >&2
  fi
  kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; pid=""
}

sqlite_run() {   # sqlite_run NAME DIR
  local out rc=0
  [ -x "$bin/smqd-peer-sqlite" ] || return 0
  rm -f "$2"/sq.db*
  out=$(timeout $((secs + 60)) "$bin/smqd-peer-sqlite" --duration-s "$secs" --extra "$2/sq.db" \
        --batch 128) || rc=$?
  rm -f "$2"/sq.db*
  # ROW sqlite lifecycle-128row 1 MSG/S ...: one thread, no requests to count
  out=$(grep '^ROW ' <<<"$out" || true)
  awk -v n="$1" -v rc=$rc '{printf "%s %.0f - - %s\n", n, $5, rc ? "1!" : "0"}
    END {if (NR == 0) printf "%s 0 - - 1!\n", n}' <<<"$out" | tee -a "$rows" |
    awk '{printf "  %-22s %8s msg/s  errors %s\n", $1, $2, $5}'
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

med() {   # med NAME FIELD: median over the runs without errors ("-" if none)
  awk -v n="$1" -v f="$2" '$1 == n && $5 == 0 {print $f}' "$rows" | bench_median
}
echo
printf '%-22s %10s %10s %10s %6s\n' "median of $rounds" msg/s req/s us/req failed
for n in httpd-xml sqlite-128-disk sqlite-128-tmpfs smqd-send-disk smqd-send-tmpfs \
         smqd-lifecycle-disk smqd-lifecycle-tmpfs smqd-batch-disk smqd-batch-tmpfs; do
  printf '%-22s %10s %10s %10s %6s\n' "$n" "$(med $n 2)" "$(med $n 3)" "$(med $n 4)" \
    "$(awk -v n="$n" '$1 == n && $5 != 0 {k++} END {print k + 0}' "$rows")"
done

echo
echo "targets (issue #5) next to smqd on the disk, and on tmpfs (an infinitely fast disk);"
echo "each ratio against the ceiling measured on the same storage:"
awk -v ceil="$(med httpd-xml 2)" -v sqd="$(med sqlite-128-disk 2)" -v sqt="$(med sqlite-128-tmpfs 2)" \
    -v sd="$(med smqd-send-disk 2)" -v st="$(med smqd-send-tmpfs 2)" \
    -v ld="$(med smqd-lifecycle-disk 2)" -v lt="$(med smqd-lifecycle-tmpfs 2)" \
    -v bd="$(med smqd-batch-disk 2)" -v bt="$(med smqd-batch-tmpfs 2)" '
function ratio(a, b) { return (a == "-" || b == "-" || b == 0) ? "-" : sprintf("%.2f", a / b) }
BEGIN {
  printf "  send       >= 30000 msg/s and >= 0.60 of httpd-xml (%s): disk %s = %s, tmpfs %s = %s\n",
         ceil, sd, ratio(sd, ceil), st, ratio(st, ceil)
  printf "  lifecycle  >= 12000 msg/s (>= 36000 requests/s): disk %s, tmpfs %s\n", ld, lt
  printf "  batch      >= 50000 msg/s and >= 0.75 of sqlite-128: disk %s = %s of %s, tmpfs %s = %s of %s\n",
         bd, ratio(bd, sqd), sqd, bt, ratio(bt, sqt), sqt
  if (sqd != "-" && sqd < 50000)
    printf "             (raw SQLite itself, 128 messages per commit on this disk, does %s < 50000)\n", sqd
}'
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
