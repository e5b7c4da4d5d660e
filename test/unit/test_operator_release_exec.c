/* test_operator_release_exec.c -- parallel patch batches
 * (operator/release_exec.c) against the in-process local API server:
 * gated pods created from several threads, a second create answered
 * AlreadyExists per item, then the release patches ungate every pod and
 * record its node hint, and a missing pod fails only its own item. */
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "operator/kube_http.h"
#include "operator/kubeconfig.h"
#include "operator/pods.h"
#include "operator/release.h"
#include "operator/release_exec.h"
#include "test/apiserver/apiserver.h"
#include "test/unit/th.h"

#define NPODS 24

struct env {
    apisrv *srv;
    struct kube_config *cfg;
    struct kube_client *kc;
    char kcpath[64];
};

static int env_up(struct env *v) {
    struct apisrv_config c;
    aiq_err e;
    memset(v, 0, sizeof *v);
    memset(&c, 0, sizeof c);
    snprintf(v->kcpath, sizeof v->kcpath, "/tmp/aiq-test-rx-%d.kc", (int)getpid());
    c.db_path = ":memory:";
    c.kubeconfig_out = v->kcpath;
    aiq_err_clear(&e);
    v->srv = apisrv_start(&c, &e);
    if (!v->srv)
        return -1;
    if (kube_config_load(v->kcpath, NULL, &v->cfg, &e) != AIQ_OK)
        return -1;
    struct kube_client_opts o = {0};
    o.pool_size = 4;
    return kube_client_create(v->cfg, &o, &v->kc, &e) == AIQ_OK ? 0 : -1;
}

static void env_down(struct env *v) {
    kube_client_free(v->kc);
    kube_config_free(v->cfg);
    apisrv_stop(v->srv);
    remove(v->kcpath);
}

/* Creates the NPODS gated pods of gang `name` in parallel (items keep
 * the create requests). Returns how many were created. */
static int gang_create(struct env *v, const char *name, struct release_item *items) {
    struct aiq_aijob j;
    char uid[64];
    memset(&j, 0, sizeof j);
    snprintf(uid, sizeof uid, "uid-%s", name);
    j.meta.name = (char *)name;
    j.meta.namespace_ = (char *)"default";
    j.meta.uid = uid;
    j.spec.replicas = NPODS;
    j.spec.resources.gpus = 1;
    memset(items, 0, NPODS * sizeof *items);
    for (int i = 0; i < NPODS; i++) {
        items[i].create = 1;
        items[i].patch = pods_build(&j, NULL, i, GPU_MECH_DEVICE_PLUGIN, NULL);
        snprintf(items[i].path, sizeof items[i].path, "/api/v1/namespaces/default/pods");
    }
    return release_exec(v->kc, items, NPODS, 4);
}

TEST(release_exec_create_then_release) {
    struct env v;
    if (!CHECK(env_up(&v) == 0)) {
        env_down(&v);
        return;
    }
    struct release_item items[NPODS];
    CHECK_INT(gang_create(&v, "gang", items), NPODS);
    for (int i = 0; i < NPODS; i++) {
        json_object_put(items[i].out);
        items[i].out = NULL;
    }
    /* Creating again: every item says AlreadyExists, nothing duplicates. */
    CHECK_INT(release_exec(v.kc, items, NPODS, 4), 0);
    int eexist = 0;
    for (int i = 0; i < NPODS; i++) {
        eexist += items[i].rc == AIQ_EEXIST;
        json_object_put(items[i].out);
        json_object_put(items[i].patch);
    }
    CHECK_INT(eexist, NPODS);
    json_object *all = apisrv_obj_list(v.srv, "pods", "default");
    CHECK_INT(json_object_array_length(all), NPODS);
    json_object_put(all);

    /* Release: one merge patch per pod, plus one for a pod that does not
     * exist, which fails alone. */
    struct release_item rel[NPODS + 1];
    memset(rel, 0, sizeof rel);
    for (int i = 0; i <= NPODS; i++) {
        char name[32];
        struct opst_place pl;
        memset(&pl, 0, sizeof pl);
        pl.replica = i;
        snprintf(pl.node, sizeof pl.node, "node-%d", i % 3);
        pl.gpus[0] = i % 8;
        pl.ngpus = 1;
        pl.gpu_memory_mib = 1000;
        snprintf(name, sizeof name, "gang-%d", i);
        json_object *pod = apisrv_obj_get(v.srv, "pods", "default", name);
        json_object *gated = pod ? NULL : json_tokener_parse(
            "{\"spec\":{\"schedulingGates\":[{\"name\":\"aiq.dev/admission\"}]}}");
        rel[i].patch = release_pod_patch(pod ? pod : gated, &pl, NULL);
        snprintf(rel[i].path, sizeof rel[i].path, "/api/v1/namespaces/default/pods/%s", name);
        json_object_put(pod);
        json_object_put(gated);
    }
    CHECK_INT(release_exec(v.kc, rel, NPODS + 1, 4), NPODS);
    CHECK_INT(rel[NPODS].rc, AIQ_ENOTFOUND);
    int gated = 0, hinted = 0;
    for (int i = 0; i <= NPODS; i++) {
        json_object_put(rel[i].patch);
        json_object_put(rel[i].out);
    }
    for (int i = 0; i < NPODS; i++) {
        char name[32];
        snprintf(name, sizeof name, "gang-%d", i);
        json_object *pod = apisrv_obj_get(v.srv, "pods", "default", name);
        gated += pods_is_gated(pod);
        const char *s = json_object_to_json_string(pod);
        char want[64];
        snprintf(want, sizeof want, "\"node-%d\"", i % 3);
        hinted += strstr(s, want) != NULL;
        json_object_put(pod);
    }
    CHECK_INT(gated, 0);
    CHECK_INT(hinted, NPODS);
    env_down(&v);
}

/* One item that fails (a pod that does not exist) stops nothing else:
 * every other release of the batch goes out, the failure is reported on
 * its own item. */
TEST(release_exec_one_failure_stops_nothing_else) {
    struct env v;
    if (!CHECK(env_up(&v) == 0)) {
        env_down(&v);
        return;
    }
    struct release_item mk[NPODS];
    CHECK_INT(gang_create(&v, "f", mk), NPODS);
    for (int i = 0; i < NPODS; i++) {
        json_object_put(mk[i].out);
        json_object_put(mk[i].patch);
    }
    enum { MISSING = 7 };
    struct release_item it[NPODS];
    memset(it, 0, sizeof it);
    for (int i = 0; i < NPODS; i++) {
        struct opst_place pl;
        memset(&pl, 0, sizeof pl);
        pl.replica = i;
        snprintf(pl.node, sizeof pl.node, "node-%d", i % 3);
        pl.ngpus = 1;
        char name[32];
        snprintf(name, sizeof name, "f-%d", i);
        json_object *p = apisrv_obj_get(v.srv, "pods", "default", name);
        it[i].patch = release_pod_patch(p, &pl, NULL);
        json_object_put(p);
        snprintf(it[i].path, sizeof it[i].path, "/api/v1/namespaces/default/pods/%s",
                 i == MISSING ? "missing" : name);
    }
    CHECK_INT(release_exec(v.kc, it, NPODS, 4), NPODS - 1);
    CHECK_INT(it[MISSING].rc, AIQ_ENOTFOUND);
    CHECK(it[MISSING].out == NULL);
    for (int i = 0; i < NPODS; i++) {
        json_object_put(it[i].patch);
        json_object_put(it[i].out);
    }
    /* Every pod but f-7 (its patch went to a missing name) is released. */
    for (int i = 0; i < NPODS; i++) {
        char name[32];
        snprintf(name, sizeof name, "f-%d", i);
        json_object *p = apisrv_obj_get(v.srv, "pods", "default", name);
        if (!CHECK(pods_is_gated(p) == (i == MISSING)))
            fprintf(stderr, "  pod %s gated=%d\n", name, pods_is_gated(p));
        json_object_put(p);
    }
    env_down(&v);
}
