/*
 * strnum.c — owns strict integer parsing (strnum.h).  Hand-written rather
 * than strtoll: strtoll skips leading blanks, takes '+', follows the locale
 * and reports overflow through errno, and every caller had to guard each
 * of those differently.
 */
#include "smqd/strnum.h"

#include "smqd/errors.h"

static bool all_digits(const char *s, size_t len)
{
    if (len == 0)
        return false;
    for (size_t i = 0; i < len; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    return true;
}

bool strnum_is_integer(const char *text, size_t len)
{
    if (len > 0 && text[0] == '-')
        return all_digits(text + 1, len - 1);
    return all_digits(text, len);
}

/* Digits into a magnitude no larger than limit; false past it. */
static bool magnitude(const char *s, size_t len, uint64_t limit, uint64_t *out)
{
    uint64_t acc = 0;

    for (size_t i = 0; i < len; i++) {
        unsigned d = (unsigned)(s[i] - '0');
        if (acc > (limit - d) / 10)
            return false;
        acc = acc * 10 + d;
    }
    *out = acc;
    return true;
}

int strnum_u64(const char *text, size_t len, uint64_t *out)
{
    if (!all_digits(text, len) || !magnitude(text, len, UINT64_MAX, out))
        return SMQ_E_INVALID_ARGUMENT;
    return 0;
}

int strnum_i64(const char *text, size_t len, int64_t *out)
{
    bool neg = len > 0 && text[0] == '-';
    uint64_t acc;

    if (!strnum_is_integer(text, len))
        return SMQ_E_INVALID_ARGUMENT;
    if (neg) {
        text++;
        len--;
    }
    if (!magnitude(text, len, neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX, &acc))
        return SMQ_E_INVALID_ARGUMENT;
    /* Written so that INT64_MIN never passes through a signed overflow. */
    *out = neg && acc > 0 ? -(int64_t)(acc - 1) - 1 : (int64_t)acc;
    return 0;
}
