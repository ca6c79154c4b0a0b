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

/* Appends el's character data (text and CDATA children; comments and
 * processing instructions are skipped, as an XML reader's text value would).
 * A known value element that contains elements is a schema violation
 * (SMQ_E_INVALID_ARGUMENT). */
int xml_leaf_text(const xmlNode *el, struct smq_buf *out, struct smq_errinfo *ei);

/* The Java SDK's extensions of one <Message> (xml_props.c), gathered
 * element by element while the message is read and then rendered as the
 * canonical fragment xml_send_item.ext holds. */
struct xml_ext {
    struct smq_buf user, system;    /* the rendered <UserProperties>, <SystemProperties> */
    struct smq_buf group;           /* the MessageGroupId text */
    struct smq_buf names;           /* user property names so far, each NUL-terminated */
    bool user_seen, system_seen, group_seen;
    size_t n_user;
    unsigned system_names;          /* bit i: system property name i given */
    size_t bytes;                   /* names and values so far */
};

void xml_ext_init(struct xml_ext *x);
void xml_ext_free(struct xml_ext *x);
/* Takes el if it is one of the extension elements: 0 taken, 1 not one of
 * them (nothing done), or an error with ei set. */
int xml_ext_take(struct xml_ext *x, const xmlNode *el, struct smq_errinfo *ei);
/* Moves the rendered fragment into *ext (NULL, 0 when the message carried
 * none) and frees x: 0 or SMQ_E_NOMEM. */
int xml_ext_finish(struct xml_ext *x, char **ext, size_t *ext_len, struct smq_errinfo *ei);

#endif
