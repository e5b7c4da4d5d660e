/* test_replay.c -- the decision journal and its replay: a simulated run
 * recorded into a store's journal (store_journal_event/decision, the
 * store API the operator journals through), read back from the store and
 * from its JSON-lines export, replayed through the queue core with the
 * same policy (every decision reproduced exactly), a tampered journal
 * detected, and a what-if under another policy that changes decisions. */
#include "operator/manifest.h"
#include "simulator/sim.h"
#include "test/unit/th.h"

#include <stdlib.h>
#include <string.h>

/* A rescore interval given to every preset load_preset compiles (0 =
 * the preset's own). */
static double preset_rescore_s;

static oppolicy *load_preset(const char *name) {
    char path[512];
    struct aiq_manifest *m = NULL;
    int n = 0;
    aiq_err e;
    aiq_err_clear(&e);
    snprintf(path, sizeof path, "%s/examples/policies/%s.yaml", th_srcdir(), name);
    if (!CHECK_INT(aiq_manifest_parse_file(path, &m, &n, &e), AIQ_OK))
        return NULL;
    oppolicy *p = NULL;
    if (CHECK(n >= 1 && m[0].rc == AIQ_OK)) {
        if (preset_rescore_s > 0)
            m[0].u.policy.spec.rescore_interval_s = preset_rescore_s;
        p = oppolicy_compile(&m[0].u.policy, &e);
        CHECK(p != NULL);
    }
    aiq_manifests_free(m, n);
    return p;
}

/* Records a run of a seeded synthetic trace under `policy` into a fresh
 * in-memory store; returns the store and fills *ndec with the decisions
 * the run made. */
static store *record(const char *policy, int njobs, int *ndec) {
    aiq_err e;
    aiq_err_clear(&e);
    store *s = store_open(":memory:", NULL, &e);
    oppolicy *pol = load_preset(policy);
    struct sim_trace *tr = sim_trace_create();
    struct sim_gen_opts g = {.seed = 2026, .njobs = njobs, .ngroups = 3, .users_per_group = 3, .mean_interarrival_s = 90};
    *ndec = 0;
    if (!CHECK(s && pol && tr) || !CHECK_INT(sim_generate(tr, &g, &e), AIQ_OK) ||
        !CHECK_INT(sim_nodes_from_spec(tr, "3x8xA100-80GB", &e), AIQ_OK))
        goto out;
    struct sim_config cfg;
    struct sim_result res;
    sim_config_for(&cfg, tr, pol);
    cfg.policy_name = policy;
    cfg.journal = s;
    cfg.collect_decisions = true;
    CHECK_INT(sim_run(&cfg, &res, &e), AIQ_OK);
    *ndec = res.ndec;
    sim_result_deinit(&res);
out:
    sim_trace_free(tr);
    oppolicy_free(pol);
    return s;
}

static void exact_replay(const char *policy) {
    int ndec = 0;
    store *s = record(policy, 200, &ndec);
    oppolicy *pol = load_preset(policy);
    struct sim_journal j;
    aiq_err e;
    aiq_err_clear(&e);
    if (!s || !pol)
        goto out;
    if (!CHECK_INT(sim_journal_read_store(s, &j, &e), AIQ_OK))
        goto out;
    CHECK_INT(j.trace->njobs, 200);
    CHECK_INT(j.trace->nnodes, 3);
    CHECK_STR(j.policy, policy);
    CHECK(j.predict);
    CHECK_INT(j.ndec, ndec);
    CHECK(ndec > 200); /* every job decided at least once, most several times */
    CHECK_INT(j.skipped, 0);
    long mism = -1;
    char first[512];
    CHECK_INT(sim_replay_check(&j, pol, policy, &mism, first, sizeof first, &e), AIQ_OK);
    if (!CHECK_INT(mism, 0))
        printf("    %s\n", first);
    CHECK_STR(first, "");
    sim_journal_deinit(&j);
out:
    oppolicy_free(pol);
    store_close(s);
}

TEST(exact_replay_priority) {
    exact_replay("priority");
}

TEST(exact_replay_fairshare) {
    exact_replay("fairshare");
}

TEST(exact_replay_srjf) {
    exact_replay("srjf");
}

/* With a rescore interval the simulation keeps unchanged jobs' scores
 * between its cycles and the replay runs only at the recorded decision
 * times, so the two compute scores at different cycles; both read a
 * waiting job's clock at the interval's start, so every decision and
 * score still comes out the same. */
TEST(exact_replay_rescore_interval) {
    preset_rescore_s = 600;
    exact_replay("priority");
    exact_replay("srjf");
    preset_rescore_s = 0;
}

TEST(replay_from_jsonl_and_tampering_is_found) {
    int ndec = 0;
    store *s = record("tiresias-las", 120, &ndec);
    oppolicy *pol = load_preset("tiresias-las");
    char *buf = NULL;
    size_t len = 0;
    long nlines = 0;
    struct sim_journal j;
    aiq_err e;
    aiq_err_clear(&e);
    if (!s || !pol)
        goto out;
    FILE *f = open_memstream(&buf, &len);
    CHECK_INT(store_journal_export_jsonl(s, f, 0, &nlines, &e), AIQ_OK);
    fclose(f);
    CHECK(nlines > ndec);
    f = fmemopen(buf, len, "r");
    CHECK_INT(sim_journal_read_jsonl(f, "journal.jsonl", &j, &e), AIQ_OK);
    fclose(f);
    long mism = -1;
    char first[512];
    CHECK_INT(sim_replay_check(&j, pol, "tiresias-las", &mism, first, sizeof first, &e),
              AIQ_OK);
    CHECK_INT(mism, 0);
    /* A journal that says something else is caught, and the first
     * difference is named. */
    int k = j.ndec / 2;
    j.dec[k].pos += 1;
    CHECK_INT(sim_replay_check(&j, pol, "tiresias-las", &mism, first, sizeof first, &e),
              AIQ_OK);
    CHECK_INT(mism, 1);
    CHECK(strstr(first, "recorded:") != NULL && strstr(first, "replayed:") != NULL);
    if (!CHECK(strstr(first, j.trace->jobs[j.dec[k].job].id) != NULL))
        printf("    first: %s\n", first);
    sim_journal_deinit(&j);
out:
    free(buf);
    oppolicy_free(pol);
    store_close(s);
}

TEST(journal_line_errors) {
    char text[] = "{\"type\":\"event\",\"t\":5,\"kind\":\"node\",\"key\":\"n1\","
                  "\"payload\":{\"gpus\":8,\"gpu_memory_mib\":81920}}\n"
                  "{\"type\":\"event\",\"t\":6,\n";
    FILE *f = fmemopen(text, strlen(text), "r");
    struct sim_journal j;
    aiq_err e;
    aiq_err_clear(&e);
    CHECK_INT(sim_journal_read_jsonl(f, "j.jsonl", &j, &e), AIQ_EPARSE);
    CHECK(strstr(e.message, "j.jsonl:2:") == e.message);
    CHECK_INT(e.line, 2);
    CHECK(j.trace == NULL); /* nothing half-filled */
    fclose(f);
}

TEST(whatif_changes_decisions) {
    int ndec = 0;
    store *s = record("priority", 150, &ndec);
    oppolicy *fifo = load_preset("fifo"), *prio = load_preset("priority");
    struct sim_journal j;
    struct sim_result res;
    aiq_err e;
    aiq_err_clear(&e);
    if (!s || !fifo || !prio)
        goto out;
    if (!CHECK_INT(sim_journal_read_store(s, &j, &e), AIQ_OK))
        goto out;
    long changed = -1;
    /* The same policy in simulated time starts every job as recorded. */
    CHECK_INT(sim_replay_whatif(&j, prio, "priority", &res, &changed, &e), AIQ_OK);
    CHECK_INT(changed, 0);
    sim_result_deinit(&res);
    /* fifo ignores priority: some jobs start at other times. */
    CHECK_INT(sim_replay_whatif(&j, fifo, "fifo", &res, &changed, &e), AIQ_OK);
    CHECK(changed > 0);
    CHECK_INT(res.njobs, 150);
    sim_result_deinit(&res);
    sim_journal_deinit(&j);
out:
    oppolicy_free(fifo);
    oppolicy_free(prio);
    store_close(s);
}

/* An operator journal with a failed attempt, by hand (fifo: score =
 * job.age_hours, whole hours so every score is exact). One 8-GPU node;
 * A and B (8 GPUs each) arrive at 10h. 11h: A admitted, B waits. 12h: A's
 * pod fails, A is requeued with backoff until 13.5h. 13h: B admitted (A,
 * in backoff, is in no cycle). 14h: A waits again (a new attempt, so the
 * decision is journaled). 15h: B ends. 16h: A admitted. 17h: A ends. */
static const char requeue_journal[] =
    "{\"type\":\"event\",\"t\":36000,\"kind\":\"policy\",\"key\":\"fifo\","
    "\"payload\":{\"active\":\"fifo\",\"predict\":false}}\n"
    "{\"type\":\"event\",\"t\":36000,\"kind\":\"node\",\"key\":\"n1\","
    "\"payload\":{\"gpus\":8,\"gpu_memory_mib\":81920}}\n"
    "{\"type\":\"event\",\"t\":36000,\"kind\":\"job_arrival\",\"key\":\"default/a\","
    "\"payload\":{\"uid\":\"uid-a\",\"group\":\"g\",\"created\":36000,\"queued\":36000,"
    "\"spec\":{\"user\":\"alice\",\"resources\":{\"gpus\":8,\"gpuMemoryMiB\":40960}}}}\n"
    "{\"type\":\"event\",\"t\":36000,\"kind\":\"job_arrival\",\"key\":\"default/b\","
    "\"payload\":{\"uid\":\"uid-b\",\"group\":\"g\",\"created\":36000,\"queued\":36000,"
    "\"spec\":{\"user\":\"alice\",\"resources\":{\"gpus\":8,\"gpuMemory\":\"40Gi\"}}}}\n"
    "{\"type\":\"decision\",\"t\":39600,\"cycle\":1,\"job\":\"uid-a\",\"action\":\"admit\","
    "\"level\":0,\"position\":1,\"score\":1,\"reason\":\"Admitted\"}\n"
    "{\"type\":\"decision\",\"t\":39600,\"cycle\":1,\"job\":\"uid-b\",\"action\":\"wait\","
    "\"level\":0,\"position\":2,\"score\":1,\"reason\":\"WaitingForGPUs\"}\n"
    "{\"type\":\"event\",\"t\":39601,\"kind\":\"job_start\",\"key\":\"default/a\","
    "\"payload\":{\"uid\":\"uid-a\",\"attempt\":1,\"started\":39601}}\n"
    "{\"type\":\"event\",\"t\":43200,\"kind\":\"job_departure\",\"key\":\"default/a\","
    "\"payload\":{\"uid\":\"uid-a\",\"attempt\":1,\"outcome\":\"Failed\",\"runtime_s\":3599}}\n"
    "{\"type\":\"event\",\"t\":43200,\"kind\":\"job_requeue\",\"key\":\"default/a\","
    "\"payload\":{\"uid\":\"uid-a\",\"attempt\":1,\"queued\":43200,\"backoff_until\":48600,"
    "\"reason\":\"PodFailed\"}}\n"
    "{\"type\":\"decision\",\"t\":46800,\"cycle\":2,\"job\":\"uid-b\",\"action\":\"admit\","
    "\"level\":0,\"position\":1,\"score\":3,\"reason\":\"Admitted\"}\n"
    "{\"type\":\"event\",\"t\":46801,\"kind\":\"job_start\",\"key\":\"default/b\","
    "\"payload\":{\"uid\":\"uid-b\",\"attempt\":1,\"started\":46801}}\n"
    "{\"type\":\"decision\",\"t\":50400,\"cycle\":3,\"job\":\"uid-a\",\"action\":\"wait\","
    "\"level\":0,\"position\":1,\"score\":4,\"reason\":\"WaitingForGPUs\"}\n"
    "{\"type\":\"event\",\"t\":54000,\"kind\":\"job_departure\",\"key\":\"default/b\","
    "\"payload\":{\"uid\":\"uid-b\",\"attempt\":1,\"outcome\":\"Succeeded\",\"runtime_s\":7199}}\n"
    "{\"type\":\"decision\",\"t\":57600,\"cycle\":4,\"job\":\"uid-a\",\"action\":\"admit\","
    "\"level\":0,\"position\":1,\"score\":6,\"reason\":\"Admitted\"}\n"
    "{\"type\":\"event\",\"t\":57601,\"kind\":\"job_start\",\"key\":\"default/a\","
    "\"payload\":{\"uid\":\"uid-a\",\"attempt\":2,\"started\":57601}}\n"
    "{\"type\":\"event\",\"t\":61200,\"kind\":\"job_departure\",\"key\":\"default/a\","
    "\"payload\":{\"uid\":\"uid-a\",\"attempt\":2,\"outcome\":\"Succeeded\",\"runtime_s\":3599}}\n";

/* Reads text as a journal and replays it under fifo: AIQ_OK and the
 * mismatch count, or the read error. */
static aiq_rc replay_text(const char *text, long *mism, char *first, size_t cap,
                          struct sim_journal *out, aiq_err *e) {
    FILE *f = fmemopen((void *)text, strlen(text), "r");
    oppolicy *pol = load_preset("fifo");
    aiq_rc rc = AIQ_EINVAL;
    *mism = -1;
    if (!CHECK(f && pol))
        goto out;
    if ((rc = sim_journal_read_jsonl(f, "rq.jsonl", out, e)) == AIQ_OK)
        rc = sim_replay_check(out, pol, "fifo", mism, first, cap, e);
out:
    if (f)
        fclose(f);
    oppolicy_free(pol);
    return rc;
}

TEST(requeue_replays_exactly) {
    struct sim_journal j;
    long mism = -1;
    char first[512] = "";
    aiq_err e;
    aiq_err_clear(&e);
    if (!CHECK_INT(replay_text(requeue_journal, &mism, first, sizeof first, &j, &e), AIQ_OK)) {
        printf("    %s\n", e.message);
        return;
    }
    if (!CHECK_INT(mism, 0))
        printf("    %s\n", first);
    CHECK_INT(j.skipped, 0); /* job_start and job_requeue understood */
    CHECK_INT(j.ndec, 5);
    /* The retry is a second entry for uid-a: arriving when its backoff
     * ends (13.5h, after B), queued from the requeue, created at 10h. */
    if (CHECK_INT(j.trace->njobs, 3)) {
        /* A's spec says gpuMemoryMiB, B's the quantity gpuMemory. */
        CHECK_INT(j.trace->jobs[0].gpu_mem_mib, 40960);
        CHECK_INT(j.trace->jobs[1].gpu_mem_mib, 40960);
        CHECK_STR(j.trace->jobs[2].id, "uid-a");
        CHECK_DBL(j.trace->jobs[2].submit, 48600 - 36000, 1e-9);
        CHECK_DBL(j.trace->jobs[2].queued, 43200 - 36000, 1e-9);
        CHECK_DBL(j.trace->jobs[2].created, 0, 1e-9);
        CHECK_DBL(j.depart_t[0], 43200, 1e-9); /* the failed attempt */
        CHECK_DBL(j.depart_t[2], 61200, 1e-9);
        CHECK_INT(j.dec[4].job, 2);
    }
    sim_journal_deinit(&j);
}

/* Replace the first occurrence of `from` in src by `to` (into dst). */
static void swap_text(char *dst, size_t cap, const char *src, const char *from, const char *to) {
    const char *p = strstr(src, from);
    if (!CHECK(p != NULL)) {
        snprintf(dst, cap, "%s", src);
        return;
    }
    snprintf(dst, cap, "%.*s%s%s", (int)(p - src), src, to, p + strlen(from));
}

TEST(requeue_journal_that_lies_is_caught) {
    static char buf[sizeof requeue_journal + 64];
    struct sim_journal j;
    long mism = -1;
    char first[512] = "";
    aiq_err e;
    aiq_err_clear(&e);
    /* Without its backoff the retry would be decided on at 13h: a
     * journal whose backoff ends at 12h does not replay. */
    swap_text(buf, sizeof buf, requeue_journal, "\"backoff_until\":48600",
              "\"backoff_until\":43200");
    if (CHECK_INT(replay_text(buf, &mism, first, sizeof first, &j, &e), AIQ_OK)) {
        CHECK(mism > 0);
        CHECK(strstr(first, "uid-a") != NULL);
        sim_journal_deinit(&j);
    }
    /* Dropping the requeue leaves A finished at 12h: its later decisions
     * are not reproduced. */
    swap_text(buf, sizeof buf, requeue_journal, "\"kind\":\"job_requeue\"",
              "\"kind\":\"job_requeux\"");
    if (CHECK_INT(replay_text(buf, &mism, first, sizeof first, &j, &e), AIQ_OK)) {
        CHECK(mism > 0);
        CHECK_INT(j.skipped, 1);
        sim_journal_deinit(&j);
    }
    /* A bad field is named with its line. */
    swap_text(buf, sizeof buf, requeue_journal, "\"queued\":43200", "\"queued\":-5");
    CHECK_INT(replay_text(buf, &mism, first, sizeof first, &j, &e), AIQ_EPARSE);
    CHECK(strstr(e.message, "rq.jsonl:9: job_requeue uid-a: 'queued'") != NULL);
}

/* The same journal, but A's pods take until 12.75h to go (job_released):
 * the operator's queue held A's GPUs until then, so at 12.5h B waits for
 * a job being stopped (Preempting). The replay frees A's GPUs at the
 * job_released, not at the failure, and reproduces that wait; without the
 * event it would admit B at 12.5h. */
TEST(failed_attempt_holds_its_gpus_until_released) {
    static char buf[sizeof requeue_journal + 512];
    struct sim_journal j;
    long mism = -1;
    char first[512] = "";
    aiq_err e;
    aiq_err_clear(&e);
    swap_text(buf, sizeof buf, requeue_journal, "{\"type\":\"decision\",\"t\":46800",
              "{\"type\":\"decision\",\"t\":45000,\"cycle\":2,\"job\":\"uid-b\","
              "\"action\":\"wait\",\"level\":0,\"position\":1,\"score\":2.5,"
              "\"reason\":\"Preempting\"}\n"
              "{\"type\":\"event\",\"t\":45900,\"kind\":\"job_released\",\"key\":\"default/a\","
              "\"payload\":{\"uid\":\"uid-a\",\"attempt\":1}}\n"
              "{\"type\":\"decision\",\"t\":46800");
    if (!CHECK_INT(replay_text(buf, &mism, first, sizeof first, &j, &e), AIQ_OK)) {
        printf("    %s\n", e.message);
        return;
    }
    if (!CHECK_INT(mism, 0))
        printf("    %s\n", first);
    CHECK_INT(j.skipped, 0);
    CHECK_INT(j.ndec, 6);
    if (CHECK_INT(j.trace->njobs, 3)) {
        CHECK_DBL(j.depart_t[0], 43200, 1e-9);   /* the attempt ended at the failure */
        CHECK_DBL(j.release_t[0], 45900, 1e-9);  /* ... and its pods were gone here */
        CHECK_DBL(j.trace->jobs[2].submit, 48600 - 36000, 1e-9); /* backoff ends later */
    }
    sim_journal_deinit(&j);
    /* Without the job_released event, A's GPUs are free at 12h and the
     * replay admits B at 12.5h: the recorded wait is not reproduced. */
    static char buf2[sizeof buf];
    swap_text(buf2, sizeof buf2, buf, "\"kind\":\"job_released\"", "\"kind\":\"job_releasex\"");
    if (CHECK_INT(replay_text(buf2, &mism, first, sizeof first, &j, &e), AIQ_OK)) {
        CHECK(mism > 0);
        CHECK(strstr(first, "Preempting") != NULL);
        sim_journal_deinit(&j);
    }
}

/* Preemptions and elastic resizes replay exactly: a Tiresias-like trace
 * (checkpointing and elastic jobs) recorded under elastic-tiresias; the
 * journal carries the actions (decisions "preempt"/"resize" naming the
 * job they are for) and when they took effect (job_preempted,
 * job_resized). Moving one job_preempted later, or dropping the job a
 * victim was preempted for, is caught. */
TEST(preemption_and_resizes_replay_exactly) {
    aiq_err e;
    aiq_err_clear(&e);
    store *s = store_open(":memory:", NULL, &e);
    oppolicy *pol = load_preset("elastic-tiresias");
    struct sim_trace *tr = sim_trace_create();
    struct sim_gen_opts g = {.seed = 7, .njobs = 80, .mean_interarrival_s = 600, .tiresias = true,
                             .max_gpus = 8, .checkpoint_frac = 0.5, .elastic_frac = 0.5};
    struct sim_journal j;
    memset(&j, 0, sizeof j);
    char *buf = NULL;
    size_t len = 0;
    if (!CHECK(s && pol && tr) || !CHECK_INT(sim_generate(tr, &g, &e), AIQ_OK) ||
        !CHECK_INT(sim_nodes_from_spec(tr, "2x8xA100-80GB", &e), AIQ_OK))
        goto out;
    /* Protections from the spec (as the operator journals them): every
     * 5th job asks for a minimum runtime, every 7th is nonPreemptible. */
    for (int i = 0; i < tr->njobs; i++) {
        tr->jobs[i].min_runtime_s = i % 5 == 0 ? 1800 : 0;
        tr->jobs[i].non_preemptible = i % 7 == 3;
    }
    struct sim_config cfg;
    struct sim_result res;
    sim_config_for(&cfg, tr, pol);
    cfg.policy_name = "elastic-tiresias";
    cfg.journal = s;
    cfg.collect_decisions = true;
    if (!CHECK_INT(sim_run(&cfg, &res, &e), AIQ_OK))
        printf("    %s\n", e.message);
    long npre = res.npreempt, nshr = res.nshrink, ngrow = res.ngrow;
    for (int i = 0; i < tr->njobs && res.jobs; i++)
        if (tr->jobs[i].non_preemptible)
            CHECK_INT(res.jobs[i].preemptions, 0);
    sim_result_deinit(&res);
    CHECK(npre > 5 && nshr > 0 && ngrow > 5);
    FILE *f = open_memstream(&buf, &len);
    CHECK_INT(store_journal_export_jsonl(s, f, 0, NULL, &e), AIQ_OK);
    fclose(f);
    CHECK(strstr(buf, "\"kind\":\"job_preempted\"") != NULL);
    CHECK(strstr(buf, "\"kind\":\"job_resized\"") != NULL);
    CHECK(strstr(buf, "\"action\":\"preempt\"") != NULL);
    CHECK(strstr(buf, "\"action\":\"resize\"") != NULL);
    CHECK(strstr(buf, "\"checkpointInterval\":\"600s\"") != NULL);
    CHECK(strstr(buf, "\"minRuntime\":\"1800s\"") != NULL);
    CHECK(strstr(buf, "\"nonPreemptible\":true") != NULL);
    f = fmemopen(buf, len, "r");
    aiq_rc rc = sim_journal_read_jsonl(f, "p.jsonl", &j, &e);
    fclose(f);
    if (!CHECK_INT(rc, AIQ_OK))
        goto out;
    CHECK_INT(j.skipped, 0);
    CHECK(j.nstops >= npre);
    long mism = -1;
    char first[512];
    CHECK_INT(sim_replay_check(&j, pol, "elastic-tiresias", &mism, first, sizeof first, &e), AIQ_OK);
    if (!CHECK_INT(mism, 0))
        printf("    %s\n", first);
    /* the protections are read back: without them the replay differs */
    for (int i = 0; i < j.trace->njobs; i++) {
        CHECK(j.trace->jobs[i].min_runtime_s == tr->jobs[i].min_runtime_s);
        CHECK(j.trace->jobs[i].non_preemptible == tr->jobs[i].non_preemptible);
    }
    for (int i = 0; i < j.trace->njobs; i++) {
        j.trace->jobs[i].min_runtime_s = 0;
        j.trace->jobs[i].non_preemptible = false;
    }
    CHECK_INT(sim_replay_check(&j, pol, "elastic-tiresias", &mism, first, sizeof first, &e), AIQ_OK);
    CHECK(mism > 0);
    for (int i = 0; i < j.trace->njobs; i++) {
        j.trace->jobs[i].min_runtime_s = tr->jobs[i].min_runtime_s;
        j.trace->jobs[i].non_preemptible = tr->jobs[i].non_preemptible;
    }
    /* a victim gone later than it was */
    int k = -1;
    for (int x = 0; x < j.nstops && k < 0; x++)
        if (j.stops[x].replicas < 0) k = x;
    if (CHECK(k >= 0)) {
        j.stops[k].t += 600;
        CHECK_INT(sim_replay_check(&j, pol, "elastic-tiresias", &mism, first, sizeof first, &e),
                  AIQ_OK);
        CHECK(mism > 0);
        j.stops[k].t -= 600;
    }
    /* a preemption recorded for another job */
    for (int x = 0; x < j.ndec; x++)
        if (j.dec[x].action == Q_DEC_PREEMPT) {
            j.dec[x].by = j.dec[x].by == 0 ? 1 : 0;
            CHECK_INT(sim_replay_check(&j, pol, "elastic-tiresias", &mism, first, sizeof first, &e),
                      AIQ_OK);
            CHECK_INT(mism, 1);
            CHECK(strstr(first, "for=") != NULL);
            break;
        }
out:
    sim_journal_deinit(&j);
    free(buf);
    sim_trace_free(tr);
    oppolicy_free(pol);
    store_close(s);
}
