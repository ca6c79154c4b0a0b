/*
 * ctl_json.h — a small, strict JSON reader for smqctl: just enough to read
 * what the admin API returns (docs/admin-api.md).  It builds a tree; the
 * input is bounded (nesting depth, total size) because a misconfigured -a
 * could point smqctl at anything.
 */
#ifndef SMQCTL_JSON_H
#define SMQCTL_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

#endif
