/*
 * fuzz_notify.c — libFuzzer target for the Subscribe endpoint parser
 * (notify.h, docs/protocol.md §13.2).
 *
 * The input is an Endpoint's text.  Checked:
 *   - only 0 or SMQ_E_ENDPOINT_INVALID; the _err form agrees with the plain
 *     one and gives a message on a refusal; nothing is left in trimmed or
 *     *out after a refusal;
 *   - an accepted endpoint: trimmed is at most 1024 bytes of visible ASCII
 *     and parses again to the same result (the stored text is a fixed
 *     point); a queue endpoint starts with acs:mns:, ends with
 *     ":queues/" and its queue, a valid queue name; an http(s) one has a
 *     port 1..65535, a target starting with '/', an authority starting with
 *     its host, and no '@', '#' in the stored text's authority.
 * Seeds are kept by hand in corpus/fuzz_notify.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "smqd/errors.h"
#include "smqd/notify.h"
#include "smqd/qname.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

static bool all_zero(const void *p, size_t n)
{
    const unsigned char *c = p;

    for (size_t i = 0; i < n; i++)
        if (c[i] != 0)
            return false;
    return true;
}

static void check_accepted(const struct notify_endpoint *ep, const char *trimmed)
{
    size_t tl = strlen(trimmed);
    struct notify_endpoint again;
    char t2[SMQ_ENDPOINT_MAX + 1];

    FUZZ_CHECK(tl >= 1 && tl <= SMQ_ENDPOINT_MAX);
    for (size_t i = 0; i < tl; i++)
        FUZZ_CHECK((unsigned char)trimmed[i] > 0x20 && (unsigned char)trimmed[i] < 0x7f);
    FUZZ_CHECK(notify_endpoint_parse(trimmed, tl, &again, t2) == 0);
    FUZZ_CHECK(strcmp(t2, trimmed) == 0);
    FUZZ_CHECK(memcmp(&again, ep, sizeof again) == 0);
    if (ep->kind == NOTIFY_EP_QUEUE) {
        size_t ql = strlen(ep->queue);

        FUZZ_CHECK(strncmp(trimmed, "acs:mns:", 8) == 0);
        FUZZ_CHECK(qname_check(ep->queue, ql) == QNAME_OK);
        FUZZ_CHECK(tl > ql + 8 && memcmp(trimmed + tl - ql - 8, ":queues/", 8) == 0);
        return;
    }
    FUZZ_CHECK(ep->kind == NOTIFY_EP_HTTP);
    FUZZ_CHECK(ep->port >= 1 && ep->port <= 65535);
    FUZZ_CHECK(ep->target[0] == '/');
    FUZZ_CHECK(ep->host[0] != '\0');
    FUZZ_CHECK(strncmp(ep->authority, ep->host, strlen(ep->host)) == 0);
    FUZZ_CHECK(strchr(ep->authority, '@') == NULL && strchr(trimmed, '#') == NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct notify_endpoint ep, ep2;
    char trimmed[SMQ_ENDPOINT_MAX + 1], t2[SMQ_ENDPOINT_MAX + 1];
    struct smq_errinfo ei = {0};
    char *text = malloc(size + 1);   /* exactly size bytes readable, as ASan sees it */

    if (text == NULL)
        return 0;
    memcpy(text, data, size);
    int rc = notify_endpoint_parse_err(text, size, &ep, trimmed, &ei);
    int rc2 = notify_endpoint_parse(text, size, &ep2, t2);

    FUZZ_CHECK(rc == 0 || rc == SMQ_E_ENDPOINT_INVALID);
    FUZZ_CHECK(rc == rc2);
    if (rc != 0) {
        FUZZ_CHECK(ei.err == SMQ_E_ENDPOINT_INVALID && ei.msg[0] != '\0');
        FUZZ_CHECK(trimmed[0] == '\0' && t2[0] == '\0');
        FUZZ_CHECK(all_zero(&ep, sizeof ep));
    } else {
        FUZZ_CHECK(memcmp(&ep, &ep2, sizeof ep) == 0 && strcmp(trimmed, t2) == 0);
        check_accepted(&ep, trimmed);
    }
    free(text);
    return 0;
}
