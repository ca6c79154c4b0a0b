/*
 * log.c — owns the log level and the log destination (stderr or one file).
 *
 * A line is "YYYY-MM-DDTHH:MM:SS.mmmZ LEVEL message\n" (UTC), at most
 * SMQ_LOG_LINE_MAX bytes.  It is built in a local buffer and written with a
 * single write(2) while holding the destination mutex, so lines from several
 * threads never interleave and log_open/log_close can swap the file
 * descriptor without a writer using a closed one.  The file is opened with
 * O_APPEND, so a line also stays whole next to other processes appending to
 * the same file (e.g. a second smqd during an upgrade).
 *
 * Messages are written as given except for control characters, which become
 * \xHH: a client-supplied string (a queue name, a header) must not be able
 * to forge a second log line.  Keeping secrets and bodies out of messages is
 * the callers' duty.
 *
 * The level is an atomic so SMQ_LOG can test it from any thread without the
 * mutex; a relaxed load is enough since a level change has no data to order.
 */
#include "smqd/log.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "smqd/errors.h"

static atomic_int log_level = SMQ_LOG_INFO;
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static int log_fd = -1;   /* guarded by log_mu; -1 = stderr */

static const char *const level_names[] = {"error", "warn", "info", "debug"};
static const char *const level_tags[] = {"ERROR", "WARN", "INFO", "DEBUG"};

#define N_LEVELS (sizeof(level_names) / sizeof(level_names[0]))
#define ELLIPSIS "..."

void log_set_level(enum smq_log_level level)
{
    if ((unsigned)level < N_LEVELS)
        atomic_store_explicit(&log_level, (int)level, memory_order_relaxed);
}

enum smq_log_level log_get_level(void)
{
    return (enum smq_log_level)atomic_load_explicit(&log_level, memory_order_relaxed);
}

int log_level_parse(const char *s, enum smq_log_level *out)
{
    for (size_t i = 0; s != NULL && i < N_LEVELS; i++) {
        if (strcasecmp(s, level_names[i]) == 0) {
            *out = (enum smq_log_level)i;
            return 0;
        }
    }
    return SMQ_E_INVALID_ARGUMENT;
}

const char *log_level_name(enum smq_log_level level)
{
    return (unsigned)level < N_LEVELS ? level_names[level] : "?";
}

/* Installs fd (-1 = stderr) and closes the previous file.  The close happens
 * after the swap: no writer can still hold the old descriptor then, because
 * writers use it only under the mutex. */
static void swap_fd(int fd)
{
    int old;

    pthread_mutex_lock(&log_mu);
    old = log_fd;
    log_fd = fd;
    pthread_mutex_unlock(&log_mu);
    if (old >= 0)
        close(old);
}

int log_open(const char *path)
{
    int fd = -1;

    if (path != NULL && path[0] != '\0' && strcmp(path, "-") != 0) {
        fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
        if (fd < 0)
            return SMQ_E_INTERNAL;      /* errno says why */
    }
    swap_fd(fd);
    return 0;
}

void log_close(void)
{
    swap_fd(-1);
}

/* "2026-11-30T02:01:36.123Z LEVEL " into buf; returns its length. */
static size_t format_prefix(char *buf, size_t size, const char *tag)
{
    struct timespec ts;
    struct tm tm;
    int n;

    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    n = snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s ", tm.tm_year + 1900,
                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                 ts.tv_nsec / 1000000L, tag);
    /* Cannot exceed size (< 40 bytes into 2048), but stay in bounds anyway. */
    return n < 0 ? 0 : (size_t)n < size ? (size_t)n : size - 1;
}

/* Bytes in the UTF-8 sequence that starts with c (1 for anything else), so
 * that a cut never splits a character. */
static size_t utf8_seq_len(unsigned char c)
{
    if (c >= 0xF0 && c <= 0xF7)
        return 4;
    if (c >= 0xE0)
        return c <= 0xEF ? 3 : 1;
    return c >= 0xC0 ? 2 : 1;
}

/*
 * Copies msg[0..len) to line[pos..cap), writing control bytes as \xHH and
 * stopping before the first character that does not fit.  Returns the new
 * position; *cut tells whether anything was left out.
 */
static size_t append_escaped(char *line, size_t pos, size_t cap, const char *msg, size_t len,
                             bool *cut)
{
    static const char hex[] = "0123456789abcdef";
    size_t i = 0;

    while (i < len) {
        unsigned char c = (unsigned char)msg[i];
        bool ctl = (c < 0x20 && c != '\t') || c == 0x7f;
        size_t take = ctl ? 1 : utf8_seq_len(c);
        size_t need = ctl ? 4 : take;

        if (take > len - i)
            take = need = len - i;
        if (pos + need > cap)
            break;
        if (ctl) {
            line[pos] = '\\';
            line[pos + 1] = 'x';
            line[pos + 2] = hex[c >> 4];
            line[pos + 3] = hex[c & 0xf];
        } else {
            memcpy(line + pos, msg + i, take);
        }
        pos += need;
        i += take;
    }
    *cut = i < len;
    return pos;
}

/* Writes all of buf, retrying after signals and short writes. */
static void write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;   /* nowhere left to report a failing log */
        buf += n;
        len -= (size_t)n;
    }
}

static void emit(const char *tag, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
static void emit(const char *tag, const char *fmt, va_list ap)
{
    char msg[SMQ_LOG_LINE_MAX];
    char line[SMQ_LOG_LINE_MAX];
    int saved_errno = errno;   /* callers often log and then test errno */
    size_t head, pos, msg_len;
    bool cut;
    int n;

    head = format_prefix(line, sizeof(line), tag);
    n = vsnprintf(msg, sizeof(msg), fmt, ap);
    if (n < 0) {
        static const char bad[] = "(unformattable log message)";
        memcpy(msg, bad, sizeof(bad));
        n = (int)sizeof(bad) - 1;
    }
    msg_len = (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1;
    /* Leave room for "\n"; if the message does not fit, redo the copy with
     * room for the "..." marker as well. */
    pos = append_escaped(line, head, sizeof(line) - 1, msg, msg_len, &cut);
    if (cut || (size_t)n >= sizeof(msg)) {
        pos = append_escaped(line, head, sizeof(line) - 1 - strlen(ELLIPSIS), msg, msg_len, &cut);
        memcpy(line + pos, ELLIPSIS, strlen(ELLIPSIS));
        pos += strlen(ELLIPSIS);
    }
    line[pos++] = '\n';

    pthread_mutex_lock(&log_mu);
    write_all(log_fd >= 0 ? log_fd : STDERR_FILENO, line, pos);
    pthread_mutex_unlock(&log_mu);
    errno = saved_errno;
}

void log_vwrite(enum smq_log_level level, const char *fmt, va_list ap)
{
    if ((unsigned)level >= N_LEVELS || level > log_get_level())
        return;
    emit(level_tags[level], fmt, ap);
}

void log_library_line(void *prefix, const char *fmt, va_list ap)
{
    char line[512];

    if (log_get_level() < SMQ_LOG_DEBUG)
        return;
    vsnprintf(line, sizeof line, fmt, ap);
    line[strcspn(line, "\n")] = '\0';
    log_write(SMQ_LOG_DEBUG, "%s: %s", (const char *)prefix, line);
}

void log_event(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    emit("OPLOG", fmt, ap);
    va_end(ap);
}

void log_write(enum smq_log_level level, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    log_vwrite(level, fmt, ap);
    va_end(ap);
}
