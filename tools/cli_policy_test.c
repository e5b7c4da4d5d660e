/* cli_policy_test.c -- `kubectl aiq policy test FILE` (see
 * cli_policy_test.h). */
#include "tools/cli_policy_test.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/model.h"
#include "operator/manifest.h"
#include "policy/fx.h"
#include "tools/cli_out.h"
#include "tools/cli_table.h"

/* Prints a compile error of the policy's field with a caret under it. */
static void print_policy_error(const char *file, const struct aiq_manifest *m,
                               const struct aiq_policy *p, const aiq_err *e) {
    const char *src = NULL;
    char buf[2048];
    if (p && strcmp(e->field, "spec.formula") == 0)
        src = p->spec.formula;
    if (p && strcmp(e->field, "spec.placementScore") == 0)
        src = p->spec.placement_score;
    for (int i = 0; p && !src && i < p->spec.nlevels; i++) {
        char f[64];
        snprintf(f, sizeof f, "spec.levels[%d].when", i);
        if (strcmp(e->field, f) == 0)
            src = p->spec.levels[i].when;
    }
    fprintf(stderr, "%s: QueuePolicy %s (document at line %d):\n", file,
            p && p->meta.name ? p->meta.name : "?", m->line);
    if (src && e->line > 0) {
        fx_format_error(src, e, buf, sizeof buf);
        fprintf(stderr, "%s\n", buf);
    } else {
        fprintf(stderr, "%s\n", e->message);
    }
}

/* What `aiq-sim tune` measured for the first QueuePolicy of file: its
 * aiq.dev/tuned-by and aiq.dev/tuned-result annotations, copied into by
 * and result ("" when absent). The file already decoded as manifests, so
 * a read or parse failure here only means there is no note to show. */
static void tuned_note(const char *file, char *by, size_t bcap, char *result, size_t rcap) {
    json_object **docs = NULL;
    int nd = 0;
    size_t len = 0;
    char *text = NULL;
    by[0] = result[0] = '\0';
    FILE *f = fopen(file, "rb");
    if (!f)
        return;
    text = malloc(AIQ_MAX_FILE + 1);
    if (text)
        len = fread(text, 1, AIQ_MAX_FILE, f);
    fclose(f);
    if (!text || aiq_yaml_to_json(text, len, &docs, &nd, NULL) != AIQ_OK) {
        free(text);
        return;
    }
    for (int i = 0; i < nd; i++) {
        const char *k = aiq_jstr(docs[i], "kind");
        if (!k || strcmp(k, "QueuePolicy") != 0)
            continue;
        json_object *an = aiq_jget(aiq_jget(docs[i], "metadata"), "annotations");
        const char *b = aiq_jstr(an, "aiq.dev/tuned-by"), *r = aiq_jstr(an, "aiq.dev/tuned-result");
        snprintf(by, bcap, "%s", b ? b : "");
        snprintf(result, rcap, "%s", r ? r : "");
        break;
    }
    aiq_json_docs_free(docs, nd);
    free(text);
}

/* The first QueuePolicy of file (*pol, in *ms[0..*nm), which the caller
 * frees also after an error) compiled into *np. Returns 0, or 1 after
 * printing the error. */
static int pt_load(const char *file, struct aiq_manifest **ms, int *nm,
                   const struct aiq_policy **pol, oppolicy **np) {
    const struct aiq_manifest *pm = NULL;
    aiq_err e;
    aiq_err_clear(&e);
    if (aiq_manifest_parse_file(file, ms, nm, &e) != AIQ_OK) {
        fprintf(stderr, "error: %s:%d: %s\n", file, e.line, e.message);
        return 1;
    }
    for (int i = 0; i < *nm; i++) {
        const struct aiq_manifest *m = &(*ms)[i];
        if (m->rc != AIQ_OK) {
            fprintf(stderr, "error: %s:%d: %s\n", file, m->line, m->err.message);
            return 1;
        }
        if (m->kind == AIQ_KIND_QUEUEPOLICY && !*pol) {
            *pol = &m->u.policy;
            pm = m;
        }
    }
    if (!*pol) {
        fprintf(stderr, "error: %s: no QueuePolicy in the file\n", file);
        return 1;
    }
    aiq_err_clear(&e);
    *np = oppolicy_compile(*pol, &e);
    if (!*np) {
        print_policy_error(file, pm, *pol, &e);
        return 1;
    }
    return 0;
}

/* The waiting jobs of w ranked under np into v (room for w->njobs), in
 * their new order; *approx gets the factors pol uses that some of them
 * only approximate. Returns how many, or -1 after printing the error. */
static int pt_rank(const struct cli_snapshot *w, oppolicy *np, const struct aiq_policy *pol,
                   struct cli_job *v, uint64_t *approx) {
    int n = 0;
    aiq_err e;
    aiq_err_clear(&e);
    for (int i = 0; i < w->njobs; i++)
        if (cli_job_waiting(&w->jobs[i]))
            v[n++] = w->jobs[i];
    if (cli_rank(np, v, n, &e) != AIQ_OK) {
        cli_print_err("ranking", &e);
        return -1;
    }
    uint64_t used_f = cli_factors_used(pol->spec.formula);
    for (int i = 0; i < pol->spec.nlevels; i++)
        used_f |= cli_factors_used(pol->spec.levels[i].when);
    *approx = 0;
    for (int i = 0; i < n; i++)
        *approx |= v[i].approx & used_f;
    /* List in the new order. */
    for (int i = 0; i < n; i++)
        while (v[i].new_position != i + 1) {
            struct cli_job tmp = v[v[i].new_position - 1];
            v[v[i].new_position - 1] = v[i];
            v[i] = tmp;
        }
    return n;
}

/* What aiq-sim tune measured, from the policy's annotations. */
struct pt_tuned {
    char by[512], result[1024];
};

/* -o json|yaml: the PolicyTest of v[0..n) under pol (compiled: np). */
static void pt_doc(const struct cli_opts *o, const struct cli_snapshot *w,
                   const struct aiq_policy *pol, oppolicy *np, const struct cli_job *v, int n,
                   uint64_t approx, const struct pt_tuned *tn) {
    json_object *doc = json_object_new_object(), *items = json_object_new_array();
    cli_add_str(doc, "apiVersion", AIQ_API_VERSION);
    cli_add_str(doc, "kind", "PolicyTest");
    cli_add_str(doc, "policy", pol->meta.name);
    cli_add(doc, "compiled", json_object_new_boolean(1));
    cli_add_str(doc, "currentPolicy", cli_policy_name(w));
    if (tn->by[0]) {
        cli_add_str(doc, "tunedBy", tn->by);
        cli_add_str(doc, "tunedResult", tn->result);
    }
    for (int i = 0; i < n; i++) {
        json_object *it = json_object_new_object();
        cli_add_str(it, "namespace", v[i].ns);
        cli_add_str(it, "name", v[i].name);
        cli_add_str(it, "user", v[i].user);
        cli_add_int(it, "oldPosition", v[i].position);
        cli_add_int(it, "newPosition", v[i].new_position);
        cli_add_str(it, "oldLevel", v[i].level[0] ? v[i].level : NULL);
        cli_add_str(it, "newLevel", oppolicy_level_name(np, v[i].new_level));
        if (v[i].has_score)
            cli_add(it, "oldScore", cli_num6(v[i].score));
        else
            cli_add_null(it, "oldScore");
        cli_add_num(it, "newScore", v[i].new_score);
        cli_push(items, it);
    }
    cli_add(doc, "items", items);
    cli_add_factor_names(doc, "approximatedFactors", approx);
    cli_emit(doc, o->out);
    json_object_put(doc);
}

/* Job j's row: new and old position, the move, new and old level and
 * score. */
static aiq_rc pt_row(cli_table *t, oppolicy *np, const struct cli_job *j) {
    char np_s[16], op_s[16], mv[48], gp[24], sc[32], osc[32], lv[96];
    snprintf(np_s, sizeof np_s, "%d", j->new_position);
    if (j->position > 0)
        snprintf(op_s, sizeof op_s, "%d", j->position);
    else
        snprintf(op_s, sizeof op_s, "-");
    int d = j->position > 0 ? j->position - j->new_position : 0;
    if (j->position <= 0)
        snprintf(mv, sizeof mv, "new");
    else if (d > 0)
        snprintf(mv, sizeof mv, "%s+%d%s", cli_c.green, d, cli_c.off);
    else if (d < 0)
        snprintf(mv, sizeof mv, "%s-%d%s", cli_c.red, -d, cli_c.off);
    else
        snprintf(mv, sizeof mv, "=");
    snprintf(gp, sizeof gp, "%ld", j->gpus);
    cli_num_text(sc, sizeof sc, j->new_score);
    if (j->has_score)
        cli_num_text(osc, sizeof osc, j->score);
    else
        snprintf(osc, sizeof osc, "<none>");
    snprintf(lv, sizeof lv, "%s", oppolicy_level_name(np, j->new_level));
    const char *row[] = {np_s, op_s, mv, j->ns, j->name, j->user, gp, lv, sc,
                         j->level[0] ? j->level : "<none>", osc};
    return cli_table_add(t, row);
}

/* The text: what compiled, the tune note, the table of v[0..n) in the
 * new order and the approximated factors. Returns 0, or 1 after
 * printing the error. */
static int pt_text(const struct cli_snapshot *w, const struct aiq_policy *pol, oppolicy *np,
                   const struct cli_job *v, int n, uint64_t approx, const struct pt_tuned *tn) {
    char fl[512];
    int rc = 0;
    printf("%sQueuePolicy %s compiles%s: formula %s, %d level%s", cli_c.green, pol->meta.name, cli_c.off,
           cli_one_line(fl, sizeof fl, pol->spec.formula), pol->spec.nlevels, pol->spec.nlevels == 1 ? "" : "s");
    for (int i = 0; i < pol->spec.nlevels; i++)
        printf("%s%s", i ? ", " : " (", pol->spec.levels[i].name);
    printf(")\n");
    if (tn->by[0])
        printf("Tuned by %s\nMeasured: %s\n", tn->by, tn->result[0] ? tn->result : "(no result)");
    if (n == 0) {
        printf("No jobs waiting: nothing to reorder.\n");
        return 0;
    }
    printf("The %d waiting job%s, now under %s and under %s:\n", n, n == 1 ? "" : "s",
           cli_policy_name(w), pol->meta.name);
    static const char *hdr[] = {"NEW", "OLD", "MOVE", "NAMESPACE", "NAME", "USER", "GPUS",
                                "LEVEL", "SCORE", "OLD-LEVEL", "OLD-SCORE"};
    cli_table *t = cli_table_create(11, hdr);
    if (!t)
        return cli_fail("out of memory");
    for (int i = 0; i < n && rc == 0; i++)
        if (pt_row(t, np, &v[i]) != AIQ_OK)
            rc = cli_fail("out of memory");
    if (rc == 0)
        cli_table_print(t, stdout);
    cli_table_free(t);
    if (approx) {
        printf("Approximated factors (the operator's store has the exact values):");
        for (int i = 0; i < FX_NFACTORS; i++)
            if (approx & (1ull << i))
                printf(" %s", fx_factor_name(i));
        printf("\n");
    }
    return rc;
}

int cli_policy_test_cmd(const struct cli_opts *o, struct cli_snapshot *w, const char *file) {
    struct aiq_manifest *ms = NULL;
    int nm = 0, rc = 1;
    oppolicy *np = NULL;
    struct cli_job *v = NULL;
    const struct aiq_policy *pol = NULL;
    struct pt_tuned tn;
    uint64_t approx = 0;
    if (pt_load(file, &ms, &nm, &pol, &np))
        goto out;
    tuned_note(file, tn.by, sizeof tn.by, tn.result, sizeof tn.result);
    /* Old order: the operator's positions; new order: this policy. */
    v = calloc((size_t)w->njobs + 1, sizeof *v);
    if (!v) {
        cli_fail("out of memory");
        goto out;
    }
    int n = pt_rank(w, np, pol, v, &approx);
    if (n < 0)
        goto out;
    if (o->out != CLI_OUT_TABLE) {
        pt_doc(o, w, pol, np, v, n, approx, &tn);
        rc = 0;
    } else {
        rc = pt_text(w, pol, np, v, n, approx, &tn);
    }
out:
    free(v);
    oppolicy_free(np);
    aiq_manifests_free(ms, nm);
    return rc;
}
