/* binding.c -- the pods/binding subresource, the only way a pod gets its
 * spec.nodeName after it was created (pod updates may not set it). It
 * answers as BindingREST.Create of Kubernetes 1.34 does: 400 for a
 * Binding whose name is not the URL's, a bare 500 for an invalid target
 * (the real server returns that validation error unwrapped), 404 for a
 * missing pod, 409 Conflict on pods for failed uid/resourceVersion
 * preconditions and on pods/binding for a pod being deleted, already
 * bound or still gated; otherwise one write sets nodeName, adds the
 * Binding's annotations and PodScheduled=True, and the answer is a
 * Status Success with code 201. The simulated scheduler binds through
 * the same function (apisrv_obj_bind). Lock held. */
#include "test/apiserver/apisrv_int.h"

#include <stdio.h>
#include <string.h>

#include "common/json.h"

/* 409 Conflict on pods/binding: `... on pods/binding "NAME": WHY`. */
static void bind_conflict(struct apisrv__st *st, const char *name, const char *why) {
    apisrv__st_set(st, 409, "Conflict", "Operation cannot be fulfilled on pods/binding \"%s\": %s", name, why);
    snprintf(st->name, sizeof st->name, "%s", name);
    snprintf(st->kind, sizeof st->kind, "pods/binding");
}

/* A failed storage precondition, worded as the etcd3 store words it. */
static void bind_precondition(struct apisrv__st *st, const char *ns, const char *name,
                              const char *what, const char *want, const char *have) {
    apisrv__st_set(st, 409, "Conflict",
                   "Operation cannot be fulfilled on pods \"%s\": StorageError: invalid object, Code: 4, "
                   "Key: /registry/pods/%s/%s, ResourceVersion: 0, AdditionalErrorMsg: Precondition "
                   "failed: %s in precondition: %s, %s in object meta: %s",
                   name, ns, name, what, want, what, have);
    snprintf(st->name, sizeof st->name, "%s", name);
    snprintf(st->kind, sizeof st->kind, "pods");
}

/* podutil.UpdatePodCondition(PodScheduled=True): the condition is
 * replaced whole; its transition time moves only when the status does. */
static void bind_scheduled(json_object *pod) {
    json_object *status = apisrv__obj_child(pod, "status"), *conds, *c = NULL, *old = NULL;
    char now[40];
    const char *since = now;
    apisrv__now_rfc3339(now, sizeof now);
    if (!json_object_object_get_ex(status, "conditions", &conds) ||
        !json_object_is_type(conds, json_type_array)) {
        conds = json_object_new_array();
        json_object_object_add(status, "conditions", conds);
    }
    for (size_t i = 0; i < json_object_array_length(conds) && !old; i++) {
        json_object *x = json_object_array_get_idx(conds, i);
        const char *ty = aiq_jpath_str(x, "type");
        if (ty && !strcmp(ty, "PodScheduled")) old = x;
    }
    c = json_object_new_object();
    json_object_object_add(c, "type", json_object_new_string("PodScheduled"));
    json_object_object_add(c, "status", json_object_new_string("True"));
    json_object_object_add(c, "lastProbeTime", NULL);
    if (old && aiq_jpath_str(old, "status") && !strcmp(aiq_jpath_str(old, "status"), "True") &&
        aiq_jpath_str(old, "lastTransitionTime"))
        since = aiq_jpath_str(old, "lastTransitionTime");
    json_object_object_add(c, "lastTransitionTime", json_object_new_string(since));
    if (old) {
        for (size_t i = 0; i < json_object_array_length(conds); i++)
            if (json_object_array_get_idx(conds, i) == old) {
                json_object_array_put_idx(conds, i, c);
                break;
            }
    } else {
        json_object_array_add(conds, c);
    }
}

/* See apisrv_int.h. */
int apisrv__pod_bind(apisrv *s, const char *ns, const char *name, json_object *binding,
                     bool dry_run, struct apisrv__st *st) {
    const struct apisrv__type *t = apisrv__type_by_key(s, "/pods");
    const char *bname, *kind, *node, *uid_pre, *rv_pre, *uid, *rv, *cur;
    json_object *pod = NULL, *prev = NULL, *md, *ann, *gates = NULL, *spec;
    char errs[2][260], q[160], why[1200];
    int nerr = 0, rc = -1;
    if (!t) return apisrv__st_set(st, 500, "InternalError", "pods are not served");
    if (!binding || !json_object_is_type(binding, json_type_object))
        return apisrv__st_set(st, 400, "BadRequest", "not a Binding object");
    bname = aiq_jpath_str(binding, "metadata.name");
    if (!bname || strcmp(bname, name))
        return apisrv__st_set(st, 400, "BadRequest", "name in URL does not match name in Binding object");
    kind = aiq_jpath_str(binding, "target.kind");
    node = aiq_jpath_str(binding, "target.name");
    if (kind && kind[0] && strcmp(kind, "Node")) {
        apisrv__go_quote(kind, q, sizeof q);
        snprintf(errs[nerr++], sizeof errs[0],
                 "target.kind: Unsupported value: %s: supported values: \"Node\", \"<empty>\"", q);
    }
    if (!node || !node[0]) snprintf(errs[nerr++], sizeof errs[0], "target.name: Required value");
    if (nerr == 1)
        return apisrv__st_set(st, 500, "", "%s", errs[0]);
    if (nerr == 2)
        return apisrv__st_set(st, 500, "", "[%s, %s]", errs[0], errs[1]);
    pod = apisrv__store_get(s, t->key, ns, name);
    if (!pod) return apisrv__st_notfound(st, t, name);
    uid_pre = aiq_jpath_str(binding, "metadata.uid");
    rv_pre = aiq_jpath_str(binding, "metadata.resourceVersion");
    uid = aiq_jpath_str(pod, "metadata.uid");
    rv = aiq_jpath_str(pod, "metadata.resourceVersion");
    cur = aiq_jpath_str(pod, "spec.nodeName");
    if (json_object_object_get_ex(pod, "spec", &spec)) json_object_object_get_ex(spec, "schedulingGates", &gates);
    if (uid_pre && uid_pre[0] && strcmp(uid_pre, uid ? uid : "")) {
        bind_precondition(st, ns, name, "UID", uid_pre, uid ? uid : "");
    } else if (rv_pre && rv_pre[0] && strcmp(rv_pre, rv ? rv : "")) {
        bind_precondition(st, ns, name, "ResourceVersion", rv_pre, rv ? rv : "");
    } else if (aiq_jpath_str(pod, "metadata.deletionTimestamp")) {
        snprintf(why, sizeof why, "pod %s is being deleted, cannot be assigned to a host", name);
        bind_conflict(st, name, why);
    } else if (cur && cur[0]) {
        snprintf(why, sizeof why, "pod %s is already assigned to node \"%s\"", name, cur);
        bind_conflict(st, name, why);
    } else if (gates && json_object_is_type(gates, json_type_array) && json_object_array_length(gates) > 0) {
        snprintf(why, sizeof why, "pod %s has non-empty .spec.schedulingGates", name);
        bind_conflict(st, name, why);
    } else {
        rc = 0;
    }
    if (rc) goto out;
    if (json_object_deep_copy(pod, &prev, NULL) != 0) {
        rc = apisrv__st_set(st, 500, "InternalError", "out of memory");
        goto out;
    }
    json_object_object_add(apisrv__obj_child(pod, "spec"), "nodeName", json_object_new_string(node));
    md = apisrv__obj_child(pod, "metadata");
    if (json_object_object_get_ex(binding, "metadata", &ann) &&
        json_object_object_get_ex(ann, "annotations", &ann) && json_object_is_type(ann, json_type_object)) {
        json_object *pa = apisrv__obj_child(md, "annotations");
        json_object_object_foreach(ann, k, v) {
            json_object_object_add(pa, k, json_object_get(v));
        }
    }
    bind_scheduled(pod);
    if (!dry_run) {
        rc = apisrv__commit_modified(s, t, ns, name, pod, prev, st);
        pod = NULL;   /* taken over */
    }
out:
    json_object_put(prev);
    json_object_put(pod);
    return rc;
}
