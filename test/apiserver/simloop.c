/* simloop.c -- the simulator thread of the local cluster: loads the
 * configured nodes once, then calls sim_tick (the simulated scheduler and
 * kubelet, in sim_*.c) every 100 ms until the server stops. A tick lists
 * every node and pod, so with many pods the pause after a tick grows to
 * three times the tick's own duration: the simulator then takes at most a
 * quarter of a core and of the server lock's time, whatever the size. Kept apart from
 * server.c so programs that do not link the simulator can still start the
 * server. */
#include "test/apiserver/apisrv_int.h"
#include "test/apiserver/sim_int.h"

#include <stdlib.h>
#include <time.h>

struct simloop {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    bool stop;
};

static void *simloop_run(void *arg) {
    apisrv *s = arg;
    struct simloop *l = s->sim;
    pthread_mutex_lock(&l->mu);
    while (!l->stop) {
        pthread_mutex_unlock(&l->mu);
        double t0 = apisrv__now();
        sim_tick(s, t0, s->time_scale);
        apisrv__aggr_tick(s);
        long pause_ns = (long)((apisrv__now() - t0) * 3e9);
        if (pause_ns < 100 * 1000000L) pause_ns = 100 * 1000000L;
        if (pause_ns > 2000 * 1000000L) pause_ns = 2000 * 1000000L;
        pthread_mutex_lock(&l->mu);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += pause_ns / 1000000000L;
        ts.tv_nsec += pause_ns % 1000000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        if (!l->stop) pthread_cond_timedwait(&l->cond, &l->mu, &ts);
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

/* See sim_int.h. s->sim only changes while no tick runs (it is cleared
 * after the thread is joined), so reading it from a tick is safe. */
bool sim__stop_requested(apisrv *s) {
    struct simloop *l = s ? s->sim : NULL;
    bool stop;
    if (!l) return false;
    pthread_mutex_lock(&l->mu);
    stop = l->stop;
    pthread_mutex_unlock(&l->mu);
    return stop;
}

static void simloop_stop(apisrv *s) {
    struct simloop *l = s->sim;
    if (!l) return;
    pthread_mutex_lock(&l->mu);
    l->stop = true;
    pthread_cond_signal(&l->cond);
    pthread_mutex_unlock(&l->mu);
    pthread_join(l->th, NULL);
    pthread_cond_destroy(&l->cond);
    pthread_mutex_destroy(&l->mu);
    free(l);
    s->sim = NULL;
    s->sim_stop = NULL;
}

/* See apiserver.h. On failure no thread runs; nodes loaded before the
 * failure stay. */
aiq_rc apisrv_sim_start(apisrv *s, aiq_err *err) {
    struct simloop *l;
    if (s->sim) return AIQ_OK;
    if (s->nodes_file) {
        aiq_rc rc = sim_load_nodes(s, s->nodes_file, err);
        if (rc != AIQ_OK) return rc;
    }
    l = calloc(1, sizeof *l);
    if (!l) return aiq_err_set(err, AIQ_ENOMEM, "out of memory");
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cond, NULL);
    s->sim = l;
    if (pthread_create(&l->th, NULL, simloop_run, s) != 0) {
        pthread_cond_destroy(&l->cond);
        pthread_mutex_destroy(&l->mu);
        free(l);
        s->sim = NULL;
        return aiq_err_set(err, AIQ_ENOMEM, "cannot start the simulator thread");
    }
    s->sim_stop = simloop_stop;
    return AIQ_OK;
}
