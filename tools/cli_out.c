/* cli_out.c -- colours, error lines, -o json|yaml documents and short
 * texts for `kubectl aiq`'s commands (see cli_out.h). */
#include "tools/cli_out.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

#include "common/json.h"
#include "operator/status.h"
#include "policy/fx.h"
#include "tools/cli_table.h"

struct cli_colours cli_c = {"", "", "", "", "", "", ""};

void cli_colours_on(void) {
    cli_c.bold = "\033[1m";
    cli_c.dim = "\033[2m";
    cli_c.red = "\033[31m";
    cli_c.green = "\033[32m";
    cli_c.yellow = "\033[33m";
    cli_c.cyan = "\033[36m";
    cli_c.off = "\033[0m";
}

int cli_fail(const char *fmt, ...) {
    va_list ap;
    fputs("error: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return 1;
}

void cli_print_err(const char *what, const aiq_err *e) {
    fprintf(stderr, "error: %s: %s\n", what, e->message[0] ? e->message : aiq_strerror(e->code));
}

/* Set when any member or item of an output document could not be added
 * (out of memory): cli_emit then prints an error instead of the
 * document, and cli_out_status makes the exit status 1. */
static bool cli_out_failed;

void cli_add(json_object *o, const char *k, json_object *v) {
    (void)aiq_jset(o, k, v, &cli_out_failed); /* a failure is kept in the flag */
}

void cli_add_null(json_object *o, const char *k) {
    (void)aiq_jset_null(o, k, &cli_out_failed); /* as cli_add */
}

void cli_push(json_object *arr, json_object *v) {
    (void)aiq_jpush(arr, v, &cli_out_failed); /* as cli_add */
}

int cli_out_status(void) {
    return cli_out_failed ? 1 : 0;
}

void cli_emit(json_object *doc, enum cli_out_fmt f) {
    if (!doc || cli_out_failed) {
        cli_out_failed = true;
        fputs("error: out of memory building the output document\n", stderr);
        return;
    }
    if (f == CLI_OUT_JSON)
        printf("%s\n", json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PRETTY |
                                                                JSON_C_TO_STRING_SPACED |
                                                                JSON_C_TO_STRING_NOSLASHESCAPE));
    else
        cli_print_yaml(doc, stdout, 0);
}

void cli_add_str(json_object *o, const char *k, const char *v) {
    if (v)
        cli_add(o, k, json_object_new_string(v));
    else
        cli_add_null(o, k);
}

void cli_add_factor_names(json_object *o, const char *k, uint64_t mask) {
    json_object *a = json_object_new_array();
    for (int i = 0; a && i < FX_NFACTORS; i++)
        if (mask & (1ull << i))
            cli_push(a, json_object_new_string(fx_factor_name(i)));
    cli_add(o, k, a);
}

/* A number printed with 6 significant digits (json-c would print the
 * binary expansion, 0.0011999999999999999). */
json_object *cli_num6(double v) {
    char b[40];
    snprintf(b, sizeof b, "%.6g", v);
    return json_object_new_double_s(v, b);
}

void cli_add_num(json_object *o, const char *k, double v) {
    cli_add(o, k, cli_num6(v));
}

/* src on one line: runs of whitespace become one space (for summaries of
 * multi-line formulas). */
const char *cli_one_line(char *buf, size_t cap, const char *src) {
    size_t n = 0;
    bool sp = false;
    for (; src && *src && n + 1 < cap; src++) {
        if (*src == ' ' || *src == '\n' || *src == '\t' || *src == '\r') {
            sp = n > 0;
            continue;
        }
        if (sp && n + 2 < cap)
            buf[n++] = ' ';
        sp = false;
        buf[n++] = *src;
    }
    buf[n] = '\0';
    return buf;
}

void cli_add_int(json_object *o, const char *k, long long v) {
    cli_add(o, k, json_object_new_int64(v));
}

/* "in 5m", "now" or "<none>" for an estimated start time. */
const char *cli_eta_text(char *buf, size_t cap, double eta, double now) {
    char d[32];
    if (eta <= 0)
        snprintf(buf, cap, "<none>");
    else if (eta <= now)
        snprintf(buf, cap, "now");
    else
        snprintf(buf, cap, "in %s", cli_human_duration(d, sizeof d, eta - now));
    return buf;
}

const char *cli_num_text(char *buf, size_t cap, double v) {
    snprintf(buf, cap, "%.6g", fabs(v) < 5e-7 ? 0 : v);
    return buf;
}

void cli_time_text(char *buf, size_t cap, double t) {
    if (t <= 0)
        snprintf(buf, cap, "<none>");
    else
        opst_time(buf, cap, t);
}

