/*
 * xml_props.c — owns the Java SDK's message extensions in a <Message> of
 * SendMessage (xml_props.h, docs/protocol.md §6.4): <UserProperties>,
 * <SystemProperties> and <MessageGroupId>, their checks, and the canonical
 * XML fragment they are stored as and returned in.
 *
 * Every check here is one the Java SDK's receive decoder would otherwise
 * fail on later, in a consumer: an unknown property type or system
 * property name, a NUMBER it cannot parse, a BOOLEAN that is not
 * true/false.  Refusing the send keeps such a message out of the queue.
 */
#include "xml_doc.h"
#include "xml_props.h"

#include <string.h>
#include <strings.h>

static const char *const user_types[] = {"NUMBER", "STRING", "BOOLEAN", "BINARY"};

/* The system property names the Java SDK decodes; any other makes it throw. */
static const char *const system_names[] = {"traceparent", "tracestate", "baggage",
                                           "DLQMessageType", "DLQSourceArn",
                                           "DLQOriginMessageId"};

#define N_OF(a) (sizeof (a) / sizeof (a)[0])

/* A buffer's text ("" for an empty one, whose data may be NULL). */
static const char *text_of(const struct smq_buf *b)
{
    return b->len > 0 ? b->data : "";
}

void xml_ext_init(struct xml_ext *x)
{
    memset(x, 0, sizeof *x);
    buf_init(&x->user);
    buf_init(&x->system);
    buf_init(&x->group);
    buf_init(&x->names);
}

void xml_ext_free(struct xml_ext *x)
{
    buf_free(&x->user);
    buf_free(&x->system);
    buf_free(&x->group);
    buf_free(&x->names);
}

static bool is_element(const xmlNode *n, const char *name)
{
    return n->type == XML_ELEMENT_NODE && strcmp((const char *)n->name, name) == 0;
}

static int invalid(struct smq_errinfo *ei, const char *what)
{
    return errors_set(ei, SMQ_E_INVALID_ARGUMENT, "%s", what);
}

/* ---- value syntax --------------------------------------------------------------- */

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static size_t digits(const char *s, size_t len, size_t i)
{
    size_t start = i;

    while (i < len && is_digit(s[i]))
        i++;
    return i - start;
}

/* A decimal number: [+-] digits [. digits] [(e|E) [+-] digits], with at
 * least one digit before or after the point — a form every SDK's number
 * parser reads the same. */
static bool is_decimal(const char *s, size_t len)
{
    size_t i = 0, whole, frac = 0;

    if (i < len && (s[i] == '+' || s[i] == '-'))
        i++;
    whole = digits(s, len, i);
    i += whole;
    if (i < len && s[i] == '.') {
        frac = digits(s, len, i + 1);
        i += 1 + frac;
    }
    if (whole + frac == 0)
        return false;
    if (i < len && (s[i] == 'e' || s[i] == 'E')) {
        size_t exp;
        i++;
        if (i < len && (s[i] == '+' || s[i] == '-'))
            i++;
        exp = digits(s, len, i);
        if (exp == 0)
            return false;
        i += exp;
    }
    return i == len;
}

static bool is_b64_char(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || is_digit(c) || c == '+' || c == '/';
}

/* Standard base64 with its padding, as the Java SDK writes BINARY values. */
static bool is_base64(const char *s, size_t len)
{
    size_t pad = 0;

    if (len % 4 != 0)
        return false;
    while (pad < 2 && pad < len && s[len - 1 - pad] == '=')
        pad++;
    for (size_t i = 0; i < len - pad; i++)
        if (!is_b64_char(s[i]))
            return false;
    return true;
}

static int check_user_value(const char *type, const struct smq_buf *v, struct smq_errinfo *ei)
{
    const char *s = text_of(v);

    if (strcmp(type, "NUMBER") == 0 && !is_decimal(s, v->len))
        return invalid(ei, "The Value of a NUMBER property should be a decimal number.");
    if (strcmp(type, "BOOLEAN") == 0
        && !((v->len == 4 && strncasecmp(s, "true", 4) == 0)
             || (v->len == 5 && strncasecmp(s, "false", 5) == 0)))
        return invalid(ei, "The Value of a BOOLEAN property should be true or false.");
    if (strcmp(type, "BINARY") == 0 && !is_base64(s, v->len))
        return invalid(ei, "The Value of a BINARY property should be base64.");
    return 0;
}

/* ---- one <PropertyValue> / <SystemPropertyValue> --------------------------------- */

struct prop {
    struct smq_buf name, value, type;
    bool has_name, has_value, has_type;
};

static int prop_part(const xmlNode *c, const char *part, struct smq_buf *text, bool *seen,
                     struct smq_errinfo *ei)
{
    if (*seen)
        return errors_set(ei, SMQ_E_MALFORMED_XML,
                          "The XML you provided was not well-formed: duplicated element <%s>.", part);
    *seen = true;
    return xml_leaf_text(c, text, ei);
}

/* Reads Name, Value and Type (each exactly once; other children ignored). */
static int prop_read(const xmlNode *el, struct prop *p, struct smq_errinfo *ei)
{
    int rc = 0;

    for (const xmlNode *c = el->children; c != NULL && rc == 0; c = c->next) {
        if (is_element(c, "Name"))
            rc = prop_part(c, "Name", &p->name, &p->has_name, ei);
        else if (is_element(c, "Value"))
            rc = prop_part(c, "Value", &p->value, &p->has_value, ei);
        else if (is_element(c, "Type"))
            rc = prop_part(c, "Type", &p->type, &p->has_type, ei);
    }
    if (rc == 0 && !(p->has_name && p->has_value && p->has_type))
        rc = errors_set(ei, SMQ_E_INVALID_ARGUMENT,
                        "Each <%s> needs a Name, a Value and a Type.", (const char *)el->name);
    if (rc == 0 && (buf_failed(&p->name) || buf_failed(&p->value) || buf_failed(&p->type)))
        rc = errors_set(ei, SMQ_E_NOMEM, NULL);
    return rc;
}

/* The index of the text of s in names[0..n), or -1. */
static int find_name(const char *const *names, size_t n, const struct smq_buf *s)
{
    for (size_t i = 0; i < n; i++)
        if (strlen(names[i]) == s->len && memcmp(names[i], text_of(s), s->len) == 0)
            return (int)i;
    return -1;
}

static bool user_name_taken(const struct xml_ext *x, const struct smq_buf *name)
{
    size_t at = 0;

    while (at < x->names.len) {
        const char *n = x->names.data + at;
        size_t len = strlen(n);
        if (len == name->len && memcmp(n, name->data, len) == 0)
            return true;
        at += len + 1;
    }
    return false;
}

static int count_bytes(struct xml_ext *x, size_t more, struct smq_errinfo *ei)
{
    x->bytes += more;
    if (x->bytes > XML_EXT_BYTES_MAX)
        return errors_set(ei, SMQ_E_INVALID_ARGUMENT, "The names and values of a message's "
                          "properties should not exceed %d bytes in all.", XML_EXT_BYTES_MAX);
    return 0;
}

static int check_user(struct xml_ext *x, const struct prop *p, struct smq_errinfo *ei)
{
    if (++x->n_user > XML_USER_PROPS_MAX)
        return errors_set(ei, SMQ_E_INVALID_ARGUMENT,
                          "A message should not have more than %d user properties.",
                          XML_USER_PROPS_MAX);
    if (p->name.len < 1 || p->name.len > XML_PROP_NAME_MAX)
        return errors_set(ei, SMQ_E_INVALID_ARGUMENT,
                          "The Name of a property should be between 1 and %d bytes.",
                          XML_PROP_NAME_MAX);
    if (user_name_taken(x, &p->name))
        return invalid(ei, "A message should not have two user properties of the same Name.");
    if (find_name(user_types, N_OF(user_types), &p->type) < 0)
        return invalid(ei, "The Type of a user property should be NUMBER, STRING, BOOLEAN "
                       "or BINARY.");
    return check_user_value(text_of(&p->type), &p->value, ei);
}

static int check_system(struct xml_ext *x, const struct prop *p, struct smq_errinfo *ei)
{
    int i = find_name(system_names, N_OF(system_names), &p->name);

    if (i < 0)
        return invalid(ei, "The Name of a system property should be traceparent, tracestate, "
                       "baggage, DLQMessageType, DLQSourceArn or DLQOriginMessageId.");
    if (x->system_names & (1u << i))
        return invalid(ei, "A message should not have two system properties of the same Name.");
    x->system_names |= 1u << i;
    if (strcmp(text_of(&p->type), "STRING") != 0)
        return invalid(ei, "The Type of a system property should be STRING.");
    return 0;
}

static void render_prop(struct smq_buf *out, const char *tag, const struct prop *p)
{
    xml_open(out, tag);
    xml_elem_text(out, "Name", p->name.data, p->name.len);
    xml_elem_text(out, "Value", p->value.data, p->value.len);
    xml_elem_str(out, "Type", text_of(&p->type));
    xml_close(out, tag);
}

/* One property of a list: read, checked, counted and rendered into out. */
static int take_prop(struct xml_ext *x, const xmlNode *el, bool user, struct smq_buf *out,
                     struct smq_errinfo *ei)
{
    struct prop p = {0};
    int rc;

    buf_init(&p.name);
    buf_init(&p.value);
    buf_init(&p.type);
    rc = prop_read(el, &p, ei);
    if (rc == 0)
        rc = user ? check_user(x, &p, ei) : check_system(x, &p, ei);
    if (rc == 0)
        rc = count_bytes(x, p.name.len + p.value.len, ei);
    if (rc == 0 && user) {
        buf_append(&x->names, p.name.data, p.name.len);
        buf_append(&x->names, "", 1);
    }
    if (rc == 0)
        render_prop(out, user ? "PropertyValue" : "SystemPropertyValue", &p);
    buf_free(&p.name);
    buf_free(&p.value);
    buf_free(&p.type);
    return rc;
}

/* ---- the three elements ---------------------------------------------------------- */

static int duplicated(const xmlNode *el, struct smq_errinfo *ei)
{
    return errors_set(ei, SMQ_E_MALFORMED_XML,
                      "The XML you provided was not well-formed: duplicated element <%s>.",
                      (const char *)el->name);
}

static int take_list(struct xml_ext *x, const xmlNode *el, bool user, struct smq_errinfo *ei)
{
    struct smq_buf *out = user ? &x->user : &x->system;
    const char *item = user ? "PropertyValue" : "SystemPropertyValue";
    int rc = 0;

    xml_open(out, (const char *)el->name);
    for (const xmlNode *c = el->children; c != NULL && rc == 0; c = c->next)
        if (is_element(c, item))
            rc = take_prop(x, c, user, out, ei);
    xml_close(out, (const char *)el->name);
    return rc;
}

static int take_group(struct xml_ext *x, const xmlNode *el, struct smq_errinfo *ei)
{
    int rc = xml_leaf_text(el, &x->group, ei);

    if (rc == 0 && x->group.len > XML_GROUP_ID_MAX)
        rc = errors_set(ei, SMQ_E_INVALID_ARGUMENT,
                        "The MessageGroupId should not be longer than %d bytes.", XML_GROUP_ID_MAX);
    return rc != 0 ? rc : count_bytes(x, x->group.len, ei);
}

int xml_ext_take(struct xml_ext *x, const xmlNode *el, struct smq_errinfo *ei)
{
    bool *seen;

    if (is_element(el, "UserProperties"))
        seen = &x->user_seen;
    else if (is_element(el, "SystemProperties"))
        seen = &x->system_seen;
    else if (is_element(el, "MessageGroupId"))
        seen = &x->group_seen;
    else
        return 1;
    if (*seen)
        return duplicated(el, ei);
    *seen = true;
    if (seen == &x->group_seen)
        return take_group(x, el, ei);
    return take_list(x, el, seen == &x->user_seen, ei);
}

/* An empty list or group id says nothing: it is not kept, so a message
 * never comes back with an element it did not carry. */
int xml_ext_finish(struct xml_ext *x, char **ext, size_t *ext_len, struct smq_errinfo *ei)
{
    struct smq_buf out;
    int rc = 0;

    buf_init(&out);
    if (x->n_user > 0)
        buf_append(&out, x->user.data, x->user.len);
    if (x->system_names != 0)
        buf_append(&out, x->system.data, x->system.len);
    if (x->group.len > 0)
        xml_elem_text(&out, "MessageGroupId", x->group.data, x->group.len);
    *ext = NULL;
    *ext_len = 0;
    if (buf_failed(&out) || buf_failed(&x->user) || buf_failed(&x->system) || buf_failed(&x->names))
        rc = errors_set(ei, SMQ_E_NOMEM, NULL);
    else if (out.len > 0)
        *ext = buf_take(&out, ext_len);
    buf_free(&out);
    xml_ext_free(x);
    return rc;
}
