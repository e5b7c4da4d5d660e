/* predict_store.h -- the runtime predictor (queue/predict.h) over the
 * store's history: the operator's source of similar runs. */
#ifndef AIQ_OPERATOR_PREDICT_STORE_H
#define AIQ_OPERATOR_PREDICT_STORE_H

#include "common/aiq_err.h"
#include "operator/store.h"
#include "queue/predict.h"

/* Predicts from the store's history (s borrowed). Fills *out; on error
 * (AIQ_EDB from the store) *out is PRED_NONE with runtime 0. */
aiq_rc predict_runtime(store *s, const struct pred_query *q,
                       struct pred_result *out, aiq_err *err);

#endif
