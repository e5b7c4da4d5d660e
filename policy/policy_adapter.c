/* policy_adapter.c -- QueuePolicy -> fx programs -> q_scorer (see
 * policy_adapter.h). */
#include "policy/policy_adapter.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The labels of a formula's terms (fx_term_label), as long as anyone
 * holds them. */
struct opst_tnames {
    int refs;
    char label[OPST_MAX_TERMS][sizeof(((fx_term *)0)->label)];
};

struct oppolicy {
    char name[AIQ_MAX_NAME + 1];
    fx_prog *formula;
    struct opst_tnames *tnames;         /* formula's term labels (a reference) */
    fx_prog *when[AIQ_MAX_LEVELS];      /* NULL: catch-all */
    char *level_names[AIQ_MAX_LEVELS];
    const char *level_ptrs[AIQ_MAX_LEVELS];
    int nlevels;
    aiq_backfill backfill;
    aiq_placement placement;
    fx_prog *place_score;               /* spec.placementScore, or NULL */
    q_placer placer;
    double starvation_after_s;
    double rescore_interval_s;
    int promote_to;
    double half_life_s;
    /* preemption and elastic growth, as q_policy wants them */
    bool preempt_lower, preempt_within, no_reclaim, no_grow;
    double preempt_margin, min_runtime_s, max_job_min_runtime_s;
    int max_per_hour;
    /* scores that came out NaN or infinite and were clamped (fx_eval_checked),
     * and the first such term's source text: reported in the policy's
     * status (reconcile_policy.c). Written by the cycle's scorer only. */
    unsigned long clamped;
    char clamped_term[sizeof(((fx_term *)0)->label)];
};

/* Frees a compiled policy; see policy_adapter.h. */
void oppolicy_free(oppolicy *p) {
    if (!p)
        return;
    fx_free(p->formula);
    opst_tnames_unref(p->tnames);
    fx_free(p->place_score);
    for (int i = 0; i < AIQ_MAX_LEVELS; i++) {
        fx_free(p->when[i]);
        free(p->level_names[i]);
    }
    free(p);
}

/* The formula's term labels in a block of their own (one reference), or
 * NULL out of memory. */
static struct opst_tnames *pa_term_names(const fx_prog *formula) {
    struct opst_tnames *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->refs = 1;
    for (int i = 0; i < OPST_MAX_TERMS; i++) {
        const char *l = fx_term_label(formula, i);
        if (!l)
            break;
        snprintf(t->label[i], sizeof t->label[i], "%s", l);
    }
    return t;
}

/* Compiles src in mode; on error prefixes the message with field. */
static fx_prog *pa_compile(const char *src, fx_mode mode, const char *field,
                           aiq_err *err) {
    aiq_err e;
    aiq_err_clear(&e);
    /* The field says which factor table: spec.placementScore names the
     * placement factors, every other field the job factors. */
    fx_prog *prog = strcmp(field, "spec.placementScore") == 0 ? fx_compile_placement(src, &e)
                                                               : fx_compile(src, mode, &e);
    if (!prog && err) {
        aiq_err saved = e;
        aiq_err_clear(err);
        aiq_err_field(err, e.code ? e.code : AIQ_EPARSE, field, "%s: %s", field,
                      e.message);
        err->offset = saved.offset;
        err->line = saved.line;
        err->col = saved.col;
    }
    return prog;
}

/* q_placer over a compiled placement score (never fails: fx_eval's
 * result is finite). */
static int pa_place_score(void *ctx, const double *pf, double *score) {
    *score = fx_eval(ctx, pf);
    return 0;
}

/* With a rescore interval: fails when prog (the source of field) names a
 * factor that moves between cycles while the job does not (the moves
 * column of fx_factors.def): a kept score would go stale on it
 * (q_policy.rescore_interval_s). */
static int pa_check_kept(const fx_prog *prog, const char *field, aiq_err *err) {
    uint64_t reads = fx_prog_reads(prog);
    for (int i = 0; i < FX_NFACTORS; i++) {
        if (!(reads & (1ull << i)) || !fx_factor_moves(i))
            continue;
        aiq_err_field(err, AIQ_EINVAL, "spec.rescoreInterval",
                      "spec.rescoreInterval: %s reads %s, which changes between rescores "
                      "while the job does not; a rescore interval needs a score of the "
                      "job's own fields, user.level, group.level and the clock only "
                      "(remove rescoreInterval or %s)",
                      field, fx_factor_name(i), fx_factor_name(i));
        return -1;
    }
    return 0;
}

/* Compiles a QueuePolicy; see policy_adapter.h. */
oppolicy *oppolicy_compile(const struct aiq_policy *p, aiq_err *err) {
    char field[64];
    oppolicy *op = calloc(1, sizeof *op);
    if (!op) {
        aiq_err_set(err, AIQ_ENOMEM, "out of memory compiling policy");
        return NULL;
    }
    snprintf(op->name, sizeof op->name, "%s", p->meta.name ? p->meta.name : "");
    if (p->spec.nlevels < 1 || p->spec.nlevels > AIQ_MAX_LEVELS) {
        aiq_err_field(err, AIQ_EINVAL, "spec.levels",
                      "spec.levels: need 1..%d levels, got %d", AIQ_MAX_LEVELS,
                      p->spec.nlevels);
        goto fail;
    }
    op->formula = pa_compile(p->spec.formula ? p->spec.formula : "job.priority",
                             FX_EXPR, "spec.formula", err);
    if (!op->formula)
        goto fail;
    if ((op->tnames = pa_term_names(op->formula)) == NULL) {
        aiq_err_set(err, AIQ_ENOMEM, "out of memory compiling policy");
        goto fail;
    }
    op->nlevels = p->spec.nlevels;
    op->promote_to = 0;
    for (int i = 0; i < op->nlevels; i++) {
        const struct aiq_level *lv = &p->spec.levels[i];
        op->level_names[i] = strdup(lv->name ? lv->name : "");
        if (!op->level_names[i]) {
            aiq_err_set(err, AIQ_ENOMEM, "out of memory compiling policy");
            goto fail;
        }
        op->level_ptrs[i] = op->level_names[i];
        /* The last level is the catch-all whatever its `when` says. */
        if (lv->when && i < op->nlevels - 1) {
            snprintf(field, sizeof field, "spec.levels[%d].when", i);
            op->when[i] = pa_compile(lv->when, FX_PREDICATE, field, err);
            if (!op->when[i])
                goto fail;
        }
        if (p->spec.starvation_promote_to && lv->name &&
            strcmp(p->spec.starvation_promote_to, lv->name) == 0)
            op->promote_to = i;
    }
    op->backfill = p->spec.backfill;
    op->placement = p->spec.placement;
    if (p->spec.placement_score) {
        op->place_score = pa_compile(p->spec.placement_score, FX_EXPR, "spec.placementScore", err);
        if (!op->place_score)
            goto fail;
        op->placer.ctx = op->place_score;
        op->placer.score = pa_place_score;
    }
    op->starvation_after_s = p->spec.starvation_after_s;
    op->rescore_interval_s = p->spec.rescore_interval_s;
    if (op->rescore_interval_s > 0) {
        if (pa_check_kept(op->formula, "spec.formula", err))
            goto fail;
        for (int i = 0; i < op->nlevels; i++) {
            snprintf(field, sizeof field, "spec.levels[%d].when", i);
            if (op->when[i] && pa_check_kept(op->when[i], field, err))
                goto fail;
        }
    }
    op->half_life_s = p->spec.fairshare_half_life_s > 0
                          ? p->spec.fairshare_half_life_s : 7 * 86400.0;
    op->preempt_lower = p->spec.preempt_lower_levels;
    op->preempt_within = p->spec.preempt_within_level;
    op->preempt_margin = p->spec.preempt_score_margin;
    op->no_reclaim = p->spec.preempt_no_reclaim;
    op->min_runtime_s = p->spec.preempt_min_runtime_s;
    op->max_job_min_runtime_s = p->spec.preempt_max_job_min_runtime_s;
    op->max_per_hour = p->spec.preempt_max_per_hour;
    op->no_grow = p->spec.elastic_no_grow;
    return op;
fail:
    oppolicy_free(op);
    return NULL;
}

/* The built-in policy; see policy_adapter.h. */
oppolicy *oppolicy_default(void) {
    struct aiq_level lv = {(char *)"default", NULL};
    struct aiq_policy p;
    memset(&p, 0, sizeof p);
    p.meta.name = (char *)"default";
    p.spec.formula = (char *)"job.priority";
    p.spec.levels = &lv;
    p.spec.nlevels = 1;
    return oppolicy_compile(&p, NULL);
}

static int pa_score(void *ctx, const double *f, double *score) {
    oppolicy *p = ctx;
    int clamped = 0;
    *score = fx_eval_checked(p->formula, f, &clamped);
    if (clamped) {
        if (!p->clamped_term[0]) {
            const char *t = fx_term_label(p->formula, fx_nonfinite_term(p->formula, f));
            snprintf(p->clamped_term, sizeof p->clamped_term, "%s",
                     t ? t : "(the sum of the terms)");
        }
        p->clamped++;
    }
    return 0;
}

/* See policy_adapter.h. */
unsigned long oppolicy_clamped(const oppolicy *p, const char **term) {
    if (term)
        *term = p->clamped_term;
    return p->clamped;
}

static int pa_level(void *ctx, const double *f, int *level) {
    const oppolicy *p = ctx;
    for (int i = 0; i < p->nlevels - 1; i++) {
        if (p->when[i] && fx_eval(p->when[i], f) != 0) {
            *level = i;
            return 0;
        }
    }
    *level = p->nlevels - 1;
    return 0;
}

void oppolicy_scorer(oppolicy *p, q_scorer *sc) {
    sc->ctx = p;
    sc->score = pa_score;
    sc->level = pa_level;
}

void oppolicy_qpolicy(const oppolicy *p, struct q_policy *qp) {
    memset(qp, 0, sizeof *qp);
    qp->nlevels = p->nlevels;
    qp->level_names = p->level_ptrs;
    qp->backfill = p->backfill;
    qp->placement = p->placement;
    qp->starvation_after_s = p->starvation_after_s;
    qp->promote_to = p->promote_to;
    qp->rescore_interval_s = p->rescore_interval_s;
    qp->preempt_lower = p->preempt_lower;
    qp->preempt_within = p->preempt_within;
    qp->preempt_margin = p->preempt_margin;
    qp->no_reclaim = p->no_reclaim;
    qp->min_runtime_s = p->min_runtime_s;
    qp->max_job_min_runtime_s = p->max_job_min_runtime_s;
    qp->max_preemptions_per_hour = p->max_per_hour;
    qp->no_grow = p->no_grow;
}

/* Explains a score; see policy_adapter.h. */
int oppolicy_explain(const oppolicy *p, const double *f,
                     struct opst_term *terms, int max) {
    fx_term t[OPST_MAX_TERMS];
    if (max > OPST_MAX_TERMS)
        max = OPST_MAX_TERMS;
    int n = fx_explain(p->formula, f, t, max);
    if (n > max) /* max <= OPST_MAX_TERMS: each has its label */
        n = max;
    for (int i = 0; i < n; i++) {
        terms[i].name = p->tnames->label[i];
        terms[i].value = t[i].value;
    }
    return n;
}

struct opst_tnames *oppolicy_term_names(const oppolicy *p) {
    return p->tnames;
}

struct opst_tnames *opst_tnames_ref(struct opst_tnames *t) {
    if (t)
        t->refs++;
    return t;
}

void opst_tnames_unref(struct opst_tnames *t) {
    if (t && --t->refs == 0)
        free(t);
}

const char *oppolicy_level_name(const oppolicy *p, int i) {
    return (i >= 0 && i < p->nlevels) ? p->level_names[i] : "";
}

int oppolicy_nlevels(const oppolicy *p) {
    return p->nlevels;
}

double oppolicy_half_life(const oppolicy *p) {
    return p->half_life_s > 0 ? p->half_life_s : 7 * 86400.0;
}

/* See policy_adapter.h. */
double oppolicy_score_clock(const oppolicy *p, double now) {
    struct q_policy qp;
    memset(&qp, 0, sizeof qp);
    qp.rescore_interval_s = p ? p->rescore_interval_s : 0;
    return q_score_clock(&qp, now);
}

const char *oppolicy_name(const oppolicy *p) {
    return p->name;
}

/* The placement score as the queue's placer, or NULL; see policy_adapter.h. */
const q_placer *oppolicy_placer(const oppolicy *p) {
    return p && p->place_score ? &p->placer : NULL;
}
