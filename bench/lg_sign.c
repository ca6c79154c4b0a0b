/*
 * lg_sign.c — MNS signature V2 and the cached Date header for smqd-loadgen
 * (see lg_sign.h).  The only file of the load generator that calls OpenSSL.
 */
#include "lg_sign.h"

#include <stdio.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>

int lg_signer_init(struct lg_signer *s, const char *secret)
{
    memset(s, 0, sizeof *s);
    s->date_sec = (time_t)-1;
    s->mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    if (s->mac != NULL)
        s->ctx = EVP_MAC_CTX_new(s->mac);
    if (s->ctx == NULL) {
        fprintf(stderr, "smqd-loadgen: OpenSSL has no HMAC\n");
        lg_signer_free(s);
        return -1;
    }
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA1", 0),
        OSSL_PARAM_construct_end(),
    };
    if (!EVP_MAC_init(s->ctx, (const unsigned char *)secret, strlen(secret), params)) {
        fprintf(stderr, "smqd-loadgen: cannot key HMAC-SHA1\n");
        lg_signer_free(s);
        return -1;
    }
    return 0;
}

void lg_signer_free(struct lg_signer *s)
{
    EVP_MAC_CTX_free(s->ctx);
    EVP_MAC_free(s->mac);
    s->ctx = NULL;
    s->mac = NULL;
}

const char *lg_signer_date(struct lg_signer *s, time_t t)
{
    static const char days[7][4] = { "Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat" };
    static const char months[12][4] = { "Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                        "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };
    if (t == s->date_sec)
        return s->date;
    struct tm tm;
    gmtime_r(&t, &tm);
    snprintf(s->date, sizeof s->date, "%s, %02d %s %04d %02d:%02d:%02d GMT",
             days[tm.tm_wday % 7], tm.tm_mday, months[tm.tm_mon % 12],
             tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
    s->date_sec = t;
    return s->date;
}

static int mac_str(EVP_MAC_CTX *ctx, const char *p, size_t n)
{
    return EVP_MAC_update(ctx, (const unsigned char *)p, n);
}

int lg_sign(struct lg_signer *s, const char *verb, const char *content_type,
            const char *date, const char *resource, size_t resource_len,
            char out[LG_SIG_B64_LEN + 1])
{
    static const char version[] = "\nx-mns-version:2015-06-06\n";
    unsigned char md[EVP_MAX_MD_SIZE];
    size_t md_len = 0;

    /* A NULL key re-initialises HMAC with the key already set. */
    if (!EVP_MAC_init(s->ctx, NULL, 0, NULL))
        return -1;
    int ok = mac_str(s->ctx, verb, strlen(verb)) && mac_str(s->ctx, "\n\n", 2)
          && mac_str(s->ctx, content_type, strlen(content_type)) && mac_str(s->ctx, "\n", 1)
          && mac_str(s->ctx, date, strlen(date))
          && mac_str(s->ctx, version, sizeof version - 1)
          && mac_str(s->ctx, resource, resource_len)
          && EVP_MAC_final(s->ctx, md, &md_len, sizeof md);
    if (!ok || md_len != 20)
        return -1;
    EVP_EncodeBlock((unsigned char *)out, md, (int)md_len);
    out[LG_SIG_B64_LEN] = '\0';
    return 0;
}
