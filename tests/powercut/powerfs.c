/* powerfs.c — a FUSE file system for power-loss tests.  It owns, for every file, two images:
 * what was written (what readers see) and what the last fsync/fdatasync made durable, with a
 * bitmap of the 4 KiB pages that differ.  Writing "cut" to the control file /.powerfs is the
 * power failure: every file goes back to its durable image, as a disk that lost its volatile
 * write cache would; "cut-some SEED" keeps a random subset of the unsynced pages and a random
 * choice of the old or new size, as a disk that wrote some of them back in any order would.
 * Reading /.powerfs gives counters.  See tests/powercut/README.md.
 *
 * It models lost and reordered unsynced pages only: no torn pages (a page is kept or lost
 * whole), and directory operations (create, unlink, rename) are durable at once.  One flat
 * directory; single-threaded (-s), so a cut happens between two operations.
 *
 *   powerfs MOUNTPOINT            (foreground; stop with fusermount3 -u MOUNTPOINT)
 */
#define FUSE_USE_VERSION 31
#include <fuse.h>

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096u
#define CONTROL_NAME ".powerfs"
#define VOLUME_BYTES (8ull << 30)   /* what statfs reports: room for any test's data */
#define MAX_FILE_BYTES (1ull << 30)

struct image {
    unsigned char *data;           /* cap bytes; zero beyond size */
    size_t size;
};

struct node {
    char *name;
    mode_t mode;
    uid_t uid;
    gid_t gid;
    struct timespec atime, mtime, ctime;
    struct image cur, dur;
    size_t cap;                    /* bytes allocated in cur.data and dur.data alike */
    uint64_t *dirty;               /* one bit per page of cap */
    unsigned opens;
    bool unlinked;
    struct node *next;
};

struct counters {
    uint64_t cuts, syncs, pages_synced, pages_dropped, pages_kept, bytes_written;
};

struct powerfs {
    struct node *files;
    struct node control;           /* fh of an open control file */
    struct counters n;
};

static struct powerfs *fs_state(void)
{
    return fuse_get_context()->private_data;
}

static struct timespec now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return t;
}

/* ---- images ------------------------------------------------------------------------------- */

static size_t pages_of(size_t bytes)
{
    return (bytes + PAGE - 1) / PAGE;
}

/* Grows both images and the bitmap to hold `want` bytes; new bytes are zero. */
static int reserve(struct node *f, size_t want)
{
    size_t cap = f->cap ? f->cap : 16 * PAGE;
    if (want > MAX_FILE_BYTES)
        return -EFBIG;
    if (want <= f->cap)
        return 0;
    while (cap < want)
        cap *= 2;
    cap = pages_of(cap) * PAGE;
    unsigned char *cur = realloc(f->cur.data, cap);
    if (cur == NULL)
        return -ENOMEM;
    f->cur.data = cur;
    unsigned char *dur = realloc(f->dur.data, cap);
    if (dur == NULL)
        return -ENOMEM;
    f->dur.data = dur;
    size_t words = (pages_of(cap) + 63) / 64, old_words = (pages_of(f->cap) + 63) / 64;
    uint64_t *dirty = realloc(f->dirty, words * sizeof *dirty);
    if (dirty == NULL)
        return -ENOMEM;
    f->dirty = dirty;
    memset(cur + f->cap, 0, cap - f->cap);
    memset(dur + f->cap, 0, cap - f->cap);
    memset(dirty + old_words, 0, (words - old_words) * sizeof *dirty);
    f->cap = cap;
    return 0;
}

static void mark_dirty(struct node *f, size_t from, size_t to)
{
    if (to <= from)
        return;
    for (size_t p = from / PAGE; p < pages_of(to); p++)
        f->dirty[p / 64] |= 1ull << (p % 64);
}

/* Calls fn for every dirty page and clears the bitmap. */
static void for_each_dirty(struct node *f, void (*fn)(struct node *, size_t, void *), void *arg)
{
    size_t words = (pages_of(f->cap) + 63) / 64;
    for (size_t w = 0; w < words; w++) {
        while (f->dirty[w]) {
            int bit = __builtin_ctzll(f->dirty[w]);
            f->dirty[w] &= f->dirty[w] - 1;
            fn(f, (w * 64 + (size_t)bit) * PAGE, arg);
        }
    }
}

/* New size of the current image: bytes past it read as zero, and the pages in between
 * differ from the durable image until the next sync. */
static int set_size(struct node *f, size_t size)
{
    int rc = reserve(f, size);
    if (rc != 0)
        return rc;
    if (size < f->cur.size) {
        memset(f->cur.data + size, 0, f->cur.size - size);
        mark_dirty(f, size, f->cur.size);
    } else {
        mark_dirty(f, f->cur.size, size);
    }
    f->cur.size = size;
    return 0;
}

static void sync_page(struct node *f, size_t off, void *arg)
{
    struct counters *n = arg;
    memcpy(f->dur.data + off, f->cur.data + off, PAGE);
    n->pages_synced++;
}

static void sync_file(struct powerfs *fs, struct node *f)
{
    for_each_dirty(f, sync_page, &fs->n);
    f->dur.size = f->cur.size;
    fs->n.syncs++;
}

struct cut {
    struct counters *n;
    uint64_t rng;                  /* 0: drop every unsynced page */
};

static uint64_t next_random(uint64_t *s)
{
    /* xorshift64*: enough to pick pages; the seed makes a failing cut repeatable. */
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

static void cut_page(struct node *f, size_t off, void *arg)
{
    struct cut *c = arg;
    if (c->rng != 0 && next_random(&c->rng) >> 63) {
        memcpy(f->dur.data + off, f->cur.data + off, PAGE);
        c->n->pages_kept++;
    } else {
        memcpy(f->cur.data + off, f->dur.data + off, PAGE);
        c->n->pages_dropped++;
    }
}

/* After a cut both images are what the disk holds.  Pages that were not
 * dirty are equal in both already, so only the dirty ones are settled, and
 * only bytes that existed past the new size need zeroing. */
static void cut_file(struct node *f, struct cut *c)
{
    size_t size = f->dur.size;
    size_t end = f->cur.size > f->dur.size ? f->cur.size : f->dur.size;

    if (c->rng != 0 && next_random(&c->rng) >> 63)
        size = f->cur.size;        /* the size update reached the disk */
    for_each_dirty(f, cut_page, c);
    if (size < end) {
        memset(f->cur.data + size, 0, end - size);
        memset(f->dur.data + size, 0, end - size);
    }
    f->cur.size = f->dur.size = size;
}

static void power_cut(struct powerfs *fs, uint64_t seed)
{
    struct cut c = { .n = &fs->n, .rng = seed };
    for (struct node *f = fs->files; f != NULL; f = f->next) {
        if (f->cap != 0)
            cut_file(f, &c);
    }
    fs->n.cuts++;
}

/* ---- names -------------------------------------------------------------------------------- */

static const char *leaf_of(const char *path)
{
    if (path == NULL || path[0] != '/' || path[1] == '\0' || strchr(path + 1, '/') != NULL)
        return NULL;
    return path + 1;
}

static struct node *find(struct powerfs *fs, const char *path)
{
    const char *name = leaf_of(path);
    if (name == NULL)
        return NULL;
    if (strcmp(name, CONTROL_NAME) == 0)
        return &fs->control;
    for (struct node *f = fs->files; f != NULL; f = f->next) {
        if (strcmp(f->name, name) == 0)
            return f;
    }
    return NULL;
}

static struct node *node_of(const char *path, struct fuse_file_info *fi)
{
    if (fi != NULL && fi->fh != 0)
        return (struct node *)(uintptr_t)fi->fh;
    return find(fs_state(), path);
}

static void free_node(struct node *f)
{
    free(f->name);
    free(f->cur.data);
    free(f->dur.data);
    free(f->dirty);
    free(f);
}

static void detach(struct powerfs *fs, struct node *victim)
{
    for (struct node **p = &fs->files; *p != NULL; p = &(*p)->next) {
        if (*p == victim) {
            *p = victim->next;
            break;
        }
    }
    victim->unlinked = true;
    if (victim->opens == 0)
        free_node(victim);
}

/* ---- operations --------------------------------------------------------------------------- */

static int op_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
    memset(st, 0, sizeof *st);
    if (fi == NULL && path != NULL && strcmp(path, "/") == 0) {
        st->st_mode = S_IFDIR | 0700;
        st->st_nlink = 2;
        st->st_uid = getuid();
        st->st_gid = getgid();
        return 0;
    }
    struct node *f = node_of(path, fi);
    if (f == NULL)
        return -ENOENT;
    st->st_mode = f->mode;
    st->st_nlink = f->unlinked ? 0 : 1;
    st->st_uid = f->uid;
    st->st_gid = f->gid;
    st->st_size = (off_t)f->cur.size;
    st->st_blocks = (blkcnt_t)(pages_of(f->cur.size) * (PAGE / 512));
    st->st_blksize = PAGE;
    st->st_atim = f->atime;
    st->st_mtim = f->mtime;
    st->st_ctim = f->ctime;
    return 0;
}

static int op_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
                      struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
    (void)off, (void)fi, (void)flags;
    if (path != NULL && strcmp(path, "/") != 0)
        return -ENOTDIR;
    fill(buf, ".", NULL, 0, 0);
    fill(buf, "..", NULL, 0, 0);
    fill(buf, CONTROL_NAME, NULL, 0, 0);
    for (struct node *f = fs_state()->files; f != NULL; f = f->next)
        fill(buf, f->name, NULL, 0, 0);
    return 0;
}

static void opened(struct node *f, struct fuse_file_info *fi)
{
    f->opens++;
    fi->fh = (uint64_t)(uintptr_t)f;
    /* Every open rereads through us: the kernel's cached pages may predate a cut. */
    fi->keep_cache = 0;
}

static int op_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
    struct powerfs *fs = fs_state();
    const char *name = leaf_of(path);
    if (name == NULL)
        return -EINVAL;
    if (find(fs, path) != NULL)
        return -EEXIST;
    struct node *f = calloc(1, sizeof *f);
    if (f == NULL || (f->name = strdup(name)) == NULL) {
        free(f);
        return -ENOMEM;
    }
    f->mode = S_IFREG | (mode & 07777);
    f->uid = fuse_get_context()->uid;
    f->gid = fuse_get_context()->gid;
    f->atime = f->mtime = f->ctime = now();
    f->next = fs->files;
    fs->files = f;
    opened(f, fi);
    return 0;
}

static int op_open(const char *path, struct fuse_file_info *fi)
{
    struct node *f = find(fs_state(), path);
    if (f == NULL)
        return -ENOENT;
    if (f == &fs_state()->control) {
        fi->fh = (uint64_t)(uintptr_t)f;
        fi->direct_io = 1;
        return 0;
    }
    /* libfuse asks for atomic O_TRUNC: the kernel sends no truncate of its own. */
    if (fi->flags & O_TRUNC) {
        int rc = set_size(f, 0);
        if (rc != 0)
            return rc;
        f->mtime = f->ctime = now();
    }
    opened(f, fi);
    return 0;
}

static int op_release(const char *path, struct fuse_file_info *fi)
{
    struct node *f = node_of(path, fi);
    if (f == NULL || f == &fs_state()->control)
        return 0;
    f->opens--;
    if (f->unlinked && f->opens == 0)
        free_node(f);
    return 0;
}

static int control_read(struct powerfs *fs, char *buf, size_t size, off_t off)
{
    const struct counters *n = &fs->n;
    char reply[512];
    int len = snprintf(reply, sizeof reply,
                       "cuts %llu\nsyncs %llu\npages_synced %llu\npages_dropped %llu\n"
                       "pages_kept %llu\nbytes_written %llu\n",
                       (unsigned long long)n->cuts, (unsigned long long)n->syncs,
                       (unsigned long long)n->pages_synced, (unsigned long long)n->pages_dropped,
                       (unsigned long long)n->pages_kept, (unsigned long long)n->bytes_written);
    if (off >= len)
        return 0;
    size_t k = (size_t)len - (size_t)off < size ? (size_t)len - (size_t)off : size;
    memcpy(buf, reply + off, k);
    return (int)k;
}

/* "cut" or "cut-some SEED" (SEED a positive integer); anything else is EINVAL. */
static int control_write(struct powerfs *fs, const char *buf, size_t size)
{
    char cmd[64];
    unsigned long long seed = 0;
    char extra;
    if (size >= sizeof cmd)
        return -EINVAL;
    memcpy(cmd, buf, size);
    cmd[size] = '\0';
    if (strcmp(cmd, "cut") == 0 || strcmp(cmd, "cut\n") == 0)
        power_cut(fs, 0);
    else if (sscanf(cmd, "cut-some %llu %c", &seed, &extra) == 1 && seed != 0)
        power_cut(fs, seed);
    else
        return -EINVAL;
    return (int)size;
}

static int op_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
    struct powerfs *fs = fs_state();
    struct node *f = node_of(path, fi);
    if (f == NULL)
        return -ENOENT;
    if (f == &fs->control)
        return control_read(fs, buf, size, off);
    if (off < 0 || (size_t)off >= f->cur.size)
        return 0;
    size_t k = f->cur.size - (size_t)off < size ? f->cur.size - (size_t)off : size;
    memcpy(buf, f->cur.data + off, k);
    return (int)k;
}

static int op_write(const char *path, const char *buf, size_t size, off_t off,
                    struct fuse_file_info *fi)
{
    struct powerfs *fs = fs_state();
    struct node *f = node_of(path, fi);
    if (f == NULL)
        return -ENOENT;
    if (f == &fs->control)
        return control_write(fs, buf, size);
    if (size == 0)
        return 0;                  /* POSIX: a zero-length write changes nothing */
    if (off < 0 || size > MAX_FILE_BYTES || (uint64_t)off > MAX_FILE_BYTES - size)
        return -EFBIG;
    size_t end = (size_t)off + size;
    int rc = end > f->cur.size ? set_size(f, end) : 0;
    if (rc != 0)
        return rc;
    memcpy(f->cur.data + off, buf, size);
    mark_dirty(f, (size_t)off, end);
    f->mtime = f->ctime = now();
    fs->n.bytes_written += size;
    return (int)size;
}

static int op_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
    struct node *f = node_of(path, fi);
    if (f == NULL)
        return -ENOENT;
    if (f == &fs_state()->control)
        return 0;
    if (size < 0)
        return -EINVAL;
    int rc = set_size(f, (size_t)size);
    if (rc == 0)
        f->mtime = f->ctime = now();
    return rc;
}

static int op_fallocate(const char *path, int mode, off_t off, off_t len,
                        struct fuse_file_info *fi)
{
    struct node *f = node_of(path, fi);
    if (f == NULL || f == &fs_state()->control)
        return f == NULL ? -ENOENT : -EOPNOTSUPP;
    if (mode != 0)
        return -EOPNOTSUPP;
    if (off < 0 || len <= 0 || (uint64_t)off + (uint64_t)len > MAX_FILE_BYTES)
        return -EFBIG;
    size_t end = (size_t)off + (size_t)len;
    return end > f->cur.size ? set_size(f, end) : 0;
}

static int op_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
    (void)datasync;                /* the size is data here: fdatasync covers it */
    struct node *f = node_of(path, fi);
    if (f == NULL)
        return -ENOENT;
    if (f != &fs_state()->control && f->cap != 0)
        sync_file(fs_state(), f);
    return 0;
}

static int op_unlink(const char *path)
{
    struct powerfs *fs = fs_state();
    struct node *f = find(fs, path);
    if (f == NULL)
        return -ENOENT;
    if (f == &fs->control)
        return -EPERM;
    detach(fs, f);
    return 0;
}

static int op_rename(const char *from, const char *to, unsigned int flags)
{
    struct powerfs *fs = fs_state();
    struct node *f = find(fs, from), *old = find(fs, to);
    const char *name = leaf_of(to);
    if (f == NULL)
        return -ENOENT;
    if (flags != 0)
        return -EINVAL;
    if (name == NULL || f == &fs->control || old == &fs->control)
        return -EPERM;
    if (old == f)
        return 0;
    char *copy = strdup(name);
    if (copy == NULL)
        return -ENOMEM;
    if (old != NULL)
        detach(fs, old);
    free(f->name);
    f->name = copy;
    f->ctime = now();
    return 0;
}

static int op_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
    struct node *f = node_of(path, fi);
    if (f == NULL || f == &fs_state()->control)
        return f == NULL ? -ENOENT : -EPERM;
    f->mode = (f->mode & S_IFMT) | (mode & 07777);
    f->ctime = now();
    return 0;
}

static int op_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
    struct node *f = node_of(path, fi);
    if (f == NULL || f == &fs_state()->control)
        return f == NULL ? -ENOENT : -EPERM;
    if (uid != (uid_t)-1)
        f->uid = uid;
    if (gid != (gid_t)-1)
        f->gid = gid;
    f->ctime = now();
    return 0;
}

static int op_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi)
{
    struct node *f = node_of(path, fi);
    if (f == NULL || f == &fs_state()->control)
        return f == NULL ? -ENOENT : 0;
    struct timespec t = now();
    f->atime = tv == NULL || tv[0].tv_nsec == UTIME_NOW ? t : tv[0];
    f->mtime = tv == NULL || tv[1].tv_nsec == UTIME_NOW ? t : tv[1];
    f->ctime = t;
    return 0;
}

static int op_statfs(const char *path, struct statvfs *st)
{
    (void)path;
    uint64_t used = 0;
    for (struct node *f = fs_state()->files; f != NULL; f = f->next)
        used += pages_of(f->cur.size);
    memset(st, 0, sizeof *st);
    st->f_bsize = st->f_frsize = PAGE;
    st->f_blocks = VOLUME_BYTES / PAGE;
    st->f_bfree = st->f_bavail = st->f_blocks - used;
    st->f_files = 1u << 20;
    st->f_ffree = st->f_favail = st->f_files - 64;
    st->f_namemax = 255;
    return 0;
}

static int op_fsyncdir(const char *path, int datasync, struct fuse_file_info *fi)
{
    (void)path, (void)datasync, (void)fi;
    return 0;                      /* directory entries are durable at once */
}

static void *op_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
    (void)conn;
    /* No caching of names or attributes: after a cut the sizes changed under the kernel. */
    cfg->entry_timeout = 0;
    cfg->attr_timeout = 0;
    cfg->negative_timeout = 0;
    cfg->hard_remove = 1;
    cfg->nullpath_ok = 1;
    cfg->kernel_cache = 0;
    return fuse_get_context()->private_data;
}

static const struct fuse_operations ops = {
    .init = op_init,
    .getattr = op_getattr,
    .readdir = op_readdir,
    .create = op_create,
    .open = op_open,
    .release = op_release,
    .read = op_read,
    .write = op_write,
    .truncate = op_truncate,
    .fallocate = op_fallocate,
    .fsync = op_fsync,
    .fsyncdir = op_fsyncdir,
    .unlink = op_unlink,
    .rename = op_rename,
    .chmod = op_chmod,
    .chown = op_chown,
    .utimens = op_utimens,
    .statfs = op_statfs,
};

int main(int argc, char **argv)
{
    struct powerfs fs = { .control = { .mode = S_IFREG | 0600 } };
    if (argc != 2) {
        fprintf(stderr, "usage: powerfs MOUNTPOINT\n");
        return 2;
    }
    fs.control.uid = getuid();
    fs.control.gid = getgid();
    char *args[] = { argv[0], "-f", "-s", "-o", "fsname=powerfs,subtype=powerfs", argv[1], NULL };
    int rc = fuse_main(6, args, &ops, &fs);
    while (fs.files != NULL) {
        struct node *f = fs.files;
        fs.files = f->next;
        free_node(f);
    }
    return rc;
}
