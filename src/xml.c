/*
 * xml.c — owns every use of libxml2: parsing the four request bodies
 * (<Queue>, <Message>, <Messages>, <ReceiptHandles>) into plain structs, and
 * writing compact response documents (protocol §4, §8.1).
 *
 * Parsing is defensive because bodies come from unauthenticated-until-
 * verified clients: no DTD is accepted (that alone rules out entity
 * expansion and external entities), nothing is loaded from disk or network,
 * nesting is bounded, and libxml2 never prints.  Each thread parses with a
 * parser context of its own, kept between its parses, so concurrent parses
 * on HTTP threads share no state.
 */
#include "smqd/xml.h"
#include "smqd/strnum.h"
#include "smqd/utf8.h"

#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <libxml/SAX2.h>
#include <libxml/catalog.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>

/*
 * A thread's parser context is kept between its parses: creating one (with
 * its dictionary, input and node stacks) and freeing it cost ~4,500
 * instructions and ~25 allocations per request (callgrind, SendMessage).
 * What a parse leaves in the context is reset as soon as it ends, so the
 * kept context holds none of a client's document.  The dictionary is not
 * reset: it keeps the names it has seen (element names, namespace URIs,
 * short or blank texts), and those are client-chosen; a context whose
 * dictionary holds more than PARSER_DICT_MAX names or has allocated more
 * than PARSER_DICT_BYTES of string pools is replaced instead of kept.  Both bounds matter: long names fill
 * the bytes with few entries, and a dictionary that reached libxml2's own
 * limit would refuse the names of the next client's document.  Our own
 * vocabulary is a few dozen short names.
 */
#define PARSER_DICT_MAX 512
#define PARSER_DICT_BYTES (64 * 1024)

/* Our deepest legitimate element is Messages/Message/UserProperties/
 * PropertyValue/Name (5); 8 leaves room for harmless client additions. */
#define XML_MAX_DEPTH 8

/*
 * No XML_PARSE_NOENT / DTDLOAD / DTDATTR / XINCLUDE: nothing outside the
 * body is ever read.  NOERROR/NOWARNING keep libxml2 quiet.  The "UTF-8"
 * passed to xmlCtxtReadMemory (IGNORE_ENC says the same) overrides the
 * declaration, so a body is UTF-8 whatever it claims, invalid UTF-8 is a
 * well-formedness error, and UTF-16 bodies (no SDK sends them) are refused.
 */
#define PARSE_OPTIONS (XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING | \
                       XML_PARSE_IGNORE_ENC)

/* ---- libxml2 setup ------------------------------------------------------ */

static void discard_generic_error(void *ctx, const char *msg, ...)
{
    (void)ctx;
    (void)msg;
}

static void discard_structured_error(void *ctx, xmlErrorPtr err)
{
    (void)ctx;
    (void)err;
}

/* ---- the per-thread parser context ----------------------------------------- */

static pthread_once_t parser_once = PTHREAD_ONCE_INIT;
static pthread_key_t parser_key;
static bool parser_key_ok;

static void parser_free(void *ctxt)
{
    xmlFreeParserCtxt(ctxt);
}

static void parser_key_init(void)
{
    parser_key_ok = pthread_key_create(&parser_key, parser_free) == 0;
}

static void on_internal_subset(void *ctx, const xmlChar *name, const xmlChar *external_id,
                               const xmlChar *system_id);
static void on_start_element(void *ctx, const xmlChar *localname, const xmlChar *prefix,
                             const xmlChar *uri, int nb_namespaces, const xmlChar **namespaces,
                             int nb_attributes, int nb_defaulted, const xmlChar **attributes);

static xmlParserCtxtPtr parser_new(void)
{
    xmlParserCtxtPtr ctxt = xmlNewParserCtxt();

    if (ctxt == NULL)
        return NULL;
    ctxt->sax->internalSubset = on_internal_subset;
    ctxt->sax->startElementNs = on_start_element;
    ctxt->sax->serror = discard_structured_error;   /* per context: thread-safe */
    return ctxt;
}

/* The context this thread keeps, or NULL. */
static xmlParserCtxtPtr kept_ctxt(void)
{
    pthread_once(&parser_once, parser_key_init);
    return parser_key_ok ? pthread_getspecific(parser_key) : NULL;
}

/* This thread's context, made (and kept) on first use; NULL when out of
 * memory.  A thread that cannot keep one gets a fresh one each time. */
static xmlParserCtxtPtr parser_acquire(void)
{
    xmlParserCtxtPtr ctxt = kept_ctxt();

    if (ctxt == NULL && (ctxt = parser_new()) != NULL && parser_key_ok)
        pthread_setspecific(parser_key, ctxt);
    return ctxt;
}

/*
 * Keeps ctxt, reset, for this thread's next parse when the parse just made
 * ended cleanly and its dictionary is within the bounds above; frees it
 * otherwise.  A document that failed or was stopped part-way leaves its
 * stacks (namespace bindings among them) behind; libxml2 2.9.14's reset
 * clears them (test_xml checks that no binding crosses documents), but a
 * broken request is rare enough that its context is simply not trusted.
 * A document parsed with ctxt holds its own reference to the dictionary,
 * so freeing ctxt never frees a live tree's names.
 */
static void parser_release(xmlParserCtxtPtr ctxt, bool clean)
{
    bool keep = clean && ctxt->nsNr == 0 && ctxt->nameNr == 0 && ctxt->nodeNr == 0
                && ctxt->catalogs == NULL && xmlDictSize(ctxt->dict) <= PARSER_DICT_MAX
                && xmlDictGetUsage(ctxt->dict) <= PARSER_DICT_BYTES;

    ctxt->_private = NULL;
    if (keep && ctxt == kept_ctxt()) {
        xmlCtxtReset(ctxt);            /* drops the input (a copy of the body) now */
        return;
    }
    if (ctxt == kept_ctxt())
        pthread_setspecific(parser_key, NULL);
    xmlFreeParserCtxt(ctxt);
}

void xml_thread_cleanup(void)
{
    xmlParserCtxtPtr ctxt = kept_ctxt();

    if (ctxt != NULL)
        parser_release(ctxt, false);
}

size_t xml_parser_names(void)
{
    xmlParserCtxtPtr ctxt = kept_ctxt();

    return ctxt != NULL ? (size_t)xmlDictSize(ctxt->dict) : 0;
}

void xml_global_init(void)
{
    xmlInitParser();
    /* No catalogs, neither the system's nor one a document names with an
     * <?oasis-xml-catalog?> instruction: a body must not make the parser
     * look anything up.  (libxml2 2.9.14's xmlCtxtReset also leaks a
     * document's catalog list, which a kept context would pay per request:
     * found by review.) */
    xmlCatalogSetDefaults(XML_CATA_ALLOW_NONE);
    /* libxml2's error handlers are per-thread globals: the ThrDef variants
     * set the default every HTTP thread starts with, the others this one. */
    xmlThrDefSetGenericErrorFunc(NULL, discard_generic_error);
    xmlThrDefSetStructuredErrorFunc(NULL, discard_structured_error);
    xmlSetGenericErrorFunc(NULL, discard_generic_error);
    xmlSetStructuredErrorFunc(NULL, discard_structured_error);
}

void xml_global_cleanup(void)
{
    /* Other threads' contexts go with their threads (parser_free); the
     * calling thread's would outlive the parser library otherwise. */
    xml_thread_cleanup();
    xmlCleanupParser();
}

/* ---- document loading --------------------------------------------------- */

/* Why a parse was stopped from inside a SAX callback (NULL: not stopped). */
struct parse_guard {
    const char *refused;
};

static int malformed(struct smq_errinfo *ei, const char *why)
{
    if (why == NULL)
        return errors_set(ei, SMQ_E_MALFORMED_XML, NULL);
    return errors_set(ei, SMQ_E_MALFORMED_XML, "The XML you provided was not well-formed: %s.",
                      why);
}

static void refuse(xmlParserCtxtPtr ctxt, const char *why)
{
    struct parse_guard *g = ctxt->_private;

    if (g->refused == NULL)
        g->refused = why;
    xmlStopParser(ctxt);
}

/* Called at "<!DOCTYPE name ...", before any declaration in the internal
 * subset is read: stopping here means no entity is ever defined. */
static void on_internal_subset(void *ctx, const xmlChar *name, const xmlChar *external_id,
                               const xmlChar *system_id)
{
    (void)name;
    (void)external_id;
    (void)system_id;
    refuse(ctx, "document type declarations are not accepted");
}

/* Bounds nesting while parsing, so a deep document costs nothing. */
static void on_start_element(void *ctx, const xmlChar *localname, const xmlChar *prefix,
                             const xmlChar *uri, int nb_namespaces, const xmlChar **namespaces,
                             int nb_attributes, int nb_defaulted, const xmlChar **attributes)
{
    xmlParserCtxtPtr ctxt = ctx;

    if (ctxt->nameNr >= XML_MAX_DEPTH) {
        refuse(ctxt, "elements are nested too deeply");
        return;
    }
    xmlSAX2StartElementNs(ctx, localname, prefix, uri, nb_namespaces, namespaces,
                          nb_attributes, nb_defaulted, attributes);
}

/*
 * Returns why the tree is refused, or NULL.  Entity nodes are belt and
 * braces: without a DTD only the predefined entities exist and libxml2
 * always expands those.  An unbound prefix is a namespace error that
 * libxml2 lets through with the prefix kept in the name ("m:Priority"):
 * matching by name would then silently skip the element.  (ctxt->nsWellFormed
 * is not used because a mere warning, a relative namespace URI, clears it.)
 * Recursion is bounded by XML_MAX_DEPTH.
 */
static const char *refused_node(const xmlNode *n)
{
    const char *why;

    for (; n != NULL; n = n->next) {
        if (n->type == XML_ENTITY_REF_NODE || n->type == XML_ENTITY_NODE ||
            n->type == XML_ENTITY_DECL || n->type == XML_DTD_NODE)
            return "entity references are not accepted";
        if (n->type != XML_ELEMENT_NODE)
            continue;
        if (n->ns == NULL && strchr((const char *)n->name, ':') != NULL)
            return "an element prefix is not bound to a namespace";
        why = refused_node(n->children);
        if (why != NULL)
            return why;
    }
    return NULL;
}

static int check_parsed(const xmlParserCtxt *ctxt, const xmlDoc *d, struct smq_errinfo *ei)
{
    const struct parse_guard *g = ctxt->_private;
    const char *why;

    if (g->refused != NULL)
        return malformed(ei, g->refused);
    if (ctxt->errNo == XML_ERR_NO_MEMORY)
        return errors_set(ei, SMQ_E_NOMEM, NULL);
    if (d == NULL || !ctxt->wellFormed)
        return malformed(ei, NULL);
    if (d->intSubset != NULL || d->extSubset != NULL)
        return malformed(ei, "document type declarations are not accepted");
    if (xmlDocGetRootElement(d) == NULL)
        return malformed(ei, "the document has no root element");
    why = refused_node(d->children);
    return why != NULL ? malformed(ei, why) : 0;
}

/* Parses doc into *out (the caller frees it with xmlFreeDoc). */
static int load_doc(const char *doc, size_t len, xmlDocPtr *out, struct smq_errinfo *ei)
{
    struct parse_guard guard = {NULL};
    xmlParserCtxtPtr ctxt;
    xmlDocPtr d;
    int rc;

    *out = NULL;
    if (doc == NULL || len == 0)
        return malformed(ei, "the body is empty");
    if (len > INT_MAX)
        return malformed(ei, "the body is too large");
    /* libxml2 takes a NUL after the root element for end of input and would
     * accept the document; a NUL is never legal XML, so refuse it here. */
    if (memchr(doc, '\0', len) != NULL)
        return malformed(ei, "NUL characters are not allowed");

    ctxt = parser_acquire();
    if (ctxt == NULL)
        return errors_set(ei, SMQ_E_NOMEM, NULL);
    ctxt->_private = &guard;

    d = xmlCtxtReadMemory(ctxt, doc, (int)len, NULL, "UTF-8", PARSE_OPTIONS);
    rc = check_parsed(ctxt, d, ei);
    parser_release(ctxt, rc == 0);
    if (rc != 0) {
        xmlFreeDoc(d);
        return rc;
    }
    *out = d;
    return 0;
}

/* Like load_doc, and the root element's local name must be root_name. */
static int load_root(const char *doc, size_t len, const char *root_name, xmlDocPtr *out,
                     xmlNodePtr *root, struct smq_errinfo *ei)
{
    int rc = load_doc(doc, len, out, ei);

    if (rc != 0)
        return rc;
    *root = xmlDocGetRootElement(*out);
    if (strcmp((const char *)(*root)->name, root_name) != 0) {
        xmlFreeDoc(*out);
        *out = NULL;
        return errors_set(ei, SMQ_E_MALFORMED_XML, "The XML you provided was not well-formed: "
                          "the root element must be <%s>.", root_name);
    }
    return 0;
}

int xml_root_name(const char *doc, size_t len, char *name, size_t name_size)
{
    xmlDocPtr d;
    size_t n;
    int rc = load_doc(doc, len, &d, NULL);

    if (rc != 0)
        return rc;
    n = strlen((const char *)xmlDocGetRootElement(d)->name);
    if (n < name_size)
        memcpy(name, xmlDocGetRootElement(d)->name, n + 1);
    else
        rc = SMQ_E_MALFORMED_XML;     /* longer than any root we know */
    xmlFreeDoc(d);
    return rc;
}

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

/*
 * Appends el's character data (text and CDATA children; comments and
 * processing instructions are skipped, as an XML reader's text value would).
 * A known value element that contains elements is a schema violation.
 */
static int leaf_text(const xmlNode *el, struct smq_buf *out, struct smq_errinfo *ei)
{
    const xmlNode *c;

    for (c = el->children; c != NULL; c = c->next) {
        if (c->type == XML_TEXT_NODE || c->type == XML_CDATA_SECTION_NODE)
            buf_puts(out, (const char *)c->content);
        else if (c->type == XML_ELEMENT_NODE)
            return errors_set(ei, SMQ_E_INVALID_ARGUMENT,
                              "The element %s must contain text only.", (const char *)el->name);
    }
    if (buf_failed(out))
        return errors_set(ei, SMQ_E_NOMEM, NULL);
    return 0;
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
    rc = leaf_text(el, &text, ei);
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
    rc = leaf_text(el, &text, ei);
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

/* One child of <Queue>. */
static int parse_queue_child(const xmlNode *c, struct xml_queue_attrs *out,
                             struct smq_errinfo *ei)
{
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
    xmlDocPtr d;
    xmlNodePtr root, c;
    int rc;

    memset(out, 0, sizeof *out);
    rc = load_root(doc, len, "Queue", &d, &root, ei);
    if (rc != 0)
        return rc;
    for (c = root->children; c != NULL && rc == 0; c = c->next)
        rc = parse_queue_child(c, out, ei);
    xmlFreeDoc(d);
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
    rc = leaf_text(el, &text, ei);
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
    const xmlNode *c;
    int rc = 0;

    memset(it, 0, sizeof *it);
    for (c = msg->children; c != NULL && rc == 0; c = c->next) {
        const struct opt_field *f;

        if (is_element(c, "MessageBody")) {
            rc = parse_body(c, it, ei);
            continue;
        }
        f = find_field(send_fields, sizeof send_fields / sizeof send_fields[0], c);
        if (f != NULL)
            rc = parse_field(c, f, it, ei);
    }
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
    rc = load_root(doc, len, "Message", &d, &root, ei);
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
    rc = load_root(doc, len, "Messages", &d, &root, ei);
    if (rc != 0)
        return rc;
    rc = parse_batch_items(root, out, ei);
    xmlFreeDoc(d);
    if (rc != 0)
        xml_send_batch_free(out);
    return rc;
}

/*
 * SendMessage and BatchSendMessage share a route: one parse serves both
 * (it used to take two, one for the root name and one for the items).
 * Errors read as they did then: a document that does not load gets the
 * default MalformedXML message, any other root the <Message> one.
 */
int xml_parse_send_any(const char *doc, size_t len, struct xml_send_batch *out, int *root_kind,
                       struct smq_errinfo *ei)
{
    xmlDocPtr d;
    xmlNodePtr root;
    int rc;

    memset(out, 0, sizeof *out);
    *root_kind = -1;
    rc = load_doc(doc, len, &d, NULL);
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
    rc = leaf_text(el, &text, ei);
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
    rc = load_root(doc, len, "ReceiptHandles", &d, &root, ei);
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
    memset(it, 0, sizeof *it);
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

/* ---- writing ------------------------------------------------------------ */

/*
 * Length of the XML 1.0 Char encoded in UTF-8 at p, or 0 when the bytes are
 * not one (invalid or overlong UTF-8, C0 controls other than TAB/LF/CR,
 * surrogates, U+FFFE, U+FFFF).
 */
static size_t xml_char_len(const unsigned char *p, size_t avail)
{
    uint32_t cp;
    size_t n = utf8_decode(p, avail, &cp);

    if (n == 0 || cp == 0xFFFE || cp == 0xFFFF)
        return 0;
    if (cp < 0x20 && cp != '\t' && cp != '\n' && cp != '\r')
        return 0;
    return n;
}

static const char *escape_for(unsigned char c)
{
    switch (c) {
    case '&': return "&amp;";
    case '<': return "&lt;";
    case '>': return "&gt;";
    case '\r': return "&#13;";     /* a literal CR would be read back as LF */
    default: return NULL;
    }
}

/*
 * Text that came through the parser (message bodies) is always valid XML
 * characters and is written byte-exact.  Other strings (request ids, host
 * ids, validated queue names, error messages that may quote client input)
 * are expected to be valid too, but so that a response is never ill-formed
 * whatever they hold, each byte that does not start a valid XML Char is
 * written as U+FFFD.
 */
/*
 * True when none of the 8 bytes at p needs a look: each is printable ASCII
 * (0x20-0x7F) other than & < >.  Word-at-a-time tests ("Bit Twiddling
 * Hacks": a byte below n, a byte equal to c); each says exactly whether any
 * byte of the word matches, which is all that is asked here.
 */
static bool plain8(const unsigned char *p)
{
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    uint64_t x, amp, lt, gt;

    memcpy(&x, p, sizeof x);
    amp = x ^ (ones * '&');
    lt = x ^ (ones * '<');
    gt = x ^ (ones * '>');
    return ((x & highs) | ((x - ones * 0x20) & ~x & highs) | ((amp - ones) & ~amp & highs)
            | ((lt - ones) & ~lt & highs) | ((gt - ones) & ~gt & highs)) == 0;
}

void xml_escape(struct smq_buf *b, const char *text, size_t len)
{
    const unsigned char *p = (const unsigned char *)text, *end = p + len, *run = p;

    while (p < end) {
        const char *rep;
        size_t n = 1;

        /* Fast paths for what message bodies are mostly made of: printable
         * ASCII other than & < >, which is written as it is, eight bytes at
         * a time where possible (the general path below costs a switch and
         * a UTF-8 decode per byte: ~17 instructions per body byte). */
        if (end - p >= 8 && plain8(p)) {
            p += 8;
            continue;
        }
        if ((*p >= 0x20 && *p < 0x80 && *p != '&' && *p != '<' && *p != '>')
            || *p == '\n' || *p == '\t') {
            p++;
            continue;
        }
        rep = escape_for(*p);
        if (rep == NULL) {
            n = xml_char_len(p, (size_t)(end - p));
            if (n > 0) {
                p += n;
                continue;
            }
            rep = "\xEF\xBF\xBD";
            n = 1;
        }
        buf_append(b, run, (size_t)(p - run));
        buf_puts(b, rep);
        p += n;
        run = p;
    }
    buf_append(b, run, (size_t)(p - run));
}

/* Element names are compile-time constants that are valid XML names. */
void xml_begin(struct smq_buf *b, const char *root)
{
    buf_puts(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?><");
    buf_puts(b, root);
    buf_puts(b, " xmlns=\"" XML_MNS_NS "\">");
}

/* One append per tag (three buf_puts each cost a strlen and a capacity check). */
static void put_tag(struct smq_buf *b, const char *name, bool closing)
{
    char tag[64];
    size_t n = strlen(name), o = 0;

    if (n + 3 > sizeof tag) {           /* never for our names; stay correct anyway */
        buf_puts(b, closing ? "</" : "<");
        buf_puts(b, name);
        buf_puts(b, ">");
        return;
    }
    tag[o++] = '<';
    if (closing)
        tag[o++] = '/';
    memcpy(tag + o, name, n);
    o += n;
    tag[o++] = '>';
    buf_append(b, tag, o);
}

void xml_open(struct smq_buf *b, const char *name)
{
    put_tag(b, name, false);
}

void xml_close(struct smq_buf *b, const char *name)
{
    put_tag(b, name, true);
}

void xml_elem_text(struct smq_buf *b, const char *name, const char *text, size_t len)
{
    xml_open(b, name);
    xml_escape(b, text, len);
    xml_close(b, name);
}

/* NULL is written as an empty element, so required elements never vanish. */
void xml_elem_str(struct smq_buf *b, const char *name, const char *text)
{
    if (text == NULL)
        text = "";
    xml_elem_text(b, name, text, strlen(text));
}

void xml_elem_i64(struct smq_buf *b, const char *name, int64_t v)
{
    xml_open(b, name);
    buf_append_i64(b, v);
    xml_close(b, name);
}

void xml_elem_bool(struct smq_buf *b, const char *name, bool v)
{
    xml_open(b, name);
    buf_puts(b, v ? "True" : "False");
    xml_close(b, name);
}

void xml_error_doc(struct smq_buf *b, const char *code, const char *message,
                   const char *request_id, const char *host_id)
{
    xml_begin(b, "Error");
    xml_elem_str(b, "Code", code);
    xml_elem_str(b, "Message", message);
    xml_elem_str(b, "RequestId", request_id);
    xml_elem_str(b, "HostId", host_id);
    xml_close(b, "Error");
}
