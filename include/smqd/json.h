/*
 * json.h — the few JSON-writing helpers the admin listener needs, on top of
 * struct smq_buf (whose failed flag covers every append).  Structure
 * (braces, commas) is written by the caller; this module owns what is easy
 * to get wrong: string escaping and number formatting.
 */
#ifndef SMQD_JSON_H
#define SMQD_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "smqd/buf.h"

/*
 * Appends s[0..len) as a quoted JSON string.  Control characters, '"' and
 * '\\' are escaped; bytes that are not valid UTF-8 become U+FFFD, so the
 * output is valid JSON (and valid UTF-8) whatever the input bytes were.
 */
void json_str(struct smq_buf *b, const char *s, size_t len);
/* json_str of a NUL-terminated string. */
void json_cstr(struct smq_buf *b, const char *s);
/* A finite decimal with at most 3 fraction digits (ages in seconds). */
void json_seconds(struct smq_buf *b, int64_t ms);

#endif
