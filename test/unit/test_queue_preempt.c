/* test_queue_preempt.c -- preemption, cohort borrowing and elastic jobs in
 * the queue core, scenario by scenario: who may preempt whom (levels,
 * score margin, reclaim of lent quota), that preemption only happens when
 * it makes room and takes no more than needed (the cheapest set: fewer
 * GPUs, less lost work, checkpointing jobs first), the protections
 * (minimum runtime, the admin's flag, the hourly limit), jobs being
 * stopped keeping their resources and quota until the caller says they
 * are gone, claims, elastic start/grow/shrink, and the messages. */
#include "test/unit/th.h"

#include <stdlib.h>

#include "queue/queue.h"

#define NOW 1795262400.0
#define GIB (1024LL * 1024 * 1024)
#define MAXJ 16

/* level: priority >= 100 is level 0, >= 10 level 1, else level 2;
 * score: the priority. */
static int t_score(void *ctx, const double *f, double *s) {
    (void)ctx;
    *s = f[Q_F_JOB_PRIORITY];
    return 0;
}
static int t_level(void *ctx, const double *f, int *lv) {
    (void)ctx;
    double p = f[Q_F_JOB_PRIORITY];
    *lv = p >= 100 ? 0 : p >= 10 ? 1 : 2;
    return 0;
}
static const q_scorer scorer = {NULL, t_score, t_level};
static const char *const lvn[] = {"high", "normal", "low"};

typedef struct {
    struct q_node nodes[4];
    struct q_job jobs[MAXJ];
    struct q_place pl[MAXJ][8];
    struct q_group groups[3];
    struct q_user users[3];
    struct q_input in;
    char keys[MAXJ][16];
} world;

static void unlimited(struct aiq_quota *q) {
    q->gpus = q->gpu_memory_mib = q->cpu_milli = q->memory_bytes = q->jobs = -1;
}

/* nn nodes of 8 GPUs, no jobs, preemption of lower levels on. */
static void setup(world *w, int nn) {
    memset(w, 0, sizeof *w);
    for (int i = 0; i < nn; i++) {
        struct q_node *n = &w->nodes[i];
        n->name = i == 0 ? "n0" : i == 1 ? "n1" : i == 2 ? "n2" : "n3";
        n->ngpus = 8;
        for (int g = 0; g < 8; g++) n->gpu_mem_total[g] = 81920;
        n->cpu_alloc = 64000;
        n->mem_alloc = 512 * GIB;
        n->schedulable = true;
    }
    for (int g = 0; g < 3; g++) {
        struct q_group *gr = &w->groups[g];
        gr->name = g == 0 ? "vision" : g == 1 ? "nlp" : "speech";
        unlimited(&gr->quota);
        unlimited(&gr->borrowing_limit);
        unlimited(&gr->lending_limit);
        gr->budget_gpu_hours = -1;
        gr->fairshare = 1;
        struct q_user *u = &w->users[g];
        u->name = g == 0 ? "ann" : g == 1 ? "bob" : "cid";
        u->group = g;
        unlimited(&u->quota);
        u->budget_gpu_hours = -1;
        u->fairshare = 1;
    }
    struct q_input *in = &w->in;
    in->now = NOW;
    in->nodes = w->nodes;
    in->nnodes = nn;
    in->groups = w->groups;
    in->ngroups = 3;
    in->users = w->users;
    in->nusers = 3;
    in->jobs = w->jobs;
    in->policy.nlevels = 3;
    in->policy.level_names = lvn;
    in->policy.preempt_lower = true;
    in->actions_on = true;
}

/* Adds a pending job: replicas x gpus, priority prio, user/group u. */
static int pend(world *w, int prio, int replicas, int gpus, int u) {
    int i = w->in.njobs++;
    struct q_job *j = &w->jobs[i];
    memset(j, 0, sizeof *j);
    snprintf(w->keys[i], sizeof w->keys[i], "ns/j%d", i);
    j->key = j->uid = w->keys[i];
    j->user = u;
    j->group = u;
    j->priority = prio;
    j->replicas = replicas;
    j->gpus = gpus;
    j->cpu_milli = 1000;
    j->memory_bytes = GIB;
    j->queued = j->created = NOW - 60 - i; /* older first among equals */
    j->pred_runtime_s = 3600;
    return i;
}

/* Adds a running job started `ran` seconds ago, replica k on node
 * nodes[k] (taking the first free GPUs there). */
static int run(world *w, int prio, int replicas, int gpus, int u, double ran, const int *nodes) {
    int i = pend(w, prio, replicas, gpus, u);
    struct q_job *j = &w->jobs[i];
    j->state = Q_JOB_RUNNING;
    j->started = NOW - ran;
    j->end_time = NOW + 3600;
    for (int k = 0; k < replicas; k++) {
        struct q_node *n = &w->nodes[nodes[k]];
        struct q_place *p = &w->pl[i][k];
        p->node = nodes[k];
        for (int g = 0, got = 0; g < n->ngpus && got < gpus; g++) {
            if (n->gpu_mem_used[g]) continue;
            n->gpu_mem_used[g] = n->gpu_mem_total[g];
            p->gpu_mask |= 1u << g;
            got++;
        }
        n->cpu_used += j->cpu_milli;
        n->mem_used += j->memory_bytes;
    }
    j->placement = w->pl[i];
    return i;
}

/* Removes running job i's resources from the nodes (it is gone); the job
 * stays in the array as pending with gen bumped (requeued). */
static void gone(world *w, int i) {
    struct q_job *j = &w->jobs[i];
    for (int k = 0; k < j->replicas; k++) {
        const struct q_place *p = &j->placement[k];
        struct q_node *n = &w->nodes[p->node];
        for (int g = 0; g < n->ngpus; g++)
            if ((p->gpu_mask >> g) & 1u) n->gpu_mem_used[g] = 0;
        n->cpu_used -= j->cpu_milli;
        n->mem_used -= j->memory_bytes;
    }
    j->state = Q_JOB_PENDING;
    j->terminating = false;
    j->placement = NULL;
    j->preemptions++;
    j->preemptions_1h++;
    j->queued = NOW;
    j->gen++;
}

static int cycle(q_state *st, world *w, q_output *out) {
    aiq_err e;
    aiq_err_clear(&e);
    aiq_rc rc = q_cycle_run(st, &w->in, &scorer, out, &e);
    if (!CHECK_INT(rc, AIQ_OK)) printf("    %s\n", e.message);
    return rc == AIQ_OK;
}

static int nvictims(const q_output *out, int for_job) {
    int n = 0;
    for (int i = 0; i < out->nactions; i++)
        n += out->actions[i].for_job == for_job && out->actions[i].kind == Q_ACT_PREEMPT;
    return n;
}

static bool is_victim(const q_output *out, int job) {
    for (int i = 0; i < out->nactions; i++)
        if (out->actions[i].job == job && out->actions[i].kind == Q_ACT_PREEMPT) return true;
    return false;
}

static const char *msg(const world *w, const q_output *out, int j) {
    static char buf[256];
    q_message(&w->in, out, j, buf, sizeof buf);
    return buf;
}

TEST(higher_level_preempts_then_waits_until_the_victim_is_gone) {
    static world w;
    setup(&w, 1);
    int low = run(&w, 1, 1, 8, 1, 7200, (int[]){0});
    int hi = pend(&w, 500, 1, 8, 0);
    q_state *st = q_state_create(NULL);
    q_output out;
    if (!cycle(st, &w, &out)) goto out;
    CHECK_INT(out.res[hi].decision, Q_DEC_WAIT);
    CHECK_INT(out.res[hi].reason, Q_R_PREEMPTING);
    CHECK_INT(out.nactions, 1);
    CHECK_INT(out.actions[0].job, low);
    CHECK_INT(out.actions[0].for_job, hi);
    CHECK_INT(out.actions[0].kind, Q_ACT_PREEMPT);
    CHECK_INT(out.actions[0].reason, Q_R_PREEMPTED);
    CHECK_INT(out.res[low].decision, Q_DEC_PREEMPT);
    CHECK_INT(out.res[low].blocker, hi);
    CHECK_STR(msg(&w, &out, hi), "preempting to start: stopping ns/j0");
    CHECK_STR(msg(&w, &out, low), "preempted by ns/j1 (level high over level low)");
    /* The caller stops it: it still holds its GPUs and nobody else gets
     * them, and no second victim is chosen. */
    w.jobs[low].terminating = true;
    int small = pend(&w, 5, 1, 1, 2);
    if (!cycle(st, &w, &out)) goto out;
    CHECK_INT(out.nactions, 0);
    CHECK_INT(out.res[hi].reason, Q_R_PREEMPTING);
    CHECK_STR(msg(&w, &out, hi), "waiting for preempted or shrunk jobs to stop");
    CHECK_INT(out.res[small].decision, Q_DEC_WAIT);
    CHECK_INT(out.res[low].decision, Q_DEC_NONE);
    /* Gone: the preemptor starts, the victim waits in the queue again. */
    gone(&w, low);
    if (!cycle(st, &w, &out)) goto out;
    CHECK_INT(out.res[hi].decision, Q_DEC_ADMIT);
    CHECK_INT(out.res[low].decision, Q_DEC_WAIT);
    CHECK_INT(out.nactions, 0);
out:
    q_state_free(st);
}

TEST(no_preemption_that_would_not_make_room) {
    static world w;
    setup(&w, 1);
    /* 4 GPUs held by a high job (not preemptible by rank), 4 by a low one:
     * an 8-GPU high job cannot get 8 by preempting the low one. */
    run(&w, 200, 1, 4, 0, 7200, (int[]){0});
    int low = run(&w, 1, 1, 4, 1, 7200, (int[]){0});
    int hi = pend(&w, 500, 1, 8, 0);
    q_state *st = q_state_create(NULL);
    q_output out;
    if (cycle(st, &w, &out)) {
        CHECK_INT(out.nactions, 0);
        CHECK_INT(out.res[hi].reason, Q_R_CAPACITY);
        CHECK_INT(out.res[low].decision, Q_DEC_NONE);
    }
    /* Same level: nobody is preempted without a score margin. */
    w.jobs[hi].priority = 150;
    w.jobs[hi].gpus = 4;
    w.jobs[hi].gen++;
    w.jobs[low].priority = 120;
    if (cycle(st, &w, &out)) {
        CHECK_INT(out.nactions, 0);
        CHECK_INT(out.res[hi].reason, Q_R_CAPACITY);
    }
    /* ... with a margin of 20, 150 beats 120 by enough. */
    w.in.policy.preempt_within = true;
    w.in.policy.preempt_margin = 20;
    if (cycle(st, &w, &out)) {
        CHECK_INT(out.nactions, 1);
        CHECK_INT(out.actions[0].reason, Q_R_PREEMPTED_SCORE);
        CHECK_INT(out.actions[0].job, low);
    }
    w.in.policy.preempt_margin = 40;
    if (cycle(st, &w, &out)) CHECK_INT(out.nactions, 0);
    /* Preemption off: nothing. */
    w.in.policy.preempt_within = false;
    w.jobs[low].priority = 1;
    w.in.policy.preempt_lower = false;
    if (cycle(st, &w, &out)) {
        CHECK_INT(out.nactions, 0);
        CHECK_INT(out.nsearched, 0);
    }
    q_state_free(st);
}

TEST(victims_are_the_fewest_needed) {
    static world w;
    setup(&w, 1);
    int a = run(&w, 1, 1, 2, 1, 3600, (int[]){0});
    int b = run(&w, 1, 1, 2, 1, 3600, (int[]){0});
    int c = run(&w, 1, 1, 2, 1, 3600, (int[]){0});
    (void)a; (void)b; (void)c;
    /* 2 GPUs free, 3 x 2-GPU low jobs: a 4-GPU job needs exactly one. */
    int hi = pend(&w, 500, 1, 4, 0);
    q_state *st = q_state_create(NULL);
    q_output out;
    if (cycle(st, &w, &out)) {
        CHECK_INT(nvictims(&out, hi), 1);
        CHECK_INT(out.res[hi].reason, Q_R_PREEMPTING);
    }
    /* a 6-GPU job: two */
    w.jobs[hi].gpus = 6;
    w.jobs[hi].gen++;
    if (cycle(st, &w, &out)) CHECK_INT(nvictims(&out, hi), 2);
    q_state_free(st);
}

TEST(cheapest_victims_fewer_gpus_less_lost_work_checkpointing_first) {
    static world w;
    setup(&w, 2);
    /* n0: a 4-GPU low job and 4 free; n1: an 8-GPU low job. An 8-GPU
     * job is better served on n0 (4 GPUs preempted, not 8). */
    int four = run(&w, 1, 1, 4, 1, 600, (int[]){0});
    int eight = run(&w, 1, 1, 8, 1, 600, (int[]){1});
    int hi = pend(&w, 500, 1, 8, 0);
    q_state *st = q_state_create(NULL);
    q_output out;
    if (cycle(st, &w, &out)) {
        CHECK_INT(nvictims(&out, hi), 1);
        CHECK(is_victim(&out, four));
        CHECK(!is_victim(&out, eight));
    }
    q_state_free(st);
    /* Two 8-GPU nodes, each full with one low job: the one that ran for
     * less time loses less work; a checkpointing one loses none. */
    setup(&w, 2);
    int old = run(&w, 1, 1, 8, 1, 36000, (int[]){0});
    int young = run(&w, 1, 1, 8, 1, 1800, (int[]){1});
    hi = pend(&w, 500, 1, 8, 0);
    st = q_state_create(NULL);
    if (cycle(st, &w, &out)) {
        CHECK(is_victim(&out, young));
        CHECK(!is_victim(&out, old));
    }
    w.jobs[old].checkpointable = true;
    w.jobs[old].checkpoint_interval_s = 600;
    w.jobs[old].gen++;
    if (cycle(st, &w, &out)) {
        CHECK(is_victim(&out, old));
        CHECK(!is_victim(&out, young));
    }
    q_state_free(st);
}

TEST(protections_minimum_runtime_flag_and_hourly_limit) {
    static world w;
    setup(&w, 1);
    int low = run(&w, 1, 1, 8, 1, 300, (int[]){0}); /* ran 5 minutes */
    int hi = pend(&w, 500, 1, 8, 0);
    q_state *st = q_state_create(NULL);
    q_output out;
    w.in.policy.min_runtime_s = 600;
    if (cycle(st, &w, &out)) {
        CHECK_INT(out.nactions, 0);
        CHECK_INT(out.res[hi].reason, Q_R_CAPACITY);
    }
    w.in.policy.min_runtime_s = 120;
    if (cycle(st, &w, &out)) CHECK_INT(nvictims(&out, hi), 1);
    /* The job's own minimum counts up to the policy's cap. */
    w.jobs[low].min_runtime_s = 3600;
    w.in.policy.max_job_min_runtime_s = 200;
    if (cycle(st, &w, &out)) CHECK_INT(nvictims(&out, hi), 1);
    w.in.policy.max_job_min_runtime_s = 7200;
    if (cycle(st, &w, &out)) CHECK_INT(nvictims(&out, hi), 0);
    w.jobs[low].min_runtime_s = 0;
    /* An unknown start counts as just started. */
    w.jobs[low].started = 0;
    if (cycle(st, &w, &out)) CHECK_INT(nvictims(&out, hi), 0);
    w.jobs[low].started = NOW - 300;
    if (cycle(st, &w, &out)) CHECK_INT(nvictims(&out, hi), 1);
    w.jobs[low].non_preemptible = true;
    if (cycle(st, &w, &out)) CHECK_INT(nvictims(&out, hi), 0);
    w.jobs[low].non_preemptible = false;
    w.in.policy.max_preemptions_per_hour = 2;
    w.jobs[low].preemptions_1h = 2;
    if (cycle(st, &w, &out)) CHECK_INT(nvictims(&out, hi), 0);
    w.jobs[low].preemptions_1h = 1;
    if (cycle(st, &w, &out)) CHECK_INT(nvictims(&out, hi), 1);
    q_state_free(st);
}

TEST(quota_is_never_exceeded_counting_jobs_being_stopped) {
    static world w;
    setup(&w, 2);
    w.groups[0].quota.gpus = 8;
    /* A low job of group vision holds its 8 GPUs on n0; n1 is empty. A
     * high job of the same group fits n1 but not the group quota: it
     * preempts the low one and must wait until it is gone, although the
     * GPUs are free. */
    int low = run(&w, 1, 1, 8, 0, 7200, (int[]){0});
    int hi = pend(&w, 500, 1, 8, 0);
    q_state *st = q_state_create(NULL);
    q_output out;
    if (!cycle(st, &w, &out)) goto out;
    CHECK_INT(out.res[hi].reason, Q_R_PREEMPTING);
    CHECK(is_victim(&out, low));
    w.jobs[low].terminating = true;
    if (!cycle(st, &w, &out)) goto out;
    CHECK_INT(out.res[hi].decision, Q_DEC_WAIT);
    CHECK_INT(out.res[hi].reason, Q_R_PREEMPTING);
    CHECK_INT(out.nactions, 0);
    gone(&w, low);
    if (!cycle(st, &w, &out)) goto out;
    CHECK_INT(out.res[hi].decision, Q_DEC_ADMIT);
    CHECK_INT(out.res[low].reason, Q_R_QUOTA);
    /* Without preemption rules a job over its quota just waits. */
    q_state_free(st);
    setup(&w, 2);
    w.in.policy.preempt_lower = false;
    w.groups[0].quota.gpus = 8;
    run(&w, 1, 1, 8, 0, 7200, (int[]){0});
    hi = pend(&w, 500, 1, 8, 0);
    st = q_state_create(NULL);
    if (cycle(st, &w, &out)) {
        CHECK_INT(out.res[hi].reason, Q_R_QUOTA);
        CHECK_INT(out.nactions, 0);
    }
out:
    q_state_free(st);
}

TEST(claimed_room_is_not_taken_by_later_jobs) {
    static world w;
    setup(&w, 1);
    /* 4 free GPUs and a 4-GPU low job; an 8-GPU high job preempts it and
     * claims the 4 free GPUs too; a later 2-GPU job may not take them. */
    int low = run(&w, 1, 1, 4, 1, 7200, (int[]){0});
    int hi = pend(&w, 500, 1, 8, 0);
    int later = pend(&w, 50, 1, 2, 2);
    q_state *st = q_state_create(NULL);
    q_output out;
    if (cycle(st, &w, &out)) {
        CHECK(is_victim(&out, low));
        CHECK_INT(out.res[hi].reason, Q_R_PREEMPTING);
        CHECK_INT(out.res[later].decision, Q_DEC_WAIT);
        CHECK_INT(out.res[later].reason, Q_R_CAPACITY);
    }
    q_state_free(st);
}

TEST(reclaim_borrowed_quota_in_a_cohort) {
    static world w;
    setup(&w, 2);
    w.in.policy.preempt_lower = false; /* only reclaim: it needs no rule */
    for (int g = 0; g < 2; g++) {
        w.groups[g].cohort = 1;
        w.groups[g].quota.gpus = 8;
    }
    /* vision borrows nlp's idle 8 GPUs: 16 in use, quota 8. */
    int v1 = run(&w, 1, 1, 8, 0, 7200, (int[]){0});
    int v2 = pend(&w, 1, 1, 8, 0);
    q_state *st = q_state_create(NULL);
    q_output out;
    if (!cycle(st, &w, &out)) goto out;
    CHECK_INT(out.res[v2].decision, Q_DEC_ADMIT);
    /* apply: v2 runs on n1 */
    w.jobs[v2].state = Q_JOB_RUNNING;
    w.jobs[v2].started = NOW - 7200;
    w.jobs[v2].end_time = NOW + 3600;
    w.pl[v2][0] = out.places[out.res[v2].place_off];
    w.jobs[v2].placement = w.pl[v2];
    for (int g = 0; g < 8; g++)
        if ((w.pl[v2][0].gpu_mask >> g) & 1u) w.nodes[w.pl[v2][0].node].gpu_mem_used[g] = 81920;
    w.nodes[w.pl[v2][0].node].cpu_used += 1000;
    w.nodes[w.pl[v2][0].node].mem_used += GIB;
    w.jobs[v2].gen++;
    /* A third vision job (older, so first in the queue): above its
     * quota, and the cohort has nothing left to lend. */
    int v3 = pend(&w, 1, 1, 4, 0);
    w.jobs[v3].queued = w.jobs[v3].created = NOW - 600;
    /* nlp wants its quota back. */
    int n1 = pend(&w, 1, 1, 8, 1);
    if (!cycle(st, &w, &out)) goto out;
    CHECK_INT(out.res[n1].reason, Q_R_PREEMPTING);
    CHECK_INT(nvictims(&out, n1), 1);
    CHECK(is_victim(&out, v1) != is_victim(&out, v2));
    CHECK_INT(out.actions[0].reason, Q_R_RECLAIMED);
    CHECK_INT(out.res[v3].decision, Q_DEC_WAIT);
    CHECK_STR(msg(&w, &out, out.actions[0].job),
              "preempted by ns/j3: group vision borrowed quota that group nlp needs back");
    /* The cohort can lend no more: the pending vision job waits. */
    CHECK_INT(out.res[v3].reason, Q_R_BORROW);
    CHECK_STR(msg(&w, &out, v3), "waiting for 12 GPUs of borrowable quota in the cohort of group vision "
                                 "(lendable 16, lent or held for the lenders' pending jobs 24)");
    /* nlp lends nothing: vision cannot borrow at all. */
    q_state_free(st);
    setup(&w, 2);
    for (int g = 0; g < 2; g++) {
        w.groups[g].cohort = 1;
        w.groups[g].quota.gpus = 8;
    }
    w.groups[1].lending_limit.gpus = 0;
    w.groups[0].lending_limit.gpus = 0;
    run(&w, 1, 1, 8, 0, 7200, (int[]){0});
    v2 = pend(&w, 1, 1, 8, 0);
    st = q_state_create(NULL);
    if (cycle(st, &w, &out)) CHECK_INT(out.res[v2].reason, Q_R_BORROW);
    /* A borrowing limit of 4: a 4-GPU job may borrow, an 8-GPU one not. */
    w.groups[1].lending_limit.gpus = -1;
    w.groups[0].borrowing_limit.gpus = 4;
    if (cycle(st, &w, &out)) {
        CHECK_INT(out.res[v2].reason, Q_R_QUOTA);
        CHECK_STR(msg(&w, &out, v2), "waiting for 4 GPUs in group vision (quota 12, in use 8)");
    }
    w.jobs[v2].gpus = 4;
    w.jobs[v2].gen++;
    if (cycle(st, &w, &out)) CHECK_INT(out.res[v2].decision, Q_DEC_ADMIT);
    /* Non-preemptible jobs never borrow (they could not be reclaimed):
     * what they hold stays within the quota. Beside a preemptible job
     * that holds the quota, this one may run (the other one borrows)... */
    w.jobs[v2].non_preemptible = true;
    w.jobs[v2].gen++;
    if (cycle(st, &w, &out)) CHECK_INT(out.res[v2].decision, Q_DEC_ADMIT);
    /* ... beside a non-preemptible one it may not. */
    w.jobs[0].non_preemptible = true;
    if (cycle(st, &w, &out)) {
        CHECK_INT(out.res[v2].reason, Q_R_QUOTA);
        CHECK_STR(msg(&w, &out, v2), "waiting for 4 GPUs in group vision (quota 8, in use 8)");
    }
    /* Without a cohort the quota is a hard cap. */
    w.jobs[v2].non_preemptible = false;
    w.groups[0].cohort = w.groups[1].cohort = 0;
    w.in.gen++;
    if (cycle(st, &w, &out)) CHECK_INT(out.res[v2].reason, Q_R_QUOTA);
out:
    q_state_free(st);
}

/* Runs pending job i where the cycle placed it (the caller started it). */
static void start_admitted(world *w, const q_output *out, int i) {
    struct q_job *j = &w->jobs[i];
    const struct q_result *r = &out->res[i];
    j->state = Q_JOB_RUNNING;
    j->replicas = r->nplace;
    j->started = NOW - 7200; /* past any minimum runtime */
    j->end_time = NOW + 3600;
    for (int k = 0; k < r->nplace; k++) {
        w->pl[i][k] = out->places[r->place_off + k];
        struct q_node *n = &w->nodes[w->pl[i][k].node];
        for (int g = 0; g < n->ngpus; g++)
            if ((w->pl[i][k].gpu_mask >> g) & 1u) n->gpu_mem_used[g] = n->gpu_mem_total[g];
        n->cpu_used += j->cpu_milli;
        n->mem_used += j->memory_bytes;
    }
    j->placement = w->pl[i];
    j->gen++;
}

TEST(reclaimed_victim_ordered_first_does_not_borrow_the_room_back) {
    /* The livelock the operator's e2e test found: vision borrows nlp's 8
     * GPUs with two 8-GPU jobs; nlp's 8-GPU job reclaims one; the victim
     * comes back to the queue ahead of nlp's job (same level, older). It
     * must not borrow the freed room again: nlp's pending job wants it. */
    static world w;
    setup(&w, 2);
    w.in.policy.preempt_lower = false; /* only reclaim */
    for (int g = 0; g < 2; g++) {
        w.groups[g].cohort = 1;
        w.groups[g].quota.gpus = 8;
    }
    int v1 = run(&w, 1, 1, 8, 0, 7200, (int[]){0});
    int v2 = run(&w, 1, 1, 8, 0, 7200, (int[]){1});
    int n1 = pend(&w, 1, 1, 8, 1);
    w.jobs[n1].queued = w.jobs[n1].created = NOW - 10; /* the newest */
    double q0[MAXJ];
    for (int i = 0; i < w.in.njobs; i++) q0[i] = w.jobs[i].queued;
    CHECK(q0[v1] < q0[n1] && q0[v2] < q0[n1]);
    int npre[MAXJ] = {0}, last_victim = -1, started_at = -1;
    q_state *st = q_state_create(NULL);
    q_output out;
    for (int c = 0; c < 8 && started_at < 0; c++) {
        if (!cycle(st, &w, &out)) break;
        /* what the caller does: stopped jobs go back to the queue with
         * their place in it; admitted ones start; victims stop */
        for (int a = 0; a < out.nactions; a++) {
            const struct q_action *x = &out.actions[a];
            if (x->kind != Q_ACT_PREEMPT) continue;
            CHECK_INT(x->reason, Q_R_RECLAIMED);
            CHECK_INT(x->for_job, n1);
            CHECK(x->job != last_victim); /* never the same one twice in a row */
            npre[x->job]++;
            last_victim = x->job;
        }
        if (out.res[n1].decision == Q_DEC_ADMIT) started_at = c;
        for (int i = 0; i < w.in.njobs; i++) {
            struct q_job *j = &w.jobs[i];
            if (j->state == Q_JOB_RUNNING && j->terminating) {
                gone(&w, i);
                j->queued = q0[i];
            } else if (j->state == Q_JOB_PENDING && out.res[i].decision == Q_DEC_ADMIT) {
                start_admitted(&w, &out, i);
            } else if (j->state == Q_JOB_RUNNING && is_victim(&out, i)) {
                j->terminating = true;
            }
        }
    }
    /* reclaim, wait for the victim to stop, start: the third cycle */
    CHECK_INT(started_at, 2);
    CHECK_INT(npre[v1] + npre[v2], 1);
    /* The victim waits: nlp's job held the quota it would have borrowed. */
    int victim = npre[v1] ? v1 : v2;
    CHECK_INT(w.jobs[victim].state, Q_JOB_PENDING);
    CHECK_INT(out.res[victim].reason, Q_R_BORROW);
    CHECK_STR(msg(&w, &out, victim), "waiting for 8 GPUs of borrowable quota in the cohort of group "
                                     "vision (lendable 16, lent or held for the lenders' pending jobs 16)");
    /* Once nlp runs, nothing is held: the victim waits for quota nlp
     * uses, and is not ahead of anyone any more. */
    if (cycle(st, &w, &out)) {
        CHECK_INT(out.nactions, 0);
        CHECK_INT(out.res[victim].reason, Q_R_BORROW);
    }
    /* nlp's job ends: the victim borrows again. */
    if (!CHECK_INT(w.jobs[n1].state, Q_JOB_RUNNING)) goto out;
    gone(&w, n1);
    w.jobs[n1].suspended = true;
    if (cycle(st, &w, &out)) CHECK_INT(out.res[victim].decision, Q_DEC_ADMIT);
out:
    q_state_free(st);
}

/* Runs cycles on the cohort world of the capacity-loop test, doing what
 * a caller does between them; counts reclaims per victim. Returns the
 * cycle in which job `want` started, or -1. */
static int run_cycles(q_state *st, world *w, int want, int ncycles, int *nrecl, q_output *out) {
    int started_at = -1;
    for (int c = 0; c < ncycles; c++) {
        if (!cycle(st, w, out)) break;
        for (int a = 0; a < out->nactions; a++)
            if (out->actions[a].kind == Q_ACT_PREEMPT) nrecl[out->actions[a].job]++;
        if (started_at < 0 && out->res[want].decision == Q_DEC_ADMIT) started_at = c;
        for (int i = 0; i < w->in.njobs; i++) {
            struct q_job *j = &w->jobs[i];
            if (j->state == Q_JOB_RUNNING && j->terminating) {
                gone(w, i); /* back to the queue as the newest job */
                j->queued = NOW + c;
            } else if (j->state == Q_JOB_PENDING && out->res[i].decision == Q_DEC_ADMIT) {
                start_admitted(w, out, i);
            } else if (j->state == Q_JOB_RUNNING && is_victim(out, i)) {
                j->terminating = true;
            }
        }
    }
    return started_at;
}

TEST(reclaim_through_capacity_never_loops) {
    /* The cohort's quotas add up to more than the cluster (one node of 8
     * GPUs; vision 4, nlp 8): quota is not what stops nlp's 4-GPU job,
     * the node is. Vision's 6-GPU job borrows 2. Reclaiming it frees the
     * node, but the victim comes back ahead of nlp's job when it ranks
     * higher, passes the quota checks (the cohort can lend 12) and takes
     * the node again: reclaimed, back, reclaimed, forever. So a reclaim
     * for capacity only takes a job that ranks behind the preemptor. */
    static world w;
    setup(&w, 1);
    w.in.policy.preempt_lower = false; /* only reclaim */
    for (int g = 0; g < 2; g++) w.groups[g].cohort = 1;
    w.groups[0].quota.gpus = 4;
    w.groups[1].quota.gpus = 8;
    int v = run(&w, 20, 1, 6, 0, 7200, (int[]){0}); /* normal level, score 20 */
    int n = pend(&w, 15, 1, 4, 1);                  /* normal level, score 15 */
    int nrecl[MAXJ] = {0};
    q_state *st = q_state_create(NULL);
    q_output out;
    int started = run_cycles(st, &w, n, 6, nrecl, &out);
    CHECK_INT(nrecl[v], 0);
    CHECK_INT(started, -1);
    CHECK_INT(w.jobs[v].state, Q_JOB_RUNNING);
    CHECK_INT(out.res[n].reason, Q_R_CAPACITY);
    q_state_free(st);
    /* Ranked behind nlp's job, the borrower is reclaimed once: it comes
     * back behind it, nlp's job starts the cycle its victim is gone, and
     * the victim waits for the node. */
    setup(&w, 1);
    w.in.policy.preempt_lower = false;
    for (int g = 0; g < 2; g++) w.groups[g].cohort = 1;
    w.groups[0].quota.gpus = 4;
    w.groups[1].quota.gpus = 8;
    v = run(&w, 12, 1, 6, 0, 7200, (int[]){0});
    n = pend(&w, 15, 1, 4, 1);
    memset(nrecl, 0, sizeof nrecl);
    st = q_state_create(NULL);
    started = run_cycles(st, &w, n, 6, nrecl, &out);
    CHECK_INT(nrecl[v], 1);
    CHECK_INT(started, 2);
    CHECK_INT(w.jobs[v].state, Q_JOB_PENDING);
    CHECK_INT(out.res[v].reason, Q_R_CAPACITY);
    q_state_free(st);
}

TEST(a_borrower_preempts_no_one_in_its_cohort) {
    /* Vision's high-level job would borrow (its quota is 0; nlp's 16
     * leave lendable quota but one node); nlp's low-level job fills the
     * node within nlp's quota. Taking it would only lend vision capacity
     * that nlp's jobs reclaim at once: the borrower waits. Outside the
     * cohort the level rule applies. */
    static world w;
    setup(&w, 1);
    for (int g = 0; g < 2; g++) w.groups[g].cohort = 1;
    w.groups[0].quota.gpus = 0;
    w.groups[1].quota.gpus = 16;
    int low = run(&w, 1, 1, 8, 1, 7200, (int[]){0});
    int high = pend(&w, 200, 1, 8, 0);
    q_state *st = q_state_create(NULL);
    q_output out;
    if (cycle(st, &w, &out)) {
        CHECK_INT(out.nactions, 0);
        CHECK_INT(out.res[high].reason, Q_R_CAPACITY);
    }
    /* Within its own quota it is no borrower: the level rule applies in
     * the cohort too, with reclaim turned off or not. */
    w.groups[0].quota.gpus = 8;
    w.in.policy.no_reclaim = true;
    w.in.gen++;
    if (cycle(st, &w, &out)) {
        CHECK_INT(nvictims(&out, high), 1);
        CHECK_INT(out.nactions > 0 ? out.actions[0].reason : -1, Q_R_PREEMPTED);
    }
    w.in.policy.no_reclaim = false;
    w.groups[0].quota.gpus = 0;
    w.groups[0].cohort = w.groups[1].cohort = 0;
    w.groups[0].quota.gpus = 8;
    w.in.gen++;
    if (cycle(st, &w, &out)) {
        CHECK_INT(nvictims(&out, high), 1);
        CHECK(is_victim(&out, low));
    }
    q_state_free(st);
}

TEST(elastic_starts_at_minimum_grows_and_shrinks_before_preempting) {
    static world w;
    setup(&w, 1);
    /* 6 GPUs held by a low job; an elastic job 1..4 x 1 GPU starts with
     * what fits: its minimum, then grows into the 2 idle GPUs. */
    int busy = run(&w, 1, 1, 6, 1, 7200, (int[]){0});
    int el = pend(&w, 50, 1, 1, 0);
    w.jobs[el].min_replicas = 1;
    w.jobs[el].max_replicas = 4;
    w.jobs[el].replicas = 4; /* ignored while pending */
    q_state *st = q_state_create(NULL);
    q_output out;
    if (!cycle(st, &w, &out)) goto out;
    CHECK_INT(out.res[el].decision, Q_DEC_ADMIT);
    CHECK_INT(out.res[el].nplace, 1);
    CHECK_INT(out.nactions, 1);
    CHECK_INT(out.actions[0].kind, Q_ACT_GROW);
    CHECK_INT(out.actions[0].job, el);
    CHECK_INT(out.actions[0].replicas, 2);
    CHECK_INT(out.actions[0].nplace, 1);
    CHECK_STR(msg(&w, &out, el), "admitted: 1 replica on n0 GPU 6 (elastic: growing to 2 replicas)");
    /* apply: it runs with 2 replicas */
    struct q_job *j = &w.jobs[el];
    j->state = Q_JOB_RUNNING;
    j->replicas = 2;
    j->started = NOW - 3600;
    j->end_time = NOW + 3600;
    w.pl[el][0] = out.places[out.res[el].place_off];
    w.pl[el][1] = out.places[out.actions[0].place_off];
    j->placement = w.pl[el];
    for (int k = 0; k < 2; k++) {
        struct q_node *n = &w.nodes[w.pl[el][k].node];
        for (int g = 0; g < 8; g++)
            if ((w.pl[el][k].gpu_mask >> g) & 1u) n->gpu_mem_used[g] = 81920;
        n->cpu_used += 1000;
        n->mem_used += GIB;
    }
    j->gen++;
    /* The low job ends: the elastic job grows to its maximum. */
    gone(&w, busy);
    w.jobs[busy].suspended = true; /* it does not come back here */
    if (!cycle(st, &w, &out)) goto out;
    CHECK_INT(out.nactions, 1);
    CHECK_INT(out.actions[0].kind, Q_ACT_GROW);
    CHECK_INT(out.actions[0].replicas, 4);
    CHECK_INT(out.res[el].decision, Q_DEC_RESIZE);
    CHECK_STR(msg(&w, &out, el), "growing from 2 to 4 replicas into idle capacity");
    /* A 7-GPU job arrives, lower level than the elastic one, on a node
     * where the elastic job holds 2 GPUs above its minimum and a 5-GPU low
     * job... there: 6 free, 1 needed: the elastic job shrinks by one,
     * nobody is preempted. */
    int fill = run(&w, 1, 1, 6, 1, 7200, (int[]){0});
    (void)fill;
    int newc = pend(&w, 5, 1, 1, 2);
    if (!cycle(st, &w, &out)) goto out;
    CHECK_INT(out.res[newc].reason, Q_R_PREEMPTING);
    CHECK_INT(out.nactions, 1);
    CHECK_INT(out.actions[0].kind, Q_ACT_SHRINK);
    CHECK_INT(out.actions[0].job, el);
    CHECK_INT(out.actions[0].replicas, 1);
    CHECK_INT(out.res[el].decision, Q_DEC_RESIZE);
    CHECK_STR(msg(&w, &out, el), "shrinking from 2 to 1 replicas for ns/j3");
    /* The caller stops the top replica: it is "stopping" until gone; the
     * new job waits, nothing more happens, nothing grows. */
    j->stopping = 1;
    if (!cycle(st, &w, &out)) goto out;
    CHECK_INT(out.res[newc].reason, Q_R_PREEMPTING);
    CHECK_INT(out.nactions, 0);
out:
    q_state_free(st);
}

TEST(growth_keeps_off_the_nodes_to_avoid) {
    /* An elastic job 1..2 x 8 GPUs runs on n0; n1 and n2 are idle. Binpack
     * grows it onto n1 (the first); told to avoid n1 (its last growth did
     * not start there), onto n2; told to avoid both, not at all. */
    static world w;
    setup(&w, 3);
    w.in.policy.preempt_lower = false;
    int el = run(&w, 5, 1, 8, 0, 7200, (int[]){0});
    w.jobs[el].min_replicas = 1;
    w.jobs[el].max_replicas = 2;
    q_state *st = q_state_create(NULL);
    q_output out;
    if (cycle(st, &w, &out) && CHECK_INT(out.nactions, 1)) {
        CHECK_INT(out.actions[0].kind, Q_ACT_GROW);
        CHECK_INT(out.places[out.actions[0].place_off].node, 1);
    }
    int32_t avoid[2] = {1, 2};
    w.jobs[el].grow_avoid = avoid;
    w.jobs[el].ngrow_avoid = 1;
    if (cycle(st, &w, &out) && CHECK_INT(out.nactions, 1))
        CHECK_INT(out.places[out.actions[0].place_off].node, 2);
    w.jobs[el].ngrow_avoid = 2;
    if (cycle(st, &w, &out)) CHECK_INT(out.nactions, 0);
    /* What it avoids stays free for everyone else. */
    int p = pend(&w, 5, 1, 8, 1);
    if (cycle(st, &w, &out)) CHECK_INT(out.res[p].decision, Q_DEC_ADMIT);
    /* A node index out of range is refused, naming the job and index. */
    avoid[1] = 3;
    aiq_err e;
    aiq_err_clear(&e);
    CHECK_INT(q_cycle_run(st, &w.in, &scorer, &out, &e), AIQ_EINVAL);
    CHECK_STR(e.message, "jobs[0] (ns/j0): grow_avoid[1] node 3 out of range 0..2");
    q_state_free(st);
}

TEST(shrink_before_preempting_anyone) {
    static world w;
    setup(&w, 1);
    /* n0: an elastic low job 2..6 x 1 GPU running 6, and a 2-GPU low
     * job. A 2-GPU high job: shrink the elastic job by 2, preempt none. */
    int el = run(&w, 1, 6, 1, 1, 7200, (int[]){0, 0, 0, 0, 0, 0});
    w.jobs[el].min_replicas = 2;
    w.jobs[el].max_replicas = 6;
    int low = run(&w, 1, 1, 2, 1, 7200, (int[]){0});
    int hi = pend(&w, 500, 1, 2, 0);
    q_state *st = q_state_create(NULL);
    q_output out;
    if (cycle(st, &w, &out)) {
        CHECK_INT(out.res[hi].reason, Q_R_PREEMPTING);
        CHECK_INT(out.nactions, 1);
        CHECK_INT(out.actions[0].kind, Q_ACT_SHRINK);
        CHECK_INT(out.actions[0].replicas, 4);
        CHECK(!is_victim(&out, low));
    }
    /* An 8-GPU high job: shrinking to 2 frees 4, the 2-GPU job 2 more,
     * still 2 short: the elastic job itself must go. */
    w.jobs[hi].gpus = 8;
    w.jobs[hi].gen++;
    if (cycle(st, &w, &out)) {
        CHECK(is_victim(&out, el));
        CHECK(is_victim(&out, low));
    }
    q_state_free(st);
}

TEST(bad_elastic_and_cohort_input_is_refused) {
    static world w;
    setup(&w, 1);
    int i = pend(&w, 1, 1, 1, 0);
    w.jobs[i].min_replicas = 4;
    w.jobs[i].max_replicas = 2;
    q_state *st = q_state_create(NULL);
    q_output out;
    if (cycle(st, &w, &out)) {
        CHECK_INT(out.res[i].decision, Q_DEC_REJECT);
        CHECK_INT(out.res[i].reason, Q_R_INVALID);
    }
    w.groups[1].cohort = 7;
    aiq_err e;
    aiq_err_clear(&e);
    CHECK_INT(q_cycle_run(st, &w.in, &scorer, &out, &e), AIQ_EINVAL);
    CHECK_STR(e.message, "groups[1] (nlp): cohort must be 0..3, got 7");
    w.groups[1].cohort = 0;
    int r = run(&w, 1, 2, 1, 0, 60, (int[]){0, 0});
    w.jobs[r].stopping = 2;
    aiq_err_clear(&e);
    CHECK_INT(q_cycle_run(st, &w.in, &scorer, &out, &e), AIQ_EINVAL);
    q_state_free(st);
}

TEST(running_jobs_factors_and_names) {
    static world w;
    setup(&w, 1);
    int r = run(&w, 1, 2, 2, 0, 1800, (int[]){0, 0});
    w.jobs[r].attained_gpu_hours = 3;
    w.jobs[r].min_replicas = 1;
    w.jobs[r].max_replicas = 3;
    w.jobs[r].preemptions = 2;
    w.jobs[r].checkpointable = true;
    q_state *st = q_state_create(NULL);
    q_output out;
    if (cycle(st, &w, &out)) {
        double f[Q_NFACTORS];
        q_job_factors(st, &w.in, r, f);
        CHECK_DBL(f[Q_F_ATTAINED_GPU_HOURS], 3 + 4 * 0.5, 1e-9);
        CHECK_DBL(f[Q_F_WAIT_HOURS], 0, 0);
        CHECK_DBL(f[Q_F_RUN_HOURS], 0.5, 1e-9);
        CHECK_DBL(f[Q_F_JOB_RUNNING], 1, 0);
        CHECK_DBL(f[Q_F_JOB_CURRENT_REPLICAS], 2, 0);
        CHECK_DBL(f[Q_F_JOB_MIN_REPLICAS], 1, 0);
        CHECK_DBL(f[Q_F_JOB_MAX_REPLICAS], 3, 0);
        CHECK_DBL(f[Q_F_JOB_PREEMPTIONS], 2, 0);
        CHECK_DBL(f[Q_F_JOB_CHECKPOINTABLE], 1, 0);
    }
    CHECK_STR(q_decision_name(Q_DEC_PREEMPT), "preempt");
    CHECK_STR(q_decision_name(Q_DEC_RESIZE), "resize");
    CHECK_STR(q_reason_name(Q_R_PREEMPTING), "preempting");
    CHECK_STR(q_reason_name(Q_R_RECLAIMED), "reclaimed");
    CHECK_STR(q_reason_name(Q_R_GROWN), "grown");
    q_state_free(st);
}

TEST(no_actions_without_a_caller_that_carries_them_out) {
    static world w;
    setup(&w, 1);
    int el = run(&w, 1, 2, 1, 1, 7200, (int[]){0, 0});
    w.jobs[el].min_replicas = 1;
    w.jobs[el].max_replicas = 4;
    int low = run(&w, 1, 1, 6, 1, 7200, (int[]){0});
    (void)low;
    int hi = pend(&w, 500, 1, 8, 0);
    w.in.actions_on = false;
    q_state *st = q_state_create(NULL);
    q_output out;
    if (cycle(st, &w, &out)) {
        /* the policy would preempt and the elastic job could shrink: no */
        CHECK_INT(out.nactions, 0);
        CHECK_INT(out.nsearched, 0);
        CHECK_INT(out.res[hi].reason, Q_R_CAPACITY);
    }
    w.in.actions_on = true;
    if (cycle(st, &w, &out)) CHECK(out.nactions > 0);
    q_state_free(st);
}
