/* fx_vm.c -- the expression language's virtual machine: one switch over
 * the opcodes of fx_ops.def, a stack of FX_MAX_STACK doubles on the C
 * stack with the top kept in a register (x), no allocation.
 *
 * Bounded: the compiler only emits forward jumps, so a run executes at most
 * as many instructions as the program has (<= FX_MAX_CODE), and it checked
 * the stack depth (<= FX_MAX_STACK) when it generated the code.
 *
 * Numbers follow IEEE arithmetic with the rules of fx_int.h (division by
 * zero is 0, log/sqrt outside their domain are 0, ...); END maps what is
 * left of NaN to 0 and infinities to +-DBL_MAX. */
#include "policy/fx_int.h"

/* The interpreter loop, inlined into both entry points below so fx_eval
 * (the hot one) pays no second call. */
static inline __attribute__((always_inline)) double
fx_exec(const fx_ins *code, uint32_t pc, const double *f) {
    double stack[FX_MAX_STACK + 1];
    double *sp = stack; /* next free slot; x is not stored */
    double x = 0.0;
    const fx_ins *ip = code + pc;

#define PUSH(v) do { *sp++ = x; x = (v); } while (0)
#define POP() (*--sp)
    /* operand modes (FX_M_INF, FX_M_ACC) of the ops flagged FX_OPF_M */
#define IN() do { if (in->m & FX_M_INF) PUSH(f[in->a]); } while (0)
#define OUT() do { if (in->m & FX_M_ACC) x = POP() + x; } while (0)
    for (;;) {
        const fx_ins *in = ip++;
        switch ((fx_opcode)in->op) {
        /* END: the result is x, made finite. */
        case FX_OP_END:
            return fx__finite(x);
        /* K / F / FMULK: push a constant, a factor, a weighted factor. */
        case FX_OP_K: PUSH(in->k); break;
        case FX_OP_F: PUSH(f[in->a]); break;
        case FX_OP_FMULK: PUSH(f[in->a] * in->k); break;
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
        case FX_OP_DATA: /* skipped by LIN, never dispatched */
        case FX__NOPS:
        default:
            /* The compiler emits only known opcodes; telling the C compiler
             * so drops the switch's range check from every dispatch. */
            __builtin_unreachable();
        }
    }
#undef PUSH
#undef POP
#undef IN
#undef OUT
}

/* Runs code from pc (an explain term's code); see fx_int.h. */
double fx__run(const fx_ins *code, uint32_t pc, const double *f) {
    return fx_exec(code, pc, f);
}

/* Evaluates p for one job; see fx.h. factors is borrowed. */
double fx_eval(const fx_prog *p, const double *factors) {
    return fx_exec(p->code, 0, factors);
}
