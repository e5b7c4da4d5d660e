/* trace_tiresias.c -- the reader for the Tiresias simulator's job CSV
 * (job_id,num_gpu,submit_time,iterations,model_name,duration,interval;
 * times in seconds). The trace has no users, groups or estimates: every
 * job belongs to user "tiresias" in group "default", the model name is
 * kept (the predictor groups by it), and a job of more than 8 GPUs becomes
 * a gang of 8-GPU replicas (of 1-GPU replicas when not a multiple of 8),
 * as Tiresias places such jobs over several 8-GPU machines;
 * sim_tiresias_fit_nodes then refits every gang to the cluster's
 * machines (8 GPUs on 4-GPU machines: 2 x 4). */
#include "simulator/sim_trace.h"

#include <stdlib.h>
#include <string.h>

/* Reads a Tiresias job CSV; see sim_trace.h. */
aiq_rc sim_read_tiresias(FILE *f, const char *path, struct sim_trace *tr,
                         aiq_err *err) {
    aiq_rc rc = AIQ_OK, bad = AIQ_OK;
    struct sim__row *hdr = malloc(sizeof *hdr), *row = malloc(sizeof *row);
    int line = 0, got;
    if (!hdr || !row) {
        rc = aiq_err_set(err, AIQ_ENOMEM, "%s: out of memory", path);
        goto out_free;
    }
    if ((rc = sim__row_header(f, path, &line, hdr, 0,
                              "the header job_id,num_gpu,submit_time,...", err)) != AIQ_OK)
        goto out_free;
    int ijob = sim__row_find(hdr, "job_id"), ign = sim__row_find(hdr, "num_gpu"),
        isub = sim__row_find(hdr, "submit_time"), imod = sim__row_find(hdr, "model_name"),
        idur = sim__row_find(hdr, "duration");
    const char *missing = ijob < 0 ? "job_id" : ign < 0 ? "num_gpu"
                        : isub < 0 ? "submit_time" : idur < 0 ? "duration" : NULL;
    if (missing) {
        rc = aiq_err_set(err, AIQ_EPARSE, "%s:1:1: header: missing column '%s' (a Tiresias "
                         "trace has job_id,num_gpu,submit_time,iterations,model_name,duration,"
                         "interval)", path, missing);
        if (err)
            err->line = 1, err->col = 1;
        goto out_free;
    }
    while ((got = sim__row_next(f, path, &line, hdr, row, 0, &bad, err)) == 1) {
        int64_t ngpu;
        struct sim_job j;
        memset(&j, 0, sizeof j);
        if ((rc = sim__get_i64(row, ign, "num_gpu", 1, 16 * 1024, 1, &ngpu, path, line, err)) ||
            (rc = sim__get_double(row, isub, "submit_time", 0, 1e10, 0, &j.submit, path, line,
                                  err)) ||
            (rc = sim__get_double(row, idur, "duration", 0, 1e9, 0, &j.duration_s, path, line,
                                  err)))
            goto out_free;
        if (ngpu <= 8) {
            j.replicas = 1;
            j.gpus = (int)ngpu;
        } else if (ngpu % 8 == 0 && ngpu / 8 <= 1024) {
            j.replicas = (int)(ngpu / 8);
            j.gpus = 8;
        } else if (ngpu <= 1024) {
            j.replicas = (int)ngpu;
            j.gpus = 1;
        } else {
            rc = aiq_err_set(err, AIQ_EPARSE, "%s:%d:%d: column 'num_gpu': a gang of more "
                             "than 1024 replicas, got '%s'", path, line, row->col[ign],
                             row->field[ign]);
            goto out_free;
        }
        j.id = (char *)sim__get_str(row, ijob, NULL);
        j.user = "tiresias";
        j.group = "default";
        j.model = (char *)sim__get_str(row, imod, NULL);
        j.cpu_milli = 4000;
        j.mem_bytes = 16LL << 30;
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

/* Largest divisor of g that is at most m (1 when none bigger). */
static int64_t divisor_upto__(int64_t g, int64_t m) {
    for (int64_t d = m < g ? m : g; d > 1; d--)
        if (g % d == 0)
            return d;
    return 1;
}

/* Splits Tiresias jobs to fit the cluster's machines; see sim_trace.h. */
aiq_rc sim_tiresias_fit_nodes(struct sim_trace *tr, aiq_err *err) {
    int64_t m = 0;
    for (int i = 0; i < tr->nnodes; i++)
        if (tr->nodes[i].gpus > m)
            m = tr->nodes[i].gpus;
    if (m == 0)
        return aiq_err_field(err, AIQ_EINVAL, "nodes", "tiresias: the cluster (%d nodes) has "
                             "no GPUs to fit the jobs' gangs to", tr->nnodes);
    for (int i = 0; i < tr->njobs; i++) {
        struct sim_job *j = &tr->jobs[i];
        int64_t g = (int64_t)j->replicas * j->gpus;
        if (g == 0)
            continue;
        int64_t per = divisor_upto__(g, m);
        if (g / per > 1024)
            return aiq_err_field(err, AIQ_EINVAL, "num_gpu", "tiresias: job '%s': %lld GPUs "
                                 "on machines of at most %lld need a gang of %lld replicas "
                                 "(at most 1024)", j->id, (long long)g, (long long)m,
                                 (long long)(g / per));
        j->gpus = (int)per;
        j->replicas = (int)(g / per);
    }
    return AIQ_OK;
}
