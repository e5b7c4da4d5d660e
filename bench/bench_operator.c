/* bench_operator.c -- the operator at scale against the local cluster:
 * 10,000 one-GPU AIJobs on 1,000 eight-GPU nodes.
 *
 *  1. The nodes start cordoned, the AIJobs are created (in-process, fast)
 *     and we time until every one is Queued: the operator has seen it,
 *     validated it, created its gated pod and written its status.
 *  2. Baseline, same run: the local cluster's raw merge-patch rate on
 *     pods, sent the way the operator sends releases (RAW_THREADS
 *     keep-alive clients in parallel, as operator/release_exec.c's 4
 *     workers), as many patches as the operator will release (capped
 *     at 15 s), each carrying the same kind of payload (an annotation
 *     map the size of a node hint).
 *  3. The nodes are uncordoned: the next cycle admits 8,000 gangs and the
 *     operator releases their pods (one merge patch each: node hint plus
 *     gate removal), sent in parallel batches. Pods released per second
 *     are the pods patched over the time spent inside those batches, as
 *     the operator's release_batch log lines report them.
 * Ends with queued_10k_s=, release_pods_per_s= and release_vs_raw_patch=.
 * AIQ_BENCH_JOBS / AIQ_BENCH_NODES shrink the run for a quick look. Each
 * phase has a wall-clock cap (45 s, 15 s, 75 s; AIQ_BENCH_RELEASE_S sets
 * the last) so the bench ends in about two minutes even on a slow machine;
 * a capped phase says so and the rates are over what was done. Full runs
 * on the shared 2-core box (load 5-9) took 50-112 s: Queued after 13-22 s,
 * raw patches 4-6 s, uncordon to last release 26-53 s, of which ~7 s are
 * inside release batches; the rest is the operator taking in 1,000 node
 * and 8,000 pod events and running cycles over 10,000 jobs before the
 * first admission. release_vs_raw_patch varied 0.64-0.85 with the load. */
#include <curl/curl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "operator/yaml_json.h"
#include "test/apiserver/apiserver.h"

#define RAW_THREADS 4   /* the operator sends release batches with 4 workers */
#define RAW_CAP_S 15.0

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static size_t sink(char *d, size_t sz, size_t nm, void *u) {
    (void)d;
    (void)u;
    return sz * nm;
}

static int env_int(const char *name, int dflt) {
    const char *v = getenv(name);
    char *end = NULL;
    long n = v ? strtol(v, &end, 10) : 0;
    return (v && *v && !*end && n > 0 && n < 10000000) ? (int)n : dflt;
}

/* Loads every document of a YAML file into the server as `resource`. */
static int load_yaml(apisrv *s, const char *path, const char *resource) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    char *buf = malloc(1 << 20);
    size_t n = buf ? fread(buf, 1, (1 << 20) - 1, f) : 0;
    fclose(f);
    if (!buf)
        return -1;
    json_object **docs = NULL;
    int nd = 0;
    aiq_err e;
    aiq_err_clear(&e);
    int rc = aiq_yaml_to_json(buf, n, &docs, &nd, &e) == AIQ_OK ? 0 : -1;
    for (int i = 0; rc == 0 && i < nd; i++)
        if (apisrv_obj_create(s, resource, json_object_get(docs[i]), &e) != AIQ_OK)
            rc = -1;
    aiq_json_docs_free(docs, nd);
    free(buf);
    return rc;
}

/* The raw-patch baseline: workers take the next pod index from a shared
 * counter, as the operator's release workers do. */
struct raw_ctx {
    pthread_mutex_t mu;
    int next, n, njobs, port, ok;
    double t0;
};

static void *raw_worker(void *arg) {
    struct raw_ctx *x = arg;
    CURL *c = curl_easy_init();
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/merge-patch+json");
    int ok = 0;
    for (; c && h;) {
        pthread_mutex_lock(&x->mu);
        int i = x->next < x->n && now_s() - x->t0 < RAW_CAP_S ? x->next++ : -1;
        pthread_mutex_unlock(&x->mu);
        if (i < 0)
            break;
        char url[256], body[256];
        long code = 0;
        snprintf(url, sizeof url, "http://127.0.0.1:%d/api/v1/namespaces/default/pods/j%05d-0",
                 x->port, x->njobs - 1 - i);
        snprintf(body, sizeof body,
                 "{\"metadata\":{\"annotations\":{\"bench/raw\":\"%d\",\"bench/node\":\"n-%04d\","
                 "\"bench/gpus\":\"0\",\"bench/gpu-memory-mib\":\"10240\"}}}", i, i % 1000);
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, "PATCH");
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
        curl_easy_setopt(c, CURLOPT_TIMEOUT, 5L);
        if (curl_easy_perform(c) == CURLE_OK)
            curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
        ok += code == 200;
    }
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    pthread_mutex_lock(&x->mu);
    x->ok += ok;
    pthread_mutex_unlock(&x->mu);
    return NULL;
}

/* Patches n pods with RAW_THREADS parallel clients; returns the seconds
 * taken and sets *ok to the patches answered 200. */
static double raw_patch(int port, int njobs, int n, int *ok) {
    struct raw_ctx x = {PTHREAD_MUTEX_INITIALIZER, 0, n, njobs, port, 0, now_s()};
    pthread_t th[RAW_THREADS];
    int started = 0;
    for (int t = 0; t < RAW_THREADS; t++)
        if (pthread_create(&th[started], NULL, raw_worker, &x) == 0)
            started++;
    for (int t = 0; t < started; t++)
        pthread_join(th[t], NULL);
    *ok = x.ok;
    return now_s() - x.t0;
}

/* Sets spec.unschedulable on every node, giving up after max_s seconds
 * (a slow server must not stretch the bench). Returns the nodes done. */
static int cordon(apisrv *s, int on, double max_s) {
    json_object *nodes = apisrv_obj_list(s, "nodes", NULL);
    double t0 = now_s();
    int done = 0;
    for (size_t i = 0; nodes && i < json_object_array_length(nodes) && now_s() - t0 < max_s;
         i++, done++) {
        json_object *n = json_object_get(json_object_array_get_idx(nodes, i)), *spec = NULL;
        if (!json_object_object_get_ex(n, "spec", &spec)) {
            spec = json_object_new_object();
            json_object_object_add(n, "spec", spec);
        }
        json_object_object_add(spec, "unschedulable", json_object_new_boolean(on));
        json_object *m = NULL;
        if (json_object_object_get_ex(n, "metadata", &m))
            json_object_object_del(m, "resourceVersion");
        apisrv_obj_update(s, "nodes", n, false, NULL);
    }
    json_object_put(nodes);
    return done;
}

/* What the operator's log has said so far, read incrementally (cheap to
 * poll, unlike listing 10,000 objects from the server under test). */
struct oplog_scan {
    FILE *f;
    long queued;       /* AIJobs that reached Queued (job_queued lines) */
    long released;     /* pod_released lines */
    long batch_pods;   /* pods patched inside release batches */
    double batch_s;    /* seconds spent inside release batches */
    int ready;
};

static void scan(struct oplog_scan *sc, const char *path) {
    char line[2048];
    if (!sc->f)
        sc->f = fopen(path, "r");
    if (!sc->f)
        return;
    clearerr(sc->f);
    while (fgets(line, sizeof line, sc->f)) {
        if (strstr(line, "event=ready")) {
            sc->ready = 1;
        } else if (strstr(line, "event=pod_released")) {
            sc->released++;
        } else if (strstr(line, "event=job_queued")) {
            sc->queued++;
        } else {
            const char *b = strstr(line, "event=release_batch");
            const char *ok = b ? strstr(b, " ok=") : NULL;
            const char *sec = b ? strstr(b, " seconds=") : NULL;
            if (ok && sec) {
                sc->batch_pods += strtol(ok + 4, NULL, 10);
                sc->batch_s += strtod(sec + 9, NULL);
            }
        }
    }
}


int main(void) {
    int njobs = env_int("AIQ_BENCH_JOBS", 10000);
    int nnodes = env_int("AIQ_BENCH_NODES", 1000);
    int rel_cap = env_int("AIQ_BENCH_RELEASE_S", 75); /* phase 3 cap, seconds */
    curl_global_init(CURL_GLOBAL_ALL); /* before any thread makes a handle */
    double t_start = now_s();
    char dir[] = "/tmp/aiq-bench-op.XXXXXX", path[512], kc[512], oplog[512], db[512];
    if (!mkdtemp(dir))
        return 1;
    snprintf(path, sizeof path, "%s/nodes.yaml", dir);
    snprintf(kc, sizeof kc, "%s/kubeconfig", dir);
    snprintf(oplog, sizeof oplog, "%s/operator.log", dir);
    snprintf(db, sizeof db, "%s/op.db", dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return 1;
    fprintf(f, "nodes:\n  - name: n\n    count: %d\n    gpus: 8\n    gpuProduct: NVIDIA-A100\n"
               "    gpuMemoryMiB: 81920\n    cpu: \"128\"\n    memory: 1Ti\n", nnodes);
    fclose(f);

    struct apisrv_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.db_path = ":memory:";
    cfg.kubeconfig_out = kc;
    cfg.nodes_file = path;
    cfg.time_scale = 1;
    cfg.history = 4 * njobs + 100000;
    aiq_err e;
    aiq_err_clear(&e);
    apisrv *s = apisrv_start(&cfg, &e);
    if (!s || apisrv_sim_start(s, &e) != AIQ_OK) {
        fprintf(stderr, "bench_operator: local cluster: %s\n", e.message);
        return 1;
    }
    static const char *const crds[] = {"crds/aijobs.aiq.dev.yaml", "crds/queuepolicies.aiq.dev.yaml",
                                       "crds/groups.aiq.dev.yaml", "crds/userquotas.aiq.dev.yaml"};
    for (int i = 0; i < 4; i++)
        if (load_yaml(s, crds[i], "customresourcedefinitions") != 0) {
            fprintf(stderr, "bench_operator: cannot load %s\n", crds[i]);
            apisrv_stop(s);
            return 1;
        }
    cordon(s, 1, 1e9); /* before the operator starts: all of them */

    pid_t op = fork();
    if (op == 0) {
        FILE *o = freopen(oplog, "w", stderr);
        (void)o;
        execl("build/rel/aiq-operator", "aiq-operator", "--kubeconfig", kc, "--db", db,
              "--metrics-addr", "127.0.0.1:0", "--cycle-ms", "1000", "--log-level", "info",
              (char *)NULL);
        _exit(127);
    }
    struct oplog_scan sc;
    memset(&sc, 0, sizeof sc);
    double t_ready = now_s();
    while ((scan(&sc, oplog), !sc.ready) && now_s() - t_ready < 30)
        usleep(50000);

    /* 1: create and wait for Queued. */
    double t0 = now_s();
    double setup_s = t0 - t_start;
    for (int i = 0; i < njobs; i++) {
        char b[768];
        snprintf(b, sizeof b,
                 "{\"apiVersion\":\"aiq.dev/v1alpha1\",\"kind\":\"AIJob\",\"metadata\":{\"name\":\"j%05d\","
                 "\"namespace\":\"default\"},\"spec\":{\"user\":\"u%d\",\"priority\":%d,\"resources\":"
                 "{\"gpus\":1,\"gpuMemoryMiB\":10240,\"cpu\":\"1\",\"memory\":\"4Gi\"},\"template\":"
                 "{\"metadata\":{\"annotations\":{\"sim.aiq.dev/duration\":\"1h\"}},\"spec\":"
                 "{\"containers\":[{\"name\":\"w\",\"image\":\"busybox\"}]}}}}",
                 i, i % 50, i % 10);
        apisrv_obj_create(s, "aijobs", json_tokener_parse(b), NULL);
    }
    double t_created = now_s();
    while ((scan(&sc, oplog), sc.queued < njobs) && now_s() - t0 < 45)
        usleep(100000);
    double t_queued = now_s();
    long q = sc.queued;

    /* 2: the raw patch rate of the same server, as many pod patches as
     * the operator will release, sent the way it sends them. */
    int want = njobs < nnodes * 8 ? njobs : nnodes * 8, raw_ok = 0;
    double raw_s = raw_patch(apisrv_port(s), njobs, want, &raw_ok);

    /* 3: uncordon; the operator admits and releases. */
    double t_u = now_s();
    int uncordoned = cordon(s, 0, 20);
    while ((scan(&sc, oplog), sc.released < want) && now_s() - t_u < rel_cap)
        usleep(100000);
    double t_rel = now_s();
    long nrel = sc.released, bpods = sc.batch_pods;
    double bsec = sc.batch_s;
    if (sc.f)
        fclose(sc.f);

    kill(op, SIGTERM);
    int st = 0;
    for (int i = 0; i < 50 && waitpid(op, &st, WNOHANG) == 0; i++)
        usleep(100000);
    if (waitpid(op, &st, WNOHANG) == 0) {
        kill(op, SIGKILL);
        waitpid(op, &st, 0);
    }
    double t_stop = now_s();
    apisrv_stop(s);
    double stop_s = now_s() - t_stop;

    double raw_rate = raw_s > 0 ? raw_ok / raw_s : 0;
    double rel_rate = bsec > 0 ? (double)bpods / bsec : 0;
    printf("operator at scale: %d one-GPU AIJobs, %d eight-GPU nodes (local cluster, in-process)\n",
           njobs, nnodes);
    printf("%-44s %12s\n", "measure", "value");
    printf("%-44s %12.2f\n", "setup: nodes, CRDs, cordon, operator (s)", setup_s);
    printf("%-44s %12.2f\n", "create AIJobs (s, in-process)", t_created - t0);
    printf("%-44s %12.2f\n", "until all Queued (s)", t_queued - t0);
    printf("%-44s %12ld\n", "Queued by the operator", q);
    printf("%-44s %12d\n", "nodes uncordoned (cap 20 s)", uncordoned);
    printf("%-44s %12d\n", "raw pod patches sent (4 clients, cap 15 s)", raw_ok);
    printf("%-44s %12.0f\n", "raw merge patches per s (baseline)", raw_rate);
    printf("%-44s %12ld\n", "pods released", nrel);
    printf("%-44s %12.2f\n", "uncordon -> last release (s)", t_rel - t_u);
    printf("%-44s %12.2f\n", "time inside release batches (s)", bsec);
    printf("%-44s %12.0f\n", "release patches per s (in batches)", rel_rate);
    printf("%-44s %12.0f\n", "pods released per s (uncordon -> last)",
           t_rel - t_u > 0 ? nrel / (t_rel - t_u) : 0);
    printf("%-44s %12.2f\n", "release / raw patch", raw_rate > 0 ? rel_rate / raw_rate : 0);
    printf("%-44s %12.2f\n", "operator stop + server stop (s)", t_stop - t_rel + stop_s);
    printf("%-44s %12.2f\n", "whole run (s)", now_s() - t_start);
    if (q < njobs)
        printf("note: only %ld of %d jobs were Queued within the time limit\n", q, njobs);
    if (nrel < want)
        printf("note: only %ld of %d pods were released within the time limit\n", nrel, want);
    printf("queued_10k_s=%.2f\n", t_queued - t0);
    printf("release_pods_per_s=%.0f\n", rel_rate);
    printf("release_vs_raw_patch=%.2f\n", raw_rate > 0 ? rel_rate / raw_rate : 0);
    if (!getenv("AIQ_BENCH_KEEP")) {
        char cmd[600];
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        if (system(cmd) != 0)
            fprintf(stderr, "bench_operator: could not remove %s\n", dir);
    } else {
        fprintf(stderr, "kept %s\n", dir);
    }
    return 0;
}
