/* cli_out.h -- output helpers shared by `kubectl aiq`'s commands: the
 * terminal colours, error lines on stderr, the -o json|yaml document
 * builders, and the short texts of numbers, times and ETAs. Tables are
 * cli_table.h. */
#ifndef AIQ_TOOLS_CLI_OUT_H
#define AIQ_TOOLS_CLI_OUT_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "common/aiq_err.h"
#include "tools/cli_args.h"

/* ANSI escapes, all "" until cli_colours_on. */
struct cli_colours {
    const char *bold, *dim, *red, *green, *yellow, *cyan, *off;
};

/* The plugin's one global: set once in main before any output, read by
 * every command (the printing helpers take no options). */
extern struct cli_colours cli_c;

/* Turns the colours on (a terminal, no --no-color, no NO_COLOR). */
void cli_colours_on(void);

/* Prints "error: ..." (printf-style) on stderr; returns 1 for the exit
 * status. */
int cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Prints "error: WHAT: MESSAGE" (the code's text when e has no message)
 * on stderr. */
void cli_print_err(const char *what, const aiq_err *e);

/* Writes doc (borrowed) to stdout as pretty JSON or as YAML (f); when
 * doc is NULL or any add of the helpers below failed (out of memory),
 * prints an error on stderr instead, and nothing on stdout. */
void cli_emit(json_object *doc, enum cli_out_fmt f);

/* 1 when an output document could not be built (cli_emit said so), else
 * 0: main's exit status when the command itself succeeded. */
int cli_out_status(void);

/* Output documents are built with these, never with json-c's unchecked
 * adds: each takes v on every path (common/json.h, aiq_jset), and a
 * failure (v NULL from a constructor, or the add) is remembered for
 * cli_emit and cli_out_status. cli_add adds key k of o, cli_add_null a
 * JSON null on purpose, cli_push appends to an array. */
void cli_add(json_object *o, const char *k, json_object *v);
void cli_add_null(json_object *o, const char *k);
void cli_push(json_object *arr, json_object *v);

/* Adds key k to o: the string v (copied; NULL adds null), the number v
 * (6 significant digits), the integer v. */
void cli_add_str(json_object *o, const char *k, const char *v);
void cli_add_num(json_object *o, const char *k, double v);
void cli_add_int(json_object *o, const char *k, long long v);

/* Adds key k to o: an array of the names of the factors whose bits mask
 * sets (bit i: fx_factor_name(i)), in factor order. */
void cli_add_factor_names(json_object *o, const char *k, uint64_t mask);

/* A new JSON number printed with 6 significant digits (json-c would print
 * the binary expansion, 0.0011999999999999999). */
json_object *cli_num6(double v);

/* These write into buf (cap bytes, always terminated) and return buf:
 * src on one line, runs of whitespace as one space (multi-line formulas);
 * "in 5m", "now" or "<none>" for an estimated start eta seen at now;
 * v with 6 significant digits (tiny values as 0). */
const char *cli_one_line(char *buf, size_t cap, const char *src);
const char *cli_eta_text(char *buf, size_t cap, double eta, double now);
const char *cli_num_text(char *buf, size_t cap, double v);

/* RFC 3339 time of t (unix s) into buf, or "<none>" for t <= 0. */
void cli_time_text(char *buf, size_t cap, double t);

#endif
