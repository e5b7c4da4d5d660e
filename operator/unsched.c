/* unsched.c -- a released gang that kube-scheduler will not place: the
 * scheduler's own verdict (PodScheduled=False, reason Unschedulable, and
 * its "0/N nodes are available: ..." message) read from an admitted
 * gang's pods, so the operator requeues the gang within seconds instead
 * of waiting for the start timeout (see server.h, job_unschedulable). */
#include <stdio.h>
#include <string.h>

#include "common/json.h"
#include "operator/pods.h"
#include "operator/release.h"
#include "operator/server.h"

/* The pod's PodScheduled condition message when it is False with reason
 * Unschedulable, else NULL. */
static const char *un_verdict(json_object *pod) {
    json_object *st = NULL, *conds = NULL;
    if (!json_object_object_get_ex(pod, "status", &st) ||
        !json_object_object_get_ex(st, "conditions", &conds) ||
        !json_object_is_type(conds, json_type_array))
        return NULL;
    for (size_t i = 0; i < json_object_array_length(conds); i++) {
        json_object *c = json_object_array_get_idx(conds, i);
        const char *type = aiq_jpath_str(c, "type"), *status = aiq_jpath_str(c, "status");
        const char *reason = aiq_jpath_str(c, "reason"), *msg = aiq_jpath_str(c, "message");
        if (type && strcmp(type, "PodScheduled") == 0)
            return status && strcmp(status, "False") == 0 && reason &&
                           strcmp(reason, "Unschedulable") == 0
                       ? (msg ? msg : "")
                       : NULL;
    }
    return NULL;
}

/* Finds an unschedulable pod of the gang; see server.h. */
int job_unschedulable(struct server *s, const struct aiq_aijob *j, int attempt, char *msg,
                      size_t cap) {
    char name[AIQ_MAX_NAME + 1], key[OPCACHE_KEY_MAX];
    for (int i = 0; i < j->spec.replicas; i++) {
        if (pods_name(name, sizeof name, j->meta.name, i) != 0)
            continue;
        snprintf(key, sizeof key, "%s/%s", j->meta.namespace_, name);
        struct opcache_obj *p = opcache_get(s->cache[OPK_POD], key);
        if (!p || pods_is_gated(opcache_raw(p)) || pods_attempt(opcache_raw(p)) > attempt)
            continue;
        const char *node = aiq_jpath_str(opcache_raw(p), "spec.nodeName");
        if (node && *node)
            continue; /* bound: the scheduler has placed it */
        const char *why = un_verdict(opcache_raw(p));
        if (!why)
            continue;
        json_object *ann = NULL, *pv = NULL;
        const char *pin = NULL;
        if (json_object_object_get_ex(opcache_raw(p), "metadata", &ann) &&
            json_object_object_get_ex(ann, "annotations", &ann) &&
            json_object_object_get_ex(ann, RELEASE_ANN_NODE, &pv))
            pin = json_object_get_string(pv);
        snprintf(msg, cap, "pod %s pinned to node %s is unschedulable: %s", name,
                 pin && *pin ? pin : "?", *why ? why : "(no message)");
        return 1;
    }
    return 0;
}
