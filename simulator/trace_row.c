/* trace_row.c -- CSV line splitting and field parsing shared by the trace
 * readers: a line cap, RFC 4180 quotes, 1-based columns for messages, and
 * numbers checked for range with "FILE:LINE:COL: column 'x': ..." errors. */
#include "simulator/sim_trace.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Reads and splits one line; see sim_trace.h. */
int sim__row_read(FILE *f, const char *path, int *lineno, struct sim__row *row,
                  aiq_err *err) {
    size_t len = 0;
    int c;
    row->n = 0;
    while ((c = fgetc(f)) != EOF && c != '\n') {
        if (len >= SIM_MAX_LINE) {
            (*lineno)++;
            aiq_err_set(err, AIQ_ETOOBIG, "%s:%d:%d: line longer than %d bytes", path,
                        *lineno, SIM_MAX_LINE + 1, SIM_MAX_LINE);
            if (err) {
                err->line = *lineno;
                err->col = SIM_MAX_LINE + 1;
            }
            return -1;
        }
        row->buf[len++] = (char)c;
    }
    if (c == EOF && len == 0)
        return 0;
    (*lineno)++;
    if (len > 0 && row->buf[len - 1] == '\r')
        len--;
    row->buf[len] = '\0';
    /* Split in place; quoted fields lose their quotes ("" -> "). */
    char *r = row->buf, *w = row->buf;
    while (row->n < SIM_MAX_FIELDS) {
        row->col[row->n] = (int)(r - row->buf) + 1;
        row->field[row->n++] = w;
        if (*r == '"') {
            r++;
            while (*r) {
                if (*r == '"' && r[1] == '"') {
                    *w++ = '"';
                    r += 2;
                } else if (*r == '"') {
                    r++;
                    break;
                } else {
                    *w++ = *r++;
                }
            }
        }
        while (*r && *r != ',')
            *w++ = *r++;
        if (*r != ',') {
            *w = '\0';
            break;
        }
        *w++ = '\0';
        r++;
    }
    return 1;
}

/* Reads the header line; see sim_trace.h. */
aiq_rc sim__row_header(FILE *f, const char *path, int *lineno,
                       struct sim__row *hdr, int comments, const char *expect,
                       aiq_err *err) {
    int got;
    do {
        got = sim__row_read(f, path, lineno, hdr, err);
    } while (comments && got == 1 &&
             (hdr->field[0][0] == '#' || (hdr->n == 1 && hdr->field[0][0] == '\0')));
    if (got < 0)
        return AIQ_ETOOBIG;
    if (got == 0) {
        aiq_rc rc = aiq_err_set(err, AIQ_EPARSE, "%s:1:1: empty file: expected %s", path, expect);
        if (err)
            err->line = 1, err->col = 1;
        return rc;
    }
    return AIQ_OK;
}

/* Reads the next data row; see sim_trace.h. */
int sim__row_next(FILE *f, const char *path, int *lineno,
                  const struct sim__row *hdr, struct sim__row *row,
                  int comments, aiq_rc *bad, aiq_err *err) {
    int got;
    while ((got = sim__row_read(f, path, lineno, row, err)) == 1) {
        if ((comments && row->field[0][0] == '#') ||
            (row->n == 1 && row->field[0][0] == '\0'))
            continue;
        if (row->n != hdr->n) {
            *bad = aiq_err_set(err, AIQ_EPARSE, "%s:%d:1: expected %d fields as in the "
                               "header, got %d", path, *lineno, hdr->n, row->n);
            if (err)
                err->line = *lineno, err->col = 1;
            return -1;
        }
        return 1;
    }
    if (got < 0)
        *bad = AIQ_ETOOBIG;
    return got;
}

/* Finds a header column; see sim_trace.h. Leading and trailing blanks of
 * header names are ignored. */
int sim__row_find(const struct sim__row *hdr, const char *name) {
    for (int i = 0; i < hdr->n; i++) {
        const char *h = hdr->field[i];
        while (*h == ' ')
            h++;
        size_t n = strlen(name);
        if (strncmp(h, name, n) == 0) {
            const char *t = h + n;
            while (*t == ' ')
                t++;
            if (*t == '\0')
                return i;
        }
    }
    return -1;
}

/* Field text or def; see sim_trace.h. */
const char *sim__get_str(const struct sim__row *r, int idx, const char *def) {
    if (idx < 0 || idx >= r->n || r->field[idx][0] == '\0')
        return def;
    return r->field[idx];
}

static aiq_rc bad__(const struct sim__row *r, int idx, const char *name, const char *want,
                    const char *path, int line, aiq_err *err) {
    aiq_err_set(err, AIQ_EPARSE, "%s:%d:%d: column '%s': expected %s, got '%.64s'", path,
                line, r->col[idx], name, want, r->field[idx]);
    if (err) {
        err->line = line;
        err->col = r->col[idx];
        snprintf(err->field, sizeof err->field, "%s", name);
    }
    return AIQ_EPARSE;
}

/* Parses a number field; see sim_trace.h. */
aiq_rc sim__get_double(const struct sim__row *r, int idx, const char *name,
                       double lo, double hi, double def, double *out,
                       const char *path, int line, aiq_err *err) {
    const char *s = sim__get_str(r, idx, NULL);
    if (!s) {
        *out = def;
        return AIQ_OK;
    }
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    while (end && *end == ' ')
        end++;
    if (end == s || *end != '\0' || errno == ERANGE || !isfinite(v) || v < lo || v > hi) {
        char want[96];
        snprintf(want, sizeof want, "a number %g..%g", lo, hi);
        return bad__(r, idx, name, want, path, line, err);
    }
    *out = v;
    return AIQ_OK;
}

/* Parses an integer field; see sim_trace.h. A value written as "4.0" is
 * accepted when it is integral (pandas writes integers that way). */
aiq_rc sim__get_i64(const struct sim__row *r, int idx, const char *name,
                    int64_t lo, int64_t hi, int64_t def, int64_t *out,
                    const char *path, int line, aiq_err *err) {
    const char *s = sim__get_str(r, idx, NULL);
    if (!s) {
        *out = def;
        return AIQ_OK;
    }
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end && *end == '.') {
        char *e2 = NULL;
        double d = strtod(s, &e2);
        if (e2 && *e2 == '\0' && d == floor(d) && fabs(d) < 9e15) {
            v = (long long)d;
            end = e2;
        }
    }
    while (end && *end == ' ')
        end++;
    if (end == s || *end != '\0' || errno == ERANGE || v < lo || v > hi) {
        char want[96];
        snprintf(want, sizeof want, "an integer %lld..%lld", (long long)lo, (long long)hi);
        return bad__(r, idx, name, want, path, line, err);
    }
    *out = v;
    return AIQ_OK;
}
