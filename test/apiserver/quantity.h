/* quantity.h -- Kubernetes resource quantities as the API server handles
 * them (k8s.io/apimachinery resource.Quantity): parsed with
 * ParseQuantity's grammar, suffix table and error wording, rounded up to
 * nano precision and capped at 2^63-1 units, compared exactly, and
 * printed in canonical form ("1000m" -> "1", "1024Mi" -> "1Gi",
 * "0.5" -> "500m"), which is what a real server stores and returns.
 *
 * Pure C, no allocation. Values are kept as a signed count of nano-units
 * in a 128-bit integer, exact for everything ParseQuantity accepts below
 * the cap; inputs with more than ~36 significant digits saturate (a real
 * server would keep them exact, but nothing legitimate has that many). */
#ifndef AIQ_QUANTITY_H
#define AIQ_QUANTITY_H

#include <stdbool.h>
#include <stddef.h>

enum qty_format { QTY_DECIMAL_SI, QTY_BINARY_SI, QTY_DECIMAL_EXP };

struct qty {
    __int128 nanos;          /* value * 10^9, rounded up (away from zero) */
    enum qty_format format;  /* from the suffix: decides the canonical form */
    bool keep_text;          /* the input is already the string String()
                              * returns (ParseQuantity caches it) */
    char text[64];           /* the input when keep_text */
};

/* The error messages of resource.ParseQuantity. */
#define QTY_ERR_FORMAT "quantities must match the regular expression " \
    "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
#define QTY_ERR_NUMERIC "unable to parse quantity's numeric part"
#define QTY_ERR_SUFFIX "unable to parse quantity's suffix"

/* Parses s (surrounding spaces allowed, as the JSON decoder trims them)
 * into *q. Returns 0, or -1 with *msg set to one of the QTY_ERR_ strings
 * (q is then unspecified). */
int qty_parse(const char *s, struct qty *q, const char **msg);

/* Rounds q up (away from zero) to a multiple of 10^scale10 units
 * (-9 <= scale10 <= 0), as SetDefaults_ResourceList does with -3. */
void qty_round_up(struct qty *q, int scale10);

/* The canonical text of q (Quantity.String()) into buf; returns buf.
 * 48 bytes always suffice. */
char *qty_string(const struct qty *q, char *buf, size_t cap);

/* -1, 0 or 1 as a is less than, equal to or greater than b. */
int qty_cmp(const struct qty *a, const struct qty *b);

/* True when q is a whole number of units (MilliValue() % 1000 == 0). */
bool qty_is_integer(const struct qty *q);

#endif
