/*
 * listing.h — one page of a listing in name order (ListQueue, ListTopic,
 * ListSubscriptionByTopic: docs/protocol.md §7.5, §13.4.5, §13.6.5): the
 * names from the later of prefix and marker on that start with prefix, the
 * ones the key's grants hide skipped one grant range at a time (so a key's
 * list costs its own names and patterns, not every name in the range), at
 * most limit of them, and the next marker when more remain.
 */
#ifndef SMQD_LISTING_H
#define SMQD_LISTING_H

#include <stddef.h>

#include "smqd/grant.h"

/* A sorted array of named things, seen through two functions. */
struct listing_set {
    const void *set;
    size_t n;
    const char *(*name_at)(const void *set, size_t i);
    size_t (*lower_bound)(const void *set, const char *name);   /* first index >= name */
};

struct listing_page {
    const char *prefix, *marker;
    size_t limit;
    const struct grant_set *visible;     /* names the key may list; NULL = every name */
    char *next_marker;                   /* out: the next name, "" when no more */
    size_t next_marker_size;
};

/* Calls take(arg, i) for the index of each name of the page, in order;
 * returns how many. */
size_t listing_walk(const struct listing_set *s, const struct listing_page *p,
                    void (*take)(void *arg, size_t i), void *arg);

#endif
