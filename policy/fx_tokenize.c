/* fx_tokenize.c -- the table-driven tokenizer of the expression language.
 *
 * A 256-entry class table sorts each byte into a class; names are
 * [A-Za-z_][A-Za-z0-9_.]*, numbers are decimal with an optional fraction
 * and exponent, and a number followed by a unit letter (s m h d w) is a
 * duration in hours (`90m` = 1.5, `1h30m` = 1.5). Operators come from a
 * table indexed by their first byte, the two-byte form tried first. `#` starts a comment to the end of the line, so
 * multi-line YAML formulas can carry notes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/fx_int.h"

enum { C_BAD = 0, C_SPACE, C_DIGIT, C_ALPHA, C_DOT, C_OP, C_HASH };

/* Byte classes; everything not listed (control bytes, non-ASCII, '@',
 * '$', quotes, ...) is C_BAD. */
static const unsigned char fx_class[256] = {
    [' '] = C_SPACE, ['\t'] = C_SPACE, ['\n'] = C_SPACE, ['\r'] = C_SPACE,
    ['0'] = C_DIGIT, ['1'] = C_DIGIT, ['2'] = C_DIGIT, ['3'] = C_DIGIT,
    ['4'] = C_DIGIT, ['5'] = C_DIGIT, ['6'] = C_DIGIT, ['7'] = C_DIGIT,
    ['8'] = C_DIGIT, ['9'] = C_DIGIT,
    ['a'] = C_ALPHA, ['b'] = C_ALPHA, ['c'] = C_ALPHA, ['d'] = C_ALPHA,
    ['e'] = C_ALPHA, ['f'] = C_ALPHA, ['g'] = C_ALPHA, ['h'] = C_ALPHA,
    ['i'] = C_ALPHA, ['j'] = C_ALPHA, ['k'] = C_ALPHA, ['l'] = C_ALPHA,
    ['m'] = C_ALPHA, ['n'] = C_ALPHA, ['o'] = C_ALPHA, ['p'] = C_ALPHA,
    ['q'] = C_ALPHA, ['r'] = C_ALPHA, ['s'] = C_ALPHA, ['t'] = C_ALPHA,
    ['u'] = C_ALPHA, ['v'] = C_ALPHA, ['w'] = C_ALPHA, ['x'] = C_ALPHA,
    ['y'] = C_ALPHA, ['z'] = C_ALPHA,
    ['A'] = C_ALPHA, ['B'] = C_ALPHA, ['C'] = C_ALPHA, ['D'] = C_ALPHA,
    ['E'] = C_ALPHA, ['F'] = C_ALPHA, ['G'] = C_ALPHA, ['H'] = C_ALPHA,
    ['I'] = C_ALPHA, ['J'] = C_ALPHA, ['K'] = C_ALPHA, ['L'] = C_ALPHA,
    ['M'] = C_ALPHA, ['N'] = C_ALPHA, ['O'] = C_ALPHA, ['P'] = C_ALPHA,
    ['Q'] = C_ALPHA, ['R'] = C_ALPHA, ['S'] = C_ALPHA, ['T'] = C_ALPHA,
    ['U'] = C_ALPHA, ['V'] = C_ALPHA, ['W'] = C_ALPHA, ['X'] = C_ALPHA,
    ['Y'] = C_ALPHA, ['Z'] = C_ALPHA, ['_'] = C_ALPHA,
    ['.'] = C_DOT,
    ['+'] = C_OP, ['-'] = C_OP, ['*'] = C_OP, ['/'] = C_OP, ['%'] = C_OP,
    ['^'] = C_OP, ['('] = C_OP, [')'] = C_OP, [','] = C_OP, ['?'] = C_OP,
    [':'] = C_OP, ['<'] = C_OP, ['>'] = C_OP, ['='] = C_OP, ['!'] = C_OP,
    ['&'] = C_OP, ['|'] = C_OP,
    ['#'] = C_HASH,
};

/* Operators by first byte: the one-byte token (FX_T_END: the byte is no
 * operator alone, and `alone` says what was meant), and the two-byte one,
 * whose second byte is `second` (0: none), which wins when it matches. */
static const struct {
    fx_tok_type one;
    char second;
    fx_tok_type two;
    const char *alone;
} fx_ops[256] = {
    ['+'] = {FX_T_PLUS, 0, FX_T_END, NULL},    ['-'] = {FX_T_MINUS, 0, FX_T_END, NULL},
    ['*'] = {FX_T_STAR, 0, FX_T_END, NULL},    ['/'] = {FX_T_SLASH, 0, FX_T_END, NULL},
    ['%'] = {FX_T_PERCENT, 0, FX_T_END, NULL}, ['^'] = {FX_T_CARET, 0, FX_T_END, NULL},
    ['('] = {FX_T_LPAREN, 0, FX_T_END, NULL},  [')'] = {FX_T_RPAREN, 0, FX_T_END, NULL},
    [','] = {FX_T_COMMA, 0, FX_T_END, NULL},   ['?'] = {FX_T_QUESTION, 0, FX_T_END, NULL},
    [':'] = {FX_T_COLON, 0, FX_T_END, NULL},
    ['<'] = {FX_T_LT, '=', FX_T_LE, NULL},     ['>'] = {FX_T_GT, '=', FX_T_GE, NULL},
    ['!'] = {FX_T_NOT, '=', FX_T_NE, NULL},
    ['='] = {FX_T_END, '=', FX_T_EQ, "; compare with '=='"},
    ['&'] = {FX_T_END, '&', FX_T_AND, "; did you mean '&&'?"},
    ['|'] = {FX_T_END, '|', FX_T_OR, "; did you mean '||'?"},
};

/* Duration units in hours. */
static double fx_unit_hours(char c) {
    switch (c) {
    case 's': return 1.0 / 3600.0;
    case 'm': return 1.0 / 60.0;
    case 'h': return 1.0;
    case 'd': return 24.0;
    case 'w': return 168.0;
    default: return 0.0;
    }
}

#define FX_MAX_NUMTEXT 64

/* Scans a decimal number at p (a digit, or '.' followed by a digit);
 * returns its length, or 0 when it is malformed (e.g. "1e"). */
static uint32_t fx_scan_number(const char *s, uint32_t p, uint32_t len) {
    uint32_t q = p;
    while (q < len && fx_class[(unsigned char)s[q]] == C_DIGIT) q++;
    if (q < len && s[q] == '.') {
        q++;
        while (q < len && fx_class[(unsigned char)s[q]] == C_DIGIT) q++;
    }
    if (q < len && (s[q] == 'e' || s[q] == 'E')) {
        uint32_t r = q + 1;
        if (r < len && (s[r] == '+' || s[r] == '-')) r++;
        if (r < len && fx_class[(unsigned char)s[r]] == C_DIGIT) {
            while (r < len && fx_class[(unsigned char)s[r]] == C_DIGIT) r++;
            q = r;
        }
        /* else: 'e' is not an exponent; it is caught as a bad unit */
    }
    return q - p;
}

/* Converts s[p, p+n) with strtod on a bounded copy. */
static int fx_number_value(const char *s, uint32_t p, uint32_t n, double *out) {
    char buf[FX_MAX_NUMTEXT + 1];
    if (n > FX_MAX_NUMTEXT) return -1;
    memcpy(buf, s + p, n);
    buf[n] = '\0';
    char *end = NULL;
    double v = strtod(buf, &end);
    if (end != buf + n || !(v <= DBL_MAX)) return -1;
    *out = v;
    return 0;
}

/* Quoted, printable, cut-to-40 copy of a token for messages. */
void fx__tok_text(const fx_parse_ctx *ctx, const fx_tok *t, char *buf,
                  size_t cap) {
    if (t->len == 0) {
        snprintf(buf, cap, "end of input");
        return;
    }
    uint32_t n = t->len > 40 ? 40 : t->len;
    size_t o = 0;
    if (cap < 8) { if (cap) buf[0] = '\0'; return; }
    buf[o++] = '\'';
    for (uint32_t i = 0; i < n && o + 5 < cap; i++) {
        unsigned char c = (unsigned char)ctx->src[t->start + i];
        if (c < 0x20 || c >= 0x7f) {
            snprintf(buf + o, cap - o, "\\x%02x", c);
            o += 4;
        } else {
            buf[o++] = (char)c;
        }
    }
    if (t->len > n && o + 4 < cap) { memcpy(buf + o, "...", 3); o += 3; }
    buf[o++] = '\'';
    buf[o] = '\0';
}

/* Ends the bad token s[p, e) at e and sets the context error: pre, the
 * token's quoted text, then post. Returns FX_T_ERROR. */
static fx_tok_type fx_bad_token(fx_parse_ctx *ctx, uint32_t p, uint32_t e, const char *pre,
                                const char *post) {
    fx_tok *t = &ctx->tok;
    t->len = e - p;
    ctx->pos = e;
    char txt[64];
    fx__tok_text(ctx, t, txt, sizeof txt);
    fx__error(ctx, AIQ_EPARSE, p, "%s%s%s", pre, txt, post);
    return t->type = FX_T_ERROR;
}

/* The end of the name (or of the letters glued to a number) at q: letters,
 * digits and dots. */
static uint32_t fx_word_end(const char *s, uint32_t q, uint32_t len) {
    while (q < len && (fx_class[(unsigned char)s[q]] == C_ALPHA ||
                       fx_class[(unsigned char)s[q]] == C_DIGIT ||
                       fx_class[(unsigned char)s[q]] == C_DOT))
        q++;
    return q;
}

/* The hours of the unit letter at q (a letter right after a number), or
 * 0 when it is no unit or more letters or a dot are glued to it. */
static double fx_unit_at(const char *s, uint32_t q, uint32_t len) {
    int next_ok = q + 1 >= len ||
                  (fx_class[(unsigned char)s[q + 1]] != C_ALPHA && s[q + 1] != '.');
    return next_ok ? fx_unit_hours(s[q]) : 0.0;
}

/* A number at p (a digit, or '.' before a digit): FX_T_NUM, or FX_T_DUR
 * with the value in hours when units follow (`1h30m`); FX_T_ERROR when
 * it is out of range or a unit is bad or missing. */
static fx_tok_type fx_lex_number(fx_parse_ctx *ctx, uint32_t p) {
    const char *s = ctx->src;
    uint32_t len = ctx->len, q = p;
    fx_tok *t = &ctx->tok;
    double total = 0;
    int is_dur = 0;
    for (;;) {
        uint32_t n = fx_scan_number(s, q, len);
        double v;
        if (fx_number_value(s, q, n, &v) != 0)
            return fx_bad_token(ctx, p, q + n, "number ", " is out of range");
        q += n;
        if (q < len && fx_class[(unsigned char)s[q]] == C_ALPHA) {
            /* a unit, or garbage glued to the number */
            double h = fx_unit_at(s, q, len);
            if (h == 0)
                return fx_bad_token(ctx, p, fx_word_end(s, q, len), "invalid number ",
                                    "; a duration unit is one of s, m, h, d, w");
            total += v * h;
            is_dur = 1;
            q++;
            /* compound durations: 1h30m */
            if (q < len && fx_class[(unsigned char)s[q]] == C_DIGIT)
                continue;
        } else if (is_dur) {
            /* a bare number after a unit, e.g. "1h30" */
            return fx_bad_token(ctx, p, q, "invalid duration ",
                                ": every number needs a unit (s, m, h, d, w)");
        } else {
            total = v;
        }
        break;
    }
    t->len = q - p;
    ctx->pos = q;
    if (!(total <= DBL_MAX)) {
        fx__error(ctx, AIQ_EPARSE, p, "duration is out of range");
        return t->type = FX_T_ERROR;
    }
    t->num = total;
    return t->type = is_dur ? FX_T_DUR : FX_T_NUM;
}

/* A name at p, or the literal true or false. */
static fx_tok_type fx_lex_name(fx_parse_ctx *ctx, uint32_t p) {
    const char *s = ctx->src;
    uint32_t q = fx_word_end(s, p, ctx->len);
    fx_tok *t = &ctx->tok;
    t->len = q - p;
    ctx->pos = q;
    if (t->len == 4 && memcmp(s + p, "true", 4) == 0)
        return t->type = FX_T_TRUE;
    if (t->len == 5 && memcmp(s + p, "false", 5) == 0)
        return t->type = FX_T_FALSE;
    return t->type = FX_T_NAME;
}

/* An operator at p (a C_OP byte), from fx_ops. A byte that is no
 * operator alone ('=', '&', '|') is an error that names the one meant. */
static fx_tok_type fx_lex_op(fx_parse_ctx *ctx, uint32_t p) {
    const char *s = ctx->src;
    unsigned char c = (unsigned char)s[p];
    fx_tok *t = &ctx->tok;
    if (fx_ops[c].second && p + 1 < ctx->len && s[p + 1] == fx_ops[c].second) {
        t->len = 2;
        ctx->pos = p + 2;
        return t->type = fx_ops[c].two;
    }
    if (fx_ops[c].one != FX_T_END) {
        t->len = 1;
        ctx->pos = p + 1;
        return t->type = fx_ops[c].one;
    }
    return fx_bad_token(ctx, p, p + 1, fx_ops[c].alone ? "unexpected " : "unexpected character ",
                        fx_ops[c].alone ? fx_ops[c].alone : "");
}

/* Reads the next token into ctx->tok (see fx_int.h). */
fx_tok_type fx__next(fx_parse_ctx *ctx) {
    const char *s = ctx->src;
    uint32_t len = ctx->len, p = ctx->pos;
    fx_tok *t = &ctx->tok;

    for (;;) { /* skip blanks and comments */
        while (p < len && fx_class[(unsigned char)s[p]] == C_SPACE) p++;
        if (p < len && s[p] == '#') {
            while (p < len && s[p] != '\n') p++;
            continue;
        }
        break;
    }
    t->start = p;
    t->len = 0;
    t->num = 0;
    if (p >= len) {
        ctx->pos = p;
        return t->type = FX_T_END;
    }
    switch (fx_class[(unsigned char)s[p]]) {
    case C_DIGIT:
        return fx_lex_number(ctx, p);
    case C_DOT: /* a number only when a digit follows */
        if (p + 1 < len && fx_class[(unsigned char)s[p + 1]] == C_DIGIT)
            return fx_lex_number(ctx, p);
        break;
    case C_ALPHA:
        return fx_lex_name(ctx, p);
    case C_OP:
        return fx_lex_op(ctx, p);
    default:
        break;
    }
    return fx_bad_token(ctx, p, p + 1, "unexpected character ", "");
}
