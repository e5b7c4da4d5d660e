/* kube_evq.c -- bounded, thread-safe FIFO of watch events (mutex + two
 * condition variables over a ring buffer). See kube_evq.h. */
#include "operator/kube_evq.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "common/aiq_time.h"

#define KUBE_EVQ_DEFAULT_CAP 65536

struct kube_evq {
    pthread_mutex_t mu;
    pthread_cond_t not_empty, not_full;
    struct kube_event **ring;
    size_t cap, head, len;
};

void kube_event_free(struct kube_event *ev) {
    if (!ev) return;
    json_object_put(ev->obj);
    free(ev);
}

aiq_rc kube_evq_create(size_t cap, struct kube_evq **out, aiq_err *e) {
    struct kube_evq *q = calloc(1, sizeof *q);
    *out = NULL;
    if (!q) return aiq_err_set(e, AIQ_ENOMEM, "out of memory");
    q->cap = cap ? cap : KUBE_EVQ_DEFAULT_CAP;
    q->ring = calloc(q->cap, sizeof *q->ring);
    if (!q->ring) {
        free(q);
        return aiq_err_set(e, AIQ_ENOMEM, "out of memory for an event queue of %zu", cap);
    }
    pthread_mutex_init(&q->mu, NULL);
    /* Timed waits use CLOCK_MONOTONIC so wall-clock jumps do not stretch
     * or cut the operator's cycle. */
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&q->not_empty, &ca);
    pthread_cond_init(&q->not_full, &ca);
    pthread_condattr_destroy(&ca);
    *out = q;
    return AIQ_OK;
}

void kube_evq_free(struct kube_evq *q) {
    if (!q) return;
    for (size_t i = 0; i < q->len; i++) kube_event_free(q->ring[(q->head + i) % q->cap]);
    free(q->ring);
    pthread_cond_destroy(&q->not_empty);
    pthread_cond_destroy(&q->not_full);
    pthread_mutex_destroy(&q->mu);
    free(q);
}

aiq_rc kube_evq_push(struct kube_evq *q, struct kube_event *ev,
                     const atomic_int *cancel) {
    pthread_mutex_lock(&q->mu);
    while (q->len == q->cap) {
        if (cancel && atomic_load(cancel)) {
            pthread_mutex_unlock(&q->mu);
            kube_event_free(ev);
            return AIQ_ESTATE;
        }
        struct timespec ts = aiq_deadline(CLOCK_MONOTONIC, 0.1);
        pthread_cond_timedwait(&q->not_full, &q->mu, &ts);
    }
    q->ring[(q->head + q->len) % q->cap] = ev;
    q->len++;
    pthread_cond_signal(&q->not_empty);
    pthread_mutex_unlock(&q->mu);
    return AIQ_OK;
}

aiq_rc kube_evq_pop(struct kube_evq *q, long timeout_ms,
                    struct kube_event **out) {
    aiq_rc rc = AIQ_OK;
    struct timespec ts = aiq_deadline(CLOCK_MONOTONIC, timeout_ms / 1000.0);
    *out = NULL;
    pthread_mutex_lock(&q->mu);
    while (q->len == 0) {
        if (timeout_ms == 0) {
            rc = AIQ_ETIMEOUT;
            goto out_unlock;
        }
        int r = timeout_ms < 0 ? pthread_cond_wait(&q->not_empty, &q->mu)
                               : pthread_cond_timedwait(&q->not_empty, &q->mu, &ts);
        if (r == ETIMEDOUT && q->len == 0) {
            rc = AIQ_ETIMEOUT;
            goto out_unlock;
        }
    }
    *out = q->ring[q->head];
    q->ring[q->head] = NULL;
    q->head = (q->head + 1) % q->cap;
    q->len--;
    pthread_cond_signal(&q->not_full);
out_unlock:
    pthread_mutex_unlock(&q->mu);
    return rc;
}

size_t kube_evq_len(struct kube_evq *q) {
    pthread_mutex_lock(&q->mu);
    size_t n = q->len;
    pthread_mutex_unlock(&q->mu);
    return n;
}
