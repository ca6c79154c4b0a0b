/*
 * seed_store.c — writes N queued messages straight into an smqd database
 * through store.h (the same rows smqd itself writes), so that restart time
 * and memory per queued message can be measured without first pushing N
 * messages through HTTP.
 *
 * usage: smqd-bench-seed DB_PATH N_MESSAGES BODY_BYTES [N_QUEUES]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "smqd/crypto.h"
#include "smqd/store.h"

#define BATCH 10000

static int seed_queues(struct smq_store *s, int n_queues, int64_t now_s)
{
    for (int i = 0; i < n_queues; i++) {
        struct store_queue_rec q;
        memset(&q, 0, sizeof q);
        q.id = i + 1;
        snprintf(q.name, sizeof q.name, "bench-%d", i);
        q.create_s = q.modify_s = now_s;
        q.delay_s = 0;
        q.max_msg_size = 65536;
        q.retention_s = 604800;
        q.visibility_s = 30;
        q.polling_wait_s = 0;
        if (store_queue_insert(s, &q) != 0)
            return -1;
    }
    return 0;
}

static int seed_messages(struct smq_store *s, long n, size_t body_len, int n_queues, int64_t now_ms)
{
    char *body = malloc(body_len);
    unsigned char md5[CRYPTO_MD5_LEN];
    int rc = 0;

    if (body == NULL)
        return -1;
    memset(body, 'x', body_len);
    rc = crypto_md5(body, body_len, md5);    /* as a SendMessage stores it */
    rc = rc == 0 ? store_begin(s) : rc;
    for (long i = 0; rc == 0 && i < n; i++) {
        struct store_msg_rec m = {0};
        if (i > 0 && i % BATCH == 0) {
            rc = store_commit(s);
            rc = rc == 0 ? store_begin(s) : rc;
        }
        m.queue_id = (i % n_queues) + 1;
        m.seq = (uint64_t)i + 1;
        m.priority = 1 + (int)(i % 16);
        m.enqueue_ms = now_ms;
        m.visible_ms = now_ms;
        m.expire_ms = now_ms + 604800000LL;
        if (rc == 0)
            rc = store_msg_insert(s, &m, &(struct store_msg_content){body, body_len, md5, NULL, 0});
    }
    if (rc == 0)
        rc = store_commit(s);
    free(body);
    return rc;
}

int main(int argc, char **argv)
{
    struct smq_store *s = NULL;
    char err[256] = "";
    long n;
    size_t body_len;
    int n_queues, rc;
    int64_t now_ms = (int64_t)time(NULL) * 1000;

    if (argc < 4) {
        fprintf(stderr, "usage: %s DB_PATH N_MESSAGES BODY_BYTES [N_QUEUES]\n", argv[0]);
        return 2;
    }
    n = atol(argv[2]);
    body_len = (size_t)atol(argv[3]);
    n_queues = argc > 4 ? atoi(argv[4]) : 10;
    if (n < 0 || body_len < 1 || n_queues < 1) {
        fprintf(stderr, "bad arguments\n");
        return 2;
    }
    if (store_open(&(struct store_config){.path = argv[1], .sync = SMQ_SYNC_NORMAL},
                   &s, err, sizeof err) != 0) {
        fprintf(stderr, "store_open: %s\n", err);
        return 1;
    }
    rc = store_begin(s) == 0 && seed_queues(s, n_queues, now_ms / 1000) == 0 && store_commit(s) == 0
             ? seed_messages(s, n, body_len, n_queues, now_ms) : -1;
    store_close(s);
    if (rc != 0) {
        fprintf(stderr, "seeding failed\n");
        return 1;
    }
    return 0;
}
