/* sim_run.c -- the simulator's event loop. Simulated time jumps from event
 * to event (arrivals, completions, and a tick every tick_s while jobs
 * wait); at each event time one queue cycle (q_cycle_run with the
 * compiled policy) decides, admitted gangs are placed on the simulated
 * nodes and end start + duration later. Usage decays and feeds fair share
 * (policy/fairshare.h) as in the operator; finished runs feed the runtime
 * predictor (queue/predict.h). Decisions are journaled with the
 * operator's rule (only when a job's decision changed), into a store
 * and/or the result. In replay mode (cfg->script) cycles and departures
 * come from a recorded journal instead.
 *
 * Preemption and elastic jobs: the queue's actions are carried out as the
 * operator will. A victim keeps running and holding its GPUs for the grace
 * period (cfg->preempt_grace_s), then stops and goes back to the queue
 * with its remaining work kept: a job that checkpoints loses the work since
 * its last checkpoint (one every checkpoint_s of running), one that does
 * not loses everything it did in that run. A shrink stops the top replicas
 * after the grace period; growth takes effect at once. An elastic job runs
 * at a speed proportional to its replicas (duration_s is at the trace's
 * replicas); a resize loses no work. Attained service and fair-share usage
 * accrue per stretch of running, at the GPUs held. */
#include "simulator/sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "common/fnv.h"
#include "common/json.h"
#include "common/units.h"
#include "queue/predict.h"
#include "policy/fairshare.h"
#include "simulator/sim_int.h"

/* ---- names shared with the journal ------------------------------------- */

static const char *const reason_str[Q__NREASONS] = {
    [Q_R_NONE] = "Admitted",        [Q_R_SUSPENDED] = "Suspended",
    [Q_R_QUOTA] = "QuotaFull",      [Q_R_BUDGET] = "BudgetExhausted",
    [Q_R_CAPACITY] = "WaitingForGPUs", [Q_R_BLOCKED] = "BehindHigherPriority",
    [Q_R_NO_NODE] = "NoMatchingNode", [Q_R_NODE_TOO_SMALL] = "ReplicaTooBig",
    [Q_R_GANG_TOO_BIG] = "GangTooBig", [Q_R_OVER_QUOTA] = "OverQuota",
    [Q_R_OVER_BUDGET] = "OverBudget", [Q_R_INVALID] = "Invalid",
    [Q_R_SCORE_ERROR] = "Waiting",   [Q_R_PREEMPTING] = "Preempting",
    [Q_R_BORROW] = "WaitingToBorrow", [Q_R_PREEMPTED] = "Preempted",
    [Q_R_PREEMPTED_SCORE] = "PreemptedByScore", [Q_R_RECLAIMED] = "Reclaimed",
    [Q_R_SHRUNK] = "Shrunk",         [Q_R_GROWN] = "Grown",
};

/* Reason text; see sim_int.h. */
const char *sim__reason_str(int reason, bool backfilled) {
    if (reason == Q_R_NONE && backfilled)
        return "Backfilled";
    return reason >= 0 && reason < Q__NREASONS ? reason_str[reason] : "Waiting";
}

/* Reason from text; see sim_int.h. */
int sim__reason_parse(const char *s, bool *backfilled) {
    *backfilled = false;
    if (!s)
        return -1;
    if (strcmp(s, "Backfilled") == 0) {
        *backfilled = true;
        return Q_R_NONE;
    }
    for (int r = 0; r < Q__NREASONS; r++)
        if (strcmp(s, reason_str[r]) == 0)
            return r;
    return -1;
}

/* See sim_int.h. */
aiq_rc sim__q_node(const struct sim_node *s, int k, struct q_node *q, aiq_err *err) {
    if (s->gpus < 0 || s->gpus > Q_MAX_GPUS)
        return aiq_err_field(err, AIQ_EINVAL, "nodes", "nodes[%d] (%s): gpus must be "
                             "0..%d, got %d", k, s->name, Q_MAX_GPUS, s->gpus);
    q->name = s->name;
    q->gpu_model = s->gpu_model;
    q->ngpus = s->gpus;
    for (int g = 0; g < s->gpus; g++)
        q->gpu_mem_total[g] = s->gpu_mem_mib;
    q->cpu_alloc = s->cpu_milli;
    q->mem_alloc = s->mem_bytes;
    q->schedulable = true;
    return AIQ_OK;
}

/* Action text; see sim_int.h. */
const char *sim__action_str(int decision) {
    switch (decision) {
    case Q_DEC_ADMIT: return "admit";
    case Q_DEC_REJECT: return "reject";
    case Q_DEC_PREEMPT: return "preempt";
    case Q_DEC_RESIZE: return "resize";
    default: return "wait";
    }
}

/* Action from text; see sim_int.h. */
int sim__action_parse(const char *s) {
    if (!s)
        return 0;
    if (strcmp(s, "admit") == 0)
        return Q_DEC_ADMIT;
    if (strcmp(s, "wait") == 0)
        return Q_DEC_WAIT;
    if (strcmp(s, "reject") == 0)
        return Q_DEC_REJECT;
    if (strcmp(s, "preempt") == 0)
        return Q_DEC_PREEMPT;
    if (strcmp(s, "resize") == 0)
        return Q_DEC_RESIZE;
    return 0;
}

/* Fills defaults; see sim.h. */
void sim_config_init(struct sim_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->epoch = SIM_EPOCH;
    cfg->tick_s = 600;
    cfg->predict = true;
    cfg->preempt_grace_s = 30;
}

void sim_config_for(struct sim_config *cfg, const struct sim_trace *trace, oppolicy *policy) {
    sim_config_init(cfg);
    cfg->trace = trace;
    cfg->nodes = trace->nodes;
    cfg->nnodes = trace->nnodes;
    cfg->policy = policy;
}

/* ---- a string -> index map ---------------------------------------------- */

struct smap {
    int32_t *slot;
    const char **k1;   /* per index: the name */
    int *k2;           /* per index: the group (users) or -1 */
    size_t cap;        /* power of two */
    int n;
};

static uint64_t shash__(const char *s, int g) {
    return aiq_fnv_cstr(AIQ_FNV_TABLE_SEED ^ (uint64_t)(g + 2), s);
}

/* Returns the index of (s, g), adding it; -1 on ENOMEM. maxn bounds n. */
static int smap_get(struct smap *m, const char *s, int g, int maxn) {
    if (!m->slot) {
        m->cap = 64;
        while (m->cap < (size_t)maxn * 2 + 2)
            m->cap *= 2;
        m->slot = malloc(m->cap * sizeof *m->slot);
        m->k1 = malloc((size_t)(maxn + 1) * sizeof *m->k1);
        m->k2 = malloc((size_t)(maxn + 1) * sizeof *m->k2);
        if (!m->slot || !m->k1 || !m->k2)
            return -1;
        memset(m->slot, 0xff, m->cap * sizeof *m->slot);
    }
    size_t k = (size_t)shash__(s, g) & (m->cap - 1);
    while (m->slot[k] >= 0) {
        int i = m->slot[k];
        if (m->k2[i] == g && strcmp(m->k1[i], s) == 0)
            return i;
        k = (k + 1) & (m->cap - 1);
    }
    m->k1[m->n] = s;
    m->k2[m->n] = g;
    m->slot[k] = m->n;
    return m->n++;
}

static void smap_free(struct smap *m) {
    free(m->slot);
    free(m->k1);
    free(m->k2);
}

/* ---- the run --------------------------------------------------------------- */

enum { JS_FUTURE = 0, JS_PENDING, JS_RUNNING, JS_DONE, JS_REJECTED };

struct lastdec {
    int32_t level, pos;
    uint8_t action, reason;
    bool backfilled, set, seen;
};

/* A timed event of the run: a job's end, a victim gone, shrunk replicas
 * gone. ver must equal the job's (anything that moves the job bumps it). */
enum { EV_END = 0, EV_STOP, EV_SHRINK };

struct ev {
    double t;
    int job;
    uint32_t ver;
    uint8_t kind;
};

/* The run's state of one job beyond the trace. */
struct jrun {
    double done;        /* work done (seconds at the trace's replicas) */
    double done0;       /* ... when this run started */
    double acc_t;       /* done, attained and usage are counted up to here */
    double run_start;   /* start of this run (0 = not running) */
    double attained_s;  /* GPU-seconds over all runs, up to acc_t */
    double attained0;   /* ... when this run started */
    double run_wall;    /* seconds spent running, all runs */
    double held;        /* GPUs held now (a share counts its fraction) */
    double queued;      /* last entry into the queue, 0 = its arrival */
    double pre_t[8];    /* its last preemptions (ring) */
    int npre;
    int rep;            /* replicas placed now (stopping ones included) */
    int stopping;       /* top replicas being stopped */
    int cap;            /* placements it has room for */
    uint32_t ver;
    bool terminating;
    bool releasing;     /* replay: ended, its pods not yet gone (release_t) */
};

struct run {
    const struct sim_config *cfg;
    const struct sim_trace *tr;
    struct sim_result *res;
    struct q_node *nodes;
    int nn;
    struct smap gmap, umap;
    struct q_group *groups;
    struct q_user *users;
    struct fs_usage *gusage, *uusage;
    struct fs_group *fsg;
    struct fs_user *fsu;
    struct fs_factor *fgo, *fuo;
    int *jgroup, *juser;
    uint8_t *jst;
    int *poff;
    struct q_place *places;
    int *active;
    int nactive, npending;
    struct ev *heap;
    int nh, ch;
    struct q_job *qjobs;
    int *qidx;
    q_state *qs;
    pred_hist *ph;
    struct lastdec *last;
    struct jrun *js;
    double busy, last_t, half_life;
    double *gbusy, *ubusy;   /* GPUs held now per group / user */
    uint64_t gen;
    bool usage_changed;
    long since_commit;
    int ucap;   /* util capacity */
};

static bool ev_before(const struct ev *a, const struct ev *b) {
    if (a->t != b->t)
        return a->t < b->t;
    if (a->job != b->job)
        return a->job < b->job;
    return a->kind < b->kind;
}

/* Pushes an event; the heap grows as needed. Returns 0 or -1 (ENOMEM). */
static int heap_push(struct run *r, double t, int job, uint8_t kind) {
    if (r->nh == r->ch) {
        int nc = r->ch ? r->ch * 2 : 64;
        struct ev *nh = realloc(r->heap, (size_t)nc * sizeof *nh);
        if (!nh)
            return -1;
        r->heap = nh;
        r->ch = nc;
    }
    struct ev x = {t, job, r->js[job].ver, kind};
    int i = r->nh++;
    while (i > 0) {
        int p = (i - 1) / 2;
        if (ev_before(&r->heap[p], &x))
            break;
        r->heap[i] = r->heap[p];
        i = p;
    }
    r->heap[i] = x;
    return 0;
}

static struct ev heap_pop(struct run *r) {
    struct ev top = r->heap[0], x = r->heap[--r->nh];
    int i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= r->nh)
            break;
        if (c + 1 < r->nh && ev_before(&r->heap[c + 1], &r->heap[c]))
            c++;
        if (ev_before(&x, &r->heap[c]))
            break;
        r->heap[i] = r->heap[c];
        i = c;
    }
    r->heap[i] = x;
    return top;
}

/* Is e still to happen? An end belongs to one version of the job's
 * speed; a stop to a victim still stopping; a shrink to replicas still
 * stopping. */
static bool ev_live(const struct run *r, const struct ev *e) {
    const struct jrun *s = &r->js[e->job];
    if (r->jst[e->job] != JS_RUNNING)
        return false;
    switch (e->kind) {
    case EV_END: return e->ver == s->ver;
    case EV_STOP: return s->terminating;
    default: return s->stopping > 0 && !s->terminating;
    }
}

/* Drops events that will not happen from the top, so the next event time
 * is a real one. */
static void heap_clean(struct run *r) {
    while (r->nh && !ev_live(r, &r->heap[0]))
        (void)heap_pop(r); /* stale: nothing to do */
}

/* Integrates GPUs held and fragmentation from last_t to t. */
static aiq_rc advance(struct run *r, double t, double frag, aiq_err *err) {
    struct sim_result *res = r->res;
    double t0 = r->last_t;
    if (t <= t0)
        return AIQ_OK;
    res->busy_gpu_s += r->busy * (t - t0);
    if (r->npending > 0) {
        res->frag_unusable_s += frag * (t - t0);
        res->frag_time_s += t - t0;
        for (int g = 0; g < res->ngroups; g++)
            res->group_cont_s[g] += r->gbusy[g] * (t - t0);
        for (int u = 0; u < res->nusers; u++)
            res->user_cont_s[u] += r->ubusy[u] * (t - t0);
    }
    /* Hourly buckets [t0 + 3600h, t0 + 3600(h+1)); hi = buckets so far. */
    int hi = (int)ceil((t - res->t0) / 3600);
    if (hi >= r->ucap) {
        int nc = r->ucap ? r->ucap : 64;
        while (nc <= hi)
            nc *= 2;
        double *nu = realloc(res->util, (size_t)nc * sizeof *nu);
        if (!nu)
            return aiq_err_set(err, AIQ_ENOMEM, "simulation: out of memory");
        memset(nu + r->ucap, 0, (size_t)(nc - r->ucap) * sizeof *nu);
        res->util = nu;
        r->ucap = nc;
    }
    if (r->busy > 0 && res->total_gpus > 0) {
        double a = t0;
        while (a < t) {
            int h = (int)((a - res->t0) / 3600);
            double bend = res->t0 + (h + 1) * 3600.0, b = bend < t ? bend : t;
            res->util[h] += r->busy * (b - a) / (3600.0 * res->total_gpus);
            a = b;
        }
    }
    if (hi > res->nutil)
        res->nutil = hi;
    r->last_t = t;
    return AIQ_OK;
}

/* Journals payload (taken) as event k of key at t, when the run keeps a
 * journal. failed: building payload ran out of memory (aiq_jset), an
 * error rather than an event missing a member. */
static aiq_rc jr_event(struct run *r, double t, store_event_kind k, const char *key,
                       json_object *payload, bool failed, aiq_err *err) {
    aiq_rc rc = AIQ_OK;
    if (failed || !payload)
        rc = aiq_err_set(err, AIQ_ENOMEM, "simulation: out of memory");
    else if (r->cfg->journal)
        rc = store_journal_event(r->cfg->journal, t, k, key,
                                 json_object_to_json_string_ext(payload, JSON_C_TO_STRING_PLAIN),
                                 err);
    json_object_put(payload);
    return rc;
}

/* Adds the string v as member k of o, unless v is NULL (aiq_jset). */
static void jset_str(json_object *o, const char *k, const char *v, bool *failed) {
    if (v)
        aiq_jset(o, k, json_object_new_string(v), failed);
}

/* The arrival payload: the operator's shape (uid, group, an AIJob spec)
 * plus exact numbers the spec's text forms would round. */
static aiq_rc jr_arrival(struct run *r, int i, double t, aiq_err *err) {
    const struct sim_job *j = &r->tr->jobs[i];
    json_object *p = json_object_new_object(), *spec = json_object_new_object(),
                *resj = json_object_new_object();
    char buf[64];
    bool failed = !p || !spec || !resj;
    jset_str(p, "uid", j->id, &failed);
    jset_str(p, "group", j->group, &failed);
    jset_str(spec, "user", j->user, &failed);
    aiq_jset(spec, "priority", json_object_new_int(j->priority), &failed);
    aiq_jset(spec, "replicas", json_object_new_int(j->replicas), &failed);
    aiq_jset(resj, "gpus", json_object_new_int(j->gpus), &failed);
    jset_str(resj, "gpuMemory", aiq_quantity_format_mib(j->gpu_mem_mib, buf, sizeof buf),
             &failed);
    if (j->gpu_milli > 0) /* the simulator's fractions; the AIJob API has memory only */
        aiq_jset(resj, "gpuMilli", json_object_new_int(j->gpu_milli), &failed);
    snprintf(buf, sizeof buf, "%lldm", (long long)j->cpu_milli);
    jset_str(resj, "cpu", buf, &failed);
    snprintf(buf, sizeof buf, "%lld", (long long)j->mem_bytes);
    jset_str(resj, "memory", buf, &failed);
    jset_str(resj, "gpuModel", j->gpu_model, &failed);
    aiq_jset(spec, "resources", resj, &failed);
    jset_str(spec, "taskType", j->task, &failed);
    if (j->model) {
        json_object *m = json_object_new_object();
        jset_str(m, "name", j->model, &failed);
        aiq_jset(spec, "model", m, &failed);
    }
    if (j->max_replicas > 0) {
        aiq_jset(spec, "minReplicas", json_object_new_int(j->min_replicas), &failed);
        aiq_jset(spec, "maxReplicas", json_object_new_int(j->max_replicas), &failed);
    }
    if (j->checkpoint_s > 0) {
        aiq_jset(spec, "checkpointable", json_object_new_boolean(1), &failed);
        snprintf(buf, sizeof buf, "%.0fs", j->checkpoint_s);
        jset_str(spec, "checkpointInterval", buf, &failed);
    }
    if (j->min_runtime_s > 0) {
        snprintf(buf, sizeof buf, "%.17gs", j->min_runtime_s);
        jset_str(spec, "minRuntime", buf, &failed);
    }
    if (j->non_preemptible)
        aiq_jset(spec, "nonPreemptible", json_object_new_boolean(1), &failed);
    aiq_jset(p, "spec", spec, &failed);
    aiq_jset(p, "estimate_s", json_object_new_double(j->estimate_s), &failed);
    if (j->checkpoint_s > 0)
        aiq_jset(p, "checkpoint_s", json_object_new_double(j->checkpoint_s), &failed);
    aiq_jset(p, "duration_s", json_object_new_double(j->duration_s), &failed);
    char key[300];
    snprintf(key, sizeof key, "sim/%.200s", j->id);
    return jr_event(r, t, STORE_EV_JOB_ARRIVAL, key, p, failed, err);
}

/* Records a decision when it differs from the job's last one recorded,
 * by the operator's rule (operator/cycle.c cy_journal): a position that
 * moved only a little (q_pos_moved) is no new decision. */
static aiq_rc record(struct run *r, int i, double now, const struct q_result *q,
                     aiq_err *err) {
    struct lastdec *l = &r->last[i];
    if (l->set && l->action == q->decision && l->reason == q->reason && l->level == q->level &&
        !q_pos_moved(l->pos, q->pos) && l->backfilled == q->backfilled)
        return AIQ_OK;
    l->set = true;
    l->action = q->decision;
    l->reason = q->reason;
    l->level = q->level;
    l->pos = q->pos;
    l->backfilled = q->backfilled;
    struct sim_result *res = r->res;
    if (r->cfg->collect_decisions) {
        if (res->ndec == res->cdec) {
            int nc = res->cdec ? res->cdec * 2 : 1024;
            struct sim_decision *nd = realloc(res->dec, (size_t)nc * sizeof *nd);
            if (!nd)
                return aiq_err_set(err, AIQ_ENOMEM, "simulation: out of memory");
            res->dec = nd;
            res->cdec = nc;
        }
        res->dec[res->ndec++] = (struct sim_decision){res->ncycles, now, i, q->decision,
                                                      q->reason, q->backfilled, q->level,
                                                      q->pos, q->score, -1};
    }
    if (r->cfg->journal) {
        struct store_decision d = {res->ncycles, now, r->tr->jobs[i].id,
                                   sim__action_str(q->decision), q->level, q->pos, q->score,
                                   NULL, sim__reason_str(q->reason, q->backfilled), NULL};
        return store_journal_decision(r->cfg->journal, &d, err);
    }
    return AIQ_OK;
}

/* Records an action the queue took on running job i (preempt or resize:
 * always, each is news), for job `by` (-1: growth). */
static aiq_rc record_action(struct run *r, int i, double now, const struct q_action *a,
                            const struct q_result *q, int by, aiq_err *err) {
    struct sim_result *res = r->res;
    uint8_t action = a->kind == Q_ACT_PREEMPT ? Q_DEC_PREEMPT : Q_DEC_RESIZE;
    if (r->cfg->collect_decisions) {
        if (res->ndec == res->cdec) {
            int nc = res->cdec ? res->cdec * 2 : 1024;
            struct sim_decision *nd = realloc(res->dec, (size_t)nc * sizeof *nd);
            if (!nd)
                return aiq_err_set(err, AIQ_ENOMEM, "simulation: out of memory");
            res->dec = nd;
            res->cdec = nc;
        }
        res->dec[res->ndec++] = (struct sim_decision){res->ncycles, now, i, action, a->reason,
                                                      false, q->level, a->replicas, q->score, by};
    }
    if (r->cfg->journal) {
        struct store_decision d = {res->ncycles, now, r->tr->jobs[i].id, sim__action_str(action),
                                   q->level, a->replicas, q->score, NULL,
                                   sim__reason_str(a->reason, false),
                                   by >= 0 ? r->tr->jobs[by].id : NULL};
        return store_journal_decision(r->cfg->journal, &d, err);
    }
    return AIQ_OK;
}

/* Takes (sign +1) or gives back (-1) one replica's resources at p on the
 * simulated nodes; returns the GPUs it holds (a share: its fraction). */
static double hold(struct run *r, const struct sim_job *j, const struct q_place *p, int sign) {
    struct q_node *n = &r->nodes[p->node];
    double held = 0;
    for (int g = 0; g < n->ngpus; g++) {
        if (!((p->gpu_mask >> g) & 1u))
            continue;
        if (j->gpus > 0) {
            n->gpu_mem_used[g] = sign > 0 ? n->gpu_mem_total[g] : 0;
            held += 1;
        } else {
            n->gpu_mem_used[g] += sign * p->gpu_mem_mib;
            if (n->gpu_mem_used[g] < 0)
                n->gpu_mem_used[g] = 0;
            held += n->gpu_mem_total[g] > 0 ? (double)p->gpu_mem_mib / (double)n->gpu_mem_total[g]
                                            : 0;
        }
    }
    n->cpu_used += sign * j->cpu_milli;
    n->mem_used += sign * j->mem_bytes;
    return held;
}

/* Changes the GPUs job i holds by d (cluster, group and user totals). */
static void held_add(struct run *r, int i, double d) {
    r->js[i].held += d;
    r->busy += d;
    if (r->busy < 1e-9)
        r->busy = 0;
    r->gbusy[r->jgroup[i]] += d;
    r->ubusy[r->juser[i]] += d;
}

/* Brings job i's work, attained service and usage up to t. */
static void accrue(struct run *r, int i, double t) {
    struct jrun *s = &r->js[i];
    const struct sim_job *j = &r->tr->jobs[i];
    double dt = t - s->acc_t;
    if (dt <= 0 || r->jst[i] != JS_RUNNING || s->releasing) {
        s->acc_t = t;
        return;
    }
    s->done += dt * s->rep / (j->replicas > 0 ? j->replicas : 1);
    s->attained_s += s->held * dt;
    s->run_wall += dt;
    double gh = s->held * dt / 3600.0;
    fs_usage_add(&r->gusage[r->jgroup[i]], gh, t, r->half_life);
    fs_usage_add(&r->uusage[r->juser[i]], gh, t, r->half_life);
    r->res->group_gpu_s[r->jgroup[i]] += s->held * dt;
    r->res->user_gpu_s[r->juser[i]] += s->held * dt;
    r->usage_changed = true;
    s->acc_t = t;
}

/* Schedules job i's end from its remaining work at its current speed
 * (simulation only; a replay takes ends from the journal). */
static aiq_rc schedule_end(struct run *r, int i, double t, aiq_err *err) {
    struct jrun *s = &r->js[i];
    const struct sim_job *j = &r->tr->jobs[i];
    s->ver++;
    if (r->cfg->script || s->rep <= 0)
        return AIQ_OK;
    double left = j->duration_s - s->done;
    if (left < 0)
        left = 0;
    double speed = (double)s->rep / (j->replicas > 0 ? j->replicas : 1);
    if (heap_push(r, t + left / speed, i, EV_END))
        return aiq_err_set(err, AIQ_ENOMEM, "simulation: out of memory");
    return AIQ_OK;
}

/* Gives back replicas [from, to) of job i. */
static void release_reps(struct run *r, int i, int from, int to) {
    const struct sim_job *j = &r->tr->jobs[i];
    double d = 0;
    for (int k = from; k < to; k++)
        d += hold(r, j, &r->places[r->poff[i] + k], -1);
    held_add(r, i, -d);
}

/* A payload that starts with job i's uid. */
/* A new payload holding job i's uid; out of memory sets *failed. */
static json_object *uid_obj(struct run *r, int i, bool *failed) {
    json_object *p = json_object_new_object();
    jset_str(p, "uid", r->tr->jobs[i].id, failed);
    return p;
}

/* Journals p (taken) as event k of job i (jr_event). */
static aiq_rc jr_uid_event(struct run *r, double t, store_event_kind k, int i, json_object *p,
                           bool failed, aiq_err *err) {
    char key[300];
    snprintf(key, sizeof key, "sim/%.200s", r->tr->jobs[i].id);
    return jr_event(r, t, k, key, p, failed, err);
}

/* Ends job i at t: frees its GPUs, counts usage, feeds the predictor. */
static aiq_rc complete(struct run *r, int i, double t, aiq_err *err) {
    const struct sim_job *j = &r->tr->jobs[i];
    struct sim_jobres *jr = &r->res->jobs[i];
    struct jrun *s = &r->js[i];
    accrue(r, i, t);
    r->jst[i] = JS_DONE;
    jr->end = t;
    jr->state = SIM_J_DONE;
    release_reps(r, i, 0, s->rep);
    s->rep = s->stopping = 0;
    s->terminating = s->releasing = false;
    s->ver++;
    double ran = s->run_wall, gpu_s = s->attained_s;
    if (r->ph && pred_hist_add(r->ph, j->user, j->group, j->model, j->task,
                               j->replicas * j->gpus, j->estimate_s,
                               ran) != AIQ_OK)
        return aiq_err_set(err, AIQ_ENOMEM, "simulation: out of memory");
    if (r->cfg->journal) {
        bool failed = false;
        json_object *p = uid_obj(r, i, &failed);
        aiq_jset(p, "attempt", json_object_new_int(1), &failed);
        jset_str(p, "outcome", "Succeeded", &failed);
        aiq_jset(p, "runtime_s", json_object_new_double(ran), &failed);
        aiq_jset(p, "gpu_seconds", json_object_new_double(gpu_s), &failed);
        return jr_uid_event(r, t, STORE_EV_JOB_DEPARTURE, i, p, failed, err);
    }
    return AIQ_OK;
}

/* A victim's pods are gone at t: its work since the last checkpoint is
 * lost (all of this run without checkpoints), it goes back to the queue
 * keeping the rest and its attained service. */
static aiq_rc stop_preempted(struct run *r, int i, double t, aiq_err *err) {
    const struct sim_job *j = &r->tr->jobs[i];
    struct jrun *s = &r->js[i];
    struct sim_jobres *jr = &r->res->jobs[i];
    accrue(r, i, t);
    double kept = s->done0;
    if (j->checkpoint_s > 0) {
        double ran = t - s->run_start;
        double since = fmod(ran, j->checkpoint_s);
        double speed = (double)s->rep / (j->replicas > 0 ? j->replicas : 1);
        kept = s->done - since * speed;
        if (kept < s->done0)
            kept = s->done0;
    }
    double lost = s->done - kept;
    jr->lost_s += lost;
    r->res->lost_gpu_s += lost * j->replicas * (j->gpus > 0 ? j->gpus : 1);
    s->done = kept;
    release_reps(r, i, 0, s->rep);
    s->rep = s->stopping = 0;
    s->terminating = false;
    s->run_start = 0;
    s->queued = t;
    s->pre_t[s->npre % 8] = t;
    s->npre++;
    s->ver++;
    jr->preemptions++;
    r->jst[i] = JS_PENDING;
    r->npending++;
    if (r->cfg->journal) {
        bool failed = false;
        json_object *p = uid_obj(r, i, &failed);
        aiq_jset(p, "queued", json_object_new_double(t), &failed);
        aiq_jset(p, "preemptions", json_object_new_int(s->npre), &failed);
        aiq_jset(p, "attained_gpu_hours", json_object_new_double(s->attained_s / 3600), &failed);
        return jr_uid_event(r, t, STORE_EV_JOB_PREEMPTED, i, p, failed, err);
    }
    return AIQ_OK;
}

/* Job i's size becomes `size` at t: shrunk replicas gone (the top ones),
 * or (growth) the nplace new placements from out taken. */
static aiq_rc resize(struct run *r, int i, double t, int size, const struct q_place *add,
                     aiq_err *err) {
    const struct sim_job *j = &r->tr->jobs[i];
    struct jrun *s = &r->js[i];
    accrue(r, i, t);
    if (size < s->rep) {
        release_reps(r, i, size, s->rep);
    } else {
        if (size > s->cap)
            return aiq_err_set(err, AIQ_EINVAL, "simulation: %s grows past its %d replicas",
                               j->id, s->cap);
        double d = 0;
        for (int k = s->rep; k < size; k++) {
            r->places[r->poff[i] + k] = add[k - s->rep];
            d += hold(r, j, &add[k - s->rep], +1);
        }
        held_add(r, i, d);
    }
    s->rep = size;
    s->stopping = 0;
    aiq_rc rc = schedule_end(r, i, t, err);
    if (rc == AIQ_OK && r->cfg->journal) {
        bool failed = false;
        json_object *p = uid_obj(r, i, &failed);
        aiq_jset(p, "replicas", json_object_new_int(size), &failed);
        rc = jr_uid_event(r, t, STORE_EV_JOB_RESIZED, i, p, failed, err);
    }
    return rc;
}

/* Job i arrives at t. */
static aiq_rc arrive(struct run *r, int i, double t, aiq_err *err) {
    const struct sim_job *j = &r->tr->jobs[i];
    r->jst[i] = JS_PENDING;
    r->active[r->nactive++] = i;
    r->npending++;
    r->res->jobs[i].submit = t;
    if (r->ph) {
        struct pred_query q = {j->user, j->group, j->model, j->task, j->estimate_s,
                               j->replicas * j->gpus};
        struct pred_result pr;
        pred_hist_predict(r->ph, &q, &pr);
        r->res->jobs[i].pred_s = pr.runtime_s;
        r->res->jobs[i].pred_samples = pr.samples;
    }
    return r->cfg->journal ? jr_arrival(r, i, t, err) : AIQ_OK;
}

/* Decayed usage and fair share of every group and user as of now. */
static aiq_rc fairshare(struct run *r, double now, aiq_err *err) {
    for (int g = 0; g < r->res->ngroups; g++) {
        double u = fs_usage_at(&r->gusage[g], now, r->half_life);
        r->groups[g].usage_gpu_hours = u;
        r->fsg[g].usage = u;
    }
    for (int k = 0; k < r->res->nusers; k++) {
        double u = fs_usage_at(&r->uusage[k], now, r->half_life);
        r->users[k].usage_gpu_hours = u;
        r->fsu[k].usage = u;
    }
    aiq_rc rc = fs_compute(r->fsg, r->res->ngroups, r->fsu, r->res->nusers, r->fgo, r->fuo, err);
    if (rc != AIQ_OK)
        return rc;
    for (int g = 0; g < r->res->ngroups; g++)
        r->groups[g].fairshare = r->fgo[g].factor;
    for (int k = 0; k < r->res->nusers; k++)
        r->users[k].fairshare = r->fuo[k].factor;
    return AIQ_OK;
}

/* The current unusable fraction of free GPU memory for the waiting mix. */
static double frag_now(struct run *r) {
    int minw = 0;
    int64_t minw_mib = 0, mins = 0;
    int minf = 0;
    for (int a = 0; a < r->nactive; a++) {
        int i = r->active[a];
        if (r->jst[i] != JS_PENDING)
            continue;
        const struct sim_job *j = &r->tr->jobs[i];
        if (j->gpus > 0 && (minw == 0 || j->gpus < minw ||
                            (j->gpus == minw && j->gpu_mem_mib < minw_mib))) {
            minw = j->gpus;
            minw_mib = j->gpu_mem_mib;
        } else if (j->gpus == 0 && j->gpu_mem_mib > 0 && (mins == 0 || j->gpu_mem_mib < mins)) {
            mins = j->gpu_mem_mib;
        } else if (j->gpu_milli > 0 && (minf == 0 || j->gpu_milli < minf)) {
            minf = j->gpu_milli;
        }
    }
    return sim_fragmentation(r->nodes, r->nn, minw, minw_mib, mins, minf);
}

/* Fills q, the queue's view of active job i at now (pending, or running
 * with its placement). */
static void qjob_fill(const struct run *r, int i, double now, struct q_job *q) {
    const struct sim_job *j = &r->tr->jobs[i];
    const struct sim_jobres *jr = &r->res->jobs[i];
    const struct jrun *js = &r->js[i];
    memset(q, 0, sizeof *q);
    q->key = j->id;
    q->uid = j->id;
    /* A job back from preemption is a changed job: rescored. */
    q->gen = (uint64_t)r->jst[i] + 4u * (uint64_t)js->npre;
    q->user = r->juser[i];
    q->group = r->jgroup[i];
    q->priority = j->priority;
    q->replicas = j->replicas;
    q->gpus = j->gpus;
    q->gpu_memory_mib = j->gpu_mem_mib;
    q->gpu_milli = j->gpu_milli;
    q->cpu_milli = j->cpu_milli;
    q->memory_bytes = j->mem_bytes;
    q->gpu_model = j->gpu_model;
    q->created = q->queued = jr->submit;
    if (j->times_set) {
        q->created = r->cfg->epoch + j->created;
        q->queued = r->cfg->epoch + j->queued;
    }
    if (js->queued > 0)
        q->queued = js->queued; /* back from preemption */
    q->est_runtime_s = j->estimate_s;
    q->pred_runtime_s = r->cfg->plan_actual ? j->duration_s : jr->pred_s;
    q->min_replicas = j->min_replicas;
    q->max_replicas = j->max_replicas;
    q->min_runtime_s = j->min_runtime_s;
    q->non_preemptible = j->non_preemptible;
    q->checkpointable = j->checkpoint_s > 0;
    q->checkpoint_interval_s = j->checkpoint_s;
    q->preemptions = js->npre;
    for (int x = 0; x < js->npre && x < 8; x++)
        q->preemptions_1h += js->pre_t[x] > now - 3600;
    q->attained_gpu_hours = js->attained_s / 3600.0;
    if (r->jst[i] == JS_RUNNING) {
        double plan = r->cfg->plan_actual ? j->duration_s
                      : jr->pred_s > 0 ? jr->pred_s : j->estimate_s;
        q->state = Q_JOB_RUNNING;
        q->replicas = js->rep;
        q->stopping = js->stopping;
        q->terminating = js->terminating;
        q->placement = &r->places[r->poff[i]];
        q->started = js->run_start;
        q->end_time = plan > 0 ? js->run_start + plan : 0;
        q->attempts = 1;
        /* the queue adds this run's GPU time itself */
        q->attained_gpu_hours = js->attained0 / 3600.0;
    } else {
        q->state = Q_JOB_PENDING;
    }
}

/* The queue's jobs at now, in trace order (r->qjobs, r->qidx their trace
 * indexes); finished ones leave the active list. Returns how many. */
static int queue_jobs(struct run *r, double now) {
    int nq = 0, w = 0;
    for (int a = 0; a < r->nactive; a++) {
        int i = r->active[a];
        if (r->jst[i] != JS_PENDING && r->jst[i] != JS_RUNNING)
            continue;
        r->active[w++] = i;
        qjob_fill(r, i, now, &r->qjobs[nq]);
        r->qidx[nq++] = i;
    }
    r->nactive = w;
    return nq;
}

/* The cycle's input: the simulated nodes, groups, users, the nq jobs of
 * queue_jobs and the policy; the simulator carries out actions. */
static void queue_input(const struct run *r, double now, int nq, struct q_input *in) {
    memset(in, 0, sizeof *in);
    in->now = now;
    in->nodes = r->nodes;
    in->nnodes = r->nn;
    in->groups = r->groups;
    in->ngroups = r->res->ngroups;
    in->users = r->users;
    in->nusers = r->res->nusers;
    in->jobs = r->qjobs;
    in->njobs = nq;
    oppolicy_qpolicy(r->cfg->policy, &in->policy);
    in->placer = oppolicy_placer(r->cfg->policy);
    in->gen = r->gen;
    in->actions_on = true; /* the simulator carries out preemptions and resizes */
}

/* Pending job i's decision q (placements in out) at now: recorded, and
 * carried out when it is a rejection or an admission (its gang takes its
 * GPUs and its end is scheduled; *admitted counts it). */
static aiq_rc decided(struct run *r, int i, double now, const struct q_result *q,
                      const q_output *out, int *admitted, aiq_err *err) {
    aiq_rc rc;
    const struct sim_job *j = &r->tr->jobs[i];
    struct sim_jobres *jr = &r->res->jobs[i];
    if (!r->last[i].seen) {
        r->last[i].seen = true;
        jr->waited = q->decision != Q_DEC_ADMIT;
        jr->eta = q->decision == Q_DEC_ADMIT ? now : q->eta;
    }
    if ((rc = record(r, i, now, q, err)) != AIQ_OK)
        return rc;
    if (q->decision == Q_DEC_REJECT) {
        r->jst[i] = JS_REJECTED;
        r->npending--;
        jr->state = SIM_J_REJECTED;
        jr->reject_reason = q->reason;
        return AIQ_OK;
    }
    struct jrun *js = &r->js[i];
    if (q->decision != Q_DEC_ADMIT || q->nplace < 1 || q->nplace > js->cap)
        return AIQ_OK;
    double held = 0;
    for (int p = 0; p < q->nplace; p++) {
        struct q_place pl = out->places[q->place_off + p];
        r->places[r->poff[i] + p] = pl;
        held += hold(r, j, &pl, +1);
    }
    if (jr->start == 0) {
        jr->start = now;
        jr->gpus = held;
    }
    js->rep = q->nplace;
    js->run_start = js->acc_t = now;
    js->done0 = js->done;
    js->attained0 = js->attained_s;
    held_add(r, i, held);
    r->jst[i] = JS_RUNNING;
    r->npending--;
    (*admitted)++;
    return schedule_end(r, i, now, err);
}

/* One of the queue's actions (out->actions), as the operator carries it
 * out: recorded; victims and shrunk replicas stop after the grace
 * period, growth is at once. */
static aiq_rc carry_out(struct run *r, double now, const q_output *out, const struct q_action *a,
                        aiq_err *err) {
    aiq_rc rc;
    struct sim_result *res = r->res;
    double grace = r->cfg->preempt_grace_s > 0 ? r->cfg->preempt_grace_s : 0;
    int i = r->qidx[a->job];
    int by = a->for_job >= 0 ? r->qidx[a->for_job] : -1;
    struct jrun *js = &r->js[i];
    if ((rc = record_action(r, i, now, a, &out->res[a->job], by, err)) != AIQ_OK)
        return rc;
    if (r->jst[i] != JS_RUNNING)
        return AIQ_OK;
    if (a->kind == Q_ACT_GROW) {
        res->ngrow++;
        return resize(r, i, now, a->replicas, &out->places[a->place_off], err);
    }
    if (a->kind == Q_ACT_PREEMPT) {
        res->npreempt++;
        js->terminating = true;
        if (!r->cfg->script && heap_push(r, now + grace, i, EV_STOP))
            return aiq_err_set(err, AIQ_ENOMEM, "simulation: out of memory");
    } else {
        res->nshrink++;
        js->stopping = js->rep - a->replicas;
        if (!r->cfg->script && heap_push(r, now + grace, i, EV_SHRINK))
            return aiq_err_set(err, AIQ_ENOMEM, "simulation: out of memory");
    }
    return AIQ_OK;
}

/* One queue cycle at now. *admitted gets the number of admissions. */
static aiq_rc cycle(struct run *r, double now, int *admitted, aiq_err *err) {
    aiq_rc rc;
    *admitted = 0;
    if ((rc = fairshare(r, now, err)) != AIQ_OK)
        return rc;
    if (r->usage_changed) {
        r->gen++;
        r->usage_changed = false;
    }
    int nq = queue_jobs(r, now);
    struct q_input in;
    queue_input(r, now, nq, &in);
    q_scorer sc;
    oppolicy_scorer(r->cfg->policy, &sc);
    q_output out;
    if ((rc = q_cycle_run(r->qs, &in, &sc, &out, err)) != AIQ_OK)
        return rc;
    r->res->ncycles++;
    for (int k = 0; k < nq; k++) {
        int i = r->qidx[k];
        if (r->jst[i] == JS_PENDING &&
            (rc = decided(r, i, now, &out.res[k], &out, admitted, err)) != AIQ_OK)
            return rc;
    }
    for (int x = 0; x < out.nactions; x++)
        if ((rc = carry_out(r, now, &out, &out.actions[x], err)) != AIQ_OK)
            return rc;
    if (r->cfg->journal && ++r->since_commit >= 512) {
        r->since_commit = 0;
        if ((rc = store_commit(r->cfg->journal, err)) != AIQ_OK ||
            (rc = store_begin(r->cfg->journal, err)) != AIQ_OK)
            return rc;
    }
    return AIQ_OK;
}

static void run_free(struct run *r) {
    smap_free(&r->gmap);
    smap_free(&r->umap);
    free(r->nodes);
    free(r->groups);
    free(r->users);
    free(r->gusage);
    free(r->uusage);
    free(r->fsg);
    free(r->fsu);
    free(r->fgo);
    free(r->fuo);
    free(r->gbusy);
    free(r->ubusy);
    free(r->jgroup);
    free(r->juser);
    free(r->jst);
    free(r->poff);
    free(r->places);
    free(r->active);
    free(r->heap);
    free(r->qjobs);
    free(r->qidx);
    free(r->last);
    free(r->js);
    q_state_free(r->qs);
    pred_hist_free(r->ph);
}

/* Allocates the per-job arrays of the run and the result, the queue's
 * state and the predictor's history. */
static aiq_rc alloc_jobs(struct run *r, aiq_err *err) {
    const struct sim_config *cfg = r->cfg;
    struct sim_result *res = r->res;
    int n = r->tr->njobs;
    r->nn = cfg->nnodes;
    r->nodes = calloc((size_t)r->nn, sizeof *r->nodes);
    r->jgroup = malloc((size_t)n * sizeof *r->jgroup);
    r->juser = malloc((size_t)n * sizeof *r->juser);
    r->jst = calloc((size_t)n, 1);
    r->poff = malloc((size_t)n * sizeof *r->poff);
    r->active = malloc((size_t)n * sizeof *r->active);
    r->heap = malloc((size_t)n * sizeof *r->heap);
    r->ch = n;
    r->js = calloc((size_t)n, sizeof *r->js);
    r->qjobs = malloc((size_t)n * sizeof *r->qjobs);
    r->qidx = malloc((size_t)n * sizeof *r->qidx);
    r->last = calloc((size_t)n, sizeof *r->last);
    res->jobs = calloc((size_t)n, sizeof *res->jobs);
    r->qs = q_state_create(NULL);
    if (cfg->predict)
        r->ph = pred_hist_create();
    if (!r->nodes || !r->jgroup || !r->juser || !r->jst || !r->poff || !r->active ||
        !r->heap || !r->js || !r->qjobs || !r->qidx || !r->last || !res->jobs || !r->qs ||
        (cfg->predict && !r->ph))
        return aiq_err_set(err, AIQ_ENOMEM, "simulation: out of memory");
    res->njobs = n;
    return AIQ_OK;
}

/* Indexes every job's group and user (trace order must be submit order)
 * and its room for placements: its largest size. */
static aiq_rc index_jobs(struct run *r, aiq_err *err) {
    const struct sim_trace *tr = r->tr;
    int n = tr->njobs;
    long long nplaces = 0;
    for (int i = 0; i < n; i++) {
        const struct sim_job *j = &tr->jobs[i];
        if (i > 0 && j->submit < tr->jobs[i - 1].submit)
            return aiq_err_field(err, AIQ_EINVAL, "trace", "trace: jobs[%d] (%s) submitted at "
                                 "%g before the job above it (sort the trace)", i, j->id,
                                 j->submit);
        int g = smap_get(&r->gmap, j->group, -1, n);
        int u = g < 0 ? -1 : smap_get(&r->umap, j->user, g, n);
        if (g < 0 || u < 0)
            return aiq_err_set(err, AIQ_ENOMEM, "simulation: out of memory");
        r->jgroup[i] = g;
        r->juser[i] = u;
        /* room for an elastic job's largest size */
        int cap = j->max_replicas > j->replicas ? j->max_replicas : j->replicas;
        r->poff[i] = (int)nplaces;
        r->js[i].cap = cap;
        nplaces += cap;
    }
    if (nplaces > INT32_MAX)
        return aiq_err_set(err, AIQ_ETOOBIG, "trace: too many replicas");
    r->places = calloc((size_t)nplaces, sizeof *r->places);
    if (!r->places)
        return aiq_err_set(err, AIQ_ENOMEM, "simulation: out of memory");
    return AIQ_OK;
}

/* Allocates the per-group and per-user arrays of the run and the result. */
static aiq_rc alloc_owners(struct run *r, aiq_err *err) {
    struct sim_result *res = r->res;
    int ng = r->gmap.n, nu = r->umap.n;
    res->ngroups = ng;
    res->nusers = nu;
    r->groups = calloc((size_t)ng, sizeof *r->groups);
    r->users = calloc((size_t)nu, sizeof *r->users);
    r->gusage = calloc((size_t)ng, sizeof *r->gusage);
    r->uusage = calloc((size_t)nu, sizeof *r->uusage);
    r->fsg = calloc((size_t)ng, sizeof *r->fsg);
    r->fsu = calloc((size_t)nu, sizeof *r->fsu);
    r->fgo = calloc((size_t)ng, sizeof *r->fgo);
    r->fuo = calloc((size_t)nu, sizeof *r->fuo);
    res->group_name = calloc((size_t)ng, sizeof *res->group_name);
    res->group_ent = calloc((size_t)ng, sizeof *res->group_ent);
    res->group_gpu_s = calloc((size_t)ng, sizeof *res->group_gpu_s);
    res->user_name = calloc((size_t)nu, sizeof *res->user_name);
    res->user_group = calloc((size_t)nu, sizeof *res->user_group);
    res->user_ent = calloc((size_t)nu, sizeof *res->user_ent);
    res->user_gpu_s = calloc((size_t)nu, sizeof *res->user_gpu_s);
    res->group_cont_s = calloc((size_t)ng, sizeof *res->group_cont_s);
    res->user_cont_s = calloc((size_t)nu, sizeof *res->user_cont_s);
    r->gbusy = calloc((size_t)ng, sizeof *r->gbusy);
    r->ubusy = calloc((size_t)nu, sizeof *r->ubusy);
    if (!res->group_cont_s || !res->user_cont_s || !r->gbusy || !r->ubusy ||
        !r->groups || !r->users || !r->gusage || !r->uusage || !r->fsg ||
        !r->fsu || !r->fgo || !r->fuo || !res->group_name || !res->group_ent ||
        !res->group_gpu_s || !res->user_name || !res->user_group || !res->user_ent ||
        !res->user_gpu_s)
        return aiq_err_set(err, AIQ_ENOMEM, "simulation: out of memory");
    return AIQ_OK;
}

/* Every group has one share, every user one share of its group; no
 * quota but the config's GPUs per group, no budget. */
static aiq_rc init_owners(struct run *r, aiq_err *err) {
    struct sim_result *res = r->res;
    int ng = res->ngroups, nu = res->nusers;
    for (int g = 0; g < ng; g++) {
        struct q_group *q = &r->groups[g];
        q->name = r->gmap.k1[g];
        aiq_quota_unlimited(&q->quota);
        if (r->cfg->group_quota_gpus > 0)
            q->quota.gpus = r->cfg->group_quota_gpus;
        q->budget_gpu_hours = -1;
        q->fairshare = 1;
        r->fsg[g].shares = 1;
        res->group_name[g] = q->name;
        res->group_ent[g] = 1.0 / ng;
    }
    int *members = calloc((size_t)ng, sizeof *members);
    if (!members)
        return aiq_err_set(err, AIQ_ENOMEM, "simulation: out of memory");
    for (int u = 0; u < nu; u++)
        members[r->umap.k2[u]]++;
    for (int u = 0; u < nu; u++) {
        struct q_user *q = &r->users[u];
        q->name = r->umap.k1[u];
        q->group = r->umap.k2[u];
        aiq_quota_unlimited(&q->quota);
        q->budget_gpu_hours = -1;
        q->fairshare = 1;
        r->fsu[u].group = q->group;
        r->fsu[u].shares = 1;
        res->user_name[u] = q->name;
        res->user_group[u] = q->group;
        res->user_ent[u] = res->group_ent[q->group] / members[q->group];
    }
    free(members);
    return AIQ_OK;
}

/* Sets up nodes, groups, users and the per-job arrays. */
static aiq_rc setup(struct run *r, aiq_err *err) {
    aiq_rc rc;
    if ((rc = alloc_jobs(r, err)) != AIQ_OK)
        return rc;
    for (int k = 0; k < r->nn; k++) {
        if ((rc = sim__q_node(&r->cfg->nodes[k], k, &r->nodes[k], err)) != AIQ_OK)
            return rc;
        r->res->total_gpus += r->cfg->nodes[k].gpus;
    }
    if ((rc = index_jobs(r, err)) != AIQ_OK || (rc = alloc_owners(r, err)) != AIQ_OK)
        return rc;
    return init_owners(r, err);
}

/* Journal header: the policy and the nodes. */
static aiq_rc jr_header(struct run *r, double t, aiq_err *err) {
    aiq_rc rc;
    json_object *p = json_object_new_object();
    const char *pname = r->cfg->policy_name ? r->cfg->policy_name : oppolicy_name(r->cfg->policy);
    bool failed = false;
    jset_str(p, "active", pname, &failed);
    aiq_jset(p, "predict", json_object_new_boolean(r->cfg->predict), &failed);
    aiq_jset(p, "tick_s", json_object_new_double(r->cfg->tick_s), &failed);
    if ((rc = jr_event(r, t, STORE_EV_POLICY, pname, p, failed, err)) != AIQ_OK)
        return rc;
    for (int k = 0; k < r->nn; k++) {
        const struct sim_node *s = &r->cfg->nodes[k];
        json_object *n = json_object_new_object();
        failed = false;
        aiq_jset(n, "gpus", json_object_new_int(s->gpus), &failed);
        aiq_jset(n, "gpu_memory_mib", json_object_new_int64(s->gpu_mem_mib), &failed);
        jset_str(n, "model", s->gpu_model ? s->gpu_model : "", &failed);
        jset_str(n, "domain", "", &failed);
        aiq_jset(n, "schedulable", json_object_new_boolean(1), &failed);
        aiq_jset(n, "cpu_milli", json_object_new_int64(s->cpu_milli), &failed);
        aiq_jset(n, "memory_bytes", json_object_new_int64(s->mem_bytes), &failed);
        if ((rc = jr_event(r, t, STORE_EV_NODE, s->name, n, failed, err)) != AIQ_OK)
            return rc;
    }
    return AIQ_OK;
}

/* Could some running elastic job grow (below its maximum, not being
 * stopped)? Growth needs a cycle even when nothing waits. */
static bool can_grow(const struct run *r) {
    for (int a = 0; a < r->nactive; a++) {
        int i = r->active[a];
        const struct jrun *s = &r->js[i];
        if (r->jst[i] == JS_RUNNING && r->tr->jobs[i].max_replicas > s->rep && !s->terminating &&
            s->stopping == 0)
            return true;
    }
    return false;
}

/* Departures of the script, in time order. */
static int dep_cmp(const void *a, const void *b) {
    const struct ev *x = a, *y = b;
    return x->t < y->t ? -1 : x->t > y->t ? 1 : x->job - y->job;
}

/* Where the event loop is: the script's departures (replay), the next
 * arrival, departure, cycle and stop of the script, the clock, the last
 * cycle and the fragmentation it left. */
struct loop {
    struct ev *deps;
    int ndeps;
    int ai, di, ci, si, step;
    double t, last_cycle, frag;
};

/* Replay: the script's departures in time order into L->deps (a job that
 * ends at d and holds its GPUs until g > d has a stop at d and an end at
 * g). */
static aiq_rc script_departures(const struct sim_config *cfg, struct loop *L, aiq_err *err) {
    int n = cfg->trace->njobs;
    L->deps = malloc((size_t)(2 * n) * sizeof *L->deps);
    if (!L->deps)
        return aiq_err_set(err, AIQ_ENOMEM, "simulation: out of memory");
    for (int i = 0; i < n; i++) {
        double d = cfg->script->depart_t[i];
        double g = cfg->script->release_t ? cfg->script->release_t[i] : 0;
        if (d <= 0)
            continue;
        if (g > d) { /* ends at d, holds its GPUs until g */
            L->deps[L->ndeps++] = (struct ev){d, i, 0, EV_STOP};
            L->deps[L->ndeps++] = (struct ev){g, i, 0, EV_END};
        } else {
            L->deps[L->ndeps++] = (struct ev){d, i, 0, EV_END};
        }
    }
    qsort(L->deps, (size_t)L->ndeps, sizeof *L->deps, dep_cmp);
    return AIQ_OK;
}

/* The time of the next event (INFINITY: none): an arrival, and in a
 * replay the script's departures, cycles and stops, else the heap's next
 * live event and, while jobs wait, the next tick. */
static double next_time(struct run *r, const struct loop *L) {
    const struct sim_config *cfg = r->cfg;
    int n = r->tr->njobs;
    double t_arr = L->ai < n ? cfg->epoch + r->tr->jobs[L->ai].submit : INFINITY;
    if (cfg->script) {
        double t_dep = L->di < L->ndeps ? L->deps[L->di].t : INFINITY;
        double t_cyc = L->ci < cfg->script->ncycles ? cfg->script->cycle_t[L->ci] : INFINITY;
        double t_stop = L->si < cfg->script->nstops ? cfg->script->stops[L->si].t : INFINITY;
        return fmin(fmin(t_arr, t_stop), fmin(t_dep, t_cyc));
    }
    heap_clean(r);
    double t_end = r->nh ? r->heap[0].t : INFINITY;
    double t_tick = r->npending > 0 && cfg->tick_s > 0 ? L->last_cycle + cfg->tick_s : INFINITY;
    return fmin(t_arr, fmin(t_end, t_tick));
}

/* Replay: the script's stops (preemptions, shrinks) and departures up
 * to L->t, of jobs still running. */
static aiq_rc script_events(struct run *r, struct loop *L, aiq_err *err) {
    const struct sim_script *sc = r->cfg->script;
    int n = r->tr->njobs;
    double t = L->t;
    aiq_rc rc = AIQ_OK;
    for (; L->si < sc->nstops && sc->stops[L->si].t <= t; L->si++) {
        const struct sim_stop *x = &sc->stops[L->si];
        if (x->job < 0 || x->job >= n || r->jst[x->job] != JS_RUNNING)
            continue;
        if (x->replicas < 0)
            rc = stop_preempted(r, x->job, t, err);
        else if (x->replicas < r->js[x->job].rep)
            rc = resize(r, x->job, t, x->replicas, NULL, err);
        if (rc != AIQ_OK)
            return rc;
    }
    for (; L->di < L->ndeps && L->deps[L->di].t <= t; L->di++) {
        int k = L->deps[L->di].job;
        if (r->jst[k] != JS_RUNNING)
            continue;
        if (L->deps[L->di].kind == EV_STOP) { /* its run is over, its pods not yet gone */
            accrue(r, k, t);
            r->js[k].terminating = r->js[k].releasing = true;
        } else if ((rc = complete(r, k, t, err)) != AIQ_OK) {
            return rc;
        }
    }
    return AIQ_OK;
}

/* Simulation: the live heap events up to t (ends, victims gone, shrunk
 * replicas gone). */
static aiq_rc timed_events(struct run *r, double t, aiq_err *err) {
    aiq_rc rc = AIQ_OK;
    while (r->nh && r->heap[0].t <= t) {
        struct ev e = heap_pop(r);
        if (!ev_live(r, &e))
            continue;
        if (e.kind == EV_END)
            rc = complete(r, e.job, t, err);
        else if (e.kind == EV_STOP)
            rc = stop_preempted(r, e.job, t, err);
        else
            rc = resize(r, e.job, t, r->js[e.job].rep - r->js[e.job].stopping, NULL, err);
        if (rc != AIQ_OK)
            return rc;
    }
    return AIQ_OK;
}

/* Is a cycle due at L->t? Simulation: when jobs wait or an elastic job
 * could grow; replay: when the script has one (every one up to L->t is
 * taken). */
static bool cycle_due(struct run *r, struct loop *L) {
    const struct sim_script *sc = r->cfg->script;
    if (!sc)
        return r->npending > 0 || can_grow(r);
    bool due = false;
    while (L->ci < sc->ncycles && sc->cycle_t[L->ci] <= L->t) {
        L->ci++;
        due = true;
    }
    return due;
}

/* Runs events until none is left, or (simulation) nothing runs, nothing
 * comes and a cycle admitted nothing: the rest can never start. */
static aiq_rc run_events(struct run *r, struct loop *L, aiq_err *err) {
    const struct sim_config *cfg = r->cfg;
    int n = r->tr->njobs;
    aiq_rc rc;
    for (;;) {
        double t_next = next_time(r, L);
        if (!isfinite(t_next))
            return AIQ_OK;
        L->t = t_next;
        if ((rc = advance(r, L->t, L->frag, err)) != AIQ_OK)
            return rc;
        rc = cfg->script ? script_events(r, L, err) : timed_events(r, L->t, err);
        if (rc != AIQ_OK)
            return rc;
        for (; L->ai < n && cfg->epoch + r->tr->jobs[L->ai].submit <= L->t; L->ai++) {
            if ((rc = arrive(r, L->ai, L->t, err)) != AIQ_OK)
                return rc;
            if (cfg->progress && L->ai % L->step == 0)
                cfg->progress(cfg->progress_ctx, (double)L->ai / n);
        }
        if (!cycle_due(r, L))
            continue;
        int adm = 0;
        if ((rc = cycle(r, L->t, &adm, err)) != AIQ_OK)
            return rc;
        L->last_cycle = L->t;
        L->frag = frag_now(r);
        heap_clean(r);
        if (!cfg->script && adm == 0 && r->nh == 0 && L->ai == n)
            return AIQ_OK;
    }
}

/* The event loop; see sim.h. */
aiq_rc sim_run(const struct sim_config *cfg, struct sim_result *res, aiq_err *err) {
    aiq_rc rc = AIQ_OK;
    struct run r;
    struct loop L;
    memset(res, 0, sizeof *res);
    memset(&r, 0, sizeof r);
    memset(&L, 0, sizeof L);
    r.cfg = cfg;
    r.tr = cfg->trace;
    r.res = res;
    if (!cfg->trace || cfg->trace->njobs < 1)
        return aiq_err_field(err, AIQ_EINVAL, "trace", "trace: no jobs");
    if (cfg->nnodes < 1)
        return aiq_err_field(err, AIQ_EINVAL, "nodes", "nodes: the cluster has no nodes "
                             "(give --nodes-spec or a node list)");
    if (!cfg->policy)
        return aiq_err_field(err, AIQ_EINVAL, "policy", "policy: none given");
    r.half_life = oppolicy_half_life(cfg->policy);
    if ((rc = setup(&r, err)) != AIQ_OK)
        goto out_free;
    int n = cfg->trace->njobs;
    L.t = L.last_cycle = res->t0 = r.last_t = cfg->epoch + cfg->trace->jobs[0].submit;
    L.step = n / 50 > 0 ? n / 50 : 1;
    if (cfg->journal) {
        if (!store_in_transaction(cfg->journal) && (rc = store_begin(cfg->journal, err)) != AIQ_OK)
            goto out_free;
        if ((rc = jr_header(&r, cfg->epoch, err)) != AIQ_OK)
            goto out_free;
    }
    if (cfg->script && (rc = script_departures(cfg, &L, err)) != AIQ_OK)
        goto out_free;
    if ((rc = run_events(&r, &L, err)) != AIQ_OK)
        goto out_free;
    res->t_end = L.t;
    for (int i = 0; i < n; i++)
        if (r.jst[i] != JS_DONE && r.jst[i] != JS_REJECTED)
            res->jobs[i].state = SIM_J_UNFINISHED;
    if (cfg->journal)
        rc = store_commit(cfg->journal, err);
    if (cfg->progress)
        cfg->progress(cfg->progress_ctx, 1.0);
out_free:
    if (rc != AIQ_OK && cfg->journal)
        store_rollback(cfg->journal, NULL);
    free(L.deps);
    run_free(&r);
    return rc;
}

/* Frees a result; see sim.h. */
void sim_result_deinit(struct sim_result *res) {
    free(res->jobs);
    free(res->util);
    free(res->dec);
    free(res->group_name);
    free(res->group_ent);
    free(res->group_gpu_s);
    free(res->user_name);
    free(res->user_group);
    free(res->user_ent);
    free(res->user_gpu_s);
    free(res->group_cont_s);
    free(res->user_cont_s);
    memset(res, 0, sizeof *res);
}
