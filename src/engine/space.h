/*
 * space.h — the engine's disk space: the storage-full mode and the
 * reclamation of free pages.
 *
 * A full disk (SMQ_E_STORAGE_FULL from the store) frees the store's space
 * reserve, so that receives, deletes and visibility changes (which need WAL
 * space but no new pages) keep working, and refuses what grows the data
 * (SendMessage, CreateQueue) until the reserve can be taken back; that is
 * tried after each cool-down, at the start of a run.  A write that still
 * fails for a full disk after that (another process took the space the
 * reserve gave back), or a full disk without any reserve to release, leaves
 * the reserve spent: from then on nothing claims that receives and deletes
 * are served (space_refusal, the log, the engine's stats), until the
 * reserve is back.  Deleted messages
 * leave free pages inside the database file; between runs they are handed
 * back to the file system in small steps when they are worth it, and while
 * the disk is full whatever their share of the file.
 *
 * Engine thread only.  Depends on the store and a clock, nothing else of
 * the engine.
 */
#ifndef SMQD_SPACE_H
#define SMQD_SPACE_H

#include <stdbool.h>
#include <stdint.h>

#include "smqd/clock.h"
#include "smqd/store.h"

struct space {
    struct smq_store *store;
    const struct smq_clock *clock;
    bool full;                       /* refusing what grows the data */
    bool reserve_spent;              /* full, and no released reserve left for the deletes */
    uint64_t reserve_margin;         /* free bytes needed beside the reserve to retake it */
    uint64_t full_until_mono;        /* end of the current cool-down */
    uint64_t full_retries;           /* failed attempts to retake the reserve, for the log */
    /* reclamation */
    uint64_t db_pages, free_pages, page_size;   /* the file, as of the last look */
    uint64_t vacuumed_pages;         /* pages given back to the file system */
    uint64_t next_reclaim_mono;      /* next look at the free pages */
    bool reclaim_due;                /* messages were deleted since that look */
};

/* reserve_missing: the reserve could not be made at start, so the mode
 * starts on (and is left at the first run that can retake it). */
void space_init(struct space *s, struct smq_store *store, const struct smq_clock *clock,
                uint64_t reserve_margin, bool reserve_missing);

/* The store reported a full disk: enter the mode (or restart its cool-down);
 * a second report while in it means the released reserve is spent. */
void space_full(struct space *s);
/* The text a request refused by the mode is answered with (errors.h): what
 * still works, as far as it is true. */
const char *space_refusal(const struct space *s);
/* At the start of a run: after a cool-down, try to take the reserve back,
 * and only then accept what grows the data again. */
void space_recheck(struct space *s, uint64_t now_mono);

/* Rows were deleted: look at the free pages at the next step. */
void space_rows_freed(struct space *s);
/* Re-reads the file's page counts. */
void space_refresh(struct space *s);
/* One reclamation step, between runs and outside a transaction; does
 * something at most every few seconds (every 100 ms while reclaiming). */
void space_reclaim(struct space *s, uint64_t now_mono);
/* Milliseconds until space_reclaim has something to do, UINT64_MAX if nothing. */
uint64_t space_reclaim_timeout_ms(const struct space *s, uint64_t now_mono);

#endif
