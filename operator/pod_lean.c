/* pod_lean.c -- builds the lean copy of a pod the operator caches (see
 * pod_lean.h for the fields kept and why). */
#include "operator/pod_lean.h"

#include <stdbool.h>
#include <string.h>

#include "common/json.h"

static bool pl_is(json_object *o, json_type t) {
    return o && json_object_is_type(o, t);
}

/* Adds v under k, a key named in this file (a string literal, so the
 * object need not copy it: 32 bytes less a member, a dozen members a
 * waiting pod), to dst, which has no member k yet. Returns 0 or -1. */
static int pl_set(json_object *dst, const char *k, json_object *v) {
    return json_object_object_add_ex(dst, k, v,
                                     JSON_C_OBJECT_ADD_CONSTANT_KEY | JSON_C_OBJECT_ADD_KEY_IS_NEW);
}

/* Adds a reference to src's key k (when present) to dst. Returns 0, or
 * -1 on ENOMEM. */
static int pl_share(json_object *dst, json_object *src, const char *k) {
    json_object *v = aiq_jget(src, k);
    if (!v)
        return 0;
    if (pl_set(dst, k, json_object_get(v)) != 0) {
        json_object_put(v);
        return -1;
    }
    return 0;
}

/* Adds child (owned; NULL = ENOMEM) under k, or drops it when it came
 * out empty. Returns 0 or -1. */
static int pl_add(json_object *dst, const char *k, json_object *child) {
    if (!child)
        return -1;
    if ((pl_is(child, json_type_object) && json_object_object_length(child) == 0) ||
        (pl_is(child, json_type_array) && json_object_array_length(child) == 0)) {
        json_object_put(child);
        return 0;
    }
    if (pl_set(dst, k, child) != 0) {
        json_object_put(child);
        return -1;
    }
    return 0;
}

/* As pl_add, with child replaced by the pool's equal subtree (share may
 * be NULL: kept as it is). */
static int pl_add_shared(json_object *dst, const char *k, json_object *child,
                         struct jshare *share) {
    if (child && ((pl_is(child, json_type_object) && json_object_object_length(child) == 0) ||
                  (pl_is(child, json_type_array) && json_object_array_length(child) == 0)))
        return pl_add(dst, k, child); /* dropped there */
    return pl_add(dst, k, jshare_intern(share, child));
}

/* Appends a reference to v to the array arr. Returns 0 or -1. */
static int pl_push(json_object *arr, json_object *v) {
    if (json_object_array_add(arr, json_object_get(v)) != 0) {
        json_object_put(v);
        return -1;
    }
    return 0;
}

/* The "aiq.dev/" annotations of ann. NULL on ENOMEM. */
static json_object *pl_annotations(json_object *ann) {
    json_object *out = json_object_new_object();
    size_t plen = strlen(POD_LEAN_ANN_PREFIX);
    if (!out || !pl_is(ann, json_type_object))
        return out;
    json_object_object_foreach(ann, k, v) {
        if (strncmp(k, POD_LEAN_ANN_PREFIX, plen) == 0 &&
            json_object_object_add(out, k, json_object_get(v)) != 0) {
            json_object_put(v);
            json_object_put(out);
            return NULL;
        }
    }
    return out;
}

/* The controller's entry of the ownerReferences refs. NULL on ENOMEM. */
static json_object *pl_owner(json_object *refs) {
    json_object *out = json_object_new_array();
    for (size_t i = 0; out && pl_is(refs, json_type_array) && i < json_object_array_length(refs);
         i++) {
        json_object *r = json_object_array_get_idx(refs, i), *ctl = aiq_jget(r, "controller");
        if (ctl && json_object_get_boolean(ctl)) {
            if (pl_push(out, r) != 0) {
                json_object_put(out);
                return NULL;
            }
            break;
        }
    }
    return out;
}

static json_object *pl_metadata(json_object *md, bool bound, struct jshare *share) {
    static const char *const scalars[] = {"name", "namespace", "uid", "resourceVersion",
                                          "creationTimestamp", "deletionTimestamp", "labels"};
    json_object *out = json_object_new_object();
    if (!out)
        return NULL;
    for (size_t i = 0; i < sizeof scalars / sizeof *scalars; i++)
        if (pl_share(out, md, scalars[i]) != 0)
            goto fail;
    if (pl_add_shared(out, "annotations", pl_annotations(aiq_jget(md, "annotations")), share) != 0)
        goto fail;
    if (bound && pl_add(out, "ownerReferences", pl_owner(aiq_jget(md, "ownerReferences"))) != 0)
        goto fail;
    return out;
fail:
    json_object_put(out);
    return NULL;
}

/* The containers list cs reduced to each one's resources (and, for init
 * containers, restartPolicy: a sidecar's requests add up). NULL on ENOMEM. */
static json_object *pl_containers(json_object *cs, bool init) {
    json_object *out = json_object_new_array();
    for (size_t i = 0; out && pl_is(cs, json_type_array) && i < json_object_array_length(cs);
         i++) {
        json_object *c = json_object_array_get_idx(cs, i), *lc = json_object_new_object();
        if (!lc || pl_share(lc, c, "resources") != 0 ||
            (init && pl_share(lc, c, "restartPolicy") != 0) ||
            json_object_array_add(out, lc) != 0) {
            json_object_put(lc);
            json_object_put(out);
            return NULL;
        }
    }
    return out;
}

static json_object *pl_spec(json_object *spec, bool bound) {
    json_object *out = json_object_new_object();
    if (!out)
        return NULL;
    if (pl_share(out, spec, "nodeName") != 0 || pl_share(out, spec, "schedulingGates") != 0 ||
        pl_share(out, spec, "affinity") != 0)
        goto fail;
    if (bound && (pl_add(out, "containers", pl_containers(aiq_jget(spec, "containers"), false)) ||
                  pl_add(out, "initContainers",
                         pl_containers(aiq_jget(spec, "initContainers"), true)) ||
                  pl_share(out, spec, "overhead") != 0))
        goto fail;
    return out;
fail:
    json_object_put(out);
    return NULL;
}

/* The scheduler's Unschedulable verdict alone, when the pod has one. */
static json_object *pl_conditions(json_object *conds) {
    json_object *out = json_object_new_array();
    for (size_t i = 0; out && pl_is(conds, json_type_array) && i < json_object_array_length(conds);
         i++) {
        json_object *c = json_object_array_get_idx(conds, i);
        json_object *t = aiq_jget(c, "type"), *st = aiq_jget(c, "status"), *r = aiq_jget(c, "reason");
        if (!pl_is(t, json_type_string) || strcmp(json_object_get_string(t), "PodScheduled") != 0)
            continue;
        /* The first PodScheduled decides (unsched.c reads no further). */
        if (pl_is(st, json_type_string) && strcmp(json_object_get_string(st), "False") == 0 &&
            pl_is(r, json_type_string) && strcmp(json_object_get_string(r), "Unschedulable") == 0 &&
            pl_push(out, c) != 0) {
            json_object_put(out);
            return NULL;
        }
        break;
    }
    return out;
}

static json_object *pl_status(json_object *st) {
    json_object *out = json_object_new_object();
    if (!out)
        return NULL;
    if (pl_share(out, st, "phase") != 0 || pl_share(out, st, "startTime") != 0 ||
        pl_add(out, "conditions", pl_conditions(aiq_jget(st, "conditions"))) != 0) {
        json_object_put(out);
        return NULL;
    }
    return out;
}

/* The lean copy; see pod_lean.h. */
json_object *pod_lean(json_object *pod, struct jshare *share) {
    if (!pl_is(pod, json_type_object))
        return NULL;
    json_object *spec = aiq_jget(pod, "spec"), *node = aiq_jget(spec, "nodeName");
    bool bound = pl_is(node, json_type_string) && json_object_get_string_len(node) > 0;
    json_object *out = json_object_new_object();
    if (!out)
        return NULL;
    if (pl_add(out, "metadata", pl_metadata(aiq_jget(pod, "metadata"), bound, share)) != 0 ||
        pl_add_shared(out, "spec", pl_spec(spec, bound), share) != 0 ||
        pl_add_shared(out, "status", pl_status(aiq_jget(pod, "status")), share) != 0) {
        json_object_put(out);
        return NULL;
    }
    return out;
}

json_object *pod_lean_cache(json_object *pod, void *share) {
    return pod_lean(pod, share);
}
