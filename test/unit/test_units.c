/* test_units.c -- Kubernetes quantities and durations (common/units.c):
 * table-driven, with the odd cases the API server accepts and rejects. */
#include <stdint.h>

#include "common/units.h"
#include "test/unit/th.h"

struct qcase {
    const char *in;
    int64_t milli; /* aiq_quantity_cpu_milli */
    int64_t units; /* aiq_quantity_bytes */
};

static const struct qcase qok[] = {
    {"0", 0, 0},
    {"1", 1000, 1},
    {"500m", 500, 1},          /* bytes round up */
    {"1.5", 1500, 2},
    {"64Gi", 68719476736000LL, 68719476736LL},
    {"2e3", 2000000, 2000},
    {"2E3", 2000000, 2000},
    {"1Ki", 1024000, 1024},
    {"1E", 0, 1000000000000000000LL}, /* exa; millis overflow, checked below */
    {"100M", 100000000000LL, 100000000},
    {".5", 500, 1},
    {"+1", 1000, 1},
    {"-1", -1000, -1},
    {"1.", 1000, 1},
    {"0.0001", 1, 1},          /* CPU rounds up to 1m as Kubernetes does */
    {"0.001", 1, 1},
    {"0.0015", 2, 1},
    {"100n", 1, 1},
    {"1u", 1, 1},
    {"1k", 1000000, 1000},
    {"1.5Gi", 1610612736000LL, 1610612736},
    {"0.1Ki", 102400, 103},    /* 102.4 bytes -> 103 */
    {"1e-3", 1, 1},
    {"1e+3", 1000000, 1000},
    {"1e0", 1000, 1},
    {"000012", 12000, 12},
    {"1Ei", 0, 1152921504606846976LL},
    {"7Ei", 0, 8070450532247928832LL},
    {"9223372036854775807", 0, INT64_MAX},
    {"9223372036854775.807", INT64_MAX, 9223372036854776LL},
    {"1e-100000000", 1, 1},    /* a tiny positive value still rounds up */
    {"0e99999", 0, 0},
    {"123456789012345678901234567890e-20", 1234567890124LL, 1234567891LL},
    {"0.0000000000000000000000000000000000000000000000000000000000001", 1, 1}, /* 64 chars */
};

TEST(quantity_accepts) {
    for (size_t i = 0; i < sizeof qok / sizeof qok[0]; i++) {
        int64_t v = -7;
        aiq_err e;
        aiq_err_clear(&e);
        if (!CHECK_INT(aiq_quantity_bytes(qok[i].in, &v, &e), AIQ_OK))
            fprintf(stderr, "    input %s: %s\n", qok[i].in, e.message);
        if (!CHECK_INT(v, qok[i].units)) fprintf(stderr, "    input %s\n", qok[i].in);
        if (qok[i].milli == 0 && qok[i].units != 0) continue; /* overflow case */
        v = -7;
        aiq_err_clear(&e);
        if (!CHECK_INT(aiq_quantity_cpu_milli(qok[i].in, &v, &e), AIQ_OK))
            fprintf(stderr, "    input %s: %s\n", qok[i].in, e.message);
        if (!CHECK_INT(v, qok[i].milli)) fprintf(stderr, "    input %s\n", qok[i].in);
    }
}

struct qbad {
    const char *in;
    const char *msg;
};

static const struct qbad qrej[] = {
    {"1.5.5", "invalid quantity \"1.5.5\": unknown suffix \".5\""},
    {"Gi", "invalid quantity \"Gi\": no number before the suffix"},
    {"1iB", "invalid quantity \"1iB\": unknown suffix \"iB\""},
    {"", "invalid quantity \"\": empty"},
    {"1 Gi", "invalid quantity \"1 Gi\": unknown suffix \" Gi\""},
    {"--1", "invalid quantity \"--1\": no number before the suffix"},
    {"0x10", "invalid quantity \"0x10\": unknown suffix \"x10\""},
    {"1e", "invalid quantity \"1e\": unknown suffix \"e\""},
    {"1e1.5", "invalid quantity \"1e1.5\": unknown suffix \"e1.5\""},
    {"1e+", "invalid quantity \"1e+\": unknown suffix \"e+\""},
    {".", "invalid quantity \".\": no number before the suffix"},
    {"+", "invalid quantity \"+\": no number before the suffix"},
    {"1gi", "invalid quantity \"1gi\": unknown suffix \"gi\""},
    {"1K", "invalid quantity \"1K\": unknown suffix \"K\""},
    {"1Gib", "invalid quantity \"1Gib\": unknown suffix \"Gib\""},
    {" 1", "invalid quantity \" 1\": no number before the suffix"},
    {"1 ", "invalid quantity \"1 \": unknown suffix \" \""},
    {"1\n", "invalid quantity \"1\\x0a\": unknown suffix \"\\x0a\""},
    {"8Ei", "invalid quantity \"8Ei\": too large (more than 9223372036854775807 units)"},
    {"9223372036854775808", "invalid quantity \"9223372036854775808\": too large (more than 9223372036854775807 units)"},
    {"1e19", "invalid quantity \"1e19\": too large (more than 9223372036854775807 units)"},
    {"1e99999999999", "invalid quantity \"1e99999999999\": too large (more than 9223372036854775807 units)"},
    {"12345678901234567890123456789012345678901234567890123456789012345",
     "invalid quantity \"1234567890123456789012345678901234567890123456789012345678901234...\": longer than 64 characters"},
};

TEST(quantity_rejects) {
    for (size_t i = 0; i < sizeof qrej / sizeof qrej[0]; i++) {
        int64_t v = -7;
        aiq_err e;
        aiq_err_clear(&e);
        CHECK_INT(aiq_quantity_bytes(qrej[i].in, &v, &e), AIQ_EINVAL);
        CHECK_INT(e.code, AIQ_EINVAL);
        CHECK_STR(e.message, qrej[i].msg);
        CHECK_INT(v, -7); /* untouched on error */
    }
}

TEST(quantity_cpu_overflow_and_null) {
    int64_t v = 5;
    aiq_err e;
    aiq_err_clear(&e);
    CHECK_INT(aiq_quantity_cpu_milli("1E", &v, &e), AIQ_EINVAL);
    CHECK_STR(e.message, "invalid quantity \"1E\": too large (more than 9223372036854775807 millis)");
    CHECK_INT(aiq_quantity_cpu_milli("9223372036854775.808", &v, NULL), AIQ_EINVAL);
    CHECK_INT(aiq_quantity_cpu_milli(NULL, &v, NULL), AIQ_EINVAL);
    CHECK_INT(v, 5);
    CHECK_INT(aiq_quantity_int("7G", &v, NULL), AIQ_OK);
    CHECK_INT(v, 7000000000LL);
    CHECK_INT(aiq_quantity_scaled("1", 99, &v, NULL), AIQ_EINVAL);
}

TEST(quantity_format) {
    char b[32];
    CHECK_STR(aiq_quantity_format_milli(500, b, sizeof b), "500m");
    CHECK_STR(aiq_quantity_format_milli(2000, b, sizeof b), "2");
    CHECK_STR(aiq_quantity_format_milli(0, b, sizeof b), "0");
    CHECK_STR(aiq_quantity_format_milli(1500, b, sizeof b), "1500m");
    CHECK_STR(aiq_quantity_format_bytes(68719476736LL, b, sizeof b), "64Gi");
    CHECK_STR(aiq_quantity_format_bytes(1024, b, sizeof b), "1Ki");
    CHECK_STR(aiq_quantity_format_bytes(1000, b, sizeof b), "1k");
    CHECK_STR(aiq_quantity_format_bytes(1500, b, sizeof b), "1500");
    CHECK_STR(aiq_quantity_format_bytes(3 * 1000000000LL, b, sizeof b), "3G");
    CHECK_STR(aiq_quantity_format_bytes(0, b, sizeof b), "0");
    CHECK_STR(aiq_quantity_format_bytes(-2048, b, sizeof b), "-2Ki");
    CHECK_STR(aiq_quantity_format_bytes(INT64_MAX, b, sizeof b), "9223372036854775807");
    /* Formatting then parsing gives the same value back. */
    const int64_t vals[] = {1, 999, 1024, 1536, 1000000, 68719476736LL, INT64_MAX};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        int64_t v = 0;
        CHECK_INT(aiq_quantity_bytes(aiq_quantity_format_bytes(vals[i], b, sizeof b), &v, NULL), AIQ_OK);
        CHECK_INT(v, vals[i]);
        CHECK_INT(aiq_quantity_cpu_milli(aiq_quantity_format_milli(vals[i], b, sizeof b), &v, NULL), AIQ_OK);
        CHECK_INT(v, vals[i]);
    }
}

struct dcase {
    const char *in;
    double secs;
};

static const struct dcase dok[] = {
    {"90s", 90},
    {"2h30m", 9000},
    {"1.5h", 5400},
    {"300ms", 0.3},
    {"2d", 172800},
    {"1d12h", 129600},
    {"0", 0},
    {"+0", 0},
    {"0s", 0},
    {"-0", 0},
    {".5s", 0.5},
    {"1.s", 1},
    {"1h1m1s1ms1us1ns", 3661.001001001},
    {"1\xc2\xb5s", 1e-6},
    {"1\xce\xbcs", 1e-6},
    {"+5m", 300},
    {"100ns", 1e-7},
    {"9223372036s", 9223372036},
    {"2562047h", 2562047.0 * 3600},
    {"0.000000001s", 1e-9},
    {"1.0000000000000000000001h", 3600},
};

TEST(duration_accepts) {
    for (size_t i = 0; i < sizeof dok / sizeof dok[0]; i++) {
        double v = -7;
        aiq_err e;
        aiq_err_clear(&e);
        if (!CHECK_INT(aiq_duration_parse(dok[i].in, &v, &e), AIQ_OK))
            fprintf(stderr, "    input %s: %s\n", dok[i].in, e.message);
        if (!CHECK_DBL(v, dok[i].secs, 1e-9)) fprintf(stderr, "    input %s\n", dok[i].in);
    }
}

static const struct qbad drej[] = {
    {"", "invalid duration \"\": empty"},
    {"10", "invalid duration \"10\": missing unit (one of ns, us, ms, s, m, h, d)"},
    {"5x", "invalid duration \"5x\": unknown unit \"x\" (use ns, us, ms, s, m, h or d)"},
    {"5 m", "invalid duration \"5 m\": unknown unit \" m\" (use ns, us, ms, s, m, h or d)"},
    {"1w", "invalid duration \"1w\": unknown unit \"w\" (use ns, us, ms, s, m, h or d)"},
    {"-5m", "invalid duration \"-5m\": must not be negative"},
    {"h", "invalid duration \"h\": expected a number at offset 0"},
    {".s", "invalid duration \".s\": expected a number at offset 1"},
    {"-", "invalid duration \"-\": no number"},
    {"1h-5m", "invalid duration \"1h-5m\": unknown unit \"h-\" (use ns, us, ms, s, m, h or d)"}, /* as Go */
    {"9223372037s", "invalid duration \"9223372037s\": too large"},
    {"2562048h", "invalid duration \"2562048h\": too large"},
    {"99999999999999999999ns", "invalid duration \"99999999999999999999ns\": too large"},
    {"200000d", "invalid duration \"200000d\": too large"},
    {"5000000h5000000h", "invalid duration \"5000000h5000000h\": too large"},
};

TEST(duration_rejects) {
    for (size_t i = 0; i < sizeof drej / sizeof drej[0]; i++) {
        double v = -7;
        aiq_err e;
        aiq_err_clear(&e);
        CHECK_INT(aiq_duration_parse(drej[i].in, &v, &e), AIQ_EINVAL);
        CHECK_STR(e.message, drej[i].msg);
        CHECK_DBL(v, -7, 0);
    }
    double v = 0;
    CHECK_INT(aiq_duration_parse_signed("-1h30m", &v, NULL), AIQ_OK);
    CHECK_DBL(v, -5400, 0);
    CHECK_INT(aiq_duration_parse(NULL, &v, NULL), AIQ_EINVAL);
}

TEST(duration_format) {
    char b[48];
    CHECK_STR(aiq_duration_format(9000, b, sizeof b), "2h30m");
    CHECK_STR(aiq_duration_format(90, b, sizeof b), "1m30s");
    CHECK_STR(aiq_duration_format(0.3, b, sizeof b), "0.3s");
    CHECK_STR(aiq_duration_format(0, b, sizeof b), "0s");
    CHECK_STR(aiq_duration_format(3600, b, sizeof b), "1h");
    CHECK_STR(aiq_duration_format(3601.25, b, sizeof b), "1h1.25s");
    CHECK_STR(aiq_duration_format(-90, b, sizeof b), "-1m30s");
    CHECK_STR(aiq_duration_format(172800, b, sizeof b), "48h");
    /* Formatting then parsing is the identity at millisecond resolution. */
    const double vals[] = {0.001, 1, 59.999, 86399, 1e6};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        double v = -1;
        CHECK_INT(aiq_duration_parse(aiq_duration_format(vals[i], b, sizeof b), &v, NULL), AIQ_OK);
        CHECK_DBL(v, vals[i], 1e-9);
    }
    /* In the last millisecond below the parser's largest value (2^63-1 ns)
     * the formatter gives the largest whole millisecond rather than one
     * the parser would refuse (found by fuzz_quantity). */
    double top = -1;
    CHECK_INT(aiq_duration_parse("9223372036854758\xce\xbcs", &top, NULL), AIQ_OK);
    CHECK_STR(aiq_duration_format(top, b, sizeof b), "2562047h47m16.854s");
    CHECK_INT(aiq_duration_parse(b, &top, NULL), AIQ_OK);
    CHECK_STR(aiq_duration_format(-9223372036.8547, b, sizeof b), "-2562047h47m16.854s");
}

/* GPU memory: whole MiB only, named in the error; formatted back with the
 * largest exact binary suffix. */
TEST(quantity_mib) {
    int64_t v = -7;
    aiq_err e;
    CHECK(aiq_quantity_mib("40Gi", &v, NULL) == AIQ_OK && v == 40960);
    CHECK(aiq_quantity_mib("81920Mi", &v, NULL) == AIQ_OK && v == 81920);
    CHECK(aiq_quantity_mib("1048576", &v, NULL) == AIQ_OK && v == 1);
    CHECK(aiq_quantity_mib("0", &v, NULL) == AIQ_OK && v == 0);
    CHECK(aiq_quantity_mib("0.5Gi", &v, NULL) == AIQ_OK && v == 512);
    v = -7;
    aiq_err_clear(&e);
    CHECK(aiq_quantity_mib("1.5Mi", &v, &e) == AIQ_EINVAL && v == -7);
    CHECK_STR(e.message, "invalid GPU memory \"1.5Mi\": must be a whole number of MiB "
                         "(like \"40Gi\" or \"81920Mi\")");
    aiq_err_clear(&e);
    CHECK(aiq_quantity_mib("40G", &v, &e) == AIQ_EINVAL);
    aiq_err_clear(&e);
    CHECK(aiq_quantity_mib("-1Gi", &v, &e) == AIQ_EINVAL);
    CHECK_STR(e.message, "invalid GPU memory \"-1Gi\": must be >= 0");
    aiq_err_clear(&e);
    CHECK(aiq_quantity_mib("Gi", &v, &e) == AIQ_EINVAL);
    char b[24];
    CHECK_STR(aiq_quantity_format_mib(40960, b, sizeof b), "40Gi");
    CHECK_STR(aiq_quantity_format_mib(1536, b, sizeof b), "1536Mi");
    CHECK_STR(aiq_quantity_format_mib(1048576, b, sizeof b), "1Ti");
    CHECK_STR(aiq_quantity_format_mib(0, b, sizeof b), "0");
    CHECK_STR(aiq_quantity_format_mib(INT64_MAX, b, sizeof b), "9223372036854775807Mi");
}
