/* bench_pod_cache.c -- a micro-benchmark of the operator's pod cache
 * memory: heap bytes per cached pod (glibc mallinfo2, in use after the
 * puts minus before) when the cache keeps each pod whole (managedFields
 * dropped, as before pod_lean.c), when it keeps the lean copy
 * (pod_lean.h), and when the lean copies share their equal subtrees
 * through the operator's pool (jshare.h; the pool's own table counted,
 * at the operator's bound). Two pod shapes: the gated pod as the local API server
 * returns it, and as kube-apiserver 1.34 returns it (defaults, the
 * service-account volume, tolerations, conditions, managed fields).
 * It measures the cache alone, not the operator process: the operator's
 * RSS per job is measured by bench_operator_e2e. */
#include <malloc.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "operator/cache.h"
#include "operator/pod_lean.h"

#define NPODS 4000

static const char *const local_pod =
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"job%d-0\",\"namespace\":"
    "\"bench\",\"uid\":\"u-%d\",\"resourceVersion\":\"%d\",\"creationTimestamp\":"
    "\"2025-01-01T00:00:00Z\",\"labels\":{\"aiq.dev/job\":\"job%d\",\"aiq.dev/replica-index\":"
    "\"0\"},\"annotations\":{\"sim.aiq.dev/duration\":\"60s\",\"aiq.dev/attempt\":\"1\"},"
    "\"ownerReferences\":[{\"apiVersion\":\"aiq.dev/v1alpha1\",\"kind\":\"AIJob\",\"name\":"
    "\"job%d\",\"uid\":\"j-%d\",\"controller\":true,\"blockOwnerDeletion\":true}]},"
    "\"spec\":{\"schedulingGates\":[{\"name\":\"aiq.dev/admission\"}],\"containers\":[{\"name\":"
    "\"w\",\"image\":\"busybox\",\"env\":[{\"name\":\"AIQ_JOB_NAME\",\"value\":\"job%d\"},"
    "{\"name\":\"AIQ_REPLICA_INDEX\",\"value\":\"0\"},{\"name\":\"AIQ_REPLICA_COUNT\","
    "\"value\":\"2\"}],\"resources\":{\"requests\":{\"cpu\":\"2\",\"memory\":\"4Gi\","
    "\"nvidia.com/gpu\":\"1\"},\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]},"
    "\"status\":{\"phase\":\"Pending\"}}";

static const char *const real_pod =
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"job%d-0\",\"namespace\":"
    "\"bench\",\"uid\":\"u-%d\",\"resourceVersion\":\"%d\",\"generation\":1,"
    "\"creationTimestamp\":\"2025-01-01T00:00:00Z\",\"labels\":{\"aiq.dev/job\":\"job%d\","
    "\"aiq.dev/replica-index\":\"0\"},\"annotations\":{\"sim.aiq.dev/duration\":\"60s\","
    "\"aiq.dev/attempt\":\"1\"},\"ownerReferences\":[{\"apiVersion\":\"aiq.dev/v1alpha1\","
    "\"kind\":\"AIJob\",\"name\":\"job%d\",\"uid\":\"j-%d\",\"controller\":true,"
    "\"blockOwnerDeletion\":true}],\"managedFields\":[{\"manager\":\"aiq-operator\","
    "\"operation\":\"Update\",\"apiVersion\":\"v1\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":"
    "{\"f:metadata\":{\"f:labels\":{\".\":{},\"f:aiq.dev/job\":{}}},\"f:spec\":"
    "{\"f:containers\":{}}}}]},\"spec\":{\"schedulingGates\":[{\"name\":\"aiq.dev/admission\"}],"
    "\"volumes\":[{\"name\":\"kube-api-access-x\",\"projected\":{\"sources\":[{"
    "\"serviceAccountToken\":{\"expirationSeconds\":3607,\"path\":\"token\"}},{\"configMap\":"
    "{\"name\":\"kube-root-ca.crt\",\"items\":[{\"key\":\"ca.crt\",\"path\":\"ca.crt\"}]}},"
    "{\"downwardAPI\":{\"items\":[{\"path\":\"namespace\",\"fieldRef\":{\"apiVersion\":\"v1\","
    "\"fieldPath\":\"metadata.namespace\"}}]}}],\"defaultMode\":420}}],\"containers\":[{"
    "\"name\":\"w\",\"image\":\"busybox\",\"env\":[{\"name\":\"AIQ_JOB_NAME\",\"value\":"
    "\"job%d\"},{\"name\":\"AIQ_REPLICA_INDEX\",\"value\":\"0\"},{\"name\":"
    "\"AIQ_REPLICA_COUNT\",\"value\":\"2\"}],\"resources\":{\"requests\":{\"cpu\":\"2\","
    "\"memory\":\"4Gi\",\"nvidia.com/gpu\":\"1\"},\"limits\":{\"nvidia.com/gpu\":\"1\"}},"
    "\"volumeMounts\":[{\"name\":\"kube-api-access-x\",\"readOnly\":true,\"mountPath\":"
    "\"/var/run/secrets/kubernetes.io/serviceaccount\"}],\"terminationMessagePath\":"
    "\"/dev/termination-log\",\"terminationMessagePolicy\":\"File\",\"imagePullPolicy\":"
    "\"Always\"}],\"restartPolicy\":\"Never\",\"terminationGracePeriodSeconds\":30,"
    "\"dnsPolicy\":\"ClusterFirst\",\"serviceAccountName\":\"default\",\"serviceAccount\":"
    "\"default\",\"securityContext\":{},\"schedulerName\":\"default-scheduler\","
    "\"tolerations\":[{\"key\":\"node.kubernetes.io/not-ready\",\"operator\":\"Exists\","
    "\"effect\":\"NoExecute\",\"tolerationSeconds\":300},{\"key\":"
    "\"node.kubernetes.io/unreachable\",\"operator\":\"Exists\",\"effect\":\"NoExecute\","
    "\"tolerationSeconds\":300}],\"priority\":0,\"enableServiceLinks\":true,"
    "\"preemptionPolicy\":\"PreemptLowerPriority\"},\"status\":{\"phase\":\"Pending\","
    "\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"False\",\"lastProbeTime\":null,"
    "\"lastTransitionTime\":\"2025-01-01T00:00:00Z\",\"reason\":\"SchedulingGated\","
    "\"message\":\"Scheduling is blocked due to non-empty scheduling gates\"}],"
    "\"qosClass\":\"Burstable\"}}";

static size_t heap_in_use(void) {
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

enum keep { KEEP_WHOLE, KEEP_LEAN, KEEP_SHARED };

/* Heap bytes per pod held by a cache of NPODS pods of shape fmt. */
static double per_pod(const char *fmt, enum keep how) {
    char buf[8192];
    size_t before = heap_in_use();
    opcache *c = opcache_create(NULL, NULL);
    struct jshare *share = how == KEEP_SHARED ? jshare_new(POD_LEAN_SHARE_MAX) : NULL;
    if (!c || (how == KEEP_SHARED && !share)) {
        opcache_free(c);
        jshare_free(share);
        return -1;
    }
    if (how != KEEP_WHOLE)
        opcache_set_lean(c, pod_lean_cache, share);
    for (int i = 0; i < NPODS; i++) {
        snprintf(buf, sizeof buf, fmt, i, i, i + 100, i, i, i, i);
        json_object *o = json_tokener_parse(buf);
        if (!o || !opcache_put(c, o, NULL)) {
            fprintf(stderr, "bench_pod_cache: pod %d not cached\n", i);
            opcache_free(c);
            jshare_free(share);
            return -1;
        }
    }
    double per = (double)(heap_in_use() - before) / NPODS;
    opcache_free(c);
    jshare_free(share);
    return per;
}

int main(void) {
    double lw = per_pod(local_pod, KEEP_WHOLE), ll = per_pod(local_pod, KEEP_LEAN);
    double ls = per_pod(local_pod, KEEP_SHARED);
    double rw = per_pod(real_pod, KEEP_WHOLE), rl = per_pod(real_pod, KEEP_LEAN);
    double rs = per_pod(real_pod, KEEP_SHARED);
    if (lw < 0 || ll < 0 || ls < 0 || rw < 0 || rl < 0 || rs < 0)
        return 1;
    printf("micro-benchmark: heap per cached gated pod (%d pods, mallinfo2), cache alone\n",
           NPODS);
    printf("%-8s %12s %12s %12s %8s %8s\n", "server", "whole_B", "lean_B", "shared_B",
           "ratio", "shared/lean");
    printf("%-8s %12.0f %12.0f %12.0f %8.2f %8.2f\n", "local", lw, ll, ls, lw / ll, ls / ll);
    printf("%-8s %12.0f %12.0f %12.0f %8.2f %8.2f\n", "real", rw, rl, rs, rw / rl, rs / rl);
    printf("pod_cache_local_whole_bytes_per_pod=%.0f\n", lw);
    printf("pod_cache_local_lean_bytes_per_pod=%.0f\n", ll);
    printf("pod_cache_real_whole_bytes_per_pod=%.0f\n", rw);
    printf("pod_cache_real_lean_bytes_per_pod=%.0f\n", rl);
    printf("pod_cache_local_shared_bytes_per_pod=%.0f\n", ls);
    printf("pod_cache_real_shared_bytes_per_pod=%.0f\n", rs);
    printf("pod_cache_real_whole_vs_lean=%.2f\n", rw / rl);
    return 0;
}
