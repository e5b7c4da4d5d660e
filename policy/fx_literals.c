/* fx_literals.c -- the numeric literals of a formula's source (where each
 * is, its value, whether a minus or a '^' stands before it) and the
 * source with new values written in their place. aiq-sim tune searches
 * a policy's weights and thresholds this way: the text keeps its shape,
 * comments and signs, and only the numbers change. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/model.h"
#include "policy/fx_int.h"

/* True when a token of type t ends an operand, so a '-' after it is the
 * binary minus. */
static int fx_ends_operand(fx_tok_type t) {
    return t == FX_T_NUM || t == FX_T_DUR || t == FX_T_NAME || t == FX_T_TRUE ||
           t == FX_T_FALSE || t == FX_T_RPAREN;
}

/* Lists literals; see fx.h. */
int fx_literals(const char *src, fx_literal *out, int max, aiq_err *err) {
    fx_parse_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    if (!src) {
        aiq_err_set(err, AIQ_EINVAL, "formula is missing");
        return -1;
    }
    size_t len = strlen(src);
    if (len > AIQ_MAX_FORMULA) {
        aiq_err_set(err, AIQ_ETOOBIG, "formula is %zu bytes long; the limit is %d bytes", len,
                    AIQ_MAX_FORMULA);
        return -1;
    }
    ctx.src = src;
    ctx.len = (uint32_t)len;
    ctx.err = err;
    ctx.noun = "factor";
    /* prev2, prev: the two tokens before the current one. */
    fx_tok_type prev = FX_T_END, prev2 = FX_T_END;
    int n = 0;
    for (;;) {
        fx_tok_type t = fx__next(&ctx);
        if (t == FX_T_ERROR)
            return -1;
        if (t == FX_T_END)
            break;
        if (t == FX_T_NUM || t == FX_T_DUR) {
            if (n < max) {
                fx_literal *l = &out[n];
                int neg = prev == FX_T_MINUS && !fx_ends_operand(prev2);
                l->start = ctx.tok.start;
                l->len = ctx.tok.len;
                l->value = ctx.tok.num;
                l->duration = t == FX_T_DUR;
                l->negated = neg;
                l->exponent = prev == FX_T_CARET || (neg && prev2 == FX_T_CARET);
            }
            n++;
        }
        prev2 = prev;
        prev = t;
    }
    return n;
}

/* The text of value v for a literal: plain %g, or hours with 'h' for a
 * duration. Returns the length, or -1 for a value that cannot be written
 * as a literal (negative, not finite, or exponent form for a duration). */
static int fx_literal_text(double v, int duration, char *buf, size_t cap) {
    if (!(v >= 0) || !isfinite(v))
        return -1;
    int n = snprintf(buf, cap, "%.6g%s", v, duration ? "h" : "");
    if (n < 0 || (size_t)n >= cap)
        return -1;
    /* "1e+06" reads back as a number; "1e+06h" is not a duration. */
    if (duration && strchr(buf, 'e')) {
        n = snprintf(buf, cap, "%.0fh", v);
        if (n < 0 || (size_t)n >= cap)
            return -1;
    }
    return n;
}

/* Appends s[0,n) at *o of buf (cap), counting what does not fit. */
static void fx_put(char *buf, size_t cap, size_t *o, const char *s, size_t n) {
    if (*o < cap) {
        size_t room = cap - *o - 1 < n ? cap - *o - 1 : n;
        if (cap > 0 && room > 0)
            memcpy(buf + *o, s, room);
    }
    *o += n;
}

/* Substitutes literals; see fx.h. */
int fx_subst_literals(const char *src, const fx_literal *lits, const double *values, int n,
                      char *buf, size_t cap) {
    size_t o = 0, at = 0, len = strlen(src);
    char num[64];
    for (int i = 0; i < n; i++) {
        if (lits[i].start < at || (size_t)lits[i].start + lits[i].len > len)
            return -1;
        int k = fx_literal_text(values[i], lits[i].duration, num, sizeof num);
        if (k < 0)
            return -1;
        fx_put(buf, cap, &o, src + at, lits[i].start - at);
        fx_put(buf, cap, &o, num, (size_t)k);
        at = lits[i].start + lits[i].len;
    }
    fx_put(buf, cap, &o, src + at, len - at);
    if (cap > 0)
        buf[o < cap ? o : cap - 1] = '\0';
    return (int)o;
}
