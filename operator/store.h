/* store.h -- the operator's SQLite store: what the API server does not hold.
 *
 * The API server is the truth about objects; this store keeps the views the
 * operator needs between restarts (users, groups, user quotas, jobs with
 * their history, nodes and GPUs), GPU usage per user and group in hourly
 * buckets, and the decision journal.
 *
 * Durability: the database runs in WAL mode with synchronous=NORMAL. A
 * process crash (kill -9, abort) loses nothing that was committed; an OS
 * crash or power loss may lose the last few committed transactions but
 * never corrupts the file. So durability is "up to the last committed
 * cycle" for the failures the operator sees in practice, and a cycle costs
 * no fsync of its own. The operator is level-triggered and re-derives
 * anything lost from the API server; usage accounting is keyed by
 * (job uid, attempt), so replaying a lost cycle counts nothing twice.
 *
 * Transactions: a queue cycle wraps its writes in store_begin() ..
 * store_commit() (one commit per cycle). Every write function is also
 * atomic by itself (a savepoint), so it may be called outside a cycle.
 *
 * Strings: every const char * argument is borrowed for the duration of the
 * call; NULL means "not set" where the comment says so. Results come back
 * in caller-owned structs with fixed-size buffers (nothing to free).
 *
 * Errors: every function returns AIQ_OK or an aiq_rc, with details in the
 * optional aiq_err (SQLite's message for AIQ_EDB). A failed write leaves
 * the database as it was before the call (the open cycle, if any, stays
 * open and the caller decides to roll back or go on).
 *
 * Callbacks (store_list_*, store_usage_each, store_runtime_history) run
 * while the query is open: they may read with other store functions but
 * must not start the same listing again nor write (collect first, write
 * after). A callback returning nonzero stops the walk; the call still
 * returns AIQ_OK.
 *
 * One store handle is used by one thread at a time. */
#ifndef AIQ_OPERATOR_STORE_H
#define AIQ_OPERATOR_STORE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "common/aiq_err.h"
#include "common/model.h"

typedef struct store store;

/* Buffer sizes of the result structs (the model's limits plus the NUL). */
#define STORE_NAME_SZ (AIQ_MAX_NAME + 1)
#define STORE_STR_SZ (AIQ_MAX_STRING + 1)
/* Cap on a JSON text handed to the journal (payloads, score terms). */
#define STORE_MAX_JSON (64 * 1024)
/* Usage bucket width in seconds. */
#define STORE_BUCKET_S 3600

/* ---- open, close, transactions ----------------------------------------- */

struct store_opts {
    int busy_timeout_ms;   /* 0 = 5000 */
    /* Fault injection for reliability tests: when > 0, the Nth data write
     * (counted from open, see store_write_count) fails with AIQ_EDB
     * "injected failure". Only that one write fails. */
    long fail_write_n;
};

/* Opens (creating if needed) the database at path (":memory:" allowed),
 * sets WAL, synchronous=NORMAL and the busy timeout, and migrates the
 * schema to the newest version. opts may be NULL (defaults). Returns the
 * handle (caller owns; store_close) or NULL with err filled: AIQ_EDB when
 * SQLite fails, AIQ_ESTATE when the file's schema is newer than this
 * build. */
store *store_open(const char *path, const struct store_opts *opts,
                  aiq_err *err);

/* Closes s: rolls back an open transaction, finalizes the cached
 * statements. store_close(NULL) does nothing. */
void store_close(store *s);

/* Schema version this build writes (PRAGMA user_version after open). */
int store_schema_version(void);

/* Cycle transactions. store_begin starts a write transaction (BEGIN
 * IMMEDIATE); AIQ_ESTATE if one is open. store_commit makes it durable;
 * on failure the transaction is rolled back. store_rollback drops it
 * (AIQ_OK when none is open). */
aiq_rc store_begin(store *s, aiq_err *err);
aiq_rc store_commit(store *s, aiq_err *err);
aiq_rc store_rollback(store *s, aiq_err *err);
bool store_in_transaction(const store *s);

/* ---- health ---------------------------------------------------------------
 *
 * The handle keeps its first database failure (SQLite error, injected
 * failure, failed commit; not AIQ_ENOTFOUND or a caller's bad argument)
 * until someone looks, so a turn can be checked once before anything it
 * decided is published, even where a call's own result was handled. */

/* True when a database failure happened since open or the last
 * store_fault_clear; *first (may be NULL) gets the first one. */
bool store_fault(const store *s, aiq_err *first);
void store_fault_clear(store *s);

/* Checks that the path the store was opened with still names the file it
 * has open (same device and inode). AIQ_OK when it does (and always for
 * ":memory:"); AIQ_ENOTFOUND when the path is gone, AIQ_ECONFLICT when
 * it names another file, AIQ_EIO when stat fails otherwise; err says
 * which, with the path and inodes. */
aiq_rc store_check_file(store *s, aiq_err *err);

/* A small durable write (rewrites the schema version in its own
 * transaction): AIQ_OK when the database takes writes again. Not allowed
 * inside a cycle transaction (AIQ_ESTATE). */
aiq_rc store_probe(store *s, aiq_err *err);

/* The database's path was removed while open: copies everything the open
 * connection sees (committed data) into a new file at the same path
 * (written as PATH.rescue, then renamed into place) and closes the
 * handle's connection, so the old WAL goes with the old file. After the
 * call (success or not) s only answers store_close; the caller exits and
 * a restart opens the rescued file. AIQ_EEXIST when the path exists
 * again (a file someone put there is not overwritten); AIQ_EDB/AIQ_EIO
 * with the reason otherwise (PATH.rescue is removed). */
aiq_rc store_rescue(store *s, aiq_err *err);

/* Data writes attempted since open (what fail_write_n counts), and a way
 * to re-arm the fault (n <= 0 disarms; n counts from the next write). */
long store_write_count(const store *s);
void store_set_fail_write(store *s, long n);

/* ---- groups, users, user quotas ----------------------------------------- */

struct store_group {
    char name[STORE_NAME_SZ];
    int32_t level;
    struct aiq_quota quota;
    struct aiq_budget budget;
    double shares;
    int nnamespaces;
    int nmembers;
};

/* Writes g (metadata.name, level, quota, budget, shares) and replaces its
 * namespaces and members (the users view). */
aiq_rc store_upsert_group(store *s, const struct aiq_group *g, aiq_err *err);
/* Removes the group, its namespaces and members (AIQ_OK if absent). */
aiq_rc store_delete_group(store *s, const char *name, aiq_err *err);
/* Reads a group into *out; AIQ_ENOTFOUND if absent. */
aiq_rc store_group_get(store *s, const char *name, struct store_group *out,
                       aiq_err *err);
/* Copies the name of the group owning namespace ns into buf (size bytes);
 * AIQ_ENOTFOUND if no group lists ns. */
aiq_rc store_group_for_namespace(store *s, const char *ns, char *buf,
                                 size_t size, aiq_err *err);
/* The user's level inside group; AIQ_ENOTFOUND if not a member. */
aiq_rc store_user_level(store *s, const char *user, const char *group,
                        int32_t *level, aiq_err *err);

struct store_userquota {
    char ns[STORE_NAME_SZ];
    char name[STORE_NAME_SZ];
    char user[STORE_NAME_SZ];
    char group[STORE_NAME_SZ];
    struct aiq_quota quota;
    struct aiq_budget budget;
    bool accepted;
    char reason[STORE_STR_SZ];
};

/* Writes a UserQuota with its group and the acceptance verdict (reason
 * may be NULL). */
aiq_rc store_upsert_userquota(store *s, const struct aiq_userquota *u,
                              const char *group, bool accepted,
                              const char *reason, aiq_err *err);
aiq_rc store_delete_userquota(store *s, const char *ns, const char *name,
                              aiq_err *err);
/* AIQ_ENOTFOUND if absent. */
aiq_rc store_userquota_get(store *s, const char *ns, const char *name,
                           struct store_userquota *out, aiq_err *err);

/* ---- nodes and GPUs -------------------------------------------------------- */

struct store_node {
    const char *name;
    const char *gpu_model;      /* may be NULL */
    int32_t gpu_count;
    int64_t gpu_memory_mib;     /* per GPU */
    const char *domain;         /* may be NULL */
    int64_t cpu_milli;          /* allocatable */
    int64_t memory_bytes;       /* allocatable */
    bool schedulable;
    /* Per-GPU memory, gpu_count entries; NULL = every GPU has
     * gpu_memory_mib. */
    const int64_t *gpu_memory_each;
};

/* Most GPUs one node may report (a sanity cap, far above real hardware). */
#define STORE_MAX_NODE_GPUS 256

/* Writes the node and replaces its GPU rows (index 0..gpu_count-1).
 * gpu_count must be 0..STORE_MAX_NODE_GPUS (AIQ_EINVAL). */
aiq_rc store_upsert_node(store *s, const struct store_node *n, aiq_err *err);
/* Removes the node and its GPUs (AIQ_OK if absent). */
aiq_rc store_delete_node(store *s, const char *name, aiq_err *err);

/* Calls cb once per node, ordered by name; the strings and the gpu array
 * are valid during the call only. cb returns nonzero to stop (then the
 * function returns AIQ_OK). */
typedef int (*store_node_cb)(const struct store_node *n, void *ctx);
aiq_rc store_list_nodes(store *s, store_node_cb cb, void *ctx, aiq_err *err);

/* ---- jobs ------------------------------------------------------------------ */

struct store_job {
    char uid[STORE_NAME_SZ];
    char ns[STORE_NAME_SZ];
    char name[STORE_NAME_SZ];
    char group[STORE_NAME_SZ];
    char user[STORE_NAME_SZ];
    /* spec */
    int32_t priority;
    int32_t replicas;
    int32_t gpus;
    int64_t gpu_memory_mib;
    int64_t cpu_milli;
    int64_t memory_bytes;
    char gpu_model[STORE_STR_SZ];
    char domain[STORE_STR_SZ];
    double estimated_runtime_s;
    char task_type[STORE_STR_SZ];
    char model_name[STORE_STR_SZ];
    int64_t model_parameters;
    int32_t backoff_limit;
    bool suspend;
    /* status */
    aiq_phase phase;
    int32_t level;
    int32_t position;
    double score;
    char message[STORE_STR_SZ];
    int32_t attempts;
    /* timestamps (unix seconds, 0 = unset) */
    double created, queued, admitted, started, finished, deleted;
    /* history */
    double actual_runtime_s;   /* of the last finished attempt */
    double gpu_seconds;        /* all attempts */
    double arrival_journaled;  /* when its arrival was journaled, 0 = not yet */
};

/* Inserts or updates the job's spec (keyed by metadata.uid; namespace,
 * name, group, user, resources ...). The status columns of an existing job
 * are left alone; a new job starts at AIQ_PHASE_NONE with created =
 * metadata.creationTimestamp. group may be NULL (unknown yet).
 * AIQ_EINVAL without uid, namespace, name or user; AIQ_ETOOBIG (field
 * named) when a name passes AIQ_MAX_NAME or another string
 * AIQ_MAX_STRING. */
aiq_rc store_upsert_job(store *s, const struct aiq_aijob *j,
                        const char *group, aiq_err *err);

/* Whether store_upsert_job(j, group) would leave the job's row r (read
 * with store_job_get) as it is: a caller that has the row skips the
 * upsert then (a restart records every job again). */
bool store_job_row_is(const struct store_job *r, const struct aiq_aijob *j,
                      const char *group);

struct store_job_status {
    aiq_phase phase;
    int32_t level;
    int32_t position;
    double score;
    const char *message;       /* may be NULL; at most AIQ_MAX_STRING */
    int32_t attempts;
    double finished;           /* > 0: also the job's end (as store_job_mark's
                                  STORE_JOB_FINISHED), in the same write */
};

/* Sets the status columns (and the finished time when st->finished > 0).
 * AIQ_ENOTFOUND if uid is unknown; AIQ_ETOOBIG if the message passes
 * AIQ_MAX_STRING. */
aiq_rc store_job_set_status(store *s, const char *uid,
                            const struct store_job_status *st, aiq_err *err);

typedef enum {
    STORE_JOB_QUEUED = 0,
    STORE_JOB_ADMITTED,
    STORE_JOB_STARTED,
    STORE_JOB_FINISHED,
    STORE_JOB_DELETED,
    STORE_JOB_JOURNALED,       /* its arrival went into the journal */
    STORE_JOB__NEVENTS
} store_job_event;

/* Records the time of an event in the job's life (the latest one wins).
 * AIQ_ENOTFOUND if uid is unknown, AIQ_EINVAL for a bad event. */
aiq_rc store_job_mark(store *s, const char *uid, store_job_event ev,
                      double t, aiq_err *err);

/* Reads one job; AIQ_ENOTFOUND if absent. */
aiq_rc store_job_get(store *s, const char *uid, struct store_job *out,
                     aiq_err *err);

/* Reads the newest job (by creation time) named ns/name -- a name can be
 * reused by a later object with another uid. AIQ_ENOTFOUND if none. */
aiq_rc store_job_find(store *s, const char *ns, const char *name,
                      struct store_job *out, aiq_err *err);

/* Calls cb for each job ordered by (created, uid): all of them, or with
 * active_only those not deleted and not in a final phase (Succeeded,
 * Failed, Rejected) -- what the operator reloads at restart. The struct is
 * valid during the call only; cb returns nonzero to stop. */
typedef int (*store_job_cb)(const struct store_job *j, void *ctx);
aiq_rc store_list_jobs(store *s, bool active_only, store_job_cb cb,
                       void *ctx, aiq_err *err);

/* ---- attempts and usage ---------------------------------------------------- */

/* Records that attempt (1-based) of job uid was admitted at t with the
 * placement (JSON text, may be NULL; at most STORE_MAX_JSON bytes, checked
 * to parse). Calling it again for an unfinished attempt replaces time and
 * placement; for a finished attempt it changes nothing. AIQ_ENOTFOUND if
 * the job is unknown. */
aiq_rc store_attempt_begin(store *s, const char *uid, int32_t attempt,
                           double t, const char *placement_json,
                           aiq_err *err);

/* Records when the attempt's pods all ran (first call wins). */
aiq_rc store_attempt_start(store *s, const char *uid, int32_t attempt,
                           double t, aiq_err *err);

/* Finishes an attempt, once: sets its end time, gpu_seconds and outcome
 * ("Succeeded", "Failed", "Preempted", ...), adds gpu_seconds to the job's
 * total and to the usage of the job's user and group (spread over the
 * hourly buckets between the attempt's start and t; all in t's bucket if
 * the start is unknown), and sets the job's actual_runtime_s = t - start.
 * Idempotent per (uid, attempt): a second call changes nothing and sets
 * *counted = false (counted may be NULL). All-or-nothing. AIQ_ENOTFOUND if
 * the job is unknown. */
aiq_rc store_attempt_finish(store *s, const char *uid, int32_t attempt,
                            double t, double gpu_seconds,
                            const char *outcome, bool *counted,
                            aiq_err *err);

struct store_attempt {
    int32_t attempt;
    double admitted, started, finished;
    double gpu_seconds;
    char outcome[STORE_NAME_SZ];
    char *placement_json;      /* heap; caller frees (NULL if none) */
};

/* Reads one attempt; caller frees out->placement_json. AIQ_ENOTFOUND if
 * absent. */
aiq_rc store_attempt_get(store *s, const char *uid, int32_t attempt,
                         struct store_attempt *out, aiq_err *err);

/* The end times of job uid's attempts that ended "Preempted" (its pods
 * gone after a preemption) at or after `since`: the newest max of them,
 * oldest first, in times[0..*n). An unknown job has none. On error *n is
 * 0. The operator rebuilds its per-job "preemptions in the last hour"
 * from it after a restart. */
aiq_rc store_attempt_preemptions(store *s, const char *uid, double since,
                                 double *times, int max, int *n,
                                 aiq_err *err);

/* The same for every job at once, for a restart that loads thousands:
 * cb(uid, finished, ctx) for each attempt that ended "Preempted" at or
 * after `since`, ordered by job uid, then oldest first. A cb returning
 * nonzero stops the walk (still AIQ_OK). */
typedef int (*store_preempted_cb)(const char *uid, double finished, void *ctx);
aiq_rc store_attempt_preemptions_all(store *s, double since, store_preempted_cb cb,
                                     void *ctx, aiq_err *err);

/* Adds gpu_seconds (>= 0) to the bucket holding time t of (user, group). */
aiq_rc store_usage_add(store *s, const char *user, const char *group,
                       double t, double gpu_seconds, aiq_err *err);

/* Decayed usage in GPU-hours: the sum over buckets of
 * gpu_seconds / 3600 * 2^(-(now - bucket_mid) / half_life_s), bucket_mid
 * being the middle of the bucket (buckets in the future count at weight
 * 1). half_life_s <= 0 means no decay. user and group filter (NULL = any;
 * at least one must be given, else AIQ_EINVAL). */
aiq_rc store_usage_decayed(store *s, const char *user, const char *group,
                           double now, double half_life_s, double *gpu_hours,
                           aiq_err *err);

/* Plain GPU-hours since `since` (budgets). Hour granularity: the bucket
 * holding `since` counts in full. Filters as store_usage_decayed. */
aiq_rc store_usage_window(store *s, const char *user, const char *group,
                          double since, double *gpu_hours, aiq_err *err);

/* Decayed usage of every (user, group) pair in one query, for a cycle's
 * input; cb gets the pair and its GPU-hours, ordered by user then group.
 * cb returns nonzero to stop. */
typedef int (*store_usage_cb)(const char *user, const char *group,
                              double gpu_hours, void *ctx);
aiq_rc store_usage_each(store *s, double now, double half_life_s,
                        store_usage_cb cb, void *ctx, aiq_err *err);

/* ---- runtime history (for the predictor) ----------------------------------- */

struct store_history_query {
    const char *user;          /* NULL = any */
    const char *group;         /* NULL = any */
    const char *model_name;    /* NULL = any */
    const char *task_type;     /* NULL = any */
    int limit;                 /* most recent N; <= 0 means 1000 */
};

struct store_history_row {
    const char *uid;
    double actual_runtime_s;
    double estimated_runtime_s;   /* 0 = not given */
    double finished;
    int32_t gpus, replicas;
};

/* Calls cb for finished, succeeded jobs with actual_runtime_s > 0 that
 * match q, newest first. Row strings are valid during the call only. */
typedef int (*store_history_cb)(const struct store_history_row *r,
                                void *ctx);
aiq_rc store_runtime_history(store *s, const struct store_history_query *q,
                             store_history_cb cb, void *ctx, aiq_err *err);

/* ---- decision journal ------------------------------------------------------ */

typedef enum {
    STORE_EV_JOB_ARRIVAL = 0,
    STORE_EV_JOB_DEPARTURE,
    STORE_EV_NODE,
    STORE_EV_QUOTA,
    STORE_EV_POLICY,
    STORE_EV_JOB_START,        /* all of a gang's pods run: {"uid","attempt","started"} */
    STORE_EV_JOB_REQUEUE,      /* gang down, back in the queue: {"uid","attempt",
                                  "queued","backoff_until","reason"} */
    STORE_EV_JOB_PREEMPTED,    /* a victim's pods are gone, it is back in the
                                  queue (same attempt): {"uid","queued",
                                  "preemptions","attained_gpu_hours"} */
    STORE_EV_JOB_RESIZED,      /* an elastic job's new size is in effect
                                  (grown pods placed, shrunk ones gone):
                                  {"uid","replicas"} */
    STORE_EV_JOB_RELEASED,     /* a failed or requeued attempt's pods are gone,
                                  its GPUs free (the queue held them until
                                  now): {"uid","attempt"} */
    STORE_EV__NKINDS
} store_event_kind;

/* "job_arrival", ...; NULL for an unknown kind. */
const char *store_event_kind_name(store_event_kind k);

/* Appends an input event: time, kind, key ("ns/name" or node name) and a
 * JSON payload (may be NULL; at most STORE_MAX_JSON bytes; AIQ_EPARSE with
 * the offset when it is not JSON). */
aiq_rc store_journal_event(store *s, double t, store_event_kind kind,
                           const char *key, const char *payload_json,
                           aiq_err *err);

struct store_decision {
    int64_t cycle;
    double t;
    const char *job_uid;
    const char *action;        /* "admit", "wait", "reject", "preempt", "resize" */
    int32_t level;
    int32_t position;
    double score;
    const char *terms_json;    /* score terms, JSON; may be NULL */
    const char *reason;        /* short code, e.g. "QuotaExceeded"; may be NULL */
    const char *message;       /* may be NULL */
};

/* Appends a decision. AIQ_EINVAL when job_uid or action is missing;
 * terms_json is checked as for payloads. */
aiq_rc store_journal_decision(store *s, const struct store_decision *d,
                              aiq_err *err);

/* The newest decision journaled for each job not finished or deleted
 * (a restart journals again only what differs from it): cb(d, ctx) with
 * job_uid, action, level, position and reason set (cycle, t, score,
 * terms and message are not read), ordered by uid. A cb returning
 * nonzero stops the walk (still AIQ_OK). */
typedef int (*store_decision_cb)(const struct store_decision *d, void *ctx);
aiq_rc store_journal_last_decisions(store *s, store_decision_cb cb, void *ctx,
                                    aiq_err *err);

/* Writes the journal entries with time >= since to out as JSON lines,
 * ordered by time (events before decisions at the same time, then in
 * insertion order). Each line is one object with fixed keys in this order:
 *   {"type":"event","t":T,"kind":K,"key":KEY,"payload":P}
 *   {"type":"decision","t":T,"cycle":C,"job":UID,"action":A,"level":L,
 *    "position":P,"score":S,"terms":J,"reason":R,"message":M}
 * Numbers are printed in the shortest form that reads back exactly; a
 * missing payload/terms/reason/message is null. *nlines (may be NULL)
 * gets the line count. AIQ_EIO if writing fails. */
aiq_rc store_journal_export_jsonl(store *s, FILE *out, double since,
                                  long *nlines, aiq_err *err);

/* Retention: deletes journal entries (events and decisions) older than
 * `before`; *removed (may be NULL) gets how many. */
/* Bytes of data the database holds (its pages minus the free ones). */
aiq_rc store_used_bytes(store *s, int64_t *bytes, aiq_err *err);

/* Removes the oldest journal entries (events and decisions) until the
 * database holds at most max_bytes or the journal is empty; *removed (may
 * be NULL) gets how many went. */
aiq_rc store_journal_prune_size(store *s, int64_t max_bytes, long *removed, aiq_err *err);

aiq_rc store_journal_prune(store *s, double before, long *removed,
                           aiq_err *err);

#endif
