/* policy_adapter.h -- a QueuePolicy compiled for the queue core: the
 * formula and each level's `when` as fx programs (policy/fx.h), exposed to
 * queue/ through its q_scorer interface (score, level) and q_policy.
 *
 * A compile error names the field and keeps fx's "line:col: what"
 * message ("spec.levels[1].when: 1:9: unknown name 'wait.hour'"), so the
 * QueuePolicy status can show it. */
#ifndef AIQ_POLICY_POLICY_ADAPTER_H
#define AIQ_POLICY_POLICY_ADAPTER_H

#include <stdint.h>

#include "common/aiq_err.h"
#include "common/model.h"
#include "policy/fx.h"
#include "queue/queue.h"

typedef struct oppolicy oppolicy;

#define OPST_MAX_TERMS 16

/* One term of an explained score: its label and value (the AIJob status's
 * scoreTerms entry). The label is the compiled policy's (every job under
 * one formula has the same ones), borrowed: valid while the policy lives,
 * or while the holder keeps a reference to its labels (opst_tnames_ref),
 * as a job's recorded status does across a policy replaced meanwhile. */
struct opst_term {
    const char *name;
    double value;
};

/* A compiled formula's term labels, reference counted (one thread: the
 * operator's loop). */
struct opst_tnames;
/* p's labels (borrowed; take a reference to keep them past p). */
struct opst_tnames *oppolicy_term_names(const oppolicy *p);
/* Adds a reference to t (NULL gives NULL) and returns t. */
struct opst_tnames *opst_tnames_ref(struct opst_tnames *t);
/* Drops a reference; the last frees t. NULL is a no-op. */
void opst_tnames_unref(struct opst_tnames *t);

/* Compiles p (borrowed; nothing of it is kept). Returns a new compiled
 * policy (caller frees with oppolicy_free) or NULL with err: AIQ_EPARSE /
 * AIQ_ETOOBIG from fx with err->field "spec.formula" or
 * "spec.levels[i].when" and the message prefixed by the field, AIQ_EINVAL
 * for a policy without levels, AIQ_ENOMEM. */
oppolicy *oppolicy_compile(const struct aiq_policy *p, aiq_err *err);

/* The policy used while no QueuePolicy is active: formula "job.priority",
 * one level "default", no backfill, binpack. NULL on ENOMEM. */
oppolicy *oppolicy_default(void);

/* Frees p. NULL is a no-op. */
void oppolicy_free(oppolicy *p);

/* Fills *sc with p as the queue's scorer (p must outlive its use). */
void oppolicy_scorer(oppolicy *p, q_scorer *sc);

/* Fills *qp with p's levels, backfill, placement, starvation rule, preemption
 * rules and elastic growth
 * (names borrowed from p). */
void oppolicy_qpolicy(const oppolicy *p, struct q_policy *qp);

/* p's spec.placementScore as the queue's placer (q_input.placer), or NULL
 * when the policy has none (p must outlive its use). */
const q_placer *oppolicy_placer(const oppolicy *p);

/* Explains the score for factors f as up to max terms (label and value;
 * the labels are p's, see struct opst_term). Returns how many were
 * written. */
int oppolicy_explain(const oppolicy *p, const double *f,
                     struct opst_term *terms, int max);

/* Name of level i ("" when out of range), level count, the fair-share
 * half-life in seconds, and the policy's name ("default" for the
 * built-in). */
const char *oppolicy_level_name(const oppolicy *p, int i);
int oppolicy_nlevels(const oppolicy *p);
double oppolicy_half_life(const oppolicy *p);
const char *oppolicy_name(const oppolicy *p);

/* The clock p's scores read a waiting job's time factors at, at now
 * (q_score_clock: the rescore interval's start, or now). */
double oppolicy_score_clock(const oppolicy *p, double now);

/* How many scores of p came out NaN or infinite and were clamped to a
 * finite value (+-DBL_MAX, 0 for NaN) since p was compiled; *term (when
 * non-NULL) gets the source text of the first such term ("" when none;
 * the string belongs to p). */
unsigned long oppolicy_clamped(const oppolicy *p, const char **term);

#endif
