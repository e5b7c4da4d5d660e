/* cli_explain.c -- `kubectl aiq explain` (see cli_explain.h): a job's
 * score, level, quota, budget, headroom, ETA, preemption and journal,
 * as a text page or one -o json|yaml document. */
#include "tools/cli_explain.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/model.h"
#include "operator/manifest.h"
#include "operator/nodefacts.h"
#include "operator/status.h"
#include "policy/fx.h"
#include "tools/cli_headroom.h"
#include "tools/cli_operator.h"
#include "tools/cli_out.h"
#include "tools/cli_table.h"

static const char *quota_text(char *buf, size_t cap, double used, long long limit) {
    if (limit < 0)
        snprintf(buf, cap, "%g in use, unlimited", used);
    else
        snprintf(buf, cap, "%g of %lld in use, %g left", used, limit, fmax(0, (double)limit - used));
    return buf;
}

static const char *budget_text(char *buf, size_t cap, double used, const struct aiq_budget *b) {
    char win[32];
    if (b->gpu_hours < 0)
        snprintf(buf, cap, "no budget");
    else
        snprintf(buf, cap, "%.4g of %.6g GPU-hours used per %s, %.4g left", used, b->gpu_hours,
                 cli_human_duration(win, sizeof win, b->window_s > 0 ? b->window_s : 2592000),
                 fmax(0, b->gpu_hours - used));
    return buf;
}

/* Asks the operator for the journal of a job: GET URL/journal?job=NS/NAME.
 * Prints what it got or why it could not. */
static void print_journal(const struct cli_opts *o, const struct cli_job *j, json_object *out_doc) {
    char key[2 * AIQ_MAX_NAME + 2], esc[3 * sizeof key], uesc[3 * sizeof j->uid];
    char path[sizeof esc + sizeof uesc + 64], api[sizeof key + sizeof uesc + 64];
    json_object *resp = NULL;
    aiq_err e;
    aiq_err_clear(&e);
    snprintf(key, sizeof key, "%s/%s", j->ns, j->name);
    aiq_rc rc = kube_query_escape(esc, sizeof esc, key, &e);
    if (rc == AIQ_OK)
        rc = kube_query_escape(uesc, sizeof uesc, j->uid, &e);
    if (rc == AIQ_OK) {
        snprintf(path, sizeof path, "/journal?job=%s&uid=%s&limit=10", esc, uesc);
        snprintf(api, sizeof api, "/namespaces/%s/journals/%s?uid=%s&limit=10", j->ns, j->name,
                 uesc);
        rc = cli_operator_get(o, api, path, &resp, &e);
    }
    json_object *items = rc == AIQ_OK ? cli_items_of(resp) : NULL;
    if (out_doc) {
        if (items)
            cli_add(out_doc, "journal", json_object_get(items));
        else
            cli_add_str(out_doc, "journalError", e.message[0] ? e.message : "no items in the answer");
    } else if (!items) {
        printf("%sJournal:%s   %snot available%s: the operator at %s %s%s\n", cli_c.bold, cli_c.off, cli_c.yellow,
               cli_c.off, cli_operator_where(o),
               !e.http_status ? "is not reachable: "
               : o->operator_url ? "does not serve /journal: " : "answered: ",
               e.message[0] ? e.message : "no items in the answer");
        printf("           (kubectl describe shows the Events)\n");
    } else {
        size_t n = json_object_array_length(items);
        printf("%sJournal:%s   %zu recent entr%s\n", cli_c.bold, cli_c.off, n, n == 1 ? "y" : "ies");
        for (size_t i = 0; i < n; i++) {
            json_object *it = json_object_array_get_idx(items, i);
            char t[40];
            cli_time_text(t, sizeof t, cli_jnum(it, "t", 0));
            const char *ty = aiq_jstr(it, "type");
            if (ty && strcmp(ty, "decision") == 0)
                printf("  %s  cycle %-6.0f %-6s pos %-4.0f %s%s%s\n", t, cli_jnum(it, "cycle", 0),
                       aiq_jstr(it, "action") ? aiq_jstr(it, "action") : "?", cli_jnum(it, "position", 0),
                       aiq_jstr(it, "reason") ? aiq_jstr(it, "reason") : "", aiq_jstr(it, "message") ? ": " : "",
                       aiq_jstr(it, "message") ? aiq_jstr(it, "message") : "");
            else
                printf("  %s  event %s\n", t, aiq_jstr(it, "kind") ? aiq_jstr(it, "kind") : "?");
        }
    }
    json_object_put(resp);
}

/* Preemption and resizing from the job's status: status.preemptions,
 * status.currentReplicas and the Preempted / Preempting / Resized
 * conditions (reason and message, each naming the other job). Into doc
 * when given, else printed. */
static void explain_preemption(json_object *raw, json_object *doc) {
    static const char *const types[] = {"Preempted", "Preempting", "Resized"};
    json_object *st = aiq_jget(raw, "status"), *conds = aiq_jget(st, "conditions");
    double npre = cli_jnum(st, "preemptions", 0), cur = cli_jnum(st, "currentReplicas", 0);
    json_object *arr = doc ? json_object_new_array() : NULL;
    int shown = 0;
    if (doc) {
        cli_add_int(doc, "preemptions", (long)npre);
        if (cur > 0)
            cli_add_int(doc, "currentReplicas", (long)cur);
    } else {
        printf("%sPreemption:%s %s", cli_c.bold, cli_c.off, npre > 0 ? "" : "never preempted");
        if (npre > 0)
            printf("preempted %.0f time%s (not counted against backoffLimit)", npre,
                   npre == 1 ? "" : "s");
        if (cur > 0)
            printf("; %.0f replica%s now", cur, cur == 1 ? "" : "s");
        printf("\n");
    }
    for (size_t i = 0; conds && json_object_is_type(conds, json_type_array) &&
                       i < json_object_array_length(conds); i++) {
        json_object *c = json_object_array_get_idx(conds, i);
        const char *ty = aiq_jstr(c, "type");
        bool ours = false;
        for (int k = 0; k < 3 && ty; k++)
            ours |= strcmp(ty, types[k]) == 0;
        if (!ours || !aiq_jstr(c, "status") || strcmp(aiq_jstr(c, "status"), "True") != 0)
            continue;
        if (doc) {
            json_object *x = json_object_new_object();
            cli_add_str(x, "type", ty);
            cli_add_str(x, "reason", aiq_jstr(c, "reason"));
            cli_add_str(x, "message", aiq_jstr(c, "message"));
            cli_push(arr, x);
        } else {
            printf("           %s (%s): %s\n", ty, aiq_jstr(c, "reason") ? aiq_jstr(c, "reason") : "?",
                   aiq_jstr(c, "message") ? aiq_jstr(c, "message") : "");
        }
        shown++;
    }
    if (doc)
        cli_add(doc, "preemption", arr);
    else if (npre > 0 && shown == 0)
        printf("           (no Preempted condition: the status was rewritten since)\n");
}

/* The usable nodes of w as the queue sees them (node_facts, strings
 * borrowed from w->nodes_list), with what admitted and running AIJobs
 * hold per their status.placement taken off. Pods that are not aiq's are
 * not counted (the operator counts them; explain says so). Returns the
 * number of nodes in *out (caller frees), -1 on ENOMEM. */
static int hr_nodes(const struct cli_snapshot *w, struct q_node **out) {
    json_object *nit = cli_items_of(w->nodes_list), *jit = cli_items_of(w->jobs_list);
    size_t nn = nit ? json_object_array_length(nit) : 0;
    struct q_node *q = calloc(nn + 1, sizeof *q);
    int n = 0;
    if (!q)
        return -1;
    for (size_t i = 0; i < nn; i++) {
        struct node_facts f;
        if (node_facts_read(json_object_array_get_idx(nit, i), &f) == 0 && !f.excluded)
            q[n++] = f.q;
    }
    for (size_t i = 0; jit && i < json_object_array_length(jit); i++) {
        json_object *job = json_object_array_get_idx(jit, i), *st = aiq_jget(job, "status");
        const char *ph = aiq_jstr(st, "phase");
        json_object *pl = aiq_jget(st, "placement");
        struct aiq_aijob aj;
        aiq_err e;
        aiq_err_clear(&e);
        if (!ph || (strcmp(ph, "Admitted") != 0 && strcmp(ph, "Running") != 0) || !pl ||
            !json_object_is_type(pl, json_type_array) || aiq_aijob_from_json(job, &aj, &e) != AIQ_OK)
            continue; /* holds nothing, or a job the operator would not run either */
        const struct aiq_resources *r = &aj.spec.resources;
        for (size_t k = 0; k < json_object_array_length(pl); k++) {
            json_object *p = json_object_array_get_idx(pl, k), *gi = aiq_jget(p, "gpuIndexes");
            const char *node = aiq_jstr(p, "node");
            for (int x = 0; node && x < n; x++) {
                if (strcmp(q[x].name, node) != 0)
                    continue;
                q[x].cpu_used += r->cpu_milli;
                q[x].mem_used += r->memory_bytes;
                for (size_t g = 0; gi && json_object_is_type(gi, json_type_array) &&
                                   g < json_object_array_length(gi); g++) {
                    int idx = json_object_get_int(json_object_array_get_idx(gi, g));
                    if (idx < 0 || idx >= q[x].ngpus)
                        continue;
                    int64_t *u = &q[x].gpu_mem_used[idx], t = q[x].gpu_mem_total[idx];
                    *u = r->gpus > 0 ? t : *u + aiq_jmib(p, "gpuMemory", "gpuMemoryMiB");
                    *u = *u > t ? t : *u;
                }
            }
        }
        aiq_aijob_deinit(&aj);
    }
    *out = q;
    return n;
}

/* The group's or user's quota, use and budget from its object. */
static void hr_owner(struct cli_hr_owner *ow, const char *label, const struct aiq_quota *q,
                     const struct aiq_budget *b, json_object *status) {
    json_object *u = aiq_jget(status, "usage");
    ow->label = label;
    ow->quota = *q;
    ow->used = (struct aiq_quota){(int64_t)cli_jnum(u, "gpus", 0), aiq_jmib(u, "gpuMemory", "gpuMemoryMiB"),
                                  (int64_t)cli_jnum(u, "cpu", 0), (int64_t)cli_jnum(u, "memory", 0),
                                  (int64_t)cli_jnum(u, "jobs", 0)};
    ow->budget_gpu_hours = b->gpu_hours;
    ow->used_gpu_hours = cli_jnum(u, "gpuHours", 0);
}

/* What a waiting job waits for when no resource row blocks it. */
static const char *hr_other(const char *reason) {
    static const struct { const char *reason, *text; } t[] = {
        {"BehindHigherPriority", "its turn: a job ahead of it (higher level or score) cannot start yet"},
        {"GroupConflict", "a Group hold: two Groups claim its namespace"},
        {"NoGroup", "a Group hold: no Group takes its namespace"},
        {"Suspended", "spec.suspend to be false"},
        {"Preempting", "the jobs being stopped to make room for it"},
        {"WaitingToBorrow", "quota its cohort can lend"},
    };
    for (size_t i = 0; reason && i < sizeof t / sizeof t[0]; i++)
        if (strcmp(reason, t[i].reason) == 0)
            return t[i].text;
    return NULL;
}

/* The headroom rows of waiting job j (raw: its object; g, uq: its group
 * and UserQuota, -1 = none) into rows[0..CLI_HR_MAX_ROWS); returns how
 * many. *decoded says whether its spec decoded (e says why not). */
static int hr_rows(const struct cli_snapshot *w, const struct cli_job *j, json_object *raw, int g,
                   int uq, struct cli_hr_row *rows, bool *decoded, aiq_err *e) {
    struct aiq_aijob aj;
    struct q_node *nodes = NULL;
    struct cli_hr_owner own[2];
    char gl[AIQ_MAX_NAME + 8], ul[AIQ_MAX_NAME + 8];
    int nown = 0, nrows = 0, nn = 0;
    *decoded = aiq_aijob_from_json(raw, &aj, e) == AIQ_OK;
    if (!*decoded)
        return 0;
    bool known = w->nodes_list != NULL; /* else no capacity rows: unknown, not 0 */
    nn = known ? hr_nodes(w, &nodes) : 0;
    struct cli_hr_ask a = {aj.spec.replicas, aj.spec.resources.gpus, aj.spec.resources.gpu_memory_mib,
                           aj.spec.resources.cpu_milli, aj.spec.resources.memory_bytes,
                           cli_jnum(aiq_jget(raw, "status"), "predictedRuntime", 0) > 0
                               ? cli_jnum(aiq_jget(raw, "status"), "predictedRuntime", 0)
                               : aj.spec.estimated_runtime_s,
                           aj.spec.resources.gpu_model, aj.spec.domain};
    snprintf(gl, sizeof gl, "group %s", j->group);
    snprintf(ul, sizeof ul, "user %s", j->user);
    if (g >= 0)
        hr_owner(&own[nown++], gl, &w->groups[g].spec.quota, &w->groups[g].spec.budget,
                 w->group_status[g]);
    if (uq >= 0)
        hr_owner(&own[nown++], ul, &w->uqs[uq].spec.quota, &w->uqs[uq].spec.budget,
                 w->uq_status[uq]);
    nrows = nn < 0 ? 0
                   : cli_headroom(nodes, known ? nn : -1, &a, own, nown, rows,
                                  CLI_HR_MAX_ROWS);
    aiq_aijob_deinit(&aj);
    free(nodes);
    return nrows;
}

/* The resources of the rows that block, "GPUs, cpu", into blk (cap
 * bytes, "" to start with); returns its length (0: none blocks). */
static size_t hr_blockers(const struct cli_hr_row *rows, int nrows, char *blk, size_t cap) {
    size_t bl = 0;
    for (int i = 0; i < nrows; i++) {
        int n = rows[i].blocks ? snprintf(blk + bl, cap - bl, "%s%s", bl ? ", " : "",
                                          rows[i].resource) : 0;
        bl = n > 0 && (size_t)n < cap - bl ? bl + (size_t)n : bl;
    }
    return bl;
}

/* The rows into doc as "headroom", with "blockedBy" (blk, may be NULL)
 * and "headroomError" when err is set. */
static void hr_doc(json_object *doc, const struct cli_hr_row *rows, int nrows, const char *blk,
                   const char *err) {
    json_object *arr = json_object_new_array();
    for (int i = 0; i < nrows; i++) {
        json_object *x = json_object_new_object();
        cli_add_str(x, "resource", rows[i].resource);
        cli_add_str(x, "need", rows[i].need);
        cli_add_str(x, "available", rows[i].avail);
        cli_add(x, "blocks", json_object_new_boolean(rows[i].blocks));
        cli_push(arr, x);
    }
    cli_add(doc, "headroom", arr);
    cli_add_str(doc, "blockedBy", blk);
    if (err)
        cli_add_str(doc, "headroomError", err);
}

/* The Headroom rows and the Blocked line of waiting job j (blk: what
 * blocks it, or NULL; e: why its spec did not decode). */
static void hr_print(const struct cli_snapshot *w, const struct cli_job *j,
                     const struct cli_hr_row *rows, int nrows, const char *blk, bool decoded,
                     const aiq_err *e) {
    printf("%sHeadroom:%s  what it needs against what is free or left%s\n", cli_c.bold, cli_c.off,
           !w->nodes_list ? "" : " (free: nodes minus aiq's placements; other pods not counted)");
    if (!w->nodes_list)
        printf("           %s(nodes not readable: %s)%s\n", cli_c.dim, w->nodes_err, cli_c.off);
    if (!decoded)
        printf("           %s(the job's spec does not decode: %s)%s\n", cli_c.dim, e->message, cli_c.off);
    int wr = 4;
    for (int i = 0; i < nrows; i++)
        wr = (int)strlen(rows[i].resource) > wr ? (int)strlen(rows[i].resource) : wr;
    for (int i = 0; i < nrows; i++)
        printf("  %-*s  need %s; %s%s%s%s\n", wr, rows[i].resource, rows[i].need, rows[i].avail,
               rows[i].blocks ? cli_c.yellow : "", rows[i].blocks ? "  <- blocks" : "", cli_c.off);
    const char *other = hr_other(j->reason);
    if (blk)
        printf("%sBlocked:%s   %sby %s%s", cli_c.bold, cli_c.off, cli_c.yellow, blk, cli_c.off);
    else
        printf("%sBlocked:%s   %snone of these; it waits for %s%s", cli_c.bold, cli_c.off, cli_c.yellow,
               other ? other : j->reason[0] ? j->reason : "the next cycle", cli_c.off);
    printf(" (%s%s%s)\n", j->reason[0] ? j->reason : "-", j->message[0] ? ": " : "", j->message);
}

/* Headroom of job j (raw: its object): each resource it needs against
 * what is free or left, into doc ("headroom", "blockedBy") when given,
 * else printed with the Blocked line. */
static void explain_headroom(const struct cli_snapshot *w, const struct cli_job *j, json_object *raw,
                             int g, int uq, json_object *doc) {
    struct cli_hr_row rows[CLI_HR_MAX_ROWS];
    char blk[512] = "";
    bool decoded = false;
    aiq_err e;
    aiq_err_clear(&e);
    bool waiting = cli_job_waiting(j);
    int nrows = waiting ? hr_rows(w, j, raw, g, uq, rows, &decoded, &e) : 0;
    size_t bl = hr_blockers(rows, nrows, blk, sizeof blk);
    if (doc) {
        hr_doc(doc, rows, nrows, bl ? blk : NULL, waiting && !decoded ? e.message : NULL);
        return;
    }
    if (!waiting) {
        printf("%sBlocked:%s   nothing: not waiting (%s%s%s)\n", cli_c.bold, cli_c.off,
               j->reason[0] ? j->reason : j->phase, j->message[0] ? ": " : "", j->message);
        return;
    }
    hr_print(w, j, rows, nrows, bl ? blk : NULL, decoded, &e);
}

/* What explain shows of one job, gathered once for both outputs. */
struct explain {
    struct cli_job *j;
    int g, uq;                  /* the job's group and UserQuota, -1 = none */
    json_object *raw;           /* the AIJob object (borrowed from the world) */
    json_object *terms;         /* score terms: live, else status (borrowed) */
    json_object *live;          /* the operator's live answer (owned), or NULL */
    json_object *live_it;       /* its item for the job (borrowed) */
    aiq_err le;                 /* why there is no live view */
    struct opst_term local[OPST_MAX_TERMS]; /* terms computed here when none came */
    int nlocal;
    const char *formula;
    json_object *levels;        /* the active policy's levels (borrowed) */
    int nlv, local_level;       /* level count; the first whose `when` holds here */
    bool lv_hold[AIQ_MAX_LEVELS];
    double g_used, g_h, u_used, u_h; /* GPUs in use and GPU-hours: group, user */
    uint64_t used_f, approx;    /* factors the policy uses; those approximated */
};

/* Finds the job's group, UserQuota and AIJob object. */
static void explain_find(struct cli_snapshot *w, struct explain *x) {
    struct cli_job *j = x->j;
    x->g = -1;
    for (int i = 0; i < w->ngroups; i++)
        if (j->group[0] && strcmp(w->groups[i].meta.name, j->group) == 0)
            x->g = i;
    x->uq = -1;
    for (int i = 0; i < w->nuqs; i++)
        if (x->g >= 0 && w->uqs[i].spec.user && strcmp(w->uqs[i].spec.user, j->user) == 0 &&
            cli_group_of_ns(&w->cw, w->uqs[i].meta.namespace_) == x->g)
            x->uq = i;
    json_object *jit = cli_items_of(w->jobs_list);
    x->raw = NULL;
    for (size_t i = 0; jit && i < json_object_array_length(jit); i++) {
        json_object *m = aiq_jget(json_object_array_get_idx(jit, i), "metadata");
        if (aiq_jstr(m, "name") && strcmp(aiq_jstr(m, "name"), j->name) == 0 && aiq_jstr(m, "namespace") &&
            strcmp(aiq_jstr(m, "namespace"), j->ns) == 0)
            x->raw = json_object_array_get_idx(jit, i);
    }
}

/* The score terms: a waiting job's live position, score and terms from
 * the operator (the status keeps them as of its last write), else the
 * status's, else computed here. */
static void explain_terms(const struct cli_opts *o, struct cli_snapshot *w, struct explain *x) {
    struct cli_job *j = x->j;
    x->terms = aiq_jget(aiq_jget(x->raw, "status"), "scoreTerms");
    aiq_err_clear(&x->le);
    x->live = cli_job_waiting(j) ? cli_live_queue(o, j->ns, j->name, &x->le) : NULL;
    x->live_it = x->live ? json_object_array_get_idx(cli_items_of(x->live), 0) : NULL;
    if (x->live_it) {
        cli_live_apply(j, x->live_it);
        if (aiq_jget(x->live_it, "terms"))
            x->terms = aiq_jget(x->live_it, "terms");
    }
    x->nlocal = 0;
    if (!x->terms || !json_object_is_type(x->terms, json_type_array))
        x->nlocal = oppolicy_explain(w->policy, j->f, x->local, OPST_MAX_TERMS);
}

/* The formula and levels, which `when` holds on the rebuilt factors, the
 * usage against quota and budget, and the factors used and approximated. */
static void explain_policy(struct cli_snapshot *w, struct explain *x) {
    struct cli_job *j = x->j;
    int g = x->g, uq = x->uq;
    x->formula = aiq_jstr(aiq_jget(w->active_policy, "spec"), "formula");
    if (!x->formula)
        x->formula = "job.priority";
    json_object *levels = aiq_jget(aiq_jget(w->active_policy, "spec"), "levels");
    x->levels = levels;
    x->nlv = levels && json_object_is_type(levels, json_type_array) ? (int)json_object_array_length(levels) : 0;
    x->local_level = -1;
    for (int i = 0; i < x->nlv && i < AIQ_MAX_LEVELS; i++) {
        const char *when = aiq_jstr(json_object_array_get_idx(levels, i), "when");
        if (!when) {
            x->lv_hold[i] = true;
        } else {
            aiq_err e;
            aiq_err_clear(&e);
            fx_prog *p = fx_compile(when, FX_PREDICATE, &e);
            x->lv_hold[i] = p && fx_eval(p, j->f) != 0;
            fx_free(p);
        }
        if (x->lv_hold[i] && x->local_level < 0)
            x->local_level = i;
    }
    x->g_used = g >= 0 ? cli_jnum(aiq_jget(w->group_status[g], "usage"), "gpus", 0) : 0;
    x->g_h = g >= 0 ? cli_jnum(aiq_jget(w->group_status[g], "usage"), "gpuHours", 0) : 0;
    x->u_used = uq >= 0 ? cli_jnum(aiq_jget(w->uq_status[uq], "usage"), "gpus", 0) : 0;
    x->u_h = uq >= 0 ? cli_jnum(aiq_jget(w->uq_status[uq], "usage"), "gpuHours", 0) : 0;
    x->used_f = cli_factors_used(x->formula);
    for (int i = 0; i < x->nlv; i++)
        x->used_f |= cli_factors_used(aiq_jstr(json_object_array_get_idx(levels, i), "when"));
    x->approx = x->used_f & j->approx;
}

/* explain -o json|yaml. */
static void explain_doc(const struct cli_opts *o, struct cli_snapshot *w, const struct explain *x) {
    struct cli_job *j = x->j;
    int g = x->g, uq = x->uq, local_level = x->local_level, nlocal = x->nlocal;
    json_object *raw = x->raw, *terms = x->terms, *live_it = x->live_it, *levels = x->levels;
    const struct opst_term *local = x->local;
    const char *formula = x->formula;
    double g_used = x->g_used, u_used = x->u_used;
    uint64_t used_f = x->used_f, approx = x->approx;
    char b1[256];
    json_object *doc = json_object_new_object(), *a;
    cli_add_str(doc, "namespace", j->ns);
    cli_add_str(doc, "name", j->name);
    cli_add_str(doc, "user", j->user);
    cli_add_str(doc, "group", j->group[0] ? j->group : NULL);
    cli_add_str(doc, "phase", j->phase[0] ? j->phase : "Pending");
    cli_add_str(doc, "policy", cli_policy_name(w));
    cli_add_str(doc, "formula", formula);
    cli_add_str(doc, "level", j->level[0] ? j->level : NULL);
    cli_add_str(doc, "levelByLocalEval", local_level >= 0 ? aiq_jstr(json_object_array_get_idx(levels, local_level), "name") : NULL);
    cli_add_int(doc, "position", j->position);
    if (j->has_score)
        cli_add(doc, "score", cli_num6(j->score));
    else
        cli_add_null(doc, "score");
    if (terms)
        cli_add(doc, "scoreTerms", json_object_get(terms));
    else {
        a = json_object_new_array();
        for (int i = 0; i < nlocal; i++) {
            json_object *t = json_object_new_object();
            cli_add_str(t, "name", local[i].name);
            cli_add_num(t, "value", local[i].value);
            cli_push(a, t);
        }
        cli_add(doc, "scoreTerms", a);
    }
    json_object *f = json_object_new_object();
    for (int i = 0; i < FX_NFACTORS; i++)
        if (used_f & (1ull << i))
            cli_add_num(f, fx_factor_name(i), j->f[i]);
    cli_add(doc, "factors", f);
    cli_add_factor_names(doc, "approximatedFactors", approx);
    cli_add_num(doc, "groupGPUsInUse", g_used);
    if (g >= 0)
        cli_add_int(doc, "groupGPUQuota", w->groups[g].spec.quota.gpus);
    cli_add_num(doc, "userGPUsInUse", u_used);
    if (uq >= 0)
        cli_add_int(doc, "userGPUQuota", w->uqs[uq].spec.quota.gpus);
    cli_add_str(doc, "reason", j->reason[0] ? j->reason : NULL);
    cli_add_str(doc, "message", j->message[0] ? j->message : NULL);
    explain_headroom(w, j, raw, g, uq, doc);
    cli_time_text(b1, sizeof b1, j->eta);
    cli_add_str(doc, "estimatedStartTime", j->eta > 0 ? b1 : NULL);
    cli_add_str(doc, "source", live_it ? "live" : "status");
    explain_preemption(raw, doc);
    print_journal(o, j, doc);
    cli_emit(doc, o->out);
    json_object_put(doc);
}

/* explain as text. */
static void explain_text(const struct cli_opts *o, struct cli_snapshot *w, const struct explain *x) {
    struct cli_job *j = x->j;
    int g = x->g, uq = x->uq, nlv = x->nlv, local_level = x->local_level, nlocal = x->nlocal;
    json_object *raw = x->raw, *terms = x->terms, *live_it = x->live_it, *levels = x->levels;
    const struct opst_term *local = x->local;
    const char *formula = x->formula;
    double g_used = x->g_used, g_h = x->g_h, u_used = x->u_used, u_h = x->u_h;
    uint64_t used_f = x->used_f, approx = x->approx;
    char b1[256], b2[256];
    const bool *lv_hold = x->lv_hold;
    printf("%sJob:%s       %s/%s   user %s, group %s\n", cli_c.bold, cli_c.off, j->ns, j->name, j->user,
           j->group[0] ? j->group : "<none>");
    printf("%sPhase:%s     %s", cli_c.bold, cli_c.off, j->phase[0] ? j->phase : "Pending (no status yet)");
    if (j->position > 0)
        printf(", position %d in the queue", j->position);
    if (j->queued > 0 && cli_job_waiting(j))
        printf(", waiting %s", cli_human_duration(b1, sizeof b1, w->cw.now - j->queued));
    printf("\n%sPolicy:%s    %s\n", cli_c.bold, cli_c.off, cli_policy_name(w));
    printf("%sFormula:%s   %s\n", cli_c.bold, cli_c.off, cli_one_line(b1, sizeof b1, formula));
    printf("%sScore:%s     %s%s\n", cli_c.bold, cli_c.off, j->has_score ? cli_num_text(b1, sizeof b1, j->score) : "<none>",
           live_it ? " = the sum of these terms (live, from the operator's last cycle):"
           : terms ? " = the sum of these terms (status.scoreTerms, as last written):"
           : nlocal ? " (terms computed locally):" : "");
    if (cli_job_waiting(j) && !live_it)
        printf("           %s(live view not available: %s; position and score as last written)%s\n",
               cli_c.dim, x->le.message[0] ? x->le.message : "the job is not waiting in the operator's queue",
               cli_c.off);
    if (terms && json_object_is_type(terms, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(terms); i++) {
            json_object *t = json_object_array_get_idx(terms, i);
            printf("  %12s  %s\n", cli_num_text(b1, sizeof b1, cli_jnum(t, "value", 0)), aiq_jstr(t, "name") ? aiq_jstr(t, "name") : "?");
        }
    } else {
        for (int i = 0; i < nlocal; i++)
            printf("  %12s  %s\n", cli_num_text(b1, sizeof b1, local[i].value), local[i].name);
    }
    printf("%sLevel:%s     %s%s%s", cli_c.bold, cli_c.off, cli_c.cyan, j->level[0] ? j->level : "<none>", cli_c.off);
    if (nlv == 0)
        printf(" (the built-in policy has one level)\n");
    else
        printf(" -- the first level whose `when` holds:\n");
    for (int i = 0; i < nlv && i < AIQ_MAX_LEVELS; i++) {
        json_object *lv = json_object_array_get_idx(levels, i);
        const char *when = aiq_jstr(lv, "when");
        printf("  %s %-12s %s\n", lv_hold[i] ? (i == local_level ? "=>" : " +") : "  ",
               aiq_jstr(lv, "name") ? aiq_jstr(lv, "name") : "?", when ? when : "(catch-all)");
    }
    if (local_level >= 0 && j->level[0] &&
        strcmp(aiq_jstr(json_object_array_get_idx(levels, local_level), "name"), j->level) != 0)
        printf("  (evaluated here it lands in %s; the operator put it in %s -- a starvation\n"
               "   promotion, or one of the approximated factors below differs)\n",
               aiq_jstr(json_object_array_get_idx(levels, local_level), "name"), j->level);
    printf("%sFactors:%s  ", cli_c.bold, cli_c.off);
    int nf = 0;
    for (int i = 0; i < FX_NFACTORS; i++)
        if (used_f & (1ull << i))
            printf("%s%s=%s%s", nf++ ? ", " : "", fx_factor_name(i), cli_num_text(b1, sizeof b1, j->f[i]),
                   (approx & (1ull << i)) ? "~" : "");
    printf(nf ? "\n" : "(none used by the policy)\n");
    if (approx)
        printf("           (~ approximated from the objects' status: the operator's store has the exact value)\n");
    printf("%sQuota:%s     group %s: %s\n", cli_c.bold, cli_c.off, j->group[0] ? j->group : "<none>",
           g >= 0 ? quota_text(b1, sizeof b1, g_used, (long long)w->groups[g].spec.quota.gpus) : "no group");
    printf("           user %s: %s\n", j->user,
           uq >= 0 ? quota_text(b2, sizeof b2, u_used, (long long)w->uqs[uq].spec.quota.gpus)
                   : "no UserQuota (bounded by the group)");
    printf("           this job needs %ld GPU%s\n", j->gpus, j->gpus == 1 ? "" : "s");
    printf("%sBudget:%s    group: %s\n", cli_c.bold, cli_c.off,
           g >= 0 ? budget_text(b1, sizeof b1, g_h, &w->groups[g].spec.budget) : "no group");
    printf("           user: %s\n", uq >= 0 ? budget_text(b2, sizeof b2, u_h, &w->uqs[uq].spec.budget) : "no budget");
    explain_headroom(w, j, raw, g, uq, NULL);
    cli_time_text(b1, sizeof b1, j->eta);
    printf("%sETA:%s       %s (%s)\n", cli_c.bold, cli_c.off, b1, cli_eta_text(b2, sizeof b2, j->eta, w->cw.now));
    explain_preemption(raw, NULL);
    print_journal(o, j, NULL);
}

int cli_explain_cmd(const struct cli_opts *o, struct cli_snapshot *w) {
    const char *name = o->args[1];
    struct explain x;
    memset(&x, 0, sizeof x);
    if (!name)
        return cli_fail("explain needs a job name: kubectl aiq explain JOB [-n NS]");
    for (int i = 0; i < w->njobs; i++)
        if (strcmp(w->jobs[i].name, name) == 0 && (o->all_ns || strcmp(w->jobs[i].ns, o->ns) == 0))
            x.j = &w->jobs[i];
    if (!x.j)
        return cli_fail("aijobs.aiq.dev \"%s\" not found in namespace %s", name, o->all_ns ? "(any)" : o->ns);
    explain_find(w, &x);
    /* the time factors as the active policy's scores read them (its
     * rescore interval's start) */
    cli_job_clock(x.j, w->policy);
    explain_terms(o, w, &x);
    explain_policy(w, &x);
    if (o->out != CLI_OUT_TABLE)
        explain_doc(o, w, &x);
    else
        explain_text(o, w, &x);
    json_object_put(x.live);
    return 0;
}

