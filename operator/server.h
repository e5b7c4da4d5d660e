/* server.h -- the daemon's state (one struct, like Redis's `server`) and
 * the interface between its parts: the reconciler table, per-object
 * operator state, the batched writes flushed once per loop turn, and the
 * queue cycle.
 *
 * Thread model: everything here belongs to the main loop's thread. The
 * watch threads only push events to `evq`; the metrics thread only reads
 * opmetrics (which has its own lock).
 *
 * main.c owns the only instance (its one global) and runs the loop:
 *   srv_init -> srv_start (client, store, watches, metrics) ->
 *   repeat { pop events -> srv_dispatch; srv_cron; srv_flush } ->
 *   srv_deinit. */
#ifndef AIQ_OPERATOR_SERVER_H
#define AIQ_OPERATOR_SERVER_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/aiq_err.h"
#include "common/model.h"
#include "operator/api_aggr.h"
#include "operator/gpu_mech.h"
#include "operator/cache.h"
#include "operator/foreign.h"
#include "operator/kube_evq.h"
#include "operator/kube_http.h"
#include "operator/kube_watch.h"
#include "operator/leader.h"
#include "operator/log.h"
#include "operator/metrics.h"
#include "operator/visibility.h"
#include "operator/nodefacts.h"
#include "policy/policy_adapter.h"
#include "operator/status.h"
#include "operator/store.h"
#include "operator/util_source.h"
#include "queue/queue.h"

typedef enum {
    OPK_AIJOB = 0,
    OPK_POLICY,
    OPK_GROUP,
    OPK_USERQUOTA,
    OPK_NODE,
    OPK_POD,
    OPK__N
} opkind;

struct server;

/* One row of the reconciler table (Redis command-table style): what to
 * watch and who handles its events. on_event gets the cache entry after
 * the event was applied (NULL for DELETED, with the deleted object in
 * obj). */
struct reconciler {
    opkind kind;
    const char *resource;  /* plural: "aijobs" */
    const char *group;     /* "" for core */
    const char *version;
    const char *kind_name; /* "AIJob" */
    bool namespaced;
    void (*on_event)(struct server *s, enum kube_event_type t,
                     struct opcache_obj *o, json_object *obj);
};

/* The table, indexed by opkind (reconcile.c). */
extern const struct reconciler srv_reconcilers[OPK__N];

/* Per-AIJob operator state (cache entry ext->job). */
/* The last decision journaled for a job (action "": none yet). */
struct opdecision {
    int level, pos, attempts;
    char action[16], reason[OPST_NAME];
};

struct opjob {
    /* What every cycle reads of every job comes first, in as few cache
     * lines as it fits (job_sync_wanted_js, the cycle's input, the status
     * economy); st's own hot fields follow it. */
    bool loaded;               /* st recovered from the live status */
    bool teardown;             /* deleting the gang's pods */
    /* The cycle syncs a job only when job_sync_wanted_js says so (the
     * phases a timer or a pod creation moves, or a flag); pod and AIJob
     * events sync it at once. */
    bool resync;               /* sync at the next cycle (set by events) */
    bool pods_ready;           /* Queued with every pod on the server (at its last sync) */
    bool group_hold;           /* waits for its namespace's Group (job__group);
                                  why: cold->hold_reason, hold_msg */
    uint8_t group_said;        /* the Group condition its Event told, so it is
                                  told once (job_group_event): 0 none, 1
                                  NoGroup, 2 GroupConflict */
    bool released;             /* every pod ungated */
    bool preempted;            /* this teardown is a preemption (by whom, why:
                                  cold->preempted_by, preempt_reason) */
    bool journaled;            /* arrival written to the journal */
    bool pre_current;          /* pre_put: the live status is in the current form */
    uint64_t pre_put;          /* st holds the live status of this put of the
                                  entry, read as it was listed
                                  (job_preload_listed); 0 = not read */
    /* Preemption and elastic resizing (operator/actions.c). */
    int held;                  /* teardown: placements its terminating pods
                                  still hold (counted by the queue) */
    int stopping;              /* running: top replicas being stopped (shrink) */
    int grow_from;             /* running: replicas [grow_from, nplacement) are
                                  new and being released; 0 = none */
    int grow_start;            /* running: replicas [grow_start, nplacement)
                                  grew at grow_t and do not all run yet (the
                                  start timeout, GrowTimedOut); 0 = none */
    double node_lost_t;        /* placed: a node of the gang lost since (0 = none) */
    double backoff_until;      /* requeue not before (unix s) */
    uint64_t ident;            /* q_job.ident: a hash of the uid, nonzero */
    uint64_t ident_at;         /* the cache entry's put count it was taken at */
    /* Its (group, user) in the cycle's user directory (cycle.c): entry
     * user_ix, valid while the cache entry's put count is user_at and
     * the directory's epoch user_epoch. */
    uint64_t user_at;
    int32_t user_ix;
    uint32_t user_epoch;
    double attained_gpu_s;     /* GPU-seconds over finished attempts */
    double predicted_s;        /* runtime predicted from history (predict.h), 0 = none */
    /* Status economy (docs/operator.md "Status writes"): what was last
     * published, so a status is rewritten only when something a user
     * acts on changed. */
    uint64_t pub_mhash;        /* opstatus_material_hash of st then */
    uint64_t pub_seen;         /* the cache entry's put count when rv was last compared */
    double pub_eta;            /* estimated start then */
    int pub_pos;               /* position then */
    aiq_phase pub_phase;       /* phase then: a phase change writes first */
    int64_t pub_rv;            /* the object's resourceVersion then, as the
                                  cache entry's rv (OPCACHE_RV_NONE: none) */
    int npre_t;                /* entries of pre_t */
    struct opdecision last_dec; /* journal only changes */
    struct opstatus st;        /* what we want the status to say */
    /* The rest. */
    double pre_t[8];           /* its last preemptions (ring, unix s: when its
                                  pods were gone), rebuilt from the store on load */
    int64_t own_rv;            /* the resourceVersion our last status write
                                  made, as the cache entry's rv (OPCACHE_RV_NONE: none) */
    struct opst_place *place;  /* placement buffer, place_cap entries */
    int place_cap;
    struct opst_term *terms;   /* st.terms' storage, terms_cap entries (NULL: none) */
    int terms_cap;
    struct opst_tnames *tnames; /* a reference to the labels terms' names point
                                  into (the policy that set them may be gone) */
    aiq_phase teardown_to;     /* phase once the pods are gone */
    char last_event[OPST_NAME];/* reason of the last Event emitted */
    int64_t recorded_gen;      /* generation last written to the store */
    /* What few jobs ever need (job_cold makes it): NULL = none yet. */
    struct opjob_cold *cold;
    double grow_t;
    /* Nodes where its last growth did not start (GrowTimedOut): growth
     * keeps off them until `until` (--grow-backoff). NULL = none. */
    struct opgrow_avoid *grow_avoid;
    double seg_t;              /* run GPU time counted up to here (0 = not running) */
    double run_gpu_s;          /* GPU-seconds of this run before seg_t */
};

/* The parts of a job's state that only a refused pod, a Group hold or a
 * preemption fill: kept apart so that every job does not carry them. */
struct opjob_cold {
    /* A pod of the job can never be made: its template cannot be built
     * into a pod, or the API server refused the pod for good (422, or a
     * Pod Security violation). The next sync rejects the job with this. */
    char pod_refused[512];
    char hold_reason[32];      /* Group hold: NoGroup, GroupConflict */
    char hold_msg[512];        /* ... and the message */
    char preempted_by[OPCACHE_KEY_MAX]; /* the job a preemption made room for */
    char preempt_reason[OPST_NAME];    /* Preempted, PreemptedByScore, Reclaimed */
};

/* js->cold, made (zeroed) on first use; NULL when out of memory. */
struct opjob_cold *job_cold(struct opjob *js);

/* Makes js->place hold at least n entries (js->place_cap; what was in it
 * stays). A job gets its placement buffer when it is placed, not before:
 * an entry is half a kilobyte, a replica each, and most jobs wait.
 * Returns 0, or -1 on ENOMEM (js unchanged). */
int job_place_reserve(struct opjob *js, int n);

#define OP_GROW_AVOID 8
struct opgrow_avoid {
    double until;              /* unix s */
    int n;
    char node[OP_GROW_AVOID][AIQ_MAX_NAME + 1];
    int32_t idx[OP_GROW_AVOID]; /* this cycle's node indexes (cycle.c) */
};

/* Operator state attached to every cached object. */
struct opext {
    json_object *want_status;  /* desired .status (owned), NULL = none; not
                                * for AIJobs (want_job) */
    bool want_job;             /* AIJob: the desired status is job->st, built
                                * when written (srv__want_job_status) */
    bool dirty;                /* compare and write at the next flush */
    bool listed;               /* its key is on the server's dirty list */
    bool urgent;               /* a phase change: written before the rest */
    double dirty_since;        /* when it became dirty (unix s) */
    double want_at;            /* want_job: when it was published (unix s),
                                * the time of a condition it changes */
    struct opjob *job;         /* AIJob only */
    oppolicy *compiled;        /* QueuePolicy only: last good compile */
    int64_t compiled_gen;      /* QueuePolicy only: its metadata.generation */
    bool accepted;             /* UserQuota only: counted by the queue */
    char *group;               /* UserQuota only: its group (owned; NULL none):
                                * a pointer, not a buffer, as every AIJob has
                                * a struct opext too */
    int node_told;             /* Node only: exclusion last told (nodex + 1, 0 none yet) */
    int node_ready;            /* Node only: 1 Ready, 2 NotReady, 0 not seen yet */
    int node_usable;           /* Node only: 1 placeable (Ready, schedulable, facts
                                * complete), 2 not, 0 not seen yet */
};

/* Events waiting to be posted are capped (older kept, newer dropped) and
 * posted at most this many per loop turn, so a burst of thousands of
 * transitions cannot stall the loop on Event writes. */
#define SRV_EVENTS_MAX 1000
#define SRV_EVENTS_PER_TURN 100
/* Gated pods created per loop turn (and per cycle): a burst's thousands
 * of pods go out over several short turns, so the loop keeps reading the
 * watch and writing statuses (whose budget refills per turn) meanwhile. */
#define SRV_PODS_PER_TURN 250
/* While pods wait to be created only phase changes are written (see
 * srv_flush), and any other due status once it has waited this long. */
#define SRV_STATUS_WAIT_MAX_S 10.0
/* A due cycle waits while Nodes are still becoming placeable (an uncordon
 * of many nodes reaches the operator as a stream of Node events) until
 * none has for SRV_SETTLE_S, at most SRV_SETTLE_MAX_S (srv_cron). */
#define SRV_SETTLE_S 0.1
#define SRV_SETTLE_MAX_S 1.0

struct srv_flags {
    const char *kubeconfig, *context, *db_path, *metrics_addr;
    const char *lease_ns, *lease_name, *identity;
    oplog_level log_level;
    long cycle_ms;             /* 1000 */
    double start_timeout_s;    /* pods not all running after admission: 300 */
    double grow_backoff_s;     /* nodes of a timed-out growth avoided this long: 600 */
    double backoff_base_s;     /* requeue backoff base: 10 (doubles, cap 300) */
    double unsched_grace_s;    /* Unschedulable pinned pod -> requeue after: 5 */
    double capacity_grace_s;   /* nodes held still this long before "can never fit": 60 */
    double node_lost_s;        /* a gang's node deleted/NotReady this long -> requeue: 60 */
    const char *ungrouped;     /* jobs in a namespace no Group owns: "wait" (default),
                                  "run" (no quota, said so) or a Group's name */
    bool leader_elect;
    double journal_retention_s; /* 0 = keep forever; default 30 days */
    long journal_max_mib;      /* database size the journal is pruned to: 512 (0 = no cap) */
    bool api_remote;           /* /journal and /queue for non-loopback clients too */
    double status_writes_per_s; /* AIJob status write budget: 1000 */
    /* --cache-freeze-after: a cached AIJob or pod nobody read for one
     * to two times this is kept as text (cache.h, "Frozen entries"):
     * 2 s; 0 = never. */
    double freeze_after_s;
    enum gpu_mech gpu_mech;    /* --gpu-mechanism (default device-plugin) */
    /* Live utilisation (util_source.h); util_url NULL = off. */
    const char *util_url;      /* --util-prometheus-url */
    double util_interval_s;    /* --util-interval: 15 */
    double util_stale_s;       /* --util-stale-after: 60 */
    const char *util_node_label; /* --util-node-label (NULL: node, kubernetes_node, Hostname) */
    bool util_alnair;          /* --util-alnair-annotations: Alnair profiler's node annotations */
    struct opaggr_opts aggr;   /* --aggregated-addr etc.; addr NULL: off */
};

struct server {
    struct srv_flags flags;
    struct oplog log;
    struct kube_config *kcfg;
    struct kube_client *kc;
    store *db;
    opmetrics *metrics;
    opapi *api;                /* read-only journal API behind /journal */
    opvis *vis;                /* the live queue behind /queue */
    opauth *auth;              /* --api-remote: token and RBAC checks (api_auth.h) */
    oputil *util;              /* live GPU utilisation, or NULL (util_apply.c) */
    int util_told;             /* state last logged: 0 none, 1 up, 2 down */
    opaggr *aggr;              /* --aggregated-addr: query.aiq.dev over TLS (api_aggr.h) */
    struct kube_evq *evq;
    struct kube_watch *watch[OPK__N];
    unsigned long watch_errors[OPK__N]; /* errors already logged, per watch */
    double last_watch_check;   /* unix s */
    opcache *cache[OPK__N];
    /* The pod cache's pool of equal subtrees (pod_lean.h): the lean
     * spec, status and annotations every waiting gated pod shares. */
    struct jshare *pod_share;
    bool listed[OPK__N];       /* first full list seen */
    /* Pods aiq does not run (foreign.h): a second pod watch, the lean
     * cache it feeds, and whether its first list is in. */
    struct kube_watch *foreign_watch;
    fpods *foreign;
    bool foreign_listed;
    unsigned long foreign_watch_errors;
    bool ready;
    struct leader lead;
    bool leading;              /* leader (or no election) */
    q_state *q;
    oppolicy *dflt_policy;
    char active_policy[AIQ_MAX_NAME + 1]; /* "" = built-in default */
    uint64_t policy_gen;       /* bumps q_input.gen */
    bool cycle_wanted;         /* something changed since the last cycle */
    uint64_t clamp_gen;        /* pol_after_cycle: policy_gen counted, */
    unsigned long clamp_seen;  /* and its clamped scores counted so far */
    double last_cycle;         /* unix s */
    double nodes_grew_at;      /* a Node last became placeable (unix s; 0 never) */
    double settle_from;        /* a due cycle first waited for Nodes still
                                * arriving (unix s; 0 not waiting) */
    int64_t ncycles;
    struct cy_udir *udir;      /* the cycle's users, kept between cycles (cycle.c) */
    struct cy_rows *cyrows;    /* each job's cycle input, kept between cycles (cycle.c) */
    /* aiq's pods bound to a node, as the pod cache was after its put
     * count puts and ndel deletions (capacity_others; valid: the list
     * was made). */
    struct {
        uint64_t puts, ndel;
        bool valid;
        size_t n, cap;
        struct opcache_obj **o;
    } bound;
    double last_lease, last_prune;
    /* srv_trim_cron: events dispatched (all kinds), the count at the
     * last trim and at the start of the current window, when that window
     * started and when the last trim ran (unix s). */
    uint64_t trim_events, trim_base, trim_win_base;
    double trim_win_at, last_trim;
    double freeze_at;          /* srv_freeze_cron's last step (unix s) */
    struct opcache_freeze_stats freeze_pub; /* what it last put on /metrics */
    /* the freeze sweep rested at its last step; it came to rest after
     * freezing since the last trim (srv_trim_cron trims on a quiet
     * window then, even under SRV_TRIM_EVENTS) */
    bool freeze_idle, trim_settled;
    uint64_t event_seq;
    json_object *pending_events; /* array of Events to POST at flush */
    unsigned long events_dropped; /* Events dropped at the cap this turn */
    bool cap_seen;             /* capgrace.c: a node list was seen */
    uint64_t cap_fp;           /* its configured capacity's fingerprint */
    double cap_changed_at;     /* when that last changed (unix s) */
    /* Objects with a status to write, by kind: the keys of those made
     * dirty since the last flush and of those it left dirty (budget,
     * failed writes), so a flush visits them and not every cached object.
     * A key may name an object deleted since (skipped). */
    struct srv_dirty {
        char **key;
        size_t n, cap;
    } dirty[OPK__N];
    bool dirty_scan;           /* a key could not be listed (out of memory):
                                  the next flush scans every object */
    struct opst_budget status_budget; /* --status-writes-per-s */
    bool release_turn;         /* this turn's cycle released pods (srv_flush) */
    /* What a restart's replay reads for every job at once
     * (jobs_replay_begin); NULL outside it. */
    struct srv_replay *replay;
    /* Gated pods to create, oldest first (item[head .. n)); their
     * placeholders are in the pod cache. Each is kept as the text of
     * its request, not as a tree: a burst of arrivals queues thousands. */
    struct srv_podq {
        struct srv_pod_out **item;
        size_t head, n, cap;
    } podq;
    volatile int stop;         /* set by the signal handler */
    int exit_code;             /* main's status when stop was set by the loop */
    /* store_guard.c: the store's health. */
    bool store_bad;            /* a store failure since start */
    double store_bad_since;    /* unix s */
    char store_reason[600];    /* the first failure's message ("store: commit: ...") */
    double last_store_check;   /* unix s */
};

/* main's exit status after a storage fault healed (store_guard.c): the
 * restart rebuilds what the store lost. */
#define SRV_EXIT_STORE 3

/* ---- server.c ------------------------------------------------------------- */

/* Fills s with defaults (flags included); allocates nothing. */
void srv_init(struct server *s);

/* Connects (kubeconfig or in-cluster), opens the store, creates the
 * caches, the event queue and the queue state, starts the metrics server
 * and one watch per reconciler. On error returns the rc with err filled;
 * srv_deinit cleans up whatever was started. */
aiq_rc srv_start(struct server *s, aiq_err *err);

/* Stops the watches and the metrics server, releases the lease, closes
 * the store and frees everything. Safe after a failed srv_start. */
void srv_deinit(struct server *s);

/* Applies one watch event to its cache and calls the kind's reconciler.
 * Takes nothing (the caller frees ev). */
void srv_dispatch(struct server *s, struct kube_event *ev);

/* Periodic work (Redis serverCron): lease renewal, the queue cycle every
 * --cycle-ms or sooner after a change, journal retention. */
void srv_cron(struct server *s, double now);

/* How long the loop may wait for the next watch event before srv_cron is
 * due again (ms, 0..200, at most --cycle-ms): shorter when a wanted cycle
 * comes due sooner (its minimum spacing, or Nodes settling). */
long srv_wait_ms(const struct server *s, double now);

/* Writes what the turn batched: status patches of dirty objects and
 * pending Events; commits nothing itself (the store commits per cycle). */
void srv_flush(struct server *s);

/* Current time (unix seconds, wall clock). */
double srv_now(void);

/* ---- store_guard.c: fail closed on storage ------------------------------- */

/* Marks the store unhealthy (the first reason is kept, with since-when),
 * counts aiq_store_failures_total{op}, sets /readyz to 503 and logs
 * event=store_failed op=OP msg=... for key (may be NULL). e may be NULL. */
void srv_store_failed(struct server *s, const char *op, const char *key, const aiq_err *e);

/* rc == AIQ_OK, else srv_store_failed(op, key, e) and false. */
bool srv_store_ok(struct server *s, aiq_rc rc, const char *op, const char *key,
                  const aiq_err *e);

/* The result rc of a store call made for the record (a mark, a journal
 * line, a view row): AIQ_OK, or AIQ_ENOTFOUND (nothing there to change),
 * is true. A database failure (the store kept it, store_fault) makes the
 * store unhealthy (srv_store_failed): the turn publishes nothing. Any other
 * error (a refused argument: the store is fine) is logged as
 * store_refused. op names the call in both. */
bool srv_rec(struct server *s, aiq_rc rc, const char *op);

/* True when this turn's decisions may be published: the store is healthy
 * and its handle kept no failure (store_fault; one found now makes the
 * store unhealthy). */
bool srv_store_publishable(struct server *s);

/* Ends the turn's transaction: commits it when publishable, else rolls it
 * back. True when what the turn decided is recorded and may be published
 * (also when no transaction was open and the store is healthy). */
bool srv_store_settle(struct server *s);

/* run_every(1 s): checks the database file's identity; while unhealthy
 * rescues a removed file or probes a write, and when the store is good
 * again sets stop with exit_code SRV_EXIT_STORE. */
void srv_store_cron(struct server *s, double now);

/* ---- helpers shared by the reconcilers (server.c) ------------------------- */

/* The ext of o, created on first use (NULL on ENOMEM). */
struct opext *srv__ext(struct opcache_obj *o);

/* The cached AIJob a pod of ours belongs to (label aiq.dev/job, same
 * namespace), or NULL. key (cap bytes) gets "ns/job", or "" when the pod
 * has no such label. */
struct opcache_obj *srv__pod_job(struct server *s, json_object *pod, char *key, size_t cap);

/* Sets o's desired status (takes st) and marks it dirty when it differs
 * from the last desired one. */
void srv__want_status(struct server *s, struct opcache_obj *o,
                      json_object *st);

/* Marks an AIJob dirty with its job state's st as the desired status,
 * published at time at: the status JSON is built only when the write goes
 * out (srv_status_prep), from st as it is then, so a status that waits
 * for the budget holds no JSON and one replaced before its turn is never
 * built. */
void srv__want_job_status(struct server *s, struct opcache_obj *o, double at);

/* A gated pod queued for creation: its cache key and its JSON text (the
 * request's body), in one block. */
struct srv_pod_out {
    size_t klen, blen;
    char kb[];                 /* key NUL body NUL */
};

/* Queues the creation of a gated pod (takes pod): it goes into the pod
 * cache at once as a placeholder, so no sync creates it twice, and is
 * POSTed with the next srv__flush_pods. Only its text waits in the
 * queue (a pod's tree costs several times its text). */
void srv__create_pod(struct server *s, json_object *pod);

/* Creates up to max of the queued pods (0: all), oldest first, as one
 * parallel batch: a created pod replaces its placeholder, AlreadyExists
 * keeps it (the watch brings the real one), a failure removes it so the
 * next sync retries. Returns the number of pods it tried to create. */
int srv__flush_pods(struct server *s, size_t max);

/* Queues an Event about o of kind k (flushed with the turn). */
void srv__event(struct server *s, opkind k, json_object *obj,
                const char *type, const char *reason, const char *message);
/* The same about the cached object o (its kind is its cache's), read
 * (and so thawed when frozen) only when the Event is not dropped at the
 * queue's cap. */
void srv__event_of(struct server *s, struct opcache_obj *o,
                   const char *type, const char *reason, const char *message);

/* API path of the cached object o of kind k (sub: NULL or "status"),
 * from its key ("ns/name" or "name"): a frozen entry is not read back
 * for it. */
aiq_rc srv__path_of(char *buf, size_t cap, opkind k, const struct opcache_obj *o,
                    const char *sub, aiq_err *err);

/* Borrowed metadata fields of obj ("" when absent). */
const char *srv__name(json_object *obj);
const char *srv__ns(json_object *obj);
const char *srv__rv(json_object *obj);
const char *srv__uid(json_object *obj);
int64_t srv__generation(json_object *obj);

/* The Group (cache entry, parsed) whose spec.namespaces holds ns, or
 * NULL when none does or two or more do (a conflict). */
const struct aiq_group *srv__group_for_ns(struct server *s, const char *ns);

/* How many Groups claim namespace ns; first gets the first two by name
 * (NULL where fewer). */
int srv__ns_claims(struct server *s, const char *ns, const struct aiq_group *first[2]);

/* The compiled active policy (the built-in default when none). */
oppolicy *srv__policy(struct server *s);

/* ---- reconcilers (reconcile_<kind>.c) ------------------------------------ */

void reconcile_aijob(struct server *s, enum kube_event_type t,
                     struct opcache_obj *o, json_object *obj);
void reconcile_pod(struct server *s, enum kube_event_type t,
                   struct opcache_obj *o, json_object *obj);
void reconcile_policy(struct server *s, enum kube_event_type t,
                      struct opcache_obj *o, json_object *obj);

/* After each queue cycle (srv_cron): reports scores of the running policy
 * that were clamped (oppolicy_clamped) in the aiq_scores_clamped_total
 * metric, and on the first one logs policy_score_clamped and writes the
 * policy's status.warnings naming the term. */
void pol_after_cycle(struct server *s);
void reconcile_group(struct server *s, enum kube_event_type t,
                     struct opcache_obj *o, json_object *obj);
void reconcile_userquota(struct server *s, enum kube_event_type t,
                         struct opcache_obj *o, json_object *obj);
void reconcile_node(struct server *s, enum kube_event_type t,
                    struct opcache_obj *o, json_object *obj);

/* Level-triggered sync of one AIJob from its spec and pods (creates gated
 * pods, tracks Running/Succeeded, tears a failed gang down, suspend and
 * resume). Called on AIJob and Pod events and for every job each cycle. */
void job_sync(struct server *s, struct opcache_obj *o, double now);

/* Releases an admitted job: one merge patch per still-gated pod with its
 * node hint and the gate removed (release.h). Returns the number of pods
 * patched, or -1 after an error (logged; the next sync retries). */
int job_release(struct server *s, struct opcache_obj *o);

/* Releases several admitted jobs in one batch: builds every pod's patch,
 * sends them in parallel (release_exec.h), then applies the results. A
 * job is marked released when all its pods are. Returns the pods patched,
 * or -1 when any job had an error (logged; a later sync retries). */
int jobs_release(struct server *s, struct opcache_obj **jobs, int njobs);

/* The job's placement (js->place, js->st.nplacement) as the JSON text of
 * status.placement, for the store's attempt record; the caller frees it.
 * NULL when out of memory. */
char *job_place_json(const struct opjob *js);

/* Tells whether n placements are a size job j may run at: its replicas,
 * or for an elastic job minReplicas..maxReplicas. */
bool job_size_ok(const struct aiq_aijob *j, int n);

/* Tells whether the queue counts what the job's pods hold by its
 * placement: admitted or running at a size it may run at, or torn down
 * while its pods still hold their placement (opjob.held). capacity.c
 * then does not count those pods again. */
bool job_counted_by_placement(const struct opjob *js, const struct aiq_aijob *j);

/* Tells whether the cycle must sync the job: its phase moves by time or
 * by the operator's own pod creation (none yet, Pending, Admitted, a
 * teardown), it is Queued without all its pods, or something flagged it
 * (opjob.resync). Queued, Running, Suspended and finished jobs move only
 * by events, which sync them when they come. js is the job's state, NULL
 * when it has none yet (then a sync is wanted). */
bool job_sync_wanted_js(const struct opjob *js);

/* Before the first replay (a start's lists): reads the AIJob's live
 * status into its job state from the listed object's tree, before
 * srv_parse moves the status out as text, so the replay's job_load does
 * not parse that text back (at 100k jobs a second of the replay, which
 * nothing else runs beside). Does nothing for a job already loaded or
 * one without a status. */
void job_preload_listed(struct opcache_obj *o);

/* Flags every AIJob for a sync at the next cycle (a Group changed, this
 * replica became the leader). */
void job_resync_all(struct server *s);

/* Publishes the job's st as its desired status (srv__want_status) when
 * job_status_due says so; otherwise the status keeps what it said, at the
 * cost of a hash. */
void job_publish(struct server *s, struct opcache_obj *o, double now);

/* Status economy (docs/operator.md "Status writes"): tells whether the
 * job's st differs from its last published status in something a user
 * acts on (phase, level, group, reason, message, conditions, placement,
 * attempts, times, generation), its position or start estimate moved
 * materially (opstatus_moved), or the object was changed by someone else.
 * Score and terms alone never make a status due. js is o's state (the
 * cycle holds it: looking it up again would be one more cache miss). */
bool job_status_due(struct opcache_obj *o, struct opjob *js, double now);
/* Looks among the pods of an admitted gang (j, attempt as the status
 * shows) for one kube-scheduler keeps refusing: released (no gate), not
 * bound, PodScheduled=False with reason Unschedulable. On finding one,
 * writes "pod P pinned to node N is unschedulable: <scheduler's message>"
 * into msg (cap bytes) and returns 1; else 0 (unsched.c). */
int job_unschedulable(struct server *s, const struct aiq_aijob *j, int attempt, char *msg,
                      size_t cap);

/* Deletes every pod of the job (a Rejected job keeps none). */
void job_delete_pods(struct server *s, struct opcache_obj *o);

/* A restart's replay (srv_check_ready) syncs every AIJob at once:
 * jobs_replay_begin (srv_start, while the watches list) reads every
 * job's preemptions of the last hour and every active job's newest
 * journaled decision from the store, one scan each, into s->replay, and
 * keeps the runtime predictions made in the replay for the jobs after
 * them that ask the same; job_load and job_record use it instead of
 * queries per job, and the first cycle journals only decisions that
 * differ from the last ones (a restart used to journal every waiting
 * job's again: 100k rows at 100k jobs). On a store error or ENOMEM it
 * logs replay_not_preloaded and the jobs ask the store themselves (the
 * decisions: journaled again). jobs_replay_end frees it after the
 * replay and returns how many jobs the replay loaded (0 without one). */
void jobs_replay_begin(struct server *s);
size_t jobs_replay_end(struct server *s);

/* ---- preemption and elastic resizing (actions.c, reconcile_aijob.c) ------ */

/* Pod annotations the operator sets (docs/user-guide.md): why a pod is
 * being stopped, and an elastic job's current size (also the env
 * AIQ_REPLICAS through the downward API). */
#define ACTIONS_ANN_PREEMPTED_BY "aiq.dev/preempted-by"
#define ACTIONS_ANN_STOP_REASON "aiq.dev/stop-reason"
#define ACTIONS_ANN_REPLICAS "aiq.dev/replicas"

/* Carries out the cycle's q_output actions (in and out of that cycle;
 * jobj[i] is the cache entry of in->jobs[i]): journals each, then stops
 * victims, shrinks and grows elastic jobs. */
void cycle_actions(struct server *s, const struct q_input *in, const q_output *out,
                   struct opcache_obj *const *jobj, double now);

/* The journal's reason text of an action reason (Q_R_PREEMPTED...). */
const char *actions_reason(int r);

/* Annotates and gracefully deletes the pods of replicas [from, to) of j
 * (by: key of the job room is made for, "" none). */
void actions_stop_pods(struct server *s, const struct aiq_aijob *j, int from, int to,
                       const char *by, const char *reason);

/* Sets aiq.dev/replicas = n on the live pods [0, n) of j. */
void actions_annotate_size(struct server *s, const struct aiq_aijob *j, int n);

/* Adds aiq.dev/replicas = n to a pod merge patch; 0 or -1 (ENOMEM). */
int actions_patch_size(json_object *patch, int n);

/* Adds the env AIQ_REPLICAS (downward API of aiq.dev/replicas) to every
 * container of pod; 0 or -1 (ENOMEM). */
int actions_pod_env(json_object *pod);

/* Preempts running job o for job by (may be NULL): the Preempted
 * condition and an Event, its pods annotated and deleted gracefully; it
 * is torn down (its placement still counted as held until the pods are
 * gone) and goes back to the queue at once, attempt not counted against
 * backoffLimit. Returns 0, or -1 when o is not a running job. */
int job_preempt(struct server *s, struct opcache_obj *o, struct opcache_obj *by,
                const char *reason, const char *why, double now);

/* Shrinks running elastic job o to size replicas (its top replicas'
 * pods stopped gracefully; the size changes once they are gone). Returns
 * 0 or -1. */
int job_shrink(struct server *s, struct opcache_obj *o, int size, struct opcache_obj *by,
               const char *why, double now);

/* Grows running (or just admitted) elastic job o to size replicas at the
 * nplace placements add (node indexes into in->nodes): its status gets
 * the placement and gated pods are created for the new replicas; a later
 * sync releases them. Returns 0 or -1. */
int job_grow(struct server *s, struct opcache_obj *o, const struct q_input *in,
             const struct q_place *add, int nplace, int size, double now);

/* Recomputes the statuses of every Group and UserQuota (usage,
 * acceptance). */
void quota_refresh(struct server *s, double now);

/* Fills qn from a Node object (strings borrowed from node) through
 * node_facts_read (nodefacts.h, which says what is read). Returns 0 for a
 * usable node, 1 for a node left out (qn has no GPUs; *why, when not
 * NULL, gets the reason), -1 for a node without a name. */
int node_to_q(json_object *node, struct q_node *qn, nodex *why);

/* ---- capacity.c ------------------------------------------------------------ */

/* Fills out (room for every cached node) with the usable nodes, in cache
 * order, with their live utilisation (util_apply), and sets
 * aiq_nodes_excluded per reason. Returns how many. */
int capacity_nodes(struct server *s, struct q_node *out);

/* Counts against nodes (nnodes, sorted by name) what the cycle does not
 * account by placement: every foreign pod bound to one of them, and aiq's
 * own pods whose gang holds no placement (torn down, terminating). Sets
 * aiq_foreign_pods. */
void capacity_others(struct server *s, struct q_node *nodes, int nnodes);

/* Frees what capacity_others keeps between cycles. */
void capacity_free(struct server *s);

/* ---- util_apply.c ---------------------------------------------------------- */

/* With --util-prometheus-url: creates and starts s->util and hands it to
 * the metrics server for GET /util (with --util-alnair-annotations too).
 * Without either: nothing. Errors name the flag (util_source.h). */
aiq_rc util_start(struct server *s, aiq_err *err);

/* Sets util_known / gpu_util of nodes[0..n) from s->util, and for nodes
 * it leaves unknown from Alnair's node annotations when
 * --util-alnair-annotations (all unknown without a source); logs
 * util_source_down / util_source_up once per change of state and sets the
 * aiq_util_* metrics. */
void util_apply(struct server *s, struct q_node *nodes, int n, double now);

/* Applies one event of the foreign-pod watch to s->foreign. */
void capacity_dispatch(struct server *s, struct kube_event *ev);

/* ---- cycle.c --------------------------------------------------------------- */

/* Runs one queue cycle at time now: builds the queue input from the
 * caches and the store, runs q_cycle_run with the active policy, admits
 * and releases gangs, updates statuses and journals the decisions. */
void cycle_run(struct server *s, double now);

/* Frees what cycles keep between them (the user directory). */
void cycle_free(struct server *s);

#endif
