/* apisrv_int.h -- private layout of the local API server, shared by its
 * .c files (server, store, types, objects, verbs, watch, table, discovery).
 *
 * Locking: one mutex (apisrv.mu) guards everything below it: the SQLite
 * handle, the resourceVersion, the type registry and the event history.
 * Functions named apisrv__* expect the caller to hold it unless their
 * comment says otherwise. Watches wait on apisrv.cond, which is broadcast
 * on every event and on stop. */
#ifndef AIQ_APISRV_INT_H
#define AIQ_APISRV_INT_H

#include <json-c/json.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "test/apiserver/apiserver.h"

#define APISRV__MAX_BODY (8u << 20)   /* request body cap */
/* Deepest JSON nesting a body may have (k8s.io/apimachinery's and Go's
 * encoding/json limit); objects are read back from the store with it. */
#define APISRV__MAX_JSON_DEPTH 10000
/* json-c's limit for that: it counts the value inside the innermost
 * object as one more level. */
#define APISRV__JSONC_DEPTH (APISRV__MAX_JSON_DEPTH + 2)
#define APISRV__MAX_NAME 253          /* metadata.name length cap */
#define APISRV__KEY 256               /* "group/resource" */
#define APISRV__SCAN_SHAPES 8         /* store scans: key, ns, after given or not */

#define APISRV__MAX_GROUPS 16           /* groups kept per user */
#define APISRV__MAX_TOKENS 10000        /* lines of a --tokens file */

/* Who makes a request (authentication in auth.c). */
struct apisrv__user {
    char name[256];
    char uid[128];
    char groups[APISRV__MAX_GROUPS][128];
    int n_groups;
};

/* One line of the static token file. */
struct apisrv__token {
    char *token;                 /* owned */
    struct apisrv__user user;
};

/* One served resource (a built-in or one version of a CRD's kind). */
struct apisrv__type {
    char group[128];     /* "" for the core group */
    char version[64];
    char resource[96];   /* plural, lower case */
    char kind[96];
    char singular[96];
    char key[APISRV__KEY]; /* storage key "group/resource" */
    bool namespaced, custom, has_status;
    char short_names[4][32];
    int n_short;
    char categories[4][32];
    int n_cat;
    json_object *schema;   /* owned: openAPIV3Schema, or NULL */
    json_object *columns;  /* owned: additionalPrinterColumns, or NULL */
    long long since_rv;    /* a CRD's kind: the resourceVersion it was first
                            * served at; watches from before it are too old,
                            * as the real server's watch cache starts then */
};

/* One write in the watch history. */
struct apisrv__event {
    long long rv;
    char type[12];             /* ADDED, MODIFIED, DELETED */
    char key[APISRV__KEY];
    char ns[APISRV__MAX_NAME + 1];
    json_object *obj;          /* owned */
    json_object *prev;         /* owned: the object before a MODIFIED, or NULL */
    char *text;                /* owned: obj serialized (plain), made when
                                * it was stored (by the first watcher that
                                * sends it for a CRD or DELETED), or NULL */
};

struct apisrv {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    sqlite3 *db;
    sqlite3_stmt *st_get, *st_put, *st_del, *st_meta_put;
    sqlite3_stmt *st_owners_get, *st_owned_del, *st_owned_ins; /* owned index */
    sqlite3_stmt *st_begin, *st_commit, *st_rollback;
    sqlite3_stmt *st_scan[APISRV__SCAN_SHAPES]; /* apisrv__store_scan's, by shape */
    bool scan_busy[APISRV__SCAN_SHAPES];        /* ... while one runs */
    long long rv;                    /* last resourceVersion handed out */
    struct apisrv__type **types;
    int n_types, cap_types;
    struct apisrv__event *hist;      /* ring buffer */
    int hist_cap, hist_len, hist_head; /* head = index of the oldest */
    long long hist_base_rv;          /* events <= this are not replayable */
    struct MHD_Daemon *mhd;
    int port;
    bool stopping;
    int n_watches;                   /* open watch streams */
    char *token;                     /* the admin token (--token / --admin-token) */
    struct apisrv__token *tokens;    /* --tokens file entries */
    int n_tokens;
    bool authn;                      /* a tokens file is loaded: anonymous allowed */
    bool authz_rbac;                 /* --authz=rbac */
    char *tls_dir, *tls_cert, *tls_key;
    bool tls;
    char *fp_dir;                    /* front-proxy CA and client pair (aggregator.c), with --tls */
    double aggr_checked;             /* last APIService availability check (simulator thread) */
    bool aggr_any;                   /* an APIService existed at that check (under mu) */
    json_object *aggr_disc;          /* APIService name -> {group, version, list}: the
                                        APIResourceList of each Available one (under mu) */
    struct apisrv_faults faults;
    unsigned rnd;                    /* fault-injection PRNG state */
    unsigned long long uid_seq;
    double time_scale;
    char *nodes_file;
    /* the simulator loop, when started (simloop.c) */
    void (*sim_stop)(apisrv *s);
    void *sim;
};

/* ---- request results (Status bodies) ----------------------------------- */

/* The outcome of an operation: code 0 means success; otherwise the fields
 * of the Kubernetes Status to send. */
struct apisrv__st {
    int code;
    char reason[48];
    char message[4096];
    char name[APISRV__MAX_NAME + 1];
    char group[128];
    char kind[96];
    json_object *causes;   /* owned array of {reason, field, message} */
};

void apisrv__st_init(struct apisrv__st *st);
void apisrv__st_deinit(struct apisrv__st *st);
/* Sets code/reason/message (first error wins); returns -1. */
int apisrv__st_set(struct apisrv__st *st, int code, const char *reason,
                   const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* 404 `<resource>.<group> "name" not found` with details. Returns -1. */
int apisrv__st_notfound(struct apisrv__st *st, const struct apisrv__type *t,
                        const char *name);
/* Builds the Status body (new object). */
json_object *apisrv__st_json(const struct apisrv__st *st);
/* Copies st into err (code mapped to aiq_rc); returns that code. */
aiq_rc apisrv__st_err(const struct apisrv__st *st, aiq_err *err);
/* "aijobs.aiq.dev" or "pods" into buf. */
void apisrv__qualified(const struct apisrv__type *t, char *buf, size_t cap);
/* Appends the cause {reason, field, message} to st's causes (the message
 * formatted from fmt). */
void apisrv__st_cause(struct apisrv__st *st, const char *reason, const char *field,
                      const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Turns the causes collected in st into a 422 Invalid whose message reads
 * like the real one: `Pod "x" is invalid: spec.y: ...`, several causes in
 * brackets, repeated ones once (field.ErrorList.ToAggregate). Returns -1. */
int apisrv__st_invalid(struct apisrv__st *st, const struct apisrv__type *t,
                       const char *name);
/* True when st holds at least one cause. */
bool apisrv__st_has_causes(const struct apisrv__st *st);

/* ---- store.c: SQLite persistence ---------------------------------------- */

typedef int (*apisrv__row_cb)(void *u, const char *key, const char *ns,
                              const char *name, const char *json);
aiq_rc apisrv__store_open(apisrv *s, const char *path, aiq_err *err);
void apisrv__store_close(apisrv *s);
/* Parses stored JSON text (nested up to APISRV__MAX_JSON_DEPTH); new
 * reference or NULL. */
json_object *apisrv__parse(const char *text);
/* The calling thread's tokener for APISRV__MAX_JSON_DEPTH levels, reset
 * (borrowed: freed when the thread ends; use it for one parse at a time,
 * never across a call that may parse), or NULL when out of memory. */
json_tokener *apisrv__tokener(void);
/* Returns the parsed object (new ref) or NULL. */
json_object *apisrv__store_get(apisrv *s, const char *key, const char *ns,
                               const char *name);
/* text: obj serialized plain (the caller's, borrowed). */
aiq_rc apisrv__store_put(apisrv *s, const char *key, const char *ns,
                         const char *name, json_object *obj, const char *text);
aiq_rc apisrv__store_del(apisrv *s, const char *key, const char *ns,
                         const char *name);
/* Calls cb for rows of key (every key when NULL), in ns when non-NULL,
 * ordered by ns, name, starting strictly after (after_ns, after_name)
 * when after_name is non-NULL. Stops when cb returns non-zero. */
int apisrv__store_scan(apisrv *s, const char *key, const char *ns,
                       const char *after_ns, const char *after_name,
                       apisrv__row_cb cb, void *u);
/* Rows whose ownerReferences name uid. */
int apisrv__store_scan_owned(apisrv *s, const char *uid, apisrv__row_cb cb,
                             void *u);
/* A transaction around the statements of one write: begin, then end
 * with ok true to commit (AIQ_EDB and nothing kept when the commit
 * fails) or false to roll back (returns AIQ_OK). */
aiq_rc apisrv__store_begin(apisrv *s);
aiq_rc apisrv__store_end(apisrv *s, bool ok);
/* The stored resourceVersion counter. */
long long apisrv__store_load_rv(apisrv *s);
aiq_rc apisrv__store_save_rv(apisrv *s, long long rv);
/* Last applied configuration of a field manager (server-side apply). */
json_object *apisrv__store_applied_get(apisrv *s, const char *key,
                                       const char *ns, const char *name,
                                       const char *manager);
aiq_rc apisrv__store_applied_put(apisrv *s, const char *key, const char *ns,
                                 const char *name, const char *manager,
                                 json_object *cfg);
void apisrv__store_applied_drop(apisrv *s, const char *key, const char *ns,
                                const char *name);

/* ---- types.c: the resource registry ------------------------------------- */

aiq_rc apisrv__types_init(apisrv *s);
void apisrv__types_free(apisrv *s);
const struct apisrv__type *apisrv__type_find(apisrv *s, const char *group,
                                             const char *version,
                                             const char *resource);
/* By plural (or "resource.group"); the first served version. */
const struct apisrv__type *apisrv__type_by_resource(apisrv *s,
                                                    const char *resource);
/* By key "group/resource"; the first served version. */
const struct apisrv__type *apisrv__type_by_key(apisrv *s, const char *key);
/* Registers (or re-registers) the kinds a CRD object serves; with
 * remove, unregisters them. */
void apisrv__types_sync_crd(apisrv *s, json_object *crd, bool remove);

/* ---- objects.c: the write path shared by HTTP and in-process callers ---- */

struct apisrv__wopts {
    bool dry_run;
    bool strict;            /* fieldValidation=Strict */
    bool status_only;       /* write to the status subresource */
    const char *manager;    /* fieldManager or NULL */
    const char *propagation;/* delete: Background, Foreground, Orphan */
    bool has_grace;         /* delete: DeleteOptions.gracePeriodSeconds given */
    long long grace;        /* ... its value */
    const char *uid_pre;    /* delete: preconditions.uid, or NULL */
    const char *rv_pre;     /* delete: preconditions.resourceVersion, or NULL */
    const struct apisrv__user *user; /* the requester (HTTP): admission runs;
                                      * NULL (in-process callers): it does not */
};

/* Each returns 0 and sets *out (new ref, may be NULL when out is NULL) or
 * -1 with st filled. obj is taken over on every path. */
int apisrv__create(apisrv *s, const struct apisrv__type *t, const char *ns,
                   json_object *obj, const struct apisrv__wopts *o,
                   json_object **out, struct apisrv__st *st);
int apisrv__update(apisrv *s, const struct apisrv__type *t, const char *ns,
                   const char *name, json_object *obj,
                   const struct apisrv__wopts *o, json_object **out,
                   struct apisrv__st *st);
/* apisrv__update with cur (borrowed, not changed), the stored object the
 * caller read under the same hold of the lock, instead of reading it
 * again; NULL reads it. A patch has it already. */
int apisrv__update_cur(apisrv *s, const struct apisrv__type *t, const char *ns,
                       const char *name, json_object *obj, json_object *cur,
                       const struct apisrv__wopts *o, json_object **out,
                       struct apisrv__st *st);
int apisrv__delete(apisrv *s, const struct apisrv__type *t, const char *ns,
                   const char *name, const struct apisrv__wopts *o,
                   json_object **out, struct apisrv__st *st);
/* Current time as RFC3339 into buf. */
void apisrv__now_rfc3339(char *buf, size_t cap);
double apisrv__now(void);
/* Borrowed obj.k, creating an empty object there if absent. */
json_object *apisrv__obj_child(json_object *obj, const char *k);

/* ---- validate.c: generic name and metadata rules ------------------------ */

#define APISRV__MAX_MSGS 4
/* The messages one k8s.io/apimachinery IsXxx check returns. */
struct apisrv__msgs {
    int n;
    char m[APISRV__MAX_MSGS][512];
};
/* Each appends the real messages for v to m (none when v is valid). */
void apisrv__is_dns1123_subdomain(const char *v, struct apisrv__msgs *m);
void apisrv__is_dns1123_label(const char *v, struct apisrv__msgs *m);
void apisrv__is_qualified_name(const char *v, struct apisrv__msgs *m);
void apisrv__is_label_value(const char *v, struct apisrv__msgs *m);
/* Go's %q of s into buf (always NUL-terminated, truncated to cap). */
void apisrv__go_quote(const char *s, char *buf, size_t cap);
/* One FieldValueInvalid cause `Invalid value: "<value>": <msg>` at field
 * for each message of m. */
void apisrv__cause_invalid_msgs(struct apisrv__st *st, const char *field, const char *value,
                                const struct apisrv__msgs *m);
/* Label keys and values of the map labels (borrowed) with causes at
 * field ("metadata.labels", "spec.nodeSelector"). */
void apisrv__validate_labels(json_object *labels, const char *field, struct apisrv__st *st);
/* ObjectMeta of obj for kind t: name or generateName, labels,
 * annotations, owner references, finalizers; causes appended to st. */
void apisrv__validate_meta(const struct apisrv__type *t, json_object *obj, struct apisrv__st *st);

/* ---- pod_rules.c: defaulting and validation of pods ---------------------- */

/* Applies the real server's pod defaults to pod in place (see
 * pod_rules.c); quantities become canonical. Returns 0, or -1 with a 400
 * BadRequest in st for a quantity the decoder refuses. */
int apisrv__pod_default(json_object *pod, struct apisrv__st *st);
/* status.qosClass for pod: "Guaranteed", "Burstable" or "BestEffort". */
const char *apisrv__pod_qos(json_object *pod);
/* ValidatePodCreate's spec checks (ObjectMeta is validate.c's); causes
 * appended to st. */
void apisrv__pod_validate_create(json_object *pod, struct apisrv__st *st);
/* ValidatePodUpdate of nw against the stored old (both defaulted);
 * causes appended to st. */
void apisrv__pod_validate_update(json_object *nw, json_object *old, struct apisrv__st *st);

/* podsecurity.c (lock held): Pod Security Admission's enforce mode for a
 * pod created in ns (four of the baseline checks; see the file). Returns
 * 0, or -1 with the real server's 403 in st. */
int apisrv__pod_security(apisrv *s, const char *ns, const char *name, json_object *pod,
                         struct apisrv__st *st);

/* ---- binding.c: the pods/binding subresource ------------------------------ */

/* Binds pod ns/name as POST .../pods/NAME/binding does with the Binding
 * body binding (borrowed): validation, uid/resourceVersion
 * preconditions, refusal of a pod being deleted, bound or gated (409),
 * then spec.nodeName, the Binding's annotations and PodScheduled=True in
 * one write. Returns 0, or -1 with st filled as the real server answers. */
int apisrv__pod_bind(apisrv *s, const char *ns, const char *name, json_object *binding,
                     bool dry_run, struct apisrv__st *st);
/* Stores obj (a new version of an existing object, taken over) as a
 * MODIFIED without the update rules: subresources that write on their
 * own (binding) use it. Returns 0 or -1 with st filled. */
int apisrv__commit_modified(apisrv *s, const struct apisrv__type *t, const char *ns,
                            const char *name, json_object *obj, json_object *prev,
                            struct apisrv__st *st);

/* ---- watch history ------------------------------------------------------ */

/* Records an event (takes new references on obj and prev, the object
 * before a MODIFIED or NULL; takes ownership of text, obj serialized
 * plain, or NULL for its first watcher to make) and wakes watchers. */
void apisrv__emit(apisrv *s, const char *type, const char *key,
                  const char *ns, json_object *obj, json_object *prev, char *text);
/* The serialized text of obj when obj is the object of the latest event
 * and that text was made when it was committed (borrowed), else NULL. */
const char *apisrv__last_text(apisrv *s, json_object *obj);

/* ---- HTTP layer (server.c, routes.c, verbs.c, watch.c, ...) ------------- */

struct MHD_Connection;
struct apisrv__watch;

struct apisrv__req {
    apisrv *s;
    struct MHD_Connection *conn;
    const char *method;
    const char *url;
    const char *accept;
    const char *ctype;
    char *body;
    size_t len, cap;
    bool too_big;
    struct apisrv__user user;    /* set by apisrv__authenticate */
};

struct apisrv__resp {
    int code;
    char *body;                  /* malloc'd */
    size_t len;
    const char *ctype;           /* static string */
    struct apisrv__watch *watch; /* non-NULL: stream this watch */
};

/* Query parameter or NULL. */
const char *apisrv__q(const struct apisrv__req *r, const char *name);
/* Serializes obj (borrowed) as the JSON body. */
void apisrv__resp_json(struct apisrv__resp *w, int code, json_object *obj);
void apisrv__resp_status(struct apisrv__resp *w, const struct apisrv__st *st);
/* A copy of text as the body. */
void apisrv__resp_text(struct apisrv__resp *w, int code, const char *ctype,
                       const char *text);
/* body (malloc'd, len bytes) as the body, taken over. */
void apisrv__resp_take(struct apisrv__resp *w, int code, const char *ctype, char *body,
                       size_t len);
/* Shortcut for a Status error. */
void apisrv__resp_err(struct apisrv__resp *w, int code, const char *reason,
                      const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* routes.c: dispatches one request (lock NOT held; takes it as needed). */
void apisrv__route(struct apisrv__req *r, struct apisrv__resp *w);

/* Splits the writable path p in place at '/' (runs of '/' are one
 * separator; the slashes become NULs) into seg[0..max). Returns how many
 * segments, or -1 when there are more than max. Used by the router and
 * the aggregation proxy. */
int apisrv__split_path(char *p, char **seg, int max);

/* discovery.c (lock held) */
bool apisrv__discovery(apisrv *s, struct apisrv__req *r, struct apisrv__resp *w);

/* verbs.c (lock held): one resource request. */
struct apisrv__target {
    const struct apisrv__type *t;
    const char *ns;       /* NULL for cluster scope or all namespaces */
    const char *name;     /* NULL for collections */
    const char *sub;      /* "status" or NULL */
};
void apisrv__verb(apisrv *s, struct apisrv__req *r, const struct apisrv__target *tg,
                  struct apisrv__resp *w);
/* Applies label/field selectors from the query; 0 ok, -1 with a 400 set. */
struct sel;
int apisrv__selectors(struct apisrv__req *r, struct sel **ls, struct sel **fs,
                      struct apisrv__resp *w);

/* podlog.c (lock held): GET pods/NAME/log. */
void apisrv__pod_log(apisrv *s, struct apisrv__req *r, const struct apisrv__target *tg,
                     struct apisrv__resp *w);

/* table.c (lock held) */
bool apisrv__wants_table(const struct apisrv__req *r);
/* A Table of items (borrowed array) for t; include: "None", "Object",
 * or NULL for PartialObjectMetadata; with_defs adds columnDefinitions. */
json_object *apisrv__table(apisrv *s, const struct apisrv__type *t,
                           json_object *items, const char *include,
                           bool with_defs);

/* watch.c (lock held): starts a watch; on error fills w with a Status. */
void apisrv__watch_start(apisrv *s, struct apisrv__req *r,
                         const struct apisrv__target *tg,
                         struct apisrv__resp *w);
/* MHD content reader and free callbacks for a watch (lock NOT held). */
ssize_t apisrv__watch_read(void *cls, uint64_t pos, char *buf, size_t max);
void apisrv__watch_free(void *cls);

/* auth.c and faults.c (lock NOT held) */
/* Authenticates r (admin token, --tokens file, anonymous) and applies
 * Impersonate-User/-Group headers; fills r->user and returns 0, or -1
 * with a 401 (bad token) or 403 (impersonation not allowed) in w. */
int apisrv__authenticate(apisrv *s, struct apisrv__req *r, struct apisrv__resp *w);
/* Loads a kube-apiserver static token file (CSV token,user,uid,"g1,g2");
 * on error fills err naming the line and leaves s without tokens. */
aiq_rc apisrv__tokens_load(apisrv *s, const char *path, aiq_err *err);
void apisrv__tokens_free(apisrv *s);
/* The user a bearer token names (the admin token, a tokens-file line):
 * true and *u filled, or false for a token the server does not know. */
bool apisrv__token_user(apisrv *s, const char *tok, struct apisrv__user *u);

/* reviews.c (lock held): POST tokenreviews (authentication.k8s.io/v1)
 * and subjectaccessreviews (authorization.k8s.io/v1), as a webhook
 * authenticator/authorizer asks them. True when r was one (w answered). */
bool apisrv__reviews(apisrv *s, struct apisrv__req *r, struct apisrv__resp *w);

/* True when u is in group g. */
bool apisrv__user_in(const struct apisrv__user *u, const char *g);
aiq_rc apisrv__tls_make_cert(apisrv *s, aiq_err *err);
/* Runs a tool (argv[0] on PATH) with stdout and stderr to /dev/null;
 * returns its exit status, -1 when it could not run. */
int apisrv__run_tool(char *const argv[]);

/* ---- aggregator.c: APIServices ------------------------------------------ */

#define APISRV__FRONT_PROXY_CN "front-proxy-client"
/* Makes the front-proxy CA and client pair (openssl) in a temp dir,
 * s->fp_dir. On failure fills err; apisrv__aggr_free removes what was made. */
aiq_rc apisrv__aggr_init(apisrv *s, aiq_err *err);
void apisrv__aggr_free(apisrv *s);
/* Proxies r when its path is under a registered APIService with a
 * service (authorizing it first); returns false when it is not (lock not
 * held on entry or exit). */
bool apisrv__aggr_route(apisrv *s, struct apisrv__req *r, struct apisrv__resp *w);
/* Simulator thread, each tick: at most once a second, checks every
 * APIService and writes its Available condition when it changed. */
void apisrv__aggr_tick(apisrv *s);
/* Discovery (lock held): appends to groups one APIGroup per Available
 * APIService's group (legacy /apis), or, when v2, one APIGroupDiscovery
 * to items (aggregated /apis). */
void apisrv__aggr_discovery(apisrv *s, bool v2, json_object *groups);
void apisrv__tls_free(apisrv *s);
aiq_rc apisrv__write_kubeconfig(apisrv *s, const char *path, aiq_err *err);
bool apisrv__fault(apisrv *s, struct apisrv__req *r, struct apisrv__resp *w);

/* authz.c (lock held): RBAC for a resource request when --authz=rbac;
 * true when allowed, else a 403 Forbidden is in w. */
/* authz.c (lock held): whether user may do verb on the resource, as
 * RBAC says (true without --authz=rbac); for the admission authorizer. */
bool apisrv__rbac_check(apisrv *s, const struct apisrv__user *user, const char *verb,
                        const char *group, const char *resource, const char *sub,
                        const char *name, const char *ns);
bool apisrv__rbac_allowed(apisrv *s, struct apisrv__req *r,
                          const struct apisrv__target *tg, struct apisrv__resp *w);

/* admission.c (lock held): the stored ValidatingAdmissionPolicies and
 * their bindings for a write by u (op "CREATE" or "UPDATE"; obj the new
 * object, old the stored one or NULL; sub "status" or NULL). Returns 0
 * when admitted, or -1 with st filled as the real server words a denial. */
int apisrv__admit(apisrv *s, const struct apisrv__type *t, const char *op,
                  const char *ns, const char *name, const char *sub,
                  json_object *obj, json_object *old,
                  const struct apisrv__user *u, bool dry_run,
                  struct apisrv__st *st);

/* base64 (kubeconfig certificate data); returns malloc'd string. */
char *apisrv__base64(const unsigned char *data, size_t len);

#endif
