/* test_kube_faults.c -- the watch client against the local cluster
 * (aiq-apiserver) with its fault injection on: 500s, 409s, watch streams
 * cut every 0.3 s, a 2-event history (so resumes get 410 and relist) and
 * added latency. A writer creates, patches and deletes ConfigMaps while
 * a consumer keeps a view from watch events alone (RELIST_BEGIN/END
 * included); at the end the view must equal a fresh list, name by name
 * and resourceVersion by resourceVersion.
 *
 * Needs the aiq-apiserver binary ($AIQ_BUILD or build/san); without it
 * the test says so and checks nothing (the in-test server tests in
 * test_kube_watch.c cover the protocol on their own). */
#include "test/unit/th.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/json.h"
#include "operator/kube_watch.h"
#include "operator/kubeconfig.h"

#define NCM 150

struct view_ent {
    int live, seen;
    char rv[32];
};

struct run {
    struct kube_client *kc;
    atomic_int writer_done;
    int gave_up;
};

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* "cm-17" -> 17, else -1. */
static int cm_index(const char *name) {
    if (!name || strncmp(name, "cm-", 3) != 0) return -1;
    char *end = NULL;
    long v = strtol(name + 3, &end, 10);
    if (!end || *end || end == name + 3 || v < 0 || v >= NCM) return -1;
    return (int)v;
}

/* Round 0 creates every ConfigMap, round 1 patches every one, round 2
 * deletes each third and patches the rest; each write is retried until
 * the (faulty) server accepts it. */
static void *writer_main(void *arg) {
    struct run *r = arg;
    char path[128], body[256];
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < NCM; i++) {
            aiq_rc rc = AIQ_OK;
            for (int tries = 0; tries < 50; tries++) {
                json_object *o = NULL;
                snprintf(path, sizeof path, "/api/v1/namespaces/default/configmaps/cm-%d", i);
                if (round == 0) {
                    snprintf(body, sizeof body,
                             "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"cm-%d\","
                             "\"namespace\":\"default\"},\"data\":{\"round\":\"0\"}}", i);
                    o = json_tokener_parse(body);
                    rc = kube_create(r->kc, "/api/v1/namespaces/default/configmaps", o, NULL, NULL);
                    if (rc == AIQ_EEXIST) rc = AIQ_OK;
                } else if (round == 1 || i % 3) {
                    snprintf(body, sizeof body, "{\"data\":{\"round\":\"%d\"}}", round);
                    o = json_tokener_parse(body);
                    rc = kube_patch(r->kc, path, KUBE_PATCH_MERGE, o, NULL, NULL);
                } else {
                    rc = kube_delete(r->kc, path, "Background", NULL, NULL);
                    if (rc == AIQ_ENOTFOUND) rc = AIQ_OK;
                }
                json_object_put(o);
                if (rc == AIQ_OK) break;
            }
            if (rc != AIQ_OK) r->gave_up++;
        }
    }
    atomic_store(&r->writer_done, 1);
    return NULL;
}

static const char *apiserver_bin(char *buf, size_t cap) {
    const char *b = getenv("AIQ_BUILD");
    if (b && *b) snprintf(buf, cap, "%s/aiq-apiserver", b);
    else snprintf(buf, cap, "%s/build/san/aiq-apiserver", th_srcdir());
    return access(buf, X_OK) == 0 ? buf : NULL;
}

TEST(watch_view_converges_under_api_faults) {
    char bin[1024], dir[] = "/tmp/aiq-kfaults-XXXXXX", db[1100], kcfg[1100], logp[1100];
    if (!apiserver_bin(bin, sizeof bin)) {
        printf("skipped: %s not built (make build/san/aiq-apiserver)\n", bin);
        return;
    }
    if (!CHECK(mkdtemp(dir) != NULL)) return;
    snprintf(db, sizeof db, "%s/api.db", dir);
    snprintf(kcfg, sizeof kcfg, "%s/kubeconfig", dir);
    snprintf(logp, sizeof logp, "%s/api.log", dir);
    pid_t pid = fork();
    if (pid == 0) {
        FILE *lf = freopen(logp, "w", stdout);
        (void)lf;
        dup2(1, 2);
        execl(bin, bin, "--db", db, "--port", "0", "--kubeconfig", kcfg, "--history", "2",
              "--fault-watch-cut", "0.3", "--fault-500", "0.1", "--fault-409", "0.05",
              "--fault-latency-ms", "2", "--seed", "5", (char *)NULL);
        _exit(127);
    }
    CHECK(pid > 0);
    struct stat sb;
    for (int i = 0; i < 200 && stat(kcfg, &sb) != 0; i++) sleep_ms(50);

    struct kube_config *cfg = NULL;
    struct kube_evq *q = NULL;
    struct kube_watch *w = NULL;
    struct run r = {0};
    struct view_ent view[NCM];
    memset(view, 0, sizeof view);
    aiq_err e;
    aiq_err_clear(&e);
    CHECK_INT(kube_config_load(kcfg, NULL, &cfg, &e), AIQ_OK);
    if (cfg) CHECK_INT(kube_client_create(cfg, NULL, &r.kc, &e), AIQ_OK);
    CHECK_INT(kube_evq_create(0, &q, NULL), AIQ_OK);
    struct kube_watch_opts wo = {.name = "configmaps", .path = "/api/v1/configmaps", .page_limit = 37,
                                 .timeout_seconds = 5, .backoff_base_ms = 20, .backoff_cap_ms = 500};
    if (r.kc) CHECK_INT(kube_watch_start(r.kc, &wo, q, &w, &e), AIQ_OK);
    if (!w) goto out;

    pthread_t t;
    pthread_create(&t, NULL, writer_main, &r);
    /* Consume until the writer is done and the watch has been quiet for
     * 3 s (streams are cut every 0.3 s, so a lagging resume shows up). */
    int quiet = 0;
    unsigned long nev = 0;
    while (quiet < 30) {
        struct kube_event *ev = NULL;
        if (kube_evq_pop(q, 100, &ev) != AIQ_OK) {
            if (atomic_load(&r.writer_done)) quiet++;
            continue;
        }
        quiet = 0;
        nev++;
        int i = cm_index(aiq_jpath_str(ev->obj, "metadata.name"));
        switch (ev->type) {
        case KUBE_EV_RELIST_BEGIN:
            for (int k = 0; k < NCM; k++) view[k].seen = 0;
            break;
        case KUBE_EV_RELIST_END:
            for (int k = 0; k < NCM; k++)
                if (!view[k].seen) view[k].live = 0;
            break;
        case KUBE_EV_ADDED:
        case KUBE_EV_MODIFIED:
            if (i >= 0) {
                const char *rv = aiq_jpath_str(ev->obj, "metadata.resourceVersion");
                view[i].live = view[i].seen = 1;
                snprintf(view[i].rv, sizeof view[i].rv, "%s", rv ? rv : "");
            }
            break;
        case KUBE_EV_DELETED:
            if (i >= 0) view[i].live = 0;
            break;
        default:
            break;
        }
        kube_event_free(ev);
    }
    pthread_join(t, NULL);
    CHECK_INT(r.gave_up, 0);
    struct kube_watch_stats st;
    kube_watch_get_stats(w, &st);
    printf("faults: events=%lu lists=%lu watches=%lu gone=%lu errors=%lu\n", nev, st.lists,
           st.watches, st.gone, st.errors);
    CHECK(st.watches > 1); /* streams were cut and resumed */
    kube_watch_free(w);

    /* The truth, read until the faulty server answers. */
    json_object *list = NULL;
    aiq_rc rc = AIQ_EIO;
    for (int tries = 0; tries < 50 && rc != AIQ_OK; tries++) rc = kube_get(r.kc, "/api/v1/configmaps", &list, NULL);
    CHECK_INT(rc, AIQ_OK);
    int live[NCM] = {0}, nlive = 0, mismatches = 0;
    json_object *items = json_object_object_get(list, "items");
    for (size_t k = 0; k < json_object_array_length(items); k++) {
        json_object *it = json_object_array_get_idx(items, k);
        int i = cm_index(aiq_jpath_str(it, "metadata.name"));
        if (i < 0) continue;
        live[i] = 1;
        nlive++;
        const char *rv = aiq_jpath_str(it, "metadata.resourceVersion");
        if (!view[i].live || !rv || strcmp(rv, view[i].rv) != 0) mismatches++;
    }
    for (int i = 0; i < NCM; i++)
        if (view[i].live && !live[i]) mismatches++;
    CHECK_INT(nlive, NCM - NCM / 3);
    CHECK_INT(mismatches, 0);
    json_object_put(list);
out:
    kube_evq_free(q);
    kube_client_free(r.kc);
    kube_config_free(cfg);
    if (pid > 0) {
        kill(pid, SIGTERM);
        waitpid(pid, NULL, 0);
    }
    unlink(db);
    unlink(kcfg);
    unlink(logp);
    char side[1200];
    snprintf(side, sizeof side, "%s-wal", db);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", db);
    unlink(side);
    if (rmdir(dir) != 0) printf("note: %s left behind\n", dir);
}
