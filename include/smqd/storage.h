/*
 * storage.h — what the configuration decides about storage, for the
 * configuration (which reads it) and the store (which obeys it) alike.  The
 * volume a database lives on is volume.h's.
 * A leaf: no other smqd module.
 */
#ifndef SMQD_STORAGE_H
#define SMQD_STORAGE_H

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

#endif
