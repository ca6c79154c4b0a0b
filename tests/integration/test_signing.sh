#!/usr/bin/env bash
# test_signing.sh — the push signing key and its certificate (docs/protocol.md §13.11,
# docs/operations.md "Push signing key") against the real smqd binary with curl and the
# openssl CLI: the first start makes a key kept in the database, GET and HEAD of
# /smqd/signing-cert.pem answer it without authentication, a restart serves the same
# certificate, other methods on the path are refused as any unknown route, a configured
# key and certificate are served instead, and a configured pair that does not match (or an
# expired certificate) keeps smqd from starting with a message naming the file; on
# PostgreSQL (a throw-away server, tests/pg/pg-server.sh) two nodes sign with one stored key
# and a standby answers the certificate's GET with 503 like any request.
#
# Run: SMQD_BIN=build/smqd bash tests/integration/test_signing.sh (or ctest -L integration).

set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"

require_tools curl openssl sqlite3 stat psql
require_bin

CERT_PATH=/smqd/signing-cert.pem

# fetch_cert METHOD OUT — an unsigned request for the certificate; sets CERT_STATUS and
# CERT_TYPE, the body in OUT.
fetch_cert() {
    local hdrs="$SUITE_TMP/cert.hdrs" flag=()
    [ "$1" = HEAD ] && flag=(-I) || flag=(-X "$1")
    CERT_STATUS=$(curl -sS "${flag[@]}" -o "$2" -D "$hdrs" -w '%{http_code}' \
                  "http://$SMQD_ADDR$CERT_PATH")
    CERT_TYPE=$(tr -d '\r' <"$hdrs" | awk -F': ' 'tolower($1) == "content-type" {print $2}')
    CERT_LENGTH=$(tr -d '\r' <"$hdrs" | awk -F': ' 'tolower($1) == "content-length" {print $2}')
}

fingerprint() { openssl x509 -noout -fingerprint -sha256 -in "$1" 2>/dev/null; }

t_first_start_makes_a_key() {
    fetch_cert GET "$SUITE_TMP/first.pem"
    assert_eq "GET $CERT_PATH without a signature answers 200" 200 "$CERT_STATUS"
    assert_eq "its Content-Type" application/x-pem-file "$CERT_TYPE"
    if openssl x509 -noout -in "$SUITE_TMP/first.pem" 2>/dev/null; then
        ok "openssl x509 parses the certificate"
    else
        not_ok "openssl x509 parses the certificate" "$(head -c 300 "$SUITE_TMP/first.pem")"
    fi
    assert_match "a 2048-bit RSA key" "Public-Key: \(2048 bit\)" \
        "$(openssl x509 -noout -text -in "$SUITE_TMP/first.pem" 2>/dev/null)"
    assert_eq "self-signed: subject = issuer" \
        "$(openssl x509 -noout -subject -in "$SUITE_TMP/first.pem" | sed 's/^subject=//')" \
        "$(openssl x509 -noout -issuer -in "$SUITE_TMP/first.pem" | sed 's/^issuer=//')"
    assert_eq "the pair is kept in the database" 1 \
        "$(sqlite3 "file:$SMQD_DIR/smqd.db?mode=ro" 'SELECT count(*) FROM signing_key' 2>&1)"
    assert_eq "the database file holding the private key is 0600" 600 \
        "$(stat -c %a "$SMQD_DIR/smqd.db")"
    if grep -q "PRIVATE KEY" "$SMQD_LOG"; then
        not_ok "the private key is never logged"
    else
        ok "the private key is never logged"
    fi
    assert_match "the log says a key was made" "made a 2048-bit RSA key" "$(cat "$SMQD_LOG")"
}

t_head_and_other_methods() {
    fetch_cert HEAD "$SUITE_TMP/head.out"
    assert_eq "HEAD answers 200" 200 "$CERT_STATUS"
    assert_eq "HEAD's Content-Type" application/x-pem-file "$CERT_TYPE"
    assert_eq "HEAD's Content-Length is the certificate's" \
        "$(stat -c %s "$SUITE_TMP/first.pem")" "$CERT_LENGTH"
    mns_request POST "$CERT_PATH" "x"
    assert_error "a signed POST on the path is an unknown route" 400 InvalidRequestURL
    mns_request DELETE "$CERT_PATH"
    assert_error "a signed DELETE on the path is an unknown route" 400 InvalidRequestURL
    fetch_cert PUT "$SUITE_TMP/put.out"
    assert_eq "an unsigned PUT on the path is refused (no signature)" 400 "$CERT_STATUS"
    mns_request GET "/smqd/signing-cert.pem.bak"
    assert_error "a neighbouring path is not served" 400 InvalidRequestURL
}

t_restart_serves_the_same_certificate() {
    smqd_restart_same_data || return
    fetch_cert GET "$SUITE_TMP/second.pem"
    assert_eq "after a restart: 200" 200 "$CERT_STATUS"
    if cmp -s "$SUITE_TMP/first.pem" "$SUITE_TMP/second.pem"; then
        ok "after a restart the same certificate is served"
    else
        not_ok "after a restart the same certificate is served"
    fi
    assert_eq "still one pair in the database" 1 \
        "$(sqlite3 "file:$SMQD_DIR/smqd.db?mode=ro" 'SELECT count(*) FROM signing_key' 2>&1)"
}

# make_pair NAME — an RSA key NAME.key and its self-signed certificate NAME.pem.
make_pair() {
    openssl req -x509 -newkey rsa:2048 -nodes -keyout "$SUITE_TMP/$1.key" \
        -out "$SUITE_TMP/$1.pem" -subj "/CN=$1" -days 30 >/dev/null 2>&1
    chmod 600 "$SUITE_TMP/$1.key"
}

# configured_server KEY CERT — a fresh data dir whose [topics] names the pair.
configured_server() {
    new_server_dir
    printf '[topics]\nsigning_key_file = %s\nsigning_cert_file = %s\n' "$1" "$2" \
        >>"$NEW_DIR/smqd.conf"
}

t_configured_pair_is_served() {
    make_pair ops
    configured_server "$SUITE_TMP/ops.key" "$SUITE_TMP/ops.pem"
    smqd_start "$NEW_DIR" || return
    fetch_cert GET "$SUITE_TMP/served.pem"
    assert_eq "a configured pair: 200" 200 "$CERT_STATUS"
    assert_eq "the configured certificate is served" "$(fingerprint "$SUITE_TMP/ops.pem")" \
        "$(fingerprint "$SUITE_TMP/served.pem")"
    assert_eq "no key is made in the database" 0 \
        "$(sqlite3 "file:$SMQD_DIR/smqd.db?mode=ro" 'SELECT count(*) FROM signing_key' 2>&1)"
    smqd_stop
}

# refused_start DESC KEY CERT WANT — smqd must exit 1 (a configuration error) before
# listening, saying WANT.
refused_start() {
    local out status
    configured_server "$2" "$3"
    out=$(timeout 20 "$SMQD_BIN" -c "$NEW_DIR/smqd.conf" </dev/null 2>&1)
    status=$?
    if [ "$status" -eq 1 ]; then
        ok "$1: smqd refuses to start (status 1)"
    else
        not_ok "$1: smqd refuses to start" "status $status"$'\n'"$out"
    fi
    assert_match "$1: the message says why" "$4" "$out"
    if printf '%s' "$out" | grep -q 'listening on'; then
        not_ok "$1: nothing listened"
    else
        ok "$1: nothing listened"
    fi
}

t_bad_configured_pairs_refuse_to_start() {
    make_pair other
    refused_start "a key with another key's certificate" "$SUITE_TMP/ops.key" \
        "$SUITE_TMP/other.pem" "signing certificate $SUITE_TMP/other.pem: does not hold the signing key"
    refused_start "a certificate that is not one" "$SUITE_TMP/ops.key" "$SUITE_TMP/ops.key" \
        "signing certificate $SUITE_TMP/ops.key: not a PEM X.509 certificate"
    refused_start "a key that is not one" "$SUITE_TMP/ops.pem" "$SUITE_TMP/ops.pem" \
        "signing key $SUITE_TMP/ops.pem: not an unencrypted PEM private key"
    refused_start "a certificate file that is not there" "$SUITE_TMP/ops.key" \
        "$SUITE_TMP/none.pem" "signing certificate $SUITE_TMP/none.pem: No such file"
    # An expired certificate: `openssl ca` is the one tool of OpenSSL 3.0 that sets dates
    # in the past (a one-day certificate of 2020).
    local ca="$SUITE_TMP/ca"
    mkdir -p "$ca" && : >"$ca/index.txt" && echo 01 >"$ca/serial"
    printf '[ca]\ndefault_ca = d\n[d]\ndatabase = %s/index.txt\nnew_certs_dir = %s\n'\
'serial = %s/serial\ndefault_md = sha256\npolicy = p\n[p]\ncommonName = supplied\n' \
        "$ca" "$ca" "$ca" >"$ca/ca.cnf"
    openssl req -new -newkey rsa:2048 -nodes -keyout "$SUITE_TMP/old.key" -subj /CN=old \
        -out "$ca/old.csr" >/dev/null 2>&1
    openssl ca -batch -config "$ca/ca.cnf" -selfsign -keyfile "$SUITE_TMP/old.key" \
        -in "$ca/old.csr" -startdate 20200101000000Z -enddate 20200102000000Z -notext \
        -out "$SUITE_TMP/expired.pem" >/dev/null 2>&1
    if openssl x509 -noout -checkend 0 -in "$SUITE_TMP/expired.pem" >/dev/null 2>&1 ||
       ! openssl x509 -noout -in "$SUITE_TMP/expired.pem" >/dev/null 2>&1; then
        not_ok "an expired certificate could be made with this openssl"
        return
    fi
    refused_start "an expired certificate" "$SUITE_TMP/old.key" "$SUITE_TMP/expired.pem" \
        "signing certificate $SUITE_TMP/expired.pem: expired"
}

# ---- PostgreSQL: one key for every node; a standby answers as it answers everything ----

# pg_node DSN NODE_ID — a fresh data dir whose config uses PostgreSQL (NEW_DIR).
pg_node() {
    new_server_dir
    sed -i -e "s|^path = .*|backend = postgresql\ndsn = $1|" -e '/^sync = /d' "$NEW_DIR/smqd.conf"
    printf '[cluster]\nnode_id = %s\nlease_ttl_s = 2\n' "$2" >>"$NEW_DIR/smqd.conf"
}

# wait_ready ADMIN — polls the admin listener's /ready for up to 15 s.
wait_ready() {
    local i
    for i in $(seq 1 150); do
        [ "$(curl -s --max-time 2 "http://$1/ready")" = ready ] && return 0
        sleep 0.1
    done
    return 1
}

t_postgresql_nodes_share_one_key() {
    local pg dsn a_pid a_addr a_admin b_addr b_admin active standby
    pg=$(mktemp -d "${TMPDIR:-/tmp}/smqd-it-pg.XXXXXX")
    if ! bash "$HERE/../pg/pg-server.sh" start "$pg" 120 >/dev/null 2>"$SUITE_TMP/pg.err"; then
        not_ok "start a PostgreSQL" "$(cat "$SUITE_TMP/pg.err")"
        rm -rf "$pg"
        return
    fi
    dsn=$(cat "$pg/dsn")
    pg_node "$dsn" sig-a
    smqd_start "$NEW_DIR" || return
    a_pid=$SMQD_PID a_addr=$SMQD_ADDR a_admin=$SMQD_ADMIN
    wait_ready "$a_admin" || not_ok "node a takes the lease"
    pg_node "$dsn" sig-b
    smqd_start "$NEW_DIR" || return
    b_addr=$SMQD_ADDR b_admin=$SMQD_ADMIN
    active=$(curl -sS -o "$SUITE_TMP/pg-a.pem" -w '%{http_code}' "http://$a_addr$CERT_PATH")
    standby=$(curl -sS -o "$SUITE_TMP/pg-b.out" -w '%{http_code}' "http://$b_addr$CERT_PATH")
    assert_eq "the active node serves the certificate" 200 "$active"
    assert_eq "a standby answers 503, as it answers every request" 503 "$standby"
    assert_match "with ServiceUnavailable" "<Code>ServiceUnavailable</Code>" \
        "$(cat "$SUITE_TMP/pg-b.out")"
    assert_eq "one pair in PostgreSQL" 1 \
        "$(psql "$dsn" -tAc 'SELECT count(*) FROM smq_signing_key' 2>&1)"
    # Node a goes away; b takes the lease and signs with the same key.
    kill -TERM "$a_pid"
    wait_pid_gone "$a_pid" 10000 || not_ok "node a stops on SIGTERM"
    wait_ready "$b_admin" || not_ok "node b takes the lease over"
    curl -sS -o "$SUITE_TMP/pg-b.pem" "http://$b_addr$CERT_PATH"
    if [ -s "$SUITE_TMP/pg-a.pem" ] && cmp -s "$SUITE_TMP/pg-a.pem" "$SUITE_TMP/pg-b.pem"; then
        ok "the node that took over serves the same certificate"
    else
        not_ok "the node that took over serves the same certificate"
    fi
    assert_eq "still one pair in PostgreSQL" 1 \
        "$(psql "$dsn" -tAc 'SELECT count(*) FROM smq_signing_key' 2>&1)"
    smqd_stop
    bash "$HERE/../pg/pg-server.sh" stop "$pg" >/dev/null 2>&1
    rm -rf "$pg"
}

if smqd_start; then
    run_test t_first_start_makes_a_key
    run_test t_head_and_other_methods
    run_test t_restart_serves_the_same_certificate
    smqd_stop
fi
run_test t_configured_pair_is_served
run_test t_bad_configured_pairs_refuse_to_start
run_test t_postgresql_nodes_share_one_key
finish
