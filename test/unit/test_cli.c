/* test_cli.c -- the helpers behind `kubectl aiq` (tools/cli_table.c,
 * tools/cli_rank.c): kubectl-style column layout, age strings at each
 * boundary of kubectl's format, the YAML printer, factor vectors rebuilt
 * from API objects, the what-if ranking under a compiled policy, and
 * explain's headroom rows (tools/cli_headroom.c) in human units. */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli_headroom.h"
#include "tools/cli_out.h"
#include "tools/cli_rank.h"
#include "tools/cli_table.h"
#include "operator/manifest.h"
#include "common/units.h"
#include "test/unit/th.h"

/* Renders through a memstream; caller frees. */
static char *table_text(const cli_table *t) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cli_table_print(t, f);
    fclose(f);
    return buf;
}

TEST(table_columns_like_tabwriter) {
    const char *hdr[] = {"NAME", "GPUS", "REASON"};
    const char *r1[] = {"a", "16", "waiting for GPUs"};
    const char *r2[] = {"longer-name", "2", ""};
    cli_table *t = cli_table_create(3, hdr);
    CHECK(t != NULL);
    CHECK_INT(cli_table_add(t, r1), AIQ_OK);
    CHECK_INT(cli_table_add(t, r2), AIQ_OK);
    CHECK_INT(cli_table_rows(t), 2);
    char *s = table_text(t);
    /* widest cell + two spaces; the last column is not padded */
    CHECK_STR(s, "NAME         GPUS  REASON\n"
                 "a            16    waiting for GPUs\n"
                 "longer-name  2     \n");
    free(s);
    cli_table_free(t);
    cli_table_free(NULL);
}

TEST(table_colour_escapes_take_no_width) {
    const char *hdr[] = {"LEVEL", "POS"};
    const char *r1[] = {"\033[36mmain\033[0m", "1"};
    const char *r2[] = {"starving", "2"};
    cli_table *t = cli_table_create(2, hdr);
    cli_table_add(t, r1);
    cli_table_add(t, r2);
    char *s = table_text(t);
    CHECK_STR(s, "LEVEL     POS\n\033[36mmain\033[0m      1\nstarving  2\n");
    CHECK_INT(cli_display_width("\033[1mé\033[0mx"), 2); /* UTF-8: one column per code point */
    free(s);
    cli_table_free(t);
}

TEST(table_rejects_bad_shapes_and_cuts_long_cells) {
    const char *hdr[] = {"A"};
    CHECK(cli_table_create(0, hdr) == NULL);
    CHECK(cli_table_create(CLI_TABLE_MAX_COLS + 1, NULL) == NULL);
    char *big = malloc(CLI_TABLE_MAX_CELL + 100);
    memset(big, 'x', CLI_TABLE_MAX_CELL + 99);
    big[CLI_TABLE_MAX_CELL + 99] = '\0';
    const char *row[] = {big};
    cli_table *t = cli_table_create(1, hdr);
    CHECK_INT(cli_table_add(t, row), AIQ_OK);
    char *s = table_text(t);
    CHECK_INT(strlen(s), 2 + CLI_TABLE_MAX_CELL + 1); /* "A\n" + cell + "\n" */
    free(s);
    free(big);
    cli_table_free(t);
}

TEST(human_duration_boundaries) {
    static const struct {
        double s;
        const char *want;
    } cases[] = {
        {-5, "0s"}, {0, "0s"}, {119, "119s"}, {120, "2m"}, {125, "2m5s"},
        {599, "9m59s"}, {600, "10m"}, {10799, "179m"}, {10800, "3h"},
        {3 * 3600 + 30 * 60, "3h30m"}, {8 * 3600 - 1, "7h59m"}, {8 * 3600, "8h"},
        {47 * 3600, "47h"}, {48 * 3600, "2d"}, {49 * 3600, "2d1h"},
        {8 * 86400, "8d"}, {729 * 86400, "729d"}, {730 * 86400, "2y"},
        {731 * 86400, "2y1d"}, {2920.0 * 86400, "8y"},
    };
    char buf[32];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK_STR(cli_human_duration(buf, sizeof buf, cases[i].s), cases[i].want);
}

static char *yaml_of(const char *json) {
    json_object *o = json_tokener_parse(json);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cli_print_yaml(o, f, 0);
    fclose(f);
    json_object_put(o);
    return buf;
}

TEST(yaml_printer_nests_and_quotes) {
    char *s = yaml_of("{\"kind\":\"QueueView\",\"items\":[{\"name\":\"a\",\"score\":1.5,"
                      "\"terms\":[\"x\",\"y\"]},{\"name\":\"true\",\"message\":\"a: b\"}],"
                      "\"empty\":{},\"none\":null,\"s\":\"\",\"n\":\"42\"}");
    CHECK_STR(s, "kind: QueueView\n"
                 "items:\n"
                 "- name: a\n"
                 "  score: 1.5\n"
                 "  terms:\n"
                 "  - x\n"
                 "  - y\n"
                 "- name: \"true\"\n"
                 "  message: \"a: b\"\n"
                 "empty: {}\n"
                 "none: null\n"
                 "s: \"\"\n"
                 "n: \"42\"\n");
    free(s);
}

/* ---- factors and ranking ----------------------------------------------------- */

static const char *GROUP_JSON =
    "{\"apiVersion\":\"aiq.dev/v1alpha1\",\"kind\":\"Group\",\"metadata\":{\"name\":\"vision\"},"
    "\"spec\":{\"level\":3,\"namespaces\":[\"team-v\"],\"quota\":{\"gpus\":16},"
    "\"budget\":{\"gpuHours\":100,\"window\":\"7d\"},"
    "\"members\":[{\"user\":\"alice\",\"level\":5}]},"
    "\"status\":{\"usage\":{\"gpus\":4,\"gpuHours\":40}}}";

static json_object *job_json(const char *name, const char *user, int prio, int replicas, int gpus,
                             const char *est, const char *queued, const char *pred) {
    char buf[1024];
    snprintf(buf, sizeof buf,
             "{\"apiVersion\":\"aiq.dev/v1alpha1\",\"kind\":\"AIJob\","
             "\"metadata\":{\"name\":\"%s\",\"namespace\":\"team-v\",\"creationTimestamp\":\"2026-01-01T00:00:00Z\"},"
             "\"spec\":{\"user\":\"%s\",\"priority\":%d,\"replicas\":%d,\"estimatedRuntime\":\"%s\","
             "\"resources\":{\"gpus\":%d,\"gpuMemoryMiB\":2048,\"cpu\":\"2\",\"memory\":\"4Gi\"}},"
             "\"status\":{\"phase\":\"Queued\",\"queuedTime\":\"%s\",\"position\":1,\"score\":7%s%s}}",
             name, user, prio, replicas, est, gpus, queued, pred ? ",\"predictedRuntime\":" : "",
             pred ? pred : "");
    return json_tokener_parse(buf);
}

struct fixture {
    json_object *gobj;
    struct aiq_group g;
    json_object *gst;
    struct cli_world w;
};

static void fixture_init(struct fixture *fx, double now) {
    aiq_err e;
    memset(fx, 0, sizeof *fx);
    aiq_err_clear(&e);
    fx->gobj = json_tokener_parse(GROUP_JSON);
    CHECK_INT(aiq_group_from_json(fx->gobj, &fx->g, &e), AIQ_OK);
    json_object_object_get_ex(fx->gobj, "status", &fx->gst);
    fx->w.groups = &fx->g;
    fx->w.group_status = &fx->gst;
    fx->w.ngroups = 1;
    fx->w.now = now;
    fx->w.total_gpus = 16;
    fx->w.free_gpus = 12;
}

static void fixture_deinit(struct fixture *fx) {
    aiq_group_deinit(&fx->g);
    json_object_put(fx->gobj);
}

TEST(job_factors_rebuilt_from_objects) {
    struct fixture fx;
    struct cli_job j;
    aiq_err e;
    aiq_err_clear(&e);
    /* queued one hour before now (2026-01-01T01:00:00Z = 1767229200) */
    fixture_init(&fx, 1767229200.0 + 3600);
    json_object *o = job_json("a", "alice", 9, 2, 4, "2h", "2026-01-01T01:00:00Z", "5400");
    CHECK_INT(cli_job_load(o, &fx.w, &j, &e), AIQ_OK);
    CHECK_STR(j.group, "vision");   /* from the namespace */
    CHECK_STR(j.phase, "Queued");
    CHECK_INT(j.gpus, 8);
    CHECK_DBL(j.f[FX_F_USER_LEVEL], 5, 0);
    CHECK_DBL(j.f[FX_F_GROUP_LEVEL], 3, 0);
    CHECK_DBL(j.f[FX_F_JOB_PRIORITY], 9, 0);
    CHECK_DBL(j.f[FX_F_JOB_GPUS], 8, 0);
    CHECK_DBL(j.f[FX_F_JOB_GPU_MEMORY_GIB], 16, 1e-9); /* 2 x 4 x 2 GiB */
    CHECK_DBL(j.f[FX_F_JOB_CPU], 4, 1e-9);
    CHECK_DBL(j.f[FX_F_WAIT_HOURS], 1, 1e-9);
    CHECK_DBL(j.f[FX_F_RUNTIME_ESTIMATE_HOURS], 2, 1e-9);
    CHECK_DBL(j.f[FX_F_RUNTIME_PREDICTED_HOURS], 1.5, 1e-9); /* status wins */
    CHECK_DBL(j.f[FX_F_QUOTA_GROUP_SHARE], 0.25, 1e-9);
    CHECK_DBL(j.f[FX_F_BUDGET_GROUP_LEFT], 60, 1e-9);
    CHECK_DBL(j.f[FX_F_BUDGET_USER_LEFT], 1e9, 0);
    CHECK_DBL(j.f[FX_F_JOB_IS_GANG], 1, 0);
    CHECK(!(j.approx & (1u << FX_F_RUNTIME_PREDICTED_HOURS)));
    CHECK(j.approx & (1u << FX_F_FAIRSHARE_USER));
    json_object_put(o);
    /* no prediction in status: the estimate, flagged approximate */
    o = job_json("b", "bob", 0, 1, 1, "3h", "2026-01-01T01:00:00Z", NULL);
    CHECK_INT(cli_job_load(o, &fx.w, &j, &e), AIQ_OK);
    CHECK_DBL(j.f[FX_F_RUNTIME_PREDICTED_HOURS], 3, 1e-9);
    CHECK(j.approx & (1u << FX_F_RUNTIME_PREDICTED_HOURS));
    CHECK_DBL(j.f[FX_F_USER_LEVEL], 0, 0); /* not a listed member */
    json_object_put(o);
    /* a malformed spec names the field */
    o = json_tokener_parse("{\"apiVersion\":\"aiq.dev/v1alpha1\",\"kind\":\"AIJob\","
                           "\"metadata\":{\"name\":\"x\",\"namespace\":\"team-v\"},"
                           "\"spec\":{\"user\":\"u\",\"replicas\":\"eight\"}}");
    aiq_err_clear(&e);
    CHECK_INT(cli_job_load(o, &fx.w, &j, &e), AIQ_EINVAL);
    CHECK(strstr(e.message, "spec.replicas") != NULL);
    CHECK_STR(j.name, ""); /* zeroed after an error */
    json_object_put(o);
    fixture_deinit(&fx);
}

/* A policy of formula with one level, or two when when0 (lv0 when it
 * holds, then "main"), rescoring every interval_s seconds (0: each cycle). */
static oppolicy *compile(const char *formula, const char *lv0, const char *when0,
                         double interval_s) {
    struct aiq_policy p;
    struct aiq_level lv[2];
    aiq_err e;
    memset(&p, 0, sizeof p);
    aiq_err_clear(&e);
    lv[0].name = (char *)lv0;
    lv[0].when = (char *)when0;
    lv[1].name = (char *)"main";
    lv[1].when = NULL;
    p.meta.name = (char *)"t";
    p.spec.formula = (char *)formula;
    p.spec.levels = when0 ? lv : &lv[1];
    p.spec.nlevels = when0 ? 2 : 1;
    p.spec.rescore_interval_s = interval_s;
    return oppolicy_compile(&p, &e);
}

TEST(rank_reorders_fifo_to_shortest_first) {
    struct fixture fx;
    struct cli_job jobs[3];
    aiq_err e;
    aiq_err_clear(&e);
    fixture_init(&fx, 1767229200.0 + 7200);
    json_object *o[3] = {
        job_json("long", "alice", 0, 1, 1, "10h", "2026-01-01T01:00:00Z", NULL),
        job_json("short", "alice", 0, 1, 1, "1h", "2026-01-01T01:10:00Z", NULL),
        job_json("mid", "alice", 0, 1, 1, "4h", "2026-01-01T01:20:00Z", NULL),
    };
    for (int i = 0; i < 3; i++)
        CHECK_INT(cli_job_load(o[i], &fx.w, &jobs[i], &e), AIQ_OK);
    oppolicy *fifo = compile("wait.hours", "x", NULL, 0);
    CHECK_INT(cli_rank(fifo, jobs, 3, &e), AIQ_OK);
    CHECK_INT(jobs[0].new_position, 1);
    CHECK_INT(jobs[1].new_position, 2);
    CHECK_INT(jobs[2].new_position, 3);
    oppolicy *srjf = compile("-runtime.predicted_hours", "x", NULL, 0);
    CHECK_INT(cli_rank(srjf, jobs, 3, &e), AIQ_OK);
    CHECK_INT(jobs[1].new_position, 1); /* short */
    CHECK_INT(jobs[2].new_position, 2); /* mid */
    CHECK_INT(jobs[0].new_position, 3); /* long */
    CHECK_DBL(jobs[1].new_score, -1, 1e-9);
    /* a level before the catch-all goes first whatever the score */
    oppolicy *lv = compile("-runtime.predicted_hours", "big", "runtime.estimate_hours >= 10h", 0);
    CHECK_INT(cli_rank(lv, jobs, 3, &e), AIQ_OK);
    CHECK_INT(jobs[0].new_position, 1);
    CHECK_INT(jobs[0].new_level, 0);
    CHECK_INT(jobs[1].new_level, 1);
    /* equal scores: the earlier queued time first */
    oppolicy *flat = compile("1", "x", NULL, 0);
    CHECK_INT(cli_rank(flat, jobs, 3, &e), AIQ_OK);
    CHECK_INT(jobs[0].new_position, 1);
    CHECK_INT(jobs[2].new_position, 3);
    CHECK_INT(cli_rank(flat, jobs, CLI_MAX_JOBS + 1, &e), AIQ_ETOOBIG);
    /* Under a rescore interval the waits are read at the interval's
     * start, as the operator reads them: now is 03:00, "long" was queued
     * at 01:00 and created at 00:00; with 2h intervals (from the epoch)
     * the clock stands at 02:00, so it has waited 1 h, not 2, and is 2 h
     * old, not 3. */
    oppolicy *rs = compile("wait.hours", "x", NULL, 7200);
    if (CHECK(rs != NULL)) {
        CHECK_INT(cli_rank(rs, jobs, 3, &e), AIQ_OK);
        CHECK_DBL(jobs[0].new_score, 1, 1e-9);
        CHECK_DBL(jobs[0].f[FX_F_WAIT_HOURS], 1, 1e-9);
        CHECK_DBL(jobs[0].f[FX_F_JOB_AGE_HOURS], 2, 1e-9);
        cli_job_clock(&jobs[0], NULL); /* back at now */
        CHECK_DBL(jobs[0].f[FX_F_WAIT_HOURS], 2, 1e-9);
        CHECK_DBL(jobs[0].f[FX_F_JOB_AGE_HOURS], 3, 1e-9);
        oppolicy_free(rs);
    }
    oppolicy_free(fifo);
    oppolicy_free(srjf);
    oppolicy_free(lv);
    oppolicy_free(flat);
    for (int i = 0; i < 3; i++)
        json_object_put(o[i]);
    fixture_deinit(&fx);
}

TEST(sort_by_position_puts_unpositioned_last) {
    struct cli_job j[3];
    memset(j, 0, sizeof j);
    snprintf(j[0].name, sizeof j[0].name, "none");
    snprintf(j[1].name, sizeof j[1].name, "second");
    j[1].position = 2;
    snprintf(j[2].name, sizeof j[2].name, "first");
    j[2].position = 1;
    cli_sort_by_position(j, 3);
    CHECK_STR(j[0].name, "first");
    CHECK_STR(j[1].name, "second");
    CHECK_STR(j[2].name, "none");
}

TEST(fairshare_from_status_usage) {
    struct fixture fx;
    double fg = 0, fu = 0;
    fixture_init(&fx, 0);
    /* one group holding all usage: U = 1, S = 1 -> 2^-1 */
    cli_fairshare(&fx.w, 0, "alice", &fg, &fu);
    CHECK_DBL(fg, 0.5, 1e-12);
    CHECK_DBL(fu, 0.5, 1e-12); /* alice has no usage of her own */
    cli_fairshare(&fx.w, -1, "alice", &fg, &fu);
    CHECK_DBL(fg, 1, 0);
    CHECK_DBL(fu, 1, 0);
    fixture_deinit(&fx);
}

TEST(human_units) {
    char b[48];
    CHECK_STR(aiq_size_text(512, 2, b, sizeof b), "512 MiB");
    CHECK_STR(aiq_size_text(40960, 2, b, sizeof b), "40 GiB");
    CHECK_STR(aiq_size_text(152320, 2, b, sizeof b), "148.8 GiB");
    CHECK_STR(aiq_size_text(40000, 2, b, sizeof b), "39.1 GiB");
    CHECK_STR(aiq_size_text(1572864, 2, b, sizeof b), "1.5 TiB");
    CHECK_STR(aiq_size_text(1073741824, 0, b, sizeof b), "1 GiB");
    CHECK_STR(aiq_size_text(1536, 0, b, sizeof b), "1.5 KiB");
    CHECK_STR(aiq_size_text(12, 0, b, sizeof b), "12 B");
    CHECK_STR(cli_cores_text(b, sizeof b, 1000), "1 core");
    CHECK_STR(cli_cores_text(b, sizeof b, 500), "0.5 cores");
    CHECK_STR(cli_cores_text(b, sizeof b, 16000), "16 cores");
}

/* Two 4-GPU nodes of 80 GiB GPUs, 8 cores and 16 GiB each; node a has
 * GPUs 0-2 taken, 7 cores and 15 GiB used. */
static void hr_fixture(struct q_node n[2]) {
    memset(n, 0, 2 * sizeof *n);
    for (int i = 0; i < 2; i++) {
        n[i].name = i ? "b" : "a";
        n[i].ngpus = 4;
        n[i].schedulable = true;
        n[i].cpu_alloc = 8000;
        n[i].mem_alloc = 16ll << 30;
        for (int g = 0; g < 4; g++)
            n[i].gpu_mem_total[g] = 81920;
    }
    for (int g = 0; g < 3; g++)
        n[0].gpu_mem_used[g] = 81920;
    n[0].cpu_used = 7000;
    n[0].mem_used = 15ll << 30;
}

static const struct cli_hr_row *hr_find(const struct cli_hr_row *r, int n, const char *res) {
    for (int i = 0; i < n; i++)
        if (strcmp(r[i].resource, res) == 0)
            return &r[i];
    return NULL;
}

TEST(headroom_names_the_resource_that_blocks) {
    struct q_node n[2];
    struct cli_hr_row rows[CLI_HR_MAX_ROWS];
    hr_fixture(n);
    /* 2 replicas x (2 GPUs of 40 GiB, 5 cores, 1 GiB): b holds both
     * replicas' GPUs, but 5 cores fit only once (1 core free on a, 8 on b). */
    struct cli_hr_ask a = {2, 2, 40960, 5000, 1ll << 30, 7200, NULL, NULL};
    int k = cli_headroom(n, 2, &a, NULL, 0, rows, CLI_HR_MAX_ROWS);
    CHECK_INT(k, 4);
    const struct cli_hr_row *r = hr_find(rows, k, "GPUs");
    CHECK(r && !r->blocks);
    CHECK_STR(r->need, "4 GPUs (2 replicas x 2 GPUs)");
    CHECK_STR(r->avail, "5 unused on 2 nodes; room for 2 of 2 replicas");
    r = hr_find(rows, k, "GPU memory");
    CHECK(r && !r->blocks);
    CHECK_STR(r->need, "40 GiB per GPU");
    r = hr_find(rows, k, "cpu");
    CHECK(r && r->blocks);
    CHECK_STR(r->need, "10 cores (2 replicas x 5 cores)");
    CHECK_STR(r->avail, "9 cores free, at most 8 cores on one node; room for 1 of 2 replicas");
    r = hr_find(rows, k, "memory");
    CHECK(r && !r->blocks);
    CHECK_STR(r->need, "2 GiB (2 replicas x 1 GiB)");
    CHECK_STR(r->avail, "17 GiB free, at most 16 GiB on one node; room for 2 of 2 replicas");
}

/* Nodes not known (a user who may not read them): no capacity row at
 * all, rather than "0 free" rows that claim to block. */
TEST(headroom_without_nodes_has_no_capacity_rows) {
    struct cli_hr_row rows[CLI_HR_MAX_ROWS];
    struct cli_hr_ask a = {2, 2, 40960, 5000, 1ll << 30, 7200, NULL, NULL};
    CHECK_INT(cli_headroom(NULL, -1, &a, NULL, 0, rows, CLI_HR_MAX_ROWS), 0);
    /* Zero nodes known is different: nothing is free, and that blocks. */
    int k = cli_headroom(NULL, 0, &a, NULL, 0, rows, CLI_HR_MAX_ROWS);
    CHECK(k >= 1 && rows[0].blocks);
}

TEST(headroom_gpu_memory_of_a_shared_job_and_the_together_row) {
    struct q_node n[2];
    struct cli_hr_row rows[CLI_HR_MAX_ROWS];
    hr_fixture(n);
    /* b's GPUs are all 3/4 used: 20 GiB free each; a's last GPU is free. */
    for (int g = 0; g < 4; g++)
        n[1].gpu_mem_used[g] = 61440;
    struct cli_hr_ask a = {1, 0, 30720, 0, 0, 0, NULL, NULL};
    int k = cli_headroom(n, 2, &a, NULL, 0, rows, CLI_HR_MAX_ROWS);
    CHECK_INT(k, 1);
    CHECK_STR(rows[0].resource, "GPU memory");
    CHECK_STR(rows[0].need, "30 GiB on a shared GPU");
    CHECK_STR(rows[0].avail, "most free on one GPU 80 GiB; room for 1 of 1 replica");
    CHECK(!rows[0].blocks);
    /* 2 cores as well: a's GPU has the memory, b the cores -> together */
    a.cpu_milli = 2000;
    k = cli_headroom(n, 2, &a, NULL, 0, rows, CLI_HR_MAX_ROWS);
    const struct cli_hr_row *r = hr_find(rows, k, "together");
    CHECK(r && r->blocks);
    CHECK(!hr_find(rows, k, "cpu")->blocks && !hr_find(rows, k, "GPU memory")->blocks);
    /* a domain that no node has: nothing fits */
    a.domain = "west";
    k = cli_headroom(n, 2, &a, NULL, 0, rows, CLI_HR_MAX_ROWS);
    CHECK(hr_find(rows, k, "GPU memory")->blocks && hr_find(rows, k, "cpu")->blocks);
}

TEST(headroom_quota_and_budget_rows) {
    struct cli_hr_row rows[CLI_HR_MAX_ROWS];
    struct cli_hr_owner o[2];
    memset(o, 0, sizeof o);
    o[0].label = "group team";
    aiq_quota_unlimited(&o[0].quota);
    o[0].quota.gpus = 16;
    o[0].quota.cpu_milli = 8000;
    o[0].used.gpus = 12;
    o[0].used.cpu_milli = 7500;
    o[0].budget_gpu_hours = 100;
    o[0].used_gpu_hours = 99;
    o[1].label = "user alice";
    aiq_quota_unlimited(&o[1].quota);
    o[1].quota.memory_bytes = 4ll << 30;
    o[1].used.memory_bytes = 1ll << 30;
    o[1].budget_gpu_hours = -1;
    struct cli_hr_ask a = {2, 2, 0, 500, 1ll << 30, 1800, NULL, NULL};
    int k = cli_headroom(NULL, 0, &a, o, 2, rows, CLI_HR_MAX_ROWS);
    const struct cli_hr_row *r = hr_find(rows, k, "group team quota gpus");
    CHECK(r && !r->blocks);
    CHECK_STR(r->need, "4 GPUs");
    CHECK_STR(r->avail, "12 GPUs of 16 GPUs in use, 4 GPUs left");
    r = hr_find(rows, k, "group team quota cpu");
    CHECK(r && r->blocks);
    CHECK_STR(r->avail, "7.5 cores of 8 cores in use, 0.5 cores left");
    CHECK(!hr_find(rows, k, "group team quota memory")); /* unlimited: no row */
    r = hr_find(rows, k, "group team budget");
    CHECK(r && r->blocks);
    CHECK_STR(r->need, "2 GPU-hours (runtime 0.5 h)");
    CHECK_STR(r->avail, "99 of 100 GPU-hours used, 1 left");
    r = hr_find(rows, k, "user alice quota memory");
    CHECK(r && !r->blocks);
    CHECK_STR(r->avail, "1 GiB of 4 GiB in use, 3 GiB left");
    CHECK(!hr_find(rows, k, "user alice budget"));
    /* no nodes: the GPU row blocks with nothing free */
    r = hr_find(rows, k, "GPUs");
    CHECK(r && r->blocks);
    CHECK_STR(r->avail, "0 unused on 0 nodes; room for 0 of 2 replicas");
}

/* An output document that could not be built whole (a constructor out of
 * memory gives NULL) is not printed and makes the exit status 1; a null
 * asked for stays a member. Last in this file: the failure is remembered
 * for the rest of the process, as it is for a command. */
TEST(output_build_failure_is_an_error) {
    json_object *doc = json_object_new_object();
    cli_add_str(doc, "name", NULL);
    cli_add_int(doc, "position", 3);
    CHECK(json_object_object_get_ex(doc, "name", NULL));
    CHECK_INT(cli_out_status(), 0);
    cli_add(doc, "score", NULL); /* what cli_num6 gives out of memory */
    CHECK(!json_object_object_get_ex(doc, "score", NULL));
    CHECK_INT(cli_out_status(), 1);
    cli_add_int(doc, "after", 1); /* sticky: nothing more is added */
    CHECK(!json_object_object_get_ex(doc, "after", NULL));
    json_object_put(doc);
}
