/* cli_headroom.c -- a waiting job's need against free capacity and quota
 * left, one row per resource, in human units (see cli_headroom.h). */
#include "tools/cli_headroom.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/units.h"

/* ---- units ------------------------------------------------------------------- */

const char *cli_cores_text(char *buf, size_t cap, int64_t milli) {
    snprintf(buf, cap, "%.4g core%s", (double)milli / 1000, milli == 1000 ? "" : "s");
    return buf;
}

/* ---- capacity ---------------------------------------------------------------- */

/* What the eligible nodes have free, and how many replicas each resource
 * alone leaves room for (capped at the job's replicas). */
struct hr_free {
    int64_t whole_gpus, big_gpus;   /* unused GPUs; of them >= gpu_mem_mib */
    int64_t max_gpu_free;           /* most free memory on one GPU, MiB */
    int64_t cpu, mem, max_cpu, max_mem;
    int nodes;
    int64_t fit_gpus, fit_gmem, fit_cpu, fit_mem, fit_all;
};

static bool hr_same(const char *want, const char *have) {
    return !want || (have && strcmp(want, have) == 0);
}

static int64_t hr_min(int64_t a, int64_t b) {
    return a < b ? a : b;
}

/* Replicas of ask that node n holds, per resource; INT32_MAX when the job
 * does not ask for that resource. */
static void hr_node_fit(const struct q_node *n, const struct cli_hr_ask *a, int64_t fit[4]) {
    int64_t whole = 0, big = 0, shares = 0;
    for (int g = 0; g < n->ngpus && g < Q_MAX_GPUS; g++) {
        int64_t f = n->gpu_mem_total[g] - n->gpu_mem_used[g];
        whole += n->gpu_mem_used[g] == 0;
        big += n->gpu_mem_used[g] == 0 && n->gpu_mem_total[g] >= a->gpu_mem_mib;
        shares += a->gpu_mem_mib > 0 && f > 0 ? f / a->gpu_mem_mib : 0;
    }
    fit[0] = a->gpus > 0 ? whole / a->gpus : INT32_MAX;
    fit[1] = a->gpus > 0 ? (a->gpu_mem_mib > 0 ? big / a->gpus : INT32_MAX)
                         : (a->gpu_mem_mib > 0 ? shares : INT32_MAX);
    fit[2] = a->cpu_milli > 0 ? (n->cpu_alloc - n->cpu_used) / a->cpu_milli : INT32_MAX;
    fit[3] = a->mem_bytes > 0 ? (n->mem_alloc - n->mem_used) / a->mem_bytes : INT32_MAX;
    for (int k = 0; k < 4; k++)
        fit[k] = fit[k] < 0 ? 0 : fit[k];
}

static void hr_free_of(const struct q_node *nodes, int nn, const struct cli_hr_ask *a,
                       struct hr_free *f) {
    int64_t fit_gpus = 0, fit_gmem = 0, fit_cpu = 0, fit_mem = 0;
    memset(f, 0, sizeof *f);
    for (int i = 0; i < nn; i++) {
        const struct q_node *n = &nodes[i];
        if (!n->schedulable || !hr_same(a->gpu_model, n->gpu_model) || !hr_same(a->domain, n->domain))
            continue;
        f->nodes++;
        for (int g = 0; g < n->ngpus && g < Q_MAX_GPUS; g++) {
            int64_t fr = n->gpu_mem_total[g] - n->gpu_mem_used[g];
            f->whole_gpus += n->gpu_mem_used[g] == 0;
            f->big_gpus += n->gpu_mem_used[g] == 0 && n->gpu_mem_total[g] >= a->gpu_mem_mib;
            f->max_gpu_free = fr > f->max_gpu_free ? fr : f->max_gpu_free;
        }
        int64_t c = n->cpu_alloc - n->cpu_used, m = n->mem_alloc - n->mem_used;
        f->cpu += c > 0 ? c : 0;
        f->mem += m > 0 ? m : 0;
        f->max_cpu = c > f->max_cpu ? c : f->max_cpu;
        f->max_mem = m > f->max_mem ? m : f->max_mem;
        int64_t fit[4];
        hr_node_fit(n, a, fit);
        fit_gpus += hr_min(fit[0], a->replicas);
        fit_gmem += hr_min(fit[1], a->replicas);
        fit_cpu += hr_min(fit[2], a->replicas);
        fit_mem += hr_min(fit[3], a->replicas);
        /* Together: one gang stays in one domain; summed per domain. */
        int64_t all = hr_min(hr_min(fit[0], fit[1]), hr_min(fit[2], fit[3]));
        int64_t dom = hr_min(all, a->replicas);
        for (int k = 0; k < i; k++)
            if (nodes[k].schedulable && hr_same(a->gpu_model, nodes[k].gpu_model) &&
                hr_same(a->domain, nodes[k].domain) &&
                hr_same(n->domain ? n->domain : "", nodes[k].domain ? nodes[k].domain : "")) {
                int64_t fk[4];
                hr_node_fit(&nodes[k], a, fk);
                dom += hr_min(hr_min(hr_min(fk[0], fk[1]), hr_min(fk[2], fk[3])), a->replicas);
            }
        f->fit_all = hr_min(dom > f->fit_all ? dom : f->fit_all, a->replicas);
    }
    f->fit_gpus = hr_min(fit_gpus, a->replicas);
    f->fit_gmem = hr_min(fit_gmem, a->replicas);
    f->fit_cpu = hr_min(fit_cpu, a->replicas);
    f->fit_mem = hr_min(fit_mem, a->replicas);
}

/* ---- rows -------------------------------------------------------------------- */

struct hr_out {
    struct cli_hr_row *rows;
    int n, max;
};

static struct cli_hr_row *hr_row(struct hr_out *o, const char *resource, bool blocks) {
    if (o->n >= o->max)
        return NULL;
    struct cli_hr_row *r = &o->rows[o->n++];
    memset(r, 0, sizeof *r);
    snprintf(r->resource, sizeof r->resource, "%s", resource);
    r->blocks = blocks;
    return r;
}

/* " (2 replicas x 1 core)" for a gang, "" for one replica. */
static const char *hr_each(char *buf, size_t cap, int replicas, const char *per) {
    if (replicas > 1)
        snprintf(buf, cap, " (%d replicas x %s)", replicas, per);
    else
        buf[0] = '\0';
    return buf;
}

static void hr_room(char *buf, size_t cap, const char *what, int64_t fit, int replicas) {
    snprintf(buf, cap, "%s; room for %lld of %d replica%s", what, (long long)fit, replicas,
             replicas == 1 ? "" : "s");
}

static void hr_gpu_rows(struct hr_out *o, const struct cli_hr_ask *a, const struct hr_free *f) {
    char t1[48], t2[48], t3[96], w[128];
    struct cli_hr_row *r;
    int R = a->replicas;
    if (a->gpus > 0 && (r = hr_row(o, "GPUs", f->fit_gpus < R))) {
        snprintf(t1, sizeof t1, "%d GPU%s", a->gpus, a->gpus == 1 ? "" : "s");
        snprintf(r->need, sizeof r->need, "%lld GPU%s%s", (long long)R * a->gpus,
                 (long long)R * a->gpus == 1 ? "" : "s", hr_each(t3, sizeof t3, R, t1));
        snprintf(w, sizeof w, "%lld unused on %d node%s", (long long)f->whole_gpus, f->nodes,
                 f->nodes == 1 ? "" : "s");
        hr_room(r->avail, sizeof r->avail, w, f->fit_gpus, R);
    }
    if (a->gpus > 0 && a->gpu_mem_mib > 0 &&
        (r = hr_row(o, "GPU memory", f->fit_gmem < R && f->fit_gpus >= R))) {
        snprintf(r->need, sizeof r->need, "%s per GPU", aiq_size_text(a->gpu_mem_mib, 2, t1, sizeof t1));
        snprintf(w, sizeof w, "%lld unused GPU%s with %s or more", (long long)f->big_gpus,
                 f->big_gpus == 1 ? "" : "s", t1);
        hr_room(r->avail, sizeof r->avail, w, f->fit_gmem, R);
    } else if (a->gpus == 0 && a->gpu_mem_mib > 0 && (r = hr_row(o, "GPU memory", f->fit_gmem < R))) {
        aiq_size_text(a->gpu_mem_mib, 2, t1, sizeof t1);
        snprintf(r->need, sizeof r->need, "%s on a shared GPU%s", t1, hr_each(t3, sizeof t3, R, t1));
        snprintf(w, sizeof w, "most free on one GPU %s", aiq_size_text(f->max_gpu_free, 2, t2, sizeof t2));
        hr_room(r->avail, sizeof r->avail, w, f->fit_gmem, R);
    }
}

static void hr_host_rows(struct hr_out *o, const struct cli_hr_ask *a, const struct hr_free *f) {
    char t1[48], t2[48], t3[48], t4[96], w[160];
    struct cli_hr_row *r;
    int R = a->replicas;
    if (a->cpu_milli > 0 && (r = hr_row(o, "cpu", f->fit_cpu < R))) {
        cli_cores_text(t1, sizeof t1, a->cpu_milli);
        snprintf(r->need, sizeof r->need, "%s%s", cli_cores_text(t2, sizeof t2, R * a->cpu_milli),
                 hr_each(t4, sizeof t4, R, t1));
        snprintf(w, sizeof w, "%s free, at most %s on one node", cli_cores_text(t2, sizeof t2, f->cpu),
                 cli_cores_text(t3, sizeof t3, f->max_cpu));
        hr_room(r->avail, sizeof r->avail, w, f->fit_cpu, R);
    }
    if (a->mem_bytes > 0 && (r = hr_row(o, "memory", f->fit_mem < R))) {
        aiq_size_text(a->mem_bytes, 0, t1, sizeof t1);
        snprintf(r->need, sizeof r->need, "%s%s", aiq_size_text(R * a->mem_bytes, 0, t2, sizeof t2),
                 hr_each(t4, sizeof t4, R, t1));
        snprintf(w, sizeof w, "%s free, at most %s on one node", aiq_size_text(f->mem, 0, t2, sizeof t2),
                 aiq_size_text(f->max_mem, 0, t3, sizeof t3));
        hr_room(r->avail, sizeof r->avail, w, f->fit_mem, R);
    }
    bool each = f->fit_gpus >= R && f->fit_gmem >= R && f->fit_cpu >= R && f->fit_mem >= R;
    if (each && f->fit_all < R && (r = hr_row(o, "together", true))) {
        snprintf(r->need, sizeof r->need, "all of it on the same node%s", R > 1 ? "s, one domain" : "");
        hr_room(r->avail, sizeof r->avail, "each resource is free, not on the same nodes",
                f->fit_all, R);
    }
}

/* One quota amount in its unit. */
static const char *hr_amount(char *buf, size_t cap, int k, int64_t v) {
    switch (k) {
    case 1: return aiq_size_text(v, 2, buf, cap);
    case 2: return cli_cores_text(buf, cap, v);
    case 3: return aiq_size_text(v, 0, buf, cap);
    default:
        snprintf(buf, cap, "%lld %s%s", (long long)v, k == 0 ? "GPU" : "job", v == 1 ? "" : "s");
        return buf;
    }
}

static void hr_owner_rows(struct hr_out *o, const struct cli_hr_ask *a, const struct cli_hr_owner *w) {
    static const char *const names[5] = {"gpus", "gpu memory", "cpu", "memory", "jobs"};
    int64_t R = a->replicas, units = a->gpus > 0 ? a->gpus : (a->gpu_mem_mib > 0 ? 1 : 0);
    int64_t need[5] = {R * a->gpus, a->gpu_mem_mib > 0 ? R * units * a->gpu_mem_mib : 0,
                       R * a->cpu_milli, R * a->mem_bytes, 1};
    int64_t lim[5] = {w->quota.gpus, w->quota.gpu_memory_mib, w->quota.cpu_milli,
                      w->quota.memory_bytes, w->quota.jobs};
    int64_t used[5] = {w->used.gpus, w->used.gpu_memory_mib, w->used.cpu_milli,
                       w->used.memory_bytes, w->used.jobs};
    char res[64], t1[48], t2[48], t3[48];
    for (int k = 0; k < 5; k++) {
        if (lim[k] < 0 || need[k] <= 0)
            continue;
        int64_t left = lim[k] - used[k] > 0 ? lim[k] - used[k] : 0;
        snprintf(res, sizeof res, "%s quota %s", w->label, names[k]);
        struct cli_hr_row *r = hr_row(o, res, need[k] > left);
        if (!r)
            return;
        hr_amount(r->need, sizeof r->need, k, need[k]);
        snprintf(r->avail, sizeof r->avail, "%s of %s in use, %s left",
                 hr_amount(t1, sizeof t1, k, used[k]), hr_amount(t2, sizeof t2, k, lim[k]),
                 hr_amount(t3, sizeof t3, k, left));
    }
    if (w->budget_gpu_hours < 0)
        return;
    double cost = (double)(R * units) * a->runtime_s / 3600.0;
    snprintf(res, sizeof res, "%s budget", w->label);
    /* The queue's test (queue/quota.c over_budget), with its tolerance. */
    struct cli_hr_row *r = hr_row(o, res, w->used_gpu_hours + cost > w->budget_gpu_hours + 1e-9);
    if (!r)
        return;
    if (a->runtime_s > 0)
        snprintf(r->need, sizeof r->need, "%.4g GPU-hours (runtime %.4g h)", cost, a->runtime_s / 3600);
    else
        snprintf(r->need, sizeof r->need, "? GPU-hours (no runtime estimate)");
    snprintf(r->avail, sizeof r->avail, "%.4g of %.6g GPU-hours used, %.4g left", w->used_gpu_hours,
             w->budget_gpu_hours, fmax(0, w->budget_gpu_hours - w->used_gpu_hours));
}

int cli_headroom(const struct q_node *nodes, int nn, const struct cli_hr_ask *ask,
                 const struct cli_hr_owner *owners, int nown, struct cli_hr_row *rows,
                 int max) {
    struct hr_out o = {rows, 0, max};
    struct hr_free f;
    if (nn >= 0) { /* nodes unknown: no capacity row can be right */
        hr_free_of(nodes, nn, ask, &f);
        hr_gpu_rows(&o, ask, &f);
        hr_host_rows(&o, ask, &f);
    }
    for (int i = 0; i < nown; i++)
        hr_owner_rows(&o, ask, &owners[i]);
    return o.n;
}
