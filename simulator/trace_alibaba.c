/* trace_alibaba.c -- readers for Alibaba's cluster-trace-gpu-v2023
 * (openb_node_list_*.csv: sn,cpu_milli,memory_mib,gpu,model and
 * openb_pod_list_*.csv: name,cpu_milli,memory_mib,num_gpu,gpu_milli,
 * gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time).
 *
 * Mapping: a pod is a one-replica job submitted at creation_time that runs
 * deletion_time - scheduled_time seconds; pods never scheduled (empty
 * scheduled_time) or never deleted (empty deletion_time) are skipped.
 * CPU-only pods (num_gpu 0) are kept with their CPU and memory, and so are
 * CPU-only nodes: such pods compete with GPU pods for GPU nodes' CPUs.
 * The qos class (LS, BE, ...) stands in for both group and user, since the
 * trace names neither. A fractional GPU (num_gpu 1, gpu_milli < 1000)
 * becomes a GPU-memory share: gpu_milli/1000 of the GPU model's memory
 * (the model from gpu_spec, else the smallest GPU in the node list). Node
 * GPU models the trace does not disclose (G1, G2, G3) count as 32 GiB. */
#include "simulator/sim_trace.h"

#include <stdlib.h>
#include <string.h>

#define ALI_UNKNOWN_MIB 32768

static int64_t model_mib__(const char *m) {
    int64_t v = sim_gpu_model_mib(m);
    return v > 0 ? v : ALI_UNKNOWN_MIB;
}

/* Reads the node list; see sim_trace.h. */
aiq_rc sim_read_alibaba_nodes(FILE *f, const char *path, struct sim_trace *tr,
                              aiq_err *err) {
    aiq_rc rc = AIQ_OK, bad = AIQ_OK;
    struct sim__row *hdr = malloc(sizeof *hdr), *row = malloc(sizeof *row);
    int line = 0, got;
    if (!hdr || !row) {
        rc = aiq_err_set(err, AIQ_ENOMEM, "%s: out of memory", path);
        goto out_free;
    }
    if ((rc = sim__row_header(f, path, &line, hdr, 0,
                              "the header sn,cpu_milli,memory_mib,gpu,model", err)) != AIQ_OK)
        goto out_free;
    int isn = sim__row_find(hdr, "sn"), icpu = sim__row_find(hdr, "cpu_milli"),
        imem = sim__row_find(hdr, "memory_mib"), igpu = sim__row_find(hdr, "gpu"),
        imod = sim__row_find(hdr, "model");
    if (isn < 0 || igpu < 0) {
        rc = aiq_err_set(err, AIQ_EPARSE, "%s:1:1: header: missing column '%s' (an Alibaba "
                         "node list has sn,cpu_milli,memory_mib,gpu,model)", path,
                         isn < 0 ? "sn" : "gpu");
        if (err)
            err->line = 1, err->col = 1;
        goto out_free;
    }
    while ((got = sim__row_next(f, path, &line, hdr, row, 0, &bad, err)) == 1) {
        int64_t cpu, mem, gpus;
        if ((rc = sim__get_i64(row, icpu, "cpu_milli", 0, 100000000, 64000, &cpu, path, line,
                               err)) ||
            (rc = sim__get_i64(row, imem, "memory_mib", 0, 1LL << 32, 262144, &mem, path, line,
                               err)) ||
            (rc = sim__get_i64(row, igpu, "gpu", 0, 16, 0, &gpus, path, line, err)))
            goto out_free;
        /* CPU-only nodes are kept: the trace's CPU-only pods run there. */
        const char *model = sim__get_str(row, imod, NULL);
        if (model && strcmp(model, "nan") == 0)
            model = NULL;
        struct sim_node n = {(char *)sim__get_str(row, isn, "node"), (char *)model, (int)gpus,
                             gpus > 0 ? model_mib__(model) : 0, cpu, mem * 1048576};
        if ((rc = sim_trace_add_node(tr, &n, err)) != AIQ_OK)
            goto out_free;
    }
    if (got < 0)
        rc = bad;
out_free:
    free(row);
    free(hdr);
    return rc;
}

/* The model gpu_spec pins: one[] gets it when the spec lists exactly one
 * ("V100M32"), else "" (none, "nan", or several allowed: "V100M16|V100M32"). */
static void spec_model__(const char *spec, char *one, size_t onecap) {
    one[0] = '\0';
    if (!spec || !*spec || strcmp(spec, "nan") == 0 || strchr(spec, '|'))
        return;
    if (strlen(spec) < onecap)
        snprintf(one, onecap, "%s", spec);
}

/* The pod list's required columns, found in its header: ix[] gets the
 * index of name, num_gpu, gpu_milli, creation_time, deletion_time and
 * scheduled_time. AIQ_EPARSE naming the first one missing. */
static aiq_rc pod_columns(const struct sim__row *hdr, const char *path, int ix[6],
                          aiq_err *err) {
    static const char *const need[] = {"name", "num_gpu", "gpu_milli", "creation_time",
                                       "deletion_time", "scheduled_time"};
    for (int k = 0; k < 6; k++)
        if ((ix[k] = sim__row_find(hdr, need[k])) < 0) {
            aiq_rc rc = aiq_err_set(err, AIQ_EPARSE, "%s:1:1: header: missing column '%s' (an "
                                    "Alibaba pod list has name,cpu_milli,memory_mib,num_gpu,"
                                    "gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
                                    "deletion_time,scheduled_time)", path, need[k]);
            if (err)
                err->line = 1, err->col = 1;
            return rc;
        }
    return AIQ_OK;
}

/* Reads the pod list; see sim_trace.h. */
aiq_rc sim_read_alibaba_pods(FILE *f, const char *path, struct sim_trace *tr,
                             aiq_err *err) {
    aiq_rc rc = AIQ_OK, bad = AIQ_OK;
    struct sim__row *hdr = malloc(sizeof *hdr), *row = malloc(sizeof *row);
    int line = 0, got;
    if (!hdr || !row) {
        rc = aiq_err_set(err, AIQ_ENOMEM, "%s: out of memory", path);
        goto out_free;
    }
    if ((rc = sim__row_header(f, path, &line, hdr, 0,
                              "the header name,cpu_milli,memory_mib,num_gpu,gpu_milli,...",
                              err)) != AIQ_OK)
        goto out_free;
    int ix[6];
    if ((rc = pod_columns(hdr, path, ix, err)) != AIQ_OK)
        goto out_free;
    int icpu = sim__row_find(hdr, "cpu_milli"), imem = sim__row_find(hdr, "memory_mib"),
        ispec = sim__row_find(hdr, "gpu_spec"), iqos = sim__row_find(hdr, "qos");
    while ((got = sim__row_next(f, path, &line, hdr, row, 0, &bad, err)) == 1) {
        int64_t cpu, mem, ngpu, milli;
        double created, deleted, sched;
        if ((rc = sim__get_i64(row, icpu, "cpu_milli", 0, 100000000, 0, &cpu, path, line,
                               err)) ||
            (rc = sim__get_i64(row, imem, "memory_mib", 0, 1LL << 32, 0, &mem, path, line,
                               err)) ||
            (rc = sim__get_i64(row, ix[1], "num_gpu", 0, 16, 0, &ngpu, path, line, err)) ||
            (rc = sim__get_i64(row, ix[2], "gpu_milli", 0, 1000, 1000, &milli, path, line,
                               err)) ||
            (rc = sim__get_double(row, ix[3], "creation_time", 0, 1e10, 0, &created, path,
                                  line, err)) ||
            (rc = sim__get_double(row, ix[4], "deletion_time", 0, 1e10, -1, &deleted, path,
                                  line, err)) ||
            (rc = sim__get_double(row, ix[5], "scheduled_time", 0, 1e10, -1, &sched, path, line,
                                  err)))
            goto out_free;
        /* An empty scheduled_time: never scheduled; an empty
         * deletion_time: still running when the trace ends. */
        if (sched < 0 || deleted <= sched)
            continue;
        char one[64];
        struct sim_job j;
        memset(&j, 0, sizeof j);
        j.id = (char *)sim__get_str(row, ix[0], NULL);
        j.submit = created;
        j.duration_s = deleted - sched;
        j.replicas = 1;
        j.cpu_milli = cpu;
        j.mem_bytes = mem * 1048576;
        spec_model__(sim__get_str(row, ispec, NULL), one, sizeof one);
        if (ngpu == 0) {
            j.gpus = 0; /* CPU-only: CPU and memory, no GPU */
            one[0] = '\0';
        } else if (ngpu == 1 && milli > 0 && milli < 1000) {
            j.gpus = 0;
            j.gpu_milli = (int)milli;
        } else {
            j.gpus = (int)ngpu;
        }
        j.gpu_model = one[0] ? one : NULL;
        j.group = (char *)sim__get_str(row, iqos, "default");
        j.user = j.group;
        if ((rc = sim_trace_add_job(tr, &j, err)) != AIQ_OK)
            goto out_free;
    }
    if (got < 0)
        rc = bad;
out_free:
    free(row);
    free(hdr);
    return rc;
}
