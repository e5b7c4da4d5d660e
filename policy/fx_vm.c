/* fx_vm.c -- the expression language's virtual machine, in two forms that
 * compute the same bits: a threaded interpreter (GNU C computed goto, one
 * handler per opcode, operand mode and ending) that fx_eval and fx__run
 * use where the compiler supports labels as values, and the portable
 * one-switch interpreter, the fallback elsewhere, the one that runs the
 * rest of a program from its first C-library call (pow, log, ...), and the
 * reference the tests compare against (fx__run_switch). Both keep a stack
 * of FX_MAX_STACK doubles on the C stack with the top in a register (x),
 * and allocate nothing. Also fx__set_dispatch, which prepares a compiled
 * program for the threaded interpreter.
 *
 * Bounded: the compiler only emits forward jumps, so a run executes at most
 * as many instructions as the program has (<= FX_MAX_CODE), and it checked
 * the stack depth (<= FX_MAX_STACK) when it generated the code. Neither
 * interpreter counts instructions at run time: the bound is structural.
 *
 * Numbers follow IEEE arithmetic with the rules of fx_int.h (division by
 * zero is 0, log/sqrt outside their domain are 0, ...); END maps what is
 * left of NaN to 0 and infinities to +-DBL_MAX. */
#include "policy/fx_int.h"

/* Both interpreters: the stack top is x, the values under it sp[-1], ... */
#define PUSH(v) do { *sp++ = x; x = (v); } while (0)
#define POP() (*--sp)

/* The weighted tail of an FX_OPF_T op or LIN (b >= 1 DATA slots after
 * it): x += f[a] * k for each slot in order, then continue after the
 * slots. One slot if b is odd, two if b & 2, then groups of four: few
 * branches and a simple loop count (measured faster than a loop by two or
 * a jump into a straight run), the same additions in the same order.
 * TAIL() is for when b may be 0. */
#define TAIL1() do { \
        uint32_t n_ = in->b; \
        const fx_ins *d_ = ip; \
        ip += n_; \
        if (n_ & 1) { x += f[d_->a] * d_->k; d_++; } \
        if (n_ & 2) { \
            x += f[d_[0].a] * d_[0].k; \
            x += f[d_[1].a] * d_[1].k; \
            d_ += 2; \
        } \
        for (n_ >>= 2; n_; n_--, d_ += 4) { \
            x += f[d_[0].a] * d_[0].k; \
            x += f[d_[1].a] * d_[1].k; \
            x += f[d_[2].a] * d_[2].k; \
            x += f[d_[3].a] * d_[3].k; \
        } \
    } while (0)
#define TAIL() do { if (in->b) TAIL1(); } while (0)

/* Fills h of every instruction; see fx_int.h. DATA slots keep 0: they are
 * never dispatched. */
void fx__set_dispatch(fx_ins *code, int n) {
    for (int i = 0; i < n; i++) {
        fx_ins *in = &code[i];
        unsigned mode = in->m;
        if (in->op == FX_OP_DATA) { in->h = 0; continue; }
        unsigned fl = fx__op_flags[in->op];
        uint32_t next = (uint32_t)i + 1; /* the instruction after the op */
        if ((fl & FX_OPF_T) && in->b) {
            mode |= in->b == 1 && (fl & FX_OPF_M) ? FX_M_TAIL1 : FX_M_TAIL;
            next += in->b;
        } else if ((fl & FX_OPF_M) && next < (uint32_t)n && code[next].op == FX_OP_END)
            mode |= FX_M_END; /* (after a tail, the tail's NEXT runs END) */
        in->h = (uint16_t)(in->op | mode << 6);
    }
}

/* The portable interpreter: one switch over the opcodes of fx_ops.def,
 * from instruction ip with the stack top x and the next free slot sp (in
 * an array of FX_MAX_STACK + 1 the caller owns). */
/* lint-funclen: the VM's one switch over fx_ops.def (style.md) */
static inline __attribute__((always_inline)) double
fx_switch_core(const fx_ins *code, const fx_ins *ip, const double *f,
               double *sp, double x, int raw) {
    /* operand modes (FX_M_INF, FX_M_ACC) of the ops flagged FX_OPF_M, and
     * the weighted tail of those flagged FX_OPF_T */
#define IN() do { if (in->m & FX_M_INF) PUSH(f[in->a]); } while (0)
#define OUT() do { if (in->m & FX_M_ACC) x = POP() + x; TAIL(); } while (0)
    for (;;) {
        const fx_ins *in = ip++;
        switch ((fx_opcode)in->op) {
        /* END: the result is x, made finite (raw: as computed, for
         * fx_eval_checked, which tells whether it had to be clamped). */
        case FX_OP_END:
            return raw ? x : fx__finite(x);
        /* K / F / FMULK: push a constant, a factor, a weighted factor. */
        case FX_OP_K: PUSH(in->k); break;
        case FX_OP_F: PUSH(f[in->a]); break;
        case FX_OP_FMULK: PUSH(f[in->a] * in->k); TAIL(); break;
        /* Binary arithmetic on the two top values (y op x). */
        case FX_OP_ADD: x = POP() + x; break;
        case FX_OP_SUB: x = POP() - x; break;
        case FX_OP_MUL: x = POP() * x; break;
        case FX_OP_DIV: { double y = POP(); x = fx__div(y, x); break; }
        case FX_OP_MOD: { double y = POP(); x = fx__mod(y, x); break; }
        case FX_OP_POW: { double y = POP(); x = fx__pow(y, x); break; }
        /* x op constant. DIVK never has k == 0 (compiled to K 0). */
        case FX_OP_ADDK: IN(); x += in->k; OUT(); break;
        case FX_OP_SUBK: IN(); x -= in->k; OUT(); break;
        case FX_OP_MULK: IN(); x *= in->k; OUT(); break;
        case FX_OP_DIVK: IN(); x /= in->k; OUT(); break;
        case FX_OP_KSUB: IN(); x = in->k - x; OUT(); break;
        case FX_OP_KDIV: IN(); x = fx__div(in->k, x); OUT(); break;
        case FX_OP_POWK: IN(); x = fx__pow(x, in->k); OUT(); break;
        /* Fused pairs of constant ops, each step as its single op does. */
        case FX_OP_MULK_DIVK: IN(); x *= in->k; x /= in->k2; OUT(); break;
        case FX_OP_MINK_MULK_DIVK:
            IN(); x = fx__min(x, in->k); x *= in->k2; x /= in->k3; OUT(); break;
        case FX_OP_ADDK_KDIV: IN(); x += in->k; x = fx__div(in->k2, x); OUT(); break;
        case FX_OP_KSUB_MULK: IN(); x = in->k - x; x *= in->k2; OUT(); break;
        /* x op factor. */
        case FX_OP_ADDF: x += f[in->a]; break;
        case FX_OP_SUBF: x -= f[in->a]; break;
        case FX_OP_MULF: x *= f[in->a]; break;
        case FX_OP_DIVF: x = fx__div(x, f[in->a]); break;
        /* ADDFK: one weighted term, x + f[a] * k. */
        case FX_OP_ADDFK: x += f[in->a] * in->k; break;
        /* LIN: a run of weighted terms, x + f[a1]*k1 + f[a2]*k2 + ...,
         * added in order (the same result as a chain of ADDFK). */
        case FX_OP_LIN: {
            const fx_ins *d = ip, *e = ip + in->b;
            for (; d < e; d++) x += f[d->a] * d->k;
            ip = e;
            break;
        }
        /* SELK: c ? k : 0 without a jump. */
        case FX_OP_SELK: IN(); x = fx__truthy(x) ? in->k : 0.0; OUT(); break;
        /* Unary operators; booleans are 1/0, false is 0 or NaN. */
        case FX_OP_NEG: IN(); x = -x; OUT(); break;
        case FX_OP_NOT: IN(); x = fx__truthy(x) ? 0.0 : 1.0; OUT(); break;
        case FX_OP_TRUTH: IN(); x = fx__truthy(x) ? 1.0 : 0.0; OUT(); break;
        /* Comparisons give 1/0; any comparison with NaN is 0 but != is 1. */
        case FX_OP_LT: x = POP() < x; break;
        case FX_OP_LE: x = POP() <= x; break;
        case FX_OP_GT: x = POP() > x; break;
        case FX_OP_GE: x = POP() >= x; break;
        case FX_OP_EQ: x = POP() == x; break;
        case FX_OP_NE: x = POP() != x; break;
        case FX_OP_LTK: IN(); x = x < in->k; OUT(); break;
        case FX_OP_LEK: IN(); x = x <= in->k; OUT(); break;
        case FX_OP_GTK: IN(); x = x > in->k; OUT(); break;
        case FX_OP_GEK: IN(); x = x >= in->k; OUT(); break;
        /* min/max ignore a NaN operand (like fmin/fmax, but inline). */
        case FX_OP_MIN: x = fx__min(POP(), x); break;
        case FX_OP_MAX: x = fx__max(POP(), x); break;
        case FX_OP_MINK: IN(); x = fx__min(x, in->k); OUT(); break;
        case FX_OP_MAXK: IN(); x = fx__max(x, in->k); OUT(); break;
        /* Functions of one argument, with the domain rules of fx_int.h. */
        case FX_OP_ABS: IN(); x = fabs(x); OUT(); break;
        case FX_OP_LOG: IN(); x = fx__log(x); OUT(); break;
        case FX_OP_LOG2: IN(); x = fx__log2(x); OUT(); break;
        case FX_OP_SQRT: IN(); x = fx__sqrt(x); OUT(); break;
        case FX_OP_EXP: IN(); x = exp(x); OUT(); break;
        case FX_OP_FLOOR: IN(); x = floor(x); OUT(); break;
        case FX_OP_CEIL: IN(); x = ceil(x); OUT(); break;
        /* CLAMP: stack holds v, lo, then x = hi. */
        case FX_OP_CLAMP: {
            double lo = POP(), v = POP();
            x = fx__clamp(v, lo, x);
            break;
        }
        /* JZ: pop the condition; jump to b when it was false. */
        case FX_OP_JZ: {
            double c = x;
            x = POP();
            if (!fx__truthy(c)) ip = code + in->b;
            break;
        }
        /* JMP: unconditional forward jump. */
        case FX_OP_JMP: ip = code + in->b; break;
        /* ANDJ / ORJ: short-circuit && and ||; the result is 1/0. */
        case FX_OP_ANDJ:
            if (!fx__truthy(x)) { x = 0.0; ip = code + in->b; }
            else x = POP();
            break;
        case FX_OP_ORJ:
            if (fx__truthy(x)) { x = 1.0; ip = code + in->b; }
            else x = POP();
            break;
        case FX_OP_DATA: /* skipped by LIN and tails, never dispatched */
        case FX__NOPS:
        default:
            /* The compiler emits only known opcodes; telling the C compiler
             * so drops the switch's range check from every dispatch. */
            __builtin_unreachable();
        }
    }
#undef IN
#undef OUT
}

/* The switch interpreter from the start of a program (pc). */
static inline __attribute__((always_inline)) double
fx_exec_switch(const fx_ins *code, uint32_t pc, const double *f) {
    double stack[FX_MAX_STACK + 1];
    return fx_switch_core(code, code + pc, f, stack, 0.0, 0);
}

#if defined(__GNUC__) && !defined(FX_NO_THREADED)
/* The threaded interpreter: one indirect jump at the end of every handler
 * (computed goto, GNU C labels as values) instead of one shared switch
 * jump, so the branch predictor sees each handler's successor on its own,
 * and one handler per operand mode of the FX_OPF_M opcodes, so no handler
 * tests in->m or in->b at run time. The dispatch table is indexed by
 * in->h (fx__set_dispatch); entries the compiler never emits are NULL. Every
 * handler computes what the switch above computes for the same
 * instruction, step by step (the tests run both on the same programs).
 * Not inlinable (its table holds label addresses), so the entry points
 * reach it by a tail call. */
_Static_assert(FX__NOPS <= 64, "fx dispatch table has 64 opcode slots");

/* The threaded VM hands an instruction that calls the C library (fmod,
 * pow, log, exp, sqrt, floor, ceil) and the rest of the run to the switch
 * interpreter, on the same stack: with no call left in its own handlers it
 * keeps its state in call-clobbered registers and saves none on entry. */
static __attribute__((noinline)) double
fx_switch_resume(const fx_ins *code, const fx_ins *ip, const double *f,
                 double *sp, double x) {
    return fx_switch_core(code, ip, f, sp, x, 0);
}

/* lint-funclen: the VM's one dispatch table over fx_ops.def (style.md) */
static double fx_exec_threaded(const fx_ins *code, uint32_t pc,
                               const double *f) {
    double stack[FX_MAX_STACK + 1];
    double *sp = stack; /* next free slot; x is not stored */
    double x = 0.0, y;
    const fx_ins *ip = code + pc, *in;

    /* One handler per mode of an FX_OPF_M opcode, from one body B that
     * turns x into the result: mode 0 plain, 1 factor in (push x,
     * x = f[a]), 2 accumulate (x = pop + result), 3 both, where the value
     * under the factor stays in a register (y) instead of going through
     * the stack; 4..7 the same followed by the op's weighted tail; 8..11
     * the same without a tail when END follows, which they do themselves
     * (the END stays in the code for jumps to it); 12..15 with a tail of
     * one slot, added without the tail's loop. */
#define MV(NAME, N, PRE, B, POST, FIN) NAME##_##N: PRE; B; POST; FIN;
#define MOP4(NAME, B, T, FIN, N0, N1, N2, N3) \
    MV(NAME, N0, , B, T, FIN) \
    MV(NAME, N1, PUSH(f[in->a]), B, T, FIN) \
    MV(NAME, N2, , B, x = POP() + x; T, FIN) \
    MV(NAME, N3, y = x; x = f[in->a], B, x = y + x; T, FIN)
#define MOP(NAME, B) \
    MOP4(NAME, B, , NEXT(), 0, 1, 2, 3) \
    MOP4(NAME, B, TAIL1(), NEXT(), 4, 5, 6, 7) \
    MOP4(NAME, B, , return fx__finite(x), 8, 9, 10, 11) \
    MOP4(NAME, B, x += f[ip->a] * ip->k; ip++, NEXT(), 12, 13, 14, 15)
#define H(NAME, mode) [FX_OP_##NAME | (mode) << 6]
#define MOPT(NAME) \
    H(NAME, 0) = &&NAME##_0, H(NAME, 1) = &&NAME##_1, \
    H(NAME, 2) = &&NAME##_2, H(NAME, 3) = &&NAME##_3, \
    H(NAME, 4) = &&NAME##_4, H(NAME, 5) = &&NAME##_5, \
    H(NAME, 6) = &&NAME##_6, H(NAME, 7) = &&NAME##_7, \
    H(NAME, 8) = &&NAME##_8, H(NAME, 9) = &&NAME##_9, \
    H(NAME, 10) = &&NAME##_10, H(NAME, 11) = &&NAME##_11, \
    H(NAME, 12) = &&NAME##_12, H(NAME, 13) = &&NAME##_13, \
    H(NAME, 14) = &&NAME##_14, H(NAME, 15) = &&NAME##_15
#define OPT(NAME) H(NAME, 0) = &&NAME##_0
#define CALL2(NAME, m) H(NAME, m) = &&call, H(NAME, m + 1) = &&call
#define CALLT(NAME) \
    CALL2(NAME, 0), CALL2(NAME, 2), CALL2(NAME, 4), CALL2(NAME, 6), \
    CALL2(NAME, 8), CALL2(NAME, 10), CALL2(NAME, 12), CALL2(NAME, 14)
    static const void *const tbl[16 * 64] = {
        OPT(END), OPT(K), OPT(F), OPT(FMULK), H(FMULK, 4) = &&FMULK_4,
        OPT(ADD), OPT(SUB), OPT(MUL), OPT(DIV), CALLT(MOD), CALLT(POW),
        MOPT(ADDK), MOPT(SUBK), MOPT(MULK), MOPT(DIVK), MOPT(KSUB),
        MOPT(KDIV), CALLT(POWK), MOPT(MULK_DIVK), MOPT(MINK_MULK_DIVK),
        MOPT(ADDK_KDIV),
        MOPT(KSUB_MULK),
        OPT(ADDF), OPT(SUBF), OPT(MULF), OPT(DIVF), OPT(ADDFK), OPT(LIN),
        MOPT(SELK), MOPT(NEG), MOPT(NOT), MOPT(TRUTH),
        OPT(LT), OPT(LE), OPT(GT), OPT(GE), OPT(EQ), OPT(NE),
        MOPT(LTK), MOPT(LEK), MOPT(GTK), MOPT(GEK),
        OPT(MIN), OPT(MAX), MOPT(MINK), MOPT(MAXK),
        MOPT(ABS), CALLT(LOG), CALLT(LOG2), CALLT(SQRT), CALLT(EXP),
        CALLT(FLOOR), CALLT(CEIL), OPT(CLAMP),
        OPT(JZ), OPT(JMP), OPT(ANDJ), OPT(ORJ),
    };
#define NEXT() do { in = ip++; goto *tbl[in->h]; } while (0)

    NEXT();
    /* an op that calls the C library: the switch VM runs it and the rest */
    call: return fx_switch_resume(code, in, f, sp, x);
    END_0: return fx__finite(x);
    K_0: PUSH(in->k); NEXT();
    F_0: PUSH(f[in->a]); NEXT();
    FMULK_0: PUSH(f[in->a] * in->k); NEXT();
    FMULK_4: PUSH(f[in->a] * in->k); TAIL1(); NEXT();
    ADD_0: x = POP() + x; NEXT();
    SUB_0: x = POP() - x; NEXT();
    MUL_0: x = POP() * x; NEXT();
    DIV_0: y = POP(); x = fx__div(y, x); NEXT();
    /* MOD, POW, POWK, LOG, LOG2, SQRT, EXP, FLOOR, CEIL: at `call` */
    MOP(ADDK, x += in->k)
    MOP(SUBK, x -= in->k)
    MOP(MULK, x *= in->k)
    MOP(DIVK, x /= in->k)
    MOP(KSUB, x = in->k - x)
    MOP(KDIV, x = fx__div(in->k, x))
    MOP(MULK_DIVK, x *= in->k; x /= in->k2)
    MOP(MINK_MULK_DIVK, x = fx__min(x, in->k); x *= in->k2; x /= in->k3)
    MOP(ADDK_KDIV, x += in->k; x = fx__div(in->k2, x))
    MOP(KSUB_MULK, x = in->k - x; x *= in->k2)
    ADDF_0: x += f[in->a]; NEXT();
    SUBF_0: x -= f[in->a]; NEXT();
    MULF_0: x *= f[in->a]; NEXT();
    DIVF_0: x = fx__div(x, f[in->a]); NEXT();
    ADDFK_0: x += f[in->a] * in->k; NEXT();
    LIN_0: TAIL1(); NEXT(); /* LIN's b >= 2 counts its slots as a tail's */
    MOP(SELK, x = fx__truthy(x) ? in->k : 0.0)
    MOP(NEG, x = -x)
    MOP(NOT, x = fx__truthy(x) ? 0.0 : 1.0)
    MOP(TRUTH, x = fx__truthy(x) ? 1.0 : 0.0)
    LT_0: x = POP() < x; NEXT();
    LE_0: x = POP() <= x; NEXT();
    GT_0: x = POP() > x; NEXT();
    GE_0: x = POP() >= x; NEXT();
    EQ_0: x = POP() == x; NEXT();
    NE_0: x = POP() != x; NEXT();
    MOP(LTK, x = x < in->k)
    MOP(LEK, x = x <= in->k)
    MOP(GTK, x = x > in->k)
    MOP(GEK, x = x >= in->k)
    MIN_0: x = fx__min(POP(), x); NEXT();
    MAX_0: x = fx__max(POP(), x); NEXT();
    MOP(MINK, x = fx__min(x, in->k))
    MOP(MAXK, x = fx__max(x, in->k))
    MOP(ABS, x = fabs(x))
    CLAMP_0: {
        double lo = POP(), v = POP();
        x = fx__clamp(v, lo, x);
        NEXT();
    }
    JZ_0:
        y = x;
        x = POP();
        if (!fx__truthy(y)) ip = code + in->b;
        NEXT();
    JMP_0: ip = code + in->b; NEXT();
    ANDJ_0:
        if (!fx__truthy(x)) { x = 0.0; ip = code + in->b; }
        else x = POP();
        NEXT();
    ORJ_0:
        if (fx__truthy(x)) { x = 1.0; ip = code + in->b; }
        else x = POP();
        NEXT();
#undef MV
#undef MOP4
#undef MOP
#undef CALL2
#undef H
#undef MOPT
#undef OPT
#undef CALLT
#undef NEXT
}
#define fx_exec fx_exec_threaded
#else
#define fx_exec fx_exec_switch
#endif

/* Runs code from pc (an explain term's code); see fx_int.h. */
double fx__run(const fx_ins *code, uint32_t pc, const double *f) {
    return fx_exec(code, pc, f);
}

/* Runs code from pc with the portable switch interpreter, whatever fx_eval
 * uses; see fx_int.h. */
double fx__run_switch(const fx_ins *code, uint32_t pc, const double *f) {
    return fx_exec_switch(code, pc, f);
}

/* Evaluates p for one job; see fx.h. factors is borrowed. */
double fx_eval(const fx_prog *p, const double *factors) {
    return fx_exec(p->code, 0, factors);
}

/* Runs code from pc with the switch interpreter and returns x as END
 * found it: possibly NaN or infinite. */
static double fx_run_raw(const fx_ins *code, uint32_t pc, const double *f) {
    double stack[FX_MAX_STACK + 1];
    return fx_switch_core(code, code + pc, f, stack, 0.0, 1);
}

/* Evaluates p and tells whether the result had to be clamped; see fx.h. */
double fx_eval_checked(const fx_prog *p, const double *factors, int *clamped) {
    double x = fx_run_raw(p->code, 0, factors);
    if (clamped)
        *clamped = !isfinite(x);
    return fx__finite(x);
}

/* The first term whose raw value is not finite; see fx.h. */
int fx_nonfinite_term(const fx_prog *p, const double *factors) {
    for (int i = 0; i < p->nterms; i++)
        if (!isfinite(fx_run_raw(p->code, p->terms[i].pc, factors)))
            return i;
    return -1;
}

/* The label of term i; see fx.h. */
const char *fx_term_label(const fx_prog *p, int i) {
    return (i >= 0 && i < p->nterms) ? p->terms[i].label : NULL;
}
