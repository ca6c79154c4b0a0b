/*
 * xml.h — request-body parsing (libxml2) and response writing.
 *
 * Parsing: elements are matched by local name, namespaces and order are
 * ignored, unknown elements are ignored (docs/protocol.md §4).  The parser refuses
 * DTDs, entity declarations and external entities, network access, and
 * documents nested deeper than a small bound.  Values are checked for
 * syntax (integers, booleans) here; ranges are checked by the caller, which
 * knows the queue.  Only xml.c includes libxml2.
 *
 * Writing: compact documents with the default namespace
 * xmlns="http://mns.aliyuncs.com/doc/v1" on the root, leaf text escaped
 * (&, <, >, and CR as &#13;), numbers in decimal, booleans True/False.
 */
#ifndef SMQD_XML_H
#define SMQD_XML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "smqd/buf.h"
#include "smqd/errors.h"
#include "smqd/mns.h"

#define XML_MNS_NS "http://mns.aliyuncs.com/doc/v1"
#define XML_BATCH_MAX 16

/* Must be called once from the main thread before any parse (libxml2 rule). */
void xml_global_init(void);
/* Also frees the calling thread's parser context (xml_thread_cleanup). */
void xml_global_cleanup(void);

/* Each thread keeps a parser context between its parses (freed when the
 * thread exits).  xml_thread_cleanup frees the calling thread's now, so
 * that its next parse starts from a new one (the fuzzers, for inputs that
 * reproduce alone).  xml_parser_names tells how many names the kept
 * context's dictionary holds (0: none kept); it stays bounded, in names and
 * in bytes: a context past either bound is replaced. */
void xml_thread_cleanup(void);
size_t xml_parser_names(void);

/* ---- request bodies ---------------------------------------------------- */

/* One optional integer field: present tells whether the element appeared. */
struct xml_opt_i64 {
    bool present;
    int64_t value;
};

/* <Queue> of CreateQueue / SetQueueAttributes.  All fields optional. */
struct xml_queue_attrs {
    struct xml_opt_i64 delay_s;            /* DelaySeconds */
    struct xml_opt_i64 max_msg_size;       /* MaximumMessageSize */
    struct xml_opt_i64 retention_s;        /* MessageRetentionPeriod */
    struct xml_opt_i64 visibility_s;       /* VisibilityTimeout */
    struct xml_opt_i64 polling_wait_s;     /* PollingWaitSeconds */
    struct xml_opt_i64 logging;            /* LoggingEnabled: 1/0 */
    /* Dead-letter policy (smqd extension): <DlqPolicy> with <Enabled>,
     * <DeadLetterTargetQueue>, <MaxReceiveCount>, or the flat forms
     * <DlqEnabled>, <DlqTargetQueue>, <DlqMaxReceiveCount> that
     * GetQueueAttributes returns.  The target is checked by the API layer. */
    bool dlq_present;                      /* any of them given */
    struct xml_opt_i64 dlq_enabled;
    struct xml_opt_i64 dlq_max_receive;
    bool dlq_target_present;
    char dlq_target[121];                  /* a queue name (120); longer ones are refused here */
};

/* <Topic> of CreateTopic / SetTopicAttributes (docs/protocol.md §13.4.1).
 * All fields optional; MessageRetentionPeriod is read-only and ignored. */
struct xml_topic_attrs {
    struct xml_opt_i64 max_msg_size;       /* MaximumMessageSize */
    struct xml_opt_i64 logging;            /* LoggingEnabled: 1/0 */
};

/* A NotifyStrategy or NotifyContentFormat word, trimmed; the longest known
 * one is 23 bytes. */
#define XML_SUB_WORD_MAX 31

/*
 * <Subscription> of Subscribe / SetSubscriptionAttributes (docs/protocol.md
 * §13.6.1, §13.13).  An element that is empty (after trimming, for those
 * that are trimmed) counts as not given (its *_present stays false); a
 * repeated element is SMQ_E_MALFORMED_XML all the same.  The values are
 * checked by the API layer, except that a FilterTag longer than
 * SMQ_TAG_MAX_BYTES bytes, a word longer than XML_SUB_WORD_MAX and a
 * dead-letter target longer than a queue name are SMQ_E_INVALID_ARGUMENT
 * here (none of them could be valid), and an Endpoint too long to keep is
 * only flagged (its code depends on the request).
 */
struct xml_sub_attrs {
    bool endpoint_present;
    char endpoint[SMQ_ENDPOINT_MAX + 1];   /* trimmed */
    /* Longer than SMQ_ENDPOINT_MAX after trimming: endpoint_present is
     * set and endpoint is "" (the caller refuses it, as it sees fit). */
    bool endpoint_too_long;
    bool filter_tag_present;               /* FilterTag, not trimmed */
    char filter_tag[SMQ_TAG_MAX_BYTES + 1];
    bool strategy_present;                 /* NotifyStrategy, trimmed */
    char strategy[XML_SUB_WORD_MAX + 1];
    bool format_present;                   /* NotifyContentFormat, trimmed */
    char format[XML_SUB_WORD_MAX + 1];
    /* Dead-letter policy (§13.13): <DlqPolicy> with <Enabled> and
     * <DeadLetterTargetQueue>, or the flat <DlqEnabled>, <DlqTargetQueue>;
     * one field given in both forms is a repeated element. */
    bool dlq_present;                      /* any of them given */
    struct xml_opt_i64 dlq_enabled;
    bool dlq_target_present;
    char dlq_target[SMQ_QUEUE_NAME_MAX + 1];
};

/* The Java SDK's message extensions (docs/protocol.md §6.4): at most
 * XML_USER_PROPS_MAX user properties, each name 1..XML_PROP_NAME_MAX bytes
 * and unique; system properties only of the names that SDK knows; a
 * MessageGroupId of at most XML_GROUP_ID_MAX bytes; all names and values
 * together at most XML_EXT_BYTES_MAX bytes. */
#define XML_USER_PROPS_MAX 50
#define XML_PROP_NAME_MAX 256
#define XML_GROUP_ID_MAX 128
#define XML_EXT_BYTES_MAX 32768

/* One <Message> of SendMessage / BatchSendMessage. */
struct xml_send_item {
    char *body;                   /* MessageBody text after unescaping, malloc'd, NUL-terminated */
    size_t body_len;              /* bytes (UTF-8) */
    bool body_present;            /* element present (may be empty) */
    struct xml_opt_i64 delay_s;   /* DelaySeconds */
    struct xml_opt_i64 priority;  /* Priority */
    /* The message's extensions, checked and rendered as the XML fragment a
     * receive returns them in (<UserProperties>, <SystemProperties>,
     * <MessageGroupId>, in that order), malloc'd; NULL when it has none. */
    char *ext;
    size_t ext_len;
};

struct xml_send_batch {
    size_t n;                                 /* 1..XML_BATCH_MAX */
    struct xml_send_item items[XML_BATCH_MAX];
};

/*
 * <Message> of PublishMessage (docs/protocol.md §13.5).  MessageBody as in a
 * SendMessage (byte-exact after XML decoding, never base64-handled);
 * MessageTag not trimmed, an empty one counting as not given, one longer
 * than SMQ_TAG_MAX_BYTES bytes SMQ_E_INVALID_ARGUMENT here (its length in
 * characters is the caller's to check).  MessageAttributes, UserProperties,
 * SystemProperties, MessageGroupId and any other element are skipped
 * whatever they hold: a publish keeps none of them.
 */
struct xml_publish {
    char *body;                   /* MessageBody text after unescaping, malloc'd, NUL-terminated */
    size_t body_len;              /* bytes (UTF-8) */
    bool body_present;            /* element present (may be empty) */
    char tag[SMQ_TAG_MAX_BYTES + 1];   /* MessageTag, "" = untagged */
};

/* <ReceiptHandles> of BatchDeleteMessage. */
struct xml_handles {
    size_t n;                                 /* 1..XML_BATCH_MAX */
    char *handles[XML_BATCH_MAX];             /* malloc'd, NUL-terminated */
};

/*
 * Each parser returns 0, or SMQ_E_MALFORMED_XML (not well-formed, wrong
 * root, DTD, too deep, a required element missing, a duplicated element) or
 * SMQ_E_INVALID_ARGUMENT (a number that is not a decimal integer or that
 * overflows int64, a boolean that is not true/false in any case, more than
 * XML_BATCH_MAX items, an empty list) with ei filled.  On failure nothing is
 * left allocated in *out.
 * Also: an empty document (len 0) is SMQ_E_MALFORMED_XML, so a caller that
 * allows an absent body checks len first; a known element that contains
 * elements is SMQ_E_INVALID_ARGUMENT; out of memory is SMQ_E_NOMEM.
 * MessageBody is not trimmed; a missing one leaves body_present false.
 * Receipt handles are trimmed, and an empty one is kept as "".
 */
int xml_parse_queue_attrs(const char *doc, size_t len, struct xml_queue_attrs *out,
                          struct smq_errinfo *ei);
/* root <Topic>. */
int xml_parse_topic_attrs(const char *doc, size_t len, struct xml_topic_attrs *out,
                          struct smq_errinfo *ei);
/* root <Subscription>. */
int xml_parse_sub_attrs(const char *doc, size_t len, struct xml_sub_attrs *out,
                        struct smq_errinfo *ei);
/* root <Message>: one item. */
int xml_parse_send(const char *doc, size_t len, struct xml_send_item *out,
                   struct smq_errinfo *ei);
/* root <Messages>: 1..16 items. */
int xml_parse_send_batch(const char *doc, size_t len, struct xml_send_batch *out,
                         struct smq_errinfo *ei);
/* Either root in one parse: *root_kind is 1 for <Messages> (1..16 items into
 * out), 0 for any other root (<Message>: one item), -1 when the document did
 * not load at all. */
int xml_parse_send_any(const char *doc, size_t len, struct xml_send_batch *out, int *root_kind,
                       struct smq_errinfo *ei);
/* root <Message> of PublishMessage; any other root, a <Messages> batch
 * included, is SMQ_E_MALFORMED_XML (topics have no batch publish). */
int xml_parse_publish(const char *doc, size_t len, struct xml_publish *out,
                      struct smq_errinfo *ei);
int xml_parse_handles(const char *doc, size_t len, struct xml_handles *out,
                      struct smq_errinfo *ei);
/* Reports the local name of the root element into name (e.g. "Message").
 * Returns 0 or SMQ_E_MALFORMED_XML (also when name_size is too small), or
 * SMQ_E_NOMEM. */
int xml_root_name(const char *doc, size_t len, char *name, size_t name_size);

void xml_send_item_free(struct xml_send_item *it);
void xml_send_batch_free(struct xml_send_batch *b);
void xml_handles_free(struct xml_handles *h);
void xml_publish_free(struct xml_publish *p);

/* ---- response writing -------------------------------------------------- */

/* Writes the XML declaration and <root xmlns="…">. */
void xml_begin(struct smq_buf *b, const char *root);
void xml_open(struct smq_buf *b, const char *name);           /* <name> */
void xml_close(struct smq_buf *b, const char *name);          /* </name> */
void xml_elem_text(struct smq_buf *b, const char *name, const char *text, size_t len);
void xml_elem_str(struct smq_buf *b, const char *name, const char *text);
void xml_elem_i64(struct smq_buf *b, const char *name, int64_t v);
void xml_elem_bool(struct smq_buf *b, const char *name, bool v);
/* Appends text escaped for XML character data.  Text from the parser is
 * written byte-exact; any byte that does not start a valid XML 1.0 character
 * in UTF-8 (possible only in strings from elsewhere) becomes U+FFFD, so the
 * output is always well-formed.  xml_elem_str writes NULL as "". */
void xml_escape(struct smq_buf *b, const char *text, size_t len);

/* The complete MNS <Error> document of docs/protocol.md §8.1. */
void xml_error_doc(struct smq_buf *b, const char *code, const char *message,
                   const char *request_id, const char *host_id);

#endif
