/*
 * volume.h — the volume a database lives on: its directory, its size, its
 * free space, and how large a disk reserve it can hold.  The configuration
 * and the store both need these facts.
 * A leaf: no other smqd module.
 */
#ifndef SMQD_VOLUME_H
#define SMQD_VOLUME_H

#include <stddef.h>
#include <stdint.h>

/*
 * The disk reserve is at most this fraction of its volume (1/N).  Sends
 * come back once as much again as the reserve is free beside it, so on a
 * volume of V bytes they are accepted again with V/2 free at the latest:
 * a small volume never needs more free space than a drained one has.  (A
 * smaller share would leave a reserve below what a WAL checkpoint on a
 * full disk needs: up to SQLite's 1,000-page WAL, 4 MiB.)
 */
#define VOLUME_RESERVE_SHARE 4

/* The directory part of path ("." for a bare name, with the slash
 * otherwise), in out.  0 or SMQ_E_INVALID_ARGUMENT (out too small). */
int volume_dir_of(const char *path, char *out, size_t size);
/* Size and free space (for unprivileged users) of the file system holding
 * the directory of path (the file need not exist): 0 and UINT64_MAX when
 * unknown. */
uint64_t volume_size_bytes(const char *path);
uint64_t volume_free_bytes(const char *path);
/* The reserve a volume of volume_bytes (0 = unknown) can hold: wanted, or
 * when that is more than 1/VOLUME_RESERVE_SHARE of the volume, that share
 * rounded down to whole 4 KiB blocks. */
uint64_t volume_reserve_for(uint64_t wanted, uint64_t volume_bytes);

#endif
