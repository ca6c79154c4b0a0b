/*
 * test_heap.c — unit tests for heap.c, the intrusive binary min-heap.
 *
 * Every operation is checked against a reference (a sorted array of the
 * items in the heap) and followed by a full walk of the tree that checks
 * the heap property (parent <= children), the parent links, the complete
 * shape (slots 1..count all filled, nothing beyond) and heap_count.
 * Randomized runs use a fixed seed; keys come from a small range so ties are
 * common, and ties are broken by a sequence number as heap.h requires.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "smqd/heap.h"

#define MAX_HEAP 5000          /* the largest heap a test builds */
#define MAX_ITEMS 8000         /* items handed out by one test (removed ones are not reused) */

struct item {
    struct heap_node node;
    int key;
    uint64_t seq;
    bool in_heap;
    unsigned visited;        /* walk stamp of the last check that saw it */
    unsigned foreach_hits;   /* calls from heap_foreach */
};

#define ITEM_OF(n) ((struct item *)((char *)(n) - offsetof(struct item, node)))

static int item_less(const struct heap_node *a, const struct heap_node *b)
{
    const struct item *x = ITEM_OF(a), *y = ITEM_OF(b);

    if (x->key != y->key)
        return x->key < y->key;
    return x->seq < y->seq;
}

/* ---- deterministic random numbers ------------------------------------------ */

static uint64_t rng_state;

static void rng_seed(uint64_t seed)
{
    rng_state = seed ? seed : 1;
}

static uint64_t rng_next(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static size_t rng_below(size_t n)
{
    return (size_t)(rng_next() % n);
}

/* ---- fixture: the heap, the items and the sorted reference ---------------- */

struct fixture {
    struct heap heap;
    struct item items[MAX_ITEMS];
    size_t n_items;                   /* items handed out so far */
    struct item *sorted[MAX_ITEMS];   /* the items in the heap, ascending */
    size_t n_sorted;
    uint64_t next_seq;
    unsigned stamp;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);

    if (f == NULL)
        return -1;
    heap_init(&f->heap, item_less);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    free(*state);
    return 0;
}

static bool item_before(const struct item *a, const struct item *b)
{
    return item_less(&a->node, &b->node) != 0;
}

static size_t sorted_position(const struct fixture *f, const struct item *it)
{
    size_t lo = 0, hi = f->n_sorted;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (item_before(f->sorted[mid], it))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void ref_insert(struct fixture *f, struct item *it)
{
    size_t pos = sorted_position(f, it);

    memmove(&f->sorted[pos + 1], &f->sorted[pos], (f->n_sorted - pos) * sizeof f->sorted[0]);
    f->sorted[pos] = it;
    f->n_sorted++;
}

static void ref_remove(struct fixture *f, struct item *it)
{
    size_t pos = sorted_position(f, it);

    assert_true(pos < f->n_sorted);
    assert_ptr_equal(f->sorted[pos], it);
    memmove(&f->sorted[pos], &f->sorted[pos + 1], (f->n_sorted - pos - 1) * sizeof f->sorted[0]);
    f->n_sorted--;
}

/* ---- the checker ------------------------------------------------------------------ */

/* Walks the subtree at 1-based slot k; returns the number of nodes. */
static size_t check_subtree(struct fixture *f, const struct heap_node *n,
                            const struct heap_node *parent, size_t k)
{
    struct item *it;
    size_t count = 1;

    assert_ptr_equal(n->parent, parent);
    assert_true(k <= f->heap.count);              /* complete shape: no slot past count */
    it = ITEM_OF(n);
    assert_true(it >= f->items && it < f->items + f->n_items);
    assert_true(it->in_heap);
    assert_int_not_equal(it->visited, f->stamp);  /* each node reached once */
    it->visited = f->stamp;
    if (parent != NULL)
        assert_false(item_less(n, parent));
    if (n->left != NULL)
        count += check_subtree(f, n->left, n, 2 * k);
    else
        assert_null(n->right);                    /* complete: no right without left */
    if (n->right != NULL)
        count += check_subtree(f, n->right, n, 2 * k + 1);
    return count;
}

static void check_heap(struct fixture *f)
{
    size_t seen = 0;

    f->stamp++;
    assert_int_equal(heap_count(&f->heap), f->n_sorted);
    if (f->heap.min != NULL)
        seen = check_subtree(f, f->heap.min, NULL, 1);
    /* Slots 1..count, each at most once and none past count, all filled. */
    assert_int_equal(seen, f->heap.count);
    if (f->n_sorted == 0)
        assert_null(heap_min(&f->heap));
    else
        assert_ptr_equal(heap_min(&f->heap), &f->sorted[0]->node);
}

/* ---- operations on heap and reference together --------------------------------- */

static struct item *new_item(struct fixture *f, int key)
{
    struct item *it;

    assert_true(f->n_items < MAX_ITEMS);
    it = &f->items[f->n_items++];
    memset(it, 0, sizeof *it);
    it->key = key;
    it->seq = f->next_seq++;
    return it;
}

static void do_insert(struct fixture *f, struct item *it)
{
    assert_false(it->in_heap);
    heap_insert(&f->heap, &it->node);
    it->in_heap = true;
    ref_insert(f, it);
    check_heap(f);
}

static void do_remove(struct fixture *f, struct item *it)
{
    assert_true(it->in_heap);
    heap_remove(&f->heap, &it->node);
    it->in_heap = false;
    ref_remove(f, it);
    check_heap(f);
}

static struct item *do_pop_min(struct fixture *f)
{
    struct heap_node *min = heap_min(&f->heap);
    struct item *it;

    assert_non_null(min);
    it = ITEM_OF(min);
    assert_ptr_equal(it, f->sorted[0]);
    do_remove(f, it);
    return it;
}

/* The node at 1-based slot k, found by the path in k's bits. */
static struct heap_node *node_at(const struct heap *h, size_t k)
{
    struct heap_node *n = h->min;
    int top = 0;

    while ((k >> top) > 1)
        top++;
    for (int bit = top - 1; bit >= 0 && n != NULL; bit--)
        n = ((k >> bit) & 1) ? n->right : n->left;
    return n;
}

static void fill_keys(struct fixture *f, size_t n, int key_range)
{
    for (size_t i = 0; i < n; i++)
        do_insert(f, new_item(f, (int)rng_below((size_t)key_range)));
}

/* ---- tests ------------------------------------------------------------------------------ */

static void test_heap_empty(void **state)
{
    struct fixture *f = *state;

    check_heap(f);
    assert_null(heap_min(&f->heap));
    assert_int_equal(heap_count(&f->heap), 0);
}

static void test_heap_single_insert_remove(void **state)
{
    struct fixture *f = *state;
    struct item *it = new_item(f, 5);

    do_insert(f, it);
    assert_int_equal(heap_count(&f->heap), 1);
    assert_ptr_equal(heap_min(&f->heap), &it->node);
    assert_null(it->node.parent);
    do_remove(f, it);
    assert_null(heap_min(&f->heap));
    assert_int_equal(heap_count(&f->heap), 0);
    /* Usable again after becoming empty. */
    do_insert(f, it);
    assert_ptr_equal(heap_min(&f->heap), &it->node);
}

static void test_heap_ascending_descending_inserts(void **state)
{
    struct fixture *f = *state;

    for (int k = 0; k < 300; k++)
        do_insert(f, new_item(f, k));
    for (int k = 300; k > 0; k--)
        do_insert(f, new_item(f, -k));
    for (int k = 300; k > 0; k--)
        assert_int_equal(do_pop_min(f)->key, -k);
    for (int k = 0; k < 300; k++)
        assert_int_equal(do_pop_min(f)->key, k);
    assert_int_equal(heap_count(&f->heap), 0);
}

static void test_heap_ties_broken_by_seq(void **state)
{
    struct fixture *f = *state;
    uint64_t prev;

    for (int i = 0; i < 200; i++)
        do_insert(f, new_item(f, 7));
    prev = do_pop_min(f)->seq;
    assert_int_equal(prev, 0);
    while (heap_count(&f->heap) > 0) {
        uint64_t s = do_pop_min(f)->seq;
        assert_int_equal(s, prev + 1);
        prev = s;
    }
}

static void test_heap_remove_min(void **state)
{
    struct fixture *f = *state;

    rng_seed(11);
    fill_keys(f, 100, 1000);
    for (int i = 0; i < 10; i++) {
        struct item *min = ITEM_OF(heap_min(&f->heap));
        do_remove(f, min);
        assert_false(min->in_heap);
    }
    assert_int_equal(heap_count(&f->heap), 90);
}

static void test_heap_remove_last(void **state)
{
    struct fixture *f = *state;

    rng_seed(12);
    fill_keys(f, 100, 1000);
    while (heap_count(&f->heap) > 0) {
        struct heap_node *last = node_at(&f->heap, heap_count(&f->heap));
        assert_non_null(last);
        assert_null(last->left);
        assert_null(last->right);
        do_remove(f, ITEM_OF(last));
    }
}

static void test_heap_remove_inner(void **state)
{
    struct fixture *f = *state;
    size_t slots[] = {2, 3, 5, 6, 7, 12, 20};

    rng_seed(13);
    fill_keys(f, 63, 50);
    for (size_t i = 0; i < sizeof slots / sizeof slots[0]; i++) {
        struct heap_node *n = node_at(&f->heap, slots[i]);
        assert_non_null(n);
        assert_non_null(n->left);             /* really an inner node */
        do_remove(f, ITEM_OF(n));
    }
    assert_int_equal(heap_count(&f->heap), 63 - 7);
}

static void test_heap_remove_parent_of_last(void **state)
{
    struct fixture *f = *state;

    rng_seed(14);
    fill_keys(f, 40, 100);
    /* The last node is the removed node's own child: the replacement must
     * not end up pointing at itself. */
    while (heap_count(&f->heap) > 1) {
        size_t last = heap_count(&f->heap);
        do_remove(f, ITEM_OF(node_at(&f->heap, last / 2)));
    }
}

static void test_heap_remove_sibling_of_last(void **state)
{
    struct fixture *f = *state;

    rng_seed(15);
    fill_keys(f, 41, 100);
    /* Slot count-1: the last node's sibling when count is odd, else the
     * leaf just before it under another parent. */
    while (heap_count(&f->heap) >= 2) {
        struct heap_node *n = node_at(&f->heap, heap_count(&f->heap) - 1);
        assert_non_null(n);
        do_remove(f, ITEM_OF(n));
    }
}

static void test_heap_remove_replacement_sifts_up(void **state)
{
    struct fixture *f = *state;

    /* Removing a node whose replacement (the last node, from the other
     * subtree) is smaller than the removed node's parent: it must sift up. */
    struct item *a = new_item(f, 0), *b = new_item(f, 10), *c = new_item(f, 1);
    struct item *d = new_item(f, 11), *e = new_item(f, 12), *g = new_item(f, 2);
    struct item *h = new_item(f, 3);

    do_insert(f, a);
    do_insert(f, b);
    do_insert(f, c);
    do_insert(f, d);
    do_insert(f, e);
    do_insert(f, g);
    do_insert(f, h);
    assert_ptr_equal(node_at(&f->heap, 2), &b->node);
    assert_ptr_equal(node_at(&f->heap, 4), &d->node);
    assert_ptr_equal(node_at(&f->heap, 7), &h->node);
    do_remove(f, d);                          /* h (3) lands under b (10), then rises */
    assert_ptr_equal(node_at(&f->heap, 2), &h->node);
    assert_ptr_equal(node_at(&f->heap, 4), &b->node);
    assert_ptr_equal(node_at(&f->heap, 5), &e->node);
    assert_ptr_equal(node_at(&f->heap, 3), &c->node);
    do_remove(f, a);
    assert_ptr_equal(heap_min(&f->heap), &c->node);
}

/* Grows to `size`, churns with random insert/remove/pop, then drains. */
static void random_run(struct fixture *f, size_t size, uint64_t seed)
{
    size_t ops = size < 200 ? 400 : size;

    rng_seed(seed);
    fill_keys(f, size, (int)(size / 4 + 2));
    for (size_t i = 0; i < ops; i++) {
        size_t choice = rng_below(3);
        if (choice == 0 && f->n_items < MAX_ITEMS && f->n_sorted < MAX_HEAP) {
            do_insert(f, new_item(f, (int)rng_below(size / 4 + 2)));
        } else if (choice == 1 && f->n_sorted > 0) {
            do_remove(f, f->sorted[rng_below(f->n_sorted)]);
        } else if (f->n_sorted > 0) {
            do_pop_min(f);
        } else if (f->n_items < MAX_ITEMS) {
            do_insert(f, new_item(f, 0));
        }
    }
    while (f->n_sorted > 0) {
        struct item *prev = f->sorted[0], *it = do_pop_min(f);
        assert_ptr_equal(prev, it);
    }
    assert_null(heap_min(&f->heap));
    assert_int_equal(heap_count(&f->heap), 0);
}

static void reset_fixture(struct fixture *f)
{
    memset(f, 0, sizeof *f);
    heap_init(&f->heap, item_less);
}

static void test_heap_random_small_sizes(void **state)
{
    struct fixture *f = *state;

    for (size_t size = 0; size <= 40; size++) {
        reset_fixture(f);
        random_run(f, size, 1000 + size);
    }
}

static void test_heap_random_medium(void **state)
{
    struct fixture *f = *state;
    size_t sizes[] = {63, 64, 65, 127, 128, 255, 511, 1000};

    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        reset_fixture(f);
        random_run(f, sizes[i], 77 + i);
    }
}

static void test_heap_random_5000(void **state)
{
    struct fixture *f = *state;

    random_run(f, MAX_HEAP, 4242);
}

static void test_heap_fill_to_5000_and_drain_sorted(void **state)
{
    struct fixture *f = *state;
    struct item *prev = NULL;

    rng_seed(5000);
    fill_keys(f, MAX_HEAP, 700);
    assert_int_equal(heap_count(&f->heap), MAX_HEAP);
    while (heap_count(&f->heap) > 0) {
        struct item *it = do_pop_min(f);
        if (prev != NULL)
            assert_true(item_before(prev, it));
        prev = it;
    }
}

static void count_visit(struct heap_node *n, void *arg)
{
    struct item *it = ITEM_OF(n);

    (void)arg;
    assert_true(it->in_heap);
    it->foreach_hits++;
}

/* heap_foreach reaches every node once, after removals of the minimum and
 * of interior nodes (what expiry and moves do) too. */
static void test_heap_foreach_visits_each_once(void **state)
{
    struct fixture *f = *state;
    size_t n = 0;

    heap_foreach(&f->heap, count_visit, NULL);        /* empty: no call */
    rng_seed(77);
    fill_keys(f, 1000, 50);
    for (int i = 0; i < 200; i++)
        do_pop_min(f);
    for (size_t removed = 0, i = 0; removed < 100 && i < MAX_ITEMS; i += 7) {
        if (f->items[i].in_heap) {
            do_remove(f, &f->items[i]);
            removed++;
        }
    }
    for (size_t i = 0; i < MAX_ITEMS; i++)
        f->items[i].foreach_hits = 0;
    heap_foreach(&f->heap, count_visit, NULL);
    for (size_t i = 0; i < MAX_ITEMS; i++) {
        if (f->items[i].in_heap) {
            assert_int_equal(f->items[i].foreach_hits, 1);
            n++;
        } else {
            assert_int_equal(f->items[i].foreach_hits, 0);
        }
    }
    assert_int_equal(n, 700);
    assert_int_equal(heap_count(&f->heap), 700);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_heap_empty, setup, teardown),
        cmocka_unit_test_setup_teardown(test_heap_foreach_visits_each_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_heap_single_insert_remove, setup, teardown),
        cmocka_unit_test_setup_teardown(test_heap_ascending_descending_inserts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_heap_ties_broken_by_seq, setup, teardown),
        cmocka_unit_test_setup_teardown(test_heap_remove_min, setup, teardown),
        cmocka_unit_test_setup_teardown(test_heap_remove_last, setup, teardown),
        cmocka_unit_test_setup_teardown(test_heap_remove_inner, setup, teardown),
        cmocka_unit_test_setup_teardown(test_heap_remove_parent_of_last, setup, teardown),
        cmocka_unit_test_setup_teardown(test_heap_remove_sibling_of_last, setup, teardown),
        cmocka_unit_test_setup_teardown(test_heap_remove_replacement_sifts_up, setup, teardown),
        cmocka_unit_test_setup_teardown(test_heap_random_small_sizes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_heap_random_medium, setup, teardown),
        cmocka_unit_test_setup_teardown(test_heap_random_5000, setup, teardown),
        cmocka_unit_test_setup_teardown(test_heap_fill_to_5000_and_drain_sorted, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
