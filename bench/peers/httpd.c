/*
 * httpd.c — smqd-peer-httpd: the HTTP ceiling.  A minimal libmicrohttpd
 * server (internal polling, epoll, a pool of 2 threads like smqd's 2
 * workers) on 127.0.0.1:--port that answers every request 201 with a fixed
 * SendMessage reply (<MessageId>…), so smqd-loadgen's `send` scenario can
 * drive it.  --scenario plain ignores the request body; --scenario xml also
 * parses the body with libxml2 (it must be a <Message> with a non-empty
 * <MessageBody>) and checks the MNS signature V2 (HMAC-SHA1 via OpenSSL, the
 * loadgen's own signer) with secret --extra (default "s"); failures get 400
 * / 403.  Runs until SIGINT or SIGTERM.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <microhttpd.h>

#include "../lg_sign.h"
#include "pc.h"

static const char reply_xml[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<Message xmlns=\"http://mns.aliyuncs.com/doc/v1/\">"
    "<MessageId>5F290C926D472878-2-14D9529A8FA-200000001</MessageId>"
    "<MessageBodyMD5>C5DD56A39F5F7BB8B3337C6D11B6D8C7</MessageBodyMD5></Message>";

static struct MHD_Response *created, *bad_request, *forbidden;
static int xml_mode;
static const char *secret = "s";
static __thread struct lg_signer signer;
static __thread int signer_ready;

struct req {
    size_t len, cap;
    char *buf;
};

static int body_ok(const struct req *r)
{
    if (r->len == 0)
        return 0;
    xmlDocPtr doc = xmlReadMemory(r->buf, (int)r->len, NULL, NULL, XML_PARSE_NONET);
    if (doc == NULL)
        return 0;
    int ok = 0;
    xmlNodePtr root = xmlDocGetRootElement(doc);
    if (root != NULL && xmlStrcmp(root->name, (const xmlChar *)"Message") == 0)
        for (xmlNodePtr n = root->children; n != NULL; n = n->next)
            if (n->type == XML_ELEMENT_NODE &&
                xmlStrcmp(n->name, (const xmlChar *)"MessageBody") == 0) {
                xmlChar *v = xmlNodeGetContent(n);
                ok = v != NULL && v[0] != 0;
                xmlFree(v);
                break;
            }
    xmlFreeDoc(doc);
    return ok;
}

static int signature_ok(struct MHD_Connection *c, const char *method, const char *url)
{
    if (!signer_ready) {
        if (lg_signer_init(&signer, secret) != 0)
            return 0;
        signer_ready = 1;
    }
    const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    const char *date = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Date");
    const char *ctype = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
    if (auth == NULL || date == NULL || strncmp(auth, "MNS ", 4) != 0)
        return 0;
    const char *colon = strchr(auth + 4, ':');
    char sig[LG_SIG_B64_LEN + 1];
    if (colon == NULL ||
        lg_sign(&signer, method, ctype ? ctype : "", date, url, strlen(url), sig) != 0)
        return 0;
    return strcmp(colon + 1, sig) == 0;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version,
                               const char *upload, size_t *upload_size, void **con_cls)
{
    (void)cls;
    (void)version;
    struct req *r = *con_cls;
    if (r == NULL) {
        r = calloc(1, sizeof *r);
        if (r == NULL)
            return MHD_NO;
        *con_cls = r;
        return MHD_YES;
    }
    if (*upload_size > 0) {
        if (xml_mode) {
            if (r->len + *upload_size > r->cap) {
                size_t cap = (r->len + *upload_size) * 2;
                char *b = realloc(r->buf, cap);
                if (b == NULL)
                    return MHD_NO;
                r->buf = b;
                r->cap = cap;
            }
            memcpy(r->buf + r->len, upload, *upload_size);
            r->len += *upload_size;
        }
        *upload_size = 0;
        return MHD_YES;
    }
    if (xml_mode) {
        if (!signature_ok(c, method, url))
            return MHD_queue_response(c, MHD_HTTP_FORBIDDEN, forbidden);
        if (!body_ok(r))
            return MHD_queue_response(c, MHD_HTTP_BAD_REQUEST, bad_request);
    }
    return MHD_queue_response(c, MHD_HTTP_CREATED, created);
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)c;
    (void)toe;
    struct req *r = *con_cls;
    if (r != NULL) {
        free(r->buf);
        free(r);
        *con_cls = NULL;
    }
}

static struct MHD_Response *fixed(const char *body)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_PERSISTENT);
    MHD_add_response_header(r, "Content-Type", "text/xml;charset=utf-8");
    MHD_add_response_header(r, "x-mns-request-id", "5F290C926D472878");
    return r;
}

int main(int argc, char **argv)
{
    pc_parse(argc, argv, "plain");
    xml_mode = strcmp(pc_o.scenario, "xml") == 0;
    if (!xml_mode && strcmp(pc_o.scenario, "plain") != 0) {
        fprintf(stderr, "httpd: --scenario plain|xml\n");
        return 2;
    }
    if (pc_o.extra != NULL)
        secret = pc_o.extra;
    xmlInitParser();
    created = fixed(reply_xml);
    bad_request = fixed("<Error><Code>InvalidArgument</Code></Error>");
    forbidden = fixed("<Error><Code>SignatureDoesNotMatch</Code></Error>");

    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)pc_o.port);
    inet_pton(AF_INET, pc_o.host, &a.sin_addr);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);    /* MHD's threads inherit the mask */
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL, (uint16_t)pc_o.port, NULL, NULL,
        handler, NULL, MHD_OPTION_THREAD_POOL_SIZE, 2u, MHD_OPTION_SOCK_ADDR,
        (struct sockaddr *)&a, MHD_OPTION_NOTIFY_COMPLETED, completed, NULL,
        MHD_OPTION_CONNECTION_TIMEOUT, 60u, MHD_OPTION_END);
    if (d == NULL) {
        fprintf(stderr, "httpd: cannot listen on %s:%d\n", pc_o.host, pc_o.port);
        return 2;
    }
    fprintf(stderr, "smqd-peer-httpd: listening on http://%s:%d (%s)\n", pc_o.host, pc_o.port,
            pc_o.scenario);
    int sig;
    sigwait(&set, &sig);
    MHD_stop_daemon(d);
    MHD_destroy_response(created);
    MHD_destroy_response(bad_request);
    MHD_destroy_response(forbidden);
    xmlCleanupParser();
    return 0;
}
