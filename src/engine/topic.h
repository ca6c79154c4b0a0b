/*
 * topic.h — the in-memory model of topics (docs/protocol.md §13): the
 * topic registry, each topic's subscriptions, the published messages kept
 * for their pending notifications, and the notifications themselves with
 * the place each is in.
 *
 * A pending notification is in exactly one place:
 *   WAITING   — on the fan-out wheel until its next attempt is due;
 *   READY     — due, in its subscription's FIFO of notifications to attempt;
 *   IN_FLIGHT — an HTTP push attempt of it is in the push pool.
 * It is also on its subscription's list of all its notifications (so a
 * subscription is deleted in O(its notifications)) and counted in its
 * message's pending count (a message is freed with its last notification).
 *
 * The model holds no bodies (they stay in the store) and writes nothing:
 * the engine (run_topic.c, fanout.c) writes rows first and changes the
 * model only after the write succeeded, as for queues.  Engine thread only.
 */
#ifndef SMQD_TOPIC_H
#define SMQD_TOPIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "smqd/mns.h"
#include "smqd/notify.h"
#include "smqd/op.h"
#include "smqd/twheel.h"

enum topic_notif_state { TOPIC_NOTIF_WAITING, TOPIC_NOTIF_READY, TOPIC_NOTIF_IN_FLIGHT };

struct smq_topic;
struct smq_sub;

/* A published message kept while it has pending notifications. */
struct topic_msg {
    struct topic_msg *hash_next;         /* the seq → message table's chain */
    struct smq_topic *topic;
    uint64_t seq;
    int64_t publish_ms;
    uint32_t pending;                    /* its notifications not yet done */
    unsigned char md5[MNS_MD5_LEN];
    char tag[SMQ_TAG_MAX_BYTES + 1];
};

struct topic_notif {
    struct twheel_node timer;            /* WAITING: its due time */
    struct topic_notif *next;            /* READY: the FIFO; IN_FLIGHT: the flight list */
    struct topic_notif *sub_prev, *sub_next;   /* every notification of its subscription */
    struct smq_sub *sub;
    struct topic_msg *msg;
    int64_t due_ms;                      /* epoch ms of the next attempt */
    uint64_t commit_gen;                 /* the engine's commit count when its row was written */
    uint32_t attempts;                   /* made so far */
    uint8_t state;                       /* enum topic_notif_state */
    uint8_t strategy;                    /* enum smq_notify_strategy it was made with (§13.6.2) */
};

/* Lifetime counters of one subscription (since start-up; for metrics). */
struct sub_counters {
    uint64_t delivered, failed, dead, rejected;
    uint64_t push_latency_us_sum, push_latency_n;
    uint64_t push_latency_buckets[SMQ_PUSH_LATENCY_BUCKETS + 1];   /* op.h's bounds */
};

struct smq_sub {
    int64_t id;
    struct smq_topic *topic;
    struct smq_sub *id_next;             /* the id → subscription table's chain */
    char name[SMQ_TOPIC_NAME_MAX + 1];
    struct smq_sub_attrs attrs;
    struct notify_endpoint ep;           /* attrs.endpoint, parsed */
    int64_t create_s, modify_s;
    struct topic_notif *all;             /* every pending notification */
    struct topic_notif *ready_head, *ready_tail;
    struct topic_notif *flight;          /* pushes in the pool */
    uint64_t n_pending, n_retrying;      /* retrying: pending with a failed attempt */
    uint32_t n_flight;
    uint32_t flight_cap;                 /* pushes in flight at most: lowered by failures */
    struct smq_sub *runnable_next;       /* on the model's runnable or blocked list */
    bool runnable, blocked;
    struct sub_counters count;
};

struct smq_topic {
    int64_t id;
    char name[SMQ_TOPIC_NAME_MAX + 1];
    struct smq_topic_attrs attrs;
    int64_t create_s, modify_s;
    struct smq_sub **subs;               /* sorted by name */
    size_t n_subs, cap_subs;
    uint64_t message_count;              /* topic_msgs kept */
    uint64_t published;                  /* since start-up */
};

/* The most pushes of one subscription in flight; one after a failure, until a success. */
#define TOPIC_FLIGHT_CAP 8

struct topic_model {
    struct smq_topic **topics;           /* sorted by name */
    size_t n_topics, cap_topics;
    struct smq_sub **sub_buckets;        /* id → subscription */
    size_t n_sub_buckets, n_subs_total;
    struct topic_msg **msg_buckets;      /* seq → message */
    size_t n_msg_buckets, n_msgs;
    struct smq_sub *runnable_head, *runnable_tail;
    size_t n_runnable, n_runnable_push;  /* on it; of them, HTTP subscriptions */
    struct smq_sub *blocked;             /* runnable once the open transaction commits */
    uint64_t n_notifs;                   /* pending, in all */
};

int topic_model_init(struct topic_model *m);
/* Frees every topic, subscription, message and notification (notifications
 * on a wheel must have been cancelled: topic_model_clear does both). */
void topic_model_free(struct topic_model *m);
/* Cancels every notification's timer on w and frees everything; the model
 * stays usable (empty). */
void topic_model_clear(struct topic_model *m, struct twheel *w);

/* ---- topics ---- */

struct smq_topic *topic_find(const struct topic_model *m, const char *name);
/* Index of the first topic whose name is >= name. */
size_t topic_lower_bound(const struct topic_model *m, const char *name);
/* Makes room for one more topic (call before writing).  0 or SMQ_E_NOMEM. */
int topic_reserve(struct topic_model *m);
struct smq_topic *topic_new(int64_t id, const char *name, const struct smq_topic_attrs *a,
                            int64_t create_s, int64_t modify_s);
/* Inserts t (a name not present; room reserved). */
void topic_insert(struct topic_model *m, struct smq_topic *t);
/* Takes t out of the model and frees it with its subscriptions, messages
 * and notifications (their timers cancelled on w). */
void topic_destroy(struct topic_model *m, struct smq_topic *t, struct twheel *w);
void topic_info(const struct smq_topic *t, struct smq_topic_info *out);
/* The topic of id in by_id[0..n), sorted by id (recovery builds one as the
 * rows load), or NULL. */
struct smq_topic *topic_in_id_order(struct smq_topic *const *by_id, size_t n, int64_t id);

/* ---- subscriptions ---- */

struct smq_sub *topic_sub_find(const struct smq_topic *t, const char *name);
struct smq_sub *topic_sub_find_id(const struct topic_model *m, int64_t id);
size_t topic_sub_lower_bound(const struct smq_topic *t, const char *name);
/* Makes room for one more subscription of t.  0 or SMQ_E_NOMEM. */
int topic_sub_reserve(struct topic_model *m, struct smq_topic *t);
/* A subscription of attrs (an endpoint notify_endpoint_parse accepts):
 * NULL when out of memory or the endpoint does not parse. */
struct smq_sub *topic_sub_new(int64_t id, const char *name, const struct smq_sub_attrs *a,
                              int64_t create_s, int64_t modify_s);
/* Inserts s into t (a name not present there; room reserved). */
void topic_sub_insert(struct topic_model *m, struct smq_topic *t, struct smq_sub *s);
/* Takes s out of its topic and frees it with its notifications. */
void topic_sub_destroy(struct topic_model *m, struct smq_sub *s, struct twheel *w);
void topic_sub_info(const struct smq_sub *s, struct smq_sub_info *out);
/* Whether a message tagged tag ("" = untagged) goes to s (§13.8). */
bool topic_sub_matches(const struct smq_sub *s, const char *tag);

/* ---- published messages ---- */

struct topic_msg *topic_msg_find(const struct topic_model *m, uint64_t seq);
/* Registers msg (its fields set, pending 0) under t. */
void topic_msg_insert(struct topic_model *m, struct smq_topic *t, struct topic_msg *msg);

/* ---- notifications ---- */

/* Links n (sub, msg, attempts, due_ms set) to its subscription and message
 * and places it: READY when due_ms <= now_ms, else WAITING on w. */
void topic_notif_link(struct topic_model *m, struct topic_notif *n, int64_t now_ms,
                      struct twheel *w, int64_t epoch_minus_mono_ms);
/* Takes n out of its place (the READY FIFO only at its head; the flight
 * list anywhere; the wheel). */
void topic_notif_unplace(struct topic_notif *n, struct twheel *w);
/* Unlinks and frees n (taken out of its place first); frees its message
 * with its last notification.  Returns true when the message went too. */
bool topic_notif_destroy(struct topic_model *m, struct topic_notif *n);
/* Puts n (unplaced) on the READY FIFO of its subscription. */
void topic_notif_make_ready(struct topic_model *m, struct topic_notif *n);
/* Puts n (unplaced) on its subscription's flight list. */
void topic_notif_fly(struct topic_notif *n);
/* n's in-flight attempt of message seq, or NULL. */
struct topic_notif *topic_flight_find(const struct smq_sub *s, uint64_t seq, uint32_t attempt);

static inline struct topic_notif *topic_notif_from_timer(struct twheel_node *t)
{
    return (struct topic_notif *)((char *)t - offsetof(struct topic_notif, timer));
}

/* ---- the runnable list: subscriptions with READY notifications ---- */

void topic_mark_runnable(struct topic_model *m, struct smq_sub *s);
/* Takes the first runnable subscription off the list, or NULL. */
struct smq_sub *topic_take_runnable(struct topic_model *m);
/* Puts back subscriptions taken off the list (a runnable_next chain from
 * head to tail, in the order taken) at its front, as they were. */
void topic_requeue_front(struct topic_model *m, struct smq_sub *head, struct smq_sub *tail);
/* s (taken off the runnable list) waits for a commit: its next push is of
 * a row not committed yet. */
void topic_block(struct topic_model *m, struct smq_sub *s);
/* Every blocked subscription becomes runnable again. */
void topic_unblock_all(struct topic_model *m);

#endif
