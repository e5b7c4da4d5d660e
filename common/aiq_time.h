/* aiq_time.h -- the time helpers every layer needs: RFC 3339 times read
 * and written, a monotonic clock reading, and an absolute deadline for
 * pthread_cond_timedwait. No allocation, no I/O. */
#ifndef AIQ_TIME_H
#define AIQ_TIME_H

#include <stddef.h>
#include <time.h>

#include "common/aiq_err.h"

/* Parses an RFC 3339 time as Kubernetes writes it ("2024-05-01T10:00:00Z",
 * optionally with a fraction ".123456" and/or an offset "+02:00" instead of
 * "Z") into unix seconds. Returns AIQ_EINVAL with the quoted input on a
 * malformed or impossible time (month 13, Feb 30); *unix_s untouched. */
aiq_rc aiq_time_parse(const char *s, double *unix_s, aiq_err *err);

/* Writes unix time t (seconds) as RFC 3339 UTC into buf (cap bytes):
 * "2026-11-21T10:00:00Z" with digits = 0, ".123Z" with 3, ".123456Z"
 * with 6 (any 0..9; the fraction is truncated). RFC 3339 has four-digit
 * years: a time outside 1970..9999 (NaN, an infinity, a runaway
 * estimate) is written at the nearest end, never as text a date-time
 * field would refuse. Returns buf ("" when cap is too small). */
const char *aiq_rfc3339(char *buf, size_t cap, double t, int digits);

/* Seconds on CLOCK_MONOTONIC (for intervals and expiry; not a date). */
double aiq_mono_s(void);

/* The absolute time after_s seconds from now on clock clk, normalised,
 * for pthread_cond_timedwait on a condition variable using clk. */
struct timespec aiq_deadline(clockid_t clk, double after_s);

#endif
