/* fx_explain.c -- showing programs to people: fx_explain (a score term by
 * term, like Slurm's sprio), fx_dump (the bytecode listing used by golden
 * tests), fx_format_error (message, source line and caret), and the
 * opcode name/flag tables generated from fx_ops.def. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/fx_int.h"

const char *const fx__op_names[FX__NOPS] = {
#define FX_OP(name, flags, doc) #name,
#include "policy/fx_ops.def"
#undef FX_OP
};

const unsigned fx__op_flags[FX__NOPS] = {
#define FX_OP(name, flags, doc) flags,
#include "policy/fx_ops.def"
#undef FX_OP
};

/* Explains p's score for one job; see fx.h. factors and terms are
 * borrowed; returns the number of terms the formula has. */
int fx_explain(const fx_prog *p, const double *factors, fx_term *terms,
               int max) {
    for (int i = 0; i < p->nterms && i < max; i++) {
        memcpy(terms[i].label, p->terms[i].label, sizeof terms[i].label);
        terms[i].value = fx__run(p->code, p->terms[i].pc, factors);
    }
    return p->nterms;
}

/* snprintf into buf at *o, keeping the running total length in *o even
 * when the buffer is full. */
static void fx_out(char *buf, size_t cap, size_t *o, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void fx_out(char *buf, size_t cap, size_t *o, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(*o < cap ? buf + *o : NULL, *o < cap ? cap - *o : 0, fmt, ap);
    va_end(ap);
    if (n > 0) *o += (size_t)n;
}

/* " <k>" with the shortest text that reads back as the same double. */
static void fx_num(char *buf, size_t cap, size_t *o, double k) {
    char num[40];
    snprintf(num, sizeof num, "%.15g", k);
    if (strtod(num, NULL) != k) snprintf(num, sizeof num, "%.17g", k);
    fx_out(buf, cap, o, " %s", num);
}

static void fx_dump_range(const fx_prog *p, uint32_t from, uint32_t to,
                          char *buf, size_t cap, size_t *o) {
    for (uint32_t pc = from; pc < to; pc++) {
        const fx_ins *in = &p->code[pc];
        unsigned fl = fx__op_flags[in->op];
        fx_out(buf, cap, o, "%04u %-6s", pc, fx__op_names[in->op]);
        if ((fl & FX_OPF_F) || (in->m & FX_M_INF))
            fx_out(buf, cap, o, " %s", p->place ? fx_pfactor_name(in->a) : fx_factor_name(in->a));
        if (fl & FX_OPF_K) fx_num(buf, cap, o, in->k);
        if (fl & FX_OPF_K2) fx_num(buf, cap, o, in->k2);
        if (fl & FX_OPF_K3) fx_num(buf, cap, o, in->k3);
        if (fl & FX_OPF_J) fx_out(buf, cap, o, " -> %04u", in->b);
        if (fl & FX_OPF_N) fx_out(buf, cap, o, " x%u", in->b);
        if (in->m & FX_M_ACC) fx_out(buf, cap, o, " +acc");
        if ((fl & FX_OPF_T) && in->b) fx_out(buf, cap, o, " +lin x%u", in->b);
        fx_out(buf, cap, o, "\n");
    }
}

/* Writes p's bytecode listing into buf (cap bytes, NUL-terminated when
 * cap > 0): "mode ... stack N", the main program, then each explain term
 * as "term i: label" and its code. Returns the full length. */
int fx_dump(const fx_prog *p, char *buf, size_t cap) {
    size_t o = 0;
    if (cap) buf[0] = '\0';
    uint32_t main_end = p->nterms > 1 ? p->terms[0].pc : (uint32_t)p->ncode;
    fx_out(buf, cap, &o, "%s, %d instructions, stack %d\n",
           p->mode == FX_PREDICATE ? "predicate" : "expression", p->ncode,
           p->max_stack);
    fx_dump_range(p, 0, main_end, buf, cap, &o);
    if (p->nterms > 1) {
        for (int t = 0; t < p->nterms; t++) {
            uint32_t end = t + 1 < p->nterms ? p->terms[t + 1].pc : (uint32_t)p->ncode;
            fx_out(buf, cap, &o, "term %d: %s\n", t, p->terms[t].label);
            fx_dump_range(p, p->terms[t].pc, end, buf, cap, &o);
        }
    }
    return (int)o;
}

/* Formats err for people (see fx.h): message, source line, caret.
 * src and err are borrowed; returns the full length. */
int fx_format_error(const char *src, const aiq_err *err, char *buf,
                    size_t cap) {
    size_t o = 0;
    if (cap) buf[0] = '\0';
    fx_out(buf, cap, &o, "%s", err->message);
    if (!src || err->line <= 0 || err->col <= 0) return (int)o;
    size_t len = strlen(src), off = err->offset > len ? len : err->offset;
    size_t ls = off;
    while (ls > 0 && src[ls - 1] != '\n') ls--;
    size_t le = off;
    while (le < len && src[le] != '\n') le++;
    /* long lines: show at most 60 bytes before the error, 60 after */
    size_t from = off - ls > 60 ? off - 60 : ls;
    size_t to = le - off > 60 ? off + 60 : le;
    fx_out(buf, cap, &o, "\n");
    for (size_t i = from; i < to; i++) {
        unsigned char c = (unsigned char)src[i];
        fx_out(buf, cap, &o, "%c", c == '\t' ? '\t' : (c < 0x20 || c == 0x7f) ? '?' : (char)c);
    }
    fx_out(buf, cap, &o, "\n");
    for (size_t i = from; i < off; i++)
        fx_out(buf, cap, &o, "%c", src[i] == '\t' ? '\t' : ' ');
    fx_out(buf, cap, &o, "^");
    return (int)o;
}
