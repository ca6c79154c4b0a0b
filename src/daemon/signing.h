/*
 * signing.h — the push signing key and certificate a node starts with
 * (docs/protocol.md §13.11; docs/operations.md, "Push signing key"): the
 * pair [topics] signing_key_file and signing_cert_file name, or else the
 * one smqd made at its first start and keeps in the store.
 */
#ifndef SMQD_SIGNING_H
#define SMQD_SIGNING_H

#include <stddef.h>

#include "smqd/config.h"
#include "smqd/crypto.h"
#include "smqd/store.h"

/* The CN of the certificate smqd makes for its own key. */
#define SIGNING_CERT_CN "smqd push signing"

/*
 * Loads the configured pair, refusing a key that is not an RSA key of at
 * least 2048 bits or a certificate that does not hold it or is not valid
 * now; without one, reads the pair stored in store, first making and
 * storing one (2048-bit RSA, self-signed) when there is none.  Two nodes
 * racing at a first start store one pair and both read it back.  0 with
 * *signer and *cert_pem (a NUL-terminated copy, the PEM the MNS listener
 * serves), or SMQ_E_INTERNAL (both NULL) with a reason naming the file, or
 * the database, in err.  *config_error tells whether the configured files
 * are at fault (else the store).  Logs nothing secret: no key material.
 */
int signing_setup(const struct smq_config *cfg, struct smq_store *store,
                  struct crypto_signer **signer, char **cert_pem, int *config_error, char *err,
                  size_t err_size);
/* Frees what signing_setup gave; NULLs are no-ops. */
void signing_free(struct crypto_signer *signer, char *cert_pem);

#endif
