/* cli_usage.c -- `kubectl aiq usage` (see cli_usage.h): one row per
 * group, then one per user in it (its UserQuota, or a member without
 * one, counted from its jobs). */
#include "tools/cli_usage.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/model.h"
#include "tools/cli_out.h"
#include "tools/cli_table.h"

/* One row: a group's (user "*") or a user's in it. */
struct usage_row {
    const char *user, *status;
    int level;
    long long gq, jq;                  /* GPU and job quota, -1 = not limited */
    double gpus, jobs, h, fsv;         /* in use, GPU-hours used, fair share */
    const struct aiq_budget *bud;      /* NULL: none */
};

static const char *lim_text(char *buf, size_t cap, long long v) {
    if (v < 0)
        snprintf(buf, cap, "-");
    else
        snprintf(buf, cap, "%lld", v);
    return buf;
}

/* The row of group g, from its spec and status. */
static void usage_group_row(const struct cli_snapshot *w, int g, struct usage_row *r) {
    const struct aiq_group *gr = &w->groups[g];
    json_object *gu = aiq_jget(w->group_status[g], "usage");
    double fsu;
    r->user = "*";
    r->status = "";
    r->level = gr->spec.level;
    r->gq = gr->spec.quota.gpus;
    r->jq = gr->spec.quota.jobs;
    r->gpus = cli_jnum(gu, "gpus", 0);
    r->jobs = cli_jnum(gu, "jobs", 0);
    r->h = cli_jnum(gu, "gpuHours", 0);
    r->bud = &gr->spec.budget;
    cli_fairshare(&w->cw, g, NULL, &r->fsv, &fsu);
}

/* The row of UserQuota u in group g, from its spec and status; false
 * when u is not in g. */
static bool usage_uq_row(const struct cli_snapshot *w, int g, int u, struct usage_row *r) {
    const struct aiq_group *gr = &w->groups[g];
    const struct aiq_userquota *uq = &w->uqs[u];
    double fsg;
    if (cli_group_of_ns(&w->cw, uq->meta.namespace_) != g)
        return false;
    json_object *st = w->uq_status[u];
    r->user = uq->spec.user;
    r->gq = uq->spec.quota.gpus;
    r->jq = uq->spec.quota.jobs;
    r->gpus = cli_jnum(aiq_jget(st, "usage"), "gpus", 0);
    r->jobs = cli_jnum(aiq_jget(st, "usage"), "jobs", 0);
    r->h = cli_jnum(aiq_jget(st, "usage"), "gpuHours", 0);
    r->bud = &uq->spec.budget;
    r->status = aiq_jget(st, "accepted") ? (aiq_jtrue(st, "accepted") ? "Accepted" : "Rejected") : "Pending";
    r->level = 0;
    for (int k = 0; k < gr->spec.nmembers; k++)
        if (strcmp(gr->spec.members[k].user, r->user) == 0)
            r->level = gr->spec.members[k].level;
    cli_fairshare(&w->cw, g, r->user, &fsg, &r->fsv);
    return true;
}

/* The row of member m of group g without a UserQuota, counted from its
 * admitted and running jobs; false when it has a UserQuota in g. */
static bool usage_member_row(const struct cli_snapshot *w, int g, const struct aiq_member *m,
                             struct usage_row *r) {
    const struct aiq_group *gr = &w->groups[g];
    double fsg;
    bool has_uq = false;
    for (int k = 0; k < w->nuqs; k++)
        has_uq |= w->uqs[k].spec.user && strcmp(w->uqs[k].spec.user, m->user) == 0 &&
                  cli_group_of_ns(&w->cw, w->uqs[k].meta.namespace_) == g;
    if (has_uq)
        return false;
    r->user = m->user;
    r->level = m->level;
    r->gq = r->jq = -1;
    r->gpus = r->jobs = 0;
    for (int k = 0; k < w->njobs; k++) { /* counted from its jobs */
        const struct cli_job *jb = &w->jobs[k];
        if (strcmp(jb->group, gr->meta.name) == 0 && strcmp(jb->user, m->user) == 0 &&
            (strcmp(jb->phase, "Admitted") == 0 || strcmp(jb->phase, "Running") == 0)) {
            r->gpus += (double)jb->gpus;
            r->jobs++;
        }
    }
    r->h = 0;
    r->bud = NULL;
    r->status = "member";
    cli_fairshare(&w->cw, g, r->user, &fsg, &r->fsv);
    return true;
}

/* Adds row r of group gr (its own row when group_row) to items (-o
 * json|yaml) or else to t. Returns 0, or 1 after printing the error. */
static int usage_add(const struct aiq_group *gr, bool group_row, const struct usage_row *r,
                     json_object *items, cli_table *t) {
    char lvl[16], q1[24], q2[24], q3[24], q4[24], q5[24], q6[24], fs[24];
    snprintf(fs, sizeof fs, "%.3f", r->fsv);
    if (items) {
        json_object *it = json_object_new_object();
        cli_add_str(it, "group", gr->meta.name);
        cli_add_str(it, "user", group_row ? NULL : r->user);
        cli_add_int(it, "level", r->level);
        cli_add_int(it, "gpuQuota", r->gq);
        cli_add_num(it, "gpusUsed", r->gpus);
        cli_add_int(it, "jobsQuota", r->jq);
        cli_add_num(it, "jobsUsed", r->jobs);
        cli_add_num(it, "budgetGPUHours", r->bud ? r->bud->gpu_hours : -1);
        cli_add_num(it, "usedGPUHours", r->h);
        cli_add_num(it, "fairshare", r->fsv);
        if (!group_row)
            cli_add_str(it, "status", r->status);
        cli_push(items, it);
        return 0;
    }
    snprintf(lvl, sizeof lvl, "%d", r->level);
    snprintf(q2, sizeof q2, "%g", r->gpus);
    snprintf(q4, sizeof q4, "%g", r->jobs);
    if (r->bud && r->bud->gpu_hours >= 0)
        snprintf(q5, sizeof q5, "%g", r->bud->gpu_hours);
    else
        snprintf(q5, sizeof q5, "-");
    snprintf(q6, sizeof q6, "%.4g", r->h);
    const char *row[] = {group_row ? gr->meta.name : "", r->user, lvl, lim_text(q1, sizeof q1, r->gq),
                         q2, lim_text(q3, sizeof q3, r->jq), q4, q5, q6, fs, r->status};
    if (cli_table_add(t, row) != AIQ_OK)
        return cli_fail("out of memory");
    return 0;
}

/* Group g's row, then one per user (UserQuotas, then members without
 * one) that --user lets through. Returns 0, or 1 after printing. */
static int usage_group(const struct cli_opts *o, const struct cli_snapshot *w, int g,
                       json_object *items, cli_table *t) {
    const struct aiq_group *gr = &w->groups[g];
    for (int r = -1; r < w->nuqs + gr->spec.nmembers; r++) {
        struct usage_row row;
        if (r < 0)
            usage_group_row(w, g, &row);
        else if (r < w->nuqs ? !usage_uq_row(w, g, r, &row)
                             : !usage_member_row(w, g, &gr->spec.members[r - w->nuqs], &row))
            continue;
        if (o->user && r >= 0 && strcmp(o->user, row.user) != 0)
            continue;
        if (usage_add(gr, r < 0, &row, items, t))
            return 1;
    }
    return 0;
}

int cli_usage_cmd(const struct cli_opts *o, struct cli_snapshot *w) {
    cli_table *t = NULL;
    json_object *doc = NULL, *items = NULL;
    int rc = 0, shown = 0;
    static const char *hdr[] = {"GROUP", "USER", "LEVEL", "GPU-QUOTA", "GPUS-USED",
                                "JOBS-QUOTA", "JOBS-USED", "BUDGET-GPUH", "USED-GPUH", "FAIRSHARE", "STATUS"};
    if (o->out == CLI_OUT_TABLE) {
        t = cli_table_create(11, hdr);
        if (!t)
            return cli_fail("out of memory");
    } else {
        doc = json_object_new_object();
        items = json_object_new_array();
        if (!doc || !items) { /* not the table path: it has no table */
            json_object_put(doc);
            json_object_put(items);
            return cli_fail("out of memory");
        }
        cli_add_str(doc, "apiVersion", AIQ_API_VERSION);
        cli_add_str(doc, "kind", "UsageView");
        cli_add(doc, "items", items);
    }
    for (int g = 0; g < w->ngroups; g++) {
        if (o->group && strcmp(o->group, w->groups[g].meta.name) != 0)
            continue;
        shown++;
        if ((rc = usage_group(o, w, g, items, t)) != 0)
            goto out;
    }
    if (o->group && !shown) {
        rc = cli_fail("groups.aiq.dev \"%s\" not found", o->group);
        goto out;
    }
    if (doc) {
        cli_emit(doc, o->out);
    } else if (cli_table_rows(t) == 0) {
        fputs("No groups found.\n", stderr);
    } else {
        cli_table_print(t, stdout);
        printf("%s(- = not limited; FAIRSHARE is 2^(-usage/shares) like sshare, from the usage the statuses show)%s\n",
               cli_c.dim, cli_c.off);
    }
out:
    cli_table_free(t);
    json_object_put(doc);
    return rc;
}
