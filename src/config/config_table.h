/*
 * config_table.h — the configuration module's insides, shared by its four
 * files: the table of settings and the rules of each value
 * (config_table.c), the loader (config.c), the [grant.KEY] sections
 * (config_grant.c) and the printer (config_print.c).  Nothing outside the
 * module includes this.
 */
#ifndef SMQD_CONFIG_TABLE_H
#define SMQD_CONFIG_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "smqd/config.h"
#include "smqd/grant.h"

#define CONFIG_KNOWN_SECTIONS "server, storage, cluster, auth, limits, log, admin"
#define CONFIG_MAX_SETTINGS 64

enum opt_type {
    OPT_INT,        /* int field, min..max */
    OPT_BOOL,       /* bool field */
    OPT_ENUM,       /* int-sized enum field, spelled by names[] */
    OPT_PATH,       /* char array; min..max is the length range */
    OPT_LISTEN,     /* HOST:PORT into listen_host + listen_port */
    OPT_KEY_ID,     /* [auth] access_key_id: collected, not a field */
    OPT_SECRET,     /* [auth] access_key_secret: collected, not a field */
    OPT_KEY_PAIR,   /* [auth] key.<ID> = <SECRET>, any number of them */
    OPT_ADMIN_LISTEN, /* [admin] listen: HOST:PORT into admin_host + admin_port, or off */
    OPT_TOKEN,      /* [admin] token, read_token: a secret kept in a char array; empty = none */
    OPT_DSN,        /* a libpq conninfo string in a char array; printed with its password masked */
    OPT_NODE_ID,    /* a name of 1..max characters of A-Z a-z 0-9 _ . - in a char array */
    OPT_PROXIES,    /* [server] trusted_proxies: text into a char array, ranges into trusted_proxies */
    OPT_URL         /* an http(s) URL of at most max bytes in a char array; empty = none */
};

struct setting {
    const char *section;
    const char *key;            /* OPT_KEY_PAIR: the prefix "key." */
    enum opt_type type;
    const char *def;            /* default as written in the file; NULL = none */
    long long min, max;         /* OPT_INT value range, OPT_PATH length range */
    const char *const *names;   /* OPT_ENUM spellings, indexed by value */
    size_t offset;              /* field in struct smq_config */
    const char *doc;            /* one line, printed above the key */
};

extern const struct setting config_settings[];
extern const size_t config_n_settings;

/* A whole decimal integer in min..max into *out: NULL, or the problem. */
const char *config_table_parse_int(const char *v, long long min, long long max, long long *out);
/* Stores v into cfg's field of a plain (non-[auth]) row: NULL, or a short
 * description of the problem. */
const char *config_table_parse(struct smq_config *cfg, const struct setting *s, const char *v);
/* Describes the allowed values of s, for error messages and comments. */
void config_table_describe(const struct setting *s, char *buf, size_t size);
/* The rules of an access key id and of a secret: NULL or the problem. */
const char *config_table_check_key_id(const char *id);
const char *config_table_check_secret(const char *secret);
/* [admin] read_token against token, once the whole file is read: NULL or
 * the problem. */
const char *config_table_check_read_token(const struct smq_config *cfg);

bool config_table_section_known(const char *name, size_t len);
/* The row for section/name (key.<ID> matches its prefix row), or NULL. */
const struct setting *config_table_find(const char *section, const char *name);
/* The keys of section, comma-separated, for "unknown key" messages. */
void config_table_keys(const char *section, char *buf, size_t size);
/* The index of the one row of this type (the [auth] and listener rows). */
size_t config_table_row(enum opt_type type);


/* ---- [grant.KEY] sections (config_grant.c) ------------------------------------- */

/* One [grant.NAME] section as read: NAME is a key id, or one with ".N". */
struct grant_decl {
    char id[SMQ_KEY_ID_MAX + 12];
    int line, queues_line, actions_line;     /* where each was set; 0 = not */
    struct grant grant;
};

struct grant_decls {
    struct grant_decl *v;                    /* malloc'd, in file order */
    size_t n;
    bool open;                               /* the last [section] is v[n - 1] */
};

/* Whether the header "[name]" (len bytes, no brackets) is a grant's. */
bool config_grant_is_section(const char *name, size_t len);
/* Each function below: 0, or SMQ_E_INVALID_ARGUMENT with the sentence for
 * the configuration's error message in why.  A new [grant.X] header. */
int config_grant_begin(struct grant_decls *ds, const char *name, size_t len, int line,
                       char *why, size_t why_size);
/* key = value in the open grant section. */
int config_grant_apply(struct grant_decls *ds, const char *key, const char *value, int line,
                       char *why, size_t why_size);
/* After the key ring is assembled: every section complete and naming one
 * of ring's keys, whose grant set gets the section's grant (moved).  *line
 * is the offending section's line. */
int config_grant_attach(struct grant_decls *ds, struct auth_keyring *ring, int *line,
                        char *why, size_t why_size);
void config_grant_decls_free(struct grant_decls *ds);
/* Each key's grants as [grant.*] sections, or a comment for a key without
 * any that it may do everything. */
void config_grant_print(const struct auth_keyring *ring, FILE *out);

#endif
