#!/usr/bin/env bash
# test_diskfull.sh — smqd on a really full filesystem (a 16 MiB tmpfs):
# sends fail with a clear 500 InternalError, nothing acknowledged is lost
# (also across a kill -9), receives and deletes keep working, and sends are
# accepted again once space is back.  Needs root (mount -t tmpfs), as the
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

# Fills the disk: sends 60 KB messages until one is refused.
t_fill() {
    local i refused=0
    mns_request PUT /queues/full '<Queue><MaximumMessageSize>65536</MaximumMessageSize></Queue>'
    assert_status "queue on the small filesystem" 201
    for i in $(seq 1 1000); do
        mns_request POST /queues/full/messages "<Message><MessageBody>$i-$BODY</MessageBody></Message>"
        if [ "$RESP_STATUS" = 201 ]; then
            ACKED+=("$i")
        else
            refused=1
            break
        fi
    done
    assert_eq "a send is refused once the disk is full" 1 "$refused"
    assert_error "the refusal is a 500 InternalError" 500 InternalError
    assert_match "whose message says the storage is full" "storage is full" "$RESP_BODY"
    assert_range "several sends were acknowledged first" 5 1000 "${#ACKED[@]}"
    mns_request POST /queues/full/messages "<Message><MessageBody>again</MessageBody></Message>"
    assert_error "further sends are refused at once" 500 InternalError
    assert_match "the server says so in its log" "storage is full" "$(cat "$SMQD_LOG")"
}

# Every acknowledged send survives a crash while the disk is full.
t_nothing_lost() {
    smqd_restart_same_data kill9 || return
    mns_request GET /queues/full
    assert_xml "every acknowledged message is still there" ActiveMessages "${#ACKED[@]}"
}

# Receive and delete keep working on the full disk, and free pages for sends.
# A receive or delete may be refused once, by the run in which the disk
# fills (or, after a restart on a full disk, the run that finds it full):
# that run frees the reserve, and every later one must go through.
t_drain_and_resume() {
    local got=0 refused=0 n i batch handles
    while [ "$refused" -le 3 ]; do
        mns_request GET '/queues/full/messages?numOfMessages=16'
        [ "$RESP_STATUS" = 404 ] && break
        if [ "$RESP_STATUS" != 200 ]; then refused=$((refused + 1)); continue; fi
        batch=$RESP_BODY
        n=$(xml_count ReceiptHandle)
        handles=""
        for i in $(seq 1 "$n"); do
            handles+="<ReceiptHandle>$(xml_get ReceiptHandle "$i" "$batch")</ReceiptHandle>"
        done
        mns_request DELETE /queues/full/messages "<ReceiptHandles>$handles</ReceiptHandles>"
        if [ "$RESP_STATUS" != 204 ]; then        # refused: the handles stay valid, retry once
            refused=$((refused + 1))
            mns_request DELETE /queues/full/messages "<ReceiptHandles>$handles</ReceiptHandles>"
        fi
        [ "$RESP_STATUS" = 204 ] && got=$((got + n))
    done
    assert_eq "every acknowledged message was received and deleted" "${#ACKED[@]}" "$got"
    assert_range "at most one receive or delete was refused" 0 1 "$refused"
    wait_for "sends are accepted again once space is back (after the cool-down)" 12000 send_ok
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
    run_test t_fill
    run_test t_nothing_lost
    run_test t_drain_and_resume
    smqd_stop
fi
finish
