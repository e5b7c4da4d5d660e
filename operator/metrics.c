/* metrics.c -- Prometheus text rendering of the operator's counters and
 * the libmicrohttpd server for /metrics, /healthz, /readyz and (with an
 * opapi handle) /journal (see metrics.h). */
#include "operator/metrics.h"

#include "common/model.h"
#include "common/version.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define OPM_NAME 64

static const double opm_wait_bounds[] = {1, 5, 15, 30, 60, 300, 900, 1800,
                                         3600, 7200, 21600, 86400};
static const double opm_cycle_bounds[] = {0.001, 0.005, 0.01, 0.025, 0.05,
                                          0.1, 0.25, 0.5, 1, 2.5, 5};
#define OPM_NWAIT (sizeof opm_wait_bounds / sizeof opm_wait_bounds[0])
#define OPM_NCYCLE (sizeof opm_cycle_bounds / sizeof opm_cycle_bounds[0])

struct opm_hist {
    const double *bounds;
    size_t nb;
    unsigned long counts[16]; /* per bucket (not cumulative); last = +Inf */
    unsigned long count;
    double sum;
};

struct opm_named {
    char name[OPM_NAME];
    double value;
};

struct opm_quota {
    char group[OPM_NAME], user[OPM_NAME], resource[32];
    double value;
};

struct opmetrics {
    pthread_mutex_t mu;
    struct MHD_Daemon *httpd;
    int port;
    bool ready, leader;
    bool store_bad;
    char store_reason[640];
    struct opm_named store_fail[OPMETRICS_MAX_OUTCOMES]; /* by op */
    int nstore_fail;
    opapi *api; /* borrowed; NULL: no /journal */
    opvis *vis; /* borrowed; NULL: no /queue */
    bool api_remote; /* /journal and /queue answer non-loopback clients too */
    opauth *auth;    /* ... once their token and permission check out */
    struct opm_named pending[OPMETRICS_MAX_LEVELS];
    int npending;
    unsigned long admitted;
    unsigned long status_writes;
    long status_deferred;
    struct opm_named finished[OPMETRICS_MAX_OUTCOMES];
    int nfinished;
    struct opm_named status_fail[OPMETRICS_MAX_OUTCOMES]; /* by kind */
    int nstatus_fail;
    unsigned long clamped;
    unsigned long node_lost;
    struct opm_named preempt[OPMETRICS_MAX_OUTCOMES]; /* by reason */
    int npreempt;
    struct opm_named resize[OPMETRICS_MAX_OUTCOMES];  /* by direction */
    int nresize;
    struct opm_hist wait, cycle;
    struct opm_quota *quota;
    int nquota;
    struct opm_named nodex[OPMETRICS_MAX_NODEX];
    int nnodex;
    long foreign_pods;
    long cache_frozen;
    unsigned long long cache_thaws, cache_freezes;
    oputil *util;              /* borrowed; NULL: /util says "none" */
    bool util_alnair;          /* --util-alnair-annotations */
    bool util_on;              /* aiq_util_* rendered */
    struct opmetrics_util utilm;
};

/* Creates the registry; see metrics.h. */
opmetrics *opmetrics_create(void) {
    opmetrics *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->quota = calloc(OPMETRICS_MAX_QUOTA, sizeof *m->quota);
    if (!m->quota || pthread_mutex_init(&m->mu, NULL) != 0) {
        free(m->quota);
        free(m);
        return NULL;
    }
    m->wait.bounds = opm_wait_bounds;
    m->wait.nb = OPM_NWAIT;
    m->cycle.bounds = opm_cycle_bounds;
    m->cycle.nb = OPM_NCYCLE;
    return m;
}

/* Stops and frees; see metrics.h. */
void opmetrics_free(opmetrics *m) {
    if (!m)
        return;
    if (m->httpd)
        MHD_stop_daemon(m->httpd);
    pthread_mutex_destroy(&m->mu);
    free(m->quota);
    free(m);
}

static void opm_copy(char *dst, size_t cap, const char *s) {
    snprintf(dst, cap, "%s", s ? s : "");
}

/* Sets the journal API handle; see metrics.h. */
void opmetrics_set_api(opmetrics *m, opapi *api) {
    pthread_mutex_lock(&m->mu);
    m->api = api;
    pthread_mutex_unlock(&m->mu);
}

void opmetrics_set_api_remote(opmetrics *m, bool remote, opauth *auth) {
    pthread_mutex_lock(&m->mu);
    m->api_remote = remote;
    m->auth = auth;
    pthread_mutex_unlock(&m->mu);
}

void opmetrics_set_vis(opmetrics *m, opvis *v) {
    pthread_mutex_lock(&m->mu);
    m->vis = v;
    pthread_mutex_unlock(&m->mu);
}

void opmetrics_set_util(opmetrics *m, oputil *u, bool alnair) {
    pthread_mutex_lock(&m->mu);
    m->util = u;
    m->util_alnair = alnair;
    pthread_mutex_unlock(&m->mu);
}

void opmetrics_util_set(opmetrics *m, const struct opmetrics_util *u) {
    pthread_mutex_lock(&m->mu);
    m->util_on = true;
    m->utilm = *u;
    pthread_mutex_unlock(&m->mu);
}

void opmetrics_set_ready(opmetrics *m, bool ready) {
    pthread_mutex_lock(&m->mu);
    m->ready = ready;
    pthread_mutex_unlock(&m->mu);
}

void opmetrics_set_store(opmetrics *m, bool healthy, const char *reason) {
    pthread_mutex_lock(&m->mu);
    m->store_bad = !healthy;
    opm_copy(m->store_reason, sizeof m->store_reason, healthy ? "" : reason);
    pthread_mutex_unlock(&m->mu);
}

void opmetrics_set_leader(opmetrics *m, bool leader) {
    pthread_mutex_lock(&m->mu);
    m->leader = leader;
    pthread_mutex_unlock(&m->mu);
}

/* Returns the leader flag; see metrics.h. */
bool opmetrics_leader(opmetrics *m) {
    pthread_mutex_lock(&m->mu);
    bool leader = m->leader;
    pthread_mutex_unlock(&m->mu);
    return leader;
}

void opmetrics_pending_reset(opmetrics *m) {
    pthread_mutex_lock(&m->mu);
    m->npending = 0;
    pthread_mutex_unlock(&m->mu);
}

/* Adds v to the named entry (creating it) in arr of n/max entries. */
static void opm_named_add(struct opm_named *arr, int *n, int max,
                          const char *name, double v, bool set) {
    for (int i = 0; i < *n; i++) {
        if (strcmp(arr[i].name, name ? name : "") == 0) {
            arr[i].value = set ? v : arr[i].value + v;
            return;
        }
    }
    if (*n >= max)
        return;
    opm_copy(arr[*n].name, sizeof arr[*n].name, name);
    arr[*n].value = v;
    (*n)++;
}

void opmetrics_pending_set(opmetrics *m, const char *level, long n) {
    pthread_mutex_lock(&m->mu);
    opm_named_add(m->pending, &m->npending, OPMETRICS_MAX_LEVELS, level,
                  (double)n, true);
    pthread_mutex_unlock(&m->mu);
}

void opmetrics_admitted_add(opmetrics *m, long n) {
    pthread_mutex_lock(&m->mu);
    m->admitted += (unsigned long)(n > 0 ? n : 0);
    pthread_mutex_unlock(&m->mu);
}

void opmetrics_status_writes(opmetrics *m, long written, long deferred) {
    pthread_mutex_lock(&m->mu);
    m->status_writes += (unsigned long)(written > 0 ? written : 0);
    if (deferred >= 0) /* -1: leave the gauge as it is */
        m->status_deferred = deferred;
    pthread_mutex_unlock(&m->mu);
}

void opmetrics_finished_inc(opmetrics *m, const char *outcome) {
    pthread_mutex_lock(&m->mu);
    opm_named_add(m->finished, &m->nfinished, OPMETRICS_MAX_OUTCOMES, outcome,
                  1, false);
    pthread_mutex_unlock(&m->mu);
}

void opmetrics_store_failed_inc(opmetrics *m, const char *op) {
    pthread_mutex_lock(&m->mu);
    opm_named_add(m->store_fail, &m->nstore_fail, OPMETRICS_MAX_OUTCOMES, op, 1, false);
    pthread_mutex_unlock(&m->mu);
}

void opmetrics_status_failed_inc(opmetrics *m, const char *kind) {
    pthread_mutex_lock(&m->mu);
    opm_named_add(m->status_fail, &m->nstatus_fail, OPMETRICS_MAX_OUTCOMES, kind,
                  1, false);
    pthread_mutex_unlock(&m->mu);
}

void opmetrics_node_lost_inc(opmetrics *m) {
    pthread_mutex_lock(&m->mu);
    m->node_lost++;
    pthread_mutex_unlock(&m->mu);
}

void opmetrics_clamped_add(opmetrics *m, unsigned long n) {
    pthread_mutex_lock(&m->mu);
    m->clamped += n;
    pthread_mutex_unlock(&m->mu);
}

void opmetrics_preempted_inc(opmetrics *m, const char *reason) {
    pthread_mutex_lock(&m->mu);
    opm_named_add(m->preempt, &m->npreempt, OPMETRICS_MAX_OUTCOMES, reason, 1, false);
    pthread_mutex_unlock(&m->mu);
}

void opmetrics_resized_inc(opmetrics *m, const char *direction) {
    pthread_mutex_lock(&m->mu);
    opm_named_add(m->resize, &m->nresize, OPMETRICS_MAX_OUTCOMES, direction, 1, false);
    pthread_mutex_unlock(&m->mu);
}

static void opm_observe(struct opm_hist *h, double v) {
    size_t i = 0;
    while (i < h->nb && v > h->bounds[i])
        i++;
    h->counts[i]++;
    h->count++;
    h->sum += v;
}

void opmetrics_observe_wait(opmetrics *m, double seconds) {
    pthread_mutex_lock(&m->mu);
    opm_observe(&m->wait, seconds);
    pthread_mutex_unlock(&m->mu);
}

void opmetrics_observe_cycle(opmetrics *m, double seconds) {
    pthread_mutex_lock(&m->mu);
    opm_observe(&m->cycle, seconds);
    pthread_mutex_unlock(&m->mu);
}

void opmetrics_quota_reset(opmetrics *m) {
    pthread_mutex_lock(&m->mu);
    m->nquota = 0;
    pthread_mutex_unlock(&m->mu);
}

void opmetrics_quota_set(opmetrics *m, const char *group, const char *user,
                         const char *resource, double value) {
    pthread_mutex_lock(&m->mu);
    if (m->nquota < OPMETRICS_MAX_QUOTA) {
        struct opm_quota *q = &m->quota[m->nquota++];
        opm_copy(q->group, sizeof q->group, group);
        opm_copy(q->user, sizeof q->user, user);
        opm_copy(q->resource, sizeof q->resource, resource);
        q->value = value;
    }
    pthread_mutex_unlock(&m->mu);
}

/* ---- rendering ------------------------------------------------------------ */

struct opm_buf {
    char *p;
    size_t len, cap;
    bool oom;
};

static void opm_printf(struct opm_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void opm_printf(struct opm_buf *b, const char *fmt, ...) {
    va_list ap;
    if (b->oom)
        return;
    for (;;) {
        va_start(ap, fmt);
        int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->oom = true;
            return;
        }
        if ((size_t)n < b->cap - b->len) {
            b->len += (size_t)n;
            return;
        }
        size_t ncap = b->cap * 2 + (size_t)n;
        char *np = realloc(b->p, ncap);
        if (!np) {
            b->oom = true;
            return;
        }
        b->p = np;
        b->cap = ncap;
    }
}

/* Escapes a label value (\\, \", \n) into out (cap bytes). */
static const char *opm_esc(char *out, size_t cap, const char *s) {
    size_t n = 0;
    for (; *s && n + 3 < cap; s++) {
        if (*s == '\\' || *s == '"') {
            out[n++] = '\\';
            out[n++] = *s;
        } else if (*s == '\n') {
            out[n++] = '\\';
            out[n++] = 'n';
        } else {
            out[n++] = *s;
        }
    }
    out[n] = '\0';
    return out;
}

static void opm__hist(struct opm_buf *b, const char *name, const char *help,
                      const struct opm_hist *h) {
    unsigned long cum = 0;
    opm_printf(b, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    for (size_t i = 0; i < h->nb; i++) {
        cum += h->counts[i];
        opm_printf(b, "%s_bucket{le=\"%g\"} %lu\n", name, h->bounds[i], cum);
    }
    opm_printf(b, "%s_bucket{le=\"+Inf\"} %lu\n%s_sum %.6f\n%s_count %lu\n",
               name, h->count, name, h->sum, name, h->count);
}

void opmetrics_nodes_excluded_set(opmetrics *m, const char *reason, long n) {
    pthread_mutex_lock(&m->mu);
    opm_named_add(m->nodex, &m->nnodex, OPMETRICS_MAX_NODEX, reason, (double)n, true);
    pthread_mutex_unlock(&m->mu);
}

void opmetrics_foreign_pods_set(opmetrics *m, long n) {
    pthread_mutex_lock(&m->mu);
    m->foreign_pods = n;
    pthread_mutex_unlock(&m->mu);
}

void opmetrics_cache_set(opmetrics *m, long frozen, unsigned long long thaws,
                         unsigned long long freezes) {
    pthread_mutex_lock(&m->mu);
    m->cache_frozen = frozen;
    m->cache_thaws = thaws;
    m->cache_freezes = freezes;
    pthread_mutex_unlock(&m->mu);
}

/* One labelled family: its HELP/TYPE header, then a line per entry of
 * a[0..n) through line (a literal "name{label=\"%s\"} %.0f\n"). */
static void opm_family(struct opm_buf *b, const char *header, const char *line,
                       const struct opm_named *a, int n) {
    char e[3 * OPM_NAME];
    opm_printf(b, "%s", header);
    for (int i = 0; i < n; i++)
        opm_printf(b, line, opm_esc(e, sizeof e, a[i].name), a[i].value);
}

/* The rendering steps, each with m's mutex held: a part of the text
 * format appended to b. */

/* The queue's families: pending jobs, admissions, finishes, preemptions,
 * resizes, the wait and cycle histograms. */
static void opm_render_queue(struct opm_buf *b, const opmetrics *m) {
    opm_family(b, "# HELP aiq_pending_jobs Jobs waiting in the queue, per level.\n"
                   "# TYPE aiq_pending_jobs gauge\n",
               "aiq_pending_jobs{level=\"%s\"} %.0f\n", m->pending, m->npending);
    opm_printf(b, "# HELP aiq_admitted_total Gangs admitted (released) since start.\n"
                   "# TYPE aiq_admitted_total counter\naiq_admitted_total %lu\n",
               m->admitted);
    opm_family(b, "# HELP aiq_finished_total Jobs finished since start, by outcome.\n"
                   "# TYPE aiq_finished_total counter\n",
               "aiq_finished_total{outcome=\"%s\"} %.0f\n", m->finished, m->nfinished);
    opm_family(b, "# HELP aiq_status_write_failures_total Status writes (or status encodings) that failed, by kind; each is retried.\n"
                   "# TYPE aiq_status_write_failures_total counter\n",
               "aiq_status_write_failures_total{kind=\"%s\"} %.0f\n", m->status_fail, m->nstatus_fail);
    opm_printf(b, "# HELP aiq_scores_clamped_total Job scores that came out NaN or infinite and were clamped to a finite value.\n"
                   "# TYPE aiq_scores_clamped_total counter\naiq_scores_clamped_total %lu\n",
               m->clamped);
    opm_printf(b, "# HELP aiq_node_failures_total Gangs requeued because a node of theirs was deleted or NotReady past --node-lost-timeout.\n"
                   "# TYPE aiq_node_failures_total counter\naiq_node_failures_total %lu\n",
               m->node_lost);
    opm_family(b, "# HELP aiq_preemptions_total Running jobs preempted since start, by reason.\n"
                   "# TYPE aiq_preemptions_total counter\n",
               "aiq_preemptions_total{reason=\"%s\"} %.0f\n", m->preempt, m->npreempt);
    opm_family(b, "# HELP aiq_resizes_total Elastic jobs resized since start, by direction.\n"
                   "# TYPE aiq_resizes_total counter\n",
               "aiq_resizes_total{direction=\"%s\"} %.0f\n", m->resize, m->nresize);
    opm__hist(b, "aiq_wait_seconds", "Time from queued to admitted.", &m->wait);
    opm__hist(b, "aiq_cycle_seconds", "Duration of one queue cycle.", &m->cycle);
}

/* aiq_quota_used, a series per group, user and resource. */
static void opm_render_quota(struct opm_buf *b, const opmetrics *m) {
    char e1[3 * OPM_NAME], e2[3 * OPM_NAME], e3[128];
    opm_printf(b, "# HELP aiq_quota_used Quota in use per group and user (user \"\" is the group total).\n"
                   "# TYPE aiq_quota_used gauge\n");
    for (int i = 0; i < m->nquota; i++) {
        const struct opm_quota *q = &m->quota[i];
        opm_printf(b, "aiq_quota_used{group=\"%s\",user=\"%s\",resource=\"%s\"} %.6g\n",
                   opm_esc(e1, sizeof e1, q->group), opm_esc(e2, sizeof e2, q->user),
                   opm_esc(e3, sizeof e3, q->resource), q->value);
    }
}

/* The first line of path (at most cap - 1 bytes) into buf; false when it
 * cannot be read. */
static bool opm_read_line(const char *path, char *buf, size_t cap) {
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    bool ok = fgets(buf, (int)cap, f) != NULL;
    (void)fclose(f); /* read only: nothing to lose */
    return ok;
}

/* See metrics.h. */
long long opmetrics_resident_bytes(const char *statm) {
    char line[256], *end = NULL;
    long ps = sysconf(_SC_PAGESIZE);
    if (!opm_read_line(statm, line, sizeof line) || ps <= 0)
        return -1;
    (void)strtoll(line, &end, 10); /* the total size, not wanted */
    if (end == line)
        return -1;
    const char *p = end;
    long long pages = strtoll(p, &end, 10);
    if (end == p || pages < 0)
        return -1;
    return pages * ps;
}

/* See metrics.h. */
long long opmetrics_memory_limit(const char *v2_max, const char *v1_limit) {
    char line[64], *end = NULL;
    if (opm_read_line(v2_max, line, sizeof line)) {
        if (strncmp(line, "max", 3) == 0)
            return 0;
        long long v = strtoll(line, &end, 10);
        return end != line && v > 0 ? v : 0;
    }
    if (opm_read_line(v1_limit, line, sizeof line)) {
        long long v = strtoll(line, &end, 10);
        return end != line && v > 0 && v < (1LL << 60) ? v : 0;
    }
    return 0;
}

/* The operator's own health: status writes, build info, nodes left out,
 * the store, foreign pods, its memory. */
static void opm_render_health(struct opm_buf *b, const opmetrics *m) {
    char e1[3 * OPM_NAME];
    /* Read at the scrape: what a memory limit is checked against (no
     * RSS series when /proc cannot be read: absent, not 0). */
    long long rss = opmetrics_resident_bytes("/proc/self/statm");
    opm_printf(b, "# HELP aiq_memory_resident_bytes The operator's resident memory (RSS).\n"
                   "# TYPE aiq_memory_resident_bytes gauge\n");
    if (rss >= 0)
        opm_printf(b, "aiq_memory_resident_bytes %lld\n", rss);
    opm_printf(b, "# HELP aiq_memory_limit_bytes The memory limit of the operator's cgroup "
                   "(a container's limit); 0 when none is found.\n"
                   "# TYPE aiq_memory_limit_bytes gauge\naiq_memory_limit_bytes %lld\n",
               opmetrics_memory_limit("/sys/fs/cgroup/memory.max",
                                      "/sys/fs/cgroup/memory/memory.limit_in_bytes"));
    opm_printf(b, "# HELP aiq_status_writes_total AIJob status patches sent since start.\n"
                   "# TYPE aiq_status_writes_total counter\naiq_status_writes_total %lu\n"
                   "# HELP aiq_status_writes_deferred AIJob statuses due but waiting for the "
                   "write budget.\n"
                   "# TYPE aiq_status_writes_deferred gauge\naiq_status_writes_deferred %ld\n",
               m->status_writes, m->status_deferred);
    opm_printf(b, "# HELP aiq_build_info The operator's release and git commit (always 1).\n"
                   "# TYPE aiq_build_info gauge\n"
                   "aiq_build_info{version=\"%s\",git=\"%s\"} 1\n",
               AIQ_RELEASE, opm_esc(e1, sizeof e1, aiq_git()));
    opm_family(b, "# HELP aiq_nodes_excluded Nodes left out of placement, per reason "
                   "(missing or inconsistent GPU facts).\n"
                   "# TYPE aiq_nodes_excluded gauge\n",
               "aiq_nodes_excluded{reason=\"%s\"} %.0f\n", m->nodex, m->nnodex);
    opm_printf(b, "# HELP aiq_store_healthy 1 while the store takes writes; 0 while a storage "
                   "fault holds (nothing is admitted, released or published).\n"
                   "# TYPE aiq_store_healthy gauge\naiq_store_healthy %d\n", m->store_bad ? 0 : 1);
    opm_family(b, "# HELP aiq_store_failures_total Store calls that failed, by operation.\n"
                   "# TYPE aiq_store_failures_total counter\n",
               "aiq_store_failures_total{op=\"%s\"} %.0f\n", m->store_fail, m->nstore_fail);
    opm_printf(b, "# HELP aiq_foreign_pods Pods not run by aiq that hold node capacity.\n"
                   "# TYPE aiq_foreign_pods gauge\naiq_foreign_pods %ld\n", m->foreign_pods);
    opm_printf(b, "# HELP aiq_cache_frozen_objects Cached AIJobs and pods kept as text.\n"
                   "# TYPE aiq_cache_frozen_objects gauge\naiq_cache_frozen_objects %ld\n"
                   "# HELP aiq_cache_thaws_total Frozen cache entries parsed back to be read.\n"
                   "# TYPE aiq_cache_thaws_total counter\naiq_cache_thaws_total %llu\n"
                   "# HELP aiq_cache_freezes_total Cache entries frozen.\n"
                   "# TYPE aiq_cache_freezes_total counter\naiq_cache_freezes_total %llu\n",
               m->cache_frozen, m->cache_thaws, m->cache_freezes);
}

/* The live utilisation source's families, while it is on. */
static void opm_render_util(struct opm_buf *b, const opmetrics *m) {
    if (m->util_on)
        opm_printf(b, "# HELP aiq_util_nodes_known Nodes placed with live utilisation in the "
                       "last cycle (every GPU has a fresh sample, or an Alnair annotation).\n"
                       "# TYPE aiq_util_nodes_known gauge\naiq_util_nodes_known %ld\n"
                       "# HELP aiq_util_nodes_from_annotations Of those, nodes whose utilisation "
                       "came from Alnair's node annotations (--util-alnair-annotations).\n"
                       "# TYPE aiq_util_nodes_from_annotations gauge\n"
                       "aiq_util_nodes_from_annotations %ld\n",
                   m->utilm.nodes_known, m->utilm.nodes_annotated);
    if (m->util_on && m->utilm.prom) {
        const struct opmetrics_util *u = &m->utilm;
        opm_printf(b, "# HELP aiq_util_source_up 1 when the last fetch from the utilisation "
                       "source (--util-prometheus-url) succeeded, 0 when it failed.\n"
                       "# TYPE aiq_util_source_up gauge\naiq_util_source_up %d\n"
                       "# HELP aiq_util_samples_stale GPUs of usable nodes whose last sample is "
                       "older than --util-stale-after (their node is placed without utilisation).\n"
                       "# TYPE aiq_util_samples_stale gauge\naiq_util_samples_stale %ld\n",
                   u->up ? 1 : 0, u->samples_stale);
        opm_printf(b, "# HELP aiq_util_series_skipped Series of the last answer left out (no "
                       "node or gpu label, value not a finite number).\n"
                       "# TYPE aiq_util_series_skipped gauge\naiq_util_series_skipped %ld\n"
                       "# HELP aiq_util_fetch_failures_total Fetches from the utilisation source "
                       "that failed (unreachable, HTTP error, error status, not the API's JSON).\n"
                       "# TYPE aiq_util_fetch_failures_total counter\n"
                       "aiq_util_fetch_failures_total %lu\n"
                       "# HELP aiq_util_last_success_timestamp_seconds When the utilisation "
                       "source last answered well (unix seconds; 0 never).\n"
                       "# TYPE aiq_util_last_success_timestamp_seconds gauge\n"
                       "aiq_util_last_success_timestamp_seconds %.3f\n",
                   u->series_skipped, u->failures, u->last_ok);
    }
}

/* Renders the text format; see metrics.h. */
char *opmetrics_render(opmetrics *m, size_t *len) {
    struct opm_buf b = {malloc(4096), 0, 4096, false};
    if (!b.p)
        return NULL;
    b.p[0] = '\0';
    pthread_mutex_lock(&m->mu);
    opm_render_queue(&b, m);
    opm_render_quota(&b, m);
    opm_render_health(&b, m);
    opm_render_util(&b, m);
    opm_printf(&b, "# HELP aiq_leader 1 when this replica holds the leader lease.\n"
                    "# TYPE aiq_leader gauge\naiq_leader %d\n", m->leader ? 1 : 0);
    pthread_mutex_unlock(&m->mu);
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    if (len)
        *len = b.len;
    return b.p;
}

/* ---- HTTP ----------------------------------------------------------------- */

static enum MHD_Result opm_reply(struct MHD_Connection *c, unsigned code,
                                 const char *ctype, char *body, size_t len,
                                 enum MHD_ResponseMemoryMode mode) {
    return opapi_reply(c, code, ctype, body, len, mode);
}

/* A JSON {"error": msg} reply; msg is quoted with JSON escapes for the
 * characters that need them (it may echo a user's query value). */
static enum MHD_Result opm_json_error(struct MHD_Connection *c, unsigned code,
                                      const char *msg) {
    char buf[1024];
    size_t n = 0;
    const char head[] = "{\"error\":\"";
    memcpy(buf, head, sizeof head - 1);
    n = sizeof head - 1;
    for (const unsigned char *p = (const unsigned char *)msg; *p && n < sizeof buf - 16; p++) {
        if (*p == '"' || *p == '\\') {
            buf[n++] = '\\';
            buf[n++] = (char)*p;
        } else if (*p < 0x20) {
            n += (size_t)snprintf(buf + n, sizeof buf - n, "\\u%04x", *p);
        } else {
            buf[n++] = (char)*p;
        }
    }
    buf[n++] = '"';
    buf[n++] = '}';
    buf[n++] = '\n';
    char *body = malloc(n);
    if (!body)
        return MHD_NO;
    memcpy(body, buf, n);
    return opm_reply(c, code, "application/json", body, n, MHD_RESPMEM_MUST_FREE);
}

/* GET /queue[?namespace=NS[&name=NAME]]: the live queue from the next
 * cycle (visibility.h); a replica that is not the leader runs no cycles
 * and says so at once. */
static enum MHD_Result opm_queue(struct MHD_Connection *c, opvis *vis, bool leader) {
    const char *ns = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "namespace");
    const char *name = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "name");
    char *body = NULL;
    size_t len = 0;
    if (!leader)
        return opm_json_error(c, 503, "this replica is not the leader: it runs no queue cycles");
    if ((ns && strlen(ns) > AIQ_MAX_NAME) || (name && strlen(name) > AIQ_MAX_NAME))
        return opm_json_error(c, 400, "namespace and name are at most 253 characters");
    int code = opvis_ask(vis, ns, name, 5.0, &body, &len);
    if (!body)
        return opm_json_error(c, 500, "out of memory");
    return opm_reply(c, (unsigned)code, "application/json", body, len, MHD_RESPMEM_MUST_FREE);
}

/* GET /util: the utilisation cache (util_source.h). The cache has its
 * own lock; m->util is set once at start and unset only after the HTTP
 * thread stopped. */
char *opmetrics_util_json(opmetrics *m, size_t *len) {
    pthread_mutex_lock(&m->mu);
    oputil *u = m->util;
    bool alnair = m->util_alnair;
    pthread_mutex_unlock(&m->mu);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return oputil_json(u, alnair, (double)ts.tv_sec + (double)ts.tv_nsec / 1e9, len);
}

static enum MHD_Result opm_util(struct MHD_Connection *c, opmetrics *m) {
    size_t len = 0;
    char *body = opmetrics_util_json(m, &len);
    if (!body)
        return opm_json_error(c, 500, "out of memory");
    return opm_reply(c, 200, "application/json", body, len, MHD_RESPMEM_MUST_FREE);
}

/* The client is on loopback (a port-forward, the operator's own host). */
static bool opm_loopback(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const struct sockaddr *sa = ci ? ci->client_addr : NULL;
    if (!sa || sa->sa_family != AF_INET)
        return false;
    const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
    return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
}

/* /journal and /queue tell who runs what: they answer loopback clients;
 * others only with --api-remote, and only with a Kubernetes token whose
 * user the cluster's RBAC lets list the jobs asked about (/queue) or get
 * aijobs/journal (api_auth.h). Returns 0 when the request may go on,
 * else the HTTP status, with msg (cap bytes) saying why. */
static int opm_api_allowed(opmetrics *m, struct MHD_Connection *c, bool journal, char *msg,
                           size_t cap) {
    if (opm_loopback(c))
        return 0;
    pthread_mutex_lock(&m->mu);
    bool remote = m->api_remote;
    opauth *auth = m->auth;
    pthread_mutex_unlock(&m->mu);
    if (!remote || !auth) {
        snprintf(msg, cap, "the journal and the live queue are served to loopback clients only "
                           "(reach them with kubectl port-forward, or run the operator with "
                           "--api-remote)");
        return 403;
    }
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    const char *token = h && strncmp(h, "Bearer ", 7) == 0 ? h + 7 : NULL;
    char ns[AIQ_MAX_NAME + 1] = "";
    const char *arg = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND,
                                                  journal ? "job" : "namespace");
    if (arg) {
        size_t n = journal && strchr(arg, '/') ? (size_t)(strchr(arg, '/') - arg) : strlen(arg);
        if (n > AIQ_MAX_NAME) {
            snprintf(msg, cap, "%s: the namespace is at most %d characters",
                     journal ? "job" : "namespace", AIQ_MAX_NAME);
            return 400;
        }
        memcpy(ns, arg, n);
        ns[n] = '\0';
    }
    int code = journal ? opauth_check(auth, token, "get", "journal", ns, msg, cap)
                       : opauth_check(auth, token, "list", NULL, ns, msg, cap);
    return code == 200 ? 0 : code;
}

static enum MHD_Result opm_handler(void *cls, struct MHD_Connection *c,
                                   const char *url, const char *method,
                                   const char *version, const char *upload,
                                   size_t *upload_size, void **state) {
    opmetrics *m = cls;
    (void)version;
    (void)upload;
    (void)state;
    if (*upload_size) /* no bodies expected; drop them */
        *upload_size = 0;
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
        return opm_reply(c, 405, "text/plain", (char *)"method not allowed\n",
                         19, MHD_RESPMEM_PERSISTENT);
    if (strcmp(url, "/metrics") == 0) {
        size_t len = 0;
        char *text = opmetrics_render(m, &len);
        if (!text)
            return opm_reply(c, 500, "text/plain", (char *)"out of memory\n", 14,
                             MHD_RESPMEM_PERSISTENT);
        return opm_reply(c, 200, "text/plain; version=0.0.4; charset=utf-8",
                         text, len, MHD_RESPMEM_MUST_FREE);
    }
    if (strcmp(url, "/healthz") == 0 || strcmp(url, "/livez") == 0)
        return opm_reply(c, 200, "text/plain", (char *)"ok\n", 3,
                         MHD_RESPMEM_PERSISTENT);
    if (strcmp(url, "/readyz") == 0) {
        pthread_mutex_lock(&m->mu);
        bool ready = m->ready, store_bad = m->store_bad;
        char *why = NULL;
        if (m->store_bad) {
            size_t cap = strlen(m->store_reason) + 32;
            why = malloc(cap);
            if (why)
                snprintf(why, cap, "not ready: %s\n", m->store_reason);
        }
        pthread_mutex_unlock(&m->mu);
        if (why)
            return opm_reply(c, 503, "text/plain", why, strlen(why), MHD_RESPMEM_MUST_FREE);
        if (store_bad) /* out of memory for the reason: still not ready */
            return opm_reply(c, 503, "text/plain", (char *)"not ready: store\n", 17,
                             MHD_RESPMEM_PERSISTENT);
        if (ready)
            return opm_reply(c, 200, "text/plain", (char *)"ok\n", 3,
                             MHD_RESPMEM_PERSISTENT);
        return opm_reply(c, 503, "text/plain",
                         (char *)"not ready: waiting for the first list of every watch\n",
                         53, MHD_RESPMEM_PERSISTENT);
    }
    if (strcmp(url, "/journal") == 0 || strcmp(url, "/queue") == 0 || strcmp(url, "/util") == 0) {
        char why[600];
        int code = opm_api_allowed(m, c, strcmp(url, "/journal") == 0, why, sizeof why);
        if (code)
            return opm_json_error(c, (unsigned)code, why);
    }
    if (strcmp(url, "/journal") == 0) {
        pthread_mutex_lock(&m->mu);
        opapi *api = m->api;
        pthread_mutex_unlock(&m->mu);
        if (api)
            return opapi_serve_journal(c, api); /* the handler aiq-journal serves too */
    }
    if (strcmp(url, "/queue") == 0) {
        pthread_mutex_lock(&m->mu);
        opvis *vis = m->vis;
        bool leader = m->leader;
        pthread_mutex_unlock(&m->mu);
        if (vis)
            return opm_queue(c, vis, leader);
    }
    if (strcmp(url, "/util") == 0)
        return opm_util(c, m);
    return opm_reply(c, 404, "text/plain", (char *)"not found\n", 10,
                     MHD_RESPMEM_PERSISTENT);
}

/* Starts the HTTP server; see metrics.h. */
aiq_rc opmetrics_listen(opmetrics *m, const char *addr, aiq_err *err) {
    struct sockaddr_in sa;
    if (m->httpd)
        return aiq_err_set(err, AIQ_ESTATE, "metrics server already running");
    if (opapi_parse_addr(addr, &sa) != 0)
        return aiq_err_field(err, AIQ_EINVAL, "--metrics-addr",
                             "--metrics-addr: expected IPv4-host:port, got \"%.100s\"",
                             addr ? addr : "");
    m->httpd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG,
                                0, NULL, NULL, opm_handler, m,
                                MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
                                MHD_OPTION_CONNECTION_LIMIT, (unsigned)64,
                                MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10,
                                MHD_OPTION_END);
    if (!m->httpd)
        return aiq_err_set(err, AIQ_EIO, "cannot listen on %.100s", addr);
    const union MHD_DaemonInfo *info =
        MHD_get_daemon_info(m->httpd, MHD_DAEMON_INFO_BIND_PORT);
    m->port = info ? (int)info->port : ntohs(sa.sin_port);
    return AIQ_OK;
}

/* Returns the bound port; see metrics.h. */
int opmetrics_port(const opmetrics *m) {
    return m->httpd ? m->port : 0;
}
