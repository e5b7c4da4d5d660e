/* reconcile_pod.c -- the Pod reconciler: a change to one of a gang's pods
 * (label aiq.dev/job) re-syncs its AIJob, which decides Running,
 * Succeeded, or a teardown (see job_sync in reconcile_aijob.c). */

#include "common/json.h"
#include "operator/server.h"

void reconcile_pod(struct server *s, enum kube_event_type t,
                   struct opcache_obj *o, json_object *obj) {
    char key[OPCACHE_KEY_MAX];
    (void)o;
    struct opcache_obj *jo = srv__pod_job(s, obj, key, sizeof key);
    if (!key[0])
        return;
    OPLOG(&s->log, OPLOG_DEBUG, "pod_event", srv__name(obj), srv__rv(obj),
          "job=%s phase=%s type=%s", key,
          aiq_jpath_str(obj, "status.phase") ? aiq_jpath_str(obj, "status.phase") : "-",
          kube_event_type_name(t));
    /* On DELETED the pod is still in the cache during this call; the job
     * is flagged and synced by the next cycle, once it is gone. */
    if (jo && t != KUBE_EV_DELETED) {
        job_sync(s, jo, srv_now());
    } else if (jo) {
        struct opext *x = jo->ext;
        if (x && x->job) {
            x->job->resync = true;
            opcache_state_changed(jo);
        }
    }
}
