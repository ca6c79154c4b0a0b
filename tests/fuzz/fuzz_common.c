/*
 * fuzz_common.c — the fixed keys, the invariant check and the request
 * splitter shared by the libFuzzer targets (fuzz_common.h).
 */
#include "fuzz_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth_v4.h"
#include "smqd/buf.h"
#include "smqd/xml.h"

static char ak[] = FUZZ_AK, sk[] = FUZZ_SK, ak2[] = FUZZ_AK2, sk2[] = FUZZ_SK2;
static struct auth_key keys[] = {{ak, sk, NULL}, {ak2, sk2, NULL}};
static struct auth_keyring ring = {keys, sizeof keys / sizeof keys[0]};

struct auth_keyring *fuzz_keyring(void)
{
    return &ring;
}

const struct handle_keys *fuzz_handle_keys(void)
{
    static const unsigned char prefix[8] = {0x09, 0x09, 0xFF, 0x0D, 0x9C, 0x3A, 0x63, 0x0C};
    static struct handle_keys hk;
    static bool ready;

    if (!ready) {
        for (size_t i = 0; i < sizeof hk.secret; i++)
            hk.secret[i] = (unsigned char)(i * 13 + 1);
        memcpy(hk.id_prefix, prefix, sizeof prefix);
        ready = true;
    }
    return &hk;
}

void fuzz_fail(const char *file, int line, const char *expr)
{
    fprintf(stderr, "%s:%d: invariant failed: %s\n", file, line, expr);
    abort();
}

/* ---- request format ------------------------------------------------------ */

/* The next NUL-terminated field at *p (before end), or NULL when none is left. */
static char *next_field(char **p, char *end)
{
    char *start = *p, *nul;

    if (start >= end)
        return NULL;
    nul = memchr(start, '\0', (size_t)(end - start));
    if (nul == NULL)
        nul = end;                      /* buf[size] is the NUL */
    *p = nul + 1;
    return start;
}

int fuzz_req_split(const uint8_t *data, size_t size, struct fuzz_req *r)
{
    char *p, *end, *f;
    size_t n = 0;

    memset(r, 0, sizeof *r);
    r->buf = malloc(size + 1);
    if (r->buf == NULL)
        return -1;
    if (size > 0)
        memcpy(r->buf, data, size);
    r->buf[size] = '\0';
    p = r->buf;
    end = r->buf + size;

    f = next_field(&p, end);
    r->method = f != NULL ? f : "";
    f = next_field(&p, end);
    r->resource = f != NULL ? f : "";
    while (n < FUZZ_MAX_HEADERS && (f = next_field(&p, end)) != NULL && f[0] != '\0') {
        char *colon = strchr(f, ':');
        const char *value = "";

        if (colon != NULL) {
            *colon = '\0';
            value = colon + 1;
            while (*value == ' ' || *value == '\t')
                value++;
        }
        r->headers[n].name = f;
        r->headers[n].value = value;
        n++;
    }
    if (p <= end) {
        r->body = p;
        r->body_len = (size_t)(end - p);
    } else {
        r->body = end;                  /* "" */
        r->body_len = 0;
    }
    r->auth.method = r->method;
    r->auth.resource = r->resource;
    r->auth.headers = r->headers;
    r->auth.n_headers = n;
    return 0;
}

void fuzz_req_free(struct fuzz_req *r)
{
    free(r->buf);
    r->buf = NULL;
}

static bool is_authorization(const char *name)
{
    static const char want[] = "authorization";
    size_t i;

    for (i = 0; want[i] != '\0'; i++) {
        char c = name[i];
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (c != want[i])
            return false;
    }
    return name[i] == '\0';
}

/* Drops every Authorization header; returns where the new one goes. */
static size_t drop_authorization(struct fuzz_req *r)
{
    size_t n = 0;

    for (size_t i = 0; i < r->auth.n_headers; i++)
        if (!is_authorization(r->headers[i].name))
            r->headers[n++] = r->headers[i];
    r->auth.n_headers = n;
    return n;
}

static void set_authorization(struct fuzz_req *r, size_t n)
{
    r->headers[n].name = "Authorization";
    r->headers[n].value = r->authz;
    r->auth.n_headers = n + 1;
}

int fuzz_req_sign_v4(struct fuzz_req *r, const char *key_id, const char *secret,
                     int64_t request_s)
{
    static const char region[] = "cn-hangzhou";
    struct smq_buf sts;
    char sig[AUTH_V4_SIG_HEX_LEN + 1], day[9];
    size_t n = drop_authorization(r);
    int rc;

    buf_init(&sts);
    rc = auth_v4_string_to_sign(&r->auth, request_s, region, &sts);
    if (rc == 0) {
        /* the scope day is the first 8 bytes of STAMP, on the second line */
        memcpy(day, strchr(sts.data, '\n') + 1, 8);
        day[8] = '\0';
        rc = auth_v4_signature(secret, day, region, sts.data, sts.len, sig);
    }
    buf_free(&sts);
    if (rc != 0)
        return rc;
    snprintf(r->authz, sizeof r->authz,
             "MNS4-HMAC-SHA256 Credential=%s/%s/%s/mns/aliyun_v4_request,Signature=%s",
             key_id, day, region, sig);
    set_authorization(r, n);
    return 0;
}

int fuzz_req_sign(struct fuzz_req *r, const char *key_id, const char *secret)
{
    struct smq_buf sts;
    char sig[29];
    size_t n = drop_authorization(r);
    int rc;

    buf_init(&sts);
    rc = auth_string_to_sign(&r->auth, &sts);
    if (rc == 0)
        rc = auth_signature(secret, sts.data, sts.len, sig);
    buf_free(&sts);
    if (rc != 0)
        return rc;
    snprintf(r->authz, sizeof r->authz, "MNS %s:%s", key_id, sig);
    set_authorization(r, n);
    return 0;
}

bool fuzz_xml_root_is(const char *doc, size_t len, const char *root)
{
    char name[64];

    return xml_root_name(doc, len, name, sizeof name) == 0 && strcmp(name, root) == 0;
}
