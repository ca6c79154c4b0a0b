/*
 * tls.h — a listener's TLS certificate chain and private key (PEM files),
 * loaded with GnuTLS (the TLS library Debian's libmicrohttpd is built on),
 * and replaced in place on SIGHUP: connections already open keep the
 * certificate they were handshaken with, new handshakes get the new one.
 *
 * Each load is kept until tls_creds_free, so a handshake that picked an
 * older one can never see it freed; reloads are rare and a chain is a few
 * KiB.
 */
#ifndef SMQD_TLS_H
#define SMQD_TLS_H

#include <stddef.h>

struct tls_creds;

/* What a handshake presents, in GnuTLS's types (gnutls_pcert_st[] and a
 * gnutls_privkey_t), for the certificate callback of httpd.c. */
struct tls_cert_view {
    void *pcerts;
    unsigned int n_pcerts;
    void *key;
};

/* Reads cert_file (the certificate, then any intermediate CA certificates)
 * and key_file.  0, or SMQ_E_INVALID_ARGUMENT / SMQ_E_NOMEM with a message
 * naming the file in err. */
int tls_creds_load(const char *cert_file, const char *key_file, struct tls_creds **out,
                   char *err, size_t err_size);
/* Loads both files again and makes them current; on failure the current
 * ones stay and err says why.  One reloading thread at a time (smqd's
 * signal thread); handshakes may read the current pair meanwhile. */
int tls_creds_reload(struct tls_creds *c, const char *cert_file, const char *key_file,
                     char *err, size_t err_size);
/* The current chain and key (any thread). */
void tls_creds_current(struct tls_creds *c, struct tls_cert_view *out);
void tls_creds_free(struct tls_creds *c);

#endif
