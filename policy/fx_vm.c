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

double fx__run(const fx_ins *code, uint32_t pc, const double *f) {
    double stack[FX_MAX_STACK + 1];
    double *sp = stack; /* next free slot; x is not stored */
    double x = 0.0;
    const fx_ins *ip = code + pc;

#define PUSH(v) do { *sp++ = x; x = (v); } while (0)
#define POP() (*--sp)
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
        case FX_OP_ADDK: x += in->k; break;
        case FX_OP_SUBK: x -= in->k; break;
        case FX_OP_MULK: x *= in->k; break;
        case FX_OP_DIVK: x /= in->k; break;
        case FX_OP_KSUB: x = in->k - x; break;
        case FX_OP_KDIV: x = fx__div(in->k, x); break;
        case FX_OP_POWK: x = fx__pow(x, in->k); break;
        /* x op factor. */
        case FX_OP_ADDF: x += f[in->a]; break;
        case FX_OP_SUBF: x -= f[in->a]; break;
        case FX_OP_MULF: x *= f[in->a]; break;
        case FX_OP_DIVF: x = fx__div(x, f[in->a]); break;
        /* ADDFK: one weighted term, x + f[a] * k. */
        case FX_OP_ADDFK: x += f[in->a] * in->k; break;
        /* Unary operators; booleans are 1/0, false is 0 or NaN. */
        case FX_OP_NEG: x = -x; break;
        case FX_OP_NOT: x = fx__truthy(x) ? 0.0 : 1.0; break;
        case FX_OP_TRUTH: x = fx__truthy(x) ? 1.0 : 0.0; break;
        /* Comparisons give 1/0; any comparison with NaN is 0 but != is 1. */
        case FX_OP_LT: x = POP() < x; break;
        case FX_OP_LE: x = POP() <= x; break;
        case FX_OP_GT: x = POP() > x; break;
        case FX_OP_GE: x = POP() >= x; break;
        case FX_OP_EQ: x = POP() == x; break;
        case FX_OP_NE: x = POP() != x; break;
        case FX_OP_LTK: x = x < in->k; break;
        case FX_OP_LEK: x = x <= in->k; break;
        case FX_OP_GTK: x = x > in->k; break;
        case FX_OP_GEK: x = x >= in->k; break;
        /* min/max ignore a NaN operand (fmin/fmax). */
        case FX_OP_MIN: x = fmin(POP(), x); break;
        case FX_OP_MAX: x = fmax(POP(), x); break;
        case FX_OP_MINK: x = fmin(x, in->k); break;
        case FX_OP_MAXK: x = fmax(x, in->k); break;
        /* Functions of one argument, with the domain rules of fx_int.h. */
        case FX_OP_ABS: x = fabs(x); break;
        case FX_OP_LOG: x = fx__log(x); break;
        case FX_OP_LOG2: x = fx__log2(x); break;
        case FX_OP_SQRT: x = fx__sqrt(x); break;
        case FX_OP_EXP: x = exp(x); break;
        case FX_OP_FLOOR: x = floor(x); break;
        case FX_OP_CEIL: x = ceil(x); break;
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
        default:
            /* unreachable: the compiler emits only known opcodes */
            return 0.0;
        }
    }
#undef PUSH
#undef POP
}

/* Evaluates p for one job; see fx.h. factors is borrowed. */
double fx_eval(const fx_prog *p, const double *factors) {
    return fx__run(p->code, 0, factors);
}
