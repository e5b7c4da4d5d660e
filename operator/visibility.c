/* visibility.c -- requests for the live queue, filed by the HTTP thread
 * and answered by the daemon at the end of a cycle (see visibility.h). */
#include "operator/visibility.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/aiq_time.h"
#include "common/json.h"
#include "common/model.h"

struct opvis_req {
    bool used, done;
    char ns[AIQ_MAX_NAME + 1], name[AIQ_MAX_NAME + 1];
    int status;
    char *body;
    size_t len;
};

struct opvis {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct opvis_req req[OPVIS_MAX_WAITING];
    int waiting; /* used and not done */
    clockid_t clock; /* the clock the condition's waits are timed on */
    bool closed;
};

void opvis_close(opvis *v) {
    if (!v)
        return;
    pthread_mutex_lock(&v->mu);
    v->closed = true;
    pthread_cond_broadcast(&v->cv);
    pthread_mutex_unlock(&v->mu);
}

opvis *opvis_create(void) {
    opvis *v = calloc(1, sizeof *v);
    if (!v)
        return NULL;
    if (pthread_mutex_init(&v->mu, NULL) != 0) {
        free(v);
        return NULL;
    }
    pthread_condattr_t ca;
    /* The waits are timed on the monotonic clock (a clock step cannot
     * stretch them) where the library allows it, else on the realtime
     * clock; v->clock says which, and deadlines are taken on it. */
    bool attr = pthread_condattr_init(&ca) == 0;
    v->clock = CLOCK_REALTIME;
    if (attr && pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0)
        v->clock = CLOCK_MONOTONIC;
    if (pthread_cond_init(&v->cv, attr ? &ca : NULL) != 0) {
        if (attr)
            pthread_condattr_destroy(&ca);
        pthread_mutex_destroy(&v->mu);
        free(v);
        return NULL;
    }
    if (attr)
        pthread_condattr_destroy(&ca);
    return v;
}

void opvis_free(opvis *v) {
    if (!v)
        return;
    for (int i = 0; i < OPVIS_MAX_WAITING; i++)
        free(v->req[i].body);
    pthread_cond_destroy(&v->cv);
    pthread_mutex_destroy(&v->mu);
    free(v);
}

/* A malloc'd {"message": msg} body. */
static char *opvis_msg(const char *msg, size_t *len) {
    json_object *o = json_object_new_object();
    char *out = NULL;
    if (aiq_jset(o, "message", json_object_new_string(msg), NULL) == 0)
        out = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
    json_object_put(o);
    *len = out ? strlen(out) : 0;
    return out;
}

int opvis_ask(opvis *v, const char *ns, const char *name, double timeout_s, char **body,
              size_t *len) {
    struct timespec dl = aiq_deadline(v->clock, timeout_s);
    int slot = -1, status;
    pthread_mutex_lock(&v->mu);
    for (int i = 0; i < OPVIS_MAX_WAITING && slot < 0; i++)
        if (!v->req[i].used)
            slot = i;
    if (slot < 0 || v->closed) {
        pthread_mutex_unlock(&v->mu);
        *body = opvis_msg(v->closed ? "the operator is shutting down"
                                     : "busy: too many queue views are being computed; try again",
                          len);
        return 503;
    }
    struct opvis_req *r = &v->req[slot];
    memset(r, 0, sizeof *r);
    r->used = true;
    snprintf(r->ns, sizeof r->ns, "%s", ns ? ns : "");
    snprintf(r->name, sizeof r->name, "%s", name ? name : "");
    v->waiting++;
    int err = 0;
    while (!r->done && !v->closed && err != ETIMEDOUT)
        err = pthread_cond_timedwait(&v->cv, &v->mu, &dl);
    if (r->done) {
        status = r->status;
        *body = r->body;
        *len = r->len;
    } else {
        v->waiting--;
        status = 503;
        char msg[160];
        if (v->closed)
            snprintf(msg, sizeof msg, "the operator is shutting down");
        else
            snprintf(msg, sizeof msg,
                     "no queue cycle ran within %.0f s (the operator is starting, not the leader, "
                     "or overloaded)", timeout_s);
        *body = opvis_msg(msg, len);
    }
    memset(r, 0, sizeof *r);
    pthread_mutex_unlock(&v->mu);
    return status;
}

bool opvis_waiting(opvis *v) {
    if (!v)
        return false;
    pthread_mutex_lock(&v->mu);
    bool w = v->waiting > 0;
    pthread_mutex_unlock(&v->mu);
    return w;
}

void opvis_answer(opvis *v, opvis_fill_fn fill, void *ctx) {
    if (!v)
        return;
    pthread_mutex_lock(&v->mu);
    for (int i = 0; i < OPVIS_MAX_WAITING; i++) {
        struct opvis_req *r = &v->req[i];
        if (!r->used || r->done)
            continue;
        int status = 500;
        json_object *doc = fill(ctx, r->ns[0] ? r->ns : NULL, r->name[0] ? r->name : NULL,
                                &status);
        int fl = JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE;
        const char *txt = doc ? json_object_to_json_string_ext(doc, fl) : NULL;
        r->body = txt ? strdup(txt) : NULL;
        r->len = r->body ? strlen(r->body) : 0;
        r->status = r->body ? status : 500;
        if (!r->body)
            r->body = opvis_msg("out of memory", &r->len);
        json_object_put(doc);
        r->done = true;
        v->waiting--;
    }
    pthread_cond_broadcast(&v->cv);
    pthread_mutex_unlock(&v->mu);
}
