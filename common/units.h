/* units.h -- exact parsers and formatters for Kubernetes quantities
 * ("500m", "64Gi", "2e3") and Go-style durations ("2h30m", "1.5h").
 * Pure C, no allocation.
 *
 * Quantity grammar (k8s.io/apimachinery resource.Quantity):
 *   quantity := [+-]? number suffix
 *   number   := digits | digits "." digits? | "." digits
 *   suffix   := "" | n u m k M G T P E          (decimal SI, 10^-9 .. 10^18)
 *             | Ki Mi Gi Ti Pi Ei                 (binary SI, 2^10 .. 2^60)
 *             | ("e" | "E") [+-]? digits          (decimal exponent)
 * "1E" is one exa; "1e" has no exponent digits and is rejected. Input longer
 * than AIQ_QUANTITY_MAX_LEN characters is rejected (the API server has no
 * such cap, but nothing legitimate comes near it).
 *
 * Rounding: the value is computed exactly, then scaled to the target unit
 * and rounded up (away from zero), like resource.Quantity's MilliValue()
 * and Value(): cpu "0.0001" -> 1m, memory "1.5" -> 2 bytes, "100m" of
 * memory -> 1 byte. A result that does not fit int64 is an error
 * (AIQ_EINVAL, "too large"), never a wrap-around.
 *
 * Durations follow Go's time.ParseDuration: a sequence of decimal numbers,
 * each with an optional fraction and a unit: ns, us (or µs), ms, s, m, h,
 * plus our documented extension d = 24h; a single "0" needs no unit. The
 * result is exact in integer nanoseconds (like Go) and returned as double
 * seconds; more than 2^63-1 ns (~292 years) is rejected as too large. */
#ifndef AIQ_UNITS_H
#define AIQ_UNITS_H

#include <stddef.h>
#include <stdint.h>

#include "common/aiq_err.h"

#define AIQ_QUANTITY_MAX_LEN 64
#define AIQ_DURATION_MAX_LEN 64

/* Parses quantity s and returns in *out its value in units of 10^scale10
 * (scale10 = -3 for millis, 0 for plain units), rounded up. On error returns
 * AIQ_EINVAL with a message naming the quoted input and the problem
 * (`invalid quantity "1 Gi": unknown suffix " Gi"`), and leaves *out
 * untouched. s may be NULL (an error). scale10 must be within -9..18. */
aiq_rc aiq_quantity_scaled(const char *s, int scale10, int64_t *out,
                           aiq_err *err);

/* CPU: "500m" -> 500, "2" -> 2000, "0.0001" -> 1. */
aiq_rc aiq_quantity_cpu_milli(const char *s, int64_t *milli, aiq_err *err);

/* Memory: "64Gi" -> 68719476736, "1k" -> 1000, "1.5" -> 2. */
aiq_rc aiq_quantity_bytes(const char *s, int64_t *bytes, aiq_err *err);

/* A count given as a quantity ("7G" parameters -> 7000000000); same
 * rounding as aiq_quantity_bytes. */
aiq_rc aiq_quantity_int(const char *s, int64_t *out, aiq_err *err);

/* GPU memory: a quantity that is a whole, non-negative number of MiB
 * ("40Gi" -> 40960, "81920Mi" -> 81920, an integer is bytes). Errors
 * (AIQ_EINVAL, *mib untouched) name the quoted input: not a quantity,
 * negative, or not a whole MiB ("1.5Mi", "1000000"). */
aiq_rc aiq_quantity_mib(const char *s, int64_t *mib, aiq_err *err);

/* The largest MiB count aiq_quantity_mib reads back (it counts in
 * thousandths of a byte: INT64_MAX / (1000 * 2^20), about 8 PiB). */
#define AIQ_QUANTITY_MIB_MAX (INT64_MAX / ((int64_t)1048576 * 1000))

/* Formats MiB as a quantity with the largest exact binary suffix:
 * 40960 -> "40Gi", 81920 -> "80Gi", 1536 -> "1536Mi". Returns buf
 * (cap bytes; 24 always suffice). */
char *aiq_quantity_format_mib(int64_t mib, char *buf, size_t cap);

/* A size for people: v counted in units of 2^(10*unit) bytes (unit 0 =
 * bytes, 2 = MiB), shown in the largest of B, KiB, MiB, GiB, TiB, PiB,
 * EiB it reaches, with one decimal unless whole: (512, 2) -> "512 MiB",
 * (40000, 2) -> "39.1 GiB", (40960, 2) -> "40 GiB", (1536, 0) -> "1.5 KiB".
 * unit is clamped to 0..6. Writes into buf (cap bytes; 32 always suffice)
 * and returns buf. */
char *aiq_size_text(int64_t v, int unit, char *buf, size_t cap);

/* Formats millis the way kubectl shows CPU: 2000 -> "2", 500 -> "500m".
 * Writes into buf (cap bytes; 24 always suffice) and returns buf. */
char *aiq_quantity_format_milli(int64_t milli, char *buf, size_t cap);

/* Formats a byte count with the largest exact suffix, binary first:
 * 68719476736 -> "64Gi", 1000 -> "1k", 1500 -> "1500". Returns buf. */
char *aiq_quantity_format_bytes(int64_t bytes, char *buf, size_t cap);

/* Parses a duration that must be >= 0 ("90s", "2h30m", "1.5h", "300ms",
 * "2d") into seconds. Errors (AIQ_EINVAL, *secs untouched): empty, missing
 * or unknown unit, malformed number, negative, too large. */
aiq_rc aiq_duration_parse(const char *s, double *secs, aiq_err *err);

/* Like aiq_duration_parse, but a leading '-' is allowed. */
aiq_rc aiq_duration_parse_signed(const char *s, double *secs, aiq_err *err);

/* Formats seconds as a compact duration with millisecond resolution:
 * 9000 -> "2h30m", 90 -> "1m30s", 0.3 -> "0.3s", 0 -> "0s". Returns buf
 * (cap bytes; 40 always suffice). */
char *aiq_duration_format(double secs, char *buf, size_t cap);

#endif
