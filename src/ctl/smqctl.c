/*
 * smqctl.c — the operators' command-line tool for smqd: command line,
 * where the admin listener and the database are, one function per command.
 * The admin API (docs/admin-api.md) does the queue and topic work; backup and check
 * read the database directly (ctl_db.c).  Usage and exit codes: usage()
 * below and docs/operations.md.
 */
#include <getopt.h>
#include <stdbool.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl_db.h"
#include "ctl_http.h"
#include "ctl_json.h"
#include "ctl_migrate.h"
#include "ctl_print.h"
#include "smqd/config.h"
#include "smqd/errors.h"
#include "smqd/mns.h"
#include "smqd/strnum.h"

enum exit_code {
    EXIT_OK = 0,
    EXIT_USAGE = 1,        /* bad command line, or a refused confirmation */
    EXIT_FAILED = 2        /* the server or the database said no, or is unreachable */
};

#define DEFAULT_ADMIN "http://127.0.0.1:8081"
#define TOKEN_ENV "SMQD_ADMIN_TOKEN"

struct ctl {
    const char *addr;                /* -a */
    const char *token;               /* -T, $SMQD_ADMIN_TOKEN or [admin] token */
    const char *config_path;         /* -c */
    const char *db_path;             /* --db */
    const char *dsn;                 /* --dsn: migrate's destination */
    bool json, yes;
    const char *purge_type;          /* normal, dlq, both */
    const char *rate, *max;          /* redrive */
    struct smq_config cfg;
    bool cfg_loaded;
    char addr_buf[300];
    struct ctl_target target;
};

static void usage(FILE *out)
{
    fprintf(out,
        "usage: smqctl [-a URL] [-T TOKEN] [-c smqd.conf] [--json] COMMAND [ARGS]\n"
        "  list                          queues: messages by state, waiters, oldest, DLQ\n"
        "  stats NAME                    one queue: attributes, counters\n"
        "  peek NAME [N]                 up to N (1..16, default 16) visible messages\n"
        "  purge NAME [--dlq|--both] --yes\n"
        "                                delete every message of NAME (--dlq: of its\n"
        "                                dead-letter queue, --both: of both)\n"
        "  redrive DLQ [--rate R] [--max N]\n"
        "                                move a dead-letter queue's messages back\n"
        "  set NAME Attr=Value...        change queue attributes (VisibilityTimeout=60,\n"
        "                                DlqTargetQueue=q-dlq DlqMaxReceiveCount=5, ...)\n"
        "  topics [TOPIC]                topics: subscriptions, pending messages,\n"
        "                                MaximumMessageSize, LoggingEnabled, created; with\n"
        "                                TOPIC its subscriptions: endpoint, filter tag,\n"
        "                                strategy, format, pending and retrying notifications\n"
        "  health | ready | metrics      the probes and the Prometheus text\n"
        "  backup DEST [--db PATH]       consistent online copy of the database\n"
        "  check [--db PATH]             PRAGMA integrity_check of the live database\n"
        "  migrate --dsn DSN [--db PATH] copy a stopped smqd's SQLite database into an\n"
        "                                empty PostgreSQL database (libpq conninfo DSN)\n"
        "options:\n"
        "  -a URL     admin listener (default: [admin] listen of -c, else %s)\n"
        "  -T TOKEN   admin token (default: $%s, else [admin] token of -c)\n"
        "  -c FILE    smqd's configuration, for the admin address, token and database\n"
        "  --db PATH  the database file (default: [storage] path of -c)\n"
        "  --json     print the server's JSON instead of a table\n"
        "  --yes      do not ask before purging (required when stdin is not a terminal)\n"
        "exit codes: 0 ok, 1 usage or purge not confirmed, 2 server or database error\n",
        DEFAULT_ADMIN, TOKEN_ENV);
}

/* ---- where things are ---------------------------------------------------------- */

static int load_config(struct ctl *c)
{
    char err[1024] = "";

    if (c->config_path == NULL || c->cfg_loaded)
        return 0;
    if (config_load(c->config_path, &c->cfg, err, sizeof err) != 0) {
        fprintf(stderr, "smqctl: %s\n", err);
        return SMQ_E_INVALID_ARGUMENT;
    }
    c->cfg_loaded = true;
    return 0;
}

/* The admin URL from -c: a wildcard bind is reached over loopback. */
static int addr_from_config(struct ctl *c)
{
    const char *host = c->cfg.admin_host;
    bool v6 = strchr(host, ':') != NULL;

    if (!c->cfg.admin_enabled) {
        fprintf(stderr, "smqctl: the admin listener is off in %s ([admin] listen = off)\n",
                c->config_path);
        return SMQ_E_INVALID_ARGUMENT;
    }
    if (strcmp(host, "0.0.0.0") == 0)
        host = "127.0.0.1";
    else if (strcmp(host, "::") == 0)
        host = "::1";
    snprintf(c->addr_buf, sizeof c->addr_buf, "http://%s%s%s:%u", v6 ? "[" : "", host,
             v6 ? "]" : "", (unsigned)c->cfg.admin_port);
    c->addr = c->addr_buf;
    return 0;
}

static int resolve_target(struct ctl *c)
{
    if (load_config(c) != 0 || (c->addr == NULL && c->cfg_loaded && addr_from_config(c) != 0))
        return SMQ_E_INVALID_ARGUMENT;
    if (c->addr == NULL)
        c->addr = DEFAULT_ADMIN;
    if (c->token == NULL)
        c->token = getenv(TOKEN_ENV);
    if (c->token == NULL && c->cfg_loaded && c->cfg.admin_token[0] != '\0')
        c->token = c->cfg.admin_token;
    if (c->addr != c->addr_buf)      /* the -c case already wrote addr_buf */
        snprintf(c->addr_buf, sizeof c->addr_buf, "%s", c->addr);
    c->addr_buf[strcspn(c->addr_buf, "\n")] = '\0';
    /* "http://host:port/" and "http://host:port" mean the same. */
    for (size_t n = strlen(c->addr_buf); n > 0 && c->addr_buf[n - 1] == '/'; n--)
        c->addr_buf[n - 1] = '\0';
    c->target.base = c->addr_buf;
    c->target.token = c->token;
    return 0;
}

/* The SQLite file a file command works on.  A node on PostgreSQL has none:
 * its database is backed up and checked with PostgreSQL's own tools. */
static const char *resolve_db(struct ctl *c)
{
    if (c->db_path != NULL)
        return c->db_path;
    if (load_config(c) != 0)
        return NULL;
    if (c->cfg_loaded && c->cfg.storage_backend == SMQ_STORE_POSTGRESQL) {
        fprintf(stderr, "smqctl: this smqd keeps its data in PostgreSQL, not in a file: back it "
                "up with pg_dump (or pg_basebackup, or your failover manager's backups) and "
                "check it with pg_amcheck; docs/operations.md says how. --db PATH names an "
                "SQLite file\n");
        return NULL;
    }
    if (c->cfg_loaded)
        return c->cfg.storage_path;
    fprintf(stderr, "smqctl: which database? give --db PATH or -c smqd.conf\n");
    return NULL;
}

/* A count given on the command line: decimal digits only, no overflow, so
 * that what is sent is exactly the number the operator typed (a cut string
 * of zeros would have meant "all"). */
static int parse_count(const char *s, unsigned long long *out)
{
    uint64_t n;
    int rc = strnum_u64(s, strlen(s), &n);

    if (rc == 0)
        *out = n;
    return rc;
}

/* ---- talking to the admin listener ----------------------------------------------------- */

/* The server's {"error","message"} as one line on stderr. */
static void report_error(const struct ctl_resp *r)
{
    struct cj_value doc;
    char err[160];

    if (cj_parse(r->body, r->len, &doc, err, sizeof err) == 0 && cj_get(&doc, "error") != NULL) {
        const char *m = cj_text(&doc, "message", "");
        const char *code = cj_text(&doc, "error", "?");
        fprintf(stderr, "smqctl: HTTP %ld ", r->status);
        ctl_print_safe(stderr, code, strlen(code));
        fputs(": ", stderr);
        ctl_print_safe(stderr, m, strlen(m));
    } else {
        fprintf(stderr, "smqctl: HTTP %ld: ", r->status);
        ctl_print_safe(stderr, r->body, r->len > 300 ? 300 : r->len);
    }
    fputc('\n', stderr);
    cj_free(&doc);
}

/* How fetch_json treats an answer. */
enum {
    FETCH_ECHO = 1               /* with --json, print the body as it came */
};

/*
 * One admin API call whose success is a JSON document: parsed into doc
 * (the caller frees it).  Returns EXIT_OK or EXIT_FAILED
 * (reported on stderr).
 */
static int fetch_json(struct ctl *c, const char *method, const char *path, int flags,
                      struct cj_value *doc)
{
    struct ctl_resp r;
    char err[512];
    int code = EXIT_FAILED;

    memset(doc, 0, sizeof *doc);
    if (ctl_http_request(&c->target, method, path, &r, err, sizeof err) != 0) {
        fprintf(stderr, "smqctl: %s\n", err);
        return EXIT_FAILED;
    }
    if (r.status < 200 || r.status > 299) {
        report_error(&r);
    } else if (cj_parse(r.body, r.len, doc, err, sizeof err) != 0) {
        fprintf(stderr, "smqctl: %s%s is not the admin API (bad JSON at %s)\n", c->target.base,
                path, err);
    } else {
        if (c->json && (flags & FETCH_ECHO)) {
            fwrite(r.body, 1, r.len, stdout);
            if (r.len == 0 || r.body[r.len - 1] != '\n')
                fputc('\n', stdout);   /* a shell prompt must not follow on the same line */
        }
        code = EXIT_OK;
    }
    ctl_resp_free(&r);
    return code;
}

/* One call whose answer is printed raw with --json. */
static int call_json(struct ctl *c, const char *method, const char *path, struct cj_value *doc)
{
    return fetch_json(c, method, path, FETCH_ECHO, doc);
}

/* The most names the admin API gives in one page (docs/admin-api.md). */
#define LISTING_PAGE 1000

/* path?limit=1000[&marker=MARKER]; NULL when out of memory (reported). */
static char *page_path(const char *path, const char *marker)
{
    char *esc = ctl_http_escape(marker), *url = NULL;
    size_t n;

    if (esc != NULL) {
        n = strlen(path) + strlen("?limit=&marker=") + 8 + strlen(esc) + 1;
        if ((url = malloc(n)) != NULL)
            snprintf(url, n, "%s?limit=%d%s%s", path, LISTING_PAGE, esc[0] != '\0' ? "&marker="
                     : "", esc);
    }
    free(esc);
    if (url == NULL)
        fprintf(stderr, "smqctl: out of memory\n");
    return url;
}

/*
 * One page of a listing into doc, and its next_marker into marker ("" after
 * the last page).  A marker that does not move forward would loop for ever:
 * names come in order, so it is refused as a bad answer.
 */
static int fetch_page(struct ctl *c, const char *path, const char *key, int flags,
                      char marker[SMQ_TOPIC_NAME_MAX + 1], struct cj_value *doc)
{
    char *url = page_path(path, marker);
    const struct cj_value *list;
    const char *next;
    int code;

    memset(doc, 0, sizeof *doc);
    if (url == NULL)
        return EXIT_FAILED;
    code = fetch_json(c, "GET", url, flags, doc);
    free(url);
    if (code != EXIT_OK)
        return code;
    list = cj_get(doc, key);
    next = cj_text(doc, "next_marker", NULL);
    if (list == NULL || list->type != CJ_ARRAY || next == NULL
        || strlen(next) > SMQ_TOPIC_NAME_MAX || (next[0] != '\0' && strcmp(next, marker) <= 0)) {
        fprintf(stderr, "smqctl: unexpected answer from %s (no \"%s\" list, or a next_marker "
                "that does not move on)\n", path, key);
        return EXIT_FAILED;
    }
    memcpy(marker, next, strlen(next) + 1);
    return EXIT_OK;
}

/* Every element of a paged listing (path answers {KEY:[...],"next_marker"}):
 * the first page in doc, with the later pages' elements joined to its list. */
static int call_listing(struct ctl *c, const char *path, const char *key, int flags,
                        struct cj_value *doc)
{
    char marker[SMQ_TOPIC_NAME_MAX + 1] = "";
    struct cj_value page;
    int code = fetch_page(c, path, key, flags, marker, doc);

    while (code == EXIT_OK && marker[0] != '\0') {
        code = fetch_page(c, path, key, flags, marker, &page);
        if (code == EXIT_OK && cj_array_take(cj_get_mut(doc, key), cj_get_mut(&page, key)) != 0) {
            fprintf(stderr, "smqctl: out of memory\n");
            code = EXIT_FAILED;
        }
        cj_free(&page);
    }
    return code;
}

/* A probe or /metrics: the body as text, success on 200. */
static int call_text(struct ctl *c, const char *path)
{
    struct ctl_resp r;
    char err[512];
    int code;

    if (ctl_http_request(&c->target, "GET", path, &r, err, sizeof err) != 0) {
        fprintf(stderr, "smqctl: %s\n", err);
        return EXIT_FAILED;
    }
    if (r.status == 200 || (r.status == 503 && strcmp(path, "/ready") == 0))
        fwrite(r.body, 1, r.len, stdout);
    else
        report_error(&r);
    code = r.status == 200 ? EXIT_OK : EXIT_FAILED;
    ctl_resp_free(&r);
    return code;
}

/* collection + NAME + suffix, with NAME percent-encoded. */
static char *named_path(const char *collection, const char *name, const char *suffix)
{
    char *esc = ctl_http_escape(name), *path = NULL;
    size_t n;

    if (esc != NULL) {
        n = strlen(collection) + strlen(esc) + strlen(suffix) + 1;
        if ((path = malloc(n)) != NULL)
            snprintf(path, n, "%s%s%s", collection, esc, suffix);
    }
    free(esc);
    if (path == NULL)
        fprintf(stderr, "smqctl: out of memory\n");
    return path;
}

/* "/v1/queues/NAME" + suffix. */
static char *queue_path(const char *name, const char *suffix)
{
    return named_path("/v1/queues/", name, suffix);
}

/* ---- commands -------------------------------------------------------------------------- */

static int cmd_list(struct ctl *c)
{
    struct cj_value doc;
    int code = call_json(c, "GET", "/v1/queues", &doc);

    if (code == EXIT_OK && !c->json && ctl_print_queue_table(stdout, &doc) != 0) {
        fprintf(stderr, "smqctl: unexpected answer (no \"queues\" list)\n");
        code = EXIT_FAILED;
    }
    cj_free(&doc);
    return code;
}

/* GET, PUT: answers are a QUEUE object. */
static int queue_call(struct ctl *c, const char *method, char *path)
{
    struct cj_value doc;
    int code;

    if (path == NULL)
        return EXIT_FAILED;
    code = call_json(c, method, path, &doc);
    if (code == EXIT_OK && !c->json && ctl_print_queue(stdout, &doc) != 0) {
        fprintf(stderr, "smqctl: unexpected answer (not a queue)\n");
        code = EXIT_FAILED;
    }
    cj_free(&doc);
    free(path);
    return code;
}

static int cmd_stats(struct ctl *c, char **args, int n)
{
    if (n != 1)
        return usage(stderr), EXIT_USAGE;
    return queue_call(c, "GET", queue_path(args[0], ""));
}

static int cmd_peek(struct ctl *c, char **args, int n)
{
    char suffix[64];
    struct cj_value doc;
    char *path;
    int code;

    unsigned long long count = 0;

    if (n < 1 || n > 2 || (n == 2 && parse_count(args[1], &count) != 0))
        return usage(stderr), EXIT_USAGE;
    if (n == 2)
        snprintf(suffix, sizeof suffix, "/messages?n=%llu", count);
    else
        snprintf(suffix, sizeof suffix, "/messages");
    if ((path = queue_path(args[0], suffix)) == NULL)
        return EXIT_FAILED;
    code = call_json(c, "GET", path, &doc);
    if (code == EXIT_OK && !c->json && ctl_print_messages(stdout, &doc) != 0) {
        fprintf(stderr, "smqctl: unexpected answer (no \"messages\" list)\n");
        code = EXIT_FAILED;
    }
    cj_free(&doc);
    free(path);
    return code;
}

/* {"KEY":[...]}: a joined listing as one document, for --json. */
static void write_listing(const struct cj_value *doc, const char *key)
{
    printf("{\"%s\":", key);
    cj_write(stdout, cj_get(doc, key));
    printf("}\n");
}

static int list_topics(struct ctl *c)
{
    struct cj_value doc;
    int code = call_listing(c, "/v1/topics", "topics", 0, &doc);

    if (code == EXIT_OK && c->json)
        write_listing(&doc, "topics");
    else if (code == EXIT_OK)
        ctl_print_topic_table(stdout, &doc);     /* the shape is checked by now */
    cj_free(&doc);
    return code;
}

static int list_subscriptions(struct ctl *c, const char *topic)
{
    char *path = named_path("/v1/topics/", topic, "/subscriptions");
    struct cj_value doc;
    int code;

    if (path == NULL)
        return EXIT_FAILED;
    code = call_listing(c, path, "subscriptions", 0, &doc);
    if (code == EXIT_OK && c->json)
        write_listing(&doc, "subscriptions");
    else if (code == EXIT_OK)
        ctl_print_subscription_table(stdout, &doc);
    cj_free(&doc);
    free(path);
    return code;
}

/* topics: every topic; topics TOPIC: its subscriptions. */
static int cmd_topics(struct ctl *c, char **args, int n)
{
    if (n > 1)
        return usage(stderr), EXIT_USAGE;
    return n == 1 ? list_subscriptions(c, args[0]) : list_topics(c);
}

/* Purging cannot be undone: ask on a terminal, insist on --yes otherwise. */
static bool confirm_purge(const struct ctl *c, const char *name)
{
    char line[256];

    if (c->yes)
        return true;
    if (!isatty(STDIN_FILENO) || !isatty(STDERR_FILENO)) {
        fprintf(stderr, "smqctl: refusing to purge without --yes (stdin is not a terminal)\n");
        return false;
    }
    fprintf(stderr, "Delete every message (%s) of queue %s? This cannot be undone.\n"
            "Type the queue name to confirm: ", c->purge_type, name);
    if (fgets(line, sizeof line, stdin) == NULL)
        return false;
    line[strcspn(line, "\r\n")] = '\0';
    if (strcmp(line, name) != 0) {
        fprintf(stderr, "smqctl: not confirmed; nothing purged\n");
        return false;
    }
    return true;
}

static int cmd_purge(struct ctl *c, char **args, int n)
{
    char suffix[32];
    struct cj_value doc;
    uint64_t purged = 0, dlq = 0;
    char *path;
    int code;

    if (n != 1)
        return usage(stderr), EXIT_USAGE;
    if (!confirm_purge(c, args[0]))
        return EXIT_USAGE;
    snprintf(suffix, sizeof suffix, "/purge?type=%s", c->purge_type);
    if ((path = queue_path(args[0], suffix)) == NULL)
        return EXIT_FAILED;
    code = call_json(c, "POST", path, &doc);
    if (code == EXIT_OK && !c->json) {
        cj_u64(&doc, "purged", &purged);
        cj_u64(&doc, "dlq_purged", &dlq);
        if (strcmp(c->purge_type, "dlq") != 0)
            printf("purged %llu message(s) from %s\n", (unsigned long long)purged, args[0]);
        if (strcmp(c->purge_type, "normal") != 0)
            printf("purged %llu message(s) from the dead-letter queue of %s\n",
                   (unsigned long long)dlq, args[0]);
    }
    cj_free(&doc);
    free(path);
    return code;
}

static int cmd_redrive(struct ctl *c, char **args, int n)
{
    char suffix[96];
    struct cj_value doc;
    uint64_t scheduled = 0;
    char *path;
    int code;

    unsigned long long rate = 100, max = 0;

    if (n != 1 || (c->rate != NULL && parse_count(c->rate, &rate) != 0) ||
        (c->max != NULL && parse_count(c->max, &max) != 0))
        return usage(stderr), EXIT_USAGE;
    snprintf(suffix, sizeof suffix, "/redrive?rate=%llu&max=%llu", rate, max);
    if ((path = queue_path(args[0], suffix)) == NULL)
        return EXIT_FAILED;
    code = call_json(c, "POST", path, &doc);
    if (code == EXIT_OK && !c->json) {
        cj_u64(&doc, "scheduled", &scheduled);
        printf("redrive of %s: %llu message(s) scheduled at %llu/s\n", args[0],
               (unsigned long long)scheduled, rate);
    }
    cj_free(&doc);
    free(path);
    return code;
}

/* Appends "&Name=Value" (both encoded) to query: 0, SMQ_E_INVALID_ARGUMENT
 * when arg has no '=', or SMQ_E_NOMEM. */
static int add_attr(char **query, size_t *len, const char *arg)
{
    const char *eq = strchr(arg, '=');
    char *name, *ename, *evalue, *grown;
    size_t add;
    int rc = SMQ_E_NOMEM;

    if (eq == NULL || eq == arg)
        return SMQ_E_INVALID_ARGUMENT;
    name = strndup(arg, (size_t)(eq - arg));
    ename = name != NULL ? ctl_http_escape(name) : NULL;
    evalue = ctl_http_escape(eq + 1);
    if (ename != NULL && evalue != NULL) {
        add = strlen(ename) + strlen(evalue) + 3;
        if ((grown = realloc(*query, *len + add)) != NULL) {
            *len += (size_t)snprintf(grown + *len, add, "%s%s=%s", *len ? "&" : "", ename,
                                     evalue);
            *query = grown;
            rc = 0;
        }
    }
    free(name);
    free(ename);
    free(evalue);
    return rc;
}

static int cmd_set(struct ctl *c, char **args, int n)
{
    char *query = NULL, *path;
    size_t len = 0;

    if (n < 2)
        return usage(stderr), EXIT_USAGE;
    for (int i = 1; i < n; i++) {
        if (add_attr(&query, &len, args[i]) != 0) {
            fprintf(stderr, "smqctl: set: expected Attr=Value, got \"%s\"\n", args[i]);
            free(query);
            return EXIT_USAGE;
        }
    }
    len = strlen(query) + sizeof "/attributes?";
    path = malloc(len);
    if (path != NULL)
        snprintf(path, len, "/attributes?%s", query);
    free(query);
    if (path == NULL)
        return EXIT_FAILED;
    query = path;
    path = queue_path(args[0], query);
    free(query);
    return queue_call(c, "PUT", path);
}

static int cmd_backup(struct ctl *c, char **args, int n)
{
    const char *db;
    char err[1024];

    if (n != 1)
        return usage(stderr), EXIT_USAGE;
    if ((db = resolve_db(c)) == NULL)
        return EXIT_USAGE;
    if (ctl_db_backup(db, args[0], isatty(STDERR_FILENO) ? stderr : NULL, err, sizeof err) != 0) {
        fprintf(stderr, "smqctl: backup: %s\n", err);
        return EXIT_FAILED;
    }
    printf("backup of %s written to %s (integrity_check ok)\n", db, args[0]);
    return EXIT_OK;
}

static int cmd_migrate(struct ctl *c, int n)
{
    struct store_config from = {.backend = SMQ_STORE_SQLITE};
    struct store_config to = {.backend = SMQ_STORE_POSTGRESQL, .dsn = c->dsn,
                              .app_name = "smqctl-migrate"};
    struct ctl_migrate_counts counts;
    char err[1024] = "";

    if (n != 0 || c->dsn == NULL)
        return usage(stderr), EXIT_USAGE;
    if ((from.path = resolve_db(c)) == NULL)
        return EXIT_USAGE;
    if (ctl_migrate(&from, &to, stderr, &counts, err, sizeof err) != 0) {
        fprintf(stderr, "smqctl: migrate: %s\n", err);
        return EXIT_FAILED;
    }
    printf("copied %llu queue(s) and %llu message(s) (%llu body bytes), %llu topic(s) and "
           "%llu subscription(s)%s from %s into PostgreSQL; the counts read back match\n",
           (unsigned long long)counts.queues, (unsigned long long)counts.messages,
           (unsigned long long)counts.body_bytes, (unsigned long long)counts.topics,
           (unsigned long long)counts.subscriptions,
           counts.signing_key ? ", and the push signing key" : "", from.path);
    return EXIT_OK;
}

static int cmd_check(struct ctl *c, int n)
{
    const char *db;
    char err[1024];
    bool ok;

    if (n != 0)
        return usage(stderr), EXIT_USAGE;
    if ((db = resolve_db(c)) == NULL)
        return EXIT_USAGE;
    if (ctl_db_check(db, stdout, &ok, err, sizeof err) != 0)
        fprintf(stderr, "smqctl: check: %s\n", err);
    return ok ? EXIT_OK : EXIT_FAILED;
}

/* ---- command line ---------------------------------------------------------------------- */

static int parse_cli(int argc, char **argv, struct ctl *c)
{
    enum { OPT_DB = 256, OPT_DSN, OPT_JSON, OPT_DLQ, OPT_BOTH, OPT_YES, OPT_RATE, OPT_MAX };
    static const struct option longopts[] = {
        {"addr", required_argument, NULL, 'a'}, {"token", required_argument, NULL, 'T'},
        {"config", required_argument, NULL, 'c'}, {"db", required_argument, NULL, OPT_DB},
        {"dsn", required_argument, NULL, OPT_DSN},
        {"json", no_argument, NULL, OPT_JSON}, {"dlq", no_argument, NULL, OPT_DLQ},
        {"both", no_argument, NULL, OPT_BOTH}, {"yes", no_argument, NULL, OPT_YES},
        {"rate", required_argument, NULL, OPT_RATE}, {"max", required_argument, NULL, OPT_MAX},
        {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
    };
    int ch;

    c->purge_type = "normal";
    while ((ch = getopt_long(argc, argv, "a:T:c:h", longopts, NULL)) != -1) {
        switch (ch) {
        case 'a': c->addr = optarg; break;
        case 'T': c->token = optarg; break;
        case 'c': c->config_path = optarg; break;
        case OPT_DB: c->db_path = optarg; break;
        case OPT_DSN: c->dsn = optarg; break;
        case OPT_JSON: c->json = true; break;
        case OPT_DLQ: c->purge_type = "dlq"; break;
        case OPT_BOTH: c->purge_type = "both"; break;
        case OPT_YES: c->yes = true; break;
        case OPT_RATE: c->rate = optarg; break;
        case OPT_MAX: c->max = optarg; break;
        case 'h': usage(stdout); exit(EXIT_OK);
        default: return SMQ_E_INVALID_ARGUMENT;
        }
    }
    return optind < argc ? 0 : SMQ_E_INVALID_ARGUMENT;
}

static int run_command(struct ctl *c, const char *cmd, char **args, int n)
{
    if (strcmp(cmd, "backup") == 0)
        return cmd_backup(c, args, n);
    if (strcmp(cmd, "check") == 0)
        return cmd_check(c, n);
    if (strcmp(cmd, "migrate") == 0)
        return cmd_migrate(c, n);
    if (resolve_target(c) != 0)
        return EXIT_USAGE;
    if (strcmp(cmd, "list") == 0 && n == 0)
        return cmd_list(c);
    if (strcmp(cmd, "stats") == 0)
        return cmd_stats(c, args, n);
    if (strcmp(cmd, "peek") == 0)
        return cmd_peek(c, args, n);
    if (strcmp(cmd, "purge") == 0)
        return cmd_purge(c, args, n);
    if (strcmp(cmd, "redrive") == 0)
        return cmd_redrive(c, args, n);
    if (strcmp(cmd, "set") == 0)
        return cmd_set(c, args, n);
    if (strcmp(cmd, "topics") == 0)
        return cmd_topics(c, args, n);
    if (n == 0 && (strcmp(cmd, "health") == 0 || strcmp(cmd, "ready") == 0 ||
                   strcmp(cmd, "metrics") == 0)) {
        char path[16];
        snprintf(path, sizeof path, "/%s", cmd);
        return call_text(c, path);
    }
    usage(stderr);
    return EXIT_USAGE;
}

int main(int argc, char **argv)
{
    struct ctl c;
    int code;

    memset(&c, 0, sizeof c);
    config_defaults(&c.cfg);
    if (parse_cli(argc, argv, &c) != 0) {
        usage(stderr);
        return EXIT_USAGE;
    }
    if (ctl_http_init() != 0) {
        fprintf(stderr, "smqctl: cannot initialise libcurl\n");
        return EXIT_FAILED;
    }
    code = run_command(&c, argv[optind], argv + optind + 1, argc - optind - 1);
    ctl_http_cleanup();
    config_free(&c.cfg);
    return code;
}
