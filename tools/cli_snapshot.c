/* cli_snapshot.c -- the API objects one `kubectl aiq` command reads,
 * decoded, with the jobs' factors rebuilt and the active policy compiled
 * (see cli_snapshot.h). */
#include "tools/cli_snapshot.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/json.h"
#include "operator/manifest.h"
#include "operator/nodefacts.h"
#include "tools/cli_out.h"

/* GETs an aiq.dev list (ns NULL: every namespace / cluster-scoped) into
 * *out (a new reference). Prints the error and returns nonzero. */
static int get_list(struct kube_client *kc, const char *group, const char *version,
                    const char *ns, const char *resource, json_object **out) {
    char path[CLI_PATH_CAP];
    aiq_err e;
    aiq_err_clear(&e);
    if (kube_path(path, sizeof path, group, version, ns, resource, NULL, NULL, &e) != AIQ_OK ||
        kube_get(kc, path, out, &e) != AIQ_OK) {
        char what[128];
        snprintf(what, sizeof what, "listing %s", resource);
        cli_print_err(what, &e);
        return 1;
    }
    return 0;
}

/* Like get_list, but a list the user may not read (403) is not fatal:
 * users hold aiq-user only in their group's namespaces, so the tool says
 * what it could not see and goes on with an empty list. ns_fallback (may
 * be NULL) is tried when the cluster-wide list is forbidden. */
static int get_list_opt(struct kube_client *kc, const char *resource, const char *ns_fallback,
                        json_object **out) {
    char path[CLI_PATH_CAP];
    aiq_err e;
    aiq_err_clear(&e);
    aiq_rc rc = kube_path(path, sizeof path, AIQ_GROUP, AIQ_VERSION, NULL, resource, NULL, NULL, &e);
    if (rc == AIQ_OK)
        rc = kube_get(kc, path, out, &e);
    if (rc == AIQ_EAUTH && ns_fallback) {
        aiq_err_clear(&e);
        rc = kube_path(path, sizeof path, AIQ_GROUP, AIQ_VERSION, ns_fallback, resource, NULL, NULL, &e);
        if (rc == AIQ_OK)
            rc = kube_get(kc, path, out, &e);
    }
    if (rc == AIQ_EAUTH) {
        fprintf(stderr, "warning: cannot list %s (%s); what depends on them is left out\n", resource,
                e.message);
        *out = json_tokener_parse("{\"items\":[]}");
        return *out ? 0 : 1;
    }
    if (rc != AIQ_OK) {
        char what[128];
        snprintf(what, sizeof what, "listing %s", resource);
        cli_print_err(what, &e);
        return 1;
    }
    return 0;
}

json_object *cli_items_of(json_object *list) {
    json_object *it = NULL;
    if (!list || !json_object_object_get_ex(list, "items", &it) ||
        !json_object_is_type(it, json_type_array))
        return NULL;
    return it;
}

double cli_jnum(json_object *o, const char *k, double dflt) {
    json_object *v = aiq_jget(o, k);
    if (v && (json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double)))
        return json_object_get_double(v);
    if (v && json_object_is_type(v, json_type_string)) { /* "8" from quantities */
        char *end = NULL;
        double d = strtod(json_object_get_string(v), &end);
        if (end && *end == '\0')
            return d;
    }
    return dflt;
}

void cli_snapshot_free(struct cli_snapshot *w) {
    for (int i = 0; i < w->ngroups; i++)
        aiq_group_deinit(&w->groups[i]);
    for (int i = 0; i < w->nuqs; i++)
        aiq_userquota_deinit(&w->uqs[i]);
    free(w->groups);
    free(w->group_status);
    free(w->uqs);
    free(w->uq_status);
    free(w->jobs);
    oppolicy_free(w->policy);
    json_object_put(w->groups_list);
    json_object_put(w->uqs_list);
    json_object_put(w->jobs_list);
    json_object_put(w->policies_list);
    json_object_put(w->nodes_list);
    memset(w, 0, sizeof *w);
}

/* The active QueuePolicy: the one whose status says it is in use, else
 * the one with spec.active (when the operator has not written status). */
static json_object *find_active(json_object *policies) {
    json_object *it = cli_items_of(policies), *spec_active = NULL;
    size_t n = it ? json_object_array_length(it) : 0;
    for (size_t i = 0; i < n; i++) {
        json_object *p = json_object_array_get_idx(it, i);
        if (aiq_jtrue(aiq_jget(p, "status"), "active"))
            return p;
        if (!spec_active && aiq_jtrue(aiq_jget(p, "spec"), "active"))
            spec_active = p;
    }
    return spec_active;
}

/* The lists: groups, user quotas and policies (each may be forbidden),
 * and AIJobs (see cli_snapshot_load). Returns 0, or 1 after printing. */
static int snap_lists(struct kube_client *kc, const char *ns, const char *user_ns,
                      bool jobs_fallback, struct cli_snapshot *w) {
    if (get_list_opt(kc, "groups", NULL, &w->groups_list) ||
        get_list_opt(kc, "userquotas", user_ns, &w->uqs_list) ||
        get_list_opt(kc, "queuepolicies", NULL, &w->policies_list))
        return 1;
    if (ns || !jobs_fallback)
        return get_list(kc, AIQ_GROUP, AIQ_VERSION, ns, "aijobs", &w->jobs_list);
    return get_list_opt(kc, "aijobs", user_ns, &w->jobs_list);
}

/* The arrays for ng groups, nu user quotas and nj jobs. Returns 0, or 1
 * after printing the error. */
static int snap_alloc(struct cli_snapshot *w, size_t ng, size_t nu, size_t nj) {
    if (ng > CLI_MAX_ITEMS || nu > CLI_MAX_ITEMS || nj > CLI_MAX_ITEMS) {
        fprintf(stderr, "error: more than %d objects of a kind; narrow with -n\n", CLI_MAX_ITEMS);
        return 1;
    }
    w->groups = calloc(ng + 1, sizeof *w->groups);
    w->group_status = calloc(ng + 1, sizeof *w->group_status);
    w->uqs = calloc(nu + 1, sizeof *w->uqs);
    w->uq_status = calloc(nu + 1, sizeof *w->uq_status);
    w->jobs = calloc(nj + 1, sizeof *w->jobs);
    if (!w->groups || !w->group_status || !w->uqs || !w->uq_status || !w->jobs) {
        fputs("error: out of memory\n", stderr);
        return 1;
    }
    return 0;
}

/* Groups and UserQuotas decoded with their statuses; one the operator
 * rejected is skipped, as it does. */
static void snap_owners(struct cli_snapshot *w, json_object *git, size_t ng, json_object *uit,
                        size_t nu) {
    aiq_err e;
    for (size_t i = 0; i < ng; i++) {
        json_object *g = json_object_array_get_idx(git, i);
        aiq_err_clear(&e);
        if (aiq_group_from_json(g, &w->groups[w->ngroups], &e) == AIQ_OK)
            w->group_status[w->ngroups++] = aiq_jget(g, "status");
    }
    for (size_t i = 0; i < nu; i++) {
        json_object *u = json_object_array_get_idx(uit, i);
        aiq_err_clear(&e);
        if (aiq_userquota_from_json(u, &w->uqs[w->nuqs], &e) == AIQ_OK)
            w->uq_status[w->nuqs++] = aiq_jget(u, "status");
    }
}

/* The nodes (kept in w->nodes_list for explain's headroom, or why not in
 * w->nodes_err) and their physical GPUs. */
static void snap_nodes(struct kube_client *kc, struct cli_snapshot *w) {
    aiq_err e;
    aiq_err_clear(&e);
    if (kube_get(kc, "/api/v1/nodes", &w->nodes_list, &e) == AIQ_OK) {
        json_object *nit = cli_items_of(w->nodes_list);
        size_t nn = nit ? json_object_array_length(nit) : 0;
        /* Physical GPUs of usable nodes, as the operator counts them
         * (time-slicing replicas divided out, left-out nodes none). */
        for (size_t i = 0; i < nn; i++) {
            struct node_facts f;
            if (node_facts_read(json_object_array_get_idx(nit, i), &f) == 0)
                w->cw.total_gpus += f.q.ngpus;
        }
    } else {
        snprintf(w->nodes_err, sizeof w->nodes_err, "%s", e.message);
    }
}

/* The world cli_rank sees, the GPUs admitted or running jobs hold taken
 * off the total, then the jobs of jit[0..nj) loaded against it. */
static void snap_jobs(struct cli_snapshot *w, json_object *jit, size_t nj) {
    aiq_err e;
    w->cw.groups = w->groups;
    w->cw.group_status = w->group_status;
    w->cw.ngroups = w->ngroups;
    w->cw.uqs = w->uqs;
    w->cw.uq_status = w->uq_status;
    w->cw.nuqs = w->nuqs;
    w->cw.now = (double)time(NULL);
    double held = 0;
    for (size_t i = 0; i < nj; i++) {
        json_object *st = aiq_jget(json_object_array_get_idx(jit, i), "status");
        const char *ph = aiq_jstr(st, "phase");
        /* totalGPUs: the name an operator before the rename wrote. */
        if (ph && (strcmp(ph, "Admitted") == 0 || strcmp(ph, "Running") == 0))
            held += cli_jnum(st, "totalGpus", cli_jnum(st, "totalGPUs", 0));
    }
    w->cw.free_gpus = fmax(0, w->cw.total_gpus - held);
    for (size_t i = 0; i < nj; i++) {
        aiq_err_clear(&e);
        json_object *j = json_object_array_get_idx(jit, i);
        if (cli_job_load(j, &w->cw, &w->jobs[w->njobs], &e) == AIQ_OK)
            w->njobs++;
    }
}

/* The active policy, compiled as the operator compiles it, else the
 * built-in default. Returns 0, or 1 after printing the error. */
static int snap_policy(struct cli_snapshot *w) {
    aiq_err e;
    w->active_policy = find_active(w->policies_list);
    if (w->active_policy) {
        struct aiq_policy p;
        aiq_err_clear(&e);
        if (aiq_policy_from_json(w->active_policy, &p, &e) == AIQ_OK) {
            w->policy = oppolicy_compile(&p, &e);
            aiq_policy_deinit(&p);
        }
    }
    if (!w->policy) {
        w->active_policy = NULL;
        w->policy = oppolicy_default();
    }
    if (!w->policy) {
        fputs("error: out of memory\n", stderr);
        return 1;
    }
    return 0;
}

int cli_snapshot_load(struct kube_client *kc, const char *ns, const char *user_ns,
                      bool jobs_fallback, struct cli_snapshot *w) {
    int rc = 1;
    memset(w, 0, sizeof *w);
    if (snap_lists(kc, ns, user_ns, jobs_fallback, w))
        goto out;
    json_object *git = cli_items_of(w->groups_list), *uit = cli_items_of(w->uqs_list);
    json_object *jit = cli_items_of(w->jobs_list);
    size_t ng = git ? json_object_array_length(git) : 0;
    size_t nu = uit ? json_object_array_length(uit) : 0;
    size_t nj = jit ? json_object_array_length(jit) : 0;
    if (snap_alloc(w, ng, nu, nj))
        goto out;
    snap_owners(w, git, ng, uit, nu);
    /* GPUs on the nodes, and those held by admitted or running jobs. */
    snap_nodes(kc, w);
    snap_jobs(w, jit, nj);
    if (snap_policy(w))
        goto out;
    rc = 0;
out:
    if (rc)
        cli_snapshot_free(w);
    return rc;
}

/* Index of a level name in the active policy (unknown names after). */
int cli_level_rank(const struct cli_snapshot *w, const char *name) {
    int n = oppolicy_nlevels(w->policy);
    for (int i = 0; i < n; i++)
        if (name && strcmp(oppolicy_level_name(w->policy, i), name) == 0)
            return i;
    return n;
}

const char *cli_policy_name(const struct cli_snapshot *w) {
    const char *n = w->active_policy ? aiq_jstr(aiq_jget(w->active_policy, "metadata"), "name") : NULL;
    return n ? n : "default (built-in: job.priority, one level)";
}

