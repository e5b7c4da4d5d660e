/* sim_nodes.c -- loads the simulated nodes from a small YAML or JSON file
 * and creates them as core/v1 Nodes with the labels NVIDIA GPU feature
 * discovery sets, capacity/allocatable, a Ready condition and nodeInfo.
 *
 * File shape (a list, or a map with a "nodes" list):
 *   - name: gpu-a            # with count: gpu-a-0 .. gpu-a-(count-1)
 *     count: 2
 *     gpus: 8
 *     gpuProduct: NVIDIA-A100-SXM4-80GB
 *     gpuMemoryMiB: 81920
 *     cpu: "96"
 *     memory: 1Ti
 *     domain: a
 *     unschedulable: false
 *     labels: {rack: r1}
 *     taints: [{key: dedicated, value: infer, effect: NoSchedule}]
 */
#include "test/apiserver/sim_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <yaml.h>

#include "common/json.h"
#include "common/units.h"

#define SIM_NODES_MAX_FILE (1u << 20)
#define SIM_NODES_MAX_COUNT 1000
#define SIM_YAML_MAX_DEPTH 32

/* ---- YAML -> json-c ---------------------------------------------------------- */

static json_object *sim_yaml_scalar(yaml_node_t *n) {
    const char *v = (const char *)n->data.scalar.value;
    size_t len = n->data.scalar.length;
    if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return json_object_new_string_len(v, (int)len);
    if (len == 0 || strcmp(v, "~") == 0 || strcmp(v, "null") == 0) return NULL;
    if (strcmp(v, "true") == 0) return json_object_new_boolean(1);
    if (strcmp(v, "false") == 0) return json_object_new_boolean(0);
    char *e;
    long long i = strtoll(v, &e, 10);
    if (*e == '\0' && e != v) return json_object_new_int64(i);
    double d = strtod(v, &e);
    if (*e == '\0' && e != v && strchr(v, '.')) return json_object_new_double(d);
    return json_object_new_string_len(v, (int)len);
}

static int sim_yaml_node(yaml_document_t *doc, yaml_node_t *n, int depth, json_object **out,
                         aiq_err *err) {
    *out = NULL;
    if (!n) return 0;
    if (depth > SIM_YAML_MAX_DEPTH) {
        aiq_err_set(err, AIQ_EPARSE, "nodes file nested deeper than %d levels", SIM_YAML_MAX_DEPTH);
        return -1;
    }
    switch (n->type) {
    case YAML_SCALAR_NODE:
        *out = sim_yaml_scalar(n);
        return 0;
    case YAML_SEQUENCE_NODE: {
        json_object *a = json_object_new_array();
        for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
            json_object *v;
            if (sim_yaml_node(doc, yaml_document_get_node(doc, *it), depth + 1, &v, err)) {
                json_object_put(a);
                return -1;
            }
            json_object_array_add(a, v);
        }
        *out = a;
        return 0;
    }
    case YAML_MAPPING_NODE: {
        json_object *o = json_object_new_object();
        for (yaml_node_pair_t *pr = n->data.mapping.pairs.start; pr < n->data.mapping.pairs.top; pr++) {
            yaml_node_t *k = yaml_document_get_node(doc, pr->key);
            if (!k || k->type != YAML_SCALAR_NODE) {
                json_object_put(o);
                aiq_err_set(err, AIQ_EPARSE, "nodes file: map keys must be scalars (line %lu)",
                            k ? (unsigned long)k->start_mark.line + 1 : 0UL);
                return -1;
            }
            json_object *v;
            if (sim_yaml_node(doc, yaml_document_get_node(doc, pr->value), depth + 1, &v, err)) {
                json_object_put(o);
                return -1;
            }
            json_object_object_add(o, (const char *)k->data.scalar.value, v);
        }
        *out = o;
        return 0;
    }
    default:
        return 0;
    }
}

/* Parses YAML (a superset of the JSON we accept) into a new json value. */
static json_object *sim_parse(const char *text, size_t len, aiq_err *err) {
    yaml_parser_t p;
    yaml_document_t doc;
    json_object *out = NULL;
    if (!yaml_parser_initialize(&p)) {
        aiq_err_set(err, AIQ_ENOMEM, "out of memory");
        return NULL;
    }
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    if (!yaml_parser_load(&p, &doc)) {
        aiq_err_set(err, AIQ_EPARSE, "nodes file: %s at line %lu column %lu",
                    p.problem ? p.problem : "syntax error",
                    (unsigned long)p.problem_mark.line + 1, (unsigned long)p.problem_mark.column + 1);
        if (err) {
            err->line = (int)p.problem_mark.line + 1;
            err->col = (int)p.problem_mark.column + 1;
        }
        yaml_parser_delete(&p);
        return NULL;
    }
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (!root) aiq_err_set(err, AIQ_EPARSE, "nodes file is empty");
    else if (sim_yaml_node(&doc, root, 0, &out, err)) out = NULL;
    yaml_document_delete(&doc);
    yaml_parser_delete(&p);
    return out;
}

/* ---- node objects ------------------------------------------------------------ */

static void sim_set(json_object *o, const char *k, const char *v) {
    json_object_object_add(o, k, json_object_new_string(v));
}

/* Reads entry[k] as text (strings as is, numbers printed); NULL if absent. */
static const char *sim_text(json_object *entry, const char *k, char *buf, size_t cap) {
    json_object *v = NULL;
    if (!json_object_object_get_ex(entry, k, &v) || !v) return NULL;
    if (json_object_is_type(v, json_type_string)) return json_object_get_string(v);
    if (json_object_is_type(v, json_type_int)) {
        snprintf(buf, cap, "%lld", (long long)json_object_get_int64(v));
        return buf;
    }
    if (json_object_is_type(v, json_type_double)) {
        snprintf(buf, cap, "%.17g", json_object_get_double(v));
        return buf;
    }
    return NULL;
}

static int sim_int(json_object *entry, const char *k, long long dflt, long long *out,
                   int idx, aiq_err *err) {
    json_object *v = NULL;
    *out = dflt;
    if (!json_object_object_get_ex(entry, k, &v) || !v) return 0;
    if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0) {
        char f[64];
        snprintf(f, sizeof f, "[%d].%s", idx, k);
        aiq_err_field(err, AIQ_EINVAL, f, "nodes file: entry %d: %s must be a non-negative integer, got %s",
                      idx, k, json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
        return -1;
    }
    *out = json_object_get_int64(v);
    return 0;
}

/* Builds one Node. */
static json_object *sim_node_obj(json_object *entry, const char *name, long long gpus,
                                 const char *product, long long gpu_mem, const char *cpu,
                                 const char *mem, const char *domain, int ip_idx) {
    char buf[64], now[40];
    json_object *n = json_object_new_object();
    sim_set(n, "apiVersion", "v1");
    sim_set(n, "kind", "Node");
    json_object *md = sim__child(n, "metadata");
    sim_set(md, "name", name);
    json_object *lb = sim__child(md, "labels");
    sim_set(lb, "kubernetes.io/hostname", name);
    sim_set(lb, "kubernetes.io/os", "linux");
    sim_set(lb, "kubernetes.io/arch", "amd64");
    sim_set(lb, "beta.kubernetes.io/os", "linux");
    sim_set(lb, "beta.kubernetes.io/arch", "amd64");
    sim_set(lb, "node.kubernetes.io/instance-type", "aiq-sim");
    if (gpus > 0 || product) {
        snprintf(buf, sizeof buf, "%lld", gpus);
        sim_set(lb, "nvidia.com/gpu.count", buf);
        sim_set(lb, "nvidia.com/gpu.present", "true");
        if (product) sim_set(lb, "nvidia.com/gpu.product", product);
        if (gpu_mem > 0) {
            snprintf(buf, sizeof buf, "%lld", gpu_mem);
            sim_set(lb, "nvidia.com/gpu.memory", buf);
        }
    }
    if (domain) sim_set(lb, "aiq.dev/domain", domain);
    json_object *extra = aiq_jpath(entry, "labels");
    if (extra && json_object_is_type(extra, json_type_object)) {
        json_object_object_foreach(extra, k, v) {
            char t[64];
            const char *s = sim_text(extra, k, t, sizeof t);
            if (!s && v && json_object_is_type(v, json_type_boolean))
                s = json_object_get_boolean(v) ? "true" : "false";
            if (s) sim_set(lb, k, s);
        }
    }
    json_object *spec = sim__child(n, "spec");
    json_object *un = aiq_jpath(entry, "unschedulable");
    if (un && json_object_is_type(un, json_type_boolean) && json_object_get_boolean(un))
        json_object_object_add(spec, "unschedulable", json_object_new_boolean(1));
    json_object *taints = aiq_jpath(entry, "taints");
    if (taints && json_object_is_type(taints, json_type_array)) {
        json_object *copy = NULL;
        if (json_object_deep_copy(taints, &copy, NULL) == 0) json_object_object_add(spec, "taints", copy);
    }

    json_object *st = sim__child(n, "status");
    for (int i = 0; i < 2; i++) {
        json_object *r = sim__child(st, i ? "allocatable" : "capacity");
        sim_set(r, "cpu", cpu);
        sim_set(r, "memory", mem);
        sim_set(r, "pods", "110");
        sim_set(r, "ephemeral-storage", "500Gi");
        if (gpus > 0) {
            snprintf(buf, sizeof buf, "%lld", gpus);
            sim_set(r, SIM__GPU, buf);
        }
    }
    sim__time((double)time(NULL), false, now, sizeof now);
    json_object *conds = json_object_new_array(), *c = json_object_new_object();
    sim_set(c, "type", "Ready");
    sim_set(c, "status", "True");
    sim_set(c, "reason", "KubeletReady");
    sim_set(c, "message", "kubelet is posting ready status");
    sim_set(c, "lastHeartbeatTime", now);
    sim_set(c, "lastTransitionTime", now);
    json_object_array_add(conds, c);
    json_object_object_add(st, "conditions", conds);
    json_object *addrs = json_object_new_array(), *a1 = json_object_new_object(),
                *a2 = json_object_new_object();
    snprintf(buf, sizeof buf, "10.0.%d.%d", ip_idx / 250, ip_idx % 250 + 2);
    sim_set(a1, "type", "InternalIP");
    sim_set(a1, "address", buf);
    sim_set(a2, "type", "Hostname");
    sim_set(a2, "address", name);
    json_object_array_add(addrs, a1);
    json_object_array_add(addrs, a2);
    json_object_object_add(st, "addresses", addrs);
    json_object *ni = sim__child(st, "nodeInfo");
    snprintf(buf, sizeof buf, "%08x-sim", (unsigned)(ip_idx * 2654435761u));
    sim_set(ni, "machineID", buf);
    sim_set(ni, "systemUUID", buf);
    sim_set(ni, "bootID", buf);
    sim_set(ni, "kernelVersion", "6.1.0-aiq-sim");
    sim_set(ni, "osImage", "aiq simulated node");
    sim_set(ni, "containerRuntimeVersion", "containerd://1.7.24");
    sim_set(ni, "kubeletVersion", "v1.32.0");
    sim_set(ni, "kubeProxyVersion", "v1.32.0");
    sim_set(ni, "operatingSystem", "linux");
    sim_set(ni, "architecture", "amd64");
    return n;
}

static aiq_rc sim_load_entry(apisrv *s, json_object *e, int idx, int *ip_idx, aiq_err *err) {
    char b1[64], b2[64], b3[64], f[64];
    if (!e || !json_object_is_type(e, json_type_object)) {
        snprintf(f, sizeof f, "[%d]", idx);
        return aiq_err_field(err, AIQ_EINVAL, f, "nodes file: entry %d is not a map", idx);
    }
    const char *name = sim_text(e, "name", b1, sizeof b1);
    if (!name || !*name) {
        snprintf(f, sizeof f, "[%d].name", idx);
        return aiq_err_field(err, AIQ_EINVAL, f, "nodes file: entry %d: name: Required value", idx);
    }
    long long gpus, gpu_mem, count;
    if (sim_int(e, "gpus", 0, &gpus, idx, err) || sim_int(e, "gpuMemoryMiB", 0, &gpu_mem, idx, err) ||
        sim_int(e, "count", -1, &count, idx, err))
        return AIQ_EINVAL;
    if (count > SIM_NODES_MAX_COUNT) {
        snprintf(f, sizeof f, "[%d].count", idx);
        return aiq_err_field(err, AIQ_EINVAL, f, "nodes file: entry %d: count %lld is above %d",
                             idx, count, SIM_NODES_MAX_COUNT);
    }
    const char *cpu = sim_text(e, "cpu", b2, sizeof b2);
    const char *mem = sim_text(e, "memory", b3, sizeof b3);
    const char *product = aiq_jpath_str(e, "gpuProduct"), *domain = aiq_jpath_str(e, "domain");
    int64_t tmp;
    if (!cpu) cpu = "32";
    if (!mem) mem = "256Gi";
    if (aiq_quantity_cpu_milli(cpu, &tmp, NULL) != AIQ_OK) {
        snprintf(f, sizeof f, "[%d].cpu", idx);
        return aiq_err_field(err, AIQ_EINVAL, f, "nodes file: entry %d: invalid cpu quantity \"%s\"",
                             idx, cpu);
    }
    if (aiq_quantity_bytes(mem, &tmp, NULL) != AIQ_OK) {
        snprintf(f, sizeof f, "[%d].memory", idx);
        return aiq_err_field(err, AIQ_EINVAL, f, "nodes file: entry %d: invalid memory quantity \"%s\"",
                             idx, mem);
    }
    long long n = count < 0 ? 1 : count;
    for (long long i = 0; i < n; i++) {
        char nm[300];
        if (count < 0) snprintf(nm, sizeof nm, "%s", name);
        else snprintf(nm, sizeof nm, "%s-%lld", name, i);
        json_object *node = sim_node_obj(e, nm, gpus, product, gpu_mem, cpu, mem, domain, (*ip_idx)++);
        aiq_err e2;
        aiq_err_clear(&e2);
        aiq_rc rc = apisrv_obj_create(s, "nodes", node, &e2);
        if (rc == AIQ_EEXIST) continue; /* kept from a previous run of this database */
        if (rc != AIQ_OK) {
            aiq_err_set(err, rc, "nodes file: creating node %s: %s", nm, e2.message);
            return rc;
        }
    }
    return AIQ_OK;
}

/* See apiserver.h. Nodes created before an error stay. */
aiq_rc sim_load_nodes(apisrv *s, const char *path, aiq_err *err) {
    aiq_rc rc = AIQ_OK;
    char *text = NULL;
    json_object *doc = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return aiq_err_set(err, AIQ_EIO, "cannot open nodes file %s", path);
    text = malloc(SIM_NODES_MAX_FILE + 1);
    if (!text) {
        rc = aiq_err_set(err, AIQ_ENOMEM, "out of memory");
        goto out_close;
    }
    size_t len = fread(text, 1, SIM_NODES_MAX_FILE + 1, f);
    if (len > SIM_NODES_MAX_FILE) {
        rc = aiq_err_set(err, AIQ_ETOOBIG, "nodes file %s is larger than %u bytes", path,
                         SIM_NODES_MAX_FILE);
        goto out_free;
    }
    text[len] = '\0';
    doc = sim_parse(text, len, err);
    if (!doc) {
        rc = err && err->code ? err->code : AIQ_EPARSE;
        goto out_free;
    }
    json_object *list = doc;
    if (json_object_is_type(doc, json_type_object)) list = aiq_jpath(doc, "nodes");
    if (!list || !json_object_is_type(list, json_type_array)) {
        rc = aiq_err_set(err, AIQ_EINVAL, "nodes file %s: expected a list of nodes (or a map with "
                         "a \"nodes\" list)", path);
        goto out_free;
    }
    int ip_idx = 0;
    for (size_t i = 0; i < json_object_array_length(list); i++) {
        rc = sim_load_entry(s, json_object_array_get_idx(list, i), (int)i, &ip_idx, err);
        if (rc != AIQ_OK) goto out_free;
    }
out_free:
    json_object_put(doc);
    free(text);
out_close:
    fclose(f);
    return rc;
}
