/* reconcile_userquota.c -- the UserQuota reconciler and quota_refresh,
 * which decides which UserQuotas are accepted and writes the Group and
 * UserQuota statuses.
 *
 * Acceptance (group admins cannot hand out more than the group has):
 *  - the UserQuota's namespace must belong to a Group (spec.namespaces);
 *  - one UserQuota per user and group (a second one is rejected, naming
 *    the first);
 *  - for every resource the group limits (gpus, gpuMemoryMiB, cpu,
 *    memory, jobs), the sum of the accepted user quotas that limit it must
 *    stay within the group's (a user field left unlimited is bounded by
 *    the group quota and allots nothing).
 * UserQuotas are considered oldest first (creationTimestamp, then
 * namespace/name), so a new one can never push out one already accepted.
 * A rejected UserQuota does not count: the user is then limited by the
 * group quota only. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "operator/server.h"

static const char *const uq_res_names[5] = {"gpus", "gpuMemoryMiB", "cpu", "memory", "jobs"};

static void uq__vec(const struct aiq_quota *q, int64_t v[5]) {
    v[0] = q->gpus;
    v[1] = q->gpu_memory_mib;
    v[2] = q->cpu_milli;
    v[3] = q->memory_bytes;
    v[4] = q->jobs;
}

static int uq__cmp(const void *a, const void *b) {
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

static void uq__usage(struct server *s, const char *group, const char *user,
                      struct uq_usage *u) {
    opcache *c = s->cache[OPK_AIJOB];
    memset(u, 0, sizeof *u);
    for (size_t i = 0; i < opcache_count(c); i++) {
        struct opcache_obj *o = opcache_at(c, i);
        struct opext *x = o->ext;
        const struct aiq_aijob *j = o->parsed;
        if (!x || !x->job || !o->parse_ok || !j)
            continue;
        aiq_phase p = x->job->st.phase;
        if (p != AIQ_PHASE_ADMITTED && p != AIQ_PHASE_RUNNING)
            continue;
        if (strcmp(x->job->st.group, group) != 0)
            continue;
        if (user && (!j->spec.user || strcmp(j->spec.user, user) != 0))
            continue;
        int64_t r = j->spec.replicas;
        u->v[0] += r * j->spec.resources.gpus;
        u->v[1] += r * (j->spec.resources.gpus > 0 ? j->spec.resources.gpus : 1) *
                   j->spec.resources.gpu_memory_mib;
        u->v[2] += r * j->spec.resources.cpu_milli;
        u->v[3] += r * j->spec.resources.memory_bytes;
        u->v[4] += 1;
    }
}

static json_object *uq__res_obj(const int64_t v[5], bool skip_unlimited) {
    json_object *o = json_object_new_object();
    for (int k = 0; o && k < 5; k++) {
        if (skip_unlimited && v[k] < 0)
            continue;
        json_object_object_add(o, uq_res_names[k], json_object_new_int64(v[k]));
    }
    return o;
}

/* Decides acceptance and writes statuses; see server.h. */
void quota_refresh(struct server *s, double now) {
    opcache *uc = s->cache[OPK_USERQUOTA], *gc = s->cache[OPK_GROUP];
    size_t n = opcache_count(uc);
    struct opcache_obj **order = n ? calloc(n, sizeof *order) : NULL;
    if (n && !order)
        return;
    for (size_t i = 0; i < n; i++)
        order[i] = opcache_at(uc, i);
    if (n > 1)
        qsort(order, n, sizeof *order, uq__cmp);
    opmetrics_quota_reset(s->metrics);

    /* Per group: sum of accepted user quotas, built while deciding. */
    for (size_t gi = 0; gi < opcache_count(gc); gi++) {
        struct opcache_obj *go = opcache_at(gc, gi);
        if (!go->parse_ok || !go->parsed)
            continue;
        const struct aiq_group *g = go->parsed;
        int64_t gq[5], sum[5] = {0, 0, 0, 0, 0};
        uq__vec(&g->spec.quota, gq);
        for (size_t i = 0; i < n; i++) {
            struct opcache_obj *o = order[i];
            struct opext *x = srv__ext(o);
            const struct aiq_userquota *u = o->parse_ok ? o->parsed : NULL;
            if (!x || !u)
                continue;
            const struct aiq_group *owner = srv__group_for_ns(s, u->meta.namespace_);
            if (owner != g)
                continue;
            snprintf(x->group, sizeof x->group, "%s", g->meta.name);
            char reason[512] = "";
            const char *code = "";
            /* One per user. */
            for (size_t k = 0; k < i && !reason[0]; k++) {
                struct opext *xk = order[k]->ext;
                const struct aiq_userquota *uk = order[k]->parse_ok ? order[k]->parsed : NULL;
                if (xk && uk && xk->accepted && strcmp(xk->group, g->meta.name) == 0 &&
                    strcmp(uk->spec.user, u->spec.user) == 0)
                {
                    code = "DuplicateUser";
                    snprintf(reason, sizeof reason,
                             "user %.100s already has UserQuota %.200s in group %.100s",
                             u->spec.user, order[k]->key, g->meta.name);
                }
            }
            int64_t uqv[5];
            uq__vec(&u->spec.quota, uqv);
            for (int k = 0; k < 5 && !reason[0]; k++) {
                if (gq[k] < 0)
                    continue;
                /* A field the user leaves unlimited is bounded by the
                 * group's own quota and allots nothing. */
                if (uqv[k] >= 0 && sum[k] + uqv[k] > gq[k] && (code = "ExceedsGroupQuota"))
                    snprintf(reason, sizeof reason,
                             "sum of user quotas for %s would be %lld, above group %.100s's quota %lld",
                             uq_res_names[k], (long long)(sum[k] + uqv[k]), g->meta.name,
                             (long long)gq[k]);
            }
            bool was = x->accepted;
            x->accepted = !reason[0];
            if (x->accepted)
                for (int k = 0; k < 5; k++)
                    if (uqv[k] > 0)
                        sum[k] += uqv[k];
            if (was != x->accepted) {
                s->policy_gen++;
                OPLOG(&s->log, OPLOG_INFO, x->accepted ? "userquota_accepted" : "userquota_rejected",
                      o->key, srv__rv(o->raw), "group=%s reason=\"%s\"", g->meta.name, reason);
            }
            struct uq_usage uu;
            uq__usage(s, g->meta.name, u->spec.user, &uu);
            json_object *st = json_object_new_object();
            if (!st)
                continue;
            json_object_object_add(st, "accepted", json_object_new_boolean(x->accepted));
            json_object_object_add(st, "phase", json_object_new_string(x->accepted ? "Accepted" : "Rejected"));
            json_object_object_add(st, "group", json_object_new_string(g->meta.name));
            if (reason[0]) {
                json_object_object_add(st, "reason", json_object_new_string(code));
                json_object_object_add(st, "message", json_object_new_string(reason));
            }
            json_object *usage = uq__res_obj(uu.v, false);
            double used_h = 0;
            if (usage && u->spec.budget.gpu_hours >= 0 &&
                store_usage_window(s->db, u->spec.user, g->meta.name,
                                   now - (u->spec.budget.window_s > 0 ? u->spec.budget.window_s : 2592000),
                                   &used_h, NULL) == AIQ_OK)
                json_object_object_add(usage, "gpuHours", json_object_new_double(round(used_h * 1e4) / 1e4));
            json_object_object_add(st, "usage", usage);
            json_object_object_add(st, "observedGeneration",
                                   json_object_new_int64(srv__generation(o->raw)));
            srv__want_status(s, o, st);
            opmetrics_quota_set(s->metrics, g->meta.name, u->spec.user, "gpus", (double)uu.v[0]);
            opmetrics_quota_set(s->metrics, g->meta.name, u->spec.user, "jobs", (double)uu.v[4]);
        }
        /* The group's own status. */
        struct uq_usage gu;
        uq__usage(s, g->meta.name, NULL, &gu);
        json_object *st = json_object_new_object();
        if (!st)
            continue;
        json_object *usage = uq__res_obj(gu.v, false);
        double used_h = 0;
        if (usage && g->spec.budget.gpu_hours >= 0 &&
            store_usage_window(s->db, NULL, g->meta.name,
                               now - (g->spec.budget.window_s > 0 ? g->spec.budget.window_s : 2592000),
                               &used_h, NULL) == AIQ_OK)
            json_object_object_add(usage, "gpuHours", json_object_new_double(round(used_h * 1e4) / 1e4));
        json_object_object_add(st, "usage", usage);
        json_object_object_add(st, "allotted", uq__res_obj(sum, false));
        json_object_object_add(st, "observedGeneration",
                               json_object_new_int64(srv__generation(go->raw)));
        srv__want_status(s, go, st);
        opmetrics_quota_set(s->metrics, g->meta.name, "", "gpus", (double)gu.v[0]);
        opmetrics_quota_set(s->metrics, g->meta.name, "", "jobs", (double)gu.v[4]);
    }
    /* UserQuotas outside every group. */
    for (size_t i = 0; i < n; i++) {
        struct opcache_obj *o = order[i];
        struct opext *x = srv__ext(o);
        const struct aiq_userquota *u = o->parse_ok ? o->parsed : NULL;
        char reason[600];
        if (!x)
            continue;
        if (u && srv__group_for_ns(s, u->meta.namespace_))
            continue;
        x->accepted = false;
        x->group[0] = '\0';
        if (u)
            snprintf(reason, sizeof reason, "namespace %.200s is in no Group's spec.namespaces",
                     u->meta.namespace_);
        else
            snprintf(reason, sizeof reason, "%s", o->perr.message);
        json_object *st = json_object_new_object();
        if (!st)
            continue;
        json_object_object_add(st, "accepted", json_object_new_boolean(false));
        json_object_object_add(st, "phase", json_object_new_string("Rejected"));
        json_object_object_add(st, "reason", json_object_new_string(u ? "NoGroup" : "Invalid"));
        json_object_object_add(st, "message", json_object_new_string(reason));
        json_object_object_add(st, "observedGeneration",
                               json_object_new_int64(srv__generation(o->raw)));
        srv__want_status(s, o, st);
    }
    free(order);
}

void reconcile_userquota(struct server *s, enum kube_event_type t,
                         struct opcache_obj *o, json_object *obj) {
    double now = srv_now();
    char payload[256];
    if (t == KUBE_EV_DELETED) {
        store_delete_userquota(s->db, srv__ns(obj), srv__name(obj), NULL);
        snprintf(payload, sizeof payload, "{\"userquota\":\"%.100s/%.100s\",\"deleted\":true}",
                 srv__ns(obj), srv__name(obj));
        store_journal_event(s->db, now, STORE_EV_QUOTA, o ? o->key : srv__name(obj), payload, NULL);
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
        store_upsert_userquota(s->db, u, x->group[0] ? x->group : NULL, x->accepted,
                               NULL, NULL);
        snprintf(payload, sizeof payload,
                 "{\"user\":\"%.100s\",\"accepted\":%s,\"gpus\":%lld}", u->spec.user,
                 x->accepted ? "true" : "false", (long long)u->spec.quota.gpus);
        store_journal_event(s->db, now, STORE_EV_QUOTA, o->key, payload, NULL);
    }
}
