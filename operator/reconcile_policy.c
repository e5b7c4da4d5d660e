/* reconcile_policy.c -- the QueuePolicy reconciler: compile on change,
 * report the result in status (compiled, or the error with line:column),
 * keep the last good compile when an edit breaks a policy (a broken policy
 * never replaces the running one), and pick the active policy: exactly one
 * with spec.active; with several, the conflict is reported in every
 * status and the running policy stays. Also pol_after_cycle: a policy
 * whose formula produced a score that is not finite (clamped by the
 * scorer) says so in status.warnings, naming the term. */
#include <stdio.h>
#include <string.h>

#include "common/json.h"
#include "operator/server.h"

/* Builds a policy's status, or NULL when out of memory. */
static json_object *pol_status(struct opcache_obj *o, const char *phase,
                               bool compiled, bool active, const char *msg,
                               int line, int col, const char *warning) {
    json_object *st = json_object_new_object();
    bool failed = !st;
    aiq_jset(st, "phase", json_object_new_string(phase), &failed);
    aiq_jset(st, "compiled", json_object_new_boolean(compiled), &failed);
    aiq_jset(st, "active", json_object_new_boolean(active), &failed);
    if (msg && *msg)
        aiq_jset(st, "message", json_object_new_string(msg), &failed);
    if (!compiled && msg && *msg)
        aiq_jset(st, "error", json_object_new_string(msg), &failed);
    if (warning && *warning) {
        json_object *w = json_object_new_array();
        aiq_jpush(w, json_object_new_string(warning), &failed);
        aiq_jset(st, "warnings", w, &failed);
    }
    if (line > 0) {
        aiq_jset(st, "errorLine", json_object_new_int(line), &failed);
        aiq_jset(st, "errorColumn", json_object_new_int(col), &failed);
    }
    aiq_jset(st, "observedGeneration", json_object_new_int64(srv__generation(opcache_raw(o))), &failed);
    if (failed) {
        json_object_put(st);
        return NULL;
    }
    return st;
}

/* The warning for a compiled policy some of whose scores were clamped,
 * or "" (buf, cap bytes). */
static void pol_clamp_warning(const oppolicy *p, char *buf, size_t cap) {
    const char *term = NULL;
    if (!p || oppolicy_clamped(p, &term) == 0) {
        buf[0] = '\0';
        return;
    }
    snprintf(buf, cap,
             "the term \"%s\" is not a finite number for some jobs (overflow): "
             "their scores were clamped to +-1.7976931348623157e+308, so they tie; "
             "scale the term down", term);
}

/* Compiles o when its spec changed since the last compile. */
static void pol_compile(struct server *s, struct opcache_obj *o) {
    struct opext *x = srv__ext(o);
    if (!x || !o->parse_ok)
        return;
    /* A status write (ours) changes no spec: keep the compiled program,
     * and with it what it counted (oppolicy_clamped). */
    int64_t gen = srv__generation(opcache_raw(o));
    if (x->compiled && gen > 0 && x->compiled_gen == gen)
        return;
    aiq_err e;
    aiq_err_clear(&e);
    oppolicy *p = oppolicy_compile(o->parsed, &e);
    if (!p) {
        /* o->perr carries the error; the last good compile stays. */
        o->parse_ok = false;
        (void)opcache_set_perr(o, &e);
        OPLOG(&s->log, OPLOG_WARN, "policy_compile_failed", o->key, srv__rv(opcache_raw(o)),
              "field=%s line=%d col=%d msg=\"%s\"", e.field, e.line, e.col, e.message);
        return;
    }
    oppolicy_free(x->compiled);
    x->compiled = p;
    x->compiled_gen = gen;
    s->policy_gen++;
    OPLOG(&s->log, OPLOG_INFO, "policy_compiled", o->key, srv__rv(opcache_raw(o)),
          "levels=%d", oppolicy_nlevels(p));
}

/* Picks the active policy and writes every policy's status. */
static void pol_select(struct server *s, const char *exclude) {
    opcache *c = s->cache[OPK_POLICY];
    char names[512] = "";
    int nactive = 0;
    const char *only = NULL;
    for (size_t i = 0; i < opcache_count(c); i++) {
        struct opcache_obj *o = opcache_at(c, i);
        const struct aiq_policy *p = o->parsed;
        if (exclude && strcmp(o->key, exclude) == 0)
            continue;
        /* A broken edit keeps the policy's active flag from the raw spec. */
        json_object *spec = NULL, *a = NULL;
        bool active = (o->parse_ok && p) ? p->spec.active
                      : (json_object_object_get_ex(opcache_raw(o), "spec", &spec) &&
                         json_object_object_get_ex(spec, "active", &a) &&
                         json_object_get_boolean(a));
        if (!active)
            continue;
        nactive++;
        only = o->key;
        size_t n = strlen(names);
        snprintf(names + n, sizeof names - n, "%s%s", n ? ", " : "", o->key);
    }
    char prev[sizeof s->active_policy];
    snprintf(prev, sizeof prev, "%s", s->active_policy);
    if (nactive == 1) {
        struct opcache_obj *o = opcache_get(c, only);
        struct opext *x = o ? o->ext : NULL;
        if (x && x->compiled)
            snprintf(s->active_policy, sizeof s->active_policy, "%.253s", only);
    } else if (nactive == 0) {
        s->active_policy[0] = '\0';
    } /* several: keep what runs */
    if (strcmp(prev, s->active_policy) != 0) {
        s->policy_gen++;
        char payload[600];
        snprintf(payload, sizeof payload, "{\"active\":\"%s\"}", s->active_policy);
        (void)srv_rec(s, store_journal_event(s->db, srv_now(), STORE_EV_POLICY,
                            s->active_policy[0] ? s->active_policy : "default", payload, NULL), "journal_event");
        OPLOG(&s->log, OPLOG_INFO, "policy_active", s->active_policy[0] ? s->active_policy : "default",
              NULL, "previous=%s", prev[0] ? prev : "default");
    }
    for (size_t i = 0; i < opcache_count(c); i++) {
        struct opcache_obj *o = opcache_at(c, i);
        struct opext *x = srv__ext(o);
        if (!x)
            continue;
        if (exclude && strcmp(o->key, exclude) == 0)
            continue;
        bool running = strcmp(o->key, s->active_policy) == 0;
        char msg[1200];
        json_object *st;
        if (!o->parse_ok) {
            snprintf(msg, sizeof msg, "%s%s", opcache_perr(o)->message,
                     x->compiled ? " (the previous version stays in use)" : "");
            st = pol_status(o, "Error", false, running, msg, opcache_perr(o)->line, opcache_perr(o)->col, NULL);
        } else if (nactive > 1) {
            snprintf(msg, sizeof msg, "conflict: %d policies are active (%s); %s stays in use",
                     nactive, names, s->active_policy[0] ? s->active_policy : "the built-in default");
            st = pol_status(o, "Conflict", true, false, msg, 0, 0, NULL);
        } else {
            char warn[400] = "";
            pol_clamp_warning(x->compiled, warn, sizeof warn);
            st = pol_status(o, running ? "Active" : "Inactive", true, running,
                            running ? "compiled; in use" : "compiled", 0, 0, warn);
        }
        srv__want_status(s, o, st);
    }
}

void reconcile_policy(struct server *s, enum kube_event_type t,
                      struct opcache_obj *o, json_object *obj) {
    (void)obj;
    if (t != KUBE_EV_DELETED && o)
        pol_compile(s, o);
    /* A deleted policy (removed from the cache right after this call) no
     * longer counts; if it was running, another or the default takes over. */
    pol_select(s, (t == KUBE_EV_DELETED && o) ? o->key : NULL);
}

/* After a cycle: counts newly clamped scores of the running policy and,
 * on the first of a compiled policy, logs it and republishes the
 * statuses so the policy's status.warnings names the term. */
void pol_after_cycle(struct server *s) {
    const oppolicy *p = srv__policy(s);
    const char *term = NULL;
    /* A new compile or another active policy counts from 0 (policy_gen
     * changes with both; a pointer could be reused by the allocator). */
    if (s->policy_gen != s->clamp_gen) {
        s->clamp_gen = s->policy_gen;
        s->clamp_seen = 0;
    }
    unsigned long n = p ? oppolicy_clamped(p, &term) : 0;
    if (n <= s->clamp_seen)
        return;
    opmetrics_clamped_add(s->metrics, n - s->clamp_seen);
    bool first = s->clamp_seen == 0;
    s->clamp_seen = n;
    if (!first)
        return;
    OPLOG(&s->log, OPLOG_WARN, "policy_score_clamped",
          s->active_policy[0] ? s->active_policy : "default", NULL,
          "term=\"%s\" scores=%lu", term, n);
    pol_select(s, NULL);
}
