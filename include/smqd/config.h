/*
 * config.h — the daemon's settings: one table of keys with their defaults
 * and bounds, an INI parser (libinih), validation with file:line messages,
 * and a printer of effective values (smqd -t).
 */
#ifndef SMQD_CONFIG_H
#define SMQD_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "smqd/auth.h"
#include "smqd/log.h"
#include "smqd/netaddr.h"
#include "smqd/qname.h"
#include "smqd/storage.h"

/* The scheme of the URLs answers carry: auto follows the listener. */
enum smq_url_scheme { SMQ_SCHEME_AUTO = 0, SMQ_SCHEME_HTTP = 1, SMQ_SCHEME_HTTPS = 2 };

/* What config_print writes instead of a secret. */
#define SMQ_CONFIG_SECRET_MASK "********"
/* Access key ids: 1..SMQ_KEY_ID_MAX (auth.h) characters of [A-Za-z0-9_.-]. */
/* Secrets (and the admin tokens): 1..SMQ_KEY_SECRET_MAX printable ASCII
 * characters, no spaces.  192: the most a configuration line (at most 198
 * characters) can hold after the shortest prefix, "token=" or "key.X=", so
 * every secret that could be written before this limit was set is still
 * accepted; longer setting names leave less room on the line. */
#define SMQ_KEY_SECRET_MAX 192

/* Queue names in [queue.NAME] follow the API's rule (qname.h). */
#define SMQ_CONFIG_QUEUES_MAX 1024

/* A [queue.NAME] section: the queue is created at start-up if missing, and
 * the dead-letter policy, when named, is set (docs/operations.md). */
struct smq_queue_decl {
    char name[SMQ_QUEUE_NAME_MAX + 1];
    char dlq_target[SMQ_QUEUE_NAME_MAX + 1];   /* "" = leave the policy alone */
    int dlq_max_receive_count;                        /* 1..1000 with a target */
    int line;                                         /* of the [queue.NAME] header */
    int target_line, count_line;                      /* where each key was set; 0 = not */
};

struct smq_config {
    /* [server] */
    char listen_host[256];        /* listen = HOST:PORT; default 127.0.0.1:8080.
                                     An IPv4 literal, "localhost" or an IPv6
                                     literal stored without its brackets. */
    uint16_t listen_port;         /* 0 = pick a free port */
    int threads;                  /* HTTP worker threads; default 2 */
    char tls_cert_file[4096];     /* "" = plain HTTP */
    char tls_key_file[4096];
    enum smq_url_scheme url_scheme;   /* of QueueURL / Location; default auto */
    /* trusted_proxies = addresses and CIDR ranges, as written (for smqd -t)
     * and parsed: connections from them skip max_connections_per_ip, and
     * their requests' X-Forwarded-For names the client (netaddr.h). */
    char trusted_proxies_text[256];   /* a line holds at most 198 characters */
    struct netaddr_trust trusted_proxies;
    /* [storage] */
    char storage_path[4096];      /* SQLite file; default ./smqd.db */
    enum smq_sync_mode sync;      /* default full */
    int reserve_mb;               /* space held back for deletes when the disk fills; default 16 */
    enum smq_store_backend storage_backend;   /* default sqlite */
    char storage_dsn[2048];       /* backend = postgresql: a libpq conninfo string */
    /* [cluster] (backend = postgresql only) */
    char cluster_node_id[64];     /* unique per node */
    int cluster_lease_ttl_s;      /* default 5 */
    /* [auth] */
    struct auth_keyring keys;     /* access_key_id/access_key_secret + key.<ID> = <SECRET> */
    int max_clock_skew_s;         /* default 900 */
    /* [limits] */
    int max_connections;          /* default 1024 */
    int max_connections_per_ip;   /* from one client address; default 256; 0 = no own limit */
    int idle_timeout_s;           /* keep-alive idle timeout; default 75 */
    int request_timeout_s;        /* whole-request read bound; default 30 */
    int max_queues;               /* default 1000 */
    int max_topics;               /* default 1000 (docs/protocol.md §13.2) */
    int max_subscriptions_per_topic;   /* default 1000 */
    int max_body_bytes;           /* request body cap; default 1 MiB */
    int queue_qps;                /* requests/s per queue (token bucket); 0 = no limit (default) */
    int queue_burst;              /* that bucket's size; 0 = queue_qps */
    int access_key_qps;           /* requests/s per access key; 0 = no limit (default) */
    int access_key_burst;         /* that bucket's size; 0 = access_key_qps */
    /* [topics] */
    char topics_account_id[65];   /* TopicOwner and Subscriber in answers; default 1000000000000000 */
    /* Where push endpoints fetch the signing certificate (notify.h NOTIFY_CERT_URL_MAX
     * bytes at most); "" = the MNS listener's own (docs/protocol.md §13.11). */
    char topics_certificate_url[451];
    /* The push signing key (RSA, PEM) and its certificate; both "" = the pair
     * smqd makes at first start and keeps with its data (§13.11). */
    char topics_signing_key_file[4096];
    char topics_signing_cert_file[4096];
    int topics_push_concurrency;  /* push attempts in flight at most; default 64 */
    int topics_push_timeout_ms;   /* per attempt, connect to response headers; default 5000 */
    char topics_push_ca_file[4096];   /* "" = the system's CAs, for https:// endpoints */
    /* [log] */
    enum smq_log_level log_level; /* default info */
    char log_file[4096];          /* "-" = stderr (config_load stores "" as "-") */
    bool log_requests;            /* one line per request; default true */
    /* [admin] (docs/admin-api.md) */
    bool admin_enabled;           /* false: listen = off */
    char admin_host[256];         /* listen = HOST:PORT; default 127.0.0.1:8081 */
    uint16_t admin_port;          /* 0 = pick a free port */
    char admin_token[SMQ_KEY_SECRET_MAX + 1];   /* "" = none; else a Bearer token */
    /* "" = none; else a Bearer token for the read-only requests only
     * (docs/admin-api.md); set only with admin_token, and never equal to it */
    char admin_read_token[SMQ_KEY_SECRET_MAX + 1];
    char admin_tls_cert_file[4096];   /* "" = plain HTTP */
    char admin_tls_key_file[4096];
    /* [queue.NAME] sections, in file order (malloc'd; config_free) */
    struct smq_queue_decl *queues;
    size_t n_queues;
};

/* Fills every field with its default (no keys). */
void config_defaults(struct smq_config *cfg);

/*
 * Loads path over the defaults.  On an unknown section/key, a bad value or a
 * missing required key (at least one access key) returns
 * SMQ_E_INVALID_ARGUMENT and writes "path:line: message" (or "path:
 * message") into err.
 *
 * cfg is always fully written and never read: the loaded settings on
 * success, the defaults (no keys) on failure, so config_free(cfg) is safe
 * either way.  An earlier key ring in cfg is NOT freed: call config_free
 * first, or load into a fresh struct (e.g. for a reload).  The keys of the
 * first pair (access_key_id/access_key_secret) come first in cfg->keys,
 * then the key.<ID> pairs in file order.  Lines are limited to 198
 * characters (libinih's line buffer); a longer line is an error.
 */
int config_load(const char *path, struct smq_config *cfg, char *err, size_t err_size);

/*
 * Prints the effective settings as a valid config file, one commented line
 * per key from the table; secrets are printed as SMQ_CONFIG_SECRET_MASK.
 * With no keys (defaults) the auth lines are printed commented out.
 */
void config_print(const struct smq_config *cfg, FILE *out);
/* dsn (a libpq conninfo string or a postgresql:// URI) with its password
 * replaced by SMQ_CONFIG_SECRET_MASK, in out (cut to size). */
void config_mask_dsn(const char *dsn, char *out, size_t size);

/* Frees what config_load allocated (the key ring).  Safe on defaults and
 * when called twice. */
void config_free(struct smq_config *cfg);

#endif
