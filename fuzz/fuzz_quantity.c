/* fuzz_quantity.c -- libFuzzer target for common/units.c: quantities,
 * durations and RFC 3339 times never crash, and whatever parses survives a
 * format -> parse round trip unchanged (quantities exactly, durations to
 * the millisecond the formatter keeps). Seeds: fuzz/corpus/quantity/. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/aiq_time.h"
#include "common/units.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char s[256], buf[64];
    int64_t v = 0, w = 0;
    double d = 0, e = 0;

    if (size >= sizeof s) size = sizeof s - 1;
    memcpy(s, data, size);
    s[size] = '\0';

    if (aiq_quantity_bytes(s, &v, NULL) == AIQ_OK) {
        if (aiq_quantity_bytes(aiq_quantity_format_bytes(v, buf, sizeof buf), &w, NULL) != AIQ_OK ||
            w != v)
            abort();
    }
    if (aiq_quantity_cpu_milli(s, &v, NULL) == AIQ_OK) {
        if (aiq_quantity_cpu_milli(aiq_quantity_format_milli(v, buf, sizeof buf), &w, NULL) !=
                AIQ_OK ||
            w != v)
            abort();
    }
    (void)aiq_quantity_int(s, &v, NULL);
    for (int scale = -9; scale <= 18; scale += 9) (void)aiq_quantity_scaled(s, scale, &v, NULL);

    if (aiq_duration_parse_signed(s, &d, NULL) == AIQ_OK) {
        if (!isfinite(d)) abort();
        /* The formatter keeps the millisecond and never rounds past the
         * parser's largest value (2^63-1 ns, 9223372036.854775807 s): in
         * the last millisecond of the range it gives the largest whole
         * millisecond instead of rounding up. */
        const double top = 9223372036.854;
        if (aiq_duration_parse_signed(aiq_duration_format(d, buf, sizeof buf), &e, NULL) !=
            AIQ_OK)
            abort();
        bool clamped = fabs(d) > top && fabs(fabs(e) - top) < 1e-6 && (e < 0) == (d < 0);
        if (fabs(e - d) > 0.0005 + fabs(d) * 1e-15 && !clamped)
            abort();
        /* The unsigned parser agrees, and refuses exactly the negatives. */
        double nn = -1;
        aiq_rc rc = aiq_duration_parse(s, &nn, NULL);
        if (d < 0 ? rc == AIQ_OK : (rc != AIQ_OK || nn != d)) abort();
    }
    if (aiq_time_parse(s, &d, NULL) == AIQ_OK && !isfinite(d)) abort();
    (void)aiq_rfc3339(buf, sizeof buf, d, 3);
    return 0;
}
