/*
 * config.c — owns smqd's settings: the one table below, the INI loader built
 * on libinih, the defaults and the printer used by `smqd -t`.
 *
 * Every setting is one row of `settings[]`: section, key, type, default
 * (spelled as in the file), bounds, the struct field and a one-line doc.
 * config_defaults() runs each default through the same parser as the file,
 * so a default outside its own bounds cannot ship (test_config_defaults), and
 * config_print() walks the same rows, so `smqd -t` lists every key.
 *
 * Line numbers.  libinih reports only the first line that failed, and its
 * handler does not get the line number in Debian's build (INI_HANDLER_LINENO
 * is 0).  So we feed it through our own reader (read_line): it counts lines,
 * and because inih calls the handler before it asks for the next line, the
 * reader's count is the handler's line.  The reader also rejects what inih
 * would silently mangle: lines longer than inih's buffer (it would split
 * them into two "lines"), NUL bytes, and unknown [section] headers (inih
 * does not call the handler for a header with no keys under it).
 *
 * The [auth] keys are collected on the side while parsing and assembled into
 * the key ring at the end, because the first pair is two lines that can come
 * in any order and "at least one key" can only be judged after the last line.
 * Secrets never appear in error messages or in config_print output.
 */
#include "smqd/config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ini.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "smqd/engine.h"      /* the dead-letter policy's range */
#include "smqd/netaddr.h"
#include "smqd/strnum.h"

enum opt_type {
    OPT_INT,        /* int field, min..max */
    OPT_BOOL,       /* bool field */
    OPT_ENUM,       /* int-sized enum field, spelled by names[] */
    OPT_PATH,       /* char array; min..max is the length range */
    OPT_LISTEN,     /* HOST:PORT into listen_host + listen_port */
    OPT_KEY_ID,     /* [auth] access_key_id: collected, not a field */
    OPT_SECRET,     /* [auth] access_key_secret: collected, not a field */
    OPT_KEY_PAIR,   /* [auth] key.<ID> = <SECRET>, any number of them */
    OPT_ADMIN_LISTEN, /* [admin] listen: HOST:PORT into admin_host + admin_port, or off */
    OPT_TOKEN       /* [admin] token: a secret kept in a char array; empty = none */
};

struct setting {
    const char *section;
    const char *key;            /* OPT_KEY_PAIR: the prefix "key." */
    enum opt_type type;
    const char *def;            /* default as written in the file; NULL = none */
    long long min, max;         /* OPT_INT value range, OPT_PATH length range */
    const char *const *names;   /* OPT_ENUM spellings, indexed by value */
    size_t offset;              /* field in struct smq_config */
    const char *doc;            /* one line, printed above the key */
};

static const char *const sync_names[] = {"full", "normal", NULL};
/* Same spellings as log_level_parse(); test_config_level_names_match_log
 * keeps the two in step. */
static const char *const level_names[] = {"error", "warn", "info", "debug", NULL};

/* Enum fields are written through an int pointer. */
_Static_assert(sizeof(enum smq_sync_mode) == sizeof(int), "enum size");
_Static_assert(sizeof(enum smq_log_level) == sizeof(int), "enum size");

#define FIELD(f) offsetof(struct smq_config, f)
#define FIELD_LEN(f) ((long long)sizeof(((struct smq_config *)0)->f) - 1)
#define NO_FIELD 0

static const struct setting settings[] = {
    {"server", "listen", OPT_LISTEN, "127.0.0.1:8080", 0, 65535, NULL,
     FIELD(listen_host),
     "HTTP address; port 0 picks a free port"},
    {"server", "threads", OPT_INT, "2", 1, 64, NULL, FIELD(threads),
     "HTTP worker threads"},
    {"storage", "path", OPT_PATH, "./smqd.db", 1, FIELD_LEN(storage_path), NULL,
     FIELD(storage_path),
     "SQLite database file, relative to the working directory"},
    {"storage", "sync", OPT_ENUM, "full", 0, 0, sync_names, FIELD(sync),
     "full: acknowledged writes survive power loss; normal: only an smqd crash"},
    {"storage", "reserve_mb", OPT_INT, "16", 0, 4096, NULL, FIELD(reserve_mb),
     "MiB kept in PATH.reserve and freed when the disk fills, so deletes still work"},
    {"auth", "access_key_id", OPT_KEY_ID, NULL, 1, SMQ_KEY_ID_MAX, NULL, NO_FIELD,
     "first access key id (required unless a key.<ID> line exists)"},
    {"auth", "access_key_secret", OPT_SECRET, NULL, 1, SMQ_KEY_SECRET_MAX, NULL, NO_FIELD,
     "secret of access_key_id"},
    {"auth", "key.", OPT_KEY_PAIR, NULL, 1, SMQ_KEY_ID_MAX, NULL, NO_FIELD,
     "more key pairs: key.<ACCESS_KEY_ID> = <SECRET>"},
    {"auth", "max_clock_skew_s", OPT_INT, "900", 1, 86400, NULL, FIELD(max_clock_skew_s),
     "seconds a request's Date may differ from the server clock"},
    {"limits", "max_connections", OPT_INT, "1024", 1, 100000, NULL, FIELD(max_connections),
     "simultaneous HTTP connections"},
    {"limits", "idle_timeout_s", OPT_INT, "75", 1, 3600, NULL, FIELD(idle_timeout_s),
     "seconds before an idle keep-alive connection is closed"},
    {"limits", "request_timeout_s", OPT_INT, "30", 1, 3600, NULL, FIELD(request_timeout_s),
     "seconds to receive a whole request before it is dropped"},
    {"limits", "max_queues", OPT_INT, "1000", 1, 1000000, NULL, FIELD(max_queues),
     "queues that may exist at once"},
    {"limits", "max_body_bytes", OPT_INT, "1048576", 65536, 16777216, NULL,
     FIELD(max_body_bytes), "largest request body accepted, in bytes"},
    {"limits", "queue_qps", OPT_INT, "0", 0, 1000000, NULL, FIELD(queue_qps),
     "requests per second per queue; 0 = no limit"},
    {"limits", "queue_burst", OPT_INT, "0", 0, 1000000, NULL, FIELD(queue_burst),
     "requests a queue may make at once (bucket size); 0 = queue_qps"},
    {"limits", "access_key_qps", OPT_INT, "0", 0, 1000000, NULL, FIELD(access_key_qps),
     "requests per second per access key; 0 = no limit"},
    {"limits", "access_key_burst", OPT_INT, "0", 0, 1000000, NULL, FIELD(access_key_burst),
     "requests an access key may make at once (bucket size); 0 = access_key_qps"},
    {"log", "level", OPT_ENUM, "info", 0, 0, level_names, FIELD(log_level),
     "lowest level written"},
    {"log", "file", OPT_PATH, "-", 0, FIELD_LEN(log_file), NULL, FIELD(log_file),
     "log file (appended to); - or empty means stderr"},
    {"log", "requests", OPT_BOOL, "true", 0, 0, NULL, FIELD(log_requests),
     "one line per HTTP request"},
    /* [admin]: the operators' listener (docs/admin-api.md) */
    {"admin", "listen", OPT_ADMIN_LISTEN, "127.0.0.1:8081", 0, 65535, NULL, FIELD(admin_host),
     "admin listener (health, readiness, metrics, smqctl); off disables it"},
    {"admin", "token", OPT_TOKEN, NULL, 0, FIELD_LEN(admin_token), NULL, FIELD(admin_token),
     "if set, every admin request but /health needs Authorization: Bearer <token>"},
};

#define N_SETTINGS (sizeof(settings) / sizeof(settings[0]))

static const char *const known_sections = "server, storage, auth, limits, log, admin";

/* ---- value parsers: each returns NULL or a short description of the problem */

static const char *parse_ll(const char *v, long long min, long long max, long long *out)
{
    int64_t n;

    if (v[0] == '\0')
        return "empty value";
    if (!strnum_is_integer(v, strlen(v)))
        return "not an integer";
    if (strnum_i64(v, strlen(v), &n) != 0 || n < min || n > max)
        return "out of range";
    *out = n;
    return NULL;
}

static const char *parse_bool(const char *v, bool *out)
{
    static const char *const yes[] = {"true", "yes", "on", "1"};
    static const char *const no[] = {"false", "no", "off", "0"};

    if (v[0] == '\0')
        return "empty value";
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        if (strcasecmp(v, yes[i]) == 0) {
            *out = true;
            return NULL;
        }
        if (strcasecmp(v, no[i]) == 0) {
            *out = false;
            return NULL;
        }
    }
    return "invalid value";
}

static const char *parse_enum(const char *v, const char *const *names, int *out)
{
    if (v[0] == '\0')
        return "empty value";
    for (int i = 0; names[i] != NULL; i++) {
        if (strcasecmp(v, names[i]) == 0) {
            *out = i;
            return NULL;
        }
    }
    return "invalid value";
}

/* A file path: no control characters, and no quotes around it, since inih
 * takes values literally and `path = "x.db"` would create a file named "x.db"
 * with the quotes in it. */
static const char *parse_path(const char *v, long long min_len, long long max_len)
{
    size_t len = strlen(v);

    if (len == 0 && min_len > 0)
        return "empty value";
    if ((long long)len > max_len)
        return "too long";
    if (v[0] == '"' || v[0] == '\'')
        return "values are not quoted; write it without quotes";
    for (size_t i = 0; i < len; i++) {
        if ((unsigned char)v[i] < 0x20 || v[i] == 0x7f)
            return "contains a control character";
    }
    return NULL;
}

static const char *parse_port(const char *v, uint16_t *port)
{
    long long n;
    const char *why;

    if (v[0] == '\0')
        return "missing port";
    why = parse_ll(v, 0, 65535, &n);
    if (why != NULL)
        return strcmp(why, "out of range") == 0 ? "port out of range" : "port is not a number";
    *port = (uint16_t)n;
    return NULL;
}

/* Splits HOST:PORT; v6 is set when the host was bracketed. */
static const char *split_listen(const char *v, const char **host, size_t *host_len,
                                const char **port, bool *v6)
{
    const char *colon;

    *v6 = v[0] == '[';
    if (*v6) {
        const char *close = strchr(v, ']');
        if (close == NULL)
            return "missing ']' after the IPv6 address";
        *host = v + 1;
        *host_len = (size_t)(close - *host);
        colon = close + 1;
        if (*colon != ':')
            return "missing :PORT";
    } else {
        colon = strrchr(v, ':');
        if (colon == NULL)
            return "missing :PORT";
        *host = v;
        *host_len = (size_t)(colon - v);
        if (memchr(v, ':', *host_len) != NULL)
            return "an IPv6 address must be in brackets, e.g. [::1]:8080";
    }
    *port = colon + 1;
    return *host_len == 0 ? "missing host" : NULL;
}

/* Only literals and "localhost": resolving names at startup would make the
 * bound address depend on DNS, and smqd has no business listening on a name. */
static const char *parse_address(const char *v, char host_out[256], uint16_t *port_out)
{
    const char *host, *port_s, *why;
    char host_buf[256];
    unsigned char addr[sizeof(struct in6_addr)];
    size_t host_len;
    uint16_t port;
    bool v6;

    if (v[0] == '\0')
        return "empty value";
    why = split_listen(v, &host, &host_len, &port_s, &v6);
    if (why != NULL)
        return why;
    if (host_len >= sizeof(host_buf))
        return "invalid host";
    memcpy(host_buf, host, host_len);
    host_buf[host_len] = '\0';
    if (v6 ? inet_pton(AF_INET6, host_buf, addr) != 1
           : strcmp(host_buf, "localhost") != 0 && inet_pton(AF_INET, host_buf, addr) != 1)
        return v6 ? "invalid IPv6 address" : "host must be an IPv4 address or localhost";
    why = parse_port(port_s, &port);
    if (why != NULL)
        return why;
    memcpy(host_out, host_buf, host_len + 1);
    *port_out = port;
    return NULL;
}

static const char *parse_listen(const char *v, struct smq_config *cfg)
{
    return parse_address(v, cfg->listen_host, &cfg->listen_port);
}

/* [admin] listen: an address like [server] listen, or "off". */
static const char *parse_admin_listen(const char *v, struct smq_config *cfg)
{
    if (strcasecmp(v, "off") == 0) {
        cfg->admin_enabled = false;
        return NULL;
    }
    cfg->admin_enabled = true;
    return parse_address(v, cfg->admin_host, &cfg->admin_port);
}

static bool is_key_id_char(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '.' || c == '-';
}

static const char *check_key_id(const char *id)
{
    size_t len = strlen(id);

    if (len == 0)
        return "empty access key id";
    if (len > SMQ_KEY_ID_MAX)
        return "access key id too long";
    for (size_t i = 0; i < len; i++) {
        if (!is_key_id_char(id[i]))
            return "invalid character in access key id";
    }
    return NULL;
}

static const char *check_secret(const char *secret)
{
    size_t len = strlen(secret);

    if (len == 0)
        return "empty value";
    if (len > SMQ_KEY_SECRET_MAX)
        return "too long";
    if (secret[0] == '"' || secret[0] == '\'')
        return "values are not quoted; write it without quotes";
    for (size_t i = 0; i < len; i++) {
        if (secret[i] <= ' ' || secret[i] > '~')
            return "contains a space, a control or a non-ASCII character";
    }
    return NULL;
}

/* Stores v into the field of a plain (non-[auth]) row. */
static const char *parse_field(struct smq_config *cfg, const struct setting *s, const char *v)
{
    char *field = (char *)cfg + s->offset;
    const char *why = NULL;
    long long n;

    switch (s->type) {
    case OPT_INT:
        why = parse_ll(v, s->min, s->max, &n);
        if (why == NULL)
            *(int *)(void *)field = (int)n;
        return why;
    case OPT_BOOL:
        return parse_bool(v, (bool *)(void *)field);
    case OPT_ENUM:
        return parse_enum(v, s->names, (int *)(void *)field);
    case OPT_PATH:
        why = parse_path(v, s->min, s->max);
        if (why != NULL)
            return why;
        /* One spelling for "stderr", so that users of the field test one thing. */
        if (v[0] == '\0')
            v = "-";
        memcpy(field, v, strlen(v) + 1);   /* length checked by parse_path */
        return NULL;
    case OPT_LISTEN:
        return parse_listen(v, cfg);
    case OPT_ADMIN_LISTEN:
        return parse_admin_listen(v, cfg);
    case OPT_TOKEN:
        /* The same rules as a secret.  No token is written by leaving the
         * line out: an empty value (a template whose variable came out
         * empty, say) would otherwise open the admin API to anyone. */
        why = v[0] == '\0' ? "empty value (to run without a token, leave the line out)"
                           : check_secret(v);
        if (why == NULL)
            memcpy(field, v, strlen(v) + 1);   /* length checked by check_secret */
        return why;
    default:
        return "not a plain setting";
    }
}

/* Describes the allowed values of s, for error messages. */
static void describe_allowed(const struct setting *s, char *buf, size_t size)
{
    size_t used = 0;

    switch (s->type) {
    case OPT_INT:
        snprintf(buf, size, "%lld..%lld", s->min, s->max);
        return;
    case OPT_BOOL:
        snprintf(buf, size, "true, false, yes, no, on, off, 1, 0");
        return;
    case OPT_ENUM:
        buf[0] = '\0';
        for (int i = 0; s->names[i] != NULL && used < size; i++)
            used += (size_t)snprintf(buf + used, size - used, "%s%s", i ? ", " : "", s->names[i]);
        return;
    case OPT_PATH:
        snprintf(buf, size, s->min > 0 ? "a file path of 1..%lld characters"
                                       : "a file path of up to %lld characters, or - for stderr",
                 s->max);
        return;
    case OPT_LISTEN:
        snprintf(buf, size, "IPv4:PORT, localhost:PORT or [IPv6]:PORT with PORT 0..65535");
        return;
    case OPT_ADMIN_LISTEN:
        snprintf(buf, size, "off, IPv4:PORT, localhost:PORT or [IPv6]:PORT with PORT 0..65535");
        return;
    case OPT_KEY_ID:
    case OPT_KEY_PAIR:
        snprintf(buf, size, "ids of 1..%d characters of A-Z a-z 0-9 _ . -", SMQ_KEY_ID_MAX);
        return;
    case OPT_SECRET:
    case OPT_TOKEN:
        snprintf(buf, size, "1..%d printable ASCII characters without spaces",
                 SMQ_KEY_SECRET_MAX);
        return;
    }
}

/* ---- loading */

/* A key pair as parsed, with the line that set it (for duplicate messages). */
struct pending_key {
    char *id;
    char *secret;
    int line;
};

struct load {
    FILE *file;
    char *buf;                   /* getline buffer */
    size_t buf_cap;
    int lineno;                  /* line last handed to inih */
    bool indented;               /* that line starts with whitespace */
    bool key_in_section;         /* a key was seen since the last [section] */
    struct smq_config *cfg;      /* being filled */
    int seen[N_SETTINGS];        /* line that set each row; 0 = not set */
    char *first_id, *first_secret;
    struct pending_key *extra;   /* key.<ID> pairs */
    struct smq_queue_decl *decl; /* the [queue.NAME] section being read, or NULL */
    size_t n_extra, cap_extra;
    int err_line;                /* first error: 0 none, -1 error without a line */
    char msg[768];
};

/* Records the first error; always returns -1 so callers can `return fail(...)`. */
__attribute__((format(printf, 3, 4)))
static int fail(struct load *ld, int line, const char *fmt, ...)
{
    va_list ap;

    if (ld->err_line != 0)
        return -1;
    ld->err_line = line;
    va_start(ap, fmt);
    vsnprintf(ld->msg, sizeof(ld->msg), fmt, ap);
    va_end(ap);
    return -1;
}

/* "[section] key = "value": problem (allowed: ...)"; secrets are not echoed. */
static int fail_value(struct load *ld, const struct setting *s, const char *name,
                      const char *value, const char *why)
{
    char allowed[160];

    describe_allowed(s, allowed, sizeof(allowed));
    if (s->type == OPT_SECRET || s->type == OPT_KEY_PAIR || s->type == OPT_TOKEN)
        return fail(ld, ld->lineno, "[%s] %s: %s (allowed: %s)", s->section, name, why, allowed);
    return fail(ld, ld->lineno, "[%s] %s = \"%s\": %s (allowed: %s)", s->section, name, value,
                why, allowed);
}

static bool is_known_section(const char *name, size_t len)
{
    for (size_t i = 0; i < N_SETTINGS; i++) {
        if (strlen(settings[i].section) == len && memcmp(settings[i].section, name, len) == 0)
            return true;
    }
    return false;
}

static const struct setting *find_setting(const char *section, const char *name)
{
    for (size_t i = 0; i < N_SETTINGS; i++) {
        const struct setting *s = &settings[i];
        if (strcmp(s->section, section) != 0)
            continue;
        if (s->type == OPT_KEY_PAIR ? strncmp(name, s->key, strlen(s->key)) == 0
                                    : strcmp(name, s->key) == 0)
            return s;
    }
    return NULL;
}

static void list_keys(const char *section, char *buf, size_t size)
{
    size_t used = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < N_SETTINGS && used < size; i++) {
        if (strcmp(settings[i].section, section) != 0)
            continue;
        used += (size_t)snprintf(buf + used, size - used, "%s%s%s", used ? ", " : "",
                                 settings[i].key,
                                 settings[i].type == OPT_KEY_PAIR ? "<ID>" : "");
    }
}

/* ---- [queue.NAME] sections -------------------------------------------- */

#define QUEUE_SECTION "queue."

static bool is_queue_section(const char *name, size_t len)
{
    return len >= strlen(QUEUE_SECTION) && memcmp(name, QUEUE_SECTION, strlen(QUEUE_SECTION)) == 0;
}

/* The API's queue-name rule (qname.h); NULL or the problem. */
static const char *check_queue_name(const char *name, size_t len)
{
    enum qname_problem p = qname_check(name, len);

    return p == QNAME_OK ? NULL : qname_problem_text(p);
}

/* A new [queue.NAME] header: every queue at most once. */
static int add_queue_decl(struct load *ld, const char *name, size_t len)
{
    struct smq_config *cfg = ld->cfg;
    const char *why = check_queue_name(name, len);
    struct smq_queue_decl *d;

    if (why != NULL)
        return fail(ld, ld->lineno, "[queue.%.*s]: %s", (int)len, name, why);
    for (size_t i = 0; i < cfg->n_queues; i++)
        if (strlen(cfg->queues[i].name) == len && memcmp(cfg->queues[i].name, name, len) == 0)
            return fail(ld, ld->lineno, "[queue.%.*s]: duplicate section (first on line %d)",
                        (int)len, name, cfg->queues[i].line);
    if (cfg->n_queues == SMQ_CONFIG_QUEUES_MAX)
        return fail(ld, ld->lineno, "more than %d [queue.NAME] sections", SMQ_CONFIG_QUEUES_MAX);
    d = realloc(cfg->queues, (cfg->n_queues + 1) * sizeof *d);
    if (d == NULL)
        return fail(ld, ld->lineno, "out of memory");
    cfg->queues = d;
    d = &cfg->queues[cfg->n_queues++];
    memset(d, 0, sizeof *d);
    memcpy(d->name, name, len);
    d->line = ld->lineno;
    ld->decl = d;
    return 0;
}

static int apply_queue_key(struct load *ld, struct smq_queue_decl *d, const char *name,
                           const char *value)
{
    long long n;
    const char *why;

    if (strcmp(name, "dlq_target") == 0) {
        if (d->target_line != 0)
            return fail(ld, ld->lineno, "[queue.%s] dlq_target: duplicate key (first set on "
                        "line %d)", d->name, d->target_line);
        d->target_line = ld->lineno;
        if ((why = check_queue_name(value, strlen(value))) != NULL)
            return fail(ld, ld->lineno, "[queue.%s] dlq_target = \"%s\": %s", d->name, value, why);
        if (strcmp(value, d->name) == 0)
            return fail(ld, ld->lineno, "[queue.%s] dlq_target: a queue cannot be its own "
                        "dead-letter queue", d->name);
        memcpy(d->dlq_target, value, strlen(value) + 1);
        return 0;
    }
    if (strcmp(name, "dlq_max_receive_count") == 0) {
        if (d->count_line != 0)
            return fail(ld, ld->lineno, "[queue.%s] dlq_max_receive_count: duplicate key "
                        "(first set on line %d)", d->name, d->count_line);
        d->count_line = ld->lineno;
        if ((why = parse_ll(value, SMQ_DLQ_MAX_RECEIVE_MIN, SMQ_DLQ_MAX_RECEIVE_MAX, &n)) != NULL)
            return fail(ld, ld->lineno, "[queue.%s] dlq_max_receive_count = \"%s\": %s "
                        "(allowed: %d..%d)", d->name, value, why, SMQ_DLQ_MAX_RECEIVE_MIN,
                        SMQ_DLQ_MAX_RECEIVE_MAX);
        d->dlq_max_receive_count = (int)n;
        return 0;
    }
    return fail(ld, ld->lineno, "[queue.%s] unknown key \"%s\" (known: dlq_target, "
                "dlq_max_receive_count)", d->name, name);
}

/* A target without a count (or the reverse) is half a policy. */
static int check_queue_decls(struct load *ld)
{
    for (size_t i = 0; i < ld->cfg->n_queues; i++) {
        const struct smq_queue_decl *d = &ld->cfg->queues[i];
        if ((d->dlq_target[0] != '\0') != (d->dlq_max_receive_count != 0))
            return fail(ld, d->line, "[queue.%s]: dlq_target and dlq_max_receive_count go "
                        "together", d->name);
    }
    return 0;
}

/* Checks a "[name]" header line before inih sees it; inih would accept any name. */
static int check_section_line(struct load *ld, const char *p)
{
    const char *close;

    /* inih reads an indented line after a key as a continuation, not a
     * header; apply() rejects that case. */
    if (ld->indented && ld->key_in_section)
        return 0;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p != '[')
        return 0;
    close = strchr(p, ']');
    if (close == NULL)
        return 0;   /* inih reports it as a syntax error */
    ld->key_in_section = false;
    ld->decl = NULL;
    if (is_queue_section(p + 1, (size_t)(close - p - 1)))
        return add_queue_decl(ld, p + 1 + strlen(QUEUE_SECTION), (size_t)(close - p - 1)
                                  - strlen(QUEUE_SECTION));
    if (!is_known_section(p + 1, (size_t)(close - p - 1)))
        return fail(ld, ld->lineno, "unknown section [%.*s] (known: %s, queue.<NAME>)",
                    (int)(close - p - 1), p + 1, known_sections);
    return 0;
}

/*
 * The ini_reader: hands inih exactly one whole line per call (so its line
 * numbers match ours) and stops the parse, by returning NULL, at the first
 * error.  Line ends are normalised to "\n".
 */
static char *read_line(char *str, int num, void *stream)
{
    struct load *ld = stream;
    char *line;
    ssize_t len;
    size_t body;

    if (ld->err_line != 0)
        return NULL;
    errno = 0;
    len = getline(&ld->buf, &ld->buf_cap, ld->file);
    if (len < 0) {
        if (ferror(ld->file))
            fail(ld, -1, "cannot read: %s", strerror(errno ? errno : EIO));
        return NULL;
    }
    ld->lineno++;
    line = ld->buf;
    body = (size_t)len;
    if (ld->lineno == 1 && body >= 3 && memcmp(line, "\xEF\xBB\xBF", 3) == 0) {
        line += 3;   /* UTF-8 byte order mark */
        body -= 3;
    }
    while (body > 0 && (line[body - 1] == '\n' || line[body - 1] == '\r'))
        body--;
    if (memchr(line, '\0', body) != NULL) {
        fail(ld, ld->lineno, "line contains a NUL byte");
        return NULL;
    }
    /* inih's buffer must hold the line, "\n" and NUL; a longer line would
     * reach the handler as two lines. */
    if (num < 3 || body > (size_t)num - 2) {
        fail(ld, ld->lineno, "line too long (more than %d characters)", num - 2);
        return NULL;
    }
    line[body] = '\0';
    ld->indented = line[0] == ' ' || line[0] == '\t';
    if (check_section_line(ld, line) < 0)
        return NULL;
    memcpy(str, line, body);
    str[body] = '\n';
    str[body + 1] = '\0';
    return str;
}

/* The row of the one setting of this type (used for the [auth] rows). */
static size_t row_of(enum opt_type type)
{
    size_t i = 0;

    while (i < N_SETTINGS && settings[i].type != type)
        i++;
    return i;
}

static int add_extra_key(struct load *ld, const struct setting *s, const char *name,
                         const char *value)
{
    const char *id = name + strlen(s->key);
    const char *why = check_key_id(id);
    struct pending_key *k;

    if (why != NULL)
        return fail_value(ld, s, name, value, why);
    why = check_secret(value);
    if (why != NULL)   /* described, and kept out of the message, as a secret */
        return fail_value(ld, &settings[row_of(OPT_SECRET)], name, value, why);
    for (size_t i = 0; i < ld->n_extra; i++) {
        if (strcmp(ld->extra[i].id, id) == 0)
            return fail(ld, ld->lineno, "[auth] %s: duplicate access key id \"%s\" "
                        "(first set on line %d)", name, id, ld->extra[i].line);
    }
    if (ld->n_extra == ld->cap_extra) {
        size_t cap = ld->cap_extra ? 2 * ld->cap_extra : 4;
        struct pending_key *grown = realloc(ld->extra, cap * sizeof(*grown));
        if (grown == NULL)
            return fail(ld, ld->lineno, "out of memory");
        ld->extra = grown;
        ld->cap_extra = cap;
    }
    k = &ld->extra[ld->n_extra];
    k->id = strdup(id);
    k->secret = strdup(value);
    k->line = ld->lineno;
    if (k->id == NULL || k->secret == NULL) {
        free(k->id);
        free(k->secret);
        return fail(ld, ld->lineno, "out of memory");
    }
    ld->n_extra++;
    return 0;
}

/* access_key_id / access_key_secret: kept aside until the end of the file. */
static int set_first_key(struct load *ld, const struct setting *s, const char *value)
{
    bool is_id = s->type == OPT_KEY_ID;
    const char *why = is_id ? check_key_id(value) : check_secret(value);
    char **slot = is_id ? &ld->first_id : &ld->first_secret;

    if (why != NULL)
        return fail_value(ld, s, s->key, value, why);
    *slot = strdup(value);
    if (*slot == NULL)
        return fail(ld, ld->lineno, "out of memory");
    return 0;
}

static int apply(struct load *ld, const char *section, const char *name, const char *value)
{
    const struct setting *s;
    char known[256];
    size_t row;
    const char *why;

    /* inih treats an indented line after a key as more of that key's value
     * (Python configparser style); that is never what a smqd user means. */
    if (ld->indented && ld->key_in_section)
        return fail(ld, ld->lineno, "indented line would continue the previous value; "
                    "remove the leading whitespace");
    if (section[0] == '\0')
        return fail(ld, ld->lineno, "key \"%s\" is outside any [section] (sections: %s)",
                    name, known_sections);
    if (ld->decl != NULL)
        return apply_queue_key(ld, ld->decl, name, value);
    s = find_setting(section, name);
    if (s == NULL) {
        list_keys(section, known, sizeof(known));
        return fail(ld, ld->lineno, "[%s] unknown key \"%s\" (known: %s)", section, name, known);
    }
    if (s->type == OPT_KEY_PAIR)
        return add_extra_key(ld, s, name, value);
    row = (size_t)(s - settings);
    if (ld->seen[row] != 0)
        return fail(ld, ld->lineno, "[%s] %s: duplicate key (first set on line %d)", section,
                    name, ld->seen[row]);
    ld->seen[row] = ld->lineno;
    if (s->type == OPT_KEY_ID || s->type == OPT_SECRET)
        return set_first_key(ld, s, value);
    why = parse_field(ld->cfg, s, value);
    return why == NULL ? 0 : fail_value(ld, s, name, value, why);
}

/* The ini_handler: nonzero means "ok" to inih. */
static int on_pair(void *user, const char *section, const char *name, const char *value)
{
    struct load *ld = user;
    int rc = apply(ld, section, name, value);

    ld->key_in_section = true;
    return rc == 0;
}

/* Checks the first pair and moves all pairs into cfg->keys. */
static int assemble_keys(struct load *ld)
{
    int id_line = ld->seen[row_of(OPT_KEY_ID)];
    int secret_line = ld->seen[row_of(OPT_SECRET)];
    size_t n = ld->n_extra + (ld->first_id != NULL);
    struct auth_key *keys;
    size_t at = 0;

    if (id_line != 0 && secret_line == 0)
        return fail(ld, id_line, "[auth] access_key_id is set but access_key_secret is missing");
    if (secret_line != 0 && id_line == 0)
        return fail(ld, secret_line, "[auth] access_key_secret is set but access_key_id is missing");
    if (n == 0)
        return fail(ld, -1, "no access key configured ([auth] access_key_id and access_key_secret)");
    for (size_t i = 0; ld->first_id != NULL && i < ld->n_extra; i++) {
        if (strcmp(ld->extra[i].id, ld->first_id) == 0) {
            int later = ld->extra[i].line > id_line ? ld->extra[i].line : id_line;
            int earlier = ld->extra[i].line > id_line ? id_line : ld->extra[i].line;
            return fail(ld, later, "[auth] duplicate access key id \"%s\" (first set on line %d)",
                        ld->first_id, earlier);
        }
    }
    keys = calloc(n, sizeof(*keys));
    if (keys == NULL)
        return fail(ld, -1, "out of memory");
    if (ld->first_id != NULL) {
        keys[at++] = (struct auth_key){ld->first_id, ld->first_secret};
        ld->first_id = ld->first_secret = NULL;
    }
    for (size_t i = 0; i < ld->n_extra; i++)
        keys[at++] = (struct auth_key){ld->extra[i].id, ld->extra[i].secret};
    ld->n_extra = 0;   /* ownership moved */
    ld->cfg->keys.keys = keys;
    ld->cfg->keys.n = n;
    return 0;
}

/* Secrets are overwritten before they go back to the allocator. */
static void free_secret(char *secret)
{
    if (secret == NULL)
        return;
    explicit_bzero(secret, strlen(secret));
    free(secret);
}

static void load_free(struct load *ld)
{
    for (size_t i = 0; i < ld->n_extra; i++) {
        free(ld->extra[i].id);
        free_secret(ld->extra[i].secret);
    }
    free(ld->extra);
    free(ld->first_id);
    free_secret(ld->first_secret);
    if (ld->buf != NULL)
        explicit_bzero(ld->buf, ld->buf_cap);   /* it held secret lines */
    free(ld->buf);
    if (ld->file != NULL)
        fclose(ld->file);
}

/* Formats into err; a cut message ends in "..." so a reader can tell. */
__attribute__((format(printf, 3, 4)))
static void set_err(char *err, size_t size, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (err == NULL || size == 0)
        return;
    va_start(ap, fmt);
    n = vsnprintf(err, size, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n >= size && size > 4)
        memcpy(err + size - 4, "...", 4);
}

/* Whether two listen hosts can clash on one port: the same address (as
 * the listeners will bind it, however it is spelled), or a wildcard of the
 * same family.  The families never clash: smqd's IPv6 sockets are IPv6-only
 * (libmicrohttpd without MHD_USE_DUAL_STACK). */
static bool hosts_clash(const char *a, const char *b)
{
    struct sockaddr_storage sa, sb;
    bool v6a, v6b;

    if (netaddr_make(a, 0, &sa, &v6a) != 0 || netaddr_make(b, 0, &sb, &v6b) != 0 || v6a != v6b)
        return false;
    if (v6a) {
        const struct in6_addr *x = &((struct sockaddr_in6 *)&sa)->sin6_addr;
        const struct in6_addr *y = &((struct sockaddr_in6 *)&sb)->sin6_addr;

        return IN6_ARE_ADDR_EQUAL(x, y) || IN6_IS_ADDR_UNSPECIFIED(x) || IN6_IS_ADDR_UNSPECIFIED(y);
    }
    in_addr_t x = ((struct sockaddr_in *)&sa)->sin_addr.s_addr;
    in_addr_t y = ((struct sockaddr_in *)&sb)->sin_addr.s_addr;

    return x == y || x == htonl(INADDR_ANY) || y == htonl(INADDR_ANY);
}

/* The admin and the MNS listener on one address cannot both be bound:
 * smqd would exit 3 at every start, and a supervisor restart it in a loop. */
static int check_listeners(struct load *ld)
{
    const struct smq_config *c = ld->cfg;
    int line = ld->seen[row_of(OPT_ADMIN_LISTEN)];

    if (!c->admin_enabled || c->admin_port == 0 || c->admin_port != c->listen_port
        || !hosts_clash(c->admin_host, c->listen_host))
        return 0;
    return fail(ld, line != 0 ? line : ld->seen[row_of(OPT_LISTEN)],
                "[admin] listen: port %u is also [server] listen's; give the admin listener "
                "another port, or write off", (unsigned)c->admin_port);
}

/* Turns inih's result and our first error into one message. */
static int finish_parse(struct load *ld, int ini_rc)
{
    if (ini_rc == -2)
        return fail(ld, -1, "out of memory");
    /* inih returns the first failing line; if it is before ours (or we have
     * none), that line had no '=' or an unclosed '['. */
    if (ini_rc > 0 && (ld->err_line == 0 || ld->err_line == -1 || ini_rc < ld->err_line)) {
        ld->err_line = 0;
        return fail(ld, ini_rc, "syntax error (expected \"key = value\", \"[section]\" "
                    "or a # comment)");
    }
    return ld->err_line != 0 ? -1 : 0;
}

int config_load(const char *path, struct smq_config *cfg, char *err, size_t err_size)
{
    struct smq_config tmp;
    struct load ld = {.cfg = &tmp};
    int rc = -1;

    config_defaults(cfg);
    config_defaults(&tmp);
    ld.file = fopen(path, "r");
    if (ld.file == NULL) {
        set_err(err, err_size, "%s: cannot open: %s", path, strerror(errno));
        goto out;
    }
    if (finish_parse(&ld, ini_parse_stream(read_line, &ld, on_pair, &ld)) < 0 ||
        assemble_keys(&ld) < 0 || check_queue_decls(&ld) < 0 || check_listeners(&ld) < 0) {
        if (ld.err_line > 0)
            set_err(err, err_size, "%s:%d: %s", path, ld.err_line, ld.msg);
        else
            set_err(err, err_size, "%s: %s", path, ld.msg);
        goto out;
    }
    *cfg = tmp;
    tmp.keys = (struct auth_keyring){NULL, 0};
    tmp.queues = NULL;
    tmp.n_queues = 0;
    rc = 0;
out:
    load_free(&ld);
    config_free(&tmp);
    return rc;
}

void config_defaults(struct smq_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    for (size_t i = 0; i < N_SETTINGS; i++) {
        const struct setting *s = &settings[i];
        if (s->def == NULL)
            continue;
        /* A default that fails its own row is a bug in the table; the unit
         * tests load the defaults, so this cannot reach a release. */
        if (parse_field(cfg, s, s->def) != NULL) {
            fprintf(stderr, "smqd: bad default for [%s] %s\n", s->section, s->key);
            abort();
        }
    }
}

void config_free(struct smq_config *cfg)
{
    for (size_t i = 0; i < cfg->keys.n; i++) {
        free(cfg->keys.keys[i].id);
        free_secret(cfg->keys.keys[i].secret);
    }
    free(cfg->keys.keys);
    cfg->keys.keys = NULL;
    cfg->keys.n = 0;
    free(cfg->queues);
    cfg->queues = NULL;
    cfg->n_queues = 0;
}

/* ---- printing */

static void print_field(const struct smq_config *cfg, const struct setting *s, FILE *out)
{
    const char *field = (const char *)cfg + s->offset;

    switch (s->type) {
    case OPT_INT:
        fprintf(out, "%s = %d\n", s->key, *(const int *)(const void *)field);
        return;
    case OPT_BOOL:
        fprintf(out, "%s = %s\n", s->key, *(const bool *)(const void *)field ? "true" : "false");
        return;
    case OPT_ENUM:
        fprintf(out, "%s = %s\n", s->key, s->names[*(const int *)(const void *)field]);
        return;
    case OPT_PATH:
        fprintf(out, "%s = %s\n", s->key, field[0] ? field : "-");
        return;
    case OPT_LISTEN:
        fprintf(out, strchr(cfg->listen_host, ':') ? "%s = [%s]:%u\n" : "%s = %s:%u\n", s->key,
                cfg->listen_host, (unsigned)cfg->listen_port);
        return;
    case OPT_ADMIN_LISTEN:
        if (!cfg->admin_enabled)
            fprintf(out, "%s = off\n", s->key);
        else
            fprintf(out, strchr(cfg->admin_host, ':') ? "%s = [%s]:%u\n" : "%s = %s:%u\n",
                    s->key, cfg->admin_host, (unsigned)cfg->admin_port);
        return;
    case OPT_TOKEN:
        fprintf(out, field[0] ? "%s = " SMQ_CONFIG_SECRET_MASK "\n" : "# %s = (not set)\n",
                s->key);
        return;
    default:
        return;
    }
}

/* "# doc (1..64, default 2)": what `smqd -t` shows instead of a man page. */
static void print_doc(const struct setting *s, FILE *out)
{
    char allowed[160];

    describe_allowed(s, allowed, sizeof(allowed));
    if (s->type == OPT_INT || s->type == OPT_ENUM)
        fprintf(out, "# %s (%s; default %s)\n", s->doc, allowed, s->def);
    else if (s->def != NULL)
        fprintf(out, "# %s (default %s)\n", s->doc, s->def);
    else
        fprintf(out, "# %s\n", s->doc);
}

/* The key ring: keys[0] as the first pair, the rest as key.<ID> lines. */
static void print_auth(const struct smq_config *cfg, const struct setting *s, FILE *out)
{
    const struct auth_keyring *ring = &cfg->keys;

    switch (s->type) {
    case OPT_KEY_ID:
        if (ring->n == 0)
            fprintf(out, "# %s = (not set)\n", s->key);
        else
            fprintf(out, "%s = %s\n", s->key, ring->keys[0].id);
        return;
    case OPT_SECRET:
        fprintf(out, ring->n == 0 ? "# %s = (not set)\n" : "%s = " SMQ_CONFIG_SECRET_MASK "\n",
                s->key);
        return;
    case OPT_KEY_PAIR:
        for (size_t i = 1; i < ring->n; i++)
            fprintf(out, "%s%s = " SMQ_CONFIG_SECRET_MASK "\n", s->key, ring->keys[i].id);
        return;
    default:
        return;
    }
}

void config_print(const struct smq_config *cfg, FILE *out)
{
    const char *section = "";

    fprintf(out, "# smqd effective configuration; secrets are shown as %s\n",
            SMQ_CONFIG_SECRET_MASK);
    for (size_t i = 0; i < N_SETTINGS; i++) {
        const struct setting *s = &settings[i];
        if (strcmp(section, s->section) != 0) {
            section = s->section;
            fprintf(out, "\n[%s]\n", section);
        }
        print_doc(s, out);
        if (s->type == OPT_KEY_ID || s->type == OPT_SECRET || s->type == OPT_KEY_PAIR)
            print_auth(cfg, s, out);
        else
            print_field(cfg, s, out);
    }
    for (size_t i = 0; i < cfg->n_queues; i++) {
        const struct smq_queue_decl *d = &cfg->queues[i];
        fprintf(out, "\n[queue.%s]\n", d->name);
        if (d->dlq_target[0] != '\0')
            fprintf(out, "dlq_target = %s\ndlq_max_receive_count = %d\n", d->dlq_target,
                    d->dlq_max_receive_count);
    }
}
