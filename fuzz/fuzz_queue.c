/* fuzz_queue.c -- libFuzzer target for the queue core: builds a q_input
 * from the fuzzer's bytes (node and job fields taken raw, so negative,
 * huge and out-of-range values all occur), runs two cycles on one state
 * (the second incremental, after a change) and formats every message.
 * A cycle must either succeed or fail with AIQ_EINVAL; sanitizers catch
 * the rest. One input bit turns on lazy estimates: every q_eta (asked
 * backwards, so the pass resumes) must equal an eager state's estimate.
 * The last bytes set preemption rules, cohorts and the jobs' elastic and
 * preemption fields (raw too); every action must name a running or just
 * admitted job. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "queue/queue.h"

typedef struct {
    const uint8_t *p;
    size_t n;
} src;

static uint64_t take(src *s, int bytes) {
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++) {
        v <<= 8;
        if (s->n) {
            v |= *s->p++;
            s->n--;
        }
    }
    return v;
}

/* Mostly small values, sometimes negative or huge (up to 2^62, so the
 * harness's own "- 1" cannot overflow). */
static int64_t num(src *s, int64_t small) {
    uint64_t sel = take(s, 1);
    if (sel < 200) return (int64_t)(take(s, 2) % (uint64_t)(small + 1));
    if (sel < 240) return -(int64_t)take(s, 1);
    return (int64_t)(take(s, 8) >> 2);
}

static const char *const names[] = {"a", "b", "", NULL};
static const char *const keys[] = {"n/a", "n/b", "n/c", "n/d", "n/e", "n/f", "n/g", "n/h"};
static const char *const lv[] = {"l0", "l1", NULL};

static int sc_score(void *ctx, const double *f, double *s) {
    (void)ctx;
    *s = f[Q_F_JOB_PRIORITY] - f[Q_F_WAIT_HOURS];
    return f[Q_F_JOB_GPUS] > 100 ? -1 : 0;
}
static int sc_level(void *ctx, const double *f, int *l) {
    (void)ctx;
    *l = (int)f[Q_F_JOB_PRIORITY] % 4 - 1; /* sometimes out of range */
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static struct q_node nodes[6];
    static struct q_job jobs[8];
    static struct q_place pl[8][4];
    static struct q_user users[3];
    static struct q_group groups[2];
    src s = {data, size};
    struct q_input in;
    memset(&in, 0, sizeof in);
    in.now = 1795262400.0;
    in.nnodes = (int)(take(&s, 1) % 7);
    for (int i = 0; i < in.nnodes; i++) {
        struct q_node *n = &nodes[i];
        memset(n, 0, sizeof *n);
        n->name = names[i % 3];
        n->domain = names[take(&s, 1) % 4];
        n->gpu_model = names[take(&s, 1) % 4];
        n->ngpus = (int)num(&s, 8);
        for (int g = 0; g < Q_MAX_GPUS; g++) {
            n->gpu_mem_total[g] = num(&s, 81920);
            n->gpu_mem_used[g] = num(&s, 1000) ? 0 : n->gpu_mem_total[g];
        }
        n->cpu_alloc = num(&s, 64000);
        n->mem_alloc = num(&s, 1 << 30);
        n->schedulable = take(&s, 1) & 1;
    }
    in.ngroups = (int)(take(&s, 1) % 3);
    for (int g = 0; g < in.ngroups; g++) {
        memset(&groups[g], 0, sizeof groups[g]);
        groups[g].name = names[g];
        aiq_quota_unlimited(&groups[g].quota);
        groups[g].quota.gpus = num(&s, 16) - 1;
        groups[g].quota.jobs = num(&s, 4) - 1;
        groups[g].budget_gpu_hours = (double)(num(&s, 100) - 1);
        groups[g].window_end = in.now + (double)num(&s, 100000);
    }
    in.nusers = (int)(take(&s, 1) % 4);
    for (int u = 0; u < in.nusers; u++) {
        memset(&users[u], 0, sizeof users[u]);
        users[u].name = names[u];
        users[u].group = (int)(num(&s, 2) - 1);
        aiq_quota_unlimited(&users[u].quota);
        users[u].quota.gpus = num(&s, 8) - 1;
        users[u].budget_gpu_hours = -1;
    }
    in.njobs = (int)(take(&s, 1) % 9);
    for (int i = 0; i < in.njobs; i++) {
        struct q_job *j = &jobs[i];
        memset(j, 0, sizeof *j);
        j->key = keys[i];
        j->uid = keys[take(&s, 1) % 8]; /* duplicates on purpose */
        j->user = (int)(num(&s, 3) - 1);
        j->group = (int)(num(&s, 2) - 1);
        j->priority = (int)num(&s, 100);
        j->replicas = (int)num(&s, 4);
        j->gpus = (int)num(&s, 9);
        j->gpu_memory_mib = num(&s, 90000);
        /* fractions of a GPU, out-of-range and mixed with MiB too */
        j->gpu_milli = (take(&s, 1) & 3) == 0 ? (int)num(&s, 1100) : 0;
        j->cpu_milli = num(&s, 8000);
        j->memory_bytes = num(&s, 1 << 20);
        j->gpu_model = names[take(&s, 1) % 4];
        j->domain = names[take(&s, 1) % 4];
        j->queued = in.now - (double)num(&s, 100000);
        j->pred_runtime_s = (double)num(&s, 10000);
        j->suspended = (take(&s, 1) & 7) == 0;
        if ((take(&s, 1) & 3) == 0) {
            j->state = Q_JOB_RUNNING;
            j->end_time = in.now + (double)num(&s, 10000) - 100;
            for (int k = 0; k < 4; k++) {
                pl[i][k].node = (int32_t)num(&s, 6);
                pl[i][k].gpu_mask = (uint32_t)take(&s, 2);
                pl[i][k].gpu_mem_mib = num(&s, 1000);
            }
            j->placement = pl[i];
        }
    }
    in.nodes = nodes;
    in.jobs = jobs;
    in.users = users;
    in.groups = groups;
    in.policy.nlevels = (int)(take(&s, 1) % 4);
    in.policy.level_names = lv;
    in.policy.backfill = (take(&s, 1) & 1) ? AIQ_BACKFILL_EASY : AIQ_BACKFILL_NONE;
    in.policy.placement = (aiq_placement)(take(&s, 1) % 3); /* binpack, spread, fgd */
    in.policy.starvation_after_s = (double)num(&s, 10000);
    in.policy.promote_to = (int)(num(&s, 3) - 1);
    in.policy.rescore_interval_s = (double)num(&s, 600);
    /* Lazy estimates: checked against an eager state on the same input. */
    bool lazy = take(&s, 1) & 1;
    /* Preemption, elastic jobs and cohorts, read last so older corpus
     * inputs still mean what they meant (all zero when the input ends). */
    in.actions_on = take(&s, 1) & 1;
    in.policy.preempt_lower = take(&s, 1) & 1;
    in.policy.preempt_within = take(&s, 1) & 1;
    in.policy.preempt_margin = (double)num(&s, 10) - 1;
    in.policy.no_reclaim = take(&s, 1) & 1;
    in.policy.min_runtime_s = (double)num(&s, 3600);
    in.policy.max_job_min_runtime_s = (double)num(&s, 3600);
    in.policy.max_preemptions_per_hour = (int)num(&s, 3);
    in.policy.no_grow = take(&s, 1) & 1;
    for (int g = 0; g < in.ngroups; g++) {
        groups[g].cohort = (int)num(&s, 2);
        aiq_quota_unlimited(&groups[g].borrowing_limit);
        aiq_quota_unlimited(&groups[g].lending_limit);
        groups[g].borrowing_limit.gpus = num(&s, 8) - 1;
        groups[g].lending_limit.gpus = num(&s, 8) - 1;
    }
    for (int i = 0; i < in.njobs; i++) {
        struct q_job *j = &jobs[i];
        j->min_replicas = (int)num(&s, 4);
        j->max_replicas = (int)num(&s, 4);
        j->checkpointable = take(&s, 1) & 1;
        j->checkpoint_interval_s = (double)num(&s, 3600);
        j->non_preemptible = (take(&s, 1) & 7) == 0;
        j->terminating = (take(&s, 1) & 7) == 0;
        j->stopping = (int)num(&s, 3);
        j->preemptions = (int)num(&s, 3);
        j->preemptions_1h = (int)num(&s, 3);
        j->started = in.now - (double)num(&s, 7200);
        j->min_runtime_s = (double)num(&s, 3600);
        j->attained_gpu_hours = (double)num(&s, 10);
    }
    q_scorer sc = {NULL, sc_score, sc_level};
    q_state *st = q_state_create(NULL);
    if (!st) return 0;
    q_state *ref = lazy ? q_state_create(NULL) : NULL;
    if (lazy && !ref) {
        q_state_free(st);
        return 0;
    }
    for (int round = 0; round < 2; round++) {
        q_output out;
        aiq_err err;
        aiq_err_clear(&err);
        in.lazy_eta = lazy;
        aiq_rc rc = q_cycle_run(st, &in, &sc, &out, &err);
        if (rc != AIQ_OK && rc != AIQ_EINVAL) __builtin_trap();
        if (lazy && rc == AIQ_OK) {
            q_output ro;
            in.lazy_eta = false;
            if (q_cycle_run(ref, &in, &sc, &ro, &err) != AIQ_OK) __builtin_trap();
            for (int i = in.njobs - 1; i >= 0; i--) { /* backwards: resumes */
                double e = -1;
                if (q_eta(st, &in, &out, i, &e) != AIQ_OK || e != ro.res[i].eta) __builtin_trap();
            }
        }
        for (int a = 0; rc == AIQ_OK && a < out.nactions; a++) {
            const struct q_action *x = &out.actions[a];
            if (x->job < 0 || x->job >= in.njobs ||
                (jobs[x->job].state != Q_JOB_RUNNING && out.res[x->job].decision != Q_DEC_ADMIT))
                __builtin_trap();
        }
        for (int i = 0; rc == AIQ_OK && i < in.njobs; i++) {
            char m[256];
            q_message(&in, &out, i, m, sizeof m);
            q_message(&in, &out, i, m, 8); /* truncation */
        }
        /* a change for the incremental round */
        in.now += 30;
        if (in.njobs) {
            jobs[0].priority ^= 7;
            jobs[0].gen++;
        }
    }
    q_state_free(st);
    q_state_free(ref);
    return 0;
}
