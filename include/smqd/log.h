/*
 * log.h — leveled logging to stderr (or a file).
 *
 * SMQ_LOG skips formatting entirely below the current level.  The level is
 * the log module's own state, changeable at run time (SIGHUP reload).
 * Lines: "2026-11-30T02:01:36.123Z LEVEL message" — never bodies or secrets.
 */
#ifndef SMQD_LOG_H
#define SMQD_LOG_H

#include <stdarg.h>

/* Bytes per line including the final "\n".  A longer message is cut and
 * ends in "..."; control characters in messages are written as \xHH so a
 * message can never start a second line. */
#define SMQ_LOG_LINE_MAX 2048

enum smq_log_level {
    SMQ_LOG_ERROR = 0,
    SMQ_LOG_WARN = 1,
    SMQ_LOG_INFO = 2,
    SMQ_LOG_DEBUG = 3
};

void log_set_level(enum smq_log_level level);
enum smq_log_level log_get_level(void);
/* Parses "error" | "warn" | "info" | "debug" (any case).  0 or
 * SMQ_E_INVALID_ARGUMENT. */
int log_level_parse(const char *s, enum smq_log_level *out);
/* The lowercase name as log_level_parse accepts it; "?" if out of range. */
const char *log_level_name(enum smq_log_level level);

/* Redirects output to path (append); NULL, "" or "-" means stderr.  0 or
 * SMQ_E_INTERNAL (errno set; the previous destination stays in use).  Calling it again with
 * the same path reopens the file, e.g. after log rotation. */
int log_open(const char *path);
/* Closes the log file, if any, and goes back to stderr. */
void log_close(void);

/* Writes one line if level is enabled.  Thread-safe; each line is a single
 * write(2), so lines from different threads never interleave.  errno is
 * preserved. */
void log_write(enum smq_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void log_vwrite(enum smq_log_level level, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

/* A library's logger callback (libmicrohttpd's MHD_OPTION_EXTERNAL_LOGGER):
 * one DEBUG line "PREFIX: message", prefix being the string cls points to,
 * the message cut at its first newline. */
void log_library_line(void *prefix, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

/* Writes one operation-log line (tag OPLOG) whatever the level: the
 * message lifecycle events of queues with LoggingEnabled (engine). */
void log_event(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define SMQ_LOG(level, ...)                          \
    do {                                             \
        if ((level) <= log_get_level())              \
            log_write((level), __VA_ARGS__);         \
    } while (0)

#define SMQ_ERROR(...) SMQ_LOG(SMQ_LOG_ERROR, __VA_ARGS__)
#define SMQ_WARN(...) SMQ_LOG(SMQ_LOG_WARN, __VA_ARGS__)
#define SMQ_INFO(...) SMQ_LOG(SMQ_LOG_INFO, __VA_ARGS__)
#define SMQ_DEBUG(...) SMQ_LOG(SMQ_LOG_DEBUG, __VA_ARGS__)

#endif
