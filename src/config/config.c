/*
 * config.c — owns loading smqd's settings (config.h): the INI reader built
 * on libinih, the key ring, the [queue.NAME] sections, the checks that need
 * the whole file, the defaults and freeing.  The table of settings and the
 * rules of each value are config_table.c's; printing is config_print.c's.
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
 * The [grant.KEY] sections (config_grant.c) are attached to the ring after
 * that, since a grant may come before the key it names.
 * Secrets never appear in error messages.
 */
#include "config_table.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ini.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "smqd/mns.h"
#include "smqd/netaddr.h"

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
    int seen[CONFIG_MAX_SETTINGS];        /* line that set each row; 0 = not set */
    char *first_id, *first_secret;
    struct pending_key *extra;   /* key.<ID> pairs */
    struct smq_queue_decl *decl; /* the [queue.NAME] section being read, or NULL */
    struct grant_decls grants;   /* the [grant.KEY] sections */
    size_t n_extra, cap_extra;
    int err_line;                /* first error: 0 none, -1 error without a line */
    char msg[768];
};

/* Records the first error; always returns SMQ_E_INVALID_ARGUMENT so that
 * callers can `return fail(...)`. */
__attribute__((format(printf, 3, 4)))
static int fail(struct load *ld, int line, const char *fmt, ...)
{
    va_list ap;

    if (ld->err_line != 0)
        return SMQ_E_INVALID_ARGUMENT;
    ld->err_line = line;
    va_start(ap, fmt);
    vsnprintf(ld->msg, sizeof(ld->msg), fmt, ap);
    va_end(ap);
    return SMQ_E_INVALID_ARGUMENT;
}

/* "[section] key = "value": problem (allowed: ...)"; secrets are not echoed. */
static int fail_value(struct load *ld, const struct setting *s, const char *name,
                      const char *value, const char *why)
{
    char allowed[160];

    config_table_describe(s, allowed, sizeof(allowed));
    if (s->type == OPT_SECRET || s->type == OPT_KEY_PAIR || s->type == OPT_TOKEN
        || s->type == OPT_DSN)
        return fail(ld, ld->lineno, "[%s] %s: %s (allowed: %s)", s->section, name, why, allowed);
    return fail(ld, ld->lineno, "[%s] %s = \"%s\": %s (allowed: %s)", s->section, name, value,
                why, allowed);
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
        if ((why = config_table_parse_int(value, SMQ_DLQ_MAX_RECEIVE_MIN, SMQ_DLQ_MAX_RECEIVE_MAX, &n)) != NULL)
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

/* ---- [grant.KEY] sections: config_grant.c's, with this file's errors ---------- */

static int begin_grant(struct load *ld, const char *name, size_t len)
{
    char why[sizeof ld->msg];

    if (config_grant_begin(&ld->grants, name, len, ld->lineno, why, sizeof why) != 0)
        return fail(ld, ld->lineno, "%s", why);
    return 0;
}

static int apply_grant_key(struct load *ld, const char *name, const char *value)
{
    char why[sizeof ld->msg];

    if (config_grant_apply(&ld->grants, name, value, ld->lineno, why, sizeof why) != 0)
        return fail(ld, ld->lineno, "%s", why);
    return 0;
}

static int attach_grants(struct load *ld)
{
    char why[sizeof ld->msg];
    int line;

    if (config_grant_attach(&ld->grants, &ld->cfg->keys, &line, why, sizeof why) != 0)
        return fail(ld, line, "%s", why);
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
    ld->grants.open = false;
    if (config_grant_is_section(p + 1, (size_t)(close - p - 1)))
        return begin_grant(ld, p + 1, (size_t)(close - p - 1));
    if (is_queue_section(p + 1, (size_t)(close - p - 1)))
        return add_queue_decl(ld, p + 1 + strlen(QUEUE_SECTION), (size_t)(close - p - 1)
                                  - strlen(QUEUE_SECTION));
    if (!config_table_section_known(p + 1, (size_t)(close - p - 1)))
        return fail(ld, ld->lineno, "unknown section [%.*s] (known: %s, queue.<NAME>, "
                    "grant.<ACCESS_KEY_ID>)",
                    (int)(close - p - 1), p + 1, CONFIG_KNOWN_SECTIONS);
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
    if (check_section_line(ld, line) != 0)
        return NULL;
    memcpy(str, line, body);
    str[body] = '\n';
    str[body + 1] = '\0';
    return str;
}


static int add_extra_key(struct load *ld, const struct setting *s, const char *name,
                         const char *value)
{
    const char *id = name + strlen(s->key);
    const char *why = config_table_check_key_id(id);
    struct pending_key *k;

    if (why != NULL)
        return fail_value(ld, s, name, value, why);
    why = config_table_check_secret(value);
    if (why != NULL)   /* described, and kept out of the message, as a secret */
        return fail_value(ld, &config_settings[config_table_row(OPT_SECRET)], name, value, why);
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
    const char *why = is_id ? config_table_check_key_id(value) : config_table_check_secret(value);
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
                    name, CONFIG_KNOWN_SECTIONS);
    if (ld->decl != NULL)
        return apply_queue_key(ld, ld->decl, name, value);
    if (ld->grants.open)
        return apply_grant_key(ld, name, value);
    s = config_table_find(section, name);
    if (s == NULL) {
        config_table_keys(section, known, sizeof(known));
        return fail(ld, ld->lineno, "[%s] unknown key \"%s\" (known: %s)", section, name, known);
    }
    if (s->type == OPT_KEY_PAIR)
        return add_extra_key(ld, s, name, value);
    row = (size_t)(s - config_settings);
    if (ld->seen[row] != 0)
        return fail(ld, ld->lineno, "[%s] %s: duplicate key (first set on line %d)", section,
                    name, ld->seen[row]);
    ld->seen[row] = ld->lineno;
    if (s->type == OPT_KEY_ID || s->type == OPT_SECRET)
        return set_first_key(ld, s, value);
    why = config_table_parse(ld->cfg, s, value);
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
    int id_line = ld->seen[config_table_row(OPT_KEY_ID)];
    int secret_line = ld->seen[config_table_row(OPT_SECRET)];
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
        keys[at++] = (struct auth_key){ld->first_id, ld->first_secret, NULL};
        ld->first_id = ld->first_secret = NULL;
    }
    for (size_t i = 0; i < ld->n_extra; i++)
        keys[at++] = (struct auth_key){ld->extra[i].id, ld->extra[i].secret, NULL};
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
    config_grant_decls_free(&ld->grants);
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
    int line = ld->seen[config_table_row(OPT_ADMIN_LISTEN)];

    if (!c->admin_enabled || c->admin_port == 0 || c->admin_port != c->listen_port
        || !hosts_clash(c->admin_host, c->listen_host))
        return 0;
    return fail(ld, line != 0 ? line : ld->seen[config_table_row(OPT_LISTEN)],
                "[admin] listen: port %u is also [server] listen's; give the admin listener "
                "another port, or write off", (unsigned)c->admin_port);
}

static bool is_loopback(const char *host)
{
    struct sockaddr_storage ss;
    bool v6;

    if (netaddr_make(host, 0, &ss, &v6) != 0)
        return false;
    if (v6)
        return IN6_IS_ADDR_LOOPBACK(&((struct sockaddr_in6 *)&ss)->sin6_addr);
    return (ntohl(((struct sockaddr_in *)&ss)->sin_addr.s_addr) >> 24) == 127;
}

/* The admin API can peek at and purge every queue: beyond this host it
 * needs a token (docs/admin-api.md). */
static int check_admin_exposure(struct load *ld)
{
    const struct smq_config *c = ld->cfg;
    int line = ld->seen[config_table_row(OPT_ADMIN_LISTEN)];

    if (!c->admin_enabled || c->admin_token[0] != '\0' || is_loopback(c->admin_host))
        return 0;
    return fail(ld, line, "[admin] listen: %s%s%s is reachable from other hosts and [admin] "
                "token is not set: anyone who reaches it could read and purge every queue; set "
                "a token, or listen on 127.0.0.1", strchr(c->admin_host, ':') ? "[" : "",
                c->admin_host, strchr(c->admin_host, ':') ? "]" : "");
}

/* [admin] read_token's rule against token (config_table.c), at its line. */
static int check_read_token(struct load *ld)
{
    const char *why = config_table_check_read_token(ld->cfg);
    const struct setting *row = config_table_find("admin", "read_token");

    return why == NULL ? 0 : fail(ld, ld->seen[row - config_settings], "%s", why);
}

/* The line that set [section] key, 0 if the file did not. */
static int seen_line(const struct load *ld, const char *section, const char *key)
{
    return ld->seen[config_table_find(section, key) - config_settings];
}

/* backend = postgresql needs where (dsn) and who (node_id), and has no use
 * for the SQLite file's keys; backend = sqlite has none for the cluster's. */
static int check_backend(struct load *ld)
{
    static const char *const sqlite_only[] = {"path", "sync", "reserve_mb"};
    const struct smq_config *c = ld->cfg;

    if (c->storage_backend == SMQ_STORE_SQLITE) {   /* the sample spells both empty */
        if (c->storage_dsn[0] != '\0')
            return fail(ld, seen_line(ld, "storage", "dsn"), "[storage] dsn needs [storage] "
                        "backend = postgresql");
        if (c->cluster_node_id[0] != '\0')
            return fail(ld, seen_line(ld, "cluster", "node_id"), "[cluster] node_id needs "
                        "[storage] backend = postgresql");
        return 0;
    }
    for (size_t i = 0; i < sizeof sqlite_only / sizeof sqlite_only[0]; i++)
        if (seen_line(ld, "storage", sqlite_only[i]) != 0)
            return fail(ld, seen_line(ld, "storage", sqlite_only[i]), "[storage] %s is "
                        "SQLite-only: remove it with backend = postgresql", sqlite_only[i]);
    if (c->storage_dsn[0] == '\0')
        return fail(ld, seen_line(ld, "storage", "backend"), "[storage] backend = postgresql "
                    "needs [storage] dsn (a libpq connection string)");
    if (c->cluster_node_id[0] == '\0')
        return fail(ld, seen_line(ld, "storage", "backend"), "[storage] backend = postgresql "
                    "needs [cluster] node_id (a name unique to this node)");
    return 0;
}

/* A certificate without its key (or the reverse) is a half-made change. */
static int check_pair(struct load *ld, const char *section, const char *cert_key,
                      const char *cert, const char *key_key, const char *key)
{
    if ((cert[0] == '\0') == (key[0] == '\0'))
        return 0;
    return fail(ld, -1, "[%s] %s is set but %s is not: give both (PEM files) or neither",
                section, cert[0] ? cert_key : key_key, cert[0] ? key_key : cert_key);
}

static int check_tls(struct load *ld)
{
    const struct smq_config *c = ld->cfg;

    if (check_pair(ld, "server", "tls_cert_file", c->tls_cert_file, "tls_key_file",
                   c->tls_key_file) != 0
        || check_pair(ld, "admin", "tls_cert_file", c->admin_tls_cert_file, "tls_key_file",
                      c->admin_tls_key_file) != 0)
        return SMQ_E_INVALID_ARGUMENT;
    return check_pair(ld, "topics", "signing_cert_file", c->topics_signing_cert_file,
                      "signing_key_file", c->topics_signing_key_file);
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
    return ld->err_line != 0 ? SMQ_E_INVALID_ARGUMENT : 0;
}

int config_load(const char *path, struct smq_config *cfg, char *err, size_t err_size)
{
    struct smq_config tmp;
    struct load ld = {.cfg = &tmp};
    int rc = SMQ_E_INVALID_ARGUMENT;

    config_defaults(cfg);
    config_defaults(&tmp);
    ld.file = fopen(path, "r");
    if (ld.file == NULL) {
        set_err(err, err_size, "%s: cannot open: %s", path, strerror(errno));
        goto out;
    }
    if (finish_parse(&ld, ini_parse_stream(read_line, &ld, on_pair, &ld)) != 0
        || assemble_keys(&ld) != 0 || attach_grants(&ld) != 0 || check_queue_decls(&ld) != 0
        || check_listeners(&ld) != 0 || check_admin_exposure(&ld) != 0
        || check_read_token(&ld) != 0 || check_tls(&ld) != 0 || check_backend(&ld) != 0) {
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
    for (size_t i = 0; i < config_n_settings; i++) {
        const struct setting *s = &config_settings[i];
        if (s->def == NULL)
            continue;
        /* A default that fails its own row is a bug in the table; the unit
         * tests load the defaults, so this cannot reach a release. */
        if (config_table_parse(cfg, s, s->def) != NULL) {
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
        grant_set_free(cfg->keys.keys[i].grants);
        free(cfg->keys.keys[i].grants);
    }
    free(cfg->keys.keys);
    cfg->keys.keys = NULL;
    cfg->keys.n = 0;
    free(cfg->queues);
    cfg->queues = NULL;
    cfg->n_queues = 0;
}
