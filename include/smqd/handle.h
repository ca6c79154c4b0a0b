/*
 * handle.h — message ids and receipt handles.
 *
 * MessageId: 32 upper-case hex digits = an 8-byte per-database prefix (random,
 * made once) followed by the message's 8-byte sequence number, so ids are
 * unique across queues and restarts without storing them.
 *
 * ReceiptHandle: base64url (no padding; [A-Za-z0-9_-] only, so every SDK puts
 * the same bytes on the wire) of seq(8) | generation(4) | MAC(8), where MAC
 * is HMAC-SHA1 over the first 12 bytes with a per-database secret.  A handle
 * that does not decode or whose MAC is wrong is malformed (ReceiptHandleError);
 * one that verifies but names an older generation is stale (MessageNotExist).
 */
#ifndef SMQD_HANDLE_H
#define SMQD_HANDLE_H

#include <stddef.h>
#include <stdint.h>

#define HANDLE_SECRET_LEN 32
#define HANDLE_TEXT_LEN 27          /* base64url of 20 bytes, unpadded */
#define MSGID_TEXT_LEN 32

struct handle_keys {
    unsigned char secret[HANDLE_SECRET_LEN];   /* MAC key for receipt handles */
    unsigned char id_prefix[8];                /* first half of every MessageId */
};

/* Fills keys with fresh random material.  0 or SMQ_E_INTERNAL. */
int handle_keys_generate(struct handle_keys *keys);

void handle_encode(const struct handle_keys *keys, uint64_t seq, uint32_t gen,
                   char out[HANDLE_TEXT_LEN + 1]);
/* 0, or SMQ_E_RECEIPT_HANDLE_ERROR for anything that is not a handle we made. */
int handle_decode(const struct handle_keys *keys, const char *text, size_t len,
                  uint64_t *seq, uint32_t *gen);

void msgid_format(const struct handle_keys *keys, uint64_t seq, char out[MSGID_TEXT_LEN + 1]);

#endif
