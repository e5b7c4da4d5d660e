/* cli_nodes.c -- `kubectl aiq nodes` (see cli_nodes.h). */
#include "tools/cli_nodes.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/json.h"
#include "operator/foreign.h"
#include "operator/nodefacts.h"
#include "operator/pods.h"
#include "tools/cli_operator.h"
#include "tools/cli_out.h"
#include "tools/cli_snapshot.h"
#include "tools/cli_table.h"
#include "tools/cli_util.h"

/* GPUs (nvidia.com/gpu units) held on each node by aiq's pods and by
 * others, from every pod the caller may list. */
struct node_use {
    const char *node;
    double aiq, other;
};

static void nodes_count_pods(json_object *pods, struct node_use *u, size_t nu) {
    json_object *it = cli_items_of(pods);
    for (size_t i = 0; it && i < json_object_array_length(it); i++) {
        json_object *pod = json_object_array_get_idx(it, i);
        struct fpod p;
        if (fpod_read(pod, &p) != 0)
            continue;
        json_object *lab = aiq_jget(aiq_jget(pod, "metadata"), "labels");
        bool ours = lab && aiq_jget(lab, PODS_LABEL_JOB);
        for (size_t k = 0; p.holds && k < nu; k++)
            if (strcmp(u[k].node, p.node) == 0) {
                *(ours ? &u[k].aiq : &u[k].other) += (double)p.gpus;
                break;
            }
        fpod_deinit(&p);
    }
}

/* "81920" when every GPU has the same memory, else "81920,40960,...". */
static const char *nodes_mem(char *buf, size_t cap, const struct q_node *q) {
    bool same = true;
    size_t n = 0;
    buf[0] = '\0';
    for (int g = 1; g < q->ngpus; g++)
        same = same && q->gpu_mem_total[g] == q->gpu_mem_total[0];
    for (int g = 0; g < (same ? (q->ngpus > 0) : q->ngpus) && n < cap; g++) {
        int w = snprintf(buf + n, cap - n, "%s%lld", g ? "," : "", (long long)q->gpu_mem_total[g]);
        if (w < 0)
            break;
        n += (size_t)w;
    }
    return q->ngpus ? buf : "-";
}

/* The GPUs pods hold on each node of nit[0..nn) into *use (new array, one
 * per node, the caller frees). Returns -1 when out of memory, else
 * whether the pods could be listed (0: a warning is printed and the
 * counts are 0). */
static int nodes_use(struct kube_client *kc, json_object *nit, size_t nn, struct node_use **use) {
    json_object *pods = NULL;
    aiq_err e;
    *use = calloc(nn ? nn : 1, sizeof **use);
    if (!*use)
        return -1;
    for (size_t i = 0; i < nn; i++) {
        const char *name = aiq_jstr(aiq_jget(json_object_array_get_idx(nit, i), "metadata"), "name");
        (*use)[i].node = name ? name : "";
    }
    aiq_err_clear(&e);
    bool have_pods = kube_get(kc, "/api/v1/pods", &pods, &e) == AIQ_OK;
    if (have_pods)
        nodes_count_pods(pods, *use, nn);
    else
        fprintf(stderr, "warning: cannot list pods (%s): GPUs in use are not shown\n", e.message);
    json_object_put(pods);
    return have_pods;
}

/* Live utilisation from the operator (GET /util): its answer (a new
 * reference), or NULL after a note ("UTIL ?") when it cannot answer. */
static json_object *nodes_util(const struct cli_opts *o) {
    json_object *udoc = NULL;
    aiq_err ue;
    aiq_err_clear(&ue);
    if (cli_operator_get(o, "/utilisations", "/util", &udoc, &ue) != AIQ_OK ||
        !json_object_is_type(udoc, json_type_object)) {
        json_object_put(udoc);
        udoc = NULL;
        fprintf(stderr, "note: utilisation not shown (UTIL ?): the operator %s%s %s%s\n",
                o->operator_url ? "at " : "through the API server",
                o->operator_url ? o->operator_url : "",
                ue.http_status ? "answered: " : "is not reachable: ", ue.message);
    }
    return udoc;
}

/* Node f's item (nobj: its object; u: its pods' GPUs, when have_pods;
 * udoc: the utilisation answer, may be NULL) appended to items. */
static void nodes_item(json_object *items, const struct node_facts *f, json_object *nobj,
                       const struct node_use *u, bool have_pods, json_object *udoc) {
    char mem[512], util[160];
    const char *reason = nodex_name(f->excluded);
    json_object *it = json_object_new_object(); /* NULL: the adds below fail, cli_emit says so */
    cli_add_str(it, "name", f->q.name);
    cli_add_num(it, "gpus", f->q.ngpus);
    cli_add_num(it, "advertisedGPUs", f->advertised);
    cli_add_num(it, "replicasPerGPU", f->replicas);
    cli_add_str(it, "gpuMemoryMiB", nodes_mem(mem, sizeof mem, &f->q));
    cli_add_str(it, "model", f->q.gpu_model);
    cli_add_str(it, "domain", f->q.domain);
    cli_add_str(it, "mig", f->mig[0] ? f->mig : NULL);
    if (have_pods) {
        cli_add_num(it, "aiqGPUs", u->aiq);
        cli_add_num(it, "otherGPUs", u->other);
    }
    json_object *un = cli_util_node(udoc, f->q.name);
    if (un)
        cli_add(it, "utilization", json_object_get(un));
    cli_add_str(it, "util", cli_util_cell(udoc, f->q.name, nobj, f->q.ngpus, util, sizeof util));
    cli_add_str(it, "status", f->excluded ? "Excluded" : f->q.schedulable ? "Ready" : "Cordoned");
    cli_add_str(it, "reason", f->excluded ? reason : NULL);
    cli_add_str(it, "message", f->excluded ? f->message : NULL);
    cli_push(items, it);
}

/* Node f's table row (arguments as nodes_item) added to t. */
static aiq_rc nodes_row(cli_table *t, const struct node_facts *f, json_object *nobj,
                        const struct node_use *u, bool have_pods, json_object *udoc) {
    char gpus[64], mem[512], a[32], oth[32], status[400], util[160], model[200];
    const char *reason = nodex_name(f->excluded);
    if (f->excluded)
        snprintf(status, sizeof status, "%sExcluded: %s (%s)%s", cli_c.red, reason, f->message, cli_c.off);
    else
        snprintf(status, sizeof status, "%s", f->q.schedulable ? "Ready" : "Cordoned");
    int w = snprintf(gpus, sizeof gpus, "%d", f->q.ngpus);
    if (f->replicas > 1 && w > 0)
        snprintf(gpus + w, sizeof gpus - (size_t)w, " (x%d shared)", f->replicas);
    else if (f->mig_single && w > 0)
        snprintf(gpus + w, sizeof gpus - (size_t)w, " (MIG)");
    snprintf(a, sizeof a, have_pods ? "%g" : "?", u->aiq);
    snprintf(oth, sizeof oth, have_pods ? "%g" : "?", u->other);
    snprintf(model, sizeof model, "%s%s%s", f->q.gpu_model ? f->q.gpu_model : "-",
             f->mig[0] ? " +mig " : "", f->mig);
    const char *row[] = {f->q.name, gpus, nodes_mem(mem, sizeof mem, &f->q), model,
                         f->q.domain ? f->q.domain : "-", a, oth,
                         cli_util_cell(udoc, f->q.name, nobj, f->q.ngpus, util, sizeof util), status};
    return cli_table_add(t, row);
}

/* The nodes' items into doc, or else their rows into t, and the output.
 * Returns 0, or 1 after printing the error. */
static int nodes_print(const struct cli_opts *o, json_object *nit, size_t nn,
                       const struct node_use *use, bool have_pods, json_object *udoc,
                       json_object *doc, cli_table *t) {
    json_object *items = doc ? aiq_jget(doc, "items") : NULL;
    for (size_t i = 0; i < nn; i++) {
        struct node_facts f;
        json_object *nobj = json_object_array_get_idx(nit, i);
        if (node_facts_read(nobj, &f) != 0)
            continue;
        if (doc)
            nodes_item(items, &f, nobj, &use[i], have_pods, udoc);
        else if (nodes_row(t, &f, nobj, &use[i], have_pods, udoc) != AIQ_OK)
            return cli_fail("out of memory");
    }
    if (doc && udoc) /* the source's state with the nodes */
        cli_add(doc, "utilizationSource", json_object_get(udoc));
    if (doc)
        cli_emit(doc, o->out);
    else if (cli_table_rows(t) == 0)
        fputs("No nodes found.\n", stderr);
    else
        cli_table_print(t, stdout);
    if (!doc && udoc) {
        char line[700];
        if (*cli_util_summary(udoc, (double)time(NULL), line, sizeof line))
            printf("%s\n", line);
    }
    return 0;
}

int cli_nodes_cmd(const struct cli_opts *o, struct kube_client *kc) {
    json_object *nodes = NULL, *doc = NULL, *items = NULL, *udoc = NULL;
    struct node_use *use = NULL;
    cli_table *t = NULL;
    aiq_err e;
    int rc = 1;
    aiq_err_clear(&e);
    if (kube_get(kc, "/api/v1/nodes", &nodes, &e) != AIQ_OK) {
        cli_print_err("listing nodes", &e);
        goto out;
    }
    json_object *nit = cli_items_of(nodes);
    size_t nn = nit ? json_object_array_length(nit) : 0;
    int have_pods = nodes_use(kc, nit, nn, &use);
    if (have_pods < 0) {
        rc = cli_fail("out of memory");
        goto out;
    }
    udoc = nodes_util(o);
    static const char *const hdr[] = {"NODE", "GPUS", "GPU-MEM-MIB", "MODEL", "DOMAIN",
                                      "AIQ", "OTHER", "UTIL", "STATUS"};
    if (o->out != CLI_OUT_TABLE) {
        doc = json_object_new_object();
        items = json_object_new_array();
        if (!doc || !items) {
            json_object_put(items);
            rc = cli_fail("out of memory");
            goto out;
        }
        cli_add(doc, "items", items);
    } else if (!(t = cli_table_create(9, hdr))) {
        rc = cli_fail("out of memory");
        goto out;
    }
    rc = nodes_print(o, nit, nn, use, have_pods > 0, udoc, doc, t);
out:
    cli_table_free(t);
    json_object_put(udoc);
    json_object_put(doc);
    free(use);
    json_object_put(nodes);
    return rc;
}
