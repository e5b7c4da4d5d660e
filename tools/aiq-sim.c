/* aiq-sim.c -- the trace simulator's command line: run a trace under a
 * policy, compare policies side by side, generate synthetic traces,
 * replay a decision journal (exact check or what-if) and export it as
 * JSON lines. docs/simulator.md is the manual. */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/version.h"
#include "operator/manifest.h"
#include "policy/policy_adapter.h"
#include "operator/store.h"
#include "simulator/sim.h"
#include "simulator/sim_html.h"
#include "simulator/sim_tune.h"

#define MAX_POLICIES 16

static void usage(FILE *out) {
    fputs("usage:\n"
          "  aiq-sim run --trace FILE [--format csv|tiresias|alibaba] [--nodes FILE]\n"
          "              [--nodes-spec 125x8xA100-80GB] --policy POLICY.yaml\n"
          "              [--csv OUT] [--util-csv OUT] [--html OUT] [--shares] [--journal DB]\n"
          "              [--tick SECONDS] [--no-predict] [--plan-actual]\n"
          "              [--preempt-grace SECONDS] [--group-quota GPUS]\n"
          "  aiq-sim compare --trace FILE [...] --policy A.yaml --policy B.yaml ... [--csv OUT]\n"
          "              [--html REPORT.html]\n"
          "  aiq-sim gen --seed N --jobs N --out FILE [--groups N] [--users N]\n"
          "              [--interarrival SECONDS] [--tiresias] [--max-gpus N]\n"
          "              [--checkpoint-frac F] [--checkpoint-s SECONDS] [--elastic-frac F]\n"
          "              [--fgd-mix whole|multi|share|default]\n"
          "              [--estimate-share F] [--estimate-noise SIGMA]\n"
          "  aiq-sim replay (--db operator.db | --jsonl FILE) [--policy OTHER.yaml]\n"
          "              [--policies-dir examples/policies]\n"
          "  aiq-sim export --db operator.db [--out FILE]\n"
          "  aiq-sim inflate --trace FILE [--format ...] [--nodes FILE] [--nodes-spec ...]\n"
          "              [--placement binpack,spread,fgd] [--policy P.yaml ...]\n"
          "              [--sample --seed N [--runs K]]\n"
          "              [--placements-csv OUT] [--csv OUT] [--html REPORT.html]\n"
          "  aiq-sim tune (--policy POLICY.yaml --trace FILE [--format ...] |\n"
          "              --journal DB|JSONL [--policy P.yaml | --policies-dir DIR])\n"
          "              --objective 'mean_jct + 0.5*p95_wait' [--seed N] [--budget RUNS]\n"
          "              [--holdout FRACTION] [--fixed FIELD@LINE:COL,...] [--name NAME]\n"
          "              [--out TUNED.yaml]\n"
          "  run, compare, inflate and tune take --progress (also on when stderr is a terminal)\n",
          out);
}

struct opts {
    const char *cmd, *trace, *format, *nodes, *nodes_spec, *csv, *util_csv, *journal, *db,
        *jsonl, *out, *policies_dir, *placement, *placements_csv, *html, *objective, *name,
        *fixed, *fgd_mix;
    const char *policy[MAX_POLICIES];
    int npolicy;
    long long seed;
    int jobs, groups, users, max_gpus, budget;
    double holdout;
    double tick, interarrival, grace, ckpt_frac, ckpt_s, elastic_frac, group_quota;
    double est_share, est_noise; /* gen's defaults until either is given (est_set) */
    int no_predict, plan_actual, shares, tiresias, sample, runs, progress, seed_set, est_set;
};

static int num(const char *flag, const char *v, double lo, double hi, double *out) {
    char *end = NULL;
    errno = 0;
    double d = v ? strtod(v, &end) : 0;
    if (!v || end == v || *end || errno || d < lo || d > hi) {
        fprintf(stderr, "aiq-sim: %s: expected a number %g..%g, got '%s'\n", flag, lo, hi,
                v ? v : "");
        return -1;
    }
    *out = d;
    return 0;
}

/* The numeric option a with its value v (NULL: none) into *o. Returns 1
 * when taken (v used), 0 when a is not a numeric option, -1 after naming
 * a bad value. */
static int parse_num(struct opts *o, const char *a, const char *v) {
    enum { D, I, LL }; /* the field's type: double, int, long long */
    static const struct {
        const char *name;
        double lo, hi;
        int type;
        size_t off;
    } nums[] = {
        {"--seed", 0, 9e15, LL, offsetof(struct opts, seed)},
        {"--jobs", 1, SIM_MAX_JOBS, I, offsetof(struct opts, jobs)},
        {"--groups", 1, 64, I, offsetof(struct opts, groups)},
        {"--users", 1, 256, I, offsetof(struct opts, users)},
        {"--group-quota", 1, 1e9, D, offsetof(struct opts, group_quota)},
        {"--tick", 0, 86400, D, offsetof(struct opts, tick)},
        {"--interarrival", 0.001, 1e7, D, offsetof(struct opts, interarrival)},
        {"--preempt-grace", 0, 86400, D, offsetof(struct opts, grace)},
        {"--max-gpus", 1, 16, I, offsetof(struct opts, max_gpus)},
        {"--checkpoint-frac", 0, 1, D, offsetof(struct opts, ckpt_frac)},
        {"--checkpoint-s", 1, 1e7, D, offsetof(struct opts, ckpt_s)},
        {"--elastic-frac", 0, 1, D, offsetof(struct opts, elastic_frac)},
        {"--estimate-share", 0, 1, D, offsetof(struct opts, est_share)},
        {"--estimate-noise", 0, 2, D, offsetof(struct opts, est_noise)},
        {"--runs", 1, 1000, I, offsetof(struct opts, runs)},
        {"--budget", 2, 100000, I, offsetof(struct opts, budget)},
        {"--holdout", 0.05, 0.9, D, offsetof(struct opts, holdout)},
    };
    for (size_t k = 0; k < sizeof nums / sizeof nums[0]; k++) {
        double d;
        void *field = (char *)o + nums[k].off;
        if (strcmp(a, nums[k].name) != 0)
            continue;
        if (num(a, v, nums[k].lo, nums[k].hi, &d))
            return -1;
        if (nums[k].type == D)
            *(double *)field = d;
        else if (nums[k].type == I)
            *(int *)field = (int)d;
        else
            *(long long *)field = (long long)d;
        if (nums[k].off == offsetof(struct opts, seed))
            o->seed_set = 1; /* tune and inflate tell a given seed from none */
        if (nums[k].off == offsetof(struct opts, est_share) ||
            nums[k].off == offsetof(struct opts, est_noise))
            o->est_set = 1; /* gen: the generator then reads both knobs */
        return 1;
    }
    return 0;
}

/* The flag a (no value) into *o. Returns 1 when taken, else 0. */
static int parse_flag(struct opts *o, const char *a) {
    static const struct {
        const char *name;
        size_t off;
    } flags[] = {
        {"--sample", offsetof(struct opts, sample)},
        {"--progress", offsetof(struct opts, progress)},
        {"--tiresias", offsetof(struct opts, tiresias)},
        {"--no-predict", offsetof(struct opts, no_predict)},
        {"--plan-actual", offsetof(struct opts, plan_actual)},
        {"--shares", offsetof(struct opts, shares)},
    };
    for (size_t k = 0; k < sizeof flags / sizeof flags[0]; k++)
        if (strcmp(a, flags[k].name) == 0) {
            *(int *)(void *)((char *)o + flags[k].off) = 1;
            return 1;
        }
    return 0;
}

static int parse(int argc, char **argv, struct opts *o) {
    memset(o, 0, sizeof *o);
    o->format = "csv";
    o->tick = 600;
    o->grace = 30;
    o->policies_dir = "examples/policies";
    o->est_share = SIM_GEN_ESTIMATE_SHARE;
    o->est_noise = SIM_GEN_ESTIMATE_NOISE;
    if (argc < 2)
        return -1;
    o->cmd = argv[1];
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int r;
#define STR(name, field) if (strcmp(a, name) == 0 && v) { o->field = v; i++; continue; }
        STR("--trace", trace) STR("--format", format) STR("--nodes", nodes)
        STR("--nodes-spec", nodes_spec) STR("--csv", csv) STR("--util-csv", util_csv)
        STR("--journal", journal) STR("--db", db) STR("--jsonl", jsonl) STR("--out", out)
        STR("--policies-dir", policies_dir) STR("--placement", placement)
        STR("--placements-csv", placements_csv) STR("--html", html)
        STR("--objective", objective) STR("--name", name)
        STR("--fixed", fixed) STR("--fgd-mix", fgd_mix)
#undef STR
        if (strcmp(a, "--policy") == 0 && v) {
            if (o->npolicy == MAX_POLICIES) {
                fprintf(stderr, "aiq-sim: at most %d policies\n", MAX_POLICIES);
                return -2;
            }
            o->policy[o->npolicy++] = v;
            i++;
        } else if ((r = parse_num(o, a, v)) != 0) {
            if (r < 0)
                return -2;
            i++;
        } else if (!parse_flag(o, a)) {
            fprintf(stderr, "aiq-sim: unknown or incomplete option '%s'\n", a);
            return -2;
        }
    }
    return 0;
}

/* Loads the first QueuePolicy of a YAML file and compiles it. */
static oppolicy *load_policy(const char *path, char *name, size_t cap) {
    struct aiq_manifest *m = NULL;
    int n = 0;
    aiq_err e;
    aiq_err_clear(&e);
    if (aiq_manifest_parse_file(path, &m, &n, &e) != AIQ_OK) {
        if (e.line > 0)
            fprintf(stderr, "aiq-sim: %s:%d: %s\n", path, e.line, e.message);
        else
            fprintf(stderr, "aiq-sim: %s\n", e.message);
        return NULL;
    }
    oppolicy *p = NULL;
    for (int i = 0; i < n && !p; i++) {
        if (m[i].kind != AIQ_KIND_QUEUEPOLICY)
            continue;
        if (m[i].rc != AIQ_OK) {
            fprintf(stderr, "aiq-sim: %s:%d: %s\n", path, m[i].line, m[i].err.message);
            break;
        }
        aiq_err_clear(&e);
        if (!(p = oppolicy_compile(&m[i].u.policy, &e)))
            fprintf(stderr, "aiq-sim: %s: %s\n", path, e.message);
        else
            snprintf(name, cap, "%s", m[i].u.policy.meta.name);
        break;
    }
    if (!p && n > 0 && e.message[0] == '\0')
        fprintf(stderr, "aiq-sim: %s: no QueuePolicy in the file\n", path);
    aiq_manifests_free(m, n);
    return p;
}

static int read_file_with(const char *path, aiq_rc (*fn)(FILE *, const char *, struct sim_trace *,
                                                         aiq_err *),
                          struct sim_trace *tr) {
    FILE *f = fopen(path, "r");
    aiq_err e;
    aiq_err_clear(&e);
    if (!f) {
        fprintf(stderr, "aiq-sim: %s: %s\n", path, strerror(errno));
        return -1;
    }
    aiq_rc rc = fn(f, path, tr, &e);
    fclose(f);
    if (rc != AIQ_OK) {
        fprintf(stderr, "aiq-sim: %s\n", e.message);
        return -1;
    }
    return 0;
}

static struct sim_trace *load_trace(const struct opts *o) {
    struct sim_trace *tr = sim_trace_create();
    aiq_err e;
    aiq_err_clear(&e);
    if (!tr || !o->trace) {
        fprintf(stderr, "aiq-sim: %s\n", tr ? "--trace FILE is required" : "out of memory");
        sim_trace_free(tr);
        return NULL;
    }
    int bad = 0;
    if (strcmp(o->format, "csv") == 0) {
        bad = read_file_with(o->trace, sim_read_csv, tr);
    } else if (strcmp(o->format, "tiresias") == 0) {
        bad = read_file_with(o->trace, sim_read_tiresias, tr);
    } else if (strcmp(o->format, "alibaba") == 0) {
        if (o->nodes)
            bad = read_file_with(o->nodes, sim_read_alibaba_nodes, tr);
        if (!bad)
            bad = read_file_with(o->trace, sim_read_alibaba_pods, tr);
    } else {
        fprintf(stderr, "aiq-sim: --format: expected csv, tiresias or alibaba, got '%s'\n",
                o->format);
        bad = 1;
    }
    if (!bad && o->nodes && strcmp(o->format, "alibaba") != 0) {
        fprintf(stderr, "aiq-sim: --nodes is the Alibaba node list; use --nodes-spec\n");
        bad = 1;
    }
    if (!bad && (o->nodes_spec || tr->nnodes == 0) &&
        sim_nodes_from_spec(tr, o->nodes_spec ? o->nodes_spec : "125x8xA100-80GB", &e) != AIQ_OK) {
        fprintf(stderr, "aiq-sim: %s\n", e.message);
        bad = 1;
    }
    if (!bad && strcmp(o->format, "tiresias") == 0 && sim_tiresias_fit_nodes(tr, &e) != AIQ_OK) {
        fprintf(stderr, "aiq-sim: %s\n", e.message);
        bad = 1;
    }
    if (!bad && tr->njobs == 0) {
        fprintf(stderr, "aiq-sim: %s: no jobs\n", o->trace);
        bad = 1;
    }
    if (bad) {
        sim_trace_free(tr);
        return NULL;
    }
    sim_trace_sort(tr);
    return tr;
}

/* Progress on stderr: percent done, time elapsed and an estimate of the
 * time left (elapsed x left / done), at most once a second. Only when
 * asked (--progress) or when stderr is a terminal, so logs and test
 * output stay clean. */
struct prog {
    const char *what;
    bool on;
    time_t start, last;
};

static void prog_init(struct prog *p, const char *what, const struct opts *o) {
    p->what = what;
    p->on = o->progress || isatty(STDERR_FILENO);
    p->start = time(NULL);
    p->last = 0;
}

static void progress(void *ctx, double f) {
    struct prog *p = ctx;
    time_t now = time(NULL);
    if (!p->on || (f < 1.0 && now == p->last))
        return;
    p->last = now;
    double el = difftime(now, p->start);
    if (f >= 1.0) {
        fprintf(stderr, "\r%s: 100%% in %.0f s          \n", p->what, el);
        return;
    }
    if (f > 0.001)
        fprintf(stderr, "\r%s: %3.0f%%, %.0f s elapsed, about %.0f s left ", p->what,
                f * 100, el, el * (1 - f) / f);
    else
        fprintf(stderr, "\r%s: %3.0f%%, %.0f s elapsed ", p->what, f * 100, el);
}

static int write_to(const char *path, void (*fn)(FILE *, const void *), const void *arg) {
    FILE *f = strcmp(path, "-") == 0 ? stdout : fopen(path, "w");
    if (!f) {
        fprintf(stderr, "aiq-sim: %s: %s\n", path, strerror(errno));
        return -1;
    }
    fn(f, arg);
    int bad = ferror(f);
    if (f != stdout && fclose(f) != 0)
        bad = 1;
    if (bad)
        fprintf(stderr, "aiq-sim: %s: write error\n", path);
    return bad ? -1 : 0;
}

struct csvarg {
    const char *const *names;
    const struct sim_metrics *m;
    int n;
};

static void csv_fn(FILE *f, const void *a) {
    const struct csvarg *c = a;
    sim_metrics_csv(f, c->names, c->m, c->n);
}

/* The --util-csv file: opened once, one series per policy appended. */
static FILE *util_open(const char *path) {
    FILE *f = strcmp(path, "-") == 0 ? stdout : fopen(path, "w");
    if (!f)
        fprintf(stderr, "aiq-sim: %s: %s\n", path, strerror(errno));
    return f;
}

/* Closes f (not stdout); returns 0, or -1 after naming path when any
 * write failed. */
static int util_close(FILE *f, const char *path) {
    if (!f)
        return 0;
    int bad = ferror(f);
    if (f == stdout)
        bad |= fflush(f) != 0;
    else
        bad |= fclose(f) != 0;
    if (bad)
        fprintf(stderr, "aiq-sim: %s: write error\n", path);
    return bad ? -1 : 0;
}

/* The --html report: created with a note naming the trace and cluster
 * (NULL after naming the error). The file itself is opened with
 * util_open before the runs, so a bad path fails before a long run. */
static struct sim_html *html_open(const struct opts *o, const char *title,
                                  const struct sim_trace *tr, int gpus) {
    char note[1024];
    aiq_err e;
    aiq_err_clear(&e);
    struct sim_html *h = sim_html_create(title);
    snprintf(note, sizeof note, "Trace %s: %d jobs; cluster: %d nodes, %d GPUs.", o->trace,
             tr->njobs, tr->nnodes, gpus);
    if (!h || sim_html_set_note(h, note, &e) != AIQ_OK) {
        fprintf(stderr, "aiq-sim: --html: out of memory\n");
        sim_html_free(h);
        return NULL;
    }
    return h;
}

/* What run and compare write besides the table: the journal (run only),
 * the --util-csv file, the --html report and its file. */
struct run_out {
    store *db;
    FILE *uf, *hf;
    struct sim_html *html;
};

/* Opens what o asks for into *ro (gpus: the cluster's, for the report's
 * note). Returns 0, or -1 after naming the error (what opened stays in
 * *ro for run_out_close). */
static int run_out_open(const struct opts *o, int compare, const struct sim_trace *tr, int gpus,
                        struct run_out *ro) {
    if (o->journal) {
        aiq_err e;
        aiq_err_clear(&e);
        if (compare) {
            fprintf(stderr, "aiq-sim: --journal is for run\n");
            return -1;
        }
        if (o->plan_actual) {
            /* a replay plans with the predictions it reads back */
            fprintf(stderr, "aiq-sim: --plan-actual cannot be journaled: a replay would "
                            "plan with the predictions\n");
            return -1;
        }
        if (!(ro->db = store_open(o->journal, NULL, &e))) {
            fprintf(stderr, "aiq-sim: %s: %s\n", o->journal, e.message);
            return -1;
        }
    }
    if (o->util_csv && !(ro->uf = util_open(o->util_csv)))
        return -1;
    if (o->html && (!(ro->hf = util_open(o->html)) ||
                    !(ro->html = html_open(o, compare ? "aiq-sim: policies compared" : "aiq-sim: run",
                                           tr, gpus))))
        return -1;
    return 0;
}

/* Closes what is still open in *ro after a failure. */
static void run_out_close(const struct opts *o, struct run_out *ro) {
    if (ro->hf)
        (void)util_close(ro->hf, o->html); /* already failing: rc says so */
    sim_html_free(ro->html);
    if (ro->uf)
        (void)util_close(ro->uf, o->util_csv); /* already failing: rc says so */
    store_close(ro->db);
}

/* Simulates tr under policy pol (the k-th, named name) into *m, adding
 * to the journal, the utilisation CSV and the report of ro, and prints
 * its shares when asked. Returns 0, or -1 after naming the error. */
static int run_policy(const struct opts *o, int k, const struct sim_trace *tr, oppolicy *pol,
                      const char *name, const struct run_out *ro, struct sim_metrics *m) {
    struct sim_config cfg;
    struct sim_result res;
    struct prog pg;
    prog_init(&pg, name, o);
    aiq_err e;
    aiq_err_clear(&e);
    sim_config_for(&cfg, tr, pol);
    cfg.policy_name = name;
    cfg.tick_s = o->tick;
    cfg.group_quota_gpus = (int64_t)o->group_quota;
    cfg.predict = !o->no_predict;
    cfg.plan_actual = o->plan_actual;
    cfg.preempt_grace_s = o->grace;
    cfg.journal = ro->db;
    cfg.progress = progress;
    cfg.progress_ctx = &pg;
    if (sim_run(&cfg, &res, &e) != AIQ_OK ||
        sim_metrics_compute(tr, &res, m, &e) != AIQ_OK ||
        (ro->html && sim_html_add_run(ro->html, name, tr, &res, m, &e) != AIQ_OK)) {
        fprintf(stderr, "aiq-sim: %s: %s\n", name, e.message);
        sim_result_deinit(&res);
        return -1;
    }
    if (o->shares) {
        printf("shares under %s:\n", name);
        sim_shares_table(stdout, &res);
        putchar('\n');
    }
    if (ro->uf)
        sim_util_csv(ro->uf, name, &res, k == 0);
    sim_result_deinit(&res);
    return 0;
}

/* run and compare: one simulation per policy, a table side by side. */
static int cmd_run(const struct opts *o, int compare) {
    int rc = 1;
    struct sim_trace *tr = NULL;
    oppolicy *pol[MAX_POLICIES] = {0};
    char names[MAX_POLICIES][256];
    const char *np[MAX_POLICIES];
    struct sim_metrics m[MAX_POLICIES];
    struct run_out ro = {NULL, NULL, NULL, NULL};
    if (o->npolicy < 1 || (!compare && o->npolicy > 1)) {
        fprintf(stderr, "aiq-sim: %s\n", compare ? "give --policy at least once"
                                                 : "run takes one --policy (use compare)");
        return 2;
    }
    for (int k = 0; k < o->npolicy; k++) {
        if (!(pol[k] = load_policy(o->policy[k], names[k], sizeof names[k])))
            goto out;
        np[k] = names[k];
    }
    if (!(tr = load_trace(o)))
        goto out;
    int gpus = 0;
    for (int k = 0; k < tr->nnodes; k++)
        gpus += tr->nodes[k].gpus;
    fprintf(stderr, "aiq-sim: %d jobs, %d nodes, %d GPUs\n", tr->njobs, tr->nnodes, gpus);
    if (run_out_open(o, compare, tr, gpus, &ro) != 0)
        goto out;
    for (int k = 0; k < o->npolicy; k++)
        if (run_policy(o, k, tr, pol[k], names[k], &ro, &m[k]) != 0)
            goto out;
    FILE *ufc = ro.uf;
    ro.uf = NULL;
    if (util_close(ufc, o->util_csv) != 0)
        goto out;
    sim_metrics_table(stdout, np, m, o->npolicy);
    putchar('\n');
    sim_goals_table(stdout, np, m, o->npolicy);
    struct csvarg ca = {np, m, o->npolicy};
    if (o->csv && write_to(o->csv, csv_fn, &ca) != 0)
        goto out;
    if (ro.html)
        sim_html_write(ro.hf, ro.html);
    FILE *hfc = ro.hf;
    ro.hf = NULL;
    if (util_close(hfc, o->html) != 0)
        goto out;
    rc = 0;
out:
    run_out_close(o, &ro);
    sim_trace_free(tr);
    for (int k = 0; k < o->npolicy; k++)
        oppolicy_free(pol[k]);
    return rc;
}

static int cmd_gen(const struct opts *o) {
    struct sim_gen_opts g = {.seed = (uint64_t)o->seed, .njobs = o->jobs, .ngroups = o->groups,
                             .users_per_group = o->users, .mean_interarrival_s = o->interarrival,
                             .tiresias = o->tiresias, .max_gpus = o->max_gpus,
                             .checkpoint_frac = o->ckpt_frac, .checkpoint_s = o->ckpt_s,
                             .elastic_frac = o->elastic_frac, .estimates_set = o->est_set,
                             .estimate_share = o->est_share, .estimate_noise = o->est_noise};
    aiq_err e;
    aiq_err_clear(&e);
    if (o->fgd_mix) {
        static const char *const mixes[] = {"whole", "multi", "share", "default"};
        for (int k = 0; k < 4; k++)
            if (strcmp(o->fgd_mix, mixes[k]) == 0)
                g.fgd_mix = SIM_MIX_WHOLE + k;
        if (g.fgd_mix == SIM_MIX_NONE) {
            fprintf(stderr, "aiq-sim: --fgd-mix: expected whole, multi, share or default, "
                    "got '%s'\n",
                    o->fgd_mix);
            return 2;
        }
    }
    if (!o->out || o->jobs < 1) {
        fprintf(stderr, "aiq-sim: gen needs --jobs N and --out FILE\n");
        return 2;
    }
    struct sim_trace *tr = sim_trace_create();
    FILE *f = NULL;
    int rc = 1;
    if (!tr || sim_generate(tr, &g, &e) != AIQ_OK) {
        fprintf(stderr, "aiq-sim: %s\n", tr ? e.message : "out of memory");
        goto out;
    }
    f = strcmp(o->out, "-") == 0 ? stdout : fopen(o->out, "w");
    if (!f) {
        fprintf(stderr, "aiq-sim: %s: %s\n", o->out, strerror(errno));
        goto out;
    }
    if (sim_write_csv(tr, f, &e) != AIQ_OK) {
        fprintf(stderr, "aiq-sim: %s: %s\n", o->out, e.message);
        goto out;
    }
    fprintf(stderr, "aiq-sim: wrote %d jobs to %s\n", tr->njobs, o->out);
    rc = 0;
out:
    if (f && f != stdout && fclose(f) != 0 && rc == 0) {
        fprintf(stderr, "aiq-sim: %s: write error\n", o->out);
        rc = 1;
    }
    sim_trace_free(tr);
    return rc;
}

static int cmd_export(const struct opts *o) {
    aiq_err e;
    aiq_err_clear(&e);
    if (!o->db) {
        fprintf(stderr, "aiq-sim: export needs --db FILE\n");
        return 2;
    }
    store *db = store_open(o->db, NULL, &e);
    if (!db) {
        fprintf(stderr, "aiq-sim: %s: %s\n", o->db, e.message);
        return 1;
    }
    FILE *f = o->out && strcmp(o->out, "-") != 0 ? fopen(o->out, "w") : stdout;
    int rc = 1;
    long n = 0;
    if (!f)
        fprintf(stderr, "aiq-sim: %s: %s\n", o->out, strerror(errno));
    else if (store_journal_export_jsonl(db, f, 0, &n, &e) != AIQ_OK)
        fprintf(stderr, "aiq-sim: %s: %s\n", o->db, e.message);
    else
        rc = 0;
    if (f && f != stdout && fclose(f) != 0)
        rc = 1;
    if (rc == 0)
        fprintf(stderr, "aiq-sim: exported %ld journal lines\n", n);
    store_close(db);
    return rc;
}

/* The journal of --db or --jsonl into *j. Returns 0, or 1 after naming
 * the error. */
static int replay_read(const struct opts *o, struct sim_journal *j) {
    aiq_err e;
    aiq_err_clear(&e);
    aiq_rc r;
    if (o->db) {
        store *db = store_open(o->db, NULL, &e);
        if (!db) {
            fprintf(stderr, "aiq-sim: %s: %s\n", o->db, e.message);
            return 1;
        }
        r = sim_journal_read_store(db, j, &e);
        store_close(db);
    } else {
        FILE *f = fopen(o->jsonl, "r");
        if (!f) {
            fprintf(stderr, "aiq-sim: %s: %s\n", o->jsonl, strerror(errno));
            return 1;
        }
        r = sim_journal_read_jsonl(f, o->jsonl, j, &e);
        fclose(f);
    }
    if (r != AIQ_OK) {
        fprintf(stderr, "aiq-sim: %s\n", e.message);
        return 1;
    }
    return 0;
}

/* Exact replay of j with the policy it recorded (from --policies-dir).
 * Returns 0 when every decision is reproduced, else 1. */
static int replay_exact(const struct opts *o, struct sim_journal *j) {
    oppolicy *pol = NULL;
    char name[256], path[1024], first[1024];
    long mism = 0;
    int rc = 1;
    aiq_err e;
    aiq_err_clear(&e);
    if (!j->policy[0] || strcmp(j->policy, "default") == 0) {
        pol = oppolicy_default();
        snprintf(name, sizeof name, "default");
    } else {
        snprintf(path, sizeof path, "%s/%s.yaml", o->policies_dir, j->policy);
        pol = load_policy(path, name, sizeof name);
    }
    if (!pol)
        return 1;
    if (sim_replay_check(j, pol, name, &mism, first, sizeof first, &e) != AIQ_OK) {
        fprintf(stderr, "aiq-sim: replay: %s\n", e.message);
    } else if (mism == 0) {
        printf("replay: exact: %d decisions reproduced under %s\n", j->ndec, name);
        rc = 0;
    } else {
        printf("replay: %ld of %d decisions differ under %s\nfirst: %s\n", mism, j->ndec,
               name, first);
    }
    oppolicy_free(pol);
    return rc;
}

/* What-if: j's arrivals under the first --policy, against the recorded
 * run re-simulated with its own policy. Returns 0, or 1 after naming the
 * error. */
static int replay_whatif(const struct opts *o, struct sim_journal *j) {
    oppolicy *pol = NULL;
    char name[256], path[1024];
    aiq_err e;
    aiq_err_clear(&e);
    if (!(pol = load_policy(o->policy[0], name, sizeof name)))
        return 1;
    struct sim_result res;
    long changed = 0;
    struct sim_metrics m[2];
    if (sim_replay_whatif(j, pol, name, &res, &changed, &e) != AIQ_OK ||
        sim_metrics_compute(j->trace, &res, &m[1], &e) != AIQ_OK) {
        fprintf(stderr, "aiq-sim: what-if: %s\n", e.message);
        sim_result_deinit(&res);
        oppolicy_free(pol);
        return 1;
    }
    sim_result_deinit(&res);
    /* The recorded run, re-simulated with its own policy for the table. */
    oppolicy *orig = NULL;
    char oname[256] = "recorded";
    if (j->policy[0] && strcmp(j->policy, "default") != 0) {
        snprintf(path, sizeof path, "%s/%s.yaml", o->policies_dir, j->policy);
        orig = load_policy(path, oname, sizeof oname);
    } else {
        orig = oppolicy_default();
    }
    const char *names[2] = {oname, name};
    if (orig && sim_replay_whatif(j, orig, oname, &res, &(long){0}, &e) == AIQ_OK &&
        sim_metrics_compute(j->trace, &res, &m[0], &e) == AIQ_OK) {
        sim_metrics_table(stdout, names, m, 2);
    } else {
        sim_metrics_table(stdout, names + 1, m + 1, 1);
    }
    sim_result_deinit(&res);
    oppolicy_free(orig);
    printf("what-if: %ld of %d jobs start at another time under %s\n", changed, j->trace->njobs,
           name);
    oppolicy_free(pol);
    return 0;
}

static int cmd_replay(const struct opts *o) {
    struct sim_journal j;
    memset(&j, 0, sizeof j);
    if (!o->db == !o->jsonl) {
        fprintf(stderr, "aiq-sim: replay needs --db FILE or --jsonl FILE\n");
        return 2;
    }
    if (replay_read(o, &j) != 0)
        return 1;
    fprintf(stderr, "aiq-sim: journal: %d jobs, %d nodes, %d decisions in %d cycles, policy "
            "'%s'%s\n", j.trace->njobs, j.trace->nnodes, j.ndec, j.ncycles, j.policy,
            j.skipped ? " (some lines skipped)" : "");
    int rc = o->npolicy == 0 ? replay_exact(o, &j) : replay_whatif(o, &j);
    sim_journal_deinit(&j);
    return rc;
}

/* The placements named by --placement ("binpack,spread"); returns how
 * many, or -1 after naming the bad one. */
static int parse_placements(const char *v, aiq_placement *pl, const char **names) {
    int n = 0;
    const char *p = v ? v : "binpack,spread,fgd";
    while (*p) {
        size_t len = strcspn(p, ",");
        if (len == 7 && strncmp(p, "binpack", 7) == 0 && n < 3) {
            pl[n] = AIQ_PLACE_BINPACK;
            names[n++] = "binpack";
        } else if (len == 6 && strncmp(p, "spread", 6) == 0 && n < 3) {
            pl[n] = AIQ_PLACE_SPREAD;
            names[n++] = "spread";
        } else if (len == 3 && strncmp(p, "fgd", 3) == 0 && n < 3) {
            pl[n] = AIQ_PLACE_FGD;
            names[n++] = "fgd";
        } else {
            fprintf(stderr, "aiq-sim: --placement: expected binpack, spread and/or fgd (at "
                    "most three) separated by ',', got '%s'\n", v);
            return -1;
        }
        p += len + (p[len] == ',');
    }
    if (n == 0)
        fprintf(stderr, "aiq-sim: --placement: empty\n");
    return n > 0 ? n : -1;
}

/* One line of --csv per run and point. */
static void inflate_csv_rows(FILE *f, const char *pl, unsigned long long seed,
                             const struct sim_inflate_result *r) {
    for (int k = 0; k < r->npoints; k++) {
        const struct sim_inflate_point *pt = &r->pt[k];
        fprintf(f, "%s,%llu,%.0f,%.4f,%.3f,%ld,%ld,%ld\n", pl, seed, pt->target * 100,
                pt->arrived * 100, pt->unalloc * 100, pt->tasks, pt->placed, pt->dropped);
    }
}

/* The table: one row per step, one column per placement (mean
 * unallocated GPU % over the runs that reached the step). */
static void inflate_table(int nsteps, int npl, const char **plname,
                          double (*sum)[SIM_INFLATE_MAX_POINTS],
                          int (*cnt)[SIM_INFLATE_MAX_POINTS], double from, double step) {
    printf("%-8s", "arrived");
    for (int p = 0; p < npl; p++)
        printf("  %12s", plname[p]);
    putchar('\n');
    for (int k = 0; k < nsteps; k++) {
        printf("%6.0f%% ", (from + step * k) * 100);
        for (int p = 0; p < npl; p++) {
            if (cnt[p][k] > 0)
                printf("  %11.2f%%", sum[p][k] / cnt[p][k] * 100);
            else
                printf("  %12s", "-");
        }
        putchar('\n');
    }
}

/* The --html report of inflate: one curve per placement (the table's
 * means; NAN where no run reached the step). */
static int inflate_html(const struct opts *o, FILE *hf, const struct sim_trace *tr, int nsteps,
                        int npl, const char **plname, double (*sum)[SIM_INFLATE_MAX_POINTS],
                        int (*cnt)[SIM_INFLATE_MAX_POINTS], double from, double step) {
    int gpus = 0, rc = -1;
    for (int k = 0; k < tr->nnodes; k++)
        gpus += tr->nodes[k].gpus;
    struct sim_html *h = html_open(o, "aiq-sim: inflation protocol", tr, gpus);
    if (!h)
        return -1;
    for (int p = 0; p < npl; p++) {
        double x[SIM_INFLATE_MAX_POINTS], y[SIM_INFLATE_MAX_POINTS];
        aiq_err e;
        aiq_err_clear(&e);
        for (int k = 0; k < nsteps; k++) {
            x[k] = (from + step * k) * 100;
            y[k] = cnt[p][k] > 0 ? sum[p][k] / cnt[p][k] * 100 : NAN;
        }
        if (sim_html_add_inflate(h, plname[p], x, y, nsteps, &e) != AIQ_OK) {
            fprintf(stderr, "aiq-sim: --html: %s\n", e.message);
            goto out;
        }
    }
    sim_html_write(hf, h);
    rc = 0;
out:
    sim_html_free(h);
    return rc;
}

/* inflate's columns: the placements named, then one per --policy (its
 * placement keyword, or its placementScore when it has one), and the
 * unallocated share summed over the runs per column and step. */
struct inflate_cols {
    aiq_placement pl[3 + MAX_POLICIES];
    const char *name[3 + MAX_POLICIES];
    const q_placer *placer[3 + MAX_POLICIES];
    oppolicy *pol[MAX_POLICIES];
    char polname[MAX_POLICIES][AIQ_MAX_NAME + 1];
    int n;
    double sum[3 + MAX_POLICIES][SIM_INFLATE_MAX_POINTS];
    int cnt[3 + MAX_POLICIES][SIM_INFLATE_MAX_POINTS];
};

/* The columns of o into *c (zeroed). Returns 0, or the exit status after
 * naming the error (2: the command line; 1: a policy, c's freed). */
static int inflate_columns(const struct opts *o, struct inflate_cols *c) {
    c->n = o->placement || o->npolicy == 0 ? parse_placements(o->placement, c->pl, c->name) : 0;
    if (c->n < 0)
        return 2;
    if ((o->runs > 0 || o->seed_set) && !o->sample) {
        fprintf(stderr, "aiq-sim: --seed and --runs choose the sample: add --sample\n");
        return 2;
    }
    for (int k = 0; k < o->npolicy; k++) {
        if (!(c->pol[k] = load_policy(o->policy[k], c->polname[k], sizeof c->polname[k]))) {
            for (int x = 0; x < k; x++)
                oppolicy_free(c->pol[x]);
            return 1;
        }
        struct q_policy qp;
        oppolicy_qpolicy(c->pol[k], &qp);
        c->pl[c->n] = qp.placement;
        c->placer[c->n] = oppolicy_placer(c->pol[k]);
        c->name[c->n++] = c->polname[k];
    }
    return 0;
}

/* Every column's runs (runs seeds from seed0) over tr with the protocol
 * of base, summed into c; the placements to pf and a line per point to
 * cf (each may be NULL). *nsteps: the steps of the protocol. Returns 0,
 * or -1 after naming the error. */
static int inflate_runs(const struct opts *o, const struct sim_trace *tr, struct inflate_cols *c,
                        int runs, unsigned long long seed0, FILE *pf, FILE *cf,
                        const struct sim_inflate_config *base, int *nsteps) {
    for (int p = 0; p < c->n; p++)
        for (int s = 0; s < runs; s++) {
            struct sim_inflate_result res = {0};
            struct sim_inflate_config run = *base, *cfg = &run;
            char what[64];
            struct prog pg;
            aiq_err e;
            aiq_err_clear(&e);
            snprintf(what, sizeof what, "%s seed %llu", c->name[p], seed0 + (unsigned)s);
            prog_init(&pg, what, o);
            cfg->trace = tr;
            cfg->nodes = tr->nodes;
            cfg->nnodes = tr->nnodes;
            cfg->placement = c->pl[p];
            cfg->placer = c->placer[p];
            cfg->label = c->name[p];
            cfg->sample = o->sample;
            cfg->seed = seed0 + (unsigned)s;
            cfg->placements = pf;
            cfg->progress = progress;
            cfg->progress_ctx = &pg;
            if (sim_inflate(cfg, &res, &e) != AIQ_OK) {
                fprintf(stderr, "aiq-sim: %s\n", e.message);
                return -1;
            }
            *nsteps = res.nsteps;
            for (int k = 0; k < res.npoints; k++) {
                c->sum[p][k] += res.pt[k].unalloc;
                c->cnt[p][k]++;
            }
            if (cf)
                inflate_csv_rows(cf, c->name[p], o->sample ? cfg->seed : 0, &res);
        }
    return 0;
}

/* inflate: the FGD paper's protocol, per placement and seed. */
static int cmd_inflate(const struct opts *o) {
    int rc = 1;
    static struct inflate_cols c; /* the sums are large for the stack */
    memset(&c, 0, sizeof c);
    FILE *pf = NULL, *cf = NULL, *hf = NULL;
    int bad = inflate_columns(o, &c);
    if (bad)
        return bad;
    struct sim_trace *tr = load_trace(o);
    if (!tr) {
        for (int k = 0; k < o->npolicy; k++)
            oppolicy_free(c.pol[k]);
        return 1;
    }
    int runs = o->sample ? (o->runs > 0 ? o->runs : 1) : 1;
    unsigned long long seed0 = o->seed_set ? (unsigned long long)o->seed : 1;
    if (o->placements_csv && !(pf = util_open(o->placements_csv)))
        goto out;
    if (o->csv && !(cf = util_open(o->csv)))
        goto out;
    if (o->html && !(hf = util_open(o->html)))
        goto out;
    if (pf)
        fputs(SIM_INFLATE_CSV_HEADER, pf);
    if (cf)
        fputs("placement,seed,arrived_target_pct,arrived_pct,unallocated_gpu_pct,tasks,placed,"
              "dropped\n", cf);
    struct sim_inflate_config cfg;
    sim_inflate_config_init(&cfg);
    int nsteps = 0;
    if (inflate_runs(o, tr, &c, runs, seed0, pf, cf, &cfg, &nsteps) != 0)
        goto out;
    if (o->sample)
        printf("inflation: %d tasks sampled with replacement, seeds %llu..%llu (mean), "
               "%d nodes\n", tr->njobs, seed0, seed0 + (unsigned)runs - 1, tr->nnodes);
    else
        printf("inflation: %d tasks in trace order, %d nodes\n", tr->njobs, tr->nnodes);
    puts("unallocated GPU % (GPU capacity not allocated / all GPUs) by GPU demand arrived:");
    inflate_table(nsteps, c.n, c.name, c.sum, c.cnt, cfg.from, cfg.step);
    if (hf && inflate_html(o, hf, tr, nsteps, c.n, c.name, c.sum, c.cnt, cfg.from, cfg.step) != 0)
        goto out;
    rc = 0;
out:;
    /* every file is closed, even after one fails to */
    if (util_close(pf, o->placements_csv) != 0)
        rc = 1;
    if (util_close(cf, o->csv) != 0)
        rc = 1;
    if (util_close(hf, o->html) != 0)
        rc = 1;
    sim_trace_free(tr);
    for (int k = 0; k < o->npolicy; k++)
        oppolicy_free(c.pol[k]);
    return rc;
}

/* ---- tune (simulator/sim_tune.c does the work) ---------------------------- */

/* Reads a journal for tune: a SQLite store (by its header) or JSON lines. */
static int tune_journal(const char *path, struct sim_journal *j) {
    char head[16] = {0};
    aiq_err e;
    aiq_err_clear(&e);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "aiq-sim: --journal: %s: %s\n", path, strerror(errno));
        return -1;
    }
    size_t got = fread(head, 1, sizeof head, f);
    aiq_rc r;
    if (got == sizeof head && memcmp(head, "SQLite format 3", 16) == 0) {
        fclose(f);
        store *db = store_open(path, NULL, &e);
        if (!db) {
            fprintf(stderr, "aiq-sim: --journal: %s: %s\n", path, e.message);
            return -1;
        }
        r = sim_journal_read_store(db, j, &e);
        store_close(db);
    } else {
        rewind(f);
        r = sim_journal_read_jsonl(f, path, j, &e);
        fclose(f);
    }
    if (r != AIQ_OK) {
        fprintf(stderr, "aiq-sim: --journal: %s\n", e.message);
        return -1;
    }
    return 0;
}

/* The first QueuePolicy of a file, parsed (not compiled): *ms holds it. */
static const struct aiq_policy *tune_policy(const char *path, struct aiq_manifest **ms, int *n) {
    aiq_err e;
    aiq_err_clear(&e);
    if (aiq_manifest_parse_file(path, ms, n, &e) != AIQ_OK) {
        fprintf(stderr, "aiq-sim: %s:%d: %s\n", path, e.line, e.message);
        return NULL;
    }
    for (int i = 0; i < *n; i++) {
        if ((*ms)[i].kind != AIQ_KIND_QUEUEPOLICY)
            continue;
        if ((*ms)[i].rc != AIQ_OK) {
            fprintf(stderr, "aiq-sim: %s:%d: %s\n", path, (*ms)[i].line, (*ms)[i].err.message);
            return NULL;
        }
        return &(*ms)[i].u.policy;
    }
    fprintf(stderr, "aiq-sim: %s: no QueuePolicy in the file\n", path);
    return NULL;
}

struct tunearg {
    const struct aiq_policy *pol;
    const char *name;
    const struct sim_tune_config *cfg;
    const struct sim_tune_result *res;
};

static void tune_yaml_fn(FILE *f, const void *a) {
    const struct tunearg *t = a;
    sim_tune_yaml(f, t->pol, t->name, t->cfg, t->res);
}

/* The search's configuration into *cfg: the journal j's arrivals and
 * settings (--journal), or the trace of o loaded into *tr, with pol and
 * the options of o; progress through *pg. Returns 0, or -1 after naming
 * the error. */
static int tune_configure(const struct opts *o, const struct sim_journal *j,
                          const struct aiq_policy *pol, struct sim_trace **tr,
                          struct sim_tune_config *cfg, struct prog *pg) {
    sim_tune_config_init(cfg);
    if (o->journal) {
        cfg->trace = j->trace;
        cfg->epoch = j->epoch;
        cfg->tick_s = j->tick_s;
        cfg->predict = j->predict;
    } else {
        if (!(*tr = load_trace(o)))
            return -1;
        cfg->trace = *tr;
        cfg->tick_s = o->tick;
        cfg->predict = !o->no_predict;
    }
    cfg->nodes = cfg->trace->nodes;
    cfg->nnodes = cfg->trace->nnodes;
    cfg->policy = pol;
    cfg->objective = o->objective;
    cfg->fixed = o->fixed;
    cfg->preempt_grace_s = o->grace;
    if (o->seed_set)
        cfg->seed = (uint64_t)o->seed;
    if (o->budget)
        cfg->budget = o->budget;
    if (o->holdout > 0)
        cfg->holdout = o->holdout;
    prog_init(pg, "tune", o);
    cfg->progress = progress;
    cfg->progress_ctx = pg;
    return 0;
}

static int cmd_tune(const struct opts *o) {
    int rc = 1, nm = 0;
    struct aiq_manifest *ms = NULL;
    struct sim_trace *tr = NULL;
    struct sim_journal j;
    struct sim_tune_config cfg;
    struct sim_tune_result res;
    struct prog pg;
    char name[AIQ_MAX_NAME + 1];
    aiq_err e;
    aiq_err_clear(&e);
    memset(&j, 0, sizeof j);
    memset(&res, 0, sizeof res);
    char path[1024];
    if (o->npolicy > 1 || (o->npolicy == 0 && !o->journal) || !o->objective ||
        !o->trace == !o->journal) {
        fprintf(stderr, "aiq-sim: tune needs --objective EXPR, --trace FILE and one --policy, "
                "or --journal FILE (its policy from --policies-dir unless --policy)\n");
        return 2;
    }
    if (o->journal && tune_journal(o->journal, &j) != 0)
        goto out;
    if (o->npolicy == 0 && (!j.policy[0] || strcmp(j.policy, "default") == 0)) {
        fprintf(stderr, "aiq-sim: tune: the journal ran the built-in policy, which has no "
                "constants: give --policy\n");
        goto out;
    }
    snprintf(path, sizeof path, "%s/%s.yaml", o->policies_dir, j.policy);
    const struct aiq_policy *pol = tune_policy(o->npolicy ? o->policy[0] : path, &ms, &nm);
    if (!pol)
        goto out;
    if (tune_configure(o, &j, pol, &tr, &cfg, &pg) != 0)
        goto out;
    snprintf(name, sizeof name, "%.*s-tuned", AIQ_MAX_NAME - 6, pol->meta.name);
    if (o->name && !aiq_is_dns_subdomain(o->name)) {
        fprintf(stderr, "aiq-sim: --name: '%s' is not a valid object name (lower-case "
                "letters, digits, '-' and '.')\n", o->name);
        goto out;
    }
    if (sim_tune(&cfg, &res, &e) != AIQ_OK) {
        if (strcmp(e.field, "objective") == 0 && e.line > 0) {
            char buf[1024];
            fx_format_error(o->objective, &e, buf, sizeof buf);
            fprintf(stderr, "aiq-sim: --objective: %s\n", buf);
        } else {
            fprintf(stderr, "aiq-sim: tune: %s\n", e.message);
        }
        goto out;
    }
    sim_tune_report(stdout, &cfg, &res);
    struct tunearg ta = {pol, o->name ? o->name : name, &cfg, &res};
    fflush(stdout);
    if (write_to(o->out ? o->out : "-", tune_yaml_fn, &ta) != 0)
        goto out;
    if (o->out)
        fprintf(stderr, "aiq-sim: wrote QueuePolicy %s to %s\n", ta.name, o->out);
    rc = 0;
out:
    sim_tune_result_deinit(&res);
    sim_trace_free(tr);
    sim_journal_deinit(&j);
    aiq_manifests_free(ms, nm);
    return rc;
}

int main(int argc, char **argv) {
    struct opts o;
    if (argc == 2 && strcmp(argv[1], "--version") == 0) {
        aiq_print_version("aiq-sim");
        return 0;
    }
    int p = parse(argc, argv, &o);
    if (p == -1 || (argc >= 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0))) {
        usage(p == -1 ? stderr : stdout);
        return p == -1 ? 2 : 0;
    }
    if (p != 0)
        return 2;
    if (o.plan_actual && strcmp(o.cmd, "run") != 0 && strcmp(o.cmd, "compare") != 0) {
        /* tune and inflate would plan with the predictions all the same */
        fprintf(stderr, "aiq-sim: --plan-actual is for run and compare, not %s\n", o.cmd);
        return 2;
    }
    if (strcmp(o.cmd, "run") == 0)
        return cmd_run(&o, 0);
    if (strcmp(o.cmd, "compare") == 0)
        return cmd_run(&o, 1);
    if (strcmp(o.cmd, "gen") == 0)
        return cmd_gen(&o);
    if (strcmp(o.cmd, "replay") == 0)
        return cmd_replay(&o);
    if (strcmp(o.cmd, "export") == 0)
        return cmd_export(&o);
    if (strcmp(o.cmd, "inflate") == 0)
        return cmd_inflate(&o);
    if (strcmp(o.cmd, "tune") == 0)
        return cmd_tune(&o);
    fprintf(stderr, "aiq-sim: unknown command '%s'\n", o.cmd);
    usage(stderr);
    return 2;
}
