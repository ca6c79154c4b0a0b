#!/usr/bin/env bash
# test_signing.sh — the push signing key and its certificate (docs/protocol.md §13.11,
# docs/operations.md "Push signing key") against the real smqd binary with curl and the
# openssl CLI: the first start makes a key kept in the database, GET and HEAD of
# /smqd/signing-cert.pem answer it without authentication, a restart serves the same
# certificate, other methods on the path are refused as any unknown route, a configured
# key and certificate are served instead, and a configured pair that does not match (or an
# expired certificate) keeps smqd from starting with a message naming the file.
#
# Run: SMQD_BIN=build/smqd bash tests/integration/test_signing.sh (or ctest -L integration).

set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"

require_tools curl openssl sqlite3 stat
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

# refused_start DESC KEY CERT WANT — smqd must exit non-zero before listening, saying WANT.
refused_start() {
    local out status
    configured_server "$2" "$3"
    out=$(timeout 20 "$SMQD_BIN" -c "$NEW_DIR/smqd.conf" </dev/null 2>&1)
    status=$?
    if [ "$status" -ne 0 ] && [ "$status" -ne 124 ]; then
        ok "$1: smqd refuses to start (status $status)"
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

if smqd_start; then
    run_test t_first_start_makes_a_key
    run_test t_head_and_other_methods
    run_test t_restart_serves_the_same_certificate
    smqd_stop
fi
run_test t_configured_pair_is_served
run_test t_bad_configured_pairs_refuse_to_start
finish
