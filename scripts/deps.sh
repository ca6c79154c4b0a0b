#!/usr/bin/env bash
# deps.sh — installs the Debian 12 packages smqd needs, only those missing.
#   scripts/deps.sh build   compiler, CMake and the libraries (libcurl for smqctl and
#                           the push pool, libsystemd for sd_notify, scdoc for the man pages)
#   scripts/deps.sh deb     build's plus what scripts/build-deb.sh needs (debhelper, lintian)
#   scripts/deps.sh test    the above plus cmocka, curl, Node.js/npm, valgrind, PostgreSQL 15,
#                           pg_auto_failover and HAProxy
# Must run as root (or with sudo available) on Debian 12.
set -euo pipefail

build_pkgs=(gcc make cmake pkg-config libmicrohttpd-dev libxml2-dev libssl-dev
            libsqlite3-dev libpq-dev libinih-dev libcurl4-openssl-dev libsystemd-dev libgnutls28-dev
            scdoc)
test_pkgs=(libcmocka-dev curl openssl ca-certificates valgrind libxml2-utils procps sqlite3
           postgresql-15 haproxy
           clang libclang-rt-14-dev fuse3 libfuse3-dev groff-base)
# The failover recipe (tests/recipe/run.sh): a pg_auto_failover formation (and haproxy above).
test_pkgs+=(pg-auto-failover-cli postgresql-15-auto-failover)
test_pkgs+=(prometheus)   # promtool: conf/monitoring/ rules (tests/packaging/test_monitoring.sh)
# The Debian package's build (scripts/build-deb.sh, and the test that runs it).
deb_pkgs=(debhelper dpkg-dev fakeroot lintian)
test_pkgs+=("${deb_pkgs[@]}" systemd)   # systemd-analyze (tests/packaging/test_deb.sh)

want=("${build_pkgs[@]}")
if [ "${1:-build}" = "deb" ]; then
  want+=("${deb_pkgs[@]}")
elif [ "${1:-build}" = "test" ]; then
  want+=("${test_pkgs[@]}")
  # Node.js may come from elsewhere (e.g. a newer install); only add Debian's if absent.
  command -v node >/dev/null 2>&1 || want+=(nodejs)
  command -v npm >/dev/null 2>&1 || want+=(npm)
fi

missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "deps: installing ${missing[*]}" >&2
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
