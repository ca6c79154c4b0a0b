/*
 * netaddr.c — owns turning a configured listen address into a socket
 * address, for both listeners, a socket's address back into text, and the
 * client addresses of requests: trusted-proxy ranges and the
 * X-Forwarded-For rule (netaddr.h).
 */
#include "smqd/netaddr.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "smqd/errors.h"
#include "smqd/strnum.h"

int netaddr_make(const char *host, uint16_t port, struct sockaddr_storage *ss, bool *ipv6)
{
    struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

    memset(ss, 0, sizeof *ss);
    *ipv6 = false;
    if (strcmp(host, "localhost") == 0)
        host = "127.0.0.1";
    if (inet_pton(AF_INET, host, &in4->sin_addr) == 1) {
        in4->sin_family = AF_INET;
        in4->sin_port = htons(port);
        return 0;
    }
    if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons(port);
        *ipv6 = true;
        return 0;
    }
    return SMQ_E_INVALID_ARGUMENT;
}

int netaddr_local(int fd, char *out, size_t size)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    const struct sockaddr_in *in4 = (const struct sockaddr_in *)&ss;
    const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&ss;
    char host[INET6_ADDRSTRLEN];
    int n = -1;

    if (fd < 0 || getsockname(fd, (struct sockaddr *)&ss, &len) != 0)
        return SMQ_E_INVALID_ARGUMENT;
    if (ss.ss_family == AF_INET && inet_ntop(AF_INET, &in4->sin_addr, host, sizeof host))
        n = snprintf(out, size, "%s:%u", host, (unsigned)ntohs(in4->sin_port));
    else if (ss.ss_family == AF_INET6 && inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host))
        n = snprintf(out, size, "[%s]:%u", host, (unsigned)ntohs(in6->sin6_port));
    return n > 0 && (size_t)n < size ? 0 : SMQ_E_INVALID_ARGUMENT;
}

/* ---- client addresses -------------------------------------------------------- */

static const uint8_t v4_mapped_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

static bool is_v4(const struct netaddr_ip *ip)
{
    return memcmp(ip->b, v4_mapped_prefix, sizeof v4_mapped_prefix) == 0;
}

int netaddr_ip_parse(const char *text, size_t len, struct netaddr_ip *out)
{
    char buf[NETADDR_TEXT_MAX];

    if (len == 0 || len >= sizeof buf)
        return SMQ_E_INVALID_ARGUMENT;
    memcpy(buf, text, len);
    buf[len] = '\0';
    memcpy(out->b, v4_mapped_prefix, sizeof v4_mapped_prefix);
    if (inet_pton(AF_INET, buf, out->b + 12) == 1)
        return 0;
    return inet_pton(AF_INET6, buf, out->b) == 1 ? 0 : SMQ_E_INVALID_ARGUMENT;
}

int netaddr_ip_of(const struct sockaddr *sa, struct netaddr_ip *out)
{
    if (sa == NULL)
        return SMQ_E_INVALID_ARGUMENT;
    if (sa->sa_family == AF_INET) {
        memcpy(out->b, v4_mapped_prefix, sizeof v4_mapped_prefix);
        memcpy(out->b + 12, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
        return 0;
    }
    if (sa->sa_family == AF_INET6) {
        memcpy(out->b, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, 16);
        return 0;
    }
    return SMQ_E_INVALID_ARGUMENT;
}

int netaddr_peer(int fd, struct netaddr_ip *out)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;

    if (fd < 0 || getpeername(fd, (struct sockaddr *)&ss, &len) != 0)
        return SMQ_E_INVALID_ARGUMENT;
    return netaddr_ip_of((const struct sockaddr *)&ss, out);
}

void netaddr_ip_text(const struct netaddr_ip *ip, char out[NETADDR_TEXT_MAX])
{
    const char *ok = is_v4(ip) ? inet_ntop(AF_INET, ip->b + 12, out, NETADDR_TEXT_MAX)
                               : inet_ntop(AF_INET6, ip->b, out, NETADDR_TEXT_MAX);
    if (ok == NULL)
        snprintf(out, NETADDR_TEXT_MAX, "?");
}

bool netaddr_ip_equal(const struct netaddr_ip *a, const struct netaddr_ip *b)
{
    return memcmp(a->b, b->b, sizeof a->b) == 0;
}

/* Whether ip has any bit set after its first bits. */
static bool bits_beyond(const struct netaddr_ip *ip, unsigned bits)
{
    for (unsigned i = bits; i < 128; i++)
        if (ip->b[i / 8] & (0x80u >> (i % 8)))
            return true;
    return false;
}

int netaddr_range_parse(const char *text, size_t len, struct netaddr_range *out)
{
    const char *slash = memchr(text, '/', len);
    size_t alen = slash != NULL ? (size_t)(slash - text) : len;
    unsigned max;
    uint64_t bits = 0;

    if (netaddr_ip_parse(text, alen, &out->ip) != 0)
        return SMQ_E_INVALID_ARGUMENT;
    /* An IPv4 prefix counts from the start of the mapped form; an IPv6
     * one written for a mapped address (::ffff:10.0.0.0/104) is literal. */
    max = memchr(text, ':', alen) == NULL ? 32 : 128;
    if (slash == NULL) {
        out->bits = 128;
        return 0;
    }
    if (strnum_u64(slash + 1, len - alen - 1, &bits) != 0 || bits > max)
        return SMQ_E_INVALID_ARGUMENT;
    out->bits = (unsigned)bits + (128 - max);
    return bits_beyond(&out->ip, out->bits) ? SMQ_E_INVALID_ARGUMENT : 0;
}

bool netaddr_range_has(const struct netaddr_range *r, const struct netaddr_ip *ip)
{
    unsigned whole = r->bits / 8, rest = r->bits % 8;

    if (memcmp(r->ip.b, ip->b, whole) != 0)
        return false;
    return rest == 0 || ((r->ip.b[whole] ^ ip->b[whole]) & (0xffu << (8 - rest))) == 0;
}

static bool list_separator(char c)
{
    return c == ',' || c == ' ' || c == '\t';
}

int netaddr_trust_parse(const char *list, struct netaddr_trust *t, char *bad, size_t bad_size)
{
    const char *p = list;

    t->n = 0;
    while (*p != '\0') {
        size_t len;

        while (list_separator(*p))
            p++;
        len = strcspn(p, ", \t");
        if (len == 0)
            break;
        if (t->n == NETADDR_TRUST_MAX) {
            snprintf(bad, bad_size, "more than %d entries", NETADDR_TRUST_MAX);
            return SMQ_E_INVALID_ARGUMENT;
        }
        if (netaddr_range_parse(p, len, &t->r[t->n]) != 0) {
            snprintf(bad, bad_size, "%.*s", (int)(len > 64 ? 64 : len), p);
            return SMQ_E_INVALID_ARGUMENT;
        }
        t->n++;
        p += len;
    }
    return 0;
}

bool netaddr_trusted(const struct netaddr_trust *t, const struct netaddr_ip *ip)
{
    for (size_t i = 0; t != NULL && i < t->n; i++)
        if (netaddr_range_has(&t->r[i], ip))
            return true;
    return false;
}

/*
 * Walks one X-Forwarded-For value from its right end.  *at is the address
 * believed so far (a trusted hop); the walk moves it left over trusted
 * addresses.  Returns true when it is over: an untrusted address (now *at)
 * or an entry that is not an address (*at stays).
 */
static bool walk_value(const struct netaddr_trust *t, const char *v, struct netaddr_ip *at)
{
    size_t end = strlen(v);

    while (end > 0) {
        size_t start = end, a, b;
        struct netaddr_ip ip;

        while (start > 0 && v[start - 1] != ',')
            start--;
        for (a = start; a < end && (v[a] == ' ' || v[a] == '\t'); a++)
            ;
        for (b = end; b > a && (v[b - 1] == ' ' || v[b - 1] == '\t'); b--)
            ;
        end = start > 0 ? start - 1 : 0;
        if (a == b)
            continue;                    /* an empty list element ("a,,b") */
        if (netaddr_ip_parse(v + a, b - a, &ip) != 0)
            return true;
        *at = ip;
        if (!netaddr_trusted(t, &ip))
            return true;
    }
    return false;
}

bool netaddr_forwarded_client(const struct netaddr_trust *t, const struct netaddr_ip *peer,
                              const struct http_header *h, size_t n,
                              struct netaddr_ip *client)
{
    *client = *peer;
    if (!netaddr_trusted(t, peer))
        return false;
    for (size_t i = n; i > 0; i--) {
        if (strcasecmp(h[i - 1].name, "X-Forwarded-For") == 0
            && walk_value(t, h[i - 1].value, client))
            break;
    }
    return !netaddr_ip_equal(client, peer);
}
