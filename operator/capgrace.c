/* capgrace.c -- see capgrace.h. */
#include "operator/capgrace.h"

#include <stdio.h>
#include <string.h>

#include "common/fnv.h"
#include "operator/server.h"


/* The configured capacity of nodes[0..n): what could run there, not what
 * runs. */
static uint64_t cg_fingerprint(const struct q_node *nodes, int n) {
    uint64_t h = AIQ_FNV_OFFSET;
    for (int i = 0; i < n; i++) {
        const struct q_node *q = &nodes[i];
        h = aiq_fnv_str(h, q->name);
        h = aiq_fnv_str(h, q->domain);
        h = aiq_fnv(h, &q->ngpus, sizeof q->ngpus);
        for (int g = 0; g < q->ngpus && g < Q_MAX_GPUS; g++)
            h = aiq_fnv(h, &q->gpu_mem_total[g], sizeof q->gpu_mem_total[g]);
        h = aiq_fnv(h, &q->cpu_alloc, sizeof q->cpu_alloc);
        h = aiq_fnv(h, &q->mem_alloc, sizeof q->mem_alloc);
    }
    return h;
}

/* The reasons a gang can never fit the nodes as they are. */
static bool cg_capacity_reason(int reason) {
    return reason == Q_R_NO_NODE || reason == Q_R_NODE_TOO_SMALL || reason == Q_R_GANG_TOO_BIG;
}

/* The same, as the status writes them (cycle.c's names). */
static bool cg_capacity_status(const char *reason) {
    return !strcmp(reason, "NoMatchingNode") || !strcmp(reason, "ReplicaTooBig") ||
           !strcmp(reason, "GangTooBig");
}

/* Sends the jobs Rejected for capacity back to Pending. */
static void cg_requeue_rejected(struct server *s) {
    opcache *jc = s->cache[OPK_AIJOB];
    for (size_t i = 0; i < opcache_count(jc); i++) {
        struct opcache_obj *o = opcache_at(jc, i);
        struct opext *x = o->ext;
        struct opjob *js = x ? x->job : NULL;
        if (!js || js->st.phase != AIQ_PHASE_REJECTED || !cg_capacity_status(js->st.reason))
            continue;
        char was[OPST_NAME];
        snprintf(was, sizeof was, "%s", js->st.reason);
        js->st.phase = AIQ_PHASE_PENDING;
        snprintf(js->st.reason, sizeof js->st.reason, "%s", "NodesChanged");
        (void)opstatus_set_messagef(&js->st, /* ENOMEM: the earlier message stays */
                 "the cluster's nodes changed: examined again (it was Rejected: %s)", was);
        js->resync = true;
        opcache_state_changed(o);
        srv__event_of(s, o, "Normal", "Requeued", opstatus_message(&js->st));
        OPLOG(&s->log, OPLOG_INFO, "job_requeued", o->key, srv__rv(opcache_raw(o)),
              "reason=NodesChanged was=%s", was);
    }
}

/* See capgrace.h. */
void capgrace_observe(struct server *s, const struct q_node *nodes, int n, double now) {
    uint64_t fp = cg_fingerprint(nodes, n);
    if (s->cap_seen && fp == s->cap_fp)
        return;
    /* The first list is the cluster as it stands (the operator acts only
     * once every watch has listed): no change, no grace. */
    s->cap_changed_at = s->cap_seen ? now : 0;
    if (s->cap_seen) {
        OPLOG(&s->log, OPLOG_INFO, "capacity_changed", NULL, NULL, "nodes=%d grace_s=%.0f", n,
              s->flags.capacity_grace_s);
        cg_requeue_rejected(s);
    }
    s->cap_seen = true;
    s->cap_fp = fp;
}

/* See capgrace.h. */
bool capgrace_hold(struct server *s, int reason, double now, char *msg, size_t cap) {
    double since = now - s->cap_changed_at, grace = s->flags.capacity_grace_s;
    if (!cg_capacity_reason(reason) || since >= grace)
        return false;
    size_t len = strlen(msg);
    if (len < cap)
        snprintf(msg + len, cap - len,
                 " (the nodes changed %.0f s ago: rejected only if it still cannot fit %.0f s "
                 "after the change)", since, grace);
    return true;
}
