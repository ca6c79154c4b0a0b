/*
 * config_table.c — owns the table of smqd's settings (config_table.h):
 * every setting is one row — section, key, type, default (spelled as in the
 * file), bounds, the struct field and a one-line doc — and the rules of
 * each type of value.  config_defaults() runs each default through the same
 * parser as the file, so a default outside its own bounds cannot ship
 * (test_config_defaults), and config_print() walks the same rows, so
 * `smqd -t` lists every key.
 */
#include "config_table.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "smqd/netaddr.h"
#include "smqd/notify.h"
#include "smqd/strnum.h"

static const char *const sync_names[] = {"full", "normal", NULL};
/* Indexed by enum smq_store_backend. */
static const char *const backend_names[] = {"sqlite", "postgresql", NULL};
static const char *const scheme_names[] = {"auto", "http", "https", NULL};
/* Same spellings as log_level_parse(); test_config_level_names_match_log
 * keeps the two in step. */
static const char *const level_names[] = {"error", "warn", "info", "debug", NULL};

/* Enum fields are written through an int pointer. */
_Static_assert(sizeof(enum smq_sync_mode) == sizeof(int), "enum size");
_Static_assert(sizeof(enum smq_store_backend) == sizeof(int), "enum size");
_Static_assert(sizeof(enum smq_log_level) == sizeof(int), "enum size");
_Static_assert(sizeof(enum smq_url_scheme) == sizeof(int), "enum size");
_Static_assert(sizeof(((struct smq_config *)0)->topics_certificate_url) == NOTIFY_CERT_URL_MAX + 1,
               "the certificate URL's field holds NOTIFY_CERT_URL_MAX bytes");

#define FIELD(f) offsetof(struct smq_config, f)
#define NODE_ID_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-"
#define FIELD_LEN(f) ((long long)sizeof(((struct smq_config *)0)->f) - 1)
#define NO_FIELD 0

const struct setting config_settings[] = {
    {"server", "listen", OPT_LISTEN, "127.0.0.1:8080", 0, 65535, NULL,
     FIELD(listen_host),
     "HTTP address; port 0 picks a free port"},
    {"server", "threads", OPT_INT, "2", 1, 64, NULL, FIELD(threads),
     "HTTP worker threads"},
    {"server", "tls_cert_file", OPT_PATH, "", 0, FIELD_LEN(tls_cert_file), NULL,
     FIELD(tls_cert_file), "PEM certificate (then any intermediates) for HTTPS; empty = HTTP"},
    {"server", "tls_key_file", OPT_PATH, "", 0, FIELD_LEN(tls_key_file), NULL,
     FIELD(tls_key_file), "PEM private key of tls_cert_file"},
    {"server", "url_scheme", OPT_ENUM, "auto", 0, 0, scheme_names, FIELD(url_scheme),
     "scheme of QueueURL and Location: auto (https with TLS), or http/https behind a proxy"},
    {"server", "trusted_proxies", OPT_PROXIES, "", 0, FIELD_LEN(trusted_proxies_text), NULL,
     FIELD(trusted_proxies_text),
     "proxies in front (e.g. HAProxy): addresses and CIDR ranges; they skip "
     "max_connections_per_ip and their X-Forwarded-For names the client"},
    {"storage", "path", OPT_PATH, "./smqd.db", 1, FIELD_LEN(storage_path), NULL,
     FIELD(storage_path),
     "SQLite database file, relative to the working directory"},
    {"storage", "sync", OPT_ENUM, "full", 0, 0, sync_names, FIELD(sync),
     "full: acknowledged writes survive power loss; normal: only an smqd crash"},
    {"storage", "reserve_mb", OPT_INT, "16", 0, 4096, NULL, FIELD(reserve_mb),
     "MiB kept in PATH.reserve (at most a quarter of its volume), freed when the disk fills"},
    {"storage", "backend", OPT_ENUM, "sqlite", 0, 0, backend_names, FIELD(storage_backend),
     "sqlite: one local file; postgresql: a shared PostgreSQL database (needs dsn, [cluster])"},
    {"storage", "dsn", OPT_DSN, "", 0, FIELD_LEN(storage_dsn), NULL, FIELD(storage_dsn),
     "backend = postgresql: libpq conninfo, e.g. host=pg1,pg2 dbname=smqd user=smqd"},
    {"cluster", "node_id", OPT_NODE_ID, "", 0, FIELD_LEN(cluster_node_id), NULL,
     FIELD(cluster_node_id), "this node's name, unique among the nodes of one database"},
    {"cluster", "lease_ttl_s", OPT_INT, "5", 2, 30, NULL, FIELD(cluster_lease_ttl_s),
     "seconds a node's lease lasts unrenewed: a standby takes over after about this long"},
    {"auth", "access_key_id", OPT_KEY_ID, NULL, 1, SMQ_KEY_ID_MAX, NULL, NO_FIELD,
     "first access key id (required unless a key.<ID> line exists)"},
    {"auth", "access_key_secret", OPT_SECRET, NULL, 1, SMQ_KEY_SECRET_MAX, NULL, NO_FIELD,
     "secret of access_key_id"},
    {"auth", "key.", OPT_KEY_PAIR, NULL, 1, SMQ_KEY_ID_MAX, NULL, NO_FIELD,
     "more key pairs: key.<ACCESS_KEY_ID> = <SECRET>"},
    {"auth", "max_clock_skew_s", OPT_INT, "900", 1, 86400, NULL, FIELD(max_clock_skew_s),
     "seconds a request's Date may differ from the server clock"},
    {"limits", "max_connections", OPT_INT, "4096", 1, 100000, NULL, FIELD(max_connections),
     "simultaneous HTTP connections"},
    {"limits", "max_connections_per_ip", OPT_INT, "1024", 0, 100000, NULL,
     FIELD(max_connections_per_ip),
     "simultaneous HTTP connections from one client address; 0 = only max_connections"},
    {"limits", "idle_timeout_s", OPT_INT, "75", 1, 3600, NULL, FIELD(idle_timeout_s),
     "seconds before an idle keep-alive connection is closed"},
    {"limits", "request_timeout_s", OPT_INT, "30", 1, 3600, NULL, FIELD(request_timeout_s),
     "seconds to receive a whole request before it is dropped"},
    {"limits", "max_queues", OPT_INT, "1000", 1, 1000000, NULL, FIELD(max_queues),
     "queues that may exist at once"},
    {"limits", "max_topics", OPT_INT, "1000", 1, 1000000, NULL, FIELD(max_topics),
     "topics that may exist at once"},
    {"limits", "max_subscriptions_per_topic", OPT_INT, "1000", 1, 100000, NULL,
     FIELD(max_subscriptions_per_topic), "subscriptions one topic may have"},
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
    {"topics", "account_id", OPT_NODE_ID, "1000000000000000", 1, FIELD_LEN(topics_account_id),
     NULL, FIELD(topics_account_id),
     "TopicOwner and Subscriber in topic answers and notifications (smqd has one account)"},
    {"topics", "certificate_url", OPT_URL, "", 0, NOTIFY_CERT_URL_MAX, NULL,
     FIELD(topics_certificate_url),
     "where push endpoints fetch the signing certificate; empty = this listener's own"},
    {"topics", "signing_key_file", OPT_PATH, "", 0, FIELD_LEN(topics_signing_key_file), NULL,
     FIELD(topics_signing_key_file),
     "PEM RSA key (2048 bits or more) that signs HTTP pushes; empty = one made at first start"},
    {"topics", "signing_cert_file", OPT_PATH, "", 0, FIELD_LEN(topics_signing_cert_file), NULL,
     FIELD(topics_signing_cert_file),
     "PEM certificate of signing_key_file, served at the certificate URL"},
    {"topics", "push_concurrency", OPT_INT, "64", 1, 1024, NULL, FIELD(topics_push_concurrency),
     "HTTP push attempts in flight at most"},
    {"topics", "push_timeout_ms", OPT_INT, "5000", 100, 60000, NULL, FIELD(topics_push_timeout_ms),
     "ms an HTTP push attempt may take from connect to the response headers"},
    {"topics", "push_ca_file", OPT_PATH, "", 0, FIELD_LEN(topics_push_ca_file), NULL,
     FIELD(topics_push_ca_file),
     "PEM CA certificates that https:// endpoints are verified against; empty = the system's"},
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
    {"admin", "read_token", OPT_TOKEN, NULL, 0, FIELD_LEN(admin_read_token), NULL,
     FIELD(admin_read_token),
     "if set (with token, and different), a Bearer token for /ready, /metrics and queue stats only"},
    {"admin", "tls_cert_file", OPT_PATH, "", 0, FIELD_LEN(admin_tls_cert_file), NULL,
     FIELD(admin_tls_cert_file), "PEM certificate for HTTPS on the admin listener; empty = HTTP"},
    {"admin", "tls_key_file", OPT_PATH, "", 0, FIELD_LEN(admin_tls_key_file), NULL,
     FIELD(admin_tls_key_file), "PEM private key of the admin tls_cert_file"},
};

const size_t config_n_settings = sizeof config_settings / sizeof config_settings[0];

_Static_assert(sizeof config_settings / sizeof config_settings[0] <= CONFIG_MAX_SETTINGS,
               "raise CONFIG_MAX_SETTINGS");


/* ---- value parsers: each returns NULL or a short description of the problem */

const char *config_table_parse_int(const char *v, long long min, long long max, long long *out)
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
    why = config_table_parse_int(v, 0, 65535, &n);
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

/* [server] trusted_proxies: parsed once here, so that a wrong entry is
 * the file's error at its line (the message quotes the value), and kept
 * as written for smqd -t. */
static const char *parse_proxies(const char *v, const struct setting *s, struct smq_config *cfg)
{
    char bad[80];

    if (strlen(v) > (size_t)s->max)
        return "too long";
    if (netaddr_trust_parse(v, &cfg->trusted_proxies, bad, sizeof bad) != 0)
        return strncmp(bad, "more than", 9) == 0
                   ? "too many entries"
                   : "an entry is not an IP address or ADDR/BITS range (no host names)";
    memcpy(cfg->trusted_proxies_text, v, strlen(v) + 1);
    return NULL;
}

static bool is_key_id_char(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '.' || c == '-';
}

const char *config_table_check_key_id(const char *id)
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

const char *config_table_check_secret(const char *secret)
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

/* An http(s) URL as the certificate URL's rules have it (notify.h); "" = none. */
static const char *parse_url(const char *v, long long max)
{
    char url[NOTIFY_CERT_URL_MAX + 1];
    struct smq_errinfo ei = {0};

    if (v[0] == '\0')
        return NULL;
    if (strlen(v) > (size_t)max)
        return "too long";
    return notify_cert_url(v, "", "", 0, url, &ei) == 0 ? NULL : "not an http:// or https:// URL";
}

const char *config_table_parse(struct smq_config *cfg, const struct setting *s, const char *v)
{
    char *field = (char *)cfg + s->offset;
    const char *why = NULL;
    long long n;

    switch (s->type) {
    case OPT_INT:
        why = config_table_parse_int(v, s->min, s->max, &n);
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
        if (v[0] == '\0' && s->offset == FIELD(log_file))
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
                           : config_table_check_secret(v);
        if (why == NULL)
            memcpy(field, v, strlen(v) + 1);   /* length checked by check_secret */
        return why;
    case OPT_DSN:
        if (strlen(v) > (size_t)s->max)
            return "too long";
        memcpy(field, v, strlen(v) + 1);
        return NULL;
    case OPT_PROXIES:
        return parse_proxies(v, s, cfg);
    case OPT_URL:
        if ((why = parse_url(v, s->max)) == NULL)
            memcpy(field, v, strlen(v) + 1);
        return why;
    case OPT_NODE_ID:
        why = strlen(v) > (size_t)s->max ? "too long"
              : strspn(v, NODE_ID_CHARS) != strlen(v) ? "a character other than A-Z a-z 0-9 _ . -"
              : NULL;
        if (why == NULL)
            memcpy(field, v, strlen(v) + 1);
        return why;
    default:
        return "not a plain setting";
    }
}

void config_table_describe(const struct setting *s, char *buf, size_t size)
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
                            : s->offset == FIELD(log_file)
                                ? "a file path of up to %lld characters, or - for stderr"
                                : "a file path of up to %lld characters, or empty for none",
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
    case OPT_DSN:
        snprintf(buf, size, "a libpq connection string of up to %lld characters", s->max);
        return;
    case OPT_NODE_ID:
        snprintf(buf, size, "up to %lld characters of A-Z a-z 0-9 _ . -", s->max);
        return;
    case OPT_URL:
        snprintf(buf, size, "an http:// or https:// URL of up to %lld bytes, or empty for none",
                 s->max);
        return;
    case OPT_PROXIES:
        snprintf(buf, size, "up to %d IPv4/IPv6 addresses or ADDR/BITS ranges, separated by "
                 "commas or blanks; empty = none", NETADDR_TRUST_MAX);
        return;
    }
}

/* The read-only token only narrows what a token-protected listener grants:
 * alone it would leave the listener open to requests without any token,
 * and equal to token it would carry every power (docs/admin-api.md). */
const char *config_table_check_read_token(const struct smq_config *cfg)
{
    if (cfg->admin_read_token[0] == '\0')
        return NULL;
    if (cfg->admin_token[0] == '\0')
        return "[admin] read_token is set but token is not: the read-only token only narrows "
               "a listener that requires token; set token too, or remove read_token";
    if (strcmp(cfg->admin_read_token, cfg->admin_token) == 0)
        return "[admin] read_token is the same as token: a request bearing it would have "
               "every power; give read_token a value of its own";
    return NULL;
}

bool config_table_section_known(const char *name, size_t len)
{
    for (size_t i = 0; i < config_n_settings; i++) {
        if (strlen(config_settings[i].section) == len && memcmp(config_settings[i].section, name, len) == 0)
            return true;
    }
    return false;
}

const struct setting *config_table_find(const char *section, const char *name)
{
    for (size_t i = 0; i < config_n_settings; i++) {
        const struct setting *s = &config_settings[i];
        if (strcmp(s->section, section) != 0)
            continue;
        if (s->type == OPT_KEY_PAIR ? strncmp(name, s->key, strlen(s->key)) == 0
                                    : strcmp(name, s->key) == 0)
            return s;
    }
    return NULL;
}

void config_table_keys(const char *section, char *buf, size_t size)
{
    size_t used = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < config_n_settings && used < size; i++) {
        if (strcmp(config_settings[i].section, section) != 0)
            continue;
        used += (size_t)snprintf(buf + used, size - used, "%s%s%s", used ? ", " : "",
                                 config_settings[i].key,
                                 config_settings[i].type == OPT_KEY_PAIR ? "<ID>" : "");
    }
}

size_t config_table_row(enum opt_type type)
{
    size_t i = 0;

    while (i < config_n_settings && config_settings[i].type != type)
        i++;
    return i;
}

