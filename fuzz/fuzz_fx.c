/* fuzz_fx.c -- libFuzzer target for the expression language: compile
 * arbitrary bytes as a formula, as a predicate and as a placement score
 * (placement factors); on success evaluate
 * with ordinary, zero, negative, huge and non-finite factor values,
 * explain and dump; on failure format the error with its caret.
 * Aborts when a result is NaN or infinite, a predicate is not 0/1, an
 * explain label is not terminated, a parse error has no position, or
 * fx_eval_checked / fx_nonfinite_term disagree with fx_eval, or the
 * literals aiq-sim tune rewrites (fx_literals, fx_subst_literals) do not
 * come back as many after a rewrite. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/model.h"
#include "policy/fx.h"

#define FUZZ_MAX_INPUT 8192 /* past AIQ_MAX_FORMULA, to hit the size check */

static void check(int ok) {
    if (!ok) abort();
}

/* aiq-sim tune's view of a formula that compiled: its literals are
 * found, each >= 0 and inside the text in order, and writing them back
 * doubled keeps as many literals (or is refused: a value too long to
 * write). */
static void literals(const char *src) {
    fx_literal l[64];
    double v[64];
    char buf[2 * FUZZ_MAX_INPUT];
    int n = fx_literals(src, l, 64, NULL);
    check(n >= 0);
    if (n > 64) return;
    for (int i = 0; i < n; i++) {
        check(l[i].value >= 0 && l[i].len > 0 && l[i].start + l[i].len <= strlen(src));
        check(i == 0 || l[i].start >= l[i - 1].start + l[i - 1].len);
        v[i] = l[i].value * 2;
    }
    int k = fx_subst_literals(src, l, v, n, buf, sizeof buf);
    if (k < 0 || (size_t)k >= sizeof buf) return;
    check(fx_literals(buf, NULL, 0, NULL) == n || strlen(buf) > AIQ_MAX_FORMULA);
}

static void exercise(const char *src, fx_mode mode, int place) {
    aiq_err err;
    aiq_err_clear(&err);
    fx_prog *p = place ? fx_compile_placement(src, &err) : fx_compile(src, mode, &err);
    char buf[2048];
    if (!p) {
        check(err.code != AIQ_OK && err.message[0] != '\0');
        /* syntax errors and constants that are not finite have a position */
        if (err.code == AIQ_EPARSE || err.code == AIQ_EINVAL)
            check(err.line >= 1 && err.col >= 1);
        int n = fx_format_error(src, &err, buf, sizeof buf);
        check(n >= 0 && strlen(buf) < sizeof buf);
        return;
    }
    static const double fills[] = {0.0, 1.0, -3.5, 1e300, -1e300, 1e-300,
                                   NAN, INFINITY, -INFINITY, 7.25};
    double f[FX_NFACTORS];
    fx_term terms[8];
    for (size_t v = 0; v < sizeof fills / sizeof fills[0] + 1; v++) {
        for (int i = 0; i < FX_NFACTORS; i++)
            f[i] = v < sizeof fills / sizeof fills[0] ? fills[v] : (double)(i * 3 % 7) - 2;
        double r = fx_eval(p, f);
        check(isfinite(r));
        if (mode == FX_PREDICATE) check(r == 0.0 || r == 1.0);
        int n = fx_explain(p, f, terms, 8);
        check(n >= 1 && n <= FX_MAX_TERMS);
        /* the checked evaluation gives the same bits and says whether it
         * clamped; a term that is not finite makes the result clamp */
        int clamped = -1;
        double rc = fx_eval_checked(p, f, &clamped);
        check(memcmp(&rc, &r, sizeof r) == 0 && (clamped == 0 || clamped == 1));
        int bad = fx_nonfinite_term(p, f);
        check(bad >= -1 && bad < n);
        if (bad >= 0) check(clamped == 1 && fx_term_label(p, bad) != NULL);
        for (int i = 0; i < n && i < 8; i++) {
            check(isfinite(terms[i].value));
            check(memchr(terms[i].label, '\0', sizeof terms[i].label) != NULL);
        }
    }
    int n = fx_dump(p, buf, sizeof buf);
    check(n >= 0);
    fx_free(p);
    if (mode == FX_EXPR)
        literals(src);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > FUZZ_MAX_INPUT) size = FUZZ_MAX_INPUT;
    char *src = malloc(size + 1);
    if (!src) return 0;
    memcpy(src, data, size);
    src[size] = '\0'; /* an embedded NUL just ends the formula early */
    exercise(src, FX_EXPR, 0);
    exercise(src, FX_PREDICATE, 0);
    exercise(src, FX_EXPR, 1); /* f[] is longer than FX_NPFACTORS: fine */
    free(src);
    return 0;
}
