#!/usr/bin/env bash
# pg.sh — smqd on its PostgreSQL backend next to smqd on SQLite and to raw
# PostgreSQL, alternated in one run on one machine, 64 connections, 1 KiB
# bodies (issue 17, item 6):
#
#   bench/pg.sh [--seconds S] [--rounds R]          (defaults 5 and 3)
#   bench/pg.sh --smoke     the CI form (ctest bench.pg_smoke): one round of 1 s runs with
#                           the binaries SMQD_BIN, LOADGEN and PEER_PG; exits 1 when a run
#                           had errors or moved nothing, never on speed
#
#   a  sqlite    smqd, [storage] sync = full, the database on the disk (bench_conf)
#   b  pg        smqd, backend = postgresql, one active node; PostgreSQL 15 without
#                a standby (tests/pg/pg-server.sh: fsync = on, synchronous_commit = on)
#   c  pg-sync   the same on a second PostgreSQL whose streaming standby is
#                synchronous (synchronous_standby_names, sync_state = 'sync'):
#                every COMMIT also waits for the standby's flush
#   d  raw-pg    smqd-peer-pg (as peers.sh runs it) on b's server: INSERT 16 rows,
#                DELETE ... FOR UPDATE SKIP LOCKED LIMIT 16 RETURNING, 64 threads
#
# Each round runs send, lifecycle and batch (16) on a, b and c (the order of a, b, c
# rotates per round, so machine noise hits all alike), then d; a fresh database per
# run (SQLite: a new file; PostgreSQL: a new schema through the dsn's search_path,
# dropped afterwards, and a CHECKPOINT before).  smqd is started per run and the
# load begins once its admin /ready answers 200 (it holds the lease).  Over each
# measured window it records the CPU (% of one core, /proc/PID/stat) of smqd, of
# its engine thread, of every process of the PostgreSQL server(s) of that run
# (the postmasters, their children and children that exited; for c the standby
# too), of the generator and of the whole host, and from smqd's /metrics
# smqd_wal_flush_duration_seconds: on SQLite the WAL fdatasync, on PostgreSQL the
# flush's COMMIT round trip; "commit_busy" is the share of the window a flush was
# in progress.  A run with errors is marked "!" and left out of the medians.
#
# Prints the medians, the ratios b/a, c/a, b/d, the target "PostgreSQL backend
# lifecycle / SQLite lifecycle >= 0.50" PASS/FAIL and, per configuration, what was
# saturated.  Everything runs on 127.0.0.1 under PG_BENCH_DIR (default
# build/bench-pg: on the disk, and reachable by the postgres user), is stopped by
# PID (also on Ctrl-C) and removed at the end (PG_BENCH_KEEP=1 keeps it).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

usage() { echo "usage: bench/pg.sh [--seconds S] [--rounds R] | --smoke" >&2; exit 2; }
secs=5
rounds=3
smoke=0
while [ $# -gt 0 ]; do
  case $1 in
    --smoke) smoke=1; secs=1; rounds=1; shift ;;
    --seconds) [ $# -ge 2 ] || usage; secs=$2; shift 2 ;;
    --rounds) [ $# -ge 2 ] || usage; rounds=$2; shift 2 ;;
    *) usage ;;
  esac
done
[[ $secs =~ ^[1-9][0-9]*$ && $rounds =~ ^[1-9][0-9]*$ ]] || usage
conns=64
build=${PG_BENCH_BUILD:-build-release}
pgsrv=tests/pg/pg-server.sh
psql=${PG_BIN:-/usr/lib/postgresql/15/bin}/psql
hz=$(getconf CLK_TCK)
cores=$(nproc)

if [ "$smoke" = 1 ]; then
  smqd=${SMQD_BIN:?--smoke needs SMQD_BIN} lg=${LOADGEN:?--smoke needs LOADGEN}
  peer=${PEER_PG:?--smoke needs PEER_PG}
else
  bench_build "$build" smqd smqd-loadgen smqd-peer-pg
  smqd=$build/smqd lg=$build/bench/smqd-loadgen peer=$build/bench/smqd-peer-pg
fi
command -v curl >/dev/null || { echo "pg.sh: needs curl (the admin /ready and /metrics)" >&2; exit 2; }

base=${PG_BENCH_DIR:-$PWD/build/bench-pg}
mkdir -p "$base"
work=$(mktemp -d "$base/run.XXXXXX")
chmod 755 "$base" "$work"          # pg-server.sh hands its DIRs to postgres
[ "$(stat -f -c %T "$work")" != tmpfs ] ||
  { echo "pg.sh: $work is on a tmpfs; set PG_BENCH_DIR to a directory on the disk" >&2; exit 2; }
pg1=$work/pg1 pg2=$work/pg2 pg2sb=$work/pg2-standby
started=()                         # PostgreSQL directories to stop
pid=""                             # the smqd of the current run
cleanup() {
  local d
  [ -z "$pid" ] || stop_smqd
  for d in "${started[@]}"; do bash $pgsrv stop "$d" || true; done
  if [ "${PG_BENCH_KEEP:-0}" = 1 ]; then echo "work directory: $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
rows=$work/rows   # round config scenario msg/s p50_us p99_us errors smqd% engine% pg% gen% host% commit_ms busy%

sql() { PGOPTIONS='-c client_min_messages=warning' "$psql" "$(cat "$1/dsn")" -qAtX -v ON_ERROR_STOP=1 -c "$2"; }

# --- the PostgreSQL servers (a watchdog stops each after its bounded life)
life=$((rounds * 10 * (secs + 8) + 600))
bash $pgsrv start "$pg1" $life >/dev/null; started+=("$pg1")
bash $pgsrv start "$pg2" $life >/dev/null; started+=("$pg2")
bash $pgsrv standby "$pg2" "$pg2sb" smqd_bench_sb $life >/dev/null; started+=("$pg2sb")
sql "$pg2" "ALTER SYSTEM SET synchronous_standby_names = 'smqd_bench_sb'" >/dev/null
sql "$pg2" "SELECT pg_reload_conf()" >/dev/null
for i in $(seq 200); do
  [ "$(sql "$pg2" "SELECT count(*) FROM pg_stat_replication
        WHERE application_name = 'smqd_bench_sb' AND sync_state = 'sync'")" = 1 ] && break
  [ "$i" -lt 200 ] || { echo "pg.sh: the standby did not become synchronous in 20 s" >&2; exit 1; }
  sleep 0.1
done

# --- CPU and metrics readings
proc_ticks() { awk '{sub(/.*\) /, ""); print $12 + $13}' "/proc/$1/stat" 2>/dev/null || echo 0; }
thread_ticks() {   # thread_ticks PID NAME: CPU ticks of smqd's thread NAME (0 if none)
  local t
  for t in /proc/"$1"/task/*; do
    [ "$(cat "$t/comm" 2>/dev/null)" = "$2" ] && { proc_ticks "$1/task/${t##*/}"; return; }
  done
  echo 0
}
pg_ticks() {   # pg_ticks DIR...: ticks of the servers' processes so far, exited children included
  local d pm c t=0
  for d in "$@"; do
    pm=$(head -1 "$d/data/postmaster.pid")
    for c in $(ps -o pid= --ppid "$pm"); do t=$((t + $(proc_ticks "$c"))); done
    t=$((t + $(awk '{sub(/.*\) /, ""); print $12 + $13 + $14 + $15}' "/proc/$pm/stat")))
  done
  echo $t
}
host_ticks() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8 + $9; exit}' /proc/stat; }
flushes() {   # flushes ADMIN_PORT: "SUM_S COUNT" of smqd_wal_flush_duration_seconds
  curl -s --max-time 5 "http://127.0.0.1:$1/metrics" | awk '
    /^smqd_wal_flush_duration_seconds_sum/ {s = $2} /^smqd_wal_flush_duration_seconds_count/ {c = $2}
    END {print s + 0, c + 0}'
}
now() { date +%s.%N; }
# child_ticks: CPU ticks of this shell's finished children (the peer generator); `times`
# must run in this shell, not in a pipeline's subshell, so it writes to a file
child_ticks() {
  times > "$work/times"
  awk -v hz="$hz" 'NR == 2 {split($1, u, /[ms]/); split($2, s, /[ms]/)
    printf "%.0f\n", (u[1] * 60 + u[2] + s[1] * 60 + s[2]) * hz}' "$work/times"
}
json() { sed -n "s/.*\"$1\":\([0-9.a-z]*\).*/\1/p" <<<"$2" | head -1; }
jlat() { sed -n "s/.*\"latency_us\":{[^}]*\"$1\":\([0-9.]*\).*/\1/p" <<<"$2" | head -1; }

# row ROUND CONFIG SCENARIO MSG P50 P99 ERRFLAG WINDOW_S SMQD ENGINE PG GEN HOST FSUM FCOUNT
# (CPU arguments in ticks, or - ; FSUM/FCOUNT the flush deltas, or -)
row() {
  awk -v hz="$hz" 'function pct(t) { return t == "-" ? "-" : sprintf("%.0f", t / hz / w * 100) }
    BEGIN { w = ARGV[8]; if (w <= 0) w = 1
      cm = (ARGV[15] == "-" || ARGV[15] == 0) ? "-" : sprintf("%.2f", ARGV[14] / ARGV[15] * 1000)
      cb = ARGV[14] == "-" ? "-" : sprintf("%.0f", ARGV[14] / w * 100)
      printf "%s %s %s %.0f %s %s %s %s %s %s %s %s %s %s\n", ARGV[1], ARGV[2], ARGV[3], ARGV[4],
             ARGV[5] == "" ? "-" : ARGV[5], ARGV[6] == "" ? "-" : ARGV[6], ARGV[7],
             pct(ARGV[9]), pct(ARGV[10]), pct(ARGV[11]), pct(ARGV[12]), pct(ARGV[13]), cm, cb
      exit }' "$@" | tee -a "$rows" |
    awk '{printf "  %-8s %-9s %8s msg/s  p99 %6.1f ms  smqd %4s%%  engine %4s%%  pg %4s%%  host %4s%%  commit %5s ms busy %3s%%  errors %s\n",
          $2, $3, $4, ($6 == "-" ? 0 : $6 / 1000), $8, $9, $10, $12, $13, $14, $7}'
}

# stop_smqd: SIGTERM (a PostgreSQL node releases its lease), SIGKILL after 10 s
stop_smqd() {
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  pid=""
}

# smqd_run ROUND CONFIG SCENARIO: one smqd-loadgen run against a fresh smqd
smqd_run() {
  local r=$1 cfg=$2 sc=$3 dir=$work/$2 port admin conf out rc=0 pgdirs=() schema=""
  mkdir -p "$dir"
  port=$(bench_free_port); admin=$(bench_free_port)
  while [ "$admin" = "$port" ]; do admin=$(bench_free_port); done
  conf=$dir/smqd.conf
  case $cfg in
    sqlite) rm -f "$dir"/smqd.db*
            bench_conf "$dir/smqd.db" listen "127.0.0.1:$port" admin "127.0.0.1:$admin" > "$conf" ;;
    pg|pg-sync)
      if [ "$cfg" = pg ]; then pgdirs=("$pg1"); else pgdirs=("$pg2" "$pg2sb"); fi
      schema=s_r${r}_$sc
      sql "${pgdirs[0]}" "CREATE SCHEMA $schema" >/dev/null
      sql "${pgdirs[0]}" "CHECKPOINT" >/dev/null
      bench_conf_pg "$(cat "${pgdirs[0]}/dsn") options='-c search_path=$schema'" \
        listen "127.0.0.1:$port" admin "127.0.0.1:$admin" > "$conf" ;;
  esac
  chmod 600 "$conf"
  "$smqd" -c "$conf" 2>"$dir/smqd.log" &
  pid=$!
  for i in $(seq 600); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$admin/ready")" = 200 ] && break
    kill -0 "$pid" 2>/dev/null && [ "$i" -lt 600 ] ||
      { echo "pg.sh: smqd ($cfg) not ready in 30 s:" >&2; tail -20 "$dir/smqd.log" >&2; exit 1; }
    sleep 0.05
  done
  local f0 f1 s0 e0 p0=- h0 t0 t1 s1 e1 p1=- h1
  f0=$(flushes "$admin"); s0=$(proc_ticks $pid); e0=$(thread_ticks $pid smqd-engine)
  [ ${#pgdirs[@]} -eq 0 ] || p0=$(pg_ticks "${pgdirs[@]}")
  h0=$(host_ticks); t0=$(now)
  out=$(timeout $((secs + 60)) "$lg" --port "$port" --ak k --sk s --queue q --create-queue \
        --json --scenario "$sc" --connections $conns --duration-s "$secs") || rc=$?
  t1=$(now); h1=$(host_ticks); s1=$(proc_ticks $pid); e1=$(thread_ticks $pid smqd-engine)
  [ ${#pgdirs[@]} -eq 0 ] || p1=$(pg_ticks "${pgdirs[@]}")
  f1=$(flushes "$admin")
  local err gen w
  err=$(json errors "$out"); err=${err:-0}
  [ $rc -eq 0 ] && [ "$(json ok "$out")" = true ] || err="$err!"
  w=$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')
  gen=$(awk -v u="$(json user_s "$out")" -v s="$(json sys_s "$out")" -v hz="$hz" \
        'BEGIN {printf "%.0f", (u + s) * hz}')
  row "$r" "$cfg" "$sc" "$(json msg_per_s "$out")" "$(jlat p50 "$out")" "$(jlat p99 "$out")" \
    "$err" "$w" $((s1 - s0)) $((e1 - e0)) \
    "$([ "$p0" = - ] && echo - || echo $((p1 - p0)))" "$gen" $((h1 - h0)) \
    "$(awk -v a="${f0% *}" -v b="${f1% *}" 'BEGIN {print b - a}')" $((${f1#* } - ${f0#* }))
  stop_smqd
  [ -z "$schema" ] || sql "${pgdirs[0]}" "DROP SCHEMA $schema CASCADE" >/dev/null
}

# raw_run ROUND: smqd-peer-pg, 16 rows per transaction, on b's server
raw_run() {
  local r=$1 out rc=0 p0 p1 g0 g1 h0 h1 t0 t1 w line
  sql "$pg1" "CHECKPOINT" >/dev/null
  p0=$(pg_ticks "$pg1"); g0=$(child_ticks); h0=$(host_ticks); t0=$(now)
  out=$(timeout $((secs + 60)) "$peer" --port "$(cat "$pg1/port")" --connections $conns \
        --batch 16 --duration-s "$secs" --extra "host=127.0.0.1 dbname=postgres user=smqd") || rc=$?
  t1=$(now); h1=$(host_ticks); g1=$(child_ticks); p1=$(pg_ticks "$pg1")
  w=$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')
  # ROW pg lifecycle-b16 64 MSG/S P50_US P99_US ERRORS
  line=$(grep '^ROW ' <<<"$out" || echo "ROW pg lifecycle-b16 $conns 0 - - 1")
  set -- $line
  row "$r" raw-pg batch "$5" "$6" "$7" "$8$([ $rc -eq 0 ] || echo '!')" "$w" - - $((p1 - p0)) \
    $((g1 - g0)) $((h1 - h0)) - -
}

echo "pg.sh: ${secs}s per run, $rounds rounds, $conns connections, 1 KiB, $cores cores," \
     "disk $(df --output=source "$work" | tail -1), $(date -u '+%F %T') UTC"
configs=(sqlite pg pg-sync)
for r in $(seq "$rounds"); do
  echo "round $r (load $(cut -d' ' -f1 /proc/loadavg))"
  order=("${configs[@]:$(((r - 1) % 3))}" "${configs[@]:0:$(((r - 1) % 3))}")
  for sc in send lifecycle batch; do
    for cfg in "${order[@]}"; do smqd_run "$r" "$cfg" "$sc"; done
  done
  raw_run "$r"
done

# --- the tables
med() {   # med CONFIG SCENARIO FIELD: median over the runs without errors ("-" if none)
  awk -v c="$1" -v s="$2" -v f="$3" '$2 == c && $3 == s && $7 == "0" && $f != "-" {print $f}' \
    "$rows" | bench_median
}
echo
echo "medians of $rounds rounds, ${secs}s each, $conns connections, 1 KiB; CPU in % of one core" \
     "($cores cores = $((cores * 100)) %); load after $(cut -d' ' -f1-3 /proc/loadavg)"
# fmt SCALE DIGITS VALUE: VALUE / SCALE with DIGITS decimals, "-" kept
fmt() { awk -v k="$1" -v d="$2" -v v="$3" 'BEGIN {print v == "-" ? v : sprintf("%.*f", d, v / k)}'; }
cols='%-3s %-8s %-9s %8s %7s %7s %6s %7s %5s %5s %5s %6s %9s %6s %6s\n'
# other%: the host's busy CPU that none of this run's processes used (other jobs)
other() {
  awk -v h="$1" -v a="$2" -v b="$3" -v c="$4" 'BEGIN {if (h == "-") {print "-"; exit}
    o = h - (a == "-" ? 0 : a) - (b == "-" ? 0 : b) - (c == "-" ? 0 : c); printf "%.0f", o < 0 ? 0 : o}'
}
# shellcheck disable=SC2059
printf "$cols" "" config scenario msg/s p50_ms p99_ms smqd% engine% pg% gen% host% other% commit_ms \
  busy% failed
for cs in "a sqlite send" "a sqlite lifecycle" "a sqlite batch" "b pg send" "b pg lifecycle" \
          "b pg batch" "c pg-sync send" "c pg-sync lifecycle" "c pg-sync batch" "d raw-pg batch"; do
  set -- $cs
  # shellcheck disable=SC2059
  printf "$cols" "$1" "$2" "$3" "$(fmt 1 0 "$(med "$2" "$3" 4)")" \
    "$(fmt 1000 2 "$(med "$2" "$3" 5)")" "$(fmt 1000 2 "$(med "$2" "$3" 6)")" \
    "$(fmt 1 0 "$(med "$2" "$3" 8)")" "$(fmt 1 0 "$(med "$2" "$3" 9)")" \
    "$(fmt 1 0 "$(med "$2" "$3" 10)")" "$(fmt 1 0 "$(med "$2" "$3" 11)")" \
    "$(fmt 1 0 "$(med "$2" "$3" 12)")" \
    "$(other "$(med "$2" "$3" 12)" "$(med "$2" "$3" 8)" "$(med "$2" "$3" 10)" "$(med "$2" "$3" 11)")" \
    "$(fmt 1 2 "$(med "$2" "$3" 13)")" \
    "$(fmt 1 0 "$(med "$2" "$3" 14)")" \
    "$(awk -v c="$2" -v s="$3" '$2 == c && $3 == s && $7 != "0" {k++} END {print k + 0}' "$rows")"
done
echo "a sqlite: smqd, sync = full, database on the disk; b pg: smqd on PostgreSQL 15, one active node,"
echo "no standby; c pg-sync: the same with a synchronous streaming standby; d raw-pg: smqd-peer-pg,"
echo "16 rows per transaction, on b's server. msg/s: 201s (send), deletes (lifecycle, batch of 16)."
echo "pg%: every PostgreSQL process of the run (c: primary + standby); host%: the whole machine;"
echo "other%: host% - smqd% - pg% - gen% (other jobs, the kernel's softirqs); commit_ms: mean of"
echo "smqd_wal_flush_duration_seconds (SQLite: fdatasync; PostgreSQL: the flush's COMMIT);"
echo "busy%: share of the window a flush was in progress."

ratio() { awk -v a="$1" -v b="$2" 'BEGIN {print (a == "-" || b == "-" || b == 0) ? "-" : sprintf("%.2f", a / b)}'; }
# per-round ratios of one scenario: "min-max" over the rounds where both ran clean
spread() {
  awk -v x="$1" -v y="$2" -v s="$3" '$7 == "0" && $3 == s && ($2 == x || $2 == y) {v[$1, $2] = $4; r[$1] = 1}
    END {n = 0; for (k in r) if (((k, x) in v) && ((k, y) in v) && v[k, y] > 0) {q = v[k, x] / v[k, y]
           if (n == 0 || q < lo) lo = q; if (n == 0 || q > hi) hi = q; n++}
         if (n == 0) print "-"; else printf "%.2f-%.2f", lo, hi}' "$rows"
}
echo
printf '%-30s %18s %18s %18s\n' "ratio of medians (rounds)" send lifecycle batch
for pair in "b/a pg sqlite" "c/a pg-sync sqlite"; do
  set -- $pair
  line=$(printf '%-30s' "$1 $2 / $3")
  for sc in send lifecycle batch; do
    line+=$(printf ' %18s' "$(ratio "$(med "$2" $sc 4)" "$(med "$3" $sc 4)") ($(spread "$2" "$3" $sc))")
  done
  echo "$line"
done
printf '%-30s %18s %18s %18s\n' "b/d pg batch / raw-pg 16 rows" - - \
  "$(ratio "$(med pg batch 4)" "$(med raw-pg batch 4)")"

echo
# verdict A B: "A/B to 3 decimals PASS|FAIL", judged on the unrounded ratio (0.4988 is a FAIL)
verdict() {
  awk -v a="$1" -v b="$2" 'BEGIN {if (a == "-" || b == "-" || b == 0) {print "- NO DATA"; exit}
    printf "%.3f %s\n", a / b, ((a / b >= 0.50) ? "PASS" : "FAIL")}'
}
echo "target: PostgreSQL backend lifecycle / SQLite lifecycle >= 0.50:" \
     "b/a = $(verdict "$(med pg lifecycle 4)" "$(med sqlite lifecycle 4)")" \
     "(with a synchronous standby, c/a = $(verdict "$(med pg-sync lifecycle 4)" "$(med sqlite lifecycle 4)"))"

# What was saturated, per configuration and scenario: smqd's engine thread (one thread does
# every state change), else PostgreSQL when smqd's syncer had a COMMIT in flight >= 80 % of
# the window (smqd was waiting for it), else the host's cores; a saturated host is named too.
echo "bottleneck (medians over the measured window; % of one core):"
for cs in "b pg" "c pg-sync"; do
  set -- $cs
  for sc in send lifecycle batch; do
    awk -v n="$1 $2 $sc" -v sm="$(med "$2" $sc 8)" -v en="$(med "$2" $sc 9)" -v pg="$(med "$2" $sc 10)" \
        -v gen="$(med "$2" $sc 11)" -v host="$(med "$2" $sc 12)" -v busy="$(med "$2" $sc 14)" \
        -v full=$((cores * 100)) 'BEGIN { ot = host - sm - pg - gen
      if (sm == "-") { printf "  %-20s no clean run\n", n; exit }
      if (en >= 90) why = "smqd: its engine thread is saturated"
      else if (busy >= 80) why = "PostgreSQL: smqd waits on a COMMIT most of the time"
      else if (host >= 0.9 * full)
        why = sprintf("the shared CPU; of this run, %s uses more", sm > pg ? "smqd" : "PostgreSQL")
      else why = "nothing saturated: round-trip latency"
      if (host >= 0.9 * full && why !~ /shared/) why = why sprintf(" (host CPU saturated, %.0f%% of %d%%)", host, full)
      printf "  %-20s smqd %.0f%% (engine %.0f%%), postgres %.0f%%, generator %.0f%%, other %.0f%% of host %.0f%%, commit busy %.0f%% -> %s\n",
             n, sm, en, pg, gen, ot < 0 ? 0 : ot, host, busy, why }'
  done
done

# The CI form judges only that every run worked: no errors, something moved.
if [ "$smoke" = 1 ]; then
  bad=$(awk '$7 != "0" || $4 == 0' "$rows" | wc -l)
  [ "$bad" = 0 ] || { echo "pg.sh --smoke: $bad run(s) had errors or moved nothing" >&2; exit 1; }
  echo "pg.sh --smoke: every run worked"
fi
