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
    if (CHECK(n >= 1 && m[0].rc == AIQ_OK))
        p = oppolicy_compile(&m[0].u.policy, &e);
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
    struct sim_gen_opts g = {2026, njobs, 3, 3, 90, 0};
    *ndec = 0;
    if (!CHECK(s && pol && tr) || !CHECK_INT(sim_generate(tr, &g, &e), AIQ_OK) ||
        !CHECK_INT(sim_nodes_from_spec(tr, "3x8xA100-80GB", &e), AIQ_OK))
        goto out;
    struct sim_config cfg;
    struct sim_result res;
    sim_config_init(&cfg);
    cfg.trace = tr;
    cfg.nodes = tr->nodes;
    cfg.nnodes = tr->nnodes;
    cfg.policy = pol;
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
