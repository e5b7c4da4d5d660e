/* cli_table.c -- kubectl-style tables, short durations and the YAML
 * printer of `kubectl aiq` (see cli_table.h). */
#include "tools/cli_table.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct cli_table {
    int ncols;
    int nrows, caprows;     /* data rows; row 0 of cells is the header */
    char **cells;           /* (nrows + 1) * ncols owned strings */
};

/* A copy of s cut at CLI_TABLE_MAX_CELL bytes, not inside a UTF-8
 * sequence. NULL on ENOMEM. */
static char *clt_dup(const char *s) {
    size_t n = s ? strlen(s) : 0;
    if (n > CLI_TABLE_MAX_CELL) {
        n = CLI_TABLE_MAX_CELL;
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
            n--;
    }
    char *d = malloc(n + 1);
    if (!d)
        return NULL;
    if (n)
        memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

/* Stores a row of copies at row index r (the slots must be free). */
static aiq_rc clt_put(cli_table *t, int r, const char *const *cells) {
    for (int c = 0; c < t->ncols; c++) {
        char *d = clt_dup(cells ? cells[c] : NULL);
        if (!d) {
            while (c-- > 0) {
                free(t->cells[(size_t)r * (size_t)t->ncols + (size_t)c]);
                t->cells[(size_t)r * (size_t)t->ncols + (size_t)c] = NULL;
            }
            return AIQ_ENOMEM;
        }
        t->cells[(size_t)r * (size_t)t->ncols + (size_t)c] = d;
    }
    return AIQ_OK;
}

/* Creates a table; see cli_table.h. */
cli_table *cli_table_create(int ncols, const char *const *header) {
    if (ncols < 1 || ncols > CLI_TABLE_MAX_COLS)
        return NULL;
    cli_table *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->ncols = ncols;
    t->caprows = 16;
    t->cells = calloc((size_t)(t->caprows + 1) * (size_t)ncols, sizeof *t->cells);
    if (!t->cells || clt_put(t, 0, header) != AIQ_OK) {
        free(t->cells);
        free(t);
        return NULL;
    }
    return t;
}

/* Frees the table; see cli_table.h. */
void cli_table_free(cli_table *t) {
    if (!t)
        return;
    size_t n = (size_t)(t->nrows + 1) * (size_t)t->ncols;
    for (size_t i = 0; i < n; i++)
        free(t->cells[i]);
    free(t->cells);
    free(t);
}

/* Appends a row; see cli_table.h. */
aiq_rc cli_table_add(cli_table *t, const char *const *cells) {
    if (t->nrows >= CLI_TABLE_MAX_ROWS)
        return AIQ_ETOOBIG;
    if (t->nrows == t->caprows) {
        int nc = t->caprows * 2;
        char **np = realloc(t->cells, (size_t)(nc + 1) * (size_t)t->ncols * sizeof *np);
        if (!np)
            return AIQ_ENOMEM;
        t->cells = np;
        t->caprows = nc;
    }
    aiq_rc rc = clt_put(t, t->nrows + 1, cells);
    if (rc == AIQ_OK)
        t->nrows++;
    return rc;
}

/* Row count; see cli_table.h. */
int cli_table_rows(const cli_table *t) {
    return t ? t->nrows : 0;
}

/* Display width; see cli_table.h. */
size_t cli_display_width(const char *s) {
    size_t w = 0;
    while (s && *s) {
        if (s[0] == '\033' && s[1] == '[') {
            s += 2;
            while (*s && *s != 'm')
                s++;
            if (*s)
                s++;
            continue;
        }
        if (((unsigned char)*s & 0xC0) != 0x80)
            w++;
        s++;
    }
    return w;
}

/* Prints the table; see cli_table.h. */
void cli_table_print(const cli_table *t, FILE *out) {
    size_t width[CLI_TABLE_MAX_COLS] = {0};
    for (int r = 0; r <= t->nrows; r++)
        for (int c = 0; c < t->ncols; c++) {
            size_t w = cli_display_width(t->cells[(size_t)r * (size_t)t->ncols + (size_t)c]);
            if (w > width[c])
                width[c] = w;
        }
    for (int r = 0; r <= t->nrows; r++) {
        for (int c = 0; c < t->ncols; c++) {
            const char *cell = t->cells[(size_t)r * (size_t)t->ncols + (size_t)c];
            fputs(cell, out);
            if (c + 1 < t->ncols) {
                size_t pad = width[c] - cli_display_width(cell) + 2;
                while (pad--)
                    fputc(' ', out);
            }
        }
        fputc('\n', out);
    }
}

/* kubectl's age format; see cli_table.h. The thresholds are those of
 * Go's k8s.io/apimachinery duration.HumanDuration, so our columns read
 * like kubectl's AGE. */
const char *cli_human_duration(char *buf, size_t cap, double seconds) {
    if (!buf || cap == 0)
        return buf;
    long long s = (!isfinite(seconds) || seconds < 0) ? 0 : (long long)seconds;
    long long m = s / 60, h = s / 3600, d = h / 24;
    if (s < 120)
        snprintf(buf, cap, "%llds", s);
    else if (m < 10)
        snprintf(buf, cap, s % 60 ? "%lldm%llds" : "%lldm", m, s % 60);
    else if (m < 180)
        snprintf(buf, cap, "%lldm", m);
    else if (h < 8)
        snprintf(buf, cap, m % 60 ? "%lldh%lldm" : "%lldh", h, m % 60);
    else if (h < 48)
        snprintf(buf, cap, "%lldh", h);
    else if (h < 192)
        snprintf(buf, cap, h % 24 ? "%lldd%lldh" : "%lldd", d, h % 24);
    else if (d < 730)
        snprintf(buf, cap, "%lldd", d);
    else if (d < 2920)
        snprintf(buf, cap, d % 365 ? "%lldy%lldd" : "%lldy", d / 365, d % 365);
    else
        snprintf(buf, cap, "%lldy", d / 365);
    return buf;
}

/* True when s must be quoted to stay a YAML string. */
static int clt_needs_quote(const char *s) {
    static const char *const words[] = {"true", "false", "null", "yes", "no",
                                        "on", "off", "~", "True", "False",
                                        "Null", "NULL", "Yes", "No", NULL};
    if (!*s)
        return 1;
    for (int i = 0; words[i]; i++)
        if (strcmp(s, words[i]) == 0)
            return 1;
    char *end = NULL;
    (void)strtod(s, &end);
    if (end && *end == '\0')
        return 1;
    if (strchr("-?:,[]{}#&*!|>'\"%@` ", s[0]) || s[strlen(s) - 1] == ' ')
        return 1;
    for (const char *p = s; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == '"' || *p == '\\' ||
            (*p == ':' && (p[1] == ' ' || !p[1])) || (*p == ' ' && p[1] == '#'))
            return 1;
    return 0;
}

static void clt_yaml_string(const char *s, FILE *out) {
    if (!clt_needs_quote(s)) {
        fputs(s, out);
        return;
    }
    fputc('"', out);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(out, "\\%c", ch);
        else if (ch == '\n')
            fputs("\\n", out);
        else if (ch == '\t')
            fputs("\\t", out);
        else if (ch < 0x20)
            fprintf(out, "\\x%02x", ch);
        else
            fputc(ch, out);
    }
    fputc('"', out);
}

static void clt_indent(FILE *out, int n) {
    while (n-- > 0)
        fputc(' ', out);
}

/* A scalar on the current line (no newline). */
static void clt_scalar(json_object *o, FILE *out) {
    switch (json_object_get_type(o)) {
    case json_type_null:
        fputs("null", out);
        break;
    case json_type_string:
        clt_yaml_string(json_object_get_string(o), out);
        break;
    default:
        fputs(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN), out);
        break;
    }
}

static int clt_is_container(json_object *o) {
    json_type ty = json_object_get_type(o);
    if (ty == json_type_object)
        return json_object_object_length(o) > 0;
    if (ty == json_type_array)
        return json_object_array_length(o) > 0;
    return 0;
}

/* Prints YAML; see cli_table.h. Maps and arrays nest by two spaces; an
 * array item that is a map starts on the "- " line. */
void cli_print_yaml(json_object *obj, FILE *out, int indent) {
    json_type ty = json_object_get_type(obj);
    if (ty == json_type_object && json_object_object_length(obj) > 0) {
        int first = 1;
        json_object_object_foreach(obj, k, v) {
            if (!first || indent >= 0)
                clt_indent(out, first && indent < 0 ? 0 : (indent < 0 ? -indent : indent));
            first = 0;
            clt_yaml_string(k, out);
            fputc(':', out);
            if (clt_is_container(v)) {
                fputc('\n', out);
                int base = indent < 0 ? -indent : indent;
                cli_print_yaml(v, out, json_object_get_type(v) == json_type_array ? base : base + 2);
            } else {
                fputc(' ', out);
                if (json_object_get_type(v) == json_type_object)
                    fputs("{}", out);
                else if (json_object_get_type(v) == json_type_array)
                    fputs("[]", out);
                else
                    clt_scalar(v, out);
                fputc('\n', out);
            }
        }
        return;
    }
    if (ty == json_type_array && json_object_array_length(obj) > 0) {
        int base = indent < 0 ? -indent : indent;
        size_t n = json_object_array_length(obj);
        for (size_t i = 0; i < n; i++) {
            json_object *v = json_object_array_get_idx(obj, i);
            clt_indent(out, base);
            fputs("- ", out);
            if (clt_is_container(v)) {
                /* negative indent: the first key goes on the "- " line */
                if (json_object_get_type(v) == json_type_object) {
                    cli_print_yaml(v, out, -(base + 2));
                } else {
                    fputc('\n', out);
                    cli_print_yaml(v, out, base + 2);
                }
            } else {
                clt_scalar(v, out);
                fputc('\n', out);
            }
        }
        return;
    }
    if (indent > 0)
        clt_indent(out, indent);
    if (ty == json_type_object)
        fputs("{}", out);
    else if (ty == json_type_array)
        fputs("[]", out);
    else
        clt_scalar(obj, out);
    fputc('\n', out);
}
