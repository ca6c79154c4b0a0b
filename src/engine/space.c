/*
 * space.c — owns the storage-full mode and the reclamation of free pages
 * (space.h).
 */
#include "space.h"

#include "smqd/errors.h"
#include "smqd/log.h"

#define FULL_COOLDOWN_MS 5000       /* between attempts to retake the disk reserve */
#define FULL_RETRY_LOG_EVERY 60     /* failed attempts per warning (5 minutes) */
#define MAINTAIN_INTERVAL_MS 5000   /* how often the free pages are looked at */
#define RECLAIM_STEP_MS 100         /* pause between steps while reclaiming */
#define RECLAIM_STEP_PAGES 1024     /* pages handed back per step (one transaction) */
#define RECLAIM_MIN_FREE_PAGES 1024 /* below this, free pages are left for reuse */

/* Free pages already in the file count too: hand them back at the next
 * step rather than after the next delete. */
static void reclaim_now(struct space *s)
{
    s->reclaim_due = true;
    s->next_reclaim_mono = 0;
}

void space_init(struct space *s, struct smq_store *store, const struct smq_clock *clock,
                uint64_t reserve_margin, bool reserve_missing)
{
    /* Without its reserve there is none to release for the deletes. */
    *s = (struct space){.store = store, .clock = clock, .reserve_margin = reserve_margin,
                        .full = reserve_missing,    /* retried at the first run */
                        .reserve_spent = reserve_missing};
    if (s->full)
        reclaim_now(s);
}

void space_full(struct space *s)
{
    if (!s->full && store_reserve_bytes(s->store) > 0) {
        SMQ_ERROR("engine: storage is full; refusing new messages until the disk reserve "
                  "can be taken back (checked every %d s); receives and deletes are served "
                  "while the released reserve lasts", FULL_COOLDOWN_MS / 1000);
        store_reserve_release(s->store);
        reclaim_now(s);
    } else if (!s->full) {
        SMQ_ERROR("engine: storage is full and there is no disk reserve to release; refusing "
                  "new messages, and receives and deletes may fail too, until space is freed "
                  "(checked every %d s)", FULL_COOLDOWN_MS / 1000);
        s->reserve_spent = true;
        reclaim_now(s);
    } else if (!s->reserve_spent) {
        /* Sends are refused without a write: this one was a receive, a
         * delete or upkeep, on the space the released reserve left. */
        SMQ_ERROR("engine: storage is still full after the disk reserve was released: the "
                  "reserve is spent; receives and deletes fail too until space is freed on "
                  "the database's file system");
        s->reserve_spent = true;
    }
    s->full = true;
    s->full_until_mono = clock_mono_ms(s->clock) + FULL_COOLDOWN_MS;
}

const char *space_refusal(const struct space *s)
{
    return s->reserve_spent ? SMQ_STORAGE_FULL_SPENT_REFUSAL : SMQ_STORAGE_FULL_REFUSAL;
}

/* The reserve is taken back only when as much again stays free beside it;
 * until then sends stay refused, since they would use up the space the
 * released reserve left for deletes (and a second full disk would find no
 * reserve to release).  The reserve's size follows the volume, so a
 * drained volume always has that much free (volume.h). */
void space_recheck(struct space *s, uint64_t now_mono)
{
    int rc;

    if (!s->full || now_mono < s->full_until_mono)
        return;
    rc = store_reserve_restore(s->store, s->reserve_margin);
    if (rc == SMQ_E_STORAGE_FULL) {
        if (s->full_retries++ % FULL_RETRY_LOG_EVERY == 0)
            SMQ_WARN("engine: still no room to take the disk reserve back; new messages stay "
                     "refused (free space on the database's file system)");
        s->full_until_mono = now_mono + FULL_COOLDOWN_MS;   /* next attempt */
        return;
    }
    /* There is room; a reserve that cannot be created for another reason
     * (the store logged it) must not keep sends refused for ever. */
    s->full = false;
    s->reserve_spent = false;
    s->full_retries = 0;
    SMQ_WARN("engine: %s; accepting new messages again",
             rc == 0 ? "the disk reserve is back" : "there is room again (without a reserve)");
}

void space_rows_freed(struct space *s)
{
    s->reclaim_due = true;
}

void space_refresh(struct space *s)
{
    struct store_file_stats fs;

    if (store_file_stats(s->store, &fs) == 0) {
        s->db_pages = fs.pages;
        s->free_pages = fs.free_pages;
        s->page_size = fs.page_size;
    }
}

/* Worth a step: enough free pages, and a tenth of the file, so that the
 * pages a steady workload frees and reuses are left alone.  While the disk
 * is full any free page is worth giving back: sends wait for the space to
 * retake the reserve, and deletes only free pages inside the file. */
static bool worth_reclaiming(const struct space *s)
{
    if (s->full)
        return s->free_pages > 0;
    return s->free_pages >= RECLAIM_MIN_FREE_PAGES && s->free_pages * 10 >= s->db_pages;
}

void space_reclaim(struct space *s, uint64_t now_mono)
{
    uint64_t freed = 0;

    if (!s->reclaim_due || now_mono < s->next_reclaim_mono || store_in_txn(s->store))
        return;
    space_refresh(s);
    /* While the disk is full the pages deletes free are wanted back soon. */
    s->next_reclaim_mono = now_mono + (s->full ? RECLAIM_STEP_MS : MAINTAIN_INTERVAL_MS);
    if (!worth_reclaiming(s) || store_reclaim(s->store, RECLAIM_STEP_PAGES, &freed) != 0
        || freed == 0) {
        s->reclaim_due = false;      /* until the next delete */
        return;
    }
    s->vacuumed_pages += freed;
    s->free_pages -= freed < s->free_pages ? freed : s->free_pages;
    s->db_pages -= freed < s->db_pages ? freed : s->db_pages;
    s->next_reclaim_mono = now_mono + RECLAIM_STEP_MS;   /* keep going while worth it */
    SMQ_DEBUG("engine: returned %llu free pages to the file system", (unsigned long long)freed);
}

uint64_t space_reclaim_timeout_ms(const struct space *s, uint64_t now_mono)
{
    /* With a commit deferred (txn.h) space_reclaim would not run, and a due
     * deadline would wake the engine thread over and over until it is
     * committed; the commit's own wake-up comes first anyway. */
    if (!s->reclaim_due || store_in_txn(s->store))
        return UINT64_MAX;
    return s->next_reclaim_mono > now_mono ? s->next_reclaim_mono - now_mono : 0;
}
