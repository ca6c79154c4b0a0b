/*
 * config_print.c — owns `smqd -t`'s printing of the effective settings
 * (config.h): a valid configuration file, each key under a comment that
 * says what it does, its range and its default; secrets masked; each
 * key's grants.
 */
#include "config_table.h"

#include <string.h>

static void print_field(const struct smq_config *cfg, const struct setting *s, FILE *out)
{
    const char *field = (const char *)cfg + s->offset;

    switch (s->type) {
    case OPT_INT:
        fprintf(out, "%s = %d\n", s->key, *(const int *)(const void *)field);
        return;
    case OPT_BOOL:
        fprintf(out, "%s = %s\n", s->key, *(const bool *)(const void *)field ? "true" : "false");
        return;
    case OPT_ENUM:
        fprintf(out, "%s = %s\n", s->key, s->names[*(const int *)(const void *)field]);
        return;
    case OPT_PATH:
        if (field[0] == '\0')
            fprintf(out, "%s =\n", s->key);     /* unset (the log file is "-" then) */
        else
            fprintf(out, "%s = %s\n", s->key, field);
        return;
    case OPT_LISTEN:
        fprintf(out, strchr(cfg->listen_host, ':') ? "%s = [%s]:%u\n" : "%s = %s:%u\n", s->key,
                cfg->listen_host, (unsigned)cfg->listen_port);
        return;
    case OPT_ADMIN_LISTEN:
        if (!cfg->admin_enabled)
            fprintf(out, "%s = off\n", s->key);
        else
            fprintf(out, strchr(cfg->admin_host, ':') ? "%s = [%s]:%u\n" : "%s = %s:%u\n",
                    s->key, cfg->admin_host, (unsigned)cfg->admin_port);
        return;
    case OPT_TOKEN:
        fprintf(out, field[0] ? "%s = " SMQ_CONFIG_SECRET_MASK "\n" : "# %s = (not set)\n",
                s->key);
        return;
    case OPT_DSN: {
        char masked[sizeof cfg->storage_dsn + sizeof SMQ_CONFIG_SECRET_MASK];
        config_mask_dsn(field, masked, sizeof masked);
        fprintf(out, "%s =%s%s\n", s->key, masked[0] ? " " : "", masked);
        return;
    }
    case OPT_NODE_ID:
    case OPT_PROXIES:
    case OPT_URL:
        fprintf(out, "%s =%s%s\n", s->key, field[0] ? " " : "", field);
        return;
    default:
        return;
    }
}

/* One value of a key = value conninfo (quoted or not): its length at v. */
static size_t conninfo_value_len(const char *v)
{
    size_t n = 0;

    if (v[0] != '\'')
        return strcspn(v, " \t\n");
    for (n = 1; v[n] != '\0' && v[n] != '\''; n++)
        if (v[n] == '\\' && v[n + 1] != '\0')
            n++;
    return v[n] == '\'' ? n + 1 : n;
}

/* postgresql://user:PASSWORD@host/...: the password between ':' and '@'. */
static void mask_uri(const char *dsn, char *out, size_t size)
{
    const char *user = strstr(dsn, "://") + 3;
    size_t auth = strcspn(user, "@/?"), colon = strcspn(user, ":@/?");

    if (user[auth] != '@' || colon >= auth) {
        snprintf(out, size, "%s", dsn);
        return;
    }
    snprintf(out, size, "%.*s" SMQ_CONFIG_SECRET_MASK "%s", (int)(user - dsn + colon + 1), dsn,
             user + auth);
}

void config_mask_dsn(const char *dsn, char *out, size_t size)
{
    size_t used = 0;
    const char *p = dsn;

    if (strncmp(dsn, "postgresql://", 13) == 0 || strncmp(dsn, "postgres://", 11) == 0) {
        mask_uri(dsn, out, size);
        return;
    }
    out[0] = '\0';
    while (*p != '\0' && used < size) {
        size_t key = strcspn(p, "= \t\n"), sp = key, vlen;
        while (p[sp] == ' ' || p[sp] == '\t')
            sp++;
        if (p[sp] != '=') {             /* not key = value: copy one character */
            out[used++] = *p++;
            continue;
        }
        sp++;
        while (p[sp] == ' ' || p[sp] == '\t')
            sp++;
        vlen = conninfo_value_len(p + sp);
        used += (size_t)snprintf(out + used, size - used, "%.*s%.*s", (int)sp, p,
                                 key == 8 && strncmp(p, "password", 8) == 0
                                     ? (int)sizeof SMQ_CONFIG_SECRET_MASK - 1 : (int)vlen,
                                 key == 8 && strncmp(p, "password", 8) == 0
                                     ? SMQ_CONFIG_SECRET_MASK : p + sp);
        p += sp + vlen;
    }
    out[used < size ? used : size - 1] = '\0';
}

/* "# doc (1..64, default 2)": what `smqd -t` shows instead of a man page. */
static void print_doc(const struct setting *s, FILE *out)
{
    char allowed[160];

    config_table_describe(s, allowed, sizeof(allowed));
    if (s->type == OPT_INT || s->type == OPT_ENUM)
        fprintf(out, "# %s (%s; default %s)\n", s->doc, allowed, s->def);
    else if (s->def != NULL)
        fprintf(out, "# %s (default %s)\n", s->doc, s->def[0] ? s->def : "empty");
    else
        fprintf(out, "# %s\n", s->doc);
}

/* The key ring: keys[0] as the first pair, the rest as key.<ID> lines. */
static void print_auth(const struct smq_config *cfg, const struct setting *s, FILE *out)
{
    const struct auth_keyring *ring = &cfg->keys;

    switch (s->type) {
    case OPT_KEY_ID:
        if (ring->n == 0)
            fprintf(out, "# %s = (not set)\n", s->key);
        else
            fprintf(out, "%s = %s\n", s->key, ring->keys[0].id);
        return;
    case OPT_SECRET:
        fprintf(out, ring->n == 0 ? "# %s = (not set)\n" : "%s = " SMQ_CONFIG_SECRET_MASK "\n",
                s->key);
        return;
    case OPT_KEY_PAIR:
        for (size_t i = 1; i < ring->n; i++)
            fprintf(out, "%s%s = " SMQ_CONFIG_SECRET_MASK "\n", s->key, ring->keys[i].id);
        return;
    default:
        return;
    }
}

void config_print(const struct smq_config *cfg, FILE *out)
{
    const char *section = "";

    fprintf(out, "# smqd effective configuration; secrets are shown as %s\n",
            SMQ_CONFIG_SECRET_MASK);
    for (size_t i = 0; i < config_n_settings; i++) {
        const struct setting *s = &config_settings[i];
        if (strcmp(section, s->section) != 0) {
            section = s->section;
            fprintf(out, "\n[%s]\n", section);
        }
        print_doc(s, out);
        if (s->type == OPT_KEY_ID || s->type == OPT_SECRET || s->type == OPT_KEY_PAIR)
            print_auth(cfg, s, out);
        else
            print_field(cfg, s, out);
    }
    config_grant_print(&cfg->keys, out);
    for (size_t i = 0; i < cfg->n_queues; i++) {
        const struct smq_queue_decl *d = &cfg->queues[i];
        fprintf(out, "\n[queue.%s]\n", d->name);
        if (d->dlq_target[0] != '\0')
            fprintf(out, "dlq_target = %s\ndlq_max_receive_count = %d\n", d->dlq_target,
                    d->dlq_max_receive_count);
    }
}
