/*
 * sqlite_pcache.c — owns the page-cache wrapper installed before the first
 * database is opened (sqlite_store.h): SQLite's own page cache, with the
 * truncations that cannot remove a page left out.
 *
 * Why: when a B-tree balance swaps two pages' numbers it parks one page
 * for a moment under the number of the page holding the locking byte
 * (1 GiB / page size + 1), which no real page ever uses.  The default
 * cache remembers that number as its highest key, so at the end of the
 * transaction, when SQLite drops the pages beyond the end of the file, it
 * finds "pages" up to 1 GiB and walks its whole hash table — every cached
 * page, a cache miss each — although there is nothing to drop.  A busy
 * queue balances its B-trees often, and a full 64 MiB cache holds 16,384
 * pages to walk (docs/performance.md).
 *
 * The wrapper keeps, per cache, an upper bound of the page numbers that may
 * be present (every number a page was created under or moved to, except
 * the parking number) and whether a page is parked right now, and passes a
 * truncation on only when one of them reaches the limit.  Everything else
 * is the default cache's, unchanged.
 */
#include "sqlite_store.h"

#include <pthread.h>
#include <stdlib.h>

#include "smqd/log.h"

/* SQLite's default locking-byte offset (sqlite3PendingByte; only test
 * builds move it). */
#define PENDING_BYTE_OFFSET 0x40000000u

struct wrapped_cache {
    sqlite3_pcache *inner;
    unsigned parking_key;      /* the locking byte's page for this page size */
    unsigned max_key;          /* no page above this, the parking key aside */
    bool parked;               /* a page may hold parking_key now */
};

static sqlite3_pcache_methods2 inner_methods;   /* the default cache, set once */
static pthread_once_t install_once = PTHREAD_ONCE_INIT;

static struct wrapped_cache *wrapped(sqlite3_pcache *p)
{
    return (struct wrapped_cache *)p;
}

static void note_key(struct wrapped_cache *c, unsigned key)
{
    if (key == c->parking_key)
        c->parked = true;
    else if (key > c->max_key)
        c->max_key = key;
}

static int w_init(void *arg)
{
    (void)arg;
    return inner_methods.xInit(inner_methods.pArg);
}

static void w_shutdown(void *arg)
{
    (void)arg;
    inner_methods.xShutdown(inner_methods.pArg);
}

static sqlite3_pcache *w_create(int page_size, int extra_size, int purgeable)
{
    struct wrapped_cache *c = calloc(1, sizeof *c);

    if (c == NULL)
        return NULL;
    c->inner = inner_methods.xCreate(page_size, extra_size, purgeable);
    if (c->inner == NULL) {
        free(c);
        return NULL;
    }
    c->parking_key = page_size > 0 ? PENDING_BYTE_OFFSET / (unsigned)page_size + 1 : 0;
    return (sqlite3_pcache *)c;
}

static void w_cachesize(sqlite3_pcache *p, int n_cache)
{
    inner_methods.xCachesize(wrapped(p)->inner, n_cache);
}

static int w_pagecount(sqlite3_pcache *p)
{
    return inner_methods.xPagecount(wrapped(p)->inner);
}

static sqlite3_pcache_page *w_fetch(sqlite3_pcache *p, unsigned key, int create_flag)
{
    struct wrapped_cache *c = wrapped(p);

    if (create_flag != 0)
        note_key(c, key);
    return inner_methods.xFetch(c->inner, key, create_flag);
}

static void w_unpin(sqlite3_pcache *p, sqlite3_pcache_page *page, int discard)
{
    inner_methods.xUnpin(wrapped(p)->inner, page, discard);
}

static void w_rekey(sqlite3_pcache *p, sqlite3_pcache_page *page, unsigned old_key,
                    unsigned new_key)
{
    struct wrapped_cache *c = wrapped(p);

    if (old_key == c->parking_key)
        c->parked = false;
    note_key(c, new_key);
    inner_methods.xRekey(c->inner, page, old_key, new_key);
}

/* Drops every page numbered limit or above: a no-op unless one may be. */
static void w_truncate(sqlite3_pcache *p, unsigned limit)
{
    struct wrapped_cache *c = wrapped(p);

    if (limit > c->max_key && !(c->parked && c->parking_key >= limit))
        return;
    inner_methods.xTruncate(c->inner, limit);
    if (limit > 0 && c->max_key >= limit)
        c->max_key = limit - 1;
    if (c->parking_key >= limit)
        c->parked = false;
}

static void w_destroy(sqlite3_pcache *p)
{
    struct wrapped_cache *c = wrapped(p);

    inner_methods.xDestroy(c->inner);
    free(c);
}

static void w_shrink(sqlite3_pcache *p)
{
    inner_methods.xShrink(wrapped(p)->inner);
}

static const sqlite3_pcache_methods2 wrapper_methods = {
    .iVersion = 1,
    .xInit = w_init,
    .xShutdown = w_shutdown,
    .xCreate = w_create,
    .xCachesize = w_cachesize,
    .xPagecount = w_pagecount,
    .xFetch = w_fetch,
    .xUnpin = w_unpin,
    .xRekey = w_rekey,
    .xTruncate = w_truncate,
    .xDestroy = w_destroy,
    .xShrink = w_shrink,
};

/* Only possible before SQLite initialises: a process that used SQLite
 * before its first store keeps the default cache (correct, only slower). */
static void install(void)
{
    if (sqlite3_config(SQLITE_CONFIG_GETPCACHE2, &inner_methods) != SQLITE_OK ||
        inner_methods.xCreate == NULL) {
        SMQ_DEBUG("store: SQLite's page cache left as it is (already initialised)");
        return;
    }
    if (sqlite3_config(SQLITE_CONFIG_PCACHE2, &wrapper_methods) != SQLITE_OK)
        SMQ_DEBUG("store: SQLite's page cache left as it is (already initialised)");
}

void sqlite_pcache_install(void)
{
    pthread_once(&install_once, install);
}
