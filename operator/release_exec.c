/* release_exec.c -- parallel sending of release patches (see
 * release_exec.h). Items form units: an item with follows == 0 leads, the
 * items after it with follows == 1 are its followers. Workers take the
 * next unit's leader from a shared counter; once a leader succeeds its
 * followers become ready and any worker takes them (a big gang's pods
 * still go out in parallel); a failed leader's followers are not sent.
 * A worker with nothing to take waits while leaders are in flight, since
 * each may make followers ready. */
#include "operator/release_exec.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "operator/crashpoint.h"
#include "operator/kube_http.h"

struct rx_range {
    int next, end; /* followers [next, end) ready to send */
};

struct rx_ctx {
    struct kube_client *c;
    struct release_item *items;
    int *lead;              /* index of each unit's leader */
    int nunits, next_unit;
    struct rx_range *ready; /* a stack of ready follower ranges */
    int nready;
    int inflight;           /* leaders being sent */
    pthread_mutex_t mu;
    pthread_cond_t cv;
};

static void rx_send(struct rx_ctx *x, struct release_item *it) {
    aiq_err_clear(&it->err);
    it->out = NULL;
    it->rc = it->create ? kube_create(x->c, it->path, it->patch, &it->out, &it->err)
                        : kube_patch(x->c, it->path, KUBE_PATCH_MERGE, it->patch, &it->out,
                                     &it->err);
    /* Only release patches go to pods (status writes go to aiq kinds). */
    if (it->rc == AIQ_OK && strstr(it->path, "/pods/"))
        crashpoint("release_mid");
}

/* The end of unit u's items. */
static int rx_unit_end(const struct rx_ctx *x, int u, int n) {
    return u + 1 < x->nunits ? x->lead[u + 1] : n;
}

static void rx_skip(struct release_item *it) {
    it->out = NULL;
    it->rc = AIQ_ESTATE;
    aiq_err_clear(&it->err);
    aiq_err_set(&it->err, AIQ_ESTATE, "not sent: the write it follows failed");
}

struct rx_arg {
    struct rx_ctx *x;
    int n;
};

static void *rx_worker(void *arg) {
    struct rx_arg *a = arg;
    struct rx_ctx *x = a->x;
    pthread_mutex_lock(&x->mu);
    for (;;) {
        if (x->nready > 0) {
            struct rx_range *r = &x->ready[x->nready - 1];
            int i = r->next++;
            if (r->next >= r->end)
                x->nready--;
            pthread_mutex_unlock(&x->mu);
            rx_send(x, &x->items[i]);
            pthread_mutex_lock(&x->mu);
            continue;
        }
        if (x->next_unit < x->nunits) {
            int u = x->next_unit++;
            int i = x->lead[u], end = rx_unit_end(x, u, a->n);
            x->inflight++;
            pthread_mutex_unlock(&x->mu);
            rx_send(x, &x->items[i]);
            bool ok = x->items[i].rc == AIQ_OK;
            if (!ok)
                for (int k = i + 1; k < end; k++)
                    rx_skip(&x->items[k]);
            pthread_mutex_lock(&x->mu);
            x->inflight--;
            if (ok && end > i + 1)
                x->ready[x->nready++] = (struct rx_range){i + 1, end};
            pthread_cond_broadcast(&x->cv);
            continue;
        }
        if (x->inflight == 0)
            break;
        pthread_cond_wait(&x->cv, &x->mu);
    }
    pthread_mutex_unlock(&x->mu);
    return NULL;
}

/* Sends the batch; see release_exec.h. */
int release_exec(struct kube_client *c, struct release_item *items, int n,
                 int threads) {
    pthread_t th[16];
    int started = 0, ok = 0, nunits = 0;
    if (n <= 0)
        return 0;
    for (int i = 0; i < n; i++)
        nunits += i == 0 || !items[i].follows;
    struct rx_ctx x = {c, items, calloc((size_t)nunits, sizeof(int)), nunits, 0,
                       calloc((size_t)nunits, sizeof(struct rx_range)), 0, 0,
                       PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER};
    if (!x.lead || !x.ready) {
        for (int i = 0; i < n; i++) {
            items[i].out = NULL;
            items[i].rc = AIQ_ENOMEM;
            aiq_err_clear(&items[i].err);
            aiq_err_set(&items[i].err, AIQ_ENOMEM, "not sent: out of memory");
        }
        free(x.lead);
        free(x.ready);
        return 0;
    }
    for (int i = 0, u = 0; i < n; i++)
        if (i == 0 || !items[i].follows)
            x.lead[u++] = i;
    if (threads < 1)
        threads = 1;
    if (threads > 16)
        threads = 16;
    if (threads > n)
        threads = n;
    struct rx_arg a = {&x, n};
    /* The calling thread works too; extra threads only when they help. */
    for (int t = 1; t < threads; t++)
        if (pthread_create(&th[started], NULL, rx_worker, &a) == 0)
            started++;
    rx_worker(&a);
    for (int t = 0; t < started; t++)
        pthread_join(th[t], NULL);
    pthread_cond_destroy(&x.cv);
    pthread_mutex_destroy(&x.mu);
    free(x.lead);
    free(x.ready);
    for (int i = 0; i < n; i++)
        ok += items[i].rc == AIQ_OK;
    return ok;
}
