/*
 * main.c — the smqd process: command line, configuration, start-up in
 * dependency order (admin listener → store → engine → engine thread → HTTP),
 * signals, and an orderly stop in reverse order.  Exit codes are listed in
 * usage() and in docs/operations.md.
 *
 * The process state is reported twice: to the admin listener (/ready) and,
 * when started by systemd with Type=notify, through sd_notify: READY=1 only
 * once recovery is done and the MNS port is bound, STOPPING=1 when the
 * drain begins, RELOADING=1 ... READY=1 around a SIGHUP reload.  Without
 * NOTIFY_SOCKET sd_notify does nothing.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#include "cluster.h"
#include "exposure.h"
#include "node.h"
#include "smqd/admin.h"
#include "smqd/api.h"
#include "smqd/clock.h"
#include "smqd/config.h"
#include "smqd/engine.h"
#include "smqd/log.h"
#include "smqd/metrics.h"
#include "smqd/mns_listener.h"
#include "smqd/notify.h"
#include "smqd/ratelimit.h"
#include "smqd/store.h"
#include "smqd/tls.h"
#include "smqd/xml.h"

/* smqd's exit codes (usage() and docs/operations.md list them); main.c
 * alone deals in them (docs/architecture.md). */
enum smqd_exit {
    SMQD_EXIT_OK = 0,
    SMQD_EXIT_USAGE = 1,        /* bad command line or configuration */
    SMQD_EXIT_STORE = 2,        /* the database cannot be opened or loaded */
    SMQD_EXIT_LISTEN = 3,       /* the listen address cannot be bound */
    SMQD_EXIT_RUNTIME = 4       /* a thread could not be started */
};

/* The exit code for what node.c or cluster.c answered (0 or NODE_E_*). */
static int node_exit_code(int code)
{
    switch (code) {
    case 0:
        return SMQD_EXIT_OK;
    case NODE_E_CONFIG:
        return SMQD_EXIT_USAGE;
    case NODE_E_STORE:
        return SMQD_EXIT_STORE;
    default:                    /* NODE_E_THREAD */
        return SMQD_EXIT_RUNTIME;
    }
}

struct cli {
    const char *config_path;
    int test_only;
};

static void usage(FILE *out)
{
    fprintf(out,
            "usage: smqd -c FILE        run the server with configuration FILE\n"
            "       smqd -t -c FILE     check FILE, print the effective settings, exit\n"
            "       smqd --version      print the version\n"
            "       smqd -h             this help\n"
            "exit codes: 0 ok, 1 usage/config, 2 storage, 3 listen, 4 runtime\n");
}

static int parse_cli(int argc, char **argv, struct cli *cli)
{
    static const struct option longopts[] = {
        {"config", required_argument, NULL, 'c'},
        {"test", no_argument, NULL, 't'},
        {"version", no_argument, NULL, 'V'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int ch;

    memset(cli, 0, sizeof *cli);
    while ((ch = getopt_long(argc, argv, "c:thV", longopts, NULL)) != -1) {
        switch (ch) {
        case 'c':
            cli->config_path = optarg;
            break;
        case 't':
            cli->test_only = 1;
            break;
        case 'V':
            printf("smqd %s\n", SMQD_VERSION);
            exit(SMQD_EXIT_OK);
        case 'h':
            usage(stdout);
            exit(SMQD_EXIT_OK);
        default:
            usage(stderr);
            return SMQ_E_INVALID_ARGUMENT;
        }
    }
    if (optind != argc || cli->config_path == NULL) {
        usage(stderr);
        return SMQ_E_INVALID_ARGUMENT;
    }
    return 0;
}

/* Tells systemd (if it started us with Type=notify) about a state change.
 * Best effort: a lost notification must not stop the daemon. */
__attribute__((format(printf, 1, 2)))
static void notify_systemd(const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (sd_notify(0, msg) < 0)
        SMQ_DEBUG("sd_notify failed: %s", msg);
}

/* Blocks the signals smqd handles in every thread (threads inherit the mask);
 * the main thread takes them with sigwait. */
static void block_signals(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, set, NULL);
    signal(SIGPIPE, SIG_IGN);
}

/* Configurations loaded by SIGHUP.  Each one's key ring may still be in use
 * by a request that read the slot just before a swap, so none is freed
 * before shutdown (reloads are rare; each keeps one struct smq_config,
 * tens of KB, and its key ring). */
struct reloads {
    struct smq_config **cfgs;
    size_t n;
};

/* The listeners' certificates (NULL: plain HTTP). */
struct tls_parts {
    struct tls_creds *mns, *admin;
};

/* Keys with [grant.*] sections: the rest may do everything. */
static size_t scoped_keys(const struct auth_keyring *ring)
{
    size_t n = 0;

    for (size_t i = 0; i < ring->n; i++)
        n += ring->keys[i].grants != NULL;
    return n;
}

/* A key that had grants and has none after the reload may do everything
 * now: right, if the operator meant it, and worth a line in case not. */
static void warn_unscoped(const struct auth_keyring *old, const struct auth_keyring *fresh)
{
    for (size_t i = 0; i < fresh->n; i++) {
        if (fresh->keys[i].grants != NULL)
            continue;
        for (size_t j = 0; j < old->n; j++)
            if (old->keys[j].grants != NULL && strcmp(old->keys[j].id, fresh->keys[i].id) == 0)
                SMQ_WARN("SIGHUP: access key \"%s\" has no [grant.%s] section any more: it "
                         "may now do everything", fresh->keys[i].id, fresh->keys[i].id);
    }
}

/* One listener's certificate on SIGHUP: reloaded from the (new) files for
 * the handshakes that follow; turning TLS on or off needs a restart. */
static void reload_tls(struct tls_creds *creds, const char *cert, const char *key,
                       const char *which)
{
    char err[1024] = "";

    if ((creds != NULL) != (cert[0] != '\0'))
        SMQ_WARN("SIGHUP: TLS on the %s listener is switched %s at the next restart", which,
                 cert[0] ? "on" : "off");
    else if (creds != NULL && tls_creds_reload(creds, cert, key, err, sizeof err) != 0)
        SMQ_ERROR("SIGHUP: %s; the %s listener keeps its current certificate", err, which);
}

/* SIGHUP: re-reads the file; a valid one replaces the access keys, the
 * log level, the admin tokens and the TLS certificates without touching
 * connections.  Other settings need a restart. */
static void reload_config(const char *path, struct auth_keyring_slot *slot,
                          struct smq_admin *admin, const struct tls_parts *tls,
                          struct reloads *r)
{
    char err[1024] = "";
    struct smq_config *fresh = malloc(sizeof *fresh);
    struct smq_config **grown = realloc(r->cfgs, (r->n + 1) * sizeof *grown);
    const char *token;

    if (grown != NULL)
        r->cfgs = grown;
    if (fresh == NULL || grown == NULL) {
        SMQ_ERROR("SIGHUP: out of memory; configuration not reloaded");
        free(fresh);
        return;
    }
    config_defaults(fresh);
    if (config_load(path, fresh, err, sizeof err) != 0) {
        SMQ_ERROR("SIGHUP: %s; keeping the running configuration", err);
        config_free(fresh);
        free(fresh);
        return;
    }
    r->cfgs[r->n++] = fresh;
    warn_unscoped(auth_keyring_get(slot), &fresh->keys);
    auth_keyring_set(slot, &fresh->keys);
    reload_tls(tls->mns, fresh->tls_cert_file, fresh->tls_key_file, "MNS");
    if (admin != NULL)
        reload_tls(tls->admin, fresh->admin_tls_cert_file, fresh->admin_tls_key_file, "admin");
    log_set_level(fresh->log_level);
    if (admin_set_tokens(admin, fresh->admin_token, fresh->admin_read_token) != 0)
        token = "unchanged (out of memory)";
    else if (admin == NULL)
        token = "unused (no admin listener)";
    else if (fresh->admin_token[0] == '\0')
        token = "none";
    else
        token = fresh->admin_read_token[0] ? "set, read-only token set"
                                           : "set, read-only token none";
    /* Written whatever the new level: an operator who lowers the level
     * still needs to see that the reload happened. */
    log_write(SMQ_LOG_WARN, "SIGHUP: reloaded %s: %zu access key(s) (%zu scoped by grants), "
              "log level %s, admin token %s; other settings apply at the next restart", path,
              fresh->keys.n, scoped_keys(&fresh->keys), log_level_name(fresh->log_level), token);
}

static void free_reloads(struct reloads *r)
{
    for (size_t i = 0; i < r->n; i++) {
        config_free(r->cfgs[i]);
        free(r->cfgs[i]);
    }
    free(r->cfgs);
}

/* Each connection (a parked long poll included) is a descriptor: lift the
 * soft limit to the hard one so max_connections is not capped at 1024. */
static void raise_fd_limit(int max_connections)
{
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == rl.rlim_max)
        return;
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur < (rlim_t)max_connections + 64)
        SMQ_WARN("open-file limit %llu is below max_connections %d plus headroom",
                 (unsigned long long)rl.rlim_cur, max_connections);
}

struct daemon_parts {
    struct tls_parts tls;
    struct smq_admin *admin;      /* NULL when [admin] listen = off */
    struct auth_keyring_slot keys;
    struct node_parts node;              /* store, engine, syncer, engine thread */
    struct mns_listener *http;
    struct smq_metrics *metrics;         /* borrowed by the MNS and admin listeners */
    struct smq_ratelimit *ratelimit;     /* borrowed by the MNS listener */
    struct cluster *cluster;             /* NULL on SQLite */
    /* What pushes name as their certificate URL (docs/protocol.md §13.11),
     * made once the MNS listener is bound; "" when there is none. */
    char cert_url[NOTIFY_CERT_URL_MAX + 1];
};

/* The request counters and rate limits, before any listener uses them;
 * freed after both listeners have stopped. */
static int start_metrics_and_limits(const struct smq_config *cfg, struct daemon_parts *p)
{
    struct ratelimit_opts ropts = {
        .clock = clock_system(),
        .queue_qps = (uint32_t)cfg->queue_qps,
        .queue_burst = (uint32_t)cfg->queue_burst,
        .access_key_qps = (uint32_t)cfg->access_key_qps,
        .access_key_burst = (uint32_t)cfg->access_key_burst,
        .expected_queues = (uint32_t)cfg->max_queues,
        .expected_access_keys = (uint32_t)cfg->keys.n,
    };

    p->metrics = metrics_new();
    if (p->metrics == NULL || ratelimit_new(&ropts, &p->ratelimit) != 0) {
        SMQ_ERROR("out of memory for the request counters and limits");
        return SMQD_EXIT_RUNTIME;
    }
    if (cfg->queue_qps > 0 || cfg->access_key_qps > 0)
        SMQ_INFO("request limits: %d/s per queue (burst %d), %d/s per access key (burst %d); "
                 "0 = none", cfg->queue_qps, cfg->queue_burst ? cfg->queue_burst : cfg->queue_qps,
                 cfg->access_key_qps,
                 cfg->access_key_burst ? cfg->access_key_burst : cfg->access_key_qps);
    return SMQD_EXIT_OK;
}

/* SQLite: the node serves from the start, lent to the admin listener. */
static int start_local_node(const struct smq_config *cfg, struct daemon_parts *p)
{
    struct node_opts o = {.cfg = cfg, .metrics = p->metrics};
    int code;

    /* Opening may wait for a lock and recovery may take a while: say so. */
    notify_systemd("STATUS=loading the queues from %s", cfg->storage_path);
    code = node_exit_code(node_start(&o, &p->node));
    if (p->node.store != NULL)
        admin_set_wal_path(p->admin, store_wal_path(p->node.store));   /* for smqd_wal_bytes */
    if (code == SMQD_EXIT_OK)
        admin_attach_engine_thread(p->admin, p->node.thread, engine_keys(p->node.engine));
    return code;
}

static const char *url_scheme(const struct smq_config *cfg)
{
    if (cfg->url_scheme == SMQ_SCHEME_AUTO)
        return cfg->tls_cert_file[0] != '\0' ? "https" : "http";
    return cfg->url_scheme == SMQ_SCHEME_HTTPS ? "https" : "http";
}

/* On PostgreSQL the listener starts detached and gated by the role; the
 * cluster lends it the engine while the node is active. */
static int start_mns_listener(const struct smq_config *cfg, struct daemon_parts *p)
{
    struct mns_listener_opts o = {
        .host = cfg->listen_host, .port = cfg->listen_port, .threads = cfg->threads,
        .max_connections = cfg->max_connections,
        .max_connections_per_ip = cfg->max_connections_per_ip,
        .trusted_proxies = &cfg->trusted_proxies,
        .tls = p->tls.mns, .url_scheme = url_scheme(cfg),
        .idle_timeout_s = cfg->idle_timeout_s,
        .request_timeout_s = cfg->request_timeout_s,
        .max_body_bytes = (size_t)cfg->max_body_bytes, .log_requests = cfg->log_requests,
        .api = {.keys = &p->keys,
                .handle_keys = p->node.engine != NULL ? engine_keys(p->node.engine) : NULL,
                .clock = clock_system(), .max_skew_ms = (int64_t)cfg->max_clock_skew_s * 1000,
                .account_id = cfg->topics_account_id,
                .signing_cert_pem = p->node.signing_cert_pem},
        .thread = p->node.thread, .metrics = p->metrics, .ratelimit = p->ratelimit,
        .role = p->cluster != NULL ? &p->cluster->role : NULL};
    char err[512] = "";

    p->keys.current = (struct auth_keyring *)&cfg->keys;
    if (mns_listener_start(&o, &p->http, err, sizeof err) != 0) {
        SMQ_ERROR("listen: %s", err);
        return SMQD_EXIT_LISTEN;
    }
    if (p->cluster != NULL)
        p->cluster->http = p->http;
    return SMQD_EXIT_OK;
}

/* The certificate URL pushes name: [topics] certificate_url, or by default
 * this listener's own, which needs its bound port; a start-up warning says
 * why when there is none. */
static void make_cert_url(const struct smq_config *cfg, struct daemon_parts *p)
{
    struct smq_errinfo ei = {0};

    if (notify_cert_url(cfg->topics_certificate_url, url_scheme(cfg), cfg->listen_host,
                        (unsigned)mns_listener_port(p->http), p->cert_url, &ei) != 0) {
        p->cert_url[0] = '\0';
        SMQ_WARN("topics: %s", ei.msg);
    }
    if (p->cluster != NULL)
        p->cluster->cert_url = p->cert_url;
}

/* SQLite: the push pool last, once the certificate URL is known. */
static int start_local_push(const struct smq_config *cfg, struct daemon_parts *p)
{
    struct node_opts o = {.cfg = cfg, .metrics = p->metrics, .cert_url = p->cert_url};

    return node_exit_code(node_start_push(&o, &p->node));
}

/* SQLite: the node, then the MNS listener (which needs its engine thread).
 * PostgreSQL: a check that the database is usable, the listener, then the
 * keeper that will make the node active. */
static int start_parts(const struct smq_config *cfg, struct daemon_parts *p)
{
    int code;

    if (p->cluster == NULL) {
        code = start_local_node(cfg, p);
        if (code == SMQD_EXIT_OK)
            code = start_mns_listener(cfg, p);
        if (code == SMQD_EXIT_OK)
            make_cert_url(cfg, p);
        return code == SMQD_EXIT_OK ? start_local_push(cfg, p) : code;
    }
    notify_systemd("STATUS=checking the PostgreSQL database");
    code = node_exit_code(cluster_check_store(p->cluster));
    if (code == SMQD_EXIT_OK)
        code = start_mns_listener(cfg, p);
    if (code == SMQD_EXIT_OK) {
        make_cert_url(cfg, p);
        code = node_exit_code(cluster_start_keeper(p->cluster));
    }
    return code;
}

/* The next signal; on PostgreSQL, every CLUSTER_TICK_MS without one the
 * cluster looks at the lease (0 is returned then). */
static int next_signal(const sigset_t *set, struct cluster *cluster, int *code)
{
    struct timespec tick = {0, CLUSTER_TICK_MS * 1000000L};
    int sig;

    if (cluster == NULL)
        return sigwait(set, &sig) == 0 ? sig : 0;
    sig = sigtimedwait(set, NULL, &tick);
    if (sig <= 0)
        *code = node_exit_code(cluster_tick(cluster));
    return sig > 0 ? sig : 0;
}

/* Until SIGTERM or SIGINT (SMQD_EXIT_OK), or a cluster tick that says the
 * process must stop (its exit code). */
static int wait_for_stop(const sigset_t *set, const char *path, struct daemon_parts *p,
                         struct reloads *r)
{
    for (;;) {
        int code = SMQD_EXIT_OK;
        int sig = next_signal(set, p->cluster, &code);

        if (code != SMQD_EXIT_OK)
            return code;
        if (sig == SIGHUP) {
            /* systemctl reload waits for the READY=1 that ends this. */
            /* systemd >= 253 (Type=notify-reload semantics) wants the
             * monotonic time with RELOADING=1; older versions ignore it. */
            notify_systemd("RELOADING=1\nMONOTONIC_USEC=%llu\nSTATUS=reloading %s",
                           (unsigned long long)clock_mono_us(), path);
            reload_config(path, &p->keys, p->admin, &p->tls, r);
            notify_systemd("READY=1\nSTATUS=serving");
        } else if (sig == SIGTERM || sig == SIGINT) {
            SMQ_INFO("received %s, stopping", sig == SIGTERM ? "SIGTERM" : "SIGINT");
            return SMQD_EXIT_OK;
        }
    }
}

/* Stops in reverse order: no new connections, the engine finishes what it
 * has (parked long polls answer MessageNotExist), then the sockets close. */
#define DRAIN_MAX_MS 2000

/* Waits (bounded) until every begun request has been answered. */
static void wait_requests_done(struct mns_listener *http)
{
    struct timespec pause = {0, 10 * 1000 * 1000};

    for (int waited = 0; mns_listener_active_requests(http) > 0 && waited < DRAIN_MAX_MS; waited += 10)
        nanosleep(&pause, NULL);
    if (mns_listener_active_requests(http) > 0)
        SMQ_WARN("stopping with %lld request(s) unanswered after %d ms",
                 (long long)mns_listener_active_requests(http), DRAIN_MAX_MS);
}

static void stop_parts(struct daemon_parts *p)
{
    /* No new connections; the engine finishes what it was given, answers
     * parked long polls with MessageNotExist, and refuses what comes later
     * with ServiceUnavailable; then the last responses are flushed. */
    mns_listener_quiesce(p->http);
    node_quiesce(&p->node);
    if (p->http != NULL)
        wait_requests_done(p->http);
    mns_listener_stop(p->http);
    /* Only now: until the HTTP daemon is gone, a kept-alive connection can
     * still submit, and engine_thread_submit must find the (stopped) engine
     * thread to answer ServiceUnavailable.  The same holds for admin requests. */
    admin_detach_engine_thread(p->admin);
    node_close(&p->node);
}

/*
 * The admin listener comes first, before the database is even opened, so
 * that /health answers and /ready says "starting" during a long recovery.
 * Its log line must not say "listening on": scripts wait for that line to
 * learn the MNS address.
 */
/* The admin listener's /metrics appends the MNS listener's families, and
 * on PostgreSQL the cluster's. */
static int render_http_metrics(void *arg, struct smq_buf *out)
{
    struct daemon_parts *p = arg;
    int rc = metrics_render(p->metrics, out);

    if (rc == 0 && p->cluster != NULL)
        rc = cluster_render_metrics(p->cluster, out);
    return rc;
}

/* The certificates, before either listener needs them: a bad file stops
 * the start as a configuration error. */
static int start_tls(const struct smq_config *cfg, struct daemon_parts *p)
{
    char err[1024] = "";

    if (cfg->tls_cert_file[0] != '\0'
        && tls_creds_load(cfg->tls_cert_file, cfg->tls_key_file, &p->tls.mns, err,
                          sizeof err) != 0) {
        SMQ_ERROR("[server] %s", err);
        return SMQD_EXIT_USAGE;
    }
    if (cfg->admin_enabled && cfg->admin_tls_cert_file[0] != '\0'
        && tls_creds_load(cfg->admin_tls_cert_file, cfg->admin_tls_key_file, &p->tls.admin, err,
                          sizeof err) != 0) {
        SMQ_ERROR("[admin] %s", err);
        return SMQD_EXIT_USAGE;
    }
    return SMQD_EXIT_OK;
}

static int start_admin(const struct smq_config *cfg, struct daemon_parts *p)
{
    struct admin_opts opts = {0};
    char err[512] = "";
    bool v6 = strchr(cfg->admin_host, ':') != NULL;

    if (!cfg->admin_enabled)
        return SMQD_EXIT_OK;
    opts.host = cfg->admin_host;
    opts.port = cfg->admin_port;
    opts.token = cfg->admin_token;
    opts.read_token = cfg->admin_read_token;
    opts.tls = p->tls.admin;
    opts.db_path = cfg->storage_path;
    opts.extra_metrics = render_http_metrics;
    opts.extra_arg = p;
    opts.role = p->cluster != NULL ? &p->cluster->role : NULL;
    if (admin_start(&opts, &p->admin, err, sizeof err) != 0) {
        SMQ_ERROR("listen: %s", err);
        return SMQD_EXIT_LISTEN;
    }
    SMQ_INFO("admin listener bound to %s://%s%s%s:%u%s", p->tls.admin != NULL ? "https" : "http",
             v6 ? "[" : "", cfg->admin_host,
             v6 ? "]" : "", (unsigned)admin_port(p->admin),
             !cfg->admin_token[0] ? ""
             : cfg->admin_read_token[0] ? " (token required; read-only token set)"
                                        : " (token required)");
    return SMQD_EXIT_OK;
}

/* Scripts wait for "listening on" to learn the MNS address, on either
 * backend; a node on PostgreSQL is a standby until it holds the lease. */
static void announce_ready(const struct smq_config *cfg, const struct daemon_parts *p)
{
    bool v6 = strchr(cfg->listen_host, ':') != NULL;
    unsigned port = (unsigned)mns_listener_port(p->http);
    char storage[160];

    if (p->cluster != NULL)
        snprintf(storage, sizeof storage, "storage PostgreSQL, node %s, standby until it holds "
                 "the lease", cfg->cluster_node_id);
    else
        snprintf(storage, sizeof storage, "storage %.100s, sync=%s", cfg->storage_path,
                 cfg->sync == SMQ_SYNC_FULL ? "full" : "normal");
    SMQ_INFO("smqd %s listening on %s://%s%s%s:%u (%s)", SMQD_VERSION,
             p->tls.mns != NULL ? "https" : "http", v6 ? "[" : "", cfg->listen_host,
             v6 ? "]" : "", port, storage);
    admin_set_state(p->admin, p->cluster != NULL ? ADMIN_STANDBY : ADMIN_READY);
    notify_systemd("READY=1\nSTATUS=%s on port %u",
                   p->cluster != NULL ? "standby or active" : "serving", port);
}

static int run(const char *path, const struct smq_config *cfg)
{
    struct daemon_parts parts = {0};
    struct reloads reloads = {NULL, 0};
    struct cluster cluster;
    sigset_t set;
    int code;

    block_signals(&set);
    raise_fd_limit(cfg->max_connections);
    xml_global_init();
    code = start_metrics_and_limits(cfg, &parts);
    if (code == SMQD_EXIT_OK && cfg->storage_backend == SMQ_STORE_POSTGRESQL) {
        parts.cluster = &cluster;
        if (cluster_init(&cluster, cfg, parts.metrics) != 0)
            code = SMQD_EXIT_RUNTIME;
        cluster.node = &parts.node;
    }
    if (code == SMQD_EXIT_OK)
        code = start_tls(cfg, &parts);
    if (code == SMQD_EXIT_OK)
        code = start_admin(cfg, &parts);
    if (parts.cluster != NULL)
        cluster.admin = parts.admin;
    if (code == SMQD_EXIT_OK)
        code = start_parts(cfg, &parts);
    if (code == SMQD_EXIT_OK) {
        announce_ready(cfg, &parts);
        code = wait_for_stop(&set, path, &parts, &reloads);
    }
    if (parts.cluster != NULL)
        role_demote(&cluster.role);
    admin_set_state(parts.admin, ADMIN_DRAINING);
    notify_systemd("STOPPING=1\nSTATUS=draining");
    stop_parts(&parts);
    /* Last, so that /health answers until the very end of the drain. */
    admin_stop(parts.admin);
    if (parts.cluster != NULL)
        cluster_stop(&cluster);         /* after the node closed: a standby may take over */
    tls_creds_free(parts.tls.mns);
    tls_creds_free(parts.tls.admin);
    ratelimit_free(parts.ratelimit);
    metrics_free(parts.metrics);
    free_reloads(&reloads);
    xml_global_cleanup();
    if (code == SMQD_EXIT_OK)
        SMQ_INFO("stopped");
    return code;
}

static void report_to_stderr(void *arg, bool error, const char *msg)
{
    (void)arg;
    fprintf(stderr, "smqd: %s: %s\n", error ? "error" : "warning", msg);
}

static void report_to_log(void *arg, bool error, const char *msg)
{
    (void)arg;
    if (error)
        SMQ_ERROR("%s; not starting", msg);
    else
        SMQ_WARN("%s", msg);
}

int main(int argc, char **argv)
{
    struct cli cli;
    struct smq_config cfg;
    char err[1024] = "";
    int code;

    if (parse_cli(argc, argv, &cli) != 0)
        return SMQD_EXIT_USAGE;
    config_defaults(&cfg);
    if (config_load(cli.config_path, &cfg, err, sizeof err) != 0) {
        fprintf(stderr, "smqd: %s\n", err);
        config_free(&cfg);
        return SMQD_EXIT_USAGE;
    }
    if (cli.test_only) {
        code = exposure_check(&cfg, cli.config_path, geteuid(), report_to_stderr, NULL) > 0
                   ? SMQD_EXIT_USAGE : SMQD_EXIT_OK;
        config_print(&cfg, stdout);
        fprintf(stderr, "smqd: configuration %s is %s\n", cli.config_path,
                code == SMQD_EXIT_OK ? "valid" : "refused (see the errors above)");
        config_free(&cfg);
        return code;
    }
    log_set_level(cfg.log_level);
    if (log_open(cfg.log_file) != 0)
        fprintf(stderr, "smqd: cannot open log file %s: %s; logging to stderr\n", cfg.log_file,
                strerror(errno));
    if (exposure_check(&cfg, cli.config_path, geteuid(), report_to_log, NULL) > 0)
        code = SMQD_EXIT_USAGE;
    else
        code = run(cli.config_path, &cfg);
    log_close();
    config_free(&cfg);
    return code;
}
