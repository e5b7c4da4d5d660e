/* humantime.h -- times and durations as Kubernetes prints and parses them:
 * ages in the style of Go's k8s.io/apimachinery duration.HumanDuration,
 * RFC 3339 timestamps, and Go time.ParseDuration strings ("1h30m"). */
#ifndef AIQ_HUMANTIME_H
#define AIQ_HUMANTIME_H

#include <stddef.h>

/* Writes seconds as an age ("45s", "3m5s", "12m", "2h5m", "3d4h", "2y10d")
 * with the exact bands of Go's duration.HumanDuration: < -1 s gives
 * "<invalid>", -1..0 gives "0s". buf is always NUL-terminated (cap > 0). */
void human_duration(double seconds, char *buf, size_t cap);

/* Writes unix time t (fraction dropped) as "2026-11-21T10:16:31Z" (UTC).
 * buf needs 21 bytes; shorter buffers get a truncated string. */
void rfc3339(double t, char *buf, size_t cap);

/* Parses an RFC 3339 timestamp ("2026-11-21T10:16:31Z",
 * "...T10:16:31.5+02:00", lower-case t/z accepted) to unix seconds with
 * the fraction. Returns -1 on any syntax or range error. */
double rfc3339_parse(const char *s);

/* Parses a Go duration ("30s", "1h30m", "1.5h", "250ms", "-2m", "0") to
 * seconds. Returns 0 and stores the value in *out on success, -1 on a
 * syntax error (then *out is untouched). */
int human_parse_duration(const char *s, double *out);

#endif
