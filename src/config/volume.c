/*
 * volume.c — the volume a database lives on: its directory, size and free
 * space, and the disk reserve it can hold (volume.h).
 */
#include "smqd/volume.h"

#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>
#include <limits.h>

#include "smqd/errors.h"

int volume_dir_of(const char *path, char *out, size_t size)
{
    const char *slash = strrchr(path, '/');
    int n = slash == NULL ? snprintf(out, size, ".")
                          : snprintf(out, size, "%.*s", (int)(slash - path + 1), path);

    return n >= 0 && (size_t)n < size ? 0 : SMQ_E_INVALID_ARGUMENT;
}

static int statvfs_of(const char *path, struct statvfs *st)
{
    char dir[PATH_MAX];

    if (volume_dir_of(path, dir, sizeof dir) != 0 || statvfs(dir, st) != 0)
        return SMQ_E_INVALID_ARGUMENT;
    return 0;
}

uint64_t volume_size_bytes(const char *path)
{
    struct statvfs st;

    return statvfs_of(path, &st) == 0 ? (uint64_t)st.f_blocks * st.f_frsize : 0;
}

uint64_t volume_free_bytes(const char *path)
{
    struct statvfs st;

    return statvfs_of(path, &st) == 0 ? (uint64_t)st.f_bavail * st.f_frsize : UINT64_MAX;
}

uint64_t volume_reserve_for(uint64_t wanted, uint64_t volume_bytes)
{
    uint64_t most = volume_bytes / VOLUME_RESERVE_SHARE / 4096 * 4096;

    return volume_bytes == 0 || wanted <= most ? wanted : most;
}
