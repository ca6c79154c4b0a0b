/*
 * signing.c — owns where a node's push signing key and certificate come
 * from (signing.h; docs/protocol.md §13.11): the configured files, or the
 * pair kept in the store, made at the first start.
 */
#include "signing.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "smqd/buf.h"
#include "smqd/errors.h"
#include "smqd/log.h"

/* The [topics] pair: the key, checked against its certificate. */
static int from_files(const struct smq_config *cfg, struct crypto_signer **signer,
                      char **cert_pem, char *err, size_t err_size)
{
    const char *key = cfg->topics_signing_key_file, *cert = cfg->topics_signing_cert_file;
    int rc = crypto_signer_load(key, signer, err, err_size);

    /* Read once: the certificate checked is the one served. */
    if (rc == 0)
        rc = crypto_signer_cert_file(*signer, cert, cert_pem, err, err_size);
    if (rc == 0)
        SMQ_INFO("push signing: the key in %s, its certificate %s", key, cert);
    return rc;
}

/* Makes a pair and stores it unless another start stored one first. */
static int make_and_store(struct smq_store *store, char *err, size_t err_size)
{
    char *key = NULL, *cert = NULL;
    int rc = crypto_signer_generate_pem(SIGNING_CERT_CN, &key, &cert, err, err_size);

    if (rc == 0 && store_signing_key_put_if_absent(store, key, cert) != 0) {
        snprintf(err, err_size, "cannot store the push signing key in the database");
        rc = SMQ_E_INTERNAL;
    }
    if (rc == 0)
        SMQ_INFO("push signing: made a 2048-bit RSA key and a self-signed certificate, "
                 "kept in the database");
    crypto_pem_free(key);
    free(cert);
    return rc;
}

/* Reads the stored pair into key and cert; *found 0 when there is none. */
static int read_stored(struct smq_store *store, struct smq_buf *key, struct smq_buf *cert,
                       int *found, char *err, size_t err_size)
{
    buf_reset(key);
    buf_reset(cert);
    if (store_signing_key_get(store, key, cert, found) != 0) {
        snprintf(err, err_size, "cannot read the push signing key from the database");
        return SMQ_E_INTERNAL;
    }
    return 0;
}

/* The pair kept in the store, made first when there is none.  The key's
 * bytes are overwritten before its buffer is freed. */
static int from_store(struct smq_store *store, struct crypto_signer **signer, char **cert_pem,
                      char *err, size_t err_size)
{
    static const char what[] = "stored in the database";
    struct smq_buf key, cert;
    int found = 0, rc;

    buf_init(&key);
    buf_init(&cert);
    rc = read_stored(store, &key, &cert, &found, err, err_size);
    if (rc == 0 && !found) {
        rc = make_and_store(store, err, err_size);
        if (rc == 0)
            rc = read_stored(store, &key, &cert, &found, err, err_size);
    }
    if (rc == 0 && !found) {
        snprintf(err, err_size, "the push signing key stored in the database is gone");
        rc = SMQ_E_INTERNAL;
    }
    if (rc == 0)
        rc = crypto_signer_load_pem(key.data, key.len, what, signer, err, err_size);
    if (rc == 0)
        rc = crypto_signer_check_cert_pem(*signer, cert.data, cert.len, what, err, err_size);
    buf_append(&cert, "", 1);
    if (rc == 0 && (*cert_pem = buf_take(&cert, NULL)) == NULL)
        rc = SMQ_E_NOMEM;
    crypto_secret_wipe(key.data, key.len);
    buf_free(&key);
    buf_free(&cert);
    return rc;
}

int signing_setup(const struct smq_config *cfg, struct smq_store *store,
                  struct crypto_signer **signer, char **cert_pem, int *config_error, char *err,
                  size_t err_size)
{
    bool files = cfg->topics_signing_key_file[0] != '\0';
    int rc;

    *signer = NULL;
    *cert_pem = NULL;
    *config_error = files;
    rc = files ? from_files(cfg, signer, cert_pem, err, err_size)
               : from_store(store, signer, cert_pem, err, err_size);
    if (rc != 0) {
        signing_free(*signer, *cert_pem);
        *signer = NULL;
        *cert_pem = NULL;
    }
    return rc;
}

void signing_free(struct crypto_signer *signer, char *cert_pem)
{
    crypto_signer_free(signer);
    free(cert_pem);
}
