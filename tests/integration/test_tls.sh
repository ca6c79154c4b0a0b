#!/usr/bin/env bash
# test_tls.sh — smqd over HTTPS (docs/operations.md, "TLS"): certificates the test makes
# with openssl, curl and the official Node SDK trusting them as a private CA, https:// in
# the URLs answers carry (also when a TLS proxy in front says so with url_scheme), a
# certificate chain through an intermediate CA, the admin listener over TLS and its reload,
# and a SIGHUP that swaps the certificate for new handshakes while a long poll on an open
# connection carries on.
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
# make_chain — a root CA, an intermediate CA it signs, and a leaf for 127.0.0.1 the
# intermediate signs: chain.pem is leaf + intermediate, as an operator installs it; a client
# trusts only root.pem.
make_chain() {
    local c=$CERTS
    printf 'basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n' >"$c/ca.ext"
    printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n' >"$c/leaf.ext"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
        -subj "/CN=smqd test root" -addext 'basicConstraints=critical,CA:TRUE' \
        -addext 'keyUsage=critical,keyCertSign,cRLSign' \
        -keyout "$c/root.key" -out "$c/root.pem" 2>>"$c/chain.err" &&
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=smqd test inter" \
        -keyout "$c/inter.key" -out "$c/inter.csr" 2>>"$c/chain.err" &&
    openssl x509 -req -in "$c/inter.csr" -CA "$c/root.pem" -CAkey "$c/root.key" -CAcreateserial \
        -days 2 -extfile "$c/ca.ext" -out "$c/inter.pem" 2>>"$c/chain.err" &&
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=127.0.0.1" \
        -keyout "$c/leaf.key" -out "$c/leaf.csr" 2>>"$c/chain.err" &&
    openssl x509 -req -in "$c/leaf.csr" -CA "$c/inter.pem" -CAkey "$c/inter.key" -CAcreateserial \
        -days 2 -extfile "$c/leaf.ext" -out "$c/leaf.pem" 2>>"$c/chain.err" &&
    cat "$c/leaf.pem" "$c/inter.pem" >"$c/chain.pem"
}

served_fingerprint() {
    openssl s_client -connect "$1" -servername 127.0.0.1 </dev/null 2>/dev/null |
        openssl x509 -noout -fingerprint -sha256 2>/dev/null | cut -d= -f2
}
fingerprint_of() { openssl x509 -noout -fingerprint -sha256 -in "$1" | cut -d= -f2; }

# use_cert DIR CERT KEY SECTION... — DIR's config serves CERT and KEY (copied into DIR) on
# the listeners of these sections (server, admin).
use_cert() {
    local dir=$1 cert=$2 key=$3 s
    shift 3
    cp "$cert" "$dir/cert.pem"; cp "$key" "$dir/key.pem"; chmod 600 "$dir/key.pem"
    for s in "$@"; do
        sed -i "s|^\[$s\]$|[$s]\ntls_cert_file = $dir/cert.pem\ntls_key_file = $dir/key.pem|" "$dir/smqd.conf"
    done
}

start_tls_server() {
    new_server_dir
    use_cert "$NEW_DIR" "$CERTS/a.pem" "$CERTS/a.key" server admin
    smqd_start "$NEW_DIR"
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
    MNS_CACERT="$CERTS/a.pem" mns_request GET /queues
    assert_eq "ListQueue's QueueURL names https" "https://$SMQD_ADDR/queues/tq" "$(xml_get QueueURL)"
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

# The admin listener's certificate is reloaded by SIGHUP too, from its own files (the MNS
# listener keeps b: its key file was left unreadable by the test before).
t_admin_reload() {
    local code n
    cp "$CERTS/c.pem" "$SMQD_DIR/admin-cert.pem"; cp "$CERTS/c.key" "$SMQD_DIR/admin-key.pem"
    awk -v d="$SMQD_DIR" '/^\[admin\]$/ { admin = 1 } admin && /^tls_cert_file/ { $0 = "tls_cert_file = " d "/admin-cert.pem" }
        admin && /^tls_key_file/ { $0 = "tls_key_file = " d "/admin-key.pem" } { print }' \
        "$SMQD_DIR/smqd.conf" >"$SMQD_DIR/smqd.conf.new" && mv "$SMQD_DIR/smqd.conf.new" "$SMQD_DIR/smqd.conf"
    chmod 600 "$SMQD_DIR/smqd.conf"
    n=$(grep -c 'SIGHUP: reloaded' "$SMQD_LOG")
    kill -HUP "$SMQD_PID"
    wait_for "SIGHUP is logged" 5000 bash -c "[ \$(grep -c 'SIGHUP: reloaded' '$SMQD_LOG') -gt $n ]"
    assert_eq "the admin listener now serves certificate c" "$(fingerprint_of "$CERTS/c.pem")" \
        "$(served_fingerprint "$SMQD_ADMIN")"
    assert_eq "and the MNS listener still serves b" "$(fingerprint_of "$CERTS/b.pem")" \
        "$(served_fingerprint "$SMQD_ADDR")"
    code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$CERTS/c.pem" "https://$SMQD_ADMIN/health")
    assert_eq "a client trusting c is served by the admin listener" 200 "$code"
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

# A server certificate signed by an intermediate CA: the file holds leaf + intermediate, and
# a client that trusts only the root verifies the chain smqd serves.
t_chain() {
    new_server_dir
    use_cert "$NEW_DIR" "$CERTS/chain.pem" "$CERTS/leaf.key" server
    smqd_start "$NEW_DIR" || return
    MNS_CACERT="$CERTS/root.pem" mns_request GET /queues
    assert_status "a client trusting only the root CA is served" 200
    assert_eq "the handshake carries the intermediate" 2 \
        "$(openssl s_client -connect "$SMQD_ADDR" -showcerts </dev/null 2>/dev/null | grep -c 'BEGIN CERTIFICATE')"
    smqd_stop
}

# url_scheme: behind a TLS-terminating proxy a plain listener still names https in its
# answers (Location, QueueURL, HostId); on a TLS listener "http" says the reverse.
t_url_scheme() {
    local dir
    new_server_dir
    dir=$NEW_DIR
    sed -i "s|^\[server\]$|[server]\nurl_scheme = https|" "$dir/smqd.conf"
    smqd_start "$dir" || return
    assert_eq "the listener itself is plain HTTP" http "$SMQD_SCHEME"
    mns_request PUT /queues/proxied
    assert_status "CreateQueue through the proxy's plain side" 201
    assert_eq "Location names https" "https://$SMQD_ADDR/queues/proxied" "$(header_value Location)"
    mns_request GET /queues
    assert_eq "QueueURL names https" "https://$SMQD_ADDR/queues/proxied" "$(xml_get QueueURL)"
    mns_request GET /queues/nosuch
    assert_match "the error's HostId names https" "<HostId>https://$SMQD_ADDR</HostId>" "$RESP_BODY"
    smqd_stop
    new_server_dir
    use_cert "$NEW_DIR" "$CERTS/a.pem" "$CERTS/a.key" server
    sed -i "s|^\[server\]$|[server]\nurl_scheme = http|" "$NEW_DIR/smqd.conf"
    smqd_start "$NEW_DIR" || return
    MNS_CACERT="$CERTS/a.pem" mns_request PUT /queues/plainnamed
    assert_eq "url_scheme = http on a TLS listener: Location names http" \
        "http://$SMQD_ADDR/queues/plainnamed" "$(header_value Location)"
    smqd_stop
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

if ! make_cert a || ! make_cert b || ! make_cert c || ! make_chain; then
    not_ok "make test certificates with openssl" "$(cat "$CERTS"/*.err)"
    finish
fi
if start_tls_server; then
    run_test t_https_with_curl
    run_test t_admin_over_tls
    run_test t_node_sdk
    run_test t_sighup_swaps_the_certificate
    run_test t_admin_reload
    smqd_stop
    [ "$SMQD_EXIT" = 0 ] && ok "SIGTERM: exit 0"
fi
run_test t_chain
run_test t_url_scheme
run_test t_bad_files_refuse_the_start
finish
