/* fx_tokenize.c -- the table-driven tokenizer of the expression language.
 *
 * A 256-entry class table sorts each byte into a class; names are
 * [A-Za-z_][A-Za-z0-9_.]*, numbers are decimal with an optional fraction
 * and exponent, and a number followed by a unit letter (s m h d w) is a
 * duration in hours (`90m` = 1.5, `1h30m` = 1.5). Operators come from a
 * table, longest first. `#` starts a comment to the end of the line, so
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

/* Operators, two-byte ones first so the first match is the longest. */
static const struct {
    const char *text;
    fx_tok_type type;
} fx_optab[] = {
    {"&&", FX_T_AND}, {"||", FX_T_OR}, {"<=", FX_T_LE}, {">=", FX_T_GE},
    {"==", FX_T_EQ},  {"!=", FX_T_NE}, {"+", FX_T_PLUS}, {"-", FX_T_MINUS},
    {"*", FX_T_STAR}, {"/", FX_T_SLASH}, {"%", FX_T_PERCENT},
    {"^", FX_T_CARET}, {"(", FX_T_LPAREN}, {")", FX_T_RPAREN},
    {",", FX_T_COMMA}, {"?", FX_T_QUESTION}, {":", FX_T_COLON},
    {"<", FX_T_LT}, {">", FX_T_GT}, {"!", FX_T_NOT},
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
        t->type = FX_T_END;
        ctx->pos = p;
        return t->type;
    }
    unsigned char c = (unsigned char)s[p];
    switch (fx_class[c]) {
    case C_DIGIT:
    case C_DOT: {
        if (fx_class[c] == C_DOT &&
            !(p + 1 < len && fx_class[(unsigned char)s[p + 1]] == C_DIGIT))
            goto bad_char;
        double total = 0;
        int is_dur = 0;
        uint32_t q = p;
        for (;;) {
            uint32_t n = fx_scan_number(s, q, len);
            double v;
            if (fx_number_value(s, q, n, &v) != 0) {
                t->len = q + n - p;
                ctx->pos = q + n;
                char txt[64];
                fx__tok_text(ctx, t, txt, sizeof txt);
                fx__error(ctx, AIQ_EPARSE, p, "number %s is out of range",
                          txt);
                return t->type = FX_T_ERROR;
            }
            q += n;
            if (q < len && fx_class[(unsigned char)s[q]] == C_ALPHA) {
                /* a unit, or garbage glued to the number */
                uint32_t e = q;
                while (e < len && (fx_class[(unsigned char)s[e]] == C_ALPHA ||
                                   fx_class[(unsigned char)s[e]] == C_DIGIT ||
                                   s[e] == '.'))
                    e++;
                double h = fx_unit_hours(s[q]);
                int next_ok = q + 1 >= len ||
                              (fx_class[(unsigned char)s[q + 1]] != C_ALPHA &&
                               s[q + 1] != '.');
                if (h == 0 || !next_ok) {
                    t->len = e - p;
                    ctx->pos = e;
                    char txt[64];
                    fx__tok_text(ctx, t, txt, sizeof txt);
                    fx__error(ctx, AIQ_EPARSE, p,
                              "invalid number %s; a duration unit is one of "
                              "s, m, h, d, w",
                              txt);
                    return t->type = FX_T_ERROR;
                }
                total += v * h;
                is_dur = 1;
                q++;
                /* compound durations: 1h30m */
                if (q < len && fx_class[(unsigned char)s[q]] == C_DIGIT)
                    continue;
            } else if (is_dur) {
                /* a bare number after a unit, e.g. "1h30" */
                t->len = q - p;
                ctx->pos = q;
                char txt[64];
                fx__tok_text(ctx, t, txt, sizeof txt);
                fx__error(ctx, AIQ_EPARSE, p,
                          "invalid duration %s: every number needs a unit "
                          "(s, m, h, d, w)", txt);
                return t->type = FX_T_ERROR;
            } else {
                total = v;
            }
            break;
        }
        if (!(total <= DBL_MAX)) {
            t->len = q - p;
            ctx->pos = q;
            fx__error(ctx, AIQ_EPARSE, p, "duration is out of range");
            return t->type = FX_T_ERROR;
        }
        t->type = is_dur ? FX_T_DUR : FX_T_NUM;
        t->num = total;
        t->len = q - p;
        ctx->pos = q;
        return t->type;
    }
    case C_ALPHA: {
        uint32_t q = p;
        while (q < len && (fx_class[(unsigned char)s[q]] == C_ALPHA ||
                           fx_class[(unsigned char)s[q]] == C_DIGIT ||
                           fx_class[(unsigned char)s[q]] == C_DOT))
            q++;
        t->len = q - p;
        ctx->pos = q;
        if (t->len == 4 && memcmp(s + p, "true", 4) == 0)
            return t->type = FX_T_TRUE;
        if (t->len == 5 && memcmp(s + p, "false", 5) == 0)
            return t->type = FX_T_FALSE;
        return t->type = FX_T_NAME;
    }
    case C_OP:
        for (size_t i = 0; i < sizeof fx_optab / sizeof fx_optab[0]; i++) {
            size_t n = strlen(fx_optab[i].text);
            if (p + n <= len && memcmp(s + p, fx_optab[i].text, n) == 0) {
                t->len = (uint32_t)n;
                ctx->pos = p + (uint32_t)n;
                return t->type = fx_optab[i].type;
            }
        }
        if (c == '=') {
            t->len = 1;
            ctx->pos = p + 1;
            fx__error(ctx, AIQ_EPARSE, p,
                      "unexpected '='; compare with '=='");
            return t->type = FX_T_ERROR;
        }
        if (c == '&' || c == '|') {
            t->len = 1;
            ctx->pos = p + 1;
            fx__error(ctx, AIQ_EPARSE, p, "unexpected '%c'; did you mean '%c%c'?",
                      c, c, c);
            return t->type = FX_T_ERROR;
        }
        goto bad_char;
    default:
        goto bad_char;
    }
bad_char:
    t->len = 1;
    ctx->pos = p + 1;
    {
        char txt[64];
        fx__tok_text(ctx, t, txt, sizeof txt);
        fx__error(ctx, AIQ_EPARSE, p, "unexpected character %s", txt);
    }
    return t->type = FX_T_ERROR;
}
