/* reconcile_group.c -- the Group reconciler: the store's group and users
 * view, the journal's quota changes, and the Group status (usage by the
 * group's admitted and running jobs, GPU-hours used in the budget window,
 * and what is allotted to users by accepted UserQuotas). The status
 * computation for Groups and UserQuotas lives in reconcile_userquota.c
 * (quota_refresh), since acceptance decides what is allotted. */
#include <stdio.h>
#include <string.h>

#include "common/json.h"
#include "operator/server.h"

void reconcile_group(struct server *s, enum kube_event_type t,
                     struct opcache_obj *o, json_object *obj) {
    double now = srv_now();
    job_resync_all(s); /* a job's group comes from its namespace's Group */
    char payload[256];
    aiq_err e;
    aiq_err_clear(&e);
    if (t == KUBE_EV_DELETED) {
        (void)srv_rec(s, store_delete_group(s->db, srv__name(obj), NULL), "delete_group");
        snprintf(payload, sizeof payload, "{\"group\":\"%.200s\",\"deleted\":true}",
                 srv__name(obj));
        (void)srv_rec(s, store_journal_event(s->db, now, STORE_EV_QUOTA, srv__name(obj), payload, NULL),
                      "journal_event");
        OPLOG(&s->log, OPLOG_INFO, "group_deleted", srv__name(obj), srv__rv(obj), "%s", "");
        s->policy_gen++; /* cached scores carry group factors */
        return;
    }
    if (!o->parse_ok) {
        OPLOG(&s->log, OPLOG_WARN, "group_invalid", o->key, srv__rv(obj),
              "field=%s msg=\"%s\"", opcache_perr(o)->field, opcache_perr(o)->message);
        json_object *st = json_object_new_object();
        bool failed = !st;
        aiq_jset(st, "message", json_object_new_string(opcache_perr(o)->message), &failed);
        aiq_jset(st, "observedGeneration", json_object_new_int64(srv__generation(obj)), &failed);
        if (failed) { /* out of memory: no status this time, never half of one */
            json_object_put(st);
            st = NULL;
        }
        srv__want_status(s, o, st);
        return;
    }
    const struct aiq_group *g = o->parsed;
    if (store_upsert_group(s->db, g, &e) != AIQ_OK)
        OPLOG(&s->log, OPLOG_WARN, "store_error", o->key, NULL,
              "op=upsert_group msg=\"%s\"", e.message);
    snprintf(payload, sizeof payload,
             "{\"group\":\"%.100s\",\"level\":%d,\"gpus\":%lld,\"jobs\":%lld,\"budget_gpu_hours\":%g}",
             g->meta.name, (int)g->spec.level, (long long)g->spec.quota.gpus,
             (long long)g->spec.quota.jobs, g->spec.budget.gpu_hours);
    (void)srv_rec(s, store_journal_event(s->db, now, STORE_EV_QUOTA, o->key, payload, NULL),
                  "journal_event");
    OPLOG(&s->log, OPLOG_INFO, "group_seen", o->key, srv__rv(obj), "namespaces=%d members=%d",
          g->spec.nnamespaces, g->spec.nmembers);
    s->policy_gen++;
    quota_refresh(s, now);
}
