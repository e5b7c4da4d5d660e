/* cli_queue.c -- `kubectl aiq queue` (see cli_queue.h). */
#include "tools/cli_queue.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/model.h"
#include "tools/cli_operator.h"
#include "tools/cli_out.h"
#include "tools/cli_table.h"

static bool held(const struct cli_job *j) {
    return strcmp(j->phase, "Suspended") == 0;
}

static const struct cli_snapshot *g_sort_world; /* qsort has no context argument */

static int queue_cmp(const void *va, const void *vb) {
    const struct cli_job *a = va, *b = vb;
    int ha = held(a), hb = held(b);
    if (ha != hb)
        return ha - hb;
    int la = cli_level_rank(g_sort_world, a->level), lb = cli_level_rank(g_sort_world, b->level);
    if (la != lb)
        return la < lb ? -1 : 1;
    int pa = a->position > 0 ? a->position : 0x7fffffff, pb = b->position > 0 ? b->position : 0x7fffffff;
    if (pa != pb)
        return pa < pb ? -1 : 1;
    int k = strcmp(a->ns, b->ns);
    return k ? k : strcmp(a->name, b->name);
}

/* Overlays the live queue on jobs[0..n); returns how many it matched, or
 * -1 (and a note printed unless quiet) when the operator cannot answer. */
static int live_overlay(const struct cli_opts *o, struct cli_job *v, int n, bool quiet,
                        json_object **live_doc) {
    aiq_err e;
    aiq_err_clear(&e);
    json_object *doc = cli_live_queue(o, o->all_ns ? NULL : o->ns, NULL, &e);
    *live_doc = doc;
    if (!doc) {
        if (!quiet)
            printf("%sLive view not available%s: the operator at %s %s%s\n"
                   "  showing the statuses as last written: positions within 10%% beyond the\n"
                   "  first 10, scores as of the last write\n",
                   cli_c.yellow, cli_c.off, cli_operator_where(o),
                   e.http_status ? "answered: " : "is not reachable: ", e.message);
        return -1;
    }
    json_object *items = cli_items_of(doc);
    int matched = 0;
    for (size_t k = 0; k < json_object_array_length(items); k++) {
        json_object *it = json_object_array_get_idx(items, k);
        const char *ns = aiq_jstr(it, "namespace"), *name = aiq_jstr(it, "name");
        for (int i = 0; ns && name && i < n; i++)
            if (strcmp(v[i].ns, ns) == 0 && strcmp(v[i].name, name) == 0) {
                cli_live_apply(&v[i], it);
                matched++;
                break;
            }
    }
    return matched;
}

/* The waiting and held jobs of w that --level and --user let through,
 * copied into v (room for w->njobs); returns how many. */
static int queue_select(const struct cli_opts *o, const struct cli_snapshot *w,
                        struct cli_job *v) {
    int n = 0;
    for (int i = 0; i < w->njobs; i++) {
        const struct cli_job *j = &w->jobs[i];
        if (!cli_job_waiting(j) && !held(j))
            continue;
        if (o->level && strcmp(o->level, j->level) != 0)
            continue;
        if (o->user && strcmp(o->user, j->user) != 0)
            continue;
        v[n++] = *j;
    }
    return n;
}

/* -o json|yaml: the QueueView of v[0..n) (nlive < 0: no live answer;
 * live: the operator's answer, or NULL). */
static void queue_doc(const struct cli_opts *o, const struct cli_snapshot *w,
                      const struct cli_job *v, int n, int nlive, json_object *live) {
    json_object *doc = json_object_new_object(), *items = json_object_new_array();
    cli_add_str(doc, "apiVersion", AIQ_API_VERSION);
    cli_add_str(doc, "kind", "QueueView");
    cli_add_str(doc, "policy", cli_policy_name(w));
    cli_add_str(doc, "source", nlive >= 0 ? "live" : "status");
    if (live) {
        json_object *lt = aiq_jget(live, "time");
        if (lt)
            cli_add(doc, "liveTime", json_object_get(lt));
        else
            cli_add_null(doc, "liveTime"); /* an answer without its time */
    }
    for (int i = 0; i < n; i++) {
        const struct cli_job *j = &v[i];
        json_object *it = json_object_new_object();
        char t[40];
        cli_add_str(it, "namespace", j->ns);
        cli_add_str(it, "name", j->name);
        cli_add_str(it, "user", j->user);
        cli_add_str(it, "group", j->group[0] ? j->group : NULL);
        cli_add_str(it, "phase", j->phase[0] ? j->phase : "Pending");
        cli_add_str(it, "level", j->level[0] ? j->level : NULL);
        cli_add_int(it, "position", j->position);
        cli_add_int(it, "gpus", j->gpus);
        if (j->has_score)
            cli_add(it, "score", cli_num6(j->score));
        else
            cli_add_null(it, "score");
        cli_add_num(it, "waitSeconds", j->queued > 0 ? fmax(0, w->cw.now - j->queued) : 0);
        cli_time_text(t, sizeof t, j->eta);
        cli_add_str(it, "estimatedStartTime", j->eta > 0 ? t : NULL);
        cli_add_str(it, "reason", j->reason[0] ? j->reason : NULL);
        cli_add_str(it, "message", j->message[0] ? j->message : NULL);
        cli_push(items, it);
    }
    cli_add(doc, "items", items);
    cli_emit(doc, o->out);
    json_object_put(doc);
}

/* Adds job j's row to t: a held job dim, an unusual reason in yellow. */
static aiq_rc queue_row(const struct cli_opts *o, const struct cli_snapshot *w, cli_table *t,
                        const struct cli_job *j) {
    char lvl[96], pos[16], gpus[24], score[32], wait[32], eta[48], reason[640];
    const char *col = held(j) ? cli_c.dim : (j->reason[0] && strcmp(j->reason, "Queued") != 0 &&
                                                     strcmp(j->reason, "WaitingForGPUs") != 0 &&
                                                     strcmp(j->reason, "BehindHigherPriority") != 0
                                                 ? cli_c.yellow : "");
    snprintf(lvl, sizeof lvl, "%s%s%s", cli_c.cyan, held(j) ? "(held)" : j->level[0] ? j->level : "<none>",
             cli_c.off);
    if (j->position > 0)
        snprintf(pos, sizeof pos, "%d", j->position);
    else
        snprintf(pos, sizeof pos, "-");
    snprintf(gpus, sizeof gpus, "%ld", j->gpus);
    if (j->has_score)
        cli_num_text(score, sizeof score, j->score);
    else
        snprintf(score, sizeof score, "<none>");
    if (j->queued > 0)
        cli_human_duration(wait, sizeof wait, w->cw.now - j->queued);
    else
        snprintf(wait, sizeof wait, "<none>");
    cli_eta_text(eta, sizeof eta, held(j) ? 0 : j->eta, w->cw.now);
    snprintf(reason, sizeof reason, "%s%s%s", col,
             j->message[0] ? j->message : j->reason[0] ? j->reason : held(j) ? "held (spec.suspend)" : "",
             col[0] ? cli_c.off : "");
    const char *row_all[] = {lvl, pos, j->ns, j->name, j->user, j->group[0] ? j->group : "<none>",
                             gpus, score, wait, eta, reason};
    const char *row_ns[] = {lvl, pos, j->name, j->user, j->group[0] ? j->group : "<none>",
                            gpus, score, wait, eta, reason};
    return cli_table_add(t, o->all_ns ? row_all : row_ns);
}

/* The table of v[0..n) under its Policy line (live: the operator's
 * answer, or NULL). Returns 0, or 1 after printing the error. */
static int queue_table(const struct cli_opts *o, const struct cli_snapshot *w,
                       const struct cli_job *v, int n, json_object *live) {
    int rc = 0;
    if (n == 0) {
        if (o->all_ns)
            fputs("No jobs waiting.\n", stderr);
        else
            fprintf(stderr, "No jobs waiting in %s namespace.\n", o->ns);
        return 0;
    }
    const char *hdr_all[] = {"LEVEL", "POS", "NAMESPACE", "NAME", "USER", "GROUP", "GPUS",
                             "SCORE", "WAIT", "ETA", "REASON"};
    const char *hdr_ns[] = {"LEVEL", "POS", "NAME", "USER", "GROUP", "GPUS",
                            "SCORE", "WAIT", "ETA", "REASON"};
    int nc = o->all_ns ? 11 : 10;
    cli_table *t = cli_table_create(nc, o->all_ns ? hdr_all : hdr_ns);
    if (!t)
        return cli_fail("out of memory");
    for (int i = 0; i < n; i++) {
        if (queue_row(o, w, t, &v[i]) != AIQ_OK) {
            rc = cli_fail("out of memory");
            break;
        }
    }
    if (rc == 0) {
        printf("%sPolicy:%s %s", cli_c.bold, cli_c.off, cli_policy_name(w));
        if (live)
            printf("   %slive%s from the operator's cycle %.0f at %s", cli_c.green, cli_c.off,
                   cli_jnum(live, "cycle", 0), aiq_jstr(live, "time") ? aiq_jstr(live, "time") : "?");
        printf("\n");
        cli_table_print(t, stdout);
    }
    cli_table_free(t);
    return rc;
}

int cli_queue_cmd(const struct cli_opts *o, struct cli_snapshot *w) {
    int rc = 0;
    struct cli_job *v = calloc((size_t)w->njobs + 1, sizeof *v);
    if (!v)
        return cli_fail("out of memory");
    int n = queue_select(o, w, v);
    json_object *live = NULL;
    /* Nothing waits: nothing to ask the operator about. */
    int nlive = n > 0 ? live_overlay(o, v, n, o->out != CLI_OUT_TABLE, &live) : -1;
    g_sort_world = w;
    if (n > 1)
        qsort(v, (size_t)n, sizeof *v, queue_cmp);
    if (o->out != CLI_OUT_TABLE)
        queue_doc(o, w, v, n, nlive, live);
    else
        rc = queue_table(o, w, v, n, live);
    json_object_put(live);
    free(v);
    return rc;
}
