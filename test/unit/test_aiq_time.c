/* test_aiq_time.c -- RFC 3339 read and written, the monotonic clock and
 * deadlines (common/aiq_time.c). */
#include <math.h>

#include "common/aiq_time.h"
#include "test/unit/th.h"

TEST(time_rfc3339) {
    double t = -1;
    char b[40];
    CHECK_INT(aiq_time_parse("1970-01-01T00:00:00Z", &t, NULL), AIQ_OK);
    CHECK_DBL(t, 0, 0);
    CHECK_INT(aiq_time_parse("2024-05-01T10:00:00Z", &t, NULL), AIQ_OK);
    CHECK_DBL(t, 1714557600, 0);
    CHECK_STR(aiq_rfc3339(b, sizeof b, t, 0), "2024-05-01T10:00:00Z");
    CHECK_INT(aiq_time_parse("2024-05-01T12:00:00.250000+02:00", &t, NULL), AIQ_OK);
    CHECK_DBL(t, 1714557600.25, 1e-6);
    CHECK_INT(aiq_time_parse("2024-02-29T00:00:00Z", &t, NULL), AIQ_OK);
    CHECK_STR(aiq_rfc3339(b, sizeof b, t, 0), "2024-02-29T00:00:00Z");
    CHECK_STR(aiq_rfc3339(b, sizeof b, -1, 0), "1970-01-01T00:00:00Z"); /* clamped */
    aiq_err e;
    aiq_err_clear(&e);
    t = 5;
    CHECK_INT(aiq_time_parse("2023-02-29T00:00:00Z", &t, &e), AIQ_EINVAL);
    CHECK_STR(e.message, "invalid time \"2023-02-29T00:00:00Z\": want RFC 3339 like \"2024-05-01T10:00:00Z\"");
    const char *bad[] = {"", "2024-05-01", "2024-05-01T10:00:00", "2024-13-01T00:00:00Z",
                         "2024-05-01T24:00:00Z", "2024-05-01T10:00:00.Z", "2024-05-01 10:00:00Z",
                         "2024-05-01T10:00:00Zjunk", NULL};
    for (int i = 0; bad[i]; i++) CHECK_INT(aiq_time_parse(bad[i], &t, NULL), AIQ_EINVAL);
    CHECK_DBL(t, 5, 0);
}

TEST(rfc3339_fraction_and_clamp) {
    char b[40];
    CHECK_STR(aiq_rfc3339(b, sizeof b, 1714557600.25, 3), "2024-05-01T10:00:00.250Z");
    CHECK_STR(aiq_rfc3339(b, sizeof b, 1714557600.123456, 6), "2024-05-01T10:00:00.123456Z");
    CHECK_STR(aiq_rfc3339(b, sizeof b, 1714557600.9999, 3), "2024-05-01T10:00:00.999Z");
    CHECK_STR(aiq_rfc3339(b, sizeof b, NAN, 0), "1970-01-01T00:00:00Z");
    CHECK_STR(aiq_rfc3339(b, sizeof b, INFINITY, 0), "9999-12-31T23:59:59Z");
    CHECK_STR(aiq_rfc3339(b, sizeof b, 1e300, 3), "9999-12-31T23:59:59.000Z");
    char small[8] = "x";
    CHECK_STR(aiq_rfc3339(small, sizeof small, 0, 0), "1970-01"); /* cut, terminated */
    CHECK_STR(aiq_rfc3339(small, 0, 0, 0), "1970-01");          /* cap 0: untouched */
}

TEST(mono_and_deadline) {
    double a = aiq_mono_s(), b = aiq_mono_s();
    CHECK(a > 0 && b >= a);
    struct timespec now, dl;
    clock_gettime(CLOCK_MONOTONIC, &now);
    dl = aiq_deadline(CLOCK_MONOTONIC, 1.75);
    double d = (double)(dl.tv_sec - now.tv_sec) + (dl.tv_nsec - now.tv_nsec) / 1e9;
    CHECK(d >= 1.75 && d < 2.0);
    CHECK(dl.tv_nsec >= 0 && dl.tv_nsec < 1000000000L);
    dl = aiq_deadline(CLOCK_MONOTONIC, -3); /* a past deadline is "now" */
    CHECK(dl.tv_sec >= now.tv_sec);
    dl = aiq_deadline(CLOCK_REALTIME, 0.5);
    CHECK(dl.tv_nsec >= 0 && dl.tv_nsec < 1000000000L);
}
