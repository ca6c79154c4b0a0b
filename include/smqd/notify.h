/*
 * notify.h — what a topic notification is on the wire (docs/protocol.md
 * §13.2, §13.9–§13.12), as pure functions with no I/O: the endpoint forms
 * a subscription may name, the notification body in each format, the
 * headers and string to sign of an HTTP push, and the retry schedules.
 * A leaf of layer 1: the engine renders bodies with it, the push pool
 * builds and signs requests with it.
 */
#ifndef SMQD_NOTIFY_H
#define SMQD_NOTIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "smqd/buf.h"
#include "smqd/mns.h"

/* [topics] account_id's default: TopicOwner and Subscriber (§13.8). */
#define NOTIFY_ACCOUNT_ID_DEFAULT "1000000000000000"
#define NOTIFY_ACCOUNT_ID_MAX 64

/* ---- endpoints (§13.2) ---- */

enum notify_endpoint_kind { NOTIFY_EP_QUEUE, NOTIFY_EP_HTTP };

struct notify_endpoint {
    enum notify_endpoint_kind kind;
    char queue[SMQ_QUEUE_NAME_MAX + 1];      /* QUEUE: the queue's name */
    bool https;                              /* HTTP: the scheme */
    char host[256];                          /* HTTP: as written ([::1] keeps its brackets) */
    int port;                                /* HTTP: 1..65535 (the scheme's default if none) */
    char authority[300];                     /* HTTP: host[:port] as written, for Host */
    char target[SMQ_ENDPOINT_MAX + 1];       /* HTTP: path and query ("/notifications" if none) */
};

/* Validates an Endpoint's text (len bytes; surrounding blanks trimmed
 * first) and fills out; trimmed gets the text as stored.  0, or
 * SMQ_E_ENDPOINT_INVALID. */
int notify_endpoint_parse(const char *text, size_t len, struct notify_endpoint *out,
                          char trimmed[SMQ_ENDPOINT_MAX + 1]);
/* As notify_endpoint_parse, and on a refusal ei (when not NULL) gets
 * SMQ_E_ENDPOINT_INVALID with a message saying what is wrong (a mail or SMS
 * endpoint, a bad queue name, a bad port...). */
struct smq_errinfo;
int notify_endpoint_parse_err(const char *text, size_t len, struct notify_endpoint *out,
                              char trimmed[SMQ_ENDPOINT_MAX + 1], struct smq_errinfo *ei);

/* ---- the signing certificate's URL (§13.11) ---- */

/* Where smqd serves the certificate on its MNS listener. */
#define NOTIFY_CERT_PATH "/smqd/signing-cert.pem"
/* x-mns-signing-cert-url carries the URL in base64 within the 600-byte cap
 * of a push header's value (struct notify_header): 450 bytes at most. */
#define NOTIFY_CERT_URL_MAX 450

/* The certificate URL pushes name: configured ("" = none), else
 * scheme://host:port/smqd/signing-cert.pem of the MNS listener (host as
 * configured, an IPv6 one in brackets).  0; or SMQ_E_INVALID_ARGUMENT with
 * ei's message saying why: a configured value that is not an http(s) URL
 * of at most NOTIFY_CERT_URL_MAX bytes, or a wildcard listen address
 * (0.0.0.0, ::) that no endpoint could fetch from. */
int notify_cert_url(const char *configured, const char *scheme, const char *host, unsigned port,
                    char out[NOTIFY_CERT_URL_MAX + 1], struct smq_errinfo *ei);

/* ---- the notification (§13.9) ---- */

/* One published message as a notification to one subscription carries it. */
struct notify_msg {
    const char *account_id;                  /* TopicOwner and Subscriber */
    const char *topic;
    const char *sub;
    const char *msg_id;                      /* 32 hex digits (handle.h msgid_format) */
    const char *body;                        /* the published body, body_len bytes */
    size_t body_len;
    const unsigned char *md5;                /* MNS_MD5_LEN bytes: of the body */
    const char *tag;                         /* "" = untagged */
    int64_t publish_ms;
};

/* Appends the notification in format f to out: the XML or JSON document,
 * or the body itself (SIMPLIFIED), byte for byte as §13.9 says.  tag NULL
 * or "" leaves MessageTag out; other NULL strings are written as "".  0,
 * SMQ_E_NOMEM, or SMQ_E_INVALID_ARGUMENT (nothing appended) for an unknown
 * format, a NULL m, a NULL body with body_len > 0, or a NULL md5 (XML and
 * JSON). */
int notify_render(enum smq_notify_format f, const struct notify_msg *m, struct smq_buf *out);

/* The push's Content-Type for format f (§13.10); an unknown format gets
 * XML's, the default's.  Never NULL. */
const char *notify_content_type(enum smq_notify_format f);

/* ---- the push request (§13.10, §13.11) ---- */

#define NOTIFY_PUSH_HEADERS_MAX 20

struct notify_header {
    const char *name;                        /* static */
    char value[600];
};

/* What one attempt's request carries besides the body. */
struct notify_push {
    const struct notify_msg *msg;            /* body and body_len: the rendered notification */
    enum smq_notify_format format;
    const struct notify_endpoint *ep;
    const char *date;                        /* "Www, DD Mmm YYYY HH:MM:SS GMT" */
    const char *request_id;                  /* x-mns-request-id */
    const char *cert_url;                    /* the signing certificate's URL, plain */
};

/* Fills headers[0..*n) with every header of §13.10 except Authorization,
 * Host, Content-Length and User-Agent, named in lower case, in the table's
 * order (date, content-type, content-md5 first, then the x-mns-* ones), and
 * sets string_to_sign (§13.11) for body (what is sent) and the endpoint's
 * target.  A tag with a byte outside printable ASCII goes into
 * x-mns-message-tag with every byte but A-Z a-z 0-9 - . _ ~ as %XX.
 * 0, SMQ_E_NOMEM, or SMQ_E_INVALID_ARGUMENT (*n = 0): a NULL field, an
 * unknown format, a value too long for a header or holding a control
 * byte. */
int notify_push_headers(const struct notify_push *p, const void *body, size_t body_len,
                        struct notify_header headers[NOTIFY_PUSH_HEADERS_MAX], size_t *n,
                        struct smq_buf *string_to_sign);

/* "Www, DD Mmm YYYY HH:MM:SS GMT" for epoch_ms (out: 30 bytes, with the
 * NUL); times before 1970 or after 9999 are clamped to those years. */
void notify_http_date(int64_t epoch_ms, char out[30]);

/* ---- retries (§13.12) ---- */

/* Attempts in all: 4 (BACKOFF_RETRY) or 177 (EXPONENTIAL_DECAY_RETRY).
 * An unknown strategy is read as the default, BACKOFF_RETRY (here and
 * below), as mns_notify_strategy_name does. */
uint32_t notify_max_attempts(enum smq_notify_strategy s);
/* The interval before retry n (n >= 1, the attempt n + 1), in ms.  rnd is
 * a uniform random value; BACKOFF_RETRY draws 10000..20000 ms from it
 * (rnd 0 gives 10000, UINT32_MAX 20000, monotonic between).
 * EXPONENTIAL_DECAY_RETRY: 2^(n-1) s for n = 1..9, then 512 s.  -1 when
 * there is no retry n: n == 0 or n >= notify_max_attempts(s). */
int64_t notify_retry_interval_ms(enum smq_notify_strategy s, uint32_t retry_n, uint32_t rnd);

#endif
