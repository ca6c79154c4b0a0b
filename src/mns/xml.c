/*
 * xml.c — owns libxml2 itself (xml_doc.h): its global setup, the parser
 * context each thread keeps, the loading of a request body into a
 * checked document tree, which xml_parse.c and xml_props.c then read, and
 * the one reading of the tree both of them need (a leaf element's text).
 *
 * Parsing is defensive because bodies come from unauthenticated-until-
 * verified clients: no DTD is accepted (that alone rules out entity
 * expansion and external entities), nothing is loaded from disk or network,
 * nesting is bounded, and libxml2 never prints.  Each thread parses with a
 * parser context of its own, kept between its parses, so concurrent parses
 * on HTTP threads share no state.
 */
#include "xml_doc.h"

#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/SAX2.h>
#include <libxml/catalog.h>
#include <libxml/parser.h>
#include <libxml/xmlerror.h>

/*
 * A thread's parser context is kept between its parses: creating one (with
 * its dictionary, input and node stacks) and freeing it would cost a few
 * dozen allocations on every request.
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
     * look anything up; and libxml2 2.9.14's xmlCtxtReset leaks a
     * document's catalog list, which a kept context would pay per request. */
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

int xml_load_doc(const char *doc, size_t len, xmlDocPtr *out, struct smq_errinfo *ei)
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

int xml_load_root(const char *doc, size_t len, const char *root_name, xmlDocPtr *out,
                  xmlNodePtr *root, struct smq_errinfo *ei)
{
    int rc = xml_load_doc(doc, len, out, ei);

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

/* ---- reading the tree ---------------------------------------------------- */

int xml_leaf_text(const xmlNode *el, struct smq_buf *out, struct smq_errinfo *ei)
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

int xml_root_name(const char *doc, size_t len, char *name, size_t name_size)
{
    xmlDocPtr d;
    size_t n;
    int rc = xml_load_doc(doc, len, &d, NULL);

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
