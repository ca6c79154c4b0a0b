#!/usr/bin/env bash
# test_grants.sh — per-key grants ([grant.KEY] sections, docs/protocol.md §3.7 and
# docs/operations.md "Several teams on one smqd") against the real smqd binary: each action
# class allowed and denied with 403 AccessDenied in the exact MNS <Error> document, a denied
# request changing nothing, names that differ only in case or by a character, ListQueue
# showing only what the key may list (paging included), batches refused whole, the
# dead-letter target needing "send", V4 signatures under the same grants, denials in the log
# and in /metrics with the key id (never the secret), SIGHUP changing the rights of a running
# server, `smqd -t` printing every key's rights, and the worked example of docs/operations.md
# (its configuration read from the doc) against the doc's table of who may do what.
#
# Run: SMQD_BIN=build/smqd bash tests/integration/test_grants.sh

set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"

require_tools curl openssl xmllint md5sum base64 awk sed
require_bin

A_SK=team-a-s3cret-value
B_SK=team-b-s3cret-value
C_SK=team-c-s3cret-value
D_SK=team-d-s3cret-value

# The teams' keys and grants; the default key ($MNS_AK_DEFAULT, the operators') and
# secondKey have no grant section and keep every right.
grant_lines() {
    cat <<EOF
key.team-a = $A_SK
key.team-b = $B_SK
key.team-c = $C_SK
key.team-d = $D_SK
[grant.team-a]
queues = a-*, shared
actions = send, receive, list
[grant.team-a.2]
queues = a-admin
actions = manage
[grant.team-b]
queues = b-*
actions = manage, send, receive, list
[grant.team-b.2]
queues = shared
actions = send
[grant.team-c]
queues = *
actions = send
[grant.team-d]
queues = victim
actions = manage
[grant.team-d.2]
queues = d-*
actions = send, receive, list
EOF
}

# start_granted — a server whose [auth] section also holds the teams' keys and grants.
start_granted() {
    local dir
    new_server_dir
    dir=$NEW_DIR
    # [auth] is followed by [log]: the keys go into [auth], the grants after them.
    awk -v extra="$(grant_lines)" '{ print } /^key\.secondKey/ { print extra }' \
        "$dir/smqd.conf" >"$dir/smqd.conf.new" && mv "$dir/smqd.conf.new" "$dir/smqd.conf"
    chmod 600 "$dir/smqd.conf"
    smqd_start "$dir"
}

as_a() { MNS_AK=team-a MNS_SK=$A_SK "$@"; }
as_b() { MNS_AK=team-b MNS_SK=$B_SK "$@"; }
as_c() { MNS_AK=team-c MNS_SK=$C_SK "$@"; }
as_d() { MNS_AK=team-d MNS_SK=$D_SK "$@"; }

# count_of QUEUE — ActiveMessages+InactiveMessages+DelayMessages, read with the operators' key.
count_of() {
    mns_request GET "/queues/$1"
    echo $(( $(xml_get ActiveMessages) + $(xml_get InactiveMessages) + $(xml_get DelayMessages) ))
}

# denied DESC — the last response is the AccessDenied error document.
denied() {
    assert_error "$1" 403 AccessDenied
}

batch_body() {   # N — a BatchSendMessage body of N messages
    local i x="<?xml version=\"1.0\" encoding=\"UTF-8\"?><Messages xmlns=\"$MNS_NS/\">"
    for ((i = 0; i < $1; i++)); do x+=$(message_xml "batch $i"); done
    printf '%s</Messages>' "$x"
}

handles_body() {   # HANDLE... — a BatchDeleteMessage body
    local h x="<?xml version=\"1.0\" encoding=\"UTF-8\"?><ReceiptHandles xmlns=\"$MNS_NS/\">"
    for h in "$@"; do x+="<ReceiptHandle>$h</ReceiptHandle>"; done
    printf '%s</ReceiptHandles>' "$x"
}

setup_queues() {
    local q
    for q in a-1 a-admin b-1 b shared shared1 A-1 other; do create_queue "$q"; done
}

t_allowed_within_grants() {
    local rh
    as_a send_msg a-1 "from team a"
    as_a mns_request GET "/queues/a-1/messages?peekonly=true"
    assert_status "team-a peeks at a-1 (receive)" 200
    as_a mns_request GET "/queues/a-1/messages?waitseconds=0"
    assert_status "team-a receives from a-1" 200
    rh=$(xml_get ReceiptHandle)
    as_a mns_request PUT "/queues/a-1/messages?receiptHandle=$rh&visibilityTimeout=5"
    assert_status "team-a changes visibility on a-1 (receive)" 200
    rh=$(xml_get ReceiptHandle)
    as_a mns_request DELETE "/queues/a-1/messages?ReceiptHandle=$rh"
    assert_status "team-a deletes its message (receive)" 204
    as_a mns_request GET /queues/a-1
    assert_status "team-a reads a-1's attributes (list)" 200
    as_a mns_request PUT "/queues/a-admin?metaoverride=true" "$(queue_body VisibilityTimeout 45)"
    assert_status "team-a sets a-admin's attributes (manage on a-admin)" 204
    as_b mns_request PUT /queues/b-new "$(queue_body)"
    assert_status "team-b creates b-new (manage on b-*)" 201
    as_b mns_request DELETE /queues/b-new
    assert_status "team-b deletes b-new" 204
    as_b send_msg shared "from team b"
    as_c send_msg other "team-c may send anywhere"
    mns_request GET "/queues/other/messages?waitseconds=0"
    rh=$(xml_get ReceiptHandle)
    mns_request DELETE "/queues/other/messages?ReceiptHandle=$rh"
    assert_status "the operators' key (no grants) still does everything" 204
}

t_denied_changes_nothing() {
    local before rh
    before=$(count_of b-1)
    as_a mns_request POST /queues/b-1/messages "$(message_body "not yours")"
    denied "team-a may not send to b-1"
    assert_match "the message names key, class and queue" \
        'The access key "team-a" has no "send" grant on queue "b-1"' "$RESP_BODY"
    assert_eq "b-1 holds no new message" "$before" "$(count_of b-1)"
    send_msg b-1 "team b's secret"
    as_a mns_request GET "/queues/b-1/messages?waitseconds=0"
    denied "team-a may not receive from b-1"
    as_a mns_request GET "/queues/b-1/messages?peekonly=true"
    denied "team-a may not peek at b-1"
    mns_request GET /queues/b-1
    assert_xml "the message is still Active (nothing received)" ActiveMessages 1
    mns_request GET "/queues/b-1/messages?waitseconds=0"
    rh=$(xml_get ReceiptHandle)
    as_a mns_request DELETE "/queues/b-1/messages?ReceiptHandle=$rh"
    denied "team-a may not delete with a handle it saw somehow"
    as_a mns_request PUT "/queues/b-1/messages?receiptHandle=$rh&visibilityTimeout=1"
    denied "team-a may not change visibility on b-1"
    mns_request DELETE "/queues/b-1/messages?ReceiptHandle=$rh"
    assert_status "the handle still works for its owner" 204
    as_a mns_request PUT /queues/a-2 "$(queue_body)"
    denied "team-a may not create a-2 (no manage on a-*)"
    mns_request GET /queues/a-2
    assert_error "a-2 was not created" 404 QueueNotExist
    as_a mns_request DELETE /queues/a-1
    denied "team-a may not delete a-1"
    as_a mns_request PUT "/queues/a-1?metaoverride=true" "$(queue_body VisibilityTimeout 99)"
    denied "team-a may not set a-1's attributes"
    mns_request GET /queues/a-1
    assert_xml "a-1 still exists, unchanged" VisibilityTimeout 30
    as_b mns_request GET /queues/a-1
    denied "team-b may not read a-1's attributes (list)"
    as_b mns_request GET "/queues/shared/messages?waitseconds=0"
    denied "team-b may only send to shared"
    as_c mns_request GET /queues/other
    denied "team-c (send only) may not read attributes"
    # A denial is the same for a queue that does not exist: grants decide before the engine.
    as_a mns_request POST /queues/b-missing/messages "$(message_body x)"
    denied "a queue outside the grants that does not exist is still AccessDenied"
}

t_near_misses() {
    as_a mns_request POST /queues/A-1/messages "$(message_body x)"
    denied "A-1 is not a-1: names match case-sensitively"
    as_a mns_request POST /queues/shared1/messages "$(message_body x)"
    denied "shared1 is not shared: an exact name matches only itself"
    as_b mns_request POST /queues/b/messages "$(message_body x)"
    denied "b is not matched by b-*"
    as_a mns_request POST /queues/shared/messages "$(message_body x)"
    assert_status "shared itself is" 201
    assert_eq "no message reached A-1, shared1 or b" "0 0 0" \
        "$(count_of A-1) $(count_of shared1) $(count_of b)"
}

t_batches_whole() {
    local before rh1 rh2
    as_b mns_request POST /queues/shared/messages "$(batch_body 3)"
    assert_status "team-b batch-sends to shared" 201
    before=$(count_of shared)
    as_a mns_request POST /queues/b-1/messages "$(batch_body 16)"
    denied "a batch send outside the grants is refused whole"
    assert_eq "b-1 got none of the 16" 0 "$(count_of b-1)"
    as_b mns_request GET "/queues/shared/messages?numOfMessages=16&waitseconds=0"
    denied "a batch receive outside the grants is refused whole"
    as_b mns_request GET "/queues/shared/messages?numOfMessages=16&peekonly=true"
    denied "a batch peek too"
    mns_request GET /queues/shared
    assert_xml "every message in shared is still Active" ActiveMessages "$before"
    mns_request GET "/queues/shared/messages?numOfMessages=2&waitseconds=0"
    rh1=$(xml_get ReceiptHandle 1)
    rh2=$(xml_get ReceiptHandle 2)
    as_b mns_request DELETE /queues/shared/messages "$(handles_body "$rh1" "$rh2")"
    denied "a batch delete outside the grants is refused whole"
    mns_request GET /queues/shared
    assert_xml "both messages are still there (Inactive)" InactiveMessages 2
    mns_request DELETE /queues/shared/messages "$(handles_body "$rh1" "$rh2")"
    assert_status "their owner deletes them" 204
}

# list_names [QUERY] — ListQueue as the current MNS_AK; sets NAMES (space-separated) and NEXT.
list_names() {
    mns_request GET /queues "$@"
    NAMES=$(xml_get_all QueueURL | sed 's#.*/##' | tr '\n' ' ' | sed 's/ $//')
    NEXT=$(xml_get NextMarker)
}

xml_get_all() {
    printf '%s' "$RESP_BODY" | xmllint --xpath "//*[local-name()='$1']/text()" - 2>/dev/null |
        sed 's#http#\nhttp#g' | sed '/^$/d'
}

t_list_filtered() {
    as_a list_names
    assert_status "team-a lists" 200
    assert_eq "team-a sees a-* and shared only" "a-1 a-admin shared" "$NAMES"
    as_a list_names -H 'x-mns-ret-number: 2'
    assert_eq "first page of two" "a-1 a-admin" "$NAMES"
    assert_eq "the marker is team-a's next queue, not the hidden A-1 or b" shared "$NEXT"
    as_a list_names -H 'x-mns-ret-number: 2' -H "x-mns-marker: $NEXT"
    assert_eq "second page" shared "$NAMES"
    assert_eq "no marker after team-a's last queue" "" "$NEXT"
    as_a list_names -H 'x-mns-prefix: b'
    assert_eq "a prefix outside the grants lists nothing" "" "$NAMES"
    as_b list_names
    assert_eq "team-b sees b-* only (its send on shared gives no list)" "b-1" "$NAMES"
    as_c mns_request GET /queues
    denied "team-c has list on no queue: ListQueue is AccessDenied"
    list_names
    assert_match "the operators see every queue" '^A-1 a-1 a-admin b b-1 other shared shared1$' \
        "$NAMES"
}

dlq_body() {   # TARGET
    printf '<?xml version="1.0" encoding="UTF-8"?><Queue xmlns="%s/"><DlqPolicy><Enabled>true</Enabled><DeadLetterTargetQueue>%s</DeadLetterTargetQueue><MaxReceiveCount>3</MaxReceiveCount></DlqPolicy></Queue>' \
        "$MNS_NS" "$1"
}

t_dlq_target_needs_send() {
    create_queue b-dlq
    as_b mns_request PUT /queues/b-src "$(dlq_body a-1)"
    denied "team-b may not create a queue that dead-letters into a-1"
    assert_match "the message names the target" 'grant on queue "a-1", the dead-letter target' \
        "$RESP_BODY"
    mns_request GET /queues/b-src
    assert_error "b-src was not created" 404 QueueNotExist
    as_b mns_request PUT /queues/b-src "$(dlq_body b-dlq)"
    assert_status "into b-dlq it may" 201
    as_b mns_request PUT "/queues/b-src?metaoverride=true" "$(dlq_body other)"
    denied "nor point b-src at another team's queue later"
    mns_request GET /queues/b-src
    assert_xml "the policy is unchanged" DlqTargetQueue b-dlq
    as_b mns_request PUT "/queues/b-src?metaoverride=true" "$(dlq_body shared)"
    assert_status "a target it may send to is fine (send on shared)" 204
}

# "manage" alone must not be a way to read a queue: a dead-letter policy moves its messages
# out, so turning one on also needs "receive" on the queue itself.
t_dlq_needs_receive_on_source() {
    create_queue victim
    create_queue d-dlq
    as_d mns_request PUT "/queues/victim?metaoverride=true" "$(dlq_body d-dlq)"
    denied "team-d (manage on victim) may not divert victim's messages to d-dlq"
    assert_match "the message names the source" \
        'no "receive" grant on queue "victim", which a dead-letter policy takes messages from' \
        "$RESP_BODY"
    mns_request GET /queues/victim
    assert_eq "victim has no policy" 0 "$(xml_count DlqEnabled)"
    as_d mns_request PUT "/queues/victim?metaoverride=true" "$(queue_body VisibilityTimeout 40)"
    assert_status "manage still sets other attributes" 204
}

t_v4_same_grants() {
    MNS_AK=team-a MNS_SK=$A_SK mns_request_v4 POST /queues/b-1/messages "$(message_body x)"
    denied "a V4-signed request is held to the same grants"
    MNS_AK=team-a MNS_SK=$A_SK mns_request_v4 POST /queues/a-1/messages "$(message_body v4)"
    assert_status "and allowed the same" 201
}

t_denials_logged_and_counted() {
    local metrics
    as_a mns_request POST /queues/b-1/messages "$(message_body "count me")"
    denied "one more denial"
    wait_for "the denial is logged with key, action and queue" 3000 \
        grep -q "access denied id=$RESP_ID access_key=team-a action=SendMessage queue=b-1" "$SMQD_LOG"
    assert_match "request lines carry the key id" \
        "request id=$RESP_ID access_key=team-a action=SendMessage queue=b-1 status=403 code=AccessDenied" \
        "$(grep "request id=$RESP_ID" "$SMQD_LOG")"
    assert_eq "no secret is ever logged" 0 "$(grep -c -e "$A_SK" -e "$B_SK" -e "$C_SK" "$SMQD_LOG")"
    metrics=$(curl -s --noproxy '*' --max-time 10 "http://$SMQD_ADMIN/metrics")
    assert_match "metrics count team-a's denied sends" \
        'smqd_access_denied_total\{access_key_id="team-a",action="SendMessage"\} [1-9]' "$metrics"
    assert_match "and team-c's denied ListQueue" \
        'smqd_access_denied_total\{access_key_id="team-c",action="ListQueue"\} 1' "$metrics"
    assert_no_match "the operators' key was never denied" "access_key_id=\"$MNS_AK_DEFAULT\"" "$metrics"
}

# denied_burst N — N denied SendMessages of team-a at once: one request signed once, fired
# as parallel curls, so they all land within the same second or two.
denied_burst() {
    local n=$1 i date auth md5 pids=()
    printf '%s' "$(message_body burst)" >"$SUITE_TMP/burst.req"
    md5=$(content_md5_of "$SUITE_TMP/burst.req")
    date=$(http_date)
    auth=$(mns_authorization team-a "$A_SK" POST "$md5" 'text/xml;charset=UTF-8' "$date" \
           /queues/b-1/messages 'x-mns-version: 2015-06-06')
    for ((i = 0; i < n; i++)); do
        curl -s -o /dev/null --noproxy '*' --max-time 10 -X POST --data-binary "@$SUITE_TMP/burst.req" \
             -H 'Content-Type: text/xml;charset=UTF-8' -H "Content-MD5: $md5" -H "Date: $date" \
             -H 'x-mns-version: 2015-06-06' -H "Authorization: $auth" \
             "http://$SMQD_ADDR/queues/b-1/messages" &
        pids+=($!)
    done
    wait "${pids[@]}"
}

denied_sends() {
    curl -s --noproxy '*' --max-time 10 "http://$SMQD_ADMIN/metrics" |
        awk '$1 == "smqd_access_denied_total{access_key_id=\"team-a\",action=\"SendMessage\"}" { print $2 }'
}

# Any key holder can make denials as fast as it likes: the log keeps at most 10 lines a
# (monotonic) second and the first line of a later second says how many it left out; the
# metric counts every one. Nothing here depends on where a second boundary falls or on how
# much of a second's budget earlier cases spent: a denial after a 1.1 s pause opens a fresh
# second (so it is logged and zeroes the carried count), then the burst, then another pause
# and a denial that must be logged and must carry whatever the burst left out. Between those
# two every denial is accounted for exactly: logged lines + "N more" counts == 61.
t_denial_lines_capped() {
    local before_count t0 spanned pre_line after burst_lines carried
    sleep 1.1
    as_a mns_request POST /queues/b-1/messages "$(message_body "before the burst")"
    denied "a denial a second after the last opens a fresh second"
    # The log is written with one write(2) before the answer is sent: no need to poll.
    pre_line=$(grep -n "access denied id=$RESP_ID access_key=team-a" "$SMQD_LOG" | cut -d: -f1)
    assert_match "and is logged" '^[0-9]+$' "$pre_line"
    [[ $pre_line =~ ^[0-9]+$ ]] || return
    before_count=$(denied_sends)
    t0=$(now_ms)
    denied_burst 60
    spanned=$(( ($(now_ms) - t0) / 1000 + 1 ))
    assert_eq "the metric counts all 60" $((before_count + 60)) "$(denied_sends)"
    after=$(tail -n +"$((pre_line + 1))" "$SMQD_LOG")
    burst_lines=$(printf '%s\n' "$after" | grep -c 'access denied id=')
    # The pre-denial spent one slot of its second; the burst starts in that second at the
    # earliest, so at least 9 of it are logged; and never more than 10 in any second it
    # spanned (+1: a second boundary may fall inside the measured interval).
    assert_range "the log holds at most 10 lines a second of the burst, and no fewer than 9" 9 \
        $(( (spanned + 1) * 10 )) "$burst_lines"
    sleep 1.1
    as_a mns_request POST /queues/b-1/messages "$(message_body "after the burst")"
    denied "the next denial, a second later"
    assert_eq "a second later the denial is logged again" 1 \
        "$(grep -c "access denied id=$RESP_ID access_key=team-a" "$SMQD_LOG")"
    after=$(tail -n +"$((pre_line + 1))" "$SMQD_LOG")
    carried=$(printf '%s\n' "$after" |
        sed -n 's/.*access denied: \([0-9][0-9]*\) more denial(s) before this one were not logged.*/\1/p' |
        awk '{ s += $1 } END { print s + 0 }')
    if [ "$burst_lines" -lt 60 ]; then
        assert_match "a line says how many were left out" \
            'access denied: [0-9]+ more denial\(s\) before this one were not logged' "$after"
    fi
    assert_eq "every denial since is either logged or counted as left out" 61 \
        $(( $(printf '%s\n' "$after" | grep -c 'access denied id=') + carried ))
}

# reload_with SED_SCRIPT — edits the running server's config and waits for the reload.
reload_with() {
    local n
    n=$(grep -c 'SIGHUP: reloaded' "$SMQD_LOG")
    sed -i "$1" "$SMQD_DIR/smqd.conf"
    kill -HUP "$SMQD_PID"
    wait_for "the reload is logged" 5000 \
        bash -c "[ \$(grep -c 'SIGHUP: reloaded' '$SMQD_LOG') -gt $n ]"
}

t_reload_changes_rights() {
    local errors
    reload_with 's/^queues = a-\*, shared$/queues = a-*, shared, b-1/'
    assert_match "the reload says how many keys are scoped" '6 access key\(s\) \(4 scoped by grants\)' \
        "$(grep 'SIGHUP: reloaded' "$SMQD_LOG" | tail -n 1)"
    as_a mns_request POST /queues/b-1/messages "$(message_body "after reload")"
    assert_status "after SIGHUP team-a may send to b-1" 201
    reload_with 's/^queues = a-\*, shared, b-1$/queues = a-*/'
    as_a mns_request POST /queues/shared/messages "$(message_body x)"
    denied "after the next SIGHUP team-a has lost shared"
    # A file whose grants do not load keeps the running rights.
    errors=$(grep -c 'keeping the running configuration' "$SMQD_LOG")
    printf '[grant.nobody]\nqueues = *\nactions = send\n' >>"$SMQD_DIR/smqd.conf"
    kill -HUP "$SMQD_PID"
    wait_for "the bad grant is logged" 5000 \
        bash -c "[ \$(grep -c 'keeping the running configuration' '$SMQD_LOG') -gt $errors ]"
    assert_match "the log names the problem" 'no access key "nobody" in \[auth\]' \
        "$(grep 'keeping the running configuration' "$SMQD_LOG" | tail -n 1)"
    as_a mns_request POST /queues/shared/messages "$(message_body x)"
    denied "a bad file changed nothing"
    as_a mns_request POST /queues/a-1/messages "$(message_body x)"
    assert_status "and what was allowed still is" 201
    # Removing a key's grant sections gives it everything again.
    sed -i '/^\[grant.nobody\]$/,$d' "$SMQD_DIR/smqd.conf"
    reload_with '/^\[grant\.team-a\]$/,/^actions/d; /^\[grant\.team-a\.2\]$/,/^actions/d'
    as_a mns_request POST /queues/b-1/messages "$(message_body x)"
    assert_status "without grant sections team-a may do everything" 201
    assert_match "and the reload says so" \
        'SIGHUP: access key "team-a" has no \[grant.team-a\] section any more: it may now do everything' \
        "$(grep 'no \[grant' "$SMQD_LOG")"
    assert_match "and is no longer counted as scoped" '\(3 scoped by grants\)' \
        "$(grep 'SIGHUP: reloaded' "$SMQD_LOG" | tail -n 1)"
}

t_config_test_prints_rights() {
    local out rc
    out=$("$SMQD_BIN" -t -c "$SMQD_DIR/smqd.conf" 2>&1)
    rc=$?
    assert_eq "smqd -t accepts the grants" 0 "$rc"
    assert_match "it prints team-b's grant" $'\\[grant.team-b\\]\n# team-b may manage, send, receive, list' "$out"
    assert_match "and a key without grants as unrestricted" \
        "# secondKey: every action on every queue" "$out"
    printf '[grant.team-b.3]\nqueues = b-*\nactions = send, purge\n' >>"$SMQD_DIR/smqd.conf"
    out=$("$SMQD_BIN" -t -c "$SMQD_DIR/smqd.conf" 2>&1)
    rc=$?
    assert_ne "an unknown action fails smqd -t" 0 "$rc"
    assert_match "naming it" 'unknown action "purge" \(known: manage, send, receive, list\)' "$out"
}

# The worked example of docs/operations.md ("Several teams on one smqd"), read from the doc
# itself, against its table of who may do what: the doc cannot promise what smqd does not do.
ex_secret() { echo "example-$1-s3cret"; }

# ex_row DESC METHOD RESOURCE BODY WANT... — the request as orders, billing, monitor, then
# platform (last: its right may change what the others see); WANT is "ok" (anything but 403)
# or "403" (AccessDenied) for each, in that order.
ex_row() {
    local desc=$1 method=$2 resource=$3 body=$4 key i=0 got
    local -a wants=("$5" "$6" "$7" "$8")
    for key in orders billing monitor platform; do
        MNS_AK=$key MNS_SK=$(ex_secret "$key") mns_request "$method" "$resource" "$body"
        got=ok; [ "$RESP_STATUS" = 403 ] && got=403
        if [ "$got" = 403 ]; then assert_match "$desc: $key's 403 is AccessDenied" \
            '<Code>AccessDenied</Code>' "$RESP_BODY"; fi
        assert_eq "$desc: $key" "${wants[$i]}" "$got"
        i=$((i + 1))
    done
}

ex_list() {   # KEY — the names KEY's ListQueue shows
    MNS_AK=$1 MNS_SK=$(ex_secret "$1") list_names
    echo "$NAMES"
}

t_worked_example() {
    local dir example
    example=$(awk '/^## Several teams on one smqd/ { f = 1 } f && /^```ini$/ { g = 1; next }
                   g && /^```$/ { exit } g { print }' "$HERE/../../docs/operations.md")
    assert_match "the doc has the example" '^\[auth\]' "$example"
    new_server_dir
    dir=$NEW_DIR
    sed -i '/^\[auth\]$/,/^key\.secondKey/d' "$dir/smqd.conf"
    printf '%s\n' "$example" | sed -E 's/<([a-z]+) secret>/example-\1-s3cret/' >>"$dir/smqd.conf"
    smqd_start "$dir" || return
    local q
    for q in orders-inbox billing billing-dlq; do
        MNS_AK=platform MNS_SK=$(ex_secret platform) mns_request PUT "/queues/$q" "$(queue_body)"
        assert_status "platform creates $q" 201
    done
    ex_row "CreateQueue orders-eu" PUT /queues/orders-eu "$(queue_body)" ok 403 403 ok
    ex_row "SendMessage to orders-inbox" POST /queues/orders-inbox/messages "$(message_body w)" \
        ok ok 403 ok
    ex_row "ReceiveMessage from orders-inbox" GET '/queues/orders-inbox/messages?waitseconds=0' "" \
        ok 403 403 ok
    ex_row "ReceiveMessage from billing" GET '/queues/billing/messages?waitseconds=0' "" \
        403 ok 403 ok
    ex_row "CreateQueue orders-eu with its DLQ billing-dlq" PUT /queues/orders-eu2 \
        "$(dlq_body billing-dlq)" 403 403 403 ok
    ex_row "SetQueueAttributes of billing with a DLQ policy" PUT '/queues/billing?metaoverride=true' \
        "$(dlq_body billing-dlq)" 403 403 403 ok
    assert_eq "ListQueue as orders" "orders-eu orders-eu2 orders-inbox" "$(ex_list orders)"
    assert_eq "ListQueue as billing" "billing billing-dlq" "$(ex_list billing)"
    assert_eq "ListQueue as monitor: every queue" "billing billing-dlq orders-eu orders-eu2 orders-inbox" \
        "$(ex_list monitor)"
    assert_eq "ListQueue as platform: every queue" "$(ex_list monitor)" "$(ex_list platform)"
    ex_row "DeleteQueue billing" DELETE /queues/billing "" 403 403 403 ok
    smqd_stop
}

start_granted || finish
run_test setup_queues
run_test t_allowed_within_grants
run_test t_denied_changes_nothing
run_test t_near_misses
run_test t_batches_whole
run_test t_list_filtered
run_test t_dlq_target_needs_send
run_test t_dlq_needs_receive_on_source
run_test t_v4_same_grants
run_test t_denials_logged_and_counted
run_test t_denial_lines_capped
run_test t_reload_changes_rights
run_test t_config_test_prints_rights
smqd_stop
run_test t_worked_example
finish
