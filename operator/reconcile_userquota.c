/* reconcile_userquota.c -- the UserQuota reconciler and quota_refresh,
 * which decides which UserQuotas are accepted (policy/quota_rules.h: per
 * group, oldest first, the accepted ones never add up past the group's
 * quota or budget; one per user) and writes the Group status (usage of
 * its admitted and running jobs, GPU-hours in the budget window, what is
 * allotted) and each UserQuota's status (accepted, or the CamelCase
 * reason and the one-line message). A UserQuota whose namespace belongs
 * to no Group is rejected (NoGroup); a rejected one does not count, so
 * its user is bounded by the group quota only. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/units.h"
#include "operator/server.h"
#include "policy/quota_rules.h"

/* Status names; gpuMemory is written as a quantity ("320Gi"), which
 * kubectl describe labels "Gpu Memory" (gpuMemoryMiB read "Gpu Memory Mi B"). */
static const char *const uq_res_names[5] = {"gpus", "gpuMemory", "cpu", "memory", "jobs"};

static void uq_vec(const struct aiq_quota *q, int64_t v[5]) {
    v[0] = q->gpus;
    v[1] = q->gpu_memory_mib;
    v[2] = q->cpu_milli;
    v[3] = q->memory_bytes;
    v[4] = q->jobs;
}

static int uq_cmp(const void *a, const void *b) {
    const struct opcache_obj *x = *(const struct opcache_obj *const *)a;
    const struct opcache_obj *y = *(const struct opcache_obj *const *)b;
    const struct aiq_userquota *ux = x->parse_ok ? x->parsed : NULL;
    const struct aiq_userquota *uy = y->parse_ok ? y->parsed : NULL;
    double tx = ux ? ux->meta.creation_time : 0, ty = uy ? uy->meta.creation_time : 0;
    if (tx != ty)
        return tx < ty ? -1 : 1;
    return strcmp(x->key, y->key);
}

/* Usage of running/admitted jobs, per group (user NULL) or per user. */
struct uq_usage {
    int64_t v[5];
};

/* The parsed job of o when it is admitted or running in group, else NULL. */
static const struct aiq_aijob *uq_active_job(const struct opcache_obj *o, const char *group) {
    const struct opext *x = o->ext;
    if (!x || !x->job || !o->parse_ok || !o->parsed)
        return NULL;
    aiq_phase p = x->job->st.phase;
    if (p != AIQ_PHASE_ADMITTED && p != AIQ_PHASE_RUNNING)
        return NULL;
    return strcmp(opstatus_group(&x->job->st), group) == 0 ? o->parsed : NULL;
}

/* Adds what j holds to v (gpus, GPU memory in MiB, cpu, memory, jobs). */
static void uq_add_job(const struct server *s, const struct aiq_aijob *j, int64_t v[5]) {
    int64_t r = j->spec.replicas;
    /* A shared replica holds a whole GPU where the mechanism cannot
     * share (gpu_mech_gpus). */
    int g = gpu_mech_gpus(s->flags.gpu_mech, &j->spec.resources);
    v[0] += r * g;
    v[1] += r * (g > 0 ? g : 1) * j->spec.resources.gpu_memory_mib;
    v[2] += r * j->spec.resources.cpu_milli;
    v[3] += r * j->spec.resources.memory_bytes;
    v[4] += 1;
}

static void uq__usage(struct server *s, const char *group, const char *user,
                      struct uq_usage *u) {
    opcache *c = s->cache[OPK_AIJOB];
    memset(u, 0, sizeof *u);
    for (size_t i = 0; i < opcache_count(c); i++) {
        const struct aiq_aijob *j = uq_active_job(opcache_at(c, i), group);
        if (!j || (user && (!j->spec.user || strcmp(j->spec.user, user) != 0)))
            continue;
        uq_add_job(s, j, u->v);
    }
}

/* aiq_quota_used for the users of group g with admitted or running jobs
 * and no UserQuota there (those have their series from the UserQuota):
 * one pass over the jobs, one entry per user. mine[0..m) are the group's
 * UserQuotas. Out of memory: those series are left out until the next
 * refresh (metrics only; logged). */
static void uq_other_user_metrics(struct server *s, const struct aiq_group *g,
                                  struct opcache_obj *const *mine, int m) {
    struct { const char *user; int64_t v[5]; } *us = NULL;
    size_t n = 0, cap = 0;
    opcache *c = s->cache[OPK_AIJOB];
    for (size_t i = 0; i < opcache_count(c); i++) {
        const struct aiq_aijob *j = uq_active_job(opcache_at(c, i), g->meta.name);
        const char *user = j && j->spec.user ? j->spec.user : NULL;
        bool has_uq = false;
        for (int k = 0; user && k < m && !has_uq; k++)
            has_uq = strcmp(((const struct aiq_userquota *)mine[k]->parsed)->spec.user, user) == 0;
        if (!user || has_uq)
            continue;
        size_t k = 0;
        while (k < n && strcmp(us[k].user, user) != 0)
            k++;
        if (k == n) {
            if (n == cap) {
                size_t nc = cap ? 2 * cap : 16;
                void *p = realloc(us, nc * sizeof *us);
                if (!p) {
                    OPLOG(&s->log, OPLOG_WARN, "out_of_memory", g->meta.name, NULL,
                          "what=\"aiq_quota_used per user\"");
                    break;
                }
                us = p;
                cap = nc;
            }
            memset(&us[n], 0, sizeof us[n]);
            us[n++].user = user;
        }
        uq_add_job(s, j, us[k].v);
    }
    for (size_t k = 0; k < n; k++) {
        opmetrics_quota_set(s->metrics, g->meta.name, us[k].user, "gpus", (double)us[k].v[0]);
        opmetrics_quota_set(s->metrics, g->meta.name, us[k].user, "jobs", (double)us[k].v[4]);
    }
    free(us);
}

/* The five resources of v as an object (the unlimited ones left out when
 * skip_unlimited), or NULL when out of memory. */
static json_object *uq_res_obj(const int64_t v[5], bool skip_unlimited) {
    json_object *o = json_object_new_object();
    bool failed = !o;
    for (int k = 0; !failed && k < 5; k++) {
        if (skip_unlimited && v[k] < 0)
            continue;
        char q[32];
        aiq_jset(o, uq_res_names[k],
                 k == 1 ? json_object_new_string(aiq_quantity_format_mib(v[k], q, sizeof q))
                        : json_object_new_int64(v[k]),
                 &failed);
    }
    if (failed) {
        json_object_put(o);
        return NULL;
    }
    return o;
}

/* The Group's Conflict condition: True, naming the namespaces another
 * Group claims too and that Group, while any is; False otherwise. The
 * namespace's jobs wait meanwhile (job__group). */
static json_object *uq_conflict_conditions(struct server *s, const struct aiq_group *g) {
    char msg[1024] = "";
    size_t len = 0;
    for (int k = 0; k < g->spec.nnamespaces; k++) {
        const struct aiq_group *cl[2];
        if (srv__ns_claims(s, g->spec.namespaces[k], cl) < 2)
            continue;
        const struct aiq_group *other = cl[0] == g ? cl[1] : cl[0];
        int w = snprintf(msg + len, sizeof msg - len, "%snamespace %s is also claimed by Group %s",
                         len ? "; " : "", g->spec.namespaces[k], other ? other->meta.name : "?");
        if (w < 0 || (size_t)w >= sizeof msg - len)
            break; /* the message is cut; the condition stays True */
        len += (size_t)w;
    }
    json_object *arr = json_object_new_array(), *c = json_object_new_object();
    bool failed = !arr;
    aiq_jset(c, "type", json_object_new_string("Conflict"), &failed);
    aiq_jset(c, "status", json_object_new_string(msg[0] ? "True" : "False"), &failed);
    aiq_jset(c, "reason", json_object_new_string(msg[0] ? "NamespaceClaimedTwice" : "NoConflict"),
             &failed);
    aiq_jset(c, "message",
             json_object_new_string(msg[0] ? msg
                                           : "every namespace of the group is claimed by it alone"),
             &failed);
    aiq_jpush(arr, c, &failed);
    if (failed) {
        json_object_put(arr);
        return NULL;
    }
    return arr;
}

/* What quota_refresh works with: the UserQuotas oldest first (order,
 * n of them) and, for the group at hand, its entries for policy/
 * quota_rules, their verdicts and their cache objects (n places each). */
struct uq_scratch {
    struct opcache_obj **order;
    size_t n;
    struct qr_entry *ents;
    struct qr_verdict *ver;
    struct opcache_obj **mine;
};

/* Fills sc->ents and sc->mine with group g's UserQuotas, oldest first;
 * returns how many. */
static int uq_group_entries(struct server *s, const struct aiq_group *g, struct uq_scratch *sc) {
    int m = 0;
    for (size_t i = 0; i < sc->n; i++) {
        struct opcache_obj *o = sc->order[i];
        const struct aiq_userquota *u = o->parse_ok ? o->parsed : NULL;
        if (!u || !srv__ext(o) || srv__group_for_ns(s, u->meta.namespace_) != g)
            continue;
        sc->ents[m].name = o->key;
        sc->ents[m].user = u->spec.user;
        sc->ents[m].creation_time = u->meta.creation_time;
        sc->ents[m].quota = u->spec.quota;
        sc->ents[m].budget = u->spec.budget;
        sc->mine[m++] = o;
    }
    return m;
}

/* Adds "gpuHours" to usage (may be NULL: nothing) when budget b limits
 * GPU-hours: what user (NULL: the whole group) used in group within b's
 * window (30 days unless set), to 4 decimals. A store error leaves it
 * out until the next refresh; out of memory sets *failed. */
static void uq_add_gpu_hours(struct server *s, json_object *usage, const char *user,
                             const char *group, const struct aiq_budget *b, double now,
                             bool *failed) {
    double used_h = 0;
    if (usage && b->gpu_hours >= 0 &&
        store_usage_window(s->db, user, group, now - (b->window_s > 0 ? b->window_s : 2592000),
                           &used_h, NULL) == AIQ_OK)
        aiq_jset(usage, "gpuHours", json_object_new_double(round(used_h * 1e4) / 1e4), failed);
}

/* Applies verdict v to UserQuota o of group g (logged when it changes,
 * which also reorders the queue), wants its status and sets its
 * aiq_quota_used series. Out of memory: no status this refresh. */
static void uq_userquota_status(struct server *s, const struct aiq_group *g,
                                struct opcache_obj *o, const struct qr_verdict *v, double now) {
    struct opext *x = o->ext;
    const struct aiq_userquota *u = o->parsed;
    if (!x->group || strcmp(x->group, g->meta.name) != 0) {
        char *name = strdup(g->meta.name);
        if (!name) {
            OPLOG(&s->log, OPLOG_ERROR, "userquota_not_counted", o->key, srv__rv(opcache_raw(o)),
                  "group=%s msg=\"out of memory; the next refresh counts it\"", g->meta.name);
            x->accepted = false;
            return;
        }
        free(x->group);
        x->group = name;
    }
    bool was = x->accepted;
    x->accepted = v->accepted;
    const char *code = x->accepted ? ""
                       : strstr(v->message, "already has") ? "DuplicateUser"
                       : "ExceedsGroupQuota";
    if (was != x->accepted) {
        s->policy_gen++;
        OPLOG(&s->log, OPLOG_INFO, x->accepted ? "userquota_accepted" : "userquota_rejected",
              o->key, srv__rv(opcache_raw(o)), "group=%s reason=%s msg=\"%s\"", g->meta.name,
              code, v->message);
    }
    struct uq_usage uu;
    uq__usage(s, g->meta.name, u->spec.user, &uu);
    json_object *st = json_object_new_object();
    bool failed = !st;
    aiq_jset(st, "accepted", json_object_new_boolean(x->accepted), &failed);
    aiq_jset(st, "phase", json_object_new_string(x->accepted ? "Accepted" : "Rejected"), &failed);
    aiq_jset(st, "group", json_object_new_string(g->meta.name), &failed);
    if (!x->accepted) {
        aiq_jset(st, "reason", json_object_new_string(code), &failed);
        aiq_jset(st, "message", json_object_new_string(v->message), &failed);
    }
    json_object *usage = uq_res_obj(uu.v, false);
    uq_add_gpu_hours(s, usage, u->spec.user, g->meta.name, &u->spec.budget, now, &failed);
    aiq_jset(st, "usage", usage, &failed);
    aiq_jset(st, "observedGeneration", json_object_new_int64(srv__generation(opcache_raw(o))), &failed);
    if (failed) {
        json_object_put(st);
        return;
    }
    srv__want_status(s, o, st);
    opmetrics_quota_set(s->metrics, g->meta.name, u->spec.user, "gpus", (double)uu.v[0]);
    opmetrics_quota_set(s->metrics, g->meta.name, u->spec.user, "jobs", (double)uu.v[4]);
}

/* Wants Group go's status (usage, GPU-hours, what its accepted
 * UserQuotas allot, the Conflict condition) and sets its aiq_quota_used
 * series, the group's and those of its users without a UserQuota
 * (mine[0..m) are the group's UserQuotas). Out of memory: no status and
 * no series this refresh. */
static void uq_group_status(struct server *s, struct opcache_obj *go,
                            const struct qr_allotted *allot, struct opcache_obj *const *mine,
                            int m, double now) {
    const struct aiq_group *g = go->parsed;
    struct uq_usage gu;
    int64_t sum[5];
    uq_vec(&allot->quota, sum);
    uq__usage(s, g->meta.name, NULL, &gu);
    json_object *st = json_object_new_object();
    bool failed = !st;
    json_object *usage = uq_res_obj(gu.v, false);
    uq_add_gpu_hours(s, usage, NULL, g->meta.name, &g->spec.budget, now, &failed);
    aiq_jset(st, "usage", usage, &failed);
    aiq_jset(st, "allotted", uq_res_obj(sum, true), &failed);
    aiq_jset(st, "conditions", uq_conflict_conditions(s, g), &failed);
    aiq_jset(st, "observedGeneration", json_object_new_int64(srv__generation(opcache_raw(go))), &failed);
    if (failed) {
        json_object_put(st);
        return;
    }
    srv__want_status(s, go, st);
    opmetrics_quota_set(s->metrics, g->meta.name, "", "gpus", (double)gu.v[0]);
    opmetrics_quota_set(s->metrics, g->meta.name, "", "jobs", (double)gu.v[4]);
    uq_other_user_metrics(s, g, mine, m);
}

/* One Group (go, parsed): policy/quota_rules decides which of its
 * UserQuotas fit, then their statuses and the group's. When the rules
 * fail (logged), none of them is written this refresh. */
static void uq_refresh_group(struct server *s, struct opcache_obj *go, struct uq_scratch *sc,
                             double now) {
    const struct aiq_group *g = go->parsed;
    int m = uq_group_entries(s, g, sc);
    struct qr_allotted allot;
    aiq_err qe;
    aiq_err_clear(&qe);
    memset(&allot, 0, sizeof allot);
    aiq_quota_unlimited(&allot.quota);
    if (m > 0 && qr_decide(g->meta.name, &g->spec.quota, &g->spec.budget, sc->ents, m, sc->ver,
                           &allot, &qe) != AIQ_OK) {
        OPLOG(&s->log, OPLOG_ERROR, "quota_rules_failed", go->key, NULL, "msg=\"%s\"",
              qe.message);
        return;
    }
    for (int i = 0; i < m; i++)
        uq_userquota_status(s, g, sc->mine[i], &sc->ver[i], now);
    uq_group_status(s, go, &allot, sc->mine, m, now);
}

/* Rejects UserQuota o when its namespace is in no Group (NoGroup, or two
 * Groups claim it) or it did not parse (Invalid), and wants its status;
 * one a Group holds, or one without its extension, is left alone. */
static void uq_reject_groupless(struct server *s, struct opcache_obj *o) {
    struct opext *x = srv__ext(o);
    const struct aiq_userquota *u = o->parse_ok ? o->parsed : NULL;
    char reason[600];
    if (!x)
        return;
    if (u && srv__group_for_ns(s, u->meta.namespace_))
        return;
    x->accepted = false;
    free(x->group);
    x->group = NULL;
    const struct aiq_group *cl[2];
    if (u && srv__ns_claims(s, u->meta.namespace_, cl) >= 2)
        snprintf(reason, sizeof reason,
                 "namespace %.200s is claimed by Groups %.150s and %.150s: no UserQuota there "
                 "counts until only one claims it", u->meta.namespace_, cl[0]->meta.name,
                 cl[1]->meta.name);
    else if (u)
        snprintf(reason, sizeof reason, "namespace %.200s is in no Group's spec.namespaces",
                 u->meta.namespace_);
    else
        snprintf(reason, sizeof reason, "%s", opcache_perr(o)->message);
    json_object *st = json_object_new_object();
    bool failed = !st;
    aiq_jset(st, "accepted", json_object_new_boolean(false), &failed);
    aiq_jset(st, "phase", json_object_new_string("Rejected"), &failed);
    aiq_jset(st, "reason", json_object_new_string(u ? "NoGroup" : "Invalid"), &failed);
    aiq_jset(st, "message", json_object_new_string(reason), &failed);
    aiq_jset(st, "observedGeneration", json_object_new_int64(srv__generation(opcache_raw(o))), &failed);
    if (failed) {
        json_object_put(st);
        return;
    }
    srv__want_status(s, o, st);
}

/* Decides acceptance and writes statuses; see server.h. */
void quota_refresh(struct server *s, double now) {
    opcache *uc = s->cache[OPK_USERQUOTA], *gc = s->cache[OPK_GROUP];
    struct uq_scratch sc = {.n = opcache_count(uc)};
    size_t n = sc.n;
    sc.order = n ? calloc(n, sizeof *sc.order) : NULL;
    if (n && !sc.order)
        return;
    for (size_t i = 0; i < n; i++)
        sc.order[i] = opcache_at(uc, i);
    if (n > 1)
        qsort(sc.order, n, sizeof *sc.order, uq_cmp);
    opmetrics_quota_reset(s->metrics);

    sc.ents = n ? calloc(n, sizeof *sc.ents) : NULL;
    sc.ver = n ? calloc(n, sizeof *sc.ver) : NULL;
    sc.mine = n ? calloc(n, sizeof *sc.mine) : NULL;
    if (n && (!sc.ents || !sc.ver || !sc.mine))
        goto out;
    for (size_t gi = 0; gi < opcache_count(gc); gi++) {
        struct opcache_obj *go = opcache_at(gc, gi);
        if (go->parse_ok && go->parsed)
            uq_refresh_group(s, go, &sc, now);
    }
    /* UserQuotas outside every group. */
    for (size_t i = 0; i < n; i++)
        uq_reject_groupless(s, sc.order[i]);
out:
    free(sc.ents);
    free(sc.ver);
    free(sc.mine);
    free(sc.order);
}
void reconcile_userquota(struct server *s, enum kube_event_type t,
                         struct opcache_obj *o, json_object *obj) {
    double now = srv_now();
    char payload[256];
    if (t == KUBE_EV_DELETED) {
        (void)srv_rec(s, store_delete_userquota(s->db, srv__ns(obj), srv__name(obj), NULL),
                      "delete_userquota");
        snprintf(payload, sizeof payload, "{\"userquota\":\"%.100s/%.100s\",\"deleted\":true}",
                 srv__ns(obj), srv__name(obj));
        (void)srv_rec(s, store_journal_event(s->db, now, STORE_EV_QUOTA, o ? o->key : srv__name(obj), payload, NULL),
                      "journal_event");
        if (o && o->ext)
            ((struct opext *)o->ext)->accepted = false;
        s->policy_gen++;
        quota_refresh(s, now);
        return;
    }
    quota_refresh(s, now);
    struct opext *x = o->ext;
    if (o->parse_ok && x) {
        const struct aiq_userquota *u = o->parsed;
        (void)srv_rec(s, store_upsert_userquota(s->db, u, x->group, x->accepted,
                               NULL, NULL), "upsert_userquota");
        snprintf(payload, sizeof payload,
                 "{\"user\":\"%.100s\",\"accepted\":%s,\"gpus\":%lld}", u->spec.user,
                 x->accepted ? "true" : "false", (long long)u->spec.quota.gpus);
        (void)srv_rec(s, store_journal_event(s->db, now, STORE_EV_QUOTA, o->key, payload, NULL),
                      "journal_event");
    }
}
