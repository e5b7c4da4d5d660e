/* field_err.c -- "field: problem" validation errors (see field_err.h). */
#include "common/field_err.h"

#include <stdarg.h>
#include <stdio.h>

aiq_rc aiq_field_err(aiq_err *err, const char *field, const char *fmt, ...) {
    char tail[sizeof err->message];
    va_list ap;
    if (!err || err->code != AIQ_OK) return AIQ_EINVAL;
    va_start(ap, fmt);
    vsnprintf(tail, sizeof tail, fmt, ap);
    va_end(ap);
    return aiq_err_field(err, AIQ_EINVAL, field, "%s: %s", field, tail);
}
