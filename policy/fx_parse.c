/* fx_parse.c -- the recursive-descent parser of the expression language:
 * tokens to a syntax tree in a fixed arena, with the first error kept in
 * the parse context (message, byte offset, line:column), and the
 * "did you mean" suggestions for unknown names.
 *
 * Grammar, lowest precedence first (docs/policy-language.md):
 *   expr    := or ( '?' expr ':' expr )?          right-associative
 *   or      := and ( '||' and )*
 *   and     := eq ( '&&' eq )*
 *   eq      := cmp ( ('=='|'!=') cmp )?           not chained
 *   cmp     := add ( ('<'|'<='|'>'|'>=') add )?   not chained
 *   add     := mul ( ('+'|'-') mul )*
 *   mul     := unary ( ('*'|'/'|'%') unary )*
 *   unary   := ('-'|'+'|'!') unary | power
 *   power   := primary ( '^' unary )?             right-associative
 *   primary := number | duration | true | false | factor
 *            | function '(' expr (',' expr)* ')' | '(' expr ')'
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "policy/fx_int.h"

/* Records the first error (see fx_int.h); later ones are dropped. */
int fx__error(fx_parse_ctx *ctx, aiq_rc rc, uint32_t off, const char *fmt,
              ...) {
    if (ctx->failed) return -1;
    ctx->failed = 1;
    if (!ctx->err) return -1;
    int line = 1, col = 1;
    for (uint32_t i = 0; i < off && i < ctx->len; i++) {
        if (ctx->src[i] == '\n') { line++; col = 1; }
        else col++;
    }
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    aiq_err_set(ctx->err, rc, "%d:%d: %s", line, col, msg);
    if (ctx->err->code == rc) {
        ctx->err->offset = off;
        ctx->err->line = line;
        ctx->err->col = col;
    }
    return -1;
}

/* ---- functions ---------------------------------------------------------- */
static const struct {
    const char *name;
    int min_args, max_args;
    fx_opcode op;
} fx_funcs[] = {
    {"min", 2, FX_MAX_ARGS, FX_OP_MIN}, {"max", 2, FX_MAX_ARGS, FX_OP_MAX},
    {"abs", 1, 1, FX_OP_ABS},           {"log", 1, 1, FX_OP_LOG},
    {"log2", 1, 1, FX_OP_LOG2},         {"sqrt", 1, 1, FX_OP_SQRT},
    {"exp", 1, 1, FX_OP_EXP},           {"pow", 2, 2, FX_OP_POW},
    {"clamp", 3, 3, FX_OP_CLAMP},       {"floor", 1, 1, FX_OP_FLOOR},
    {"ceil", 1, 1, FX_OP_CEIL},
};
#define FX_NFUNCS ((int)(sizeof fx_funcs / sizeof fx_funcs[0]))

static int fx_func_index(const char *s, uint32_t n) {
    for (int i = 0; i < FX_NFUNCS; i++)
        if (strlen(fx_funcs[i].name) == n && memcmp(fx_funcs[i].name, s, n) == 0)
            return i;
    return -1;
}

/* The name of entry i of the context's name table: the table given to
 * fx_compile_names, else the placement or the job factors. */
static const char *fx_name_at(const fx_parse_ctx *ctx, int i) {
    return ctx->names ? ctx->names[i] : ctx->place ? fx_pfactor_name(i) : fx_factor_name(i);
}

/* How many names the context's table has. */
static int fx_name_count(const fx_parse_ctx *ctx) {
    return ctx->names ? ctx->nnames : ctx->place ? FX_NPFACTORS : FX_NFACTORS;
}

static int fx_factor_index_n(const fx_parse_ctx *ctx, const char *s, uint32_t n) {
    int count = fx_name_count(ctx);
    for (int i = 0; i < count; i++) {
        const char *name = fx_name_at(ctx, i);
        if (strlen(name) == n && memcmp(name, s, n) == 0) return i;
    }
    return -1;
}

#define FX_MAX_SUGGEST 64

/* Levenshtein distance between a[0,an) and b, both at most
 * FX_MAX_SUGGEST bytes (longer ones get a distance of 1000). */
static int fx_distance(const char *a, uint32_t an, const char *b) {
    size_t bn = strlen(b);
    if (an > FX_MAX_SUGGEST || bn > FX_MAX_SUGGEST) return 1000;
    int row[FX_MAX_SUGGEST + 1];
    for (size_t j = 0; j <= bn; j++) row[j] = (int)j;
    for (uint32_t i = 1; i <= an; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= bn; j++) {
            int up = row[j];
            int best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[bn];
}

/* The closest known name at most a third of the name's length of edits
 * away (at least 1 edit), or NULL. */
static const char *fx_suggest(const fx_parse_ctx *ctx, const char *s, uint32_t n,
                              int functions) {
    const char *best = NULL;
    int bestd = (int)(n / 3) > 1 ? (int)(n / 3) : 1;
    bestd++;
    int count = functions ? FX_NFUNCS : fx_name_count(ctx);
    for (int i = 0; i < count; i++) {
        const char *name = functions ? fx_funcs[i].name : fx_name_at(ctx, i);
        int d = fx_distance(s, n, name);
        if (d < bestd) { bestd = d; best = name; }
    }
    return best;
}

/* ---- tree building ------------------------------------------------------ */
static int fx_node_new(fx_parse_ctx *ctx, fx_node_kind kind, uint32_t start,
                       uint32_t end) {
    if (ctx->nnodes >= FX_MAX_NODES)
        return fx__error(ctx, AIQ_ETOOBIG, start,
                         "formula is too complex: more than %d nodes",
                         FX_MAX_NODES);
    int i = ctx->nnodes++;
    fx_node *n = &ctx->nodes[i];
    memset(n, 0, sizeof *n);
    n->kind = (uint8_t)kind;
    n->kid = n->next = -1;
    n->start = start;
    n->end = end;
    return i;
}

static int fx_binary(fx_parse_ctx *ctx, fx_node_kind kind, fx_opcode op,
                     int l, int r) {
    int n = fx_node_new(ctx, kind, ctx->nodes[l].start, ctx->nodes[r].end);
    if (n < 0) return -1;
    ctx->nodes[n].op = (uint8_t)op;
    ctx->nodes[n].kid = l;
    ctx->nodes[l].next = r;
    return n;
}

static int fx_enter(fx_parse_ctx *ctx) {
    if (++ctx->depth > FX_MAX_DEPTH)
        return fx__error(ctx, AIQ_ETOOBIG, ctx->tok.start,
                         "expression is nested deeper than %d levels",
                         FX_MAX_DEPTH);
    return 0;
}

static int fx_unexpected(fx_parse_ctx *ctx, const char *wanted) {
    char txt[64];
    if (ctx->tok.type == FX_T_ERROR) return -1; /* already reported */
    fx__tok_text(ctx, &ctx->tok, txt, sizeof txt);
    return fx__error(ctx, AIQ_EPARSE, ctx->tok.start, "expected %s but found %s",
                     wanted, txt);
}

static int fx_expr(fx_parse_ctx *ctx);
static int fx_unary(fx_parse_ctx *ctx);

static int fx_call(fx_parse_ctx *ctx, fx_tok name) {
    const char *s = ctx->src + name.start;
    int fi = fx_func_index(s, name.len);
    if (fi < 0) {
        char txt[64];
        fx__tok_text(ctx, &name, txt, sizeof txt);
        if (fx_factor_index_n(ctx, s, name.len) >= 0)
            return fx__error(ctx, AIQ_EPARSE, name.start,
                             "%s is a %s, not a function", txt, ctx->noun);
        const char *sug = fx_suggest(ctx, s, name.len, 1);
        if (sug)
            return fx__error(ctx, AIQ_EPARSE, name.start,
                             "unknown function %s; did you mean '%s'?", txt, sug);
        return fx__error(ctx, AIQ_EPARSE, name.start,
                         "unknown function %s; known: min max abs log log2 "
                         "sqrt exp pow clamp floor ceil", txt);
    }
    int n = fx_node_new(ctx, FX_N_CALL, name.start, name.start + name.len);
    if (n < 0) return -1;
    ctx->nodes[n].op = (uint8_t)fx_funcs[fi].op;
    fx__next(ctx); /* '(' */
    int nargs = 0, last = -1;
    if (ctx->tok.type == FX_T_RPAREN)
        goto check_count;
    for (;;) {
        int a = fx_expr(ctx);
        if (a < 0) return -1;
        if (++nargs > FX_MAX_ARGS)
            return fx__error(ctx, AIQ_ETOOBIG, ctx->nodes[a].start,
                             "%s() takes at most %d arguments",
                             fx_funcs[fi].name, FX_MAX_ARGS);
        if (last < 0) ctx->nodes[n].kid = a;
        else ctx->nodes[last].next = a;
        last = a;
        if (ctx->tok.type == FX_T_COMMA) { fx__next(ctx); continue; }
        if (ctx->tok.type != FX_T_RPAREN) return fx_unexpected(ctx, "',' or ')'");
        break;
    }
check_count:
    if (nargs < fx_funcs[fi].min_args || nargs > fx_funcs[fi].max_args) {
        if (fx_funcs[fi].min_args == fx_funcs[fi].max_args)
            return fx__error(ctx, AIQ_EPARSE, name.start,
                             "%s() takes %d argument%s, got %d",
                             fx_funcs[fi].name, fx_funcs[fi].min_args,
                             fx_funcs[fi].min_args == 1 ? "" : "s", nargs);
        return fx__error(ctx, AIQ_EPARSE, name.start,
                         "%s() takes %d to %d arguments, got %d",
                         fx_funcs[fi].name, fx_funcs[fi].min_args,
                         fx_funcs[fi].max_args, nargs);
    }
    ctx->nodes[n].end = ctx->tok.start + ctx->tok.len;
    fx__next(ctx); /* ')' */
    return n;
}

static int fx_primary(fx_parse_ctx *ctx) {
    fx_tok t = ctx->tok;
    switch (t.type) {
    case FX_T_NUM:
    case FX_T_DUR:
    case FX_T_TRUE:
    case FX_T_FALSE: {
        int n = fx_node_new(ctx, FX_N_NUM, t.start, t.start + t.len);
        if (n < 0) return -1;
        ctx->nodes[n].k = t.type == FX_T_TRUE ? 1.0 : t.type == FX_T_FALSE ? 0.0 : t.num;
        fx__next(ctx);
        return n;
    }
    case FX_T_NAME: {
        fx__next(ctx);
        if (ctx->tok.type == FX_T_LPAREN) return fx_call(ctx, t);
        const char *s = ctx->src + t.start;
        int fi = fx_factor_index_n(ctx, s, t.len);
        if (fi < 0) {
            char txt[64];
            fx__tok_text(ctx, &t, txt, sizeof txt);
            if (fx_func_index(s, t.len) >= 0)
                return fx__error(ctx, AIQ_EPARSE, t.start,
                                 "%s is a function; call it as %.*s(...)", txt,
                                 (int)t.len, s);
            fx_parse_ctx other = *ctx;
            other.place = !ctx->place;
            if (!ctx->names && fx_factor_index_n(&other, s, t.len) >= 0)
                return fx__error(ctx, AIQ_EPARSE, t.start,
                                 ctx->place ? "%s is a job factor; a placement score uses "
                                              "placement factors (node.*, gpu.*, frag.*, "
                                              "gang.*, util.*)"
                                            : "%s is a placement factor; it is only known in "
                                              "a placement score",
                                 txt);
            const char *sug = fx_suggest(ctx, s, t.len, 0);
            if (sug)
                return fx__error(ctx, AIQ_EPARSE, t.start,
                                 "unknown %s %s; did you mean '%s'?", ctx->noun, txt, sug);
            return fx__error(ctx, AIQ_EPARSE, t.start, "unknown %s %s", ctx->noun, txt);
        }
        int n = fx_node_new(ctx, FX_N_FACTOR, t.start, t.start + t.len);
        if (n < 0) return -1;
        ctx->nodes[n].factor = (uint16_t)fi;
        return n;
    }
    case FX_T_LPAREN: {
        fx__next(ctx);
        int n = fx_expr(ctx);
        if (n < 0) return -1;
        if (ctx->tok.type != FX_T_RPAREN) return fx_unexpected(ctx, "')'");
        ctx->nodes[n].start = t.start;
        ctx->nodes[n].end = ctx->tok.start + 1;
        fx__next(ctx);
        return n;
    }
    default:
        return fx_unexpected(ctx, "an expression");
    }
}

static int fx_power(fx_parse_ctx *ctx) {
    int l = fx_primary(ctx);
    if (l < 0) return -1;
    if (ctx->tok.type != FX_T_CARET) return l;
    if (fx_enter(ctx) < 0) return -1;
    fx__next(ctx);
    int r = fx_unary(ctx); /* right-assoc: 2^3^2 = 2^(3^2); 2^-1 works */
    ctx->depth--;
    if (r < 0) return -1;
    return fx_binary(ctx, FX_N_BINARY, FX_OP_POW, l, r);
}

static int fx_unary(fx_parse_ctx *ctx) {
    fx_tok t = ctx->tok;
    if (t.type != FX_T_MINUS && t.type != FX_T_PLUS && t.type != FX_T_NOT)
        return fx_power(ctx);
    if (fx_enter(ctx) < 0) return -1;
    fx__next(ctx);
    int k = fx_unary(ctx);
    ctx->depth--;
    if (k < 0) return -1;
    if (t.type == FX_T_PLUS) {
        ctx->nodes[k].start = t.start;
        return k;
    }
    int n = fx_node_new(ctx, FX_N_UNARY, t.start, ctx->nodes[k].end);
    if (n < 0) return -1;
    ctx->nodes[n].op = (uint8_t)(t.type == FX_T_MINUS ? FX_OP_NEG : FX_OP_NOT);
    ctx->nodes[n].kid = k;
    return n;
}

static int fx_mul(fx_parse_ctx *ctx) {
    int l = fx_unary(ctx);
    while (l >= 0) {
        fx_opcode op;
        switch (ctx->tok.type) {
        case FX_T_STAR: op = FX_OP_MUL; break;
        case FX_T_SLASH: op = FX_OP_DIV; break;
        case FX_T_PERCENT: op = FX_OP_MOD; break;
        default: return l;
        }
        fx__next(ctx);
        int r = fx_unary(ctx);
        if (r < 0) return -1;
        l = fx_binary(ctx, FX_N_BINARY, op, l, r);
    }
    return -1;
}

static int fx_add(fx_parse_ctx *ctx) {
    int l = fx_mul(ctx);
    while (l >= 0) {
        fx_opcode op;
        switch (ctx->tok.type) {
        case FX_T_PLUS: op = FX_OP_ADD; break;
        case FX_T_MINUS: op = FX_OP_SUB; break;
        default: return l;
        }
        fx__next(ctx);
        int r = fx_mul(ctx);
        if (r < 0) return -1;
        l = fx_binary(ctx, FX_N_BINARY, op, l, r);
    }
    return -1;
}

static fx_opcode fx_cmp_op(fx_tok_type t) {
    switch (t) {
    case FX_T_LT: return FX_OP_LT;
    case FX_T_LE: return FX_OP_LE;
    case FX_T_GT: return FX_OP_GT;
    case FX_T_GE: return FX_OP_GE;
    case FX_T_EQ: return FX_OP_EQ;
    case FX_T_NE: return FX_OP_NE;
    default: return FX_OP_END;
    }
}

/* One non-associative comparison level; eq selects == != or < <= > >=. */
static int fx_compare(fx_parse_ctx *ctx, int eq) {
    int l = eq ? fx_compare(ctx, 0) : fx_add(ctx);
    if (l < 0) return -1;
    fx_opcode op = fx_cmp_op(ctx->tok.type);
    int is_eq = op == FX_OP_EQ || op == FX_OP_NE;
    if (op == FX_OP_END || is_eq != eq) return l;
    fx__next(ctx);
    int r = eq ? fx_compare(ctx, 0) : fx_add(ctx);
    if (r < 0) return -1;
    fx_opcode again = fx_cmp_op(ctx->tok.type);
    if (again != FX_OP_END &&
        (again == FX_OP_EQ || again == FX_OP_NE) == is_eq)
        return fx__error(ctx, AIQ_EPARSE, ctx->tok.start,
                         "comparisons cannot be chained; write "
                         "(a < b) && (b < c)");
    return fx_binary(ctx, FX_N_BINARY, op, l, r);
}

static int fx_and(fx_parse_ctx *ctx) {
    int l = fx_compare(ctx, 1);
    while (l >= 0 && ctx->tok.type == FX_T_AND) {
        fx__next(ctx);
        int r = fx_compare(ctx, 1);
        if (r < 0) return -1;
        l = fx_binary(ctx, FX_N_AND, FX_OP_ANDJ, l, r);
    }
    return l;
}

static int fx_or(fx_parse_ctx *ctx) {
    int l = fx_and(ctx);
    while (l >= 0 && ctx->tok.type == FX_T_OR) {
        fx__next(ctx);
        int r = fx_and(ctx);
        if (r < 0) return -1;
        l = fx_binary(ctx, FX_N_OR, FX_OP_ORJ, l, r);
    }
    return l;
}

static int fx_expr(fx_parse_ctx *ctx) {
    if (fx_enter(ctx) < 0) return -1;
    int c = fx_or(ctx);
    if (c >= 0 && ctx->tok.type == FX_T_QUESTION) {
        fx__next(ctx);
        int a = fx_expr(ctx);
        if (a < 0) { c = -1; goto out; }
        if (ctx->tok.type != FX_T_COLON) { c = fx_unexpected(ctx, "':'"); goto out; }
        fx__next(ctx);
        int b = fx_expr(ctx);
        if (b < 0) { c = -1; goto out; }
        int n = fx_node_new(ctx, FX_N_TERNARY, ctx->nodes[c].start,
                            ctx->nodes[b].end);
        if (n < 0) { c = -1; goto out; }
        ctx->nodes[n].kid = c;
        ctx->nodes[c].next = a;
        ctx->nodes[a].next = b;
        c = n;
    }
out:
    ctx->depth--;
    return c;
}

/* Parses ctx->src into ctx->nodes; root index or -1 (see fx_int.h). */
int fx__parse(fx_parse_ctx *ctx) {
    if (fx__next(ctx) == FX_T_ERROR) return -1;
    if (ctx->tok.type == FX_T_END)
        return fx__error(ctx, AIQ_EPARSE, ctx->tok.start, "empty formula");
    int root = fx_expr(ctx);
    if (root < 0) return -1;
    if (ctx->tok.type == FX_T_ERROR) return -1;
    if (ctx->tok.type != FX_T_END) {
        char txt[64];
        fx__tok_text(ctx, &ctx->tok, txt, sizeof txt);
        return fx__error(ctx, AIQ_EPARSE, ctx->tok.start,
                         "unexpected %s after a complete expression "
                         "(missing operator?)", txt);
    }
    return root;
}
