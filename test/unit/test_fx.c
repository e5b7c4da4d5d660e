/* test_fx.c -- the expression language: grammar and precedence, every
 * function and factor, numeric edge cases, exact error messages with their
 * caret display, explain, the bytecode dump (golden) and hostile input. */
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "common/model.h"
#include "policy/fx.h"
#include "policy/fx_int.h" /* fx__compile_opts */
#include "test/unit/th.h"

/* Factor values used by every test: distinct, so a wrong index shows. */
static void std_factors(double *f) {
    for (int i = 0; i < FX_NFACTORS; i++) f[i] = 100 + i;
    f[FX_F_USER_LEVEL] = 2;
    f[FX_F_GROUP_LEVEL] = 3;
    f[FX_F_JOB_PRIORITY] = 10;
    f[FX_F_JOB_GPUS] = 8;
    f[FX_F_JOB_CPU] = 16;
    f[FX_F_WAIT_HOURS] = 3;
    f[FX_F_JOB_IS_GANG] = 1;
    f[FX_F_FAIRSHARE_USER] = 0.25;
    f[FX_F_QUOTA_USER_SHARE] = 0.5;
}

/* Compiles and evaluates; on a compile error records a failure with the
 * message and returns -12345. */
static double ev(const char *src, fx_mode mode, const double *f) {
    aiq_err e;
    aiq_err_clear(&e);
    fx_prog *p = fx_compile(src, mode, &e);
    if (!p) {
        printf("  compile failed: %s: %s\n", src, e.message);
        th_check(0, src, __FILE__, __LINE__);
        return -12345;
    }
    double v = fx_eval(p, f);
    fx_free(p);
    return v;
}

/* The same source with every number literal x written as (x * job.is_gang)
 * (is_gang is 1), so nothing folds: the VM, its superinstructions and the
 * constant folder must all agree. Returns a malloc'd string. */
static char *unfold(const char *s) {
    size_t n = strlen(s), o = 0;
    char *out = malloc(n * 20 + 1);
    for (size_t i = 0; i < n;) {
        char c = s[i];
        char prev = i ? s[i - 1] : ' ';
        int starts = (c >= '0' && c <= '9') || (c == '.' && s[i + 1] >= '0' && s[i + 1] <= '9');
        int glued = (prev >= 'a' && prev <= 'z') || (prev >= 'A' && prev <= 'Z') ||
                    (prev >= '0' && prev <= '9') || prev == '_' || prev == '.';
        if (starts && !glued) {
            size_t j = i;
            while (j < n && ((s[j] >= '0' && s[j] <= '9') || s[j] == '.' ||
                             (s[j] >= 'a' && s[j] <= 'z') || s[j] == 'E'))
                j++;
            out[o++] = '(';
            memcpy(out + o, s + i, j - i);
            o += j - i;
            memcpy(out + o, " * job.is_gang)", 15);
            o += 15;
            i = j;
        } else {
            out[o++] = s[i++];
        }
    }
    out[o] = '\0';
    return out;
}

typedef struct {
    const char *src;
    double want;
} val_case;

static void run_table(const val_case *t, size_t n, fx_mode mode) {
    double f[FX_NFACTORS];
    std_factors(f);
    for (size_t i = 0; i < n; i++) {
        double v = ev(t[i].src, mode, f);
        if (!th_check_dbl(v, t[i].want, 1e-12, t[i].src, "want", __FILE__, __LINE__))
            printf("  in: %s\n", t[i].src);
        char *u = unfold(t[i].src);
        double w = ev(u, mode, f);
        if (!th_check_dbl(w, t[i].want, 1e-12, u, "want (unfolded)", __FILE__, __LINE__))
            printf("  in: %s\n", u);
        free(u);
    }
}

TEST(fx_grammar_and_precedence) {
    static const val_case t[] = {
        {"1 + 2 * 3", 7},
        {"(1 + 2) * 3", 9},
        {"10 - 4 - 3", 3},             /* left-associative */
        {"100 / 10 / 5", 2},
        {"2 ^ 3 ^ 2", 512},            /* right-associative */
        {"(2 ^ 3) ^ 2", 64},
        {"-2 ^ 2", -4},                /* ^ binds tighter than unary minus */
        {"2 ^ -1", 0.5},
        {"2 * 3 ^ 2", 18},
        {"7 % 3", 1},
        {"-7 % 3", -1},                /* sign of the dividend */
        {"7.5 % 2", 1.5},
        {"- -3", 3},
        {"+3", 3},
        {"1 + 2 > 2", 1},              /* arithmetic before comparison */
        {"1 < 2 == 1", 1},             /* comparison before equality */
        {"3 >= 3", 1}, {"3 > 3", 0}, {"2 <= 1", 0}, {"2 != 2", 0}, {"2 == 2", 1},
        {"!0", 1}, {"!5", 0}, {"!!5", 1},
        {"1 && 0 || 1", 1},            /* && before || */
        {"1 || 0 && 0", 1},
        {"0 || 0", 0},
        {"2 && 3", 1},                 /* booleans are 1/0 */
        {"0 && 1", 0},
        {"1 ? 2 : 3", 2}, {"0 ? 2 : 3", 3},
        {"0 ? 1 : 0 ? 2 : 3", 3},      /* ?: is right-associative */
        {"1 ? 0 ? 5 : 6 : 7", 6},
        {"1 > 0 ? 10 : 20", 10},
        {"true + true", 2}, {"false", 0}, {"!true", 0},
        {"2h", 2}, {"90m", 1.5}, {"1d", 24}, {"1w", 168}, {"3600s", 1},
        {"1h30m", 1.5}, {"1d12h", 36}, {"0.5h", 0.5},
        {"1.5e2", 150}, {".5", 0.5}, {"2E1", 20},
        {"1 + # a comment\n 2", 3},
        {"\t1\r\n+\n2", 3},
        {"((((1))))", 1},
    };
    run_table(t, sizeof t / sizeof t[0], FX_EXPR);
}

TEST(fx_functions) {
    static const val_case t[] = {
        {"min(3, 1, 2)", 1}, {"max(3, 1, 2)", 3}, {"min(2, 5)", 2}, {"max(-1, -2)", -1},
        {"min(9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2, 3, 4, 5, 6)", 0},
        {"abs(-2)", 2}, {"abs(2)", 2},
        {"log(exp(2))", 2}, {"log(1)", 0},
        {"log2(8)", 3}, {"log2(0.5)", -1},
        {"sqrt(16)", 4}, {"sqrt(2) * sqrt(2)", 2},
        {"exp(0)", 1}, {"exp(1)", M_E},
        {"pow(2, 10)", 1024}, {"pow(9, 0.5)", 3},
        {"clamp(5, 0, 3)", 3}, {"clamp(-1, 0, 3)", 0}, {"clamp(2, 0, 3)", 2},
        {"floor(-1.5)", -2}, {"floor(1.5)", 1},
        {"ceil(1.2)", 2}, {"ceil(-1.2)", -1},
    };
    run_table(t, sizeof t / sizeof t[0], FX_EXPR);
    /* with factor operands (no folding; clamp with and without constant
     * bounds takes different code paths) */
    static const val_case u[] = {
        {"min(job.gpus, 4)", 4}, {"max(job.gpus, wait.hours, 20)", 20},
        {"clamp(job.gpus, 0, 5)", 5}, {"clamp(job.gpus, wait.hours, job.cpu)", 8},
        {"clamp(1, wait.hours, job.cpu)", 3}, {"pow(job.gpus, 2)", 64},
        {"pow(2, wait.hours)", 8}, {"job.gpus ^ 2", 64}, {"log2(job.gpus)", 3},
        {"sqrt(job.cpu)", 4}, {"abs(-job.gpus)", 8}, {"floor(job.gpus / 3)", 2},
        {"ceil(job.gpus / 3)", 3}, {"exp(job.gpus - job.gpus)", 1},
        {"log(job.gpus) / log(2)", 3},
    };
    run_table(u, sizeof u / sizeof u[0], FX_EXPR);
}

TEST(fx_every_factor) {
    double f[FX_NFACTORS];
    for (int i = 0; i < FX_NFACTORS; i++) f[i] = 1000 + 7 * i;
    for (int i = 0; i < FX_NFACTORS; i++) {
        const char *name = fx_factor_name(i);
        CHECK(name != NULL);
        CHECK(fx_factor_unit(i) != NULL && fx_factor_unit(i)[0]);
        CHECK(fx_factor_doc(i) != NULL && fx_factor_doc(i)[0]);
        CHECK_INT(fx_factor_index(name), i);
        CHECK_DBL(ev(name, FX_EXPR, f), 1000 + 7 * i, 0);
        char src[128];
        snprintf(src, sizeof src, "2 * %s + 1", name);
        CHECK_DBL(ev(src, FX_EXPR, f), 2 * (1000 + 7 * i) + 1, 0);
    }
    CHECK_INT(fx_factor_index("user.lvl"), -1);
    CHECK_INT(fx_factor_index(NULL), -1);
    CHECK(fx_factor_name(-1) == NULL);
    CHECK(fx_factor_name(FX_NFACTORS) == NULL);
    CHECK(fx_factor_unit(FX_NFACTORS) == NULL);
    CHECK(fx_factor_doc(-5) == NULL);
    CHECK_STR(fx_factor_name(FX_F_WAIT_HOURS), "wait.hours");
    CHECK_STR(fx_factor_unit(FX_F_WAIT_HOURS), "hours");
    /* what a rescore interval refuses: exactly the factors other jobs,
     * usage, the nodes or budgets move (their namespaces), nothing of
     * the job's own, its levels or the clock */
    for (int i = 0; i < FX_NFACTORS; i++) {
        const char *n = fx_factor_name(i);
        int other = strncmp(n, "usage.", 6) == 0 || strncmp(n, "fairshare.", 10) == 0 ||
                    strncmp(n, "quota.", 6) == 0 || strncmp(n, "cluster.", 8) == 0 ||
                    strncmp(n, "budget.", 7) == 0;
        if (!CHECK_INT(fx_factor_moves(i), other))
            fprintf(stderr, "  factor %s\n", n);
    }
    CHECK_INT(fx_factor_moves(-1), 0);
    CHECK_INT(fx_factor_moves(FX_NFACTORS), 0);
    /* the ones the issue names all exist */
    static const char *const named[] = {
        "user.level", "group.level", "job.priority", "job.gpus", "job.gpu_memory_gib",
        "job.replicas", "job.cpu", "job.memory_gib", "wait.hours",
        "runtime.estimate_hours", "runtime.predicted_hours", "attained.gpu_hours",
        "usage.user_gpu_hours", "usage.group_gpu_hours", "fairshare.user",
        "fairshare.group", "quota.user_share", "cluster.free_gpus",
        "cluster.total_gpus", "job.is_gang"};
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++)
        CHECK(fx_factor_index(named[i]) >= 0);
}

TEST(fx_durations_are_hours) {
    double f[FX_NFACTORS];
    std_factors(f); /* wait.hours = 3 */
    CHECK_DBL(ev("wait.hours > 2h", FX_PREDICATE, f), 1, 0);
    CHECK_DBL(ev("wait.hours > 180m", FX_PREDICATE, f), 0, 0);
    CHECK_DBL(ev("wait.hours >= 180m", FX_PREDICATE, f), 1, 0);
    CHECK_DBL(ev("wait.hours < 1d", FX_PREDICATE, f), 1, 0);
    CHECK_DBL(ev("2h < wait.hours", FX_PREDICATE, f), 1, 0);
    CHECK_DBL(ev("wait.hours / 1d", FX_EXPR, f), 0.125, 1e-15);
}

TEST(fx_numeric_rules) {
    double f[FX_NFACTORS];
    std_factors(f);
    static const val_case t[] = {
        {"1 / 0", 0}, {"-1 / 0", 0}, {"0 / 0", 0}, {"5 % 0", 0},
        {"job.gpus / 0", 0}, {"job.gpus / (job.gpus - 8)", 0},
        {"3 / (job.gpus - 8)", 0}, {"job.gpus % (job.gpus - 8)", 0},
        {"log(0)", 0}, {"log(-1)", 0}, {"log2(0)", 0}, {"sqrt(-4)", 0},
        {"0 ^ -1", 0}, {"(-8) ^ (1 / 3)", 0}, {"(-2) ^ 3", -8},
    };
    run_table(t, sizeof t / sizeof t[0], FX_EXPR);

    /* Overflow that depends on the factors is clamped at run time, and
     * fx_eval_checked says so (constant overflow does not compile: see
     * fx_nonfinite_constants_refused). */
    static const struct { const char *src; double want; int clamped; } o[] = {
        {"exp(1000 * job.is_gang)", DBL_MAX, 1}, {"-exp(1000 * job.is_gang)", -DBL_MAX, 1},
        {"1e308 * job.is_gang * 10", DBL_MAX, 1},
        {"exp(1000 * job.is_gang) - exp(1000 * job.is_gang)", 0, 1},
        {"exp(1000 * job.is_gang) > 1e308", 1, 0}, {"min(exp(1000 * job.is_gang), 5)", 5, 0},
        {"1e308 * job.is_gang", 1e308, 0},
    };
    std_factors(f);
    for (size_t i = 0; i < sizeof o / sizeof o[0]; i++) {
        fx_prog *p = fx_compile(o[i].src, FX_EXPR, NULL);
        CHECK(p != NULL);
        if (!p)
            continue;
        int clamped = -1;
        CHECK_DBL(fx_eval_checked(p, f, &clamped), o[i].want, 0);
        CHECK_DBL(fx_eval(p, f), o[i].want, 0);
        if (clamped != o[i].clamped)
            printf("  clamped %d, want %d: %s\n", clamped, o[i].clamped, o[i].src);
        CHECK_INT(clamped, o[i].clamped);
        fx_free(p);
    }

    /* non-finite factor values: never NaN, never infinite */
    f[FX_F_JOB_GPUS] = NAN;
    CHECK_DBL(ev("job.gpus", FX_EXPR, f), 0, 0);
    CHECK_DBL(ev("job.gpus * 2 + 1", FX_EXPR, f), 0, 0);
    CHECK_DBL(ev("job.gpus > 1", FX_EXPR, f), 0, 0);
    CHECK_DBL(ev("job.gpus != 1", FX_EXPR, f), 1, 0);
    CHECK_DBL(ev("min(job.gpus, 3)", FX_EXPR, f), 3, 0);
    CHECK_DBL(ev("job.gpus ? 1 : 2", FX_EXPR, f), 2, 0); /* NaN is false */
    CHECK_DBL(ev("job.gpus", FX_PREDICATE, f), 0, 0);
    CHECK_DBL(ev("!job.gpus", FX_PREDICATE, f), 1, 0);
    f[FX_F_JOB_GPUS] = INFINITY;
    CHECK_DBL(ev("job.gpus", FX_EXPR, f), DBL_MAX, 0);
    CHECK_DBL(ev("-job.gpus", FX_EXPR, f), -DBL_MAX, 0);
    CHECK_DBL(ev("job.gpus - job.gpus", FX_EXPR, f), 0, 0);
    CHECK_DBL(ev("1 / job.gpus", FX_EXPR, f), 0, 0);

    /* predicates are exactly 1 or 0 */
    std_factors(f);
    CHECK_DBL(ev("job.gpus", FX_PREDICATE, f), 1, 0);
    CHECK_DBL(ev("0.5 - 0.5", FX_PREDICATE, f), 0, 0);
    CHECK_DBL(ev("-3", FX_PREDICATE, f), 1, 0);
    CHECK_DBL(ev("job.gpus > 4 && wait.hours", FX_PREDICATE, f), 1, 0);
    CHECK_DBL(ev("job.gpus * 0.5", FX_PREDICATE, f), 1, 0);
}

typedef struct {
    const char *src;
    aiq_rc code;
    const char *msg;
    int line, col;
} err_case;

TEST(fx_error_messages) {
    static const err_case t[] = {
        {"user.lvl + 1", AIQ_EPARSE, "1:1: unknown factor 'user.lvl'; did you mean 'user.level'?", 1, 1},
        {"2 * wait.hour", AIQ_EPARSE, "1:5: unknown factor 'wait.hour'; did you mean 'wait.hours'?", 1, 5},
        {"fairshare.usr", AIQ_EPARSE, "1:1: unknown factor 'fairshare.usr'; did you mean 'fairshare.user'?", 1, 1},
        {"xyz", AIQ_EPARSE, "1:1: unknown factor 'xyz'", 1, 1},
        {"mn(1, 2)", AIQ_EPARSE, "1:1: unknown function 'mn'; did you mean 'min'?", 1, 1},
        {"foo(1)", AIQ_EPARSE, "1:1: unknown function 'foo'; known: min max abs log log2 sqrt exp pow clamp floor ceil", 1, 1},
        {"wait.hours(1)", AIQ_EPARSE, "1:1: 'wait.hours' is a factor, not a function", 1, 1},
        {"min + 1", AIQ_EPARSE, "1:1: 'min' is a function; call it as min(...)", 1, 1},
        {"1 +", AIQ_EPARSE, "1:4: expected an expression but found end of input", 1, 4},
        {"(1 + 2", AIQ_EPARSE, "1:7: expected ')' but found end of input", 1, 7},
        {"1 2", AIQ_EPARSE, "1:3: unexpected '2' after a complete expression (missing operator?)", 1, 3},
        {"(1))", AIQ_EPARSE, "1:4: unexpected ')' after a complete expression (missing operator?)", 1, 4},
        {"min(1)", AIQ_EPARSE, "1:1: min() takes 2 to 16 arguments, got 1", 1, 1},
        {"clamp(1, 2)", AIQ_EPARSE, "1:1: clamp() takes 3 arguments, got 2", 1, 1},
        {"sqrt()", AIQ_EPARSE, "1:1: sqrt() takes 1 argument, got 0", 1, 1},
        {"min(1 2)", AIQ_EPARSE, "1:7: expected ',' or ')' but found '2'", 1, 7},
        {"1 < 2 < 3", AIQ_EPARSE, "1:7: comparisons cannot be chained; write (a < b) && (b < c)", 1, 7},
        {"1 == 1 != 0", AIQ_EPARSE, "1:8: comparisons cannot be chained; write (a < b) && (b < c)", 1, 8},
        {"1 = 1", AIQ_EPARSE, "1:3: unexpected '='; compare with '=='", 1, 3},
        {"1 & 2", AIQ_EPARSE, "1:3: unexpected '&'; did you mean '&&'?", 1, 3},
        {"1 | 2", AIQ_EPARSE, "1:3: unexpected '|'; did you mean '||'?", 1, 3},
        {"2x", AIQ_EPARSE, "1:1: invalid number '2x'; a duration unit is one of s, m, h, d, w", 1, 1},
        {"3 + 2hours", AIQ_EPARSE, "1:5: invalid number '2hours'; a duration unit is one of s, m, h, d, w", 1, 5},
        {"1h30", AIQ_EPARSE, "1:1: invalid duration '1h30': every number needs a unit (s, m, h, d, w)", 1, 1},
        {"1e999", AIQ_EPARSE, "1:1: number '1e999' is out of range", 1, 1},
        {"$", AIQ_EPARSE, "1:1: unexpected character '$'", 1, 1},
        {"1 + \xc3\xa9", AIQ_EPARSE, "1:5: unexpected character '\\xc3'", 1, 5},
        {"", AIQ_EPARSE, "1:1: empty formula", 1, 1},
        {"  # just a comment", AIQ_EPARSE, "1:19: empty formula", 1, 19},
        {"1 ? 2", AIQ_EPARSE, "1:6: expected ':' but found end of input", 1, 6},
        {"1 +\n  user.lvl", AIQ_EPARSE, "2:3: unknown factor 'user.lvl'; did you mean 'user.level'?", 2, 3},
        {"job.gpus *\n\n)", AIQ_EPARSE, "3:1: expected an expression but found ')'", 3, 1},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        aiq_err e;
        aiq_err_clear(&e);
        fx_prog *p = fx_compile(t[i].src, FX_EXPR, &e);
        CHECK(p == NULL);
        fx_free(p);
        CHECK_INT(e.code, t[i].code);
        CHECK_STR(e.message, t[i].msg);
        CHECK_INT(e.line, t[i].line);
        CHECK_INT(e.col, t[i].col);
    }
    aiq_err e;
    aiq_err_clear(&e);
    CHECK(fx_compile(NULL, FX_EXPR, &e) == NULL);
    CHECK_INT(e.code, AIQ_EINVAL);
    CHECK(fx_compile("bad name", FX_EXPR, NULL) == NULL); /* err is optional */
}

TEST(fx_caret_display) {
    const char *src = "1000 * wait.hours\n  + user.lvl * 2";
    aiq_err e;
    aiq_err_clear(&e);
    CHECK(fx_compile(src, FX_EXPR, &e) == NULL);
    char buf[512];
    int n = fx_format_error(src, &e, buf, sizeof buf);
    CHECK_STR(buf, "2:5: unknown factor 'user.lvl'; did you mean 'user.level'?\n"
                   "  + user.lvl * 2\n"
                   "    ^");
    CHECK_INT(n, (int)strlen(buf));
    /* truncation: returns the full length, buffer stays terminated */
    char small[10];
    CHECK_INT(fx_format_error(src, &e, small, sizeof small), n);
    CHECK_STR(small, "2:5: unkn");
    /* tabs are kept so the caret lines up */
    const char *tsrc = "\t1 + $";
    aiq_err_clear(&e);
    CHECK(fx_compile(tsrc, FX_EXPR, &e) == NULL);
    fx_format_error(tsrc, &e, buf, sizeof buf);
    CHECK_STR(buf, "1:6: unexpected character '$'\n\t1 + $\n\t    ^");
    /* no position: only the message */
    aiq_err_clear(&e);
    aiq_err_set(&e, AIQ_ETOOBIG, "too big");
    fx_format_error("x", &e, buf, sizeof buf);
    CHECK_STR(buf, "too big");
}

static char *repeat(const char *unit, int n, const char *tail) {
    size_t u = strlen(unit), t = strlen(tail);
    char *s = malloc(u * (size_t)n + t + 1);
    for (int i = 0; i < n; i++) memcpy(s + u * (size_t)i, unit, u);
    memcpy(s + u * (size_t)n, tail, t + 1);
    return s;
}

static void expect_fail(const char *src, aiq_rc code, const char *msg) {
    aiq_err e;
    aiq_err_clear(&e);
    fx_prog *p = fx_compile(src, FX_EXPR, &e);
    CHECK(p == NULL);
    fx_free(p);
    CHECK_INT(e.code, code);
    if (!CHECK(strstr(e.message, msg) != NULL)) printf("  got: %s\n", e.message);
}

TEST(fx_hostile_input) {
    char *s = repeat("(", 65536, "");
    expect_fail(s, AIQ_ETOOBIG, "formula is 65536 bytes long; the limit is 4096 bytes");
    free(s);
    s = repeat("1+", 10000, "1");
    expect_fail(s, AIQ_ETOOBIG, "formula is 20001 bytes long; the limit is 4096 bytes");
    free(s);
    s = repeat("(", 4000, "");
    expect_fail(s, AIQ_ETOOBIG, "1:65: expression is nested deeper than 64 levels");
    free(s);
    s = repeat("-", 4000, "1");
    expect_fail(s, AIQ_ETOOBIG, "expression is nested deeper than 64 levels");
    free(s);
    s = repeat("2^", 2000, "2");
    expect_fail(s, AIQ_ETOOBIG, "expression is nested deeper than 64 levels");
    free(s);
    s = repeat("1?1:", 1000, "1");
    expect_fail(s, AIQ_ETOOBIG, "expression is nested deeper than 64 levels");
    free(s);
    s = repeat("1*", 2047, "1");
    expect_fail(s, AIQ_ETOOBIG, "formula is too complex: more than 2048 nodes");
    free(s);
    s = repeat("job.gpus+", 300, "1");
    expect_fail(s, AIQ_ETOOBIG, "formula has 301 top-level terms; at most 256 are allowed");
    free(s);
    s = repeat("clamp(job.gpus, job.cpu, ", 60, "1");
    {
        char *t = repeat(")", 60, "");
        char *u = malloc(strlen(s) + strlen(t) + 1);
        memcpy(u, s, strlen(s));
        memcpy(u + strlen(s), t, strlen(t) + 1);
        expect_fail(u, AIQ_ETOOBIG, "needs more than 96 stack slots");
        free(u);
        free(t);
    }
    free(s);
    /* at the limits, it still works: 256 terms and 60 levels of nesting */
    double f[FX_NFACTORS];
    std_factors(f);
    s = repeat("job.gpus+", 255, "1");
    CHECK_DBL(ev(s, FX_EXPR, f), 255 * 8 + 1, 0);
    free(s);
    s = repeat("(", 60, "job.gpus");
    {
        char *t = repeat(")", 60, "");
        char *u = malloc(strlen(s) + strlen(t) + 1);
        memcpy(u, s, strlen(s));
        memcpy(u + strlen(s), t, strlen(t) + 1);
        CHECK_DBL(ev(u, FX_EXPR, f), 8, 0);
        free(u);
        free(t);
    }
    free(s);
    s = repeat("1", AIQ_MAX_FORMULA, ""); /* a 4096-digit number */
    expect_fail(s, AIQ_EPARSE, "1:1: number '1111111111111111111111111111111111111111...' is out of range");
    free(s);
}

TEST(fx_explain_terms) {
    const char *src =
        "1000 * wait.hours   # age\n"
        "  + 2 * user.level\n"
        "  - 3 * job.gpus\n"
        "  + min(job.cpu, 4) / 2\n"
        "  + (job.is_gang ? 50 : 0)";
    double f[FX_NFACTORS];
    std_factors(f);
    aiq_err e;
    aiq_err_clear(&e);
    fx_prog *p = fx_compile(src, FX_EXPR, &e);
    CHECK(p != NULL);
    if (!p) return;
    fx_term t[8];
    int n = fx_explain(p, f, t, 8);
    CHECK_INT(n, 5);
    CHECK_STR(t[0].label, "1000 * wait.hours");
    CHECK_DBL(t[0].value, 3000, 0);
    CHECK_STR(t[1].label, "2 * user.level");
    CHECK_DBL(t[1].value, 4, 0);
    CHECK_STR(t[2].label, "- 3 * job.gpus");
    CHECK_DBL(t[2].value, -24, 0);
    CHECK_STR(t[3].label, "min(job.cpu, 4) / 2");
    CHECK_DBL(t[3].value, 2, 0);
    CHECK_STR(t[4].label, "(job.is_gang ? 50 : 0)");
    CHECK_DBL(t[4].value, 50, 0);
    double sum = 0;
    for (int i = 0; i < n; i++) sum += t[i].value;
    CHECK_DBL(sum, fx_eval(p, f), 0);
    CHECK_DBL(fx_eval(p, f), 3032, 0);
    /* fewer slots: the count is still the whole */
    fx_term one[1];
    CHECK_INT(fx_explain(p, f, one, 1), 5);
    CHECK_STR(one[0].label, "1000 * wait.hours");
    CHECK_INT(fx_explain(p, f, NULL, 0), 5);
    fx_free(p);

    /* sums with awkward floating point still add up exactly */
    p = fx_compile("0.1 * wait.hours - 0.7 * fairshare.user + 1/3 - quota.user_share * 1e-3 "
                   "+ 0.2 * job.cpu", FX_EXPR, &e);
    CHECK(p != NULL);
    if (p) {
        fx_term u[8];
        n = fx_explain(p, f, u, 8);
        CHECK_INT(n, 5);
        sum = 0;
        for (int i = 0; i < n; i++) sum += u[i].value;
        CHECK(sum == fx_eval(p, f));
        CHECK_STR(u[2].label, "1/3");
        CHECK_STR(u[3].label, "- quota.user_share * 1e-3");
        fx_free(p);
    }
    /* a constant sum keeps its terms */
    p = fx_compile("1 + 2h", FX_EXPR, &e);
    fx_term c[4];
    CHECK_INT(fx_explain(p, f, c, 4), 2);
    CHECK_DBL(c[1].value, 2, 0);
    fx_free(p);
    /* a predicate is one term: the whole source */
    p = fx_compile("wait.hours > 2h &&\n job.gpus <= 8", FX_PREDICATE, &e);
    CHECK_INT(fx_explain(p, f, c, 4), 1);
    CHECK_STR(c[0].label, "wait.hours > 2h && job.gpus <= 8");
    CHECK_DBL(c[0].value, 1, 0);
    CHECK_INT(fx_prog_mode(p), FX_PREDICATE);
    fx_free(p);
    /* long terms are cut with "..." */
    p = fx_compile("job.gpus + (wait.hours + wait.hours + wait.hours + wait.hours + wait.hours"
                   " + wait.hours + wait.hours + wait.hours + wait.hours)", FX_EXPR, &e);
    CHECK_INT(fx_explain(p, f, c, 4), 2);
    CHECK_INT(strlen(c[1].label), 95);
    CHECK(strcmp(c[1].label + 92, "...") == 0);
    CHECK_DBL(c[1].value, 27, 0);
    fx_free(p);
    /* a term of exactly 95 bytes fits without "..." */
    char src95[160] = "job.gpus + (";
    while (strlen(src95) < 12 + 93 - 2)
        snprintf(src95 + strlen(src95), sizeof src95 - strlen(src95), "1+");
    snprintf(src95 + strlen(src95), sizeof src95 - strlen(src95), "1)");
    CHECK_INT(strlen(src95) - 11, 95);
    p = fx_compile(src95, FX_EXPR, &e);
    CHECK_INT(fx_explain(p, f, c, 4), 2);
    CHECK_INT(strlen(c[1].label), 95);
    CHECK_STR(c[1].label, src95 + 11);
    fx_free(p);
    fx_free(NULL);
}

TEST(fx_dump_golden) {
    aiq_err e;
    aiq_err_clear(&e);
    fx_prog *p = fx_compile("100 * min(wait.hours, 24) / 24 + 2 * user.level + 3 * group.level"
                            " - 1 / (1 + job.gpus) + (job.is_gang ? 5 : 0)"
                            " + (job.priority > 10 ? job.cpu : 1)", FX_EXPR, &e);
    CHECK(p != NULL);
    if (!p) return;
    char buf[4096];
    int n = fx_dump(p, buf, sizeof buf);
    CHECK_INT(n, (int)strlen(buf));
    CHECK_STR(buf,
        "expression, 30 instructions, stack 2\n"
        "0000 MINK_MULK_DIVK wait.hours 24 100 24 +lin x2\n"
        "0001 DATA   user.level 2\n"
        "0002 DATA   group.level 3\n"
        "0003 ADDK_KDIV job.gpus 1 1\n"
        "0004 SUB   \n"
        "0005 SELK   job.is_gang 5 +acc\n"
        "0006 GTK    job.priority 10\n"
        "0007 JZ     -> 0010\n"
        "0008 F      job.cpu\n"
        "0009 JMP    -> 0011\n"
        "0010 K      1\n"
        "0011 ADD   \n"
        "0012 END   \n"
        "term 0: 100 * min(wait.hours, 24) / 24\n"
        "0013 MINK_MULK_DIVK wait.hours 24 100 24\n"
        "0014 END   \n"
        "term 1: 2 * user.level\n"
        "0015 FMULK  user.level 2\n"
        "0016 END   \n"
        "term 2: 3 * group.level\n"
        "0017 FMULK  group.level 3\n"
        "0018 END   \n"
        "term 3: - 1 / (1 + job.gpus)\n"
        "0019 ADDK_KDIV job.gpus 1 1\n"
        "0020 NEG   \n"
        "0021 END   \n"
        "term 4: (job.is_gang ? 5 : 0)\n"
        "0022 SELK   job.is_gang 5\n"
        "0023 END   \n"
        "term 5: (job.priority > 10 ? job.cpu : 1)\n"
        "0024 GTK    job.priority 10\n"
        "0025 JZ     -> 0028\n"
        "0026 F      job.cpu\n"
        "0027 JMP    -> 0029\n"
        "0028 K      1\n"
        "0029 END   \n");
    char small[16];
    CHECK_INT(fx_dump(p, small, sizeof small), n);
    CHECK_INT(strlen(small), 15);
    double f[FX_NFACTORS];
    std_factors(f);
    CHECK_DBL(fx_eval(p, f), 100.0 * 3 / 24 + 4 + 9 - 1.0 / 9 + 5 + 1, 1e-12);
    fx_free(p);
}

/* Constant parts that overflow are refused at compile time, at the
 * offending text, in both compile modes; the first non-finite term is
 * named at run time. */
TEST(fx_nonfinite_constants_refused) {
    static const struct { const char *src; int col; const char *text; } t[] = {
        {"10 ^ 400 * job.gpus", 1, "\"10 ^ 400\" is infinite"},
        {"job.priority + exp(1000)", 16, "\"exp(1000)\" is infinite"},
        {"job.priority + 1e308 * 10", 16, "\"1e308 * 10\" is infinite"},
        {"wait.hours > 2 ? 1 : -(10 ^ 309)", 23, "\"(10 ^ 309)\" is infinite"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        for (int plain = 0; plain < 2; plain++) {
            aiq_err e;
            aiq_err_clear(&e);
            fx_prog *p = plain ? fx__compile_opts(t[i].src, FX_EXPR, FX__NOFUSE, &e)
                               : fx_compile(t[i].src, FX_EXPR, &e);
            CHECK(p == NULL);
            fx_free(p);
            CHECK_INT(e.code, AIQ_EINVAL);
            CHECK_INT(e.line, 1);
            if (e.col != t[i].col || !strstr(e.message, t[i].text))
                printf("  %s: %s (col %d)\n", t[i].src, e.message, e.col);
            CHECK_INT(e.col, t[i].col);
            CHECK(strstr(e.message, t[i].text) != NULL);
        }
    }
    /* 10 ^ 300 compiles; times a factor it may overflow, per job. */
    fx_prog *p = fx_compile("job.priority + 10 ^ 300 * job.gpus * job.gpus", FX_EXPR, NULL);
    CHECK(p != NULL);
    double f[FX_NFACTORS];
    std_factors(f);
    f[FX_F_JOB_GPUS] = 1e5;
    int clamped = 0;
    CHECK_DBL(fx_eval_checked(p, f, &clamped), DBL_MAX, 0);
    CHECK_INT(clamped, 1);
    CHECK_INT(fx_nonfinite_term(p, f), 1);
    CHECK_STR(fx_term_label(p, 1), "10 ^ 300 * job.gpus * job.gpus");
    CHECK(fx_term_label(p, 2) == NULL);
    f[FX_F_JOB_GPUS] = 2;
    CHECK_DBL(fx_eval_checked(p, f, &clamped), f[FX_F_JOB_PRIORITY] + 4e300, 1e286);
    CHECK_INT(clamped, 0);
    CHECK_INT(fx_nonfinite_term(p, f), -1);
    fx_free(p);
}
