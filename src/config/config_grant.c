/*
 * config_grant.c — owns the [grant.KEY] and [grant.KEY.N] sections of the
 * configuration file (config_table.h): collecting each section's queues and
 * actions, and, once the key ring is assembled, checking that every section
 * names a key and giving each key the union of its grants (grant.h).
 *
 * A section is named after the access key id it scopes; a key with several
 * grants numbers the others ([grant.team-a.2]).  Key ids may themselves
 * contain dots, so an exact key id wins over a numbered reading of it.
 */
#include "config_table.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GRANT_SECTION "grant."
#define KEY_ID_CHARS \
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-"

__attribute__((format(printf, 3, 4)))
static int refuse(char *why, size_t why_size, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, why_size, fmt, ap);
    va_end(ap);
    return SMQ_E_INVALID_ARGUMENT;
}

bool config_grant_is_section(const char *name, size_t len)
{
    return len >= strlen(GRANT_SECTION) && memcmp(name, GRANT_SECTION, strlen(GRANT_SECTION)) == 0;
}

int config_grant_begin(struct grant_decls *ds, const char *name, size_t len, int line,
                       char *why, size_t why_size)
{
    const char *id = name + strlen(GRANT_SECTION);
    size_t id_len = len - strlen(GRANT_SECTION);
    struct grant_decl *grown;
    char copy[sizeof grown->id];
    ds->open = false;
    if (id_len == 0 || id_len >= sizeof copy)
        return refuse(why, why_size, "[%.*s]: a grant section is [grant.<ACCESS_KEY_ID>] or "
                      "[grant.<ACCESS_KEY_ID>.<N>]", (int)len, name);
    memcpy(copy, id, id_len);
    copy[id_len] = '\0';
    /* Only the characters: a numbered section may be longer than an id. */
    if (strspn(copy, KEY_ID_CHARS) != id_len)
        return refuse(why, why_size, "[%.*s]: invalid character in access key id", (int)len,
                      name);
    for (size_t i = 0; i < ds->n; i++)
        if (strcmp(ds->v[i].id, copy) == 0)
            return refuse(why, why_size, "[%.*s]: duplicate section (first on line %d)",
                          (int)len, name, ds->v[i].line);
    grown = realloc(ds->v, (ds->n + 1) * sizeof *grown);
    if (grown == NULL)
        return refuse(why, why_size, "out of memory");
    ds->v = grown;
    memset(&ds->v[ds->n], 0, sizeof ds->v[ds->n]);
    memcpy(ds->v[ds->n].id, copy, id_len + 1);
    ds->v[ds->n++].line = line;
    ds->open = true;
    return 0;
}

int config_grant_apply(struct grant_decls *ds, const char *key, const char *value, int line,
                       char *why, size_t why_size)
{
    struct grant_decl *d = &ds->v[ds->n - 1];
    bool queues = strcmp(key, "queues") == 0;
    int *seen = queues ? &d->queues_line : &d->actions_line;
    char problem[200];
    int rc;

    if (!queues && strcmp(key, "actions") != 0)
        return refuse(why, why_size, "[grant.%s] unknown key \"%s\" (known: queues, actions)",
                      d->id, key);
    if (*seen != 0)
        return refuse(why, why_size, "[grant.%s] %s: duplicate key (first set on line %d)",
                      d->id, key, *seen);
    *seen = line;
    rc = queues ? grant_parse_queues(value, &d->grant, problem, sizeof problem)
                : grant_parse_classes(value, &d->grant.classes, problem, sizeof problem);
    if (rc == SMQ_E_NOMEM)
        return refuse(why, why_size, "out of memory");
    if (rc != 0)
        return refuse(why, why_size, "[grant.%s] %s: %s", d->id, key, problem);
    return 0;
}

/* The key d scopes: the key whose id is d's whole name, else the one its
 * name is with a ".N" taken off; NULL when there is none. */
static struct auth_key *key_of(const struct grant_decl *d, struct auth_keyring *ring)
{
    const char *dot = strrchr(d->id, '.');
    size_t digits = dot != NULL ? strspn(dot + 1, "0123456789") : 0;

    for (size_t i = 0; i < ring->n; i++)
        if (strcmp(ring->keys[i].id, d->id) == 0)
            return &ring->keys[i];
    if (dot == NULL || digits == 0 || dot[1 + digits] != '\0')
        return NULL;
    for (size_t i = 0; i < ring->n; i++)
        if (strlen(ring->keys[i].id) == (size_t)(dot - d->id)
            && memcmp(ring->keys[i].id, d->id, (size_t)(dot - d->id)) == 0)
            return &ring->keys[i];
    return NULL;
}

/* Moves d's grant into the grant set of its key, making the set first. */
static int give(struct auth_key *k, struct grant_decl *d)
{
    if (k->grants == NULL && (k->grants = calloc(1, sizeof *k->grants)) == NULL)
        return SMQ_E_NOMEM;
    return grant_set_add(k->grants, &d->grant);
}

int config_grant_attach(struct grant_decls *ds, struct auth_keyring *ring, int *line,
                        char *why, size_t why_size)
{
    for (size_t i = 0; i < ds->n; i++) {
        struct grant_decl *d = &ds->v[i];
        struct auth_key *k = key_of(d, ring);

        *line = d->line;
        if (d->queues_line == 0 || d->actions_line == 0)
            return refuse(why, why_size, "[grant.%s]: %s is missing (a grant needs queues "
                          "and actions)", d->id, d->queues_line == 0 ? "queues" : "actions");
        if (k == NULL)
            return refuse(why, why_size, "[grant.%s]: no access key \"%s\" in [auth] (name "
                          "the section [grant.<ACCESS_KEY_ID>] or [grant.<ACCESS_KEY_ID>.<N>])",
                          d->id, d->id);
        if (give(k, d) != 0)
            return refuse(why, why_size, "out of memory");
    }
    *line = 0;
    return 0;
}

void config_grant_decls_free(struct grant_decls *ds)
{
    for (size_t i = 0; i < ds->n; i++)
        grant_free(&ds->v[i].grant);
    free(ds->v);
    *ds = (struct grant_decls){NULL, 0, false};
}

/* A section name for k's grant number n (0-based) that reads back as k's:
 * [grant.ID] first, then [grant.ID.N] with an N no other key's id takes. */
static void section_name(const struct auth_keyring *ring, const struct auth_key *k, size_t n,
                         unsigned *next, char *out, size_t size)
{
    bool taken = true;

    if (n == 0) {
        snprintf(out, size, "%s", k->id);
        return;
    }
    while (taken) {
        snprintf(out, size, "%s.%u", k->id, (*next)++);
        taken = false;
        for (size_t i = 0; i < ring->n && !taken; i++)
            taken = strcmp(ring->keys[i].id, out) == 0;
    }
}

void config_grant_print(const struct auth_keyring *ring, FILE *out)
{
    char name[SMQ_KEY_ID_MAX + 16], queues[4096], actions[64];

    for (size_t i = 0; i < ring->n; i++) {
        const struct auth_key *k = &ring->keys[i];
        unsigned next = 2;

        if (k->grants == NULL) {
            fprintf(out, "\n# %s: every action on every queue (no [grant.%s] section)\n", k->id,
                    k->id);
            continue;
        }
        for (size_t g = 0; g < k->grants->n; g++) {
            section_name(ring, k, g, &next, name, sizeof name);
            grant_format_queues(&k->grants->grants[g], queues, sizeof queues);
            grant_format_classes(k->grants->grants[g].classes, actions, sizeof actions);
            fprintf(out, "\n[grant.%s]\n# %s may %s on these queues (its grants add up)\n"
                    "queues = %s\nactions = %s\n", name, k->id, actions, queues, actions);
        }
    }
}
