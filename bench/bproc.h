/* bproc.h -- what the process benchmarks share (bench_api_servers.c,
 * bench_operator_e2e.c): the API servers and the operator started as
 * child processes, parallel API clients and watch streams to them,
 * readers for /proc/PID/status and the operator's /metrics, and
 * percentiles. Not a benchmark itself (no main); linked into every
 * bench program.
 *
 * Requests go through the operator's own kube client (kube_http.h), so
 * TLS, bearer tokens and connection reuse are the operator's. Watch
 * streams use libcurl directly, because the benchmarks need the time each
 * line arrives, which kube_watch does not keep.
 *
 * Every function that can fail returns 0 or -1 and, where it has an err
 * buffer, writes one line saying why. */
#ifndef AIQ_BENCH_BPROC_H
#define AIQ_BENCH_BPROC_H

#include <stddef.h>
#include <sys/types.h>

#include "operator/kube_http.h"

/* ---- time, knobs, numbers ---------------------------------------------- */

/* Monotonic seconds. */
double bp_now(void);

/* An environment knob: a positive integer below 10^9, else dflt. */
long bp_env_long(const char *name, long dflt);

/* An environment knob: a positive number, else dflt. */
double bp_env_double(const char *name, double dflt);

/* An environment knob: the string (borrowed), or dflt when unset or "". */
const char *bp_env_str(const char *name, const char *dflt);

/* A progress line on stderr, "[+12.3s] ...", when BENCH_VERBOSE is set
 * (seconds since the first call). */
void bp_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Parses a comma list of positive integers ("1000,10000") into out (at
 * most cap). Returns how many, or -1 when an item is not a number. */
int bp_parse_list(const char *s, long *out, int cap);

/* The p-quantile (0..1) of v[0..n-1] by the nearest-rank rule, sorting v
 * in place. 0 when n is 0. */
double bp_pct(double *v, int n, double p);

/* ---- API servers --------------------------------------------------------- */

enum bp_kind { BP_LOCAL, BP_REAL };

/* "local" or "real". */
const char *bp_kind_name(enum bp_kind k);

/* The binary each kind runs (build/rel/aiq-apiserver,
 * build/realcluster/aiq-realcluster; BENCH_LOCAL_BIN / BENCH_REAL_BIN
 * override them). */
const char *bp_kind_bin(enum bp_kind k);

/* A server started by bp_server_start. */
struct bp_server {
    enum bp_kind kind;
    pid_t pid;
    char dir[200];         /* its own directory: kubeconfig, log, state */
    char kubeconfig[256];
    char log[256];
    double ready_s;        /* seconds from exec to the "listening" line */
    struct kube_config *cfg;   /* owned */
    struct kube_client *kc;    /* owned; pool of `pool` connections */
};

/* Writes a nodes file (test/fixtures/nodes-small.yaml format) to path:
 * n_a100 nodes "gpuP-K" (entries of 1,000) of 8 NVIDIA-A100 GPUs (80 GiB), cordoned when
 * cordoned is set, and n_h100 nodes "aprobe-N" of 8 NVIDIA-H100 GPUs,
 * schedulable. Returns 0 or -1. */
int bp_write_nodes(const char *path, int n_a100, int cordoned, int n_h100);

/* Starts a server of kind k as a child process in dir (created if
 * needed): --port 0 --kubeconfig dir/kubeconfig --nodes nodes_file --db
 * dir/api.db (a SQLite file for the local server, the etcd state
 * directory for the real one) plus extra (NULL-terminated, may be NULL),
 * output to dir/api.log. Waits up to timeout_s for the "listening" line,
 * then loads the kubeconfig and makes a client with `pool` connections.
 * On error the child is stopped, *s holds nothing to free and err says
 * why. */
int bp_server_start(struct bp_server *s, enum bp_kind k, const char *dir,
                    const char *nodes_file, const char *const *extra,
                    int pool, double timeout_s, char *err, size_t errcap);

/* Stops the server (SIGTERM, SIGKILL after 20 s) and frees the client.
 * s may be zeroed (nothing started). */
void bp_server_stop(struct bp_server *s);

/* One request through s->kc; returns the HTTP status (0 on a transport
 * error). body may be NULL. When resp is non-NULL it gets the response
 * body (caller frees), for 2xx only. */
int bp_req(struct bp_server *s, const char *method, const char *path,
           const char *ctype, const char *body, char **resp);

/* Creates every document of each YAML file through the API by POST to
 * collection (e.g. the CRDs' collection path). edit, when non-NULL, may
 * change each document first (0, or -1 when it could not: the document is
 * not sent). Returns 0 or -1 (a document that already exists counts as
 * created). */
int bp_post_yaml(struct bp_server *s, const char *const *files, int n,
                 const char *collection, int (*edit)(json_object *doc),
                 char *err, size_t errcap);

/* Waits up to timeout_s until GET path answers 200. Returns 0 or -1. */
int bp_wait_get(struct bp_server *s, const char *path, double timeout_s);

/* The current resourceVersion of a collection (a LIST with limit=1), as
 * a string in buf. Returns 0 or -1. */
int bp_list_rv(struct bp_server *s, const char *path, char *buf, size_t cap);

/* ---- the operator's pod and release patch ---------------------------------- */

/* The AIJob body the benchmarks create (what `kubectl create -f` sends for
 * a one-replica job): name, namespace ns, user u<user>, priority, one GPU
 * of gpu_model (NULL for any) with 10 GiB, 1 cpu, 4Gi, and the simulated
 * run time `duration` ("1h") on the pod template. Returns a new string
 * (caller frees) or NULL. */
/* body (an object's JSON) with the annotation `kubectl apply` adds when it
 * creates an object: kubectl.kubernetes.io/last-applied-configuration, the
 * manifest itself as a string. A new string (caller frees), NULL on
 * ENOMEM or when body is not a JSON object. */
char *bp_as_applied(const char *body);

char *bp_aijob_body(const char *ns, const char *name, int user, int priority,
                    const char *gpu_model, const char *duration);

/* The gated pod the operator would create for replica 0 of a one-GPU
 * AIJob (operator/pods.c: gate, resources, env, annotations), named name
 * in ns, without the owner reference and the aiq.dev/job label: the
 * operator must not take it for one of its own, and the real server's
 * garbage collector would delete a pod whose owner does not exist.
 * Returns a new object or NULL. */
json_object *bp_gated_pod(const char *ns, const char *name);

/* The merge patch the operator's release sends to that pod for node
 * `node` (operator/release.c: node hint annotations, node affinity, gate
 * removal), as a new string (caller frees) or NULL. */
char *bp_release_patch(json_object *pod, const char *node);

/* ---- parallel clients --------------------------------------------------- */

/* One operation: number i of the run. Returns 0 when it succeeded. Runs
 * on up to nthreads threads at once. */
typedef int (*bp_op)(void *ctx, long i);

/* Runs op for i = 0..n-1 on nthreads threads taking the next i from a
 * shared counter (as release_exec.c's batch threads do), stopping early
 * once cap_s seconds have passed. *done gets the operations started and
 * finished, *ok those that returned 0. Returns the wall seconds. */
double bp_parallel(int nthreads, long n, double cap_s, bp_op op, void *ctx,
                   long *done, long *ok);

/* ---- watch streams ------------------------------------------------------ */

/* Called on the watch thread for every line (one event) with the time it
 * arrived (bp_now). line is NUL-terminated and borrowed. */
typedef void (*bp_line_fn)(void *ud, const char *line, size_t len, double t);

struct bp_watch; /* opaque */

/* Starts a watch stream on its own thread: GET path_query (a path with
 * ?watch=true...) on the server, calling fn for every line. A stream the
 * server ends is opened again from the last resourceVersion seen. Returns
 * NULL on error. */
struct bp_watch *bp_watch_start(struct bp_server *s, const char *path_query,
                                bp_line_fn fn, void *ud);

/* Stops the stream (within about a second), joins and frees it. w may be
 * NULL. */
void bp_watch_stop(struct bp_watch *w);

/* Lines that could not be delivered because they passed the 16 MiB cap,
 * and stream restarts. */
void bp_watch_stats(struct bp_watch *w, long *toobig, long *restarts);

/* Copies the value of the first "key":"value" string after `after` (or
 * from the start when after is NULL or absent) in line into buf. Returns
 * buf, or NULL when absent or too long. A cheap scan for watch lines. */
const char *bp_json_str(const char *line, const char *after, const char *key,
                        char *buf, size_t cap);

/* ---- the operator --------------------------------------------------------- */

struct bp_operator {
    pid_t pid;
    char bin[256];
    char log[256];
    char db[256];
    int metrics_port;
    double started;   /* bp_now() at fork */
    double ready;     /* bp_now() when "event=ready" was seen, else 0 */
    long logpos;      /* how far the log was read */
};

/* Whether the operator has exited: 1 (it is reaped, op->pid becomes 0,
 * and why says how: "exited with status N" or "was killed by signal N
 * (NAME)"), else 0. A row whose operator died must say so, not wait out
 * its caps and print figures of nothing. */
int bp_operator_gone(struct bp_operator *op, char *why, size_t cap);

/* Starts the operator binary (BENCH_OPERATOR, default
 * build/rel/aiq-operator) against s with --db db, --metrics-addr
 * 127.0.0.1:0, --cycle-ms cycle_ms, logging to log (appended). Waits up
 * to timeout_s for its metrics port and its "event=ready" line. Returns
 * 0, or -1 with the child stopped and err saying why. */
int bp_operator_start(struct bp_operator *op, const struct bp_server *s,
                      const char *db, const char *log, int cycle_ms,
                      double timeout_s, char *err, size_t errcap);

/* Sends sig to the operator; for SIGKILL and SIGTERM also reaps it
 * (SIGKILL at once, SIGTERM after up to 10 s then SIGKILL). */
void bp_operator_signal(struct bp_operator *op, int sig);

/* VmRSS of pid in KiB, or -1. */
long bp_rss_kib(pid_t pid);

/* CPU seconds (user + system, every thread) pid has used, from
 * /proc/PID/stat, or -1. */
double bp_cpu_s(pid_t pid);

/* bp_cpu_s of pid plus that of each of its children (a server that runs
 * parts of itself as child processes, as the real control plane runs
 * kube-scheduler), or -1 when pid's own cannot be read. */
double bp_tree_cpu_s(pid_t pid);

/* CPU seconds the whole machine has spent idle (idle + iowait, every
 * core, /proc/stat) since boot, or -1. */
double bp_idle_s(void);

/* The size in bytes of the file path, or -1 when it does not exist. */
long long bp_file_bytes(const char *path);

/* The operator's histogram of cycle seconds and counters, from /metrics. */
#define BP_MAX_BUCKETS 24
struct bp_metrics {
    int nb;
    double le[BP_MAX_BUCKETS];   /* upper bounds; the last is +Inf */
    double cum[BP_MAX_BUCKETS];  /* cumulative counts */
    double sum, count;           /* aiq_cycle_seconds_sum, _count */
    double admitted;             /* aiq_admitted_total */
    double frozen, thaws;        /* aiq_cache_frozen_objects, aiq_cache_thaws_total */
};

/* Scrapes http://127.0.0.1:port/metrics. Returns 0 or -1. */
int bp_metrics_get(int port, struct bp_metrics *m);

/* The q-quantile of the cycles observed between a and b (b - a), by
 * linear interpolation inside the bucket as Prometheus's
 * histogram_quantile does; a quantile in the +Inf bucket gives the last
 * finite bound. 0 when no cycle ran. */
double bp_hist_quantile(const struct bp_metrics *a, const struct bp_metrics *b,
                        double q);

#endif
