/* test_quantity.c -- quantities as the API server parses, rounds,
 * compares and prints them (test/apiserver/quantity.c). The expected
 * canonical forms, rounded forms and errors were produced by
 * k8s.io/apimachinery v0.34.4's resource.ParseQuantity, String(),
 * RoundUp(-3) and MilliValue() on the same inputs. */
#include "test/apiserver/quantity.h"
#include "test/unit/th.h"

TEST(quantity_canonical_forms_and_rounding) {
    static const struct { const char *in, *canon, *milli; int integer; } t[] = {
        {"0", "0", "0", 1},          {"1", "1", "1", 1},
        {"+1", "+1", "+1", 1},       {"-1", "-1", "-1", 1},
        {"1000m", "1", "1", 1},      {"2000m", "2", "2", 1},
        {"1500m", "1500m", "1500m", 0}, {"0.5", "500m", "500m", 0},
        {".5", "500m", "500m", 0},   {"1.", "1.", "1.", 1},
        {".", "0", "0", 1},          {"1e3", "1e3", "1e3", 1},
        {"10e3", "10e3", "10e3", 1}, {"1E", "1E", "1E", 1},
        {"1Ki", "1Ki", "1Ki", 1},    {"1024", "1024", "1024", 1},
        {"1024Mi", "1Gi", "1Gi", 1}, {"1536Mi", "1536Mi", "1536Mi", 1},
        {"0.5Gi", "512Mi", "512Mi", 1}, {"1.5Ki", "1536", "1536", 1},
        {"8Gi", "8Gi", "8Gi", 1},    {"100m", "100m", "100m", 0},
        {"1n", "1n", "1m", 0},       {"5u", "5u", "1m", 0},
        {"123n", "123n", "1m", 0},   {"1000000n", "1m", "1m", 0},
        {"999999999n", "999999999n", "1", 1}, {"007", "007", "007", 1},
        {"-0", "0", "0", 1},         {"1e-3", "1e-3", "1e-3", 0},
        {"1.5e3", "1500", "1500", 1}, {"1.0001", "1000100u", "1001m", 0},
        {"2.5", "2500m", "2500m", 0}, {"500Mi", "500Mi", "500Mi", 1},
        {"1023Ki", "1023Ki", "1023Ki", 1}, {"3e0", "3e0", "3e0", 1},
        {"1e+2", "100", "100", 1},   {"0.1Ki", "102400m", "102400m", 0},
        {"-1Gi", "-1Gi", "-1Gi", 1}, {"-500m", "-500m", "-500m", 0},
        {" 2 ", "2", "2", 1}, /* trimmed, as the JSON decoder trims */
        {"1M", "1M", "1M", 1},
        {"1500k", "1500k", "1500k", 1}, {"1000", "1k", "1k", 1},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        struct qty q, r;
        const char *msg = NULL;
        char a[64], b[64];
        if (!CHECK_INT(qty_parse(t[i].in, &q, &msg), 0)) {
            fprintf(stderr, "    input [%s]: %s\n", t[i].in, msg ? msg : "");
            continue;
        }
        if (!CHECK_STR(qty_string(&q, a, sizeof a), t[i].canon)) fprintf(stderr, "    input [%s]\n", t[i].in);
        r = q;
        qty_round_up(&r, -3);
        if (!CHECK_STR(qty_string(&r, b, sizeof b), t[i].milli)) fprintf(stderr, "    input [%s]\n", t[i].in);
        if (!CHECK_INT(qty_is_integer(&q), t[i].integer)) fprintf(stderr, "    input [%s]\n", t[i].in);
    }
}

TEST(quantity_errors_word_as_parsequantity) {
    static const struct { const char *in, *msg; } t[] = {
        {"", QTY_ERR_FORMAT},      {"abc", QTY_ERR_FORMAT},   {"1 Gi", QTY_ERR_FORMAT},
        {"1K", QTY_ERR_SUFFIX},    {"1Ki2", QTY_ERR_SUFFIX},  {"1e", QTY_ERR_SUFFIX},
        {"1x", QTY_ERR_FORMAT},    {"--1", QTY_ERR_SUFFIX},   {"1.2.3", QTY_ERR_FORMAT},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        struct qty q;
        const char *msg = NULL;
        if (!CHECK_INT(qty_parse(t[i].in, &q, &msg), -1)) {
            fprintf(stderr, "    input [%s] was accepted\n", t[i].in);
            continue;
        }
        if (!CHECK_STR(msg, t[i].msg)) fprintf(stderr, "    input [%s]\n", t[i].in);
    }
    CHECK(strstr(QTY_ERR_FORMAT, "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$") != NULL);
}

TEST(quantity_compare_exactly) {
    struct qty a, b;
    const char *msg;
    CHECK_INT(qty_parse("1", &a, &msg), 0);
    CHECK_INT(qty_parse("1000m", &b, &msg), 0);
    CHECK_INT(qty_cmp(&a, &b), 0);
    CHECK_INT(qty_parse("1001m", &b, &msg), 0);
    CHECK_INT(qty_cmp(&a, &b), -1);
    CHECK_INT(qty_cmp(&b, &a), 1);
    CHECK_INT(qty_parse("1Gi", &a, &msg), 0);
    CHECK_INT(qty_parse("1073741824", &b, &msg), 0);
    CHECK_INT(qty_cmp(&a, &b), 0);
    CHECK_INT(qty_parse("1G", &b, &msg), 0);
    CHECK_INT(qty_cmp(&a, &b), 1);
    /* far past int64: capped at 2^63-1 units, still ordered */
    CHECK_INT(qty_parse("99999999999999999999999", &a, &msg), 0);
    CHECK_INT(qty_parse("9E", &b, &msg), 0);
    CHECK_INT(qty_cmp(&a, &b), 1);
}
