/* gpu_mech.c -- the GPU mechanisms (see gpu_mech.h): the pod's GPU
 * request, the release annotation HAMi reads, HAMi's node device list,
 * and the DRA ResourceClaim that pins a replica to its placed devices. */
#include "operator/gpu_mech.h"
#include "common/json.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const gm__names[] = {
    [GPU_MECH_DEVICE_PLUGIN] = "device-plugin",
    [GPU_MECH_HAMI] = "hami",
    [GPU_MECH_DRA] = "dra",
};

/* Parses the flag; see gpu_mech.h. */
int gpu_mech_parse(const char *s, enum gpu_mech *out) {
    for (size_t i = 0; s && i < sizeof gm__names / sizeof gm__names[0]; i++) {
        if (strcmp(s, gm__names[i]) == 0) {
            *out = (enum gpu_mech)i;
            return 0;
        }
    }
    return -1;
}

/* The flag spelling; see gpu_mech.h. */
const char *gpu_mech_name(enum gpu_mech m) {
    return (unsigned)m < sizeof gm__names / sizeof gm__names[0] ? gm__names[m] : "?";
}

/* Shares a GPU; see gpu_mech.h. */
int gpu_mech_shares(enum gpu_mech m, const struct aiq_resources *r) {
    return m == GPU_MECH_HAMI && r->gpus == 0 && r->gpu_memory_mib > 0;
}

/* Whole GPUs held; see gpu_mech.h. */
int gpu_mech_gpus(enum gpu_mech m, const struct aiq_resources *r) {
    if (r->gpus == 0 && r->gpu_memory_mib > 0 && m != GPU_MECH_HAMI)
        return 1;
    return r->gpus;
}

/* The claim's name; see gpu_mech.h. */
int gpu_mech_claim_name(char *buf, size_t cap, const char *pod_name) {
    int n = snprintf(buf, cap, "%s%s", pod_name ? pod_name : "", GPU_MECH_CLAIM_SUFFIX);
    if (n < 0 || (size_t)n >= cap || n > AIQ_MAX_NAME) {
        if (cap)
            buf[0] = '\0';
        return -1;
    }
    return 0;
}

/* Adds key -> v to obj (takes v, also on failure). Returns 0 or -1. */
static int gm_add(json_object *obj, const char *key, json_object *v) {
    if (!v)
        return -1;
    if (json_object_object_add(obj, key, v) != 0) {
        json_object_put(v);
        return -1;
    }
    return 0;
}

/* Adds v to array arr (takes v, also on failure). Returns 0 or -1. */
static int gm_push(json_object *arr, json_object *v) {
    if (!v)
        return -1;
    if (json_object_array_add(arr, v) != 0) {
        json_object_put(v);
        return -1;
    }
    return 0;
}

/* Returns obj[key] when it is of type t, else a new one put there (NULL
 * on ENOMEM). */
static json_object *gm_child(json_object *obj, const char *key, json_type t) {
    json_object *c = NULL;
    if (json_object_object_get_ex(obj, key, &c) && json_object_is_type(c, t))
        return c;
    c = t == json_type_array ? json_object_new_array() : json_object_new_object();
    return gm_add(obj, key, c) == 0 ? c : NULL;
}

/* Sets limits and requests of resource name to v on container c. */
static int gm_res(json_object *c, const char *name, const char *v) {
    json_object *res = gm_child(c, "resources", json_type_object);
    json_object *lim = res ? gm_child(res, "limits", json_type_object) : NULL;
    json_object *req = res ? gm_child(res, "requests", json_type_object) : NULL;
    if (!lim || !req)
        return -1;
    return gm_add(lim, name, json_object_new_string(v)) ||
           gm_add(req, name, json_object_new_string(v));
}

/* The DRA part of the pod: spec.resourceClaims entry and c's claim. */
static int gm_pod_claim(json_object *spec, json_object *c, const char *pod_name,
                        aiq_err *err) {
    char claim[AIQ_MAX_NAME + 1];
    if (gpu_mech_claim_name(claim, sizeof claim, pod_name) != 0) {
        aiq_err_field(err, AIQ_EINVAL, "metadata.name",
                      "metadata.name: pod \"%.200s\" leaves no room for its ResourceClaim "
                      "name \"<pod>%s\" (at most %d characters)",
                      pod_name, GPU_MECH_CLAIM_SUFFIX, AIQ_MAX_NAME);
        return -1;
    }
    json_object *rcs = gm_child(spec, "resourceClaims", json_type_array);
    json_object *e = json_object_new_object();
    if (!rcs || !e || gm_add(e, "name", json_object_new_string(GPU_MECH_CLAIM_ENTRY)) ||
        gm_add(e, "resourceClaimName", json_object_new_string(claim))) {
        json_object_put(e);
        goto nomem;
    }
    if (gm_push(rcs, e)) /* took e */
        goto nomem;
    json_object *res = gm_child(c, "resources", json_type_object);
    json_object *cl = res ? gm_child(res, "claims", json_type_array) : NULL;
    json_object *ce = json_object_new_object();
    if (!cl || !ce || gm_add(ce, "name", json_object_new_string(GPU_MECH_CLAIM_ENTRY))) {
        json_object_put(ce);
        goto nomem;
    }
    if (gm_push(cl, ce)) /* took ce */
        goto nomem;
    return 0;
nomem:
    aiq_err_set(err, AIQ_ENOMEM, "out of memory adding the ResourceClaim to pod %s", pod_name);
    return -1;
}

/* The pod's GPU request; see gpu_mech.h. */
int gpu_mech_pod(json_object *pod, const struct aiq_aijob *job, enum gpu_mech m,
                 aiq_err *err) {
    const struct aiq_resources *r = &job->spec.resources;
    json_object *spec = NULL, *cs = NULL, *meta = NULL, *nm = NULL;
    char q[32];
    int gpus = gpu_mech_gpus(m, r);
    if (gpus == 0 && !gpu_mech_shares(m, r))
        return 0;
    if (!json_object_object_get_ex(pod, "spec", &spec) ||
        !json_object_object_get_ex(spec, "containers", &cs) ||
        !json_object_is_type(cs, json_type_array) || json_object_array_length(cs) == 0 ||
        !json_object_is_type(json_object_array_get_idx(cs, 0), json_type_object)) {
        aiq_err_field(err, AIQ_EINVAL, "spec.template.spec.containers",
                      "spec.template.spec.containers: a GPU job needs a container");
        return -1;
    }
    json_object *c0 = json_object_array_get_idx(cs, 0);
    switch (m) {
    case GPU_MECH_DEVICE_PLUGIN:
        snprintf(q, sizeof q, "%d", gpus);
        if (gm_res(c0, GPU_MECH_RES_GPU, q))
            goto nomem;
        return 0;
    case GPU_MECH_HAMI:
        snprintf(q, sizeof q, "%d", gpus > 0 ? gpus : 1);
        if (gm_res(c0, GPU_MECH_RES_GPU, q))
            goto nomem;
        if (gpus == 0) {
            snprintf(q, sizeof q, "%" PRId64, r->gpu_memory_mib);
            if (gm_res(c0, GPU_MECH_RES_GPUMEM, q))
                goto nomem;
        } else if (gm_res(c0, GPU_MECH_RES_GPUMEM_PCT, "100")) {
            goto nomem; /* whole GPUs: all of each GPU's memory */
        }
        return 0;
    case GPU_MECH_DRA:
        if (!json_object_object_get_ex(pod, "metadata", &meta) ||
            !json_object_object_get_ex(meta, "name", &nm)) {
            aiq_err_field(err, AIQ_EINVAL, "metadata.name", "metadata.name: the pod has no name");
            return -1;
        }
        return gm_pod_claim(spec, c0, json_object_get_string(nm), err);
    }
    aiq_err_set(err, AIQ_EINVAL, "unknown GPU mechanism %d", (int)m);
    return -1;
nomem:
    aiq_err_set(err, AIQ_ENOMEM, "out of memory adding GPU requests");
    return -1;
}

/* Copies field f (0-based, separated by ',') of the device entry
 * [s, s+n) into buf. Returns the number of fields, and buf "" when f is
 * past the end or does not fit. */
static int gm_field(const char *s, size_t n, int f, char *buf, size_t cap) {
    int k = 0;
    size_t start = 0;
    buf[0] = '\0';
    for (size_t i = 0; i <= n; i++) {
        if (i < n && s[i] != ',')
            continue;
        if (k == f && i - start < cap) {
            memcpy(buf, s + start, i - start);
            buf[i - start] = '\0';
        }
        k++;
        start = i + 1;
    }
    return k;
}

/* HAMi's text form: devices separated by ':', fields by ','. */
static int gm_hami_text(const char *v, const char *node, int index, char *buf, size_t cap,
                        aiq_err *err) {
    int pos = 0;
    char idx[16];
    for (const char *s = v; *s;) {
        const char *end = strchr(s, ':');
        size_t n = end ? (size_t)(end - s) : strlen(s);
        if (n > 0) {
            int nf = gm_field(s, n, 7, idx, sizeof idx);
            if (nf != 7 && nf != 9)
                goto bad;
            int at = pos;
            if (nf == 9) {
                char *e = NULL;
                long l = strtol(idx, &e, 10);
                if (!idx[0] || *e || l < 0 || l > 1024)
                    goto bad;
                at = (int)l;
            }
            if (at == index) {
                gm_field(s, n, 0, buf, cap);
                if (!buf[0])
                    goto bad;
                return 0;
            }
            pos++;
        }
        s += n + (end ? 1 : 0);
    }
    aiq_err_set(err, AIQ_ENOTFOUND, "node %s: annotation %s lists no GPU with index %d", node,
                GPU_MECH_HAMI_NODE_ANN, index);
    return -1;
bad:
    aiq_err_set(err, AIQ_EPARSE,
                "node %s: annotation %s: device %d is not \"UUID,count,memory,cores,type,numa,"
                "healthy[,index,mode]\"",
                node, GPU_MECH_HAMI_NODE_ANN, pos);
    return -1;
}

/* HAMi's JSON form: [{"id": "GPU-...", "index": 0, ...}, ...]. */
static int gm_hami_json(const char *v, const char *node, int index, char *buf, size_t cap,
                        aiq_err *err) {
    json_object *arr = json_tokener_parse(v);
    int rc = -1;
    if (!arr || !json_object_is_type(arr, json_type_array)) {
        aiq_err_set(err, AIQ_EPARSE, "node %s: annotation %s: not a JSON list", node,
                    GPU_MECH_HAMI_NODE_ANN);
        goto out;
    }
    for (size_t i = 0; i < json_object_array_length(arr); i++) {
        json_object *d = json_object_array_get_idx(arr, i), *id = NULL, *ix = NULL;
        int at = (int)i;
        if (json_object_object_get_ex(d, "index", &ix))
            at = json_object_get_int(ix);
        if (at != index)
            continue;
        if (!json_object_object_get_ex(d, "id", &id) || !json_object_is_type(id, json_type_string) ||
            snprintf(buf, cap, "%s", json_object_get_string(id)) >= (int)cap || !buf[0]) {
            aiq_err_set(err, AIQ_EPARSE, "node %s: annotation %s: device %zu has no usable \"id\"",
                        node, GPU_MECH_HAMI_NODE_ANN, i);
            goto out;
        }
        rc = 0;
        goto out;
    }
    aiq_err_set(err, AIQ_ENOTFOUND, "node %s: annotation %s lists no GPU with index %d", node,
                GPU_MECH_HAMI_NODE_ANN, index);
out:
    json_object_put(arr);
    return rc;
}

/* A GPU's UUID from HAMi's node annotation; see gpu_mech.h. */
int gpu_mech_hami_uuid(json_object *node, int index, char *buf, size_t cap, aiq_err *err) {
    json_object *m = NULL, *a = NULL, *v = NULL, *n = NULL;
    const char *name = "?";
    if (cap)
        buf[0] = '\0';
    if (json_object_object_get_ex(node, "metadata", &m) &&
        json_object_object_get_ex(m, "name", &n))
        name = json_object_get_string(n);
    if (!m || !json_object_object_get_ex(m, "annotations", &a) ||
        !json_object_object_get_ex(a, GPU_MECH_HAMI_NODE_ANN, &v) ||
        !json_object_is_type(v, json_type_string)) {
        aiq_err_set(err, AIQ_ENOTFOUND,
                    "node %s has no annotation %s (is HAMi's device plugin running there?)", name,
                    GPU_MECH_HAMI_NODE_ANN);
        return -1;
    }
    const char *s = json_object_get_string(v);
    while (*s == ' ' || *s == '\t' || *s == '\n')
        s++;
    if (*s == '[')
        return gm_hami_json(s, name, index, buf, cap, err);
    return gm_hami_text(s, name, index, buf, cap, err);
}

/* The release annotations; see gpu_mech.h. */
int gpu_mech_release(json_object *ann, const struct opst_place *p, json_object *node,
                     enum gpu_mech m, aiq_err *err) {
    char list[AIQ_MAX_GPUS_PER_REPLICA * (GPU_MECH_MAX_UUID + 1) + 1];
    char uuid[GPU_MECH_MAX_UUID];
    size_t n = 0;
    if (m != GPU_MECH_HAMI)
        return 0;
    if (!node) {
        aiq_err_set(err, AIQ_ENOTFOUND, "node %s is not known: no GPU UUIDs to pin", p->node);
        return -1;
    }
    if (p->ngpus <= 0) {
        aiq_err_field(err, AIQ_EINVAL, "status.placement",
                      "status.placement[%d]: no GPU to pin on %s", p->replica, p->node);
        return -1;
    }
    list[0] = '\0';
    for (int i = 0; i < p->ngpus; i++) {
        if (gpu_mech_hami_uuid(node, p->gpus[i], uuid, sizeof uuid, err) != 0)
            return -1;
        int w = snprintf(list + n, sizeof list - n, "%s%s", i ? "," : "", uuid);
        if (w < 0 || (size_t)w >= sizeof list - n) {
            aiq_err_set(err, AIQ_ETOOBIG, "node %s: GPU UUIDs too long", p->node);
            return -1;
        }
        n += (size_t)w;
    }
    if (gm_add(ann, GPU_MECH_ANN_UUID, json_object_new_string(list))) {
        aiq_err_set(err, AIQ_ENOMEM, "out of memory");
        return -1;
    }
    return 0;
}

/* Reads metadata.key of obj as a string, or NULL. */
static const char *gm_meta(json_object *obj, const char *key) {
    return aiq_jstr(aiq_jget(obj, "metadata"), key);
}

/* The CEL selector of the placed devices: their index, and memory. */
static int gm_cel(char *buf, size_t cap, const struct opst_place *p, int64_t min_mib) {
    size_t n = 0;
    int w = snprintf(buf, cap, "device.attributes[\"%s\"].index in [", GPU_MECH_DRA_DRIVER);
    if (w < 0 || (size_t)w >= cap)
        return -1;
    n = (size_t)w;
    for (int i = 0; i < p->ngpus; i++) {
        w = snprintf(buf + n, cap - n, "%s%d", i ? ", " : "", p->gpus[i]);
        if (w < 0 || (size_t)w >= cap - n)
            return -1;
        n += (size_t)w;
    }
    if (min_mib > 0)
        w = snprintf(buf + n, cap - n,
                     "] && device.capacity[\"%s\"].memory.compareTo(quantity(\"%" PRId64
                     "Mi\")) >= 0",
                     GPU_MECH_DRA_DRIVER, min_mib);
    else
        w = snprintf(buf + n, cap - n, "]");
    return (w < 0 || (size_t)w >= cap - n) ? -1 : 0;
}

/* The claim's metadata: name, namespace, the job label, the pod owner. */
static int gm_claim_meta(json_object *claim, json_object *pod, const char *name,
                         const char *ns, const char *uid) {
    json_object *meta = json_object_new_object(), *own = json_object_new_object();
    json_object *owners = json_object_new_array();
    if (gm_add(claim, "metadata", meta)) {
        json_object_put(own);
        json_object_put(owners);
        return -1;
    }
    if (gm_add(meta, "ownerReferences", owners)) {
        json_object_put(own);
        return -1;
    }
    if (gm_push(owners, own))
        return -1;
    json_object *pm = NULL, *pl = NULL;
    if (json_object_object_get_ex(pod, "metadata", &pm) &&
        json_object_object_get_ex(pm, "labels", &pl) && json_object_is_type(pl, json_type_object) &&
        gm_add(meta, "labels", json_object_get(pl)))
        return -1;
    return gm_add(meta, "name", json_object_new_string(name)) ||
           gm_add(meta, "namespace", json_object_new_string(ns)) ||
           gm_add(own, "apiVersion", json_object_new_string("v1")) ||
           gm_add(own, "kind", json_object_new_string("Pod")) ||
           gm_add(own, "name", json_object_new_string(gm_meta(pod, "name"))) ||
           gm_add(own, "uid", json_object_new_string(uid));
}

/* The claim; see gpu_mech.h. */
json_object *gpu_mech_claim(json_object *pod, const struct opst_place *p, int64_t min_mib,
                            aiq_err *err) {
    char name[AIQ_MAX_NAME + 1], cel[AIQ_MAX_GPUS_PER_REPLICA * 8 + 256];
    const char *pn = gm_meta(pod, "name"), *ns = gm_meta(pod, "namespace");
    const char *uid = gm_meta(pod, "uid");
    if (!pn || !ns || !uid || !*uid) {
        aiq_err_field(err, AIQ_EINVAL, "metadata", "metadata: the pod needs name, namespace and uid");
        return NULL;
    }
    if (p->ngpus <= 0) {
        aiq_err_field(err, AIQ_EINVAL, "status.placement",
                      "status.placement[%d]: no GPU to claim on %s", p->replica, p->node);
        return NULL;
    }
    if (gpu_mech_claim_name(name, sizeof name, pn) != 0 || gm_cel(cel, sizeof cel, p, min_mib)) {
        aiq_err_field(err, AIQ_EINVAL, "metadata.name", "metadata.name: pod %s: claim name too long",
                      pn);
        return NULL;
    }
    json_object *claim = json_object_new_object(), *spec = NULL, *devs = NULL, *reqs = NULL;
    json_object *req = NULL, *ex = NULL, *sels = NULL, *sel = NULL, *c = NULL;
    if (!claim || gm_add(claim, "apiVersion", json_object_new_string("resource.k8s.io/v1")) ||
        gm_add(claim, "kind", json_object_new_string("ResourceClaim")) ||
        gm_claim_meta(claim, pod, name, ns, uid))
        goto nomem;
    if (!(spec = gm_child(claim, "spec", json_type_object)) ||
        !(devs = gm_child(spec, "devices", json_type_object)) ||
        !(reqs = gm_child(devs, "requests", json_type_array)))
        goto nomem;
    if (gm_push(reqs, req = json_object_new_object()) ||
        gm_add(req, "name", json_object_new_string(GPU_MECH_CLAIM_ENTRY)) ||
        !(ex = gm_child(req, "exactly", json_type_object)) ||
        gm_add(ex, "deviceClassName", json_object_new_string(GPU_MECH_DRA_CLASS)) ||
        gm_add(ex, "allocationMode", json_object_new_string("ExactCount")) ||
        gm_add(ex, "count", json_object_new_int(p->ngpus)) ||
        !(sels = gm_child(ex, "selectors", json_type_array)) ||
        gm_push(sels, sel = json_object_new_object()) ||
        !(c = gm_child(sel, "cel", json_type_object)) ||
        gm_add(c, "expression", json_object_new_string(cel)))
        goto nomem;
    return claim;
nomem:
    json_object_put(claim);
    aiq_err_set(err, AIQ_ENOMEM, "out of memory building the ResourceClaim of %s", pn);
    return NULL;
}

/* Ownership; see gpu_mech.h. */
int gpu_mech_claim_owned_by(json_object *claim, const char *pod_uid) {
    json_object *m = NULL, *owners = NULL;
    if (!pod_uid || !json_object_object_get_ex(claim, "metadata", &m) ||
        !json_object_object_get_ex(m, "ownerReferences", &owners) ||
        !json_object_is_type(owners, json_type_array))
        return 0;
    for (size_t i = 0; i < json_object_array_length(owners); i++) {
        json_object *u = NULL;
        if (json_object_object_get_ex(json_object_array_get_idx(owners, i), "uid", &u) &&
            strcmp(json_object_get_string(u), pod_uid) == 0)
            return 1;
    }
    return 0;
}
