/* units.c -- Kubernetes quantity and Go duration parsing and formatting
 * (see units.h for the grammar and the rounding rules).
 *
 * Quantities are evaluated exactly with a small fixed-size unsigned big
 * integer: the digits, times 2^binary-exponent, times or divided by a power
 * of ten, so "0.1Gi" or "123456789012345678901e-3" round exactly as the
 * API server's arbitrary-precision decimals do. */
#include "common/units.h"

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/quote.h"

/* ---- a tiny unsigned big integer ------------------------------------- */

/* 16 x 32 bits = 512 bits: the largest intermediate value is a 64-digit
 * mantissa (< 2^213) times 2^60 times at most 2^64 before the overflow
 * check stops the growth. */
#define BIG_LIMBS 16

struct big {
    uint32_t l[BIG_LIMBS]; /* little-endian limbs */
};

/* b = b * m + a; returns false if the result does not fit. */
static bool big_muladd(struct big *b, uint32_t m, uint32_t a) {
    uint64_t carry = a;
    for (int i = 0; i < BIG_LIMBS; i++) {
        uint64_t v = (uint64_t)b->l[i] * m + carry;
        b->l[i] = (uint32_t)v;
        carry = v >> 32;
    }
    return carry == 0;
}

/* b = b / d; returns the remainder. */
static uint32_t big_div(struct big *b, uint32_t d) {
    uint64_t rem = 0;
    for (int i = BIG_LIMBS - 1; i >= 0; i--) {
        uint64_t v = (rem << 32) | b->l[i];
        b->l[i] = (uint32_t)(v / d);
        rem = v % d;
    }
    return (uint32_t)rem;
}

static bool big_is_zero(const struct big *b) {
    for (int i = 0; i < BIG_LIMBS; i++)
        if (b->l[i]) return false;
    return true;
}

/* True when b > 2^64 - 1 (used to stop multiplying early). */
static bool big_over64(const struct big *b) {
    for (int i = 2; i < BIG_LIMBS; i++)
        if (b->l[i]) return true;
    return false;
}

/* ---- quantities ------------------------------------------------------- */

struct qsuffix {
    const char *s;
    int exp10; /* decimal exponent */
    int exp2;  /* binary exponent */
};

static const struct qsuffix qsuffixes[] = {
    {"", 0, 0},   {"n", -9, 0}, {"u", -6, 0}, {"m", -3, 0},
    {"k", 3, 0},  {"M", 6, 0},  {"G", 9, 0},  {"T", 12, 0},
    {"P", 15, 0}, {"E", 18, 0}, {"Ki", 0, 10}, {"Mi", 0, 20},
    {"Gi", 0, 30}, {"Ti", 0, 40}, {"Pi", 0, 50}, {"Ei", 0, 60},
};

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* Parses a decimal-exponent suffix "e3", "E-2", "e+10" into *exp
 * (saturated at +-100000, far outside anything that fits int64). */
static bool parse_exp_suffix(const char *p, int *exp) {
    if (*p != 'e' && *p != 'E') return false;
    p++;
    int sign = 1;
    if (*p == '+' || *p == '-') sign = *p++ == '-' ? -1 : 1;
    if (!is_digit(*p)) return false;
    long v = 0;
    for (; is_digit(*p); p++)
        if (v < 100000) v = v * 10 + (*p - '0');
    if (*p) return false;
    if (v > 100000) v = 100000;
    *exp = (int)(sign * v);
    return true;
}

/* Finds the suffix p of quantity s: a unit ("Ki", "m", ...) or a decimal
 * exponent ("e3"), into *exp10 and *exp2 (*exp2 is left as it is for an
 * exponent). */
static aiq_rc quantity_suffix(const char *s, const char *p, int *exp10, int *exp2,
                              aiq_err *err) {
    char q[AIQ_QUANTITY_MAX_LEN * 4 + 8];
    for (size_t i = 0; i < sizeof qsuffixes / sizeof qsuffixes[0]; i++) {
        if (strcmp(p, qsuffixes[i].s) == 0) {
            *exp10 = qsuffixes[i].exp10;
            *exp2 = qsuffixes[i].exp2;
            return AIQ_OK;
        }
    }
    if (!parse_exp_suffix(p, exp10)) {
        char qs[AIQ_QUANTITY_MAX_LEN * 4 + 8];
        return aiq_err_set(err, AIQ_EINVAL,
                           "invalid quantity %s: unknown suffix %s",
                           aiq_quotes(q, sizeof q, s),
                           aiq_quotes(qs, sizeof qs, p));
    }
    return AIQ_OK;
}

/* b = b * 2^exp2 * 10^e, rounded up (away from zero) when dividing by a
 * power of ten leaves a remainder. Returns false when the product passes
 * 2^64 - 1 (b is then left part way). */
static bool quantity_rescale(struct big *b, int exp2, int e) {
    for (int i = 0; i < exp2 / 10 && !big_is_zero(b); i++)
        big_muladd(b, 1024, 0); /* mantissa < 2^213: 2^60 more fits */
    if (e > 0) {
        for (int i = 0; i < e && !big_is_zero(b); i++) {
            big_muladd(b, 10, 0);
            if (big_over64(b)) return false;
        }
    } else if (e < 0) {
        bool inexact = false;
        /* Past 10^90 every nonzero value here becomes 0 < x < 1. */
        int k = -e > 90 ? 90 : -e;
        for (int i = 0; i < k; i++)
            if (big_div(b, 10)) inexact = true;
        if (inexact) big_muladd(b, 1, 1); /* round up (away from zero) */
    }
    return true;
}

aiq_rc aiq_quantity_scaled(const char *s, int scale10, int64_t *out,
                           aiq_err *err) {
    char q[AIQ_QUANTITY_MAX_LEN * 4 + 8];
    const char *p = s;
    bool neg = false;
    struct big b;
    int nfrac = 0, ndigits = 0, exp10 = 0, exp2 = 0;
    aiq_rc rc = AIQ_OK;

    if (!s || !*s)
        return aiq_err_set(err, AIQ_EINVAL, "invalid quantity \"\": empty");
    size_t len = strnlen(s, AIQ_QUANTITY_MAX_LEN + 1);
    if (len > AIQ_QUANTITY_MAX_LEN)
        return aiq_err_set(err, AIQ_EINVAL,
                           "invalid quantity %s: longer than %d characters",
                           aiq_quotes(q, sizeof q, s), AIQ_QUANTITY_MAX_LEN);
    if (scale10 < -9 || scale10 > 18)
        return aiq_err_set(err, AIQ_EINVAL, "quantity scale %d out of range",
                           scale10);

    memset(&b, 0, sizeof b);
    if (*p == '+' || *p == '-') neg = *p++ == '-';
    for (; is_digit(*p); p++, ndigits++)
        big_muladd(&b, 10, (uint32_t)(*p - '0')); /* <= 64 digits: fits */
    if (*p == '.') {
        p++;
        for (; is_digit(*p); p++, ndigits++, nfrac++)
            big_muladd(&b, 10, (uint32_t)(*p - '0'));
    }
    if (ndigits == 0)
        return aiq_err_set(err, AIQ_EINVAL,
                           "invalid quantity %s: no number before the suffix",
                           aiq_quotes(q, sizeof q, s));
    /* The rest is the suffix. */
    if ((rc = quantity_suffix(s, p, &exp10, &exp2, err)) != AIQ_OK) return rc;

    /* value = digits * 2^exp2 * 10^(exp10 - nfrac), in units of 10^scale10 */
    bool too_big = !quantity_rescale(&b, exp2, exp10 - nfrac - scale10);
    uint64_t mag = 0;
    if (!too_big && !big_over64(&b))
        mag = ((uint64_t)b.l[1] << 32) | b.l[0];
    if (too_big || big_over64(&b) || mag > (uint64_t)INT64_MAX)
        return aiq_err_set(err, AIQ_EINVAL,
                           "invalid quantity %s: too large (more than %" PRId64
                           " %s)",
                           aiq_quotes(q, sizeof q, s), INT64_MAX,
                           scale10 == -3 ? "millis" : "units");
    *out = neg ? -(int64_t)mag : (int64_t)mag;
    return AIQ_OK;
}

aiq_rc aiq_quantity_cpu_milli(const char *s, int64_t *milli, aiq_err *err) {
    return aiq_quantity_scaled(s, -3, milli, err);
}

aiq_rc aiq_quantity_bytes(const char *s, int64_t *bytes, aiq_err *err) {
    return aiq_quantity_scaled(s, 0, bytes, err);
}

aiq_rc aiq_quantity_int(const char *s, int64_t *out, aiq_err *err) {
    return aiq_quantity_scaled(s, 0, out, err);
}

aiq_rc aiq_quantity_mib(const char *s, int64_t *mib, aiq_err *err) {
    const int64_t mib_milli = (int64_t)1048576 * 1000;
    int64_t milli = 0;
    aiq_rc rc = aiq_quantity_scaled(s, -3, &milli, err);
    if (rc != AIQ_OK)
        return rc;
    if (milli < 0)
        return aiq_err_set(err, AIQ_EINVAL, "invalid GPU memory \"%s\": must be >= 0", s);
    if (milli % mib_milli != 0)
        return aiq_err_set(err, AIQ_EINVAL,
                           "invalid GPU memory \"%s\": must be a whole number of MiB "
                           "(like \"40Gi\" or \"81920Mi\")", s);
    *mib = milli / mib_milli;
    return AIQ_OK;
}

char *aiq_quantity_format_mib(int64_t mib, char *buf, size_t cap) {
    if (mib > INT64_MAX / 1048576 || mib < -(INT64_MAX / 1048576)) {
        snprintf(buf, cap, "%" PRId64 "Mi", mib);
        return buf;
    }
    return aiq_quantity_format_bytes(mib * 1048576, buf, cap);
}

char *aiq_size_text(int64_t v, int unit, char *buf, size_t cap) {
    static const char *const names[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    int k = unit < 0 ? 0 : unit > 6 ? 6 : unit;
    double x = (double)v;
    while (k < 6 && fabs(x) >= 1024) {
        x /= 1024;
        k++;
    }
    char num[32];
    snprintf(num, sizeof num, "%.1f", x);
    size_t n = strlen(num);
    if (n > 2 && strcmp(num + n - 2, ".0") == 0)
        num[n - 2] = '\0'; /* whole: "40", not "40.0" */
    snprintf(buf, cap, "%s %s", num, names[k]);
    return buf;
}

char *aiq_quantity_format_milli(int64_t milli, char *buf, size_t cap) {
    if (milli % 1000 == 0)
        snprintf(buf, cap, "%" PRId64, milli / 1000);
    else
        snprintf(buf, cap, "%" PRId64 "m", milli);
    return buf;
}

char *aiq_quantity_format_bytes(int64_t bytes, char *buf, size_t cap) {
    static const char *const bin[] = {"Ei", "Pi", "Ti", "Gi", "Mi", "Ki"};
    static const char *const dec[] = {"E", "P", "T", "G", "M", "k"};
    if (bytes != 0) {
        for (int i = 0; i < 6; i++) {
            int64_t unit = (int64_t)1 << (10 * (6 - i));
            if (bytes % unit == 0) {
                snprintf(buf, cap, "%" PRId64 "%s", bytes / unit, bin[i]);
                return buf;
            }
        }
        int64_t unit = 1000000000000000000LL;
        for (int i = 0; i < 6; i++, unit /= 1000) {
            if (bytes % unit == 0) {
                snprintf(buf, cap, "%" PRId64 "%s", bytes / unit, dec[i]);
                return buf;
            }
        }
    }
    snprintf(buf, cap, "%" PRId64, bytes);
    return buf;
}

/* ---- durations -------------------------------------------------------- */

struct dunit {
    const char *s;
    uint64_t ns;
};

static const struct dunit dunits[] = {
    {"ns", 1ULL},
    {"us", 1000ULL},
    {"\xc2\xb5s", 1000ULL}, /* U+00B5 micro sign */
    {"\xce\xbcs", 1000ULL}, /* U+03BC Greek mu */
    {"ms", 1000000ULL},
    {"s", 1000000000ULL},
    {"m", 60ULL * 1000000000ULL},
    {"h", 3600ULL * 1000000000ULL},
    {"d", 86400ULL * 1000000000ULL}, /* aiq extension: 24h */
};

/* The largest magnitude of a duration, in ns: |d| <= 2^63 (Go). */
#define DURATION_LIMIT_NS ((uint64_t)1 << 63)

/* Reads the number of one term of duration s ("1.5" of "1.5h") at *pp
 * and moves *pp past it: its whole part into *v, the digits of its
 * fraction into *f and 10^(their count) into *scale. q is s quoted, for
 * the errors. */
static aiq_rc duration_number(const char *s, const char *q, const char **pp, uint64_t *v,
                              uint64_t *f, double *scale, aiq_err *err) {
    const char *p = *pp;
    bool pre = false, post = false, vover = false;
    if (!(*p == '.' || is_digit(*p)))
        return aiq_err_set(err, AIQ_EINVAL,
                           "invalid duration %s: expected a number at "
                           "offset %d",
                           q, (int)(p - s));
    for (; is_digit(*p); p++) {
        pre = true;
        if (*v > (DURATION_LIMIT_NS - (uint64_t)(*p - '0')) / 10) vover = true;
        else *v = *v * 10 + (uint64_t)(*p - '0');
    }
    if (vover)
        return aiq_err_set(err, AIQ_EINVAL, "invalid duration %s: too large",
                           q);
    if (*p == '.') {
        p++;
        bool fover = false;
        for (; is_digit(*p); p++) {
            post = true;
            if (fover) continue; /* further digits cannot matter */
            if (*f > ((uint64_t)INT64_MAX - 9) / 10) { fover = true; continue; }
            *f = *f * 10 + (uint64_t)(*p - '0');
            *scale *= 10;
        }
    }
    if (!pre && !post)
        return aiq_err_set(err, AIQ_EINVAL,
                           "invalid duration %s: expected a number at "
                           "offset %d",
                           q, (int)(p - s));
    *pp = p;
    return AIQ_OK;
}

/* Reads the unit of one term at *pp (up to the next number) and moves
 * *pp past it; *unit is its length in ns. q is the duration quoted. */
static aiq_rc duration_unit(const char *q, const char **pp, uint64_t *unit, aiq_err *err) {
    const char *u = *pp, *p = *pp;
    while (*p && *p != '.' && !is_digit(*p)) p++;
    size_t ul = (size_t)(p - u);
    if (ul == 0)
        return aiq_err_set(err, AIQ_EINVAL,
                           "invalid duration %s: missing unit (one of ns, "
                           "us, ms, s, m, h, d)",
                           q);
    *unit = 0;
    for (size_t i = 0; i < sizeof dunits / sizeof dunits[0]; i++)
        if (strlen(dunits[i].s) == ul && memcmp(dunits[i].s, u, ul) == 0)
            *unit = dunits[i].ns;
    if (!*unit) {
        char qu[AIQ_DURATION_MAX_LEN * 4 + 8];
        return aiq_err_set(err, AIQ_EINVAL,
                           "invalid duration %s: unknown unit %s (use ns, "
                           "us, ms, s, m, h or d)",
                           q, aiq_quote(qu, sizeof qu, u, ul));
    }
    *pp = p;
    return AIQ_OK;
}

static aiq_rc duration_parse(const char *s, bool allow_neg, double *secs,
                             aiq_err *err) {
    char q[AIQ_DURATION_MAX_LEN * 4 + 8];
    const uint64_t limit = DURATION_LIMIT_NS;
    const char *p = s;
    bool neg = false;
    uint64_t d = 0;
    aiq_rc rc = AIQ_OK;

    if (!s || !*s)
        return aiq_err_set(err, AIQ_EINVAL, "invalid duration \"\": empty");
    if (strnlen(s, AIQ_DURATION_MAX_LEN + 1) > AIQ_DURATION_MAX_LEN)
        return aiq_err_set(err, AIQ_EINVAL,
                           "invalid duration %s: longer than %d characters",
                           aiq_quotes(q, sizeof q, s), AIQ_DURATION_MAX_LEN);
    aiq_quotes(q, sizeof q, s);
    if (*p == '+' || *p == '-') neg = *p++ == '-';
    if (strcmp(p, "0") == 0) {
        *secs = 0;
        return AIQ_OK;
    }
    if (!*p)
        return aiq_err_set(err, AIQ_EINVAL, "invalid duration %s: no number",
                           q);
    while (*p) {
        uint64_t v = 0, f = 0, unit = 0;
        double scale = 1;
        if ((rc = duration_number(s, q, &p, &v, &f, &scale, err)) != AIQ_OK ||
            (rc = duration_unit(q, &p, &unit, err)) != AIQ_OK)
            return rc;
        if (v > limit / unit)
            return aiq_err_set(err, AIQ_EINVAL, "invalid duration %s: too large",
                               q);
        v *= unit;
        if (f > 0) {
            /* Same as Go: the fraction in float64, truncated to ns. */
            v += (uint64_t)((double)f * ((double)unit / scale));
            if (v > limit)
                return aiq_err_set(err, AIQ_EINVAL,
                                   "invalid duration %s: too large", q);
        }
        d += v;
        if (d > limit)
            return aiq_err_set(err, AIQ_EINVAL, "invalid duration %s: too large",
                               q);
    }
    if (!neg && d > limit - 1)
        return aiq_err_set(err, AIQ_EINVAL, "invalid duration %s: too large",
                           q);
    if (neg && d > 0 && !allow_neg)
        return aiq_err_set(err, AIQ_EINVAL,
                           "invalid duration %s: must not be negative", q);
    double sv = (double)(d / 1000000000ULL) + (double)(d % 1000000000ULL) / 1e9;
    *secs = neg ? -sv : sv;
    return AIQ_OK;
}

aiq_rc aiq_duration_parse(const char *s, double *secs, aiq_err *err) {
    return duration_parse(s, false, secs, err);
}

aiq_rc aiq_duration_parse_signed(const char *s, double *secs, aiq_err *err) {
    return duration_parse(s, true, secs, err);
}

char *aiq_duration_format(double secs, char *buf, size_t cap) {
    size_t n = 0;
    if (cap == 0) return buf;
    buf[0] = '\0';
    if (isnan(secs)) {
        snprintf(buf, cap, "NaN");
        return buf;
    }
    if (secs < 0) {
        n += (size_t)snprintf(buf, cap, "-");
        secs = -secs;
    }
    if (secs > 9.2e15) secs = 9.2e15; /* keep the millisecond count in int64 */
    long long ms = llround(secs * 1000.0);
    /* Never round past what aiq_duration_parse accepts (2^63-1 ns). */
    if (ms > 9223372036854LL) ms = 9223372036854LL;
    long long h = ms / 3600000, m = ms / 60000 % 60, s = ms / 1000 % 60,
              frac = ms % 1000;
    if (h && n < cap) n += (size_t)snprintf(buf + n, cap - n, "%lldh", h);
    if (m && n < cap) n += (size_t)snprintf(buf + n, cap - n, "%lldm", m);
    if ((s || frac || (!h && !m)) && n < cap) {
        if (frac) {
            char f[8];
            snprintf(f, sizeof f, "%03lld", frac);
            for (int i = 2; i > 0 && f[i] == '0'; i--) f[i] = '\0';
            snprintf(buf + n, cap - n, "%lld.%ss", s, f);
        } else {
            snprintf(buf + n, cap - n, "%llds", s);
        }
    }
    return buf;
}
