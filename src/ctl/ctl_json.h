/*
 * ctl_json.h — a small, strict JSON reader for smqctl: just enough to read
 * what the admin API returns (docs/admin-api.md), and to join the pages of
 * a listing and write them out again.  It builds a tree; the
 * input is bounded (nesting depth, total size) because a misconfigured -a
 * could point smqctl at anything.
 */
#ifndef SMQCTL_JSON_H
#define SMQCTL_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum cj_type { CJ_NULL, CJ_BOOL, CJ_NUMBER, CJ_STRING, CJ_ARRAY, CJ_OBJECT };

struct cj_value {
    enum cj_type type;
    bool boolean;
    char *text;              /* STRING: decoded UTF-8 (may hold NULs: see len);
                                NUMBER: the literal as written */
    size_t len;              /* of text */
    struct cj_value *items;  /* ARRAY elements, OBJECT values */
    char **keys;             /* OBJECT keys, parallel to items */
    size_t n;
};

#define CJ_MAX_DEPTH 32

/* Parses exactly one JSON value (surrounding whitespace allowed).  0, or
 * SMQ_E_INVALID_ARGUMENT with "offset N: problem" in err; out is always
 * safe to cj_free. */
int cj_parse(const char *text, size_t len, struct cj_value *out, char *err, size_t err_size);
void cj_free(struct cj_value *v);

/* The member key of an object, or NULL (also when obj is not an object). */
const struct cj_value *cj_get(const struct cj_value *obj, const char *key);
/* text of a STRING or NUMBER member, or fallback. */
const char *cj_text(const struct cj_value *obj, const char *key, const char *fallback);
/* A NUMBER member as an unsigned integer; false if absent or not one. */
bool cj_u64(const struct cj_value *obj, const char *key, uint64_t *out);

/* The member key of an object, to change it in place; NULL as cj_get. */
struct cj_value *cj_get_mut(struct cj_value *obj, const char *key);

/* Moves every element of the array from to the end of the array to (from
 * is left empty): the pages of a listing become one list.  0,
 * SMQ_E_INVALID_ARGUMENT (not two arrays) or SMQ_E_NOMEM (nothing moved). */
int cj_array_take(struct cj_value *to, struct cj_value *from);
/* Writes v as compact JSON: strings escaped again (as RFC 8259 requires,
 * other bytes as they are), numbers as they were written. */
void cj_write(FILE *out, const struct cj_value *v);

#endif
