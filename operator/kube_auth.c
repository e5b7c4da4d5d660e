/* kube_auth.c -- the changing credential of a client: cached, renewed
 * when expired or refused, one renewal at a time with the other callers
 * waiting for its result. See kube_auth.h. */
#include "operator/kube_auth.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "operator/kube_exec.h"
#include "operator/kube_oidc.h"

struct kube_auth {
    /* Set at creation, read-only after. */
    struct kube_exec *exec;     /* one of exec and oidc */
    struct kube_oidc *oidc;
    char *server, *tls_server_name; /* the exec plugin's spec.cluster */
    int insecure;
    struct kube_blob ca;
    int may_prompt;
    long exec_timeout_ms, oidc_timeout_ms;

    pthread_mutex_t mu;         /* guards everything below */
    pthread_cond_t done_cv;     /* a renewal finished */
    struct kube_cred cur;       /* the current credential */
    int have;                   /* cur holds one */
    int stale;                  /* the server refused cur: renew before use */
    unsigned long gen;          /* generation of cur */
    int renewing;               /* a renewal runs (without mu held) */
    unsigned long renewals;     /* renewals finished */
    aiq_rc last_rc;             /* the last renewal's result ... */
    aiq_err last_err;           /* ... and error, for the callers that waited for it */
    /* oidc: the refresh-token to use next. Only the renewing thread
     * replaces it (renewing excludes the others). */
    char *refresh_token;
};

static void wipe_free(char *s) {
    if (!s) return;
    volatile char *p = s;
    while (*p) *p++ = 0;
    free(s);
}

void kube_auth_cred_clear(struct kube_auth_cred *c) {
    if (!c) return;
    wipe_free(c->token);
    kube_blob_wipe_free(&c->cert);
    kube_blob_wipe_free(&c->key);
    memset(c, 0, sizeof *c);
}

void kube_auth_free(struct kube_auth *a) {
    if (!a) return;
    kube_exec_free(a->exec);
    kube_oidc_free(a->oidc);
    free(a->server);
    free(a->tls_server_name);
    free(a->ca.data);
    kube_cred_clear(&a->cur);
    wipe_free(a->refresh_token);
    pthread_cond_destroy(&a->done_cv);
    pthread_mutex_destroy(&a->mu);
    free(a);
}

/* An oidc id-token as a credential expiring KUBE_OIDC_EXPIRY_SLACK_S
 * before its exp claim (a token without exp counts as expired, as in
 * kubectl). Takes nothing; copies token. */
static aiq_rc oidc_cred(const struct kube_oidc *o, const char *token, struct kube_cred *out,
                        aiq_err *e) {
    time_t exp = 0;
    aiq_err le;
    char f[300];
    memset(out, 0, sizeof *out);
    aiq_err_clear(&le);
    snprintf(f, sizeof f, "%.200s.config.id-token", o->field);
    if (kube_jwt_exp(token, &exp, &le) != AIQ_OK)
        return aiq_err_field(e, AIQ_EINVAL, f, "oidc (%s): id-token: %s", f, le.message);
    out->token = strdup(token);
    if (!out->token) return aiq_err_set(e, AIQ_ENOMEM, "out of memory");
    out->expiry = exp > KUBE_OIDC_EXPIRY_SLACK_S ? exp - KUBE_OIDC_EXPIRY_SLACK_S : 1;
    return AIQ_OK;
}

aiq_rc kube_auth_create(const struct kube_config *cfg, const struct kube_auth_opts *o,
                        struct kube_auth **out, aiq_err *e) {
    aiq_rc rc = AIQ_OK;
    struct kube_auth *a = NULL;

    *out = NULL;
    if (!cfg || (!cfg->exec && !cfg->oidc))
        return aiq_err_set(e, AIQ_EINVAL, "no exec plugin or oidc provider to take credentials from");
    a = calloc(1, sizeof *a);
    if (!a) return aiq_err_set(e, AIQ_ENOMEM, "out of memory");
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->done_cv, NULL);
    a->may_prompt = o ? o->may_prompt : 0;
    a->exec_timeout_ms = o ? o->exec_timeout_ms : 0;
    a->oidc_timeout_ms = o ? o->oidc_timeout_ms : 0;

    if (cfg->exec) {
        a->exec = kube_exec_dup(cfg->exec);
        if (!a->exec) goto out_nomem;
        /* Fail at start-up, not at the first request, when the plugin
         * could never run here. */
        if (a->exec->mode == KUBE_EXEC_ALWAYS && !a->may_prompt) {
            int interactive = 0;
            rc = kube_exec_interactive(a->exec, 0, &interactive, e);
            goto out_free;
        }
        if (a->exec->provide_cluster_info) {
            a->server = cfg->server ? strdup(cfg->server) : NULL;
            a->tls_server_name = cfg->tls_server_name ? strdup(cfg->tls_server_name) : NULL;
            if ((cfg->server && !a->server) || (cfg->tls_server_name && !a->tls_server_name))
                goto out_nomem;
            a->insecure = cfg->insecure;
            if (cfg->ca_data.data) {
                if (kube_blob_dup(&a->ca, &cfg->ca_data)) goto out_nomem;
            } else if (cfg->ca_file) {
                /* The plugin gets CA data, never a path (kubectl reads it too). */
                char *text = NULL;
                size_t len = 0;
                if ((rc = kube_read_file(cfg->ca_file, KUBE_CONFIG_MAX_FILE, &text, &len, e)) != AIQ_OK)
                    goto out_free;
                a->ca.data = (unsigned char *)text;
                a->ca.len = len;
            }
        }
    } else {
        a->oidc = kube_oidc_dup(cfg->oidc);
        if (!a->oidc) goto out_nomem;
        if (a->oidc->refresh_token && !(a->refresh_token = strdup(a->oidc->refresh_token)))
            goto out_nomem;
        if (a->oidc->id_token) {
            if ((rc = oidc_cred(a->oidc, a->oidc->id_token, &a->cur, e)) != AIQ_OK) goto out_free;
            a->have = 1;
            a->gen = 1;
        }
    }
    *out = a;
    return AIQ_OK;
out_nomem:
    rc = aiq_err_set(e, AIQ_ENOMEM, "out of memory");
out_free:
    kube_auth_free(a);
    return rc;
}

/* One renewal, run without the lock: the plugin, or an oidc refresh.
 * On AIQ_OK *nc is the new credential and *nrt a new refresh-token (or
 * NULL to keep the old one). */
static aiq_rc auth_renew(struct kube_auth *a, struct kube_cred *nc, char **nrt, aiq_err *e) {
    aiq_rc rc = AIQ_OK;
    *nrt = NULL;
    if (a->exec) {
        struct kube_exec_cluster cl = {.server = a->server, .tls_server_name = a->tls_server_name,
                                       .insecure = a->insecure, .ca = a->ca.data ? &a->ca : NULL,
                                       .config_json = a->exec->cluster_config};
        return kube_exec_credential(a->exec, &cl, a->may_prompt, a->exec_timeout_ms, nc, e);
    }
    if (!a->refresh_token)
        return aiq_err_field(e, AIQ_EAUTH, a->oidc->field,
                             "oidc (%.64s): the id-token has expired and there is no refresh-token "
                             "to renew it; log in again with your OIDC helper", a->oidc->field);
    struct kube_oidc_tokens t = {0};
    rc = kube_oidc_refresh(a->oidc, a->refresh_token, a->oidc_timeout_ms, &t, e);
    if (rc == AIQ_OK) rc = oidc_cred(a->oidc, t.id_token, nc, e);
    if (rc == AIQ_OK) {
        *nrt = t.refresh_token;
        t.refresh_token = NULL;
    }
    kube_oidc_tokens_clear(&t);
    return rc;
}

static int cred_expired(const struct kube_cred *c) {
    return c->expiry != 0 && time(NULL) >= c->expiry;
}

aiq_rc kube_auth_get(struct kube_auth *a, unsigned long have_gen, struct kube_auth_cred *out,
                     aiq_err *e) {
    aiq_rc rc = AIQ_OK;

    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&a->mu);
    for (;;) {
        if (a->have && !a->stale && !cred_expired(&a->cur)) break;
        if (a->renewing) {
            /* Someone renews it: take that result, whatever it is. */
            while (a->renewing) pthread_cond_wait(&a->done_cv, &a->mu);
            if (a->last_rc != AIQ_OK) {
                rc = a->last_rc;
                if (e && e->code == AIQ_OK) *e = a->last_err;
                goto out_unlock;
            }
            break;
        }
        a->renewing = 1;
        pthread_mutex_unlock(&a->mu);
        struct kube_cred nc;
        char *nrt = NULL;
        aiq_err le;
        aiq_err_clear(&le);
        memset(&nc, 0, sizeof nc);
        rc = auth_renew(a, &nc, &nrt, &le);
        pthread_mutex_lock(&a->mu);
        a->renewing = 0;
        a->renewals++;
        a->last_rc = rc;
        a->last_err = le;
        if (rc == AIQ_OK) {
            kube_cred_clear(&a->cur);
            a->cur = nc;
            a->have = 1;
            a->stale = 0;
            a->gen++;
            if (nrt) {
                wipe_free(a->refresh_token);
                a->refresh_token = nrt;
            }
        }
        pthread_cond_broadcast(&a->done_cv);
        if (rc != AIQ_OK) {
            if (e && e->code == AIQ_OK) *e = le;
            goto out_unlock;
        }
        /* Use what this renewal got, even if it is already expired: a
         * plugin that always answers so is run once per request, not in
         * a loop. */
        break;
    }
    out->gen = a->gen;
    if (a->cur.token && !(out->token = strdup(a->cur.token))) rc = AIQ_ENOMEM;
    if (a->gen != have_gen &&
        (kube_blob_dup(&out->cert, &a->cur.cert) || kube_blob_dup(&out->key, &a->cur.key)))
        rc = AIQ_ENOMEM;
    if (rc != AIQ_OK) {
        kube_auth_cred_clear(out);
        aiq_err_set(e, rc, "out of memory copying the credential");
    }
out_unlock:
    pthread_mutex_unlock(&a->mu);
    return rc;
}

int kube_auth_rejected(struct kube_auth *a, unsigned long gen) {
    int retry = 1;
    pthread_mutex_lock(&a->mu);
    if (gen == a->gen) {
        if (a->oidc && !a->refresh_token) retry = 0; /* nothing to renew with */
        else a->stale = 1;
    } /* else: renewed since that request was sent; the new one may do */
    pthread_mutex_unlock(&a->mu);
    return retry;
}

unsigned long kube_auth_renewals(struct kube_auth *a) {
    pthread_mutex_lock(&a->mu);
    unsigned long n = a->renewals;
    pthread_mutex_unlock(&a->mu);
    return n;
}
