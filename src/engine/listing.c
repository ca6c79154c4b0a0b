/*
 * listing.c — owns paging through a sorted array of names (listing.h),
 * shared by the queue, topic and subscription listings.
 */
#include "listing.h"

#include <stdio.h>
#include <string.h>

size_t listing_walk(const struct listing_set *s, const struct listing_page *p,
                    void (*take)(void *arg, size_t i), void *arg)
{
    const char *from = strcmp(p->marker, p->prefix) > 0 ? p->marker : p->prefix;
    size_t prefix_len = strlen(p->prefix), i = s->lower_bound(s->set, from), taken = 0;

    p->next_marker[0] = '\0';
    while (i < s->n) {
        const char *name = s->name_at(s->set, i), *next;
        if (strncmp(name, p->prefix, prefix_len) != 0)
            break;
        if (!grant_allows(p->visible, name, GRANT_LIST)) {
            if ((next = grant_next_start(p->visible, GRANT_LIST, name)) == NULL)
                break;
            i = s->lower_bound(s->set, next);
            continue;
        }
        if (taken == p->limit) {
            snprintf(p->next_marker, p->next_marker_size, "%s", name);
            break;
        }
        take(arg, i++);
        taken++;
    }
    return taken;
}
