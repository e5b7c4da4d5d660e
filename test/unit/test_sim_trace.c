/* test_sim_trace.c -- the simulator's trace readers on the checked-in
 * samples in test/fixtures/traces/ (our CSV, Tiresias, Alibaba v2023 pods
 * and nodes), their error messages (file:line:column, column name and
 * value), node specs, the CSV round trip and the seeded generator. */
#include "simulator/sim_trace.h"
#include "test/unit/th.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static struct sim_trace *read_fixture(const char *name,
                                      aiq_rc (*fn)(FILE *, const char *, struct sim_trace *,
                                                   aiq_err *),
                                      struct sim_trace *into, aiq_rc want, aiq_err *err) {
    char path[512];
    snprintf(path, sizeof path, "%s/test/fixtures/traces/%s", th_srcdir(), name);
    FILE *f = fopen(path, "r");
    if (!CHECK(f != NULL))
        return into;
    struct sim_trace *tr = into ? into : sim_trace_create();
    aiq_err_clear(err);
    CHECK_INT(fn(f, name, tr, err), want);
    fclose(f);
    return tr;
}

TEST(csv_reads_every_column) {
    aiq_err e;
    struct sim_trace *tr = read_fixture("small.csv", sim_read_csv, NULL, AIQ_OK, &e);
    if (!CHECK_INT(tr->njobs, 4)) {
        sim_trace_free(tr);
        return;
    }
    const struct sim_job *a = &tr->jobs[0], *b = &tr->jobs[1], *c = &tr->jobs[2],
                         *d = &tr->jobs[3];
    CHECK_STR(a->id, "a");
    CHECK_STR(a->user, "ann");
    CHECK_STR(a->group, "vision");
    CHECK_INT(a->replicas, 1);
    CHECK_INT(a->gpus, 1);
    CHECK_INT(a->gpu_mem_mib, 40960);
    CHECK_INT(a->cpu_milli, 4000);
    CHECK_INT(a->mem_bytes, 32768LL * 1048576);
    CHECK_DBL(a->duration_s, 3600, 0);
    CHECK_DBL(a->estimate_s, 7200, 0);
    CHECK_INT(a->priority, 100);
    CHECK_STR(a->model, "resnet50");
    CHECK_STR(a->task, "cv");
    CHECK(a->gpu_model == NULL);
    /* quoted field with a comma, empty estimate = none, pinned model */
    CHECK_STR(b->model, "llama,7b");
    CHECK_DBL(b->estimate_s, 0, 0);
    CHECK_INT(b->replicas, 2);
    CHECK_INT(b->gpus, 8);
    CHECK_STR(b->gpu_model, "A100-80GB");
    /* a GPU share; empty user and group default */
    CHECK_INT(c->gpus, 0);
    CHECK_INT(c->gpu_mem_mib, 10240);
    CHECK_STR(c->user, "default");
    CHECK_STR(c->group, "default");
    CHECK(c->model == NULL);
    CHECK_DBL(d->submit, 120.5, 0);
    CHECK_DBL(d->duration_s, 1800.5, 0);
    sim_trace_free(tr);
}

TEST(csv_error_names_file_line_column_and_value) {
    aiq_err e;
    struct sim_trace *tr = read_fixture("bad.csv", sim_read_csv, NULL, AIQ_EPARSE, &e);
    CHECK_INT(e.line, 3);
    CHECK_INT(e.col, 16); /* "b,10,bob,nlp,1," is 15 bytes: eight starts at 16 */
    CHECK(strstr(e.message, "bad.csv:3:") == e.message);
    CHECK(strstr(e.message, "column 'gpus'") != NULL);
    CHECK(strstr(e.message, "'eight'") != NULL);
    CHECK_INT(tr->njobs, 1); /* the good line before it was read */
    sim_trace_free(tr);
}

TEST(csv_header_must_have_submit_and_duration) {
    char text[] = "id,user\nx,ann\n";
    FILE *f = fmemopen(text, strlen(text), "r");
    struct sim_trace *tr = sim_trace_create();
    aiq_err e;
    aiq_err_clear(&e);
    CHECK_INT(sim_read_csv(f, "h.csv", tr, &e), AIQ_EPARSE);
    CHECK(strstr(e.message, "h.csv:1:1: header: missing column 'submit_s'") != NULL);
    fclose(f);
    sim_trace_free(tr);
}

TEST(csv_line_cap) {
    size_t n = SIM_MAX_LINE + 100;
    char *text = malloc(n + 40);
    snprintf(text, n + 40, "submit_s,duration_s,id\n0,1,");
    size_t l = strlen(text);
    memset(text + l, 'x', n - l);
    text[n] = '\n';
    text[n + 1] = '\0';
    FILE *f = fmemopen(text, n + 1, "r");
    struct sim_trace *tr = sim_trace_create();
    aiq_err e;
    aiq_err_clear(&e);
    CHECK_INT(sim_read_csv(f, "big.csv", tr, &e), AIQ_ETOOBIG);
    CHECK(strstr(e.message, "big.csv:2:") != NULL);
    fclose(f);
    free(text);
    sim_trace_free(tr);
}

/* Reads text as our CSV into a new trace; returns the reader's code. */
static aiq_rc read_text(const char *text, struct sim_trace **tr, aiq_err *e) {
    FILE *f = fmemopen((void *)text, strlen(text), "r");
    *tr = sim_trace_create();
    aiq_err_clear(e);
    aiq_rc rc = sim_read_csv(f, "m.csv", *tr, e);
    fclose(f);
    return rc;
}

TEST(csv_gpu_milli_is_a_fraction_and_round_trips) {
    aiq_err e;
    struct sim_trace *tr;
    CHECK_INT(read_text("submit_s,duration_s,gpus,gpu_milli\n0,10,0,500\n1,10,1,0\n", &tr, &e),
              AIQ_OK);
    if (CHECK_INT(tr->njobs, 2)) {
        CHECK_INT(tr->jobs[0].gpus, 0);
        CHECK_INT(tr->jobs[0].gpu_milli, 500);
        CHECK_INT(tr->jobs[0].gpu_mem_mib, 0);
        CHECK_INT(tr->jobs[1].gpu_milli, 0);
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    CHECK_INT(sim_write_csv(tr, out, &e), AIQ_OK);
    fclose(out);
    struct sim_trace *back;
    CHECK_INT(read_text(buf, &back, &e), AIQ_OK);
    if (CHECK_INT(back->njobs, 2))
        CHECK_INT(back->jobs[0].gpu_milli, 500);
    free(buf);
    sim_trace_free(back);
    sim_trace_free(tr);
}

TEST(csv_gpu_milli_errors_name_the_column) {
    static const char *const bad[][2] = {
        /* with whole GPUs (gpus defaults to 1) */
        {"submit_s,duration_s,gpu_milli\n0,10,500\n", "column 'gpu_milli': a fraction"},
        {"submit_s,duration_s,gpus,gpu_mem_mib,gpu_milli\n0,10,0,1024,500\n",
         "gpu_mem_mib 1024"},
        {"submit_s,duration_s,gpus,gpu_milli\n0,10,0,1000\n", "column 'gpu_milli'"},
        {"submit_s,duration_s,gpus,gpu_mem_mib,gpu_milli\n0,10,0,0,0\n",
         "column 'gpu_mem_mib'"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        aiq_err e;
        struct sim_trace *tr;
        CHECK_INT(read_text(bad[k][0], &tr, &e), AIQ_EPARSE);
        if (!CHECK(strstr(e.message, bad[k][1]) != NULL))
            fprintf(stderr, "  got: %s\n", e.message);
        CHECK_INT(e.line, 2);
        sim_trace_free(tr);
    }
}

TEST(csv_round_trip) {
    aiq_err e;
    struct sim_trace *tr = read_fixture("small.csv", sim_read_csv, NULL, AIQ_OK, &e);
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    CHECK_INT(sim_write_csv(tr, out, &e), AIQ_OK);
    fclose(out);
    FILE *in = fmemopen(buf, len, "r");
    struct sim_trace *back = sim_trace_create();
    CHECK_INT(sim_read_csv(in, "mem", back, &e), AIQ_OK);
    fclose(in);
    CHECK_INT(back->njobs, tr->njobs);
    for (int i = 0; i < tr->njobs && i < back->njobs; i++) {
        CHECK_STR(back->jobs[i].id, tr->jobs[i].id);
        CHECK_DBL(back->jobs[i].submit, tr->jobs[i].submit, 0);
        CHECK_DBL(back->jobs[i].duration_s, tr->jobs[i].duration_s, 0);
        CHECK_INT(back->jobs[i].gpu_mem_mib, tr->jobs[i].gpu_mem_mib);
        CHECK_INT(back->jobs[i].mem_bytes, tr->jobs[i].mem_bytes);
        CHECK_STR(back->jobs[i].user, tr->jobs[i].user);
    }
    CHECK_STR(back->jobs[1].model, "llama,7b");
    free(buf);
    sim_trace_free(back);
    sim_trace_free(tr);
}

TEST(tiresias_maps_gangs) {
    aiq_err e;
    struct sim_trace *tr = read_fixture("tiresias.csv", sim_read_tiresias, NULL, AIQ_OK, &e);
    if (!CHECK_INT(tr->njobs, 4)) {
        sim_trace_free(tr);
        return;
    }
    CHECK_STR(tr->jobs[0].id, "1");
    CHECK_INT(tr->jobs[0].replicas * tr->jobs[0].gpus, 1);
    CHECK_INT(tr->jobs[1].replicas, 2); /* 16 GPUs: two 8-GPU replicas */
    CHECK_INT(tr->jobs[1].gpus, 8);
    CHECK_INT(tr->jobs[2].replicas, 1);
    CHECK_INT(tr->jobs[2].gpus, 4);
    CHECK_INT(tr->jobs[3].replicas, 12); /* 12: not a multiple of 8 */
    CHECK_INT(tr->jobs[3].gpus, 1);
    CHECK_DBL(tr->jobs[1].submit, 30, 0);
    CHECK_DBL(tr->jobs[1].duration_s, 7200, 0);
    CHECK_STR(tr->jobs[1].model, "vgg19");
    CHECK_STR(tr->jobs[1].user, "tiresias");
    CHECK_DBL(tr->jobs[0].estimate_s, 0, 0);
    sim_trace_free(tr);
}

/* On 4-GPU machines every gang is refitted: 16 = 4 x 4, 4 = 1 x 4, 12 =
 * 3 x 4; on 8-GPU machines 12 = 2 x 6; without GPUs an error. */
TEST(tiresias_gangs_fit_the_machines) {
    aiq_err e;
    struct sim_trace *tr = read_fixture("tiresias.csv", sim_read_tiresias, NULL, AIQ_OK, &e);
    if (!CHECK_INT(tr->njobs, 4)) {
        sim_trace_free(tr);
        return;
    }
    aiq_err_clear(&e);
    CHECK_INT(sim_tiresias_fit_nodes(tr, &e), AIQ_EINVAL);
    CHECK(strstr(e.message, "no GPUs") != NULL);
    aiq_err_clear(&e);
    CHECK_INT(sim_nodes_from_spec(tr, "3x4xV100M32", &e), AIQ_OK);
    CHECK_INT(sim_tiresias_fit_nodes(tr, &e), AIQ_OK);
    CHECK_INT(tr->jobs[0].replicas, 1);
    CHECK_INT(tr->jobs[0].gpus, 1);
    CHECK_INT(tr->jobs[1].replicas, 4);
    CHECK_INT(tr->jobs[1].gpus, 4);
    CHECK_INT(tr->jobs[2].replicas, 1);
    CHECK_INT(tr->jobs[2].gpus, 4);
    CHECK_INT(tr->jobs[3].replicas, 3);
    CHECK_INT(tr->jobs[3].gpus, 4);
    CHECK_INT(tr->jobs[3].cpu_milli, 4000); /* per replica */
    sim_trace_free(tr);
    tr = read_fixture("tiresias.csv", sim_read_tiresias, NULL, AIQ_OK, &e);
    aiq_err_clear(&e);
    CHECK_INT(sim_nodes_from_spec(tr, "2x8xV100M32", &e), AIQ_OK);
    CHECK_INT(sim_tiresias_fit_nodes(tr, &e), AIQ_OK);
    CHECK_INT(tr->jobs[1].replicas, 2);
    CHECK_INT(tr->jobs[1].gpus, 8);
    CHECK_INT(tr->jobs[3].replicas, 2);
    CHECK_INT(tr->jobs[3].gpus, 6);
    sim_trace_free(tr);
}

TEST(tiresias_rejects_missing_columns) {
    char text[] = "job_id,submit_time,duration\n1,0,10\n";
    FILE *f = fmemopen(text, strlen(text), "r");
    struct sim_trace *tr = sim_trace_create();
    aiq_err e;
    aiq_err_clear(&e);
    CHECK_INT(sim_read_tiresias(f, "t.csv", tr, &e), AIQ_EPARSE);
    CHECK(strstr(e.message, "missing column 'num_gpu'") != NULL);
    fclose(f);
    sim_trace_free(tr);
}

TEST(alibaba_nodes_and_pods) {
    aiq_err e;
    struct sim_trace *tr =
        read_fixture("alibaba_nodes.csv", sim_read_alibaba_nodes, NULL, AIQ_OK, &e);
    read_fixture("alibaba_pods.csv", sim_read_alibaba_pods, tr, AIQ_OK, &e);
    if (!CHECK_INT(tr->nnodes, 3) || !CHECK_INT(tr->njobs, 5)) {
        sim_trace_free(tr);
        return;
    }
    CHECK_STR(tr->nodes[0].name, "openb-node-0001"); /* CPU-only nodes are kept */
    CHECK_INT(tr->nodes[0].gpus, 0);
    CHECK_INT(tr->nodes[0].gpu_mem_mib, 0);
    CHECK(tr->nodes[0].gpu_model == NULL);
    CHECK_INT(tr->nodes[0].cpu_milli, 32000);
    CHECK_STR(tr->nodes[1].name, "openb-node-0002");
    CHECK_INT(tr->nodes[1].gpus, 8);
    CHECK_INT(tr->nodes[1].gpu_mem_mib, 32768);
    CHECK_INT(tr->nodes[1].cpu_milli, 96000);
    CHECK_INT(tr->nodes[1].mem_bytes, 786432LL * 1048576);
    CHECK_INT(tr->nodes[2].gpu_mem_mib, 16384);
    /* pod 0: a whole GPU, scheduled at 0 */
    CHECK_STR(tr->jobs[0].id, "openb-pod-0000");
    CHECK_INT(tr->jobs[0].gpus, 1);
    CHECK_DBL(tr->jobs[0].duration_s, 12537496, 0);
    CHECK_STR(tr->jobs[0].group, "LS");
    /* pod 1: 460 milli-GPU, no spec: 0.46 of whichever GPU it lands on */
    CHECK_INT(tr->jobs[1].gpus, 0);
    CHECK_INT(tr->jobs[1].gpu_mem_mib, 0);
    CHECK_INT(tr->jobs[1].gpu_milli, 460);
    CHECK_DBL(tr->jobs[1].submit, 100, 0);
    CHECK_DBL(tr->jobs[1].duration_s, 350, 0);
    CHECK(tr->jobs[1].gpu_model == NULL);
    /* pod 2: two whole V100M32 */
    CHECK_INT(tr->jobs[2].gpus, 2);
    CHECK_STR(tr->jobs[2].gpu_model, "V100M32");
    CHECK_STR(tr->jobs[2].user, "BE");
    /* pod 3: a quarter of a T4 (the spec pins the model) */
    CHECK_INT(tr->jobs[3].gpu_mem_mib, 0);
    CHECK_INT(tr->jobs[3].gpu_milli, 250);
    CHECK_STR(tr->jobs[3].gpu_model, "T4");
    CHECK_DBL(tr->jobs[3].duration_s, 990, 0);
    /* pod 4: CPU-only, kept with its CPU and memory */
    CHECK_STR(tr->jobs[4].id, "openb-pod-0004");
    CHECK_INT(tr->jobs[4].gpus, 0);
    CHECK_INT(tr->jobs[4].gpu_mem_mib, 0);
    CHECK_INT(tr->jobs[4].gpu_milli, 0);
    CHECK_INT(tr->jobs[4].cpu_milli, 2000);
    CHECK_INT(tr->jobs[4].mem_bytes, 4096LL * 1048576);
    CHECK(tr->jobs[4].gpu_model == NULL);
    CHECK_DBL(tr->jobs[4].duration_s, 590, 0);
    sim_trace_free(tr);
}

TEST(alibaba_bad_number_names_the_column) {
    char text[] = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
                  "creation_time,deletion_time,scheduled_time\n"
                  "p,1000,1024,1,1500,,LS,Running,0,10,1\n";
    FILE *f = fmemopen(text, strlen(text), "r");
    struct sim_trace *tr = sim_trace_create();
    aiq_err e;
    aiq_err_clear(&e);
    CHECK_INT(sim_read_alibaba_pods(f, "p.csv", tr, &e), AIQ_EPARSE);
    CHECK(strstr(e.message, "p.csv:2:") == e.message);
    CHECK(strstr(e.message, "column 'gpu_milli'") != NULL);
    CHECK(strstr(e.message, "'1500'") != NULL);
    fclose(f);
    sim_trace_free(tr);
}

TEST(gpu_model_memory) {
    CHECK_INT(sim_gpu_model_mib("A100-80GB"), 81920);
    CHECK_INT(sim_gpu_model_mib("NVIDIA-A100-SXM4-40GB"), 40960);
    CHECK_INT(sim_gpu_model_mib("V100M32"), 32768);
    CHECK_INT(sim_gpu_model_mib("G2"), 0);
    CHECK_INT(sim_gpu_model_mib(NULL), 0);
}

TEST(node_spec) {
    struct sim_trace *tr = sim_trace_create();
    aiq_err e;
    aiq_err_clear(&e);
    CHECK_INT(sim_nodes_from_spec(tr, "3x8xA100-80GB,2x4xT4", &e), AIQ_OK);
    CHECK_INT(tr->nnodes, 5);
    CHECK_INT(tr->nodes[0].gpus, 8);
    CHECK_INT(tr->nodes[0].gpu_mem_mib, 81920);
    CHECK_STR(tr->nodes[4].gpu_model, "T4");
    CHECK_INT(tr->nodes[4].gpu_mem_mib, 16384);
    CHECK_INT(tr->nodes[4].cpu_milli, 4 * 16000);
    /* /CORES: 8 GiB a core; /CORES/MEM: MEM GiB */
    CHECK_INT(sim_nodes_from_spec(tr, "1x8xV100M32/96,2x2xT4/104/512", &e), AIQ_OK);
    CHECK_INT(tr->nnodes, 8);
    CHECK_INT(tr->nodes[5].cpu_milli, 96000);
    CHECK_INT(tr->nodes[5].mem_bytes, 96 * 8 * 1073741824LL);
    CHECK_INT(tr->nodes[7].cpu_milli, 104000);
    CHECK_INT(tr->nodes[7].mem_bytes, 512 * 1073741824LL);
    aiq_err_clear(&e);
    CHECK_INT(sim_nodes_from_spec(tr, "1x2xT4/104/0", &e), AIQ_EINVAL);
    CHECK(strstr(e.message, "MEM after the second '/'") != NULL);
    aiq_err_clear(&e);
    CHECK_INT(sim_nodes_from_spec(tr, "1x2xT4//512", &e), AIQ_EINVAL);
    CHECK(strstr(e.message, "CORES after '/'") != NULL);
    CHECK_INT(tr->nnodes, 8);
    aiq_err_clear(&e);
    CHECK_INT(sim_nodes_from_spec(tr, "3x20xA100", &e), AIQ_EINVAL);
    CHECK(strstr(e.message, "'3x20xA100'") != NULL);
    aiq_err_clear(&e);
    CHECK_INT(sim_nodes_from_spec(tr, "2x8xMystery", &e), AIQ_EINVAL);
    sim_trace_free(tr);
}

static char *gen_csv(uint64_t seed, int n) {
    struct sim_gen_opts o = {.seed = seed, .njobs = n, .ngroups = 3, .users_per_group = 4, .mean_interarrival_s = 60};
    struct sim_trace *tr = sim_trace_create();
    aiq_err e;
    char *buf = NULL;
    size_t len = 0;
    CHECK_INT(sim_generate(tr, &o, &e), AIQ_OK);
    FILE *out = open_memstream(&buf, &len);
    sim_write_csv(tr, out, &e);
    fclose(out);
    sim_trace_free(tr);
    return buf;
}

TEST(generator_is_seeded_and_mixed) {
    char *a = gen_csv(11, 400), *b = gen_csv(11, 400), *c = gen_csv(12, 400);
    CHECK_STR(a, b);
    CHECK(strcmp(a, c) != 0);
    free(a);
    free(b);
    free(c);
    struct sim_gen_opts o = {.seed = 5, .njobs = 2000, .ngroups = 4, .users_per_group = 5};
    struct sim_trace *tr = sim_trace_create();
    aiq_err e;
    CHECK_INT(sim_generate(tr, &o, &e), AIQ_OK);
    int sizes[17] = {0}, shares = 0, groups_seen[4] = {0}, sorted = 1, est = 0;
    double maxd = 0, sumd = 0;
    for (int i = 0; i < tr->njobs; i++) {
        const struct sim_job *j = &tr->jobs[i];
        int total = j->replicas * j->gpus;
        if (j->gpus == 0)
            shares++;
        else if (total <= 16)
            sizes[total]++;
        groups_seen[j->group[6] - '0'] = 1;
        if (i && j->submit < tr->jobs[i - 1].submit)
            sorted = 0;
        if (j->duration_s > maxd)
            maxd = j->duration_s;
        sumd += j->duration_s;
        est += j->estimate_s > 0;
    }
    CHECK(sorted);
    CHECK(sizes[1] > 0 && sizes[2] > 0 && sizes[4] > 0 && sizes[8] > 0 && sizes[16] > 0);
    CHECK(shares > 0);
    CHECK(groups_seen[0] && groups_seen[1] && groups_seen[2] && groups_seen[3]);
    /* heavy tail: the longest job is far above the mean */
    CHECK(maxd > 10 * sumd / tr->njobs);
    CHECK(est > tr->njobs / 2 && est < tr->njobs);
    aiq_err_clear(&e);
    struct sim_gen_opts bad = {.seed = 1};
    CHECK_INT(sim_generate(tr, &bad, &e), AIQ_EINVAL);
    sim_trace_free(tr);
}

/* The estimate knobs (aiq-sim gen --estimate-share, --estimate-noise):
 * with a share of 1 every job has an estimate; with no noise each user's
 * estimate / runtime is one number (the bias; flooring aside); across
 * noise scales the trace is the same but for the estimates; a share of 0
 * gives none; out-of-range values are refused naming the field. */
TEST(generator_estimate_share_and_noise) {
    struct sim_trace *t[3] = {sim_trace_create(), sim_trace_create(), sim_trace_create()};
    const double noise[3] = {0, 0.3, 0};
    const double share[3] = {1, 1, 0};
    aiq_err e;
    for (int k = 0; k < 3; k++) {
        struct sim_gen_opts o = {.seed = 4, .njobs = 600, .estimates_set = true,
                                 .estimate_share = share[k], .estimate_noise = noise[k]};
        aiq_err_clear(&e);
        if (!CHECK(t[k]) || !CHECK_INT(sim_generate(t[k], &o, &e), AIQ_OK))
            goto out;
    }
    if (!CHECK_INT(t[0]->njobs, 600) || !CHECK_INT(t[1]->njobs, 600))
        goto out;
    int without = 0, off = 0, differ = 0, est2 = 0;
    double ratio[64 * 256];
    for (size_t u = 0; u < sizeof ratio / sizeof ratio[0]; u++)
        ratio[u] = -1;
    for (int i = 0; i < 600; i++) {
        const struct sim_job *a = &t[0]->jobs[i], *b = &t[1]->jobs[i];
        without += a->estimate_s <= 0;
        est2 += t[2]->jobs[i].estimate_s > 0;
        /* the same job but for its estimate */
        differ += a->submit != b->submit || a->duration_s != b->duration_s ||
                  strcmp(a->user, b->user) != 0 || a->gpus != b->gpus ||
                  a->replicas != b->replicas || a->estimate_s == b->estimate_s;
        /* the user's index from its name, "uGG-UU" */
        char *end = NULL;
        long g = a->user[0] == 'u' ? strtol(a->user + 1, &end, 10) : -1;
        long u = end && *end == '-' ? strtol(end + 1, NULL, 10) : -1;
        if (g < 0 || g >= 64 || u < 0 || u >= 256 || a->duration_s < 600) /* flooring */
            continue;
        double r = a->estimate_s / a->duration_s, *have = &ratio[g * 256 + u];
        if (*have < 0)
            *have = r;
        else if (fabs(r / *have - 1) > 0.01)
            off++;
    }
    CHECK_INT(without, 0);
    CHECK_INT(off, 0);
    CHECK(differ < 6); /* an estimate may floor to the same second by chance */
    CHECK_INT(est2, 0);
    struct sim_gen_opts bad = {.seed = 1, .njobs = 5, .estimates_set = true,
                               .estimate_share = 1, .estimate_noise = 2.5};
    aiq_err_clear(&e);
    CHECK_INT(sim_generate(t[2], &bad, &e), AIQ_EINVAL);
    CHECK_STR(e.field, "estimate-noise");
    bad.estimate_noise = 0.3;
    bad.estimate_share = 1.5;
    aiq_err_clear(&e);
    CHECK_INT(sim_generate(t[2], &bad, &e), AIQ_EINVAL);
    CHECK(strstr(e.message, "estimate-share: must be 0..1, got 1.5") != NULL);
    bad.estimate_share = 1;
    bad.tiresias = true; /* no estimates there: refused, not ignored */
    aiq_err_clear(&e);
    CHECK_INT(sim_generate(t[2], &bad, &e), AIQ_EINVAL);
    CHECK(strstr(e.message, "the Tiresias profile has no estimates") != NULL);
out:
    for (int k = 0; k < 3; k++)
        sim_trace_free(t[k]);
}

/* The FGD mixes draw the openb pod lists' shapes (trace_gen_fgd.c): the
 * expected fractions are those of the kept shapes, within 0.02 (about 4
 * standard deviations at 4,000 tasks). */
TEST(generator_fgd_mixes_follow_the_openb_tallies) {
    static const struct {
        int mix;
        double cpu, share, one, eight, s810, s470;
    } want[] = {
        /* CPU-only, shares, 1-GPU and 8-GPU tasks, shares of 0.81, 0.47 */
        {SIM_MIX_WHOLE, 0, 0, 0.9884, 0.0093, 0, 0},
        {SIM_MIX_MULTI, 0.1167, 0.3385, 0.4329, 0.0632, 0.1226, 0.0851},
        {SIM_MIX_SHARE, 0.1297, 0.8703, 0, 0, 0.3079, 0.2178},
        {SIM_MIX_DEFAULT, 0.1325, 0.3785, 0.4833, 0.0046, 0.1363, 0.0946},
    };
    for (size_t w = 0; w < sizeof want / sizeof want[0]; w++) {
        struct sim_gen_opts o = {.seed = 9, .njobs = 4000, .fgd_mix = want[w].mix};
        struct sim_trace *tr = sim_trace_create();
        aiq_err e;
        if (!CHECK(tr) || !CHECK_INT(sim_generate(tr, &o, &e), AIQ_OK)) {
            sim_trace_free(tr);
            return;
        }
        double n = tr->njobs, cpu = 0, share = 0, one = 0, eight = 0, s810 = 0, s470 = 0;
        int bad = 0;
        for (int i = 0; i < tr->njobs; i++) {
            const struct sim_job *j = &tr->jobs[i];
            bad += j->replicas != 1 || j->gpu_mem_mib != 0 || j->cpu_milli <= 0 ||
                   (j->gpus > 0 && j->gpu_milli != 0);
            cpu += j->gpus == 0 && j->gpu_milli == 0;
            share += j->gpu_milli > 0;
            one += j->gpus == 1;
            eight += j->gpus == 8;
            s810 += j->gpu_milli == 810;
            s470 += j->gpu_milli == 470;
        }
        CHECK_INT(bad, 0);
        CHECK(fabs(cpu / n - want[w].cpu) < 0.02 && fabs(share / n - want[w].share) < 0.02);
        CHECK(fabs(one / n - want[w].one) < 0.02 && fabs(eight / n - want[w].eight) < 0.02);
        CHECK(fabs(s810 / n - want[w].s810) < 0.02 && fabs(s470 / n - want[w].s470) < 0.02);
        sim_trace_free(tr);
    }
}

/* Every reader skips blank lines, and names the line of a row whose field
 * count differs from its header; only our CSV treats '#' lines as comments. */
TEST(readers_check_field_counts_and_skip_blank_lines) {
    static const struct {
        aiq_rc (*read)(FILE *, const char *, struct sim_trace *, aiq_err *);
        const char *text, *msg;
    } cases[] = {
        {sim_read_csv, "submit_s,duration_s,id\n# note\n\n0,1,a\n5,2\n",
         "t:5:1: expected 3 fields as in the header, got 2"},
        {sim_read_tiresias,
         "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n\n"
         "1,1,0,10,resnet,60,1\n2,1,5\n",
         "t:4:1: expected 7 fields as in the header, got 3"},
        {sim_read_tiresias,
         "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n# note\n",
         "t:2:1: expected 7 fields as in the header, got 1"},
        {sim_read_alibaba_nodes, "sn,cpu_milli,memory_mib,gpu,model\n\nn1,96000,786432,8,V100M32\nn2,1\n",
         "t:4:1: expected 5 fields as in the header, got 2"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        FILE *f = fmemopen((void *)cases[i].text, strlen(cases[i].text), "r");
        struct sim_trace *tr = sim_trace_create();
        aiq_err e;
        aiq_err_clear(&e);
        CHECK_INT(cases[i].read(f, "t", tr, &e), AIQ_EPARSE);
        CHECK_STR(e.message, cases[i].msg);
        fclose(f);
        sim_trace_free(tr);
    }
}

/* An empty file names what header was expected, at 1:1; our CSV first
 * skips comment and blank lines. */
TEST(readers_name_the_expected_header_of_an_empty_file) {
    static const struct {
        aiq_rc (*read)(FILE *, const char *, struct sim_trace *, aiq_err *);
        const char *text, *msg;
    } cases[] = {
        {sim_read_csv, "# only a comment\n\n",
         "t:1:1: empty file: expected a header line (id,submit_s,user,...)"},
        {sim_read_tiresias, "", "t:1:1: empty file: expected the header job_id,num_gpu,submit_time,..."},
        {sim_read_alibaba_nodes, "", "t:1:1: empty file: expected the header sn,cpu_milli,memory_mib,gpu,model"},
        {sim_read_alibaba_pods, "",
         "t:1:1: empty file: expected the header name,cpu_milli,memory_mib,num_gpu,gpu_milli,..."},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = strlen(cases[i].text);
        FILE *f = n ? fmemopen((void *)cases[i].text, n, "r") : fopen("/dev/null", "r");
        struct sim_trace *tr = sim_trace_create();
        aiq_err e;
        aiq_err_clear(&e);
        CHECK_INT(cases[i].read(f, "t", tr, &e), AIQ_EPARSE);
        CHECK_STR(e.message, cases[i].msg);
        CHECK_INT(e.line, 1);
        fclose(f);
        sim_trace_free(tr);
    }
}

/* The Tiresias-like profile and the later options: one user, no estimates,
 * priorities or shares, sizes capped, checkpointing and elastic fractions;
 * the new columns survive a CSV round trip; older seeds' traces are
 * unchanged by options left at zero (the first job of seed 11 as it
 * always was). */
TEST(generator_tiresias_profile_and_options) {
    struct sim_gen_opts o = {.seed = 3, .njobs = 3000, .tiresias = true, .max_gpus = 8,
                             .checkpoint_frac = 1, .checkpoint_s = 900, .elastic_frac = 0.5};
    struct sim_trace *tr = sim_trace_create();
    aiq_err e;
    aiq_err_clear(&e);
    CHECK_INT(sim_generate(tr, &o, &e), AIQ_OK);
    int elastic = 0, big = 0, shares = 0, est = 0, prio = 0, other_user = 0, long_jobs = 0;
    double sumd = 0;
    for (int i = 0; i < tr->njobs; i++) {
        const struct sim_job *j = &tr->jobs[i];
        int total = j->replicas * j->gpus;
        big += total > 8;
        shares += j->gpus == 0;
        est += j->estimate_s > 0;
        prio += j->priority != 0;
        other_user += strcmp(j->user, tr->jobs[0].user) != 0 || strcmp(j->group, tr->jobs[0].group) != 0;
        CHECK_DBL(j->checkpoint_s, 900, 0);
        if (j->max_replicas > 0) {
            elastic++;
            CHECK(j->gpus == 1 && j->min_replicas == j->replicas / 2 &&
                  j->max_replicas == (2 * j->replicas > 16 ? 16 : 2 * j->replicas));
        }
        sumd += j->duration_s;
        long_jobs += j->duration_s > 10 * 3600;
    }
    CHECK_INT(big, 0);
    CHECK_INT(shares, 0);
    CHECK_INT(est, 0);
    CHECK_INT(prio, 0);
    CHECK_INT(other_user, 0);
    CHECK(elastic > tr->njobs / 5 && elastic < tr->njobs / 2);
    /* heavy-tailed around a median of 30 minutes */
    CHECK(long_jobs > tr->njobs / 50);
    CHECK(sumd / tr->njobs > 3600);
    /* round trip of the new columns */
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    CHECK_INT(sim_write_csv(tr, out, &e), AIQ_OK);
    fclose(out);
    FILE *in = fmemopen(buf, len, "r");
    struct sim_trace *back = sim_trace_create();
    CHECK_INT(sim_read_csv(in, "mem", back, &e), AIQ_OK);
    fclose(in);
    for (int i = 0; i < tr->njobs && i < back->njobs; i++) {
        if (back->jobs[i].min_replicas != tr->jobs[i].min_replicas ||
            back->jobs[i].max_replicas != tr->jobs[i].max_replicas ||
            back->jobs[i].checkpoint_s != tr->jobs[i].checkpoint_s) {
            CHECK(0);
            break;
        }
    }
    free(buf);
    sim_trace_free(back);
    sim_trace_free(tr);
    /* zero options: the old traces */
    char *a = gen_csv(11, 3);
    CHECK(strstr(a, "\njob-000001,") != NULL);
    CHECK(strstr(a, ",0,0,0\n") != NULL);
    free(a);
    /* bad elastic columns are named */
    static const char bad[] = "submit_s,duration_s,min_replicas,max_replicas\n0,60,4,2\n";
    in = fmemopen((void *)bad, sizeof bad - 1, "r");
    back = sim_trace_create();
    aiq_err_clear(&e);
    CHECK_INT(sim_read_csv(in, "b.csv", back, &e), AIQ_EPARSE);
    CHECK_STR(e.message, "b.csv:2:8: column 'max_replicas': an elastic job needs 1 <= min_replicas "
                         "<= max_replicas, got 4..2");
    fclose(in);
    sim_trace_free(back);
    struct sim_gen_opts worse = {.seed = 1, .njobs = 5, .checkpoint_frac = 2};
    tr = sim_trace_create();
    CHECK_INT(sim_generate(tr, &worse, &e), AIQ_EINVAL);
    sim_trace_free(tr);
}
