/*
 * xml_doc.h — the xml module's insides, implemented by xml.c (libxml2, the
 * loading of a document and the text of a leaf element) and used by
 * xml_parse.c (reading the four request bodies from it) and xml_props.c (the
 * Java SDK's message extensions).  Nothing outside the module includes
 * this: it is where libxml2's tree types show.
 */
#ifndef SMQD_XML_DOC_H
#define SMQD_XML_DOC_H

#include <stddef.h>

#include <libxml/tree.h>

#include "smqd/xml.h"

/* Parses doc into *out (the caller frees it with xmlFreeDoc), refusing a
 * DTD, entities, unbound prefixes, NULs and deep nesting: 0, or
 * SMQ_E_MALFORMED_XML / SMQ_E_NOMEM with ei set (ei may be NULL). */
int xml_load_doc(const char *doc, size_t len, xmlDocPtr *out, struct smq_errinfo *ei);
/* Like xml_load_doc, and the root element's local name must be root_name. */
int xml_load_root(const char *doc, size_t len, const char *root_name, xmlDocPtr *out,
                  xmlNodePtr *root, struct smq_errinfo *ei);

/* Appends el's character data (text and CDATA children; comments and
 * processing instructions are skipped, as an XML reader's text value would).
 * A known value element that contains elements is a schema violation
 * (SMQ_E_INVALID_ARGUMENT). */
int xml_leaf_text(const xmlNode *el, struct smq_buf *out, struct smq_errinfo *ei);

#endif
