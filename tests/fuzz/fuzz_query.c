/*
 * fuzz_query.c — libFuzzer target for the query-string and queue-name code
 * of query.h and qname.h: query_parse, query_get and qname_check_err.
 *
 * The input (up to its first NUL, as a C string) is a raw query string.
 * query_parse is compared with a small reference model of docs/protocol.md
 * §1.3: split on '&' (empty pairs skipped), split each pair at its first
 * '=', percent-decode both halves ("%XX" with hex digits of either case;
 * '+' stays '+'; a bad escape or "%00" is refused), at most
 * QUERY_MAX_PARAMS pairs.  Checked: the same accept/refuse decision
 * (SMQ_E_INVALID_QUERY_STRING), the same names and values in the same
 * order, and query_get returning the first pair whose name matches
 * case-insensitively, for the SDKs' parameter names and for every parsed
 * name.  qname_check_err runs on the raw input bytes (NULs included)
 * and on every decoded name and value, against the rule of docs/protocol.md §5: 1..120
 * bytes, ASCII letters, digits and '-', not starting with '-'.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fuzz_common.h"
#include "smqd/qname.h"
#include "smqd/query.h"
#include "smqd/errors.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

/* ---- reference model -------------------------------------------------------- */

#define MODEL_MAX_PAIRS (QUERY_MAX_PARAMS + 1)   /* one more: "too many" */

struct model {
    size_t n;
    char *names[MODEL_MAX_PAIRS];
    char *values[MODEL_MAX_PAIRS];
    bool ok;
};

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Decodes s[0..len) into a new string; NULL when the escapes are bad. */
static char *model_decode(const char *s, size_t len)
{
    char *out = malloc(len + 1);
    size_t o = 0;

    FUZZ_CHECK(out != NULL);
    for (size_t i = 0; i < len; i++) {
        if (s[i] != '%') {
            out[o++] = s[i];
            continue;
        }
        int hi = i + 2 < len ? hex_digit(s[i + 1]) : -1;
        int lo = i + 2 < len ? hex_digit(s[i + 2]) : -1;
        if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {     /* bad escape, or a NUL */
            free(out);
            return NULL;
        }
        out[o++] = (char)(hi * 16 + lo);
        i += 2;
    }
    out[o] = '\0';
    return out;
}

static void model_parse(const char *raw, struct model *m)
{
    const char *p = raw;

    memset(m, 0, sizeof *m);
    m->ok = true;
    while (*p != '\0') {
        const char *amp = strchr(p, '&');
        size_t len = amp != NULL ? (size_t)(amp - p) : strlen(p);
        if (len > 0) {
            const char *eq = memchr(p, '=', len);
            size_t name_len = eq != NULL ? (size_t)(eq - p) : len;
            char *name, *value;

            if (m->n == QUERY_MAX_PARAMS) {
                m->ok = false;
                return;
            }
            name = model_decode(p, name_len);
            value = eq != NULL ? model_decode(eq + 1, len - name_len - 1) : model_decode("", 0);
            m->names[m->n] = name;
            m->values[m->n] = value;
            m->n++;
            if (name == NULL || value == NULL) {
                m->ok = false;
                return;
            }
        }
        p += len;
        if (*p == '&')
            p++;
    }
}

static void model_free(struct model *m)
{
    for (size_t i = 0; i < m->n; i++) {
        free(m->names[i]);
        free(m->values[i]);
    }
    m->n = 0;
}

static const char *model_get(const struct model *m, const char *name)
{
    for (size_t i = 0; i < m->n; i++)
        if (strcasecmp(m->names[i], name) == 0)
            return m->values[i];
    return NULL;
}

/* docs/protocol.md §5 queue names, on bytes (no locale). */
static int model_queue_name(const char *s, size_t len)
{
    if (len == 0 || len > SMQ_QUEUE_NAME_MAX)
        return SMQ_E_QUEUE_NAME_LENGTH;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (!alnum && (c != '-' || i == 0))
            return SMQ_E_INVALID_QUEUE_NAME;
    }
    return 0;
}

static void check_queue_name(const char *s, size_t len)
{
    struct smq_errinfo ei = {0, ""};
    int rc = qname_check_err(s, len, &ei);

    FUZZ_CHECK(rc == model_queue_name(s, len));
    FUZZ_CHECK(ei.err == rc);
}

/* ---- target ---------------------------------------------------------------- */

static const char *const sdk_names[] = {
    "ReceiptHandle", "receiptHandle", "VisibilityTimeout", "visibilityTimeout", "waitseconds",
    "numOfMessages", "peekonly", "metaoverride", "metaOverride", "accountmeta",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct query q;
    struct model m;
    struct smq_errinfo ei = {0, ""};
    char *raw = malloc(size + 1);
    size_t raw_len;
    int rc;

    if (raw == NULL)
        return 0;
    if (size > 0)
        memcpy(raw, data, size);
    raw[size] = '\0';
    raw_len = strlen(raw);

    check_queue_name(raw, size);

    rc = query_parse(raw, &q, &ei);
    model_parse(raw, &m);
    FUZZ_CHECK(rc == 0 || rc == SMQ_E_INVALID_QUERY_STRING || rc == SMQ_E_NOMEM);
    FUZZ_CHECK(rc == 0 || ei.err == rc);
    if (rc != SMQ_E_NOMEM)
        FUZZ_CHECK((rc == 0) == m.ok);
    if (rc == 0) {
        FUZZ_CHECK(q.n == m.n && q.n <= QUERY_MAX_PARAMS);
        for (size_t i = 0; i < q.n; i++) {
            /* Decoded in place: every name and value lies inside the one copy. */
            FUZZ_CHECK(q.names[i] >= q.storage && q.names[i] <= q.storage + raw_len);
            FUZZ_CHECK(q.values[i] >= q.storage && q.values[i] <= q.storage + raw_len);
            FUZZ_CHECK(strcmp(q.names[i], m.names[i]) == 0);
            FUZZ_CHECK(strcmp(q.values[i], m.values[i]) == 0);
            FUZZ_CHECK(query_get(&q, q.names[i]) == query_get(&q, m.names[i]));
            FUZZ_CHECK(strcmp(query_get(&q, q.names[i]), model_get(&m, q.names[i])) == 0);
            check_queue_name(q.names[i], strlen(q.names[i]));
            check_queue_name(q.values[i], strlen(q.values[i]));
        }
        for (size_t i = 0; i < sizeof sdk_names / sizeof sdk_names[0]; i++) {
            const char *got = query_get(&q, sdk_names[i]), *want = model_get(&m, sdk_names[i]);
            FUZZ_CHECK((got == NULL) == (want == NULL));
            FUZZ_CHECK(got == NULL || strcmp(got, want) == 0);
        }
    }
    query_free(&q);
    FUZZ_CHECK(q.n == 0 && q.storage == NULL);
    model_free(&m);
    free(raw);
    return 0;
}
