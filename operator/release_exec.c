/* release_exec.c -- parallel sending of release patches and status
 * writes (see release_exec.h). Workers, the calling thread among them,
 * take the next item from a shared counter until none is left. */
#include "operator/release_exec.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "operator/crashpoint.h"
#include "operator/kube_http.h"

struct rx_ctx {
    struct kube_client *c;
    struct release_item *items;
    int n, next;
    pthread_mutex_t mu;
};

static void rx_send(struct rx_ctx *x, struct release_item *it) {
    aiq_err_clear(&it->err);
    it->out = NULL;
    if (it->create && it->body)
        it->rc = kube_create_text(x->c, it->path, it->body, it->body_len, &it->out, &it->err);
    else if (it->create)
        it->rc = kube_create(x->c, it->path, it->patch, &it->out, &it->err);
    else
        it->rc = kube_patch(x->c, it->path, KUBE_PATCH_MERGE, it->patch, &it->out, &it->err);
    /* Only release patches go to pods (status writes go to aiq kinds). */
    if (it->rc == AIQ_OK && strstr(it->path, "/pods/"))
        crashpoint("release_mid");
}

static void *rx_worker(void *arg) {
    struct rx_ctx *x = arg;
    for (;;) {
        pthread_mutex_lock(&x->mu);
        int i = x->next < x->n ? x->next++ : -1;
        pthread_mutex_unlock(&x->mu);
        if (i < 0)
            return NULL;
        rx_send(x, &x->items[i]);
    }
}

/* Sends the batch; see release_exec.h. */
int release_exec(struct kube_client *c, struct release_item *items, int n,
                 int threads) {
    pthread_t th[16];
    int started = 0, ok = 0;
    if (n <= 0)
        return 0;
    struct rx_ctx x = {c, items, n, 0, PTHREAD_MUTEX_INITIALIZER};
    if (threads < 1)
        threads = 1;
    if (threads > 16)
        threads = 16;
    if (threads > n)
        threads = n;
    /* The calling thread works too; extra threads only when they help. */
    for (int t = 1; t < threads; t++)
        if (pthread_create(&th[started], NULL, rx_worker, &x) == 0)
            started++;
    rx_worker(&x);
    for (int t = 0; t < started; t++)
        pthread_join(th[t], NULL);
    pthread_mutex_destroy(&x.mu);
    for (int i = 0; i < n; i++)
        ok += items[i].rc == AIQ_OK;
    return ok;
}
