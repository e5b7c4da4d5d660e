/* fx_compile.c -- from source to program: parse (fx_parse.c), fold
 * constants in the tree, then generate bytecode with superinstructions
 * (constant and factor operands, weighted terms f*k, fused constant pairs,
 * weighted tails), plus one small code sequence per top-level additive
 * term for fx_explain. Also fx__compile_opts (FX__NOFUSE: the plain code
 * the tests compare against), fx_free and fx__apply, the constant
 * evaluator folding shares with the VM's rules. */
#include <stdlib.h>
#include <string.h>

#include "common/model.h"
#include "policy/fx_int.h"

/* Constant evaluator for folding; see fx_int.h. */
double fx__apply(fx_opcode op, double z, double y, double x) {
    switch (op) {
    case FX_OP_ADD: return y + x;
    case FX_OP_SUB: return y - x;
    case FX_OP_MUL: return y * x;
    case FX_OP_DIV: return fx__div(y, x);
    case FX_OP_MOD: return fx__mod(y, x);
    case FX_OP_POW: return fx__pow(y, x);
    case FX_OP_NEG: return -x;
    case FX_OP_NOT: return fx__truthy(x) ? 0.0 : 1.0;
    case FX_OP_TRUTH: return fx__truthy(x) ? 1.0 : 0.0;
    case FX_OP_LT: return y < x;
    case FX_OP_LE: return y <= x;
    case FX_OP_GT: return y > x;
    case FX_OP_GE: return y >= x;
    case FX_OP_EQ: return y == x;
    case FX_OP_NE: return y != x;
    case FX_OP_MIN: return fx__min(y, x);
    case FX_OP_MAX: return fx__max(y, x);
    case FX_OP_ABS: return fabs(x);
    case FX_OP_LOG: return fx__log(x);
    case FX_OP_LOG2: return fx__log2(x);
    case FX_OP_SQRT: return fx__sqrt(x);
    case FX_OP_EXP: return exp(x);
    case FX_OP_FLOOR: return floor(x);
    case FX_OP_CEIL: return ceil(x);
    case FX_OP_CLAMP: return fx__clamp(z, y, x);
    default: return 0.0;
    }
}

/* ---- constant folding --------------------------------------------------- */
static int fx_is_num(const fx_parse_ctx *c, int i) {
    return i >= 0 && c->nodes[i].kind == FX_N_NUM;
}

/* Turns node i into the constant v (keeping its source range). A value
 * that is not finite is the formula's error, at the node: its range is
 * known now, so it is refused here rather than clamped at every run. */
static void fx_make_num(fx_parse_ctx *c, int i, double v) {
    fx_node *n = &c->nodes[i];
    if (!isfinite(v)) {
        uint32_t len = n->end > n->start ? n->end - n->start : 0;
        fx__error(c, AIQ_EINVAL, n->start,
                  "\"%.*s%s\" is %s: a constant part of a formula must be a "
                  "finite number (at most about 1.8e308)",
                  (int)(len > 60 ? 60 : len), c->src + n->start, len > 60 ? "..." : "",
                  v != v ? "not a number" : "infinite (it overflows)");
    }
    n->kind = FX_N_NUM;
    n->kid = -1;
    n->k = v;
}

static void fx_fold(fx_parse_ctx *c, int i) {
    fx_node *n = &c->nodes[i];
    for (int k = n->kid; k >= 0; k = c->nodes[k].next) fx_fold(c, k);
    int a = n->kid, b = a >= 0 ? c->nodes[a].next : -1;
    int d = b >= 0 ? c->nodes[b].next : -1;
    switch ((fx_node_kind)n->kind) {
    case FX_N_UNARY:
        if (fx_is_num(c, a))
            fx_make_num(c, i, fx__apply((fx_opcode)n->op, 0, 0, c->nodes[a].k));
        break;
    case FX_N_BINARY:
        if (fx_is_num(c, a) && fx_is_num(c, b))
            fx_make_num(c, i, fx__apply((fx_opcode)n->op, 0, c->nodes[a].k,
                                        c->nodes[b].k));
        break;
    case FX_N_CALL: {
        for (int k = a; k >= 0; k = c->nodes[k].next)
            if (!fx_is_num(c, k)) return;
        if (n->op == FX_OP_MIN || n->op == FX_OP_MAX) {
            double v = c->nodes[a].k;
            for (int k = b; k >= 0; k = c->nodes[k].next)
                v = fx__apply((fx_opcode)n->op, 0, v, c->nodes[k].k);
            fx_make_num(c, i, v);
        } else if (n->op == FX_OP_CLAMP) {
            fx_make_num(c, i, fx__clamp(c->nodes[a].k, c->nodes[b].k, c->nodes[d].k));
        } else if (n->op == FX_OP_POW) {
            fx_make_num(c, i, fx__pow(c->nodes[a].k, c->nodes[b].k));
        } else {
            fx_make_num(c, i, fx__apply((fx_opcode)n->op, 0, 0, c->nodes[a].k));
        }
        break;
    }
    case FX_N_AND:
    case FX_N_OR:
        if (fx_is_num(c, a)) {
            int t = fx__truthy(c->nodes[a].k);
            if (n->kind == FX_N_AND && !t) fx_make_num(c, i, 0.0);
            else if (n->kind == FX_N_OR && t) fx_make_num(c, i, 1.0);
            else if (fx_is_num(c, b)) fx_make_num(c, i, fx__truthy(c->nodes[b].k));
        }
        break;
    case FX_N_TERNARY:
        if (fx_is_num(c, a)) {
            /* the chosen branch takes this node's place; the source range
             * stays the whole conditional's (for explain labels) */
            uint32_t s = n->start, e = n->end;
            int32_t next = n->next;
            *n = c->nodes[fx__truthy(c->nodes[a].k) ? b : d];
            n->start = s;
            n->end = e;
            n->next = next;
        }
        break;
    default:
        break;
    }
}

/* ---- code generation ---------------------------------------------------- */
typedef struct {
    fx_parse_ctx *pc;
    fx_ins *code;
    int n;
    int depth, max_depth;
    int barrier; /* latest jump target: never fuse into the slot before it */
    int lin;     /* index of the LIN or tailed op whose DATA slots end the
                  * code, or -1 */
    int nofuse;  /* fx__compile_opts(FX__NOFUSE): plain stack code only */
} fx_gen;

/* Marks the next instruction as a jump target and returns its index. */
static uint32_t fx_target(fx_gen *g) {
    g->barrier = g->n;
    return (uint32_t)g->n;
}

/* The fused form of constant op p followed by constant op q (each on the
 * value the one before left), or FX_OP_END if there is none. */
static fx_opcode fx_pair_form(fx_opcode p, fx_opcode q) {
    if (p == FX_OP_MULK && q == FX_OP_DIVK) return FX_OP_MULK_DIVK;
    if (p == FX_OP_ADDK && q == FX_OP_KDIV) return FX_OP_ADDK_KDIV;
    if (p == FX_OP_KSUB && q == FX_OP_MULK) return FX_OP_KSUB_MULK;
    return FX_OP_END;
}

/* Peephole on the instruction just appended at i = g->n - 1 (never when
 * i is a jump target): F + op -> op with FX_M_INF; op + ADD -> op with
 * FX_M_ACC; two constant ops -> their fused pair (fx_pair_form), and MINK
 * + MULK_DIVK -> MINK_MULK_DIVK; ADDFK
 * after an op flagged FX_OPF_T -> a DATA slot of that op's tail (b counts
 * them); runs of ADDFK anywhere else -> one LIN with DATA slots. Each
 * rewrite computes exactly what the unfused sequence computed, step by
 * step in the same order (test_fx pins this against an unfused build). */
static void fx_fuse(fx_gen *g) {
    int i = g->n - 1;
    if (i < 1 || i == g->barrier || g->nofuse) return;
    fx_ins *in = &g->code[i], *prev = &g->code[i - 1];
    unsigned fl = fx__op_flags[in->op];
    fx_opcode pair;
    if ((fl & FX_OPF_M) && prev->op == FX_OP_F && prev->m == 0) {
        uint16_t a = prev->a;
        *prev = *in;
        prev->a = a;
        prev->m = FX_M_INF;
        g->n--;
    } else if (in->op == FX_OP_ADD && (fx__op_flags[prev->op] & FX_OPF_M) &&
               !(prev->m & FX_M_ACC) && prev->b == 0) {
        prev->m |= FX_M_ACC;
        g->n--;
    } else if (in->m == 0 && !(prev->m & FX_M_ACC) && prev->b == 0 &&
               (pair = fx_pair_form((fx_opcode)prev->op, (fx_opcode)in->op)) !=
                   FX_OP_END) {
        prev->op = (uint8_t)pair;
        prev->k2 = in->k;
        g->n--;
        /* min(x, k0) before x * k / k2, with nothing jumping in between:
         * one MINK_MULK_DIVK */
        fx_ins *pp = i >= 2 ? &g->code[i - 2] : NULL;
        if (pair == FX_OP_MULK_DIVK && pp && i - 1 != g->barrier &&
            pp->op == FX_OP_MINK && !(pp->m & FX_M_ACC) && pp->b == 0 &&
            !(prev->m & FX_M_INF)) {
            pp->op = FX_OP_MINK_MULK_DIVK;
            pp->k3 = prev->k2;
            pp->k2 = prev->k;
            g->n--;
        }
    } else if (in->op == FX_OP_ADDFK) {
        if (g->lin >= 0 && g->lin + (int)g->code[g->lin].b == i - 1) {
            in->op = FX_OP_DATA;
            g->code[g->lin].b++;
        } else if ((fx__op_flags[prev->op] & FX_OPF_T) && prev->b == 0) {
            in->op = FX_OP_DATA;
            prev->b = 1;
            g->lin = i - 1;
        } else if (prev->op == FX_OP_ADDFK && g->n < FX_MAX_CODE) {
            g->code[i + 1] = *in;
            g->code[i + 1].op = FX_OP_DATA;
            g->code[i] = *prev;
            g->code[i].op = FX_OP_DATA;
            memset(prev, 0, sizeof *prev);
            prev->op = FX_OP_LIN;
            prev->b = 2;
            g->lin = i - 1;
            g->n++;
        }
    }
}

static int fx_emit(fx_gen *g, fx_opcode op, int a, double k, int dstack) {
    if (g->n >= FX_MAX_CODE)
        return fx__error(g->pc, AIQ_ETOOBIG, 0,
                         "formula is too complex: more than %d instructions",
                         FX_MAX_CODE);
    fx_ins *in = &g->code[g->n++];
    memset(in, 0, sizeof *in);
    in->op = (uint8_t)op;
    in->a = (uint16_t)a;
    in->k = k;
    g->depth += dstack;
    if (g->depth > g->max_depth) g->max_depth = g->depth;
    if (g->depth > FX_MAX_STACK)
        return fx__error(g->pc, AIQ_ETOOBIG, 0,
                         "formula is too complex: needs more than %d stack slots",
                         FX_MAX_STACK);
    if (!(fx__op_flags[op] & FX_OPF_J)) fx_fuse(g);
    return g->n - 1;
}

/* op with a constant right operand, or FX_OP_END if none */
static fx_opcode fx_k_form(fx_opcode op) {
    switch (op) {
    case FX_OP_ADD: return FX_OP_ADDK;
    case FX_OP_SUB: return FX_OP_SUBK;
    case FX_OP_MUL: return FX_OP_MULK;
    case FX_OP_DIV: return FX_OP_DIVK;
    case FX_OP_POW: return FX_OP_POWK;
    case FX_OP_LT: return FX_OP_LTK;
    case FX_OP_LE: return FX_OP_LEK;
    case FX_OP_GT: return FX_OP_GTK;
    case FX_OP_GE: return FX_OP_GEK;
    case FX_OP_MIN: return FX_OP_MINK;
    case FX_OP_MAX: return FX_OP_MAXK;
    default: return FX_OP_END;
    }
}

/* op with a constant LEFT operand (k op x), rewritten exactly */
static fx_opcode fx_k_left_form(fx_opcode op) {
    switch (op) {
    case FX_OP_ADD: return FX_OP_ADDK;
    case FX_OP_MUL: return FX_OP_MULK;
    case FX_OP_SUB: return FX_OP_KSUB;
    case FX_OP_DIV: return FX_OP_KDIV;
    case FX_OP_MIN: return FX_OP_MINK;
    case FX_OP_MAX: return FX_OP_MAXK;
    case FX_OP_LT: return FX_OP_GTK;
    case FX_OP_LE: return FX_OP_GEK;
    case FX_OP_GT: return FX_OP_LTK;
    case FX_OP_GE: return FX_OP_LEK;
    default: return FX_OP_END;
    }
}

static fx_opcode fx_f_form(fx_opcode op) {
    switch (op) {
    case FX_OP_ADD: return FX_OP_ADDF;
    case FX_OP_SUB: return FX_OP_SUBF;
    case FX_OP_MUL: return FX_OP_MULF;
    case FX_OP_DIV: return FX_OP_DIVF;
    default: return FX_OP_END;
    }
}

/* Is node i `factor * k` or `k * factor`? Sets *f and *k. */
static int fx_weighted(const fx_parse_ctx *c, int i, int *f, double *k) {
    const fx_node *n = &c->nodes[i];
    if (n->kind != FX_N_BINARY || n->op != FX_OP_MUL) return 0;
    const fx_node *l = &c->nodes[n->kid], *r = &c->nodes[l->next];
    if (l->kind == FX_N_FACTOR && r->kind == FX_N_NUM) { *f = l->factor; *k = r->k; return 1; }
    if (l->kind == FX_N_NUM && r->kind == FX_N_FACTOR) { *f = r->factor; *k = l->k; return 1; }
    return 0;
}

static int fx_gen_node(fx_gen *g, int i);

static int fx_gen_binary(fx_gen *g, const fx_node *n) {
    fx_parse_ctx *c = g->pc;
    int l = n->kid, r = c->nodes[l].next;
    const fx_node *L = &c->nodes[l], *R = &c->nodes[r];
    fx_opcode op = (fx_opcode)n->op, s;
    int f;
    double k;
    if (g->nofuse) goto plain;
    if (op == FX_OP_MUL && fx_weighted(c, (int)(n - c->nodes), &f, &k))
        return fx_emit(g, FX_OP_FMULK, f, k, 1);
    if (op == FX_OP_DIV && R->kind == FX_N_NUM && R->k == 0)
        return fx_emit(g, FX_OP_K, 0, 0.0, 1); /* x / 0 is 0 */
    if (R->kind == FX_N_NUM && (s = fx_k_form(op)) != FX_OP_END) {
        if (fx_gen_node(g, l) < 0) return -1;
        return fx_emit(g, s, 0, R->k, 0);
    }
    if (L->kind == FX_N_NUM && (s = fx_k_left_form(op)) != FX_OP_END) {
        if (fx_gen_node(g, r) < 0) return -1;
        return fx_emit(g, s, 0, L->k, 0);
    }
    if ((op == FX_OP_ADD || op == FX_OP_SUB) && fx_weighted(c, r, &f, &k)) {
        if (fx_gen_node(g, l) < 0) return -1;
        return fx_emit(g, FX_OP_ADDFK, f, op == FX_OP_ADD ? k : -k, 0);
    }
    if (op == FX_OP_ADD && fx_weighted(c, l, &f, &k)) {
        if (fx_gen_node(g, r) < 0) return -1;
        return fx_emit(g, FX_OP_ADDFK, f, k, 0);
    }
    if (R->kind == FX_N_FACTOR && (s = fx_f_form(op)) != FX_OP_END) {
        if (fx_gen_node(g, l) < 0) return -1;
        return fx_emit(g, s, R->factor, 0, 0);
    }
    if (L->kind == FX_N_FACTOR && (op == FX_OP_ADD || op == FX_OP_MUL)) {
        if (fx_gen_node(g, r) < 0) return -1;
        return fx_emit(g, fx_f_form(op), L->factor, 0, 0);
    }
plain:
    if (fx_gen_node(g, l) < 0 || fx_gen_node(g, r) < 0) return -1;
    return fx_emit(g, op, 0, 0, -1);
}

static int fx_gen_node(fx_gen *g, int i) {
    fx_parse_ctx *c = g->pc;
    const fx_node *n = &c->nodes[i];
    int a = n->kid, b = a >= 0 ? c->nodes[a].next : -1;
    int d = b >= 0 ? c->nodes[b].next : -1;
    switch ((fx_node_kind)n->kind) {
    case FX_N_NUM:
        return fx_emit(g, FX_OP_K, 0, n->k, 1);
    case FX_N_FACTOR:
        return fx_emit(g, FX_OP_F, n->factor, 0, 1);
    case FX_N_UNARY:
        if (fx_gen_node(g, a) < 0) return -1;
        return fx_emit(g, (fx_opcode)n->op, 0, 0, 0);
    case FX_N_BINARY:
        return fx_gen_binary(g, n);
    case FX_N_CALL:
        if (fx_gen_node(g, a) < 0) return -1;
        if (n->op == FX_OP_MIN || n->op == FX_OP_MAX || n->op == FX_OP_POW) {
            for (int k = b; k >= 0; k = c->nodes[k].next) {
                if (c->nodes[k].kind == FX_N_NUM && !g->nofuse) {
                    if (fx_emit(g, fx_k_form((fx_opcode)n->op), 0, c->nodes[k].k, 0) < 0)
                        return -1;
                } else if (fx_gen_node(g, k) < 0 ||
                           fx_emit(g, (fx_opcode)n->op, 0, 0, -1) < 0) {
                    return -1;
                }
            }
            return 0;
        }
        if (n->op == FX_OP_CLAMP) {
            if (!g->nofuse && c->nodes[b].kind == FX_N_NUM &&
                c->nodes[d].kind == FX_N_NUM) {
                /* clamp(v, lo, hi) = min(max(v, lo), hi), as in fx__clamp */
                if (fx_emit(g, FX_OP_MAXK, 0, c->nodes[b].k, 0) < 0) return -1;
                return fx_emit(g, FX_OP_MINK, 0, c->nodes[d].k, 0);
            }
            if (fx_gen_node(g, b) < 0 || fx_gen_node(g, d) < 0) return -1;
            return fx_emit(g, FX_OP_CLAMP, 0, 0, -2);
        }
        return fx_emit(g, (fx_opcode)n->op, 0, 0, 0);
    case FX_N_AND:
    case FX_N_OR: {
        if (fx_gen_node(g, a) < 0) return -1;
        int j = fx_emit(g, (fx_opcode)n->op, 0, 0, -1);
        if (j < 0 || fx_gen_node(g, b) < 0) return -1;
        if (fx_emit(g, FX_OP_TRUTH, 0, 0, 0) < 0) return -1;
        g->code[j].b = fx_target(g);
        return 0;
    }
    case FX_N_TERNARY: {
        const fx_node *B = &c->nodes[b], *D = &c->nodes[d];
        if (!g->nofuse && B->kind == FX_N_NUM && D->kind == FX_N_NUM) {
            /* c ? k : 0 and c ? 0 : k without jumps (+0 only, so the
             * result is bit-identical) */
            if (D->k == 0 && !signbit(D->k)) {
                double kk = B->k;
                if (fx_gen_node(g, a) < 0) return -1;
                return fx_emit(g, FX_OP_SELK, 0, kk, 0);
            }
            if (B->k == 0 && !signbit(B->k)) {
                double kk = D->k;
                if (fx_gen_node(g, a) < 0 || fx_emit(g, FX_OP_NOT, 0, 0, 0) < 0)
                    return -1;
                return fx_emit(g, FX_OP_SELK, 0, kk, 0);
            }
        }
        if (fx_gen_node(g, a) < 0) return -1;
        int jz = fx_emit(g, FX_OP_JZ, 0, 0, -1);
        if (jz < 0 || fx_gen_node(g, b) < 0) return -1;
        int jmp = fx_emit(g, FX_OP_JMP, 0, 0, -1); /* the else branch pushes again */
        if (jmp < 0) return -1;
        g->code[jz].b = fx_target(g);
        if (fx_gen_node(g, d) < 0) return -1;
        g->code[jmp].b = fx_target(g);
        return 0;
    }
    }
    return -1;
}

/* ---- explain terms ------------------------------------------------------ */

/* Writes the term's source (comments dropped, blanks collapsed) into
 * label, with "- " in front when negative, cut with "..." to fit. */
static void fx_label(const char *src, uint32_t s, uint32_t e, int neg,
                     char *label, size_t cap) {
    size_t o = 0;
    int blank = 0, cut = 0;
    if (neg) { label[o++] = '-'; label[o++] = ' '; }
    for (uint32_t i = s; i < e; i++) {
        char ch = src[i];
        if (ch == '#') {
            while (i < e && src[i] != '\n') i++;
            blank = 1;
            continue;
        }
        if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r') { blank = 1; continue; }
        if (blank && o > (neg ? 2u : 0u)) {
            if (o + 1 >= cap) { cut = 1; break; }
            label[o++] = ' ';
        }
        blank = 0;
        if (o + 1 >= cap) { cut = 1; break; }
        label[o++] = ch;
    }
    label[o] = '\0';
    if (cut) memcpy(label + cap - 4, "...", 4);
}

typedef struct { int node; int neg; } fx_termref;

/* ---- public ------------------------------------------------------------- */

/* Compiles src (borrowed) into a new program the caller frees with
 * fx_free; NULL with err filled on any error, nothing left allocated. */
fx_prog *fx_compile(const char *src, fx_mode mode, aiq_err *err) {
    return fx__compile_opts(src, mode, 0, err);
}

/* Compiles a placement score; see fx.h. */
fx_prog *fx_compile_placement(const char *src, aiq_err *err) {
    return fx__compile_opts(src, FX_EXPR, FX__PLACE, err);
}

/* fx_compile with options (FX__NOFUSE); see fx_int.h. Same ownership and
 * errors as fx_compile. */
fx_prog *fx__compile_opts(const char *src, fx_mode mode, unsigned opts,
                          aiq_err *err) {
    return fx__compile_table(src, mode, opts, NULL, 0, "factor", err);
}

/* Compiles against another name table; see fx.h (fx_compile_names). */
fx_prog *fx_compile_names(const char *src, fx_mode mode, const char *const *names,
                          int nnames, const char *noun, aiq_err *err) {
    if (!names || nnames < 1 || nnames > 65535) {
        aiq_err_set(err, AIQ_EINVAL, "fx_compile_names: need 1..65535 names, got %d", nnames);
        return NULL;
    }
    return fx__compile_table(src, mode, 0, names, nnames, noun ? noun : "name", err);
}

/* The top-level additive terms of root: walks the left spine of + and -
 * (only for FX_EXPR; a predicate is one term) into refs[0..*nrefs), in
 * source order, each with the sign it is added with. Returns -1 with the
 * error in c when there are more than FX_MAX_TERMS. */
static int fx_split_terms(fx_parse_ctx *c, int root, fx_mode mode, fx_termref *refs,
                          int *nrefs) {
    int total = 1;
    if (mode == FX_EXPR) {
        for (int i = root; c->nodes[i].kind == FX_N_BINARY &&
                           (c->nodes[i].op == FX_OP_ADD || c->nodes[i].op == FX_OP_SUB);
             i = c->nodes[i].kid)
            total++;
    }
    if (total > FX_MAX_TERMS) {
        fx__error(c, AIQ_ETOOBIG, 0,
                  "formula has %d top-level terms; at most %d are allowed",
                  total, FX_MAX_TERMS);
        return -1;
    }
    int i = root, t = total - 1;
    while (t > 0) {
        const fx_node *n = &c->nodes[i];
        refs[t].node = c->nodes[n->kid].next;
        refs[t].neg = n->op == FX_OP_SUB;
        i = n->kid;
        t--;
    }
    refs[0].node = i;
    refs[0].neg = 0;
    *nrefs = total;
    return 0;
}

/* Folds constants in the tree under root; with nofuse the tree stays as
 * written and only a copy is folded, to refuse the same constants the
 * optimised compile refuses. Returns -1 (err filled) when out of memory;
 * a refused constant is the formula's error, in c. */
static int fx_fold_tree(fx_parse_ctx *c, int root, int nofuse, aiq_err *err) {
    if (!nofuse) {
        fx_fold(c, root);
        return 0;
    }
    fx_node *keep = c->nodes;
    fx_node *copy = malloc((size_t)c->nnodes * sizeof *copy);
    if (!copy) {
        aiq_err_set(err, AIQ_ENOMEM, "out of memory compiling a formula");
        return -1;
    }
    memcpy(copy, keep, (size_t)c->nnodes * sizeof *copy);
    c->nodes = copy;
    fx_fold(c, root);
    c->nodes = keep;
    free(copy);
    return 0;
}

/* The main program: root's code, made 0/1 for a predicate whose root is
 * not already boolean, then END. Returns -1 with the error in g->pc. */
static int fx_gen_main(fx_gen *g, int root, fx_mode mode) {
    if (fx_gen_node(g, root) < 0) return -1;
    const fx_node *r = &g->pc->nodes[root];
    int boolean = r->kind == FX_N_AND || r->kind == FX_N_OR ||
                  (r->kind == FX_N_UNARY && r->op == FX_OP_NOT) ||
                  (r->kind == FX_N_BINARY && r->op >= FX_OP_LT && r->op <= FX_OP_NE);
    if (mode == FX_PREDICATE && !boolean && fx_emit(g, FX_OP_TRUTH, 0, 0, 0) < 0)
        return -1;
    return fx_emit(g, FX_OP_END, 0, 0, -1) < 0 ? -1 : 0;
}

/* The program from the main code in g and the terms: each term's label,
 * and when there are several, its own code after the main program (for
 * fx_explain). Returns the new program, or NULL with the error in err
 * (out of memory) or in g->pc (code generation), nothing allocated. */
static fx_prog *fx_make_prog(fx_gen *g, const fx_termref *refs, int nrefs, fx_mode mode,
                             aiq_err *err) {
    const fx_parse_ctx *c = g->pc;
    fx_prog *p = calloc(1, sizeof *p);
    if (!p) goto nomem;
    p->mode = mode;
    p->place = c->place;
    p->terms = calloc((size_t)nrefs, sizeof *p->terms);
    if (!p->terms) goto nomem;
    p->nterms = nrefs;
    for (int t = 0; t < nrefs; t++) {
        const fx_node *n = &c->nodes[refs[t].node];
        fx_label(c->src, n->start, n->end, refs[t].neg, p->terms[t].label,
                 sizeof p->terms[t].label);
        if (nrefs == 1) { p->terms[t].pc = 0; break; } /* the main program */
        p->terms[t].pc = (uint32_t)g->n;
        g->depth = 0;
        g->barrier = g->n; /* each term's code starts fresh */
        if (fx_gen_node(g, refs[t].node) < 0) goto fail;
        if (refs[t].neg && fx_emit(g, FX_OP_NEG, 0, 0, 0) < 0) goto fail;
        if (fx_emit(g, FX_OP_END, 0, 0, -1) < 0) goto fail;
    }
    if (mode == FX_PREDICATE) fx_label(c->src, 0, c->len, 0, p->terms[0].label,
                                       sizeof p->terms[0].label);
    p->code = malloc((size_t)g->n * sizeof *p->code);
    if (!p->code) goto nomem;
    memcpy(p->code, g->code, (size_t)g->n * sizeof *p->code);
    fx__set_dispatch(p->code, g->n);
    p->ncode = g->n;
    p->max_stack = g->max_depth;
    return p;

nomem:
    aiq_err_set(err, AIQ_ENOMEM, "out of memory compiling a formula");
fail:
    fx_free(p);
    return NULL;
}

/* The compiler proper; see fx_int.h. */
fx_prog *fx__compile_table(const char *src, fx_mode mode, unsigned opts,
                           const char *const *names, int nnames,
                           const char *noun, aiq_err *err) {
    fx_prog *p = NULL;
    fx_parse_ctx ctx;
    fx_gen g;
    fx_termref *refs = NULL;
    memset(&ctx, 0, sizeof ctx);
    memset(&g, 0, sizeof g);
    g.barrier = -1;
    g.lin = -1;
    g.nofuse = (opts & FX__NOFUSE) != 0;
    ctx.err = err;
    ctx.names = names;
    ctx.nnames = nnames;
    ctx.noun = noun;
    ctx.place = (opts & FX__PLACE) != 0;
    if (!src) {
        aiq_err_set(err, AIQ_EINVAL, "formula is missing");
        goto out;
    }
    size_t len = strlen(src);
    if (len > AIQ_MAX_FORMULA) {
        aiq_err_set(err, AIQ_ETOOBIG, "formula is %zu bytes long; the limit is %d bytes",
                    len, AIQ_MAX_FORMULA);
        goto out;
    }
    ctx.src = src;
    ctx.len = (uint32_t)len;
    ctx.nodes = malloc(FX_MAX_NODES * sizeof *ctx.nodes);
    g.code = malloc(FX_MAX_CODE * sizeof *g.code);
    refs = malloc(FX_MAX_TERMS * sizeof *refs);
    if (!ctx.nodes || !g.code || !refs) {
        aiq_err_set(err, AIQ_ENOMEM, "out of memory compiling a formula");
        goto out;
    }
    int root = fx__parse(&ctx);
    if (root < 0 || ctx.failed) goto out;
    /* The factors the source names, before folding (a superset of what
     * the code reads). */
    uint64_t reads = 0;
    for (int i = 0; i < ctx.nnodes; i++)
        if (ctx.nodes[i].kind == FX_N_FACTOR && ctx.nodes[i].factor < 64)
            reads |= 1ull << ctx.nodes[i].factor;
    int nrefs = 0;
    if (fx_split_terms(&ctx, root, mode, refs, &nrefs) < 0) goto out;
    /* Fold after the terms are known, so each term keeps its own value
     * even when the whole sum is constant. */
    if (fx_fold_tree(&ctx, root, g.nofuse, err) < 0 || ctx.failed) goto out;
    g.pc = &ctx;
    if (fx_gen_main(&g, root, mode) < 0) goto out;
    p = fx_make_prog(&g, refs, nrefs, mode, err);
    if (p) p->reads = reads;
out:
    free(refs);
    free(g.code);
    free(ctx.nodes);
    return p;
}

/* Frees p and what it owns; NULL is a no-op. */
void fx_free(fx_prog *p) {
    if (!p) return;
    free(p->code);
    free(p->terms);
    free(p);
}

/* The mode p (non-NULL) was compiled in. */
fx_mode fx_prog_mode(const fx_prog *p) { return p->mode; }

_Static_assert(FX_NFACTORS <= 64, "fx_prog_reads keeps the job factors in 64 bits");

/* See fx.h. */
uint64_t fx_prog_reads(const fx_prog *p) { return p ? p->reads : 0; }
