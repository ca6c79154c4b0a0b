/*
 * exposure.c — the start-up checks of file modes, the user and the volume
 * (exposure.h).  docs/operations.md, "Security", says what each one means.
 */
#include "exposure.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>

#include "smqd/volume.h"

struct run {
    exposure_report_fn report;
    void *arg;
    int errors;
};

__attribute__((format(printf, 3, 4)))
static void say(struct run *r, bool error, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    r->errors += error;
    r->report(r->arg, error, msg);
}

/* Anyone who can change the file can give themselves a key; anyone who can
 * read it has every key. */
static void check_config_file(struct run *r, const char *path)
{
    struct stat st;

    if (stat(path, &st) != 0)
        return;                  /* config_load read it; a race is not ours to judge */
    if (st.st_mode & S_IWOTH)
        say(r, true, "%s is writable by every user, who could add an access key or change "
            "the admin token; chmod o-w %s", path, path);
    else if (st.st_mode & S_IWGRP)
        say(r, false, "%s is writable by its group, whose members could add access keys; "
            "chmod g-w %s unless that is meant", path, path);
    if (st.st_mode & S_IROTH)
        say(r, false, "%s is readable by every user and holds the access key secrets; "
            "chmod o-r %s (0640, group of the service user, or 0600)", path, path);
}

/* One file of the database: others must have no access at all. */
static void check_data_file(struct run *r, const char *path)
{
    struct stat st;

    if (stat(path, &st) != 0)
        return;                  /* not made yet: smqd creates it owner-only */
    if (st.st_mode & S_IRWXO)
        say(r, true, "%s is accessible to every user (mode %04o): it holds every message "
            "body and the key that signs receipt handles; chmod o-rwx %s",
            path, (unsigned)(st.st_mode & 07777), path);
    else if (st.st_mode & (S_IRGRP | S_IWGRP))
        say(r, false, "%s is accessible to its group (mode %04o), whose members can read "
            "every message; chmod 600 %s unless that is meant",
            path, (unsigned)(st.st_mode & 07777), path);
}

static void check_database(struct run *r, const char *db)
{
    static const char *const suffixes[] = {"", "-wal", "-shm"};
    char path[4096 + 8];

    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        snprintf(path, sizeof path, "%s%s", db, suffixes[i]);
        check_data_file(r, path);
    }
}

static void check_volume(struct run *r, const struct smq_config *cfg)
{
    uint64_t wanted = (uint64_t)cfg->reserve_mb << 20;
    uint64_t volume = volume_size_bytes(cfg->storage_path);
    uint64_t held = volume_reserve_for(wanted, volume);

    if (held < wanted)
        say(r, false, "the file system holding %s (%.1f MiB) cannot hold the %d MiB disk "
            "reserve with room beside it; using %.2f MiB (a quarter of it)",
            cfg->storage_path, (double)volume / (1 << 20), cfg->reserve_mb,
            (double)held / (1 << 20));
}

int exposure_check(const struct smq_config *cfg, const char *config_path, uid_t euid,
                   exposure_report_fn report, void *arg)
{
    struct run r = {.report = report, .arg = arg};

    check_config_file(&r, config_path);
    if (cfg->storage_backend == SMQ_STORE_SQLITE) {     /* PostgreSQL: no local file */
        check_database(&r, cfg->storage_path);
        check_volume(&r, cfg);
    }
    if (euid == 0)
        say(&r, false, "running as root: any flaw in smqd would be one of the whole host; run "
            "it as its own user (conf/smqd.service does)");
    return r.errors;
}
