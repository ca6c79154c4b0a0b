/*
 * test_pg_conn.c — unit tests of connecting through a multi-host dsn
 * (pg_conn.h) against a real throw-away PostgreSQL 15 (ctest fixture "pg"):
 * a host that accepts and then closes during the start-up exchange (a TCP
 * proxy whose server is gone) is passed over for the next one, the host
 * that answered is tried first next time, a dsn's own setting overrides a
 * default but not application_name, and when no host answers every
 * host's reason is reported.  Without a server the program exits 77.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <libpq-fe.h>

#include "pg_conn.h"
#include "pg_scratch.h"

/* A listener that reads what a client sends first, then hangs up. */
struct closer {
    int fd;
    int port;
    pthread_t thread;
};

static void *closer_main(void *arg)
{
    struct closer *c = arg;
    char buf[512];

    for (;;) {
        int s = accept(c->fd, NULL, NULL);
        if (s < 0)
            return NULL;
        (void)read(s, buf, sizeof buf);
        close(s);
    }
}

static void closer_start(struct closer *c)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;

    c->fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(c->fd >= 0);
    assert_int_equal(bind(c->fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(c->fd, 16), 0);
    assert_int_equal(getsockname(c->fd, (struct sockaddr *)&a, &len), 0);
    c->port = ntohs(a.sin_port);
    assert_int_equal(pthread_create(&c->thread, NULL, closer_main, c), 0);
}

static void closer_stop(struct closer *c)
{
    shutdown(c->fd, SHUT_RDWR);
    close(c->fd);
    pthread_join(c->thread, NULL);
}

/* The base dsn's port (pg-server.sh writes host=127.0.0.1 port=N ...). */
static int real_port(void)
{
    char base[2048];
    const char *p;

    pg_scratch_base(base, sizeof base);
    p = strstr(base, "port=");
    return p != NULL ? atoi(p + 5) : -1;
}

static void test_closing_host_is_passed_over_and_the_good_one_kept(void **state)
{
    struct closer c;
    char dsn[512], err[1024];
    PGconn *conn = NULL;
    int last = 0;

    (void)state;
    closer_start(&c);
    snprintf(dsn, sizeof dsn, "host=127.0.0.1,127.0.0.1 port=%d,%d dbname=smqd user=smqd "
             "sslmode=disable target_session_attrs=read-write", c.port, real_port());
    assert_int_equal(pg_conn_open(dsn, "smqd-test-conn", 0, &last, &conn, err, sizeof err), 0);
    assert_int_equal(last, 1);
    assert_string_equal(PQparameterStatus(conn, "application_name"), "smqd-test-conn");
    PQfinish(conn);
    /* The host that answered is asked first: the closer sees nobody. */
    assert_int_equal(pg_conn_open(dsn, "smqd-test-conn", 0, &last, &conn, err, sizeof err), 0);
    assert_int_equal(last, 1);
    PQfinish(conn);
    closer_stop(&c);
}

static const char *option_of(PGconn *conn, const char *key, char *out, size_t size)
{
    PQconninfoOption *opts = PQconninfo(conn);

    out[0] = '\0';
    for (PQconninfoOption *o = opts; o != NULL && o->keyword != NULL; o++)
        if (strcmp(o->keyword, key) == 0 && o->val != NULL)
            snprintf(out, size, "%s", o->val);
    PQconninfoFree(opts);
    return out;
}

static void test_dsn_overrides_defaults_but_not_application_name(void **state)
{
    char dsn[512], err[1024], val[64];
    PGconn *conn = NULL;
    int last = 0;

    (void)state;
    snprintf(dsn, sizeof dsn, "host=127.0.0.1 port=%d dbname=smqd user=smqd", real_port());
    assert_int_equal(pg_conn_open(dsn, "ours", 0, &last, &conn, err, sizeof err), 0);
    assert_string_equal(option_of(conn, "tcp_user_timeout", val, sizeof val), "10000");
    assert_string_equal(option_of(conn, "keepalives", val, sizeof val), "1");
    PQfinish(conn);
    snprintf(dsn, sizeof dsn, "host=127.0.0.1 port=%d dbname=smqd user=smqd "
             "application_name=theirs tcp_user_timeout=1234", real_port());
    assert_int_equal(pg_conn_open(dsn, "ours", 0, &last, &conn, err, sizeof err), 0);
    assert_string_equal(PQparameterStatus(conn, "application_name"), "ours");
    assert_string_equal(option_of(conn, "tcp_user_timeout", val, sizeof val), "1234");
    PQfinish(conn);
}

static void test_every_hosts_reason_is_reported(void **state)
{
    struct closer c;
    char dsn[512], err[1024];
    PGconn *conn = (PGconn *)1;
    int last = 0;

    (void)state;
    closer_start(&c);
    snprintf(dsn, sizeof dsn, "host=127.0.0.1,127.0.0.1 port=%d,1 dbname=smqd user=smqd "
             "sslmode=disable connect_timeout=2", c.port);
    assert_int_not_equal(pg_conn_open(dsn, "x", 0, &last, &conn, err, sizeof err), 0);
    assert_null(conn);
    assert_non_null(strstr(err, "closed the connection"));
    assert_non_null(strstr(err, "port 1 failed"));
    assert_null(strchr(err, '\n'));
    closer_stop(&c);
}

static void test_bad_dsn_is_refused(void **state)
{
    char err[512];
    PGconn *conn = NULL;
    int last = 0;

    (void)state;
    assert_int_not_equal(pg_conn_open("host=x nonsense_key=1", "x", 0, &last, &conn, err,
                                      sizeof err), 0);
    assert_null(conn);
    assert_non_null(strstr(err, "not a libpq connection string"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_closing_host_is_passed_over_and_the_good_one_kept),
        cmocka_unit_test(test_dsn_overrides_defaults_but_not_application_name),
        cmocka_unit_test(test_every_hosts_reason_is_reported),
        cmocka_unit_test(test_bad_dsn_is_refused),
    };

    if (!pg_scratch_available() || real_port() <= 0) {
        fprintf(stderr, "test_pg_conn: no PostgreSQL (SMQD_TEST_PG_DSN / SMQD_TEST_PG_DIR)\n");
        return 77;
    }
    return cmocka_run_group_tests(tests, NULL, NULL);
}
