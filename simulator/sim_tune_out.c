/* sim_tune_out.c -- what aiq-sim tune prints (see sim_tune.h): the
 * report of the search and its validation (constants before and after,
 * the objective on both parts, each held-out metric before and after with
 * what got worse), and the tuned QueuePolicy as YAML. */
#include "simulator/sim_tune.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

/* A metric of the report: label, where, and which way is better. */
struct row {
    const char *label;
    size_t off;
    bool is_int;
    int higher_better;      /* 1: higher is better, 0: lower, -1: neither */
};

#define RD(f, l, h) {l, offsetof(struct sim_metrics, f), false, h}
#define RI(f, l, h) {l, offsetof(struct sim_metrics, f), true, h}
static const struct row rows[] = {
    RI(ndone, "finished", 1),           RI(nunfinished, "unfinished", 0),
    RD(jct_avg, "mean_jct_h", 0),       RD(jct_p50, "p50_jct_h", 0),
    RD(jct_p95, "p95_jct_h", 0),        RD(jct_p99, "p99_jct_h", 0),
    RD(wait_avg, "mean_wait_h", 0),     RD(wait_p50, "p50_wait_h", 0),
    RD(wait_p95, "p95_wait_h", 0),      RD(wait_p99, "p99_wait_h", 0),
    RD(makespan_h, "makespan_h", 0),    RD(util_avg, "utilisation", 1),
    RD(jain_groups, "jain_groups", 1),  RD(jain_users, "jain_users", 1),
    RD(frag_avg, "fragmentation", 0),   RI(preemptions, "preemptions", 0),
    RD(lost_gpu_h, "lost_gpu_h", 0),
};
#define NROWS ((int)(sizeof rows / sizeof rows[0]))

static double get(const struct sim_metrics *m, const struct row *r) {
    const char *p = (const char *)m + r->off;
    return r->is_int ? *(const int *)(const void *)p : *(const double *)(const void *)p;
}

/* "+12.3%" of b against a, or "" when a is 0. */
static void change(char *buf, size_t cap, double a, double b) {
    if (a == 0 || !isfinite(a) || !isfinite(b))
        snprintf(buf, cap, "%s", a == b ? "=" : "");
    else
        snprintf(buf, cap, "%+.1f%%", (b - a) / fabs(a) * 100);
}

/* The metrics that got worse on the held-out part, comma-separated. */
static void worse_list(char *buf, size_t cap, const struct sim_tune_result *res) {
    size_t o = 0;
    buf[0] = '\0';
    for (int k = 0; k < NROWS; k++) {
        double a = get(&res->mbefore, &rows[k]), b = get(&res->mafter, &rows[k]);
        bool worse = rows[k].higher_better == 1 ? b < a - 1e-9 : b > a + 1e-9;
        if (rows[k].higher_better < 0 || !worse || o >= cap)
            continue;
        int n = snprintf(buf + o, cap - o, "%s%s", o ? ", " : "", rows[k].label);
        if (n > 0)
            o += (size_t)n;
    }
}

static void print_params(FILE *out, const struct sim_tune_result *res, const char *pre) {
    for (int i = 0; i < res->nparams; i++) {
        const struct sim_tune_param *p = &res->param[i];
        char at[48] = "";
        if (p->line > 0)
            snprintf(at, sizeof at, "@%d:%d", p->line, p->col);
        const char *u = p->duration ? "h" : "";
        fprintf(out, "%s  %s%s: %s -> %.6g%s (searched %.6g%s..%.6g%s)\n", pre, p->where, at,
                p->text, p->after, u, p->lo, u, p->hi, u);
    }
}

/* Prints the report; see sim_tune.h. */
void sim_tune_report(FILE *out, const struct sim_tune_config *cfg,
                     const struct sim_tune_result *res) {
    char a[32], b[32], c[32], worse[512];
    fprintf(out, "tune: objective %s (lower is better), seed %llu, %d runs\n", cfg->objective,
            (unsigned long long)cfg->seed, res->runs);
    fprintf(out, "split: search on the first %d jobs, validated on the last %d (submitted from "
            "%.1f h)\n", res->train_jobs, res->hold_jobs, res->split_t / 3600);
    fputs("constants:\n", out);
    print_params(out, res, "");
    if (cfg->fixed)
        fprintf(out, "  kept as written (--fixed): %s\n", cfg->fixed);
    fprintf(out, "%-14s %13s %13s %9s\n", "objective", "before", "after", "change");
    change(c, sizeof c, res->train_before, res->train_after);
    fprintf(out, "%-14s %13.4f %13.4f %9s\n", "search part", res->train_before,
            res->train_after, c);
    change(c, sizeof c, res->hold_before, res->hold_after);
    fprintf(out, "%-14s %13.4f %13.4f %9s\n", "held-out part", res->hold_before,
            res->hold_after, c);
    fprintf(out, "\n%-14s %13s %13s %9s  (held-out part)\n", "metric", "before", "after",
            "change");
    for (int k = 0; k < NROWS; k++) {
        double x = get(&res->mbefore, &rows[k]), y = get(&res->mafter, &rows[k]);
        bool w = rows[k].higher_better == 1 ? y < x - 1e-9 : y > x + 1e-9;
        snprintf(a, sizeof a, rows[k].is_int ? "%.0f" : "%.3f", x);
        snprintf(b, sizeof b, rows[k].is_int ? "%.0f" : "%.3f", y);
        change(c, sizeof c, x, y);
        fprintf(out, "%-14s %13s %13s %9s%s\n", rows[k].label, a, b, c, w ? "  worse" : "");
    }
    worse_list(worse, sizeof worse, res);
    fprintf(out, "\ntrade-offs: %s\n", worse[0] ? worse : "no metric got worse");
    if (!(res->hold_after < res->hold_before))
        fputs("verdict: the tuned policy does not improve the held-out part; keep the current "
              "one\n", out);
    else
        fputs("verdict: the tuned policy improves the objective on the held-out part\n", out);
}

/* A YAML double-quoted scalar (JSON escapes are valid YAML). */
static void yq(FILE *out, const char *s) {
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(out, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", out);
        else if (*p == '\t')
            fputs("\\t", out);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(out, "\\u%04x", *p);
        else
            fputc(*p, out);
    }
    fputc('"', out);
}

/* A multi-line text as a YAML literal block (indent spaces in front of
 * each line), as the presets write their formulas; a text a block cannot
 * carry exactly (a control byte, a tab, a first line that starts with a
 * space, blank lines at the end) goes double-quoted. */
static void ytext(FILE *out, const char *s, int indent) {
    size_t n = strlen(s);
    bool block = strchr(s, '\n') != NULL && s[0] != ' ' && s[0] != '\n' &&
                 !(n >= 2 && s[n - 1] == '\n' && s[n - 2] == '\n');
    for (const unsigned char *p = (const unsigned char *)s; block && *p; p++)
        block = *p == '\n' || (*p >= 0x20 && *p < 0x7f);
    if (!block) {
        yq(out, s);
        return;
    }
    fputs(s[n - 1] == '\n' ? "|" : "|-", out);
    for (const char *p = s; *p;) {
        size_t len = strcspn(p, "\n");
        fputc('\n', out);
        if (len > 0)
            fprintf(out, "%*s%.*s", indent, "", (int)len, p);
        p += len + (p[len] == '\n');
    }
}

/* A duration the CRD's pattern accepts, reading back exactly: whole
 * hours, minutes or seconds ("48h", "90m", "45s"), else seconds with
 * their fraction ("0.5s"). */
static void ydur(FILE *out, double s) {
    if (s >= 3600 && fmod(s, 3600) == 0)
        fprintf(out, "%.0fh", s / 3600);
    else if (s >= 60 && fmod(s, 60) == 0)
        fprintf(out, "%.0fm", s / 60);
    else if (s == floor(s))
        fprintf(out, "%.0fs", s);
    else
        fprintf(out, "%.17gs", s);
}

static void yaml_preemption(FILE *out, const struct aiq_policy_spec *s) {
    if (!s->preempt_lower_levels && !s->preempt_within_level && !s->preempt_no_reclaim &&
        s->preempt_min_runtime_s == 0 && s->preempt_max_per_hour == 0 &&
        s->preempt_max_job_min_runtime_s == 3600)
        return;
    fprintf(out, "  preemption:\n    lowerLevels: %s\n", s->preempt_lower_levels ? "true" : "false");
    if (s->preempt_within_level)
        fprintf(out, "    withinLevel:\n      scoreMargin: %.17g\n", s->preempt_score_margin);
    fprintf(out, "    reclaimBorrowed: %s\n", s->preempt_no_reclaim ? "false" : "true");
    fputs("    minRuntime: ", out);
    ydur(out, s->preempt_min_runtime_s);
    fputs("\n    maxJobMinRuntime: ", out);
    ydur(out, s->preempt_max_job_min_runtime_s);
    fprintf(out, "\n    maxPerJobPerHour: %d\n", s->preempt_max_per_hour);
}

static void yaml_header(FILE *out, const struct aiq_policy *orig,
                        const struct sim_tune_config *cfg, const struct sim_tune_result *res) {
    char c[32], worse[512];
    fprintf(out, "# Tuned by aiq-sim tune from QueuePolicy %s: objective %s, seed %llu, %d "
            "runs.\n", orig->meta.name ? orig->meta.name : "", cfg->objective,
            (unsigned long long)cfg->seed, res->runs);
    change(c, sizeof c, res->hold_before, res->hold_after);
    fprintf(out, "# Held-out part (last %d jobs): objective %.4f -> %.4f (%s); search part "
            "(first %d jobs): %.4f -> %.4f.\n", res->hold_jobs, res->hold_before,
            res->hold_after, c, res->train_jobs, res->train_before, res->train_after);
    worse_list(worse, sizeof worse, res);
    fprintf(out, "# Worse on the held-out part: %s.\n# Constants:\n",
            worse[0] ? worse : "nothing");
    print_params(out, res, "#");
    if (cfg->fixed)
        fprintf(out, "#  kept as written (--fixed): %s\n", cfg->fixed);
}

/* The measured comparison as annotations, for `kubectl aiq policy test`
 * and `kubectl get -o yaml`: aiq.dev/tuned-by (objective, seed, runs,
 * source policy) and aiq.dev/tuned-result (both parts, what got worse). */
static void yaml_annotations(FILE *out, const struct aiq_policy *orig,
                             const struct sim_tune_config *cfg,
                             const struct sim_tune_result *res) {
    char by[1200], result[1200], c[32], worse[512];
    snprintf(by, sizeof by, "aiq-sim tune from QueuePolicy %s: objective %s, seed %llu, %d runs",
             orig->meta.name ? orig->meta.name : "", cfg->objective,
             (unsigned long long)cfg->seed, res->runs);
    change(c, sizeof c, res->hold_before, res->hold_after);
    worse_list(worse, sizeof worse, res);
    snprintf(result, sizeof result, "held-out part (last %d jobs): objective %.4f -> %.4f (%s); "
             "search part (first %d jobs): %.4f -> %.4f; worse on the held-out part: %s",
             res->hold_jobs, res->hold_before, res->hold_after, c, res->train_jobs,
             res->train_before, res->train_after, worse[0] ? worse : "nothing");
    fputs("\n  annotations:\n    aiq.dev/tuned-by: ", out);
    yq(out, by);
    fputs("\n    aiq.dev/tuned-result: ", out);
    yq(out, result);
}

/* Writes the YAML; see sim_tune.h. */
void sim_tune_yaml(FILE *out, const struct aiq_policy *orig, const char *name,
                   const struct sim_tune_config *cfg, const struct sim_tune_result *res) {
    const struct aiq_policy_spec *s = &orig->spec;
    yaml_header(out, orig, cfg, res);
    fputs("apiVersion: aiq.dev/v1alpha1\nkind: QueuePolicy\nmetadata:\n  name: ", out);
    yq(out, name);
    yaml_annotations(out, orig, cfg, res);
    fputs("\nspec:\n  formula: ", out);
    ytext(out, res->formula ? res->formula : s->formula, 4);
    fputs("\n  levels:\n", out);
    for (int i = 0; i < s->nlevels; i++) {
        fputs("    - name: ", out);
        yq(out, s->levels[i].name ? s->levels[i].name : "");
        const char *w = i < AIQ_MAX_LEVELS && res->when[i] ? res->when[i] : s->levels[i].when;
        if (w && i + 1 < s->nlevels) {
            fputs("\n      when: ", out);
            yq(out, w);
        }
        fputc('\n', out);
    }
    fprintf(out, "  backfill: %s\n  placement: %s\n",
            s->backfill == AIQ_BACKFILL_EASY ? "Easy" : "None",
            s->placement == AIQ_PLACE_SPREAD ? "spread"
            : s->placement == AIQ_PLACE_FGD  ? "fgd"
                                             : "binpack");
    if (s->placement_score) {
        fputs("  placementScore: ", out);
        ytext(out, s->placement_score, 4);
        fputc('\n', out);
    }
    if (s->rescore_interval_s > 0) {
        fputs("  rescoreInterval: ", out);
        ydur(out, s->rescore_interval_s);
        fputc('\n', out);
    }
    double starv = res->starvation_after_s > 0 ? res->starvation_after_s : s->starvation_after_s;
    if (starv > 0) {
        fputs("  starvation:\n    after: ", out);
        ydur(out, starv);
        fputc('\n', out);
        if (s->starvation_promote_to) {
            fputs("    promoteTo: ", out);
            yq(out, s->starvation_promote_to);
            fputc('\n', out);
        }
    }
    fputs("  fairShare:\n    halfLife: ", out);
    ydur(out, s->fairshare_half_life_s > 0 ? s->fairshare_half_life_s : 7 * 86400.0);
    fputc('\n', out);
    yaml_preemption(out, s);
    if (s->elastic_no_grow)
        fputs("  elastic:\n    grow: false\n", out);
    fputs("  active: false\n", out);
}
