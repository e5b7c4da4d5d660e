/* aiq_err.h -- the one error enum of aiq and the caller-supplied error
 * detail struct (curl CURLcode style).
 *
 * The enum is append-only: never renumber or remove a code. Every function
 * that can fail returns an aiq_rc and, when given a non-NULL aiq_err *,
 * fills it with the first error's message and location. */
#ifndef AIQ_ERR_H
#define AIQ_ERR_H

#include <stddef.h>

typedef enum {
    AIQ_OK = 0,
    AIQ_ENOMEM = 1,      /* allocation failed */
    AIQ_EINVAL = 2,      /* invalid input (field path in aiq_err.field) */
    AIQ_ETOOBIG = 3,     /* input passes a size limit */
    AIQ_EPARSE = 4,      /* syntax error (offset/line/col in aiq_err) */
    AIQ_ENOTFOUND = 5,   /* named thing does not exist */
    AIQ_EEXIST = 6,      /* already exists */
    AIQ_ECONFLICT = 7,   /* version conflict (HTTP 409) */
    AIQ_EIO = 8,         /* file or socket error */
    AIQ_EHTTP = 9,       /* HTTP status >= 400 (http_status, reason) */
    AIQ_EDB = 10,        /* SQLite error */
    AIQ_EGONE = 11,      /* watch resourceVersion too old (HTTP 410) */
    AIQ_ELIMIT = 12,     /* a run-time bound was hit (instructions, depth) */
    AIQ_EQUOTA = 13,     /* quota rule violated */
    AIQ_ESTATE = 14,     /* call not valid in the current state */
    AIQ_EUNSUPPORTED = 15, /* feature or media type not supported */
    AIQ_ETIMEOUT = 16,   /* operation timed out */
    AIQ_EAUTH = 17,      /* authentication or authorization failed */
    AIQ__NCODES
} aiq_rc;

/* Error details. All fields are optional to fill; message is always
 * NUL-terminated once set. */
typedef struct aiq_err {
    aiq_rc code;
    char message[512];   /* one line, human readable, no trailing newline */
    char field[256];     /* field path for validation errors: spec.resources.gpus */
    size_t offset;       /* byte offset for parse errors */
    int line, col;       /* 1-based line and column for parse errors, 0 if unknown */
    int http_status;     /* HTTP status for AIQ_EHTTP / ECONFLICT / EGONE */
    char reason[64];     /* Kubernetes Status reason (NotFound, Conflict, ...) */
} aiq_err;

/* Returns a static, human-readable name for rc ("invalid input"). */
const char *aiq_strerror(aiq_rc rc);

/* Clears e (if non-NULL). */
void aiq_err_clear(aiq_err *e);

/* Sets e->code and a printf-formatted message, unless e already holds an
 * error (the first error wins). Returns rc so callers can
 * `return aiq_err_set(e, AIQ_EINVAL, ...)`. e may be NULL. */
aiq_rc aiq_err_set(aiq_err *e, aiq_rc rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Like aiq_err_set, and records the field path. */
aiq_rc aiq_err_field(aiq_err *e, aiq_rc rc, const char *field,
                     const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
