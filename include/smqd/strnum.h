/*
 * strnum.h — the one strict integer parser, for every number a client,
 * an operator or a file gives smqd: query parameters, XML elements,
 * configuration values, admin API parameters and smqctl arguments.
 *
 * Strict means the whole text is the number: an optional '-' (signed
 * parsing only) and then one or more ASCII digits — no '+', no blanks, no
 * trailing bytes, no hexadecimal, whatever the locale.  Leading zeros are
 * allowed.  Ranges are the caller's business, because each caller words
 * its own error; strnum_is_integer lets a caller tell "not a number" from
 * "a number out of range" (an integer too large for 64 bits is the latter).
 */
#ifndef SMQD_STRNUM_H
#define SMQD_STRNUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Whether text[0..len) has the form of a signed integer, of any size. */
bool strnum_is_integer(const char *text, size_t len);

/* 0 with *out set, or SMQ_E_INVALID_ARGUMENT (not an integer, or outside
 * int64) with *out untouched. */
int strnum_i64(const char *text, size_t len, int64_t *out);

/* The same for digits only (no sign) into a uint64. */
int strnum_u64(const char *text, size_t len, uint64_t *out);

#endif
