/* cli_table.h -- text output helpers of `kubectl aiq` (tools/kubectl-aiq.c):
 * a table laid out like kubectl's tabwriter (each column as wide as its
 * widest cell, two spaces between columns, no trailing blanks), ages and
 * durations in kubectl's short style ("45s", "3m20s", "2h5m", "3d"), and
 * a JSON-to-YAML printer for `-o yaml`.
 *
 * Cells may carry ANSI colour escapes (ESC [ ... m): they take no width.
 * Pure formatting: the only I/O is writing to the FILE the caller gives. */
#ifndef AIQ_TOOLS_CLI_TABLE_H
#define AIQ_TOOLS_CLI_TABLE_H

#include <stddef.h>
#include <stdio.h>

#include <json-c/json.h>

#include "common/aiq_err.h"

#define CLI_TABLE_MAX_COLS 24
#define CLI_TABLE_MAX_CELL 512   /* bytes kept of one cell (longer is cut) */
#define CLI_TABLE_MAX_ROWS 100000

typedef struct cli_table cli_table;

/* A new table with ncols columns (1..CLI_TABLE_MAX_COLS) named by the
 * header strings (copied). NULL on a bad ncols or ENOMEM. */
cli_table *cli_table_create(int ncols, const char *const *header);

/* Frees t. NULL is a no-op. */
void cli_table_free(cli_table *t);

/* Appends a row of ncols cells (copied; NULL prints as ""). A cell longer
 * than CLI_TABLE_MAX_CELL bytes is cut there (on a UTF-8 boundary).
 * AIQ_ENOMEM, or AIQ_ETOOBIG past CLI_TABLE_MAX_ROWS rows; the table is
 * unchanged after an error. */
aiq_rc cli_table_add(cli_table *t, const char *const *cells);

/* Number of data rows (without the header). */
int cli_table_rows(const cli_table *t);

/* Writes the header and rows to out: columns padded to the widest cell
 * (display width: UTF-8 code points, escapes not counted) plus two
 * spaces; the last column is not padded. */
void cli_table_print(const cli_table *t, FILE *out);

/* Display width of s: UTF-8 code points, ANSI "ESC [ ... m" sequences not
 * counted. */
size_t cli_display_width(const char *s);

/* Writes seconds as kubectl prints ages (Go's duration.HumanDuration):
 * "0s".."119s", "2m5s".."9m59s", "10m".."179m"... into buf (cap bytes,
 * always terminated). Negative values print as "0s". Returns buf. */
const char *cli_human_duration(char *buf, size_t cap, double seconds);

/* Writes obj (borrowed) as YAML to out, starting at indent spaces: maps
 * as "key: value", arrays as "- item", strings double-quoted when they
 * would otherwise read as another type or contain special characters.
 * null prints as "null". */
void cli_print_yaml(json_object *obj, FILE *out, int indent);

#endif
