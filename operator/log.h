/* log.h -- the operator's logger: one line per event, key=value pairs,
 * with the object's ns/name and resourceVersion (Redis serverLog style).
 *
 * Only the daemon logs; core modules return errors. The level is checked
 * by the OPLOG macro before any argument is formatted. The logger is a
 * small caller-owned struct (it lives in the daemon's server struct), so
 * there is no global here. */
#ifndef AIQ_OPERATOR_LOG_H
#define AIQ_OPERATOR_LOG_H

#include <stdbool.h>
#include <stdio.h>

typedef enum {
    OPLOG_DEBUG = 0,
    OPLOG_INFO,
    OPLOG_WARN,
    OPLOG_ERROR,
    OPLOG_OFF
} oplog_level;

struct oplog {
    oplog_level level;  /* lines below this level are dropped unformatted */
    FILE *out;          /* borrowed; NULL means stderr */
};

/* Sets *out from "debug", "info", "warn"/"warning", "error" or "off"
 * (case-insensitive). Returns 0, or -1 (and leaves *out alone) for
 * anything else. */
int oplog_parse_level(const char *s, oplog_level *out);

/* Returns "debug", "info", "warn", "error" or "off". */
const char *oplog_level_name(oplog_level l);

/* Writes one line to lg->out:
 *   ts=<RFC3339 ms> level=<lvl> event=<event> [obj=<obj>] [rv=<rv>] <kv...>
 * obj is "ns/name" (or "name" for cluster-scoped kinds) and rv the
 * object's resourceVersion; either may be NULL. fmt formats the rest of
 * the line, normally more key=value pairs; control characters in it are
 * replaced by spaces so an event never spans two lines. The formatted
 * tail is capped at 2 KiB (cut, with "..." appended). Use OPLOG rather
 * than calling this directly, so the level is checked first. */
void oplog_write(const struct oplog *lg, oplog_level lvl, const char *event,
                 const char *obj, const char *rv, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

/* Writes s into buf (cap bytes, always NUL-terminated) as a quoted log
 * value: "..." with \" \\ and control characters escaped; cut at cap.
 * Returns buf, so it can be used inline as a %s argument. */
const char *oplog_quote(char *buf, size_t cap, const char *s);

/* Copies a formatted key=value tail to out (cap bytes, cut), escaping
 * the quotes inside each key="..." value, whose end is the quote followed
 * by the end of the tail or by " key=" (a backslash pair, as oplog_quote
 * writes, is kept as it is). So
 * msg="pods "a" is forbidden" becomes msg="pods \"a\" is forbidden". */
void oplog_escape_values(const char *in, char *out, size_t cap);

#define OPLOG(lg, lvl, event, obj, rv, ...)                              \
    do {                                                                 \
        if ((lg) && (lvl) >= (lg)->level && (lg)->level != OPLOG_OFF)    \
            oplog_write((lg), (lvl), (event), (obj), (rv), __VA_ARGS__); \
    } while (0)

#endif
