#!/usr/bin/env bash
# test_readme.sh — the README's code snippets, run as a reader would run them: every fenced
# block after a "<!-- tested: NAME -->" line is extracted from README.md and run against a real
# smqd that uses conf/smqd.conf's demo key pair (what the snippets use). Only the address
# changes: the snippets say conf/smqd.conf's listen address, the test server has port 0.
#   readme-curl  the signed-curl block, run twice (201 then 204 on PUT), queue left empty
#   readme-node  the @alicloud/mns client construction, completed with send/receive/delete
# Snippets no test can run (Python, Java, Go SDKs) live in docs/sdks.md, not in the README.
#
# Run: SMQD_BIN=build/smqd bash tests/integration/test_readme.sh

set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"

require_tools curl openssl xmllint md5sum node awk sed
require_bin

ROOT=$(cd "$HERE/../.." && pwd)
README=${SMQD_README:-$ROOT/README.md}
conf_value() { sed -n "s/^$1 = //p" "$ROOT/conf/smqd.conf" | head -n 1; }
DEMO_LISTEN=$(sed -n '/^\[server\]/,/^\[/s/^listen = //p' "$ROOT/conf/smqd.conf")
MNS_AK_DEFAULT=$(conf_value access_key_id)
MNS_SK_DEFAULT=$(conf_value access_key_secret)

# snippet NAME — the fenced block that follows the marker line (fence lines excluded).
snippet() {
    awk -v m="<!-- tested: $1 -->" '
        $0 == m { armed = 1; next }
        armed && /^```/ { if (inside) exit; inside = 1; next }
        inside { print }' "$README"
}

# localise TEXT — the snippet pointed at the test server instead of the demo address.
localise() { printf '%s\n' "$1" | sed "s|$DEMO_LISTEN|$SMQD_ADDR|g"; }

t_curl_snippet() {
    local code out
    code=$(snippet readme-curl)
    assert_match "README has a readme-curl block" "mns PUT" "$code"
    assert_match "it targets conf/smqd.conf's listen address" "HOST=$DEMO_LISTEN" "$code"
    printf '%s\n' "$(localise "$code")" >"$SUITE_TMP/readme-curl.sh"
    out=$(bash "$SUITE_TMP/readme-curl.sh" 2>&1)
    assert_eq "first run: create 201, send 201, delete (with the received handle) 204" \
        "201 201 204" "$(printf '%s\n' "$out" | sed -n 's/^HTTP //p' | tr '\n' ' ' | sed 's/ $//')"
    out=$(bash "$SUITE_TMP/readme-curl.sh" 2>&1)
    assert_eq "second run: the existing queue answers 204, the rest as before" \
        "204 201 204" "$(printf '%s\n' "$out" | sed -n 's/^HTTP //p' | tr '\n' ' ' | sed 's/ $//')"
    mns_request GET /queues/orders
    assert_status "the snippet's queue exists" 200
    assert_eq "both messages were deleted" "0 0" "$(xml_get ActiveMessages) $(xml_get InactiveMessages)"
}

t_node_snippet() {
    local code out
    code=$(snippet readme-node)
    assert_match "README has a readme-node block" "@alicloud/mns" "$code"
    assert_match "it targets conf/smqd.conf's listen address" "http://$DEMO_LISTEN" "$code"
    {
        localise "$code"
        cat <<'JS'
(async () => {
  await client.createQueue('readme-node');
  const sent = await client.sendMessage('readme-node', { MessageBody: 'from the README' });
  const got = await client.receiveMessage('readme-node', 5);
  const deleted = await client.deleteMessage('readme-node', got.body.ReceiptHandle);
  console.log([sent.code, got.body.MessageBody, got.body.MessageId === sent.body.MessageId,
               deleted.code].join('|'));
})().catch((err) => { console.log('error: ' + (err && err.message || err)); process.exit(1); });
JS
    } >"$SUITE_TMP/readme-node.js"
    out=$(NODE_PATH="$HERE/node/node_modules" node "$SUITE_TMP/readme-node.js" 2>&1)
    assert_eq "the README's client sends, receives and deletes" \
        "201|from the README|true|204" "$out"
    mns_request GET /queues/readme-node
    assert_eq "nothing left in the queue" "0 0" "$(xml_get ActiveMessages) $(xml_get InactiveMessages)"
}

[ -d "$HERE/node/node_modules/@alicloud/mns" ] || {
    echo "run npm ci --prefix tests/integration/node first" >&2; echo "0 passed, 1 failed"; exit 1; }
smqd_start || finish
run_test t_curl_snippet
run_test t_node_snippet
smqd_stop
finish
