/* quantity.c -- Kubernetes resource quantities the way the API server
 * parses, rounds, compares and prints them (see quantity.h). The parser
 * follows resource.ParseQuantity step by step (sign, leading zeros,
 * numerator, denominator, suffix characters, optional signed exponent),
 * so that the same inputs are refused with the same message. */
#include "test/apiserver/quantity.h"

#include <stdio.h>
#include <string.h>

#define QTY_NANO 1000000000
/* 2^63-1 units in nanos: ParseQuantity caps every value there. */
#define QTY_CAP ((__int128)0x7fffffffffffffffLL * QTY_NANO)
/* Digits beyond this saturate (10^36 < 2^127 / 10). */
#define QTY_SAT ((__int128)1000000000000000000LL * 1000000000000000000LL)

static __int128 qty_pow10(int n) {
    __int128 p = 1;
    while (n-- > 0) p *= 10;
    return p;
}

/* x * 10^n (n >= 0), saturating at the cap. */
static __int128 qty_mul10(__int128 x, int n) {
    while (n-- > 0) {
        if (x > QTY_CAP / 10) return QTY_CAP;
        x *= 10;
    }
    return x;
}

/* The pieces parseQuantityString finds; all point into the input. */
struct qty_parts {
    bool positive;
    const char *num, *denom, *suffix;
    size_t nnum, ndenom, nsuffix;
};

static bool qty_digit(char c) { return c >= '0' && c <= '9'; }

/* resource.parseQuantityString: 0, or -1 for ErrFormatWrong. */
static int qty_split(const char *s, size_t end, struct qty_parts *p) {
    size_t pos = 0, i;
    static const char zero[] = "0";
    memset(p, 0, sizeof *p);
    p->positive = true;
    p->suffix = s + end;
    if (pos < end && (s[0] == '-' || s[0] == '+')) {
        p->positive = s[0] == '+';
        pos++;
    }
    while (pos < end && s[pos] == '0') pos++;
    if (pos >= end) {
        p->num = zero;
        p->nnum = 1;
        return 0;
    }
    for (i = pos; i < end && qty_digit(s[i]); i++)
        ;
    p->num = s + pos;
    p->nnum = i - pos;
    if (i >= end) return 0;
    pos = i;
    if (p->nnum == 0) {
        p->num = zero;
        p->nnum = 1;
    }
    if (s[pos] == '.') {
        pos++;
        for (i = pos; i < end && qty_digit(s[i]); i++)
            ;
        p->denom = s + pos;
        p->ndenom = i - pos;
        if (i >= end) return 0;
        pos = i;
    }
    size_t start = pos;
    for (i = pos; i < end && strchr("eEinumkKMGTP", s[i]); i++)
        ;
    pos = i;
    if (pos < end && (s[pos] == '-' || s[pos] == '+')) pos++;
    for (i = pos; i < end && qty_digit(s[i]); i++)
        ;
    if (i < end) return -1;   /* a character no quantity may hold */
    p->suffix = s + start;
    p->nsuffix = end - start;
    return 0;
}

/* quantitySuffixer.interpret: base, exponent and format of a suffix. */
static bool qty_suffix(const char *s, size_t n, int *base, int *exp,
                       enum qty_format *fmt) {
    static const struct { const char *s; int base, exp; enum qty_format f; } tab[] = {
        {"", 10, 0, QTY_DECIMAL_SI},   {"n", 10, -9, QTY_DECIMAL_SI},
        {"u", 10, -6, QTY_DECIMAL_SI}, {"m", 10, -3, QTY_DECIMAL_SI},
        {"k", 10, 3, QTY_DECIMAL_SI},  {"M", 10, 6, QTY_DECIMAL_SI},
        {"G", 10, 9, QTY_DECIMAL_SI},  {"T", 10, 12, QTY_DECIMAL_SI},
        {"P", 10, 15, QTY_DECIMAL_SI}, {"E", 10, 18, QTY_DECIMAL_SI},
        {"Ki", 2, 10, QTY_BINARY_SI},  {"Mi", 2, 20, QTY_BINARY_SI},
        {"Gi", 2, 30, QTY_BINARY_SI},  {"Ti", 2, 40, QTY_BINARY_SI},
        {"Pi", 2, 50, QTY_BINARY_SI},  {"Ei", 2, 60, QTY_BINARY_SI},
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (strlen(tab[i].s) == n && !strncmp(tab[i].s, s, n)) {
            *base = tab[i].base;
            *exp = tab[i].exp;
            *fmt = tab[i].f;
            return true;
        }
    if (n > 1 && (s[0] == 'e' || s[0] == 'E')) {
        /* strconv.ParseInt(rest, 10, 32) */
        size_t i = 1;
        bool neg = false;
        long long v = 0;
        if (s[i] == '+' || s[i] == '-') neg = s[i++] == '-';
        if (i == n) return false;
        for (; i < n; i++) {
            if (!qty_digit(s[i])) return false;
            v = v * 10 + (s[i] - '0');
            if (v > 2147483648LL) return false;
        }
        if (neg) v = -v;
        if (v > 2147483647LL) return false;
        *base = 10;
        *exp = (int)v;
        *fmt = QTY_DECIMAL_EXP;
        return true;
    }
    return false;
}

/* See quantity.h. */
int qty_parse(const char *in, struct qty *q, const char **msg) {
    struct qty_parts p;
    int base = 10, exp = 0;
    size_t len;
    __int128 n = 0;
    memset(q, 0, sizeof *q);
    q->format = QTY_DECIMAL_SI;
    while (*in == ' ' || *in == '\t' || *in == '\n' || *in == '\r') in++;
    len = strlen(in);
    while (len && (in[len - 1] == ' ' || in[len - 1] == '\t' ||
                   in[len - 1] == '\n' || in[len - 1] == '\r'))
        len--;
    if (len == 0) {
        *msg = QTY_ERR_FORMAT;
        return -1;
    }
    if (len == 1 && in[0] == '0') return 0;
    if (qty_split(in, len, &p)) {
        *msg = QTY_ERR_FORMAT;
        return -1;
    }
    if (!qty_suffix(p.suffix, p.nsuffix, &base, &exp, &q->format)) {
        *msg = QTY_ERR_SUFFIX;
        return -1;
    }
    /* the digits of num and denom as one integer, saturating */
    for (size_t i = 0; i < p.nnum + p.ndenom; i++) {
        char c = i < p.nnum ? p.num[i] : p.denom[i - p.nnum];
        if (n < QTY_SAT) n = n * 10 + (c - '0');
    }
    if (base == 10) {
        int sc = exp - (int)p.ndenom + 9;   /* power of ten giving nanos */
        if (sc >= 0) {
            q->nanos = qty_mul10(n, sc);
        } else if (sc < -36) {
            q->nanos = n ? 1 : 0;
        } else {
            __int128 d = qty_pow10(-sc);
            q->nanos = n / d + (n % d ? 1 : 0);
        }
    } else {
        /* n * 2^exp * 10^9 / 10^ndenom, rounded up */
        __int128 v = n;
        for (int i = 0; i < exp && v < QTY_CAP; i++) v *= 2;
        if (v > QTY_CAP) v = QTY_CAP;
        if ((int)p.ndenom <= 9) {
            q->nanos = qty_mul10(v, 9 - (int)p.ndenom);
        } else if (p.ndenom > 45) {
            q->nanos = v ? 1 : 0;
        } else {
            __int128 d = qty_pow10((int)p.ndenom - 9);
            q->nanos = v / d + (v % d ? 1 : 0);
        }
    }
    if (q->nanos > QTY_CAP) q->nanos = QTY_CAP;
    if (!p.positive) q->nanos = -q->nanos;

    /* ParseQuantity keeps the input as the printed form when its fast
     * int64 path found it canonical already. */
    if (len < sizeof q->text && p.nnum + p.ndenom <= 18) {
        bool keep = false;
        char shifted[40];
        size_t ns = 0;
        for (size_t i = 0; i < p.nnum && ns < sizeof shifted - 1; i++) shifted[ns++] = p.num[i];
        for (size_t i = 0; i < p.ndenom && ns < sizeof shifted - 1; i++) shifted[ns++] = p.denom[i];
        shifted[ns] = 0;
        if (q->format == QTY_BINARY_SI) {
            int prec = 15 - (int)p.nnum - (int)((float)exp * 3 / 10) - 1;
            long long v = 0;
            for (size_t i = 0; i < ns; i++) v = v * 10 + (shifted[i] - '0');
            keep = p.ndenom == 0 && prec >= 0 && exp % 10 == 0 && (v & 7) != 0;
        } else {
            int scale = exp - (int)p.ndenom;
            keep = scale >= -9 && scale % 3 == 0 && ns > 0 && shifted[0] != '0' &&
                   !(ns >= 3 && !strcmp(shifted + ns - 3, "000"));
        }
        if (keep) {
            q->keep_text = true;
            memcpy(q->text, in, len);
            q->text[len] = 0;
        }
    }
    return 0;
}

/* See quantity.h. */
void qty_round_up(struct qty *q, int scale10) {
    __int128 unit = qty_pow10(scale10 + 9), a = q->nanos < 0 ? -q->nanos : q->nanos;
    if (scale10 < -9 || scale10 > 0 || a % unit == 0) return;
    a = (a / unit + 1) * unit;
    q->nanos = q->nanos < 0 ? -a : a;
    q->keep_text = false;
}

static void qty_put_int(__int128 v, char *out, size_t cap) {
    char tmp[48];
    size_t n = 0;
    bool neg = v < 0;
    if (neg) v = -v;
    do {
        tmp[n++] = (char)('0' + (int)(v % 10));
        v /= 10;
    } while (v && n < sizeof tmp - 1);
    if (neg) tmp[n++] = '-';
    size_t j = 0;
    while (n && j + 1 < cap) out[j++] = tmp[--n];
    out[j] = 0;
}

/* See quantity.h: Quantity.CanonicalizeBytes. */
char *qty_string(const struct qty *q, char *buf, size_t cap) {
    static const char *const dec[] = {"n", "u", "m", "", "k", "M", "G", "T", "P", "E"};
    static const char *const bin[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
    char num[48];
    const char *suffix = "";
    char expbuf[16] = "";
    enum qty_format f = q->format;
    __int128 m = q->nanos < 0 ? -q->nanos : q->nanos;
    if (cap == 0) return buf;
    if (q->keep_text) {
        snprintf(buf, cap, "%s", q->text);
        return buf;
    }
    if (m == 0) {
        snprintf(buf, cap, "0");
        return buf;
    }
    if (f == QTY_BINARY_SI && (m < (__int128)1024 * QTY_NANO || m % QTY_NANO != 0))
        f = QTY_DECIMAL_SI;
    if (f == QTY_BINARY_SI) {
        int e = 0;
        m /= QTY_NANO;
        while (m % 1024 == 0 && e < 6) {
            m /= 1024;
            e++;
        }
        suffix = bin[e];
    } else {
        int e = -9;
        while (m % 10 == 0) {
            m /= 10;
            e++;
        }
        while (((e % 3) + 3) % 3 != 0) {
            m *= 10;
            e--;
        }
        if (f == QTY_DECIMAL_EXP) {
            if (e != 0) snprintf(expbuf, sizeof expbuf, "e%d", e);
            suffix = expbuf;
        } else if (e >= -9 && e <= 18) {
            suffix = dec[(e + 9) / 3];
        }
    }
    qty_put_int(q->nanos < 0 ? -m : m, num, sizeof num);
    snprintf(buf, cap, "%s%s", num, suffix);
    return buf;
}

/* See quantity.h. */
int qty_cmp(const struct qty *a, const struct qty *b) {
    return a->nanos < b->nanos ? -1 : a->nanos > b->nanos ? 1 : 0;
}

/* See quantity.h. MilliValue() rounds away from zero. */
bool qty_is_integer(const struct qty *q) {
    __int128 a = q->nanos < 0 ? -q->nanos : q->nanos;
    __int128 milli = a / 1000000 + (a % 1000000 ? 1 : 0);
    return milli % 1000 == 0;
}
