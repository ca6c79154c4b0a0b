/*
 * log.h — leveled logging to stderr (or a file).
 *
 * SMQ_LOG skips formatting entirely below the current level.  The level is
 * the log module's own state, changeable at run time (SIGHUP reload).
 * Lines: "2026-11-30T02:01:36.123Z LEVEL message" — never bodies or secrets.
 */
#ifndef SMQD_LOG_H
#define SMQD_LOG_H

enum smq_log_level {
    SMQ_LOG_ERROR = 0,
    SMQ_LOG_WARN = 1,
    SMQ_LOG_INFO = 2,
    SMQ_LOG_DEBUG = 3
};

void log_set_level(enum smq_log_level level);
enum smq_log_level log_get_level(void);
/* Parses "error" | "warn" | "info" | "debug".  0 or -1. */
int log_level_parse(const char *s, enum smq_log_level *out);
const char *log_level_name(enum smq_log_level level);

/* Redirects output to path (append); NULL or "-" means stderr.  0 or -1. */
int log_open(const char *path);
void log_close(void);

void log_write(enum smq_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

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
