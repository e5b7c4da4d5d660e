/* release.c -- the per-pod merge patch that hints and ungates one replica
 * of an admitted gang (see release.h for the protocol). */
#include "operator/release.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/json.h"
#include "common/model.h"

/* Adds key -> v to obj (takes v, also on failure). Returns 0 or -1. */
static int rel_add(json_object *obj, const char *key, json_object *v) {
    if (!v)
        return -1;
    if (json_object_object_add(obj, key, v) != 0) {
        json_object_put(v);
        return -1;
    }
    return 0;
}

/* Adds a new empty object under key and returns it (NULL on ENOMEM). */
static json_object *rel_obj(json_object *parent, const char *key) {
    json_object *o = json_object_new_object();
    return rel_add(parent, key, o) == 0 ? o : NULL;
}

/* Writes the GPU list; see release.h. */
const char *release_gpu_list(char *buf, size_t cap, const struct opst_place *p) {
    size_t n = 0;
    if (!cap)
        return buf;
    buf[0] = '\0';
    for (int i = 0; i < p->ngpus; i++) {
        int w = snprintf(buf + n, cap - n, "%s%d", i ? "," : "", p->gpus[i]);
        if (w < 0 || (size_t)w >= cap - n) {
            buf[n] = '\0';
            break;
        }
        n += (size_t)w;
    }
    return buf;
}

/* Returns the bound node; see release.h. */
const char *release_pod_node(json_object *pod) {
    json_object *s = NULL, *n = NULL;
    if (!json_object_object_get_ex(pod, "spec", &s) ||
        !json_object_object_get_ex(s, "nodeName", &n) ||
        !json_object_is_type(n, json_type_string))
        return NULL;
    const char *v = json_object_get_string(n);
    return (v && *v) ? v : NULL;
}

/* Our requirement: matchFields metadata.name In [node]. */
static json_object *rel_name_req(const char *node) {
    json_object *r = json_object_new_object();
    json_object *vals = json_object_new_array();
    if (!r || !vals)
        goto fail;
    if (aiq_jpush(vals, json_object_new_string(node), NULL) != 0)
        goto fail;
    if (rel_add(r, "key", json_object_new_string("metadata.name")) ||
        rel_add(r, "operator", json_object_new_string("In")))
        goto fail;
    if (rel_add(r, "values", vals)) {
        vals = NULL;
        goto fail;
    }
    return r;
fail:
    json_object_put(vals);
    json_object_put(r);
    return NULL;
}

/* Copies term (may be NULL: a new term) with our requirement appended to
 * its matchFields. A real API server lets a gated pod's required node
 * affinity only tighten: each existing term keeps its matchExpressions
 * and matchFields as an unchanged prefix and may gain entries at the end,
 * and a term with neither (which matches no node) may gain nothing, so
 * it is copied as it is. Returns a new object or NULL on ENOMEM. */
static json_object *rel_term(json_object *term, const char *node) {
    json_object *t = json_object_new_object();
    json_object *fields = json_object_new_array();
    json_object *mine = rel_name_req(node);
    json_object *me = NULL, *mf = NULL;
    if (!t || !fields || !mine)
        goto fail;
    if (term && json_object_is_type(term, json_type_object)) {
        if (json_object_object_get_ex(term, "matchExpressions", &me) &&
            rel_add(t, "matchExpressions", json_object_get(me)))
            goto fail;
        if (json_object_object_get_ex(term, "matchFields", &mf) &&
            json_object_is_type(mf, json_type_array)) {
            for (size_t i = 0; i < json_object_array_length(mf); i++) {
                json_object *r = json_object_array_get_idx(mf, i);
                /* Ours already (a release sent again): not twice. */
                if (mine && json_object_equal(r, mine)) {
                    json_object_put(mine);
                    mine = NULL;
                }
                if (aiq_jpush(fields, json_object_get(r), NULL) != 0)
                    goto fail; /* the reference taken is given back */
            }
        }
        bool has_me = me && json_object_is_type(me, json_type_array) && json_object_array_length(me) > 0;
        if (!has_me && json_object_array_length(fields) == 0) {
            /* Empty: may not gain anything; keep it as it is. */
            json_object_put(mine);
            json_object_put(fields);
            json_object_put(t);
            return json_object_get(term);
        }
    }
    if (mine && json_object_array_add(fields, mine) != 0)
        goto fail;
    mine = NULL;
    if (rel_add(t, "matchFields", fields)) {
        fields = NULL;
        goto fail;
    }
    return t;
fail:
    json_object_put(mine);
    json_object_put(fields);
    json_object_put(t);
    return NULL;
}

/* The patch's metadata.annotations: where the pod goes (node, GPUs, GPU
 * memory). Returns 0, or -1 when out of memory. */
static int rel_annotations(json_object *patch, const struct opst_place *p) {
    char buf[AIQ_MAX_GPUS_PER_REPLICA * 4 + 8];
    json_object *meta = rel_obj(patch, "metadata");
    json_object *ann = meta ? rel_obj(meta, "annotations") : NULL;
    if (!ann ||
        rel_add(ann, RELEASE_ANN_NODE, json_object_new_string(p->node)) ||
        rel_add(ann, RELEASE_ANN_GPUS,
                json_object_new_string(release_gpu_list(buf, sizeof buf, p))))
        return -1;
    snprintf(buf, sizeof buf, "%" PRId64, p->gpu_memory_mib);
    return rel_add(ann, RELEASE_ANN_GPU_MEM, json_object_new_string(buf)) ? -1 : 0;
}

/* The patch's required node affinity: each of the pod's existing terms
 * (ORed; pspec is its spec, may be NULL) with our node ANDed in, or our
 * node alone. Returns 0, or -1 when out of memory. */
static int rel_affinity(json_object *spec, json_object *pspec, const char *node) {
    json_object *aff = rel_obj(spec, "affinity");
    json_object *na = aff ? rel_obj(aff, "nodeAffinity") : NULL;
    json_object *req = na ? rel_obj(na, "requiredDuringSchedulingIgnoredDuringExecution") : NULL;
    if (!req)
        return -1;
    json_object *terms = json_object_new_array();
    if (rel_add(req, "nodeSelectorTerms", terms))
        return -1;
    json_object *old_terms = NULL, *x = NULL;
    if (pspec && json_object_object_get_ex(pspec, "affinity", &x) &&
        json_object_object_get_ex(x, "nodeAffinity", &x) &&
        json_object_object_get_ex(x, "requiredDuringSchedulingIgnoredDuringExecution", &x) &&
        json_object_object_get_ex(x, "nodeSelectorTerms", &old_terms) &&
        !json_object_is_type(old_terms, json_type_array))
        old_terms = NULL;
    size_t nold = old_terms ? json_object_array_length(old_terms) : 0;
    for (size_t i = 0; i < (nold ? nold : 1); i++) {
        json_object *t = rel_term(nold ? json_object_array_get_idx(old_terms, i) : NULL, node);
        if (!t || json_object_array_add(terms, t) != 0) {
            json_object_put(t);
            return -1;
        }
    }
    return 0;
}

/* The patch's schedulingGates: everyone else's kept, ours dropped (null
 * when none is left). Returns 0, or -1 when out of memory. */
static int rel_gates(json_object *spec, json_object *pspec) {
    json_object *gates = NULL, *keep = json_object_new_array();
    if (!keep)
        return -1;
    if (pspec && json_object_object_get_ex(pspec, "schedulingGates", &gates) &&
        json_object_is_type(gates, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(gates); i++) {
            json_object *g = json_object_array_get_idx(gates, i), *n = NULL;
            if (json_object_object_get_ex(g, "name", &n) &&
                strcmp(json_object_get_string(n), AIQ_GATE) == 0)
                continue;
            if (json_object_array_add(keep, json_object_get(g)) != 0) {
                json_object_put(keep);
                return -1;
            }
        }
    }
    if (json_object_array_length(keep) == 0) {
        json_object_put(keep);
        return json_object_object_add(spec, "schedulingGates", NULL) != 0 ? -1 : 0;
    }
    return rel_add(spec, "schedulingGates", keep) ? -1 : 0;
}

/* Builds the release patch of one pod; see release.h. */
json_object *release_pod_patch(json_object *pod, const struct opst_place *p,
                               aiq_err *err) {
    json_object *patch = NULL, *spec = NULL, *pspec = NULL;

    if (!p->node[0]) {
        aiq_err_field(err, AIQ_EINVAL, "status.placement",
                      "status.placement[%d].node: empty", p->replica);
        return NULL;
    }
    patch = json_object_new_object();
    if (!patch)
        goto nomem;
    json_object_object_get_ex(pod, "spec", &pspec);
    if (rel_annotations(patch, p) != 0)
        goto nomem;
    spec = rel_obj(patch, "spec");
    if (!spec || rel_affinity(spec, pspec, p->node) != 0 || rel_gates(spec, pspec) != 0)
        goto nomem;
    return patch;

nomem:
    aiq_err_set(err, AIQ_ENOMEM, "out of memory building release patch");
    json_object_put(patch);
    return NULL;
}
