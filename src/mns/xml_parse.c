/*
 * xml_parse.c — owns the request bodies (xml.h): <Queue>, <Message>,
 * <Messages>, <ReceiptHandles>, and the topics' <Topic>, <Subscription> and
 * published <Message> (docs/protocol.md §13.4–§13.6) read from a loaded
 * document (xml_doc.h) into plain structs, with the syntax of every value
 * checked (integers, booleans, text only) and nothing else assumed
 * (docs/protocol.md §4).
 */
#include "xml_doc.h"
#include "xml_props.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "smqd/strnum.h"

/* ---- element values ----------------------------------------------------- */

static bool is_element(const xmlNode *n, const char *name)
{
    return n->type == XML_ELEMENT_NODE && strcmp((const char *)n->name, name) == 0;
}

static bool is_xml_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Narrows [*s, *s + *len) to exclude surrounding XML whitespace. */
static void trim(const char **s, size_t *len)
{
    while (*len > 0 && is_xml_space((*s)[0])) {
        (*s)++;
        (*len)--;
    }
    while (*len > 0 && is_xml_space((*s)[*len - 1]))
        (*len)--;
}

static int invalid_integer(const char *name, struct smq_errinfo *ei)
{
    return errors_set(ei, SMQ_E_INVALID_ARGUMENT, "The value of %s is not a valid integer.", name);
}

/* Decimal int64 with optional '-', blanks around it allowed as XML text
 * may have them (ranges are the caller's business). */
static int parse_i64(const char *name, const char *s, size_t len, int64_t *out,
                     struct smq_errinfo *ei)
{
    trim(&s, &len);
    return strnum_i64(s, len, out) == 0 ? 0 : invalid_integer(name, ei);
}

/* true/false in any case (Python sends True, Java and Go send true). */
static int parse_bool(const char *name, const char *s, size_t len, int64_t *out,
                      struct smq_errinfo *ei)
{
    trim(&s, &len);
    if (len == 4 && strncasecmp(s, "true", 4) == 0)
        *out = 1;
    else if (len == 5 && strncasecmp(s, "false", 5) == 0)
        *out = 0;
    else
        return errors_set(ei, SMQ_E_INVALID_ARGUMENT,
                          "The value of %s should be True or False.", name);
    return 0;
}

/* A numeric or boolean element and where its value goes in the out struct. */
struct opt_field {
    const char *name;
    size_t offset;          /* of a struct xml_opt_i64 */
    bool is_bool;
};

static const struct opt_field queue_fields[] = {
    {"DelaySeconds", offsetof(struct xml_queue_attrs, delay_s), false},
    {"MaximumMessageSize", offsetof(struct xml_queue_attrs, max_msg_size), false},
    {"MessageRetentionPeriod", offsetof(struct xml_queue_attrs, retention_s), false},
    {"VisibilityTimeout", offsetof(struct xml_queue_attrs, visibility_s), false},
    {"PollingWaitSeconds", offsetof(struct xml_queue_attrs, polling_wait_s), false},
    {"LoggingEnabled", offsetof(struct xml_queue_attrs, logging), true},
    {"DlqEnabled", offsetof(struct xml_queue_attrs, dlq_enabled), true},
    {"DlqMaxReceiveCount", offsetof(struct xml_queue_attrs, dlq_max_receive), false},
};

/* Inside <DlqPolicy>, the control plane's names for the same fields. */
static const struct opt_field dlq_fields[] = {
    {"Enabled", offsetof(struct xml_queue_attrs, dlq_enabled), true},
    {"MaxReceiveCount", offsetof(struct xml_queue_attrs, dlq_max_receive), false},
};

static const struct opt_field send_fields[] = {
    {"DelaySeconds", offsetof(struct xml_send_item, delay_s), false},
    {"Priority", offsetof(struct xml_send_item, priority), false},
};

static const struct opt_field *find_field(const struct opt_field *fields, size_t n,
                                          const xmlNode *el)
{
    size_t i;

    for (i = 0; i < n; i++)
        if (is_element(el, fields[i].name))
            return &fields[i];
    return NULL;
}

static int duplicated(const char *name, struct smq_errinfo *ei)
{
    return errors_set(ei, SMQ_E_MALFORMED_XML,
                      "The XML you provided was not well-formed: duplicated element <%s>.", name);
}

/* Fills the xml_opt_i64 that f names inside the struct at base. */
static int parse_field(const xmlNode *el, const struct opt_field *f, void *base,
                       struct smq_errinfo *ei)
{
    struct xml_opt_i64 *slot = (struct xml_opt_i64 *)((char *)base + f->offset);
    struct smq_buf text;
    int rc;

    if (slot->present)
        return duplicated(f->name, ei);
    buf_init(&text);
    rc = xml_leaf_text(el, &text, ei);
    if (rc == 0 && f->is_bool)
        rc = parse_bool(f->name, text.data, text.len, &slot->value, ei);
    else if (rc == 0)
        rc = parse_i64(f->name, text.data, text.len, &slot->value, ei);
    slot->present = rc == 0;
    buf_free(&text);
    return rc;
}

/* ---- <Queue> ------------------------------------------------------------ */

/* <DeadLetterTargetQueue> / <DlqTargetQueue>: a queue name, checked later. */
static int parse_dlq_target(const xmlNode *el, const char *name, struct xml_queue_attrs *out,
                            struct smq_errinfo *ei)
{
    struct smq_buf text;
    int rc;

    if (out->dlq_target_present)
        return duplicated(name, ei);
    buf_init(&text);
    rc = xml_leaf_text(el, &text, ei);
    if (rc == 0 && text.len >= sizeof out->dlq_target)
        rc = errors_set(ei, SMQ_E_QUEUE_NAME_LENGTH, "The value of %s is longer than a "
                        "queue name (%zu characters).", name, sizeof out->dlq_target - 1);
    if (rc == 0) {
        memcpy(out->dlq_target, text.data != NULL ? text.data : "", text.len);
        out->dlq_target[text.len] = '\0';
        out->dlq_target_present = true;
    }
    buf_free(&text);
    return rc;
}

static int parse_dlq_policy(const xmlNode *policy, struct xml_queue_attrs *out,
                            struct smq_errinfo *ei)
{
    int rc = 0;

    for (const xmlNode *c = policy->children; c != NULL && rc == 0; c = c->next) {
        const struct opt_field *f =
            find_field(dlq_fields, sizeof dlq_fields / sizeof dlq_fields[0], c);
        if (f != NULL)
            rc = parse_field(c, f, out, ei);
        else if (is_element(c, "DeadLetterTargetQueue"))
            rc = parse_dlq_target(c, "DeadLetterTargetQueue", out, ei);
    }
    return rc;
}

/* The walk the attribute and publish documents share: doc's root must be
 * root_name, and child reads each child of the root in order (with arg)
 * until one fails.  0, or that failure; the document is freed either way
 * and the caller clears what it filled. */
static int walk_children(const char *doc, size_t len, const char *root_name,
                         int (*child)(const xmlNode *c, void *arg, struct smq_errinfo *ei),
                         void *arg, struct smq_errinfo *ei)
{
    xmlDocPtr d;
    xmlNodePtr root;
    int rc = xml_load_root(doc, len, root_name, &d, &root, ei);

    if (rc != 0)
        return rc;
    for (const xmlNode *c = root->children; c != NULL && rc == 0; c = c->next)
        rc = child(c, arg, ei);
    xmlFreeDoc(d);
    return rc;
}

/* One child of <Queue> (arg: the struct xml_queue_attrs). */
static int parse_queue_child(const xmlNode *c, void *arg, struct smq_errinfo *ei)
{
    struct xml_queue_attrs *out = arg;
    const struct opt_field *f =
        find_field(queue_fields, sizeof queue_fields / sizeof queue_fields[0], c);

    if (f != NULL) {
        out->dlq_present |= f->offset == offsetof(struct xml_queue_attrs, dlq_enabled)
                            || f->offset == offsetof(struct xml_queue_attrs, dlq_max_receive);
        return parse_field(c, f, out, ei);
    }
    if (is_element(c, "DlqTargetQueue")) {
        out->dlq_present = true;
        return parse_dlq_target(c, "DlqTargetQueue", out, ei);
    }
    if (is_element(c, "DlqPolicy")) {
        out->dlq_present = true;
        return parse_dlq_policy(c, out, ei);
    }
    return 0;
}

int xml_parse_queue_attrs(const char *doc, size_t len, struct xml_queue_attrs *out,
                          struct smq_errinfo *ei)
{
    int rc;

    memset(out, 0, sizeof *out);
    rc = walk_children(doc, len, "Queue", parse_queue_child, out, ei);
    if (rc != 0)
        memset(out, 0, sizeof *out);
    return rc;
}

/* ---- <Topic> and <Subscription> (docs/protocol.md §13) -------------------- */

static const struct opt_field topic_fields[] = {
    {"MaximumMessageSize", offsetof(struct xml_topic_attrs, max_msg_size), false},
    {"LoggingEnabled", offsetof(struct xml_topic_attrs, logging), true},
};

/* One child of <Topic> (arg: the struct xml_topic_attrs). */
static int parse_topic_child(const xmlNode *c, void *arg, struct smq_errinfo *ei)
{
    const struct opt_field *f =
        find_field(topic_fields, sizeof topic_fields / sizeof topic_fields[0], c);

    return f != NULL ? parse_field(c, f, arg, ei) : 0;
}

int xml_parse_topic_attrs(const char *doc, size_t len, struct xml_topic_attrs *out,
                          struct smq_errinfo *ei)
{
    int rc;

    memset(out, 0, sizeof *out);
    rc = walk_children(doc, len, "Topic", parse_topic_child, out, ei);
    if (rc != 0)
        memset(out, 0, sizeof *out);
    return rc;
}

/* A text element of <Subscription> (or of its <DlqPolicy>) and where it goes. */
struct sub_text {
    const char *name;
    bool nested;            /* inside <DlqPolicy> */
    bool trim;              /* XML blanks around the value dropped */
    bool flag_long;         /* a value too long is flagged (endpoint_too_long), not refused */
    size_t present, text, size;   /* offsets of the bool and the char[] in xml_sub_attrs */
    unsigned seen;          /* one bit per field: both forms of the target share theirs */
};

#define SUB_TEXT(member) offsetof(struct xml_sub_attrs, member##_present), \
    offsetof(struct xml_sub_attrs, member), sizeof(((struct xml_sub_attrs *)0)->member)

static const struct sub_text sub_texts[] = {
    {"Endpoint", false, true, true, SUB_TEXT(endpoint), 1u << 0},
    {"FilterTag", false, false, false, SUB_TEXT(filter_tag), 1u << 1},
    {"NotifyStrategy", false, true, false, SUB_TEXT(strategy), 1u << 2},
    {"NotifyContentFormat", false, true, false, SUB_TEXT(format), 1u << 3},
    {"DlqTargetQueue", false, false, false, SUB_TEXT(dlq_target), 1u << 4},
    {"DeadLetterTargetQueue", true, false, false, SUB_TEXT(dlq_target), 1u << 4},
};

static const struct opt_field sub_flat_fields[] = {
    {"DlqEnabled", offsetof(struct xml_sub_attrs, dlq_enabled), true},
};
static const struct opt_field sub_dlq_fields[] = {
    {"Enabled", offsetof(struct xml_sub_attrs, dlq_enabled), true},
};

/* The <Subscription> being read and the text fields seen so far. */
struct sub_reader {
    struct xml_sub_attrs *out;
    unsigned seen;
};

static const struct sub_text *find_sub_text(const xmlNode *el, bool nested)
{
    for (size_t i = 0; i < sizeof sub_texts / sizeof sub_texts[0]; i++)
        if (sub_texts[i].nested == nested && is_element(el, sub_texts[i].name))
            return &sub_texts[i];
    return NULL;
}

static int sub_text_too_long(const struct sub_text *t, struct smq_errinfo *ei)
{
    if (t->present == offsetof(struct xml_sub_attrs, filter_tag_present))
        return errors_set(ei, SMQ_E_INVALID_ARGUMENT, "The value of FilterTag should have at "
                          "most %d characters.", SMQ_TAG_MAX_CHARS);
    return errors_set(ei, SMQ_E_INVALID_ARGUMENT, "The value of %s is not valid.", t->name);
}

/* Copies the value into its field; an empty one leaves the field not given. */
static int take_sub_text(const xmlNode *el, const struct sub_text *t, struct sub_reader *r,
                         struct smq_errinfo *ei)
{
    struct smq_buf text;
    const char *s;
    size_t n;
    int rc;

    if (r->seen & t->seen)
        return duplicated(t->name, ei);
    r->seen |= t->seen;
    buf_init(&text);
    rc = xml_leaf_text(el, &text, ei);
    s = text.data != NULL ? text.data : "";
    n = text.len;
    if (t->trim)
        trim(&s, &n);
    if (rc == 0 && n >= t->size && !t->flag_long)
        rc = sub_text_too_long(t, ei);
    if (rc == 0 && n >= t->size) {
        r->out->endpoint_too_long = true;
        n = 0;                  /* nothing kept of it, but it was given */
        *(bool *)((char *)r->out + t->present) = true;
    }
    if (rc == 0 && n > 0) {
        char *dst = (char *)r->out + t->text;
        memcpy(dst, s, n);
        dst[n] = '\0';
        *(bool *)((char *)r->out + t->present) = true;
    }
    buf_free(&text);
    return rc;
}

/* One child of <Subscription> or of its <DlqPolicy>. */
static int parse_sub_child(const xmlNode *c, bool nested, struct sub_reader *r,
                           struct smq_errinfo *ei)
{
    const struct sub_text *t = find_sub_text(c, nested);
    const struct opt_field *f = nested
        ? find_field(sub_dlq_fields, sizeof sub_dlq_fields / sizeof sub_dlq_fields[0], c)
        : find_field(sub_flat_fields, sizeof sub_flat_fields / sizeof sub_flat_fields[0], c);
    int rc = 0;

    if (t != NULL) {
        r->out->dlq_present |= t->text == offsetof(struct xml_sub_attrs, dlq_target);
        return take_sub_text(c, t, r, ei);
    }
    if (f != NULL) {
        r->out->dlq_present = true;
        return parse_field(c, f, r->out, ei);
    }
    if (nested || !is_element(c, "DlqPolicy"))
        return 0;
    r->out->dlq_present = true;
    for (const xmlNode *g = c->children; g != NULL && rc == 0; g = g->next)
        rc = parse_sub_child(g, true, r, ei);
    return rc;
}

/* One child of <Subscription> itself (arg: the struct sub_reader). */
static int parse_sub_top_child(const xmlNode *c, void *arg, struct smq_errinfo *ei)
{
    return parse_sub_child(c, false, arg, ei);
}

int xml_parse_sub_attrs(const char *doc, size_t len, struct xml_sub_attrs *out,
                        struct smq_errinfo *ei)
{
    struct sub_reader r = {out, 0};
    int rc;

    memset(out, 0, sizeof *out);
    rc = walk_children(doc, len, "Subscription", parse_sub_top_child, &r, ei);
    if (rc != 0)
        memset(out, 0, sizeof *out);
    return rc;
}

/* ---- <Message> and <Messages> ------------------------------------------- */

/* MessageBody is stored byte-exact: no trimming, entities already decoded. */
static int parse_body(const xmlNode *el, struct xml_send_item *it, struct smq_errinfo *ei)
{
    struct smq_buf text;
    int rc;

    if (it->body_present)
        return duplicated("MessageBody", ei);
    buf_init(&text);
    buf_append(&text, "", 0);     /* an empty body is "", not NULL */
    rc = xml_leaf_text(el, &text, ei);
    if (rc != 0) {
        buf_free(&text);
        return rc;
    }
    it->body = buf_take(&text, &it->body_len);
    it->body_present = true;
    return 0;
}

static int parse_item(const xmlNode *msg, struct xml_send_item *it, struct smq_errinfo *ei)
{
    struct xml_ext ext;
    const xmlNode *c;
    int rc = 0;

    memset(it, 0, sizeof *it);
    xml_ext_init(&ext);
    for (c = msg->children; c != NULL && rc == 0; c = c->next) {
        const struct opt_field *f;

        if (is_element(c, "MessageBody")) {
            rc = parse_body(c, it, ei);
            continue;
        }
        f = find_field(send_fields, sizeof send_fields / sizeof send_fields[0], c);
        if (f != NULL)
            rc = parse_field(c, f, it, ei);
        else if (c->type == XML_ELEMENT_NODE && (rc = xml_ext_take(&ext, c, ei)) == 1)
            rc = 0;                /* an unknown element: ignored */
    }
    if (rc == 0)
        rc = xml_ext_finish(&ext, &it->ext, &it->ext_len, ei);
    else
        xml_ext_free(&ext);
    if (rc != 0)
        xml_send_item_free(it);
    return rc;
}

int xml_parse_send(const char *doc, size_t len, struct xml_send_item *out,
                   struct smq_errinfo *ei)
{
    xmlDocPtr d;
    xmlNodePtr root;
    int rc;

    memset(out, 0, sizeof *out);
    rc = xml_load_root(doc, len, "Message", &d, &root, ei);
    if (rc != 0)
        return rc;
    rc = parse_item(root, out, ei);
    xmlFreeDoc(d);
    return rc;
}

static size_t count_children(const xmlNode *parent, const char *name)
{
    const xmlNode *c;
    size_t n = 0;

    for (c = parent->children; c != NULL; c = c->next)
        if (is_element(c, name))
            n++;
    return n;
}

/* Counted before anything is copied, so an oversized batch costs nothing. */
static int check_batch_size(const xmlNode *root, const char *item, struct smq_errinfo *ei)
{
    size_t n = count_children(root, item);

    if (n >= 1 && n <= XML_BATCH_MAX)
        return 0;
    return errors_set(ei, SMQ_E_INVALID_ARGUMENT,
                      "The number of <%s> elements in <%s> should be between 1 and %d, got %zu.",
                      item, (const char *)root->name, XML_BATCH_MAX, n);
}

/* The <Message> items of a <Messages> root, into out (counted in out->n). */
static int parse_batch_items(xmlNodePtr root, struct xml_send_batch *out, struct smq_errinfo *ei)
{
    int rc = check_batch_size(root, "Message", ei);

    for (xmlNodePtr c = root->children; c != NULL && rc == 0; c = c->next) {
        if (!is_element(c, "Message"))
            continue;
        rc = parse_item(c, &out->items[out->n], ei);
        if (rc == 0)
            out->n++;
    }
    return rc;
}

int xml_parse_send_batch(const char *doc, size_t len, struct xml_send_batch *out,
                         struct smq_errinfo *ei)
{
    xmlDocPtr d;
    xmlNodePtr root;
    int rc;

    memset(out, 0, sizeof *out);
    rc = xml_load_root(doc, len, "Messages", &d, &root, ei);
    if (rc != 0)
        return rc;
    rc = parse_batch_items(root, out, ei);
    xmlFreeDoc(d);
    if (rc != 0)
        xml_send_batch_free(out);
    return rc;
}

/*
 * SendMessage and BatchSendMessage share a route: one parse serves both,
 * reading the root name and the items together.  A document that does not
 * load gets the default MalformedXML message, any other root the <Message>
 * one.
 */
int xml_parse_send_any(const char *doc, size_t len, struct xml_send_batch *out, int *root_kind,
                       struct smq_errinfo *ei)
{
    xmlDocPtr d;
    xmlNodePtr root;
    int rc;

    memset(out, 0, sizeof *out);
    *root_kind = -1;
    rc = xml_load_doc(doc, len, &d, NULL);
    if (rc != 0)
        return errors_set(ei, rc, NULL);
    root = xmlDocGetRootElement(d);
    *root_kind = strcmp((const char *)root->name, "Messages") == 0;
    if (*root_kind == 1) {
        rc = parse_batch_items(root, out, ei);
    } else if (strcmp((const char *)root->name, "Message") == 0) {
        rc = parse_item(root, &out->items[0], ei);
        if (rc == 0)
            out->n = 1;
    } else {
        rc = errors_set(ei, SMQ_E_MALFORMED_XML, "The XML you provided was not well-formed: "
                        "the root element must be <Message>.");
    }
    xmlFreeDoc(d);
    if (rc != 0)
        xml_send_batch_free(out);
    return rc;
}

/* ---- <Message> of PublishMessage (docs/protocol.md §13.5) ----------------- */

/* MessageTag: not trimmed, as FilterTag is not, since the two are compared
 * as they are (§13.8); empty means untagged. */
static int parse_tag(const xmlNode *el, bool *seen, struct xml_publish *out,
                     struct smq_errinfo *ei)
{
    struct smq_buf text;
    int rc;

    if (*seen)
        return duplicated("MessageTag", ei);
    *seen = true;
    buf_init(&text);
    rc = xml_leaf_text(el, &text, ei);
    if (rc == 0 && text.len >= sizeof out->tag)
        rc = errors_set(ei, SMQ_E_INVALID_ARGUMENT, "The value of MessageTag should have at "
                        "most %d characters.", SMQ_TAG_MAX_CHARS);
    if (rc == 0 && text.len > 0) {
        memcpy(out->tag, text.data, text.len);
        out->tag[text.len] = '\0';
    }
    buf_free(&text);
    return rc;
}

/* Only MessageBody and MessageTag are read: the attributes, the Java
 * extensions and anything else are not kept by a publish, so their content
 * is not judged either (only the document's well-formedness, §4). */
struct publish_reader {
    struct xml_publish *out;
    bool tag_seen;
};

static int parse_publish_child(const xmlNode *c, void *arg, struct smq_errinfo *ei)
{
    struct publish_reader *r = arg;
    struct xml_publish *out = r->out;
    struct xml_send_item body;
    int rc;

    if (is_element(c, "MessageTag"))
        return parse_tag(c, &r->tag_seen, out, ei);
    if (!is_element(c, "MessageBody"))
        return 0;
    if (out->body_present)
        return duplicated("MessageBody", ei);
    /* Read exactly as a SendMessage's body is (parse_body fills a send item). */
    memset(&body, 0, sizeof body);
    rc = parse_body(c, &body, ei);
    out->body = body.body;
    out->body_len = body.body_len;
    out->body_present = rc == 0;
    return rc;
}

int xml_parse_publish(const char *doc, size_t len, struct xml_publish *out,
                      struct smq_errinfo *ei)
{
    struct publish_reader r = {out, false};
    int rc;

    memset(out, 0, sizeof *out);
    rc = walk_children(doc, len, "Message", parse_publish_child, &r, ei);
    if (rc != 0)
        xml_publish_free(out);
    return rc;
}

/* ---- <ReceiptHandles> --------------------------------------------------- */

/* Handles are trimmed; an empty one is kept so that the caller can report
 * it per item as ReceiptHandleError, like any other malformed handle. */
static int parse_handle(const xmlNode *el, char **out, struct smq_errinfo *ei)
{
    struct smq_buf text;
    const char *s;
    size_t n;
    int rc;

    buf_init(&text);
    rc = xml_leaf_text(el, &text, ei);
    if (rc == 0) {
        s = text.data != NULL ? text.data : "";
        n = text.len;
        trim(&s, &n);
        *out = strndup(s, n);
        if (*out == NULL)
            rc = errors_set(ei, SMQ_E_NOMEM, NULL);
    }
    buf_free(&text);
    return rc;
}

int xml_parse_handles(const char *doc, size_t len, struct xml_handles *out,
                      struct smq_errinfo *ei)
{
    xmlDocPtr d;
    xmlNodePtr root, c;
    int rc;

    memset(out, 0, sizeof *out);
    rc = xml_load_root(doc, len, "ReceiptHandles", &d, &root, ei);
    if (rc != 0)
        return rc;
    rc = check_batch_size(root, "ReceiptHandle", ei);
    for (c = root->children; c != NULL && rc == 0; c = c->next) {
        if (!is_element(c, "ReceiptHandle"))
            continue;
        rc = parse_handle(c, &out->handles[out->n], ei);
        if (rc == 0)
            out->n++;
    }
    xmlFreeDoc(d);
    if (rc != 0)
        xml_handles_free(out);
    return rc;
}

/* ---- freeing ------------------------------------------------------------ */

void xml_send_item_free(struct xml_send_item *it)
{
    free(it->body);
    free(it->ext);
    memset(it, 0, sizeof *it);
}

void xml_publish_free(struct xml_publish *p)
{
    free(p->body);
    memset(p, 0, sizeof *p);
}

void xml_send_batch_free(struct xml_send_batch *b)
{
    size_t i;

    for (i = 0; i < b->n; i++)
        xml_send_item_free(&b->items[i]);
    b->n = 0;
}

void xml_handles_free(struct xml_handles *h)
{
    size_t i;

    for (i = 0; i < h->n; i++) {
        free(h->handles[i]);
        h->handles[i] = NULL;
    }
    h->n = 0;
}
