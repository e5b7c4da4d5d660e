/* quote.h -- quote an untrusted string for an error message: printable
 * ASCII kept, quotes/backslashes and control or non-ASCII bytes escaped,
 * long input cut with "..." so a hostile value cannot flood a log line. */
#ifndef AIQ_QUOTE_H
#define AIQ_QUOTE_H

#include <stddef.h>

/* Longest part of the input shown before "..." is appended. */
#define AIQ_QUOTE_SHOW 64

/* Writes s (len bytes; NUL bytes allowed) as a double-quoted, escaped,
 * possibly truncated string into buf (cap bytes, always NUL-terminated when
 * cap > 0). s == NULL writes `null`. Returns buf. Never fails. */
char *aiq_quote(char *buf, size_t cap, const char *s, size_t len);

/* aiq_quote for a NUL-terminated string (or NULL). */
char *aiq_quotes(char *buf, size_t cap, const char *s);

#endif
