/*
 * fuzz_admin.c — libFuzzer target for the admin listener's request parser
 * and JSON writer: admin_api_prepare (routing, %-decoding of the queue name,
 * strict parameters, the dead-letter policy rules) and json_str.
 *
 * Input: METHOD \0 TARGET \0 BYTES.  TARGET (a C string, as libmicrohttpd
 * hands it over) is split at its first '?' into path and query.  Checked:
 * an accepted request yields ops within every range of engine.h and a
 * valid queue name; a refused one a 4xx JSON error document; json_str of
 * BYTES (and the peek rendering of BYTES as a message body) is valid UTF-8
 * without raw control characters, i.e. a valid JSON string.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "smqd/admin_api.h"
#include "smqd/json.h"
#include "smqd/qname.h"
#include "smqd/query.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

/* Strict UTF-8 (RFC 3629) and no byte below 0x20: what JSON allows unescaped. */
static bool json_text_ok(const unsigned char *s, size_t len)
{
    for (size_t i = 0; i < len;) {
        unsigned char c = s[i];
        size_t n = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3
                 : (c & 0xF8) == 0xF0 ? 4 : 0;
        uint32_t cp;

        if (n == 0 || i + n > len || c < 0x20)
            return false;
        cp = n == 1 ? c : n == 2 ? c & 0x1Fu : n == 3 ? c & 0x0Fu : c & 0x07u;
        for (size_t k = 1; k < n; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return false;
            cp = (cp << 6) | (s[i + k] & 0x3Fu);
        }
        if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
            cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += n;
    }
    return true;
}

static void check_queue_name(const char *name)
{
    struct smq_errinfo ei = {0, ""};

    FUZZ_CHECK(qname_check_err(name, strlen(name), &ei) == 0);
}

static void check_accepted(const struct admin_job *job)
{
    const struct smq_op *op = &job->ops[0];

    FUZZ_CHECK(job->n_ops == (job->kind == ADMIN_JOB_SET ? 2u : 1u));
    if (job->kind == ADMIN_JOB_LIST)
        FUZZ_CHECK(op->queue[0] == '\0');
    else
        check_queue_name(op->queue);
    switch (job->kind) {
    case ADMIN_JOB_PEEK:
        FUZZ_CHECK(op->recv.max_msgs >= 1 && op->recv.max_msgs <= SMQ_BATCH_MAX);
        break;
    case ADMIN_JOB_PURGE:
        FUZZ_CHECK(op->purge.main || op->purge.dlq);
        break;
    case ADMIN_JOB_REDRIVE:
        FUZZ_CHECK(op->redrive.rate_per_s >= 1 && op->redrive.rate_per_s <= 100000);
        break;
    case ADMIN_JOB_SET:
        FUZZ_CHECK(op->attrs.present != 0);
        FUZZ_CHECK(strcmp(job->ops[1].queue, op->queue) == 0);
        FUZZ_CHECK(!(op->attrs.present & SMQ_ATTR_VISIBILITY) ||
                   (op->attrs.values.visibility_s >= SMQ_VISIBILITY_MIN_S &&
                    op->attrs.values.visibility_s <= SMQ_VISIBILITY_MAX_S));
        FUZZ_CHECK(!(op->attrs.present & SMQ_ATTR_MAX_MSG_SIZE) ||
                   (op->attrs.values.max_msg_size >= SMQ_MSG_SIZE_MIN &&
                    op->attrs.values.max_msg_size <= SMQ_MSG_SIZE_MAX));
        if ((op->attrs.present & SMQ_ATTR_DLQ) && op->attrs.values.dlq.enabled) {
            check_queue_name(op->attrs.values.dlq.target);
            FUZZ_CHECK(strcmp(op->attrs.values.dlq.target, op->queue) != 0);
            FUZZ_CHECK(op->attrs.values.dlq.max_receive >= SMQ_DLQ_MAX_RECEIVE_MIN &&
                       op->attrs.values.dlq.max_receive <= SMQ_DLQ_MAX_RECEIVE_MAX);
        }
        break;
    default:
        break;
    }
}

/* BYTES as a peeked message body: the whole reply must stay valid JSON text. */
static void check_render(const char *body, size_t len)
{
    struct admin_job job;
    struct admin_reply r;

    memset(&job, 0, sizeof job);
    op_init(&job.ops[0], SMQ_OP_PEEK);
    job.kind = ADMIN_JOB_PEEK;
    job.n_ops = 1;
    job.ops[0].recv.body_block = malloc(len + 1);      /* the engine's layout: one block */
    FUZZ_CHECK(job.ops[0].recv.body_block != NULL);
    job.ops[0].recv.msgs[0].body = job.ops[0].recv.body_block;
    memcpy(job.ops[0].recv.msgs[0].body, body, len);
    job.ops[0].recv.msgs[0].body_len = len;
    job.ops[0].recv.n_msgs = 1;
    admin_reply_init(&r);
    admin_api_render(&job, fuzz_handle_keys(), FUZZ_NOW_MS, &r);
    FUZZ_CHECK(r.status == 200 && !buf_failed(&r.body));
    /* The trailing newline is the only control byte outside strings. */
    FUZZ_CHECK(r.body.len > 0 && r.body.data[r.body.len - 1] == '\n');
    FUZZ_CHECK(json_text_ok((const unsigned char *)r.body.data, r.body.len - 1));
    admin_reply_free(&r);
    admin_api_release(&job);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 2), *method, *target, *query, *bytes;
    size_t bytes_len;
    struct admin_job job;
    struct admin_reply r;
    struct smq_buf b;

    if (buf == NULL)
        return 0;
    memcpy(buf, data, size);
    buf[size] = buf[size + 1] = '\0';
    method = buf;
    target = method + strlen(method) + 1;
    if (target > buf + size)
        target = buf + size;
    bytes = target + strlen(target) + 1;
    bytes_len = bytes <= buf + size ? (size_t)(buf + size - bytes) : 0;
    query = strchr(target, '?');
    if (query != NULL)
        *query++ = '\0';

    admin_reply_init(&r);
    if (admin_api_prepare(method, target, query, &job, &r) == 0) {
        check_accepted(&job);
    } else {
        FUZZ_CHECK(r.status >= 400 && r.status <= 405);
        FUZZ_CHECK(r.body.len > 12 && memcmp(r.body.data, "{\"error\":\"", 10) == 0);
        FUZZ_CHECK(json_text_ok((const unsigned char *)r.body.data, r.body.len - 1));
    }
    admin_api_release(&job);
    admin_reply_free(&r);

    buf_init(&b);
    json_str(&b, bytes, bytes_len);
    FUZZ_CHECK(!buf_failed(&b) && b.len >= 2 && b.data[0] == '"' && b.data[b.len - 1] == '"');
    FUZZ_CHECK(json_text_ok((const unsigned char *)b.data, b.len));
    buf_free(&b);
    check_render(bytes, bytes_len);
    free(buf);
    return 0;
}
