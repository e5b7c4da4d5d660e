/* test_fx_opt.c -- the expression VM's optimisations change no result by a
 * single bit. Every formula is compiled twice, optimised (fx_compile:
 * folding, superinstructions, operand modes, fused pairs, weighted tails)
 * and plain (fx__compile_opts(FX__NOFUSE): one stack operation per syntax
 * node), and both programs run on the threaded VM (fx_eval) and on the
 * portable switch VM (fx__run_switch); the four results, and the explain
 * terms of both programs, must be identical bit for bit. Inputs: every
 * operator and function in every operand shape, every preset formula and
 * level predicate in examples/policies/, the bench formula, and thousands
 * of random formulas, each on factor vectors mixing ordinary values with
 * zeros of both signs, huge, tiny, infinite and NaN values. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <yaml.h>

#include "policy/fx_int.h"
#include "test/unit/th.h"

#define NVEC 48 /* factor vectors per formula */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void) { /* xorshift64 */
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static int pick(int n) { return (int)(rng() % (uint64_t)n); }

static const double specials[] = {
    0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 168.0, 1e308, -1e308, DBL_MAX, -DBL_MAX,
    DBL_MIN, 4.9e-324, 1e-300, NAN, -NAN, INFINITY, -INFINITY, 3.0, 1e9,
};
#define NSPECIAL (sizeof specials / sizeof specials[0])

/* Vector v of NVEC: the first ones all one special value (so whole
 * formulas see NaN, inf, -0, ...), then mixes of specials, small integers
 * (equality, x == 0) and random reals. */
static void make_vector(int v, double *f) {
    for (int i = 0; i < FX_NFACTORS; i++) {
        if ((size_t)v < NSPECIAL) { f[i] = specials[v]; continue; }
        switch (pick(4)) {
        case 0: f[i] = specials[pick((int)NSPECIAL)]; break;
        case 1: f[i] = (double)(pick(7) - 3); break;
        default: f[i] = ((double)(rng() >> 11) / 9007199254740992.0 - 0.3) * 40; break;
        }
    }
}

static int same_bits(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

static int nchecked; /* formulas compared, so a test cannot pass on none */

/* Compiles src both ways and compares every result; returns 1 when all
 * agree (or both refuse the source with the same error code). */
static int compare(const char *src, fx_mode mode) {
    aiq_err e1, e2;
    aiq_err_clear(&e1);
    aiq_err_clear(&e2);
    fx_prog *opt = fx_compile(src, mode, &e1);
    fx_prog *plain = fx__compile_opts(src, mode, FX__NOFUSE, &e2);
    int ok = 1;
    if (!opt || !plain) {
        ok = !opt && !plain && e1.code == e2.code;
        if (!ok)
            printf("  %s: optimised %s, plain %s\n", src, opt ? "compiles" : e1.message,
                   plain ? "compiles" : e2.message);
        goto out;
    }
    nchecked++;
    double f[FX_NFACTORS];
    fx_term t1[FX_MAX_TERMS], t2[FX_MAX_TERMS];
    for (int v = 0; v < NVEC && ok; v++) {
        make_vector(v, f);
        double r[4] = {fx_eval(opt, f), fx_eval(plain, f),
                       fx__run_switch(opt->code, 0, f),
                       fx__run_switch(plain->code, 0, f)};
        for (int i = 1; i < 4; i++)
            if (!same_bits(r[0], r[i])) {
                printf("  %s (vector %d): optimised %a, plain %a, switch %a / %a\n", src,
                       v, r[0], r[1], r[2], r[3]);
                ok = 0;
                break;
            }
        if (!isfinite(r[0]) || (mode == FX_PREDICATE && r[0] != 0 && r[0] != 1)) {
            printf("  %s (vector %d): result %a\n", src, v, r[0]);
            ok = 0;
        }
        int n1 = fx_explain(opt, f, t1, FX_MAX_TERMS);
        int n2 = fx_explain(plain, f, t2, FX_MAX_TERMS);
        if (n1 != n2) {
            printf("  %s: %d terms optimised, %d plain\n", src, n1, n2);
            ok = 0;
        }
        for (int i = 0; ok && i < n1; i++) {
            double s = fx__run_switch(opt->code, opt->terms[i].pc, f);
            if (!same_bits(t1[i].value, t2[i].value) || !same_bits(t1[i].value, s) ||
                strcmp(t1[i].label, t2[i].label) != 0) {
                printf("  %s (vector %d) term %d '%s': optimised %a, plain %a, switch %a\n",
                       src, v, i, t1[i].label, t1[i].value, t2[i].value, s);
                ok = 0;
            }
        }
    }
out:
    fx_free(opt);
    fx_free(plain);
    return ok;
}

/* ---- operand shapes ----------------------------------------------------- */

/* Operands in each shape the compiler treats apart: factor, constant
 * (zero of both signs too), a computed value, a weighted factor. */
static const char *const operands[] = {
    "job.gpus", "wait.hours", "3", "0", "-0", "0.5", "1e308", "(job.cpu - 2)",
    "(2 * user.level)", "min(job.cpu, 4)", "(job.is_gang ? 2 : 0)",
};
#define NOPERANDS (sizeof operands / sizeof operands[0])

TEST(fx_opt_every_binary_operator) {
    static const char *const ops[] = {"+", "-", "*", "/", "%", "^", "<", "<=",
                                      ">", ">=", "==", "!=", "&&", "||"};
    char src[256];
    int bad = 0;
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++)
        for (size_t a = 0; a < NOPERANDS; a++)
            for (size_t b = 0; b < NOPERANDS; b++) {
                /* alone, as a term after others (accumulated), and first
                 * of a sum followed by weighted terms (tails) */
                snprintf(src, sizeof src, "%s %s %s", operands[a], ops[o], operands[b]);
                bad += !compare(src, FX_EXPR);
                bad += !compare(src, FX_PREDICATE);
                snprintf(src, sizeof src, "2 * job.cpu - (%s %s %s) + 3 * user.level",
                         operands[a], ops[o], operands[b]);
                bad += !compare(src, FX_EXPR);
                snprintf(src, sizeof src, "job.priority + (%s %s %s) - 7 * fairshare.user"
                         " + 0.5 * job.age_hours", operands[a], ops[o], operands[b]);
                bad += !compare(src, FX_EXPR);
            }
    CHECK_INT(bad, 0);
    CHECK(nchecked > 2000);
}

TEST(fx_opt_every_function_and_unary) {
    static const char *const fn1[] = {"abs", "log", "log2", "sqrt", "exp", "floor", "ceil", "-", "!"};
    static const char *const fn2[] = {"min", "max", "pow"};
    char src[256];
    int bad = 0;
    for (size_t i = 0; i < sizeof fn1 / sizeof fn1[0]; i++)
        for (size_t a = 0; a < NOPERANDS; a++) {
            snprintf(src, sizeof src, "%s(%s)", fn1[i], operands[a]);
            bad += !compare(src, FX_EXPR);
            bad += !compare(src, FX_PREDICATE);
            snprintf(src, sizeof src, "1 + %s(%s) * 2 + 3 * job.cpu", fn1[i], operands[a]);
            bad += !compare(src, FX_EXPR);
            snprintf(src, sizeof src, "job.cpu * %s(%s) - %s(%s + 1) / 4", fn1[i], operands[a],
                     fn1[i], operands[a]);
            bad += !compare(src, FX_EXPR);
        }
    for (size_t i = 0; i < sizeof fn2 / sizeof fn2[0]; i++)
        for (size_t a = 0; a < NOPERANDS; a++)
            for (size_t b = 0; b < NOPERANDS; b++) {
                snprintf(src, sizeof src, "%s(%s, %s)", fn2[i], operands[a], operands[b]);
                bad += !compare(src, FX_EXPR);
                snprintf(src, sizeof src, "5 * job.gpus + %s(%s, %s) + 2 * wait.hours", fn2[i],
                         operands[a], operands[b]);
                bad += !compare(src, FX_EXPR);
                if (i < 2) {
                    snprintf(src, sizeof src, "%s(%s, %s, job.cpu, 2)", fn2[i], operands[a],
                             operands[b]);
                    bad += !compare(src, FX_EXPR);
                }
            }
    for (size_t a = 0; a < NOPERANDS; a++)
        for (size_t b = 0; b < NOPERANDS; b++) {
            snprintf(src, sizeof src, "clamp(%s, %s, 4)", operands[a], operands[b]);
            bad += !compare(src, FX_EXPR);
            snprintf(src, sizeof src, "clamp(job.cpu, %s, %s) + 1", operands[a], operands[b]);
            bad += !compare(src, FX_EXPR);
            snprintf(src, sizeof src, "%s ? %s : 0", operands[a], operands[b]);
            bad += !compare(src, FX_EXPR);
            snprintf(src, sizeof src, "job.cpu + (%s ? 0 : %s) + 2 * job.gpus", operands[a],
                     operands[b]);
            bad += !compare(src, FX_EXPR);
            snprintf(src, sizeof src, "%s ? %s : job.cpu", operands[a], operands[b]);
            bad += !compare(src, FX_PREDICATE);
        }
    CHECK_INT(bad, 0);
}

/* The fused shapes on purpose: pairs (k * x / k2, k2 / (x + k),
 * (k - x) * k2) and k2 * min(x, k) / k3, alone, accumulated, followed by weighted tails of every
 * length, after jumps, and with division by zero and overflow. */
TEST(fx_opt_fused_shapes) {
    static const char *const shapes[] = {
        "1000 * min(wait.hours, 168) / 168", "300 / (1 + runtime.predicted_hours)",
        "200 * (1 - quota.user_share)", "job.cpu * 1e308 / 1e-10",
        "1 / (-1 + job.is_gang)", "(0 - job.gpus) * 1e308", "(job.gpus > 2 ? 3 : 1) * 4 / 3",
        "(job.is_gang ? 50 : 0)", "-job.cpu", "!job.gpus", "min(job.cpu, 4) / 2",
        "2 * min(job.cpu * 3, 1e308) / 1e-300", "min(job.gpus, 0) * -0 / 3",
        "(job.gpus > 1 ? min(job.cpu, 2) : 5) * 3 / 7", "7 * min(1, job.cpu) / 2",
    };
    char src[1024];
    int bad = 0;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int tail = 0; tail <= 9; tail++) {
            size_t o = (size_t)snprintf(src, sizeof src, "%s", shapes[i]);
            for (int k = 0; k < tail && o < sizeof src - 64; k++)
                o += (size_t)snprintf(src + o, sizeof src - o, " %c %d * %s", k % 3 ? '+' : '-',
                                      k * 7 + 1, fx_factor_name(k * 5 % FX_NFACTORS));
            bad += !compare(src, FX_EXPR);
            char two[1100];
            snprintf(two, sizeof two, "job.priority - %s", src);
            bad += !compare(two, FX_EXPR);
            snprintf(two, sizeof two, "%s + (job.cpu > 3 ? %s : 2)", src, shapes[i]);
            bad += !compare(two, FX_EXPR);
        }
    CHECK_INT(bad, 0);
}

/* ---- random formulas ---------------------------------------------------- */

static const char *const consts[] = {"0", "1", "2", "0.5", "3", "168", "1e308", "1e-3",
                                     "300", "-0", "7", "2h"};

static void gen(char *buf, size_t cap, size_t *o, int depth);

static void put(char *buf, size_t cap, size_t *o, const char *s) {
    size_t n = strlen(s);
    if (*o + n < cap) {
        memcpy(buf + *o, s, n + 1);
        *o += n;
    }
}

static void gen_leaf(char *buf, size_t cap, size_t *o) {
    if (pick(5) < 3) put(buf, cap, o, fx_factor_name(pick(FX_NFACTORS)));
    else put(buf, cap, o, consts[pick((int)(sizeof consts / sizeof consts[0]))]);
}

static void gen(char *buf, size_t cap, size_t *o, int depth) {
    static const char *const bin[] = {" + ", " - ", " * ", " / ", " % ", " ^ ", " < ",
                                      " <= ", " > ", " >= ", " == ", " != ", " && ", " || "};
    static const char *const f1[] = {"abs(", "log(", "log2(", "sqrt(", "exp(", "floor(",
                                     "ceil(", "-(", "!("};
    static const char *const f2[] = {"min(", "max(", "pow("};
    if (depth <= 0 || pick(4) == 0) { gen_leaf(buf, cap, o); return; }
    switch (pick(8)) {
    case 0: case 1: case 2: /* binary, often with a constant side */
        put(buf, cap, o, "(");
        if (pick(3)) gen(buf, cap, o, depth - 1); else gen_leaf(buf, cap, o);
        put(buf, cap, o, bin[pick((int)(sizeof bin / sizeof bin[0]))]);
        if (pick(3)) gen_leaf(buf, cap, o); else gen(buf, cap, o, depth - 1);
        put(buf, cap, o, ")");
        break;
    case 3:
        put(buf, cap, o, f1[pick((int)(sizeof f1 / sizeof f1[0]))]);
        gen(buf, cap, o, depth - 1);
        put(buf, cap, o, ")");
        break;
    case 4:
        put(buf, cap, o, f2[pick((int)(sizeof f2 / sizeof f2[0]))]);
        gen(buf, cap, o, depth - 1);
        put(buf, cap, o, ", ");
        gen(buf, cap, o, depth - 1);
        put(buf, cap, o, ")");
        break;
    case 5:
        put(buf, cap, o, "clamp(");
        gen(buf, cap, o, depth - 1);
        put(buf, cap, o, ", ");
        gen_leaf(buf, cap, o);
        put(buf, cap, o, ", ");
        gen_leaf(buf, cap, o);
        put(buf, cap, o, ")");
        break;
    case 6:
        put(buf, cap, o, "(");
        gen(buf, cap, o, depth - 1);
        put(buf, cap, o, " ? ");
        gen(buf, cap, o, depth - 1);
        put(buf, cap, o, " : ");
        if (pick(2)) put(buf, cap, o, "0"); else gen(buf, cap, o, depth - 1);
        put(buf, cap, o, ")");
        break;
    default: /* k * factor, the weighted term */
        gen_leaf(buf, cap, o);
        put(buf, cap, o, " * ");
        put(buf, cap, o, fx_factor_name(pick(FX_NFACTORS)));
        break;
    }
}

TEST(fx_opt_random_formulas) {
    char src[2048];
    int bad = 0, before = nchecked;
    for (int i = 0; i < 4000 && bad < 5; i++) {
        size_t o = 0;
        src[0] = '\0';
        int terms = 1 + pick(14);
        for (int t = 0; t < terms; t++) {
            if (t) put(src, sizeof src, &o, pick(3) ? " + " : " - ");
            if (pick(3) == 0) { /* a weighted term, to build tails */
                gen_leaf(src, sizeof src, &o);
                put(src, sizeof src, &o, " * ");
                put(src, sizeof src, &o, fx_factor_name(pick(FX_NFACTORS)));
            } else {
                gen(src, sizeof src, &o, 1 + pick(4));
            }
        }
        bad += !compare(src, i % 5 ? FX_EXPR : FX_PREDICATE);
    }
    CHECK_INT(bad, 0);
    CHECK(nchecked - before > 3500); /* most random formulas compile */
}

/* ---- presets and the bench formula -------------------------------------- */

/* Compares every `formula` and `when` scalar of examples/policies/<name>.yaml;
 * returns how many it found (0 on a read error). */
static int compare_preset(const char *name, int *bad) {
    char path[512];
    snprintf(path, sizeof path, "%s/examples/policies/%s.yaml", th_srcdir(), name);
    FILE *fp = fopen(path, "rb");
    if (!fp) { printf("  cannot open %s\n", path); return 0; }
    yaml_parser_t parser;
    yaml_event_t ev;
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_file(&parser, fp);
    int found = 0, want = 0; /* want: 1 formula, 2 when, after that key */
    for (;;) {
        if (!yaml_parser_parse(&parser, &ev)) { found = 0; break; }
        if (ev.type == YAML_STREAM_END_EVENT) { yaml_event_delete(&ev); break; }
        if (ev.type == YAML_SCALAR_EVENT) {
            const char *s = (const char *)ev.data.scalar.value;
            if (want) {
                *bad += !compare(s, want == 1 ? FX_EXPR : FX_PREDICATE);
                found++;
                want = 0;
            } else {
                want = strcmp(s, "formula") == 0 ? 1 : strcmp(s, "when") == 0 ? 2 : 0;
            }
        } else {
            want = 0;
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&parser);
    fclose(fp);
    return found;
}

TEST(fx_opt_presets_and_bench_formula) {
    static const char *const presets[] = {"fifo", "priority", "srjf", "tiresias-las",
                                          "fairshare", "slurm-multifactor"};
    int bad = 0;
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        if (!CHECK(compare_preset(presets[i], &bad) >= 1)) printf("  preset %s\n", presets[i]);
    /* bench/bench_fx.c's formula */
    bad += !compare("1000 * min(wait.hours, 168) / 168 + 2000 * fairshare.user"
                    " + 500 * fairshare.group + 10 * job.priority + 100 * user.level"
                    " + 50 * group.level - 20 * job.gpus + 300 / (1 + runtime.predicted_hours)"
                    " - 5 * attained.gpu_hours + 200 * (1 - quota.user_share)"
                    " + (job.is_gang ? 50 : 0) + 0.5 * job.age_hours", FX_EXPR);
    CHECK_INT(bad, 0);
}

/* The plain build really is unfused (so the comparisons above compare
 * something): one stack op per node, no superinstruction in its listing,
 * while the optimised bench formula uses them. */
TEST(fx_opt_plain_is_plain) {
    aiq_err e;
    aiq_err_clear(&e);
    const char *src = "1000 * min(wait.hours, 168) / 168 + 2000 * fairshare.user"
                      " + 500 * fairshare.group + 300 / (1 + runtime.predicted_hours)"
                      " + (job.is_gang ? 50 : 0)";
    fx_prog *plain = fx__compile_opts(src, FX_EXPR, FX__NOFUSE, &e);
    fx_prog *opt = fx_compile(src, FX_EXPR, &e);
    CHECK(plain && opt);
    if (plain && opt) {
        for (int i = 0; i < plain->ncode; i++) {
            unsigned fl = fx__op_flags[plain->code[i].op];
            CHECK(!(fl & (FX_OPF_M | FX_OPF_N | FX_OPF_K2)) && plain->code[i].m == 0);
            CHECK(plain->code[i].op != FX_OP_FMULK && plain->code[i].op != FX_OP_ADDFK);
        }
        char buf[4096];
        fx_dump(opt, buf, sizeof buf);
        CHECK(strstr(buf, "MINK_MULK_DIVK wait.hours 168 1000 168 +lin x2\n") != NULL);
        CHECK(strstr(buf, "ADDK_KDIV runtime.predicted_hours 1 300 +acc\n") != NULL);
        CHECK(strstr(buf, "SELK   job.is_gang 50 +acc\n") != NULL);
        CHECK(opt->ncode < plain->ncode);
    }
    fx_free(plain);
    fx_free(opt);
}
