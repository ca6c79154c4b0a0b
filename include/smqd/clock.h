/*
 * clock.h — time sources.
 *
 * Scheduling uses a monotonic millisecond clock; the wire and the disk use
 * epoch milliseconds.  The engine reads both through a struct smq_clock so
 * that tests can substitute a fake clock and move time without sleeping.
 */
#ifndef SMQD_CLOCK_H
#define SMQD_CLOCK_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

struct smq_clock {
    uint64_t (*mono_ms)(void *ctx);    /* monotonic, never goes back */
    int64_t (*epoch_ms)(void *ctx);    /* wall clock, ms since 1970 */
    void *ctx;
};

/* The real clock: CLOCK_MONOTONIC and CLOCK_REALTIME. */
const struct smq_clock *clock_system(void);

/* CLOCK_MONOTONIC in microseconds, read directly: for durations that are
 * measured, not scheduled (request latency, flush time, systemd's
 * MONOTONIC_USEC), so no test needs to fake them. */
uint64_t clock_mono_us(void);

/* CLOCK_MONOTONIC now + ms, for pthread_cond_timedwait on a condition
 * variable made by clock_mono_cond_init. */
void clock_mono_deadline(uint64_t ms, struct timespec *out);
/* A condition variable whose timed waits measure CLOCK_MONOTONIC (a wall
 * clock step cannot stretch or cut them). */
void clock_mono_cond_init(pthread_cond_t *cond);

/* A fake clock for tests: both readings are fields the test moves. */
struct smq_fake_clock {
    struct smq_clock clock;     /* pass &fake.clock to the code under test */
    uint64_t mono_ms;
    int64_t epoch_ms;
};

void clock_fake_init(struct smq_fake_clock *fake, uint64_t mono_ms, int64_t epoch_ms);
/* Moves both readings forward by ms. */
void clock_fake_advance(struct smq_fake_clock *fake, uint64_t ms);

static inline uint64_t clock_mono_ms(const struct smq_clock *c) { return c->mono_ms(c->ctx); }
static inline int64_t clock_epoch_ms(const struct smq_clock *c) { return c->epoch_ms(c->ctx); }

#endif
