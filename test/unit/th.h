/* th.h -- aiq's small unit-test harness.
 *
 * A test file defines tests with TEST(name) { ... } and checks with CHECK*;
 * th.c supplies main(), which runs every registered test (or those whose
 * name contains argv[1]) and ends with the line "N passed, N failed".
 * A test passes when none of its checks failed. */
#ifndef AIQ_TH_H
#define AIQ_TH_H

#include <stdio.h>
#include <string.h>

typedef void (*th_fn)(void);
void th_register(const char *name, th_fn fn);
/* Returns cond; records a failure with the expression text when it is 0. */
int th_check(int cond, const char *expr, const char *file, int line);
int th_check_str(const char *a, const char *b, const char *ea, const char *eb,
                 const char *file, int line);
int th_check_long(long long a, long long b, const char *ea, const char *eb,
                  const char *file, int line);
int th_check_dbl(double a, double b, double eps, const char *ea,
                 const char *eb, const char *file, int line);
/* Directory of the source tree (for fixtures), from $AIQ_SRC or ".". */
const char *th_srcdir(void);

#define TEST(name)                                                  \
    static void name(void);                                         \
    __attribute__((constructor)) static void name##__reg(void) {    \
        th_register(#name, name);                                   \
    }                                                               \
    static void name(void)

#define CHECK(c) th_check(!!(c), #c, __FILE__, __LINE__)
#define CHECK_STR(a, b) th_check_str((a), (b), #a, #b, __FILE__, __LINE__)
#define CHECK_INT(a, b) \
    th_check_long((long long)(a), (long long)(b), #a, #b, __FILE__, __LINE__)
#define CHECK_DBL(a, b, eps) \
    th_check_dbl((a), (b), (eps), #a, #b, __FILE__, __LINE__)

#endif
