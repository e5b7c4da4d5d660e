/* fx.h -- the expression language of aiq: priority formulas and level
 * predicates ("when"), compiled once per policy change to bytecode and
 * evaluated per job per queue cycle.
 *
 * Pure C (no I/O, no globals). A compiled program is immutable, so one
 * fx_prog may be evaluated from several threads at once.
 *
 * Factors: a job's inputs are a `double f[FX_NFACTORS]` indexed by
 * FX_F_<id> (policy/fx_factors.def). Time factors are in hours, and duration
 * literals (`2h`, `90m`, `1d`, `30s`, `1w`, `1h30m`) evaluate to hours too,
 * so `wait.hours > 2h` reads as it should.
 *
 * The language and its numeric rules are documented in
 * docs/policy-language.md. */
#ifndef AIQ_FX_H
#define AIQ_FX_H

#include <stddef.h>
#include <stdint.h>

#include "common/aiq_err.h"

/* Factor indexes: FX_F_USER_LEVEL, ..., and FX_NFACTORS. */
enum {
#define FX_FACTOR(id, name, unit, moves, doc) FX_F_##id,
#include "policy/fx_factors.def"
#undef FX_FACTOR
    FX_NFACTORS
};

/* Placement factor indexes: FX_PF_NODE_GPUS, ..., and FX_NPFACTORS
 * (policy/fx_place_factors.def; queue.h has the same as Q_PF_). */
enum {
#define FX_PFACTOR(id, name, unit, doc) FX_PF_##id,
#include "policy/fx_place_factors.def"
#undef FX_PFACTOR
    FX_NPFACTORS
};

/* Limits on hostile input. A formula longer than AIQ_MAX_FORMULA bytes
 * (common/model.h) is rejected before it is tokenized. */
#define FX_MAX_DEPTH 64      /* nesting of parentheses / operators */
#define FX_MAX_NODES 2048    /* syntax tree nodes */
#define FX_MAX_TERMS 256     /* top-level additive terms */
#define FX_MAX_ARGS 16       /* arguments of one function call */
#define FX_MAX_STACK 96      /* evaluation stack slots */
#define FX_MAX_CODE 8192     /* instructions (main program + explain terms);
                              * jump targets must fit 16 bits (fx_ins.b) */

typedef struct fx_prog fx_prog; /* opaque compiled program */

typedef enum {
    FX_EXPR = 0,     /* a score: any number */
    FX_PREDICATE = 1 /* a level's `when`: evaluates to 1.0 or 0.0 */
} fx_mode;

/* Compiles src (NUL-terminated, borrowed) in the given mode.
 * Returns a new program the caller frees with fx_free(), or NULL on error:
 * then err (if non-NULL) holds the code (AIQ_EPARSE for syntax and unknown
 * names, AIQ_ETOOBIG for size and nesting limits, AIQ_ENOMEM), a message
 * "line:col: what" naming the offending text, and offset/line/col of the
 * first error. Use fx_format_error() for the caret display. */
fx_prog *fx_compile(const char *src, fx_mode mode, aiq_err *err);

/* As fx_compile, but a bare name is looked up in names[0..nnames)
 * (borrowed; must outlive nothing, the program keeps indexes only)
 * instead of the job factors, and is evaluated from values[i] of that
 * table: fx_eval(p, values) with nnames doubles. noun is what the names
 * are called in errors ("unknown metric 'x'; did you mean ..."). Used for
 * aiq-sim tune's objective over run metrics. fx_dump and fx_explain's
 * labels name job factors, so they are not meant for such programs.
 * AIQ_EINVAL when the table is empty or has more than 65535 names. */
fx_prog *fx_compile_names(const char *src, fx_mode mode, const char *const *names,
                          int nnames, const char *noun, aiq_err *err);

/* One numeric literal of a formula's source, as the tokenizer reads it:
 * "0.5", "1e-3", "48h", "1h30m". The literal never includes a sign: a
 * minus in front is a separate operator, recorded in `negated`. */
typedef struct {
    unsigned start, len;   /* byte range in the source */
    double value;          /* as written (durations in hours), >= 0 */
    int duration;          /* 1 for a duration literal (`48h`) */
    int negated;           /* a unary minus stands right before it */
    int exponent;          /* it is (the start of) the right side of '^' */
} fx_literal;

/* Lists the numeric literals of src in source order into out (up to max;
 * out may be NULL when max is 0; true/false are not numbers). Returns how
 * many src has, or -1 with err (AIQ_EPARSE, "line:col: ..." naming the
 * bad token) when src does not tokenize. */
int fx_literals(const char *src, fx_literal *out, int max, aiq_err *err);

/* Writes src with literal i (lits[i] from fx_literals on this src, in
 * source order) replaced by values[i]: a plain literal in the shortest
 * %g form that reads back (at most 6 significant digits are asked for,
 * so "0.333333"), a duration in hours with an 'h' ("36h", "1.5h"). The
 * sign and everything else of the text are kept, so "-0.5 * x" with 0.75
 * becomes "-0.75 * x". values must be finite and >= 0. Writes at most cap
 * bytes (NUL-terminated when cap > 0); returns the full length (snprintf
 * style), or -1 when a value is negative or not finite or the literals
 * are not ascending ranges inside src. */
int fx_subst_literals(const char *src, const fx_literal *lits, const double *values, int n,
                      char *buf, size_t cap);
/* Compiles a placement score (QueuePolicy.spec.placementScore): the same
 * language and errors as fx_compile in FX_EXPR mode, but the names are the
 * placement factors (fx_place_factors.def: node.free_gpus, frag.delta,
 * ...) instead of the job factors. Evaluate it with fx_eval on a
 * `double f[FX_NPFACTORS]`. */
fx_prog *fx_compile_placement(const char *src, aiq_err *err);

/* Frees p. fx_free(NULL) does nothing. */
void fx_free(fx_prog *p);

/* Formats a compile error for people: err->message, then the source line
 * it points at and a caret under the column, as three lines separated by
 * '\n' (no trailing newline). Without a position (line == 0) only the
 * message is written. Writes at most cap bytes (always NUL-terminated when
 * cap > 0); returns the length the full text has (snprintf style). */
int fx_format_error(const char *src, const aiq_err *err, char *buf,
                     size_t cap);

/* Evaluates p for one job. factors points at FX_NFACTORS doubles
 * (borrowed). Allocates nothing and runs at most as many instructions as
 * the program has (jumps only go forward). The result is never NaN or
 * infinite (see docs/policy-language.md, "Numbers"); a predicate returns
 * exactly 1.0 or 0.0. */
double fx_eval(const fx_prog *p, const double *factors);

/* As fx_eval, and *clamped (when non-NULL) tells whether the result as
 * computed was NaN or infinite, so that the returned value is the clamped
 * one (+-DBL_MAX, or 0 for NaN). A formula whose constant parts overflow
 * does not compile; this is for overflow that depends on the factors
 * (exp(wait.hours), a huge weight times job.gpus, ...). Runs the portable
 * interpreter (a little slower than fx_eval); allocates nothing. */
double fx_eval_checked(const fx_prog *p, const double *factors, int *clamped);

/* The index of the first top-level term (as fx_explain numbers them)
 * whose value for these factors is NaN or infinite before clamping, or -1
 * when every term is finite (the sum alone overflowed). */
int fx_nonfinite_term(const fx_prog *p, const double *factors);

/* The source label of term i (fx_term.label), or NULL when i is out of
 * range. The string belongs to p. */
const char *fx_term_label(const fx_prog *p, int i);

/* The mode p was compiled in. */
fx_mode fx_prog_mode(const fx_prog *p);

/* The factors p's source names: bit i set for factor i (FX_F_<id> of a
 * formula or predicate, FX_PF_<id> of a placement score, the table's
 * index under fx_compile_names; indexes of 64 and up are not recorded).
 * A superset of what the compiled code reads (`0 * x` still names x).
 * 0 for NULL. */
uint64_t fx_prog_reads(const fx_prog *p);

/* One term of an explained score: the term's source text (whitespace
 * collapsed, "- " in front of subtracted terms, cut with "..." to fit) and
 * its signed value for the job. */
typedef struct {
    char label[96];
    double value;
} fx_term;

/* Explains a score like Slurm's sprio: each top-level additive term of the
 * formula with its value for the job, so their sum is fx_eval()'s result
 * (exactly, unless a term overflowed). A predicate, or a formula that is
 * not a sum, is one term. Fills up to max terms (terms may be NULL when
 * max is 0) and returns how many the formula has. */
int fx_explain(const fx_prog *p, const double *factors, fx_term *terms,
               int max);

/* Writes the bytecode listing of p (one instruction a line, "pc OPCODE
 * operand", then each explain term's code) for golden tests and
 * `kubectl aiq explain`. Returns the full length (snprintf style). */
int fx_dump(const fx_prog *p, char *buf, size_t cap);

/* Factor metadata. fx_factor_index returns the FX_F_ index of a name
 * ("wait.hours") or -1; the others return static strings, or NULL when i
 * is out of range. */
int fx_factor_index(const char *name);
const char *fx_factor_name(int i);
const char *fx_factor_unit(int i);
const char *fx_factor_doc(int i);
/* 1 when factor i moves between cycles while the job, its levels and the
 * clock stand still (usage, fair share, quota shares, cluster, budget):
 * the factors a rescore interval refuses. 0 otherwise or out of range. */
int fx_factor_moves(int i);

/* The same for the placement factors (FX_PF_ indexes). */
int fx_pfactor_index(const char *name);
const char *fx_pfactor_name(int i);
const char *fx_pfactor_unit(int i);
const char *fx_pfactor_doc(int i);

#endif
