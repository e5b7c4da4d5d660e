/* apiserver.h -- the local cluster: a small Kubernetes-API-compatible
 * server (libmicrohttpd + json-c + SQLite) used as aiq's e2e test bed and
 * the embedded cluster of `make demo`.
 *
 * Two kinds of callers:
 *  - main.c (the aiq-apiserver program) and benchmarks start and stop it;
 *  - in-process components (the simulated scheduler and kubelet in
 *    sim_*.c) read and write objects through the object API below, which
 *    applies the same rules as the HTTP API (resourceVersion, generation,
 *    watch events) but skips authentication and fault injection.
 *
 * Resource names are plural lower-case ("pods", "nodes", "events",
 * "aijobs"); ns is NULL for cluster-scoped resources. */
#ifndef AIQ_APISERVER_H
#define AIQ_APISERVER_H

#include <json-c/json.h>
#include <stdbool.h>

#include "common/aiq_err.h"

typedef struct apisrv apisrv;

struct apisrv_faults {
    double error_500_ratio;   /* fraction of requests answered 500 */
    double conflict_ratio;    /* fraction of writes answered 409 */
    double watch_cut_s;       /* cut every watch stream after this many s; 0 = never */
    double latency_ms;        /* added to every request */
    unsigned seed;
};

struct apisrv_config {
    const char *db_path;      /* SQLite file, or ":memory:" */
    int port;                 /* 0 = pick a free port */
    const char *kubeconfig_out; /* write a kubeconfig here, or NULL */
    const char *nodes_file;   /* simulated nodes (YAML/JSON), or NULL */
    double time_scale;        /* simulated kubelet speed-up, default 1 */
    bool tls;                 /* serve HTTPS with a generated certificate */
    const char *token;        /* admin bearer token (user "admin", group
                               * system:masters); without tokens_file every
                               * request must carry it */
    const char *tokens_file;  /* static token file: CSV token,user,uid,"g1,g2";
                               * requests without a token are system:anonymous */
    bool authz_rbac;          /* authorize resource requests with the stored
                               * RBAC objects (system:masters bypasses) */
    int history;              /* watch event history length, default 10000 */
    struct apisrv_faults faults;
};

/* Starts the server; returns NULL and fills err on failure. */
apisrv *apisrv_start(const struct apisrv_config *cfg, aiq_err *err);
/* The port it listens on (127.0.0.1 only). */
int apisrv_port(const apisrv *s);
/* Stops serving, ends watches, frees everything. NULL is a no-op. */
void apisrv_stop(apisrv *s);

/* ---- in-process object API (used by sim_*.c) ----------------------------
 * All take the server lock internally. Objects passed in are borrowed
 * unless the comment says "takes ownership"; returned objects are new
 * references the caller must json_object_put(). */

/* Returns the object or NULL when absent. */
json_object *apisrv_obj_get(apisrv *s, const char *resource, const char *ns,
                            const char *name);
/* Returns a new json array of every object of resource (in ns when ns is
 * non-NULL), ordered by namespace then name. */
json_object *apisrv_obj_list(apisrv *s, const char *resource, const char *ns);
/* The same, of only the objects whose stored text (compact JSON) keep()
 * accepts: a test on the text that spares parsing the others. */
json_object *apisrv_obj_list_if(apisrv *s, const char *resource, const char *ns,
                                bool (*keep)(const char *json));
/* Creates obj (takes ownership); sets uid, creationTimestamp, rv. */
aiq_rc apisrv_obj_create(apisrv *s, const char *resource, json_object *obj,
                         aiq_err *err);
/* Replaces obj (takes ownership); when status_only, only .status changes;
 * AIQ_ECONFLICT when metadata.resourceVersion is set and stale. */
aiq_rc apisrv_obj_update(apisrv *s, const char *resource, json_object *obj,
                         bool status_only, aiq_err *err);
/* Deletes (honours finalizers and owner-reference garbage collection;
 * pods are deleted gracefully, as a DELETE without options does). */
aiq_rc apisrv_obj_delete(apisrv *s, const char *resource, const char *ns,
                         const char *name, aiq_err *err);
/* DeleteOptions of apisrv_obj_delete_opts. */
struct apisrv_delete_opts {
    bool has_grace;          /* gracePeriodSeconds given ... */
    long long grace;         /* ... and its value (0: at once) */
    const char *uid;         /* preconditions.uid, or NULL */
};
/* apisrv_obj_delete with options (o may be NULL); AIQ_ECONFLICT when the
 * uid precondition fails. */
aiq_rc apisrv_obj_delete_opts(apisrv *s, const char *resource, const char *ns,
                              const char *name, const struct apisrv_delete_opts *o,
                              aiq_err *err);
/* Binds pod ns/name to node through the pods/binding subresource's rules
 * (AIQ_ECONFLICT when the pod is bound, gated or being deleted;
 * AIQ_ENOTFOUND when it is gone). */
aiq_rc apisrv_obj_bind(apisrv *s, const char *ns, const char *name, const char *node,
                       aiq_err *err);
/* Records a core/v1 Event about obj (reason, message, type Normal|Warning),
 * merging repeats into count/lastTimestamp as the real event recorder. */
aiq_rc apisrv_event(apisrv *s, json_object *involved, const char *type,
                    const char *reason, const char *message,
                    const char *component);
/* apisrv_event, but only when no such event exists yet (a kubelet says
 * "Stopping container" once per container, not once per look). */
aiq_rc apisrv_event_once(apisrv *s, json_object *involved, const char *type,
                         const char *reason, const char *message,
                         const char *component);

/* ---- the simulator (sim_*.c) -------------------------------------------- */

/* Creates the nodes listed in path (YAML or JSON list). */
aiq_rc sim_load_nodes(apisrv *s, const char *path, aiq_err *err);
/* One step of the simulated scheduler and kubelet at time now (unix s).
 * Called by the server's sim thread every 100 ms. */
void sim_tick(apisrv *s, double now, double time_scale);

/* ---- added by the server core ------------------------------------------- */

/* Starts the simulator on s: loads cfg->nodes_file (when set) with
 * sim_load_nodes, then runs a thread calling sim_tick every 100 ms at the
 * configured time scale until apisrv_stop. Separate from apisrv_start so
 * that programs not linking the simulator (unit tests) need not. */
aiq_rc apisrv_sim_start(apisrv *s, aiq_err *err);

/* The current global resourceVersion (last one handed out). */
long long apisrv_resource_version(apisrv *s);

/* The directory of the front-proxy CA and client pair
 * (front-proxy-ca.crt/.key, front-proxy-client.crt/.key) when serving
 * TLS, else NULL. */
const char *apisrv_front_proxy_dir(const apisrv *s);

#endif
