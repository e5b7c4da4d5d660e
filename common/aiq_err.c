/* aiq_err.c -- error names and the helpers that fill aiq_err. */
#include "common/aiq_err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const aiq_err_names[AIQ__NCODES] = {
    [AIQ_OK] = "ok",
    [AIQ_ENOMEM] = "out of memory",
    [AIQ_EINVAL] = "invalid input",
    [AIQ_ETOOBIG] = "input too large",
    [AIQ_EPARSE] = "parse error",
    [AIQ_ENOTFOUND] = "not found",
    [AIQ_EEXIST] = "already exists",
    [AIQ_ECONFLICT] = "conflict",
    [AIQ_EIO] = "I/O error",
    [AIQ_EHTTP] = "HTTP error",
    [AIQ_EDB] = "database error",
    [AIQ_EGONE] = "resource version gone",
    [AIQ_ELIMIT] = "limit exceeded",
    [AIQ_EQUOTA] = "quota exceeded",
    [AIQ_ESTATE] = "invalid state",
    [AIQ_EUNSUPPORTED] = "unsupported",
    [AIQ_ETIMEOUT] = "timed out",
    [AIQ_EAUTH] = "not authorized",
};

const char *aiq_strerror(aiq_rc rc) {
    if ((int)rc < 0 || rc >= AIQ__NCODES || !aiq_err_names[rc])
        return "unknown error";
    return aiq_err_names[rc];
}

void aiq_err_clear(aiq_err *e) {
    if (e) memset(e, 0, sizeof *e);
}

static void aiq_err_vset(aiq_err *e, aiq_rc rc, const char *fmt, va_list ap) {
    e->code = rc;
    vsnprintf(e->message, sizeof e->message, fmt, ap);
}

aiq_rc aiq_err_set(aiq_err *e, aiq_rc rc, const char *fmt, ...) {
    if (!e || e->code != AIQ_OK) return rc;
    va_list ap;
    va_start(ap, fmt);
    aiq_err_vset(e, rc, fmt, ap);
    va_end(ap);
    return rc;
}

aiq_rc aiq_err_field(aiq_err *e, aiq_rc rc, const char *field,
                     const char *fmt, ...) {
    if (!e || e->code != AIQ_OK) return rc;
    snprintf(e->field, sizeof e->field, "%s", field ? field : "");
    va_list ap;
    va_start(ap, fmt);
    aiq_err_vset(e, rc, fmt, ap);
    va_end(ap);
    return rc;
}
