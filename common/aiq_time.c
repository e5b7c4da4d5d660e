/* aiq_time.c -- RFC 3339 parsing and formatting, the monotonic clock,
 * deadlines; see aiq_time.h. */
#include "common/aiq_time.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/quote.h"
#include "common/units.h" /* AIQ_QUANTITY_MAX_LEN */

#define AIQ_TIME_MAX 253402300799.0 /* 9999-12-31T23:59:59Z */

/* ---- RFC 3339 times --------------------------------------------------- */

/* Days since 1970-01-01 of a proleptic Gregorian date (m 1..12). */
static int64_t days_from_civil(int64_t y, int m, int d) {
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* Reads exactly n digits at *p into *v and advances *p. */
static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* Reads exactly n digits at *p into *v and advances *p. */
static bool take_digits(const char **p, int n, int *v) {
    int x = 0;
    for (int i = 0; i < n; i++) {
        if (!is_digit((*p)[i])) return false;
        x = x * 10 + ((*p)[i] - '0');
    }
    *p += n;
    *v = x;
    return true;
}

/* See aiq_time.h. */
aiq_rc aiq_time_parse(const char *s, double *unix_s, aiq_err *err) {
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    char q[AIQ_QUANTITY_MAX_LEN * 4 + 8];
    const char *p = s;
    int y, mo, d, h, mi, sec, oh = 0, om = 0, osign = 0;
    double frac = 0;

    if (!s || strnlen(s, 65) > 64) goto bad;
    if (!take_digits(&p, 4, &y) || *p++ != '-' || !take_digits(&p, 2, &mo) ||
        *p++ != '-' || !take_digits(&p, 2, &d) || (*p != 'T' && *p != 't'))
        goto bad;
    p++;
    if (!take_digits(&p, 2, &h) || *p++ != ':' || !take_digits(&p, 2, &mi) ||
        *p++ != ':' || !take_digits(&p, 2, &sec))
        goto bad;
    if (*p == '.') {
        double scale = 0.1;
        p++;
        if (!is_digit(*p)) goto bad;
        for (; is_digit(*p); p++, scale /= 10) frac += (*p - '0') * scale;
    }
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        osign = *p++ == '-' ? -1 : 1;
        if (!take_digits(&p, 2, &oh) || *p++ != ':' || !take_digits(&p, 2, &om))
            goto bad;
    } else {
        goto bad;
    }
    if (*p) goto bad;
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] ||
        (mo == 2 && d == 29 && !leap) || h > 23 || mi > 59 || sec > 60 ||
        oh > 23 || om > 59)
        goto bad;
    int64_t t = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec -
                osign * (oh * 3600 + om * 60);
    *unix_s = (double)t + frac;
    return AIQ_OK;
bad:
    return aiq_err_set(err, AIQ_EINVAL,
                       "invalid time %s: want RFC 3339 like "
                       "\"2024-05-01T10:00:00Z\"",
                       aiq_quotes(q, sizeof q, s));
}

/* See aiq_time.h. */
const char *aiq_rfc3339(char *buf, size_t cap, double t, int digits) {
    struct tm tm;
    char base[32];
    if (cap == 0)
        return buf;
    buf[0] = '\0';
    if (!(t >= 0))
        t = 0; /* NaN too */
    if (t > AIQ_TIME_MAX)
        t = AIQ_TIME_MAX;
    if (digits < 0)
        digits = 0;
    if (digits > 9)
        digits = 9;
    time_t s = (time_t)floor(t);
    if (!gmtime_r(&s, &tm) || strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm) == 0)
        return buf;
    if (digits == 0) {
        snprintf(buf, cap, "%sZ", base);
        return buf;
    }
    double scale = pow(10, digits);
    long frac = (long)((t - floor(t)) * scale);
    if (frac >= (long)scale)
        frac = (long)scale - 1;
    snprintf(buf, cap, "%s.%0*ldZ", base, digits, frac);
    return buf;
}

/* See aiq_time.h. */
double aiq_mono_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts); /* cannot fail for this clock */
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* See aiq_time.h. */
struct timespec aiq_deadline(clockid_t clk, double after_s) {
    struct timespec ts;
    clock_gettime(clk, &ts); /* clk is a clock the caller's condvar uses */
    if (!(after_s > 0))
        after_s = 0;
    time_t whole = (time_t)after_s;
    ts.tv_sec += whole;
    ts.tv_nsec += (long)((after_s - (double)whole) * 1e9);
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}
