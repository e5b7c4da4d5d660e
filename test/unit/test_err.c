/* test_err.c -- the error enum and aiq_err helpers. */
#include "common/aiq_err.h"
#include "test/unit/th.h"

TEST(err_first_error_wins) {
    aiq_err e;
    aiq_err_clear(&e);
    CHECK_INT(aiq_err_field(&e, AIQ_EINVAL, "spec.replicas", "spec.replicas: must be >= 1, got %d", 0), AIQ_EINVAL);
    aiq_err_set(&e, AIQ_ENOMEM, "second");
    CHECK_INT(e.code, AIQ_EINVAL);
    CHECK_STR(e.field, "spec.replicas");
    CHECK_STR(e.message, "spec.replicas: must be >= 1, got 0");
}

TEST(err_names) {
    CHECK_STR(aiq_strerror(AIQ_OK), "ok");
    CHECK_STR(aiq_strerror(AIQ_ECONFLICT), "conflict");
    CHECK_STR(aiq_strerror((aiq_rc)9999), "unknown error");
    CHECK_INT(aiq_err_set(NULL, AIQ_EIO, "x"), AIQ_EIO);
}
