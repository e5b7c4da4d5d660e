/* test_sim_report.c -- the simulator's metrics against hand-computed
 * values: nearest-rank percentiles, Jain's index, fragmentation on
 * hand-built nodes, and a tiny trace run end to end under the fifo preset
 * (JCT and wait percentiles, utilisation and its hourly series, shares
 * and Jain's index, fragmentation over time, ETA and prediction error,
 * rejection), plus the table and CSV output. */
#include "operator/manifest.h"
#include "simulator/sim.h"
#include "test/unit/th.h"

#include <stdlib.h>
#include <string.h>

static oppolicy *load_preset(const char *name) {
    char path[512];
    struct aiq_manifest *m = NULL;
    int n = 0;
    aiq_err e;
    aiq_err_clear(&e);
    snprintf(path, sizeof path, "%s/examples/policies/%s.yaml", th_srcdir(), name);
    if (!CHECK_INT(aiq_manifest_parse_file(path, &m, &n, &e), AIQ_OK))
        return NULL;
    oppolicy *p = NULL;
    if (CHECK(n >= 1 && m[0].kind == AIQ_KIND_QUEUEPOLICY && m[0].rc == AIQ_OK))
        p = oppolicy_compile(&m[0].u.policy, &e);
    CHECK(p != NULL);
    aiq_manifests_free(m, n);
    return p;
}

TEST(percentile_nearest_rank) {
    double v[10] = {10, 9, 8, 7, 6, 5, 4, 3, 2, 1};
    CHECK_DBL(sim_percentile(v, 10, 50), 5, 0);
    CHECK_DBL(sim_percentile(v, 10, 95), 10, 0);
    CHECK_DBL(sim_percentile(v, 10, 99), 10, 0);
    CHECK_DBL(sim_percentile(v, 10, 10), 1, 0);
    double w[5] = {50, 15, 40, 20, 35};
    CHECK_DBL(sim_percentile(w, 5, 30), 20, 0); /* rank ceil(1.5) = 2 */
    CHECK_DBL(sim_percentile(w, 5, 40), 20, 0); /* rank 2 */
    CHECK_DBL(sim_percentile(w, 5, 50), 35, 0); /* rank ceil(2.5) = 3 */
    CHECK_DBL(sim_percentile(w, 5, 100), 50, 0);
    CHECK_DBL(sim_percentile(w, 0, 50), 0, 0);
}

TEST(jain_index) {
    double eq[4] = {1, 1, 1, 1}, one[4] = {1, 0, 0, 0}, two[2] = {1, 2};
    CHECK_DBL(sim_jain(eq, 4), 1, 1e-12);
    CHECK_DBL(sim_jain(one, 4), 0.25, 1e-12);
    CHECK_DBL(sim_jain(two, 2), 9.0 / 10.0, 1e-12);
    CHECK_DBL(sim_jain(NULL, 0), 1, 0);
}

TEST(fragmentation_by_hand) {
    struct q_node n[2];
    memset(n, 0, sizeof n);
    n[0].ngpus = 2;
    n[0].schedulable = true;
    n[0].gpu_mem_total[0] = n[0].gpu_mem_total[1] = 81920;
    n[0].gpu_mem_used[0] = 51200; /* 30720 free on a shared GPU */
    n[1].ngpus = 4;
    n[1].schedulable = true;
    for (int g = 0; g < 4; g++)
        n[1].gpu_mem_total[g] = 40960;
    /* free: 30720 + 81920 + 4 x 40960 = 276480 */
    CHECK_DBL(sim_fragmentation(n, 2, 2, 0, 20480, 0), 0, 1e-12);
    CHECK_DBL(sim_fragmentation(n, 2, 2, 0, 0, 0), 112640.0 / 276480.0, 1e-12);
    CHECK_DBL(sim_fragmentation(n, 2, 2, 81920, 0, 0), 1, 1e-12);
    CHECK_DBL(sim_fragmentation(n, 2, 0, 0, 40000, 0), 30720.0 / 276480.0, 1e-12);
    CHECK_DBL(sim_fragmentation(n, 2, 0, 0, 0, 0), 0, 0); /* nothing waits */
    /* fractions: 0.3 of 80 GiB (24576 MiB) fits the 30720 free, 0.4
     * (32768) does not; on the 40 GiB GPUs both fit */
    CHECK_DBL(sim_fragmentation(n, 2, 0, 0, 0, 300), 0, 1e-12);
    CHECK_DBL(sim_fragmentation(n, 2, 0, 0, 0, 400), 30720.0 / 276480.0, 1e-12);
    n[1].schedulable = false;
    CHECK_DBL(sim_fragmentation(n, 2, 1, 0, 0, 0), 30720.0 / 112640.0, 1e-12);
}

/* One node of 2 x 80 GiB. A (50 GiB share) runs 0..3600; B (2 whole GPUs)
 * arrives at 1, waits for A, runs 3600..7200; C (4 GPUs) fits no node. */
/* A trace of the n jobs on the nodes of spec. */
static struct sim_trace *trace_of(const struct sim_job *jobs, int n, const char *spec) {
    struct sim_trace *tr = sim_trace_create();
    aiq_err e;
    for (int i = 0; i < n; i++)
        CHECK_INT(sim_trace_add_job(tr, &jobs[i], &e), AIQ_OK);
    CHECK_INT(sim_nodes_from_spec(tr, spec, &e), AIQ_OK);
    return tr;
}

static struct sim_trace *tiny(void) {
    struct sim_job a = {.id = "A", .user = "ua", .group = "g1", .submit = 0, .replicas = 1,
                        .gpus = 0, .gpu_mem_mib = 51200, .cpu_milli = 1000,
                        .mem_bytes = 1 << 30, .duration_s = 3600, .estimate_s = 3600};
    struct sim_job b = {.id = "B", .user = "ub", .group = "g2", .submit = 1, .replicas = 1,
                        .gpus = 2, .cpu_milli = 1000, .mem_bytes = 1 << 30,
                        .duration_s = 3600, .estimate_s = 7200};
    struct sim_job c = {.id = "C", .user = "ua", .group = "g1", .submit = 2, .replicas = 1,
                        .gpus = 4, .cpu_milli = 1000, .mem_bytes = 1 << 30, .duration_s = 60};
    return trace_of((struct sim_job[]){a, b, c}, 3, "1x2xA100-80GB");
}

TEST(tiny_trace_metrics) {
    oppolicy *pol = load_preset("fifo");
    struct sim_trace *tr = tiny();
    if (!pol) {
        sim_trace_free(tr);
        return;
    }
    struct sim_config cfg;
    struct sim_result res;
    struct sim_metrics m;
    aiq_err e;
    aiq_err_clear(&e);
    sim_config_for(&cfg, tr, pol);
    cfg.epoch = 0;
    if (!CHECK_INT(sim_run(&cfg, &res, &e), AIQ_OK)) {
        printf("    %s\n", e.message);
        goto out;
    }
    CHECK_INT(sim_metrics_compute(tr, &res, &m, &e), AIQ_OK);
    CHECK_DBL(res.jobs[0].start, 0, 0);
    CHECK_DBL(res.jobs[1].start, 3600, 0);
    CHECK_DBL(res.jobs[1].end, 7200, 0);
    CHECK_DBL(res.jobs[0].gpus, 0.625, 1e-12);
    CHECK_INT(res.jobs[2].state, SIM_J_REJECTED);
    CHECK_INT(res.jobs[2].reject_reason, Q_R_NODE_TOO_SMALL);
    CHECK_INT(m.ndone, 2);
    CHECK_INT(m.nrejected, 1);
    CHECK_INT(m.nunfinished, 0);
    /* JCT: A 3600 s, B 7199 s; wait: A 0, B 3599 s */
    CHECK_DBL(m.jct_avg, (3600 + 7199) / 2.0 / 3600, 1e-12);
    CHECK_DBL(m.jct_p50, 1.0, 1e-12);
    CHECK_DBL(m.jct_p95, 7199 / 3600.0, 1e-12);
    CHECK_DBL(m.jct_p99, 7199 / 3600.0, 1e-12);
    CHECK_DBL(m.wait_avg, 3599 / 2.0 / 3600, 1e-12);
    CHECK_DBL(m.wait_p50, 0, 0);
    CHECK_DBL(m.wait_p99, 3599 / 3600.0, 1e-12);
    /* Utilisation: 0.625 GPU for an hour, then 2 GPUs for an hour, on 2
     * GPUs over 7200 s. */
    CHECK_DBL(m.makespan_h, 2, 1e-12);
    CHECK_DBL(m.util_avg, (0.625 * 3600 + 2 * 3600) / (2 * 7200.0), 1e-12);
    CHECK_INT(res.nutil, 2);
    if (res.nutil == 2) {
        CHECK_DBL(res.util[0], 0.3125, 1e-12);
        CHECK_DBL(res.util[1], 1.0, 1e-12);
    }
    /* Shares: in all g1 got 2250 GPU-s and g2 7200; but while B waited
     * (1..3600) only g1 held GPUs (0.625 x 3599), so the contended shares
     * are 1 and 0 against entitlements of one half: Jain 0.5. */
    CHECK_DBL(res.group_gpu_s[0], 2250, 1e-9);
    CHECK_DBL(res.group_gpu_s[1], 7200, 1e-9);
    CHECK_DBL(res.group_cont_s[0], 0.625 * 3599, 1e-9);
    CHECK_DBL(res.group_cont_s[1], 0, 0);
    CHECK_DBL(m.jain_groups, 0.5, 1e-12);
    CHECK_DBL(m.jain_users, 0.5, 1e-12);
    /* While B waited, no free GPU memory was usable by it: the shared
     * GPU's 30 GiB is partial, the other GPU alone is too few. */
    CHECK_DBL(m.frag_avg, 1.0, 1e-12);
    CHECK_DBL(res.frag_time_s, 3599, 1e-9);
    /* ETA at submission: B was told 3600 (A's predicted end): exact. */
    CHECK_INT(m.eta_n, 1);
    CHECK_DBL(res.jobs[1].eta, 3600, 0);
    CHECK_DBL(m.eta_mae_h, 0, 0);
    CHECK_DBL(m.eta_err_p50, 0, 0);
    CHECK_DBL(m.eta_known, 1, 0);
    /* Predictions: no history yet, so each is the estimate: A exact, B
     * twice too long. */
    CHECK_DBL(res.jobs[1].pred_s, 7200, 0);
    CHECK_INT(m.pred_n, 2);
    CHECK_DBL(m.pred_mape, 0.5, 1e-12);
    CHECK_DBL(m.est_mape, 0.5, 1e-12);
    /* Neither prediction used history: none counts for the goal. */
    CHECK_INT(m.pred_hist_n, 0);
    CHECK_DBL(m.pred_err_p50, 0, 0);

    /* Table and CSV carry the numbers. */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    const char *names[1] = {"fifo"};
    sim_metrics_csv(f, names, &m, 1);
    fclose(f);
    CHECK(strncmp(buf, "policy,jobs,finished,rejected", 29) == 0);
    CHECK(strstr(buf, "\nfifo,3,2,1,0,1.50,") != NULL);
    free(buf);
    buf = NULL;
    f = open_memstream(&buf, &len);
    sim_metrics_table(f, names, &m, 1);
    sim_goals_table(f, names, &m, 1);
    sim_shares_table(f, &res);
    sim_util_csv(f, "fifo", &res, true);
    sim_util_csv(f, "srjf", &res, false);
    fclose(f);
    CHECK(strstr(buf, "gpu_util") != NULL && strstr(buf, "0.656") != NULL);
    CHECK(strstr(buf, "fifo                  0.0%        1    100.0% met           0.0%        0 n/a") != NULL);
    /* One header, then one series per policy. */
    CHECK(strstr(buf, "policy,hour,gpu_utilisation\nfifo,0,0.3125\nfifo,1,1.0000\nsrjf,0,0.3125\n"
                      "srjf,1,1.0000\n") != NULL);
    CHECK(strstr(strstr(buf, "policy,hour") + 1, "policy,hour") == NULL);
    free(buf);
out:
    sim_result_deinit(&res);
    sim_trace_free(tr);
    oppolicy_free(pol);
}

/* One GPU; A's estimate is half its real hour. B waits from the start,
 * C arrives when A has overrun its plan. */
static struct sim_trace *short_estimate(void) {
    struct sim_job a = {.id = "A", .user = "u", .group = "g", .submit = 0, .replicas = 1,
                        .gpus = 1, .cpu_milli = 1000, .mem_bytes = 1 << 30,
                        .duration_s = 3600, .estimate_s = 1800};
    struct sim_job b = a, c = a;
    b.id = "B", b.submit = 10, b.duration_s = b.estimate_s = 600;
    c.id = "C", c.submit = 2000, c.duration_s = c.estimate_s = 600;
    return trace_of((struct sim_job[]){a, b, c}, 3, "1x1xA100-80GB");
}

/* The ETA at submission, planned with the predictions (here the
 * estimates: no history yet) and with the real durations (--plan-actual).
 * A job past its planned end is planned to run as long again: C, arriving
 * when A has run 2,000 s of its 1,800, is told A ends at 3,600, then B
 * runs: 4,200, which is right (before, A's GPU was free at once: 2,600). */
TEST(eta_with_predictions_and_with_actual_durations) {
    oppolicy *pol = load_preset("fifo");
    struct sim_trace *tr = short_estimate();
    for (int actual = 0; pol && actual < 2; actual++) {
        struct sim_config cfg;
        struct sim_result res;
        struct sim_metrics m;
        aiq_err e;
        aiq_err_clear(&e);
        sim_config_for(&cfg, tr, pol);
        cfg.plan_actual = actual;
        if (!CHECK_INT(sim_run(&cfg, &res, &e), AIQ_OK)) {
            printf("    %s\n", e.message);
            sim_result_deinit(&res);
            break;
        }
        CHECK_INT(sim_metrics_compute(tr, &res, &m, &e), AIQ_OK);
        double t0 = cfg.epoch;
        CHECK_DBL(res.jobs[1].start - t0, 3600, 0);
        CHECK_DBL(res.jobs[2].start - t0, 4200, 0);
        /* B: A's plan (1,800), or its real end */
        CHECK_DBL(res.jobs[1].eta - t0, actual ? 3600 : 1800, 0);
        CHECK_DBL(res.jobs[2].eta - t0, 4200, 0);
        CHECK_INT(m.eta_n, 2);
        CHECK_DBL(m.eta_mae_h, actual ? 0 : 1800 / 2 / 3600.0, 1e-12);
        /* the prediction is made and reported the same either way */
        CHECK_DBL(res.jobs[0].pred_s, 1800, 0);
        sim_result_deinit(&res);
    }
    sim_trace_free(tr);
    oppolicy_free(pol);
}

/* The goal verdicts at, above and without measurements. */
TEST(goals_table_verdicts) {
    struct sim_metrics m[2];
    memset(m, 0, sizeof m);
    m[0].eta_err_p50 = 0.20;
    m[0].eta_n = 5;
    m[0].eta_known = 0.5;
    m[0].pred_err_p50 = 0.51;
    m[0].pred_hist_n = 9;
    m[1].eta_err_p50 = 0.35;
    m[1].eta_n = 4;
    const char *names[2] = {"a", "b"};
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    sim_goals_table(f, names, m, 2);
    fclose(f);
    CHECK(strstr(buf, "\na                    20.0%        5     50.0% met          51.0%        9 not met") != NULL);
    CHECK(strstr(buf, "\nb                    35.0%        4      0.0% not met       0.0%        0 n/a") != NULL);
    free(buf);
}

TEST(run_input_errors) {
    oppolicy *pol = load_preset("fifo");
    struct sim_trace *tr = tiny();
    struct sim_config cfg;
    struct sim_result res;
    aiq_err e;
    aiq_err_clear(&e);
    sim_config_init(&cfg);
    cfg.trace = tr;
    cfg.policy = pol;
    CHECK_INT(sim_run(&cfg, &res, &e), AIQ_EINVAL); /* no nodes */
    CHECK(strstr(e.message, "no nodes") != NULL);
    sim_result_deinit(&res);
    cfg.nodes = tr->nodes;
    cfg.nnodes = tr->nnodes;
    tr->jobs[1].submit = -5; /* now out of order */
    aiq_err_clear(&e);
    CHECK_INT(sim_run(&cfg, &res, &e), AIQ_EINVAL);
    CHECK(strstr(e.message, "jobs[1] (B)") != NULL);
    sim_result_deinit(&res);
    sim_trace_free(tr);
    oppolicy_free(pol);
}

/* One node of 8 GPUs. A (8 GPUs, 4 h of work) starts at 0; B (8 GPUs, 1 h)
 * arrives at 2h05m. Under tiresias-las A has 16.7 GPU-hours by then
 * ("served") and B none ("fresh"): B preempts A. A holds its GPUs for the
 * 30 s grace period, stops at 7530 s and B runs 7530..11130; A restarts
 * when B ends, with its remaining work: what it had at its last
 * checkpoint (one every 600 s of running: 7200 s of the 7530 s it ran,
 * 330 s lost), so it ends at 11130 + 14400 - 7200. Without checkpoints it
 * loses the whole run and starts over. */
/* tiresias-las without its "only checkpointing jobs are demoted" clause,
 * so a job that does not checkpoint is preempted too. */
static oppolicy *las_all(void) {
    static const char text[] =
        "apiVersion: aiq.dev/v1alpha1\nkind: QueuePolicy\nmetadata: {name: las-all}\n"
        "spec:\n  formula: job.age_hours\n  levels:\n"
        "  - {name: fresh, when: \"attained.gpu_hours < 1\"}\n  - {name: served}\n"
        "  backfill: Easy\n  preemption: {lowerLevels: true, minRuntime: 5m}\n";
    struct aiq_manifest *m = NULL;
    int n = 0;
    aiq_err e;
    aiq_err_clear(&e);
    oppolicy *p = NULL;
    if (CHECK_INT(aiq_manifest_parse_text(text, sizeof text - 1, &m, &n, &e), AIQ_OK) &&
        CHECK(n == 1 && m[0].rc == AIQ_OK))
        p = oppolicy_compile(&m[0].u.policy, &e);
    aiq_manifests_free(m, n);
    return p;
}

static void preempt_case(double checkpoint_s, double a_end, double lost) {
    oppolicy *pol = checkpoint_s > 0 ? load_preset("tiresias-las") : las_all();
    struct sim_trace *tr = sim_trace_create();
    aiq_err e;
    aiq_err_clear(&e);
    struct sim_job a = {.id = "A", .submit = 0, .replicas = 1, .gpus = 8, .cpu_milli = 1000,
                        .mem_bytes = 1 << 30, .duration_s = 14400, .checkpoint_s = checkpoint_s};
    struct sim_job b = {.id = "B", .submit = 7500, .replicas = 1, .gpus = 8, .cpu_milli = 1000,
                        .mem_bytes = 1 << 30, .duration_s = 3600};
    struct sim_config cfg;
    struct sim_result res;
    memset(&res, 0, sizeof res);
    if (!pol || !CHECK_INT(sim_trace_add_job(tr, &a, &e), AIQ_OK) ||
        !CHECK_INT(sim_trace_add_job(tr, &b, &e), AIQ_OK) ||
        !CHECK_INT(sim_nodes_from_spec(tr, "1x8xA100-80GB", &e), AIQ_OK))
        goto out;
    sim_config_for(&cfg, tr, pol);
    cfg.predict = false; /* times are unix seconds from SIM_EPOCH (0 is "unknown") */
    if (!CHECK_INT(sim_run(&cfg, &res, &e), AIQ_OK)) {
        printf("    %s\n", e.message);
        goto out;
    }
    const double T = SIM_EPOCH;
    CHECK_INT(res.npreempt, 1);
    CHECK_INT(res.jobs[0].preemptions, 1);
    CHECK_DBL(res.jobs[0].start, T, 0);          /* the first start counts for wait */
    CHECK_DBL(res.jobs[1].start, T + 7530, 0);
    CHECK_DBL(res.jobs[1].end, T + 11130, 1e-6);
    CHECK_DBL(res.jobs[0].lost_s, lost, 1e-6);
    CHECK_DBL(res.jobs[0].end, T + a_end, 1e-6);
    CHECK_DBL(res.lost_gpu_s, lost * 8, 1e-6);
    CHECK_INT(res.jobs[0].state, SIM_J_DONE);
    /* GPU time held: A's two runs and B; the grace period counts as A's. */
    CHECK_DBL(res.busy_gpu_s, 8 * (7530 + 3600 + (a_end - 11130)), 1e-3);
out:
    sim_result_deinit(&res);
    sim_trace_free(tr);
    oppolicy_free(pol);
}

TEST(preemption_keeps_the_rest_of_the_work) {
    preempt_case(600, 11130 + 14400 - 7200, 330);
    preempt_case(0, 11130 + 14400, 7530);
    /* The preset never demotes a job that cannot checkpoint: the same
     * trace without checkpoints runs A to its end, then B. */
    oppolicy *pol = load_preset("tiresias-las");
    struct sim_trace *tr = sim_trace_create();
    aiq_err e;
    aiq_err_clear(&e);
    struct sim_job a = {.id = "A", .submit = 0, .replicas = 1, .gpus = 8, .cpu_milli = 1000,
                        .mem_bytes = 1 << 30, .duration_s = 14400};
    struct sim_job b = {.id = "B", .submit = 7500, .replicas = 1, .gpus = 8, .cpu_milli = 1000,
                        .mem_bytes = 1 << 30, .duration_s = 3600};
    struct sim_config cfg;
    struct sim_result res;
    memset(&res, 0, sizeof res);
    if (pol && CHECK_INT(sim_trace_add_job(tr, &a, &e), AIQ_OK) &&
        CHECK_INT(sim_trace_add_job(tr, &b, &e), AIQ_OK) &&
        CHECK_INT(sim_nodes_from_spec(tr, "1x8xA100-80GB", &e), AIQ_OK)) {
        sim_config_for(&cfg, tr, pol);
        cfg.predict = false;
        if (CHECK_INT(sim_run(&cfg, &res, &e), AIQ_OK)) {
            CHECK_INT(res.npreempt, 0);
            CHECK_DBL(res.jobs[0].end, SIM_EPOCH + 14400, 1e-6);
        }
    }
    sim_result_deinit(&res);
    sim_trace_free(tr);
    oppolicy_free(pol);
}

/* An elastic job of 4 x 1 GPU (4 h of work at 4 replicas), 2..8
 * replicas, alone on 8 GPUs: it starts with 2, grows to 8 at once and,
 * twice as fast as at 4, ends after 2 h. A fixed 4-GPU job arriving at
 * 1 h shrinks it to 4 (after the 30 s grace period) and starts. */
TEST(elastic_job_grows_and_shrinks_in_the_simulator) {
    oppolicy *pol = load_preset("elastic-fifo");
    struct sim_trace *tr = sim_trace_create();
    aiq_err e;
    aiq_err_clear(&e);
    struct sim_job el = {.id = "E", .submit = 0, .replicas = 4, .gpus = 1, .min_replicas = 2,
                         .max_replicas = 8, .cpu_milli = 1000, .mem_bytes = 1 << 30,
                         .duration_s = 14400};
    struct sim_job f = {.id = "F", .submit = 3600, .replicas = 1, .gpus = 4, .cpu_milli = 1000,
                        .mem_bytes = 1 << 30, .duration_s = 600};
    struct sim_config cfg;
    struct sim_result res;
    memset(&res, 0, sizeof res);
    if (!pol || !CHECK_INT(sim_trace_add_job(tr, &el, &e), AIQ_OK) ||
        !CHECK_INT(sim_trace_add_job(tr, &f, &e), AIQ_OK) ||
        !CHECK_INT(sim_nodes_from_spec(tr, "1x8xA100-80GB", &e), AIQ_OK))
        goto out;
    sim_config_for(&cfg, tr, pol);
    cfg.predict = false;
    if (!CHECK_INT(sim_run(&cfg, &res, &e), AIQ_OK)) {
        printf("    %s\n", e.message);
        goto out;
    }
    const double T = SIM_EPOCH;
    /* E: 0..3630 at 8 replicas (2x speed: 7260 s of work), then 4
     * replicas until F ends at 3630 + 600 = 4230 (600 s of work), then 8
     * again for the remaining 14400 - 7860 = 6540 s at 2x: 3270 s. */
    CHECK_DBL(res.jobs[1].start, T + 3630, 0);
    CHECK_DBL(res.jobs[1].end, T + 4230, 1e-6);
    CHECK_DBL(res.jobs[0].end, T + 4230 + 3270, 1e-6);
    CHECK_INT(res.nshrink, 1);
    CHECK_INT(res.ngrow, 2);
    CHECK_INT(res.npreempt, 0);
out:
    sim_result_deinit(&res);
    sim_trace_free(tr);
    oppolicy_free(pol);
}
