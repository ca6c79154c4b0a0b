/*
 * lg_hist.c — the log-linear latency histogram of smqd-loadgen: bucket
 * index arithmetic, merge and quantiles (see lg_hist.h).
 */
#include "lg_hist.h"

#include <string.h>

void lg_hist_reset(struct lg_hist *h)
{
    memset(h, 0, sizeof *h);
}

static unsigned bucket_of(uint64_t v)
{
    if (v < LG_HIST_SUB)
        return (unsigned)v;
    unsigned e = 63u - (unsigned)__builtin_clzll(v);      /* v in [2^e, 2^(e+1)) */
    if (e > LG_HIST_MAX_EXP)
        return LG_HIST_BUCKETS - 1;
    unsigned sub = (unsigned)(v >> (e - LG_HIST_SUB_BITS)) - LG_HIST_SUB;
    return LG_HIST_SUB * (e - LG_HIST_SUB_BITS + 1) + sub;
}

/* The largest value that falls into bucket i. */
static uint64_t bucket_top(unsigned i)
{
    if (i < LG_HIST_SUB)
        return i;
    unsigned e = i / LG_HIST_SUB + LG_HIST_SUB_BITS - 1;
    uint64_t sub = i % LG_HIST_SUB + LG_HIST_SUB;
    return ((sub + 1) << (e - LG_HIST_SUB_BITS)) - 1;
}

void lg_hist_add(struct lg_hist *h, uint64_t v)
{
    if (h->count == 0 || v < h->min)
        h->min = v;
    if (v > h->max)
        h->max = v;
    h->count++;
    h->sum += v;
    h->b[bucket_of(v)]++;
}

void lg_hist_merge(struct lg_hist *dst, const struct lg_hist *src)
{
    if (src->count == 0)
        return;
    if (dst->count == 0 || src->min < dst->min)
        dst->min = src->min;
    if (src->max > dst->max)
        dst->max = src->max;
    dst->count += src->count;
    dst->sum += src->sum;
    for (unsigned i = 0; i < LG_HIST_BUCKETS; i++)
        dst->b[i] += src->b[i];
}

uint64_t lg_hist_quantile(const struct lg_hist *h, double q)
{
    if (h->count == 0)
        return 0;
    uint64_t rank = (uint64_t)(q * (double)h->count + 0.999999);
    if (rank < 1)
        rank = 1;
    uint64_t seen = 0;
    for (unsigned i = 0; i < LG_HIST_BUCKETS; i++) {
        seen += h->b[i];
        if (seen >= rank) {
            uint64_t top = bucket_top(i);
            return top < h->max ? top : h->max;
        }
    }
    return h->max;
}
