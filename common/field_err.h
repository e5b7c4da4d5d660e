/* field_err.h -- one helper for validation errors in the shape every aiq
 * parser and validator uses: "<field path>: <problem>", with err->field set
 * to the path and the code AIQ_EINVAL
 * ("spec.resources.gpus: must be >= 0, got -3"). */
#ifndef AIQ_FIELD_ERR_H
#define AIQ_FIELD_ERR_H

#include "common/aiq_err.h"

/* Records "field: <printf(fmt, ...)>" with err->field = field and code
 * AIQ_EINVAL, unless err already holds an error (the first error wins).
 * err may be NULL. Returns AIQ_EINVAL. */
aiq_rc aiq_field_err(aiq_err *err, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
