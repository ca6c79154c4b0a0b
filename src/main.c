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

#include "smqd/admin.h"
#include "smqd/api.h"
#include "smqd/clock.h"
#include "smqd/config.h"
#include "smqd/declare.h"
#include "smqd/exposure.h"
#include "smqd/engine.h"
#include "smqd/mns_listener.h"
#include "smqd/log.h"
#include "smqd/metrics.h"
#include "smqd/ratelimit.h"
#include "smqd/server.h"
#include "smqd/store.h"
#include "smqd/syncer.h"
#include "smqd/tls.h"
#include "smqd/xml.h"

enum exit_code {
    EXIT_OK = 0,
    EXIT_USAGE = 1,        /* bad command line or configuration */
    EXIT_STORE = 2,        /* the database cannot be opened or loaded */
    EXIT_LISTEN = 3,       /* the listen address cannot be bound */
    EXIT_RUNTIME = 4       /* a thread could not be started */
};

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
            exit(EXIT_OK);
        case 'h':
            usage(stdout);
            exit(EXIT_OK);
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

static void wait_for_stop(const sigset_t *set, const char *path, struct auth_keyring_slot *slot,
                          struct smq_admin *admin, const struct tls_parts *tls,
                          struct reloads *r)
{
    for (;;) {
        int sig = 0;
        if (sigwait(set, &sig) != 0)
            continue;
        if (sig == SIGHUP) {
            /* systemctl reload waits for the READY=1 that ends this. */
            /* systemd >= 253 (Type=notify-reload semantics) wants the
             * monotonic time with RELOADING=1; older versions ignore it. */
            notify_systemd("RELOADING=1\nMONOTONIC_USEC=%llu\nSTATUS=reloading %s",
                           (unsigned long long)clock_mono_us(), path);
            reload_config(path, slot, admin, tls, r);
            notify_systemd("READY=1\nSTATUS=serving");
            continue;
        }
        SMQ_INFO("received %s, stopping", sig == SIGTERM ? "SIGTERM" : "SIGINT");
        return;
    }
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
    struct smq_store *store;
    struct smq_syncer *syncer;           /* NULL with sync = normal */
    struct smq_engine *engine;
    struct smq_server *server;
    struct mns_listener *http;
    struct smq_metrics *metrics;         /* borrowed by the MNS and admin listeners */
    struct smq_ratelimit *ratelimit;     /* borrowed by the MNS listener */
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
        return EXIT_RUNTIME;
    }
    if (cfg->queue_qps > 0 || cfg->access_key_qps > 0)
        SMQ_INFO("request limits: %d/s per queue (burst %d), %d/s per access key (burst %d); "
                 "0 = none", cfg->queue_qps, cfg->queue_burst ? cfg->queue_burst : cfg->queue_qps,
                 cfg->access_key_qps,
                 cfg->access_key_burst ? cfg->access_key_burst : cfg->access_key_qps);
    return EXIT_OK;
}

/*
 * With sync = full, the fsync of each commit moves to the syncer, which
 * holds the answers back until it has returned (so an acknowledged write is
 * still on disk; see syncer.h).  Started after declare_queues, which needs
 * its ops answered at once.
 */
static int flush_store(void *store)
{
    return store_flush(store);
}

static int start_syncer(const struct smq_config *cfg, struct daemon_parts *p)
{
    char err[512] = "";
    struct syncer_opts sopts = {.flush = flush_store, .flush_arg = p->store,
                                .metrics = p->metrics};

    if (cfg->sync != SMQ_SYNC_FULL)
        return EXIT_OK;
    if (store_defer_fsync(p->store) != 0)
        return EXIT_STORE;
    if (syncer_start(&sopts, &p->syncer, err, sizeof err) != 0) {
        SMQ_ERROR("storage: %s", err);
        return EXIT_STORE;
    }
    engine_set_syncer(p->engine, p->syncer);
    return EXIT_OK;
}

/* Opens the store and its disk reserve; *reserve_missing tells the engine
 * to start in its storage-full mode. */
static int start_store(const struct smq_config *cfg, struct daemon_parts *p,
                       bool *reserve_missing)
{
    struct store_config scfg = {.backend = SMQ_STORE_SQLITE, .path = cfg->storage_path,
                                .sync = cfg->sync};
    char err[512] = "";
    int code;

    /* Opening may wait for a lock and recovery may take a while: say so. */
    notify_systemd("STATUS=loading the queues from %s", cfg->storage_path);
    if (store_open(&scfg, &p->store, err, sizeof err) != 0) {
        SMQ_ERROR("storage: %s: %s", cfg->storage_path, err);
        return EXIT_STORE;
    }
    admin_set_wal_path(p->admin, store_wal_path(p->store));   /* for smqd_wal_bytes */
    /* Without room for the reserve smqd still starts, in its storage-full
     * mode: receives and deletes work, sends wait until the reserve can be
     * allocated (otherwise they would take the last space deletes need). */
    code = store_reserve_init(p->store, cfg->storage_path, (uint64_t)cfg->reserve_mb << 20);
    *reserve_missing = code == SMQ_E_STORAGE_FULL;
    if (code == SMQ_E_STORAGE_FULL)
        SMQ_WARN("storage: no room for the %.1f MiB disk reserve next to %s; new messages "
                 "are refused until there is",
                 (double)store_reserve_bytes(p->store) / (1 << 20), cfg->storage_path);
    else if (code != 0)
        SMQ_WARN("storage: running without the disk reserve next to %s", cfg->storage_path);
    return EXIT_OK;
}

/* Recovers the engine from the store and applies the declared queues. */
static int start_engine(const struct smq_config *cfg, struct daemon_parts *p,
                        bool reserve_missing)
{
    struct smq_engine_opts eopts = {.clock = clock_system(), .store = p->store,
                                    .max_queues = cfg->max_queues,
                                    .reserve_margin = store_reserve_bytes(p->store),
                                    .reserve_missing = reserve_missing};
    char err[512] = "";
    int code;

    if (engine_open(&eopts, &p->engine, err, sizeof err) != 0) {
        SMQ_ERROR("recovery: %s", err);
        return EXIT_STORE;
    }
    code = declare_queues(p->engine, cfg->queues, cfg->n_queues, err, sizeof err);
    if (code != 0) {
        SMQ_ERROR("config: %s", err);
        return code == SMQ_E_INVALID_ARGUMENT ? EXIT_USAGE : EXIT_STORE;
    }
    return EXIT_OK;
}

/* The engine thread, with the syncer's flushes waking it. */
static int start_server(struct daemon_parts *p)
{
    if (server_start(p->engine, &p->server) != 0)
        return EXIT_RUNTIME;
    if (p->syncer != NULL) {
        syncer_set_idle_hook(p->syncer, server_wake, p->server);
        server_wake(p->server);         /* a flush may have ended before the hook was set */
    }
    admin_attach_server(p->admin, p->server, engine_keys(p->engine));
    return EXIT_OK;
}

static const char *url_scheme(const struct smq_config *cfg)
{
    if (cfg->url_scheme == SMQ_SCHEME_AUTO)
        return cfg->tls_cert_file[0] != '\0' ? "https" : "http";
    return cfg->url_scheme == SMQ_SCHEME_HTTPS ? "https" : "http";
}

static int start_mns_listener(const struct smq_config *cfg, struct daemon_parts *p)
{
    struct mns_listener_opts o = {
        .host = cfg->listen_host, .port = cfg->listen_port, .threads = cfg->threads,
        .max_connections = cfg->max_connections,
        .max_connections_per_ip = cfg->max_connections_per_ip,
        .tls = p->tls.mns, .url_scheme = url_scheme(cfg),
        .idle_timeout_s = cfg->idle_timeout_s,
        .request_timeout_s = cfg->request_timeout_s,
        .max_body_bytes = (size_t)cfg->max_body_bytes, .log_requests = cfg->log_requests,
        .api = {.keys = &p->keys, .handle_keys = engine_keys(p->engine),
                .clock = clock_system(), .max_skew_ms = (int64_t)cfg->max_clock_skew_s * 1000},
        .engine = p->server, .metrics = p->metrics, .ratelimit = p->ratelimit};
    char err[512] = "";

    p->keys.current = (struct auth_keyring *)&cfg->keys;
    if (mns_listener_start(&o, &p->http, err, sizeof err) != 0) {
        SMQ_ERROR("listen: %s", err);
        return EXIT_LISTEN;
    }
    return EXIT_OK;
}

/* Store, engine, syncer, engine thread, then the MNS listener: each needs
 * the ones before it. */
static int start_parts(const struct smq_config *cfg, struct daemon_parts *p)
{
    bool reserve_missing = false;
    int code = start_store(cfg, p, &reserve_missing);

    if (code == EXIT_OK)
        code = start_engine(cfg, p, reserve_missing);
    if (code == EXIT_OK)
        code = start_syncer(cfg, p);
    if (code == EXIT_OK)
        code = start_server(p);
    if (code == EXIT_OK)
        code = start_mns_listener(cfg, p);
    return code;
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
    server_stop(p->server);
    /* The syncer answers on its own thread and its hook wakes the server:
     * both must be over before either is freed (unbounded on purpose: an
     * answer must not reach a freed connection, however slow the disk). */
    syncer_drain(p->syncer);
    if (p->http != NULL)
        wait_requests_done(p->http);
    mns_listener_stop(p->http);
    /* Only now: until the HTTP daemon is gone, a kept-alive connection can
     * still submit, and server_submit must find the (stopped) server to
     * answer ServiceUnavailable.  The same holds for admin requests. */
    admin_detach_server(p->admin);
    server_free(p->server);
    engine_close(p->engine);
    if (p->syncer != NULL && syncer_failed(p->syncer))
        store_no_checkpoint_on_close(p->store);
    syncer_stop(p->syncer);             /* flushes what the engine's last run committed */
    store_close(p->store);
}

/*
 * The admin listener comes first, before the database is even opened, so
 * that /health answers and /ready says "starting" during a long recovery.
 * Its log line must not say "listening on": scripts wait for that line to
 * learn the MNS address.
 */
/* The admin listener's /metrics appends the MNS listener's families. */
static int render_http_metrics(void *arg, struct smq_buf *out)
{
    return metrics_render(arg, out);
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
        return EXIT_USAGE;
    }
    if (cfg->admin_enabled && cfg->admin_tls_cert_file[0] != '\0'
        && tls_creds_load(cfg->admin_tls_cert_file, cfg->admin_tls_key_file, &p->tls.admin, err,
                          sizeof err) != 0) {
        SMQ_ERROR("[admin] %s", err);
        return EXIT_USAGE;
    }
    return EXIT_OK;
}

static int start_admin(const struct smq_config *cfg, struct daemon_parts *p)
{
    struct admin_opts opts = {0};
    char err[512] = "";
    bool v6 = strchr(cfg->admin_host, ':') != NULL;

    if (!cfg->admin_enabled)
        return EXIT_OK;
    opts.host = cfg->admin_host;
    opts.port = cfg->admin_port;
    opts.token = cfg->admin_token;
    opts.read_token = cfg->admin_read_token;
    opts.tls = p->tls.admin;
    opts.db_path = cfg->storage_path;
    opts.extra_metrics = render_http_metrics;
    opts.extra_arg = p->metrics;
    if (admin_start(&opts, &p->admin, err, sizeof err) != 0) {
        SMQ_ERROR("listen: %s", err);
        return EXIT_LISTEN;
    }
    SMQ_INFO("admin listener bound to %s://%s%s%s:%u%s", p->tls.admin != NULL ? "https" : "http",
             v6 ? "[" : "", cfg->admin_host,
             v6 ? "]" : "", (unsigned)admin_port(p->admin),
             !cfg->admin_token[0] ? ""
             : cfg->admin_read_token[0] ? " (token required; read-only token set)"
                                        : " (token required)");
    return EXIT_OK;
}

static void announce_ready(const struct smq_config *cfg, const struct daemon_parts *p)
{
    bool v6 = strchr(cfg->listen_host, ':') != NULL;

    SMQ_INFO("smqd %s listening on %s://%s%s%s:%u (storage %s, sync=%s)", SMQD_VERSION,
             p->tls.mns != NULL ? "https" : "http", v6 ? "[" : "", cfg->listen_host, v6 ? "]" : "", (unsigned)mns_listener_port(p->http),
             cfg->storage_path, cfg->sync == SMQ_SYNC_FULL ? "full" : "normal");
    admin_set_state(p->admin, ADMIN_READY);
    notify_systemd("READY=1\nSTATUS=serving on port %u", (unsigned)mns_listener_port(p->http));
}

static int run(const char *path, const struct smq_config *cfg)
{
    struct daemon_parts parts = {0};
    struct reloads reloads = {NULL, 0};
    sigset_t set;
    int code;

    block_signals(&set);
    raise_fd_limit(cfg->max_connections);
    xml_global_init();
    code = start_metrics_and_limits(cfg, &parts);
    if (code == EXIT_OK)
        code = start_tls(cfg, &parts);
    if (code == EXIT_OK)
        code = start_admin(cfg, &parts);
    if (code == EXIT_OK)
        code = start_parts(cfg, &parts);
    if (code == EXIT_OK) {
        announce_ready(cfg, &parts);
        wait_for_stop(&set, path, &parts.keys, parts.admin, &parts.tls, &reloads);
    }
    admin_set_state(parts.admin, ADMIN_DRAINING);
    notify_systemd("STOPPING=1\nSTATUS=draining");
    stop_parts(&parts);
    /* Last, so that /health answers until the very end of the drain. */
    admin_stop(parts.admin);
    tls_creds_free(parts.tls.mns);
    tls_creds_free(parts.tls.admin);
    ratelimit_free(parts.ratelimit);
    metrics_free(parts.metrics);
    free_reloads(&reloads);
    xml_global_cleanup();
    if (code == EXIT_OK)
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
        return EXIT_USAGE;
    config_defaults(&cfg);
    if (config_load(cli.config_path, &cfg, err, sizeof err) != 0) {
        fprintf(stderr, "smqd: %s\n", err);
        config_free(&cfg);
        return EXIT_USAGE;
    }
    if (cli.test_only) {
        code = exposure_check(&cfg, cli.config_path, geteuid(), report_to_stderr, NULL) > 0
                   ? EXIT_USAGE : EXIT_OK;
        config_print(&cfg, stdout);
        fprintf(stderr, "smqd: configuration %s is %s\n", cli.config_path,
                code == EXIT_OK ? "valid" : "refused (see the errors above)");
        config_free(&cfg);
        return code;
    }
    log_set_level(cfg.log_level);
    if (log_open(cfg.log_file) != 0)
        fprintf(stderr, "smqd: cannot open log file %s: %s; logging to stderr\n", cfg.log_file,
                strerror(errno));
    if (exposure_check(&cfg, cli.config_path, geteuid(), report_to_log, NULL) > 0)
        code = EXIT_USAGE;
    else
        code = run(cli.config_path, &cfg);
    log_close();
    config_free(&cfg);
    return code;
}
