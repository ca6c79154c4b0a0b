/*
 * storage.h — what the configuration decides about storage, for the
 * configuration (which reads it) and the store (which obeys it) alike, and
 * the facts about the volume a database lives on that both need: its size,
 * its free space, and how large a disk reserve it can hold.
 * A leaf: no other smqd module.
 */
#ifndef SMQD_STORAGE_H
#define SMQD_STORAGE_H

#include <stddef.h>
#include <stdint.h>

enum smq_sync_mode {
    SMQ_SYNC_FULL = 0,      /* an acknowledged write is on disk: survives power loss */
    SMQ_SYNC_NORMAL = 1     /* survives a crash of smqd; a power loss may drop recent commits */
};

enum smq_store_backend {
    SMQ_STORE_SQLITE = 0,   /* the embedded default: one file, WAL mode */
    SMQ_STORE_POSTGRESQL = 1    /* a shared PostgreSQL database (libpq) */
};

/* Where and how the store keeps its data (store_open). */
struct store_config {
    enum smq_store_backend backend;
    const char *path;       /* SQLite: the database file */
    enum smq_sync_mode sync;
    const char *dsn;        /* PostgreSQL: a libpq conninfo string */
    /* PostgreSQL: the application_name of every connection the store opens
     * (NULL = "smqd"), so that a node taking the lease over can end a
     * former holder's sessions by it (lease.h). */
    const char *app_name;
};

/*
 * The disk reserve is at most this fraction of its volume (1/N).  Sends
 * come back once as much again as the reserve is free beside it, so on a
 * volume of V bytes they are accepted again with V/2 free at the latest:
 * a small volume never needs more free space than a drained one has.  (A
 * smaller share would leave a reserve below what a WAL checkpoint on a
 * full disk needs: up to SQLite's 1,000-page WAL, 4 MiB.)
 */
#define STORAGE_RESERVE_VOLUME_SHARE 4

/* The directory part of path ("." for a bare name, with the slash
 * otherwise), in out.  0 or SMQ_E_INVALID_ARGUMENT (out too small). */
int storage_dir_of(const char *path, char *out, size_t size);
/* Size and free space (for unprivileged users) of the file system holding
 * the directory of path (the file need not exist): 0 and UINT64_MAX when
 * unknown. */
uint64_t storage_volume_bytes(const char *path);
uint64_t storage_free_bytes(const char *path);
/* The reserve a volume of volume_bytes (0 = unknown) can hold: wanted, or
 * when that is more than 1/STORAGE_RESERVE_VOLUME_SHARE of the volume, that
 * share rounded down to whole 4 KiB blocks. */
uint64_t storage_reserve_for_volume(uint64_t wanted, uint64_t volume_bytes);

#endif
