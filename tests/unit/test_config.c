/*
 * test_config.c — the settings table, the loader's error messages (exact
 * "path:LINE:" prefixes), the key ring, the printer, and the sample file
 * conf/smqd.conf, which must load as-is and spell every default.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "smqd/config.h"
#include "smqd/errors.h"
#include "smqd/log.h"

/* A loadable [auth] section for tests whose subject is elsewhere. */
#define AUTH_OK "[auth]\naccess_key_id = id1\naccess_key_secret = s3cret-one\n"

struct fixture {
    char dir[64];
    char path[128];
    struct smq_config cfg;
    char err[1024];
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));

    assert_non_null(f);
    snprintf(f->dir, sizeof(f->dir), "/tmp/test_config.XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->path, sizeof(f->path), "%s/smqd.conf", f->dir);
    config_defaults(&f->cfg);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    config_free(&f->cfg);
    unlink(f->path);
    rmdir(f->dir);
    free(f);
    return 0;
}

static void write_file(const char *path, const char *text)
{
    FILE *fp = fopen(path, "w");

    assert_non_null(fp);
    assert_int_equal(fputs(text, fp) >= 0, 1);
    assert_int_equal(fclose(fp), 0);
}

/* Writes text to the fixture's file and loads it. */
static int load_text(struct fixture *f, const char *text)
{
    write_file(f->path, text);
    config_free(&f->cfg);
    f->err[0] = '\0';
    return config_load(f->path, &f->cfg, f->err, sizeof(f->err));
}

/* Asserts that loading text fails with err == "<path>:<line>: <...needle...>". */
static void expect_error(struct fixture *f, const char *text, int line, const char *needle)
{
    char prefix[256];

    assert_int_equal(load_text(f, text), SMQ_E_INVALID_ARGUMENT);
    snprintf(prefix, sizeof(prefix), "%s:%d: ", f->path, line);
    if (strncmp(f->err, prefix, strlen(prefix)) != 0 || strstr(f->err, needle) == NULL)
        fail_msg("for:\n%s\nexpected \"%s...%s\", got \"%s\"", text, prefix, needle, f->err);
}

static void expect_ok(struct fixture *f, const char *text)
{
    if (load_text(f, text) != 0)
        fail_msg("for:\n%s\nunexpected error: %s", text, f->err);
}

static void test_config_defaults(void **state)
{
    struct fixture *f = *state;
    struct smq_config *c = &f->cfg;

    assert_string_equal(c->listen_host, "127.0.0.1");
    assert_int_equal(c->listen_port, 8080);
    assert_int_equal(c->threads, 2);
    assert_string_equal(c->storage_path, "./smqd.db");
    assert_int_equal(c->sync, SMQ_SYNC_FULL);
    assert_null(c->keys.keys);
    assert_int_equal(c->keys.n, 0);
    assert_int_equal(c->max_clock_skew_s, 900);
    assert_int_equal(c->max_connections, 4096);
    assert_int_equal(c->max_connections_per_ip, 1024);
    assert_string_equal(c->trusted_proxies_text, "");
    assert_int_equal(c->trusted_proxies.n, 0);
    assert_int_equal(c->idle_timeout_s, 75);
    assert_int_equal(c->request_timeout_s, 30);
    assert_int_equal(c->max_queues, 1000);
    assert_int_equal(c->max_topics, 1000);
    assert_int_equal(c->max_subscriptions_per_topic, 1000);
    assert_string_equal(c->topics_account_id, "1000000000000000");
    assert_string_equal(c->topics_signing_key_file, "");
    assert_string_equal(c->topics_signing_cert_file, "");
    assert_int_equal(c->topics_push_concurrency, 64);
    assert_int_equal(c->topics_push_timeout_ms, 5000);
    assert_string_equal(c->topics_push_ca_file, "");
    assert_int_equal(c->max_body_bytes, 1048576);
    assert_int_equal(c->log_level, SMQ_LOG_INFO);
    assert_string_equal(c->log_file, "-");
    assert_true(c->log_requests);
    /* Freeing defaults, and freeing twice, is harmless. */
    config_free(c);
    config_free(c);
}

/* The sample, from the test binary's or the caller's point of view. */
static int find_sample(char *out, size_t size)
{
    static const char *const rel[] = {"../conf/smqd.conf", "../../conf/smqd.conf",
                                      "conf/smqd.conf"};
    const char *src = getenv("SMQD_SOURCE_DIR");
    char exe[PATH_MAX];
    ssize_t n;

    if (src != NULL && *src) {
        snprintf(out, size, "%s/conf/smqd.conf", src);
        return access(out, R_OK);
    }
    for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
        snprintf(out, size, "%s", rel[i]);
        if (access(out, R_OK) == 0)
            return 0;
    }
    /* ctest may run us from elsewhere: try relative to the binary
     * (build/tests/test_config -> ../../conf). */
    n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0)
        return -1;
    exe[n] = '\0';
    *strrchr(exe, '/') = '\0';
    snprintf(out, size, "%s/../../conf/smqd.conf", exe);
    return access(out, R_OK);
}

static void load_sample(struct fixture *f)
{
    char sample[PATH_MAX + 32];

    if (find_sample(sample, sizeof(sample)) != 0)
        fail_msg("conf/smqd.conf not found; set SMQD_SOURCE_DIR to the source tree");
    config_free(&f->cfg);
    if (config_load(sample, &f->cfg, f->err, sizeof(f->err)) != 0)
        fail_msg("sample does not load: %s", f->err);
}

static void test_config_sample_loads(void **state)
{
    struct fixture *f = *state;

    load_sample(f);
    assert_string_equal(f->cfg.listen_host, "127.0.0.1");
    assert_int_equal(f->cfg.listen_port, 8080);
    assert_string_equal(f->cfg.storage_path, "./smqd.db");
    assert_int_equal(f->cfg.sync, SMQ_SYNC_FULL);
    assert_int_equal(f->cfg.keys.n, 1);
    assert_string_equal(f->cfg.keys.keys[0].id, "smqd-demo-key");
    assert_string_equal(f->cfg.keys.keys[0].secret, "smqd-demo-secret-change-me");
}

/* Every "key = value" line config_print writes for the defaults must be in
 * the sample verbatim: the sample lists every key, with its default. */
static void test_config_sample_spells_every_default(void **state)
{
    struct fixture *f = *state;
    struct smq_config defaults;
    char *printed = NULL, *sample_text = NULL, *save = NULL;
    size_t printed_len = 0, sample_len = 0;
    FILE *mem;
    char sample[PATH_MAX + 32];
    int checked = 0;

    config_defaults(&defaults);
    mem = open_memstream(&printed, &printed_len);
    assert_non_null(mem);
    config_print(&defaults, mem);
    fclose(mem);

    assert_int_equal(find_sample(sample, sizeof(sample)), 0);
    mem = fopen(sample, "r");
    assert_non_null(mem);
    sample_text = calloc(1, 65536);
    assert_non_null(sample_text);
    sample_len = fread(sample_text, 1, 65535, mem);
    fclose(mem);
    assert_true(sample_len > 0);

    for (char *line = strtok_r(printed, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char needle[512];
        if (line[0] == '#' || line[0] == '[' || line[0] == '\0')
            continue;
        snprintf(needle, sizeof(needle), "\n%s\n", line);
        if (strstr(sample_text, needle) == NULL)
            fail_msg("conf/smqd.conf lacks the default line \"%s\"", line);
        checked++;
    }
    assert_int_equal(checked, 39);   /* every row but the three key rows and the [admin] tokens */
    /* The sample documents the key.<ID> form, commented out. */
    assert_non_null(strstr(sample_text, "\n# key."));
    free(sample_text);
    free(printed);
    (void)f;
}

static void test_config_missing_file(void **state)
{
    struct fixture *f = *state;
    char expect[256];

    assert_int_equal(config_load("/nonexistent/smqd.conf", &f->cfg, f->err, sizeof(f->err)), SMQ_E_INVALID_ARGUMENT);
    snprintf(expect, sizeof(expect), "/nonexistent/smqd.conf: cannot open: %s",
             strerror(ENOENT));
    assert_string_equal(f->err, expect);
    /* cfg holds the defaults after a failure. */
    assert_int_equal(f->cfg.threads, 2);
    assert_int_equal(f->cfg.keys.n, 0);
}

static void test_config_directory_is_not_a_file(void **state)
{
    struct fixture *f = *state;

    assert_int_equal(config_load(f->dir, &f->cfg, f->err, sizeof(f->err)), SMQ_E_INVALID_ARGUMENT);
    assert_non_null(strstr(f->err, "cannot"));
    assert_int_equal(strncmp(f->err, f->dir, strlen(f->dir)), 0);
}

static void test_config_no_key(void **state)
{
    struct fixture *f = *state;
    char expect[256];

    assert_int_equal(load_text(f, "[server]\nthreads = 4\n"), SMQ_E_INVALID_ARGUMENT);
    snprintf(expect, sizeof(expect),
             "%s: no access key configured ([auth] access_key_id and access_key_secret)",
             f->path);
    assert_string_equal(f->err, expect);
    /* An empty file is the same: the key pair is the one required setting. */
    assert_int_equal(load_text(f, ""), SMQ_E_INVALID_ARGUMENT);
    assert_string_equal(f->err, expect);
}

struct bad_case {
    const char *text;
    int line;
    const char *needle;
};

static void run_bad_cases(struct fixture *f, const struct bad_case *cases, size_t n)
{
    for (size_t i = 0; i < n; i++)
        expect_error(f, cases[i].text, cases[i].line, cases[i].needle);
}

static void test_config_bad_integers(void **state)
{
    static const struct bad_case cases[] = {
        {"[server]\nthreads = abc\n", 2,
         "[server] threads = \"abc\": not an integer (allowed: 1..64)"},
        {"[server]\nthreads = 0\n", 2, "[server] threads = \"0\": out of range (allowed: 1..64)"},
        {"[server]\nthreads = 65\n", 2, "threads = \"65\": out of range (allowed: 1..64)"},
        {"[server]\nthreads = -1\n", 2, "threads = \"-1\": out of range"},
        {"[server]\nthreads = 4x\n", 2, "threads = \"4x\": not an integer"},
        {"[server]\nthreads = 4 4\n", 2, "threads = \"4 4\": not an integer"},
        {"[server]\nthreads = +4\n", 2, "threads = \"+4\": not an integer"},
        {"[server]\nthreads = 0x10\n", 2, "threads = \"0x10\": not an integer"},
        {"[server]\nthreads =\n", 2, "[server] threads = \"\": empty value (allowed: 1..64)"},
        {"[server]\nthreads = 99999999999999999999999\n", 2, "out of range (allowed: 1..64)"},
        {"[server]\nthreads = 4294967298\n", 2, "out of range"},
        {"\n\n[auth]\nmax_clock_skew_s = 86401\n", 4,
         "[auth] max_clock_skew_s = \"86401\": out of range (allowed: 1..86400)"},
        {"[limits]\nmax_connections = 100001\n", 2, "(allowed: 1..100000)"},
        {"[limits]\nidle_timeout_s = 3601\n", 2, "(allowed: 1..3600)"},
        {"[limits]\nrequest_timeout_s = 0\n", 2, "(allowed: 1..3600)"},
        {"[limits]\nmax_queues = 1000001\n", 2, "(allowed: 1..1000000)"},
        {"[limits]\nmax_body_bytes = 65535\n", 2,
         "[limits] max_body_bytes = \"65535\": out of range (allowed: 65536..16777216)"},
        {"[limits]\nmax_body_bytes = 16777217\n", 2, "(allowed: 65536..16777216)"},
        {"[limits]\nmax_topics = 0\n", 2, "(allowed: 1..1000000)"},
        {"[limits]\nmax_subscriptions_per_topic = 100001\n", 2, "(allowed: 1..100000)"},
        {"[topics]\naccount_id = a b\n", 2, "[topics] account_id"},
        {"[topics]\ncertificate_url = ftp://h/c.pem\n", 2,
         "[topics] certificate_url = \"ftp://h/c.pem\": not an http:// or https:// URL"},
        {"[topics]\ncertificate_url = mq.example.com/c.pem\n", 2, "not an http:// or https:// URL"},
        {"[topics]\npush_concurrency = 0\n", 2, "(allowed: 1..1024)"},
        {"[topics]\npush_concurrency = 1025\n", 2, "(allowed: 1..1024)"},
        {"[topics]\npush_timeout_ms = 99\n", 2, "(allowed: 100..60000)"},
    };

    run_bad_cases(*state, cases, sizeof(cases) / sizeof(cases[0]));
}

static void test_config_integer_bounds_accepted(void **state)
{
    struct fixture *f = *state;

    expect_ok(f, AUTH_OK "[server]\nthreads = 64\n[limits]\nmax_body_bytes = 65536\n"
                 "max_queues = 1000000\nmax_connections = 1\n");
    assert_int_equal(f->cfg.threads, 64);
    assert_int_equal(f->cfg.max_body_bytes, 65536);
    assert_int_equal(f->cfg.max_queues, 1000000);
    assert_int_equal(f->cfg.max_connections, 1);
}

static void test_config_bad_enums_and_bools(void **state)
{
    static const struct bad_case cases[] = {
        {"[storage]\nsync = fast\n", 2,
         "[storage] sync = \"fast\": invalid value (allowed: full, normal)"},
        {"[storage]\nsync =\n", 2, "[storage] sync = \"\": empty value (allowed: full, normal)"},
        {"[log]\nlevel = verbose\n", 2,
         "[log] level = \"verbose\": invalid value (allowed: error, warn, info, debug)"},
        {"[log]\nrequests = maybe\n", 2,
         "[log] requests = \"maybe\": invalid value "
         "(allowed: true, false, yes, no, on, off, 1, 0)"},
        {"[log]\nrequests = 2\n", 2, "requests = \"2\": invalid value"},
        {"[storage]\npath =\n", 2, "[storage] path = \"\": empty value"},
        {"[storage]\npath = \"./x.db\"\n", 2, "not quoted"},
    };

    run_bad_cases(*state, cases, sizeof(cases) / sizeof(cases[0]));
}

static void test_config_sync_values(void **state)
{
    struct fixture *f = *state;

    expect_ok(f, AUTH_OK "[storage]\nsync = normal\n");
    assert_int_equal(f->cfg.sync, SMQ_SYNC_NORMAL);
    expect_ok(f, AUTH_OK "[storage]\nsync = full\n");
    assert_int_equal(f->cfg.sync, SMQ_SYNC_FULL);
    expect_ok(f, AUTH_OK "[storage]\nsync = NORMAL\n");
    assert_int_equal(f->cfg.sync, SMQ_SYNC_NORMAL);
}

static void test_config_bool_spellings(void **state)
{
    static const char *const yes[] = {"true", "yes", "on", "1", "TRUE", "Yes"};
    static const char *const no[] = {"false", "no", "off", "0", "FALSE", "Off"};
    struct fixture *f = *state;
    char text[256];

    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        snprintf(text, sizeof(text), AUTH_OK "[log]\nrequests = %s\n", no[i]);
        expect_ok(f, text);
        assert_false(f->cfg.log_requests);
        snprintf(text, sizeof(text), AUTH_OK "[log]\nrequests = %s\n", yes[i]);
        expect_ok(f, text);
        assert_true(f->cfg.log_requests);
    }
}

static void test_config_log_settings(void **state)
{
    struct fixture *f = *state;

    expect_ok(f, AUTH_OK "[log]\nlevel = debug\nfile = /var/log/smqd.log\n");
    assert_int_equal(f->cfg.log_level, SMQ_LOG_DEBUG);
    assert_string_equal(f->cfg.log_file, "/var/log/smqd.log");
    /* "" and "-" both mean stderr and are stored as "-". */
    expect_ok(f, AUTH_OK "[log]\nfile =\n");
    assert_string_equal(f->cfg.log_file, "-");
    expect_ok(f, AUTH_OK "[log]\nfile = -\nlevel = error\n");
    assert_string_equal(f->cfg.log_file, "-");
    assert_int_equal(f->cfg.log_level, SMQ_LOG_ERROR);
}

static void test_config_listen_forms(void **state)
{
    struct fixture *f = *state;

    expect_ok(f, AUTH_OK "[server]\nlisten = 127.0.0.1:0\n");
    assert_string_equal(f->cfg.listen_host, "127.0.0.1");
    assert_int_equal(f->cfg.listen_port, 0);
    expect_ok(f, AUTH_OK "[server]\nlisten = [::1]:8081\n");
    assert_string_equal(f->cfg.listen_host, "::1");
    assert_int_equal(f->cfg.listen_port, 8081);
    expect_ok(f, AUTH_OK "[server]\nlisten = [::]:65535\n");
    assert_string_equal(f->cfg.listen_host, "::");
    assert_int_equal(f->cfg.listen_port, 65535);
    expect_ok(f, AUTH_OK "[server]\nlisten = localhost:9000\n");
    assert_string_equal(f->cfg.listen_host, "localhost");
    assert_int_equal(f->cfg.listen_port, 9000);
    expect_ok(f, AUTH_OK "[server]\nlisten = 0.0.0.0:80\n");
    assert_string_equal(f->cfg.listen_host, "0.0.0.0");
}

static void test_config_listen_errors(void **state)
{
    static const struct bad_case cases[] = {
        {"[server]\nlisten = 127.0.0.1\n", 2,
         "[server] listen = \"127.0.0.1\": missing :PORT (allowed: IPv4:PORT, "
         "localhost:PORT or [IPv6]:PORT with PORT 0..65535)"},
        {"[server]\nlisten = 127.0.0.1:70000\n", 2,
         "listen = \"127.0.0.1:70000\": port out of range"},
        {"[server]\nlisten = 127.0.0.1:\n", 2, "missing port"},
        {"[server]\nlisten = 127.0.0.1:80a\n", 2, "port is not a number"},
        {"[server]\nlisten = 127.0.0.1:-1\n", 2, "port out of range"},
        {"[server]\nlisten = :8080\n", 2, "missing host"},
        {"[server]\nlisten = example.com:80\n", 2, "host must be an IPv4 address or localhost"},
        {"[server]\nlisten = 256.1.1.1:80\n", 2, "host must be an IPv4 address"},
        {"[server]\nlisten = ::1:8080\n", 2, "must be in brackets"},
        {"[server]\nlisten = [::1]\n", 2, "missing :PORT"},
        {"[server]\nlisten = [::1:8080\n", 2, "missing ']'"},
        {"[server]\nlisten = [1.2.3.4]:80\n", 2, "invalid IPv6 address"},
        {"[server]\nlisten =\n", 2, "listen = \"\": empty value"},
    };

    run_bad_cases(*state, cases, sizeof(cases) / sizeof(cases[0]));
}

static void test_config_unknown_key_and_section(void **state)
{
    static const struct bad_case cases[] = {
        {"[server]\nport = 80\n", 2,
         "[server] unknown key \"port\" (known: listen, threads, tls_cert_file, tls_key_file, "
         "url_scheme, trusted_proxies)"},
        {"[server]\nthreads = 2\n\n[store]\npath = x\n", 4,
         "unknown section [store] (known: server, storage, cluster, auth, limits, log, admin, queue.<NAME>, "
         "grant.<ACCESS_KEY_ID>)"},
        /* A header with nothing under it is still checked. */
        {"[bogus]\n", 1, "unknown section [bogus]"},
        {"threads = 2\n", 1, "key \"threads\" is outside any [section]"},
        {"[auth]\nkey = x\n", 2, "[auth] unknown key \"key\""},
        {"[Server]\nthreads = 2\n", 1, "unknown section [Server]"},
    };

    run_bad_cases(*state, cases, sizeof(cases) / sizeof(cases[0]));
}

static void test_config_duplicate_key(void **state)
{
    static const struct bad_case cases[] = {
        {"[server]\nthreads = 2\nthreads = 3\n", 3,
         "[server] threads: duplicate key (first set on line 2)"},
        /* Reopening a section does not reset what was set in it. */
        {"[log]\nlevel = info\n[server]\nthreads = 2\n[log]\nlevel = debug\n", 6,
         "[log] level: duplicate key (first set on line 2)"},
        {"[auth]\naccess_key_id = a\naccess_key_id = b\n", 3,
         "[auth] access_key_id: duplicate key (first set on line 2)"},
    };

    run_bad_cases(*state, cases, sizeof(cases) / sizeof(cases[0]));
}

static void test_config_syntax_errors(void **state)
{
    static const struct bad_case cases[] = {
        {"[server]\nthreads\n", 2, "syntax error"},
        {"[server\nthreads = 2\n", 1, "syntax error"},
        /* The earlier of a syntax error and a bad value wins. */
        {"[server]\njunk\nthreads = 0\n", 2, "syntax error"},
        {"[server]\nthreads = 0\njunk\n", 2, "threads = \"0\": out of range"},
        /* inih would read this as more of the previous value. */
        {"[server]\nthreads = 2\n  listen = 127.0.0.1:1\n", 3, "indented line"},
    };

    run_bad_cases(*state, cases, sizeof(cases) / sizeof(cases[0]));
}

static void test_config_line_too_long(void **state)
{
    struct fixture *f = *state;
    char text[1024];
    char path[400];

    memset(path, 'a', sizeof(path) - 1);
    path[sizeof(path) - 1] = '\0';
    snprintf(text, sizeof(text), "[storage]\n\npath = %s\n", path);
    expect_error(f, text, 3, "line too long (more than 198 characters)");
    /* 198 characters exactly still fit. */
    snprintf(text, sizeof(text), AUTH_OK "[storage]\npath = %.191s\n", path);
    expect_ok(f, text);
    assert_int_equal(strlen(f->cfg.storage_path), 191);
}

static void test_config_comments_crlf_and_bom(void **state)
{
    struct fixture *f = *state;

    expect_ok(f, "\xEF\xBB\xBF# comment\r\n; another\r\n[auth]\r\n"
                 "access_key_id = id1\r\naccess_key_secret = s3cret\r\n"
                 "[server]\r\n  threads = 5\r\nlisten = 127.0.0.1:1 ; inline\r\n");
    assert_int_equal(f->cfg.threads, 5);
    assert_int_equal(f->cfg.listen_port, 1);
    assert_string_equal(f->cfg.keys.keys[0].secret, "s3cret");
}

static void test_config_multiple_key_pairs(void **state)
{
    struct fixture *f = *state;

    expect_ok(f, "[auth]\nkey.extra-1 = sec1\naccess_key_secret = first-secret\n"
                 "key.Extra_2.x = sec2\naccess_key_id = first\n");
    assert_int_equal(f->cfg.keys.n, 3);
    assert_string_equal(f->cfg.keys.keys[0].id, "first");
    assert_string_equal(f->cfg.keys.keys[0].secret, "first-secret");
    assert_string_equal(f->cfg.keys.keys[1].id, "extra-1");
    assert_string_equal(f->cfg.keys.keys[1].secret, "sec1");
    assert_string_equal(f->cfg.keys.keys[2].id, "Extra_2.x");
    assert_string_equal(f->cfg.keys.keys[2].secret, "sec2");

    /* key.<ID> lines alone are enough. */
    expect_ok(f, "[auth]\nkey.only = s\n");
    assert_int_equal(f->cfg.keys.n, 1);
    assert_string_equal(f->cfg.keys.keys[0].id, "only");
}

static void test_config_key_errors(void **state)
{
    static const struct bad_case cases[] = {
        {"[auth]\naccess_key_id = a\n", 2,
         "[auth] access_key_id is set but access_key_secret is missing"},
        {"[auth]\n\naccess_key_secret = s\n", 3,
         "[auth] access_key_secret is set but access_key_id is missing"},
        {"[auth]\naccess_key_id = a\nkey.b = s\n", 2, "access_key_secret is missing"},
        {"[auth]\nkey.a = s1\nkey.a = s2\n", 3,
         "[auth] key.a: duplicate access key id \"a\" (first set on line 2)"},
        {"[auth]\nkey.a = s1\naccess_key_id = a\naccess_key_secret = s\n", 3,
         "duplicate access key id \"a\" (first set on line 2)"},
        {"[auth]\naccess_key_id = a\naccess_key_secret = s\nkey.a = s1\n", 4,
         "duplicate access key id \"a\" (first set on line 2)"},
        {"[auth]\naccess_key_id = a b\n", 2,
         "[auth] access_key_id = \"a b\": invalid character in access key id"},
        {"[auth]\naccess_key_id = a/b\n", 2, "invalid character"},
        {"[auth]\nkey. = s\n", 2, "[auth] key.: empty access key id"},
        {"[auth]\nkey.a*b = s\n", 2, "[auth] key.a*b: invalid character in access key id"},
        {"[auth]\nkey.a =\n", 2,
         "[auth] key.a: empty value (allowed: 1..192 printable ASCII characters"},
        {"[auth]\naccess_key_id = a\naccess_key_secret =\n", 3,
         "[auth] access_key_secret: empty value"},
    };
    struct fixture *f = *state;
    char text[512], id[SMQ_KEY_ID_MAX + 2];

    run_bad_cases(f, cases, sizeof(cases) / sizeof(cases[0]));
    memset(id, 'k', sizeof(id) - 1);
    id[sizeof(id) - 1] = '\0';
    snprintf(text, sizeof(text), "[auth]\nkey.%s = s\n", id);
    expect_error(f, text, 2, "access key id too long");
    snprintf(text, sizeof(text), "[auth]\nkey.%.128s = s\n", id);
    expect_ok(f, text);
    /* The longest secret (the documented 256 characters) fits a line after
     * the shortest prefix. */
    {
        char secret[SMQ_KEY_SECRET_MAX + 2];

        memset(secret, 's', sizeof(secret) - 1);
        secret[sizeof(secret) - 1] = '\0';
        snprintf(text, sizeof(text), "[auth]\naccess_key_id = a\naccess_key_secret = %.178s\n",
                 secret);
        expect_ok(f, text);
        snprintf(text, sizeof(text), "[admin]\ntoken=%.192s\n" AUTH_OK, secret);
        expect_ok(f, text);
        snprintf(text, sizeof(text), "[auth]\nkey.a=%.192s\n", secret);
        expect_ok(f, text);
        snprintf(text, sizeof(text), "[admin]\ntoken=%.193s\n" AUTH_OK, secret);
        expect_error(f, text, 2, "line too long");
    }
}

/* An error about a secret names the key but never repeats the value. */
static void test_config_errors_hide_secrets(void **state)
{
    struct fixture *f = *state;

    expect_error(f, "[auth]\naccess_key_id = a\naccess_key_secret = top secret\n", 3,
                 "[auth] access_key_secret: contains a space");
    assert_null(strstr(f->err, "top secret"));
    expect_error(f, "[auth]\nkey.a = hidden value\n", 2, "[auth] key.a:");
    assert_null(strstr(f->err, "hidden"));
    expect_error(f, "[auth]\nkey.a = s\nkey.a = hidden-too\n", 3, "duplicate");
    assert_null(strstr(f->err, "hidden"));
}

static char *print_to_string(const struct smq_config *cfg)
{
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);

    assert_non_null(mem);
    config_print(cfg, mem);
    assert_int_equal(fclose(mem), 0);
    return text;
}

/* [admin]: listen defaults to loopback 8081, "off" disables it, the token
 * follows the secret rules and never appears in messages or in -t output. */
static void test_config_admin(void **state)
{
    struct fixture *f = *state;
    char *printed;

    expect_ok(f, AUTH_OK);
    assert_true(f->cfg.admin_enabled);
    assert_string_equal(f->cfg.admin_host, "127.0.0.1");
    assert_int_equal(f->cfg.admin_port, 8081);
    assert_string_equal(f->cfg.admin_token, "");
    expect_ok(f, AUTH_OK "[admin]\nlisten = OFF\n");
    assert_false(f->cfg.admin_enabled);
    expect_ok(f, AUTH_OK "[admin]\nlisten = [::1]:0\ntoken = s3cr3t-t0ken\n");
    assert_true(f->cfg.admin_enabled);
    assert_string_equal(f->cfg.admin_host, "::1");
    assert_int_equal(f->cfg.admin_port, 0);
    assert_string_equal(f->cfg.admin_token, "s3cr3t-t0ken");
    printed = print_to_string(&f->cfg);
    assert_null(strstr(printed, "s3cr3t"));
    assert_non_null(strstr(printed, "\nlisten = [::1]:0\n"));
    assert_non_null(strstr(printed, "\ntoken = " SMQ_CONFIG_SECRET_MASK "\n"));
    free(printed);
    expect_error(f, AUTH_OK "[admin]\nlisten = example.org:80\n", 5, "[admin] listen");
    /* Beyond loopback only with a token. */
    expect_error(f, AUTH_OK "[admin]\nlisten = 0.0.0.0:8081\n", 5,
                 "[admin] listen: 0.0.0.0 is reachable from other hosts and [admin] token is not set");
    expect_error(f, AUTH_OK "[admin]\nlisten = [::]:8081\n", 5, "listen: [::] is reachable from other hosts");
    expect_error(f, AUTH_OK "[admin]\nlisten = 10.1.2.3:8081\n", 5, "reachable from other hosts");
    expect_ok(f, AUTH_OK "[admin]\nlisten = 0.0.0.0:8081\ntoken = s3cr3t-t0ken\n");
    expect_ok(f, AUTH_OK "[admin]\nlisten = 127.8.9.10:8081\n");
    expect_ok(f, AUTH_OK "[admin]\nlisten = [::1]:8081\n");
    expect_ok(f, AUTH_OK "[admin]\nlisten = localhost:8081\n");
    expect_error(f, AUTH_OK "[admin]\ntoken = two words\n", 5, "[admin] token: contains a space");
    assert_null(strstr(f->err, "two words"));
    /* An empty token is an error, not "no token": a template whose
     * variable came out empty must not open the admin API. */
    expect_error(f, AUTH_OK "[admin]\ntoken =\n", 5, "[admin] token: empty value");
}

/* [admin] read_token: the secret rules of token, masked by -t, and only
 * beside a token of another value (docs/admin-api.md). */
static void test_config_admin_read_token(void **state)
{
    struct fixture *f = *state;
    char *printed;

    expect_ok(f, AUTH_OK "[admin]\ntoken = full-t0ken\nread_token = read-0nly-t0ken\n");
    assert_string_equal(f->cfg.admin_token, "full-t0ken");
    assert_string_equal(f->cfg.admin_read_token, "read-0nly-t0ken");
    printed = print_to_string(&f->cfg);
    assert_null(strstr(printed, "read-0nly"));
    assert_null(strstr(printed, "full-t0ken"));
    assert_non_null(strstr(printed, "\nread_token = " SMQ_CONFIG_SECRET_MASK "\n"));
    free(printed);
    expect_ok(f, AUTH_OK);
    assert_string_equal(f->cfg.admin_read_token, "");
    printed = print_to_string(&f->cfg);
    assert_non_null(strstr(printed, "\n# read_token = (not set)\n"));
    free(printed);
    /* The order of the two lines does not matter. */
    expect_ok(f, AUTH_OK "[admin]\nread_token = read-0nly-t0ken\ntoken = full-t0ken\n");
    /* Alone it would leave the listener open to requests with no token at all. */
    expect_error(f, AUTH_OK "[admin]\nread_token = read-0nly-t0ken\n", 5,
                 "[admin] read_token is set but token is not");
    /* The push signing pair, like the TLS pairs: both or neither. */
    expect_ok(f, AUTH_OK "[topics]\nsigning_key_file = /k.pem\nsigning_cert_file = /c.pem\n");
    assert_int_equal(load_text(f, AUTH_OK "[topics]\nsigning_key_file = /k.pem\n"),
                     SMQ_E_INVALID_ARGUMENT);
    assert_non_null(strstr(f->err, "[topics] signing_key_file is set but signing_cert_file is not"));
    assert_int_equal(load_text(f, AUTH_OK "[topics]\nsigning_cert_file = /c.pem\n"),
                     SMQ_E_INVALID_ARGUMENT);
    assert_non_null(strstr(f->err, "[topics] signing_cert_file is set but signing_key_file is not"));
    assert_int_equal(load_text(f, AUTH_OK "[server]\ntls_cert_file = /c.pem\n"),
                     SMQ_E_INVALID_ARGUMENT);
    assert_non_null(strstr(f->err, "[server] tls_cert_file is set but tls_key_file is not"));
    assert_null(strstr(f->err, "read-0nly"));
    /* Equal to token it would have every power; the error names the
     * read_token line and repeats neither value. */
    expect_error(f, AUTH_OK "[admin]\nread_token = same-t0ken\ntoken = same-t0ken\n", 5,
                 "[admin] read_token is the same as token");
    assert_null(strstr(f->err, "same-t0ken"));
    expect_error(f, AUTH_OK "[admin]\ntoken = t\nread_token = two words\n", 6,
                 "[admin] read_token: contains a space");
    assert_null(strstr(f->err, "two words"));
    expect_error(f, AUTH_OK "[admin]\ntoken = t\nread_token =\n", 6,
                 "[admin] read_token: empty value");
    expect_error(f, AUTH_OK "[admin]\ntoken = t\nread_token = r\nread_token = r2\n", 7,
                 "duplicate");
    /* A read token does not stand in for token beyond loopback. */
    expect_error(f, AUTH_OK "[admin]\nlisten = 0.0.0.0:8081\nread_token = r\n", 5,
                 "[admin] token is not set");
}

/* The admin listener cannot share the MNS listener's address: smqd would
 * exit 3 at every start, so -t refuses it. */
static void test_config_admin_listen_clash(void **state)
{
    struct fixture *f = *state;

    expect_error(f, AUTH_OK "[server]\nlisten = 127.0.0.1:9000\n[admin]\nlisten = 127.0.0.1:9000\n",
                 7, "[admin] listen: port 9000 is also [server] listen's");
    expect_error(f, AUTH_OK "[server]\nlisten = localhost:9000\n[admin]\nlisten = 0.0.0.0:9000\n",
                 7, "[admin] listen: port 9000");
    expect_error(f, AUTH_OK "[server]\nlisten = [::1]:9000\n[admin]\nlisten = [::]:9000\n",
                 7, "[admin] listen: port 9000");
    /* The same address spelled differently. */
    expect_error(f, AUTH_OK "[server]\nlisten = [0::1]:9000\n[admin]\nlisten = [::1]:9000\n",
                 7, "[admin] listen: port 9000");
    expect_error(f, AUTH_OK "[server]\nlisten = [::0]:9000\n[admin]\nlisten = [::5]:9000\n",
                 7, "[admin] listen: port 9000");
    /* The default admin port, taken by the MNS listener: the [server] line is named. */
    expect_error(f, AUTH_OK "[server]\nlisten = 127.0.0.1:8081\n", 5, "[admin] listen: port 8081");
    expect_ok(f, AUTH_OK "[server]\nlisten = 127.0.0.1:9000\n[admin]\nlisten = 127.0.0.2:9000\n");
    expect_ok(f, AUTH_OK "[server]\nlisten = 127.0.0.1:9000\n[admin]\nlisten = [::1]:9000\n");
    expect_ok(f, AUTH_OK "[server]\nlisten = 127.0.0.1:0\n[admin]\nlisten = 127.0.0.1:0\n");
    expect_ok(f, AUTH_OK "[server]\nlisten = 127.0.0.1:8081\n[admin]\nlisten = off\n");
    /* IPv6 sockets are IPv6-only: the families never clash. */
    expect_ok(f, AUTH_OK "[server]\nlisten = [::]:9000\n[admin]\nlisten = 127.0.0.1:9000\n");
    expect_ok(f, AUTH_OK "[server]\nlisten = 0.0.0.0:9000\n[admin]\nlisten = [::]:9000\ntoken = t0ken\n");
}

static void test_config_print_shows_effective_values(void **state)
{
    static const char *const lines[] = {
        "\n[server]\n", "\nlisten = [::1]:0\n", "\nthreads = 7\n", "\n[storage]\n",
        "\npath = /data/q.db\n", "\nsync = normal\n", "\n[auth]\n",
        "\naccess_key_id = first\n", "\naccess_key_secret = ********\n",
        "\nkey.second = ********\n", "\nmax_clock_skew_s = 60\n", "\n[limits]\n",
        "\nmax_connections = 10\n", "\nidle_timeout_s = 5\n", "\nrequest_timeout_s = 6\n",
        "\nmax_queues = 3\n", "\nmax_body_bytes = 65536\n", "\n[log]\n", "\nlevel = warn\n",
        "\nfile = -\n", "\nrequests = false\n",
    };
    struct fixture *f = *state;
    char *text;

    expect_ok(f, "[server]\nlisten = [::1]:0\nthreads = 7\n[storage]\npath = /data/q.db\n"
                 "sync = normal\n[auth]\naccess_key_id = first\naccess_key_secret = PW-one\n"
                 "key.second = PW-two\nmax_clock_skew_s = 60\n[limits]\nmax_connections = 10\n"
                 "idle_timeout_s = 5\nrequest_timeout_s = 6\nmax_queues = 3\n"
                 "max_body_bytes = 65536\n[log]\nlevel = warn\nfile =\nrequests = off\n");
    text = print_to_string(&f->cfg);
    for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
        if (strstr(text, lines[i]) == NULL)
            fail_msg("config_print output lacks \"%s\":\n%s", lines[i], text);
    }
    assert_null(strstr(text, "PW-"));
    free(text);
}

/* [server] trusted_proxies: addresses and ranges of both families, any
 * mix of commas and blanks; a name or a malformed range is the file's
 * error at its line; smqd -t prints it back as written. */
static void test_config_trusted_proxies(void **state)
{
    struct fixture *f = *state;
    struct netaddr_ip ip;
    char *text;

    expect_ok(f, AUTH_OK "[server]\ntrusted_proxies = 127.0.0.1, 10.0.0.0/8 fd00::/8\n");
    assert_int_equal(f->cfg.trusted_proxies.n, 3);
    assert_int_equal(netaddr_ip_parse("10.20.30.40", 11, &ip), 0);
    assert_true(netaddr_trusted(&f->cfg.trusted_proxies, &ip));
    assert_int_equal(netaddr_ip_parse("127.0.0.2", 9, &ip), 0);
    assert_false(netaddr_trusted(&f->cfg.trusted_proxies, &ip));
    text = print_to_string(&f->cfg);
    assert_non_null(strstr(text, "\ntrusted_proxies = 127.0.0.1, 10.0.0.0/8 fd00::/8\n"));
    expect_ok(f, text);
    free(text);
    assert_int_equal(f->cfg.trusted_proxies.n, 3);
    expect_ok(f, AUTH_OK "[server]\ntrusted_proxies =\n");
    assert_int_equal(f->cfg.trusted_proxies.n, 0);

    expect_error(f, AUTH_OK "[server]\ntrusted_proxies = 127.0.0.1, haproxy.local\n", 5,
                 "[server] trusted_proxies = \"127.0.0.1, haproxy.local\": an entry is not an IP "
                 "address or ADDR/BITS range");
    expect_error(f, AUTH_OK "[server]\ntrusted_proxies = 10.0.0.0/33\n", 5, "not an IP address");
    expect_error(f, AUTH_OK "[server]\ntrusted_proxies = 10.0.0.1/8\n", 5, "not an IP address");
    expect_error(f, AUTH_OK "[server]\ntrusted_proxies = [::1]\n", 5, "not an IP address");
}

/* load -> print -> load gives the same settings; only the secrets differ
 * (they come back as the mask). */
static void test_config_print_round_trip(void **state)
{
    struct fixture *f = *state;
    struct smq_config first;
    char *text;

    expect_ok(f, "[server]\nlisten = localhost:0\nthreads = 3\n[storage]\nsync = normal\n"
                 "path = rel/dir/db\n[auth]\naccess_key_id = a\naccess_key_secret = sa\n"
                 "key.b = sb\nkey.c = sc\n[limits]\nmax_queues = 5\n[log]\nrequests = no\n"
                 "level = debug\nfile = /tmp/x.log\n");
    first = f->cfg;
    f->cfg.keys = (struct auth_keyring){NULL, 0};
    text = print_to_string(&first);
    expect_ok(f, text);
    free(text);

    assert_string_equal(f->cfg.listen_host, first.listen_host);
    assert_int_equal(f->cfg.listen_port, first.listen_port);
    assert_int_equal(f->cfg.threads, first.threads);
    assert_string_equal(f->cfg.storage_path, first.storage_path);
    assert_int_equal(f->cfg.sync, first.sync);
    assert_int_equal(f->cfg.max_clock_skew_s, first.max_clock_skew_s);
    assert_int_equal(f->cfg.max_connections, first.max_connections);
    assert_int_equal(f->cfg.idle_timeout_s, first.idle_timeout_s);
    assert_int_equal(f->cfg.request_timeout_s, first.request_timeout_s);
    assert_int_equal(f->cfg.max_queues, first.max_queues);
    assert_int_equal(f->cfg.max_body_bytes, first.max_body_bytes);
    assert_int_equal(f->cfg.log_level, first.log_level);
    assert_string_equal(f->cfg.log_file, first.log_file);
    assert_int_equal(f->cfg.log_requests, first.log_requests);
    assert_int_equal(f->cfg.keys.n, first.keys.n);
    for (size_t i = 0; i < first.keys.n; i++) {
        assert_string_equal(f->cfg.keys.keys[i].id, first.keys.keys[i].id);
        assert_string_equal(f->cfg.keys.keys[i].secret, SMQ_CONFIG_SECRET_MASK);
    }
    config_free(&first);
}

/* Defaults print with the auth lines commented out (there are no keys). */
static void test_config_print_defaults(void **state)
{
    struct fixture *f = *state;
    char *text = print_to_string(&f->cfg);

    assert_non_null(strstr(text, "\n# access_key_id = (not set)\n"));
    assert_non_null(strstr(text, "\nlisten = 127.0.0.1:8080\n"));
    assert_non_null(strstr(text, "\nsync = full\n"));
    free(text);
}

/* The [log] level spellings are the log module's. */
static void test_config_level_names_match_log(void **state)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};
    struct fixture *f = *state;
    char text[256];

    for (int i = 0; i < 4; i++) {
        enum smq_log_level level;
        assert_int_equal(log_level_parse(names[i], &level), 0);
        assert_string_equal(log_level_name(level), names[i]);
        snprintf(text, sizeof(text), AUTH_OK "[log]\nlevel = %s\n", names[i]);
        expect_ok(f, text);
        assert_int_equal(f->cfg.log_level, level);
    }
}

/* A failed load leaves defaults behind and frees what it had parsed. */
static void test_config_failure_leaves_defaults(void **state)
{
    struct fixture *f = *state;

    expect_error(f, "[server]\nthreads = 9\n[auth]\naccess_key_id = a\naccess_key_secret = s\n"
                    "key.b = s\n[log]\nlevel = loud\n", 8, "level = \"loud\"");
    assert_int_equal(f->cfg.threads, 2);
    assert_int_equal(f->cfg.keys.n, 0);
    assert_null(f->cfg.keys.keys);
    config_free(&f->cfg);
    config_free(&f->cfg);
}

/* A small err buffer gets a cut, terminated message. */
static void test_config_error_truncation(void **state)
{
    struct fixture *f = *state;
    char small[16];

    write_file(f->path, "[server]\nthreads = 0\n");
    config_free(&f->cfg);
    assert_int_equal(config_load(f->path, &f->cfg, small, sizeof(small)), SMQ_E_INVALID_ARGUMENT);
    assert_int_equal(strlen(small), sizeof(small) - 1);
    assert_string_equal(small + sizeof(small) - 4, "...");
    assert_int_equal(config_load(f->path, &f->cfg, NULL, 0), SMQ_E_INVALID_ARGUMENT);
}

/* [queue.NAME] sections: declared queues and their dead-letter policies. */
static void test_config_queue_sections(void **state)
{
    struct fixture *f = *state;
    FILE *out;
    char printed[8192];
    size_t n;

    expect_ok(f, AUTH_OK "[queue.orders]\ndlq_target = orders-dlq\ndlq_max_receive_count = 5\n"
                         "[queue.orders-dlq]\n[log]\nlevel = warn\n");
    assert_int_equal(f->cfg.n_queues, 2);
    assert_string_equal(f->cfg.queues[0].name, "orders");
    assert_string_equal(f->cfg.queues[0].dlq_target, "orders-dlq");
    assert_int_equal(f->cfg.queues[0].dlq_max_receive_count, 5);
    assert_int_equal(f->cfg.queues[0].line, 4);
    assert_string_equal(f->cfg.queues[1].name, "orders-dlq");
    assert_string_equal(f->cfg.queues[1].dlq_target, "");
    /* A later section's keys do not land in the queue before it. */
    assert_int_equal(f->cfg.log_level, SMQ_LOG_WARN);
    /* smqd -t prints them back as a loadable file. */
    out = fmemopen(printed, sizeof printed - 1, "w");
    assert_non_null(out);
    config_print(&f->cfg, out);
    n = (size_t)ftell(out);
    fclose(out);
    printed[n] = '\0';
    assert_non_null(strstr(printed, "\n[queue.orders]\ndlq_target = orders-dlq\n"
                                    "dlq_max_receive_count = 5\n"));
    assert_non_null(strstr(printed, "\n[queue.orders-dlq]\n"));
}

static void test_config_queue_section_errors(void **state)
{
    static const struct bad_case cases[] = {
        {AUTH_OK "[queue.]\n", 4, "[queue.]: The queue name must have 1 to 120 characters."},
        {AUTH_OK "[queue.a_b]\n", 4, "only letters, digits and '-'"},
        {AUTH_OK "[queue.-a]\n", 4, "must start with a letter or a digit"},
        {AUTH_OK "[queue.a]\n[queue.a]\n", 5, "[queue.a]: duplicate section (first on line 4)"},
        {AUTH_OK "[queue.a]\ncolour = red\n", 5, "[queue.a] unknown key \"colour\""},
        {AUTH_OK "[queue.a]\ndlq_target = a\n", 5, "cannot be its own dead-letter queue"},
        {AUTH_OK "[queue.a]\ndlq_target = b c\n", 5, "dlq_target = \"b c\""},
        {AUTH_OK "[queue.a]\ndlq_max_receive_count = 0\n", 5, "(allowed: 1..1000)"},
        {AUTH_OK "[queue.a]\ndlq_max_receive_count = 1001\n", 5, "(allowed: 1..1000)"},
        {AUTH_OK "[queue.a]\ndlq_target = b\n", 4, "dlq_target and dlq_max_receive_count go together"},
        {AUTH_OK "[queue.a]\ndlq_target = b\ndlq_target = c\n", 6,
         "[queue.a] dlq_target: duplicate key (first set on line 5)"},
        {AUTH_OK "[queue.a]\ndlq_max_receive_count = 2\ndlq_max_receive_count = 3\n", 6,
         "dlq_max_receive_count: duplicate key"},
        {AUTH_OK "[queue.a]\ndlq_max_receive_count = 3\n", 4, "go together"},
    };
    struct fixture *f = *state;

    run_bad_cases(f, cases, sizeof(cases) / sizeof(cases[0]));
    /* A failed load leaves no declarations behind. */
    assert_int_equal(f->cfg.n_queues, 0);
    assert_null(f->cfg.queues);
}

#define GRANT_KEYS AUTH_OK "key.team-a = s3cret-a\nkey.team-a.2 = s3cret-a2\nkey.team-b = s3cret-b\n"

static const struct auth_key *key_named(const struct smq_config *cfg, const char *id)
{
    for (size_t i = 0; i < cfg->keys.n; i++)
        if (strcmp(cfg->keys.keys[i].id, id) == 0)
            return &cfg->keys.keys[i];
    fail_msg("no key %s", id);
    return NULL;
}

/* Prints f->cfg as -t does and loads it back, each masked secret turned
 * into a valid one: -t's output must be a file smqd accepts.  The text is
 * printed here, not taken from print_to_string: open_memstream writes its
 * address through &printed, and GCC's -O3 (-Wdangling-pointer) cannot tell
 * a pointer read through a variable that has left scope from one to that
 * variable, so the variable stays in scope while the text is written to. */
static void reload_printed(struct fixture *f)
{
    char *printed = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&printed, &len);

    assert_non_null(mem);
    config_print(&f->cfg, mem);
    assert_int_equal(fclose(mem), 0);
    for (char *m; (m = strstr(printed, SMQ_CONFIG_SECRET_MASK)) != NULL;)
        memset(m, 'x', strlen(SMQ_CONFIG_SECRET_MASK));
    expect_ok(f, printed);
    free(printed);
}

/* [grant.KEY] and [grant.KEY.N] sections: their union goes to the key; an
 * exact key id wins over a numbered reading; a key without any keeps
 * everything; -t prints them back as a file that loads to the same grants. */
static void test_config_grants(void **state)
{
    struct fixture *f = *state;
    const struct auth_key *a, *a2, *b;
    char *printed;

    expect_ok(f, "[grant.team-a]\nqueues = orders-*, billing\nactions = send, receive\n"
                 "[grant.team-a.5]\nqueues = *\nactions = list\n"
                 "[grant.team-a.2]\nqueues = x\nactions = manage\n" GRANT_KEYS);
    a = key_named(&f->cfg, "team-a");
    a2 = key_named(&f->cfg, "team-a.2");
    b = key_named(&f->cfg, "team-b");
    assert_non_null(a->grants);
    assert_int_equal(a->grants->n, 2);
    assert_true(grant_allows(a->grants, "orders-eu", GRANT_SEND));
    assert_true(grant_allows(a->grants, "billing", GRANT_RECEIVE));
    assert_false(grant_allows(a->grants, "billing", GRANT_MANAGE));
    assert_true(grant_allows(a->grants, "anything", GRANT_LIST));
    assert_false(grant_allows(a->grants, "x", GRANT_MANAGE));     /* team-a.2's, not team-a's */
    assert_non_null(a2->grants);
    assert_true(grant_allows(a2->grants, "x", GRANT_MANAGE));
    assert_false(grant_allows(a2->grants, "orders-eu", GRANT_SEND));
    assert_null(b->grants);
    assert_null(key_named(&f->cfg, "id1")->grants);
    printed = print_to_string(&f->cfg);
    assert_non_null(strstr(printed, "\n[grant.team-a]\n"));
    assert_non_null(strstr(printed, "\nqueues = orders-*,billing\nactions = send, receive\n"));
    /* team-a's second grant cannot be printed as [grant.team-a.2]: that is
     * another key's. */
    assert_non_null(strstr(printed, "\n[grant.team-a.3]\n"));
    assert_non_null(strstr(printed, "\n[grant.team-a.2]\n"));
    assert_non_null(strstr(printed, "# team-b: every action on every queue"));
    assert_null(strstr(printed, "s3cret"));
    free(printed);
    /* What -t prints loads back to the same rights (secrets aside). */
    reload_printed(f);
    a = key_named(&f->cfg, "team-a");
    assert_int_equal(a->grants->n, 2);
    assert_true(grant_allows(a->grants, "orders-x", GRANT_RECEIVE));
    assert_true(grant_allows(a->grants, "zzz", GRANT_LIST));
    assert_false(grant_allows(a->grants, "zzz", GRANT_SEND));
    assert_true(grant_allows(key_named(&f->cfg, "team-a.2")->grants, "x", GRANT_MANAGE));
    assert_null(key_named(&f->cfg, "team-b")->grants);
    /* The default key is named by its access_key_id. */
    expect_ok(f, AUTH_OK "[grant.id1]\nqueues = a\nactions = send\n");
    assert_true(grant_allows(key_named(&f->cfg, "id1")->grants, "a", GRANT_SEND));
    assert_false(grant_allows(key_named(&f->cfg, "id1")->grants, "b", GRANT_SEND));
}

/* The longest queue list a line holds, written without blanks, prints on a
 * line that holds it too (a blank after each comma would not fit), so -t's
 * output loads back. */
static void test_config_grant_long_list_prints_back(void **state)
{
    struct fixture *f = *state;
    char text[1024], list[200] = "";
    int n = 0;

    for (; strlen(list) + strlen("queues = ") + 5 < 198; n++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%sq%02d", n ? "," : "", n);
    snprintf(text, sizeof text, AUTH_OK "[grant.id1]\nqueues = %s\nactions = list\n", list);
    expect_ok(f, text);
    reload_printed(f);
    assert_int_equal(key_named(&f->cfg, "id1")->grants->grants[0].n_patterns, (size_t)n);
}

static void test_config_grant_errors(void **state)
{
    static const struct bad_case cases[] = {
        {AUTH_OK "[grant.nobody]\nqueues = a\nactions = send\n", 4,
         "[grant.nobody]: no access key \"nobody\" in [auth]"},
        /* ".N" is taken off only when the rest is a key id. */
        {AUTH_OK "[grant.id2.2]\nqueues = a\nactions = send\n", 4, "no access key \"id2.2\""},
        {AUTH_OK "[grant.id1.x]\nqueues = a\nactions = send\n", 4, "no access key \"id1.x\""},
        {AUTH_OK "[grant.id1.]\nqueues = a\nactions = send\n", 4, "no access key \"id1.\""},
        /* Key ids are case-sensitive, like the signature's. */
        {AUTH_OK "[grant.ID1]\nqueues = a\nactions = send\n", 4, "no access key \"ID1\""},
        {AUTH_OK "[grant.id1]\nqueues = a\nactions = send, fly\n", 6,
         "[grant.id1] actions: unknown action \"fly\" (known: manage, send, receive, list)"},
        {AUTH_OK "[grant.id1]\nqueues = a\nactions = Send\n", 6, "unknown action \"Send\""},
        {AUTH_OK "[grant.id1]\nqueues = a\nactions =\n", 6, "[grant.id1] actions: an empty action"},
        {AUTH_OK "[grant.id1]\nqueues = a\n", 4, "[grant.id1]: actions is missing"},
        {AUTH_OK "[grant.id1]\nactions = list\n", 4, "[grant.id1]: queues is missing"},
        {AUTH_OK "[grant.id1]\n", 4, "[grant.id1]: queues is missing"},
        {AUTH_OK "[grant.id1]\nqueues = a\nactions = send\n[grant.id1]\n", 7,
         "[grant.id1]: duplicate section (first on line 4)"},
        {AUTH_OK "[grant.id1]\nqueues = a\nqueues = b\n", 6,
         "[grant.id1] queues: duplicate key (first set on line 5)"},
        {AUTH_OK "[grant.id1]\nqueues = a\nactions = send\ncolour = red\n", 7,
         "[grant.id1] unknown key \"colour\" (known: queues, actions)"},
        {AUTH_OK "[grant.id1]\nqueues = a*b\n", 5, "\"a*b\": a '*' may only end a pattern"},
        {AUTH_OK "[grant.id1]\nqueues = **\n", 5, "a '*' may only end a pattern"},
        {AUTH_OK "[grant.id1]\nqueues = a,,b\n", 5, "an empty queue pattern"},
        {AUTH_OK "[grant.id1]\nqueues = a_b\n", 5, "\"a_b\": "},
        {AUTH_OK "[grant.id1]\nqueues = -a*\n", 5, "\"-a*\": "},
        {AUTH_OK "[grant.]\n", 4, "[grant.]: a grant section is [grant.<ACCESS_KEY_ID>]"},
        {AUTH_OK "[grant.a b]\n", 4, "[grant.a b]: invalid character in access key id"},
        {AUTH_OK "[grants]\n", 4, "unknown section [grants]"},
    };

    run_bad_cases(*state, cases, sizeof(cases) / sizeof(cases[0]));
}

/* backend = postgresql: what it needs, what it refuses, what sqlite refuses. */
static void test_config_postgresql_backend(void **state)
{
    struct fixture *f = *state;
    const char *pg = AUTH_OK "[storage]\nbackend = postgresql\n"
                     "dsn = host=pg1,pg2 port=5432 dbname=smqd user=smqd "
                     "target_session_attrs=read-write\n[cluster]\nnode_id = node-a.1\n";

    expect_ok(f, pg);
    assert_int_equal(f->cfg.storage_backend, SMQ_STORE_POSTGRESQL);
    assert_string_equal(f->cfg.storage_dsn, "host=pg1,pg2 port=5432 dbname=smqd user=smqd "
                                            "target_session_attrs=read-write");
    assert_string_equal(f->cfg.cluster_node_id, "node-a.1");
    assert_int_equal(f->cfg.cluster_lease_ttl_s, 5);
    expect_ok(f, AUTH_OK "[storage]\nbackend = postgresql\ndsn = dbname=smqd\n"
                 "[cluster]\nnode_id = b\nlease_ttl_s = 2\n");
    assert_int_equal(f->cfg.cluster_lease_ttl_s, 2);
    expect_error(f, AUTH_OK "[storage]\nbackend = postgresql\n[cluster]\nnode_id = a\n", 5,
                 "[storage] backend = postgresql needs [storage] dsn");
    expect_error(f, AUTH_OK "[storage]\nbackend = postgresql\ndsn = dbname=smqd\n", 5,
                 "needs [cluster] node_id");
    expect_error(f, AUTH_OK "[storage]\nbackend = postgresql\ndsn = dbname=smqd\n"
                 "path = ./x.db\n[cluster]\nnode_id = a\n", 7,
                 "[storage] path is SQLite-only: remove it with backend = postgresql");
    expect_error(f, AUTH_OK "[storage]\nsync = full\nbackend = postgresql\ndsn = dbname=smqd\n"
                 "[cluster]\nnode_id = a\n", 5, "[storage] sync is SQLite-only");
    expect_error(f, AUTH_OK "[storage]\nbackend = postgresql\nreserve_mb = 0\n"
                 "dsn = dbname=smqd\n[cluster]\nnode_id = a\n", 6,
                 "[storage] reserve_mb is SQLite-only");
    expect_error(f, AUTH_OK "[storage]\ndsn = dbname=smqd\n", 5,
                 "[storage] dsn needs [storage] backend = postgresql");
    expect_error(f, AUTH_OK "[cluster]\nnode_id = a\n", 5,
                 "[cluster] node_id needs [storage] backend = postgresql");
    expect_error(f, AUTH_OK "[storage]\nbackend = postgresql\ndsn = dbname=smqd\n"
                 "[cluster]\nnode_id = a b\n", 8, "a character other than");
    expect_error(f, AUTH_OK "[storage]\nbackend = postgresql\ndsn = dbname=smqd\n"
                 "[cluster]\nnode_id = a\nlease_ttl_s = 31\n", 9, "2..30");
    expect_error(f, AUTH_OK "[storage]\nbackend = mysql\n", 5, "sqlite, postgresql");
}

/* A refused dsn is not echoed: it may hold a password. */
static void test_config_dsn_error_hides_value(void **state)
{
    struct fixture *f = *state;
    char text[4096];

    snprintf(text, sizeof text, AUTH_OK "[storage]\nbackend = postgresql\n"
             "dsn = password=hunter2 %03000d\n", 0);
    assert_int_equal(load_text(f, text), SMQ_E_INVALID_ARGUMENT);
    assert_non_null(strstr(f->err, "too long"));
    assert_null(strstr(f->err, "hunter2"));
}

static void expect_masked(const char *dsn, const char *want)
{
    char out[512];

    config_mask_dsn(dsn, out, sizeof out);
    if (strcmp(out, want) != 0)
        fail_msg("mask of \"%s\": got \"%s\", want \"%s\"", dsn, out, want);
}

static void test_config_dsn_password_masked(void **state)
{
    (void)state;
    expect_masked("host=pg1 password=hunter2 user=smqd",
                  "host=pg1 password=" SMQ_CONFIG_SECRET_MASK " user=smqd");
    expect_masked("password = 'a b\\' c' dbname=x",
                  "password = " SMQ_CONFIG_SECRET_MASK " dbname=x");
    expect_masked("host=pg1 dbname=smqd", "host=pg1 dbname=smqd");
    expect_masked("postgresql://smqd:hunter2@pg1:5432/smqd",
                  "postgresql://smqd:" SMQ_CONFIG_SECRET_MASK "@pg1:5432/smqd");
    expect_masked("postgres://smqd@pg1/smqd", "postgres://smqd@pg1/smqd");
    expect_masked("", "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_config_defaults, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_sample_loads, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_sample_spells_every_default, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_missing_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_directory_is_not_a_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_no_key, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_bad_integers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_integer_bounds_accepted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_bad_enums_and_bools, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_sync_values, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_bool_spellings, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_log_settings, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_listen_forms, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_listen_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_unknown_key_and_section, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_duplicate_key, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_syntax_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_line_too_long, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_comments_crlf_and_bom, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_multiple_key_pairs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_key_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_errors_hide_secrets, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_admin, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_admin_read_token, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_admin_listen_clash, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_print_shows_effective_values, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_print_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_trusted_proxies, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_print_defaults, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_level_names_match_log, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_failure_leaves_defaults, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_error_truncation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_queue_sections, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_queue_section_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_grants, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_grant_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_grant_long_list_prints_back, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_postgresql_backend, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_dsn_error_hides_value, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_dsn_password_masked, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
