/* bench_store.c -- a micro-benchmark of operator/store.c alone: what a
 * queue cycle costs the SQLite store, on a file in /tmp (WAL,
 * synchronous=NORMAL, as the operator runs it):
 *
 *   cycle    10,000 jobs: spec upsert + status + one journal decision each,
 *            in one transaction per cycle (the operator's way)
 *   auto     the same three writes per job, each its own transaction
 *            (the baseline: what batching per cycle saves), on fewer jobs
 *            so the run stays short
 *   reload   store_list_jobs(active) of the 10,000 jobs (operator restart)
 *   usage    store_usage_each over 500 users x 720 hourly buckets (a
 *            cycle's fair-share input)
 *
 * Ends with store_cycle_writes_per_s=, store_batched_vs_autocommit=
 * (cycle writes/s over auto writes/s, higher is better), store_reload_ms=
 * store_usage_each_ms= (a read from SQLite: the first cycle, or after a
 * usage write) and store_usage_each_next_cycle_ms= (the next cycle's read
 * with nothing written between: the kept sums, decayed). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "operator/store.h"

#define NJOBS 10000
#define NAUTO 1000
#define NUSERS 500
#define NBUCKETS 720

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what, const aiq_err *err) {
    fprintf(stderr, "bench_store: %s: %s\n", what, err->message);
    exit(1);
}

/* The three writes a cycle makes for one job. */
static void job_writes(store *s, int i, int64_t cycle, aiq_err *err) {
    char uid[32], name[32], user[16];
    snprintf(uid, sizeof uid, "uid-%06d", i);
    snprintf(name, sizeof name, "job-%06d", i);
    snprintf(user, sizeof user, "u%03d", i % NUSERS);
    struct aiq_aijob j = {0};
    j.meta.uid = uid;
    j.meta.name = name;
    j.meta.namespace_ = "team-a";
    j.meta.creation_time = 1700000000 + i;
    j.spec.user = user;
    j.spec.replicas = 1;
    j.spec.resources.gpus = 1;
    j.spec.resources.gpu_memory_mib = 40960;
    j.spec.backoff_limit = 3;
    if (store_upsert_job(s, &j, "nlp", err)) die("upsert job", err);
    struct store_job_status st = {AIQ_PHASE_QUEUED, i % 3, i, 1.0 / (i + 1),
                                  "waiting for a free GPU", 0, 0};
    if (store_job_set_status(s, uid, &st, err)) die("job status", err);
    struct store_decision d = {.cycle = cycle, .t = 1700000000 + i,
                               .job_uid = uid, .action = "wait",
                               .level = i % 3, .position = i,
                               .score = 1.0 / (i + 1),
                               .terms_json = "[{\"t\":\"wait\",\"v\":0.5}]",
                               .reason = "NoCapacity"};
    if (store_journal_decision(s, &d, err)) die("decision", err);
}

static int count_job(const struct store_job *j, void *ctx) {
    (void)j;
    ++*(long *)ctx;
    return 0;
}

static int sum_usage(const char *u, const char *g, double h, void *ctx) {
    (void)u;
    (void)g;
    *(double *)ctx += h;
    return 0;
}

int main(void) {
    char dir[] = "/tmp/aiq-bench-store.XXXXXX";
    char path[96];
    aiq_err err = {0};
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(path, sizeof path, "%s/aiq.db", dir);
    store *s = store_open(path, NULL, &err);
    if (!s) die("open", &err);

    /* cycle: all jobs in one transaction */
    double t0 = now_s();
    if (store_begin(s, &err)) die("begin", &err);
    for (int i = 0; i < NJOBS; i++) job_writes(s, i, 1, &err);
    if (store_commit(s, &err)) die("commit", &err);
    double cycle_s = now_s() - t0;
    double cycle_wps = 3.0 * NJOBS / cycle_s;

    /* auto: each write its own transaction (new uids, same shape) */
    t0 = now_s();
    for (int i = 0; i < NAUTO; i++) job_writes(s, NJOBS + i, 2, &err);
    double auto_s = now_s() - t0;
    double auto_wps = 3.0 * NAUTO / auto_s;

    /* reload */
    long n = 0;
    t0 = now_s();
    if (store_list_jobs(s, true, count_job, &n, &err)) die("list", &err);
    double reload_ms = (now_s() - t0) * 1e3;

    /* usage */
    if (store_begin(s, &err)) die("begin", &err);
    for (int u = 0; u < NUSERS; u++) {
        char user[16];
        snprintf(user, sizeof user, "u%03d", u);
        for (int b = 0; b < NBUCKETS; b++)
            if (store_usage_add(s, user, "nlp", 1700000000.0 + b * 3600.0,
                                1800, &err))
                die("usage add", &err);
    }
    if (store_commit(s, &err)) die("commit", &err);
    double total = 0;
    t0 = now_s();
    if (store_usage_each(s, 1700000000.0 + NBUCKETS * 3600.0, 7 * 86400,
                         sum_usage, &total, &err))
        die("usage each", &err);
    double usage_ms = (now_s() - t0) * 1e3;
    /* The next cycle's read, one second later, with no usage written in
     * between: what the operator pays per cycle at rest. */
    double total2 = 0;
    t0 = now_s();
    if (store_usage_each(s, 1700000001.0 + NBUCKETS * 3600.0, 7 * 86400,
                         sum_usage, &total2, &err))
        die("usage each", &err);
    double usage_next_ms = (now_s() - t0) * 1e3;

    printf("operator/store.c alone on a temp file, micro-benchmark (not the running operator's\n"
           "database: see bench_operator_e2e)\n");
    printf("%-10s %10s %12s %14s\n", "case", "jobs", "seconds", "writes/s");
    printf("%-10s %10d %12.3f %14.0f\n", "cycle", NJOBS, cycle_s, cycle_wps);
    printf("%-10s %10d %12.3f %14.0f\n", "auto", NAUTO, auto_s, auto_wps);
    printf("reload: %ld active jobs in %.1f ms\n", n, reload_ms);
    printf("usage: %d users x %d buckets, decayed sum %.1f GPU-h, %.1f ms (read from SQLite);\n"
           "       the next cycle's read (kept, decayed one step): %.1f GPU-h, %.3f ms\n",
           NUSERS, NBUCKETS, total, usage_ms, total2, usage_next_ms);
    printf("store_cycle_writes_per_s=%.0f\n", cycle_wps);
    printf("store_batched_vs_autocommit=%.1f\n", cycle_wps / auto_wps);
    printf("store_reload_ms=%.1f\n", reload_ms);
    printf("store_usage_each_ms=%.1f\n", usage_ms);
    printf("store_usage_each_next_cycle_ms=%.3f\n", usage_next_ms);

    store_close(s);
    static const char *const sfx[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        char p[128];
        snprintf(p, sizeof p, "%s%s", path, sfx[i]);
        unlink(p);
    }
    rmdir(dir);
    return 0;
}
