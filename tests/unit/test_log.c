/*
 * test_log.c — level handling, the line format, truncation and escaping,
 * switching destinations, and whole lines under concurrent writers.  Each
 * test logs into its own temporary file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <regex.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "smqd/errors.h"
#include "smqd/log.h"

#define STAMP_RE "[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z"

struct fixture {
    char dir[64];
    char path[128];
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));

    assert_non_null(f);
    snprintf(f->dir, sizeof(f->dir), "/tmp/test_log.XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->path, sizeof(f->path), "%s/smqd.log", f->dir);
    log_set_level(SMQ_LOG_INFO);
    assert_int_equal(log_open(f->path), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    log_close();
    log_set_level(SMQ_LOG_INFO);
    unlink(f->path);
    rmdir(f->dir);
    free(f);
    return 0;
}

/* The whole log file as a NUL-terminated string (caller frees). */
static char *read_log(const struct fixture *f, size_t *len_out)
{
    FILE *fp = fopen(f->path, "r");
    char *text;
    long len;

    assert_non_null(fp);
    assert_int_equal(fseek(fp, 0, SEEK_END), 0);
    len = ftell(fp);
    assert_true(len >= 0);
    rewind(fp);
    text = malloc((size_t)len + 1);
    assert_non_null(text);
    assert_int_equal(fread(text, 1, (size_t)len, fp), (size_t)len);
    text[len] = '\0';
    fclose(fp);
    if (len_out != NULL)
        *len_out = (size_t)len;
    return text;
}

static bool matches(const char *pattern, const char *text)
{
    regex_t re;
    int rc;

    assert_int_equal(regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB), 0);
    rc = regexec(&re, text, 0, NULL, 0);
    regfree(&re);
    return rc == 0;
}

static size_t count_lines(const char *text)
{
    size_t n = 0;

    for (; *text; text++)
        n += *text == '\n';
    return n;
}

static void test_log_level_parse(void **state)
{
    static const struct {
        const char *name;
        enum smq_log_level level;
    } ok[] = {
        {"error", SMQ_LOG_ERROR}, {"warn", SMQ_LOG_WARN},   {"info", SMQ_LOG_INFO},
        {"debug", SMQ_LOG_DEBUG}, {"DEBUG", SMQ_LOG_DEBUG}, {"Warn", SMQ_LOG_WARN},
    };
    static const char *const bad[] = {"", "warning", "verbose", "inf", "info ", "2"};
    enum smq_log_level level = SMQ_LOG_INFO;

    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        assert_int_equal(log_level_parse(ok[i].name, &level), 0);
        assert_int_equal(level, ok[i].level);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        level = SMQ_LOG_WARN;
        assert_int_equal(log_level_parse(bad[i], &level), SMQ_E_INVALID_ARGUMENT);
        assert_int_equal(level, SMQ_LOG_WARN);   /* untouched on failure */
    }
    assert_int_equal(log_level_parse(NULL, &level), SMQ_E_INVALID_ARGUMENT);
    (void)state;
}

static void test_log_level_name(void **state)
{
    enum smq_log_level back;

    for (int i = SMQ_LOG_ERROR; i <= SMQ_LOG_DEBUG; i++) {
        assert_int_equal(log_level_parse(log_level_name((enum smq_log_level)i), &back), 0);
        assert_int_equal(back, i);
    }
    assert_string_equal(log_level_name(SMQ_LOG_WARN), "warn");
    assert_string_equal(log_level_name((enum smq_log_level)42), "?");
    (void)state;
}

static void test_log_set_get_level(void **state)
{
    log_set_level(SMQ_LOG_DEBUG);
    assert_int_equal(log_get_level(), SMQ_LOG_DEBUG);
    log_set_level(SMQ_LOG_ERROR);
    assert_int_equal(log_get_level(), SMQ_LOG_ERROR);
    /* An out-of-range level is ignored rather than stored. */
    log_set_level((enum smq_log_level)7);
    assert_int_equal(log_get_level(), SMQ_LOG_ERROR);
    (void)state;
}

static void test_log_line_format(void **state)
{
    struct fixture *f = *state;
    char *text;

    SMQ_INFO("listening on http://%s:%d", "127.0.0.1", 8080);
    SMQ_WARN("w");
    SMQ_ERROR("e %s", "x");
    text = read_log(f, NULL);
    if (!matches("^" STAMP_RE " INFO listening on http://127\\.0\\.0\\.1:8080\n"
                 STAMP_RE " WARN w\n" STAMP_RE " ERROR e x\n$", text))
        fail_msg("unexpected log:\n%s", text);
    free(text);
}

/* The stamp is UTC "now": compare its date with gmtime around the call. */
static void test_log_timestamp_is_utc_now(void **state)
{
    struct fixture *f = *state;
    char before[32], after[32];
    time_t t;
    struct tm tm;
    char *text;

    t = time(NULL);
    strftime(before, sizeof(before), "%Y-%m-%dT%H:%M", gmtime_r(&t, &tm));
    SMQ_INFO("tick");
    t = time(NULL);
    strftime(after, sizeof(after), "%Y-%m-%dT%H:%M", gmtime_r(&t, &tm));
    text = read_log(f, NULL);
    assert_true(strncmp(text, before, strlen(before)) == 0 ||
                strncmp(text, after, strlen(after)) == 0);
    free(text);
}

static int side_effects;

static int bump(void)
{
    return ++side_effects;
}

static void test_log_filters_below_level(void **state)
{
    struct fixture *f = *state;
    char *text;

    side_effects = 0;
    SMQ_DEBUG("hidden %d", bump());   /* skipped, and its arguments not evaluated */
    log_write(SMQ_LOG_DEBUG, "hidden too");
    assert_int_equal(side_effects, 0);
    log_set_level(SMQ_LOG_DEBUG);
    SMQ_DEBUG("shown %d", bump());
    assert_int_equal(side_effects, 1);
    log_set_level(SMQ_LOG_ERROR);
    SMQ_WARN("hidden");
    SMQ_ERROR("bad");
    text = read_log(f, NULL);
    assert_int_equal(count_lines(text), 2);
    assert_non_null(strstr(text, " DEBUG shown 1\n"));
    assert_non_null(strstr(text, " ERROR bad\n"));
    assert_null(strstr(text, "hidden"));
    free(text);
}

/* Through a va_list, as libmicrohttpd calls its logger. */
static void call_library_line(const char *prefix, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    log_library_line((void *)prefix, fmt, ap);
    va_end(ap);
}

/* The libraries' logger callback: DEBUG only, prefixed, cut at a newline. */
static void test_log_library_line(void **state)
{
    struct fixture *f = *state;
    char *text;

    log_set_level(SMQ_LOG_INFO);
    call_library_line("lib", "hidden %d\n", 1);
    log_set_level(SMQ_LOG_DEBUG);
    call_library_line("admin: lib", "Error: %s\nsecond line\n", "oops");
    text = read_log(f, NULL);
    assert_int_equal(count_lines(text), 1);
    assert_non_null(strstr(text, " DEBUG admin: lib: Error: oops\n"));
    assert_null(strstr(text, "hidden"));
    assert_null(strstr(text, "second line"));
    free(text);
}

static void test_log_truncates_long_line(void **state)
{
    struct fixture *f = *state;
    char *big = malloc(5000);
    char *text;
    size_t len;

    assert_non_null(big);
    memset(big, 'a', 4999);
    big[4999] = '\0';
    SMQ_INFO("%s", big);
    SMQ_INFO("after");
    text = read_log(f, &len);
    assert_int_equal(count_lines(text), 2);
    assert_int_equal(strchr(text, '\n') - text + 1, SMQ_LOG_LINE_MAX);
    assert_memory_equal(text + SMQ_LOG_LINE_MAX - 5, "a...\n", 5);
    assert_true(matches("\n" STAMP_RE " INFO after\n$", text));
    free(text);
    free(big);
}

/* A message that fits exactly is not marked as cut. */
static void test_log_exact_fit_is_not_cut(void **state)
{
    struct fixture *f = *state;
    char msg[SMQ_LOG_LINE_MAX];
    size_t head = strlen("2026-11-30T02:01:36.123Z INFO ");
    size_t room = SMQ_LOG_LINE_MAX - 1 - head;
    char *text;

    memset(msg, 'b', room);
    msg[room] = '\0';
    SMQ_INFO("%s", msg);
    text = read_log(f, NULL);
    assert_int_equal(strlen(text), SMQ_LOG_LINE_MAX);
    assert_memory_equal(text + SMQ_LOG_LINE_MAX - 2, "b\n", 2);
    free(text);
}

/* A cut never splits a UTF-8 character. */
static void test_log_truncation_keeps_utf8_whole(void **state)
{
    struct fixture *f = *state;
    char msg[3 * SMQ_LOG_LINE_MAX];
    char *text;
    size_t n = 0;

    while (n + 3 < sizeof(msg)) {
        memcpy(msg + n, "\xE2\x82\xAC", 3);   /* EURO SIGN */
        n += 3;
    }
    msg[n] = '\0';
    /* The prefix is 30 bytes; with "xy" 2012 bytes remain before "...\n",
     * not a multiple of 3, so a naive cut would land inside a character. */
    SMQ_INFO("xy%s", msg);
    text = read_log(f, NULL);
    char *end = strstr(text, "...\n");
    assert_non_null(end);
    assert_memory_equal(end - 3, "\xE2\x82\xAC", 3);
    assert_true(strlen(text) <= SMQ_LOG_LINE_MAX);
    free(text);
}

static void test_log_escapes_control_characters(void **state)
{
    struct fixture *f = *state;
    char *text;

    SMQ_WARN("queue \"%s\"", "evil\n2026-01-01T00:00:00.000Z ERROR forged\r\x1b[0m\tend");
    text = read_log(f, NULL);
    assert_int_equal(count_lines(text), 1);
    assert_non_null(strstr(text, " WARN queue \"evil\\x0a2026-01-01T00:00:00.000Z ERROR "
                                 "forged\\x0d\\x1b[0m\tend\"\n"));
    free(text);
}

static void test_log_appends_to_existing_file(void **state)
{
    struct fixture *f = *state;
    char *text;
    FILE *fp;

    log_close();
    fp = fopen(f->path, "w");
    assert_non_null(fp);
    fputs("old line\n", fp);
    fclose(fp);
    assert_int_equal(log_open(f->path), 0);
    SMQ_INFO("new");
    text = read_log(f, NULL);
    assert_true(matches("^old line\n" STAMP_RE " INFO new\n$", text));
    free(text);
}

static void test_log_open_failure_keeps_destination(void **state)
{
    struct fixture *f = *state;
    char *text;

    errno = 0;
    assert_int_equal(log_open("/nonexistent-dir/x/smqd.log"), SMQ_E_INTERNAL);
    assert_int_equal(errno, ENOENT);
    SMQ_INFO("still here");
    text = read_log(f, NULL);
    assert_non_null(strstr(text, " INFO still here\n"));
    free(text);
}

static void test_log_close_reverts_to_stderr(void **state)
{
    struct fixture *f = *state;
    char *text;

    SMQ_INFO("to file");
    log_close();
    log_close();   /* twice is harmless */
    assert_int_equal(log_open("-"), 0);
    assert_int_equal(log_open(""), 0);
    assert_int_equal(log_open(NULL), 0);
    SMQ_ERROR("to stderr (expected in test output)");
    text = read_log(f, NULL);
    assert_int_equal(count_lines(text), 1);
    assert_null(strstr(text, "stderr"));
    free(text);
}

/* Reopening the same path (log rotation) continues in the new file. */
static void test_log_reopen_after_rotation(void **state)
{
    struct fixture *f = *state;
    char rotated[160];
    char *text;

    SMQ_INFO("before");
    snprintf(rotated, sizeof(rotated), "%s.1", f->path);
    assert_int_equal(rename(f->path, rotated), 0);
    assert_int_equal(log_open(f->path), 0);
    SMQ_INFO("after");
    text = read_log(f, NULL);
    assert_int_equal(count_lines(text), 1);
    assert_non_null(strstr(text, " INFO after\n"));
    free(text);
    unlink(rotated);
}

static void test_log_preserves_errno(void **state)
{
    errno = EAGAIN;
    SMQ_INFO("x");
    assert_int_equal(errno, EAGAIN);
    errno = ERANGE;
    SMQ_DEBUG("filtered");
    assert_int_equal(errno, ERANGE);
    (void)state;
}

#define N_THREADS 4
#define N_PER_THREAD 300

static void *writer(void *arg)
{
    long id = (long)(intptr_t)arg;
    char pad[600];

    /* Long lines make a torn write likely if lines were not written whole. */
    memset(pad, 'a' + (int)id, sizeof(pad) - 1);
    pad[sizeof(pad) - 1] = '\0';
    for (int i = 0; i < N_PER_THREAD; i++)
        SMQ_INFO("t%ld n%d %s", id, i, pad);
    return NULL;
}

/* A line as writer() makes it: its own thread's pad, whole. */
static bool is_whole_line(const char *l, const regex_t *re)
{
    const char *pad;
    int id;

    if (regexec(re, l, 0, NULL, 0) != 0)
        return false;
    id = strstr(l, " INFO t")[7] - '0';
    pad = strrchr(l, ' ') + 1;
    if (strlen(pad) != 599)
        return false;
    for (; *pad; pad++) {
        if (*pad != 'a' + id)
            return false;
    }
    return true;
}

static void test_log_concurrent_lines_do_not_interleave(void **state)
{
    struct fixture *f = *state;
    pthread_t threads[N_THREADS];
    char *text, *save = NULL;
    size_t lines = 0;
    regex_t re;

    for (long i = 0; i < N_THREADS; i++)
        assert_int_equal(pthread_create(&threads[i], NULL, writer, (void *)(intptr_t)i), 0);
    for (int i = 0; i < N_THREADS; i++)
        pthread_join(threads[i], NULL);
    text = read_log(f, NULL);
    assert_int_equal(regcomp(&re, "^" STAMP_RE " INFO t[0-3] n[0-9]+ [a-d]+$",
                             REG_EXTENDED | REG_NOSUB), 0);
    for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        if (!is_whole_line(l, &re))
            fail_msg("torn line: %.80s...", l);
        lines++;
    }
    regfree(&re);
    assert_int_equal(lines, N_THREADS * N_PER_THREAD);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_log_level_parse, setup, teardown),
        cmocka_unit_test_setup_teardown(test_log_library_line, setup, teardown),
        cmocka_unit_test_setup_teardown(test_log_level_name, setup, teardown),
        cmocka_unit_test_setup_teardown(test_log_set_get_level, setup, teardown),
        cmocka_unit_test_setup_teardown(test_log_line_format, setup, teardown),
        cmocka_unit_test_setup_teardown(test_log_timestamp_is_utc_now, setup, teardown),
        cmocka_unit_test_setup_teardown(test_log_filters_below_level, setup, teardown),
        cmocka_unit_test_setup_teardown(test_log_truncates_long_line, setup, teardown),
        cmocka_unit_test_setup_teardown(test_log_exact_fit_is_not_cut, setup, teardown),
        cmocka_unit_test_setup_teardown(test_log_truncation_keeps_utf8_whole, setup, teardown),
        cmocka_unit_test_setup_teardown(test_log_escapes_control_characters, setup, teardown),
        cmocka_unit_test_setup_teardown(test_log_appends_to_existing_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_log_open_failure_keeps_destination, setup, teardown),
        cmocka_unit_test_setup_teardown(test_log_close_reverts_to_stderr, setup, teardown),
        cmocka_unit_test_setup_teardown(test_log_reopen_after_rotation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_log_preserves_errno, setup, teardown),
        cmocka_unit_test_setup_teardown(test_log_concurrent_lines_do_not_interleave, setup,
                                        teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
