/* th.c -- registry, checks and main() of the unit-test harness (th.h). */
#include "test/unit/th.h"

#include <math.h>
#include <stdlib.h>

#define TH_MAX 4096

static struct { const char *name; th_fn fn; } th_tests[TH_MAX];
static int th_ntests;
static int th_cur_failed;

void th_register(const char *name, th_fn fn) {
    if (th_ntests == TH_MAX) {
        fprintf(stderr, "th: too many tests (max %d)\n", TH_MAX);
        abort();
    }
    th_tests[th_ntests].name = name;
    th_tests[th_ntests].fn = fn;
    th_ntests++;
}

int th_check(int cond, const char *expr, const char *file, int line) {
    if (!cond) {
        th_cur_failed++;
        fprintf(stderr, "  FAIL %s:%d: %s\n", file, line, expr);
    }
    return cond;
}

int th_check_str(const char *a, const char *b, const char *ea, const char *eb,
                 const char *file, int line) {
    int ok = (a == NULL && b == NULL) || (a && b && strcmp(a, b) == 0);
    if (!ok) {
        th_cur_failed++;
        fprintf(stderr, "  FAIL %s:%d: %s == %s\n    got:      \"%s\"\n    expected: \"%s\"\n",
                file, line, ea, eb, a ? a : "(null)", b ? b : "(null)");
    }
    return ok;
}

int th_check_long(long long a, long long b, const char *ea, const char *eb,
                  const char *file, int line) {
    if (a != b) {
        th_cur_failed++;
        fprintf(stderr, "  FAIL %s:%d: %s == %s\n    got: %lld expected: %lld\n",
                file, line, ea, eb, a, b);
        return 0;
    }
    return 1;
}

int th_check_dbl(double a, double b, double eps, const char *ea,
                 const char *eb, const char *file, int line) {
    int ok = (isnan(a) && isnan(b)) || fabs(a - b) <= eps ||
             (isinf(a) && isinf(b) && (a > 0) == (b > 0));
    if (!ok) {
        th_cur_failed++;
        fprintf(stderr, "  FAIL %s:%d: %s == %s (eps %g)\n    got: %.17g expected: %.17g\n",
                file, line, ea, eb, eps, a, b);
    }
    return ok;
}

const char *th_srcdir(void) {
    const char *s = getenv("AIQ_SRC");
    return s && *s ? s : ".";
}

int main(int argc, char **argv) {
    int passed = 0, failed = 0;
    const char *filter = argc > 1 ? argv[1] : NULL;
    for (int i = 0; i < th_ntests; i++) {
        if (filter && !strstr(th_tests[i].name, filter)) continue;
        th_cur_failed = 0;
        th_tests[i].fn();
        if (th_cur_failed) {
            failed++;
            fprintf(stderr, "FAIL %s\n", th_tests[i].name);
        } else {
            passed++;
            if (getenv("TH_VERBOSE")) fprintf(stderr, "ok   %s\n", th_tests[i].name);
        }
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
