/* api_auth.c -- TokenReview + SubjectAccessReview for the operator's
 * /journal and /queue (see api_auth.h). */
#include "operator/api_auth.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/json.h"
#include "operator/kube_http.h"

#define OPAUTH_SLOTS 64
#define OPAUTH_ALLOW_S 30.0
#define OPAUTH_DENY_S 5.0

/* One answer: the whole token is kept and compared (a hash of a secret
 * could be made to collide), with the question and the verdict. */
struct opauth_slot {
    char *token;
    char question[400]; /* "verb sub ns" */
    int code;           /* 200, 401 or 403 (503 is never cached) */
    char msg[400];
    double until;       /* monotonic seconds */
};

struct opauth {
    struct kube_client *kc;
    struct opauth_slot slot[OPAUTH_SLOTS];
    int next; /* the slot replaced next when none is free */
};

static double opauth_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Equal strings, in time that depends on the lengths only. */
static bool opauth_same(const char *a, const char *b) {
    size_t n = strlen(a);
    if (n != strlen(b))
        return false;
    unsigned char d = 0;
    for (size_t i = 0; i < n; i++)
        d |= (unsigned char)(a[i] ^ b[i]);
    return d == 0;
}

opauth *opauth_create(const struct kube_config *cfg, aiq_err *e) {
    opauth *a = calloc(1, sizeof *a);
    if (!a) {
        aiq_err_set(e, AIQ_ENOMEM, "out of memory");
        return NULL;
    }
    struct kube_client_opts ko = {.timeout_ms = 5000, .connect_timeout_ms = 2000,
                                  .max_body = 1u << 20,
                                  .user_agent = "aiq-operator/0.1 (api-auth)"};
    if (kube_client_create(cfg, &ko, &a->kc, e) != AIQ_OK) {
        free(a);
        return NULL;
    }
    return a;
}

void opauth_free(opauth *a) {
    if (!a)
        return;
    for (int i = 0; i < OPAUTH_SLOTS; i++)
        free(a->slot[i].token);
    kube_client_free(a->kc);
    free(a);
}

/* json-c helpers for the two reviews. */
static const char *opauth_str(json_object *o, const char *k1, const char *k2) {
    json_object *v = NULL;
    if (!json_object_object_get_ex(o, k1, &v))
        return NULL;
    if (k2 && !json_object_object_get_ex(v, k2, &v))
        return NULL;
    return json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

static bool opauth_bool(json_object *o, const char *k1, const char *k2) {
    json_object *v = NULL;
    return json_object_object_get_ex(o, k1, &v) && json_object_object_get_ex(v, k2, &v) &&
           json_object_get_boolean(v);
}

/* POSTs a review body (taken) to path; *out the answer. */
static aiq_rc opauth_post(opauth *a, const char *path, json_object *body, json_object **out,
                          aiq_err *e) {
    aiq_rc rc = body ? kube_create(a->kc, path, body, out, e)
                     : aiq_err_set(e, AIQ_ENOMEM, "out of memory");
    json_object_put(body);
    return rc;
}

/* TokenReview: *user (the review's status.user, a new reference) when the
 * token is valid. Returns 200, 401 or 503 with msg. */
static int opauth_review_token(opauth *a, const char *token, json_object **user, char *msg,
                               size_t cap) {
    aiq_err e;
    aiq_err_clear(&e);
    json_object *out = NULL, *spec = json_object_new_object(),
                *body = json_object_new_object();
    bool failed = !body;
    aiq_jset(body, "apiVersion", json_object_new_string("authentication.k8s.io/v1"), &failed);
    aiq_jset(body, "kind", json_object_new_string("TokenReview"), &failed);
    aiq_jset(spec, "token", json_object_new_string(token), &failed);
    aiq_jset(body, "spec", spec, &failed);
    if (failed) { /* opauth_post answers out of memory */
        json_object_put(body);
        body = NULL;
    }
    aiq_rc rc = opauth_post(a, "/apis/authentication.k8s.io/v1/tokenreviews", body, &out, &e);
    if (rc != AIQ_OK) {
        snprintf(msg, cap, "the API server could not review the token (TokenReview: %s)",
                 e.message);
        return 503;
    }
    json_object *st = NULL, *u = NULL;
    if (!opauth_bool(out, "status", "authenticated") ||
        !json_object_object_get_ex(out, "status", &st) ||
        !json_object_object_get_ex(st, "user", &u)) {
        const char *why = opauth_str(out, "status", "error");
        snprintf(msg, cap, "the bearer token is not valid for this cluster%s%s",
                 why ? ": " : "", why ? why : "");
        json_object_put(out);
        return 401;
    }
    *user = json_object_get(u);
    json_object_put(out);
    return 200;
}

/* Copies member k of user, when it has one (a null stays null), into
 * spec; a failure sets *failed (aiq_jset). */
static void opauth_copy(json_object *spec, json_object *user, const char *k, bool *failed) {
    json_object *v = NULL;
    if (!json_object_object_get_ex(user, k, &v))
        return;
    if (v)
        aiq_jset(spec, k, json_object_get(v), failed);
    else
        aiq_jset_null(spec, k, failed);
}

/* SubjectAccessReview for user (a TokenReview's status.user). */
static int opauth_review_access(opauth *a, json_object *user, const char *verb,
                                const char *sub, const char *ns, char *msg, size_t cap) {
    aiq_err e;
    aiq_err_clear(&e);
    json_object *body = json_object_new_object(), *spec = json_object_new_object(),
                *ra = json_object_new_object(), *out = NULL;
    const char *name = opauth_str(user, "username", NULL);
    bool failed = !body;
    aiq_jset(body, "apiVersion", json_object_new_string("authorization.k8s.io/v1"), &failed);
    aiq_jset(body, "kind", json_object_new_string("SubjectAccessReview"), &failed);
    aiq_jset(spec, "user", json_object_new_string(name ? name : ""), &failed);
    opauth_copy(spec, user, "uid", &failed);
    opauth_copy(spec, user, "groups", &failed);
    opauth_copy(spec, user, "extra", &failed);
    aiq_jset(ra, "group", json_object_new_string("aiq.dev"), &failed);
    aiq_jset(ra, "resource", json_object_new_string("aijobs"), &failed);
    if (sub && *sub)
        aiq_jset(ra, "subresource", json_object_new_string(sub), &failed);
    aiq_jset(ra, "verb", json_object_new_string(verb), &failed);
    if (ns && *ns)
        aiq_jset(ra, "namespace", json_object_new_string(ns), &failed);
    aiq_jset(spec, "resourceAttributes", ra, &failed);
    aiq_jset(body, "spec", spec, &failed);
    if (failed) { /* opauth_post answers out of memory */
        json_object_put(body);
        body = NULL;
    }
    char what[320];
    snprintf(what, sizeof what, "%s aijobs%s%s (aiq.dev) %s%s", verb, sub && *sub ? "/" : "",
             sub && *sub ? sub : "", ns && *ns ? "in namespace " : "cluster-wide",
             ns && *ns ? ns : "");
    aiq_rc rc =
        opauth_post(a, "/apis/authorization.k8s.io/v1/subjectaccessreviews", body, &out, &e);
    if (rc != AIQ_OK) {
        snprintf(msg, cap, "the API server could not authorize %s (SubjectAccessReview: %s)",
                 name ? name : "the caller", e.message);
        return 503;
    }
    bool ok = opauth_bool(out, "status", "allowed");
    if (ok) {
        snprintf(msg, cap, "%s may %s", name ? name : "the caller", what);
    } else {
        const char *why = opauth_str(out, "status", "reason");
        snprintf(msg, cap, "user \"%s\" may not %s%s%s", name ? name : "", what,
                 why && *why ? ": " : "", why && *why ? why : "");
    }
    json_object_put(out);
    return ok ? 200 : 403;
}

/* The cached answer for (token, question), or NULL. */
static struct opauth_slot *opauth_cached(opauth *a, const char *token, const char *q,
                                         double now) {
    for (int i = 0; i < OPAUTH_SLOTS; i++) {
        struct opauth_slot *s = &a->slot[i];
        if (s->token && s->until > now && strcmp(s->question, q) == 0 &&
            opauth_same(s->token, token))
            return s;
    }
    return NULL;
}

static void opauth_remember(opauth *a, const char *token, const char *q, int code,
                            const char *msg, double now) {
    int k = -1;
    for (int i = 0; i < OPAUTH_SLOTS && k < 0; i++)
        if (!a->slot[i].token || a->slot[i].until <= now)
            k = i;
    if (k < 0) {
        k = a->next;
        a->next = (a->next + 1) % OPAUTH_SLOTS;
    }
    struct opauth_slot *s = &a->slot[k];
    free(s->token);
    s->token = strdup(token);
    if (!s->token)
        return; /* not cached: asked again next time */
    snprintf(s->question, sizeof s->question, "%s", q);
    snprintf(s->msg, sizeof s->msg, "%s", msg);
    s->code = code;
    s->until = now + (code == 200 ? OPAUTH_ALLOW_S : OPAUTH_DENY_S);
}

int opauth_check(opauth *a, const char *token, const char *verb, const char *sub,
                 const char *ns, char *msg, size_t cap) {
    if (!token || !*token) {
        snprintf(msg, cap, "no bearer token: from another host, /journal and /queue need the "
                           "caller's Kubernetes token (Authorization: Bearer ...)");
        return 401;
    }
    char q[400];
    snprintf(q, sizeof q, "%s %s %s", verb, sub ? sub : "", ns ? ns : "");
    double now = opauth_now();
    struct opauth_slot *hit = opauth_cached(a, token, q, now);
    if (hit) {
        snprintf(msg, cap, "%s", hit->msg);
        return hit->code;
    }
    json_object *user = NULL;
    int code = opauth_review_token(a, token, &user, msg, cap);
    if (code == 200)
        code = opauth_review_access(a, user, verb, sub, ns, msg, cap);
    json_object_put(user);
    if (code != 503)
        opauth_remember(a, token, q, code, msg, now);
    return code;
}

int opauth_check_user(opauth *a, const char *user, const char *const *groups, size_t ngroups,
                      const char *verb, const char *sub, const char *ns, char *msg, size_t cap) {
    json_object *u = json_object_new_object(), *g = json_object_new_array();
    bool failed = !u;
    aiq_jset(u, "username", json_object_new_string(user), &failed);
    for (size_t i = 0; i < ngroups; i++)
        aiq_jpush(g, json_object_new_string(groups[i]), &failed);
    aiq_jset(u, "groups", g, &failed);
    if (failed) {
        json_object_put(u);
        snprintf(msg, cap, "out of memory");
        return 503;
    }
    int code = opauth_review_access(a, u, verb, sub, ns, msg, cap);
    json_object_put(u);
    return code;
}
