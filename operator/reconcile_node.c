/* reconcile_node.c -- the Node reconciler and the node view the queue
 * needs: GPU count from status.allocatable (or capacity) nvidia.com/gpu,
 * GPU memory per GPU from the label nvidia.com/gpu.memory (MiB, as NVIDIA
 * GPU feature discovery publishes it), the model from
 * nvidia.com/gpu.product, the node pool from aiq.dev/domain, cpu and
 * memory allocatable, and spec.unschedulable. Each change is recorded in
 * the store's node view and in the journal. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/units.h"
#include "operator/kube_status.h"
#include "operator/server.h"

static const char *node__label(json_object *node, const char *key) {
    json_object *m = NULL, *l = NULL, *v = NULL;
    if (!json_object_object_get_ex(node, "metadata", &m) ||
        !json_object_object_get_ex(m, "labels", &l) ||
        !json_object_object_get_ex(l, key, &v) ||
        !json_object_is_type(v, json_type_string))
        return NULL;
    return json_object_get_string(v);
}

/* status.allocatable[res], else status.capacity[res], as a string. */
static const char *node__res(json_object *node, const char *res) {
    static const char *const where[] = {"allocatable", "capacity"};
    json_object *st = NULL, *a = NULL, *v = NULL;
    if (!json_object_object_get_ex(node, "status", &st))
        return NULL;
    for (int i = 0; i < 2; i++)
        if (json_object_object_get_ex(st, where[i], &a) &&
            json_object_object_get_ex(a, res, &v))
            return json_object_get_string(v);
    return NULL;
}

/* Fills a queue node from a Node object; see server.h. */
int node_to_q(json_object *node, struct q_node *qn) {
    int64_t v = 0;
    memset(qn, 0, sizeof *qn);
    qn->name = srv__name(node);
    if (!*qn->name)
        return -1;
    qn->domain = node__label(node, SRV_LABEL_DOMAIN);
    qn->gpu_model = node__label(node, SRV_LABEL_GPU_PRODUCT);
    const char *g = node__res(node, "nvidia.com/gpu");
    if (g && aiq_quantity_int(g, &v, NULL) == AIQ_OK && v > 0)
        qn->ngpus = v > Q_MAX_GPUS ? Q_MAX_GPUS : (int)v;
    const char *mem = node__label(node, SRV_LABEL_GPU_MEMORY);
    int64_t mib = 0;
    if (mem && aiq_quantity_int(mem, &mib, NULL) != AIQ_OK)
        mib = 0;
    for (int i = 0; i < qn->ngpus; i++)
        qn->gpu_mem_total[i] = mib;
    const char *cpu = node__res(node, "cpu");
    if (!cpu || aiq_quantity_cpu_milli(cpu, &qn->cpu_alloc, NULL) != AIQ_OK)
        qn->cpu_alloc = 0;
    const char *m = node__res(node, "memory");
    if (!m || aiq_quantity_bytes(m, &qn->mem_alloc, NULL) != AIQ_OK)
        qn->mem_alloc = 0;
    json_object *spec = NULL, *u = NULL;
    qn->schedulable = !(json_object_object_get_ex(node, "spec", &spec) &&
                        json_object_object_get_ex(spec, "unschedulable", &u) &&
                        json_object_get_boolean(u));
    return 0;
}

void reconcile_node(struct server *s, enum kube_event_type t,
                    struct opcache_obj *o, json_object *obj) {
    double now = srv_now();
    char payload[512];
    if (t == KUBE_EV_DELETED) {
        store_delete_node(s->db, srv__name(obj), NULL);
        snprintf(payload, sizeof payload, "{\"deleted\":true}");
        store_journal_event(s->db, now, STORE_EV_NODE, srv__name(obj), payload, NULL);
        OPLOG(&s->log, OPLOG_INFO, "node_deleted", srv__name(obj), srv__rv(obj), "%s", "");
        return;
    }
    struct q_node qn;
    if (node_to_q(obj, &qn) != 0)
        return;
    struct store_node sn = {qn.name, qn.gpu_model, qn.ngpus,
                            qn.ngpus ? qn.gpu_mem_total[0] : 0, qn.domain,
                            qn.cpu_alloc, qn.mem_alloc, qn.schedulable, NULL};
    aiq_err e;
    aiq_err_clear(&e);
    if (store_upsert_node(s->db, &sn, &e) != AIQ_OK)
        OPLOG(&s->log, OPLOG_WARN, "store_error", qn.name, NULL,
              "op=upsert_node msg=\"%s\"", e.message);
    snprintf(payload, sizeof payload,
             "{\"gpus\":%d,\"gpu_memory_mib\":%lld,\"cpu_milli\":%lld,\"memory_bytes\":%lld,"
             "\"model\":\"%.100s\",\"domain\":\"%.100s\",\"schedulable\":%s}",
             qn.ngpus, (long long)sn.gpu_memory_mib, (long long)qn.cpu_alloc,
             (long long)qn.mem_alloc, qn.gpu_model ? qn.gpu_model : "",
             qn.domain ? qn.domain : "", qn.schedulable ? "true" : "false");
    store_journal_event(s->db, now, STORE_EV_NODE, qn.name, payload, NULL);
    OPLOG(&s->log, OPLOG_DEBUG, "node_seen", qn.name, srv__rv(obj),
          "gpus=%d gpu_memory_mib=%lld schedulable=%d", qn.ngpus,
          (long long)sn.gpu_memory_mib, (int)qn.schedulable);
    (void)o;
}
