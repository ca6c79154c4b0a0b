/*
 * test_auth_v4.c — unit tests for auth_v4.c (signature V4, docs/protocol.md
 * §3.6) through auth_verify: the Java SDK's J1–J3 known answers, the
 * canonical request, and every way a V4 header can be wrong, each with the
 * error code V2 uses for the same failure.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>

#include "auth_v4.h"
#include "smqd/auth.h"

#define AK "testAccessKeyId"
#define SK "testAccessKeySecret"
#define DATE "Tue, 02 Jan 2024 03:04:05 GMT"
#define DATE_MS (INT64_C(1704164645) * 1000)
#define SKEW AUTH_DEFAULT_MAX_SKEW_MS
#define VER "2015-06-06"
#define HOST "1234567890123456.mns.cn-hangzhou.aliyuncs.com"
#define CT_JAVA "text/xml;charset=UTF-8"
#define RH "8-0zxjHBaWtzPz8zphz0z6OGz5yWWidU1fJM"
#define SCOPE "/20240102/cn-hangzhou/mns/aliyun_v4_request"
#define V4(sig) "MNS4-HMAC-SHA256 Credential=" AK SCOPE ",Signature=" sig

#define J1_SIG "09d68529a631e73186c334aca82210b5e2831bbfa41a5f2456f2751bbe17e9c5"
#define J2_SIG "f221bf1ac24f9c8adc1dad4638051836ff9ac2b2df66ee73becb218db479df47"
#define J3_SIG "b9b582022279b07fb46d441146760cabca1e6f4382dd60cefba57cec460d27d5"

static char ak1[] = AK, sk1[] = SK;
static char ak2[] = "otherKeyId", sk2[] = "otherSecret";
static struct auth_key keys[] = {{ak1, sk1, NULL}, {ak2, sk2, NULL}};
static const struct auth_keyring ring = {keys, 2};

#define MAX_HDRS 16

/* A request as the Java SDK 2.0.0 sends it with V4 (docs/protocol.md §3.4's
 * J inputs), in a writable copy the negative tests change. */
struct req {
    struct http_header h[MAX_HDRS];
    struct auth_request r;
    char authz[512];
};

static void make_req(struct req *q, const char *method, const char *resource, const char *sig)
{
    memset(q, 0, sizeof *q);
    q->h[0] = (struct http_header){"Host", HOST};
    q->h[1] = (struct http_header){"Date", DATE};
    q->h[2] = (struct http_header){"x-mns-version", VER};
    q->h[3] = (struct http_header){"Content-Type", CT_JAVA};
    q->h[4] = (struct http_header){"User-Agent", "aliyun-sdk-java/2.0.0"};
    snprintf(q->authz, sizeof q->authz, V4("%s"), sig);
    q->h[5] = (struct http_header){"Authorization", q->authz};
    q->r = (struct auth_request){method, resource, q->h, 6};
}

static void make_j(struct req *q, int j)
{
    if (j == 1)
        make_req(q, "GET", "/queues/TestQueue", J1_SIG);
    else if (j == 2)
        make_req(q, "PUT", "/queues/TestQueue/messages?ReceiptHandle=" RH "&VisibilityTimeout=60",
                 J2_SIG);
    else
        make_req(q, "GET", "/queues/TestQueue/messages?numOfMessages=16&waitseconds=10", J3_SIG);
}

static struct http_header *hdr(struct req *q, const char *name)
{
    for (size_t i = 0; i < q->r.n_headers; i++)
        if (strcasecmp(q->h[i].name, name) == 0)
            return &q->h[i];
    fail_msg("no header %s", name);
    return NULL;
}

static void add_hdr(struct req *q, const char *name, const char *value)
{
    assert_true(q->r.n_headers < MAX_HDRS);
    q->h[q->r.n_headers++] = (struct http_header){name, value};
}

static void set_authz(struct req *q, const char *v)
{
    snprintf(q->authz, sizeof q->authz, "%s", v);
}

static int verify(const struct req *q, struct smq_errinfo *ei)
{
    size_t idx = 99;
    return auth_verify(&ring, &q->r, DATE_MS, SKEW, &idx, ei);
}

static void assert_v4_error(const struct req *q, int want)
{
    struct smq_errinfo ei = {0};

    assert_int_equal(verify(q, &ei), want);
    assert_int_equal(ei.err, want);
    assert_true(ei.msg[0] != '\0');
    assert_null(strstr(ei.msg, SK));
    assert_null(strstr(ei.msg, "aliyun_v4" SK));
}

/* Signs q as the SDK would, with any credential scope (region, date). */
static void sign(struct req *q, const char *id, const char *secret, const char *date,
                 const char *region, int64_t request_s)
{
    struct smq_buf sts;
    char sig[AUTH_V4_SIG_HEX_LEN + 1];

    buf_init(&sts);
    assert_int_equal(auth_v4_string_to_sign(&q->r, request_s, region, &sts), 0);
    assert_int_equal(auth_v4_signature(secret, date, region, sts.data, sts.len, sig), 0);
    buf_free(&sts);
    snprintf(q->authz, sizeof q->authz,
             "MNS4-HMAC-SHA256 Credential=%s/%s/%s/mns/aliyun_v4_request,Signature=%s", id,
             date, region, sig);
}

/* ---- known answers ---- */

static void test_v4_java_vectors(void **state)
{
    struct req q;
    size_t idx = 99;

    (void)state;
    for (int j = 1; j <= 3; j++) {
        print_message("J%d\n", j);
        make_j(&q, j);
        assert_int_equal(auth_verify(&ring, &q.r, DATE_MS, SKEW, &idx, NULL), 0);
        assert_int_equal(idx, 0);
        /* and smqd's own signer agrees byte for byte */
        sign(&q, AK, SK, "20240102", "cn-hangzhou", DATE_MS / 1000);
        assert_string_equal(strrchr(q.authz, '=') + 1, j == 1 ? J1_SIG : j == 2 ? J2_SIG : J3_SIG);
    }
}

static void test_v4_canonical_request(void **state)
{
    struct req q;
    struct smq_buf b;

    (void)state;
    make_j(&q, 2);
    buf_init(&b);
    assert_int_equal(auth_v4_string_to_sign(&q.r, DATE_MS / 1000, "cn-hangzhou", &b), 0);
    assert_string_equal(b.data, "MNS4-HMAC-SHA256\n20240102T030405Z\n"
                                "20240102/cn-hangzhou/mns/aliyun_v4_request\n"
                                "PUT\n/queues/TestQueue/messages\n"
                                "receipthandle=" RH "&visibilitytimeout=60\n"
                                "content-type:" CT_JAVA "\nx-mns-version:" VER "\n\n");
    buf_free(&b);
}

/* Java's URLEncoder rules: space %20, "*" %2A, "~" kept, "/" kept only in
 * the path; names lower-cased, values not; "=" dropped for empty values;
 * trailing empty pairs dropped. */
static void test_v4_canonical_encoding(void **state)
{
    struct req q;
    struct smq_buf b;

    (void)state;
    make_req(&q, "GET", "/a b*~/c?Zeta=A/B*~&alpha&beta=x y&", "");
    q.h[3].value = "  text/xml ";
    add_hdr(&q, "Content-MD5", "abc");
    add_hdr(&q, "X-MNS-Extra", "\tv ");
    buf_init(&b);
    assert_int_equal(auth_v4_canonical_request(&q.r, &b), 0);
    assert_string_equal(b.data, "GET\n/a%20b%2A~/c\n"
                                "alpha&beta=x%20y&zeta=A%2FB%2A~\n"
                                "content-md5:abc\ncontent-type:text/xml\n"
                                "x-mns-extra:v\nx-mns-version:" VER "\n\n");
    buf_free(&b);
}

/* smqd has no region: any well-formed one verifies. */
static void test_v4_any_region(void **state)
{
    static const char *const regions[] = {"cn-hangzhou", "us-west-1", "x", "local_dev.1",
                                          "REGION-in-CAPS"};
    struct req q;

    (void)state;
    for (size_t i = 0; i < sizeof regions / sizeof regions[0]; i++) {
        make_j(&q, 1);
        sign(&q, AK, SK, "20240102", regions[i], DATE_MS / 1000);
        assert_int_equal(verify(&q, NULL), 0);
    }
}

static void test_v4_second_key_and_x_mns_date(void **state)
{
    struct req q;
    size_t idx = 99;

    (void)state;
    make_j(&q, 3);
    hdr(&q, "Date")->name = "x-mns-date";   /* the time may come from x-mns-date */
    sign(&q, "otherKeyId", "otherSecret", "20240102", "eu-central-1", DATE_MS / 1000);
    assert_int_equal(auth_verify(&ring, &q.r, DATE_MS, SKEW, &idx, NULL), 0);
    assert_int_equal(idx, 1);
}

/* ---- negatives ---- */

static void test_v4_wrong_secret_or_scope(void **state)
{
    struct req q;

    (void)state;
    make_j(&q, 1);
    sign(&q, AK, "wrongSecret", "20240102", "cn-hangzhou", DATE_MS / 1000);
    assert_v4_error(&q, SMQ_E_SIGNATURE_MISMATCH);
    /* signed for one region, claims another */
    make_j(&q, 1);
    set_authz(&q, "MNS4-HMAC-SHA256 Credential=" AK "/20240102/cn-shanghai/mns/aliyun_v4_request,"
                  "Signature=" J1_SIG);
    assert_v4_error(&q, SMQ_E_SIGNATURE_MISMATCH);
    /* another key's id with this key's signature */
    make_j(&q, 1);
    set_authz(&q, "MNS4-HMAC-SHA256 Credential=otherKeyId" SCOPE ",Signature=" J1_SIG);
    assert_v4_error(&q, SMQ_E_SIGNATURE_MISMATCH);
}

/* The Credential's day must be the Date header's day, even when the
 * signature was computed consistently for that other day. */
static void test_v4_scope_date_must_match_request_date(void **state)
{
    struct req q;
    struct smq_errinfo ei = {0};

    (void)state;
    make_j(&q, 1);
    sign(&q, AK, SK, "20240101", "cn-hangzhou", DATE_MS / 1000);
    assert_v4_error(&q, SMQ_E_SIGNATURE_MISMATCH);
    assert_int_equal(verify(&q, &ei), SMQ_E_SIGNATURE_MISMATCH);
    assert_non_null(strstr(ei.msg, "20240101"));
    /* signed with the Date a day later than the one sent */
    make_j(&q, 1);
    sign(&q, AK, SK, "20240103", "cn-hangzhou", DATE_MS / 1000 + 86400);
    assert_v4_error(&q, SMQ_E_SIGNATURE_MISMATCH);
    /* the request time is the Date header; another second is another signature */
    make_j(&q, 1);
    hdr(&q, "Date")->value = "Tue, 02 Jan 2024 03:04:06 GMT";
    assert_v4_error(&q, SMQ_E_SIGNATURE_MISMATCH);
}

static void test_v4_malformed_credential(void **state)
{
    static const char *const bad[] = {
        "MNS4-HMAC-SHA256",
        "MNS4-HMAC-SHA256 ",
        "MNS4-HMAC-SHA256X Credential=" AK SCOPE ",Signature=" J1_SIG,
        "MNS4-HMAC-SHA256  Credential=" AK SCOPE ",Signature=" J1_SIG,
        "MNS4-HMAC-SHA256 credential=" AK SCOPE ",Signature=" J1_SIG,
        "MNS4-HMAC-SHA256 Credential=" AK SCOPE,
        "MNS4-HMAC-SHA256 Credential=" AK SCOPE ",Sig=" J1_SIG,
        "MNS4-HMAC-SHA256 Credential=" AK SCOPE ",Signature=",
        "MNS4-HMAC-SHA256 Credential=" AK SCOPE ",Signature=" J1_SIG ",SignedHeaders=host",
        "MNS4-HMAC-SHA256 Credential=" SCOPE ",Signature=" J1_SIG,
        "MNS4-HMAC-SHA256 Credential=" AK "/20240102/cn-hangzhou/mns,Signature=" J1_SIG,
        "MNS4-HMAC-SHA256 Credential=" AK "/20240102/cn-hangzhou,Signature=" J1_SIG,
        "MNS4-HMAC-SHA256 Credential=" AK ",Signature=" J1_SIG,
        "MNS4-HMAC-SHA256 Credential=,Signature=" J1_SIG,
        "MNS4-HMAC-SHA256 Credential=" AK "//20240102/cn-hangzhou/mns/aliyun_v4_request,"
        "Signature=" J1_SIG,
        "MNS4-HMAC-SHA256 Credential=" AK SCOPE "/,Signature=" J1_SIG,
        "MNS4-HMAC-SHA256 Credential=" AK SCOPE "/extra,Signature=" J1_SIG,
        "MNS4-HMAC-SHA256 Credential=a/b" SCOPE ",Signature=" J1_SIG,
        "MNS4-HMAC-SHA256 Credential=" AK "/2024012/cn-hangzhou/mns/aliyun_v4_request,"
        "Signature=" J1_SIG,
        "MNS4-HMAC-SHA256 Credential=" AK "/2024-01-02/cn-hangzhou/mns/aliyun_v4_request,"
        "Signature=" J1_SIG,
        "MNS4-HMAC-SHA256 Credential=" AK "/2024010x/cn-hangzhou/mns/aliyun_v4_request,"
        "Signature=" J1_SIG,
        "MNS4-HMAC-SHA256 Credential=" AK "/20240102//mns/aliyun_v4_request,Signature=" J1_SIG,
        "MNS4-HMAC-SHA256 Credential=" AK "/20240102/cn hangzhou/mns/aliyun_v4_request,"
        "Signature=" J1_SIG,
        "MNS4-HMAC-SHA256 Credential=" AK "/20240102/cn-hangzhou/oss/aliyun_v4_request,"
        "Signature=" J1_SIG,
        "MNS4-HMAC-SHA256 Credential=" AK "/20240102/cn-hangzhou/MNS/aliyun_v4_request,"
        "Signature=" J1_SIG,
        "MNS4-HMAC-SHA256 Credential=" AK "/20240102/cn-hangzhou/mns/aliyun_v4_requesT,"
        "Signature=" J1_SIG,
        "MNS4-HMAC-SHA256 Credential=" AK "/20240102/cn-hangzhou/mns/apsara_v4_request,"
        "Signature=" J1_SIG,
        "MNS4-HMAC-SHA256 Credential=" AK "/20240102/cn-hangzhou/mns/aws4_request,"
        "Signature=" J1_SIG,
    };
    struct req q;

    (void)state;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        print_message("'%s'\n", bad[i]);
        make_j(&q, 1);
        set_authz(&q, bad[i]);
        assert_v4_error(&q, SMQ_E_INVALID_AUTHORIZATION);
    }
}

static void test_v4_unknown_key_id(void **state)
{
    struct req q;

    (void)state;
    make_j(&q, 1);
    set_authz(&q, "MNS4-HMAC-SHA256 Credential=noSuchKey" SCOPE ",Signature=" J1_SIG);
    assert_v4_error(&q, SMQ_E_INVALID_ACCESS_KEY_ID);
    make_j(&q, 1);
    set_authz(&q, "MNS4-HMAC-SHA256 Credential=testaccesskeyid" SCOPE ",Signature=" J1_SIG);
    assert_v4_error(&q, SMQ_E_INVALID_ACCESS_KEY_ID);
}

static void test_v4_bad_signature_format(void **state)
{
    static const char *const bad[] = {
        "09d68529a631e73186c334aca82210b5e2831bbfa41a5f2456f2751bbe17e9c",    /* 63 */
        "09d68529a631e73186c334aca82210b5e2831bbfa41a5f2456f2751bbe17e9c55",  /* 65 */
        "09D68529A631E73186C334ACA82210B5E2831BBFA41A5F2456F2751BBE17E9C5",   /* upper */
        "zzd68529a631e73186c334aca82210b5e2831bbfa41a5f2456f2751bbe17e9c5",
        "09d68529a631e73186c334aca82210b5e2831bbfa41a5f2456f2751bbe17e9c6",
        "CWjZUqYx5zGGwzSsqCIQteKDG7+kGl8kVvJ1G74X6cU=",                       /* base64 */
        "0",
    };
    struct req q;

    (void)state;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        print_message("'%s'\n", bad[i]);
        make_req(&q, "GET", "/queues/TestQueue", bad[i]);
        assert_v4_error(&q, SMQ_E_SIGNATURE_MISMATCH);
    }
}

static void test_v4_tampered_request(void **state)
{
    struct req q;

    (void)state;
    make_j(&q, 2);
    q.r.resource = "/queues/TestQueue/messages?ReceiptHandle=" RH "&VisibilityTimeout=61";
    assert_v4_error(&q, SMQ_E_SIGNATURE_MISMATCH);
    make_j(&q, 2);
    q.r.resource = "/queues/OtherQueue/messages?ReceiptHandle=" RH "&VisibilityTimeout=60";
    assert_v4_error(&q, SMQ_E_SIGNATURE_MISMATCH);
    make_j(&q, 2);
    q.r.method = "DELETE";
    assert_v4_error(&q, SMQ_E_SIGNATURE_MISMATCH);
    make_j(&q, 3);
    q.r.resource = "/queues/TestQueue/messages?numOfMessages=16";   /* parameter dropped */
    assert_v4_error(&q, SMQ_E_SIGNATURE_MISMATCH);
    make_j(&q, 1);
    hdr(&q, "Content-Type")->value = "text/plain";
    assert_v4_error(&q, SMQ_E_SIGNATURE_MISMATCH);
    /* a body is covered through Content-MD5, which is signed when sent */
    make_j(&q, 1);
    add_hdr(&q, "Content-MD5", "ZDQxZDhjZDk4ZjAwYjIwNGU5ODAwOTk4ZWNmODQyN2U=");
    assert_v4_error(&q, SMQ_E_SIGNATURE_MISMATCH);
    make_j(&q, 1);
    add_hdr(&q, "x-mns-user-request-id", "added-later");
    assert_v4_error(&q, SMQ_E_SIGNATURE_MISMATCH);
    /* unsigned headers may change freely */
    make_j(&q, 1);
    hdr(&q, "User-Agent")->value = "something else";
    add_hdr(&q, "security-token", "STS.x");
    assert_int_equal(verify(&q, NULL), 0);
}

/* After the signature: Date and version problems get V2's codes. */
static void test_v4_date_and_version_checks(void **state)
{
    struct req q;
    size_t idx;

    (void)state;
    make_j(&q, 1);
    assert_int_equal(auth_verify(&ring, &q.r, DATE_MS + SKEW + 1000, SKEW, &idx, NULL),
                     SMQ_E_TIME_EXPIRED);
    make_j(&q, 1);
    hdr(&q, "Date")->name = "X-Not-Date";
    assert_v4_error(&q, SMQ_E_MISSING_DATE);
    make_j(&q, 1);
    hdr(&q, "Date")->value = "2024-01-02T03:04:05Z";
    assert_v4_error(&q, SMQ_E_INVALID_DATE);
    make_j(&q, 1);
    hdr(&q, "x-mns-version")->name = "x-mns-versio";
    sign(&q, AK, SK, "20240102", "cn-hangzhou", DATE_MS / 1000);
    assert_v4_error(&q, SMQ_E_MISSING_VERSION);
}

static void test_v4_oversize_values(void **state)
{
    static char big[8192];
    static char authz[9000];
    struct req q;

    (void)state;
    memset(big, 'a', sizeof big - 1);
    /* region one byte too long, and the longest accepted */
    memset(big, 'r', AUTH_V4_REGION_MAX + 1);
    big[AUTH_V4_REGION_MAX + 1] = '\0';
    make_j(&q, 1);
    snprintf(authz, sizeof authz, "MNS4-HMAC-SHA256 Credential=" AK "/20240102/%s/mns/"
             "aliyun_v4_request,Signature=" J1_SIG, big);
    hdr(&q, "Authorization")->value = authz;
    assert_v4_error(&q, SMQ_E_INVALID_AUTHORIZATION);
    big[AUTH_V4_REGION_MAX] = '\0';
    make_j(&q, 1);
    sign(&q, AK, SK, "20240102", big, DATE_MS / 1000);
    assert_int_equal(verify(&q, NULL), 0);
    /* a huge key id and a huge signature */
    memset(big, 'k', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    make_j(&q, 1);
    snprintf(authz, sizeof authz, "MNS4-HMAC-SHA256 Credential=%s" SCOPE ",Signature=" J1_SIG,
             big);
    hdr(&q, "Authorization")->value = authz;
    assert_v4_error(&q, SMQ_E_INVALID_ACCESS_KEY_ID);
    memset(big, 'f', sizeof big - 1);
    snprintf(authz, sizeof authz, V4("%s"), big);
    assert_v4_error(&q, SMQ_E_SIGNATURE_MISMATCH);
    /* a huge signed header value and query */
    make_j(&q, 1);
    add_hdr(&q, "x-mns-huge", big);
    assert_v4_error(&q, SMQ_E_SIGNATURE_MISMATCH);
    sign(&q, AK, SK, "20240102", "cn-hangzhou", DATE_MS / 1000);
    assert_int_equal(verify(&q, NULL), 0);
}

/* Many query parameters (more than any fixed array) and odd pairs. */
static void test_v4_many_and_odd_query_params(void **state)
{
    static char res[20000];
    struct req q;
    size_t o;

    (void)state;
    o = (size_t)snprintf(res, sizeof res, "/queues/q/messages?");
    for (int i = 0; i < 2000 && o + 16 < sizeof res; i++)
        o += (size_t)snprintf(res + o, sizeof res - o, "p%d=%d&", i, i % 700);
    snprintf(res + o, sizeof res - o, "&=&==&%%zz&%%00=x");
    make_req(&q, "GET", res, "");
    sign(&q, AK, SK, "20240102", "cn-hangzhou", DATE_MS / 1000);
    assert_int_equal(verify(&q, NULL), 0);
    res[o - 2] = res[o - 2] == '9' ? '8' : '9';
    assert_v4_error(&q, SMQ_E_SIGNATURE_MISMATCH);
}

/* A name given twice, in any case, is refused before any signature work:
 * the canonical form would sign one value and the router act on another. */
static void test_v4_repeated_query_name(void **state)
{
    static const char *const resources[] = {
        "/queues/TestQueue/messages?VisibilityTimeout=43200&ReceiptHandle=" RH
        "&VisibilityTimeout=60",
        "/queues/TestQueue/messages?receipthandle=x&ReceiptHandle=" RH "&VisibilityTimeout=60",
        "/queues/TestQueue/messages?ReceiptHandle=" RH "&VisibilityTimeout=60&visibilitytimeout",
    };
    struct req q;
    struct smq_buf b;

    (void)state;
    for (size_t i = 0; i < sizeof resources / sizeof resources[0]; i++) {
        make_j(&q, 2);
        q.r.resource = resources[i];
        assert_v4_error(&q, SMQ_E_INVALID_QUERY_STRING);
    }
    make_j(&q, 2);
    q.r.resource = resources[0];
    buf_init(&b);
    assert_int_equal(auth_v4_canonical_request(&q.r, &b), SMQ_E_INVALID_QUERY_STRING);
    buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_v4_java_vectors),
        cmocka_unit_test(test_v4_canonical_request),
        cmocka_unit_test(test_v4_canonical_encoding),
        cmocka_unit_test(test_v4_any_region),
        cmocka_unit_test(test_v4_second_key_and_x_mns_date),
        cmocka_unit_test(test_v4_wrong_secret_or_scope),
        cmocka_unit_test(test_v4_scope_date_must_match_request_date),
        cmocka_unit_test(test_v4_malformed_credential),
        cmocka_unit_test(test_v4_unknown_key_id),
        cmocka_unit_test(test_v4_bad_signature_format),
        cmocka_unit_test(test_v4_tampered_request),
        cmocka_unit_test(test_v4_date_and_version_checks),
        cmocka_unit_test(test_v4_oversize_values),
        cmocka_unit_test(test_v4_many_and_odd_query_params),
        cmocka_unit_test(test_v4_repeated_query_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
