#!/usr/bin/env bash
# faulty-smqd.sh — stands in for smqd and damages the data between restarts the way a broken
# recovery would, to show that the crash loop notices (a checker that never fails proves nothing).
#
#   SMQD_REAL_BIN=build-cl/smqd SMQD_BIN=tests/crashloop/faulty-smqd.sh \
#     node tests/crashloop/run.js --cycles 10 --seed 5      # must exit 1
#
# Before the 4th start it deletes one message (the 101st oldest of the first queue): expect
# send-lost at the next kill and never-delivered or not-drained at the end.  Before the 6th it
# stores a copy of a message under a new sequence number: expect duplicated-on-disk, then, once
# the copy is delivered, id-changed with some of delete-came-back, receive-rolled-back and
# deleted-twice.  Before the 8th it writes a fake AddressSanitizer report to the log: expect
# sanitizer.  Before the 5th it empties the subscribed queue cl-t-simple (topic.js) behind the
# fan-out's back: expect publish-lost or copy-lost at the next kill, publish-never-delivered at the
# end, for the publishes whose copies were there.  Before the 7th it deletes the notifications
# pending for the HTTP subscription h-simple (as if a push had been recorded delivered that the
# endpoint never answered with a 2xx): expect publish-lost for h-simple at the next kill and
# publish-never-delivered at the end.
set -euo pipefail
real=${SMQD_REAL_BIN:?set SMQD_REAL_BIN to the real smqd binary}
conf=$2                                   # run.js starts "smqd -c DIR/smqd.conf"
dir=$(dirname "$conf")
db=$dir/smqd.db
n=$(( $(cat "$dir/starts" 2>/dev/null || echo 0) + 1 ))
echo "$n" > "$dir/starts"
case $n in
  4) sqlite3 "$db" "CREATE TEMP TABLE v AS SELECT seq FROM msg WHERE queue_id = 1 ORDER BY seq LIMIT 1 OFFSET 100;
                    DELETE FROM msg_body WHERE seq IN (SELECT seq FROM v);
                    DELETE FROM msg WHERE seq IN (SELECT seq FROM v);" ;;
  5) sqlite3 "$db" "CREATE TEMP TABLE v AS SELECT seq FROM msg WHERE queue_id = (SELECT id FROM queue WHERE name = 'cl-t-simple');
                    DELETE FROM msg_body WHERE seq IN (SELECT seq FROM v);
                    DELETE FROM msg WHERE seq IN (SELECT seq FROM v);" ;;
  6) sqlite3 "$db" "CREATE TEMP TABLE v AS SELECT seq FROM msg WHERE queue_id = 1 ORDER BY seq DESC LIMIT 1 OFFSET 100;
                    INSERT INTO msg SELECT queue_id, seq + 1000000, priority, enqueue_ms, first_dequeue_ms,
                      visible_ms, expire_ms, dequeue_count, handle_gen, src_queue_id FROM msg WHERE seq IN (SELECT seq FROM v);
                    INSERT INTO msg_body SELECT seq + 1000000, body, md5, ext FROM msg_body WHERE seq IN (SELECT seq FROM v);" ;;
  7) sqlite3 "$db" "DELETE FROM notif WHERE sub_id = (SELECT id FROM subscription WHERE name = 'h-simple');" ;;
  8) echo "==1==ERROR: AddressSanitizer: heap-use-after-free (injected by faulty-smqd.sh)" >&2 ;;
esac
exec "$real" "$@"                         # same PID: run.js kills the real server by it
