# lib.sh — what the bench scripts share; they source it from the repository root.
#
#   bench_build DIR TARGET...     configure DIR as a Release build and build TARGETs
#   bench_conf DB [KEY VALUE]...  print the configuration every benchmark runs smqd
#                                 with: loopback, port 0 (the kernel picks), the demo
#                                 key k / s, sync = full, no request log, no admin
#                                 listener.  KEY is listen, sync, admin,
#                                 max_connections, max_queues or
#                                 max_subscriptions ([limits]
#                                 max_subscriptions_per_topic).
#   bench_conf_pg DSN [KEY VALUE]...  the same settings on the PostgreSQL backend:
#                                 [storage] backend = postgresql, dsn = DSN,
#                                 [cluster] node_id = a (no path or sync then).
#                                 KEY is listen, admin or max_connections.
#   bench_free_port               print a loopback port nothing listens on (20000-31999)
#   bench_wait_port PORT PID      wait until PORT accepts (0), or PID died / 10 s passed (1)
#   bench_smqd_port LOG PID       wait for smqd's "listening on" line in LOG and print its
#                                 MNS port; if PID exits first, show LOG and fail (1)
#   bench_median                  the median of the numbers on stdin, one a line ("-" if none)
#
# Every configuration names a push signing key pair ([topics] signing_key_file and
# signing_cert_file), made once per user in $BENCH_KEY_DIR (default
# /tmp/smqd-bench-key-UID): without one smqd makes an RSA key at its first start, which
# would be counted in start-up times and instruction profiles.  BENCH_KEY_DIR=none leaves
# the section out (a build from before topics refuses it).

bench_build() {
  local dir=$1
  shift
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$dir" -j"$(nproc)" --target "$@" >/dev/null
}

# bench_build_prof TARGET...: the profiling build (build-prof: Release with symbols and frame
# pointers, no tests) of profile.sh and floor.sh.
bench_build_prof() {
  cmake -S . -B build-prof -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS="-g -fno-omit-frame-pointer" \
    -DSMQD_TESTS=OFF >/dev/null
  cmake --build build-prof -j"$(nproc)" --target "$@" >/dev/null
}

bench_conf() {
  local db=$1
  shift
  _bench_conf_print "path = $db" sync full "$@"
}

bench_conf_pg() {
  local dsn=$1
  shift
  _bench_conf_print "backend = postgresql" dsn "$dsn" "$@"
}

# _bench_signing_pair: makes the pair once (owner-only), prints its directory.
_bench_signing_pair() {
  local dir=${BENCH_KEY_DIR:-/tmp/smqd-bench-key-$(id -u)}
  if [ -e "$dir" ] && { [ ! -O "$dir" ] || [ "$(stat -c %a "$dir")" != 700 ]; }; then
    echo "bench: $dir is not an owner-only directory of this user; set BENCH_KEY_DIR" >&2
    return 1
  fi
  if [ ! -s "$dir/cert.pem" ]; then
    (umask 077 && mkdir -p "$dir" &&
     openssl req -x509 -newkey rsa:2048 -nodes -keyout "$dir/key.pem" -out "$dir/cert.pem" \
       -days 3650 -subj /CN=smqd-bench 2>/dev/null) || { echo "bench: cannot make a key" >&2; return 1; }
  fi
  printf '%s' "$dir"
}

# _bench_conf_print STORAGE_LINE [KEY VALUE]...: the body of bench_conf and bench_conf_pg.
# With a dsn the SQLite-only sync is refused (smqd refuses it with backend = postgresql).
_bench_conf_print() {
  local storage=$1 listen=127.0.0.1:0 sync="" dsn="" admin=off max_conns="" max_queues="" max_subs="" keys
  shift
  while [ $# -ge 2 ]; do
    case $1 in
      listen) listen=$2 ;;
      sync) sync=$2 ;;
      dsn) dsn=$2 ;;
      admin) admin=$2 ;;
      max_connections) max_conns=$2 ;;
      max_queues) max_queues=$2 ;;
      max_subscriptions) max_subs=$2 ;;
      *) echo "bench_conf: unknown key $1" >&2; return 2 ;;
    esac
    shift 2
  done
  if [ -n "$dsn" ] && [ -n "$sync" ]; then echo "bench_conf_pg: no sync with a dsn" >&2; return 2; fi
  printf '[server]\nlisten = %s\n[storage]\n%s\n' "$listen" "$storage"
  if [ -n "$sync" ]; then printf 'sync = %s\n' "$sync"; fi
  if [ -n "$dsn" ]; then printf 'dsn = %s\n[cluster]\nnode_id = a\n' "$dsn"; fi
  printf '[auth]\naccess_key_id = k\naccess_key_secret = s\n'
  if [ -n "$max_conns$max_queues$max_subs" ]; then printf '[limits]\n'; fi
  if [ -n "$max_conns" ]; then printf 'max_connections = %s\n' "$max_conns"; fi
  if [ -n "$max_queues" ]; then printf 'max_queues = %s\n' "$max_queues"; fi
  if [ -n "$max_subs" ]; then printf 'max_subscriptions_per_topic = %s\n' "$max_subs"; fi
  printf '[log]\nrequests = false\n[admin]\nlisten = %s\n' "$admin"
  [ "${BENCH_KEY_DIR:-}" = none ] && return 0
  keys=$(_bench_signing_pair) || return 1
  printf '[topics]\nsigning_key_file = %s/key.pem\nsigning_cert_file = %s/cert.pem\n' "$keys" "$keys"
}

bench_free_port() {
  local p
  while :; do
    p=$((20000 + RANDOM % 12000))   # below the ephemeral range (32768-): no TIME_WAIT clashes
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
  done
}

bench_wait_port() {
  for _ in $(seq 200); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.05
  done
  return 1
}

bench_smqd_port() {
  until grep -qs "listening on" "$1"; do
    kill -0 "$2" 2>/dev/null || { cat "$1" >&2; return 1; }
    sleep 0.05
  done
  sed -n 's/.*listening on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$1" | head -1
}

bench_median() {
  sort -n | awk '{v[NR] = $1}
    END {if (NR == 0) print "-"; else print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}
