/* actions.c -- the queue's preemptions and elastic resizes carried out on
 * the cluster (q_output.actions, docs/queue.md "Preemption"): each action
 * is journaled first (decision "preempt"/"resize", position = the new
 * size, message = the uid of the job room is made for), then the victim's
 * pods are annotated (aiq.dev/preempted-by, aiq.dev/stop-reason: the
 * workload can watch them through a downward API volume and checkpoint)
 * and deleted gracefully with their own terminationGracePeriodSeconds, or
 * the grown replicas' gated pods are created. Both jobs get a condition
 * and an Event naming the other. The job state changes themselves are in
 * reconcile_aijob.c (job_preempt, job_shrink, job_grow), which also
 * finishes them once the pods are gone. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "operator/pods.h"
#include "operator/server.h"

/* Reason text of an action, as the simulator journals it. */
const char *actions_reason(int r) {
    switch (r) {
    case Q_R_PREEMPTED: return "Preempted";
    case Q_R_PREEMPTED_SCORE: return "PreemptedByScore";
    case Q_R_RECLAIMED: return "Reclaimed";
    case Q_R_SHRUNK: return "Shrunk";
    case Q_R_GROWN: return "Grown";
    default: return "Waiting";
    }
}

/* Why, in words, for messages. */
static const char *act_why(int r) {
    switch (r) {
    case Q_R_PREEMPTED: return "a job of a higher level";
    case Q_R_PREEMPTED_SCORE: return "a job of its level with a higher score";
    case Q_R_RECLAIMED: return "its group ran on borrowed quota the owner needs back";
    case Q_R_SHRUNK: return "an elastic job gives replicas back before anyone is preempted";
    default: return "the queue's decision";
    }
}

/* Merge-patches metadata.annotations of the pod at key with the given
 * (name, value) pairs (value NULL removes). Returns 0, or -1 (logged). */
static int act_annotate(struct server *s, struct opcache_obj *p, const char *const *kv, int n) {
    char path[1024];
    aiq_err e;
    aiq_err_clear(&e);
    json_object *patch = json_object_new_object(), *md = json_object_new_object(),
                *ann = json_object_new_object();
    int rc = -1;
    bool failed = !patch;
    for (int i = 0; i < n; i++) {
        if (kv[2 * i + 1])
            aiq_jset(ann, kv[2 * i], json_object_new_string(kv[2 * i + 1]), &failed);
        else
            aiq_jset_null(ann, kv[2 * i], &failed); /* merge patch: remove it */
    }
    aiq_jset(md, "annotations", ann, &failed);
    aiq_jset(patch, "metadata", md, &failed);
    if (failed) /* out of memory, logged below */
        goto out;
    if (srv__path_of(path, sizeof path, OPK_POD, p, NULL, &e) != AIQ_OK)
        goto out;
    aiq_rc r = kube_patch(s->kc, path, KUBE_PATCH_MERGE, patch, NULL, &e);
    if (r == AIQ_OK || r == AIQ_ENOTFOUND)
        rc = 0;
out:
    if (rc != 0)
        OPLOG(&s->log, OPLOG_WARN, "pod_annotate_failed", p->key, srv__rv(opcache_raw(p)),
              "http=%d msg=\"%s\"", e.http_status, e.message[0] ? e.message : "out of memory");
    json_object_put(patch);
    return rc;
}

/* Annotates then deletes (gracefully: no grace period given, so the pod's
 * own terminationGracePeriodSeconds applies) the pods of replicas
 * [from, to) of j; by is the key of the job room is made for ("" none).
 * Pods already being deleted or missing are skipped. */
void actions_stop_pods(struct server *s, const struct aiq_aijob *j, int from, int to,
                       const char *by, const char *reason) {
    char name[AIQ_MAX_NAME + 1], key[OPCACHE_KEY_MAX], path[1024];
    for (int i = from; i < to; i++) {
        if (pods_name(name, sizeof name, j->meta.name, i) != 0)
            continue;
        snprintf(key, sizeof key, "%s/%s", j->meta.namespace_, name);
        struct opcache_obj *p = opcache_get(s->cache[OPK_POD], key);
        if (!p || !*srv__rv(opcache_raw(p)) || aiq_jpath_str(opcache_raw(p), "metadata.deletionTimestamp"))
            continue;
        const char *kv[] = {ACTIONS_ANN_PREEMPTED_BY, by && *by ? by : NULL,
                            ACTIONS_ANN_STOP_REASON, reason};
        /* The delete goes ahead even when the annotation failed: the
         * room is promised, and SIGTERM still tells the workload. */
        (void)act_annotate(s, p, kv, 2);
        aiq_err e;
        aiq_err_clear(&e);
        if (srv__path_of(path, sizeof path, OPK_POD, p, NULL, &e) != AIQ_OK)
            continue;
        aiq_rc rc = kube_delete(s->kc, path, "Background", NULL, &e);
        if (rc != AIQ_OK && rc != AIQ_ENOTFOUND)
            OPLOG(&s->log, OPLOG_WARN, "pod_delete_failed", key, NULL,
                  "rc=%s http=%d msg=\"%s\"", aiq_strerror(rc), e.http_status, e.message);
        else
            OPLOG(&s->log, OPLOG_INFO, "pod_stopped", key, srv__rv(opcache_raw(p)),
                  "job=%s reason=%s by=%s", j->meta.name, reason, by && *by ? by : "-");
    }
}

/* Sets aiq.dev/replicas = n on the live pods of replicas [0, n) whose
 * annotation says otherwise. */
void actions_annotate_size(struct server *s, const struct aiq_aijob *j, int n) {
    char name[AIQ_MAX_NAME + 1], key[OPCACHE_KEY_MAX], val[16];
    snprintf(val, sizeof val, "%d", n);
    for (int i = 0; i < n; i++) {
        if (pods_name(name, sizeof name, j->meta.name, i) != 0)
            continue;
        snprintf(key, sizeof key, "%s/%s", j->meta.namespace_, name);
        struct opcache_obj *p = opcache_get(s->cache[OPK_POD], key);
        if (!p || !*srv__rv(opcache_raw(p)) || aiq_jpath_str(opcache_raw(p), "metadata.deletionTimestamp"))
            continue;
        json_object *ann = NULL, *v = NULL, *md = NULL;
        if (json_object_object_get_ex(opcache_raw(p), "metadata", &md) &&
            json_object_object_get_ex(md, "annotations", &ann) &&
            json_object_object_get_ex(ann, ACTIONS_ANN_REPLICAS, &v) &&
            strcmp(json_object_get_string(v), val) == 0)
            continue;
        const char *kv[] = {ACTIONS_ANN_REPLICAS, val};
        (void)act_annotate(s, p, kv, 1); /* logged; the next resize retries */
    }
}

/* Adds "aiq.dev/replicas": n to a release patch's annotations. Returns 0
 * or -1 (ENOMEM). */
int actions_patch_size(json_object *patch, int n) {
    json_object *md = NULL, *ann = NULL;
    char val[16];
    snprintf(val, sizeof val, "%d", n);
    if (!json_object_object_get_ex(patch, "metadata", &md)) {
        md = json_object_new_object();
        if (aiq_jset(patch, "metadata", md, NULL) != 0)
            return -1; /* md freed */
    }
    if (!json_object_object_get_ex(md, "annotations", &ann)) {
        ann = json_object_new_object();
        if (aiq_jset(md, "annotations", ann, NULL) != 0)
            return -1; /* ann freed */
    }
    return aiq_jset(ann, ACTIONS_ANN_REPLICAS, json_object_new_string(val), NULL);
}

/* Gives every container of an elastic job's pod the env AIQ_REPLICAS
 * from the pod's aiq.dev/replicas annotation (downward API). Returns 0 or
 * -1 (ENOMEM). */
int actions_pod_env(json_object *pod) {
    json_object *spec = NULL, *cs = NULL;
    if (!json_object_object_get_ex(pod, "spec", &spec) ||
        !json_object_object_get_ex(spec, "containers", &cs) ||
        !json_object_is_type(cs, json_type_array))
        return 0;
    for (size_t i = 0; i < json_object_array_length(cs); i++) {
        json_object *c = json_object_array_get_idx(cs, i), *env = NULL;
        if (!json_object_object_get_ex(c, "env", &env)) {
            env = json_object_new_array();
            if (aiq_jset(c, "env", env, NULL) != 0)
                return -1; /* env freed */
        }
        json_object *e = json_object_new_object(), *vf = json_object_new_object(),
                    *fr = json_object_new_object();
        bool failed = false;
        aiq_jset(fr, "fieldPath",
                 json_object_new_string("metadata.annotations['" ACTIONS_ANN_REPLICAS "']"),
                 &failed);
        aiq_jset(vf, "fieldRef", fr, &failed);
        aiq_jset(e, "name", json_object_new_string("AIQ_REPLICAS"), &failed);
        aiq_jset(e, "valueFrom", vf, &failed);
        if (aiq_jpush(env, e, &failed) != 0)
            return -1;
    }
    return 0;
}

/* Journals action a (always: each is news), as the simulator does. */
static void act_journal(struct server *s, const struct q_action *a, const struct q_result *r,
                        const struct aiq_aijob *j, const struct aiq_aijob *by, double now) {
    struct store_decision d = {s->ncycles, now, j->meta.uid,
                               a->kind == Q_ACT_PREEMPT ? "preempt" : "resize", r->level,
                               a->replicas, r->score, NULL, actions_reason(a->reason),
                               by ? by->meta.uid : NULL};
    aiq_err e;
    aiq_err_clear(&e);
    if (store_journal_decision(s->db, &d, &e) != AIQ_OK)
        OPLOG(&s->log, OPLOG_WARN, "store_error", j->meta.name, NULL,
              "op=journal_decision msg=\"%s\"", e.message);
}

/* Records on the job room is made for that it preempts or shrinks v:
 * the Preempting condition lists this cycle's victims. first: the first
 * victim of this job in this cycle (the list starts over). */
static void act_preemptor(struct server *s, struct opcache_obj *p, struct opcache_obj *v,
                          const struct q_action *a, bool first) {
    struct opjob *ps = ((struct opext *)p->ext)->job;
    opcache_state_changed(p); /* its Preempting condition */
    struct opst_xcond *x = opstatus_xc(&ps->st, OPST_XC_PREEMPTING);
    char msg[200];
    snprintf(msg, sizeof msg, "%s %.180s", a->kind == Q_ACT_PREEMPT ? "preempted" : "shrunk",
             v->key);
    if (!x) {
        OPLOG(&s->log, OPLOG_ERROR, "status_condition_dropped", p->key, NULL,
              "which=Preempting msg=\"out of memory\"");
    } else if (first || !x->reason[0]) {
        snprintf(x->reason, sizeof x->reason, "%s", actions_reason(a->reason));
        snprintf(x->message, sizeof x->message, "%.200s to start", msg);
    } else if (strlen(x->message) + strlen(msg) + 8 < sizeof x->message) {
        char prev[sizeof x->message];
        snprintf(prev, sizeof prev, "%s", x->message);
        size_t n = strlen(prev);
        if (n > 9 && strcmp(prev + n - 9, " to start") == 0)
            prev[n - 9] = '\0';
        snprintf(x->message, sizeof x->message, "%.120s, %.110s to start", prev, msg);
    }
    char ev[400];
    snprintf(ev, sizeof ev, "%s to make room for it (%s)", msg, act_why(a->reason));
    srv__event_of(s, p, "Normal", "Preempting", ev);
}

/* Carries out out->actions of the cycle over in; see server.h. */
void cycle_actions(struct server *s, const struct q_input *in, const q_output *out,
                   struct opcache_obj *const *jobj, double now) {
    bool *seen = out->nactions > 0 ? calloc((size_t)(in->njobs ? in->njobs : 1), 1) : NULL;
    for (int x = 0; x < out->nactions; x++) {
        const struct q_action *a = &out->actions[x];
        if (a->job < 0 || a->job >= in->njobs)
            continue;
        struct opcache_obj *o = jobj[a->job];
        struct opcache_obj *p = a->for_job >= 0 && a->for_job < in->njobs ? jobj[a->for_job]
                                                                           : NULL;
        const struct aiq_aijob *j = o->parsed, *pj = p ? p->parsed : NULL;
        act_journal(s, a, &out->res[a->job], j, pj, now);
        int rc;
        if (a->kind == Q_ACT_PREEMPT)
            rc = job_preempt(s, o, p, actions_reason(a->reason), act_why(a->reason), now);
        else if (a->kind == Q_ACT_SHRINK)
            rc = job_shrink(s, o, a->replicas, p, act_why(a->reason), now);
        else
            rc = job_grow(s, o, in, &out->places[a->place_off], a->nplace, a->replicas, now);
        if (rc != 0)
            continue;
        if (p && a->kind != Q_ACT_GROW) {
            act_preemptor(s, p, o, a, seen && !seen[a->for_job]);
            if (seen)
                seen[a->for_job] = true;
            job_publish(s, p, now);
        }
    }
    free(seen);
}
