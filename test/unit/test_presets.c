/* test_presets.c -- the QueuePolicy presets in examples/policies/: each
 * compiles (formula and every level's `when`), the last level is the
 * catch-all, only fifo is active, and each ranks a fixed set of jobs in
 * the order its comment promises; each placement preset compiles its
 * placementScore and picks the candidate its comment promises.
 *
 * The YAML is read here with libyaml directly (spec.formula,
 * spec.levels[].name/when, spec.active), independent of the operator's
 * manifest parser. Ranking: the first level whose `when` holds (else the
 * last), then the higher score, then input order. */
#include <stdlib.h>
#include <yaml.h>

#include "operator/manifest.h"
#include "policy/fx.h"
#include "test/unit/th.h"

#define MAX_LEVELS 16

typedef struct {
    char *formula;
    int nlevels;
    char *name[MAX_LEVELS];
    char *when[MAX_LEVELS]; /* NULL: catch-all */
    int active;
    fx_prog *score;
    fx_prog *pred[MAX_LEVELS];
    char *place_src;    /* spec.placementScore, NULL when none */
    fx_prog *place;
} preset;

static yaml_node_t *map_get(yaml_document_t *d, yaml_node_t *m, const char *key) {
    if (!m || m->type != YAML_MAPPING_NODE) return NULL;
    for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(d, p->key);
        if (k && k->type == YAML_SCALAR_NODE && strcmp((char *)k->data.scalar.value, key) == 0)
            return yaml_document_get_node(d, p->value);
    }
    return NULL;
}

static char *scalar_dup(yaml_node_t *n) {
    if (!n || n->type != YAML_SCALAR_NODE) return NULL;
    return strdup((char *)n->data.scalar.value);
}

static void preset_free(preset *p) {
    free(p->formula);
    fx_free(p->score);
    free(p->place_src);
    fx_free(p->place);
    for (int i = 0; i < p->nlevels; i++) {
        free(p->name[i]);
        free(p->when[i]);
        fx_free(p->pred[i]);
    }
    memset(p, 0, sizeof *p);
}

/* Loads examples/policies/<name>.yaml and compiles it; returns 0 or -1
 * (with a failed check and a message). */
static int preset_load(const char *name, preset *p) {
    memset(p, 0, sizeof *p);
    char path[512];
    snprintf(path, sizeof path, "%s/examples/policies/%s.yaml", th_srcdir(), name);
    FILE *fp = fopen(path, "rb");
    if (!CHECK(fp != NULL)) { printf("  cannot open %s\n", path); return -1; }
    yaml_parser_t parser;
    yaml_document_t doc;
    int rc = -1;
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_file(&parser, fp);
    if (!CHECK(yaml_parser_load(&parser, &doc))) {
        printf("  %s: YAML error: %s\n", path, parser.problem ? parser.problem : "?");
        yaml_parser_delete(&parser);
        fclose(fp);
        return -1;
    }
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    yaml_node_t *kind = map_get(&doc, root, "kind");
    CHECK(kind && kind->type == YAML_SCALAR_NODE &&
          strcmp((char *)kind->data.scalar.value, "QueuePolicy") == 0);
    yaml_node_t *api = map_get(&doc, root, "apiVersion");
    CHECK(api && api->type == YAML_SCALAR_NODE && strcmp((char *)api->data.scalar.value, "aiq.dev/v1alpha1") == 0);
    yaml_node_t *md = map_get(&doc, root, "metadata");
    yaml_node_t *mn = map_get(&doc, md, "name");
    CHECK(mn && mn->type == YAML_SCALAR_NODE && strcmp((char *)mn->data.scalar.value, name) == 0);
    yaml_node_t *spec = map_get(&doc, root, "spec");
    p->formula = scalar_dup(map_get(&doc, spec, "formula"));
    p->place_src = scalar_dup(map_get(&doc, spec, "placementScore"));
    yaml_node_t *act = map_get(&doc, spec, "active");
    p->active = act && act->type == YAML_SCALAR_NODE && strcmp((char *)act->data.scalar.value, "true") == 0;
    yaml_node_t *lv = map_get(&doc, spec, "levels");
    if (lv && lv->type == YAML_SEQUENCE_NODE) {
        for (yaml_node_item_t *it = lv->data.sequence.items.start;
             it < lv->data.sequence.items.top && p->nlevels < MAX_LEVELS; it++) {
            yaml_node_t *l = yaml_document_get_node(&doc, *it);
            p->name[p->nlevels] = scalar_dup(map_get(&doc, l, "name"));
            p->when[p->nlevels] = scalar_dup(map_get(&doc, l, "when"));
            p->nlevels++;
        }
    }
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    fclose(fp);

    if (!CHECK(p->formula != NULL) || !CHECK(p->nlevels >= 1)) goto out;
    aiq_err e;
    aiq_err_clear(&e);
    p->score = fx_compile(p->formula, FX_EXPR, &e);
    if (!CHECK(p->score != NULL)) {
        char buf[1024];
        fx_format_error(p->formula, &e, buf, sizeof buf);
        printf("  %s formula: %s\n", name, buf);
        goto out;
    }
    if (p->place_src) {
        aiq_err_clear(&e);
        p->place = fx_compile_placement(p->place_src, &e);
        if (!CHECK(p->place != NULL)) {
            printf("  %s placementScore: %s\n", name, e.message);
            goto out;
        }
    }
    for (int i = 0; i < p->nlevels; i++) {
        CHECK(p->name[i] != NULL);
        if (i == p->nlevels - 1) {
            if (!CHECK(p->when[i] == NULL)) printf("  %s: last level has a when\n", name);
            continue;
        }
        if (!CHECK(p->when[i] != NULL)) { printf("  %s: level %d has no when\n", name, i); goto out; }
        aiq_err_clear(&e);
        p->pred[i] = fx_compile(p->when[i], FX_PREDICATE, &e);
        if (!CHECK(p->pred[i] != NULL)) {
            printf("  %s level %s: %s\n", name, p->name[i], e.message);
            goto out;
        }
    }
    rc = 0;
out:
    return rc;
}

static int level_of(const preset *p, const double *f) {
    for (int i = 0; i < p->nlevels - 1; i++)
        if (fx_eval(p->pred[i], f) != 0) return i;
    return p->nlevels - 1;
}

/* A job's factors by name, for readable tables; unset ones are 0 except
 * cluster.total_gpus (64) and job.gpus (1). */
typedef struct {
    const char *id;
    double age, wait, prio, ulevel, glevel, gpus, predicted, attained, fs_user, fs_group;
    double run; /* running: hours since it started (scored for growth and victims) */
    double ckpt; /* 1: declares it checkpoints */
} job;

static void job_factors(const job *j, double *f) {
    for (int i = 0; i < FX_NFACTORS; i++) f[i] = 0;
    f[FX_F_JOB_AGE_HOURS] = j->age;
    f[FX_F_WAIT_HOURS] = j->wait;
    f[FX_F_JOB_PRIORITY] = j->prio;
    f[FX_F_USER_LEVEL] = j->ulevel;
    f[FX_F_GROUP_LEVEL] = j->glevel;
    f[FX_F_JOB_GPUS] = j->gpus > 0 ? j->gpus : 1;
    f[FX_F_RUNTIME_PREDICTED_HOURS] = j->predicted;
    f[FX_F_ATTAINED_GPU_HOURS] = j->attained;
    f[FX_F_FAIRSHARE_USER] = j->fs_user;
    f[FX_F_FAIRSHARE_GROUP] = j->fs_group;
    f[FX_F_CLUSTER_TOTAL_GPUS] = 64;
    f[FX_F_JOB_REPLICAS] = 1;
    f[FX_F_RUN_HOURS] = j->run;
    f[FX_F_JOB_RUNNING] = j->run > 0;
    f[FX_F_JOB_CHECKPOINTABLE] = j->ckpt;
}

/* Ranks jobs with preset name and compares the ids, in order, with want
 * (space separated). */
static void check_order(const char *name, const job *jobs, int n, const char *want) {
    preset p;
    if (preset_load(name, &p) != 0) { preset_free(&p); return; }
    int idx[32], lvl[32];
    double sc[32], f[FX_NFACTORS];
    for (int i = 0; i < n; i++) {
        job_factors(&jobs[i], f);
        idx[i] = i;
        lvl[i] = level_of(&p, f);
        sc[i] = fx_eval(p.score, f);
    }
    for (int i = 1; i < n; i++) /* insertion sort: level, score desc, input order */
        for (int k = i; k > 0; k--) {
            int a = idx[k - 1], b = idx[k];
            int before = lvl[b] < lvl[a] || (lvl[b] == lvl[a] && sc[b] > sc[a]);
            if (!before) break;
            idx[k - 1] = b;
            idx[k] = a;
        }
    char got[256] = "";
    for (int i = 0; i < n; i++) {
        size_t l = strlen(got);
        snprintf(got + l, sizeof got - l, "%s%s", i ? " " : "", jobs[idx[i]].id);
    }
    if (!CHECK_STR(got, want)) {
        for (int i = 0; i < n; i++)
            printf("  %s: level %s score %.6f\n", jobs[i].id, p.name[lvl[i]], sc[i]);
    }
    preset_free(&p);
}

TEST(presets_compile_and_only_fifo_is_active) {
    static const char *const names[] = {"fifo", "priority", "srjf", "tiresias-las",
                                        "fairshare", "slurm-multifactor", "elastic-fifo",
                                        "elastic-srjf", "elastic-tiresias", "binpack", "spread",
                                        "fgd", "utilization-aware"};
    int active = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        preset p;
        if (preset_load(names[i], &p) == 0) {
            if (p.active) { active++; CHECK_STR(names[i], "fifo"); }
        }
        preset_free(&p);
    }
    CHECK_INT(active, 1);
}

TEST(preset_fifo_oldest_first) {
    /* priority, size and level do not matter, only age */
    static const job j[] = {
        {.id = "b", .age = 5, .wait = 1},
        {.id = "d", .age = 1, .wait = 1, .prio = 1000, .ulevel = 500},
        {.id = "a", .age = 10, .wait = 2, .gpus = 64},
        {.id = "c", .age = 3, .wait = 3},
    };
    check_order("fifo", j, 4, "a b c d");
}

TEST(preset_priority_levels_then_lexicographic) {
    static const job j[] = {
        {.id = "low-old", .prio = 0, .wait = 20},
        {.id = "urgent-user", .prio = 0, .ulevel = 150},
        {.id = "normal-lvl5", .prio = 500, .ulevel = 5},
        {.id = "low-prio50", .prio = 50},
        {.id = "urgent-prio", .prio = 2000},
        {.id = "normal-lvl7", .prio = 500, .ulevel = 7, .glevel = 0},
        {.id = "normal-lvl5-g9", .prio = 500, .ulevel = 5, .glevel = 9},
        {.id = "starved", .prio = 0, .wait = 30},
        {.id = "low-new", .prio = 0, .wait = 1},
    };
    check_order("priority", j, 9,
                "urgent-prio urgent-user normal-lvl7 normal-lvl5-g9 normal-lvl5 starved "
                "low-prio50 low-old low-new");
}

TEST(preset_srjf_shortest_predicted_first) {
    static const job j[] = {
        {.id = "10h", .predicted = 10, .wait = 5},
        {.id = "unknown", .predicted = 0, .wait = 5},     /* counts as 24h */
        {.id = "30m", .predicted = 0.5, .wait = 1},
        {.id = "2h-new", .predicted = 2, .wait = 1},
        {.id = "2h-old", .predicted = 2, .wait = 9},      /* tie: longer wait */
        {.id = "starving", .predicted = 30, .wait = 50},  /* waited 48h+ */
        {.id = "25h", .predicted = 25, .wait = 5},
    };
    check_order("srjf", j, 7, "starving 30m 2h-old 2h-new 10h unknown 25h");
}

TEST(preset_tiresias_two_levels_by_attained_service) {
    static const job j[] = {
        {.id = "fresh-young", .attained = 0.2, .age = 1, .wait = 1},
        {.id = "served-old", .attained = 3, .age = 20, .wait = 2},
        {.id = "fresh-old", .attained = 0.9, .age = 5, .wait = 5},
        {.id = "served-starving", .attained = 5, .age = 14, .wait = 13},
        {.id = "served-edge", .attained = 1, .age = 30, .wait = 1},  /* 1 GPU-hour: served */
    };
    check_order("tiresias-las", j, 5,
                "served-starving fresh-old fresh-young served-edge served-old");
}

TEST(preset_fairshare_least_used_first) {
    static const job j[] = {
        {.id = "heavy", .fs_user = 0.2, .wait = 20},
        {.id = "light", .fs_user = 0.9, .wait = 0},
        {.id = "mid-new", .fs_user = 0.5, .wait = 1},
        {.id = "mid-old", .fs_user = 0.5, .wait = 10},
        {.id = "unused", .fs_user = 1.0, .wait = 0, .prio = 0},
    };
    check_order("fairshare", j, 5, "unused light mid-old mid-new heavy");
}

TEST(preset_slurm_multifactor_numbers_and_order) {
    static const job j[] = {
        {.id = "j1", .fs_user = 0.125, .wait = 168, .gpus = 8},   /* 1250+1000+125 = 2375 */
        {.id = "j2", .fs_user = 0.5, .wait = 0, .gpus = 1},       /* 5000+15.625 */
        {.id = "j3", .fs_user = 0.5, .wait = 336, .gpus = 1},     /* age capped: 6015.625 */
        {.id = "j4", .fs_user = 0.125, .prio = 1000, .gpus = 1},  /* 1250+2000+15.625 */
        {.id = "j5", .fs_user = 0.125, .gpus = 64},               /* 1250+1000 */
        {.id = "j6", .fs_user = 0.125, .prio = 5000, .gpus = 1},  /* QOS capped: = j4 */
    };
    check_order("slurm-multifactor", j, 6, "j3 j2 j4 j6 j1 j5");
    /* the numbers a Slurm admin would compute by hand */
    preset p;
    if (preset_load("slurm-multifactor", &p) == 0) {
        double f[FX_NFACTORS];
        static const double want[] = {2375, 5015.625, 6015.625, 3265.625, 2250, 3265.625};
        for (int i = 0; i < 6; i++) {
            job_factors(&j[i], f);
            CHECK_DBL(fx_eval(p.score, f), want[i], 1e-9);
        }
        /* sprio-like explain: age, fair-share, size, QOS */
        fx_term t[8];
        job_factors(&j[0], f);
        CHECK_INT(fx_explain(p.score, f, t, 8), 4);
        CHECK_DBL(t[0].value, 1000, 1e-9);
        CHECK_DBL(t[1].value, 1250, 1e-9);
        CHECK_DBL(t[2].value, 125, 1e-9);
        CHECK_DBL(t[3].value, 0, 1e-9);
        CHECK_STR(t[1].label, "10000 * fairshare.user");
    }
    preset_free(&p);
}

TEST(preset_elastic_fifo_oldest_first_running_or_not) {
    static const job j[] = {
        {.id = "new", .age = 1},
        {.id = "old-running", .age = 9, .run = 8},
        {.id = "mid", .age = 5, .prio = 1000},
    };
    check_order("elastic-fifo", j, 3, "old-running mid new");
}

TEST(preset_elastic_srjf_least_work_left_first) {
    /* a running job ranks by what is left of its prediction */
    static const job j[] = {
        {.id = "waiting-3h", .predicted = 3, .wait = 1},
        {.id = "running-10h-9h-in", .predicted = 10, .run = 9},
        {.id = "running-4h-1h-in", .predicted = 4, .run = 1},
        {.id = "unknown", .predicted = 0, .wait = 2},
        {.id = "overdue", .predicted = 2, .run = 5},  /* past its prediction: 0 left */
    };
    check_order("elastic-srjf", j, 5,
                "overdue running-10h-9h-in waiting-3h running-4h-1h-in unknown");
}

TEST(preset_elastic_tiresias_as_tiresias) {
    static const job j[] = {
        {.id = "served-running", .attained = 4, .age = 30, .run = 2, .ckpt = 1},
        {.id = "fresh-running", .attained = 0.5, .age = 2, .run = 0.5},
        {.id = "fresh-waiting", .attained = 0, .age = 3, .wait = 3},
        {.id = "served-starving", .attained = 2, .age = 20, .wait = 13},
    };
    check_order("elastic-tiresias", j, 4,
                "served-starving fresh-waiting fresh-running served-running");
}

/* Running jobs are demoted by attained service only when they checkpoint:
 * a running job that does not stays "fresh" (nobody preempts it), a
 * waiting one is ranked as before. */
TEST(preset_tiresias_demotes_only_checkpointing_running_jobs) {
    static const job j[] = {
        {.id = "served-ckpt-running", .attained = 4, .age = 30, .run = 2, .ckpt = 1},
        {.id = "served-no-ckpt-running", .attained = 4, .age = 25, .run = 2},
        {.id = "served-no-ckpt-waiting", .attained = 4, .age = 40, .wait = 1},
        {.id = "fresh-waiting", .attained = 0, .age = 3, .wait = 3},
    };
    check_order("tiresias-las", j, 4,
                "served-no-ckpt-running fresh-waiting served-no-ckpt-waiting served-ckpt-running");
}

/* The presets' preemption and elastic settings, through the operator's
 * own decoder (what the queue gets). */
TEST(preset_preemption_and_elastic_settings) {
    static const struct {
        const char *name;
        bool lower, grow;
        double min_runtime;
        int per_hour;
    } want[] = {
        {"fifo", false, true, 0, 0},
        {"tiresias-las", true, true, 300, 2},
        {"elastic-fifo", false, true, 0, 0},
        {"elastic-srjf", false, true, 0, 0},
        {"elastic-tiresias", true, true, 300, 2},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/examples/policies/%s.yaml", th_srcdir(), want[i].name);
        struct aiq_manifest *m = NULL;
        int n = 0;
        aiq_err e;
        aiq_err_clear(&e);
        if (!CHECK_INT(aiq_manifest_parse_file(path, &m, &n, &e), AIQ_OK) || !CHECK_INT(n, 1) ||
            !CHECK_INT(m[0].rc, AIQ_OK)) {
            printf("  %s: %s\n", want[i].name, n > 0 ? m[0].err.message : e.message);
            aiq_manifests_free(m, n);
            continue;
        }
        const struct aiq_policy_spec *s = &m[0].u.policy.spec;
        if (!CHECK(s->preempt_lower_levels == want[i].lower) ||
            !CHECK(!s->elastic_no_grow == want[i].grow) ||
            !CHECK_DBL(s->preempt_min_runtime_s, want[i].min_runtime, 0) ||
            !CHECK_INT(s->preempt_max_per_hour, want[i].per_hour))
            printf("  %s\n", want[i].name);
        CHECK(!s->preempt_within_level);
        aiq_manifests_free(m, n);
    }
}

/* ---- placement presets ------------------------------------------------ */

/* A placement candidate by the factors that tell them apart. */
typedef struct {
    const char *id;
    double free_after, mem_free_after, delta, util, same_node;
} cand;

/* The id of the candidate preset name scores highest (first on ties);
 * util_known applies to every candidate. */
static const char *pick(const char *name, const cand *c, int n, int util_known) {
    preset p;
    const char *best = "?";
    if (preset_load(name, &p) != 0 || !CHECK(p.place != NULL)) {
        preset_free(&p);
        return best;
    }
    double bs = 0;
    for (int i = 0; i < n; i++) {
        double f[FX_NPFACTORS] = {0};
        f[FX_PF_NODE_GPUS] = 8;
        f[FX_PF_NODE_FREE_GPUS_AFTER] = c[i].free_after;
        f[FX_PF_NODE_GPU_MEM_FREE_AFTER] = c[i].mem_free_after;
        f[FX_PF_FRAG_DELTA] = c[i].delta;
        f[FX_PF_UTIL_KNOWN] = util_known;
        f[FX_PF_GPU_UTIL] = util_known ? c[i].util : 0;
        f[FX_PF_GANG_SAME_NODE] = c[i].same_node;
        double s = fx_eval(p.place, f);
        if (i == 0 || s > bs) {
            bs = s;
            best = c[i].id;
        }
    }
    preset_free(&p);
    return best;
}

TEST(placement_presets_pick_what_they_promise) {
    /* full: leaves no free GPU but fragments; roomy: 3 free, busy-free
     * GPUs but next to its gang; tidy: lowers fragmentation; idle: the
     * least busy GPUs. */
    static const cand c[] = {
        {"full", 0, 10, 0.5, 0.9, 0},
        {"roomy", 3, 300, 0.0, 0.4, 1},
        {"tidy", 2, 200, -0.2, 0.5, 0},
        {"idle", 1, 100, 0.3, 0.0, 0},
    };
    CHECK_STR(pick("binpack", c, 4, 0), "full");
    CHECK_STR(pick("spread", c, 4, 0), "tidy"); /* roomy holds a replica of the gang */
    CHECK_STR(pick("spread", c, 2, 0), "full"); /* ... unless nothing else takes it */
    CHECK_STR(pick("fgd", c, 4, 0), "tidy");
    CHECK_STR(pick("utilization-aware", c, 4, 1), "idle");
    CHECK_STR(pick("utilization-aware", c, 4, 0), "full"); /* unknown: binpack */
}

TEST(placement_score_errors_name_the_factor_table) {
    aiq_err e;
    aiq_err_clear(&e);
    CHECK(fx_compile_placement("- job.gpus", &e) == NULL);
    CHECK(strstr(e.message, "'job.gpus' is a job factor") != NULL);
    aiq_err_clear(&e);
    CHECK(fx_compile("frag.delta", FX_EXPR, &e) == NULL);
    CHECK(strstr(e.message, "'frag.delta' is a placement factor") != NULL);
    aiq_err_clear(&e);
    CHECK(fx_compile_placement("node.free_gpu", &e) == NULL);
    CHECK(strstr(e.message, "did you mean 'node.free_gpus'") != NULL);
    fx_prog *p = fx_compile_placement("2 * node.gpus - frag.delta", &e);
    if (CHECK(p != NULL)) {
        double f[FX_NPFACTORS] = {0};
        f[FX_PF_NODE_GPUS] = 4;
        f[FX_PF_FRAG_DELTA] = 0.5;
        CHECK_DBL(fx_eval(p, f), 7.5, 1e-12);
        char buf[512];
        fx_dump(p, buf, sizeof buf);
        CHECK(strstr(buf, "node.gpus") != NULL && strstr(buf, "frag.delta") != NULL);
    }
    fx_free(p);
}
