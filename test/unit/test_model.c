/* test_model.c -- validation boundaries of the four kinds (common/model.c),
 * names of phases and kinds, deinit. Structs here point at string literals
 * and are never deinit'ed, except in the deinit test. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/model.h"
#include "test/unit/th.h"

static struct aiq_aijob good_job(void) {
    struct aiq_aijob j;
    memset(&j, 0, sizeof j);
    j.meta.name = (char *)"train-resnet";
    j.meta.namespace_ = (char *)"team-vision";
    j.spec.user = (char *)"alice";
    j.spec.replicas = 1;
    j.spec.backoff_limit = 3;
    j.spec.resources.gpus = 1;
    j.spec.resources.cpu_milli = 4000;
    j.spec.resources.memory_bytes = 1LL << 34;
    return j;
}

/* Validates j and checks the outcome: msg NULL means valid. */
static void expect_job(const struct aiq_aijob *j, const char *field, const char *msg) {
    aiq_err e;
    aiq_err_clear(&e);
    aiq_rc rc = aiq_aijob_validate(j, &e);
    if (!msg) {
        if (!CHECK_INT(rc, AIQ_OK)) fprintf(stderr, "    %s\n", e.message);
        return;
    }
    CHECK_INT(rc, AIQ_EINVAL);
    CHECK_INT(e.code, AIQ_EINVAL);
    CHECK_STR(e.field, field);
    CHECK_STR(e.message, msg);
}

TEST(aijob_valid_and_boundaries) {
    struct aiq_aijob j = good_job();
    expect_job(&j, NULL, NULL);
    j.spec.resources.gpus = -3;
    expect_job(&j, "spec.resources.gpus", "spec.resources.gpus: must be >= 0, got -3");
    j.spec.resources.gpus = 0;
    expect_job(&j, NULL, NULL);
    j.spec.resources.gpus = 64;
    expect_job(&j, NULL, NULL);
    j.spec.resources.gpus = 65;
    expect_job(&j, "spec.resources.gpus", "spec.resources.gpus: must be <= 64, got 65");
    j = good_job();
    j.spec.replicas = 0;
    expect_job(&j, "spec.replicas", "spec.replicas: must be >= 1, got 0");
    j.spec.replicas = 1024;
    expect_job(&j, NULL, NULL);
    j.spec.replicas = 1025;
    expect_job(&j, "spec.replicas", "spec.replicas: must be <= 1024, got 1025");
    j = good_job();
    j.spec.priority = 1000000;
    expect_job(&j, NULL, NULL);
    j.spec.priority = 1000001;
    expect_job(&j, "spec.priority", "spec.priority: must be <= 1000000, got 1000001");
    j.spec.priority = -1;
    expect_job(&j, "spec.priority", "spec.priority: must be >= 0, got -1");
    j = good_job();
    j.spec.backoff_limit = 101;
    expect_job(&j, "spec.backoffLimit", "spec.backoffLimit: must be <= 100, got 101");
    j.spec.backoff_limit = 0;
    expect_job(&j, NULL, NULL);
    j = good_job();
    j.spec.resources.gpu_memory_mib = 1 << 20;
    expect_job(&j, NULL, NULL);
    j.spec.resources.gpu_memory_mib = (1 << 20) + 1;
    expect_job(&j, "spec.resources.gpuMemoryMiB", "spec.resources.gpuMemoryMiB: must be <= 1048576, got 1048577");
    j = good_job();
    j.spec.resources.cpu_milli = -500;
    expect_job(&j, "spec.resources.cpu", "spec.resources.cpu: must be >= 0, got -500m");
    j = good_job();
    j.spec.resources.memory_bytes = -(1LL << 30);
    expect_job(&j, "spec.resources.memory", "spec.resources.memory: must be >= 0, got -1Gi");
    j = good_job();
    j.spec.estimated_runtime_s = -90;
    expect_job(&j, "spec.estimatedRuntime", "spec.estimatedRuntime: must be >= 0, got -1m30s");
    j.spec.estimated_runtime_s = NAN;
    expect_job(&j, "spec.estimatedRuntime", "spec.estimatedRuntime: must be >= 0, got NaN");
    j = good_job();
    j.spec.model_parameters = -7;
    expect_job(&j, "spec.model.parameters", "spec.model.parameters: must be >= 0, got -7");
}

TEST(aijob_strings_and_cross_field) {
    struct aiq_aijob j = good_job();
    j.spec.user = NULL;
    expect_job(&j, "spec.user", "spec.user: is required");
    j.spec.user = (char *)"";
    expect_job(&j, "spec.user", "spec.user: is required");
    char longu[300];
    memset(longu, 'u', sizeof longu - 1);
    longu[sizeof longu - 1] = '\0';
    j.spec.user = longu;
    expect_job(&j, "spec.user", "spec.user: must be at most 253 characters, got 299");
    longu[253] = '\0';
    expect_job(&j, NULL, NULL);

    j = good_job();
    j.meta.name = NULL;
    expect_job(&j, "metadata.name", "metadata.name: is required");
    j.meta.name = (char *)"Train";
    expect_job(&j, "metadata.name", "metadata.name: must be a lowercase RFC 1123 subdomain (a-z, 0-9, '-', '.'; at most 253), got \"Train\"");
    j.meta.name = (char *)"a.b-c.d";
    expect_job(&j, NULL, NULL);
    j.meta.name = (char *)"a..b";
    expect_job(&j, "metadata.name", "metadata.name: must be a lowercase RFC 1123 subdomain (a-z, 0-9, '-', '.'; at most 253), got \"a..b\"");
    /* 63 characters fit the pods' aiq.dev/job label; 64 cannot start. */
    char n64[65];
    memset(n64, 'n', 64);
    n64[30] = '.'; /* a valid subdomain: no dot-separated part passes 63 */
    n64[64] = '\0';
    j.meta.name = n64;
    expect_job(&j, "metadata.name", "metadata.name: must be no more than 63 characters (an AIJob's pods carry its name in the aiq.dev/job label), got 64");
    n64[63] = '\0';
    expect_job(&j, NULL, NULL);
    j.meta.name = (char *)"x";
    j.meta.namespace_ = (char *)"team.vision";
    expect_job(&j, "metadata.namespace", "metadata.namespace: must be a lowercase RFC 1123 label (a-z, 0-9, '-'; at most 63), got \"team.vision\"");

    j = good_job();
    j.spec.resources.gpu_model = (char *)"NVIDIA-A100-SXM4-80GB";
    expect_job(&j, NULL, NULL);
    j.spec.resources.gpus = 0;
    expect_job(&j, "spec.resources.gpuModel", "spec.resources.gpuModel: needs gpus > 0 or gpuMemory > 0");
    j.spec.resources.gpu_memory_mib = 20000;
    expect_job(&j, NULL, NULL);
    j.spec.resources.gpu_model = (char *)"A100 80GB";
    expect_job(&j, "spec.resources.gpuModel", "spec.resources.gpuModel: must be a label value (at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit), got \"A100 80GB\"");
    j = good_job();
    j.spec.domain = (char *)"-pool";
    expect_job(&j, "spec.domain", "spec.domain: must be a label value (at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit), got \"-pool\"");
    j.spec.domain = (char *)"pool_a.east-1";
    expect_job(&j, NULL, NULL);
}

static struct aiq_level lv3[3] = {
    {(char *)"short", (char *)"runtime.estimate_hours < 1"},
    {(char *)"medium", (char *)"runtime.estimate_hours < 8"},
    {(char *)"long", NULL},
};

static struct aiq_policy good_policy(void) {
    struct aiq_policy p;
    memset(&p, 0, sizeof p);
    p.meta.name = (char *)"default";
    p.spec.formula = (char *)"job.priority + wait.hours";
    p.spec.levels = lv3;
    p.spec.nlevels = 3;
    p.spec.fairshare_half_life_s = 7 * 86400;
    p.spec.active = true;
    return p;
}

static void expect_policy(const struct aiq_policy *p, const char *field, const char *msg) {
    aiq_err e;
    aiq_err_clear(&e);
    aiq_rc rc = aiq_policy_validate(p, &e);
    if (!msg) {
        if (!CHECK_INT(rc, AIQ_OK)) fprintf(stderr, "    %s\n", e.message);
        return;
    }
    CHECK_INT(rc, AIQ_EINVAL);
    CHECK_STR(e.field, field);
    CHECK_STR(e.message, msg);
}

TEST(policy_levels) {
    struct aiq_policy p = good_policy();
    expect_policy(&p, NULL, NULL);
    p.spec.formula = NULL;
    expect_policy(&p, "spec.formula", "spec.formula: is required");
    p = good_policy();
    p.spec.nlevels = 0;
    expect_policy(&p, "spec.levels", "spec.levels: must have at least 1 level");
    p.spec.nlevels = 17;
    expect_policy(&p, "spec.levels", "spec.levels: must have at most 16 levels, got 17");
    /* A single catch-all level is fine. */
    p.spec.levels = &lv3[2];
    p.spec.nlevels = 1;
    expect_policy(&p, NULL, NULL);
    /* The last level must not have a `when`; the others must. */
    p.spec.levels = lv3;
    p.spec.nlevels = 2;
    expect_policy(&p, "spec.levels[1].when", "spec.levels[1].when: must be empty on the last level (the catch-all), got \"runtime.estimate_hours < 8\"");
    struct aiq_level bad[3] = {lv3[0], {(char *)"medium", NULL}, lv3[2]};
    p.spec.levels = bad;
    p.spec.nlevels = 3;
    expect_policy(&p, "spec.levels[1].when", "spec.levels[1].when: is required on every level but the last");
    bad[1].when = lv3[1].when;
    bad[1].name = (char *)"short";
    expect_policy(&p, "spec.levels[1].name", "spec.levels[1].name: duplicate level name \"short\"");
    bad[1].name = (char *)"Medium";
    expect_policy(&p, "spec.levels[1].name", "spec.levels[1].name: must be a lowercase RFC 1123 label (a-z, 0-9, '-'; at most 63), got \"Medium\"");
}

TEST(policy_starvation_fairshare) {
    struct aiq_policy p = good_policy();
    p.spec.starvation_after_s = 86400;
    p.spec.starvation_promote_to = (char *)"short";
    expect_policy(&p, NULL, NULL);
    p.spec.starvation_promote_to = (char *)"urgent";
    expect_policy(&p, "spec.starvation.promoteTo", "spec.starvation.promoteTo: no level named \"urgent\"");
    p = good_policy();
    p.spec.fairshare_half_life_s = 0;
    expect_policy(&p, "spec.fairShare.halfLife", "spec.fairShare.halfLife: must be > 0, got 0s");
    p = good_policy();
    p.spec.rescore_interval_s = 86400;
    expect_policy(&p, NULL, NULL);
    p.spec.rescore_interval_s = 2 * 86400;
    expect_policy(&p, "spec.rescoreInterval", "spec.rescoreInterval: must be between 0 and 24h, got 48h");
    p.spec.rescore_interval_s = -60;
    expect_policy(&p, "spec.rescoreInterval", "spec.rescoreInterval: must be between 0 and 24h, got -1m");
    p = good_policy();
    p.spec.placement = (aiq_placement)7;
    expect_policy(&p, "spec.placement", "spec.placement: must be binpack, spread or fgd, got 7");
}

static char *ns2[2] = {(char *)"team-vision", (char *)"team-vision-dev"};
static struct aiq_member mem2[2] = {{(char *)"alice", 10}, {(char *)"bob", 0}};

static struct aiq_group good_group(void) {
    struct aiq_group g;
    memset(&g, 0, sizeof g);
    g.meta.name = (char *)"vision";
    g.spec.level = 5;
    g.spec.namespaces = ns2;
    g.spec.nnamespaces = 2;
    aiq_quota_unlimited(&g.spec.quota);
    g.spec.quota.gpus = 16;
    g.spec.budget.gpu_hours = -1;
    g.spec.budget.window_s = 30 * 86400;
    g.spec.members = mem2;
    g.spec.nmembers = 2;
    return g;
}

static void expect_group(const struct aiq_group *g, const char *field, const char *msg) {
    aiq_err e;
    aiq_err_clear(&e);
    aiq_rc rc = aiq_group_validate(g, &e);
    if (!msg) {
        if (!CHECK_INT(rc, AIQ_OK)) fprintf(stderr, "    %s\n", e.message);
        return;
    }
    CHECK_INT(rc, AIQ_EINVAL);
    CHECK_STR(e.field, field);
    CHECK_STR(e.message, msg);
}

TEST(group_rules) {
    struct aiq_group g = good_group();
    expect_group(&g, NULL, NULL);
    g.spec.level = 1001;
    expect_group(&g, "spec.level", "spec.level: must be <= 1000, got 1001");
    g = good_group();
    g.spec.quota.gpus = -2;
    expect_group(&g, "spec.quota.gpus", "spec.quota.gpus: must be >= 0, got -2");
    g = good_group();
    g.spec.quota.memory_bytes = -2048;
    expect_group(&g, "spec.quota.memory", "spec.quota.memory: must be >= 0, got -2Ki");
    g = good_group();
    char *dup[2] = {(char *)"a", (char *)"a"};
    g.spec.namespaces = dup;
    expect_group(&g, "spec.namespaces[1]", "spec.namespaces[1]: duplicate namespace \"a\"");
    g = good_group();
    struct aiq_member m[2] = {{(char *)"alice", 1}, {(char *)"alice", 2}};
    g.spec.members = m;
    expect_group(&g, "spec.members[1].user", "spec.members[1].user: duplicate member \"alice\"");
    m[1].user = (char *)"carol";
    m[1].level = -1;
    expect_group(&g, "spec.members[1].level", "spec.members[1].level: must be >= 0, got -1");
    g = good_group();
    g.spec.budget.gpu_hours = -5;
    expect_group(&g, "spec.budget.gpuHours", "spec.budget.gpuHours: must be >= 0, got -5");
    g = good_group();
    g.spec.budget.window_s = 0;
    expect_group(&g, "spec.budget.window", "spec.budget.window: must be > 0, got 0s");
    g = good_group();
    g.spec.shares = -0.5;
    expect_group(&g, "spec.shares", "spec.shares: must be >= 0, got -0.5");
}

TEST(userquota_rules) {
    struct aiq_userquota u;
    memset(&u, 0, sizeof u);
    u.meta.name = (char *)"alice";
    u.meta.namespace_ = (char *)"team-vision";
    u.spec.user = (char *)"alice";
    aiq_quota_unlimited(&u.spec.quota);
    u.spec.budget.gpu_hours = 100;
    u.spec.budget.window_s = 86400;
    aiq_err e;
    aiq_err_clear(&e);
    CHECK_INT(aiq_userquota_validate(&u, &e), AIQ_OK);
    u.spec.quota.cpu_milli = -1500;
    CHECK_INT(aiq_userquota_validate(&u, &e), AIQ_EINVAL);
    CHECK_STR(e.message, "spec.quota.cpu: must be >= 0, got -1500m");
    aiq_err_clear(&e);
    u.spec.quota.cpu_milli = -1;
    u.spec.user = NULL;
    CHECK_INT(aiq_userquota_validate(&u, &e), AIQ_EINVAL);
    CHECK_STR(e.message, "spec.user: is required");
}

TEST(names) {
    CHECK_STR(aiq_phase_name(AIQ_PHASE_QUEUED), "Queued");
    CHECK_STR(aiq_phase_name((aiq_phase)99), "");
    for (int p = AIQ_PHASE_PENDING; p <= AIQ_PHASE_SUSPENDED; p++)
        CHECK_INT(aiq_phase_parse(aiq_phase_name((aiq_phase)p)), p);
    CHECK_INT(aiq_phase_parse("queued"), AIQ_PHASE_NONE);
    CHECK_INT(aiq_phase_parse(""), AIQ_PHASE_NONE);
    CHECK_INT(aiq_phase_parse(NULL), AIQ_PHASE_NONE);
    CHECK_STR(aiq_kind_name(AIQ_KIND_USERQUOTA), "UserQuota");
    for (int k = AIQ_KIND_AIJOB; k <= AIQ_KIND_USERQUOTA; k++)
        CHECK_INT(aiq_kind_parse(aiq_kind_name((aiq_kind)k)), k);
    CHECK_INT(aiq_kind_parse("Job"), AIQ_KIND_UNKNOWN);
    CHECK_INT(aiq_kind_parse(""), AIQ_KIND_UNKNOWN);
}

TEST(deinit_frees_and_zeroes) {
    struct aiq_policy p;
    memset(&p, 0, sizeof p);
    p.meta.name = strdup("x");
    p.spec.formula = strdup("1");
    p.spec.levels = calloc(2, sizeof *p.spec.levels);
    p.spec.nlevels = 2;
    p.spec.levels[0].name = strdup("a");
    p.spec.levels[0].when = strdup("1 > 0");
    p.spec.levels[1].name = strdup("b");
    aiq_policy_deinit(&p);
    CHECK(p.spec.levels == NULL && p.spec.nlevels == 0 && p.meta.name == NULL);
    aiq_policy_deinit(&p); /* zeroed: no-op */
    aiq_policy_deinit(NULL);
    struct aiq_group g;
    memset(&g, 0, sizeof g);
    g.spec.namespaces = calloc(1, sizeof(char *));
    g.spec.namespaces[0] = strdup("ns");
    g.spec.nnamespaces = 1;
    g.spec.members = calloc(1, sizeof *g.spec.members);
    g.spec.members[0].user = strdup("u");
    g.spec.nmembers = 1;
    aiq_group_deinit(&g);
    CHECK(g.spec.namespaces == NULL && g.spec.nmembers == 0);
    struct aiq_aijob j;
    memset(&j, 0, sizeof j);
    j.spec.template_json = strdup("{}");
    j.spec.resources.gpu_model = strdup("A100");
    aiq_aijob_deinit(&j);
    CHECK(j.spec.template_json == NULL);
    aiq_aijob_deinit(NULL);
    aiq_userquota_deinit(NULL);
    aiq_group_deinit(NULL);
    aiq_meta_deinit(NULL);
    struct aiq_quota q;
    aiq_quota_unlimited(&q);
    CHECK(q.gpus == -1 && q.gpu_memory_mib == -1 && q.cpu_milli == -1 && q.memory_bytes == -1 && q.jobs == -1);
}
