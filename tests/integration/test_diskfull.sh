#!/usr/bin/env bash
# test_diskfull.sh — smqd on a really full filesystem (a 16 MiB tmpfs):
# sends fail with a clear 500 InternalError, nothing acknowledged is lost
# (also across a kill -9), receives and deletes keep working, and sends are
# accepted again once space is back; publishes to a topic are refused the same
# way while it is full, and fan out again once space is back.  Needs root (mount -t tmpfs), as the
# README's test command runs; without it the suite fails, it never skips.
#
# Run: SMQD_BIN=build/smqd bash tests/integration/test_diskfull.sh

set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"

require_tools curl openssl xmllint md5sum mount umount
require_bin

MNT=$(mktemp -d "${TMPDIR:-/tmp}/smqd-full.XXXXXX")
# The log must not live on the disk that is about to be full.
SMQD_LOG_DIR=$SUITE_TMP
BODY=$(head -c 60000 /dev/zero | tr '\0' 'x')
ACKED=()

unmount() { umount "$MNT" 2>/dev/null; rmdir "$MNT" 2>/dev/null; }

start_on_tmpfs() {
    write_config "$MNT"
    sed -i 's/^sync = full$/sync = full\nreserve_mb = 4/' "$MNT/smqd.conf"
    smqd_start "$MNT"
}

# fill_disk — sends 60 KB messages until one is refused; the acknowledged ones go to ACKED,
# REFUSED is 1 when a send was refused.
fill_disk() {
    local i
    REFUSED=0
    for i in $(seq 1 1000); do
        mns_request POST /queues/full/messages "<Message><MessageBody>$i-$BODY</MessageBody></Message>"
        if [ "$RESP_STATUS" = 201 ]; then
            ACKED+=("$i")
        else
            REFUSED=1
            break
        fi
    done
}

# storage_metric NAME — the value of an unlabelled sample of the admin listener's /metrics.
storage_metric() {
    raw_curl "http://$SMQD_ADMIN/metrics"
    printf '%s\n' "$RESP_BODY" | awk -v k="$1" '$1 == k { print $2 }'
}

# Fills the disk: sends 60 KB messages until one is refused.
t_fill() {
    mns_request PUT /queues/full '<Queue><MaximumMessageSize>65536</MaximumMessageSize></Queue>'
    assert_status "queue on the small filesystem" 201
    fill_disk
    assert_eq "a send is refused once the disk is full" 1 "$REFUSED"
    assert_error "the refusal is a 500 InternalError" 500 InternalError
    assert_match "whose message says the storage is full" "storage is full" "$RESP_BODY"
    assert_range "several sends were acknowledged first" 5 1000 "${#ACKED[@]}"
    mns_request POST /queues/full/messages "<Message><MessageBody>again</MessageBody></Message>"
    assert_error "further sends are refused at once" 500 InternalError
    assert_match "saying receives and deletes are served while the released reserve lasts" \
        "while its disk reserve lasts" "$RESP_BODY"
    assert_eq "/metrics says the storage is full" 1 "$(storage_metric smqd_storage_full)"
    assert_eq "and that the reserve is not spent" 0 "$(storage_metric smqd_storage_reserve_spent)"
    assert_match "the server says so in its log" "storage is full" "$(cat "$SMQD_LOG")"
}

NS='http://mns.aliyuncs.com/doc/v1/'
publish_xml() { printf '<Message xmlns="%s"><MessageBody>%s</MessageBody></Message>' "$NS" "$1"; }

# A topic with a queue subscription, made while there is room.
t_topic_before_fill() {
    mns_request PUT /queues/fanq
    assert_status "the subscribed queue" 201
    mns_request PUT /topics/fullt
    assert_status "a topic" 201
    mns_request PUT /topics/fullt/subscriptions/s \
        "<Subscription xmlns=\"$NS\"><Endpoint>acs:mns:cn-hangzhou:1:queues/fanq</Endpoint><NotifyContentFormat>SIMPLIFIED</NotifyContentFormat></Subscription>"
    assert_status "its subscription" 201
}

# While the disk is full a publish is refused like a send (docs/operations.md "Topics"),
# and nothing of it is kept or delivered.
t_publish_refused_while_full() {
    mns_request POST /topics/fullt/messages "$(publish_xml "while full")"
    assert_error "a publish is refused on the full disk" 500 InternalError
    assert_match "as storage full" "storage is full" "$RESP_BODY"
    mns_request GET /queues/fanq
    assert_xml "nothing reached the subscribed queue" ActiveMessages 0
}

# Once space is back, a publish is accepted and fans out again.
t_publish_after_space_back() {
    mns_request POST /topics/fullt/messages "$(publish_xml "space is back")"
    assert_status "a publish is accepted again" 201
    wait_for "and delivered into the subscribed queue" 10000 fanq_has_one
    mns_request GET /queues/fanq/messages
    assert_eq "only the publish made with room, not the refused one" "space is back" "$(xml_get MessageBody)"
}

fanq_has_one() {
    mns_request GET /queues/fanq
    [ "$(xml_get ActiveMessages)" = 1 ]
}

# Every acknowledged send survives a crash while the disk is full.
t_nothing_lost() {
    smqd_restart_same_data kill9 || return
    mns_request GET /queues/full
    assert_xml "every acknowledged message is still there" ActiveMessages "${#ACKED[@]}"
}

# A few deletes do not give the reserve back: after the cool-down, sends are still refused, so
# the space they would take stays for deletes (accepting them would fill the disk with the
# reserve already gone, and then deletes would fail).
t_refused_until_reserve_back() {
    local i handles="" batch
    mns_request GET '/queues/full/messages?numOfMessages=2'
    assert_status "receive two on the full disk" 200
    batch=$RESP_BODY
    for i in 1 2; do
        handles+="<ReceiptHandle>$(xml_get ReceiptHandle "$i" "$batch")</ReceiptHandle>"
    done
    mns_request DELETE /queues/full/messages "<ReceiptHandles>$handles</ReceiptHandles>"
    [ "$RESP_STATUS" = 204 ] ||
        mns_request DELETE /queues/full/messages "<ReceiptHandles>$handles</ReceiptHandles>"
    assert_status "and delete them" 204 && ACKED=("${ACKED[@]:2}")
    sleep 6                     # past the 5 s cool-down
    mns_request POST /queues/full/messages "<Message><MessageBody>early</MessageBody></Message>"
    assert_error "a send after the cool-down is still refused: the reserve is not back" 500 InternalError
    assert_match "as storage full" "storage is full" "$RESP_BODY"
}

# drain_all — receives and batch-deletes until the queue is empty; DRAINED counts the
# deleted messages, DRAIN_REFUSED the refused receives and deletes (each delete is retried once).
drain_all() {
    local n handles
    DRAINED=0 DRAIN_REFUSED=0
    while [ "$DRAIN_REFUSED" -le 3 ]; do
        mns_request GET '/queues/full/messages?numOfMessages=16'
        [ "$RESP_STATUS" = 404 ] && break
        if [ "$RESP_STATUS" != 200 ]; then DRAIN_REFUSED=$((DRAIN_REFUSED + 1)); continue; fi
        # One grep, not an XPath per handle: a batch is about a megabyte of bodies.
        handles=$(printf '%s' "$RESP_BODY" | grep -o '<ReceiptHandle>[^<]*</ReceiptHandle>' | tr -d '\n')
        n=$(printf '%s' "$handles" | grep -o '<ReceiptHandle>' | wc -l)
        mns_request DELETE /queues/full/messages "<ReceiptHandles>$handles</ReceiptHandles>"
        if [ "$RESP_STATUS" != 204 ]; then        # refused: the handles stay valid, retry once
            DRAIN_REFUSED=$((DRAIN_REFUSED + 1))
            mns_request DELETE /queues/full/messages "<ReceiptHandles>$handles</ReceiptHandles>"
        fi
        [ "$RESP_STATUS" = 204 ] && DRAINED=$((DRAINED + n))
    done
}

# Receive and delete keep working on the full disk, and free pages for sends.
# A receive or delete may be refused once, by the run in which the disk
# fills (or, after a restart on a full disk, the run that finds it full):
# that run frees the reserve, and every later one must go through.
t_drain_and_resume() {
    drain_all
    assert_eq "every acknowledged message was received and deleted" "${#ACKED[@]}" "$DRAINED"
    assert_range "at most one receive or delete was refused" 0 1 "$DRAIN_REFUSED"
    wait_for "sends are accepted again once space is back (after the cool-down)" 12000 send_ok
}

# The disk fills a second time.  Sends resumed only once the reserve was back, so there is
# one to release again and receives and deletes keep working.
t_second_fill() {
    ACKED=(resumed)             # the message send_ok got in
    fill_disk
    assert_eq "the disk fills again: a send is refused" 1 "$REFUSED"
    assert_range "sends were acknowledged before that" 5 1000 "${#ACKED[@]}"
    drain_all
    assert_eq "every acknowledged message was received and deleted again" "${#ACKED[@]}" "$DRAINED"
    assert_range "at most one receive or delete was refused again" 0 1 "$DRAIN_REFUSED"
}

# A volume too small for the default reserve twice over (12 MiB, reserve_mb = 16): the
# reserve is sized from the volume (a quarter), start-up says so, and a drained queue gets
# its sends back without a restart.
t_small_volume() {
    assert_match "start-up says the volume cannot hold the configured reserve" \
        "cannot hold the 16 MiB disk reserve" "$(cat "$SMQD_LOG")"
    assert_match "smqd -t says so too" "cannot hold the 16 MiB disk reserve" \
        "$("$SMQD_BIN" -t -c "$MNT/smqd.conf" 2>&1 >/dev/null)"
    ACKED=()
    mns_request PUT /queues/full '<Queue><MaximumMessageSize>65536</MaximumMessageSize></Queue>'
    assert_status "queue on the 12 MiB filesystem" 201
    fill_disk
    assert_eq "a send is refused once the disk is full" 1 "$REFUSED"
    drain_all
    assert_eq "every acknowledged message was received and deleted" "${#ACKED[@]}" "$DRAINED"
    wait_for "sends are accepted again on the drained small volume" 12000 send_ok
}

# The reserve is spent and another process takes the rest of the disk: what fails says so
# truthfully, and once that process frees its space, smqd retakes the reserve and sends resume.
t_filled_by_another() {
    ACKED=(resumed)             # the message send_ok got in
    fill_disk
    assert_eq "the disk fills again" 1 "$REFUSED"
    # Every block is taken, and the WAL was truncated after the last run, so a receive (which
    # writes WAL frames) has nowhere to write.
    dd if=/dev/zero of="$MNT/other-process" bs=64k 2>/dev/null
    mns_request GET '/queues/full/messages?numOfMessages=16'
    assert_error "a receive on a disk someone else filled fails as storage full" 500 InternalError
    assert_match "saying the storage is full" "storage is full" "$RESP_BODY"
    assert_no_match "without claiming that receives work" "still work|are served" "$RESP_BODY"
    mns_request POST /queues/full/messages "<Message><MessageBody>x</MessageBody></Message>"
    assert_error "a send is refused" 500 InternalError
    assert_match "its message says the reserve is spent" "no disk reserve is left \\(it is spent\\)" \
        "$RESP_BODY"
    assert_no_match "and no longer that receives and deletes are served" "are served|reserve lasts" \
        "$RESP_BODY"
    assert_eq "/metrics says the reserve is spent" 1 "$(storage_metric smqd_storage_reserve_spent)"
    assert_match "so does the log" "the reserve is spent" "$(cat "$SMQD_LOG")"
    rm -f "$MNT/other-process"
    drain_all
    assert_eq "once the other process freed its space, everything drains" "${#ACKED[@]}" "$DRAINED"
    wait_for "and sends are accepted again" 12000 send_ok
    assert_match "the reserve was taken back" "accepting new messages again" "$(cat "$SMQD_LOG")"
    assert_eq "/metrics: the reserve is no longer spent" 0 "$(storage_metric smqd_storage_reserve_spent)"
}

send_ok() {
    mns_request POST /queues/full/messages "<Message><MessageBody>resumed</MessageBody></Message>"
    [ "$RESP_STATUS" = 201 ]
}

if ! mount -t tmpfs -o size=16m tmpfs "$MNT" 2>"$SUITE_TMP/mount.err"; then
    not_ok "mount a 16 MiB tmpfs (this suite needs root)" "$(cat "$SUITE_TMP/mount.err")"
    rmdir "$MNT"
    finish
fi
trap 'cleanup_all; unmount' EXIT
if start_on_tmpfs; then
    run_test t_topic_before_fill
    run_test t_fill
    run_test t_publish_refused_while_full
    run_test t_refused_until_reserve_back
    run_test t_nothing_lost
    run_test t_drain_and_resume
    run_test t_publish_after_space_back
    run_test t_second_fill
    smqd_stop
fi
umount "$MNT"
if ! mount -t tmpfs -o size=12m tmpfs "$MNT" 2>"$SUITE_TMP/mount.err"; then
    not_ok "mount a 12 MiB tmpfs" "$(cat "$SUITE_TMP/mount.err")"
    finish
fi
write_config "$MNT"
if smqd_start "$MNT"; then
    run_test t_small_volume
    run_test t_filled_by_another
    smqd_stop
fi
finish
