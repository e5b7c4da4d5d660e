/* test_humantime.c -- ages, RFC 3339 and Go durations (humantime.c). */
#include "test/apiserver/humantime.h"
#include "test/unit/th.h"

static const char *hd(double s) {
    static char buf[32];
    human_duration(s, buf, sizeof buf);
    return buf;
}

TEST(human_duration_bands) {
    /* Each band of duration.HumanDuration, both sides of each boundary. */
    CHECK_STR(hd(-5), "<invalid>");
    CHECK_STR(hd(-2), "<invalid>");
    CHECK_STR(hd(-1.9), "0s");
    CHECK_STR(hd(-0.5), "0s");
    CHECK_STR(hd(0), "0s");
    CHECK_STR(hd(0.9), "0s");
    CHECK_STR(hd(45), "45s");
    CHECK_STR(hd(119), "119s");
    CHECK_STR(hd(120), "2m");
    CHECK_STR(hd(185), "3m5s");
    CHECK_STR(hd(599), "9m59s");
    CHECK_STR(hd(600), "10m");
    CHECK_STR(hd(659), "10m");
    CHECK_STR(hd(3 * 3600 - 1), "179m");
    CHECK_STR(hd(3 * 3600), "3h");
    CHECK_STR(hd(3 * 3600 + 5 * 60 + 59), "3h5m");
    CHECK_STR(hd(8 * 3600 - 1), "7h59m");
    CHECK_STR(hd(8 * 3600), "8h");
    CHECK_STR(hd(47 * 3600 + 3599), "47h");
    CHECK_STR(hd(48 * 3600), "2d");
    CHECK_STR(hd(3 * 86400 + 4 * 3600), "3d4h");
    CHECK_STR(hd(8 * 86400 - 1), "7d23h");
    CHECK_STR(hd(8 * 86400), "8d");
    CHECK_STR(hd(729 * 86400), "729d");
    CHECK_STR(hd(730 * 86400), "2y");
    CHECK_STR(hd(740 * 86400), "2y10d");
    CHECK_STR(hd(8 * 365 * 86400 - 1), "7y364d");
    CHECK_STR(hd(8 * 365 * 86400), "8y");
    CHECK_STR(hd(30 * 365 * 86400.0), "30y");
}

TEST(human_duration_small_buffer) {
    char b[3];
    human_duration(185, b, sizeof b);
    CHECK_STR(b, "3m");
}

TEST(rfc3339_format) {
    char b[32];
    rfc3339(0, b, sizeof b);
    CHECK_STR(b, "1970-01-01T00:00:00Z");
    rfc3339(1795256191.75, b, sizeof b);
    CHECK_STR(b, "2026-11-21T10:16:31Z");
    rfc3339(951782400, b, sizeof b); /* leap day 2000 */
    CHECK_STR(b, "2000-02-29T00:00:00Z");
}

TEST(rfc3339_parse_forms) {
    CHECK_DBL(rfc3339_parse("2026-11-21T10:16:31Z"), 1795256191, 0);
    CHECK_DBL(rfc3339_parse("2026-11-21T10:16:31.25Z"), 1795256191.25, 1e-6);
    CHECK_DBL(rfc3339_parse("2026-11-21T12:16:31+02:00"), 1795256191, 0);
    CHECK_DBL(rfc3339_parse("2026-11-21T05:46:31-04:30"), 1795256191, 0);
    CHECK_DBL(rfc3339_parse("2026-11-21t10:16:31z"), 1795256191, 0);
    CHECK_DBL(rfc3339_parse("2000-02-29T00:00:00Z"), 951782400, 0);
    /* round trip */
    char b[32];
    rfc3339(rfc3339_parse("2031-07-04T23:59:59Z"), b, sizeof b);
    CHECK_STR(b, "2031-07-04T23:59:59Z");
}

TEST(rfc3339_parse_errors) {
    CHECK_DBL(rfc3339_parse(""), -1, 0);
    CHECK_DBL(rfc3339_parse(NULL), -1, 0);
    CHECK_DBL(rfc3339_parse("2026-11-21"), -1, 0);
    CHECK_DBL(rfc3339_parse("2026-11-21T10:16:31"), -1, 0);   /* no zone */
    CHECK_DBL(rfc3339_parse("2026-13-21T10:16:31Z"), -1, 0);  /* month */
    CHECK_DBL(rfc3339_parse("2026-02-29T10:16:31Z"), -1, 0);  /* not leap */
    CHECK_DBL(rfc3339_parse("2026-11-21T24:00:00Z"), -1, 0);
    CHECK_DBL(rfc3339_parse("2026-11-21T10:16:31.Z"), -1, 0);
    CHECK_DBL(rfc3339_parse("2026-11-21T10:16:31Zjunk"), -1, 0);
    CHECK_DBL(rfc3339_parse("2026-11-21T10:16:31+0200"), -1, 0);
}

TEST(go_duration_parse) {
    double v = -7;
    CHECK_INT(human_parse_duration("30s", &v), 0);
    CHECK_DBL(v, 30, 0);
    CHECK_INT(human_parse_duration("1h30m", &v), 0);
    CHECK_DBL(v, 5400, 0);
    CHECK_INT(human_parse_duration("1.5h", &v), 0);
    CHECK_DBL(v, 5400, 1e-9);
    CHECK_INT(human_parse_duration("250ms", &v), 0);
    CHECK_DBL(v, 0.25, 1e-12);
    CHECK_INT(human_parse_duration("-2m", &v), 0);
    CHECK_DBL(v, -120, 0);
    CHECK_INT(human_parse_duration("0", &v), 0);
    CHECK_DBL(v, 0, 0);
    CHECK_INT(human_parse_duration("2h45m10.5s", &v), 0);
    CHECK_DBL(v, 9910.5, 1e-9);
    CHECK_INT(human_parse_duration("10us", &v), 0);
    CHECK_DBL(v, 1e-5, 1e-15);
    v = 42;
    CHECK_INT(human_parse_duration("30", &v), -1);
    CHECK_INT(human_parse_duration("", &v), -1);
    CHECK_INT(human_parse_duration("s", &v), -1);
    CHECK_INT(human_parse_duration("5d", &v), -1);
    CHECK_INT(human_parse_duration("1h 30m", &v), -1);
    CHECK_DBL(v, 42, 0);
}
