/*
 * ctl_http.c — owns smqctl's use of libcurl (ctl_http.h).
 */
#include "ctl_http.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "smqd/errors.h"

/* Bigger than any admin answer (16 messages of 64 KiB, or thousands of
 * queues), small enough that a wrong -a cannot exhaust memory. */
#define MAX_RESPONSE (64u << 20)

int ctl_http_init(void)
{
    return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : SMQ_E_INTERNAL;
}

void ctl_http_cleanup(void)
{
    curl_global_cleanup();
}

static size_t on_data(char *data, size_t size, size_t nmemb, void *arg)
{
    struct ctl_resp *r = arg;
    size_t n = size * nmemb;
    char *grown;

    if (r->len + n > MAX_RESPONSE || (grown = realloc(r->body, r->len + n + 1)) == NULL)
        return 0;                    /* makes curl fail with a write error */
    memcpy(grown + r->len, data, n);
    r->body = grown;
    r->len += n;
    r->body[r->len] = '\0';
    return n;
}

static struct curl_slist *auth_header(const struct ctl_target *t)
{
    char *line;
    size_t n;
    struct curl_slist *list;

    if (t->token == NULL || t->token[0] == '\0')
        return NULL;
    n = strlen("Authorization: Bearer ") + strlen(t->token) + 1;
    if ((line = malloc(n)) == NULL)
        return NULL;
    snprintf(line, n, "Authorization: Bearer %s", t->token);
    list = curl_slist_append(NULL, line);
    free(line);
    return list;
}

static void set_method(CURL *c, const char *method)
{
    if (strcmp(method, "GET") == 0)
        return;
    /* An empty body: the admin API takes parameters in the query string. */
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, 0L);
    if (strcmp(method, "POST") != 0)
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
}

int ctl_http_request(const struct ctl_target *t, const char *method, const char *path_query,
                     struct ctl_resp *out, char *err, size_t err_size)
{
    char url[4096], cerr[CURL_ERROR_SIZE] = "";
    struct curl_slist *headers = auth_header(t);
    CURL *c = curl_easy_init();
    CURLcode rc = CURLE_OUT_OF_MEMORY;

    memset(out, 0, sizeof *out);
    if (snprintf(url, sizeof url, "%s%s", t->base, path_query) >= (int)sizeof url) {
        snprintf(err, err_size, "URL too long");
        goto out;
    }
    if (c == NULL || (out->body = calloc(1, 1)) == NULL) {
        snprintf(err, err_size, "out of memory");
        goto out;
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, cerr);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 5L);
    /* Above the admin listener's own 30 s wait for the engine. */
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 45L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    /* The admin listener is local; an http_proxy meant for the internet
     * must not receive the token. */
    curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    if (headers != NULL)
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    set_method(c, method);
    rc = curl_easy_perform(c);
    if (rc != CURLE_OK)
        snprintf(err, err_size, "%s: %s", url, cerr[0] ? cerr : curl_easy_strerror(rc));
    else
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &out->status);
out:
    curl_slist_free_all(headers);
    if (c != NULL)
        curl_easy_cleanup(c);
    if (rc != CURLE_OK)
        ctl_resp_free(out);
    return rc == CURLE_OK ? 0 : SMQ_E_INTERNAL;
}

void ctl_resp_free(struct ctl_resp *r)
{
    free(r->body);
    memset(r, 0, sizeof *r);
}

char *ctl_http_escape(const char *s)
{
    char *e = curl_easy_escape(NULL, s, 0);
    char *copy = e != NULL ? strdup(e) : NULL;

    curl_free(e);
    return copy;
}
