/* trace_csv.c -- the reader for aiq's own trace CSV: a header naming the
 * columns (any order; unknown columns are ignored), then one job a line;
 * blank lines and lines starting with '#' are skipped. The columns are
 * documented in docs/simulator.md ("CSV format"). */
#include "simulator/sim_trace.h"

#include <stdlib.h>
#include <string.h>

enum {
    C_ID, C_SUBMIT, C_USER, C_GROUP, C_REPLICAS, C_GPUS, C_GPU_MEM, C_CPU, C_MEM,
    C_DURATION, C_ESTIMATE, C_PRIORITY, C_MODEL, C_TASK, C_GPU_MODEL, C_MIN_REP, C_MAX_REP,
    C_CKPT, C_GPU_MILLI, C__N
};
static const char *const names[C__N] = {
    "id", "submit_s", "user", "group", "replicas", "gpus", "gpu_mem_mib", "cpu_milli",
    "mem_mib", "duration_s", "estimate_s", "priority", "model", "task", "gpu_model",
    "min_replicas", "max_replicas", "checkpoint_s", "gpu_milli"};

/* A row's GPU share: a fraction (gpu_milli) only with gpus 0 and no MiB;
 * gpus 0 needs a share or cpu (CPU-only). Returns AIQ_OK or AIQ_EPARSE
 * naming the column. */
static aiq_rc check_share(const struct sim__row *row, const int *idx, const char *path, int line,
                          int64_t gpus, int64_t gmem, int64_t milli, int64_t cpu, aiq_err *err) {
    int c = -1;
    aiq_rc rc = AIQ_OK;
    if (milli > 0 && (gpus != 0 || gmem != 0)) {
        c = idx[C_GPU_MILLI];
        rc = aiq_err_set(err, AIQ_EPARSE, "%s:%d:%d: column 'gpu_milli': a fraction of a GPU "
                         "needs gpus 0 and gpu_mem_mib 0, got gpus %lld, gpu_mem_mib %lld",
                         path, line, row->col[c], (long long)gpus, (long long)gmem);
    } else if (gpus == 0 && gmem == 0 && milli == 0 && cpu == 0 && idx[C_GPU_MEM] >= 0) {
        /* gpus 0, no share and cpu_milli > 0 is a CPU-only task */
        c = idx[C_GPU_MEM];
        rc = aiq_err_set(err, AIQ_EPARSE, "%s:%d:%d: column 'gpu_mem_mib': a job with "
                         "gpus 0 needs a GPU share > 0 (gpu_mem_mib or gpu_milli; or "
                         "cpu_milli > 0: CPU-only), got '%s'", path, line, row->col[c],
                         row->field[c]);
    }
    if (c >= 0 && err)
        err->line = line, err->col = row->col[c];
    return rc;
}

/* One row's job (its strings borrowed from row), every column checked.
 * Returns AIQ_OK or AIQ_EPARSE naming the line and column. */
static aiq_rc row_job(const struct sim__row *row, const int *idx, const char *path, int line,
                      struct sim_job *j, aiq_err *err) {
    aiq_rc rc;
    int64_t replicas, gpus, gmem, cpu, mem, prio, minr, maxr, milli;
    memset(j, 0, sizeof *j);
    if ((rc = sim__get_double(row, idx[C_SUBMIT], "submit_s", 0, 1e10, 0, &j->submit, path,
                              line, err)) ||
        (rc = sim__get_i64(row, idx[C_REPLICAS], "replicas", 1, 1024, 1, &replicas, path,
                           line, err)) ||
        (rc = sim__get_i64(row, idx[C_GPUS], "gpus", 0, 16, 1, &gpus, path, line, err)) ||
        (rc = sim__get_i64(row, idx[C_GPU_MEM], "gpu_mem_mib", 0, 1 << 20, 0, &gmem, path,
                           line, err)) ||
        (rc = sim__get_i64(row, idx[C_CPU], "cpu_milli", 0, 100000000, 0, &cpu, path, line,
                           err)) ||
        (rc = sim__get_i64(row, idx[C_MEM], "mem_mib", 0, 1LL << 30, 0, &mem, path, line,
                           err)) ||
        (rc = sim__get_double(row, idx[C_DURATION], "duration_s", 0, 1e9, 0, &j->duration_s,
                              path, line, err)) ||
        (rc = sim__get_double(row, idx[C_ESTIMATE], "estimate_s", 0, 1e9, 0, &j->estimate_s,
                              path, line, err)) ||
        (rc = sim__get_i64(row, idx[C_PRIORITY], "priority", 0, 1000000, 0, &prio, path,
                           line, err)) ||
        (rc = sim__get_i64(row, idx[C_MIN_REP], "min_replicas", 0, 1024, 0, &minr, path,
                           line, err)) ||
        (rc = sim__get_i64(row, idx[C_MAX_REP], "max_replicas", 0, 1024, 0, &maxr, path,
                           line, err)) ||
        (rc = sim__get_double(row, idx[C_CKPT], "checkpoint_s", 0, 1e9, 0, &j->checkpoint_s,
                              path, line, err)) ||
        (rc = sim__get_i64(row, idx[C_GPU_MILLI], "gpu_milli", 0, 999, 0, &milli, path,
                           line, err)) ||
        (rc = check_share(row, idx, path, line, gpus, gmem, milli, cpu, err)))
        return rc;
    if ((minr > 0) != (maxr > 0) || minr > maxr) {
        int c = idx[C_MAX_REP] >= 0 ? idx[C_MAX_REP] : idx[C_MIN_REP];
        rc = aiq_err_set(err, AIQ_EPARSE, "%s:%d:%d: column 'max_replicas': an elastic job "
                         "needs 1 <= min_replicas <= max_replicas, got %lld..%lld", path, line,
                         row->col[c], (long long)minr, (long long)maxr);
        if (err)
            err->line = line, err->col = row->col[c];
        return rc;
    }
    j->replicas = (int)replicas;
    j->gpus = (int)gpus;
    j->gpu_mem_mib = gmem;
    j->gpu_milli = (int)milli;
    j->cpu_milli = cpu;
    j->mem_bytes = mem * 1048576;
    j->priority = (int)prio;
    j->min_replicas = (int)minr;
    j->max_replicas = (int)maxr;
    j->id = (char *)sim__get_str(row, idx[C_ID], NULL);
    j->user = (char *)sim__get_str(row, idx[C_USER], NULL);
    j->group = (char *)sim__get_str(row, idx[C_GROUP], NULL);
    j->model = (char *)sim__get_str(row, idx[C_MODEL], NULL);
    j->task = (char *)sim__get_str(row, idx[C_TASK], NULL);
    j->gpu_model = (char *)sim__get_str(row, idx[C_GPU_MODEL], NULL);
    return AIQ_OK;
}

/* Reads our CSV; see sim_trace.h. On error the jobs read so far stay in
 * tr (the caller frees the trace). */
aiq_rc sim_read_csv(FILE *f, const char *path, struct sim_trace *tr,
                    aiq_err *err) {
    aiq_rc rc = AIQ_OK, bad = AIQ_OK;
    struct sim__row *hdr = malloc(sizeof *hdr), *row = malloc(sizeof *row);
    int line = 0, idx[C__N], got;
    if (!hdr || !row) {
        rc = aiq_err_set(err, AIQ_ENOMEM, "%s: out of memory", path);
        goto out_free;
    }
    if ((rc = sim__row_header(f, path, &line, hdr, 1,
                              "a header line (id,submit_s,user,...)", err)) != AIQ_OK)
        goto out_free;
    for (int c = 0; c < C__N; c++)
        idx[c] = sim__row_find(hdr, names[c]);
    if (idx[C_SUBMIT] < 0 || idx[C_DURATION] < 0) {
        rc = aiq_err_set(err, AIQ_EPARSE, "%s:%d:1: header: missing column '%s'", path, line,
                         idx[C_SUBMIT] < 0 ? "submit_s" : "duration_s");
        if (err)
            err->line = line, err->col = 1;
        goto out_free;
    }
    while ((got = sim__row_next(f, path, &line, hdr, row, 1, &bad, err)) == 1) {
        struct sim_job j;
        if ((rc = row_job(row, idx, path, line, &j, err)) != AIQ_OK ||
            (rc = sim_trace_add_job(tr, &j, err)) != AIQ_OK)
            goto out_free;
    }
    if (got < 0)
        rc = bad;
out_free:
    free(row);
    free(hdr);
    return rc;
}
