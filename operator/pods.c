/* pods.c -- construction of an AIJob's gated pods from its template
 * (see pods.h). Pure json-c: no I/O. */
#include "operator/pods.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"

/* Returns obj[key] as an object, creating an empty object there when it
 * is missing or of another type. NULL only on allocation failure. */
static json_object *pods_child(json_object *obj, const char *key) {
    json_object *c = NULL;
    if (json_object_object_get_ex(obj, key, &c) &&
        json_object_is_type(c, json_type_object))
        return c;
    c = json_object_new_object();
    if (!c || json_object_object_add(obj, key, c) != 0) {
        json_object_put(c);
        return NULL;
    }
    return c;
}

/* Returns obj[key] as an array, creating it as above. */
static json_object *pods_array(json_object *obj, const char *key) {
    json_object *c = NULL;
    if (json_object_object_get_ex(obj, key, &c) &&
        json_object_is_type(c, json_type_array))
        return c;
    c = json_object_new_array();
    if (!c || json_object_object_add(obj, key, c) != 0) {
        json_object_put(c);
        return NULL;
    }
    return c;
}

static int pods_set_str(json_object *obj, const char *key, const char *v) {
    json_object *s = json_object_new_string(v);
    if (!s || json_object_object_add(obj, key, s) != 0) {
        json_object_put(s);
        return -1;
    }
    return 0;
}

/* Sets env var name=value in container c, replacing an existing entry of
 * the same name (our values win over the template's). */
static int pods_set_env(json_object *c, const char *name, const char *value) {
    json_object *env = pods_array(c, "env");
    if (!env)
        return -1;
    size_t n = json_object_array_length(env);
    for (size_t i = 0; i < n; i++) {
        json_object *e = json_object_array_get_idx(env, i), *nm = NULL;
        if (json_object_object_get_ex(e, "name", &nm) &&
            strcmp(json_object_get_string(nm), name) == 0) {
            json_object_object_del(e, "valueFrom");
            return pods_set_str(e, "value", value);
        }
    }
    json_object *e = json_object_new_object();
    if (!e || pods_set_str(e, "name", name) ||
        pods_set_str(e, "value", value) ||
        json_object_array_add(env, e) != 0) {
        json_object_put(e);
        return -1;
    }
    return 0;
}

/* Builds the pod's name; see pods.h. */
int pods_name(char *buf, size_t cap, const char *job, int index) {
    int n = snprintf(buf, cap, "%s-%d", job ? job : "", index);
    if (n < 0 || (size_t)n >= cap || n > AIQ_MAX_NAME) {
        if (cap)
            buf[0] = '\0';
        return -1;
    }
    return 0;
}

/* Returns the first container of spec, adding a default one when the
 * template has none (a job without a template still runs in the
 * simulated cluster). */
static json_object *pods_first_container(json_object *spec) {
    json_object *cs = pods_array(spec, "containers");
    if (!cs)
        return NULL;
    if (json_object_array_length(cs) > 0) {
        json_object *c = json_object_array_get_idx(cs, 0);
        return json_object_is_type(c, json_type_object) ? c : NULL;
    }
    json_object *c = json_object_new_object();
    if (!c || pods_set_str(c, "name", "worker") ||
        pods_set_str(c, "image", "registry.k8s.io/pause:3.9") ||
        json_object_array_add(cs, c) != 0) {
        json_object_put(c);
        return NULL;
    }
    return c;
}

/* Puts the cpu and memory requests of spec.resources on the GPU
 * container c (the template's first container). Its GPUs are put there by
 * gpu_mech_pod, as the admin's mechanism asks for them: the whole gang's
 * GPUs are counted by the queue from spec.resources alone, so that is the
 * only place a GPU enters the pod (pods_template_check refused any
 * extended resource of the template's, on every container and init
 * container). Returns 0, or -1 on ENOMEM. */
static int pods_set_resources(json_object *c, const struct aiq_aijob *job) {
    json_object *res = pods_child(c, "resources");
    json_object *lim = res ? pods_child(res, "limits") : NULL;
    json_object *req = res ? pods_child(res, "requests") : NULL;
    char q[48];
    if (!lim || !req)
        return -1;
    /* The GPUs are the mechanism's (gpu_mech_pod): not set here. */
    if (job->spec.resources.cpu_milli > 0) {
        snprintf(q, sizeof q, "%" PRId64 "m", job->spec.resources.cpu_milli);
        if (pods_set_str(req, "cpu", q))
            return -1;
    }
    if (job->spec.resources.memory_bytes > 0) {
        snprintf(q, sizeof q, "%" PRId64, job->spec.resources.memory_bytes);
        if (pods_set_str(req, "memory", q))
            return -1;
    }
    return 0;
}

/* ---- the template guard ------------------------------------------------
 * The fields that carry the queue's decisions belong to aiq: where a
 * replica runs (nodeName), when it may be scheduled (schedulingGates) and
 * which accelerators it holds (extended resources, resource claims). A
 * template that sets one would let a pod bypass the queue, so it is
 * refused here whatever the API server let through (the CRD refuses the
 * same fields: crds/aijobs.aiq.dev.yaml). */

/* Fills err for field (a path under spec.template.spec) with why, and
 * returns -1. */
static int pods_refuse(aiq_err *err, const char *field, const char *why) {
    char path[256];
    snprintf(path, sizeof path, "spec.template.spec.%s", field);
    aiq_err_field(err, AIQ_EINVAL, path, "%s: %s", path, why);
    return -1;
}

/* Tells whether v is a non-empty array (a list the template may not set). */
static int pods_nonempty(json_object *v) {
    return v && json_object_is_type(v, json_type_array) &&
           json_object_array_length(v) > 0;
}

/* Checks a resources.limits / resources.requests map: only resources
 * without a domain (cpu, memory, ephemeral-storage, hugepages-<size>) may
 * be set; every domain-qualified name is an extended resource a device
 * plugin hands out (nvidia.com/gpu, amd.com/gpu, rdma/hca, ...). */
static int pods_check_quantities(json_object *m, const char *where,
                                 aiq_err *err) {
    char field[200];
    if (!m || !json_object_is_type(m, json_type_object))
        return 0;
    json_object_object_foreach(m, k, v) {
        (void)v;
        if (!strchr(k, '/'))
            continue;
        char why[300];
        snprintf(field, sizeof field, "%s[%.100s]", where, k);
        snprintf(why, sizeof why,
                 "extended resource \"%.100s\" is not allowed in the template: "
                 "GPUs come from spec.resources (gpus, gpuMemoryMiB), which "
                 "the queue counts", k);
        return pods_refuse(err, field, why);
    }
    return 0;
}

/* Checks one container's resources (list is "containers" or
 * "initContainers", i its index). */
static int pods_check_container(json_object *c, const char *list, size_t i,
                                aiq_err *err) {
    json_object *res = NULL, *v = NULL;
    char where[96];
    if (!json_object_is_type(c, json_type_object) ||
        !json_object_object_get_ex(c, "resources", &res) ||
        !json_object_is_type(res, json_type_object))
        return 0;
    snprintf(where, sizeof where, "%s[%zu].resources.limits", list, i);
    if (json_object_object_get_ex(res, "limits", &v) &&
        pods_check_quantities(v, where, err))
        return -1;
    snprintf(where, sizeof where, "%s[%zu].resources.requests", list, i);
    if (json_object_object_get_ex(res, "requests", &v) &&
        pods_check_quantities(v, where, err))
        return -1;
    snprintf(where, sizeof where, "%s[%zu].resources.claims", list, i);
    if (json_object_object_get_ex(res, "claims", &v) && pods_nonempty(v))
        return pods_refuse(err, where,
                           "must not be set: aiq adds the GPU claims itself");
    return 0;
}

/* Checks the template's pod spec; see pods.h. */
int pods_template_check(json_object *tspec, aiq_err *err) {
    static const char *const lists[] = {"containers", "initContainers"};
    json_object *v = NULL;
    if (!tspec || !json_object_is_type(tspec, json_type_object))
        return 0;
    if (json_object_object_get_ex(tspec, "nodeName", &v) &&
        !(json_object_is_type(v, json_type_string) &&
          json_object_get_string_len(v) == 0) &&
        !json_object_is_type(v, json_type_null)) {
        char why[300];
        snprintf(why, sizeof why,
                 "must not be set (\"%.100s\"): aiq places the replicas and "
                 "the scheduler binds them once the gang is admitted",
                 json_object_get_string(v));
        return pods_refuse(err, "nodeName", why);
    }
    if (json_object_object_get_ex(tspec, "schedulingGates", &v) &&
        pods_nonempty(v))
        return pods_refuse(err, "schedulingGates",
                           "must not be set: aiq owns the pods' scheduling "
                           "gates (aiq.dev/admission)");
    if (json_object_object_get_ex(tspec, "resourceClaims", &v) &&
        pods_nonempty(v))
        return pods_refuse(err, "resourceClaims",
                           "must not be set: GPUs come from spec.resources "
                           "and aiq adds any claim itself");
    json_object *pres = NULL;
    if (json_object_object_get_ex(tspec, "resources", &pres) &&
        json_object_is_type(pres, json_type_object)) {
        if (json_object_object_get_ex(pres, "limits", &v) &&
            pods_check_quantities(v, "resources.limits", err))
            return -1;
        if (json_object_object_get_ex(pres, "requests", &v) &&
            pods_check_quantities(v, "resources.requests", err))
            return -1;
    }
    for (size_t l = 0; l < sizeof lists / sizeof lists[0]; l++) {
        json_object *cs = NULL;
        if (!json_object_object_get_ex(tspec, lists[l], &cs) ||
            !json_object_is_type(cs, json_type_array))
            continue;
        for (size_t i = 0; i < json_object_array_length(cs); i++)
            if (pods_check_container(json_object_array_get_idx(cs, i),
                                     lists[l], i, err))
                return -1;
    }
    return 0;
}

/* Checks the job's identity and the replica index, and writes the pod's
 * name. Returns 0, or -1 with err naming the field. */
static int pods_check_job(const struct aiq_aijob *job, int index, char *name, size_t cap,
                          aiq_err *err) {
    if (!job->meta.name || !job->meta.namespace_ || !job->meta.uid) {
        aiq_err_field(err, AIQ_EINVAL, "metadata",
                      "metadata: the AIJob needs name, namespace and uid");
        return -1;
    }
    /* An elastic job's replicas go up to maxReplicas - 1. */
    int nmax = job->spec.max_replicas > job->spec.replicas ? job->spec.max_replicas
                                                           : job->spec.replicas;
    if (index < 0 || index >= nmax) {
        aiq_err_field(err, AIQ_EINVAL, "spec.replicas",
                      "replica index %d outside 0..%d", index, nmax - 1);
        return -1;
    }
    if (pods_name(name, cap, job->meta.name, index) != 0) {
        aiq_err_field(err, AIQ_EINVAL, "metadata.name",
                      "metadata.name: pod name for replica %d of \"%.200s\" "
                      "passes %d characters",
                      index, job->meta.name, AIQ_MAX_NAME);
        return -1;
    }
    return 0;
}

/* Parses spec.template into *tmpl (NULL when the job has none; caller
 * puts it). Returns 0, or -1 with err (ENOMEM, too deep, not an object). */
static int pods_parse_template(const struct aiq_aijob *job, int index, json_object **tmpl,
                               aiq_err *err) {
    *tmpl = NULL;
    if (!job->spec.template_json || !job->spec.template_json[0])
        return 0;
    /* A real API server stores templates nested up to 10,000 levels;
     * a pod template never needs more than AIQ_MAX_DEPTH. */
    json_tokener *tok = json_tokener_new_ex(AIQ_MAX_DEPTH);
    if (!tok) {
        aiq_err_set(err, AIQ_ENOMEM, "out of memory building pod %d of %s", index,
                    job->meta.name);
        return -1;
    }
    json_object *t = json_tokener_parse_ex(tok, job->spec.template_json, -1);
    enum json_tokener_error jerr = json_tokener_get_error(tok);
    json_tokener_free(tok);
    if (jerr == json_tokener_error_depth) {
        json_object_put(t);
        aiq_err_field(err, AIQ_EINVAL, "spec.template",
                      "spec.template: nesting too deep (more than %d levels)", AIQ_MAX_DEPTH);
        return -1;
    }
    if (!t || !json_object_is_type(t, json_type_object)) {
        json_object_put(t);
        aiq_err_field(err, AIQ_EPARSE, "spec.template", "spec.template: not a JSON object");
        return -1;
    }
    *tmpl = t;
    return 0;
}

/* A new Pod object: apiVersion, kind, empty metadata and a copy of the
 * template's spec (else an empty one). NULL on ENOMEM. */
static json_object *pods_skeleton(json_object *tspec) {
    json_object *pod = json_object_new_object();
    if (!pod)
        return NULL;
    json_object *meta = json_object_new_object();
    json_object *spec = NULL;
    if (tspec && json_object_is_type(tspec, json_type_object)) {
        if (json_object_deep_copy(tspec, &spec, NULL) != 0)
            spec = NULL;
    } else {
        spec = json_object_new_object();
    }
    if (pods_set_str(pod, "apiVersion", "v1") ||
        pods_set_str(pod, "kind", "Pod") || !meta ||
        json_object_object_add(pod, "metadata", meta) != 0) {
        json_object_put(meta);
        json_object_put(spec);
        json_object_put(pod);
        return NULL;
    }
    if (!spec || json_object_object_add(pod, "spec", spec) != 0) {
        json_object_put(spec);
        json_object_put(pod);
        return NULL;
    }
    return pod;
}

/* Copies the string entries of the template's metadata member key
 * ("labels", "annotations") into dst. Returns 0, or -1 on ENOMEM. */
static int pods_copy_strings(json_object *tmeta, const char *key, json_object *dst) {
    json_object *t = NULL;
    if (!tmeta || !json_object_object_get_ex(tmeta, key, &t) ||
        !json_object_is_type(t, json_type_object))
        return 0;
    json_object_object_foreach(t, k, v) {
        if (json_object_is_type(v, json_type_string) &&
            pods_set_str(dst, k, json_object_get_string(v)))
            return -1;
    }
    return 0;
}

/* The AIJob as the pod's controlling owner. Returns 0, or -1 on ENOMEM. */
static int pods_owner(json_object *meta, const struct aiq_aijob *job) {
    json_object *owners = json_object_new_array();
    json_object *own = json_object_new_object();
    if (!owners || !own || json_object_array_add(owners, own) != 0) {
        json_object_put(owners);
        json_object_put(own);
        return -1;
    }
    if (json_object_object_add(meta, "ownerReferences", owners) != 0) {
        json_object_put(owners);
        return -1;
    }
    if (pods_set_str(own, "apiVersion", AIQ_API_VERSION) ||
        pods_set_str(own, "kind", "AIJob") ||
        pods_set_str(own, "name", job->meta.name) ||
        pods_set_str(own, "uid", job->meta.uid) ||
        aiq_jset(own, "controller", json_object_new_boolean(1), NULL) != 0 ||
        aiq_jset(own, "blockOwnerDeletion", json_object_new_boolean(1), NULL) != 0)
        return -1;
    return 0;
}

/* metadata: name, namespace, the template's labels and annotations, the
 * job's simulation annotations, aiq's labels, the owner. Returns 0, or -1
 * on ENOMEM. */
static int pods_metadata(json_object *meta, const struct aiq_aijob *job, json_object *tmeta,
                         json_object *job_annotations, const char *name, const char *num) {
    if (pods_set_str(meta, "name", name) ||
        pods_set_str(meta, "namespace", job->meta.namespace_))
        return -1;
    json_object *labels = pods_child(meta, "labels");
    json_object *annots = pods_child(meta, "annotations");
    if (!labels || !annots || pods_copy_strings(tmeta, "labels", labels) ||
        pods_copy_strings(tmeta, "annotations", annots))
        return -1;
    if (job_annotations &&
        json_object_is_type(job_annotations, json_type_object)) {
        json_object_object_foreach(job_annotations, k, v) {
            if (strncmp(k, PODS_SIM_PREFIX, strlen(PODS_SIM_PREFIX)) == 0 &&
                json_object_is_type(v, json_type_string) &&
                pods_set_str(annots, k, json_object_get_string(v)))
                return -1;
        }
    }
    if (pods_set_str(labels, PODS_LABEL_JOB, job->meta.name) ||
        pods_set_str(labels, PODS_LABEL_INDEX, num))
        return -1;
    return pods_owner(meta, job);
}

/* Keeps only the annotations pods_metadata copies; see pods.h. */
int pods_job_annotations_trim(json_object *meta) {
    json_object *ann = NULL;
    const char *drop[64];
    int n = 0, gone = 0;
    if (!meta || !json_object_object_get_ex(meta, "annotations", &ann))
        return 0;
    if (!json_object_is_type(ann, json_type_object)) {
        json_object_object_del(meta, "annotations");
        return 1;
    }
    /* Deleting while iterating is not allowed: in rounds of 64 keys. */
    do {
        n = 0;
        json_object_object_foreach(ann, k, v) {
            (void)v;
            if (strncmp(k, PODS_SIM_PREFIX, strlen(PODS_SIM_PREFIX)) != 0 && n < 64)
                drop[n++] = k;
        }
        for (int i = 0; i < n; i++)
            json_object_object_del(ann, drop[i]);
        gone += n;
    } while (n == 64);
    if (json_object_object_length(ann) == 0)
        json_object_object_del(meta, "annotations");
    return gone;
}

/* spec: aiq's scheduling gate (pods_template_check refused any of the
 * template's), restartPolicy Never unless set. Returns 0, or -1 on ENOMEM. */
static int pods_gate(json_object *spec) {
    json_object *gates = pods_array(spec, "schedulingGates");
    if (!gates)
        return -1;
    int have_gate = 0;
    for (size_t i = 0; i < json_object_array_length(gates); i++) {
        json_object *g = json_object_array_get_idx(gates, i), *gn = NULL;
        if (json_object_object_get_ex(g, "name", &gn) &&
            strcmp(json_object_get_string(gn), AIQ_GATE) == 0)
            have_gate = 1;
    }
    if (!have_gate) {
        json_object *g = json_object_new_object();
        if (!g || pods_set_str(g, "name", AIQ_GATE) ||
            json_object_array_add(gates, g) != 0) {
            json_object_put(g);
            return -1;
        }
    }
    json_object *rp = NULL;
    if (!json_object_object_get_ex(spec, "restartPolicy", &rp) &&
        pods_set_str(spec, "restartPolicy", "Never"))
        return -1;
    return 0;
}

/* Every container gets the env; the first one the resources. Returns 0,
 * or -1 on ENOMEM. */
static int pods_containers(json_object *spec, const struct aiq_aijob *job, const char *num) {
    json_object *c0 = pods_first_container(spec);
    if (!c0)
        return -1;
    json_object *cs = NULL;
    json_object_object_get_ex(spec, "containers", &cs);
    char cnt[32];
    snprintf(cnt, sizeof cnt, "%d", (int)job->spec.replicas);
    for (size_t i = 0; i < json_object_array_length(cs); i++) {
        json_object *c = json_object_array_get_idx(cs, i);
        if (!json_object_is_type(c, json_type_object))
            continue;
        if (pods_set_env(c, "AIQ_JOB_NAME", job->meta.name) ||
            pods_set_env(c, "AIQ_REPLICA_INDEX", num) ||
            pods_set_env(c, "AIQ_REPLICA_COUNT", cnt))
            return -1;
    }
    return pods_set_resources(c0, job) != 0 ? -1 : 0;
}

/* Builds one gated pod; see pods.h. Steps: check the job, parse and
 * check the template, then metadata, gate, containers, and the GPUs. */
json_object *pods_build(const struct aiq_aijob *job,
                        json_object *job_annotations, int index,
                        enum gpu_mech mech, aiq_err *err) {
    json_object *pod = NULL, *tmpl = NULL, *tmeta = NULL, *tspec = NULL;
    char name[AIQ_MAX_NAME + 1], num[32];

    if (pods_check_job(job, index, name, sizeof name, err) != 0 ||
        pods_parse_template(job, index, &tmpl, err) != 0)
        goto fail;
    if (tmpl) {
        json_object_object_get_ex(tmpl, "metadata", &tmeta);
        json_object_object_get_ex(tmpl, "spec", &tspec);
    }
    if (pods_template_check(tspec, err) != 0)
        goto fail;
    pod = pods_skeleton(tspec);
    if (!pod)
        goto nomem;
    json_object *meta = NULL, *spec = NULL;
    json_object_object_get_ex(pod, "metadata", &meta);
    json_object_object_get_ex(pod, "spec", &spec);
    snprintf(num, sizeof num, "%d", index);
    if (pods_metadata(meta, job, tmeta, job_annotations, name, num) != 0 ||
        pods_gate(spec) != 0 || pods_containers(spec, job, num) != 0)
        goto nomem;
    /* The GPUs, as the admin's mechanism asks for them (gpu_mech.c). */
    if (gpu_mech_pod(pod, job, mech, err) != 0)
        goto fail;
    json_object_put(tmpl);
    return pod;

nomem:
    aiq_err_set(err, AIQ_ENOMEM, "out of memory building pod %d of %s",
                index, job->meta.name);
fail:
    json_object_put(pod);
    json_object_put(tmpl);
    return NULL;
}

/* Reads the replica-index label; see pods.h. */
int pods_replica_index(json_object *pod) {
    json_object *m = NULL, *l = NULL, *v = NULL;
    if (!json_object_object_get_ex(pod, "metadata", &m) ||
        !json_object_object_get_ex(m, "labels", &l) ||
        !json_object_object_get_ex(l, PODS_LABEL_INDEX, &v))
        return -1;
    const char *s = json_object_get_string(v);
    char *end = NULL;
    if (!s || !*s)
        return -1;
    long n = strtol(s, &end, 10);
    if (*end || n < 0 || n >= AIQ_MAX_REPLICAS)
        return -1;
    return (int)n;
}

/* Tells whether the admission gate is still on the pod; see pods.h. */
int pods_is_gated(json_object *pod) {
    json_object *s = NULL, *g = NULL;
    if (!json_object_object_get_ex(pod, "spec", &s) ||
        !json_object_object_get_ex(s, "schedulingGates", &g) ||
        !json_object_is_type(g, json_type_array))
        return 0;
    for (size_t i = 0; i < json_object_array_length(g); i++) {
        json_object *n = NULL;
        if (json_object_object_get_ex(json_object_array_get_idx(g, i), "name",
                                      &n) &&
            strcmp(json_object_get_string(n), AIQ_GATE) == 0)
            return 1;
    }
    return 0;
}

/* The gate, attempt and phase packed; see pods.h. */
uint64_t pods_facts(json_object *pod) {
    static const char *const names[] = {[POD_PHASE_PENDING] = "Pending",
                                        [POD_PHASE_RUNNING] = "Running",
                                        [POD_PHASE_SUCCEEDED] = "Succeeded",
                                        [POD_PHASE_FAILED] = "Failed"};
    json_object *st = NULL, *ph = NULL;
    enum pod_phase phase = POD_PHASE_NONE;
    if (json_object_object_get_ex(pod, "status", &st) &&
        json_object_object_get_ex(st, "phase", &ph) && json_object_is_type(ph, json_type_string)) {
        phase = POD_PHASE_OTHER;
        for (int i = POD_PHASE_PENDING; i <= POD_PHASE_FAILED; i++)
            if (strcmp(json_object_get_string(ph), names[i]) == 0)
                phase = (enum pod_phase)i;
    }
    return (uint64_t)(pods_is_gated(pod) != 0) | (uint64_t)phase << 1 |
           (uint64_t)pods_attempt(pod) << 8;
}

/* Stamps the attempt; see pods.h. */
int pods_set_attempt(json_object *pod, int attempt) {
    char num[16];
    json_object *m = pods_child(pod, "metadata");
    json_object *a = m ? pods_child(m, "annotations") : NULL;
    snprintf(num, sizeof num, "%d", attempt);
    return a ? pods_set_str(a, PODS_ANN_ATTEMPT, num) : -1;
}

/* Reads the attempt annotation; see pods.h. */
int pods_attempt(json_object *pod) {
    json_object *m = NULL, *a = NULL, *v = NULL;
    if (!json_object_object_get_ex(pod, "metadata", &m) ||
        !json_object_object_get_ex(m, "annotations", &a) ||
        !json_object_object_get_ex(a, PODS_ANN_ATTEMPT, &v) ||
        !json_object_is_type(v, json_type_string))
        return 0;
    char *end = NULL;
    const char *s = json_object_get_string(v);
    long n = strtol(s, &end, 10);
    if (end == s || *end || n < 1 || n > 1000000)
        return 0;
    return (int)n;
}
