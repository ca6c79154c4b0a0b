/*
 * test_eventlog.c — unit tests for the event log (src/engine/eventlog.c): events
 * kept only for queues with logging on, written at flush only when the
 * run committed (except expiries, written either way), in order, with the
 * MessageId, dequeue count and request id; a move written for each side
 * that logs with to= / from=; a purge with its count; a topic's publish and
 * notification outcomes (deliver, retry, dead_letter, drop) only for topics
 * with logging on, dropped with a lost run; the per-run cap and
 * the count of dropped lines.  The log goes to a temporary file
 * (log_open) that each test reads back.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "eventlog.h"
#include "queue.h"
#include "smqd/handle.h"
#include "smqd/log.h"
#include "smqd/mns.h"
#include "topic.h"

#define CAP 65536                    /* events one run holds (eventlog.c) */
#define ID(seqhex) "0102030405060708" seqhex

struct fixture {
    char dir[64];
    char path[128];
    struct handle_keys keys;
    struct eventlog log;
    struct smq_queue *loud, *quiet, *dlq;
    struct smq_msg m;
};

static struct smq_queue *make_queue(int64_t id, const char *name, int logging)
{
    struct smq_queue_attrs a;
    struct smq_queue *q;

    mns_default_attrs(&a);
    a.logging = logging;
    q = queue_new(id, name, &a, 0, 0);
    assert_non_null(q);
    return q;
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);

    if (f == NULL)
        return -1;
    snprintf(f->dir, sizeof f->dir, "/tmp/smqd-test-eventlog-XXXXXX");
    if (mkdtemp(f->dir) == NULL)
        return -1;
    snprintf(f->path, sizeof f->path, "%s/smqd.log", f->dir);
    if (log_open(f->path) != 0)
        return -1;
    for (unsigned i = 0; i < 8; i++)
        f->keys.id_prefix[i] = (unsigned char)(i + 1);
    eventlog_init(&f->log, &f->keys);
    f->loud = make_queue(1, "loud", 1);
    f->quiet = make_queue(2, "quiet", 0);
    f->dlq = make_queue(3, "loud-dlq", 1);
    f->m.seq = 0x2A;
    f->m.dequeue_count = 3;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    log_close();
    eventlog_free(&f->log);
    queue_free(f->loud);
    queue_free(f->quiet);
    queue_free(f->dlq);
    unlink(f->path);
    rmdir(f->dir);
    free(f);
    return 0;
}

/* The log file's lines, each without its time stamp ("OPLOG queue=..."
 * or "WARN ..."); the caller frees lines[0] and lines. */
static char **read_lines(const struct fixture *f, size_t *n_out)
{
    FILE *fp = fopen(f->path, "r");
    char *text, **lines;
    long size;
    size_t n = 0;

    assert_non_null(fp);
    assert_int_equal(fseek(fp, 0, SEEK_END), 0);
    size = ftell(fp);
    rewind(fp);
    text = malloc((size_t)size + 1);
    assert_non_null(text);
    assert_int_equal(fread(text, 1, (size_t)size, fp), (size_t)size);
    text[size] = '\0';
    fclose(fp);
    for (long i = 0; i < size; i++)
        n += text[i] == '\n';
    lines = calloc(n + 1, sizeof *lines);
    assert_non_null(lines);
    n = 0;
    for (char *p = text, *nl; (nl = strchr(p, '\n')) != NULL; p = nl + 1) {
        char *sp = strchr(p, ' ');      /* after the time stamp */
        *nl = '\0';
        assert_non_null(sp);
        lines[n++] = sp + 1;
    }
    lines[n] = text;                    /* kept for freeing */
    *n_out = n;
    return lines;
}

static void free_lines(char **lines, size_t n)
{
    free(lines[n]);
    free(lines);
}

/* The log holds exactly the given lines (time stamps aside), in order. */
static void assert_log(const struct fixture *f, const char *const *want, size_t n_want)
{
    size_t n;
    char **lines = read_lines(f, &n);

    assert_int_equal(n, n_want);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(lines[i], want[i]);
    free_lines(lines, n);
}

/* ---- recording and flushing ------------------------------------------------ */

static void test_eventlog_only_logging_queues(void **state)
{
    struct fixture *f = *state;
    static const char *const want[] = {
        "OPLOG queue=loud event=send message_id=" ID("000000000000002A")
        " dequeue_count=3 request_id=R1",
    };

    eventlog_record(&f->log, f->quiet, EVENTLOG_SEND, &f->m, "R0");
    assert_int_equal(f->log.n, 0);
    eventlog_record(&f->log, f->loud, EVENTLOG_SEND, &f->m, "R1");
    assert_int_equal(f->log.n, 1);
    eventlog_record(&f->log, f->quiet, EVENTLOG_DELETE, &f->m, "R2");
    assert_int_equal(f->log.n, 1);
    eventlog_flush(&f->log, true);
    assert_int_equal(f->log.n, 0);
    assert_log(f, want, 1);
}

/* Every kind by its name, in recording order, each with the message's
 * dequeue count at the time it was recorded. */
static void test_eventlog_committed_writes_all_in_order(void **state)
{
    struct fixture *f = *state;
    static const char *const want[] = {
        "OPLOG queue=loud event=send message_id=" ID("000000000000002A")
        " dequeue_count=0 request_id=A",
        "OPLOG queue=loud event=receive message_id=" ID("000000000000002A")
        " dequeue_count=1 request_id=B",
        "OPLOG queue=loud event=change_visibility message_id=" ID("000000000000002A")
        " dequeue_count=1 request_id=C",
        "OPLOG queue=loud event=delete message_id=" ID("FFFFFFFFFFFFFFFF")
        " dequeue_count=1 request_id=D",
        "OPLOG queue=loud event=expire message_id=" ID("0000000000000007")
        " dequeue_count=9 request_id=-",
    };
    struct smq_msg other = {.seq = 7, .dequeue_count = 9};

    f->m.dequeue_count = 0;
    eventlog_record(&f->log, f->loud, EVENTLOG_SEND, &f->m, "A");
    f->m.dequeue_count = 1;
    eventlog_record(&f->log, f->loud, EVENTLOG_RECEIVE, &f->m, "B");
    eventlog_record(&f->log, f->loud, EVENTLOG_CHANGE_VISIBILITY, &f->m, "C");
    f->m.seq = UINT64_MAX;
    eventlog_record(&f->log, f->loud, EVENTLOG_DELETE, &f->m, "D");
    eventlog_record(&f->log, f->loud, EVENTLOG_EXPIRE, &other, NULL);
    eventlog_flush(&f->log, true);
    assert_log(f, want, 5);
}

/* A lost run writes only its expiries (they happened regardless), and
 * its events are gone afterwards either way. */
static void test_eventlog_lost_run_writes_only_expiry(void **state)
{
    struct fixture *f = *state;
    static const char *const want[] = {
        "OPLOG queue=loud event=expire message_id=" ID("000000000000002A")
        " dequeue_count=3 request_id=-",
        "OPLOG queue=loud-dlq event=expire message_id=" ID("000000000000002A")
        " dequeue_count=3 request_id=-",
    };

    eventlog_record(&f->log, f->loud, EVENTLOG_SEND, &f->m, "S");
    eventlog_record(&f->log, f->loud, EVENTLOG_EXPIRE, &f->m, NULL);
    eventlog_record(&f->log, f->loud, EVENTLOG_DELETE, &f->m, "D");
    eventlog_move(&f->log, f->loud, f->dlq, EVENTLOG_DEAD_LETTER, &f->m, 3, "M");
    eventlog_purge(&f->log, f->loud, 4, "P");
    eventlog_record(&f->log, f->dlq, EVENTLOG_EXPIRE, &f->m, "");
    eventlog_flush(&f->log, false);
    assert_int_equal(f->log.n, 0);
    assert_log(f, want, 2);
    /* Nothing is left for a later flush. */
    eventlog_flush(&f->log, true);
    assert_log(f, want, 2);
}

/* No request id (NULL or "") is written as "-". */
static void test_eventlog_request_id_default(void **state)
{
    struct fixture *f = *state;
    static const char *const want[] = {
        "OPLOG queue=loud event=send message_id=" ID("000000000000002A")
        " dequeue_count=3 request_id=-",
        "OPLOG queue=loud event=send message_id=" ID("000000000000002A")
        " dequeue_count=3 request_id=-",
        "OPLOG queue=loud event=send message_id=" ID("000000000000002A")
        " dequeue_count=3 request_id=5F1A2B3C4D5E6F7A8B9C0D1E",
    };

    eventlog_record(&f->log, f->loud, EVENTLOG_SEND, &f->m, NULL);
    eventlog_record(&f->log, f->loud, EVENTLOG_SEND, &f->m, "");
    eventlog_record(&f->log, f->loud, EVENTLOG_SEND, &f->m, "5F1A2B3C4D5E6F7A8B9C0D1E");
    eventlog_flush(&f->log, true);
    assert_log(f, want, 3);
}

/* Names and the message's fields are copied when recorded: the queue may
 * be deleted and the message freed before the flush. */
static void test_eventlog_copies_at_record_time(void **state)
{
    struct fixture *f = *state;
    static const char *const want[] = {
        "OPLOG queue=gone event=delete message_id=" ID("0000000000000063")
        " dequeue_count=2 request_id=X",
    };
    struct smq_queue *gone = make_queue(9, "gone", 1);
    struct smq_msg *m = calloc(1, sizeof *m);
    char rid[8] = "X";

    assert_non_null(m);
    m->seq = 99;
    m->dequeue_count = 2;
    eventlog_record(&f->log, gone, EVENTLOG_DELETE, m, rid);
    queue_free(gone);
    free(m);
    rid[0] = 'Y';
    eventlog_flush(&f->log, true);
    assert_log(f, want, 1);
}

/* ---- moves ------------------------------------------------------------------ */

static void test_eventlog_move_logs_both_sides(void **state)
{
    struct fixture *f = *state;
    static const char *const want[] = {
        "OPLOG queue=loud event=dead_letter message_id=" ID("000000000000002A")
        " dequeue_count=5 to=loud-dlq request_id=R",
        "OPLOG queue=loud-dlq event=dead_letter message_id=" ID("000000000000002A")
        " dequeue_count=5 from=loud request_id=R",
        "OPLOG queue=loud-dlq event=redrive message_id=" ID("000000000000002A")
        " dequeue_count=1 to=loud request_id=-",
        "OPLOG queue=loud event=redrive message_id=" ID("000000000000002A")
        " dequeue_count=1 from=loud-dlq request_id=-",
    };

    /* The count passed, not m's own (which restarts with the move). */
    f->m.dequeue_count = 0;
    eventlog_move(&f->log, f->loud, f->dlq, EVENTLOG_DEAD_LETTER, &f->m, 5, "R");
    eventlog_move(&f->log, f->dlq, f->loud, EVENTLOG_REDRIVE, &f->m, 1, NULL);
    eventlog_flush(&f->log, true);
    assert_log(f, want, 4);
}

/* Only the sides that log get a line. */
static void test_eventlog_move_one_side_logging(void **state)
{
    struct fixture *f = *state;
    static const char *const want[] = {
        "OPLOG queue=loud event=dead_letter message_id=" ID("000000000000002A")
        " dequeue_count=2 to=quiet request_id=A",
        "OPLOG queue=loud event=redrive message_id=" ID("000000000000002A")
        " dequeue_count=4 from=quiet request_id=B",
    };
    struct smq_queue *quiet2 = make_queue(4, "quiet2", 0);

    eventlog_move(&f->log, f->loud, f->quiet, EVENTLOG_DEAD_LETTER, &f->m, 2, "A");
    eventlog_move(&f->log, f->quiet, f->loud, EVENTLOG_REDRIVE, &f->m, 4, "B");
    eventlog_move(&f->log, f->quiet, quiet2, EVENTLOG_DEAD_LETTER, &f->m, 1, "C");
    assert_int_equal(f->log.n, 2);
    eventlog_flush(&f->log, true);
    assert_log(f, want, 2);
    queue_free(quiet2);
}

/* ---- topics --------------------------------------------------------------- */

/* A topic with one subscription and one notification of message 0x2B: the
 * eventlog reads only their names, the topic's LoggingEnabled and the seq. */
struct topic_case {
    struct smq_topic t;
    struct smq_sub s;
    struct topic_msg msg;
    struct topic_notif n;
};

static void topic_case_init(struct topic_case *c, const char *topic, const char *sub,
                            int logging)
{
    memset(c, 0, sizeof *c);
    snprintf(c->t.name, sizeof c->t.name, "%s", topic);
    mns_default_topic_attrs(&c->t.attrs);
    c->t.attrs.logging = logging;
    snprintf(c->s.name, sizeof c->s.name, "%s", sub);
    c->s.topic = &c->t;
    c->msg.topic = &c->t;
    c->msg.seq = 0x2B;
    c->n.sub = &c->s;
    c->n.msg = &c->msg;
}

static void test_eventlog_topic_events(void **state)
{
    struct fixture *f = *state;
    static const char *const want[] = {
        "OPLOG topic=news event=publish message_id=" ID("000000000000002B")
        " notifications=3 request_id=PUB1",
        "OPLOG topic=news subscription=to-loud event=deliver message_id=" ID("000000000000002B")
        " attempts=1 to=loud request_id=-",
        "OPLOG topic=news subscription=to-loud event=retry message_id=" ID("000000000000002B")
        " attempts=2 request_id=-",
        "OPLOG topic=news subscription=to-loud event=dead_letter message_id="
        ID("000000000000002B") " attempts=3 to=loud-dlq request_id=-",
        "OPLOG topic=news subscription=to-loud event=drop message_id=" ID("000000000000002B")
        " attempts=4 request_id=-",
        "OPLOG topic=news event=publish message_id=" ID("000000000000002C")
        " notifications=0 request_id=-",
    };
    struct topic_case loud, quiet;

    topic_case_init(&loud, "news", "to-loud", 1);
    topic_case_init(&quiet, "hush", "to-loud", 0);
    eventlog_publish(&f->log, &loud.t, 0x2B, 3, "PUB1");
    eventlog_publish(&f->log, &quiet.t, 0x2B, 3, "PUB2");
    /* The queue logs or not: the topic decides for its own lines. */
    eventlog_notify(&f->log, EVENTLOG_NOTIFY_DELIVER, &loud.n, 1, f->loud);
    eventlog_notify(&f->log, EVENTLOG_NOTIFY_DELIVER, &quiet.n, 1, f->loud);
    eventlog_notify(&f->log, EVENTLOG_NOTIFY_RETRY, &loud.n, 2, NULL);
    eventlog_notify(&f->log, EVENTLOG_NOTIFY_DEAD_LETTER, &loud.n, 3, f->dlq);
    eventlog_notify(&f->log, EVENTLOG_NOTIFY_DROP, &loud.n, 4, NULL);
    eventlog_notify(&f->log, EVENTLOG_NOTIFY_DROP, &quiet.n, 4, NULL);
    eventlog_publish(&f->log, &loud.t, 0x2C, 0, NULL);
    assert_int_equal(f->log.n, 6);
    eventlog_flush(&f->log, true);
    assert_log(f, want, 6);
}

/* A lost run shows none of the topic's lines: they did not happen. */
static void test_eventlog_topic_lost_run(void **state)
{
    struct fixture *f = *state;
    static const char *const want[] = {
        "OPLOG topic=news event=publish message_id=" ID("000000000000002B")
        " notifications=1 request_id=P2",
    };
    struct topic_case c;

    topic_case_init(&c, "news", "s", 1);
    eventlog_publish(&f->log, &c.t, 0x2B, 1, "P1");
    eventlog_notify(&f->log, EVENTLOG_NOTIFY_DELIVER, &c.n, 1, f->loud);
    eventlog_notify(&f->log, EVENTLOG_NOTIFY_DROP, &c.n, 1, NULL);
    eventlog_flush(&f->log, false);
    assert_int_equal(f->log.n, 0);
    eventlog_publish(&f->log, &c.t, 0x2B, 1, "P2");
    eventlog_flush(&f->log, true);
    assert_log(f, want, 1);
}

/* ---- purge ---------------------------------------------------------------- */

static void test_eventlog_purge_carries_count(void **state)
{
    struct fixture *f = *state;
    static const char *const want[] = {
        "OPLOG queue=loud event=purge count=123 request_id=P1",
        "OPLOG queue=loud-dlq event=purge count=0 request_id=-",
        "OPLOG queue=loud event=purge count=18446744073709551615 request_id=P3",
    };

    eventlog_purge(&f->log, f->loud, 123, "P1");
    /* A quiet queue's purge records nothing and changes no other line. */
    eventlog_purge(&f->log, f->quiet, 77, "P2");
    eventlog_purge(&f->log, f->dlq, 0, NULL);
    eventlog_purge(&f->log, f->loud, UINT64_MAX, "P3");
    assert_int_equal(f->log.n, 3);
    eventlog_flush(&f->log, true);
    assert_log(f, want, 3);
}

/* ---- the per-run cap ---------------------------------------------------------- */

static void test_eventlog_cap_counts_dropped(void **state)
{
    struct fixture *f = *state;
    size_t n, n_eventlog = 0;
    char **lines;

    for (size_t i = 0; i < CAP + 3; i++) {
        f->m.seq = i + 1;
        eventlog_record(&f->log, f->loud, EVENTLOG_SEND, &f->m, "R");
    }
    /* A move past the cap drops both of its lines. */
    eventlog_move(&f->log, f->loud, f->dlq, EVENTLOG_DEAD_LETTER, &f->m, 1, "R");
    assert_int_equal(f->log.n, CAP);
    assert_int_equal(f->log.dropped, 5);
    eventlog_flush(&f->log, true);
    assert_int_equal(f->log.dropped, 0);
    assert_int_equal(f->log.n, 0);

    lines = read_lines(f, &n);
    assert_int_equal(n, CAP + 1);
    for (size_t i = 0; i < n; i++)
        n_eventlog += strncmp(lines[i], "OPLOG ", 6) == 0;
    assert_int_equal(n_eventlog, CAP);
    /* The first and the last kept are the first CAP recorded. */
    assert_string_equal(lines[0], "OPLOG queue=loud event=send message_id=" ID("0000000000000001")
                        " dequeue_count=3 request_id=R");
    assert_string_equal(lines[CAP - 1], "OPLOG queue=loud event=send message_id="
                        ID("0000000000010000") " dequeue_count=3 request_id=R");
    /* Then one warning with the number dropped. */
    assert_true(strncmp(lines[CAP], "WARN ", 5) == 0);
    assert_non_null(strstr(lines[CAP], " 5 operation-log lines"));
    free_lines(lines, n);

    /* The next run starts afresh: recorded, no warning. */
    eventlog_record(&f->log, f->loud, EVENTLOG_DELETE, &f->m, "N");
    assert_int_equal(f->log.n, 1);
    assert_int_equal(f->log.dropped, 0);
    eventlog_flush(&f->log, true);
    lines = read_lines(f, &n);
    assert_int_equal(n, CAP + 2);
    assert_non_null(strstr(lines[CAP + 1], "event=delete"));
    free_lines(lines, n);
}

/* A lost run past the cap still reports what it dropped. */
static void test_eventlog_cap_dropped_reported_when_lost(void **state)
{
    struct fixture *f = *state;
    size_t n;
    char **lines;

    for (size_t i = 0; i < CAP + 1; i++)
        eventlog_record(&f->log, f->loud, EVENTLOG_SEND, &f->m, "R");
    eventlog_flush(&f->log, false);
    lines = read_lines(f, &n);
    assert_int_equal(n, 1);
    assert_true(strncmp(lines[0], "WARN ", 5) == 0);
    assert_non_null(strstr(lines[0], " 1 operation-log lines"));
    free_lines(lines, n);
    assert_int_equal(f->log.dropped, 0);
}

/*
 * A purge line carries its own purge's count, and the log never shows what
 * did not happen (eventlog.h): a purge dropped at the per-run cap leaves the
 * line of an earlier purge as it was.
 */
static void test_eventlog_purge_dropped_at_cap_keeps_earlier_count(void **state)
{
    struct fixture *f = *state;
    char purge_line[128];
    size_t n;
    char **lines;

    for (size_t i = 0; i < CAP - 1; i++)
        eventlog_record(&f->log, f->loud, EVENTLOG_SEND, &f->m, "R");
    eventlog_purge(&f->log, f->loud, 1, "FIRST");
    assert_int_equal(f->log.n, CAP);
    eventlog_purge(&f->log, f->loud, 99, "DROPPED");
    assert_int_equal(f->log.dropped, 1);
    eventlog_flush(&f->log, true);
    lines = read_lines(f, &n);
    snprintf(purge_line, sizeof purge_line, "%s", n >= CAP ? lines[CAP - 1] : "");
    free_lines(lines, n);              /* before asserting: no leak when it fails */
    assert_int_equal(n, CAP + 1);
    assert_string_equal(purge_line, "OPLOG queue=loud event=purge count=1 request_id=FIRST");
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_eventlog_only_logging_queues),
        T(test_eventlog_committed_writes_all_in_order),
        T(test_eventlog_lost_run_writes_only_expiry),
        T(test_eventlog_request_id_default),
        T(test_eventlog_copies_at_record_time),
        T(test_eventlog_move_logs_both_sides),
        T(test_eventlog_move_one_side_logging),
        T(test_eventlog_purge_carries_count),
        T(test_eventlog_topic_events),
        T(test_eventlog_topic_lost_run),
        T(test_eventlog_cap_counts_dropped),
        T(test_eventlog_cap_dropped_reported_when_lost),
        T(test_eventlog_purge_dropped_at_cap_keeps_earlier_count),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
