/*
 * admin.h — the admin listener: a second, separate HTTP listener for
 * operators (docs/admin-api.md): /health, /ready, /metrics and the /v1 JSON
 * API used by smqctl.  No MNS signatures; an optional Bearer token, and
 * beside it an optional read-only one (probes and queue statistics only).
 *
 * It starts first and stops last, so that probes get answers while a big
 * database is recovered and while smqd drains.  main.c reports the process
 * state (admin_set_state) and lends the engine thread
 * (admin_attach_engine_thread) once it runs; before that and after
 * admin_detach_engine_thread, JSON API calls answer 503 ServiceUnavailable
 * and /metrics has only process families.
 *
 * The listener runs on the shared HTTP glue (httpd.h): a request that needs
 * the engine is suspended while the engine works, with a deadline (2 s for
 * a probe, 30 s for an API call) past which it is answered anyway, so a
 * stalled engine (a hung disk) never holds a thread or silences /health.
 *
 * Every function accepts a NULL admin (listener switched off) and then does
 * nothing, so the caller needs no "if enabled" around each call.
 */
#ifndef SMQD_ADMIN_H
#define SMQD_ADMIN_H

#include <stddef.h>
#include <stdint.h>

#include "smqd/admin_probe.h"
#include "smqd/buf.h"
#include "smqd/handle.h"
#include "smqd/role.h"
#include "smqd/engine_thread.h"

struct tls_creds;

struct admin_opts {
    const char *host;            /* IPv4/IPv6 literal or "localhost" */
    uint16_t port;               /* 0 = any free port */
    const char *token;           /* NULL or "" = no token */
    /* NULL or "" = none; else the token of the read-only requests, ignored
     * without token (docs/admin-api.md) */
    const char *read_token;
    struct tls_creds *tls;       /* HTTPS with these (borrowed); NULL = plain HTTP */
    const char *db_path;         /* storage.path, for smqd_db_bytes / smqd_wal_bytes */
    /*
     * Optional: more Prometheus families appended to /metrics after smqd's
     * own (e.g. the HTTP request metrics).  Called on an admin thread; must
     * be thread-safe.  Returns 0 or SMQ_E_NOMEM.
     */
    int (*extra_metrics)(void *arg, struct smq_buf *out);
    void *extra_arg;
    /* Borrowed; NULL = no lease.  Otherwise READY reads as STANDBY
     * whenever role_serving() does not hold (/ready 503 "standby"). */
    const struct smq_role *role;
};

struct smq_admin;

/* Binds and starts serving (state STARTING).  0, or an SMQ_E_* code with a
 * reason in err. */
int admin_start(const struct admin_opts *opts, struct smq_admin **out, char *err,
                size_t err_size);
/* The bound port (the real one when 0 was asked for). */
uint16_t admin_port(const struct smq_admin *a);
void admin_set_state(struct smq_admin *a, enum admin_state state);
/* Replaces both Bearer tokens (NULL or "" = none; read_token is ignored
 * without token) at once for the requests that follow, e.g. on SIGHUP: a
 * request sees the old pair or the new one.  a may be NULL (no admin
 * listener).  0, or SMQ_E_NOMEM (the old tokens stay). */
int admin_set_tokens(struct smq_admin *a, const char *token, const char *read_token);
/* Where SQLite keeps the WAL (store_wal_path), for smqd_wal_bytes: the
 * gauge is absent until this is called.  a may be NULL. */
void admin_set_wal_path(struct smq_admin *a, const char *wal_path);
/* From now on API calls go to s; keys format MessageIds (engine_keys). */
void admin_attach_engine_thread(struct smq_admin *a, struct smq_engine_thread *s,
                                const struct handle_keys *keys);
/* No more submissions to the engine thread; waits until none is in flight.  Call
 * after engine_thread_stop (which finishes every submitted op) and before
 * engine_thread_free. */
void admin_detach_engine_thread(struct smq_admin *a);
/* Closes the listener and frees a. */
void admin_stop(struct smq_admin *a);

#endif
