#!/usr/bin/env bash
# test_monitoring.sh — checks conf/monitoring/ (docs/operations.md "Alert rules"): the
# Prometheus rules pass `promtool check rules` and their unit test (`promtool test rules`), the
# excerpt in that section is the file's, the Grafana dashboard is valid, provisioning-ready JSON
# with the panels and variables the operations guide promises, and every smqd_* metric named in
# the rules or the dashboard is one the real smqd exports — read from a live scrape of a server
# that saw traffic, a dead-letter move and an access denial, so renaming a metric in the code
# fails here, not in production.
#
# Run: SMQD_BIN=build/smqd bash tests/packaging/test_monitoring.sh
# Needs promtool (Debian package prometheus, scripts/deps.sh test), node, curl, openssl.

set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
# shellcheck source=../integration/lib.sh
. "$REPO/tests/integration/lib.sh"

MON="$REPO/conf/monitoring"
RULES="$MON/smqd-rules.yml"
RULES_TEST="$MON/smqd-rules.test.yml"
DASH="$MON/grafana/smqd-dashboard.json"

require_tools promtool node curl openssl xmllint md5sum base64
require_bin

# metric_names FILE... — every smqd_* token in the files, one per line, sorted. The whole file
# is read, not only the expressions, so a metric named in a description cannot go stale either.
metric_names() {
    grep -ohE '(^|[^A-Za-z0-9_])smqd_[a-z0-9_]+' "$@" | sed -E 's/^[^s]//' | sort -u
}

# unknown_metrics EXPORTED USED — the names in USED (files of names) that are not in EXPORTED;
# a histogram's _bucket, _sum and _count series count as its family's.
unknown_metrics() {
    local name base
    while read -r name; do
        grep -qxF "$name" "$1" && continue
        base=$(printf '%s' "$name" | sed -E 's/_(bucket|sum|count)$//')
        if [ "$base" != "$name" ] && grep -qxF "$base histogram" "$1.types"; then
            continue
        fi
        printf '%s\n' "$name"
    done <"$2"
}

test_rules_check() {
    local out
    if out=$(promtool check rules "$RULES" 2>&1); then ok "promtool check rules"
    else not_ok "promtool check rules" "$out"; fi
}

test_rules_unit_test() {
    local out
    if out=$(cd "$MON" && promtool test rules "$(basename "$RULES_TEST")" 2>&1); then
        ok "promtool test rules"
    else
        not_ok "promtool test rules" "$out"
    fi
}

# rule_exprs FILE — the text of every expr: in a rules file (one-line and "expr: |" blocks).
rule_exprs() {
    awk '
        block && match($0, /^ */) && RLENGTH > indent { print; next }
        { block = 0 }
        /^ *expr: *\|/ { block = 1; match($0, /^ */); indent = RLENGTH; next }
        /^ *expr: / { sub(/^ *expr: */, ""); print }' "$1"
}

# The alerts the issue and docs/operations.md ask for, each on the metric it must watch.
test_rules_cover() {
    local want exprs
    exprs=$(rule_exprs "$RULES")
    for want in smqd_queue_messages smqd_queue_oldest_message_age_seconds \
                smqd_messages_dead_lettered_total smqd_http_requests_total \
                smqd_http_request_duration_seconds_bucket smqd_wal_flush_duration_seconds_bucket \
                smqd_wal_flush_failures_total smqd_storage_full smqd_long_poll_waiters \
                smqd_access_denied_total smqd_admin_denied_total smqd_engine_up smqd_ready; do
        if printf '%s\n' "$exprs" | grep -q "$want"; then ok "rules use $want"
        else not_ok "rules use $want" "no expression of $RULES names it"; fi
    done
}

# The excerpt in docs/operations.md "Alert rules" must be the file's: each alert it shows
# exists, with the same expression.
test_docs_excerpt() {
    local section exprs line n=0
    section=$(awk '/^### /{inside = ($0 == "### Alert rules")} inside' "$REPO/docs/operations.md")
    exprs=$(rule_exprs "$RULES" | sed 's/^ *//')
    while read -r line; do
        n=$((n + 1))
        if printf '%s\n' "$exprs" | grep -qxF "$line"; then ok "docs excerpt: $line"
        else not_ok "docs excerpt expression is not in $RULES" "$line"; fi
    done < <(printf '%s\n' "$section" | sed -n 's/^ *expr: *//p')
    while read -r line; do
        grep -qE "^ *- alert: $line\$" "$RULES" || not_ok "docs excerpt alert $line is not in $RULES"
    done < <(printf '%s\n' "$section" | sed -n 's/^ *- alert: *//p')
    assert_range "docs/operations.md shows an excerpt of the rules" 1 20 "$n"
}

# Structure Grafana needs to provision the file and the operations guide promises.
test_dashboard_json() {
    local out
    if out=$(node - "$DASH" <<'JS' 2>&1
const fs = require('fs');
const d = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const bad = [];
if (!(d.schemaVersion >= 36)) bad.push(`schemaVersion ${d.schemaVersion} < 36`);
if (!d.uid || !d.title) bad.push('uid and title are needed to provision it');
const vars = Object.fromEntries((d.templating?.list ?? []).map(v => [v.name, v]));
if (vars.datasource?.type !== 'datasource' || vars.datasource?.query !== 'prometheus')
  bad.push('no "datasource" variable of Prometheus data sources');
const q = vars.queue?.query?.query ?? vars.queue?.query ?? '';
if (!/^label_values\(smqd_queue_messages(\{[^}]*\})?, *queue\)$/.test(q))
  bad.push(`queue variable is not label_values(smqd_queue_messages, queue): ${q}`);
const ids = new Set(), exprs = [];
for (const p of d.panels ?? []) {
  if (ids.has(p.id)) bad.push(`panel id ${p.id} twice`);
  ids.add(p.id);
  if (p.type === 'row') continue;
  if (p.datasource?.uid !== '${datasource}') bad.push(`panel "${p.title}" not on $datasource`);
  if (!p.targets?.length) bad.push(`panel "${p.title}" has no query`);
  for (const t of p.targets ?? []) {
    if (!t.expr) bad.push(`panel "${p.title}" target ${t.refId} has no expr`);
    else exprs.push(t.expr);
  }
}
const all = exprs.join('\n');
for (const m of ['smqd_queue_messages', 'smqd_queue_oldest_message_age_seconds',
                 'smqd_messages_dead_lettered_total', 'smqd_http_requests_total',
                 'smqd_http_request_duration_seconds_bucket', 'smqd_wal_flush_duration_seconds_bucket',
                 'smqd_storage_full', 'smqd_long_poll_waiters', 'smqd_throttled_requests_total',
                 'smqd_access_denied_total', 'smqd_db_bytes', 'smqd_wal_bytes'])
  if (!all.includes(m)) bad.push(`no panel queries ${m}`);
for (const p of [0.5, 0.99])
  if (!all.includes(`histogram_quantile(${p}, sum by (action, le) (rate(smqd_http_request_duration_seconds_bucket`))
    bad.push(`no p${p * 100} latency by action`);
if (bad.length) { console.log(bad.join('\n')); process.exit(1); }
JS
    ); then ok "dashboard: valid JSON, provisioning-ready, the promised panels"
    else not_ok "dashboard: valid JSON, provisioning-ready, the promised panels" "$out"; fi
}

DLQ_BODY='<?xml version="1.0" encoding="UTF-8"?><Queue xmlns="http://mns.aliyuncs.com/doc/v1/"><VisibilityTimeout>1</VisibilityTimeout><DlqPolicy><Enabled>true</Enabled><DeadLetterTargetQueue>orders-dlq</DeadLetterTargetQueue><MaxReceiveCount>1</MaxReceiveCount></DlqPolicy></Queue>'

dlq_holds_one() {
    mns_request GET /queues/orders-dlq
    [ "$(xml_get ActiveMessages)" = 1 ]
}

# traffic — a queue with a DLQ, a send, a receive, the move to the DLQ at the next receive,
# a long poll, and a request the second key's grant refuses: every family gets its rows.
traffic() {
    create_queue orders-dlq
    mns_request PUT /queues/orders "$DLQ_BODY"
    assert_status "create orders with orders-dlq as its DLQ" 201
    send_msg orders "poison"
    mns_request GET "/queues/orders/messages?waitseconds=0"
    assert_status "first receive" 200
    # VisibilityTimeout 1 s: the message is due again within this poll (which wakes then,
    # however late a loaded machine runs the timer; a fixed sleep assumed it had run), and
    # is moved instead of delivered.
    mns_request GET "/queues/orders/messages?waitseconds=3"
    assert_eq "second receive finds nothing: the message moved to orders-dlq" 404 "$RESP_STATUS"
    wait_for "orders-dlq holds it" 10000 dlq_holds_one
    MNS_AK=secondKey MNS_SK=secondSecret mns_request POST /queues/orders/messages "$(message_body denied)"
    assert_eq "secondKey may only list: its send is refused" 403 "$RESP_STATUS"
}

# scrape OUT — /metrics of the admin listener; OUT gets the sample and family names,
# OUT.types "name type" from the # TYPE lines, OUT.raw the response.
scrape() {
    curl -sS --noproxy '*' --max-time 10 -o "$1.raw" "http://$SMQD_ADMIN/metrics" || return 1
    awk '$1 == "#" && $2 == "TYPE" { print $3 " " $4 }' "$1.raw" | sort -u >"$1.types"
    { cut -d' ' -f1 "$1.types"; grep -v '^#' "$1.raw" | sed -E 's/[{ ].*//'; } | sort -u >"$1"
}

test_metrics_exported() {
    local exported="$SUITE_TMP/exported" used="$SUITE_TMP/used" missing
    printf '[grant.secondKey]\nqueues = orders\nactions = list\n' >>"$NEW_DIR/smqd.conf"
    smqd_start "$NEW_DIR" || return
    traffic
    if ! scrape "$exported"; then not_ok "scrape /metrics of $SMQD_ADMIN"; smqd_stop; return; fi
    smqd_stop
    assert_match "the scrape shows the dead-letter move" \
        '^smqd_messages_dead_lettered_total\{queue="orders"\} 1$' "$(cat "$exported.raw")"
    assert_match "the scrape shows the access denial" \
        '^smqd_access_denied_total\{access_key_id="secondKey",action="SendMessage"\} 1$' \
        "$(cat "$exported.raw")"
    assert_match "the scrape shows a WAL flush histogram" \
        '^smqd_wal_flush_duration_seconds histogram$' "$(cat "$exported.types")"

    metric_names "$RULES" "$RULES_TEST" "$DASH" >"$used"
    assert_range "names found in the rules and dashboard" 25 200 "$(wc -l <"$used")"
    missing=$(unknown_metrics "$exported" "$used")
    assert_eq "every smqd_* name in rules, rule test and dashboard is exported" "" "$missing"

    # The check itself must catch a renamed metric.
    printf 'smqd_queue_messagez\nsmqd_http_request_duration_seconds_bucket\nsmqd_ready_bucket\n' >"$used.neg"
    assert_eq "a misspelt name and a _bucket of a gauge are caught" \
        $'smqd_queue_messagez\nsmqd_ready_bucket' "$(unknown_metrics "$exported" "$used.neg")"
}

run_test test_rules_check
run_test test_rules_unit_test
run_test test_rules_cover
run_test test_docs_excerpt
run_test test_dashboard_json
new_server_dir
run_test test_metrics_exported
finish
