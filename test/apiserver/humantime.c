/* humantime.c -- Kubernetes-style ages (duration.HumanDuration), RFC 3339
 * formatting and parsing, and Go duration strings. */
#include "test/apiserver/humantime.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/aiq_time.h"

/* See humantime.h. */
void human_duration(double seconds, char *buf, size_t cap) {
    if (!buf || cap == 0) return;
    if (isnan(seconds)) {
        snprintf(buf, cap, "<invalid>");
        return;
    }
    /* Go truncates toward zero: int(d.Seconds()), int(d / time.Minute). */
    if (seconds > 9.0e15) seconds = 9.0e15;
    long long s = (long long)seconds;
    if (s < -1) {
        snprintf(buf, cap, "<invalid>");
        return;
    }
    if (s < 0) {
        snprintf(buf, cap, "0s");
        return;
    }
    if (s < 60 * 2) {
        snprintf(buf, cap, "%llds", s);
        return;
    }
    long long minutes = s / 60;
    if (minutes < 10) {
        long long rs = s % 60;
        if (rs == 0)
            snprintf(buf, cap, "%lldm", minutes);
        else
            snprintf(buf, cap, "%lldm%llds", minutes, rs);
        return;
    }
    if (minutes < 60 * 3) {
        snprintf(buf, cap, "%lldm", minutes);
        return;
    }
    long long hours = s / 3600;
    if (hours < 8) {
        long long m = minutes % 60;
        if (m == 0)
            snprintf(buf, cap, "%lldh", hours);
        else
            snprintf(buf, cap, "%lldh%lldm", hours, m);
    } else if (hours < 48) {
        snprintf(buf, cap, "%lldh", hours);
    } else if (hours < 24 * 8) {
        long long h = hours % 24;
        if (h == 0)
            snprintf(buf, cap, "%lldd", hours / 24);
        else
            snprintf(buf, cap, "%lldd%lldh", hours / 24, h);
    } else if (hours < 24 * 365 * 2) {
        snprintf(buf, cap, "%lldd", hours / 24);
    } else if (hours < 24 * 365 * 8) {
        long long dy = (hours / 24) % 365;
        if (dy == 0)
            snprintf(buf, cap, "%lldy", hours / 24 / 365);
        else
            snprintf(buf, cap, "%lldy%lldd", hours / 24 / 365, dy);
    } else {
        snprintf(buf, cap, "%lldy", hours / 24 / 365);
    }
}

/* See humantime.h. */
void rfc3339(double t, char *buf, size_t cap) {
    if (!buf || cap == 0) return;
    aiq_rfc3339(buf, cap, t, 0);
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
 * days-from-civil arithmetic, written out here). */
static long long ht_days_from_civil(long long y, int m, int d) {
    y -= m <= 2;
    long long era = (y >= 0 ? y : y - 399) / 400;
    long long yoe = y - era * 400;
    long long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    long long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* Reads exactly n digits at *p into *v; advances *p. */
static int ht_digits(const char **p, int n, int *v) {
    int x = 0;
    for (int i = 0; i < n; i++) {
        char c = (*p)[i];
        if (c < '0' || c > '9') return -1;
        x = x * 10 + (c - '0');
    }
    *p += n;
    *v = x;
    return 0;
}

static int ht_leap(int y) {
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* See humantime.h. */
double rfc3339_parse(const char *s) {
    static const int mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (!s) return -1;
    const char *p = s;
    int y, mo, d, h, mi, sec;
    if (ht_digits(&p, 4, &y) || *p++ != '-' || ht_digits(&p, 2, &mo) ||
        *p++ != '-' || ht_digits(&p, 2, &d))
        return -1;
    if (*p != 'T' && *p != 't' && *p != ' ') return -1;
    p++;
    if (ht_digits(&p, 2, &h) || *p++ != ':' || ht_digits(&p, 2, &mi) ||
        *p++ != ':' || ht_digits(&p, 2, &sec))
        return -1;
    if (mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || sec > 60) return -1;
    int dim = mdays[mo - 1] + (mo == 2 && ht_leap(y));
    if (d > dim) return -1;
    double frac = 0;
    if (*p == '.') {
        p++;
        double scale = 0.1;
        int n = 0;
        while (*p >= '0' && *p <= '9') {
            frac += (*p - '0') * scale;
            scale /= 10;
            p++;
            n++;
        }
        if (n == 0 || n > 9) return -1;
    }
    long long off = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int sign = *p == '-' ? -1 : 1, oh, om;
        p++;
        if (ht_digits(&p, 2, &oh) || *p++ != ':' || ht_digits(&p, 2, &om))
            return -1;
        if (oh > 23 || om > 59) return -1;
        off = sign * (oh * 3600LL + om * 60LL);
    } else {
        return -1;
    }
    if (*p != '\0') return -1;
    long long days = ht_days_from_civil(y, mo, d);
    long long t = days * 86400 + h * 3600LL + mi * 60LL + sec - off;
    if (t < 0) return -1;
    return (double)t + frac;
}

/* See humantime.h. */
int human_parse_duration(const char *s, double *out) {
    static const struct { const char *unit; double secs; } units[] = {
        {"ns", 1e-9}, {"us", 1e-6}, {"\xc2\xb5s", 1e-6}, {"\xce\xbcs", 1e-6},
        {"ms", 1e-3}, {"s", 1}, {"m", 60}, {"h", 3600},
    };
    if (!s || !*s) return -1;
    const char *p = s;
    double sign = 1;
    if (*p == '-' || *p == '+') {
        sign = *p == '-' ? -1 : 1;
        p++;
    }
    if (strcmp(p, "0") == 0) {
        *out = 0;
        return 0;
    }
    if (!*p) return -1;
    double total = 0;
    while (*p) {
        double v = 0;
        int nd = 0;
        while (*p >= '0' && *p <= '9') {
            v = v * 10 + (*p - '0');
            p++;
            nd++;
        }
        if (*p == '.') {
            p++;
            double scale = 0.1;
            while (*p >= '0' && *p <= '9') {
                v += (*p - '0') * scale;
                scale /= 10;
                p++;
                nd++;
            }
        }
        if (nd == 0) return -1;
        size_t best = 0;
        double mult = 0;
        for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
            size_t n = strlen(units[i].unit);
            if (n > best && strncmp(p, units[i].unit, n) == 0) {
                best = n;
                mult = units[i].secs;
            }
        }
        if (best == 0) return -1; /* Go: missing unit */
        p += best;
        total += v * mult;
        if (total > 1e12) return -1; /* Go: overflow near 292 years */
    }
    *out = sign * total;
    return 0;
}
