/*
 * xml_props.h — the Java SDK's message extensions (xml_props.c) as
 * xml_parse.c reads them out of a <Message>.  Private to the xml module:
 * xml_parse.c calls xml_props.c, never the other way round; both read the
 * tree through xml_doc.h.
 */
#ifndef SMQD_XML_PROPS_H
#define SMQD_XML_PROPS_H

#include <stdbool.h>
#include <stddef.h>

#include "smqd/buf.h"
#include "smqd/errors.h"
#include "xml_doc.h"

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
