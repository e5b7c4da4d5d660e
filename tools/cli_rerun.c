/* cli_rerun.c -- `kubectl aiq rerun JOB` (see cli_rerun.h). */
#include "tools/cli_rerun.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/json.h"
#include "common/model.h"
#include "tools/cli_out.h"
#include "tools/cli_snapshot.h"

#define RERUN_WAIT_S 120 /* for the old object and its pods to be gone */

/* The new run's object: the old one's name, namespace, labels,
 * annotations and spec (deep copies), annotated aiq.dev/run (the run
 * number, counting from 1) and aiq.dev/rerun-of (the old uid). *run gets
 * the new run number. Returns a new object, or NULL when out of memory. */
/* Adds member k of o: the string v, or JSON null when v is NULL. */
static void rerun_str(json_object *o, const char *k, const char *v, bool *failed) {
    if (v)
        (void)aiq_jset(o, k, json_object_new_string(v), failed); /* a failure is in *failed */
    else
        (void)aiq_jset_null(o, k, failed); /* as above */
}

static json_object *rerun_object(json_object *old, int *run) {
    json_object *md = aiq_jget(old, "metadata"), *nj = json_object_new_object();
    json_object *nmd = json_object_new_object(), *ann = NULL, *v = NULL, *spec = NULL;
    bool failed = false;
    (void)aiq_jset(nj, "metadata", nmd, &failed); /* every add's failure is in failed */
    rerun_str(nj, "apiVersion", AIQ_GROUP "/" AIQ_VERSION, &failed);
    rerun_str(nj, "kind", "AIJob", &failed);
    rerun_str(nmd, "name", aiq_jstr(md, "name"), &failed);
    rerun_str(nmd, "namespace", aiq_jstr(md, "namespace"), &failed);
    if ((v = aiq_jget(md, "labels")) && !failed) {
        if (json_object_deep_copy(v, &ann, NULL) != 0)
            goto fail;
        (void)aiq_jset(nmd, "labels", ann, &failed);
        ann = NULL;
    }
    if (failed || ((v = aiq_jget(md, "annotations")) && json_object_deep_copy(v, &ann, NULL) != 0))
        goto fail;
    if (!ann && !(ann = json_object_new_object()))
        goto fail;
    if (aiq_jset(nmd, "annotations", ann, &failed) != 0)
        goto fail; /* ann freed */
    const char *prev = aiq_jstr(ann, "aiq.dev/run");
    long n = prev ? strtol(prev, NULL, 10) : 1;
    *run = (int)(n >= 1 && n < 1000000 ? n + 1 : 2);
    char num[16];
    snprintf(num, sizeof num, "%d", *run);
    rerun_str(ann, "aiq.dev/run", num, &failed);
    rerun_str(ann, "aiq.dev/rerun-of", aiq_jstr(md, "uid"), &failed);
    if (failed || json_object_deep_copy(aiq_jget(old, "spec"), &spec, NULL) != 0 ||
        aiq_jset(nj, "spec", spec, &failed) != 0)
        goto fail;
    return nj;
fail:
    json_object_put(nj);
    return NULL;
}

/* Whether the old run is gone: the object (*path) and its pods (label
 * aiq.dev/job=NAME in its namespace: the new run's pods take the same
 * names). Returns 1 gone, 0 not yet, -1 after printing an error. */
static int rerun_gone(struct kube_client *kc, const char *path, const char *ns, const char *name) {
    char base[CLI_PATH_CAP], sel[2 * AIQ_MAX_NAME], q[3 * sizeof sel], pods[sizeof base + sizeof q + 16];
    json_object *cur = NULL;
    aiq_err e;
    aiq_err_clear(&e);
    aiq_rc rc = kube_get(kc, path, &cur, &e);
    json_object_put(cur);
    cur = NULL;
    if (rc == AIQ_OK)
        return 0;
    if (rc != AIQ_ENOTFOUND) {
        cli_print_err("waiting for the finished run to be deleted", &e);
        return -1;
    }
    snprintf(sel, sizeof sel, "aiq.dev/job=%s", name);
    if (kube_query_escape(q, sizeof q, sel, &e) != AIQ_OK ||
        kube_path(base, sizeof base, "", "v1", ns, "pods", NULL, NULL, &e) != AIQ_OK) {
        cli_print_err("building the pod list path", &e);
        return -1;
    }
    snprintf(pods, sizeof pods, "%s?labelSelector=%s", base, q); /* sized to fit both */
    if ((rc = kube_get(kc, pods, &cur, &e)) != AIQ_OK) {
        cli_print_err("listing the finished run's pods", &e);
        return -1;
    }
    json_object *it = cli_items_of(cur);
    int gone = !it || json_object_array_length(it) == 0;
    json_object_put(cur);
    return gone;
}

/* Deletes the old run (its pods go with it, by the garbage collector)
 * and waits for the object and its pods to be gone. Returns 0, or 1
 * after printing what went wrong. */
static int rerun_delete(struct kube_client *kc, const char *path, const char *ns,
                        const char *name) {
    aiq_err e;
    aiq_err_clear(&e);
    aiq_rc rc = kube_delete(kc, path, "Background", NULL, &e);
    if (rc != AIQ_OK && rc != AIQ_ENOTFOUND) {
        cli_print_err("deleting the finished run", &e);
        return 1;
    }
    for (int i = 0; i < RERUN_WAIT_S * 5; i++) {
        int g = rerun_gone(kc, path, ns, name);
        if (g != 0)
            return g < 0;
        struct timespec ts = {0, 200 * 1000 * 1000};
        nanosleep(&ts, NULL); /* interrupted early: the next look still decides */
    }
    return cli_fail("aijob %s/%s: it or its pods are still there %d s after its deletion (a "
                "finalizer, or pods that do not stop?); rerun it once they are gone",
                ns, name, RERUN_WAIT_S);
}

/* kubectl aiq rerun JOB: a finished job (Succeeded, Failed, Rejected)
 * runs again as a new run: the old object is deleted (its history stays
 * in the operator's store, under its uid) and created again with the same
 * spec. A job still active is refused. */
int cli_rerun_cmd(const struct cli_opts *o, struct kube_client *kc) {
    char path[CLI_PATH_CAP], key[2 * AIQ_MAX_NAME + 2], what[64];
    json_object *old = NULL, *nj = NULL;
    aiq_err e;
    int rc = 1, run = 2;
    snprintf(key, sizeof key, "%s/%s", o->ns, o->args[1]);
    aiq_err_clear(&e);
    aiq_rc r = kube_path(path, sizeof path, AIQ_GROUP, AIQ_VERSION, o->ns, "aijobs", o->args[1],
                         NULL, &e);
    if (r == AIQ_OK)
        r = kube_get(kc, path, &old, &e);
    if (r == AIQ_ENOTFOUND)
        return cli_fail("aijob %s not found", key);
    if (r != AIQ_OK) {
        cli_print_err("reading the aijob", &e);
        return 1;
    }
    const char *phase = aiq_jstr(aiq_jget(old, "status"), "phase");
    if (!phase || (strcmp(phase, "Succeeded") && strcmp(phase, "Failed") && strcmp(phase, "Rejected"))) {
        rc = cli_fail("aijob %s is %s: only a finished job (Succeeded, Failed or Rejected) can be "
                  "rerun; suspend it (spec.suspend: true) or delete it instead",
                  key, phase ? phase : "Pending");
        goto out;
    }
    snprintf(what, sizeof what, "%s", phase);
    if (!(nj = rerun_object(old, &run))) {
        rc = cli_fail("out of memory");
        goto out;
    }
    if (rerun_delete(kc, path, o->ns, o->args[1]))
        goto out;
    char coll[CLI_PATH_CAP];
    aiq_err_clear(&e);
    if (kube_path(coll, sizeof coll, AIQ_GROUP, AIQ_VERSION, o->ns, "aijobs", NULL, NULL, &e) !=
            AIQ_OK ||
        kube_create(kc, coll, nj, NULL, &e) != AIQ_OK) {
        cli_print_err("creating the new run", &e);
        fprintf(stderr, "the finished run is deleted; its object, to apply again:\n%s\n",
                json_object_to_json_string_ext(nj, JSON_C_TO_STRING_PRETTY));
        goto out;
    }
    printf("aijob.aiq.dev/%s rerun: run %d created (run %d ended %s; its history is kept)\n",
           o->args[1], run, run - 1, what);
    rc = 0;
out:
    json_object_put(nj);
    json_object_put(old);
    return rc;
}

