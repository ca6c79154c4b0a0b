#!/usr/bin/env bash
# test_smqctl.sh — smqctl against a running smqd: list, stats, peek, set, purge, redrive, the
# probes, the token, exit codes, and the database commands: backup while messages are being sent
# (the copy passes integrity_check and an smqd started on it serves the messages) and check.
#
# Run: SMQD_BIN=build/smqd SMQCTL_BIN=build/smqctl bash tests/integration/test_smqctl.sh

set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"

require_tools curl openssl xmllint md5sum node sqlite3
require_bin
if [ -z "${SMQCTL_BIN:-}" ] || [ ! -x "$SMQCTL_BIN" ]; then
    echo "SMQCTL_BIN must point to the smqctl binary" >&2
    echo "0 passed, 1 failed"
    exit 1
fi

# ctl ARGS... — runs smqctl against the current server; sets CTL_OUT, CTL_ERR, CTL_RC.
ctl() {
    "$SMQCTL_BIN" -a "http://$SMQD_ADMIN" "$@" >"$SUITE_TMP/ctl.out" 2>"$SUITE_TMP/ctl.err" </dev/null
    CTL_RC=$?
    CTL_OUT=$(cat "$SUITE_TMP/ctl.out")
    CTL_ERR=$(cat "$SUITE_TMP/ctl.err")
}

# field KEY — the value of a "key: value" line of CTL_OUT.
field() {
    printf '%s\n' "$CTL_OUT" | sed -n "s/^ *$1: //p" | head -n 1
}

assert_rc() {
    if [ "$CTL_RC" = "$2" ]; then ok "$1"; else not_ok "$1" "exit $CTL_RC, expected $2"$'\n'"stdout: $CTL_OUT"$'\n'"stderr: $CTL_ERR"; fi
}

active_of() {
    mns_request GET "/queues/$1"
    xml_get ActiveMessages
}

# active_are Q N [Q N]... — for wait_for: every queue has exactly N active messages now.
active_are() {
    while [ $# -ge 2 ]; do
        [ "$(active_of "$1")" = "$2" ] || return 1
        shift 2
    done
}

t_usage_and_errors() {
    "$SMQCTL_BIN" >/dev/null 2>&1
    assert_eq "no command: usage, exit 1" 1 $?
    "$SMQCTL_BIN" frobnicate >/dev/null 2>&1
    assert_eq "unknown command: exit 1" 1 $?
    "$SMQCTL_BIN" -h | grep -q 'exit codes'
    assert_eq "-h prints the usage with the exit codes" 0 $?
    "$SMQCTL_BIN" -a http://127.0.0.1:1 list >/dev/null 2>"$SUITE_TMP/unreach.err"
    assert_eq "an unreachable admin listener: exit 2" 2 $?
    assert_match "and it says where it tried" '127\.0\.0\.1:1' "$(cat "$SUITE_TMP/unreach.err")"
    "$SMQCTL_BIN" check >/dev/null 2>&1
    assert_eq "check without --db or -c: exit 1" 1 $?
}

t_read_commands() {
    create_queue sq
    create_queue sq-empty
    send_msg sq hello
    send_msg sq $'two\nlines'
    ctl health
    assert_eq "health: exit 0, ok" "0 ok" "$CTL_RC $CTL_OUT"
    ctl ready
    assert_eq "ready: exit 0, ready" "0 ready" "$CTL_RC $CTL_OUT"
    ctl list
    assert_rc "list: exit 0" 0
    assert_match "list has a header" '^NAME +ACTIVE +INACTIVE +DELAYED +WAITERS +OLDEST_S +DLQ' "$CTL_OUT"
    assert_match "list has a row per queue with its counts" '^sq +2 +0 +0 +0 +[0-9.]+ +-$' "$CTL_OUT"
    assert_match "and the empty one" '^sq-empty +0 +0 +0 +0 ' "$CTL_OUT"
    ctl stats sq
    assert_rc "stats: exit 0" 0
    assert_eq "stats: name" sq "$(field name)"
    assert_eq "stats: active" 2 "$(field active)"
    assert_eq "stats: attributes are listed" 30 "$(field VisibilityTimeout)"
    ctl --json stats sq
    assert_eq "stats --json prints the server's JSON" sq \
        "$(printf '%s' "$CTL_OUT" | node -e 'console.log(JSON.parse(require("fs").readFileSync(0,"utf8")).name)')"
    ctl stats nosuch
    assert_rc "stats of a missing queue: exit 2" 2
    assert_match "with the server's error" 'QueueNotExist' "$CTL_ERR"
    ctl stats bad_name
    assert_rc "a bad name: exit 2" 2
    assert_match "the server's InvalidQueueName" 'InvalidQueueName' "$CTL_ERR"
    ctl peek sq 1
    assert_rc "peek: exit 0" 0
    assert_match "peek shows the body" '^body: hello$' "$(printf '%s\n' "$CTL_OUT" | grep '^body')"
    ctl peek sq
    assert_match "a newline in a body is shown escaped" '^body: two\\nlines$' \
        "$(printf '%s\n' "$CTL_OUT" | grep '^body' | tail -n 1)"
    ctl peek sq-empty
    assert_eq "peek of an empty queue" "0 (no visible messages)" "$CTL_RC $CTL_OUT"
    ctl peek sq 17
    assert_rc "peek 17: the server refuses, exit 2" 2
    ctl peek sq x
    assert_rc "peek x: usage, exit 1" 1
    assert_eq "peek took nothing" 2 "$(active_of sq)"
}

# smqctl topics [TOPIC] against topics made through the MNS API, and the admin API's
# listing and gauges behind it (docs/admin-api.md).
t_topics() {
    local ns='http://mns.aliyuncs.com/doc/v1/' i
    mns_request PUT /topics/ctl-alerts
    mns_request PUT /topics/ctl-billing "<Topic xmlns=\"$ns\"><MaximumMessageSize>2048</MaximumMessageSize></Topic>"
    for i in pager audit; do
        mns_request PUT "/topics/ctl-alerts/subscriptions/$i" \
            "<Subscription xmlns=\"$ns\"><Endpoint>http://127.0.0.1:9/$i</Endpoint><FilterTag>urgent</FilterTag></Subscription>"
        assert_status "Subscribe $i" 201
    done
    ctl topics
    assert_rc "topics: exit 0" 0
    assert_match "topics has a header" '^NAME +SUBSCRIPTIONS +PENDING +MAX_MSG_SIZE +LOGGING +CREATED' "$CTL_OUT"
    assert_match "a row per topic with its subscription count" '^ctl-alerts +2 +0 +65536 +false ' "$CTL_OUT"
    assert_match "and its attributes" '^ctl-billing +0 +0 +2048 +false ' "$CTL_OUT"
    ctl topics ctl-alerts
    assert_rc "topics TOPIC: exit 0" 0
    assert_match "subscriptions have a header" '^NAME +FILTER_TAG +STRATEGY +FORMAT +PENDING +RETRYING +ENDPOINT$' "$CTL_OUT"
    assert_match "a row per subscription" '^audit +urgent +BACKOFF_RETRY +XML +0 +0 +http://127\.0\.0\.1:9/audit$' "$CTL_OUT"
    ctl --json topics
    assert_eq "topics --json is one document with every topic" 2 \
        "$(printf '%s' "$CTL_OUT" | node -e 'console.log(JSON.parse(require("fs").readFileSync(0,"utf8")).topics.length)')"
    ctl topics ctl-nosuch
    assert_rc "topics of a missing topic: exit 2" 2
    assert_match "with the server's error" 'TopicNotExist' "$CTL_ERR"
    assert_match "/metrics counts the topics" '^smqd_topics 2$' "$(curl -s --max-time 5 "http://$SMQD_ADMIN/metrics")"
    assert_match "and the subscriptions" '^smqd_subscriptions 2$' "$(curl -s --max-time 5 "http://$SMQD_ADMIN/metrics")"
    assert_match "a row per topic in the topic families" '^smqd_topic_notifications_pending[{]topic="ctl-alerts"[}] 0$' \
        "$(curl -s --max-time 5 "http://$SMQD_ADMIN/metrics")"
}

t_set() {
    create_queue setq
    ctl set setq VisibilityTimeout=45 LoggingEnabled=true
    assert_rc "set: exit 0" 0
    assert_eq "set prints the queue after the change" 45 "$(field VisibilityTimeout)"
    mns_request GET /queues/setq
    assert_xml "the MNS API sees it" VisibilityTimeout 45
    ctl set setq VisibilityTimeout=0
    assert_rc "an out-of-range value: exit 2" 2
    assert_match "with the server's reason" 'VisibilityTimeout' "$CTL_ERR"
    ctl set setq VisibilityTimeout
    assert_rc "no '=': usage, exit 1" 1
    ctl set setq 'Bogus=a&VisibilityTimeout=5'
    assert_rc "'&' in a value is encoded, not a second parameter: refused" 2
    assert_match "as an unknown attribute" 'Bogus' "$CTL_ERR"
}

t_purge() {
    create_queue pq
    send_msg pq a
    send_msg pq b
    send_msg pq c
    ctl purge pq
    assert_rc "purge without --yes and without a terminal: exit 1" 1
    assert_match "it says why" 'refusing to purge without --yes' "$CTL_ERR"
    assert_eq "nothing was purged" 3 "$(active_of pq)"
    ctl purge pq --yes
    assert_rc "purge --yes: exit 0" 0
    assert_eq "it reports the count" 'purged 3 message(s) from pq' "$CTL_OUT"
    assert_eq "the queue is empty" 0 "$(active_of pq)"
    ctl purge nosuch --yes
    assert_rc "purge of a missing queue: exit 2" 2
}

# Dead-letter a message (max receive 1, visibility 1 s), purge/redrive the DLQ.
t_dlq_redrive() {
    create_queue rq VisibilityTimeout 1 LoggingEnabled True
    create_queue rq-dlq LoggingEnabled True
    ctl set rq DlqTargetQueue=rq-dlq DlqMaxReceiveCount=1
    assert_eq "set a DLQ policy" "0 rq-dlq" "$CTL_RC $(field DlqTargetQueue)"
    send_msg rq poison
    mns_request GET '/queues/rq/messages?waitseconds=1'
    assert_status "first receive" 200
    # VisibilityTimeout 1 s: the poll wakes when the message is due again, however late a
    # loaded machine runs the timer (a fixed sleep plus a 1 s poll assumed it had run).
    mns_request GET '/queues/rq/messages?waitseconds=5'
    wait_for "the second delivery goes to the DLQ instead" 10000 \
        active_are rq-dlq 1
    ctl list
    assert_match "list shows the DLQ target" '^rq +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9.]+ +rq-dlq$' "$CTL_OUT"
    ctl redrive rq-dlq --rate 1000
    assert_rc "redrive: exit 0" 0
    assert_match "it reports what it scheduled" 'redrive of rq-dlq: 1 message\(s\) scheduled' "$CTL_OUT"
    wait_for "the message is back in rq and gone from the DLQ" 5000 \
        active_are rq 1 rq-dlq 0
    # Operation logs of the two moves: each queue says where the message went or came from,
    # with the receive count it had before the move.
    assert_match "dead-letter logged in the source" 'OPLOG queue=rq event=dead_letter message_id=[0-9A-F]{32} dequeue_count=1 to=rq-dlq ' "$(cat "$SMQD_LOG")"
    assert_match "and in the DLQ" 'OPLOG queue=rq-dlq event=dead_letter message_id=[0-9A-F]{32} dequeue_count=1 from=rq ' "$(cat "$SMQD_LOG")"
    assert_match "redrive logged in the DLQ" 'OPLOG queue=rq-dlq event=redrive message_id=[0-9A-F]{32} dequeue_count=0 to=rq request_id=-' "$(cat "$SMQD_LOG")"
    assert_match "and in the source" 'OPLOG queue=rq event=redrive message_id=[0-9A-F]{32} dequeue_count=0 from=rq-dlq request_id=-' "$(cat "$SMQD_LOG")"
    ctl redrive rq-dlq --rate 0
    assert_rc "rate 0: the server refuses, exit 2" 2
    ctl redrive rq-dlq --rate x
    assert_rc "rate x: usage, exit 1" 1
    send_msg rq-dlq d1
    send_msg rq d2
    ctl purge rq --dlq --yes
    assert_eq "purge --dlq empties only the DLQ" 'purged 1 message(s) from the dead-letter queue of rq' "$CTL_OUT"
}

t_backup_during_traffic() {
    local dest="$SUITE_TMP/backup.db" stop="$SUITE_TMP/sender.stop" acked="$SUITE_TMP/acked"
    local sent_first=20 before after dir copy_active i
    create_queue bq
    for i in $(seq 1 "$sent_first"); do send_msg bq "before-$i" >/dev/null; done
    : >"$acked"
    (
        i=0
        while [ ! -f "$stop" ] && [ "$i" -lt 500 ]; do
            i=$((i + 1))
            mns_request POST /queues/bq/messages "$(message_body "during-$i")"
            [ "$RESP_STATUS" = 201 ] && echo "$i" >>"$acked"
        done
    ) </dev/null >/dev/null 2>&1 &
    local sender=$!
    wait_for "the sender is running" 5000 test -s "$acked"
    before=$(( sent_first + $(wc -l <"$acked") ))    # acknowledged before the backup began
    "$SMQCTL_BIN" -c "$SMQD_DIR/smqd.conf" backup "$dest" >"$SUITE_TMP/backup.out" 2>&1
    assert_eq "backup while sending: exit 0" 0 $?
    after=$(( sent_first + $(wc -l <"$acked") ))
    touch "$stop"
    wait "$sender" 2>/dev/null
    assert_match "it reports the integrity check" 'integrity_check ok' "$(cat "$SUITE_TMP/backup.out")"
    assert_eq "no temporary file is left" 0 "$(ls "$SUITE_TMP" | grep -c 'backup.db.tmp')"
    assert_eq "the copy passes PRAGMA integrity_check" ok "$(sqlite3 "$dest" 'PRAGMA integrity_check')"
    new_server_dir
    dir=$NEW_DIR
    cp "$dest" "$dir/smqd.db"
    local main_pid=$SMQD_PID main_addr=$SMQD_ADDR main_admin=$SMQD_ADMIN main_dir=$SMQD_DIR
    local main_log=$SMQD_LOG main_wd=$SMQD_WATCHDOG_PID
    if smqd_start "$dir"; then
        copy_active=$(active_of bq)
        # The sender has one request in flight at any moment: it can be committed (and so in
        # the copy) before its 201 is written to $acked, hence at most after + 1.
        assert_range "the copy holds every message acknowledged before the backup, at most those acknowledged by its end (+1 in flight)" \
            "$before" "$((after + 1))" "$copy_active"
        mns_request GET '/queues/bq/messages?waitseconds=1'
        assert_status "an smqd started on the copy serves the messages" 200
        assert_xml "the oldest first" MessageBody before-1
        smqd_stop
    fi
    SMQD_PID=$main_pid SMQD_ADDR=$main_addr SMQD_ADMIN=$main_admin SMQD_DIR=$main_dir
    SMQD_LOG=$main_log SMQD_WATCHDOG_PID=$main_wd
    "$SMQCTL_BIN" backup "/nonexistent-dir/x.db" --db "$SMQD_DIR/smqd.db" >/dev/null 2>"$SUITE_TMP/b.err"
    assert_eq "a backup into a missing directory: exit 2" 2 $?
    # A backup onto the live database (or its WAL) would leave smqd writing to a deleted file.
    local ino_before
    ino_before=$(stat -c %i "$SMQD_DIR/smqd.db")
    "$SMQCTL_BIN" backup "$SMQD_DIR/smqd.db" --db "$SMQD_DIR/smqd.db" >/dev/null 2>"$SUITE_TMP/b.err"
    assert_eq "a backup onto the live database is refused: exit 2" 2 $?
    assert_match "and says why" 'a backup must go elsewhere' "$(cat "$SUITE_TMP/b.err")"
    assert_eq "the live database is untouched" "$ino_before" "$(stat -c %i "$SMQD_DIR/smqd.db")"
    "$SMQCTL_BIN" backup "$SMQD_DIR/smqd.db-wal" --db "$SMQD_DIR/smqd.db" >/dev/null 2>&1
    assert_eq "a backup onto its WAL is refused: exit 2" 2 $?
    : >"$SUITE_TMP/stale.db-wal"
    "$SMQCTL_BIN" backup "$SUITE_TMP/stale.db" --db "$SMQD_DIR/smqd.db" >/dev/null 2>"$SUITE_TMP/b.err"
    assert_eq "a stale DEST-wal is refused: exit 2" 2 $?
    assert_match "naming it" 'stale.db-wal exists' "$(cat "$SUITE_TMP/b.err")"
}

t_check() {
    local bad="$SUITE_TMP/bad.db"
    "$SMQCTL_BIN" check --db "$SMQD_DIR/smqd.db" >"$SUITE_TMP/check.out" 2>&1
    assert_eq "check of the live database: exit 0" 0 $?
    assert_eq "it prints ok" ok "$(cat "$SUITE_TMP/check.out")"
    "$SMQCTL_BIN" -c "$SMQD_DIR/smqd.conf" check >/dev/null 2>&1
    assert_eq "check with -c finds the database in the config" 0 $?
    cp "$SUITE_TMP/backup.db" "$bad"
    # Garbage over the second page (a b-tree page): the header stays readable.
    dd if=/dev/urandom of="$bad" bs=4096 seek=1 count=1 conv=notrunc status=none
    "$SMQCTL_BIN" check --db "$bad" >"$SUITE_TMP/check.out" 2>&1
    assert_eq "check of a damaged database: exit 2" 2 $?
    assert_ne "it prints the problems" ok "$(cat "$SUITE_TMP/check.out")"
    "$SMQCTL_BIN" check --db "$SUITE_TMP/nonexistent.db" >/dev/null 2>&1
    assert_eq "check of a missing file: exit 2" 2 $?
}

# -c finds the admin listener in the config; a wildcard bind is reached over loopback.
t_config_address() {
    local conf="$SUITE_TMP/ctl.conf" port=${SMQD_ADMIN##*:}
    # write_config ends with "[admin]" / "listen = 127.0.0.1:0".  A wildcard admin address
    # needs a token in the config (the server, with none, ignores the one smqctl sends).
    sed "\$ s/^listen = .*/listen = 0.0.0.0:$port\ntoken = ctl-test-token/" "$SMQD_DIR/smqd.conf" >"$conf"
    "$SMQCTL_BIN" -c "$conf" ready >"$SUITE_TMP/ca.out" 2>&1
    assert_eq "-c: the admin address comes from [admin] listen" "0 ready" "$? $(cat "$SUITE_TMP/ca.out")"
    sed -i "s/^listen = 0.0.0.0:.*/listen = off/" "$conf"
    "$SMQCTL_BIN" -c "$conf" list >/dev/null 2>"$SUITE_TMP/ca.err"
    assert_eq "-c with listen = off: exit 1" 1 $?
    assert_match "and says so" 'admin listener is off' "$(cat "$SUITE_TMP/ca.err")"
}

t_token() {
    local dir
    new_server_dir
    dir=$NEW_DIR
    printf 'token = ctl-t0ken\n' >>"$dir/smqd.conf"
    smqd_start "$dir" || return
    ctl list
    assert_rc "without the token: exit 2" 2
    assert_match "Unauthorized" 'Unauthorized' "$CTL_ERR"
    ctl -T ctl-t0ken list
    assert_rc "-T TOKEN: exit 0" 0
    SMQD_ADMIN_TOKEN=ctl-t0ken ctl list
    assert_rc "\$SMQD_ADMIN_TOKEN: exit 0" 0
    ctl -c "$dir/smqd.conf" list
    assert_rc "the token from -c: exit 0" 0
    ctl health
    assert_rc "health needs no token" 0
    smqd_stop
}

# The stopped server's SQLite database moves into an empty PostgreSQL (tests/pg/pg-server.sh,
# stopped by PID here and bounded by its own watchdog): every queue and message arrives with
# the receipt-handle secret, and a second copy into the now-used database is refused.
t_migrate_into_postgresql() {
    # Not under SUITE_TMP: the server runs as the postgres user, which cannot enter it.
    local db="$SMQD_DIR/smqd.db" pg dsn msgs queues
    pg=$(mktemp -d "${TMPDIR:-/tmp}/smqd-it-pg.XXXXXX")
    msgs=$(sqlite3 "$db" 'SELECT count(*) FROM msg')
    queues=$(sqlite3 "$db" 'SELECT count(*) FROM queue')
    assert_range "the stopped server left messages to copy" 1 100000 "$msgs"
    tests_pg_start "$pg" || return
    dsn=$(cat "$pg/dsn")
    "$SMQCTL_BIN" migrate --db "$db" --dsn "$dsn" >"$SUITE_TMP/mig.out" 2>"$SUITE_TMP/mig.err"
    assert_eq "smqctl migrate exits 0" 0 "$?"
    assert_match "and says what it copied" "copied $queues queue\\(s\\) and $msgs message\\(s\\)" \
        "$(cat "$SUITE_TMP/mig.out")"
    assert_eq "PostgreSQL holds every message" "$msgs" "$(psql "$dsn" -tAc 'SELECT count(*) FROM smq_msg')"
    assert_eq "and every body" "$msgs" "$(psql "$dsn" -tAc 'SELECT count(*) FROM smq_body')"
    assert_eq "and every queue" "$queues" "$(psql "$dsn" -tAc 'SELECT count(*) FROM smq_queue')"
    assert_eq "and every topic" "$(sqlite3 "$db" 'SELECT count(*) FROM topic')" \
        "$(psql "$dsn" -tAc 'SELECT count(*) FROM smq_topic')"
    assert_eq "and every subscription" 2 "$(psql "$dsn" -tAc 'SELECT count(*) FROM smq_subscription')"
    assert_eq "the receipt-handle secret is the same, so handles stay valid" \
        "$(sqlite3 "$db" "SELECT lower(hex(value)) FROM meta WHERE key = 'handle_keys'")" \
        "$(psql "$dsn" -tAc "SELECT encode(value, 'hex') FROM smq_meta WHERE key = 'handle_keys'")"
    assert_match "the push signing key went too, and it says so" "and the push signing key" \
        "$(cat "$SUITE_TMP/mig.out")"
    assert_eq "the same signing certificate (docs/protocol.md §13.11)" \
        "$(sqlite3 "$db" "SELECT lower(hex(cert_pem)) FROM signing_key")" \
        "$(psql "$dsn" -tAc "SELECT encode(convert_to(cert_pem, 'UTF8'), 'hex') FROM smq_signing_key")"
    "$SMQCTL_BIN" migrate --db "$db" --dsn "$dsn" >/dev/null 2>"$SUITE_TMP/mig.err"
    assert_eq "a second copy into the used database is refused (exit 2)" 2 "$?"
    assert_match "naming why" "already holds smqd data" "$(cat "$SUITE_TMP/mig.err")"
    "$SMQCTL_BIN" migrate --db "$db" >/dev/null 2>&1
    assert_eq "migrate without --dsn is a usage error" 1 "$?"
    t_serve_the_copy "$db" "$dsn"
    bash "$HERE/../pg/pg-server.sh" stop "$pg"
    rm -rf "$pg"
}

# smqd serves the copy from PostgreSQL with the same counts, and smqctl's file commands say
# which PostgreSQL tools take their place.
t_serve_the_copy() {
    local db=$1 dsn=$2 dir q n i ready="" attrs
    q=$(sqlite3 "$db" 'SELECT name FROM queue q WHERE EXISTS (SELECT 1 FROM msg m WHERE m.queue_id = q.id) LIMIT 1')
    n=$(sqlite3 "$db" "SELECT count(*) FROM msg m JOIN queue q ON q.id = m.queue_id WHERE q.name = '$q'")
    dir=$(mktemp -d "${TMPDIR:-/tmp}/smqd-it.XXXXXX")
    SERVER_DIRS+=("$dir")
    sed -e "s|^path = .*|backend = postgresql\ndsn = $dsn|" -e '/^sync = /d' "$SMQD_DIR/smqd.conf" \
        >"$dir/smqd.conf"
    printf '[cluster]\nnode_id = it-a\n' >>"$dir/smqd.conf"
    chmod 600 "$dir/smqd.conf"
    "$SMQCTL_BIN" -c "$dir/smqd.conf" backup "$dir/copy.db" >/dev/null 2>"$SUITE_TMP/pgb.err"
    assert_eq "backup of a PostgreSQL node is refused (exit 1)" 1 "$?"
    assert_match "pointing at pg_dump" 'pg_dump' "$(cat "$SUITE_TMP/pgb.err")"
    "$SMQCTL_BIN" -c "$dir/smqd.conf" check >/dev/null 2>"$SUITE_TMP/pgc.err"
    assert_match "check points at pg_amcheck" 'pg_amcheck' "$(cat "$SUITE_TMP/pgc.err")"
    smqd_start "$dir" || return
    for i in $(seq 1 100); do
        ready=$(curl -s --max-time 2 "http://$SMQD_ADMIN/ready")
        [ "$ready" = "ready" ] && break
        sleep 0.1
    done
    assert_eq "the node on PostgreSQL takes the lease and is ready" ready "$ready"
    mns_request GET "/queues/$q"
    assert_status "GetQueueAttributes of the copied queue" 200
    attrs=$(( $(xml_get ActiveMessages) + $(xml_get InactiveMessages) + $(xml_get DelayMessages) ))
    assert_eq "its messages are all there" "$n" "$attrs"
    mns_request GET /topics/ctl-alerts/subscriptions/audit
    assert_status "a copied subscription is served from PostgreSQL" 200
    assert_xml "with its attributes" FilterTag urgent
    attrs=$(curl -s --max-time 5 "http://$SMQD_ADMIN/metrics")
    assert_match "/metrics says this node is the active one" '^smqd_cluster_active 1$' "$attrs"
    assert_match "at lease epoch 1" '^smqd_lease_epoch 1$' "$attrs"
    assert_match "after one activation" '^smqd_activations_total 1$' "$attrs"
    assert_eq "it serves the signing certificate the SQLite node made" \
        "$(sqlite3 "$db" "SELECT cert_pem FROM signing_key")" \
        "$(curl -s --max-time 5 "http://$SMQD_ADDR/smqd/signing-cert.pem")"
    smqd_stop
}

tests_pg_start() {
    if ! bash "$HERE/../pg/pg-server.sh" start "$1" 120 >/dev/null 2>"$SUITE_TMP/pg.err"; then
        not_ok "start a PostgreSQL for the copy" "$(cat "$SUITE_TMP/pg.err")"
        return 1
    fi
}

run_test t_usage_and_errors
if smqd_start; then
    run_test t_read_commands
    run_test t_topics
    run_test t_set
    run_test t_purge
    run_test t_dlq_redrive
    run_test t_backup_during_traffic
    run_test t_check
    run_test t_config_address
    smqd_stop
    run_test t_migrate_into_postgresql
fi
run_test t_token
finish
