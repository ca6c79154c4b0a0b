/*
 * scratch_dir.h — for the unit tests: removes a test's scratch directory
 * (made with mkdtemp) and the files in it.  A test that makes
 * subdirectories removes those itself first.
 */
#ifndef SMQD_TEST_SCRATCH_DIR_H
#define SMQD_TEST_SCRATCH_DIR_H

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static inline void scratch_dir_remove(const char *dir)
{
    char file[512];
    struct dirent *e;
    DIR *d = opendir(dir);

    while (d != NULL && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(file, sizeof file, "%s/%s", dir, e->d_name);
        unlink(file);
    }
    if (d != NULL)
        closedir(d);
    rmdir(dir);
}

#endif
