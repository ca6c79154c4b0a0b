/*
 * lg_hist.h — smqd-loadgen's latency histogram: log-linear buckets (64 per
 * power of two, under 1.6 % relative error), fixed size, no allocation, so
 * recording a request costs a few instructions.  Values are microseconds.
 */
#ifndef LG_HIST_H
#define LG_HIST_H

#include <stdint.h>

#define LG_HIST_SUB_BITS 6
#define LG_HIST_SUB (1u << LG_HIST_SUB_BITS)
#define LG_HIST_MAX_EXP 40                          /* 2^40 us, about 12 days */
#define LG_HIST_BUCKETS (LG_HIST_SUB * (LG_HIST_MAX_EXP - LG_HIST_SUB_BITS + 2))

struct lg_hist {
    uint64_t count;
    uint64_t sum;
    uint64_t min;
    uint64_t max;
    uint64_t b[LG_HIST_BUCKETS];
};

void lg_hist_reset(struct lg_hist *h);
void lg_hist_add(struct lg_hist *h, uint64_t v);
void lg_hist_merge(struct lg_hist *dst, const struct lg_hist *src);
/* The value at quantile q (0..1): the upper edge of the bucket it falls in,
 * capped at the exact maximum; 0 when empty. */
uint64_t lg_hist_quantile(const struct lg_hist *h, double q);

#endif
