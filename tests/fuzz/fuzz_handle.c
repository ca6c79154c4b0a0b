/*
 * fuzz_handle.c — libFuzzer target for receipt handles and message ids
 * (handle.h), with the fixed keys of fuzz_common.h.
 *
 * The input is a receipt handle as a client sends it back.  Checked:
 *   - handle_decode returns 0 or SMQ_E_RECEIPT_HANDLE_ERROR;
 *   - one spelling per handle: when the input decodes, handle_encode(seq,
 *     gen) gives back exactly the input bytes (27 characters);
 *   - a handle decodes under the keys that made it and not under others
 *     (one key bit flipped);
 *   - the other way round, (seq, gen) taken from the first 12 input bytes:
 *     encode gives 27 characters of [A-Za-z0-9_-] that decode to the same
 *     pair, and msgid_format gives the 8-byte id prefix then seq, as 32
 *     upper-case hex digits.
 * Seeds are valid handles made by tests/fuzz/make_corpus.sh with the same
 * keys, so mutations start from inputs that pass the MAC.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "smqd/errors.h"
#include "smqd/handle.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

static bool b64url_char(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'
           || c == '_';
}

static uint64_t get_be(const uint8_t *p, int n)
{
    uint64_t v = 0;

    for (int i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

static void check_decode(const char *text, size_t len)
{
    const struct handle_keys *keys = fuzz_handle_keys();
    struct handle_keys other = *keys;
    uint64_t seq = 0, seq2 = 0;
    uint32_t gen = 0, gen2 = 0;
    char again[HANDLE_TEXT_LEN + 1];
    int rc = handle_decode(keys, text, len, &seq, &gen);

    FUZZ_CHECK(rc == 0 || rc == SMQ_E_RECEIPT_HANDLE_ERROR);
    if (rc != 0)
        return;
    FUZZ_CHECK(len == HANDLE_TEXT_LEN);
    handle_encode(keys, seq, gen, again);
    FUZZ_CHECK(strlen(again) == HANDLE_TEXT_LEN);
    FUZZ_CHECK(memcmp(again, text, len) == 0);
    other.secret[len % HANDLE_SECRET_LEN] ^= 1;
    FUZZ_CHECK(handle_decode(&other, text, len, &seq2, &gen2) == SMQ_E_RECEIPT_HANDLE_ERROR);
}

static void check_encode(const uint8_t *data, size_t size)
{
    const struct handle_keys *keys = fuzz_handle_keys();
    uint8_t raw[12] = {0};
    char text[HANDLE_TEXT_LEN + 1], id[MSGID_TEXT_LEN + 1], want[MSGID_TEXT_LEN + 1];
    uint64_t seq, seq2 = 0;
    uint32_t gen, gen2 = 0;

    memcpy(raw, data, size < sizeof raw ? size : sizeof raw);
    seq = get_be(raw, 8);
    gen = (uint32_t)get_be(raw + 8, 4);
    handle_encode(keys, seq, gen, text);
    FUZZ_CHECK(strlen(text) == HANDLE_TEXT_LEN);
    for (size_t i = 0; i < HANDLE_TEXT_LEN; i++)
        FUZZ_CHECK(b64url_char(text[i]));
    FUZZ_CHECK(handle_decode(keys, text, HANDLE_TEXT_LEN, &seq2, &gen2) == 0);
    FUZZ_CHECK(seq2 == seq && gen2 == gen);

    msgid_format(keys, seq, id);
    snprintf(want, sizeof want, "%016llX%016llX",
             (unsigned long long)get_be(keys->id_prefix, 8), (unsigned long long)seq);
    FUZZ_CHECK(strcmp(id, want) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* A private copy without slack or NUL, so ASan sees any read past size. */
    char *text = malloc(size > 0 ? size : 1);

    if (text == NULL)
        return 0;
    if (size > 0)
        memcpy(text, data, size);
    check_decode(text, size);
    check_encode(data, size);
    free(text);
    return 0;
}
