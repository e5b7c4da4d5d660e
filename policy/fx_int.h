/* fx_int.h -- private layout of the expression language: tokens, the
 * syntax tree, the parse context, instructions, the compiled program, and
 * the numeric rules shared by the VM and constant folding (so a folded
 * constant is exactly what the VM would have computed). Not for use
 * outside policy/fx_*.c. */
#ifndef AIQ_FX_INT_H
#define AIQ_FX_INT_H

#include <float.h>
#include <math.h>
#include <stdint.h>

#include "common/aiq_err.h"
#include "policy/fx.h"

/* ---- opcodes ------------------------------------------------------------ */
#define FX_OPF_F 1u /* a is a factor index */
#define FX_OPF_K 2u /* k is used */
#define FX_OPF_J 4u /* b is a jump target */
#define FX_OPF_N 8u /* b counts the DATA slots that follow (LIN) */
#define FX_OPF_M 16u /* takes operand modes (fx_ins.m) */
#define FX_OPF_K2 32u /* k2 is used (a second constant) */
#define FX_OPF_T 64u /* b counts a tail of DATA slots (weighted terms added
                      * after the op, as LIN does) */
#define FX_OPF_K3 128u /* k3 is used (a third constant) */

/* Operand modes, folded into an instruction by the compiler's peephole
 * (fewer dispatches): FX_M_INF pushes f[a] before the op (so its input x
 * is the factor), FX_M_ACC adds the value under x to the result after the
 * op (x = y + x, the ADD that follows a term). */
#define FX_M_INF 1u
#define FX_M_ACC 2u
/* Only in fx_ins.h, for the threaded VM, one of: the op has a weighted
 * tail of two or more slots; END follows the op; the op has a tail of
 * exactly one slot (the common `+ k * factor` between two other terms). */
#define FX_M_TAIL 4u
#define FX_M_END 8u
#define FX_M_TAIL1 12u

typedef enum {
#define FX_OP(name, flags, doc) FX_OP_##name,
#include "policy/fx_ops.def"
#undef FX_OP
    FX__NOPS
} fx_opcode;

extern const char *const fx__op_names[FX__NOPS];
extern const unsigned fx__op_flags[FX__NOPS];

/* The fixed instruction shape: 32 bytes. h is derived from the rest when
 * compilation ends (fx__set_dispatch) and only read by the threaded VM. */
typedef struct {
    uint8_t op;   /* fx_opcode */
    uint8_t m;    /* operand modes: FX_M_INF | FX_M_ACC */
    uint16_t a;   /* factor index */
    uint16_t h;   /* dispatch index: op | (m | FX_M_TAIL...) << 6 */
    uint16_t b;   /* jump target (absolute pc), or a count of DATA slots */
    double k;     /* constant */
    double k2;    /* second constant of the fused pairs (MULK_DIVK, ...) */
    double k3;    /* third constant (MINK_MULK_DIVK) */
} fx_ins;
_Static_assert(FX_MAX_CODE <= 65535, "jump targets fit fx_ins.b");

/* ---- tokens ------------------------------------------------------------- */
typedef enum {
    FX_T_END = 0, FX_T_NUM, FX_T_DUR, FX_T_NAME, FX_T_TRUE, FX_T_FALSE,
    FX_T_PLUS, FX_T_MINUS, FX_T_STAR, FX_T_SLASH, FX_T_PERCENT, FX_T_CARET,
    FX_T_LPAREN, FX_T_RPAREN, FX_T_COMMA, FX_T_QUESTION, FX_T_COLON,
    FX_T_LT, FX_T_LE, FX_T_GT, FX_T_GE, FX_T_EQ, FX_T_NE,
    FX_T_AND, FX_T_OR, FX_T_NOT,
    FX_T_ERROR
} fx_tok_type;

typedef struct {
    fx_tok_type type;
    uint32_t start, len; /* byte range in the source */
    double num;          /* FX_T_NUM / FX_T_DUR value (durations in hours) */
} fx_tok;

/* ---- syntax tree -------------------------------------------------------- */
typedef enum {
    FX_N_NUM, FX_N_FACTOR, FX_N_UNARY, FX_N_BINARY, FX_N_TERNARY, FX_N_CALL,
    FX_N_AND, FX_N_OR
} fx_node_kind;

/* Children are linked: kid is the first, next the following sibling
 * (-1 ends). FX_N_UNARY/BINARY/CALL keep the opcode they compile to in op
 * (for calls of min/max the pairwise opcode, applied left to right). */
typedef struct {
    uint8_t kind;     /* fx_node_kind */
    uint8_t op;       /* fx_opcode */
    uint16_t factor;  /* FX_N_FACTOR */
    int32_t kid, next;
    uint32_t start, end; /* source byte range, for explain labels */
    double k;         /* FX_N_NUM */
} fx_node;

/* The parse context: source, cursor, one token of lookahead, the node
 * arena, and the first error (later errors are dropped). */
typedef struct {
    const char *src;
    uint32_t len, pos;
    fx_tok tok;
    fx_node *nodes;
    int nnodes;
    int depth;
    int failed;
    aiq_err *err;
    /* The names a bare identifier may be (fx_compile_names): NULL = the
     * job factors of fx_factors.def, or the placement factors when place
     * is set; noun says what they are in
     * messages ("factor", "metric"). */
    const char *const *names;
    int nnames;
    const char *noun;
    int place;        /* names are placement factors (fx_compile_placement) */
} fx_parse_ctx;

/* fx_tokenize.c: reads the token at ctx->pos into ctx->tok and advances.
 * On a bad token sets the context error and returns FX_T_ERROR. */
fx_tok_type fx__next(fx_parse_ctx *ctx);
/* A printable copy of a token's text (quoted in messages), cut to 40. */
void fx__tok_text(const fx_parse_ctx *ctx, const fx_tok *t, char *buf,
                  size_t cap);

/* fx_parse.c: records the first error at byte offset off, with
 * "line:col: " in front of the formatted message. Returns -1. */
int fx__error(fx_parse_ctx *ctx, aiq_rc rc, uint32_t off, const char *fmt,
              ...) __attribute__((format(printf, 4, 5)));
/* Parses the whole source; returns the root node index or -1 (error in
 * ctx). The arena ctx->nodes must hold FX_MAX_NODES nodes. */
int fx__parse(fx_parse_ctx *ctx);

/* ---- the compiled program ----------------------------------------------- */
typedef struct {
    uint32_t pc;       /* first instruction of the term's own code */
    char label[96];
} fx_term_code;

struct fx_prog {
    fx_mode mode;
    int ncode;
    fx_ins *code;      /* main program at 0, then each term's code */
    int nterms;
    fx_term_code *terms;
    int max_stack;
    int place;         /* factors are placement factors (for fx_dump) */
    uint64_t reads;    /* bit i: the source names factor i (fx_prog_reads) */
};

/* fx_compile.c: fx_compile with options. FX__NOFUSE compiles to plain
 * stack code: no constant folding, no superinstructions, no peephole; the
 * tests compare it with the optimised code bit for bit. */
#define FX__NOFUSE 1u
#define FX__PLACE 2u   /* placement factors (fx_compile_placement) */
fx_prog *fx__compile_opts(const char *src, fx_mode mode, unsigned opts,
                          aiq_err *err);
/* The same against another name table (fx_compile_names; names NULL =
 * the job factors). */
fx_prog *fx__compile_table(const char *src, fx_mode mode, unsigned opts,
                           const char *const *names, int nnames,
                           const char *noun, aiq_err *err);

/* fx_vm.c: fills the dispatch index h of every instruction of code[0..n)
 * (done once, when compilation ends). */
void fx__set_dispatch(fx_ins *code, int n);

/* fx_vm.c: runs code from pc until END; never NaN, never infinite. */
double fx__run(const fx_ins *code, uint32_t pc, const double *f);
/* fx_vm.c: the same with the portable switch interpreter, even where
 * fx_eval uses the threaded one (GNU C); the tests pin the two together. */
double fx__run_switch(const fx_ins *code, uint32_t pc, const double *f);

/* ---- numeric rules (docs/policy-language.md, "Numbers") ----------------- */
static inline int fx__truthy(double x) { return x > 0 || x < 0; }
static inline double fx__finite(double x) {
    if (x != x) return 0.0;
    if (x > DBL_MAX) return DBL_MAX;
    if (x < -DBL_MAX) return -DBL_MAX;
    return x;
}
static inline double fx__div(double y, double x) {
    return x == 0 ? 0.0 : y / x;
}
static inline double fx__mod(double y, double x) {
    return x == 0 ? 0.0 : fmod(y, x);
}
/* pow: 0 to a negative power is 0 (like division by zero); a negative base
 * with a non-integer exponent is 0 (no real result). */
static inline double fx__pow(double y, double x) {
    if (y == 0 && x < 0) return 0.0;
    double r = pow(y, x);
    return r != r ? 0.0 : r;
}
static inline double fx__log(double x) { return x > 0 ? log(x) : 0.0; }
static inline double fx__log2(double x) { return x > 0 ? log2(x) : 0.0; }
static inline double fx__sqrt(double x) { return x >= 0 ? sqrt(x) : 0.0; }
/* min/max with fmin/fmax's rule (a NaN operand is ignored), inline:
 * glibc's fmin is a call, which costs more than the rest of a term. */
static inline double fx__min(double a, double b) {
    if (b != b) return a;
    if (a != a) return b;
    return b < a ? b : a;
}
static inline double fx__max(double a, double b) {
    if (b != b) return a;
    if (a != a) return b;
    return b > a ? b : a;
}
static inline double fx__clamp(double v, double lo, double hi) {
    return fx__min(fx__max(v, lo), hi);
}

/* Applies a pure opcode (no factor, no jump) to constant operands:
 * unary ops use x, binary ops y and x, CLAMP z (value), y (lo), x (hi).
 * Used by constant folding; the VM inlines the same helpers. */
double fx__apply(fx_opcode op, double z, double y, double x);

#endif
