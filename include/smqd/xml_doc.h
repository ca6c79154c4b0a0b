/*
 * xml_doc.h — the xml module's insides, shared by xml.c (libxml2 and the
 * loading of a document) and xml_parse.c (reading the four request bodies
 * from it).  Nothing outside the module includes this: it is where
 * libxml2's tree types show.
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

#endif
