/* util_source.h -- live GPU utilisation from the Prometheus HTTP API
 * (DCGM exporter metrics), cached per node and GPU with the sample time.
 *
 * With --util-prometheus-url URL the operator runs one worker thread that
 * every --util-interval seconds sends two instant queries,
 *   GET URL/api/v1/query?query=DCGM_FI_DEV_GPU_UTIL   (percent busy)
 *   GET URL/api/v1/query?query=DCGM_FI_DEV_FB_USED    (framebuffer MiB)
 * parses the answers (oputil_parse) and merges the samples into a cache
 * keyed by (node, GPU index). The queue cycle never waits for the
 * network: it reads the cache (oputil_fill), and a node's utilisation is
 * known only when every GPU of it has a GPU_UTIL sample no older than
 * --util-stale-after seconds. Everything else -- the source down, an
 * answer that is not a success, a node missing from it, an old sample --
 * leaves the node's utilisation unknown, and placement runs without it
 * for that node; the state is in the stats the daemon turns into the log
 * line, the aiq_util_* metrics and GET /util (kubectl aiq nodes).
 *
 * The node of a series is its label --util-node-label, or by default the
 * first present of "node", "kubernetes_node" (names Prometheus relabeling
 * commonly gives the Kubernetes node) and "Hostname" (dcgm-exporter's own
 * label: the node's host name when the exporter runs with host
 * networking, as the GPU Operator deploys it). The GPU is the "gpu" label
 * (dcgm-exporter's device index; "UUID" is kept for display only).
 *
 * Thread-safety: oputil_fill, oputil_json and the stats may be called from
 * any thread; the worker holds the lock only to swap results in. */
#ifndef AIQ_OPERATOR_UTIL_SOURCE_H
#define AIQ_OPERATOR_UTIL_SOURCE_H

#include <stdbool.h>
#include <stddef.h>

#include "common/aiq_err.h"
#include "queue/queue.h"

#define OPUTIL_MAX_BODY (16u << 20)  /* bytes of one answer accepted */
#define OPUTIL_MAX_SAMPLES 200000    /* series of one answer accepted */
#define OPUTIL_MAX_ENTRIES 65536     /* (node, GPU) pairs cached */
#define OPUTIL_NODE_MAX 254          /* node names are at most 253 bytes */
#define OPUTIL_UUID_MAX 96

#define OPUTIL_Q_UTIL "DCGM_FI_DEV_GPU_UTIL"
#define OPUTIL_Q_FB "DCGM_FI_DEV_FB_USED"

/* One series of an answer. */
struct oputil_sample {
    char node[OPUTIL_NODE_MAX];
    char uuid[OPUTIL_UUID_MAX];
    int gpu;        /* 0 .. Q_MAX_GPUS-1 */
    double value;   /* as Prometheus gave it (finite) */
    double t;       /* unix seconds of the sample */
};

/* Why series of an answer were skipped (counted, never fatal). */
struct oputil_skips {
    long no_node;     /* no node label */
    long bad_gpu;     /* no "gpu" label, or not an index below Q_MAX_GPUS */
    long bad_value;   /* value not [number, "finite number"] (NaN, +Inf, text) */
};

/* Parses a Prometheus /api/v1/query answer of len bytes (need not be
 * NUL-terminated). node_label NULL or "": the default label order above.
 * On AIQ_OK *out is a new array (caller frees; NULL when *n is 0) of *n
 * samples and *skips (may be NULL) counts the series left out. Errors,
 * with *out NULL and *n 0: AIQ_ETOOBIG past OPUTIL_MAX_BODY or
 * OPUTIL_MAX_SAMPLES; AIQ_EPARSE for text that is not JSON (the byte
 * offset in the message) or not the API's shape (the field named);
 * AIQ_EINVAL for "status":"error" (errorType and error
 * quoted); AIQ_EUNSUPPORTED for a resultType other than "vector";
 * AIQ_ENOMEM. */
aiq_rc oputil_parse(const char *body, size_t len, const char *node_label,
                    struct oputil_sample **out, size_t *n, struct oputil_skips *skips,
                    aiq_err *err);

/* Alnair's profiler (github.com/CentaurusInfra/alnair, profiler/) writes
 * one Node annotation per GPU, key "ai.centaurus.io/gpu-<index>", whose
 * value is a Python str() of a dict, e.g.
 *   {'mem_used': '4GB', 'mem_free': '8GB', 'process_cnt': 1,
 *    'cyclic_pattern': False, 'max_mem_util': '34.0'}
 * where max_mem_util is the maximum of DCGM_FI_DEV_MEM_COPY_UTIL (percent)
 * over its last 2 minutes; versions that also write 'max_gpu_util' (the
 * maximum of DCGM_FI_DEV_GPU_UTIL) are read by that field first. The value
 * carries no sample time and is patched only when it changes. */
#define OPUTIL_ALNAIR_PREFIX "ai.centaurus.io/gpu-"

/* Reads the utilisation percent from one such annotation value: the
 * number after 'max_gpu_util': (else 'max_mem_util':), quoted or not.
 * Returns 0 with *pct (finite, >= 0) and *field set to the key used, or
 * -1 when neither is there with a number. */
int oputil_alnair_value(const char *v, double *pct, const char **field);

typedef struct oputil oputil;

struct oputil_opts {
    const char *url;         /* Prometheus base URL (copied), http or https */
    double interval_s;       /* between fetches; > 0 */
    double stale_s;          /* a sample older than this is unknown; > 0 */
    double timeout_s;        /* per HTTP request; > 0 */
    const char *node_label;  /* NULL or "": default order (copied) */
};

/* What the cache says now (oputil_stats). */
struct oputil_state {
    bool up;                  /* the last fetch succeeded */
    unsigned long fetches;    /* attempted since start */
    unsigned long failures;   /* failed since start */
    double last_ok;           /* unix seconds of the last success, 0 never */
    char reason[256];         /* why the last fetch failed ("" when up) */
    long skipped;             /* series skipped in the last answer */
};

/* Checks o and creates the cache (not fetching yet). AIQ_EINVAL naming
 * the flag for an empty or non-http(s) URL or a non-positive interval,
 * staleness or timeout; AIQ_ENOMEM, AIQ_EIO when curl cannot start. *out
 * NULL after an error. */
aiq_rc oputil_create(const struct oputil_opts *o, oputil **out, aiq_err *err);

/* Starts the worker thread (its first fetch at once). AIQ_ESTATE when
 * already started, AIQ_EIO when the thread cannot start. */
aiq_rc oputil_start(oputil *u, aiq_err *err);

/* Stops the worker (waits at most one request timeout) and frees u.
 * NULL is a no-op. */
void oputil_free(oputil *u);

/* One fetch now, on the caller's thread (the worker's body; tests call it
 * without starting the worker). Returns 0 when the source answered with
 * good data, -1 after a failure (the state says why). */
int oputil_fetch_once(oputil *u, double now);

/* Merges samples into the cache as one answer of metric OPUTIL_Q_UTIL
 * (is_util) or OPUTIL_Q_FB; what oputil_fetch_once does after parsing.
 * Entries past OPUTIL_MAX_ENTRIES are dropped (a node seen once stays
 * cached, aging into stale, until the operator restarts). Returns 0 or -1 (ENOMEM). */
int oputil__merge(oputil *u, const struct oputil_sample *s, size_t n, bool is_util);

/* Records the outcome of a fetch attempt (reason NULL: success at now). */
void oputil__outcome(oputil *u, const char *reason, double now, long skipped);

/* Sets nodes[i].util_known and gpu_util[] from the cache: known when each
 * of the node's ngpus GPUs has a utilisation sample at most stale_s old at
 * now (value / 100, clamped to 0..1); otherwise util_known false and
 * gpu_util zero. Counts into *known the nodes known and into *stale the
 * GPUs of listed nodes whose sample is too old (either may be NULL). */
void oputil_fill(oputil *u, struct q_node *nodes, int n, double now, long *known, long *stale);

/* Copies the state into *st. */
void oputil_stats(oputil *u, struct oputil_state *st);

/* The cache as JSON for GET /util (caller frees *len bytes, NUL ended):
 * {"source":"prometheus","alnairAnnotations":B,"url":U,"up":B,"reason":R,"lastSuccess":T,
 *  "staleAfterSeconds":S,"intervalSeconds":I,"fetches":N,"failures":N,
 *  "nodes":[{"name":N,"gpus":[{"gpu":G,"uuid":U,"util":0..1,
 *   "utilAgeSeconds":A,"fbUsedMiB":M,"stale":B}]}]}
 * u NULL gives {"source":"none","alnairAnnotations":B}. alnair: whether
 * the operator also reads Alnair's annotations (--util-alnair-annotations).
 * NULL on ENOMEM. */
char *oputil_json(oputil *u, bool alnair, double now, size_t *len);

#endif
