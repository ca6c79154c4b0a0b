#!/usr/bin/env bash
# test_tls.sh — smqd over HTTPS (docs/operations.md, "TLS"): certificates the test makes
# with openssl, curl and the official Node SDK trusting them as a private CA, https:// in
# the URLs answers carry, the admin listener over TLS, and a SIGHUP that swaps the
# certificate for new handshakes while a long poll on an open connection carries on.
#
# Run: SMQD_BIN=build/smqd bash tests/integration/test_tls.sh

set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"

require_tools curl openssl xmllint md5sum node
require_bin

CERTS="$SUITE_TMP/certs"
mkdir -p "$CERTS"

# make_cert NAME — a self-signed certificate for 127.0.0.1 (its own CA) and its key.
make_cert() {
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
        -subj "/CN=smqd test $1" -addext "subjectAltName=IP:127.0.0.1" \
        -keyout "$CERTS/$1.key" -out "$CERTS/$1.pem" 2>"$CERTS/$1.err"
}

# served_fingerprint ADDR — the SHA-256 fingerprint of the certificate a new handshake gets.
served_fingerprint() {
    openssl s_client -connect "$1" -servername 127.0.0.1 </dev/null 2>/dev/null |
        openssl x509 -noout -fingerprint -sha256 2>/dev/null | cut -d= -f2
}
fingerprint_of() { openssl x509 -noout -fingerprint -sha256 -in "$1" | cut -d= -f2; }

start_tls_server() {
    local dir
    new_server_dir
    dir=$NEW_DIR
    cp "$CERTS/a.pem" "$dir/cert.pem"; cp "$CERTS/a.key" "$dir/key.pem"; chmod 600 "$dir/key.pem"
    sed -i "s|^\[server\]$|[server]\ntls_cert_file = $dir/cert.pem\ntls_key_file = $dir/key.pem|" "$dir/smqd.conf"
    sed -i "s|^\[admin\]$|[admin]\ntls_cert_file = $dir/cert.pem\ntls_key_file = $dir/key.pem|" "$dir/smqd.conf"
    smqd_start "$dir"
}

t_https_with_curl() {
    assert_eq "the server says it listens on https" https "$SMQD_SCHEME"
    MNS_CACERT="$CERTS/a.pem" mns_request PUT /queues/tq
    assert_status "CreateQueue over HTTPS" 201
    assert_eq "Location names https" "https://$SMQD_ADDR/queues/tq" "$(header_value Location)"
    MNS_CACERT="$CERTS/a.pem" mns_request POST /queues/tq/messages \
        '<Message><MessageBody>secret cargo</MessageBody></Message>'
    assert_status "SendMessage over HTTPS" 201
    MNS_CACERT="$CERTS/a.pem" mns_request GET /queues/tq/messages
    assert_status "ReceiveMessage over HTTPS" 200
    assert_eq "the body comes back" "secret cargo" "$(xml_get MessageBody)"
    MNS_CACERT="$CERTS/a.pem" mns_request DELETE "/queues/tq/messages?ReceiptHandle=$(xml_get ReceiptHandle)"
    assert_status "DeleteMessage over HTTPS" 204
    MNS_CACERT="$CERTS/a.pem" mns_request GET /queues/nosuch
    assert_error "errors name the https HostId" 404 QueueNotExist
    MNS_CACERT="$CERTS/b.pem" mns_request GET /queues
    assert_eq "a client trusting another CA refuses the server" 000 "$RESP_STATUS"
    SMQD_SCHEME=http mns_request GET /queues
    assert_ne "plain HTTP to the TLS port gets no MNS answer" 200 "$RESP_STATUS"
}

t_admin_over_tls() {
    local code
    code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$CERTS/a.pem" "https://$SMQD_ADMIN/health")
    assert_eq "the admin listener answers /health over HTTPS" 200 "$code"
}

t_node_sdk() {
    local out
    out=$(cd "$HERE/node" && NODE_EXTRA_CA_CERTS="$CERTS/a.pem" timeout 30 node tls_client.js \
          "https://$SMQD_ADDR" nodetls 2>&1)
    assert_match "the Node SDK creates, sends, receives and deletes over HTTPS" \
        '"created":201,"location":"https://[^"]*/queues/nodetls","sent":201,"body":"over tls","sameId":true,"deleted":204' "$out"
}

# SIGHUP with new files: new handshakes get the new certificate, an open connection (a long
# poll begun before) is not dropped, and unreadable files keep the current certificate.
t_sighup_swaps_the_certificate() {
    local poll="$SUITE_TMP/poll" before
    before=$(served_fingerprint "$SMQD_ADDR")
    assert_eq "before: certificate a" "$(fingerprint_of "$CERTS/a.pem")" "$before"
    MNS_CACERT="$CERTS/a.pem" mns_request PUT /queues/longpoll
    ( MNS_CACERT="$CERTS/a.pem" mns_request GET '/queues/longpoll/messages?waitseconds=10'
      printf '%s\n%s\n' "$RESP_STATUS" "$(xml_get MessageBody)" >"$poll" ) &
    local poller=$!
    # Swap only once the poll is parked: its handshake (with certificate a) is then done.
    wait_for "the long poll is parked" 10000 poll_parked
    cp "$CERTS/b.pem" "$SMQD_DIR/cert.pem"; cp "$CERTS/b.key" "$SMQD_DIR/key.pem"
    kill -HUP "$SMQD_PID"
    wait_for "SIGHUP is logged" 5000 grep -q "SIGHUP: reloaded" "$SMQD_LOG"
    assert_eq "new handshakes get certificate b" "$(fingerprint_of "$CERTS/b.pem")" \
        "$(served_fingerprint "$SMQD_ADDR")"
    MNS_CACERT="$CERTS/b.pem" mns_request POST /queues/longpoll/messages \
        '<Message><MessageBody>after reload</MessageBody></Message>'
    assert_status "a new client trusting b sends" 201
    wait "$poller"
    assert_eq "the long poll on the connection opened before the reload got it" \
        $'200\nafter reload' "$(cat "$poll")"
    echo garbage >"$SMQD_DIR/key.pem"
    kill -HUP "$SMQD_PID"
    wait_for "a bad key is logged" 5000 grep -q "keeps its current certificate" "$SMQD_LOG"
    assert_eq "and certificate b is still served" "$(fingerprint_of "$CERTS/b.pem")" \
        "$(served_fingerprint "$SMQD_ADDR")"
}

poll_parked() {
    curl -s --cacert "$CERTS/a.pem" "https://$SMQD_ADMIN/metrics" | grep -q '^smqd_long_poll_waiters 1$'
}

t_bad_files_refuse_the_start() {
    local dir rc out
    new_server_dir
    dir=$NEW_DIR
    sed -i "s|^\[server\]$|[server]\ntls_cert_file = $CERTS/a.pem\ntls_key_file = $CERTS/b.key|" "$dir/smqd.conf"
    out=$(timeout 10 "$SMQD_BIN" -c "$dir/smqd.conf" 2>&1 </dev/null); rc=$?
    assert_eq "a key that is not the certificate's stops the start (configuration exit code)" 1 "$rc"
    assert_match "saying so" "does not belong to the certificate" "$out"
    sed -i "s|^tls_key_file = .*|tls_key_file =|" "$dir/smqd.conf"
    out=$("$SMQD_BIN" -t -c "$dir/smqd.conf" 2>&1 >/dev/null); rc=$?
    assert_eq "a certificate without its key is a configuration error" 1 "$rc"
    assert_match "naming both settings" "tls_cert_file is set but tls_key_file is not" "$out"
}

if ! make_cert a || ! make_cert b; then
    not_ok "make test certificates with openssl" "$(cat "$CERTS"/*.err)"
    finish
fi
if start_tls_server; then
    run_test t_https_with_curl
    run_test t_admin_over_tls
    run_test t_node_sdk
    run_test t_sighup_swaps_the_certificate
    smqd_stop
    [ "$SMQD_EXIT" = 0 ] && ok "SIGTERM: exit 0"
fi
run_test t_bad_files_refuse_the_start
finish
