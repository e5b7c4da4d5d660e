/* reconcile_node.c -- the Node reconciler and the node view the queue
 * needs (the facts are read by nodefacts.c: GPUs, time-slicing replicas,
 * MIG, memory per GPU, model, pool, cpu, memory, spec.unschedulable).
 * Each change is recorded in the store's node view and in the journal; a
 * node left out for missing or inconsistent facts gets a Warning Event
 * (NodeExcluded) once per change of reason, and a Normal NodeIncluded
 * when it is usable again. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/units.h"
#include "operator/kube_status.h"
#include "operator/nodefacts.h"
#include "operator/server.h"

/* Fills a queue node from a Node object; see server.h. */
int node_to_q(json_object *node, struct q_node *qn, nodex *why) {
    struct node_facts f;
    if (node_facts_read(node, &f) != 0)
        return -1;
    *qn = f.q;
    if (why)
        *why = f.excluded;
    return f.excluded ? 1 : 0;
}

/* Tells once per change that the node is left out or back (an Event on
 * the Node and a log line): o->ext remembers the last reason told. */
static void node_tell(struct server *s, struct opcache_obj *o, json_object *obj,
                      const struct node_facts *f) {
    struct opext *x = o ? srv__ext(o) : NULL;
    /* Only the leader posts Events: a follower remembers nothing, so it
     * tells once it leads and the node changes. */
    if (!x || !s->leading || x->node_told == (int)f->excluded + 1)
        return;
    bool first = x->node_told == 0;
    x->node_told = (int)f->excluded + 1;
    if (f->excluded) {
        char msg[320];
        snprintf(msg, sizeof msg, "left out of aiq's placement: %s", f->message);
        srv__event(s, OPK_NODE, obj, "Warning", "NodeExcluded", msg);
        OPLOG(&s->log, OPLOG_WARN, "node_excluded", f->q.name, srv__rv(obj),
              "reason=%s msg=\"%s\"", nodex_name(f->excluded), f->message);
    } else if (!first) {
        srv__event(s, OPK_NODE, obj, "Normal", "NodeIncluded",
                   "GPU facts are complete again: aiq places on this node");
        OPLOG(&s->log, OPLOG_INFO, "node_included", f->q.name, srv__rv(obj), "%s", "");
    }
}

void reconcile_node(struct server *s, enum kube_event_type t,
                    struct opcache_obj *o, json_object *obj) {
    double now = srv_now();
    char payload[512];
    if (t == KUBE_EV_DELETED) {
        (void)srv_rec(s, store_delete_node(s->db, srv__name(obj), NULL), "delete_node");
        snprintf(payload, sizeof payload, "{\"deleted\":true}");
        (void)srv_rec(s, store_journal_event(s->db, now, STORE_EV_NODE, srv__name(obj), payload, NULL),
                      "journal_event");
        OPLOG(&s->log, OPLOG_INFO, "node_deleted", srv__name(obj), srv__rv(obj), "%s", "");
        job_resync_all(s); /* a gang placed there has lost a node */
        return;
    }
    struct node_facts f;
    if (node_facts_read(obj, &f) != 0)
        return;
    struct opext *x = o ? srv__ext(o) : NULL;
    int ready = node_ready(obj, NULL, NULL) ? 1 : 2;
    if (x && x->node_ready != ready) {
        if (x->node_ready != 0 || ready == 2) {
            OPLOG(&s->log, ready == 1 ? OPLOG_INFO : OPLOG_WARN, "node_readiness",
                  srv__name(obj), srv__rv(obj), "ready=%d", ready == 1);
            job_resync_all(s); /* gangs placed there are lost, or back */
        }
        x->node_ready = ready;
    }
    node_tell(s, o, obj, &f);
    const struct q_node qn = f.q;
    int usable = ready == 1 && qn.schedulable && !f.excluded ? 1 : 2;
    if (x && x->node_usable != usable) {
        if (usable == 1)
            s->nodes_grew_at = now; /* srv_cron lets the stream settle */
        x->node_usable = usable;
    }
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
             "\"model\":\"%.100s\",\"domain\":\"%.100s\",\"schedulable\":%s,"
             "\"excluded\":\"%s\"}",
             qn.ngpus, (long long)sn.gpu_memory_mib, (long long)qn.cpu_alloc,
             (long long)qn.mem_alloc, qn.gpu_model ? qn.gpu_model : "",
             qn.domain ? qn.domain : "", qn.schedulable ? "true" : "false",
             nodex_name(f.excluded));
    (void)srv_rec(s, store_journal_event(s->db, now, STORE_EV_NODE, qn.name, payload, NULL),
                  "journal_event");
    OPLOG(&s->log, OPLOG_DEBUG, "node_seen", qn.name, srv__rv(obj),
          "gpus=%d gpu_memory_mib=%lld schedulable=%d", qn.ngpus,
          (long long)sn.gpu_memory_mib, (int)qn.schedulable);
}
