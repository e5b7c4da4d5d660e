/* release_gpu.c -- the GPU mechanism's part of releasing one pod (see
 * release_gpu.h): HAMi's pinning annotation on the release patch, and the
 * DRA ResourceClaim that must exist before the pod loses its gate. */
#include "operator/release_gpu.h"

#include <stdio.h>
#include <string.h>

#include "operator/gpu_mech.h"
#include "operator/kube_http.h"
#include "common/json.h"

/* Reads metadata.key of obj as a string, or "". */
static const char *rg_meta(json_object *obj, const char *key) {
    const char *v = aiq_jstr(aiq_jget(obj, "metadata"), key);
    return v ? v : "";
}

/* Creates the pod's claim, or accepts the one already there when it is
 * this pod's (a release sent again). A claim left by the pod of an
 * earlier attempt (same name, another uid; the garbage collector has not
 * removed it yet) is deleted and the release fails, to be retried. */
static int rg_claim(struct server *s, json_object *pod, const struct opst_place *pl,
                    int64_t min_mib, aiq_err *err) {
    char coll[512], path[768], name[AIQ_MAX_NAME + 1];
    const char *ns = rg_meta(pod, "namespace"), *uid = rg_meta(pod, "uid");
    json_object *claim = gpu_mech_claim(pod, pl, min_mib, err), *cur = NULL;
    int rc = -1;
    if (!claim)
        return -1;
    if (gpu_mech_claim_name(name, sizeof name, rg_meta(pod, "name")) != 0 ||
        kube_path(coll, sizeof coll, "resource.k8s.io", "v1", ns, "resourceclaims", NULL, NULL,
                  err) != AIQ_OK ||
        kube_path(path, sizeof path, "resource.k8s.io", "v1", ns, "resourceclaims", name, NULL,
                  err) != AIQ_OK)
        goto out;
    aiq_rc r = kube_create(s->kc, coll, claim, NULL, err);
    if (r == AIQ_OK) {
        rc = 0;
        goto out;
    }
    if (r != AIQ_EEXIST)
        goto out;
    if (kube_get(s->kc, path, &cur, err) != AIQ_OK)
        goto out;
    if (gpu_mech_claim_owned_by(cur, uid)) {
        rc = 0;
        goto out;
    }
    aiq_err e2;
    aiq_err_clear(&e2);
    /* Deliberately only logged through err below: a failed delete is
     * retried with the next release. */
    (void)kube_delete(s->kc, path, "Background", NULL, &e2);
    aiq_err_set(err, AIQ_ECONFLICT,
                "ResourceClaim %s/%s belongs to an earlier pod of that name; deleted, "
                "release retried",
                ns, name);
out:
    json_object_put(cur);
    json_object_put(claim);
    return rc;
}

/* See release_gpu.h. */
int release_gpu_prepare(struct server *s, json_object *pod, const struct opst_place *pl,
                        const struct aiq_aijob *j, json_object *patch, aiq_err *err) {
    enum gpu_mech m = s->flags.gpu_mech;
    const struct aiq_resources *r = &j->spec.resources;
    if (gpu_mech_gpus(m, r) == 0 && !gpu_mech_shares(m, r))
        return 0; /* no GPU */
    if (m == GPU_MECH_HAMI) {
        json_object *meta = NULL, *ann = NULL;
        struct opcache_obj *node = opcache_get(s->cache[OPK_NODE], pl->node);
        if (!json_object_object_get_ex(patch, "metadata", &meta) ||
            !json_object_object_get_ex(meta, "annotations", &ann)) {
            aiq_err_set(err, AIQ_EINVAL, "release patch without metadata.annotations");
            return -1;
        }
        return gpu_mech_release(ann, pl, node ? opcache_raw(node) : NULL, m, err);
    }
    if (m == GPU_MECH_DRA)
        return rg_claim(s, pod, pl, r->gpu_memory_mib, err);
    return 0;
}
