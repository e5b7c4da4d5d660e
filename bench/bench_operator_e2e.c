/* bench_operator_e2e.c -- the operator end to end, as real processes:
 * this program starts an API server (build/rel/aiq-apiserver, the local
 * one, and build/realcluster/aiq-realcluster, the real Kubernetes control
 * plane) and the operator (build/rel/aiq-operator) as separate child
 * processes, creates AIJobs through the API the way `kubectl create -f`
 * does (HTTP POST of the JSON body, BENCH_CLIENTS parallel clients), and
 * measures the operator from outside: its /metrics, /proc/PID/status, its
 * SQLite file and a watch on the AIJobs. Issue 14's goals are measured
 * here (docs/queue.md has the table).
 *
 * A plan is a list of configurations: a server, a node count (eight-GPU
 * A100 nodes, cordoned, plus one H100 "probe" node) and job steps. Each
 * configuration starts one server and one operator, activates the
 * `priority` preset (levels, EASY backfill, a wait-time tie-break), and
 * grows the pending jobs step by step (a burst creates the difference).
 * Each step is a row:
 *
 *  burst      jobs created in this step and their creation rate (the API
 *             server's, with the operator running)
 *  ->Queued   created (POST response) -> status.phase Queued seen on the
 *             watch, p50/p99 over the burst's jobs; allQ_s: burst start ->
 *             the last one Queued
 *  cycle      steady state (at least BENCH_STEADY_S seconds and 3 cycles,
 *             after two cycles to settle): p50/p99 by interpolation in the
 *             operator's own aiq_cycle_seconds histogram (buckets 1, 5,
 *             10, 25, 50, 100, 250 ms ..., so only as fine as those) and
 *             the exact mean (_sum / _count); cyc_cpu: the operator's CPU
 *             time (user + system, all threads, /proc/PID/stat) over the
 *             window / its cycles, which the machine's load does not
 *             stretch as it does the wall-clock figures
 *  rs_mean    the same window again with the policy's spec.rescoreInterval
 *  rs_cpu     the other way (column rs): 0s (every cycle) for a policy
 *             that has one, as the shipped presets do but fairshare,
 *             slurm-multifactor, srjf and elastic-srjf, 1m for one that
 *             has none; its compiled status
 *             seen, the first cycle under it (which rescores every job)
 *             left out; then the policy goes back as it was for the
 *             probes. nan when the policy cannot take an interval (it
 *             reads a factor that moves between rescores) or is not a
 *             preset. An interval's end may fall in a window: its cycle
 *             rescores every job again
 *  arrival    the mean of the cycles from just after a cycle until a new
 *             job shows its queue position (n cycles, usually 1-2); the
 *             median over BENCH_PROBES (3) arrivals, one after another,
 *             and the slowest (one cycle varies by 2x on a busy machine),
 *             at the goal's rows (10k jobs on 1k nodes); at the others
 *             BENCH_PROBES_OTHER (1), so the default plan ends in time
 *  finish     the same around a running probe job's end: right after a
 *             cycle the bench marks its pod Succeeded (as a kubelet would)
 *             and waits for the job's Succeeded status; as many probes
 *  RSS        operator VmRSS and (VmRSS - VmRSS before any job) / pending;
 *             from the second row of a configuration on, the process is
 *             the one restarted at the previous row. restart_MiB: the
 *             restarted process at its first admission, every job loaded
 *             at start. frozen/job: the AIJobs and pods the operator keeps
 *             as text (operator/cache.h) per pending job when RSS is read
 *             (a 1-replica job has 2 objects); thaw/s: frozen objects read
 *             back per second in the steady window (0: the steady cycle
 *             reads none)
 *  db         the operator's SQLite file and its WAL, per pending job
 *  drain      once every job shows Queued, the statuses still due (positions
 *             and messages of the jobs behind) go out: drain_w/s is the
 *             AIJob MODIFIED events per second on the bench's watch from
 *             then until two whole cycles in a row pass with none,
 *             settle_s how long that took (at most BENCH_SETTLE_CAP_S, 60 s; "cap" when it
 *             never settled, and the steady window then starts anyway).
 *             Each event is a status write of the operator: nothing else
 *             writes AIJobs then. Issue 14's goal: at most the write budget
 *             (--status-writes-per-s, 1,000 by default)
 *  writes/s   the same events per second during the steady window, after
 *             the drain: the goal is 0
 *  restart    a probe job waits (its node cordoned), the operator gets
 *             SIGKILL, the node is uncordoned and the operator started
 *             again: seconds from exec to the probe's Admitted status on
 *             the watch (ready_s: to the operator's "ready" log line)
 *
 * "release" after a configuration's last step: first the baseline, with
 * the operator stopped (SIGSTOP): 4 clients (the 4 threads a gang
 * release runs on, release_exec.c) send the release merge patch to BENCH_RAW_BASE_N gated pods
 * that are not the operator's and name a scheduler that does not run (so
 * nothing but the patches works on them meanwhile); then SIGCONT, every
 * A100 node is uncordoned, and the time from the first uncordon to the last pod seen
 * ungated on a pod watch gives the release rate (min(pending, 8 x nodes)
 * pods); first_s and half_s are the times to the first and the middle
 * of those pods, how long a user of an admitted job waits for its pods.
 * "shrink=N,..." after the last step deletes nodes down to N and
 * measures again with the same jobs (a 100k row at fewer nodes without
 * creating 100k jobs again).
 *
 * The default plan, most important first (the goals' rows, then the rest
 * of the 1k/10k/100k x 10/1k/5k matrix):
 *   local:1000:1k,10k:release  real:1000:1k,10k:release
 *   local:5000:1k,10k,100k:shrink=1000,10  local:10:1k,10k
 *   real:10:1k,10k  real:5000:1k,10k
 * The real control plane's 100k steps are left out: with the operator
 * running it creates about 200 AIJobs per second here, so 100k take over
 * 8 minutes to create and 22 to be all Queued, past the 15-minute budget
 * (`real:1000:100k` ran in 26 minutes, docs/queue.md, twenty-sixth
 * round; BENCH_PLAN can ask for it).
 * Nothing new starts after BENCH_DEADLINE_S (690 s) so that `make bench`
 * stays under 15 minutes; what did not run is listed as "not run". With
 * today's operator the deadline ends the plan inside its second
 * configuration (docs/queue.md).
 *
 * Knobs: BENCH_PLAN ("SERVER:NODES:STEPS[:release][:shrink=N,N];...",
 * counts may end in k), or BENCH_SERVERS/BENCH_NODES/BENCH_JOBS for their
 * cross product (release at BENCH_RELEASE_NODES, default 1000);
 * BENCH_SCALE multiplies every job count (0.1 for a quick look);
 * BENCH_DEADLINE_S (0 = none); BENCH_CLIENTS (4); BENCH_CYCLE_MS (1000);
 * BENCH_STEADY_S (5); BENCH_SETTLE_CAP_S (60); BENCH_POLICY (priority, none for the built-in
 * default, or a QueuePolicy YAML file; fifo keeps the probe jobs behind a
 * blocked head); BENCH_QUEUED_CAP_S (600); BENCH_PROBE_CAP_S (60);
 * BENCH_PROBES (3: arrivals and finishes at 10k jobs x 1k nodes) and
 * BENCH_PROBES_OTHER (1: at the other rows);
 * BENCH_RELEASE_CAP_S (300: how long the first release may take);
 * BENCH_RAW_BASE_N (3000); BENCH_OPERATOR (the operator binary: compare a
 * build with another); BENCH_KEEP=1 keeps the directories (logs, SQLite);
 * BENCH_LOG_LEVEL (info: the operator's --log-level; debug logs each
 * cycle's phases);
 * BENCH_VERBOSE=1 prints progress; BENCH_APPLY=1 creates the AIJobs as
 * `kubectl apply` does (the manifest again in the annotation
 * kubectl.kubernetes.io/last-applied-configuration). One row:
 *   BENCH_PLAN=local:1000:10k build/rel/bench/bench_operator_e2e
 *
 * Ends with <server>_e2e_<measure>_<jobs>_<nodes>= lines for every row
 * run, and <server>_e2e_release_pods_per_s=, _release_first_pod_s=,
 * _release_half_pods_s=, _raw_patch_stopped_per_s=, _release_vs_raw_patch=,
 * _release_operator_cores=, _release_server_cores=, _release_idle_cores=. */
#include <ctype.h>
#include <curl/curl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bproc.h"
#include "common/json.h"

#define NS "default"
#define AIJOBS "/apis/aiq.dev/v1alpha1/namespaces/" NS "/aijobs"
#define PODS "/api/v1/namespaces/" NS "/pods"
/* The baseline's pods name a scheduler that does not run (see run_release). */
#define BENCH_RAW_SCHEDULER "aiq-bench-none"
#define MAX_STEPS 8
#define MAX_NODES 8
#define MAX_PROBES 128
#define BENCH_PROBES_MAX 15 /* arrivals and finishes per row, each */

/* ---- the AIJob watch ------------------------------------------------------ */

enum { PH_QUEUED_POS, PH_ADMITTED, PH_RUNNING, PH_SUCCEEDED, PH__N };

struct probe {
    char name[64];
    double t[PH__N]; /* first arrival of: Queued with a position, Admitted
                        (or later), Running (or later), Succeeded */
};

struct jw {
    long cap;               /* bulk jobs j000000.. j(cap-1) */
    double *t_created;      /* POST response of bulk job i */
    double *t_queued;       /* first time it was seen Queued (or later) */
    atomic_long nqueued;    /* bulk jobs seen Queued */
    atomic_long modified;   /* MODIFIED events on aijobs */
    long arrivals;          /* pending A100 probe jobs (one per step) */
    pthread_mutex_t mu;
    struct probe pr[MAX_PROBES];
    int npr;
};

/* Reads an integer field "key":N after `after`. Returns 1 when found. */
static int json_num(const char *line, const char *after, const char *key, long *out) {
    char pat[64];
    const char *p = after ? strstr(line, after) : line;
    if (!p)
        return 0;
    snprintf(pat, sizeof pat, "\"%s\":", key);
    p = strstr(p, pat);
    if (!p)
        return 0;
    *out = strtol(p + strlen(pat), NULL, 10);
    return 1;
}

static void stamp(double *slot, double t) {
    if (*slot == 0)
        *slot = t;
}

static void jw_line(void *ud, const char *line, size_t len, double t) {
    (void)len;
    struct jw *w = ud;
    char name[64], phase[24];
    long pos = 0;
    if (strncmp(line, "{\"type\":\"MODIFIED\"", 18) == 0)
        atomic_fetch_add(&w->modified, 1);
    else if (strncmp(line, "{\"type\":\"ADDED\"", 15) != 0)
        return;
    if (!bp_json_str(line, "\"metadata\"", "name", name, sizeof name))
        return;
    if (!bp_json_str(line, "\"status\":{", "phase", phase, sizeof phase))
        phase[0] = 0;
    if (name[0] == 'j' && isdigit((unsigned char)name[1])) {
        long i = strtol(name + 1, NULL, 10);
        if (i >= 0 && i < w->cap && phase[0] && strcmp(phase, "Pending") != 0 && w->t_queued[i] == 0) {
            w->t_queued[i] = t;
            atomic_fetch_add(&w->nqueued, 1);
        }
        return;
    }
    int has_pos = json_num(line, "\"status\":{", "position", &pos);
    pthread_mutex_lock(&w->mu);
    int k = 0;
    while (k < w->npr && strcmp(w->pr[k].name, name) != 0)
        k++;
    if (k == w->npr && w->npr < MAX_PROBES)
        snprintf(w->pr[w->npr++].name, sizeof w->pr[0].name, "%s", name);
    if (k < w->npr) {
        struct probe *p = &w->pr[k];
        if (strcmp(phase, "Queued") == 0 && has_pos && pos > 0)
            stamp(&p->t[PH_QUEUED_POS], t);
        if (strcmp(phase, "Succeeded") == 0)
            stamp(&p->t[PH_SUCCEEDED], t);
        if (strcmp(phase, "Running") == 0 || p->t[PH_SUCCEEDED] > 0)
            stamp(&p->t[PH_RUNNING], t);
        if (strcmp(phase, "Admitted") == 0 || p->t[PH_RUNNING] > 0)
            stamp(&p->t[PH_ADMITTED], t);
    }
    pthread_mutex_unlock(&w->mu);
}

/* Waits up to timeout_s until the watch has seen probe `name` reach
 * state ph. Returns the arrival time of that event, or 0. */
static double probe_wait(struct jw *w, const char *name, int ph, double timeout_s) {
    double t0 = bp_now(), t = 0;
    while (t == 0 && bp_now() - t0 < timeout_s) {
        pthread_mutex_lock(&w->mu);
        for (int k = 0; k < w->npr; k++)
            if (strcmp(w->pr[k].name, name) == 0)
                t = w->pr[k].t[ph];
        pthread_mutex_unlock(&w->mu);
        if (t == 0)
            usleep(1000);
    }
    return t;
}

/* ---- the release watch (pods) --------------------------------------------- */

struct rw {
    long cap;
    unsigned char *seen;   /* bulk job i's pod was seen released */
    char other[MAX_PROBES][64]; /* released pods of other jobs (probes) */
    int nother;
    atomic_long released;
    long half;             /* the count whose pod sets t_half */
    double t_first, t_half, t_last;
};

static void rw_line(void *ud, const char *line, size_t len, double t) {
    (void)len;
    struct rw *w = ud;
    char job[64], node[128];
    if (strncmp(line, "{\"type\":\"MODIFIED\"", 18) != 0 ||
        !bp_json_str(line, NULL, "aiq.dev/node", node, sizeof node) ||
        !bp_json_str(line, NULL, "aiq.dev/job", job, sizeof job))
        return;
    if (job[0] == 'j' && isdigit((unsigned char)job[1])) {
        long i = strtol(job + 1, NULL, 10);
        if (i < 0 || i >= w->cap || w->seen[i])
            return;
        w->seen[i] = 1;
    } else {
        /* A probe job (one-replica): counted once by name. */
        for (int k = 0; k < w->nother; k++)
            if (strcmp(w->other[k], job) == 0)
                return;
        if (w->nother < MAX_PROBES)
            snprintf(w->other[w->nother++], sizeof w->other[0], "%s", job);
    }
    w->t_last = t;
    long n = atomic_fetch_add(&w->released, 1) + 1;
    if (n == 1)
        w->t_first = t;
    if (n == w->half)
        w->t_half = t;
}

/* ---- parallel operations -------------------------------------------------- */

struct ctx {
    struct bp_server *s;
    struct jw *jw;
    long base;              /* first bulk index of this burst */
    char **bodies, **paths; /* raw baseline */
    int nnodes;
    bool apply;             /* opts.apply */
};

static int op_create_job(void *vc, long k) {
    struct ctx *c = vc;
    long i = c->base + k;
    char name[32];
    snprintf(name, sizeof name, "j%06ld", i);
    char *body = bp_aijob_body(NS, name, (int)(i % 50), (int)(i % 10), "NVIDIA-A100", "1h");
    /* BENCH_APPLY=1: as `kubectl apply` creates it, with the manifest
     * again in the last-applied-configuration annotation. */
    bool apply = c->apply;
    if (body && apply) {
        char *applied = bp_as_applied(body);
        free(body);
        body = applied;
    }
    if (!body)
        return -1;
    int st = bp_req(c->s, "POST",
                    apply ? AIJOBS "?fieldManager=kubectl-client-side-apply&fieldValidation=Strict"
                          : AIJOBS "?fieldManager=kubectl-create&fieldValidation=Strict",
                    "application/json", body, NULL);
    free(body);
    if (st != 201)
        return -1;
    c->jw->t_created[i] = bp_now();
    return 0;
}

static int op_create_raw(void *vc, long i) {
    struct ctx *c = vc;
    return bp_req(c->s, "POST", PODS, "application/json", c->bodies[i], NULL) == 201 ? 0 : -1;
}

static int op_patch_raw(void *vc, long i) {
    struct ctx *c = vc;
    return bp_req(c->s, "PATCH", c->paths[i], "application/merge-patch+json", c->bodies[i], NULL) ==
                   200
               ? 0
               : -1;
}

static int op_uncordon(void *vc, long i) {
    struct ctx *c = vc;
    char path[96];
    snprintf(path, sizeof path, "/api/v1/nodes/gpu%ld-%ld", i / 1000, i % 1000);
    return bp_req(c->s, "PATCH", path, "application/merge-patch+json",
                  "{\"spec\":{\"unschedulable\":false}}", NULL) == 200
               ? 0
               : -1;
}

static int cordon_probe(struct bp_server *s, int on) {
    return bp_req(s, "PATCH", "/api/v1/nodes/aprobe-0", "application/merge-patch+json",
                  on ? "{\"spec\":{\"unschedulable\":true}}" : "{\"spec\":{\"unschedulable\":false}}",
                  NULL) == 200
               ? 0
               : -1;
}

static int create_probe(struct bp_server *s, const char *name) {
    char *body = bp_aijob_body(NS, name, 0, 1000, "NVIDIA-H100", "1h");
    int st = body ? bp_req(s, "POST", AIJOBS, "application/json", body, NULL) : 0;
    free(body);
    return st == 201 ? 0 : -1;
}

/* ---- metrics -------------------------------------------------------------- */

/* Waits until a cycle ends (the histogram count moves past *m) and
 * stores the new scrape in *m. Polls every 5 ms. Returns 0 or -1. */
static int next_cycle(int port, struct bp_metrics *m, double timeout_s) {
    struct bp_metrics cur;
    double t0 = bp_now();
    double c0 = m->count;
    while (bp_now() - t0 < timeout_s) {
        if (bp_metrics_get(port, &cur) == 0 && cur.count > c0) {
            *m = cur;
            return 0;
        }
        usleep(5000);
    }
    return -1;
}

static double mean_ms(const struct bp_metrics *a, const struct bp_metrics *b, int *n) {
    double dc = b->count - a->count;
    *n = (int)dc;
    return dc > 0 ? (b->sum - a->sum) / dc * 1e3 : NAN;
}

/* ---- one configuration ---------------------------------------------------- */

/* ---- rows, plan, options ------------------------------------------------------ */

struct row {
    enum bp_kind kind;
    int nodes, shrunk_from; /* shrunk_from: nodes deleted from this many */
    int run;                /* 0: not run, for the reason in why */
    const char *why;
    int cut;                /* the deadline or the cap cut the wait for Queued */
    long target, jobs, burst, queued;
    double create_per_s, all_queued_s, q_p50, q_p99;
    double cyc_p50, cyc_p99, cyc_mean, cyc_cpu_ms;
    int cyc_n;
    double rs_mean, rs_cpu_ms; /* the same with the policy's rescoreInterval rs_alt */
    char rs_alt[4];            /* "0s" (the policy has one) or "1m" (it has none) */
    int rs_n;
    double arr_ms, fin_ms;   /* medians over the probes */
    double arr_max, fin_max; /* the slowest probe */
    int arr_n, fin_n;        /* probes seen */
    double rss_mib, rss_kib_per_job, rss_restart_mib;
    /* cached objects kept as text per pending job at the RSS sample, and
     * frozen objects read back per second in the steady window */
    double frozen_per_job, thaws_per_s;
    double db_bytes_per_job, wal_mib;
    double writes_per_s;
    double drain_per_s, settle_s;
    int settle_capped;
    double restart_s, restart_ready_s;
};

struct rel {
    enum bp_kind kind;
    int nodes, done;
    long pending, expected, released, raw_n;
    double secs, rate, raw_secs, raw_rate, uncordon_s, first_s, half_s;
    /* CPU cores in use over the release (uncordon -> last pod seen), by
     * the operator, by the server (with its child processes), and idle
     * on the whole machine; -1 when /proc could not say */
    double op_cores, srv_cores, idle_cores;
};

/* One server and node count, its job steps, and what follows them. */
struct config {
    enum bp_kind kind;
    int nodes;
    long steps[MAX_STEPS];
    int nsteps;
    int release;            /* measure the release after the last step */
    long shrink[4];         /* then delete nodes down to each of these */
    int nshrink;
};

struct opts {
    int clients, cycle_ms;
    double steady_s, settle_cap_s, queued_cap_s, probe_cap_s, release_cap_s;
    int probes;       /* arrivals and finishes each at 10k x 1k (BENCH_PROBES) */
    int probes_other; /* the same at every other row (BENCH_PROBES_OTHER) */
    double deadline;        /* bp_now() past which nothing new starts; 0 = none */
    long raw_base_n;
    const char *policy;
    bool apply;             /* BENCH_APPLY=1: jobs made as kubectl apply makes them */
};

static double left(const struct opts *o) {
    return o->deadline > 0 ? o->deadline - bp_now() : 1e9;
}

static double capped(const struct opts *o, double want) {
    double l = left(o);
    return l < want ? (l > 1 ? l : 1) : want;
}

static int policy_active(json_object *doc) {
    json_object *spec = NULL;
    if (json_object_object_get_ex(doc, "spec", &spec))
        return aiq_jset(spec, "active", json_object_new_boolean(1), NULL);
    return 0;
}

static void label(char *buf, size_t cap, long n) {
    if (n >= 1000 && n % 1000 == 0)
        snprintf(buf, cap, "%ldk", n / 1000);
    else
        snprintf(buf, cap, "%ld", n);
}

/* A count: digits with an optional k (x1000). Returns the end or NULL. */
static const char *parse_count(const char *p, long *out) {
    char *end = NULL;
    long v = strtol(p, &end, 10);
    if (end == p || v <= 0)
        return NULL;
    if (*end == 'k') {
        v *= 1000;
        end++;
    }
    *out = v;
    return end;
}

/* Parses a comma list of counts up to a ':' or ';' or the end. */
static const char *parse_counts(const char *p, long *out, int cap, int *n) {
    *n = 0;
    for (;;) {
        long v;
        p = parse_count(p, &v);
        if (!p || *n >= cap)
            return NULL;
        out[(*n)++] = v;
        if (*p != ',')
            return p;
        p++;
    }
}

/* BENCH_PLAN: configs separated by ';', each SERVER:NODES:STEPS[:release]
 * [:shrink=N,N], e.g. "local:1000:1k,10k:release;real:10:1k". Returns the
 * number of configs, or -1 with a message. */
static int parse_plan(const char *p, struct config *c, int cap) {
    int n = 0;
    while (*p) {
        struct config *x = &c[n];
        long nodes;
        if (n >= cap)
            return -1;
        memset(x, 0, sizeof *x);
        if (strncmp(p, "local:", 6) == 0) {
            x->kind = BP_LOCAL;
            p += 6;
        } else if (strncmp(p, "real:", 5) == 0) {
            x->kind = BP_REAL;
            p += 5;
        } else {
            return -1;
        }
        if (!(p = parse_count(p, &nodes)) || *p != ':' || nodes > 100000)
            return -1;
        x->nodes = (int)nodes;
        if (!(p = parse_counts(p + 1, x->steps, MAX_STEPS, &x->nsteps)))
            return -1;
        while (*p == ':') {
            p++;
            if (strncmp(p, "release", 7) == 0) {
                x->release = 1;
                p += 7;
            } else if (strncmp(p, "shrink=", 7) == 0) {
                if (!(p = parse_counts(p + 7, x->shrink, 4, &x->nshrink)))
                    return -1;
            } else {
                return -1;
            }
        }
        if (*p == ';')
            p++;
        else if (*p)
            return -1;
        n++;
    }
    return n;
}

/* ---- one configuration ---------------------------------------------------- */

/* What a configuration's steps share. */
struct env {
    const struct opts *o;
    struct bp_server s;
    struct bp_operator op;
    struct jw jw;
    char db[300], oplog[300];
    long rss0;
    struct bp_metrics m;
    int nnodes;
};

static void run_release(struct env *e, struct rel *r) {
    struct bp_server *s = &e->s;
    struct jw *jw = &e->jw;
    const struct opts *o = e->o;
    int nnodes = e->nnodes;
    struct ctx c = {s, jw, 0, NULL, NULL, nnodes, o->apply};
    long done = 0, ok = 0;
    long pending = atomic_load(&jw->nqueued) + jw->arrivals;
    json_object *pod = bp_gated_pod(NS, "tmpl"), *meta = NULL, *labels = NULL, *spec = NULL;
    memset(r, 0, sizeof *r);
    r->kind = s->kind;
    r->nodes = nnodes;
    r->pending = pending;
    r->expected = pending < 8L * nnodes ? pending : 8L * nnodes;
    r->raw_n = r->expected < o->raw_base_n ? r->expected : o->raw_base_n;
    c.bodies = calloc((size_t)r->raw_n, sizeof *c.bodies);
    c.paths = calloc((size_t)r->raw_n, sizeof *c.paths);
    if (!pod || !c.bodies || !c.paths || !json_object_object_get_ex(pod, "metadata", &meta) ||
        !json_object_object_get_ex(meta, "labels", &labels))
        goto out;
    if (aiq_jset(labels, "bench", json_object_new_string("raw"), NULL) != 0)
        goto out;
    /* Nothing else may work on the baseline's pods while it is measured:
     * released, they would be the scheduler's (the local server's
     * simulated one, kube-scheduler on the real control plane), which
     * would try each against every node, write an Unschedulable
     * condition and an Event for each, on the same server and cores.
     * Pods of another scheduler are left alone by both. They point at a
     * node that does not exist, so they never take capacity, and are
     * deleted before the uncordon. */
    if (!json_object_object_get_ex(pod, "spec", &spec) ||
        aiq_jset(spec, "schedulerName", json_object_new_string(BENCH_RAW_SCHEDULER), NULL) != 0)
        goto out;
    char *patch = bp_release_patch(pod, "bench-nowhere");
    for (long i = 0; i < r->raw_n; i++) {
        char name[32], path[128];
        snprintf(name, sizeof name, "rawb-%06ld", i);
        /* a body left NULL (out of memory) makes its request fail: counted */
        c.bodies[i] = aiq_jset(meta, "name", json_object_new_string(name), NULL) == 0
                          ? strdup(json_object_to_json_string_ext(pod, JSON_C_TO_STRING_PLAIN))
                          : NULL;
        snprintf(path, sizeof path, PODS "/%s", name);
        c.paths[i] = strdup(path);
    }
    bp_log("release: creating %ld raw pods", r->raw_n);
    bp_parallel(o->clients, r->raw_n, capped(o, 300), op_create_raw, &c, &done, &ok);
    long created = done;
    for (long i = 0; i < r->raw_n; i++) {
        free(c.bodies[i]);
        c.bodies[i] = patch ? strdup(patch) : NULL;
    }
    free(patch);
    bp_log("release: baseline, operator stopped");
    bp_operator_signal(&e->op, SIGSTOP);
    usleep(500000); /* let what it had in flight finish */
    r->raw_secs = bp_parallel(4, created, 60, op_patch_raw, &c, &done, &ok);
    r->raw_rate = r->raw_secs > 0 ? ok / r->raw_secs : 0;
    r->raw_n = ok;
    bp_operator_signal(&e->op, SIGCONT);
    int dst = bp_req(s, "DELETE", PODS "?labelSelector=bench%3Draw", NULL, NULL, NULL);
    if (dst != 200)
        fprintf(stderr, "bench_operator_e2e: deleting the baseline's pods answered HTTP %d (they\n"
                        "point at a node that does not exist, so they take no capacity)\n", dst);
    sleep(2); /* the operator catches up with what it missed while stopped */

    struct rw w;
    memset(&w, 0, sizeof w);
    w.cap = jw->cap;
    w.seen = calloc((size_t)w.cap, 1);
    atomic_init(&w.released, 0);
    w.half = (r->expected + 1) / 2;
    struct bp_watch *wt = w.seen ? bp_watch_start(s, PODS "?watch=true&labelSelector=aiq.dev%2Fjob", rw_line, &w)
                                 : NULL;
    if (!wt) {
        free(w.seen);
        goto out;
    }
    usleep(300000);
    bp_log("release: uncordon %d nodes, expect %ld pods", nnodes, r->expected);
    double cpu0[3] = {bp_cpu_s(e->op.pid), bp_tree_cpu_s(s->pid), bp_idle_s()}, cpu1[3];
    double t_u = bp_now(), t_cpu = t_u;
    memcpy(cpu1, cpu0, sizeof cpu1);
    bp_parallel(4, nnodes, 120, op_uncordon, &c, &done, &ok);
    r->uncordon_s = bp_now() - t_u;
    /* Up to BENCH_RELEASE_CAP_S for the first release (a slow cycle comes
     * first), then until 60 s pass without one. The CPU is read when pods
     * were seen, at most every quarter second (bp_tree_cpu_s reads all of
     * /proc, which would compete with what it measures) and at the last
     * pod, so its window ends with the release. */
    double last_progress = bp_now() + capped(o, o->release_cap_s) - 60;
    long last = 0;
    for (;;) {
        long n = atomic_load(&w.released);
        if (n != last) {
            last = n;
            last_progress = bp_now();
            if (n >= r->expected || last_progress - t_cpu >= 0.25) {
                t_cpu = last_progress;
                cpu1[0] = bp_cpu_s(e->op.pid);
                cpu1[1] = bp_tree_cpu_s(s->pid);
                cpu1[2] = bp_idle_s();
            }
        }
        if (n >= r->expected || bp_now() - last_progress >= 60)
            break;
        usleep(20000);
    }
    double *cores[3] = {&r->op_cores, &r->srv_cores, &r->idle_cores};
    for (int k = 0; k < 3; k++)
        *cores[k] = cpu0[k] >= 0 && cpu1[k] >= 0 && t_cpu > t_u
                        ? (cpu1[k] - cpu0[k]) / (t_cpu - t_u) : -1;
    bp_watch_stop(wt);
    r->released = atomic_load(&w.released);
    r->secs = r->released > 0 ? w.t_last - t_u : 0;
    r->first_s = r->released > 0 ? w.t_first - t_u : 0;
    r->half_s = r->released >= w.half ? w.t_half - t_u : 0;
    r->rate = r->secs > 0 ? r->released / r->secs : 0;
    r->done = 1;
    free(w.seen);
out:
    for (long i = 0; i < r->raw_n && c.bodies; i++)
        free(c.bodies[i]);
    for (long i = 0; c.paths && i < r->raw_n; i++)
        free(c.paths[i]);
    free(c.bodies);
    free(c.paths);
    json_object_put(pod);
}

/* Runs the steps of one server and node count. Appends rows to rows[*nr]
 * and the release to *rl. Returns 0, or -1 when the set-up failed. */

/* From the moment every job shows Queued until two whole cycles in a row
 * (end to end, with the status writes that follow them) pass without an
 * AIJob MODIFIED event: r->settle_s and r->drain_per_s. At least three
 * cycles pass; *m is the last scrape. */
static void drain(struct env *e, struct row *r, struct bp_metrics *m) {
    const struct opts *o = e->o;
    int port = e->op.metrics_port;
    double t0 = bp_now();
    long mod0 = atomic_load(&e->jw.modified);
    next_cycle(port, m, capped(o, 60));
    long before = atomic_load(&e->jw.modified);
    int quiet = 0;
    r->settle_capped = 1;
    while (bp_now() - t0 < capped(o, o->settle_cap_s)) {
        if (next_cycle(port, m, capped(o, 60)) != 0)
            break;
        long after = atomic_load(&e->jw.modified);
        /* Two cycles in a row: a loop busy with a burst's pods can let
         * one cycle pass without a status write while more are due. */
        quiet = after == before ? quiet + 1 : 0;
        if (quiet == 2) {
            r->settle_capped = 0;
            break;
        }
        before = after;
    }
    r->settle_s = bp_now() - t0;
    r->drain_per_s = (atomic_load(&e->jw.modified) - mod0) / r->settle_s;
    bp_log("drain: %.1f s, %.1f writes/s%s", r->settle_s, r->drain_per_s,
           r->settle_capped ? " (not settled)" : "");
}

/* Is the bench's policy a preset (its QueuePolicy's name known here)? */
static bool policy_is_preset(const struct opts *o) {
    return !strchr(o->policy, '/') && !strstr(o->policy, ".yaml") && strcmp(o->policy, "none") != 0;
}

/* The preset's spec.rescoreInterval as written into buf ("" when it has
 * none). Returns 0, or -1 (not a preset, or no answer). */
static int policy_interval(struct env *e, char *buf, size_t cap) {
    const struct opts *o = e->o;
    char path[160], *resp = NULL;
    if (!policy_is_preset(o))
        return -1;
    snprintf(path, sizeof path, "/apis/aiq.dev/v1alpha1/queuepolicies/%s", o->policy);
    if (bp_req(&e->s, "GET", path, NULL, NULL, &resp) != 200) {
        free(resp);
        return -1;
    }
    json_object *p = json_tokener_parse(resp);
    free(resp);
    if (!p)
        return -1;
    const char *v = aiq_jstr(aiq_jget(p, "spec"), "rescoreInterval");
    snprintf(buf, cap, "%s", v ? v : "");
    json_object_put(p);
    return 0;
}

/* Patches the active preset's QueuePolicy (merge patch body) and waits
 * up to 60 s until the operator's status is of that generation. Returns
 * 0 when it compiled, or -1 (not a preset, the patch refused, the policy
 * did not compile, or no status of that generation). */
static int policy_patch(struct env *e, const char *body) {
    const struct opts *o = e->o;
    char path[160], *resp = NULL;
    if (!policy_is_preset(o))
        return -1; /* a file's policy name is not known here */
    snprintf(path, sizeof path, "/apis/aiq.dev/v1alpha1/queuepolicies/%s", o->policy);
    if (bp_req(&e->s, "PATCH", path, "application/merge-patch+json", body, NULL) != 200)
        return -1;
    for (double t0 = bp_now(); bp_now() - t0 < capped(o, 60); usleep(50000)) {
        if (bp_req(&e->s, "GET", path, NULL, NULL, &resp) != 200)
            continue;
        json_object *p = json_tokener_parse(resp);
        free(resp);
        resp = NULL;
        int64_t gen = aiq_jint(aiq_jget(p, "metadata"), "generation", -1);
        json_object *st = aiq_jget(p, "status");
        bool seen = aiq_jint(st, "observedGeneration", -2) == gen, ok = aiq_jtrue(st, "compiled");
        json_object_put(p);
        if (seen) /* compiled, or refused (a factor that moves between rescores) */
            return ok ? 0 : -1;
    }
    return -1;
}

/* One steady window from *m0, a scrape at its start: at least steady_s
 * seconds and three cycles, however long they take (up to 2 minutes),
 * ending as a cycle ends. *m1 gets the scrape at its end, *secs the
 * window's length. Returns the operator's CPU milliseconds per cycle over
 * it (NAN when /proc could not say or no cycle ended). */
static double steady_window(struct env *e, const struct bp_metrics *m0, struct bp_metrics *m1,
                            double *secs) {
    const struct opts *o = e->o;
    int port = e->op.metrics_port;
    double tw = bp_now(), cpu0 = bp_cpu_s(e->op.pid);
    usleep((useconds_t)(o->steady_s * 1e6));
    *m1 = *m0;
    (void)bp_metrics_get(port, m1); /* on failure m1 stays m0: next_cycle waits from there */
    while (bp_now() - tw < capped(o, 120) &&
           (next_cycle(port, m1, capped(o, 60)) != 0 || m1->count < m0->count + 3))
        ;
    double cpu1 = bp_cpu_s(e->op.pid);
    double n = m1->count - m0->count;
    *secs = bp_now() - tw;
    return cpu0 >= 0 && cpu1 >= 0 && n > 0 ? (cpu1 - cpu0) * 1e3 / n : NAN;
}

/* The steady window again with the policy's rescoreInterval the other way
 * (docs/queue.md, "Rescore interval"), then the policy as it was: *m
 * gets the scrape after the last cycle. r->rs_* stay NAN when the policy
 * cannot take an interval (it reads a factor that moves between
 * rescores) or is not a preset. */
static void steady_rescore(struct env *e, struct row *r, struct bp_metrics *m) {
    const struct opts *o = e->o;
    int port = e->op.metrics_port;
    char was[32], body[96];
    r->rs_mean = r->rs_cpu_ms = NAN;
    r->rs_n = 0;
    snprintf(r->rs_alt, sizeof r->rs_alt, "-");
    if (policy_interval(e, was, sizeof was) != 0 || strspn(was, "0123456789.hms") != strlen(was))
        return; /* not a preset (or a duration this could not write back) */
    snprintf(r->rs_alt, sizeof r->rs_alt, "%s", was[0] ? "0s" : "1m");
    snprintf(body, sizeof body, "{\"spec\":{\"rescoreInterval\":\"%s\"}}", r->rs_alt);
    bool patched = policy_patch(e, body) == 0;
    if (patched) {
        struct bp_metrics m0 = *m;
        /* the first cycle under it rescores every job: not counted */
        (void)bp_metrics_get(port, &m0); /* on failure m0 stays: next_cycle waits from there */
        if (next_cycle(port, &m0, capped(o, 60)) == 0 && next_cycle(port, &m0, capped(o, 60)) == 0) {
            struct bp_metrics m1;
            double secs;
            r->rs_cpu_ms = steady_window(e, &m0, &m1, &secs);
            r->rs_mean = mean_ms(&m0, &m1, &r->rs_n);
        }
    }
    if (was[0])
        snprintf(body, sizeof body, "{\"spec\":{\"rescoreInterval\":\"%s\"}}", was);
    else
        snprintf(body, sizeof body, "{\"spec\":{\"rescoreInterval\":null}}");
    if (policy_patch(e, body) != 0 && patched)
        fprintf(stderr, "bench_operator_e2e: could not set the rescore interval back to %s\n",
                was[0] ? was : "none");
    (void)bp_metrics_get(port, m); /* on failure *m stays: the probes wait from there */
    next_cycle(port, m, capped(o, 60));
    bp_log("steady, rescoreInterval %s: %d cycles, mean %.1f ms", r->rs_alt, r->rs_n, r->rs_mean);
}

/* One arrival, created right after a cycle ended (*m: the last scrape,
 * moved on): the mean of the cycles from then until the job shows its
 * queue position, in ms; NAN when it was not seen in time. */
static double probe_arrival(struct env *e, struct bp_metrics *m, const char *lbl, int k) {
    const struct opts *o = e->o;
    struct bp_metrics m0 = *m, m1;
    char probe[64];
    int port = e->op.metrics_port, n;
    double ms = NAN;
    snprintf(probe, sizeof probe, "arrive-%s-%d", lbl, k);
    if (next_cycle(port, &m0, capped(o, o->probe_cap_s)) != 0)
        return NAN;
    *m = m0;
    char *body = bp_aijob_body(NS, probe, 1, 5, "NVIDIA-A100", "1h");
    int stc = body ? bp_req(&e->s, "POST", AIJOBS, "application/json", body, NULL) : 0;
    free(body);
    e->jw.arrivals += stc == 201;
    if (stc == 201 && probe_wait(&e->jw, probe, PH_QUEUED_POS, capped(o, o->probe_cap_s)) > 0 &&
        bp_metrics_get(port, &m1) == 0) {
        if (m1.count <= m0.count)
            next_cycle(port, &m1, capped(o, o->probe_cap_s));
        ms = mean_ms(&m0, &m1, &n);
        *m = m1;
    }
    return ms;
}

/* One finish: a probe job runs on the probe node; right after a cycle
 * the bench ends its pod as a kubelet would. The mean of the cycles from
 * then until the job shows Succeeded, in ms; NAN when not seen in time. */
static double probe_finish(struct env *e, struct bp_metrics *m, const char *lbl, int k) {
    const struct opts *o = e->o;
    struct bp_metrics m0 = *m, m1;
    char probe[64], path[160];
    int port = e->op.metrics_port, n;
    double ms = NAN;
    snprintf(probe, sizeof probe, "finish-%s-%d", lbl, k);
    if (create_probe(&e->s, probe) != 0 ||
        probe_wait(&e->jw, probe, PH_RUNNING, capped(o, o->probe_cap_s)) <= 0 ||
        bp_metrics_get(port, &m0) != 0 || next_cycle(port, &m0, capped(o, o->probe_cap_s)) != 0)
        return NAN;
    *m = m0;
    snprintf(path, sizeof path, PODS "/%s-0/status", probe);
    if (bp_req(&e->s, "PATCH", path, "application/merge-patch+json",
               "{\"status\":{\"phase\":\"Succeeded\"}}", NULL) == 200 &&
        probe_wait(&e->jw, probe, PH_SUCCEEDED, capped(o, o->probe_cap_s)) > 0 &&
        bp_metrics_get(port, &m1) == 0) {
        if (m1.count <= m0.count)
            next_cycle(port, &m1, capped(o, o->probe_cap_s));
        ms = mean_ms(&m0, &m1, &n);
        *m = m1;
    }
    return ms;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of v[0..n) (sorted in place), its largest in *max; NAN
 * for both when n is 0. */
static double probe_median(double *v, int n, double *max) {
    if (n <= 0) {
        *max = NAN;
        return NAN;
    }
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    *max = v[n - 1];
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Whether the operator died (then said on stderr, with where and its
 * log): the row stops there. */
static bool op_died(struct env *e, const char *when) {
    char why[96];
    if (!bp_operator_gone(&e->op, why, sizeof why))
        return false;
    fprintf(stderr, "bench_operator_e2e: the operator %s %s (see %s)\n", why, when, e->op.log);
    return true;
}

/* Steady state, arrivals, finishes and a restart: the measurements
 * of a row once its jobs are Queued. lbl names the probe jobs. Returns
 * -1 when the operator could not be started again (the config ends),
 * or when the operator died. */
static int measure(struct env *e, struct row *r, const char *lbl) {
    const struct opts *o = e->o;
    struct bp_metrics m0 = e->m, m1;
    char probe[64], err[512];
    int port = e->op.metrics_port;

    /* the due statuses drain, then the steady window */
    drain(e, r, &m0);
    if (op_died(e, "while the statuses drained"))
        return -1;
    long mod0 = atomic_load(&e->jw.modified);
    double secs;
    /* The operator's CPU over the window per cycle: what a cycle costs
     * whatever else the machine runs (the wall-clock figures stretch
     * with the load; between cycles a quiet operator uses next to no
     * CPU, so this is the cycle's own cost plus that). */
    r->cyc_cpu_ms = steady_window(e, &m0, &m1, &secs);
    r->writes_per_s = (atomic_load(&e->jw.modified) - mod0) / secs;
    r->cyc_p50 = bp_hist_quantile(&m0, &m1, 0.5) * 1e3;
    r->cyc_p99 = bp_hist_quantile(&m0, &m1, 0.99) * 1e3;
    r->cyc_mean = mean_ms(&m0, &m1, &r->cyc_n);
    r->thaws_per_s = (m1.thaws - m0.thaws) / secs;
    r->frozen_per_job = r->jobs > 0 ? m1.frozen / r->jobs : 0;
    long rss = bp_rss_kib(e->op.pid);
    r->rss_mib = rss / 1024.0;
    r->rss_kib_per_job = r->jobs > 0 ? (double)(rss - e->rss0) / r->jobs : 0;
    char wal[320];
    snprintf(wal, sizeof wal, "%s-wal", e->db);
    long long dbb = bp_file_bytes(e->db), walb = bp_file_bytes(wal);
    /* What is not yet checkpointed lives in the WAL: both count. */
    r->db_bytes_per_job = r->jobs > 0 && dbb > 0 ? (double)(dbb + (walb > 0 ? walb : 0)) / r->jobs : 0;
    r->wal_mib = walb > 0 ? walb / 1048576.0 : 0;
    if (op_died(e, "in the steady window"))
        return -1;
    bp_log("steady: %d cycles, mean %.1f ms, %.1f writes/s, RSS %.0f MiB", r->cyc_n, r->cyc_mean,
           r->writes_per_s, r->rss_mib);
    steady_rescore(e, r, &m1);

    /* arrivals and finishes, each right after a cycle ended */
    r->arr_ms = r->fin_ms = r->arr_max = r->fin_max = r->restart_s = r->restart_ready_s = NAN;
    if (left(o) < 20)
        return 0; /* past the deadline: no probes */
    double arr[BENCH_PROBES_MAX], fin[BENCH_PROBES_MAX];
    int na = 0, nf = 0;
    /* the goal's row (10k jobs on 1k nodes) takes BENCH_PROBES, the
     * others BENCH_PROBES_OTHER: make bench's default plan must end in
     * 15 minutes */
    int probes = r->jobs == 10000 && r->nodes == 1000 ? o->probes : o->probes_other;
    for (int k = 0; k < probes && left(o) > 20; k++) {
        double ms = probe_arrival(e, &m1, lbl, k);
        if (!isnan(ms))
            arr[na++] = ms;
        ms = probe_finish(e, &m1, lbl, k);
        if (!isnan(ms))
            fin[nf++] = ms;
    }
    r->arr_n = na;
    r->fin_n = nf;
    r->arr_ms = probe_median(arr, na, &r->arr_max);
    r->fin_ms = probe_median(fin, nf, &r->fin_max);
    bp_log("arrival: median %.2f ms, max %.2f, of %d probe(s); finish: median %.2f ms, max %.2f, "
           "of %d", r->arr_ms, r->arr_max, na, r->fin_ms, r->fin_max, nf);

    /* restart -> first admission: a probe waits on its cordoned node, the
     * operator is killed, the node uncordoned, the operator started */
    snprintf(probe, sizeof probe, "restart-%s", lbl);
    if (left(o) > 20 && cordon_probe(&e->s, 1) == 0 && create_probe(&e->s, probe) == 0 &&
        probe_wait(&e->jw, probe, PH_QUEUED_POS, capped(o, o->probe_cap_s)) > 0) {
        bp_operator_signal(&e->op, SIGKILL);
        if (cordon_probe(&e->s, 0) != 0)
            fprintf(stderr, "bench_operator_e2e: could not uncordon the probe node\n");
        if (bp_operator_start(&e->op, &e->s, e->db, e->oplog, o->cycle_ms, 600, err, sizeof err) != 0) {
            fprintf(stderr, "bench_operator_e2e: operator restart: %s\n", err);
            return -1;
        }
        double ta = probe_wait(&e->jw, probe, PH_ADMITTED, capped(o, 600) + 30);
        if (ta > 0)
            r->restart_s = ta - e->op.started;
        r->restart_ready_s = e->op.ready - e->op.started;
        r->rss_restart_mib = bp_rss_kib(e->op.pid) / 1024.0;
    } else {
        (void)cordon_probe(&e->s, 0); /* best effort: the next step needs the node */
    }
    memset(&e->m, 0, sizeof e->m);
    next_cycle(port = e->op.metrics_port, &e->m, capped(o, 60));
    bp_log("restart: admission after %.2f s (ready after %.2f s)", r->restart_s, r->restart_ready_s);
    return 0;
}

static int op_delete_node(void *vc, long i) {
    struct ctx *c = vc;
    char path[96];
    long k = c->base + i;
    snprintf(path, sizeof path, "/api/v1/nodes/gpu%ld-%ld", k / 1000, k % 1000);
    return bp_req(c->s, "DELETE", path, NULL, NULL, NULL) == 200 ? 0 : -1;
}

static struct row *new_row(struct row *rows, int *nr, enum bp_kind kind, int nodes, long target) {
    struct row *r = &rows[(*nr)++];
    memset(r, 0, sizeof *r);
    r->kind = kind;
    r->nodes = nodes;
    r->target = target;
    return r;
}

/* Runs one configuration: its steps, then the release and the shrinking.
 * Appends its rows (also those it had no time for) and the release.
 * Returns 0, or -1 when it failed. */
static int run_config(const struct config *cf, const char *top, const struct opts *o,
                      struct row *rows, int *nr, struct rel *rl) {
    char dir[256], nodes[300], err[512], lbl[32];
    struct bp_watch *wt = NULL;
    int rc = -1, st = 0, sh = 0;
    long maxjobs = cf->steps[cf->nsteps - 1];
    static struct env e; /* large (probe tables): not on the stack */
    enum bp_kind kind = cf->kind;
    int first_row = *nr;

    memset(&e, 0, sizeof e);
    e.o = o;
    e.nnodes = cf->nodes;
    snprintf(dir, sizeof dir, "%s/%s-%d", top, bp_kind_name(kind), cf->nodes);
    snprintf(nodes, sizeof nodes, "%s.nodes.yaml", dir);
    snprintf(e.db, sizeof e.db, "%s/op.db", dir);
    snprintf(e.oplog, sizeof e.oplog, "%s/operator.log", dir);
    for (int i = 1; i < cf->nsteps; i++)
        if (cf->steps[i] > maxjobs)
            maxjobs = cf->steps[i];
    if (left(o) < 30 || bp_write_nodes(nodes, cf->nodes, 1, 1) != 0)
        goto out_rows;
    pthread_mutex_init(&e.jw.mu, NULL);
    e.jw.cap = maxjobs;
    e.jw.t_created = calloc((size_t)maxjobs, sizeof *e.jw.t_created);
    e.jw.t_queued = calloc((size_t)maxjobs, sizeof *e.jw.t_queued);
    atomic_init(&e.jw.nqueued, 0);
    atomic_init(&e.jw.modified, 0);
    if (!e.jw.t_created || !e.jw.t_queued)
        goto out_free;

    /* The local server keeps its watch history as parsed objects (about
     * 25 KB per event): 50,000 events hold a burst's backlog in ~1.5 GB.
     * The real one is left at its defaults. */
    const char *local_extra[] = {"--history", "50000", NULL};
    /* 5,000 fake nodes renewing leases every 10 s would be 1,500 requests
     * per second on their own: every 30 s (the lease lasts 40). */
    const char *real_extra[] = {"--lease-seconds", "30", NULL};
    bp_log("%s %d nodes: starting the server", bp_kind_name(kind), cf->nodes);
    if (bp_server_start(&e.s, kind, dir, nodes, kind == BP_LOCAL ? local_extra : real_extra,
                        o->clients + 4, 600, err, sizeof err) != 0) {
        fprintf(stderr, "bench_operator_e2e: %s: %s\n", bp_kind_name(kind), err);
        goto out_free;
    }
    bp_log("server ready in %.1f s", e.s.ready_s);
    static const char *const crds[] = {"crds/aijobs.aiq.dev.yaml", "crds/queuepolicies.aiq.dev.yaml",
                                       "crds/groups.aiq.dev.yaml", "crds/userquotas.aiq.dev.yaml"};
    if (bp_post_yaml(&e.s, crds, 4, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", NULL,
                     err, sizeof err) != 0 ||
        bp_wait_get(&e.s, AIJOBS, 60) != 0 ||
        bp_wait_get(&e.s, "/apis/aiq.dev/v1alpha1/queuepolicies", 60) != 0) {
        fprintf(stderr, "bench_operator_e2e: %s: CRDs: %s\n", bp_kind_name(kind), err);
        goto out_server;
    }
    if (strcmp(o->policy, "none") != 0) {
        char pf[300];
        const char *pfile = pf;
        if (strchr(o->policy, '/') || strstr(o->policy, ".yaml"))
            pfile = o->policy;
        else
            snprintf(pf, sizeof pf, "examples/policies/%s.yaml", o->policy);
        if (bp_post_yaml(&e.s, &pfile, 1, "/apis/aiq.dev/v1alpha1/queuepolicies", policy_active, err,
                         sizeof err) != 0) {
            fprintf(stderr, "bench_operator_e2e: policy: %s\n", err);
            goto out_server;
        }
    }
    if (kind == BP_REAL &&
        bp_wait_get(&e.s, "/api/v1/namespaces/" NS "/serviceaccounts/default", 60) != 0)
        fprintf(stderr, "bench_operator_e2e: real: no default service account yet\n");
    wt = bp_watch_start(&e.s, AIJOBS "?watch=true", jw_line, &e.jw);
    if (!wt) {
        fprintf(stderr, "bench_operator_e2e: cannot watch aijobs\n");
        goto out_server;
    }
    if (bp_operator_start(&e.op, &e.s, e.db, e.oplog, o->cycle_ms, 120, err, sizeof err) != 0) {
        fprintf(stderr, "bench_operator_e2e: operator: %s\n", err);
        goto out_watch;
    }
    next_cycle(e.op.metrics_port, &e.m, 10);
    next_cycle(e.op.metrics_port, &e.m, 10);
    e.rss0 = bp_rss_kib(e.op.pid);
    bp_log("operator ready, RSS %ld KiB", e.rss0);

    long have = 0;
    for (st = 0; st < cf->nsteps && left(o) > 30; st++) {
        long target = cf->steps[st];
        struct row *r = new_row(rows, nr, kind, cf->nodes, target);
        struct ctx c = {&e.s, &e.jw, have, NULL, NULL, cf->nodes, o->apply};
        long done = 0, ok = 0;
        r->run = 1;
        r->burst = target - have;
        label(lbl, sizeof lbl, target);

        /* the burst, and created -> Queued */
        bp_log("step %s: creating %ld AIJobs with %d clients", lbl, r->burst, o->clients);
        double t0 = bp_now();
        double secs = bp_parallel(o->clients, r->burst, capped(o, 1e9), op_create_job, &c, &done, &ok);
        r->create_per_s = secs > 0 ? ok / secs : 0;
        have = target;
        bp_log("created %ld in %.1f s; waiting for Queued", ok, secs);
        double cap = capped(o, o->queued_cap_s);
        while (atomic_load(&e.jw.nqueued) < have && bp_now() - t0 < cap) {
            if (op_died(&e, "waiting for Queued")) {
                (*nr)--; /* its figures are of nothing: listed as failed below */
                goto out_watch;
            }
            usleep(20000);
        }
        r->all_queued_s = bp_now() - t0;
        r->queued = atomic_load(&e.jw.nqueued);
        r->jobs = r->queued;
        r->cut = r->queued < have;
        double *lat = calloc((size_t)r->burst, sizeof *lat);
        int n = 0;
        for (long i = have - r->burst; lat && i < have; i++)
            if (e.jw.t_created[i] > 0 && e.jw.t_queued[i] > 0)
                lat[n++] = e.jw.t_queued[i] - e.jw.t_created[i];
        r->q_p50 = bp_pct(lat, n, 0.5);
        r->q_p99 = bp_pct(lat, n, 0.99);
        free(lat);
        bp_log("%ld Queued after %.1f s", r->queued, r->all_queued_s);
        if (r->cut) {
            st++;
            break; /* not at steady state: nothing more to measure here */
        }
        if (measure(&e, r, lbl) != 0) {
            (*nr)--; /* a row half measured: listed as failed below */
            goto out_watch;
        }
    }
    int complete = st == cf->nsteps && !(*nr > 0 && rows[*nr - 1].cut);
    if (cf->release && complete && left(o) > 60)
        run_release(&e, rl);
    /* fewer nodes under the same jobs: delete nodes, measure again */
    /* (not after a release: the jobs are not pending any more) */
    for (sh = 0; complete && !cf->release && sh < cf->nshrink && left(o) > 30; sh++) {
        long from = sh == 0 ? cf->nodes : cf->shrink[sh - 1], to = cf->shrink[sh];
        if (to >= from)
            break;
        struct row *r = new_row(rows, nr, kind, (int)to, cf->steps[cf->nsteps - 1]);
        struct ctx c = {&e.s, &e.jw, to, NULL, NULL, cf->nodes, o->apply};
        long done = 0, ok = 0;
        r->run = 1;
        r->shrunk_from = (int)from;
        r->jobs = r->queued = atomic_load(&e.jw.nqueued);
        bp_log("shrink: deleting nodes %ld..%ld", to, from - 1);
        bp_parallel(o->clients, from - to, capped(o, 300), op_delete_node, &c, &done, &ok);
        e.nnodes = (int)to;
        label(lbl, sizeof lbl, to);
        char plbl[48];
        snprintf(plbl, sizeof plbl, "n%s", lbl);
        if (measure(&e, r, plbl) != 0)
            goto out_watch;
    }
    rc = 0;
    bp_operator_signal(&e.op, SIGTERM);
out_watch:
    if (e.op.pid > 0)
        bp_operator_signal(&e.op, SIGKILL);
    bp_watch_stop(wt);
out_server:
    bp_server_stop(&e.s);
out_free:
    free(e.jw.t_created);
    free(e.jw.t_queued);
    pthread_mutex_destroy(&e.jw.mu);
out_rows:;
    /* The rows it did not get to, so the table says so. */
    const char *why = left(o) <= 30 ? "deadline (BENCH_DEADLINE_S)"
                      : *nr > first_row && rows[*nr - 1].run && rows[*nr - 1].cut
                          ? "the step before did not get all its jobs Queued"
                          : "the configuration failed (see above)";
    for (; st < cf->nsteps; st++)
        new_row(rows, nr, kind, cf->nodes, cf->steps[st])->why = why;
    for (; sh < cf->nshrink; sh++)
        new_row(rows, nr, kind, (int)cf->shrink[sh], cf->steps[cf->nsteps - 1])->why = why;
    return rc;
}

/* ---- main ------------------------------------------------------------------- */

static void key(const struct row *r, const char *what, const char *fmt, double v) {
    char a[32], b[32];
    if (!r->run || !isfinite(v))
        return;
    label(a, sizeof a, r->target);
    label(b, sizeof b, r->nodes);
    printf("%s_e2e_%s_%s_%s=", bp_kind_name(r->kind), what, a, b);
    printf(fmt, v);
    printf("\n");
}

#define DEFAULT_PLAN                                                                      \
    "local:1000:1k,10k:release;real:1000:1k,10k:release;local:5000:1k,10k,100k:shrink=1000,10;" \
    "local:10:1k,10k;real:10:1k,10k;real:5000:1k,10k"

int main(void) {
    static struct config cfg[32];
    static struct row rows[512];
    struct opts o;
    struct rel rels[32];
    char plan[1024];
    int nc, nr = 0, nrel = 0, failed = 0;
    double scale = bp_env_double("BENCH_SCALE", 1);
    char top[] = "/tmp/aiq-bench-e2e.XXXXXX";
    double t_start = bp_now();

    /* The plan: BENCH_PLAN, or the cross product of BENCH_SERVERS x
     * BENCH_NODES with BENCH_JOBS as steps when any of those is set. */
    if (getenv("BENCH_PLAN")) {
        snprintf(plan, sizeof plan, "%s", getenv("BENCH_PLAN"));
    } else if (getenv("BENCH_SERVERS") || getenv("BENCH_NODES") || getenv("BENCH_JOBS")) {
        const char *sv = bp_env_str("BENCH_SERVERS", "local,real");
        long nodes[MAX_NODES];
        int nn = bp_parse_list(bp_env_str("BENCH_NODES", "10,1000,5000"), nodes, MAX_NODES);
        long rel_nodes = bp_env_long("BENCH_RELEASE_NODES", 1000);
        size_t len = 0;
        plan[0] = 0;
        for (int k = 0; k < 2 && nn > 0; k++) {
            const char *nm = bp_kind_name(k == 0 ? BP_LOCAL : BP_REAL);
            if (!strstr(sv, nm))
                continue;
            for (int i = 0; i < nn && len < sizeof plan - 100; i++)
                len += (size_t)snprintf(plan + len, sizeof plan - len, "%s%s:%ld:%s%s", len ? ";" : "", nm,
                                        nodes[i], bp_env_str("BENCH_JOBS", "1000,10000,100000"),
                                        nodes[i] == rel_nodes ? ":release" : "");
        }
    } else {
        snprintf(plan, sizeof plan, "%s", DEFAULT_PLAN);
    }
    nc = parse_plan(plan, cfg, 32);
    if (nc <= 0) {
        fprintf(stderr, "bench_operator_e2e: cannot read the plan \"%s\" (SERVER:NODES:STEPS"
                        "[:release][:shrink=N,...];...)\n", plan);
        return 2;
    }
    for (int i = 0; i < nc; i++)
        for (int k = 0; k < cfg[i].nsteps; k++)
            cfg[i].steps[k] = cfg[i].steps[k] * scale < 1 ? 1 : (long)(cfg[i].steps[k] * scale);
    memset(&o, 0, sizeof o);
    o.clients = (int)bp_env_long("BENCH_CLIENTS", 4);
    o.cycle_ms = (int)bp_env_long("BENCH_CYCLE_MS", 1000);
    o.steady_s = bp_env_double("BENCH_STEADY_S", 5);
    o.settle_cap_s = bp_env_double("BENCH_SETTLE_CAP_S", 60);
    o.queued_cap_s = bp_env_double("BENCH_QUEUED_CAP_S", 600);
    o.probe_cap_s = bp_env_double("BENCH_PROBE_CAP_S", 60);
    o.probes = (int)bp_env_long("BENCH_PROBES", 3);
    o.probes_other = (int)bp_env_long("BENCH_PROBES_OTHER", 1);
    if (o.probes < 1 || o.probes > BENCH_PROBES_MAX || o.probes_other < 1 ||
        o.probes_other > BENCH_PROBES_MAX) {
        fprintf(stderr, "bench_operator_e2e: BENCH_PROBES and BENCH_PROBES_OTHER must be 1..%d, "
                        "got %d and %d\n", BENCH_PROBES_MAX, o.probes, o.probes_other);
        return 2;
    }
    o.release_cap_s = bp_env_double("BENCH_RELEASE_CAP_S", 300);
    o.raw_base_n = bp_env_long("BENCH_RAW_BASE_N", 3000);
    o.policy = bp_env_str("BENCH_POLICY", "priority");
    o.apply = strcmp(bp_env_str("BENCH_APPLY", "0"), "1") == 0;
    double deadline_s = bp_env_double("BENCH_DEADLINE_S", 690);
    if (getenv("BENCH_DEADLINE_S") && strcmp(getenv("BENCH_DEADLINE_S"), "0") == 0)
        deadline_s = 0;
    o.deadline = deadline_s > 0 ? t_start + deadline_s : 0;
    curl_global_init(CURL_GLOBAL_ALL); /* before any thread makes a handle */
    if (!mkdtemp(top))
        return 1;
    memset(rels, 0, sizeof rels);

    for (int i = 0; i < nc; i++) {
        struct rel rl;
        memset(&rl, 0, sizeof rl);
        if (run_config(&cfg[i], top, &o, rows, &nr, &rl) != 0 && left(&o) > 30)
            failed = 1;
        if (rl.done)
            rels[nrel++] = rl;
    }

    printf("operator end to end: aiq-operator and the API server as separate processes, AIJobs\n"
           "created by POST (%d clients)%s, policy %s, --cycle-ms %d, steady window %.0f s\n"
           "plan %s%s\n",
           o.clients,
           o.apply ? " as kubectl apply does (BENCH_APPLY: the last-applied annotation)" : "",
           o.policy, o.cycle_ms, o.steady_s, plan, scale != 1 ? " (BENCH_SCALE applied)" : "");
    printf("%-6s %6s %7s %7s %8s %8s %8s %8s %9s %8s %8s %9s %8s %9s %8s\n", "server", "nodes",
           "pending", "burst", "create/s", "allQ_s", "Q_p50_s", "Q_p99_s", "drain_w/s", "settle_s",
           "writes/s", "restart_s", "ready_s", "db_B/job", "wal_MiB");
    for (int i = 0; i < nr; i++) {
        struct row *r = &rows[i];
        if (!r->run) {
            printf("%-6s %6d %7ld  not run: %s\n", bp_kind_name(r->kind), r->nodes, r->target,
                   r->why ? r->why : "?");
            continue;
        }
        if (r->burst > 0)
            printf("%-6s %6d %7ld %7ld %8.0f %8.1f %8.2f %8.2f", bp_kind_name(r->kind), r->nodes,
                   r->jobs, r->burst, r->create_per_s, r->all_queued_s, r->q_p50, r->q_p99);
        else
            printf("%-6s %6d %7ld %7s %8s %8s %8s %8s", bp_kind_name(r->kind), r->nodes, r->jobs, "-",
                   "-", "-", "-", "-");
        if (r->cut)
            printf("  (not all Queued)\n");
        else {
            char settle[32];
            if (r->settle_capped)
                snprintf(settle, sizeof settle, "cap");
            else
                snprintf(settle, sizeof settle, "%.1f", r->settle_s);
            printf(" %9.1f %8s %8.1f %9.2f %8.2f %9.0f %8.1f%s\n", r->drain_per_s, settle,
                   r->writes_per_s, r->restart_s, r->restart_ready_s, r->db_bytes_per_job,
                   r->wal_mib, r->shrunk_from > 0 ? "  (nodes deleted)" : "");
        }
    }
    printf("\n%-6s %6s %7s %8s %8s %8s %8s %5s %3s %8s %8s %9s %9s %8s %11s %11s %10s %7s\n",
           "server", "nodes", "pending", "cyc_p50", "cyc_p99", "cyc_mean", "cyc_cpu", "n", "rs",
           "rs_mean", "rs_cpu", "arrive_ms", "finish_ms", "rss_MiB", "rss_KiB/job", "restart_MiB",
           "frozen/job", "thaw/s");
    for (int i = 0; i < nr; i++) {
        struct row *r = &rows[i];
        if (!r->run || r->cut)
            continue;
        printf("%-6s %6d %7ld %8.1f %8.1f %8.1f %8.1f %5d %3s %8.1f %8.1f %9.1f %9.1f %8.0f %11.1f "
               "%11.0f %10.2f %7.1f\n",
               bp_kind_name(r->kind), r->nodes, r->jobs, r->cyc_p50, r->cyc_p99, r->cyc_mean,
               r->cyc_cpu_ms, r->cyc_n, r->rs_alt, r->rs_mean, r->rs_cpu_ms, r->arr_ms, r->fin_ms, r->rss_mib,
               r->rss_kib_per_job, r->rss_restart_mib, r->frozen_per_job, r->thaws_per_s);
    }
    printf("(cycle ms: p50/p99 interpolated in the operator's histogram buckets, mean exact;\n"
           " cyc_cpu: the operator's CPU ms (every thread, /proc) over the window per cycle;\n"
           " rs_mean, rs_cpu: the same over a second window with the policy's rescoreInterval\n"
           " set to rs: 0s (every cycle) when the policy has one, 1m when it has none (nan: it\n"
           " cannot take one); the probes run with the policy as it is;\n"
           " arrive/finish: mean of the cycles between the event and its effect, the median\n"
           " over BENCH_PROBES probes at 10k jobs x 1k nodes, BENCH_PROBES_OTHER elsewhere\n"
           " (the slowest in the keys' _max); nan: not seen within BENCH_PROBE_CAP_S)\n");
    if (nrel > 0) {
        printf("\nrelease: uncordon -> last pod ungated, against the raw release patch rate with the\n"
               "operator stopped (SIGSTOP), same server, same run; first_s and half_s: uncordon\n"
               "-> the first pod and the middle pod seen ungated; op, srv, idle: CPU cores the\n"
               "operator and the server (with its child processes) used over the release, and\n"
               "the machine's idle ones (of %ld)\n", sysconf(_SC_NPROCESSORS_ONLN));
        printf("%-6s %6s %8s %8s %9s %9s %8s %8s %10s %8s %10s %9s %5s %5s %5s\n", "server",
               "nodes", "pending", "released", "seconds", "pods/s", "first_s", "half_s",
               "uncordon_s", "raw_n", "raw_per_s", "ratio", "op", "srv", "idle");
        for (int i = 0; i < nrel; i++) {
            struct rel *r = &rels[i];
            printf("%-6s %6d %8ld %8ld %9.2f %9.0f %8.2f %8.2f %10.2f %8ld %10.0f %9.2f %5.2f %5.2f "
                   "%5.2f\n",
                   bp_kind_name(r->kind), r->nodes, r->pending, r->released, r->secs, r->rate,
                   r->first_s, r->half_s, r->uncordon_s, r->raw_n, r->raw_rate,
                   r->raw_rate > 0 ? r->rate / r->raw_rate : 0, r->op_cores, r->srv_cores,
                   r->idle_cores);
            if (r->released < r->expected)
                printf("note: %ld of %ld pods released (none within BENCH_RELEASE_CAP_S of the\n"
                       "      uncordon, or none for 60 s after the last one)\n",
                       r->released, r->expected);
        }
    }
    for (int i = 0; i < nr; i++)
        if (rows[i].run && rows[i].cut)
            printf("note: %s %d nodes: only %ld of %ld jobs Queued after %.0f s (the cap or the\n"
                   "      deadline): no steady state, the row's other figures are not measured\n",
                   bp_kind_name(rows[i].kind), rows[i].nodes, rows[i].queued, rows[i].target,
                   rows[i].all_queued_s);
    printf("whole run: %.0f s\n", bp_now() - t_start);

    for (int i = 0; i < nr; i++) {
        struct row *r = &rows[i];
        if (r->burst > 0) {
            key(r, "queued_p50_s", "%.2f", r->q_p50);
            key(r, "queued_p99_s", "%.2f", r->q_p99);
        }
        if (r->cut)
            continue;
        key(r, "cycle_p50_ms", "%.1f", r->cyc_p50);
        key(r, "cycle_p99_ms", "%.1f", r->cyc_p99);
        key(r, "cycle_mean_ms", "%.2f", r->cyc_mean);
        key(r, "operator_cpu_ms_per_cycle", "%.2f", r->cyc_cpu_ms);
        /* the second window's keys say which way it went */
        bool every = strcmp(r->rs_alt, "0s") == 0;
        key(r, every ? "cycle_mean_rescore_every_cycle_ms" : "cycle_mean_rescore_1m_ms", "%.2f",
            r->rs_mean);
        key(r, every ? "operator_cpu_ms_per_cycle_rescore_every_cycle"
                     : "operator_cpu_ms_per_cycle_rescore_1m",
            "%.2f", r->rs_cpu_ms);
        key(r, "arrival_cycle_ms", "%.2f", r->arr_ms);
        key(r, "arrival_cycle_ms_max", "%.2f", r->arr_max);
        key(r, "finish_cycle_ms", "%.2f", r->fin_ms);
        key(r, "finish_cycle_ms_max", "%.2f", r->fin_max);
        key(r, "rss_kib_per_job", "%.1f", r->rss_kib_per_job);
        key(r, "cache_frozen_per_job", "%.2f", r->frozen_per_job);
        key(r, "cache_thaws_per_s", "%.1f", r->thaws_per_s);
        key(r, "status_writes_per_s", "%.1f", r->writes_per_s);
        key(r, "status_drain_writes_per_s", "%.1f", r->drain_per_s);
        key(r, "status_settle_s", "%.1f", r->settle_capped ? NAN : r->settle_s);
        key(r, "restart_admit_s", "%.2f", r->restart_s);
    }
    for (int i = 0; i < nrel; i++) {
        const char *nm = bp_kind_name(rels[i].kind);
        printf("%s_e2e_release_pods_per_s=%.0f\n", nm, rels[i].rate);
        printf("%s_e2e_release_first_pod_s=%.2f\n", nm, rels[i].first_s);
        printf("%s_e2e_release_half_pods_s=%.2f\n", nm, rels[i].half_s);
        printf("%s_e2e_raw_patch_stopped_per_s=%.0f\n", nm, rels[i].raw_rate);
        printf("%s_e2e_release_vs_raw_patch=%.2f\n", nm,
               rels[i].raw_rate > 0 ? rels[i].rate / rels[i].raw_rate : 0);
        printf("%s_e2e_release_operator_cores=%.2f\n", nm, rels[i].op_cores);
        printf("%s_e2e_release_server_cores=%.2f\n", nm, rels[i].srv_cores);
        printf("%s_e2e_release_idle_cores=%.2f\n", nm, rels[i].idle_cores);
    }
    if (!getenv("BENCH_KEEP")) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf %s", top);
        if (system(cmd) != 0)
            fprintf(stderr, "bench_operator_e2e: could not remove %s\n", top);
    } else {
        fprintf(stderr, "kept %s\n", top);
    }
    curl_global_cleanup();
    return failed;
}
