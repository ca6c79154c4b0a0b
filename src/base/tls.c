/*
 * tls.c — loading a certificate chain and key with GnuTLS, and swapping
 * them on reload (tls.h).
 */
#include "smqd/tls.h"

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <stdio.h>
#include <stdlib.h>

#include "smqd/errors.h"

#define TLS_CHAIN_MAX 8          /* certificate plus intermediates */

/* One load: a chain and its key. */
struct tls_set {
    struct tls_set *older;
    gnutls_pcert_st pcerts[TLS_CHAIN_MAX];
    unsigned int n_pcerts;
    gnutls_privkey_t key;
};

struct tls_creds {
    struct tls_set *current;     /* the newest; the older ones hang off it */
};

static void set_free(struct tls_set *s)
{
    for (unsigned int i = 0; i < s->n_pcerts; i++)
        gnutls_pcert_deinit(&s->pcerts[i]);
    if (s->key != NULL)
        gnutls_privkey_deinit(s->key);
    free(s);
}

/* The chain's public keys must match the private one: a swapped or stale
 * key file would otherwise fail every handshake, silently to the operator. */
static int key_matches(struct tls_set *s)
{
    gnutls_datum_t sig = {NULL, 0}, data = {(unsigned char *)"smqd", 4};
    gnutls_sign_algorithm_t algo;
    int rc;

    rc = gnutls_privkey_sign_data(s->key, GNUTLS_DIG_SHA256, 0, &data, &sig);
    if (rc >= 0) {
        algo = gnutls_pk_to_sign(gnutls_pubkey_get_pk_algorithm(s->pcerts[0].pubkey, NULL),
                                 GNUTLS_DIG_SHA256);
        rc = gnutls_pubkey_verify_data2(s->pcerts[0].pubkey, algo, 0, &data, &sig);
    }
    gnutls_free(sig.data);
    return rc >= 0 ? 0 : rc;
}

static int import_chain(struct tls_set *s, const char *cert_file)
{
    gnutls_datum_t pem = {NULL, 0};
    int rc = gnutls_load_file(cert_file, &pem);

    s->n_pcerts = TLS_CHAIN_MAX;
    if (rc >= 0)
        rc = gnutls_pcert_list_import_x509_raw(s->pcerts, &s->n_pcerts, &pem,
                                               GNUTLS_X509_FMT_PEM, 0);
    if (rc < 0)
        s->n_pcerts = 0;
    gnutls_free(pem.data);
    return rc < 0 ? rc : 0;
}

static int import_key(struct tls_set *s, const char *key_file)
{
    gnutls_datum_t pem = {NULL, 0};
    int rc = gnutls_load_file(key_file, &pem);

    if (rc >= 0)
        rc = gnutls_privkey_init(&s->key);
    if (rc >= 0)
        rc = gnutls_privkey_import_x509_raw(s->key, &pem, GNUTLS_X509_FMT_PEM, NULL, 0);
    if (pem.data != NULL) {
        gnutls_memset(pem.data, 0, pem.size);   /* the key's bytes */
        gnutls_free(pem.data);
    }
    return rc < 0 ? rc : 0;
}

static int load_set(const char *cert_file, const char *key_file, struct tls_set **out,
                    char *err, size_t err_size)
{
    struct tls_set *s = calloc(1, sizeof *s);
    const char *what = "out of memory loading";
    int rc = s == NULL ? GNUTLS_E_MEMORY_ERROR : 0;

    if (rc == 0) {
        what = "no readable PEM certificate chain (at most 8 certificates) in";
        rc = import_chain(s, cert_file);
    }
    if (rc == 0) {
        what = "no readable PEM private key in";
        rc = import_key(s, key_file);
    }
    if (rc == 0) {
        what = "the private key does not belong to the certificate of";
        rc = key_matches(s);
    }
    if (rc == 0) {
        *out = s;
        return 0;
    }
    if (s != NULL)
        set_free(s);
    snprintf(err, err_size, "TLS: %s %s / %s (%s)", what, cert_file, key_file,
             gnutls_strerror(rc));
    return rc == GNUTLS_E_MEMORY_ERROR ? SMQ_E_NOMEM : SMQ_E_INVALID_ARGUMENT;
}

int tls_creds_load(const char *cert_file, const char *key_file, struct tls_creds **out,
                   char *err, size_t err_size)
{
    struct tls_creds *c = calloc(1, sizeof *c);
    int rc;

    *out = NULL;
    if (c == NULL) {
        snprintf(err, err_size, "TLS: out of memory");
        return SMQ_E_NOMEM;
    }
    rc = load_set(cert_file, key_file, &c->current, err, err_size);
    if (rc != 0) {
        tls_creds_free(c);
        return rc;
    }
    *out = c;
    return 0;
}

int tls_creds_reload(struct tls_creds *c, const char *cert_file, const char *key_file,
                     char *err, size_t err_size)
{
    struct tls_set *s = NULL;
    int rc = load_set(cert_file, key_file, &s, err, err_size);

    if (rc != 0)
        return rc;
    s->older = c->current;
    __atomic_store_n(&c->current, s, __ATOMIC_RELEASE);   /* handshakes read it meanwhile */
    return 0;
}

void tls_creds_current(struct tls_creds *c, struct tls_cert_view *out)
{
    struct tls_set *s = __atomic_load_n(&c->current, __ATOMIC_ACQUIRE);

    *out = (struct tls_cert_view){.pcerts = s->pcerts, .n_pcerts = s->n_pcerts, .key = s->key};
}

void tls_creds_free(struct tls_creds *c)
{
    if (c == NULL)
        return;
    while (c->current != NULL) {
        struct tls_set *s = c->current;
        c->current = s->older;
        set_free(s);
    }
    free(c);
}
