/*
 * utf8.h — decoding one UTF-8 sequence (RFC 3629), the single place that
 * decides what valid UTF-8 is for the writers of JSON (json.c) and XML
 * (xml.c) text.
 */
#ifndef SMQD_UTF8_H
#define SMQD_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Length (1..4) of the valid UTF-8 sequence at p, with its code point in
 * *cp; 0 when the bytes there are not one: a stray continuation byte, a
 * sequence cut by avail, an overlong form, a surrogate or a code point
 * above U+10FFFF.  avail must be at least 1. */
size_t utf8_decode(const unsigned char *p, size_t avail, uint32_t *cp);

#endif
