/* metrics.h -- the operator's /metrics (Prometheus text format 0.0.4),
 * /healthz and /readyz endpoints, served by libmicrohttpd on its own
 * thread.
 *
 * The daemon loop updates the numbers (all setters take the internal
 * mutex, so they are cheap and safe against the HTTP thread); the HTTP
 * thread only renders. Series:
 *   aiq_pending_jobs{level}                 gauge
 *   aiq_admitted_total                      counter
 *   aiq_finished_total{outcome}             counter (Succeeded, Failed, ...)
 *   aiq_status_write_failures_total{kind}   counter (AIJob, QueuePolicy, ...)
 *   aiq_scores_clamped_total                counter (NaN/infinite scores)
 *   aiq_node_failures_total                 counter (gangs requeued for a lost node)
 *   aiq_wait_seconds                        histogram (queued -> admitted)
 *   aiq_cycle_seconds                       histogram (one queue cycle)
 *   aiq_quota_used{group,user,resource}     gauge (user "" = group total)
 *   aiq_leader                              gauge 0/1
 *   aiq_build_info{version,git}             gauge 1
 *   aiq_status_writes_total                 counter (AIJob status patches sent)
 *   aiq_status_writes_deferred              gauge (due, waiting for the budget)
 *   aiq_nodes_excluded{reason}              gauge (nodes left out, nodefacts.h)
 *   aiq_foreign_pods                        gauge (non-aiq pods holding node capacity)
 *   aiq_store_healthy                       gauge (1, or 0 while a storage fault holds)
 *   aiq_store_failures_total{op}            counter (store calls that failed, by operation)
 *   aiq_memory_resident_bytes               gauge (the process's RSS, read at each scrape)
 *   aiq_memory_limit_bytes                  gauge (its cgroup's memory limit; 0 none found)
 * With a utilisation source (--util-prometheus-url or
 * --util-alnair-annotations, util_source.h):
 *   aiq_util_nodes_known                    gauge (nodes placed with utilisation last cycle)
 *   aiq_util_nodes_from_annotations         gauge (of those, known from Alnair's annotations)
 * and with --util-prometheus-url:
 *   aiq_util_source_up                      gauge (1 the last fetch succeeded, 0 not)
 *   aiq_util_samples_stale                  gauge (GPUs whose sample passed the staleness limit)
 *   aiq_util_series_skipped                 gauge (series of the last answer left out)
 *   aiq_util_fetch_failures_total           counter
 *   aiq_util_last_success_timestamp_seconds gauge (0 never)
 * /healthz answers 200 "ok" while the process runs; /readyz answers 200
 * once opmetrics_set_ready(m, true) was called (after the first full list
 * of every watch), 503 before. With an opapi handle set
 * (opmetrics_set_api), the same port also answers
 * GET /journal?job=NS/NAME[&uid=UID][&limit=N] (see http_api.h), which is
 * where `kubectl aiq explain` looks by default. With an opvis handle set
 * (opmetrics_set_vis), GET /queue[?namespace=NS[&name=NAME]] answers the
 * live queue from the next cycle (see visibility.h): 200 with a
 * QueueView, 404 for a name not waiting, 503 when this replica is not the
 * leader or no cycle answered within 5 s
 * With a utilisation source set (opmetrics_set_util), GET /util answers
 * its cache as JSON (oputil_json; {"source":"none"} without one), with
 * the same loopback / --api-remote rule as /queue. */
#ifndef AIQ_OPERATOR_METRICS_H
#define AIQ_OPERATOR_METRICS_H

#include <stdbool.h>
#include <stddef.h>

#include "common/aiq_err.h"
#include "operator/http_api.h"
#include "operator/api_auth.h"
#include "operator/util_source.h"
#include "operator/visibility.h"

typedef struct opmetrics opmetrics;

#define OPMETRICS_MAX_LEVELS 32
#define OPMETRICS_MAX_OUTCOMES 8
#define OPMETRICS_MAX_NODEX 16   /* exclusion reasons kept */
#define OPMETRICS_MAX_QUOTA 4096 /* (group,user,resource) series kept */

/* The process's resident set in bytes from statm (/proc/self/statm:
 * its second number, in pages), or -1 when unreadable. */
long long opmetrics_resident_bytes(const char *statm);

/* The memory limit of the process's cgroup in bytes: v2's memory.max
 * (a number, or "max" for none) when that file exists, else v1's
 * memory.limit_in_bytes (a value past 2^60 means none). 0 when there is
 * none or neither file is readable. The operator reads
 * /sys/fs/cgroup/memory.max and /sys/fs/cgroup/memory/memory.limit_in_bytes
 * (a container sees its own cgroup there). */
long long opmetrics_memory_limit(const char *v2_max, const char *v1_limit);

/* Creates an empty metrics registry (not serving). NULL on ENOMEM. */
opmetrics *opmetrics_create(void);

/* Stops serving (if started) and frees m. NULL is a no-op. */
void opmetrics_free(opmetrics *m);

/* Starts serving on addr "host:port" (host an IPv4 address, e.g.
 * "127.0.0.1:8080"; port 0 picks a free port; ":8080" binds 0.0.0.0).
 * AIQ_EINVAL for a malformed addr (the message quotes it), AIQ_EIO when
 * the port cannot be bound, AIQ_ESTATE when already serving. After an
 * error m is not serving. */
aiq_rc opmetrics_listen(opmetrics *m, const char *addr, aiq_err *err);

/* The bound port (after opmetrics_listen), else 0. */
int opmetrics_port(const opmetrics *m);

/* Serves /journal from api (borrowed: it must outlive m, or be unset with
 * NULL first); NULL turns /journal back into a 404. Safe while serving. */
void opmetrics_set_api(opmetrics *m, opapi *api);

void opmetrics_set_ready(opmetrics *m, bool ready);
/* The store's health: while not healthy /readyz answers 503 with
 * "not ready: store: REASON" (reason copied; may be NULL when healthy). */
void opmetrics_set_store(opmetrics *m, bool healthy, const char *reason);
/* aiq_store_failures_total{op}. */
void opmetrics_store_failed_inc(opmetrics *m, const char *op);
void opmetrics_set_leader(opmetrics *m, bool leader);
/* The flag opmetrics_set_leader set last (any thread). */
bool opmetrics_leader(opmetrics *m);

/* Pending jobs per level: reset, then set each level's count (levels past
 * OPMETRICS_MAX_LEVELS are dropped; names are cut at 63 bytes). */
void opmetrics_pending_reset(opmetrics *m);
void opmetrics_pending_set(opmetrics *m, const char *level, long n);

void opmetrics_admitted_add(opmetrics *m, long n);

/* Lets /journal and /queue answer clients that are not on loopback
 * (--api-remote); by default they get 403 with how to reach them. auth
 * (borrowed, used by the HTTP thread only) checks their Kubernetes token
 * and permission (api_auth.h); remote requires it. */
void opmetrics_set_api_remote(opmetrics *m, bool remote, opauth *auth);

/* Sets the live queue handle behind /queue (borrowed). */
void opmetrics_set_vis(opmetrics *m, opvis *v);

/* Adds written AIJob status patches and sets how many due statuses wait
 * for the write budget (--status-writes-per-s). */
void opmetrics_status_writes(opmetrics *m, long written, long deferred);
/* Counts one finished job by outcome ("Succeeded", "Failed", ...). */
void opmetrics_finished_inc(opmetrics *m, const char *outcome);
/* aiq_preemptions_total{reason} ("Preempted", "PreemptedByScore",
 * "Reclaimed") and aiq_resizes_total{direction} ("grow", "shrink"). */
void opmetrics_preempted_inc(opmetrics *m, const char *reason);
void opmetrics_resized_inc(opmetrics *m, const char *direction);
void opmetrics_observe_wait(opmetrics *m, double seconds);
/* A status write (or the encoding of a status) of kind failed. */
void opmetrics_status_failed_inc(opmetrics *m, const char *kind);
/* One more gang requeued because a node of it was lost. */
void opmetrics_node_lost_inc(opmetrics *m);

/* n more scores were clamped (oppolicy_clamped). */
void opmetrics_clamped_add(opmetrics *m, unsigned long n);
void opmetrics_observe_cycle(opmetrics *m, double seconds);

/* Quota usage: reset, then set one value per (group, user, resource);
 * user may be "" for the group's total. Past OPMETRICS_MAX_QUOTA series,
 * further ones are dropped. */
void opmetrics_quota_reset(opmetrics *m);
void opmetrics_quota_set(opmetrics *m, const char *group, const char *user,
                         const char *resource, double value);

/* Nodes left out per reason: set every reason each cycle (0 included) so
 * the series stay stable; past OPMETRICS_MAX_NODEX reasons, dropped. */
void opmetrics_nodes_excluded_set(opmetrics *m, const char *reason, long n);
/* Non-aiq pods counted against node capacity in the last cycle. */
void opmetrics_foreign_pods_set(opmetrics *m, long n);
/* The AIJobs and pods the cache keeps frozen now, and its thaws and
 * freezes so far (cache.h, "Frozen entries"). */
void opmetrics_cache_set(opmetrics *m, long frozen, unsigned long long thaws,
                         unsigned long long freezes);

/* The utilisation source's state for the aiq_util_* series (rendered
 * only once set). */
struct opmetrics_util {
    bool prom;                 /* a Prometheus source is set (else only annotations) */
    bool up;
    long nodes_known, nodes_annotated, samples_stale, series_skipped;
    unsigned long failures;
    double last_ok;
};
void opmetrics_util_set(opmetrics *m, const struct opmetrics_util *u);

/* GET /util's answer (util_view.c's JSON: every node's live utilisation
 * and the source's state) as a new string of *len bytes; NULL when out of
 * memory. Served by the metrics server and the aggregated API. */
char *opmetrics_util_json(opmetrics *m, size_t *len);
/* Sets the cache behind GET /util (borrowed; NULL: {"source":"none"})
 * and whether Alnair's annotations are read too. */
void opmetrics_set_util(opmetrics *m, oputil *u, bool alnair);

/* Renders the metrics text into a new NUL-terminated buffer (caller
 * frees) and its length in *len (may be NULL). NULL on ENOMEM. */
char *opmetrics_render(opmetrics *m, size_t *len);

#endif
