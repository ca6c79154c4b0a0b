/*
 * push.c — the HTTP push pool (docs/protocol.md §13.10, §13.11): one thread
 * running a libcurl multi handle, so that every attempt shares its
 * connection cache (keep-alive per endpoint host and port).  push_submit
 * queues a job under the lock and wakes the thread with curl_multi_wakeup;
 * the thread turns each job into an easy handle, and when a transfer ends
 * hands its outcome to opts->done and frees the job.  With a signer each
 * attempt carries §13.11's authorization header.  It never retries:
 * the schedule (§13.12) is the engine's.
 *
 * An RSA signature (§13.11) costs far more CPU than the rest of an
 * attempt, so with a signer a few signer threads (one per online CPU, at
 * most PUSH_SIGNERS_DEFAULT_MAX) take the submitted jobs, build each
 * attempt's headers, string to sign and signature together (the Date
 * signed is the Date sent) and hand the prepared attempt to the curl
 * thread, which starts it.  Outcomes are still handed out on the curl
 * thread alone, and a job being signed counts as in flight.
 */
#define _GNU_SOURCE       /* pthread_setname_np */
#include "smqd/push.h"

#include <curl/curl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "smqd/errors.h"
#include "smqd/notify.h"
#include "smqd/worker.h"

/* §13.10: a response body is read and discarded, at most 64 KiB. */
#define PUSH_BODY_CAP (64 * 1024)
/* Connections kept open to one host and port; more attempts to it wait for
 * one of these (their wait counts in their timeout). */
#define PUSH_HOST_CONNECTIONS 32
/* Room for the base64 signature (§13.11) of an RSA key of up to 16384
 * bits: 4 * ceil(bytes / 3) + 1, as crypto_signer_sign asks.  push_start's
 * trial signature refuses a key whose signature would not fit. */
#define PUSH_SIG_MAX (4 * ((16384 / 8 + 2) / 3) + 1)
/* Signer threads: push_opts.sign_threads at most PUSH_SIGNERS_MAX; by
 * default one per online CPU, at most PUSH_SIGNERS_DEFAULT_MAX. */
#define PUSH_SIGNERS_MAX 64
#define PUSH_SIGNERS_DEFAULT_MAX 8

/* One attempt in flight: its job, its easy handle and what it received. */
struct attempt {
    struct push_job *job;
    CURL *easy;
    struct curl_slist *headers;
    char url[SMQ_ENDPOINT_MAX + 310];
    bool failed;                             /* not to be started: ends as fail_outcome */
    enum smq_push_outcome fail_outcome;
    uint64_t start_ms;
    size_t body_read;
    bool headers_done;                       /* a final (non-1xx) status and its headers */
    struct attempt *prev, *next;             /* the multi's list, or the ready list (next) */
};

struct push_pool {
    struct push_opts opts;                   /* the strings below are the pool's copies */
    char *cert_url, *account_id, *ca_file;
    struct worker w;                         /* w.lock guards queue_* and w.stopping */
    struct push_job *queue_head, *queue_tail; /* for the curl thread to prepare and start */
    /* With signer threads: jobs waiting for one (sign_*), attempts they
     * prepared for the curl thread to start (ready_*); all under w.lock. */
    struct push_job *sign_head, *sign_tail;
    struct attempt *ready_head, *ready_tail;
    pthread_cond_t sign_wake;                /* a job to sign, or signers_stopping */
    bool signers_stopping;                   /* under w.lock: push_stop began */
    pthread_t signers[PUSH_SIGNERS_MAX];
    int n_signers;                           /* started; 0: the curl thread signs */
    size_t in_flight;                        /* atomic; raised under w.lock (the cap) */
    CURLM *multi;                            /* the thread's, after push_start */
    struct attempt *attempts;                /* the thread's: in the multi handle */
    char id_prefix[13];                      /* x-mns-request-id: prefix, then a counter */
    uint64_t id_counter;                     /* atomic: signer threads take ids */
};

static void job_append(struct push_job **head, struct push_job **tail, struct push_job *job)
{
    job->next = NULL;
    if (*tail != NULL)
        (*tail)->next = job;
    else
        *head = job;
    *tail = job;
}

void push_job_free(struct push_job *job)
{
    if (job == NULL)
        return;
    buf_free(&job->body);
    free(job);
}

size_t push_in_flight(const struct push_pool *p)
{
    return __atomic_load_n(&p->in_flight, __ATOMIC_ACQUIRE);
}

/* ---- one attempt's outcome ---- */

static void finish_job(struct push_pool *p, struct push_job *job, enum smq_push_outcome outcome,
                       int status, uint64_t start_ms)
{
    uint64_t now = clock_mono_ms(p->opts.clock);
    struct smq_op_push r = {
        .sub_id = job->sub_id, .seq = job->seq, .attempt = job->attempt,
        .outcome = outcome, .http_status = status,
        .latency_us = now > start_ms ? (now - start_ms) * 1000 : 0,
    };

    push_job_free(job);
    /* Lowered before done: whoever done wakes may submit again at once. */
    __atomic_fetch_sub(&p->in_flight, 1, __ATOMIC_ACQ_REL);
    p->opts.done(p->opts.done_arg, &r);
}

static enum smq_push_outcome outcome_of_status(long status)
{
    if (status >= 200 && status < 300)
        return SMQ_PUSH_OK;
    return status == 403 ? SMQ_PUSH_REJECTED : SMQ_PUSH_HTTP_ERROR;
}

/* A status whose headers all arrived counts even when the transfer then
 * failed: the body cap cut it, or the body was slow or cut short (§13.10). */
static void attempt_ended(struct push_pool *p, struct attempt *a, CURLcode rc)
{
    long status = 0;
    enum smq_push_outcome outcome;

    curl_easy_getinfo(a->easy, CURLINFO_RESPONSE_CODE, &status);
    if (a->headers_done && status >= 200)
        outcome = outcome_of_status(status);
    else if (rc == CURLE_OPERATION_TIMEDOUT)
        outcome = SMQ_PUSH_TIMEOUT;
    else if (rc == CURLE_OK)
        outcome = outcome_of_status(status);
    else
        outcome = SMQ_PUSH_CONNECT_ERROR;
    finish_job(p, a->job, outcome, a->headers_done ? (int)status : 0, a->start_ms);
}

static void attempt_free(struct push_pool *p, struct attempt *a)
{
    if (a->prev != NULL)
        a->prev->next = a->next;
    else if (p->attempts == a)
        p->attempts = a->next;
    if (a->next != NULL)
        a->next->prev = a->prev;
    if (a->easy != NULL) {
        curl_multi_remove_handle(p->multi, a->easy);
        curl_easy_cleanup(a->easy);
    }
    curl_slist_free_all(a->headers);
    free(a);
}

/* ---- libcurl callbacks ---- */

static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
    struct attempt *a = arg;

    (void)data;
    a->body_read += size * n;
    /* returning less than given ends the transfer and closes its connection */
    return a->body_read > PUSH_BODY_CAP ? 0 : size * n;
}

static size_t on_header(char *line, size_t size, size_t n, void *arg)
{
    struct attempt *a = arg;
    long status = 0;

    /* the blank line ending a header block; a 1xx block is followed by another */
    if (size * n <= 2 && (line[0] == '\r' || line[0] == '\n')) {
        curl_easy_getinfo(a->easy, CURLINFO_RESPONSE_CODE, &status);
        if (status >= 200)
            a->headers_done = true;
    }
    return size * n;
}

/* ---- building an attempt ---- */

static void next_request_id(struct push_pool *p, char out[25])
{
    uint64_t n = __atomic_fetch_add(&p->id_counter, 1, __ATOMIC_RELAXED);

    snprintf(out, 25, "%s%012" PRIX64, p->id_prefix, (uint64_t)(n & 0xFFFFFFFFFFFFull));
}

static int append_header(struct curl_slist **list, const char *line)
{
    struct curl_slist *l = curl_slist_append(*list, line);

    if (l == NULL)
        return SMQ_E_NOMEM;
    *list = l;
    return 0;
}

/* §13.11's authorization header: the signature of sts, the string to sign
 * notify_push_headers built from the very values sent (the same Date, the
 * same target).  A signing failure is SMQ_E_INTERNAL: the attempt is not
 * sent unsigned. */
static int append_authorization(const struct push_pool *p, const struct smq_buf *sts,
                                struct curl_slist **out)
{
    static const char name[] = "authorization: ";
    char line[sizeof name + PUSH_SIG_MAX];

    memcpy(line, name, sizeof name - 1);
    if (crypto_signer_sign(p->opts.signer, sts->data != NULL ? sts->data : "", sts->len,
                           line + sizeof name - 1, sizeof line - (sizeof name - 1)) != 0)
        return SMQ_E_INTERNAL;
    return append_header(out, line);
}

/* The §13.10 headers (notify_push_headers) as a curl list, the ones curl
 * would add of its own accord taken out, and with a signer §13.11's
 * authorization; *sign_failed tells a signing failure from the others. */
static int build_headers(struct push_pool *p, const struct push_job *job,
                         const struct notify_endpoint *ep, struct curl_slist **out,
                         bool *sign_failed)
{
    struct notify_msg msg = {
        .account_id = p->account_id, .topic = job->topic, .sub = job->sub,
        .msg_id = job->msg_id, .tag = job->tag, .publish_ms = job->publish_ms,
    };
    char date[30], request_id[25], line[700];
    struct notify_push np = {
        .msg = &msg, .format = job->format, .ep = ep, .date = date,
        .request_id = request_id, .cert_url = p->cert_url,
    };
    struct notify_header h[NOTIFY_PUSH_HEADERS_MAX];
    struct smq_buf sts;
    size_t n = 0;
    int rc;

    notify_http_date(clock_epoch_ms(p->opts.clock), date);
    next_request_id(p, request_id);
    buf_init(&sts);
    rc = notify_push_headers(&np, job->body.data, job->body.len, h, &n, &sts);
    /* "Expect:" and "Accept:" with no value: curl sends neither */
    for (size_t i = 0; rc == 0 && i < n + 2; i++) {
        if (i < n)
            snprintf(line, sizeof line, "%s: %s", h[i].name, h[i].value);
        else
            snprintf(line, sizeof line, "%s", i == n ? "Expect:" : "Accept:");
        rc = append_header(out, line);
    }
    if (rc == 0 && p->opts.signer != NULL) {
        rc = append_authorization(p, &sts, out);
        *sign_failed = rc == SMQ_E_INTERNAL;
    }
    buf_free(&sts);
    return rc;
}

static void set_transfer(struct push_pool *p, struct attempt *a, const char *url)
{
    CURL *e = a->easy;

    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_PATH_AS_IS, 1L);            /* the target exactly as written */
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);        /* a 3xx is a failure */
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)p->opts.timeout_ms);
    /* libcurl has no response-header timeout: the whole transfer gets the
     * push timeout, and a status whose headers came in time still counts
     * when the body read is what runs out (attempt_ended). */
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)p->opts.timeout_ms);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
    if (p->ca_file != NULL)
        curl_easy_setopt(e, CURLOPT_CAINFO, p->ca_file);
    curl_easy_setopt(e, CURLOPT_USERAGENT, "smqd/" SMQD_VERSION);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, a->headers);
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, a->job->body.len > 0 ? a->job->body.data : "");
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)a->job->body.len);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, a);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, a);
    curl_easy_setopt(e, CURLOPT_PRIVATE, a);
}

/* Everything an attempt needs before libcurl: its URL and its headers,
 * signed.  Any thread (a signer's or the curl thread's): it reads only
 * what push_start set.  NULL when out of memory; an attempt that cannot be
 * sent is marked failed, SIGN_ERROR when its signature could not be made,
 * CONNECT_ERROR for the rest (an endpoint that does not parse). */
static struct attempt *attempt_prepare(struct push_pool *p, struct push_job *job)
{
    struct notify_endpoint ep;
    char trimmed[SMQ_ENDPOINT_MAX + 1];
    struct attempt *a = calloc(1, sizeof *a);
    bool sign_failed = false;
    int rc;

    if (a == NULL)
        return NULL;
    a->job = job;
    a->start_ms = clock_mono_ms(p->opts.clock);
    rc = notify_endpoint_parse(job->endpoint, strlen(job->endpoint), &ep, trimmed);
    if (rc == 0 && ep.kind != NOTIFY_EP_HTTP)
        rc = SMQ_E_ENDPOINT_INVALID;
    if (rc == 0)
        rc = build_headers(p, job, &ep, &a->headers, &sign_failed);
    if (rc == 0)
        snprintf(a->url, sizeof a->url, "%s://%s%s", ep.https ? "https" : "http", ep.authority,
                 ep.target);
    a->failed = rc != 0;
    a->fail_outcome = sign_failed ? SMQ_PUSH_SIGN_ERROR : SMQ_PUSH_CONNECT_ERROR;
    return a;
}

/* Curl thread: starts a prepared attempt (a NULL one ran out of memory);
 * one that cannot be started ends at once. */
static void attempt_launch(struct push_pool *p, struct push_job *job, struct attempt *a)
{
    int rc = a == NULL ? SMQ_E_NOMEM : a->failed ? SMQ_E_INTERNAL : 0;

    if (rc == 0 && (a->easy = curl_easy_init()) == NULL)
        rc = SMQ_E_NOMEM;
    if (rc == 0) {
        set_transfer(p, a, a->url);
        rc = curl_multi_add_handle(p->multi, a->easy) == CURLM_OK ? 0 : SMQ_E_NOMEM;
    }
    if (rc == 0) {
        a->prev = NULL;
        a->next = p->attempts;
        if (p->attempts != NULL)
            p->attempts->prev = a;
        p->attempts = a;
        return;
    }
    finish_job(p, job, a != NULL && a->failed ? a->fail_outcome : SMQ_PUSH_CONNECT_ERROR, 0,
               a != NULL ? a->start_ms : clock_mono_ms(p->opts.clock));
    if (a != NULL) {
        curl_easy_cleanup(a->easy);
        curl_slist_free_all(a->headers);
        free(a);
    }
}

/* ---- the signer threads ---- */

/* Takes jobs to sign until push_stop; each prepared attempt goes on the
 * ready list (a job whose attempt could not even be allocated goes back
 * to the curl thread's queue, which prepares it itself). */
static void *signer_main(void *arg)
{
    struct push_pool *p = arg;

    pthread_mutex_lock(&p->w.lock);
    for (;;) {
        struct push_job *job;
        struct attempt *a;

        while (!p->signers_stopping && p->sign_head == NULL)
            pthread_cond_wait(&p->sign_wake, &p->w.lock);
        if (p->signers_stopping)
            break;
        job = p->sign_head;
        p->sign_head = job->next;
        if (p->sign_head == NULL)
            p->sign_tail = NULL;
        pthread_mutex_unlock(&p->w.lock);
        a = attempt_prepare(p, job);
        pthread_mutex_lock(&p->w.lock);
        if (a == NULL) {
            job_append(&p->queue_head, &p->queue_tail, job);
        } else {
            a->next = NULL;
            if (p->ready_tail != NULL)
                p->ready_tail->next = a;
            else
                p->ready_head = a;
            p->ready_tail = a;
        }
        pthread_mutex_unlock(&p->w.lock);
        curl_multi_wakeup(p->multi);
        pthread_mutex_lock(&p->w.lock);
    }
    pthread_mutex_unlock(&p->w.lock);
    return NULL;
}

/* How many signer threads opts asks for (0: one per online CPU, capped). */
static int signers_wanted(const struct push_opts *opts)
{
    long cpus;

    if (opts->signer == NULL)
        return 0;
    if (opts->sign_threads > 0)
        return opts->sign_threads;
    cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (cpus < 1)
        return 1;
    return cpus > PUSH_SIGNERS_DEFAULT_MAX ? PUSH_SIGNERS_DEFAULT_MAX : (int)cpus;
}

/* Starts the signer threads; fewer (even none) when threads cannot be
 * had: the curl thread signs whatever no signer thread takes. */
static void signers_start(struct push_pool *p)
{
    int want = signers_wanted(&p->opts);

    while (p->n_signers < want) {
        if (pthread_create(&p->signers[p->n_signers], NULL, signer_main, p) != 0)
            break;
        pthread_setname_np(p->signers[p->n_signers], "smqd-push-sign");
        p->n_signers++;
    }
}

/* Lets each signer finish the attempt in its hands and joins them all;
 * jobs still waiting for one stay on sign_* for the curl thread to cancel. */
static void signers_stop(struct push_pool *p)
{
    pthread_mutex_lock(&p->w.lock);
    p->signers_stopping = true;
    pthread_cond_broadcast(&p->sign_wake);
    pthread_mutex_unlock(&p->w.lock);
    for (int i = 0; i < p->n_signers; i++)
        pthread_join(p->signers[i], NULL);
}

/* ---- the thread ---- */

/* Takes the queued jobs and the prepared attempts; false when the pool is
 * stopping (the signers are joined by then: the jobs they left unsigned
 * come along, to be cancelled). */
static bool take_queue(struct push_pool *p, struct push_job **jobs, struct attempt **ready)
{
    bool stopping;

    pthread_mutex_lock(&p->w.lock);
    stopping = p->w.stopping;
    if (stopping && p->sign_head != NULL) {
        p->sign_tail->next = p->queue_head;
        p->queue_head = p->sign_head;
        p->sign_head = p->sign_tail = NULL;
    }
    *jobs = p->queue_head;
    p->queue_head = p->queue_tail = NULL;
    *ready = p->ready_head;
    p->ready_head = p->ready_tail = NULL;
    pthread_mutex_unlock(&p->w.lock);
    return !stopping;
}

static void reap_done(struct push_pool *p)
{
    CURLMsg *m;
    int left;

    while ((m = curl_multi_info_read(p->multi, &left)) != NULL) {
        char *priv = NULL;
        struct attempt *a;

        if (m->msg != CURLMSG_DONE)
            continue;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &priv);
        a = (struct attempt *)priv;
        attempt_ended(p, a, m->data.result);
        attempt_free(p, a);
    }
}

/* Ends every attempt, prepared attempt and queued job with CANCELLED (the
 * pool is stopping). */
static void cancel_all(struct push_pool *p, struct push_job *jobs, struct attempt *ready)
{
    while (p->attempts != NULL) {
        struct attempt *a = p->attempts;

        finish_job(p, a->job, SMQ_PUSH_CANCELLED, 0, a->start_ms);
        attempt_free(p, a);
    }
    while (ready != NULL) {
        struct attempt *next = ready->next;

        finish_job(p, ready->job, SMQ_PUSH_CANCELLED, 0, ready->start_ms);
        curl_slist_free_all(ready->headers);
        free(ready);
        ready = next;
    }
    while (jobs != NULL) {
        struct push_job *next = jobs->next;

        finish_job(p, jobs, SMQ_PUSH_CANCELLED, 0, clock_mono_ms(p->opts.clock));
        jobs = next;
    }
}

static void *push_main(void *arg)
{
    struct push_pool *p = arg;
    struct push_job *jobs;
    struct attempt *ready;
    int running;

    while (take_queue(p, &jobs, &ready)) {
        while (ready != NULL) {
            struct attempt *next = ready->next;

            attempt_launch(p, ready->job, ready);
            ready = next;
        }
        while (jobs != NULL) {
            struct push_job *next = jobs->next;

            attempt_launch(p, jobs, attempt_prepare(p, jobs));
            jobs = next;
        }
        curl_multi_perform(p->multi, &running);
        reap_done(p);
        /* curl_multi_wakeup (push_submit, a signer, push_stop) ends the wait early */
        curl_multi_poll(p->multi, NULL, 0, 1000, NULL);
    }
    cancel_all(p, jobs, ready);
    return NULL;
}

/* ---- the pool ---- */

static void pool_free(struct push_pool *p)
{
    if (p->multi != NULL)
        curl_multi_cleanup(p->multi);
    worker_destroy(&p->w);
    pthread_cond_destroy(&p->sign_wake);
    free(p->cert_url);
    free(p->account_id);
    free(p->ca_file);
    free(p);
    curl_global_cleanup();
}

static int pool_setup(struct push_pool *p, const struct push_opts *opts, char *err,
                      size_t err_size)
{
    unsigned char rnd[6];

    p->opts = *opts;
    p->cert_url = strdup(opts->cert_url != NULL ? opts->cert_url : "");
    p->account_id = strdup(opts->account_id != NULL ? opts->account_id : "");
    p->ca_file = opts->ca_file != NULL ? strdup(opts->ca_file) : NULL;
    if (p->cert_url == NULL || p->account_id == NULL || (opts->ca_file != NULL && !p->ca_file)) {
        snprintf(err, err_size, "push pool: out of memory");
        return SMQ_E_INTERNAL;
    }
    if (crypto_random(rnd, sizeof rnd) != 0) {
        snprintf(err, err_size, "push pool: no random bytes for request ids");
        return SMQ_E_INTERNAL;
    }
    for (size_t i = 0; i < sizeof rnd; i++)
        snprintf(p->id_prefix + 2 * i, 3, "%02X", rnd[i]);
    p->multi = curl_multi_init();
    if (p->multi == NULL) {
        snprintf(err, err_size, "push pool: curl_multi_init failed");
        return SMQ_E_INTERNAL;
    }
    curl_multi_setopt(p->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, (long)opts->concurrency);
    curl_multi_setopt(p->multi, CURLMOPT_MAXCONNECTS, (long)opts->concurrency);
    curl_multi_setopt(p->multi, CURLMOPT_MAX_HOST_CONNECTIONS,
                      (long)(opts->concurrency < PUSH_HOST_CONNECTIONS ? opts->concurrency
                                                                     : PUSH_HOST_CONNECTIONS));
    return 0;
}

/* One signature before the thread starts (the signer's one caller at a
 * time, crypto.h): a key that cannot sign into PUSH_SIG_MAX is refused
 * here rather than failing every attempt.  0, or SMQ_E_INTERNAL. */
static int trial_sign(const struct crypto_signer *k, char *err, size_t err_size)
{
    static const char probe[] = "POST\n\n\n\n/";
    char sig[PUSH_SIG_MAX];

    if (crypto_signer_sign(k, probe, sizeof probe - 1, sig, sizeof sig) != 0) {
        snprintf(err, err_size, "push pool: the signing key cannot sign a push (§13.11)");
        return SMQ_E_INTERNAL;
    }
    return 0;
}

int push_start(const struct push_opts *opts, struct push_pool **out, char *err, size_t err_size)
{
    struct push_pool *p;
    int rc;

    *out = NULL;
    if (opts == NULL || opts->concurrency < 1 || opts->concurrency > 1024
        || opts->sign_threads < 0 || opts->sign_threads > PUSH_SIGNERS_MAX || opts->timeout_ms < 1 || opts->clock == NULL || opts->done == NULL) {
        snprintf(err, err_size, "push pool: bad options");
        return SMQ_E_INTERNAL;
    }
    if (opts->signer != NULL && trial_sign(opts->signer, err, err_size) != 0)
        return SMQ_E_INTERNAL;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        snprintf(err, err_size, "push pool: curl_global_init failed");
        return SMQ_E_INTERNAL;
    }
    p = calloc(1, sizeof *p);
    if (p == NULL) {
        curl_global_cleanup();
        snprintf(err, err_size, "push pool: out of memory");
        return SMQ_E_INTERNAL;
    }
    worker_init(&p->w);
    pthread_cond_init(&p->sign_wake, NULL);
    rc = pool_setup(p, opts, err, err_size);
    if (rc == 0 && worker_start(&p->w, "smqd-push", push_main, p) != 0) {
        snprintf(err, err_size, "push pool: cannot start its thread");
        rc = SMQ_E_INTERNAL;
    }
    if (rc != 0) {
        pool_free(p);
        return rc;
    }
    signers_start(p);
    *out = p;
    return 0;
}

int push_submit(struct push_pool *p, struct push_job *job)
{
    int rc = 0;

    pthread_mutex_lock(&p->w.lock);
    if (p->w.stopping || p->signers_stopping
        || __atomic_load_n(&p->in_flight, __ATOMIC_ACQUIRE) >= (size_t)p->opts.concurrency) {
        rc = SMQ_E_SERVICE_UNAVAILABLE;
    } else {
        __atomic_fetch_add(&p->in_flight, 1, __ATOMIC_ACQ_REL);
        if (p->n_signers > 0) {
            job_append(&p->sign_head, &p->sign_tail, job);
            pthread_cond_signal(&p->sign_wake);
        } else {
            job_append(&p->queue_head, &p->queue_tail, job);
        }
    }
    pthread_mutex_unlock(&p->w.lock);
    if (rc == 0 && p->n_signers == 0)
        curl_multi_wakeup(p->multi);
    return rc;
}

void push_stop(struct push_pool *p)
{
    if (p == NULL)
        return;
    /* The signers first, so that no attempt reaches the ready list after
     * the curl thread's last look at it. */
    signers_stop(p);
    pthread_mutex_lock(&p->w.lock);
    p->w.stopping = true;
    pthread_mutex_unlock(&p->w.lock);
    curl_multi_wakeup(p->multi);
    worker_stop(&p->w);
    pool_free(p);
}
