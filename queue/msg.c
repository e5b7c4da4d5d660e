/* msg.c -- the one-line messages users read in `kubectl describe aijob`
 * (formatted on demand from a cycle's result, so a cycle never formats
 * 100k strings), RFC 3339 times, and decision/reason names. */
#include "queue/q_int.h"

#include "common/units.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

int q_rfc3339(double t, char *buf, size_t cap) {
    time_t s = (time_t)floor(t);
    struct tm tm;
    if (!gmtime_r(&s, &tm)) return snprintf(buf, cap, "(invalid time)");
    return snprintf(buf, cap, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900,
                    tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

const char *q_decision_name(q_decision d) {
    switch (d) {
    case Q_DEC_ADMIT: return "admit";
    case Q_DEC_WAIT: return "wait";
    case Q_DEC_REJECT: return "reject";
    case Q_DEC_PREEMPT: return "preempt";
    case Q_DEC_RESIZE: return "resize";
    default: return "none";
    }
}

const char *q_reason_name(q_reason r) {
    static const char *const names[Q__NREASONS] = {
        [Q_R_NONE] = "none", [Q_R_SUSPENDED] = "suspended", [Q_R_QUOTA] = "quota",
        [Q_R_BUDGET] = "budget", [Q_R_CAPACITY] = "capacity", [Q_R_BLOCKED] = "blocked",
        [Q_R_NO_NODE] = "no-node", [Q_R_NODE_TOO_SMALL] = "node-too-small",
        [Q_R_GANG_TOO_BIG] = "gang-too-big", [Q_R_OVER_QUOTA] = "over-quota",
        [Q_R_OVER_BUDGET] = "over-budget", [Q_R_INVALID] = "invalid",
        [Q_R_SCORE_ERROR] = "score-error", [Q_R_PREEMPTING] = "preempting",
        [Q_R_BORROW] = "borrow", [Q_R_PREEMPTED] = "preempted",
        [Q_R_PREEMPTED_SCORE] = "preempted-score", [Q_R_RECLAIMED] = "reclaimed",
        [Q_R_SHRUNK] = "shrunk", [Q_R_GROWN] = "grown",
    };
    if ((int)r < 0 || r >= Q__NREASONS) return "unknown";
    return names[r];
}

/* A small appending writer that keeps the snprintf length contract. */
typedef struct {
    char *buf;
    size_t cap;
    int len;
} wr;

__attribute__((format(printf, 2, 3)))
static void put(wr *w, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    size_t at = (size_t)w->len;
    int k = vsnprintf(at < w->cap ? w->buf + at : NULL, at < w->cap ? w->cap - at : 0, fmt, ap);
    va_end(ap);
    if (k > 0) w->len += k;
}

static const char *nz(const char *s, const char *dflt) { return s && *s ? s : dflt; }

/* A size given in MiB, as people read it: "512 MiB", "80 GiB",
 * "148.8 GiB". */
static void mib(wr *w, int64_t v) {
    char t[32];
    put(w, "%s", aiq_size_text(v, 2, t, sizeof t));
}

/* Bytes, rounded up to MiB, as mib() writes them. */
static void bytes_mib(wr *w, int64_t b) { mib(w, (b + 1048575) / 1048576); }

/* "3 GPUs", "39.1 GiB of GPU memory", "2000m CPU", "512 MiB of memory",
 * "1 job" */
static void amount(wr *w, int res, int64_t v) {
    switch (res) {
    case Q_RES_GPUS: put(w, "%lld GPU%s", (long long)v, v == 1 ? "" : "s"); break;
    case Q_RES_GPU_MEM: mib(w, v); put(w, " of GPU memory"); break;
    case Q_RES_CPU: put(w, "%lldm CPU", (long long)v); break;
    case Q_RES_MEM: bytes_mib(w, v); put(w, " of memory"); break;
    default: put(w, "%lld job%s", (long long)v, v == 1 ? "" : "s"); break;
    }
}

static void quota_number(wr *w, int res, int64_t v) {
    if (res == Q_RES_MEM) bytes_mib(w, v);
    else if (res == Q_RES_CPU) put(w, "%lldm", (long long)v);
    else if (res == Q_RES_GPU_MEM) mib(w, v);
    else put(w, "%lld", (long long)v);
}

static void owner_name(wr *w, const struct q_input *in, const struct q_job *j, int group) {
    if (group) {
        const char *g = j->group >= 0 && j->group < in->ngroups ? in->groups[j->group].name : NULL;
        put(w, "group %s", nz(g, "?"));
    } else {
        const char *u = j->user >= 0 && j->user < in->nusers ? in->users[j->user].name : NULL;
        put(w, "user %s", nz(u, "?"));
    }
}

/* "8 x A100 >= 39.1 GiB" and friends: what one replica asks for. */
static void replica_need(wr *w, const struct q_job *j) {
    const char *model = nz(j->gpu_model, "GPU");
    if (j->gpus > 0) {
        put(w, "%d x %s", j->gpus, model);
        if (j->gpu_memory_mib > 0) {
            put(w, " >= ");
            mib(w, j->gpu_memory_mib);
        }
    } else if (j->gpu_memory_mib > 0) {
        mib(w, j->gpu_memory_mib);
        put(w, " on one shared %s", model);
    } else if (j->gpu_milli > 0) {
        put(w, "%d.%03d of one shared %s", j->gpu_milli / 1000, j->gpu_milli % 1000, model);
    } else {
        put(w, "%lldm CPU, ", (long long)j->cpu_milli);
        bytes_mib(w, j->memory_bytes);
        put(w, " memory");
    }
}

static const char *level_name(const struct q_input *in, int lv, char *tmp, size_t cap) {
    if (lv >= 0 && lv < in->policy.nlevels && in->policy.level_names && in->policy.level_names[lv])
        return in->policy.level_names[lv];
    snprintf(tmp, cap, "%d", lv);
    return tmp;
}

static const char *const bad_fields[] = {
    "spec.replicas must be 1..1024", "spec.resources.gpus must be 0..64",
    "spec.resources.gpuMemoryMiB must be 0..2^30", "spec.resources.cpu must be 0..2^40 millicores",
    "spec.resources.memory must be 0..2^52 bytes", "spec.user is unknown", "the group is unknown",
    "metadata.name is missing",
    "gpu_milli must be 1..999 thousandths of one GPU, with no whole GPUs or gpuMemoryMiB",
};

static const char *job_key(const struct q_input *in, int j) {
    return j >= 0 && j < in->njobs ? nz(in->jobs[j].key, "?") : "?";
}

/* The jobs being stopped or shrunk for job j this cycle: "a, b, c". */
static int list_for(wr *w, const struct q_input *in, const q_output *out, int j) {
    int n = 0;
    for (int i = 0; i < out->nactions; i++) {
        const struct q_action *a = &out->actions[i];
        if (a->for_job != j || a->kind == Q_ACT_GROW) continue;
        if (n < 3) put(w, "%s%s", n ? ", " : "", job_key(in, a->job));
        n++;
    }
    if (n > 3) put(w, ", ... (%d in all)", n);
    return n;
}

/* The message of a running job the cycle acted on. */
static void running_message(wr *w, const struct q_input *in, const q_output *out, int j,
                            const struct q_result *r) {
    const struct q_job *job = &in->jobs[j];
    const char *by = job_key(in, r->blocker);
    char lb[32], lb2[32];
    switch ((q_reason)r->reason) {
    case Q_R_PREEMPTED:
        put(w, "preempted by %s (level %s over level %s)", by,
            r->blocker >= 0 && r->blocker < out->njobs ? level_name(in, out->res[r->blocker].level, lb, sizeof lb) : "?",
            level_name(in, r->level, lb2, sizeof lb2));
        break;
    case Q_R_PREEMPTED_SCORE:
        put(w, "preempted by %s (higher score in level %s)", by, level_name(in, r->level, lb, sizeof lb));
        break;
    case Q_R_RECLAIMED: {
        const struct q_job *p = r->blocker >= 0 && r->blocker < in->njobs ? &in->jobs[r->blocker] : NULL;
        put(w, "preempted by %s: ", by);
        owner_name(w, in, job, 1);
        put(w, " borrowed quota that ");
        if (p) owner_name(w, in, p, 1);
        else put(w, "its lender");
        put(w, " needs back");
        break;
    }
    case Q_R_SHRUNK:
        put(w, "shrinking from %d to %d replicas for %s", job->replicas, r->nplace, by);
        break;
    case Q_R_GROWN:
        put(w, "growing from %d to %d replicas into idle capacity", job->replicas, r->nplace);
        break;
    default:
        put(w, "running");
        break;
    }
}

/* "admitted: 2 replicas on n1 GPU 0,1, n2 GPU 3": where the gang goes,
 * the first three places listed, and whether it backfilled or grows. */
static void admitted_message(wr *w, const struct q_input *in, const q_output *out, int j,
                             const struct q_result *r) {
    put(w, "admitted: %d replica%s on ", r->nplace, r->nplace == 1 ? "" : "s");
    for (int k = 0; k < r->nplace && k < 3; k++) {
        const struct q_place *p = &out->places[r->place_off + k];
        put(w, "%s%s", k ? ", " : "", nz(in->nodes[p->node].name, "?"));
        if (p->gpu_mask) {
            put(w, " GPU");
            const char *sep = " ";
            for (int g = 0; g < Q_MAX_GPUS; g++)
                if ((p->gpu_mask >> g) & 1u) {
                    put(w, "%s%d", sep, g);
                    sep = ",";
                }
        }
    }
    if (r->nplace > 3) put(w, ", ... (%d nodes listed in placement)", r->nplace);
    if (r->backfilled) put(w, " (backfilled)");
    for (int i = 0; i < out->nactions; i++)
        if (out->actions[i].job == j && out->actions[i].kind == Q_ACT_GROW)
            put(w, " (elastic: growing to %d replicas)", out->actions[i].replicas);
}

/* The message of a pending job that waits: for preempted jobs to stop,
 * for quota (its own or the cohort's), budget or capacity, or behind a
 * job that cannot start. */
static void waiting_message(wr *w, const struct q_input *in, const q_output *out, int j,
                            const struct q_result *r) {
    const struct q_job *job = &in->jobs[j];
    char tb[64], lb[32];
    switch ((q_reason)r->reason) {
    case Q_R_PREEMPTING:
        if (r->inuse > 0) {
            put(w, "preempting to start: stopping ");
            list_for(w, in, out, j);
        } else {
            put(w, "waiting for preempted or shrunk jobs to stop");
        }
        break;
    case Q_R_BORROW:
        put(w, "waiting for ");
        amount(w, r->res, r->inuse + r->need - r->limit);
        put(w, " of borrowable quota in the cohort of ");
        owner_name(w, in, job, 1);
        put(w, " (lendable ");
        quota_number(w, r->res, r->limit);
        /* inuse counts what the other groups' pending jobs hold */
        put(w, ", lent or held for the lenders' pending jobs ");
        quota_number(w, r->res, r->inuse);
        put(w, ")");
        break;
    case Q_R_SUSPENDED:
        put(w, "suspended (spec.suspend is true)");
        break;
    case Q_R_QUOTA: {
        int64_t shortfall = r->inuse + r->need - r->limit;
        put(w, "waiting for ");
        amount(w, r->res, shortfall);
        put(w, " in ");
        owner_name(w, in, job, r->group_scope);
        put(w, " (quota ");
        quota_number(w, r->res, r->limit);
        put(w, ", in use ");
        quota_number(w, r->res, r->inuse);
        put(w, ")");
        break;
    }
    case Q_R_BUDGET:
        put(w, "%s budget exhausted ", r->group_scope ? "group" : "user");
        if (r->t > 0) {
            q_rfc3339(r->t, tb, sizeof tb);
            put(w, "until %s", tb);
        } else {
            put(w, "(window end unknown)");
        }
        break;
    case Q_R_CAPACITY:
        put(w, "waiting for capacity: ");
        if (job->replicas > 1) put(w, "%d replicas of ", job->replicas);
        replica_need(w, job);
        put(w, " free on one %s", job->replicas > 1 ? "domain" : "node");
        if (job->domain && *job->domain) put(w, " in domain %s", job->domain);
        break;
    case Q_R_BLOCKED: {
        int b = r->blocker;
        if (b < 0 || b >= in->njobs) {
            put(w, "blocked behind a job that cannot start");
            break;
        }
        const struct q_result *br = &out->res[b];
        put(w, "blocked behind %s (level %s, position %d)", nz(in->jobs[b].key, "?"),
            level_name(in, br->level, lb, sizeof lb), br->pos_level);
        break;
    }
    default:
        break;
    }
}

/* "rejected: needs ...": the one thing no node has enough of for one
 * replica (r->res says which), or the whole replica when none alone. */
static void too_small_message(wr *w, const struct q_job *job, const struct q_result *r) {
    switch (r->res) {
    case Q_TOO_GPUS:
        put(w, "rejected: needs %lld GPUs per replica, largest node has %lld",
            (long long)r->need, (long long)r->limit);
        break;
    case Q_TOO_GPU_MEM:
        put(w, "rejected: needs ");
        mib(w, r->need);
        put(w, " per GPU, largest GPU has ");
        mib(w, r->limit);
        break;
    case Q_TOO_CPU:
        put(w, "rejected: needs %lldm CPU per replica, largest node has %lldm",
            (long long)r->need, (long long)r->limit);
        break;
    case Q_TOO_MEM:
        put(w, "rejected: needs ");
        bytes_mib(w, r->need);
        put(w, " memory per replica, largest node has ");
        mib(w, r->limit / 1048576);
        break;
    default:
        put(w, "rejected: no node fits one replica (");
        replica_need(w, job);
        put(w, ", %lldm CPU, ", (long long)job->cpu_milli);
        bytes_mib(w, job->memory_bytes);
        put(w, " memory)");
        break;
    }
}

/* The message of a job the cycle rejected (it can never start as it is),
 * or of a reason this file does not word: its name. */
static void rejected_message(wr *w, const struct q_input *in, const struct q_job *job,
                             const struct q_result *r) {
    switch ((q_reason)r->reason) {
    case Q_R_NO_NODE:
        if (r->res == 0) put(w, "rejected: no node in domain %s", nz(job->domain, "?"));
        else if (r->res == 1) put(w, "rejected: no node has GPU model %s", nz(job->gpu_model, "?"));
        else put(w, "rejected: no node in domain %s has GPU model %s", nz(job->domain, "?"),
                 nz(job->gpu_model, "?"));
        break;
    case Q_R_NODE_TOO_SMALL:
        too_small_message(w, job, r);
        break;
    case Q_R_GANG_TOO_BIG:
        put(w, "rejected: gang of %lld replicas does not fit in any domain (at most %lld fit)",
            (long long)r->need, (long long)r->limit);
        break;
    case Q_R_OVER_QUOTA:
        put(w, "rejected: needs ");
        amount(w, r->res, r->need);
        put(w, ", ");
        owner_name(w, in, job, r->group_scope);
        put(w, " quota is ");
        quota_number(w, r->res, r->limit);
        break;
    case Q_R_OVER_BUDGET:
        put(w, "rejected: needs %.1f GPU-hours, ", r->t);
        owner_name(w, in, job, r->group_scope);
        put(w, " budget is %.1f per window", r->t2);
        break;
    case Q_R_INVALID:
        put(w, "rejected: %s, got %lld",
            r->res < sizeof bad_fields / sizeof bad_fields[0] ? bad_fields[r->res] : "invalid field",
            (long long)r->need);
        break;
    default:
        put(w, "%s", q_reason_name((q_reason)r->reason));
        break;
    }
}

int q_message(const struct q_input *in, const q_output *out, int j, char *buf,
              size_t cap) {
    wr w = {buf, cap, 0};
    if (cap) buf[0] = '\0';
    if (!in || !out || j < 0 || j >= out->njobs || j >= in->njobs) {
        put(&w, "no such job");
        return w.len;
    }
    const struct q_result *r = &out->res[j];
    const struct q_job *job = &in->jobs[j];
    if (r->decision == Q_DEC_PREEMPT || r->decision == Q_DEC_RESIZE) {
        running_message(&w, in, out, j, r);
        return w.len;
    }
    switch ((q_reason)r->reason) {
    case Q_R_NONE:
        if (r->decision == Q_DEC_ADMIT)
            admitted_message(&w, in, out, j, r);
        else
            put(&w, "%s", job->state == Q_JOB_RUNNING ? "running" : "not scheduled");
        break;
    case Q_R_PREEMPTING:
    case Q_R_BORROW:
    case Q_R_SUSPENDED:
    case Q_R_QUOTA:
    case Q_R_BUDGET:
    case Q_R_CAPACITY:
    case Q_R_BLOCKED:
        waiting_message(&w, in, out, j, r);
        break;
    default:
        rejected_message(&w, in, job, r);
        break;
    }
    return w.len;
}
