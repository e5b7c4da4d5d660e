/* sim_trace.c -- the simulator's workload container: creating and freeing
 * a trace, appending jobs and nodes (deep copies), sorting by submit time,
 * GPU memory by model name, node specs ("125x8xA100-80GB") and writing a
 * trace back out in our CSV format. */
#include "simulator/sim_trace.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Creates an empty trace; see sim_trace.h. */
struct sim_trace *sim_trace_create(void) {
    return calloc(1, sizeof(struct sim_trace));
}

static void job_deinit(struct sim_job *j) {
    free(j->id);
    free(j->user);
    free(j->group);
    free(j->model);
    free(j->task);
    free(j->gpu_model);
}

/* Frees a trace; see sim_trace.h. */
void sim_trace_free(struct sim_trace *tr) {
    if (!tr)
        return;
    for (int i = 0; i < tr->njobs; i++)
        job_deinit(&tr->jobs[i]);
    for (int i = 0; i < tr->nnodes; i++) {
        free(tr->nodes[i].name);
        free(tr->nodes[i].gpu_model);
    }
    free(tr->jobs);
    free(tr->nodes);
    free(tr);
}

/* strdup that keeps NULL; *ok cleared on ENOMEM. */
static char *dup__(const char *s, int *ok) {
    if (!s)
        return NULL;
    char *d = strdup(s);
    if (!d)
        *ok = 0;
    return d;
}

/* Appends a job copy; see sim_trace.h. */
aiq_rc sim_trace_add_job(struct sim_trace *tr, const struct sim_job *j,
                         aiq_err *err) {
    if (tr->njobs >= SIM_MAX_JOBS)
        return aiq_err_set(err, AIQ_ETOOBIG, "trace: more than %d jobs", SIM_MAX_JOBS);
    if (tr->njobs == tr->cjobs) {
        int nc = tr->cjobs ? tr->cjobs * 2 : 256;
        struct sim_job *nj = realloc(tr->jobs, (size_t)nc * sizeof *nj);
        if (!nj)
            return aiq_err_set(err, AIQ_ENOMEM, "trace: out of memory");
        tr->jobs = nj;
        tr->cjobs = nc;
    }
    struct sim_job c = *j;
    int ok = 1;
    char idbuf[32];
    if (!j->id) {
        snprintf(idbuf, sizeof idbuf, "job-%d", tr->njobs + 1);
        c.id = idbuf;
    }
    c.id = dup__(c.id, &ok);
    c.user = dup__(j->user && *j->user ? j->user : "default", &ok);
    c.group = dup__(j->group && *j->group ? j->group : "default", &ok);
    c.model = dup__(j->model && *j->model ? j->model : NULL, &ok);
    c.task = dup__(j->task && *j->task ? j->task : NULL, &ok);
    c.gpu_model = dup__(j->gpu_model && *j->gpu_model ? j->gpu_model : NULL, &ok);
    if (!ok) {
        job_deinit(&c);
        return aiq_err_set(err, AIQ_ENOMEM, "trace: out of memory");
    }
    if (c.replicas < 1)
        c.replicas = 1;
    tr->jobs[tr->njobs++] = c;
    return AIQ_OK;
}

/* Appends a node copy; see sim_trace.h. */
aiq_rc sim_trace_add_node(struct sim_trace *tr, const struct sim_node *n,
                          aiq_err *err) {
    if (tr->nnodes >= SIM_MAX_NODES)
        return aiq_err_set(err, AIQ_ETOOBIG, "cluster: more than %d nodes", SIM_MAX_NODES);
    if (tr->nnodes == tr->cnodes) {
        int nc = tr->cnodes ? tr->cnodes * 2 : 64;
        struct sim_node *nn = realloc(tr->nodes, (size_t)nc * sizeof *nn);
        if (!nn)
            return aiq_err_set(err, AIQ_ENOMEM, "cluster: out of memory");
        tr->nodes = nn;
        tr->cnodes = nc;
    }
    struct sim_node c = *n;
    int ok = 1;
    c.name = dup__(n->name, &ok);
    c.gpu_model = dup__(n->gpu_model && *n->gpu_model ? n->gpu_model : NULL, &ok);
    if (!ok || !c.name) {
        free(c.name);
        free(c.gpu_model);
        return aiq_err_set(err, AIQ_ENOMEM, "cluster: out of memory");
    }
    tr->nodes[tr->nnodes++] = c;
    return AIQ_OK;
}

/* Merge sort on submit time: stable, so the file order breaks ties. */
static void msort__(struct sim_job *a, struct sim_job *tmp, int n) {
    if (n < 2)
        return;
    int h = n / 2;
    msort__(a, tmp, h);
    msort__(a + h, tmp, n - h);
    int i = 0, k = h, o = 0;
    while (i < h && k < n)
        tmp[o++] = a[k].submit < a[i].submit ? a[k++] : a[i++];
    while (i < h)
        tmp[o++] = a[i++];
    while (k < n)
        tmp[o++] = a[k++];
    memcpy(a, tmp, (size_t)n * sizeof *a);
}

/* Sorts by submit time; see sim_trace.h. On ENOMEM falls back to an
 * insertion sort (also stable, only slower). */
void sim_trace_sort(struct sim_trace *tr) {
    if (tr->njobs < 2)
        return;
    struct sim_job *tmp = malloc((size_t)tr->njobs * sizeof *tmp);
    if (tmp) {
        msort__(tr->jobs, tmp, tr->njobs);
        free(tmp);
        return;
    }
    for (int i = 1; i < tr->njobs; i++) {
        struct sim_job x = tr->jobs[i];
        int k = i - 1;
        while (k >= 0 && tr->jobs[k].submit > x.submit) {
            tr->jobs[k + 1] = tr->jobs[k];
            k--;
        }
        tr->jobs[k + 1] = x;
    }
}

/* GPU memory by model name; see sim_trace.h. The table holds the models
 * of the presets and of Alibaba's trace (its G1/G2/G3 codes are not
 * disclosed and stay unknown). */
int64_t sim_gpu_model_mib(const char *model) {
    static const struct {
        const char *name;
        int64_t mib;
    } tab[] = {
        {"A100-80GB", 81920}, {"A100-40GB", 40960}, {"A100", 40960},
        {"H100", 81920},      {"H200", 144384},     {"V100M32", 32768},
        {"V100M16", 16384},   {"V100", 16384},      {"P100", 16384},
        {"T4", 16384},        {"A10", 24576},       {"L4", 24576},
        {"A30", 24576},       {"L40S", 46080},
    };
    if (!model || !*model)
        return 0;
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (strcmp(model, tab[i].name) == 0)
            return tab[i].mib;
    /* A trailing "<n>GB" or "<n>G" (NVIDIA-A100-SXM4-80GB). */
    size_t len = strlen(model);
    size_t e = len;
    if (e >= 2 && (model[e - 1] == 'B' || model[e - 1] == 'b') &&
        (model[e - 2] == 'G' || model[e - 2] == 'g'))
        e -= 2;
    else if (e >= 1 && (model[e - 1] == 'G' || model[e - 1] == 'g'))
        e -= 1;
    else
        return 0;
    size_t b = e;
    while (b > 0 && model[b - 1] >= '0' && model[b - 1] <= '9')
        b--;
    if (b == e || e - b > 4)
        return 0;
    int64_t gb = 0;
    for (size_t i = b; i < e; i++)
        gb = gb * 10 + (model[i] - '0');
    return gb * 1024;
}

/* Parses a decimal int in [lo, hi] from s..end; -1 on error. */
static long num__(const char *s, const char *end, long lo, long hi) {
    if (s == end || end - s > 9)
        return -1;
    long v = 0;
    for (const char *p = s; p < end; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        v = v * 10 + (*p - '0');
    }
    return v < lo || v > hi ? -1 : v;
}

/* Adds nodes from a spec; see sim_trace.h. */
aiq_rc sim_nodes_from_spec(struct sim_trace *tr, const char *spec,
                           aiq_err *err) {
    aiq_rc rc = AIQ_OK;
    const char *p = spec;
    if (!p || !*p)
        return aiq_err_field(err, AIQ_EINVAL, "nodes-spec", "nodes-spec: empty");
    while (*p) {
        const char *end = strchr(p, ',');
        if (!end)
            end = p + strlen(p);
        char part[256];
        size_t len = (size_t)(end - p);
        if (len >= sizeof part)
            return aiq_err_field(err, AIQ_EINVAL, "nodes-spec", "nodes-spec: part too long");
        memcpy(part, p, len);
        part[len] = '\0';
        /* "/CORES[/MEM]": the node's cpu and memory in GiB (8 GiB a core
         * without MEM), else per GPU */
        long cores = 0, gib = 0;
        char *sl = strchr(part, '/'), *sl2 = sl ? strchr(sl + 1, '/') : NULL;
        if (sl2) {
            gib = num__(sl2 + 1, part + len, 1, 100000000);
            if (gib < 0)
                return aiq_err_field(err, AIQ_EINVAL, "nodes-spec", "nodes-spec: '%s': MEM "
                                     "after the second '/' must be 1..100000000 GiB", part);
            *sl2 = '\0';
        }
        if (sl) {
            cores = num__(sl + 1, sl2 ? sl2 : part + len, 1, 100000);
            if (cores < 0)
                return aiq_err_field(err, AIQ_EINVAL, "nodes-spec",
                                     "nodes-spec: '%s': CORES after '/' must be 1..100000", part);
            *sl = '\0';
        }
        char *x1 = strchr(part, 'x');
        char *x2 = x1 ? strchr(x1 + 1, 'x') : NULL;
        long count = x1 ? num__(part, x1, 1, SIM_MAX_NODES) : -1;
        long gpus = x2 ? num__(x1 + 1, x2, 0, 16) : -1;
        const char *model = x2 ? x2 + 1 : "";
        int64_t mib = sim_gpu_model_mib(model);
        if (count < 0 || gpus < 0 || (gpus > 0 && mib <= 0))
            return aiq_err_field(err, AIQ_EINVAL, "nodes-spec",
                                 "nodes-spec: '%s': want COUNTxGPUSxMODEL[/CORES[/MEM]] with COUNT 1..%d, "
                                 "GPUS 0..16 and a known MODEL or one ending in <n>GB "
                                 "(e.g. 125x8xA100-80GB)", part, SIM_MAX_NODES);
        int base = tr->nnodes;
        for (long i = 0; i < count; i++) {
            char name[64];
            snprintf(name, sizeof name, "node-%05d", base + (int)i);
            struct sim_node n = {name, gpus > 0 ? (char *)model : NULL, (int)gpus, mib,
                                 (gpus > 0 ? gpus : 1) * 16000,
                                 (int64_t)(gpus > 0 ? gpus : 1) * 128 * 1073741824LL};
            if (cores > 0) {
                n.cpu_milli = cores * 1000;
                n.mem_bytes = (int64_t)(gib > 0 ? gib : cores * 8) * 1073741824LL;
            }
            if ((rc = sim_trace_add_node(tr, &n, err)) != AIQ_OK)
                return rc;
        }
        p = *end ? end + 1 : end;
    }
    return rc;
}

/* Writes a CSV field, quoting it when it holds a comma or quote. */
static void field__(FILE *out, const char *s) {
    if (!s)
        return;
    if (!strpbrk(s, ",\"\n")) {
        fputs(s, out);
        return;
    }
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', out);
        fputc(*s == '\n' ? ' ' : *s, out);
    }
    fputc('"', out);
}

/* Writes our CSV; see sim_trace.h. */
aiq_rc sim_write_csv(const struct sim_trace *tr, FILE *out, aiq_err *err) {
    fputs("id,submit_s,user,group,replicas,gpus,gpu_mem_mib,cpu_milli,mem_mib,"
          "duration_s,estimate_s,priority,model,task,gpu_model,min_replicas,max_replicas,"
          "checkpoint_s,gpu_milli\n", out);
    for (int i = 0; i < tr->njobs; i++) {
        const struct sim_job *j = &tr->jobs[i];
        field__(out, j->id);
        fprintf(out, ",%.17g,", j->submit);
        field__(out, j->user);
        fputc(',', out);
        field__(out, j->group);
        fprintf(out, ",%d,%d,%lld,%lld,%lld,%.17g,%.17g,%d,", j->replicas, j->gpus,
                (long long)j->gpu_mem_mib, (long long)j->cpu_milli,
                (long long)(j->mem_bytes / 1048576), j->duration_s, j->estimate_s, j->priority);
        field__(out, j->model);
        fputc(',', out);
        field__(out, j->task);
        fputc(',', out);
        field__(out, j->gpu_model);
        fprintf(out, ",%d,%d,%.17g,%d\n", j->min_replicas, j->max_replicas, j->checkpoint_s,
                j->gpu_milli);
    }
    if (fflush(out) != 0 || ferror(out))
        return aiq_err_set(err, AIQ_EIO, "writing the trace: %s", strerror(errno));
    return AIQ_OK;
}
