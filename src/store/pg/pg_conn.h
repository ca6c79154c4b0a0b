/*
 * pg_conn.h — one connection to PostgreSQL through a dsn that may list
 * several hosts (after a failover, the new primary is another host of the
 * list), for the store's connections and the lease's.
 *
 * libpq itself walks a host list, but gives up at the first host that
 * accepts the connection and then closes it during the start-up exchange
 * (a TCP proxy or load balancer whose server is gone does exactly that),
 * so the list is walked here, one host per attempt, beginning with the
 * host that worked last.
 */
#ifndef SMQD_PG_CONN_H
#define SMQD_PG_CONN_H

#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>

/*
 * Connects with smqd's defaults (connect_timeout, TCP keepalives and
 * tcp_user_timeout, so that a server that vanished is noticed in seconds),
 * which the dsn may override, and application_name, which it may not (a
 * takeover finds a former holder's sessions by it).  *last_host is the
 * index of the host to try first, and is set to the one that answered.
 * With deadline_us (monotonic; 0 = none) no host is tried after it and
 * connect_timeout is cut to what is left (libpq's floor is 2 s).
 * 0 with *out connected, or SMQ_E_INTERNAL with every host's reason in err
 * (*out NULL).
 */
int pg_conn_open(const char *dsn, const char *app_name, uint64_t deadline_us, int *last_host,
                 PGconn **out, char *err, size_t err_size);

#endif
