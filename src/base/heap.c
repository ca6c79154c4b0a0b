/*
 * heap.c — owns the intrusive binary min-heap (see heap.h).
 *
 * The path from the root to slot k (1-based) is given by the bits of k below
 * its highest set bit, read from the most significant: 0 = left, 1 = right.
 */
#include "smqd/heap.h"

void heap_init(struct heap *h, heap_less_fn less)
{
    h->min = NULL;
    h->count = 0;
    h->less = less;
}

/* Swaps parent p with its child c, fixing every link around them. */
static void swap_with_child(struct heap *h, struct heap_node *p, struct heap_node *c)
{
    struct heap_node *sibling;
    struct heap_node tmp = *p;

    p->left = c->left;
    p->right = c->right;
    p->parent = c;
    if (tmp.left == c) {
        c->left = p;
        c->right = tmp.right;
        sibling = tmp.right;
    } else {
        c->right = p;
        c->left = tmp.left;
        sibling = tmp.left;
    }
    c->parent = tmp.parent;
    if (sibling != NULL)
        sibling->parent = c;
    if (p->left != NULL)
        p->left->parent = p;
    if (p->right != NULL)
        p->right->parent = p;
    if (c->parent == NULL)
        h->min = c;
    else if (c->parent->left == p)
        c->parent->left = c;
    else
        c->parent->right = c;
}

/* Returns the link that holds (or will hold) the node at 1-based slot k,
 * and the node that is (or will be) its parent. */
static struct heap_node **slot_link(struct heap *h, size_t k, struct heap_node **parent)
{
    struct heap_node **link = &h->min;
    size_t path = 0, depth = 0;

    *parent = NULL;
    for (; k >= 2; k /= 2, depth++)
        path = (path << 1) | (k & 1);
    while (depth-- > 0) {
        *parent = *link;
        link = (path & 1) ? &(*link)->right : &(*link)->left;
        path >>= 1;
    }
    return link;
}

static void sift_up(struct heap *h, struct heap_node *n)
{
    while (n->parent != NULL && h->less(n, n->parent))
        swap_with_child(h, n->parent, n);
}

static void sift_down(struct heap *h, struct heap_node *n)
{
    for (;;) {
        struct heap_node *smallest = n;
        if (n->left != NULL && h->less(n->left, smallest))
            smallest = n->left;
        if (n->right != NULL && h->less(n->right, smallest))
            smallest = n->right;
        if (smallest == n)
            return;
        swap_with_child(h, n, smallest);
    }
}

void heap_insert(struct heap *h, struct heap_node *n)
{
    struct heap_node *parent;
    struct heap_node **link = slot_link(h, h->count + 1, &parent);

    n->left = n->right = NULL;
    n->parent = parent;
    *link = n;
    h->count++;
    sift_up(h, n);
}

void heap_remove(struct heap *h, struct heap_node *n)
{
    struct heap_node *parent;
    struct heap_node **link = slot_link(h, h->count, &parent);
    struct heap_node *last = *link;

    *link = NULL;           /* detach the last node; it replaces n below */
    h->count--;
    if (last == n) {
        if (h->count == 0)
            h->min = NULL;
        return;
    }
    last->left = n->left;
    last->right = n->right;
    last->parent = n->parent;
    if (last->left != NULL)
        last->left->parent = last;
    if (last->right != NULL)
        last->right->parent = last;
    if (n->parent == NULL)
        h->min = last;
    else if (n->parent->left == n)
        n->parent->left = last;
    else
        n->parent->right = last;
    sift_down(h, last);
    sift_up(h, last);
}

static void visit(struct heap_node *n, void (*fn)(struct heap_node *n, void *arg), void *arg)
{
    if (n == NULL)
        return;
    visit(n->left, fn, arg);
    visit(n->right, fn, arg);
    fn(n, arg);
}

void heap_foreach(const struct heap *h, void (*fn)(struct heap_node *n, void *arg), void *arg)
{
    visit(h->min, fn, arg);
}
