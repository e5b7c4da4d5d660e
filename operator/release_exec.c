/* release_exec.c -- parallel sending of release patches (see
 * release_exec.h): workers take the next item index from a shared
 * counter until none is left; a batch runs while its caller waits, or in
 * the background until release_exec_wait. */
#include "operator/release_exec.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "operator/crashpoint.h"
#include "operator/kube_http.h"

struct release_batch {
    struct kube_client *c;
    struct release_item *items;
    int n;
    int next;
    pthread_mutex_t mu;
};

static void *rx_worker(void *arg) {
    struct release_batch *x = arg;
    for (;;) {
        pthread_mutex_lock(&x->mu);
        int i = x->next < x->n ? x->next++ : -1;
        pthread_mutex_unlock(&x->mu);
        if (i < 0)
            return NULL;
        struct release_item *it = &x->items[i];
        aiq_err_clear(&it->err);
        it->out = NULL;
        it->rc = it->create
                     ? kube_create(x->c, it->path, it->patch, &it->out, &it->err)
                     : kube_patch(x->c, it->path, KUBE_PATCH_MERGE, it->patch, &it->out,
                                  &it->err);
        /* Only release patches go to pods (status writes go to aiq kinds). */
        if (it->rc == AIQ_OK && strstr(it->path, "/pods/"))
            crashpoint("release_mid");
    }
}

/* Counts the items that succeeded. */
static int rx_ok(const struct release_item *items, int n) {
    int ok = 0;
    for (int i = 0; i < n; i++)
        ok += items[i].rc == AIQ_OK;
    return ok;
}

/* Sends the batch; see release_exec.h. */
int release_exec(struct kube_client *c, struct release_item *items, int n,
                 int threads) {
    pthread_t th[16];
    int started = 0;
    struct release_batch x = {c, items, n, 0, PTHREAD_MUTEX_INITIALIZER};
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
    return rx_ok(items, n);
}

/* A batch sent in the background (release_exec_start). */
struct release_bg {
    struct release_batch x;
    pthread_t th[16];
    int started;
};

/* Starts the batch; see release_exec.h. */
struct release_bg *release_exec_start(struct kube_client *c, struct release_item *items,
                                      int n, int threads) {
    struct release_bg *b = calloc(1, sizeof *b);
    if (!b) {
        (void)release_exec(c, items, n, threads); /* sent now instead */
        return NULL;
    }
    b->x.c = c;
    b->x.items = items;
    b->x.n = n;
    if (pthread_mutex_init(&b->x.mu, NULL) != 0) {
        free(b);
        (void)release_exec(c, items, n, threads);
        return NULL;
    }
    if (threads < 1)
        threads = 1;
    if (threads > 16)
        threads = 16;
    if (threads > n)
        threads = n;
    for (int t = 0; t < threads; t++)
        if (pthread_create(&b->th[b->started], NULL, rx_worker, &b->x) == 0)
            b->started++;
    if (b->started == 0)
        rx_worker(&b->x); /* no thread: this one sends them all now */
    return b;
}

/* Waits for the batch; see release_exec.h. */
void release_exec_wait(struct release_bg *b) {
    if (!b)
        return;
    for (int t = 0; t < b->started; t++)
        pthread_join(b->th[t], NULL);
    pthread_mutex_destroy(&b->x.mu);
    free(b);
}
