/* log.c -- the operator's key=value line logger (see log.h). */
#include "operator/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "common/aiq_time.h"

#define OPLOG_TAIL_MAX 2048

static const char *const oplog_names[] = {"debug", "info", "warn", "error",
                                          "off"};

/* Parses a level name; see log.h. */
int oplog_parse_level(const char *s, oplog_level *out) {
    if (!s)
        return -1;
    for (int i = 0; i <= OPLOG_OFF; i++) {
        if (strcasecmp(s, oplog_names[i]) == 0) {
            *out = (oplog_level)i;
            return 0;
        }
    }
    if (strcasecmp(s, "warning") == 0) {
        *out = OPLOG_WARN;
        return 0;
    }
    return -1;
}

/* Returns the level's name; see log.h. */
const char *oplog_level_name(oplog_level l) {
    if ((int)l < 0 || l > OPLOG_OFF)
        return "unknown";
    return oplog_names[l];
}

/* Quotes s as a log value; see log.h. */
const char *oplog_quote(char *buf, size_t cap, const char *s) {
    size_t n = 0;
    if (cap < 3) {
        if (cap)
            buf[0] = '\0';
        return buf;
    }
    buf[n++] = '"';
    for (const char *p = s ? s : ""; *p; p++) {
        unsigned char c = (unsigned char)*p;
        /* Keep room for up to two bytes plus the closing quote and NUL. */
        if (n + 4 > cap)
            break;
        if (c == '"' || c == '\\') {
            buf[n++] = '\\';
            buf[n++] = (char)c;
        } else if (c == '\n') {
            buf[n++] = '\\';
            buf[n++] = 'n';
        } else if (c < 0x20 || c == 0x7f) {
            buf[n++] = ' ';
        } else {
            buf[n++] = (char)c;
        }
    }
    buf[n++] = '"';
    buf[n] = '\0';
    return buf;
}

/* Tells whether p starts " key=" (a logfmt key: lowercase, digits, _). */
static bool oplog_next_key(const char *p) {
    if (*p != ' ')
        return false;
    const char *k = ++p;
    while ((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_')
        p++;
    return p > k && *p == '=';
}

/* See log.h. */
void oplog_escape_values(const char *in, char *out, size_t cap) {
    size_t n = 0;
    if (!cap)
        return;
    for (const char *p = in; *p && n + 3 < cap; p++) {
        out[n++] = *p;
        if (!(*p == '"' && p > in && p[-1] == '='))
            continue;
        /* a quoted value: it ends at the quote followed by the end or by
         * " key="; quotes and backslashes before that are escaped */
        for (p++; *p && n + 3 < cap; p++) {
            if (*p == '"' && (!p[1] || oplog_next_key(p + 1))) {
                out[n++] = '"';
                break;
            }
            if (*p == '\\' && p[1]) { /* escaped already (oplog_quote): kept */
                out[n++] = *p++;
                out[n++] = *p;
                continue;
            }
            if (*p == '"')
                out[n++] = '\\';
            out[n++] = *p;
        }
        if (!*p)
            break;
    }
    out[n] = '\0';
}

/* Formats and writes one log line; see log.h. */
void oplog_write(const struct oplog *lg, oplog_level lvl, const char *event,
                 const char *obj, const char *rv, const char *fmt, ...) {
    char tail[OPLOG_TAIL_MAX];
    char ts[40];
    struct timespec now;
    va_list ap;
    FILE *out = (lg && lg->out) ? lg->out : stderr;

    va_start(ap, fmt);
    int n = vsnprintf(tail, sizeof tail, fmt, ap);
    va_end(ap);
    if (n < 0)
        tail[0] = '\0';
    else if ((size_t)n >= sizeof tail)
        memcpy(tail + sizeof tail - 4, "...", 4);
    for (char *p = tail; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = ' ';
    /* msg="..." values hold other people's text (API errors quote
     * names): escape their inner quotes so the line stays logfmt. */
    char esc[OPLOG_TAIL_MAX + OPLOG_TAIL_MAX / 4];
    oplog_escape_values(tail, esc, sizeof esc);

    clock_gettime(CLOCK_REALTIME, &now);
    aiq_rfc3339(ts, sizeof ts, (double)now.tv_sec + now.tv_nsec / 1e9, 3);

    /* One fprintf call per line, so concurrent writers do not interleave
     * inside a line (stdio locks the stream per call). */
    fprintf(out, "ts=%s level=%s event=%s%s%s%s%s%s%s\n", ts,
            oplog_level_name(lvl), event ? event : "-",
            obj ? " obj=" : "", obj ? obj : "",
            rv ? " rv=" : "", rv ? rv : "",
            esc[0] ? " " : "", esc);
    fflush(out);
}
