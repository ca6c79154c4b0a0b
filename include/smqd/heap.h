/*
 * heap.h — an intrusive binary min-heap.
 *
 * The node lives inside the owner (a message), so insert and remove never
 * allocate and cannot fail.  Shape is kept complete by walking the path
 * encoded in the element count's bits (as libuv's heap-inl.h does), so every
 * operation is O(log n).  The order is given by a caller's "less" function;
 * ties must be broken by the caller (e.g. by a sequence number) so that the
 * order is total and deterministic.
 */
#ifndef SMQD_HEAP_H
#define SMQD_HEAP_H

#include <stddef.h>

struct heap_node {
    struct heap_node *left, *right, *parent;
};

typedef int (*heap_less_fn)(const struct heap_node *a, const struct heap_node *b);

struct heap {
    struct heap_node *min;
    size_t count;
    heap_less_fn less;
};

void heap_init(struct heap *h, heap_less_fn less);
void heap_insert(struct heap *h, struct heap_node *n);
void heap_remove(struct heap *h, struct heap_node *n);
/* Calls fn once for every node, in no particular order; fn must not change
 * the heap.  O(n), recursion depth O(log n). */
void heap_foreach(const struct heap *h, void (*fn)(struct heap_node *n, void *arg), void *arg);
static inline struct heap_node *heap_min(const struct heap *h) { return h->min; }
static inline size_t heap_count(const struct heap *h) { return h->count; }

#endif
