/*
 * clock.c — owns the system time sources and the fake clock used by tests.
 */
#include "smqd/clock.h"

#include <time.h>

static uint64_t system_mono_ms(void *ctx)
{
    struct timespec ts;
    (void)ctx;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int64_t system_epoch_ms(void *ctx)
{
    struct timespec ts;
    (void)ctx;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

uint64_t clock_mono_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

void clock_mono_deadline(uint64_t ms, struct timespec *out)
{
    clock_gettime(CLOCK_MONOTONIC, out);
    out->tv_sec += (time_t)(ms / 1000);
    out->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (out->tv_nsec >= 1000000000L) {
        out->tv_sec++;
        out->tv_nsec -= 1000000000L;
    }
}

void clock_mono_cond_init(pthread_cond_t *cond)
{
    pthread_condattr_t attr;

    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(cond, &attr);
    pthread_condattr_destroy(&attr);
}

static const struct smq_clock system_clock = {system_mono_ms, system_epoch_ms, NULL};

const struct smq_clock *clock_system(void)
{
    return &system_clock;
}

static uint64_t fake_mono_ms(void *ctx)
{
    return ((struct smq_fake_clock *)ctx)->mono_ms;
}

static int64_t fake_epoch_ms(void *ctx)
{
    return ((struct smq_fake_clock *)ctx)->epoch_ms;
}

void clock_fake_init(struct smq_fake_clock *fake, uint64_t mono_ms, int64_t epoch_ms)
{
    fake->clock.mono_ms = fake_mono_ms;
    fake->clock.epoch_ms = fake_epoch_ms;
    fake->clock.ctx = fake;
    fake->mono_ms = mono_ms;
    fake->epoch_ms = epoch_ms;
}

void clock_fake_advance(struct smq_fake_clock *fake, uint64_t ms)
{
    fake->mono_ms += ms;
    fake->epoch_ms += (int64_t)ms;
}
